"""The sidebar: controls generated from the state's parameters, and the export buttons.

Widgets are created per view instance (never as class attributes, which every session would
share). Released sliders set the state once per drag (``value_throttled``).
"""

from __future__ import annotations

import math

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from attentive.app import exports
from attentive.app.rules import DELTA_RANGE
from attentive.app.state import DashboardState

__all__ = ["Controls", "ExportPanel", "released_slider", "with_tooltip"]

# Registry datasets fetched from the internet the first time (the others ship with the project).
DOWNLOADED = ("mnist-2v5", "gisette", "real-sim")


def _dataset_label(name: str) -> str:
    return f"{name} (needs internet)" if name in DOWNLOADED else name


def with_tooltip(widget: pn.widgets.Widget, doc: str) -> pn.viewable.Viewable:
    """A widget whose label explains itself on hover (``description`` or a tooltip icon)."""
    if "description" in widget.param:
        widget.description = doc
        return widget
    return pn.Row(widget, pn.widgets.TooltipIcon(value=doc, margin=(28, 0, 0, -10)))


def released_slider(
    state: DashboardState, name: str, widget_type=pn.widgets.FloatSlider, **kw
) -> pn.widgets.Widget:
    """A slider for ``state.<name>`` that sets it when a drag is released, not at every step.

    The state follows ``value_throttled`` (one recompute per drag); the slider follows the state
    (value and bounds), e.g. when the URL or a click on the tradeoff plot sets it.
    """
    p = state.param[name]
    lo, hi = p.bounds
    slider = widget_type(
        name=p.label,
        start=lo,
        end=hi,
        value=getattr(state, name),
        sizing_mode="stretch_width",
        **kw,
    )

    def to_state(event) -> None:
        if event.new is not None and event.new != getattr(state, name):
            with pn.io.unlocked():  # every change this move causes goes out in one message
                state.set_controls(**{name: event.new})

    def to_slider(event) -> None:
        if event.what == "bounds":
            slider.param.update(start=event.new[0], end=event.new[1])
        elif slider.value != event.new:
            slider.value = event.new

    slider.param.watch(to_state, "value_throttled")
    state.param.watch(to_slider, name, what="value")
    state.param.watch(to_slider, name, what="bounds")
    return slider


class Controls(pn.viewable.Viewer):
    """The sidebar: widgets generated from the state's parameters (one set per session)."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        p = s.param
        self.delta_slider = pn.widgets.FloatSlider(
            name=p.delta.label,
            start=math.log10(DELTA_RANGE[0]),
            end=math.log10(DELTA_RANGE[1]),
            step=0.01,
            value=math.log10(s.delta),
            css_classes=["att-delta"],
            format=CustomJSTickFormatter(
                code="return Number((10 ** tick).toPrecision(2)).toString()"
            ),
            sizing_mode="stretch_width",
        )
        self.delta_slider.param.watch(self._slider_to_delta, "value_throttled")
        s.param.watch(self._delta_to_slider, "delta")
        self.theta_slider = released_slider(
            s, "theta", step=0.01, format="0.00", css_classes=["att-theta"]
        )
        self.seed_input = pn.widgets.IntInput.from_param(
            p.seed, sizing_mode="stretch_width", css_classes=["att-seed"]
        )
        self.budget_slider = released_slider(s, "budget", step=0.01)
        self.trajectory_slider = released_slider(
            s, "n_trajectories", pn.widgets.IntSlider, css_classes=["att-trajectories"]
        )
        self.budget_row = with_tooltip(self.budget_slider, p.budget.doc)
        self.budget_row.visible = s.boundary == "budget"
        s.param.watch(lambda e: setattr(self.budget_row, "visible", e.new == "budget"), "boundary")
        self.data_upload = pn.widgets.FileInput(
            accept=".csv,.tsv,.libsvm,.svm,.svmlight,.txt,.t,.dat,.gz,.bz2,.xz",
            css_classes=["att-data-upload"],
            sizing_mode="stretch_width",
            description="Upload your own LIBSVM or CSV file (label column 'label', 'class', 'target' or 'y').",
        )
        self.data_upload.param.watch(self._on_data_upload, "value")
        self.model_upload = pn.widgets.FileInput(
            accept=".skops",
            sizing_mode="stretch_width",
            description="Upload a fitted binary model saved with skops.io.dump (pickles are refused).",
        )
        self.model_upload.param.watch(self._on_model_upload, "value")

    def _slider_to_delta(self, event):
        if event.new is None:
            return
        value = float(10**event.new)
        lo, hi = DELTA_RANGE
        with pn.io.unlocked():  # every change this move causes goes out in one message
            self.state.set_controls(delta=min(hi, max(lo, float(f"{value:.3g}"))))

    def _delta_to_slider(self, event):
        target = math.log10(event.new)
        if abs((self.delta_slider.value or 0) - target) > 1e-9:
            self.delta_slider.value = target

    def _on_data_upload(self, event):
        if event.new:
            self.state.upload_dataset(event.new, self.data_upload.filename or "upload")

    def _on_model_upload(self, event):
        if event.new:
            self.state.upload_model(event.new, self.model_upload.filename or "model.skops")

    def __panel__(self):
        s = self.state
        p = s.param

        def w(widget_type, name, **kw):
            return widget_type.from_param(p[name], sizing_mode="stretch_width", **kw)

        def help_row(widget, name):
            return with_tooltip(widget, p[name].doc)

        radio = {"button_type": "primary", "button_style": "outline"}

        return pn.Column(
            pn.pane.Markdown("### Attentive prediction", margin=(0, 10)),
            help_row(w(pn.widgets.Select, "boundary"), "boundary"),
            help_row(w(pn.widgets.RadioButtonGroup, "side", **radio), "side"),
            help_row(self.delta_slider, "delta"),
            help_row(self.theta_slider, "theta"),
            self.budget_row,
            pn.pane.Markdown("### Data", margin=(0, 10)),
            pn.widgets.Select.from_param(
                p.dataset,
                sizing_mode="stretch_width",
                css_classes=["att-dataset"],
                options={_dataset_label(n): n for n in p.dataset.objects},
            ),
            pn.pane.Markdown("Or upload a LIBSVM / CSV file:", margin=(0, 10)),
            self.data_upload,
            w(pn.widgets.TextInput, "positive_class"),
            pn.pane.Markdown("### Model", margin=(0, 10)),
            help_row(w(pn.widgets.RadioButtonGroup, "model_source", **radio), "model_source"),
            w(pn.widgets.Select, "kernel"),
            pn.Row(
                w(pn.widgets.FloatInput, "C", step=0.1),
                w(pn.widgets.TextInput, "gamma"),
            ),
            pn.pane.Markdown("Or upload a skops model file:", margin=(0, 10)),
            self.model_upload,
            pn.pane.Markdown("### Walk", margin=(0, 10)),
            w(pn.widgets.Select, "centering"),
            self.seed_input,
            help_row(self.trajectory_slider, "n_trajectories"),
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

        kw = {"sizing_mode": "stretch_width", "button_type": "primary"}
        return pn.Column(
            pn.pane.Markdown("### Export the operating point", margin=(0, 10)),
            pn.widgets.FileDownload(
                callback=self._guarded(json_file),
                filename="operating_point.json",
                label="Operating point (JSON)",
                description="Dataset, model fingerprint, boundary, δ, θ, τ and the metrics.",
                **kw,
            ),
            pn.widgets.FileDownload(
                callback=self._guarded(skops_file),
                filename="attentive_classifier.skops",
                label="AttentiveClassifier (skops)",
                description="A fitted AttentiveClassifier at this operating point, ready to load with skops.",
                **kw,
            ),
            pn.widgets.FileDownload(
                callback=self._guarded(lambda: exports.operating_points_csv(s)),
                filename="operating_points.csv",
                label="Operating points (CSV)",
                description="Every family at every scale: z, δ', side, θ, fraction of terms, stop-error, disagreement, accuracy, precision, recall.",
                **kw,
            ),
            sizing_mode="stretch_width",
        )
