"""The dashboard's sketched rules (SPEC §3b), driven without a browser.

The sketch is fitted on demand (never on the first page or a slider's path), once per walk; the
sketched rules then join the tradeoff, the table and the rule control at their work (the sketch
plus the terms walked), and the walks plot draws their residual walks from the sketch's score.
Where no sketch pays, or none can be fitted, they are absent and the dashboard says why, as a
warning, never an error. Numbers are checked against a classifier fitted from scratch with its
sketch and evaluated with ``evaluate`` (the exported classifier's path).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from bokeh.document import Document
from sklearn.frozen import FrozenEstimator

from attentive import AttentiveClassifier
from attentive.app import exports, rules, sketches
from attentive.app.figures import TRADEOFF_LEGEND_BAND, tradeoff_error_span
from attentive.app.layout import Dashboard
from attentive.app.numbers import SLOWER_WARNING, HeadlineNumbers, OperatingPointTable
from attentive.app.plots.base import CAPTION_CHARS
from attentive.app.plots.tradeoff import (
    LEGEND_ALPHA,
    LEGEND_COLS,
    LEGEND_SPOTS,
    NARROW_PX,
    SWEEP,
    TradeoffView,
    band_spans,
    legend_spot,
)
from attentive.app.plots.walks import caption
from attentive.app.state import DashboardState, run_inline
from attentive.app.tour import SKETCHED_VIEW, STEPS
from attentive.app.widgets import offered
from attentive.data import load_dataset
from attentive.estimator import calibration_split
from attentive.models import make_model
from tests.test_app_url import url

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LOWRANK = "synthetic-lowrank"  # where a sketch pays (docs/data.md)
SKETCHED = rules.rule_names("sketched")


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


@pytest.fixture(autouse=True, scope="module")
def _forget_sketches():
    """A walk's sketch, once fitted, is shared by every later session on that walk (as when
    served): the other modules' states start without one."""
    yield
    sketches.sketch.clear()


@pytest.fixture(scope="module")
def lowrank():
    """A state on the low-rank problem with its sketch fitted (once per module)."""
    state = DashboardState(dataset=LOWRANK, side="both")
    state.fit_sketch()
    assert state.n_errors == 0, state.last_error
    return state


def fresh_sketched_classifier(state) -> tuple[AttentiveClassifier, object]:
    """The dashboard's classifier with its sketch, rebuilt from scratch: the split, the model,
    the fit and ``fit_sketch`` at the dashboard's δ and side; and the test rows."""
    ds = load_dataset(state.dataset)
    X_fit, _, y_fit, _ = calibration_split(
        ds.X_train, ds.y_train, delta=0.01, alpha=0.05, random_state=0
    )
    model = make_model("rbf", C=1.0, gamma="scale").fit(X_fit, y_fit)
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        centering=state.centering,
        reference_walks="leave-one-out",
        random_state=state.seed,
        early_stopping=True,
    ).fit(X_fit, y_fit)
    sketched = clf.with_rule("constant", side="both", delta=0.01).fit_sketch(X_fit, y_fit)
    return sketched, ds.X_test


def test_the_sketch_is_not_fitted_on_the_first_page_or_a_slider_move_but_when_asked():
    sketches.sketch.clear()
    state = DashboardState(dataset=LOWRANK, hold_background=True)
    assert state.sketch is None and sketches.sketch.peek(state.walks) is None
    state.set_controls(delta=0.05, boundary="curved")
    assert sketches.sketch.peek(state.walks) is None
    # A sketched rule asked for before the background starts: the numbers are its family's
    # until the sketch is in (nothing is fitted on the page's path).
    state.set_controls(boundary="sketched-curved")
    assert state.rule.kind == "curved" and state.sketching is None
    assert sketches.sketch.peek(state.walks) is None
    jobs = []
    state.start_background(lambda job, done, fail: jobs.append((job, done)))
    assert state.sketching is state.walks and len(jobs) == 2  # the tables, and the sketch
    state.background = run_inline
    for job, done in list(jobs):
        done(job())
    assert state.sketch.pays and state.rule.kind == "sketched-curved"
    assert state.n_errors == 0, state.last_error
    # Fitting the sketch left the walk's own classifier (the calibrated rule's) as it was.
    assert not any(k.startswith("sketched-") for k in state.walks.classifier.reference_profile_)
    state.set_controls(boundary="calibrated")
    assert state.calibration().family in rules.family_names()


def test_sketched_rules_join_the_tradeoff_and_the_table_at_their_work(lowrank):
    """Every sketched rule's curve and rows, whose cost is the sketch plus the terms walked:
    each row is what ``with_rule(name, z=...).evaluate`` of a classifier fitted from scratch
    with its sketch gives — work, terms, disagreement."""
    s = lowrank
    t = s.tradeoff
    assert set(SKETCHED) <= set(t.families["method"]) and set(SKETCHED) <= set(t.table["family"])
    assert s.times is not None and set(SKETCHED) <= set(s.times["family"])
    assert not s.table()["us_per_example"].isna().any()  # every row timed or interpolated
    clf, X = fresh_sketched_classifier(s)
    full = clf.with_rule("full", side=s.side).evaluate(X).positive
    table = t.table
    for name in ("sketched-curved", "sketched-mass-regression"):
        rows = table[table["family"] == name]
        for _, row in rows.iloc[[5, len(rows) // 2, -40]].iterrows():
            ev = clf.with_rule(name, side=s.side, z=float(row["z"])).evaluate(X)
            assert row["mean_evaluated_fraction"] == pytest.approx(ev.mean_evaluated_fraction)
            assert row["work_fraction"] == pytest.approx(ev.work_fraction)
            assert row["sketch_cost"] == pytest.approx(ev.sketch_cost) and ev.sketch_cost > 0
            assert row["disagreement"] == pytest.approx(np.mean(ev.positive != full))
    plain = table[~table["family"].isin(SKETCHED)]
    np.testing.assert_array_equal(plain["work_fraction"], plain["mean_evaluated_fraction"])
    # The plot's x is the work; its caption names the sketch.
    curve = t.families[t.families["method"] == "sketched-curved"]
    np.testing.assert_allclose(
        curve["work_fraction"],
        s.sketch.sketch_cost + curve["mean_evaluated_fraction"] * s.sketch.term_cost,
    )
    assert s.sketch.label in sketches.summary(s.sketch)


def test_a_sketched_rule_shows_what_a_classifier_fitted_from_scratch_evaluates(lowrank):
    s = lowrank
    s.set_controls(boundary="sketched-heteroscedastic", delta=0.02)
    assert s.n_errors == 0, s.last_error
    m = s.numbers()
    clf, X = fresh_sketched_classifier(s)
    ev = clf.with_rule("sketched-heteroscedastic", side=s.side, z=s.z).evaluate(X)
    full = clf.with_rule("full", side=s.side).evaluate(X).positive
    assert m["mean_evaluated"] == pytest.approx(ev.n_evaluated.mean())
    assert m["work_fraction"] == pytest.approx(ev.work_fraction)
    assert m["sketch_cost"] == pytest.approx(ev.sketch_cost)
    assert m["disagreement"] == pytest.approx(np.mean(ev.positive != full))
    assert s.measured is not None and s.measured.agrees  # the evaluator's own decisions
    lines = HeadlineNumbers.sketch_lines(m)
    assert f"{ev.work_fraction:.3f}" in lines["evaluated"]
    assert f"{1 / ev.work_fraction:.2f}×" in lines["speedup"]


def test_the_walks_of_a_sketched_rule_start_at_the_sketchs_score_and_stop_on_its_boundary(
    lowrank,
):
    """The residual walks S^ρ_t: each drawn walk starts at F̃(x) (the sketched walk's start),
    an unstopped one ends at S_n (the plain walk's end), and every stop lies beyond the rule's
    boundary at its position — the statistic drawn is the one the rule stops on."""
    s = lowrank
    for kind in ("sketched-curved", "sketched-mass-regression"):
        s.set_controls(boundary=kind, delta=0.05, n_trajectories=200)
        f = s.walk_figure()
        assert f.sketch is s.sketch and "F̃(x)" in caption(f)
        # Its k and m in words (the caption said "k = 8, m = 32", explained only in the sidebar).
        sk = s.sketch.classifier.sketched_walk_.sketch
        words = " ".join(caption(f).split())
        assert f"k = {sk.k} {s.sketch.directions}, m = {sk.m} landmarks" in words
        # A Bokeh title does not wrap: lines short enough for a phone's plot.
        assert max(map(len, caption(f).splitlines())) <= CAPTION_CHARS
        start = s.sketch.classifier.sketched_walk_.start_scores(s.walks.X_test)
        idx = s.walks.sample[:200]
        n_eval = s.outcome().n_evaluated[idx]
        for name, positive in (("negative", False), ("positive", True)):
            x, y = f.trajectories[name]
            mine = idx[s.outcome().full_positive[idx] == positive]
            firsts = np.flatnonzero(np.r_[True, np.isnan(x[:-1])] & ~np.isnan(x))
            np.testing.assert_allclose(x[firsts], 0.0)
            np.testing.assert_allclose(y[firsts], start[mine], rtol=1e-5, atol=1e-6)
        walked = idx[n_eval == s.walks.n_terms]
        ends = s.sketch.S[walked, -1]
        np.testing.assert_allclose(ends, s.walks.S[walked, -1], atol=1e-9)
        b = rules.rule_classifier(s.walks, s.rule).boundary_
        # A mass rule's walks are its estimate of S_n, against b_t τ_t + a_t (θ_S ∓ z σ_t).
        lower, upper = b.estimate_thresholds() if b.uses_mass else (b.lower, b.upper)
        t = f.stops["t"].to_numpy()
        beyond = (f.stops["s"].to_numpy() <= lower[t - 1] + 1e-9) | (
            f.stops["s"].to_numpy() >= upper[t - 1] - 1e-9
        )
        assert len(t) > 0 and beyond.all()


def test_the_cheapest_rule_for_a_target_counts_the_sketch(lowrank):
    """A target picks the least work per example (the sketch counted), which here is a sketched
    rule; the URL carries its family and z, and a session opened on the URL shows the same."""
    s = lowrank
    s.set_controls(boundary="calibrated")
    dash = Dashboard(state=s)
    loc = url("")
    dash.sync_url(loc)
    s.target = 0.02
    assert s.n_errors == 0, s.last_error
    table = s.tradeoff.table
    ok = table[table["disagreement"] <= 0.02]
    assert s.numbers()["work_fraction"] == pytest.approx(ok["work_fraction"].min())
    assert rules.is_sketched(s.boundary)
    # By terms alone a sketched rule would look cheaper than it is.
    assert ok["mean_evaluated_fraction"].min() < ok["work_fraction"].min()
    assert loc.query_params["boundary"] == s.boundary and loc.query_params["z"] == s.z
    query = {k: v for k, v in loc.query_params.items() if k != "target"}
    again = Dashboard(state=DashboardState())
    again.sync_url(url("?" + "&".join(f"{k}={v}" for k, v in query.items())))
    assert again.state.n_errors == 0, again.state.last_error
    assert (again.state.boundary, again.state.z) == (s.boundary, s.z)
    assert again.state.numbers() == s.numbers()


def test_the_table_keeps_its_first_columns_through_times_and_sketched_rows(lowrank):
    """In the browser a new set of columns rebuilds the operating-point table (Panel's
    Tabulator), and a change of its columns or hidden columns that arrives before the rebuilt
    table exists raises ("Cannot read properties of null (reading 'offsetWidth')") and drops the
    rest of that update: the sketched curves of the tradeoff plot never came. So the table keeps
    the columns and configuration of its first, empty draw while the rows come without their
    times, with them, and with sketched rows; only which columns are hidden changes."""
    s = DashboardState(dataset=LOWRANK, side=lowrank.side, hold_background=True)
    s.param.update(tradeoff=None, times=None)  # as on a first page: the tables follow it
    view = OperatingPointTable(state=s)
    model = view.table.get_root(Document())

    def columns():
        return [c.field for c in model.columns], model.configuration

    first = columns()
    assert "sketch" in first[0] and "µs / example" in first[0]
    key = (s.walks, s.side, s.theta)
    hidden = []
    for sketched in (False, True):
        tradeoff = rules.tradeoff(*key, sketched)
        for times in (None, rules.rule_times(*key, sketched)):
            s.param.update(tradeoff=tradeoff, times=times)
            assert columns() == first
            assert len(view.table.value) > 0
            assert view.table.value["µs / example"].isna().all() == (times is None)
            hidden.append({"sketch", "work"} <= set(model.hidden_columns))
    assert hidden == [True, True, False, False]


def test_the_exports_name_the_sketch_and_the_snippet_reproduces_a_sketched_rule(lowrank, tmp_path):
    s = lowrank
    s.set_controls(boundary="sketched-regression", delta=0.05, side="lower")
    m = s.numbers()
    point = exports.operating_point(s)
    sketch = s.sketch.classifier.sketched_walk_.sketch
    assert (point["sketch"]["k"], point["sketch"]["m"]) == (sketch.k, sketch.m)
    assert point["metrics"]["work_fraction"] == pytest.approx(m["work_fraction"], rel=1e-5)
    assert "sketched-regression" in exports.operating_points_csv(s).getvalue()
    path = tmp_path / "snippet.py"
    path.write_text(exports.snippet(s))
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    printed = dict(line.rsplit(" ", 1) for line in out.strip().splitlines())
    assert float(printed["work per example"]) == pytest.approx(round(m["work_fraction"], 4))
    assert float(printed["disagreement"]) == pytest.approx(round(m["disagreement"], 4))
    assert float(printed["accuracy"]) == pytest.approx(round(m["accuracy_attentive"], 4))


def test_where_no_sketch_pays_the_sketched_rules_are_absent_and_the_reason_is_a_warning(
    monkeypatch,
):
    """digits 2 vs 5, its choice made to keep no sketch (in the residual order a sketch pays by
    the count on every offline RBF problem: the classifier's pick among the options is forced
    to the first, no sketch, as where none pays). Asking for a sketched rule fits it, then
    says why in the choice's own numbers — a warning — and puts its family back; the rule
    control and the tradeoff have no sketched rule."""
    monkeypatch.setattr(
        AttentiveClassifier,
        "_cheapest_sketch",
        lambda self, choice, X: (choice.options[0], "measured"),
    )
    state = DashboardState(dataset="digits-2v5")
    assert state.sketch is None and "not fitted" in sketches.note(None)
    state.set_controls(boundary="sketched-curved", delta=0.05)
    assert not state.sketch.pays
    assert state.error_level == "warning" and "no sketch pays" in state.last_error
    assert state.boundary == "curved" and state.rule.kind == "curved"
    assert not set(offered(state.sketch)) & set(SKETCHED)
    assert not set(state.tradeoff.families["method"]) & set(SKETCHED)
    assert "No sketched rules" in sketches.summary(state.sketch)
    # The numbers quoted are those of the choice itself (no sketch, and the best sketch).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf, _ = fresh_sketched_classifier(state)
    none, *sized = clf.sketch_choice_.options
    assert f"{none.total:.2f} of a full evaluation without a sketch" in state.last_error
    # (The best the measured costs rank: not a size weighed by the count only.)
    best = min(o.total for o in sized if not o.count_only)
    assert f"{best:.2f} with the best one" in state.last_error
    # Asked again (the URL, the tour): the same warning, nothing fitted again.
    n = state.n_errors
    state.set_controls(boundary="sketched-regression")
    assert state.n_errors == n + 1 and state.boundary == "regression"


def test_where_no_sketch_pays_the_best_sketch_quoted_is_one_the_measured_costs_rank():
    """The "no sketch pays" sentence quotes the best option the measured costs rank: a smaller
    size weighed by the count only is left out even where its measured total is the lowest
    (options made by hand, the numbers read back from the sentence)."""
    import pandas as pd

    options = pd.DataFrame(
        {
            "sketch": ["no sketch", "k=1, m=4", "k=4, m=16", "k=8, m=32"],
            "sketch_cost": [0.0, 0.05, 0.30, 0.45],
            "term_cost": [1.0, 1.01, 1.02, 1.04],
            "walked_fraction": [0.40, 0.20, 0.25, 0.12],
            "total": [0.40, 0.25, 0.56, 0.57],
            "count_only": [False, True, False, False],
        }
    )
    detail = sketches._none(options, n_features=784).detail
    assert "0.40 of a full evaluation without a sketch" in detail
    assert "0.56 with the best one (k=4, m=16: 0.30 for the sketch" in detail
    assert "k=1, m=4" not in detail


def test_a_model_without_a_sketch_says_so_at_once():
    """A linear model: no sketch can be fitted, and that is known without fitting one."""
    state = DashboardState(dataset="breast-cancer", kernel="linear-svc")
    assert state.sketch is not None and not state.sketch.pays
    assert "RBF kernel" in state.sketch.reason
    assert "LinearSVC" in sketches.note(state.sketch)
    state.set_controls(boundary="sketched-mass-regression")
    assert state.error_level == "warning" and state.boundary == "mass-regression"
    assert state.sketching is None


def test_the_tours_steps_set_the_seed_and_show_no_warning_on_their_own_rule():
    """A user's trial: the tour kept the user's permutation seed (seed 5 made the first step's
    stop-error 26 %, "⚠ above δ = 20 %"), and the sketch's showcase step (δ = 1 %) showed
    "1.25 % ⚠ above δ". Every step that sets a dataset sets the seed too, and the first and
    the sketched steps' own rule is within its δ (checked from a user's seed 5)."""
    from attentive.app.numbers import delta_check
    from attentive.app.tour import TOUR_SEED

    state = DashboardState(seed=5)
    for step in STEPS:
        if "dataset" in step.controls:
            assert step.controls["seed"] == TOUR_SEED, step.title
    for step in (STEPS[0], next(s for s in STEPS if "sketched walk" in s.title)):
        state.set_controls(seed=5)
        assert state.set_controls(**step.controls), state.last_error
        assert state.seed == TOUR_SEED
        check = delta_check(state.rule, state.numbers())
        assert check is not None and not check.exceeded, (step.title, check)


def test_the_tours_calibrated_steps_state_the_same_rule():
    """The last step (Pick a threshold) kept the sketched step's δ = 2 %: its guarantee read
    "≤ 0.02" after the calibrated step's 1 % (a teacher's trial). Every step on the calibrated
    rule sets δ, side and dataset, so each shows the same guarantee whatever came before."""
    calibrated = [s for s in STEPS if s.controls.get("boundary") == "calibrated"]
    assert len(calibrated) >= 2
    for step in calibrated:
        assert {"dataset", "side", "delta"} <= set(step.controls), step.title
    assert len({tuple(sorted(s.controls.items())) for s in calibrated}) == 1


def test_the_guided_tour_has_a_sketched_walk_step_where_a_sketch_pays():
    step = next(s for s in STEPS if "sketched walk" in s.title)
    assert step.controls == SKETCHED_VIEW
    state = DashboardState(**step.controls)
    assert state.n_errors == 0, state.last_error
    assert state.sketch.pays and state.rule.kind == step.controls["boundary"]
    assert state.walk_figure().sketch is state.sketch
    # Walking 400 rows of 100 features costs more than evaluating them in full: the step says
    # what the wall-clock card then says, in its words.
    assert SLOWER_WARNING in step.text and "wall-clock" in step.text
    # The next step goes back to a plain rule, so nothing is fitted for MNIST on the way.
    after = STEPS[STEPS.index(step) + 1]
    state.set_controls(**after.controls)
    assert state.sketching is None and not rules.is_sketched(state.rule.kind)


def test_band_spans_are_where_each_segment_runs_inside_the_band():
    """Against a dense sampling of each segment: the x interval of its samples in the band."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(2, 12))
        x = np.sort(rng.uniform(0, 1, n))
        y = rng.uniform(-0.1, 0.4, n)
        y[rng.random(n) < 0.2] = 0.25  # flat runs on the band's edge and inside it
        lo, hi = 0.1, 0.25
        a, b = band_spans(x, y, lo, hi)
        expected = []
        for i in range(n - 1):
            t = np.linspace(0, 1, 20001)
            xs, ys = x[i] + t * (x[i + 1] - x[i]), y[i] + t * (y[i + 1] - y[i])
            inside = (ys >= lo - 1e-12) & (ys <= hi + 1e-12)
            if inside.any():
                expected.append((xs[inside].min(), xs[inside].max()))
        assert len(a) == len(expected)
        np.testing.assert_allclose(np.c_[a, b], np.array(expected).reshape(-1, 2), atol=1e-4)


def test_the_tradeoff_legend_goes_where_the_curves_run_least_through_its_band(lowrank):
    """The legend sits in its band at the top, where the curves run the least through it: a
    steep climb at the left is a run of no width, six slanted climbs across the right half are
    wide. Counted by points before, the low-rank problem's sketched climbs (many points at work
    0.05) sent it to the centre, over the plain curves' climbs at 0.65–0.8 (a user's trial)."""
    top = 0.15
    climb_left = [(np.array([0.05, 0.05, 0.04]), np.array([0.0, 0.12, 0.6]))] * 6
    slants = [(np.array([0.9 - 0.02 * k, 0.65 - 0.02 * k]), np.array([0.0, 0.4])) for k in range(6)]
    assert legend_spot(climb_left + slants, top) == "top_left"
    assert legend_spot(slants, top) == "top_left"
    assert legend_spot(climb_left, top) == "top_right"
    assert legend_spot([(np.array([0.0, 1.0]), np.array([0.01, 0.01]))], top) == "top_right"
    # A segment that jumps over the band, no point in it, still runs through it.
    assert legend_spot([(np.array([0.9, 0.9]), np.array([0.0, 1.0]))], top) == "top_left"
    lowrank.set_controls(boundary="sketched-curved", side="both", delta=0.01)
    view = TradeoffView(state=lowrank)
    view.__panel__()
    assert set(SKETCHED) <= set(lowrank.tradeoff.families["method"])
    assert view._legend_model.location == "top_left"
    assert view._legend_model.background_fill_alpha == LEGEND_ALPHA > 0.9


def test_the_tradeoff_legend_hides_no_line_of_the_breast_cancer_curves():
    """Breast cancer's curves fill the plot: the budgeted curve near 0.1 across the right half,
    the family curves' climbs at the left. The legend (two columns) sits in the band above them
    and, measured on the lines as drawn, no line runs under it there."""
    state = DashboardState(dataset="breast-cancer")
    assert state.n_errors == 0, state.last_error
    view = TradeoffView(state=state)
    view.__panel__()
    _, (_, y_top) = view._ranges(view._value())
    curves = [view._sources[k].data for k in view._sources if k not in ("point", "oracle")]
    # The budgeted rule and the paper's sweep also draw their stop-error ("err").
    lines = [(c["x"], c["y"]) for c in curves] + [(c["x"], c["err"]) for c in curves if "err" in c]
    assert sum(len(x) for x, _ in lines) > 100
    assert view._legend_model.ncols == LEGEND_COLS == 2
    lo, hi = LEGEND_SPOTS[view._legend_model.location]
    for x, y in lines:
        a, b = band_spans(x, y, (1 - TRADEOFF_LEGEND_BAND) * y_top, y_top)
        under = (np.minimum(b, hi) - np.maximum(a, lo)) >= 0
        assert not under.any(), (a[under], b[under])


def test_while_the_curves_compute_the_tradeoff_legend_names_only_the_star():
    """Until the curves arrive only the star is drawn: the legend listed every entry with no
    line to match (the paper's sweep too, never drawn for two sides). Then the entries of what
    is drawn come back."""
    from types import SimpleNamespace

    state = DashboardState(dataset="breast-cancer", side="both")
    view = TradeoffView(state=state)
    view.__panel__()
    f = view._value()
    view._refresh(SimpleNamespace(tradeoff=None, operating_point=f.operating_point, caption=""))
    shown = {k for k, item in view._items.items() if item.visible}
    assert shown == {"current rule"}
    view._refresh(f)
    shown = {k for k, item in view._items.items() if item.visible}
    assert {"constant", "budgeted", "oracle floor", "current rule"} <= shown
    assert SWEEP not in shown and "sketched (dashed)" not in shown  # (two sides; no sketch)


def test_on_a_narrow_plot_the_tradeoff_legend_goes_above_and_the_curves_take_the_axis():
    """A phone's data area (about 310 px) is too narrow for the legend's band: its two columns
    covered three quarters of the band's width there, over breast cancer's climbs. When the
    browser reports a narrow data area the legend moves above it and the error axis drops its
    band (the curves' span alone); a wide one puts it back in the band, at its spot."""
    state = DashboardState(dataset="breast-cancer")
    assert state.n_errors == 0, state.last_error
    view = TradeoffView(state=state)
    view.__panel__()
    fig, legend = view._fig, view._legend_model
    span = tradeoff_error_span(state.tradeoff) * 1.05
    assert legend in fig.center and legend not in fig.above
    assert fig.y_range.end == pytest.approx(span / (1 - TRADEOFF_LEGEND_BAND))
    spot = legend.location
    fig.trigger("inner_width", None, NARROW_PX + 60)  # wide: nothing moves
    assert legend in fig.center and fig.y_range.end > span * 1.2
    fig.trigger("inner_width", NARROW_PX + 60, 310)  # a phone
    assert legend in fig.above and legend not in fig.center
    assert legend.location == "center" and legend.background_fill_alpha == 0
    assert fig.y_range.end == pytest.approx(span)
    # A click measures in the axes as shown: at a curve's point, that curve's family.
    fam = state.tradeoff.families
    row = fam[(fam["method"] == "curved") & (fam["disagreement"] > 0.05)].iloc[0]
    view._on_tap(
        type("Tap", (), {"x": float(row["work_fraction"]), "y": float(row["disagreement"])})
    )
    assert state.boundary == "curved", state.boundary
    # Moved, the axis's tick labels change width and so the data area: no flip-flop near 400.
    fig.trigger("inner_width", 310, NARROW_PX + 10)
    assert legend in fig.above
    fig.trigger("inner_width", NARROW_PX + 10, 700)  # turned sideways: back in the band
    assert legend in fig.center and legend not in fig.above
    assert legend.location == spot and legend.background_fill_alpha == LEGEND_ALPHA
    assert fig.y_range.end > span * 1.2
