"""``evaluate_blocked``: the evaluation path for each kind of model and input.

1. Full and budgeted evaluation never test a boundary: one product per chunk of examples
   (:func:`attentive.evaluator.dense.prefix_sums`).
2. Sparse linear models (CSR input) find stops without looping over positions
   (:mod:`attentive.evaluator.sparse`; a rule on the running mass walks them as in 4), or,
   with ``only_if_walking_pays``, are evaluated in full: one sparse product, which no walk can
   beat (:func:`walking_pays`).
3. Tiny problems compute every term at once (:func:`attentive.evaluator.dense.walk_small`).
4. Everything else walks chunks of examples over blocks of positions
   (:func:`attentive.evaluator.dense.walk_rows`; RBF kernels optionally in mixed precision,
   :mod:`attentive.evaluator.mixed`, except under a rule on the running mass, which keeps a
   second running sum and runs in double precision). A pilot of the first rows of a call,
   walked first (its results are kept), gives the survival curve from which the blocks are chosen
   (:func:`attentive.evaluator.plan.survival_schedule`); it is kept per walk and boundary.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from attentive.boundaries import Boundary
from attentive.evaluator.dense import (
    MIN_CHUNK,
    NonFiniteInput,
    RBFTerms,
    as_rows,
    prefix_sums,
    source_row_cost,
    survival_max_block,
    term_source,
    walk_rows,
    walk_small,
)
from attentive.evaluator.mixed import (
    SINGLE_PRODUCT_MIN_FEATURES,
    mixed_pays,
    single_exp_pays,
    walk_rows_mixed,
    walk_rows_single_product,
)
from attentive.evaluator.plan import (
    PILOT_MIN,
    Thresholds,
    block_schedule,
    pilot_rows,
    survival_schedule,
    thresholds,
    walk_plan,
)
from attentive.evaluator.sparse import sparse_kernel_walks, sparse_linear_chunk
from attentive.evaluator.threads import (
    PARALLEL_MIN_ELEMENTS,
    default_n_jobs,
    run_tasks,
    split_rows,
)
from attentive.outcome import budget_evaluation, check_boundary_length, finish_evaluation
from attentive.validation import check_precision, check_size
from attentive.walk import Walk

__all__ = ["NonFiniteInput", "evaluate_blocked", "rejects_non_finite", "walking_pays"]

# Walking buffers hold block × chunk values; chunks are wide (the cost beyond the terms is mostly
# per-call overhead of per-position vector operations, so smaller, cache-sized tiles measured
# slower).
_TILE_ELEMENTS = 2**21
_MAX_CHUNK = 8192
_SMALL_PROBLEM = 2**15  # examples × terms at or below which one tile covers everything


def rejects_non_finite(walk: Walk, X) -> bool:
    """Whether :func:`evaluate_blocked` raises :class:`NonFiniteInput` for any example of ``X``
    with a NaN or infinite value: kernel models on a dense array, with no transform before the
    kernel. For RBF kernels every path computes each example's squared norm (``|x|²`` or
    ``|x − c|²``) before using it, and a finite one proves the example finite
    (:func:`attentive.evaluator.dense.check_finite_rows`); linear, polynomial and sigmoid
    kernels check each tile or chunk they read (:func:`attentive.terms.checked_rows`). Elsewhere
    there is no such guarantee: non-finite values may be evaluated as they are (the estimator
    checks them)."""
    plan = walk_plan(walk) if walk.n_terms >= 1 else None
    return (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and plan is not None
        and walk.terms.head is None
        and (plan.sv_scaled is not None or plan.sv_ordered is not None)
    )


def walking_pays(walk: Walk, Xp) -> bool:
    """Whether walking ``Xp`` (examples as the walk sees them, after any pipeline head) can take
    less time than evaluating every term. False for a linear model over a sparse matrix: full
    evaluation is then one sparse product, compiled and ``O(nnz)``, while any walk must first
    put each row's non-zeros in walk order, which alone costs more (docs/speed.md, "Sparse
    linear models"). True everywhere else: there a walk's cost follows the terms it evaluates."""
    return not (walk.terms.kind == "linear" and sp.issparse(Xp))


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
    only_if_walking_pays: bool = False,
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
        Examples walked together; default: sized so that a block's buffers stay bounded.
    block_size : int, optional
        Walk positions per block; default: chosen from the survival curve of a pilot of rows
        (16, doubling up to 64, before there is one; one block for tiny problems).
    n_jobs : int, optional
        Threads; default :func:`default_n_jobs` (small problems always use one, and so do
        kernel models with sparse support vectors on sparse rows, whose product holds the GIL).
    precision : {"auto", "mixed", "double"}, optional
        How an RBF walk on dense data computes its kernel values. ``"mixed"``: in single
        precision with a bound on the error of every running sum, stopping only where the bound
        makes the crossing certain, walking again in double precision where it does not, and
        summing the walks that never stop in double precision (same stops, sides, labels and
        full scores as ``"double"``; a stopped walk's score, the rule's estimate at the stop,
        comes from its single-precision running sum, within the error band of the double one).
        ``"double"``: double precision throughout. ``"auto"`` (default): mixed where it is
        expected to be faster — this CPU's float32 ``exp`` is at least three times as fast as its
        float64 one (measured once per process) and a pilot of the first rows shows that most
        walks stop.
    values : bool, default True
        False when only the decisions are needed (``predict``): a mixed-precision walk that never
        stops then keeps its single-precision ``f(x)`` when the error band leaves its side of θ
        certain (its decision value is then accurate to the band, about 1e-6 of ``Σ|w|``,
        instead of 1e-9); stops, sides, ``positive`` and ``labels`` are exact either way.
    threshold : float, optional
        θ on the decision scale (default ``offset + theta_s``); decisions lie on their predicted
        side of it.
    stopped_score : {"estimate", "boundary"}, default "estimate"
        What a stopped walk scores (SPEC §2; see :func:`attentive.outcome.finish_evaluation`).
    only_if_walking_pays : bool, default False
        Where :func:`walking_pays` is False, evaluate every term instead of walking (no example
        stops; each gets the full model's decision). Budgeted rules are unaffected.

    Returns
    -------
    Evaluation

    Raises
    ------
    NonFiniteInput
        A ValueError, for an example with a NaN or infinite value where
        :func:`rejects_non_finite` says so.
    """
    chunk_size = check_size(chunk_size, "chunk_size")
    block_size = check_size(block_size, "block_size")
    n_jobs = check_size(n_jobs, "n_jobs") or default_n_jobs()
    precision = check_precision(precision) or "auto"
    n = walk.n_terms
    classes = np.asarray(walk.terms.classes)
    Xp = as_rows(walk.prepare(X))
    if Xp.ndim != 2:
        raise ValueError(
            f"expected examples as a 2-D array (n_examples, n_features); got shape {Xp.shape}"
        )
    m = Xp.shape[0]
    check_boundary_length(boundary, n)
    plan = walk_plan(walk)
    offset = plan.offset

    if boundary.kind == "budget":
        B = int(boundary.budget)
        estimate = (n / B) * (
            prefix_sums(walk, plan, Xp, B, chunk_size, n_jobs) - plan.centring_sums[B - 1]
        )
        return budget_evaluation(estimate, B, n, theta_s, offset, threshold, classes)

    n_evaluated = np.full(m, n, dtype=np.int64)
    stop_side = np.zeros(m, dtype=np.int8)
    s_n = np.full(m, np.nan)
    stop_u = np.full(m, np.nan)  # U_t at the stop of walks that stopped
    thr = thresholds(plan, boundary) if n > 1 else Thresholds(None, None)
    # Kernel models on sparse rows: scikit-learn's sparse product holds the GIL, so a second
    # thread would only split the chunks (measured 1.2-1.4× slower on synthetic-sparse).
    jobs = n_jobs if m * n >= PARALLEL_MIN_ELEMENTS and not sparse_kernel_walks(plan, Xp) else 1

    in_full = only_if_walking_pays and not walking_pays(walk, Xp)
    if (thr.lower is None and thr.upper is None) or m == 0 or in_full:
        if n:
            s_n = prefix_sums(walk, plan, Xp, n, chunk_size, n_jobs) - plan.centring_sums[n - 1]
    elif walk.terms.kind == "linear" and sp.issparse(Xp) and thr.mass is None:
        step = chunk_size or max(1, -(-m // jobs))

        def sparse_task(lo, hi):
            return lambda: sparse_linear_chunk(Xp[lo:hi], plan, thr, n)

        ranges = split_rows(m, step, jobs)
        for (lo, hi), (at, side, u_stop, U) in zip(
            ranges, run_tasks([sparse_task(lo, hi) for lo, hi in ranges], jobs), strict=True
        ):
            n_evaluated[lo:hi] = at
            stop_side[lo:hi] = side
            stop_u[lo:hi] = u_stop
            s_n[lo:hi] = U - plan.centring_sums[n - 1]
    elif block_size is None and chunk_size is None and m * n <= _SMALL_PROBLEM:
        n_evaluated, stop_side, U, stop_u = walk_small(walk, plan, Xp, thr)
        s_n = U - plan.centring_sums[n - 1]
    else:
        source = term_source(walk, plan, Xp)
        row_cost = source_row_cost(source, Xp.shape[1])
        max_block = survival_max_block(source, Xp.shape[1])
        # Mixed precision: with many features the product in float32 (asked for only: measured
        # no faster than the double walk on MNIST, see docs/speed.md); with few, exp in float32
        # where that is faster than in float64 on this CPU.
        single_product = source is RBFTerms and Xp.shape[1] >= SINGLE_PRODUCT_MIN_FEATURES
        # A rule on the running mass runs in double precision (the error band covers U_t only).
        mixed = (
            source is RBFTerms
            and thr.mass is None
            and (
                precision == "mixed"
                or (precision == "auto" and not single_product and single_exp_pays())
            )
        )
        walk_mixed = walk_rows_single_product if single_product else walk_rows_mixed

        def record(lo, res):
            n_evaluated[lo + res.at[:, 0]] = res.at[:, 1]
            stop_side[lo + res.at[:, 0]] = res.side
            stop_u[lo + res.at[:, 0]] = res.value
            s_n[lo + res.rows] = res.U - plan.centring_sums[n - 1]

        final = None if values else float(theta_s + plan.centring_sums[n - 1])
        decide_mixed = mixed and precision == "auto" and values
        if mixed and precision == "auto" and not values:
            # Labels only: a walk that never stops needs its exact total only when its
            # single-precision total is within the error band of θ, so mixed precision pays
            # whatever the share of such walks (calls below PILOT_MIN rows: double).
            mixed = m >= PILOT_MIN
        first = 0
        if (block_size is None and thr.stops is None) or decide_mixed:
            # The pilot, walked in double precision (its results are kept): its stops give the
            # survival curve, and whether mixed precision pays for a walk that never stops.
            first = pilot_rows(m)
            if first:
                res = walk_rows(
                    source(walk, plan, Xp[:first]), first, block_schedule(n, block_size), thr
                )
                record(0, res)
                stops = np.full(first, n, dtype=np.int64)
                stops[res.at[:, 0]] = res.at[:, 1]
                stops[res.unsure] = n
                thr.stops = stops
                if decide_mixed:
                    mixed = mixed_pays(res, n)
            elif decide_mixed:
                mixed = False
        if block_size is None and thr.stops is not None:
            key = (round(row_cost, 3), max_block)
            schedule = thr.schedules.get(key)
            if schedule is None:
                schedule = thr.schedules[key] = survival_schedule(
                    thr.stops, n, row_cost, max_block=max_block
                )
        else:
            schedule = block_schedule(n, block_size)
        max_block = int(schedule.sizes.max())
        step = chunk_size or max(MIN_CHUNK, min(_MAX_CHUNK, _TILE_ELEMENTS // max_block))

        def walk_task(lo, hi):
            if mixed:
                return lambda: walk_mixed(walk, plan, Xp[lo:hi], schedule, thr, final)
            return lambda: walk_rows(source(walk, plan, Xp[lo:hi]), hi - lo, schedule, thr)

        ranges = [(first + lo, first + hi) for lo, hi in split_rows(m - first, step, jobs)]
        for (lo, _hi), res in zip(
            ranges, run_tasks([walk_task(lo, hi) for lo, hi in ranges], jobs), strict=True
        ):
            record(lo, res)

    # S_t = U_t − C_t at each stop (V_t = U_t + κ_t A_t − C_t for a rule on the running mass;
    # other entries are not used).
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
