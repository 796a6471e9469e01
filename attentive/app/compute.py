"""Figure data for the dashboard: boundaries, the operating point, curves and trajectories.

Every number comes from the core (:mod:`attentive.boundaries`, :mod:`attentive.evaluation`,
:mod:`attentive.metrics`, :mod:`attentive.simulation`); this module only selects, reshapes and
labels it for the views, which draw what they receive. Nothing here imports Panel, so the whole
pipeline runs (and is tested and benchmarked) without a browser.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from attentive.app.cache import (
    CALIBRATION_SIZE,
    SweepBundle,
    WalkBundle,
    cached,
    constant_taus,
    simulation,
)
from attentive.boundaries import (
    Boundary,
    budget_boundary,
    constant_boundary,
    curved_boundary,
    full_boundary,
)
from attentive.calibration import (
    CalibrationReport,
    GridOutcomes,
    calibrate_scale,
    grid_outcomes,
)
from attentive.errors import InvalidParameterError
from attentive.evaluation import Evaluation, apply_boundary
from attentive.families import BoundaryFamily, make_family
from attentive.metrics import disagreement_rate, precision_recall, stop_error
from attentive.simulation import default_deltas

__all__ = [
    "BOUNDARY_BUILDERS",
    "DEFAULT_ALPHA",
    "DELTA_GRID",
    "DELTA_RANGE",
    "Figures",
    "budget_terms",
    "calibrated_boundary",
    "calibration_family",
    "calibration_outcomes",
    "calibration_report",
    "calibration_table",
    "calibration_window",
    "compute_figures",
    "delta_curve",
    "make_boundary",
    "nearest_budget",
    "nearest_delta",
]

DELTA_RANGE = (1e-4, 0.5)
# δ values at which the current boundary kind is evaluated for the tradeoff and theory views.
DELTA_GRID = np.geomspace(*DELTA_RANGE, 40)
# Longest walk drawn point by point; longer walks are drawn every ⌈n / this⌉ terms (stops exact).
MAX_DRAWN_POSITIONS = 1000
# The calibrated boundary's failure probability α unless the user moves it.
DEFAULT_ALPHA = 0.05


def budget_terms(fraction: float, n_terms: int) -> int:
    """The budget B for a fraction of the terms (at least one term)."""
    return max(1, min(n_terms, math.ceil(float(fraction) * n_terms)))


def _constant(
    w: WalkBundle, delta: float, theta_s: float, side: str, budget: float, alpha: float
) -> Boundary:
    return constant_boundary(w.n_terms, delta, w.variance, theta_s, side)


def _curved(
    w: WalkBundle, delta: float, theta_s: float, side: str, budget: float, alpha: float
) -> Boundary:
    # As AttentiveClassifier: positives' M_t, D_t for the lower side, negatives' for the upper.
    return curved_boundary(
        w.stats["positive"], delta, theta_s, side, upper_stats=w.stats["negative"]
    )


def _budget(
    w: WalkBundle, delta: float, theta_s: float, side: str, budget: float, alpha: float
) -> Boundary:
    return budget_boundary(w.n_terms, budget_terms(budget, w.n_terms))


def _calibrated(
    w: WalkBundle, delta: float, theta_s: float, side: str, budget: float, alpha: float
) -> Boundary:
    report = calibration_report(w, delta, alpha, theta_s, side)
    return calibrated_boundary(w, report, theta_s, side)


# boundary kind -> builder(walks, δ, θ_S, side, budget fraction, α). One line per kind: a new
# boundary is added here and appears in the dashboard's selector.
BOUNDARY_BUILDERS: dict[str, Callable[..., Boundary]] = {
    "constant": _constant,
    "curved": _curved,
    "budget": _budget,
    "calibrated": _calibrated,
}


def make_boundary(
    kind: str,
    walks: WalkBundle,
    delta: float,
    theta_s: float,
    side: str,
    budget: float,
    alpha: float = DEFAULT_ALPHA,
) -> Boundary:
    """The boundary of ``kind`` for the current controls."""
    return BOUNDARY_BUILDERS[kind](walks, delta, theta_s, side, budget, alpha)


# ----------------------------------------------------------------------------- calibration


def calibration_family(walks: WalkBundle, theta_s: float, side: str) -> BoundaryFamily:
    """The curved family (scale z) of ``walks`` at this θ_S and side, as the estimator builds it."""
    return make_family("curved", walks.estimator.walk_statistics_, float(theta_s), side)


def calibration_outcomes(walks: WalkBundle, theta_s: float, side: str) -> GridOutcomes:
    """Early decisions of the calibration examples under every scale of the default grid.

    Independent of δ and α, so it is cached per (walk, side, θ_S): a δ or α move only reruns the
    Clopper–Pearson scan.
    """
    if walks.calibration_S is None:
        raise InvalidParameterError(
            "the calibrated boundary needs the walk refit without its calibration examples "
            "(attentive.app.cache.calibration_walk_bundle)."
        )
    return cached(
        "curve",
        (walks.key, "calibration", side, float(theta_s)),
        lambda: grid_outcomes(walks.calibration_S, calibration_family(walks, theta_s, side)),
    )


def calibration_report(
    walks: WalkBundle, delta: float, alpha: float, theta_s: float, side: str
) -> CalibrationReport:
    """The fixed-sequence Clopper–Pearson calibration of SPEC §3 on the held-out examples."""
    outcomes = calibration_outcomes(walks, theta_s, side)
    return calibrate_scale(outcomes, delta=delta, alpha=alpha, family="curved", side=side)


def calibrated_boundary(
    walks: WalkBundle, report: CalibrationReport, theta_s: float, side: str
) -> Boundary:
    """The chosen scale's boundary, or full evaluation when no scale passed (as the estimator)."""
    if report.fallback:
        return dataclasses.replace(
            full_boundary(walks.n_terms),
            params={"delta": report.delta, "alpha": report.alpha, "n_calibration": report.m},
        )
    chosen = calibration_family(walks, theta_s, side).boundary(report.chosen_scale)
    return dataclasses.replace(
        chosen,
        kind="calibrated",
        params={
            **(chosen.params or {}),
            "family": report.family,
            "z": report.chosen_scale,
            "delta": report.delta,
            "alpha": report.alpha,
            "n_calibration": report.m,
        },
    )


CALIBRATION_COLUMNS = {
    "z": "z",
    "k": "k (disagree)",
    "disagreement": "k / m",
    "upper_bound": "U (bound)",
    "evaluated_fraction": "evaluated",
    "status": "status",
    "chosen": "chosen",
}


def calibration_table(report: CalibrationReport) -> pd.DataFrame:
    """The calibration table for display: one row per scale in scan order (``step`` 1..K)."""
    frame = report.to_frame()[list(CALIBRATION_COLUMNS)].rename(columns=CALIBRATION_COLUMNS)
    frame.insert(0, "step", np.arange(1, len(frame) + 1))
    return frame


def calibration_window(report: CalibrationReport, before: int = 5, after: int = 2) -> slice:
    """The table rows around where the scan ended: the last scales tested and a few after.

    Every row before the window passed (the scan only stops at a failure), so the window with the
    number of rows above it tells the whole story of the scan.
    """
    end = max(report.n_tested - 1, 0)
    return slice(max(0, end - before), min(report.grid.size, end + after + 1))


def calibration_note(walks: WalkBundle, report: CalibrationReport) -> str:
    """Where the calibration examples came from, in one sentence."""
    total = walks.n_fit + report.m
    return (
        f"Calibration set: m = {report.m:,} of the {total:,} training examples, held out "
        f"(stratified, {CALIBRATION_SIZE:.0%}, seeded by the permutation seed) before anything "
        f"was fitted; the model, μ, M_t and D_t come from the other {walks.n_fit:,}. Any scale "
        f"needs m ≥ {report.minimum_size:,} at δ = {report.delta:.3g}, α = {report.alpha:.3g}. "
        f"Scan: z from {report.grid[0]:g} down, {report.n_tested} of {report.grid.size} scales "
        "tested."
    )


# ----------------------------------------------------------------------------- δ curves


@dataclass(frozen=True)
class DeltaCurve:
    """A boundary kind's metrics over :data:`DELTA_GRID` (frozen arrays)."""

    kind: str
    delta: np.ndarray
    mean_evaluated: np.ndarray
    stop_error: np.ndarray
    disagreement: np.ndarray

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "delta": self.delta,
                "mean_evaluated": self.mean_evaluated,
                "stop_error": self.stop_error,
                "disagreement": self.disagreement,
            }
        )


def delta_curve(
    kind: str,
    walks: WalkBundle,
    sweeps: SweepBundle,
    side: str,
    theta: float,
    alpha: float = DEFAULT_ALPHA,
) -> DeltaCurve:
    """Stop-error, disagreement and mean terms evaluated of ``kind`` at every δ of the grid.

    A one-sided constant boundary reads them off the cached τ sweep (a few ``searchsorted``);
    other kinds apply the boundary to ``S`` once per δ. Cached per (walk, kind, side, θ) and,
    for the calibrated boundary, α.
    """
    if kind == "budget":
        kind = "constant"  # δ has no meaning for a budget; the theory check shows Constant-STST

    def compute() -> DeltaCurve:
        if kind == "constant" and sweeps.sweep is not None:
            taus = constant_taus(DELTA_GRID, walks.variance, sweeps.theta_s, side)
            curve = sweeps.sweep.curve(taus)
            return DeltaCurve(
                kind,
                DELTA_GRID,
                curve.mean_evaluated,
                curve.stop_error,
                curve.disagreement,
            )
        rows = []
        for d in DELTA_GRID:  # a small fixed grid; each step is one vectorised pass over S
            b = make_boundary(kind, walks, d, sweeps.theta_s, side, 1.0, alpha)
            ev = apply_boundary(walks.S, b, sweeps.theta_s, walks.offset)
            rows.append(
                (
                    ev.n_evaluated.mean(),
                    stop_error(ev.positive, sweeps.full_positive, side),
                    disagreement_rate(ev.positive, sweeps.full_positive),
                )
            )
        a = np.array(rows, dtype=np.float64).reshape(-1, 3)
        return DeltaCurve(kind, DELTA_GRID, a[:, 0], a[:, 1], a[:, 2])

    key = (walks.key, kind, side, float(theta))
    if kind == "calibrated":
        key += (float(alpha),)
    return cached("curve", key, compute)


def nearest_delta(curve: pd.DataFrame, mean_evaluated: float, error: float, n_terms: int) -> float:
    """The grid δ whose point on the tradeoff plot is nearest a click at (terms, stop-error)."""
    x = curve["mean_evaluated"].to_numpy() / max(1, n_terms)
    y = np.nan_to_num(curve["stop_error"].to_numpy(), nan=1.0)
    d2 = (x - mean_evaluated / max(1, n_terms)) ** 2 + (y - error) ** 2
    return float(curve["delta"].to_numpy()[int(np.argmin(d2))])


def nearest_budget(mean_evaluated: float, n_terms: int) -> float:
    """The budget fraction for a click at ``mean_evaluated`` terms on the budgeted curve."""
    return min(1.0, max(1.0 / n_terms, round(float(mean_evaluated)) / n_terms))


# ----------------------------------------------------------------------------- figure data


@dataclass(frozen=True)
class Figures:
    """Everything the views draw, for one setting of the controls.

    Attributes
    ----------
    trajectories : dict
        ``{"negative": (t, s), "positive": (t, s)}`` by full-evaluation class: each one path of
        float32 points with NaN gaps between walks (``S_0 = 0`` first, the stop last).
    stops : DataFrame
        ``t``, ``s``, ``full_class`` for the drawn walks that stopped early.
    boundary : DataFrame
        ``t``, ``lower``, ``upper`` in S space (NaN where a side is off), and ``theta_s``.
    theta_s : float
        ``θ_S``.
    budget : int or None
        B for the budget boundary.
    budget_line : DataFrame
        ``t``, ``s``: a vertical segment at B spanning the drawn walks (empty without a budget).
    tradeoff : DataFrame
        ``method`` (attentive τ sweep, budgeted), ``mean_evaluated``, ``stop_error``,
        ``disagreement``.
    delta_curve : DataFrame
        The current boundary kind over the δ grid (``delta``, ``mean_evaluated``, ...).
    operating_point : dict
        ``mean_evaluated``, ``stop_error``, ``disagreement`` at the current controls.
    pr : DataFrame
        ``method``, ``recall``, ``precision``.
    average_precision : dict
        Method → average precision.
    theory : DataFrame
        ``source`` (this dataset / Brownian-bridge simulation), ``required``, ``actual``.
    metrics : dict
        The headline numbers.
    boundary_params : dict
        The boundary's parameters (τ, z, ...).
    calibration : CalibrationReport or None
        For the calibrated boundary: the report (``guarantee`` in words, ``fallback``, ...).
    calibration_table : DataFrame or None
        :func:`calibration_table` of the report.
    calibration_note : str
        :func:`calibration_note`: where the calibration examples came from.
    """

    trajectories: dict[str, tuple[np.ndarray, np.ndarray]]
    stops: pd.DataFrame
    boundary: pd.DataFrame
    theta_s: float
    n_terms: int
    budget: int | None
    budget_line: pd.DataFrame
    tradeoff: pd.DataFrame
    delta_curve: pd.DataFrame
    operating_point: dict
    pr: pd.DataFrame
    average_precision: dict[str, float]
    theory: pd.DataFrame
    metrics: dict
    boundary_params: dict = field(default_factory=dict)
    calibration: CalibrationReport | None = None
    calibration_table: pd.DataFrame | None = None
    calibration_note: str = ""


def _tradeoff_frame(walks: WalkBundle, sweeps: SweepBundle, side: str, theta: float):
    def compute() -> pd.DataFrame:
        curves = [sweeps.budgeted]
        if sweeps.attentive is not None:
            curves.insert(0, sweeps.attentive)
        frames = []
        for c in curves:
            f = c.to_frame()
            frames.append(f.rename(columns={c.parameter_name: "parameter"}))
        return pd.concat(frames, ignore_index=True)

    return cached("curve", (walks.key, "tradeoff", side, float(theta)), compute)


def _drawn_positions(n: int) -> np.ndarray:
    stride = max(1, math.ceil(n / MAX_DRAWN_POSITIONS))
    return np.unique(np.append(np.arange(0, n + 1, stride), n))


def trajectory_paths(
    walks: WalkBundle, ev: Evaluation, full_positive: np.ndarray, n_draw: int
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pd.DataFrame]:
    """NaN-separated paths of the first ``n_draw`` sampled walks, each cut at its stop."""
    idx = walks.sample[: max(0, int(n_draw))]
    n = walks.n_terms
    grid = _drawn_positions(n)
    k = idx.size
    S0 = np.concatenate([np.zeros((k, 1)), walks.S[idx]], axis=1)  # column t = S_t, S_0 = 0
    stop_t = ev.n_evaluated[idx]
    y = S0[:, grid].astype(np.float32)
    x = np.broadcast_to(grid.astype(np.float32), y.shape).copy()
    # The first drawn position past the stop becomes the stop itself, later ones are gaps.
    cut = np.searchsorted(grid, stop_t, side="right")
    rows = np.flatnonzero(cut < grid.size)
    x[rows, cut[rows]] = stop_t[rows]
    y[rows, cut[rows]] = S0[rows, stop_t[rows]]
    # Keep each walk up to its stop, then one NaN gap: a compact single path per class.
    keep = np.concatenate(
        [np.arange(grid.size)[None, :] <= cut[:, None], np.ones((k, 1), dtype=bool)], axis=1
    )
    gap = np.full((k, 1), np.nan, dtype=np.float32)
    x = np.concatenate([x, gap], axis=1)
    y = np.concatenate([y, gap], axis=1)
    cls = full_positive[idx]
    paths = {
        name: (x[rows][keep[rows]], y[rows][keep[rows]])
        for name, rows in (("negative", ~cls), ("positive", cls))
    }
    stopped = ev.stopped[idx]
    stops = pd.DataFrame(
        {
            "t": stop_t[stopped],
            "s": S0[np.flatnonzero(stopped), stop_t[stopped]],
            "full_class": np.where(cls[stopped], "positive", "negative"),
        }
    )
    return paths, stops


def _budget_line(budget: int | None, paths) -> pd.DataFrame:
    if budget is None:
        return pd.DataFrame({"t": [], "s": []})
    ys = np.concatenate([paths["negative"][1], paths["positive"][1]])
    finite = ys[np.isfinite(ys)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    return pd.DataFrame({"t": [budget, budget], "s": [lo, hi]})


def _boundary_frame(b: Boundary, n: int, theta_s: float) -> pd.DataFrame:
    grid = _drawn_positions(n)[1:]
    at = grid - 1
    lower = np.where(np.isfinite(b.lower[at]), b.lower[at], np.nan)
    upper = np.where(np.isfinite(b.upper[at]), b.upper[at], np.nan)
    return pd.DataFrame(
        {"t": grid, "lower": lower, "upper": upper, "theta_s": np.full(grid.size, theta_s)}
    )


def compute_figures(
    walks: WalkBundle,
    *,
    kind: str,
    side: str,
    delta: float,
    theta: float,
    budget: float,
    n_trajectories: int,
    alpha: float = DEFAULT_ALPHA,
) -> Figures:
    """All figure data for one setting of the controls.

    Reuses the cached S matrix and sweep for (walk, side, θ); a δ move costs one pass of the
    boundary over ``S``, two small precision–recall curves and the trajectory sample.
    """
    from attentive.app.cache import sweep_bundle

    sweeps = sweep_bundle(walks, side, theta)
    theta_s = sweeps.theta_s
    n = walks.n_terms
    report = None
    if kind == "calibrated":
        report = calibration_report(walks, delta, alpha, theta_s, side)
        boundary = calibrated_boundary(walks, report, theta_s, side)
    else:
        boundary = make_boundary(kind, walks, delta, theta_s, side, budget, alpha)
    ev = apply_boundary(walks.S, boundary, theta_s, walks.offset)
    full_pos = sweeps.full_positive
    mean_eval = float(ev.n_evaluated.mean())
    serr = stop_error(ev.positive, full_pos, side)
    dis = disagreement_rate(ev.positive, full_pos)

    # Budgeted at the same cost as the current rule (the paper's comparison), or the budget itself.
    b_cmp = boundary.budget if boundary.budget is not None else budget_terms(mean_eval / n, n)
    ev_budget = (
        ev
        if kind == "budget"
        else apply_boundary(walks.S, budget_boundary(n, b_cmp), theta_s, walks.offset)
    )
    prs = precision_recall(walks.y_test, {"attentive": ev.decision, "budgeted": ev_budget.decision})
    prs = {"full": walks.full_pr, **prs}
    pr = pd.concat(
        [
            pd.DataFrame({"method": name, "recall": c.recall, "precision": c.precision})
            for name, c in prs.items()
        ],
        ignore_index=True,
    )

    paths, stops = trajectory_paths(walks, ev, full_pos, n_trajectories)
    dcurve = delta_curve(kind, walks, sweeps, side, theta, alpha)
    # δ is a disagreement rate for the calibrated boundary, a stop-error for the others.
    measured = "disagreement" if kind == "calibrated" else "stop_error"
    sim = simulation(tuple(default_deltas()))
    theory = pd.concat(
        [
            pd.DataFrame(
                {
                    "source": f"this dataset ({dcurve.kind}"
                    + (", disagreement)" if kind == "calibrated" else ")"),
                    "required": dcurve.delta,
                    "actual": getattr(dcurve, measured),
                }
            ),
            pd.DataFrame(
                {
                    "source": f"Brownian bridge (n={sim.n})",
                    "required": sim.deltas,
                    "actual": sim.actual,
                }
            ),
        ],
        ignore_index=True,
    )

    y = walks.y_test.astype(bool)
    params = dict(boundary.params or {})
    tau = {k: params[k] for k in ("tau_lower", "tau_upper") if k in params}
    metrics = {
        "accuracy_full": float(np.mean(full_pos == y)),
        "accuracy_attentive": float(np.mean(ev.positive == y)),
        "stop_error": serr,
        "disagreement": dis,
        "mean_evaluated": mean_eval,
        "mean_evaluated_fraction": mean_eval / n,
        "speedup": n / mean_eval if mean_eval > 0 else float("nan"),
        "n_stopped": int(ev.stopped.sum()),
        "fraction_stopped": float(ev.stopped.mean()),
        "n_test": int(ev.stopped.size),
        "n_terms": n,
        "theta_s": theta_s,
        "offset": walks.offset,
        "variance": walks.variance,
        "budget_compared": int(b_cmp),
        **{k: float(v) for k, v in tau.items()},
        **{f"ap_{k}": v.average_precision for k, v in prs.items()},
    }
    operating_point = {
        "mean_evaluated": mean_eval,
        "stop_error": serr,
        "disagreement": dis,
    }
    return Figures(
        trajectories=paths,
        stops=stops,
        boundary=_boundary_frame(boundary, n, theta_s),
        theta_s=theta_s,
        n_terms=n,
        budget=boundary.budget,
        budget_line=_budget_line(boundary.budget, paths),
        tradeoff=_tradeoff_frame(walks, sweeps, side, theta),
        delta_curve=dcurve.frame(),
        operating_point=operating_point,
        pr=pr,
        average_precision={k: v.average_precision for k, v in prs.items()},
        theory=theory,
        metrics=metrics,
        boundary_params=params,
        calibration=report,
        calibration_table=None if report is None else calibration_table(report),
        calibration_note="" if report is None else calibration_note(walks, report),
    )
