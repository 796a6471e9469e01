"""The page's URL reaches the dashboard through the state's validation: values are snapped to the
sliders' grids, a URL's number for a text field is accepted, a bad value is reported once in the
dashboard's words, and an uploaded file's name is not reloaded as a dataset."""

from __future__ import annotations

import numpy as np
import pytest
from panel.io.location import Location

from attentive.app import rules
from attentive.app.layout import Dashboard
from attentive.app.state import DashboardState


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


def url(query: str) -> Location:
    """Panel's own location object, as ``pn.state.location`` is for a page opened at ``query``."""
    return Location(search=query)


@pytest.fixture
def dash():
    return Dashboard(state=DashboardState())


def test_a_delta_off_the_slider_grid_is_snapped_not_refused(dash):
    loc = url("?boundary=constant&delta=0.05&gamma=0.05&theta=0.15000000000000013")
    dash.sync_url(loc)
    s = dash.state
    assert s.n_errors == 0, s.last_error
    assert s.boundary == "constant"
    assert s.delta == rules.snap_delta(0.05) and s.delta != 0.05  # on the grid, near 0.05
    assert s.gamma == "0.05"  # the URL's number, as the text field holds it
    assert s.theta == 0.15
    # The URL now says what was applied, and later moves reach it through the sync.
    assert loc.query_params["delta"] == s.delta and loc.query_params["theta"] == 0.15
    s.set_controls(delta=0.02)
    assert loc.query_params["delta"] == rules.snap_delta(0.02)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [("seed", -5, "between"), ("C", 0, "between"), ("delta", "abc", "number")],
)
def test_a_bad_url_value_is_reported_once_in_the_dashboards_words(dash, name, value, words):
    before = getattr(dash.state, name)
    dash.sync_url(url(f"?{name}={value}"))
    s = dash.state
    assert s.n_errors == 1, s.last_error
    assert words in s.last_error and "parameter" not in s.last_error, s.last_error
    assert getattr(s, name) == before


def test_an_uploaded_files_name_in_the_url_asks_for_the_upload_again(dash):
    figures = dash.state.figures
    loc = url("?dataset=file%3A+good.csv&delta=0.02")
    dash.sync_url(loc)
    s = dash.state
    assert s.n_errors == 1 and "upload it again" in s.last_error and "good.csv" in s.last_error
    assert s.dataset == "mnist-t10k-2v5" and s.walks is not None
    assert loc.query_params["dataset"] == "mnist-t10k-2v5"
    assert s.delta == rules.snap_delta(0.02) and s.figures is not figures  # the rest applies


def test_model_inputs_from_the_url_build_once_and_the_rule_waits_for_the_new_model():
    """Served, a build runs in the background: several model inputs in the URL make one build
    (the URL's C wins over the dataset's preset), and θ is checked against the new model's
    scores once it is built, not against the old one's."""
    jobs = []

    def background(job, done, fail):  # what the served executor does, step by step
        jobs.append((job, done))
        state.busy = True

    state = DashboardState()
    state.executor = background
    dash = Dashboard(state=state)
    dash.sync_url(url("?dataset=synthetic&C=2&seed=3&theta=1.9"))
    assert len(jobs) == 1
    assert (state.dataset, state.C, state.seed) == ("synthetic", 2.0, 3)
    assert state.theta == 0.0  # not yet: the MNIST model's θ range ends at 1.42
    job, done = jobs[0]
    done(job())
    state.busy = False
    assert state.n_errors == 0, state.last_error
    assert state.theta == 1.9 and state.walks.problem.model.C == 2.0


def test_the_walks_plot_refits_on_a_move_unless_zoomed():
    """At δ = 1e-4 the constant boundary lies below the walks drawn at δ = 1 %: an unzoomed plot
    follows it, a zoomed one keeps the user's ranges."""
    import panel as pn
    from bokeh.document import Document

    from attentive.app.plots import TrajectoryView

    state = DashboardState(boundary="constant", side="lower", delta=0.01)
    view = TrajectoryView(state=state)
    doc = Document()
    doc.add_root(pn.panel(view).get_root(doc))
    fig = view._fig
    state.set_controls(delta=1e-4)
    low = float(np.nanmin(state.figures.boundary["lower"].to_numpy()))
    assert fig.y_range.start <= low  # τ at δ = 1e-4 is inside the axes
    fig.y_range.update(start=-0.5, end=0.1)  # the user zooms
    state.set_controls(delta=0.01)
    assert (fig.y_range.start, fig.y_range.end) == (-0.5, 0.1)


def test_a_click_on_the_tradeoff_picks_the_nearest_point_of_any_family():
    """A click on another family's curve makes that family the rule, at the δ whose point was
    clicked; the rule then evaluates to the clicked point (the table's numbers). Before, only the
    current family's points could be picked."""
    state = DashboardState(boundary="constant", side="both")
    fam = state.figures.tradeoff.families
    zs = {round(rules.z_of(d), 2): d for d in rules.delta_steps()}
    rows = fam[(fam["method"] == "regression") & fam["z"].round(2).isin(list(zs))]
    row = rows.iloc[len(rows) // 2]
    state.select_point(float(row["mean_evaluated_fraction"]), float(row["disagreement"]))
    assert state.n_errors == 0, state.last_error
    assert state.boundary == "regression"
    assert state.delta == zs[round(float(row["z"]), 2)]
    # The table's z is the slider δ's scale rounded to the grid's 0.05 steps: the rule lands on
    # the clicked point up to that rounding.
    op = state.figures.operating_point
    assert op["mean_evaluated_fraction"] == pytest.approx(row["mean_evaluated_fraction"], abs=0.01)
    assert op["disagreement"] == pytest.approx(row["disagreement"], abs=0.005)


def test_a_timing_made_stale_by_a_newer_move_says_so():
    """The served executor skips an evaluator timing that a newer move has replaced: the job
    tells it (``job.stale()``), and only the newest is applied."""
    jobs = []
    state = DashboardState()
    state.measure_executor = lambda job, done, fail: jobs.append((job, done))
    state.set_controls(delta=0.02)
    state.set_controls(delta=0.05)
    (old_job, old_done), (new_job, new_done) = jobs[-2:]
    assert old_job.stale() and not new_job.stale()
    old_done(old_job())  # a stale result that arrives anyway is not shown
    assert state.measured is None
    new_done(new_job())
    assert state.measured is not None and state.measured.mean_evaluated == pytest.approx(
        float(state.figures.n_evaluated.mean())
    )
