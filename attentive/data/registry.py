"""The dataset registry: the paper's three datasets and the offline defaults.

Offline, always available: ``synthetic``, ``synthetic-sparse``, ``synthetic-lowrank``,
``digits-2v5``, ``breast-cancer`` and ``mnist-t10k-{a}v{b}`` for any two digits (real MNIST test
images kept in the repository; a few pairs are listed, any pair loads by name;
``mnist-t10k-2v5`` is the dashboard's default).
Downloaded once into ``<data_home>/mnist`` or ``<data_home>/libsvm``: ``mnist-2v5``, ``gisette``
and ``real-sim`` (see ``docs/data.md`` for sources and checksums).

Over 500 lines for one reason: it is the one table of datasets, each entry's loader, description,
files and checksums beside it, so that adding a dataset is an edit here only.

Loaded datasets are kept in a small in-process cache; their arrays are read-only so one caller
cannot change what the next one sees (copy them to modify).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_svmlight_file,
    make_classification,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import normalize

from attentive.data.dataset import Dataset, check_features, freeze
from attentive.data.dataset import data_home as resolve_data_home
from attentive.data.download import RemoteFile, discard, fetch, manual_instructions
from attentive.data.idx import read_idx
from attentive.data.mnist import MNIST_MD5, digit_pair, mnist_t10k_pair, parse_t10k_name
from attentive.errors import DataError, DownloadError, InvalidParameterError

__all__ = ["DatasetInfo", "clear_cache", "list_datasets", "load_dataset"]

MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
LIBSVM_BINARY = ("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/",)

MNIST_FILES = {
    key: RemoteFile(filename, "mnist", MNIST_MIRRORS, MNIST_MD5[filename])
    for key, filename in (
        ("train-images", "train-images-idx3-ubyte.gz"),
        ("train-labels", "train-labels-idx1-ubyte.gz"),
        ("test-images", "t10k-images-idx3-ubyte.gz"),
        ("test-labels", "t10k-labels-idx1-ubyte.gz"),
    )
}
# LIBSVM publishes no checksums: these files are verified by their parsed shape instead.
GISETTE_FILES = {
    "train": RemoteFile("gisette_scale.bz2", "libsvm", LIBSVM_BINARY),
    "test": RemoteFile("gisette_scale.t.bz2", "libsvm", LIBSVM_BINARY),
}
REAL_SIM_FILE = RemoteFile("real-sim.bz2", "libsvm", LIBSVM_BINARY)

GISETTE_SHAPE = {"train": (6000, 5000), "test": (1000, 5000)}
REAL_SIM_SHAPE = (72309, 20958)
# The t10k digit pairs list_datasets shows; load_dataset accepts any pair by name.
LISTED_T10K_PAIRS = ((2, 5), (4, 9), (3, 8), (7, 9))
_MEMORY_CACHE_SIZE = 8


@dataclass(frozen=True)
class DatasetInfo:
    """One registry entry as listed by :func:`list_datasets`.

    Attributes
    ----------
    name : str
    description : str
    offline : bool
        Available without any download.
    cached : bool
        Offline, or every file it needs is already in the data home.
    defaults : dict
        The parameters it accepts and their default values.
    files : tuple of RemoteFile
        The files it downloads (empty when offline).
    """

    name: str
    description: str
    offline: bool
    cached: bool
    defaults: dict[str, Any]
    files: tuple[RemoteFile, ...] = ()


# ----------------------------------------------------------------------------- offline datasets


def _synthetic(
    n_train: int = 1500,
    n_test: int = 1500,
    n_features: int = 20,
    seed: int = 0,
    class_sep: float = 1.0,
    flip_y: float = 0.02,
) -> Dataset:
    _check_sizes(n_train=n_train, n_test=n_test, n_features=n_features, minimum=2)
    n_informative = max(2, n_features // 2)
    n_redundant = min(n_features - n_informative, n_features // 5)
    X, y = make_classification(
        n_samples=n_train + n_test,
        n_features=n_features,
        n_informative=n_informative,
        n_redundant=n_redundant,
        class_sep=class_sep,
        flip_y=flip_y,
        random_state=seed,
    )
    return Dataset(
        name="synthetic",
        description=(
            f"A generated binary problem (scikit-learn's make_classification, seed {seed}): "
            f"{n_features} features, {n_informative} informative, overlapping classes with "
            f"{flip_y:.0%} of labels flipped, so an RBF SVM keeps hundreds of support vectors."
        ),
        positive_meaning="class 1 of the generated problem",
        X_train=X[:n_train],
        y_train=y[:n_train].astype(np.int64),
        X_test=X[n_train:],
        y_test=y[n_train:].astype(np.int64),
        class_names=("0", "1"),
    )


def _synthetic_lowrank(
    n_train: int = 800,
    n_test: int = 400,
    n_features: int = 100,
    rank: int = 3,
    seed: int = 0,
    noise: float = 0.15,
    flip_y: float = 0.15,
) -> Dataset:
    _check_sizes(n_train=n_train, n_test=n_test, n_features=n_features, minimum=2)
    if not 1 <= rank <= n_features:
        raise InvalidParameterError(f"rank must be in 1..n_features, got {rank}")
    if not 0.0 <= flip_y < 0.5:
        raise InvalidParameterError(f"flip_y must be in [0, 0.5), got {flip_y}")
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    # Rows near a rank-dimensional subspace of the features (as images lie near a few directions
    # of their pixels): the case a sketch of the kernel on a few principal directions is made for.
    Z = rng.normal(size=(n, rank))
    X = Z @ (rng.normal(size=(rank, n_features)) / np.sqrt(rank))
    X += noise * rng.normal(size=X.shape)
    # A curved class boundary in the subspace, with labels flipped so that an RBF SVM keeps
    # hundreds of support vectors (a long walk).
    y = (np.sin(2 * Z[:, 0]) + Z[:, 1 % rank] ** 2 > 1).astype(np.int64)
    flip = rng.random(n) < flip_y
    y[flip] = 1 - y[flip]
    return Dataset(
        name="synthetic-lowrank",
        description=(
            f"A generated dense problem whose {n_features} features lie near a {rank}-dimensional "
            f"subspace (noise {noise:g}; seed {seed}), with a curved class boundary in it and "
            f"{flip_y:.0%} of labels flipped: the case a sketch of the kernel pays (SPEC §3b)."
        ),
        positive_meaning="class 1 of the generated problem",
        X_train=X[:n_train],
        y_train=y[:n_train],
        X_test=X[n_train:],
        y_test=y[n_train:],
        class_names=("0", "1"),
    )


def _synthetic_sparse(
    n_train: int = 2000,
    n_test: int = 1000,
    n_features: int = 20958,
    density: float = 0.0025,
    seed: int = 0,
) -> Dataset:
    _check_sizes(n_train=n_train, n_test=n_test, n_features=n_features, minimum=2)
    if not 0.0 < density <= 1.0:
        raise InvalidParameterError(f"density must be in (0, 1], got {density}")
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    # Words of a vocabulary with Zipf-like frequencies (1 / (rank + 10)), as in text data: each row
    # draws about density · n_features of them (repeats merge), with exponential weights, and is
    # scaled to unit length like Real-sim's tf-idf rows.
    frequency = 1.0 / (np.arange(n_features) + 10.0)
    vocabulary = rng.permutation(n_features)  # feature index of the word of each frequency rank
    per_row = rng.poisson(density * n_features, size=n).clip(1)
    rows = np.repeat(np.arange(n), per_row)
    cols = vocabulary[rng.choice(n_features, size=rows.size, p=frequency / frequency.sum())]
    X = sp.csr_matrix((rng.exponential(size=rows.size), (rows, cols)), shape=(n, n_features))
    X.sum_duplicates()
    X = normalize(X).astype(np.float64)
    # Labels: a noisy linear rule on the 200 most frequent words, about 30% positives (as Real-sim).
    n_signal = min(200, n_features)
    weights = np.zeros(n_features)
    weights[vocabulary[:n_signal]] = rng.normal(size=n_signal)
    score = X @ weights
    score = score + 0.1 * score.std() * rng.normal(size=n)
    y = (score > np.quantile(score, 0.7)).astype(np.int64)
    return Dataset(
        name="synthetic-sparse",
        description=(
            f"A generated sparse problem with Real-sim's shape ({n_features} features, density "
            f"{density}, Zipf-like word frequencies, unit-length rows; seed {seed}); labels are a noisy "
            "linear rule with about 30% positives. For speed benchmarks without the download."
        ),
        positive_meaning="class 1 of the generated problem",
        X_train=X[:n_train],
        y_train=y[:n_train],
        X_test=X[n_train:],
        y_test=y[n_train:],
        class_names=("0", "1"),
    )


def _digits_2v5(test_size: float = 0.3, seed: int = 0) -> Dataset:
    digits = load_digits()
    keep = np.isin(digits.target, (2, 5))
    X = digits.data[keep] / 16.0  # pixels in [0, 1], as MNIST's
    y = (digits.target[keep] == 5).astype(np.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )
    return Dataset(
        name="digits-2v5",
        description=(
            "8×8 handwritten digits bundled with scikit-learn, 2 against 5 (a small offline stand-in "
            f"for MNIST 2 vs 5); pixels scaled to [0, 1], stratified {1 - test_size:.0%} / "
            f"{test_size:.0%} split with seed {seed}."
        ),
        positive_meaning="digit 5",
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        class_names=("2", "5"),
    )


def _breast_cancer(test_size: float = 0.3, seed: int = 0) -> Dataset:
    bunch = load_breast_cancer()
    y = (bunch.target == 0).astype(np.int64)  # sklearn codes malignant as 0
    X_train, X_test, y_train, y_test = train_test_split(
        bunch.data, y, test_size=test_size, random_state=seed, stratify=y
    )
    # Standardise with training statistics only, so plain SVMs work and the test part stays unseen.
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std[std == 0] = 1.0
    return Dataset(
        name="breast-cancer",
        description=(
            "Wisconsin diagnostic breast cancer (bundled with scikit-learn): 30 features of cell "
            f"nuclei, standardised with training means and deviations; stratified "
            f"{1 - test_size:.0%} / {test_size:.0%} split with seed {seed}."
        ),
        positive_meaning="malignant tumour",
        X_train=(X_train - mean) / std,
        y_train=y_train,
        X_test=(X_test - mean) / std,
        y_test=y_test,
        class_names=("benign", "malignant"),
    )


def _check_sizes(*, minimum: int, **sizes: int) -> None:
    for key, value in sizes.items():
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < minimum:
            raise InvalidParameterError(f"{key} must be an integer >= {minimum}, got {value!r}")


# ----------------------------------------------------------------------------- downloaded datasets


def _mnist_2v5(home: Path, download: bool, base_url: str | None, progress: bool) -> Dataset:
    paths = {
        k: fetch(f, home, download=download, base_url=base_url, progress=progress)
        for k, f in MNIST_FILES.items()
    }
    parts = {}
    for part in ("train", "test"):
        images = read_idx(paths[f"{part}-images"])
        labels = read_idx(paths[f"{part}-labels"])
        parts[part] = digit_pair(images, labels, 2, 5)
    return Dataset(
        name="mnist-2v5",
        description=(
            "MNIST handwritten digits, 2 against 5, with the standard training and test splits "
            "(11,379 / 1,924 images of 28×28 pixels scaled to [0, 1]), as in the paper."
        ),
        positive_meaning="digit 5",
        X_train=parts["train"][0],
        y_train=parts["train"][1],
        X_test=parts["test"][0],
        y_test=parts["test"][1],
        class_names=("2", "5"),
    )


def _gisette(home: Path, download: bool, base_url: str | None, progress: bool) -> Dataset:
    processed = home / "libsvm" / "gisette.npz"
    arrays = _read_processed(processed)
    if arrays is None:
        arrays = {}
        for part, remote in GISETTE_FILES.items():
            path = fetch(remote, home, download=download, base_url=base_url, progress=progress)
            X, labels = _parse_verified(path, remote, home, base_url, GISETTE_SHAPE[part])
            arrays[f"X_{part}"] = X.toarray()
            arrays[f"y_{part}"] = (labels > 0).astype(np.int64)
        _write_processed(processed, arrays)
    return Dataset(
        name="gisette",
        description=(
            "Gisette (NIPS 2003 feature selection challenge, LIBSVM's scaled version): separate the "
            "confusable handwritten digits 4 and 9 from 5,000 features, half of them random probes; "
            "6,000 training and 1,000 test examples, as in the paper."
        ),
        positive_meaning="label +1 (one of the digits 4 and 9; the challenge does not say which)",
        X_train=arrays["X_train"],
        y_train=arrays["y_train"],
        X_test=arrays["X_test"],
        y_test=arrays["y_test"],
        class_names=("-1", "+1"),
    )


def _real_sim(
    home: Path,
    download: bool,
    base_url: str | None,
    progress: bool,
    n_test: int = 2000,
    seed: int = 0,
) -> Dataset:
    _check_sizes(n_test=n_test, minimum=1)
    if n_test >= REAL_SIM_SHAPE[0]:
        raise InvalidParameterError(f"n_test must be below {REAL_SIM_SHAPE[0]}, got {n_test}")
    processed = home / "libsvm" / "real-sim.npz"
    arrays = _read_processed(processed)
    if arrays is None:
        path = fetch(REAL_SIM_FILE, home, download=download, base_url=base_url, progress=progress)
        X, labels = _parse_verified(path, REAL_SIM_FILE, home, base_url, REAL_SIM_SHAPE)
        arrays = {
            "data": X.data,
            "indices": X.indices,
            "indptr": X.indptr,
            "y": (labels > 0).astype(np.int64),
        }
        _write_processed(processed, arrays)
    X = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=REAL_SIM_SHAPE)
    y = arrays["y"]
    test = np.zeros(REAL_SIM_SHAPE[0], dtype=bool)
    test[np.random.default_rng(seed).choice(REAL_SIM_SHAPE[0], n_test, replace=False)] = True
    return Dataset(
        name="real-sim",
        description=(
            "Real-sim (LIBSVM): UseNet articles about real or simulated autos and aviation, as "
            f"20,958 sparse tf-idf features; {n_test:,} random test examples (seed {seed}) and the "
            "rest for training, as in the paper. Kept sparse end to end."
        ),
        positive_meaning="label +1 of LIBSVM's real-sim",
        X_train=X[~test],
        y_train=y[~test],
        X_test=X[test],
        y_test=y[test],
        class_names=("-1", "+1"),
    )


def _parse_verified(
    path: Path, remote: RemoteFile, home: Path, base_url: str | None, shape: tuple[int, int]
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse a downloaded LIBSVM file and check its shape; delete it when either fails."""
    try:
        X, labels = load_svmlight_file(str(path), n_features=shape[1], dtype=np.float64)
        problem = None if X.shape == shape else f"parsed shape {X.shape}, expected {shape}"
    except (ValueError, OSError, EOFError) as exc:
        problem = f"cannot be parsed ({type(exc).__name__}: {exc})"
    if problem:
        discard(path)
        raise DownloadError(
            f"{remote.filename} from {remote.urls(base_url)[0]} is corrupt or truncated: {problem}. "
            f"It was deleted from the cache; download again, or {manual_instructions(remote, home)}"
        )
    return X.tocsr(), labels


def _read_processed(path: Path) -> dict[str, np.ndarray] | None:
    """Arrays saved by :func:`_write_processed`, or ``None`` (a damaged file is deleted)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError):
        discard(path)
        return None


def _write_processed(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Save parsed arrays atomically (temporary file, then rename) so reopening is instant."""
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class _Entry:
    loader: Callable[..., Dataset]
    description: str
    files: tuple[RemoteFile, ...] = ()

    @property
    def offline(self) -> bool:
        return not self.files

    def defaults(self) -> dict[str, Any]:
        skip = {"home", "download", "base_url", "progress"}
        return {
            k: p.default
            for k, p in inspect.signature(self.loader).parameters.items()
            if k not in skip
        }


REGISTRY: dict[str, _Entry] = {
    "digits-2v5": _Entry(_digits_2v5, "scikit-learn's bundled 8×8 digits, 2 vs 5 (offline)"),
    "breast-cancer": _Entry(
        _breast_cancer, "Wisconsin breast cancer, malignant vs benign (offline, bundled)"
    ),
    "synthetic": _Entry(
        _synthetic, "generated dense binary problem; sizes and seed are parameters (offline)"
    ),
    "synthetic-lowrank": _Entry(
        _synthetic_lowrank,
        "generated dense problem near a low-dimensional subspace, where a sketch pays (offline)",
    ),
    "synthetic-sparse": _Entry(
        _synthetic_sparse, "generated sparse problem with Real-sim's 20,958 features (offline)"
    ),
    **{
        f"mnist-t10k-{a}v{b}": _Entry(
            functools.partial(mnist_t10k_pair, a, b),
            f"real MNIST t10k images, {a} vs {b}, stratified 65 / 35 split (offline, in data/"
            + ("; the app's default)" if (a, b) == (2, 5) else ")"),
        )
        for a, b in LISTED_T10K_PAIRS
    },
    "mnist-2v5": _Entry(
        _mnist_2v5,
        "MNIST 2 vs 5, standard splits 11,379 / 1,924 (paper; downloads 11 MB)",
        tuple(MNIST_FILES.values()),
    ),
    "gisette": _Entry(
        _gisette,
        "Gisette, 6,000 / 1,000 × 5,000 features (paper; downloads 50 MB from LIBSVM)",
        tuple(GISETTE_FILES.values()),
    ),
    "real-sim": _Entry(
        _real_sim,
        "Real-sim, 72,309 × 20,958 sparse, 2,000 random test (paper; downloads 34 MB)",
        (REAL_SIM_FILE,),
    ),
}

_memory: OrderedDict[tuple, Dataset] = OrderedDict()


def _entry(name: str) -> _Entry:
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        pass
    pair = parse_t10k_name(name)
    if pair is not None:  # any two digits, not only the listed pairs
        a, b = pair
        against = "the rest" if a is None else a
        return _Entry(
            functools.partial(mnist_t10k_pair, a, b), f"real MNIST t10k, {b} vs {against}"
        )
    known = ", ".join(REGISTRY)
    raise DataError(
        f"unknown dataset {name!r}; known datasets: {known} (and mnist-t10k-<a>v<b> for any two "
        "digits, mnist-t10k-<a>vrest for a digit against the others)"
    )


def _is_cached(entry: _Entry, home: Path) -> bool:
    return all(f.path(home).is_file() for f in entry.files)


def list_datasets(data_home: str | os.PathLike | None = None) -> list[DatasetInfo]:
    """List the registry: name, description, whether offline and whether already cached.

    Parameters
    ----------
    data_home : path-like, optional
        Where downloads are cached (see :func:`attentive.data.data_home`).

    Returns
    -------
    list of DatasetInfo
        In registry order (offline datasets first).
    """
    home = resolve_data_home(data_home)
    return [
        DatasetInfo(
            name=name,
            description=entry.description,
            offline=entry.offline,
            cached=entry.offline or _is_cached(entry, home),
            defaults=entry.defaults(),
            files=entry.files,
        )
        for name, entry in REGISTRY.items()
    ]


def load_dataset(
    name: str,
    data_home: str | os.PathLike | None = None,
    download: bool = True,
    *,
    base_url: str | None = None,
    progress: bool = False,
    **params: Any,
) -> Dataset:
    """Load a registered dataset (downloading it once if needed).

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`' names, or ``mnist-t10k-<a>v<b>`` for any two digits.
    data_home : path-like, optional
        Download cache; default ``ATTENTIVE_DATA`` or ``./data``.
    download : bool
        Allow downloading missing files; when ``False`` a missing file raises :class:`DataError`.
    base_url : str, optional
        Download from this base URL instead of the mirrors (also ``ATTENTIVE_MIRROR``).
    progress : bool
        Show a progress bar while downloading (the CLI turns it on).
    **params
        Dataset parameters, e.g. for ``synthetic``: ``n_train``, ``n_test``, ``n_features``,
        ``seed``, ``class_sep``, ``flip_y``; for ``real-sim``: ``n_test``, ``seed``; for
        ``mnist-t10k-*``: ``test_size``, ``seed``, ``folder`` (where the t10k files are).

    Returns
    -------
    Dataset
        With read-only arrays (shared with later calls through an in-process cache).

    Raises
    ------
    DataError
        Unknown name (the message lists the known ones), or a missing file with ``download=False``.
    DownloadError
        A download failed or was corrupt.
    InvalidParameterError
        An unknown or invalid parameter.
    """
    entry = _entry(name)
    defaults = entry.defaults()
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        accepted = ", ".join(defaults) or "none"
        raise InvalidParameterError(
            f"dataset {name!r} has no parameter {', '.join(unknown)}; it accepts: {accepted}"
        )
    resolved = {**defaults, **params}
    home = resolve_data_home(data_home)
    key = (name, None if entry.offline else str(home.resolve()), tuple(sorted(resolved.items())))
    if key in _memory:
        _memory.move_to_end(key)
        return _memory[key]
    if entry.offline:
        dataset = entry.loader(**resolved)
    else:
        dataset = entry.loader(home, download, base_url, progress, **resolved)
    X_train = check_features(dataset.X_train, where=f"dataset {name!r} (train)")
    X_test = check_features(dataset.X_test, where=f"dataset {name!r} (test)")
    dataset = Dataset(
        name=dataset.name,
        description=dataset.description,
        positive_meaning=dataset.positive_meaning,
        X_train=freeze(X_train),
        y_train=freeze(np.ascontiguousarray(dataset.y_train, dtype=np.int64)),
        X_test=freeze(X_test),
        y_test=freeze(np.ascontiguousarray(dataset.y_test, dtype=np.int64)),
        class_names=dataset.class_names,
        params=resolved,
    )
    _memory[key] = dataset
    while len(_memory) > _MEMORY_CACHE_SIZE:
        _memory.popitem(last=False)
    return dataset


def clear_cache() -> None:
    """Forget the datasets kept in memory (files on disk are untouched)."""
    _memory.clear()
