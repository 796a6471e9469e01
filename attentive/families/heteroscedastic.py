"""The heteroscedastic family (beyond the paper): the regression's estimate with a spread that
depends on the estimate.

The regression family measures the uncertainty of ``a_t + b_t S_t`` by one residual spread
``σ_t`` per position, the same for every walk. On real digits it is not the same: walks whose
estimate is far in a tail (a clear 2 or a clear 5) keep little to surprise, while walks near the
middle keep most of it. Here the reference walks at each t are split by their estimate into
``bins`` groups of equal size; each group's residual spread (shrunk towards ``σ_t`` with
``shrink`` pseudo-examples) is placed at the group's mean estimate, and ``σ_t(e)`` interpolates
linearly between them (constant beyond the first and last). Stop lower when the estimate ``e`` is
below θ_S by more than ``z σ_t(e)``, upper when above by more.

So that each position still stops on a threshold of ``S_t`` (what every evaluation path runs),
the crossing score is the running envelope of ``g(e) = (θ_S − e) / σ_t(e)``: lower stops at ``e``
when some ``e' ≥ e`` has ``g(e') > z`` (an estimate further from θ_S never counts as less sure).
The threshold for z is then the largest root of ``θ_S − e = z σ_t(e)``, one per linear piece of
``σ_t``, found exactly. A stopped walk scores ``c + a_t + b_t S_t`` (as regression).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attentive.boundaries import Boundary, frozen_array
from attentive.families.base import BoundaryFamily
from attentive.families.registry import register_family
from attentive.families.regression import RegressionStats, regression_statistics

#: Groups of reference walks per position, and the pseudo-examples of shrinkage towards σ_t.
BINS, SHRINK = 4, 20.0
#: At most this many reference walks are kept, and at most this many partial scores in all.
MAX_ROWS, MAX_VALUES = 2000, 4_000_000


@dataclass(frozen=True)
class SpreadTable:
    """Per position t (rows), the residual spread of ``S_n`` around ``a_t + b_t S_t`` at a few
    estimates (columns): ``spreads[t, j]`` at ``centers[t, j]`` (increasing in j)."""

    centers: np.ndarray
    spreads: np.ndarray
    n_reference: int


def reference_sample(
    walk, X_ref, *, leave_own_out: bool = False, own=None, seed: int = 0, masses: bool = False
):
    """The walks of a seeded sample of reference examples ``X_ref`` (at most ``MAX_ROWS``; with
    a long walk fewer, about ``MAX_VALUES`` values kept but at least 200 rows), walked as the
    reference statistics were (``leave_own_out``, ``own``): their partial scores, and with
    ``masses`` their running masses too (``(S, A)``). What :func:`spread_table` and
    :func:`attentive.families.mass.mass_table` are fitted on."""
    from sklearn.utils import _safe_indexing
    from sklearn.utils.validation import _num_samples

    n = walk.n_terms * (2 if masses else 1)  # values per row kept
    m = _num_samples(X_ref)
    keep = int(min(m, MAX_ROWS, max(200, MAX_VALUES // max(n, 1))))
    rows = np.arange(m)
    if keep < m:
        rows = np.sort(np.random.default_rng(seed).choice(m, keep, replace=False))
    kwargs = {
        "leave_own_out": leave_own_out,
        "own": None if own is None else np.asarray(own)[rows],
    }
    X = _safe_indexing(X_ref, rows)
    if masses:
        return walk.partial_scores_and_masses(X, **kwargs)
    return walk.partial_scores(X, **kwargs)


def spread_table(
    S: np.ndarray, regression: RegressionStats, *, bins: int = BINS, shrink: float = SHRINK
) -> SpreadTable:
    """The :class:`SpreadTable` of reference walks with partial scores ``S`` (m, n; the walks of
    :func:`reference_sample`)."""
    keep = S.shape[0]
    a, b = np.asarray(regression.intercept), np.asarray(regression.slope)
    sd = np.asarray(regression.residual_std)
    est = a + b * S  # (rows, n), in place of S from here on
    residual_sq = (S[:, -1:] - est) ** 2
    del S
    k = min(int(bins), keep)
    order = np.argsort(est, axis=0, kind="stable")
    est_sorted = np.take_along_axis(est, order, axis=0)
    res_sorted = np.take_along_axis(residual_sq, order, axis=0)
    groups = np.array_split(np.arange(keep), k)  # equal-size groups by rank of the estimate
    centers = np.stack([est_sorted[g].mean(axis=0) for g in groups], axis=1)
    sums = np.stack([res_sorted[g].sum(axis=0) for g in groups], axis=1)
    counts = np.array([g.size for g in groups], dtype=np.float64)
    spreads = np.sqrt((sums + shrink * sd[:, None] ** 2) / (counts + shrink))
    centers = np.maximum.accumulate(centers, axis=1)  # rounding could break the order
    return SpreadTable(
        centers=frozen_array(centers), spreads=frozen_array(spreads), n_reference=int(keep)
    )


@register_family
class HeteroscedasticFamily(BoundaryFamily):
    name = "heteroscedastic"
    description = (
        "a_t + b_t·S_t beyond θ_S by z times the residual spread of reference walks with a "
        "similar estimate"
    )

    @cached_property
    def regression(self) -> RegressionStats:
        return regression_statistics(self.stats.pooled)

    @cached_property
    def _table(self):
        """Centres, spreads and the knots' crossing scores ``g(c_j)`` (lower) and ``h(c_j)``
        (upper); without a spread table (statistics built elsewhere), one knot at ``σ_t``: the
        regression family."""
        table = self.stats.spread
        reg = self.regression
        if table is None:
            centers = np.zeros((self.n_terms, 1))
            spreads = np.asarray(reg.residual_std)[:, None].copy()
        else:
            centers = np.maximum.accumulate(np.asarray(table.centers, dtype=np.float64), axis=1)
            spreads = np.array(table.spreads, dtype=np.float64)
        # Knots at the same estimate (ties, e.g. boosting's few distinct scores) would make σ
        # jump there, and the envelope and the roots would read the jump differently: tied
        # knots take their largest spread, so σ is continuous.
        for _ in range(centers.shape[1] - 1):
            tied = centers[:, 1:] <= centers[:, :-1]
            if not tied.any():
                break
            top = np.maximum(spreads[:, 1:], spreads[:, :-1])
            spreads[:, 1:] = np.where(tied, top, spreads[:, 1:])
            spreads[:, :-1] = np.where(tied, top, spreads[:, :-1])
        floor = 1e-12 * max(np.sqrt(max(self.stats.pooled.score_var, 0.0)), 1e-300)
        spreads = np.maximum(spreads, floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = (self.theta_s - centers) / spreads
        return centers, spreads, g, -g

    def crossing_scores(self, head, upper):
        n1 = head.shape[1]
        reg = self.regression
        a, b = np.asarray(reg.intercept)[:n1], np.asarray(reg.slope)[:n1]
        centers, spreads, g, h = self._table
        c, sd = centers[:n1], spreads[:n1]
        k = c.shape[1]
        est = a + b * head
        # σ_t(e) = s_0 + Σ_j q_j · clip(e − c_{j−1}, 0, c_j − c_{j−1}): linear between the knots,
        # constant beyond them; a few passes over one scratch array (k is small).
        sigma = np.broadcast_to(sd[:, 0], est.shape).copy()
        ramp = np.empty_like(est)
        for j in range(1, k):
            width = c[:, j] - c[:, j - 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(width > 0, (sd[:, j] - sd[:, j - 1]) / width, 0.0)
            np.subtract(est, c[:, j - 1], out=ramp)
            np.clip(ramp, 0.0, width, out=ramp)
            ramp *= q
            sigma += ramp
        score = np.subtract(est, self.theta_s) if upper else np.subtract(self.theta_s, est)
        score /= sigma
        del sigma, ramp
        # The envelope: the best score at any knot further out than the estimate (upper: knots
        # ≤ e, the running maximum from the left; lower: knots ≥ e, from the right).
        best = np.full_like(est, -np.inf)
        if upper:
            knots = np.maximum.accumulate(h[:n1], axis=1)
            for j in range(k):  # ascending: the last knot ≤ e wins
                np.copyto(best, np.broadcast_to(knots[:, j], est.shape), where=est >= c[:, j])
        else:
            knots = np.maximum.accumulate(g[:n1, ::-1], axis=1)[:, ::-1]
            for j in reversed(range(k)):  # descending: the first knot ≥ e wins
                np.copyto(best, np.broadcast_to(knots[:, j], est.shape), where=est <= c[:, j])
        np.maximum(score, best, out=score)
        score[:, b <= 0] = -np.inf
        return score

    def _thresholds(self, z: float, upper: bool) -> np.ndarray:
        """Per position, the estimate at which the side stops for scale z: the largest root of
        ``θ_S − e = z σ(e)`` (lower) or the smallest of ``e − θ_S = z σ(e)`` (upper)."""
        centers, spreads, g, h = self._table
        n, k = centers.shape
        sign = 1.0 if upper else -1.0
        # Where the root lies: beyond the last knot whose score exceeds z (lower: counted from
        # the right; upper: from the left), on the linear piece of σ that follows it.
        above = (h if upper else g) > z
        if upper:
            # smallest root: the first knot with h > z ends the piece holding it
            j = np.where(above.any(axis=1), np.argmax(above, axis=1), k)  # piece index 0..k
        else:
            last = k - 1 - np.argmax(above[:, ::-1], axis=1)
            j = np.where(above.any(axis=1), last + 1, 0)  # piece index 0..k
        rows = np.arange(n)
        left = np.clip(j - 1, 0, k - 1)
        right = np.clip(j, 0, k - 1)
        c0, c1 = centers[rows, left], centers[rows, right]
        s0, s1 = spreads[rows, left], spreads[rows, right]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(c1 > c0, (s1 - s0) / (c1 - c0), 0.0)  # σ(e) = s0 + q (e − c0)
            p = s0 - q * c0
            root = (self.theta_s + sign * z * p) / (1.0 - sign * z * q)
        # On the outer pieces σ is constant (q = 0 above, since left == right there).
        inner = (j > 0) & (j < k)
        root = np.where(inner, np.clip(root, c0, c1), root)
        return root

    def boundary(self, z: float) -> Boundary:
        z = float(z)
        reg = self.regression
        a, b = np.asarray(reg.intercept), np.asarray(reg.slope)
        pos = b > 0
        safe_b = np.where(pos, b, 1.0)
        lower = np.where(pos, (self._thresholds(z, upper=False) - a) / safe_b, -np.inf)
        upper = np.where(pos, (self._thresholds(z, upper=True) - a) / safe_b, np.inf)
        lower[-1], upper[-1] = self.theta_s, self.theta_s  # the last position: decide at θ_S
        return self._sided_boundary(z, lower, upper, b, a)
