"""Read LIBSVM, CSV or Parquet lazily in row chunks for Dask, with the project's one reader.

Every decision about a file — format, compression, byte-order mark, LIBSVM index base, CSV header,
columns against the model, cells — is :mod:`attentive.data.reader`'s, which the dashboard's
uploads use too; here a file is cut into chunks whose tasks call it. A text file is cut by one
sequential pass counting line breaks, so every chunk holds exactly ``chunk_rows`` lines and knows
the number of its first line (for messages). A LIBSVM file whose base is not given gets a first
pass on Dask over every chunk (smallest and largest index) before anything is scored.
"""

from __future__ import annotations

import lzma
import os
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import scipy.sparse as sp
from dask.utils import natural_sort_key

from attentive.data.libsvm import read_libsvm_rows
from attentive.data.reader import (
    BOM,
    HEAD_BYTES,
    ExpectedFeatures,
    check_finite_rows,
    check_separator,
    compression_of,
    csv_header,
    csv_separator,
    feature_columns,
    guess_format,
    libsvm_index_range,
    libsvm_stated_base,
    libsvm_zero_based,
    merge_index_ranges,
    nameless_libsvm,
    one_column_hint,
    open_binary,
    parse_csv_rows,
    separated_format,
    split_csv_line,
)
from attentive.errors import DataError, InvalidParameterError

__all__ = ["check_chunk_rows", "check_columns", "check_options", "line_chunks", "read_input"]

_SCAN_BYTES = 16 * 1024 * 1024
# What to score instead of LIBSVM rows for a model that knows its features by name.
_SCORE_INSTEAD = "score a CSV file with a header line naming its columns, or Parquet"


def read_input(
    path: str | os.PathLike,
    clf,
    *,
    chunk_rows: int = 100_000,
    format: str | None = None,
    zero_based: bool | None = None,
    header: bool | None = None,
    exclude: tuple[str, ...] = (),
    name: str | None = None,
    sep: str | None = None,
):
    """The rows of a file as lazy chunks of about ``chunk_rows`` rows, for :func:`score_dask`.

    Parameters
    ----------
    path : path-like
        LIBSVM/svmlight text (one example per line; labels are ignored), CSV (one numeric column
        per feature, no quoted line breaks; ``.tsv``: tab-separated) or Parquet (a file or a
        directory of files). Text may be gzip / bz2 / xz compressed: each chunk then decompresses
        the file up to its own lines (:func:`~attentive.scale.score_file` decompresses once
        instead).
    clf : fitted estimator
        The model to feed: its ``n_features_in_`` and ``feature_names_in_`` decide what is read
        (:class:`attentive.data.reader.ExpectedFeatures`).
    chunk_rows : int
        Rows per chunk: lines for text files; for Parquet, whole row groups are gathered until a
        chunk holds at least ``chunk_rows`` rows.
    format : {"libsvm", "csv", "parquet"}, optional
        Guessed from the name (then the content) when None.
    zero_based : bool, optional
        LIBSVM: whether feature indices start at 0. None reads the base the file's header
        states (``# Column indices are zero-based``), and checks it, or detects it, from a first
        pass over the whole file, computed here on Dask's current scheduler: index 0 present →
        zero-based; largest index equal to the model's number of features → one-based;
        otherwise refused (say which). Given, the first pass is skipped; a header stating the
        other base is refused.
    header : bool, optional
        CSV: whether the first line names the columns. None decides from the line
        (:func:`attentive.data.reader.csv_header`).
    exclude : tuple of str
        CSV / Parquet columns that are not features (e.g. a label).
    name : str, optional
        The name to report in messages (default: the file's).
    sep : str, optional
        CSV: the field separator, one character (``";"``, ``"|"``) or ``"tab"``; default a tab
        for ``.tsv`` files, else a comma.

    Returns
    -------
    dask.array.Array (LIBSVM: CSR blocks) or dask.dataframe.DataFrame (CSV, Parquet)

    Raises
    ------
    DataError
        A file that cannot be read as rows for this model (see :mod:`attentive.data.reader`);
        problems inside a chunk are raised when it is computed, naming the line.
    """
    check_chunk_rows(chunk_rows)
    path = Path(path)
    where = name or path.name
    expected = ExpectedFeatures.of(clf)
    fmt, text, head = _opened(
        path, where, format, zero_based=zero_based, header=header, exclude=exclude, sep=sep
    )
    if fmt == "parquet":
        return _read_parquet(path, expected, chunk_rows, tuple(exclude), where)
    start = len(BOM) if head.startswith(BOM) else 0
    if fmt == "libsvm":
        nameless_libsvm(expected, where, _SCORE_INSTEAD)
        return _read_libsvm(text, start, expected, chunk_rows, zero_based)
    return _read_csv(text, start, expected, chunk_rows, header, tuple(exclude), sep)


def check_columns(
    path: str | os.PathLike,
    clf,
    *,
    format: str | None = None,
    header: bool | None = None,
    exclude: tuple[str, ...] = (),
    name: str | None = None,
    sep: str | None = None,
) -> None:
    """:func:`read_input`'s checks of a CSV file's first line, or of a Parquet file's (or
    directory's) schemas, against ``clf``'s features (a header, the number of fields, the names,
    the column types), reading no row: so that :func:`attentive.scale.score_file` refuses such
    a file before it starts a cluster. LIBSVM's rows are checked as they are read; its lack of
    names, here."""
    path = Path(path)
    where = name or path.name
    fmt, text, head = _opened(
        path, where, format, zero_based=None, header=header, exclude=exclude, sep=sep
    )
    if fmt == "libsvm":
        nameless_libsvm(ExpectedFeatures.of(clf), where, _SCORE_INSTEAD)
    elif fmt == "csv":
        start = len(BOM) if head.startswith(BOM) else 0
        _csv_columns(text, start, ExpectedFeatures.of(clf), header, tuple(exclude), sep)
    elif fmt == "parquet":
        _parquet_files(path, ExpectedFeatures.of(clf), tuple(exclude), where)


def check_chunk_rows(chunk_rows) -> None:
    """Refuse a ``chunk_rows`` that is not a positive integer."""
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise InvalidParameterError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")


def check_options(
    path: str | os.PathLike,
    *,
    format: str | None = None,
    zero_based: bool | None = None,
    header: bool | None = None,
    exclude: tuple[str, ...] = (),
    name: str | None = None,
    sep: str | None = None,
) -> str:
    """The format :func:`read_input` reads ``path`` as, after the checks it makes before reading
    any rows: the file exists, its format is known, a compressed file is not Parquet, and the
    options given apply to that format. It reads the file's first bytes only (a compressed
    file's first decompressed bytes), so :func:`attentive.scale.score_file` refuses a wrong
    option before it decompresses the input or starts a cluster."""
    path = Path(path)
    fmt, _, _ = _opened(
        path,
        name or path.name,
        format,
        zero_based=zero_based,
        header=header,
        exclude=exclude,
        sep=sep,
    )
    return fmt


def _opened(path: Path, where: str, format, *, zero_based, header, exclude, sep=None):
    """``(format, text, head)`` of ``path`` (``text`` and ``head`` None for Parquet), the
    options checked against the format (and a separator given, as one)."""
    if sep is not None:
        check_separator(sep)
        if not path.is_dir():
            format = separated_format(where, format)
    if not path.exists():
        raise DataError(f"input not found: {path}")
    if path.is_dir():
        guess_format(where, format=format or "parquet", allowed=("parquet",))
        _check_options_apply(where, "parquet", header=header, zero_based=zero_based, sep=sep)
        return "parquet", None, None
    with open(path, "rb") as f:
        text = _Text(str(path), compression_of(f.read(8)), where)
    head = text.head()
    fmt = guess_format(where, head, format=format)
    if fmt == "parquet":
        if text.compression:
            raise DataError(f"{where}: a compressed Parquet file; Parquet compresses its own pages")
        _check_options_apply(where, "parquet", header=header, zero_based=zero_based, sep=sep)
        return "parquet", None, None
    if fmt == "libsvm":
        _check_options_apply(where, fmt, header=header, exclude=exclude, sep=sep)
    else:
        _check_options_apply(where, fmt, zero_based=zero_based)
    return fmt, text, head


_FORMAT_NAMES = {"libsvm": "LIBSVM", "csv": "CSV", "parquet": "Parquet"}


def _check_options_apply(
    where: str, fmt: str, *, header=None, exclude=(), zero_based=None, sep=None
):
    """Refuse options the file's format has no use for, instead of ignoring them silently."""
    given = []
    if header is not None:
        given.append(("--header / --no-header (header=)", "a header line is CSV's"))
    if sep is not None:
        given.append(("--sep (sep=)", "a field separator is CSV's"))
    if exclude:
        given.append(("--exclude (exclude=)", "named columns are CSV's and Parquet's"))
    if zero_based is not None:
        given.append(("--zero-based / --one-based (zero_based=)", "the index base is LIBSVM's"))
    if given:
        options = " and ".join(o for o, _ in given)
        raise InvalidParameterError(
            f"{where} is read as {_FORMAT_NAMES.get(fmt, fmt)}: {options} "
            f"{'does' if len(given) == 1 else 'do'} not apply to it "
            f"({'; '.join(r for _, r in given)})"
        )


_CORRUPT = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)


@dataclass(frozen=True)
class _Text:
    """A text file read in line ranges: where it is, how it is compressed, its name in messages."""

    path: str
    compression: str | None
    where: str

    def head(self) -> bytes:
        try:
            with open_binary(self.path, self.compression) as f:
                return f.read(HEAD_BYTES)
        except _CORRUPT as exc:
            raise self._corrupt(exc) from None

    def chunks(self, chunk_rows: int, start: int, first_line: int = 1):
        """:func:`line_chunks` of the file; a compressed one found truncated is a DataError."""
        try:
            return line_chunks(
                self.path,
                chunk_rows,
                start=start,
                first_line=first_line,
                compression=self.compression,
            )
        except _CORRUPT as exc:
            if self.compression is None:
                raise
            raise self._corrupt(exc) from None

    def read(self, start: int, stop: int) -> bytes:
        with open_binary(self.path, self.compression) as f:
            f.seek(start)
            return f.read(stop - start)

    def _corrupt(self, exc: BaseException) -> DataError:
        return DataError(f"{self.where}: compressed file is truncated or corrupt ({exc})")


def line_chunks(
    path: str | os.PathLike,
    chunk_rows: int,
    *,
    start: int = 0,
    first_line: int = 1,
    compression: str | None = None,
) -> list[tuple[int, int, int]]:
    """Byte ranges ``[a, b)`` of ``chunk_rows`` lines each from byte ``start`` (the last may be
    shorter), each with the file's number of its first line.

    One sequential pass counting line breaks, 16 MiB at a time: memory stays flat in the file
    size. Offsets are in the decompressed text when ``compression`` is given.
    """
    bounds = []
    lines = 0  # line breaks since the current chunk began
    offset = a = start
    with open_binary(path, compression) as f:
        f.seek(start)
        while piece := f.read(_SCAN_BYTES):
            n = piece.count(b"\n")
            ends = range(chunk_rows - lines - 1, n, chunk_rows)  # line breaks that end a chunk
            if len(ends):
                breaks = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == ord("\n"))
                for k in ends:
                    b = offset + int(breaks[k]) + 1
                    bounds.append((a, b, first_line + len(bounds) * chunk_rows))
                    a = b
            lines = (lines + n) % chunk_rows
            offset += len(piece)
    if offset > a:
        bounds.append((a, offset, first_line + len(bounds) * chunk_rows))
    return bounds


# -- LIBSVM ---------------------------------------------------------------------------------------
def _libsvm_range(text: _Text, a: int, b: int) -> tuple[int, int] | None:
    return libsvm_index_range(text.read(a, b))


def _libsvm_chunk(text: _Text, a: int, b: int, line: int, n_features: int, zero_based: bool):
    X, _ = read_libsvm_rows(
        text.read(a, b),
        where=text.where,
        n_features=n_features,
        zero_based=zero_based,
        first_line=line,
    )
    return X


def _read_libsvm(text: _Text, start, expected: ExpectedFeatures, chunk_rows, zero_based):
    n = expected.n_features
    chunks = text.chunks(chunk_rows, start)
    if not chunks:
        raise DataError(
            f"{text.where} is empty; expected LIBSVM lines '<label> <index>:<value> ...'"
        )
    index_range = None
    if zero_based is None:  # the first pass: smallest and largest index of the whole file
        ranges = dask.compute(
            *[dask.delayed(_libsvm_range, pure=True)(text, a, b) for a, b, _ in chunks]
        )
        index_range = merge_index_ranges(ranges)
    zero_based = libsvm_zero_based(
        index_range, n, zero_based, where=text.where, stated=libsvm_stated_base(text.head())
    )
    blocks = [
        da.from_delayed(
            dask.delayed(_libsvm_chunk, pure=True)(text, a, b, line, n, zero_based),
            shape=(np.nan, n),
            dtype=np.float64,
            meta=sp.csr_matrix((0, n)),
        )
        for a, b, line in chunks
    ]
    return da.concatenate(blocks, axis=0, allow_unknown_chunksizes=True)


# -- CSV ------------------------------------------------------------------------------------------
def _csv_chunk(text: _Text, a, b, line, names, features, sep) -> pd.DataFrame:
    frame = parse_csv_rows(
        text.read(a, b),
        names=names,
        numeric=features,
        where=text.where,
        first_line=line,
        sep=sep,
    )
    return frame[features]


def _csv_columns(text: _Text, start, expected, header, exclude, sep=None):
    """What a CSV file's first line says (its separator, the line's start and number, whether it
    names the columns, and which are the features), checked against the model's ``expected``
    features: ``(sep, columns, features, data_start, first_line)``, the rows starting at byte
    ``data_start``, line ``first_line``."""
    where = text.where
    sep = csv_separator(where, sep)
    with open_binary(text.path, text.compression) as f:
        f.seek(start)
        skipped = 0  # blank lines before the first line (pandas skips them too)
        while (first := f.readline()) and not first.strip():
            skipped += 1
        first_start = f.tell() - len(first)
        while (second := f.readline()) and not second.strip():
            pass
    if not first:
        raise DataError(f"{where} is empty; expected one example per line")
    cells = split_csv_line(first, sep, where=where, number=skipped + 1)
    try:  # (the next line, for a first line that could be either: csv_header)
        following = split_csv_line(second, sep, where=where, number=skipped + 2) if second else None
    except DataError:
        following = None
    columns = csv_header(
        cells, header=header, expected=expected, where=where, sep=sep, following=following
    )
    n = expected.n_features
    # (With --exclude, a file without a header is refused for that first: the count is wrong
    # because the column to exclude is still there.)
    count_only = columns is None and not exclude and expected.names is None
    if count_only and n is not None and len(cells) != n:
        hint = one_column_hint(sep, cells[0]) if len(cells) == 1 else ""
        raise DataError(
            f"{where}, line {skipped + 1}: {len(cells)} fields, but the model expects {n} "
            f"features (the file has no header line){hint}"
        )
    features = feature_columns(columns, len(cells), expected, exclude, where=where, sep=sep)
    if columns is None:  # the first line is a row
        return sep, columns, features, first_start, skipped + 1
    return sep, columns, features, first_start + len(first), skipped + 2


def _read_csv(text: _Text, start, expected, chunk_rows, header, exclude, sep=None):
    where = text.where
    sep, columns, features, data_start, first_line = _csv_columns(
        text, start, expected, header, exclude, sep
    )
    names = columns or features
    chunks = text.chunks(chunk_rows, data_start, first_line)
    if not chunks:
        raise DataError(f"{where} has a header but no rows")
    meta = pd.DataFrame({c: np.empty(0) for c in features})
    parts = [
        dask.delayed(_csv_chunk, pure=True)(text, a, b, line, names, features, sep)
        for a, b, line in chunks
    ]
    return dd.from_delayed(parts, meta=meta)


# -- Parquet --------------------------------------------------------------------------------------
#: Rows decoded at a time into a Parquet chunk's array (a row group is read in batches of these,
#: not whole: its Arrow table and a pandas copy made three copies of the chunk at once).
PARQUET_BATCH_ROWS = 16_384
#: A row group of this many times ``--chunk-rows`` rows and at least ``LARGE_GROUP_BYTES`` as
#: float64 is told of: a chunk is never smaller than a row group.
LARGE_GROUP_FACTOR, LARGE_GROUP_BYTES = 4, 2**28


def _parquet_chunk(file: str, groups: list[int], columns: list[str], where: str, first_row: int):
    """Row groups ``groups`` of ``file`` as a float64 frame of ``columns``, decoded batch by batch
    into one array (peak: the array and a batch, not three copies of the chunk); nulls are NaN,
    refused by name with any other non-finite value."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    f = pq.ParquetFile(file)
    n = sum(f.metadata.row_group(g).num_rows for g in groups)
    X = np.empty((n, len(columns)), dtype=np.float64, order="F")  # (a frame's one block)
    at = 0
    for batch in f.iter_batches(
        batch_size=PARQUET_BATCH_ROWS, row_groups=groups, columns=columns, use_threads=False
    ):
        rows = batch.num_rows
        for j, name in enumerate(columns):
            values = pc.cast(batch.column(name), pa.float64(), safe=False)
            X[at : at + rows, j] = values.to_numpy(zero_copy_only=False)
        at += rows
    if at != n:
        raise DataError(f"{where}: its row groups hold {at:,} rows, its footer says {n:,}")
    frame = pd.DataFrame(X, columns=columns, copy=False)
    check_finite_rows(frame, where=where, first_row=first_row)
    return frame


def _parquet_columns(schema) -> list[str]:
    """The schema's columns less the index pandas stored with a frame (``__index_level_0__``)."""
    index = set()
    if schema.pandas_metadata:
        index = {c for c in schema.pandas_metadata.get("index_columns", []) if isinstance(c, str)}
    return [c for c in schema.names if c not in index]


def _read_parquet(path: Path, expected: ExpectedFeatures, chunk_rows: int, exclude, where: str):
    opened, features = _parquet_files(path, expected, exclude, where)
    meta = pd.DataFrame({c: np.empty(0) for c in features})
    parts = []
    _tell_large_groups(opened, where, chunk_rows, len(features))
    for file, name, f in opened:
        groups, rows, first_row = [], 0, 1
        for i in range(f.metadata.num_row_groups):
            groups.append(i)
            rows += f.metadata.row_group(i).num_rows
            if rows >= chunk_rows or i == f.metadata.num_row_groups - 1:
                parts.append(
                    dask.delayed(_parquet_chunk, pure=True)(
                        str(file), groups, features, name, first_row
                    )
                )
                groups, first_row, rows = [], first_row + rows, 0
    if not sum(f.metadata.num_rows for _, _, f in opened):
        raise DataError(f"{where} has no rows")
    return dd.from_delayed(parts, meta=meta)


def _tell_large_groups(opened, where: str, chunk_rows: int, n_features: int) -> None:
    """Warn, once for the input, where a row group is far larger than a chunk: it is read as one
    (rows are not split within a row group, as Dask's own reader does not), so a worker holds
    all of its rows."""
    largest, names = 0, []
    for _, name, f in opened:
        rows = max(
            (f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)),
            default=0,
        )
        if rows >= LARGE_GROUP_FACTOR * chunk_rows and rows * n_features * 8 >= LARGE_GROUP_BYTES:
            largest, names = max(largest, rows), [*names, name]
    if not names:
        return
    size = largest * n_features * 8
    size = f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"
    which = names[0] if len(names) == 1 else f"{where} ({len(names)} files)"
    warnings.warn(
        f"{which}: a row group holds up to {largest:,} rows, read as one chunk of about {size} "
        f"(float64) on a worker, whatever --chunk-rows says ({chunk_rows:,}); to score in "
        "chunks of that size, rewrite the file with smaller row groups, e.g. "
        f"df.to_parquet(path, row_group_size={chunk_rows}) or "
        f"pyarrow.parquet.write_table(table, path, row_group_size={chunk_rows})",
        UserWarning,
        stacklevel=2,
    )


#: How a Parquet directory is read, in the messages about its files.
EVERY_FILE = (
    "every file of a Parquet directory is read, except hidden ones (names starting with '_' or '.')"
)


def _parquet_files(path: Path, expected: ExpectedFeatures, exclude, where: str):
    """``(opened, features)``: a Parquet file's or directory's files, each ``(path, name,
    ParquetFile)``, and the feature columns, every file's schema checked against the model
    (from their footers: no row is read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A directory's files in natural order (part.2 before part.10), as Dask writes and reads
    # them: the output's rows are the input's in that order (alphabetical put part.10 second).
    # Every file but hidden ones (a name starting "_" or ".", in any folder: _SUCCESS, .crc,
    # _metadata), whatever its name, as pyarrow's datasets and Dask read a directory: only
    # "*.parquet" dropped part.1.pq, PART.2.PARQUET and Hive's 000000_0 without a word.
    files = (
        sorted(
            (
                p
                for p in path.rglob("*")
                if (p.is_file() or p.is_symlink())  # (a broken link fails to open, by name)
                and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts)
            ),
            key=lambda p: natural_sort_key(p.relative_to(path).as_posix()),
        )
        if path.is_dir()
        else [path]
    )
    for linked in (p for p in files if p.is_dir()):  # (rglob follows no link to a folder)
        raise DataError(
            f"{where}/{linked.relative_to(path)} is a link to a folder, whose files would not be "
            "read: move or copy them into the directory"
        )
    if not files:
        raise DataError(f"no files in {path} ({EVERY_FILE})")
    opened = []
    for file in files:
        name = where if file == path else f"{where}/{file.relative_to(path)}"
        try:
            opened.append((file, name, pq.ParquetFile(file)))
        except (pa.ArrowException, OSError) as exc:
            among = f"; {EVERY_FILE}: move other files out" if file != path else ""
            raise DataError(f"{name} is not a readable Parquet file ({exc}){among}") from None
    schema = opened[0][2].schema_arrow
    columns = _parquet_columns(schema)
    features = feature_columns(columns, len(columns), expected, exclude, where=where)
    for _, name, f in opened[1:]:
        if _parquet_columns(f.schema_arrow) != columns:
            raise DataError(f"{name} has other columns than {opened[0][1]}: every file must match")
    for _, name, f in opened:  # (every file: a later one's text column was read as numbers)
        for column in features:
            kind = f.schema_arrow.field(column).type
            if not (
                pa.types.is_integer(kind)
                or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind)
                or pa.types.is_decimal(kind)  # (SQL exports: read as the float64 they round to)
            ):
                raise DataError(
                    f"{name}: column {column!r} holds {kind} values; features must be numeric "
                    "(files are read as numbers only: score a pipeline that takes text columns "
                    "with attentive.scale.score_dask on a frame you read, docs/scale.md)"
                )
    return opened, features
