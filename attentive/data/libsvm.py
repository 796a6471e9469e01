"""Parse LIBSVM / svmlight text (``<label> <index>:<value> ...``) with useful errors.

Parsing is scikit-learn's ``load_svmlight_file`` (fast, C). Its errors do not say where, so when it
fails we scan the text line by line to report the first bad line number and what was expected.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import zlib

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from attentive.errors import DataError

__all__ = ["decompress", "parse_libsvm"]

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)"
_LABEL = re.compile(rf"^(?:{_NUMBER})$", re.IGNORECASE)
_PAIR = re.compile(r"^(\d+):(\S+)$")


def parse_libsvm(
    data: bytes, *, where: str, n_features: int | None = None
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse LIBSVM text into a CSR matrix and raw labels.

    Parameters
    ----------
    data : bytes
        The file's content (already decompressed).
    where : str
        The file's name, for error messages.
    n_features : int, optional
        Number of features to expect; by default the largest index seen.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64
    labels : ndarray of float64

    Raises
    ------
    DataError
        Empty file, or a malformed line (the message gives its number, its start and the expected
        ``<label> <index>:<value> ...`` form).
    """
    if not data.strip():
        raise DataError(f"{where} is empty; expected LIBSVM lines '<label> <index>:<value> ...'")
    try:
        X, labels = load_svmlight_file(io.BytesIO(data), n_features=n_features, dtype=np.float64)
    except ValueError as exc:
        raise DataError(_locate_error(data, where, n_features) or f"{where}: {exc}") from None
    if X.shape[0] == 0:
        raise DataError(
            f"{where} has no examples; expected LIBSVM lines '<label> <index>:<value> ...'"
        )
    return X.tocsr(), labels


def _locate_error(data: bytes, where: str, n_features: int | None) -> str | None:
    """Describe the first malformed line of LIBSVM text, or ``None`` if none is found."""
    for number, raw in enumerate(data.splitlines(), start=1):
        line = raw.split(b"#", 1)[0].decode("utf-8", errors="replace").strip()
        if not line:
            continue
        head = raw[:60].decode("utf-8", errors="replace")
        tokens = line.split()
        problem = None
        if not _LABEL.match(tokens[0]):
            problem = f"the label {tokens[0]!r} is not a number"
        last = -1
        for token in tokens[1:]:
            if problem:
                break
            if token.startswith("qid:"):
                continue
            match = _PAIR.match(token)
            if not match:
                problem = f"{token!r} is not an '<index>:<value>' pair"
                break
            index, value = int(match.group(1)), match.group(2)
            try:
                float(value)
            except ValueError:
                problem = f"the value {value!r} of feature {index} is not a number"
                break
            if index <= last:
                problem = f"feature indices must increase, but {index} follows {last}"
            elif n_features is not None and index > n_features:
                problem = f"feature index {index} exceeds the {n_features} features expected"
            last = index
        if problem:
            return (
                f"{where}, line {number}: {problem} (line starts {head!r}); expected "
                "'<label> <index>:<value> ...' with increasing indices"
            )
    return None


def decompress(data: bytes, name: str) -> bytes:
    """Decompress gzip, bz2 or xz content (recognised by magic bytes); other bytes pass through.

    Raises
    ------
    DataError
        The content starts like a compressed file but is truncated or corrupt.
    """
    try:
        if data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if data[:3] == b"BZh":
            return bz2.decompress(data)
        if data[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(data)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise DataError(f"{name}: compressed file is truncated or corrupt ({exc})") from None
    return data
