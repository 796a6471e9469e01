"""The dashboard's state: one :class:`param.Parameterized` object per session.

Its parameters are the controls (the views generate their widgets from them) and its output is
:attr:`DashboardState.figures`, plain data (arrays and DataFrames) that the views only draw. It
calls the library only through :mod:`attentive.app.models` (data, model, the fitted classifier)
and :mod:`attentive.app.rules` (every rule through the classifier's public API); exports live in
:mod:`attentive.app.exports`. Tests drive it without a browser.

Two speeds of change:

* **model inputs** (dataset, model, centering, permutation seed) rebuild the cached walk: the test
  partial-score matrix ``S``. This may train a model, so it goes through :attr:`executor`, which runs
  it inline by default and in a background thread in the served app;
* **fast controls** (boundary, side, δ, α, θ, budget, trajectories) recompute the figure data
  from the cached outcomes, synchronously; then the evaluator itself is timed on the test set
  (:func:`attentive.app.rules.measure`) through :attr:`measure_executor` (a thread when served).

Every rule's tradeoff (:func:`attentive.app.rules.tradeoff`: every family at every scale, the
slow part of a new walk, side or θ) only feeds the tradeoff plot and the table of operating
points. With an inline :attr:`tradeoff_executor` (the default: tests, notebooks) it is part of
the figure data; otherwise (served) the figure data leave it None when it is not cached, the
numbers are shown, and the executor computes it and fills it in. ``hold_background=True`` holds
the timing and tradeoff jobs until :meth:`start_background` gives them an executor: the served
first page computes its numbers inline and sends them before either runs.

Every error a user can cause (a bad file, a failed download, an untrusted model, a value out of
range) is recorded in :attr:`last_error` (and counted in :attr:`n_errors`, which the dashboard
turns into a notification) while the previous state stays: the offending control is put back.

Why one file: the class is one ``param.Parameterized`` whose parts share its private bookkeeping —
uploads, model jobs and the cheapest-point control all go through :meth:`_submit` (the job
generation counter that drops superseded results), :meth:`_revert` (putting controls back without
triggering another build) and :attr:`_applied`. Split into mixins, each part would reach into the
others' attributes; about half the file is the parameters' declarations and their user-facing
``doc`` text, which belong beside the class. The computations are elsewhere (``models``,
``rules``, ``figures``, ``exports``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import param

from attentive.app import rules
from attentive.app.figures import Figures, compute_figures, tradeoff_error_span
from attentive.app.models import DataSource, ModelSource, Walks, walks
from attentive.app.rules import DEFAULT_ALPHA, DELTA_RANGE
from attentive.data.reader import CHOOSE_BASE
from attentive.errors import (
    AttentiveError,
    DataError,
    DownloadError,
    InvalidParameterError,
    UntrustedModelError,
)

__all__ = ["DEFAULT_DATASET", "DashboardState", "run_inline", "user_message"]

log = logging.getLogger(__name__)

DEFAULT_DATASET = "mnist-t10k-2v5"
UPLOAD_PREFIX = "file: "
# What to do with an uploaded LIBSVM file whose index base the shared reader cannot tell.
UPLOAD_BASE_HINT = (
    "The dashboard cannot be told which: upload the rows as CSV with a header instead, or score "
    "the file with python -m attentive score --zero-based or --one-based."
)
MODEL_INPUTS = (
    "dataset",
    "positive_class",
    "model_source",
    "kernel",
    "C",
    "gamma",
    "centering",
    "seed",
)
FAST_CONTROLS = (
    "boundary",
    "side",
    "delta",
    "alpha",
    "theta",
    "budget",
    "n_trajectories",
    "scale",
)
URL_PARAMETERS = (
    "dataset",
    "side",
    "centering",
    "kernel",
    "C",
    "gamma",
    "boundary",
    "delta",
    "alpha",
    "theta",
    "budget",
    "seed",
    "n_trajectories",
)
MAX_SEED = 2**31 - 1


def run_inline(job: Callable[[], Any], done: Callable[[Any], None], fail: Callable) -> None:
    """The default executor: run ``job`` now and hand its result (or exception) on."""
    try:
        result = job()
    except Exception as exc:  # every failure is reported, none may take the session down
        fail(exc)
    else:
        done(result)


def user_message(exc: BaseException) -> str:
    """The library's message, worded for the dashboard where the dashboard names things otherwise.

    The library's own message stays as it is (it speaks of ``positive_class=...`` and lists every
    trusted type, which suits a script); the dashboard names its field instead, and shows only the
    refused types so that the notification stays short.
    """
    msg = str(exc)
    if isinstance(exc, DataError):
        label = DashboardState.param.positive_class.label
        msg = msg.replace("(positive_class=...)", f"in the '{label}' field")
        # The shared reader names the command line's options; the dashboard has none.
        msg = msg.replace(f"Say which: {CHOOSE_BASE}", UPLOAD_BASE_HINT)
    if isinstance(exc, DownloadError):
        # The library lists every address it tried with its network error; a notification keeps
        # what the user can act on: what failed and how to install the file by hand.
        lines = [line for line in msg.splitlines() if line.strip()]
        if len(lines) > 2:
            head = lines[0].rstrip(":").removesuffix("; tried").rstrip(";")
            tried = " ".join(lines[1:-1]).lower()
            corrupt = "md5" in tried or "checksum" in tried or "corrupt" in tried
            why = "a mirror sent a damaged file" if corrupt else "this dataset needs internet"
            msg = f"{head} ({why}). {lines[-1]}"
    if isinstance(exc, UntrustedModelError):
        head, sep, _ = msg.partition(". Trusted beyond")
        if sep:
            msg = f"{head}. See docs/robustness.md for the types attentive trusts."
    return msg


def _registry_names() -> list[str]:
    from attentive.data import list_datasets

    return [d.name for d in list_datasets()]


def _kinds() -> list[str]:
    from attentive.models import KINDS

    return list(KINDS)


def data_source(name: str, positive_class: str, uploads: dict[str, tuple[bytes, str]]):
    """The :class:`DataSource` of a registry name or an uploaded file's entry in ``uploads``."""
    if name in uploads:
        data, filename = uploads[name]
        return DataSource(name, data, filename, positive_class.strip() or None)
    return DataSource(name)


def _parse_gamma(gamma: str) -> str | float:
    text = str(gamma).strip()
    if text in ("scale", "auto"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise InvalidParameterError(
            f"gamma must be 'scale', 'auto' or a positive number, got {gamma!r}."
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"gamma must be a positive number, got {gamma!r}.")
    return value


class DashboardState(param.Parameterized):
    """Controls and figure data of one dashboard session.

    Set parameters to move controls (:meth:`set_controls` validates and reports); read
    :attr:`figures` for what the views draw and :attr:`measured` for the evaluator's timing.
    Uploads go through :meth:`upload_dataset` and :meth:`upload_model`; exports through
    :mod:`attentive.app.exports`.
    """

    # -- data and model --------------------------------------------------------------------
    dataset = param.Selector(
        default=DEFAULT_DATASET,
        objects=[DEFAULT_DATASET],
        label="Dataset",
        doc="The binary problem: a registered dataset or a file you uploaded (its test part is evaluated). Datasets marked 'needs internet' are downloaded once.",
    )
    positive_class = param.String(
        default="",
        label="Positive class (uploads)",
        doc="For an uploaded file with more than two labels: the label that is the positive class.",
    )
    model_source = param.Selector(
        default="train",
        objects=["train", "upload"],
        label="Model",
        doc="Train an SVM on 70% of the training part (the other 30% calibrate), or use an uploaded skops model file.",
    )
    kernel = param.Selector(
        default="rbf",
        objects=["rbf"],
        label="Kernel",
        doc="Model to train: SVC kernel (each support vector is a term) or a linear model (each feature is a term).",
    )
    C = param.Number(
        default=1.0,
        bounds=(1e-6, 1e6),
        inclusive_bounds=(False, True),
        label="C",
        doc="SVM regularisation: larger C fits the training data more closely (more or fewer support vectors).",
    )
    gamma = param.String(
        default="0.05",
        label="gamma",
        doc="RBF/poly/sigmoid kernel width: 'scale', 'auto' or a positive number.",
    )
    centering = param.Selector(
        default="positive",
        objects=["positive", "all", "none"],
        label="Centering",
        doc="Trend removal: subtract each term's mean over the positive training examples (the paper), all of them, or nothing.",
    )
    seed = param.Integer(
        default=0,
        bounds=(0, MAX_SEED),
        label="Permutation seed",
        doc="Seeds the random order in which terms are evaluated.",
    )

    # -- stopping rule ---------------------------------------------------------------------
    boundary = param.Selector(
        default="calibrated",
        objects=["calibrated"],
        label="Rule",
        doc="constant: Constant-STST threshold τ (the paper); curved: Gaussian curtailment; finite-population, regression and heteroscedastic: the other families on S_t; mass-regression: a regression of S_n on S_t and the walk's running mass A_t = Σ|w|·h (beyond the paper), so it stops on the statistic S_t + κ_t·A_t rather than on S_t; budget: evaluate exactly B terms; calibrated: the cheapest family whose scale, chosen on the 30% held out, guarantees disagreement ≤ δ with probability ≥ 1 − α.",
    )
    side = param.Selector(
        default="both",
        objects=["lower", "upper", "both"],
        label="Side",
        doc="lower: stop walks falling below τ and predict negative (the paper); upper: stop rising walks and predict positive; both: either.",
    )
    delta = param.Number(
        default=0.01,
        bounds=DELTA_RANGE,
        label="δ (target error)",
        doc="For a family: the stop-error the boundary is built for (z = Φ⁻¹(1 − δ)); smaller δ stops later and errs less. For calibrated: the disagreement rate with the full evaluation that is guaranteed (with probability ≥ 1 − α).",
    )
    alpha = param.Number(
        default=DEFAULT_ALPHA,
        bounds=(1e-3, 0.5),
        label="α (calibration failure probability)",
        doc="Calibrated rule only: the guarantee 'disagreement ≤ δ' may fail with probability at most α (over the draw of the calibration examples).",
    )
    theta = param.Number(
        default=0.0,
        bounds=(-1.0, 1.0),
        label="θ (prediction threshold)",
        doc="Predict positive when f(x) ≥ θ, on the decision_function scale (0 is the model's own rule).",
    )
    budget = param.Number(
        default=0.5,
        bounds=(1e-4, 1.0),
        label="Budget B (fraction of terms)",
        doc="Budgeted baseline: evaluate exactly this fraction of the terms and extrapolate.",
    )
    n_trajectories = param.Integer(
        default=60,
        bounds=(1, 500),
        label="Trajectories drawn",
        doc="How many test examples' partial-score walks the walks plot draws.",
    )
    target = param.Number(
        default=0.01,
        bounds=(0.0, 0.5),
        label="Target disagreement",
        doc="Pick the cheapest rule (every family and scale) whose disagreement with the full evaluation on the test set is at most this.",
        precedence=0.5,
    )

    # -- outputs ---------------------------------------------------------------------------
    figures = param.Parameter(default=None, precedence=-1, doc="Figure data (Figures).")
    measured = param.Parameter(default=None, precedence=-1, doc="rules.Measurement or None.")
    class_names = param.Tuple(default=("negative", "positive"), precedence=-1)
    dataset_info = param.String(default="", precedence=-1)
    model_info = param.String(default="", precedence=-1)
    busy = param.Boolean(default=False, precedence=-1)
    status = param.String(default="", precedence=-1)
    elapsed = param.Number(default=0.0, precedence=-1)
    last_error = param.String(default="", precedence=-1)
    n_errors = param.Integer(default=0, precedence=-1)
    focus = param.Integer(default=-1, precedence=-1, doc="The test example shown in focus.")
    scale = param.Number(
        default=None, allow_None=True, precedence=-1, doc="A family's scale z chosen directly."
    )

    def __init__(
        self, executor: Callable | None = None, *, hold_background: bool = False, **params
    ):
        self._uploads: dict[str, tuple[bytes, str]] = {}
        self._model_upload: tuple[bytes, str] | None = None
        self._pending_upload: tuple[bytes, str] | None = None
        self._walks: Walks | None = None
        self._applied: dict[str, Any] = {}
        self._fast_applied: dict[str, Any] = {}
        self._requested: dict[str, Any] = {}
        self._explicit: set[str] = set()  # model inputs given together with a new dataset
        self._reverting = False
        self._generation = 0
        self._measure_generation = 0
        self.executor = executor or run_inline
        # None: hold the jobs until start_background() (see the module's docstring).
        self.measure_executor = None if hold_background else (executor or run_inline)
        self.tradeoff_executor = None if hold_background else (executor or run_inline)
        self._held: list[tuple[str, Callable, Callable, Callable]] = []
        super().__init__()
        self.param.dataset.objects = _registry_names()
        self.param.kernel.objects = _kinds()
        self.param.boundary.objects = rules.kinds()
        self._model_inputs_changed()
        if params:
            self.set_controls(**params)

    # -- helpers -----------------------------------------------------------------------------
    @property
    def walks(self) -> Walks | None:
        """The cached walk of the current dataset, model, centering and seed."""
        return self._walks

    @property
    def building(self) -> bool:
        """Whether a walk for new model inputs is being built (in the background when served)."""
        return bool(self._requested)

    @property
    def rule(self) -> rules.Rule:
        """The current rule's controls."""
        return rules.Rule(
            kind=self.boundary,
            side=self.side,
            delta=self.delta,
            theta=self.theta,
            budget=self.budget,
            alpha=self.alpha,
            z=self.scale if self.boundary in rules.family_names() else None,
        )

    def start_background(
        self, measure: Callable | None = None, tradeoff: Callable | None = None
    ) -> None:
        """Give the evaluator's timing and / or the tradeoff their executors and run the jobs
        held for them."""
        if measure is not None:
            self.measure_executor = measure
        if tradeoff is not None:
            self.tradeoff_executor = tradeoff
        held, self._held = self._held, []
        for kind, job, done, fail in held:
            self._background(kind, job, done, fail)

    def _background(self, kind: str, job: Callable, done: Callable, fail: Callable) -> None:
        executor = self.measure_executor if kind == "measure" else self.tradeoff_executor
        if executor is None:
            self._held.append((kind, job, done, fail))
        else:
            executor(job, done, fail)

    @property
    def defers_tradeoff(self) -> bool:
        """Whether a tradeoff that is not cached is computed after the numbers are shown."""
        return self.tradeoff_executor is not run_inline

    def report(self, exc: BaseException | str) -> None:
        """Record a user-facing error (the dashboard shows it as a notification)."""
        msg = user_message(exc) if isinstance(exc, BaseException) else str(exc)
        if isinstance(exc, BaseException) and not isinstance(exc, AttentiveError | ValueError):
            log.exception("unexpected error in the dashboard", exc_info=exc)
            msg = f"Unexpected error ({type(exc).__name__}): {exc}"
        self.last_error = msg
        self.n_errors += 1

    def set_controls(self, **values) -> bool:
        """Set controls (the one place where control values are validated); a value a control
        refuses is reported in the dashboard's words and left unchanged. The model inputs among
        ``values`` are applied together (one rebuild of the walk), then the other controls one by
        one (checked against the new model's ranges when it is built at once).

        Returns True when every value was accepted.
        """
        ok = True
        known = {}
        for name, value in values.items():
            if name not in self.param or self.param[name].precedence == -1:
                self.report(InvalidParameterError(f"unknown control {name!r}."))
                ok = False
            else:
                known[name] = value
        model = {}
        for name in [n for n in known if n in MODEL_INPUTS]:
            try:
                model[name] = self._coerce(name, known[name])
            except (ValueError, TypeError) as exc:
                self.report(InvalidParameterError(f"{self.param[name].label}: {_plain(exc)}"))
                ok = False
        if model:
            # Given together with a new dataset, kernel, C or gamma win over its preset.
            self._explicit = set(model)
            try:
                self.param.update(model)
            finally:
                self._explicit = set()
        for name in [n for n in known if n not in MODEL_INPUTS]:
            try:
                self.param.update({name: self._coerce(name, known[name])})
            except (ValueError, TypeError) as exc:
                self.report(InvalidParameterError(f"{self.param[name].label}: {_plain(exc)}"))
                ok = False
        return ok

    def _coerce(self, name: str, value):
        p = self.param[name]
        if isinstance(p, param.Integer) and not isinstance(value, int | np.integer):
            try:
                f = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"expected a whole number, got {value!r}") from None
            if not math.isfinite(f) or f != int(f):
                raise ValueError(f"expected a whole number, got {value!r}")
            value = int(f)
        elif isinstance(p, param.Number) and not isinstance(p, param.Integer):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"expected a number, got {value!r}") from None
            if not math.isfinite(value):
                raise ValueError(f"expected a finite number, got {value!r}")
        if isinstance(p, param.Number) and p.bounds is not None:
            lo, hi = p.bounds
            low_ok = value > lo if p.inclusive_bounds[0] is False else value >= lo
            if (lo is not None and not low_ok) or (hi is not None and value > hi):
                # Whole numbers in full (a seed's bound is 2,147,483,647, not 2.14748e+09).
                fmt = "{:,}" if isinstance(p, param.Integer) else "{:,.6g}"
                lo_s, hi_s, got = (fmt.format(v) for v in (lo, hi, value))
                raise ValueError(f"must be between {lo_s} and {hi_s}, got {got}")
        if name == "delta":
            value = rules.snap_delta(value)
        if name == "theta":
            value = round(value, 6)  # the slider's resolution; no 0.15000000000000013 in the URL
        if (
            isinstance(p, param.String)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            value = f"{value:.12g}"  # a URL's gamma=0.1 arrives as a number
        if name == "gamma":
            _parse_gamma(value)
        if isinstance(p, param.Selector) and value not in p.objects:
            raise ValueError(f"must be one of {', '.join(map(str, p.objects))}, got {value!r}")
        return value

    def _snapshot(self, names) -> dict[str, Any]:
        return {n: getattr(self, n) for n in names}

    def _revert(self, snapshot: dict[str, Any]) -> None:
        changed = {k: v for k, v in snapshot.items() if k in self.param and getattr(self, k) != v}
        if not changed:
            return
        self._reverting = True
        try:
            self.param.update(changed)
        finally:
            self._reverting = False

    # -- data and model: rebuild the walk ---------------------------------------------------
    def _model_inputs(self) -> dict[str, Any]:
        return self._snapshot(MODEL_INPUTS)

    def _model_job(self, inputs: dict[str, Any]) -> Callable[[], Walks]:
        """A self-contained job (safe to run in a thread) that builds the walk for ``inputs``.

        It works on copies of the session's uploads, never on the live session.
        """
        uploads = dict(self._uploads)
        model_upload = self._model_upload
        with_tradeoff = not self.defers_tradeoff

        def job() -> Walks:
            data = data_source(inputs["dataset"], inputs["positive_class"], uploads)
            if inputs["model_source"] == "upload":
                if model_upload is None:
                    raise InvalidParameterError(
                        "no model file uploaded yet; upload a skops file or choose 'train'."
                    )
                model = ModelSource(data=model_upload[0])
            else:
                model = ModelSource(
                    inputs["kernel"], float(inputs["C"]), _parse_gamma(inputs["gamma"])
                )
            built = walks(data, model, inputs["centering"], int(inputs["seed"]))
            if with_tradeoff:
                # The first rule's tables, off the event loop as well.
                rules.tradeoff(built, self.side, float(self.theta))
            return built

        return job

    @param.depends(*MODEL_INPUTS, watch=True)
    def _model_inputs_changed(self) -> None:
        if self._reverting:
            return
        if self.model_source == "upload" and self._model_upload is None:
            self.report(
                InvalidParameterError("no model file uploaded yet; upload a skops file first.")
            )
            self._revert({"model_source": "train"})
            return
        new_dataset = self.dataset != self._applied.get("dataset", DEFAULT_DATASET)
        if new_dataset and self.dataset in _registry_names():
            self._preset_for_dataset()
        self._submit(self._model_inputs())

    def _preset_for_dataset(self) -> None:
        """A registry dataset brings its training preset (kernel, C, gamma)."""
        from attentive.models import default_model_params

        preset = default_model_params(self.dataset)
        values = {"kernel": preset["kind"], "C": float(preset["C"])}
        if "gamma" in preset:
            values["gamma"] = str(preset["gamma"])
        self._revert({k: v for k, v in values.items() if k not in self._explicit})

    def _submit(
        self,
        inputs: dict[str, Any],
        accepted: Callable[[], None] | None = None,
        refused: Callable[[], None] | None = None,
    ) -> None:
        """Build the walk for ``inputs`` through the executor; apply it unless superseded."""
        self._generation += 1
        generation = self._generation
        self._requested = inputs

        def done(built: Walks) -> None:
            if generation != self._generation:
                return  # a newer request superseded this one
            self._requested = {}
            if accepted is not None:
                accepted()
            self._apply_walks(built, inputs)

        def fail(exc: BaseException) -> None:
            if generation != self._generation:
                return
            self._requested = {}
            self.report(exc)
            if refused is not None:
                refused()
            self._revert(dict(self._applied))

        self.executor(self._model_job(inputs), done, fail)

    def _apply_walks(self, built: Walks, inputs: dict[str, Any]) -> None:
        previous = (self._walks, dict(self._applied), self.class_names)
        ds = built.problem.dataset
        self._walks = built
        self._applied = inputs
        self.class_names = tuple(str(c) for c in ds.class_names)
        try:
            self._fit_theta_bounds(built)
            self._update_figures(raise_errors=True)
        except Exception as exc:
            self._walks, self._applied, self.class_names = previous
            self.report(exc)
            self._revert(self._applied)
            return
        self.focus = -1  # a new walk: the clicked stop is gone
        terms = {"kernel": "support vectors", "linear": "features", "boosting": "weak learners"}
        p = built.problem
        self.model_info = (
            f"{p.description}: {built.n_terms:,} terms "
            f"({terms.get(built.term_kind, 'terms')}), fitted on {len(p.y_fit):,} examples; "
            f"{len(p.y_cal):,} held out to calibrate; offset c = {built.offset:.4g}"
        )
        self.dataset_info = (
            f"**{inputs['dataset'].removeprefix(UPLOAD_PREFIX)}**: positive class: "
            f"{ds.positive_meaning}; {built.S.shape[0]:,} test examples "
            f"({int(built.y_test.sum()):,} positive), {ds.n_features:,} features."
        )

    def _fit_theta_bounds(self, built: Walks) -> None:
        """θ's range follows the data: the central 99% of f(x) on the test set, and 0."""
        lo, hi = np.quantile(built.full_score, [0.005, 0.995])
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        span = hi - lo or 1.0
        lo, hi = round(lo - 0.05 * span, 2), round(hi + 0.05 * span, 2)
        theta = self.theta if lo <= self.theta <= hi else 0.0
        old = self.param.theta.bounds
        self._reverting = True
        try:
            self.param.theta.bounds = (min(lo, old[0], theta), max(hi, old[1], theta))
            self.theta = theta
            self.param.theta.bounds = (lo, hi)
        finally:
            self._reverting = False

    # -- fast controls ------------------------------------------------------------------------
    @param.depends(*FAST_CONTROLS, watch=True)
    def _fast_controls_changed(self) -> None:
        if self._reverting:
            return
        self._update_figures()

    @param.depends("delta", "boundary", watch=True)
    def _forget_scale(self) -> None:
        """A δ (or rule) the user moves replaces a scale chosen by the cheapest point."""
        if not self._reverting:
            self.scale = None

    def _update_figures(self, raise_errors: bool = False) -> None:
        if self._walks is None:
            return
        try:
            figures = self.compute_figures()
        except (AttentiveError, ValueError) as exc:
            if raise_errors:
                raise
            self.report(exc)
            self._revert(self._fast_applied)
            return
        self._fast_applied = self._snapshot(FAST_CONTROLS)
        self.figures = figures
        if figures.tradeoff is None:
            self._request_tradeoff()
        self._measure()

    def compute_figures(self) -> Figures:
        """The figure data for the current controls (what a slider move recomputes)."""
        if self._walks is None:
            raise InvalidParameterError("no model is loaded yet.")
        return compute_figures(
            self._walks, self.rule, self.n_trajectories, tradeoff=not self.defers_tradeoff
        )

    def _request_tradeoff(self) -> None:
        """Compute the current (walk, side, θ)'s tradeoff through :attr:`tradeoff_executor` and
        put it into the figure data, unless the walk, side or θ has changed by then."""
        built, side, theta = self._walks, self.side, float(self.theta)

        def current() -> bool:
            f = self.figures
            return (
                f is not None
                and self._walks is built
                and f.rule.side == side
                and float(f.rule.theta) == theta
            )

        def job():
            return rules.tradeoff(built, side, theta)

        job.stale = lambda: not current()

        def done(result) -> None:
            if current() and self.figures.tradeoff is None:
                self.figures = dataclasses.replace(self.figures, tradeoff=result)
                self._measure()  # the timing waited for the tradeoff (see _measure)

        def fail(exc: BaseException) -> None:
            if current():
                self.report(exc)

        self._background("tradeoff", job, done, fail)

    def _measure(self) -> None:
        """Time the evaluator at the current rule (after the figures; in a thread when served).

        While the tradeoff is computed in the background the timing waits for it (it is started
        again when the tradeoff arrives): a wall-clock time taken while another thread computes
        every family's tradeoff measures the contention (a first page showed 0.28× for 2.5×)."""
        self._measure_generation += 1
        generation = self._measure_generation
        built, rule, f = self._walks, self.rule, self.figures
        self.measured = None
        if f is not None and f.tradeoff is None:
            return

        def job():
            current = rules.outcome(built, rule)
            return rules.measure(built, rule, current)

        # A served executor may drop a timing that a newer move has made stale before it runs.
        job.stale = lambda: generation != self._measure_generation

        def done(result) -> None:
            if generation == self._measure_generation:
                self.measured = result

        def fail(exc: BaseException) -> None:
            if generation == self._measure_generation:
                self.report(exc)

        if f is not None:
            self._background("measure", job, done, fail)

    # -- uploads ------------------------------------------------------------------------------
    def upload_dataset(self, data: bytes, filename: str) -> bool:
        """Add an uploaded LIBSVM/CSV file as a dataset and switch to it.

        Returns True when the file was read; otherwise the error is reported and nothing changes.
        A file whose labels are not binary is kept so that setting :attr:`positive_class` retries.
        """
        from attentive.data import max_upload_bytes

        try:
            limit = max_upload_bytes()
            if data is None or len(data) == 0:
                raise DataError(f"{filename or 'the upload'} is empty.")
            if len(data) > limit:
                raise DataError(
                    f"{filename} is {len(data) / 2**20:.3g} MB, over the upload limit of "
                    f"{limit / 2**20:.3g} MB (set ATTENTIVE_MAX_UPLOAD_MB to change it)."
                )
        except AttentiveError as exc:
            self.report(exc)
            return False
        name = UPLOAD_PREFIX + (filename or "upload")
        previous = self._uploads.get(name)
        self._uploads[name] = (bytes(data), filename)

        def accepted() -> None:
            self._pending_upload = None
            if name not in self.param.dataset.objects:
                self.param.dataset.objects = [*self.param.dataset.objects, name]
            self._revert({"dataset": name})  # select it without starting another build

        def refused() -> None:
            # Forget the file, but keep it for a retry with a positive class.
            self._pending_upload = (bytes(data), filename)
            if previous is None:
                self._uploads.pop(name, None)
            else:
                self._uploads[name] = previous

        self._submit({**self._model_inputs(), "dataset": name}, accepted, refused)
        # Final when the executor runs inline; a background build reports later.
        return self._applied.get("dataset") == name or self.busy

    @param.depends("positive_class", watch=True)
    def _retry_pending_upload(self) -> None:
        if self._pending_upload is not None and not self._reverting:
            data, filename = self._pending_upload
            self.upload_dataset(data, filename)

    def upload_model(self, data: bytes, filename: str) -> bool:
        """Use an uploaded skops model (checked for trusted types and feature count)."""
        from attentive.models import load_model

        clf = self._walks.classifier if self._walks is not None else None
        try:
            # An uploaded dataset is read again for the model (its LIBSVM index base and CSV
            # columns follow the model: attentive.data.reader), and checked then.
            uploaded_data = self.dataset in self._uploads
            n_features = clf.n_features_in_ if clf is not None and not uploaded_data else None
            load_model(bytes(data), n_features=n_features)
        except (AttentiveError, ValueError, TypeError) as exc:
            self.report(exc)
            return False
        previous = self._model_upload
        self._model_upload = (bytes(data), filename)

        def accepted() -> None:
            self._revert({"model_source": "upload"})

        def refused() -> None:
            self._model_upload = previous

        self._submit({**self._model_inputs(), "model_source": "upload"}, accepted, refused)
        return self._applied.get("model_source") == "upload" or self.busy

    # -- choosing an operating point ------------------------------------------------------------
    def select_point(self, fraction: float, error: float) -> None:
        """Choose the rule nearest a click on the tradeoff plot (x: mean evaluated fraction,
        y: disagreement): for the budget rule, B; otherwise the nearest point of any family's
        curve at a δ of the slider (the rule becomes that family, so a click on another curve
        picks that curve, and a click with the calibrated rule picks a family's point)."""
        f = self.figures
        if f is None or not (math.isfinite(fraction) and math.isfinite(error)):
            return
        if f.tradeoff is None and self.boundary != "budget":
            return  # the curves are not drawn yet
        if self.boundary == "budget":
            self.set_controls(budget=min(1.0, max(1.0 / f.n_terms, fraction)))
            return
        fam = f.tradeoff.families
        deltas = rules.delta_steps()
        zs = np.round([rules.z_of(d) for d in deltas], 2)
        rows = fam[np.isin(np.round(fam["z"].to_numpy(), 2), zs)]
        if rows.empty:
            return
        x = rows["mean_evaluated_fraction"].to_numpy()
        y = rows["disagreement"].to_numpy()
        # Distances on the plot's scales: x spans [0, 1], y the curves' few per cent.
        y_span = tradeoff_error_span(f.tradeoff)
        best = int(np.nanargmin((x - fraction) ** 2 + ((y - error) / y_span) ** 2))
        row = rows.iloc[best]
        delta = float(deltas[int(np.flatnonzero(zs == round(float(row["z"]), 2))[0])])
        self.set_controls(boundary=str(row["method"]), delta=delta)

    @param.depends("target", watch=True)
    def choose_cheapest(self) -> None:
        """Move to the cheapest rule whose test disagreement is at most :attr:`target`."""
        if self._walks is None or self._reverting:
            return
        try:
            row = rules.cheapest(self._walks, self.side, self.theta, self.target)
        except (AttentiveError, ValueError) as exc:
            self.report(exc)
            return
        # The family's rule at the chosen z; δ shows its nominal value Φ(−z) on the slider.
        self._reverting = True
        try:
            self.param.update(
                boundary=str(row["family"]),
                delta=rules.snap_delta(float(row["nominal_delta"])),
                scale=float(row["z"]),
            )
        finally:
            self._reverting = False
        self._update_figures()


def _plain(exc: BaseException) -> str:
    """A control's error without param's own wording (``Parameter 'x' must be ...``)."""
    msg = str(exc)
    if msg.startswith(
        ("Number parameter", "Integer parameter", "Selector parameter", "String parameter")
    ):
        msg = msg.split("'", 2)[-1].lstrip(" ")
    return msg
