"""Blocked evaluation of walks: compute terms only for the examples that are still walking.

:func:`attentive.evaluation.apply_boundary` needs every partial score ``S_t`` of every example, so
it costs as much as a full evaluation. :func:`evaluate_blocked` gives the same answer while
computing, block of walk positions after block, the terms of the examples that have not stopped
yet; an example that crosses the boundary is dropped before the next block.

How one block ``[s, e)`` of positions is evaluated for the ``m`` examples still active:

1. ``H`` (e − s, m): the raw term values ``h_{π(k)}(x)``, terms along rows. For an RBF kernel on
   dense data this is one matrix product and one ``exp``: with ``x̃ = [2γx, 1, −γ|x|²]`` and
   ``ỹ = [y, −γ|y|², 1]``, ``x̃·ỹ = −γ|x − y|²``. The support vectors are augmented and put in walk
   order once per walk.
2. The uncentred running sums ``U_t = Σ_{k≤t} w_{π(k)} h_{π(k)}(x)`` for ``t`` in the block are
   one more small matrix product, ``T @ [H; U_s]``, where ``T`` holds the block's weights below
   the diagonal and a column of ones that carries ``U_s`` in. (``np.cumsum`` along either axis
   costs several times as much per element here.)
3. Centring never touches the block: ``S_t = U_t − C_t`` with ``C_t = Σ_{k≤t} w_{π(k)} μ_{π(k)}``,
   so ``S_t < lower_t`` is tested as ``U_t < lower_t + C_t`` with the right-hand side computed once
   per boundary.

``S_t`` agrees with the reference's sequential sum to rounding (about ``1e-15 · Σ|w h|``), so stop
positions are identical except for a walk that lands within that distance of a threshold.

Full evaluation and the budgeted rule never test a boundary: ``U_B`` is one matrix–vector product
per chunk of examples.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.boundaries import Boundary
from attentive.errors import InvalidParameterError
from attentive.walk import Walk

__all__ = ["BlockSchedule", "block_schedule", "evaluate_blocked"]

# Auto-sizing. A block's buffers hold about (block + 1) × chunk float64 values; these bounds keep
# them within a few MB (cache-friendly, and far from any memory limit) while making each numpy
# call long enough that Python overhead stays small.
_FIRST_BLOCK = 16
_MAX_BLOCK = 64
_CHUNK_ELEMENTS = 2**19  # (block + 1) × chunk for the walking buffers
_FULL_CHUNK_ELEMENTS = 2**20  # chunk × terms for the one-pass (full / budget) evaluation
_MAX_CHUNK = 8192


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


# ----------------------------------------------------------------------------- per-walk plan


@dataclass
class _Plan:
    """What a walk needs for blocked evaluation, computed once per walk."""

    ordered_weights: np.ndarray
    centring_sums: np.ndarray  # C_t for t = 1..n
    weight_signs: np.ndarray  # sign of w_{π(k)}: whether a weighted term is added or subtracted
    rbf_gamma: float | None = None
    sv_augmented: np.ndarray | None = None  # (n, d + 2), walk order, log|w| folded in


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
        plan.sv_augmented = np.ascontiguousarray(
            np.column_stack([Y, -gamma * np.einsum("ij,ij->i", Y, Y) + log_w, np.ones(len(Y))])
        )
    _PLANS[key] = (weakref.ref(walk, lambda _ref, _key=key: _PLANS.pop(_key, None)), plan)
    return plan


# ----------------------------------------------------------------------------- term sources


class _Terms:
    """Weighted term values for a chunk of prepared examples, terms along rows.

    ``block`` writes ``|w_{π(k)}| h_{π(k)}(x)`` when ``magnitudes`` is True (the sign is applied
    while summing), else ``w_{π(k)} h_{π(k)}(x)``.
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
        out[:] = self.walk.terms.term_values(self.X[self.rows], self.walk.order[start:stop]).T
        out *= self.plan.ordered_weights[start:stop, None]


class _RBFTerms(_Terms):
    """Dense RBF kernel: one product of augmented vectors and one in-place ``exp`` per block."""

    magnitudes = True

    def __init__(self, walk, plan, Xp):
        super().__init__(walk, plan, Xp)
        g = plan.rbf_gamma
        X = np.asarray(Xp, dtype=np.float64)
        self.X_augmented = np.column_stack(
            [2.0 * g * X, np.ones(len(X)), -g * np.einsum("ij,ij->i", X, X)]
        )

    def select(self, rows):
        self.rows = rows
        self.X_rows = self.X_augmented[rows]

    def block(self, start, stop, out):
        np.matmul(self.plan.sv_augmented[start:stop], self.X_rows.T, out=out)
        np.exp(out, out=out)


class _ColumnTerms(_Terms):
    """Linear models: term ``k`` is feature ``π(k)``; columns are put in walk order per chunk."""

    def __init__(self, walk, plan, Xp):
        super().__init__(walk, plan, Xp)
        if sp.issparse(Xp):
            self.columns = sp.csc_matrix(Xp)[:, walk.order]
        else:
            self.columns = np.asarray(Xp, dtype=np.float64)[:, walk.order]

    def block(self, start, stop, out):
        cols = self.columns[:, start:stop]
        if sp.issparse(cols):
            cols = cols.toarray()
        out[:] = cols[self.rows].T
        out *= self.plan.ordered_weights[start:stop, None]


def _term_source(walk: Walk, plan: _Plan, Xp) -> type[_Terms]:
    if plan.sv_augmented is not None and not sp.issparse(Xp):
        return _RBFTerms
    if walk.terms.kind == "linear":
        return _ColumnTerms
    return _Terms


# ----------------------------------------------------------------------------- evaluation


def _as_rows(Xp):
    """Prepared examples in a form whose rows can be sliced and fancy-indexed."""
    if sp.issparse(Xp):
        return sp.csr_matrix(Xp)
    return Xp if isinstance(Xp, np.ndarray) else np.asarray(Xp)


def _prefix_sums(walk: Walk, plan: _Plan, Xp, budget: int, chunk_size: int | None) -> np.ndarray:
    """``U_B(x) = Σ_{k≤B} w_{π(k)} h_{π(k)}(x)`` for every example, in row chunks."""
    m, n = Xp.shape[0], walk.n_terms
    if walk.terms.kind == "linear" and budget == n:
        # A linear model's full sum does not depend on the order: one (sparse) product.
        return np.asarray(Xp @ walk.terms.weights, dtype=np.float64).ravel()
    step = chunk_size or max(1, min(m, _FULL_CHUNK_ELEMENTS // max(1, budget)))
    out = np.empty(m)
    idx = walk.order[:budget]
    for lo in range(0, m, step):
        X = Xp[lo : lo + step]
        if plan.sv_augmented is not None and not sp.issparse(X):
            H = _RBFTerms(walk, plan, X).X_augmented @ plan.sv_augmented[:budget].T
            np.exp(H, out=H)
            out[lo : lo + step] = H @ plan.weight_signs[:budget]
            continue
        if walk.terms.kind == "linear":
            H = X[:, idx]
            H = H.toarray() if sp.issparse(H) else np.asarray(H, dtype=np.float64)
        else:
            H = walk.terms.term_values(X, idx)
        out[lo : lo + step] = H @ plan.ordered_weights[:budget]
    return out


def _walk_chunk(chunk: _Terms, plan: _Plan, schedule, lower, upper, buffers):
    """Walk one chunk block by block, dropping walks as they cross.

    ``lower`` / ``upper`` are thresholds on ``U_t`` for positions ``t < n`` (None: side unused).
    Returns the rows that never stopped with their ``U_n``, the stops as ``(row, t)`` pairs and
    their sides.
    """
    n = schedule.edges[-1]
    terms_buf, sums_buf, low_buf, high_buf = buffers
    active = np.arange(chunk.X.shape[0])
    chunk.select(active)
    U = np.zeros(active.size)
    signs = plan.weight_signs if chunk.magnitudes else np.ones_like(plan.weight_signs)
    stops, sides = [], []
    for start, stop in zip(schedule.edges[:-1], schedule.edges[1:], strict=True):
        size, m = stop - start, active.size
        H = terms_buf[: size * m].reshape(size, m)
        chunk.block(start, stop, H)
        P = sums_buf[: size * m].reshape(size, m)
        # Running sums one position at a time, each a vector operation over all active walks:
        # numpy's cumsum along either axis of H costs ~15x more per element, and this order
        # reproduces the reference's sequential sum.
        prev = U
        for i in range(size):
            (np.add if signs[start + i] > 0 else np.subtract)(prev, H[i], out=P[i])
            prev = P[i]
        U = P[size - 1].copy()
        checked = min(stop, n - 1) - start
        if checked <= 0:
            break
        crossed = low = None
        if lower is not None:
            low = np.less(
                P[:checked],
                lower[start:stop, None][:checked],
                out=low_buf[: checked * m].reshape(checked, m),
            )
            crossed = low
        if upper is not None:
            high = np.greater(
                P[:checked],
                upper[start:stop, None][:checked],
                out=high_buf[: checked * m].reshape(checked, m),
            )
            crossed = high if crossed is None else np.logical_or(low, high, out=high)
        hit = crossed.any(axis=0)
        hit_cols = np.flatnonzero(hit)
        if hit_cols.size == 0:
            continue
        first = np.argmax(crossed[:, hit_cols], axis=0)
        if low is not None:
            sides.append(np.where(low[first, hit_cols], -1, 1).astype(np.int8))
        else:
            sides.append(np.ones(hit_cols.size, dtype=np.int8))
        stops.append(np.column_stack([active[hit_cols], start + first + 1]))
        keep = ~hit
        active, U = active[keep], U[keep]
        if active.size == 0:
            break
        chunk.select(active)
    at = np.concatenate(stops) if stops else np.zeros((0, 2), dtype=np.int64)
    side = np.concatenate(sides) if sides else np.zeros(0, dtype=np.int8)
    return active, U, at, side


def _check_size(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} must be a positive integer or None, got {value!r}.")
    return int(value)


def evaluate_blocked(
    walk: Walk,
    X,
    boundary: Boundary,
    theta_s: float,
    *,
    chunk_size: int | None = None,
    block_size: int | None = None,
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
        Examples walked together; default: sized so a block's buffers stay within a few MB.
    block_size : int, optional
        Walk positions per block; default: 16, doubling up to 64.

    Returns
    -------
    Evaluation
    """
    from attentive.evaluation import Evaluation, stop_estimate

    chunk_size = _check_size(chunk_size, "chunk_size")
    block_size = _check_size(block_size, "block_size")
    n = walk.n_terms
    classes = np.asarray(walk.terms.classes)
    Xp = _as_rows(walk.prepare(X))
    m = Xp.shape[0]
    plan = _plan(walk)
    offset = walk.offset

    if boundary.kind == "budget":
        B = int(boundary.budget)
        estimate = (n / B) * (
            _prefix_sums(walk, plan, Xp, B, chunk_size) - plan.centring_sums[B - 1]
        )
        positive = estimate >= theta_s
        stopped = np.full(m, B < n)
        return Evaluation(
            decision=offset + estimate,
            positive=positive,
            labels=classes[positive.astype(int)],
            n_evaluated=np.full(m, B, dtype=np.int64),
            stopped=stopped,
            stop_side=np.where(stopped, np.where(positive, 1, -1), 0).astype(np.int8),
            n_terms=n,
        )

    n_evaluated = np.full(m, n, dtype=np.int64)
    stop_side = np.zeros(m, dtype=np.int8)
    s_n = np.full(m, np.nan)
    # Thresholds on the uncentred sums U_t (see the module docstring); positions t = n never stop.
    lower = np.asarray(boundary.lower[: n - 1], dtype=np.float64) + plan.centring_sums[: n - 1]
    upper = np.asarray(boundary.upper[: n - 1], dtype=np.float64) + plan.centring_sums[: n - 1]
    lower = lower if n > 1 and np.any(lower > -np.inf) else None
    upper = upper if n > 1 and np.any(upper < np.inf) else None

    if (lower is None and upper is None) or m == 0:
        s_n = _prefix_sums(walk, plan, Xp, n, chunk_size) - plan.centring_sums[n - 1] if n else s_n
    else:
        schedule = block_schedule(n, block_size)
        max_block = int(schedule.sizes.max())
        step = chunk_size or max(1, min(m, _MAX_CHUNK, _CHUNK_ELEMENTS // (max_block + 1)))
        source = _term_source(walk, plan, Xp)
        size = max_block * min(m, step)
        buffers = (np.empty(size), np.empty(size), np.empty(size, bool), np.empty(size, bool))
        for lo in range(0, m, step):
            chunk = source(walk, plan, Xp[lo : lo + step])
            rows, U, at, side = _walk_chunk(chunk, plan, schedule, lower, upper, buffers)
            n_evaluated[lo + at[:, 0]] = at[:, 1]
            stop_side[lo + at[:, 0]] = side
            s_n[lo + rows] = U - plan.centring_sums[n - 1]

    stopped = stop_side != 0
    decision = offset + s_n
    positive = s_n >= theta_s
    if stopped.any():
        at = n_evaluated[stopped] - 1
        decision[stopped] = offset + stop_estimate(boundary, at, stop_side[stopped])
        positive[stopped] = stop_side[stopped] > 0
    return Evaluation(
        decision=decision,
        positive=positive,
        labels=classes[positive.astype(int)],
        n_evaluated=n_evaluated,
        stopped=stopped,
        stop_side=stop_side,
        n_terms=n,
    )
