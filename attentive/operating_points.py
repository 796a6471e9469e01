"""Operating points: every rule family at every scale on a set of examples, and the cheapest one
that meets a target disagreement (for choosing a threshold like an engineer, by script or in the
dashboard).

A row is one rule (family, scale z): its mean evaluated fraction, its work (a sketched rule's
sketch plus its walked terms, SPEC §3b), its disagreement with the full model and, with labels,
accuracy, precision and recall of its early decisions. The chosen row becomes a classifier with
``clf.with_rule(row["family"], z=row["z"])``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attentive.errors import InvalidParameterError

__all__ = ["cheapest_operating_point", "cheapest_row", "operating_points", "outcome_points"]


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
        ``disagreement``, ``sketch_cost`` and ``work_fraction`` (a row's cost in units of a full
        evaluation: for a sketched rule its sketch plus the walked terms at their cost,
        :attr:`attentive.Evaluation.work_fraction`; else the evaluated fraction) and, with
        ``y``, ``accuracy, precision, recall``.
    """

    names = tuple(clf.scaled_rules() if families is None else families)
    if y is not None:  # before the walks: refused labels cost nothing
        from sklearn.utils.validation import _num_samples

        _positive(clf, y, _num_samples(X))
    return pd.concat(
        [outcome_points(clf, name, clf.scale_outcomes(X, name, grid), y) for name in names],
        ignore_index=True,
    )


def outcome_points(clf, name: str, out, y=None) -> pd.DataFrame:
    """:func:`operating_points`' rows of one family ``name`` from its early decisions ``out``
    at every scale (:meth:`~attentive.AttentiveClassifier.scale_outcomes`), for a caller that
    holds them already."""
    frac = out.evaluated_fractions()
    sketch_cost, term_cost = _costs(clf, name)
    frame = pd.DataFrame(
        {
            "family": name,
            "z": out.grid,
            "nominal_delta": clf.boundary_family(name).nominal_delta(out.grid),
            "mean_evaluated_fraction": frac,
            "speedup_terms": 1.0 / np.maximum(frac, 1e-300),
            "stop_error": out.stop_errors(clf.side_),
            "disagreement": out.disagreement_rates(),
            "sketch_cost": sketch_cost,
            "work_fraction": sketch_cost + frac * term_cost,
        }
    )
    if y is not None:
        pred = out.positive
        y_pos = _positive(clf, y, pred.shape[0])
        tp = (pred & y_pos[:, None]).sum(axis=0)
        n_pred = pred.sum(axis=0)
        frame["accuracy"] = (pred == y_pos[:, None]).mean(axis=0)
        frame["precision"] = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), np.nan)
        frame["recall"] = tp / max(int(y_pos.sum()), 1)
    return frame


def _positive(clf, y, n: int) -> np.ndarray:
    """Whether each label of ``y`` is the positive class; labels must be one per example and
    among ``clf.classes_`` (a label of another kind, 0/1 for a model fitted on "no"/"yes",
    would count every example as negative)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(clf)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise InvalidParameterError(
            f"y must hold one label per example: {n} examples, got labels of shape {y.shape}"
        )
    known = np.isin(y, clf.classes_)
    if not known.all():
        unknown = np.unique(y[~known]).tolist()
        raise InvalidParameterError(
            f"y contains labels the fitted model does not know: {unknown[:5]}"
            f"{' …' if len(unknown) > 5 else ''}; its classes are {clf.classes_.tolist()}"
        )
    return y == clf.classes_[1]


def _costs(clf, name: str) -> tuple[float, float]:
    """``(a row's sketch, a walked term)`` of rule ``name`` in full-evaluation units and plain
    terms, as :class:`attentive.Evaluation` counts them (``(0, 1)`` for a plain rule)."""
    from attentive.families.sketched import is_sketched_name

    walk = getattr(clf, "sketched_walk_", None) if is_sketched_name(name) else None
    if walk is None:
        return 0.0, 1.0
    return float(walk.cost), float(walk.walked_term_cost)


def cheapest_operating_point(
    clf, X, max_disagreement: float, y=None, *, families=None, grid=None
) -> pd.Series:
    """The rule with the least work per example (``work_fraction``: the evaluated fraction, and
    for a sketched rule its sketch too) whose disagreement on ``X`` is at most
    ``max_disagreement`` (ties: the more conservative scale, then the family listed first).

    Returns the row of :func:`operating_points`; ``clf.with_rule(row.family, z=row.z)`` is the
    classifier that makes those decisions.
    """
    target = _target(max_disagreement, "max_disagreement")
    return cheapest_row(operating_points(clf, X, y, families=families, grid=grid), target)


def _target(value, name: str) -> float:
    target = float(value)
    if not 0.0 <= target <= 1.0:
        raise InvalidParameterError(f"{name} must be a rate in [0, 1], got {value!r}.")
    return target


def cheapest_row(table: pd.DataFrame, target: float, name: str = "max_disagreement") -> pd.Series:
    """The row of an operating-point table (columns ``disagreement``, ``work_fraction``, ``z``)
    with the least work at disagreement ≤ ``target`` (ties: the more conservative scale, then
    the row first in the table); ``name``: what the target is called in a refusal."""
    target = _target(target, name)
    ok = table[table["disagreement"] <= target]
    if ok.empty:  # z = +6 evaluates (nearly) everything; only a walk-order tie can get here
        raise InvalidParameterError(
            f"no rule reaches disagreement ≤ {target:g} on these examples; evaluate every term."
        )
    best = ok.sort_values(["work_fraction", "z"], ascending=[True, False], kind="stable")
    return best.iloc[0]
