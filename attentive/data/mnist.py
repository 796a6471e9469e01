"""MNIST: the canonical checksums, digit pairs, and the t10k files kept in the repository.

The two t10k files (10,000 test images of the MNIST database and their labels) are tracked in git
under ``data/mnist-t10k/``, so the ``mnist-t10k-{a}v{b}`` datasets work offline on every clone. They
are found, in order, from the ``folder`` argument, the ``ATTENTIVE_MNIST_T10K`` environment variable,
or ``data/mnist-t10k`` beside the ``attentive`` package (the project is installed editable, so that
is the repository). They are not part of the download cache (``ATTENTIVE_DATA``), and are checked
against the canonical md5 sums (SPEC §6) every time they are read.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

import attentive
from attentive.data.dataset import Dataset
from attentive.data.idx import read_idx
from attentive.errors import DataError, InvalidParameterError

__all__ = [
    "MNIST_MD5",
    "T10K_FILES",
    "digit_pair",
    "load_t10k",
    "mnist_t10k_pair",
    "parse_t10k_name",
    "t10k_folder",
]

# The canonical md5 sums of the four gzip files of the MNIST database (SPEC §6).
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
T10K_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
T10K_ENV = "ATTENTIVE_MNIST_T10K"
T10K_PREFIX = "mnist-t10k-"
_PAIR_NAME = re.compile(r"mnist-t10k-([0-9]+)v([0-9]+|rest)")


def t10k_folder(folder: str | os.PathLike | None = None) -> Path:
    """The folder holding the two t10k files.

    Parameters
    ----------
    folder : path-like, optional
        Explicit folder. When ``None``: the ``ATTENTIVE_MNIST_T10K`` environment variable, else
        ``data/mnist-t10k`` in the repository the ``attentive`` package lives in.

    Returns
    -------
    pathlib.Path
        The folder (whether or not it exists; :func:`load_t10k` says what is missing).
    """
    if folder is not None:
        return Path(folder).expanduser()
    env = os.environ.get(T10K_ENV)
    if env:
        return Path(env).expanduser()
    # attentive/__init__.py -> attentive/ -> the repository root
    return Path(attentive.__file__).resolve().parents[1] / "data" / "mnist-t10k"


def load_t10k(folder: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The 10,000 t10k images and labels, after checking both files' md5 sums.

    Parameters
    ----------
    folder : path-like, optional
        Where the files are (see :func:`t10k_folder`).

    Returns
    -------
    images : ndarray of uint8, shape (10000, 28, 28)
    labels : ndarray of uint8, shape (10000,)

    Raises
    ------
    DataError
        A file is missing or its md5 is not the canonical one; the message names the file, the
        expected md5 and how to restore it.
    """
    where = t10k_folder(folder)
    for filename in T10K_FILES:
        _verify(where / filename)
    images = read_idx(where / T10K_FILES[0])
    labels = read_idx(where / T10K_FILES[1])
    if images.shape != (10000, 28, 28) or labels.shape != (10000,):
        raise DataError(
            f"MNIST t10k in {where}: images {images.shape} and labels {labels.shape}; expected "
            "(10000, 28, 28) and (10000,)"
        )
    return images, labels


def _verify(path: Path) -> None:
    expected = MNIST_MD5[path.name]
    restore = (
        f"restore the repository's copy (`git checkout -- data/mnist-t10k/{path.name}`), or point "
        f"{T10K_ENV} (or folder=) at a folder holding the canonical file, e.g. downloaded from "
        f"https://ossci-datasets.s3.amazonaws.com/mnist/{path.name}"
    )
    if not path.is_file():
        raise DataError(f"MNIST file {path.name} not found at {path} (md5 {expected}); {restore}")
    found = hashlib.md5(path.read_bytes()).hexdigest()
    if found != expected:
        raise DataError(
            f"MNIST file {path} is corrupt: md5 {found}, expected {expected}; {restore}"
        )


def digit_pair(
    images: np.ndarray, labels: np.ndarray, negative: int | None, positive: int
) -> tuple[np.ndarray, np.ndarray]:
    """The images of two digits (or of one digit and all the others) as float64 rows of 784
    pixels in [0, 1], and 0/1 labels.

    Parameters
    ----------
    images : ndarray of uint8, shape (n, 28, 28)
    labels : ndarray, shape (n,)
    negative, positive : int
        The digit labelled ``0`` (None: every digit but ``positive``) and the digit labelled
        ``1``.

    Returns
    -------
    X : ndarray of float64, shape (m, 784)
        Pixels divided by 255, in the files' order.
    y : ndarray of int64, shape (m,)
        ``1`` for ``positive``.
    """
    if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
        raise DataError(
            f"MNIST: {images.shape} images but {labels.shape[0]} labels; expected (n, 28, 28) "
            "images and n labels"
        )
    keep = np.ones(labels.shape[0], dtype=bool)
    if negative is not None:
        keep = np.isin(labels, (negative, positive))
    X = images[keep].reshape(-1, 784).astype(np.float64) / 255.0
    return X, (labels[keep] == positive).astype(np.int64)


def parse_t10k_name(name: str) -> tuple[int | None, int] | None:
    """``"mnist-t10k-4v9"`` -> ``(4, 9)``; ``"mnist-t10k-8vrest"`` -> ``(None, 8)`` (8 against
    every other digit, 8 positive); ``None`` for a name of another family.

    Raises
    ------
    DataError
        The name is ``mnist-t10k-...`` but not two different digits 0-9, or a digit and "rest".
    """
    if not isinstance(name, str) or not name.startswith(T10K_PREFIX):
        return None
    form = (
        "expected mnist-t10k-<a>v<b> with two different digits a, b in 0..9, e.g. "
        "mnist-t10k-2v5, or mnist-t10k-<a>vrest, e.g. mnist-t10k-8vrest"
    )
    match = _PAIR_NAME.fullmatch(name)
    if match is None:
        raise DataError(f"unknown dataset {name!r}: {form}")
    if len(match[1]) > 1 or (match[2] != "rest" and len(match[2]) > 1):
        raise DataError(f"unknown dataset {name!r}: digit out of range 0..9; {form}")
    if match[2] == "rest":
        return None, int(match[1])
    a, b = int(match[1]), int(match[2])
    if a == b:
        raise DataError(f"unknown dataset {name!r}: the same digit {a} twice; {form}")
    return a, b


def mnist_t10k_pair(
    negative: int | None,
    positive: int,
    test_size: float = 0.35,
    seed: int = 0,
    folder: str | None = None,
) -> Dataset:
    """Real MNIST t10k images of two digits, split into a training and a test part.

    Parameters
    ----------
    negative, positive : int
        The digits labelled ``0`` and ``1`` (``mnist-t10k-2v5``: 2 and 5); ``negative=None``:
        ``positive`` against every other digit (``mnist-t10k-8vrest``).
    test_size : float in (0, 1)
        The test part holds ``round(test_size · n)`` of the ``n`` images (673 of 1,924 for 2 vs 5).
    seed : int
        ``random_state`` of the stratified split.
    folder : str, optional
        Where the t10k files are (see :func:`t10k_folder`).
    """
    if not 0.0 < test_size < 1.0:
        raise InvalidParameterError(f"test_size must be a fraction in (0, 1), got {test_size!r}")
    X, y = digit_pair(*load_t10k(folder), negative, positive)
    n_test = round(test_size * len(y))
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=n_test, random_state=seed, stratify=y
    )
    against = "every other digit" if negative is None else str(negative)
    return Dataset(
        name=f"{T10K_PREFIX}{positive}vrest"
        if negative is None
        else f"{T10K_PREFIX}{negative}v{positive}",
        description=(
            f"Real MNIST handwritten digits, {against} against {positive}, from the 10,000 t10k "
            f"images kept in the repository ({len(y):,} images of 28×28 pixels scaled to [0, 1]); "
            f"stratified split of {len(y_train):,} / {len(y_test):,} with seed {seed}. Offline."
        ),
        positive_meaning=f"digit {positive}",
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        class_names=("other" if negative is None else str(negative), str(positive)),
    )
