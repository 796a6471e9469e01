"""Stopping boundaries (SPEC §2): when to stop a walk, and what to predict then.

A :class:`Boundary` is two arrays over walk positions ``t = 1..n`` in S space: stop **lower** (predict
negative) at the first ``t < n`` with ``S_t < lower[t-1]``, stop **upper** (predict positive) at the
first ``t < n`` with ``S_t > upper[t-1]``. ``-inf`` / ``+inf`` mean "never". The last term is never a
stop: an example that reaches ``t = n`` gets its full decision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from attentive.errors import InvalidParameterError
from attentive.validation import SIDES, STOPPED_SCORES, check_delta, check_side, check_stopped_score
from attentive.walk import Walk, row_chunks

__all__ = [
    "SIDES",
    "STOPPED_SCORES",
    "VARIANCES",
    "Boundary",
    "ReferenceStats",
    "budget_boundary",
    "constant_boundary",
    "constant_threshold",
    "crossing_probability",
    "curved_boundary",
    "full_boundary",
    "reference_statistics",
]

VARIANCES = ("terms", "independent")


def _check_variance_value(variance) -> float:
    v = float(variance)
    if not np.isfinite(v) or v < 0:
        raise InvalidParameterError(f"variance must be finite and ≥ 0, got {variance!r}.")
    return v


def crossing_probability(tau, theta, variance):
    """``P(cross τ before n | S_0 = 0, S_n = θ)`` for a Brownian bridge of variance V (SPEC §2).

    ``exp(−2 τ (τ − θ) / V)`` when τ lies beyond both 0 and θ (the paper's Lemma 1); 1 when τ lies
    between 0 and θ (the bridge must pass it). Vectorised over ``tau`` and ``theta``.
    """
    tau = np.asarray(tau, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    v = _check_variance_value(variance)
    beyond = (tau * (tau - theta) > 0) & (
        (tau > np.maximum(0, theta)) | (tau < np.minimum(0, theta))
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = (
            np.exp(-2.0 * tau * (tau - theta) / v)
            if v > 0
            else np.zeros(np.broadcast(tau, theta).shape)
        )
    out = np.where(beyond, p, 1.0)
    return float(out) if out.ndim == 0 else out


def constant_threshold(delta, variance, theta=0.0, side="lower"):
    """The Constant-STST threshold τ in S space (SPEC §2, the paper's Theorem 1).

    Solves ``crossing_probability(τ, θ_S, V) = δ``, i.e. ``2τ² − 2θ_S τ − V ln(1/δ) = 0``.

    Parameters
    ----------
    delta : float in (0, 1)
        The required stop-error rate.
    variance : float ≥ 0
        The bridge variance V (see :func:`reference_statistics`).
    theta : float
        The decision threshold in S space, ``θ_S = θ − c``.
    side : {"lower", "upper", "both"}
        Which root: lower ``(θ_S − sqrt(θ_S² + 2V ln(1/δ)))/2``, upper with ``+``; ``both``
        returns the pair ``(lower, upper)``.
    """
    d = check_delta(delta)
    check_side(side)
    v = _check_variance_value(variance)
    theta = float(theta)
    if not np.isfinite(theta):
        raise InvalidParameterError(f"theta must be finite, got {theta!r}.")
    root = np.sqrt(theta * theta + 2.0 * v * np.log(1.0 / d))
    lower = (theta - root) / 2.0
    upper = (theta + root) / 2.0
    if side == "lower":
        return float(lower)
    if side == "upper":
        return float(upper)
    return float(lower), float(upper)


@dataclass(frozen=True)
class ReferenceStats:
    """Statistics of the walk over a set of reference examples (SPEC §2).

    Attributes
    ----------
    variance_terms : float
        Mean over the set of ``V(x) = Σ_i (w_i X_i(x) − S_n(x)/n)²`` (sampling without replacement).
    term_mean, term_var : ndarray of shape (n_terms,)
        Mean and variance of ``X_{π(k)}`` over the set, in walk order.
    weights : ndarray of shape (n_terms,)
        ``w_{π(k)}``, in walk order.
    remainder_mean, remainder_std : ndarray of shape (n_terms,)
        ``M_t`` and ``D_t``: mean and standard deviation over the set of ``R_t = S_n − S_t`` for
        ``t = 1..n`` (so the last entries are 0).
    n_reference : int
    score_mean, score_var : float
        Mean and variance of ``S_n`` over the set.
    remainder_score_cov : ndarray of shape (n_terms,)
        ``Cov(R_t, S_n)`` over the set; with the above it gives every moment of ``(S_t, S_n)``
        (``S_t = S_n − R_t``), e.g. for the regression of ``S_n`` on ``S_t``.
    """

    variance_terms: float
    term_mean: np.ndarray
    term_var: np.ndarray
    weights: np.ndarray
    remainder_mean: np.ndarray
    remainder_std: np.ndarray
    n_reference: int
    score_mean: float
    score_var: float
    remainder_score_cov: np.ndarray

    @property
    def variance_independent(self) -> float:
        """``Σ_i w_i² Var(X_i)`` over the set."""
        return float(np.sum(self.weights**2 * self.term_var))

    def variance(self, estimator: str = "terms") -> float:
        """The bridge variance V by the named estimator (``terms`` or ``independent``)."""
        if estimator == "terms":
            return self.variance_terms
        if estimator == "independent":
            return self.variance_independent
        raise InvalidParameterError(f"variance must be one of {VARIANCES}, got {estimator!r}.")

    @staticmethod
    def pool(a: ReferenceStats, b: ReferenceStats) -> ReferenceStats:
        """The statistics of the union of two disjoint sets, from each set's statistics."""
        na, nb = a.n_reference, b.n_reference
        n = na + nb
        fa, fb = na / n, nb / n

        def pooled(mean_a, var_a, mean_b, var_b):
            mean = fa * mean_a + fb * mean_b
            var = fa * var_a + fb * var_b + fa * fb * (mean_a - mean_b) ** 2
            return mean, var

        tm, tv = pooled(a.term_mean, a.term_var, b.term_mean, b.term_var)
        rm, rv = pooled(a.remainder_mean, a.remainder_std**2, b.remainder_mean, b.remainder_std**2)
        sm, sv = pooled(a.score_mean, a.score_var, b.score_mean, b.score_var)
        cov = (
            fa * a.remainder_score_cov
            + fb * b.remainder_score_cov
            + fa * fb * (a.remainder_mean - b.remainder_mean) * (a.score_mean - b.score_mean)
        )
        return ReferenceStats(
            variance_terms=fa * a.variance_terms + fb * b.variance_terms,
            term_mean=frozen_array(tm),
            term_var=frozen_array(tv),
            weights=a.weights,
            remainder_mean=frozen_array(rm),
            remainder_std=frozen_array(np.sqrt(rv)),
            n_reference=n,
            score_mean=float(sm),
            score_var=float(sv),
            remainder_score_cov=frozen_array(cov),
        )


def reference_statistics(
    walk: Walk, X_ref, *, leave_own_out: bool = False, own=None
) -> ReferenceStats:
    """Accumulate V, per-term moments, ``M_t`` and ``D_t`` over the reference examples ``X_ref``.

    Rows are processed in chunks so memory stays bounded for large reference sets. Moments are
    accumulated around a first-chunk estimate so that variances do not vanish by cancellation.
    ``leave_own_out``: ``X_ref`` is the model's training data, walked without each example's own
    support vector (:meth:`attentive.walk.Walk.leave_own_out`; ``own``: each row's own term
    index, when known).

    ``walk`` is any walk with ``steps`` (:class:`attentive.walk.WalkSteps`): a plain walk starts
    at ``S_0 = 0``, a sketched one (:class:`attentive.sketch.SketchedWalk`) at the sketch's score.
    The statistics are those of its steps: the term moments of its centred terms, ``V(x)`` the
    bridge variance of its n steps from ``S_0`` to ``S_n``, ``M_t``, ``D_t`` of its remainder, and
    the moments of its ``S_n`` (the start included).
    """
    Xp = walk.prepare(X_ref)
    m = Xp.shape[0]
    n = walk.n_terms
    if m == 0:
        raise InvalidParameterError("the reference set is empty.")
    v_terms = 0.0
    sums = np.zeros((5, n))  # Σ X, Σ X², Σ R, Σ R², Σ R·S_n (all shifted)
    sn_sum = sn_sq = 0.0
    shift_x = shift_r = shift_n = None
    for rows in row_chunks(m, n):
        steps = walk.steps(
            Xp[rows], leave_own_out=leave_own_out, own=None if own is None else own[rows]
        )
        values = steps.centred  # X_{π(k)}(x), computed once
        contrib = steps.contributions()
        increments = contrib.sum(axis=1)  # S_n − S_0
        v_terms += float(((contrib - (increments / n)[:, None]) ** 2).sum())
        R = increments[:, None] - np.cumsum(contrib, axis=1)
        s_n = increments + steps.start
        if shift_x is None:
            shift_x, shift_r, shift_n = values.mean(axis=0), R.mean(axis=0), float(s_n.mean())
        values -= shift_x
        R -= shift_r
        s_n -= shift_n
        sums[0] += values.sum(axis=0)
        sums[1] += (values * values).sum(axis=0)
        sums[2] += R.sum(axis=0)
        sums[3] += (R * R).sum(axis=0)
        sums[4] += s_n @ R
        sn_sum += float(s_n.sum())
        sn_sq += float(s_n @ s_n)
    mean_x, mean_r, mean_n = sums[0] / m, sums[2] / m, sn_sum / m
    var_x = np.maximum(sums[1] / m - mean_x**2, 0.0)
    var_r = np.maximum(sums[3] / m - mean_r**2, 0.0)
    cov_rn = sums[4] / m - mean_r * mean_n
    remainder_mean = mean_r + shift_r
    remainder_std = np.sqrt(var_r)
    remainder_mean[-1] = 0.0
    remainder_std[-1] = 0.0
    cov_rn[-1] = 0.0
    return ReferenceStats(
        variance_terms=v_terms / m,
        term_mean=frozen_array(mean_x + shift_x),
        term_var=frozen_array(var_x),
        weights=walk.ordered_weights,
        remainder_mean=frozen_array(remainder_mean),
        remainder_std=frozen_array(remainder_std),
        n_reference=m,
        score_mean=mean_n + shift_n,
        score_var=max(sn_sq / m - mean_n**2, 0.0),
        remainder_score_cov=frozen_array(cov_rn),
    )


@dataclass(frozen=True)
class Boundary:
    """Where to stop, position by position, in S space.

    Attributes
    ----------
    kind : {"constant", "curved", "budget", "full"} (or "calibrated")
    side : {"lower", "upper", "both"}
    lower, upper : ndarray of shape (n_terms,)
        Entry ``t-1`` is the threshold at position ``t``; ±inf where the side is off.
    estimate_slope : ndarray of shape (n_terms,) or None
        The rule's own estimate of ``S_n`` at a stop is ``estimate_slope[t-1] · S_t +
        estimate_intercept[t-1]`` (SPEC §2, "a stopped example's score"): slope 1 and ``M_t`` for
        the curved boundary, ``b_t`` and ``a_t`` for the regression family, ``n/t`` and 0 for the
        finite-population family. None: the rule has no estimate but its threshold (constant:
        ``τ_t``, Algorithm 1).
    estimate_intercept : ndarray of shape (n_terms,) or None
        The intercept for a lower stop.
    upper_estimate_intercept : ndarray of shape (n_terms,) or None
        The intercept for an upper stop (None: same as ``estimate_intercept``).
    budget : int or None
        For ``kind="budget"``: evaluate exactly this many terms (Algorithm 2).
    params : dict
        What built it (δ, V, z, ...), for reports.
    mass : ndarray of shape (n_terms,) or None
        A rule on a second running sum (beyond the paper): with it, ``lower``, ``upper`` and
        the estimate apply to the rule's statistic ``V_t = S_t + mass[t-1] · A_t`` instead of
        ``S_t``, where ``A_t = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)`` is the walk's running mass
        (:meth:`attentive.walk.Walk.partial_masses`; the mass-regression family). None: the
        statistic is ``S_t``. (``stopped_score="boundary"`` then scores a stop ``c`` plus the
        crossed threshold, which is one on ``V_t``; the default estimate is on the scale of
        ``S_n``.)
    """

    kind: str
    side: str
    lower: np.ndarray
    upper: np.ndarray
    estimate_slope: np.ndarray | None = None
    estimate_intercept: np.ndarray | None = None
    upper_estimate_intercept: np.ndarray | None = None
    budget: int | None = None
    params: dict | None = None
    mass: np.ndarray | None = None

    def __post_init__(self):
        n = self.lower.shape[0]
        for name in (
            "upper",
            "estimate_slope",
            "estimate_intercept",
            "upper_estimate_intercept",
            "mass",
        ):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (n,):
                raise InvalidParameterError(
                    f"boundary {name} must have shape ({n},) like lower, got {np.shape(value)}."
                )
        if self.estimate_slope is not None and self.estimate_intercept is None:
            raise InvalidParameterError("a boundary with estimate_slope needs estimate_intercept.")

    @property
    def n_terms(self) -> int:
        return int(self.lower.shape[0])

    @property
    def uses_mass(self) -> bool:
        """Whether the rule's statistic involves the running mass ``A_t`` (see ``mass``)."""
        return getattr(self, "mass", None) is not None

    def statistic(self, S, A=None) -> np.ndarray:
        """The statistic the thresholds apply to, for partial scores ``S`` (columns ``t − 1``,
        any leading positions) and, for a rule with ``mass``, the running masses ``A`` alike:
        ``S`` itself, or ``S + mass · A``."""
        S = np.asarray(S, dtype=np.float64)
        if not self.uses_mass:
            return S
        if A is None:
            raise InvalidParameterError(
                "this boundary stops on S_t + κ_t·A_t (a mass-regression rule): pass the "
                "running masses A (Walk.partial_masses) along with the partial scores."
            )
        A = np.asarray(A, dtype=np.float64)
        if A.shape != S.shape:
            raise InvalidParameterError(
                f"the running masses A must have the shape of S, {S.shape}, got {A.shape}."
            )
        return S + self.mass[: S.shape[-1]] * A

    def running_estimate(self, S, A=None) -> np.ndarray:
        """The rule's own estimate of ``S_n`` at every position: ``estimate_slope · statistic +
        estimate_intercept`` (:meth:`statistic` of ``S`` and ``A``, the columns positions
        ``t − 1``), NaN where the slope is not positive (the rule cannot stop there). For rules
        whose two sides share the intercept (``upper_estimate_intercept`` None). A
        mass-regression rule's is ``a_t + b_t S_t + c_t A_t``, compared with ``θ_S ∓ z σ_t``
        (:meth:`estimate_thresholds`): the same crossings as ``V_t`` with ``lower`` and
        ``upper``, on the scale of ``S_n`` even where ``b_t`` is small (``V_t`` and its
        thresholds grow like ``1 / b_t``)."""
        if self.estimate_slope is None or self.upper_estimate_intercept is not None:
            raise InvalidParameterError(
                "this boundary has no single estimate of S_n (estimate_slope, one intercept)."
            )
        V = self.statistic(S, A)
        k = V.shape[-1]
        slope = self.estimate_slope[:k]
        with np.errstate(invalid="ignore"):
            return np.where(slope > 0, slope * V + self.estimate_intercept[:k], np.nan)

    def estimate_thresholds(self) -> tuple[np.ndarray, np.ndarray]:
        """``lower`` and ``upper`` moved to the scale of :meth:`running_estimate`: what each
        side's estimate is compared with (NaN where that side cannot stop)."""
        if self.estimate_slope is None:
            raise InvalidParameterError("this boundary has no estimate of S_n (estimate_slope).")
        slope = self.estimate_slope
        up = self.upper_estimate_intercept
        up = self.estimate_intercept if up is None else up
        ok = slope > 0
        with np.errstate(invalid="ignore"):
            lower = np.where(
                ok & np.isfinite(self.lower), slope * self.lower + self.estimate_intercept, np.nan
            )
            upper = np.where(ok & np.isfinite(self.upper), slope * self.upper + up, np.nan)
        return lower, upper

    def stop_estimate(self, at, side, S_at, stopped_score: str = "estimate") -> np.ndarray:
        """Estimates of ``S_n`` for stopped walks (SPEC §2), before moving them to their side.

        ``at`` are 0-based positions (``t − 1``), ``side`` −1 (lower) or +1 (upper), ``S_at`` the
        rule's statistic there (:meth:`statistic`: the partial score ``S_t``, or ``V_t`` for a
        rule with ``mass``). ``stopped_score="estimate"``: the rule's own estimate
        (``estimate_slope · S_t + intercept``, or the crossed threshold for a rule without one);
        ``"boundary"``: the crossed threshold ``τ_t`` (the paper's Algorithm 1).
        """
        check_stopped_score(stopped_score)
        at = np.asarray(at, dtype=np.int64)
        side = np.asarray(side)
        threshold = np.where(side < 0, self.lower[at], self.upper[at])
        if stopped_score == "boundary" or self.estimate_slope is None:
            return threshold
        up = (
            self.estimate_intercept
            if self.upper_estimate_intercept is None
            else self.upper_estimate_intercept
        )
        intercept = np.where(side < 0, self.estimate_intercept[at], up[at])
        return self.estimate_slope[at] * np.asarray(S_at, dtype=np.float64) + intercept


def frozen_array(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.flags.writeable = False
    return a


def full_boundary(n_terms: int) -> Boundary:
    """No stopping."""
    return Boundary(
        kind="full",
        side="both",
        lower=frozen_array(np.full(n_terms, -np.inf)),
        upper=frozen_array(np.full(n_terms, np.inf)),
    )


def constant_boundary(
    n_terms: int, delta, variance, theta_s=0.0, side="lower", upper_variance=None
) -> Boundary:
    """The Constant-STST boundary: the same τ at every position (SPEC §2).

    ``variance`` is the lower side's bridge variance V, ``upper_variance`` the upper side's
    (SPEC §2, per-side statistics: each from the reference examples that side must not stop
    wrongly, the positives for the lower side and the negatives for the upper); None: the
    upper side uses ``variance`` too."""
    check_side(side)
    upper_variance = variance if upper_variance is None else upper_variance
    lo = constant_threshold(delta, variance, theta_s, side="lower")
    up = constant_threshold(delta, upper_variance, theta_s, side="upper")
    lower = np.full(n_terms, lo if side in ("lower", "both") else -np.inf)
    upper = np.full(n_terms, up if side in ("upper", "both") else np.inf)
    return Boundary(
        kind="constant",
        side=side,
        lower=frozen_array(lower),
        upper=frozen_array(upper),
        params={
            "delta": float(delta),
            "variance": float(variance),
            "upper_variance": float(upper_variance),
            "theta_s": float(theta_s),
            "tau_lower": lo,
            "tau_upper": up,
        },
    )


def constant_boundary_at(n_terms: int, tau: float, side: str = "lower") -> Boundary:
    """A one-sided constant boundary at a given τ in S space (the paper's sweep over τ)."""
    if side not in ("lower", "upper"):
        raise InvalidParameterError(
            f"a boundary at one τ has one side, 'lower' or 'upper', not {side!r}."
        )
    tau = float(tau)
    if not np.isfinite(tau):
        raise InvalidParameterError(f"tau must be finite, got {tau!r}.")
    off = np.inf if side == "lower" else -np.inf
    values = np.full(n_terms, tau)
    return Boundary(
        kind="constant",
        side=side,
        lower=frozen_array(values if side == "lower" else np.full(n_terms, -np.inf)),
        upper=frozen_array(values if side == "upper" else np.full(n_terms, off)),
        params={"tau": tau},
    )


def curved_boundary(
    stats: ReferenceStats, delta, theta_s=0.0, side="lower", z=None, upper_stats=None
) -> Boundary:
    """Gaussian stochastic curtailment (SPEC §2).

    Stop lower when ``S_t + M_t < θ_S − z D_t``, upper when ``S_t + M_t > θ_S + z D_t``, with
    ``z = Φ⁻¹(1 − δ)`` unless given. ``stats`` gives ``M_t``, ``D_t`` for the lower side and
    ``upper_stats`` (default: ``stats``) for the upper side: the estimator passes the statistics of
    the class each side must not stop by mistake (positives for lower, negatives for upper).
    """
    check_side(side)
    d = check_delta(delta)
    z = float(ndtri(1.0 - d)) if z is None else float(z)
    upper_stats = stats if upper_stats is None else upper_stats
    M_lo, D_lo = np.asarray(stats.remainder_mean), np.asarray(stats.remainder_std)
    M_up, D_up = np.asarray(upper_stats.remainder_mean), np.asarray(upper_stats.remainder_std)
    n = M_lo.shape[0]
    lower = theta_s - z * D_lo - M_lo if side in ("lower", "both") else np.full(n, -np.inf)
    upper = theta_s + z * D_up - M_up if side in ("upper", "both") else np.full(n, np.inf)
    return Boundary(
        kind="curved",
        side=side,
        lower=frozen_array(lower),
        upper=frozen_array(upper),
        estimate_slope=frozen_array(np.ones(n)),
        estimate_intercept=frozen_array(M_lo),
        upper_estimate_intercept=frozen_array(M_up),
        params={"delta": d, "z": z, "theta_s": float(theta_s)},
    )


def budget_boundary(n_terms: int, budget: int) -> Boundary:
    """The budgeted baseline (the paper's Algorithm 2): evaluate exactly ``budget`` terms."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise InvalidParameterError(f"budget must be an integer in [1, {n_terms}], got {budget!r}.")
    if not (1 <= budget <= n_terms):
        raise InvalidParameterError(f"budget must be in [1, {n_terms}], got {budget}.")
    return Boundary(
        kind="budget",
        side="both",
        lower=frozen_array(np.full(n_terms, -np.inf)),
        upper=frozen_array(np.full(n_terms, np.inf)),
        budget=int(budget),
        params={"budget": int(budget)},
    )
