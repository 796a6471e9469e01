"""One reader of feature rows, shared by the dashboard's uploads, the library and the command line.

``attentive.data.load_user_file`` (an upload, read whole in memory) and
``attentive.scale.read_input`` (``python -m attentive score``: a file of any size, in row chunks on
Dask) make every decision about a file here, so a file means the same rows wherever it is read:

- **Format and compression** (:func:`guess_format`, :func:`compression_of`): from the name
  (``.csv``, ``.tsv``, ``.libsvm``, ``.svm``, ``.t``, ``.txt``, ``.parquet``, ...; a ``.gz``,
  ``.bz2`` or ``.xz`` suffix is looked through), else from the content; compression from the
  first bytes, never from the name.
- **Text**: a UTF-8 byte-order mark at the start is skipped, CRLF line ends are read as LF, blank
  lines hold no row; UTF-16 and UTF-32 text, CR-only line ends, ZIP archives, spreadsheet
  workbooks and Excel's ``sep=`` line are refused by what they are (:func:`guess_format`,
  :func:`split_csv_line`).
- **LIBSVM index base** (:func:`libsvm_zero_based`): a file whose header states its base
  (``# Column indices are zero-based``, as ``dump_svmlight_file(..., comment=...)`` writes it,
  :func:`libsvm_stated_base`) is read as it says; else a file whose indices include 0 is zero-based;
  else, for a model, one whose largest index is the model's number of features is one-based; any
  other file fits both readings and is refused until the caller says which. scikit-learn's
  ``dump_svmlight_file`` writes zero-based indices by default, LIBSVM's convention is one-based,
  and a file whose first feature is always zero cannot say which it is.
- **CSV header** (:func:`csv_header`): a first line without a single number is a header; one of
  numbers only is data, unless it could be column numbers (pandas' ``0,1,2,...`` of an unnamed
  frame, a line counting up by one, or three or more whole numbers in increasing order, as a
  frame's integer labels after a selection of its columns) or column labels (eight or more
  numbers strictly in order, as wavelengths, unless the next line is in the same order); those
  and a mix of names and numbers are refused until the caller says which.
- **Columns against the model** (:func:`feature_columns`): by name and order where the model was
  fitted with feature names, else by count.
- **Cells** (:func:`parse_csv_rows`, :func:`attentive.data.libsvm.read_libsvm_rows`): every feature
  a finite number; the first line (and column) that is not is named.

Every refusal is a :class:`~attentive.errors.DataError` naming the file, what is wrong and what
to do.
"""

from __future__ import annotations

import bz2
import csv
import difflib
import gzip
import io
import itertools
import lzma
import math
import re
import sys
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from attentive.errors import DataError, InvalidParameterError
from attentive.validation import expected_feature_names

__all__ = [
    "BOM",
    "CHOOSE_BASE",
    "CHOOSE_HEADER",
    "FORMATS",
    "HEAD_BYTES",
    "HUGE_INDEX",
    "OTHER_SEPARATORS",
    "SEPARATOR_ADVICE",
    "SEPARATOR_NAMES",
    "UPLOAD_SEPARATORS",
    "ExpectedFeatures",
    "check_finite_rows",
    "check_separator",
    "compression_of",
    "csv_header",
    "csv_separator",
    "decompress",
    "feature_columns",
    "guess_format",
    "libsvm_index_range",
    "libsvm_stated_base",
    "libsvm_zero_based",
    "merge_index_ranges",
    "nameless_libsvm",
    "one_column_hint",
    "open_binary",
    "other_separator_hint",
    "parse_csv_rows",
    "separated_format",
    "split_csv_line",
]

FORMATS = ("libsvm", "csv", "parquet")
SUFFIXES = {
    ".libsvm": "libsvm",
    ".svm": "libsvm",
    ".svmlight": "libsvm",
    ".t": "libsvm",
    ".scale": "libsvm",
    ".txt": "libsvm",
    ".dat": "libsvm",
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION_SUFFIXES = {".gz", ".bz2", ".xz"}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_OPENERS = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}
BOM = b"\xef\xbb\xbf"
HEAD_BYTES = 65536  # a file's first bytes, from which its format and stated index base are read
_PAIR_TOKEN = re.compile(rb"\s\d+:\S")
# The line scikit-learn's dump_svmlight_file(..., comment=...) writes in its header.
_STATED_BASE = re.compile(rb"#\s*column\s+indices\s+are\s+(zero|one)-based\s*", re.IGNORECASE)

# How to choose, named in every refusal (the command line's flags and the library's parameters).
CHOOSE_BASE = (
    "--zero-based or --one-based (python -m attentive score), or zero_based=True or False "
    "(attentive.scale.score_file / read_input, attentive.data.load_user_file)"
)
CHOOSE_HEADER = (
    "--header or --no-header (python -m attentive score), or header=True or False "
    "(attentive.scale.score_file / read_input)"
)
EXCLUDE = "--exclude (exclude=... from Python)"


# -- what the rows must fit -------------------------------------------------------------------------
@dataclass(frozen=True)
class ExpectedFeatures:
    """What the rows of a file must fit: a model's number of features and, where it was fitted on
    named columns, their names in order. Both ``None``: the file decides (training data)."""

    n_features: int | None = None
    names: tuple[str, ...] | None = None

    @classmethod
    def of(cls, model: Any) -> ExpectedFeatures:
        """From a fitted model's ``n_features_in_`` and ``feature_names_in_`` (``None``: nothing
        expected)."""
        if model is None:
            return cls()
        if isinstance(model, ExpectedFeatures):
            return model
        n = getattr(model, "n_features_in_", None)
        return cls(None if n is None else int(n), expected_feature_names(model))


# -- format and compression -----------------------------------------------------------------------
def compression_of(head: bytes) -> str | None:
    """``"gzip"``, ``"bz2"`` or ``"xz"`` from a file's first bytes, else ``None``."""
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)


def open_binary(path: str | Path, compression: str | None = None) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed on the fly when ``compression`` says so."""
    if compression is None:
        return open(path, "rb")
    return _OPENERS[compression](path, "rb")


def decompress(data: bytes, name: str, max_bytes: int | None = None) -> bytes:
    """Decompress gzip, bz2 or xz content (recognised by its first bytes); other bytes pass through.

    ``max_bytes`` bounds the decompressed size: the content is decompressed in a stream and
    refused as soon as it would exceed it (a few kilobytes can decompress to gigabytes).

    Raises
    ------
    DataError
        The content starts like a compressed file but is truncated or corrupt, or decompresses
        to more than ``max_bytes``.
    """
    kind = compression_of(data)
    if kind is None:
        return data
    limit = sys.maxsize if max_bytes is None else int(max_bytes)
    out = bytearray()
    try:
        rest = data
        while rest:  # concatenated streams (gzip, bz2 and xz allow them), each in bounded steps
            start = len(out)
            try:
                rest = _one_stream(kind, rest, out, limit, name)
            except (OSError, lzma.LZMAError):
                if kind == "gzip" or start == 0:
                    raise
                # After a bz2 or xz stream, bytes that do not start another are ignored, as
                # bz2.open and lzma.open (the score command's readers) ignore them.
                del out[start:]
                break
            if kind == "gzip":
                rest = rest.lstrip(b"\0")  # gzip files may be padded with zeros
    except DataError:
        raise
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise DataError(f"{name}: compressed file is truncated or corrupt ({exc})") from None
    return bytes(out)


_STEP = 64 << 20  # decompressed bytes a step, so that a limit is found past by at most this


def _one_stream(kind: str, data: bytes, out: bytearray, limit: int, name: str) -> bytes:
    """Decompress the first stream of ``data`` onto ``out``, at most ``limit`` bytes in all;
    return what follows it."""
    if kind == "gzip":
        engine = zlib.decompressobj(wbits=31)
        pending = data
        while not engine.eof:
            piece = engine.decompress(pending, _STEP)
            out += piece
            _check_size(out, limit, name)
            pending = engine.unconsumed_tail
            if not pending and not piece and not engine.eof:
                raise EOFError("compressed data ended before the end-of-stream marker")
        return engine.unused_data
    engine = bz2.BZ2Decompressor() if kind == "bz2" else lzma.LZMADecompressor()
    out += engine.decompress(data, _STEP)
    _check_size(out, limit, name)
    while not engine.eof:
        if engine.needs_input:
            raise EOFError("compressed data ended before the end-of-stream marker")
        out += engine.decompress(b"", _STEP)
        _check_size(out, limit, name)
    return engine.unused_data


def _check_size(out: bytearray, limit: int, name: str) -> None:
    if len(out) > limit:
        raise DataError(
            f"{name} decompresses to more than {limit / 2**20:,.0f} MB, the limit for an upload "
            "once decompressed (ten times the upload limit, ATTENTIVE_MAX_UPLOAD_MB); upload "
            "fewer rows, or score a large file with python -m attentive score"
        )


def _suffix(name: str) -> str:
    suffixes = [s.lower() for s in Path(name).suffixes if s.lower() not in _COMPRESSION_SUFFIXES]
    return suffixes[-1] if suffixes else ""


def _parquet_as(name: str, other: str, allowed) -> DataError:
    """A Parquet file about to be read as ``other`` (by its name or the format asked for)."""
    if "parquet" not in allowed:
        return DataError(f"{name} is a Parquet file (it starts with PAR1), which is not read here")
    return DataError(
        f"{name} is a Parquet file (it starts with PAR1), not {other}: name it .parquet, or "
        "pass --format parquet (format='parquet')"
    )


def guess_format(
    name: str, head: bytes = b"", *, format: str | None = None, allowed: tuple[str, ...] = FORMATS
) -> str:
    """The format of a file: ``format`` when given, else from its name, else from ``head`` (its
    first bytes, decompressed).

    Raises
    ------
    InvalidParameterError
        ``format`` is not one of ``allowed``.
    DataError
        Neither the name nor the content says, or the file is of a format not ``allowed``.
    """
    _refuse_foreign(name, head)
    if format is not None:
        if format not in allowed:
            raise InvalidParameterError(f"format must be one of {allowed} or None, got {format!r}")
        if head.startswith(b"PAR1") and format != "parquet":
            raise _parquet_as(name, format, allowed)
        if format != "parquet":
            _refuse_unreadable_text(name, head)
        return format
    guessed = SUFFIXES.get(_suffix(name))
    if guessed not in (None, "parquet") and head.startswith(b"PAR1"):
        raise _parquet_as(name, guessed, allowed)  # (misnamed: its bytes are Parquet's)
    if guessed is None:
        first = next((line for line in head.splitlines() if line.strip()), b"")
        if head.startswith(b"PAR1"):
            guessed = "parquet"
        elif head.startswith(b"\x93NUMPY") or _suffix(name) in (".npy", ".npz"):
            load = "numpy.load(path)" + ("['<the array>']" if _suffix(name) == ".npz" else "")
            raise DataError(
                f"cannot read {name}: it is a NumPy array file (.npy or .npz), which is not read "
                f"here; write the rows as Parquet or CSV, e.g. pandas.DataFrame({load})"
                ".to_parquet('rows.parquet')"
            )
        elif _PAIR_TOKEN.search(b" " + first):
            guessed = "libsvm"
        elif b"," in first or b"\t" in first:
            guessed = "csv"
    if guessed not in allowed:
        what = f"looks like {guessed}, which is not read here" if guessed else "has no known suffix"
        names = " or ".join(f"--format {f} (format={f!r})" for f in allowed)
        raise DataError(
            f"cannot tell the format of {name}: it {what}; name it "
            f"{', '.join(s for s, f in SUFFIXES.items() if f in allowed)}, or pass {names}"
        )
    if guessed != "parquet":
        _refuse_unreadable_text(name, head)
    return guessed


_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
# Byte-order marks of UTF-32 and UTF-16 (UTF-32's first: it starts like UTF-16's little-endian).
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


_WORKBOOKS = (".xlsx", ".xlsm", ".xls", ".ods")
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Excel 97-2003 workbooks (.xls)


def _refuse_foreign(name: str, head: bytes) -> None:
    """Refuse a spreadsheet workbook, a ZIP archive and text in UTF-16 or UTF-32 by what they
    are (their first bytes)."""
    if head.startswith(_OLE2) or (head.startswith(_ZIP) and _suffix(name) in _WORKBOOKS):
        raise DataError(
            f"{name} is a spreadsheet workbook, which is not read here; export the sheet as CSV "
            "(comma-separated, with a decimal point), or write it as Parquet "
            "(pandas.read_excel(path).to_parquet('rows.parquet'))"
        )
    if head.startswith(_ZIP) and _suffix(name) != ".npz":  # (a NumPy .npz is named as one)
        raise DataError(
            f"{name} is a ZIP archive (it starts with PK), which is not read here; unzip it and "
            "give the file inside (gzip, bz2 and xz files are read as they are)"
        )
    encoding = next((enc for bom, enc in _WIDE_BOMS if head.startswith(bom)), None)
    if encoding is not None:
        raise DataError(
            f"{name} is {encoding} text (it starts with a {encoding} byte-order mark); text is "
            f"read as UTF-8: save it as UTF-8 (in Python, read it with encoding='{encoding.lower()}' "
            "and write it with encoding='utf-8')"
        )


def _refuse_unreadable_text(name: str, head: bytes) -> None:
    """Refuse text that a LIBSVM or CSV reader would misread: zero bytes in its first line (UTF-16
    text without a byte-order mark, or a binary file) and lines ended by CR alone."""
    first = head.split(b"\n", 1)[0]
    if b"\x00" in first:
        raise DataError(
            f"{name}: its first line holds zero bytes, which text does not: is it UTF-16 text or "
            "a binary file? Text is read as UTF-8, one example per line"
        )
    if b"\n" not in head and b"\r" in head.rstrip(b"\r"):
        raise DataError(f"{name}: lines are ended by carriage returns (CR) alone; {LINE_ENDS}")


SEPARATOR_NAMES = {",": "commas", "\t": "tabs", ";": "semicolons", "|": "bars"}
#: Separators a file split at another may hold, in the order they are looked for.
OTHER_SEPARATORS = (";", "\t", "|")
#: How an upload's separator is chosen: by its name (an upload has no separator option).
UPLOAD_SEPARATORS = "save it with commas (named .csv) or tabs (named .tsv)"
# What a separator may not be besides a letter or a digit: part of a number, a quote, a comment,
# a space or a line's end.
_NOT_SEPARATORS = set(".+-\"'#\r\n ")


def csv_separator(name: str, sep: str | None = None) -> str:
    """``sep`` (:func:`check_separator`) when given, else a tab for ``.tsv`` files and a comma
    for others."""
    if sep is not None:
        return check_separator(sep)
    return "\t" if _suffix(name) == ".tsv" else ","


#: Suffixes that say text rather than a format: LIBSVM's by default, CSV's when a separator is given.
GENERIC_TEXT = (".txt", ".dat")


def separated_format(name: str, format: str | None) -> str | None:
    """The format a file is read as when a CSV field separator is given: ``format`` if given,
    else CSV for a name of no format or of :data:`GENERIC_TEXT` (a ``.csv`` file too), else
    what the name says (a LIBSVM or Parquet name, for which the separator is refused); None
    for a NumPy file's name (``guess_format`` refuses it by name)."""
    if format is not None:
        return format
    named = SUFFIXES.get(_suffix(name))
    if named is None and _suffix(name) in (".npy", ".npz"):
        return None  # (guess_format says what a NumPy file is)
    return "csv" if named is None or _suffix(name) in GENERIC_TEXT else named


#: How another separator or format is asked for (the command line's and Python's words).
SEPARATOR_ADVICE = (
    "(another is given with --sep, sep= from Python; a LIBSVM file is read as LIBSVM with "
    "--format libsvm, format='libsvm')"
)


def one_column_hint(sep: str, line: str = "") -> str:
    """Where a CSV file's lines read as one column: the separator they were split at, and the
    one the first ``line`` holds instead, if any (:func:`other_separator_hint`)."""
    split = f"; its lines were read as one column, split at {SEPARATOR_NAMES.get(sep, repr(sep))}"
    other = other_separator_hint(line, sep)
    if other:
        return f"{split}, but {other}"
    return f"{split}: is that the file's separator? {SEPARATOR_ADVICE}"


_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+", re.ASCII)


def other_separator_hint(
    line: str, sep: str, what: str = "its first line", *, upload: bool = False
) -> str:
    """What to do where a line split at ``sep`` holds another separator (a semicolon, a tab or a
    bar; ``what`` names the line) that splits it cleanly (no piece holds ``sep`` but as a decimal
    comma): pass that separator (an ``upload``: save the file with commas or tabs), and where
    the pieces hold decimal commas (as a spreadsheet set to a comma-decimal locale writes
    ``1,5;2,25``), write them with points. Empty otherwise (``;`` inside a name is no sign)."""
    for other in OTHER_SEPARATORS:
        if other == sep or other not in line:
            continue
        pieces = [p.strip() for p in line.split(other)]
        if any(sep in p and not _DECIMAL_COMMA.fullmatch(p) for p in pieces):
            continue
        shown = "tab" if other == "\t" else other
        hint = f"{what} holds {SEPARATOR_NAMES[other]}: " + (
            UPLOAD_SEPARATORS if upload else f"pass --sep {shown!r} (sep={other!r} from Python)"
        )
        if any(_DECIMAL_COMMA.fullmatch(p) for p in pieces):
            hint += (
                ", and write its numbers with a decimal point: they have decimal commas (such as "
                "'1,5'), which are not read"
            )
        return hint
    return ""


def check_separator(sep: str) -> str:
    """A CSV field separator as given (``--sep``, ``sep=``): one character that cannot be part
    of a number (``;``, ``|``, ``:``), or ``tab`` / ``\\t`` for a tab."""
    if isinstance(sep, str) and sep.lower() in ("tab", "\\t"):
        return "\t"
    if (
        not isinstance(sep, str)
        or len(sep) != 1
        or not (sep.isascii() and sep.isprintable())  # (pandas' C parser: one byte)
        or sep.isalnum()
        or sep in _NOT_SEPARATORS
    ):
        raise InvalidParameterError(
            "the CSV separator must be one character that is not a letter, a digit, part of a "
            f"number, a quote, '#' or a space, such as ';' or '|', or 'tab' for a tab; got {sep!r}"
        )
    return sep


# -- LIBSVM: the index base -----------------------------------------------------------------------
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True  # what bytes.split() splits on, as scikit-learn's parser
_PIECE = 8 << 20
#: What libsvm_index_range gives for an index of 19 digits or more (it reads no more digits).
HUGE_INDEX = np.iinfo(np.int64).max


def libsvm_index_range(data: bytes) -> tuple[int, int] | None:
    """The smallest and largest feature index written in LIBSVM text, or ``None`` if no line has a
    feature.

    Counts every ``<index>:`` that starts a whitespace-separated token (an optional sign, then
    digits), outside ``#`` comments; ``qid:`` is not an index. A malformed token is left to the
    parser, which names its line. Vectorised over bytes, 8 MiB at a time (about a sixth of the
    time scikit-learn takes to parse the same text).
    """
    lo = hi = None
    start, end = 0, len(data)
    while start < end:
        stop = min(start + _PIECE, end)
        if stop < end:  # cut after a line break, so that comments are judged per line
            cut = data.rfind(b"\n", start, stop)
            if cut < 0:
                cut = data.find(b"\n", stop)
            stop = end if cut < 0 else cut + 1
        found = _piece_index_range(np.frombuffer(data, np.uint8, stop - start, start))
        if found is not None:
            lo = found[0] if lo is None else min(lo, found[0])
            hi = found[1] if hi is None else max(hi, found[1])
        start = stop
    return None if lo is None else (lo, hi)


def _piece_index_range(buf: np.ndarray) -> tuple[int, int] | None:
    colons = np.flatnonzero(buf == ord(":"))
    if colons.size and (buf == ord("#")).any():
        newlines = np.flatnonzero(buf == ord("\n"))
        hashes = np.flatnonzero(buf == ord("#"))
        line_start = _previous(newlines, colons)
        colons = colons[_previous(hashes, colons) <= line_start]  # not after a '#' of its line
    n = colons.size
    if not n:
        return None
    # Walk back from each colon over its digits, accumulating the index. Every step writes into
    # the same few arrays: a Dask worker returns freed memory to the system at once
    # (MALLOC_TRIM_THRESHOLD_), so each new temporary array costs a page fault per page.
    value = np.zeros(n, dtype=np.int64)
    term = np.empty(n, dtype=np.int64)
    pos = colons - 1
    c = np.empty(n, dtype=np.uint8)
    step = np.empty(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    scale = 1
    for _ in range(18):
        _bytes_at(buf, pos, c, step)
        np.subtract(c, ord("0"), out=c)  # a digit becomes 0-9, anything else wraps above 9
        np.less_equal(c, 9, out=step)
        np.logical_and(active, step, out=active)
        if not active.any():
            break
        np.multiply(c, np.int64(scale), out=term)
        np.add(value, term, out=value, where=active)
        np.subtract(pos, active, out=pos, casting="unsafe")
        scale *= 10
    has_digits = pos != colons - 1
    _bytes_at(buf, pos, c, step)
    huge = (c >= ord("0")) & (c <= ord("9"))  # more than 18 digits: beyond any model
    value[huge] = HUGE_INDEX
    negative = c == ord("-")
    np.negative(value, out=value, where=negative)
    np.subtract(pos, negative | (c == ord("+")), out=pos, casting="unsafe")  # past a sign
    _bytes_at(buf, pos, c, step)
    ok = has_digits & (_SPACE[c] | huge)  # (a huge index's 19th digit is no space)
    if not ok.any():
        return None
    return int(value.min(where=ok, initial=HUGE_INDEX)), int(
        value.max(where=ok, initial=-HUGE_INDEX)
    )


def _bytes_at(buf: np.ndarray, pos: np.ndarray, out: np.ndarray, before: np.ndarray) -> None:
    """``out = buf[pos]``, a space where ``pos`` is before the start (``before`` is scratch)."""
    np.take(buf, pos, out=out, mode="clip")
    np.less(pos, 0, out=before)
    out[before] = ord(" ")


def _previous(marks: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """For each position, the last mark before it (-1 when none)."""
    if not marks.size:
        return np.full(positions.shape, -1, dtype=np.int64)
    k = np.searchsorted(marks, positions) - 1
    return np.where(k >= 0, marks[np.maximum(k, 0)], -1)


def merge_index_ranges(ranges) -> tuple[int, int] | None:
    """The range covering every ``(lo, hi)`` of ``ranges`` (``None`` entries skipped)."""
    found = [r for r in ranges if r is not None]
    if not found:
        return None
    return min(r[0] for r in found), max(r[1] for r in found)


def libsvm_stated_base(head: bytes) -> bool | None:
    """The index base a LIBSVM file states in the comment lines before its first row, or ``None``.

    scikit-learn's ``dump_svmlight_file(..., comment=...)`` starts the file with comment lines, one
    of them ``# Column indices are zero-based`` (or ``one-based``). Only that opening block of
    ``#`` lines (and blank lines) is read: a comment after a row is about the row. ``head`` is the
    file's first bytes, decompressed.
    """
    for line in head.removeprefix(BOM).splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith(b"#"):
            return None
        stated = _STATED_BASE.fullmatch(line)
        if stated:
            return stated.group(1).lower() == b"zero"
    return None


def libsvm_zero_based(
    index_range: tuple[int, int] | None,
    n_features: int | None,
    zero_based: bool | None,
    *,
    where: str,
    stated: bool | None = None,
) -> bool:
    """Whether a LIBSVM file's indices start at 0, from its smallest and largest index.

    Parameters
    ----------
    index_range : (int, int) or None
        :func:`libsvm_index_range` over the whole file (``None``: no features at all).
    n_features : int or None
        The model's number of features; ``None`` for training data (the file decides).
    zero_based : bool or None
        The caller's answer; ``None`` decides: the base the file states (``stated``); else index
        0 present → zero-based; else largest index equal to ``n_features`` → one-based; else, for
        a model, refused (without a model: one-based, LIBSVM's convention).
    where : str
        The file's name, for messages.
    stated : bool or None
        :func:`libsvm_stated_base` of the file: whether its header says its indices are
        zero-based (``None``: it says nothing). A caller's answer that contradicts it is refused,
        as is a file whose indices contradict it.

    Raises
    ------
    DataError
        The base cannot be told (the message names :data:`CHOOSE_BASE`), the file contradicts the
        base asked for, or it has more features than the model.
    """
    if zero_based is not None and not isinstance(zero_based, bool | np.bool_):
        raise InvalidParameterError(f"zero_based must be True, False or None, got {zero_based!r}")
    if stated is not None:
        said = "zero-based" if stated else "one-based"
        if zero_based is not None and bool(zero_based) != stated:
            asked, flag = (
                ("zero-based", "--zero-based") if zero_based else ("one-based", "--one-based")
            )
            raise DataError(
                f"{where}: its header says '# Column indices are {said}', but {asked} was asked "
                f"for ({flag}, zero_based={bool(zero_based)}); drop the option to read the file "
                "as it says, or correct the header line if it is wrong"
            )
        zero_based = stated
        if index_range is not None and not stated and index_range[0] == 0:
            raise DataError(
                f"{where}: its header says '# Column indices are one-based', but feature index 0 "
                "appears; correct the header line, or remove it and pass --zero-based "
                "(zero_based=True)"
            )
    if index_range is None:
        return bool(zero_based)  # no feature anywhere: every row is zero in either base
    lo, hi = index_range
    if lo < 0:
        raise DataError(
            f"{where}: feature index {lo} is negative; LIBSVM indices start at 1 (or 0)"
        )
    if zero_based is None:
        if lo == 0:
            zero_based = True
        elif n_features is None or hi == n_features:
            zero_based = False
        elif hi < n_features:
            raise DataError(
                f"{where}: cannot tell whether its feature indices start at 0 or 1. Index 0 never "
                f"appears and the largest index, {hi}, is below the model's {n_features} features, "
                "so the file reads either way: zero-based with the first feature always zero "
                "(scikit-learn's dump_svmlight_file writes zero-based indices by default) or "
                "one-based with the last features always zero. "
                + (
                    f"The largest index is under half the model's {n_features} features: check "
                    "that the file is one for this model. "
                    if 2 * (hi + 1) < n_features
                    else ""
                )
                + f"Say which: {CHOOSE_BASE}"
            )
    elif not zero_based and lo == 0:
        raise DataError(
            f"{where}: feature index 0 appears, so the file is zero-based, but one-based was asked "
            "for; pass --zero-based (zero_based=True), or leave the base to be detected"
        )
    width = hi + 1 if zero_based else hi
    if n_features is not None and width > n_features:
        base = "zero-based" if zero_based else "one-based"
        if stated is not None:
            base += ", as its header says"
        largest = (
            "a feature index has 19 digits or more"
            if hi == HUGE_INDEX
            else f"the largest feature index is {hi}, so the file ({base}) has at least {width} "
            "features"
        )
        raise DataError(
            f"{where}: {largest}, but the model has {n_features}; score it with a model trained "
            "on features like these"
        )
    return bool(zero_based)


# -- CSV: the header and the columns --------------------------------------------------------------
# pandas' default missing-value markers: cells that are data (a missing value), never names.
_NA_TOKENS = frozenset(
    "#N/A|#N/A N/A|#NA|-1.#IND|-1.#QNAN|-NaN|-nan|1.#IND|1.#QNAN|<NA>|N/A|NA|NULL|NaN|None|n/a|"
    "nan|null|".split("|")
)
# (ASCII digits only: pandas reads no others, and a fullwidth "１.５" taken for a number here left
# the chunk's parse to refuse it without its line and column.)
_NUMBER = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
    re.IGNORECASE | re.ASCII,
)


#: What a file whose lines end with CR alone is told (the CSV and LIBSVM readers).
LINE_ENDS = (
    "lines must end with LF or CR LF (a file saved with the old Mac line endings, CR alone: "
    "convert them to LF)"
)


def split_csv_line(
    line: bytes, sep: str = ",", *, where: str, number: int = 1, upload: bool = False
) -> list[str]:
    """The cells of one CSV line (quotes as the csv module and pandas read them), stripped;
    ``number``: the file's line number of ``line``, for messages (after blank lines, not 1);
    ``upload``: messages say how an upload's separator is chosen (by its name)."""
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: the first line is not UTF-8 text ({exc})") from None
    excel = _EXCEL_SEP.fullmatch(text.strip(" "))
    if excel:
        given = excel.group(1)
        shown = "tab" if given == "\t" else given
        if given == sep:
            then = ""
        elif upload:
            then = f" ({SEPARATOR_NAMES.get(given, repr(given))}: {UPLOAD_SEPARATORS})"
        else:
            then = f", and pass --sep {shown!r} (sep={given!r} from Python)"
        raise DataError(
            f"{where}, line {number}: {text.strip(' ')!r} is the line Excel writes to name a CSV "
            f"file's separator; it is not read: remove the line{then}"
        )
    return [cell.strip() for cell in csv_cells(text, sep, where=f"{where}, line {number}")]


_EXCEL_SEP = re.compile(r"sep=(.)", re.IGNORECASE | re.DOTALL)


def csv_cells(text: str, sep: str = ",", *, where: str) -> list[str]:
    """The cells of one line of CSV text (its line ending removed), as the csv module reads
    them; a line the csv module refuses (a carriage return inside it: a file with the old Mac
    line endings, a lone CR) is a :class:`DataError` naming ``where`` (file and line)."""
    try:
        return next(csv.reader([text], delimiter=sep, skipinitialspace=True), [])
    except csv.Error as exc:
        if "\r" in text:
            raise DataError(
                f"{where}: a carriage return (CR) inside the line; {LINE_ENDS}"
            ) from None
        raise DataError(f"{where} is not valid CSV: {exc}") from None


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell) is not None


def _counts_up(cells: list[str]) -> bool:
    """Whether a line's cells (at least three) are whole numbers counting up by one."""
    if len(cells) < 3 or not all(_is_number(c) for c in cells):
        return False
    try:
        values = np.array([float(c) for c in cells])
    except ValueError:
        return False
    return bool(np.all(values == np.round(values)) and np.all(np.diff(values) == 1))


#: Cells from which a strictly increasing or decreasing first line of numbers is refused as
#: ambiguous: a row of data ordered across that many columns is rare (2 in 8! for values in no
#: particular order), a header of wavelengths or frequencies is not. Fewer stay data, even in
#: order (``1.5,2.5,3.5,4.5`` is as often a short row written by hand).
MONOTONE_NAMES = 8


def _monotone_names(cells: list[str]) -> str | None:
    """``"increasing"`` or ``"decreasing"`` where a line's cells, :data:`MONOTONE_NAMES` or
    more, are finite numbers strictly in that order: a frame's numeric column labels
    (``400.0,402.5,405.0,...`` nm; ``4000,3998,...`` cm⁻¹), or a row of data; else None."""
    if len(cells) < MONOTONE_NAMES or not all(_is_number(c) for c in cells):
        return None
    try:
        values = np.array([float(c) for c in cells])
    except ValueError:  # (not reached: cells here are numbers)
        return None
    if not np.isfinite(values).all():
        return None
    steps = np.diff(values)
    if (steps > 0).all():
        return "increasing"
    if (steps < 0).all():
        return "decreasing"
    return None


def csv_header(
    cells: list[str],
    *,
    header: bool | None,
    expected: ExpectedFeatures,
    where: str,
    sep: str = ",",
    following: list[str] | None = None,
) -> list[str] | None:
    """The column names a CSV file's first line gives (its ``cells``), or ``None`` when it is data.

    ``header`` True / False is the caller's answer. ``None`` decides: the model's feature names,
    or a line without a number (at least one name, no cell that is a number or a missing value
    of data — an empty cell beside names is an unnamed column, as pandas writes an index), is a
    header; a line of numbers (and missing values) is data. A mix, pandas' ``0,1,2,...`` (the
    header of a frame without column names, or a row of data; ``,0,1,...`` with its index), and
    numbers that could be a frame's column labels (whole numbers in increasing order, or the
    whole numbers a to b in another order, unless ``following`` is too; numbers
    strictly increasing or decreasing across :data:`MONOTONE_NAMES` cells or more: wavelengths,
    frequencies; unless ``following``, the next line's cells, is in the same order: rows of
    data) are refused: say which (or, where the line holds another separator than ``sep`` that splits it
    cleanly, the one it split at, which it names); so is a line of numbers some of which have a
    decimal comma (``1,5``: a name beside names). A comment line (``# ...``) is refused, whatever
    ``header`` says, unless it is the model's feature names (a first feature named
    ``# rooms``). Empty names become ``Unnamed: i`` as in pandas.
    """
    if header is not None and not isinstance(header, bool | np.bool_):
        raise InvalidParameterError(f"header must be True, False or None, got {header!r}")
    named = expected.names is not None and tuple(cells) == expected.names
    commented = (
        cells and cells[0].startswith("#") and (len(cells) == 1 or cells[0].startswith("# "))
    )
    if commented and not named:  # (the model's own names: a header, a first feature '# rooms')
        first = ",".join(cells)
        raise DataError(
            f"{where}: the first line, {first[:60]!r}, is a comment; CSV files are read without "
            "comment lines: remove it (a header line names the columns, without '#'); if the "
            "file is LIBSVM, say so (--format libsvm, format='libsvm')"
        )
    if header is None:
        numbers = [_is_number(c) for c in cells]
        names = [
            bool(c) and not n and c not in _NA_TOKENS for c, n in zip(cells, numbers, strict=True)
        ]
        shown = _shown(cells, sep)
        commas = [bool(_DECIMAL_COMMA.fullmatch(c)) for c in cells]
        comma = next((c for c, k in zip(cells, commas, strict=True) if k), None)
        data = all(not name or k for name, k in zip(names, commas, strict=True))
        if named:
            header = True
        elif comma is not None and sep != "," and data:  # (beside a name, '1,5' is a name)
            raise DataError(
                f"{where}: the first line, {shown}, has a number with a decimal comma ({comma!r}), "
                "which is not read: write numbers with a decimal point"
            )
        elif cells == [str(i) for i in range(len(cells))]:
            raise DataError(
                f"{where}: the first line, {shown}, is either the header pandas writes for a "
                "frame without column names or a row of data. Say which: " + CHOOSE_HEADER
            )
        elif _counts_up(cells):
            # 1,2,...,n or 0.0,1.0,...: column numbers as names, or a row of data.
            raise DataError(
                f"{where}: the first line, {shown}, counts up by one: it may name the columns by "
                "number or be a row of data. Say which: " + CHOOSE_HEADER
            )
        elif _column_numbers(cells):
            # 33,34,35,42,...: a frame's integer column labels after a selection (pandas writes
            # them as the header), or a row of data.
            raise DataError(
                f"{where}: the first line, {shown}, is whole numbers in increasing order: it may "
                "name the columns by number (as pandas writes a frame whose columns were "
                "selected) or be a row of data. Say which: " + CHOOSE_HEADER
            )
        elif (run := _shuffled_numbers(cells)) and not _shuffled_numbers(following or []):
            # 5,4,3,2,1,0: a frame's integer column labels after reordering its columns (pandas
            # writes them as the header), or a row of data (a second such line says data: ranks).
            raise DataError(
                f"{where}: the first line, {shown}, is the whole numbers {run[0]} to {run[1]} in "
                "another order: it may name the columns by number (as pandas writes a frame "
                "whose columns were reordered) or be a row of data. Say which: " + CHOOSE_HEADER
            )
        elif (order := _monotone_names(cells)) and _monotone_names(following or []) != order:
            # (A second line in the same order says the file is data: sorted quantiles, say.)
            # 400.0,402.5,405.0,...: wavelengths, frequencies or times as a frame's column labels
            # (decimals, so not column numbers), or a row of data.
            raise DataError(
                f"{where}: the first line, {shown}, is numbers in {order} order: it may name the "
                "columns (wavelengths, frequencies, times, as a frame's column labels) or be a "
                "row of data. Say which: " + CHOOSE_HEADER
            )
        elif (
            len(cells) > 1 and not cells[0] and cells[1:] == [str(i) for i in range(len(cells) - 1)]
        ):
            # df.to_csv() of a frame without column names, its index first (unnamed).
            raise DataError(
                f"{where}: the first line, {shown}, is either the header pandas writes for a "
                "frame without column names, with its index first (df.to_csv()), or a row of data "
                "missing its first value. Say which: " + CHOOSE_HEADER + "; with a header, the "
                "index column is 'Unnamed: 0' (--exclude 'Unnamed: 0'; exclude=... from Python)"
            )
        elif (
            len(cells) > 1
            and not cells[0]
            and (
                _column_numbers(cells[1:])
                or _shuffled_numbers(cells[1:])
                or _monotone_names(cells[1:])
            )
        ):
            raise DataError(
                f"{where}: the first line, {shown}, is either the header pandas writes for a "
                "frame whose columns are numbers, with its index first (df.to_csv()), or a row "
                "of data missing its first value. Say which: " + CHOOSE_HEADER + "; with a "
                "header, the index column is 'Unnamed: 0' (--exclude 'Unnamed: 0'; exclude=... "
                "from Python)"
            )
        elif any(names) and not any(numbers):
            header = True
        elif not any(names):
            header = False
        elif other := other_separator_hint(sep.join(cells), sep, "it"):
            raise DataError(
                f"{where}: the first line, {shown}, mixes names and numbers when split at "
                f"{SEPARATOR_NAMES.get(sep, repr(sep))}, but {other}"
            )
        else:
            raise DataError(
                f"{where}: cannot tell whether the first line, {shown}, is a header: it mixes "
                f"names and numbers. Say which: {CHOOSE_HEADER}"
            )
    if not header:
        return None
    columns = [c or f"Unnamed: {i}" for i, c in enumerate(cells)]
    repeated = sorted(c for c, k in Counter(columns).items() if k > 1)
    if repeated:
        # (Asked for, a header is the caller's answer; a line that names a column twice, and
        # is numbers, is a row of data, and is said to be.)
        what = _data_line(cells)
        if what is not None and all(_is_number(c) for c in repeated):
            raise DataError(
                f"{where}: a header line was asked for (--header, header=True), but the first "
                f"line, {_shown(cells, sep)}, is {what}, not names of columns (it repeats "
                f"{repeated[0]!r}): drop --header (header=True) to read it as data"
            )
        raise DataError(f"{where}: the header names a column more than once: {repeated}")
    return columns


def libsvm_like(line: str) -> bool:
    """Whether a line reads as LIBSVM: a label, then ``index:value`` pairs."""
    tokens = line.split()
    return len(tokens) >= 2 and all(_PAIR_TOKEN.search(b" " + t.encode()) for t in tokens[1:])


def refuse_data_header(
    cells: list[str], *, where: str, sep: str = ",", label_names: tuple[str, ...] = ()
) -> None:
    """Refuse a first line that is a row of examples where a header must come (an upload: its
    first line names the columns). Taken as names, such a line was one example lost without a
    word and its values the features' names (:func:`_data_line` tells such a line). A line that
    names the label's column (``label_names``, any case: the name asked for, or the names the
    label is found by) is a header, whatever numbers stand beside it (``label,400.5,401.0``:
    wavelengths)."""
    wanted = {n.strip().lower() for n in label_names}
    if any(c.strip().lower() in wanted for c in cells):
        return
    what = _data_line(cells)
    if what is None:
        return
    raise DataError(
        f"{where}: the first line, {_shown(cells, sep)}, is {what}, not a header: an uploaded "
        "CSV file starts with a header line naming its columns (the label's and the features', "
        "e.g. 'label,x1,x2,...'); add one as its first line"
    )


def _data_line(cells: list[str]) -> str | None:
    """What makes a line a row of examples rather than names of columns, or None: a row of
    numbers, unless it is pandas' ``0,1,...`` for a frame without column names (any length),
    counts up by one (``1,2,...``, ``0.0,1.0,...``) or is whole numbers in increasing order,
    with or without an empty cell first (``33,34,42,...`` after a selection of its columns, an
    index first: column numbers); or a line beside whose names stands a number that is not
    whole or one twice (``yes,0.25,1.5``, ``yes,0,1,1``: a labelled example; a column is
    seldom named ``0.25``, and never twice)."""
    numbers = [c for c in cells if _is_number(c)]
    if not numbers:
        return None
    if (
        cells == [str(i) for i in range(len(cells))]
        or (
            cells[1:] == [str(i) for i in range(len(cells) - 1)] and len(cells) > 1 and not cells[0]
        )
        or _counts_up(cells)
        or _column_numbers(cells)
        or (len(cells) > 1 and not cells[0] and _column_numbers(cells[1:]))
    ):
        return None
    names = [c for c in cells if c and not _is_number(c) and c not in _NA_TOKENS]
    telling = next((c for c in numbers if not _whole(c)), None)
    if telling is None:  # (a number twice: ``yes,0,1,1``; a header's names are each once)
        telling = next((c for i, c in enumerate(numbers) if c in numbers[:i]), None)
    if names and telling is None:
        return None
    return "a row of numbers" if not names else f"a row of examples (it holds {telling!r})"


def _shown(cells: list[str], sep: str) -> str:
    """A line's first cells as written (a tab shown as ``\\t``)."""
    joint = "\\t" if sep == "\t" else sep
    return joint.join(cells[:8]) + (f"{joint}..." if len(cells) > 8 else "")


_COLUMN_NUMBER = re.compile(r"\d+", re.ASCII)


def _column_numbers(cells: list[str]) -> bool:
    """Whether a line's cells (at least three) are whole numbers written without a point,
    strictly increasing: a frame's integer column labels, as pandas writes them."""
    if len(cells) < 3 or not all(_COLUMN_NUMBER.fullmatch(c) for c in cells):
        return False
    values = [int(c) for c in cells]
    return all(a < b for a, b in itertools.pairwise(values))


def _shuffled_numbers(cells: list[str]) -> tuple[int, int] | None:
    """``(a, b)`` where a line's cells (at least three) are the whole numbers ``a`` to ``b``,
    written without a point, each once, in another order than increasing: a frame's integer
    column labels after its columns were reordered (``df[[5, 4, 3, 2, 1, 0]]``), as pandas
    writes them. (Distinct numbers with a gap, ``5,2,4,1``, stay a row of data.)"""
    if len(cells) < 3 or not all(_COLUMN_NUMBER.fullmatch(c) for c in cells):
        return None
    values = [int(c) for c in cells]
    low = min(values)
    if sorted(values) != list(range(low, low + len(values))):
        return None
    return low, low + len(values) - 1


def _whole(cell: str) -> bool:
    try:
        value = float(cell)
    except ValueError:  # (not reached: cells here are numbers)
        return False
    return bool(np.isfinite(value)) and value == round(value)


def nameless_libsvm(expected: ExpectedFeatures, where: str, instead: str) -> None:
    """Refuse LIBSVM rows for a model that knows its features by name, as a CSV file without a
    header line is: LIBSVM numbers them. Read by position, such rows reached most of these
    models with scikit-learn's "no valid feature names" warnings, and a pipeline that picks its
    columns by name raised. ``instead``: what to give instead, for the message."""
    if expected.names is not None:
        raise DataError(
            f"{where} is LIBSVM, whose features have numbers, not names, but the model knows its "
            f"features by name ({_preview(expected.names)}); {instead}"
        )


def feature_columns(
    columns: list[str] | None,
    n_columns: int,
    expected: ExpectedFeatures,
    exclude: tuple[str, ...] = (),
    *,
    where: str,
    sep: str | None = None,
) -> list[str]:
    """The feature columns of a table, in order, checked against the model (``sep``: a text
    table's separator, named where its lines came out as one column).

    Parameters
    ----------
    columns : list of str or None
        The header's names; ``None`` for a CSV file without a header (its columns are then
        named ``"0"``, ``"1"``, ... and all of them are features).
    n_columns : int
        The number of columns.
    expected : ExpectedFeatures
        With names: the table's columns, less ``exclude``, must be those names in that order.
        Else with a count: that many feature columns.
    exclude : tuple of str
        Columns that are not features (a label, an id).

    Raises
    ------
    DataError
        Names missing, unknown, repeated or out of order, or the wrong count (the message says
        which and how to fix it).
    """
    exclude = tuple(exclude)
    if columns is None:
        if exclude:
            raise DataError(
                f"{where} has no header line, so no column can be excluded by name "
                f"({', '.join(exclude)}); give it a header"
            )
        if expected.names is not None:
            raise DataError(
                f"{where} has no header line, but the model knows its features by name "
                f"({_preview(expected.names)}); give the file a header line naming its columns"
            )
        columns = [str(i) for i in range(n_columns)]
    present = set(columns)
    unknown = [c for c in exclude if c not in present]
    if unknown:
        close = [m for c in unknown for m in difflib.get_close_matches(c, columns, n=2)]
        meant = f"; did you mean {_preview(dict.fromkeys(close))}?" if close else ""
        raise DataError(
            f"{where}: {unknown} to exclude are not among its columns: {_preview(columns)}{meant}"
        )
    excluded = set(exclude)
    features = [c for c in columns if c not in excluded]
    # (A Parquet schema may repeat a name; a CSV header was checked already. A repeated column
    # that is not a feature is not read.)
    repeated = sorted(c for c, k in Counter(features).items() if k > 1)
    if repeated:
        raise DataError(f"{where} names a feature column more than once: {_preview(repeated)}")
    if expected.names is not None:
        names = list(expected.names)
        if features != names:
            known, found = set(names), set(features)
            missing = [n for n in names if n not in found]
            extra = [c for c in features if c not in known]
            problems = []
            if missing:
                problems.append(
                    f"lacks {len(missing)} of the model's features: {_preview(missing)}"
                )
            if extra:
                what = "a column" if len(extra) == 1 else f"{len(extra)} columns"
                problems.append(
                    f"has {what} the model does not know: {_preview(extra)} (not features? name "
                    f"them with {EXCLUDE})"
                )
            if not problems:
                i = next(k for k, (a, b) in enumerate(zip(features, names, strict=True)) if a != b)
                problems.append(
                    f"has the model's features in another order: feature {i + 1} is {features[i]!r} "
                    f"where the model has {names[i]!r}; write the columns in the model's order"
                )
            # (A header read as one column that holds another separator than the file's.)
            hint = ""
            if len(columns) == 1 and sep and other_separator_hint(columns[0], sep):
                hint = one_column_hint(sep, columns[0])
            raise DataError(f"{where} " + "; it ".join(problems) + hint)
    elif expected.n_features is not None and len(features) != expected.n_features:
        less = f" ({len(columns)} less {len(exclude)} excluded)" if exclude else ""
        if len(features) > expected.n_features:
            hint = f"; name the other columns with {EXCLUDE}"
            if features[0] == "Unnamed: 0":
                hint = (
                    "; its first column has no name: the index pandas writes with df.to_csv()? "
                    "Exclude it with --exclude 'Unnamed: 0' (exclude=... from Python), or write "
                    "the file with df.to_csv(path, index=False)"
                )
            elif features[-1] == f"Unnamed: {len(columns) - 1}":
                hint = (
                    "; its last column has no name: do its lines end with a separator (a "
                    "trailing comma)? Remove it, or name the other columns with " + EXCLUDE
                )
        elif len(columns) == 1 and sep is not None:
            hint = one_column_hint(sep, columns[0])
        else:
            hint = ""
        plural = "column" if len(features) == 1 else "columns"
        raise DataError(
            f"{where} has {len(features)} feature {plural}{less}, but the model expects "
            f"{expected.n_features}{hint}"
        )
    return features


def _preview(names, limit: int = 10) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


# -- CSV: the cells -------------------------------------------------------------------------------
def parse_csv_rows(
    data: bytes,
    *,
    names: list[str],
    numeric: list[str],
    where: str,
    first_line: int,
    sep: str = ",",
    upload: bool = False,
) -> pd.DataFrame:
    """Rows of CSV text (no header line) as a frame with columns ``names``; the ``numeric``
    columns as float64, every value finite; the others as read.

    ``first_line`` is the file's line number of the text's first line, for messages;
    ``upload``: messages say how an upload's separator is chosen (by its name).

    Raises
    ------
    DataError
        A line with another number of fields, or a numeric column's cell that is not a number,
        missing or not finite: the first such line and column are named.
    """
    if b"\r" in data.replace(b"\r\n", b""):
        # A lone CR: pandas would end a line there, and the rows would not be the file's lines.
        raise DataError(
            _csv_problem(data, names, numeric, where, first_line, sep, upload)
            or f"{where}: lines from {first_line} hold a carriage return (CR) inside a line"
        )
    try:
        frame = pd.read_csv(io.BytesIO(data), header=None, sep=sep, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        floats = set(numeric)
        return pd.DataFrame({c: np.empty(0) if c in floats else [] for c in names})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(
            _csv_problem(data, names, numeric, where, first_line, sep, upload)
            or f"{where} is not valid CSV: {exc}".rstrip()
        ) from None
    if frame.shape[1] != len(names):
        raise DataError(
            _csv_problem(data, names, numeric, where, first_line, sep, upload)
            or f"{where}: lines from {first_line} have {frame.shape[1]} fields, not {len(names)}"
        )
    if b'"' in data:
        _refuse_quoted_line_breaks(data, len(frame), where, first_line)
    frame.columns = names
    values = frame[numeric]
    # (pandas reads True / False cells as booleans, a numeric dtype: they are words here, as
    # they are where a chunk mixes them with numbers)
    ok = all(
        pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
        for t in values.dtypes
    )
    if ok:
        array = values.to_numpy(dtype=np.float64)
        ok = bool(np.isfinite(array).all())
    if not ok:
        raise DataError(
            _csv_problem(data, names, numeric, where, first_line, sep, upload)
            or f"{where}: lines from {first_line} hold cells that are not finite numbers"
        )
    if len(numeric) == len(names):
        return pd.DataFrame(array, columns=names, index=frame.index)
    frame[numeric] = array
    return frame


QUOTED_LINE_BREAK = "a line break inside a quoted field"


def _refuse_quoted_line_breaks(data: bytes, rows: int, where: str, first_line: int) -> None:
    """Refuse text that pandas read as fewer rows than it has lines: a quoted field held a line
    break. Such a row read whole or split in two by where a chunk ended (``--chunk-rows``), so
    it is refused wherever it lies; the line named is the first whose quotes do not pair."""
    lines = data.split(b"\n")
    if rows >= sum(1 for raw in lines if raw.strip()):
        return
    line = next(
        (first_line + i for i, raw in enumerate(lines) if raw.count(b'"') % 2),
        first_line,
    )
    raise DataError(f"{where}, line {line}: {QUOTED_LINE_BREAK}; each row must be one line")


def _csv_problem(
    data: bytes,
    names: list[str],
    numeric: list[str],
    where: str,
    first_line: int,
    sep: str,
    upload: bool = False,
) -> str | None:
    """Describe the first line of CSV text that pandas could not read into finite numbers."""
    where_is = {c: i for i, c in enumerate(names)}
    positions = [where_is[c] for c in numeric]
    for offset, raw in enumerate(data.split(b"\n")):
        text = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        if not text.strip():
            continue
        line = first_line + offset
        cells = csv_cells(text, sep, where=f"{where}, line {line}")
        if len(cells) != len(names):
            return (
                f"{where} is not valid CSV: line {line} has {_fields(len(cells))}, but there are "
                f"{len(names)} columns ("
                + (
                    f"{QUOTED_LINE_BREAK}? Each row must be one line"
                    if text.count('"') % 2
                    else "a truncated or joined line?"
                )
                + ")"
            )
        for i in positions:
            cell = cells[i].strip()
            at = f"{where}, line {line}, column {names[i]!r}"
            if cell in _NA_TOKENS or (_is_number(cell) and math.isnan(float(cell))):
                return (
                    f"{at}: the value is missing or NaN ({cell!r}); every feature needs a "
                    "finite number"
                )
            if not _is_number(cell):
                comma = sep != "," and _is_number(cell.replace(",", ".", 1))
                hint = " (a decimal comma: write numbers with a decimal point)" if comma else ""
                if cell.lower() in ("true", "false"):
                    hint = " (a boolean: write it as 1 or 0; a Parquet file's booleans are read so)"
                if any(o in cell for o in OTHER_SEPARATORS):  # (the cell spans a separator)
                    other = other_separator_hint(text, sep, "the line", upload=upload)
                    hint = f" ({other})" if other else hint
                return f"{at}: {cell!r} is not a number{hint}; features must be numeric"
            if not math.isfinite(float(cell)):
                return f"{at}: {cell} is not a finite number; every feature needs a finite number"
    return None


def _fields(n: int) -> str:
    return f"{n} field" + ("" if n == 1 else "s")


def check_finite_rows(frame: pd.DataFrame, *, where: str, first_row: int) -> None:
    """Refuse a frame of float features holding NaN or an infinity, naming the first (row
    ``first_row`` is the frame's first, counted from 1)."""
    values = frame.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        what = "missing or NaN" if np.isnan(values[row, col]) else f"{values[row, col]}"
        raise DataError(
            f"{where}, row {first_row + row}, column {frame.columns[col]!r}: the value is {what}; "
            "every feature needs a finite number"
        )
