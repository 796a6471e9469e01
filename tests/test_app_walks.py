"""The walks plot draws the statistic the rule's boundary applies to: ``S_t`` for every rule but a
mass-regression one, which stops where its estimate of ``S_n``, ``a_t + b_t S_t + c_t A_t``
(``A_t`` the running mass), is ``z σ_t`` past ``θ_S``: its walks are those of the estimate,
against ``θ_S ± z σ_t``, so that each stop sits beyond the boundary drawn at its position,
whatever the family.

The statistic is recomputed here from the classifier's public ``partial_scores`` and
``partial_masses`` and the boundary's ``mass``, ``estimate_slope`` and ``estimate_intercept``, not
taken from the dashboard's arrays."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest
from bokeh.document import Document

from attentive.app import rules
from attentive.app.plots import TrajectoryView
from attentive.app.plots.walks import (
    BRIDGE,
    MASS_BOUNDARY,
    MASS_GAPS,
    MASS_TITLE,
    MASS_YLABEL,
    caption,
)
from attentive.app.state import DashboardState
from attentive.evaluation import first_crossing

# No network; models trained once per test session.
pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.usefixtures("offline_data_home"),
]


@pytest.fixture
def state():
    return DashboardState()


def segments(x: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The NaN-separated paths of one class."""
    gaps = np.flatnonzero(np.isnan(x))
    out, start = [], 0
    for g in gaps:
        out.append((x[start:g], y[start:g]))
        start = g + 1
    return out


def independent_statistic(state) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]:
    """The statistic drawn on the test set, from the public API, with the thresholds it is
    compared with: ``S`` against ``lower`` / ``upper``; for a mass rule its estimate of ``S_n``,
    ``b_t (S + κ·A) + a_t``, against ``b_t τ_t + a_t`` (NaN where ``b_t ≤ 0``)."""
    clf = rules.rule_classifier(state.walks, state.rule)
    X = state.walks.X_test
    S = clf.partial_scores(X)
    b = clf.boundary_
    if b.mass is None:
        return S, b.lower, b.upper, b
    slope, intercept = b.estimate_slope, b.estimate_intercept
    V = S + b.mass * clf.partial_masses(X)
    with np.errstate(invalid="ignore"):
        estimate = np.where(slope > 0, slope * V + intercept, np.nan)
        lower = np.where(slope > 0, slope * b.lower + intercept, np.nan)
        upper = np.where(slope > 0, slope * b.upper + intercept, np.nan)
    return estimate, lower, upper, b


def check_stops_on_the_statistic(state) -> None:
    f = state.walk_figure()
    V, lower, upper, b = independent_statistic(state)
    n = f.n_terms
    stops = f.stops
    assert len(stops) > 0
    t = stops["t"].to_numpy()
    ex = stops["example"].to_numpy()
    # Each drawn stop is the statistic at the stop, beyond the drawn boundary there.
    np.testing.assert_allclose(stops["s"].to_numpy(), V[ex, t - 1], rtol=1e-9, atol=1e-9)
    s_stop = stops["s"].to_numpy()
    tol = 1e-9 * (1.0 + np.abs(s_stop))  # b_t τ_t + a_t against the estimate: rounding
    beyond = (s_stop < lower[t - 1] + tol) | (s_stop > upper[t - 1] - tol)
    assert beyond.all()
    drawn = f.boundary.set_index("t")
    at = np.isin(t, drawn.index)
    lo = drawn.loc[t[at], "lower"].fillna(-np.inf).to_numpy()
    up = drawn.loc[t[at], "upper"].fillna(np.inf).to_numpy()
    s_at, tol_at = stops["s"].to_numpy()[at], tol[at]
    assert ((s_at < lo + tol_at) | (s_at > up - tol_at)).all()
    # The paths end at their stops (last point of each path: (t, statistic at t)), in float32.
    ends = {}
    for name in ("negative", "positive"):
        for x, y in segments(*f.trajectories[name]):
            # Every walk starts at 0 (a mass rule's estimate at t = 1: no estimate before).
            assert x[0] == 0 and (np.isnan(y[0]) if b.uses_mass else y[0] == 0)
            ends.setdefault((name, int(x[-1])), []).append(float(y[-1]))
    for ti, si, cls in zip(t, stops["s"], stops["full_class"], strict=True):
        assert ti < n
        assert np.float32(si) in np.float32(ends[(cls, int(ti))])
    # The stops are the rule's: its first crossing of the boundary by the statistic.
    clf = rules.rule_classifier(state.walks, state.rule)
    A = clf.partial_masses(state.walks.X_test) if b.uses_mass else None
    first, _ = first_crossing(clf.partial_scores(state.walks.X_test), b, A)
    np.testing.assert_array_equal(first, state.outcome().n_evaluated)


def test_the_walks_hold_read_only_running_masses_of_the_same_walks(state):
    w = state.walks
    clf = w.classifier
    assert not w.A.flags.writeable and not w.S.flags.writeable
    np.testing.assert_allclose(w.S, clf.partial_scores(w.X_test), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.A, clf.partial_masses(w.X_test), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("side", ["lower", "both"])
def test_a_mass_regression_rule_draws_its_statistic_and_stops_on_its_boundary(state, side):
    state.set_controls(boundary="mass-regression", side=side, delta=0.05)
    assert state.n_errors == 0, state.last_error
    f = state.walk_figure()
    assert f.uses_mass
    V, *_ = independent_statistic(state)
    finite = np.isfinite(V)
    assert finite.mean() > 0.9  # NaN only where the rule cannot stop
    assert not np.allclose(V[finite], state.walks.S[finite])  # a different quantity from S_t
    check_stops_on_the_statistic(state)


@pytest.mark.slow
def test_a_mass_rules_walks_stay_on_the_scale_of_the_score_where_its_v_t_runs_off():
    """On ``synthetic`` the regression's b_t nears 0 around t = 75–110, and the statistic the
    evaluator runs, V_t = S_t + κ_t·A_t with κ_t = c_t / b_t, reached −275 (its threshold
    −1,742) beside scores within [−3.4, 1.2]: drawn, the walks lay flat on 0. The estimate of
    S_n drawn instead, and its boundary θ_S ± z·σ_t, stay on the scores' scale."""
    state = DashboardState(dataset="synthetic", boundary="mass-regression", side="both")
    f = state.walk_figure()
    assert f.uses_mass
    S_n = state.walks.S[:, -1]
    lo, hi = S_n.min(), S_n.max()
    span = hi - lo
    drawn = np.concatenate([f.trajectories[k][1] for k in ("negative", "positive")])
    drawn = np.concatenate([drawn, f.boundary["lower"], f.boundary["upper"]])
    drawn = drawn[np.isfinite(drawn)]
    assert drawn.size and lo - span <= drawn.min() and drawn.max() <= hi + span
    # What was drawn before: V_t, far off that scale here (the test's premise).
    b = rules.rule_classifier(state.walks, state.rule).boundary_
    V = b.statistic(state.walks.S, state.walks.A)
    assert V.min() < lo - 10 * span
    check_stops_on_the_statistic(state)
    # Positions where b_t ≤ 0 have no estimate (gaps): the caption says why, here only.
    assert np.isnan(f.boundary["lower"]).any()
    assert MASS_GAPS in " ".join(caption(f).split())
    state.set_controls(dataset="mnist-t10k-2v5")
    f = state.walk_figure()
    assert f.uses_mass and not np.isnan(f.boundary["lower"]).any()
    assert "Gaps" not in caption(f) and "estimates S_n" in " ".join(caption(f).split())


@pytest.mark.parametrize(
    ("dataset", "boundary"),
    [("mnist-t10k-4v9", "calibrated"), ("synthetic", "regression")],
)
def test_the_walks_axis_is_fitted_to_the_walks_where_the_boundary_runs_off(dataset, boundary):
    """Where a regression rule's slope b_t nears 0 its threshold on S_t runs off to ±hundreds
    (MNIST 4 vs 9's default rule, heteroscedastic: −329 and +274 at t = 19, beside walks
    within ±2; a user's trial): fitted to it, the axis drew every walk flat at 0. The axis now
    holds the walks and θ_S, and the boundary only where it comes within half their span."""
    state = DashboardState(dataset=dataset, boundary=boundary, side="both")
    assert state.n_errors == 0, state.last_error
    f = state.walk_figure()
    drawn = np.concatenate([f.trajectories[k][1] for k in ("negative", "positive")])
    drawn = np.append(drawn[np.isfinite(drawn)], f.boundary["theta_s"].to_numpy())
    lo, hi = drawn.min(), drawn.max()
    span = hi - lo
    tau = np.concatenate([f.boundary["lower"], f.boundary["upper"]])
    tau = tau[np.isfinite(tau)]
    assert np.abs(tau).max() > 20 * max(abs(lo), abs(hi))  # (the case: it runs off)
    view = TrajectoryView(state=state)
    _, (y0, y1) = view._ranges(f)
    assert y0 <= lo and hi <= y1  # every walk and θ_S in view
    assert lo - span <= y0 and y1 <= hi + span  # at their scale
    # The boundary near the walks stays in view.
    near = tau[(tau >= lo - span / 2) & (tau <= hi + span / 2)]
    assert near.size and y0 <= near.min() and near.max() <= y1


def test_a_calibrated_rule_that_chose_mass_regression_draws_its_statistic(state):
    state.set_controls(dataset="mnist-t10k-7v9", boundary="calibrated")
    assert state.n_errors == 0, state.last_error
    f = state.walk_figure()
    report = state.calibration()
    # MNIST 7 vs 9: family="auto" ranks mass-regression first (3 vs 8, which this test used,
    # ranks finite-population first since the ranking is judged where calibration stops).
    assert not report.fallback and report.family == "mass-regression", report.family
    assert f.uses_mass
    check_stops_on_the_statistic(state)


@pytest.mark.parametrize("kind", ["constant", "heteroscedastic", "regression"])
def test_other_rules_draw_the_partial_score_as_before(state, kind):
    state.set_controls(boundary=kind, side="both", delta=0.05)
    f = state.walk_figure()
    assert not f.uses_mass
    check_stops_on_the_statistic(state)  # the statistic is S_t itself
    w = state.walks
    stops = f.stops
    np.testing.assert_array_equal(
        stops["s"].to_numpy(), w.S[stops["example"].to_numpy(), stops["t"].to_numpy() - 1]
    )


def _served_view(state):
    """The walks view of ``state`` in a document, and a reader of its legend's entries: label →
    shown."""
    view = TrajectoryView(state=state)
    doc = Document()
    doc.add_root(pn.panel(view).get_root(doc))
    fig = view._fig

    def legend() -> dict[str, bool]:
        return {it.label.value: it.visible for it in fig.above[0].items}

    return view, fig, legend


def test_the_plot_names_the_statistic_and_hides_the_bridge_for_a_mass_rule():
    state = DashboardState(boundary="constant", side="both", delta=0.05)
    view, fig, legend = _served_view(state)

    assert fig.title.text == TrajectoryView.title
    assert fig.yaxis[0].axis_label == TrajectoryView.ylabel
    assert legend()[BRIDGE] and legend()["boundary τ"]
    fig.y_range.update(start=-0.5, end=0.1)  # the user zooms on S_t
    state.set_controls(boundary="mass-regression")
    assert fig.title.text == MASS_TITLE
    assert fig.yaxis[0].axis_label == MASS_YLABEL
    shown = legend()
    assert not shown[BRIDGE] and shown[MASS_BOUNDARY]
    # Another quantity: the axes are refit to it, the zoom on S_t is not kept.
    assert (fig.y_range.start, fig.y_range.end) != (-0.5, 0.1)
    state.set_controls(boundary="constant")
    assert fig.title.text == TrajectoryView.title
    assert fig.yaxis[0].axis_label == TrajectoryView.ylabel
    assert legend()[BRIDGE] and legend()["boundary τ"]
    # The budget rule stops at B: no boundary, and no scale z for the bridge band either.
    state.set_controls(boundary="budget")
    shown = legend()
    assert shown["budget B"] and not shown["boundary τ"] and not shown[BRIDGE]
    band = [r for r in fig.renderers if r.data_source is view._sources["band"]]
    assert band and not any(r.visible for r in band)


def test_a_calibration_that_fell_back_to_full_evaluation_lists_no_boundary():
    """Breast cancer's calibrated rule falls back to full evaluation (too few calibration
    examples at δ = 1 %): no boundary is drawn, and the legend listed "boundary τ" anyway. A
    calibrated rule that passes lists it again."""
    state = DashboardState(dataset="breast-cancer", boundary="calibrated", side="both")
    view, _, legend = _served_view(state)

    report = rules.rule_classifier(state.walks, state.rule).calibration_
    assert report.fallback
    b = view._sources["boundary"].data
    assert not np.isfinite(np.r_[b["lower"], b["upper"]]).any()
    assert not legend()["boundary τ"]
    state.set_controls(boundary="curved", delta=0.05)
    assert legend()["boundary τ"]
    assert np.isfinite(np.r_[view._sources["boundary"].data["lower"]]).any()
