"""The Brownian-bridge tab's data: the threshold is Constant-STST's, walks stop at their first
crossing, and the error and stopping-time frames are those the paper's Figure 3 is drawn from.
(How long a move takes is measured in benchmarks/bench_app.py, not here.)"""

from __future__ import annotations

import numpy as np
import pytest

from attentive import constant_threshold
from attentive.app.bridge import ERROR_PATHS, N_WALKS, bridge_figures
from attentive.simulation import simulate_decision_error


def test_walks_stop_at_the_first_crossing_of_the_constant_threshold():
    f = bridge_figures(drift=0.05, n=400, delta=0.05, seed=1)
    assert f.tau == constant_threshold(0.05, 400.0, 0.0, side="upper")
    walks = np.split(f.y, np.flatnonzero(np.isnan(f.y)))
    walks = [w[~np.isnan(w)] for w in walks if np.isfinite(w).any()]
    assert len(walks) == N_WALKS
    stops = iter(zip(f.stop_t, f.stop_s, strict=True))
    for w in walks:
        assert w[0] == 0 and (w[:-1] < f.tau).all()  # S_0 = 0, below τ until the end
        if w[-1] >= f.tau:  # crossed: the last point is the stop
            t, s = next(stops)
            assert (t, s) == (len(w) - 1, w[-1])
        else:
            assert len(w) == f.n + 1
    assert next(stops, None) is None


def test_error_and_time_follow_the_theory():
    f = bridge_figures(drift=0.05, n=1000, delta=0.05, seed=0)
    ok = f.required >= 0.01
    assert (f.actual[ok] <= f.required[ok] + 3 * f.stderr[ok] + 1e-3).all()  # safer than promised
    assert 0.35 < f.slope < 0.65  # √n growth (Theorem 2)


def test_the_frames_are_those_the_papers_figure_3_elements_draw():
    import holoviews as hv

    from attentive.plots import decision_error_plot, stopping_time_plot

    f = bridge_figures(drift=0.05, n=600, delta=0.02, seed=2)
    errors = f.decision_error
    # The simulation of attentive.simulation, run again with the same seed.
    again = simulate_decision_error(600, drift=0.05, n_paths=ERROR_PATHS, random_state=2)
    np.testing.assert_array_equal(errors["actual"], again.actual)
    assert (errors["paths_below_zero"] == f.error_paths).all() and f.error_paths > 0
    times = f.stopping_time
    # E[min(T, n)] is what a predictor with n terms pays: at most n and at most E[T].
    assert (times["mean_stopping_time_truncated"] <= times["n"]).all()
    assert (times["mean_stopping_time_truncated"] <= times["mean_stopping_time"] + 1e-9).all()
    a = decision_error_plot(errors, f.delta, height=330)
    marks = [e for e in a if isinstance(e, hv.VLine)]
    assert [m.data for m in marks] == [f.delta]  # the current δ is marked
    b = stopping_time_plot(times, height=330)
    drawn = {e.label for e in b if isinstance(e, hv.Scatter)}
    assert drawn == {"E[T]  (Theorem 2)", "E[min(T, n)]  (predictor pays)"}


def test_the_tabs_series_are_those_of_the_papers_figure_3_elements():
    """What the tab draws (error_points, stopping_fits) against what attentive.plots' HoloViews
    elements compute from the same frames (the notebooks' Figure 3)."""
    import holoviews as hv

    from attentive.plots import decision_error_plot, stopping_time_plot

    f = bridge_figures(drift=0.02, n=300, delta=0.05, seed=3)
    e = f.error_points()
    a = decision_error_plot(f.decision_error, f.delta, height=330)
    bars = next(el for el in a if isinstance(el, hv.ErrorBars))
    x, y, lo, hi = (bars.dimension_values(i) for i in range(4))
    np.testing.assert_array_equal(e["required"], x)
    np.testing.assert_array_equal(e["actual"], y)
    np.testing.assert_allclose(e["lower"], y - lo)
    np.testing.assert_allclose(e["upper"], y + hi)
    ghosts = [el for el in a if isinstance(el, hv.Scatter) and "none crossed" in el.label]
    if ghosts:
        np.testing.assert_array_equal(e["none_required"], ghosts[0].dimension_values(0))
        np.testing.assert_allclose(e["none_at"], ghosts[0].dimension_values(1))
    else:
        assert e["none_required"].size == 0
    b = stopping_time_plot(f.stopping_time, height=330)
    fits = [el for el in b if isinstance(el, hv.Curve) and el.label.startswith("fit")]
    got = f.stopping_fits()
    for key, curve in zip(("mean", "truncated"), fits, strict=True):
        n, t, slope = got[key]
        np.testing.assert_allclose(n, curve.dimension_values(0))
        np.testing.assert_allclose(t, curve.dimension_values(1))
        assert curve.label == f"fit: slope {slope:.2f}"
    assert got["mean"][2] == pytest.approx(f.slope)  # attentive.simulation's own slope


def test_the_tab_redraws_its_figures_in_place():
    """A move changes the figures' sources, legend labels and title, never the figures: in
    JupyterLab a replaced figure came back from the page as models Bokeh refused."""
    from bokeh.models import Legend

    from attentive.app.plots.bridge import BridgeTab

    tab = BridgeTab()
    figures = (tab._walks_fig, tab._errors, tab._times)
    ids = [r.id for fig in figures for r in fig.renderers]
    tab.param.update(n=450, delta=0.1, drift=0.1)
    assert (tab._walks_fig, tab._errors, tab._times) == figures
    assert [r.id for fig in figures for r in fig.renderers] == ids
    f = bridge_figures(0.1, 450, 0.1)
    e = f.error_points()
    np.testing.assert_array_equal(tab._points.data["actual"], e["actual"])
    np.testing.assert_array_equal(tab._none.data["required"], e["none_required"])
    assert tab._delta_mark.location == 0.1
    labels = [i.label.value for i in tab._errors.select_one(Legend).items]
    assert labels[0] == f"actual ± 2 s.e., n = 450 ({f.error_paths:,} paths)"
    slope = f.stopping_fits()["mean"][2]
    assert f"fit: slope {slope:.2f}" in [i.label.value for i in tab._times.select_one(Legend).items]
    assert tab._times.title.text.endswith("(δ = 0.1)")
    # Every simulated n is a labelled tick (Bokeh's log ticks labelled 200–1,000 only), and the
    # times' axis has 1, 2 and 5 of each decade.
    assert tab._times.xaxis[0].ticker.ticks == [int(n) for n in f.ns]
    assert {50, 100, 200, 500, 1000} <= set(tab._times.yaxis[0].ticker.ticks)


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_no_mark_is_black_on_the_dark_theme(theme):
    """The oracle floor, the bridge's stops, its actual = required line and its error bars' caps
    were drawn black: unseen on the dark theme's background. Every line and marker colour of the
    tab's and the tradeoff's figures, the caps included, is read back."""
    import panel as pn
    from bokeh.models import GlyphRenderer, Span, Whisker

    from attentive.app.plots.bridge import BridgeTab
    from attentive.app.plots.tradeoff import TradeoffView
    from attentive.app.state import DashboardState

    with pn.config.set(theme=theme):
        tab = BridgeTab()
        view = TradeoffView(state=DashboardState())
        view.__panel__()
    figures = (tab._walks_fig, tab._errors, tab._times, view._fig)
    colours = []
    for fig in figures:
        for r in fig.select(type=GlyphRenderer):
            for name in ("line_color", "fill_color"):
                value = getattr(r.glyph, name, None)
                colours.append(value.value if hasattr(value, "value") else value)
        colours += [s.line_color for s in fig.select(type=Span)]
        for w in fig.select(type=Whisker):
            colours += [w.line_color, w.upper_head.line_color, w.lower_head.line_color]
    colours = [c for c in colours if isinstance(c, str)]
    assert len(colours) > 10
    if theme == "dark":
        assert "black" not in colours and "#000000" not in colours, colours
    else:
        assert "black" in colours  # the light page keeps its black marks (the test sees them)


def test_the_sliders_in_the_url_are_read_back_and_bad_ones_named():
    """?bridge_n=500 opens the tab at n = 500 (a shared address, or the page the theme switch
    reloads, keeps the walks); a value the slider cannot take is named with what it expects,
    and that slider keeps its default."""
    from attentive.app.plots.bridge import BridgeTab, BridgeUrl, bridge_url_values

    values, problems = bridge_url_values(BridgeUrl(n="500", drift=0.1, delta="0.02"))
    assert values == {"n": 500, "drift": 0.1, "delta": 0.02} and problems == []
    for key, raw, expected in [
        ("n", "50.5", "a whole number from 50 to 3000"),
        ("n", "inf", "a whole number from 50 to 3000"),
        ("delta", "nan", "a number from 0.001 to 0.5"),
        ("delta", 0.9, "a number from 0.001 to 0.5"),
        ("drift", "abc", "a number from 0.005 to 0.3"),
        ("drift", True, "a number from 0.005 to 0.3"),
    ]:
        good = {"delta": 0.2} if key == "n" else {"n": 300}
        values, problems = bridge_url_values(BridgeUrl(**{**good, key: raw}))
        assert values == good
        (problem,) = problems
        assert problem.startswith(f"bridge_{key}={raw} is not a value") and expected in problem
        assert f"The default {BridgeTab.param[key].default:g} is used." in problem


def test_a_refused_value_leaves_the_url_through_panels_location():
    """Through Panel's own location (it parses ?bridge_n=7 to an int): the refused n is told and
    replaced by the default in the query, the good drift kept."""
    from panel.io.location import Location

    from attentive.app.plots.bridge import (
        BRIDGE_URL,
        BridgeUrl,
        bridge_url_reset,
        bridge_url_values,
    )

    location = Location(search="?tab=bridge&bridge_n=7&bridge_drift=0.1")
    url = BridgeUrl()
    location.sync(url, BRIDGE_URL)
    values, problems = bridge_url_values(url)
    assert values == {"drift": 0.1} and len(problems) == 1 and "bridge_n=7" in problems[0]
    bridge_url_reset(url, values)
    assert "bridge_n=1000" in location.search and "bridge_drift=0.1" in location.search


def test_a_value_between_the_sliders_steps_goes_to_the_nearest_step_and_into_the_url():
    """A slider holds only its steps (n: 50, 100, ... 3000): a URL value between two steps is
    taken at the nearest one, as δ's slider snaps a typed δ, and the address then holds it. The
    nearest step is found here by a search over every step."""
    from panel.io.location import Location

    from attentive.app.plots.bridge import (
        BRIDGE_URL,
        BridgeTab,
        BridgeUrl,
        bridge_url_reset,
        bridge_url_values,
    )

    def nearest(name, number):
        spec = BridgeTab.param[name]
        lo, hi = spec.bounds
        grid = lo + spec.step * np.arange(round((hi - lo) / spec.step) + 1)
        return float(grid[np.argmin(np.abs(grid - number))])

    for name, raw in [
        ("n", "777"),
        ("n", "774"),
        ("n", "2999"),
        ("n", "51"),
        ("drift", "0.123"),
        ("drift", "0.0051"),
        ("delta", "0.0124"),
        ("delta", "0.4996"),
    ]:
        values, problems = bridge_url_values(BridgeUrl(**{name: raw}))
        assert problems == []
        assert values[name] == pytest.approx(nearest(name, float(raw)), abs=1e-9), (name, raw)
        assert values[name] != float(raw)
    for n in range(50, 3001, 50):  # every step is its own
        assert bridge_url_values(BridgeUrl(n=str(n)))[0] == {"n": n}

    location = Location(search="?tab=bridge&bridge_n=777&bridge_drift=0.1&bridge_delta=0.0124")
    url = BridgeUrl()
    location.sync(url, BRIDGE_URL)
    values, problems = bridge_url_values(url)
    assert values == {"n": 800, "drift": 0.1, "delta": 0.012} and problems == []
    bridge_url_reset(url, values)
    for held in ("bridge_n=800", "bridge_drift=0.1", "bridge_delta=0.012"):
        assert held in location.search, location.search
    assert type(url.n) is int


def test_a_slider_move_is_written_to_the_url():
    from attentive.app.plots.bridge import BridgeTab, BridgeUrl

    url = BridgeUrl()
    tab = BridgeTab(n=200)
    tab.follow(url)
    assert (url.n, url.drift, url.delta) == (None, None, None)  # untouched: not in the URL
    tab.n = 250
    tab.drift = 0.1 + 0.2 - 0.2  # a slider's step sum: written as the number it shows
    assert (url.n, url.drift, url.delta) == (250, 0.1, None)
    assert type(url.n) is int
