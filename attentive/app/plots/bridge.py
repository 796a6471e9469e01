"""The "Brownian bridge" teaching tab: its own drift, n and δ sliders (independent of the
dataset), simulated walks stopping at the Constant-STST threshold, required against actual error,
and the √n growth of the stopping time. Data from :func:`attentive.app.bridge.bridge_figures`;
three Bokeh figures built once, their sources replaced on every move."""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Span, Whisker
from bokeh.plotting import figure

from attentive.app.bridge import N_WALKS, bridge_figures
from attentive.app.plots.base import COLORS

__all__ = ["BridgeTab"]


class BridgeTab(pn.viewable.Viewer):
    """Simulated walks with drift; sliders recompute in a fraction of a second."""

    drift = param.Number(
        default=0.05,
        bounds=(0.005, 0.3),
        step=0.005,
        label="drift E[X_i]",
        doc="The mean of each term: the walk's trend towards a positive decision.",
    )
    n = param.Integer(
        default=1000,
        bounds=(50, 3000),
        step=50,
        label="n (terms)",
        doc="Number of terms in each walk; the boundary uses V = n.",
    )
    delta = param.Number(
        default=0.05,
        bounds=(0.001, 0.5),
        step=0.001,
        label="δ (required error)",
        doc="The decision error the Constant-STST threshold τ(δ) is built for.",
    )

    def __init__(self, **params):
        super().__init__(**params)
        self._walks = ColumnDataSource({"x": [], "y": []})
        self._stops = ColumnDataSource({"t": [], "s": []})
        self._errors = ColumnDataSource({"required": [], "actual": [], "lo": [], "hi": []})
        self._times = ColumnDataSource({"n": [], "time": [], "fit": []})
        self.summary = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["att-bridge"])
        self._figs = self._build()
        self._update()

    def _build(self):
        common = {"sizing_mode": "stretch_width", "height": 330, "toolbar_location": "above"}
        walks = figure(
            title="Simulated walks and the threshold τ(δ)",
            x_axis_label="t — terms",
            y_axis_label="S_t",
            tools="pan,wheel_zoom,box_zoom,reset",
            **common,
        )
        walks.line("x", "y", source=self._walks, color=COLORS["positive"], line_alpha=0.5)
        walks.scatter("t", "s", source=self._stops, marker="x", size=9, color="black")
        self._tau = Span(
            location=0, dimension="width", line_color=COLORS["attentive"], line_width=3
        )
        self._tau.line_dash = "dashed"
        walks.add_layout(self._tau)
        errors = figure(
            title="Required δ against actual error P(cross τ | S_n < 0)",
            x_axis_label="required δ",
            y_axis_label="actual error",
            x_axis_type="log",
            y_axis_type="log",
            tools="pan,wheel_zoom,reset",
            **common,
        )
        grid = np.geomspace(1e-3, 0.5, 50)
        errors.line(
            grid, grid, color=COLORS["theta"], line_dash="dotted", legend_label="actual = required"
        )
        errors.scatter(
            "required",
            "actual",
            source=self._errors,
            size=7,
            color=COLORS["simulation"],
            legend_label="simulation",
        )
        errors.add_layout(Whisker(source=self._errors, base="required", lower="lo", upper="hi"))
        errors.legend.location = "top_left"
        self._delta_line = Span(location=0.05, dimension="height", line_color=COLORS["attentive"])
        errors.add_layout(self._delta_line)
        times = figure(
            title="Mean stopping time against n (log-log)",
            x_axis_label="n",
            y_axis_label="E[T_τ]",
            x_axis_type="log",
            y_axis_type="log",
            tools="pan,wheel_zoom,reset",
            **common,
        )
        times.scatter(
            "n",
            "time",
            source=self._times,
            size=8,
            color=COLORS["simulation"],
            legend_label="simulation",
        )
        times.line(
            "n", "fit", source=self._times, color=COLORS["theta"], legend_label="least-squares fit"
        )
        times.legend.location = "top_left"
        for fig in (walks, errors, times):
            fig.toolbar.logo = None
        return walks, errors, times

    @param.depends("drift", "n", "delta", watch=True)
    def _update(self) -> None:
        f = bridge_figures(self.drift, self.n, self.delta)
        self._walks.data = {"x": f.x, "y": f.y}
        self._stops.data = {"t": f.stop_t, "s": f.stop_s}
        self._tau.location = f.tau
        ok = np.isfinite(f.actual) & (f.actual > 0)
        self._errors.data = {
            "required": f.required[ok],
            "actual": f.actual[ok],
            "lo": np.maximum(f.actual - f.stderr, 1e-4)[ok],
            "hi": (f.actual + f.stderr)[ok],
        }
        self._delta_line.location = f.delta
        coef = np.polyfit(np.log(f.ns), np.log(f.mean_times), 1)
        self._times.data = {
            "n": f.ns,
            "time": f.mean_times,
            "fit": np.exp(np.polyval(coef, np.log(f.ns))),
        }
        stopped = f.stop_t.size
        self.summary.object = (
            f"τ(δ = {f.delta:g}) = **{f.tau:.1f}** for n = {f.n:,} (V = n). "
            f"{stopped} of {N_WALKS} walks crossed τ before n. "
            f"Stopping time grows like n^**{f.slope:.2f}** (Theorem 2: √n, slope 0.5)."
        )

    def __panel__(self):
        sliders = pn.Row(
            pn.widgets.FloatSlider.from_param(self.param.drift, css_classes=["att-bridge-drift"]),
            pn.widgets.IntSlider.from_param(self.param.n, css_classes=["att-bridge-n"]),
            pn.widgets.FloatSlider.from_param(self.param.delta, format="0.000"),
            sizing_mode="stretch_width",
        )
        plots = pn.FlexBox(
            *(
                pn.pane.Bokeh(f, sizing_mode="stretch_width", styles={"flex": "1 1 420px"})
                for f in self._figs
            ),
            sizing_mode="stretch_width",
        )
        return pn.Column(sliders, self.summary, plots, sizing_mode="stretch_width")
