"""The real download path (pooch) against a loopback HTTP server; no test touches the network."""

from __future__ import annotations

import bz2
import hashlib
import io

import numpy as np
import pytest
import scipy.sparse as sp
from data_fixtures import MNIST_T10K, closed_port_url, idx_bytes, loopback_server
from sklearn.datasets import dump_svmlight_file

from attentive.data import clear_cache, list_datasets, load_dataset
from attentive.data import registry as reg
from attentive.data.download import RemoteFile, fetch
from attentive.errors import DataError, DownloadError

PAYLOAD = b"attentive test payload\n" * 100
PAYLOAD_MD5 = hashlib.md5(PAYLOAD).hexdigest()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("ATTENTIVE_MIRROR", raising=False)
    clear_cache()
    yield
    clear_cache()


def remote(md5: str | None = PAYLOAD_MD5, mirrors: tuple[str, ...] = ("http://unused/",)):
    return RemoteFile("payload.bin", "sub", mirrors, md5)


def cache_contents(home):
    return sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())


def test_checksum_match_downloads_once(tmp_path):
    with loopback_server({"payload.bin": PAYLOAD}) as url:
        path = fetch(remote(), tmp_path, base_url=url)
        assert path == tmp_path / "sub" / "payload.bin"
        assert path.read_bytes() == PAYLOAD
    # The server is gone: the verified cached file is reused without any request.
    assert fetch(remote(), tmp_path, base_url=closed_port_url()).read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_nothing(tmp_path):
    with loopback_server({"payload.bin": PAYLOAD + b"tampered"}) as url:
        with pytest.raises(DownloadError) as info:
            fetch(remote(), tmp_path, base_url=url)
    message = str(info.value)
    assert "payload.bin" in message and url + "payload.bin" in message
    assert "checksum" in message and "by hand" in message
    assert str(tmp_path / "sub" / "payload.bin") in message
    assert cache_contents(tmp_path) == []


def test_truncated_download_leaves_nothing(tmp_path):
    with loopback_server({"payload.bin": PAYLOAD}, truncate=("payload.bin",)) as url:
        with pytest.raises(DownloadError, match=r"payload.bin"):
            fetch(remote(), tmp_path, base_url=url)
    assert cache_contents(tmp_path) == []


def test_truncated_download_without_checksum_leaves_nothing(tmp_path):
    # No checksum to catch it: the short read itself must fail and keep nothing.
    with loopback_server({"payload.bin": PAYLOAD}, truncate=("payload.bin",)) as url:
        with pytest.raises(DownloadError):
            fetch(remote(md5=None), tmp_path, base_url=url)
    assert cache_contents(tmp_path) == []


def test_server_down_names_file_url_and_manual_placement(tmp_path):
    url = closed_port_url()
    with pytest.raises(DownloadError) as info:
        fetch(remote(), tmp_path, base_url=url)
    message = str(info.value)
    assert url + "payload.bin" in message
    assert "http://unused/payload.bin" in message  # where to get it by hand
    assert str(tmp_path / "sub" / "payload.bin") in message
    assert cache_contents(tmp_path) == []


def test_falls_back_to_next_mirror(tmp_path):
    with loopback_server({}) as empty, loopback_server({"payload.bin": PAYLOAD}) as good:
        path = fetch(remote(mirrors=(empty, good)), tmp_path)
    assert path.read_bytes() == PAYLOAD


def test_mirror_environment_variable(tmp_path, monkeypatch):
    with loopback_server({"payload.bin": PAYLOAD}) as url:
        monkeypatch.setenv("ATTENTIVE_MIRROR", url)
        assert fetch(remote(), tmp_path).read_bytes() == PAYLOAD


def test_corrupt_cached_file_is_replaced(tmp_path):
    target = tmp_path / "sub" / "payload.bin"
    target.parent.mkdir()
    target.write_bytes(b"garbage")
    with loopback_server({"payload.bin": PAYLOAD}) as url:
        assert fetch(remote(), tmp_path, base_url=url).read_bytes() == PAYLOAD


def test_download_false_refuses_missing_file(tmp_path):
    with pytest.raises(DataError, match="not in the cache"):
        fetch(remote(), tmp_path, download=False)
    with pytest.raises(DataError, match="not in the cache"):
        load_dataset("gisette", data_home=tmp_path, download=False)


# ----------------------------------------------------------------------------- MNIST end to end


def _fake_mnist_train(rng):
    labels = rng.integers(0, 10, size=60).astype(np.uint8)
    images = rng.integers(0, 256, size=(60, 28, 28)).astype(np.uint8)
    return images, labels


def _serve_mnist(monkeypatch, rng, with_t10k):
    """Files for a loopback MNIST: small fake train files, real or fake t10k files."""
    images, labels = _fake_mnist_train(rng)
    files = {
        "train-images-idx3-ubyte.gz": idx_bytes(images),
        "train-labels-idx1-ubyte.gz": idx_bytes(labels),
    }
    if with_t10k:
        for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
            files[name] = (MNIST_T10K / name).read_bytes()
    else:
        files["t10k-images-idx3-ubyte.gz"] = idx_bytes(images[:20])
        files["t10k-labels-idx1-ubyte.gz"] = idx_bytes(labels[:20])
    specs = {}
    for key, spec in reg.MNIST_FILES.items():
        md5 = hashlib.md5(files[spec.filename]).hexdigest()
        if with_t10k and key.startswith("test"):
            assert md5 == spec.md5  # the real files match the canonical sums
        specs[key] = RemoteFile(spec.filename, spec.subdir, spec.mirrors, md5)
    monkeypatch.setattr(reg, "MNIST_FILES", specs)
    monkeypatch.setitem(
        reg.REGISTRY, "mnist-2v5", reg._Entry(reg._mnist_2v5, "test", tuple(specs.values()))
    )
    return files, images, labels


def test_mnist_download_and_parse(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    files, images, labels = _serve_mnist(monkeypatch, rng, with_t10k=True)
    assert not next(i for i in list_datasets(tmp_path) if i.name == "mnist-2v5").cached
    with loopback_server(files) as url:
        ds = load_dataset("mnist-2v5", data_home=tmp_path, base_url=url)
    keep = np.isin(labels, (2, 5))
    np.testing.assert_array_equal(ds.X_train, images[keep].reshape(-1, 784) / 255.0)
    np.testing.assert_array_equal(ds.y_train, (labels[keep] == 5).astype(int))
    assert ds.X_test.shape == (1924, 784)
    assert int(ds.y_test.sum()) == 892  # the 5s among t10k's 2s and 5s
    assert ds.class_names == ("2", "5") and ds.positive_meaning == "digit 5"
    assert next(i for i in list_datasets(tmp_path) if i.name == "mnist-2v5").cached


def test_mnist_corrupt_file_is_not_cached(tmp_path, monkeypatch):
    files, _, _ = _serve_mnist(monkeypatch, np.random.default_rng(1), with_t10k=False)
    files["train-labels-idx1-ubyte.gz"] = files["train-labels-idx1-ubyte.gz"][:-5]
    with loopback_server(files) as url:
        with pytest.raises(DownloadError, match=r"train-labels-idx1-ubyte.gz"):
            load_dataset("mnist-2v5", data_home=tmp_path, base_url=url)
    assert "mnist/train-labels-idx1-ubyte.gz" not in cache_contents(tmp_path)


# ----------------------------------------------------------------------------- LIBSVM end to end


def _libsvm_bz2(X, y) -> bytes:
    buffer = io.BytesIO()
    dump_svmlight_file(X, y, buffer, zero_based=False)
    return bz2.compress(buffer.getvalue())


def _small_gisette(monkeypatch, rng):
    n_features = 12
    parts = {}
    for part, n in (("train", 30), ("test", 10)):
        X = rng.uniform(-1, 1, size=(n, n_features))
        X[:, -1] = 0.5  # make sure the last feature index appears, as in the real file
        y = np.where(rng.random(n) < 0.5, -1, 1)
        parts[part] = (X, y)
    monkeypatch.setattr(reg, "GISETTE_SHAPE", {"train": (30, 12), "test": (10, 12)})
    files = {
        "gisette_scale.bz2": _libsvm_bz2(*parts["train"]),
        "gisette_scale.t.bz2": _libsvm_bz2(*parts["test"]),
    }
    return files, parts


def test_gisette_download_parse_and_processed_cache(tmp_path, monkeypatch):
    files, parts = _small_gisette(monkeypatch, np.random.default_rng(2))
    with loopback_server(files) as url:
        ds = load_dataset("gisette", data_home=tmp_path, base_url=url)
    for part in ("train", "test"):
        X, y = parts[part]
        np.testing.assert_allclose(getattr(ds, f"X_{part}"), X, rtol=1e-15)
        np.testing.assert_array_equal(getattr(ds, f"y_{part}"), (y == 1).astype(int))
    assert (tmp_path / "libsvm" / "gisette.npz").is_file()
    # Reopening uses the parsed cache (the raw files could be gone) and gives the same data.
    clear_cache()
    for f in ("gisette_scale.bz2", "gisette_scale.t.bz2"):
        (tmp_path / "libsvm" / f).unlink()
    again = load_dataset("gisette", data_home=tmp_path, download=False)
    np.testing.assert_array_equal(again.X_train, ds.X_train)


@pytest.mark.parametrize("damage", ["wrong-shape", "truncated-bz2"])
def test_gisette_bad_file_is_deleted(tmp_path, monkeypatch, damage):
    files, parts = _small_gisette(monkeypatch, np.random.default_rng(3))
    if damage == "wrong-shape":
        files["gisette_scale.bz2"] = _libsvm_bz2(parts["train"][0][:-3], parts["train"][1][:-3])
    else:
        files["gisette_scale.bz2"] = files["gisette_scale.bz2"][:-40]
    with loopback_server(files) as url:
        with pytest.raises(DownloadError) as info:
            load_dataset("gisette", data_home=tmp_path, base_url=url)
    message = str(info.value)
    assert "gisette_scale.bz2" in message and url in message and "by hand" in message
    if damage == "wrong-shape":
        assert "(27, 12)" in message and "(30, 12)" in message
    assert cache_contents(tmp_path) == []


def test_real_sim_stays_sparse_with_seeded_test_split(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    # The last column is full so that the parsed width is known without n_features.
    X = sp.hstack([sp.random(50, 29, density=0.1, random_state=rng), np.ones((50, 1))]).tocsr()
    y = np.where(rng.random(50) < 0.3, 1, -1)
    monkeypatch.setattr(reg, "REAL_SIM_SHAPE", (50, 30))
    with loopback_server({"real-sim.bz2": _libsvm_bz2(X, y)}) as url:
        ds = load_dataset("real-sim", data_home=tmp_path, base_url=url, n_test=10)
    assert sp.issparse(ds.X_train) and sp.issparse(ds.X_test)
    assert ds.X_train.shape == (40, 30) and ds.X_test.shape == (10, 30)
    test = np.random.default_rng(0).choice(50, 10, replace=False)
    expected = np.zeros(50, bool)
    expected[test] = True
    np.testing.assert_allclose(ds.X_test.toarray(), X[expected].toarray(), rtol=1e-15)
    np.testing.assert_array_equal(ds.y_train, (y[~expected] == 1).astype(int))
