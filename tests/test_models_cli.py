"""The ``datasets`` and ``train`` commands, run through attentive's own CLI entry point."""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from attentive.cli import main
from attentive.data import clear_cache
from attentive.models.cli import elapsed_line
from attentive.serve import free_port


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def test_datasets_list(tmp_path, capsys):
    assert main(["datasets", "list", "--data-home", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    states = {line.split()[0]: line.split()[1] for line in lines}
    assert states["digits-2v5"] == "offline" and states["gisette"] == "download"


def test_datasets_info(tmp_path, capsys):
    assert main(["datasets", "info", "breast-cancer", "--data-home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "breast-cancer: 398 train / 171 test, 30 dense features" in out


def test_datasets_info_describes_what_is_not_downloaded_without_downloading(
    tmp_path, capsys, monkeypatch
):
    """info reads what is here: a dataset not downloaded is described from the registry and
    the download named (it tried every mirror and failed offline, or fetched it silently
    online); with no names it describes every dataset and succeeds offline. list takes no
    names (it ignored them)."""
    from attentive.data import registry

    def no_network(*args, **kwargs):
        raise AssertionError("info must not download")

    monkeypatch.setattr(registry, "fetch", no_network)
    assert main(["datasets", "info", "mnist-2v5", "--data-home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mnist-2v5: not downloaded yet (4 file(s) into" in out
    home = shlex.quote(str(tmp_path))
    assert f"python -m attentive datasets download mnist-2v5 --data-home {home})" in out
    # The download it names takes the mirror this command was given.
    mirror = "http://127.0.0.1:9/my mirror/"
    assert (
        main(["datasets", "info", "mnist-2v5", "--data-home", str(tmp_path), "--mirror", mirror])
        == 0
    )
    out = capsys.readouterr().out
    assert f"datasets download mnist-2v5 --data-home {home} --mirror '{mirror}')" in out, out
    assert main(["datasets", "info", "--data-home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "breast-cancer: 398 train / 171 test" in out and "gisette: not downloaded yet" in out
    assert not any(tmp_path.iterdir())  # nothing fetched, nothing half-written
    assert main(["datasets", "list", "digits-2v5", "--data-home", str(tmp_path)]) == 1
    assert "datasets list takes no names" in capsys.readouterr().err
    # What is here is read as it is: no download asked for, even where one could be made.
    from attentive.data import cli

    asked = []
    real = cli.load_dataset
    monkeypatch.setattr(cli, "load_dataset", lambda *a, **k: asked.append(k) or real(*a, **k))
    assert main(["datasets", "info", "digits-2v5", "--data-home", str(tmp_path)]) == 0
    assert asked and not any(k["download"] for k in asked)


def test_unknown_dataset_is_a_clean_error(tmp_path, capsys):
    assert main(["datasets", "info", "nope", "--data-home", str(tmp_path)]) == 1
    assert "unknown dataset 'nope'; known datasets: digits-2v5" in capsys.readouterr().err


def test_train_then_load_from_cache(tmp_path, capsys):
    args = ["train", "digits-2v5", "--data-home", str(tmp_path), "--out", str(tmp_path / "m.skops")]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "training kind=rbf, C=1.0, gamma=scale on digits-2v5: done in" in first.err
    fingerprint = re.search(r"fingerprint ([0-9a-f]+)", first.out).group(1)
    assert (tmp_path / "m.skops").is_file()
    assert len(list((tmp_path / "models").glob("digits-2v5-rbf-*.skops"))) == 1
    assert main(args) == 0
    second = capsys.readouterr()
    assert "loading kind=rbf" in second.err and "training" not in second.err
    assert f"fingerprint {fingerprint}" in second.out
    # A damaged cached file is trained again, and the lines say so (it said "loading" only).
    (cached,) = (tmp_path / "models").glob("digits-2v5-rbf-*.skops")
    cached.write_bytes(cached.read_bytes()[:100])
    with pytest.warns(UserWarning, match="damaged cached model"):
        assert main(args) == 0
    third = capsys.readouterr()
    assert "training kind=rbf, C=1.0, gamma=scale on digits-2v5: done in" in third.err
    assert f"fingerprint {fingerprint}" in third.out
    # The saved file holds the bare model; the hint printed makes a classifier score takes.
    assert "wrap it first: AttentiveClassifier(FrozenEstimator(model)).fit(X_ref, y_ref)" in (
        second.out
    )
    from sklearn.frozen import FrozenEstimator

    from attentive import AttentiveClassifier
    from attentive.data import load_dataset
    from attentive.models import load_model, save_model
    from attentive.scale import load_classifier

    model = load_model(tmp_path / "m.skops")
    data = load_dataset("digits-2v5", data_home=tmp_path)
    clf = AttentiveClassifier(FrozenEstimator(model)).fit(data.X_train, data.y_train)
    save_model(clf, tmp_path / "clf.skops")
    loaded = load_classifier(tmp_path / "clf.skops")
    assert loaded.n_terms_ == len(model.support_)
    np.testing.assert_allclose(
        loaded.with_rule("full").decision_function(data.X_test),
        model.decision_function(data.X_test),
        rtol=1e-9,
        atol=1e-9,
    )


def test_train_refuses_gamma_for_a_model_without_one(tmp_path, capsys):
    args = ["train", "breast-cancer", "--kind", "linear-svc", "--gamma", "0.1", "--no-cache"]
    assert main([*args, "--data-home", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "--gamma applies to the rbf, poly, sigmoid kernels, not to --kind linear-svc" in err


def test_train_overrides(tmp_path, capsys):
    args = ["train", "breast-cancer", "--kind", "poly", "--gamma", "0.1", "--C", "2", "--no-cache"]
    assert main([*args, "--data-home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SVC (kind=poly, C=2.0, gamma=0.1)")
    assert not (tmp_path / "models").exists()


def test_train_out_that_cannot_be_a_file_is_refused_before_the_training(tmp_path, capsys):
    """A user's trial: --out naming a directory raised IsADirectoryError after the training and
    left a stray .part file beside it; under a file, NotADirectoryError. Refused first, in words,
    and nothing is left behind."""
    home = tmp_path / "home"
    base = ["train", "breast-cancer", "--no-cache", "--data-home", str(home)]
    (tmp_path / "afile").write_text("x")
    for out, said in (
        (tmp_path, "is a directory; a model is saved to a file"),
        (tmp_path / "afile" / "m.skops", "afile is a file, not a directory"),
    ):
        assert main([*base, "--out", str(out)]) == 1
        captured = capsys.readouterr()
        assert said in captured.err and "Traceback" not in captured.err
        assert "training" not in captured.out + captured.err  # (refused before it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # (no .part, no home)


def test_a_cache_that_cannot_be_written_is_warned_of_and_the_command_goes_on(tmp_path, capsys):
    """A review: save_model's own refusals (a models path that is a file) made train fail
    after the training, where a cache that could not be written was a warning."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").write_text("x")
    with pytest.warns(UserWarning, match="could not cache the model"):
        assert main(["train", "breast-cancer", "--data-home", str(home)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SVC (") and "cached at" not in out


def test_save_model_that_cannot_write_says_so_and_leaves_no_part(tmp_path, monkeypatch):
    from sklearn.svm import SVC

    from attentive.errors import DataError
    from attentive.models import persistence

    model = SVC().fit(np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2)

    def full(path, data):  # (part of the file written, then the disk full)
        with open(path, "wb") as f:
            f.write(data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(DataError, match=r"cannot write the model to .*m.skops: No space left"):
        persistence.save_model(model, tmp_path / "m.skops")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("gamma", ["inf", "1e400", "nan", "-1"])
def test_train_refuses_a_gamma_that_is_not_positive_and_finite(tmp_path, capsys, gamma):
    args = ["train", "breast-cancer", "--gamma", gamma, "--no-cache"]
    assert main([*args, "--data-home", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "gamma must be 'scale', 'auto' or a positive finite number" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("C", ["inf", "nan", "0", "-3"])
def test_train_refuses_a_C_that_is_not_positive_and_finite(tmp_path, capsys, monkeypatch, C):
    """C = inf was trained on (a hard margin libsvm may never finish); every C is refused before
    the data loads (a download, for most datasets)."""

    def no_loading(*args, **kwargs):
        raise AssertionError("the data was loaded before C was checked")

    monkeypatch.setattr("attentive.models.cli.load_dataset", no_loading)
    args = ["train", "breast-cancer", f"--C={C}", "--no-cache"]
    assert main([*args, "--data-home", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "C must be a positive finite number" in err
    assert "Traceback" not in err


def test_reproduce_out_that_is_a_file_is_refused_before_the_computation(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "digits-2v5").write_text("x")  # OUT/NAME a file (a review)
    for out in (tmp_path / "afile", tmp_path / "afile" / "sub", tmp_path / "res"):
        argv = ["reproduce", "--dataset", "digits-2v5", "--quick", "--out", str(out)]
        assert main([*argv, "--data-home", str(tmp_path / "home")]) == 1
        assert "--out names the folder the results go to" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "res"]


def test_train_classifier_saves_what_score_takes(tmp_path, capsys):
    """A user's trial: train --out saves a bare model, which score refuses; going from one to
    the other took Python. --classifier saves the calibrated classifier score takes: loaded,
    it is an AttentiveClassifier whose model was fitted on the fit part of the training rows
    (its support vectors are training rows none of which it held out), with a guarantee."""
    from attentive.data import load_dataset
    from attentive.estimator import calibration_split
    from attentive.scale import load_classifier

    path = tmp_path / "clf.skops"
    argv = ["train", "mnist-t10k-2v5", "--no-cache", "--data-home", str(tmp_path / "home")]
    assert main([*argv, "--classifier", str(path), "--delta", "0.02"]) == 0
    out = capsys.readouterr().out
    assert f"classifier saved to {path}" in out and "Disagreement ≤ δ" in out
    clf = load_classifier(path)
    ds = load_dataset("mnist-t10k-2v5")
    assert clf.calibration_.delta == 0.02 and not clf.calibration_.fallback
    _, X_cal, _, _ = calibration_split(ds.X_train, ds.y_train, delta=0.02, random_state=0)
    assert clf.calibration_.m == X_cal.shape[0]
    full = clf.with_rule("full").decision_function(ds.X_test[:50])
    np.testing.assert_allclose(full, clf.estimator_.decision_function(ds.X_test[:50]))
    assert main([*argv, "--classifier", str(tmp_path / "c2.skops"), "--delta", "1.5"]) == 1
    assert "delta" in capsys.readouterr().err


def test_train_refuses_options_that_would_do_nothing_or_overwrite_each_other(tmp_path, capsys):
    """A researcher's trial: --delta without --classifier was accepted and did nothing (a
    guarantee asked for and not given); --out and --classifier naming one file saved the model,
    said so, then overwrote it with the classifier. Both refused before any training."""
    home = tmp_path / "home"
    argv = ["train", "digits-2v5", "--no-cache", "--data-home", str(home)]
    assert main([*argv, "--delta", "0.05"]) == 1
    assert "--delta is the guarantee of the classifier --classifier FILE saves" in (
        capsys.readouterr().err
    )
    same = str(tmp_path / "same.skops")
    assert main([*argv, "--out", same, "--classifier", same]) == 1
    assert f"--out and --classifier name the same file, {same}" in capsys.readouterr().err
    assert not (tmp_path / "same.skops").exists() and not home.exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_elapsed_line_refreshes_one_line_on_a_terminal():
    stream = _Terminal()
    with elapsed_line("working", stream=stream, interval=0.01):
        time.sleep(0.05)
    assert re.fullmatch(
        r"(\rworking … \d+\.\d s)+\rworking: done in \d+\.\d s\n", stream.getvalue()
    )


def test_elapsed_line_writes_plain_lines_to_a_log():
    """A log file or a pipe gets no carriage returns: the message, then the total."""
    stream = io.StringIO()
    with elapsed_line("working", stream=stream, interval=0.01):
        time.sleep(0.05)
    assert re.fullmatch(r"working …\nworking: done in \d+\.\d s\n", stream.getvalue())


def test_serve_stops_on_sigterm_and_frees_its_port(tmp_path):
    """``python -m attentive serve`` is the server itself: a SIGTERM leaves nothing on the port."""
    port = free_port()
    env = {**os.environ, "ATTENTIVE_DATA": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attentive", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    try:
        deadline = time.monotonic() + 120
        while not listening():
            assert proc.poll() is None, "the server exited before listening"
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while listening() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not listening(), "a process still answers on the port after SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_train_help_names_every_mnist_pair_and_digit_against_the_rest(capsys):
    """The help listed four MNIST pairs; any pair or digit against the rest trains (a user's
    trial): the help says so, and the forms it names are datasets."""
    from attentive.data.registry import _entry

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "mnist-t10k-<a>v<b> for any two digits" in text
    assert "mnist-t10k-<a>vrest for a digit against the others" in text
    for name in ("mnist-t10k-1v7", "mnist-t10k-8vrest"):
        assert "real MNIST t10k" in _entry(name).description
