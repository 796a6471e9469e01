"""The dashboard's state object, driven without a browser.

Numbers are checked against independent computations: a classifier fitted from scratch on the
same split and evaluated with ``evaluate`` (the exported classifier's path), a brute-force count,
the snippet run in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import skops.io as sio
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from attentive import AttentiveClassifier
from attentive.app import exports, rules
from attentive.app.state import DashboardState
from attentive.data import load_dataset
from attentive.models import make_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


@pytest.fixture
def state():
    return DashboardState()


def fresh_classifier(state) -> AttentiveClassifier:
    """The dashboard's classifier rebuilt from scratch (split, model, fit) for comparison."""
    ds = load_dataset(state.dataset)
    X_fit, _, y_fit, _ = train_test_split(
        ds.X_train, ds.y_train, test_size=0.3, stratify=ds.y_train, random_state=0
    )
    gamma = float(state.gamma) if state.gamma not in ("scale", "auto") else state.gamma
    model = make_model(state.kernel, C=state.C, gamma=gamma).fit(X_fit, y_fit)
    return AttentiveClassifier(
        FrozenEstimator(model),
        side=state.side,
        threshold=state.theta,
        centering=state.centering,
        reference_walks="leave-one-out",
        random_state=state.seed,
        early_stopping=True,  # as the dashboard's: it shows the rule's walk
    ).fit(X_fit, y_fit)


def test_default_is_mnist_with_hundreds_of_terms_and_a_calibrated_guarantee(state):
    assert state.last_error == ""
    assert state.dataset == "mnist-t10k-2v5"
    assert state.walks.n_terms >= 300
    assert state.boundary == "calibrated" and state.delta == 0.01
    report = state.figures.calibration
    assert report is not None and not report.fallback  # enough held out for δ = 1 %
    assert state.figures.metrics["mean_evaluated_fraction"] < 0.6


@pytest.mark.parametrize(
    ("kind", "side", "delta", "theta"),
    [
        ("constant", "lower", 0.05, 0.0),
        ("curved", "both", 0.01, 0.3),
        ("regression", "upper", 0.2, -0.2),
        ("finite-population", "both", 0.003, 0.0),
    ],
)
def test_a_move_shows_what_a_classifier_fitted_from_scratch_evaluates(
    state, kind, side, delta, theta
):
    state.set_controls(boundary=kind, side=side, delta=delta, theta=theta)
    assert state.last_error == ""
    f = state.figures
    clf = fresh_classifier(state).with_rule(kind, delta=state.delta)
    X_test = load_dataset(state.dataset).X_test
    ev = clf.evaluate(X_test)
    full = clf.with_rule("full").evaluate(X_test).positive
    assert f.metrics["mean_evaluated"] == pytest.approx(ev.n_evaluated.mean())
    assert f.metrics["disagreement"] == pytest.approx(np.mean(ev.positive != full))
    assert f.metrics["n_stopped"] == int(ev.stopped.sum())
    # the evaluator timed after the move made the same decisions
    assert state.measured is not None and state.measured.agrees


def test_exported_classifier_makes_the_shown_decisions(state):
    state.set_controls(boundary="curved", side="both", delta=0.02, seed=7)
    blob = exports.classifier_bytes(state)
    clf = sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))
    ev = clf.evaluate(load_dataset(state.dataset).X_test)
    assert ev.n_evaluated.mean() == pytest.approx(state.figures.metrics["mean_evaluated"])


def test_cheapest_point_meets_the_target_and_the_snippet_reproduces_it(state, tmp_path):
    state.target = 0.02
    f = state.figures
    assert f.metrics["disagreement"] <= 0.02
    table = f.tradeoff.table
    ok = table[table["disagreement"] <= 0.02]
    assert f.metrics["mean_evaluated_fraction"] == pytest.approx(
        ok["mean_evaluated_fraction"].min()
    )
    path = tmp_path / "snippet.py"
    path.write_text(exports.snippet(state))
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    printed = dict(line.rsplit(" ", 1) for line in out.strip().splitlines())
    m = f.metrics
    assert float(printed["mean fraction of terms"]) == pytest.approx(
        round(m["mean_evaluated_fraction"], 4)
    )
    assert float(printed["disagreement"]) == pytest.approx(round(m["disagreement"], 4))
    assert float(printed["accuracy"]) == pytest.approx(round(m["accuracy_attentive"], 4))


def test_the_calibrated_default_walks_the_reference_without_own_terms_and_the_snippet_agrees(
    state, tmp_path
):
    """The dashboard's classifier uses leave-one-out reference walks (its default rule is the
    calibrated one), and the exported snippet builds it the same way: it prints the numbers shown."""
    assert state.walks.classifier.reference_walks_ == "leave-one-out"
    assert exports.operating_point(state)["reference_walks"] == "leave-one-out"
    code = exports.snippet(state)
    assert 'reference_walks="leave-one-out"' in code
    path = tmp_path / "snippet.py"
    path.write_text(code)
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    printed = dict(line.rsplit(" ", 1) for line in out.strip().splitlines())
    m = state.figures.metrics
    assert float(printed["mean fraction of terms"]) == pytest.approx(
        round(m["mean_evaluated_fraction"], 4)
    )
    assert float(printed["disagreement"]) == pytest.approx(round(m["disagreement"], 4))


def test_every_family_is_named_in_the_rule_control_and_its_help(state):
    assert [k for k in state.param.boundary.objects if k in rules.family_names()] == list(
        rules.family_names()
    )
    doc = type(state).param.boundary.doc
    for name in rules.family_names():
        assert name in doc


def test_tradeoff_has_every_family_the_budget_and_the_oracle(state):
    t = state.figures.tradeoff
    assert set(t.families["method"]) == set(rules.family_names())
    assert len(t.budgeted) > 10
    assert 0 < t.oracle_fraction < state.figures.metrics["mean_evaluated_fraction"]


@pytest.mark.parametrize(
    ("name", "value"),
    [("seed", -5), ("seed", 99999999999), ("C", 0), ("C", -1), ("C", "abc"), ("delta", 2)],
)
def test_bad_control_values_are_reported_and_the_previous_state_stays(state, name, value):
    before = getattr(state, name)
    assert not state.set_controls(**{name: value})
    assert getattr(state, name) == before
    assert state.n_errors == 1 and "parameter" not in state.last_error.lower()


def test_operating_point_json_is_complete_and_rounded(state):
    state.set_controls(boundary="constant", side="lower", delta=0.05)
    point = json.loads(exports.operating_point_json(state))
    for key in ("kernel", "C", "gamma", "attentive_version", "exported_at", "data_hash"):
        assert point[key] is not None
    assert set(point["tau"]) == {"tau_lower"}
    assert len(repr(point["metrics"]["mean_evaluated"])) <= 12


def test_csv_names_side_and_theta(state):
    frame = exports.operating_points_frame(state)
    assert {"family", "z", "side", "theta", "stop_error", "disagreement"} <= set(frame)


def test_bridge_envelope_is_the_bridge_of_spec_2(state):
    state.set_controls(boundary="constant", side="lower", delta=0.05)
    b = state.figures.boundary
    clf = rules.rule_classifier(state.walks, state.rule)
    n, t = state.walks.n_terms, b["t"].to_numpy()
    from scipy.stats import norm

    half = norm.ppf(1 - state.delta) * np.sqrt(clf.variance_ * t * (n - t)) / n
    np.testing.assert_allclose(b["bridge_hi"] - b["bridge"], half, rtol=1e-9)
    np.testing.assert_allclose(b["bridge"], t * state.figures.theta_s / n, rtol=1e-9)


def test_sessions_share_read_only_caches_but_not_state():
    a, b = DashboardState(), DashboardState()
    assert a.walks is b.walks
    assert not a.walks.S.flags.writeable
    a.set_controls(delta=0.2)
    assert b.delta == 0.01


def test_served_first_page_computes_the_numbers_and_holds_the_tradeoff_and_the_timing():
    """Served, the first page's numbers come without every rule's tradeoff (the slow part) and
    without the evaluator's timing; both follow when the session starts its background jobs,
    and the tradeoff is the one an inline state computes."""
    from attentive.app.state import run_inline

    rules.tradeoff.clear()
    state = DashboardState(hold_background=True)
    f = state.figures
    assert f is not None and f.metrics["mean_evaluated_fraction"] < 0.6
    assert f.tradeoff is None and state.measured is None
    assert state.select_point(0.5, 0.01) is None and state.figures is f  # nothing to snap to
    csv = exports.operating_points_csv(state).getvalue()  # an export computes it if it must
    assert "heteroscedastic" in csv
    state.start_background(run_inline, run_inline)
    assert state.figures.tradeoff is rules.tradeoff(state.walks, state.side, state.theta)
    assert state.figures.metrics == f.metrics
    assert state.measured is not None
    # A move to a θ whose tradeoff is not cached: numbers at once, the curves after the job.
    jobs = []
    state.tradeoff_executor = lambda job, done, fail: jobs.append((job, done))
    state.set_controls(theta=0.25)
    assert state.figures.tradeoff is None and len(jobs) == 1
    state.set_controls(theta=0.3)  # the first job is now stale: it is dropped or ignored
    job, done = jobs[0]
    assert job.stale()
    done(job())
    assert state.figures.tradeoff is None
    job, done = jobs[1]
    assert not job.stale()
    done(job())
    assert state.figures.tradeoff.theta_s == pytest.approx(state.figures.theta_s)


def test_timing_runs_rule_and_full_evaluation_in_turn_and_keeps_the_fastest():
    """A stall during one run (the server's other threads, the machine) must not show as a
    speed-up: the sides alternate within each round and each keeps its fastest run."""
    import time as _time

    from attentive.app.rules import interleaved_times

    calls = []

    def rule():
        calls.append("rule")
        _time.sleep(0.05 if len(calls) == 1 else 0.002)  # stalled the first time only
        return "r"

    def full():
        calls.append("full")
        _time.sleep(0.004)
        return "f"

    (t_rule, t_full), out = interleaved_times([rule, full], rounds=3)
    assert calls == ["rule", "full"] * 3
    assert out == ["r", "f"]
    assert t_rule < 0.02 and t_full >= 0.004
    assert t_full / t_rule > 1.0  # without the stall the rule is the faster side
