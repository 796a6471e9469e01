"""The real MNIST t10k files in the repository and the ``mnist-t10k-{a}v{b}`` datasets.

Every expected number comes from the files read here with gzip and numpy, not through the loader.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import MNIST_T10K

import attentive
from attentive.data import clear_cache, list_datasets, load_dataset
from attentive.data.mnist import MNIST_MD5, t10k_folder
from attentive.errors import DataError, InvalidParameterError
from attentive.models import default_model_params, make_model

IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
CANONICAL_MD5 = {  # SPEC §6
    IMAGES: "9fb629c4189551a2d022fa330f9573f3",
    LABELS: "ec29112dd5afa0611ce80d1b7f02629c",
}


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("ATTENTIVE_MNIST_T10K", raising=False)
    clear_cache()
    yield
    clear_cache()


def _raw_labels() -> np.ndarray:
    return np.frombuffer(gzip.decompress((MNIST_T10K / LABELS).read_bytes()), np.uint8, offset=8)


def _raw_images() -> np.ndarray:
    raw = gzip.decompress((MNIST_T10K / IMAGES).read_bytes())
    return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 784)


def _copy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in (IMAGES, LABELS):
        shutil.copyfile(MNIST_T10K / name, folder / name)
    return folder


# ----------------------------------------------------------------------------- the files


def test_repository_files_are_canonical():
    for name, md5 in CANONICAL_MD5.items():
        assert hashlib.md5((MNIST_T10K / name).read_bytes()).hexdigest() == md5
        assert MNIST_MD5[name] == md5
    assert np.bincount(_raw_labels()).tolist() == [
        980,
        1135,
        1032,
        1010,
        982,
        892,
        958,
        1028,
        974,
        1009,
    ]  # MNIST's published test counts per digit


def test_folder_is_found_beside_the_package(tmp_path, monkeypatch):
    repository = Path(attentive.__file__).resolve().parents[1]
    monkeypatch.chdir(tmp_path)  # not relative to the working directory
    assert t10k_folder() == repository / "data" / "mnist-t10k" == MNIST_T10K
    monkeypatch.setenv("ATTENTIVE_MNIST_T10K", str(tmp_path))
    assert t10k_folder() == tmp_path
    assert t10k_folder(tmp_path / "x") == tmp_path / "x"  # the argument wins over the variable


def test_a_good_copy_elsewhere_loads_the_same(tmp_path):
    copy = _copy(tmp_path / "copy")
    ds = load_dataset("mnist-t10k-2v5", folder=str(copy))
    reference = load_dataset("mnist-t10k-2v5")
    np.testing.assert_array_equal(ds.X_test, reference.X_test)
    np.testing.assert_array_equal(ds.y_train, reference.y_train)


def test_corrupt_copy_is_refused(tmp_path, monkeypatch):
    copy = _copy(tmp_path / "corrupt")
    data = bytearray((copy / IMAGES).read_bytes())
    data[-100] ^= 0xFF
    (copy / IMAGES).write_bytes(bytes(data))
    found = hashlib.md5(bytes(data)).hexdigest()
    pattern = rf"{IMAGES} is corrupt: md5 {found}, expected {CANONICAL_MD5[IMAGES]}.*git checkout"
    with pytest.raises(DataError, match=pattern):
        load_dataset("mnist-t10k-2v5", folder=str(copy))
    monkeypatch.setenv("ATTENTIVE_MNIST_T10K", str(copy))
    with pytest.raises(DataError, match=pattern):
        load_dataset("mnist-t10k-4v9")


def test_missing_file_is_named(tmp_path):
    copy = _copy(tmp_path / "partial")
    (copy / LABELS).unlink()
    with pytest.raises(
        DataError, match=rf"{LABELS} not found at .*partial.*md5 {CANONICAL_MD5[LABELS]}"
    ):
        load_dataset("mnist-t10k-3v8", folder=str(copy))


# ----------------------------------------------------------------------------- the datasets


@pytest.mark.parametrize("a, b", [(2, 5), (4, 9), (3, 8), (7, 9), (0, 1), (9, 4), (6, 8)])
def test_counts_per_digit_match_the_label_file(a, b):
    counts = np.bincount(_raw_labels(), minlength=10)
    ds = load_dataset(f"mnist-t10k-{a}v{b}")
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == counts[a] + counts[b]
    assert int(ds.y_train.sum() + ds.y_test.sum()) == counts[b]
    assert ds.class_names == (str(a), str(b)) and ds.positive_meaning == f"digit {b}"
    assert ds.name == f"mnist-t10k-{a}v{b}" and ds.n_features == 784


@pytest.mark.parametrize("name, n_train, n_test", [("2v5", 1251, 673), ("4v9", 1294, 697)])
def test_split_sizes_and_stratification(name, n_train, n_test):
    ds = load_dataset(f"mnist-t10k-{name}")
    assert (ds.X_train.shape[0], ds.X_test.shape[0]) == (n_train, n_test)
    assert n_test == round(0.35 * (n_train + n_test))
    share = (ds.y_train.sum() + ds.y_test.sum()) / (n_train + n_test)
    for y in (ds.y_train, ds.y_test):  # stratified: each part within one example of the share
        assert abs(y.sum() - share * y.size) <= 1
    clear_cache()
    again = load_dataset(f"mnist-t10k-{name}")
    np.testing.assert_array_equal(again.X_test, ds.X_test)  # seeded: the same split every time
    other = load_dataset(f"mnist-t10k-{name}", seed=1)
    assert other.X_test.shape == ds.X_test.shape
    assert not np.array_equal(other.y_test, ds.y_test) or not np.array_equal(
        other.X_test, ds.X_test
    )


def test_any_pair_by_name():
    listed = {i.name for i in list_datasets()}
    assert {"mnist-t10k-2v5", "mnist-t10k-4v9", "mnist-t10k-3v8", "mnist-t10k-7v9"} <= listed
    assert "mnist-t10k-0v1" not in listed
    ds = load_dataset("mnist-t10k-0v1")
    assert ds.class_names == ("0", "1")
    # 5v2 is 2v5 with the classes swapped: the same images, complementary labels.
    forward, backward = load_dataset("mnist-t10k-2v5"), load_dataset("mnist-t10k-5v2")
    assert backward.positive_meaning == "digit 2"
    assert int(backward.y_train.sum() + backward.y_test.sum()) == 1032  # the 2s
    X_f = np.vstack([forward.X_train, forward.X_test])
    X_b = np.vstack([backward.X_train, backward.X_test])
    assert sorted(map(bytes, X_f)) == sorted(map(bytes, X_b))


@pytest.mark.parametrize(
    "name, message",
    [
        ("mnist-t10k-2v2", "same digit 2 twice"),
        ("mnist-t10k-2v10", "out of range 0..9"),
        ("mnist-t10k-02v5", "out of range 0..9"),
        ("mnist-t10k-2-5", "expected mnist-t10k-<a>v<b>"),
        ("mnist-t10k-", "expected mnist-t10k-<a>v<b>"),
    ],
)
def test_bad_names(name, message):
    with pytest.raises(DataError, match=message):
        load_dataset(name)


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="test_size"):
        load_dataset("mnist-t10k-2v5", test_size=1.5)
    with pytest.raises(InvalidParameterError, match="no parameter n_train"):
        load_dataset("mnist-t10k-2v5", n_train=10)


def test_pixels_are_the_raw_bytes_over_255():
    images, labels = _raw_images(), _raw_labels()
    keep = np.flatnonzero(np.isin(labels, (2, 5)))
    by_pixels = {images[i].tobytes(): i for i in keep}
    assert len(by_pixels) == keep.size  # no two identical images, so each row has one source
    ds = load_dataset("mnist-t10k-2v5")
    seen = set()
    for X, y in ((ds.X_train, ds.y_train), (ds.X_test, ds.y_test)):
        assert X.dtype == np.float64
        for row, label in zip(X, y, strict=True):
            source = by_pixels[np.rint(row * 255).astype(np.uint8).tobytes()]
            np.testing.assert_array_equal(row, images[source] / 255.0)
            assert label == (labels[source] == 5)
            seen.add(source)
    assert len(seen) == keep.size  # every 2 and 5 exactly once
    # One example by hand: the first 2 of the file, its first non-zero pixel.
    first = keep[0]
    row = next(
        r for r in np.vstack([ds.X_train, ds.X_test]) if np.array_equal(r * 255, images[first])
    )
    j = np.flatnonzero(images[first])[0]
    assert row[j] == images[first][j] / 255


def test_preset_support_vectors_on_2v5():
    ds = load_dataset("mnist-t10k-2v5")
    params = default_model_params("mnist-t10k-2v5")
    assert params == {"kind": "rbf", "C": 1.0, "gamma": 0.05}
    model = make_model(**params).fit(ds.X_train, ds.y_train)
    assert int(model.n_support_.sum()) == 846  # documented in docs/data.md
    assert model.score(ds.X_test, ds.y_test) > 0.99
