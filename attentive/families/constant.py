"""The constant family: the paper's Constant-STST threshold (Theorem 1) at nominal δ' = Φ(−z)."""

from __future__ import annotations

import numpy as np

from attentive.boundaries import Boundary, constant_boundary, constant_threshold
from attentive.families.base import BoundaryFamily
from attentive.families.registry import register_family


@register_family
class ConstantFamily(BoundaryFamily):
    """The same τ at every position: Theorem 1's threshold for the bridge variance V and
    ``δ' = Φ(−z)``, each side with its own V (the lower side R's, by default the positives'; the
    upper side the negatives': SPEC §2). A stopped walk scores ``c + τ`` (it has no other
    estimate)."""

    name = "constant"
    description = "one τ for every position (the paper's Theorem 1 at δ' = Φ(−z))"
    #: Theorem 1's bridge runs from S_0 = 0 to θ_S: one τ for walks that all start at 0.
    needs_zero_start = True

    def boundary(self, z: float) -> Boundary:
        d = float(self.nominal_delta(z))
        d = min(max(d, 1e-300), 1 - 1e-16)
        return constant_boundary(
            self.n_terms,
            d,
            self.stats.side_variance(False),
            self.theta_s,
            self.side,
            upper_variance=self.stats.side_variance(True),
        )

    def crossing_scores(self, head, upper):
        return head.copy() if upper else -head

    def thresholds(self, grid, upper):
        deltas = np.clip(self.nominal_delta(grid), 1e-300, 1 - 1e-16)
        v = self.stats.side_variance(upper)
        side = "upper" if upper else "lower"
        taus = np.array([constant_threshold(d, v, self.theta_s, side=side) for d in deltas])
        return taus if upper else -taus
