"""Train the models the core decomposes, with the paper's presets and an on-disk cache.

Models are plain scikit-learn estimators (no Pipeline): the datasets are already scaled (pixels in
[0, 1], Gisette scaled by LIBSVM, breast-cancer standardised with training statistics), so support
vectors and coefficients live in the dataset's own feature space.

A trained model is saved as ``<data_home>/models/<dataset>-<kind>-<key>.skops`` where the key hashes
the dataset's name and data fingerprint, the training parameters and scikit-learn's version; reopening
the same model loads it from there (safely, through :func:`~attentive.models.load_model`).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from numbers import Real
from pathlib import Path
from typing import Any

import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC, LinearSVC

from attentive.data.dataset import Dataset, data_home
from attentive.errors import AttentiveError, InvalidParameterError
from attentive.models.persistence import load_model, save_model

__all__ = [
    "GAMMA_KINDS",
    "KINDS",
    "PAPER_PRESETS",
    "default_model_params",
    "make_model",
    "model_cache_path",
    "paper_preset",
    "train_model",
]

KINDS = ("rbf", "linear", "poly", "sigmoid", "linear-svc", "logistic")
_SVC_KINDS = ("rbf", "linear", "poly", "sigmoid")
GAMMA_KINDS = ("rbf", "poly", "sigmoid")  # the kernels with a gamma

# gamma for MNIST 2 vs 5 on pixels in [0, 1]: 0.0125 ≈ 1 / (784 · pixel variance), i.e. sklearn's
# "scale" fixed as a number. Extrapolating from the t10k digits it keeps ≈ 700-750 support vectors on
# the 11,379 training images (the paper reports 781). See docs/data.md.
MNIST_GAMMA = 0.0125

PAPER_PRESETS: dict[str, dict[str, Any]] = {
    "gisette": {"kind": "linear", "C": 1.0},
    "mnist-2v5": {"kind": "rbf", "C": 1.0, "gamma": MNIST_GAMMA},
    # The paper's linear SVM; LinearSVC because a kernel SVC on 70,000 sparse examples takes far
    # too long, and a linear model decomposes into the same per-feature terms.
    "real-sim": {"kind": "linear-svc", "C": 1.0},
}
_OFFLINE_DEFAULTS: dict[str, dict[str, Any]] = {
    "digits-2v5": {"kind": "rbf", "C": 1.0, "gamma": "scale"},
    "breast-cancer": {"kind": "rbf", "C": 1.0, "gamma": "scale"},
    "synthetic": {"kind": "rbf", "C": 1.0, "gamma": "scale"},
    "synthetic-sparse": {"kind": "linear-svc", "C": 1.0},
}
# Every mnist-t10k-{a}v{b} pair (real MNIST test images, pixels in [0, 1]): the project's reference
# model on these problems. On mnist-t10k-2v5 it keeps 846 support vectors trained on the 1,251
# training images, 628 on the 770 left after holding out 481 for calibration. See docs/data.md.
_PREFIX_DEFAULTS: dict[str, dict[str, Any]] = {
    "mnist-t10k-": {"kind": "rbf", "C": 1.0, "gamma": 0.05},
}
_GENERIC_DEFAULT = {"kind": "rbf", "C": 1.0, "gamma": "scale"}


def paper_preset(name: str) -> dict[str, Any]:
    """The model the paper trained on one of its datasets.

    Parameters
    ----------
    name : {"gisette", "mnist-2v5", "real-sim"}

    Returns
    -------
    dict
        Keyword arguments for :func:`train_model` (``kind``, ``C`` and, for RBF, ``gamma``).
    """
    if name not in PAPER_PRESETS:
        raise InvalidParameterError(
            f"the paper has no model for {name!r}; its datasets are {', '.join(PAPER_PRESETS)} "
            "(use default_model_params for the others)"
        )
    return dict(PAPER_PRESETS[name])


def default_model_params(name: str) -> dict[str, Any]:
    """The default model for a dataset: the paper's preset, else a fast RBF (or linear) SVM.

    Names of a family (``mnist-t10k-4v9``) take the preset of their prefix.
    """
    if name in PAPER_PRESETS:
        return paper_preset(name)
    if name in _OFFLINE_DEFAULTS:
        return dict(_OFFLINE_DEFAULTS[name])
    for prefix, params in _PREFIX_DEFAULTS.items():
        if name.startswith(prefix):
            return dict(params)
    return dict(_GENERIC_DEFAULT)


def _resolve(kind: str, C: float, gamma: str | float, degree: int, coef0: float) -> dict[str, Any]:
    """Validate training parameters and keep only those that matter for ``kind``."""
    if kind not in KINDS:
        raise InvalidParameterError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if not isinstance(C, Real) or isinstance(C, bool) or not 0 < C < float("inf"):
        # (C = inf is a hard margin, which libsvm may never finish on overlapping classes.)
        raise InvalidParameterError(f"C must be a positive finite number, got {C!r}")
    params: dict[str, Any] = {"kind": kind, "C": float(C)}
    if kind in GAMMA_KINDS:
        if isinstance(gamma, str):
            if gamma not in ("scale", "auto"):
                raise InvalidParameterError(
                    f"gamma must be 'scale', 'auto' or a positive number, got {gamma!r}"
                )
        elif (
            not isinstance(gamma, Real)
            or isinstance(gamma, bool)
            or not 0 < gamma < float("inf")  # (scikit-learn refuses inf, after the load)
        ):
            raise InvalidParameterError(
                f"gamma must be 'scale', 'auto' or a positive finite number, got {gamma!r}"
            )
        else:
            gamma = float(gamma)
        params["gamma"] = gamma
    if kind == "poly":
        if not isinstance(degree, int) or degree < 1:
            raise InvalidParameterError(f"degree must be a positive integer, got {degree!r}")
        params["degree"] = degree
    if kind in ("poly", "sigmoid"):
        params["coef0"] = float(coef0)
    return params


def make_model(
    kind: str = "rbf",
    C: float = 1.0,
    gamma: str | float = "scale",
    degree: int = 3,
    coef0: float = 0.0,
) -> Any:
    """An unfitted estimator for ``kind`` (see :func:`train_model`)."""
    params = _resolve(kind, C, gamma, degree, coef0)
    kind = params.pop("kind")
    if kind in _SVC_KINDS:
        return SVC(kernel=kind, **params)
    if kind == "linear-svc":
        return LinearSVC(C=params["C"], max_iter=10_000, random_state=0)
    return LogisticRegression(C=params["C"], max_iter=2_000)


def model_cache_path(
    dataset: Dataset,
    kind: str = "rbf",
    C: float = 1.0,
    gamma: str | float = "scale",
    *,
    degree: int = 3,
    coef0: float = 0.0,
    cache_dir: str | os.PathLike | None = None,
) -> Path:
    """Where :func:`train_model` caches this model (whether or not it exists yet)."""
    params = _resolve(kind, C, gamma, degree, coef0)
    identity = {
        "dataset": dataset.name,
        "data": dataset.fingerprint,
        "params": params,
        "sklearn": sklearn.__version__,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    directory = Path(cache_dir) if cache_dir is not None else data_home() / "models"
    return directory / f"{dataset.name}-{params['kind']}-{key}.skops"


def train_model(
    dataset: Dataset,
    kind: str = "rbf",
    C: float = 1.0,
    gamma: str | float = "scale",
    *,
    degree: int = 3,
    coef0: float = 0.0,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
) -> Any:
    """Fit a model on ``dataset``'s training part, or load it from the cache.

    Parameters
    ----------
    dataset : Dataset
        The data; only ``X_train`` / ``y_train`` are used.
    kind : {"rbf", "linear", "poly", "sigmoid", "linear-svc", "logistic"}
        ``SVC`` with that kernel, ``LinearSVC`` or ``LogisticRegression``.
    C : float
        Regularisation (inverse strength), > 0.
    gamma : {"scale", "auto"} or float
        Kernel width for rbf / poly / sigmoid (ignored otherwise).
    degree : int
        Degree of the poly kernel.
    coef0 : float
        Constant of the poly and sigmoid kernels.
    cache : bool
        Load from / save to the on-disk cache.
    cache_dir : path-like, optional
        Cache folder; default ``<data_home>/models``.

    Returns
    -------
    estimator
        A fitted ``SVC``, ``LinearSVC`` or ``LogisticRegression`` (never a Pipeline).

    Raises
    ------
    InvalidParameterError
        Unknown ``kind``, or a ``C`` / ``gamma`` that is not positive and finite.
    """
    model = make_model(kind, C, gamma, degree, coef0)
    path = model_cache_path(
        dataset, kind, C, gamma, degree=degree, coef0=coef0, cache_dir=cache_dir
    )
    if cache and path.is_file():
        try:
            return load_model(path, n_features=dataset.n_features)
        except AttentiveError as exc:
            warnings.warn(
                f"ignoring the damaged cached model {path} ({exc}); retraining", stacklevel=2
            )
            path.unlink(missing_ok=True)
    model.fit(dataset.X_train, dataset.y_train)
    if cache:
        try:
            save_model(model, path)
        except (OSError, AttentiveError) as exc:  # (save_model names what it could not write)
            warnings.warn(f"could not cache the model at {path}: {exc}", stacklevel=2)
    return model
