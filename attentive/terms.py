"""Term decomposition of fitted scikit-learn models (SPEC §1).

Every supported model is ``f(x) = b + Σ_i w_i h_i(x)``. :func:`decompose` turns a fitted model into a
:class:`TermDecomposition` that can evaluate any subset of the ``h_i`` on new examples, so that a
walk can be computed one block of terms at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)

from attentive.errors import UnsupportedModelError

__all__ = ["SUPPORTED_MODELS", "TermDecomposition", "decompose"]

SUPPORTED_MODELS = (
    "SVC (kernel linear, rbf, poly or sigmoid; dense or sparse), LinearSVC, LogisticRegression, "
    "AdaBoostClassifier (SAMME), or a Pipeline ending in one of them"
)


@dataclass(frozen=True)
class TermDecomposition:
    """A fitted binary linear predictor written as ``f(x) = intercept + Σ_i weights[i] h_i(x)``.

    Parameters
    ----------
    weights : ndarray of shape (n_terms,)
        ``w_i`` (SPEC §1 table).
    intercept : float
        ``b``.
    kind : {"kernel", "linear", "boosting"}
        What a term is: a support vector, a feature, or a weak learner.
    term_function : callable
        ``term_function(X, idx) -> ndarray (n_examples, len(idx))`` of ``h_i(x)`` for the terms ``idx``,
        on already-transformed ``X``.
    transform : callable or None
        The pipeline's earlier steps, applied to raw ``X`` first.
    classes : ndarray of shape (2,)
        The model's ``classes_``; ``classes[1]`` is the positive class.
    kernel : str or None
        For SVC: the kernel name.
    """

    weights: np.ndarray
    intercept: float
    kind: str
    term_function: Callable[[object, np.ndarray], np.ndarray] = field(repr=False)
    transform: Callable[[object], object] | None = field(default=None, repr=False)
    classes: np.ndarray | None = None
    kernel: str | None = None
    support_vectors: object | None = field(default=None, repr=False)
    kernel_params: dict | None = None

    @property
    def n_terms(self) -> int:
        return int(self.weights.shape[0])

    def prepare(self, X):
        """Apply the pipeline's earlier steps (if any) to raw ``X``."""
        return X if self.transform is None else self.transform(X)

    def term_values(self, X, idx=None) -> np.ndarray:
        """``h_i(x)`` for the terms ``idx`` (all terms when None), on prepared ``X``.

        Returns a dense float64 array of shape (n_examples, len(idx)).
        """
        if idx is None:
            idx = np.arange(self.n_terms)
        return np.asarray(self.term_function(X, np.asarray(idx)), dtype=np.float64)


def _unwrap(estimator):
    """Split a (possibly frozen, possibly pipelined) estimator into (transform, final estimator)."""
    # FrozenEstimator (sklearn.frozen) keeps the fitted model in ``estimator``.
    if type(estimator).__name__ == "FrozenEstimator":
        estimator = estimator.estimator
    steps = getattr(estimator, "steps", None)
    if steps is not None and hasattr(estimator, "named_steps"):
        final = steps[-1][1]
        head = estimator[:-1] if len(steps) > 1 else None
        transform = head.transform if head is not None else None
        inner_transform, final = _unwrap(final)
        if inner_transform is not None:
            outer = transform

            def transform(X, _outer=outer, _inner=inner_transform):
                return _inner(_outer(X) if _outer is not None else X)

        return transform, final
    return None, estimator


def _check_binary(classes, name: str) -> np.ndarray:
    classes = np.asarray(classes)
    if classes.shape[0] != 2:
        raise UnsupportedModelError(
            f"{name} was fitted on {classes.shape[0]} classes {list(classes)}; attentive "
            "prediction needs a binary model (exactly 2 classes)."
        )
    return classes


def _svc_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, type(model).__name__)
    kernel = model.kernel
    if not isinstance(kernel, str) or kernel not in ("linear", "rbf", "poly", "sigmoid"):
        raise UnsupportedModelError(
            f"SVC with kernel={kernel!r} is not supported; use kernel 'linear', 'rbf', 'poly' or "
            "'sigmoid'."
        )
    sv = model.support_vectors_
    # sklearn stores dual_coef_ and intercept_ with the sign that decision_function uses.
    weights = np.asarray(
        model.dual_coef_.toarray() if sp.issparse(model.dual_coef_) else model.dual_coef_,
        dtype=np.float64,
    )[0].copy()
    intercept = float(model.intercept_[0])
    gamma = float(model._gamma)
    params = {"gamma": gamma, "coef0": float(model.coef0), "degree": int(model.degree)}

    def term_function(X, idx, _sv=sv, _k=kernel, _p=params):
        Y = _sv[idx]
        if _k == "rbf":
            return rbf_kernel(X, Y, gamma=_p["gamma"])
        if _k == "linear":
            out = linear_kernel(X, Y)
        elif _k == "poly":
            out = polynomial_kernel(X, Y, degree=_p["degree"], gamma=_p["gamma"], coef0=_p["coef0"])
        else:
            out = sigmoid_kernel(X, Y, gamma=_p["gamma"], coef0=_p["coef0"])
        return out.toarray() if sp.issparse(out) else out

    return TermDecomposition(
        weights=weights,
        intercept=intercept,
        kind="kernel",
        term_function=term_function,
        classes=classes,
        kernel=kernel,
        support_vectors=sv,
        kernel_params=params,
    )


def _linear_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, type(model).__name__)
    coef = np.asarray(model.coef_, dtype=np.float64)
    if coef.ndim != 2 or coef.shape[0] != 1:
        raise UnsupportedModelError(
            f"{type(model).__name__} has coef_ of shape {coef.shape}; expected one row (binary)."
        )
    weights = coef[0].copy()
    intercept = float(np.ravel(model.intercept_)[0]) if np.size(model.intercept_) else 0.0

    def term_function(X, idx):
        cols = X[:, idx]
        return cols.toarray() if sp.issparse(cols) else np.asarray(cols)

    return TermDecomposition(
        weights=weights,
        intercept=intercept,
        kind="linear",
        term_function=term_function,
        classes=classes,
    )


def _adaboost_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, "AdaBoostClassifier")
    algorithm = getattr(model, "algorithm", "SAMME")
    if algorithm not in ("SAMME", "deprecated"):
        raise UnsupportedModelError(
            f"AdaBoostClassifier(algorithm={algorithm!r}) is not supported; use algorithm='SAMME'."
        )
    learners = list(model.estimators_)
    raw = np.asarray(model.estimator_weights_, dtype=np.float64)
    # decision_function divides by the sum of all estimator weights (unused ones are 0).
    weights = raw[: len(learners)] / raw.sum()

    def term_function(X, idx, _learners=learners, _pos=classes[1]):
        out = np.empty((X.shape[0], len(idx)), dtype=np.float64)
        for j, i in enumerate(idx):
            out[:, j] = np.where(_learners[i].predict(X) == _pos, 1.0, -1.0)
        return out

    return TermDecomposition(
        weights=weights,
        intercept=0.0,
        kind="boosting",
        term_function=term_function,
        classes=classes,
    )


def decompose(estimator) -> TermDecomposition:
    """Write a fitted binary scikit-learn model as a sum of terms (SPEC §1).

    Parameters
    ----------
    estimator : fitted estimator
        An ``SVC`` (kernel linear, rbf, poly or sigmoid), ``LinearSVC``, ``LogisticRegression``,
        ``AdaBoostClassifier`` (SAMME), a ``Pipeline`` ending in one of them, or a
        ``FrozenEstimator`` wrapping any of these.

    Returns
    -------
    TermDecomposition
        With ``decomposition.intercept + term_values(prepare(X)) @ weights`` equal to
        ``estimator.decision_function(X)``.

    Raises
    ------
    UnsupportedModelError
        For any other model, a non-binary model, or an unsupported kernel.
    """
    transform, model = _unwrap(estimator)
    name = type(model).__name__
    if not hasattr(model, "classes_"):
        raise UnsupportedModelError(
            f"{name} is not a fitted classifier; fit it first. Supported: {SUPPORTED_MODELS}."
        )
    if name in ("SVC", "NuSVC"):
        terms = _svc_terms(model)
    elif name in ("LinearSVC", "LogisticRegression", "RidgeClassifier", "SGDClassifier"):
        terms = _linear_terms(model)
    elif name == "AdaBoostClassifier":
        terms = _adaboost_terms(model)
    else:
        raise UnsupportedModelError(f"{name} is not supported. Supported: {SUPPORTED_MODELS}.")
    if transform is not None:
        terms = TermDecomposition(
            weights=terms.weights,
            intercept=terms.intercept,
            kind=terms.kind,
            term_function=terms.term_function,
            transform=transform,
            classes=terms.classes,
            kernel=terms.kernel,
            support_vectors=terms.support_vectors,
            kernel_params=terms.kernel_params,
        )
    return terms
