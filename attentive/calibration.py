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

The grid's outcomes (every scale applied at once, in bounded memory) and the oracle are in
:mod:`attentive.grid`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta

from attentive.errors import InvalidParameterError
from attentive.families import BoundaryFamily
from attentive.grid import GridOutcomes
from attentive.validation import check_alpha, check_delta

__all__ = [
    "AUTO",
    "CalibrationReport",
    "CalibrationWarning",
    "calibrate_auto",
    "calibrate_scale",
    "calibration_examples_needed",
    "clopper_pearson_upper",
    "fixed_sequence_scan",
    "minimum_calibration_size",
]

#: ``family="auto"``: the families ranked on the reference set, the cheapest calibrated at α
#: (or, in :func:`calibrate_auto` without a ranking, each at α/K: Bonferroni).
AUTO = "auto"


class CalibrationWarning(UserWarning):
    """No boundary scale passed calibration: the classifier falls back to full evaluation."""


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
    notes : tuple of str
        What the calibration set shows beside the guarantee, which stands: set by the estimator
        where the chosen rule decides most of the full model's rarer decision the other way (the
        :class:`CalibrationWarning` it gives, kept for those who do not see warnings).
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
    notes: tuple = ()  # (also the class's: a report saved before notes reads as none)

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
