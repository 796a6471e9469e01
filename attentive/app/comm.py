"""In a notebook, the page keeps the kernel's own changes to itself.

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
does. Served pages talk to Bokeh's client and have no comm manager; the component does nothing
there.
"""

from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["KernelChangesStay"]

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
