"""The problems ``python -m attentive bench`` times, offline: data as users prepare it and the
problems earlier rounds were measured on.

* ``mnist-AvB`` / ``mnist-8vrest``: real MNIST t10k digits with the pixels / 255 stored in
  float32 (as image pipelines keep them), ``SVC(gamma="scale")`` with ``C`` 1 or 10 (``-C10``),
  the test rows repeated 10× (pairs) or 2× (one against the rest); any pair or digit against
  the rest loads by name, with ``-std`` (a ``StandardScaler`` in front) or ``-pca<k>`` (a
  ``PCA`` of k components in front);
* ``dense-40``: a 40-feature problem with thousands of support vectors;
* ``grid-AvB``: the same pairs on the integer pixel grid (pixels / 255 in float64,
  ``SVC(gamma=0.05)``), the problems of docs/speed.md's earlier rounds;
* ``digits-2v5``, ``synthetic`` (RBF, 20 features), ``synthetic-sparse`` (``LinearSVC`` on
  Real-sim-shaped sparse rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["CORPUS", "DEFAULT", "Problem", "load_problem", "problem_name", "problem_names"]

PAIRS = ("2v5", "4v9", "3v8", "7v9")


@dataclass
class Problem:
    """One benchmark problem: an unfitted model, its training data and the rows to time."""

    name: str
    model: object
    X_train: object
    y_train: np.ndarray
    X_test: object
    mnist_like: bool  # float32 pixels / 255 with gamma="scale": the peer's target applies


def _mnist(
    name: str, C: float, repeat: int, quick: bool, scaled: bool = False, pca: int | None = None
) -> Problem:
    """An MNIST problem as users prepare it: float32 pixels / 255, ``SVC(gamma="scale")``;
    ``scaled``: with a ``StandardScaler`` in front (a pipeline, rows off the pixel grid);
    ``pca``: with a ``PCA`` of that many components in front instead."""
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from attentive.data import load_dataset

    ds = load_dataset(f"mnist-t10k-{name}")
    X_train = np.asarray(ds.X_train, dtype=np.float32)
    X_test = np.asarray(ds.X_test, dtype=np.float32)
    if quick:
        X_train, y_train = X_train[:600], np.asarray(ds.y_train)[:600]
        X_test = X_test[:400]
    else:
        y_train = np.asarray(ds.y_train)
        X_test = np.tile(X_test, (repeat, 1))
    suffix = ("" if C == 1 else f"-C{C:g}") + ("-std" if scaled else "")
    suffix += f"-pca{pca}" if pca else ""
    model = SVC(gamma="scale", C=C)
    if scaled:
        model = make_pipeline(StandardScaler(), model)
    elif pca:
        model = make_pipeline(PCA(pca, random_state=0), model)
    return Problem(f"mnist-{name}{suffix}", model, X_train, y_train, X_test, True)


def _grid(name: str, quick: bool, tiled: bool = True) -> Problem:
    from sklearn.svm import SVC

    from attentive.data import load_dataset

    ds = load_dataset(f"mnist-t10k-{name}")
    X_test = np.asarray(ds.X_test)
    return Problem(
        f"grid-{name}",
        SVC(gamma=0.05, C=1.0),
        np.asarray(ds.X_train),
        np.asarray(ds.y_train),
        X_test[:400] if quick else np.tile(X_test, (10 if tiled else 1, 1)),
        False,
    )


def _dense_40(quick: bool) -> Problem:
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    n_train, n_test = (1500, 1000) if quick else (12000, 6000)
    X, y = make_classification(
        n_samples=n_train + n_test,
        n_features=40,
        n_informative=20,
        flip_y=0.1,
        class_sep=0.8,
        random_state=0,
    )
    return Problem("dense-40", SVC(gamma="scale"), X[:n_train], y[:n_train], X[n_train:], False)


def _registry(name: str, quick: bool) -> Problem:
    from sklearn.svm import SVC, LinearSVC

    from attentive.data import load_dataset

    if name == "digits-2v5":
        ds, model = load_dataset("digits-2v5"), SVC(C=1.0, gamma="scale")
    elif name == "synthetic":
        sizes = dict(n_train=1500, n_test=2000) if quick else dict(n_train=3500, n_test=10000)
        ds, model = load_dataset("synthetic", **sizes), SVC(C=1.0, gamma="scale")
    else:
        sizes = dict(n_train=1000, n_test=500) if quick else dict(n_train=2000, n_test=2000)
        ds, model = load_dataset("synthetic-sparse", **sizes), LinearSVC(C=1.0)
    return Problem(name, model, ds.X_train, np.asarray(ds.y_train), ds.X_test, False)


# name -> problem(quick, tiled): ``tiled`` repeats the MNIST test rows (for timing); the others
# have as many distinct test rows either way.
CORPUS = {
    **{f"mnist-{p}": (lambda q, t, p=p: _mnist(p, 1.0, 10 if t else 1, q)) for p in PAIRS},
    **{f"mnist-{p}-C10": (lambda q, t, p=p: _mnist(p, 10.0, 10 if t else 1, q)) for p in PAIRS},
    "mnist-8vrest": lambda q, t: _mnist("8vrest", 1.0, 2 if t else 1, q),
    "mnist-8vrest-C10": lambda q, t: _mnist("8vrest", 10.0, 2 if t else 1, q),
    # The same with a StandardScaler in front: a pipeline, its rows off the pixel grid.
    "mnist-2v5-std": lambda q, t: _mnist("2v5", 1.0, 10 if t else 1, q, scaled=True),
    "mnist-8vrest-std": lambda q, t: _mnist("8vrest", 1.0, 2 if t else 1, q, scaled=True),
    "dense-40": lambda q, t: _dense_40(q),
    **{f"grid-{p}": (lambda q, t, p=p: _grid(p, q, t)) for p in PAIRS},
    "digits-2v5": lambda q, t: _registry("digits-2v5", q),
    "synthetic": lambda q, t: _registry("synthetic", q),
    "synthetic-sparse": lambda q, t: _registry("synthetic-sparse", q),
}
DEFAULT = tuple(CORPUS)


# Any MNIST problem by name, beyond the corpus's: mnist-<a>v<b> or mnist-<a>vrest, with -C<C>
# and -std as above (other problems of the same kinds, for checking a method off the corpus).
_MNIST_NAME = re.compile(
    r"mnist-([0-9])v([0-9]|rest)(?:-C([0-9]+(?:\.[0-9]+)?))?(?:(-std)|-pca([0-9]+))?"
)


def problem_names() -> str:
    """What :func:`load_problem` accepts, for help texts and errors."""
    return ", ".join(CORPUS) + (
        " (and mnist-<a>v<b> or mnist-<a>vrest, with -C<C> and/or -std or -pca<k>: a"
        " StandardScaler or a PCA of k components in front)"
    )


def problem_name(name: str) -> str:
    """``name`` if :func:`load_problem` knows it (an argparse ``type``: a clear error if not)."""
    import argparse

    if name in CORPUS or _known_mnist(name):
        return name
    raise argparse.ArgumentTypeError(_unknown(name))


def _unknown(name: str) -> str:
    return f"unknown problem {name!r}; expected one of {problem_names()}"


def _known_mnist(name: str):
    """The name's match if it names an MNIST problem: two different digits, C > 0 and
    between 1 and 784 PCA components."""
    match = _MNIST_NAME.fullmatch(name)
    if match is None or match[1] == match[2] or (match[3] and float(match[3]) <= 0):
        return None
    if match[5] and not 1 <= int(match[5]) <= 784:
        return None
    return match


def load_problem(name: str, quick: bool = False, *, tiled: bool = True) -> Problem:
    """The problem ``name`` of :data:`CORPUS`, or any MNIST pair or digit against the rest
    named as the corpus names them (``mnist-1v7-C10``, ``mnist-3vrest-std``). ``quick``: small,
    for a check that it runs; ``tiled=False``: each test row once, for measuring rules rather
    than timing them."""
    if name in CORPUS:
        return CORPUS[name](quick, tiled)
    match = _known_mnist(name)
    if match is None:
        raise ValueError(_unknown(name))
    pair = f"{match[1]}v{match[2]}"
    repeat = (2 if match[2] == "rest" else 10) if tiled else 1
    pca = int(match[5]) if match[5] else None
    return _mnist(pair, float(match[3] or 1), repeat, quick, scaled=bool(match[4]), pca=pca)
