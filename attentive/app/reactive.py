"""Views follow the state's outputs through Panel's own binding, on the parameters each output
really depends on: ``bind(fn, state, "numbers", "measured")`` is ``pn.bind`` over the inputs of
``state.numbers`` (its ``@param.depends``) and ``state.measured``, calling
``fn(state.numbers(), state.measured)`` when any of them changes.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

__all__ = ["bind", "inputs"]


def inputs(state: param.Parameterized, output: str) -> list[param.Parameter]:
    """The parameters of ``state`` that its method ``output`` depends on."""
    return [state.param[d.name] for d in state.param.method_dependencies(output)]


def bind(fn: Callable, state: param.Parameterized, output: str, *extra: str, watch=False):
    """``pn.bind`` of ``fn(state.<output>(), *(state.<e> for e in extra))`` on the parameters
    ``output`` depends on and ``extra``; ``watch=True`` calls it on every change (a view that
    updates a Bokeh figure in place) instead of returning a bound function to display."""
    deps = inputs(state, output)
    more = [state.param[name] for name in extra if name not in {p.name for p in deps}]

    def call(*values):
        named = dict(zip([p.name for p in (*deps, *more)], values, strict=True))
        return fn(getattr(state, output)(), *(named.get(e, getattr(state, e)) for e in extra))

    return pn.bind(call, *deps, *more, watch=watch)
