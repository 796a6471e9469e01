"""The benchmark's corpus and its peer: the problems load as described, and scikit-learn-intelex
scores the same fitted model as scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.svm import SVC

from attentive.bench import _peer, _targets
from attentive.bench_corpus import CORPUS, load_problem


def test_the_peer_scores_the_same_model_as_scikit_learn():
    pytest.importorskip("sklearnex", reason="the bench extra (installed with the test extra)")
    p = load_problem("mnist-2v5", quick=True)
    model = SVC(gamma="scale").fit(p.X_train, p.y_train)
    peer = _peer(model, p.X_train[:300], p.y_train[:300])  # fitted on other rows, then given ours
    ours = model.decision_function(p.X_test)
    theirs = peer.decision_function(p.X_test)
    # The same support vectors, coefficients and γ, computed in float32 by oneDAL.
    np.testing.assert_allclose(theirs, ours, atol=1e-4 * np.abs(ours).max())
    assert np.mean(np.sign(theirs) == np.sign(ours)) > 0.99


def test_mnist_problems_are_float32_pixels_with_gamma_scale():
    p = load_problem("mnist-4v9-C10", quick=True)
    assert p.X_train.dtype == np.float32 and p.mnist_like
    assert p.model.get_params()["gamma"] == "scale" and p.model.get_params()["C"] == 10
    # pixels / 255 stored in float32: near the grid, not on it
    scaled = p.X_train.astype(np.float64) * 255
    assert np.abs(scaled - np.rint(scaled)).max() < 1e-4
    assert not np.array_equal(scaled, np.rint(scaled))
    rest = load_problem("mnist-8vrest", quick=True)
    assert set(np.unique(rest.y_train)) == {0, 1} and rest.y_train.mean() < 0.2


def test_corpus_names_every_kind_the_issue_asks_for():
    names = set(CORPUS)
    assert {f"mnist-{p}" for p in ("2v5", "4v9", "3v8", "7v9")} <= names
    assert {f"mnist-{p}-C10" for p in ("2v5", "4v9", "3v8", "7v9")} <= names
    assert {"mnist-8vrest", "mnist-8vrest-C10", "dense-40"} <= names
    assert {f"grid-{p}" for p in ("2v5", "4v9", "3v8", "7v9")} <= names
    assert {"mnist-2v5-std", "mnist-8vrest-std"} <= names  # a pipeline in front


def test_any_mnist_pair_or_digit_against_the_rest_loads_by_name():
    """Problems off the corpus, named as it names its own: the same kinds of data and model."""
    from sklearn.pipeline import Pipeline

    from attentive.data import load_dataset

    p = load_problem("mnist-1v7-C10", quick=True)
    ds = load_dataset("mnist-t10k-1v7")
    assert p.model.C == 10 and p.model.gamma == "scale" and p.mnist_like
    assert p.X_train.dtype == np.float32
    np.testing.assert_array_equal(p.X_train, np.asarray(ds.X_train, dtype=np.float32)[:600])
    rest = load_problem("mnist-3vrest-std", quick=True)
    assert isinstance(rest.model, Pipeline) and rest.y_train.mean() < 0.2
    # timed rows repeat the test set as the corpus's do (10x pairs, 2x against the rest)
    assert load_problem("mnist-0v6").X_test.shape[0] == 10 * ds_rows("mnist-t10k-0v6")
    pca = load_problem("mnist-2v5-C10-pca50", quick=True)
    assert isinstance(pca.model, Pipeline) and pca.model[0].n_components == 50
    assert pca.model[-1].C == 10 and pca.name == "mnist-2v5-C10-pca50"
    bad_names = ("mnist-1v7-C", "mnist-1v7-C0", "mnist-1v7-pca0", "mnist-1v7-pca785")
    for bad in ("mnist-3v3", "mnist-12v3", *bad_names, "mnist-1v7-std-pca5", "cifar-1v7"):
        with pytest.raises(ValueError, match="unknown problem"):
            load_problem(bad)


def ds_rows(name: str) -> int:
    from attentive.data import load_dataset

    return np.asarray(load_dataset(name).X_test).shape[0]


def test_the_bench_command_refuses_an_unknown_problem(capsys):
    from attentive.bench import main

    with pytest.raises(SystemExit):
        main(["--problems", "mnist-4v4"])
    assert "unknown problem 'mnist-4v4'" in capsys.readouterr().err


def test_the_peer_of_a_pipeline_scores_the_same_model():
    """A StandardScaler in front of the SVC: the peer is the pipeline's own transform, then
    scikit-learn-intelex's SVC holding the same support vectors (where it is installed)."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from attentive.bench import _peer

    p = load_problem("mnist-2v5-std", quick=True)
    assert isinstance(p.model, Pipeline) and p.mnist_like
    model = clone(p.model).fit(p.X_train, p.y_train)
    peer = _peer(model, p.X_train, p.y_train)
    if peer is None:
        pytest.skip("scikit-learn-intelex is not installed (the bench extra)")
    np.testing.assert_allclose(
        peer.decision_function(p.X_test), model.decision_function(p.X_test), rtol=1e-4, atol=1e-4
    )


def test_targets_follow_the_issue():
    seconds = {
        "full_1": 1.0,
        "predict_1": 0.3,
        "sklearnex_1": 1.2,
        "full": 1.0,
        "predict": 0.5,
        "sklearnex": 0.7,
    }
    r = {"seconds": seconds, "f": 0.2, "mnist_like": True, "walking_can_pay": True}
    t = _targets(r, with_peer=True)
    assert t["predict/full ≤ 1.05_1"][2] and t["predict/full ≤ f+0.15_1"][2]
    assert t["full/sklearnex ≤ 1_1"][2] and not t["full/sklearnex ≤ 1"][2]
    assert t["predict/sklearnex ≤ 1/1.5_1"][2] and not t["predict/sklearnex ≤ 1/1.5"][2]
    assert not t["predict/full ≤ f+0.15"][2]  # 0.5 > 0.35
    # Issue 35: predict at least twice as fast as the peer on every MNIST-like problem.
    assert t["predict/sklearnex ≤ 1/2_1"] == (0.25, 0.5, True)
    assert t["predict/sklearnex ≤ 1/2"][0] == pytest.approx(0.5 / 0.7)
    assert not t["predict/sklearnex ≤ 1/2"][2]
    r["f"] = 0.7  # f > 0.6 and > 0.4: only the 1.05 and peer targets remain
    assert set(_targets(r, with_peer=True)) == {
        "predict/full ≤ 1.05_1",
        "predict/full ≤ 1.05",
        "full/sklearnex ≤ 1_1",
        "full/sklearnex ≤ 1",
        "predict/sklearnex ≤ 1/2_1",
        "predict/sklearnex ≤ 1/2",
    }
    r["mnist_like"] = False  # the peer targets are for MNIST-like problems
    assert set(_targets(r, with_peer=True)) == {"predict/full ≤ 1.05_1", "predict/full ≤ 1.05"}


def test_the_benchmark_holds_blas_to_one_thread_and_gives_it_back():
    """The timed calls' thread limit (one controller, not a scan of the libraries per call)."""
    from threadpoolctl import threadpool_info

    from attentive.bench import _blas_limits

    def blas_threads():
        return {
            i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
        }

    before = blas_threads()
    limits = _blas_limits()
    with limits(1):
        assert set(blas_threads().values()) == {1}
    assert blas_threads() == before
    with limits(None):
        assert blas_threads() == before


def test_the_lines_show_the_declined_walk_and_the_pipeline_head():
    """Where `predict` evaluated in full, the walk predict declined is printed beside it, as a
    share of full; behind a pipeline, the head's transform alone, against predict and the peer."""
    from attentive.bench import _lines

    seconds = {"sklearn": 0.1, "sklearnex_1": 0.030, "sklearnex": 0.020}
    seconds |= {"full_1": 0.020, "predict_1": 0.019, "decision_1": 0.019, "walk_1": 0.016}
    seconds |= {"full": 0.012, "predict": 0.011, "decision": 0.011, "head_1": 0.006}
    r = {
        "seconds": seconds,
        "n_terms": 196,
        "n_test": 6730,
        "source": "rbf-grid",
        "family": "sketched-regression",
        "f": 0.017,
        "path": "full",
        "f_auto": 1.0,
        "disagreement": 0.0,
        "walking_can_pay": True,
        "targets": {},
    }
    lines = _lines("mnist-2v5-pca50", r, 2)
    one, two = lines[1], lines[2]
    assert one.endswith("the walk predict declined 16.0 ms (0.80 of full)")  # 16 / 20
    assert "walk predict declined" not in two  # not timed with two threads here
    assert lines[3] == (
        "  the pipeline's head alone, 1 thread: 6.0 ms (0.32 of predict) = 0.20 of sklearnex's "
        "whole call"
    )
    del seconds["walk_1"], seconds["head_1"]
    assert not any("declined" in line or "head alone" in line for line in _lines("x", r, 2))


def test_a_pipeline_run_times_its_head_alone(capsys, monkeypatch):
    """Behind a pipeline the benchmark times the head's transform alone, as the walk prepares
    the rows, and prints it against predict. What "head_1" runs is checked by what it returns
    (the PCA's output, not a score), not by its time against the others: a timing order in a
    unit test failed once on a busy machine (1.19 ms against 1.12)."""
    from attentive import bench
    from attentive.bench import main

    timed = {}
    real = bench._time_interleaved

    def keep(methods, rounds):
        timed.update(methods)
        return real(methods, rounds)

    monkeypatch.setattr(bench, "_time_interleaved", keep)
    argv = ["--quick", "--problems", "mnist-2v5-pca50", "--rounds", "1", "--keep-blas-env"]
    assert main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    t = json.loads(out[-1])["problems"]["mnist-2v5-pca50"]["seconds"]
    assert t["head_1"] > 0
    p = load_problem("mnist-2v5-pca50", quick=True)
    head = np.asarray(timed["head_1"]())
    assert head.shape == (p.X_test.shape[0], 50)  # the PCA's 50 components of every row
    scores = np.asarray(timed["full_1"]())
    assert scores.shape == (p.X_test.shape[0],)
    line = next(line for line in out if "the pipeline's head alone" in line)
    assert f"{t['head_1'] * 1e3:.1f} ms ({t['head_1'] / t['predict_1']:.2f} of predict)" in line


def test_a_quick_run_judges_no_target_and_names_why_a_model_has_no_peer(capsys):
    """``--quick`` runs small problems for a few rounds: its lines give the ratios without a
    verdict. A model that is not an SVC has no peer, and the line says so rather than that
    scikit-learn-intelex is missing."""
    from attentive.bench import main

    argv = ["--quick", "--problems", "synthetic-sparse", "--rounds", "1", "--keep-blas-env"]
    assert main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    text = "\n".join(out[:-1])
    assert "PASS" not in text and "FAIL" not in text
    assert "(quick run, not judged) predict/full ≤ 1.05_1" in text
    assert "none of the 2 targets is judged here" in out[-2]
    result = json.loads(out[-1])
    assert result["judged"] is False and result["passed"] is None
    # A sparse linear model takes the full path: the walk it declined is timed beside it.
    sparse = result["problems"]["synthetic-sparse"]
    assert sparse["path"] == "full" and sparse["f"] < 1
    declined = sparse["seconds"]["walk_1"] / sparse["seconds"]["full_1"]
    assert f"the walk predict declined {sparse['seconds']['walk_1'] * 1e3:.1f} ms" in text
    assert f"({declined:.2f} of full)" in text
    try:
        import sklearnex  # noqa: F401
    except ImportError:
        assert "sklearnex not installed" in text
    else:
        assert "no sklearnex peer for LinearSVC (the peer is timed for SVC only)" in text
        assert "not installed" not in text
