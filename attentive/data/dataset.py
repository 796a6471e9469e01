"""The :class:`Dataset` container and the checks every loader shares.

A dataset is a binary problem split into train and test parts. Labels are ``0`` / ``1`` integers with
``1`` the positive class; features are float64, dense or CSR. The reference set that the core uses
for centering and variance (SPEC §1) comes from the *training* part, never from the test part that is
being evaluated (the paper used test positives; we do not).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from attentive.errors import DataError

__all__ = ["Dataset", "binary_labels", "check_features", "data_home", "freeze"]

Features = np.ndarray | sp.csr_matrix


def data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Return the directory holding downloads and cached models.

    Parameters
    ----------
    data_home : path-like, optional
        Explicit directory. When ``None``: the ``ATTENTIVE_DATA`` environment variable, else
        ``./data`` relative to the current working directory (the app and the CLI run from the
        repository root).

    Returns
    -------
    pathlib.Path
        The directory (not created here; writers create what they need).
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("ATTENTIVE_DATA")
    if env:
        return Path(env).expanduser()
    return Path.cwd() / "data"


def freeze(X: Features) -> Features:
    """Mark an array (or the three arrays of a CSR matrix) read-only and return it."""
    if sp.issparse(X):
        for part in (X.data, X.indices, X.indptr):
            part.flags.writeable = False
    else:
        X.flags.writeable = False
    return X


def check_features(X: Any, *, where: str) -> Features:
    """Return ``X`` as float64 (dense C-ordered or CSR) after checking it is finite.

    Parameters
    ----------
    X : array-like or sparse matrix
        Features, one row per example.
    where : str
        What ``X`` is (e.g. ``"file 'a.csv'"``), used in the error message.

    Raises
    ------
    DataError
        If ``X`` is not two-dimensional, is empty, or holds NaN or infinite values (the message gives
        the first offending row and column, 1-based).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sort_indices()
        values = X.data
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        values = X
    if X.ndim != 2:
        raise DataError(f"{where}: features must be a 2-d table, got an array of shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"{where}: no data (shape {X.shape}); expected at least one row and column")
    bad = ~np.isfinite(values)
    if bad.any():
        row, col, value = _first(X, bad)
        raise DataError(
            f"{where}: feature values must be finite numbers, but row {row + 1}, column {col + 1} "
            f"is {value} ({int(bad.sum())} non-finite values in all); remove or impute them"
        )
    huge = np.abs(values) > MAX_FEATURE_VALUE
    if huge.any():
        row, col, value = _first(X, huge)
        raise DataError(
            f"{where}: row {row + 1}, column {col + 1} is {value:g} ({int(huge.sum())} "
            f"value{'s' if huge.sum() > 1 else ''} beyond ±{MAX_FEATURE_VALUE:g} in all): a "
            "kernel squares such values and a scaler's variance overflows, so every score "
            "would be NaN or infinite; rescale the column, or remove those rows"
        )
    return X


#: Feature values beyond this size are refused: their squares (a kernel's distances, a scaler's
#: variance over many rows) overflow float64, whose largest value is about 1.8e308.
MAX_FEATURE_VALUE = 1e150


def _first(X, mask) -> tuple[int, int, float]:
    """The 0-based row and column of ``X``'s first value where ``mask`` (over its values), and
    the value."""
    if sp.issparse(X):
        k = int(np.flatnonzero(mask)[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
        return row, int(X.indices[k]), float(X.data[k])
    row, col = (int(i) for i in np.argwhere(mask)[0])
    return row, col, float(X[row, col])


def binary_labels(
    labels: Sequence[Any] | np.ndarray,
    positive_class: Any = None,
    *,
    where: str,
) -> tuple[np.ndarray, tuple[str, str]]:
    """Turn raw labels into ``0`` / ``1`` with ``1`` the positive class.

    Parameters
    ----------
    labels : sequence
        Raw labels, one per example (numbers or strings).
    positive_class : object, optional
        The label meaning "positive". Compared as given and as text, so ``"5"`` selects the number
        5. Required when there are more than two labels (one-vs-rest). With exactly two labels and
        no choice, the larger one (in sorted order, as ``sklearn``'s ``classes_[1]``) is positive.
    where : str
        What the labels come from, for error messages.

    Returns
    -------
    y : ndarray of int64
        ``1`` for the positive class, else ``0``.
    class_names : tuple of str
        ``(negative, positive)``; the negative name is ``"not <positive>"`` in the one-vs-rest case.

    Raises
    ------
    DataError
        Single class, several classes without ``positive_class``, or a ``positive_class`` that is
        not among the labels; the message lists the labels found.
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        raise DataError(f"{where}: no labels found; expected one label per example")
    found = np.unique(labels)
    shown = ", ".join(label_text(v) for v in found[:20]) + (" ..." if found.size > 20 else "")
    if positive_class is None:
        if found.size == 1:
            raise DataError(
                f"{where}: every example has the label {label_text(found[0])}; a binary problem "
                "needs examples of two classes"
            )
        if found.size > 2:
            raise DataError(
                f"{where}: the labels are not binary ({found.size} labels found: {shown}); "
                "choose a positive class (positive_class=...) to make a one-vs-rest problem"
            )
        positive = found[1]
    else:
        matches = [v for v in found if v == positive_class or label_text(v) == str(positive_class)]
        if not matches:
            raise DataError(
                f"{where}: the positive class {positive_class!r} is not among the labels found "
                f"({shown})"
            )
        positive = matches[0]
        if found.size == 1:
            raise DataError(
                f"{where}: every example has the label {label_text(positive)}; a binary problem "
                "needs examples of two classes"
            )
    y = (labels == positive).astype(np.int64)
    if found.size == 2:
        negative = found[0] if found[1] == positive else found[1]
        names = (label_text(negative), label_text(positive))
    else:
        names = (f"not {label_text(positive)}", label_text(positive))
    return y, names


def label_text(value: Any) -> str:
    """A label as short text: ``5.0`` -> ``"5"``, ``b"a"`` -> ``"a"``."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True, eq=False)
class Dataset:
    """A binary classification problem split into a training and a test part.

    Parameters
    ----------
    name : str
        Registry name (``"digits-2v5"``) or the user file's name.
    description : str
        One or two human sentences: what the examples are and where they come from.
    positive_meaning : str
        What the positive class (label ``1``) means, e.g. ``"digit 5"``.
    X_train, X_test : ndarray of float64 or scipy.sparse.csr_matrix
        Features; sparse datasets (Real-sim) stay CSR end to end.
    y_train, y_test : ndarray of int64
        Labels in ``{0, 1}``; ``1`` is the positive class.
    class_names : tuple of str
        ``(negative, positive)``, e.g. ``("2", "5")``.
    params : dict
        The parameters the dataset was generated or loaded with (sizes, seeds, file name).

    Attributes
    ----------
    n_features : int
        Number of features (columns).
    fingerprint : str
        Short hex digest of the training and test data, used to key cached models.
    """

    name: str
    description: str
    positive_meaning: str
    X_train: Features
    y_train: np.ndarray
    X_test: Features
    y_test: np.ndarray
    class_names: tuple[str, str]
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for X, y, part in (
            (self.X_train, self.y_train, "train"),
            (self.X_test, self.y_test, "test"),
        ):
            if X.shape[0] != y.shape[0]:
                raise DataError(
                    f"dataset {self.name!r}: {part} part has {X.shape[0]} rows but {y.shape[0]} labels"
                )
        if self.X_train.shape[1] != self.X_test.shape[1]:
            raise DataError(
                f"dataset {self.name!r}: train has {self.X_train.shape[1]} features but test has "
                f"{self.X_test.shape[1]}"
            )

    @property
    def n_features(self) -> int:
        """Number of features (columns) of both parts."""
        return int(self.X_train.shape[1])

    @property
    def is_sparse(self) -> bool:
        """Whether the features are a scipy.sparse CSR matrix."""
        return sp.issparse(self.X_train)

    @cached_property
    def fingerprint(self) -> str:
        """Short hex digest of the data (features and labels of both parts)."""
        h = hashlib.blake2b(digest_size=8)
        for part in (self.X_train, self.y_train, self.X_test, self.y_test):
            arrays = (part.data, part.indices, part.indptr) if sp.issparse(part) else (part,)
            h.update(repr(part.shape).encode())
            for a in arrays:
                h.update(np.ascontiguousarray(a).view(np.uint8))
        return h.hexdigest()

    def reference(
        self, max_examples: int | None = None, random_state: int = 0
    ) -> tuple[Features, np.ndarray]:
        """Reference examples for centering and variance: (a sample of) the *training* part.

        Parameters
        ----------
        max_examples : int, optional
            Keep at most this many, drawn without replacement with ``random_state``.
        random_state : int
            Seed of the draw.

        Returns
        -------
        X_ref, y_ref
            Rows of ``X_train`` and their labels, in their original order.
        """
        n = self.X_train.shape[0]
        if max_examples is None or max_examples >= n:
            return self.X_train, self.y_train
        rows = np.sort(np.random.default_rng(random_state).choice(n, max_examples, replace=False))
        return self.X_train[rows], self.y_train[rows]

    def summary(self) -> str:
        """One line: name, sizes, features and the positive class."""
        kind = "sparse" if self.is_sparse else "dense"
        return (
            f"{self.name}: {self.X_train.shape[0]} train / {self.X_test.shape[0]} test, "
            f"{self.n_features} {kind} features, positive = {self.positive_meaning} "
            f"({int(self.y_train.sum())} / {int(self.y_test.sum())} positives)"
        )

    def __repr__(self) -> str:
        return f"Dataset({self.summary()})"
