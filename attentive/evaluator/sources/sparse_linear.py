"""Linear models on sparse rows (a term is a feature, CSR input): stops without looping over
positions.

A row's ``U_t`` changes only at its non-zeros, so between two consecutive non-zeros (walk
positions ``[p, q)``) ``U`` is a constant ``v`` and the first lower crossing is the first ``t`` in
``[p, q)`` with ``g_t = lower_t + C_t > v`` (upper: ``−upper_t − C_t > −v``). Whether an interval
holds one is a range-maximum query on a sparse table of ``g`` (log n levels, built once per
boundary): two look-ups per interval, vectorised over all (row, interval) pairs. Where exactly is
a binary descent over the table's levels, run only for each row's first hitting interval; the two
sides' first positions there are combined by :func:`attentive.evaluator.crossing.combine_sides`.
Columns are put in walk order by two counting sorts (scipy's CSR→CSC→CSR); per-row sums are one
``cumsum``. Work: ``O(nnz + m log n)`` numpy operations.

Full evaluation is one sparse product, compiled and ``O(nnz)``, which no walk can beat: putting
each row's non-zeros in walk order alone costs more (docs/speed.md). So the evaluator walks these
only when asked to (``path="walk"``).
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.crossing import combine_sides
from attentive.evaluator.sources import register_source
from attentive.evaluator.sources.base import TermSource
from attentive.evaluator.sources.linear import linear_totals

__all__ = ["SparseLinearSource", "first_above", "sparse_table", "walk_order_rows"]


def sparse_table(g: np.ndarray) -> np.ndarray:
    """``T[k, i] = max(g[i : i + 2^k])`` for windows inside ``g`` (other entries: −inf)."""
    L = g.size
    levels = max(1, int(L).bit_length())
    T = np.full((levels, L), -np.inf)
    T[0] = g
    for k in range(1, levels):
        half = 1 << (k - 1)
        width = L - (1 << k) + 1
        if width <= 0:
            break
        np.maximum(T[k - 1, :width], T[k - 1, half : half + width], out=T[k, :width])
    return T


def first_above(T: np.ndarray, a: np.ndarray, b: np.ndarray, v: np.ndarray) -> np.ndarray:
    """For each query: the first ``i`` in ``[a, b)`` with ``g_i > v``, or ``b`` if there is none.

    Binary descent over the table's levels: jump a whole window when its maximum is ``≤ v``.
    """
    pos = a.copy()
    last = T.shape[1] - 1
    # No jump can be longer than the longest query interval.
    top = min(T.shape[0], int((b - a).max(initial=0)).bit_length())
    for k in range(top - 1, -1, -1):
        step = 1 << k
        jump = (pos + step <= b) & (T[k, np.minimum(pos, last)] <= v)
        pos[jump] += step
    return pos


def walk_order_rows(X, order_positions: np.ndarray):
    """CSR rows with column indices replaced by walk positions, sorted within each row."""
    positions = order_positions[X.indices].astype(X.indices.dtype, copy=False)
    Y = sp.csr_matrix((X.data, positions, X.indptr), shape=X.shape)
    # Two counting sorts in scipy's C code (to columns and back) leave each row's positions
    # sorted: O(nnz + n), no comparison sort.
    return Y.tocsc().tocsr()


_TABLES: dict = {}  # id(thresholds) -> (weakref, {side: table})


def _tables(thr) -> dict:
    entry = _TABLES.get(id(thr))
    if entry is not None and entry[0]() is thr:
        return entry[1]
    key = id(thr)
    tables = {}
    try:
        _TABLES[key] = (weakref.ref(thr, lambda _r, _k=key: _TABLES.pop(_k, None)), tables)
    except TypeError:  # pragma: no cover
        pass
    return tables


@register_source
class SparseLinearSource(TermSource):
    """A linear model on CSR rows, walked by range-maximum queries (module docstring)."""

    kind = "sparse-linear"
    walks_itself = True
    walking_pays = False  # full evaluation is one sparse product

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return walk.terms.kind == "linear" and sp.issparse(X)

    def block(self, start, stop, out):
        out[:] = self.X[:, self.plan.order[start:stop]].T.toarray()
        out *= self.plan.ordered_weights[start:stop, None]

    @classmethod
    def tile_totals(cls, walk, plan, X, budget, final=None):
        return linear_totals(walk, plan, X, budget), None

    def walk_chunk(self, thr):
        """Stop positions (1-based; ``n`` if none), sides, ``U_t`` at the stops and ``U_n`` of
        the rows held; None for a rule on the running mass (walked by blocks)."""
        if thr.mass is not None:
            return None
        plan = self.plan
        n = plan.n_terms
        Y = walk_order_rows(self.X, plan.arrays("positions", lambda: self.walk.positions))
        m = Y.shape[0]
        indptr = Y.indptr.astype(np.int64)
        positions = Y.indices.astype(np.int64)
        counts = np.diff(indptr)
        nnz = positions.size
        row_of = np.repeat(np.arange(m), counts)
        cs = np.cumsum(Y.data * plan.ordered_weights[positions])
        base = np.zeros(m)
        nonempty = counts > 0
        starts_nz = indptr[:-1][nonempty]
        base[nonempty] = np.where(starts_nz > 0, cs[np.maximum(starts_nz - 1, 0)], 0.0)
        U_n = np.zeros(m)
        U_n[nonempty] = cs[indptr[1:][nonempty] - 1] - base[nonempty]

        # Intervals of constant U: one before each row's first non-zero, then one per non-zero.
        lead = indptr[:-1] + np.arange(m)
        slot = np.arange(nnz) + row_of + 1
        a = np.zeros(nnz + m, dtype=np.int64)
        a[slot] = positions
        v = np.zeros(nnz + m)
        v[slot] = cs - base[row_of]
        b = np.empty_like(a)
        b[:-1] = a[1:]
        b[lead[1:] - 1] = n - 1
        b[-1:] = n - 1
        np.minimum(b, n - 1, out=b)
        valid = a < b
        np.minimum(a, n - 2, out=a)  # empty intervals at the last position: keep look-ups in range
        length = np.where(valid, b - a, 1)
        level = (np.frexp(length.astype(np.float64))[1] - 1).astype(np.int64)  # floor(log2)
        far = b - (np.int64(1) << level)

        tables = _tables(thr)
        sides = {}
        for name, g, values in (("lower", thr.lower, v), ("upper", thr.upper, -v)):
            if g is None:
                continue
            T = tables.get(name)
            if T is None:
                T = tables[name] = sparse_table(g if name == "lower" else -g)
            cols = T.shape[1]
            flat = T.ravel()
            window = np.maximum(flat[level * cols + a], flat[level * cols + np.maximum(far, 0)])
            sides[name] = (T, values, valid & (window > values))
        hits = [hit for _T, _v, hit in sides.values()]
        any_hit = hits[0] if len(hits) == 1 else hits[0] | hits[1]
        idx = np.flatnonzero(any_hit)
        stop_at = np.full(m, n, dtype=np.int64)
        stop_side = np.zeros(m, dtype=np.int8)
        stop_u = np.full(m, np.nan)
        if idx.size:
            rows = np.repeat(np.arange(m), counts + 1)[idx]
            first = np.ones(idx.size, dtype=bool)
            first[1:] = rows[1:] != rows[:-1]
            idx, rows = idx[first], rows[first]
            found = {}
            for name, (T, values, _hit) in sides.items():
                # 1-based first crossing in the row's first hitting interval (n: none there).
                at = first_above(T, a[idx], b[idx], values[idx])
                found[name] = np.where(at < b[idx], at + 1, n)
            none = np.full(idx.size, n, dtype=np.int64)
            t, side = combine_sides(found.get("lower", none), found.get("upper", none), n)
            stop_at[rows] = t
            stop_side[rows] = side
            stop_u[rows] = v[idx]  # U is constant over the interval that holds the stop
        return stop_at, stop_side, stop_u, U_n
