"""Parse LIBSVM / svmlight text (``<label> <index>:<value> ...``) with useful errors.

Parsing is scikit-learn's ``load_svmlight_file`` (fast, C), always with the index base said
(:func:`attentive.data.reader.libsvm_zero_based` decides it; scikit-learn's own guess looks at
one piece of text at a time). Its errors do not say where, so when it fails we scan the text line
by line to report the first bad line number and what was expected; a value that is NaN or infinite
is reported with its line too.
"""

from __future__ import annotations

import io
import re

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from attentive.data.reader import LINE_ENDS
from attentive.errors import DataError

__all__ = ["parse_libsvm", "read_libsvm_rows"]

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)"
# (ASCII digits only, as the parser reads them: a fullwidth "２" passed here and the file was
# refused without its line.)
_LABEL = re.compile(rf"^(?:{_NUMBER})$", re.IGNORECASE | re.ASCII)
_PAIR = re.compile(r"^([+-]?\d+):(\S+)$", re.ASCII)
_EXPECTED = "expected '<label> <index>:<value> ...' with increasing indices"


# The most features a row can have here: scipy's sparse indices are 32-bit below it, and
# scikit-learn's parser overflows past a C long.
_MAX_INDEX = 2**31 - 1


def read_libsvm_rows(
    data: bytes,
    *,
    where: str,
    n_features: int | None,
    zero_based: bool,
    first_line: int = 1,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse LIBSVM text (possibly no rows) into a CSR matrix and raw labels.

    Parameters
    ----------
    data : bytes
        The text (decompressed, without a byte-order mark); a whole file or a range of its lines.
    where : str
        The file's name, for error messages.
    n_features : int, optional
        Number of features; by default the largest index seen (plus one when zero-based).
    zero_based : bool
        Whether index 0 is the first feature (else index 1 is).
    first_line : int
        The file's line number of the text's first line, for error messages.

    Raises
    ------
    DataError
        A malformed line, an index beyond ``n_features`` or 0 in a one-based file, or a value that
        is NaN or infinite: the message gives the line number, the problem and the expected form.
    """
    try:
        X, labels = load_svmlight_file(
            io.BytesIO(data), n_features=n_features, dtype=np.float64, zero_based=zero_based
        )
    except (ValueError, OverflowError) as exc:  # (an index past a C long overflows)
        problem = _locate_error(data, where, n_features, zero_based, first_line)
        raise DataError(problem or f"{where}, lines from {first_line}: {exc}") from None
    X = X.tocsr()
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        k = int(bad[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
        index = int(X.indices[k]) + (0 if zero_based else 1)
        line = _line_of_row(data, row, first_line)
        raise DataError(
            f"{where}, line {line}: feature {index} is "
            f"{_written(data, line - first_line, index) or X.data[k]}; every feature needs a "
            "finite number (remove or impute it)"
        )
    return X, labels


def parse_libsvm(
    data: bytes, *, where: str, n_features: int | None = None, zero_based: bool = False
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse a whole LIBSVM file into a CSR matrix and raw labels; refuse a file without rows.

    See :func:`read_libsvm_rows` for the parameters.

    Raises
    ------
    DataError
        Empty file, no examples, or any problem :func:`read_libsvm_rows` reports.
    """
    if not data.strip():
        raise DataError(f"{where} is empty; expected LIBSVM lines '<label> <index>:<value> ...'")
    X, labels = read_libsvm_rows(data, where=where, n_features=n_features, zero_based=zero_based)
    if X.shape[0] == 0:
        raise DataError(
            f"{where} has no examples; expected LIBSVM lines '<label> <index>:<value> ...'"
        )
    return X, labels


def _content(raw: bytes) -> str:
    return raw.split(b"#", 1)[0].decode("utf-8", errors="replace").strip()


def _line_of_row(data: bytes, row: int, first_line: int) -> int:
    """The line number of example ``row`` (0-based) of the text: blank and comment lines hold none."""
    seen = -1
    for offset, raw in enumerate(data.split(b"\n")):
        if _content(raw):
            seen += 1
            if seen == row:
                return first_line + offset
    return first_line  # not reached for a row the parser found


def _text_separator(line: str) -> tuple[str, str] | None:
    """The separator (and its name) of a CSV line that is not split at commas: semicolons or
    bars (tabs split the line's tokens already)."""
    for sep, name in ((";", "semicolons"), ("|", "bars")):
        if _cells_of(line, sep):
            return sep, name
    return None


def _cells_of(line: str, sep: str) -> bool:
    """Whether ``line`` reads as cells split at ``sep``: two or more filled, at most half of
    them three words or more (a sentence with a comma is prose, a text file that is no
    data: its clauses are not cells)."""
    parts = [part.strip() for part in line.split(sep)]
    filled = [part for part in parts if part]  # (an index's empty name, a missing value)
    if len(parts) < 2 or len(filled) < 2:
        return False
    return sum(len(part.split()) >= 3 for part in filled) * 2 <= len(filled)


def _written(data: bytes, offset: int, index: int) -> str | None:
    """The value of feature ``index`` as line ``offset`` (0-based) of the text writes it: a value
    beyond double precision's range (``1e400``) is read as ``inf``, which the file does not say."""
    lines = data.split(b"\n")
    if offset >= len(lines):
        return None
    for token in _content(lines[offset]).split()[1:]:
        key, _, value = token.partition(":")
        if key.isdigit() and int(key) == index:
            if value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
                return value
            return f"{value} (beyond double precision's range)"
    return None


def _locate_error(
    data: bytes, where: str, n_features: int | None, zero_based: bool, first_line: int
) -> str | None:
    """Describe the first malformed line of LIBSVM text, or ``None`` if none is found."""
    lowest = 0 if zero_based else 1
    for offset, raw in enumerate(data.split(b"\n")):
        line = _content(raw)
        if not line:
            continue
        head = raw[:60].decode("utf-8", errors="replace").rstrip("\r")
        tokens = line.split()
        problem = None
        if not _LABEL.match(tokens[0]):
            label = tokens[0] if len(tokens[0]) <= 40 else tokens[0][:37] + "..."
            problem = f"the label {label!r} is not a number"
            if ":" not in line and _cells_of(line, ","):
                problem += (
                    "; its cells are separated by commas, as in CSV: if the file is CSV, say so "
                    "(--format csv, format='csv')"
                )
            elif ":" not in line and (other := _text_separator(line)):
                problem += (
                    f"; its cells are separated by {other[1]}, as in CSV: if the file is CSV, "
                    f"say so and name the separator (--format csv --sep '{other[0]}', "
                    f"format='csv', sep='{other[0]}')"
                )
            elif "," in tokens[0] and all(_LABEL.match(t) for t in tokens[0].split(",")):
                problem += " (several labels, multilabel LIBSVM: one label a line is read)"
        last = -1
        for position, token in enumerate(tokens[1:]):
            if problem:
                break
            if token.startswith("qid:"):
                if position:  # (a query id is read only right after the label)
                    problem = (
                        f"{token!r} comes after a feature; a 'qid:' comes right after the label"
                    )
                    break
                continue
            match = _PAIR.match(token)
            if not match:
                problem = f"{token!r} is not an '<index>:<value>' pair"
                break
            index, value = int(match.group(1)), match.group(2)
            try:
                if not value.isascii():
                    raise ValueError(value)
                float(value)
            except ValueError:
                problem = f"the value {value!r} of feature {index} is not a number"
                break
            if index < lowest:
                problem = f"feature index {index} is below {lowest}, the first index of this file"
            elif index <= last:
                problem = f"feature indices must increase, but {index} follows {last}"
            elif n_features is not None and index - lowest >= n_features:
                problem = (
                    f"feature index {index} exceeds the {n_features} features expected "
                    f"({'zero' if zero_based else 'one'}-based)"
                )
            elif index - lowest >= _MAX_INDEX:
                problem = (
                    f"feature index {index} is beyond any model's width (at most {_MAX_INDEX:,} "
                    "features)"
                )
            last = index
        if problem:
            if "\r" in raw.rstrip(b"\r").decode("utf-8", errors="replace"):
                problem += f"; the line holds carriage returns (CR): {LINE_ENDS}"
            return f"{where}, line {first_line + offset}: {problem} (line starts {head!r}); {_EXPECTED}"
    return None
