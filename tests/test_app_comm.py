"""The notebook's guard against the page echoing the kernel's changes (``attentive.app.comm``)
wraps a method of Panel's comm manager by name: these tests fail when the installed Panel no
longer has it where the guard looks (the browser test, ``tests/ui/test_jupyterlab.py``, checks
what the page sends)."""

from __future__ import annotations

import re
from pathlib import Path

import panel as pn

from attentive.app.comm import COMM_MANAGER, KernelChangesStay
from attentive.app.layout import Dashboard
from attentive.app.state import DashboardState

SOURCE = Path(pn.__file__).parent / "models" / "comm_manager.ts"


def _class_body(source: str, name: str) -> str:
    start = source.index(f"export class {name} ")
    following = source.find("\nexport ", start + 1)
    return source[start : following if following > 0 else len(source)]


def test_the_guard_names_panels_comm_manager_model():
    source = SOURCE.read_text()
    module = re.search(r'__module__ = "([^"]+)"', source).group(1)
    assert COMM_MANAGER == f"{module}.CommManager"
    model = _class_body(source, "CommManager")
    assert "extends Model" in model.splitlines()[0]
    # The method the guard wraps, and the listener that calls it through the class.
    assert re.search(r"\n  (protected )?_document_changed\(event", model)
    assert "(event) => this._document_changed(event)" in model
    assert "_document_changed" in KernelChangesStay._esm
    assert f"['{COMM_MANAGER}']" in KernelChangesStay._esm


def test_panels_page_forwards_changes_without_looking_at_sync():
    """What the guard mends: when this fails, Panel filters the kernel's own changes itself and
    the guard can go."""
    model = _class_body(SOURCE.read_text(), "CommManager")
    body = model[re.search(r"\n  (protected )?_document_changed\(event", model).start() :]
    body = body[: body.index("\n  }\n")]
    assert not re.search(r"\.sync\b", body)
    assert "this._event_buffer.push(event)" in body


def test_the_notebook_view_carries_the_guard_and_the_served_page_does_not():
    dash = Dashboard(state=DashboardState(dataset="digits-2v5", hold_background=True))
    notebook = dash.__panel__()
    assert len(notebook.select(KernelChangesStay)) == 1
    template = dash.template()
    served = [*template.main, *template.sidebar, *template.header, *template.modal]
    assert not pn.Column(*served).select(KernelChangesStay)
