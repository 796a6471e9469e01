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

# Tiles of 2^19 values (4 MB in float64, 2 in float32): MNIST's products run faster on taller
# tiles (512 rows 12% faster than 103), and fewer, larger tiles cost less Python and per-tile
# work per value and share better between threads (synthetic RBF: 1.1× / 1.2-1.4× faster than
# 2^16 values on one / two threads, sigmoid and linear kernels 1.3-1.8×). Against 2^18, in
# time per call (one thread / two, medians of 5 rounds): MNIST pairs 0.97-0.99 / 0.96-1.03,
# 8 vs rest 0.96 / 0.92, behind a StandardScaler 0.95-0.99 / 0.93-0.94, synthetic 0.91 / 0.93,
# dense-40 0.89 / 0.94; 2^20 was mixed (1.05 on 2 vs 5 behind a StandardScaler).
FULL_TILE_ELEMENTS = 2**19
MIN_CHUNK = 64
_NONE = np.empty(0, dtype=np.int64)


def tile_totals(walk, plan, X, budget: int, precision: str, final: float | None):
    """``U_B`` of the rows of one tile by the first source that takes them, the tile's rows
    whose side of ``final`` its bound leaves unsure, and the source (their exact counterpart
    sums those again)."""
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
    if band is None or final is None:
        return U, _NONE, cls
    return U, np.flatnonzero(np.abs(U - final) <= band), cls


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
    """``U_B`` of every row of ``X`` (prepared), in tiles of about 2^19 values, on ``n_jobs``
    threads (one for sources whose products hold the GIL).

    The rows a tile's bound leaves unsure are summed again in double precision after every
    tile, all together: a few rows per tile (behind a StandardScaler, 1-7 % of MNIST's rows are
    far enough out to have no useful float32 bound) made each product of the exact source
    repack every support vector for a handful of rows (15 of 69 ms on 8 vs rest's 7,000 rows,
    898 support vectors, against 7 in one go)."""
    m = X.shape[0]
    out = np.empty(m)
    if m == 0:
        return out
    step = chunk_size or max(MIN_CHUNK, FULL_TILE_ELEMENTS // max(1, budget))
    single = getattr(source_for(walk, plan, X[:1], precision, full=True), "single_thread", False)
    jobs = n_jobs if m * budget >= PARALLEL_MIN_ELEMENTS and not single else 1
    unsure = []  # (exact source, rows of X): list.append is atomic between threads

    def task(lo, hi):
        def go():
            out[lo:hi], near, cls = tile_totals(walk, plan, X[lo:hi], budget, precision, final)
            if near.size:
                unsure.append((cls.exact, lo + near))

        return go

    run_tasks([task(lo, hi) for lo, hi in split_rows(m, step, jobs)], jobs)
    if not unsure:
        return out
    again = []
    for exact in {cls for cls, _ in unsure}:
        rows = np.concatenate([r for cls, r in unsure if cls is exact])
        rows.sort()

        def redo(lo, hi, exact=exact, rows=rows):
            def go():
                idx = rows[lo:hi]
                out[idx] = exact.tile_totals(walk, plan, X[idx], budget)[0]

            return go

        again += [redo(lo, hi) for lo, hi in split_rows(rows.size, step, jobs)]
    run_tasks(again, jobs if len(again) > 1 else 1)
    return out
