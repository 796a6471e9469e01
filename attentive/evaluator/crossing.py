"""Where a walk stops: the one statement of SPEC §2's stopping rule, for every evaluation path.

A walk of ``n`` terms stops at the **first** position ``t < n`` where its statistic (``S_t``, or
``S_t + κ_t A_t`` for a rule on the running mass) is below the lower threshold or above the
upper one; it never stops after the last term; a position where both sides are crossed (only
possible for a boundary whose lower threshold exceeds its upper one) is a **lower** stop.

Every path finds crossings its own way and hands them here:

* a matrix of statistics, positions along one axis (:func:`first_crossings`): the reference
  (:func:`attentive.evaluation.apply_boundary`), tiny problems and each block of the blocked walk
  (with an error band: :func:`certain_crossings`);
* each side's first position found separately (:func:`combine_sides`): the calibration grid
  (:func:`attentive.grid.grid_outcomes`, a binary search per side) and sparse linear models
  (:mod:`attentive.evaluator.sources.sparse_linear`, a range-maximum query per side).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Crossings", "certain_crossings", "combine_sides", "first_crossings", "stops_of"]

LOWER, UPPER = -1, 1


@dataclass(frozen=True)
class Crossings:
    """The walks of a block that cross, where and on which side.

    Attributes
    ----------
    walks : ndarray of int (k,)
        Indices (columns of the block) of the walks that cross.
    first : ndarray of int (k,)
        The position (row of the block, 0-based) of each one's first crossing.
    side : ndarray of int8 (k,)
        −1 lower, +1 upper.
    sure : ndarray of bool (k,) or None
        With an error band: whether the crossing is certain (see :func:`certain_crossings`).
    """

    walks: np.ndarray
    first: np.ndarray
    side: np.ndarray
    sure: np.ndarray | None = None


def _sides(P, lower, upper, low_out=None, high_out=None):
    """Boolean arrays of lower and upper crossings (None for a side without thresholds)."""
    low = high = None
    if lower is not None:
        low = np.less(P, lower[:, None], out=low_out)
    if upper is not None:
        high = np.greater(P, upper[:, None], out=high_out)
    return low, high


def first_crossings(P: np.ndarray, lower, upper, *, scratch=None) -> Crossings:
    """First crossing of each walk in ``P`` (positions along axis 0, walks along axis 1).

    ``lower`` / ``upper``: thresholds per position (length ``P.shape[0]``; None: side unused). The
    positions given are all before the last term (the caller leaves the last one out). A NaN
    statistic (a walk already stopped) crosses nothing. ``scratch``: optional ``(low, high)``
    boolean arrays of ``P``'s shape to compare into.
    """
    low_out, high_out = scratch if scratch is not None else (None, None)
    low, high = _sides(P, lower, upper, low_out, high_out)
    if low is None and high is None:
        empty = np.zeros(0, dtype=np.int64)
        return Crossings(empty, empty, np.zeros(0, dtype=np.int8))
    low_first = None
    if high is None:
        crossed = low
    elif low is None:
        crossed = high
    else:
        crossed = np.logical_or(low, high, out=high if high_out is not None else None)
    walks = np.flatnonzero(crossed.any(axis=0))
    first = np.argmax(crossed[:, walks], axis=0)
    side = np.full(walks.size, UPPER, dtype=np.int8)
    if low is not None:
        low_first = low[first, walks]
        side[low_first] = LOWER  # the lower side wins a tie
    return Crossings(walks, first, side)


def certain_crossings(P: np.ndarray, lower, upper, band, *, scratch=None) -> Crossings:
    """:func:`first_crossings` of statistics known only to within a band of their true value.

    ``band`` bounds ``|P̂ − P|`` and broadcasts against ``P`` (per position ``(k, 1)``, per walk
    ``(w,)``, or per both). A walk's first *possible* crossing (beyond a threshold moved inwards
    by the band) is reported; it is ``sure`` when the statistic there is beyond the threshold by
    more than the band (every earlier position being short of both thresholds by more than the
    band, the true walk crosses there too) and, for an upper crossing, a lower one at the same
    position is impossible (the lower side wins ties). Walks that are not sure need an exact
    walk.
    """
    band = np.broadcast_to(np.asarray(band, dtype=np.float64), P.shape)
    low_out, high_out = scratch if scratch is not None else (None, None)
    low = high = None
    shifted = np.empty_like(P)
    if lower is not None:
        np.subtract(P, band, out=shifted)  # possible: P − band < lower
        low = np.less(shifted, lower[:, None], out=low_out)
    if upper is not None:
        np.add(P, band, out=shifted)  # possible: P + band > upper
        high = np.greater(shifted, upper[:, None], out=high_out)
    if low is None and high is None:
        empty = np.zeros(0, dtype=np.int64)
        return Crossings(empty, empty, np.zeros(0, dtype=np.int8), np.zeros(0, dtype=bool))
    crossed = low if high is None else high if low is None else np.logical_or(low, high)
    walks = np.flatnonzero(crossed.any(axis=0))
    first = np.argmax(crossed[:, walks], axis=0)
    value = P[first, walks]
    margin = band[first, walks]
    side = np.full(walks.size, UPPER, dtype=np.int8)
    sure = np.zeros(walks.size, dtype=bool)
    if lower is not None:
        np.less(value, lower[first] - margin, out=sure)
        side[sure] = LOWER
    if upper is not None:
        up = value > upper[first] + margin
        if low is not None:
            up &= ~low[first, walks]  # a possible lower crossing at the same position wins
        sure |= up
    return Crossings(walks, first, side, sure)


def stops_of(V: np.ndarray, lower, upper) -> tuple[np.ndarray, np.ndarray]:
    """Every walk's stop position (1-based ``t``; ``n`` if it never stops) and side (−1, +1, 0)
    from its whole statistic ``V`` (walks along axis 0, positions ``1..n`` along axis 1) and the
    thresholds for positions ``1..n`` (the last is never tested)."""
    m, n = V.shape
    t = np.full(m, n, dtype=np.int64)
    side = np.zeros(m, dtype=np.int8)
    if n <= 1:
        return t, side
    head = V[:, : n - 1].T  # positions along axis 0 (a view)
    lo = None if lower is None else np.asarray(lower, dtype=np.float64)[: n - 1]
    up = None if upper is None else np.asarray(upper, dtype=np.float64)[: n - 1]
    c = first_crossings(head, lo, up)
    t[c.walks] = c.first + 1
    side[c.walks] = c.side
    return t, side


def combine_sides(t_lower: np.ndarray, t_upper: np.ndarray, n: int):
    """Stop position and side from each side's first crossing found separately.

    ``t_lower``, ``t_upper``: 1-based first crossing positions per walk (``n`` or more: that side
    never crosses before the last term). Returns ``(t, side)``: the earlier of the two, the lower
    side winning a tie, ``(n, 0)`` for a walk that never stops."""
    t_lower = np.asarray(t_lower)
    t_upper = np.asarray(t_upper)
    t = np.minimum(np.minimum(t_lower, t_upper), n)
    stopped = t < n
    side = np.where(stopped, np.where(t_lower <= t_upper, LOWER, UPPER), 0).astype(np.int8)
    return t, side
