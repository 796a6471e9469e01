"""Calibrated boundaries (SPEC §3): a disagreement guarantee that does not rest on independence.

The Brownian-bridge δ of the paper assumes independent terms; real kernels break that. Here the
boundary's *scale* is chosen on held-out calibration examples instead, by fixed-sequence testing:

1. a grid of scales ``z_1 > z_2 > … > z_K`` is fixed in advance (most conservative first);
2. ``k_j`` counts calibration examples whose early decision under scale ``z_j`` differs from the
   model's full decision;
3. ``U_j = BetaInv(1 − α; k_j + 1, m − k_j)`` is the one-sided Clopper–Pearson upper bound on the
   disagreement rate (``U_j = 1`` when ``k_j = m``);
4. scan ``j = 1, 2, …``, stop at the first ``U_j > δ`` and keep the last scale that passed.

Then ``P(disagreement rate ≤ δ) ≥ 1 − α`` over the draw of the calibration set, for any model, as
long as calibration and future examples come from the same distribution and the calibration set
played no part in fitting the model or the reference statistics (μ, V, ``M_t``, ``D_t``).

**The scale.** Every family is indexed by ``z``: the curved boundary uses it directly
(``S_t + M_t < θ_S − z D_t``), the constant boundary uses the Theorem 1 threshold for the nominal
``δ' = Φ(−z)`` (the δ whose normal quantile is z). Larger z is more conservative for both.

The oracle (:func:`oracle_stop_positions`) is the reference that no causal rule of the curved family
beats: each example stops right after the last position at which the sign of its running estimate
``S_t + M_t − θ_S`` differs from its final sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr
from scipy.stats import beta

from attentive.boundaries import (
    Boundary,
    ReferenceStats,
    _frozen,
    check_delta,
    check_side,
    constant_boundary,
    constant_threshold,
    curved_boundary,
)
from attentive.errors import InvalidParameterError

__all__ = [
    "FAMILIES",
    "BoundaryFamily",
    "CalibrationReport",
    "CalibrationWarning",
    "GridOutcomes",
    "RegressionStats",
    "calibrate_scale",
    "check_alpha",
    "clopper_pearson_upper",
    "default_grid",
    "fixed_sequence_scan",
    "grid_outcomes",
    "minimum_calibration_size",
    "oracle_stop_positions",
    "regression_boundary",
    "regression_statistics",
]

FAMILIES = ("curved", "constant", "regression")


class CalibrationWarning(UserWarning):
    """No boundary scale passed calibration: the classifier falls back to full evaluation."""


def default_grid() -> np.ndarray:
    """The grid of scales fixed in advance: ``z`` from 6 down to −1 in steps of 0.05.

    ``z = 6`` (nominal δ' ≈ 1e-9) is far more conservative than any useful boundary; ``z = −1``
    (nominal δ' ≈ 0.84) stops almost everything. The scan stops long before the end in practice.
    """
    return np.round(np.arange(6.0, -1.0 - 1e-9, -0.05), 2)


def check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"alpha must be a number in (0, 1), got {alpha!r}.") from None
    if not (0.0 < a < 1.0):
        raise InvalidParameterError(f"alpha must be strictly between 0 and 1, got {alpha!r}.")
    return a


def _check_grid(grid) -> np.ndarray:
    g = np.asarray(default_grid() if grid is None else grid, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
        raise InvalidParameterError(
            f"grid must be a non-empty 1-d array of finite scales, got shape {g.shape}."
        )
    if g.size > 1 and not np.all(np.diff(g) < 0):
        raise InvalidParameterError(
            "grid must be strictly decreasing (most conservative scale first), as fixed-sequence "
            "testing scans it in order."
        )
    return g


def clopper_pearson_upper(k, m: int, alpha: float = 0.05):
    """One-sided Clopper–Pearson upper confidence bound on a rate from ``k`` events in ``m`` trials.

    ``U = BetaInv(1 − α; k + 1, m − k)`` (SPEC §3), and ``U = 1`` when ``k = m``. With ``k = 0`` it
    is ``1 − α^(1/m)``. Vectorised over ``k``.
    """
    a = check_alpha(alpha)
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise InvalidParameterError(f"m must be a positive integer, got {m!r}.")
    m = int(m)
    k = np.asarray(k)
    if np.any(k < 0) or np.any(k > m):
        raise InvalidParameterError(f"counts k must lie in [0, m={m}].")
    with np.errstate(invalid="ignore"):
        u = beta.ppf(1.0 - a, k + 1, np.maximum(m - k, 1))
    u = np.where(k >= m, 1.0, u)
    return float(u) if u.ndim == 0 else u


def minimum_calibration_size(delta: float, alpha: float = 0.05) -> int:
    """The smallest m for which even ``k = 0`` passes: ``1 − α^(1/m) ≤ δ``, i.e.
    ``m ≥ ln α / ln(1 − δ)`` (299 for δ = 1 %, α = 5 %)."""
    d, a = check_delta(delta), check_alpha(alpha)
    return math.ceil(math.log(a) / math.log1p(-d) - 1e-12)


def fixed_sequence_scan(upper_bounds, delta: float) -> tuple[int | None, int]:
    """Scan bounds in grid order and stop at the first ``U_j > δ`` (SPEC §3).

    Returns
    -------
    chosen : int or None
        Index of the last scale that passed (None: the first already failed).
    n_tested : int
        How many scales were tested (the failing one included).
    """
    d = check_delta(delta)
    u = np.asarray(upper_bounds, dtype=np.float64)
    failed = np.flatnonzero(u > d)
    if failed.size == 0:
        return (u.size - 1 if u.size else None), int(u.size)
    first = int(failed[0])
    return (first - 1 if first > 0 else None), first + 1


# ----------------------------------------------------------------------------- regression family


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
        intercept=_frozen(intercept),
        slope=_frozen(slope),
        residual_std=_frozen(np.sqrt(residual_var)),
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
    # A stopped walk's estimate of S_n is a_t + b_t · threshold = θ_S ∓ z σ_t.
    with np.errstate(invalid="ignore"):
        shift = np.where(np.isfinite(lower), theta_s - z * sd - lower, 0.0)
        upper_shift = np.where(np.isfinite(upper), theta_s + z * sd - upper, 0.0)
    return Boundary(
        kind="regression",
        side=side,
        lower=_frozen(lower),
        upper=_frozen(upper),
        shift=_frozen(shift),
        upper_shift=_frozen(upper_shift),
        params={"z": float(z), "theta_s": float(theta_s)},
    )


# ----------------------------------------------------------------------------- boundary families


@dataclass(frozen=True)
class BoundaryFamily:
    """A one-parameter family of boundaries indexed by the scale ``z`` (larger: more conservative).

    Attributes
    ----------
    kind : {"curved", "constant"}
    side : {"lower", "upper", "both"}
    n_terms : int
    theta_s : float
        Decision threshold in S space.
    stats : ReferenceStats or None
        Curved: ``M_t``, ``D_t`` for the lower side (the positives' walks).
    upper_stats : ReferenceStats or None
        Curved: ``M_t``, ``D_t`` for the upper side (the negatives' walks); default ``stats``.
    variance : float or None
        Constant: the bridge variance V.
    regression : RegressionStats or None
        Regression: ``a_t``, ``b_t``, ``σ_t``.
    """

    kind: str
    side: str
    n_terms: int
    theta_s: float
    stats: ReferenceStats | None = None
    upper_stats: ReferenceStats | None = None
    variance: float | None = None
    regression: RegressionStats | None = None

    def __post_init__(self):
        if self.kind not in FAMILIES:
            raise InvalidParameterError(
                f"only {FAMILIES} boundaries have a scale to calibrate, got {self.kind!r}."
            )
        check_side(self.side)
        if self.kind == "curved" and self.stats is None:
            raise InvalidParameterError("a curved family needs reference statistics (stats).")
        if self.kind == "constant" and self.variance is None:
            raise InvalidParameterError("a constant family needs the bridge variance.")
        if self.kind == "regression" and self.regression is None:
            raise InvalidParameterError("a regression family needs regression statistics.")

    @staticmethod
    def nominal_delta(z) -> np.ndarray:
        """``δ' = Φ(−z)``: the δ whose normal quantile is z."""
        return ndtr(-np.asarray(z, dtype=np.float64))

    def boundary(self, z: float) -> Boundary:
        """The member of the family at scale ``z``."""
        z = float(z)
        d = float(self.nominal_delta(z))
        if self.kind == "regression":
            return regression_boundary(self.regression, z, self.theta_s, self.side)
        if self.kind == "curved":
            # δ' only labels the boundary; z is what positions it.
            return curved_boundary(
                self.stats,
                min(max(d, 1e-300), 1 - 1e-16),
                self.theta_s,
                self.side,
                z=z,
                upper_stats=self.upper_stats,
            )
        return constant_boundary(self.n_terms, d, self.variance, self.theta_s, self.side)

    # Each side is reduced to "stop at the first t < n with score_t > threshold(z)", so that
    # one running maximum per example answers every scale of the grid.
    def _scores(self, head: np.ndarray, upper: bool) -> np.ndarray:
        n1 = head.shape[1]
        if self.kind == "constant":
            return head.copy() if upper else -head
        if self.kind == "regression":
            reg = self.regression
            a, b = np.asarray(reg.intercept)[:n1], np.asarray(reg.slope)[:n1]
            sd = np.asarray(reg.residual_std)[:n1]
            estimate = a + b * head
            num = (estimate - self.theta_s) if upper else (self.theta_s - estimate)
            with np.errstate(divide="ignore", invalid="ignore"):
                score = num / sd
            score = np.where(np.isnan(score), -np.inf, score)
            return np.where(b > 0, score, -np.inf)
        st = (self.upper_stats or self.stats) if upper else self.stats
        M = np.asarray(st.remainder_mean)[:n1]
        D = np.asarray(st.remainder_std)[:n1]
        num = (head + M - self.theta_s) if upper else (self.theta_s - head - M)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = num / D
        # D_t = 0: the side stops iff num > 0 whatever z is; 0/0 never stops.
        return np.where(np.isnan(score), -np.inf, score)

    def _thresholds(self, grid: np.ndarray, upper: bool) -> np.ndarray:
        if self.kind in ("curved", "regression"):
            return grid
        taus = np.array(
            [
                constant_threshold(d, self.variance, self.theta_s, side="both")
                for d in self.nominal_delta(grid)
            ]
        )
        return taus[:, 1] if upper else -taus[:, 0]


@dataclass(frozen=True)
class GridOutcomes:
    """Early decisions of every example under every scale of a grid.

    Attributes
    ----------
    grid : ndarray (K,)
    positive : ndarray of bool (m, K)
        Early decision per example and scale.
    n_evaluated : ndarray of int (m, K)
        Terms evaluated per example and scale.
    full_positive : ndarray of bool (m,)
        The full decision ``S_n ≥ θ_S``.
    n_terms : int
    """

    grid: np.ndarray
    positive: np.ndarray
    n_evaluated: np.ndarray
    full_positive: np.ndarray
    n_terms: int

    @property
    def disagree(self) -> np.ndarray:
        """(m, K) bool: early decision differs from the full one."""
        return self.positive != self.full_positive[:, None]

    def subset(self, rows) -> GridOutcomes:
        """The outcomes of some examples only (e.g. a calibration or test split)."""
        return GridOutcomes(
            self.grid,
            self.positive[rows],
            self.n_evaluated[rows],
            self.full_positive[rows],
            self.n_terms,
        )

    def disagreement_counts(self) -> np.ndarray:
        """``k_j`` per scale."""
        return self.disagree.sum(axis=0)

    def disagreement_rates(self) -> np.ndarray:
        return self.disagree.mean(axis=0)

    def evaluated_fractions(self) -> np.ndarray:
        """Mean evaluated fraction per scale."""
        return self.n_evaluated.mean(axis=0) / self.n_terms


def grid_outcomes(S, family: BoundaryFamily, grid=None) -> GridOutcomes:
    """Apply every scale of ``grid`` to walks with partial scores ``S`` at once.

    Equals ``apply_boundary(S, family.boundary(z), θ_S)`` for each z (tested against it), but
    costs one running maximum per example and side plus one comparison pass per scale.
    """
    grid = _check_grid(grid)
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] != family.n_terms:
        raise InvalidParameterError(
            f"S must have shape (examples, {family.n_terms}), got {S.shape}."
        )
    m, n = S.shape
    K = grid.size
    full_positive = S[:, n - 1] >= family.theta_s if n else np.zeros(m, dtype=bool)
    if n <= 1 or m == 0:
        return GridOutcomes(
            grid,
            np.repeat(full_positive[:, None], K, axis=1),
            np.full((m, K), n, dtype=np.int64),
            full_positive,
            n,
        )
    head = S[:, : n - 1]
    stop = {}
    for upper, active in ((False, family.side != "upper"), (True, family.side != "lower")):
        if not active:
            stop[upper] = np.full((m, K), n, dtype=np.int64)
            continue
        running = np.maximum.accumulate(family._scores(head, upper), axis=1)
        thr = family._thresholds(grid, upper)
        # First t with running_t > thr is 1 + #{t : running_t ≤ thr} (running is non-decreasing);
        # no crossing gives 1 + (n − 1) = n.
        t = np.empty((m, K), dtype=np.int64)
        for j in range(K):
            t[:, j] = 1 + np.count_nonzero(running <= thr[j], axis=1)
        stop[upper] = t
    t_lo, t_up = stop[False], stop[True]
    n_evaluated = np.minimum(t_lo, t_up)
    stopped = n_evaluated < n
    # Both sides at the same t counts as a lower stop, as in ``first_crossing``.
    positive = np.where(stopped, t_up < t_lo, full_positive[:, None])
    return GridOutcomes(grid, positive, n_evaluated, full_positive, n)


# ----------------------------------------------------------------------------- calibration report


@dataclass(frozen=True)
class CalibrationReport:
    """The outcome of a fixed-sequence Clopper–Pearson calibration (SPEC §3).

    Attributes
    ----------
    family, side : str
        The calibrated boundary family and its side(s).
    grid : ndarray (K,)
        Scales z, most conservative first (fixed before seeing the calibration data).
    counts : ndarray of int (K,)
        ``k_j``: calibration examples whose early decision differs from the full decision.
    upper_bounds : ndarray (K,)
        ``U_j``, Clopper–Pearson upper bound at confidence ``1 − α``.
    evaluated_fraction : ndarray (K,)
        Mean evaluated fraction on the calibration set per scale.
    n_tested : int
        Scales tested by the scan (it stops at the first failure).
    chosen_index : int or None
        Index of the chosen scale; None when no scale passed (full evaluation).
    m : int
        Calibration examples.
    delta, alpha : float
    """

    family: str
    side: str
    grid: np.ndarray
    counts: np.ndarray
    upper_bounds: np.ndarray
    evaluated_fraction: np.ndarray
    n_tested: int
    chosen_index: int | None
    m: int
    delta: float
    alpha: float
    scale_name: str = field(default="z")

    @property
    def fallback(self) -> bool:
        """True when no scale passed and the classifier evaluates every term."""
        return self.chosen_index is None

    @property
    def chosen_scale(self) -> float | None:
        return None if self.chosen_index is None else float(self.grid[self.chosen_index])

    @property
    def nominal_delta(self) -> np.ndarray:
        """``Φ(−z)`` per scale: the δ an uncalibrated boundary of the family would be given."""
        return BoundaryFamily.nominal_delta(self.grid)

    @property
    def minimum_size(self) -> int:
        """Calibration examples needed for any scale to pass (see :func:`minimum_calibration_size`)."""
        return minimum_calibration_size(self.delta, self.alpha)

    @property
    def guarantee(self) -> str:
        """The guarantee in plain words."""
        conf = f"{100 * (1 - self.alpha):.4g}%"
        d = f"{100 * self.delta:.4g}%"
        what = (
            f"two-sided {self.family} boundary"
            if self.side == "both"
            else f"one-sided ({self.side}) {self.family} boundary"
        )
        if self.fallback:
            reason = (
                f" ({self.m} calibration examples; at least {self.minimum_size} are needed even "
                "with no disagreement at all)"
                if self.m < self.minimum_size
                else ""
            )
            return (
                f"No scale of the {what} passed calibration at δ = {d}, α = {self.alpha:g}"
                f"{reason}, so every term is evaluated: predictions equal the full model's."
            )
        return (
            f"Disagreement ≤ δ with probability ≥ 1 − α: with probability at least {conf} over the "
            f"draw of the {self.m} calibration examples, the {what} at z = "
            f"{self.chosen_scale:g} changes the full model's decision on at most {d} of future "
            "examples from the same distribution (Clopper–Pearson fixed-sequence test; valid for "
            "any model, no independence of the terms assumed)."
        )

    def status(self) -> np.ndarray:
        """Per scale: ``"passed"``, ``"failed"`` (where the scan stopped) or ``"not tested"``."""
        s = np.full(self.grid.size, "not tested", dtype=object)
        s[: self.n_tested] = "passed"
        if self.n_tested and self.upper_bounds[self.n_tested - 1] > self.delta:
            s[self.n_tested - 1] = "failed"
        return s

    def to_frame(self):
        """The calibration table: one row per scale of the grid."""
        import pandas as pd

        chosen = np.zeros(self.grid.size, dtype=bool)
        if self.chosen_index is not None:
            chosen[self.chosen_index] = True
        return pd.DataFrame(
            {
                self.scale_name: self.grid,
                "nominal_delta": self.nominal_delta,
                "k": self.counts,
                "disagreement": self.counts / self.m,
                "upper_bound": self.upper_bounds,
                "evaluated_fraction": self.evaluated_fraction,
                "status": self.status(),
                "chosen": chosen,
            }
        )


def calibrate_scale(
    outcomes: GridOutcomes,
    *,
    delta: float,
    alpha: float = 0.05,
    family: str = "curved",
    side: str = "both",
) -> CalibrationReport:
    """Choose a scale by the Clopper–Pearson fixed-sequence scan (SPEC §3).

    Parameters
    ----------
    outcomes : GridOutcomes
        The calibration examples' early decisions for every scale (:func:`grid_outcomes`).
    delta : float in (0, 1)
        Disagreement rate to guarantee.
    alpha : float in (0, 1)
        Allowed probability that the guarantee fails.
    family, side : str
        Labels for the report.
    """
    d, a = check_delta(delta), check_alpha(alpha)
    m = int(outcomes.positive.shape[0])
    if m == 0:
        raise InvalidParameterError("the calibration set is empty.")
    counts = outcomes.disagreement_counts()
    upper = clopper_pearson_upper(counts, m, a)
    chosen, n_tested = fixed_sequence_scan(upper, d)
    return CalibrationReport(
        family=family,
        side=side,
        grid=outcomes.grid,
        counts=counts,
        upper_bounds=np.atleast_1d(upper),
        evaluated_fraction=outcomes.evaluated_fractions(),
        n_tested=n_tested,
        chosen_index=chosen,
        m=m,
        delta=d,
        alpha=a,
    )


# ----------------------------------------------------------------------------- oracle


def oracle_stop_positions(S, theta_s: float, remainder_mean=None) -> np.ndarray:
    """Terms an all-knowing rule of the curved family evaluates, per example.

    The running estimate of the full score is ``S_t + M_t``; an example's oracle position is one
    past the last ``t`` at which ``S_t + M_t ≥ θ_S`` differs from its final decision
    ``S_n ≥ θ_S`` (1 if it never differs, at most n). Stopping earlier would stop on an estimate
    whose sign is still wrong, so its mean fraction is a floor for such rules.

    Parameters
    ----------
    S : ndarray (m, n)
        Partial scores.
    theta_s : float
    remainder_mean : ndarray (n,), optional
        ``M_t`` (default 0: the running sum itself).
    """
    S = np.asarray(S, dtype=np.float64)
    m, n = S.shape
    if n == 0:
        return np.zeros(m, dtype=np.int64)
    M = np.zeros(n) if remainder_mean is None else np.asarray(remainder_mean, dtype=np.float64)
    if M.shape != (n,):
        raise InvalidParameterError(f"remainder_mean must have shape ({n},), got {M.shape}.")
    final = S[:, n - 1] >= theta_s
    differ = (S + M >= theta_s) != final[:, None]
    any_differ = differ.any(axis=1)
    last = n - np.argmax(differ[:, ::-1], axis=1)  # 1-based last differing t
    return np.minimum(np.where(any_differ, last + 1, 1), n).astype(np.int64)
