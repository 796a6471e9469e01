"""A pipeline's StandardScaler, MinMaxScaler or PCA applied directly (attentive.heads) gives
scikit-learn's values bit for bit, and everything it does not take goes to the head's own
transform."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
from sklearn.svm import SVC

from attentive.estimator import AttentiveClassifier
from attentive.heads import TiledRows, apply_head, tiled_rows


def _rows(rng, n, d, dtype):
    X = rng.normal(size=(n, d)) * rng.uniform(1e-3, 1e3, size=d) + rng.normal(size=d) * 50
    X[:, 0] = 3.0  # a constant column: scale 1
    return X.astype(dtype)


class _Counting(Pipeline):
    """A pipeline that counts calls of its own transform."""

    calls = 0

    def transform(self, X, **params):
        type(self).calls += 1
        return super().transform(X, **params)


def _head(steps, X):
    head = _Counting([(f"s{i}", s) for i, s in enumerate(steps)])
    return head.fit(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "steps",
    [
        lambda: [StandardScaler()],
        lambda: [StandardScaler(with_mean=False)],
        lambda: [StandardScaler(with_std=False)],
        lambda: [StandardScaler(with_mean=False, with_std=False)],
        lambda: [StandardScaler(), StandardScaler(with_mean=False)],
        lambda: [MinMaxScaler()],
        lambda: [MinMaxScaler(feature_range=(-1, 1), clip=True)],
        lambda: [StandardScaler(), MinMaxScaler(clip=True)],
        lambda: [PCA(12, random_state=0)],
        lambda: [PCA(0.9, whiten=True, random_state=0)],
        lambda: [StandardScaler(), PCA(12, random_state=0), MinMaxScaler()],
        lambda: [PCA(20, random_state=0), StandardScaler(with_mean=False)],
    ],
)
@pytest.mark.parametrize("fit_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "Fortran", "strided"])
def test_scalers_and_a_pca_are_applied_directly_with_transforms_values(
    dtype, steps, fit_dtype, layout
):
    """Fitted on float32 or float64 rows (a MinMaxScaler keeps their dtype in its scale),
    applied to either, in either memory layout or as a strided view (transform's copy keeps
    the layout, and a PCA's product after a scaler rounds by it)."""
    rng = np.random.default_rng(0)
    X_fit = _rows(rng, 300, 37, fit_dtype)
    X = _rows(rng, 211, 37, dtype) * 1.3  # beyond the fitted range: clipping matters
    if layout == "Fortran":
        X = np.asfortranarray(X)
    elif layout == "strided":
        X = _rows(rng, 422, 37, dtype)[::2] * 1.3
    X_before = X.copy()
    head = _head(steps(), X_fit)
    expected = head.transform(X)
    _Counting.calls = 0
    got = apply_head(head, X)
    assert _Counting.calls == 0  # done directly, not by transform
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)  # bit for bit, not merely close
    assert got is not X and np.array_equal(X, X_before)  # the caller's rows are untouched


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_behind_a_pca_non_finite_rows_go_to_transform_which_refuses_them(value):
    """A PCA's transform refuses NaN and infinity: the direct path finds them in the
    projections and leaves the rows to transform, which raises its own error; rows whose
    projections overflow take transform too, and its infinite values are refused as the model
    refuses them (the bare pipeline's SVC does)."""
    rng = np.random.default_rng(7)
    X_fit = _rows(rng, 200, 30, np.float32)
    head = _head([PCA(8, random_state=0)], X_fit)
    X = _rows(rng, 40, 30, np.float32)
    X[5, 7] = value
    _Counting.calls = 0
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        apply_head(head, X)
    assert _Counting.calls == 1
    big = np.full((3, 30), 3e38, dtype=np.float32)
    _Counting.calls = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert not np.isfinite(head.transform(big)).all()
        with pytest.raises(ValueError, match="after the pipeline's transforms"):
            apply_head(head, big)
        with pytest.raises(ValueError, match="infinity"):
            make_pipeline(PCA(8, random_state=0), SVC()).fit(X_fit, X_fit[:, 1] > 0).predict(big)
    assert _Counting.calls == 2  # the reference and apply_head's fallback
    assert tiled_rows(head, _rows(rng, 40, 30, np.float32)) is None  # taken whole


def _fitted_scaler_head(X_fit, **kw):
    return _head([StandardScaler(**kw)], X_fit)


def test_non_finite_rows_go_to_transform_which_decides():
    rng = np.random.default_rng(1)
    X_fit = _rows(rng, 100, 5, np.float32)
    head = _fitted_scaler_head(X_fit)
    X = _rows(rng, 10, 5, np.float32)
    X[3, 2] = np.nan  # transform lets NaN through, and the model refuses it
    _Counting.calls = 0
    with pytest.raises(ValueError, match="NaN or infinity after the pipeline's transforms"):
        apply_head(head, X)
    assert _Counting.calls == 1
    X[3, 2] = np.inf  # and rejects infinity with its own message
    with pytest.raises(ValueError, match="infinity"):
        apply_head(head, X)
    # Finite values whose sum overflows float32 take transform too, with the same values.
    big = np.full((4, 5), 3e38, dtype=np.float32)
    _Counting.calls = 0
    assert np.array_equal(apply_head(head, big), head.transform(big))
    assert _Counting.calls == 2  # apply_head's fallback and the reference


@pytest.mark.parametrize(
    "case",
    ["int rows", "list", "one-d", "empty", "named columns", "copy=False", "another scaler"],
)
def test_what_is_not_taken_directly_goes_to_transform(case):
    import pandas as pd

    rng = np.random.default_rng(2)
    X_fit = _rows(rng, 50, 4, np.float64)
    X = _rows(rng, 6, 4, np.float64)
    head = _fitted_scaler_head(X_fit)
    if case == "int rows":
        X = np.round(X).astype(np.int64)
    elif case == "list":
        X = X.tolist()
    elif case == "one-d":
        X = X[0]
    elif case == "empty":
        X = X[:0]
    elif case == "named columns":
        head = _fitted_scaler_head(pd.DataFrame(X_fit, columns=list("abcd")))
    elif case == "copy=False":
        head = _fitted_scaler_head(X_fit, copy=False)
        X_mine = X.copy()
    elif case == "another scaler":
        head = _head([MaxAbsScaler()], X_fit)
    _Counting.calls = 0
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            got = apply_head(head, X)
        except ValueError:
            got = "raised"
    assert _Counting.calls == 1
    if case in ("one-d", "empty"):
        assert got == "raised"  # transform's own error
        return
    if case == "named columns":  # transform's own warning about the missing names
        assert any("feature names" in str(w.message) for w in seen)
    if case == "copy=False":  # transform scales the caller's rows in place, as it always does
        assert not np.array_equal(X, X_mine)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(got, head.transform(X))


def test_an_estimator_behind_a_standard_scaler_decides_as_the_pipeline():
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(400, 70)) * rng.uniform(0.01, 10, size=70)).astype(np.float32)
    y = (X[:, :5].sum(axis=1) + rng.normal(size=400) > 0).astype(int)
    att = AttentiveClassifier(make_pipeline(StandardScaler(), SVC()), boundary="full").fit(X, y)
    pipe = att.estimator_
    X_new = (rng.normal(size=(300, 70)) * rng.uniform(0.01, 10, size=70)).astype(np.float32)
    assert np.array_equal(att.predict(X_new), pipe.predict(X_new))
    np.testing.assert_allclose(
        att.decision_function(X_new), pipe.decision_function(X_new), rtol=0, atol=1e-4
    )


def test_tiled_rows_give_transforms_values_for_the_rows_taken():
    rng = np.random.default_rng(5)
    X_fit = _rows(rng, 200, 30, np.float32)
    X = _rows(rng, 500, 30, np.float32)
    head = _fitted_scaler_head(X_fit)
    expected = head.transform(X)
    tiled = tiled_rows(head, X)
    assert isinstance(tiled, TiledRows) and tiled.shape == X.shape and tiled.dtype == X.dtype
    idx = rng.permutation(500)[:77]
    for key in (slice(0, 1), slice(100, 356), idx):
        assert np.array_equal(tiled[key], expected[key])
    assert np.array_equal(np.asarray(tiled), expected)
    X[250, 3] = np.inf  # a tile holding an infinite value: transform's own error
    with pytest.raises(ValueError, match="infinity"):
        tiled_rows(head, X)[200:300]
    assert np.array_equal(tiled_rows(head, X)[:200], expected[:200])
    # What transform must do whole gives no tiled rows.
    assert tiled_rows(_head([MaxAbsScaler()], X_fit), X) is None
    assert tiled_rows(head, X.tolist()) is None


def test_full_evaluation_behind_a_standard_scaler_scales_a_tile_at_a_time(monkeypatch):
    """The evaluator never holds the transformed rows whole: each tile is scaled as it is
    taken; decisions are the pipeline's."""
    import attentive.heads as heads

    rng = np.random.default_rng(6)
    X = (rng.normal(size=(1500, 80)) * rng.uniform(0.01, 10, size=80)).astype(np.float32)
    y = (X[:, :5].sum(axis=1) + rng.normal(size=1500) > 0).astype(int)
    att = AttentiveClassifier(make_pipeline(StandardScaler(), SVC()), boundary="full")
    att.fit(X[:500], y[:500])
    sizes = []
    original = heads.apply_head

    def counted(head, rows):
        sizes.append(rows.shape[0])
        return original(head, rows)

    monkeypatch.setattr(heads, "apply_head", counted)
    from attentive.evaluation import evaluation_options

    with evaluation_options(chunk_size=200, n_jobs=1):
        got = att.decision_function(X[500:])
    assert sizes and max(sizes) <= 200 and sum(sizes) >= 1000
    monkeypatch.setattr(heads, "apply_head", original)
    pipe = att.estimator_
    np.testing.assert_allclose(got, pipe.decision_function(X[500:]), rtol=0, atol=1e-4)
    assert np.array_equal(att.predict(X[500:]), pipe.predict(X[500:]))


def _frame_pipelines():
    """Pipelines whose transforms hand the model a data frame, with each kind of model."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import FunctionTransformer

    return {
        "set_output SVC": make_pipeline(StandardScaler(), SVC()).set_output(transform="pandas"),
        "set_output LR": make_pipeline(StandardScaler(), LogisticRegression()).set_output(
            transform="pandas"
        ),
        "function SVC": make_pipeline(FunctionTransformer(np.log1p), SVC()),
        "set_output AdaBoost": make_pipeline(
            MinMaxScaler(), AdaBoostClassifier(n_estimators=15, random_state=0)
        ).set_output(transform="pandas"),
    }


@pytest.mark.parametrize("name", list(_frame_pipelines()))
@pytest.mark.parametrize("boundary", ["curved", "calibrated"])
def test_transforms_that_give_a_data_frame_are_walked_as_the_model_receives_them(name, boundary):
    """A pipeline set to give pandas frames (or a FunctionTransformer of a frame) hands its
    model a frame; the walk took its rows by position from it and fit raised pandas' KeyError.
    Every term's sum is the model's own decision_function, the labels its predict."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    clf = AttentiveClassifier(_frame_pipelines()[name], boundary=boundary, random_state=0)
    clf.fit(X, y)
    full = clf.with_rule("full")
    np.testing.assert_allclose(
        full.decision_function(X), clf.estimator_.decision_function(X), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_array_equal(full.predict(X), clf.estimator_.predict(X))
    # The walk too: as the same model's walk over arrays (the pipeline without its frames).
    plain = AttentiveClassifier(_frame_pipelines()[name].set_output(transform="default"))
    plain.set_params(boundary=boundary, random_state=0, early_stopping=True).fit(X, y)
    walked = clf.set_params(early_stopping=True).evaluate(X)
    reference = plain.evaluate(X)
    np.testing.assert_array_equal(walked.positive, reference.positive)
    np.testing.assert_array_equal(walked.n_evaluated, reference.n_evaluated)
    assert walked.n_evaluated.mean() < clf.n_terms_  # (it stops)


def _nan_pipelines():
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    return {
        "LogisticRegression": make_pipeline(StandardScaler(), LogisticRegression()),
        "LinearSVC": make_pipeline(StandardScaler(), LinearSVC()),
        "AdaBoostClassifier": make_pipeline(
            MinMaxScaler(), AdaBoostClassifier(n_estimators=15, random_state=0)
        ),
        "SVC": make_pipeline(StandardScaler(), SVC()),
    }


@pytest.mark.parametrize("name", list(_nan_pipelines()))
@pytest.mark.parametrize("early_stopping", ["auto", True, False])
def test_nan_that_a_scaler_passes_on_is_refused_as_the_model_refuses_it(name, early_stopping):
    """A scaler passes NaN on and every supported model refuses it: the bare pipeline raises.
    Behind a pipeline a linear model or AdaBoost gave a NaN or a made-up decision for the row
    (and predict a label). Now a ValueError says what the model received; with an imputer in
    front, the same rows are decided as the bare pipeline decides them."""
    from sklearn.base import clone
    from sklearn.datasets import load_breast_cancer
    from sklearn.impute import SimpleImputer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    bad = X.iloc[:40].copy()
    bad.iloc[7, 3] = np.nan
    model = _nan_pipelines()[name]
    with pytest.raises(ValueError, match="NaN"):
        clone(model).fit(X, y).predict(bad)  # the bare pipeline refuses it
    clf = AttentiveClassifier(model, boundary="curved", early_stopping=early_stopping)
    clf.set_params(random_state=0).fit(X, y)
    for method in ("predict", "decision_function"):
        with pytest.raises(ValueError, match=f"after the pipeline's transforms.*{name}"):
            getattr(clf, method)(bad)
        with pytest.raises(ValueError, match="after the pipeline's transforms"):
            getattr(clf, method)(bad.iloc[6:9])  # a small batch
    imputed = AttentiveClassifier(make_pipeline(SimpleImputer(), *[s for _, s in model.steps]))
    imputed.set_params(boundary="full", early_stopping=early_stopping).fit(X, y)
    np.testing.assert_array_equal(imputed.predict(bad), imputed.estimator_.predict(bad))


def test_nan_in_sparse_rows_behind_a_scaler_is_refused():
    """Sparse rows through a MaxAbsScaler: the NaN in the stored values is named too."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = sp.random(300, 20, density=0.3, format="csr", random_state=3)
    y = rng.integers(0, 2, 300)
    clf = AttentiveClassifier(make_pipeline(MaxAbsScaler(), LogisticRegression()))
    clf.set_params(boundary="curved", random_state=0).fit(X, y)
    bad = X[:5].tolil()
    bad[2, 4] = np.nan
    with pytest.raises(ValueError, match="after the pipeline's transforms"):
        clf.predict(bad.tocsr())
    np.testing.assert_array_equal(clf.with_rule("full").predict(X), clf.estimator_.predict(X))


def test_nan_in_a_frame_of_text_and_numbers_is_named_not_the_text():
    """A ColumnTransformer of a number and a text column: NaN in the number gave "could not
    convert string to float" (the raw frame re-checked as numbers), not what was wrong."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.RandomState(0)
    df = pd.DataFrame({"age": rng.normal(40, 10, 600), "city": rng.choice(["a", "b", "c"], 600)})
    y = np.where(df.age > 40, "yes", "no")
    ct = make_column_transformer((StandardScaler(), ["age"]), (OneHotEncoder(), ["city"]))
    clf = AttentiveClassifier(make_pipeline(ct, SVC()), boundary="curved", random_state=0)
    clf.fit(df, y)
    bad = df.iloc[:3].copy()
    bad.loc[1, "age"] = np.nan
    with pytest.raises(ValueError, match="contains NaN or infinity after the pipeline's"):
        clf.predict(bad)


def test_one_row_of_a_frame_as_a_series_is_named_as_such():
    """``df.iloc[0]`` (a Series indexed by the feature names) for a ColumnTransformer pipeline
    said "X does not contain any features"; now what it is and what to pass. The row as a
    one-row frame is decided as the model decides it."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    from attentive import InvalidParameterError

    rng = np.random.RandomState(0)
    df = pd.DataFrame(
        {
            "age": rng.normal(40, 10, 300),
            "city": rng.choice(["a", "b"], 300),
            "w": rng.normal(size=300),
        }
    )
    y = np.where(df.age + 5 * df.w > 40, "yes", "no")
    ct = make_column_transformer((StandardScaler(), ["age", "w"]), (OneHotEncoder(), ["city"]))
    clf = AttentiveClassifier(make_pipeline(ct, SVC()), boundary="full").fit(df, y)
    with pytest.raises(
        InvalidParameterError, match=r"one row as a pandas Series.*df\.iloc\[\[i\]\]"
    ):
        clf.predict(df.iloc[0])
    assert clf.predict(df.iloc[[0]])[0] == clf.estimator_.predict(df.iloc[[0]])[0]
    # Its columns in another order (the ColumnTransformer takes them by name), and a row of an
    # all-numeric frame (a numeric Series, which got the generic "reshape(1, -1)" advice,
    # whose array the ColumnTransformer refuses).
    with pytest.raises(InvalidParameterError, match="one row as a pandas Series"):
        clf.predict(df[["w", "city", "age"]].iloc[3])
    numeric = make_column_transformer((StandardScaler(), ["age", "w"]))
    numbers = df[["age", "w"]]
    clf = AttentiveClassifier(make_pipeline(numeric, SVC()), boundary="full").fit(numbers, y)
    with pytest.raises(InvalidParameterError, match="one row as a pandas Series"):
        clf.predict(numbers.iloc[0])


def test_nan_is_refused_by_every_method_that_takes_rows_and_behind_a_nested_pipeline():
    """Not only predict: partial_scores, partial_masses, oracle_n_evaluated, scale_outcomes and
    calibrate (whose guarantee would count a made-up full decision) take rows through the
    pipeline's transforms and refuse a NaN they pass on. A pipeline nested in a one-step
    pipeline is named as one; nullable columns' missing values (pd.NA) are NaN, not a
    TypeError."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import FunctionTransformer

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    clf = AttentiveClassifier(model, boundary="curved", random_state=0).fit(X, y)
    bad = X[:10].copy()
    bad[2, 2] = np.nan
    for method in ("partial_scores", "partial_masses", "oracle_n_evaluated", "calibrate"):
        with pytest.raises(ValueError, match="NaN or infinity after the pipeline's transforms"):
            getattr(clf, method)(np.vstack([X[:300], bad]) if method == "calibrate" else bad)
    nested = Pipeline([("m", make_pipeline(FunctionTransformer(np.log1p), LogisticRegression()))])
    clf = AttentiveClassifier(nested, boundary="curved", random_state=0).fit(X, y)
    low = X[:5].copy()
    low[1, 3] = -10.0  # log1p(-10): NaN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(
            ValueError, match=r"after the pipeline's transforms \(what LogisticRegression"
        ):
            clf.predict(low)
    frame = pd.DataFrame(X[:, :4], columns=list("abcd"))
    nullable = make_pipeline(FunctionTransformer(lambda d: d.astype("Float64")), SVC())
    clf = AttentiveClassifier(nullable, boundary="curved", random_state=0).fit(frame, y)
    gap = frame.iloc[:5].copy()
    gap.iloc[2, 1] = np.nan
    for method in ("predict", "partial_scores"):
        with pytest.raises(ValueError, match="NaN or infinity after the pipeline's transforms"):
            getattr(clf, method)(gap)
    np.testing.assert_array_equal(
        clf.with_rule("full").predict(frame), clf.estimator_.predict(frame)
    )


@pytest.mark.parametrize("piped", [False, True], ids=["model", "pipeline"])
def test_a_text_value_in_a_frame_is_named_by_its_column_and_row(piped):
    """scikit-learn says only "could not convert string to float: 'n/a'"; the classifier names the
    value's column and row, and what takes numbers only (fit and every evaluation)."""
    import pandas as pd

    from attentive.errors import DataError

    rng = np.random.RandomState(0)
    df = pd.DataFrame(rng.normal(size=(300, 4)), columns=["a", "b", "c", "d"])
    y = (df.a + df.b > 0).astype(int)
    model = make_pipeline(StandardScaler(), SVC()) if piped else SVC()
    taker = "the pipeline's first step \\(StandardScaler\\)" if piped else "the model"
    stray = df.assign(pen="blue")  # a text column left in by mistake
    with pytest.raises(DataError, match=f"column 'pen', row 0: 'blue' is not a number; {taker}"):
        AttentiveClassifier(clone(model), boundary="curved", random_state=0).fit(stray, y)
    clf = AttentiveClassifier(clone(model), boundary="curved", random_state=0).fit(df, y)
    bad = df.iloc[:6].astype({"c": object})
    bad.loc[4, "c"] = "n/a"
    for method in (clf.predict, clf.decision_function, clf.evaluate):
        with pytest.raises(DataError, match=f"column 'c', row 4: 'n/a' is not a number; {taker}"):
            method(bad)
    # The same frame with the value a number is taken: the refusal is the text's.
    bad.loc[4, "c"] = 0.25
    assert clf.predict(bad).shape == (6,)


def test_text_the_model_encodes_is_not_named_for_a_value_it_cannot_read():
    """A ColumnTransformer one-hot encodes 'pen' and passes the numbers on: 'n/a' in a number
    column was named as the first text in the frame ('pen' = 'blue', which the model encodes
    on purpose); the value scikit-learn could not read is named."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    from attentive.errors import DataError

    rng = np.random.RandomState(0)
    df = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    df["pen"] = np.resize(["blue", "black"], 200)
    y = (df.a > 0).astype(int)
    ct = ColumnTransformer(
        [
            ("pen", OneHotEncoder(handle_unknown="ignore"), ["pen"]),
            ("x", "passthrough", list("abc")),
        ]
    )
    clf = AttentiveClassifier(make_pipeline(ct, SVC()), boundary="curved", random_state=0)
    clf.fit(df, y)
    bad = df.iloc[:5].astype({"b": object})
    bad.loc[3, "b"] = "n/a"
    with pytest.raises(DataError, match=r"column 'b', row 3: 'n/a' is not a number; the pipeline"):
        clf.predict(bad)
