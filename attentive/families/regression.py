"""The regression family (beyond the paper): ``E[S_n | S_t] ≈ a_t + b_t S_t`` from the reference set.

The curved boundary's estimate ``S_t + M_t`` ignores that ``S_t`` itself predicts the remainder
(under a random order ``E[S_n | x] ≈ (n/t) S_t``); the regression uses it, and ``σ_t`` is the
spread left once ``S_t`` is known instead of the whole spread ``D_t``. Stop lower when
``a_t + b_t S_t < θ_S − z σ_t``, upper when ``> θ_S + z σ_t``; a stopped walk scores
``c + a_t + b_t S_t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attentive.boundaries import Boundary, ReferenceStats, frozen_array
from attentive.families.base import BoundaryFamily, standardised
from attentive.families.registry import register_family
from attentive.validation import check_side


@dataclass(frozen=True)
class RegressionStats:
    """Per position t, the least-squares line ``E[S_n | S_t] ≈ a_t + b_t S_t`` over a reference set
    and the standard deviation ``σ_t`` of its residuals (the last entries are 0, 1, 0).

    Beyond the paper: the curved boundary's estimate ``S_t + M_t`` ignores that ``S_t`` itself
    predicts the remainder (under a random order ``E[S_n | x] ≈ (n/t) S_t``); the regression uses
    it, and ``σ_t`` is the spread left once ``S_t`` is known instead of the whole spread ``D_t``.
    """

    intercept: np.ndarray
    slope: np.ndarray
    residual_std: np.ndarray
    n_reference: int


def regression_statistics(stats: ReferenceStats) -> RegressionStats:
    """Least-squares lines ``S_n ≈ a_t + b_t S_t`` for every t, from a set's moments.

    With ``S_t = S_n − R_t``: ``Var S_t = Var S_n − 2 Cov(R_t, S_n) + D_t²`` and
    ``Cov(S_t, S_n) = Var S_n − Cov(R_t, S_n)``, so :func:`reference_statistics` already holds
    everything the regression needs — no extra pass over the reference examples.
    """
    var_n = stats.score_var
    cov_rn = np.asarray(stats.remainder_score_cov)
    mean_t = stats.score_mean - np.asarray(stats.remainder_mean)
    var_t = np.maximum(var_n - 2.0 * cov_rn + np.asarray(stats.remainder_std) ** 2, 0.0)
    cov = var_n - cov_rn
    ok = var_t > 1e-12 * max(var_n, 1e-300)
    slope = np.where(ok, cov / np.where(ok, var_t, 1.0), 0.0)
    intercept = stats.score_mean - slope * mean_t
    residual_var = np.maximum(var_n - slope * cov, 0.0)
    slope[-1], intercept[-1], residual_var[-1] = 1.0, 0.0, 0.0
    return RegressionStats(
        intercept=frozen_array(intercept),
        slope=frozen_array(slope),
        residual_std=frozen_array(np.sqrt(residual_var)),
        n_reference=stats.n_reference,
    )


def regression_boundary(reg: RegressionStats, z: float, theta_s: float = 0.0, side="both"):
    """Stop lower when ``a_t + b_t S_t < θ_S − z σ_t``, upper when ``> θ_S + z σ_t`` (beyond the
    paper; see :class:`RegressionStats`). Positions with ``b_t ≤ 0`` never stop."""
    check_side(side)
    a, b, sd = (np.asarray(v) for v in (reg.intercept, reg.slope, reg.residual_std))
    pos = b > 0
    safe_b = np.where(pos, b, 1.0)
    lower = np.where(pos, (theta_s - z * sd - a) / safe_b, -np.inf)
    upper = np.where(pos, (theta_s + z * sd - a) / safe_b, np.inf)
    if side == "upper":
        lower = np.full_like(lower, -np.inf)
    if side == "lower":
        upper = np.full_like(upper, np.inf)
    return Boundary(
        kind="regression",
        side=side,
        lower=frozen_array(lower),
        upper=frozen_array(upper),
        estimate_slope=frozen_array(b),
        estimate_intercept=frozen_array(a),
        params={"z": float(z), "theta_s": float(theta_s)},
    )


@register_family
class RegressionFamily(BoundaryFamily):
    name = "regression"
    description = "a_t + b_t·S_t (least squares on the reference set) beyond θ_S by z·σ_t"

    @cached_property
    def regression(self) -> RegressionStats:
        return regression_statistics(self.stats.pooled)

    def boundary(self, z: float) -> Boundary:
        return regression_boundary(self.regression, z, self.theta_s, self.side)

    def crossing_scores(self, head, upper):
        n1 = head.shape[1]
        reg = self.regression
        a, b = np.asarray(reg.intercept)[:n1], np.asarray(reg.slope)[:n1]
        estimate = a + b * head
        num = (estimate - self.theta_s) if upper else (self.theta_s - estimate)
        return np.where(b > 0, standardised(num, np.asarray(reg.residual_std)[:n1]), -np.inf)
