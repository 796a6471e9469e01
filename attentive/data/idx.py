"""Read MNIST's IDX files (optionally gzipped).

Format (http://yann.lecun.com/exdb/mnist/): a big-endian header ``0x00 0x00 <type> <ndim>``, then
``ndim`` big-endian uint32 sizes, then the values row-major. MNIST uses type ``0x08`` (unsigned
byte): ``ndim = 3`` for images (n, 28, 28) and ``ndim = 1`` for labels.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

from attentive.errors import DataError

__all__ = ["read_idx"]

# IDX type code -> numpy big-endian dtype
_IDX_TYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read one IDX file (``.gz`` is decompressed) into an array.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    ndarray
        Array of the stored shape and a native-endian dtype (uint8 for MNIST).

    Raises
    ------
    DataError
        The file is missing, not gzip although named ``.gz``, has a bad magic number, or holds fewer
        (or more) bytes than its header promises.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"IDX file not found: {path}")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path.name}: not a readable gzip file ({exc}); delete it and download again"
        ) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise DataError(
            f"{path.name}: not an IDX file (magic bytes {raw[:4].hex() or 'missing'}, expected "
            "00 00 <type> <ndim>)"
        )
    dtype, ndim = _IDX_TYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path.name}: truncated IDX header ({len(raw)} bytes)")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(raw) != expected:
        raise DataError(
            f"{path.name}: the header promises shape {shape} ({expected} bytes) but the file has "
            f"{len(raw)} bytes; it is truncated or corrupt - delete it and download again"
        )
    data = np.frombuffer(raw, dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))
