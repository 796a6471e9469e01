"""The dashboard's state object, driven without a browser.

Numbers are checked against independent computations: a classifier fitted from scratch on the
same split and evaluated with ``evaluate`` (the exported classifier's path), a brute-force count,
the snippet run in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator

from attentive import AttentiveClassifier, InvalidParameterError
from attentive.app import exports, models, rules
from attentive.app.state import DashboardState
from attentive.data import load_dataset
from attentive.estimator import calibration_split
from attentive.models import load_model, make_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class Timing:
    """A stand-in for ``rules.measure``: ``fn``'s timing, with no timing kept (``peek``: None),
    so that the state asks for one."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, walks, rule):
        return self.fn(walks, rule)

    def peek(self, walks, rule):
        return None


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


@pytest.fixture
def state():
    return DashboardState()


def fresh_classifier(state) -> AttentiveClassifier:
    """The dashboard's classifier rebuilt from scratch (split, model, fit) for comparison."""
    ds = load_dataset(state.dataset)
    # What AttentiveClassifier(boundary="calibrated", delta=0.01, alpha=0.05, random_state=0)
    # holds out: the dashboard holds out the same examples.
    X_fit, _, y_fit, _ = calibration_split(
        ds.X_train, ds.y_train, delta=0.01, alpha=0.05, random_state=0
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
    report = state.calibration()
    assert report is not None and not report.fallback  # enough held out for δ = 1 %
    assert state.numbers()["mean_evaluated_fraction"] < 0.6


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
    m = state.numbers()
    clf = fresh_classifier(state).with_rule(kind, delta=state.delta)
    X_test = load_dataset(state.dataset).X_test
    ev = clf.evaluate(X_test)
    full = clf.with_rule("full").evaluate(X_test).positive
    assert m["mean_evaluated"] == pytest.approx(ev.n_evaluated.mean())
    assert m["disagreement"] == pytest.approx(np.mean(ev.positive != full))
    assert m["n_stopped"] == int(ev.stopped.sum())
    # the evaluator timed after the move made the same decisions
    assert state.measured is not None and state.measured.agrees


def test_exported_classifier_makes_the_shown_decisions(state):
    state.set_controls(boundary="curved", side="both", delta=0.02, seed=7)
    blob = exports.classifier_bytes(state)
    clf = load_model(blob)  # as the snippet for an upload loads it
    ev = clf.evaluate(load_dataset(state.dataset).X_test)
    assert ev.n_evaluated.mean() == pytest.approx(state.numbers()["mean_evaluated"])


def test_cheapest_point_meets_the_target_and_the_snippet_reproduces_it(state, tmp_path):
    state.target = 0.02
    m = state.numbers()
    assert m["disagreement"] <= 0.02
    table = state.tradeoff.table
    ok = table[table["disagreement"] <= 0.02]
    assert m["mean_evaluated_fraction"] == pytest.approx(ok["mean_evaluated_fraction"].min())
    _snippet_prints_the_numbers(state, m, tmp_path)


def _snippet_prints_the_numbers(state, m: dict, folder) -> None:
    """The state's snippet, run in ``folder`` (beside what it reads there), prints the page's
    fraction of terms, disagreement and accuracy (``m``)."""
    (folder / "snippet.py").write_text(exports.snippet(state))
    out = subprocess.run(
        [sys.executable, "snippet.py"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    ).stdout
    printed = dict(line.rsplit(" ", 1) for line in out.strip().splitlines())
    assert float(printed["mean fraction of terms"]) == pytest.approx(
        round(m["mean_evaluated_fraction"], 4)
    )
    assert float(printed["disagreement"]) == pytest.approx(round(m["disagreement"], 4))
    assert float(printed["accuracy"]) == pytest.approx(round(m["accuracy_attentive"], 4))


def test_the_pickers_choose_only_rules_the_delta_slider_can_set():
    """The table holds every scale of the grid (z from 6 to −6), but a target or a time budget
    moves the rule only to a scale whose δ' = Φ(−z) the slider can show (0.01 % to 50 %): a
    pick at z = −2.1 once said "within δ = 98.2 %" beside a slider at 0.5."""
    lo, hi = rules.DELTA_RANGE
    state = DashboardState(side="upper")
    table = state.tradeoff.table
    # Φ(−z) at the slider's end, z = Φ⁻¹(1 − 10⁻⁴), is 10⁻⁴ less a rounding (9.99999999999887e-05).
    reachable = table[[lo * (1 - 1e-9) <= rules.nominal_delta(z) <= hi for z in table["z"]]]

    def cheapest(rows, target):  # least work at disagreement ≤ target; ties: the larger z
        ok = rows[rows["disagreement"] <= target]
        return ok.sort_values(["work_fraction", "z"], ascending=[True, False]).iloc[0]

    # A target whose cheapest row in the whole table is beyond the slider.
    target = next(t for t in np.unique(table["disagreement"]) if cheapest(table, t)["z"] < 0)
    state.target = float(target)
    assert state.n_errors == 0, state.last_error
    best = cheapest(reachable, target)
    assert (state.boundary, state.z) == (best["family"], float(best["z"]))
    assert 0 <= state.z and state.delta == rules.delta_of(state.z)

    # A time budget (times standing in: the work fraction), brute force over the reachable rows.
    def lowest(rows, budget):
        ok = rows[rows["work_fraction"] <= budget]
        return ok.sort_values(
            ["disagreement", "work_fraction", "z"], ascending=[True, True, False]
        ).iloc[0]

    # (the rows beyond the slider made the best of the table: the picker must pass them over)
    beyond = ~table.index.isin(reachable.index)
    timed = table.assign(us_per_example=table["work_fraction"])
    timed.loc[beyond, "disagreement"] = 0.0
    budget = next(b for b in np.unique(reachable["work_fraction"]) if lowest(timed, b)["z"] < 0)
    row = rules.lowest_within_time(timed, float(budget))
    assert (row["family"], row["z"]) == (
        lowest(reachable, budget)["family"],
        lowest(reachable, budget)["z"],
    )
    assert lo <= rules.nominal_delta(row["z"]) <= hi
    # Where only rules beyond the slider fit the budget: refused, saying why.
    two = pd.DataFrame(
        {"family": ["curved"] * 2, "z": [-1.0, 1.0], "disagreement": [0.4, 0.01]}
    ).assign(us_per_example=[1.0, 5.0])
    with pytest.raises(
        InvalidParameterError, match=r"no rule at δ from 0\.0001 to 0\.5 runs within 2"
    ):
        rules.lowest_within_time(two, 2.0)
    assert rules.lowest_within_time(two, 6.0)["z"] == 1.0


def _card_within_any_budget(state, monkeypatch) -> None:
    """The card's timing (rules.measure) at no time at all: where the table's times stand in
    as the work fractions, a real timing is over every budget (and said: see below)."""
    import dataclasses

    real = rules.measure(state.walks, state.rule)
    quick = dataclasses.replace(real, seconds=0.0)
    monkeypatch.setattr(rules, "measure", Timing(lambda walks, rule: quick))


def test_the_picker_field_just_set_decides_and_clears_the_other(state, monkeypatch):
    """A time budget entered while a target is set picks by the time budget and clears the
    target (it was ignored: the target always won, and the budget field emptied itself); the
    target entered after it picks by the target again; Enter on a field re-applies that one."""
    timed = state.tradeoff.table.assign(us_per_example=state.tradeoff.table["work_fraction"])
    monkeypatch.setattr(rules, "timed_table", lambda trade, times: timed)  # times: the work
    _card_within_any_budget(state, monkeypatch)
    state.target = 0.3
    by_target = (state.boundary, state.z)
    budget = float(rules.on_slider(timed)["work_fraction"].quantile(0.5))
    state.time_budget = budget
    assert state.n_errors == 0, state.last_error
    assert state.target is None and state.time_budget == budget
    row = rules.lowest_within_time(timed, budget)
    assert (state.boundary, state.z) == (row["family"], float(row["z"])) != by_target
    state.target = 0.3
    assert state.time_budget is None and (state.boundary, state.z) == by_target
    state.set_controls(delta=0.02)  # the rule moves away: the field clears
    assert state.target is None
    state.time_budget = budget
    state.z = 2.0  # moved by hand
    assert state.time_budget is None


def test_a_time_budget_entered_while_the_rules_are_timed_waits_for_them_and_says_so(
    monkeypatch,
):
    """A user's trial: a budget entered while the rules were being timed (10–15 s) showed in
    its field while nothing moved, then applied without a word (timed on the session's thread).
    It now says it waits, and applies when the background brings the times."""
    jobs = []
    state = DashboardState(hold_background=True)
    state.background = lambda job, done, fail: jobs.append((job, done, fail))
    key = (state.walks, state.side, state.theta, state.sketched)
    table = rules.tradeoff(*key).table
    timed = table.assign(us_per_example=table["work_fraction"])
    monkeypatch.setattr(rules, "timed_table", lambda trade, times: timed)  # times: the work
    _card_within_any_budget(state, monkeypatch)
    rules.rule_times.clear()  # this walk's times not known yet, nor on the page (as while the
    state.times = None  # background times them; a session before may have left them cached)
    before, errors = (state.boundary, state.z), state.n_errors
    budget = float(rules.on_slider(timed)["work_fraction"].quantile(0.5))
    state.time_budget = budget
    assert (state.boundary, state.z) == before  # (nothing timed on the session's thread)
    assert state.n_errors == errors + 1 and state.error_level == "info"
    assert "Timing the rules first" in state.last_error and f"{budget:g} µs" in state.last_error
    state._tables_changed()  # the background's work for this walk, run now
    while jobs:
        job, done, _fail = jobs.pop(0)
        done(job())
    assert rules.rule_times.peek(*key) is not None
    row = rules.lowest_within_time(timed, budget)
    assert (state.boundary, state.z) == (row["family"], float(row["z"]))
    assert state.time_budget == budget and state.n_errors == errors + 1
    # (a review) the times on the page serve when the shared cache has let them go: no wait
    state.time_budget = None
    state.set_controls(boundary="curved")
    rules.rule_times.clear()
    assert state.times is not None
    state.time_budget = budget
    assert (state.boundary, state.z) == (row["family"], float(row["z"]))
    assert not state._budget_waiting


def test_a_rule_chosen_while_a_time_budget_waits_is_kept(monkeypatch):
    """A review: a budget waiting for the times overrode the rule the user chose meanwhile."""
    jobs = []
    state = DashboardState(hold_background=True)
    state.background = lambda job, done, fail: jobs.append((job, done, fail))
    _card_within_any_budget(state, monkeypatch)
    rules.rule_times.clear()
    state.times = None  # (as while the background times them)
    state.time_budget = 0.5
    assert state._budget_waiting
    state.set_controls(boundary="budget", budget=0.3)  # the user's rule, meanwhile
    assert state.time_budget is None
    state._tables_changed()
    while jobs:
        job, done, _fail = jobs.pop(0)
        done(job())
    assert state.boundary == "budget" and state.budget == 0.3


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
    m = state.numbers()
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
    t = state.tradeoff
    assert set(t.families["method"]) == set(rules.family_names())
    assert len(t.budgeted) > 10
    assert 0 < t.oracle_fraction < state.numbers()["mean_evaluated_fraction"]


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
    # An interval's ends too (they were written with all their digits).
    interval = point["metrics"]["disagreement_interval"]
    assert len(interval) == 2 and all(len(repr(v)) <= 12 for v in interval), interval
    assert "picked_by" not in point
    # A rule a target picked says so; moved away from, it no longer does.
    state.target = 0.02
    assert json.loads(exports.operating_point_json(state))["picked_by"] == {"target": 0.02}
    state.set_controls(delta=0.05)
    assert "picked_by" not in json.loads(exports.operating_point_json(state))


def test_csv_names_side_and_theta(state):
    frame = exports.operating_points_frame(state)
    assert {"family", "z", "side", "theta", "stop_error", "disagreement"} <= set(frame)


def test_bridge_envelope_is_the_bridge_of_spec_2(state):
    state.set_controls(boundary="constant", side="lower", delta=0.05)
    f = state.walk_figure()
    b = f.boundary
    clf = rules.rule_classifier(state.walks, state.rule)
    n, t = state.walks.n_terms, b["t"].to_numpy()
    from scipy.stats import norm

    half = norm.ppf(1 - state.delta) * np.sqrt(clf.variance_ * t * (n - t)) / n
    np.testing.assert_allclose(b["bridge"] - b["bridge_lo"], half, rtol=1e-9)
    np.testing.assert_allclose(b["bridge"], t * f.theta_s / n, rtol=1e-9)
    # The upper half with the upper side's V (the negatives': SPEC §2), which differs here.
    upper = norm.ppf(1 - state.delta) * np.sqrt(clf.upper_variance_ * t * (n - t)) / n
    np.testing.assert_allclose(b["bridge_hi"] - b["bridge"], upper, rtol=1e-9)
    assert abs(clf.upper_variance_ / clf.variance_ - 1) > 0.01
    # The calibrated rule: its band is drawn at the scale the rule runs at, the report's
    # chosen z, not the slider's δ (1 % here: z = 2.33).
    state.set_controls(boundary="calibrated", side="both", delta=0.01)
    clf = rules.rule_classifier(state.walks, state.rule)
    z = clf.calibration_.chosen_scale
    assert not clf.calibration_.fallback and abs(z - norm.ppf(1 - 0.01)) > 0.5
    b = state.walk_figure().boundary
    t = b["t"].to_numpy()
    half = z * np.sqrt(clf.variance_ * t * (n - t)) / n
    np.testing.assert_allclose(b["bridge"] - b["bridge_lo"], half, rtol=1e-9)


def test_sessions_share_read_only_caches_but_not_state():
    a, b = DashboardState(), DashboardState()
    assert a.walks is b.walks
    assert not a.walks.S.flags.writeable
    a.set_controls(delta=0.2)
    assert b.delta == 0.01


def test_served_first_page_computes_the_numbers_and_holds_the_tables_and_the_timing():
    """Served, the first page's numbers come without every rule's tradeoff and times (the slow
    part) and without the evaluator's timing; they follow, in that order, when the session
    starts its background work, and equal what an inline state computes. A table whose walk,
    side or θ has moved on by the time it arrives is dropped."""
    from attentive.app.state import run_inline

    rules.tradeoff.clear()
    rules.rule_times.clear()
    rules.measure.clear()
    state = DashboardState(hold_background=True)
    m = state.numbers()
    assert m is not None and m["mean_evaluated_fraction"] < 0.6
    assert state.tradeoff is None and state.times is None and state.measured is None
    assert state.select_point(0.5, 0.01) is None and state.boundary == "calibrated"
    csv = exports.operating_points_csv(state).getvalue()  # an export computes it if it must
    assert "heteroscedastic" in csv and "us_per_example" in csv
    rules.tradeoff.clear()
    rules.rule_times.clear()
    jobs = []
    state.start_background(lambda job, done, fail: jobs.append((job, done)))
    assert len(jobs) == 1  # the tables first; the timing waits for them
    job, done = jobs.pop()
    done(job())
    assert state.tradeoff is rules.tradeoff(state.walks, state.side, state.theta)
    state.background = run_inline
    assert state.times is None and len(jobs) == 1  # the times, then
    job, done = jobs.pop()
    done(job())
    assert state.times is rules.rule_times(state.walks, state.side, state.theta)
    assert state.measured is not None and state.numbers() == m
    # A move to a θ whose tables are not cached: numbers at once, the tables after the job.
    state.background = lambda job, done, fail: jobs.append((job, done))
    state.set_controls(theta=0.25)
    assert state.tradeoff is None and len(jobs) == 1
    state.set_controls(theta=0.3)
    job, done = jobs[0]
    done(job())  # the θ = 0.25 tradeoff arrives late: not shown
    assert state.tradeoff is None
    job, done = jobs[-1]
    done(job())
    assert state.tradeoff.theta_s == pytest.approx(state.walk_figure().theta_s)


def test_the_plots_held_back_from_the_first_page_arrive_in_one_change_of_its_document(
    monkeypatch,
):
    """Served, the first page carries the walks plot; the other three plots and the Brownian
    bridge tab are put in once the browser has loaded it (Panel's onload, after the background
    work is started), all at once: Bokeh walks the page's ~1,000 models once for them, not once
    for each (a page load's server time, measured). A view that cannot be drawn is told and the
    others still come; where no page is to load (a script's document), nothing is held back."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.document.models import DocumentModelManager
    from panel.io.state import set_curdoc

    from attentive.app.layout import build_dashboard

    def titles(doc) -> set[str]:
        return {m.title.text for m in doc.models if getattr(getattr(m, "title", None), "text", "")}

    def spinning(template) -> list:
        return [c for part in template.main for c in part.select(pn.Column) if c.loading]

    walks = []
    recompute = DocumentModelManager.recompute

    def counted(self):
        walks.append(len(self._models))
        return recompute(self)

    def served_page(doc, queued):
        """A page whose browser has not loaded it yet: Panel queues the onload callbacks."""
        with monkeypatch.context() as m:
            m.setattr(pn.state, "onload", lambda callback, threaded=False: queued.append(callback))
            dash = build_dashboard(served=True)
            template = dash.template()
            template.server_doc(doc)
        return dash, template

    doc, queued = Document(), []
    try:
        with set_curdoc(doc):
            _, template = served_page(doc, queued)
            assert any(t.startswith("Walks") for t in titles(doc))
            assert not any(t.startswith(("Tradeoff", "Precision", "Theory")) for t in titles(doc))
            held = spinning(template)
            assert len(held) == 4 and not any(h.objects for h in held)
            assert [cb.__name__ for cb in queued] == ["_start_background", "_fill_deferred"]
            with monkeypatch.context() as m:
                m.setattr(DocumentModelManager, "recompute", counted)
                queued[-1]()  # the page has loaded (the tables' threads are not started here)
        assert len(walks) == 1
        assert not spinning(template) and all(len(h.objects) == 1 for h in held)
        for start in ("Tradeoff", "Precision", "Theory", "Simulated walks", "(a) ", "(b) "):
            assert any(t.startswith(start) for t in titles(doc)), (start, sorted(titles(doc)))
        # A view that cannot be drawn is told, in its place and as a notification.
        broken_doc, queued = Document(), []
        with set_curdoc(broken_doc):
            broken, template = served_page(broken_doc, queued)
            held = spinning(template)
            first, _ = broken._pending[0]
            broken._pending[0] = (first, lambda: 1 / 0)
            queued[-1]()
        assert isinstance(first.objects[0], pn.pane.Alert) and not spinning(template)
        assert "ZeroDivisionError" in broken.state.last_error
        assert [isinstance(h.objects[0], pn.pane.Alert) for h in held].count(True) == 1
        # Built where no browser is to load a page: every view at once.
        plain_doc = Document()
        with set_curdoc(plain_doc):
            template = build_dashboard(served=True).template()
            template.server_doc(plain_doc)
        assert not spinning(template) and any(t.startswith("Theory") for t in titles(plain_doc))
    finally:
        pn.state.clear_caches()


def test_the_calibration_split_is_the_estimators():
    """The dashboard holds out the examples AttentiveClassifier(boundary="calibrated") holds
    out at δ = 1 %, α = 5 % (473 of MNIST 2 vs 5's 1,251: 30 % raised so that one
    disagreement can pass), not a fixed 30 %."""
    state = DashboardState()
    ds = load_dataset(state.dataset)
    p = state.walks.problem
    clf = AttentiveClassifier(
        make_model("linear-svc"), boundary="calibrated", delta=0.01, alpha=0.05, random_state=0
    ).fit(ds.X_train, ds.y_train)
    assert clf.calibration_.m == len(p.y_cal) > round(0.3 * len(ds.y_train))
    held = models.split(ds.X_train, ds.y_train)[1]
    np.testing.assert_array_equal(held, p.X_cal)
    fit_part = calibration_split(ds.X_train, ds.y_train, delta=0.01, alpha=0.05, random_state=0)
    np.testing.assert_array_equal(fit_part[0], p.X_fit)


def test_timing_runs_rule_and_full_evaluation_in_turn_and_keeps_every_round(monkeypatch):
    """A stall during one run (the server's other threads, the machine) must not show as a
    speed-up: the sides alternate within each round and each keeps its fastest run. The clock
    is a fake that each function advances by its own duration (real sleeps overshoot on a
    loaded machine)."""
    from attentive.app import rules as app_rules

    now = [0.0]
    monkeypatch.setattr(app_rules.time, "perf_counter", lambda: now[0])
    calls = []

    def rule():
        calls.append("rule")
        now[0] += 0.25 if len(calls) == 1 else 2.0**-10  # stalled the first time only
        return "r"

    def full():
        calls.append("full")
        now[0] += 2.0**-5  # binary fractions: the fake clock's sums are exact
        return "f"

    (t_rule, t_full), out = app_rules.interleaved_times([rule, full], rounds=5)
    assert calls == ["rule", "full"] * 5
    assert out == ["r", "f"]
    assert np.median(t_rule) < 2.0**-5 <= min(t_full)
    # The median ratio ignores the stalled round; its spread shows it.
    ratios = [f / r for f, r in zip(t_full, t_rule, strict=True)]
    assert np.median(ratios) > 1.0 and min(ratios) < 0.2


def test_a_timing_taken_while_something_else_ran_is_taken_again_and_the_steadiest_kept(
    monkeypatch,
):
    """The wall-clock card's timing (rules.measure) is kept for every later visit: rounds that
    spread wide (a busy machine) are taken again, up to TIMING_ATTEMPTS, and the attempt with
    the narrowest spread is kept; a steady first attempt is kept at once."""
    from attentive.app import rules as app_rules

    now = [0.0]
    monkeypatch.setattr(app_rules.time, "perf_counter", lambda: now[0])
    # Per attempt, the rule's durations round by round (full evaluation takes 2^-5 every time).
    attempts = iter(
        [
            [2.0**-3, 2.0**-6, 2.0**-3, 2.0**-7, 2.0**-3],  # busy: ratios 0.25 to 4
            [2.0**-6, 2.0**-6, 2.0**-5, 2.0**-6, 2.0**-6],  # steadier: 1 to 2
            [2.0**-6] * 5,  # never reached
        ]
    )
    durations: list[float] = []

    def rule():
        if not durations:
            durations.extend(next(attempts))
        now[0] += durations.pop(0)
        return "r"

    def full():
        now[0] += 2.0**-5
        return "f"

    (t_rule, t_full), out = app_rules.steady_times([rule, full], rounds=5, attempts=3)
    assert out == ["r", "f"]
    assert t_rule == [2.0**-6, 2.0**-6, 2.0**-5, 2.0**-6, 2.0**-6]
    assert t_full == [2.0**-5] * 5  # the same attempt's
    assert next(attempts) == [2.0**-6] * 5  # steady at the second attempt: no third
    # Busy every time: the narrowest of the attempts.
    attempts = iter(
        [
            [2.0**-3, 2.0**-8, 2.0**-3, 2.0**-8, 2.0**-3],  # ratios 0.25 to 8
            [2.0**-3, 2.0**-7, 2.0**-3, 2.0**-7, 2.0**-3],  # 0.25 to 4
            [2.0**-2, 2.0**-8, 2.0**-2, 2.0**-8, 2.0**-2],  # 0.125 to 8
        ]
    )
    (t_rule, _), _ = app_rules.steady_times([rule, full], rounds=5, attempts=3)
    assert t_rule == [2.0**-3, 2.0**-7, 2.0**-3, 2.0**-7, 2.0**-3]


def test_an_unsteady_timing_gives_no_verdict_and_is_taken_again_on_the_next_visit(
    state, monkeypatch
):
    """rules.measure keeps a steady timing for every later visit of the rule; one whose rounds
    stayed more than STEADY_SPREAD apart over every attempt is returned (the card says the
    machine was busy) but not kept, so the next visit times the rule again."""
    from attentive.app import rules as app_rules

    rounds: list[list[float]] = []  # the rule's durations per call; full evaluation takes 1

    def fake_steady_times(fns, rounds_=None, attempts=None):
        out = [fn() for fn in fns]
        rule_times = rounds.pop(0)
        return (rule_times, [1.0] * len(rule_times)), out

    monkeypatch.setattr(app_rules, "steady_times", fake_steady_times)
    # (Full evaluation's fake second a round is not its time in the table: the busy check is
    # the next test's.)
    monkeypatch.setattr(app_rules, "_busy", lambda *args: None)
    app_rules.measure.clear()
    try:
        busy = [1.0, 0.1, 5.0, 1.2, 0.9]  # ratios 0.2 to 10: 50× apart
        rounds.extend([busy, [0.5, 0.5, 0.6, 0.5, 0.5], [9.9] * 5])
        first = app_rules.measure(state.walks, state.rule)
        assert not first.steady and first.spread == pytest.approx(50.0)
        again = app_rules.measure(state.walks, state.rule)  # not kept: timed again
        assert again.steady and again.ratios == (2.0, 2.0, 1.0 / 0.6, 2.0, 2.0)
        assert again.ratio_spread == (pytest.approx(1.0 / 0.6), 2.0)
        kept = app_rules.measure(state.walks, state.rule)  # the steady one is kept
        assert kept is again and rounds == [[9.9] * 5]
        assert app_rules.STEADY_SPREAD < 50.0 and again.spread <= app_rules.STEADY_SPREAD
    finally:
        app_rules.measure.clear()


def test_a_timing_of_a_busy_machine_gives_no_verdict_though_its_rounds_agree(state, monkeypatch):
    """A user's trial on a machine busy with other work: the card read "0.39× … 202.93 µs per
    example", steady (every round slowed alike, so the ratios agreed), kept for later visits and
    exported, for a rule that times 5.4 µs alone. Where full evaluation's median round is over
    IMPLAUSIBLE times its time in the operating points' table, the timing is not steady: no
    verdict, not kept, and the card says why; at its usual time it is steady."""
    from attentive.app import rules as app_rules
    from attentive.app.numbers import BUSY, HeadlineNumbers

    times = app_rules.rule_times(state.walks, state.side, state.theta)
    table_full = times.attrs["full_us_per_example"] * 1e-6 * state.walks.y_test.size
    slowdown = [40.0]

    def fake_steady_times(fns, rounds_=None, attempts=None):
        out = [fn() for fn in fns]
        full = [slowdown[0] * table_full] * 5
        return ([f / 1.5 for f in full], full), out

    monkeypatch.setattr(app_rules, "steady_times", fake_steady_times)
    app_rules.measure.clear()
    try:
        busy = app_rules.measure(state.walks, state.rule)
        assert not busy.steady and busy.busy == pytest.approx(40.0)
        assert busy.spread == pytest.approx(1.0)  # the rounds agree
        page = HeadlineNumbers(state=state)._html(state.numbers(), busy)
        assert BUSY.format(ratio="40×") in page
        slowdown[0] = 1.2
        again = app_rules.measure(state.walks, state.rule)  # not kept: timed again
        assert again is not busy and again.steady and again.busy is None
        assert app_rules.measure(state.walks, state.rule) is again  # kept
    finally:
        app_rules.measure.clear()


def test_an_unsteady_timing_is_taken_again_before_the_card_shows_it(state, monkeypatch):
    """The first timing of a page is often taken while the server draws it: an unsteady one is
    taken again (MEASURE_RETRIES times) before the card shows anything but "timing…"; a steady
    one ends the retries, and after the last retry the card shows what it has."""
    import dataclasses

    from attentive.app import background
    from attentive.app import rules as app_rules

    real = app_rules.measure(state.walks, state.rule)
    monkeypatch.setattr(background, "MEASURE_RETRY_PAUSE", 0.0)
    retries = background.MEASURE_RETRIES
    assert retries >= 1
    for steadiness, expected_calls in (
        ([False] * retries + [True], 1 + retries),  # steady at the last retry
        ([False, True, False], 2),
        ([True], 1),
        ([False] * 5, 1 + retries),  # unsteady throughout: the last one is shown
    ):
        given = [dataclasses.replace(real, steady=steady, n_examples=i + 1) for i, steady in
                 enumerate(steadiness)]  # fmt: skip
        calls = []

        def fake(walks, rule, given=given, calls=calls):
            calls.append(rule)
            return given[len(calls) - 1]

        monkeypatch.setattr(app_rules, "measure", Timing(fake))
        state._measure()  # inline: the retries run at once
        assert len(calls) == expected_calls and set(calls) == {state.rule}
        assert state.measured is given[expected_calls - 1]


def test_a_rule_picked_by_time_budget_that_the_card_times_over_it_is_said(state, monkeypatch):
    """A user's trial: a 6 µs budget picked a row shown at 5.9 µs while the card (and the
    exported point) measured 14.4 µs, without a word. When the card's timing of the rule a
    budget picked is over the budget, a warning says so and why the two differ; within it,
    nothing is said."""
    import dataclasses

    from attentive.app import rules as app_rules

    timed = state.tradeoff.table.assign(us_per_example=state.tradeoff.table["work_fraction"])
    monkeypatch.setattr(rules, "timed_table", lambda trade, times: timed)  # times: the work
    budget = float(rules.on_slider(timed)["work_fraction"].quantile(0.5))
    real = app_rules.measure(state.walks, state.rule)
    for us, warned in ((budget * 2, True), (budget / 2, False)):
        given = dataclasses.replace(real, seconds=us * 1e-6 * real.n_examples)
        monkeypatch.setattr(app_rules, "measure", Timing(lambda walks, rule, given=given: given))
        fresh = DashboardState()
        errors = fresh.n_errors
        fresh.time_budget = budget  # the pick moves the rule, and the card times it (inline)
        assert fresh.measured is given and fresh.time_budget == budget
        assert fresh.n_errors == errors + warned, fresh.last_error
        if warned:
            assert fresh.error_level == "warning"
            assert f"picked for {budget:g} µs per example measures {us:.3g} µs" in fresh.last_error


@pytest.mark.parametrize("move", [{"delta": 0.02}, {"theta": 0.05}, {"side": "lower"}])
@pytest.mark.parametrize("served", [False, True])
def test_a_move_from_a_rule_a_time_budget_picked_is_not_told_as_over_the_budget(
    state, monkeypatch, move, served
):
    """The over-budget warning is for the rule the budget picked. A move away clears the
    budget, but the new rule's timing can come first (inline, or a timing kept from an earlier
    visit, shown at once): it is the user's rule, and nothing is said of the budget."""
    timed = state.tradeoff.table.assign(us_per_example=state.tradeoff.table["work_fraction"])
    monkeypatch.setattr(rules, "timed_table", lambda trade, times: timed)  # times: the work
    monkeypatch.setattr(rules, "STEADY_SPREAD", float("inf"))  # (every timing kept)
    budget = float(rules.on_slider(timed)["work_fraction"].quantile(0.5))  # (< 1 µs: below all)
    errors = state.n_errors
    state.time_budget = budget  # picked; the card's timing is over it: said
    assert state.still_picked() and state.n_errors == errors + 1, state.last_error
    assert f"picked for {budget:g} µs per example measures" in state.last_error
    away = DashboardState(**{**{k: getattr(state, k) for k in ("boundary", "z", "side", "theta")}, **move})  # fmt: skip
    assert away.rule != state.rule and away.measured is not None  # (kept: shown at once)
    if served:
        jobs = []
        state.background = lambda job, done, fail: jobs.append((job, done))
    errors = state.n_errors
    state.set_controls(**move)
    if served:
        for job, done in jobs:
            done(job())
    assert state.rule == away.rule and state.time_budget is None and not state.still_picked()
    assert state.measured is not None and state.measured.us_per_example > budget
    assert state.n_errors == errors, state.last_error


def test_the_exported_point_names_the_positive_class(state):
    point = exports.operating_point(state)
    ds = load_dataset(state.dataset)
    assert point["positive_class"] == ds.positive_meaning == "digit 5"
    clf = exports.classifier(state)
    assert point["classes"] == {
        "negative": clf.classes_[0].item(),
        "positive": clf.classes_[1].item(),
    }
    assert point["calibration"]["guaranteed"] is True
    assert point["calibration"]["notes"] == list(clf.calibration_.notes) == []  # (balanced)
    assert (
        point["class_names"]
        == {"negative": "2", "positive": "5"}
        == dict(zip(("negative", "positive"), ds.class_names, strict=True))
    )


def test_the_exported_point_names_an_uploaded_files_labels():
    """A user's trial: labels ham / spam exported as classes 0 / 1 with nothing to map them
    back; the point now gives the data's own names beside the model's classes."""
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(200, 3)), columns=list("abc"))
    frame["label"] = np.where(frame["a"] + frame["b"] > 0, "spam", "ham")
    state = DashboardState()
    assert state.upload_dataset(frame.to_csv(index=False).encode(), "mail.csv")
    point = exports.operating_point(state)
    assert point["classes"] == {"negative": 0, "positive": 1}
    assert point["class_names"] == {"negative": "ham", "positive": "spam"}


@pytest.mark.parametrize("model", ["trained", "uploaded"])
def test_the_snippet_of_an_upload_reproduces_its_numbers(tmp_path, model):
    """A user's trial: for an uploaded file the snippet only loaded the exported classifier,
    under a header promising the fraction of terms, the disagreement and the accuracy. It now
    reads the file as the page did and prints them: run beside the exported classifier and the
    file, it prints the page's numbers (a multiclass file's positive class, an uploaded model
    for which the file is read, too)."""
    import skops.io as sio
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    X, y = make_classification(400, 6, n_informative=4, n_classes=3, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)]).assign(label=y)
    data = frame.to_csv(index=False).encode()
    state = DashboardState()
    assert not state.upload_dataset(data, "mine.csv")  # (three labels: which is positive?)
    state.positive_class = "2"
    if model == "uploaded":
        fitted = SVC(C=2.0).fit(X[:200], y[:200] == 2)
        assert state.upload_model(sio.dumps(fitted), "svc.skops")
    state.target = 0.02
    m = state.numbers()
    (tmp_path / "mine.csv").write_bytes(data)
    (tmp_path / "attentive_classifier.skops").write_bytes(exports.classifier_bytes(state))
    _snippet_prints_the_numbers(state, m, tmp_path)
    # any file name is quoted as Python writes it (a review: O"Neil rows.csv broke the code)
    odd = exports._upload_snippet(state, 'file: O"Neil rows.csv', False, 'side="both"')
    compile(odd, "snippet.py", "exec")
    assert repr('O"Neil rows.csv') in odd


def test_the_exported_calibrated_classifier_says_it_is_calibrated(state):
    """A user's trial: the exported calibrated classifier printed as
    AttentiveClassifier(boundary='curved', delta=0.05): a clone or a refit gave another rule.
    Its parameters now name the calibrated rule (family, δ, α); its decisions are the same."""
    from attentive.models import load_model

    report = state.calibration()
    loaded = load_model(exports.classifier_bytes(state))
    params = loaded.get_params()
    assert params["boundary"] == "calibrated" and params["family"] == report.family
    assert params["delta"] == report.delta == state.delta and params["alpha"] == report.alpha
    shown = rules.rule_classifier(state.walks, state.rule)
    assert shown.get_params()["boundary"] == "curved"  # (the dashboard's own copy untouched)
    X = state.walks.X_test
    np.testing.assert_array_equal(loaded.predict(X), shown.predict(X))
    np.testing.assert_array_equal(loaded.evaluate(X).n_evaluated, shown.evaluate(X).n_evaluated)


@pytest.mark.parametrize("delta", [0.01, 0.0141])
def test_a_family_rule_at_any_slider_delta_is_a_row_of_the_table_with_its_numbers(delta):
    """The picker's table has the current rule's own row (its z off the table's quarter steps)
    and that row's numbers are the rule's on the test set."""
    from attentive.app import numbers, rules

    state = DashboardState(boundary="curved", delta=delta)
    trade = rules.tradeoff(state.walks, state.rule.side, state.rule.theta)
    rows = numbers.table_rows(trade.table, ("curved", state.z))
    assert (state.z * 4) % 1 != 0  # off the steps the table shows anyway
    assert rows["current"].sum() == 1
    # Every row a click can pick is a scale the δ slider shows (the CSV has the others).
    lo, hi = rules.DELTA_RANGE
    assert all(lo * (1 - 1e-9) <= rules.nominal_delta(z) <= hi for z in rows["z"])
    assert (trade.table["z"] < 0).any() and rows["z"].min() == 0
    row = rows[rows["current"]].iloc[0]
    ev = state.walks.classifier.with_rule(
        "curved", side=state.rule.side, threshold=state.rule.theta, z=state.z
    ).evaluate(state.walks.X_test)
    assert row["mean_evaluated_fraction"] == pytest.approx(
        ev.n_evaluated.mean() / state.walks.n_terms, abs=1e-12
    )
    full = state.walks.classifier.with_rule("full", threshold=state.rule.theta)
    full_positive = full.evaluate(state.walks.X_test).positive
    assert row["disagreement"] == pytest.approx(np.mean(ev.positive != full_positive), abs=1e-12)


def test_a_rule_time_in_the_table_is_its_fastest_run(monkeypatch):
    """A run slowed by other work does not set a rule's µs per example: of runs taking 9, 1 and
    7 s (a fake clock), the table keeps 1 s (the median would say 7)."""
    ticks = iter([0.0, 9.0, 10.0, 11.0, 20.0, 27.0])
    monkeypatch.setattr(rules.time, "perf_counter", lambda: next(ticks))
    calls = []

    class Clf:
        def evaluate(self, X):
            calls.append(len(X))

    us = rules._fastest_us(Clf(), np.zeros((4, 2)))
    assert len(calls) == rules.TIMED_RUNS + 1 == 4  # a warm-up, then the timed runs
    assert us == pytest.approx(1e6 * 1.0 / 4)


def test_an_uploaded_table_is_trained_with_the_generic_preset_not_the_previous_datasets():
    """The default dataset's preset is γ = 0.05 (pixels in [0, 1]). An uploaded table of another
    scale (breast cancer's raw features, up to thousands) kept it: every training row became a
    support vector and the model called every example the majority class. An upload now gets
    the generic preset, as scikit-learn's SVC would fit it."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    names = np.array(["malignant", "benign"])
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(label=names[y])
    state = DashboardState()
    assert state.gamma == "0.05"
    assert state.upload_dataset(table.to_csv(index=False).encode(), "cancer.csv"), state.last_error
    assert (state.kernel, state.C, state.gamma) == ("rbf", 1.0, "scale")
    w = state.walks
    majority = max(np.mean(w.y_test), 1 - np.mean(w.y_test))
    accuracy = state.numbers()["accuracy_full"]
    assert accuracy > majority + 0.2, (accuracy, majority)


def test_rule_times_run_in_passes_and_a_time_slowed_through_every_run_is_taken_again(
    monkeypatch,
):
    """Served, a burst of work on the server's main thread slowed every run of a rule: the
    table showed 297 µs per example beside neighbours at 5, and the time-budget picker chose by
    it. The runs now go over the rules in passes, and a rule timed at more than IMPLAUSIBLE
    times full evaluation, or than a rule of its family that walks more, is timed again."""
    # Passes over the rules (a fake clock: each evaluation advances it by its rule's duration).
    now = [0.0]
    monkeypatch.setattr(rules.time, "perf_counter", lambda: now[0])
    calls = []

    class Clf:
        def __init__(self, name, seconds):
            self.name, self.seconds = name, seconds

        def evaluate(self, X):
            calls.append(self.name)
            now[0] += self.seconds.pop(0) if self.seconds else 2.0**-8

    a, b = Clf("a", [0, 2.0**-4, 2.0**-6, 2.0**-5]), Clf("b", [0, 2.0**-7, 2.0**-7, 2.0**-7])
    us = rules._fastest_each([a, b], np.zeros((4, 2)))
    assert calls == ["a", "b"] + ["a", "b"] * rules.TIMED_RUNS  # warm-ups, then passes
    assert us == [1e6 * 2.0**-6 / 4, 1e6 * 2.0**-7 / 4]
    # Which times are implausible.
    fam = ["x", "x", "x", "y"]
    assert rules._implausible([5, 6, 7, 8], [0.1, 0.2, 0.3, 0.1], fam, full_us=10) == []
    assert rules._implausible([5, 297, 7, 8], [0.1, 0.2, 0.3, 0.1], fam, full_us=10) == [1]
    assert rules._implausible([40, 6, 7, 31], [0.1, 0.2, 0.3, 0.1], fam, full_us=10) == [0, 3]
    # In rule_times' table: the rule slowed through its first runs is timed again.
    monkeypatch.undo()
    state = DashboardState()
    trade = rules.tradeoff(state.walks, state.side, state.theta).table
    timed = []

    def fake_each(clfs, X):
        timed.append(len(clfs))
        if len(timed) == 1:  # the first pass: the second rule slowed throughout
            return [300.0 if i == 1 else 5.0 + i for i in range(len(clfs))]
        return [6.0] * len(clfs)

    monkeypatch.setattr(rules, "_fastest_each", fake_each)
    monkeypatch.setattr(rules.time, "sleep", lambda s: None)
    times = rules._timed(state.walks, state.side, state.theta, trade, full_us=10.0)
    assert timed[1:] == [1]  # that rule alone, once: plausible then
    assert times["us_per_example"].max() < 3 * 10.0
    anchors = times[times["measured"]]
    assert len(anchors) == timed[0] and 6.0 in set(anchors["us_per_example"])
    # Busy through every retime: that rule's time is interpolated from its family's other
    # timed rules (as the rows between them are), not kept, and it is not called measured.
    timed.clear()

    def slowed(clfs, X):  # the second rule at 300 µs in every pass
        timed.append(len(clfs))
        return [300.0 if i == 1 or len(timed) > 1 else 5.0 + i for i in range(len(clfs))]

    monkeypatch.setattr(rules, "_fastest_each", slowed)
    times = rules._timed(state.walks, state.side, state.theta, trade, full_us=10.0)
    assert timed[1:] == [1] * rules.RETIMES
    assert times["us_per_example"].max() < 3 * 10.0
    assert len(times[times["measured"]]) == timed[0] - 1
    # The rule doing the most work of its family busy: its rows run on towards full
    # evaluation's time at a full evaluation's work, not held at the last plausible time.
    last = rules.TIMED_PER_FAMILY - 1  # (the first family's last timed rule)
    timed.clear()

    def last_slowed(clfs, X):
        timed.append(len(clfs))
        return [300.0 if i == last or len(timed) > 1 else 1.0 for i in range(len(clfs))]

    monkeypatch.setattr(rules, "_fastest_each", last_slowed)
    times = rules._timed(state.walks, state.side, state.theta, trade, full_us=10.0)
    us = times[times["family"] == trade["family"].iloc[0]]["us_per_example"]  # (by work)
    assert us.iloc[-1] > 1.0 and us.max() <= 10.0 and us.is_monotonic_increasing


@pytest.mark.parametrize("gamma", ["scale", "auto", "0.02"])
def test_the_model_line_gives_gamma(gamma):
    """The dataset line named the kernel and C only (a user's trial: gamma="auto" on MNIST gives
    267 support vectors, and nothing on the page said which γ ran). It gives γ as the fitted
    model holds it; a linear model has none."""
    from attentive.app.layout import model_words
    from attentive.models import final_estimator

    state = DashboardState(gamma=gamma)
    assert state.n_errors == 0, state.last_error
    held = final_estimator(state.walks.problem.model).gamma
    shown = f"gamma={held!r}" if isinstance(held, str) else f"gamma={held:g}"
    assert shown in model_words(state.walks, state.dataset)
    assert str(held) == gamma if isinstance(held, str) else held == float(gamma)
    linear = DashboardState(dataset="breast-cancer", kernel="linear-svc")
    assert "gamma" not in model_words(linear.walks, linear.dataset)


def test_a_time_budget_pick_on_an_interpolated_time_times_that_rule_and_picks_again(
    monkeypatch,
):
    """Between the rules rule_times runs, a family's times are interpolated, and the pick goes
    where the interpolation errs low (the default page: picks at 3.47–7.35 µs in the table timed
    up to 25 % above, over their budget). The pick times the rule it lands on (PICK_RUNS runs);
    their fastest replaces an interpolated time (its family's other rows interpolated again
    with it, brute force below), and where their median is over the budget the pick is made
    again under budget × fastest / median — so the rule picked is timed, within the budget by
    its median, and the lowest disagreement within that limit in the table returned."""
    state = DashboardState()
    key = (state.walks, state.side, state.theta, state.sketched)
    trade = rules.tradeoff(*key)
    table = trade.table
    # The table: anchors at 4 rules a family, linear between them; a rule's "true" fastest
    # time: 1 + 10 × its work, plus a bump between anchors that the interpolation misses.
    work = table["work_fraction"]
    true = dict(
        zip(
            zip(table["family"], table["z"], strict=True),
            1.0 + 10.0 * work + 1.5 * np.sin(np.pi * 7 * work) ** 2,
            strict=True,
        )
    )
    frames = []
    for _family, rows in table.groupby("family", sort=False):
        rows = rows.sort_values("work_fraction")
        picks = np.unique(np.linspace(0, len(rows) - 1, 4).round().astype(int))
        anchors = rows.iloc[picks]
        us = [true[(f, z)] for f, z in zip(anchors["family"], anchors["z"], strict=True)]
        frame = rows[["family", "z"]].copy()
        frame["us_per_example"] = np.interp(rows["work_fraction"], anchors["work_fraction"], us)
        frame["measured"] = frame["z"].isin(anchors["z"])
        frames.append(frame)
    times = pd.concat(frames, ignore_index=True)
    times.attrs["full_us_per_example"] = 11.0
    timed = []
    spread = [1.0]  # a rule's median over its fastest run

    def runs(clf, X):
        rule = (clf.boundary_.kind, float(clf.boundary_.params["z"]))
        timed.append(rule)
        fastest = true[rule]
        return [spread[0] * fastest, fastest, spread[0] * fastest] + [2 * fastest] * 2

    monkeypatch.setattr(rules, "_runs_us", runs)
    reachable = rules.on_slider(rules.timed_table(trade, times))
    budgets = list(np.quantile(reachable["us_per_example"], [0.2, 0.4, 0.6]))
    moved = 0
    for s_, budget in ((s_, b) for s_ in (1.0, 1.2) for b in budgets):
        spread[0] = s_
        timed.clear()
        first = rules.lowest_within_time(rules.timed_table(trade, times), budget)
        row, out = rules.timed_pick(*key, budget, times=times)
        picked = (row["family"], row["z"])
        assert 1 <= len(timed) <= rules.PICK_TIMINGS and picked in timed
        assert bool(row["measured"]) and row["us_per_example"] == pytest.approx(true[picked])
        assert s_ * true[picked] <= budget  # its median within the budget
        shown = rules.on_slider(rules.timed_table(trade, out))
        if s_ == 1:  # (every median its fastest: the pick within the budget, by the table)
            again = rules.lowest_within_time(rules.timed_table(trade, out), budget)
            assert (again["family"], again["z"]) == picked
        else:  # the lowest disagreement within the limit it was picked under, so within its own time
            faster = shown[shown["us_per_example"] <= row["us_per_example"]]
            assert row["disagreement"] <= faster["disagreement"].min()
        moved += (first["family"], first["z"]) != picked
        # What was timed holds its fastest run; every other row is the interpolation between
        # its family's timed rows (brute force), and the attrs are kept.
        assert out.attrs["full_us_per_example"] == 11.0 and len(out) == len(times)
        for family, rows in out.merge(table[["family", "z", "work_fraction"]]).groupby("family"):
            anchors = rows[rows["measured"]].sort_values("work_fraction", kind="stable")
            new = {z for f, z in timed if f == family} - set(
                times.loc[(times["family"] == family) & times["measured"], "z"]
            )
            assert len(anchors) == times.loc[times["family"] == family, "measured"].sum() + len(new)
            for z in new:
                at = rows["z"] == z
                assert float(rows.loc[at, "us_per_example"].iloc[0]) == true[(family, z)]
            expected = np.interp(
                rows["work_fraction"], anchors["work_fraction"], anchors["us_per_example"]
            )
            loose = ~rows["measured"].to_numpy()
            np.testing.assert_allclose(rows["us_per_example"].to_numpy()[loose], expected[loose])
    assert moved >= 2  # (the bump, and the spread, moved picks off their first rows)
    # The page: the pick's times are kept (shared, and the page's table shows them).
    spread[0] = 1.0
    monkeypatch.setattr(rules.rule_times, "peek", lambda *k: times if k == key else None)
    stored = []
    monkeypatch.setattr(rules.rule_times, "put", lambda value, *k: stored.append((k, value)))
    state.time_budget = float(budgets[1])
    ((k, kept),) = stored
    assert k == key and state.times is kept
    row = rules.lowest_within_time(rules.timed_table(trade, kept), budgets[1])
    assert bool(row["measured"]) and (state.boundary, state.z) == (row["family"], float(row["z"]))


def test_a_time_budget_pick_neither_keeps_nor_judges_timings_of_a_busy_machine(monkeypatch):
    """A user's trial on a machine busy with other work: the pick timed rules at 137–203 µs
    per example beside neighbours at ~5, kept them as measured in the table every later session
    saw and exported, and chose by them. A timing whose fastest run is over IMPLAUSIBLE times
    the rule's time in the table (or full evaluation's) is neither kept nor judged: the rule is
    timed again, and where every timing is so, the table's own pick stands, its times as they
    were."""
    state = DashboardState()
    key = (state.walks, state.side, state.theta, state.sketched)
    trade = rules.tradeoff(*key)
    times = rules.rule_times(*key)
    table = rules.timed_table(trade, times)
    budget = float(np.quantile(rules.on_slider(table)["us_per_example"], 0.5))
    expected = rules.lowest_within_time(table, budget)
    calls = []

    def busy(clf, X):  # every run 40 times its time in the table
        rule = (clf.boundary_.kind, float(clf.boundary_.params["z"]))
        calls.append(rule)
        listed = table[(table["family"] == rule[0]) & (table["z"] == rule[1])]
        return [40.0 * float(listed["us_per_example"].iloc[0])] * rules.PICK_RUNS

    monkeypatch.setattr(rules, "_runs_us", busy)
    row, out = rules.timed_pick(*key, budget, times=times)
    assert calls, "the pick timed nothing"
    assert (row["family"], row["z"]) == (expected["family"], expected["z"])
    assert row["us_per_example"] <= budget
    pd.testing.assert_frame_equal(out, times)  # nothing kept
    # Busy once, then quiet: the second timing is the one kept and judged.
    calls.clear()
    quiet = {}

    def once_busy(clf, X):
        rule = (clf.boundary_.kind, float(clf.boundary_.params["z"]))
        calls.append(rule)
        listed = float(
            table[(table["family"] == rule[0]) & (table["z"] == rule[1])]["us_per_example"].iloc[0]
        )
        factor = 40.0 if len(calls) == 1 else 1.0
        quiet.setdefault(rule, listed)
        return [factor * listed] * rules.PICK_RUNS

    monkeypatch.setattr(rules, "_runs_us", once_busy)
    row, out = rules.timed_pick(*key, budget, times=times)
    assert len(calls) >= 2 and calls[0] == calls[1]
    assert row["us_per_example"] == pytest.approx(quiet[(row["family"], row["z"])])
    assert out["us_per_example"].max() <= times["us_per_example"].max() + 1e-9


def _pick_trials():
    """The default page's pick: its key, trade-off, times, timed table by (family, z), and the
    table's 10th and 90th percentile times (the slider's rules), for random budgets between."""
    state = DashboardState()
    key = (state.walks, state.side, state.theta, state.sketched)
    trade = rules.tradeoff(*key)
    times = rules.rule_times(*key)
    base = rules.timed_table(trade, times).set_index(["family", "z"])
    lo, hi = np.quantile(rules.on_slider(base.reset_index())["us_per_example"], [0.1, 0.9])
    return key, trade, times, base, lo, hi


def test_a_time_budget_pick_keeps_a_rule_timed_within_and_returns_only_timed_rules(monkeypatch):
    """A review of the pick's timing: a rule timed within the budget was dropped when a later
    rule timed over it lowered the limit below the first one's fastest run (116 of 300 random
    trials returned a worse rule, never timed), and the sixth timing's re-pick was returned
    untimed (68 of 300). Over random budgets, rules slower than the table by 5–15 % and medians
    5–15 % above their fastest: where any rule timed within the budget, the rule returned is
    one of those, with the lowest disagreement among them; where none did, the table's pick as
    it then stands, within the budget there (a browser test once got a rule timed at 8.0 µs
    beside a budget of 6.23: the last rule timed, the fallback until then)."""
    key, trade, times, base, lo, hi = _pick_trials()
    rng = np.random.default_rng(0)
    untimed = 0
    for _ in range(60):
        slow = {k: 1.05 + 0.1 * rng.random() for k in base.index}
        spread = {k: 1.05 + 0.1 * rng.random() for k in base.index}
        log = []

        def runs(clf, X, slow=slow, spread=spread, log=log):
            k = (clf.boundary_.kind, float(clf.boundary_.params["z"]))
            fastest = base.loc[k, "us_per_example"] * (1 if base.loc[k, "measured"] else slow[k])
            median = fastest * spread[k]
            log.append((k, median))
            return [fastest, median, median, 2 * median, 2 * median]

        monkeypatch.setattr(rules, "_runs_us", runs)
        budget = float(rng.uniform(lo, hi))
        row, out = rules.timed_pick(*key, budget, times=times)
        picked = (row["family"], float(row["z"]))
        within = {k for k, m in log if m <= budget}
        if within:  # a rule timed within the budget: the best of those
            assert bool(row["measured"]) and picked in within, (budget, picked, log)
            best = min(base.loc[k, "disagreement"] for k in within)
            assert row["disagreement"] <= best + 1e-12
        else:  # none: the table's pick as it stands, within the budget there
            again = rules.lowest_within_time(rules.timed_table(trade, out), budget)
            assert picked == (again["family"], float(again["z"])), (budget, picked, log)
            assert row["us_per_example"] <= budget
        untimed += not bool(row["measured"])
    assert untimed < 10  # (most picks land on a rule timed within the budget)
    # The timing stops after PICK_SECONDS (the pick runs on the page's thread): one rule timed.
    monkeypatch.setattr(rules, "PICK_SECONDS", 0.0)
    log.clear()
    row, out = rules.timed_pick(*key, float(hi), times=times)
    assert len(log) == 1
    if log[0][1] <= hi:
        assert (row["family"], float(row["z"])) == log[0][0]
    else:
        assert row["us_per_example"] <= hi
    # With no timings at all, the table's own pick.
    monkeypatch.setattr(rules, "PICK_TIMINGS", 0)
    log.clear()
    row, _ = rules.timed_pick(*key, float(hi), times=times)
    first = rules.lowest_within_time(rules.timed_table(trade, times), float(hi))
    assert not log and (row["family"], row["z"]) == (first["family"], first["z"])


def test_no_rule_listed_faster_than_a_time_budget_pick_has_a_lower_disagreement(monkeypatch):
    """What the page's table shows after a pick (a browser test found the contrary in one run
    of five): over random budgets, rules slower than the table by 0–25 % (its interpolation
    errs low) and medians 5–15 % above their fastest run, no rule the slider can set that the
    returned times list at or below the pick's time has a lower disagreement, and each rule
    the pick timed over the budget is listed at its median or above (not at its fastest run,
    within the budget). Where the pick's timings run out (PICK_TIMINGS; no time limit here) the
    best rule timed within the budget stands, and a rule listed faster and never timed may
    remain: 2 of 480 such trials."""
    monkeypatch.setattr(rules, "PICK_SECONDS", np.inf)  # (the runs here are instant)
    key, trade, times, base, lo, hi = _pick_trials()
    rng = np.random.default_rng(1)
    over = completed = 0
    for _ in range(80):
        slow = {k: 1.0 + 0.25 * rng.random() for k in base.index}
        spread = {k: 1.05 + 0.1 * rng.random() for k in base.index}
        medians, timings = {}, []

        def runs(clf, X, slow=slow, spread=spread, medians=medians, timings=timings):
            k = (clf.boundary_.kind, float(clf.boundary_.params["z"]))
            fastest = base.loc[k, "us_per_example"] * (1 if base.loc[k, "measured"] else slow[k])
            medians[k] = fastest * spread[k]
            timings.append(k)
            return [fastest, medians[k], medians[k], 2 * medians[k], 2 * medians[k]]

        monkeypatch.setattr(rules, "_runs_us", runs)
        budget = float(rng.uniform(lo, hi))
        row, out = rules.timed_pick(*key, budget, times=times)
        shown = rules.on_slider(rules.timed_table(trade, out))
        faster = shown[shown["us_per_example"] <= row["us_per_example"]]
        if len(timings) < rules.PICK_TIMINGS:
            completed += 1
            assert row["disagreement"] <= faster["disagreement"].min() + 1e-12, (budget, medians)
        listed = out.set_index(["family", "z"])["us_per_example"]
        for k, median in medians.items():
            if median > budget:
                over += 1
                assert listed.loc[k] >= median
    assert over > 0 and completed >= 60  # (timings over the budget; most picks land in six)


def test_a_time_budget_waits_for_times_that_cover_every_rule_of_the_table(monkeypatch):
    """A review: while the sketched rules were timed the page held the plain rules' times, the
    pick used them for the table with the sketched rules, and stored them under its key — the
    sketched rows then had no times, for every page. Times that do not cover the table are not
    used: the budget waits for the background's."""
    from types import SimpleNamespace

    plain = pd.DataFrame({"family": ["a", "a"], "z": [0.5, 1.0], "us_per_example": [1.0, 2.0]})
    both = pd.DataFrame({"family": ["a", "a", "s"], "z": [0.5, 1.0, 0.5]})
    assert rules.times_cover(plain, SimpleNamespace(table=plain[["family", "z"]]))
    assert not rules.times_cover(plain, SimpleNamespace(table=both))
    assert not rules.times_cover(None, SimpleNamespace(table=both))
    jobs = []
    state = DashboardState(hold_background=True)
    state.background = lambda job, done, fail: jobs.append((job, done, fail))
    key = (state.walks, state.side, state.theta, state.sketched)
    times = rules.rule_times(*key)
    wider = rules.tradeoff(*key).table
    extra = wider.iloc[:3].assign(family="sketched-curved")
    monkeypatch.setattr(
        rules.tradeoff, "peek", lambda *k: SimpleNamespace(table=pd.concat([wider, extra]))
    )
    stored = []
    monkeypatch.setattr(rules.rule_times, "put", lambda value, *k: stored.append(k))
    before = (state.boundary, state.z)
    state.time_budget = float(times["us_per_example"].median())
    assert state._budget_waiting and not stored and (state.boundary, state.z) == before
