"""The walks plot: partial scores ``S_t`` against t, each stopped walk ending at its stop, with the
rule's boundary, θ_S, the budget B and the Brownian bridge the constant boundary assumes.
A click on a stop shows that example (:mod:`attentive.app.focus`).

A mass-regression rule stops on its estimate of ``S_n`` from ``S_t`` and the running mass
``A_t``, not on ``S_t``: for it the walks drawn are those of that estimate, against ``θ_S ± z
σ_t`` (:attr:`WalkFigure.uses_mass`; computed in :mod:`attentive.app.figures`), labelled so, and
the bridge band (in S space) is hidden. A sketched
rule walks after the sketch: the walks drawn are the residual walks ``S^ρ_t``, which start at
the sketch's score ``F̃(x)`` (:attr:`WalkFigure.sketch`), said so in the title, axis and a
caption; the bridge band, of walks that start at 0, is hidden too."""

from __future__ import annotations

import numpy as np
from bokeh.models import TapTool, Title

from attentive.app.plots.base import (
    COLORS,
    PlotView,
    class_label,
    col,
    extent,
    thin,
    wrap_caption,
)

__all__ = ["TrajectoryView"]

# Short enough for the legend's second column on a phone (390 px wide: the first column's longest
# entry, STOPS, sets where the second starts); docs/app.md gives the band's formula,
# ± z·√(V t (n − t)) / n.
BRIDGE = "Brownian bridge ± z·sd"
STOPS = "stopped (click one)"
# A mass-regression rule: it stops on its estimate of S_n from S_t and A_t, whose walks are drawn.
MASS_TITLE = "Walks of the estimate of S_n"
MASS_YLABEL = "estimate of S_n"  # the caption gives it: a_t + b_t·S_t + c_t·A_t
MASS_BOUNDARY = "boundary θ_S ± z·σ_t"
MASS_CAPTION = (
    "A_t = Σ |w|·h over the terms evaluated so far: the walk's running mass.\n"
    "The rule estimates S_n by a_t + b_t·S_t + c_t·A_t (least squares on reference\n"
    "walks) and stops where the estimate is z·σ_t past θ_S; at t = n it is S_n."
)
# Added where some positions have no estimate (b_t ≤ 0: synthetic's t = 4–5, 54–74 and 78–80).
MASS_GAPS = "Gaps: where b_t ≤ 0, the rule cannot stop."


# A sketched rule: the residual walks S^ρ_t, from the sketch's score F̃(x) (SPEC §3b). Titles
# short enough for a phone's plot (about 38 characters at 390 px); the y label and the caption
# say where the walks start.
SKETCH_TITLE = "Walks after the sketch: S^ρ_t"
SKETCH_YLABEL = "S^ρ_t, started at F̃(x)"
SKETCH_MASS_TITLE = "After the sketch: estimate of S_n"
SKETCH_MASS_YLABEL = "estimate of S_n, from F̃(x)"
SKETCH_CAPTION = (
    "t = 0: the sketch's score F̃(x) ({named}; {cost:.3f} of a full evaluation); a stop near"
    " t = 0: the sketch all but decided. Each step adds what the sketch got wrong on one term,"
    " w_i (h_i − h̃_i), the worst first. The boundary applies to {statistic}."
)


def caption(f) -> str:
    """What the walks plot says under its axis for figure data ``f`` ("" for the plain walks)."""
    if f.sketch is not None:
        statistic = (
            "the estimate a_t + b_t·S^ρ_t + c_t·A_t of S_n (A_t: the running mass)"
            if f.uses_mass
            else "S^ρ_t"
        )
        text = SKETCH_CAPTION.format(
            named=f.sketch.named, cost=f.sketch.sketch_cost, statistic=statistic
        )
        return wrap_caption(text + (" " + MASS_GAPS if _mass_gaps(f) else ""))
    if not f.uses_mass:
        return ""
    return wrap_caption(MASS_CAPTION + (" " + MASS_GAPS if _mass_gaps(f) else ""))


def _mass_gaps(f) -> bool:
    """Whether a mass rule's drawn boundary has positions without an estimate (b_t ≤ 0)."""
    if not f.uses_mass:
        return False
    side = "upper" if f.rule.side == "upper" else "lower"
    return bool(f.boundary[side].isna().any())


class TrajectoryView(PlotView):
    """Partial scores ``S_t`` (a mass rule: its estimate of ``S_n``) against t, stopped walks ending
    at their stop, with τ and θ_S."""

    output = "walk_figure"
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
        stops = self._source("stops", "t", "s", "example", strings=("color",))
        band = self._source("band", "t", "lo", "hi", "mid")
        r_band = fig.varea(
            "t", "lo", "hi", source=band, fill_color=COLORS["theta"], fill_alpha=0.15
        )
        r_mid = fig.line("t", "mid", source=band, color=COLORS["theta"], line_width=1)
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
        # The band's edges drawn again over the walks, which would otherwise cover its fill.
        edge = {"color": COLORS["theta"], "line_width": 1, "line_alpha": 0.6}
        r_band_lo = fig.line("t", "lo", source=band, **edge)
        r_band_hi = fig.line("t", "hi", source=band, **edge)
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
                "threshold θ_S": [r_theta],
                STOPS: [r_stops],
                BRIDGE: [r_band, r_mid, r_band_lo, r_band_hi],
            },
        )
        self._caption = Title(
            text=wrap_caption(MASS_CAPTION),
            align="center",
            text_font_size="8pt",
            text_font_style="italic",
            visible=False,
        )
        fig.add_layout(self._caption, "below")
        fig.add_tools(TapTool(renderers=[r_stops], behavior="select"))
        stops.selected.on_change("indices", self._on_select)

    def _on_select(self, attr, old, new) -> None:
        if new:
            example = self._sources["stops"].data["example"][new[0]]
            self.state.focus = int(example)

    def _data(self, f):
        (xn, yn), (xp, yp) = f.trajectories["negative"], f.trajectories["positive"]
        b = f.boundary
        rows = thin(len(b))
        stops = f.stops
        return {
            "negative": {"x": col(xn), "y": col(yn)},
            "positive": {"x": col(xp), "y": col(yp)},
            "boundary": {c: col(b[c].to_numpy(), rows) for c in ("t", "lower", "upper", "theta_s")},
            "budget": {c: col(f.budget_line[c].to_numpy()) for c in ("t", "s")},
            "band": {
                "t": col(b["t"].to_numpy(), rows),
                "lo": col(b["bridge_lo"].to_numpy(), rows),
                "hi": col(b["bridge_hi"].to_numpy(), rows),
                "mid": col(b["bridge"].to_numpy(), rows),
            },
            "stops": {
                "example": stops["example"].to_numpy().astype(np.float64),
                "t": col(stops["t"].to_numpy()),
                "s": col(stops["s"].to_numpy()),
                "color": np.where(
                    stops["full_class"].to_numpy() == "positive",
                    COLORS["positive"],
                    COLORS["negative"],
                ).astype(object),
            },
        }

    def _title(self, f) -> str:
        if f.sketch is not None:
            return SKETCH_MASS_TITLE if f.uses_mass else SKETCH_TITLE
        return MASS_TITLE if f.uses_mass else self.title

    def _refresh(self, f) -> None:
        super()._refresh(f)
        if f is None:
            return
        text = caption(f)
        if self._caption.text != text:
            self._caption.text = text
        if self._caption.visible != bool(text):
            self._caption.visible = bool(text)

    def _axis_labels(self, f) -> tuple[str, str]:
        if f.sketch is not None:
            return self.xlabel, SKETCH_MASS_YLABEL if f.uses_mass else SKETCH_YLABEL
        return self.xlabel, MASS_YLABEL if f.uses_mass else self.ylabel

    def _fit_key(self, f):
        # S_t, a mass rule's estimate of S_n and the walks after a sketch are different scales: a
        # change refits the axes.
        return f.uses_mass, f.sketch is not None

    def _labels(self, f):
        s = self.state
        if f.uses_mass:
            boundary = MASS_BOUNDARY
        else:
            boundary = "boundary τ on S^ρ_t" if f.sketch is not None else "boundary τ"
        return {
            "negative": class_label(s, False),
            "positive": class_label(s, True),
            "boundary τ": boundary,
        }

    def _hidden(self, f):
        # The budget rule stops at B, not at a boundary τ, and has no scale z for a bridge band.
        hidden = {"boundary τ", BRIDGE} if f.budget is not None else {"budget B"}
        if f.uses_mass or f.sketch is not None:
            # The bridge describes S_t from 0, not the statistic drawn for a mass rule or the
            # walks after a sketch.
            hidden.add(BRIDGE)
        drawn = f.boundary[["lower", "upper"]].to_numpy(dtype=np.float64)
        if not np.isfinite(drawn).any():  # full evaluation (a calibration that fell back)
            hidden.add("boundary τ")
        return hidden

    def _ranges(self, f):
        """The walks and θ_S, and the boundary where it comes within half their span of them: a
        regression rule's threshold on S_t is ``(θ ∓ z σ_t − a_t) / b_t``, and where its slope
        ``b_t`` nears 0 it leaves for ±hundreds (MNIST 4 vs 9's default heteroscedastic rule:
        −329 and +274 at t = 19 against walks within ±2), so that, fitted to it, the axis drew
        every walk as a flat line at 0. There the boundary leaves the plot."""
        yn, yp = f.trajectories["negative"][1], f.trajectories["positive"][1]
        b = f.boundary
        lo, hi = extent([yn, yp, b["theta_s"].to_numpy()], pad=0.0)
        reach = 0.5 * max(hi - lo, 1e-12)
        tau = np.concatenate([b["lower"].to_numpy(), b["upper"].to_numpy()]).astype(np.float64)
        near = tau[np.isfinite(tau) & (tau >= lo - reach) & (tau <= hi + reach)]
        return (0.0, float(f.n_terms)), extent([yn, yp, b["theta_s"].to_numpy(), near])
