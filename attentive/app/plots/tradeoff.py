"""Every rule on one tradeoff: disagreement (and the paper's stop-error) against the work per
example — the mean fraction of terms evaluated, and for a sketched rule its sketch plus the terms
it walks, in full evaluations — for each registered family over its scales, the sketched rules
(dashed, where the walk has a sketch), the budgeted baseline, the paper's constant-τ sweep, the
oracle floor, and the current rule. A click picks the nearest point of any rule's curve (or B
for the budget rule); a caption says where the sketched rules are and why they may be absent."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from bokeh.events import Tap
from bokeh.models import HoverTool, Span, Title

from attentive.app.figures import TRADEOFF_LEGEND_BAND, tradeoff_ranges
from attentive.app.plots.base import COLORS, OUTSIDE_STYLE, PlotView, col, ink, wrap_caption
from attentive.app.rules import base_family, family_names, rule_names
from attentive.app.sketches import summary

__all__ = [
    "FAMILY_COLORS",
    "LEGEND_ALPHA",
    "LEGEND_COLS",
    "LEGEND_SPOTS",
    "NARROW_PX",
    "SKETCHED",
    "SWEEP",
    "WIDE_PX",
    "TradeoffView",
    "band_spans",
    "legend_spot",
]

FAMILY_COLORS = ["#CC79A7", "#56B4E9", "#E69F00", "#0072B2", "#882255", "#999933"]
# One legend entry for the sketched rules: dashed, each in its family's colour; their work (the
# x axis) includes the sketch (the caption below the plot says so). The labels are short: the
# legend sits inside the data area, and on a phone each character is width taken from the curves.
SKETCHED = "sketched (dashed)"
SWEEP = "paper's τ: stop-error"


def family_color(name: str) -> str:
    """A family's colour; a sketched rule takes its family's."""
    if name in rule_names("sketched"):
        name = base_family(name)
    return FAMILY_COLORS[list(family_names()).index(name) % len(FAMILY_COLORS)]


# The legend sits inside the plot, in two columns, in a band at the top that the curves leave
# free: the error axis reaches 1 / (1 − TRADEOFF_LEGEND_BAND) of the curves' span. In one
# column its ten to twelve entries took 60 % of the data area's height wherever it went, over
# curves (breast cancer's budgeted curve and star on the desktop, the constant curve on a
# phone); in two they take about a third (five or six rows of 14 px in a card 400 px high),
# above every curve.
LEGEND_COLS = 2
LEGEND_ALPHA = 0.95
# Where in the band the legend may sit, the x span each covers, in order of preference: where
# the lines run the least through the band under it (a family curve's steep climb at small work
# passes through it on its way off the axis; :func:`legend_spot`).
LEGEND_SPOTS = {"top_right": (0.4, 1.02), "top_left": (0.0, 0.6), "top_center": (0.2, 0.8)}


# On a narrow plot the legend goes above the data area. Its two columns are about 240 px wide
# (its labels at 8 pt): in a phone's data area, about 310 px, they covered three quarters of the
# band's width wherever they went, over the curves' climbs through it (breast cancer's constant
# curve and budgeted spike). Above, the band is not needed: the curves take the whole axis. Wide
# plots keep the legend inside ("In Jupyter, offline" in docs/app.md: above, it made the figure
# re-lay itself out at each change of its entries); a plot learns its width from the browser.
NARROW_PX = 400
WIDE_PX = 440


def band_spans(x, y, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The x intervals ``(a, b)`` over which the polyline through (``x``, ``y``) runs inside
    ``lo ≤ y ≤ hi``, one for each of its segments that enters that band (a steep climb through
    it: an interval as wide as the climb's slant; a segment with a NaN end is not drawn)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    x0, x1, y0, y1 = x[:-1], x[1:], y[:-1], y[1:]
    drawn = np.isfinite(x0) & np.isfinite(x1) & np.isfinite(y0) & np.isfinite(y1)
    dy = y1 - y0
    flat = dy == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (lo - y0) / dy, (hi - y0) / dy
    # where along the segment (0 … 1) it is in the band; a flat one all of it, or none
    inside = (y0 >= lo) & (y0 <= hi)
    t0 = np.where(flat, np.where(inside, 0.0, 1.0), np.clip(np.minimum(ta, tb), 0.0, 1.0))
    t1 = np.where(flat, np.where(inside, 1.0, 0.0), np.clip(np.maximum(ta, tb), 0.0, 1.0))
    hit = drawn & (t1 >= t0) & (flat | ((np.maximum(ta, tb) >= 0) & (np.minimum(ta, tb) <= 1)))
    xa, xb = x0 + t0 * (x1 - x0), x0 + t1 * (x1 - x0)
    return np.minimum(xa, xb)[hit], np.maximum(xa, xb)[hit]


def legend_spot(curves, y_top: float) -> str:
    """The spot of :data:`LEGEND_SPOTS` under which the ``curves`` (``(x, y)`` pairs, each a
    polyline as drawn) run the least inside the legend's band at the top of the error axis
    (which reaches ``y_top``): the width of their runs through it within the spot, and 0.01 for
    each run (a vertical climb is a run of no width); ties go to the first. Parts above the
    axis are not drawn, so cover nothing."""
    lo = (1 - TRADEOFF_LEGEND_BAND) * y_top
    runs = [band_spans(x, y, lo, y_top) for x, y in curves]
    a = np.concatenate([r[0] for r in runs]) if runs else np.empty(0)
    b = np.concatenate([r[1] for r in runs]) if runs else np.empty(0)
    cover = []
    for left, right in LEGEND_SPOTS.values():
        width = np.minimum(b, right) - np.maximum(a, left)
        under = width >= 0
        cover.append(float(np.sum(width[under]) + 0.01 * np.count_nonzero(under)))
    return list(LEGEND_SPOTS)[int(np.argmin(cover))]


def _curves() -> tuple[str, ...]:
    """The rules drawn as curves: every family, then the sketched rules."""
    return (*family_names(), *rule_names("sketched"))


class TradeoffView(PlotView):
    """Disagreement against mean fraction evaluated for every rule; click to choose a point."""

    output = "numbers"  # the current rule's point (the star)
    extra = ("tradeoff", "sketch", "sketching")  # every rule's curves; where the sketch is
    title = "Tradeoff of every rule"  # short: the axes say what is plotted
    xlabel = "work per example (in full evaluations)"
    ylabel = "disagreement (vs. full)"  # fits a phone's short plot; the x axis says "full"
    legend_location = "top_right"

    def _build(self, fig) -> None:
        items, sketched_lines = {}, []
        hover = []
        line_cols = ("x", "y", "z")
        for name in _curves():
            src = self._source(name, *line_cols)
            sketched = name not in family_names()
            r = fig.line(
                "x",
                "y",
                source=src,
                color=family_color(name),
                line_width=2.2,
                line_dash="dashed" if sketched else "solid",
            )
            if sketched:
                sketched_lines.append(r)
            else:
                items[name] = [r]  # the family's name, as the Rule menu gives it
            hover.append(r)
        items[SKETCHED] = sketched_lines
        bud = self._source("budgeted", "x", "y", "err", "z")
        r_b = fig.line("x", "y", source=bud, color=COLORS["budgeted"], line_width=2)
        r_be = fig.line(
            "x", "err", source=bud, color=COLORS["budgeted"], line_width=1.2, line_dash="dashed"
        )
        items["budgeted"] = [r_b]
        items["budgeted: stop-error"] = [r_be]
        sweep = self._source("sweep", "x", "y", "err", "z")
        r_se = fig.line(
            "x", "err", source=sweep, color=COLORS["attentive"], line_width=1.2, line_dash="dashed"
        )
        items[SWEEP] = [r_se]
        self._oracle = Span(
            location=0, dimension="height", line_color=ink(), line_dash="dotted", line_width=2
        )
        fig.add_layout(self._oracle)
        oracle = self._source("oracle", "x", "y")
        items["oracle floor"] = [
            fig.scatter("x", "y", source=oracle, marker="triangle", size=10, color=ink())
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
                line_color=ink(),
                line_width=1.5,
            )
        ]
        fig.add_tools(
            HoverTool(
                renderers=hover,
                tooltips=[
                    ("work per example", "@x{0.000}"),
                    ("disagreement", "@y{0.0000}"),
                    ("scale z", "@z{0.00}"),
                ],
            )
        )
        self._legend(fig, items)
        self._legend_model = fig.legend[0]
        self._legend_model.ncols = LEGEND_COLS
        # Opaque: where every spot of the band has a curve's climb through it (the low-rank
        # problem's plain curves climb at work 0.6–0.8, its sketched ones at 0.05), the lines
        # ran through the entries' text at 70 % opacity. Only the band is covered: the curves
        # below it, their span, never are.
        self._legend_model.background_fill_alpha = LEGEND_ALPHA
        self._inside_style = {k: getattr(self._legend_model, k) for k in OUTSIDE_STYLE}
        self._legend_above = False
        fig.on_change("inner_width", self._on_width)
        self._caption = Title(
            text="", align="center", text_font_size="8pt", text_font_style="italic"
        )
        fig.add_layout(self._caption, "below")
        fig.on_event(Tap, self._on_tap)

    def _value(self):
        m = self.state.numbers()
        if m is None:
            return None
        point = {k: m[k] for k in ("work_fraction", "disagreement")}
        s = self.state
        return SimpleNamespace(
            tradeoff=s.tradeoff,
            operating_point=point,
            caption=summary(s.sketch, s.sketching is not None and s.sketching is s.walks),
        )

    def _data(self, f):
        out = {}
        t = f.tradeoff
        if t is None:  # computed after the numbers: the curves follow (the star is drawn now)
            self._drawn_tradeoff = None
            empty = np.empty(0, dtype=np.float32)
            for name in (*_curves(), "budgeted", "sweep", "oracle"):
                out[name] = {c: empty for c in self._sources[name].data}
            self._oracle.location = None
        elif t is not getattr(self, "_drawn_tradeoff", None):  # cached per walk, side and θ
            self._drawn_tradeoff = t
            fam = t.families
            for name in _curves():
                rows = fam[fam["method"] == name].sort_values("work_fraction")
                out[name] = {
                    "x": col(rows["work_fraction"]),
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
            # The lines drawn: each curve, the budgeted rule's and the sweep's stop-error.
            drawn = [(out[n]["x"], out[n]["y"]) for n in (*_curves(), "budgeted")]
            drawn += [(out[n]["x"], out[n]["err"]) for n in ("budgeted", "sweep")]
            spot = legend_spot(drawn, self._error_top(f))  # (the axis as drawn)
            self._inside_style["location"] = spot
            if not self._legend_above and self._legend_model.location != spot:
                self._legend_model.location = spot
        op = f.operating_point
        out["point"] = {
            "x": col([op["work_fraction"]]),
            "y": col([op["disagreement"]]),
        }
        return out

    def _title(self, f) -> str:
        return self.title if f.tradeoff is not None else f"{self.title} (computing the curves…)"

    def _labels(self, f):
        if f.tradeoff is None:
            return {"oracle floor": "oracle floor"}
        # (The plain walk's: a sketched rule, drawn beside it, stops before it.)
        return {"oracle floor": f"oracle floor (plain walk) at {f.tradeoff.oracle_fraction:.2f}"}

    def _refresh(self, f) -> None:
        super()._refresh(f)
        if f is not None and self._caption.text != wrap_caption(f.caption):
            self._caption.text = wrap_caption(f.caption)

    def _hidden(self, f):
        if f.tradeoff is None:  # the curves are computing: only the star is drawn
            return set(self._items) - {"current rule"}
        drawn = set(f.tradeoff.families["method"])
        hidden = set() if drawn & set(rule_names("sketched")) else {SKETCHED}
        if not len(f.tradeoff.sweep):
            hidden.add(SWEEP)
        return hidden

    @staticmethod
    def _error_top(f) -> float:
        """Where the error axis ends (:func:`attentive.app.figures.tradeoff_ranges`)."""
        return tradeoff_ranges(f.tradeoff, f.operating_point)[1][1]

    def _ranges(self, f):
        band = 0.0 if self._legend_above else TRADEOFF_LEGEND_BAND
        return tradeoff_ranges(f.tradeoff, f.operating_point, band)

    def _on_width(self, attr, old, new) -> None:
        """The browser laid the data area out ``new`` pixels wide: the legend goes above it
        when narrower than :data:`NARROW_PX`, back inside from :data:`WIDE_PX` (the move
        changes the error axis, its tick labels' width and so the data area's: no flip-flop)."""
        if not isinstance(new, int | float):
            return
        above = new < NARROW_PX if not self._legend_above else new < WIDE_PX
        if above != self._legend_above:
            self._place_legend(above=above)
            self._on_change()  # the axes refit (unless zoomed): no band above

    def _place_legend(self, above: bool) -> None:
        fig, legend = self._fig, self._legend_model
        self._legend_above = above
        if above:
            fig.center = [r for r in fig.center if r is not legend]
            legend.update(**{**OUTSIDE_STYLE, "spacing": 4})  # (tighter rows than the walks')
            fig.above = [*fig.above, legend]
        else:
            fig.above = [r for r in fig.above if r is not legend]
            legend.update(**self._inside_style)
            fig.center = [*fig.center, legend]

    def _on_tap(self, event) -> None:
        if event.x is not None and event.y is not None:
            fig = self._fig  # distances in the axes as shown (after a user's zoom too)
            ends = (fig.x_range.start, fig.x_range.end, fig.y_range.start, fig.y_range.end)
            shown = None
            if all(isinstance(v, int | float) for v in ends):
                shown = ((ends[0], ends[1]), (ends[2], ends[3]))
            self.state.select_point(float(event.x), float(event.y), shown)
