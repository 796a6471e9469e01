"""The plots' common base: one Bokeh figure per view, updated in place from the state.

Each plot is a Bokeh figure built once per session with one ``ColumnDataSource`` per drawn thing.
A view follows one output of the state (:attr:`PlotView.output`, a ``@param.depends`` method such
as :meth:`DashboardState.walk_figure`) through ``pn.bind`` on that output's own inputs: when one
of them changes, the view computes the columns it draws and assigns a source only if its columns
differ from what the browser has, so a slider move sends only what changed, the figure is never
rebuilt and the zoom stays (see docs/app.md, *How the plots update*, for why these plots are raw
Bokeh rather than HoloViews streams).
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import panel as pn
import param
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Legend, LegendItem, Range1d
from bokeh.plotting import figure

from attentive.app.reactive import bind
from attentive.app.state import DashboardState

__all__ = ["COLORS", "OUTSIDE_STYLE", "PlotView", "col", "extent", "ink", "legend_outside", "thin"]

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


def ink() -> str:
    """The colour of the marks drawn in black on the light page (the oracle floor, the bridge's
    reference line and stops): light grey on the dark theme, where black did not show. Read
    when a view is built; a change of theme reloads the page."""
    return "#d9d9d9" if pn.config.theme == "dark" else "black"


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


#: A caption's longest line: a plot's caption is a Bokeh title, which does not wrap, and a phone's
#: plot (390 px wide) shows about 64 of its italic 8 pt characters.
CAPTION_CHARS = 60


def wrap_caption(text: str) -> str:
    """``text`` in lines of at most :data:`CAPTION_CHARS` characters (its own line breaks are
    spaces)."""
    return "\n".join(textwrap.wrap(" ".join(text.split()), CAPTION_CHARS))


def thin(n: int, limit: int = MAX_CURVE_POINTS) -> slice | np.ndarray:
    """Indices of at most ``limit`` evenly spaced points of ``n`` (first and last kept)."""
    if n <= limit:
        return slice(None)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def col(values, rows=slice(None)) -> np.ndarray:
    """A column to draw: float32 (the screen cannot show more), thinned to ``rows``."""
    return np.asarray(values, dtype=np.float64)[rows].astype(np.float32)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    return a == b


def extent(arrays, pad: float = 0.05, log: bool = False) -> tuple[float, float]:
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


#: A legend outside the data area: centred, with no frame or background of its own.
OUTSIDE_STYLE = {
    "location": "center",
    "background_fill_alpha": 0,
    "border_line_alpha": 0,
    "spacing": 10,
}


def legend_outside(fig, items: list[LegendItem], place: str, cols: int) -> Legend:
    """A legend of ``items`` in ``cols`` columns ``place`` ("above" / "below") the data area,
    with no frame of its own."""
    legend = Legend(items=items, **LEGEND_STYLE)
    legend.orientation = "horizontal"
    legend.ncols = cols
    legend.update(**OUTSIDE_STYLE)
    fig.add_layout(legend, place)
    return legend


class PlotView(pn.viewable.Viewer):
    """Base of the plots: one Bokeh figure whose sources follow one output of the state."""

    state = param.ClassSelector(class_=DashboardState)

    output = ""  # the state's ``@param.depends`` method this plot draws
    extra: tuple[str, ...] = ()  # other state parameters the plot reads
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
        self._fitted = None  # the axis ranges last fitted, to tell a user's zoom from them
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
            active_scroll=None,  # the wheel scrolls the page; the zoom tool is one click away
            toolbar_location="above",
            sizing_mode="stretch_both",
            min_height=300,
            # A handle that stays when the title follows the data (the browser tests use it).
            name=type(self).__name__,
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
        items = list(self._items.values())
        if self.legend_place is None:
            legend = Legend(items=items, **LEGEND_STYLE)
            legend.location = self.legend_location
            fig.add_layout(legend)
        else:
            legend_outside(fig, items, self.legend_place, self.legend_cols)

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

    def _fit_key(self, f):
        """What else, besides the walk, boundary, side and θ, makes ``f`` new data whose axes are
        refit (e.g. a plot whose y quantity changes with the rule)."""
        return None

    def _title(self, f) -> str:
        return self.title

    def _set_data(self, src: ColumnDataSource, data: dict[str, np.ndarray]) -> None:
        old = src.data
        if old.keys() == data.keys() and all(same(old[k], v) for k, v in data.items()):
            return  # nothing new: send nothing
        src.data = data

    def _refresh(self, f) -> None:
        if f is None:
            return
        for name, data in self._data(f).items():
            self._set_data(self._sources[name], data)
        title = self._title(f)
        if self._fig.title.text != title:
            self._fig.title.text = title
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
        key = (
            s.walks.key if s.walks is not None else None,
            s.boundary,
            s.side,
            s.theta,
            self._fit_key(f),
        )
        fig = self._fig
        # The axis labels always name what is drawn.
        xlabel, ylabel = self._axis_labels(f)
        if fig.xaxis[0].axis_label != xlabel:
            fig.xaxis[0].axis_label = xlabel
        if fig.yaxis[0].axis_label != ylabel:
            fig.yaxis[0].axis_label = ylabel
        shown = (fig.x_range.start, fig.x_range.end, fig.y_range.start, fig.y_range.end)
        # New data, or a move while the axes are still where they were fitted (not zoomed): fit
        # the axes to what is drawn now. A move after the user zoomed keeps the zoom.
        if key != self._drawn_key or shown == self._fitted:
            self._drawn_key = key
            ranges = self._ranges(f)
            for rng, (lo, hi) in zip((fig.x_range, fig.y_range), ranges, strict=True):
                if (rng.start, rng.end) != (lo, hi):
                    rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)
            self._fitted = (*ranges[0], *ranges[1])

    def _value(self):
        """What the plot draws: the state's :attr:`output`."""
        return getattr(self.state, self.output)()

    def _watch(self) -> None:
        """Redraw when what the plot draws changes (the inputs of :attr:`output`, and
        :attr:`extra`)."""
        bind(self._on_change, self.state, self.output, *self.extra, watch=True)

    def _on_change(self, *values) -> None:
        doc = self._fig.document
        if doc is None or doc.session_context is None:
            self._refresh(self._value())
            if doc is not None:
                pn.io.push_notebook(self._pane)  # a notebook: send the in-place changes
        elif pn.state.curdoc is doc:
            # In this session's context, perhaps without its lock (a background result applied
            # on the loop): Panel's unlocked() sends the changes straight to the browser.
            with pn.io.unlocked():
                self._refresh(self._value())
        else:
            doc.add_next_tick_callback(lambda: self._refresh(self._value()))

    def __panel__(self):
        if self._pane is None:
            self._fig = self._figure()
            self._build(self._fig)
            self._refresh(self._value())
            self._watch()
            self._pane = pn.pane.Bokeh(self._fig, sizing_mode="stretch_both", min_height=300)
        return self._pane


def class_label(state: DashboardState, positive: bool) -> str:
    names = state.walks.class_names if state.walks else ("negative", "positive")
    return f"full evaluation: {names[1] if positive else names[0]}"
