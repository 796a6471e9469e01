"""The dashboard's state: one :class:`param.Parameterized` object per session.

Its parameters (declared in :mod:`attentive.app.controls`) are the controls and the outputs set
when work finishes: ``walks`` (the fitted classifier and the test walk, built when a model input
changes), ``tradeoff`` and ``times`` (every rule on the test set, its time per example),
``measured`` (the evaluator timed at the current rule), ``sketch`` (the walk's sketch, fitted on
demand: :meth:`~DashboardState.fit_sketch`). Each view draws one ``@param.depends``
method (:meth:`~DashboardState.numbers`, ``walk_figure``, ``theory``, ``outcome``,
``calibration``, ``table``) on exactly the parameters it reads: a move recomputes what it changes.

Model builds go through :attr:`executor` (inline by default, a thread when served); the tables,
the timing and the sketch through :attr:`background` (:mod:`attentive.app.background`; ``None``
holds them until :meth:`start_background`: the served first page sends its numbers first). A
result is applied only if the controls still ask for it. Every error a user can cause is
reported (:meth:`report`, a notification) and the controls go back to what is in use. The maths are in :mod:`~attentive.app.rules` and
:mod:`~attentive.app.figures`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import param

from attentive.app import controls, figures, rules, sketches
from attentive.app.background import Background
from attentive.app.controls import DEFAULT_DATASET
from attentive.app.inputs import parse_gamma, plain, typed, user_message
from attentive.app.models import (
    DataSource,
    ModelSource,
    Walks,
    content_hash,
    label_note,
    walks,
)
from attentive.errors import AttentiveError, DataError, InvalidParameterError

__all__ = ["DEFAULT_DATASET", "DashboardState", "run_inline", "user_message"]

log = logging.getLogger(__name__)

# "upload" picked under Model before any model file: said as a hint (it was an error, in red).
NO_MODEL_FILE_YET = (
    f'To use a model of your own, choose a skops file under "{controls.MODEL_UPLOAD_LABEL}": '
    "it is used as soon as it loads. Until then the page keeps its trained model."
)


def run_inline(job: Callable[[], Any], done: Callable[[Any], None], fail: Callable) -> None:
    """The default executor: run ``job`` now and hand its result (or exception) on."""
    try:
        result = job()
    except Exception as exc:  # every failure is reported, none may take the session down
        fail(exc)
    else:
        done(result)


class DashboardState(Background):
    """Controls and outputs of one dashboard session (see the module's docstring)."""

    def __init__(self, executor: Callable | None = None, *, hold_background=False, **params):
        super().__init__()
        self._uploads: dict[str, tuple[bytes, str]] = {}  # dataset name → (bytes, file name)
        self._models: dict[str, tuple[bytes, str]] = {}  # content hash → (bytes, file name)
        self._pending_upload: tuple[bytes, str] | None = None  # kept for a positive class
        self._applied: dict[str, Any] = {}  # the model inputs :attr:`walks` was built from
        # Every model input as it stood then (an uploaded model's training fields too): what a
        # failed build sets back.
        self._settled: dict[str, Any] = {}
        # What waits for a model: (the model inputs asked for, a function), called once the build
        # of exactly those inputs is in use, dropped where it fails or another is used (when_built).
        self._on_built: list[tuple[dict, Callable[[], None]]] = []
        # The model inputs in use when a dataset switch dropped an uploaded model (said once the
        # new dataset's model is in use; set back if the old dataset is chosen again first).
        self._dropping: dict[str, Any] | None = None
        # (boundary, z, walks, side, θ) of the rule target / time_budget chose: still_picked
        self._picked: tuple | None = None
        self._budget_waiting = False  # a time budget waits for the rules' times (pick)
        self._restoring = False  # restore_pick: a target or budget set without a new pick
        # The guided tour is open: it sets back the user's dataset and uploaded model when it
        # closes (attentive.app.tour), so its datasets do not drop an uploaded model for good.
        self.touring = False
        self._upload_classes: dict[str, str] = {}  # upload → the positive class it was read with
        self.executor = executor or run_inline
        self.background = None if hold_background else (executor or run_inline)
        self._set_choices()
        self._rule_inputs_changed()
        self.param.watch(self._model_inputs_changed, list(controls.MODEL_INPUTS))
        self.param.watch(self._rule_inputs_changed, list(controls.RULE_INPUTS))
        self.param.watch(self._forget_pick, ["boundary", "z", "side", "theta", "walks"])
        self.param.watch(self._pick_entered, ["target", "time_budget"])
        self.param.watch(self._times_in, ["times"])
        self._build(self._inputs())
        if params:
            self.set_controls(**params)

    # -- what the views draw -------------------------------------------------------------------
    def _rule_inputs_changed(self, *events) -> None:
        """The rule's controls as one :attr:`rule` (one recompute per move). δ and the family's
        scale z stay in step, δ = Φ(−z) on the slider's grid, so the slider names the rule that
        runs: a z moved alone (an address's exact scale, off the slider) puts the δ slider at
        its δ'; a moved δ makes z δ's. (An address holding a δ and a z that disagree is settled
        before it gets here, :meth:`one_scale`.)"""
        moved = {e.name for e in events}
        if moved & {"delta", "z"} and rules.delta_of(self.z) != self.delta:
            if "delta" in moved:
                self.z = rules.snap_z(rules.z_of(self.delta))  # this watcher runs again for z
            else:
                self.delta = rules.delta_of(self.z)  # this watcher runs again for δ
            return
        # α to the slider's digits (after δ and z: a move of both with an unsnapped α settles z
        # first, then comes here again).
        if self.alpha != (snapped := rules.snap_alpha(self.alpha)):
            self.alpha = snapped  # this watcher runs again for α
            return
        put_back = {} if self.building else self._refused(self.sketch)
        if put_back:
            return self.param.update(put_back)  # this watcher runs again
        rule = self._rule_of(self.sketch)
        if rule != self.rule:
            self.rule = rule

    def one_scale(self, values: dict) -> tuple[dict, str | None]:
        """Controls from an address (``values``, as :meth:`set_controls` takes them) that name
        one rule the δ slider can set, and a warning to give, or None.

        The dashboard writes δ = Φ(−z) on the slider's grid, so a pair that disagrees is a hand
        edit, most likely of δ, the control the page shows: δ is used (z follows it). A z beyond
        the slider's range (:data:`rules.SLIDER_Z`: δ' below 0.01 % or above 50 %, which no
        picker chooses either) is put at the slider's nearest end. For a family rule, which runs
        at z, the warning names what the address gave and what runs; the calibrated and budget
        rules run at δ, which the slider shows (nothing to tell). Settled on the address as a
        whole, so an address sent again gives the same rule whichever of its values the state
        holds. A δ or z that is not a number is left to :meth:`set_controls`, which reports it."""
        delta, z = (self._address_number(k, values[k]) if k in values else None for k in ("delta", "z"))  # fmt: skip
        if z is None:
            return values, None
        boundary = values.get("boundary")
        if boundary not in self.param["boundary"].objects:  # (refused by set_controls)
            boundary = self.boundary
        scaled = boundary in rules.scaled_kinds()
        if delta is not None and rules.delta_of(z) != delta:
            without_z = {k: v for k, v in values.items() if k != "z"}
            used = rules.snap_z(rules.z_of(delta))
            message = (
                f"The address gives δ = {delta:g} and z = {z:g}, which disagree (z = {z:g} "
                f"means δ ≈ {rules.delta_of(z):g}). The {boundary} rule uses δ = {delta:g} (z = "
                f"{used:.2f}). To use z = {z:g}, remove δ from the address."
            )
            return without_z, message if scaled else None
        if rules.settable(z):
            return values, None
        lo, hi = rules.SLIDER_Z
        end = rules.snap_z(lo if z < lo else hi)
        message = (
            f"The address gives z = {z:g}, beyond the δ slider's range ({rules.slider_span()}: "
            f"z from {lo:.2f} to {hi:.2f}). The {boundary} rule runs at the slider's end: "
            f"z = {end:.2f}, δ = {rules.delta_of(end):g}."
        )
        return {**values, "z": end}, message if scaled else None

    def _address_number(self, name: str, value) -> float | None:
        """δ or z from an address as :meth:`one_scale` compares them: δ on the slider's grid
        (None if it is not a number within the slider's range: refused by
        :meth:`set_controls`); z on the dashboard's scales within its bounds, as given beyond
        them (the slider's end, then), None if it is not a number."""
        p = self.param[name]
        try:
            number = float(typed(p, value))
        except (TypeError, ValueError):
            return None
        if math.isnan(number):
            return None
        if p.bounds[0] <= number <= p.bounds[1]:
            return p.snap(number)
        return number if name == "z" else None

    @param.depends("walks", "rule")
    def outcome(self) -> rules.Outcome | None:
        """The current rule's decisions on the test set (None before the first model)."""
        return None if self.walks is None else rules.outcome(self.walks, self.rule)

    @param.depends("walks", "rule")
    def numbers(self) -> dict | None:
        """The headline numbers (:func:`attentive.app.figures.numbers`)."""
        return None if self.walks is None else figures.numbers(self.walks, self.rule)

    @param.depends("walks", "rule", "n_trajectories")
    def walk_figure(self) -> figures.WalkFigure | None:
        """The walks plot's data (:func:`attentive.app.figures.walk_figure`)."""
        if self.walks is None:
            return None
        return figures.walk_figure(self.walks, self.rule, self.n_trajectories)

    @param.depends("walks", "boundary", "side", "theta", "sketch")
    def theory(self):
        """Required δ against the current family's actual stop-error."""
        return None if self.walks is None else figures.theory(self.walks, self.rule)

    @param.depends("walks", "rule")
    def calibration(self):
        """The calibrated rule's report, or None for another rule."""
        if self.walks is None or self.boundary != "calibrated":
            return None
        return rules.rule_classifier(self.walks, self.rule).calibration_

    @param.depends("tradeoff", "times")
    def table(self):
        """Every operating point with its time per example (None until computed)."""
        return None if self.tradeoff is None else rules.timed_table(self.tradeoff, self.times)

    @property
    def walks_dataset(self) -> str:
        """The dataset the model in use was built for (the control may already ask another)."""
        return self._applied.get("dataset", self.dataset)

    # -- reporting and setting controls ------------------------------------------------------------
    def report(self, exc: BaseException | str, level: str = "error") -> None:
        """Record a message for the user (the dashboard shows it as a notification)."""
        msg = user_message(exc) if isinstance(exc, BaseException) else str(exc)
        if isinstance(exc, BaseException) and not isinstance(exc, AttentiveError | ValueError):
            log.exception("unexpected error in the dashboard", exc_info=exc)
            msg = f"Unexpected error ({type(exc).__name__}): {exc}"
        self.param.update(last_error=msg, error_level=level, n_errors=self.n_errors + 1)

    def set_controls(self, **values) -> bool:
        """Set controls from text or values (a field, the URL, code): model inputs together (one
        build), then the rule's; what is refused is reported. True when all were accepted."""
        ok, typed_values = True, {}
        for name, value in values.items():
            p = self.param[name] if name in self.param else None
            if p is None or (p.precedence == -1 and name != "z"):
                self.report(InvalidParameterError(f"unknown control {name!r}."))
                ok = False
                continue
            try:
                typed_values[name] = typed(p, value)
                if name == "gamma":
                    parse_gamma(typed_values[name])
            except (ValueError, TypeError) as exc:
                self.report(InvalidParameterError(f"{p.label}: {plain(exc)}"))
                ok = False
                typed_values.pop(name, None)
        model = {k: v for k, v in typed_values.items() if k in controls.MODEL_INPUTS}
        rule = {k: v for k, v in typed_values.items() if k not in controls.MODEL_INPUTS}
        for group in (model, rule):
            ok = self._update(group) and ok
        return ok

    def _update(self, values: dict) -> bool:
        """Check each of ``values`` with param's own validation (no events, then put back),
        report what is refused and set the others together: one batch, one rebuild."""
        accepted = {}
        for name, value in values.items():
            try:
                accepted[name] = self._checked(name, value)
            except ValueError as exc:
                self.report(InvalidParameterError(f"{self.param[name].label}: {plain(exc)}"))
        self.param.update(accepted)
        return len(accepted) == len(values)

    def _checked(self, name: str, value):
        """``value`` as control ``name`` holds it (snapped), by param's own check, nothing set
        (no events, then put back); a ValueError where it is refused."""
        old = getattr(self, name)
        try:
            with param.discard_events(self):
                self.param.update({name: value})
            return getattr(self, name)
        finally:
            with param.discard_events(self):
                self.param.update({name: old})

    # -- the model: build the walk -------------------------------------------------------------
    def _inputs(self) -> dict[str, Any]:
        """The model inputs that make the walk (an upload's model ignores the training ones)."""
        ignored = controls.TRAINING if self.model_source == "upload" else ("model_file",)
        return {k: getattr(self, k) for k in controls.MODEL_INPUTS if k not in ignored}

    def _model_inputs_changed(self, *events) -> None:
        changed = {e.name for e in events}
        if self.model_source == "upload" and self.model_file not in self._models:
            # An exploratory click, not a mistake: a hint, and the trained model stays.
            self.report(NO_MODEL_FILE_YET, "info")
            return self.param.update(model_source="train", model_file="")
        new_dataset = "dataset" in changed and self.dataset != self._applied.get("dataset")
        dropped = self._dropping
        if "dataset" in changed and dropped is not None and self.dataset == dropped["dataset"]:
            # (Back to the dataset whose uploaded model a switch dropped, before the switch's
            # model was in use: that model again, and nothing to say.)
            self._dropping = None
            if self.model_source != "upload" and dropped["model_file"] in self._models:
                return self.param.update({k: dropped[k] for k in ("model_source", "model_file")})
        preset = self._preset(changed) if new_dataset else {}
        if new_dataset and "positive_class" not in changed:
            # A registry dataset has its own classes: the class typed for an uploaded file is
            # that file's (it was applied to the next file read); an uploaded file chosen again
            # is read with the class it was read with.
            own = self._upload_classes.get(self.dataset, "")
            if (self.dataset in self._upload_classes or self.dataset not in self._uploads) and own != self.positive_class:  # fmt: skip
                preset["positive_class"] = own
        # (An uploaded model in use for the old dataset; one given with the new dataset, as the
        # tour sets back what it changed, is for that one. The switch is said once the new
        # dataset's model is in use: done() in _build.)
        if new_dataset and self.model_source == "upload" and self._applied.get("model_source") == "upload":  # fmt: skip
            self._dropping = dict(self._applied)
            return self.param.update(model_source="train", model_file="", **preset)
        if preset:
            return self.param.update(preset)  # the update builds once, with the preset
        if "positive_class" in changed and "dataset" not in changed and self._pending_upload:
            # (the user's class for the file refused for want of one; a failed build's revert
            # changes the dataset too, and retries nothing)
            return self.upload_dataset(*self._pending_upload, retry=True)
        self._build(self._inputs())

    def _preset(self, changed) -> dict:
        """The new dataset's training preset (kernel, C, gamma) for what was not given too: a
        registry dataset's own, an uploaded file the generic one (an RBF SVM, C = 1,
        ``gamma="scale"``), not the previous dataset's (MNIST's γ = 0.05 on an uploaded table of
        another scale made every training row a support vector)."""
        from attentive.models import default_model_params

        p = default_model_params(self.dataset)
        values = {"kernel": p["kind"], "C": float(p["C"]), "gamma": str(p.get("gamma", self.gamma))}  # fmt: skip
        return {k: v for k, v in values.items() if k not in changed and getattr(self, k) != v}

    def _said_dropped(self, before: dict) -> None:
        """Say that the uploaded model in use for ``before``'s dataset gave way to the trained
        model of the dataset now in use."""
        name = self._models.get(before.get("model_file", ""), (b"", "the uploaded model"))[1]
        old, new = (d.removeprefix(controls.UPLOAD_PREFIX) for d in (before["dataset"], self.dataset))  # fmt: skip
        if self.touring:
            self.report(f"The tour shows {new} with its own trained model; closing it brings back {old} and {name}.", "info")  # fmt: skip
        else:
            self.report(f"{name} was uploaded for {old}; {new} gets its own trained model (upload the file again to use it here).", "warning")  # fmt: skip

    def _build(self, inputs: dict) -> None:
        """Build the walk for ``inputs`` through :attr:`executor`; apply it if still asked for."""
        if self.walks is not None and inputs == self._applied:
            # (A training field typed while an uploaded model is in use builds nothing: what a
            # failed build later sets back is the field as typed.)
            self._settled.update({k: getattr(self, k) for k in controls.TRAINING})
            return
        uploads, models = dict(self._uploads), dict(self._models)

        def job() -> Walks:
            name, positive = inputs["dataset"], inputs["positive_class"].strip() or None
            data = DataSource.of(name, uploads.get(name), positive)
            if inputs["model_source"] == "upload":
                model = ModelSource(data=models[inputs["model_file"]][0])
            else:
                gamma = parse_gamma(inputs["gamma"])
                model = ModelSource(inputs["kernel"], float(inputs["C"]), gamma)
            built = walks(data, model, inputs["centering"], int(inputs["seed"]))
            if not np.isfinite(built.full_score).all():
                # (θ's range, the plots and every number would be NaN: refused as a bad input,
                # the model in use kept)
                raise DataError(
                    f"the model's scores on {name} are not all finite numbers (NaN or "
                    "infinite): its feature values are too large for it; rescale the features"
                )
            return built

        def done(built: Walks) -> None:
            if self._inputs() == inputs:
                bounds = rules.theta_range(built)  # θ follows the data
                self._applied = inputs
                self._settled = {k: getattr(self, k) for k in controls.MODEL_INPUTS}
                dropped, self._dropping = self._dropping, None
                if dropped is not None and inputs["model_source"] != "upload":
                    self._said_dropped(dropped)
                if inputs["dataset"] in self._uploads:
                    self._upload_classes[inputs["dataset"]] = inputs["positive_class"]
                self.param.theta.bounds = lo, hi = bounds
                theta = self.theta if lo <= self.theta <= hi else 0.0
                # The new walk's sketch (if known) and the rule for it, in the same update.
                sketch = sketches.known(built)
                put_back = self._refused(sketch)
                rule = self._rule_of(sketch, theta=theta, **put_back)
                new = {"rule": rule} if rule != self.rule else {}
                self.param.update(walks=built, theta=theta, focus=-1, sketch=sketch, **new, **put_back)  # fmt: skip
                if note := label_note(built):
                    self.report(note, "warning")
                waiting, self._on_built = self._on_built, []
                for asked, fn in waiting:
                    if asked == inputs:
                        fn()

        def fail(exc: BaseException) -> None:
            if self._inputs() != inputs:
                return  # superseded by a newer request
            self._on_built = [(asked, fn) for asked, fn in self._on_built if asked != inputs]
            self.report(exc)
            # An uploaded dataset not yet in use is dropped with its failed build — unless an
            # uploaded model came with it: the file was read alone when it came, so the pairing
            # failed (a LIBSVM file for a model that knows its features by name, say), and the
            # file stays for the trained model the page goes back to.
            file_alone = inputs.get("model_source") != "upload"
            if file_alone and inputs["dataset"] in self._uploads and inputs["dataset"] != self._applied.get("dataset"):  # fmt: skip
                self._pending_upload = self._uploads.pop(inputs["dataset"])
                self.param.dataset.objects = [o for o in self.param.dataset.objects if o != inputs["dataset"]]  # fmt: skip
            if self._applied:  # back to the model in use (its inputs: nothing is rebuilt), and
                # the training fields an uploaded model leaves unused (a file's preset γ stayed)
                back = {**self._settled, **self._applied}
                self.param.update({k: v for k, v in back.items() if getattr(self, k) != v})

        self.executor(job, done, fail)

    @property
    def building(self) -> bool:
        """Whether the controls ask for a model other than the one in use."""
        return self._inputs() != self._applied

    # -- uploads --------------------------------------------------------------------------------
    def upload_dataset(self, data: bytes | None, filename: str, retry: bool = False) -> bool:
        """Add an uploaded LIBSVM/CSV file as a dataset and switch to it. A refused file leaves
        the choices (kept for a retry with :attr:`positive_class`: ``retry``). Another file than
        the uploaded one in use is read without the positive class given for that one (its
        labels are its own). True if in use or building."""
        from attentive.data import max_upload_bytes

        limit, name = max_upload_bytes(), controls.UPLOAD_PREFIX + (filename or "upload")
        if not data:
            self.report(f"{filename or 'The upload'} is empty: expected a LIBSVM or CSV file.")
            return False
        if len(data) > limit:
            self.report(f"{filename} is {len(data) / 2**20:.3g} MB, over the upload limit of {limit / 2**20:.3g} MB (set ATTENTIVE_MAX_UPLOAD_MB to change it).")  # fmt: skip
            return False
        self._pending_upload = None
        self._uploads[name] = (bytes(data), filename)
        self.param.dataset.objects = [*(o for o in self.param.dataset.objects if o != name), name]
        # The positive class given for another uploaded file in use is that file's (a shared
        # address's class, given before its file, is kept).
        current = self._applied.get("dataset", "")
        earlier = current.startswith(controls.UPLOAD_PREFIX) and current != name
        own = self._upload_classes.get(name, "")  # (this file's, if it was read before)
        fresh = (
            {"positive_class": own} if earlier and self.positive_class != own and not retry else {}
        )
        if self.dataset == name and not fresh:
            self._build(self._inputs())
        else:
            self.param.update(dataset=name, **fresh)
        return self.dataset == name

    def upload_model(self, data: bytes | None, filename: str) -> bool:
        """Use an uploaded skops model (an exported AttentiveClassifier too), checked for trusted
        types and the dataset's feature count. True if in use or building."""
        from attentive.models import load_model

        try:
            if not data:
                raise InvalidParameterError(f"{filename} is empty: expected a skops model file.")
            # An uploaded dataset is read again for the model (its LIBSVM index base and CSV
            # columns follow the model: attentive.data.reader), and checked then.
            uploaded_data = self.dataset in self._uploads
            n_features = (
                self.walks.classifier.n_features_in_ if self.walks and not uploaded_data else None
            )
            loaded = load_model(bytes(data), n_features=n_features)
        except (AttentiveError, ValueError, TypeError) as exc:
            self.report(exc)
            return False
        from attentive.app.exports import exported_settings

        key = content_hash(bytes(data))
        self._models[key] = (bytes(data), filename)
        # An exported classifier comes back at the rule it was exported at (its walk's centring
        # and seed with the model; its rule once that is built), not at the page's rule.
        walk, rule, others = exported_settings(loaded)
        left = {k: v for k, v in walk.items() if not self._accepts(k, v)}
        walk = {k: v for k, v in walk.items() if k not in left}
        if others:
            self.report(f"{filename} holds an AttentiveClassifier fitted with settings the page does not make ({', '.join(others)}): its model is used at the page's rule.", "info")  # fmt: skip
        note = "".join(f"; its {k} = {v} is beyond the page's field, which keeps {getattr(self, k)}" for k, v in left.items())  # fmt: skip
        self.param.update(model_source="upload", model_file=key, **walk)
        in_use = self.model_source == "upload" and self.model_file == key  # a failed build reverts
        if rule and in_use:
            self.when_built(lambda: self._exported_rule(filename, rule, note))
        return in_use

    def when_built(self, fn: Callable[[], None]) -> None:
        """``fn()`` once the model the controls now ask for is in use: at once where it is,
        else when the build of exactly these inputs is applied — not at the end of an earlier
        build (``busy`` goes False after each), and never where that build fails or another
        model's is used instead."""
        if not self.building:
            return fn()
        self._on_built.append((self._inputs(), fn))

    def _accepts(self, name: str, value) -> bool:
        """Whether control ``name`` takes ``value`` (:meth:`_checked`)."""
        try:
            self._checked(name, value)
            return True
        except ValueError:
            return False

    def _exported_rule(self, filename: str, rule: dict, note: str = "") -> None:
        """An uploaded exported classifier's rule, once its model is in use: set back, or why
        not (its threshold outside this model's scores: every control is left as it is); a
        calibrated rule's family too, where calibration here chooses another."""
        rule = dict(rule)
        family = rule.pop("family", None)
        lo, hi = self.param.theta.bounds
        theta = rule.get("theta", self.theta)
        if not lo <= theta <= hi:
            self.report(f"{filename} is an exported classifier whose threshold θ = {theta:g} is outside this model's scores ({lo:.3g} to {hi:.3g}): its model is used at the page's rule.", "info")  # fmt: skip
            return
        if not self.set_controls(**rule):
            return
        shown = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in rule.items())  # fmt: skip
        report = rules.rule_classifier(self.walks, self.rule).calibration_ if family else None
        here = getattr(report, "family", None)
        if family is not None and here is not None and here != family:
            note += f"; calibrated here, the rule's family is {here}, where the file's is {family}"
        self.report(f"{filename} is an exported classifier: its rule is set back ({shown}){note}.", "info")  # fmt: skip

    # -- choosing an operating point -------------------------------------------------------------
    def _pick_entered(self, *events) -> None:
        """A target or a time budget was set: the field just set decides (both at once, as an
        address may give them: the target)."""
        given = [e.name for e in events if e.new is not None]
        if given and not self._restoring:
            self.pick("target" if "target" in given else given[0])

    def pick(self, field: str | None = None) -> None:
        """Move to the rule ``field`` ("target" or "time_budget") asks for, on the test set, and
        clear the other field; None: the one that is set (the target if both). Called when
        either is set, and again on a field's Enter on an unchanged value."""
        if field is None or getattr(self, field, None) is None:
            field = next(
                (f for f in ("target", "time_budget") if getattr(self, f) is not None), None
            )
        if self.walks is None or field is None:
            return
        other = "time_budget" if field == "target" else "target"
        try:
            key = self._pick_key()
            if field == "target":
                row = rules.cheapest(*key, self.target)
            else:
                # The times of this walk, side and θ: cached, or those on the page (the shared
                # cache may have let them go); None while the background times them.
                times = rules.rule_times.peek(*key)
                times = self.times if times is None else times
                trade = rules.tradeoff.peek(*key)
                if trade is not None and not rules.times_cover(times, trade):
                    # (The plain rules' times, shown while the sketched rules are timed, have
                    # none for the sketched rows: stored as this table's, they would stay so.)
                    times = None
                if times is None and self.background is not None:
                    # Timing every rule takes seconds: the budget applies when the background
                    # has timed them (_times_in), and the page says so meanwhile.
                    if not self._budget_waiting:
                        self.report(
                            f"Timing the rules first (a few seconds): the {self.time_budget:g} "
                            "µs budget applies then.",
                            "info",
                        )
                    self._budget_waiting = True
                    return
                self._budget_waiting = False
                # (What the pick timed is kept for every page: the table and the CSV show it.)
                row, timed = rules.timed_pick(*key, self.time_budget, times=times)
                if timed is not times:
                    rules.rule_times.put(timed, *key)
                    self.times = timed
        except (AttentiveError, ValueError) as exc:
            self.report(exc)
            return self.param.update(target=None, time_budget=None)
        z = float(row["z"])
        self._picked = (str(row["family"]), z, self.walks, self.side, self.theta)
        asked = {other: None} if getattr(self, other) is not None else {}  # one way at a time
        self.select_rule(str(row["family"]), z, **asked)

    def restore_pick(self, **fields) -> bool:
        """Set ``target`` or ``time_budget`` (``fields``; the target if both, as when they are
        entered) as what picked the rule in use, without picking again — where the rule in use
        is one it picks: an address holds the rule its pick chose and reopens it exactly, where
        a new pick could choose another (sketched rules offered since, the rules timed again).
        Otherwise (a target edited in the address, a rule the pickers never choose) it picks,
        as when the field is entered. True when the value was accepted."""
        if "target" in fields:
            fields = {"target": fields["target"]}
        if not self._picks_rule_in_use(fields):
            return self.set_controls(**fields)
        self._restoring = True
        try:
            ok = self.set_controls(**fields)
        finally:
            self._restoring = False
        if ok:
            self._picked = (self.boundary, self.z, self.walks, self.side, self.theta)
        return ok

    def _picks_rule_in_use(self, fields: dict) -> bool:
        """Whether the rule in use is one that ``fields``' target picks — with or without the
        sketched rules competing, as at the time of the link — or, for a time budget (whose
        rule turns on the times, taken again in each session), a rule of the table the time
        budget picks from."""
        if self.walks is None:
            return False
        try:
            ((name, value),) = fields.items()
            value = typed(self.param[name], value)
            if value is None:
                return False
            walks, side, theta, sketched = self._pick_key()
            if name == "time_budget":
                table = rules.on_slider(rules.tradeoff(walks, side, theta, sketched).table)
                rows = zip(table["family"], table["z"], strict=True)
            else:
                rows = [
                    (row["family"], row["z"])
                    for row in (
                        rules.cheapest(walks, side, theta, competing, value)
                        for competing in sorted({False, sketched})
                    )
                ]
            return any(
                str(family) == self.boundary and abs(float(z) - self.z) <= 1e-9
                for family, z in rows
            )
        except (AttentiveError, ValueError, TypeError):
            return False

    def _pick_key(self) -> tuple:
        """What a pick picks on: the walk, the side, θ and whether sketched rules compete."""
        return (self.walks, self.side, self.theta, self.sketched)

    def _times_in(self, event) -> None:
        """Times arrived: a time budget entered while they were computed applies now."""
        if not self._budget_waiting or event.new is None:
            return
        if self.time_budget is None:  # (cleared meanwhile)
            self._budget_waiting = False
            return
        self.pick("time_budget")

    def select_rule(self, family: str, z: float, **also) -> None:
        """Move to rule ``family`` at scale ``z``, with the δ slider at its δ' = Φ(−z) (in the
        URL and the exports too), in one update with ``also``."""
        z = float(z)
        self.param.update(boundary=family, z=z, delta=rules.delta_of(z), **also)

    def _forget_pick(self, *events) -> None:
        """The rule moved away from the picked one: clear the target and the time budget (one
        that waits for the rules' times too: the rule moved meanwhile is the user's)."""
        if self._budget_waiting:
            self._budget_waiting = False
            return self.param.update(time_budget=None)
        if self._picked is not None and not self.still_picked():
            self._picked = None
            self.param.update(target=None, time_budget=None)

    def still_picked(self) -> bool:
        """Whether the rule in use is the one the target or the time budget picked: its family
        and scale, on the walk, side and θ it was picked on (no move since; also while the
        watchers of a move run, before :meth:`_forget_pick` has cleared the fields)."""
        if self._picked is None:
            return False
        family, z, walks, side, theta = self._picked
        return walks is self.walks and (family, z, side, theta) == (
            self.boundary,
            self.z,
            self.side,
            self.theta,
        )

    def select_point(self, fraction: float, error: float, ranges=None) -> None:
        """The rule nearest a click on the tradeoff plot (x: mean evaluated fraction, y:
        disagreement): B for the budget rule, else the family whose curve is nearest, at its
        nearest point that the δ slider can set (:func:`rules.on_slider`; a curve is drawn
        over every scale of the grid). ``ranges``: the plot's axes as shown, ``((x0, x1),
        (y0, y1))`` (a user's zoom); None: as it draws them
        (:func:`attentive.app.figures.tradeoff_ranges`)."""
        if self.walks is None or not (math.isfinite(fraction) and math.isfinite(error)):
            return
        if self.boundary == "budget":
            return self.set_controls(budget=min(1.0, max(1.0 / self.walks.n_terms, fraction)))
        if self.tradeoff is None:
            return  # the curves are not drawn yet
        # Distances in the plot's own axes, as it draws them (a share of each axis's length).
        if ranges is None:
            ranges = figures.tradeoff_ranges(self.tradeoff, self.numbers())
        (x0, x1), (y0, y1) = ranges
        if not (x1 > x0 and y1 > y0):
            return

        def nearest(rows):
            x, y = rows["work_fraction"].to_numpy(), rows["disagreement"].to_numpy()
            d = ((x - fraction) / (x1 - x0)) ** 2 + ((y - error) / (y1 - y0)) ** 2
            return rows.iloc[int(np.nanargmin(d))]

        # The curve clicked (any point drawn), then its nearest point the δ slider can show.
        rows = self.tradeoff.families
        clicked = nearest(rows)
        family = clicked["method"]
        row = nearest(rules.on_slider(rows[rows["method"] == family]))
        self.select_rule(str(row["method"]), float(row["z"]))
        z = float(clicked["z"])
        if not rules.settable(z):  # said, or the star seems to land anywhere
            self.report(
                f"That point of the {family} curve (work {clicked['work_fraction']:.2f}, "
                f"disagreement {clicked['disagreement']:.4f}) is at the scale z = {z:.2f}, "
                f"δ' = {rules.nominal_delta(z):.3g}: beyond the δ slider ({rules.slider_span()}). "
                f"The nearest point it can set is taken: work {row['work_fraction']:.2f}, "
                f"disagreement {row['disagreement']:.4f}.",
                level="info",
            )
