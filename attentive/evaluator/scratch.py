"""Scratch arrays of the walks, kept per thread between calls."""

from __future__ import annotations

import math
import threading
import weakref

import numpy as np

__all__ = ["release_scratch", "scratch"]


class _Buffers:
    """Grow-only scratch arrays, by name (fresh large arrays cost page faults on every block).

    One set per thread, kept between calls (:func:`scratch`): memory that numpy frees goes back
    to the system when it is large, so every call paid the first touch of its blocks again —
    on MNIST 3 vs 8 (6,940 rows, 336 RBF support vectors, one thread) ~3,000 page faults and
    ~6 ms of system time per ``predict`` of ~38 ms. An array above :data:`_SCRATCH_MAX_BYTES` is
    not kept. Nothing returned from an evaluation refers to these arrays."""

    def __init__(self):
        self.data: dict = {}

    def get(self, name: str, shape: tuple, dtype=np.float64) -> np.ndarray:
        size = math.prod(shape)  # (np.prod of a tuple: ~5 µs, dozens of times a call)
        key = (name, np.dtype(dtype))  # (one key whatever the dtype's spelling)
        buf = self.data.get(key)
        if buf is None or buf.size < size:
            buf = np.empty(size, dtype=dtype)
            if buf.nbytes <= _SCRATCH_MAX_BYTES:
                self.data[key] = buf
        return buf[:size].reshape(shape)


# A block is at most 128 positions × 8,192 rows (8 MB of float64 terms): kept; larger scratch
# (a caller's own chunk_size or block_size) is allocated per call.
_SCRATCH_MAX_BYTES = 16 * 2**20
_SCRATCH = threading.local()
_EVERY_SCRATCH: weakref.WeakSet = weakref.WeakSet()  # every thread's, for release_scratch
_EVERY_SCRATCH_LOCK = threading.Lock()


def scratch() -> _Buffers:
    """This thread's scratch arrays. Every thread that evaluates keeps one set (the caller's,
    and each of the evaluator's threads, :mod:`~attentive.evaluator.threads`): at most a few
    blocks' worth, ~25 MB per thread with 784 features, until :func:`release_scratch` or the
    thread's end."""
    bufs = getattr(_SCRATCH, "buffers", None)
    if bufs is None:
        bufs = _SCRATCH.buffers = _Buffers()
        with _EVERY_SCRATCH_LOCK:
            _EVERY_SCRATCH.add(bufs)
    return bufs


def release_scratch() -> None:
    """Drop the scratch arrays every thread keeps between evaluations (after a large batch, or
    before measuring an evaluation's memory). Safe at any time: an evaluation running in another
    thread keeps the arrays it holds, and allocates again what it asks for next."""
    with _EVERY_SCRATCH_LOCK:
        every = list(_EVERY_SCRATCH)
    for bufs in every:
        bufs.data.clear()
