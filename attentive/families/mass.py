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

import dataclasses
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
# A regressor whose sum of squared deviations is below this share of its scale is constant up to
# rounding (the regression family's cut).
_ROUNDING = 1e-12
_COLUMNS = 2**20  # values per centred copy in mass_table


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
    ``A`` (both (m, n); :meth:`attentive.walk.Walk.partial_scores_and_masses`).

    A regressor whose spread over the walks is rounding-sized (``S_t`` next to ``S_n``'s spread,
    as the regression family judges it; ``A_t`` next to its own size) is left out, and so is
    ``A_t`` where it is collinear with ``S_t``."""
    S = np.asarray(S, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    m, n = S.shape
    y = S[:, -1]
    y_c = y - y.mean()
    yy = float(y_c @ y_c)
    mean_s, mean_a = S.mean(axis=0), A.mean(axis=0)
    ss, aa, sa, sy, ay, a2 = (np.empty(n) for _ in range(6))
    step = max(1, _COLUMNS // max(m, 1))
    for lo in range(0, n, step):  # centred copies of a few columns at a time
        cols = slice(lo, min(n, lo + step))
        s_c = S[:, cols] - mean_s[cols]
        a_c = A[:, cols] - mean_a[cols]
        ss[cols] = np.einsum("ij,ij->j", s_c, s_c)
        aa[cols] = np.einsum("ij,ij->j", a_c, a_c)
        sa[cols] = np.einsum("ij,ij->j", s_c, a_c)
        sy[cols] = y_c @ s_c
        ay[cols] = y_c @ a_c
        a2[cols] = np.einsum("ij,ij->j", A[:, cols], A[:, cols])
    has_s = ss > _ROUNDING * max(yy, 1e-300)
    has_a = aa > _ROUNDING * np.maximum(a2, 1e-300)
    det = ss * aa - sa**2
    both = has_s & has_a & (det > (1.0 - _COLLINEAR**2) * ss * aa)
    safe_det = np.where(both, det, 1.0)
    simple = np.where(has_s, sy / np.where(has_s, ss, 1.0), 0.0)
    b = np.where(both, (sy * aa - ay * sa) / safe_det, simple)
    c = np.where(both, (ay * ss - sy * sa) / safe_det, 0.0)
    a = y.mean() - b * mean_s - c * mean_a
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
        kappa = np.where(pos, c / safe_b, 0.0)
        if not self.uses_mass or not kappa.any():
            # No mass anywhere: a threshold on S_t, which every evaluation path runs as it is.
            return out
        return dataclasses.replace(out, mass=frozen_array(kappa))

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
