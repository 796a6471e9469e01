"""The attentive dashboard: ``panel serve app.py`` (or ``python -m attentive serve``).

Everything lives in :mod:`attentive.app`; this file only builds one dashboard per session.
"""

import panel as pn

from attentive.app import build_dashboard

if pn.state.served:
    # Bokeh then walks the page's models once, when it is built, not once for each root and
    # link added (a session's build took ~2.4 s, ~1.6 with this, measured).
    with pn.state.curdoc.models.freeze():
        build_dashboard(served=True).template().servable()
