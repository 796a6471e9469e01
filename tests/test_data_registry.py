"""The dataset registry and the offline datasets, checked against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.svm import SVC

from attentive.data import Dataset, clear_cache, data_home, list_datasets, load_dataset
from attentive.errors import DataError, InvalidParameterError

OFFLINE = (
    "digits-2v5",
    "breast-cancer",
    "synthetic",
    "synthetic-sparse",
    "synthetic-lowrank",
    "mnist-t10k-2v5",
    "mnist-t10k-4v9",
    "mnist-t10k-3v8",
    "mnist-t10k-7v9",
)


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def test_list_datasets(tmp_path):
    infos = {i.name: i for i in list_datasets(tmp_path)}
    assert set(infos) == {*OFFLINE, "mnist-2v5", "gisette", "real-sim"}
    for name in OFFLINE:
        assert infos[name].offline and infos[name].cached and not infos[name].files
    for name in ("mnist-2v5", "gisette", "real-sim"):
        assert not infos[name].offline and not infos[name].cached
    assert infos["synthetic"].defaults["n_train"] == 1500
    assert all(i.description for i in infos.values())


def test_digits_2v5_matches_sklearn():
    ds = load_dataset("digits-2v5")
    digits = load_digits()
    keep = np.isin(digits.target, (2, 5))
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == keep.sum() == 359
    assert ds.n_features == 64 and ds.class_names == ("2", "5")
    # Every row is a digit 2 or 5 scaled to [0, 1], labelled 1 exactly for the 5s.
    rows = {
        row.tobytes(): t
        for row, t in zip(digits.data[keep] / 16.0, digits.target[keep], strict=True)
    }
    for X, y in ((ds.X_train, ds.y_train), (ds.X_test, ds.y_test)):
        assert [rows[r.tobytes()] for r in X] == [5 if v else 2 for v in y]
    # Stratified: the share of 5s is the same in both parts up to one example.
    assert abs(ds.y_train.mean() - ds.y_test.mean()) < 1 / ds.y_test.size


def test_breast_cancer_positive_is_malignant_and_standardised_on_train():
    ds = load_dataset("breast-cancer")
    bunch = load_breast_cancer()
    assert ds.positive_meaning.startswith("malignant")
    assert ds.y_train.sum() + ds.y_test.sum() == np.count_nonzero(bunch.target == 0) == 212
    np.testing.assert_allclose(ds.X_train.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(ds.X_train.std(axis=0), 1, rtol=1e-12)
    assert np.abs(ds.X_test.mean(axis=0)).max() > 1e-3  # test statistics were not used


def test_in_process_cache_returns_read_only_arrays():
    first = load_dataset("digits-2v5")
    assert load_dataset("digits-2v5") is first
    for array in (first.X_train, first.y_train, first.X_test, first.y_test):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1
    sparse = load_dataset("synthetic-sparse", n_train=50, n_test=20)
    with pytest.raises(ValueError, match="read-only"):
        sparse.X_train.data[0] = 1.0


def test_synthetic_sizes_and_seed():
    a = load_dataset("synthetic", n_train=100, n_test=40, n_features=6, seed=3)
    b = load_dataset("synthetic", n_train=100, n_test=40, n_features=6, seed=3)
    c = load_dataset("synthetic", n_train=100, n_test=40, n_features=6, seed=4)
    assert a.X_train.shape == (100, 6) and a.X_test.shape == (40, 6)
    assert set(np.unique(a.y_train)) == {0, 1}
    clear_cache()
    fresh = load_dataset("synthetic", n_train=100, n_test=40, n_features=6, seed=3)
    np.testing.assert_array_equal(fresh.X_train, b.X_train)
    assert not np.array_equal(a.X_train, c.X_train)


def test_synthetic_default_keeps_hundreds_of_support_vectors():
    ds = load_dataset("synthetic")
    model = SVC().fit(ds.X_train, ds.y_train)
    assert 200 <= model.support_.size <= 1000


def test_synthetic_sparse_has_real_sim_shape():
    ds = load_dataset("synthetic-sparse", n_train=300, n_test=100)
    assert sp.issparse(ds.X_train) and ds.X_train.format == "csr"
    assert ds.n_features == 20958
    density = ds.X_train.nnz / np.prod(ds.X_train.shape)
    assert 0.0015 < density < 0.003
    norms = np.sqrt(ds.X_train.multiply(ds.X_train).sum(axis=1)).A1
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    assert 0.2 < ds.y_train.mean() < 0.4


def test_synthetic_lowrank_lies_near_a_subspace_with_a_curved_noisy_boundary():
    ds = load_dataset("synthetic-lowrank")
    assert ds.X_train.shape == (800, 100) and ds.X_test.shape == (400, 100)
    X = np.vstack([ds.X_train, ds.X_test])
    # Rank 3 plus noise of standard deviation 0.15: three directions carry nearly all variance,
    # and what is left is the noise's (0.15² per feature).
    centred = X - X.mean(axis=0)
    s = np.linalg.svd(centred, compute_uv=False)
    assert (s[:3] ** 2).sum() / (s**2).sum() > 0.95
    np.testing.assert_allclose((s[3:] ** 2).sum() / X.size, 0.15**2, rtol=0.1)
    # Not linearly separable, and noisy: an RBF SVM keeps hundreds of support vectors.
    model = SVC().fit(ds.X_train, ds.y_train)
    assert model.support_.size > 200
    assert 0.7 < model.score(ds.X_test, ds.y_test) < 0.9  # 15 % of labels flipped
    same = load_dataset("synthetic-lowrank", n_train=50, n_test=10, seed=2)
    clear_cache()
    np.testing.assert_array_equal(
        load_dataset("synthetic-lowrank", n_train=50, n_test=10, seed=2).X_train, same.X_train
    )
    with pytest.raises(InvalidParameterError, match="rank"):
        load_dataset("synthetic-lowrank", rank=0)


def test_reference_comes_from_training_part():
    ds = load_dataset("synthetic", n_train=200, n_test=50)
    X_ref, y_ref = ds.reference(max_examples=30, random_state=1)
    assert X_ref.shape == (30, ds.n_features)
    train_rows = {r.tobytes(): y for r, y in zip(ds.X_train, ds.y_train, strict=True)}
    assert all(train_rows[r.tobytes()] == y for r, y in zip(X_ref, y_ref, strict=True))
    X_all, _ = ds.reference()
    assert X_all is ds.X_train


def test_fingerprint_depends_on_data():
    a = load_dataset("synthetic", n_train=100, n_test=40, seed=1)
    b = load_dataset("synthetic", n_train=100, n_test=40, seed=2)
    assert a.fingerprint != b.fingerprint
    copy = Dataset(
        "other name", "", "", a.X_train.copy(), a.y_train, a.X_test, a.y_test, a.class_names
    )
    assert copy.fingerprint == a.fingerprint  # the data, not the object or its name


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(DataError) as info:
        load_dataset("mnist")
    for name in (*OFFLINE, "mnist-2v5", "gisette", "real-sim"):
        assert name in str(info.value)


def test_unknown_or_bad_parameter():
    with pytest.raises(InvalidParameterError, match="n_train, n_test"):
        load_dataset("synthetic", n_rows=5)
    with pytest.raises(InvalidParameterError, match="n_train must be an integer"):
        load_dataset("synthetic", n_train=0)
    with pytest.raises(InvalidParameterError, match="density"):
        load_dataset("synthetic-sparse", density=2.0)


def test_data_home_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_DATA", str(tmp_path))
    assert data_home() == tmp_path
    monkeypatch.delenv("ATTENTIVE_DATA")
    monkeypatch.chdir(tmp_path)
    assert data_home() == tmp_path / "data"
    assert data_home("/x/y").as_posix() == "/x/y"


def test_dataset_checks_consistent_parts():
    with pytest.raises(DataError, match="3 rows but 2 labels"):
        Dataset(
            "d", "", "", np.zeros((3, 2)), np.zeros(2), np.zeros((1, 2)), np.zeros(1), ("a", "b")
        )
    with pytest.raises(DataError, match="train has 2 features but test has 3"):
        Dataset(
            "d", "", "", np.zeros((2, 2)), np.zeros(2), np.zeros((1, 3)), np.zeros(1), ("a", "b")
        )
