"""The IDX reader, on the real MNIST t10k files in the repository and on files the tests write."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from data_fixtures import MNIST_T10K, idx_bytes

from attentive.data.idx import read_idx
from attentive.errors import DataError


def test_real_t10k_files():
    images = read_idx(MNIST_T10K / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(MNIST_T10K / "t10k-labels-idx1-ubyte.gz")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,)
    # Independent decoding: fixed 16- and 8-byte headers of the MNIST files.
    raw_images = gzip.decompress((MNIST_T10K / "t10k-images-idx3-ubyte.gz").read_bytes())
    raw_labels = gzip.decompress((MNIST_T10K / "t10k-labels-idx1-ubyte.gz").read_bytes())
    np.testing.assert_array_equal(images.ravel(), np.frombuffer(raw_images, np.uint8, offset=16))
    np.testing.assert_array_equal(labels, np.frombuffer(raw_labels, np.uint8, offset=8))
    assert np.count_nonzero(labels == 2) + np.count_nonzero(labels == 5) == 1924
    assert labels[:5].tolist() == [7, 2, 1, 0, 4]  # MNIST's well-known first test labels


def test_round_trip_of_written_file(tmp_path):
    array = np.random.default_rng(0).integers(0, 256, size=(7, 3, 4)).astype(np.uint8)
    path = tmp_path / "a-idx3-ubyte.gz"
    path.write_bytes(idx_bytes(array))
    np.testing.assert_array_equal(read_idx(path), array)
    raw = tmp_path / "a-idx3-ubyte"
    raw.write_bytes(gzip.decompress(idx_bytes(array)))
    np.testing.assert_array_equal(read_idx(raw), array)


def test_truncated_file(tmp_path):
    data = gzip.decompress(idx_bytes(np.zeros((5, 2, 2), np.uint8)))
    path = tmp_path / "short-idx3-ubyte"
    path.write_bytes(data[:-3])
    with pytest.raises(DataError, match=r"promises shape \(5, 2, 2\).*truncated"):
        read_idx(path)


def test_bad_magic_and_bad_gzip(tmp_path):
    path = tmp_path / "x-idx"
    path.write_bytes(b"\x12\x34\x08\x01" + b"\x00" * 8)
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(path)
    bad_gz = tmp_path / "x.gz"
    bad_gz.write_bytes(idx_bytes(np.zeros(3, np.uint8))[:-6])
    with pytest.raises(DataError, match="gzip"):
        read_idx(bad_gz)
    with pytest.raises(DataError, match="not found"):
        read_idx(tmp_path / "missing.gz")
