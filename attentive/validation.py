"""Every check of a user-facing parameter, in one place (each error says what was expected and
what was received). The estimator, the boundaries, calibration, the evaluator and the dashboard
all validate through these functions."""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np

from attentive.errors import InvalidParameterError

__all__ = [
    "PATHS",
    "PRECISIONS",
    "SIDES",
    "STOPPED_SCORES",
    "check_alpha",
    "check_calibration_size",
    "check_choice",
    "check_delta",
    "check_path",
    "check_precision",
    "check_side",
    "check_size",
    "check_stopped_score",
    "check_threshold",
    "expected_feature_names",
    "file_in_the_way",
]

SIDES = ("lower", "upper", "both")
STOPPED_SCORES = ("estimate", "boundary")
# "mixed" is the name an earlier release gave "single".
PRECISIONS = ("auto", "single", "double", "mixed")
#: What an evaluation may do: walk the rule, evaluate every term, or choose per call.
PATHS = ("auto", "walk", "full")


def check_choice(name: str, value, choices) -> str:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise InvalidParameterError(f"{name} must be one of {tuple(choices)}, got {value!r}.")
    return value


def _probability(name: str, value) -> float:
    """``value`` as a float strictly between 0 and 1: a real number (not a string, whose
    number would be read in one place and compared as text in another, nor a bool)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()  # a 0-d array of a number, as numpy reductions give
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(f"{name} must be a number in (0, 1), got {value!r}.")
    v = float(value)
    if not (0.0 < v < 1.0):  # also rejects NaN
        raise InvalidParameterError(f"{name} must be strictly between 0 and 1, got {value!r}.")
    return v


def check_delta(delta) -> float:
    """δ must be a finite number strictly between 0 and 1."""
    return _probability("delta", delta)


def check_alpha(alpha) -> float:
    """α (the calibration's allowed failure probability) must lie strictly between 0 and 1."""
    return _probability("alpha", alpha)


def check_side(side) -> str:
    return check_choice("side", side, SIDES)


def check_stopped_score(stopped_score) -> str:
    return check_choice("stopped_score", stopped_score, STOPPED_SCORES)


def check_threshold(threshold) -> float:
    """θ must be a finite number."""
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, numbers.Real)
        or not math.isfinite(threshold)
    ):
        raise InvalidParameterError(f"threshold must be a finite number, got {threshold!r}.")
    return float(threshold)


def check_calibration_size(size) -> None:
    """``"auto"``, a fraction in (0, 1) or a number of examples ≥ 1."""
    if isinstance(size, str) and size == "auto":
        return
    if isinstance(size, bool):
        raise InvalidParameterError(f"calibration_size must be a number, got {size!r}.")
    if isinstance(size, numbers.Integral):
        if size < 1:
            raise InvalidParameterError(f"calibration_size must be ≥ 1 examples, got {size}.")
        return
    if not isinstance(size, numbers.Real) or not 0.0 < size < 1.0:
        raise InvalidParameterError(
            "calibration_size must be 'auto', a fraction in (0, 1) or a number of examples, got "
            f"{size!r}."
        )


def check_size(value, name: str, *, negative: bool = False) -> int | None:
    """A positive integer option, or None (automatic). With ``negative``, a thread count as
    scikit-learn reads ``n_jobs``: any integer but 0 (``-1`` every usable core)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        ok = False
    else:
        ok = value != 0 if negative else value >= 1
    if not ok:
        expected = (
            "a whole number of threads other than 0 (-1 for every usable core) or None"
            if negative
            else "a positive integer or None"
        )
        raise InvalidParameterError(f"{name} must be {expected}, got {value!r}.")
    return int(value)


def check_path(value) -> str:
    """The evaluator's path option."""
    if value in PATHS:
        return value
    raise InvalidParameterError(
        f"path must be one of {', '.join(map(repr, PATHS))}, got {value!r}."
    )


def check_precision(value) -> str | None:
    """The evaluator's precision option, or None (the default)."""
    if value is None or value in PRECISIONS:
        return value
    raise InvalidParameterError(
        f"precision must be one of {', '.join(map(repr, PRECISIONS))} or None, got {value!r}."
    )


def file_in_the_way(path: str | Path) -> Path | None:
    """The file that keeps a folder from being made at ``path``: ``path`` itself or the nearest
    of its existing parents, where that is not a directory (None: nothing in the way)."""
    for where in (Path(path), *Path(path).parents):
        if where.exists():
            return None if where.is_dir() else where
    return None


def expected_feature_names(model) -> tuple[str, ...] | None:
    """The column names a fitted model reads a frame or a file's header by: its
    ``feature_names_in_``, or, for an ``AttentiveClassifier`` fitted on arrays around a frozen
    model fitted on a frame, that model's names (``_model_names``: the classifier has none of its
    own, and the model reads columns by position). None: by position only."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        names = getattr(model, "_model_names", None)
    return None if names is None else tuple(str(name) for name in names)
