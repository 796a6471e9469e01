"""``bench rules``: its numbers are those of the library's own functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attentive import family_names, operating_points
from attentive.bench_rules import _fitted, measure_problem
from attentive.cli import main
from attentive.data import load_dataset


@pytest.fixture(scope="module")
def result():
    return measure_problem("synthetic", load_dataset("synthetic", n_train=700, n_test=900))


def test_rules_benchmark_numbers_come_from_the_library(result):
    ds = load_dataset("synthetic", n_train=700, n_test=900)
    clf, X_cal = _fitted("synthetic", ds)
    assert result["m_calibration"] == X_cal.shape[0] == 280  # 40 % of 700 (needs 473)
    table = operating_points(clf, ds.X_test)
    for name in family_names():
        row = result["families"][name]
        ok = table[(table.family == name) & (table.disagreement <= 0.01)]
        assert row["tuned"] == pytest.approx(ok.mean_evaluated_fraction.min())
        assert row["tuned_x_oracle"] == pytest.approx(row["tuned"] / result["oracle"])
    auto = result["families"]["auto"]
    assert auto["calibrated"] == result["families"][auto["chosen"]]["calibrated"]
    assert np.isclose(result["oracle"], clf.oracle_n_evaluated(ds.X_test).mean() / clf.n_terms_)


def test_the_calibrated_fractions_are_the_walks_own_work():
    """The calibrated rule's fraction is its walk's, whatever path the evaluator would take
    (with early_stopping="auto", a problem evaluated in full read 1.000 for every family).
    Enough calibration examples here (520 ≥ 473) for a scale to pass."""
    ds = load_dataset("synthetic", n_train=1300, n_test=600)
    result = measure_problem("synthetic", ds)
    clf, X_cal = _fitted("synthetic", ds)
    cal = clf.with_rule("curved").set_params(early_stopping=True)
    cal.calibrate(X_cal, delta=0.01, alpha=0.05, family="curved")
    assert not cal.calibration_.fallback
    ev = cal.evaluate(ds.X_test)
    assert ev.path == "walk"
    assert result["families"]["curved"]["calibrated"] == pytest.approx(ev.mean_evaluated_fraction)
    assert result["families"]["curved"]["calibrated"] < 1


def test_bench_rules_command_prints_one_json_line(capsys):
    assert main(["bench", "rules", "--problems", "digits-2v5", "--no-sizes"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    data = json.loads(last)
    assert data["problems"][0]["problem"] == "digits-2v5"
    assert set(data["problems"][0]["families"]) == {*family_names(), "auto"}


def test_mean_ratios_over_seeds_against_a_hand_computation():
    from attentive.bench_rules import mean_ratios

    def fake(seed, tuned, cal):
        return {
            "problem": "p",
            "seed": seed,
            "families": {
                "regression": {"tuned_x_oracle": tuned, "calibrated_x_oracle": cal},
                "auto": {"calibrated_x_oracle": cal + 1},
            },
        }

    means = mean_ratios([fake(0, 1.0, 2.0), fake(1, 2.0, 3.5), fake(2, 3.0, 2.5)])
    assert means["p"]["regression"] == {
        "tuned_x_oracle": 2.0,
        "calibrated_x_oracle": pytest.approx(8.0 / 3),
        "calibrated_x_oracle_max": 3.5,
    }
    assert means["p"]["auto"]["tuned_x_oracle"] is None
    assert means["p"]["auto"]["calibrated_x_oracle"] == pytest.approx(11.0 / 3)


# ------------------------------------------------------------- issue 35's targets (--targets)
@pytest.mark.slow
def test_sketch_target_numbers_come_from_the_library():
    """One split of an MNIST problem: the work, floors and choices printed are the
    classifier's own, refitted here as a user would."""
    import copy
    import warnings

    from attentive import AttentiveClassifier
    from attentive.bench_corpus import load_problem
    from attentive.bench_rules import calibration_split
    from attentive.bench_sketch import CountedCosts, measure_split
    from attentive.grid import oracle_stop_positions

    problem = load_problem("mnist-2v5", tiled=False)
    warnings.simplefilter("ignore")  # (pytest restores the filters)
    for cls, counted in ((AttentiveClassifier, False), (CountedCosts, True)):
        got = measure_split(problem, 1, counted=counted)
        assert not got["fallback"]
        clf = cls(
            problem.model, boundary="calibrated", side="both", delta=0.01, alpha=0.05,
            random_state=1,
        ).fit(problem.X_train, problem.y_train)  # fmt: skip
        X = problem.X_test
        ev = copy.copy(clf).set_params(early_stopping=True).evaluate(X)
        full = clf.estimator_.decision_function(X) >= 0
        assert got["work"] == pytest.approx(ev.work_fraction)
        assert got["walked"] == pytest.approx(ev.n_evaluated.mean() / clf.n_terms_)
        assert got["disagreement"] == pytest.approx(np.mean(ev.positive != full))
        assert got["oracle"] == pytest.approx(clf.oracle_n_evaluated(X).mean() / clf.n_terms_)
        assert got["family"] == clf.calibration_.family
        assert [o["total"] for o in got["options"]] == [
            pytest.approx(o.total) for o in clf.sketch_choice_.options
        ]
        if counted:  # the count of multiply-adds favours a sketch: one is kept here
            sketch = clf.sketched_walk_
            assert sketch is not None and got["sketch"] == clf.sketch_choice_.best.label
            S = sketch.partial_scores(X)
            M = clf.sketched_statistics_.pooled.remainder_mean
            floor = oracle_stop_positions(S, clf.theta_s_, M).mean() / clf.n_terms_
            assert got["sketched_oracle_work"] == pytest.approx(
                sketch.cost + floor * sketch.walked_term_cost
            )
            _, X_cal, _ = calibration_split(problem, 1)
            rule = clf.with_rule("sketched-curved").calibrate(X_cal, family="sketched-curved")
            walked = copy.copy(rule).set_params(early_stopping=True).evaluate(X)
            assert got["families"]["sketched-curved"]["work"] == pytest.approx(walked.work_fraction)


def test_sketch_target_verdicts_against_a_hand_computation():
    from attentive.bench_sketch import _verdict, work_limit

    assert work_limit(200) == pytest.approx(1 / 3) and work_limit(199.9) == pytest.approx(1 / 2)

    def split(n_terms, work, oracle):
        return {"n_terms": n_terms, "work": work, "oracle": oracle}

    # 250 and 150 support vectors: 200 on average, so at most a third of the mean floor.
    v = _verdict([split(250, 0.10, 0.30), split(150, 0.11, 0.36)])
    assert v["mean_work"] == pytest.approx(0.105) and v["mean_oracle"] == pytest.approx(0.33)
    assert v["limit"] == pytest.approx(1 / 3) and v["passed"]  # 0.105 ≤ 0.11
    v = _verdict([split(250, 0.10, 0.30), split(150, 0.13, 0.36)])
    assert not v["passed"] and v["work_x_oracle"] == pytest.approx(0.115 / 0.33)
    v = _verdict([split(150, 0.16, 0.33), split(160, 0.16, 0.33)])
    assert v["limit"] == pytest.approx(1 / 2) and v["passed"]


def test_bench_rules_targets_command_prints_verdicts_and_one_json_line(capsys):
    args = ["bench", "rules", "--targets", "--quick", "--seeds", "0", "--no-counted"]
    assert main([*args, "--problems", "mnist-2v5", "dense-40"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    data = json.loads(out[-1])
    (target,) = data["targets"]
    (few,) = data["few_features"]
    assert target["problem"] == "mnist-2v5" and few["problem"] == "dense-40"
    verdict = "PASS" if target["passed"] else "FAIL"
    assert any(line.strip().startswith(f"{verdict} target") for line in out)
    assert few["passed"] == all(s["sketch"] == "no sketch" for s in few["splits"])
    assert any(line.strip().startswith(("PASS few features", "FAIL few features")) for line in out)
