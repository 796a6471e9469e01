"""``evaluate_blocked``: route a call to its term source, choose its path, run it.

Paths (reported as :attr:`attentive.outcome.Evaluation.path`):

* ``"budget"``: Algorithm 2, the first ``B`` terms of every row (:mod:`~attentive.evaluator.totals`);
* ``"full"``: every term of every row, no stop — for the full rule, where the caller asks for it,
  or where the pilot predicts that walking would cost more than this
  (:mod:`~attentive.evaluator.pilot`); every example then gets the full model's decision;
* ``"walk"``: the rule's stops, found block by block for the walks still going
  (:mod:`~attentive.evaluator.walk`), in chunks of rows on the evaluator's threads; tiny problems
  in one go; sparse linear models by their own search;
* ``"triage"`` (``path="auto"`` only, a sketched walk of a dense RBF model): the rows whose walk
  stops within its first positions (as many as the pilot prices cheapest,
  :data:`~attentive.evaluator.pilot.THEN_FULL_POSITIONS`) stop there, found by the sketch's
  one pass over the rows (:mod:`~attentive.evaluator.triage`; those its bound leaves unsure,
  by their walk), and every other row is evaluated in full — where the pilot prices that below
  the walk and :data:`~attentive.evaluator.pilot.TRIAGE_MARGIN` of full evaluation, on rows
  over :data:`TRIAGE_PATH_COLUMNS` columns. A row's outcome is then the rule's where the rule
  stops it within those positions and the full model's elsewhere, so it disagrees with the
  full model only where the rule does; which it is depends on the row alone.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from attentive.boundaries import Boundary
from attentive.evaluator.crossing import stops_of
from attentive.evaluator.pilot import pilot_for, rows_key
from attentive.evaluator.plan import block_schedule, thresholds, walk_plan
from attentive.evaluator.rows import as_rows
from attentive.evaluator.sources import build_source, source_for, sources
from attentive.evaluator.sources.sketch import SketchedSource, is_sketched
from attentive.evaluator.threads import (
    PARALLEL_MIN_ELEMENTS,
    default_n_jobs,
    resolve_n_jobs,
    run_tasks,
    split_rows,
)
from attentive.evaluator.totals import MIN_CHUNK, totals
from attentive.evaluator.triage import (
    merged,
    triage,
    triage_ns,
    triage_positions,
    triageable,
)
from attentive.evaluator.walk import Stops, settle, walk_rows, walk_whole, whole_sums
from attentive.heads import TiledRows
from attentive.outcome import (
    Evaluation,
    budget_evaluation,
    check_boundary_length,
    finish_evaluation,
)
from attentive.validation import check_path, check_precision, check_size
from attentive.walk import Walk

__all__ = ["evaluate_blocked", "rejects_non_finite", "resolved_precision"]

# Walking buffers hold block × chunk values; chunks are wide (the cost beyond the terms is mostly
# per-call overhead of per-position vector operations, so smaller, cache-sized tiles measured
# slower).
_TILE_ELEMENTS = 2**21
_MAX_CHUNK = 8192
# A source that reads the rows in (TermSource.reads_ahead) takes the products of the walk's first
# blocks then, while each tile is in cache, up to this many blocks and positions.
_READ_AHEAD_BLOCKS = 2
_READ_AHEAD_MAX = 64
_SMALL_PROBLEM = 2**15  # examples × terms at or below which one tile covers everything
# A walk takes one thread per whole WALK_ROWS_PER_THREAD rows (a second from twice as many).
# Its chunks hold the interpreter lock for most of their many small operations, so two threads
# walking a few thousand rows between them wait on each other: forced walks, one thread against
# two on this workplace's 2 cores (medians of 11), took 1.29-1.41 times as long with two on
# MNIST 8 vs the rest at 500-2,000 rows and 1.06 at 3,000, 0.94 at 5,000, 0.86 at 7,000; 3 vs
# the rest 1.32-1.48 at 500-3,000 rows, 1.17 at 5,000, 1.05 at 7,000, 0.84 at 10,000; the
# dashboard's default (673 rows, 633 terms) 1.42, where one thread walks in 0.93 of a full
# evaluation's time. The trade: between 4,096 and about 7,000 rows, walks like 3 vs the rest's
# still take two threads that cost them up to 17 %. (The pilot prices a chunk's fixed costs over
# as many rows, pilot.NOMINAL_CHUNK_ROWS.) Which rows stop where does not depend on it.
WALK_ROWS_PER_THREAD = 2048
#: Path "triage" is for rows over more columns than this, and takes float32 ones in float32
#: first (:func:`attentive.evaluator.triage.triage`, ``single``: over MNIST's 784, 556-1,343 ns
#: a row against 852-1,648 in double precision; over 50, 409 against 268). Narrower rows walk or
#: are evaluated in full: 8 against the rest behind a PCA(50), priced 0.64 of a full evaluation
#: against its walk's 0.73, measured 0.71 / 0.67 (one thread / two) against 0.63 / 0.56.
TRIAGE_PATH_COLUMNS = 64
#: ... and a chunk of fewer rows than this in double precision at once: the float32 pass's own
#: bound and the second triage of what it leaves unsure cost more than they save on a few rows
#: (one MNIST row a call: 666 against 949 µs on 5 vs 8, same decisions).
SINGLE_TRIAGE_ROWS = 64
# A walk takes a second thread only where the pilot prices a row's walk at this or more (one
# thread, pilot.Pilot.walk_ns): below it a chunk's time is mostly small operations under the
# interpreter lock, and two threads take longer than one. Walks of MNIST behind a PCA(50)
# (7,000 rows of 50 columns given transformed, priced at 0.6-1.0 µs a row) took 1.15-1.2 times
# as long with two threads as with one (5 and 8 against the rest, 2026-11-30), where full
# evaluation ran 1.5-1.8 times faster; MNIST 8 against the rest on its pixels (~2.9 µs a row)
# took 0.8-1.16 of one thread's time with two over five runs of one session (a noisy machine).
# Set before a wide row's holding was priced (TermSource.held_ns), it is compared with the
# walk's price without that part (Pilot.unheld_walk_ns): with it, the walks of 3 and 0 against
# the rest (~1.4 and ~1.0 µs a row without) took two threads and ran 8-14 % slower than on one
# (n_jobs=2, medians of 11, 2026-12-02). Walks priced above it ran from 18 % slower (8 vs the
# rest) to 11 % faster (9 vs the rest at C = 10) on two threads in the same runs: a noisy trade.
THREADED_WALK_NS = 2000.0


def _read_ahead(schedule) -> int:
    """The leading positions whose products a source reading the rows in takes as it reads them:
    the first :data:`_READ_AHEAD_BLOCKS` blocks, or fewer, within :data:`_READ_AHEAD_MAX`.

    Every row goes through the first block, and most through the second: a walk gathers the
    rows still going only where that costs less than carrying the stopped ones through the
    next block, which it seldom does after a short first block. Products taken in cache cost
    a fraction of a block's own pass over the rows (a read of every row held for a few
    products each), so the rows that stop in the first block cost little extra there. MNIST 8
    against the rest (first blocks of 8 and 16 positions, 7,000 rows, one thread; in-process
    A/B, medians of 15): the walk took 16.5 ms reading two blocks ahead, 18.2 one, 19.2 none,
    16.9 three; 3 against the rest 15.1, 15.3, 16.6 and 16.5."""
    edges = schedule.edges[: _READ_AHEAD_BLOCKS + 1]
    within = edges[edges <= _READ_AHEAD_MAX]
    return int(within[-1]) if within.size else 0


def resolved_precision(precision: str | None) -> str:
    """``"single"`` (float32 products with a certified error bound where a source has them) or
    ``"double"``, from what a caller may pass (``"auto"`` and ``"mixed"`` mean ``"single"``)."""
    precision = check_precision(precision) or "auto"
    return "double" if precision == "double" else "single"


def rejects_non_finite(walk: Walk, X) -> bool:
    """Whether :func:`evaluate_blocked` raises :class:`~attentive.errors.NonFiniteInput` for any
    example of ``X`` with a NaN or infinite value: kernel models with dense support vectors on a
    dense array, with no transform before the kernel. Every dense kernel source checks the rows
    it holds (an RBF source from the squared norms it computes anyway: a finite one proves its
    row finite; a grid copy by its bound; a dot-kernel source value by value). Elsewhere there is
    no such guarantee: non-finite values may be evaluated as they are (the estimator checks
    them)."""
    terms = walk.terms
    import scipy.sparse as sp

    return (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and terms.head is None
        and terms.kind == "kernel"
        and not sp.issparse(terms.support_vectors)
        and walk.n_terms >= 1
    )


def _alternatives(routed, walk, plan, X1, precision) -> list:
    """The sources ``routed.alternatives`` names for rows like ``X1`` that are usable there."""
    by_kind = {cls.kind: cls for cls in sources()}
    return [
        by_kind[kind]
        for kind in routed.alternatives(X1)
        if kind in by_kind and by_kind[kind].usable(walk, plan, X1, precision)
    ]


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
    threshold: float | None = None,
    stopped_score: str = "estimate",
    path: str = "auto",
    reference=None,
):
    """Evaluate raw examples ``X`` under ``boundary``, computing only the terms that are needed.

    With ``path="walk"``, the same result as ``apply_boundary(walk.partial_scores(X), boundary,
    theta_s, walk.offset, classes)`` (SPEC §2 stopping rule: first ``t < n`` beyond a
    threshold): the same stops, sides and labels, decision values to within the precision below.

    Parameters
    ----------
    walk : Walk
    X : array-like or sparse matrix of shape (n_examples, n_features)
        Raw examples (the pipeline head, if any, is applied here).
    boundary : Boundary
    theta_s : float
        Decision threshold in S space.
    chunk_size : int, optional
        Examples walked together; default: sized so that a block's buffers stay bounded.
    block_size : int, optional
        Walk positions per block; default: from the pilot's survival curve
        (:mod:`attentive.evaluator.pilot`; 16, doubling up to 64, without one).
    n_jobs : int, optional
        Threads, ``-1`` for every usable core (``-2`` all but one, as scikit-learn reads
        ``n_jobs``); default :func:`default_n_jobs` (small problems always use one, a walk one per
        :data:`WALK_ROWS_PER_THREAD` rows at most and one where its rows are cheap
        (:data:`THREADED_WALK_NS`), and kernel models with sparse support vectors on sparse rows
        one, whose product holds the GIL).
    precision : {"auto", "single", "double"}, optional
        ``"auto"`` (default) and ``"single"``: RBF models over more than 64 dense features compute
        their products in float32 with a certified bound on every term's error; a walk stops
        only where the bound makes its crossing certain (the rest are walked again in double
        precision) and a label is decided in double precision wherever the bound leaves its side
        of θ unsure. Stops, sides and labels are those of double precision; decision values are
        within the bound (about 1e-6 of ``Σ|w h|``; docs/speed.md). ``"double"``: double
        precision throughout (decision values to about 1e-12). Data on an integer grid (8-bit
        images / 255 in float64) takes exact float32 products at either precision.
    threshold : float, optional
        θ on the decision scale (default ``offset + theta_s``); decisions lie on their predicted
        side of it.
    stopped_score : {"estimate", "boundary"}, default "estimate"
        What a stopped walk scores (SPEC §2; see :func:`attentive.outcome.finish_evaluation`).
    path : {"auto", "walk", "full"}, default "auto"
        ``"walk"``: always walk the rule. ``"full"``: evaluate every term (no stop; the full
        model's decisions). ``"auto"``: walk unless the pilot predicts that walking costs more
        than evaluating every term, or walking can never pay (a linear model on sparse rows);
        then evaluate in full — or, for a sketched walk where the pilot prices it cheaper than
        both, stop the rows its first checks stop (as many as the pilot prices cheapest) and
        evaluate the others in full (path ``"triage"``, module docstring). Budgeted rules are unaffected.
    reference : array-like, optional
        Rows prepared for the walk (``walk.prepare``) whose stops make the pilot for every call
        under ``boundary`` (:mod:`attentive.evaluator.pilot`): with them, ``path="auto"``
        chooses the same path for a row whatever rows it is evaluated with, so a row's outcome
        never depends on its batch. Without them, the first call of at least
        :data:`~attentive.evaluator.pilot.PILOT_MIN` rows makes the pilot, and calls before it
        walk.

    Returns
    -------
    Evaluation
        With ``path`` saying which path ran.

    Raises
    ------
    NonFiniteInput
        A ValueError, for an example with a NaN or infinite value where
        :func:`rejects_non_finite` says so.
    """
    chunk_size = check_size(chunk_size, "chunk_size")
    block_size = check_size(block_size, "block_size")
    n_jobs = check_size(n_jobs, "n_jobs", negative=True)
    n_jobs = default_n_jobs() if n_jobs is None else resolve_n_jobs(n_jobs)
    precision = resolved_precision(precision)
    path = check_path(path)
    n = walk.n_terms
    classes = np.asarray(walk.terms.classes)
    # A StandardScaler in front is applied a tile at a time, as the tiles are taken.
    Xp = walk.terms.prepare_by_tiles(X)
    if not isinstance(Xp, TiledRows):
        Xp = as_rows(Xp)
    if Xp.ndim != 2:
        raise ValueError(
            f"expected examples as a 2-D array (n_examples, n_features); got shape {Xp.shape}"
        )
    m = Xp.shape[0]
    check_boundary_length(boundary, n)
    # A sketched walk: its start and residual terms over the source of its plain walk's terms
    # (the same terms, in the sketched walk's order); its full and budgeted sums are that plain
    # walk's.
    sketched = is_sketched(walk)
    base = walk.walk if sketched else walk
    plan = walk_plan(walk)
    base_plan = walk_plan(base) if sketched else plan
    offset = plan.offset
    C, base_C = plan.centring_sums, base_plan.centring_sums

    if boundary.kind == "budget":
        B = int(boundary.budget)
        # (n/B)(U_B − C_B) ≥ θ_S  ⟺  U_B ≥ θ_S B/n + C_B
        final = theta_s * B / n + base_C[B - 1]
        U = totals(base, base_plan, Xp, B, precision, final, chunk_size, n_jobs)
        estimate = (n / B) * (U - base_C[B - 1])
        return budget_evaluation(estimate, B, n, theta_s, offset, threshold, classes)

    thr = thresholds(plan, boundary)
    final = float(theta_s + C[n - 1]) if n else None  # a label compares U_n with this
    source_cls = source_for(base, base_plan, Xp[:1], precision) if m and n else None

    def source_maker(routed):
        def make_source(Xc, precision=precision, cls=routed, ahead_positions=0, features=None):
            inner = build_source(
                base, base_plan, Xc, precision, cls=cls, ahead_positions=ahead_positions
            )
            return SketchedSource(inner, walk, plan, Xc, features) if sketched else inner

        return make_source

    make_source = source_maker(source_cls)

    tiny = block_size is None and chunk_size is None and m * n <= _SMALL_PROBLEM
    pilot = None
    if source_cls is not None and thr.stops_anything and path != "full":
        if path == "auto" and not getattr(source_cls, "walking_pays", True):
            path = "full"
        elif block_size is None:
            # Tiny problems too: with reference rows (or a kept pilot) the choice of path, and
            # with it each row's outcome, is the same whatever rows come with it.
            if reference is not None:
                reference = as_rows(reference)
            full_cls = source_for(base, base_plan, Xp[:1], precision, full=True)
            kind = rows_key(source_cls, full_cls, Xp, precision)
            summed: dict = {}  # (the sample's exact walks, summed once for every kind priced)
            # A sketched walk's first positions taken with its sketch (attentive.evaluator.
            # triage), where the pilot prices that cheaper.
            b = triage_positions(n) if triageable(walk, Xp[:1]) else 0
            tri = (b, functools.partial(triage_ns, walk)) if b else None
            pilot = pilot_for(
                plan, boundary, thr, kind, Xp, make_source, reference, full_cls, final, summed, tri
            )
            # Another source that walks these rows to the same stops (float32 rows near the
            # pixel grid: the grid's integer products, or the float32 source's without the
            # conversion): the one priced cheaper walks.
            for other in _alternatives(source_cls, base, base_plan, Xp[:1], precision):
                maker = source_maker(other)
                kind = rows_key(other, full_cls, Xp, precision)
                priced = pilot_for(
                    plan, boundary, thr, kind, Xp, maker, reference, full_cls, final, summed, tri
                )
                if pilot is not None and priced is not None and priced.walk_cost < pilot.walk_cost:
                    source_cls, make_source, pilot = other, maker, priced
            if path == "auto" and pilot is not None:
                if b and pilot.then_full_pays and Xp.shape[1] > TRIAGE_PATH_COLUMNS:
                    path = "triage"
                elif not pilot.walk_pays:
                    path = "full"
    if not thr.stops_anything or m == 0 or n == 0 or path == "full":
        s_n = np.zeros(m)
        if m and n:
            full_final = float(theta_s + base_C[n - 1])
            U = totals(base, base_plan, Xp, n, precision, full_final, chunk_size, n_jobs)
            s_n = U - base_C[n - 1]
        ev = finish_evaluation(
            boundary,
            s_n=s_n,
            n_evaluated=np.full(m, n, dtype=np.int64),
            stop_side=np.zeros(m, dtype=np.int8),
            stop_scores=np.full(m, np.nan),
            theta_s=theta_s,
            offset=offset,
            threshold=threshold,
            classes=classes,
            stopped_score=stopped_score,
            path="full",
        )
        return _priced(ev, pilot)

    n_evaluated = np.full(m, n, dtype=np.int64)
    stop_side = np.zeros(m, dtype=np.int8)
    s_n = np.full(m, np.nan)
    stop_u = np.full(m, np.nan)  # the rule's statistic (uncentred) at the stop

    def record(lo, res: Stops, summed=None):
        n_evaluated[lo + res.at[:, 0]] = res.at[:, 1]
        stop_side[lo + res.at[:, 0]] = res.side
        stop_u[lo + res.at[:, 0]] = res.value
        if summed is None:
            s_n[lo + res.rows] = res.U - C[n - 1]
        else:  # (rows evaluated in full: S_n from the plain walk's sums)
            s_n[lo + res.rows] = summed

    # Path "triage": the positions its pilot priced cheapest (each row's outcome depends on
    # the pilot's sample, not on the rows that come with it).
    first = pilot.then_full_positions if path == "triage" else 0
    if tiny and path == "triage" and m * n > _SMALL_PROBLEM // 4:
        tiny = False  # (every term in double precision costs more than the triage by then)
    if tiny:
        # A tiny problem in one go, in double precision (no band to settle). On path "triage"
        # its stops within the triage's positions (exact: the triage's too), every term of the
        # other rows. One MNIST 4 vs 9 row a call took 2.5 times a full evaluation through the
        # triage's pass and a full evaluation of what it left, 1.7 times this way (10 rows: 1.9
        # against 1.65); at 100 rows the triage was the cheaper (1.65 against 2.05), hence a
        # quarter of the tiny size on this path.
        whole = np.asarray(Xp) if isinstance(Xp, TiledRows) else Xp
        source = make_source(whole, "double", None)
        if path != "triage":
            record(0, walk_whole(source, thr))
        else:
            V, U, _ = whole_sums(source, thr)
            at, side = stops_of(V, thr.lower, thr.upper)
            late = at > first
            at[late], side[late] = n, 0
            record(0, Stops.of_all(at, side, V[np.arange(m), at - 1], U[:, n - 1]))
    else:
        schedule = pilot.schedule if pilot is not None else block_schedule(n, block_size)
        survival = None if pilot is None else pilot.stops
        one_thread = getattr(source_cls, "single_thread", False)
        cheap = pilot is not None and pilot.unheld_walk_ns < THREADED_WALK_NS
        cheap = cheap and path != "triage"  # (a triage's rest: full evaluation's large products)
        few = one_thread or cheap or m * n < PARALLEL_MIN_ELEMENTS
        jobs = 1 if few else max(1, min(n_jobs, m // WALK_ROWS_PER_THREAD))
        step = chunk_size or max(
            MIN_CHUNK, min(_MAX_CHUNK, _TILE_ELEMENTS // int(schedule.sizes.max()))
        )

        def triage_chunk(Xc):
            # Path "triage": the rows whose walk stops within the triage's positions stop there
            # (those its bound leaves unsure: as their walk says), every other row is evaluated
            # in full. Which rows stop depends on the row alone. Float32 rows are triaged in
            # float32 first, the rows that leaves unsure again in double precision.
            single = precision == "single" and isinstance(Xc, np.ndarray)
            single = single and Xc.dtype == np.float32 and Xc.shape[1] > TRIAGE_PATH_COLUMNS
            single = single and Xc.shape[0] >= SINGLE_TRIAGE_ROWS
            tri = triage(walk, plan, Xc, thr, first, single=single)
            decided, rest, unsure = tri.decided, tri.rest, tri.unsure
            if single and unsure.size:
                again = triage(walk, plan, Xc[unsure], thr, first)
                decided = _joined(decided, again.decided, unsure)
                rest = np.setdiff1d(rest, unsure[again.decided.at[:, 0]], assume_unique=True)
                features = again.features[np.searchsorted(again.rest, again.unsure)]
                unsure = unsure[again.unsure]
            elif unsure.size:
                features = tri.features[np.searchsorted(rest, unsure)]
            if unsure.size:
                walked = walk_held(Xc[unsure], features)
                early = walked.at[:, 1] <= first
                decided = _joined(decided, _only(walked, early), unsure)
                rest = np.setdiff1d(rest, unsure[walked.at[early, 0]], assume_unique=True)
            summed = np.zeros(0)
            if rest.size:
                U = totals(base, base_plan, Xc[rest], n, precision, full_final, None, 1)
                summed = U - base_C[n - 1]
            return dataclasses.replace(decided, rows=rest, U=summed), summed

        def walk_chunk(Xc):
            if path == "triage":
                return triage_chunk(Xc)
            if not triaged:
                return walk_held(Xc)
            # The first positions with the sketch's pass; the other rows walked from the start.
            tri = triage(walk, plan, Xc, thr, triaged)
            if tri.rest.size == 0:
                return merged(tri, Stops.of_all(*[np.zeros(0, np.int64)] * 4))
            return merged(tri, walk_held(Xc[tri.rest], tri.features))

        def walk_held(Xc, features=None):
            source = make_source(Xc, ahead_positions=_read_ahead(schedule), features=features)
            found = source.walk_chunk(thr) if source.walks_itself else None
            if found is not None:
                return Stops.of_all(*found)
            res = walk_rows(source, schedule, thr, final, survival)
            if not source.certified:
                return res

            def walk_exact(rows):
                return walk_rows(source.exact_source(Xc[rows]), schedule, thr)

            return settle(source, Xc, res, final, walk_exact)

        def task(lo, hi):
            return lambda: walk_chunk(Xp[lo:hi])

        triaged = pilot.triage if pilot is not None else 0
        full_final = float(theta_s + base_C[n - 1])
        ranges = split_rows(m, step, jobs)
        for (lo, _hi), res in zip(
            ranges, run_tasks([task(lo, hi) for lo, hi in ranges], jobs, one_blas=True), strict=True
        ):
            record(lo, *res) if path == "triage" else record(lo, res)

    # S_t = U_t − C_t at each stop (V_t = U_t + κ_t A_t − C_t for a rule on the running mass).
    stop_scores = stop_u - C[np.maximum(n_evaluated, 1) - 1]
    ev = finish_evaluation(
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
        path=path if path == "triage" else "walk",
    )
    if sketched:  # the sketch's work, beside the exact terms counted in n_evaluated
        ev = dataclasses.replace(
            ev, sketch_cost=walk.sketch.cost, walked_term_cost=walk.sketch.walked_term_cost
        )
    return _priced(ev, pilot)


def _only(stops: Stops, kept: np.ndarray) -> Stops:
    """The stops ``kept`` (a mask over ``stops.at``'s rows) of ``stops``."""
    return Stops(
        rows=np.zeros(0, dtype=np.int64),
        U=np.zeros(0),
        at=stops.at[kept],
        side=stops.side[kept],
        value=stops.value[kept],
        unsure=np.zeros(0, dtype=np.int64),
    )


def _joined(stops: Stops, more: Stops, rows: np.ndarray) -> Stops:
    """``stops`` and the stops ``more`` of rows ``rows`` (``more``'s rows are positions in it)."""
    return dataclasses.replace(
        stops,
        at=np.concatenate([stops.at, np.column_stack([rows[more.at[:, 0]], more.at[:, 1]])]).astype(
            np.int64
        ),
        side=np.concatenate([stops.side, more.side]).astype(np.int8),
        value=np.concatenate([stops.value, more.value]),
    )


def _priced(ev: Evaluation, pilot) -> Evaluation:
    """``ev`` with the pilot's predicted time of a row's walk (or of its triage and full
    evaluation, on path ``"triage"``) as a fraction of a full evaluation's
    (``Evaluation.predicted_cost``), where a pilot priced it."""
    if pilot is None or not pilot.full_cost:
        return ev
    cost = pilot.then_full_cost if ev.path == "triage" else pilot.walk_cost
    return dataclasses.replace(ev, predicted_cost=float(cost / pilot.full_cost))
