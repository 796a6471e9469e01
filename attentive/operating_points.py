"""Operating points: every rule family at every scale on a set of examples, and the cheapest one
that meets a target disagreement (for choosing a threshold like an engineer, by script or in the
dashboard).

A row is one rule (family, scale z): its mean evaluated fraction, its disagreement with the full
model and, with labels, accuracy, precision and recall of its early decisions. The chosen row
becomes a classifier with ``clf.with_rule(row["family"], z=row["z"])``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attentive.errors import InvalidParameterError

__all__ = ["cheapest_operating_point", "operating_points", "outcome_points"]


def operating_points(clf, X, y=None, *, families=None, grid=None) -> pd.DataFrame:
    """One row per (family, scale) of a fitted :class:`~attentive.AttentiveClassifier` on ``X``.

    Parameters
    ----------
    clf : fitted AttentiveClassifier
    X : array-like
        Examples to measure on (a validation or test set; a choice made on test data is not a
        guarantee — :meth:`~attentive.AttentiveClassifier.calibrate` gives one).
    y : array-like, optional
        True labels, for accuracy, precision and recall.
    families : sequence of str, optional
        Family names (default every registered family).
    grid : array-like, optional
        Scales z (default :func:`attentive.grid.default_grid`).

    Returns
    -------
    pandas.DataFrame
        Columns ``family, z, nominal_delta, mean_evaluated_fraction, speedup_terms, stop_error``
        (the paper's, for the classifier's side; the disagreement for ``side="both"``),
        ``disagreement`` and, with ``y``, ``accuracy, precision, recall``.
    """

    names = tuple(clf.scaled_rules() if families is None else families)
    return pd.concat(
        [outcome_points(clf, name, clf.scale_outcomes(X, name, grid), y) for name in names],
        ignore_index=True,
    )


def outcome_points(clf, name: str, out, y=None) -> pd.DataFrame:
    """:func:`operating_points`' rows of one family ``name`` from its early decisions ``out``
    at every scale (:meth:`~attentive.AttentiveClassifier.scale_outcomes`), for a caller that
    holds them already."""
    frac = out.evaluated_fractions()
    frame = pd.DataFrame(
        {
            "family": name,
            "z": out.grid,
            "nominal_delta": clf.boundary_family(name).nominal_delta(out.grid),
            "mean_evaluated_fraction": frac,
            "speedup_terms": 1.0 / np.maximum(frac, 1e-300),
            "stop_error": out.stop_errors(clf.side_),
            "disagreement": out.disagreement_rates(),
        }
    )
    if y is not None:
        y_pos = np.asarray(y) == clf.classes_[1]
        pred = out.positive
        tp = (pred & y_pos[:, None]).sum(axis=0)
        n_pred = pred.sum(axis=0)
        frame["accuracy"] = (pred == y_pos[:, None]).mean(axis=0)
        frame["precision"] = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), np.nan)
        frame["recall"] = tp / max(int(y_pos.sum()), 1)
    return frame


def cheapest_operating_point(
    clf, X, max_disagreement: float, y=None, *, families=None, grid=None
) -> pd.Series:
    """The rule with the lowest mean evaluated fraction whose disagreement on ``X`` is at most
    ``max_disagreement`` (ties: the more conservative scale, then the family listed first).

    Returns the row of :func:`operating_points`; ``clf.with_rule(row.family, z=row.z)`` is the
    classifier that makes those decisions.
    """
    target = float(max_disagreement)
    if not 0.0 <= target <= 1.0:
        raise InvalidParameterError(
            f"max_disagreement must be a rate in [0, 1], got {max_disagreement!r}."
        )
    table = operating_points(clf, X, y, families=families, grid=grid)
    ok = table[table["disagreement"] <= target]
    if ok.empty:  # z = +6 evaluates (nearly) everything; only a walk-order tie can get here
        raise InvalidParameterError(
            f"no rule reaches disagreement ≤ {target:g} on these examples; evaluate every term."
        )
    best = ok.sort_values(["mean_evaluated_fraction", "z"], ascending=[True, False], kind="stable")
    return best.iloc[0]
