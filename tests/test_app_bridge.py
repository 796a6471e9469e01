"""The Brownian-bridge tab's data: the threshold is Constant-STST's, walks stop at their first
crossing, and the error and stopping-time frames are those the paper's Figure 3 is drawn from.
(How long a move takes is measured in benchmarks/bench_app.py, not here.)"""

from __future__ import annotations

import numpy as np

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


def test_the_tab_draws_the_papers_figure_3_elements_from_its_frames():
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
