"""The "Brownian bridge" teaching tab: its own drift, n and δ sliders (independent of the
dataset), simulated walks stopping at the Constant-STST threshold, required against actual error,
and the √n growth of the stopping time. Data from :func:`attentive.app.bridge.bridge_figures`.
The three plots are Bokeh figures built once whose sources, legend labels and titles change on
every move: the error and stopping-time plots draw what the paper's Figure 3 elements in
:mod:`attentive.plots` draw. They were those HoloViews elements, a new figure on every move; in
JupyterLab, Panel's page sends each change back to the kernel, and a figure replaced in the
meantime came back as models Bokeh refused ("failed to validate Line.line_color", a traceback
in the cell's output on a few fast moves)."""

from __future__ import annotations

import math

import panel as pn
import param
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, FixedTicker, LegendItem, Span, TeeHead, Whisker
from bokeh.plotting import figure

from attentive.app.bridge import N_WALKS, bridge_figures
from attentive.app.plots.base import COLORS, ink, legend_outside

__all__ = ["BRIDGE_URL", "BridgeTab", "BridgeUrl", "bridge_url_reset", "bridge_url_values"]

PLOT_HEIGHT = 330
# The two Figure 3 plots carry their legend above the data area.
LEGEND_PLOT_HEIGHT = 400
FLEX = {"flex": "1 1 420px"}
# Figure 3's colours (attentive.plots.paper): the series, its fit, the references.
SERIES, SECOND, GREY, MARK = "#1f77b4", "#ff7f0e", "#7f7f7f", "#CC79A7"


ONE_TWO_FIVE = [m * 10**k for k in range(7) for m in (1, 2, 5)]


def _figure(title: str, xlabel: str, ylabel: str, log: bool = False):
    fig = figure(
        title=title,
        x_axis_label=xlabel,
        y_axis_label=ylabel,
        x_axis_type="log" if log else "linear",
        y_axis_type="log" if log else "linear",
        tools="pan,wheel_zoom,box_zoom,reset",
        active_scroll=None,  # the wheel scrolls the page
        sizing_mode="stretch_width",
        height=LEGEND_PLOT_HEIGHT if log else PLOT_HEIGHT,
        toolbar_location="above",
    )
    fig.toolbar.logo = None
    return fig


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
        walks = _figure("Simulated walks and the threshold τ(δ)", "t — terms", "S_t")
        walks.line("x", "y", source=self._walks, color=COLORS["positive"], line_alpha=0.5)
        walks.scatter("t", "s", source=self._stops, marker="x", size=9, color=ink())
        self._tau = Span(
            location=0, dimension="width", line_color=COLORS["attentive"], line_width=3
        )
        self._tau.line_dash = "dashed"
        walks.add_layout(self._tau)
        self._errors = self._error_figure()
        self._times = self._time_figure()
        return walks

    def _error_figure(self):
        """The paper's Figure 3 (a) (attentive.plots.decision_error_plot), drawn in place."""
        fig = _figure(
            "(a) Constant-STST is conservative",
            "required decision error δ",
            "actual P(cross τ before n | S_n < 0)",
            log=True,
        )
        self._points = ColumnDataSource({k: [] for k in ("required", "actual", "lower", "upper")})
        self._none = ColumnDataSource({"required": [], "at": []})
        self._reference = ColumnDataSource({"x": [], "y": []})
        fig.add_layout(
            Whisker(
                source=self._points,
                base="required",
                lower="lower",
                upper="upper",
                line_color=SERIES,
                # The caps in the bars' colour (black by default: unseen on the dark theme).
                upper_head=TeeHead(line_color=SERIES, size=10),
                lower_head=TeeHead(line_color=SERIES, size=10),
            )
        )
        line = fig.line("required", "actual", source=self._points, color=SERIES, line_width=2)
        dots = fig.scatter("required", "actual", source=self._points, color=SERIES, size=5)
        none = fig.scatter(
            "required",
            "at",
            source=self._none,
            marker="inverted_triangle",
            size=7,
            line_color=SERIES,
            fill_color=None,
        )
        ref = fig.line("x", "y", source=self._reference, color=ink(), line_dash="dashed")
        self._delta_mark = Span(
            location=self.delta, dimension="height", line_color=MARK, line_width=2
        )
        self._delta_mark.line_dash = "dotted"
        fig.add_layout(self._delta_mark)
        self._series_item = LegendItem(label="actual ± 2 s.e.", renderers=[line, dots])
        self._none_item = LegendItem(label="none crossed", renderers=[none])
        legend_outside(
            fig,
            [
                self._series_item,
                self._none_item,
                LegendItem(label="actual = required", renderers=[ref]),
            ],
            "above",  # inside the data area, the legend hid points on a phone
            2,
        )
        return fig

    def _time_figure(self):
        """The paper's Figure 3 (b) (attentive.plots.stopping_time_plot), drawn in place."""
        fig = _figure(
            "(b) E[T] grows like √n", "n (number of terms)", "mean stopping time", log=True
        )
        self._time_points = ColumnDataSource({"n": [], "mean": [], "truncated": []})
        self._fits = ColumnDataSource({"n": [], "mean": [], "truncated": []})
        self._fit_items = {}
        items = []
        for key, label, color in (
            ("mean", "E[T]  (Theorem 2)", SERIES),
            ("truncated", "E[min(T, n)]  (predictor pays)", SECOND),
        ):
            dots = fig.scatter("n", key, source=self._time_points, color=color, size=7)
            fit = fig.line("n", key, source=self._fits, color=color, line_width=1)
            items.append(LegendItem(label=label, renderers=[dots]))
            self._fit_items[key] = LegendItem(label="fit", renderers=[fit])
            items.append(self._fit_items[key])
        full = fig.line("n", "n", source=self._fits, color=GREY, line_dash="dotted")
        items.append(LegendItem(label="n (full evaluation)", renderers=[full]))
        legend_outside(fig, items, "above", 2)
        # Bokeh's log ticks labelled this plot at 200–1,000 only (a user's trial: the first points
        # could not be read off): n at each simulated n, times at 1, 2 and 5 of every decade.
        fig.xaxis.ticker = FixedTicker(ticks=[])
        fig.yaxis.ticker = FixedTicker(ticks=ONE_TWO_FIVE)
        return fig

    @param.depends("drift", "n", "delta", watch=True)
    def _update(self) -> None:
        f = bridge_figures(self.drift, self.n, self.delta)
        self._walks.data = {"x": f.x, "y": f.y}
        self._stops.data = {"t": f.stop_t, "s": f.stop_s}
        self._tau.location = f.tau
        e = f.error_points()
        self._points.data = {k: e[k] for k in ("required", "actual", "lower", "upper")}
        self._none.data = {"required": e["none_required"], "at": e["none_at"]}
        self._reference.data = {"x": e["reference"], "y": e["reference"]}
        self._delta_mark.location = f.delta
        self._series_item.label = value(f"actual ± 2 s.e., n = {f.n:,} ({f.error_paths:,} paths)")
        self._none_item.visible = bool(e["none_required"].size)
        fits = f.stopping_fits()
        self._time_points.data = {
            "n": f.ns,
            "mean": f.mean_times,
            "truncated": f.mean_times_truncated,
        }
        self._fits.data = {
            "n": fits["mean"][0],
            "mean": fits["mean"][1],
            "truncated": fits["truncated"][1],
        }
        for key, item in self._fit_items.items():
            item.label = value(f"fit: slope {fits[key][2]:.2f}")
        self._times.xaxis.ticker.ticks = [int(n) for n in f.ns]
        self._times.title.text = f"(b) E[T] grows like √n (δ = {f.delta:g})"
        stopped = f.stop_t.size
        self.summary.object = (
            f"τ(δ = {f.delta:g}) = **{f.tau:.1f}** for n = {f.n:,} (V = n). "
            f"{stopped} of {N_WALKS} walks crossed τ before n. "
            f"E[T] grows like n^**{f.slope:.2f}** (Theorem 2: √n, slope 0.5); E[min(T, n)], "
            f"what a walk of n terms pays, like n^**{fits['truncated'][2]:.2f}** here."
        )

    def follow(self, url: BridgeUrl) -> None:
        """Write each slider's value to ``url`` when it moves (a shared address, or the page
        reloaded by the theme switch, opens with the same walks)."""

        def write(event) -> None:
            setattr(url, event.name, _url_number(event.name, event.new))

        self.param.watch(write, list(BRIDGE_URL))

    def __panel__(self):
        # Three to a row where they fit, else wrapped (in a Row they ran 27 px past a phone).
        each = {"sizing_mode": "stretch_width", "styles": {"flex": "1 1 200px", "min-width": "0"}}
        sliders = pn.FlexBox(
            # (Three decimals: its step is 0.005, and two showed 0.075 as 0.08.)
            pn.widgets.FloatSlider.from_param(
                self.param.drift, format="0.000", css_classes=["att-bridge-drift"], **each
            ),
            pn.widgets.IntSlider.from_param(self.param.n, css_classes=["att-bridge-n"], **each),
            pn.widgets.FloatSlider.from_param(self.param.delta, format="0.000", **each),
            sizing_mode="stretch_width",
        )
        plots = pn.FlexBox(
            pn.pane.Bokeh(self._walks_fig, sizing_mode="stretch_width", styles=FLEX),
            pn.pane.Bokeh(self._errors, sizing_mode="stretch_width", styles=FLEX),
            pn.pane.Bokeh(self._times, sizing_mode="stretch_width", styles=FLEX),
            sizing_mode="stretch_width",
        )
        return pn.Column(sliders, self.summary, plots, sizing_mode="stretch_width")


#: The tab's sliders in the page's URL (``?bridge_n=500``), apart from the rule's ``delta``.
BRIDGE_URL = {"drift": "bridge_drift", "n": "bridge_n", "delta": "bridge_delta"}


class BridgeUrl(param.Parameterized):
    """The tab's sliders as the URL holds them, unchecked (None: not in the URL); read with
    :func:`bridge_url_values`."""

    drift = param.Parameter(default=None)
    n = param.Parameter(default=None)
    delta = param.Parameter(default=None)


def _url_number(name: str, value):
    return int(value) if name == "n" else round(float(value), 6)


def _on_grid(spec, number: float) -> float:
    """``number`` (within ``spec``'s bounds) on its slider's grid: the nearest of ``lo + k
    step``, as δ's slider snaps a typed δ: the tab then holds, and the address names, a value
    its slider can show and return to."""
    lo, hi = spec.bounds
    steps = math.floor((number - lo) / spec.step + 0.5)
    return min(hi, lo + steps * spec.step)


def bridge_url_values(url: BridgeUrl) -> tuple[dict, list[str]]:
    """The slider values ``url`` holds that the tab can take, on the slider's grid (a value
    between two steps goes to the nearest), and a message for each it cannot take (that slider
    keeps its default)."""
    values, problems = {}, []
    for name, key in BRIDGE_URL.items():
        raw = getattr(url, name)
        if raw is None:
            continue
        spec = BridgeTab.param[name]
        lo, hi = spec.bounds
        try:
            number = float(raw) if not isinstance(raw, bool) else float("nan")
        except (TypeError, ValueError):
            number = float("nan")
        # (NaN and ±inf fail the bounds; a whole n only.)
        if lo <= number <= hi and (name != "n" or number.is_integer()):
            values[name] = _url_number(name, _on_grid(spec, number))
        else:
            kind = "a whole number" if name == "n" else "a number"
            problems.append(
                f"{key}={raw} is not a value of the Brownian bridge's {spec.label}; expected "
                f"{kind} from {lo:g} to {hi:g}. The default {spec.default:g} is used."
            )
    return values, problems


def bridge_url_reset(url: BridgeUrl, values: dict) -> None:
    """Put in ``url`` the value each slider it names takes: the default where
    :func:`bridge_url_values` refused the value (``values`` is what it took; Panel's location
    keeps a query key set to None, so the refused value stayed and was told again on every
    reload, the theme switch's), the value on the slider's grid where it snapped one."""
    for name in BRIDGE_URL:
        if getattr(url, name) is not None:
            in_use = values.get(name, BridgeTab.param[name].default)
            setattr(url, name, _url_number(name, in_use))
