"""The dashboard's controls and outputs as parameters, with their labels and help: what the
sidebar's widgets are generated from and what the URL holds. The behaviour is
:class:`attentive.app.state.DashboardState`'s; this module only declares.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import param

from attentive.app import rules
from attentive.app.models import CALIBRATION_DELTA

__all__ = [
    "DEFAULT_DATASET",
    "MODEL_INPUTS",
    "RULE_INPUTS",
    "TRAINING",
    "UPLOAD_PREFIX",
    "URL_PARAMETERS",
    "Controls",
    "Snapped",
    "registry_names",
]

DEFAULT_DATASET = "mnist-t10k-2v5"
UPLOAD_PREFIX = "file: "  # an uploaded file's name among the datasets
# The controls that make a new walk (a model build), those of the rule, and those in the URL.
# The sidebar's words over the model file input (the hint for "upload" without a file names it).
MODEL_UPLOAD_LABEL = "Or upload a skops model file"
MODEL_INPUTS = ("dataset", "positive_class", "model_source", "kernel", "C", "gamma")
MODEL_INPUTS += ("model_file", "centering", "seed")
TRAINING = ("kernel", "C", "gamma")  # what an uploaded model ignores
RULE_INPUTS = ("boundary", "side", "delta", "z", "alpha", "theta", "budget")
URL_PARAMETERS = ("dataset", "side", "centering", "kernel", "C", "gamma", "boundary", "delta")
URL_PARAMETERS += ("z", "alpha", "theta", "budget", "seed", "n_trajectories", "target")
URL_PARAMETERS += ("time_budget", "model_source")


class Snapped(param.Number):
    """A number kept on a grid: ``snap`` is applied to every value inside the bounds."""

    __slots__ = ["snap"]

    def __init__(self, default=None, *, snap: Callable[[float], float], **params):
        self.snap = snap
        super().__init__(default=default, **params)

    def __set__(self, obj, val):
        lo, hi = self.bounds or (None, None)
        if isinstance(val, float | int) and not isinstance(val, bool) and math.isfinite(val):
            if (lo is None or val >= lo) and (hi is None or val <= hi):
                val = self.snap(val)
        super().__set__(obj, val)


def registry_names() -> list[str]:
    """The registered datasets' names."""
    from attentive.data import list_datasets

    return [d.name for d in list_datasets()]


class Controls(param.Parameterized):
    """Every control of the dashboard (labels and help text are the widgets') and its outputs
    (precedence −1: no widget)."""

    # -- data and model --------------------------------------------------------------------
    dataset = param.Selector(default=DEFAULT_DATASET, objects=[DEFAULT_DATASET], label="Dataset", doc="The binary problem: a registered dataset or a file you uploaded (its test part is evaluated). Datasets marked 'needs internet' are downloaded once.")  # fmt: skip
    positive_class = param.String(default="", label="Positive class (uploads)", doc="For an uploaded file with more than two labels: the label that is the positive class.")  # fmt: skip
    model_source = param.Selector(default="train", objects=["train", "upload"], label="Model", doc="Train a model on the fit part of the training data (the rest is held out to calibrate), or use an uploaded skops model file (an exported AttentiveClassifier too).")  # fmt: skip
    kernel = param.Selector(default="rbf", objects=["rbf"], label="Kernel", doc="Model to train: SVC kernel (each support vector is a term) or a linear model (each feature is a term).")  # fmt: skip
    C = param.Number(default=1.0, bounds=(1e-6, 1e6), inclusive_bounds=(False, True), label="C", doc="SVM regularisation: larger C fits the training data more closely (more or fewer support vectors).")  # fmt: skip
    gamma = param.String(default="0.05", label="gamma", doc="RBF/poly/sigmoid kernel width: 'scale', 'auto' or a positive number.")  # fmt: skip
    model_file = param.String(default="", precedence=-1, doc="Content hash of the uploaded model in use.")  # fmt: skip
    centering = param.Selector(default="positive", objects=["positive", "all", "none"], label="Centering", doc="Trend removal: subtract each term's mean over the positive training examples (the paper), all of them, or nothing. It moves the constant and finite-population rules only: the curved, regression, heteroscedastic and mass-regression rules estimate the rest of the walk from reference walks, which the centring cancels out of.")  # fmt: skip
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), label="Permutation seed", doc="Seeds the random order in which terms are evaluated.")  # fmt: skip

    # -- stopping rule ---------------------------------------------------------------------
    boundary = param.Selector(default="calibrated", objects=["calibrated"], label="Rule", doc="constant: Constant-STST threshold τ (the paper); curved: Gaussian curtailment; finite-population, regression and heteroscedastic: the other families on S_t; mass-regression: a regression of S_n on S_t and the walk's running mass A_t = Σ|w|·h (beyond the paper), so it stops on that estimate of S_n (the walks plot draws it) rather than on S_t; sketched-<family>: a cheap sketch of the whole score first (a Nyström sketch of the RBF kernel, fitted on demand), then that family's walk over what the sketch got wrong, starting at the sketch's score (beyond the paper); budget: evaluate exactly B terms; calibrated: the cheapest family whose scale, chosen on the examples held out, guarantees disagreement ≤ δ with probability ≥ 1 − α.")  # fmt: skip
    side = param.Selector(default="both", objects=["lower", "upper", "both"], label="Side", doc="lower: stop walks falling below τ and predict negative (the paper); upper: stop rising walks and predict positive; both: either.")  # fmt: skip
    delta = Snapped(default=CALIBRATION_DELTA, snap=rules.snap_delta, bounds=rules.DELTA_RANGE, label="δ (target error)", doc="For a family: the stop-error the boundary is built for (z = Φ⁻¹(1 − δ)); smaller δ stops later and errs less. For calibrated: the disagreement rate with the full evaluation that is guaranteed (with probability ≥ 1 − α).")  # fmt: skip
    z = Snapped(default=rules.z_of(CALIBRATION_DELTA), snap=rules.snap_z, bounds=(-6.0, 6.0), label="z (scale)", precedence=-1, doc="A family's scale: Φ⁻¹(1 − δ) when δ moves, or the exact z of a rule picked from the table.")  # fmt: skip
    alpha = param.Number(default=rules.DEFAULT_ALPHA, bounds=(1e-3, 0.5), label="α (calibration failure probability)", doc="Calibrated rule only: the guarantee 'disagreement ≤ δ' may fail with probability at most α (over the draw of the calibration examples).")  # fmt: skip
    theta = Snapped(default=0.0, snap=lambda v: round(v, 6), bounds=(-1.0, 1.0), label="θ (prediction threshold)", doc="Predict positive when f(x) ≥ θ, on the decision_function scale (0 is the model's own rule).")  # fmt: skip
    budget = param.Number(default=0.5, bounds=(1e-4, 1.0), label="Budget B (fraction of terms)", doc="Budgeted baseline: evaluate exactly this fraction of the terms and extrapolate.")  # fmt: skip
    n_trajectories = param.Integer(default=60, bounds=(1, 500), label="Trajectories drawn", doc="How many test examples' partial-score walks the walks plot draws.")  # fmt: skip
    target = param.Number(default=None, allow_None=True, bounds=(0.0, 0.5), label="Cheapest rule with disagreement ≤", doc="Pick the cheapest rule (every family and scale) whose disagreement with the full evaluation on the test set is at most this (a rate: 0.01 is 1 %). Applied on Enter; cleared when the rule moves.")  # fmt: skip
    time_budget = param.Number(default=None, allow_None=True, bounds=(0.0, None), inclusive_bounds=(False, True), label="Lowest disagreement within (µs per example)", doc="Pick the rule with the lowest disagreement on the test set among those whose measured time per test example is at most this many microseconds. Applied on Enter; cleared when the rule moves.")  # fmt: skip

    # -- outputs ---------------------------------------------------------------------------
    rule = param.ClassSelector(class_=rules.Rule, precedence=-1, doc="The rule's controls as one.")
    walks = param.Parameter(default=None, precedence=-1, doc="models.Walks in use.")
    tradeoff = param.Parameter(default=None, precedence=-1, doc="rules.Tradeoff, or None.")
    times = param.Parameter(default=None, precedence=-1, doc="rules.rule_times, or None.")
    measured = param.Parameter(default=None, precedence=-1, doc="rules.Measurement or None.")
    sketch = param.Parameter(default=None, precedence=-1, doc="sketches.Sketch of the walk in use (or why it has none), None: not fitted.")  # fmt: skip
    sketching = param.Parameter(default=None, precedence=-1, doc="The Walks whose sketch is being fitted, or None.")  # fmt: skip
    busy = param.Boolean(default=False, precedence=-1)
    elapsed = param.Number(default=0.0, precedence=-1)
    last_error = param.String(default="", precedence=-1)
    error_level = param.Selector(
        default="error", objects=["error", "warning", "info"], precedence=-1
    )
    n_errors = param.Integer(default=0, precedence=-1)
    focus = param.Integer(default=-1, precedence=-1, doc="The test example shown in focus.")

    def _set_choices(self) -> None:
        """The choices known only at run time: the dataset registry, model kinds, rule kinds."""
        from attentive.models import KINDS

        self.param.dataset.objects = registry_names()
        self.param.kernel.objects = list(KINDS)
        self.param.boundary.objects = rules.kinds()
