"""The dashboard's views: :class:`pn.viewable.Viewer` subclasses that draw the state's figure data.

Views compute nothing: each one reads :attr:`DashboardState.figures` (arrays and DataFrames built by
:mod:`attentive.app.compute`) and turns it into HoloViews elements. Plots are ``hv.DynamicMap`` over
the ``figures`` parameter, so a moved control updates their data in place and keeps the zoom.
Widgets are created per view instance (never as class attributes, which every session would share).
"""

from __future__ import annotations

import math

import holoviews as hv
import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from attentive.app.compute import DELTA_RANGE
from attentive.app.state import DashboardState

__all__ = [
    "COLORS",
    "Controls",
    "ExportPanel",
    "HeadlineNumbers",
    "PrecisionRecallView",
    "TheoryView",
    "TradeoffView",
    "TrajectoryView",
]

# Okabe–Ito colours. The full-evaluation class colours are used for walks, stops and numbers alike.
COLORS = {
    "negative": "#0072B2",
    "positive": "#D55E00",
    "full": "#8c8c8c",
    "attentive": "#CC79A7",
    "budgeted": "#009E73",
    "simulation": "#E69F00",
    "theta": "#8c8c8c",
}
PLOT_OPTS = {"responsive": True, "min_height": 300, "show_grid": True, "toolbar": "above"}
LEGEND = {
    "background_fill_alpha": 0.7,
    "label_text_font_size": "8pt",
    "glyph_height": 14,
    "spacing": 0,
    "padding": 4,
}


def _class_label(state: DashboardState, positive: bool) -> str:
    names = state.class_names
    return f"full evaluation: {names[1] if positive else names[0]}"


def with_tooltip(widget: pn.widgets.Widget, doc: str) -> pn.viewable.Viewable:
    """A widget whose label explains itself on hover (``description`` or a tooltip icon)."""
    if "description" in widget.param:
        widget.description = doc
        return widget
    return pn.Row(widget, pn.widgets.TooltipIcon(value=doc, margin=(28, 0, 0, -10)))


class _FigureView(pn.viewable.Viewer):
    """Base of the plots: a DynamicMap over the state's figure data."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        self._drawn_key = None

    def _element(self, figures):  # pragma: no cover - abstract
        raise NotImplementedError

    def _plot(self, figures):
        if figures is None:
            return self._empty()
        # Keep the user's zoom while a slider moves; refit the axes when the data is new (another
        # dataset, model, centering, seed, boundary kind or side).
        s = self.state
        key = (s.walks.key if s.walks is not None else None, s.boundary, s.side)
        refit = key != self._drawn_key
        self._drawn_key = key
        return self._element(figures).opts(
            hv.opts.Curve(framewise=refit),
            hv.opts.Scatter(framewise=refit),
            hv.opts.Points(framewise=refit),
        )

    def _empty(self):
        return hv.Curve([]).opts(**PLOT_OPTS)

    def dmap(self) -> hv.DynamicMap:
        return hv.DynamicMap(pn.bind(self._plot, self.state.param.figures))

    def __panel__(self):
        return pn.pane.HoloViews(self.dmap(), sizing_mode="stretch_both", min_height=300)


class TrajectoryView(_FigureView):
    """Partial scores ``S_t`` against t, stopped walks ending at their stop, with τ and θ_S."""

    def _element(self, f):
        s = self.state
        walks = [
            hv.Curve(
                f.trajectories[c],
                "t",
                "S",
                label=_class_label(s, c == "positive"),
            ).opts(color=COLORS[c], line_width=1, alpha=0.55)
            for c in ("negative", "positive")
        ]
        stops = [
            hv.Scatter(f.stops, "t", ["s", "full_class"], label="stopped here").opts(
                color=hv.dim("full_class").categorize(
                    {"negative": COLORS["negative"], "positive": COLORS["positive"]}
                ),
                marker="x",
                size=9,
                line_width=2,
            )
        ]
        b = f.boundary
        tau = [
            hv.Curve(b, "t", col, label="boundary τ").opts(
                color=COLORS["attentive"], line_width=3, line_dash="dashed"
            )
            for col in ("lower", "upper")
        ]
        budget_line = hv.Curve(f.budget_line, "t", "s", label="budget B").opts(
            color=COLORS["budgeted"], line_width=3, line_dash="dashed"
        )
        theta = hv.Curve(b, "t", "theta_s", label="θ_S (decision threshold)").opts(
            color=COLORS["theta"], line_dash="dotted", line_width=2
        )
        return hv.Overlay([*walks, *tau, budget_line, theta, *stops]).opts(
            hv.opts.Overlay(
                title="Walks of the partial score S_t",
                xlabel="t — terms evaluated",
                ylabel="partial score S_t",
                legend_position="top",
                legend_cols=3,
                legend_opts=LEGEND,
                **PLOT_OPTS,
            )
        )


class TradeoffView(_FigureView):
    """Stop-error and disagreement against mean terms evaluated; click to pick the operating point."""

    def _element(self, f):
        t = f.tradeoff
        curves = []
        names = {"attentive": "attentive (all τ)", "budgeted": "budgeted"}
        for method in ("attentive", "budgeted"):
            d = t[t.method == method]
            if d.empty:
                continue
            curves.append(
                hv.Curve(
                    d,
                    "mean_evaluated",
                    ["stop_error", "disagreement", "parameter"],
                    label=f"{names[method]}: stop-error",
                ).opts(color=COLORS[method], line_width=2.5, tools=["hover"])
            )
            curves.append(
                hv.Curve(
                    d,
                    "mean_evaluated",
                    ["disagreement", "stop_error"],
                    label=f"{method}: disagreement",
                ).opts(color=COLORS[method], line_width=1.5, line_dash="dashed")
            )
        kind = self.state.boundary
        dc = f.delta_curve
        grid = hv.Scatter(
            dc,
            "mean_evaluated",
            ["stop_error", "delta", "disagreement"],
            label=f"{'constant' if kind == 'budget' else kind}, δ grid (click)",
        ).opts(color=COLORS["attentive"], size=6, alpha=0.7, tools=["hover"])
        op = f.operating_point
        point = hv.Points(
            [(op["mean_evaluated"], op["stop_error"])],
            ["mean_evaluated", "stop_error"],
            label="operating point",
        ).opts(color="#ffd700", marker="star", size=22, line_color="black", line_width=1.5)
        return hv.Overlay([*curves, grid, point]).opts(
            hv.opts.Overlay(
                title="Tradeoff: stop-error against terms evaluated",
                xlabel=f"mean terms evaluated (of {f.n_terms:,})",
                ylabel="error rate",
                padding=(0.03, 0.05),
                legend_position="top",
                legend_cols=2,
                legend_opts=LEGEND,
                **PLOT_OPTS,
            )
        )

    def __panel__(self):
        dmap = self.dmap()
        tap = hv.streams.Tap(source=dmap, x=None, y=None)
        tap.add_subscriber(self._on_tap)
        return pn.pane.HoloViews(dmap, sizing_mode="stretch_both", min_height=300)

    def _on_tap(self, x=None, y=None):
        if x is not None and y is not None:
            self.state.select_point(float(x), float(y))


class PrecisionRecallView(_FigureView):
    """Precision–recall of the full, attentive and budgeted scores against the true labels."""

    def _element(self, f):
        curves = []
        for method, label in (
            ("full", "full"),
            ("attentive", "attentive"),
            ("budgeted", f"budgeted (B = {f.metrics['budget_compared']})"),
        ):
            d = f.pr[f.pr.method == method]
            ap = f.average_precision[method]
            curves.append(
                hv.Curve(d, "recall", "precision", label=f"{label}: AP {ap:.3f}").opts(
                    color=COLORS[method],
                    line_width=3 if method == "full" else 2,
                    line_dash="solid" if method != "budgeted" else "dashdot",
                    interpolation="steps-pre",
                )
            )
        return hv.Overlay(curves).opts(
            hv.opts.Overlay(
                title="Precision–recall against the true labels",
                xlabel="recall",
                ylabel="precision",
                legend_position="bottom_left",
                legend_opts=LEGEND,
                **PLOT_OPTS,
            )
        )


class TheoryView(_FigureView):
    """Required δ against actual stop-error: this dataset and the Brownian-bridge simulation."""

    def _element(self, f):
        th = f.theory
        elements = [
            hv.Curve(
                (list(DELTA_RANGE), list(DELTA_RANGE)),
                "required",
                "actual",
                label="actual = required",
            ).opts(color=COLORS["theta"], line_dash="dotted", line_width=2)
        ]
        for source, color in zip(
            th.source.unique(), (COLORS["attentive"], COLORS["simulation"]), strict=True
        ):
            d = th[th.source == source]
            elements.append(
                hv.Curve(d, "required", "actual", label=source).opts(color=color, line_width=2.5)
            )
            elements.append(hv.Scatter(d, "required", "actual").opts(color=color, size=5))
        elements.append(
            hv.VLine(self.state.delta, label="current δ").opts(
                color=COLORS["attentive"], line_dash="dashed", line_width=1.5
            )
        )
        return hv.Overlay(elements).opts(
            hv.opts.Overlay(
                title="Theory check: actual against required δ",
                xlabel="required δ (log scale)",
                ylabel="actual stop-error",
                logx=True,
                legend_position="top_left",
                legend_opts=LEGEND,
                **PLOT_OPTS,
            )
        )


# ----------------------------------------------------------------------------- numbers

NUMBERS = (
    # key, label, explanation, format
    (
        "accuracy",
        "Accuracy: full → attentive",
        "Fraction of test labels predicted right by the full evaluation and by attentive prediction.",
    ),
    (
        "stop_error",
        "Stop-error",
        "Of the examples the full evaluation calls positive (lower side), the fraction stopped and called negative.",
    ),
    (
        "disagreement",
        "Disagreement",
        "Fraction of test examples whose early decision differs from the full evaluation's.",
    ),
    (
        "evaluated",
        "Mean terms evaluated",
        "Average number of terms (support vectors or features) computed per example before stopping.",
    ),
    (
        "speedup",
        "Evaluation speed-up",
        "n / mean terms evaluated: how many times fewer kernel or feature evaluations.",
    ),
    (
        "stopped",
        "Examples stopped",
        "Test examples whose walk crossed the boundary before the last term.",
    ),
)


class HeadlineNumbers(pn.viewable.Viewer):
    """The headline numbers as cards, each explaining itself on hover."""

    state = param.ClassSelector(class_=DashboardState)

    def _values(self, f) -> dict[str, str]:
        m = f.metrics
        return {
            "accuracy": f"{m['accuracy_full']:.1%} → {m['accuracy_attentive']:.1%}",
            "stop_error": _pct(m["stop_error"]),
            "disagreement": _pct(m["disagreement"]),
            "evaluated": f"{m['mean_evaluated']:,.1f} of {m['n_terms']:,} "
            f"({m['mean_evaluated_fraction']:.0%})",
            "speedup": f"{m['speedup']:.2f}×",
            "stopped": f"{m['n_stopped']:,} of {m['n_test']:,} ({m['fraction_stopped']:.0%})",
        }

    def _html(self, figures) -> str:
        if figures is None:
            return "<div class='att-numbers'>No model yet.</div>"
        values = self._values(figures)
        cards = "".join(
            f"<div class='att-card' title='{doc}'><div class='att-label'>{label}"
            "<span class='att-help'>?</span></div>"
            f"<div class='att-value' data-key='{key}'>{values[key]}</div></div>"
            for key, label, doc in NUMBERS
        )
        return f"<div class='att-numbers'>{cards}</div>"

    def __panel__(self):
        return pn.pane.HTML(
            pn.bind(self._html, self.state.param.figures),
            sizing_mode="stretch_width",
            stylesheets=[NUMBER_CSS],
        )


def _pct(v: float) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.2%}"


NUMBER_CSS = """
.att-numbers { display: grid; grid-template-columns: repeat(auto-fit, minmax(135px, 1fr));
                gap: 8px; }
.att-help { display: inline-block; width: 13px; height: 13px; line-height: 13px; margin-left: 4px;
            border-radius: 50%; border: 1px solid currentColor; font-size: 9px; text-align: center;
            vertical-align: 1px; }
.att-card { border: 1px solid var(--panel-border-color, #8884); border-radius: 6px;
            padding: 6px 10px; cursor: help; }
.att-label { font-size: 12px; opacity: 0.75; }
.att-value { font-size: 15px; font-weight: 600; }
"""


# ----------------------------------------------------------------------------- controls


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
        self.theta_slider = pn.widgets.FloatSlider.from_param(
            p.theta,
            step=0.01,
            format="0.00",
            sizing_mode="stretch_width",
            css_classes=["att-theta"],
        )
        self.seed_input = pn.widgets.IntInput.from_param(
            p.seed, sizing_mode="stretch_width", css_classes=["att-seed"]
        )
        self.budget_slider = pn.widgets.FloatSlider.from_param(
            p.budget, step=0.01, sizing_mode="stretch_width"
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
            pn.pane.Markdown("### Data", margin=(0, 10)),
            w(pn.widgets.Select, "dataset", css_classes=["att-dataset"]),
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
            pn.pane.Markdown("### Attentive prediction", margin=(0, 10)),
            help_row(w(pn.widgets.RadioButtonGroup, "boundary", **radio), "boundary"),
            help_row(w(pn.widgets.RadioButtonGroup, "side", **radio), "side"),
            w(pn.widgets.Select, "centering"),
            help_row(self.delta_slider, "delta"),
            help_row(self.theta_slider, "theta"),
            self.seed_input,
            self.budget_row,
            help_row(w(pn.widgets.IntSlider, "n_trajectories"), "n_trajectories"),
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
            return io.StringIO(s.operating_point_json())

        def skops_file():
            return io.BytesIO(s.classifier_bytes())

        kw = {"sizing_mode": "stretch_width", "button_type": "primary", "button_style": "outline"}
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
                callback=self._guarded(s.curves_csv),
                filename="tradeoff_curves.csv",
                label="Tradeoff curves (CSV)",
                description="Stop-error, disagreement and mean terms evaluated along every curve.",
                **kw,
            ),
            sizing_mode="stretch_width",
        )
