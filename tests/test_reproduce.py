"""``attentive.reproduce`` and ``python -m attentive reproduce``.

The CSV and JSON numbers are checked against an independent computation: the partial scores are
rebuilt from the SVM's dual coefficients and kernel values with numpy, and every stop-error,
evaluated fraction and precision–recall score is recomputed by brute force.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from attentive import AttentiveClassifier
from attentive.cli import main
from attentive.data import load_dataset
from attentive.metrics import TradeoffCurve
from attentive.reproduce import (
    attentive_scores,
    budgeted_at,
    compare_curves,
    fraction_at_stop_error,
    reproduce_dataset,
    sweep_taus,
)

SEED = 0


def _curve(method, fraction, error):
    fraction = np.asarray(fraction, dtype=float)
    error = np.asarray(error, dtype=float)
    return TradeoffCurve(
        method=method,
        parameter_name="tau" if method == "attentive" else "budget",
        parameter=np.arange(fraction.size),
        mean_evaluated_fraction=fraction,
        stop_error=error,
        disagreement=error / 2,
        n_terms=10,
    )


def _independent_walks(ds, seed=SEED):
    """Partial scores of the test set from the SVM's own parts, without attentive's walk code."""
    model = SVC(C=1.0, kernel="rbf", gamma="scale").fit(ds.X_train, ds.y_train)
    w = model.dual_coef_[0]
    K_pos = rbf_kernel(ds.X_train[ds.y_train == 1], model.support_vectors_, gamma=model._gamma)
    mu = K_pos.mean(axis=0)
    order = np.random.default_rng(seed).permutation(w.size)  # the paper's random order
    K = rbf_kernel(ds.X_test, model.support_vectors_, gamma=model._gamma)
    S = np.cumsum((w * (K - mu))[:, order], axis=1)
    offset = model.intercept_[0] + w @ mu
    np.testing.assert_allclose(offset + S[:, -1], model.decision_function(ds.X_test), rtol=1e-9)
    return model, S, offset


def _brute_attentive(S, theta_s, tau):
    """Loop over examples: stop at the first t < n with S_t < τ (Algorithm 1)."""
    m, n = S.shape
    n_eval = np.full(m, n)
    stopped = np.zeros(m, dtype=bool)
    for i in range(m):
        for t in range(n - 1):
            if S[i, t] < tau:
                n_eval[i], stopped[i] = t + 1, True
                break
    full = S[:, -1] >= theta_s
    return n_eval.mean() / n, np.sum(stopped & full) / full.sum(), np.mean(stopped & full), stopped


# ----------------------------------------------------------------------------- command line


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("reproduce")
    argv = [
        "reproduce",
        "--dataset",
        "digits-2v5",
        "--quick",
        "--out",
        str(root / "out"),
        "--data-home",
        str(root / "data"),
        "--no-download",
    ]
    assert main(argv) == 0
    return root / "out" / "digits-2v5"


def test_cli_writes_every_output(digits_run):
    for name in ("tradeoff.csv", "pr.csv", "summary.json", "figure4.png"):
        assert (digits_run / name).stat().st_size > 0, name
    assert (digits_run / "figure4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_tradeoff_matches_brute_force(digits_run):
    ds = load_dataset("digits-2v5")
    model, S, offset = _independent_walks(ds)
    theta_s = -offset
    m, n = S.shape
    summary = json.loads((digits_run / "summary.json").read_text())
    assert summary["n_terms"] == model.support_.size == n
    assert summary["theta_s"] == pytest.approx(theta_s, rel=1e-9)
    assert summary["accuracy"] == pytest.approx(model.score(ds.X_test, ds.y_test))

    table = pd.read_csv(digits_run / "tradeoff.csv")
    att = table[table.method == "attentive"]
    assert att.tau.min() <= S[:, :-1].min() + 1e-12
    assert att.tau.max() == pytest.approx(theta_s)
    for row in att.iloc[:: max(1, len(att) // 25)].itertuples():
        frac, err, dis, _ = _brute_attentive(S, theta_s, row.tau)
        assert row.mean_evaluated_fraction == pytest.approx(frac, abs=1e-12)
        assert row.stop_error == pytest.approx(err, abs=1e-12)
        assert row.disagreement == pytest.approx(dis, abs=1e-12)

    bud = table[table.method == "budgeted"]
    assert bud.budget.astype(int).tolist() == list(range(1, n + 1))
    full = S[:, -1] >= theta_s
    for row in bud.itertuples():
        B = int(row.budget)
        pos = np.array([(n / B) * S[i, B - 1] >= theta_s for i in range(m)])
        assert row.mean_evaluated_fraction == pytest.approx(B / n)
        assert row.stop_error == pytest.approx(np.sum(~pos & full) / full.sum(), abs=1e-12)
        assert row.disagreement == pytest.approx(np.mean(pos != full), abs=1e-12)


def test_cli_precision_recall_matches_brute_force(digits_run):
    ds = load_dataset("digits-2v5")
    _, S, offset = _independent_walks(ds)
    n = S.shape[1]
    summary = json.loads((digits_run / "summary.json").read_text())
    point = summary["operating_point"]
    tau, B = point["tau"], point["budget"]
    frac, err, _, stopped = _brute_attentive(S, -offset, tau)
    assert point["mean_evaluated_fraction"] == pytest.approx(frac)
    assert point["stop_error"] == pytest.approx(err)
    assert B == max(1, round(frac * n))
    scores = {
        "full": offset + S[:, -1],
        "attentive": np.where(stopped, offset + tau, offset + S[:, -1]),
        "budgeted": offset + (n / B) * S[:, B - 1],
    }
    full = S[:, -1] >= -offset
    decisions = {"full": full, "attentive": full & ~stopped, "budgeted": scores["budgeted"] >= 0}
    for name, decision in decisions.items():
        accuracy = np.mean(decision == (ds.y_test == 1))
        assert summary["accuracy_at_operating_point"][name] == pytest.approx(accuracy)
    pr = pd.read_csv(digits_run / "pr.csv")
    for name, score in scores.items():
        ap = average_precision_score(ds.y_test, score)
        assert summary["average_precision"][name] == pytest.approx(ap)
        rows = pr[pr.method == name]
        assert rows.recall.iloc[-1] == 0.0 and rows.precision.iloc[-1] == 1.0
        # every finite threshold is one of the scores, with the precision it gives
        for row in rows.dropna().iloc[:: max(1, len(rows) // 10)].itertuples():
            predicted = score >= row.threshold
            tp = np.sum(predicted & (ds.y_test == 1))
            assert row.precision == pytest.approx(tp / predicted.sum())
            assert row.recall == pytest.approx(tp / np.sum(ds.y_test == 1))


def test_cli_simulation(tmp_path):
    assert main(["reproduce", "--dataset", "simulation", "--quick", "--out", str(tmp_path)]) == 0
    out = tmp_path / "simulation"
    for name in ("decision_error.csv", "stopping_time.csv", "summary.json", "figure3.png"):
        assert (out / name).stat().st_size > 0, name
    errors = pd.read_csv(out / "decision_error.csv")
    # the upper Constant-STST threshold with θ_S = 0 and V = n (SPEC §2)
    expected_tau = np.sqrt(errors.n * np.log(1 / errors.required) / 2)
    np.testing.assert_allclose(errors.tau, expected_tau, rtol=1e-12)
    assert ((errors.actual >= 0) & (errors.actual <= 1)).all()
    times = pd.read_csv(out / "stopping_time.csv")
    summary = json.loads((out / "summary.json").read_text())
    for column, key in (
        ("mean_stopping_time", "slope"),
        ("mean_stopping_time_truncated", "slope_truncated"),
    ):
        slope = np.polyfit(np.log(times.n), np.log(times[column]), 1)[0]
        assert summary[key] == pytest.approx(slope)
    assert (times.mean_stopping_time_truncated <= times.n).all()
    ok = bool(np.all(errors.actual <= errors.required + 2 * errors.stderr))
    assert summary["conservative"]["1000"] is ok


def test_cli_reports_unknown_dataset(tmp_path, capsys):
    assert main(["reproduce", "--dataset", "no-such-data", "--out", str(tmp_path)]) == 1
    assert "no-such-data" in capsys.readouterr().err


def test_cli_missing_download_is_an_error(tmp_path, capsys):
    argv = [
        "reproduce",
        "--dataset",
        "mnist-2v5",
        "--out",
        str(tmp_path / "out"),
        "--data-home",
        str(tmp_path / "empty"),
        "--no-download",
    ]
    assert main(argv) == 1
    assert "mnist" in capsys.readouterr().err.lower()
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- pieces


def test_compare_curves_finds_first_loss_and_excess():
    att = _curve("attentive", [1.0, 0.8, 0.6, 0.4, 0.2], [0.0, 0.05, 0.15, 0.35, 0.7])
    # budgeted at fractions 0.2, 0.4, ... 1.0; interpolated at attentive's fractions
    bud = _curve("budgeted", [0.2, 0.4, 0.6, 0.8, 1.0], [0.5, 0.3, 0.12, 0.1, 0.0])
    c = compare_curves(att, bud)
    # 0.8: 0.05 ≤ 0.1; 0.6: 0.15 > 0.12 -> first loss at stop-error 0.15
    assert c.ever_worse and c.beats_below == pytest.approx(0.15)
    # both below 30% at 1.0, 0.8, 0.6 only; excess 0.03 at 0.6
    assert c.n_compared == 3 and c.n_worse == 1
    assert c.max_excess == pytest.approx(0.03)
    assert c.max_excess_fraction == pytest.approx(0.6)
    assert c.worse_fractions == (pytest.approx(0.6), pytest.approx(0.6))
    # budgeted at 1.0, 0.8, 0.6 is 0.0, 0.1, 0.12
    assert c.mean_difference == pytest.approx(((0.0 - 0.0) + (0.05 - 0.1) + (0.15 - 0.12)) / 3)


def test_compare_curves_when_attentive_never_loses():
    att = _curve("attentive", [1.0, 0.5], [0.0, 0.2])
    bud = _curve("budgeted", [0.5, 1.0], [0.2, 0.0])  # a tie counts as not worse
    c = compare_curves(att, bud)
    assert not c.ever_worse and c.beats_below == pytest.approx(0.2)
    assert c.max_excess == 0.0 and np.isnan(c.max_excess_fraction)


def test_budgeted_at_interpolates_between_budgets():
    bud = _curve("budgeted", [0.25, 0.5, 0.75, 1.0], [0.4, 0.2, 0.1, 0.0])
    np.testing.assert_allclose(budgeted_at(bud, [0.25, 0.625, 1.0]), [0.4, 0.15, 0.0])


def test_fraction_at_stop_error_ignores_lucky_dips():
    # a lucky zero at 0.3 followed by errors above 1% does not count
    bud = _curve("budgeted", [0.3, 0.5, 0.7, 0.9, 1.0], [0.0, 0.05, 0.008, 0.0, 0.0])
    assert fraction_at_stop_error(bud, 0.01) == pytest.approx(0.7)
    assert fraction_at_stop_error(bud, 0.001) == pytest.approx(0.9)
    assert fraction_at_stop_error(bud, 0.1) == pytest.approx(0.3)
    never = _curve("budgeted", [0.5, 1.0], [0.2, 0.02])
    assert fraction_at_stop_error(never, 0.01) == 1.0


def test_attentive_scores_is_algorithm_1():
    rng = np.random.default_rng(1)
    S = np.cumsum(rng.normal(size=(40, 12)), axis=1)
    tau, offset = -1.5, 0.7
    scores, stopped = attentive_scores(S, offset, tau)
    for i in range(S.shape[0]):
        crossed = any(S[i, t] < tau for t in range(S.shape[1] - 1))  # never at t = n
        assert stopped[i] == crossed
        assert scores[i] == pytest.approx(offset + (tau if crossed else S[i, -1]))


def test_sweep_taus_covers_the_papers_range():
    rng = np.random.default_rng(2)
    S = np.cumsum(rng.normal(size=(30, 50)), axis=1)
    taus = sweep_taus(S, theta_s=0.5, n_taus=100)
    assert taus[0] == pytest.approx(S[:, :-1].min())
    assert taus[-1] == 0.5
    assert np.all(np.diff(taus) > 0)
    assert 50 <= taus.size <= 101


def test_reproduce_dataset_with_a_prefit_model_matches_the_curves():
    ds = load_dataset("synthetic", n_train=300, n_test=200, n_features=8)
    model = SVC(C=1.0, gamma="scale").fit(ds.X_train, ds.y_train)
    result = reproduce_dataset("synthetic", dataset=ds, model=model, quick=True, seed=3)
    assert result.n_terms == model.support_.size
    k = result.attentive.parameter.size // 2
    tau = result.attentive.parameter[k]
    # the walks from the estimator, the metrics by brute force
    clf = AttentiveClassifier(model, boundary="full", random_state=3).fit(ds.X_train, ds.y_train)
    S = clf.walk_.partial_scores(ds.X_test)
    frac, err, _, _ = _brute_attentive(S, clf.theta_s_, tau)
    assert result.attentive.mean_evaluated_fraction[k] == pytest.approx(frac)
    assert result.attentive.stop_error[k] == pytest.approx(err)
    summary = result.summary()
    json.dumps(summary)  # plain data
    assert summary["settings"]["centering"].startswith("positive examples of the training set")
