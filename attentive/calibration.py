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

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta

from attentive.errors import InvalidParameterError
from attentive.families import BoundaryFamily
from attentive.validation import check_alpha, check_delta

__all__ = [
    "AUTO",
    "CalibrationReport",
    "CalibrationWarning",
    "GridOutcomes",
    "calibrate_auto",
    "calibrate_scale",
    "calibration_examples_needed",
    "check_alpha",
    "clopper_pearson_upper",
    "default_grid",
    "family_ranking",
    "fixed_sequence_scan",
    "grid_outcomes",
    "minimum_calibration_size",
    "oracle_stop_positions",
    "reference_profile",
    "walk_grid_outcomes",
]

#: ``family="auto"``: every registered family, each scanned at α/K (Bonferroni).
AUTO = "auto"


class CalibrationWarning(UserWarning):
    """No boundary scale passed calibration: the classifier falls back to full evaluation."""


def default_grid() -> np.ndarray:
    """The grid of scales fixed in advance: ``z`` from 6 down to −6 in steps of 0.05.

    ``z = 6`` (nominal δ' ≈ 1e-9) is far more conservative than any useful boundary; at ``z = −6``
    every family stops nearly every walk at once (a negative z moves the boundary past θ_S), so
    the grid covers each family's whole useful range and a scan that reaches its end has
    nothing more aggressive to try. Fixed-sequence testing pays nothing for a longer grid.
    """
    return np.round(np.arange(6.0, -6.0 - 1e-9, -0.05), 2)


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


def calibration_examples_needed(delta, alpha=0.05, disagreements: int = 0) -> int:
    """The smallest calibration set on which a scale with ``disagreements`` disagreements still
    passes at (δ, α): ``U = BetaInv(1 − α; k + 1, m − k) ≤ δ`` (299 for k = 0, 473 for k = 1 at
    δ = 1 %, α = 5 %)."""
    k = int(disagreements)
    m = max(k + 1, minimum_calibration_size(delta, alpha))
    while clopper_pearson_upper(k, m, alpha) > delta:
        m = max(m + 1, int(m * 1.01))
    lo, hi = max(k + 1, m // 1.01 - 1), m  # the step above may overshoot by 1 %
    lo = int(lo)
    while lo < hi:
        mid = (lo + hi) // 2
        if clopper_pearson_upper(k, mid, alpha) <= delta:
            hi = mid
        else:
            lo = mid + 1
    return hi


def reference_profile(walk, X, families, *, max_rows: int = 2000, seed: int = 0) -> dict:
    """Each family's tradeoff on reference examples: ``{name: (disagreement, evaluated fraction)}``
    per scale of the default grid, on at most ``max_rows`` of ``X`` (a seeded sample).

    For ``family="auto"``: ranking the families on the data the model and its statistics were
    fitted on, which the calibration set is independent of, keeps the guarantee at the full α.
    """
    from sklearn.utils import _safe_indexing
    from sklearn.utils.validation import _num_samples

    n_rows = _num_samples(X)
    rows = np.arange(n_rows)
    if n_rows > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n_rows, max_rows, replace=False))
    outcomes = walk_grid_outcomes(walk, _safe_indexing(X, rows), families)
    return {
        fam.name: (out.disagreement_rates(), out.evaluated_fractions())
        for fam, out in zip(families, outcomes, strict=True)
    }


def family_ranking(profile: dict, delta: float) -> list[str]:
    """Family names from cheapest to dearest in a :func:`reference_profile` at disagreement ≤ δ
    (families that never get there last, by their lowest disagreement)."""

    def cost(name):
        rates, fractions = profile[name]
        ok = rates <= delta
        return (0, float(fractions[ok].min())) if ok.any() else (1, float(rates.min()))

    return sorted(profile, key=cost)


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


# ----------------------------------------------------------------------------- grid outcomes


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

    @staticmethod
    def concatenate(parts) -> GridOutcomes:
        """The outcomes of several sets of examples, one after the other."""
        first = parts[0]
        return GridOutcomes(
            first.grid,
            np.concatenate([p.positive for p in parts]),
            np.concatenate([p.n_evaluated for p in parts]),
            np.concatenate([p.full_positive for p in parts]),
            first.n_terms,
        )

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

    def stop_errors(self, side: str) -> np.ndarray:
        """The paper's stop-error per scale (SPEC §4): lower, stopped full positives over full
        positives; upper, stopped full negatives over full negatives; both, the disagreement."""
        if side == "both":
            return self.disagreement_rates()
        stopped = self.n_evaluated < self.n_terms
        F = self.full_positive if side == "lower" else ~self.full_positive
        return (stopped & F[:, None]).sum(axis=0) / max(int(F.sum()), 1)

    def evaluated_fractions(self) -> np.ndarray:
        """Mean evaluated fraction per scale."""
        return self.n_evaluated.mean(axis=0) / self.n_terms


def grid_outcomes(S, family: BoundaryFamily, grid=None) -> GridOutcomes:
    """Apply every scale of ``grid`` to walks with partial scores ``S`` at once.

    Equals ``apply_boundary(S, family.boundary(z), θ_S)`` for each z (tested against it), but
    costs one running maximum per example and side plus a binary search per example and scale.
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
        running = np.maximum.accumulate(family.crossing_scores(head, upper), axis=1)
        thr = family.thresholds(grid, upper)
        # The first t with running_t > thr is 1 + #{t : running_t ≤ thr}: running is
        # non-decreasing, so that count is a binary search (no crossing gives n).
        t = np.empty((m, K), dtype=np.int64)
        for i in range(m):
            t[i] = 1 + np.searchsorted(running[i], thr, side="right")
        stop[upper] = t
    t_lo, t_up = stop[False], stop[True]
    n_evaluated = np.minimum(t_lo, t_up)
    stopped = n_evaluated < n
    # Both sides at the same t counts as a lower stop, as in ``first_crossing``.
    positive = np.where(stopped, t_up < t_lo, full_positive[:, None])
    return GridOutcomes(grid, positive, n_evaluated, full_positive, n)


def walk_grid_outcomes(walk, X, families, grid=None) -> list[GridOutcomes]:
    """:func:`grid_outcomes` of raw examples ``X`` for several families, in bounded memory.

    The partial scores are computed a chunk of rows at a time (never the whole (m × n) matrix)
    and shared by every family.
    """
    from attentive.walk import row_chunks

    grid = _check_grid(grid)
    Xp = walk.prepare(X)
    m = Xp.shape[0]
    parts: list[list[GridOutcomes]] = [[] for _ in families]
    for rows in row_chunks(m, walk.n_terms):
        S = walk.partial_scores(Xp[rows], prepared=True)
        for k, fam in enumerate(families):
            parts[k].append(grid_outcomes(S, fam, grid))
    if m == 0:
        S = np.zeros((0, walk.n_terms))
        return [grid_outcomes(S, fam, grid) for fam in families]
    return [GridOutcomes.concatenate(p) for p in parts]


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
        The guarantee: disagreement ≤ δ with probability ≥ 1 − α.
    scan_alpha : float or None
        The level each family's scan was run at when several were compared (α/K, Bonferroni);
        None when one family was calibrated (the scan ran at α).
    candidates : tuple of CalibrationReport
        With Bonferroni selection: every family's own scan (at ``scan_alpha``), in registry order.
    ranking : tuple of str
        With ``family="auto"`` in the estimator: the families from cheapest to dearest on the
        reference set (independent of the calibration set); the first one was calibrated at α.
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
    scan_alpha: float | None = None
    candidates: tuple = ()
    ranking: tuple = ()

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
        return minimum_calibration_size(self.delta, self.level)

    @property
    def level(self) -> float:
        """The confidence level each scan used: α, or α/K when K families were compared."""
        return self.alpha if self.scan_alpha is None else self.scan_alpha

    @property
    def exhausted(self) -> bool:
        """True when every scale of the grid passed: the scan ended at the grid's last scale."""
        return self.chosen_index is not None and self.chosen_index == self.grid.size - 1

    def summary_frame(self):
        """With ``family="auto"``: one row per family (chosen scale, calibration fraction, k)."""
        import pandas as pd

        rows = []
        for rep in self.candidates or (self,):
            i = rep.chosen_index
            rows.append(
                {
                    "family": rep.family,
                    "z": None if i is None else float(rep.grid[i]),
                    "evaluated_fraction": 1.0 if i is None else float(rep.evaluated_fraction[i]),
                    "k": None if i is None else int(rep.counts[i]),
                    "upper_bound": None if i is None else float(rep.upper_bounds[i]),
                    "chosen": rep.family == self.family and not self.fallback,
                }
            )
        return pd.DataFrame(rows)

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
        if self.candidates:
            names = ", ".join(rep.family for rep in self.candidates)
            what = "two-sided" if self.side == "both" else f"one-sided ({self.side})"
            what = f"{what} {self.family} boundary (the cheapest of {names}"
            what += f", each tested at α/{len(self.candidates)} = {self.level:.3g}: Bonferroni)"
            if self.fallback:
                what = f"{names} families (each tested at α/{len(self.candidates)})"
        if self.ranking:
            others = ", ".join(name for name in self.ranking if name != self.family)
            what += (
                f" (chosen on the reference set as the cheapest of {self.family}, {others}; the "
                "calibration set played no part in the choice)"
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


def calibrate_auto(
    outcomes: dict,
    *,
    delta: float,
    alpha: float = 0.05,
    side: str = "both",
    ranking=None,
) -> CalibrationReport:
    """Calibrate the cheapest of several families, with the guarantee kept (SPEC §3).

    Two ways to pay for the choice:

    - ``ranking`` given (family names, cheapest first, decided on data the calibration set is
      independent of — the estimator ranks on its reference set): the first family is scanned at
      the full α. The choice never looks at the calibration set, so it costs nothing.
    - no ``ranking``: each of the K families is scanned at α/K (Bonferroni); by the union bound
      the guarantee holds for the family then chosen by its calibration cost (the lowest mean
      evaluated fraction on the calibration set at its chosen scale; ties: listed first).

    Parameters
    ----------
    outcomes : dict of name → GridOutcomes
        Each family's outcomes on the same calibration examples and grid.
    ranking : sequence of str, optional
        The families in order of preference, fixed without the calibration set.
    """
    d, a = check_delta(delta), check_alpha(alpha)
    if not outcomes:
        raise InvalidParameterError("calibrate_auto needs at least one family's outcomes.")
    if ranking is not None:
        first = next((name for name in ranking if name in outcomes), None)
        if first is None:
            raise InvalidParameterError(
                f"ranking {list(ranking)!r} names none of the families {list(outcomes)}."
            )
        rep = calibrate_scale(outcomes[first], delta=d, alpha=a, family=first, side=side)
        return dataclasses.replace(rep, ranking=tuple(ranking))
    level = a / len(outcomes)
    reports = [
        calibrate_scale(out, delta=d, alpha=level, family=name, side=side)
        for name, out in outcomes.items()
    ]
    passed = [r for r in reports if not r.fallback]
    best = min(passed, key=lambda r: r.evaluated_fraction[r.chosen_index]) if passed else reports[0]
    return dataclasses.replace(best, alpha=a, scan_alpha=level, candidates=tuple(reports))


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
