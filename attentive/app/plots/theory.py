"""Theory check: the required δ against the actual stop-error of the current family."""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource

from attentive.app.plots.base import COLORS, PlotView, col, extent
from attentive.app.rules import DELTA_RANGE, family_names, nominal_delta

__all__ = ["TheoryView"]


class TheoryView(PlotView):
    """Required δ against the actual stop-error of the current family on this dataset (the
    Brownian-bridge simulation has its own tab)."""

    output = "theory"
    extra = ("rule",)
    title = "Theory check: actual against required δ"
    xlabel = "required δ (log scale)"
    ylabel = "actual stop-error"
    x_axis_type = "log"
    legend_location = "top_left"
    SOURCES = ("dataset",)

    def _build(self, fig) -> None:
        # Sampled densely so that it is y = x on the log-x axis, not a chord.
        dense = np.geomspace(*DELTA_RANGE, 200)
        diag = ColumnDataSource({"x": dense, "y": dense})
        items = {
            "actual = required": [
                fig.line(
                    "x", "y", source=diag, color=COLORS["theta"], line_dash="dotted", line_width=2
                )
            ]
        }
        for key, color in zip(self.SOURCES, (COLORS["attentive"],), strict=True):
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

    def _split(self, th) -> dict[str, tuple[str, np.ndarray]]:
        """Source key → (its name in the data, rows) in the order the data lists them."""
        source = th["source"].to_numpy()
        names = list(dict.fromkeys(source))
        return {key: (name, source == name) for key, name in zip(self.SOURCES, names, strict=True)}

    def _current_delta(self) -> float:
        """The current rule's required δ: Φ(−z) of a family, δ otherwise."""
        s = self.state
        return nominal_delta(s.z) if s.boundary in family_names() else s.delta

    def _data(self, th):
        required, actual = th["required"].to_numpy(), th["actual"].to_numpy()
        out = {
            key: {"required": col(required, rows), "actual": col(actual, rows)}
            for key, (_, rows) in self._split(th).items()
        }
        out["delta"] = {"x": col([self._current_delta()])}
        return out

    def _labels(self, th):
        return {key: str(name) for key, (name, _) in self._split(th).items()}

    def _ranges(self, th):
        # Up to the largest measured error (or the current δ), not to the grid's δ = 0.5, which
        # would flatten the dataset's curve onto the axis.
        top = max(float(np.nanmax(th.actual.to_numpy(), initial=0.0)), self._current_delta(), 0.01)
        return (
            extent([th.required.to_numpy(), DELTA_RANGE], log=True),
            extent([th.actual.to_numpy(), [0.0, 1.2 * top]]),
        )

    def _hidden(self, th):
        # The budget rule has no δ: no current δ to mark.
        return {"current δ"} if self.state.boundary == "budget" else set()
