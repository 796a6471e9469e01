"""Applying a boundary to walks: Algorithm 1 (attentive) and Algorithm 2 (budgeted).

:func:`apply_boundary` is the reference: it takes the full matrix of partial scores and finds each
example's first crossing. :func:`evaluate` is what the estimator calls on new examples: it gives the
same answer while computing only the terms of walks that have not stopped (see
:mod:`attentive.evaluator`).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from attentive.boundaries import Boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.crossing import stops_of
from attentive.outcome import (
    Evaluation,
    budget_evaluation,
    check_boundary_length,
    finish_evaluation,
    scores_on_predicted_side,
)
from attentive.validation import check_precision, check_size
from attentive.walk import Walk

__all__ = [
    "Evaluation",
    "apply_boundary",
    "evaluate",
    "evaluation_options",
    "finish_evaluation",
    "first_crossing",
    "scores_on_predicted_side",
]


def first_crossing(
    S: np.ndarray, boundary: Boundary, A: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first stop position (1-based ``t``; ``n`` if none) and side (−1, +1, 0).

    Only positions ``t < n`` can stop. A row crossing both sides at the same ``t`` (possible only
    with a boundary whose lower exceeds its upper) counts as a lower stop
    (:mod:`attentive.evaluator.crossing`, the one statement of the rule). ``A``: the running
    masses, for a boundary with ``mass`` (its thresholds apply to ``S_t + κ_t A_t``).
    """
    return stops_of(boundary.statistic(S, A), boundary.lower, boundary.upper)


def apply_boundary(
    S: np.ndarray,
    boundary: Boundary,
    theta_s: float,
    offset: float = 0.0,
    classes=(0, 1),
    *,
    threshold: float | None = None,
    stopped_score: str = "estimate",
    A: np.ndarray | None = None,
) -> Evaluation:
    """Evaluate walks given their full partial scores ``S`` (column ``t-1`` = ``S_t``).

    The reference implementation of Algorithms 1 and 2; :func:`evaluate` must agree with it.
    ``threshold`` is θ on the decision scale (default ``offset + theta_s``): every returned
    decision lies on its predicted side of it (SPEC §2). ``A``: the walks' running masses
    (:meth:`attentive.walk.Walk.partial_masses`), needed for a boundary with ``mass``.
    """
    S = np.asarray(S, dtype=np.float64)
    m, n = S.shape
    check_boundary_length(boundary, n)
    if boundary.kind == "budget":
        B = boundary.budget
        return budget_evaluation((n / B) * S[:, B - 1], B, n, theta_s, offset, threshold, classes)
    # The rule's statistic (S_t, or S_t + κ_t A_t): where it crosses and what its estimate at the
    # stop is made of.
    V = boundary.statistic(S, A)
    t, side = stops_of(V, boundary.lower, boundary.upper)
    rows = np.arange(m)
    return finish_evaluation(
        boundary,
        s_n=S[:, n - 1].copy() if n else np.zeros(m),
        n_evaluated=t,
        stop_side=side,
        stop_scores=V[rows, np.maximum(t - 1, 0)] if n else np.zeros(m),
        theta_s=theta_s,
        offset=offset,
        threshold=threshold,
        classes=classes,
        stopped_score=stopped_score,
        path="reference",
    )


def evaluate(
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
) -> Evaluation:
    """Evaluate raw examples ``X`` under ``boundary`` (Algorithm 1 or 2).

    Terms are computed block by block of walk positions, only for examples that have not stopped
    yet (:func:`attentive.evaluator.evaluate_blocked`); with ``path="walk"`` the result equals
    ``apply_boundary(walk.partial_scores(X), boundary, theta_s, walk.offset, classes)`` (the
    same stops, sides and labels; decision values to the precision below).

    Parameters
    ----------
    walk : Walk
    X : array-like or sparse matrix of shape (n_examples, n_features)
    boundary : Boundary
    theta_s : float
        Decision threshold in S space.
    chunk_size, block_size : int, optional
        Examples walked together and walk positions per block; default: chosen automatically,
        or as set by :func:`evaluation_options`.
    n_jobs : int, optional
        Threads that evaluate chunks of examples in parallel, ``-1`` for every usable core
        (``-2`` all but one, as scikit-learn reads ``n_jobs``); default: as set by
        :func:`evaluation_options`, else ``$ATTENTIVE_N_JOBS``, else the usable cores (at most 8).
        Small problems always use one, a walk one per 2,048 examples at most, and kernel models
        with sparse support vectors on sparse rows one (their sparse product holds the GIL).
    precision : {"auto", "single", "double"}, optional
        ``"auto"`` (default) and ``"single"``: RBF models over many dense features compute their
        products in float32 with a certified bound on each term's error; stops, sides and labels
        are those of double precision, decision values within the bound (about 1e-6 of
        ``Σ|w h|``; a sketched walk's stopped values over rows off the pixel grid within its
        float32 features' bound too, up to ~1e-3). ``"double"``: double precision throughout
        (about 1e-12). See
        :func:`attentive.evaluator.evaluate_blocked`.
    threshold : float, optional
        θ on the decision scale (default ``walk.offset + theta_s``); every decision lies on its
        predicted side of it.
    stopped_score : {"estimate", "boundary"}, default "estimate"
        A stopped example's score: the rule's estimate of ``f(x)`` or Algorithm 1's ``c + τ_t``
        (SPEC §2).
    path : {"auto", "walk", "full"}, default "auto"
        ``"auto"``: walk the rule unless the evaluator's pilot predicts that walking costs more
        than evaluating every term (or walking can never pay, as for a linear model over a
        sparse matrix); then evaluate every term, and every example gets the full model's
        decision. ``"walk"``: always walk. ``"full"``: never stop. ``AttentiveClassifier``'s
        ``early_stopping`` ("auto", True, False). The path taken is ``Evaluation.path``.
    reference : array-like, optional
        Rows prepared for the walk whose stops the ``"auto"`` choice is made from, the same for
        every call, so that a row's outcome never depends on the rows evaluated with it
        (``AttentiveClassifier`` passes rows kept in ``fit``, ``pilot_rows_``); see
        :func:`attentive.evaluator.evaluate_blocked`.
    """
    default_chunk, default_block, default_jobs, default_precision = _OPTIONS.get()
    return evaluate_blocked(
        walk,
        X,
        boundary,
        theta_s,
        chunk_size=chunk_size if chunk_size is not None else default_chunk,
        block_size=block_size if block_size is not None else default_block,
        n_jobs=n_jobs if n_jobs is not None else default_jobs,
        precision=precision if precision is not None else default_precision,
        threshold=threshold,
        stopped_score=stopped_score,
        path=path,
        reference=reference,
    )


# (chunk_size, block_size, n_jobs, precision) set by evaluation_options; None means automatic.
_OPTIONS: ContextVar[tuple] = ContextVar(
    "attentive_evaluation_options", default=(None, None, None, None)
)


@contextmanager
def evaluation_options(
    *,
    chunk_size: int | None = None,
    block_size: int | None = None,
    n_jobs: int | None = None,
    precision: str | None = None,
):
    """Override the automatic sizes, thread count and precision of :func:`evaluate` in a ``with``
    block (``precision``: ``"auto"``, ``"mixed"`` or ``"double"``, see :func:`evaluate`).

    Applies to everything that evaluates through :func:`evaluate`, e.g.
    ``AttentiveClassifier.predict``::

        with evaluation_options(block_size=32, n_jobs=1):
            clf.predict(X)
    """
    token = _OPTIONS.set(
        (
            check_size(chunk_size, "chunk_size"),
            check_size(block_size, "block_size"),
            check_size(n_jobs, "n_jobs", negative=True),
            check_precision(precision),
        )
    )
    try:
        yield
    finally:
        _OPTIONS.reset(token)
