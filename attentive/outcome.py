"""What an evaluation returns (:class:`Evaluation`), built the same way by every path.

The reference (:func:`attentive.evaluation.apply_boundary`) and the blocked evaluator
(:mod:`attentive.evaluator`) find where each walk stops in their own way; both then hand the stops to
:func:`finish_evaluation`, which scores stopped walks by the rule's estimate (SPEC §2) and places
every score on its predicted side of θ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attentive.boundaries import Boundary
from attentive.errors import InvalidParameterError
from attentive.validation import check_stopped_score

__all__ = [
    "Evaluation",
    "budget_evaluation",
    "check_boundary_length",
    "finish_evaluation",
    "scores_on_predicted_side",
]


@dataclass(frozen=True)
class Evaluation:
    """The outcome of evaluating examples under a boundary.

    Attributes
    ----------
    decision : ndarray (n_examples,)
        On the ``decision_function`` scale: ``f(x)`` when not stopped; for a stopped example
        ``c`` plus the rule's estimate of ``S_n`` at the stop (``stopped_score="estimate"``) or
        the crossed threshold (``"boundary"``, Algorithm 1's ``c + τ``); for the budgeted rule
        ``c + (n/B) S_B``. Always on the predicted side of θ: ``positive == (decision ≥ θ)``.
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
    sketch_cost : float
        For a walk after a sketch (SPEC §3b): each example's sketch in units of a full evaluation
        (:func:`attentive.sketch.sketch_cost`: ``((k + 1)·d + m·(k + 2)) / (n·d)``, or
        ``(d + m·(k + 2)) / (n·d)`` where the directions are coordinates); 0 otherwise.
        ``n_evaluated`` counts exact terms only.
    walked_term_cost : float
        A walked term's cost in plain terms: ``1 + m/d`` after a sketch (its sketch value), else 1.
    path : {"walk", "full", "triage", "budget", "reference"}
        How the examples were evaluated: the rule's walk; every term (the full model's
        decisions, where the evaluator found walking would cost more, or was asked to); the
        rule's stops at its first checks (as many as the pilot priced cheapest) for the
        examples its sketch's triage decides there and every term of the others (the full model's decisions: where the evaluator found that
        cheaper than walking them, :mod:`attentive.evaluator.triage`); Algorithm 2's first ``B``
        terms; or the reference on given partial scores
        (:func:`attentive.evaluation.apply_boundary`).
    predicted_cost : float or None
        Where the evaluator's pilot priced the walk (:mod:`attentive.evaluator.pilot`): its
        predicted time of a row's walk (on path "triage": of the triage and the full
        evaluation of the rows it leaves, its pass priced between one thread and two:
        ``TRIAGE_PASS_THREADS``) as a fraction of a full evaluation's (one thread; the
        path is "full" where the walk is priced above ``WALK_MARGIN`` and the triage's path
        not below both the walk and ``TRIAGE_MARGIN``: :mod:`attentive.evaluator.pilot`); None
        where no pilot priced it.
    """

    decision: np.ndarray
    positive: np.ndarray
    labels: np.ndarray
    n_evaluated: np.ndarray
    stopped: np.ndarray
    stop_side: np.ndarray
    n_terms: int
    path: str = "walk"
    sketch_cost: float = 0.0
    walked_term_cost: float = 1.0
    predicted_cost: float | None = None

    @property
    def mean_evaluated_fraction(self) -> float:
        return float(np.mean(self.n_evaluated) / self.n_terms) if self.n_terms else 0.0

    @property
    def work(self) -> np.ndarray:
        """Each example's work in units of a full evaluation: the sketch (if any) and the exact
        terms evaluated, each at its cost (``n_evaluated / n_terms`` without a sketch)."""
        if not self.n_terms:
            return np.zeros(np.shape(self.n_evaluated))
        work = self.sketch_cost + self.n_evaluated * (self.walked_term_cost / self.n_terms)
        if self.path == "triage":  # (the rows evaluated in full: plain terms, no residuals)
            work = np.where(self.stopped, work, self.sketch_cost + 1.0)
        return work

    @property
    def work_fraction(self) -> float:
        """The mean of :attr:`work`: the work per example in units of a full evaluation
        (``mean_evaluated_fraction`` without a sketch)."""
        if self.path == "triage":
            return float(np.mean(self.work)) if np.size(self.n_evaluated) else self.sketch_cost
        return self.sketch_cost + self.mean_evaluated_fraction * self.walked_term_cost


def scores_on_predicted_side(decision, positive, threshold: float) -> np.ndarray:
    """Move each score to the predicted side of θ (SPEC §2): ``≥ θ`` where ``positive``, ``< θ``
    elsewhere — the nearest such value for a score that is not there already.

    So ``positive == (result >= threshold)`` holds exactly, in floating point, whatever the rule.
    """
    below = np.nextafter(float(threshold), -np.inf)
    return np.where(positive, np.maximum(decision, threshold), np.minimum(decision, below))


def finish_evaluation(
    boundary: Boundary,
    *,
    s_n: np.ndarray,
    n_evaluated: np.ndarray,
    stop_side: np.ndarray,
    stop_scores: np.ndarray,
    theta_s: float,
    offset: float,
    threshold: float | None,
    classes,
    stopped_score: str = "estimate",
    path: str = "walk",
) -> Evaluation:
    """The :class:`Evaluation` of walks whose stops are known (shared by every evaluation path).

    ``s_n`` holds ``S_n`` of walks that did not stop, ``stop_scores`` the rule's statistic at
    the stop of those that did (``S_t``, or ``S_t + κ_t A_t`` for a boundary with ``mass``;
    other entries are ignored). Decisions of stopped walks are the rule's
    estimate (``stopped_score``); every decision is then placed on its predicted side of
    ``threshold`` (default ``offset + theta_s``).
    """
    check_stopped_score(stopped_score)
    n = boundary.n_terms
    classes = np.asarray(classes)
    stopped = stop_side != 0
    positive = s_n >= theta_s
    decision = offset + s_n
    if stopped.any():
        at = n_evaluated[stopped] - 1
        decision[stopped] = offset + boundary.stop_estimate(
            at, stop_side[stopped], stop_scores[stopped], stopped_score
        )
        positive[stopped] = stop_side[stopped] > 0
    theta = offset + theta_s if threshold is None else threshold
    return Evaluation(
        decision=scores_on_predicted_side(decision, positive, theta),
        positive=positive,
        labels=classes[positive.astype(int)],
        n_evaluated=n_evaluated,
        stopped=stopped,
        stop_side=stop_side,
        n_terms=n,
        path=path,
    )


def budget_evaluation(
    estimate: np.ndarray, budget: int, n: int, theta_s: float, offset: float, threshold, classes
) -> Evaluation:
    """Algorithm 2's outcome from the budgeted estimates ``(n/B) S_B`` of ``S_n``."""
    m = estimate.shape[0]
    classes = np.asarray(classes)
    positive = estimate >= theta_s
    stopped = np.full(m, budget < n)
    theta = offset + theta_s if threshold is None else threshold
    return Evaluation(
        decision=scores_on_predicted_side(offset + estimate, positive, theta),
        positive=positive,
        labels=classes[positive.astype(int)],
        n_evaluated=np.full(m, budget, dtype=np.int64),
        stopped=stopped,
        stop_side=np.where(stopped, np.where(positive, 1, -1), 0).astype(np.int8),
        n_terms=n,
        path="budget",
    )


def check_boundary_length(boundary: Boundary, n_terms: int) -> None:
    """A boundary made for another walk is an error, never truncated or padded."""
    if boundary.n_terms != n_terms:
        raise InvalidParameterError(
            f"the boundary has {boundary.n_terms} positions but the walk has {n_terms} terms; "
            "build the boundary from the same fitted walk."
        )
