"""The attentive dashboard: ``panel serve app.py`` (or ``python -m attentive serve``).

Everything lives in :mod:`attentive.app`; this file only builds one dashboard per session.
"""

import panel as pn

from attentive.app import build_dashboard

if pn.state.served:
    build_dashboard(served=True).template().servable()
