"""attentive.scale and ``python -m attentive score``: Dask results equal in-memory evaluation.

Every test compares with ``clf.evaluate(X)`` on the whole matrix in memory, row for row: labels,
positive, terms evaluated, stops and sides exactly; decisions to 1e-12 (the core's sums run over
a whole batch, so their last bits depend on which rows share it). The classifiers walk their
rule (``early_stopping=True``): with "auto", whether to walk or evaluate every term is chosen per
call from that call's rows, so a block of 97 rows may walk where the whole matrix does not.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, make_classification
from sklearn.svm import SVC, LinearSVC

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import dask
import dask.array as da
import dask.dataframe as dd
import skops.io as sio
from distributed import Client

from attentive import AttentiveClassifier
from attentive.cli import main
from attentive.errors import (
    DataError,
    FeatureMismatchError,
    InvalidParameterError,
    UntrustedModelError,
)
from attentive.models import save_model
from attentive.scale import (
    COLUMNS,
    load_classifier,
    local_cluster,
    read_input,
    score_dask,
    score_file,
    scores_meta,
    write_scores,
)

pytestmark = pytest.mark.slow


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    with local_cluster(2) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def dense_problem():
    X, y = make_classification(1600, 12, n_informative=6, random_state=0)
    clf = AttentiveClassifier(SVC(kernel="rbf", C=0.5), random_state=0, early_stopping=True)
    clf = clf.fit(X[:600], y[:600])
    return clf, X[600:]


@pytest.fixture(scope="module")
def sparse_problem():
    rng = np.random.default_rng(1)
    X = sp.random(2400, 300, density=0.03, format="csr", random_state=rng)
    w = rng.normal(size=300)
    y = (X @ w > np.median(X @ w)).astype(int)
    # Walks (early_stopping=True): the stops and sides must travel through Dask too.
    clf = AttentiveClassifier(LinearSVC(C=1.0), random_state=0, early_stopping=True)
    clf = clf.fit(X[:800], y[:800])
    return clf, X[800:].tocsr()


def assert_same_as_in_memory(scores: pd.DataFrame, clf, X) -> None:
    expected = clf.evaluate(X)
    assert list(scores.columns) == list(COLUMNS)
    assert len(scores) == X.shape[0]
    for column, attribute in COLUMNS.items():
        got, want = scores[column].to_numpy(), np.asarray(getattr(expected, attribute))
        if column == "decision":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(got, want, err_msg=column)
    # the check must be able to fail: the model does stop walks on these rows
    assert expected.stopped.any()


def blocks(X, row_chunks, col_chunks=None):
    """A dask array of X with exactly these row chunks (zeros allowed) and column chunks."""
    cols = col_chunks or (X.shape[1],)
    return da.from_array(X, chunks=(tuple(row_chunks), tuple(cols)), asarray=False)


# -- score_dask -----------------------------------------------------------------------------------
CHUNKINGS = {
    "one block": lambda m: [m],
    "uneven with an empty block": lambda m: [1, 0, 333, m - 1 - 333 - 250, 250, 0],
    "many small": lambda m: [97] * (m // 97) + [m % 97],
}


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=list(CHUNKINGS))
def test_dense_blocks_equal_in_memory_evaluation(client, dense_problem, chunking):
    clf, X = dense_problem
    chunks = CHUNKINGS[chunking](X.shape[0])
    scores = score_dask(clf, blocks(X, chunks)).compute()
    assert_same_as_in_memory(scores, clf, X)
    np.testing.assert_array_equal(scores.index, np.arange(X.shape[0]))


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=list(CHUNKINGS))
def test_sparse_blocks_chunked_along_columns_equal_in_memory_evaluation(
    client, sparse_problem, chunking
):
    clf, X = sparse_problem
    chunks = CHUNKINGS[chunking](X.shape[0])
    darr = blocks(X, chunks, col_chunks=(100, 150, 50))
    assert isinstance(darr._meta, sp.spmatrix | sp.sparray)
    scores = score_dask(clf, darr).compute()
    assert_same_as_in_memory(scores, clf, X)


@pytest.fixture(scope="module")
def sketched_problem():
    """A sketched rule (SPEC §3b): each block starts its walks at the sketch's score."""
    X, y = make_classification(1600, 12, n_informative=6, random_state=0)
    clf = AttentiveClassifier(
        SVC(kernel="rbf", C=0.5),
        boundary="sketched-regression",
        side="both",
        sketch=(4, 16),
        random_state=0,
        early_stopping=True,
    )
    return clf.fit(X[:600], y[:600]), X[600:]


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=list(CHUNKINGS))
def test_a_sketched_rule_in_blocks_equals_in_memory_evaluation(client, sketched_problem, chunking):
    clf, X = sketched_problem
    assert clf.boundary_.params["walk"] == "sketched"
    scores = score_dask(clf, blocks(X, CHUNKINGS[chunking](X.shape[0]))).compute()
    assert_same_as_in_memory(scores, clf, X)
    # In memory, the sketched walk is what was walked: its stops differ from the plain walk's.
    plain = clf.with_rule("regression", z=clf.boundary_.params["z"]).evaluate(X)
    assert (plain.n_evaluated != scores["n_evaluated"].to_numpy()).any()


def test_dataframe_partitions_with_feature_names_and_an_empty_one(client):
    X, y = make_classification(900, 6, random_state=3)
    names = [f"x{i}" for i in range(6)]
    frame = pd.DataFrame(X, columns=names)
    clf = AttentiveClassifier(SVC(kernel="rbf"), random_state=1, early_stopping=True)
    clf = clf.fit(frame[:300], y[:300])
    test = frame[300:]
    # an empty partition in the middle (the index is kept from the input)
    parts = [test.iloc[:200], test.iloc[:0], test.iloc[200:]]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=test.iloc[:0])
    scores = score_dask(clf, ddf).compute()
    assert_same_as_in_memory(scores, clf, test)
    np.testing.assert_array_equal(scores.index, test.index)


def test_a_dataframe_without_the_models_features_is_refused_before_computing(dense_problem):
    """By name for a classifier fitted with names (the missing ones named), by count without;
    nothing is computed (no client needed)."""
    clf0, X = dense_problem
    names = [f"x{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    named = AttentiveClassifier(SVC(), random_state=0).fit(frame[:300], clf0.predict(X[:300]))
    renamed = dd.from_pandas(frame.rename(columns={"x0": "zzz"}), npartitions=2)
    with pytest.raises(
        FeatureMismatchError, match=r"lacks 1 of the classifier's \d+ features \('x0'\)"
    ):
        score_dask(named, renamed)
    wider = dd.from_pandas(frame.assign(extra=0.0), npartitions=2)
    with pytest.raises(FeatureMismatchError, match=r"has \d+ columns, but the classifier"):
        score_dask(clf0, wider)


def test_meta_is_explicit_and_matches_computed_blocks_for_string_classes(client, dense_problem):
    clf_int, X = dense_problem
    y = np.where(clf_int.predict(X) == 1, "spam", "ham")
    clf = AttentiveClassifier(SVC(kernel="rbf"), random_state=0, early_stopping=True)
    clf = clf.fit(X[:500], y[:500])
    lazy = score_dask(clf, blocks(X, [500, 0, X.shape[0] - 500]))
    computed = lazy.compute()
    assert computed.dtypes.to_dict() == scores_meta(clf).dtypes.to_dict()
    assert lazy._meta.dtypes.to_dict() == scores_meta(clf).dtypes.to_dict()
    assert_same_as_in_memory(computed, clf, X)
    assert set(computed["label"]) <= {"spam", "ham"}


def test_parallel_post_fit_predicts_like_the_classifier(client, sparse_problem):
    pytest.importorskip("dask_ml")
    from dask_ml.wrappers import ParallelPostFit

    from attentive.scale import parallel_post_fit

    clf, X = sparse_problem
    darr = blocks(X, [400, 600, 600])
    expected = clf.predict(X)
    np.testing.assert_array_equal(parallel_post_fit(clf).predict(darr).compute(), expected)
    # unchanged inside the plain wrapper too (meta inferred by dask-ml)
    np.testing.assert_array_equal(ParallelPostFit(clf).predict(darr).compute(), expected)


# -- files and the command ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(tmp_path_factory, sparse_problem):
    """The sparse problem's classifier saved as the dashboard exports it, and its test rows."""
    clf, X = sparse_problem
    folder = tmp_path_factory.mktemp("exported")
    path = folder / "attentive_classifier.skops"
    sio.dump(clf, path)
    return path, clf, X


def test_load_classifier_reads_an_export_and_refuses_pickles_and_plain_models(tmp_path, exported):
    path, clf, X = exported
    loaded = load_classifier(path)
    np.testing.assert_array_equal(loaded.evaluate(X).n_evaluated, clf.evaluate(X).n_evaluated)
    pickled = tmp_path / "model.skops"
    pickled.write_bytes(b"\x80\x04" + b"x" * 20)
    with pytest.raises(UntrustedModelError, match="pickle"):
        load_classifier(pickled)
    plain = save_model(clf.estimator_, tmp_path / "plain.skops")
    with pytest.raises(Exception, match="not an AttentiveClassifier"):
        load_classifier(plain)


def _read_scores(output) -> pd.DataFrame:
    return pd.read_parquet(output).reset_index(drop=True)


def _score_as_libsvm(client, model_path, X, tmp_path, chunk_rows: int):
    """``X`` written as ``rows.libsvm`` and scored by the command line with the model at
    ``model_path`` on ``client``'s cluster (it must succeed); the output directory."""
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X, np.zeros(X.shape[0]), str(data), zero_based=False)
    out = tmp_path / "scores.parquet"
    argv = ["score", "--model", str(model_path), "--input", str(data), "--output", str(out)]
    argv += ["--chunk-rows", str(chunk_rows), "--scheduler", client.scheduler.address]
    assert main([*argv, "--no-progress"]) == 0
    return out


def test_score_command_on_libsvm_equals_in_memory(client, tmp_path, exported, capsys):
    path, clf, X = exported
    out = _score_as_libsvm(client, path, X, tmp_path, chunk_rows=333)
    assert_same_as_in_memory(_read_scores(out), clf, X)
    text = capsys.readouterr().out
    assert f"{X.shape[0]:,} rows in 5 chunks" in text
    summary = pd.read_json(out / "_summary.json", typ="series")
    expected = clf.evaluate(X)
    assert summary["rows"] == X.shape[0]
    assert summary["stopped_lower"] + summary["stopped_upper"] == expected.stopped.sum()
    assert summary["mean_evaluated_fraction"] == pytest.approx(expected.mean_evaluated_fraction)
    # Without a sketch, a row's work is its evaluated fraction, and the summary says no more.
    assert summary["work_fraction"] == pytest.approx(expected.mean_evaluated_fraction)
    assert "of a full evaluation a row" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.libsvm", "scores.parquet"]


def test_score_command_counts_a_sketched_rules_sketch_in_its_work(
    client, tmp_path, sketched_problem, capsys
):
    """``n_evaluated`` counts exact terms only; the sketch of the score is work too: the output's
    ``work`` column and the summary's mean work include it, as ``Evaluation.work`` does."""
    clf, X = sketched_problem
    path = tmp_path / "sketched.skops"
    sio.dump(clf, path)
    out = _score_as_libsvm(client, path, X, tmp_path, chunk_rows=300)
    scores = _read_scores(out)
    assert_same_as_in_memory(scores, clf, X)
    expected = clf.evaluate(X)
    assert expected.sketch_cost > 0
    # Each row's work, by hand: its sketch and its exact terms at their cost.
    by_hand = (
        expected.sketch_cost
        + (scores["n_evaluated"].to_numpy() / clf.n_terms_) * expected.walked_term_cost
    )
    np.testing.assert_allclose(scores["work"].to_numpy(), by_hand, rtol=1e-12)
    summary = pd.read_json(out / "_summary.json", typ="series")
    assert summary["work_fraction"] == pytest.approx(by_hand.mean(), rel=1e-12)
    assert summary["work_fraction"] > summary["mean_evaluated_fraction"] + expected.sketch_cost / 2
    text = capsys.readouterr().out
    assert f"work {by_hand.mean():.4f} of a full evaluation a row" in text


def test_score_file_on_csv_and_parquet_equals_in_memory(client, tmp_path, dense_problem):
    clf, X = dense_problem
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame.insert(0, "label", 0)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    frame.to_parquet(tmp_path / "rows.parquet", row_group_size=128)
    for name in ("rows.csv", "rows.parquet"):
        out = tmp_path / f"{name}.scores"
        summary = score_file(
            clf,
            tmp_path / name,
            out,
            scheduler=client.scheduler.address,
            chunk_rows=300,
            exclude=("label",),
            progress=False,
        )
        assert summary.chunks == 4 if name == "rows.csv" else summary.chunks == 3
        assert_same_as_in_memory(_read_scores(out), clf, X)


def test_a_parquet_directory_is_read_in_natural_order_and_every_file_checked(
    client, tmp_path, dense_problem
):
    """A user's trial: a directory of part.0 ... part.11 (as Dask writes it) was read as part.0,
    part.1, part.10, part.11, part.2, ...: row i of the output was not row i of
    dd.read_parquet(input), with nothing to realign them by. And only the first file's column
    types were checked: a later file's text column gave a raw ValueError after the cluster's
    logs, or was read as numbers where its text was numeric."""
    import dask.dataframe as dd

    clf, X = dense_problem
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    folder = tmp_path / "rows"
    dd.from_pandas(frame, npartitions=12).to_parquet(folder, write_index=False)
    assert sorted(p.name for p in folder.glob("*.parquet"))[2] == "part.10.parquet"
    out = tmp_path / "scores"
    score_file(clf, folder, out, scheduler=client.scheduler.address, progress=False)
    in_order = dd.read_parquet(folder).compute().to_numpy()
    np.testing.assert_array_equal(in_order, X)  # (Dask's order is the frame's)
    assert_same_as_in_memory(_read_scores(out), clf, X)
    # a later file with a column of text
    later = pd.read_parquet(folder / "part.11.parquet").astype({"f3": str})
    later.to_parquet(folder / "part.11.parquet", index=False)
    with pytest.raises(
        DataError, match=r"rows/part.11.parquet: column 'f3' holds (large_)?string values"
    ):
        score_file(clf, folder, tmp_path / "again", scheduler=client.scheduler.address)


@pytest.mark.parametrize("workers", ["-1", "0"])
def test_a_worker_count_below_one_is_refused_before_a_cluster_starts(
    tmp_path, exported, capsys, workers
):
    """``--workers -1`` started a cluster without workers that waited for ever; 0 meant one
    per core. Both are refused, as ``--chunk-rows`` below 1 is."""
    path, _, X = exported
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X[:5], np.zeros(5), str(data), zero_based=False)
    out = tmp_path / "scores.parquet"
    argv = ["score", "--model", str(path), "--input", str(data), "--output", str(out)]
    assert main([*argv, "--workers", workers, "--no-progress"]) == 1
    assert f"--workers must be ≥ 1, got {workers}" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(InvalidParameterError, match="n_workers must be a whole number ≥ 1"):
        local_cluster(int(workers))


def test_options_a_format_has_no_use_for_are_refused_not_ignored(tmp_path, exported):
    """``--header`` or ``--exclude`` with a LIBSVM file, an index base with CSV or Parquet: each
    was silently ignored."""
    _, clf, X = exported
    libsvm = tmp_path / "rows.libsvm"
    dump_svmlight_file(X[:20], np.zeros(20), str(libsvm), zero_based=False)
    frame = pd.DataFrame(X[:20].toarray()).add_prefix("f")
    frame.to_csv(tmp_path / "rows.csv", index=False)
    frame.to_parquet(tmp_path / "rows.parquet")
    with pytest.raises(InvalidParameterError, match=r"rows\.libsvm is read as LIBSVM: --header"):
        read_input(libsvm, clf, header=True)
    with pytest.raises(InvalidParameterError, match=r"--exclude \(exclude=\) does not apply"):
        read_input(libsvm, clf, exclude=("label",))
    for name in ("rows.csv", "rows.parquet"):
        with pytest.raises(InvalidParameterError, match=r"--zero-based.*the index base is LIBSVM"):
            read_input(tmp_path / name, clf, zero_based=False)
    with pytest.raises(InvalidParameterError, match=r"rows\.parquet is read as Parquet: --header"):
        read_input(tmp_path / "rows.parquet", clf, header=True)
    # Each as given to the format that uses it.
    assert read_input(libsvm, clf, zero_based=False).compute().shape[0] == 20
    assert len(read_input(tmp_path / "rows.csv", clf, header=True)) == 20


def test_a_wrong_option_is_refused_before_decompressing_or_starting_a_cluster(
    tmp_path, exported, monkeypatch
):
    """``score_file`` on a gzipped LIBSVM file with ``header=`` (a CSV option), or a chunk size
    below one: refused from the file's first bytes; before, the input was decompressed into a
    copy and a local cluster started first (refused only when the rows were read)."""
    import gzip

    from attentive.scale import files

    path, _, X = exported
    plain = tmp_path / "rows.libsvm"
    dump_svmlight_file(X[:20], np.zeros(20), str(plain), zero_based=False)
    packed = tmp_path / "rows.libsvm.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    started = []
    monkeypatch.setattr(files, "local_cluster", lambda *a, **k: started.append("cluster"))
    monkeypatch.setattr(files, "_decompressed_copy", lambda *a, **k: started.append("copy"))
    out = tmp_path / "scores.parquet"
    with pytest.raises(
        InvalidParameterError, match=r"rows\.libsvm\.gz is read as LIBSVM: --header"
    ):
        files.score_file(path, packed, out, header=True)
    with pytest.raises(InvalidParameterError, match="chunk_rows must be a positive integer"):
        files.score_file(path, packed, out, chunk_rows=0)
    assert started == [] and not out.exists()
    assert files.check_options(packed) == "libsvm"


def test_a_csv_file_whose_first_line_does_not_fit_the_model_is_refused_before_a_cluster(
    tmp_path, exported, monkeypatch
):
    """A CSV file without a header of another width than the model's, or with a header that
    lacks a feature, is refused from its first line: before, a local cluster was started first
    (4–5 s a run, and a worker's heartbeat traceback now and then) and the same error raised
    when the rows were read. A CSV file that fits still gets to the cluster."""
    from attentive.scale import files

    path, _, X = exported
    started = []

    class Started(Exception):
        pass

    def cluster(*args, **kwargs):
        started.append("cluster")
        raise Started

    monkeypatch.setattr(files, "local_cluster", cluster)
    out = tmp_path / "scores.parquet"
    narrow = tmp_path / "narrow.csv"
    pd.DataFrame(X[:5, :-1].toarray()).to_csv(narrow, index=False, header=False)
    with pytest.raises(DataError, match=r"narrow\.csv, line 1: .* fields, but the model expects"):
        files.score_file(path, narrow, out)
    named = tmp_path / "named.csv"
    pd.DataFrame(X[:5, :-1].toarray()).add_prefix("x").to_csv(named, index=False)
    with pytest.raises(DataError, match=r"named\.csv"):
        files.score_file(path, named, out, header=True)
    # a Parquet directory whose second file has a text column (its schema, not its rows)
    folder = tmp_path / "pq"
    folder.mkdir()
    frame = pd.DataFrame(X[:6].toarray()).add_prefix("x")
    frame[:3].to_parquet(folder / "part.0.parquet", index=False)
    frame[3:].astype({"x1": str}).to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(DataError, match=r"pq/part\.1\.parquet: column 'x1' holds"):
        files.score_file(path, folder, out)
    assert started == [] and not out.exists()
    rows = tmp_path / "rows.csv"
    pd.DataFrame(X[:5].toarray()).to_csv(rows, index=False, header=False)
    with pytest.raises(Started):
        files.score_file(path, rows, out)
    assert started == ["cluster"]


def test_a_failed_run_leaves_no_output(client, tmp_path, exported):
    path, _, X = exported
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X, np.zeros(X.shape[0]), str(data), zero_based=False)
    with open(data, "a") as f:
        f.write("0 5:1.0 not-a-pair\n")  # the last chunk cannot be parsed
    out = tmp_path / "scores.parquet"
    with pytest.raises(DataError, match=r"rows\.libsvm"):
        score_file(path, data, out, scheduler=client.scheduler.address, chunk_rows=500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.libsvm"]


def test_killing_a_worker_mid_run_still_gives_the_full_correct_output(tmp_path, dense_problem):
    clf, X = dense_problem
    X = np.tile(X, (6, 1))  # 6,000 rows in 60 chunks: long enough to kill a worker mid-run
    rows = tmp_path / "rows.csv"
    pd.DataFrame(X).add_prefix("x").to_csv(rows, index=False)
    out = tmp_path / "scores.parquet"
    with local_cluster(2) as cluster, Client(cluster) as c:
        pids = list(c.run(os.getpid).values())
        scores = score_dask(clf, read_input(rows, clf, chunk_rows=100))
        result, errors = {}, []

        def write():
            try:
                result["summary"] = write_scores(scores, out, n_terms=clf.n_terms_, client=c)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 60
        parts_at_kill = 0
        while time.monotonic() < deadline and not parts_at_kill:
            tmp = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p.is_dir()]
            parts_at_kill = len(list(tmp[0].glob("part-*.parquet"))) if tmp else 0
            time.sleep(0.01)
        os.kill(pids[0], signal.SIGKILL)
        writer.join(120)
        assert not errors, errors
        assert 0 < parts_at_kill < 60, "the worker was not killed mid-run"
        assert pids[0] not in c.run(os.getpid).values()
    assert result["summary"].rows == X.shape[0]
    assert len(list(out.glob("part-*.parquet"))) == 60
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no half-written part
    assert_same_as_in_memory(_read_scores(out), clf, X)


def test_a_part_interrupted_mid_write_is_invisible_to_parquet_readers(tmp_path, monkeypatch):
    """A worker killed between writing a part's temporary file and renaming it leaves that file
    behind; its hidden name keeps it out of every reader of the directory."""
    import pandas as pd

    from attentive.scale import writing

    frame = pd.DataFrame(
        {
            "decision": [0.5, -1.0],
            "positive": [True, False],
            "n_evaluated": [3, 10],
            "stopped": [True, False],
            "stop_side": [1, 0],
            "work": [0.3, 1.0],
        }
    )
    writing._write_part(frame, str(tmp_path / "part-000000.parquet"))

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(writing.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        writing._write_part(frame, str(tmp_path / "part-000001.parquet"))
    monkeypatch.undo()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers and all(name.startswith(".") for name in leftovers)
    assert len(pd.read_parquet(tmp_path)) == 2  # the finished part only


def test_the_run_s_own_workers_keep_a_data_error_and_a_closing_heartbeat_out_of_their_log():
    """The filter the run's own workers take (:class:`attentive.scale.quiet.QuietDataErrors`):
    a chunk's DataError (the run tells it once) and a heartbeat that finds the scheduler gone
    (the cluster closing) are dropped; any other report is kept."""
    import logging

    from attentive.scale.quiet import _worth_logging

    def record(msg, *args):
        return logging.LogRecord("distributed.worker", logging.ERROR, "w.py", 1, msg, args, None)

    bad_row = "DataError('rows.csv, line 3: not a number')"
    assert not _worth_logging(record("Compute Failed\nKey: %s\nException: %s", "k", bad_row))
    assert not _worth_logging(record("Failed to communicate with scheduler during heartbeat."))
    assert _worth_logging(record("Compute Failed\nKey: %s\nException: %s", "k", "ValueError()"))
    assert _worth_logging(record("Worker %s restarted", "tcp://127.0.0.1:1"))
