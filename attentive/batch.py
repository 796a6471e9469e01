"""Blocked evaluation of walks: compute terms only for the examples that are still walking.

:func:`attentive.evaluation.apply_boundary` needs every partial score ``S_t`` of every example, so
it costs as much as a full evaluation. :func:`evaluate_blocked` gives the same answer while
computing, block of walk positions after block, the terms of the examples that have not stopped
yet; an example that crosses the boundary is dropped before the next block.

Centring never touches the terms: ``S_t = U_t − C_t`` with the uncentred running sum
``U_t = Σ_{k≤t} w_{π(k)} h_{π(k)}(x)`` and the fixed curve ``C_t = Σ_{k≤t} w_{π(k)} μ_{π(k)}``, so
``S_t < lower_t`` is tested as ``U_t < lower_t + C_t`` with the right-hand side computed once per
boundary.

**Kernel models and dense data** walk chunks of examples over blocks of positions. For the ``m``
examples still active in a block:

1. ``H`` (block, m): the weighted term values. For an RBF kernel on dense data one matrix product
   of augmented vectors and one in-place ``exp`` (``x̃ = [2γx, 1, −γ|x|²]``,
   ``ỹ = [y, −γ|y|² + log|w|, 1]``, so ``exp(x̃·ỹ) = |w| exp(−γ|x − y|²)``, with ``x`` and ``y``
   centred on the support vectors' mean); the support vectors are augmented and put in walk
   order once per walk.
2. Running sums (one vector operation per position over all active walks), one comparison per
   side, first crossings; crossed walks are dropped before the next block.

**Mixed precision** (RBF, dense): the same walk with ``exp`` in single precision and a proven
bound on the error of every running sum; a walk stops only where the bound makes the crossing
certain, and anything the bound leaves unsure is done again in double precision, so the result is
that of the double-precision walk (see the section "mixed precision" below).

**Sparse linear models** (a term is a feature, CSR input) never loop over positions: a row's
``U_t`` changes only at its non-zeros, so between two consecutive non-zeros (walk positions
``[p, q)``) the first lower crossing is the first ``t`` in ``[p, q)`` where
``g_t = lower_t + C_t`` exceeds the constant ``U``. Whether an interval holds one is a range-maximum
query on a sparse table of ``g`` (two look-ups), and where exactly is a binary descent over the
table's levels, run only for each row's first hitting interval: ``O(nnz + m log n)`` numpy work.

Full evaluation and the budgeted rule never test a boundary: one product per chunk of examples
(for a linear model one sparse product with the weights of the first ``B`` positions).

Chunks of examples are independent, so they run on a thread pool (numpy's ufuncs and BLAS release
the GIL), with BLAS held to one thread inside it so that the two do not oversubscribe the cores.

``S_t`` agrees with the reference's sequential sum to rounding (about ``1e-15 · Σ|w h|``), so stop
positions are identical except for a walk that lands within that distance of a threshold
(the mixed-precision walk counts that distance in its error band).
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from attentive.boundaries import Boundary
from attentive.errors import InvalidParameterError
from attentive.outcome import budget_evaluation, check_boundary_length, finish_evaluation
from attentive.walk import Walk

__all__ = ["BlockSchedule", "block_schedule", "default_n_jobs", "evaluate_blocked"]

# Auto-sizing, by measurement on a 2-core machine (CPU time, interleaved). Walking: the cost
# beyond the terms themselves is mostly per-call overhead of the per-position vector operations,
# so chunks are wide (8,192 examples at 64 positions); smaller, cache-sized tiles measured
# slower. Blocks start small (a walk that stops early wastes the rest of its block) and double
# up to a cap. The one-pass full evaluation works on cache-sized (chunk × terms) tiles.
_FIRST_BLOCK = 16
_MAX_BLOCK = 64
_TILE_ELEMENTS = 2**19  # block × chunk of the walking buffers
_MAX_CHUNK = 8192
_FULL_TILE_ELEMENTS = 2**16  # chunk × terms of the one-pass (full / budget) evaluation
_MIN_CHUNK = 64
_SMALL_PROBLEM = 2**15  # examples × terms at or below which one tile covers everything
_TRIANGULAR_MAX = 128  # running sums as a triangular product up to this many examples / terms
_PARALLEL_MIN_ELEMENTS = 2**18  # examples × terms below which threads cost more than they save
_MAX_JOBS = 8
_ENV_JOBS = "ATTENTIVE_N_JOBS"


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
        sizes, size, total = [], _FIRST_BLOCK, 0
        while total < n_terms:
            sizes.append(size)
            total += size
            size = min(2 * size, _MAX_BLOCK)
        edges = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes else np.zeros(0, int)
    edges = np.append(edges, n_terms).astype(np.int64)
    return BlockSchedule(edges=edges)


# ----------------------------------------------------------------------------- threads


def check_size(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer or None, got {value!r}.")
    return int(value)


PRECISIONS = ("auto", "mixed", "double")


def check_precision(value) -> str | None:
    if value is None or value in PRECISIONS:
        return value
    raise InvalidParameterError(
        f"precision must be one of {', '.join(map(repr, PRECISIONS))} or None, got {value!r}."
    )


def default_n_jobs() -> int:
    """Threads used when ``n_jobs`` is not given: ``$ATTENTIVE_N_JOBS``, else the usable cores (≤ 8)."""
    env = os.environ.get(_ENV_JOBS, "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise InvalidParameterError(
                f"environment variable {_ENV_JOBS} must be a positive integer, got {env!r}."
            )
        return value
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_JOBS))


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()
_BLAS = None


def _pool(n_jobs: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        pool = _POOLS.get(n_jobs)
        if pool is None:
            pool = _POOLS[n_jobs] = ThreadPoolExecutor(n_jobs, thread_name_prefix="attentive")
        return pool


def _one_blas_thread():
    """A context that holds BLAS to one thread (our threads are the parallelism)."""
    global _BLAS
    try:
        if _BLAS is None:
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        return _BLAS.limit(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - threadpoolctl missing or unable to inspect BLAS
        return nullcontext()


def _run(tasks: list, n_jobs: int) -> list:
    """Call every task (a no-argument function) and return the results in order."""
    if n_jobs <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with _one_blas_thread():
        return list(_pool(n_jobs).map(lambda task: task(), tasks))


def _split(m: int, step: int, n_jobs: int) -> list[tuple[int, int]]:
    """Row ranges of at most ``step`` rows; with threads, a multiple of ``n_jobs`` equal ranges
    (when there are rows enough) so that no thread is left with one range more than another."""
    if m == 0:
        return []
    count = -(-m // max(1, step))
    if n_jobs > 1:
        count = min(m, -(-count // n_jobs) * n_jobs)
    edges = (np.arange(count + 1) * m) // count  # sizes differ by at most one row
    return list(itertools.pairwise(edges.tolist()))


# ----------------------------------------------------------------------------- per-walk plan


@dataclass
class _Plan:
    """What a walk needs for blocked evaluation, computed once per walk."""

    ordered_weights: np.ndarray
    centring_sums: np.ndarray  # C_t for t = 1..n
    weight_signs: np.ndarray  # sign of w_{π(k)}: whether a weighted term is added or subtracted
    order: np.ndarray
    rbf_gamma: float | None = None
    rbf_centre: np.ndarray | None = None  # subtracted from examples and support vectors
    sv_augmented: np.ndarray | None = None  # (n, d + 2), walk order, centred, log|w| folded in
    sv_norms: np.ndarray | None = None  # |y − c| of each support vector, walk order
    sv_raw_norm: float = 0.0  # max |y| (uncentred), for the float64 rounding allowance
    inverse_order: np.ndarray | None = None  # walk position of each feature (linear models)
    boundaries: dict = field(default_factory=dict)  # per-boundary thresholds on U
    offset: float = 0.0  # c = b + Σ w μ (walk.offset, computed once)


_PLANS: dict[int, tuple[weakref.ref, _Plan]] = {}


def _plan(walk: Walk) -> _Plan:
    """The cached plan of ``walk`` (dropped when the walk is garbage-collected)."""
    key = id(walk)
    entry = _PLANS.get(key)
    if entry is not None and entry[0]() is walk:
        return entry[1]
    w = np.asarray(walk.ordered_weights, dtype=np.float64)
    plan = _Plan(
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
        plan.sv_raw_norm = float(np.sqrt(np.einsum("ij,ij->i", Y, Y).max(initial=0.0)))
        # The kernel depends on x − y only: centring both keeps the augmented products small,
        # which is what their rounding error is proportional to.
        plan.rbf_centre = Y.mean(axis=0) if len(Y) else np.zeros(Y.shape[1])
        Y = Y - plan.rbf_centre
        norms2 = np.einsum("ij,ij->i", Y, Y)
        plan.sv_norms = np.sqrt(norms2)
        # |w| exp(a) = exp(a + log|w|): the weight costs nothing per example.
        with np.errstate(divide="ignore"):
            log_w = np.log(np.abs(w))
        plan.sv_augmented = np.ascontiguousarray(
            np.column_stack([Y, -gamma * norms2 + log_w, np.ones(len(Y))])
        )
    if terms.kind == "linear":
        inverse = np.empty(w.size, dtype=np.int64)
        inverse[plan.order] = np.arange(w.size)
        plan.inverse_order = inverse
    _PLANS[key] = (weakref.ref(walk, lambda _ref, _key=key: _PLANS.pop(_key, None)), plan)
    return plan


@dataclass
class _Thresholds:
    """A boundary's thresholds on the uncentred sums ``U_t`` for positions ``t < n``."""

    lower: np.ndarray | None  # None: side unused
    upper: np.ndarray | None
    tables: dict = field(default_factory=dict)  # sparse tables of g (sparse linear walk)


def _thresholds(plan: _Plan, boundary: Boundary) -> _Thresholds:
    """Cached per (walk, boundary): ``lower_t + C_t`` and ``upper_t + C_t`` for ``t < n``."""
    key = id(boundary)
    entry = plan.boundaries.get(key)
    if entry is not None and entry[0]() is boundary:
        return entry[1]
    n = plan.ordered_weights.size
    C = plan.centring_sums[: n - 1]
    lower = np.asarray(boundary.lower[: n - 1], dtype=np.float64) + C
    upper = np.asarray(boundary.upper[: n - 1], dtype=np.float64) + C
    use_lower = n > 1 and bool(np.any(lower > -np.inf))
    use_upper = n > 1 and bool(np.any(upper < np.inf))
    out = _Thresholds(
        lower=lower if use_lower else None,
        upper=upper if use_upper else None,
    )
    try:
        ref = weakref.ref(boundary, lambda _ref, _key=key: plan.boundaries.pop(_key, None))
    except TypeError:  # pragma: no cover - a boundary type without weak references
        return out
    plan.boundaries[key] = (ref, out)
    return out


# ----------------------------------------------------------------------------- term sources


class _Terms:
    """Weighted term values for a chunk of prepared examples, terms along rows.

    ``block`` returns ``|w_{π(k)}| h_{π(k)}(x)`` (non-negative) when ``magnitudes`` is True, the
    sign being applied while summing, else ``w_{π(k)} h_{π(k)}(x)``.
    """

    magnitudes = False

    def __init__(self, walk: Walk, plan: _Plan, Xp):
        self.walk = walk
        self.plan = plan
        self.X = Xp

    def select(self, rows: np.ndarray) -> None:
        """Restrict the following ``block`` calls to the chunk rows ``rows``."""
        self.rows = rows

    def block(self, start: int, stop: int, out: np.ndarray) -> None:
        """Write the (stop − start, m) block of the selected rows into ``out``."""
        out[:] = self.walk.terms.term_values(self.X[self.rows], self.plan.order[start:stop]).T
        out *= self.plan.ordered_weights[start:stop, None]


class _RBFTerms(_Terms):
    """Dense RBF kernel: one product of augmented vectors and one in-place ``exp`` per block."""

    magnitudes = True

    def __init__(self, walk, plan, Xp):
        super().__init__(walk, plan, Xp)
        g = plan.rbf_gamma
        X = np.asarray(Xp, dtype=np.float64) - plan.rbf_centre
        norms2 = np.einsum("ij,ij->i", X, X)
        self.X_augmented = np.column_stack([2.0 * g * X, np.ones(len(X)), -g * norms2])
        self.max_norm = float(np.sqrt(norms2.max(initial=0.0)))

    def select(self, rows):
        self.rows = rows
        self.X_rows = self.X_augmented[rows]

    def block(self, start, stop, out):
        np.matmul(self.plan.sv_augmented[start:stop], self.X_rows.T, out=out)
        np.exp(out, out=out)


class _ColumnTerms(_Terms):
    """Dense linear models: term ``k`` is feature ``π(k)``; columns put in walk order once."""

    def __init__(self, walk, plan, Xp):
        super().__init__(walk, plan, Xp)
        self.columns = np.asarray(Xp, dtype=np.float64)[:, plan.order]

    def block(self, start, stop, out):
        np.multiply(
            self.columns[self.rows, start:stop].T, self.plan.ordered_weights[start:stop, None], out
        )


def _term_source(walk: Walk, plan: _Plan, Xp) -> type[_Terms]:
    if plan.sv_augmented is not None and not sp.issparse(Xp):
        return _RBFTerms
    if walk.terms.kind == "linear" and not sp.issparse(Xp):
        return _ColumnTerms
    return _Terms


# ----------------------------------------------------------------------------- full / budget


def _as_rows(Xp):
    """Prepared examples in a form whose rows can be sliced and fancy-indexed."""
    if sp.issparse(Xp):
        return Xp if Xp.format == "csr" else sp.csr_matrix(Xp)
    return Xp if isinstance(Xp, np.ndarray) else np.asarray(Xp)


def _prefix_sums(walk: Walk, plan: _Plan, Xp, budget: int, chunk_size, n_jobs) -> np.ndarray:
    """``U_B(x) = Σ_{k≤B} w_{π(k)} h_{π(k)}(x)`` for every example, in row chunks."""
    m, n = Xp.shape[0], walk.n_terms
    if walk.terms.kind == "linear":
        # A linear model's sum over the first B positions is one (sparse) product with the
        # weights of those features.
        weights = walk.terms.weights
        if budget < n:
            weights = np.zeros_like(weights)
            idx = plan.order[:budget]
            weights[idx] = walk.terms.weights[idx]
        return np.asarray(Xp @ weights, dtype=np.float64).ravel()
    out = np.empty(m)
    idx = plan.order[:budget]
    rbf = plan.sv_augmented is not None and not sp.issparse(Xp)
    if rbf:
        sv = plan.sv_augmented[:budget].T
        signs = plan.weight_signs[:budget]
    step = chunk_size or max(_MIN_CHUNK, _FULL_TILE_ELEMENTS // max(1, budget))
    jobs = n_jobs if m * budget >= _PARALLEL_MIN_ELEMENTS else 1

    def task(lo, hi):
        def run():
            X = Xp[lo:hi]
            if rbf:
                H = _RBFTerms(walk, plan, X).X_augmented @ sv
                np.exp(H, out=H)
                np.matmul(H, signs, out=out[lo:hi])
            else:
                out[lo:hi] = walk.terms.term_values(X, idx) @ plan.ordered_weights[:budget]

        return run

    _run([task(lo, hi) for lo, hi in _split(m, step, jobs)], jobs)
    return out


# ----------------------------------------------------------------------------- walking tiles


@dataclass
class _Stops:
    """A chunk's outcome: rows that never stopped with their ``U_n``, and the stops."""

    rows: np.ndarray
    U: np.ndarray
    at: np.ndarray  # (k, 2): chunk row, stop position t (1-based)
    side: np.ndarray  # (k,): −1 lower, +1 upper
    value: np.ndarray  # (k,): U_t at the stop
    unsure: np.ndarray  # chunk rows whose crossing the error band left unsure (walked again)


def _running_sums(H, U, signs, magnitudes, out):
    """``U + cumsum(±H)`` down the rows of ``H`` (block, m) into ``out``, summed in walk order."""
    size, m = H.shape
    if m <= _TRIANGULAR_MAX and size <= _TRIANGULAR_MAX:
        # Few examples: per-position vector operations would be all call overhead.
        T = np.tril(np.ones((size, size)))
        if magnitudes:
            T *= signs
        np.matmul(T, H, out=out)
        out += U
        return out
    # One vector operation per position over all active walks: numpy's cumsum along either axis
    # of H costs several times more per element, and per-sub-block screening or triangular
    # products cost more than they save (measured).
    prev = U
    for i in range(size):
        (np.subtract if magnitudes and signs[i] < 0 else np.add)(prev, H[i], out=out[i])
        prev = out[i]
    return out


def _walk_chunk(
    chunk: _Terms, m: int, schedule: BlockSchedule, thr: _Thresholds, band=None
) -> _Stops:
    """Walk ``m`` examples (``chunk``'s rows) block by block, dropping walks as they cross.

    ``thr.lower`` / ``thr.upper`` are thresholds on ``U_t`` for positions ``t < n``. With
    ``band`` (a bound on the error of the computed ``U_t``, per position) a walk stops only where
    its crossing is certain: beyond the threshold by more than the band, with every earlier
    position short of the threshold by more than the band. Walks that come within the band
    first are set aside in ``unsure`` for an exact walk.
    """
    plan = chunk.plan
    n = int(schedule.edges[-1])
    lower, upper = thr.lower, thr.upper
    lower_test, upper_test = lower, upper
    if band is not None:
        lower_test = None if lower is None else lower + band
        upper_test = None if upper is None else upper - band
    active = np.arange(m)
    chunk.select(active)
    U = np.zeros(active.size)
    size_max = int(schedule.sizes.max()) * active.size
    terms_buf, sums_buf = np.empty(size_max), np.empty(size_max)
    low_buf, high_buf = np.empty(size_max, dtype=bool), np.empty(size_max, dtype=bool)
    stops, sides, values, unsure = [], [], [], []
    for start, stop in itertools.pairwise(schedule.edges.tolist()):
        size, m = stop - start, active.size
        H = terms_buf[: size * m].reshape(size, m)
        chunk.block(start, stop, H)
        P = sums_buf[: size * m].reshape(size, m)
        _running_sums(H, U, plan.weight_signs[start:stop], chunk.magnitudes, P)
        U = P[size - 1].copy()
        checked = min(stop, n - 1) - start
        if checked <= 0:
            break
        P = P[:checked]
        crossed = low = None
        if lower is not None:
            low = np.less(
                P,
                lower_test[start : start + checked, None],
                out=low_buf[: checked * m].reshape(checked, m),
            )
            crossed = low
        if upper is not None:
            high = np.greater(
                P,
                upper_test[start : start + checked, None],
                out=high_buf[: checked * m].reshape(checked, m),
            )
            crossed = high if crossed is None else np.logical_or(low, high, out=high)
        hit = crossed.any(axis=0)
        hit_cols = np.flatnonzero(hit)
        if hit_cols.size == 0:
            continue
        first = np.argmax(crossed[:, hit_cols], axis=0)
        value = P[first, hit_cols]
        side = np.ones(hit_cols.size, dtype=np.int8)
        low_first = low[first, hit_cols] if low is not None else None
        if band is None:
            if low_first is not None:
                side[low_first] = -1
            sure = slice(None)
        else:
            # Certain: beyond a threshold by more than the band; the lower side wins ties, so a
            # lower crossing that is only possible leaves the side unsure.
            t = start + first
            sure = np.zeros(hit_cols.size, dtype=bool)
            if lower is not None:
                np.less(value, lower[t] - band[t], out=sure)
                side[sure] = -1
            if upper is not None:
                up = value > upper[t] + band[t]
                if low_first is not None:
                    up &= ~low_first
                sure |= up
            unsure.append(active[hit_cols[~sure]])
        sides.append(side[sure])
        values.append(value[sure])
        stops.append(np.column_stack([active[hit_cols[sure]], start + first[sure] + 1]))
        keep = ~hit
        active, U = active[keep], U[keep]
        if active.size == 0:
            break
        chunk.select(active)
    at = np.concatenate(stops) if stops else np.zeros((0, 2), dtype=np.int64)
    side = np.concatenate(sides) if sides else np.zeros(0, dtype=np.int8)
    value = np.concatenate(values) if values else np.zeros(0)
    rest = np.concatenate(unsure) if unsure else np.zeros(0, dtype=np.int64)
    return _Stops(rows=active, U=U, at=at, side=side, value=value, unsure=rest)


# ----------------------------------------------------------------------------- mixed precision
#
# A stop needs only the side of a threshold that U_t is on, not U_t itself. So the RBF walk
# computes its kernel values in single precision (numpy's float32 exp is several times faster
# than its float64 exp on CPUs without AVX-512), sums them in double precision, and bounds the
# error of every U_t. A walk stops where the bound makes its crossing certain; walks that come
# within the bound of a threshold first are walked again in double precision, and walks that never
# stop get their U_n from a double-precision product. So stops, sides and every returned value
# are those of the double-precision walk (when only labels are asked for, a walk that never stops
# keeps its single-precision U_n unless it is within the bound of θ).

_U32 = 2.0**-24  # float32 unit roundoff
_U64 = 2.0**-53
# Allowance for the relative error of float32 exp: numpy's is at most 2.52 ulp (its documented
# bound, checked by tests/test_mixed_precision.py); 8 ulp leaves room for other implementations.
EXP32_RELATIVE_ERROR = 8 * 2.0**-23
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)
_MAX_BAND = 1e-3  # widest useful band at the last position, relative to Σ|w|


class _RBFTerms32(_RBFTerms):
    """Dense RBF kernel with the exponent in double precision and ``exp`` in single precision."""

    def __init__(self, walk, plan, Xp):
        super().__init__(walk, plan, Xp)
        self.buffer = np.empty(0, dtype=np.float32)

    def block(self, start, stop, out):
        np.matmul(self.plan.sv_augmented[start:stop], self.X_rows.T, out=out)
        if self.buffer.size < out.size:
            self.buffer = np.empty(out.size, dtype=np.float32)
        single = self.buffer[: out.size].reshape(out.shape)
        np.copyto(single, out, casting="same_kind")
        np.exp(single, out=single)
        np.copyto(out, single)


def rbf_error_band(
    plan: _Plan, thr: _Thresholds, max_norm: float, final: float | None = None
) -> np.ndarray:
    """Bound on ``|Û_t − U_t|`` for ``t = 1 .. n`` of the single-precision RBF walk.

    ``final`` is the threshold ``U_n`` is compared with (``θ_S + C_n``), if any.

    ``max_norm`` bounds ``|x − c|`` over the examples. Term ``k`` is ``|w| e^a`` with
    ``a = −γ|x − y|² ≤ 0``; the walk computes ``exp32(fl32(a + log|w| + e1))`` where ``e1`` is the
    double-precision product's error, at most ``(d + 8) u64 Σ_i |x̃_i ỹ_i|`` with
    ``Σ_i |x̃_i ỹ_i| ≤ γ(|x − c| + |y − c|)² + |log|w||``. With ``z = u32|a| + c0``,
    ``c0 = e1 (1 + u32) + u32 |log|w||`` and ``ρ`` the relative error of float32 ``exp``, the term's
    error is at most ``|w| e^a ((e^z − 1) + e^z ρ) ≤ |w| e^{c0} (u32 / ((1 − u32) e) + c0 + ρ)``
    (because ``|a| e^{a(1 − u32)} ≤ 1 / ((1 − u32) e)``), plus float32's smallest normal for
    underflow. To that is added the double-precision rounding of the running sums, the centring
    curve and the thresholds, here and in the reference, with a generous constant.
    """
    w = plan.ordered_weights
    n = w.size
    absw = np.abs(w)
    gamma = plan.rbf_gamma
    d = plan.sv_augmented.shape[1] - 2
    log_w = np.zeros(n)
    np.log(absw, out=log_w, where=absw > 0)
    np.abs(log_w, out=log_w)
    product_bound = gamma * (max_norm + plan.sv_norms) ** 2 + log_w
    e1 = 1.01 * (d + 8) * _U64 * product_bound
    c0 = e1 * (1 + _U32) + _U32 * log_w
    eta = absw * np.exp(c0) * (_U32 / ((1 - _U32) * np.e) + c0 + EXP32_RELATIVE_ERROR)
    eta += _FLOAT32_TINY
    eta[absw == 0] = 0.0
    band = 1.01 * np.cumsum(eta)
    # Double-precision rounding (ours and the reference's, whose kernel is not centred).
    raw = gamma * (max_norm + float(np.linalg.norm(plan.rbf_centre)) + plan.sv_raw_norm) ** 2
    scale = np.cumsum(absw) * (1.0 + raw) + np.abs(plan.centring_sums)
    for t in (thr.lower, thr.upper):
        if t is not None:
            scale[: n - 1] += np.where(np.isfinite(t), np.abs(t), 0.0)
    if final is not None and np.isfinite(final):
        scale[n - 1] += abs(final)
    band += 8 * (np.arange(1, n + 1) + d + 8) * _U64 * scale
    return band


def _rbf_totals(plan: _Plan, X_augmented: np.ndarray) -> np.ndarray:
    """``U_n`` in double precision for augmented examples, in cache-sized pieces."""
    m, n = X_augmented.shape[0], plan.sv_augmented.shape[0]
    out = np.empty(m)
    step = max(_MIN_CHUNK, _FULL_TILE_ELEMENTS // max(1, n))
    for lo in range(0, m, step):
        H = X_augmented[lo : lo + step] @ plan.sv_augmented.T
        np.exp(H, out=H)
        np.matmul(H, plan.weight_signs, out=out[lo : lo + step])
    return out


# precision="auto": a pilot of rows walked in double precision decides whether mixed precision
# pays (below _PILOT_MIN examples a call is walked in double precision). Measured per term on this
# project's benchmark machine: double walk ≈ 12 ns, mixed walk ≈ 6.5 ns plus ≈ 11.5 ns per term
# of a walk that never stops (its double-precision total); mixed wins while the share of terms
# spent on such walks stays below ≈ 0.45 of all terms walked. 0.3 leaves room for other CPUs.
_PILOT_MIN = 256
_PILOT_ROWS = 128
_MIXED_MAX_SURVIVOR_SHARE = 0.3


_SINGLE_EXP_PAYS: list[bool] = []


def single_exp_pays() -> bool:
    """Whether float32 ``exp`` is at least twice as fast as float64 ``exp`` here (measured once).

    It is where numpy has no vectorised double ``exp`` (x86 without AVX-512: about 9 ns against
    1.3 ns per element); with AVX-512 both are vectorised and mixed precision would not pay.
    """
    if not _SINGLE_EXP_PAYS:
        import time

        a = np.linspace(-30.0, 0.0, 1 << 15)
        a32 = a.astype(np.float32)
        best = {}
        for name, x in (("double", a), ("single", a32)):
            out = np.empty_like(x)
            times = []
            for _ in range(7):
                t0 = time.perf_counter()
                np.exp(x, out=out)
                times.append(time.perf_counter() - t0)
            best[name] = min(times)
        _SINGLE_EXP_PAYS.append(best["double"] >= 2.0 * best["single"])
    return _SINGLE_EXP_PAYS[0]


def _pilot_rows(m: int) -> int:
    return 0 if m < _PILOT_MIN else max(32, min(_PILOT_ROWS, m // 8))


def _mixed_pays(pilot: _Stops, n: int) -> bool:
    """Whether the pilot's walks stop often enough for mixed precision to be the faster walk."""
    survivor_terms = pilot.rows.size * n
    walked = int(pilot.at[:, 1].sum()) + survivor_terms
    return survivor_terms <= _MIXED_MAX_SURVIVOR_SHARE * walked


def _walk_chunk_mixed(
    walk, plan: _Plan, Xc, schedule: BlockSchedule, thr: _Thresholds, final: float | None = None
) -> _Stops:
    """The RBF walk in mixed precision, with the same result as the double-precision walk.

    Walks that never stop get ``U_n`` in double precision, unless ``final`` (a threshold on
    ``U_n``) is given: then only those whose single-precision ``Û_n`` is within the error band of
    it do, and the others keep ``Û_n`` — their side of ``final`` is certain, their value is not
    exact (labels only).
    """
    chunk = _RBFTerms32(walk, plan, Xc)
    m, n = Xc.shape[0], int(schedule.edges[-1])
    band = rbf_error_band(plan, thr, chunk.max_norm, final)
    if not band[n - 1] <= _MAX_BAND * float(np.abs(plan.ordered_weights).sum()):
        # A band this wide (exponents of enormous magnitude) would leave most stops unsure.
        return _walk_chunk(_RBFTerms(walk, plan, Xc), m, schedule, thr)
    res = _walk_chunk(chunk, m, schedule, thr, band[: n - 1])
    U = res.U
    if res.rows.size:
        exact = (
            np.ones(res.rows.size, dtype=bool)
            if final is None
            else np.abs(res.U - final) <= band[n - 1]
        )
        if exact.any():
            U = U.copy()
            U[exact] = _rbf_totals(plan, chunk.X_augmented[res.rows[exact]])
    rows, at, side, value = [res.rows], [res.at], [res.side], [res.value]
    if res.unsure.size:
        redo = _walk_chunk(_RBFTerms(walk, plan, Xc[res.unsure]), res.unsure.size, schedule, thr)
        rows.append(res.unsure[redo.rows])
        U = np.concatenate([U, redo.U])
        at.append(np.column_stack([res.unsure[redo.at[:, 0]], redo.at[:, 1]]))
        side.append(redo.side)
        value.append(redo.value)
    return _Stops(
        rows=np.concatenate(rows),
        U=U,
        at=np.concatenate(at),
        side=np.concatenate(side),
        value=np.concatenate(value),
        unsure=res.unsure,
    )


def _walk_small(walk: Walk, plan: _Plan, Xp, thr: _Thresholds):
    """A tiny problem in one go: every term of every example, then the first crossings."""
    n = plan.ordered_weights.size
    if plan.sv_augmented is not None and not sp.issparse(Xp):
        H = _RBFTerms(walk, plan, Xp).X_augmented @ plan.sv_augmented.T
        np.exp(H, out=H)
        H *= plan.weight_signs
    else:
        H = walk.terms.term_values(Xp, plan.order)
        H *= plan.ordered_weights
    U = np.cumsum(H, axis=1)
    P = U[:, : n - 1]
    crossed = low = None
    if thr.lower is not None:
        low = crossed = P < thr.lower
    if thr.upper is not None:
        high = P > thr.upper
        crossed = high if crossed is None else np.logical_or(low, high, out=high)
    hit = crossed.any(axis=1)
    first = np.argmax(crossed, axis=1)
    at = np.where(hit, first + 1, n)
    side = hit.astype(np.int8)
    rows = np.arange(P.shape[0])
    if low is not None:
        side[low[rows, first] & hit] = -1
    return at, side, U[:, n - 1], U[rows, at - 1]


# ----------------------------------------------------------------------------- sparse linear


def _sparse_table(g: np.ndarray) -> np.ndarray:
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


def _first_above(T: np.ndarray, a: np.ndarray, b: np.ndarray, v: np.ndarray) -> np.ndarray:
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


def _walk_order_rows(X, plan: _Plan):
    """CSR rows with column indices replaced by walk positions, sorted within each row."""
    positions = plan.inverse_order[X.indices].astype(X.indices.dtype, copy=False)
    Y = sp.csr_matrix((X.data, positions, X.indptr), shape=X.shape)
    # Two counting sorts in scipy's C code (to columns and back) leave each row's positions
    # sorted: O(nnz + n), no comparison sort.
    return Y.tocsc().tocsr()


def _sparse_linear_chunk(X, plan: _Plan, thr: _Thresholds, n: int):
    """Stop positions, sides and ``U_t`` there of a chunk of CSR rows under a linear model; and
    ``U_n``."""
    Y = _walk_order_rows(X, plan)
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
            T = thr.tables[g_key] = _sparse_table(g if g_key == "lower" else -g)
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
            found = _first_above(T, a[idx], b[idx], values[idx])
            # Lower first: at equal positions the lower side wins, as in the reference.
            better = (found < b[idx]) & (found < best)
            best[better] = found[better]
            best_side[better] = side_value
        stop_at[rows] = best + 1
        stop_side[rows] = best_side
        stop_u[rows] = v[idx]  # U is constant over the interval that holds the stop
    return stop_at, stop_side, stop_u, U_n


# ----------------------------------------------------------------------------- evaluation


def evaluate_blocked(
    walk: Walk,
    X,
    boundary: Boundary,
    theta_s: float,
    *,
    chunk_size: int | None = None,
    block_size: int | None = None,
    n_jobs: int | None = None,
    precision: str | None = None,
    values: bool = True,
    threshold: float | None = None,
    stopped_score: str = "estimate",
):
    """Evaluate raw examples ``X`` under ``boundary``, computing only the terms that are needed.

    Same result as ``apply_boundary(walk.partial_scores(X), boundary, theta_s, walk.offset,
    classes)`` (SPEC §2 stopping rule: first ``t < n`` beyond a threshold), up to rounding in the
    decision values of walks that were not stopped.

    Parameters
    ----------
    walk : Walk
    X : array-like or sparse matrix of shape (n_examples, n_features)
        Raw examples (the pipeline head, if any, is applied here).
    boundary : Boundary
    theta_s : float
        Decision threshold in S space.
    chunk_size : int, optional
        Examples walked together; default: sized so a tile stays in cache.
    block_size : int, optional
        Walk positions per block; default: 16, doubling up to 64 (one block for tiny problems).
    n_jobs : int, optional
        Threads; default :func:`default_n_jobs` (small problems always use one).
    precision : {"auto", "mixed", "double"}, optional
        How an RBF walk on dense data computes its kernel values. ``"mixed"``: in single
        precision with a bound on the error of every running sum, stopping only where the bound
        makes the crossing certain, walking again in double precision where it does not, and
        summing the walks that never stop in double precision (same result as ``"double"``).
        ``"double"``: double precision throughout. ``"auto"`` (default): mixed where it is
        expected to be faster — this CPU's float32 ``exp`` is at least twice as fast as its float64
        one (measured once per process) and a pilot of the first rows shows that most walks stop.
    values : bool, default True
        False when only the decisions are needed (``predict``): a mixed-precision walk that never
        stops then keeps its single-precision ``f(x)`` when the error band leaves its side of θ
        certain (its decision value is then accurate to the band, about 1e-6 of ``Σ|w|``,
        instead of 1e-9); stops, sides, ``positive`` and ``labels`` are exact either way.
    threshold : float, optional
        θ on the decision scale (default ``offset + theta_s``); decisions lie on their predicted
        side of it.
    stopped_score : {"estimate", "boundary"}, default "estimate"
        What a stopped walk scores (SPEC §2; see :func:`attentive.evaluation.finish_evaluation`).

    Returns
    -------
    Evaluation
    """

    chunk_size = check_size(chunk_size, "chunk_size")
    block_size = check_size(block_size, "block_size")
    n_jobs = check_size(n_jobs, "n_jobs") or default_n_jobs()
    precision = check_precision(precision) or "auto"
    n = walk.n_terms
    classes = np.asarray(walk.terms.classes)
    Xp = _as_rows(walk.prepare(X))
    m = Xp.shape[0]
    check_boundary_length(boundary, n)
    plan = _plan(walk)
    offset = plan.offset

    if boundary.kind == "budget":
        B = int(boundary.budget)
        estimate = (n / B) * (
            _prefix_sums(walk, plan, Xp, B, chunk_size, n_jobs) - plan.centring_sums[B - 1]
        )
        return budget_evaluation(estimate, B, n, theta_s, offset, threshold, classes)

    n_evaluated = np.full(m, n, dtype=np.int64)
    stop_side = np.zeros(m, dtype=np.int8)
    s_n = np.full(m, np.nan)
    stop_u = np.full(m, np.nan)  # U_t at the stop of walks that stopped
    thr = _thresholds(plan, boundary) if n > 1 else _Thresholds(None, None)
    jobs = n_jobs if m * n >= _PARALLEL_MIN_ELEMENTS else 1

    if (thr.lower is None and thr.upper is None) or m == 0:
        if n:
            s_n = _prefix_sums(walk, plan, Xp, n, chunk_size, n_jobs) - plan.centring_sums[n - 1]
    elif walk.terms.kind == "linear" and sp.issparse(Xp):
        step = chunk_size or max(1, -(-m // jobs))

        def sparse_task(lo, hi):
            return lambda: _sparse_linear_chunk(Xp[lo:hi], plan, thr, n)

        ranges = _split(m, step, jobs)
        for (lo, hi), (at, side, u_stop, U) in zip(
            ranges, _run([sparse_task(lo, hi) for lo, hi in ranges], jobs), strict=True
        ):
            n_evaluated[lo:hi] = at
            stop_side[lo:hi] = side
            stop_u[lo:hi] = u_stop
            s_n[lo:hi] = U - plan.centring_sums[n - 1]
    elif block_size is None and chunk_size is None and m * n <= _SMALL_PROBLEM:
        n_evaluated, stop_side, U, stop_u = _walk_small(walk, plan, Xp, thr)
        s_n = U - plan.centring_sums[n - 1]
    else:
        schedule = block_schedule(n, block_size)
        max_block = int(schedule.sizes.max())
        step = chunk_size or max(_MIN_CHUNK, min(_MAX_CHUNK, _TILE_ELEMENTS // max_block))
        source = _term_source(walk, plan, Xp)
        mixed = source is _RBFTerms and (
            precision == "mixed" or (precision == "auto" and single_exp_pays())
        )

        def record(lo, res):
            n_evaluated[lo + res.at[:, 0]] = res.at[:, 1]
            stop_side[lo + res.at[:, 0]] = res.side
            stop_u[lo + res.at[:, 0]] = res.value
            s_n[lo + res.rows] = res.U - plan.centring_sums[n - 1]

        final = None if values else float(theta_s + plan.centring_sums[n - 1])
        first = 0
        if mixed and precision == "auto" and not values:
            # Labels only: a walk that never stops needs its exact total only when its
            # single-precision total is within the error band of θ, so mixed precision pays
            # whatever the share of such walks (calls below _PILOT_MIN rows: double).
            mixed = m >= _PILOT_MIN
        elif mixed and precision == "auto":
            # Mixed precision pays a double-precision product for every walk that never stops,
            # so it only wins when most walks stop. A pilot of the first rows, walked in double
            # precision (their result is kept), measures that.
            first = _pilot_rows(m)
            if first:
                res = _walk_chunk(_RBFTerms(walk, plan, Xp[:first]), first, schedule, thr)
                record(0, res)
                mixed = _mixed_pays(res, n)
            else:
                mixed = False

        def walk_task(lo, hi):
            if mixed:
                return lambda: _walk_chunk_mixed(walk, plan, Xp[lo:hi], schedule, thr, final)
            return lambda: _walk_chunk(source(walk, plan, Xp[lo:hi]), hi - lo, schedule, thr)

        ranges = [(first + lo, first + hi) for lo, hi in _split(m - first, step, jobs)]
        for (lo, _hi), res in zip(
            ranges, _run([walk_task(lo, hi) for lo, hi in ranges], jobs), strict=True
        ):
            record(lo, res)

    # S_t = U_t − C_t at each stop (other entries are not used).
    stop_scores = stop_u - plan.centring_sums[np.maximum(n_evaluated, 1) - 1] if n else stop_u
    return finish_evaluation(
        boundary,
        s_n=s_n,
        n_evaluated=n_evaluated,
        stop_side=stop_side,
        stop_scores=stop_scores,
        theta_s=theta_s,
        offset=offset,
        threshold=threshold,
        classes=classes,
        stopped_score=stopped_score,
    )
