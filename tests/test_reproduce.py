"""``attentive.experiments``, ``attentive.plots`` and ``python -m attentive reproduce``.

The CSV and JSON numbers are checked against an independent computation: the partial scores are
rebuilt from the SVM's dual coefficients and kernel values with numpy, and every stop-error,
evaluated fraction and precision–recall score is recomputed by brute force. The experiments must
reach walks, boundaries and scores through the public API only (checked on their imports).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import holoviews as hv
import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import average_precision_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from attentive import AttentiveClassifier, family_names
from attentive.cli import main
from attentive.data import load_dataset
from attentive.experiments import (
    budgeted_at,
    compare_curves,
    constant_rule_at,
    fraction_at_stop_error,
    reproduce_dataset,
    reproduce_simulation,
)
from attentive.families import registry
from attentive.families.constant import ConstantFamily
from attentive.metrics import TradeoffCurve
from attentive.plots import figure3, figure4

SEED = 0
ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="module")
def digits_walks():
    ds = load_dataset("digits-2v5")
    return (ds, *_independent_walks(ds))


def test_cli_writes_every_output(digits_run):
    for name in ("tradeoff.csv", "pr.csv", "summary.json", "figure4.png"):
        assert (digits_run / name).stat().st_size > 0, name
    assert (digits_run / "figure4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_tradeoff_matches_brute_force(digits_run, digits_walks):
    ds, model, S, offset = digits_walks
    theta_s = -offset
    m, n = S.shape
    summary = json.loads((digits_run / "summary.json").read_text())
    assert summary["n_terms"] == model.support_.size == n
    assert summary["theta_s"] == pytest.approx(theta_s, rel=1e-9)
    assert summary["accuracy"] == pytest.approx(model.score(ds.X_test, ds.y_test))

    table = pd.read_csv(digits_run / "tradeoff.csv")
    att = table[table.method == "attentive"]
    # the paper's range: from the lowest partial score (t < n) up to θ_S, 120 values in quick mode
    assert len(att) == 120
    assert att.tau.min() == pytest.approx(S[:, :-1].min(), abs=1e-12)
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


def test_cli_family_curves_match_the_estimator(digits_run, digits_walks):
    """Every registered family is in the table, each point equal to that rule's own prediction."""
    ds, model, S, offset = digits_walks
    table = pd.read_csv(digits_run / "tradeoff.csv")
    assert set(family_names()) <= set(table.method)
    # The rules' own walks (as the command walks them), not "auto"'s choice of path.
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", random_state=SEED, early_stopping=True
    )
    clf.fit(ds.X_train, ds.y_train)
    full = S[:, -1] >= -offset
    for name in family_names():
        rows = table[table.method == name]
        assert rows.z.iloc[0] == 6.0 and rows.z.iloc[-1] == -6.0
        for row in rows.iloc[::40].itertuples():
            ev = clf.with_rule(name, z=row.z).evaluate(ds.X_test)
            assert row.mean_evaluated_fraction == pytest.approx(ev.n_evaluated.mean() / S.shape[1])
            assert row.stop_error == pytest.approx(np.sum(~ev.positive & full) / full.sum())


def test_cli_precision_recall_matches_brute_force(digits_run, digits_walks):
    ds, _, S, offset = digits_walks
    n = S.shape[1]
    summary = json.loads((digits_run / "summary.json").read_text())
    point = summary["operating_point"]
    tau, B = point["tau"], point["budget"]
    assert tau == pytest.approx(point["tau_swept"], rel=1e-9, abs=1e-12)
    frac, err, _, stopped = _brute_attentive(S, -offset, tau)
    assert stopped.any()  # the scores below are not all f(x)
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
        # every finite threshold is one of the scores (to rounding), with the precision it gives
        for row in rows.dropna().iloc[:: max(1, len(rows) // 10)].itertuples():
            predicted = score >= row.threshold - 1e-9
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


def test_cli_refuses_an_unwritable_folder_and_a_negative_seed_before_computing(
    tmp_path, capsys, monkeypatch
):
    """A results folder that cannot be written is told before the computation (it was a
    traceback after it, the work lost), and folders made for results that did not come are
    removed; a negative seed is an error, not numpy's traceback."""
    from attentive.experiments import cli

    computed = []
    monkeypatch.setattr(cli, "reproduce_simulation", lambda **kw: computed.append(kw))
    real_temporary = tempfile.TemporaryFile

    def refused(*args, dir=None, **kwargs):
        if dir is not None and "locked" in str(dir):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_temporary(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", refused)
    out = tmp_path / "locked" / "deeper"
    assert main(["reproduce", "--dataset", "simulation", "--quick", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write the results to {out / 'simulation'} (Permission denied)" in err
    assert not computed and not (tmp_path / "locked").exists()
    argv = ["reproduce", "--dataset", "simulation", "--seed", "-1", "--out", str(tmp_path)]
    assert main(argv) == 1
    assert "--seed must be a whole number ≥ 0, got -1" in capsys.readouterr().err
    assert not computed and not (tmp_path / "simulation").exists()


def test_a_run_stopped_or_refused_while_writing_keeps_the_earlier_results(
    tmp_path, capsys, monkeypatch
):
    """A review: the files were written in place one after the other, so a run stopped or
    failing while writing left a summary of one run beside a table of another, and a full
    disk or Ctrl-C ended in a traceback. Now a run's files replace the earlier ones only once
    all are written; a refusal is an error of the command, an interrupt says nothing was
    written."""
    import attentive.plots
    from attentive.experiments import cli

    argv = ["reproduce", "--dataset", "simulation", "--quick", "--out", str(tmp_path)]
    assert main(argv) == 0
    folder = tmp_path / "simulation"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert set(before) == {"decision_error.csv", "stopping_time.csv", "summary.json", "figure3.png"}
    result = cli.reproduce_simulation(quick=True, seed=1)
    monkeypatch.setattr(cli, "reproduce_simulation", lambda **kw: result)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(attentive.plots, "save_png", full_disk)  # the last file written
    assert main(argv) == 1
    assert f"cannot write the results to {folder} (No space left on device)" in (
        capsys.readouterr().err
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["simulation"]  # no staging left

    def stopped(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "reproduce_simulation", stopped)
    assert main(argv) == 130
    assert f"interrupted: {folder} was not written" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


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


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9, 1.0])
def test_constant_rule_is_algorithm_1_at_tau(digits_walks, where):
    """The estimator's constant rule at a swept τ, with the paper's scores (stopped_score=
    "boundary"), against a loop over the independent partial scores."""
    ds, model, S, offset = digits_walks
    theta_s = -offset
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="full",
        random_state=SEED,
        stopped_score="boundary",
        early_stopping=True,  # Algorithm 1's walk whatever it costs
    ).fit(ds.X_train, ds.y_train)
    low = S[:, :-1].min()
    tau = low + where * (theta_s - low)
    rule = constant_rule_at(clf, tau)
    assert rule.boundary_.lower[0] == pytest.approx(tau, rel=1e-9, abs=1e-12)
    ev = rule.evaluate(ds.X_test)
    m, n = S.shape
    for i in range(m):
        t_stop = next((t for t in range(n - 1) if S[i, t] < tau), None)
        if t_stop is None:
            assert not ev.stopped[i] and ev.n_evaluated[i] == n
            assert ev.decision[i] == pytest.approx(offset + S[i, -1], rel=1e-9)
        else:
            assert ev.stopped[i] and ev.n_evaluated[i] == t_stop + 1 and not ev.positive[i]
            assert ev.decision[i] == pytest.approx(offset + tau, rel=1e-9, abs=1e-12)
            assert ev.decision[i] < 0.0  # on the predicted side of θ = 0


def test_figure4_draws_the_frames(digits_run):
    tradeoff = pd.read_csv(digits_run / "tradeoff.csv")
    pr = pd.read_csv(digits_run / "pr.csv")
    summary = json.loads((digits_run / "summary.json").read_text())
    fig = figure4(tradeoff, pr, summary)
    assert isinstance(fig, hv.Layout) and len(fig) == 2
    top, bottom = fig
    labels = [el.label for el in top]
    assert labels[0].startswith("full (41 support vectors), AP 1.000")
    assert any(label.startswith("attentive τ = ") for label in labels)
    curves = {el.label: el for el in bottom if isinstance(el, hv.Curve)}
    att = curves["attentive (τ from min S_t to θ_S)"]
    expected = tradeoff[tradeoff.method == "attentive"].sort_values("mean_evaluated_fraction")
    np.testing.assert_allclose(att.dimension_values(0), expected.mean_evaluated_fraction)
    np.testing.assert_allclose(att.dimension_values(1), expected.stop_error)
    assert "budgeted (B = 1..n)" in curves
    for name in family_names():
        assert f"{name} family (z from 6 to −6)" in curves
    limit = curves["30% stop-error (paper)"]
    assert set(limit.dimension_values(1)) == {0.3}
    point = next(el for el in bottom if el.label == "operating point of the PR panel")
    op = summary["operating_point"]
    assert point.dimension_values(0)[0] == op["mean_evaluated_fraction"]
    assert point.dimension_values(1)[0] == op["stop_error"]


def test_figure3_reference_line_is_y_equals_x():
    sim = reproduce_simulation(quick=True, seed=1)
    fig = figure3(sim.decision_error, sim.stopping_time)
    left, right = fig
    ref = next(el for el in left if el.label == "actual = required")
    x, y = ref.dimension_values(0), ref.dimension_values(1)
    # dense on the log axis: every segment is short, so the drawn line is y = x on any axes
    assert x.size >= 100 and np.all(np.diff(np.log(x)) < 0.05)
    np.testing.assert_array_equal(x, y)
    assert x.min() == pytest.approx(sim.decision_error.required.min()) and x.max() == 0.5
    errorbars = [el for el in left if isinstance(el, hv.ErrorBars)]
    seen = sim.decision_error[sim.decision_error.actual > 0]
    np.testing.assert_allclose(errorbars[0].dimension_values(1), seen.actual)
    slopes = [el.label for el in right if el.label.startswith("fit: slope")]
    assert slopes == [
        f"fit: slope {sim.summary['slope']:.2f}",
        f"fit: slope {sim.summary['slope_truncated']:.2f}",
    ]


def test_reproduce_dataset_with_a_prefit_model_matches_the_curves():
    ds = load_dataset("synthetic", n_train=300, n_test=200, n_features=8)
    model = SVC(C=1.0, gamma="scale").fit(ds.X_train, ds.y_train)
    result = reproduce_dataset("synthetic", dataset=ds, model=model, quick=True, seed=3)
    assert result.summary["n_terms"] == model.support_.size
    att = result.tradeoff[result.tradeoff.method == "attentive"]
    row = att.iloc[len(att) // 2]
    # the walks from the estimator, the metrics by brute force
    clf = AttentiveClassifier(FrozenEstimator(model), boundary="full", random_state=3)
    S = clf.fit(ds.X_train, ds.y_train).partial_scores(ds.X_test)
    frac, err, _, _ = _brute_attentive(S, clf.theta_s_, row.tau)
    assert row.mean_evaluated_fraction == pytest.approx(frac)
    assert row.stop_error == pytest.approx(err)
    json.dumps(result.summary)  # plain data
    assert result.summary["settings"]["centering"].startswith("positive examples of the training")


def test_a_registered_family_appears_without_other_edits(monkeypatch):
    """A family added by registration only is in the experiment's table and its figure."""

    class Wider(ConstantFamily):
        name = "wider-constant"

        def boundary(self, z):
            return super().boundary(z + 1.0)

        def thresholds(self, grid, upper):
            return super().thresholds(np.asarray(grid) + 1.0, upper)

    monkeypatch.setitem(registry._FAMILIES, Wider.name, Wider)
    ds = load_dataset("synthetic", n_train=200, n_test=150, n_features=6)
    model = SVC(C=1.0, gamma="scale").fit(ds.X_train, ds.y_train)
    result = reproduce_dataset("synthetic", dataset=ds, model=model, quick=True)
    rows = result.tradeoff[result.tradeoff.method == Wider.name]
    constant = result.tradeoff[result.tradeoff.method == "constant"]
    assert len(rows) == len(constant) > 0
    # z + 1 in the wider family is z in the constant one
    shifted = constant.set_index(constant.z.round(2))
    for row in rows[rows.z <= 5.0].itertuples():
        assert row.stop_error == pytest.approx(shifted.stop_error[round(row.z + 1.0, 2)])
    assert Wider.name in result.summary["savings"]["0.01"]["family_fractions"]
    bottom = figure4(result.tradeoff, result.pr, result.summary)[1]
    assert any(el.label == f"{Wider.name} family (z from 6 to −6)" for el in bottom)


# ----------------------------------------------------------------------------- architecture

EXPERIMENT_MODULES = sorted(
    [
        *(ROOT / "attentive" / "experiments").glob("*.py"),
        *(ROOT / "attentive" / "plots").glob("*.py"),
    ]
)
PRIVATE = {"boundaries", "evaluation", "batch", "walk", "calibration", "outcome", "terms"}


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "attentive":
                names.update(f"attentive.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", EXPERIMENT_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_experiments_use_the_public_api_only(path):
    private = {
        name
        for name in _imported_modules(path)
        if name.startswith("attentive.") and name.split(".")[1] in PRIVATE
    }
    assert not private, f"{path.name} imports {sorted(private)}"


def test_the_import_check_sees_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from attentive.boundaries import constant_boundary\nfrom attentive import walk\n"
    )
    assert {"attentive.boundaries", "attentive.walk"} <= _imported_modules(bad)


def test_no_panel_and_no_holoviews_until_figures_are_drawn():
    """The experiments import HoloViews only to draw; the plots module never imports Panel itself
    (HoloViews' plotting packages do, when a figure is first drawn)."""
    code = (
        "import sys, attentive.experiments, attentive.experiments.cli; "
        "assert 'holoviews' not in sys.modules and 'panel' not in sys.modules; "
        "import attentive.plots; assert 'panel' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    for path in EXPERIMENT_MODULES:
        assert not any(name.split(".")[0] == "panel" for name in _imported_modules(path)), path


def test_there_is_no_second_tau_grid_or_algorithm_1():
    """The τ grid is AttentiveSweep.default_taus and the scores the estimator's."""
    source = "\n".join(p.read_text() for p in EXPERIMENT_MODULES)
    assert "default_taus(" in source and 'stopped_score="boundary"' in source
    for needle in ("np.linspace(low", "np.quantile(", ".any(axis=1)", "minimum.accumulate"):
        assert needle not in source
