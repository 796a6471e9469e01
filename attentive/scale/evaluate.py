"""Evaluate an :class:`~attentive.AttentiveClassifier` over a Dask array or DataFrame, block by block.

Every row block is evaluated by the classifier's own batch evaluator
(:meth:`AttentiveClassifier.evaluate <attentive.AttentiveClassifier.evaluate>`), so the walk order,
boundary and reference statistics are the model's and never depend on the chunking: a row gets
the same labels, stops and terms evaluated in any block as in one in-memory call. (Decision values
may differ in the last bits: the core's sums run over a whole batch.)

Dask's own wrappers trip over the things handled here (dask-ml's ``ParallelPostFit``): the output
``meta`` is built from the classifier's classes, never by calling the model on a dummy block; an
empty block gives an empty frame instead of scikit-learn's "0 samples" error; sparse blocks are
evaluated as CSR, or densified a piece at a time for a model whose pipeline refuses sparse rows
(a LIBSVM file before a centring ``StandardScaler``); an array chunked along its columns is
joined into whole rows first.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from attentive.data.reader import _preview
from attentive.errors import FeatureMismatchError, InvalidParameterError
from attentive.estimator import AttentiveClassifier
from attentive.evaluation import Evaluation, evaluation_options
from attentive.validation import expected_feature_names

__all__ = ["COLUMNS", "evaluation_frame", "parallel_post_fit", "score_dask", "scores_meta"]

# Output column -> Evaluation attribute, in output order.
COLUMNS: dict[str, str] = {
    "decision": "decision",
    "label": "labels",
    "positive": "positive",
    "n_evaluated": "n_evaluated",
    "stopped": "stopped",
    "stop_side": "stop_side",
    "work": "work",
}
_DTYPES = {
    "decision": np.float64,
    "positive": np.bool_,
    "n_evaluated": np.int64,
    "stopped": np.bool_,
    "stop_side": np.int8,
    "work": np.float64,
}


def evaluation_frame(evaluation: Evaluation, index=None) -> pd.DataFrame:
    """An :class:`~attentive.Evaluation` as a frame with the :data:`COLUMNS`, one row per example."""
    data = {}
    for column, attribute in COLUMNS.items():
        values = np.asarray(getattr(evaluation, attribute))
        data[column] = values if column == "label" else values.astype(_DTYPES[column], copy=False)
    return pd.DataFrame(data, index=index)


def scores_meta(clf: AttentiveClassifier) -> pd.DataFrame:
    """The empty frame every block's scores look like (Dask's ``meta``), from ``clf.classes_``."""
    check_is_fitted(clf)
    return _empty_scores(clf, pd.RangeIndex(0))


def _empty_scores(clf: AttentiveClassifier, index) -> pd.DataFrame:
    labels = np.asarray(clf.classes_)[:0]
    empty = Evaluation(
        decision=np.empty(0),
        positive=np.empty(0, dtype=bool),
        labels=labels,
        n_evaluated=np.empty(0, dtype=np.int64),
        stopped=np.empty(0, dtype=bool),
        stop_side=np.empty(0, dtype=np.int8),
        n_terms=clf.n_terms_,
    )
    return evaluation_frame(empty, index=index)


# A sparse block densified for a model that refuses sparse rows is scored this many values
# (float64: 256 MB) at a time.
DENSE_VALUES = 2**25


def _takes_sparse(clf: AttentiveClassifier, X) -> bool:
    """Whether the classifier's model takes sparse rows: its pipeline's transforms may not
    (a ``StandardScaler`` that centres refuses them), whatever the file they were read from."""
    try:
        clf.walk_.prepare(X[:1])
    except (ValueError, TypeError):
        return False
    return True


def _score_rows(clf: AttentiveClassifier, X, index, n_jobs: int | None) -> pd.DataFrame:
    if X.shape[0] == 0:
        return _empty_scores(clf, index)
    if sp.issparse(X) and not _takes_sparse(clf, X):
        # A row's outcome never depends on its batch: pieces of the block, densified, give what
        # the block would (anything else wrong with the rows is raised by the dense rows).
        step = max(1, DENSE_VALUES // max(X.shape[1], 1))
        return pd.concat(
            [
                _score_rows(clf, X[lo : lo + step].toarray(), index[lo : lo + step], n_jobs)
                for lo in range(0, X.shape[0], step)
            ]
        )
    with evaluation_options(n_jobs=n_jobs):
        evaluation = clf.evaluate(X)
    return evaluation_frame(evaluation, index=index)


def _as_matrix(block):
    """A block as something the batch evaluator takes: ndarray or CSR (pydata/sparse → CSR)."""
    if sp.issparse(block):
        return sp.csr_matrix(block, dtype=np.float64)
    if hasattr(block, "tocsr"):  # pydata sparse
        return sp.csr_matrix(block.tocsr(), dtype=np.float64)
    return np.asarray(block)


def _score_block(clf, block, start, n_jobs) -> pd.DataFrame:
    X = _as_matrix(block)
    rows = X.shape[0]
    index = pd.RangeIndex(start, start + rows) if start is not None else pd.RangeIndex(rows)
    return _score_rows(clf, X, index, n_jobs)


def _score_partition(frame: pd.DataFrame, clf, n_jobs) -> pd.DataFrame:
    names = expected_feature_names(clf)
    if names is not None:
        X = frame[list(names)]  # validate_data checks names and order
        if getattr(clf, "feature_names_in_", None) is None:
            # Fitted on arrays around a frozen model fitted on a frame: that model's columns,
            # in its order, as the arrays it was fitted on.
            X = X.to_numpy(dtype=np.float64)
    elif len(frame.columns) and all(isinstance(t, pd.SparseDtype) for t in frame.dtypes):
        X = frame.sparse.to_coo().tocsr()
    else:
        X = frame.to_numpy(dtype=np.float64)
    return _score_rows(clf, X, frame.index, n_jobs)


def _check_frame_columns(clf, columns: list) -> None:
    """Refuse a DataFrame without the classifier's features, before anything is computed: by
    name (the missing ones named) for a classifier fitted with names, else by count."""
    names = expected_feature_names(clf)
    if names is not None:
        present = set(columns)  # as the partitions are indexed (frame[names])
        missing = [str(n) for n in names if n not in present]
        if missing:
            shown, given = _preview(missing, 5), _preview([str(c) for c in columns], 8)
            raise FeatureMismatchError(
                f"the DataFrame lacks {len(missing)} of the classifier's {len(names)} features "
                f"({shown}); its columns: {given}. The classifier takes its features by name."
            )
    elif getattr(clf, "n_features_in_", len(columns)) != len(columns):
        raise FeatureMismatchError(
            f"the DataFrame has {len(columns)} columns, but the classifier, fitted without "
            f"feature names, expects {clf.n_features_in_} (every column, in order)."
        )


def score_dask(clf: AttentiveClassifier, X, *, n_jobs: int | None = 1) -> dd.DataFrame:
    """Evaluate ``X`` attentively with Dask, lazily: one task per row block or partition.

    Parameters
    ----------
    clf : AttentiveClassifier
        Fitted. It travels to the workers once (one task key), not once per block.
    X : dask.array.Array or dask.dataframe.DataFrame
        A 2-D array of ``clf.n_features_in_`` columns whose blocks are numpy arrays or sparse
        matrices (scipy or pydata ``sparse``; evaluated as CSR), chunked along rows (column chunks
        are joined first); or a DataFrame with the classifier's features (by name if it was
        fitted with names, else every column, in order). Empty blocks are allowed.
    n_jobs : int or None, default=1
        Threads each block's evaluation may use; Dask already runs blocks in parallel, so one
        thread per block avoids oversubscribing the workers' cores. None: the core's default.

    Returns
    -------
    dask.dataframe.DataFrame
        Columns :data:`COLUMNS` (``decision``, ``label``, ``positive``, ``n_evaluated``,
        ``stopped``, ``stop_side``, ``work``: the :class:`~attentive.Evaluation` of each row;
        ``work`` in full evaluations, a sketched rule's sketch included), one partition
        per row block, with ``meta`` :func:`scores_meta`. Index: the global row number for an
        array with known chunk sizes, the block's own row number when they are unknown, the
        input's index for a DataFrame. Nothing is computed until asked.

    Examples
    --------
    >>> scores = score_dask(clf, da.from_array(X, chunks=(100_000, -1)))  # doctest: +SKIP
    >>> scores.to_parquet("scores.parquet")  # doctest: +SKIP
    """
    if not isinstance(clf, AttentiveClassifier):
        raise InvalidParameterError(
            f"expected a fitted AttentiveClassifier, got {type(clf).__name__}."
        )
    check_is_fitted(clf)
    meta = scores_meta(clf)
    model = dask.delayed(clf, pure=True)
    if isinstance(X, dd.DataFrame):
        _check_frame_columns(clf, list(X.columns))
        return X.map_partitions(_score_partition, model, n_jobs, meta=meta, align_dataframes=False)
    if not isinstance(X, da.Array):
        raise InvalidParameterError(
            f"expected a dask array or dask DataFrame, got {type(X).__name__}; for data in "
            "memory use clf.evaluate(X)."
        )
    if X.ndim != 2:
        raise InvalidParameterError(f"expected a 2-D dask array, got {X.ndim} dimension(s).")
    if X.shape[1] != clf.n_features_in_:
        raise FeatureMismatchError(
            f"X has {X.shape[1]} features, but the classifier expects {clf.n_features_in_}."
        )
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})  # a row needs all its features: whole rows per block
    row_chunks = X.chunks[0]
    known = not any(np.isnan(c) for c in row_chunks)
    starts = np.concatenate([[0], np.cumsum(row_chunks)[:-1]]).astype(np.int64) if known else None
    parts = [
        dask.delayed(_score_block, pure=True)(
            model, block, int(starts[i]) if known else None, n_jobs
        )
        for i, block in enumerate(X.to_delayed().ravel())
    ]
    return dd.from_delayed(parts, meta=meta, verify_meta=True)


def parallel_post_fit(clf: AttentiveClassifier, **kwargs: Any):
    """``dask_ml.wrappers.ParallelPostFit(clf)`` with ``predict_meta`` set from ``clf.classes_``.

    The classifier needs no change to work inside ``ParallelPostFit`` (this only spares dask-ml
    the call on a dummy block that it otherwise makes to guess the output type). ``predict`` is
    the only method ``ParallelPostFit`` parallelises that the classifier has; for decisions,
    stops and terms evaluated use :func:`score_dask`, which also accepts empty blocks
    (``ParallelPostFit`` does not: dask-ml issue 911). Needs ``pip install attentive[dask-ml]``.
    """
    from dask_ml.wrappers import ParallelPostFit

    check_is_fitted(clf)
    kwargs.setdefault("predict_meta", np.asarray(clf.classes_)[:0])
    return ParallelPostFit(estimator=clf, **kwargs)
