"""``AttentiveClassifier``: a scikit-learn meta-estimator that stops evaluating early.

The front door of the library (over 500 lines for that reason: one class, most of it numpydoc).
The maths lives elsewhere — terms (:mod:`attentive.terms`), walks (:mod:`attentive.walk`), rule
families (:mod:`attentive.families`), calibration (:mod:`attentive.calibration`), evaluation
(:mod:`attentive.evaluation`) — and this class only wires them to scikit-learn's contract.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import math
import numbers
import re
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr, ndtri
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from attentive.boundaries import (
    VARIANCES,
    Boundary,
    ReferenceStats,
    budget_boundary,
    constant_boundary_at,
    full_boundary,
    reference_statistics,
)
from attentive.calibration import (
    AUTO,
    CalibrationWarning,
    calibrate_auto,
    calibrate_scale,
    calibration_examples_needed,
)
from attentive.errors import DataError, InvalidParameterError
from attentive.evaluation import Evaluation, evaluate
from attentive.evaluator import NonFiniteInput, rejects_non_finite
from attentive.evaluator.pilot import PILOT_ROWS, WALK_MARGIN
from attentive.families import (
    BoundaryFamily,
    WalkStatistics,
    family_names,
    make_family,
    regression_statistics,
)
from attentive.families.heteroscedastic import reference_sample, spread_table
from attentive.families.mass import mass_table
from attentive.families.sketched import (
    SKETCHED_PREFIX,
    SketchedFamily,
    base_family,
    is_sketched_name,
    sketched_names,
)
from attentive.grid import (
    GridOutcomes,
    default_grid,
    family_ranking,
    oracle_stop_positions,
    profile_point,
    reference_profile,
    walk_grid_outcomes,
)
from attentive.rules import rule_names
from attentive.sketch.walk import SKETCH_ORDERS
from attentive.terms import _unwrap, check_model_kind, decompose
from attentive.validation import (
    check_alpha,
    check_calibration_size,
    check_delta,
    check_side,
    check_stopped_score,
    check_threshold,
)
from attentive.walk import (
    CENTERINGS,
    ORDERS,
    REFERENCE_WALKS,
    make_walk,
    reference_mask,
    row_chunks,
    seeded_rng,
)

__all__ = ["AttentiveClassifier", "calibration_split"]

# Examples to evaluate are taken in these dtypes as they are (others are converted to float64).
_DTYPES = (np.float64, np.float32)
# Families whose rules walk a second running sum (the mass), at a measured cost per term.
_MASS_FAMILIES = ("mass-regression",)
# Reference examples on which family="auto" ranks the families (a seeded sample beyond this).
_PROFILE_ROWS = 2000


def _is_fitted(estimator) -> bool:
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        return False
    return True


def _passes_raw_input(estimator) -> bool:
    """Whether the model starts with transforms that take the caller's X as it is (a Pipeline)."""
    while isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    return isinstance(estimator, Pipeline) and len(estimator.steps) > 1


def _selects_columns(estimator) -> bool:
    """Whether the model's first step (inside nested pipelines) is a ColumnTransformer: it takes
    a frame's columns by name, in any order and beside others, and names the missing ones
    itself."""
    return _leading_column_transformer(estimator) is not None


def _leading_column_transformer(estimator) -> ColumnTransformer | None:
    """The model's first step (inside nested pipelines and frozen models) if it is a
    ColumnTransformer, else None."""
    while True:
        while isinstance(estimator, FrozenEstimator):
            estimator = estimator.estimator
        if not isinstance(estimator, Pipeline):
            return estimator if isinstance(estimator, ColumnTransformer) else None
        estimator = estimator.steps[0][1]


def _check_frozen_names(clf, model) -> None:
    """The reference rows' columns against those a frozen ``model`` was fitted on, by name.

    The model reads columns by position: a frame of its columns in another order would be read
    as other features (wrong scores, no error), so it is refused, as the model's own ``predict``
    refuses it. Rows without names (an array) are taken as the model's columns, in its order,
    with scikit-learn's warning, and the names are kept (``_model_names``) so that a frame given
    to ``predict`` later is checked against them (:func:`_check_model_names`); arrays stay
    unchecked, as they were given at fit."""
    expected = getattr(model, "feature_names_in_", None)
    if expected is None:
        return
    got = getattr(clf, "feature_names_in_", None)
    name = type(getattr(model, "estimator", model)).__name__
    if got is None:
        warnings.warn(
            f"X does not have valid feature names, but the frozen {name} was fitted with "
            "feature names: X's columns are taken as the model's, in its order.",
            UserWarning,
            stacklevel=3,
        )
        clf._model_names = [str(c) for c in expected]
        return
    what = _names_differ(list(got), list(expected))
    if what is not None:
        raise InvalidParameterError(
            f"X's columns are not those the frozen {name} was fitted on ({what}); it reads "
            "columns by position, so they would be read as other features. Pass "
            "X[model.feature_names_in_] (the model's columns in its order)."
        )


def _check_model_names(clf, X) -> None:
    """A frame given to a classifier fitted on arrays for a frozen model fitted on a frame: its
    columns by name against the model's (:func:`_check_frozen_names`), as the model's own
    ``predict`` checks them."""
    expected = getattr(clf, "_model_names", None)
    columns = getattr(X, "columns", None)
    if expected is None or columns is None:
        return
    if not all(isinstance(c, str) for c in columns):
        warnings.warn(  # (as the model's own predict warns)
            "X does not have valid feature names, but the model was fitted with feature names: "
            "its columns are read by position.",
            UserWarning,
            stacklevel=4,
        )
        return
    what = _names_differ(list(columns), expected)
    if what is not None:
        raise ValueError(  # (a ValueError, as scikit-learn's own check raises)
            f"X's columns are not those the model was fitted on ({what}); it reads columns by "
            "position, so they would be read as other features. Pass X[names] with the "
            "model's columns in its order (estimator_.feature_names_in_)."
        )


def _names_differ(got: list, expected: list) -> str | None:
    """How the column names ``got`` differ from ``expected`` (None: the same, in order)."""
    if got == expected:
        return None
    have, want = set(got), set(expected)
    missing = [c for c in expected if c not in have]
    unseen = [c for c in got if c not in want]
    if missing or unseen:
        return "; ".join(
            part
            for part in (
                f"missing {_some(missing)}" if missing else "",
                f"not the model's: {_some(unseen)}" if unseen else "",
            )
            if part
        )
    i = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
    if i is None:  # (a repeated name)
        return f"{len(got)} columns where the model has {len(expected)}"
    return (
        f"the same columns in another order: column {i} is {got[i]!r}, the model's {expected[i]!r}"
    )


def _some(names: list, shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(repr(n) for n in names[:shown]) + more


def _calibration_examples(calibration_size, delta, alpha, n_examples: int):
    """``calibration_size`` resolved for ``n_examples`` fit examples (``"auto"``: see the class
    docstring)."""
    if calibration_size != "auto":
        return calibration_size
    wanted = calibration_examples_needed(delta, alpha, disagreements=1)
    return int(min(max(wanted, math.ceil(0.3 * n_examples)), math.floor(0.4 * n_examples)))


def _spread_rows(X, k: int = PILOT_ROWS):
    """Up to ``k`` rows of ``X``, spread evenly (data sorted by class would mislead a sample of
    the first rows)."""
    n = _num_samples(X)
    pick = np.unique(np.linspace(0, n - 1, min(k, n)).astype(np.int64))
    return _safe_indexing(_indexable(X), pick)


def _indexable(X):
    """``X`` as rows can be taken from it: an array-like a pipeline takes as it is that has only
    ``__array__`` and no indexing is read as an array; anything indexable (arrays, sparse
    matrices, pandas, pyarrow or polars tables, lists) is kept as it is."""
    if hasattr(X, "__getitem__") or not hasattr(X, "__array__"):
        return X
    return np.asarray(X)


def calibration_split(
    X, y, *, delta=0.05, alpha=0.05, calibration_size="auto", random_state=None
) -> tuple:
    """``(X_fit, X_cal, y_fit, y_cal)``: the stratified hold-out that
    ``AttentiveClassifier(boundary="calibrated", ...).fit(X, y)`` makes with the same ``delta``,
    ``alpha``, ``calibration_size`` and ``random_state`` (see the class's ``calibration_size``:
    ``"auto"`` holds out 30 %, raised up to 40 % when the scan needs that many examples to
    tolerate one disagreement at (δ, α)). The model, centering and reference statistics come from
    the fit part; :meth:`AttentiveClassifier.calibrate` takes the other.
    """
    check_calibration_size(calibration_size)
    n = _num_samples(X)
    classes, counts = np.unique(np.asarray(y), return_counts=True)
    if classes.size != 2 or counts.min() < 2:
        pairs = zip(classes.tolist(), counts.tolist(), strict=True)
        got = ", ".join(f"{k} of class {c!r}" for c, k in pairs)
        raise InvalidParameterError(
            "boundary='calibrated' holds out part of the fit examples to calibrate, with both "
            "classes on each side: it needs at least two examples of each of two classes; got "
            f"{n} sample{'' if n == 1 else 's'} ({got or 'none'})."
        )
    size = _calibration_examples(calibration_size, delta, alpha, n)
    if calibration_size != "auto" and isinstance(size, numbers.Integral) and not 2 <= size <= n - 2:
        raise InvalidParameterError(
            f"calibration_size={calibration_size!r} examples cannot be held out of {n} with both "
            f"classes in each part; hold out between 2 and {n - 2} examples (an int), a "
            "fraction in (0, 1), or 'auto'."
        )
    seed = _split_seed(random_state)
    try:
        return tuple(train_test_split(X, y, test_size=size, stratify=y, random_state=seed))
    except ValueError as exc:
        raise InvalidParameterError(
            f"cannot hold out calibration_size={calibration_size!r} of {n} "
            f"examples with both classes on each side: {exc}"
        ) from None


def _canonical(X):
    """``X`` as it is, or, for a sparse matrix with repeated entries (or unsorted indices), a
    copy with them summed: the walk's sources read a row's stored values as its entries (a row
    norm is the sum of their squares), and so does libsvm; scipy's own products sum them. (Other
    sparse formats are converted, or refused, by what takes them.)"""
    if sp.issparse(X) and X.format in ("csr", "csc", "coo") and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _split_seed(random_state):
    """What ``train_test_split`` takes for a ``random_state`` the walk takes: an int it cannot
    (≥ 2**32) or a numpy Generator gives a seed drawn from it; a bad value is named as such
    (train_test_split's own message read as a failure to split the data)."""
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, numbers.Integral) and 0 <= random_state < 2**32:
        return int(random_state)
    return int(seeded_rng(random_state).integers(2**32))


def _fitted_before(clf) -> bool:
    """Whether ``clf``'s model ends in one fitted before ``fit`` (a FrozenEstimator, at the top
    or as a pipeline's last step): its ``support_`` then indexes other rows than fit's."""
    estimator = clf.estimator
    while True:
        if isinstance(estimator, FrozenEstimator):
            return True
        steps = getattr(estimator, "steps", None)
        if not steps:
            return False
        estimator = steps[-1][1]


# Sparse rows up to this many features are digested dense (32 rows: 8 MB), as they always were.
_DENSE_DIGEST_WIDTH = 1 << 15


def _takes_weights(estimator) -> bool:
    """Whether the model's fit is given the sample weights: always, unless metadata routing is
    on and the model declined them (``set_fit_request(sample_weight=False)``, as scikit-learn's
    meta-estimators honour it; a pipeline routes them to its steps itself)."""
    from sklearn import get_config

    if not get_config().get("enable_metadata_routing", False):
        return True
    if isinstance(estimator, Pipeline):
        # A step that asks for them gets them; where every step declines them, none is given
        # (the pipeline would refuse them as routed to no step); a step that said nothing
        # gets them, and the pipeline asks for its request, as scikit-learn does.
        router = estimator.get_metadata_routing()
        if router.consumes("fit", ["sample_weight"]):
            return True
        try:
            router.validate_metadata(method="fit", params={"sample_weight": np.ones(1)})
        except TypeError:
            return False
        return True
    routing = getattr(estimator, "get_metadata_routing", None)
    requests = routing().fit.requests if routing is not None else {}
    return requests.get("sample_weight") is not False


def _weight_name(estimator) -> str:
    """The ``fit`` parameter that takes the model's sample weights: ``sample_weight``, or for a
    pipeline its last step's (``svc__sample_weight``, through nested pipelines); with metadata
    routing on, ``sample_weight``, which the pipeline routes to the steps that request it."""
    from sklearn import get_config

    if get_config().get("enable_metadata_routing", False):
        return "sample_weight"  # a pipeline routes it to the steps that request it
    names = []
    while isinstance(estimator, Pipeline):
        name, estimator = estimator.steps[-1]
        names.append(name)
    return "__".join([*names, "sample_weight"])


@contextlib.contextmanager
def _text_named(X, estimator=None):
    """scikit-learn's bare "could not convert string to float: 'blue'" for a frame ``X``, named
    by the value's column and row, with what takes numbers only (``estimator``'s first step,
    or the model) and what to do."""
    try:
        yield
    except ValueError as exc:
        found = re.search(r"could not convert string to float: (.*)$", str(exc))
        where = _text_cell(X, found.group(1)) if found else None
        if where is None:
            raise
        taker, encodes = _first_step(estimator)
        advice = (
            "make it a number, or encode its column in the pipeline's ColumnTransformer"
            if encodes
            else "drop or encode the text columns first (or fit a pipeline whose "
            "ColumnTransformer encodes them, with a OneHotEncoder say)"
        )
        raise DataError(f"{where}; {taker} takes numbers only: {advice}") from None


def _validated_numbers(estimator, X, *args, **kwargs):
    """``validate_data`` for rows the model takes as numbers, a frame's text named
    (:func:`_text_named`)."""
    with _text_named(X):
        return validate_data(estimator, X, *args, **kwargs)


def _first_step(estimator) -> tuple[str, bool]:
    """What takes the rows first, for :func:`_text_named`, and whether that is a
    ColumnTransformer (which may encode text): a pipeline's first step that is not
    ``"passthrough"`` — "the pipeline" where it may take anything (a ColumnTransformer, a
    FunctionTransformer) — or the model."""
    if estimator is None or not _passes_raw_input(estimator):
        return "the model", False
    while isinstance(estimator, FrozenEstimator | Pipeline):
        if isinstance(estimator, FrozenEstimator):
            estimator = estimator.estimator
        else:
            steps = [step for _, step in estimator.steps if step not in (None, "passthrough")]
            estimator = steps[0] if steps else None
    if isinstance(estimator, ColumnTransformer | FunctionTransformer):
        return "the pipeline", isinstance(estimator, ColumnTransformer)
    if estimator is None:
        return "the model", False
    return f"the pipeline's first step ({type(estimator).__name__})", False


def _text_cell(X, quoted: str | None = None) -> str | None:
    """Where a frame holds a value that is not a number, as ``column 'pen', row 0: 'blue' is
    not a number``: the value scikit-learn quoted (``quoted``, as ``repr`` writes it) where it
    is found, else the first text that ``float`` refuses; None if ``X`` is not a frame or has
    none."""
    if not hasattr(X, "columns") or not hasattr(X, "dtypes"):
        return None
    import pandas as pd

    found = None
    for name, dtype in zip(X.columns, X.dtypes, strict=True):
        if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
            continue
        for row, value in enumerate(X[name].to_numpy()):
            if quoted is not None and repr(value) == quoted:
                return _cell_words(X, name, row, value)
            if found is None and isinstance(value, str) and not _reads_as_float(value):
                found = (name, row, value)
    return None if found is None else _cell_words(X, *found)


def _reads_as_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _cell_words(X, name, row: int, value) -> str:
    return f"column {name!r}, row {X.index[row]!r}: {value!r} is not a number"


def _check_2d(X) -> None:
    """scikit-learn's refusal of one row or column of numbers given as a 1-D array, for rows a
    pipeline's first step takes as they are (whose width check would say "no features"
    instead). A 1-D sequence of anything else — documents for a text vectoriser, dicts for a
    ``DictVectorizer`` — is the pipeline's to take."""
    if isinstance(X, (list, tuple)):
        one_row = len(X) > 0 and all(
            isinstance(v, numbers.Number) and not isinstance(v, bool) for v in X[:8]
        )
    else:
        dtype = getattr(X, "dtype", None)
        one_row = getattr(X, "ndim", 2) == 1 and getattr(dtype, "kind", "O") in "biuf"
    if one_row:
        raise InvalidParameterError(
            "Expected 2D array, got 1D array instead. Reshape your data either using "
            "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if "
            "it contains a single sample."
        )


#: The fewest calibration examples of the full model's rarer decision that the calibrated rule's
#: share of them is judged on (:meth:`AttentiveClassifier._rare_decision_note`).
RARE_MIN = 10


def _check_not_a_row(X, names) -> None:
    """A row of a frame taken as a Series (``df.iloc[0]``), indexed by the feature names fit saw:
    said so, where the pipeline's width check would say "X does not contain any features" (a
    Series of anything else, documents for a text vectoriser, is the pipeline's to take)."""
    index = getattr(X, "index", None)
    if (
        names is not None
        and getattr(X, "ndim", 2) == 1
        and index is not None
        and len(index) == len(names)
        and {str(a) for a in index} == {str(b) for b in names}  # (in any order)
    ):
        raise InvalidParameterError(
            "Expected a 2-dimensional container but got one row as a pandas Series (indexed by "
            "the feature names). Pass a DataFrame of that row instead: X.to_frame().T, or "
            "df.iloc[[i]] rather than df.iloc[i]."
        )


def _check_not_cube(X, n_features) -> None:
    """Numbers in more than two dimensions whose second axis is not the ``n_features`` the
    classifier was fitted with: said so, where the width check would say "X has 5 features"
    of a (2, 5, 30) array. A pipeline whose first step takes such arrays (one that flattens
    images, fitted on them) was fitted on their second axis, and gets them as they are."""
    ndim = getattr(X, "ndim", 2)
    if not (isinstance(ndim, int) and ndim > 2) or n_features is None:
        return
    if getattr(getattr(X, "dtype", None), "kind", "O") not in "biuf" or X.shape[1] == n_features:
        return
    raise InvalidParameterError(
        f"Found array with dim {ndim}, while dim <= 2 is required: expected a 2-D array of "
        f"examples by {n_features} features, got shape {tuple(X.shape)}. Reshape it, e.g. "
        "X.reshape(len(X), -1)."
    )


#: The scales a δ can name: Φ(−z) is a double strictly between 0 and 1, and z = −Φ⁻¹(δ) gives z
#: back (``with_rule(z=...)`` sets ``delta`` to it, and a clone or refit reads z from it) — to
#: rounding above 0, to 1e-8 at z = −6 and 0.01 at −8, where δ near 1 keeps fewer digits.
Z_RANGE = (-8.0, 37.0)


def _check_z(z) -> float:
    """A rule's scale: a real number in :data:`Z_RANGE` (any sign: a negative z stops sooner than
    θ_S; 6, the grid's end, is far more conservative than any useful rule)."""
    number = isinstance(z, numbers.Real) and not isinstance(z, (bool, np.bool_))
    value = float(z) if number else float("nan")
    lo, hi = Z_RANGE
    if not lo <= value <= hi:
        raise InvalidParameterError(
            f"z must be a number from {lo:g} to {hi:g} (the rule's scale: 6 is far more "
            f"conservative than any useful rule, negative values stop sooner), got {z!r}."
        )
    return value


def _scaled_names() -> tuple[str, ...]:
    """Every rule with a scale z: the families and their sketched rules."""
    return (*family_names(), *sketched_names())


def boundaries() -> tuple[str, ...]:
    """Every value ``AttentiveClassifier(boundary=...)`` accepts (:func:`attentive.rules.rule_names`)."""
    return rule_names()


class AttentiveClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Evaluate a binary linear predictor one term at a time and stop when the answer is obvious.

    Implements the paper's attentive prediction (SPEC §1–§2): the model's score
    ``f(x) = c + S_n(x)`` is accumulated over a permutation of its terms (support vectors,
    features or weak learners) and evaluation stops at the first ``t < n`` where the partial
    score ``S_t`` crosses the boundary.

    Parameters
    ----------
    estimator : estimator
        A binary model of :data:`attentive.terms.SUPPORTED` (``SVC``, ``NuSVC``, ``LinearSVC``,
        ``LogisticRegression``, ``RidgeClassifier``, ``RidgeClassifierCV``, ``SGDClassifier``,
        ``AdaBoostClassifier``) or
        a ``Pipeline`` ending in one. Cloned and fitted on ``(X, y)`` in :meth:`fit`; to use a
        model fitted elsewhere, wrap it in ``sklearn.frozen.FrozenEstimator``.
    boundary : str, default="constant"
        ``constant``: the paper's Constant-STST threshold; ``curved``: Gaussian curtailment with
        ``M_t``, ``D_t`` estimated on the reference set; ``regression``, ``finite-population``
        (or any registered family, :mod:`attentive.families`): that family at
        ``z = Φ⁻¹(1 − delta)``; ``budget``: evaluate exactly ``budget`` terms (Algorithm 2);
        ``full``: never stop; ``calibrated``: the family ``family`` whose scale is chosen on a
        held-out part of the ``fit`` data (``calibration_size``) so that the disagreement with
        the full model is at most ``delta`` with probability ≥ ``1 − alpha`` (SPEC §3, see
        :meth:`calibrate`).
    delta : float in (0, 1), default=0.05
        Required stop-error rate; for ``boundary="calibrated"`` (and :meth:`calibrate`) the
        disagreement rate to guarantee. For the families it is nominal: each boundary is built
        from a model of the walk (the Brownian bridge of SPEC §2 for ``constant``), and where
        the walk is far from it the measured rate can exceed δ (on a synthetic problem, 8 % at
        δ = 5 % for a linear-kernel SVC's Constant-STST boundary). Only ``"calibrated"``
        guarantees it.
    threshold : float, default=0.0
        Prediction threshold θ on the ``decision_function`` scale: positive iff ``f(x) ≥ θ``.
    side : {"lower", "upper", "both"}, default="lower"
        ``lower`` stops walks falling below the boundary and predicts negative (the paper),
        ``upper`` the mirror, ``both`` either way. The best calibrated rule is
        ``boundary="calibrated", side="both"``.
    centering : {"positive", "all", "none"}, default="positive"
        Which reference examples the per-term means ``μ_i`` (and the constant boundary's lower
        side's variance) come from.
    variance : {"terms", "independent"}, default="terms"
        Bridge variance estimator for the constant boundary (SPEC §2), for each side over its
        own reference examples.
    order : {"random", "given", "weight"}, default="random"
        Order in which terms are evaluated. The families' boundaries model a walk in random order
        (a partial sum of terms drawn without replacement, SPEC §2): in another order (the
        model's own, ``"given"``, or by decreasing ``|w_i|``, ``"weight"``) the walk is not that
        bridge, and the measured stop-error can be far above δ (11–21 % at δ = 5 % in a user's
        trial on small problems, 0–5 % in random order). ``boundary="calibrated"`` measures it
        on held-out data whatever the order, and keeps its guarantee.
    reference_walks : {"auto", "leave-one-out", "in-sample"}, default="auto"
        How the reference examples (the ``fit`` data) are walked for the statistics every
        boundary is built from. A training example that became a support vector carries its own
        term ``w_i K(x_i, x_i)``, which no new example has; ``"leave-one-out"`` walks it without
        that term (its score becomes the leave-one-out estimate ``f(x_i) − w_i K(x_i, x_i)``), so
        the statistics describe new data; ``"in-sample"`` walks it as it is (SPEC §2 read
        literally). ``"auto"``: leave-one-out for ``boundary="calibrated"``, whose guarantee
        comes from calibration and whose family only needs the right shape; in-sample for the
        other boundaries (fitted without calibration; pass ``"leave-one-out"`` to fit with it and
        :meth:`calibrate` later). A model fitted here knows its support vectors' rows
        (``support_``); a frozen model's are found by equal values. Only kernel models have such
        terms.
    budget : int or float, default=None
        For ``boundary="budget"``: number of terms (int ≥ 1) or fraction of terms (float in
        (0, 1]); ``None`` means half of the terms.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the random order and, for ``boundary="calibrated"``, the calibration split (an
        int of 2**32 or more, or a Generator, gives the split a seed drawn from it).
    alpha : float in (0, 1), default=0.05
        For ``boundary="calibrated"``: allowed probability that the disagreement guarantee fails.
    calibration_size : "auto", float in (0, 1) or int, default="auto"
        For ``boundary="calibrated"``: the part of the ``fit`` data held out (stratified) for
        calibration; the model, centering and reference statistics use the rest. ``"auto"``:
        30 % of the examples, raised up to 40 % if that is what it takes for the scan to
        tolerate one disagreement at (δ, α) (see :func:`calibration_examples_needed`): with
        fewer, a single disagreement ends the scan and the chosen rule is needlessly cautious.
    family : str, default="auto"
        For ``boundary="calibrated"``: the rule family to calibrate, or ``"auto"``: the family
        cheapest on the reference set (``reference_profile_``) at the scale a scan of the
        calibration set's size would choose at the reference disagreement rates
        (:func:`attentive.grid.profile_point`), calibrated at the full ``alpha`` — the
        calibration set's rows play no part in the choice (only their count), so the guarantee
        holds for it (see :func:`attentive.calibration.calibrate_auto`).
    stopped_score : {"estimate", "boundary"}, default="estimate"
        What ``decision_function`` returns for a stopped example (SPEC §2): the rule's own
        estimate of ``f(x)`` at the stop, or the paper's Algorithm 1 value ``c + τ_t``; either is
        moved to the predicted side of the threshold if it is not there, so that
        ``predict(X) == classes_[(decision_function(X) >= threshold_).astype(int)]`` always.
    early_stopping : "auto" or bool, default="auto"
        Whether :meth:`predict`, :meth:`decision_function` and :meth:`evaluate` stop walks at
        the boundary. ``True``: always walk the rule. ``"auto"``: walk the rule unless that
        would cost more time than evaluating every term — decided per rule from a pilot of
        rows kept in ``fit`` (``pilot_rows_``: where walks are expected to stop) and
        the cost of a term and a row for the kind of rows passed
        (:mod:`attentive.evaluator.pilot`), so a row's outcome never depends on the other
        rows of its call, and never for a linear model over a sparse matrix,
        whose full evaluation is one sparse product no walk beats (docs/speed.md). Where every
        term is evaluated, each example gets the full model's decision (``n_evaluated ==
        n_terms_``, ``Evaluation.path == "full"``), which is what the rule approximates; what the
        rule would have done is still what :meth:`scale_outcomes`, calibration and
        ``early_stopping=True`` show. A sketched rule has a third way, taken where the pilot
        prices it cheaper than both: the examples the rule stops at its first checks (found
        by the sketch's one pass over the rows; as many checks as the pilot prices cheapest)
        stop there and every other example gets the
        full model's decision (``Evaluation.path == "triage"``), so the examples it decides
        differently from the full model are among those the rule does, and the guarantee of
        ``boundary="calibrated"`` holds for it too. ``False``: never stop — every term of every example,
        whatever the rule (a budget too). Only how examples are evaluated changes: fitting, the
        boundary and calibration are the same for every value. A classifier saved before this
        parameter existed loads with ``"auto"``.
    precision : {"auto", "double"}, default="auto"
        How RBF models over many dense features compute their terms. ``"auto"``: float32
        products with a certified bound on each term's error — stops, sides and labels are
        those of double precision (labels equal the model's own), decision values within the
        bound, about 1e-6 of ``Σ|w h|`` (a sketched rule's stopped walks over rows off the pixel
        grid: within its features' bound too, up to ~1e-3; docs/speed.md, "Precision").
        ``"double"``: double precision throughout, decision values to about 1e-12. Other models
        are evaluated in double precision (or exact float32 products of data on an integer grid)
        either way.
    sketch : {"auto", "none"} or (k, m), default="auto"
        A cheap sketch of the score first, then a walk over what the sketch got wrong (SPEC §3b;
        RBF models on dense rows). ``"auto"``: where a rule can use one — ``boundary=
        "calibrated"`` with ``family="auto"``, or a ``sketched-<family>`` rule — :meth:`fit`
        fits a Nyström sketch of a few sizes (k principal directions, m landmarks:
        :data:`attentive.sketch.DEFAULT_SIZES`, :data:`attentive.sketch.AXIS_SIZES` where
        the directions are coordinates, and the smaller :data:`attentive.sketch.COUNT_SIZES`,
        weighed by the count, not the measured costs) on the reference data and keeps the one whose
        total cost (the sketch, plus the terms walked on the reference profile where the scan
        of the held-out part would stop, or at disagreement ≤ ``delta`` without one, at the
        evaluator's measured costs, the least work by the count kept instead where the
        evaluator's pilot predicts its walk no slower — or, where the evaluator would
        evaluate every term anyway, at the count of multiply-adds: ``sketch_costs_``) is lowest,
        or none where no sketch pays (``sketch_choice_``); ``family="auto"`` then chooses among
        the plain and the sketched families on the reference set, the calibration set taking no
        part (the guarantee is unchanged). ``"none"``: never. A pair ``(k, m)``: fit that sketch whatever
        the rule, and keep it whether it pays or not (the sketched rules are offered;
        ``family="auto"`` still ranks them by their cost).
    sketch_order : {"residual", "walk"}, default="residual"
        The order in which a sketched walk adds its residual terms. ``"residual"``: fixed in
        :meth:`fit` on the reference data, each next term the one that most lowers the variance
        of what remains of the walk (:func:`attentive.sketch.residual_order`; the few support
        vectors the sketch gets most wrong come first, and the sketched rules stop far earlier
        than in a random order). ``"walk"``: the plain walk's order (``order``), as SPEC §3b
        writes it. Either way ``S^ρ_n = S_n`` and calibration's guarantee holds (the order is
        fixed before calibration, on data calibration does not use).

    Attributes
    ----------
    estimator_ : estimator
        The fitted model whose terms are evaluated.
    classes_ : ndarray of shape (2,)
    terms_ : TermDecomposition
    walk_ : Walk
        Centering and order.
    reference_stats_ : ReferenceStats
        Statistics over the reference set R (V for the constant boundary).
    class_stats_ : dict
        ``{"positive": ReferenceStats, "negative": ReferenceStats}`` per reference class; the
        curved boundary takes ``M_t``, ``D_t`` of positives for its lower side, negatives for its
        upper side.
    boundary_ : Boundary
    side_ : str
        The side in use.
    walk_statistics_ : WalkStatistics
        What the rule families are built from (per-class and pooled reference statistics, V).
    calibration_ : CalibrationReport or None
        The calibration table and guarantee after :meth:`calibrate` or with
        ``boundary="calibrated"``; None otherwise.
    offset_ : float
        ``c``, with ``f(x) = c + S_n(x)``.
    threshold_ : float
        θ in use: the ``threshold`` of the last :meth:`fit` (or :meth:`with_rule`). Like
        ``delta``, ``boundary`` and ``side``, a ``threshold`` set with ``set_params`` takes
        effect at the next ``fit``; :meth:`with_rule` gives another without refitting.
    theta_s_ : float
        ``θ_S = θ − c`` (θ: ``threshold_``).
    variance_ : float
        The bridge variance V of the constant boundary's lower side (over R: the positives, or
        every reference example with ``centering="all"``).
    upper_variance_ : float
        The bridge variance V of its upper side, over the negatives (SPEC §2: each side's
        statistics come from the walks it must not stop wrongly).
    reference_walks_ : str
        ``"leave-one-out"`` or ``"in-sample"``: how the reference walks were taken.
    n_own_terms_ : int
        With leave-one-out walks, how many reference examples had their own support vector left
        out (0 otherwise, or for a frozen model whose training rows are not in the reference set).
    n_terms_ : int
    n_features_in_ : int
    pilot_rows_ : ndarray or sparse matrix
        Up to 128 rows (of the calibration set where ``fit`` holds one out, else of the
        reference set), prepared for the walk: where ``early_stopping="auto"`` expects walks to
        stop, the same for every call (:mod:`attentive.evaluator.pilot`). Saved with the
        classifier; set to None before saving where training rows must not leave with the file
        (the first call of at least 256 rows then makes the pilot, as for a classifier without
        them).
    sketch_choice_ : SketchChoice or None
        Where a sketch was considered (the ``sketch`` parameter): the cost of no sketch and of
        each size on the reference profile (:func:`attentive.sketch.choose_sketch`; its
        ``best`` leaves out the smaller sizes weighed by the count only), and its ``kept``
        option (the one ``sketched_walk_`` walks, or no sketch); None otherwise.
    sketch_costs_ : {"measured", "count"} or None
        What the kept sketch (and the sketched rules in ``family="auto"``'s ranking) was priced
        at: the evaluator's measured costs, where the fastest option's rule would be walked
        (the option kept is that one, or the least work by the count where the evaluator's
        pilot predicts its walk no slower);
        SPEC §3b's count of multiply-adds, where the evaluator would evaluate that rule in full
        anyway (its pilot on the reference rows), so that every option takes a full
        evaluation's time and the least work wins. None without a sketch choice.
    sketched_walk_ : SketchedWalk or None
        The walk after the sketch kept (what the ``sketched-<family>`` rules walk); None
        without one.
    sketched_statistics_ : WalkStatistics or None
        What the sketched rules are built from: the reference statistics of ``sketched_walk_``.
    """

    def __init__(
        self,
        estimator,
        *,
        boundary="constant",
        delta=0.05,
        threshold=0.0,
        side="lower",
        centering="positive",
        variance="terms",
        order="random",
        reference_walks="auto",
        budget=None,
        random_state=None,
        alpha=0.05,
        calibration_size="auto",
        family="auto",
        stopped_score="estimate",
        early_stopping="auto",
        precision="auto",
        sketch="auto",
        sketch_order="residual",
    ):
        self.estimator = estimator
        self.boundary = boundary
        self.delta = delta
        self.threshold = threshold
        self.side = side
        self.centering = centering
        self.variance = variance
        self.order = order
        self.reference_walks = reference_walks
        self.budget = budget
        self.random_state = random_state
        self.alpha = alpha
        self.calibration_size = calibration_size
        self.family = family
        self.stopped_score = stopped_score
        self.early_stopping = early_stopping
        self.precision = precision
        self.sketch = sketch
        self.sketch_order = sketch_order

    # -- parameter checks -------------------------------------------------------------------
    def _check_params(self):
        if self.boundary not in boundaries():
            raise InvalidParameterError(
                f"boundary must be one of {boundaries()}, got {self.boundary!r}."
            )
        if self.family != AUTO and self.family not in _scaled_names():
            raise InvalidParameterError(
                f"family must be 'auto' or one of {_scaled_names()}, got {self.family!r}."
            )
        self._sketch_size()
        check_stopped_score(self.stopped_score)
        self._early_stopping()
        self._precision()
        check_side(self.side)
        if self.centering not in CENTERINGS:
            raise InvalidParameterError(
                f"centering must be one of {CENTERINGS}, got {self.centering!r}."
            )
        if self.variance not in VARIANCES:
            raise InvalidParameterError(
                f"variance must be one of {VARIANCES}, got {self.variance!r}."
            )
        if self.order not in ORDERS:
            raise InvalidParameterError(f"order must be one of {ORDERS}, got {self.order!r}.")
        if self.sketch_order not in SKETCH_ORDERS:
            raise InvalidParameterError(
                f"sketch_order must be one of {SKETCH_ORDERS}, got {self.sketch_order!r}."
            )
        if self.reference_walks not in REFERENCE_WALKS:
            raise InvalidParameterError(
                f"reference_walks must be one of {REFERENCE_WALKS}, got {self.reference_walks!r}."
            )
        check_delta(self.delta)
        check_alpha(self.alpha)  # (checked whatever the rule, as scikit-learn checks parameters)
        check_threshold(self.threshold)
        if self.boundary == "calibrated":
            check_calibration_size(self.calibration_size)

    def __setstate__(self, state):
        # A classifier saved (pickle or skops) before a parameter existed gets its default.
        if isinstance(state, dict):
            # Sketched walks were walked in the plain walk's order before sketch_order existed.
            state = {
                "early_stopping": "auto",
                "precision": "auto",
                "sketch": "auto",
                "sketch_order": "walk",
                **state,
            }
        if isinstance(state, dict) and "theta_s_" in state and "threshold_" not in state:
            # Saved before threshold_ existed: the threshold it was fitted with, θ_S + c (the
            # parameter may have been set after that fit).
            fitted = float(state["threshold"])
            if fitted - state.get("offset_", 0.0) != state["theta_s_"]:
                fitted = float(state["theta_s_"] + state.get("offset_", 0.0))
            state = {**state, "threshold_": fitted}
        if isinstance(state, dict) and "variance_" in state and "upper_variance_" not in state:
            # Saved before the upper side had its own V: both sides took variance_.
            state = {**state, "upper_variance_": state["variance_"]}
        super().__setstate__(state)

    def _sketch_size(self) -> tuple[int, int] | None:
        """The ``sketch`` parameter's (k, m), None for "auto" or "none" (checked)."""
        if isinstance(self.sketch, str) and self.sketch in ("auto", "none"):
            return None
        size = self.sketch
        if (
            isinstance(size, (tuple, list))
            and len(size) == 2
            and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
                for v in size
            )
        ):
            return int(size[0]), int(size[1])
        raise InvalidParameterError(
            "sketch must be 'auto', 'none' or a pair (k, m) of ints ≥ 1 (principal "
            f"directions, landmarks), got {self.sketch!r}."
        )

    def _early_stopping(self) -> str:
        """``early_stopping`` checked, as the evaluator's path: "auto", "walk" or "full"."""
        early = self.early_stopping
        if isinstance(early, str) and early == "auto":
            return "auto"
        if isinstance(early, (bool, np.bool_)):
            return "walk" if early else "full"
        raise InvalidParameterError(f"early_stopping must be 'auto', True or False, got {early!r}.")

    def _precision(self) -> str | None:
        """``precision`` checked, as the evaluator's: None for "auto" (its default, or
        :func:`attentive.evaluation.evaluation_options`'), or "double"."""
        if isinstance(self.precision, str) and self.precision in ("auto", "double"):
            return None if self.precision == "auto" else self.precision
        raise InvalidParameterError(
            f"precision must be 'auto' or 'double', got {self.precision!r}."
        )

    def _calibration_examples(self, n_examples: int):
        """``calibration_size`` resolved for ``n_examples`` fit examples."""
        return _calibration_examples(self.calibration_size, self.delta, self.alpha, n_examples)

    def _budget_terms(self, n_terms: int) -> int:
        b = self.budget
        if b is None:
            return max(1, math.ceil(n_terms / 2))
        if isinstance(b, bool):
            raise InvalidParameterError(f"budget must be an int or a float, got {b!r}.")
        if isinstance(b, numbers.Integral):
            if not 1 <= b <= n_terms:
                raise InvalidParameterError(
                    f"budget must be between 1 and the number of terms ({n_terms}), got {b}."
                )
            return int(b)
        if isinstance(b, numbers.Real) and 0 < b <= 1:
            return max(1, math.ceil(b * n_terms))
        raise InvalidParameterError(
            f"budget must be an int in [1, {n_terms}] or a fraction in (0, 1], got {b!r}."
        )

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the model (unless prefit) and fix centering, order and boundary from ``(X, y)``.

        ``(X, y)`` is the reference set: ``μ_i``, V, ``M_t`` and ``D_t`` come from it, never from
        the examples later evaluated. With ``boundary="calibrated"`` a stratified part
        (``calibration_size``) is held out first and used only by :meth:`calibrate`.

        ``sample_weight`` (one weight a row) is passed to the model's own ``fit`` (the rows of
        the fit part, with ``boundary="calibrated"``). It weighs the model only: the reference
        statistics, the sketch and the calibration count every example once, as the guarantee
        counts disagreements per example. A pipeline passes them to its last step; a frozen
        model is not fitted, and refuses them.
        """
        self._check_params()
        check_model_kind(self.estimator)  # (before a fit that would only be refused)
        self.__dict__.pop("_model_names", None)  # (an earlier fit's frozen model's)
        # A data frame's rows as the model fits them (with its feature names, as a pipeline's
        # first step gets them): its estimator_ then takes frames without a warning.
        named = X if hasattr(X, "columns") and not _passes_raw_input(self.estimator) else None
        if _passes_raw_input(self.estimator):
            # A pipeline's first steps see the caller's X (a DataFrame with text columns, say);
            # only the width and feature names are checked here, the rest after its transforms.
            _check_2d(X)
            X, y = validate_data(self, X, y, skip_check_array=True)
            X, y = _indexable(_canonical(X)), np.asarray(y)
            check_consistent_length(X, y)
        else:
            X, y = _validated_numbers(self, X, y, accept_sparse=["csr", "csc"], dtype=np.float64)
            X = _canonical(X)
        target = type_of_target(y, input_name="y", raise_unknown=True)
        if target != "binary":
            if target == "multiclass":
                what = (
                    f"with {np.unique(y).size} classes; choose one positive class and relabel "
                    "the rest."
                )
            elif target == "continuous":
                what = (
                    f"({np.unique(y).size} distinct values); pass class labels, two of them (a "
                    "binary target)."
                )
            else:  # several outputs or labels a row
                what = "; pass one class label a row, two classes in all (a binary target)."
            raise InvalidParameterError(
                f"Only binary classification is supported. The type of the target is {target!r}"
                + ("" if what.startswith(";") else " ")
                + what
            )
        if sample_weight is not None:
            if _fitted_before(self):
                raise InvalidParameterError(
                    "sample_weight weighs the model's own fit, but a frozen model is not fitted."
                )
            sample_weight = _check_sample_weight(sample_weight, y)
        X_cal = None
        # How fit split its rows, for fit_sketch's check of the rows it is given.
        self._held_out = None
        if self.boundary == "calibrated":
            # The calibration part must be independent of everything the boundary family is
            # built from (model, μ, V, M_t, D_t), or the guarantee does not hold.
            self._held_out = dict(
                delta=self.delta,
                alpha=self.alpha,
                calibration_size=self.calibration_size,
                random_state=self.random_state,
            )
            # Split by row number (the rows calibration_split(X, y) takes), for the weights too.
            fit_rows, cal_rows, _, _ = calibration_split(
                np.arange(_num_samples(X)), y, **self._held_out
            )
            X, X_cal, y = _safe_indexing(X, fit_rows), _safe_indexing(X, cal_rows), y[fit_rows]
            if named is not None:
                named = _safe_indexing(named, fit_rows)
            if sample_weight is not None:
                sample_weight = sample_weight[fit_rows]
        present = np.unique(y)
        if present.size == 1:  # type_of_target calls one class "binary"
            raise InvalidParameterError(
                f"y holds one class only ({present.tolist()[0]!r} in all {len(y)} rows); fit needs "
                "examples of both classes of a binary target: the reference statistics are "
                "per class, and most models cannot be fitted on one class."
            )
        # Where calibration will stop is judged on the reference profile at this many examples
        # (grid.profile_point): the sketch and family="auto"'s ranking are chosen there.
        self._calibration_rows = _num_samples(X_cal) if X_cal is not None else None
        self._fit_rows = _num_samples(X)
        self._frozen = isinstance(self.estimator, FrozenEstimator)
        if self._frozen:
            self.estimator_ = self.estimator
            width = getattr(self.estimator, "n_features_in_", None)
            by_name = _selects_columns(self.estimator) and hasattr(X, "columns")
            if width is not None and int(width) != self.n_features_in_ and not by_name:
                raise InvalidParameterError(
                    f"X has {self.n_features_in_} features, but the frozen "
                    f"{type(self.estimator.estimator).__name__} was fitted on {int(width)}; "
                    "fit with reference rows like those the model was trained on."
                )
            if not by_name:
                _check_frozen_names(self, self.estimator)
            if self.boundary == "calibrated":
                warnings.warn(
                    "boundary='calibrated' holds out part of the fit data to calibrate, but the "
                    "model is frozen (fitted before): if it saw those examples, the guarantee "
                    "does not hold. Fit with boundary='curved' (or another family) on reference "
                    "data and call calibrate(X_cal) on examples the model never saw.",
                    CalibrationWarning,
                    stacklevel=2,
                )
        else:
            if _is_fitted(self.estimator):
                warnings.warn(
                    f"{type(self.estimator).__name__} is already fitted; it is cloned and fitted "
                    "again on (X, y). To use it as it is, pass FrozenEstimator(model) "
                    "(from sklearn.frozen).",
                    UserWarning,
                    stacklevel=2,
                )
            weights = (
                {_weight_name(self.estimator): sample_weight}
                if sample_weight is not None and _takes_weights(self.estimator)
                else {}
            )
            rows = X if named is None else named
            with _text_named(rows, self.estimator):
                self.estimator_ = clone(self.estimator).fit(rows, y, **weights)
        self.terms_ = decompose(self.estimator_)
        self.classes_ = np.asarray(self.terms_.classes)
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if unknown.size:
            raise InvalidParameterError(
                f"the reference labels contain {unknown.tolist()}, which the fitted model does not "
                f"know; its classes are {self.classes_.tolist()}."
            )
        self.walk_, ref_mask = make_walk(
            self.terms_,
            X,
            y,
            centering=self.centering,
            order=self.order,
            random_state=self.random_state,
        )
        # What fit_sketch checks its rows against (the row count, and a sample of them).
        self._fit_digest = self._rows_digest(X, y)
        # Per-class statistics: the curved boundary's lower side needs the walks it must not stop
        # (positives), its upper side the negatives; V comes from R (SPEC §2), their union when
        # R is every reference example.
        is_pos = y == self.classes_[1]
        self.reference_walks_ = self._resolved_reference_walks()
        loo = self.reference_walks_ == "leave-one-out"
        own = self._own_terms(X) if loo else None
        self.n_own_terms_ = 0 if own is None else int((own >= 0).sum())
        self.pilot_rows_ = self._pilot_rows(
            X if X_cal is None or not _num_samples(X_cal) else X_cal
        )
        self.class_stats_ = {
            name: reference_statistics(
                self.walk_,
                _safe_indexing(X, rows),
                leave_own_out=loo,
                own=None if own is None else own[rows],
            )
            for name, rows in (
                ("positive", np.flatnonzero(is_pos)),
                ("negative", np.flatnonzero(~is_pos)),
            )
        }
        pooled = ReferenceStats.pool(self.class_stats_["positive"], self.class_stats_["negative"])
        self.reference_stats_ = pooled if ref_mask.all() else self.class_stats_["positive"]
        self.n_terms_ = self.terms_.n_terms
        self.offset_ = self.walk_.offset
        self.threshold_ = float(self.threshold)
        self.theta_s_ = self.walk_.theta_s(self.threshold_)
        self.variance_ = self.reference_stats_.variance(self.variance)
        # The upper side's V: over the walks it must not stop wrongly, the negatives (SPEC §2).
        self.upper_variance_ = self.class_stats_["negative"].variance(self.variance)
        # One sample of reference walks, with their running masses, for the tables of the
        # heteroscedastic and mass-regression families.
        S_ref, A_ref = reference_sample(self.walk_, X, leave_own_out=loo, own=own, masses=True)
        self.walk_statistics_ = WalkStatistics(
            positive=self.class_stats_["positive"],
            negative=self.class_stats_["negative"],
            pooled=pooled,
            variance=self.variance_,
            upper_variance=self.upper_variance_,
            spread=spread_table(S_ref, regression_statistics(pooled)),
            mass=mass_table(S_ref, A_ref),
        )
        del S_ref, A_ref
        self.side_ = self.side
        self.reference_profile_ = self._reference_profile(X, own)
        self._fit_sketch(X, y, ref_mask, own)
        self.calibration_ = None
        if self.boundary == "calibrated":
            self._calibrate(X_cal, self.delta, self.alpha, None, self.family)
        else:
            self.boundary_ = self._make_boundary()
        self._fitted_rule = self._rule_params()
        return self

    def _rule_params(self) -> dict:
        """The parameters of the rule as fitted (``set_params`` after ``fit`` changes the
        parameters, not the fitted rule: :meth:`with_rule` starts from this)."""
        return {"boundary": self.boundary, "delta": self.delta, "budget": self.budget}

    def _own_terms(self, X) -> np.ndarray:
        """Each reference row's own term (−1: none). A model fitted here on ``X`` says which rows
        became its support vectors (``support_``, in the order of its terms), so duplicates and
        transforms that give other values in ``fit_transform`` than in ``transform`` cannot
        confuse it; a frozen model is matched by value."""
        final = _unwrap(self.estimator_)[1]
        support = getattr(final, "support_", None)
        if self.terms_.kind == "kernel" and support is not None and not _fitted_before(self):
            own = np.full(_num_samples(X), -1, dtype=np.int64)
            own[np.asarray(support)] = np.arange(len(support))
            return own
        return self.terms_.own_terms(self.walk_.prepare(X))

    def _pilot_rows(self, X):
        """Up to :data:`~attentive.evaluator.pilot.PILOT_ROWS` rows of ``X``, spread evenly and
        prepared for the walk: where :meth:`evaluate` expects walks to stop under any rule, so
        that whether it walks or evaluates every term is decided the same way for every call
        (a row's outcome never depends on its batch). ``fit`` passes the calibration rows where
        it holds some out (the model never saw them: they stop as new rows do), else the
        reference rows."""
        return self.walk_.prepare(_spread_rows(X))

    def _reference_profile(self, X, own=None) -> dict:
        """Each family's tradeoff on (a sample of) the reference set, for ``family="auto"``."""
        families = [
            make_family(name, self.walk_statistics_, self.theta_s_, self.side_)
            for name in family_names()
        ]
        return reference_profile(
            self.walk_,
            X,
            families,
            max_rows=_PROFILE_ROWS,
            leave_own_out=self.reference_walks_ == "leave-one-out",
            own=own,
        )

    def _resolved_reference_walks(self) -> str:
        if self.reference_walks != "auto":
            return self.reference_walks
        return "leave-one-out" if self.boundary == "calibrated" else "in-sample"

    def _make_boundary(self) -> Boundary:
        n = self.n_terms_
        if self.boundary == "budget":
            return budget_boundary(n, self._budget_terms(n))
        if self.boundary == "full":
            return full_boundary(n)
        # A family at the scale whose normal tail is δ: for the constant family that is
        # Theorem 1's τ at δ, for the curved one z = Φ⁻¹(1 − δ) (SPEC §2).
        z = float(-ndtri(self.delta))  # Φ⁻¹(1 − δ), without rounding 1 − δ first
        return dataclasses.replace(
            self.boundary_family(self.boundary).boundary(z),
            params={
                **(self.boundary_family(self.boundary).boundary(z).params or {}),
                "delta": float(self.delta),
            },
        )

    # -- sketched walks (SPEC §3b) ---------------------------------------------------------------
    def fit_sketch(self, X, y):
        """Choose a sketch (or none) for a classifier fitted without one, on its reference data.

        :meth:`fit` chooses one only where its rule can use one (see the ``sketch`` parameter);
        this makes the sketched rules (``with_rule("sketched-curved", ...)``, ``scale_outcomes``)
        available afterwards — for a dashboard that shows every rule. ``(X, y)`` must be the
        data the classifier was fitted on (the fit part, for ``boundary="calibrated"``:
        :func:`attentive.estimator.calibration_split` with the classifier's ``delta``, ``alpha``,
        ``calibration_size`` and ``random_state`` gives it); other rows are refused. With
        ``sketch=(k, m)`` that size is fitted; with ``sketch="none"``, none.

        Returns
        -------
        self
            With ``sketch_choice_``, and ``sketched_walk_`` where a sketch pays (or was asked
            for by size).
        """
        check_is_fitted(self)
        X = self._check_X(X)
        y = np.asarray(y)
        self._check_fit_rows(X, y)
        ref_mask = reference_mask(y, self.classes_[1], self.centering)
        own = self._own_terms(X) if self.reference_walks_ == "leave-one-out" else None
        self._fit_sketch(X, y, ref_mask, own, wanted=True)
        return self

    def _check_fit_rows(self, X, y) -> None:
        """Refuse ``(X, y)`` that cannot be the rows the model was fitted on, in fit's order:
        labels of another length, another number of rows than ``fit`` fitted it on, or rows
        whose digest (:meth:`_rows_digest`: a sample of rows and every label) is not fit's (the
        support vectors index those rows: each reference row's own term; and the sketch's
        reference profile must not see the calibration rows). A classifier saved before ``fit``
        recorded these is not checked."""
        n = _num_samples(X)
        if len(y) != n:
            raise ValueError(f"X has {n} rows but y has {len(y)} labels.")
        expected = getattr(self, "_fit_rows", None)
        if expected is None:
            return
        digest = getattr(self, "_fit_digest", None)
        same = expected == n and (digest is None or digest == self._rows_digest(X, y))
        if same:
            return
        held_out = getattr(self, "_held_out", None)
        hint = ""
        if held_out is not None:
            args = ", ".join(f"{key}={value!r}" for key, value in held_out.items())
            hint = (
                " fit held out part of its data to calibrate (boundary='calibrated'): pass the "
                f"rest, X_fit, _, y_fit, _ = attentive.estimator.calibration_split(X, y, {args})."
            )
        got = (
            f"got {n}"
            if expected != n
            else "got as many, but not those rows in that order (a sample of the rows or the "
            "labels differ)"
        )
        raise ValueError(
            f"fit_sketch needs the rows the model was fitted on, in fit's order: {expected} rows, "
            f"{got}.{hint}"
        )

    def _rows_digest(self, X, y) -> str:
        """A digest of up to 32 rows spread over ``X`` and of every label: fit's rows in fit's
        order give fit's digest. The rows as they are given, in double precision (float32 rows
        and their float64 copies agree, whatever a pipeline's transforms make of either); rows
        that are not numbers (documents for a text vectoriser) as the walk prepares them."""
        sample = _spread_rows(X, 32)
        try:
            rows = sample if sp.issparse(sample) else np.asarray(sample, dtype=float)
        except (TypeError, ValueError):
            rows = self.walk_.prepare(sample)
            rows = rows if sp.issparse(rows) else np.asarray(rows)
        digest = hashlib.blake2b(digest_size=16)
        if sp.issparse(rows) and rows.shape[1] <= _DENSE_DIGEST_WIDTH:
            rows = rows.toarray()  # as digests have been made (older files compare with them)
        if sp.issparse(rows):  # its non-zeros: dense, a wide sparse file's rows take gigabytes
            rows = sp.csr_matrix(rows, dtype=np.float64, copy=True)
            rows.sum_duplicates()
            rows.eliminate_zeros()
            digest.update(np.asarray(rows.shape, dtype=np.int64).tobytes())
            for part in (rows.indptr, rows.indices):
                digest.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
            rows = rows.data
        digest.update(np.ascontiguousarray(rows, dtype=np.float64).tobytes())
        digest.update(np.packbits(np.asarray(y) == self.classes_[1]).tobytes())
        return digest.hexdigest()

    def _fit_sketch(self, X, y, ref_mask, own, wanted: bool = False) -> None:
        """Choose a sketch (or none) where a rule can use one (or ``wanted``: :meth:`fit_sketch`),
        or fit the size asked for (see the ``sketch`` parameter)."""
        from attentive.sketch import choose_sketch, sketch_unavailable

        self.sketch_choice_ = self.sketched_walk_ = self.sketched_statistics_ = None
        self.sketch_costs_ = None
        # The plain walk's profile only (a sketch chosen before, by fit_sketch, is chosen again).
        self.reference_profile_ = {
            name: tradeoff
            for name, tradeoff in self.reference_profile_.items()
            if not is_sketched_name(name)
        }
        size = self._sketch_size()
        wanted = (
            wanted
            or (self.boundary == "calibrated" and self.family == AUTO)
            or any(is_sketched_name(name) for name in (self.boundary, self.family))
        )
        if self.sketch == "none" or not (wanted or size):
            return
        unavailable = sketch_unavailable(self.terms_, X)
        if unavailable is not None:
            if size is not None:
                raise InvalidParameterError(
                    f"sketch={self.sketch!r} asks for a sketch, but {unavailable}. Use "
                    "sketch='auto' or 'none'."
                )
            return
        self._single_features = self._features_from_single(X)
        choice = choose_sketch(
            self.walk_,
            X,
            y,
            delta=self.delta,
            ref_mask=ref_mask,
            theta_s=self.theta_s_,
            side=self.side_,
            sizes=None if size is None else [size],
            variance=self.variance,
            leave_own_out=self.reference_walks_ == "leave-one-out",
            own=own,
            statistics=self.walk_statistics_,
            profile=dict(self.reference_profile_),
            cost_model=self._sketch_cost_model(),
            order=self.sketch_order,
            calibration=self._calibration_point(self.alpha),
            random_state=0,
        )
        self.sketch_choice_ = choice
        # The size asked for whatever it costs; else the cheapest, if a sketch at all.
        self.sketch_costs_ = "measured" if self._sketch_cost_model() is not None else "count"
        kept = choice.options[-1]
        if size is None:
            kept, self.sketch_costs_ = self._cheapest_sketch(choice, X)
        # (Its repr names the option kept beside its own best, which may differ.)
        self.sketch_choice_ = dataclasses.replace(choice, kept=kept)
        if kept.k is None:
            if size is not None:  # choose_sketch leaves out sizes the rows do not allow
                d = self.walk_.prepare(_safe_indexing(X, [0])).shape[1]
                raise InvalidParameterError(
                    f"sketch={self.sketch!r} does not fit these rows: k must be below their "
                    f"n_features = {d} and m at most their {_num_samples(X)} examples."
                )
            return
        self.sketched_walk_ = kept.walk
        self.sketched_statistics_ = kept.statistics
        for name, tradeoff in kept.profile.items():
            self.reference_profile_[SKETCHED_PREFIX + name] = tradeoff

    def _cheapest_sketch(self, choice, X):
        """The option to keep and what it was priced at.

        - Where the evaluator would walk the rule of the fastest option by the measured costs
          (``choice.best``, which leaves out :data:`attentive.sketch.COUNT_SIZES`; its pilot on
          the reference rows says the walk pays: :meth:`_walk_price`), that option — unless the
          least work by SPEC §3b's count is another option whose walk the same pilot predicts
          no slower: then that one ("measured" both ways). The pilot prices what the choice's
          measured costs leave out (a walk's blocks, rows and positions), so it can tell where
          a size with less work costs no time.
        - Where it would evaluate that rule's every term anyway, the options are taken to cost
          a full evaluation's time alike, and the least work by the count wins (``"count"``),
          the smaller sizes among them (no sketch among equals) — also where the fastest is no
          sketch, whose plain rule would be evaluated in full too.

        The rule kept is then priced by the pilot on the rows it is asked to evaluate, like any
        other: it may walk there."""
        fastest = choice.best
        least = min(choice.options, key=lambda o: o.counted_total)  # the earliest among equals
        measured = self._sketch_cost_model() is not None
        if not measured or least is fastest:
            return fastest, "measured" if measured else "count"
        price = self._walk_price(fastest, X)
        if price is None:
            return least, "count"
        other = self._walk_price(least, X)
        if other is not None and other <= price:
            return least, "measured"
        return fastest, "measured"

    def _walk_price(self, option, X) -> float | None:
        """The evaluator's predicted time of a row's walk of ``option``'s cheapest rule, as a
        fraction of a full evaluation's (:attr:`attentive.Evaluation.predicted_cost`), by its
        pilot on the rows of the reference set ``X`` that :meth:`_pilot_rows` spreads over
        (never the calibration rows: the choice of rules takes no part of them); None where the
        pilot says the walk does not pay (every term would be evaluated). The rule is its
        family at the scale calibration would choose on the held-out part's size at the
        profile's rates (:func:`attentive.grid.profile_point`; without a held-out part, on the
        profile's own rows): the profile's own cheapest scale at disagreement ≤ δ stops sooner
        than any calibrated one. Rows of float32 values are priced as float32."""
        if option.family is None:
            return None
        rates, fractions = option.profile[option.family]
        point = self._calibration_point(self.alpha) or (
            min(_PROFILE_ROWS, _num_samples(X)),
            self.alpha,
        )
        j = profile_point(rates, fractions, self.delta, point)
        scale = float(default_grid()[0 if j is None else j])
        rows = _spread_rows(X)
        if (
            isinstance(rows, np.ndarray)
            and rows.dtype == np.float64
            and np.array_equal(rows, rows.astype(np.float32))
        ):
            # float32 values (fit reads every row as float64): priced as the float32 rows they
            # come as, whose full evaluation is the faster (docs/speed.md, "Precision").
            rows = rows.astype(np.float32)
        family = make_family(option.family, option.statistics, self.theta_s_, self.side_)

        def priced(path):
            return evaluate(
                option.walk,
                rows,
                family.boundary(scale),
                self.theta_s_,
                precision=self._precision(),
                threshold=self.threshold_,
                reference=option.walk.prepare(rows),
                path=path,
            )

        ev = priced("auto")
        if ev.path == "triage":
            # (Where the evaluator would stop only the rows its triage decides and evaluate
            # every term of the others, the sketch is still chosen by its walk's price.)
            ev = priced("walk")
            return ev.predicted_cost if ev.predicted_cost <= WALK_MARGIN else None
        return ev.predicted_cost if ev.path == "walk" else None

    def _sketch_cost_model(self):
        """What a sketch costs, for :func:`attentive.sketch.choose_sketch` and the ranking of
        ``family="auto"``: the evaluator's measured costs (SPEC §3b's count of multiply-adds
        is what :class:`attentive.Evaluation` reports), its features priced as float32 products
        where the reference rows go to the float32 source (rows off the pixel grid)."""
        from attentive.evaluator.sources.sketch import sketch_cost_model

        return sketch_cost_model(self.n_terms_, getattr(self, "_single_features", False))

    def _features_from_single(self, X) -> bool:
        """Whether a walk would take ``X``'s rows from the float32 source (whose sketched walks
        compute their features in float32): routed as one of the reference rows is."""
        from attentive.evaluator import resolved_precision, source_for
        from attentive.evaluator.plan import walk_plan
        from attentive.evaluator.rows import as_rows

        if self._precision() == "double" or not _num_samples(X):
            return False
        rows = as_rows(self.walk_.prepare(_safe_indexing(X, [0])))
        try:
            cls = source_for(
                self.walk_, walk_plan(self.walk_), rows, resolved_precision(self._precision())
            )
        except LookupError:
            return False
        return cls.kind == "rbf-single"

    def _kept_sketch(self):
        """The :class:`attentive.sketch.SketchOption` of ``sketched_walk_`` (None without one)."""
        choice = getattr(self, "sketch_choice_", None)
        walk = getattr(self, "sketched_walk_", None)
        if choice is None or walk is None:
            return None
        size = (walk.sketch.k, walk.sketch.m)
        return next(o for o in choice.options if (o.k, o.m) == size)

    def scaled_rules(self) -> tuple[str, ...]:
        """The rules with a scale z this classifier can evaluate: every family, and the sketched
        ones where it has a sketch (:meth:`fit_sketch`)."""
        check_is_fitted(self)
        has = getattr(self, "sketched_walk_", None) is not None
        return (*family_names(), *(sketched_names() if has else ()))

    def _no_sketch_reason(self) -> str:
        from attentive.sketch import sketch_unavailable

        if self.sketch == "none":
            return "it was fitted with sketch='none'."
        unavailable = sketch_unavailable(self.terms_)
        if unavailable is not None:
            return unavailable + "."
        choice = getattr(self, "sketch_choice_", None)
        if choice is not None:
            return (
                "no sketch paid on the reference profile (the cheapest was "
                f"{choice.best.label}); see sketch_choice_, or fit with sketch=(k, m)."
            )
        return (
            "sketches are fitted for RBF models on dense rows, when a rule can use one "
            "(boundary='calibrated' with family='auto', or a sketched-<family> rule), when "
            "sketch=(k, m) asks for one, or by fit_sketch(X, y)."
        )

    def _walk_of(self, name: str):
        """The walk the rule ``name`` is evaluated on: the sketched walk for a sketched rule."""
        return self.sketched_walk_ if is_sketched_name(name) else self.walk_

    def _walk_of_boundary(self, boundary: Boundary):
        sketched = (boundary.params or {}).get("walk") == "sketched"
        return self.sketched_walk_ if sketched else self.walk_

    def _profile_costs(self) -> dict:
        """The reference profile with each family's evaluated fraction as its cost in units of
        a full evaluation: a sketched family's includes the sketch and the walked terms' extra
        cost (:func:`attentive.sketch.choose_sketch`'s total), at the costs the kept sketch was
        chosen by (``sketch_costs_``); at the measured costs a rule on the running mass also
        pays its second running sum per walked term (:meth:`_mass_term_cost`)."""
        kept = self._kept_sketch()
        counted = getattr(self, "sketch_costs_", "measured") == "count"
        mass_extra = 0.0
        if kept is not None and not counted:
            mass_extra = self._mass_term_cost(self.sketched_walk_.sketch.n_features)
        out = {}
        for name, (rates, walked) in self.reference_profile_.items():
            fractions = walked
            if is_sketched_name(name) and kept is not None:
                cost, term_cost = (
                    kept.counted_costs if counted else (kept.sketch_cost, kept.term_cost)
                )
                fractions = cost + walked * term_cost
            plain = base_family(name) if is_sketched_name(name) else name
            if mass_extra and plain in _MASS_FAMILIES:
                fractions = fractions + walked * mass_extra
            out[name] = (rates, fractions)
        return out

    @staticmethod
    def _mass_term_cost(n_features: int) -> float:
        """What a rule on the running mass adds to a walked term at the evaluator's measured
        costs (its second running sum: ``MASS_TERM_NS`` against a term over the sketch's
        features, ``sources/rbf.py``), in units of a full evaluation's term."""
        from attentive.evaluator.sources.rbf import MASS_TERM_NS
        from attentive.evaluator.sources.sketch import _term_ns

        return MASS_TERM_NS / _term_ns(n_features)

    # -- calibration (SPEC §3) ------------------------------------------------------------------
    def boundary_family(self, family: str | None = None) -> BoundaryFamily:
        """The one-parameter family (scale z) named ``family``, built from this classifier's
        reference statistics, for its side and threshold.

        ``family`` is any name of :func:`attentive.families.family_names` (``"constant"``,
        ``"curved"``, ``"regression"``, ``"finite-population"``, ...); None means the fitted
        boundary's own family (for ``boundary="calibrated"`` the family calibration chose).
        """
        check_is_fitted(self)
        if family is None:
            family = self.boundary
            if family == "calibrated":
                family = (self.boundary_.params or {}).get("family", "curved")
        if family not in _scaled_names():
            raise InvalidParameterError(
                f"family must be one of {_scaled_names()}; boundary={family!r} has no scale to "
                "calibrate."
            )
        if is_sketched_name(family):
            if getattr(self, "sketched_walk_", None) is None:
                raise InvalidParameterError(
                    f"{family!r} needs a sketch, and this classifier has none: "
                    f"{self._no_sketch_reason()}"
                )
            stats = self.sketched_statistics_
            return SketchedFamily(
                make_family(base_family(family), stats, self.theta_s_, self.side_)
            )
        return make_family(family, self.walk_statistics_, self.theta_s_, self.side_)

    def calibrate(self, X_cal, *, delta=None, alpha=None, grid=None, family=None):
        """Choose the boundary's scale on held-out examples so that disagreement ≤ δ w.p. ≥ 1 − α.

        Runs the Clopper–Pearson fixed-sequence scan of SPEC §3 over ``grid`` and makes later
        predictions use the chosen boundary (``boundary_``); when no scale passes, every term is
        evaluated (``boundary_`` is the full boundary) and a :class:`CalibrationWarning` says so.
        Labels are not needed: disagreement is measured against the model's own full decision.
        The calibration examples are walked a chunk of rows at a time (bounded memory).

        Parameters
        ----------
        X_cal : array-like or sparse matrix of shape (m, n_features)
            Calibration examples, drawn like future examples and **not** used to fit the model or
            the reference statistics (not the ``fit`` data). ``m`` must be at least
            ``ln α / ln(1 − δ)`` (299 for δ = 1 %, α = 5 %) for any scale to pass.
        delta : float in (0, 1), optional
            Disagreement rate to guarantee; default ``self.delta``.
        alpha : float in (0, 1), optional
            Allowed failure probability; default ``self.alpha``.
        grid : array-like, optional
            Strictly decreasing scales z, fixed before seeing ``X_cal``; default
            :func:`attentive.grid.default_grid`.
        family : str, optional
            A registered family name or ``"auto"`` (the family ranked cheapest on the reference
            set, as for the ``family`` parameter); default: the ``family`` parameter for
            ``boundary="calibrated"``, else the fitted boundary's family. Its side is ``side_``.

        Returns
        -------
        self
            With ``calibration_`` (a :class:`CalibrationReport`) and ``boundary_`` set.
        """
        check_is_fitted(self)
        X_cal = self._check_X(X_cal)
        d = check_delta(self.delta if delta is None else delta)
        a = check_alpha(self.alpha if alpha is None else alpha)
        if family is None:
            family = self.family if self.boundary == "calibrated" else self.boundary
        if family != AUTO:
            self.boundary_family(family)  # a clear error for a name without a scale
        self._calibrate(X_cal, d, a, grid, family)
        return self

    def _calibration_point(self, alpha, m=None):
        """``(m, α)`` for :func:`attentive.grid.profile_point`: where calibration on ``m``
        examples (default: the part ``fit`` held out) would stop, or None (no held-out part:
        judged at disagreement ≤ δ) — for the sketch's choice and ``family="auto"``'s ranking,
        both made on the reference profile, never on the calibration examples themselves."""
        m = getattr(self, "_calibration_rows", None) if m is None else m
        return (int(m), alpha) if m else None

    def _calibrate(self, X_cal, delta, alpha, grid, family) -> None:
        point = self._calibration_point(alpha, _num_samples(X_cal))
        ranking = family_ranking(self._profile_costs(), delta, point) if family == AUTO else None
        # "auto" calibrates only the family ranked first (the ranking never sees X_cal), so only
        # that family's outcomes are needed.
        names = (ranking[0],) if family == AUTO else (family,)
        families = [self.boundary_family(name) for name in names]
        outcomes = walk_grid_outcomes(self._walk_of(names[0]), X_cal, families, grid)
        if family == AUTO:
            report = calibrate_auto(
                dict(zip(names, outcomes, strict=True)),
                delta=delta,
                alpha=alpha,
                side=self.side_,
                ranking=ranking,
            )
        else:
            report = calibrate_scale(
                outcomes[0], delta=delta, alpha=alpha, family=family, side=self.side_
            )
        self.calibration_ = report
        if report.fallback:
            warnings.warn(report.guarantee, CalibrationWarning, stacklevel=3)
            self.boundary_ = full_boundary(self.n_terms_)
            return
        chosen = self.boundary_family(report.family).boundary(report.chosen_scale)
        self.boundary_ = dataclasses.replace(
            chosen,
            kind="calibrated",
            params={
                **(chosen.params or {}),
                "family": report.family,
                "z": report.chosen_scale,
                "delta": delta,
                "alpha": alpha,
                "n_calibration": report.m,
            },
        )
        note = self._rare_decision_note(outcomes[0], report, delta)
        if note is not None:
            # (the report's note, for a reader of the report or the dashboard, names no code)
            self.calibration_ = dataclasses.replace(report, notes=(f"{note}.",))
            warnings.warn(
                f"{note}, or evaluate in full (boundary='full').", CalibrationWarning, stacklevel=3
            )

    def _rare_decision_note(self, outcomes, report, delta) -> str | None:
        """Where the calibrated rule decides most of the full model's rarer decision on the
        calibration set the other way, what to say, up to its advice's end (else None). The
        guarantee bounds the disagreement over all examples: with δ near the rarer decision's
        share, a rule that stops every walk at once on the common side meets it (a diagnostic
        only: nothing is chosen from it)."""
        full = np.asarray(outcomes.full_positive, dtype=bool)
        rare = bool(full.mean() < 0.5)
        held = full == rare
        if held.sum() < RARE_MIN:  # (too few to tell: one example is 0 % or 100 %)
            return None
        kept = float(np.mean(outcomes.positive[held, report.chosen_index] == rare))
        if kept >= 0.5:
            return None
        label = self.classes_[int(rare)]
        label = label.item() if isinstance(label, np.generic) else label  # ('rare', not np.str_)
        return (
            f"The calibrated rule decides only {kept:.0%} of the {int(held.sum())} calibration "
            f"examples the full model decides {label!r} (its rarer decision, "
            f"{held.mean():.1%} of them) as the full model does: the guarantee bounds the "
            f"disagreement over all examples, and δ = {delta:g} leaves room for that. Choose a "
            "δ well below the rarer decision's share"
        )

    # -- prediction -----------------------------------------------------------------------------
    def evaluate(self, X) -> Evaluation:
        """Evaluate ``X`` attentively.

        Returns
        -------
        Evaluation
            ``decision``, ``labels``, ``positive``, ``n_evaluated``, ``stopped`` and
            ``stop_side`` per example (see :class:`attentive.evaluation.Evaluation`).
        """
        return self._evaluate(X)

    def _check_X(self, X, evaluator_checks_finite: bool = False):
        """Validate examples to evaluate: what the walk needs, after a pipeline's transforms.

        ``evaluator_checks_finite``: ``X`` goes to :func:`attentive.evaluation.evaluate`, which
        finds NaN and infinite values itself where
        :func:`attentive.evaluator.rejects_non_finite` says so (see :meth:`_evaluate`)."""
        if self._is_plain_valid_input(X, evaluator_checks_finite):
            return _canonical(X)
        _check_model_names(self, X)
        if _passes_raw_input(self.estimator_):
            _check_not_a_row(X, getattr(self, "feature_names_in_", None))
            _check_2d(X)
            _check_not_cube(X, getattr(self, "n_features_in_", None))
            if not (_selects_columns(self.estimator_) and hasattr(X, "columns")):
                with warnings.catch_warnings():
                    if getattr(self.estimator_, "feature_names_in_", None) is not None:
                        # The model takes the rows as they come and says this itself (a
                        # pipeline's first step): once, not twice.
                        warnings.filterwarnings(
                            "ignore", "X does not have valid feature names", UserWarning
                        )
                    validate_data(self, X, skip_check_array=True, reset=False)
            # (A frame for a ColumnTransformer: its columns are the transformer's to check, as
            # the bare pipeline takes them in another order or beside others.)
            return _canonical(X)
        # float32 rows stay float32: the evaluator multiplies them as they are.
        return _canonical(
            _validated_numbers(self, X, accept_sparse=["csr", "csc"], dtype=_DTYPES, reset=False)
        )

    def _evaluate(self, X) -> Evaluation:
        check_is_fitted(self)
        X = self._check_X(X, evaluator_checks_finite=True)
        path = self._early_stopping()
        boundary = full_boundary(self.n_terms_) if path == "full" else self.boundary_
        try:
            with _text_named(X, self.estimator_):
                return evaluate(
                    self._walk_of_boundary(boundary),
                    X,
                    boundary,
                    self.theta_s_,
                    precision=self._precision(),
                    threshold=self.threshold_,
                    stopped_score=self.stopped_score,
                    path=path,
                    reference=getattr(self, "pilot_rows_", None),
                )
        except NonFiniteInput:
            if self.terms_.head is not None:
                # What the pipeline's transforms handed the model (a scaler passes NaN on).
                final = type(_unwrap(self.estimator_)[1]).__name__
                raise ValueError(  # (a ValueError, as scikit-learn's own check raises)
                    f"Input X contains NaN or infinity after the pipeline's transforms (what "
                    f"{final} receives), which {final} does not accept: impute missing values "
                    "in the pipeline (sklearn.impute.SimpleImputer) or drop those rows."
                ) from None
            # The finiteness check was left to the evaluator (it is free there): scikit-learn's
            # own check raises its own error for the same X.
            validate_data(self, X, accept_sparse=["csr", "csc"], dtype=_DTYPES, reset=False)
            raise

    def partial_scores(self, X) -> np.ndarray:
        """Every partial score ``S_t(x)`` (column ``t − 1``), shape (n_examples, n_terms).

        The whole walk of each example (for plots and experiments; prediction never needs it).
        """
        check_is_fitted(self)
        return self.walk_.partial_scores(self._check_X(X))

    def partial_masses(self, X) -> np.ndarray:
        """Every running mass ``A_t(x) = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)`` (column ``t − 1``), shape
        (n_examples, n_terms): what a rule of the mass-regression family stops on besides
        ``S_t`` (:meth:`attentive.walk.Walk.partial_masses`; for plots and experiments)."""
        check_is_fitted(self)
        return self.walk_.partial_masses(self._check_X(X))

    def _is_plain_valid_input(self, X, evaluator_checks_finite: bool = False) -> bool:
        """Whether ``X`` is already what ``validate_data`` would return, checked cheaply.

        A float64 or float32 numpy array or CSR/CSC matrix of the fitted width with finite values, for an
        estimator fitted without feature names. ``validate_data`` checks the same and more (and
        writes the error messages), but its data-frame detection alone costs more than
        evaluating a small batch; anything else goes through it. With
        ``evaluator_checks_finite``, the values of an array the evaluator checks itself
        (:func:`attentive.evaluator.rejects_non_finite`: kernel models on dense arrays) are
        not looked at here: one pass over the input less.
        """
        if hasattr(self, "feature_names_in_") or _passes_raw_input(self.estimator_):
            return False
        if isinstance(X, np.ndarray):
            values = X
        elif sp.issparse(X) and X.format in ("csr", "csc"):
            values = X.data
            if X.indices.dtype != np.int32 or X.indptr.dtype != np.int32:
                return False  # large-index matrices: let validate_data decide
        else:
            return False
        if not (
            X.dtype in _DTYPES
            and X.ndim == 2
            and X.shape[0] >= 1
            and X.shape[1] == self.n_features_in_
        ):
            return False
        if evaluator_checks_finite and rejects_non_finite(self.walk_, X):
            return True
        # A finite sum means every value is finite (NaN and ±inf propagate); a sum that
        # overflows only sends X down the slower path, which decides correctly. One pass, no
        # boolean array; einsum's sum is vectorised (2× faster than ndarray.sum on MNIST-sized
        # batches, which is 40 % cheaper than isfinite().all()).
        with np.errstate(over="ignore", invalid="ignore"):
            return math.isfinite(float(np.einsum("ij->" if values.ndim == 2 else "i->", values)))

    # -- the front door for experiments and the dashboard --------------------------------------
    def with_rule(
        self,
        boundary=None,
        *,
        delta=None,
        z=None,
        tau=None,
        side=None,
        threshold=None,
        budget=None,
    ) -> AttentiveClassifier:
        """A copy of this fitted classifier with another stopping rule, without refitting.

        The fitted model, the walk (centering, order) and the reference statistics are shared
        (the model's parameters are the copy's own: ``set_params`` on one leaves the other; a
        ``FrozenEstimator`` is the same object in both, as ``clone`` keeps it);
        only the rule changes. This is how to move along a tradeoff (δ, θ, side, family) as the dashboard
        does; the copy predicts exactly as a classifier fitted with those parameters would
        on the same rows (except a ``tau``: see below). A calibrated classifier is the
        exception: its model was fitted, and its sketch chosen, without the rows it held out to
        calibrate. The copy keeps both, but ``clone(copy).fit(X, y)`` (``GridSearchCV``,
        ``cross_val_score``) fits the model on every row of ``X`` and chooses its sketch again —
        another classifier, whose disagreement at the copy's rule is its own (measured on MNIST
        2 vs 5 at a sketched family: 1.3 % of labels differed from the copy's).

        Parameters
        ----------
        boundary : str, optional
            A family name (``"constant"``, ``"curved"``, ...), ``"budget"`` or ``"full"``; default
            the fitted one (as ``delta`` and ``budget``: a ``set_params`` after ``fit`` moves the
            parameters, not the fitted rule, until the next ``fit``). ``"calibrated"`` needs calibration data: use
            ``with_rule(family).calibrate(X_cal)``. A calibrated classifier's current rule is
            its calibrated family at the calibrated scale z (full evaluation where calibration
            fell back), kept unless ``delta``, ``z`` or ``tau`` is given; the copy has no
            guarantee (``calibration_`` is None: the guarantee held for the calibrated side and
            threshold; calibrate the copy for one).
        delta : float, optional
            The family at ``z = Φ⁻¹(1 − δ)`` (as :meth:`fit`).
        z : float, optional
            The family at scale ``z`` (overrides ``delta``; ``delta`` is set to ``Φ(−z)``).
        tau : float, optional
            For ``boundary="constant"`` with one side: that side's threshold τ in S space
            itself (the paper's sweep over τ), instead of Theorem 1's τ for δ. A τ is not one
            of the estimator's parameters (``get_params`` does not hold it): ``clone`` and a
            refit (``cross_val_score``, ``GridSearchCV``) go back to Theorem 1's τ for δ.
        side, threshold, budget : optional
            As the constructor's parameters.
        """
        check_is_fitted(self)
        new = copy.copy(self)
        # The model's parameters are the copy's own (a set_params on one leaves the other); the
        # fitted model is shared.
        new.estimator = clone(self.estimator)
        # (A classifier saved before the fitted rule was kept: its parameters.)
        fitted = getattr(self, "_fitted_rule", None) or self._rule_params()
        if boundary is None and delta is None and z is None and tau is None:
            # The current rule of a calibrated classifier: its family at the calibrated z, or
            # full evaluation where no scale passed (not the family at Φ⁻¹(1 − δ)).
            chosen = self.boundary_.params or {}
            if self.boundary_.kind == "calibrated":
                boundary, z = chosen["family"], float(chosen["z"])
            elif self.calibration_ is not None and self.calibration_.fallback:
                boundary = "full"
        params = {
            "boundary": fitted["boundary"] if boundary is None else boundary,
            "side": self.side_ if side is None else side,
            "threshold": self.threshold_ if threshold is None else threshold,
            "budget": fitted["budget"] if budget is None else budget,
            "delta": fitted["delta"] if delta is None else delta,
            # The statistics are shared: a refit with these parameters must walk the reference
            # set as this fit did, whatever "auto" would resolve to for the new boundary.
            "reference_walks": self.reference_walks_,
        }
        if params["boundary"] == "calibrated" and boundary is not None:
            raise InvalidParameterError(
                "with_rule cannot calibrate without data: call with_rule(family, ...).calibrate("
                "X_cal) with the family to calibrate."
            )
        if params["boundary"] == "calibrated":
            params["boundary"] = (self.boundary_.params or {}).get("family", "curved")
        if z is not None:
            z = _check_z(z)
            params["delta"] = float(ndtr(-z))  # z = −Φ⁻¹(δ) again (_make_boundary)
        new.set_params(**params)
        new._check_params()
        new._fitted_rule = new._rule_params()
        new.side_ = new.side
        new.threshold_ = float(new.threshold)
        new.theta_s_ = new.walk_.theta_s(new.threshold_)
        new.calibration_ = None
        if tau is not None:
            if new.boundary != "constant" or new.side_ == "both":
                raise InvalidParameterError(
                    "tau sets a one-sided constant boundary: pass boundary='constant' and side "
                    f"'lower' or 'upper' (got boundary={new.boundary!r}, side={new.side_!r})."
                )
            new.boundary_ = constant_boundary_at(new.n_terms_, float(tau), new.side_)
        elif z is not None and new.boundary in _scaled_names():
            new.boundary_ = new.boundary_family(new.boundary).boundary(z)
        else:
            new.boundary_ = new._make_boundary()
        return new

    def scale_outcomes(self, X, family: str | None = None, grid=None) -> GridOutcomes:
        """Early decisions and terms evaluated on ``X`` for every scale ``z`` of a family.

        The whole tradeoff of a family in one pass (walks computed a chunk of rows at a time):
        ``disagreement_rates()`` and ``evaluated_fractions()`` per scale of ``grid`` (default
        :func:`attentive.grid.default_grid`). This is what calibration scans, and what an
        operating-point table is made of (:func:`attentive.operating_points`).
        """
        check_is_fitted(self)
        fam = self.boundary_family(family)
        return walk_grid_outcomes(self._walk_of(fam.name), self._check_X(X), [fam], grid)[0]

    def oracle_n_evaluated(self, X) -> np.ndarray:
        """Terms an all-knowing rule evaluates per example: one past the last position where the
        running estimate ``S_t + M_t`` (pooled ``M_t``) is on the other side of θ_S than the
        final score (see :func:`attentive.grid.oracle_stop_positions`). A floor for the
        evaluated fraction of causal rules; not a rule itself."""
        check_is_fitted(self)
        Xc = self._check_X(X)
        Xp = self.walk_.prepare(Xc)
        M = self.walk_statistics_.pooled.remainder_mean
        parts = [
            oracle_stop_positions(
                self.walk_.partial_scores(Xp[rows], prepared=True), self.theta_s_, M
            )
            for rows in row_chunks(Xp.shape[0], self.n_terms_)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def decision_function(self, X) -> np.ndarray:
        """``f(x)`` if evaluated to the end, else the rule's score at the stop (``stopped_score``),
        always on the predicted side of ``threshold_`` (the threshold of the last fit)."""
        return self.evaluate(X).decision

    def predict(self, X) -> np.ndarray:
        """Labels from ``classes_``: the side crossed if stopped, else ``f(x) ≥ θ``."""
        return self._evaluate(X).labels

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A sketch asked for by size needs dense rows (the Nyström sketch projects them); else
        # the rows go to the model (a pipeline's first step), which says what it takes.
        tags.input_tags.sparse = (
            isinstance(self.sketch, str) and get_tags(self.estimator).input_tags.sparse
        )
        tags.classifier_tags.multi_class = False
        return tags
