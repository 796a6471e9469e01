"""The pilot: where walks under a boundary are expected to stop, and from that, whether walking
pays and which blocks to walk in.

A sample of walks (every row's terms computed at once, in double precision, the stops found as
the reference finds them) gives a survival curve: the share of walks still going at each
position. :func:`attentive.evaluator.plan.survival_schedule` turns it into the cheapest blocks
for a kind of term source and their predicted cost per walk, in units of one term of a full
evaluation; a full evaluation costs ``n`` such units. The evaluator walks only where the walk is
predicted to cost less (:attr:`Pilot.walk_pays`).

The sample is the same for every call under a boundary, so whether a row is walked or evaluated
in full (and with it its outcome) never depends on the other rows of its call:

* ``reference`` rows given by the caller (an :class:`~attentive.estimator.AttentiveClassifier`
  passes rows kept in ``fit``: of its calibration set, else of its reference set) are the
  sample for every call, however few rows it has;
* without them, the first call of at least :data:`PILOT_MIN` rows lends a sample of its own rows
  (its rows are evaluated again with the others), kept for the calls after it; calls before it
  walk.

The stops are kept per (walk, boundary); the schedule and costs per kind of rows (:func:`rows_key`:
the source they are walked by, the one full evaluation takes, sparse or dense, their dtype and
the precision), so that a call's path never depends on the kind of rows an earlier call had.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.crossing import stops_of
from attentive.evaluator.plan import BlockSchedule, Thresholds, WalkPlan, survival_schedule
from attentive.evaluator.walk import TRIANGULAR_MAX, whole_sums

__all__ = [
    "PILOT_MIN",
    "PILOT_ROWS",
    "Pilot",
    "pilot_for",
    "pilot_rows",
    "rows_key",
    "walked_again",
]

# Calls below PILOT_MIN rows lend no rows to a pilot (they walk, or use one kept from reference
# rows or an earlier call); a pilot walks PILOT_ROWS rows spread over the sample.
PILOT_MIN = 256
PILOT_ROWS = 128
# Walk only where the pilot predicts clearly less than a full evaluation. The cost model's
# predictions have run 1.3-1.9 times short of measured walks (docs/speed.md, "The cost model"):
# a walk predicted at 0.85-0.92 of a full evaluation measured 1.17, one predicted at 0.62
# measured 0.79. At 0.7 the first went to full evaluation and the second still walked; with a
# walk's rows priced (WALK_ROW_NS) the prediction runs less short, and the margin is 0.75.
# Since wide rows' holding is priced too (TermSource.held_ns, 2026-12-02), MNIST's walks are
# predicted within a factor of 1.5 either way (docs/speed.md), and the margin stands for a
# second thread: full evaluation runs 1.6-1.7 times faster on two, a walk little (its small
# calls queue for the interpreter), so a walk at 0.6-0.7 of a full evaluation on one thread
# takes 0.8-1.1 of it on two (2 vs 5: 0.59-0.71, and 0.77-1.11).
WALK_MARGIN = 0.75
# What a walk spends per row beyond its blocks, its start and its positions: the rows' outcome
# (stop, side, statistic), the survivors' bookkeeping from block to block, the call's arrays
# per row. Fitted to walks of narrow rows, where it weighs most (MNIST behind a PCA(50), rows
# given transformed, one thread, 2026-11-30): priced at 0.61, 0.46 and 0.32 of a full
# evaluation without it, 1 vs 7, 2 vs 5 and 5 vs the rest measured 0.94-0.98, 0.69 and
# 0.46-0.50 — 100-170 ns a row short. On MNIST's pixels a row's full evaluation is ~4 µs, and
# this adds ~0.04 of it.
WALK_ROW_NS = 150.0
# A walk's position costs a fixed time per chunk of rows, however few of its rows still walk:
# its running sums are one vector operation a position (two with the running mass or a band),
# and each block's product, exponentials and comparisons a few more — ~1 µs a position and
# sum in all, fitted to walks of 300-3,000 rows (one thread; time = fixed + rows × per row):
# 4.0 ms for dense-40's 3,520 positions (one sum), 1.5 ms for mnist-8vrest's 553 (two), 1.1
# ms for mnist-8vrest-std's 684 (two), 0.64 ms for grid-2v5's 475 (one). It is shared by the
# rows of a chunk, taken as NOMINAL_CHUNK_ROWS — a call of a few thousand rows cut into one
# chunk a thread — so that the path never depends on the call's size or thread count. Held by
# one thread at a time (most of it is call overhead under the interpreter lock), it is what
# walks of thousands of cheap terms spend: dense-40's sketched walk measured 0.70 of a full
# evaluation on one thread and 1.2-1.6 on two, where full evaluation runs twice as fast
# (docs/speed.md, "The cost model"; before the support vectors entered the residual order).
POSITION_NS = 1000.0
NOMINAL_CHUNK_ROWS = 2048
# The positions are priced as POSITION_THREADS threads pay them: held under the interpreter lock,
# each thread's chunk waits for the others' positions, so a walk of many cheap positions gains
# nothing from a second thread while full evaluation runs 1.6-1.8 times faster. Priced for one
# thread (and with every support vector in the residual order), walks of make_classification
# rows with 10-40 features took 0.52-0.70 of a full evaluation on one thread and 1.34-1.64 on
# two, dense-40's 0.56 and 0.99-1.04 (2026-11-29, docs/speed.md); priced for two they are
# evaluated in full, and MNIST's walks against the rest (600-900 positions over 700 columns,
# 0.48-0.69 of a full evaluation predicted) still walk. A constant, not the call's thread
# count: a row's path, and so its outcome, must not depend on it. The trade: one thread gives
# up those walks' savings, and with more threads than two (the default runs up to 8) such walks
# are still priced below what they cost. Calls of fewer than 4,096 rows walk on one thread
# (blocked.WALK_ROWS_PER_THREAD) and are priced as the larger calls are.
POSITION_THREADS = 2
#: Gathering a row a triage leaves to full evaluation, ns a feature (a copy of its values:
#: 0.3-0.5 ms for the ~1,700 rows of 784 float32 values that MNIST 4 vs 9's triage leaves of
#: 6,970; one thread, 2026-12-02).
GATHER_NS = 0.3
#: The triage's pass, priced as a walk's features and first positions are
#: (:func:`attentive.evaluator.triage.triage_ns`), times this. On one thread it measures 0.9-1.15
#: of that price (float32 products over 784 columns: 556-1,343 ns a row on seven MNIST problems,
#: 7,000 rows, 2026-12-02); on two threads it gains ~1.3 where full evaluation gains ~1.8, so
#: relative to full evaluation it costs ~1.4 times as much there. Between the two.
TRIAGE_PASS_THREADS = 1.3
#: Path "triage" is taken where it is priced below the walk and below this share of full
#: evaluation: the rows it leaves are evaluated in full, as fast on two threads as that is, and
#: its pass is priced for both thread counts already (TRIAGE_PASS_THREADS), so the margin is
#: for the model's error. Priced 0.49-0.75 of a full evaluation on four MNIST problems, it
#: measured 0.34-0.86 on one thread and 0.85-0.94 on two (the walks it replaced: priced
#: 0.52-0.99, measured 0.51-0.92 and 0.98-1.56; 2026-12-02, docs/speed.md).
TRIAGE_MARGIN = 0.85
#: The positions path "triage" may take before it evaluates the rows it leaves in full: the
#: pilot prices each (its triage's pass, and every term of the sample's walks stopping past
#: them) and takes the cheapest. Later positions stop more rows (MNIST pairs as float32 pixels
#: / 255, 7,000 rows: 34 % by position 1 against 67 % by 16 on 7 vs 9 at C = 10, 59 % against
#: 85 % on 2 vs 5 standardised) at a column of every row's product and a few passes over the
#: rows a position.
THEN_FULL_POSITIONS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Pilot:
    """A sample of walks' stops and what they predict for one kind of term source.

    Attributes
    ----------
    stops : ndarray of int
        Stop positions (1-based; ``n`` for walks that never stop) of the pilot's walks.
    schedule : BlockSchedule
        The cheapest blocks for walks like these.
    walk_cost, full_cost : float
        Predicted cost per row of walking with ``schedule`` and of evaluating every term, in
        units of one term of a full evaluation.
    term_ns : float
        That unit in ns (one term of a full evaluation on one thread, this machine's model).
    triage : int
        The positions a triage takes before the walk (:mod:`attentive.evaluator.triage`; the
        schedule is then the other rows'), 0 for none: where it is priced cheaper.
    held_cost : float
        The part of ``walk_cost`` that the rows it holds from their start add
        (:attr:`~attentive.evaluator.sources.base.TermSource.held_ns`), same units.
    then_full_cost : float or None
        Predicted cost per row (same units) of the triage with every term of the rows it does
        not stop (``path="triage"``:
        :func:`attentive.evaluator.blocked.evaluate_blocked`); None where no triage can
        take the rows.
    then_full_positions : int
        The positions that triage takes (of :data:`THEN_FULL_POSITIONS`, the cheapest), 0
        where no triage can take the rows.
    first_position_cost : float or None
        The same path's price over the first position alone: what is weighed against the walk
        (:attr:`then_full_pays`).
    """

    stops: np.ndarray
    schedule: BlockSchedule
    walk_cost: float
    full_cost: float
    term_ns: float
    triage: int = 0
    held_cost: float = 0.0
    then_full_cost: float | None = None
    then_full_positions: int = 0
    first_position_cost: float | None = None

    @property
    def walk_ns(self) -> float:
        """Predicted time of a row's walk, ns (one thread)."""
        return self.walk_cost * self.term_ns

    @property
    def unheld_walk_ns(self) -> float:
        """:attr:`walk_ns` without its held rows' part: what a walk's second thread is decided
        on (``blocked.THREADED_WALK_NS`` was set before that part was priced)."""
        return (self.walk_cost - self.held_cost) * self.term_ns

    @property
    def walk_pays(self) -> bool:
        """Whether walking is predicted to cost clearly less than evaluating every term: at
        most :data:`WALK_MARGIN` of a full evaluation (the prediction has run short of
        measured walks, docs/speed.md)."""
        return self.walk_cost <= WALK_MARGIN * self.full_cost

    @property
    def then_full_pays(self) -> bool:
        """Whether the triage with every term of the rows it leaves is predicted cheaper than
        the walk (over its first position: :attr:`first_position_cost`) and, by
        :data:`TRIAGE_MARGIN`, than evaluating every term (over its positions).

        Against the walk, the first position's price is what the choice was measured with
        (2026-12-02). Over more positions the path is priced well against full evaluation
        (within 0.05 of its one-thread time on three MNIST pairs at 1-8 positions) but not
        against the walk, whose price runs from 1.8 times its one-thread time (8 vs the rest) to
        0.6 times its two-thread time (4 vs 9): on 8 vs the rest, over 16 positions it was
        priced at 0.84 of the walk and took 1.6 times the walk's time on one thread, the same
        on two (7,000 rows, medians of 7, 2026-12-03)."""
        cost, first = self.then_full_cost, self.first_position_cost
        return (
            cost is not None
            and first is not None
            and first < self.walk_cost
            and cost <= TRIAGE_MARGIN * self.full_cost
        )

    @property
    def evaluated_fraction(self) -> float:
        n = int(self.schedule.edges[-1])
        return float(np.mean(self.stops) / n) if n else 1.0


def pilot_rows(m: int) -> np.ndarray:
    """The rows of a call of ``m`` rows that its pilot walks: spread evenly (data sorted by
    class would mislead a pilot of the first rows); none below :data:`PILOT_MIN`."""
    if m < PILOT_MIN:
        return np.zeros(0, dtype=np.int64)
    return _spread(m, min(PILOT_ROWS, m // 2))


def _spread(m: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, m - 1, k).astype(np.int64))


def rows_key(source_cls, full_cls, X, precision) -> tuple:
    """What a pilot's costs depend on besides its stops: the source the call's rows are walked
    by and the one full evaluation takes for them, whether they are sparse, their dtype (the
    sources' preparation costs differ: float32 rows against float64 ones) and the precision."""
    dtype = getattr(X, "dtype", None)
    return (source_cls, full_cls, sp.issparse(X), None if dtype is None else dtype.str, precision)


def pilot_for(
    plan: WalkPlan,
    boundary,
    thr: Thresholds,
    kind,
    X,
    make_source,
    reference=None,
    full_cls=None,
    final: float | None = None,
    summed: dict | None = None,
    triage: tuple[int, float] | None = None,
) -> Pilot | None:
    """The pilot kept for (walk, boundary, ``kind`` of rows: :func:`rows_key`), made if there
    is none yet.

    Its stops are the boundary's kept sample, else walks of ``reference`` rows (already
    prepared for the walk), else of rows of ``X`` if it has at least :data:`PILOT_MIN` (else
    None: no pilot). ``make_source(rows, precision=None, cls=None)`` gives a source holding rows
    as the call's chunks are held (the default arguments), or as the exact double-precision
    source routed for them (``"double"``, ``None``); ``full_cls``: the source full evaluation
    takes for the call's rows, where it is not the one walks are routed to; ``final``: the
    threshold ``U_n`` is compared with (a certified source's allowance); ``summed``: a dict the
    caller keeps for the pilots of one call (of several kinds of source), which holds the
    sample's exact walks once summed (not kept with the pilot: ~3 × 128 × n values);
    ``triage``: ``(positions, price)`` of a triage the rows can take before their walk (a
    sketched walk's: :mod:`attentive.evaluator.triage`), priced against the walk without it,
    ``price(b)`` its ns a row over ``b`` positions (those of path "triage" are chosen here)."""
    kept = plan.pilots(boundary)
    pilot = kept.by_kind.get(kind)
    if pilot is not None:
        return pilot
    stops = kept.stops
    summed = {} if summed is None else summed
    exact_walks = summed.get("exact")  # the sample's exact walks, where summed in this call
    if stops is None:
        if reference is not None and reference.shape[0]:
            sample = reference[_spread(reference.shape[0], min(PILOT_ROWS, reference.shape[0]))]
        else:
            rows = pilot_rows(X.shape[0])
            if rows.size == 0:
                return None
            sample = X[rows]
        # Every term of the sample in double precision: the stops (n for a walk that never
        # stops), and with the running masses what a certified walk leaves unsure (below).
        exact_walks = summed["exact"] = whole_sums(
            make_source(sample, "double", None), thr, mass=True
        )
        stops, _ = stops_of(exact_walks[0], thr.lower, thr.upper)
        kept.stops, kept.sample = stops, sample
    # The costs of the source the call's chunks will be walked by: the routed one (or the next
    # where the sample's rows do not suit it: a float32 source with too many rows it cannot
    # hold with a useful band). Full evaluation keeps its own source (float32 rows near a grid
    # go to the float32 source, which finishes its terms in float32 there), so a walk's cost
    # is scaled by its terms' time against a term of full evaluation.
    routed = make_source(X[:1])
    full = routed if full_cls is None else make_source(X[:1], cls=full_cls)
    sample = kept.sample
    # (A sample of another kind of rows than the call's, sparse against dense, says nothing of
    # the call's chunks.)
    alike = sample is not None and sp.issparse(sample) == sp.issparse(X)
    source = make_source(sample) if alike else routed
    term_cost = source.term_cost + (source.mass_cost if thr.mass is not None else 0.0)
    n = plan.n_terms
    schedule, cost = survival_schedule(
        stops, n, source.row_cost, term_cost=term_cost, max_block=source.max_block
    )
    # In units of a term of full evaluation.
    full_ns = full.full_term_ns or full.term_ns
    # The positions walked while any of a chunk's rows walks: up to the sample's longest walk.
    sums = 2 if (thr.mass is not None or source.certified) else 1
    reached = int(stops.max(initial=0))
    shared = POSITION_THREADS * POSITION_NS * sums * reached / (NOMINAL_CHUNK_ROWS * full_ns)
    shared += WALK_ROW_NS / full_ns
    redo = 0.0  # what a certified walk leaves to double precision (below)
    if alike and source.certified:
        # What a certified walk leaves to double precision is walked again there (settle):
        # the sample's rows whose band would leave them unsure, and those it holds without one.
        if exact_walks is None:  # a kept pilot's stops, priced for another kind of rows
            exact_walks = summed["exact"] = whole_sums(
                make_source(sample, "double", None), thr, mass=True
            )
        redone, ends = walked_again(source, exact_walks, thr, final, schedule.edges)
        exact = make_source(sample[:1], "double", None)  # its costs
        again, end = float(np.mean(redone)), float(np.mean(ends))
        if again:
            _, exact_cost = survival_schedule(
                stops,
                n,
                exact.row_cost,
                term_cost=exact.term_cost + (exact.mass_cost if thr.mass is not None else 0.0),
                max_block=exact.max_block,
            )
            exact_ns = (exact_cost + exact.start_cost) * exact.term_ns + exact.prep_ns
            redo += again * exact_ns / full_ns
            if again * NOMINAL_CHUNK_ROWS > TRIANGULAR_MAX:
                # Enough of a chunk's rows walked again that their running sums are one
                # vector operation a position: that walk's positions too, to its longest.
                longest = int(stops[redone].max())
                sums = 2 if thr.mass is not None else 1
                redo += (
                    POSITION_THREADS * POSITION_NS * sums * longest / (NOMINAL_CHUNK_ROWS * full_ns)
                )
        if end:  # U_n summed again in double precision
            redo += end * (n * (exact.full_term_ns or exact.term_ns) + exact.prep_ns) / full_ns
    # (Preparing a row costs the walk's source beyond what it costs full evaluation's: the
    # double source's augmented copy against the float32 source's norms, ~0.4 of a full
    # evaluation of 270 terms over 784 features.)
    prep = (source.prep_ns - full.prep_ns) / full_ns
    held = source.held_ns / full_ns  # (every row, held by the walk from its start)
    walk_cost = (cost + source.start_cost) * source.term_ns / full_ns + prep + held
    walk_cost += shared + redo
    positions, held_cost, then_full, then_positions, first_cost = 0, held, None, 0, None
    if triage is not None and triage[0] > 0:
        # A triage (attentive.evaluator.triage): every row pays its pass (its features, priced
        # as the walk's source prices its own, and the first positions); the rows it decides,
        # the sample's walks stopped by then, nothing more; the others their preparation, their
        # holding (held_ns) and their walk from the start (their features given), in blocks
        # for their stops.
        b, price = triage
        triage_ns = price(b)
        rest = stops[stops > b]
        share = rest.size / max(1, stops.size)
        schedule_t, cost_t = schedule, 0.0
        if rest.size:
            schedule_t, cost_t = survival_schedule(
                rest, n, source.row_cost, term_cost=term_cost, max_block=source.max_block
            )
        triaged = (
            (share * cost_t + source.start_cost) * source.term_ns / full_ns
            + triage_ns / full_ns
            + (share * source.prep_ns - full.prep_ns) / full_ns
            + share * held
            + shared
            + redo
        )
        if triaged < walk_cost:
            walk_cost, schedule, positions, held_cost = triaged, schedule_t, b, share * held

        # Or no walk: the triage over the cheapest of THEN_FULL_POSITIONS, and every term of
        # the rows it does not stop (gathered, then prepared and summed as full evaluation
        # takes its rows).
        def then_full_at(c):
            left = float(np.mean(stops > c)) if stops.size else 1.0
            return (
                TRIAGE_PASS_THREADS * (source.start_cost * source.term_ns + price(c)) / full_ns
                + left * (n + GATHER_NS * X.shape[1] / full_ns)
                - (1.0 - left) * full.prep_ns / full_ns
            )

        first_cost = then_full_at(1)  # (n ≥ 2: b ≥ 1 positions, never the last)
        for c in THEN_FULL_POSITIONS:
            if c >= n:
                break
            cost = then_full_at(c)
            if then_full is None or cost < then_full:
                then_full, then_positions = cost, c
    pilot = Pilot(
        stops=stops,
        schedule=schedule,
        walk_cost=walk_cost,
        full_cost=float(n),
        term_ns=float(full_ns),
        triage=positions,
        held_cost=held_cost,
        then_full_cost=then_full,
        then_full_positions=then_positions,
        first_position_cost=first_cost,
    )
    kept.by_kind[kind] = pilot
    return pilot


def walked_again(source, sums, thr, final, edges) -> tuple[np.ndarray, np.ndarray]:
    """Which rows a walk with the certified ``source`` (holding them) leaves to double
    precision: ``(walked again, U_n summed again)``, boolean per row.

    A walk stops only where its crossing is certain under its band ``ρ(x) A (1 + max|κ|) +
    allowance`` over a block (``A`` the running mass at the block's end, ``edges`` the
    blocks; ``ρ(x) A`` split by term where the source splits it, :meth:`TermSource.
    band_split`): at the first position where its statistic comes within the band of a threshold,
    a crossing by more than the band is certain, anything else is left unsure and walked
    again (rows without a band, ``ρ = ∞``, at once). A walk that never stops keeps its
    ``U_n`` unless it ends within its band of ``final``. The statistics are the exact walks'
    (``sums``: :func:`attentive.evaluator.walk.whole_sums` of the same rows in double precision,
    with their running masses)."""
    rho = np.asarray(source.relative_error(), dtype=np.float64)
    loose = ~np.isfinite(rho)
    V, U, A = sums
    n = V.shape[1]
    if n < 2:
        return loose, np.zeros_like(loose)
    allowance = source.allowance(thr, final)
    edges = np.asarray(edges)
    last = np.repeat(edges[1:] - 1, np.diff(edges))[: n - 1]  # each position's block's last
    # Per position t < n − 1, the largest of ``values`` over its block's positions checked
    # (those below n − 1), as the walk takes a block's band.
    starts = edges[:-1][edges[:-1] < n - 1]
    counts = np.diff(np.append(starts, n - 1))

    def block_max(values):
        return np.repeat(np.maximum.reduceat(np.asarray(values)[: n - 1], starts), counts)

    spread = np.ones(n - 1) if thr.mass is None else 1.0 + block_max(np.abs(thr.mass))
    reach = np.zeros(n - 1)
    per_row = np.zeros(V.shape[0])
    row_allowance = source.row_allowance()
    if row_allowance is not None:
        per_row, profile = row_allowance
        per_row = np.where(loose, 0.0, per_row)
        reach = block_max(profile)
    finite = np.where(loose, 0.0, rho)
    per_weight, weighted = np.zeros_like(finite), np.zeros_like(A)
    split = source.band_split()
    if split is not None:  # base(x) A_t + per_weight(x) Σ_{k≤t} weight_k |w| h_k
        base, per_weight, weights = split
        finite = np.where(loose, 0.0, base)
        per_weight = np.where(loose, 0.0, per_weight)
        weighted = np.cumsum(np.diff(A, axis=1, prepend=0.0) * weights, axis=1)
    band = finite[:, None] * A[:, last] + per_weight[:, None] * weighted[:, last]
    band = band * spread + block_max(allowance) + per_row[:, None] * reach
    band[loose] = np.inf
    D = np.full((V.shape[0], n - 1), np.inf)
    if thr.lower is not None:
        D = V[:, : n - 1] - thr.lower
    if thr.upper is not None:
        D = np.minimum(D, thr.upper - V[:, : n - 1])
    near = D <= band
    approached = near.any(axis=1)
    rows = np.arange(V.shape[0])
    first = near.argmax(axis=1)
    again = approached & ~(D[rows, first] < -band[rows, first])
    if final is None:
        return again, np.zeros_like(again)
    end_band = finite * A[:, n - 1] + per_weight * weighted[:, n - 1] + allowance[-1]
    if row_allowance is not None:
        end_band = end_band + per_row * profile[-1]
    ends = ~approached & (np.abs(U[:, n - 1] - final) <= end_band)
    return again, ends
