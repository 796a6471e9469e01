"""The page's URL reaches the dashboard through the state's validation: values are snapped to the
sliders' grids, a URL's number for a text field is accepted, a bad value is reported once in the
dashboard's words, and an uploaded file's name is not reloaded as a dataset."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest
from panel.io.location import Location
from panel.util import parse_query
from scipy.stats import norm

from attentive.app import background, figures, rules
from attentive.app.layout import Dashboard
from attentive.app.plots.tradeoff import TradeoffView
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


@pytest.fixture
def ticks(monkeypatch):
    """What the dashboard leaves for a served session's next tick (``pn.state.execute``), kept
    until :func:`run_ticks` runs it."""
    pending = []
    monkeypatch.setattr(pn.state, "execute", lambda fn, schedule="auto": pending.append(fn))
    return pending


def run_ticks(pending, n: int = 5) -> None:
    """Run ``n`` ticks: each runs what the one before left."""
    for _ in range(n):
        todo, pending[:] = list(pending), []
        for fn in todo:
            fn()


def count_applied(dash) -> list:
    """Every ``set_controls`` of ``dash``'s state from now on (its keyword arguments)."""
    applied, apply = [], dash.state.set_controls
    dash.state.set_controls = lambda **values: (applied.append(values), apply(**values))[1]
    return applied


def test_a_delta_off_the_slider_grid_is_snapped_not_refused(dash):
    loc = url("?boundary=constant&delta=0.05&gamma=0.05&theta=0.15000000000000013")
    dash.sync_url(loc)
    s = dash.state
    assert s.n_errors == 0, s.last_error
    assert s.boundary == "constant"
    # on the grid: 0.05 itself, the two-digit value within half a step of 10**-1.30 = 0.0501
    # (a user's trial: "≤ 0.0501" in the guarantee for an address saying 0.05)
    assert s.delta == rules.snap_delta(0.05) == 0.05
    assert rules.snap_delta(0.0503) == 0.05 and rules.snap_delta(0.0123) == 0.0123
    assert s.gamma == "0.05"  # the URL's number, as the text field holds it
    assert s.theta == 0.15
    # The URL now says what was applied, and later moves reach it through the sync.
    assert loc.query_params["delta"] == s.delta and loc.query_params["theta"] == 0.15
    s.set_controls(delta=0.02)
    assert loc.query_params["delta"] == rules.snap_delta(0.02)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("seed", -5, "at least 0"),
        ("C", 0, "greater than"),
        ("delta", "abc", "number"),
        ("seed", "nan", "seed"),
    ],
)
def test_a_bad_url_value_is_reported_once_in_the_dashboards_words(dash, name, value, words):
    before = getattr(dash.state, name)
    query = f"?{name}={value}"
    loc = url(query)
    dash.sync_url(loc)
    s = dash.state
    assert s.n_errors == 1, s.last_error
    assert words in s.last_error and "parameter" not in s.last_error, s.last_error
    assert getattr(s, name) == before
    # The address now holds the value in use; the browser sends its own again as it connects
    # (and may send it once more): the refusal is not told again, and nothing changes.
    assert parse_query(loc.search)[name] == before
    assert s.n_errors == 1, s.last_error
    for _ in range(2):
        loc.search = query
        assert s.n_errors == 1, s.last_error
        assert getattr(s, name) == before


def test_an_uploaded_files_name_in_the_url_asks_for_the_upload_again_once(dash):
    before = dash.state.numbers()
    s = dash.state
    own = (s.kernel, s.C, s.gamma, s.theta)
    # (The settings an upload's address carries: its model's and its scores' threshold.)
    query = "?dataset=file%3A+good.csv&gamma=scale&C=3&theta=0.4&delta=0.02"
    loc = url(query)
    dash.sync_url(loc)
    assert s.n_errors == 1 and "upload it again" in s.last_error and "good.csv" in s.last_error
    assert "mnist-t10k-2v5 is shown with its own model settings" in s.last_error
    assert "C, gamma, theta were the upload's" in s.last_error
    assert s.dataset == "mnist-t10k-2v5" and s.walks is not None
    assert loc.query_params["dataset"] == "mnist-t10k-2v5"
    # The upload's settings are not applied to the dataset shown (gamma=scale trained another
    # model than its menu's); the rest applies.
    assert (s.kernel, s.C, s.gamma, s.theta) == own
    assert loc.query_params["gamma"] == own[2] or str(loc.query_params["gamma"]) == str(own[2])
    assert s.delta == rules.snap_delta(0.02) and s.numbers() != before
    # The browser sends its address again as it connects: the same upload is not told twice,
    # and its settings are not applied then either.
    loc.search = query
    assert s.n_errors == 1
    assert (s.kernel, s.C, s.gamma, s.theta) == own


@pytest.mark.slow
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
    rows = fam[(fam["method"] == "regression") & (fam["z"] > 0.5) & (fam["z"] < 3.5)]
    row = rows.iloc[len(rows) // 2]
    state.select_point(float(row["mean_evaluated_fraction"]), float(row["disagreement"]))
    assert state.n_errors == 0, state.last_error
    assert (state.boundary, state.z) == ("regression", float(row["z"]))
    assert state.delta == rules.delta_of(float(row["z"]))  # the slider shows Φ(−z)
    m = state.numbers()
    assert m["mean_evaluated_fraction"] == pytest.approx(row["mean_evaluated_fraction"])
    assert m["disagreement"] == pytest.approx(row["disagreement"])


def _drawn_ranges(state):
    """The tradeoff plot's axes as its view draws them for ``state``."""
    view = TradeoffView(state=state)
    view.__panel__()
    return view._ranges(view._value())


@pytest.mark.parametrize("dataset", ["breast-cancer", "synthetic"])
def test_a_click_on_the_tradeoff_picks_the_curve_nearest_on_the_plot(dataset):
    """Clicks anywhere below the legend's band pick the family whose curve passes nearest in
    the plot's own axes (each a share of its axis's length, as drawn): with the axis raised
    for the legend, distances measured against the curves' span alone picked another family
    on a fifth of the clicks (a click at (0.62, 0.10) on breast cancer named constant, curved
    being nearest)."""
    state = DashboardState(dataset=dataset, boundary="constant", side="both")
    assert state.n_errors == 0, state.last_error
    fam = state.tradeoff.families
    rng = np.random.default_rng(0)
    for _ in range(25):
        (ax0, ax1), (ay0, ay1) = _drawn_ranges(state)
        x = rng.uniform(0.0, 1.0)
        y = rng.uniform(0.0, (1 - figures.TRADEOFF_LEGEND_BAND) * ay1)
        d = ((fam["work_fraction"] - x) / (ax1 - ax0)) ** 2 + (
            (fam["disagreement"] - y) / (ay1 - ay0)
        ) ** 2
        expected = fam["method"].iloc[int(np.nanargmin(d.to_numpy()))]
        errors = state.n_errors
        state.select_point(x, y)
        # (a point beyond the δ slider's range is said, as information)
        assert state.n_errors == errors or state.error_level == "info", state.last_error
        assert state.boundary == expected, (x, y)


def test_a_click_on_a_point_beyond_the_delta_slider_says_which_point_is_taken():
    """A curve's points at scales the δ slider cannot set (δ' above 0.5) are drawn; a click
    there took the nearest point the slider can set, far along the curve, and the star seemed
    to land anywhere (a user's trial). It still takes it, and a notification says so."""
    from attentive.app import rules

    state = DashboardState(dataset="breast-cancer", boundary="constant", side="both")
    fam = state.tradeoff.families
    lo, _ = rules.SLIDER_Z
    beyond = fam[(fam["method"] == "constant") & (fam["z"] < lo - 0.2)]
    within = rules.on_slider(fam[fam["method"] == "constant"])
    assert len(beyond) and len(within)
    # The drawn point of the curve farthest from every point the slider can set.
    gaps = [
        np.min(
            np.hypot(
                within["work_fraction"] - r.work_fraction, within["disagreement"] - r.disagreement
            )
        )
        for r in beyond.itertuples()
    ]
    point = beyond.iloc[int(np.argmax(gaps))]
    errors = state.n_errors
    state.select_point(float(point["work_fraction"]), float(point["disagreement"]))
    assert state.boundary == "constant"
    assert lo - 1e-9 <= rules.z_of(state.delta)
    assert state.n_errors == errors + 1 and state.error_level == "info"
    assert "beyond the δ slider" in state.last_error and f"z = {point['z']:.2f}" in state.last_error
    # A point the slider can set says nothing.
    row = within.iloc[len(within) // 2]
    state.select_point(float(row["work_fraction"]), float(row["disagreement"]))
    assert state.n_errors == errors + 1


def test_a_click_on_a_zoomed_tradeoff_measures_in_the_axes_as_shown():
    """After a user's zoom the plot passes its axes as shown: distances are shares of those."""
    state = DashboardState(dataset="breast-cancer", boundary="constant", side="both")
    fam = state.tradeoff.families
    shown = ((0.3, 0.7), (0.0, 0.04))  # a box zoom on the lower middle
    rng = np.random.default_rng(1)
    for _ in range(10):
        x, y = rng.uniform(*shown[0]), rng.uniform(*shown[1])
        d = ((fam["work_fraction"] - x) / 0.4) ** 2 + ((fam["disagreement"] - y) / 0.04) ** 2
        expected = fam["method"].iloc[int(np.nanargmin(d.to_numpy()))]
        state.select_point(x, y, shown)
        assert state.n_errors == 0, state.last_error
        assert state.boundary == expected, (x, y)


def test_a_click_beyond_the_slider_picks_the_nearest_rule_the_slider_can_set():
    """The curves run over the whole grid (z from 6 to −6), but a click on a point whose
    δ' = Φ(−z) the slider cannot show (z < 0: δ' above 50 %) picks that curve's nearest point
    at a scale it can, so the slider, the address and the card name the rule that runs (and the
    family is the one clicked: the nearest point of any curve was another family's)."""
    state = DashboardState(boundary="constant", side="both")
    fam = state.tradeoff.families
    (ax0, ax1), (ay0, ay1) = _drawn_ranges(state)

    def dist(r, x0, y0):
        return ((r["work_fraction"] - x0) / (ax1 - ax0)) ** 2 + (
            (r["disagreement"] - y0) / (ay1 - ay0)
        ) ** 2

    lo, hi = rules.DELTA_RANGE
    # Φ(−z) at the slider's end, z = Φ⁻¹(1 − 10⁻⁴), is 10⁻⁴ less a rounding (9.99999999999887e-05).
    reachable = fam[[lo * (1 - 1e-9) <= rules.nominal_delta(z) <= hi for z in fam["z"]]]

    def nearest(rows, r):
        return min((o for _, o in rows.iterrows()), key=lambda o: dist(o, *r))

    # A point beyond the slider that no other family's curve passes near (curves overlap at
    # the ends, where a click names no one family), whose nearest point the slider can set is
    # another family's (the case this test is about).
    beyond = next(
        r
        for _, r in fam[fam["z"] < -0.5].iterrows()
        if dist(
            nearest(fam[fam["method"] != r["method"]], r[["work_fraction", "disagreement"]]),
            *r[["work_fraction", "disagreement"]],
        )
        > 1e-4
        and nearest(reachable, r[["work_fraction", "disagreement"]])["method"] != r["method"]
    )
    family = beyond["method"]
    x0, y0 = float(beyond["mean_evaluated_fraction"]), float(beyond["disagreement"])
    state.select_point(x0, y0)
    assert state.error_level == "info" and "beyond the δ slider" in state.last_error
    assert 0.0 <= state.z and lo <= rules.nominal_delta(state.z) <= hi
    assert state.delta == rules.delta_of(state.z)
    # The clicked curve's nearest point by the plot's own distance among the scales the slider
    # can set (brute force).
    best = min(
        (
            r
            for _, r in fam.iterrows()
            if r["method"] == family and lo <= rules.nominal_delta(r["z"]) <= hi
        ),
        key=lambda r: dist(r, x0, y0),
    )
    assert (state.boundary, state.z) == (family, float(best["z"]))


def test_a_timing_made_stale_by_a_newer_move_is_not_run(monkeypatch):
    """A timing that a newer move has replaced does nothing when its turn comes (nobody will
    see it), and only the newest is applied."""
    monkeypatch.setattr(background, "MEASURE_RETRY_PAUSE", 0.0)
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
    # An unsteady timing (a busy machine) is taken again first: those jobs run in turn too.
    i = 2
    while i < len(jobs):
        job, done = jobs[i]
        done(job())
        i += 1
    assert len(jobs) <= 2 + background.MEASURE_RETRIES
    assert state.measured is not None and state.measured.mean_evaluated == pytest.approx(
        float(state.outcome().n_evaluated.mean())
    )
    # A rule visited again shows the timing kept for it at once (steady: every timing is here),
    # without a job, and the first page too.
    monkeypatch.setattr(rules, "STEADY_SPREAD", float("inf"))
    new_done(new_job())  # (taken again: kept this time)
    kept = rules.measure.peek(state.walks, state.rule)
    assert kept is not None
    jobs.clear()
    state.set_controls(delta=0.02)
    state.set_controls(delta=0.05)
    assert state.measured is kept and len(jobs) == 1
    assert DashboardState(hold_background=True, delta=0.05).measured is kept
    # A move away and back: the first visit's timing is stale too, though its rule is current.
    rules.measure.clear()
    jobs.clear()
    state.set_controls(delta=0.02)
    state.set_controls(delta=0.05)
    state.set_controls(delta=0.02)
    assert len(jobs) == 3 and jobs[0][0]() is None and jobs[1][0]() is None
    assert jobs[2][0]() is not None


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
    loc = url(f"?boundary=curved&z={z}")
    first.sync_url(loc)
    assert first.state.n_errors == 0, first.state.last_error
    assert (first.state.boundary, first.state.z) == ("curved", z)
    assert first.state.numbers() == DashboardState(boundary="curved", z=z).numbers()
    # The δ slider names that rule: its δ' = Φ(−z), on the slider's grid (not the default
    # δ the page had, which the address then held beside z).
    assert abs(np.log10(first.state.delta) - np.log10(norm.sf(z))) <= 0.005
    assert loc.query_params["delta"] == first.state.delta and loc.query_params["z"] == z


def test_an_address_whose_delta_and_z_disagree_runs_one_rule_and_the_slider_names_it():
    """An address the dashboard wrote holds δ = Φ(−z) (on the slider's grid); a hand-edited one
    may not, most likely its δ, the control the page shows. δ is then used and z follows it; for
    a family rule, which runs at z, a warning names both values, and the calibrated rule takes
    no z (nothing to tell). The browser sends its address again as it connects: the same rule
    and no second warning, whether or not the address's δ is the page's (0.01, the default)."""
    z = 2.5
    for boundary, told in [("curved", True), ("calibrated", False)]:
        for delta in (0.05, 0.01):
            query = f"?boundary={boundary}&delta={delta}&z={z}"
            dash = Dashboard(state=DashboardState())
            loc = url(query)
            dash.sync_url(loc)
            for _ in range(2):
                s = dash.state
                assert (s.boundary, s.delta) == (boundary, delta)
                assert s.z == pytest.approx(norm.isf(delta), abs=0.01)
                assert s.n_errors == int(told), s.last_error
                if told:
                    assert s.error_level == "warning"
                    assert f"δ = {delta:g} and z = {z:g}, which disagree" in s.last_error
                    assert "remove δ from the address" in s.last_error
                assert loc.query_params["delta"] == delta and loc.query_params["z"] == s.z
                loc.search = query  # sent again
            assert s.numbers() == DashboardState(boundary=boundary, delta=delta).numbers()


@pytest.mark.parametrize(
    ("boundary", "z", "delta"),
    [
        ("curved", "5", 1e-4),
        ("constant", "-1", 0.5),
        ("calibrated", "5", 1e-4),
        ("regression", "8", 1e-4),  # (beyond z's own bounds, ±6)
        ("curved", "5&delta=abc", 1e-4),  # (δ refused and told: z alone)
        ("curved", "5&delta=0.9", 1e-4),  # (δ beyond its range, likewise)
    ],
)
def test_a_z_beyond_the_delta_slider_runs_at_the_sliders_end_and_says_so(boundary, z, delta):
    """The δ slider, the address and the card name the rule that runs (the pickers choose among
    the slider's scales): an address's z beyond the slider's range (δ' = Φ(−z) below 0.01 % or
    above 50 %) is put at the slider's nearest end, δ there; a family rule, which runs at z,
    says so once, the calibrated rule runs at δ and says nothing. A δ beside it that is refused
    is told (once), and z is taken alone."""
    query = f"?boundary={boundary}&z={z}"
    given = float(z.split("&")[0])
    dash = Dashboard(state=DashboardState())
    said = []
    report = dash.state.report
    dash.state.report = lambda exc, level="error": (said.append((str(exc), level)), report(exc, level))[1]  # fmt: skip
    loc = url(query)
    dash.sync_url(loc)
    warned = boundary != "calibrated"
    refused = "delta=" in z
    for _ in range(2):
        s = dash.state
        assert (s.boundary, s.delta) == (boundary, delta)
        assert s.z == pytest.approx(norm.isf(delta), abs=1e-9)
        assert rules.settable(s.z)
        assert len(said) == int(warned) + int(refused), said
        warnings = [text for text, level in said if level == "warning"]
        assert len(warnings) == int(warned), said
        for text in warnings:
            assert f"z = {given:g}" in text and "slider" in text, text
            assert f"z = {s.z:.2f}" in text, text
        if refused:
            assert any(level == "error" and "δ" in text for text, level in said), said
        assert loc.query_params["delta"] == delta and loc.query_params["z"] == s.z
        loc.search = query  # sent again
    expected = DashboardState(boundary=boundary, delta=delta)
    assert s.numbers() == expected.numbers()


@pytest.mark.parametrize("query", ["", "?boundary=curved&delta=0.01", "?gamma=0.05&C=1.0"])
def test_an_idle_session_applies_nothing_once_the_url_holds_the_state(query, ticks):
    """The browser sends its address as it connects, and the location's ``search`` may be sent
    again later: once the URL holds the state, none of that applies anything or leaves work for
    a later tick. A value read from the query as a number (gamma=0.05) equals the control's text
    "0.05". Before, it never did: every re-send applied the URL again and scheduled another, so
    the server's main thread stayed busy for good and the session's background timing ran tens
    of times slower."""
    dash = Dashboard(state=DashboardState())
    loc = url(query)
    dash.sync_url(loc)  # as the page is built
    in_use = parse_query(loc.search)
    applied = count_applied(dash)
    loc.search = query  # the browser's address, as it connects
    run_ticks(ticks)
    for _ in range(3):
        loc.param.trigger("search")
        run_ticks(ticks)
    assert applied == [] and ticks == []
    assert parse_query(loc.search) == in_use
    assert dash.state.gamma == "0.05" and dash.state.n_errors == 0, dash.state.last_error


@pytest.mark.parametrize(
    ("query", "browser"),
    [("?target=0.01", "?target=0.01"), ("?delta=0.05", "?delta=0.05"), ("", "?seed=0")],
)
def test_the_browser_gets_the_url_in_use_on_the_tick_after_it_sent_its_own(query, browser, ticks):
    """The browser sends its address as it connects (a link with only a target, a δ typed off
    the slider's grid); the server holds the URL in use (the rule the target picked, δ snapped),
    but Panel does not echo ``search`` back while it handles the browser's change of it. On the
    next tick the location's ``search`` is set (or re-sent) to the URL in use, which reaches
    the browser, and nothing more is scheduled."""
    dash = Dashboard(state=DashboardState())
    loc = url(query)
    dash.sync_url(loc)  # as the page is built
    in_use = parse_query(loc.search)
    assert {"boundary", "z", "delta"} <= in_use.keys()
    sent = []
    loc.param.watch(lambda e: sent.append(e.new), "search", onlychanged=False)
    loc.search = browser
    sent.clear()  # what happened while the browser's change was handled
    run_ticks(ticks, n=1)
    assert sent and parse_query(sent[-1]) == in_use
    sent.clear()
    run_ticks(ticks)
    assert sent == [] and ticks == []


def test_a_cleared_target_in_the_url_reopens_without_an_error():
    """Moving δ away from a picked target clears it, and the location writes the cleared value
    as ``target=null``. Sent again, or opened in a new session, that address applies nothing
    and reports nothing (before, it was applied as the text "null": "expected a number")."""
    dash = Dashboard(state=DashboardState())
    loc = url("")
    dash.sync_url(loc)
    dash.state.target = 0.02
    dash.state.set_controls(delta=0.05)
    assert dash.state.target is None and loc.query_params["target"] == "null"
    loc.param.trigger("search")
    again = Dashboard(state=DashboardState())
    again.sync_url(url(loc.search))
    for d in (dash, again):
        assert d.state.n_errors == 0, d.state.last_error
    assert again.state.numbers() == dash.state.numbers()


@pytest.mark.parametrize("value", ["plots", "%5B1%2C2%5D", "%7B%22a%22%3A1%7D"])
def test_a_tab_the_page_does_not_have_is_told_once_and_answered_with_the_tab_shown(
    dash, ticks, value
):
    """``?tab=plots`` — or a list or an object, which Panel's location reads as JSON (a list was
    no set member: the watcher raised, Panel dropped it, and nothing was told) — is told once,
    also when the browser sends its address again, and the address then holds the tab shown."""
    loc = url(f"?tab={value}")
    tabs = pn.Tabs(("a", pn.pane.Markdown("a")), ("b", pn.pane.Markdown("b")))
    tabs.active = 0
    dash._sync_tab(loc, tabs)
    s = dash.state
    assert s.n_errors == 1 and "is not a tab of the page" in s.last_error, s.last_error
    run_ticks(ticks)
    assert parse_query(loc.search)["tab"] == "walks" and tabs.active == 0
    loc.search = f"?tab={value}"  # the browser's second sending of its address
    run_ticks(ticks)
    assert s.n_errors == 1, s.last_error
    assert parse_query(loc.search)["tab"] == "walks"


def test_alpha_from_the_slider_reaches_the_address_without_float_noise(dash):
    """The α slider's steps of 0.005 arrive as sums (0.15599999999999997), which the address
    held as written; an address's own α keeps its digits."""
    loc = url("?delta=0.02")
    dash.sync_url(loc)
    s = dash.state
    s.alpha = 0.15599999999999997
    assert s.alpha == 0.156 and s.rule.alpha == 0.156
    assert str(loc.query_params["alpha"]) == "0.156"
    loc.search = "?delta=0.02&alpha=0.0123"
    assert s.alpha == 0.0123 and s.n_errors == 0, s.last_error


def test_an_unsnapped_alpha_with_a_delta_keeps_z_in_step():
    """An address of an older page (α as 0.15599999999999997) with a δ: snapping α first
    returned before z followed δ, and the rule ran at the old δ's z under the new δ's slider."""
    dash = Dashboard(state=DashboardState())
    loc = url("?boundary=constant&delta=0.02&alpha=0.15599999999999997")
    dash.sync_url(loc)
    s = dash.state
    assert s.alpha == 0.156 and s.delta == rules.snap_delta(0.02)
    assert rules.delta_of(s.z) == s.delta and s.rule.alpha == 0.156
    assert s.n_errors == 0, s.last_error


@pytest.mark.parametrize("field", ["target", "time_budget"])
def test_an_address_with_a_picked_rule_reopens_that_rule_not_a_new_pick(monkeypatch, field):
    """A target (or a time budget) picks a rule; the address holds both. Reopened once sketched
    rules are offered (a sketch fitted in any session) — or the rules timed again — the pick
    made again chose another rule, and the link showed that instead (mass-regression at z =
    0.84 reopened as sketched-heteroscedastic at z = 0.44). The address's rule is reopened,
    its pick kept; an address with the target alone still picks."""
    dash = Dashboard(state=DashboardState())
    loc = url("")
    dash.sync_url(loc)
    if field == "target":
        dash.state.target = 0.02
    else:
        # (Times by a stand-in for the evaluator: a microsecond per tenth of a full evaluation.)
        s = dash.state
        table = rules.tradeoff(s.walks, s.side, s.theta, s.sketched).table
        times = table[["family", "z"]].assign(
            us_per_example=1.0 + 10.0 * table["work_fraction"], measured=True
        )
        times.attrs["full_us_per_example"] = 11.0
        s.times = times
        s.time_budget = 5.0
    picked = (dash.state.boundary, dash.state.z)
    assert dash.state.still_picked() and loc.query_params["boundary"] == picked[0]
    address = loc.search

    # Now sketched rules compete, and the pick chooses one of them.
    other = {"family": "curved" if picked[0] != "curved" else "regression", "z": 1.3}
    plain_cheapest, plain_tradeoff = rules.cheapest, rules.tradeoff
    monkeypatch.setattr(
        DashboardState, "_pick_key", lambda self: (self.walks, self.side, self.theta, True)
    )
    monkeypatch.setattr(
        rules, "cheapest", lambda w, side, theta, sketched, target: (
            other if sketched else plain_cheapest(w, side, theta, False, target)
        )
    )  # fmt: skip

    def tradeoff(w, side, theta, sketched=False):
        return plain_tradeoff(w, side, theta, False)

    tradeoff.peek = lambda w, side, theta, sketched=False: plain_tradeoff.peek(w, side, theta)
    monkeypatch.setattr(rules, "tradeoff", tradeoff)
    monkeypatch.setattr(rules, "lowest_within_time", lambda table, budget: other)
    again = Dashboard(state=DashboardState())
    again_loc = url(address)
    again.sync_url(again_loc)
    s = again.state
    assert s.n_errors == 0, s.last_error
    assert (s.boundary, s.z) == picked
    assert getattr(s, field) == getattr(dash.state, field) and s.still_picked()
    assert s.numbers() == dash.state.numbers()
    # The address alone with the target (a link typed by hand) picks, as the field does.
    if field == "target":
        fresh = Dashboard(state=DashboardState())
        fresh.sync_url(url("?target=0.02"))
        assert (fresh.state.boundary, fresh.state.z) == (other["family"], 1.3)


def _picked_by_hand(query: str) -> DashboardState:
    dash = Dashboard(state=DashboardState())
    dash.sync_url(url(query))
    return dash.state


def test_an_address_whose_rule_its_target_does_not_pick_picks_again():
    """The pick is kept only for the rule it picks: a target edited in the address (0.02 →
    0.001, which that rule's disagreement of ~0.02 does not meet), a rule refused or a rule no
    picker chooses (the budget rule) left the address's rule in use, marked as picked by a
    target it breaks. Each picks as the target alone does; with a time budget beside it, the
    target decides, as when both are entered."""
    first = _picked_by_hand("?target=0.02")
    rule = f"boundary={first.boundary}&z={first.z}&delta={first.delta}"
    alone = _picked_by_hand("?target=0.001")
    assert (alone.boundary, alone.z) != (first.boundary, first.z)
    for query, expected in [
        (f"?{rule}&target=0.001", alone),
        ("?boundary=bogus&target=0.02", first),
        ("?boundary=budget&target=0.02", first),
        (f"?{rule}&target=0.02&time_budget=3", first),
    ]:
        s = _picked_by_hand(query)
        assert (s.boundary, s.z) == (expected.boundary, expected.z), query
        assert s.target == expected.target and s.time_budget is None, query
        assert s.still_picked(), query


def test_an_uploaded_model_in_the_url_asks_for_the_upload_again_once(dash):
    """A reload after a model upload went back to the dataset's trained model without a word
    (an uploaded dataset was told of; a user's trial). The address says the model was
    uploaded; reopened, the page tells once that the upload is not kept and shows the trained
    model, leaving out the address's θ (on the uploaded model's scores)."""
    s = dash.state
    own_theta = s.theta
    query = "?dataset=breast-cancer&model_source=upload&theta=0.4&delta=0.02"
    loc = url(query)
    dash.sync_url(loc)
    assert s.n_errors == 1 and "The model was an uploaded file" in s.last_error
    assert "breast-cancer is shown with its trained model" in s.last_error
    assert "theta was the upload's" in s.last_error
    assert s.dataset == "breast-cancer" and s.model_source == "train" and s.walks is not None
    assert s.theta == own_theta and s.delta == rules.snap_delta(0.02)
    assert loc.query_params["model_source"] == "train"
    loc.search = query  # (sent again as the browser connects: not told twice)
    assert s.n_errors == 1


def test_the_address_says_a_model_was_uploaded(dash):
    s = dash.state
    loc = url("")
    dash.sync_url(loc)
    assert loc.query_params["model_source"] == "train"
    from sklearn.svm import SVC

    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-2v5")
    import skops.io as sio

    model = SVC(gamma=0.02).fit(ds.X_train[:300], ds.y_train[:300])
    assert s.upload_model(sio.dumps(model), "svc.skops"), s.last_error
    assert loc.query_params["model_source"] == "upload"
