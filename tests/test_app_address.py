"""The served page keeps the controls' moves out of the browser's history
(``attentive.app.address``) because Panel's location pushes an entry a change and never reads
the history back: these tests fail when the installed Panel no longer does so (the component
can go then), and check where the component is shown. The browser test
(``tests/ui/test_dashboard.py::test_controls_move_numbers_and_the_url_holds_them``) checks the
history itself."""

from __future__ import annotations

from pathlib import Path

import panel as pn

from attentive.app.address import AddressInPlace
from attentive.app.layout import Dashboard
from attentive.app.state import DashboardState

SOURCE = Path(pn.__file__).parent / "models" / "location.ts"


def test_panels_location_pushes_an_entry_a_change_and_reads_no_history_back():
    source = SOURCE.read_text()
    assert "window.history.pushState(" in source
    assert "replaceState" not in source
    assert "popstate" not in source
    # What the component wraps, and what it turns a change of the query into.
    assert "history.pushState = function" in AddressInPlace._esm
    assert "replace(state, unused, url)" in AddressInPlace._esm


def test_the_served_page_carries_the_component_once_and_the_notebook_view_not_at_all():
    dash = Dashboard(state=DashboardState(dataset="digits-2v5", hold_background=True))
    template = dash.template()
    served = [*template.main, *template.sidebar, *template.header, *template.modal]
    assert len(pn.Column(*served).select(AddressInPlace)) == 1
    assert not dash.__panel__().select(AddressInPlace)
