"""Applying a boundary to walks: Algorithm 1 (attentive) and Algorithm 2 (budgeted).

:func:`apply_boundary` is the reference: it takes the full matrix of partial scores and finds each
example's first crossing. :func:`evaluate` is what the estimator calls on new examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attentive.boundaries import Boundary
from attentive.walk import Walk

__all__ = ["Evaluation", "apply_boundary", "evaluate", "first_crossing", "stop_estimate"]


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


def evaluate(walk: Walk, X, boundary: Boundary, theta_s: float) -> Evaluation:
    """Evaluate raw examples ``X`` under ``boundary`` (Algorithm 1 or 2)."""
    S = walk.partial_scores(X)
    return apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
