"""Figures as HoloViews elements: built once, drawn by Bokeh (notebooks, dashboard) or matplotlib
(PNG files). Imports holoviews (and registers both backends) when imported; the core
:mod:`attentive` never imports this package.
"""

from attentive.plots.paper import (
    COLORS,
    decision_error_plot,
    figure3,
    figure4,
    precision_recall_plot,
    stopping_time_plot,
    style,
    tradeoff_plot,
)

__all__ = [
    "COLORS",
    "decision_error_plot",
    "figure3",
    "figure4",
    "precision_recall_plot",
    "stopping_time_plot",
    "style",
    "tradeoff_plot",
]
