"""The dashboard's views: :class:`pn.viewable.Viewer` subclasses that draw the state's figure data.

Views compute nothing: each one reads :attr:`DashboardState.figures` (arrays and DataFrames built by
:mod:`attentive.app.compute`) and draws it. Each plot is one Bokeh figure built once per session; a
moved control replaces only the columns of its data sources that changed (and legend labels), so an
update is small, the figure is never rebuilt and the zoom stays.
Widgets are created per view instance (never as class attributes, which every session would share).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import panel as pn
import param
from bokeh.core.properties import value
from bokeh.events import Tap
from bokeh.models import (
    ColumnDataSource,
    CustomJSTickFormatter,
    HoverTool,
    Legend,
    LegendItem,
    Range1d,
)
from bokeh.plotting import figure

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


def with_tooltip(widget: pn.widgets.Widget, doc: str) -> pn.viewable.Viewable:
    """A widget whose label explains itself on hover (``description`` or a tooltip icon)."""
    if "description" in widget.param:
        widget.description = doc
        return widget
    return pn.Row(widget, pn.widgets.TooltipIcon(value=doc, margin=(28, 0, 0, -10)))


# ----------------------------------------------------------------------------- plots
#
# The plots are Bokeh figures built once per view. A control move assigns new columns to their
# ColumnDataSources and new strings to their legend labels, and only where the data changed: a δ
# move re-sends the walks, stops, τ, the operating point, the precision–recall curves and the
# δ marker, never the tradeoff curves or the simulation. Nothing else in the document changes, so
# Bokeh neither rebuilds its model graph nor re-renders a figure, and the browser keeps the zoom.
# The axes are refit only when the data is new (dataset, model, centering, seed, boundary, side).

# Points per drawn curve in the browser; longer curves keep evenly spaced points, ends included.
MAX_CURVE_POINTS = 600
LEGEND_STYLE = {
    "background_fill_alpha": 0.7,
    "label_text_font_size": "8pt",
    "glyph_height": 14,
    "glyph_width": 22,
    "spacing": 0,
    "padding": 2,
    "margin": 2,
    "label_height": 12,
    "click_policy": "hide",
}


def _class_label(state: DashboardState, positive: bool) -> str:
    names = state.class_names
    return f"full evaluation: {names[1] if positive else names[0]}"


def _thin(n: int, limit: int = MAX_CURVE_POINTS) -> slice | np.ndarray:
    """Indices of at most ``limit`` evenly spaced points of ``n`` (first and last kept)."""
    if n <= limit:
        return slice(None)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def _col(values, rows=slice(None)) -> np.ndarray:
    """A column to draw: float32 (the screen cannot show more), thinned to ``rows``."""
    return np.asarray(values, dtype=np.float64)[rows].astype(np.float32)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    return a == b


def _extent(arrays, pad: float = 0.05, log: bool = False) -> tuple[float, float]:
    """A padded axis range around the finite values of ``arrays`` (positive ones on a log axis)."""
    parts = [np.asarray(a, dtype=np.float64).ravel() for a in arrays]
    v = np.concatenate(parts) if parts else np.empty(0)
    v = v[np.isfinite(v) & (v > 0)] if log else v[np.isfinite(v)]
    if v.size == 0:
        return (1e-4, 1.0) if log else (0.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    span = hi - lo or max(abs(hi), 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    return (10**lo, 10**hi) if log else (lo, hi)


class _PlotView(pn.viewable.Viewer):
    """Base of the plots: one Bokeh figure whose sources follow the state's figure data."""

    state = param.ClassSelector(class_=DashboardState)

    title = ""
    xlabel = ""
    ylabel = ""
    x_axis_type = "linear"
    legend_place: str | None = None  # "above" / "below" the data area, or None: inside
    legend_location = "top_left"
    legend_cols = 1

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = None
        self._drawn_key = object()
        self._sources: dict[str, ColumnDataSource] = {}
        self._items: dict[str, LegendItem] = {}

    # -- building ------------------------------------------------------------------------------
    def _figure(self):
        fig = figure(
            title=self.title,
            x_axis_label=self.xlabel,
            y_axis_label=self.ylabel,
            x_axis_type=self.x_axis_type,
            x_range=Range1d(0, 1),
            y_range=Range1d(0, 1),
            tools="pan,wheel_zoom,box_zoom,reset,save",
            active_drag="pan",
            active_scroll="wheel_zoom",
            toolbar_location="above",
            sizing_mode="stretch_both",
            min_height=300,
        )
        fig.toolbar.logo = None
        fig.title.align = "center"
        return fig

    def _source(self, name: str, *columns: str, strings: tuple[str, ...] = ()) -> ColumnDataSource:
        data = {c: np.empty(0, dtype=np.float32) for c in columns}
        data.update({c: np.empty(0, dtype=object) for c in strings})
        src = self._sources[name] = ColumnDataSource(data)
        return src

    def _legend(self, fig, items: dict[str, list]) -> None:
        self._items = {
            key: LegendItem(label=value(key), renderers=renderers)
            for key, renderers in items.items()
        }
        legend = Legend(items=list(self._items.values()), **LEGEND_STYLE)
        if self.legend_place is None:
            legend.location = self.legend_location
            fig.add_layout(legend)
        else:
            legend.orientation = "horizontal"
            legend.ncols = self.legend_cols
            legend.location = "center"
            legend.background_fill_alpha = 0
            legend.border_line_alpha = 0
            legend.spacing = 10
            fig.add_layout(legend, self.legend_place)

    def _build(self, fig) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- updating ------------------------------------------------------------------------------
    def _data(self, f) -> dict[str, dict[str, np.ndarray]]:  # pragma: no cover - abstract
        """Source name → columns to draw for figure data ``f``."""
        raise NotImplementedError

    def _labels(self, f) -> dict[str, str]:
        """Legend item key → label text for ``f`` (items not named keep their label)."""
        return {}

    def _hidden(self, f) -> set[str]:
        """Legend items (and their renderers) to hide for ``f``."""
        return set()

    def _ranges(self, f) -> tuple[tuple[float, float], tuple[float, float]]:  # pragma: no cover
        raise NotImplementedError

    def _axis_labels(self, f) -> tuple[str, str]:
        return self.xlabel, self.ylabel

    def _set_data(self, src: ColumnDataSource, data: dict[str, np.ndarray]) -> None:
        old = src.data
        if old.keys() == data.keys() and all(_same(old[k], v) for k, v in data.items()):
            return  # nothing new: send nothing
        src.data = data

    def _refresh(self, f) -> None:
        if f is None:
            return
        for name, data in self._data(f).items():
            self._set_data(self._sources[name], data)
        for key, text in self._labels(f).items():
            item = self._items[key]
            if item.label != value(text):
                item.label = value(text)
        hidden = self._hidden(f)
        for key, item in self._items.items():
            visible = key not in hidden
            if item.visible != visible:
                item.visible = visible
                for r in item.renderers:
                    r.visible = visible
        s = self.state
        key = (s.walks.key if s.walks is not None else None, s.boundary, s.side)
        if key != self._drawn_key:
            # New data: fit the axes to it (a slider move keeps the user's zoom).
            self._drawn_key = key
            fig = self._fig
            xlabel, ylabel = self._axis_labels(f)
            if fig.xaxis[0].axis_label != xlabel:
                fig.xaxis[0].axis_label = xlabel
            if fig.yaxis[0].axis_label != ylabel:
                fig.yaxis[0].axis_label = ylabel
            for rng, (lo, hi) in zip((fig.x_range, fig.y_range), self._ranges(f), strict=True):
                rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)

    def _on_figures(self, event) -> None:
        doc = self._fig.document
        if doc is None or doc.session_context is None:
            self._refresh(event.new)
            if doc is not None:
                pn.io.push_notebook(self._pane)  # a notebook: send the in-place changes
        elif pn.state.curdoc is doc:
            # In this session's context, perhaps without its lock (a background result applied
            # on the loop): Panel's unlocked() sends the changes straight to the browser.
            with pn.io.unlocked():
                self._refresh(event.new)
        else:
            doc.add_next_tick_callback(lambda: self._refresh(self.state.figures))

    def __panel__(self):
        if self._pane is None:
            self._fig = self._figure()
            self._build(self._fig)
            self._refresh(self.state.figures)
            self.state.param.watch(self._on_figures, "figures")
            self._pane = pn.pane.Bokeh(self._fig, sizing_mode="stretch_both", min_height=300)
        return self._pane


class TrajectoryView(_PlotView):
    """Partial scores ``S_t`` against t, stopped walks ending at their stop, with τ and θ_S."""

    title = "Walks of the partial score S_t"
    xlabel = "t — terms evaluated"
    ylabel = "partial score S_t"
    legend_place = "above"
    legend_cols = 2

    def _build(self, fig) -> None:
        neg = self._source("negative", "x", "y")
        pos = self._source("positive", "x", "y")
        b = self._source("boundary", "t", "lower", "upper", "theta_s")
        budget = self._source("budget", "t", "s")
        stops = self._source("stops", "t", "s", strings=("color",))
        walk = {"line_width": 1, "line_alpha": 0.55}
        r_neg = fig.line("x", "y", source=neg, color=COLORS["negative"], **walk)
        r_pos = fig.line("x", "y", source=pos, color=COLORS["positive"], **walk)
        tau = {"color": COLORS["attentive"], "line_width": 3, "line_dash": "dashed"}
        r_lo = fig.line("t", "lower", source=b, **tau)
        r_hi = fig.line("t", "upper", source=b, **tau)
        r_budget = fig.line(
            "t", "s", source=budget, color=COLORS["budgeted"], line_width=3, line_dash="dashed"
        )
        r_theta = fig.line(
            "t", "theta_s", source=b, color=COLORS["theta"], line_dash="dotted", line_width=2
        )
        r_stops = fig.scatter(
            "t", "s", source=stops, marker="x", size=9, line_width=2, color="color"
        )
        self._legend(
            fig,
            {
                "negative": [r_neg],
                "positive": [r_pos],
                "boundary τ": [r_lo, r_hi],
                "budget B": [r_budget],
                "θ_S (decision threshold)": [r_theta],
                "stopped here": [r_stops],
            },
        )

    def _data(self, f):
        (xn, yn), (xp, yp) = f.trajectories["negative"], f.trajectories["positive"]
        b = f.boundary
        rows = _thin(len(b))
        stops = f.stops
        return {
            "negative": {"x": _col(xn), "y": _col(yn)},
            "positive": {"x": _col(xp), "y": _col(yp)},
            "boundary": {
                c: _col(b[c].to_numpy(), rows) for c in ("t", "lower", "upper", "theta_s")
            },
            "budget": {c: _col(f.budget_line[c].to_numpy()) for c in ("t", "s")},
            "stops": {
                "t": _col(stops["t"].to_numpy()),
                "s": _col(stops["s"].to_numpy()),
                "color": np.where(
                    stops["full_class"].to_numpy() == "positive",
                    COLORS["positive"],
                    COLORS["negative"],
                ).astype(object),
            },
        }

    def _labels(self, f):
        s = self.state
        return {"negative": _class_label(s, False), "positive": _class_label(s, True)}

    def _hidden(self, f):
        return set() if f.budget is not None else {"budget B"}

    def _ranges(self, f):
        yn, yp = f.trajectories["negative"][1], f.trajectories["positive"][1]
        b = f.boundary
        ys = [yn, yp, b["lower"].to_numpy(), b["upper"].to_numpy(), b["theta_s"].to_numpy()]
        return (0.0, float(f.n_terms)), _extent(ys)


class TradeoffView(_PlotView):
    """Stop-error and disagreement against mean terms evaluated; click to pick the operating point."""

    title = "Tradeoff: stop-error against terms evaluated"
    ylabel = "error rate"
    legend_place = "above"
    legend_cols = 2
    NAMES: ClassVar[dict[str, str]] = {"attentive": "attentive (all τ)", "budgeted": "budgeted"}

    def _build(self, fig) -> None:
        items = {}
        hover_renderers = []
        for method in ("attentive", "budgeted"):
            src = self._source(method, "mean_evaluated", "stop_error", "disagreement", "parameter")
            color = COLORS[method]
            r_err = fig.line(
                "mean_evaluated", "stop_error", source=src, color=color, line_width=2.5
            )
            r_dis = fig.line(
                "mean_evaluated",
                "disagreement",
                source=src,
                color=color,
                line_width=1.5,
                line_dash="dashed",
            )
            items[f"{method}: stop-error"] = [r_err]
            items[f"{method}: disagreement"] = [r_dis]
            hover_renderers.append(r_err)
        grid = self._source("grid", "mean_evaluated", "stop_error", "delta", "disagreement")
        r_grid = fig.scatter(
            "mean_evaluated",
            "stop_error",
            source=grid,
            color=COLORS["attentive"],
            size=6,
            alpha=0.7,
        )
        items["grid"] = [r_grid]
        point = self._source("point", "mean_evaluated", "stop_error")
        items["operating point"] = [
            fig.scatter(
                "mean_evaluated",
                "stop_error",
                source=point,
                marker="star",
                size=22,
                fill_color="#ffd700",
                line_color="black",
                line_width=1.5,
            )
        ]
        fig.add_tools(
            HoverTool(
                renderers=hover_renderers,
                tooltips=[
                    ("mean evaluated", "@mean_evaluated{0,0.0}"),
                    ("stop-error", "@stop_error{0.000}"),
                    ("disagreement", "@disagreement{0.000}"),
                    ("τ or B", "@parameter{0.000}"),
                ],
            ),
            HoverTool(
                renderers=[r_grid],
                tooltips=[
                    ("δ", "@delta{0.0000}"),
                    ("mean evaluated", "@mean_evaluated{0,0.0}"),
                    ("stop-error", "@stop_error{0.000}"),
                    ("disagreement", "@disagreement{0.000}"),
                ],
            ),
        )
        self._legend(fig, items)
        fig.on_event(Tap, self._on_tap)

    def _data(self, f):
        out = {}
        t = f.tradeoff
        if t is not getattr(self, "_tradeoff_drawn", None):  # cached per walk, side and θ
            self._tradeoff_drawn = t
            method = t["method"].to_numpy()
            for m in ("attentive", "budgeted"):
                rows = method == m
                out[m] = {
                    c: _col(t[c].to_numpy(), rows)
                    for c in ("mean_evaluated", "stop_error", "disagreement", "parameter")
                }
        dc = f.delta_curve
        out["grid"] = {
            c: _col(dc[c].to_numpy())
            for c in ("mean_evaluated", "stop_error", "delta", "disagreement")
        }
        op = f.operating_point
        out["point"] = {
            "mean_evaluated": _col([op["mean_evaluated"]]),
            "stop_error": _col([op["stop_error"]]),
        }
        return out

    def _labels(self, f):
        kind = self.state.boundary
        labels = {f"{m}: disagreement": f"{m}: disagreement" for m in self.NAMES}
        labels.update({f"{m}: stop-error": f"{n}: stop-error" for m, n in self.NAMES.items()})
        labels["grid"] = f"{'constant' if kind == 'budget' else kind}, δ grid (click)"
        return labels

    def _hidden(self, f):
        t = f.tradeoff
        return {
            f"{m}: {what}"
            for m in self.NAMES
            if not (t.method == m).any()
            for what in ("stop-error", "disagreement")
        }

    def _axis_labels(self, f):
        return f"mean terms evaluated (of {f.n_terms:,})", self.ylabel

    def _ranges(self, f):
        t, dc, op = f.tradeoff, f.delta_curve, f.operating_point
        xs = [t.mean_evaluated.to_numpy(), dc.mean_evaluated.to_numpy(), [op["mean_evaluated"]]]
        ys = [
            t.stop_error.to_numpy(),
            t.disagreement.to_numpy(),
            dc.stop_error.to_numpy(),
            [op["stop_error"]],
        ]
        return _extent(xs, 0.03), _extent(ys, 0.05)

    def _on_tap(self, event) -> None:
        if event.x is not None and event.y is not None:
            self.state.select_point(float(event.x), float(event.y))


class PrecisionRecallView(_PlotView):
    """Precision–recall of the full, attentive and budgeted scores against the true labels."""

    title = "Precision–recall against the true labels"
    xlabel = "recall"
    ylabel = "precision"
    legend_location = "bottom_left"
    METHODS = ("full", "attentive", "budgeted")

    def _build(self, fig) -> None:
        items = {}
        for method in self.METHODS:
            src = self._source(method, "recall", "precision")
            items[method] = [
                fig.step(
                    "recall",
                    "precision",
                    source=src,
                    mode="before",
                    color=COLORS[method],
                    line_width=3 if method == "full" else 2,
                    line_dash="dashdot" if method == "budgeted" else "solid",
                )
            ]
        self._legend(fig, items)

    def _data(self, f):
        out = {}
        method = f.pr["method"].to_numpy()
        recall, precision = f.pr["recall"].to_numpy(), f.pr["precision"].to_numpy()
        for m in self.METHODS:
            rows = np.flatnonzero(method == m)
            rows = rows[_thin(rows.size)]
            out[m] = {"recall": _col(recall, rows), "precision": _col(precision, rows)}
        return out

    def _labels(self, f):
        names = {"budgeted": f"budgeted (B = {f.metrics['budget_compared']})"}
        return {m: f"{names.get(m, m)}: AP {f.average_precision[m]:.3f}" for m in self.METHODS}

    def _ranges(self, f):
        return _extent([f.pr.recall.to_numpy()]), _extent([f.pr.precision.to_numpy()])


class TheoryView(_PlotView):
    """Required δ against actual stop-error: this dataset and the Brownian-bridge simulation."""

    title = "Theory check: actual against required δ"
    xlabel = "required δ (log scale)"
    ylabel = "actual error rate"
    x_axis_type = "log"
    legend_location = "top_left"
    SOURCES = ("dataset", "simulation")

    def _build(self, fig) -> None:
        diag = ColumnDataSource({"x": list(DELTA_RANGE), "y": list(DELTA_RANGE)})
        items = {
            "actual = required": [
                fig.line(
                    "x", "y", source=diag, color=COLORS["theta"], line_dash="dotted", line_width=2
                )
            ]
        }
        for key, color in zip(
            self.SOURCES, (COLORS["attentive"], COLORS["simulation"]), strict=True
        ):
            src = self._source(key, "required", "actual")
            items[key] = [
                fig.line("required", "actual", source=src, color=color, line_width=2.5),
                fig.scatter("required", "actual", source=src, color=color, size=5),
            ]
        now = self._source("delta", "x")
        items["current δ"] = [
            fig.vspan(
                "x", source=now, line_color=COLORS["attentive"], line_dash="dashed", line_width=1.5
            )
        ]
        self._legend(fig, items)

    def _split(self, f) -> dict[str, tuple[str, np.ndarray]]:
        """Source key → (its name in the data, rows) in the order the data lists them."""
        source = f.theory["source"].to_numpy()
        names = list(dict.fromkeys(source))
        return {key: (name, source == name) for key, name in zip(self.SOURCES, names, strict=True)}

    def _data(self, f):
        th = f.theory
        required, actual = th["required"].to_numpy(), th["actual"].to_numpy()
        out = {
            key: {"required": _col(required, rows), "actual": _col(actual, rows)}
            for key, (_, rows) in self._split(f).items()
        }
        out["delta"] = {"x": _col([self.state.delta])}
        return out

    def _labels(self, f):
        return {key: str(name) for key, (name, _) in self._split(f).items()}

    def _ranges(self, f):
        th = f.theory
        return (
            _extent([th.required.to_numpy(), DELTA_RANGE], log=True),
            _extent([th.actual.to_numpy(), DELTA_RANGE]),
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


def _no_debounce(widget: pn.widgets.Widget) -> None:
    # Panel waits 50 ms after a browser change to batch rapid ones; a released drag is one change.
    widget._debounce = 0


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
    _no_debounce(slider)
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
        _no_debounce(self.delta_slider)
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
