"""A model file names the types it builds; loading trusts the project's own classes by their full
names only, never every name under ``attentive.``.

A skops file may ask for any importable name as a constructor and call it with arguments of its
choosing. Trusted by package, a crafted file could call any function of the project, or anything a
module of it imports (``pathlib.Path`` as ``attentive.data.download.Path``), while it loads.
"""

from __future__ import annotations

import importlib
import io
import json
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import skops.io as sio
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.ensemble import AdaBoostClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, StandardScaler
from sklearn.svm import SVC
from skops.io._protocol import PROTOCOL

from attentive import AttentiveClassifier
from attentive.errors import DataError, UnsupportedModelError, UntrustedModelError
from attentive.models import PROJECT_TYPES, TRUSTED_TYPES, load_model, save_model


def _json(value, ident: int) -> dict:
    return {
        "__class__": type(value).__name__,
        "__module__": "builtins",
        "__loader__": "JsonNode",
        "content": json.dumps(value),
        "is_json": True,
        "__id__": ident,
    }


def _call(module: str, name: str, *args: dict, ident: int) -> dict:
    """A skops node that builds ``module.name(*args)``."""
    return {
        "__class__": name,
        "__module__": module,
        "__loader__": "ConstructorFromReduceNode",
        "content": {
            "__class__": "tuple",
            "__module__": "builtins",
            "__loader__": "TupleNode",
            "content": list(args),
        },
        "__id__": ident,
    }


def _crafted(path, marker) -> None:
    """A file whose only node removes ``marker``: attentive.data.download.discard(Path(marker))."""
    target = _call("attentive.data.download", "Path", _json(str(marker), 1), ident=2)
    root = _call("attentive.data.download", "discard", target, ident=3)
    root.update(protocol=PROTOCOL, _skops_version=metadata.version("skops"))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("schema.json", json.dumps(root))


def test_a_file_that_calls_a_project_function_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "keep.txt"
    marker.write_text("the user's data\n")
    path = tmp_path / "crafted.skops"
    _crafted(path, marker)
    asked = set(sio.get_untrusted_types(file=path))
    assert asked == {"attentive.data.download.Path", "attentive.data.download.discard"}
    with pytest.raises(UntrustedModelError) as info:
        load_model(path)
    for name in asked:
        assert name in str(info.value)
    assert "PROJECT_TYPES" in str(info.value)
    assert marker.read_text() == "the user's data\n"  # nothing ran


def test_project_types_are_classes_of_the_project():
    for name in PROJECT_TYPES:
        module, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        assert isinstance(obj, type), name
        assert obj.__module__ == module, name  # defined there, not imported into it


def _digits_like():
    X, y = make_classification(
        400, 24, n_informative=8, n_redundant=4, class_sep=1.2, random_state=3
    )
    return X, y


@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        (SVC(), {"boundary": "curved"}),
        (SVC(), {"boundary": "calibrated", "family": "auto"}),
        (SVC(), {"boundary": "sketched-curved", "sketch": (4, 16)}),
        (
            SVC(),
            {"boundary": "calibrated", "family": "sketched-mass-regression", "sketch": (4, 16)},
        ),
        (SVC(), {"boundary": "heteroscedastic"}),
        (SVC(), {"boundary": "budget"}),
        (make_pipeline(PCA(10), SVC()), {"boundary": "sketched-regression", "sketch": (4, 16)}),
        (make_pipeline(StandardScaler(), LogisticRegression()), {"boundary": "calibrated"}),
        (AdaBoostClassifier(n_estimators=20, random_state=0), {"boundary": "mass-regression"}),
        # an imputer (the pipeline NaN message's advice) and a discretizer keep a numpy dtype
        (make_pipeline(SimpleImputer(), SVC()), {"boundary": "curved"}),
        (make_pipeline(KBinsDiscretizer(n_bins=3), SVC()), {"boundary": "curved"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_every_classifier_a_user_saves_loads_with_the_named_types(estimator, params, tmp_path):
    """Whatever the rule, the sketch or the wrapped model, an exported classifier needs no type
    beyond TRUSTED_TYPES and PROJECT_TYPES, and loads to the same decisions. A new class stored
    on the classifier fails here until it is named in PROJECT_TYPES."""
    X, y = _digits_like()
    clf = AttentiveClassifier(estimator, early_stopping=True, random_state=0, **params)
    clf.fit(X[:300], y[:300])
    expected = clf.predict(X[300:])  # prediction caches nothing the file would need
    path = tmp_path / "clf.skops"
    sio.dump(clf, path)
    asked = set(sio.get_untrusted_types(file=path))
    assert asked <= set(TRUSTED_TYPES) | set(PROJECT_TYPES), asked - set(TRUSTED_TYPES)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(X[300:]), expected)
    np.testing.assert_array_equal(loaded.decision_function(X[300:]), clf.decision_function(X[300:]))


def test_a_classifier_fitted_on_a_frame_or_sparse_rows_loads_too(tmp_path):
    X, y = _digits_like()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    labels = np.where(y == 1, "yes", "no")
    for rows in (frame, sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X))):
        clf = AttentiveClassifier(SVC(), boundary="calibrated", random_state=0).fit(
            rows[:300], labels[:300]
        )
        path = tmp_path / "clf.skops"
        sio.dump(clf, path)
        loaded = load_model(path)
        np.testing.assert_array_equal(loaded.predict(rows[300:]), clf.predict(rows[300:]))


def _rewritten(raw: bytes, change) -> bytes:
    """``raw`` (a skops file) with ``change(name, bytes) -> bytes`` applied to each member."""
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, change(info.filename, source.read(info.filename)))
    return out.getvalue()


@pytest.mark.parametrize(("field", "value"), [("left_child", 50_000_000), ("feature", 2**38)])
def test_a_decision_tree_whose_nodes_point_outside_it_is_refused(field, value):
    """A Tree checks its arrays' types and shapes when loaded, not the indices in them: a child
    or feature index out of range made predict read outside its arrays (the process crashed)."""
    X, y = make_classification(200, 5, random_state=0)
    model = AdaBoostClassifier(n_estimators=3, random_state=0).fit(X, y)
    raw = sio.dumps(model)

    def damage(name, data):
        if not name.endswith(".npy"):
            return data
        nodes = np.load(io.BytesIO(data), allow_pickle=False)
        if not nodes.dtype.names or field not in nodes.dtype.names:
            return data
        nodes = nodes.copy()
        nodes[field][0] = value
        buffer = io.BytesIO()
        np.save(buffer, nodes, allow_pickle=False)
        return buffer.getvalue()

    with pytest.raises(UnsupportedModelError, match="a decision tree in it is damaged"):
        load_model(_rewritten(raw, damage))
    np.testing.assert_array_equal(load_model(raw).predict(X), model.predict(X))  # intact: loads


@pytest.mark.parametrize("ident", [None, 0])  # skops reuses a node only under a true __id__
def test_a_file_whose_nodes_read_one_member_again_and_again_is_refused_unread(ident):
    """One deflated member of zeros named by many array nodes: skops reads each while building
    its tree (inside get_untrusted_types). The archive's sizes bound the total first."""
    X, y = make_classification(200, 5, random_state=0)
    raw = sio.dumps(LogisticRegression().fit(X, y))
    zeros = io.BytesIO()
    np.save(zeros, np.zeros((64 << 20) // 8))  # 64 MB, a few kilobytes deflated
    node = {
        "__class__": "ndarray",
        "__module__": "numpy",
        "__loader__": "NdArrayNode",
        "type": "numpy",
        "file": "zeros.npy",
    }
    if ident is not None:
        node["__id__"] = ident

    def inflate(name, data):
        if name != "schema.json":
            return data
        schema = json.loads(data)
        schema["content"]["content"]["junk"] = {
            "__class__": "list",
            "__module__": "builtins",
            "__loader__": "ListNode",
            "content": [node] * 100,  # 6.4 GB if read
        }
        return json.dumps(schema).encode()

    crafted = _appended(_rewritten(raw, inflate), "zeros.npy", zeros.getvalue())
    assert len(crafted) < 1 << 20
    with pytest.raises(UnsupportedModelError, match=r"would read 6,400 MB of arrays"):
        load_model(crafted)


def _appended(raw: bytes, name: str, data: bytes) -> bytes:
    out = io.BytesIO(raw)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return out.getvalue()


def test_a_tree_held_anywhere_in_the_classifier_is_checked():
    """An exported classifier's terms hold the learners predict runs; a crafted file can give
    them their own damaged copies beside the model's intact ones."""
    import copy
    import dataclasses

    X, y = make_classification(300, 6, random_state=0)
    clf = AttentiveClassifier(
        AdaBoostClassifier(n_estimators=5, random_state=0), boundary="curved", random_state=0
    ).fit(X, y)
    terms = dataclasses.replace(
        clf.terms_, learners=[copy.deepcopy(t) for t in clf.terms_.learners]
    )
    object.__setattr__(clf.walk_, "terms", terms)
    clf.terms_ = terms
    raw = sio.dumps(clf)
    schema = json.loads(zipfile.ZipFile(io.BytesIO(raw)).read("schema.json"))
    under_terms = set()
    stack = [schema["content"]["content"]["terms_"]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                under_terms.add(node["file"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)

    def damage(name, data):
        if name not in under_terms:
            return data
        nodes = np.load(io.BytesIO(data), allow_pickle=False)
        if not nodes.dtype.names or "left_child" not in nodes.dtype.names:
            return data
        nodes = nodes.copy()
        nodes["left_child"][0] = 50_000_000
        buffer = io.BytesIO()
        np.save(buffer, nodes, allow_pickle=False)
        return buffer.getvalue()

    crafted = _rewritten(raw, damage)
    assert crafted != _rewritten(raw, lambda name, data: data)  # some tree under terms_ changed
    with pytest.raises(UnsupportedModelError, match="a decision tree in it is damaged"):
        load_model(crafted)
    # Intact copies are refused too: the terms walked must be the model's own (_check_walks).
    with pytest.raises(UnsupportedModelError, match="its terms are not its model's"):
        load_model(raw)
    np.testing.assert_array_equal(
        load_model(sio.dumps(clf.estimator_)).predict(X), clf.estimator_.predict(X)
    )


def test_an_outsized_schema_or_unhashable_ids_are_refused_by_name():
    X, y = make_classification(200, 5, random_state=0)
    raw = sio.dumps(LogisticRegression().fit(X, y))

    def padded(entries: int) -> bytes:  # the schema padded with that many empty objects
        return _rewritten(
            raw,
            lambda name, data: (
                data[:-1] + b', "pad": [' + b"{}, " * entries + b"{}]}"
                if name == "schema.json"
                else data
            ),
        )

    outsized = padded(9 << 20)
    assert len(outsized) < 1 << 20
    with pytest.raises(UnsupportedModelError, match=r"its schema\.json would take 36 MB"):
        load_model(outsized)
    # Below the limit but deflated from a few kilobytes (parsed, 32 MB of it took 550 MB): the
    # schema is refused before it is read, as skops never packs its own that tightly.
    with pytest.raises(UnsupportedModelError, match=r"would take 12 MB from \d+ KB packed"):
        load_model(padded(3 << 20))
    # What a model's schema is (stored as it is, or deflated 10-20 times) is read.
    deflated = _rewritten(raw, lambda name, data: data)
    assert load_model(deflated).coef_.tolist() == load_model(raw).coef_.tolist()
    listed = _rewritten(
        raw, lambda name, data: data.replace(b'"__id__": ', b'"__id__": [1], "x": ', 1)
    )
    with pytest.raises(UnsupportedModelError, match="not a valid skops model file"):
        load_model(listed)


# --- crafted values in a trusted estimator's arrays -------------------------------------------


def _sparse_svc():
    X, y = make_classification(300, 6, random_state=0)
    return SVC().fit(sp.csr_matrix(X), y)


def _damaged_csr(m, **parts):
    m = m.copy()
    arrays = {"data": m.data, "indices": m.indices, "indptr": m.indptr, **parts}
    return sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=m.shape)


@pytest.mark.parametrize(
    ("attr", "damage"),
    [
        ("support_vectors_", "column"),
        ("support_vectors_", "negative"),
        ("support_vectors_", "indptr"),
        ("_dual_coef_", "column"),  # (one row: no pointer to damage)
        ("_dual_coef_", "negative"),
    ],
)
def test_a_sparse_matrix_whose_indices_point_outside_it_is_refused(attr, damage):
    """skops rebuilds a CSR matrix with scipy's cheap format check only; an index past the width
    or a decreasing row pointer crashed the process (segmentation fault) in load_model itself
    (densifying dual_coef_) or in fit/predict (scipy's sparsetools, scikit-learn's Cython)."""
    model = _sparse_svc()
    m = getattr(model, attr)
    if damage == "column":
        bad = _damaged_csr(m, indices=np.full_like(m.indices, 10**6))
    elif damage == "negative":
        bad = _damaged_csr(m, indices=np.full_like(m.indices, -(10**6)))
    else:
        indptr = m.indptr.copy()
        indptr[1] = indptr[-1]  # row 0 takes every value, then the pointers fall
        bad = _damaged_csr(m, indptr=indptr)
    setattr(model, attr, bad)
    with pytest.raises(UnsupportedModelError, match="a sparse matrix in it is damaged"):
        load_model(sio.dumps(model))


def test_a_sparse_coefficient_row_of_a_billion_columns_is_refused():
    """A 10 kB file asked load_model for 7.45 GiB (decompose densifies coef_)."""
    X, y = make_classification(200, 6, random_state=0)
    model = LogisticRegression().fit(X, y)
    coef = sp.csr_matrix(model.coef_)
    model.coef_ = sp.csr_matrix((coef.data, coef.indices, coef.indptr), shape=(1, 10**9))
    with pytest.raises(UnsupportedModelError, match=r"1,000,000,000 wide .* 7\.5 GiB per copy"):
        load_model(sio.dumps(model))


def test_a_hashed_features_model_of_two_to_the_26_columns_loads():
    """Wide but real: support vectors over 2**26 hashed features (a 70 kB file) load, their
    values intact (a bound on the width relative to the file's size refused them as damaged)."""
    X, y = make_classification(300, 6, random_state=0)
    rng = np.random.default_rng(0)
    columns = rng.choice(2**26, size=6, replace=False)
    wide = sp.csr_matrix((X.ravel(), np.tile(columns, 300), np.arange(0, 1801, 6)), (300, 2**26))
    wide.sort_indices()
    model = SVC().fit(wide, y)
    loaded = load_model(sio.dumps(model))
    assert (loaded.support_vectors_ != model.support_vectors_).nnz == 0
    np.testing.assert_array_equal(loaded.dual_coef_.toarray(), model.dual_coef_.toarray())


def _svc_with(**values):
    X, y = make_classification(300, 6, random_state=0)
    model = SVC(kernel="poly").fit(X, y)
    for attr, value in values.items():
        setattr(model, attr, value(model) if callable(value) else value)
    return model


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"support_vectors_": lambda m: m.support_vectors_[:5].copy()}, "dual_coef_ of shape"),
        ({"support_vectors_": lambda m: m.support_vectors_[:, :2].copy()}, "2 columns"),
        ({"support_vectors_": lambda m: m.support_vectors_.astype(object)}, "dtype object"),
        ({"support_vectors_": lambda m: m.support_vectors_.astype(np.float16)}, "float16"),
        ({"_dual_coef_": lambda m: m._dual_coef_[:, :5].copy()}, "dual_coef_ of shape"),
        ({"_n_support": np.array([10**6, 10**6], dtype=np.int32)}, "n_support_"),
        ({"_intercept_": np.zeros(0)}, "intercept_ of shape"),
        ({"_intercept_": np.array([np.nan])}, "NaN"),
        ({"_gamma": float("nan")}, "gamma nan"),
        ({"_gamma": -1.0}, "gamma -1.0"),
        ({"degree": 2**62}, "degree"),
        ({"degree": -1}, "degree"),
        ({"classes_": np.array([[0, 1]])}, "classes_ of shape"),
    ],
)
def test_an_svc_whose_arrays_disagree_is_refused(values, message):
    """Values a file gives a trusted SVC: before, fewer terms than support vectors (silently),
    NaN scores, an IndexError from load_model, or libsvm reading past its arrays."""
    with pytest.raises(UnsupportedModelError, match=message):
        load_model(sio.dumps(_svc_with(**values)))


@pytest.mark.parametrize(
    ("step", "attr", "value"),
    [
        (StandardScaler(), "scale_", np.ones(1)),  # broadcast: silently other values
        (StandardScaler(), "mean_", np.zeros(3)),
        (PCA(3), "components_", np.ones((3, 2))),
    ],
)
def test_a_pipeline_step_of_the_wrong_width_is_refused(step, attr, value):
    X, y = make_classification(300, 6, random_state=0)
    model = make_pipeline(step, SVC()).fit(X, y)
    setattr(model[0], attr, value)
    with pytest.raises(UnsupportedModelError, match=f"{attr} of shape"):
        load_model(sio.dumps(model))


@pytest.mark.parametrize("damage", ["order", "terms", "n_terms", "theta_s"])
def test_an_exported_classifier_walks_its_own_model_only(damage):
    """predict walks walk_.terms, stored beside estimator_: a file could give it other support
    vectors, weights or kernel parameters (NaN scores, a sparse matrix the checks of the model
    never saw), an order outside the terms or a wrong n_terms_."""
    import dataclasses

    X, y = make_classification(300, 6, random_state=0)
    clf = AttentiveClassifier(SVC(), boundary="curved", random_state=0).fit(X, y)
    if damage == "order":
        object.__setattr__(clf.walk_, "order", np.full(clf.n_terms_, 10**9))
    elif damage == "terms":
        params = {**clf.terms_.kernel_params, "gamma": float("nan")}
        terms = dataclasses.replace(clf.terms_, kernel_params=params)
        object.__setattr__(clf.walk_, "terms", terms)
        clf.terms_ = terms
    elif damage == "n_terms":
        clf.n_terms_ = 10**12
    else:
        clf.theta_s_ = float("nan")  # every score was −0.0
    with pytest.raises(UnsupportedModelError, match="the classifier's walk in it is damaged"):
        load_model(sio.dumps(clf))


@pytest.mark.parametrize("kind", ["precomputed", "one-class"])
def test_a_model_the_project_does_not_support_is_named_not_called_damaged(kind):
    """The value checks leave models check_supported_model refuses to it, so the message names
    what is not supported (a precomputed kernel has no support vectors to check, a one-class
    SVM no classes)."""
    from sklearn.svm import OneClassSVM

    X, y = make_classification(300, 6, random_state=0)
    if kind == "precomputed":
        model, message = SVC(kernel="precomputed").fit(X @ X.T, y), "kernel='precomputed'"
    else:
        model, message = OneClassSVM().fit(X), "OneClassSVM is not supported"
    with pytest.raises(UnsupportedModelError, match=message):
        load_model(sio.dumps(model))


OLDER = sorted((Path(__file__).parent / "older").glob("*.skops"))


@pytest.mark.parametrize("path", OLDER, ids=lambda p: p.stem)
def test_a_classifier_saved_by_an_older_version_loads_and_decides_as_it_did(path):
    """Files an earlier version saved (its commit in the name: a calibrated SVC, a PCA and poly
    kernel pipeline and a sparse SVC from 2026-11-25, a sketched calibrated rule from
    2026-11-29), with the decisions that version gave on 40 rows: the checks of a loaded
    file (its terms must be its model's decomposition, as this version computes it) still take
    them, and they decide as they did."""
    saved = np.load(path.with_suffix(".npz"))
    rows = sp.csr_matrix(saved["rows"]) if bool(saved["sparse"]) else saved["rows"]
    clf = load_model(path)
    np.testing.assert_array_equal(clf.predict(rows), saved["predict"])
    np.testing.assert_allclose(
        clf.decision_function(rows), saved["decision"], rtol=1e-9, atol=1e-12
    )


def test_the_older_files_are_there():
    assert len(OLDER) == 4


def test_a_learner_inside_adaboost_is_checked_as_a_model_is():
    """Only the model itself may be of a kind the checks leave to check_supported_model (a
    precomputed kernel, no classes): an SVC learner of AdaBoost with a precomputed kernel and
    support_ far out of range loaded, and predict crashed the process (libsvm)."""
    X, y = make_classification(300, 6, random_state=0)
    model = AdaBoostClassifier(SVC(), n_estimators=3, random_state=0).fit(X, y)
    learner = model.estimators_[0]
    learner.kernel, learner.shape_fit_ = "precomputed", (6, 6)
    learner.support_ = np.full_like(learner.support_, 10**9)
    with pytest.raises(UnsupportedModelError, match="kernel 'precomputed' inside another model"):
        load_model(sio.dumps(model))
    model = AdaBoostClassifier(SVC(), n_estimators=3, random_state=0).fit(X, y)
    del model.estimators_[1].classes_
    with pytest.raises(UnsupportedModelError, match="a SVC in it is damaged"):
        load_model(sio.dumps(model))


def test_adaboost_weights_that_sum_to_nothing_are_refused():
    """All-zero weights passed, and the terms' weights were 0 / 0 = NaN."""
    X, y = make_classification(300, 6, random_state=0)
    model = AdaBoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    model.estimator_weights_ = np.zeros(5)
    with pytest.raises(UnsupportedModelError, match="at least one positive"):
        load_model(sio.dumps(model))


@pytest.mark.parametrize("damage", ["ordered_weights", "beta", "projection", "n_terms_"])
def test_what_a_walk_derives_must_be_what_its_fields_give(damage):
    """A walk's weights in walk order, a sketched walk's β and a sketch's row projection are
    stored beside what they derive from, and skops does not derive them again: negated
    ordered weights loaded and agreed with the full model on 48 % of rows."""
    import dataclasses

    X, y = make_classification(300, 20, random_state=0)
    clf = AttentiveClassifier(
        SVC(), boundary="sketched-curved", sketch=(3, 12), random_state=0
    ).fit(X, y)
    if damage == "ordered_weights":
        object.__setattr__(clf.walk_, "ordered_weights", -clf.walk_.ordered_weights)
    elif damage == "beta":
        object.__setattr__(clf.sketched_walk_, "beta", 2 * clf.sketched_walk_.beta)
    elif damage == "projection":
        sketch = clf.sketched_walk_.sketch
        projection = sketch.projection
        bad = dataclasses.replace(projection) if dataclasses.is_dataclass(projection) else None
        assert bad is not None
        field = next(
            f.name
            for f in dataclasses.fields(bad)
            if isinstance(getattr(bad, f.name), np.ndarray)
            and getattr(bad, f.name).dtype.kind == "f"
            and getattr(bad, f.name).size
        )
        object.__setattr__(bad, field, getattr(bad, field) + 1.0)
        object.__setattr__(sketch, "projection", bad)
    else:
        clf.n_terms_ = "x"  # a ValueError from int()
    with pytest.raises(UnsupportedModelError, match="the classifier's walk in it is damaged"):
        load_model(sio.dumps(clf))


def test_adaboost_weights_are_checked_in_every_slot():
    """The terms' weights are normalised by the sum of every slot, unused ones included: a
    negative weight past the learners loaded (weights ±inf, or the wrong sign)."""
    X, y = make_classification(300, 6, random_state=0)
    model = AdaBoostClassifier(n_estimators=2, random_state=0).fit(X, y)
    model.estimators_ = model.estimators_[:1]
    model.estimator_weights_ = np.array([1.0, -3.0])
    with pytest.raises(UnsupportedModelError, match="none negative"):
        load_model(sio.dumps(model))


@pytest.mark.parametrize("damage", ["feature_mean", "gamma"])
def test_a_sketch_is_checked_before_anything_is_derived_from_it(damage):
    """A feature mean of shape (m, 1) broadcast the residual means to n × n while they were
    derived again (gigabytes for a large model); a NaN γ made every start score NaN."""
    X, y = make_classification(300, 20, random_state=0)
    clf = AttentiveClassifier(
        SVC(), boundary="sketched-curved", sketch=(3, 12), random_state=0
    ).fit(X, y)
    sw = clf.sketched_walk_
    if damage == "feature_mean":
        object.__setattr__(sw, "feature_mean", sw.feature_mean.reshape(-1, 1))
        match = "feature_mean of shape"
    else:
        object.__setattr__(sw.sketch, "gamma", float("nan"))
        match = "gamma nan"
    with pytest.raises(UnsupportedModelError, match=match):
        load_model(sio.dumps(clf))


def test_a_fitted_template_the_classifier_never_predicts_with_still_loads():
    """An AttentiveClassifier given a model fitted on three classes keeps it as its
    ``estimator`` parameter (cloned for fitting, never predicted with): it loaded before the
    value checks and loads with them."""
    X, y = make_classification(300, 6, random_state=0)
    template = SVC().fit(X, np.arange(300) % 3)
    clf = AttentiveClassifier(template, boundary="curved", random_state=0).fit(X, y)
    np.testing.assert_array_equal(load_model(sio.dumps(clf)).predict(X), clf.predict(X))


def test_odd_values_in_the_structure_are_refused_by_name():
    """A pipeline step of one element and a kernel that is an array raised IndexError and
    ValueError out of load_model."""
    X, y = make_classification(300, 6, random_state=0)
    pipe = make_pipeline(StandardScaler(), SVC()).fit(X, y)
    pipe.steps.append(("x",))
    with pytest.raises(UnsupportedModelError):
        load_model(sio.dumps(pipe))
    svc = SVC().fit(X, y)
    svc.kernel = np.array(["rbf", "rbf"])
    with pytest.raises(UnsupportedModelError):
        load_model(sio.dumps(svc))


@pytest.mark.parametrize("damage", ["short", "text", "budget"])
def test_a_stopping_rule_of_another_walk_is_refused(damage):
    """The boundary's thresholds are read at each position of the walk: a shorter array raised
    an IndexError in predict, and a budget past the terms is no rule of this model."""
    import dataclasses

    X, y = make_classification(300, 6, random_state=0)
    boundary = "budget" if damage == "budget" else "curved"
    clf = AttentiveClassifier(SVC(), boundary=boundary, random_state=0).fit(X, y)
    b = clf.boundary_
    if damage == "short":
        clf.boundary_ = dataclasses.replace(
            b,
            lower=b.lower[:5],
            upper=b.upper[:5],
            estimate_slope=None,
            estimate_intercept=None,
            upper_estimate_intercept=None,
            mass=None,
        )
    elif damage == "text":
        object.__setattr__(b, "lower", b.lower.astype(str))
    else:
        object.__setattr__(b, "budget", 10**9)
    with pytest.raises(UnsupportedModelError, match="the boundary"):
        load_model(sio.dumps(clf))


def test_save_model_refuses_a_file_load_model_would_refuse_for_its_size(tmp_path, monkeypatch):
    """A model whose schema is beyond what load_model reads was saved without a word, and
    refused only where it was loaded (by score on a cluster, say): save_model and the
    dashboard's export refuse it, naming the sizes, and write nothing."""
    from attentive.models import persistence

    X, y = make_classification(200, 5, random_state=0)
    model = LogisticRegression().fit(X, y)
    size = zipfile.ZipFile(io.BytesIO(sio.dumps(model))).getinfo("schema.json").file_size
    monkeypatch.setattr(persistence, "_SCHEMA_LIMIT", size - 1)
    path = tmp_path / "model.skops"
    with pytest.raises(
        DataError, match=r"could not be loaded: schema.json would take .* load_model"
    ):
        save_model(model, path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UnsupportedModelError, match="would take"):
        load_model(sio.dumps(model))  # (what the check stands for)
    monkeypatch.setattr(persistence, "_SCHEMA_LIMIT", size)
    assert load_model(save_model(model, path)).coef_.tolist() == model.coef_.tolist()


def test_a_pipeline_ending_in_an_attentive_classifier_is_told_to_go_inside_it(tmp_path):
    """make_pipeline(StandardScaler(), AttentiveClassifier(SVC())) fits and predicts, but its
    refusal to save said "AttentiveClassifier is not supported", as if the class were not (a
    user's trial). It says where the pipeline goes."""
    X, y = make_classification(200, 5, random_state=0)
    outside = make_pipeline(StandardScaler(), AttentiveClassifier(SVC(), random_state=0))
    with pytest.raises(UnsupportedModelError, match=r"at the end of a Pipeline .* steps before"):
        save_model(outside.fit(X, y), tmp_path / "p.skops")
    with pytest.raises(UnsupportedModelError, match=r"AttentiveClassifier inside another model"):
        AttentiveClassifier(AttentiveClassifier(SVC())).fit(X, y)
    inside = AttentiveClassifier(make_pipeline(StandardScaler(), SVC()), random_state=0)
    back = load_model(save_model(inside.fit(X, y), tmp_path / "c.skops"))
    np.testing.assert_array_equal(back.predict(X), outside.predict(X))
