"""Full and budgeted evaluation: ``U_B`` of every row, in tiles, by the rows' term source.

No boundary is tested: each tile is one block of ``B`` positions summed by the source
(:meth:`~attentive.evaluator.sources.base.TermSource.tile_totals`). A certified source's sums
come with a bound on their error; the rows whose side of ``final`` (the threshold a label
compares ``U_B`` with) that bound leaves unsure are summed again by its exact counterpart, so
labels are those of double precision.
"""

from __future__ import annotations

import numpy as np

from attentive.evaluator.sources import NotUsable, source_for
from attentive.evaluator.threads import PARALLEL_MIN_ELEMENTS, run_tasks, split_rows

__all__ = ["FULL_TILE_ELEMENTS", "MIN_CHUNK", "totals"]

# Tiles of 2^18 values (2 MB): MNIST's products run faster on taller tiles (512 rows 12% faster
# than 103), and with few features fewer, larger tiles cost less Python per value and share
# better between threads (synthetic RBF: 1.1× / 1.2-1.4× faster than 2^16 values on one / two
# threads, sigmoid and linear kernels 1.3-1.8×).
FULL_TILE_ELEMENTS = 2**18
MIN_CHUNK = 64


def tile_totals(walk, plan, X, budget: int, precision: str, final: float | None):
    """``U_B`` of the rows of one tile by the first source that takes them."""
    cls = source_for(walk, plan, X, precision, full=True)
    while True:
        try:
            U, band = cls.tile_totals(walk, plan, X, budget, final)
        except NotUsable:
            cls = source_for(walk, plan, X, precision, after=cls, full=True)
            continue
        if precision == "double" and band is not None:  # a band is not double precision
            cls = source_for(walk, plan, X, precision, after=cls, full=True)
            continue
        break
    if band is not None and final is not None:
        near = np.flatnonzero(np.abs(U - final) <= band)
        if near.size:
            U[near] = cls.exact.tile_totals(walk, plan, X[near], budget)[0]
    return U


def totals(
    walk,
    plan,
    X,
    budget: int,
    precision: str,
    final: float | None,
    chunk_size: int | None,
    n_jobs: int,
) -> np.ndarray:
    """``U_B`` of every row of ``X`` (prepared), in tiles of about 2^18 values, on ``n_jobs``
    threads (one for sources whose products hold the GIL)."""
    m = X.shape[0]
    out = np.empty(m)
    if m == 0:
        return out
    step = chunk_size or max(MIN_CHUNK, FULL_TILE_ELEMENTS // max(1, budget))
    single = getattr(source_for(walk, plan, X[:1], precision, full=True), "single_thread", False)
    jobs = n_jobs if m * budget >= PARALLEL_MIN_ELEMENTS and not single else 1

    def task(lo, hi):
        def go():
            out[lo:hi] = tile_totals(walk, plan, X[lo:hi], budget, precision, final)

        return go

    run_tasks([task(lo, hi) for lo, hi in split_rows(m, step, jobs)], jobs)
    return out
