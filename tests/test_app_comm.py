"""The notebook's guard against the page echoing the kernel's changes (``attentive.app.comm``)
wraps a method of Panel's comm manager by name: these tests fail when the installed Panel no
longer has it where the guard looks (the browser test, ``tests/ui/test_jupyterlab.py``, checks
what the page sends)."""

from __future__ import annotations

import re
from pathlib import Path

import panel as pn

from attentive.app.comm import COMM_MANAGER, KernelChangesStay, send_in_order
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


class _Loop:
    """Tornado's IOLoop.current() as the notebook's push uses it: timers kept, run by hand."""

    def __init__(self):
        self.timers = []

    def call_later(self, delay, callback, *args):
        self.timers.append((callback, args))

    def add_callback(self, callback, *args):
        callback(*args)

    def run(self):
        timers, self.timers = self.timers, []
        for callback, args in timers:
            callback(*args)


class _Comm:
    id = "comm"
    _comm = None  # closed until the page asks for it


def _shown_in_a_notebook(monkeypatch, widget):
    """``widget`` rendered as a notebook renders it: through a comm, its document held with
    the 'combine' policy, registered among Panel's views; returns (comm, loop, sent values)."""
    import panel.io.notebook as notebook
    from bokeh.document import Document
    from tornado.ioloop import IOLoop

    sent = []
    # Panel's own diff for the test (put back after it), whatever an earlier test installed.
    monkeypatch.setattr(notebook, "diff", getattr(notebook.diff, "__wrapped__", notebook.diff))
    monkeypatch.setattr(
        notebook,
        "send",
        lambda comm, msg: sent.extend(
            e["new"] for e in msg.content["events"] if e.get("attr") == "value"
        ),
    )
    loop = _Loop()
    monkeypatch.setattr(IOLoop, "current", staticmethod(lambda: loop))
    comm, doc = _Comm(), Document()
    root = widget.get_root(doc, comm)
    doc.add_root(root)
    doc.hold("combine")
    # Registered as a notebook registers it (get_root already did; removed after the test).
    pn.state._views.pop(root.ref["id"], None)
    monkeypatch.setitem(pn.state._views, root.ref["id"], (widget, root, doc, comm))
    return comm, loop, sent


def test_changes_made_while_the_comm_is_closed_reach_the_page_in_order_once_it_opens(
    monkeypatch,
):
    select = pn.widgets.Select(options=["a", "b", "c"], value="a")
    comm, loop, sent = _shown_in_a_notebook(monkeypatch, select)
    send_in_order()
    for value in ("b", "c", "a", "b", "c"):
        select.value = value
    assert sent == []  # the comm is closed: nothing leaves
    loop.run()
    assert sent == []  # still closed: tried again later
    comm._comm = object()  # the page asks for the comm
    select.value = "a"  # the first change after it opens waits behind the waiting ones
    assert sent == []
    loop.run()  # the retry due sends them, in order
    assert sent == ["b", "c", "a", "b", "c", "a"]
    select.value = "b"  # nothing waiting: at once
    assert sent == ["b", "c", "a", "b", "c", "a", "b"]
    assert loop.timers == []


def test_a_page_message_while_the_comm_was_closed_loses_no_change(monkeypatch):
    """The page's first messages reach the kernel as the comm opens, and applying one unholds
    the document (Panel's ``_on_msg``): changes left held in it were dropped."""
    select = pn.widgets.Select(options=["a", "b", "c"], value="a")
    comm, loop, sent = _shown_in_a_notebook(monkeypatch, select)
    send_in_order()
    select.value = "c"
    doc = next(iter(select._models.values()))[0].document
    doc.unhold()  # as Panel's _on_msg does around a page message
    doc.hold("combine")
    comm._comm = object()
    loop.run()
    assert sent == ["c"]


def test_without_it_panel_sends_the_changes_made_while_closed_after_a_later_one(monkeypatch):
    """What :func:`send_in_order` mends (when this fails, Panel keeps the order itself)."""
    select = pn.widgets.Select(options=["a", "b", "c"], value="a")
    comm, loop, sent = _shown_in_a_notebook(monkeypatch, select)
    for value in ("b", "c"):
        select.value = value
    comm._comm = object()
    select.value = "a"  # the last change, made once the comm is open
    loop.run()  # then the retries of the earlier ones
    assert sent[0] == "a" and sent[-1] == "c"


def test_a_long_queue_goes_out_in_batches_in_order(monkeypatch):
    """The queue goes out a batch of comm messages at a time (the kernel's IOPub socket drops
    what is beyond its high-water mark in a burst: the notebook's last cell queued ~800, and
    the last rules never reached the page), each batch after a pause, in order; a change made
    meanwhile joins the queue behind them."""
    import attentive.app.comm as comm_module

    monkeypatch.setattr(comm_module, "SEND_BATCH", 6)  # two patches: three comm messages each
    select = pn.widgets.Select(options=["a", "b", "c"], value="a")
    comm, loop, sent = _shown_in_a_notebook(monkeypatch, select)
    send_in_order()
    for value in ("b", "c", "a", "b", "c"):
        select.value = value
    comm._comm = object()
    loop.run()  # the retry finds the comm open: a first batch
    assert sent == ["b", "c"]
    assert len(loop.timers) == 1  # the next batch, after a pause
    select.value = "a"  # meanwhile: behind the waiting ones
    assert sent == ["b", "c"]
    loop.run()
    assert sent == ["b", "c", "a", "b"]
    loop.run()
    assert sent == ["b", "c", "a", "b", "c", "a"]
    loop.run()
    assert loop.timers == []
    select.value = "b"  # nothing waiting: at once
    assert sent[-1] == "b" and len(sent) == 7
