"""Served: the page's address follows the controls in place, without a history entry a move.

Panel's location (``panel/models/location.ts``, 1.9) writes each change of the query with
``history.pushState``, and nothing reads the history back (it has no ``popstate`` listener). So
every slider step and every field added an entry: after a few moves of δ, the browser's Back
button walked through addresses the dashboard did not follow (the address said one δ, the page
showed another), and took as many presses to leave the page.

:class:`AddressInPlace` is an invisible component shown in the served page. As the page renders
it, it wraps ``history.pushState`` so that an address that differs from the current one only in
its query or fragment (the same path) replaces the current entry: the address always holds the
state shown (a copied or reloaded address gives the same dashboard), and Back leaves the page.
A change of path (none that the dashboard makes) still adds an entry, and so does the header's
theme toggle, which loads the page anew (Back then gives the other theme, at the same address).
tests/test_app_address.py fails when Panel's location reads the history back (the component can
go then).
"""

from __future__ import annotations

from attentive.app.hidden import HiddenScript

__all__ = ["AddressInPlace"]

# Set on window.history once wrapped (the page may render the component again).
WRAPPED = "attentiveAddressInPlace"


class AddressInPlace(HiddenScript):
    """Query changes replace the page's history entry instead of adding one (see module)."""

    _esm = f"""
    export function render({{ el }}) {{
      el.style.display = 'none';
      const history = window.history;
      if (history['{WRAPPED}']) {{ return; }}
      const push = history.pushState.bind(history);
      const replace = history.replaceState.bind(history);
      history.pushState = function (state, unused, url) {{
        // (no address given keeps the current one: the same path)
        let samePath = url == null;
        try {{
          samePath ||= new URL(url, window.location.href).pathname === window.location.pathname;
        }} catch (e) {{}}
        return samePath ? replace(state, unused, url) : push(state, unused, url);
      }};
      history['{WRAPPED}'] = true;
    }}
    """
