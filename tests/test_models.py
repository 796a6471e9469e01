"""Training, the model cache, safe save / load and the supported-model checks."""

from __future__ import annotations

import gzip
import io
import pickle
import zipfile

import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC, LinearSVC

from attentive.data import clear_cache, load_dataset
from attentive.errors import (
    DataError,
    FeatureMismatchError,
    InvalidParameterError,
    UnsupportedModelError,
    UntrustedModelError,
)
from attentive.models import (
    TRUSTED_TYPES,
    check_supported_model,
    default_model_params,
    load_model,
    model_cache_path,
    model_fingerprint,
    paper_preset,
    save_model,
    train_model,
)


@pytest.fixture(scope="module")
def digits():
    clear_cache()
    return load_dataset("digits-2v5")


@pytest.fixture(scope="module")
def small():
    return load_dataset("synthetic", n_train=200, n_test=60, n_features=6, seed=5)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("rbf", SVC(kernel="rbf", gamma="scale")),
        ("linear", SVC(kernel="linear")),
        ("poly", SVC(kernel="poly", gamma=0.5, degree=2, coef0=1.0)),
        ("sigmoid", SVC(kernel="sigmoid", gamma=0.05, coef0=0.5)),
        ("linear-svc", LinearSVC(max_iter=10_000, random_state=0)),
        ("logistic", LogisticRegression(max_iter=2_000)),
    ],
)
def test_train_model_each_kind_matches_sklearn(small, kind, expected):
    gamma = expected.get_params().get("gamma", "scale")
    model = train_model(
        small,
        kind=kind,
        C=0.7,
        gamma=gamma,
        degree=expected.get_params().get("degree", 3),
        coef0=expected.get_params().get("coef0", 0.0),
        cache=False,
    )
    reference = expected.set_params(C=0.7).fit(small.X_train, small.y_train)
    assert type(model) is type(reference)
    np.testing.assert_array_equal(
        model.decision_function(small.X_test), reference.decision_function(small.X_test)
    )


def test_sparse_training_stays_sparse():
    ds = load_dataset("synthetic-sparse", n_train=200, n_test=50)
    model = train_model(ds, kind="linear-svc", cache=False)
    assert model.coef_.shape == (1, 20958)
    assert model.decision_function(ds.X_test).shape == (50,)


def test_cache_round_trip_and_keys(digits, tmp_path, monkeypatch):
    first = train_model(digits, kind="rbf", C=1.0, cache_dir=tmp_path)
    path = model_cache_path(digits, kind="rbf", C=1.0, cache_dir=tmp_path)
    assert path.is_file() and path.parent == tmp_path and path.name.startswith("digits-2v5-rbf-")

    # The second call must load, not fit.
    def no_fit(*args, **kwargs):
        raise AssertionError("fit called although the model is cached")

    monkeypatch.setattr(SVC, "fit", no_fit)
    again = train_model(digits, kind="rbf", C=1.0, cache_dir=tmp_path)
    assert again is not first
    np.testing.assert_array_equal(
        again.decision_function(digits.X_test), first.decision_function(digits.X_test)
    )
    # Different parameters or data mean a different file; irrelevant parameters do not.
    assert model_cache_path(digits, kind="rbf", C=2.0, cache_dir=tmp_path) != path
    other = load_dataset("digits-2v5", seed=1)
    assert model_cache_path(other, kind="rbf", C=1.0, cache_dir=tmp_path) != path
    linear = model_cache_path(digits, kind="linear", gamma=0.1, cache_dir=tmp_path)
    assert linear == model_cache_path(digits, kind="linear", gamma=5.0, cache_dir=tmp_path)


def test_cache_defaults_to_data_home(digits, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_DATA", str(tmp_path))
    train_model(digits, kind="logistic")
    assert [p.parent for p in tmp_path.rglob("*.skops")] == [tmp_path / "models"]


def test_damaged_cache_is_retrained(digits, tmp_path):
    path = model_cache_path(digits, kind="linear", cache_dir=tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a model")
    with pytest.warns(UserWarning, match="damaged cached model"):
        model = train_model(digits, kind="linear", cache_dir=tmp_path)
    assert load_model(path).support_.size == model.support_.size


def test_save_load_round_trip_is_identical(digits, tmp_path):
    models = [
        train_model(digits, kind="rbf", cache=False),
        train_model(digits, kind="linear-svc", cache=False),
        make_pipeline(StandardScaler(), LogisticRegression()).fit(digits.X_train, digits.y_train),
        AdaBoostClassifier(n_estimators=5, random_state=0).fit(digits.X_train, digits.y_train),
    ]
    for i, model in enumerate(models):
        path = save_model(model, tmp_path / f"m{i}.skops")
        loaded = load_model(path, n_features=digits.n_features)
        assert np.array_equal(
            loaded.decision_function(digits.X_test), model.decision_function(digits.X_test)
        )
        assert model_fingerprint(loaded) == model_fingerprint(model)
        from_bytes = load_model(path.read_bytes())
        assert model_fingerprint(from_bytes) == model_fingerprint(model)


def test_fingerprint_tells_models_apart(digits):
    a = train_model(digits, kind="rbf", C=1.0, cache=False)
    b = train_model(digits, kind="rbf", C=0.5, cache=False)
    assert a is not b and model_fingerprint(a) == model_fingerprint(
        train_model(digits, kind="rbf", C=1.0, cache=False)
    )
    assert model_fingerprint(a) != model_fingerprint(b)
    assert len(model_fingerprint(a)) == 16 and int(model_fingerprint(a), 16) >= 0


class _Explode:
    """Unpickling this would create a marker file: proves the loader never unpickles."""

    marker = None

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickle_and_joblib_files_are_refused_without_unpickling(digits, tmp_path):
    marker = tmp_path / "unpickled"
    _Explode.marker = marker
    payload = pickle.dumps(_Explode())
    for name, data in [
        ("model.pkl", payload),
        ("model.joblib.gz", gzip.compress(payload)),
        ("model.pkl.zlib", b"x\x9c" + b"\x00" * 10),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(UntrustedModelError, match=r"never unpickles.*skops"):
            load_model(path)
    with pytest.raises(UntrustedModelError, match="pickle"):
        load_model(pickle.dumps(train_model(digits, kind="linear", cache=False)))
    assert not marker.exists()


def test_untrusted_skops_types_are_listed(digits, tmp_path):
    log_svm = make_pipeline(FunctionTransformer(abs), SVC()).fit(digits.X_train, digits.y_train)
    path = tmp_path / "log.skops"
    sio.dump(log_svm, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert untrusted and not set(untrusted) & set(TRUSTED_TYPES)
    with pytest.raises(UntrustedModelError) as info:
        load_model(path)
    for type_name in untrusted:
        assert type_name in str(info.value)


def test_trusted_extra_types_load(digits, tmp_path):
    # AdaBoost stores sklearn.tree._tree.Tree, which skops does not trust by default but we do.
    model = AdaBoostClassifier(n_estimators=3, random_state=0).fit(digits.X_train, digits.y_train)
    path = save_model(model, tmp_path / "ada.skops")
    assert "sklearn.tree._tree.Tree" in sio.get_untrusted_types(file=path)
    assert np.array_equal(load_model(path).predict(digits.X_test), model.predict(digits.X_test))


def test_feature_count_mismatch_names_both_numbers(digits, tmp_path):
    path = save_model(train_model(digits, kind="linear", cache=False), tmp_path / "m.skops")
    with pytest.raises(FeatureMismatchError, match="expects 64 features but the dataset has 30"):
        load_model(path, n_features=30)


def test_unsupported_models(digits, tmp_path):
    X, y = digits.X_train, digits.y_train
    forest = RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y)
    path = tmp_path / "forest.skops"
    sio.dump(forest, path)
    # skops would load it (it trusts scikit-learn's estimators); we refuse the model type.
    with pytest.raises(
        UnsupportedModelError, match=r"RandomForestClassifier is not supported.*LinearSVC"
    ):
        load_model(path)
    with pytest.raises(
        UnsupportedModelError,
        match=r"kernel='precomputed' is not supported.*'linear', 'rbf', 'poly' or 'sigmoid'",
    ):
        check_supported_model(SVC(kernel="precomputed").fit(X @ X.T, y))
    multi = LogisticRegression(max_iter=500).fit(X, np.arange(len(y)) % 3)
    with pytest.raises(UnsupportedModelError, match="3 classes"):
        check_supported_model(multi)
    with pytest.raises(UnsupportedModelError, match="not fitted"):
        save_model(SVC(), tmp_path / "unfitted.skops")
    with pytest.raises(UnsupportedModelError, match="Pipeline"):
        check_supported_model(make_pipeline(StandardScaler(), RandomForestClassifier()))
    check_supported_model(make_pipeline(StandardScaler(), LinearSVC()).fit(X, y))


def test_unsupported_model_in_skops_file_is_refused(digits, tmp_path):
    multi = SVC().fit(digits.X_train, np.arange(len(digits.y_train)) % 3)
    path = tmp_path / "multi.skops"
    sio.dump(multi, path)
    with pytest.raises(UnsupportedModelError, match="3 classes"):
        load_model(path)


def test_not_a_model_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_model(tmp_path / "missing.skops")
    (tmp_path / "empty.skops").write_bytes(b"")
    with pytest.raises(DataError, match="empty"):
        load_model(tmp_path / "empty.skops")
    with pytest.raises(UnsupportedModelError, match="not a skops model file"):
        load_model(b"hello, I am text")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "just a zip")
    with pytest.raises(UnsupportedModelError, match="zip archive but not a valid skops"):
        load_model(buffer.getvalue())
    # A zip's first bytes only (a truncated download): not "a zip archive" and "not a zip file"
    # in one sentence, as before (a user's trial).
    with pytest.raises(UnsupportedModelError, match="starts like a zip archive") as info:
        load_model(buffer.getvalue()[:40])
    assert "truncated or damaged" in str(info.value)


def test_presets_and_defaults():
    assert paper_preset("gisette") == {"kind": "linear", "C": 1.0}
    assert paper_preset("mnist-2v5") == {"kind": "rbf", "C": 1.0, "gamma": 0.0125}
    assert paper_preset("real-sim") == {"kind": "linear-svc", "C": 1.0}
    with pytest.raises(InvalidParameterError, match="gisette, mnist-2v5, real-sim"):
        paper_preset("digits-2v5")
    assert default_model_params("mnist-2v5") == paper_preset("mnist-2v5")
    assert default_model_params("digits-2v5") == {"kind": "rbf", "C": 1.0, "gamma": "scale"}
    assert default_model_params("synthetic-sparse")["kind"] == "linear-svc"
    assert default_model_params("my-upload.csv")["kind"] == "rbf"
    preset = default_model_params("gisette")
    preset["C"] = 99.0  # a copy: the preset itself is unchanged
    assert paper_preset("gisette")["C"] == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "tree"}, "kind must be one of"),
        ({"C": 0.0}, "C must be a positive finite number"),
        ({"C": "big"}, "C must be a positive finite number"),
        ({"C": float("inf")}, "C must be a positive finite number"),
        ({"C": float("nan")}, "C must be a positive finite number"),
        ({"gamma": -1.0}, "gamma must be"),
        ({"gamma": "wide"}, "gamma must be"),
        ({"kind": "poly", "degree": 0}, "degree must be"),
    ],
)
def test_invalid_training_parameters(small, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        train_model(small, cache=False, **kwargs)


def test_an_exported_attentive_classifier_loads_through_the_same_safe_path(digits, tmp_path):
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier

    X, y = digits.X_train, digits.y_train
    clf = AttentiveClassifier(SVC(), boundary="curved", side="both", delta=0.1).fit(X, y)
    path = tmp_path / "clf.skops"
    sio.dump(clf, path)
    loaded = load_model(path)
    assert isinstance(loaded, AttentiveClassifier)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    # Anything else in the file (here a dict holding another model) is still refused.
    sio.dump({"clf": clf, "other": RandomForestClassifier(n_estimators=1).fit(X, y)}, path)
    with pytest.raises((UntrustedModelError, UnsupportedModelError)):
        load_model(path)
    unfitted = tmp_path / "unfitted.skops"
    sio.dump(AttentiveClassifier(SVC()), unfitted)
    with pytest.raises(UnsupportedModelError, match="not fitted"):
        load_model(unfitted)


def _saved_arrays(path):
    """Every numpy array a skops file holds, read from its members."""
    with zipfile.ZipFile(path) as z:
        return [
            np.load(io.BytesIO(z.read(name)), allow_pickle=False)
            for name in z.namelist()
            if name.endswith(".npy")
        ]


def _holds_a_row_of(arrays, X) -> bool:
    rows = {tuple(r) for r in np.asarray(X, dtype=np.float64)}
    return any(
        tuple(r) in rows
        for a in arrays
        if a.ndim == 2 and a.shape[1] == X.shape[1] and a.dtype.kind == "f"
        for r in a.astype(np.float64)
    )


def test_an_exported_classifier_holds_training_rows_until_its_pilot_rows_are_dropped(tmp_path):
    """A user's trial: a LogisticRegression's exported classifier held 128 of its training rows
    verbatim (``pilot_rows_``), which a linear model's file does not. The README says so and how
    to export without them; this checks both halves of what it says: the rows are in the file,
    and with ``pilot_rows_ = None`` no training row is, and the classifier loads and walks to the
    same stops."""
    from sklearn.datasets import make_classification

    from attentive import AttentiveClassifier

    X, y = make_classification(600, 10, random_state=0)
    clf = AttentiveClassifier(LogisticRegression(max_iter=1000), random_state=0).fit(X, y)
    kept = save_model(clf, tmp_path / "kept.skops")
    assert _holds_a_row_of(_saved_arrays(kept), X)
    clf.pilot_rows_ = None
    dropped = save_model(clf, tmp_path / "dropped.skops")
    assert not _holds_a_row_of(_saved_arrays(dropped), X)
    loaded = load_model(dropped)
    assert loaded.pilot_rows_ is None
    walk, again = clf.set_params(early_stopping=True), loaded.set_params(early_stopping=True)
    a, b = walk.evaluate(X), again.evaluate(X)
    np.testing.assert_array_equal(a.n_evaluated, b.n_evaluated)
    np.testing.assert_array_equal(a.labels, b.labels)
    full = loaded.set_params(early_stopping=False).decision_function(X)
    np.testing.assert_allclose(full, clf.estimator_.decision_function(X), rtol=1e-9, atol=1e-12)
