"""The dashboard's state object, driven without a browser.

Every figure number is checked against an independent computation: the estimator fitted from
scratch, a brute-force loop over examples, or the core function the view claims to show.
"""

from __future__ import annotations

import io
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from attentive import AttentiveClassifier, constant_threshold
from attentive.app.cache import MAX_TRAJECTORIES
from attentive.app.compute import DELTA_GRID
from attentive.app.state import DashboardState
from attentive.data import load_dataset

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _isolated_model_cache(tmp_path_factory, monkeypatch):
    # Trained models are cached on disk under the data home: keep tests off the repository's.
    home = tmp_path_factory.getbasetemp() / "data-home"
    monkeypatch.setenv("ATTENTIVE_DATA", str(home))
    monkeypatch.setenv("ATTENTIVE_MIRROR", "http://127.0.0.1:9/")  # downloads fail at once


@pytest.fixture
def state():
    return DashboardState()


def brute_force_lower(S: np.ndarray, tau: float):
    """First t < n with S_t < τ, by a plain loop (the reference for the vectorised code)."""
    m, n = S.shape
    n_eval = np.full(m, n)
    stopped = np.zeros(m, dtype=bool)
    for i in range(m):
        for t in range(n - 1):
            if S[i, t] < tau:
                n_eval[i], stopped[i] = t + 1, True
                break
    return n_eval, stopped


def test_default_state_loads_the_offline_dataset(state):
    assert state.last_error == ""
    assert state.dataset == "digits-2v5"
    assert state.figures is not None
    assert state.class_names == ("2", "5")
    assert state.walks.S.shape == (state.walks.y_test.size, state.walks.n_terms)


@pytest.mark.parametrize("delta", [1e-4, 0.003, 0.05, 0.5])
def test_tau_moves_with_delta_as_constant_threshold_says(state, delta):
    state.delta = delta
    f = state.figures
    ds = load_dataset("digits-2v5")
    est = AttentiveClassifier(
        state.walks.estimator.estimator_, delta=delta, side="lower", random_state=0
    ).fit(ds.X_train, ds.y_train)
    expected = constant_threshold(delta, est.variance_, est.theta_s_, "lower")
    np.testing.assert_allclose(f.boundary["lower"], expected, rtol=1e-12)
    assert f.metrics["tau_lower"] == pytest.approx(expected, rel=1e-12)
    assert f.boundary["upper"].isna().all()  # lower side only


def test_operating_point_matches_a_brute_force_walk(state):
    state.param.update(delta=0.2, theta=0.3)
    f = state.figures
    S = np.asarray(state.walks.S)
    tau = f.metrics["tau_lower"]
    n_eval, stopped = brute_force_lower(S, tau)
    full = S[:, -1] >= f.theta_s
    early = np.where(stopped, False, full)
    assert f.operating_point["mean_evaluated"] == pytest.approx(n_eval.mean())
    assert f.operating_point["stop_error"] == pytest.approx(np.sum(full & ~early) / full.sum())
    assert f.operating_point["disagreement"] == pytest.approx(np.mean(full != early))
    assert f.metrics["n_stopped"] == stopped.sum()
    y = state.walks.y_test.astype(bool)
    assert f.metrics["accuracy_attentive"] == pytest.approx(np.mean(early == y))


def test_operating_point_lies_on_the_tau_sweep(state):
    """The constant boundary's point is the τ sweep's point at the same τ."""
    from attentive.metrics import attentive_tradeoff

    state.delta = 0.01
    f = state.figures
    curve = attentive_tradeoff(state.walks.S, f.theta_s, [f.metrics["tau_lower"]])
    assert f.operating_point["mean_evaluated"] == pytest.approx(curve.mean_evaluated[0])
    assert f.operating_point["stop_error"] == pytest.approx(curve.stop_error[0])


def test_exported_classifier_reproduces_the_operating_point(state):
    state.param.update(delta=0.1, theta=-0.2, seed=7)
    blob = state.classifier_bytes()
    untrusted = sio.get_untrusted_types(data=blob)
    clf = sio.loads(blob, trusted=untrusted)
    assert isinstance(clf, AttentiveClassifier)
    ev = clf.evaluate(load_dataset("digits-2v5").X_test)
    f = state.figures
    assert ev.n_evaluated.mean() == pytest.approx(f.operating_point["mean_evaluated"])
    assert np.mean(ev.positive == state.walks.y_test.astype(bool)) == pytest.approx(
        f.metrics["accuracy_attentive"]
    )


def test_operating_point_json_names_what_it_came_from(state):
    from attentive.models import model_fingerprint

    state.param.update(delta=0.02, theta=0.1, boundary="constant")
    point = json.loads(state.operating_point_json())
    assert point["dataset"] == "digits-2v5"
    assert point["delta"] == 0.02 and point["theta"] == 0.1
    assert point["model_fingerprint"] == model_fingerprint(state.walks.estimator.estimator_)
    assert point["tau"]["tau_lower"] == pytest.approx(state.figures.metrics["tau_lower"])
    assert point["metrics"]["stop_error"] == pytest.approx(state.figures.metrics["stop_error"])


def test_seed_changes_the_order_but_not_the_full_scores(state):
    order0 = state.walks.walk.order.copy()
    S0 = np.asarray(state.walks.S)
    state.seed = 1
    assert state.last_error == ""
    assert not np.array_equal(order0, state.walks.walk.order)
    assert not np.allclose(S0[:, :-1], state.walks.S[:, :-1])
    np.testing.assert_allclose(S0[:, -1], state.walks.S[:, -1], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(
        state.walks.walk.order, np.random.default_rng(1).permutation(state.walks.n_terms)
    )


def test_trajectories_are_one_nan_separated_path_per_class(state):
    state.param.update(n_trajectories=25, delta=0.3, theta=0.5)
    f = state.figures
    idx = state.walks.sample[:25]
    S0 = np.concatenate([np.zeros((25, 1)), state.walks.S[idx]], axis=1)
    full = state.walks.S[idx, -1] >= f.theta_s
    n_eval, _ = brute_force_lower(np.asarray(state.walks.S[idx]), f.metrics["tau_lower"])
    for name, rows in (("positive", np.flatnonzero(full)), ("negative", np.flatnonzero(~full))):
        x, y = f.trajectories[name]
        assert x.dtype == np.float32 and x.shape == y.shape
        segments = np.split(np.arange(x.size), np.flatnonzero(np.isnan(x)) + 1)[:-1]
        assert len(segments) == rows.size  # one gap after each walk
        for seg, r in zip(segments, rows, strict=True):
            seg = seg[np.isfinite(x[seg])]
            assert x[seg[0]] == 0 and y[seg[0]] == 0  # S_0 = 0
            assert x[seg[-1]] == n_eval[r]  # ends at its stop
            assert y[seg[-1]] == pytest.approx(S0[r, n_eval[r]], rel=1e-5)
    assert len(f.stops) == int(np.sum(n_eval < state.walks.n_terms))


def test_theta_moves_full_decisions_and_theta_s(state):
    lo, hi = state.param.theta.bounds
    assert lo < np.quantile(state.walks.full_score, 0.01) and hi > 0
    state.theta = 0.4
    f = state.figures
    assert f.theta_s == pytest.approx(0.4 - state.walks.offset)
    full = state.walks.full_score >= 0.4
    assert f.metrics["accuracy_full"] == pytest.approx(np.mean(full == state.walks.y_test))


def test_curved_and_budget_boundaries_match_the_estimator(state):
    ds = load_dataset("digits-2v5")
    model = state.walks.estimator.estimator_
    state.param.update(boundary="curved", delta=0.05, side="both")
    est = AttentiveClassifier(
        model, boundary="curved", delta=0.05, side="both", random_state=0
    ).fit(ds.X_train, ds.y_train)
    ev = est.evaluate(ds.X_test)
    assert state.figures.operating_point["mean_evaluated"] == pytest.approx(ev.n_evaluated.mean())
    state.param.update(boundary="budget", budget=0.25)
    n = state.walks.n_terms
    assert state.figures.budget == math.ceil(0.25 * n)
    assert state.figures.operating_point["mean_evaluated"] == math.ceil(0.25 * n)


def test_click_on_the_tradeoff_curve_picks_the_nearest_grid_delta(state):
    dc = state.figures.delta_curve
    k = 7
    state.select_point(float(dc.mean_evaluated[k]), float(dc.stop_error[k]))
    # Several grid points may coincide on the plot; any of them is a correct pick.
    same = (dc.mean_evaluated == dc.mean_evaluated[k]) & (dc.stop_error == dc.stop_error[k])
    assert state.delta in set(dc.delta[same])
    state.boundary = "budget"
    state.select_point(0.5 * state.walks.n_terms, 0.0)
    assert state.figures.budget == pytest.approx(0.5 * state.walks.n_terms, abs=1)


def test_curves_csv_holds_every_curve(state):
    df = pd.read_csv(state.curves_csv())
    assert set(df.method) == {"attentive", "budgeted", "constant (δ grid)"}
    assert df[df.method == "constant (δ grid)"].parameter.to_numpy() == pytest.approx(DELTA_GRID)


def test_theory_view_data_is_the_delta_curve_and_the_simulation(state):
    from attentive.app.cache import SIMULATION_N, simulation
    from attentive.simulation import default_deltas

    th = state.figures.theory
    sim = simulation(tuple(default_deltas()))
    got = th[th.source.str.startswith("Brownian")]
    np.testing.assert_array_equal(got.actual, sim.actual)
    assert sim.n == SIMULATION_N
    mine = th[th.source.str.startswith("this dataset")]
    np.testing.assert_array_equal(mine.actual, state.figures.delta_curve.stop_error)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("delta", 0.0),
        ("delta", 1.5),
        ("delta", float("nan")),
        ("theta", float("inf")),
        ("theta", 1e9),
        ("seed", -1),
        ("seed", 2.5),
        ("seed", float("nan")),
        ("dataset", "no-such-dataset"),
        ("boundary", "sideways"),
    ],
)
def test_bad_control_values_are_reported_and_the_previous_state_stays(state, name, value):
    before = (getattr(state, name), state.figures, state.n_errors)
    assert not state.set_controls(**{name: value})
    assert state.n_errors == before[2] + 1 and state.last_error
    assert getattr(state, name) == before[0]
    assert state.figures is before[1]


def test_failed_download_is_reported_and_the_dataset_goes_back(state):
    figures = state.figures
    state.dataset = "gisette"
    assert "gisette" in state.last_error or "download" in state.last_error
    assert state.dataset == "digits-2v5" and state.figures is figures


def test_malformed_upload_is_reported_and_changes_nothing(state):
    figures, objects = state.figures, list(state.param.dataset.objects)
    assert not state.upload_dataset(b"label,a,b\n1,2\nx,y,z,w\n", "broken.csv")
    assert "broken.csv" in state.last_error
    assert state.dataset == "digits-2v5" and state.figures is figures
    assert list(state.param.dataset.objects) == objects


def _csv(labels, rng) -> bytes:
    X = rng.normal(size=(len(labels), 3)) + np.asarray(labels, float)[:, None]
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=labels)
    return df.to_csv(index=False).encode()


def test_upload_with_many_labels_asks_for_the_positive_class(state):
    rng = np.random.default_rng(0)
    data = _csv(list(range(3)) * 40, rng)
    assert not state.upload_dataset(data, "three.csv")
    assert "not binary" in state.last_error and "positive" in state.last_error
    state.positive_class = "2"  # retries the pending file
    assert state.dataset == "file: three.csv"
    assert state.class_names == ("not 2", "2")
    assert state.figures.metrics["n_test"] == 30


def test_good_upload_becomes_a_dataset(state):
    data = _csv([0, 1] * 60, np.random.default_rng(1))
    assert state.upload_dataset(data, "mine.csv")
    assert state.dataset == "file: mine.csv" and state.last_error == ""
    assert state.walks.models.dataset.n_features == 3


def test_upload_over_the_limit_is_refused(state, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "0.001")
    assert not state.upload_dataset(b"0 1:1\n" * 400, "big.libsvm")
    assert "upload limit" in state.last_error


def test_pickled_model_is_refused_without_unpickling(state):
    model = state.walks.estimator.estimator_
    assert not state.upload_model(pickle.dumps(model), "model.pkl")
    assert "pickle" in state.last_error
    assert state.model_source == "train"


def test_model_with_other_features_or_classes_is_refused(state):
    from sklearn.svm import SVC

    from attentive.models import train_model

    other = train_model(load_dataset("breast-cancer"), kind="linear")
    assert not state.upload_model(sio.dumps(other), "cancer.skops")
    assert "features" in state.last_error
    rng = np.random.default_rng(0)
    multi = SVC().fit(rng.normal(size=(30, 64)), np.arange(30) % 3)
    assert not state.upload_model(sio.dumps(multi), "multi.skops")
    assert "classes" in state.last_error
    assert state.model_source == "train"


def test_uploaded_model_is_used_and_a_mismatching_dataset_is_refused(state):
    from attentive.models import train_model

    model = train_model(load_dataset("digits-2v5"), kind="linear-svc")
    assert state.upload_model(sio.dumps(model), "digits-linear.skops")
    assert state.model_source == "upload"
    assert state.walks.n_terms == 64  # LinearSVC: one term per pixel
    state.dataset = "breast-cancer"  # 30 features: the uploaded model cannot evaluate it
    assert "features" in state.last_error
    assert state.dataset == "digits-2v5"


def test_sessions_share_read_only_caches_but_not_state():
    a, b = DashboardState(), DashboardState()
    assert a.walks.S is b.walks.S  # one cached matrix, no copy
    assert not a.walks.S.flags.writeable
    with pytest.raises(ValueError):
        a.walks.S[0, 0] = 1.0
    a.delta = 0.001
    assert b.delta == 0.05 and a.figures is not b.figures
    a.param.dataset.objects = [*a.param.dataset.objects, "file: x.csv"]
    assert "file: x.csv" not in b.param.dataset.objects


def test_model_inputs_can_run_in_a_background_executor():
    jobs = []
    s = DashboardState()
    s.executor = lambda job, done, fail: jobs.append((job, done, fail))
    figures = s.figures
    s.seed = 5
    assert len(jobs) == 1 and s.figures is figures  # nothing applied until the job finishes
    s.seed = 6  # supersedes the first request
    job, done, _ = jobs[0]
    done(job())
    assert s.figures is figures  # stale result ignored
    job, done, _ = jobs[1]
    done(job())
    assert s.walks.key[-1] == 6 and s.figures is not figures


def test_curves_csv_is_text():
    s = DashboardState()
    assert isinstance(s.curves_csv(), io.StringIO)


def test_trajectory_sample_is_bounded(state):
    state.n_trajectories = 500
    x, _ = state.figures.trajectories["negative"]
    x2, _ = state.figures.trajectories["positive"]
    n_walks = int((x == 0).sum() + (x2 == 0).sum())  # every walk starts at t = 0
    assert n_walks == min(state.walks.y_test.size, MAX_TRAJECTORIES)


# ----------------------------------------------------------------------------- calibrated boundary


@pytest.fixture
def synthetic_state():
    """The synthetic problem: 1,500 training examples, so 450 calibrate (enough for δ = 1%)."""
    s = DashboardState(dataset="synthetic")
    assert s.last_error == ""
    return s


def _calibration_split(ds, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(
        ds.X_train, ds.y_train, test_size=0.3, stratify=ds.y_train, random_state=seed
    )


def test_calibrated_boundary_is_offered_and_refits_without_the_calibration_part(state):
    from sklearn.base import clone

    assert "calibrated" in state.param.boundary.objects
    full_model = state.walks.estimator.estimator_
    state.boundary = "calibrated"
    assert state.last_error == "" and state.side == "both"  # the app's choice for calibrated
    w, ds = state.walks, load_dataset("digits-2v5")
    X_fit, X_cal, y_fit, _ = _calibration_split(ds, 0)
    assert w.n_fit == len(y_fit) and w.calibration_S.shape == (X_cal.shape[0], w.n_terms)
    assert not w.calibration_S.flags.writeable
    # The model was trained again on the fit part only: same as fitting it here from scratch.
    model = w.estimator.estimator_
    expected = clone(full_model.estimator).fit(X_fit, y_fit)  # the frozen model, trained afresh
    np.testing.assert_allclose(
        model.decision_function(ds.X_test), expected.decision_function(ds.X_test), rtol=1e-9
    )
    assert model.n_support_.sum() != full_model.n_support_.sum() or not np.allclose(
        model.decision_function(ds.X_test), full_model.decision_function(ds.X_test)
    )
    # The held-out scores are that model's partial scores of the calibration examples.
    np.testing.assert_allclose(w.calibration_S, w.walk.partial_scores(X_cal), rtol=1e-12)
    state.boundary = "constant"  # back to the walk of the whole training part
    assert state.walks.estimator.estimator_ is full_model and state.walks.calibration_S is None


def test_calibration_table_matches_calibrate_scale_on_the_same_split(synthetic_state):
    from sklearn.base import clone

    from attentive.calibration import calibrate_scale, grid_outcomes
    from attentive.evaluation import apply_boundary

    s = synthetic_state
    s.param.update(boundary="calibrated", delta=0.02, alpha=0.1, theta=0.1, seed=3)
    assert s.last_error == ""
    f, w = s.figures, s.walks
    ds = load_dataset("synthetic")
    X_fit, X_cal, y_fit, _ = _calibration_split(ds, 3)
    # From scratch: the estimator on the fit part, then the core's scan on the held-out part.
    template = clone(w.estimator.estimator_)
    est = AttentiveClassifier(
        template, boundary="curved", side="both", threshold=0.1, random_state=3
    ).fit(X_fit, y_fit)
    S_cal = est.walk_.partial_scores(X_cal)
    report = calibrate_scale(
        grid_outcomes(S_cal, est.boundary_family()), delta=0.02, alpha=0.1, side="both"
    )
    table = f.calibration_table
    np.testing.assert_array_equal(table["z"], report.grid)
    np.testing.assert_array_equal(table["k (disagree)"], report.counts)
    np.testing.assert_allclose(table["U (bound)"], report.upper_bounds, rtol=1e-12)
    np.testing.assert_allclose(table["evaluated"], report.evaluated_fraction, rtol=1e-12)
    assert list(table["status"]) == list(report.status())
    assert f.calibration.chosen_scale == report.chosen_scale is not None
    assert table.loc[table["chosen"], "z"].tolist() == [report.chosen_scale]
    # k at the chosen scale, counted by applying that boundary to every calibration walk.
    ev = apply_boundary(S_cal, est.boundary_family().boundary(report.chosen_scale), est.theta_s_)
    k = int(np.sum(ev.positive != (S_cal[:, -1] >= est.theta_s_)))
    assert k == report.counts[report.chosen_index]
    # The operating point uses that boundary on the test walks.
    ev_test = apply_boundary(
        np.asarray(w.S), est.boundary_family().boundary(report.chosen_scale), est.theta_s_
    )
    assert f.operating_point["mean_evaluated"] == pytest.approx(ev_test.n_evaluated.mean())
    assert f.metrics["n_stopped"] == int(ev_test.stopped.sum())


def test_guarantee_is_stated_in_words_with_delta_and_alpha(synthetic_state):
    s = synthetic_state
    s.param.update(boundary="calibrated", delta=0.01, alpha=0.05)
    r = s.figures.calibration
    assert not r.fallback and r.m == 450
    assert r.guarantee.startswith("Disagreement ≤ δ with probability ≥ 1 − α")
    assert "at least 95%" in r.guarantee and "at most 1%" in r.guarantee
    assert "m = 450 of the 1,500 training examples" in s.figures.calibration_note
    point = json.loads(s.operating_point_json())
    assert point["alpha"] == 0.05 and point["calibration"]["guarantee"] == r.guarantee
    assert point["calibration"]["z"] == r.chosen_scale and point["calibration"]["n_fit"] == 1050


def test_small_calibration_set_falls_back_to_full_evaluation(state):
    state.param.update(boundary="calibrated", delta=0.01)
    f = state.figures
    r = f.calibration
    assert r.m == 76 < r.minimum_size == 299 and r.fallback
    assert "76 calibration examples; at least 299 are needed" in r.guarantee
    assert f.metrics["n_stopped"] == 0 and f.metrics["mean_evaluated"] == state.walks.n_terms
    assert f.metrics["disagreement"] == 0
    assert f.calibration_table["status"].iloc[0] == "failed"
    assert not f.calibration_table["chosen"].any()
    # The exported classifier falls back too.
    clf = state.classifier()
    assert clf.calibration_.fallback and clf.boundary_.kind == "full"


@pytest.mark.parametrize(("delta", "theta"), [(0.02, 0.1), (0.001, 0.0)])
def test_exported_calibrated_classifier_reproduces_the_dashboard(synthetic_state, delta, theta):
    s = synthetic_state
    s.param.update(boundary="calibrated", delta=delta, theta=theta, seed=5, alpha=0.1)
    f = s.figures
    blob = s.classifier_bytes()
    clf = sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))
    assert clf.boundary == "calibrated" and clf.side_ == "both"
    assert clf.calibration_.chosen_scale == f.calibration.chosen_scale
    np.testing.assert_array_equal(clf.calibration_.counts, f.calibration.counts)
    ev = clf.evaluate(load_dataset("synthetic").X_test)
    assert ev.n_evaluated.mean() == pytest.approx(f.operating_point["mean_evaluated"])
    assert int(ev.stopped.sum()) == f.metrics["n_stopped"]
    full = s.walks.S[:, -1] >= f.theta_s
    assert np.mean(ev.positive != full) == pytest.approx(f.metrics["disagreement"])
    y = s.walks.y_test.astype(bool)
    assert np.mean(ev.positive == y) == pytest.approx(f.metrics["accuracy_attentive"])


def test_calibrated_walk_builds_in_the_background_without_stale_figures():
    jobs = []
    s = DashboardState()
    s.executor = lambda job, done, fail: jobs.append((job, done, fail))
    figures = s.figures
    s.boundary = "calibrated"
    assert len(jobs) == 1 and s.figures is figures  # waits for the refit walk
    s.delta = 0.2  # a move while it builds: no error, applied when the walk arrives
    assert len(jobs) == 1 and s.last_error == ""
    job, done, _ = jobs[0]
    done(job())
    assert s.figures.calibration is not None and s.figures.calibration.delta == 0.2
    s.boundary = "budget"
    assert len(jobs) == 2  # the walk of the whole training part again
    s.boundary = "calibrated"  # the pending build is not wanted any more
    job, done, _ = jobs[1]
    done(job())
    assert s.walks.calibration_S is not None and s.figures.calibration is not None


def test_library_messages_are_worded_for_the_dashboard(state):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.svm import SVC

    from attentive.data import load_user_file
    from attentive.errors import DataError, UntrustedModelError
    from attentive.models import load_model

    data = _csv(list(range(3)) * 40, np.random.default_rng(0))
    with pytest.raises(DataError) as info:
        load_user_file(data, filename="three.csv")
    assert "(positive_class=...)" in str(info.value)  # the library's words stay
    assert not state.upload_dataset(data, "three.csv")
    assert "choose a positive class in the 'Positive class (uploads)' field" in state.last_error
    assert "positive_class=" not in state.last_error

    ds = load_dataset("digits-2v5")
    model = make_pipeline(FunctionTransformer(abs), SVC()).fit(ds.X_train, ds.y_train)
    blob = sio.dumps(model)
    with pytest.raises(UntrustedModelError) as info:
        load_model(blob)
    assert "Trusted beyond" in str(info.value)
    assert not state.upload_model(blob, "abs.skops")
    for name in sio.get_untrusted_types(data=blob):
        if "abs" in name:
            assert name in state.last_error
    assert "Trusted beyond" not in state.last_error and "sklearn.svm" not in state.last_error
    assert state.last_error.endswith("See docs/robustness.md for the types attentive trusts.")
