"""The dashboard's tradeoff plot drawn with HoloViews: the alternative that bench_app.py measures
against the in-place Bokeh view the dashboard uses (attentive/app/plots/tradeoff.py).

The same content (every family's curve with hover, the budgeted curves, the τ sweep, the oracle
line and triangle, the current rule's star, legend, tap to pick, the axes fitted to new curves
only): the rules' curves are a static overlay, redrawn when the walk, side or θ changes, and the
star is a ``DynamicMap`` fed by a ``Pipe``, so a δ move sends only the star's new position. Not
used by the app: a δ step costs tens of milliseconds here against a fraction of one in place
(docs/app.md)."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param

from attentive.app.plots.base import COLORS, LEGEND_STYLE
from attentive.app.plots.tradeoff import family_color
from attentive.app.rules import family_names
from attentive.app.state import DashboardState

__all__ = ["HoloViewsTradeoffView"]

X, Y, Z = "fraction", "disagreement", "z"
HOVER = [("fraction evaluated", "@fraction{0.000}"), ("disagreement", "@disagreement{0.0000}")]


def _line(x, y, label: str, color: str, width: float, dash: str = "solid", z=None):
    data = (np.asarray(x, float), np.asarray(y, float))
    vdims = [Y]
    if z is not None:
        data, vdims = (*data, np.asarray(z, float)), [Y, Z]
    return hv.Curve(data, X, vdims, label=label).opts(color=color, line_width=width, line_dash=dash)


class HoloViewsTradeoffView(pn.viewable.Viewer):
    """Disagreement against mean fraction evaluated for every rule; click to choose a point."""

    state = param.ClassSelector(class_=DashboardState)

    title = "Tradeoff of every rule"  # short: the axes say what is plotted
    xlabel = "mean fraction of terms evaluated"
    ylabel = "disagreement with the full model"

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = None
        f = _figures(self.state)
        self._point = hv.streams.Pipe(data=self._point_data(f))
        self._star_map = hv.DynamicMap(self._star, streams=[self._point]).opts(
            marker="star", size=22, fill_color="#ffd700", line_color="black", line_width=1.5
        )
        self._tap = hv.streams.Tap(source=self._star_map, x=None, y=None)
        self._tradeoff = None
        self._refit = None  # axis ranges to set at the next render (new curves)
        self._doc = pn.state.curdoc  # the serving session's document (None elsewhere)

    # -- what is drawn -------------------------------------------------------------------------
    @staticmethod
    def _point_data(f) -> tuple[float, float]:
        if f is None:
            return (np.nan, np.nan)
        op = f.operating_point
        return (float(op["mean_evaluated_fraction"]), float(op["disagreement"]))

    def _rules_overlay(self, data) -> hv.Overlay:
        """The rules' curves of one (walk, side, θ): ``data`` is a :class:`rules.Tradeoff`."""
        if data is None:
            return hv.Overlay([hv.Curve([], X, Y)])
        layers = []
        fam = data.families
        hover = {"tools": ["hover"], "hover_tooltips": [*HOVER, ("scale z", "@z{0.00}")]}
        for name in family_names():
            rows = fam[fam["method"] == name].sort_values("mean_evaluated_fraction")
            curve = _line(
                rows["mean_evaluated_fraction"],
                rows["disagreement"],
                f"{name} family",
                family_color(name),
                2.2,
                z=rows["z"],
            )
            layers.append(curve.opts(**hover))
        bud = data.budgeted
        x = bud["mean_evaluated_fraction"]
        layers.append(_line(x, bud["disagreement"], "budgeted (B = 1..n)", COLORS["budgeted"], 2))
        layers.append(
            _line(x, bud["stop_error"], "budgeted: stop-error", COLORS["budgeted"], 1.2, "dashed")
        )
        if len(data.sweep):
            layers.append(
                _line(
                    data.sweep["mean_evaluated_fraction"],
                    data.sweep["stop_error"],
                    "paper's τ sweep: stop-error",
                    COLORS["attentive"],
                    1.2,
                    "dashed",
                )
            )
        oracle = float(data.oracle_fraction)
        layers.append(hv.VLine(oracle).opts(color="black", line_dash="dotted", line_width=2))
        layers.append(
            hv.Scatter(([oracle], [0.0]), X, Y, label=f"oracle floor ({oracle:.0%} of terms)").opts(
                marker="triangle", size=10, color="black"
            )
        )
        # New curves (a new walk, side or θ): fit the axes to them once; a δ move keeps the zoom.
        hi = float(np.nanmax(np.append(fam["disagreement"].to_numpy(), 0.0)))
        self._refit = ((0.0, 1.02), (-0.005, min(max(hi, 0.02), 0.15) * 1.05))
        return hv.Overlay(layers)

    def _star(self, data) -> hv.Scatter:
        x, y = data
        return hv.Scatter(([x], [y]), X, Y, label="current rule")

    def _overlay(self, tradeoff):
        """The rules' curves of ``tradeoff`` (static) under the current rule's star (a
        ``DynamicMap`` that a δ move feeds)."""
        return (
            (self._rules_overlay(tradeoff) * self._star_map)
            .collate()
            .opts(
                title=self.title,
                xlabel=self.xlabel,
                ylabel=self.ylabel,
                responsive=True,
                min_height=300,
                show_grid=True,
                legend_position="top_right",
                legend_opts=LEGEND_STYLE,
                tools=["tap"],
                active_tools=["pan"],
                toolbar="above",
                hooks=[self._hook],
                apply_ranges=False,  # the hook fits the axes to new curves only
            )
        )

    def _hook(self, plot, element) -> None:
        fig = plot.state
        self._doc = fig.document or self._doc
        fig.toolbar.active_scroll = None  # the wheel scrolls the page; zoom is one click away
        fig.toolbar.logo = None
        fig.title.align = "center"
        if self._refit is not None:
            for rng, (lo, hi) in zip((fig.x_range, fig.y_range), self._refit, strict=True):
                rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)
            self._refit = None

    # -- updating ------------------------------------------------------------------------------
    def _send(self, f) -> None:
        if f is None:
            return
        if f.tradeoff is not self._tradeoff:  # cached per walk, side and θ: new curves
            self._tradeoff = f.tradeoff
            self._point.event(data=self._point_data(f))  # no redraw: the pane is redrawn next
            self._pane.object = self._overlay(f.tradeoff)
            return
        point = self._point_data(f)
        if point != self._point.data:
            self._point.send(point)

    def _on_figures(self, event) -> None:
        doc = self._doc
        if doc is None or doc.session_context is None:
            self._send(_figures(self.state))  # not served (a notebook, a test, the benchmark)
        elif pn.state.curdoc is doc:
            # In this session's context, perhaps without its lock (a background result applied
            # on the loop): Panel's unlocked() sends the changes straight to the browser.
            with pn.io.unlocked():
                self._send(_figures(self.state))
        else:
            doc.add_next_tick_callback(lambda: self._send(_figures(self.state)))

    def _on_tap(self, x=None, y=None) -> None:
        if x is not None and y is not None:
            self.state.select_point(float(x), float(y))

    def __panel__(self):
        if self._pane is None:
            f = _figures(self.state)
            self._tradeoff = None if f is None else f.tradeoff
            self._pane = pn.pane.HoloViews(
                self._overlay(self._tradeoff), sizing_mode="stretch_both", min_height=300
            )
            self.state.param.watch(self._on_figures, ["tradeoff", "rule", "walks"])
            self._tap.add_subscriber(self._on_tap)
        return self._pane


def _figures(state):
    """What this plot draws: every rule's tradeoff and the current rule's point."""
    from types import SimpleNamespace

    m = state.numbers()
    point = {k: m[k] for k in ("mean_evaluated_fraction", "disagreement")}
    return SimpleNamespace(tradeoff=state.tradeoff, operating_point=point)
