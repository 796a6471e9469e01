"""The one reader (attentive.data.reader): LIBSVM index base, CSV header and columns, cells.

Its decisions are checked here without Dask; tests/test_score_files.py checks the same decisions
end to end through ``python -m attentive score``, and the dashboard's uploads through
``load_user_file(..., model=...)`` below.
"""

from __future__ import annotations

import gzip
import io
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file, make_classification
from sklearn.svm import SVC

from attentive import AttentiveClassifier
from attentive.data import load_user_file
from attentive.data.reader import (
    BOM,
    MONOTONE_NAMES,
    ExpectedFeatures,
    csv_header,
    feature_columns,
    guess_format,
    libsvm_index_range,
    libsvm_stated_base,
    libsvm_zero_based,
    parse_csv_rows,
    split_csv_line,
)
from attentive.errors import DataError

FOUR = ExpectedFeatures(n_features=4)
NAMED = ExpectedFeatures(n_features=3, names=("a", "b", "c"))


# -- the LIBSVM index range -----------------------------------------------------------------------
def _brute_force_range(text: bytes):
    """Every index of LIBSVM text by splitting lines and tokens in Python."""
    found = []
    for raw in text.split(b"\n"):
        tokens = raw.split(b"#", 1)[0].split()
        for token in tokens[1:]:
            head, sep, _ = token.partition(b":")
            if sep and head != b"qid":
                found.append(int(head))
    return (min(found), max(found)) if found else None


@st.composite
def libsvm_texts(draw):
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["row", "row", "row", "blank", "comment"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", "   ", "\t"])))
            continue
        indices = sorted(draw(st.sets(st.integers(0, 10**12), max_size=6)))
        tokens = [draw(st.sampled_from(["1", "-1", "0.5", "+1"]))]
        if draw(st.booleans()):
            tokens.append(f"qid:{draw(st.integers(0, 99))}")
        for i in indices:
            sign = draw(st.sampled_from(["", "", "+"]))
            tokens.append(f"{sign}{i}:{draw(st.sampled_from(['1', '-2.5', '1e-3', 'nan']))}")
        line = " ".join(tokens) if kind == "row" else ""
        if kind == "comment" or draw(st.booleans()):
            # a comment whose "index" must not count
            line += f" # {draw(st.integers(0, 10**13))}:7 qid:1"
        lines.append(line)
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines).encode() + (end.encode() if draw(st.booleans()) else b"")


@settings(max_examples=300, deadline=None)
@given(libsvm_texts())
def test_index_range_equals_a_token_by_token_count(text):
    assert libsvm_index_range(text) == _brute_force_range(text)


def test_index_range_spans_pieces_of_the_text(monkeypatch):
    from attentive.data import reader

    text = b"".join(f"1 {i + 1}:1 {3 * i + 7}:2 # {10**9}:1\n".encode() for i in range(2000))
    whole = reader.libsvm_index_range(text)
    monkeypatch.setattr(reader, "_PIECE", 97)  # many pieces, each cut after a line break
    assert reader.libsvm_index_range(text) == whole == (1, 3 * 1999 + 7)


# -- the LIBSVM index base ------------------------------------------------------------------------
def test_index_zero_present_means_zero_based():
    assert libsvm_zero_based((0, 3), 4, None, where="f") is True
    assert libsvm_zero_based((0, 7), None, None, where="f") is True


def test_largest_index_equal_to_the_width_means_one_based():
    assert libsvm_zero_based((1, 4), 4, None, where="f") is False
    assert libsvm_zero_based((2, 4), 4, None, where="f") is False
    # training data (no model): LIBSVM's convention
    assert libsvm_zero_based((1, 3), None, None, where="f") is False


def test_neither_is_refused_naming_both_flags_and_the_parameter():
    with pytest.raises(DataError) as info:
        libsvm_zero_based((1, 3), 4, None, where="rows.libsvm")
    message = str(info.value)
    for needed in ("rows.libsvm", "--zero-based", "--one-based", "zero_based=True or False"):
        assert needed in message
    assert "largest index, 3, is below the model's 4 features" in message
    # said, it reads
    assert libsvm_zero_based((1, 3), 4, True, where="f") is True
    assert libsvm_zero_based((1, 3), 4, False, where="f") is False


def test_files_that_contradict_the_model_or_the_base_asked_for_are_refused():
    with pytest.raises(DataError, match="at least 5 features, but the model has 4"):
        libsvm_zero_based((1, 5), 4, None, where="f")
    with pytest.raises(DataError, match="at least 5 features, but the model has 4"):
        libsvm_zero_based((0, 4), 4, None, where="f")
    with pytest.raises(DataError, match="at least 5 features"):
        libsvm_zero_based((1, 4), 4, True, where="f")
    with pytest.raises(DataError, match="index 0 appears, so the file is zero-based"):
        libsvm_zero_based((0, 2), 4, False, where="f")
    with pytest.raises(DataError, match="negative"):
        libsvm_zero_based((-1, 2), 4, None, where="f")
    assert libsvm_zero_based(None, 4, None, where="f") is False  # no features: base irrelevant


def test_the_base_a_header_states_is_read_from_the_opening_comments_only():
    X = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 2.0]])
    for zero_based in (True, False):
        out = io.BytesIO()
        dump_svmlight_file(X, [0, 1], out, zero_based=zero_based, comment="two\nlines")
        assert libsvm_stated_base(out.getvalue()) is zero_based
        out = io.BytesIO()
        dump_svmlight_file(X, [0, 1], out, zero_based=zero_based)  # no comment: no header
        assert libsvm_stated_base(out.getvalue()) is None
    assert libsvm_stated_base(b"\n  #  COLUMN INDICES ARE ONE-BASED  \r\n1 1:2\n") is False
    assert libsvm_stated_base(BOM + b"# Column indices are zero-based\r\n1 1:2\n") is True
    # after a row, or inside a longer comment, it is not the file's statement
    assert libsvm_stated_base(b"1 1:2\n# Column indices are zero-based\n") is None
    assert libsvm_stated_base(b"# Column indices are zero-based, not here\n1 1:2\n") is None


def test_a_stated_base_decides_and_contradictions_are_refused():
    # (1, 3) against 4 features reads either way; the statement decides
    assert libsvm_zero_based((1, 3), 4, None, where="f", stated=True) is True
    assert libsvm_zero_based((1, 3), 4, None, where="f", stated=False) is False
    assert libsvm_zero_based(None, 4, None, where="f", stated=True) is True
    assert libsvm_zero_based((1, 3), 4, True, where="f", stated=True) is True
    with pytest.raises(DataError, match=r"header says .*zero-based', but one-based was asked"):
        libsvm_zero_based((1, 3), 4, False, where="f", stated=True)
    with pytest.raises(DataError, match="--zero-based"):
        libsvm_zero_based(None, 4, True, where="f", stated=False)
    with pytest.raises(DataError, match=r"header says .*one-based', but feature index 0 appears"):
        libsvm_zero_based((0, 3), 4, None, where="f", stated=False)
    with pytest.raises(DataError, match="at least 5 features, but the model has 4"):
        libsvm_zero_based((1, 4), 4, None, where="f", stated=True)


# -- the CSV header -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (["a", "b", "c", "d"], ["a", "b", "c", "d"]),
        (["", "a", "b", "c"], ["Unnamed: 0", "a", "b", "c"]),  # pandas' unnamed index column
        (["1.5", "-2", "3e4", "inf"], None),
        (["1", "", "nan", "NA"], None),  # missing values are data, not names
    ],
)
def test_header_is_told_from_the_first_line(cells, expected):
    assert csv_header(cells, header=None, expected=FOUR, where="f") == expected


@pytest.mark.parametrize(
    ("cells", "problem"),
    [
        (["x", "1", "2", "3"], "mixes names and numbers"),
        (["0", "1", "2", "3"], "header pandas writes for a frame without column names"),
        (["", "0", "1", "2"], r"with its index first \(df\.to_csv\(\)\).*--exclude 'Unnamed: 0'"),
    ],
)
def test_an_ambiguous_first_line_is_refused_naming_the_flags(cells, problem):
    with pytest.raises(DataError, match=problem) as info:
        csv_header(cells, header=None, expected=FOUR, where="rows.csv")
    assert "--header or --no-header" in str(info.value) and "header=True or False" in str(
        info.value
    )
    named = [c or f"Unnamed: {i}" for i, c in enumerate(cells)]  # (pandas' name of an index)
    assert csv_header(cells, header=True, expected=FOUR, where="f") == named
    assert csv_header(cells, header=False, expected=FOUR, where="f") is None


def test_the_models_own_numeric_names_are_a_header():
    expected = ExpectedFeatures(4, names=("0", "1", "2", "3"))
    assert csv_header(["0", "1", "2", "3"], header=None, expected=expected, where="f") == [
        "0",
        "1",
        "2",
        "3",
    ]
    with pytest.raises(DataError, match="more than once"):
        csv_header(["a", "a", "b", "c"], header=None, expected=FOUR, where="f")


# -- columns against the model --------------------------------------------------------------------
def test_columns_are_checked_by_name_and_order():
    assert feature_columns(["a", "b", "c"], 3, NAMED, where="f") == ["a", "b", "c"]
    assert feature_columns(["id", "a", "b", "c"], 4, NAMED, ("id",), where="f") == ["a", "b", "c"]
    with pytest.raises(DataError, match=r"another order: feature 1 is 'b' where the model has 'a'"):
        feature_columns(["b", "a", "c"], 3, NAMED, where="f")
    with pytest.raises(DataError, match=r"lacks 1 of the model's features: 'c'"):
        feature_columns(["a", "b"], 2, NAMED, where="f")
    with pytest.raises(
        DataError, match=r"has a column the model does not know: 'label'.*--exclude"
    ):
        feature_columns(["a", "b", "c", "label"], 4, NAMED, where="f")
    with pytest.raises(DataError, match="no header line, but the model knows its features by name"):
        feature_columns(None, 3, NAMED, where="f")


def test_columns_are_counted_for_a_model_without_names():
    assert feature_columns(None, 4, FOUR, where="f") == ["0", "1", "2", "3"]
    assert feature_columns(["y", "p", "q", "r", "s"], 5, FOUR, ("y",), where="f") == [
        "p",
        "q",
        "r",
        "s",
    ]
    with pytest.raises(DataError, match=r"has 5 feature columns, but the model expects 4; name"):
        feature_columns(["y", "p", "q", "r", "s"], 5, FOUR, where="f")
    # Lines read as one column (another separator, or a LIBSVM file read as CSV): said so.
    with pytest.raises(DataError, match=r"has 1 feature column, but .* 4; .* split at commas: is"):
        feature_columns(None, 1, FOUR, where="f", sep=",")
    with pytest.raises(DataError, match=r"one column, split at tabs: is that the file's separator"):
        feature_columns(None, 1, FOUR, where="f", sep="\t")
    # (A table read without a separator, Parquet, has its own columns: no such hint.)
    with pytest.raises(DataError, match=r"has 1 feature column, but the model expects 4$"):
        feature_columns(None, 1, FOUR, where="f")
    with pytest.raises(DataError, match=r"has 3 feature columns, but the model expects 4$"):
        feature_columns(None, 3, FOUR, where="f")
    with pytest.raises(DataError, match=r"\['z'\] to exclude are not among its columns"):
        feature_columns(["p", "q", "r", "s"], 4, FOUR, ("z",), where="f")
    with pytest.raises(DataError, match="no header line, so no column can be excluded"):
        feature_columns(None, 5, FOUR, ("y",), where="f")


def test_a_named_header_read_as_one_column_names_the_separator_it_holds():
    """A model that knows its features by name, and a file written with ';': its header
    came out as one column named 'a;b;c', and the error said only which names were missing
    and that 'a;b;c' is unknown. It now names the separator to pass, as it does for a model
    without names."""
    with pytest.raises(DataError, match=r"'a;b;c'.*holds semicolons: pass --sep ';'"):
        feature_columns(["a;b;c"], 1, NAMED, where="f", sep=",")
    with pytest.raises(DataError, match=r"lacks 1 of the model's features: 'c'$"):
        feature_columns(["a", "b"], 2, NAMED, where="f", sep=",")
    # A one-column header that holds no other separator is a misnamed column: no hint.
    one = ExpectedFeatures(n_features=1, names=("a",))
    with pytest.raises(DataError, match=r"does not know: 'b' \(not features\? .*\)$"):
        feature_columns(["b"], 1, one, where="f", sep=",")


# -- cells ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"1,2,3\n4,5\n", "line 11 has 2 fields, but there are 3 columns"),
        (b"1,2,3\n4,5,6,7\n", "line 11 has 4 fields"),
        (b"1,2,3\n4,x,6\n", "line 11, column 'b': 'x' is not a number"),
        (b"1,2,3\n4,,6\n", "line 11, column 'b': the value is missing or NaN"),
        (b"1,2,3\r\n4,-inf,6\r\n", "line 11, column 'b': -inf is not a finite number"),
        (b"1,2,3\n\n4,1e999,6\n", "line 12, column 'b': 1e999 is not a finite number"),
        (b"1,2,3\n4,5\r6\n", "line 11: a carriage return \\(CR\\) inside the line"),
        (b"1,2,3\r4,5,6\n7,8,9\n", "line 10: a carriage return"),  # pandas: three rows
    ],
)
def test_bad_cells_are_named_by_the_files_line_and_column(text, message):
    with pytest.raises(DataError, match=message):
        parse_csv_rows(
            text, names=["a", "b", "c"], numeric=["a", "b", "c"], where="f", first_line=10
        )


def test_a_first_line_with_a_carriage_return_inside_is_refused_naming_the_line_endings():
    """A file with the old Mac line endings (CR alone) reads as one line with CRs inside: the
    csv module's own error would reach the user as a traceback."""
    with pytest.raises(DataError, match=r"rows\.csv, line 1: a carriage return \(CR\).*LF"):
        split_csv_line(b"a,b,c\r1,2,3\r4,5,6\r", where="rows.csv")
    assert split_csv_line(b"a, b,c\r\n", where="rows.csv") == ["a", "b", "c"]


def test_a_carriage_return_in_the_first_line_after_blank_lines_names_its_line(tmp_path):
    """Blank lines before the first line are skipped (as pandas does), and the error names the
    line the CR is on (it said "line 1"): an upload, and a file scored with Dask."""
    from attentive.scale.reading import read_input

    text = b"\n\na,b,label\r1,2,0\r3,4,1\r"
    with pytest.raises(DataError, match=r"up\.csv, line 3: a carriage return \(CR\)"):
        load_user_file(text, filename="up.csv")
    X, y = make_classification(n_samples=40, n_features=2, n_informative=2, n_redundant=0)
    clf = AttentiveClassifier(SVC(), boundary="constant").fit(X, y)
    rows = tmp_path / "rows.csv"
    rows.write_bytes(b"\n\n1,2\r3,4\r")
    with pytest.raises(DataError, match=r"rows\.csv, line 3: a carriage return \(CR\)"):
        read_input(rows, clf)


def test_cells_read_exactly_and_other_columns_stay_as_read():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2)) * 10.0 ** rng.integers(-300, 300, size=(50, 2))
    text = "".join(f"{a!r},{b!r},spam\r\n" for a, b in X.tolist()).encode()
    frame = parse_csv_rows(text, names=["a", "b", "y"], numeric=["a", "b"], where="f", first_line=1)
    np.testing.assert_array_equal(frame[["a", "b"]].to_numpy(), X)  # bit for bit
    assert (frame["y"] == "spam").all()


def test_format_is_guessed_from_the_name_through_compression_then_the_content():
    assert guess_format("rows.libsvm.gz") == "libsvm"
    assert guess_format("rows.tsv.bz2") == "csv"
    assert guess_format("blob", b"PAR1....") == "parquet"
    assert guess_format("blob", b"\n1 3:0.5 7:1\n") == "libsvm"
    assert guess_format("blob", b"a,b\n1,2\n") == "csv"
    with pytest.raises(DataError, match="cannot tell the format of blob"):
        guess_format("blob", b"1 2 3\n")
    with pytest.raises(DataError, match="looks like parquet, which is not read here"):
        guess_format("x.parquet", allowed=("libsvm", "csv"))
    # numpy.save's header has commas: named as what it is, not read as CSV text.
    buffer = io.BytesIO()
    np.save(buffer, np.eye(3))
    files = (("rows.npy", buffer.getvalue()), ("rows.npz", b"PK\x03\x04..."), ("rows.npz.gz", b""))
    for name, head in files:
        with pytest.raises(DataError, match=rf"cannot read {name}: it is a NumPy array file") as e:
            guess_format(name, head)
        assert ("['<the array>']" in str(e.value)) == (".npz" in name)


# -- the dashboard's uploads, read for an uploaded model ------------------------------------------
@pytest.fixture(scope="module")
def model_first_feature_zero():
    X, y = make_classification(200, 4, n_informative=3, n_redundant=0, random_state=0)
    X[:, 0] = 0.0
    return AttentiveClassifier(SVC(), random_state=0).fit(X, y), X, y


def _dumped(X, y, zero_based) -> bytes:
    buffer = io.BytesIO()
    dump_svmlight_file(X, y, buffer, zero_based=zero_based)
    return buffer.getvalue()


def test_an_upload_is_read_for_the_uploaded_model(model_first_feature_zero):
    clf, X, y = model_first_feature_zero
    zero_based = _dumped(X, y, True)  # scikit-learn's default: index 0 never written
    with pytest.raises(DataError, match="cannot tell whether its feature indices start at 0"):
        load_user_file(zero_based, filename="z.libsvm", model=clf)
    ds = load_user_file(zero_based, filename="z.libsvm", model=clf, zero_based=True)
    assert ds.n_features == 4 and ds.params["zero_based"] is True
    rows = np.vstack([ds.X_train, ds.X_test])
    assert np.all(rows[:, 0] == 0)  # the first column, not shifted
    # The same rows, one-based: the largest index is the model's width.
    ds = load_user_file(_dumped(X, y, False), filename="o.libsvm", model=clf)
    assert ds.n_features == 4 and ds.params["zero_based"] is False
    # One-based with the last feature always zero: without the model the file reads narrower.
    X_last = np.roll(X, -1, axis=1)  # column 3 is now the zero one
    one_based = _dumped(X_last, y, False)
    assert load_user_file(one_based, filename="l.libsvm").n_features == 3
    with pytest.raises(DataError, match="--one-based"):
        load_user_file(one_based, filename="l.libsvm", model=clf)
    assert (
        load_user_file(one_based, filename="l.libsvm", model=clf, zero_based=False).n_features == 4
    )


def test_an_uploaded_csv_is_checked_against_the_models_feature_names():
    X, y = make_classification(120, 3, n_informative=2, n_redundant=0, random_state=1)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    clf = AttentiveClassifier(SVC(), random_state=0).fit(frame, y)
    good = frame.assign(label=y).to_csv(index=False).encode()
    assert load_user_file(good, filename="g.csv", model=clf).params["feature_names"] == [
        "a",
        "b",
        "c",
    ]
    swapped = frame[["b", "a", "c"]].assign(label=y).to_csv(index=False).encode()
    with pytest.raises(DataError, match="another order"):
        load_user_file(swapped, filename="s.csv", model=clf)


def test_an_upload_with_a_bom_crlf_and_gzip_reads_as_the_plain_file():
    X, y = make_classification(80, 3, n_informative=2, n_redundant=0, random_state=2)
    plain = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y).to_csv(index=False).encode()
    dressed = gzip.compress(b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n"))
    a = load_user_file(plain, filename="p.csv")
    b = load_user_file(dressed, filename="p.csv.gz")
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert b.params["feature_names"] == ["a", "b", "c"]
    libsvm = _dumped(X, y, False)
    c = load_user_file(libsvm, filename="p.libsvm")
    d = load_user_file(b"\xef\xbb\xbf" + libsvm.replace(b"\n", b"\r\n"), filename="p.libsvm")
    np.testing.assert_array_equal(c.X_train, d.X_train)


@pytest.mark.parametrize("kind", ["gzip", "bz2", "xz"])
def test_decompression_is_bounded_and_streams_are_read_to_the_end(kind):
    """A few kilobytes can decompress to gigabytes: the content is decompressed in a stream and
    refused past the limit, before it is all in memory."""
    import bz2
    import lzma

    from attentive.data.reader import decompress

    compress = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind]
    rows = b"".join(f"{i % 2} 1:{i}\n".encode() for i in range(20_000))
    packed = compress(rows) + compress(b"1 2:3\n")  # two streams, as cat a.gz b.gz makes
    assert decompress(packed, "f") == rows + b"1 2:3\n"
    assert decompress(packed, "f", max_bytes=len(rows) + 6) == rows + b"1 2:3\n"
    with pytest.raises(DataError, match=r"rows\.libsvm decompresses to more than 0 MB"):
        decompress(packed, "rows.libsvm", max_bytes=len(rows) + 5)
    with pytest.raises(DataError, match="truncated or corrupt"):
        decompress(compress(rows)[:-12], "f")
    if kind == "bz2":  # bytes after a stream that start none are ignored, as bz2.open does
        assert decompress(compress(rows) + b"\0\0\0\0", "f") == rows
    bomb = compress(bytes(200 << 20))  # 200 MB of zeros in well under a megabyte
    assert len(bomb) < 1 << 20
    with pytest.raises(DataError, match="decompresses to more than 1 MB"):
        decompress(bomb, "f", max_bytes=1 << 20)


def test_an_upload_is_bounded_once_decompressed_too():
    import bz2

    from attentive.data.userfile import DECOMPRESSED_FACTOR

    bomb = bz2.compress(b"1 1:1\n" * 2_000_000)  # 12 MB of rows in a few kilobytes
    with pytest.raises(DataError, match=r"bomb\.libsvm\.bz2 decompresses to more than"):
        load_user_file(bomb, filename="bomb.libsvm.bz2", max_bytes=len(bomb) * 100)
    assert DECOMPRESSED_FACTOR * len(bomb) * 100 < 12_000_000


def test_an_upload_naming_a_huge_feature_index_is_refused_before_it_is_parsed():
    """A 40-byte file can name feature 400,000,000: every array over the features would take
    gigabytes (the rows' digest made 32 of them dense). Up to MAX_UPLOAD_FEATURES it reads."""
    from attentive.data.userfile import MAX_UPLOAD_FEATURES

    rows = b"".join(f"{i % 2} 1:{i} 2:1\n".encode() for i in range(40))
    with pytest.raises(DataError, match=r"rows\.libsvm: its largest feature index, 400,000,000"):
        load_user_file(rows + b"1 400000000:1\n", filename="rows.libsvm")
    wide = load_user_file(rows + f"1 {MAX_UPLOAD_FEATURES}:1\n".encode(), filename="rows.libsvm")
    assert wide.n_features == MAX_UPLOAD_FEATURES


@pytest.mark.parametrize("index", ["99999999999999999999999", "1000000000000000000", "3000000000"])
def test_a_huge_libsvm_index_is_named_not_overflowed(tmp_path, index):
    """A user's trial: an index of 19 digits or more was skipped by the first pass ("the largest
    index, 4"), and any index past a C long raised a bare OverflowError from the parser (in the
    score command and the dashboard's upload alike)."""
    from attentive.data.libsvm import read_libsvm_rows

    text = f"1 3:1\n-1 2:1\n1 {index}:1\n-1 4:1\n".encode()
    lo, hi = libsvm_index_range(text)
    assert lo == 2 and hi >= min(int(index), 10**18)  # (not skipped)
    for zero_based in (True, False):
        with pytest.raises(DataError, match=r"line 3: feature index \d+ exceeds the 64 features"):
            read_libsvm_rows(text, where="f", n_features=64, zero_based=zero_based)
        if int(index) >= 2**31:
            with pytest.raises(DataError, match=r"line 3: .* beyond any model's width"):
                read_libsvm_rows(text, where="f", n_features=None, zero_based=zero_based)
    (tmp_path / "huge.libsvm").write_bytes(text)
    with pytest.raises(DataError, match=r"a feature index of 19 digits or more|3,000,000,000"):
        load_user_file(tmp_path / "huge.libsvm")
    with pytest.raises(DataError, match=r"19 digits or more|at least 3000000000 features"):
        libsvm_zero_based((lo, hi), 64, None, where="f")


def test_an_ambiguous_base_far_below_the_models_width_asks_whether_the_file_is_its():
    """A 64-feature file against a 784-feature model is refused as ambiguous; the message now
    also says the largest index is under half the model's features (a user's trial followed
    the advice, --one-based, and scored every row of the wrong file)."""
    with pytest.raises(DataError) as info:
        libsvm_zero_based((1, 64), 784, None, where="f")
    assert "under half the model's 784 features" in str(info.value)
    with pytest.raises(DataError) as info:
        libsvm_zero_based((1, 700), 784, None, where="f")
    assert "under half" not in str(info.value)


@pytest.mark.parametrize("line", ["1,2,3,4", "0.0,1.0,2.0,3.0", "5,6,7,8"])
def test_a_first_line_counting_up_by_one_is_refused_as_ambiguous(line):
    """A user's trial: a header of column numbers 1..64 was read as a row of data (an extra
    first row, every later row scored one line off), as was 0.0,1.0,...; only pandas' exact
    0,1,...,n−1 was refused. Said either way, it is read that way."""
    expected = ExpectedFeatures(n_features=4, names=None)
    cells = line.split(",")
    with pytest.raises(DataError, match=r"counts up by one.*--header or --no-header"):
        csv_header(cells, header=None, expected=expected, where="f")
    assert csv_header(cells, header=False, expected=expected, where="f") is None
    assert csv_header(cells, header=True, expected=expected, where="f") == cells
    # a row of data that is not whole numbers in increasing order stays data
    assert csv_header(["1", "2", "2", "5"], header=None, expected=expected, where="f") is None
    assert csv_header(["5", "2", "4", "1"], header=None, expected=expected, where="f") is None
    assert csv_header(["1", "2.5", "4", "5"], header=None, expected=expected, where="f") is None


def _ambiguous_until_said(line: str, problem: str) -> ExpectedFeatures:
    """A first line refused as ambiguous (naming ``problem`` and the flags), read as said with
    ``header`` False or True; the features it was read against."""
    cells = line.split(",")
    expected = ExpectedFeatures(n_features=len(cells), names=None)
    with pytest.raises(DataError, match=problem) as info:
        csv_header(cells, header=None, expected=expected, where="f")
    assert "--header or --no-header" in str(info.value)
    assert csv_header(cells, header=False, expected=expected, where="f") is None
    named = [c or f"Unnamed: {i}" for i, c in enumerate(cells)]
    assert csv_header(cells, header=True, expected=expected, where="f") == named
    return expected


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("33,34,35,36,37,42", "whole numbers in increasing order: it may name the columns"),
        (",33,34,35,36,37,42", r"frame whose columns are numbers, with its index first.*Unnamed"),
    ],
)
def test_column_numbers_with_gaps_are_refused_as_ambiguous(line, problem):
    """A user's trial: a frame of MNIST pixels less its constant columns (labels 33, 34, ...,
    42, ...) written with df.to_csv(index=False): its header was scored as a row of data, every
    later row's score one line off, with exit status 0."""
    _ambiguous_until_said(line, problem)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("5,4,3,2,1,0", "whole numbers 0 to 5 in another order"),
        ("3,1,2,4", "whole numbers 1 to 4 in another order"),
        ("12,10,11", "whole numbers 10 to 12 in another order"),
        (",5,4,3,2,1,0", r"frame whose columns are numbers, with its index first.*Unnamed"),
    ],
)
def test_reordered_column_numbers_are_refused_as_ambiguous(line, problem):
    """A review's trial: a frame without column names whose columns were reordered
    (``df[[5, 4, 3, 2, 1, 0]]``) written with df.to_csv(index=False): its header was read as a
    row of data, scored as the first example and every later row one line off, exit status 0.
    Said either way, it is read that way; distinct numbers with a gap stay data."""
    expected = _ambiguous_until_said(line, problem)
    ranks = ["2", "0", "1", "3"]  # (a second line of ranks says the file is data)
    assert (
        csv_header(["3", "1", "2", "0"], header=None, expected=expected, where="f", following=ranks)
        is None
    )
    for data in (["5", "2", "4", "1"], ["2", "2", "1", "0"], ["3", "1.0", "2", "0"], ["1", "0"]):
        assert csv_header(data, header=None, expected=expected, where="f") is None


def test_a_first_feature_named_like_a_comment_is_a_header_where_the_model_knows_it():
    """A review's trial: a model fitted on a frame whose first column is ``# rooms``, scored
    from that frame's CSV, was refused ("the first line ... is a comment") even with --header;
    its Parquet file scored. The model's own names make it a header; a comment line is still
    refused otherwise (an upload asks for a header, and a comment is not one)."""
    names = ("# rooms", "area", "age")
    known = ExpectedFeatures(n_features=3, names=names)
    assert csv_header(list(names), header=None, expected=known, where="f") == list(names)
    assert csv_header(list(names), header=True, expected=known, where="f") == list(names)
    unknown = ExpectedFeatures(n_features=3, names=None)
    for header in (None, True, False):
        with pytest.raises(DataError, match="is a comment"):
            csv_header(list(names), header=header, expected=unknown, where="f")
    with pytest.raises(DataError, match="is a comment"):
        csv_header(["# rooms", "area", "size"], header=None, expected=known, where="f")


def _labels(start, step, count=MONOTONE_NAMES, digits=1):
    return ",".join(f"{start + step * i:.{digits}f}" for i in range(count))


@pytest.mark.parametrize(
    ("line", "order"),
    [
        (_labels(400.0, 2.5), "increasing"),  # wavelengths, nm
        (_labels(4000.0, -1.93, 12, 2), "decreasing"),  # wavenumbers, cm⁻¹
        ("," + _labels(0.5, 0.5), "increasing"),  # with the frame's index first
        (",".join(f"{10 ** (i / 4):.3f}" for i in range(12)), "increasing"),  # log-spaced
    ],
)
def test_numbers_in_order_are_refused_as_ambiguous(line, order):
    """A user's trial: a frame whose column labels are wavelengths (400.0, 402.5, ...) written
    with df.to_csv(index=False) and scored by a model fitted on an array: its header was scored
    as a first row, every later row one line off, exit status 0 (only whole numbers in order were
    refused). Said either way, it is read that way."""
    cells = line.split(",")
    expected = ExpectedFeatures(n_features=len(cells), names=None)
    with pytest.raises(DataError) as info:
        csv_header(cells, header=None, expected=expected, where="f")
    message = str(info.value)
    assert "--header or --no-header" in message
    if cells[0]:
        assert f"numbers in {order} order" in message
    else:
        assert "with its index first" in message
    assert csv_header(cells, header=False, expected=expected, where="f") is None
    named = [c or f"Unnamed: {i}" for i, c in enumerate(cells)]
    assert csv_header(cells, header=True, expected=expected, where="f") == named


@pytest.mark.parametrize(
    "line",
    [
        "0.31,0.05,0.77,0.42,0.18,0.93,0.66,0.12",  # no order
        "0.1,0.2,0.2,0.3,0.4,0.5,0.6,0.9",  # not strictly
        "0.1,0.2,0.3,0.4,0.5,0.6,0.7,inf",  # in order but for an infinity
        "1.5,2.5,3.5,4.5",  # in even order, fewer than MONOTONE_NAMES cells (a short row)
        _labels(400.0, 2.5, MONOTONE_NAMES - 1),  # the same
    ],
)
def test_rows_of_data_not_in_order_across_enough_columns_stay_data(line):
    """What the order rule leaves as data: a row in no order, one that repeats a value, one
    holding an infinity, and rows in order across fewer than MONOTONE_NAMES columns (such as
    the short rows written by hand in this suite's files)."""
    cells = line.split(",")
    expected = ExpectedFeatures(n_features=len(cells), names=None)
    assert csv_header(cells, header=None, expected=expected, where="f") is None


def test_a_first_line_in_order_followed_by_one_in_the_same_order_is_data():
    """Sorted features (quantiles, cumulative counts) put every row in order: a second line in
    the same order says the file is data, where a header of wavelengths is followed by rows in
    no order (a reviewer's case: such files would all have needed --no-header)."""
    cells = _labels(0.1, 0.1).split(",")
    expected = ExpectedFeatures(n_features=len(cells), names=None)
    same = _labels(0.3, 0.2).split(",")
    assert csv_header(cells, header=None, expected=expected, where="f", following=same) is None
    other = list(reversed(same))
    with pytest.raises(DataError, match="numbers in increasing order"):
        csv_header(cells, header=None, expected=expected, where="f", following=other)


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("0.0,0.02745098,0.5,0.0", "a row of numbers"),
        ("yes,0.25,1.5,1.5", "a row of examples (it holds '0.25')"),
    ],
)
def test_a_header_asked_for_on_a_row_of_data_is_told_it_is_one(line, what):
    """--header on a file without one: a row with a repeated value was refused as a header
    naming a column twice; it is told to be a row of data."""
    cells = line.split(",")
    expected = ExpectedFeatures(n_features=4, names=None)
    with pytest.raises(DataError, match=re.escape(what) + r", not names of columns \(it repeats"):
        csv_header(cells, header=True, expected=expected, where="f")


@pytest.mark.parametrize("line", ["0", "0,1", ",0", ",0,1", "400.5,401.0,401.5", "1,2"])
def test_a_header_asked_for_is_the_callers_answer(line):
    """Asked for, a header is one (pandas' header of a frame of one or two columns, decimal
    column names such as wavelengths): refused at first as rows of numbers, which left such
    files no way to be read."""
    cells = line.split(",")
    expected = ExpectedFeatures(n_features=len(cells), names=None)
    named = [c or f"Unnamed: {i}" for i, c in enumerate(cells)]
    assert csv_header(cells, header=True, expected=expected, where="f") == named


def test_count_mismatches_name_pandas_index_and_a_trailing_separator():
    expected = ExpectedFeatures(n_features=3, names=None)
    with pytest.raises(DataError, match=r"first column has no name.*--exclude 'Unnamed: 0'"):
        feature_columns(["Unnamed: 0", "a", "b", "c"], 4, expected, where="f")
    with pytest.raises(DataError, match=r"last column has no name.*trailing comma"):
        feature_columns(["a", "b", "c", "Unnamed: 3"], 4, expected, where="f")
    with pytest.raises(DataError, match=r"'lable'\] to exclude .*did you mean 'label'\?"):
        feature_columns(["a", "b", "c", "label"], 4, expected, ("lable",), where="f")


@pytest.mark.parametrize("rows", [b"1,True,2\n2,False,3\n", b"1,0.5,2\n2,True,3\n"])
def test_true_and_false_cells_are_words_in_any_chunk(rows):
    """pandas reads a column of True / False as booleans (a numeric dtype), so a chunk holding
    only those became 1.0 / 0.0 while one that mixed them with numbers was refused: the same
    file was read or refused by its chunking. Both are refused, naming the cell and how to
    write it (a data engineer's trial: Parquet's booleans read as 1 / 0, CSV's refused bare)."""
    with pytest.raises(
        DataError, match=r"line \d+, column 'b': 'True' is not a number \(a boolean: write it as 1"
    ):
        parse_csv_rows(
            rows, names=["a", "b", "c"], numeric=["a", "b", "c"], where="f", first_line=1
        )


def test_cli_words_for_files_read_as_another_format_or_with_a_comment_first(tmp_path):
    """A user's trial: a CSV named .txt read as LIBSVM printed its whole first line as a
    "multilabel" label; a Parquet file forced to LIBSVM printed its bytes as a label; a CSV
    starting with a '# ...' line got a message about separators. Each now says what the file
    is and which option reads it."""
    from attentive.data.libsvm import read_libsvm_rows

    row = ",".join(["0.25"] * 64)
    with pytest.raises(DataError) as info:
        read_libsvm_rows(f"{row}\n".encode(), where="f.txt", n_features=64, zero_based=False)
    message = str(info.value)
    assert "separated by commas, as in CSV" in message and "--format csv" in message
    assert "multilabel" not in message and row not in message  # (cut short)
    with pytest.raises(DataError, match=r"is a Parquet file .*--format parquet"):
        guess_format("d.parquet", b"PAR1\x15\x04", format="libsvm")
    with pytest.raises(DataError, match=r"rows.csv is a Parquet file .*name it .parquet"):
        guess_format("rows.csv", b"PAR1\x15\x04")  # (misnamed: a review)
    with pytest.raises(DataError, match=r"which is not read here"):
        guess_format("rows.csv", b"PAR1\x15\x04", allowed=("libsvm", "csv"))
    expected = ExpectedFeatures(n_features=3, names=None)
    with pytest.raises(DataError, match="is a comment; CSV files are read without comment"):
        csv_header(["# exported rows"], header=None, expected=expected, where="f")
    # a header whose first name starts with '#' is still a header
    assert csv_header(["#id", "a", "b"], header=None, expected=expected, where="f") == [
        "#id",
        "a",
        "b",
    ]
