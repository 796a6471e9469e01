"""The dashboard (the only part of attentive that imports Panel and Bokeh).

>>> from attentive.app import build_dashboard
>>> build_dashboard()            # doctest: +SKIP  (in a notebook: the dashboard inline)

``panel serve app.py`` serves it; :class:`~attentive.app.state.DashboardState` drives it without a
browser.
"""

from attentive.app.layout import Dashboard, build_dashboard
from attentive.app.state import DashboardState

__all__ = ["Dashboard", "DashboardState", "build_dashboard"]
