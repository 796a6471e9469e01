"""Figures as HoloViews elements: built once, drawn by Bokeh (notebooks, dashboard) or matplotlib
(PNG files). Importing this package imports HoloViews' core only; both plotting backends are
loaded when a figure is first built. The core :mod:`attentive` never imports this package.
"""

from attentive.plots.paper import *  # noqa: F403
from attentive.plots.paper import __all__  # noqa: F401
