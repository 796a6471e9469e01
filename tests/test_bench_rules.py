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
