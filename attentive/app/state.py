"""The dashboard's state: one :class:`param.Parameterized` object per session.

Its parameters are the controls (the views generate their widgets from them) and its output is
:attr:`DashboardState.figures`, plain data (arrays and DataFrames) that the views only draw. It
calls the core, data and model APIs only through :mod:`attentive.app.cache` and
:mod:`attentive.app.compute`, and it does not import Panel, so tests drive it without a browser.

Two speeds of change:

* **model inputs** (dataset, model, centering, permutation seed) rebuild the cached walk: the test
  partial-score matrix ``S``. This may train a model, so it goes through :attr:`executor`, which runs
  it inline by default and in a background thread in the served app;
* **fast controls** (boundary, side, δ, θ, budget, trajectories) recompute the figure data from the
  cached ``S`` and sweep, synchronously.

Every error a user can cause (a bad file, a failed download, an untrusted model, a value out of
range) is recorded in :attr:`last_error` (and counted in :attr:`n_errors`, which the dashboard
turns into a notification) while the previous state stays: the offending control is put back.
"""

from __future__ import annotations

import io
import json
import logging
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import param

from attentive.app.cache import (
    CALIBRATION_SIZE,
    WalkBundle,
    cached,
    calibration_walk_bundle,
    content_hash,
    model_bundle,
    walk_bundle,
)
from attentive.app.compute import (
    BOUNDARY_BUILDERS,
    DEFAULT_ALPHA,
    DELTA_RANGE,
    Figures,
    budget_terms,
    compute_figures,
    nearest_budget,
    nearest_delta,
)
from attentive.errors import AttentiveError, DataError, InvalidParameterError, UntrustedModelError

__all__ = ["DEFAULT_DATASET", "DashboardState", "run_inline", "user_message"]

log = logging.getLogger(__name__)

DEFAULT_DATASET = "digits-2v5"
UPLOAD_PREFIX = "file: "
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
FAST_CONTROLS = ("boundary", "side", "delta", "alpha", "theta", "budget", "n_trajectories")
URL_PARAMETERS = ("dataset", "delta", "theta", "seed", "boundary", "alpha")
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


def load_dataset(name: str, positive_class: str, uploads: dict[str, tuple[bytes, str]]):
    """``(cache key, Dataset)`` for a registry name or an uploaded file's entry in ``uploads``."""
    from attentive.data import load_dataset as load_registered
    from attentive.data import load_user_file

    if name in uploads:
        data, filename = uploads[name]
        pos = positive_class.strip() or None
        key = ("file", content_hash(data), pos)
        return key, cached(
            "dataset", key, lambda: load_user_file(data, filename=filename, positive_class=pos)
        )
    return ("registry", name), load_registered(name)


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

    Set parameters to move controls; read :attr:`figures` for what the views draw. Uploads go
    through :meth:`upload_dataset` and :meth:`upload_model`; exports through
    :meth:`operating_point`, :meth:`classifier_bytes` and :meth:`curves_csv`.
    """

    # -- data and model --------------------------------------------------------------------
    dataset = param.Selector(
        default=DEFAULT_DATASET,
        objects=[DEFAULT_DATASET],
        label="Dataset",
        doc="The binary problem: a registered dataset or a file you uploaded (test part is evaluated).",
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
        doc="Train an SVM on the training part, or use an uploaded skops model file.",
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
        label="C",
        doc="SVM regularisation: larger C fits the training data more closely (more or fewer support vectors).",
    )
    gamma = param.String(
        default="scale",
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
        default="constant",
        objects=list(BOUNDARY_BUILDERS),
        label="Boundary",
        doc="constant: Constant-STST threshold τ (the paper); curved: Gaussian curtailment; budget: evaluate exactly B terms; calibrated: the curved boundary whose scale is chosen on 30% of the training part held out (the model is refit on the rest) so that disagreement ≤ δ with probability ≥ 1 − α. Choosing calibrated sets Side to both (the best calibrated rule; the library's default side stays lower).",
    )
    side = param.Selector(
        default="lower",
        objects=["lower", "upper", "both"],
        label="Side",
        doc="lower: stop walks falling below τ and predict negative (the paper); upper: the mirror; both: either.",
    )
    delta = param.Number(
        default=0.05,
        bounds=DELTA_RANGE,
        label="δ (required stop-error)",
        doc="The stop-error rate the boundary is built for: smaller δ stops later and errs less. For the calibrated boundary: the disagreement rate with the full evaluation that is guaranteed (with probability ≥ 1 − α).",
    )
    alpha = param.Number(
        default=DEFAULT_ALPHA,
        bounds=(1e-3, 0.5),
        label="α (calibration failure probability)",
        doc="Calibrated boundary only: the guarantee 'disagreement ≤ δ' may fail with probability at most α (over the draw of the calibration examples).",
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
        doc="How many test examples' partial-score walks the trajectory plot draws.",
    )

    # -- outputs ---------------------------------------------------------------------------
    figures = param.Parameter(default=None, precedence=-1, doc="Figure data (Figures).")
    class_names = param.Tuple(default=("negative", "positive"), precedence=-1)
    dataset_info = param.String(default="", precedence=-1)
    model_info = param.String(default="", precedence=-1)
    busy = param.Boolean(default=False, precedence=-1)
    status = param.String(default="", precedence=-1)
    elapsed = param.Number(default=0.0, precedence=-1)
    last_error = param.String(default="", precedence=-1)
    n_errors = param.Integer(default=0, precedence=-1)

    def __init__(self, executor: Callable | None = None, **params):
        self._uploads: dict[str, tuple[bytes, str]] = {}
        self._model_upload: tuple[bytes, str] | None = None
        self._pending_upload: tuple[bytes, str] | None = None
        self._walks: WalkBundle | None = None
        self._applied: dict[str, Any] = {}
        self._fast_applied: dict[str, Any] = {}
        self._requested: dict[str, Any] = {}
        self._reverting = False
        self._generation = 0
        self.executor = executor or run_inline
        super().__init__()
        self.param.dataset.objects = _registry_names()
        self.param.kernel.objects = _kinds()
        self._model_inputs_changed()
        if params:
            self.set_controls(**params)

    # -- helpers -----------------------------------------------------------------------------
    @property
    def walks(self) -> WalkBundle | None:
        """The cached walk of the current dataset, model, centering and seed."""
        return self._walks

    def report(self, exc: BaseException | str) -> None:
        """Record a user-facing error (the dashboard shows it as a notification)."""
        msg = user_message(exc) if isinstance(exc, BaseException) else str(exc)
        if isinstance(exc, BaseException) and not isinstance(exc, AttentiveError | ValueError):
            log.exception("unexpected error in the dashboard", exc_info=exc)
            msg = f"Unexpected error ({type(exc).__name__}): {exc}"
        self.last_error = msg
        self.n_errors += 1

    def set_controls(self, **values) -> bool:
        """Set controls one by one; a value a control refuses is reported and left unchanged.

        Returns True when every value was accepted.
        """
        ok = True
        for name, value in values.items():
            if name not in self.param or self.param[name].precedence == -1:
                self.report(InvalidParameterError(f"unknown control {name!r}."))
                ok = False
                continue
            try:
                self.param.update({name: self._coerce(name, value)})
            except (ValueError, TypeError) as exc:
                self.report(InvalidParameterError(f"{self.param[name].label}: {exc}"))
                ok = False
        return ok

    def _coerce(self, name: str, value):
        p = self.param[name]
        if isinstance(p, param.Integer) and not isinstance(value, int | np.integer):
            f = float(value)
            if not math.isfinite(f) or f != int(f):
                raise ValueError(f"expected a whole number, got {value!r}")
            return int(f)
        if isinstance(p, param.Number) and not isinstance(p, param.Integer):
            f = float(value)
            if not math.isfinite(f):
                raise ValueError(f"expected a finite number, got {value!r}")
            return f
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
        """The model inputs, and whether the walk must be refit without calibration examples."""
        return {**self._snapshot(MODEL_INPUTS), "calibrated": self.boundary == "calibrated"}

    def _model_job(self, inputs: dict[str, Any]) -> Callable[[], WalkBundle]:
        """A self-contained job (safe to run in a thread) that builds the walk for ``inputs``.

        It works on copies of the session's uploads, never on the live session.
        """
        uploads = dict(self._uploads)
        model_upload = self._model_upload

        def job() -> WalkBundle:
            from attentive.models import load_model, train_model

            ds_key, ds = load_dataset(inputs["dataset"], inputs["positive_class"], uploads)
            if inputs["model_source"] == "upload":
                if model_upload is None:
                    raise InvalidParameterError(
                        "no model file uploaded yet; upload a skops file or choose 'train'."
                    )
                data = model_upload[0]
                m_key = ("file", content_hash(data))
                # Checked against every dataset it meets (the cached model may meet a new one).
                model = load_model(data, n_features=ds.n_features)
                models = model_bundle(ds_key, ds, m_key, lambda: model)
            else:
                gamma = _parse_gamma(inputs["gamma"])
                kind, C = inputs["kernel"], float(inputs["C"])
                m_key = ("train", kind, C, gamma)
                models = model_bundle(
                    ds_key, ds, m_key, lambda: train_model(ds, kind=kind, C=C, gamma=gamma)
                )
            build = calibration_walk_bundle if inputs.get("calibrated") else walk_bundle
            return build(models, inputs["centering"], inputs["seed"])

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
        self._submit(self._model_inputs())

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

        def done(walks: WalkBundle) -> None:
            if generation != self._generation:
                return  # a newer request superseded this one
            self._requested = {}
            if accepted is not None:
                accepted()
            self._apply_walks(walks, inputs)

        def fail(exc: BaseException) -> None:
            if generation != self._generation:
                return
            self._requested = {}
            self.report(exc)
            if refused is not None:
                refused()
            back = dict(self._applied)
            if inputs.get("calibrated") != self._applied.get("calibrated", False):
                back["boundary"] = self._fast_applied.get("boundary", "constant")
            self._revert(back)

        self.executor(self._model_job(inputs), done, fail)

    def _apply_walks(self, walks: WalkBundle, inputs: dict[str, Any]) -> None:
        previous = (self._walks, dict(self._applied), self.class_names)
        ds = walks.models.dataset
        self._walks = walks
        self._applied = inputs
        self.class_names = tuple(str(c) for c in ds.class_names)
        try:
            self._fit_theta_bounds(walks)
            self._update_figures(raise_errors=True)
        except Exception as exc:
            self._walks, self._applied, self.class_names = previous
            self.report(exc)
            self._revert(self._applied)
            return
        terms = {"kernel": "support vectors", "linear": "features", "boosting": "weak learners"}
        self.model_info = (
            f"{walks.models.description}: {walks.n_terms:,} terms "
            f"({terms.get(walks.walk.terms.kind, 'terms')}), offset c = {walks.offset:.4g}, "
            f"bridge variance V = {walks.variance:.4g}"
        )
        self.dataset_info = (
            f"**{inputs['dataset'].removeprefix(UPLOAD_PREFIX)}**: positive class: "
            f"{ds.positive_meaning}; {walks.S.shape[0]:,} test examples "
            f"({int(walks.y_test.sum()):,} positive), {ds.n_features:,} features."
        )

    def _fit_theta_bounds(self, walks: WalkBundle) -> None:
        """θ's range follows the data: the central 99% of f(x) on the test set, and 0."""
        lo, hi = np.quantile(walks.full_score, [0.005, 0.995])
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        span = hi - lo or 1.0
        lo, hi = lo - 0.05 * span, hi + 0.05 * span
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
        calibrated = self.boundary == "calibrated"
        if calibrated and self._fast_applied.get("boundary") != "calibrated":
            # A UI choice: the two-sided rule is the best calibrated one (SPEC §3 report).
            self._reverting = True
            try:
                self.side = "both"
            finally:
                self._reverting = False
        if calibrated != self._applied.get("calibrated", False):
            # The calibrated boundary needs its own walk (refit without the calibration part).
            if self._requested.get("calibrated") != calibrated:
                self._submit(self._model_inputs())
            return
        if self._requested and self._requested.get("calibrated") != calibrated:
            self._generation += 1  # drop the pending build of the walk no longer wanted
            self._requested = {}
        self._update_figures()

    def _update_figures(self, raise_errors: bool = False) -> None:
        if self._walks is None:
            return
        if (self.boundary == "calibrated") != self._applied.get("calibrated", False):
            return  # the walk this boundary needs is being built; it updates the figures
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

    def compute_figures(self) -> Figures:
        """The figure data for the current controls (what a slider move recomputes)."""
        if self._walks is None:
            raise InvalidParameterError("no model is loaded yet.")
        return compute_figures(
            self._walks,
            kind=self.boundary,
            side=self.side,
            delta=self.delta,
            theta=self.theta,
            budget=self.budget,
            n_trajectories=self.n_trajectories,
            alpha=self.alpha,
        )

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

        ds = self._walks.estimator if self._walks is not None else None
        try:
            n_features = ds.n_features_in_ if ds is not None else None
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

    # -- operating point, exports -----------------------------------------------------------
    def select_point(self, mean_evaluated: float, error: float) -> None:
        """Choose the operating point nearest a click on the tradeoff plot.

        ``mean_evaluated`` is in terms (the x axis), ``error`` the stop-error (the y axis). For the
        budget boundary the click picks B; otherwise the δ on the grid whose point is nearest.
        """
        f = self.figures
        if f is None or not (math.isfinite(mean_evaluated) and math.isfinite(error)):
            return
        if self.boundary == "budget":
            self.budget = max(
                self.param.budget.bounds[0], nearest_budget(mean_evaluated, f.n_terms)
            )
        else:
            self.delta = nearest_delta(f.delta_curve, mean_evaluated, error, f.n_terms)

    def operating_point(self) -> dict[str, Any]:
        """The current operating point: what it is, where it came from and how it performs."""
        w, f = self._walks, self.figures
        if w is None or f is None:
            raise InvalidParameterError("no model is loaded yet.")
        from attentive.models import model_fingerprint

        model = w.estimator.estimator_
        ds_name = self._applied.get("dataset", self.dataset)
        point = {
            "dataset": ds_name.removeprefix(UPLOAD_PREFIX),
            "model": type(model).__name__,
            "model_fingerprint": model_fingerprint(model),
            "boundary": self.boundary,
            "side": self.side,
            "centering": self.centering,
            "seed": self.seed,
            "delta": self.delta,
            "theta": self.theta,
            "theta_s": f.theta_s,
            "tau": {k: v for k, v in f.boundary_params.items() if k.startswith("tau")},
            "budget": f.budget,
            "metrics": f.metrics,
        }
        if self.boundary == "budget":
            point["delta"] = None
        r = f.calibration
        if self.boundary == "calibrated" and r is not None:
            point["alpha"] = self.alpha
            point["calibration"] = {
                "family": r.family,
                "side": r.side,
                "z": r.chosen_scale,
                "fallback": r.fallback,
                "guarantee": r.guarantee,
                "n_calibration": r.m,
                "n_fit": w.n_fit,
                "calibration_size": CALIBRATION_SIZE,
                "minimum_size": r.minimum_size,
                "n_tested": r.n_tested,
            }
        return point

    def operating_point_json(self) -> str:
        """:meth:`operating_point` as JSON (NaN written as null)."""

        def clean(v):
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, float | np.floating):
                return float(v) if math.isfinite(v) else None
            if isinstance(v, np.integer):
                return int(v)
            return v

        return json.dumps(clean(self.operating_point()), indent=2, ensure_ascii=False)

    def classifier(self):
        """A fitted :class:`~attentive.AttentiveClassifier` at the current operating point.

        For the calibrated boundary it is fitted on the whole training part with the same seed and
        ``calibration_size``, so it holds out the same calibration examples; the model is the one
        the dashboard already fitted without them, so it makes the dashboard's decisions.
        """
        from sklearn.frozen import FrozenEstimator

        from attentive.calibration import CalibrationWarning
        from attentive.estimator import AttentiveClassifier

        w = self._walks
        if w is None:
            raise InvalidParameterError("no model is loaded yet.")
        model = w.estimator.estimator_
        ds = w.models.dataset
        kw: dict[str, Any] = {}
        if self.boundary == "budget":
            kw = {"budget": budget_terms(self.budget, w.n_terms)}
        elif self.boundary == "calibrated":
            # The dashboard calibrates the curved family (its calibration table shows it).
            kw = {"alpha": self.alpha, "calibration_size": CALIBRATION_SIZE, "family": "curved"}
        clf = AttentiveClassifier(
            FrozenEstimator(model),
            boundary=self.boundary,
            delta=self.delta,
            threshold=self.theta,
            side=self.side,
            centering=self.centering,
            random_state=self.seed,
            **kw,
        )
        with warnings.catch_warnings():
            # A fallback to full evaluation is already shown on the page and in calibration_;
            # the frozen model was fitted without the calibration part (same seed and size), so
            # the warning that a frozen model may have seen it does not apply.
            warnings.simplefilter("ignore", CalibrationWarning)
            return clf.fit(ds.X_train, ds.y_train)

    def classifier_bytes(self) -> bytes:
        """The :meth:`classifier` as a skops file's bytes."""
        import skops.io as sio

        return sio.dumps(self.classifier())

    def curves_frame(self) -> pd.DataFrame:
        """The tradeoff curves (τ sweep, budgeted, current boundary over δ) in one table."""
        f = self.figures
        if f is None:
            raise InvalidParameterError("no model is loaded yet.")
        dc = f.delta_curve.assign(method=f"{self.boundary} (δ grid)", parameter=f.delta_curve.delta)
        dc["mean_evaluated_fraction"] = dc["mean_evaluated"] / f.n_terms
        cols = [
            "method",
            "parameter",
            "mean_evaluated",
            "mean_evaluated_fraction",
            "stop_error",
            "disagreement",
        ]
        return pd.concat([f.tradeoff[cols], dc[cols]], ignore_index=True)

    def curves_csv(self) -> io.StringIO:
        """:meth:`curves_frame` as CSV text."""
        buf = io.StringIO()
        self.curves_frame().to_csv(buf, index=False)
        buf.seek(0)
        return buf
