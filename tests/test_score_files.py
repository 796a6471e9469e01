"""``python -m attentive score`` on generated files: equal to in-memory evaluation, or a clear error.

Hypothesis writes CSV, LIBSVM and Parquet files of 0, 1 or many rows — with or without a header,
zero- or one-based, with missing trailing features, NaN / inf, non-numeric cells, CRLF line ends,
a byte-order mark, gzip — and scores each with the command line (``attentive.cli.main``, on a
two-worker cluster shared by the module, in chunks of random size). The matrix the file was
written from is evaluated in memory by ``clf.evaluate``; the outcome must be the same scores row
for row, or an error that names the file and what is wrong. Which files are refused is decided
here from the documented rules (docs/scale.md), not from the reader's code.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from sklearn.datasets import dump_svmlight_file, make_classification
from sklearn.svm import SVC

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

import skops.io as sio
from distributed import Client

from attentive import AttentiveClassifier
from attentive.cli import main
from attentive.data import load_user_file
from attentive.errors import DataError
from attentive.scale import COLUMNS, local_cluster
from attentive.scale.reading import check_columns

pytestmark = pytest.mark.slow

N_FEATURES = 4
NAMES = [f"f{i}" for i in range(N_FEATURES)]
BOM = b"\xef\xbb\xbf"
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def client():
    with local_cluster(2) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The same kind of model fitted without and with feature names, saved as exported."""
    X, y = make_classification(300, N_FEATURES, n_informative=3, n_redundant=0, random_state=0)
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for named in (False, True):
        data = pd.DataFrame(X, columns=NAMES) if named else X
        clf = AttentiveClassifier(SVC(C=0.5), random_state=0).fit(data, y)
        path = folder / f"model-{named}.skops"
        sio.dump(clf, path)
        out[named] = (clf, path)
    return out


def score(client, model_path, data: Path, *extra: str) -> tuple[int, str, Path]:
    """Run the command line; its exit code, stderr and output directory."""
    out = data.with_name("scores.parquet")
    argv = ["score", "--model", str(model_path), "--input", str(data), "--output", str(out)]
    argv += ["--scheduler", client.scheduler.address, "--no-progress", *extra]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue(), out


def _event(outcome: str) -> None:
    """Count outcomes for ``--hypothesis-show-statistics`` (outside Hypothesis: nothing)."""
    if currently_in_test_context():
        event(outcome)


def assert_scores_equal_in_memory(out: Path, clf, X) -> None:
    _event("scored, equal to in memory")
    scores = pd.read_parquet(out).reset_index(drop=True)
    expected = clf.evaluate(
        pd.DataFrame(X, columns=NAMES) if hasattr(clf, "feature_names_in_") else X
    )
    assert len(scores) == X.shape[0]
    for column, attribute in COLUMNS.items():
        got, want = scores[column].to_numpy(), np.asarray(getattr(expected, attribute))
        if column == "decision":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(got, want, err_msg=column)


def assert_refused(code: int, err: str, out: Path, *needed: str) -> None:
    _event("refused: " + re.sub(r"rows\.\w+(\.gz)?|line \d+|\d+|'[^']*'", "_", err)[7:60])
    assert code == 1, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for text in needed:
        assert text in err, (text, err)
    assert not out.exists()
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".scores.parquet")]
    assert leftovers == []


def assert_ambiguous_until_said(client, model_path, data: Path, clf, X, problem: str) -> None:
    """A file whose header line could be a row of data: refused naming ``problem`` and the
    flags; with ``--header``, scored as in memory."""
    code, err, out = score(client, model_path, data)
    assert_refused(code, err, out, problem, "--header or --no-header")
    code, err, out = score(client, model_path, data, "--header")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)


def write_bytes(path: Path, text: bytes, *, bom: bool, crlf: bool, compress: bool) -> Path:
    if crlf:
        text = text.replace(b"\n", b"\r\n")
    if bom:
        text = BOM + text
    if compress:
        path = path.with_name(path.name + ".gz")
        text = gzip.compress(text)
    path.write_bytes(text)
    return path


# -- the two files that went wrong ----------------------------------------------------------------
def test_a_libsvm_file_for_a_model_that_knows_its_features_by_name_is_refused_before_work(
    client, models, tmp_path
):
    """LIBSVM numbers its features. A model fitted on named columns got them by position with
    scikit-learn's "X does not have valid feature names" warnings, and one whose pipeline picks
    its columns by name (a ColumnTransformer) raised in every chunk, Dask retrying each, then a
    traceback (a user's trial). Both are refused before any work, as a CSV file without a header
    line is, saying what reads them; the same rows as a named CSV file score as in memory."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(200, N_FEATURES, n_informative=3, n_redundant=0, random_state=5)
    frame = pd.DataFrame(X, columns=NAMES)
    picks = make_pipeline(
        ColumnTransformer([("s", StandardScaler(), list(NAMES[:3]))]), SVC(gamma="scale")
    )
    by_columns = AttentiveClassifier(picks, random_state=0).fit(frame, y)
    by_columns_path = tmp_path / "by-columns.skops"
    sio.dump(by_columns, by_columns_path)
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    for clf, path in (models[True], (by_columns, by_columns_path)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no scikit-learn warning reaches the user)
            code, err, out = score(client, path, data, "--one-based")
        assert_refused(code, err, out, "rows.libsvm is LIBSVM", "by name", "f0", "header line")
        # Before any work: the check score_file makes before it starts a cluster refuses it.
        with pytest.raises(DataError, match="by name"):
            check_columns(data, clf)
    named = tmp_path / "rows.csv"
    frame.to_csv(named, index=False, float_format="%.17g")
    code, err, out = score(client, by_columns_path, named)
    assert code == 0, err
    assert_scores_equal_in_memory(out, by_columns, X)


def test_text_for_a_model_that_encodes_it_says_the_command_reads_numbers_only(
    client, models, tmp_path
):
    """A pipeline whose ColumnTransformer one-hot encodes a text column takes the file as it
    is (in memory); the command, which reads numbers only, blamed the file ("features must be
    numeric"). It now says what scores such a model. A model of numbers only is told no more."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y = make_classification(200, N_FEATURES, n_informative=3, n_redundant=0, random_state=5)
    frame = pd.DataFrame(X, columns=NAMES).assign(pen=np.resize(["blue", "black"], len(X)))
    encodes = ColumnTransformer(
        [("pen", OneHotEncoder(handle_unknown="ignore"), ["pen"]), ("x", "passthrough", NAMES)]
    )
    clf = AttentiveClassifier(make_pipeline(encodes, SVC(gamma="scale")), random_state=0)
    clf.fit(frame, y)
    assert clf.predict(frame).shape == (len(X),)  # (in memory, the frame is taken)
    path = tmp_path / "encodes.skops"
    sio.dump(clf, path)
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "column 'pen'", "ColumnTransformer", "from Python")
    # A number column of that model (passed through), a model of numbers only, and a
    # ColumnTransformer that only scales: the file is wrong, and is told no more.
    scales = ColumnTransformer([("x", StandardScaler(), NAMES)])
    scaling = AttentiveClassifier(make_pipeline(scales, SVC(gamma="scale")), random_state=0)
    sio.dump(scaling.fit(frame[NAMES], y), tmp_path / "scales.skops")
    for model, columns in [
        (path, [*NAMES, "pen"]),
        (models[True][1], NAMES),
        (tmp_path / "scales.skops", NAMES),
    ]:
        frame[columns].assign(**{NAMES[1]: "blue"}).to_csv(data, index=False)
        code, err, out = score(client, model, data)
        assert_refused(code, err, out, f"column {NAMES[1]!r}", "features must be numeric")
        assert "ColumnTransformer" not in err, (model, err)


def test_zero_based_file_from_dump_svmlight_file_defaults_is_never_read_shifted(
    client, models, tmp_path
):
    """scikit-learn's dump_svmlight_file writes zero-based indices; with the first feature zero
    in every row, index 0 never appears. It used to be read one-based: every feature shifted."""
    clf, path = models[False]
    X, y = make_classification(500, N_FEATURES, n_informative=3, n_redundant=0, random_state=4)
    X[:, 0] = 0.0
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X, y, str(data))  # the defaults: zero_based=True
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "rows.libsvm", "--zero-based", "--one-based", "zero_based=")
    code, err, out = score(client, path, data, "--zero-based", "--chunk-rows", "70")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)


def test_a_file_whose_header_states_its_base_is_read_as_it_says(client, models, tmp_path):
    """dump_svmlight_file(..., comment=...) writes '# Column indices are zero-based' (or
    one-based) above the rows. A zero-based file whose first feature is always zero reads either
    way by its indices; its header says which, and a flag that contradicts it is refused."""
    clf, path = models[False]
    X, y = make_classification(400, N_FEATURES, n_informative=3, n_redundant=0, random_state=8)
    X[:, 0] = 0.0
    X[:, -1] = 0.0  # neither index 0 nor the model's width appears: the indices cannot tell
    for zero_based, flag, other in ((True, "zero", "--one-based"), (False, "one", "--zero-based")):
        (tmp_path / flag).mkdir()
        data = tmp_path / flag / "rows.libsvm"
        dump_svmlight_file(X, y, str(data), zero_based=zero_based, comment="rows to score")
        assert f"# Column indices are {flag}-based".encode() in data.read_bytes()
        code, err, out = score(client, path, data, other)
        assert_refused(code, err, out, "rows.libsvm", f"Column indices are {flag}-based", other)
        code, err, out = score(client, path, data, "--chunk-rows", "70")
        assert code == 0, err
        assert_scores_equal_in_memory(out, clf, X)


def test_a_libsvm_file_scores_a_sketched_rule_as_in_memory(client, tmp_path):
    """A LIBSVM file is read as sparse rows; a model fitted on dense rows with a sketched rule
    takes their features from their non-zeros (it used to fail on every chunk)."""
    X, y = make_classification(700, N_FEATURES, n_informative=3, n_redundant=0, random_state=6)
    X[np.abs(X) < 0.3] = 0.0  # some zeros, as such files leave out
    clf = AttentiveClassifier(
        SVC(C=0.5), boundary="sketched-curved", sketch=(2, 8), early_stopping=True, random_state=0
    ).fit(X[:300], y[:300])
    out = _libsvm_scored(client, tmp_path, clf, X[300:], y[300:])
    assert pd.read_parquet(out)["n_evaluated"].min() < clf.n_terms_  # walks stopped


def _libsvm_scored(client, tmp_path, clf, X, y) -> Path:
    """``clf`` saved, ``(X, y)`` written one-based and scored in chunks of 90 rows by the command
    line: the scores are the in-memory ones (their file is returned)."""
    path = tmp_path / "model.skops"
    sio.dump(clf, path)
    data = tmp_path / "rows.libsvm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    code, err, out = score(client, path, data, "--one-based", "--chunk-rows", "90")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    return out


def test_a_libsvm_file_scores_a_pipeline_that_refuses_sparse_rows(client, tmp_path, monkeypatch):
    """A centring StandardScaler in front refuses the sparse rows a LIBSVM file is read as
    ("Cannot center sparse matrices"): each chunk is densified, a piece at a time, and scores
    as the dense rows do in memory (it used to fail on every chunk, with Dask's logs)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from attentive.scale import evaluate as scale_evaluate

    X, y = make_classification(700, N_FEATURES, n_informative=3, n_redundant=0, random_state=7)
    X[np.abs(X) < 0.3] = 0.0
    model = make_pipeline(StandardScaler(), SVC(C=0.5))
    clf = AttentiveClassifier(model, boundary="curved", side="both", random_state=0)
    clf.fit(X[:300], y[:300])
    _libsvm_scored(client, tmp_path, clf, X[300:], y[300:])
    # In memory too, in pieces of 7 rows: the same as the dense rows in one call.
    monkeypatch.setattr(scale_evaluate, "DENSE_VALUES", 7 * N_FEATURES)
    rows = sp.csr_matrix(X[300:])
    with pytest.raises(ValueError, match="sparse"):
        clf.evaluate(rows)
    frame = scale_evaluate._score_rows(clf, rows, pd.RangeIndex(400), n_jobs=1)
    expected = clf.evaluate(X[300:])
    np.testing.assert_array_equal(frame["n_evaluated"], expected.n_evaluated)
    np.testing.assert_allclose(frame["decision"], expected.decision, rtol=1e-12, atol=1e-12)


def test_small_csv_with_a_header_is_scored(client, models, tmp_path):
    """A header in a file shorter than one chunk used to be read as a row of data."""
    clf, path = models[False]
    X, _ = make_classification(600, N_FEATURES, n_informative=3, n_redundant=0, random_state=5)
    data = tmp_path / "rows.csv"
    pd.DataFrame(X, columns=[f"p{i}" for i in range(N_FEATURES)]).to_csv(data, index=False)
    code, err, out = score(client, path, data)  # one chunk of the default 100,000 rows
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)


def test_a_frame_labelled_by_wavelength_is_never_scored_a_line_off(client, tmp_path):
    """A user's trial: a frame whose column labels are wavelengths (400.0, 402.5, ...) written
    with df.to_csv(index=False), scored by a model fitted on an array: 41 rows came out for 40
    examples, the header scored as the first and every row one line off, exit status 0. It is
    refused as ambiguous; said, it is read as said."""
    X, y = make_classification(240, 12, n_informative=4, random_state=7)
    clf = AttentiveClassifier(SVC(C=0.5), random_state=0).fit(X[:200], y[:200])
    path = tmp_path / "model.skops"
    sio.dump(clf, path)
    frame = pd.DataFrame(X[200:], columns=[f"{400 + 2.5 * i:.1f}" for i in range(12)])
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    assert_ambiguous_until_said(client, path, data, clf, X[200:], "numbers in increasing order")
    # Rows each in order (sorted features), no header: the second line in the same order says
    # the file is data, and it is scored without a flag.
    (tmp_path / "sorted").mkdir()
    rows = np.sort(X[200:], axis=1)
    data = tmp_path / "sorted" / "rows.csv"
    pd.DataFrame(rows).to_csv(data, index=False, header=False)
    code, err, out = score(client, path, data)
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, rows)


def test_a_frame_of_reordered_columns_is_never_scored_a_line_off(client, models, tmp_path):
    """A review's trial: a frame without column names whose columns were reordered
    (``df[[3, 2, 1, 0]]``) written with df.to_csv(index=False) came out with one row more than
    it holds, its header scored as the first, exit status 0. It is refused as ambiguous; said,
    it is read as said."""
    clf, path = models[False]
    X, _ = make_classification(40, N_FEATURES, n_informative=3, n_redundant=0, random_state=8)
    order = list(range(N_FEATURES))[::-1]
    frame = pd.DataFrame(X)[order]
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    assert_ambiguous_until_said(client, path, data, clf, frame.to_numpy(), "in another order")


def test_a_frame_of_selected_columns_is_never_scored_a_line_off(client, models, tmp_path):
    """A user's trial: a frame whose columns are the numbers left after a selection (MNIST
    pixels less the constant ones: 33, 34, ..., 42, ...) written with df.to_csv(index=False),
    was scored with its header as a first row and every row one line off, exit status 0. It is
    refused as ambiguous; said, it is read as said; written with its index, the index is named."""
    clf, path = models[False]
    X, _ = make_classification(40, N_FEATURES, n_informative=3, n_redundant=0, random_state=6)
    labels = [3 + 2 * i + (i > 1) for i in range(N_FEATURES)]  # increasing, with gaps
    frame = pd.DataFrame(X, columns=labels)
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False)
    assert_ambiguous_until_said(client, path, data, clf, X, "whole numbers in increasing order")
    (tmp_path / "indexed").mkdir()
    indexed = tmp_path / "indexed" / "rows.csv"  # (its scores beside it)
    frame.to_csv(indexed)
    code, err, out = score(client, path, indexed)
    assert_refused(code, err, out, "with its index first", "--exclude 'Unnamed: 0'")
    code, err, out = score(client, path, indexed, "--header")
    assert_refused(code, err, out, "its first column has no name", "--exclude 'Unnamed: 0'")
    code, err, out = score(client, path, indexed, "--header", "--exclude", "Unnamed: 0")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)


def test_a_frozen_models_names_decide_the_columns_read_by_every_path(client, tmp_path):
    """A classifier fitted on arrays around a frozen model fitted on a frame reads files and
    frames by that model's names, as its predict does: a file or a frame with the columns in
    another order is refused by score and read by name by score_dask (a review found both
    reading them by position, labels off on ~1/3 of the rows, while predict refused them)."""
    import dask.dataframe as dd
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from attentive.scale import score_dask

    X, y = make_classification(300, N_FEATURES, n_informative=3, n_redundant=0, random_state=1)
    frame = pd.DataFrame(X, columns=NAMES)
    model = LogisticRegression().fit(frame, y)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        clf = AttentiveClassifier(FrozenEstimator(model), early_stopping=False).fit(X, y)
    path = tmp_path / "clf.skops"
    sio.dump(clf, path)
    reversed_ = frame[NAMES[::-1]]
    data = tmp_path / "reversed.csv"
    reversed_.to_csv(data, index=False)
    code, err, _ = score(client, path, data)
    assert code == 1 and "has the model's features in another order" in err, err
    data = tmp_path / "named.csv"
    frame.to_csv(data, index=False)
    code, err, out = score(client, path, data)
    assert code == 0, err
    np.testing.assert_array_equal(pd.read_parquet(out)["label"].to_numpy(), model.predict(X))
    scores = score_dask(clf, dd.from_pandas(reversed_, npartitions=2)).compute()
    np.testing.assert_array_equal(scores["label"].to_numpy(), model.predict(frame))


@pytest.mark.parametrize("sep", [";", "|", "tab"])
@pytest.mark.parametrize("header", [True, False])
def test_a_csv_file_with_another_separator_scores_with_sep(client, models, tmp_path, sep, header):
    """``--sep``: a semicolon-separated file (as some spreadsheets export it) was refused with
    no way to read it but to rewrite it; now it scores as the
    same rows with commas, with or without a header, in a file named .txt too. Without the
    option it is still refused, naming the separator it was read with."""
    clf, path = models[False]
    X, _ = make_classification(250, N_FEATURES, n_informative=3, n_redundant=0, random_state=7)
    char = "\t" if sep == "tab" else sep
    frame = pd.DataFrame(X, columns=[f"p{i}" for i in range(N_FEATURES)])
    data = tmp_path / "rows.txt"
    frame.to_csv(data, index=False, sep=char, header=header, float_format="%.17g")
    code, err, out = score(client, path, data, "--sep", sep, *(() if header else ("--no-header",)))
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    named = data.rename(tmp_path / "rows.csv")
    shutil.rmtree(out)
    code, err, out = score(client, path, named, *(() if header else ("--no-header",)))
    assert_refused(code, err, out, "--sep")


def test_sep_is_refused_where_it_does_not_apply(client, models, tmp_path):
    """A separator that could be part of a number, or one given for a LIBSVM file, is refused
    before any work."""
    _, path = models[False]
    data = tmp_path / "rows.csv"
    data.write_text("1;2\n")
    for bad in (".", "-", "ab", "e", " ", "", "¦", "\x0b"):
        code, err, out = score(client, path, data, "--sep", bad)
        assert_refused(code, err, out, "the CSV separator must be one character")
    # Decimal commas are not read: the refusal says what they are.
    commas = tmp_path / "commas.csv"
    commas.write_text("p0;p1;p2;p3\n0,5;1,25;-0,75;2,0\n")
    code, err, out = score(client, path, commas, "--sep", ";", "--header")
    assert_refused(code, err, out, "'0,5' is not a number (a decimal comma")
    svm = tmp_path / "rows.svm"
    svm.write_text("1 1:0.5\n")
    code, err, out = score(client, path, svm, "--sep", ";")
    assert_refused(code, err, out, "--sep (sep=) does not apply", "a field separator is CSV's")


def test_files_a_spreadsheet_or_an_archiver_wrote_are_named_for_what_they_are(
    client, models, tmp_path
):
    """A data engineer's trial: a semicolon file with decimal commas was refused as a "mixed"
    header (asking --header / --no-header, which cannot help), Excel's ``sep=;`` first line was
    read as a header of two columns, and a ZIP archive, UTF-16 text and old Mac line ends (CR
    alone) as text that is "not UTF-8" or has no rows. Each is named, with what reads it; the
    file rewritten as told then scores as in memory."""
    clf, path = models[False]
    X, _ = make_classification(40, N_FEATURES, n_informative=3, n_redundant=0, random_state=11)
    frame = pd.DataFrame(X, columns=[f"p{i}" for i in range(N_FEATURES)])
    points = frame.to_csv(index=False, sep=";", header=False, float_format="%.17g")
    commas = points.replace(".", ",")
    data = tmp_path / "rows.csv"
    data.write_text(commas)
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "holds semicolons: pass --sep ';'", "decimal commas")
    assert "--header or --no-header" not in err
    code, err, out = score(client, path, data, "--sep", ";")
    assert_refused(code, err, out, "the first line", "decimal comma", "with a decimal point")
    data.write_text(points)  # as told: semicolons and points
    code, err, out = score(client, path, data, "--sep", ";", "--no-header")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    shutil.rmtree(out)
    # Excel's separator line, before a header; without it the file scores with --sep.
    named = frame.to_csv(index=False, sep=";", float_format="%.17g")
    data.write_text("sep=;\n" + named)
    code, err, out = score(client, path, data, "--sep", ";")
    assert_refused(code, err, out, "line 1: 'sep=;' is the line Excel writes", "remove the line")
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "remove the line, and pass --sep ';'")
    # A header of semicolons, read at commas: one column, and which separator it holds.
    data.write_text(named)
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "read as one column", "holds semicolons: pass --sep ';'")
    plain = frame.to_csv(index=False, float_format="%.17g")
    for name, content, needed in (
        ("utf16.csv", plain.encode("utf-16"), "is UTF-16 text"),
        ("utf16be.csv", plain.encode("utf-16-be"), "holds zero bytes"),
        ("utf32.csv", plain.encode("utf-32"), "is UTF-32 text"),
        ("mac.csv", plain.replace("\n", "\r").encode(), "carriage returns (CR) alone"),
        ("mac.libsvm", b"# rows\r1 1:0.5 2:1\r-1 1:2\r", "carriage returns (CR) alone"),
    ):
        data = tmp_path / name
        data.write_bytes(content)
        code, err, out = score(client, path, data)
        assert_refused(code, err, out, f"error: {name}", needed)
    data = tmp_path / "rows.zip.csv"
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("rows.csv", plain)
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "is a ZIP archive", "unzip it")
    # An upload is read by the same reader: the same words.
    labelled = frame.assign(label=np.arange(40) % 2)
    for content, needed in (
        (labelled.to_csv(index=False).encode("utf-16"), "is UTF-16 text"),
        (labelled.to_csv(index=False).replace("\n", "\r").encode(), "(CR) alone"),
        (labelled.to_csv(index=False, sep=";").replace(".", ",").encode(), "by semicolons"),
        (b"sep=,\n" + labelled.to_csv(index=False).encode(), "the line Excel writes"),
    ):
        with pytest.raises(DataError, match=re.escape(needed)):
            load_user_file(content, filename="up.csv")


# -- generated files ------------------------------------------------------------------------------
VALUES = st.one_of(
    st.just(0.0),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False, width=64),
    st.floats(-1e-3, 1e-3, allow_nan=False, allow_infinity=False),
)
BAD_CELLS = {
    "nan": ["nan", "NaN", "", "NA"],
    "inf": ["inf", "-inf", "1e400"],
    "text": ["abc", "1.2.3", "?"],
}


@st.composite
def matrices(draw):
    """A matrix of 0, 1 or many rows whose first or last column may be zero throughout."""
    n_rows = draw(st.sampled_from([0, 1, 2]) | st.integers(3, 60))
    X = np.array(
        [[draw(VALUES) for _ in range(N_FEATURES)] for _ in range(n_rows)], dtype=np.float64
    ).reshape(n_rows, N_FEATURES)
    zero = draw(st.sampled_from(["none", "first", "last", "both"]))
    if zero in ("first", "both"):
        X[:, 0] = 0.0
    if zero in ("last", "both"):
        X[:, -1] = 0.0
    return X


@st.composite
def faults(draw, n_rows: int):
    """At most one bad cell per row: (row, column, kind, token); kind "short" cuts the row."""
    if n_rows == 0 or draw(st.integers(0, 2)) > 0:  # two in three files are clean
        return []
    rows = draw(st.sets(st.integers(0, n_rows - 1), min_size=1, max_size=min(3, n_rows)))
    out = []
    for row in sorted(rows):
        kind = draw(st.sampled_from(["nan", "inf", "text", "short"]))
        column = draw(st.integers(1 if kind == "short" else 0, N_FEATURES - 1))
        token = draw(st.sampled_from(BAD_CELLS[kind])) if kind != "short" else ""
        out.append((row, column, kind, token))
    return out


def _csv_text(X, bad, header: bool, label: bool) -> tuple[bytes, int]:
    """CSV text and the file's line number of row 0."""
    cells = [[repr(v) for v in row] for row in X.tolist()]
    for row, column, kind, token in bad:
        cells[row] = cells[row][:column] if kind == "short" else cells[row]
        if kind != "short":
            cells[row][column] = token
    lines = [",".join((["1"] if label else []) + row) for row in cells]
    if header:
        lines.insert(0, ",".join((["label"] if label else []) + NAMES))
    return ("\n".join(lines) + "\n").encode() if lines else b"", 2 if header else 1


@given(data=st.data())
@SETTINGS
def test_generated_csv_files_score_as_in_memory_or_are_refused(client, models, data):
    X = data.draw(matrices(), "X")
    bad = data.draw(faults(X.shape[0]), "bad")
    named = data.draw(st.booleans(), "model with feature names")
    header = data.draw(st.booleans() if not named else st.just(True), "header")
    label = header and data.draw(st.booleans(), "label column")
    look = {k: data.draw(st.booleans(), k) for k in ("bom", "crlf", "compress")}
    chunk_rows = data.draw(st.integers(1, 70), "chunk rows")
    clf, model_path = models[named]
    text, first_line = _csv_text(X, bad, header, label)
    with tempfile.TemporaryDirectory() as folder:
        path = write_bytes(Path(folder) / "rows.csv", text, **look)
        extra = ["--chunk-rows", str(chunk_rows)] + (["--exclude", "label"] if label else [])
        code, err, out = score(client, model_path, path, *extra)
        if X.shape[0] == 0:
            assert_refused(code, err, out, path.name)
        elif bad:
            assert_refused(code, err, out, path.name)
            first_row_text = not header and any(r == 0 and k == "text" for r, _, k, _ in bad)
            if first_row_text:  # a first line of names and numbers: say whether it is a header
                assert "first line" in err and "--no-header" in err
            else:
                lines = {first_line + r for r, *_ in bad}
                assert any(f"line {n}" in err for n in lines), (lines, err)
        else:
            assert code == 0, err
            assert_scores_equal_in_memory(out, clf, X)


def _libsvm_text(X, bad, zero_based: bool, comments: bool) -> tuple[bytes, list[int], set[int]]:
    """LIBSVM text (only non-zero values written), each row's line number and the feature
    indices written (0-based; a line cut short loses the pairs after its cut)."""
    lines, numbers, written = [], [], set()
    bad_at = {row: (column, kind, token) for row, column, kind, token in bad}
    for i, row in enumerate(X.tolist()):
        if comments and i % 7 == 3:
            lines.append(f"# {N_FEATURES + 9}:1 a comment whose index is not a feature")
        pairs = {j: repr(v) for j, v in enumerate(row) if v != 0.0}
        if i in bad_at:
            column, kind, token = bad_at[i]
            pairs[column] = {"nan": "nan", "inf": "inf", "text": token, "short": "1:"}[kind]
            if kind == "short":  # a line cut in the middle of a pair
                pairs = {j: v for j, v in pairs.items() if j < column} | {column: ""}
        base = 0 if zero_based else 1
        written |= set(pairs)
        tokens = [f"{j + base}:{v}" for j, v in sorted(pairs.items())]
        lines.append(" ".join(["1", *tokens]))
        numbers.append(len(lines))
    return ("\n".join(lines) + "\n").encode() if lines else b"", numbers, written


@given(data=st.data())
@SETTINGS
def test_generated_libsvm_files_score_as_in_memory_or_are_refused(client, models, data):
    X = data.draw(matrices(), "X")
    bad = data.draw(faults(X.shape[0]), "bad")
    zero_based = data.draw(st.booleans(), "written zero-based")
    said = data.draw(st.booleans(), "base said on the command line")
    look = {k: data.draw(st.booleans(), k) for k in ("bom", "crlf", "compress")}
    comments = data.draw(st.booleans(), "comment lines")
    chunk_rows = data.draw(st.integers(1, 70), "chunk rows")
    clf, model_path = models[False]
    text, line_of_row, written = _libsvm_text(X, bad, zero_based, comments)
    with tempfile.TemporaryDirectory() as folder:
        path = write_bytes(Path(folder) / "rows.libsvm", text, **look)
        extra = ["--chunk-rows", str(chunk_rows)]
        if said:
            extra.append("--zero-based" if zero_based else "--one-based")
        code, err, out = score(client, model_path, path, *extra)
        # The documented rule, from the indices written (a bad cell still writes its index; a
        # line cut short does not write those after the cut).
        index_zero = zero_based and 0 in written
        width_reached = not zero_based and N_FEATURES - 1 in written
        ambiguous = not said and written and not (index_zero or width_reached)
        if X.shape[0] == 0:
            assert_refused(code, err, out, path.name)
        elif ambiguous:
            assert_refused(code, err, out, path.name, "--zero-based", "--one-based")
        elif bad:
            assert_refused(code, err, out, path.name)
            lines = {line_of_row[r] for r, *_ in bad}
            assert any(f"line {n}" in err for n in lines), (lines, err)
        else:
            assert code == 0, err
            assert_scores_equal_in_memory(out, clf, X)


@given(data=st.data())
@SETTINGS
def test_generated_parquet_files_score_as_in_memory_or_are_refused(client, models, data):
    X = data.draw(matrices(), "X")
    named = data.draw(st.booleans(), "model with feature names")
    fault = data.draw(st.sampled_from(["none"] * 3 + ["nan", "inf", "text", "short"]), "fault")
    row_group = data.draw(st.integers(1, 40), "row group size")
    chunk_rows = data.draw(st.integers(1, 70), "chunk rows")
    codec = data.draw(st.sampled_from(["none", "snappy", "gzip"]), "compression")
    clf, model_path = models[named]
    frame = pd.DataFrame(X, columns=NAMES)
    if X.shape[0] and fault in ("nan", "inf"):
        row = data.draw(st.integers(0, X.shape[0] - 1), "bad row")
        frame.iloc[row, 1] = np.nan if fault == "nan" else -np.inf
    if fault == "text":
        frame["f2"] = frame["f2"].map(repr)  # a column of strings
    if fault == "short":
        frame = frame.drop(columns=["f3"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.parquet"
        frame.to_parquet(path, row_group_size=row_group, compression=codec)
        code, err, out = score(client, model_path, path, "--chunk-rows", str(chunk_rows))
        if fault == "short":  # the columns are checked first
            assert_refused(code, err, out, "rows.parquet", "f3" if named else "3 feature columns")
        elif X.shape[0] == 0:
            assert_refused(code, err, out, "rows.parquet", "no rows")
        elif fault == "text":
            assert_refused(code, err, out, "rows.parquet", "'f2'", "numeric")
        elif fault in ("nan", "inf"):
            assert_refused(code, err, out, "rows.parquet", f"row {row + 1}, column 'f1'")
        else:
            assert code == 0, err
            assert_scores_equal_in_memory(out, clf, X)


def test_a_row_group_far_larger_than_a_chunk_is_read_in_batches_and_told(
    client, models, tmp_path, monkeypatch
):
    """A file written as one row group (pandas' default up to a million rows) is one chunk
    whatever --chunk-rows says: it is decoded batch by batch (integer, nullable and boolean
    columns as pandas reads them) and the command says how to write smaller groups, in its own
    words (``warning: …``, as a terminal shows it)."""
    from attentive.scale import reading

    monkeypatch.setattr(reading, "PARQUET_BATCH_ROWS", 64)  # several batches in the group
    monkeypatch.setattr(reading, "LARGE_GROUP_BYTES", 1000)  # (the real floor: 256 MB)
    clf, model_path = models[True]
    rng = np.random.default_rng(3)
    n = 2000
    frame = pd.DataFrame(
        {
            "f0": rng.normal(size=n).astype(np.float32),
            "f1": pd.array(rng.integers(-3, 4, size=n), dtype="Int64"),
            "f2": rng.integers(0, 2, size=n).astype(bool),
            "f3": rng.normal(size=n),
        }
    )
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)  # one row group

    def shown(message, category, filename, lineno, file=None, line=None):
        # Python's own showwarning, which pytest replaces while a test runs.
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = shown
        code, err, out = score(client, model_path, path, "--chunk-rows", "100")
    assert code == 0, err
    assert err.startswith("warning: rows.parquet: a row group holds up to 2,000 rows, read as")
    assert "MB (float64)" in err and "row_group_size=100)" in err and err.count("\n") == 1
    read = pd.read_parquet(path).to_numpy(dtype=np.float64)
    assert_scores_equal_in_memory(out, clf, read)
    # (The cluster's workers read with the default batch; here, in this process, 64 rows.)
    chunk = reading._parquet_chunk(str(path), [0], NAMES, "rows.parquet", 1)
    np.testing.assert_array_equal(chunk.to_numpy(), read)
    assert list(chunk.columns) == NAMES and chunk.dtypes.eq(np.float64).all()
    shutil.rmtree(out)
    frame.to_parquet(path, row_group_size=100)  # the remedy: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, err, out = score(client, model_path, path, "--chunk-rows", "100")
    assert code == 0 and err == "", err
    frame.loc[7, "f1"] = pd.NA  # a null is a missing value, named
    frame.to_parquet(path)
    shutil.rmtree(out)
    with pytest.warns(UserWarning, match="a row group holds up to 2,000 rows"):
        code, err, out = score(client, model_path, path, "--chunk-rows", "100")
    assert_refused(code, err, out, "row 8, column 'f1'")


def test_a_headerless_file_whose_first_row_is_short_names_that_line(models, tmp_path):
    from attentive.errors import DataError
    from attentive.scale import read_input

    clf, _ = models[False]
    data = tmp_path / "rows.csv"
    data.write_text("\n1.5,2.5,3.5\n1,2,3,4\n")
    with pytest.raises(DataError, match=r"rows\.csv, line 2: 3 fields, but the model expects 4"):
        read_input(data, clf)


def test_exclude_on_a_headerless_file_says_it_needs_a_header_whatever_the_count(models, tmp_path):
    """An id column in front of the features and ``--exclude 0`` on a file without a header: the
    count (one field too many) was refused first, and ``--exclude`` never mentioned."""
    from attentive.errors import DataError
    from attentive.scale import read_input

    clf, _ = models[False]
    data = tmp_path / "rows.csv"
    for line in ("7,1.5,2.5,3.5,4.5\n", "1.5,2.5,3.5,4.5\n"):  # an id and 4 features; 4 features
        data.write_text(line * 3)
        with pytest.raises(DataError, match=r"no header line, so no column can be excluded"):
            read_input(data, clf, exclude=("0",))
    data.write_text("7,1.5,2.5,3.5,4.5\n" * 3)
    with pytest.raises(DataError, match=r"line 1: 5 fields, but the model expects 4"):
        read_input(data, clf)


def test_read_input_reads_compressed_text_chunk_by_chunk_and_refuses_a_truncated_file(
    client, models, tmp_path
):
    """From Python, a compressed file is read in place: each chunk decompresses up to its lines."""
    from attentive.errors import DataError
    from attentive.scale import read_input, score_dask

    clf, _ = models[False]
    X, _ = make_classification(50, N_FEATURES, n_informative=3, n_redundant=0, random_state=6)
    text = pd.DataFrame(X, columns=NAMES).to_csv(index=False).encode()
    data = tmp_path / "rows.csv.gz"
    data.write_bytes(gzip.compress(text))
    frame = read_input(data, clf, chunk_rows=7)
    assert frame.npartitions == 8
    np.testing.assert_array_equal(frame.compute().to_numpy(), X)
    scores = score_dask(clf, frame).compute().reset_index(drop=True)
    np.testing.assert_array_equal(scores["label"], clf.predict(X))
    data.write_bytes(gzip.compress(text)[:-30])
    with pytest.raises(DataError, match=r"rows\.csv\.gz: compressed file is truncated or corrupt"):
        read_input(data, clf, chunk_rows=7)


def test_every_file_of_a_parquet_directory_is_read_whatever_its_name(client, models, tmp_path):
    """A user's trial: only "*.parquet" was read, so part.1.pq (a Parquet name the docs list),
    PART.2.PARQUET and Hive's 000000_0 were dropped without a word and the output lost their
    rows. Hidden files (_SUCCESS, .crc) are still skipped; another file is named, not skipped."""
    clf, model_path = models[True]
    X, _ = make_classification(40, N_FEATURES, random_state=4)
    frame = pd.DataFrame(X, columns=NAMES)
    folder = tmp_path / "rows"
    (folder / "sub").mkdir(parents=True)
    names = ["part.0.parquet", "part.1.pq", "part.2.PARQUET", "part.3", "sub/part.4"]
    for i, name in enumerate(names):
        frame.iloc[8 * i : 8 * (i + 1)].to_parquet(folder / name)
    (folder / "_SUCCESS").write_text("")
    (folder / ".part.0.parquet.crc").write_bytes(b"\x00\x01")
    code, err, out = score(client, model_path, folder)
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    shutil.rmtree(out)
    (folder / "notes.txt").write_text("not rows")
    code, err, out = score(client, model_path, folder)
    assert_refused(code, err, out, "rows/notes.txt is not a readable Parquet file", "hidden")
    (folder / "notes.txt").unlink()
    (folder / "part.5").symlink_to(tmp_path / "gone.parquet")  # a broken link is named
    code, err, out = score(client, model_path, folder)
    assert_refused(code, err, out, "rows/part.5 is not a readable Parquet file")
    (folder / "part.5").unlink()
    (folder / "more").symlink_to(folder / "sub")  # a link to a folder: its files not read
    code, err, out = score(client, model_path, folder)
    assert_refused(code, err, out, "rows/more is a link to a folder")


def test_a_frame_with_integer_column_labels_scores_by_count(client, models, tmp_path):
    """pd.DataFrame(X).to_parquet(path), the usual dump of an array (its columns named 0, 1, …
    and stored as text), failed with a Dask traceback (a metadata mismatch, 0 against '0')."""
    clf, model_path = models[False]
    X, _ = make_classification(30, N_FEATURES, random_state=5)
    path = tmp_path / "rows.parquet"
    pd.DataFrame(X).to_parquet(path)
    code, err, out = score(client, model_path, path)
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)


def test_a_fullwidth_digit_and_a_file_of_comments_are_named(client, models, tmp_path):
    """A user's trial: "１.５" (fullwidth digits, which pandas does not read) was refused as
    "lines from 1 hold cells that are not finite numbers", with no line or column; a LIBSVM file
    of comments and blank lines only as "the input has no rows", without the file's name."""
    _, model_path = models[False]
    path = tmp_path / "rows.csv"
    path.write_text("0.5,1,2,3\n4,5,１.５,7\n")
    code, err, out = score(client, model_path, path)
    assert_refused(code, err, out, "rows.csv, line 2, column '2': '１.５' is not a number")
    path = tmp_path / "rows.libsvm"
    path.write_text("# written by hand\n\n# nothing yet\n")
    code, err, out = score(client, model_path, path)
    assert_refused(code, err, out, "rows.libsvm has no rows to score")


def test_a_line_break_inside_a_quoted_field_is_refused_wherever_chunks_end(
    client, models, tmp_path
):
    """A user's trial: such a row (in a column left out with --exclude) was read whole, or
    refused as "a truncated or joined line?" where a chunk's edge split it (--chunk-rows
    decided which). Refused either way, at the line where the quoted field starts."""
    _, model_path = models[True]
    path = tmp_path / "rows.csv"
    path.write_text('id,f0,f1,f2,f3\na,1,2,3,4\n"row\n2",1,2,3,4\nc,1,2,3,4\n')
    for chunk_rows in ("1", "2", "100000"):  # split by a chunk's edge, or read whole
        code, err, out = score(
            client, model_path, path, "--exclude", "id", "--chunk-rows", chunk_rows
        )
        assert_refused(code, err, out, "line 3", "a line break inside a quoted field")


@pytest.mark.parametrize("named", [True, False])
def test_a_parquet_file_naming_a_column_twice_is_refused_by_that_name(
    client, models, tmp_path, named
):
    """A data engineer's trial: a Parquet schema may repeat a name (pyarrow writes it); it was
    refused as lacking the feature the repeat replaced, or, for a model without names, failed
    with a raw KeyError. Either way the repeated name is named."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, model_path = models[named]
    X, _ = make_classification(20, N_FEATURES, random_state=6)
    names = list(NAMES)
    names[1] = names[0]
    data = tmp_path / "rows.parquet"
    pq.write_table(pa.table([pa.array(X[:, j]) for j in range(N_FEATURES)], names=names), data)
    code, err, out = score(client, model_path, data)
    assert_refused(
        code, err, out, f"rows.parquet names a feature column more than once: {names[0]!r}"
    )


def test_a_name_with_a_comma_or_a_semicolon_is_a_name_not_a_wrong_separator(
    client, models, tmp_path
):
    """A review of the spreadsheet messages: a header cell such as '1,5' beside names was
    refused as a decimal comma, a ';' inside a name or a cell made the message say to pass
    --sep ';' (which broke the read), a repeated column that is excluded was refused, and an
    upload was told of --sep, which it does not have. Each reads, or gets advice that works."""
    clf, path = models[False]
    X, _ = make_classification(30, N_FEATURES, n_informative=3, n_redundant=0, random_state=12)
    names = ["1,5", "x;y", *[f"p{i}" for i in range(2, N_FEATURES)]]
    frame = pd.DataFrame(X, columns=names)
    data = tmp_path / "rows.tsv"
    frame.to_csv(data, index=False, sep="\t", float_format="%.17g")
    code, err, out = score(client, path, data)  # '1,5' beside names: a header
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    shutil.rmtree(out)
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False, sep="|", float_format="%.17g")
    code, err, out = score(client, path, data, "--sep", "|")
    assert code == 0, err
    shutil.rmtree(out)
    # A header mixing a name that holds ';' with numbers: say which, not --sep ';'.
    mixed = ["a;b", *[str(i) for i in range(N_FEATURES - 1)]]
    pd.DataFrame(X, columns=mixed).to_csv(data, index=False, float_format="%.17g")
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "--header or --no-header")
    assert "--sep" not in err
    code, err, out = score(client, path, data, "--header")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    shutil.rmtree(out)
    # A bad cell on a line whose other cell holds ';': no --sep advice.
    _, named_path = models[True]
    text = pd.DataFrame(X, columns=NAMES).assign(note="x;y").to_csv(index=False)
    lines = text.splitlines()
    lines[3] = "oops" + lines[3][lines[3].index(",") :]
    data.write_text("\n".join(lines) + "\n")
    code, err, out = score(client, named_path, data, "--exclude", "note")
    assert_refused(code, err, out, "line 4", "'oops' is not a number; features must be numeric")
    # Excel's separator line naming a tab is known too.
    data.write_text("sep=\t\n" + frame.to_csv(index=False, sep="\t"))
    code, err, out = score(client, path, data)
    assert_refused(code, err, out, "is the line Excel writes", "pass --sep 'tab'")
    # A workbook is named as one, not as a ZIP archive to unzip.
    book = tmp_path / "rows.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    code, err, out = score(client, path, book, "--format", "csv")
    assert_refused(code, err, out, "is a spreadsheet workbook", "export the sheet as CSV")
    # A repeated column that is excluded is not read, so not refused.
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        [*(pa.array(X[:, j]) for j in range(N_FEATURES)), pa.array(np.zeros(30))],
        names=[*[f"f{j}" for j in range(N_FEATURES)], "label"],
    )
    table = table.append_column("label", pa.array(np.ones(30)))
    parquet = tmp_path / "rows.parquet"
    pq.write_table(table, parquet)
    code, err, out = score(client, path, parquet, "--exclude", "label")
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, X)
    # An upload has no separator option: it is told how to save the file.
    labelled = pd.DataFrame(X, columns=NAMES).assign(label=np.arange(30) % 2)
    with pytest.raises(DataError, match=r"remove the line \(semicolons: save it with commas"):
        load_user_file(
            b"sep=;\n" + labelled.to_csv(index=False, sep=";").encode(), filename="up.csv"
        )
    rows = labelled.to_csv(index=False).splitlines()
    rows[1] = "5;6" + rows[1][rows[1].index(",") :]  # a cell cut by ';'
    with pytest.raises(DataError) as info:
        load_user_file(("\n".join(rows) + "\n").encode(), filename="up.csv")
    assert "'5;6' is not a number; features" in str(info.value)  # (one ';' is no separator)
    assert "--sep" not in str(info.value)


def test_decimal_parquet_columns_are_read_as_the_numbers_they_hold(client, models, tmp_path):
    """Parquet files written from SQL often hold decimal columns (decimal128(p, s)): numbers,
    which pandas and the model take in memory. The command refused them as "not numeric"; it
    now reads them as the float64 values they round to, scored as in memory."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    clf, path = models[True]
    X, _ = make_classification(120, N_FEATURES, n_informative=3, n_redundant=0, random_state=9)
    cells = [[decimal.Decimal(f"{v:.4f}") for v in row] for row in X]
    table = pa.table(
        {
            name: pa.array([r[j] for r in cells], type=pa.decimal128(9, 4))
            for j, name in enumerate(NAMES)
        }
    )
    data = tmp_path / "rows.parquet"
    pq.write_table(table, data)
    code, err, out = score(client, path, data)
    assert code == 0, err
    assert_scores_equal_in_memory(out, clf, np.array([[float(d) for d in r] for r in cells]))
