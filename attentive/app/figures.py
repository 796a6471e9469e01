"""Figure data for one setting of the controls: what the views draw, as arrays and DataFrames.

The numbers come from :mod:`attentive.app.rules` (the classifier's public API); this module only
selects, cuts and labels them — walks as NaN-separated paths ending at their stops, the boundary
the rule uses (``boundary_`` of the exported classifier), the tradeoff curves, the theory check.

The walks drawn are those of the statistic the rule's boundary applies to: the partial score
``S_t`` for every rule but one of the mass-regression family, which stops where its estimate of
``S_n``, ``a_t + b_t S_t + c_t A_t`` (``A_t`` the running mass), is ``z σ_t`` past ``θ_S``
(``Boundary.running_estimate``); then the walks of that estimate are drawn, against ``θ_S ± z
σ_t``, so that each stop sits on its boundary as it does for the others. (The evaluator runs the
same rule as thresholds on ``V_t = S_t + κ_t·A_t``, ``κ_t = c_t / b_t``, which grow like ``1 /
b_t``: drawn, they ran to ±1,500 where ``b_t`` nears 0 on ``synthetic``, the walks flat beside
them.) A sketched rule walks after the walk's sketch (SPEC §3b): its walks are the residual walks
``S^ρ_t``, which start at the sketch's score ``F̃(x)`` at t = 0 and end where ``S_t`` ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attentive.app import rules, sketches
from attentive.app.models import Walks

__all__ = [
    "TRADEOFF_LEGEND_BAND",
    "WalkFigure",
    "numbers",
    "theory",
    "tradeoff_error_span",
    "tradeoff_ranges",
    "trajectory_paths",
    "walk_figure",
    "walk_statistic",
]

# Longest walk drawn point by point; longer walks are drawn every ⌈n / this⌉ terms (stops exact).
MAX_DRAWN_POSITIONS = 1000
# δ values at which the current family's actual error is shown on the theory check.
THEORY_DELTAS = np.geomspace(*rules.DELTA_RANGE, 40)


@dataclass(frozen=True)
class WalkFigure:
    """What the walks plot draws for one rule: ``trajectories`` maps the full-evaluation class to
    one float32 path with NaN gaps (the statistic at t = 0 first, the stop last); ``stops`` the
    drawn walks that stopped (``s``: the statistic at the stop); ``boundary`` the rule's lower and
    upper boundary, θ_S and the Brownian-bridge band in S space; ``uses_mass`` whether the
    statistic drawn is the rule's estimate of ``S_n`` from ``S_t`` and ``A_t`` rather than
    ``S_t`` (a mass-regression rule, whose boundary is then ``θ_S ± z σ_t``; the bridge band,
    in S space, does not apply to it);
    ``budget`` the budget rule's B (None for the others) and ``budget_line`` its vertical line;
    ``sketch`` the walk's sketch for a sketched rule, whose residual walks ``S^ρ_t`` are drawn
    from the sketch's score ``F̃(x)`` at t = 0 (None for the others)."""

    trajectories: dict
    stops: pd.DataFrame
    boundary: pd.DataFrame
    theta_s: float
    n_terms: int
    budget: int | None
    budget_line: pd.DataFrame
    uses_mass: bool
    rule: rules.Rule
    sketch: sketches.Sketch | None = None


def _drawn_positions(n: int) -> np.ndarray:
    stride = max(1, math.ceil(n / MAX_DRAWN_POSITIONS))
    return np.unique(np.append(np.arange(0, n + 1, stride), n))


def walk_statistic(walks: Walks, idx, boundary=None, sketch=None) -> np.ndarray:
    """The statistic ``boundary`` applies to along the walks of test examples ``idx``, column
    ``t`` at position t (column 0: t = 0, where it is 0): ``S_t``, or for a boundary that uses
    the running mass its estimate of ``S_n`` (``Boundary.running_estimate``: NaN where it
    cannot stop, and at t = 0 without a sketch). With a ``sketch`` (a sketched rule's), the
    residual walks ``S^ρ_t`` (or their estimate) instead, column 0 the sketch's score ``F̃(x)``,
    with the running masses of the sketched walk's own order."""
    S, A = walks.S[idx], walks.A[idx]
    start = np.zeros(S.shape[0])
    if sketch is not None:
        S, A, start = sketch.S[idx], sketch.A[idx], sketch.start[idx]
    if boundary is not None and boundary.uses_mass:
        stat = boundary.running_estimate(S, A)
        if sketch is None:  # no estimate before the first term (after a sketch: its score)
            start = np.full(S.shape[0], np.nan)
    else:
        stat = S
    return np.concatenate([start[:, None], stat], axis=1)


def trajectory_paths(
    walks: Walks, n_evaluated, full_positive, n_draw: int, boundary=None, sketch=None
):
    """NaN-separated paths of the first ``n_draw`` sampled walks, each cut at its stop: walks of
    the statistic ``boundary`` stops on (:func:`walk_statistic`; ``S_t`` without a boundary,
    after the ``sketch`` for a sketched rule)."""
    idx = walks.sample[: max(0, int(n_draw))]
    n = walks.n_terms
    grid = _drawn_positions(n)
    k = idx.size
    S0 = walk_statistic(walks, idx, boundary, sketch)  # column t: the statistic at t
    stop_t = np.asarray(n_evaluated)[idx]
    y = S0[:, grid].astype(np.float32)
    x = np.broadcast_to(grid.astype(np.float32), y.shape).copy()
    # The first drawn position past the stop becomes the stop itself, later ones are gaps.
    cut = np.searchsorted(grid, stop_t, side="right")
    rows = np.flatnonzero(cut < grid.size)
    x[rows, cut[rows]] = stop_t[rows]
    y[rows, cut[rows]] = S0[rows, stop_t[rows]]
    keep = np.concatenate(
        [np.arange(grid.size)[None, :] <= cut[:, None], np.ones((k, 1), dtype=bool)], axis=1
    )
    gap = np.full((k, 1), np.nan, dtype=np.float32)
    x = np.concatenate([x, gap], axis=1)
    y = np.concatenate([y, gap], axis=1)
    cls = np.asarray(full_positive)[idx]
    paths = {
        name: (x[r][keep[r]], y[r][keep[r]]) for name, r in (("negative", ~cls), ("positive", cls))
    }
    stopped = stop_t < n
    stops = pd.DataFrame(
        {
            "t": stop_t[stopped],
            "s": S0[np.flatnonzero(stopped), stop_t[stopped]],
            "full_class": np.where(cls[stopped], "positive", "negative"),
            "example": idx[stopped],
        }
    )
    return paths, stops


def _budget_line(budget: int | None, paths) -> pd.DataFrame:
    if budget is None:
        return pd.DataFrame({"t": [], "s": []})
    ys = np.concatenate([paths["negative"][1], paths["positive"][1]])
    finite = ys[np.isfinite(ys)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    # Over the whole axis (which fits the walks and θ_S; the rest is clipped): over the walks'
    # span alone, every walk's stop cross at B covered it, and the line was not seen.
    reach = max(hi - lo, 1e-12)
    return pd.DataFrame({"t": [budget, budget], "s": [lo - 2 * reach, hi + 2 * reach]})


def _boundary_frame(walks: Walks, clf, theta_s: float, delta: float) -> pd.DataFrame:
    n = walks.n_terms
    grid = _drawn_positions(n)[1:]
    b = clf.boundary_
    at = grid - 1
    # A mass rule's thresholds on its estimate of S_n (θ_S ∓ z σ_t), where its walks are drawn.
    lower, upper = b.estimate_thresholds() if b.uses_mass else (b.lower, b.upper)
    lower = np.where(np.isfinite(lower[at]), lower[at], np.nan)
    upper = np.where(np.isfinite(upper[at]), upper[at], np.nan)
    # Each half with its side's V (SPEC §2): the lower with the positives', the upper with the
    # negatives' (a classifier saved before it had one V gets it as both: its __setstate__).
    mean, lo, _ = rules.bridge_envelope(n, clf.variance_, theta_s, delta, grid)
    _, _, hi = rules.bridge_envelope(n, clf.upper_variance_, theta_s, delta, grid)
    return pd.DataFrame(
        {
            "t": grid,
            "lower": lower,
            "upper": upper,
            "theta_s": np.full(grid.size, theta_s),
            "bridge": mean,
            "bridge_lo": lo,
            "bridge_hi": hi,
        }
    )


def theory(walks: Walks, rule: rules.Rule) -> pd.DataFrame:
    """Required δ against the actual error of the current family (δ as the estimator reads it)."""
    family = rule.kind if rule.kind in rules.scaled_kinds() else "constant"
    # The budget and calibrated rules are not a family at a nominal δ: the constant family's
    # curve is shown for reference.
    name = family if rule.kind == family else "constant family, for reference"
    out = rules.family_outcomes(walks, family, rule.side, rule.theta)
    deltas = np.array([rules.snap_delta(d) for d in THEORY_DELTAS])
    cols = [rules.scale_column(rules.z_of(d)) for d in deltas]
    errors = [rules.stop_error(out.positive[:, j], out.full_positive, rule.side) for j in cols]
    return pd.DataFrame({"source": f"this dataset ({name})", "required": deltas, "actual": errors})


def tradeoff_error_span(tradeoff) -> float:
    """How far up ``tradeoff``'s family curves reach on the plot's error axis: their largest
    disagreement, at least 2 % and at most 15 % (above that they only climb to the left). 2 %
    while it is not computed."""
    if tradeoff is None:
        return 0.02
    top = float(np.nanmax(tradeoff.families["disagreement"].to_numpy(), initial=0.0))
    return min(max(top, 0.02), 0.15)


#: The share of the tradeoff plot's height above the curves, where its legend sits (two
#: columns of five or six entries: about a third of the data area in a card 400 px high).
TRADEOFF_LEGEND_BAND = 0.34


def tradeoff_ranges(
    tradeoff, point: dict, band: float = TRADEOFF_LEGEND_BAND
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The tradeoff plot's axes for ``tradeoff`` and the current rule's ``point``
    (``work_fraction``, ``disagreement``): work from 0 to one full evaluation, or to the star
    beyond it (a sketched rule that walks most terms costs more than a full evaluation);
    disagreement from just below 0 to the curves' span and the star, then the legend's band
    above them (``band`` of the axis; 0 where the legend is outside the data area). The plot
    draws these, and a click's distance to a curve is measured in them."""
    x = float(point["work_fraction"])
    star = float(point["disagreement"])
    top = max(tradeoff_error_span(tradeoff), star if math.isfinite(star) else 0.0) * 1.05
    x_top = max(1.0, x if math.isfinite(x) else 1.0) * 1.02
    return (0.0, x_top), (-0.005, top / (1 - band))


def _band_delta(rule: rules.Rule, clf) -> float:
    """The δ' = Φ(−z) of the scale z the rule runs at, for the bridge band's ± z: a family's z
    (a pick's exact one, not the slider's snapped δ), the calibrated rule's chosen scale (it
    drew the slider's z: 2.33 at δ = 1 % beside a rule at z = 3.25), else the slider's δ."""
    if rule.kind in rules.scaled_kinds():
        return rules.nominal_delta(rule.scale)
    report = getattr(clf, "calibration_", None)
    if rule.kind == "calibrated" and report is not None and not report.fallback:
        return rules.nominal_delta(report.chosen_scale)
    return rule.delta


def walk_figure(walks: Walks, rule: rules.Rule, n_trajectories: int) -> WalkFigure:
    """The walks plot's data for ``rule``: a δ move reads one cached column and cuts the walks."""
    current = rules.outcome(walks, rule)
    clf = rules.rule_classifier(walks, rule)
    theta_s = float(clf.theta_s_)
    sketch = sketches.sketch(walks) if rules.is_sketched(rule.kind) else None
    paths, stops = trajectory_paths(
        walks, current.n_evaluated, current.full_positive, n_trajectories, clf.boundary_, sketch
    )
    return WalkFigure(
        trajectories=paths,
        stops=stops,
        boundary=_boundary_frame(walks, clf, theta_s, _band_delta(rule, clf)),
        theta_s=theta_s,
        n_terms=walks.n_terms,
        budget=clf.boundary_.budget,
        budget_line=_budget_line(clf.boundary_.budget, paths),
        uses_mass=clf.boundary_.uses_mass,
        rule=rule,
        sketch=sketch,
    )


def numbers(walks: Walks, rule: rules.Rule) -> dict:
    """The headline numbers of ``rule`` on the test set (:func:`attentive.app.rules.metrics`),
    with its thresholds τ, θ_S, the offset c and the bridge variances V (lower side, upper side)."""
    current = rules.outcome(walks, rule)
    clf = rules.rule_classifier(walks, rule)
    out = rules.metrics(walks, current, rule.side)
    params = dict(clf.boundary_.params or {})
    out.update({k: float(v) for k, v in params.items() if k.startswith("tau") and v is not None})
    out.update({"theta_s": float(clf.theta_s_), "offset": walks.offset, "variance": clf.variance_})
    out["upper_variance"] = float(clf.upper_variance_)
    out["budget"] = clf.boundary_.budget
    return out
