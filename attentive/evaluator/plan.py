"""What a walk needs for blocked evaluation, computed once per walk or per boundary: the walk plan
(weights, centring curve, support vectors in walk order), the thresholds on the uncentred sums
``U_t``, and the schedule of blocks of walk positions.

Centring never touches the terms: ``S_t = U_t − C_t`` with ``U_t = Σ_{k≤t} w_{π(k)} h_{π(k)}(x)``
and ``C_t = Σ_{k≤t} w_{π(k)} μ_{π(k)}``, so ``S_t < lower_t`` is tested as ``U_t < lower_t + C_t``
with the right-hand side computed once per boundary.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from attentive.boundaries import Boundary
from attentive.errors import InvalidParameterError
from attentive.terms import DOT_KERNELS
from attentive.walk import Walk

__all__ = [
    "PILOT_MIN",
    "BlockSchedule",
    "Thresholds",
    "WalkPlan",
    "block_schedule",
    "column_runs",
    "expected_remaining",
    "grid_scale",
    "pilot_rows",
    "survival_schedule",
    "thresholds",
    "walk_plan",
]

# Without a survival curve, blocks start small (a walk that stops early wastes the rest of its
# block) and double up to a cap.
FIRST_BLOCK = 16
MAX_BLOCK = 64
# With one (survival_schedule): blocks between these sizes, and up to the wide cap for products
# over many features (attentive.evaluator.dense.survival_max_block).
MIN_SURVIVAL_BLOCK = 4
MAX_SURVIVAL_BLOCK = 64
WIDE_SURVIVAL_BLOCK = 128
_CANDIDATE_EDGES = 256  # block edges the survival schedule chooses among
# The pilot: the first rows of a call, walked before the others (their results are kept), whose
# stops give the survival curve (and, for precision="auto", whether mixed precision pays).
# Calls below PILOT_MIN rows have no pilot.
PILOT_MIN = 256
PILOT_ROWS = 128


@dataclass(frozen=True)
class BlockSchedule:
    """Block boundaries over walk positions: block ``j`` covers positions ``[edges[j], edges[j+1])``."""

    edges: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.edges)


def block_schedule(n_terms: int, block_size: int | None = None) -> BlockSchedule:
    """Blocks of walk positions.

    ``block_size=None`` starts small (many walks stop early, and a stopped walk wastes the rest of
    its block) and doubles up to a cap; an integer gives equal blocks.
    """
    if block_size is not None:
        if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
            raise InvalidParameterError(
                f"block_size must be a positive integer, got {block_size!r}."
            )
        if block_size < 1:
            raise InvalidParameterError(f"block_size must be ≥ 1, got {block_size}.")
        edges = np.arange(0, n_terms, int(block_size))
    else:
        sizes, size, total = [], FIRST_BLOCK, 0
        while total < n_terms:
            sizes.append(size)
            total += size
            size = min(2 * size, MAX_BLOCK)
        edges = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes else np.zeros(0, int)
    edges = np.append(edges, n_terms).astype(np.int64)
    return BlockSchedule(edges=edges)


def expected_remaining(stops: np.ndarray | None, n_terms: int, positions) -> np.ndarray:
    """For a walk still active at each of ``positions`` (0-based), the expected number of
    positions it has left, ``E[stop − a | stop > a]`` over the sample ``stops`` (1-based; ``n``
    for walks that never stop); without a sample (or none left), ``n − a``."""
    a = np.asarray(positions, dtype=np.int64)
    n = int(n_terms)
    if stops is None or np.size(stops) == 0:
        return (n - a).astype(np.float64)
    s = np.sort(np.clip(np.asarray(stops, dtype=np.int64), 0, n))
    tail = np.concatenate([np.cumsum(s[::-1])[::-1], [0]])  # tail[i] = Σ s[i:]
    first = np.searchsorted(s, a, side="right")  # first stop > a
    count = s.size - first
    out = (n - a).astype(np.float64)
    some = count > 0
    out[some] = tail[first[some]] / count[some] - a[some]
    return out


def pilot_rows(m: int) -> int:
    """Rows of the pilot of a call of ``m`` rows (0: none)."""
    return 0 if m < PILOT_MIN else max(32, min(PILOT_ROWS, m // 8))


def survival_schedule(
    stops: np.ndarray,
    n_terms: int,
    row_cost: float,
    *,
    min_block: int = MIN_SURVIVAL_BLOCK,
    max_block: int = MAX_SURVIVAL_BLOCK,
) -> BlockSchedule:
    """Blocks that minimise the predicted cost of walking examples whose stops are like ``stops``.

    ``stops`` are the stop positions (1-based; ``n`` for walks that never stop) of a sample of
    walks, so ``s(a)`` = share of them still walking at position ``a`` (0-based). A block
    ``[a, b)`` computes every term of the walks active at ``a`` and pays ``row_cost`` per such walk
    (gathering its row, reading it once in the product), all in units of one term's cost:
    ``s(a) (row_cost + b − a)``. The cheapest partition into blocks of ``min_block`` to
    ``max_block`` positions is found by dynamic programming over at most 256 candidate edges.
    Where the sample says nobody walks any more, a floor of half a walk keeps blocks bounded.
    """
    n = int(n_terms)
    stops = np.asarray(stops, dtype=np.int64)
    if n == 0 or stops.size == 0:
        return block_schedule(n)
    step = max(int(min_block), -(-n // _CANDIDATE_EDGES))
    cand = np.unique(np.append(np.arange(0, n, step), n))
    counts = np.bincount(np.clip(stops, 0, n), minlength=n + 1)
    # s(a) = #(stop > a) / size
    alive = (stops.size - np.cumsum(counts))[cand] / stops.size
    alive = np.maximum(alive, 0.5 / stops.size)
    K = cand.size
    best = np.full(K, np.inf)
    best[0] = 0.0
    back = np.zeros(K, dtype=np.int64)
    for j in range(1, K):
        a = np.arange(j)
        size = cand[j] - cand[a]
        ok = size <= max_block
        ok[j - 1] = True  # always reachable from the previous candidate
        cost = np.where(ok, best[a] + alive[a] * (row_cost + size), np.inf)
        back[j] = int(np.argmin(cost))
        best[j] = cost[back[j]]
    edges = [K - 1]
    while edges[-1] > 0:
        edges.append(back[edges[-1]])
    return BlockSchedule(edges=cand[edges[::-1]].astype(np.int64))


@dataclass
class WalkPlan:
    """What a walk needs for blocked evaluation, computed once per walk."""

    ordered_weights: np.ndarray
    centring_sums: np.ndarray  # C_t for t = 1..n
    weight_signs: np.ndarray  # sign of w_{π(k)}: whether a weighted term is added or subtracted
    order: np.ndarray
    rbf_gamma: float | None = None
    sv_scaled: np.ndarray | None = None  # (n, d): 2γ y, walk order (double-precision walk)
    sv_offset: np.ndarray | None = None  # (n,): −γ|y|² + log|w|
    sv_scaled32: np.ndarray | None = None  # sv_scaled in float32 (float32-product walk)
    rbf_centre: np.ndarray | None = None  # subtracted from examples and support vectors (mixed)
    sv_augmented: np.ndarray | None = None  # (n, d + 2), walk order, centred, log|w| folded in
    sv_norms: np.ndarray | None = None  # |y − c| of each support vector, walk order
    sv_raw_norm: float = 0.0  # max |y| (uncentred), for the float64 rounding allowance
    # Dense RBF and dot kernels: feature columns where some support vector is non-zero (None:
    # all of them). Elsewhere every y is 0 (and so is the centre), so x · y and (x − c) · (y − c)
    # need only these columns, while |x|² and |x − c|² need all; the *_cols arrays are
    # restricted to them.
    sv_columns: np.ndarray | None = None
    sv_column_runs: tuple = ()  # (first, stop, offset): column runs, for copies by slices
    sv_scaled_cols: np.ndarray | None = None  # sv_scaled[:, sv_columns]
    sv_scaled32_cols: np.ndarray | None = None  # the same in float32
    sv_augmented_cols: np.ndarray | None = None  # sv_augmented on sv_columns, then the 2 extras
    # Support vectors on a grid (every value k / s with integer k, e.g. 8-bit pixels / 255): the
    # integers l = s y on sv_columns in float32, their largest norm, and s. See dense.RBFTerms
    # and dense.DotKernelTerms.
    sv_grid_scale: float | None = None
    sv_grid32: np.ndarray | None = None
    sv_grid_norm: float = 0.0
    inverse_order: np.ndarray | None = None  # walk position of each feature (linear models)
    # Linear, polynomial and sigmoid kernels with dense support vectors: the support vectors in
    # walk order (dense.DotKernelTerms), so that a block is one product without a gather.
    sv_ordered: np.ndarray | None = None
    sv_ordered_cols: np.ndarray | None = None  # sv_ordered[:, sv_columns] (or sv_ordered itself)
    # Kernel models with sparse support vectors: the support vectors in walk order as CSR
    # (float64, sorted indices), and for RBF kernels −γ|y|² + log|w| of each (see
    # attentive.evaluator.sparse.sparse_kernel_block).
    sv_csr: sp.csr_matrix | None = None
    sv_csr_offset: np.ndarray | None = None
    sv_csr_t: sp.csr_matrix | None = None  # sv_csr transposed (full evaluation), when first used
    boundaries: dict = field(default_factory=dict)  # per-boundary thresholds on U
    # Tiny problems: n × n matrices whose product with a block of (unsigned or unweighted)
    # terms gives every prefix sum (attentive.evaluator.dense.walk_small), by kind of terms.
    prefix_matrices: dict = field(default_factory=dict)
    offset: float = 0.0  # c = b + Σ w μ (walk.offset, computed once)

    @property
    def n_terms(self) -> int:
        return int(self.ordered_weights.size)


_PLANS: dict[int, tuple[weakref.ref, WalkPlan]] = {}


def walk_plan(walk: Walk) -> WalkPlan:
    """The cached plan of ``walk`` (dropped when the walk is garbage-collected)."""
    key = id(walk)
    entry = _PLANS.get(key)
    if entry is not None and entry[0]() is walk:
        return entry[1]
    w = np.asarray(walk.ordered_weights, dtype=np.float64)
    plan = WalkPlan(
        ordered_weights=w,
        centring_sums=np.cumsum(w * np.asarray(walk.ordered_mu, dtype=np.float64)),
        weight_signs=np.where(w < 0, -1.0, 1.0),
        order=np.asarray(walk.order),
        offset=walk.offset,
    )
    terms = walk.terms
    sv = terms.support_vectors
    if terms.kind == "kernel" and terms.kernel == "rbf" and sv is not None and not sp.issparse(sv):
        gamma = float(terms.kernel_params["gamma"])
        Y = np.asarray(sv, dtype=np.float64)[walk.order]
        plan.rbf_gamma = gamma
        # |w| exp(a) = exp(a + log|w|): the weight costs nothing per example.
        with np.errstate(divide="ignore"):
            log_w = np.log(np.abs(w))
        raw2 = np.einsum("ij,ij->i", Y, Y)
        plan.sv_scaled = np.ascontiguousarray(2.0 * gamma * Y)
        plan.sv_offset = -gamma * raw2 + log_w
        plan.sv_scaled32 = plan.sv_scaled.astype(np.float32)
        plan.sv_raw_norm = float(np.sqrt(raw2.max(initial=0.0)))
        # The kernel depends on x − y only: centring both keeps the augmented products small,
        # which is what their rounding error (the mixed walk's band) is proportional to.
        plan.rbf_centre = Y.mean(axis=0) if len(Y) else np.zeros(Y.shape[1])
        Y = Y - plan.rbf_centre
        norms2 = np.einsum("ij,ij->i", Y, Y)
        plan.sv_norms = np.sqrt(norms2)
        plan.sv_augmented = np.ascontiguousarray(
            np.column_stack([Y, -gamma * norms2 + log_w, np.ones(len(Y))])
        )
        d = Y.shape[1]
        cols = _columns_and_grid(plan, np.asarray(sv, dtype=np.float64)[walk.order])
        keep = np.append(cols, [d, d + 1])
        plan.sv_augmented_cols = np.ascontiguousarray(plan.sv_augmented[:, keep])
        plan.sv_scaled_cols = np.ascontiguousarray(plan.sv_scaled[:, cols])
        plan.sv_scaled32_cols = plan.sv_scaled_cols.astype(np.float32)
    elif terms.kind == "kernel" and terms.kernel in DOT_KERNELS and not sp.issparse(sv):
        Y = np.ascontiguousarray(np.asarray(sv, dtype=np.float64)[walk.order])
        plan.sv_ordered = Y
        cols = _columns_and_grid(plan, Y)
        plan.sv_ordered_cols = Y if cols.size == Y.shape[1] else np.ascontiguousarray(Y[:, cols])
    elif terms.kind == "kernel" and sp.issparse(sv):
        Y = sp.csr_matrix(sv, dtype=np.float64)[walk.order]
        Y.sort_indices()
        plan.sv_csr = Y
        if terms.kernel == "rbf":
            gamma = float(terms.kernel_params["gamma"])
            with np.errstate(divide="ignore"):
                log_w = np.log(np.abs(w))
            plan.sv_csr_offset = -gamma * np.asarray(Y.multiply(Y).sum(axis=1)).ravel() + log_w
    if terms.kind == "linear":
        plan.inverse_order = walk.positions
    _PLANS[key] = (weakref.ref(walk, lambda _ref, _key=key: _PLANS.pop(_key, None)), plan)
    return plan


GRID_LIMIT = 2.0**24  # integers up to this are exact in float32, and so are sums of them


def _columns_and_grid(plan: WalkPlan, Y: np.ndarray) -> np.ndarray:
    """Set the plan's columns where some support vector (``Y``, dense, walk order) is non-zero
    (``sv_columns`` and its runs; left None when that is every column) and, if the support
    vectors lie on an integer grid there, its scale, their integers in float32 and the largest
    norm of those. Returns the columns (every column when none is left out)."""
    d = Y.shape[1]
    cols = np.flatnonzero(np.any(Y != 0, axis=0))
    if cols.size < d:
        plan.sv_columns = cols
        plan.sv_column_runs = column_runs(cols)
    else:
        cols = np.arange(d)
    Y_cols = Y[:, cols]
    scale = grid_scale(Y_cols)
    if scale is not None:
        L = np.rint(Y_cols * scale)
        norm = float(np.sqrt(np.einsum("ij,ij->i", L, L).max(initial=0.0)))
        if norm < GRID_LIMIT:
            plan.sv_grid_scale = scale
            plan.sv_grid32 = np.ascontiguousarray(L, dtype=np.float32)
            plan.sv_grid_norm = norm
    return cols


def grid_scale(Y: np.ndarray) -> float | None:
    """A scale ``s`` with every ``s · y`` an integer of magnitude below 2^24, computed exactly in
    floating point (``s`` from the smallest non-zero magnitude, 1, or 255); None if there is none."""
    mags = np.abs(Y[Y != 0])
    if mags.size == 0 or not np.all(np.isfinite(mags)):
        return None
    smallest = float(mags.min())
    for s in dict.fromkeys((float(np.rint(1.0 / smallest)), 1.0, 255.0)):
        if not 1.0 <= s < GRID_LIMIT:
            continue
        t = mags * s
        if float(t.max()) < GRID_LIMIT and np.array_equal(t, np.rint(t)):
            return s
    return None


def column_runs(cols: np.ndarray) -> tuple:
    """Sorted column indices as runs ``(first, stop, offset)``: ``X[:, cols]`` is the runs'
    slices ``X[:, first:stop]`` side by side, the run starting at column ``offset`` of the copy."""
    cols = np.asarray(cols, dtype=np.int64)
    if cols.size == 0:
        return ()
    cut = np.flatnonzero(np.diff(cols) != 1) + 1
    starts = np.concatenate([[0], cut])
    stops = np.concatenate([cut, [cols.size]])
    return tuple(
        (int(cols[a]), int(cols[b - 1]) + 1, int(a)) for a, b in zip(starts, stops, strict=True)
    )


@dataclass
class Thresholds:
    """A boundary's thresholds on the uncentred sums ``U_t`` for positions ``t < n``."""

    lower: np.ndarray | None  # None: side unused
    upper: np.ndarray | None
    # κ_t for t < n of a boundary with ``mass``: the thresholds apply to U_t + κ_t A_t, with A_t
    # the running mass Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x) (None: to U_t).
    mass: np.ndarray | None = None
    tables: dict = field(default_factory=dict)  # sparse tables of g (sparse linear walk)
    stops: np.ndarray | None = None  # stop positions of a pilot's walks (survival schedule)
    schedules: dict = field(default_factory=dict)  # survival schedules by (row cost, longest block)


def thresholds(plan: WalkPlan, boundary: Boundary) -> Thresholds:
    """Cached per (walk, boundary): ``lower_t + C_t`` and ``upper_t + C_t`` for ``t < n`` (and
    the boundary's ``mass`` coefficients: ``V_t = S_t + κ_t A_t < lower_t`` is tested as
    ``U_t + κ_t A_t < lower_t + C_t``)."""
    key = id(boundary)
    entry = plan.boundaries.get(key)
    if entry is not None and entry[0]() is boundary:
        return entry[1]
    n = plan.n_terms
    C = plan.centring_sums[: n - 1]
    lower = np.asarray(boundary.lower[: n - 1], dtype=np.float64) + C
    upper = np.asarray(boundary.upper[: n - 1], dtype=np.float64) + C
    use_lower = n > 1 and bool(np.any(lower > -np.inf))
    use_upper = n > 1 and bool(np.any(upper < np.inf))
    out = Thresholds(
        lower=lower if use_lower else None,
        upper=upper if use_upper else None,
        mass=(
            np.asarray(boundary.mass[: n - 1], dtype=np.float64)
            if boundary.uses_mass and (use_lower or use_upper)
            else None
        ),
    )
    try:
        ref = weakref.ref(boundary, lambda _ref, _key=key: plan.boundaries.pop(_key, None))
    except TypeError:  # pragma: no cover - a boundary type without weak references
        return out
    plan.boundaries[key] = (ref, out)
    return out
