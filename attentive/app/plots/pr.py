"""Precision–recall against the true labels: the full score, the paper's Algorithm-1 scores of the
current rule (``stopped_score="boundary"``) and a budget of the same mean cost. Drawn when the
evaluator's measurement arrives (:func:`attentive.app.rules.measure`)."""

from __future__ import annotations

import numpy as np

from attentive.app.plots.base import COLORS, PlotView, col, thin

__all__ = ["PrecisionRecallView"]


class PrecisionRecallView(PlotView):
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

    def __panel__(self):
        pane = super().__panel__()
        if not getattr(self, "_watching", False):
            self._watching = True
            self.state.param.watch(self._on_measured, "measured")
        return pane

    def _on_measured(self, event) -> None:
        if event.new is not None:
            self._on_figures(type("E", (), {"new": self.state.figures})())

    def _data(self, f):
        out = {}
        m = self.state.measured
        if m is None:
            return {k: {"recall": col([]), "precision": col([])} for k in self.METHODS}
        method = m.pr["method"].to_numpy()
        recall, precision = m.pr["recall"].to_numpy(), m.pr["precision"].to_numpy()
        for m in self.METHODS:
            rows = np.flatnonzero(method == m)
            rows = rows[thin(rows.size)]
            out[m] = {"recall": col(recall, rows), "precision": col(precision, rows)}
        return out

    def _labels(self, f):
        m = self.state.measured
        if m is None:
            return {k: f"{k}: evaluating…" for k in self.METHODS}
        names = {"attentive": "attentive (Algorithm 1)", "budgeted": "budgeted, same cost"}
        return {k: f"{names.get(k, k)}: AP {m.average_precision[k]:.3f}" for k in self.METHODS}

    def _ranges(self, f):
        return (0.0, 1.02), (0.0, 1.02)
