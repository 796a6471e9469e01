"""The statistics every family is built from (:class:`WalkStatistics`), for any walk: a plain
walk, which starts at 0, or a sketched walk (SPEC §3b), which starts at the sketch's score."""

from __future__ import annotations

import numpy as np

from attentive.boundaries import ReferenceStats, reference_statistics
from attentive.families.base import WalkStatistics
from attentive.families.heteroscedastic import reference_sample, spread_table
from attentive.families.mass import mass_table
from attentive.families.regression import regression_statistics

__all__ = ["walk_statistics"]


def walk_statistics(
    walk,
    X_ref,
    y_ref,
    *,
    ref_mask,
    variance: str = "terms",
    leave_own_out: bool = False,
    own=None,
) -> WalkStatistics:
    """Reference statistics of ``walk`` over the reference examples ``(X_ref, y_ref)`` (raw rows),
    as :class:`attentive.AttentiveClassifier` builds them in ``fit``: per class (the lower side
    from the positives, the upper side from the negatives), pooled, the bridge variance V by the
    ``variance`` estimator over R (``ref_mask``, from :func:`attentive.walk.make_walk`: the pooled
    set when R is every example, else the positives) for the lower side and over the negatives
    for the upper, and the heteroscedastic and
    mass-regression tables from one seeded sample of reference walks. ``leave_own_out``,
    ``own``: walks of training examples without their own support vector.
    """
    from sklearn.utils import _safe_indexing

    y_ref = np.asarray(y_ref)
    is_pos = y_ref == walk.terms.classes[1]
    own = None if own is None else np.asarray(own)
    by_class = {
        name: reference_statistics(
            walk,
            _safe_indexing(X_ref, rows),
            leave_own_out=leave_own_out,
            own=None if own is None else own[rows],
        )
        for name, rows in (
            ("positive", np.flatnonzero(is_pos)),
            ("negative", np.flatnonzero(~is_pos)),
        )
    }
    pooled = ReferenceStats.pool(by_class["positive"], by_class["negative"])
    reference = pooled if np.asarray(ref_mask).all() else by_class["positive"]
    S_ref, A_ref = reference_sample(walk, X_ref, leave_own_out=leave_own_out, own=own, masses=True)
    return WalkStatistics(
        positive=by_class["positive"],
        negative=by_class["negative"],
        pooled=pooled,
        variance=reference.variance(variance),
        upper_variance=by_class["negative"].variance(variance),
        spread=spread_table(S_ref, regression_statistics(pooled)),
        mass=mass_table(S_ref, A_ref),
        starts_at_zero=walk.starts_at_zero,
    )
