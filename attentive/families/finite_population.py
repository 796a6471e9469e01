"""The finite-population family (SPEC §3): a random order samples the terms without replacement.

Under a random order the first t terms of an example are a sample without replacement of its n
terms, so ``Ŝ_t = (n/t) S_t`` is an unbiased estimate of ``S_n`` with standard error
``SE_t = n σ sqrt((n − t) / (t (n − 1)))``, σ² being the variance of the example's n terms. Here
σ² is the reference set's mean per-term variance ``V̄ / n`` (``V̄``: SPEC §2's bridge variance,
from the positives for the lower side and the negatives for the upper side), the limit of the
running estimate shrunk towards the reference. Stop lower when ``Ŝ_t < θ_S − z SE_t``, upper
when ``Ŝ_t > θ_S + z SE_t``; a stopped walk scores ``c + Ŝ_t``.
"""

from __future__ import annotations

import numpy as np

from attentive.boundaries import Boundary
from attentive.families.base import BoundaryFamily, standardised
from attentive.families.registry import register_family


@register_family
class FinitePopulationFamily(BoundaryFamily):
    name = "finite-population"
    description = "(n/t)·S_t beyond θ_S by z standard errors of sampling terms without replacement"
    #: (n/t)·S_t estimates S_n only when S_0 = 0 (the walk is the sum of the terms sampled).
    needs_zero_start = True

    def _positions(self, n1: int) -> np.ndarray:
        return np.arange(1, n1 + 1, dtype=np.float64)

    def standard_error(self, upper: bool, n1: int | None = None) -> np.ndarray:
        """``SE_t`` for ``t = 1 .. n1`` (default all positions; ``SE_n = 0``)."""
        n = self.n_terms
        n1 = n if n1 is None else n1
        stats = self.stats.negative if upper else self.stats.positive
        sigma = np.sqrt(max(stats.variance_terms, 0.0) / n) if n else 0.0
        t = self._positions(n1)
        fpc = np.clip((n - t) / (t * max(n - 1, 1)), 0.0, None)
        return n * sigma * np.sqrt(fpc)

    def boundary(self, z: float) -> Boundary:
        z = float(z)
        n = self.n_terms
        t = self._positions(n)
        lower = t / n * (self.theta_s - z * self.standard_error(False))
        upper = t / n * (self.theta_s + z * self.standard_error(True))
        return self._sided_boundary(z, lower, upper, n / t, np.zeros(n))

    def crossing_scores(self, head, upper):
        n1 = head.shape[1]
        estimate = head * (self.n_terms / self._positions(n1))
        num = (estimate - self.theta_s) if upper else (self.theta_s - estimate)
        return standardised(num, self.standard_error(upper, n1))
