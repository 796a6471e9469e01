"""A pipeline's earlier steps applied to raw rows: scikit-learn's ``transform``, or the same
arithmetic done directly where that is known to give the same values.

A ``StandardScaler`` in front of an RBF SVM is the pipeline users build most. Its ``transform``
validates the rows, copies them and then subtracts the mean and divides by the scale in the
rows' own dtype; on MNIST-sized float32 batches the validation and the copy take half of its time
(2.0 of 4.0 ms on 6,730 rows of 784 features). :func:`apply_head` does the two operations on a
plain float array directly, in the same dtypes and the same order, so its values equal
``transform``'s bit for bit (tests/test_heads.py compares them); a ``MinMaxScaler``'s
multiplication, addition and clipping likewise, and a ``PCA``'s product with its components,
less the mean's, and whitening (its ``transform`` validates the rows first: 6.0 against 4.7 ms
on 7,000 float32 MNIST rows to 50 components, one thread). Anything else (a data frame,
another dtype, a non-finite value, an empty batch, a scaler fitted on named columns or told not
to copy, any other step) goes to the head's own ``transform``, which decides, warns and raises
as it always does.

:class:`TiledRows` does the same a tile at a time, as the evaluator takes its tiles: the
transformed rows are never held whole (behind a StandardScaler, full evaluation of 6,730 MNIST
rows held a 21 MB transformed copy; a tile of 2^19 values over 269 support vectors is about
6 MB), and each tile is scaled just before its product reads it.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import PCA as _PCA
from sklearn.preprocessing import MinMaxScaler as _MinMax
from sklearn.preprocessing import StandardScaler as _Standard

from attentive.errors import NonFiniteInput

__all__ = ["TiledRows", "apply_head", "tiled_rows"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _fitted(step) -> bool:
    if isinstance(step, _PCA):
        return all(
            getattr(step, name, None) is not None
            for name in ("components_", "mean_", "explained_variance_", "n_components_")
        )
    if isinstance(step, _MinMax):
        return getattr(step, "scale_", None) is not None and getattr(step, "min_", None) is not None
    return not (step.with_mean and getattr(step, "mean_", None) is None) and not (
        step.with_std and getattr(step, "scale_", None) is None
    )


def _transform(head, X):
    """``head.transform(X)`` as the model receives it, checked as the model checks it.

    A data frame (a pipeline set to give pandas, a ``FunctionTransformer`` of a frame) becomes
    its array of values (the model converts it so; the walk takes rows by position), nullable
    columns' missing values NaN. A NaN or an infinite value raises
    :class:`~attentive.errors.NonFiniteInput`: every supported model refuses it, and a scaler or
    a function passes it on (the direct paths of :func:`apply_head` take finite rows only)."""
    out = head.transform(X)
    if not (isinstance(out, np.ndarray) or sp.issparse(out)):
        values = np.asarray(out)
        if values.dtype == object:  # (nullable columns hold pd.NA)
            to_numpy = getattr(out, "to_numpy", None)
            values = (
                to_numpy(dtype=np.float64, na_value=np.nan)
                if to_numpy is not None
                else np.asarray(out, dtype=np.float64)
            )
        out = values
    if isinstance(out, np.ndarray) and out.dtype.kind in "OUS":
        # (A ColumnTransformer passing a text value on to the model: the model's own refusal,
        # "could not convert string to float: 'n/a'", where numpy's arithmetic said "Cannot
        # cast ufunc 'subtract' input 0 from dtype('O')".)
        out = out.astype(np.float64)
    check_finite_values(out)
    return out


def check_finite_values(X) -> None:
    """Raise :class:`~attentive.errors.NonFiniteInput` when the rows ``X`` (an array or a sparse
    matrix) hold a NaN or an infinite value. One sum over the values (einsum's, vectorised);
    where it is not finite (or overflows), a look at them."""
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.size == 0 or values.dtype.kind not in "fc":
        return
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.einsum("i->", values.ravel()))
    if not math.isfinite(total) and not np.isfinite(values).all():
        raise NonFiniteInput(
            "Input X contains NaN or infinity after the pipeline's transforms (what the model "
            "receives), which the model does not accept: impute missing values in the "
            "pipeline (sklearn.impute.SimpleImputer) or drop those rows."
        )


def apply_head(head, X):
    """``head.transform(X)`` (``head``: a fitted Pipeline of the steps before the model), an
    array (:func:`_transform`)."""
    steps = _direct_steps(head, X)
    if steps is None:
        return _transform(head, X)
    src, owned = X, False  # (owned: an array made here, scaled in place)
    for scaler in steps:
        if isinstance(scaler, _PCA):
            # transform rejects NaN and infinity. Either one in a row makes its projection
            # non-finite (NaN and ±inf go through every product, and inf · 0 is NaN), so a
            # finite sum of the projections proves the rows finite; otherwise (or where the
            # projections overflow) transform decides, and warns or raises as it does.
            with np.errstate(over="ignore", invalid="ignore"):
                src, owned = _project(scaler, src), True
                if not math.isfinite(float(np.einsum("ij->", src))):
                    return _transform(head, X)
            continue
        # (transform's copy keeps the rows' memory layout, and a product after it rounds by it)
        out = src if owned else np.empty_like(src)
        if isinstance(scaler, _MinMax):
            # X *= scale_; X += min_ (in the scaler's dtype, rounded to the rows'), then clip.
            np.multiply(src, scaler.scale_, out=out)
            np.add(out, scaler.min_, out=out)
            src = out
            if scaler.clip:
                lo, hi = (np.asarray(v, dtype=out.dtype) for v in scaler.feature_range)
                np.clip(out, lo, hi, out=out)
            owned = True
            continue
        if scaler.with_mean:
            np.subtract(src, np.asarray(scaler.mean_, dtype=out.dtype), out=out)
            src = out
        if scaler.with_std:
            np.divide(src, np.asarray(scaler.scale_, dtype=out.dtype), out=out)
            src = out
        if src is not out:  # neither centring nor scaling: transform still returns a copy
            np.copyto(out, src)
            src = out
        owned = True
    return src


def _project(pca, X):
    """``PCA.transform``'s arithmetic on validated rows, in its order (scikit-learn's
    ``_BasePCA._transform``): the product with the components, less the mean's, then the
    whitening scale clipped at the dtype's epsilon."""
    Z = X @ pca.components_.T
    Z -= np.reshape(pca.mean_, (1, -1)) @ pca.components_.T
    if pca.whiten:
        scale = np.sqrt(pca.explained_variance_)
        min_scale = np.finfo(scale.dtype).eps
        scale[scale < min_scale] = min_scale
        Z /= scale
    return Z


def tiled_rows(head, X):
    """:class:`TiledRows` of ``X`` where ``head``'s transform can be done directly tile by tile,
    else None."""
    steps = _direct_steps(head, X, check_finite=False)
    # (A PCA's product is taken whole, as transform takes it: its output is narrow.)
    if steps is None or any(isinstance(step, _PCA) for step in steps):
        return None
    return TiledRows(head, X)


class TiledRows:
    """Raw rows ``X`` that give ``head.transform`` of the rows taken (a slice or an index array),
    applied to just those (:func:`apply_head`: directly, or by ``transform`` for a tile it does
    not take, such as one holding a non-finite value); ``np.asarray`` gives every row."""

    ndim = 2

    def __init__(self, head, X):
        self.head, self.raw = head, X
        self.shape, self.dtype = X.shape, X.dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        rows = self.raw[key]
        if rows.ndim != 2:
            raise IndexError("TiledRows gives rows by a slice or an index array")
        return apply_head(self.head, rows)

    def __array__(self, dtype=None, copy=None):
        out = apply_head(self.head, self.raw)
        return out if dtype is None else out.astype(dtype, copy=False)


def _direct_steps(head, X, check_finite: bool = True):
    """The scalers of ``head`` when its transform of ``X`` can be done directly, else None."""
    if not (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.dtype in _FLOATS
        and X.shape[0] >= 1
        and X.shape[1] >= 1
    ):
        return None
    steps = [step for _, step in getattr(head, "steps", ())]
    if not steps or getattr(head, "memory", None) is not None:
        return None
    width = X.shape[1]
    for step in steps:
        if (
            type(step) not in (_Standard, _MinMax, _PCA)
            or (type(step) is not _PCA and not step.copy)  # (a PCA's copy is fit's only)
            or hasattr(step, "feature_names_in_")
            or getattr(step, "n_features_in_", None) != width
            or not _fitted(step)
        ):
            return None
        if type(step) is _PCA:
            width = int(step.n_components_)
            if width < 1:  # (no projection to prove the rows finite)
                return None
    if not check_finite or type(steps[0]) is _PCA:  # (a PCA first: its projections tell)
        return steps
    # transform rejects infinite values (NaN passes through it): a finite sum proves every
    # value finite; one that is not, or that overflows, goes to transform, which decides.
    with np.errstate(over="ignore", invalid="ignore"):
        if not math.isfinite(float(np.einsum("ij->", X))):
            return None
    return steps
