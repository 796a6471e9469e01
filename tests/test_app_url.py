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
    [("seed", -5, "at least 0"), ("C", 0, "greater than"), ("delta", "abc", "number")],
)
def test_a_bad_url_value_is_reported_once_in_the_dashboards_words(dash, name, value, words):
    before = getattr(dash.state, name)
    dash.sync_url(url(f"?{name}={value}"))
    s = dash.state
    assert s.n_errors == 1, s.last_error
    assert words in s.last_error and "parameter" not in s.last_error, s.last_error
    assert getattr(s, name) == before


def test_an_uploaded_files_name_in_the_url_asks_for_the_upload_again_once(dash):
    before = dash.state.numbers()
    loc = url("?dataset=file%3A+good.csv&delta=0.02")
    dash.sync_url(loc)
    s = dash.state
    assert s.n_errors == 1 and "upload it again" in s.last_error and "good.csv" in s.last_error
    assert s.dataset == "mnist-t10k-2v5" and s.walks is not None
    assert loc.query_params["dataset"] == "mnist-t10k-2v5"
    assert s.delta == rules.snap_delta(0.02) and s.numbers() != before  # the rest applies
    # The browser sends its address again as it connects: the same upload is not told twice.
    dash._from_url({"dataset": "file: good.csv", "delta": 0.02})
    assert s.n_errors == 1


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
    low = float(np.nanmin(state.walk_figure().boundary["lower"].to_numpy()))
    assert fig.y_range.start <= low  # τ at δ = 1e-4 is inside the axes
    fig.y_range.update(start=-0.5, end=0.1)  # the user zooms
    state.set_controls(delta=0.01)
    assert (fig.y_range.start, fig.y_range.end) == (-0.5, 0.1)


def test_a_click_on_the_tradeoff_picks_the_nearest_point_of_any_family():
    """A click on another family's curve makes that family the rule at the clicked point's own
    scale z: the rule then evaluates to exactly the clicked point (the table's numbers)."""
    state = DashboardState(boundary="constant", side="both")
    fam = state.tradeoff.families
    rows = fam[fam["method"] == "regression"]
    row = rows.iloc[len(rows) // 2]
    state.select_point(float(row["mean_evaluated_fraction"]), float(row["disagreement"]))
    assert state.n_errors == 0, state.last_error
    assert (state.boundary, state.z) == ("regression", float(row["z"]))
    assert state.delta == rules.delta_of(float(row["z"]))  # the slider shows Φ(−z)
    m = state.numbers()
    assert m["mean_evaluated_fraction"] == pytest.approx(row["mean_evaluated_fraction"])
    assert m["disagreement"] == pytest.approx(row["disagreement"])


def test_a_timing_made_stale_by_a_newer_move_is_not_run():
    """A timing that a newer move has replaced does nothing when its turn comes (nobody will
    see it), and only the newest is applied."""
    jobs = []
    state = DashboardState()
    state.background = lambda job, done, fail: jobs.append((job, done))
    rules.measure.clear()
    state.set_controls(delta=0.02)
    state.set_controls(delta=0.05)
    assert len(jobs) == 2  # one timing per move
    (old_job, old_done), (new_job, new_done) = jobs
    assert old_job() is None  # stale: not measured
    old_done(None)
    assert state.measured is None
    new_done(new_job())
    assert state.measured is not None and state.measured.mean_evaluated == pytest.approx(
        float(state.outcome().n_evaluated.mean())
    )


def test_the_url_carries_the_exact_rule_a_target_picked():
    """A target disagreement picks a family at a scale z (on the table's scales: the quarter
    steps and the slider δs' scales); the URL holds that z exactly, and a session opened on the
    URL alone shows the same numbers (before, the URL held δ snapped to the slider and reopened
    another rule). A z off the slider's grid: test_a_z_off_the_slider_reopens_exactly."""
    dash = Dashboard(state=DashboardState())
    loc = url("")
    dash.sync_url(loc)
    dash.state.target = 0.02
    s = dash.state
    assert s.n_errors == 0, s.last_error
    assert loc.query_params["z"] == s.z and loc.query_params["boundary"] == s.boundary
    query = {k: v for k, v in loc.query_params.items() if k != "target"}
    again = Dashboard(state=DashboardState())
    again.sync_url(url("?" + "&".join(f"{k}={v}" for k, v in query.items())))
    assert again.state.n_errors == 0, again.state.last_error
    assert (again.state.boundary, again.state.z) == (s.boundary, s.z)
    assert again.state.numbers() == s.numbers()


def test_a_z_off_the_slider_reopens_exactly():
    """A family rule at a z that no δ of the slider gives (a row clicked in the table) is
    reopened from the URL at that z, with the same numbers."""
    z = 1.05
    assert all(abs(rules.z_of(d) - z) > 1e-6 for d in rules.delta_steps())
    first = Dashboard(state=DashboardState())
    first.sync_url(url(f"?boundary=curved&z={z}"))
    assert first.state.n_errors == 0, first.state.last_error
    assert (first.state.boundary, first.state.z) == ("curved", z)
    assert first.state.numbers() == DashboardState(boundary="curved", z=z).numbers()
