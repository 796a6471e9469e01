"""The dashboard's plots, one module each: the walks, tradeoff, precision–recall and theory plots
on a common in-place-updating Bokeh base."""

from attentive.app.plots.base import COLORS, PlotView
from attentive.app.plots.pr import PrecisionRecallView
from attentive.app.plots.theory import TheoryView
from attentive.app.plots.tradeoff import TradeoffView
from attentive.app.plots.walks import TrajectoryView

__all__ = [
    "COLORS",
    "PlotView",
    "PrecisionRecallView",
    "TheoryView",
    "TradeoffView",
    "TrajectoryView",
]
