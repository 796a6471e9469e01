"""Precision–recall against the true labels: the full score, the paper's Algorithm-1 scores of the
current rule (``stopped_score="boundary"``) and a budget of the same mean cost, as the evaluator's
measurement gives them (:func:`attentive.app.rules.measure`).

Drawn in place like the other plots (:class:`PlotView`: one figure, its sources re-assigned), when
a measurement arrives, never on the move itself. It was the shared HoloViews element of the
notebooks (:func:`attentive.plots.precision_recall_plot`), redrawn as a new figure on each
measurement; in a notebook, Panel's page sent every change back to the kernel, and a figure that
had been replaced by then came back as new models that Bokeh refused ("failed to validate
Line.line_color … got Value('#8c8c8c')": BokehJS writes a glyph's line colour as a value spec, the
Python ``Line`` takes a plain colour), a traceback in the cell's output."""

from __future__ import annotations

from bokeh.core.properties import value

from attentive.app.plots.base import COLORS, PlotView, col

__all__ = ["PrecisionRecallView"]

# The current rule's scores as the paper's Algorithm 1 gives them (a stopped example scores the
# crossed threshold, c + τ), whatever the rule: not the paper's constant rule itself.
NAMES = {"attentive": "current rule (stops score c + τ)", "budgeted": "budgeted, same cost"}
# The budget rule scores every example c + (n/B)·S_B (attentive.outcome), and is the budgeted
# baseline itself.
BUDGET_NAMES = {"attentive": "current rule (budget B: score c + (n/B)·S_B)"}


class PrecisionRecallView(PlotView):
    """Precision–recall of the full, attentive and budgeted scores against the true labels: step
    curves, the full score's drawn wide underneath so that it stays visible where the others
    coincide with it (as :func:`attentive.plots.precision_recall_plot` draws them)."""

    title = "Precision–recall against the true labels"
    xlabel = "recall"
    ylabel = "precision"
    legend_location = "bottom_left"
    METHODS = ("full", "attentive", "budgeted")
    RANGES = ((0.0, 1.01), (0.0, 1.02))

    def _value(self):
        return self.state.measured

    def _watch(self) -> None:
        # A move clears the measurement (None: nothing is redrawn) and the new one follows it;
        # a new model clears the curves (_refresh).
        self.state.param.watch(lambda event: self._on_change(), ["measured", "walks"])

    def _build(self, fig) -> None:
        items = {}
        for method in self.METHODS:  # full first, underneath
            full = method == "full"
            src = self._source(method, "recall", "precision")
            items[method] = [
                fig.step(
                    "recall",
                    "precision",
                    source=src,
                    mode="after",
                    color=COLORS[method],
                    line_width=4 if full else 1.8,
                    line_alpha=0.55 if full else 1.0,
                )
            ]
        self._legend(fig, items)
        for method, item in self._items.items():  # until the first measurement
            item.label = value(f"{NAMES.get(method, method)}: evaluating…")
        for rng, (lo, hi) in zip((fig.x_range, fig.y_range), self.RANGES, strict=True):
            rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)

    def _data(self, m):
        pr = m.pr
        return {
            method: {"recall": col(rows["recall"]), "precision": col(rows["precision"])}
            for method in self.METHODS
            for rows in [pr[pr["method"] == method]]
        }

    def _labels(self, m):
        names = {**NAMES, **(BUDGET_NAMES if self.state.boundary == "budget" else {})}
        return {k: f"{names.get(k, k)}: AP {m.average_precision[k]:.3f}" for k in self.METHODS}

    def _ranges(self, m):
        return self.RANGES

    def _refresh(self, m) -> None:
        """As drawn until a measurement follows a move (the curves of a nearby rule), except
        after a new model or dataset: its curves are cleared and the legend says they are
        being evaluated (the previous dataset's stayed, AP 1.000 beside cards of another model,
        until the timing that the measurement waits for was done: 4-18 s, a teacher's trial)."""
        if m is not None:
            self._cleared = False
            super()._refresh(m)
            return
        walks = self.state.walks
        drawn = self._drawn_key[0] if isinstance(self._drawn_key, tuple) else None
        if not getattr(self, "_cleared", False) and (walks is None or walks.key == drawn):
            return
        self._cleared = True
        self._drawn_key = object()  # (the next measurement's axes are fitted afresh)
        names = {**NAMES, **(BUDGET_NAMES if self.state.boundary == "budget" else {})}
        for method in self.METHODS:
            self._set_data(self._sources[method], {"recall": col([]), "precision": col([])})
            label = value(f"{names.get(method, method)}: evaluating…")
            if self._items[method].label != label:
                self._items[method].label = label
