"""Precision–recall against the true labels: the full score, the paper's Algorithm-1 scores of the
current rule (``stopped_score="boundary"``) and a budget of the same mean cost. Drawn when the
evaluator's measurement arrives (:func:`attentive.app.rules.measure`), after a move's patch has
left, so it has no 50 ms budget: it is the shared HoloViews element of the notebooks and the
reproduced figures (:func:`attentive.plots.precision_recall_plot`), redrawn on each measurement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param

from attentive.app.plots.base import COLORS, hv_plots
from attentive.app.state import DashboardState

__all__ = ["PrecisionRecallView"]

NAMES = {"attentive": "attentive (Algorithm 1)", "budgeted": "budgeted, same cost"}


class PrecisionRecallView(pn.viewable.Viewer):
    """Precision–recall of the full, attentive and budgeted scores against the true labels."""

    state = param.ClassSelector(class_=DashboardState)

    title = "Precision–recall against the true labels"
    METHODS = ("full", "attentive", "budgeted")
    HEIGHT = 380

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = None

    def _element(self):
        m = self.state.measured
        if m is None:  # not measured yet: empty curves, the legend says so
            pr = pd.DataFrame({"method": list(self.METHODS), "recall": np.nan, "precision": np.nan})
            labels = {k: f"{k}: evaluating…" for k in self.METHODS}
        else:
            pr = m.pr
            labels = {
                k: f"{NAMES.get(k, k)}: AP {m.average_precision[k]:.3f}" for k in self.METHODS
            }
        colors = {k: COLORS[k] for k in self.METHODS}
        element = hv_plots().precision_recall_plot(
            pr, labels, self.title, colors=colors, height=self.HEIGHT
        )
        return element.opts(
            ylim=(0.0, 1.02), toolbar="above", hooks=[_page_scrolls], backend="bokeh"
        )

    def _on_measured(self, event) -> None:
        # A move clears the measurement (None) and a new one arrives after it: the plot is
        # redrawn only then, never on the move itself (a HoloViews redraw is ~100 ms).
        if event.new is not None:
            self._pane.object = self._element()  # Panel sends it in the session's context

    def __panel__(self):
        if self._pane is None:
            self._pane = pn.pane.HoloViews(
                self._element(), backend="bokeh", sizing_mode="stretch_width", min_height=300
            )
            self.state.param.watch(self._on_measured, "measured")
        return self._pane


def _page_scrolls(plot, element) -> None:
    """The mouse wheel scrolls the page (the zoom tools stay one click away)."""
    fig = plot.state
    fig.toolbar.active_scroll = None
    fig.toolbar.logo = None
    fig.title.align = "center"
