"""Load a user's own LIBSVM/svmlight or CSV file as a :class:`~attentive.data.Dataset`.

The file is read by the project's one reader (:mod:`attentive.data.reader`, shared with
``python -m attentive score``): the same format guess, byte-order mark and line ends, LIBSVM index
base and CSV cells. Every problem a file can have is reported as
:class:`~attentive.errors.DataError` saying what was wrong and what is expected: missing, empty,
too large, truncated or malformed content (with the line number), non-numeric cells (column and
line), NaN / infinite features, an index base that cannot be told, columns that do not fit the
model, labels that are not binary (listing the labels found) or a single class.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from sklearn.model_selection import train_test_split

from attentive.data.dataset import Dataset, binary_labels, check_features
from attentive.data.libsvm import parse_libsvm
from attentive.data.reader import (
    BOM,
    HEAD_BYTES,
    HUGE_INDEX,
    OTHER_SEPARATORS,
    SEPARATOR_NAMES,
    UPLOAD_SEPARATORS,
    ExpectedFeatures,
    csv_header,
    csv_separator,
    decompress,
    feature_columns,
    guess_format,
    libsvm_index_range,
    libsvm_like,
    libsvm_stated_base,
    libsvm_zero_based,
    nameless_libsvm,
    parse_csv_rows,
    refuse_data_header,
    split_csv_line,
)
from attentive.errors import DataError, InvalidParameterError

__all__ = ["DEFAULT_MAX_UPLOAD_MB", "load_user_file", "max_upload_bytes"]

DEFAULT_MAX_UPLOAD_MB = 50.0
FORMATS = ("libsvm", "csv")
LABEL_COLUMN_GUESSES = ("label", "labels", "class", "target", "y")
# Dense features unless the matrix is both large and sparse (then CSR is kept end to end).
_DENSE_MAX_CELLS = 5_000_000
_DENSE_MIN_DENSITY = 0.1


DECOMPRESSED_FACTOR = 10  # an upload's decompressed size limit, in times its own
MAX_UPLOAD_FEATURES = 1 << 20  # features of a LIBSVM upload without a model (1,048,576)


def max_upload_bytes(max_bytes: int | None = None) -> int:
    """The upload limit in bytes: ``max_bytes``, else ``ATTENTIVE_MAX_UPLOAD_MB``, else 50 MB."""
    if max_bytes is not None:
        if max_bytes <= 0:
            raise InvalidParameterError(f"max_bytes must be positive, got {max_bytes}")
        return int(max_bytes)
    env = os.environ.get("ATTENTIVE_MAX_UPLOAD_MB")
    if env:
        try:
            mb = float(env)
        except ValueError:
            raise InvalidParameterError(
                f"ATTENTIVE_MAX_UPLOAD_MB must be a number of megabytes, got {env!r}"
            ) from None
        return int(mb * 1024 * 1024)
    return int(DEFAULT_MAX_UPLOAD_MB * 1024 * 1024)


def load_user_file(
    path_or_bytes: str | os.PathLike | bytes | BinaryIO,
    *,
    filename: str | None = None,
    format: str | None = None,
    label_column: str | int | None = None,
    positive_class: Any = None,
    test_size: float = 0.25,
    random_state: int = 0,
    max_bytes: int | None = None,
    model: Any = None,
    zero_based: bool | None = None,
) -> Dataset:
    """Read a LIBSVM or CSV file and split it into a stratified train / test :class:`Dataset`.

    Parameters
    ----------
    path_or_bytes : path-like, bytes or binary file object
        The file, or its content (an upload). gzip / bz2 / xz content is decompressed.
    filename : str, optional
        Name to report and to guess the format from (defaults to the path's name).
    format : {"libsvm", "csv"}, optional
        File format; guessed from the name (``.csv``/``.tsv`` vs ``.libsvm``, ``.svm``, ``.t``,
        ``.txt``, ...) and else from the content when ``None``.
    label_column : str or int, optional
        CSV only: the label column's name (or position). When ``None``, a column named ``label``,
        ``labels``, ``class``, ``target`` or ``y`` (any case) is used if there is exactly one.
    positive_class : object, optional
        The label meaning "positive"; required when the labels are not already binary. With two
        labels the larger (sorted) one is positive by default.
    test_size : float
        Fraction of examples held out as the test part, in (0, 1).
    random_state : int
        Seed of the stratified split.
    max_bytes : int, optional
        Upload limit in bytes (default: ``ATTENTIVE_MAX_UPLOAD_MB`` megabytes, else 50 MB).
    model : fitted estimator, optional
        The model these rows are for (an uploaded one). Its ``n_features_in_`` decides a LIBSVM
        file's index base and width, and its ``feature_names_in_`` (or count) is checked against
        a CSV file's feature columns (:mod:`attentive.data.reader`); a LIBSVM file is refused for
        a model fitted with feature names (its features have numbers). Without one, the file
        decides.
    zero_based : bool, optional
        LIBSVM only: whether feature indices start at 0. ``None`` detects it: the base the
        file's header states (``# Column indices are zero-based``); else index 0 present →
        zero-based; else the model's width reached → one-based; else, with a model, refused;
        without one, one-based (LIBSVM's convention). A header stating the other base is
        refused.

    Returns
    -------
    Dataset
        Dense float64 features, except large sparse LIBSVM data which stays CSR.

    Raises
    ------
    DataError
        Any problem with the file's content (see the module docstring).
    InvalidParameterError
        An unknown ``format`` or a ``test_size`` outside (0, 1).
    """
    if format is not None and format not in FORMATS:
        raise InvalidParameterError(f"format must be one of {FORMATS} or None, got {format!r}")
    if not 0.0 < test_size < 1.0:
        raise InvalidParameterError(f"test_size must be in (0, 1), got {test_size}")
    limit = max_upload_bytes(max_bytes)
    data, name = _read(path_or_bytes, filename, limit)
    # Ten times the upload limit once decompressed: a few kilobytes can expand to gigabytes.
    data = decompress(data, name, max_bytes=DECOMPRESSED_FACTOR * limit).removeprefix(BOM)
    if not data.strip():
        raise DataError(f"{name} is empty; expected a LIBSVM or CSV file with one example per line")
    fmt = guess_format(name, data[:HEAD_BYTES], format=format, allowed=FORMATS)
    expected = ExpectedFeatures.of(model)
    base = None
    if fmt == "csv":
        X, labels, label_name, columns = _parse_csv(data, name, label_column, expected)
    else:
        nameless_libsvm(
            expected,
            name,
            "the model is not used with it: upload its rows as a CSV file with a header line "
            "naming its columns",
        )
        index_range = libsvm_index_range(data)
        base = libsvm_zero_based(
            index_range,
            expected.n_features,
            zero_based,
            where=name,
            stated=libsvm_stated_base(data[:HEAD_BYTES]),
        )
        width = 0 if index_range is None else index_range[1] + int(base)
        if expected.n_features is None and width > MAX_UPLOAD_FEATURES:
            # One line can name feature 999999999: arrays over the features would take gigabytes.
            largest = (
                "a feature index of 19 digits or more"
                if index_range[1] == HUGE_INDEX
                else f"its largest feature index, {index_range[1]:,}, makes {width:,} features"
            )
            raise DataError(
                f"{name}: {largest}; an upload may have up to {MAX_UPLOAD_FEATURES:,}. Score "
                "wider data with python -m attentive score and a model trained on it"
            )
        X, labels = parse_libsvm(data, where=name, n_features=expected.n_features, zero_based=base)
        label_name, columns = "label", None
        if X.shape[0] * X.shape[1] <= _DENSE_MAX_CELLS or X.nnz >= _DENSE_MIN_DENSITY * np.prod(
            X.shape, dtype=float
        ):
            X = X.toarray()
    X = check_features(X, where=name)
    y, class_names = binary_labels(labels, positive_class, where=name)
    counts = np.bincount(y, minlength=2)
    n_test = int(np.ceil(test_size * y.size))
    if counts.min() < 2 or n_test < 2 or y.size - n_test < 2:
        raise DataError(
            f"{name}: too few examples to split ({counts[1]} positive, {counts[0]} negative, "
            f"which would leave {y.size - n_test} for training and {n_test} for testing); need "
            "at least 2 of each class and 2 examples in each part"
        )
    rows = np.arange(y.size)
    train, test = train_test_split(rows, test_size=test_size, random_state=random_state, stratify=y)
    train, test = np.sort(train), np.sort(test)
    stem = Path(name).name
    positive = class_names[1]
    return Dataset(
        name=stem,
        description=(
            f"Your file {stem}: {y.size} examples with {X.shape[1]} features, split "
            f"{1 - test_size:.0%} / {test_size:.0%} into train and test (stratified, seed {random_state})."
        ),
        positive_meaning=f"{label_name} = {positive}",
        X_train=X[train],
        y_train=y[train],
        X_test=X[test],
        y_test=y[test],
        class_names=class_names,
        params={
            "filename": stem,
            "format": fmt,
            "label_column": label_name,
            "positive_class": positive,
            "test_size": test_size,
            "random_state": random_state,
            "feature_names": columns,
            "zero_based": base,
        },
    )


def _read(source: Any, filename: str | None, limit: int) -> tuple[bytes, str]:
    """Read the bytes of a path, bytes or file object, refusing anything over ``limit``."""
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), filename or "uploaded file"
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        name = filename or path.name
        if not path.exists():
            raise DataError(f"file not found: {path}")
        if not path.is_file():
            raise DataError(f"{path} is not a file")
        size = path.stat().st_size
        if size > limit:
            raise DataError(_too_large(name, size, limit))
        data = path.read_bytes()
    elif hasattr(source, "read"):
        name = filename or Path(getattr(source, "name", "uploaded file")).name
        data = source.read(limit + 1)
    else:
        raise DataError(
            f"expected a path, bytes or a binary file object, got {type(source).__name__}"
        )
    if len(data) > limit:
        raise DataError(_too_large(name, len(data), limit))
    return data, name


def _too_large(name: str, size: int, limit: int) -> str:
    mb = 1024 * 1024
    return (
        f"{name} is {size / mb:.1f} MB, over the upload limit of {limit / mb:.1f} MB; pass "
        "max_bytes=... or set ATTENTIVE_MAX_UPLOAD_MB to allow larger files"
    )


def _parse_csv(
    data: bytes, name: str, label_column: str | int | None, expected: ExpectedFeatures
) -> tuple[np.ndarray, np.ndarray, str, list[str]]:
    """Parse CSV with a header row into features, raw labels, the label column and feature names."""
    sep = csv_separator(name)
    first, _, rest = data.partition(b"\n")
    header_line = 1
    while not first.strip() and rest:  # blank lines before the header (pandas skips them too)
        first, _, rest = rest.partition(b"\n")
        header_line += 1
    cells = split_csv_line(first, sep, where=name, number=header_line, upload=True)
    if not any(cells):
        raise DataError(
            f"{name} has no header line; expected a header row and one example per line"
        )
    if expected.names is None or tuple(cells) != expected.names:
        asked = (label_column,) if isinstance(label_column, str) else ()
        refuse_data_header(cells, where=name, sep=sep, label_names=(*asked, *LABEL_COLUMN_GUESSES))
    columns = csv_header(cells, header=True, expected=expected, where=name, sep=sep)
    for other in OTHER_SEPARATORS:
        if len(columns) == 1 and other in columns[0] and other != sep:
            raise DataError(
                f"{name}: its header is one column, {columns[0][:60]!r}: the file seems to be "
                f"separated by {SEPARATOR_NAMES[other]}, and this file is read as separated by "
                f"{SEPARATOR_NAMES[sep]}; {UPLOAD_SEPARATORS}"
            )
    if len(columns) == 1 and ":" in columns[0] and libsvm_like(columns[0]):
        raise DataError(
            f"{name}: its first line, {columns[0][:60]!r}, looks like LIBSVM ('<label> "
            "<index>:<value> ...'), and the file is read as CSV by its name: name it .libsvm to "
            "read it as LIBSVM"
        )
    if len(columns) == 1 and len(columns[0].split()) > 1:
        raise DataError(
            f"{name}: its header is one column, {columns[0][:60]!r}: the file seems to be "
            f"separated by spaces, which are not read as a separator; {UPLOAD_SEPARATORS}"
        )
    if not rest.strip():
        raise DataError(f"{name} has a header but no examples")
    label = _label_column(columns, name, label_column)
    if len(columns) < 2:
        raise DataError(f"{name}: only the label column {label!r}; expected feature columns too")
    features = feature_columns(columns, len(columns), expected, (label,), where=name, sep=sep)
    frame = parse_csv_rows(
        rest,
        names=columns,
        numeric=features,
        where=name,
        first_line=header_line + 1,
        sep=sep,
        upload=True,
    )
    for column in features:
        _refuse_row_numbers(frame, column, name)
    labels = frame[label]
    missing = labels.isna().to_numpy()
    if missing.any():
        line = int(np.flatnonzero(missing)[0]) + header_line + 1
        raise DataError(f"{name}, line {line}: the label ({label!r}) is missing")
    labels_array = labels.to_numpy()
    if labels_array.dtype == object:
        labels_array = labels_array.astype(str)
    return frame[features].to_numpy(dtype=np.float64), labels_array, label, features


#: Column names (any case) that hold row identifiers, not features, when their values number the
#: rows (whole numbers, each once); and pandas' name for the index df.to_csv() writes first.
ID_COLUMN_NAMES = ("id", "index", "row", "row_id", "rowid")
_PANDAS_INDEX = "Unnamed: 0"


def _refuse_row_numbers(frame, column: str, name: str) -> None:
    """Refuse a feature column that numbers the rows: pandas' index (``df.to_csv()`` writes it
    first, unnamed) or a column named like an identifier (:data:`ID_COLUMN_NAMES`). Taken as a
    feature, a user's trial fell from 84 % to 52 % accuracy (the index's spread dwarfs the
    pixels' under ``gamma="scale"``)."""
    pandas_index = column == _PANDAS_INDEX
    if not (pandas_index or column.strip().lower() in ID_COLUMN_NAMES):
        return
    counter = frame[column].to_numpy()
    whole = counter.size > 1 and bool(np.all((counter >= 0) & (counter == np.round(counter))))
    if not (whole and np.unique(counter).size == counter.size):
        return
    shown = ", ".join(str(int(v)) for v in counter[:3])
    if pandas_index:
        # (In any order after a shuffle or a split.)
        raise DataError(
            f"{name}: its first column has no name and numbers the rows ({shown}, …, each "
            "once): the index pandas writes with df.to_csv(), not a feature. Write the file "
            "with df.to_csv(path, index=False), or remove that column"
        )
    raise DataError(
        f"{name}: its column {column!r} numbers the rows ({shown}, …, each once): an "
        "identifier, not a feature; a model would learn from it. Remove that column (or "
        "rename it, if it is a feature)"
    )


def _label_column(columns: list[str], name: str, label_column: str | int | None) -> str:
    shown = ", ".join(repr(c) for c in columns[:30]) + (" ..." if len(columns) > 30 else "")
    if label_column is None:
        guesses = [c for c in columns if c.strip().lower() in LABEL_COLUMN_GUESSES]
        if len(guesses) == 1:
            return guesses[0]
        raise DataError(
            f"{name}: say which column holds the labels (label_column=...); columns: {shown}"
        )
    if isinstance(label_column, int) and not isinstance(label_column, bool):
        if not -len(columns) <= label_column < len(columns):
            raise DataError(
                f"{name}: no column number {label_column}; it has {len(columns)} columns"
            )
        return columns[label_column]
    if str(label_column) not in columns:
        raise DataError(f"{name}: no column named {label_column!r}; columns: {shown}")
    return str(label_column)
