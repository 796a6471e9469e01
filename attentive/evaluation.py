"""Applying a boundary to walks: Algorithm 1 (attentive) and Algorithm 2 (budgeted).

:func:`apply_boundary` is the reference: it takes the full matrix of partial scores and finds each
example's first crossing. :func:`evaluate` is what the estimator calls on new examples: it gives the
same answer while computing only the terms of walks that have not stopped (see
:mod:`attentive.batch`).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from attentive.boundaries import Boundary
from attentive.walk import Walk

__all__ = [
    "Evaluation",
    "apply_boundary",
    "evaluate",
    "evaluation_options",
    "first_crossing",
    "stop_estimate",
]


@dataclass(frozen=True)
class Evaluation:
    """The outcome of evaluating examples under a boundary.

    Attributes
    ----------
    decision : ndarray (n_examples,)
        On the ``decision_function`` scale: ``f(x)`` when not stopped; for a stopped example the
        crossed threshold plus the boundary's shift, plus ``c`` (Algorithm 1: ``c + τ``); for the
        budgeted rule ``c + (n/B) S_B``.
    positive : ndarray of bool (n_examples,)
        The early decision: predicted positive class.
    labels : ndarray (n_examples,)
        ``classes[1]`` where ``positive`` else ``classes[0]``.
    n_evaluated : ndarray of int (n_examples,)
        Terms evaluated (``n`` if never stopped).
    stopped : ndarray of bool (n_examples,)
        Stopped before the last term.
    stop_side : ndarray of int8 (n_examples,)
        −1 stopped on the lower side, +1 on the upper side, 0 not stopped (budget: sign of estimate).
    n_terms : int
    """

    decision: np.ndarray
    positive: np.ndarray
    labels: np.ndarray
    n_evaluated: np.ndarray
    stopped: np.ndarray
    stop_side: np.ndarray
    n_terms: int

    @property
    def mean_evaluated_fraction(self) -> float:
        return float(np.mean(self.n_evaluated) / self.n_terms) if self.n_terms else 0.0


def first_crossing(S: np.ndarray, boundary: Boundary) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first stop position (1-based ``t``; ``n`` if none) and side (−1, +1, 0).

    Only positions ``t < n`` can stop. A row crossing both sides at the same ``t`` (possible only
    with a boundary whose lower exceeds its upper) counts as a lower stop.
    """
    m, n = S.shape
    if n <= 1:
        return np.full(m, n, dtype=np.int64), np.zeros(m, dtype=np.int8)
    head = S[:, : n - 1]
    lo = head < boundary.lower[: n - 1]
    up = head > boundary.upper[: n - 1]
    crossed = lo | up
    any_cross = crossed.any(axis=1)
    idx = np.argmax(crossed, axis=1)
    t = np.where(any_cross, idx + 1, n).astype(np.int64)
    rows = np.arange(m)
    side = np.zeros(m, dtype=np.int8)
    side[any_cross] = np.where(lo[rows, idx][any_cross], -1, 1)
    return t, side


def stop_estimate(boundary: Boundary, at: np.ndarray, side: np.ndarray) -> np.ndarray:
    """A stopped walk's estimate of ``S_n``: the crossed threshold plus that side's shift.

    ``at`` are 0-based positions (``t - 1``), ``side`` is −1 (lower) or +1 (upper).
    """
    up_shift = boundary.shift if boundary.upper_shift is None else boundary.upper_shift
    return np.where(
        side < 0, boundary.lower[at] + boundary.shift[at], boundary.upper[at] + up_shift[at]
    )


def apply_boundary(
    S: np.ndarray,
    boundary: Boundary,
    theta_s: float,
    offset: float = 0.0,
    classes=(0, 1),
) -> Evaluation:
    """Evaluate walks given their full partial scores ``S`` (column ``t-1`` = ``S_t``).

    The reference implementation of Algorithms 1 and 2; :func:`evaluate` must agree with it.
    """
    S = np.asarray(S, dtype=np.float64)
    m, n = S.shape
    classes = np.asarray(classes)
    if boundary.kind == "budget":
        B = boundary.budget
        estimate = (n / B) * S[:, B - 1]
        positive = estimate >= theta_s
        stopped = np.full(m, B < n)
        side = np.where(stopped, np.where(positive, 1, -1), 0).astype(np.int8)
        return Evaluation(
            decision=offset + estimate,
            positive=positive,
            labels=classes[positive.astype(int)],
            n_evaluated=np.full(m, B, dtype=np.int64),
            stopped=stopped,
            stop_side=side,
            n_terms=n,
        )
    t, side = first_crossing(S, boundary)
    stopped = side != 0
    s_n = S[:, n - 1] if n else np.zeros(m)
    decision = offset + s_n
    positive = s_n >= theta_s
    if stopped.any():
        at = t[stopped] - 1
        decision = decision.copy()
        decision[stopped] = offset + stop_estimate(boundary, at, side[stopped])
        positive = positive.copy()
        positive[stopped] = side[stopped] > 0
    return Evaluation(
        decision=decision,
        positive=positive,
        labels=classes[positive.astype(int)],
        n_evaluated=t,
        stopped=stopped,
        stop_side=side,
        n_terms=n,
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
    values: bool = True,
) -> Evaluation:
    """Evaluate raw examples ``X`` under ``boundary`` (Algorithm 1 or 2).

    Terms are computed block by block of walk positions, only for examples that have not stopped
    yet (:func:`attentive.batch.evaluate_blocked`); the result equals
    ``apply_boundary(walk.partial_scores(X), boundary, theta_s, walk.offset, classes)``.

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
        Threads that evaluate chunks of examples in parallel; default: as set by
        :func:`evaluation_options`, else ``$ATTENTIVE_N_JOBS``, else the usable cores (at most 8).
        Small problems always use one.
    precision : {"auto", "mixed", "double"}, optional
        RBF walks on dense data: ``"mixed"`` computes kernel values in single precision with a
        certified error bound and falls back to double precision wherever the bound leaves a
        stop unsure, so the result is that of ``"double"``; ``"auto"`` (default) uses it where it
        is expected to be faster (see :func:`attentive.batch.evaluate_blocked`).
    values : bool, default True
        False when only decisions are needed (``predict``): decision values of walks that never
        stop may then be single-precision estimates (accurate to ~1e-6 of ``Σ|w|``) where that
        leaves their side of θ certain. Stops, sides, ``positive`` and ``labels`` are exact.
    """
    from attentive.batch import evaluate_blocked

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
        values=values,
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
    from attentive.batch import _check_size, check_precision

    token = _OPTIONS.set(
        (
            _check_size(chunk_size, "chunk_size"),
            _check_size(block_size, "block_size"),
            _check_size(n_jobs, "n_jobs"),
            check_precision(precision),
        )
    )
    try:
        yield
    finally:
        _OPTIONS.reset(token)
