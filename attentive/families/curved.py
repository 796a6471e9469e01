"""The curved family: Gaussian stochastic curtailment (SPEC §2), scale z."""

from __future__ import annotations

import numpy as np

from attentive.boundaries import Boundary, curved_boundary
from attentive.families.base import BoundaryFamily, standardised
from attentive.families.registry import register_family


@register_family
class CurvedFamily(BoundaryFamily):
    """Stop lower when ``S_t + M_t < θ_S − z D_t``, upper when ``S_t + M_t > θ_S + z D_t``.

    ``M_t``, ``D_t``: mean and spread of the remainder over the positives (lower side) and the
    negatives (upper side) of the reference set.
    """

    name = "curved"
    description = "S_t + M_t beyond θ_S by z·D_t (remainder mean and spread from the reference set)"

    def boundary(self, z: float) -> Boundary:
        z = float(z)
        d = float(self.nominal_delta(z))
        # δ' only labels the boundary; z is what positions it.
        return curved_boundary(
            self.stats.positive,
            min(max(d, 1e-300), 1 - 1e-16),
            self.theta_s,
            self.side,
            z=z,
            upper_stats=self.stats.negative,
        )

    def crossing_scores(self, head, upper):
        n1 = head.shape[1]
        st = self.stats.negative if upper else self.stats.positive
        M = np.asarray(st.remainder_mean)[:n1]
        D = np.asarray(st.remainder_std)[:n1]
        num = (head + M - self.theta_s) if upper else (self.theta_s - head - M)
        return standardised(num, D)
