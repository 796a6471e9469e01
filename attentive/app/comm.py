"""In a notebook: the page keeps the kernel's own changes to itself, and the kernel's changes
reach the page in the order they were made.

Panel's page in a notebook (``panel/models/comm_manager.ts``, 1.9) applies each patch the kernel
sends and forwards every resulting change of the page's document back to the kernel, without
looking at Bokeh's ``sync`` flag: a change applied from the kernel's patch is marked
``sync = false``, and Bokeh's own client (``ClientSession._document_changed``) drops those. So
every change the kernel made came back to it. When a cell had made several moves in a row (the
dashboard notebook's last cell sets every rule in turn), the kernel then replayed each move from
its echo, recomputing the dashboard for rules long left, and could end on a stale one, while the
page's controls showed the last.

:class:`KernelChangesStay` is an invisible component shown with the dashboard in a notebook. As
the page renders it, it wraps the comm manager model's ``_document_changed`` (on its class, so
every comm manager of the page, drawn before or after) to forward only the changes the page itself
made: what the user did, and what the page's views computed (``sync`` true), as Bokeh's client
does. It is shown only in a notebook: served pages talk to Bokeh's client, which drops those
changes itself.

**In order.** Under *Run All*, the page asks for the dashboard's comm only once every cell has run
(its request waits behind the cells), so every change a cell made found the comm closed. Panel's
``push`` then kept each change's message and retried it 0.1 s later, each on its own timer, while
a push made once the comm was open went out at once, before them: the page received the last
rule first and the earlier ones after it, and its *Rule* field ended on "budget" while the
kernel's was "calibrated". :func:`send_in_order` makes a push leave the changes in the document
while the comm is closed (Panel holds a notebook's document, merging changes of the same property)
and try again every 0.1 s until it opens: the first message after that carries every change, a
property at its last value, other events (a data source's contents streamed or patched) in the
order they were made. It replaces ``panel.io.notebook.diff`` for the whole kernel, for good; for a
document shown without a comm, or not held, it does what Panel does.
"""

from __future__ import annotations

import weakref

from bokeh.document.events import DocumentPatchedEvent
from panel.custom import JSComponent

__all__ = ["KernelChangesStay", "send_in_order"]

# Bokeh's qualified name of Panel's comm manager model.
COMM_MANAGER = "panel.models.comm_manager.CommManager"
# Set on the comm manager's class once wrapped (the page may show the dashboard twice).
WRAPPED = "attentiveKernelChangesStay"


class KernelChangesStay(JSComponent):
    """Stops a notebook's page from sending the kernel's own changes back to it (see module)."""

    _esm = f"""
    export function render({{ el }}) {{
      el.style.display = 'none';
      const manager = window.Bokeh?.Models?.['{COMM_MANAGER}'];
      const forward = manager?.prototype?._document_changed;
      if (forward == null || manager.prototype['{WRAPPED}']) {{ return; }}
      manager.prototype._document_changed = function (event) {{
        // A batch carries its events; one applied from the kernel's patch has sync false.
        const events = Array.isArray(event.events) ? (event.sync ? event.events : []) : [event];
        for (const e of events) {{
          if (e.sync !== false) {{ forward.call(this, e); }}
        }}
      }};
      manager.prototype['{WRAPPED}'] = true;
    }}
    """

    def __init__(self, **params):
        params.setdefault("width", 0)
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        params.setdefault("sizing_mode", "fixed")
        super().__init__(**params)


# Seconds between tries while a document's comm is closed (Panel's own retry delay).
RETRY_S = 0.1


def _comm_of(doc):
    """The comm a notebook shows ``doc`` through (Panel's views), or None."""
    from panel.io.state import state

    for _viewable, _root, view_doc, comm in list(state._views.values()):
        if view_doc is doc and comm is not None:
            return comm
    return None


def send_in_order() -> None:
    """Hold a notebook document's changes while its comm is closed (see module); idempotent.
    Called from a cell (the kernel's thread): retries go to that thread's loop, whichever thread
    pushes."""
    import panel.io.notebook as notebook
    from tornado.ioloop import IOLoop

    if getattr(notebook.diff, "_attentive_in_order", False):
        return
    diff = notebook.diff
    loop = IOLoop.current()
    waiting: weakref.WeakSet = weakref.WeakSet()  # documents with a retry scheduled

    def retry(doc, comm) -> None:
        waiting.discard(doc)
        notebook.push(doc, comm)

    def in_order(doc, binary=True, events=None):
        comm = _comm_of(doc) if events is None else None
        held = doc.callbacks._held_events if comm is not None else ()
        if (
            comm is not None
            and not comm._comm
            and doc.callbacks.hold_value
            and any(isinstance(event, DocumentPatchedEvent) for event in held)
        ):
            # Closed: the changes stay held (and merged) in the document for the next try.
            if doc not in waiting:
                waiting.add(doc)
                loop.add_callback(loop.call_later, RETRY_S, retry, doc, comm)
            return None
        return diff(doc, binary=binary, events=events)

    in_order._attentive_in_order = True
    in_order.__wrapped__ = diff
    notebook.diff = in_order
