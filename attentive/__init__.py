"""attentive: focus of attention for linear predictors (Pelossof & Ying).

Evaluate a linear predictor's score one term at a time and stop as soon as the answer is obvious.
The core is numpy/scipy/scikit-learn only; the dashboard lives in :mod:`attentive.app`.
"""

from attentive.boundaries import (
    Boundary,
    ReferenceStats,
    budget_boundary,
    constant_boundary,
    constant_threshold,
    crossing_probability,
    curved_boundary,
    full_boundary,
    reference_statistics,
)
from attentive.calibration import CalibrationReport
from attentive.errors import (
    AttentiveError,
    DataError,
    DownloadError,
    FeatureMismatchError,
    InvalidParameterError,
    UnsupportedModelError,
    UntrustedModelError,
)
from attentive.estimator import AttentiveClassifier
from attentive.evaluation import Evaluation, apply_boundary, evaluate
from attentive.families import BoundaryFamily, family_names, make_family
from attentive.grid import GridOutcomes, default_grid
from attentive.metrics import (
    AttentiveSweep,
    attentive_tradeoff,
    budgeted_tradeoff,
    disagreement_rate,
    mean_evaluated_fraction,
    precision_recall,
    stop_error,
)
from attentive.operating_points import cheapest_operating_point, operating_points
from attentive.terms import SUPPORTED, TermDecomposition, decompose
from attentive.walk import Walk, make_walk

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED",
    "AttentiveClassifier",
    "AttentiveError",
    "AttentiveSweep",
    "Boundary",
    "BoundaryFamily",
    "CalibrationReport",
    "DataError",
    "DownloadError",
    "Evaluation",
    "FeatureMismatchError",
    "GridOutcomes",
    "InvalidParameterError",
    "ReferenceStats",
    "TermDecomposition",
    "UnsupportedModelError",
    "UntrustedModelError",
    "Walk",
    "apply_boundary",
    "attentive_tradeoff",
    "budget_boundary",
    "budgeted_tradeoff",
    "cheapest_operating_point",
    "constant_boundary",
    "constant_threshold",
    "crossing_probability",
    "curved_boundary",
    "decompose",
    "default_grid",
    "disagreement_rate",
    "evaluate",
    "family_names",
    "full_boundary",
    "make_family",
    "make_walk",
    "mean_evaluated_fraction",
    "operating_points",
    "precision_recall",
    "reference_statistics",
    "stop_error",
]
