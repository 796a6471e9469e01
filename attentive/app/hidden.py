"""A page script with no view of its own: a :class:`panel.custom.JSComponent` that takes no
space, for the components whose ``render`` only patches the page (:mod:`attentive.app.comm`,
:mod:`attentive.app.address`). Each hides its own element as it renders."""

from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["HiddenScript"]


class HiddenScript(JSComponent):
    """A zero-size, fixed, margin-less component (subclasses give the ``_esm``)."""

    def __init__(self, **params):
        params.setdefault("width", 0)
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        params.setdefault("sizing_mode", "fixed")
        super().__init__(**params)
