"""Every rule on one tradeoff: disagreement (and the paper's stop-error) against the mean fraction
of terms evaluated, for each registered family over its scales, the budgeted baseline, the paper's
constant-τ sweep, the oracle floor, and the current rule. A click picks the nearest δ of the
current family (or B for the budget rule)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from bokeh.events import Tap
from bokeh.models import HoverTool, Span

from attentive.app.figures import tradeoff_error_span
from attentive.app.plots.base import COLORS, PlotView, col
from attentive.app.rules import family_names

__all__ = ["FAMILY_COLORS", "TradeoffView"]

FAMILY_COLORS = ["#CC79A7", "#56B4E9", "#E69F00", "#0072B2", "#882255", "#999933"]


def family_color(name: str) -> str:
    return FAMILY_COLORS[list(family_names()).index(name) % len(FAMILY_COLORS)]


class TradeoffView(PlotView):
    """Disagreement against mean fraction evaluated for every rule; click to choose a point."""

    output = "numbers"  # the current rule's point (the star)
    extra = ("tradeoff",)  # every rule's curves
    title = "Tradeoff of every rule"  # short: the axes say what is plotted
    xlabel = "mean fraction of terms evaluated"
    ylabel = "disagreement with the full model"
    legend_location = "top_right"

    def _build(self, fig) -> None:
        items = {}
        hover = []
        line_cols = ("x", "y", "z")
        for name in family_names():
            src = self._source(name, *line_cols)
            r = fig.line("x", "y", source=src, color=family_color(name), line_width=2.2)
            items[f"{name} family"] = [r]
            hover.append(r)
        bud = self._source("budgeted", "x", "y", "err", "z")
        r_b = fig.line("x", "y", source=bud, color=COLORS["budgeted"], line_width=2)
        r_be = fig.line(
            "x", "err", source=bud, color=COLORS["budgeted"], line_width=1.2, line_dash="dashed"
        )
        items["budgeted (B = 1..n)"] = [r_b]
        items["budgeted: stop-error"] = [r_be]
        sweep = self._source("sweep", "x", "y", "err", "z")
        r_se = fig.line(
            "x", "err", source=sweep, color=COLORS["attentive"], line_width=1.2, line_dash="dashed"
        )
        items["paper's τ sweep: stop-error"] = [r_se]
        self._oracle = Span(
            location=0, dimension="height", line_color="black", line_dash="dotted", line_width=2
        )
        fig.add_layout(self._oracle)
        oracle = self._source("oracle", "x", "y")
        items["oracle floor"] = [
            fig.scatter("x", "y", source=oracle, marker="triangle", size=10, color="black")
        ]
        point = self._source("point", "x", "y")
        items["current rule"] = [
            fig.scatter(
                "x",
                "y",
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
                renderers=hover,
                tooltips=[
                    ("fraction evaluated", "@x{0.000}"),
                    ("disagreement", "@y{0.0000}"),
                    ("scale z", "@z{0.00}"),
                ],
            )
        )
        self._legend(fig, items)
        fig.on_event(Tap, self._on_tap)

    def _value(self):
        m = self.state.numbers()
        if m is None:
            return None
        point = {k: m[k] for k in ("mean_evaluated_fraction", "disagreement")}
        return SimpleNamespace(tradeoff=self.state.tradeoff, operating_point=point)

    def _data(self, f):
        out = {}
        t = f.tradeoff
        if t is None:  # computed after the numbers: the curves follow (the star is drawn now)
            self._drawn_tradeoff = None
            empty = np.empty(0, dtype=np.float32)
            for name in (*family_names(), "budgeted", "sweep", "oracle"):
                out[name] = {c: empty for c in self._sources[name].data}
            self._oracle.location = None
        elif t is not getattr(self, "_drawn_tradeoff", None):  # cached per walk, side and θ
            self._drawn_tradeoff = t
            fam = t.families
            for name in family_names():
                rows = fam[fam["method"] == name].sort_values("mean_evaluated_fraction")
                out[name] = {
                    "x": col(rows["mean_evaluated_fraction"]),
                    "y": col(rows["disagreement"]),
                    "z": col(rows["z"]),
                }
            for key, frame in (("budgeted", t.budgeted), ("sweep", t.sweep)):
                out[key] = {
                    "x": col(frame["mean_evaluated_fraction"]),
                    "y": col(frame["disagreement"]),
                    "err": col(frame["stop_error"]),
                    "z": col(frame["parameter"]),
                }
            out["oracle"] = {"x": col([t.oracle_fraction]), "y": col([0.0])}
            self._oracle.location = t.oracle_fraction
        op = f.operating_point
        out["point"] = {
            "x": col([op["mean_evaluated_fraction"]]),
            "y": col([op["disagreement"]]),
        }
        return out

    def _title(self, f) -> str:
        return self.title if f.tradeoff is not None else f"{self.title} (computing the curves…)"

    def _labels(self, f):
        if f.tradeoff is None:
            return {"oracle floor": "oracle floor"}
        return {"oracle floor": f"oracle floor ({f.tradeoff.oracle_fraction:.0%} of terms)"}

    def _hidden(self, f):
        if f.tradeoff is None:
            return set()
        return set() if len(f.tradeoff.sweep) else {"paper's τ sweep: stop-error"}

    def _ranges(self, f):
        # The curves' span, and always the star.
        star = float(f.operating_point["disagreement"])
        hi = max(tradeoff_error_span(f.tradeoff), star if np.isfinite(star) else 0.0)
        return (0.0, 1.02), (-0.005, hi * 1.05)

    def _on_tap(self, event) -> None:
        if event.x is not None and event.y is not None:
            self.state.select_point(float(event.x), float(event.y))
