"""The mass-regression family (beyond the paper): the regression on ``S_t`` and a second running
sum, the walk's mass ``A_t = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)``.

Every other family stops on a threshold of ``S_t`` alone, and on real digits what ``S_t`` says
about ``S_n`` is used up (docs/calibration.md). ``A_t`` says how much kernel mass near ``x`` the
walk has met so far (with ``S_t``: the sums of the positive- and negative-weight terms
separately): a walk that has met little mass can still be swung by the terms to come, one that
has met much is settled. Per position, least squares on reference walks (a seeded sample, walked
as the reference statistics are)

    S_n ≈ a_t + b_t S_t + c_t A_t,   residual spread σ_t,

and the rule stops lower when the estimate is below θ_S by more than ``z σ_t``, upper when above
by more. With ``b_t > 0`` that is a threshold on the rule's statistic ``V_t = S_t + κ_t A_t``,
``κ_t = c_t / b_t``: ``V_t < (θ_S − z σ_t − a_t) / b_t``, which every evaluation path runs with
one more running sum (:class:`attentive.boundaries.Boundary` ``mass``). A stopped walk scores
``c + a_t + b_t V_t``. Positions with ``b_t ≤ 0`` never stop. Without a table (statistics built
elsewhere) the family is the regression family.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attentive.boundaries import Boundary, frozen_array
from attentive.families.base import BoundaryFamily, standardised
from attentive.families.registry import register_family
from attentive.families.regression import regression_statistics

# Least squares on S_t and A_t falls back to S_t alone where the two are this correlated (e.g. a
# model whose weights all have one sign, where A_t is S_t plus a constant).
_COLLINEAR = 1.0 - 1e-9


@dataclass(frozen=True)
class MassTable:
    """Per position t: ``S_n ≈ intercept_t + slope_t S_t + mass_slope_t A_t`` (least squares on
    reference walks) and the residual spread ``residual_std_t`` (last entries 0, 1, 0, 0)."""

    intercept: np.ndarray
    slope: np.ndarray
    mass_slope: np.ndarray
    residual_std: np.ndarray
    n_reference: int


def mass_table(S: np.ndarray, A: np.ndarray) -> MassTable:
    """The :class:`MassTable` of reference walks with partial scores ``S`` and running masses
    ``A`` (both (m, n); :meth:`attentive.walk.Walk.partial_scores_and_masses`)."""
    S = np.asarray(S, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    m = S.shape[0]
    y = S[:, -1]
    y_c = y - y.mean()
    s_c = S - S.mean(axis=0)
    a_c = A - A.mean(axis=0)
    ss = np.einsum("ij,ij->j", s_c, s_c)
    aa = np.einsum("ij,ij->j", a_c, a_c)
    sa = np.einsum("ij,ij->j", s_c, a_c)
    sy = y_c @ s_c
    ay = y_c @ a_c
    yy = float(y_c @ y_c)
    tiny = 1e-300
    det = ss * aa - sa**2
    both = (det > (1.0 - _COLLINEAR**2) * ss * aa) & (ss > tiny) & (aa > tiny)
    safe_det = np.where(both, det, 1.0)
    b = np.where(
        both, (sy * aa - ay * sa) / safe_det, np.where(ss > tiny, sy / np.maximum(ss, tiny), 0.0)
    )
    c = np.where(both, (ay * ss - sy * sa) / safe_det, 0.0)
    a = y.mean() - b * S.mean(axis=0) - c * A.mean(axis=0)
    residual = np.maximum(yy - b * sy - c * ay, 0.0) / max(m, 1)
    a[-1], b[-1], c[-1], residual[-1] = 0.0, 1.0, 0.0, 0.0
    return MassTable(
        intercept=frozen_array(a),
        slope=frozen_array(b),
        mass_slope=frozen_array(c),
        residual_std=frozen_array(np.sqrt(residual)),
        n_reference=int(m),
    )


@register_family
class MassRegressionFamily(BoundaryFamily):
    name = "mass-regression"
    description = (
        "a_t + b_t·S_t + c_t·A_t (least squares on the reference set, A_t the running mass "
        "Σ|w|h) beyond θ_S by z·σ_t"
    )

    @cached_property
    def table(self) -> MassTable:
        table = getattr(self.stats, "mass", None)
        if table is not None:
            return table
        reg = regression_statistics(self.stats.pooled)
        return MassTable(
            intercept=reg.intercept,
            slope=reg.slope,
            mass_slope=frozen_array(np.zeros(self.n_terms)),
            residual_std=reg.residual_std,
            n_reference=reg.n_reference,
        )

    @property
    def uses_mass(self) -> bool:
        return getattr(self.stats, "mass", None) is not None

    def boundary(self, z: float) -> Boundary:
        z = float(z)
        t = self.table
        a, b, c, sd = (np.asarray(v) for v in (t.intercept, t.slope, t.mass_slope, t.residual_std))
        pos = b > 0
        safe_b = np.where(pos, b, 1.0)
        lower = np.where(pos, (self.theta_s - z * sd - a) / safe_b, -np.inf)
        upper = np.where(pos, (self.theta_s + z * sd - a) / safe_b, np.inf)
        out = self._sided_boundary(z, lower, upper, b, a)
        if not self.uses_mass:
            return out
        return Boundary(
            kind=out.kind,
            side=out.side,
            lower=out.lower,
            upper=out.upper,
            estimate_slope=out.estimate_slope,
            estimate_intercept=out.estimate_intercept,
            params=out.params,
            mass=frozen_array(np.where(pos, c / safe_b, 0.0)),
        )

    def crossing_scores(self, head, upper, mass=None):
        n1 = head.shape[1]
        t = self.table
        a, b = np.asarray(t.intercept)[:n1], np.asarray(t.slope)[:n1]
        estimate = a + b * head
        if self.uses_mass:
            if mass is None:
                raise ValueError("the mass-regression family needs the running masses A_t.")
            estimate += np.asarray(t.mass_slope)[:n1] * mass
        num = (estimate - self.theta_s) if upper else (self.theta_s - estimate)
        return np.where(b > 0, standardised(num, np.asarray(t.residual_std)[:n1]), -np.inf)
