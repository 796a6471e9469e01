"""User files: LIBSVM and CSV parsing, checked against sklearn / numpy, and every error case."""

from __future__ import annotations

import gzip
import io
import re

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from attentive.data import load_user_file, max_upload_bytes
from attentive.errors import DataError, InvalidParameterError


def _libsvm_text(X, y) -> bytes:
    buffer = io.BytesIO()
    dump_svmlight_file(X, y, buffer, zero_based=False)
    return buffer.getvalue()


def _csv_text(X, y, label="label") -> bytes:
    header = ",".join([f"f{j}" for j in range(X.shape[1])] + [label])
    rows = [",".join([*map(repr, map(float, x)), str(t)]) for x, t in zip(X, y, strict=True)]
    return ("\n".join([header, *rows]) + "\n").encode()


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.where(rng.random(40) < 0.5, -1, 1)
    y[:4] = [-1, -1, 1, 1]  # both classes, surely
    return X, y


def _rows(ds):
    """All rows of both parts with their labels, in the file's order."""
    X = np.vstack([ds.X_train, ds.X_test])
    y = np.concatenate([ds.y_train, ds.y_test])
    return X, y


def test_libsvm_file_matches_sklearn(tmp_path, problem):
    X, y = problem
    path = tmp_path / "mine.libsvm"
    path.write_bytes(_libsvm_text(X, y))
    ds = load_user_file(path, test_size=0.25, random_state=0)
    X_ref, y_ref = load_svmlight_file(str(path))
    assert ds.X_train.shape[0] == 30 and ds.X_test.shape[0] == 10
    got_X, got_y = _rows(ds)
    # Rows are split, not changed: compare as sets of (row, label).
    expected = sorted(
        (r.tobytes(), int(t == 1)) for r, t in zip(X_ref.toarray(), y_ref, strict=True)
    )
    assert sorted((r.tobytes(), int(t)) for r, t in zip(got_X, got_y, strict=True)) == expected
    assert ds.class_names == ("-1", "1") and ds.name == "mine.libsvm"
    assert abs(ds.y_train.mean() - ds.y_test.mean()) <= 0.1  # stratified


def test_csv_file_matches_numpy(tmp_path, problem):
    X, y = problem
    path = tmp_path / "mine.csv"
    path.write_bytes(_csv_text(X, np.where(y == 1, "spam", "ham"), label="kind"))
    ds = load_user_file(path, label_column="kind", test_size=0.5, random_state=3)
    table = np.loadtxt(path, delimiter=",", skiprows=1, usecols=range(5))
    got_X, got_y = _rows(ds)
    expected = sorted((r.tobytes(), int(t == 1)) for r, t in zip(table, y, strict=True))
    assert sorted((r.tobytes(), int(t)) for r, t in zip(got_X, got_y, strict=True)) == expected
    assert ds.class_names == ("ham", "spam") and ds.positive_meaning == "kind = spam"
    assert ds.params["feature_names"] == [f"f{j}" for j in range(5)]


def test_bytes_upload_gzip_and_guessed_label_column(problem):
    X, y = problem
    data = gzip.compress(_csv_text(X, y, label="Target"))
    ds = load_user_file(data, filename="upload.csv.gz", positive_class=-1)
    assert ds.positive_meaning == "Target = -1"
    assert ds.y_train.sum() + ds.y_test.sum() == np.count_nonzero(y == -1)


def test_format_guessed_from_content(problem):
    X, y = problem
    ds = load_user_file(_libsvm_text(X, y), filename="noext")
    assert ds.params["format"] == "libsvm"
    ds = load_user_file(_csv_text(X, y), filename="noext")
    assert ds.params["format"] == "csv"


def test_multiclass_needs_positive_class_then_one_vs_rest(problem):
    X, _ = problem
    labels = np.arange(40) % 3
    data = _libsvm_text(X, labels)
    with pytest.raises(DataError) as info:
        load_user_file(data, filename="m.libsvm")
    assert "0, 1, 2" in str(info.value) and "positive" in str(info.value)
    ds = load_user_file(data, filename="m.libsvm", positive_class="2")
    assert ds.class_names == ("not 2", "2")
    assert ds.y_train.sum() + ds.y_test.sum() == np.count_nonzero(labels == 2)
    with pytest.raises(DataError, match=r"7.*not among the labels found"):
        load_user_file(data, filename="m.libsvm", positive_class=7)


def test_large_sparse_libsvm_stays_sparse():
    rng = np.random.default_rng(1)
    lines = [f"{1 if i % 2 else -1} {rng.integers(1, 100)}:1 200000:0.5" for i in range(40)]
    ds = load_user_file("\n".join(lines).encode(), filename="wide.svm")
    assert ds.is_sparse and ds.n_features == 200000


# ----------------------------------------------------------------------------- error cases


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_user_file(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(DataError, match="empty"):
        load_user_file(tmp_path / "empty.csv")
    with pytest.raises(DataError, match="empty"):
        load_user_file(b"  \n\n", filename="blank.libsvm")
    with pytest.raises(DataError, match="no examples"):
        load_user_file(b"a,b,label\n", filename="header.csv")


@pytest.mark.parametrize(
    ("content", "line", "hint"),
    [
        (b"1 1:0.5 2:1\n-1 1:2 2:x\n", 2, "'x' of feature 2 is not a number"),
        (b"1 1:0.5 2:1\n-1 1:2\n1 3:", 3, "'3:' is not an '<index>:<value>' pair"),  # truncated
        (b"1 1:0.5\n-1 1:2\nfoo 1:3\n", 3, "label 'foo' is not a number"),
        (b"1 1:0.5\n1,-1 1:2\n", 2, "label '1,-1' is not a number (several labels, multilabel"),
        (b"1 1:0.5\n-1 2:1 1:3\n", 2, "indices must increase"),
        (b"1 1:0.5\n-1 1:2\n1 7\n", 3, "'7' is not an '<index>:<value>' pair"),
        ("1 1:0.5 2:1\n-1 1:２ 2:3\n".encode(), 2, "the value '２' of feature 1 is not a number"),
        ("1 1:0.5\n-1 ２:3\n".encode(), 2, "'２:3' is not an '<index>:<value>' pair"),
        # (a review: scikit-learn's own message, "invalid literal for int() ... b'qid'", came out)
        (b"1 qid:2 1:0.5\n-1 1:2 qid:3 2:1\n", 2, "'qid:3' comes after a feature; a 'qid:'"),
    ],
)
def test_malformed_libsvm_gives_line_number(content, line, hint):
    with pytest.raises(DataError) as info:
        load_user_file(content, filename="bad.libsvm")
    assert f"bad.libsvm, line {line}:" in str(info.value)
    assert hint in str(info.value)


@pytest.mark.parametrize(
    "content", [b"1 1:0.5 2:1\r-1 1:2\r", b"# rows\r1 1:0.5 2:1\r-1 1:2\r", b"1 1:0.5\r-1 1:2"]
)
def test_old_mac_line_ends_are_refused_before_a_line_is_read(content):
    """CR alone ends no line here: the file was one line, refused as a bad row, or as a file of
    no examples where it started with a comment (a review)."""
    with pytest.raises(DataError, match=r"bad.libsvm: lines are ended by carriage returns \(CR\)"):
        load_user_file(content, filename="bad.libsvm")


def test_truncated_compressed_upload(problem):
    data = gzip.compress(_libsvm_text(*problem))[:-20]
    with pytest.raises(DataError, match="truncated or corrupt"):
        load_user_file(data, filename="x.libsvm.gz")


def test_csv_non_numeric_cell_names_column_and_line():
    data = b"a,b,label\n1,2,0\n3,oops,1\n4,5,1\n"
    with pytest.raises(DataError) as info:
        load_user_file(data, filename="t.csv")
    assert "line 3, column 'b': 'oops' is not a number" in str(info.value)


def test_csv_truncated_line_and_extra_fields():
    with pytest.raises(DataError, match=r"not valid CSV: line 4 has 1 field, but there are 3"):
        load_user_file(b"a,b,label\n1,2,0\n3,4,1\n5", filename="t.csv", label_column="a")
    with pytest.raises(DataError, match=r"not valid CSV.*line 3"):
        load_user_file(b"a,b,label\n1,2,0\n3,4,1,9,9\n", filename="t.csv")


def test_csv_label_column_problems():
    data = b"a,b,c\n1,2,0\n3,4,1\n"
    with pytest.raises(DataError, match=r"label_column=.*'a', 'b', 'c'"):
        load_user_file(data, filename="t.csv")
    with pytest.raises(DataError, match="no column named 'z'; columns: 'a', 'b', 'c'"):
        load_user_file(data, filename="t.csv", label_column="z")
    with pytest.raises(DataError, match=r"line 3: the label \('c'\) is missing"):
        load_user_file(b"a,b,c\n1,2,0\n3,4,\n", filename="t.csv", label_column="c")


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "1e400", "-2E+999"])
def test_non_finite_features(bad):
    data = f"a,b,label\n1,2,0\n3,4,1\n5,{bad},0\n7,8,1\n".encode()
    # pandas reads 'nan' as a missing cell; inf arrives as a number and is caught as non-finite.
    what = (
        "the value is missing or NaN"
        if bad == "nan"
        else f"{re.escape(bad)} is not a finite number"
    )
    with pytest.raises(DataError, match=rf"t\.csv, line 4, column 'b': {what}"):
        load_user_file(data, filename="t.csv", test_size=0.5)
    # The value as written: one beyond double precision's range was reported as the inf it
    # is read as.
    shown = re.escape(bad) + ("" if bad.lstrip("-") in ("nan", "inf") else r" \(beyond double[^;]*")
    with pytest.raises(DataError, match=rf"t\.libsvm, line 2: feature 1 is {shown}; .*finite"):
        load_user_file(f"1 1:1\n-1 1:{bad}\n".encode(), filename="t.libsvm")
    with pytest.raises(DataError, match=rf"t\.libsvm, line 4: feature 3 is {shown}; .*finite"):
        load_user_file(f"1 1:1\n# a comment\n\n-1 2:0.5 3:{bad}\n".encode(), filename="t.libsvm")


def test_single_class_and_too_few_examples():
    with pytest.raises(DataError, match="every example has the label 1"):
        load_user_file(b"1 1:1\n1 1:2\n1 2:3\n", filename="t.libsvm")
    with pytest.raises(DataError, match="too few examples to split") as info:
        load_user_file(b"1 1:1\n-1 1:2\n1 2:3\n", filename="t.libsvm")
    # Which part is short, in numbers (2 of each class alone read as enough: a user's trial).
    with pytest.raises(DataError, match=r"2 positive, 2 negative, which would leave 1 for "):
        load_user_file(b"1 1:1\n-1 1:2\n1 2:3\n-1 2:1\n", filename="t.libsvm", test_size=0.75)
    assert "1 negative" in str(info.value)


def test_upload_limit(tmp_path, monkeypatch, problem):
    data = _libsvm_text(*problem)
    path = tmp_path / "big.libsvm"
    path.write_bytes(data)
    with pytest.raises(DataError, match=r"over the upload limit.*ATTENTIVE_MAX_UPLOAD_MB"):
        load_user_file(path, max_bytes=len(data) - 1)
    with pytest.raises(DataError, match="over the upload limit"):
        load_user_file(io.BytesIO(data), filename="big.libsvm", max_bytes=100)
    assert load_user_file(path, max_bytes=len(data)).n_features == 5
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "0.0001")
    assert max_upload_bytes() == int(0.0001 * 1024 * 1024)
    with pytest.raises(DataError, match="over the upload limit"):
        load_user_file(path)
    monkeypatch.delenv("ATTENTIVE_MAX_UPLOAD_MB")
    assert max_upload_bytes() == 50 * 1024 * 1024


def test_bad_arguments(problem):
    data = _libsvm_text(*problem)
    with pytest.raises(InvalidParameterError, match="format must be one of"):
        load_user_file(data, format="xlsx")
    with pytest.raises(InvalidParameterError, match="test_size"):
        load_user_file(data, format="libsvm", test_size=1.5)
    with pytest.raises(DataError, match="cannot tell the format"):
        load_user_file(b"1 2 3\n", filename="mystery")


def test_a_pandas_index_column_is_refused_not_taken_as_a_feature(problem):
    """A user's trial: df.to_csv() (its index first, under an empty name) uploaded as 7
    features instead of 6, and accuracy fell from 84 % to 52 %. The index is named as such; the
    same rows written with index=False load, and an unnamed column that is data stays one."""
    import pandas as pd

    X, y = problem
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    for written in (frame, frame.sample(frac=1, random_state=0), frame.iloc[len(frame) // 2 :]):
        with pytest.raises(DataError, match=r"first column has no name and numbers the rows"):
            load_user_file(written.to_csv().encode(), filename="with_index.csv")
    ds = load_user_file(frame.to_csv(index=False).encode(), filename="plain.csv")
    assert ds.n_features == X.shape[1]
    data = frame.rename(columns={"f0": ""}).to_csv(index=False).encode()
    assert load_user_file(data, filename="unnamed.csv").n_features == X.shape[1]


@pytest.mark.parametrize("column", ["id", "ID", "Index", "row", "row_id", "RowId"])
def test_an_identifier_column_is_refused_not_taken_as_a_feature(problem, column):
    """A column named like an identifier that numbers the rows (in any place, any order) is
    named as such; one whose values repeat or are not whole numbers stays a feature."""
    import pandas as pd

    X, y = problem
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    ids = frame.assign(**{column: np.arange(100, 100 + len(frame))})
    for written in (ids, ids.sample(frac=1, random_state=0)[[column, *frame.columns]]):
        data = written.to_csv(index=False).encode()
        with pytest.raises(DataError, match=rf"column '{column}' numbers the rows \(1"):
            load_user_file(data, filename="with_ids.csv")
    for kept in (np.arange(len(frame)) % 5, np.linspace(0, 1, len(frame))):
        data = frame.assign(**{column: kept}).to_csv(index=False).encode()
        assert load_user_file(data, filename="kept.csv").n_features == X.shape[1] + 1


def test_a_quoted_line_break_is_refused_and_balanced_quotes_are_not_taken_for_one():
    """An upload read a quoted line break as one row: refused, as the score command refuses it
    wherever its chunks end. A short line with paired quotes is a truncated line."""
    data = b'name,a,b,label\nx,1,2,0\n"two\nlines",3,4,1\ny,5,6,1\nz,7,8,0\n'
    with pytest.raises(DataError, match=r"line 3: a line break inside a quoted field; each row"):
        load_user_file(data, filename="t.csv", label_column="label")
    data = b'c,a,b,label\n9,1,2,0\n"8",3\n7,7,8,0\n'
    with pytest.raises(DataError, match=r"line 3 has 2 fields.*a truncated or joined line"):
        load_user_file(data, filename="t.csv", label_column="label")


# ------------------------------------------------------------- a first line that is an example


def _lines(problem, *, index=False) -> list[str]:
    """The problem's examples as CSV lines, the label first (and the row number, ``index``)."""
    X, y = problem
    return [
        ",".join(([str(i)] if index else []) + [str(t), *map(repr, map(float, x))])
        for i, (x, t) in enumerate(zip(X, y, strict=True))
    ]


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"1,0.5,-2.25\n0,1.5,3\n1,2,4\n", "a row of numbers"),
        (b"yes,0.25,1.5\nno,1,2\nyes,3,4\n", "a row of examples (it holds '0.25')"),
        (b"yes,0,1,1\nno,1,0,0\nyes,1,1,0\n", "a row of examples (it holds '1')"),
        (b"1\t0.5\t-2.25\n0\t1.5\t3\n", "a row of numbers"),
    ],
)
def test_first_line_of_data_is_refused_not_lost(content, what):
    """An upload's first line names the columns; an example there was taken as the names and
    dropped without a word (39 of 40 rows read, the features named '-0.132', ...)."""
    name = "rows.tsv" if b"\t" in content else "rows.csv"
    with pytest.raises(DataError, match="the first line, .* is " + re.escape(what)) as caught:
        load_user_file(content, filename=name, label_column=0)
    assert "add one as its first line" in str(caught.value)


def test_headerless_file_is_refused_then_read_whole_with_a_header(problem):
    X, _ = problem
    body = "\n".join(_lines(problem)) + "\n"
    with pytest.raises(DataError, match="is a row of numbers, not a header"):
        load_user_file(body.encode(), filename="plain.csv", label_column=0)
    header = ",".join(["label", *(f"x{j}" for j in range(X.shape[1]))])
    ds = load_user_file((header + "\n" + body).encode(), filename="plain.csv", label_column=0)
    got_X, _ = _rows(ds)
    assert len(got_X) == len(X)  # every example, the first included
    assert sorted(r.tobytes() for r in got_X) == sorted(r.tobytes() for r in X)


@pytest.mark.parametrize(
    ("first", "label_column"),
    [
        ("0,1,2,3,4,5", 0),  # pandas' names of a frame without column names
        ("label,0,1,2,3,4", "label"),  # numbers as names beside a name, each once
        ("1,2,3,4,5,6", 0),  # column numbers
        ("label,400.5,401.0,401.5,402.0,402.5", 0),  # wavelengths beside the label's name
        ("y,0.5,1.5,2.5,3.5,4.5", "y"),
    ],
)
def test_headers_of_numbers_are_still_headers(problem, first, label_column):
    X, _ = problem
    content = (first + "\n" + "\n".join(_lines(problem)) + "\n").encode()
    ds = load_user_file(content, filename="named.csv", label_column=label_column)
    got_X, _ = _rows(ds)
    assert sorted(r.tobytes() for r in got_X) == sorted(r.tobytes() for r in X)


def test_pandas_index_header_is_refused_as_the_index_not_as_data(problem):
    content = (",0,1,2,3,4,5\n" + "\n".join(_lines(problem, index=True)) + "\n").encode()
    with pytest.raises(DataError, match="index pandas writes"):
        load_user_file(content, filename="indexed.csv", label_column="0")


def test_a_file_separated_by_spaces_is_named_so():
    content = b"label x y\n1 0.5 0.3\n0 0.2 0.1\n1 0.5 0.3\n0 0.2 0.1\n"
    with pytest.raises(DataError, match=r"seems to be separated by spaces.*commas .* or tabs"):
        load_user_file(content, filename="spaced.csv")
    with pytest.raises(DataError, match="seems to be separated by spaces"):
        load_user_file(content, filename="spaced.csv", label_column="label")
    # (A name with a space beside others is a name.)
    ds = load_user_file(
        b"my label,x y,z\n" + b"1,0.5,0.3\n0,0.2,0.1\n" * 4,
        filename="named.csv",
        label_column="my label",
    )
    assert ds.n_features == 2


@pytest.mark.parametrize(
    ("content", "name", "hint"),
    [
        (b"a;b;label\n1;2;0\n3;4;1\n", "rows.txt", "--format csv --sep ';'"),
        (b"a|b|label\n1|2|0\n3|4|1\n", "rows.txt", "--format csv --sep '|'"),
        (b"# written by hand\n1 1:0.5\n-1 1:2\n", "rows.csv", "--format libsvm"),
    ],
)
def test_a_file_read_as_the_other_format_is_told_how_to_say_which(content, name, hint):
    with pytest.raises(DataError, match=re.escape(hint)):
        load_user_file(content, filename=name)


def test_pandas_header_of_two_columns_is_a_header():
    """pandas' header of an unnamed frame of two columns, ``0,1``: refused as a row of numbers
    at first (the exemption was for three or more); it is a header at any length."""
    body = "\n".join(f"{i % 2},{i * 0.5}" for i in range(12))
    ds = load_user_file(f"0,1\n{body}\n".encode(), filename="two.csv", label_column=0)
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == 12


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        (b",a,b,label\n0,1,2,0\n", "separated by commas, as in CSV"),  # pandas' index
        (b"a,b,label,\n1,2,0,\n", "separated by commas, as in CSV"),  # a trailing comma
        (b"These are my notes, about the project.\nMore, here.\n", None),  # prose
    ],
)
def test_a_csv_line_read_as_libsvm_is_told_so_and_prose_is_not(content, hint):
    with pytest.raises(DataError) as info:
        load_user_file(content, filename="rows.txt")
    said = str(info.value)
    if hint is None:
        assert "CSV" not in said and "'<label> <index>:<value> ...'" in said, said
    else:
        assert hint in said, said


def test_a_libsvm_file_named_as_csv_is_told_to_be_named_libsvm():
    with pytest.raises(DataError, match=r"looks like LIBSVM .*name it \.libsvm"):
        load_user_file(b"1 1:0.5 2:0.3\n-1 1:2\n", filename="rows.csv")
