"""The sidebar: controls generated from the state's parameters, and the export buttons.

Widgets are created per view instance (never as class attributes, which every session would
share) and linked to the state's parameters with ``from_param``; sliders with
``throttled=True`` (the state follows ``value_throttled``: one change per drag). Typed values
(seed, C, gamma, the target disagreement, the time budget) are text fields that go through
:meth:`DashboardState.set_controls`, so that a refused value is reported and the field shows the
value in use.

Every help tooltip is shown from a small help icon, wraps at :data:`TOOLTIP_MAX_WIDTH` and opens
beside the icon, over the main area (never over the sidebar's controls), and the download buttons carry their colour to the browser (Panel 1.9's ``FileDownload``
drops ``button_type`` on the way to its Bokeh model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import panel as pn
import param
from bokeh.models import Tooltip as BkTooltip

from attentive.app import controls, exports, rules, sketches
from attentive.app.state import DashboardState
from attentive.models.training import GAMMA_KINDS

__all__ = [
    "CalibrationControls",
    "Controls",
    "EntryInput",
    "ExportPanel",
    "FileDownload",
    "SketchNote",
    "checked_input",
    "tooltip",
    "with_tooltip",
]

UPLOAD_HELP = "Upload your own LIBSVM or CSV file (label column 'label', 'class', 'target' or 'y')."
MODEL_UPLOAD_HELP = "Upload a fitted binary model saved with skops.io.dump, or a classifier exported here (pickles are refused)."
# Registry datasets fetched from the internet the first time (the others ship with the project).
DOWNLOADED = ("mnist-2v5", "gisette", "real-sim")


def _dataset_label(name: str) -> str:
    return f"{name} (needs internet)" if name in DOWNLOADED else name


# Tooltips wrap at this width. On a phone (the sidebar then spans the screen) a tooltip is laid
# across the window's width instead, at the icon's height.
TOOLTIP_MAX_WIDTH = 300
TOOLTIP_CSS = (
    f":host {{ white-space: normal; max-width: min({TOOLTIP_MAX_WIDTH}px, calc(100vw - 24px)); }}"
    # Opaque: Bokeh's is 95 % opaque, and on a phone, where the tooltip opens over the
    # sidebar's own controls, their labels and sliders showed through the help text.
    ":host { opacity: 1; }"
    "@media (max-width: 700px) { :host { left: 12px !important; right: 12px !important; } }"
)


# Where a tooltip attaches to its help icon (an 18 px square): the middle of the icon's right edge,
# opening to the right. The icons sit at the sidebar's right edge, so a tooltip lies over the main
# area and covers no control (opening below, the side buttons' help covered the δ slider; Bokeh's
# "horizontal" flips it to the left inside the sidebar's scrolling box).
HELP_ICON_SIZE = 18
TOOLTIP_PLACEMENT = {
    "position": (HELP_ICON_SIZE, HELP_ICON_SIZE / 2),
    "attachment": "right",
}


def tooltip(doc: str) -> BkTooltip:
    """A help tooltip that wraps at :data:`TOOLTIP_MAX_WIDTH` and opens beside its help icon
    (:data:`TOOLTIP_PLACEMENT`), never over the controls below or above it."""
    return BkTooltip(content=doc, stylesheets=[TOOLTIP_CSS], **TOOLTIP_PLACEMENT)


def _wrap_tooltips(props: dict) -> dict:
    # Panel builds the Bokeh tooltip of a text ``description`` itself (to the right, which a
    # phone cuts off); the same tooltip is placed like the others and wraps at the same width.
    for key in ("description", "tooltip"):
        tip = props.get(key)
        if isinstance(tip, BkTooltip):
            tip.update(stylesheets=[TOOLTIP_CSS], **TOOLTIP_PLACEMENT)
    return props


def _wrapped(widget_type: type) -> type:
    """``widget_type`` whose help tooltip (``description``) wraps and opens beside its icon."""

    def _process_param_change(self, params):
        return _wrap_tooltips(super(cls, self)._process_param_change(params))

    cls = type(
        widget_type.__name__, (widget_type,), {"_process_param_change": _process_param_change}
    )
    cls.__doc__ = widget_type.__doc__
    return cls


Select = _wrapped(pn.widgets.Select)
TextInput = _wrapped(pn.widgets.TextInput)
RadioButtonGroup = _wrapped(pn.widgets.RadioButtonGroup)
FileInput = _wrapped(pn.widgets.FileInput)


class EntryInput(TextInput):
    """A text field whose entry reaches Python once per Enter.

    Bokeh's text input sends the typed value on Enter (its change event), and Panel's
    ``enter-pressed`` handler sets ``value`` to the typed text once more. After an entry the
    state refused and put back, that second copy was a second refused entry (two notifications).
    Here Enter only fires ``enter_pressed``.
    """

    def _process_event(self, event) -> None:
        if event.event_name == "enter-pressed":
            self.value_input = event.value_input
            self.enter_pressed = True
            return
        super()._process_event(event)


class FileDownload(_wrapped(pn.widgets.FileDownload)):
    """Panel's ``FileDownload`` whose colour (``color``, alias ``button_type``) reaches the browser.

    Panel 1.9 turns ``button_type`` into its alias ``color`` and then drops ``color`` on the way to
    the Bokeh model, so every download button rendered as ``bk-btn-default`` (flat grey). Here
    ``color`` is sent as the model's ``button_type``.
    """

    _rename: ClassVar[dict] = {**pn.widgets.FileDownload._rename, "color": "button_type"}


def with_tooltip(widget: pn.widgets.Widget, doc: str) -> pn.viewable.Viewable:
    """A widget that explains itself on hover of a help icon at the right end of its row.

    The icon sits at the sidebar's right edge (not beside the label, Panel's ``description``), so
    that its tooltip, opening to the right, lies over the main area and covers no control.
    """
    if "description" in widget.param:
        widget.description = None
    unlabelled = (pn.widgets.RadioButtonGroup, pn.widgets.FileDownload, pn.widgets.FileInput)
    margin = (14, 0, 0, -6) if isinstance(widget, unlabelled) else (28, 0, 0, -10)
    return pn.Row(widget, help_icon(doc, margin=margin), sizing_mode="stretch_width")


def help_icon(doc: str, margin=(28, 0, 0, -10)) -> pn.widgets.TooltipIcon:
    """A help icon whose tooltip is :func:`tooltip` (wrapped, below or above the icon)."""
    # Fixed: a stretching icon (the extension's default sizing) would take half of its row.
    return pn.widgets.TooltipIcon(
        value=tooltip(doc), margin=margin, sizing_mode="fixed", width=20, height=20
    )


def _number_text(value) -> str:
    """A control's value as its text field shows it (floats to 12 significant digits: 1, 0.05;
    nothing for None)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


def checked_input(
    state: DashboardState, name: str, on_enter: Callable[[], None] | None = None, **kw
) -> EntryInput:
    """A text field for ``state.<name>`` whose entries go through ``state.set_controls``.

    The state validates and reports (a notification) what it refuses; the field then shows the
    value in use. A text field, not Bokeh's numeric input: that one silently refuses a value
    outside its bounds or a word in the browser, so the state never hears of it and the field
    keeps showing what was typed. With ``on_enter``, Enter on an unchanged entry calls it (the
    target disagreement applied again).
    """
    p = state.param[name]
    field = EntryInput(
        label=p.label,
        value=_number_text(getattr(state, name)),
        sizing_mode="stretch_width",
        **kw,
    )

    def show_state() -> None:
        text = _number_text(getattr(state, name))
        if field.value != text:
            field.value = text

    def to_state(event) -> None:
        text = (event.new or "").strip()
        if text == _number_text(getattr(state, name)):
            if event.new != text:
                field.value = text
            return
        with pn.io.unlocked():  # every change this entry causes goes out in one message
            state.set_controls(**{name: text})
            show_state()  # refused: the value in use; accepted: as the state holds it

    def again(event) -> None:
        if (field.value_input or "").strip() == field.value and getattr(state, name) is not None:
            with pn.io.unlocked():
                on_enter()

    field.param.watch(to_state, "value")
    if on_enter is not None:
        field.param.watch(again, "enter_pressed")
    state.param.watch(lambda event: show_state(), name)
    return field


class Controls(pn.viewable.Viewer):
    """The sidebar: widgets generated from the state's parameters (one set per session)."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        p = s.param
        # δ is log-scaled: a slider over every δ of its grid (rules.delta_steps).
        self.delta_slider = pn.widgets.DiscreteSlider.from_param(
            p.delta,
            throttled=True,
            options=[float(d) for d in rules.delta_steps()],
            formatter="%.3g",
            css_classes=["att-delta"],
            sizing_mode="stretch_width",
        )
        slider = {"throttled": True, "sizing_mode": "stretch_width"}
        self.theta_slider = pn.widgets.FloatSlider.from_param(
            p.theta, step=0.01, format="0.00", css_classes=["att-theta"], **slider
        )
        self.budget_slider = pn.widgets.FloatSlider.from_param(
            p.budget, step=0.01, css_classes=["att-budget"], **slider
        )
        self.trajectory_slider = pn.widgets.IntSlider.from_param(
            p.n_trajectories, css_classes=["att-trajectories"], **slider
        )
        self.seed_input = checked_input(s, "seed", css_classes=["att-seed"])
        self.C_input = checked_input(s, "C", css_classes=["att-C"])
        self.gamma_input = checked_input(s, "gamma", css_classes=["att-gamma"])
        # A linear kernel or model has no gamma: the field would change nothing.
        self.gamma_input.visible = pn.bind(lambda kind: kind in GAMMA_KINDS, p.kernel)
        # δ plays no part in the budgeted rule: its slider gives way to the budget B.
        is_budget = pn.bind(lambda kind: kind == "budget", p.boundary)
        self.budget_row = with_tooltip(self.budget_slider, p.budget.doc)
        self.budget_row.visible = is_budget
        self.delta_row = with_tooltip(self.delta_slider, p.delta.doc)
        self.delta_row.visible = pn.bind(lambda kind: kind != "budget", p.boundary)
        # A file handed to the state is cleared from its input at once: the dataset (or model)
        # in use is shown by its own control, and a refused file does not stay shown.
        self.data_upload = FileInput(
            accept=".csv,.tsv,.libsvm,.svm,.svmlight,.txt,.t,.dat,.gz,.bz2,.xz",
            css_classes=["att-data-upload"],
            sizing_mode="stretch_width",
        )
        # An empty file arrives as a file name without a value: both are watched.
        self.data_upload.param.watch(self._on_data_upload, ["value", "filename"])
        self.model_upload = FileInput(
            accept=".skops",
            css_classes=["att-model-upload"],
            sizing_mode="stretch_width",
        )
        self.model_upload.param.watch(self._on_model_upload, ["value", "filename"])

    @staticmethod
    def _taken(widget) -> tuple[bytes, str] | None:
        """The file a FileInput holds (empty bytes for an empty file), cleared from it."""
        data, name = widget.value, widget.filename
        if data is None and name is None:
            return None  # cleared
        widget.clear()
        return data or b"", name or "upload"

    def _on_data_upload(self, *events):
        taken = self._taken(self.data_upload)
        if taken is not None:
            with pn.io.unlocked():  # the new dataset, its numbers and the URL in one message
                self.state.upload_dataset(*taken)

    def _on_model_upload(self, *events):
        taken = self._taken(self.model_upload)
        if taken is not None:
            self.state.upload_model(*taken)

    def _model_params(self, walks, source) -> str:
        if walks is None or not walks.problem.model_source.uploaded or source != "upload":
            return ""
        description = walks.problem.description
        # (a parameter the description names already, SVC(kernel='rbf', C=1), is not repeated)
        named = description.replace(" ", "")
        given = dict(walks.problem.params)
        if given.get("kernel") not in GAMMA_KINDS:
            given.pop("gamma", None)  # (a linear kernel has none: its field is hidden too)
        params = ", ".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v:g}" for k, v in given.items() if f"{k}=" not in named)  # fmt: skip
        return f"**Uploaded model**: {description}" + (f"; {params}" if params else "")

    def __panel__(self):
        s = self.state
        p = s.param

        def w(widget_type, name, **kw):
            widget = widget_type.from_param(p[name], sizing_mode="stretch_width", **kw)
            return with_tooltip(widget, p[name].doc)

        def help_row(widget, name):
            return with_tooltip(widget, p[name].doc)

        radio = {"color": "primary", "variant": "outline"}
        training = pn.Column(
            w(Select, "kernel"),
            # One help icon for both fields, at the row's end: beside C, its tooltip would
            # cover the gamma field.
            pn.Row(
                self.C_input,
                self.gamma_input,
                help_icon(f"C: {p.C.doc} gamma: {p.gamma.doc}"),
                sizing_mode="stretch_width",
            ),
            visible=pn.bind(lambda source: source == "train", p.model_source),
            sizing_mode="stretch_width",
        )
        uploaded = pn.pane.Markdown(
            pn.bind(self._model_params, p.walks, p.model_source),
            margin=(0, 10),
            css_classes=["att-model-params"],
        )
        rule = Select.from_param(p.boundary, sizing_mode="stretch_width")
        # The sketched rules are not offered where the walk's sketch says none pays.
        s.param.watch(lambda event: setattr(rule, "options", offered(event.new)), "sketch")
        rule.options = offered(s.sketch)
        return pn.Column(
            pn.pane.Markdown("### Attentive prediction", margin=(0, 10)),
            with_tooltip(rule, p.boundary.doc),
            w(RadioButtonGroup, "side", **radio),
            self.delta_row,
            help_row(self.theta_slider, "theta"),
            CalibrationControls(state=s),
            self.budget_row,
            SketchNote(state=s),
            pn.pane.Markdown("### Data", margin=(0, 10)),
            w(
                Select,
                "dataset",
                css_classes=["att-dataset"],
                options={_dataset_label(n): n for n in p.dataset.objects},
            ),
            pn.pane.Markdown("Or upload a LIBSVM / CSV file:", margin=(0, 10)),
            with_tooltip(self.data_upload, UPLOAD_HELP),
            w(TextInput, "positive_class"),
            pn.pane.Markdown("### Model", margin=(0, 10)),
            w(RadioButtonGroup, "model_source", **radio),
            training,
            uploaded,
            pn.pane.Markdown(f"{controls.MODEL_UPLOAD_LABEL}:", margin=(0, 10)),
            with_tooltip(self.model_upload, MODEL_UPLOAD_HELP),
            pn.pane.Markdown("### Walk", margin=(0, 10)),
            w(Select, "centering"),
            help_row(self.seed_input, "seed"),
            help_row(self.trajectory_slider, "n_trajectories"),
            sizing_mode="stretch_width",
        )


class CalibrationControls(pn.viewable.Viewer):
    """The α slider, shown only while the calibrated boundary is selected: in the rule's
    section, under δ and θ (at the sidebar's foot, under "Walk", it was far from the δ it
    qualifies and the Rule menu that shows it)."""

    state = param.ClassSelector(class_=DashboardState)

    def __panel__(self):
        p = self.state.param
        slider = pn.widgets.FloatSlider.from_param(
            p.alpha,
            throttled=True,
            step=0.005,
            format="0.000",
            sizing_mode="stretch_width",
            css_classes=["att-alpha"],
        )
        return pn.Row(
            slider,
            help_icon(p.alpha.doc),
            visible=pn.bind(lambda kind: kind == "calibrated", p.boundary),
            sizing_mode="stretch_width",
        )


def offered(sketch) -> list[str]:
    """The rules the rule control lists: all of them, but the sketched ones where ``sketch``
    (the walk's, :class:`attentive.app.sketches.Sketch`) says none pays."""
    return [k for k in rules.kinds() if sketch is None or sketch.pays or not rules.is_sketched(k)]


class SketchNote(pn.viewable.Viewer):
    """Where the sketched rules are (SPEC §3b): not fitted yet (with a button to fit the
    sketch), being fitted, the sketch chosen, or why there is none."""

    state = param.ClassSelector(class_=DashboardState)

    def _text(self, sketch, sketching, walks) -> str:
        return sketches.note(sketch, sketching is not None and sketching is walks)

    def __panel__(self):
        s = self.state
        p = s.param
        button = pn.widgets.Button(
            label="Fit a sketch",
            button_type="primary",
            button_style="outline",
            css_classes=["att-fit-sketch"],
            sizing_mode="fixed",
            width=130,
            height=32,  # fixed sizing needs both (Bokeh warns W-1005 otherwise)
            visible=pn.bind(
                lambda sketch, sketching: sketch is None and sketching is None,
                p.sketch,
                p.sketching,
            ),
        )
        button.on_click(lambda event: s.fit_sketch())
        return pn.Column(
            pn.pane.Markdown(
                pn.bind(self._text, p.sketch, p.sketching, p.walks),
                margin=(0, 10),
                styles={"font-size": "12px"},
                css_classes=["att-sketch-note"],
            ),
            button,
            sizing_mode="stretch_width",
        )


class ExportPanel(pn.viewable.Viewer):
    """Downloads of the operating point (JSON), a ready classifier (skops) and the curves (CSV)."""

    state = param.ClassSelector(class_=DashboardState)

    def _guarded(self, fn):
        def call():
            try:
                return fn()
            except Exception as exc:  # reported as a notification; the download yields nothing
                self.state.report(exc)
                return None

        return call

    def __panel__(self):
        s = self.state
        import io

        def json_file():
            return io.StringIO(exports.operating_point_json(s))

        def skops_file():
            return io.BytesIO(exports.classifier_bytes(s))

        kw = {"sizing_mode": "stretch_width", "color": "primary"}
        downloads = (
            (json_file, "operating_point.json", "Operating point (JSON)", "Dataset, its positive class, model fingerprint, rule, δ, z, θ, τ, the metrics and the measured times."),
            (skops_file, "attentive_classifier.skops", "AttentiveClassifier (skops)", "A fitted AttentiveClassifier at this operating point, ready to load with skops (or to upload here again)."),
            (lambda: exports.operating_points_csv(s), "operating_points.csv", "Operating points (CSV)", "Every family at every scale: z, δ', side, θ, fraction of terms, stop-error, disagreement, accuracy, precision, recall, µs per example."),
        )  # fmt: skip
        return pn.Column(
            pn.pane.Markdown("### Export the operating point", margin=(0, 10)),
            *(
                with_tooltip(
                    FileDownload(callback=self._guarded(fn), filename=name, label=label, **kw), doc
                )
                for fn, name, label, doc in downloads
            ),
            sizing_mode="stretch_width",
        )
