"""``python -m attentive score`` when things go wrong around it: nothing partial is left behind.

- An output location that cannot be written (a path through a file, a read-only file system, a
  directory the user may not write) or that fills up is a clear error, before or during the run,
  and leaves no directory under the output's name and no hidden temporary one.
- Ctrl-C mid-run (SIGINT to the command's whole process group, as a terminal sends it) stops the
  command with status 130, leaves no partial output and no running process.
- A worker killed mid-run still gives the full output: tests/test_scale.py.

A file system that is really full or read-only is a small tmpfs mounted for the test; where
mounting is not allowed (not root, or a container without the right) those cases are skipped,
and a full disk is also simulated in-process (every write of a part fails with ENOSPC).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.svm import SVC

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import psutil
import skops.io as sio
from distributed import Client

from attentive import AttentiveClassifier
from attentive.cli import main
from attentive.errors import OutputError
from attentive.scale import local_cluster, score_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A classifier saved as the dashboard exports it, and a CSV file of 6,000 rows for it."""
    X, y = make_classification(2600, 20, flip_y=0.3, random_state=0)
    clf = AttentiveClassifier(SVC(C=10), random_state=0).fit(X[:2000], y[:2000])
    folder = tmp_path_factory.mktemp("exported")
    sio.dump(clf, folder / "model.skops")
    rows = folder / "rows.csv"
    pd.DataFrame(np.tile(X[2000:], (10, 1))).add_prefix("x").to_csv(rows, index=False)
    return clf, folder / "model.skops", rows


def _hidden_leftovers(folder: Path, output: str = "scores.parquet") -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(f".{output}.")]


@pytest.fixture
def mount_tmpfs(tmp_path):
    """Mount a tmpfs with the given options on a fresh directory (unmounted after the test)."""
    mounted = []

    def mount(options: str) -> Path:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a file system needs root")
        target = tmp_path / f"fs{len(mounted)}"
        target.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in mounted:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


@pytest.fixture(scope="module")
def scheduler():
    """A one-worker cluster shared by the command runs below that get as far as scoring."""
    with local_cluster(1) as cluster:
        yield cluster.scheduler_address


def _score(model, rows, output, capsys, *extra) -> tuple[int, str]:
    argv = ["score", "--model", str(model), "--input", str(rows), "--output", str(output)]
    code = main([*argv, "--no-progress", *extra])
    return code, capsys.readouterr().err


# -- an output location that cannot be written ----------------------------------------------------
def test_an_output_through_a_file_is_refused_before_any_work(exported, tmp_path, capsys):
    _, model, rows = exported
    (tmp_path / "afile").write_text("not a directory")
    started = time.perf_counter()
    code, err = _score(model, rows, tmp_path / "afile" / "scores.parquet", capsys)
    assert code == 1
    assert err.startswith("error: cannot write") and "afile is not a directory" in err, err
    assert time.perf_counter() - started < 5  # refused up front: no cluster was started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_an_output_on_a_read_only_file_system_is_refused(exported, mount_tmpfs, capsys):
    _, model, rows = exported
    folder = mount_tmpfs("ro,size=64k")
    code, err = _score(model, rows, folder / "scores.parquet", capsys)
    assert code == 1
    assert "cannot write" in err and "the file system is read-only" in err, err
    assert list(folder.iterdir()) == []


# -- --overwrite replaces only an earlier run's output ---------------------------------------------
def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_overwrite_never_removes_the_input_or_a_directory_no_run_wrote(
    exported, tmp_path, monkeypatch, capsys
):
    """--overwrite named the input file, a project folder and the working directory: each is
    refused before any work, naming why, and every file stays as it was."""
    _, model, rows = exported
    victim = tmp_path / "victim.csv"
    victim.write_bytes(rows.read_bytes())
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "code.py").write_text("x = 1\n")
    # A folder that looks like a run's output but holds something else besides.
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "_summary.json").write_text("{}")
    (mixed / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    code, err = _score(model, victim, victim, capsys, "--overwrite")
    assert code == 1 and f"the output {victim} is the input {victim}" in err, err
    other = tmp_path / "other.csv"
    other.write_text("mine\n")
    before = _tree(tmp_path)
    for output, what in (
        (other, "a file"),
        (project, "a directory that no earlier run wrote"),
        (mixed, "a directory that no earlier run wrote"),
    ):
        code, err = _score(model, victim, output, capsys, "--overwrite")
        assert (
            code == 1
            and f"{output} exists and is {what}; --overwrite (overwrite=True from Python)" in err
        ), err
    code, err = _score(model, victim, Path("."), capsys, "--overwrite")
    assert code == 1 and "the output . is the input" in err and "holds it" in err, err
    code, err = _score(model, rows, Path("."), capsys, "--overwrite")  # (the input elsewhere)
    assert code == 1 and f"{tmp_path.resolve()} exists and is a directory that" in err, err
    assert _tree(tmp_path) == before


def test_overwrite_never_removes_what_an_earlier_output_came_to_hold_or_a_link_or_the_input(
    exported, tmp_path, scheduler, capsys
):
    """An earlier run's output that came to hold a hidden folder, a link to an earlier output,
    and an earlier output given as the input: each is refused and stays; an empty directory
    is replaced (nothing is lost)."""
    _, model, rows = exported
    extra = ("--chunk-rows", "3000", "--scheduler", scheduler)
    out = tmp_path / "scores.parquet"
    assert _score(model, rows, out, capsys, *extra)[0] == 0
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    before = _tree(tmp_path)
    code, err = _score(model, rows, out, capsys, *extra, "--overwrite")
    assert code == 1 and "is a directory that no earlier run wrote" in err, err
    code, err = _score(model, rows, link, capsys, *extra, "--overwrite")
    assert code == 1 and f"{link} exists and is a symbolic link" in err, err
    (out / ".git" / "HEAD").unlink()
    (out / ".git").rmdir()
    code, err = _score(model, out, out, capsys, *extra, "--overwrite")
    assert code == 1 and "is the input" in err, err
    assert _tree(tmp_path) == {
        k: v for k, v in before.items() if not k.startswith("scores.parquet/.git")
    }
    # The working directory, an earlier output itself, is not replaced under the user's shell.
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(out)
        code, err = _score(model, rows, Path("."), capsys, *extra, "--overwrite")
    assert code == 1 and "is the working directory" in err, err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _score(model, rows, empty, capsys, *extra, "--overwrite")[0] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(empty), pd.read_parquet(out))


def test_an_output_that_appears_during_the_run_is_left_as_it_is(tmp_path):
    """What exists at the output when the scores are put in place is checked again: without
    overwrite, or if it is not an earlier run's output, it stays and the run is refused."""
    from attentive.errors import InvalidParameterError
    from attentive.scale.writing import _put_in_place

    def run_dir(name):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "part-000000.parquet").write_bytes(b"new")
        (folder / "_summary.json").write_text("{}")
        return folder

    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    for overwrite in (False, True):
        tmp = run_dir(f"tmp{overwrite}")
        with pytest.raises(InvalidParameterError, match="appeared while the scores were computed"):
            _put_in_place(tmp, out, overwrite)
        assert _tree(out) == {"mine.txt": b"keep me"}
    earlier = run_dir("earlier")
    with pytest.raises(InvalidParameterError, match="appeared while"):
        _put_in_place(run_dir("tmp2"), earlier, False)
    _put_in_place(run_dir("tmp3"), earlier, True)
    assert sorted(_tree(earlier)) == ["_summary.json", "part-000000.parquet"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left aside


def test_overwrite_replaces_an_earlier_runs_output(exported, tmp_path, scheduler, capsys):
    _, model, rows = exported
    out = tmp_path / "scores.parquet"
    extra = ("--chunk-rows", "3000", "--scheduler", scheduler)
    assert _score(model, rows, out, capsys, *extra)[0] == 0
    first, scores = _tree(out), pd.read_parquet(out)
    code, err = _score(model, rows, out, capsys, *extra)
    assert code == 1 and "exists; pass --overwrite (overwrite=True from Python)" in err, err
    # "-" is no standard output here (it made a directory named "-": a user's trial).
    code, err = _score(model, rows, tmp_path / "-", capsys, *extra)
    assert code == 1 and "not to the standard output" in err, err
    assert not (tmp_path / "-").exists()
    code, err = _score(
        model, rows, out, capsys, "--chunk-rows", "2000", "--scheduler", scheduler, "--overwrite"
    )
    assert code == 0, err
    second = _tree(out)
    assert "_summary.json" in second and set(second) != set(first)  # (more parts: smaller chunks)
    pd.testing.assert_frame_equal(pd.read_parquet(out), scores)


def test_a_scheduler_that_cannot_be_reached_is_refused_by_name(exported, tmp_path, capsys):
    import dask

    _, model, rows = exported
    code, err = _score(model, rows, tmp_path / "a", capsys, "--scheduler", "notaurl")
    assert code == 1 and err.startswith("error: cannot connect to the Dask scheduler 'notaurl'")
    assert "tcp://127.0.0.1:8786" in err and "Traceback" not in err, err
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    started = time.perf_counter()
    # (Dask's own retries would take its connect timeout: refused at once, they do not start.)
    with dask.config.set({"distributed.comm.timeouts.connect": "20s"}):
        code, err = _score(
            model, rows, tmp_path / "b", capsys, "--scheduler", f"tcp://127.0.0.1:{port}"
        )
    assert time.perf_counter() - started < 15, "a refused port waited for Dask's timeout"
    assert "connection refused" in err, err
    assert code == 1 and "cannot connect to the Dask scheduler" in err and "Traceback" not in err, (
        err
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_in_a_directory_the_user_may_not_write_is_refused(exported, tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    _, model, rows = exported
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    code, err = _score(model, rows, locked / "scores.parquet", capsys)
    assert code == 1 and "permission denied" in err, err
    assert list(locked.iterdir()) == []


def test_a_disk_that_fills_up_mid_run_is_a_clear_error_and_leaves_nothing(
    exported, mount_tmpfs, scheduler, capsys
):
    _, model, rows = exported
    folder = mount_tmpfs("size=64k")  # room for a few of the 60 parts
    extra = ("--chunk-rows", "100", "--scheduler", scheduler)
    code, err = _score(model, rows, folder / "scores.parquet", capsys, *extra)
    assert code == 1
    assert "cannot write" in err and "the disk is full" in err, err
    assert "Nothing was written to the output" in err
    assert list(folder.iterdir()) == []  # no output, no temporary directory, no part


def test_a_full_disk_simulated_in_process_is_a_clear_error_and_leaves_nothing(
    exported, tmp_path, monkeypatch
):
    """The same with every write of a part failing with ENOSPC, on a cluster whose worker is a
    thread of this process (so that the patched writer is the one that runs)."""
    import pyarrow.parquet as pq

    clf, _, rows = exported
    real = pq.write_table
    written = []

    def write_table(table, where, **kwargs):
        if len(written) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device", where)
        written.append(where)
        return real(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_table)
    with local_cluster(1, processes=False, protocol="tcp") as cluster:
        with pytest.raises(
            OutputError, match=r"cannot write .*part-\d+\.parquet: the disk is full"
        ):
            score_file(
                clf,
                rows,
                tmp_path / "scores.parquet",
                scheduler=cluster.scheduler_address,
                chunk_rows=100,
                progress=False,
            )
    assert len(written) == 3  # three parts were written before the disk "filled"
    assert not (tmp_path / "scores.parquet").exists() and _hidden_leftovers(tmp_path) == []


def test_a_failed_run_leaves_an_existing_output_as_it_was(exported, tmp_path, scheduler, capsys):
    _, model, rows = exported
    out = tmp_path / "scores.parquet"
    extra = ("--chunk-rows", "3000", "--scheduler", scheduler)
    assert _score(model, rows, out, capsys, *extra)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    broken = tmp_path / "broken.csv"
    broken.write_text(rows.read_text() + "1,2,oops\n")
    code, err = _score(model, broken, out, capsys, "--overwrite", *extra)
    assert code == 1 and "broken.csv" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _hidden_leftovers(tmp_path) == []


# -- Ctrl-C -------------------------------------------------------------------------------------------
def _live_processes(group: int) -> list[psutil.Process]:
    out = []
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == group and process.info["status"] != "zombie":
                out.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return out


def test_ctrl_c_mid_run_leaves_no_partial_output_and_no_process(exported, tmp_path):
    _, model, rows = exported
    out = tmp_path / "scores.parquet"
    command = [sys.executable, "-m", "attentive", "score", "--model", str(model)]
    command += ["--input", str(rows), "--output", str(out), "--workers", "1", "--chunk-rows", "50"]
    run = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        parts = 0
        while time.monotonic() < deadline and not parts and run.poll() is None:
            tmp = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p.is_dir()]
            parts = len(list(tmp[0].glob("part-*.parquet"))) if tmp else 0
            time.sleep(0.02)
        assert parts, "the run never started writing"
        os.killpg(run.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, stderr.decode()
    assert stderr.decode().strip().endswith(f"interrupted: {out} was not written")
    assert "Traceback" not in stderr.decode()  # not from the workers either
    assert 0 < parts < 120, "interrupted mid-run"
    assert not out.exists() and _hidden_leftovers(tmp_path) == []
    deadline = time.monotonic() + 10
    while _live_processes(run.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _live_processes(run.pid) == []


def test_ctrl_c_on_a_shared_cluster_cancels_the_run_and_keeps_the_cluster(
    exported, tmp_path, monkeypatch
):
    """Interrupted from Python (KeyboardInterrupt in the thread waiting for parts): the parts
    still running are cancelled, the temporary directory removed, the cluster goes on serving."""
    import distributed

    clf, _, rows = exported
    real = distributed.as_completed

    def interrupted_after_two(futures, **kwargs):
        for i, future in enumerate(real(futures, **kwargs)):
            if i == 2:
                raise KeyboardInterrupt
            yield future

    monkeypatch.setattr(distributed, "as_completed", interrupted_after_two)
    out = tmp_path / "scores.parquet"
    with local_cluster(1, processes=False, protocol="tcp") as cluster:
        with pytest.raises(KeyboardInterrupt):
            score_file(clf, rows, out, scheduler=cluster.scheduler_address, chunk_rows=100)
        assert not out.exists() and _hidden_leftovers(tmp_path) == []
        with Client(cluster) as client:
            assert client.submit(sum, [1, 2]).result() == 3


def test_a_bad_row_is_told_once_without_the_workers_tracebacks(exported, tmp_path):
    """A chunk that cannot be read fails each of its tries on a worker of the run's own
    cluster; the user gets the run's one error line (file, line, column), not first a worker's
    "Compute Failed" traceback per try."""
    _, model, rows = exported
    bad = tmp_path / "rows.csv"
    lines = rows.read_text().splitlines(keepends=True)
    cells = lines[7].split(",")
    cells[1] = "nan"
    lines[7] = ",".join(cells)
    bad.write_text("".join(lines))
    out = tmp_path / "scores.parquet"
    command = [sys.executable, "-m", "attentive", "score", "--model", str(model), "--input"]
    command += [str(bad), "--output", str(out), "--workers", "1", "--no-progress"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert run.returncode == 1, run.stderr
    assert run.stderr.strip().splitlines() == [
        "error: rows.csv, line 8, column 'x1': the value is missing or NaN ('nan'); every "
        "feature needs a finite number"
    ], run.stderr
    assert not out.exists()
