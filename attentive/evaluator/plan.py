"""What a walk needs for blocked evaluation, computed once: the walk plan (weights, centring curve
and each term source's own arrays), a boundary's thresholds on the uncentred sums ``U_t``, and
schedules of blocks of walk positions.

Centring never touches the terms: ``S_t = U_t − C_t`` with ``U_t = U_0 + Σ_{k≤t} w_{π(k)}
h_{π(k)}(x)`` and ``C_t = Σ_{k≤t} w_{π(k)} μ_{π(k)}``, so ``S_t < lower_t`` is tested as
``U_t < lower_t + C_t`` with the right-hand side computed once per boundary.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attentive.boundaries import Boundary
from attentive.errors import InvalidParameterError
from attentive.walk import Walk

__all__ = [
    "BlockSchedule",
    "Thresholds",
    "WalkPlan",
    "block_schedule",
    "expected_remaining",
    "survival_schedule",
    "thresholds",
    "walk_plan",
]

# Without a survival curve, blocks start small (a walk that stops early wastes the rest of its
# block) and double up to a cap.
FIRST_BLOCK = 16
MAX_BLOCK = 64
# With one (survival_schedule): blocks between these sizes; a source may allow longer blocks
# (its ``max_block``: products over many features, WIDE_SURVIVAL_BLOCK).
MIN_SURVIVAL_BLOCK = 4
MAX_SURVIVAL_BLOCK = 64
WIDE_SURVIVAL_BLOCK = 128
_CANDIDATE_EDGES = 256  # block edges the survival schedule chooses among


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


def survival_schedule(
    stops: np.ndarray,
    n_terms: int,
    row_cost: float,
    *,
    term_cost: float = 1.0,
    min_block: int = MIN_SURVIVAL_BLOCK,
    max_block: int = MAX_SURVIVAL_BLOCK,
) -> tuple[BlockSchedule, float]:
    """Blocks that minimise the predicted cost of walking examples whose stops are like ``stops``,
    and that cost per walk.

    ``stops`` are the stop positions (1-based; ``n`` for walks that never stop) of a sample of
    walks, so ``s(a)`` = share of them still walking at position ``a`` (0-based). A block
    ``[a, b)`` computes every term of the walks active at ``a``, at ``term_cost`` each, and pays
    ``row_cost`` per such walk (holding its row through the block: a gather, a read in the
    product): ``s(a) (row_cost + term_cost (b − a))``. The cheapest partition into blocks of
    ``min_block`` to ``max_block`` positions is found by dynamic programming over at most 256
    candidate edges. Where the sample says nobody walks any more, a floor of half a walk keeps
    blocks bounded. Costs are in the caller's unit (the evaluator's: one term of a full
    evaluation).
    """
    n = int(n_terms)
    stops = np.asarray(stops, dtype=np.int64)
    if n == 0 or stops.size == 0:
        return block_schedule(n), float(n * term_cost)
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
        cost = np.where(ok, best[a] + alive[a] * (row_cost + term_cost * size), np.inf)
        back[j] = int(np.argmin(cost))
        best[j] = cost[back[j]]
    edges = [K - 1]
    while edges[-1] > 0:
        edges.append(back[edges[-1]])
    return BlockSchedule(edges=cand[edges[::-1]].astype(np.int64)), float(best[K - 1])


@dataclass(frozen=True)
class Thresholds:
    """A boundary's thresholds on the uncentred sums ``U_t`` for positions ``t < n``."""

    lower: np.ndarray | None  # None: side unused
    upper: np.ndarray | None
    # κ_t for t < n of a boundary with ``mass``: the thresholds apply to U_t + κ_t A_t, with A_t
    # the running mass Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x) (None: to U_t).
    mass: np.ndarray | None = None

    @property
    def stops_anything(self) -> bool:
        return self.lower is not None or self.upper is not None


@dataclass
class KeptPilots:
    """What the pilot keeps for one (walk, boundary): its sample of rows and the stops of their
    walks, and the :class:`~attentive.evaluator.pilot.Pilot` made from them for each kind of
    rows (:func:`~attentive.evaluator.pilot.rows_key`)."""

    stops: np.ndarray | None = None
    sample: np.ndarray | None = None
    by_kind: dict = field(default_factory=dict)


class WalkPlan:
    """What every term source shares for one walk, computed once per walk, and the caches that
    belong to it: each source's own arrays (:meth:`arrays`), each boundary's thresholds and its
    pilots, one per kind of rows (:mod:`attentive.evaluator.pilot`)."""

    def __init__(self, walk: Walk):
        w = np.asarray(walk.ordered_weights, dtype=np.float64)
        self.ordered_weights = w
        # What each position's term is centred by: μ (a plain walk), μ^ρ (a sketched walk).
        centres = np.asarray(walk.ordered_centres, dtype=np.float64)
        self.centring_sums = np.cumsum(w * centres)
        self.weight_signs = np.where(w < 0, -1.0, 1.0)
        self.order = np.asarray(walk.order)
        self.offset = walk.offset  # c = b + Σ w μ
        self._arrays: dict = {}
        self._lock = threading.Lock()
        self.boundaries: dict = {}  # id(boundary) -> (weakref, Thresholds, KeptPilots)
        self.prefix_matrices: dict = {}

    @property
    def n_terms(self) -> int:
        return int(self.ordered_weights.size)

    def arrays(self, key, build: Callable[[], object]):
        """The arrays registered under ``key`` (a source's precomputed support vectors, say),
        built by ``build()`` on first use."""
        value = self._arrays.get(key)
        if value is None:
            with self._lock:
                value = self._arrays.get(key)
                if value is None:
                    value = self._arrays[key] = build()
        return value

    def pilots(self, boundary: Boundary) -> KeptPilots:
        """The pilots kept for ``boundary`` (see :func:`attentive.evaluator.pilot.pilot_for`)."""
        return self._boundary_entry(boundary)[2]

    def _boundary_entry(self, boundary: Boundary):
        key = id(boundary)
        entry = self.boundaries.get(key)
        if entry is not None and entry[0]() is boundary:
            return entry
        thr = _thresholds(self, boundary)
        try:
            ref = weakref.ref(boundary, lambda _ref, _key=key: self.boundaries.pop(_key, None))
        except TypeError:  # pragma: no cover - a boundary type without weak references
            return (lambda: boundary, thr, KeptPilots())
        entry = self.boundaries[key] = (ref, thr, KeptPilots())
        return entry


_PLANS: dict[int, tuple[weakref.ref, WalkPlan]] = {}
_PLANS_LOCK = threading.Lock()


def walk_plan(walk: Walk) -> WalkPlan:
    """The cached plan of ``walk`` (dropped when the walk is garbage-collected)."""
    key = id(walk)
    entry = _PLANS.get(key)
    if entry is not None and entry[0]() is walk:
        return entry[1]
    with _PLANS_LOCK:
        entry = _PLANS.get(key)
        if entry is not None and entry[0]() is walk:
            return entry[1]
        plan = WalkPlan(walk)
        _PLANS[key] = (weakref.ref(walk, lambda _ref, _key=key: _PLANS.pop(_key, None)), plan)
    return plan


def thresholds(plan: WalkPlan, boundary: Boundary) -> Thresholds:
    """Cached per (walk, boundary): ``lower_t + C_t`` and ``upper_t + C_t`` for ``t < n`` (and
    the boundary's ``mass`` coefficients: ``V_t = S_t + κ_t A_t < lower_t`` is tested as
    ``U_t + κ_t A_t < lower_t + C_t``)."""
    return plan._boundary_entry(boundary)[1]


def _thresholds(plan: WalkPlan, boundary: Boundary) -> Thresholds:
    n = plan.n_terms
    if n <= 1 or boundary.kind == "budget":
        return Thresholds(None, None)
    C = plan.centring_sums[: n - 1]
    lower = np.asarray(boundary.lower[: n - 1], dtype=np.float64) + C
    upper = np.asarray(boundary.upper[: n - 1], dtype=np.float64) + C
    use_lower = bool(np.any(lower > -np.inf))
    use_upper = bool(np.any(upper < np.inf))
    return Thresholds(
        lower=lower if use_lower else None,
        upper=upper if use_upper else None,
        mass=(
            np.asarray(boundary.mass[: n - 1], dtype=np.float64)
            if boundary.uses_mass and (use_lower or use_upper)
            else None
        ),
    )
