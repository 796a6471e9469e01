"""The "Brownian bridge" teaching tab: its own drift, n and δ sliders (independent of the
dataset), simulated walks stopping at the Constant-STST threshold, required against actual error,
and the √n growth of the stopping time. Data from :func:`attentive.app.bridge.bridge_figures`;
the walks are a Bokeh figure built once, whose sources are replaced on every move; the error and
stopping-time plots are the paper's Figure 3 elements from :mod:`attentive.plots` (HoloViews)."""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import ColumnDataSource, Span
from bokeh.plotting import figure

from attentive.app.bridge import N_WALKS, bridge_figures
from attentive.app.plots.base import COLORS, hv_plots

__all__ = ["BridgeTab"]

PLOT_HEIGHT = 330
FLEX = {"flex": "1 1 420px"}


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
        self.summary = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["att-bridge"])
        self._walks_fig = self._build()
        self._update()

    def _build(self):
        walks = figure(
            title="Simulated walks and the threshold τ(δ)",
            x_axis_label="t — terms",
            y_axis_label="S_t",
            tools="pan,wheel_zoom,box_zoom,reset",
            active_scroll=None,  # the wheel scrolls the page
            sizing_mode="stretch_width",
            height=PLOT_HEIGHT,
            toolbar_location="above",
        )
        walks.line("x", "y", source=self._walks, color=COLORS["positive"], line_alpha=0.5)
        walks.scatter("t", "s", source=self._stops, marker="x", size=9, color="black")
        self._tau = Span(
            location=0, dimension="width", line_color=COLORS["attentive"], line_width=3
        )
        self._tau.line_dash = "dashed"
        walks.add_layout(self._tau)
        walks.toolbar.logo = None
        # The paper's Figure 3, (a) and (b): the HoloViews elements the notebooks and the
        # reproduced figures draw, here redrawn on every move (a teaching tab, not on the 50 ms
        # path of the rule's sliders; benchmarks/bench_app.py times it).
        hv_pane = {"backend": "bokeh", "sizing_mode": "stretch_width", "height": PLOT_HEIGHT}
        self._errors = pn.pane.HoloViews(None, **hv_pane)
        self._times = pn.pane.HoloViews(None, **hv_pane)
        return walks

    @param.depends("drift", "n", "delta", watch=True)
    def _update(self) -> None:
        f = bridge_figures(self.drift, self.n, self.delta)
        self._walks.data = {"x": f.x, "y": f.y}
        self._stops.data = {"t": f.stop_t, "s": f.stop_s}
        self._tau.location = f.tau
        plots = hv_plots()
        self._errors.object = plots.decision_error_plot(f.decision_error, f.delta, PLOT_HEIGHT)
        self._times.object = plots.stopping_time_plot(f.stopping_time, height=PLOT_HEIGHT)
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
            pn.pane.Bokeh(self._walks_fig, sizing_mode="stretch_width", styles=FLEX),
            pn.Column(self._errors, sizing_mode="stretch_width", styles=FLEX),
            pn.Column(self._times, sizing_mode="stretch_width", styles=FLEX),
            sizing_mode="stretch_width",
        )
        return pn.Column(sliders, self.summary, plots, sizing_mode="stretch_width")
