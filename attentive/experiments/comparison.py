"""Attentive against budgeted on the stop-error / computation plane (the paper's Figure 4 claims).

Plain functions of two :class:`attentive.metrics.TradeoffCurve` objects: where attentive stops
beating budgeted, by how much it loses below the paper's 30% stop-error, and the smallest
computation each needs for a near-zero stop-error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attentive.metrics import TradeoffCurve

__all__ = [
    "NEAR_ZERO_LOSS",
    "PAPER_STOP_ERROR_LIMIT",
    "CurveComparison",
    "budgeted_at",
    "compare_curves",
    "fraction_at_stop_error",
]

# The paper: "Attentive prediction requires less computation than Budgeted prediction if the
# required error rate is less than 30%".
PAPER_STOP_ERROR_LIMIT = 0.30
NEAR_ZERO_LOSS = (0.01, 0.005)


@dataclass(frozen=True)
class CurveComparison:
    """Attentive against budgeted on the stop-error / computation plane.

    Both curves are compared at attentive's mean evaluated fractions, budgeted interpolated
    linearly between neighbouring budgets (the paper runs budgeted "with a budget set to the
    average number of support vectors evaluated by the Attentive predictor").

    Attributes
    ----------
    limit : float
        The stop-error below which the paper claims attentive wins (0.30).
    beats_below : float
        The largest stop-error ``s`` such that attentive ≤ budgeted at every attentive point with
        stop-error below ``s``: the attentive stop-error at the first point (from the cheapest-to-stop
        end, τ low) where attentive is worse; attentive's largest stop-error if it never is.
    ever_worse : bool
        Whether attentive is worse than budgeted anywhere on its curve.
    max_excess : float
        Largest ``attentive − budgeted`` stop-error over points where both are below ``limit``
        (0 when attentive is never worse there).
    max_excess_fraction : float
        Mean evaluated fraction where ``max_excess`` occurs (NaN when it is 0).
    worse_fractions : tuple of float
        ``(lowest, highest)`` mean evaluated fraction at which attentive is worse while both are
        below ``limit`` (NaNs when never).
    n_compared, n_worse : int
        Attentive points with both below ``limit``, and how many of them are worse.
    mean_difference : float
        Mean ``attentive − budgeted`` stop-error over those points (negative: attentive better on
        average; less sensitive to budgeted's jagged curve than ``max_excess``).
    """

    limit: float
    beats_below: float
    ever_worse: bool
    max_excess: float
    max_excess_fraction: float
    worse_fractions: tuple[float, float]
    n_compared: int
    n_worse: int
    mean_difference: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "beats_below": self.beats_below,
            "ever_worse": self.ever_worse,
            "max_excess": self.max_excess,
            "max_excess_fraction": self.max_excess_fraction,
            "worse_fractions": list(self.worse_fractions),
            "n_compared": self.n_compared,
            "n_worse": self.n_worse,
            "mean_difference": self.mean_difference,
        }


def budgeted_at(budgeted: TradeoffCurve, fractions) -> np.ndarray:
    """Budgeted stop-error at given mean evaluated fractions (linear between budgets)."""
    frac = np.asarray(budgeted.mean_evaluated_fraction, dtype=np.float64)
    err = np.asarray(budgeted.stop_error, dtype=np.float64)
    order = np.argsort(frac, kind="stable")
    frac, err = frac[order], err[order]
    return np.interp(np.asarray(fractions, dtype=np.float64), frac, err)


def _first_loss(att_err: np.ndarray, bud_err: np.ndarray) -> tuple[float, bool]:
    # A relative tolerance: both are ratios of the same counts, equal values must count as ties.
    worse = att_err > bud_err + 1e-12
    if not worse.any():
        return float(np.nanmax(att_err)), False
    return float(att_err[np.argmax(worse)]), True


def compare_curves(
    attentive: TradeoffCurve, budgeted: TradeoffCurve, limit: float = PAPER_STOP_ERROR_LIMIT
) -> CurveComparison:
    """Where attentive stops beating budgeted, and by how much it loses below ``limit``.

    Parameters
    ----------
    attentive : TradeoffCurve
        From :func:`attentive.metrics.attentive_tradeoff` (any order of τ).
    budgeted : TradeoffCurve
        From :func:`attentive.metrics.budgeted_tradeoff`.
    limit : float
        Stop-error below which the comparison is summarised (the paper's 30%).

    Returns
    -------
    CurveComparison
    """
    frac = np.asarray(attentive.mean_evaluated_fraction, dtype=np.float64)
    att = np.asarray(attentive.stop_error, dtype=np.float64)
    # Walk the attentive curve from no stopping (τ lowest, stop-error 0) towards θ_S.
    order = np.lexsort((-frac, att))
    frac, att = frac[order], att[order]
    bud = budgeted_at(budgeted, frac)
    beats, ever_worse = _first_loss(att, bud)
    inside = (att < limit) & (bud < limit)
    excess = np.where(inside, att - bud, -np.inf)
    worse = inside & (att > bud + 1e-12)
    if worse.any():
        k = int(np.argmax(excess))
        max_excess, where = float(excess[k]), float(frac[k])
        span = (float(frac[worse].min()), float(frac[worse].max()))
    else:
        max_excess, where, span = 0.0, float("nan"), (float("nan"), float("nan"))
    return CurveComparison(
        limit=float(limit),
        beats_below=beats,
        ever_worse=ever_worse,
        max_excess=max_excess,
        max_excess_fraction=where,
        worse_fractions=span,
        n_compared=int(inside.sum()),
        n_worse=int(worse.sum()),
        mean_difference=float(np.mean(att[inside] - bud[inside])) if inside.any() else float("nan"),
    )


def fraction_at_stop_error(curve: TradeoffCurve, level: float) -> float:
    """Smallest mean evaluated fraction from which on the stop-error stays ``≤ level``.

    That is the smallest fraction ``φ`` such that every point of the curve with fraction ``≥ φ``
    has stop-error ``≤ level``; for attentive (monotone in τ) it is simply the cheapest point within
    ``level``, for budgeted it ignores a lucky small budget followed by larger errors. 1.0 (no
    saving) when no point but full evaluation qualifies.
    """
    frac = np.asarray(curve.mean_evaluated_fraction, dtype=np.float64)
    err = np.asarray(curve.stop_error, dtype=np.float64)
    order = np.argsort(-frac, kind="stable")
    frac, err = frac[order], err[order]
    bad = ~(err <= level)  # NaN counts as bad
    if not bad.any():
        return float(frac[-1])
    first_bad = int(np.argmax(bad))
    return float(frac[first_bad - 1]) if first_bad > 0 else 1.0
