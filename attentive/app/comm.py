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
kernel's was "calibrated". :func:`send_in_order` keeps one queue of messages per document: while
the comm is closed, or messages are still waiting, a push adds its message to the queue (taking
the document's changes at once, as Panel does: changes left held in the document would be lost
when the page's first message unholds it), and the queue goes out in order as soon as the comm
is open, tried again every 0.1 s until then. It replaces ``panel.io.notebook.diff`` for the whole
kernel, for good; for a document shown without a comm it does what Panel does.

**In batches.** That queue held ~256 messages after the notebook's last cell (every rule in a
row), ~800 comm messages (a patch is three, and two more a buffer), sent in one burst. The
kernel's IOPub socket is a ZeroMQ PUB socket, which drops what is beyond its high-water mark
(1,000 messages) when its reader falls behind. The queue now goes out :data:`SEND_BATCH` comm
messages at a time, :data:`BATCH_PAUSE_S` apart (~600 a second), in order; a push meanwhile joins
the queue. (The JupyterLab test had found the page's *Rule* field on "budget" or a sketched rule
after the burst; its wait was later found to pass on the field's first value, so whether those
runs lost the last patches or read the field before they arrived is not known: docs/app.md.)
"""

from __future__ import annotations

import weakref

from attentive.app.hidden import HiddenScript

__all__ = ["KernelChangesStay", "send_in_order"]

# Bokeh's qualified name of Panel's comm manager model.
COMM_MANAGER = "panel.models.comm_manager.CommManager"
# Set on the comm manager's class once wrapped (the page may show the dashboard twice).
WRAPPED = "attentiveKernelChangesStay"


class KernelChangesStay(HiddenScript):
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


# Seconds between tries while a document's comm is closed (Panel's own retry delay).
RETRY_S = 0.1
#: Comm messages sent at once from the queue, and the pause before the next batch: well below the
#: IOPub socket's high-water mark (1,000 messages), beyond which a burst's excess is dropped.
SEND_BATCH = 60
BATCH_PAUSE_S = 0.1


def _comm_of(doc):
    """The comm a notebook shows ``doc`` through (Panel's views), or None."""
    from panel.io.state import state

    for _viewable, _root, view_doc, comm in list(state._views.values()):
        if view_doc is doc and comm is not None:
            return comm
    return None


def send_in_order() -> None:
    """Send a notebook document's changes in the order they were made (see module); idempotent.
    Called from a cell (the kernel's thread): retries go to that thread's loop, whichever thread
    pushes."""
    import panel.io.notebook as notebook
    from tornado.ioloop import IOLoop

    if getattr(notebook.diff, "_attentive_in_order", False):
        return
    diff = notebook.diff
    loop = IOLoop.current()
    queues: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # document → messages
    waiting: weakref.WeakSet = weakref.WeakSet()  # documents with a retry scheduled

    def flush(doc, comm) -> None:
        queue = queues.get(doc, [])
        pause = RETRY_S
        if comm._comm:
            sent = 0
            while queue and sent < SEND_BATCH:
                msg = queue.pop(0)
                notebook.send(comm, msg)
                sent += 3 + 2 * len(msg.buffers)  # header, metadata, content; two a buffer
            pause = BATCH_PAUSE_S
        if queue and doc not in waiting:
            waiting.add(doc)
            loop.add_callback(loop.call_later, pause, retry, doc, comm)

    def retry(doc, comm) -> None:
        waiting.discard(doc)
        flush(doc, comm)

    def in_order(doc, binary=True, events=None):
        comm = _comm_of(doc) if events is None else None
        if comm is None or (comm._comm and not queues.get(doc)):
            return diff(doc, binary=binary, events=events)  # Panel's way: sent at once
        # Closed, or messages still waiting: this one joins the queue (the document's changes
        # leave it now, as Panel's diff takes them), and the queue goes out in order.
        msg = diff(doc, binary=binary)
        if msg is not None:
            queues.setdefault(doc, []).append(msg)
        if doc not in waiting:  # (else the batch or retry already due sends it)
            flush(doc, comm)
        return None

    in_order._attentive_in_order = True
    in_order.__wrapped__ = diff
    notebook.diff = in_order
