"""Sparse input: linear models' stops without looping over positions, and kernel models' blocks
of terms as one sparse product.

Kernel models with sparse support vectors (:func:`sparse_kernel_block`): the rows are held
transposed (CSR of ``Xᵀ``), so that a block is Gustavson's product of the block's support vectors
(CSR, walk order) with them, written straight into the dense block (scikit-learn's
``sparse_matmul_to_dense``, from version 1.8; before it these models take the generic path). Each
support-vector non-zero is read once per block and multiplies the rows that share its feature, so
the product's cost follows the terms computed, with nothing paid per block and row but the
block's values. Holding a row costs its transposition (at the start and at each compaction).
Full and budgeted evaluation take the other orientation (:func:`sparse_kernel_sums`). The
product holds the GIL: these paths run on one thread.

Sparse linear models (a term is a feature, CSR input):

A row's ``U_t`` changes only at its non-zeros, so between two consecutive non-zeros (walk
positions ``[p, q)``) ``U`` is a constant ``v`` and the first lower crossing is the first ``t`` in
``[p, q)`` with ``g_t = lower_t + C_t > v`` (upper: ``−upper_t − C_t > −v``). Whether an interval
holds one is a range-maximum query on a sparse table of ``g`` (log n levels, built once per
boundary): two look-ups per interval, vectorised over all (row, interval) pairs. Where exactly is
a binary descent over the table's levels, run only for each row's first hitting interval. Columns
are put in walk order by two counting sorts (scipy's CSR→CSC→CSR); per-row sums are one
``cumsum``. Work: ``O(nnz + m log n)`` numpy operations.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.plan import Thresholds, WalkPlan
from attentive.terms import TermDecomposition, check_width, dot_kernel, refuse_non_finite

try:  # scikit-learn ≥ 1.8: a sparse × sparse product written into a dense array
    from sklearn.utils.sparsefuncs import sparse_matmul_to_dense
except ImportError:  # pragma: no cover - older scikit-learn: the generic path
    sparse_matmul_to_dense = None

__all__ = [
    "first_above",
    "sparse_kernel_block",
    "sparse_kernel_rows",
    "sparse_kernel_sums",
    "sparse_kernel_walks",
    "sparse_linear_chunk",
    "sparse_table",
    "sparse_transposed_svs",
    "walk_order_rows",
]


def sparse_kernel_walks(plan: WalkPlan, Xp) -> bool:
    """Whether ``Xp`` is walked by :func:`sparse_kernel_block`: sparse rows, a kernel model
    with sparse support vectors, and a scikit-learn that has the product."""
    return sparse_matmul_to_dense is not None and plan.sv_csr is not None and sp.issparse(Xp)


def sparse_kernel_rows(plan: WalkPlan, terms: TermDecomposition, X, transpose: bool = True):
    """Rows ``X`` as :func:`sparse_kernel_block` reads them: CSR in float64, ``Xᵀ`` in CSR (None
    unless ``transpose``), and for an RBF kernel ``−γ|x|²`` of each row (else None). Refuses
    rows of another width (``ValueError``) and NaN or infinite values
    (:class:`attentive.errors.NonFiniteInput`), as scikit-learn's kernels do."""
    X = sp.csr_matrix(X, dtype=np.float64)
    check_width(X, plan.sv_csr.shape[1])
    refuse_non_finite(X.data)
    row = None
    if plan.sv_csr_offset is not None:
        row = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        row *= -float(terms.kernel_params["gamma"])
    return X, X.T.tocsr() if transpose else None, row


def _rbf_from_dots(H: np.ndarray, terms: TermDecomposition, sv_part, row_part) -> None:
    """``|w| K(x, y) = exp(2γ x · y + (−γ|y|² + log|w|) − γ|x|²)`` in place from the dot
    products ``H``, the support vectors' and the rows' parts shaped to broadcast against it."""
    H *= 2.0 * float(terms.kernel_params["gamma"])
    H += sv_part
    H += row_part
    np.exp(H, out=H)


def sparse_transposed_svs(plan: WalkPlan, budget: int):
    """The first ``budget`` support vectors (walk order) transposed, in CSR: what
    :func:`sparse_kernel_sums` multiplies the rows with (every one of them kept in the plan)."""
    if budget < plan.n_terms:
        return plan.sv_csr[:budget].T.tocsr()
    if plan.sv_csr_t is None:
        plan.sv_csr_t = plan.sv_csr.T.tocsr()
    return plan.sv_csr_t


def sparse_kernel_sums(plan: WalkPlan, terms: TermDecomposition, X, YT) -> np.ndarray:
    """``U_B(x) = Σ_{k≤B} w_{π(k)} h_{π(k)}(x)`` for CSR rows ``X`` (full and budgeted
    evaluation): one product of the rows with the first ``B`` support vectors transposed
    (``YT``, :func:`sparse_transposed_svs`), then the kernel and one product with the weights
    (RBF: with their signs, ``log|w|`` folded in).

    This orientation reads each row non-zero once and multiplies the support vectors that share
    its feature, so its cost does not depend on how many rows a tile holds (synthetic-sparse,
    1,620 RBF support vectors: 8.6 ms for 2,000 rows in tiles of 161, 647 or 2,000 rows); the
    walk's orientation (:func:`sparse_kernel_block`) reads every support vector once per tile
    and took 22 ms in tiles of 161 rows, 10 in tiles of 1,294."""
    budget = YT.shape[1]
    X, _, row = sparse_kernel_rows(plan, terms, X, transpose=False)
    H = sparse_matmul_to_dense(X, YT, out=np.empty((X.shape[0], budget)))
    if plan.sv_csr_offset is not None:
        _rbf_from_dots(H, terms, plan.sv_csr_offset[:budget], row[:, None])
        return H @ plan.weight_signs[:budget]
    dot_kernel(H, terms.kernel, terms.kernel_params)
    return H @ plan.ordered_weights[:budget]


def sparse_kernel_block(
    plan: WalkPlan,
    terms: TermDecomposition,
    XT,
    row,
    start: int,
    stop: int,
    out: np.ndarray,
) -> np.ndarray:
    """Terms at walk positions ``[start, stop)`` of the rows in ``XT`` / ``row``
    (:func:`sparse_kernel_rows`), written into ``out`` (stop − start, rows).

    RBF kernels: ``|w| K(x, y)``, magnitudes whose signs are ``plan.weight_signs``. Other
    kernels: ``w k(x · y)``."""
    sparse_matmul_to_dense(plan.sv_csr[start:stop], XT, out=out)
    if plan.sv_csr_offset is not None:
        _rbf_from_dots(out, terms, plan.sv_csr_offset[start:stop, None], row)
    else:
        dot_kernel(out, terms.kernel, terms.kernel_params)
        out *= plan.ordered_weights[start:stop, None]
    return out


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


def walk_order_rows(X, plan: WalkPlan):
    """CSR rows with column indices replaced by walk positions, sorted within each row."""
    positions = plan.inverse_order[X.indices].astype(X.indices.dtype, copy=False)
    Y = sp.csr_matrix((X.data, positions, X.indptr), shape=X.shape)
    # Two counting sorts in scipy's C code (to columns and back) leave each row's positions
    # sorted: O(nnz + n), no comparison sort.
    return Y.tocsc().tocsr()


def sparse_linear_chunk(X, plan: WalkPlan, thr: Thresholds, n: int):
    """Stop positions, sides and ``U_t`` there of a chunk of CSR rows under a linear model; and
    ``U_n``."""
    Y = walk_order_rows(X, plan)
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
    level = (np.frexp(length.astype(np.float64))[1] - 1).astype(np.int64)  # floor(log2), exact
    far = b - (np.int64(1) << level)

    sides = []
    for g_key, values in (("lower", v), ("upper", -v)):
        g = getattr(thr, g_key)
        if g is None:
            sides.append(None)
            continue
        T = thr.tables.get(g_key)
        if T is None:
            T = thr.tables[g_key] = sparse_table(g if g_key == "lower" else -g)
        cols = T.shape[1]
        flat = T.ravel()
        window = np.maximum(flat[level * cols + a], flat[level * cols + np.maximum(far, 0)])
        sides.append((T, values, valid & (window > values)))
    hits = [s[2] for s in sides if s is not None]
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
        best = np.full(idx.size, np.iinfo(np.int64).max)
        best_side = np.zeros(idx.size, dtype=np.int8)
        for side_value, entry in ((-1, sides[0]), (1, sides[1])):
            if entry is None:
                continue
            T, values, _hit = entry
            found = first_above(T, a[idx], b[idx], values[idx])
            # Lower first: at equal positions the lower side wins, as in the reference.
            better = (found < b[idx]) & (found < best)
            best[better] = found[better]
            best_side[better] = side_value
        stop_at[rows] = best + 1
        stop_side[rows] = best_side
        stop_u[rows] = v[idx]  # U is constant over the interval that holds the stop
    return stop_at, stop_side, stop_u, U_n
