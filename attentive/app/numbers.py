"""The numbers: headline cards (term-count and wall-clock speed-up side by side), the table of
operating points (sortable, exportable) and the Python snippet that reproduces the current point.

δ is the error a rule is asked for, so the card of the error δ bounds says whether the test set
met it (:func:`delta_check`): for the calibrated rule the disagreement (δ is the disagreement it
guarantees), for a family the paper's stop-error (δ is the stop-error its boundary is built for,
z = Φ⁻¹(1 − δ)); the budgeted rule has no δ.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import panel as pn
import param

from attentive.app import exports, rules
from attentive.app.state import DashboardState
from attentive.app.widgets import FileDownload

__all__ = ["DeltaCheck", "HeadlineNumbers", "OperatingPointTable", "SnippetView", "delta_check"]

NUMBERS = (
    # key, label, explanation, format
    (
        "accuracy",
        "Accuracy: full → attentive",
        "Fraction of test labels predicted right by the full evaluation and by attentive prediction.",
    ),
    (
        "stop_error",
        "Stop-error",
        "Of the examples the full evaluation calls positive (lower side), the fraction stopped and called negative.",
    ),
    (
        "disagreement",
        "Disagreement",
        "Fraction of test examples whose early decision differs from the full evaluation's.",
    ),
    (
        "evaluated",
        "Mean terms evaluated",
        "Average number of terms (support vectors or features) computed per example before stopping.",
    ),
    (
        "speedup",
        "Speed-up: terms | wall clock",
        "Left: n / mean terms evaluated (how many times fewer kernel or feature evaluations). Right: measured time of the full evaluation over the attentive evaluator's time on the test set (the evaluator the exported classifier uses).",
    ),
    (
        "stopped",
        "Examples stopped",
        "Test examples whose walk crossed the boundary before the last term.",
    ),
)


@dataclass(frozen=True)
class DeltaCheck:
    """The measured error that δ bounds for the current rule, against δ."""

    key: str  # the headline number compared: "disagreement" or "stop_error"
    measured: float
    delta: float
    calibrated: bool

    @property
    def exceeded(self) -> bool:
        """True when the test set's error is above δ."""
        return self.measured > self.delta

    def words(self) -> str:
        d = _short_pct(self.delta)
        return f"⚠ above δ = {d}" if self.exceeded else f"✓ within δ = {d}"

    def explanation(self) -> str:
        what = (
            "the disagreement with the full evaluation that the calibrated rule guarantees "
            "(with probability ≥ 1 − α over the calibration draw)"
            if self.calibrated
            else "the stop-error this rule's boundary is built for (z = Φ⁻¹(1 − δ))"
        )
        relation = "is above" if self.exceeded else "is within"
        name = "Disagreement" if self.key == "disagreement" else "Stop-error"
        return f"{name} on the test set, {_pct(self.measured)}, {relation} δ = {_short_pct(self.delta)}: {what}."


def delta_check(figures) -> DeltaCheck | None:
    """The error δ bounds for the rule of ``figures``, measured on the test set, against δ.

    Calibrated: δ bounds the disagreement with the full evaluation. A family (constant, curved,
    …) at a nominal δ: δ is the paper's stop-error requirement. Budget: None (δ plays no part),
    as when the error is undefined (NaN).
    """
    if figures is None:
        return None
    rule = figures.rule
    if rule.kind == "calibrated":
        key = "disagreement"
    elif rule.kind in rules.family_names():
        key = "stop_error"
    else:
        return None
    measured = figures.metrics.get(key)
    if measured is None or not math.isfinite(measured):
        return None
    return DeltaCheck(key, float(measured), float(rule.delta), rule.kind == "calibrated")


class HeadlineNumbers(pn.viewable.Viewer):
    """The headline numbers as cards, each explaining itself on hover.

    The card of the error δ bounds carries a second line (``.att-check``), apart from the number
    itself: "✓ within δ = …" or, in the warning colour, "⚠ above δ = …" (:func:`delta_check`).
    """

    state = param.ClassSelector(class_=DashboardState)

    def _values(self, f) -> dict[str, str]:
        m = f.metrics
        return {
            "accuracy": f"{m['accuracy_full']:.1%} → {m['accuracy_attentive']:.1%}",
            "stop_error": _pct(m["stop_error"]),
            "disagreement": _pct(m["disagreement"]),
            "evaluated": f"{m['mean_evaluated']:,.1f} of {m['n_terms']:,} "
            f"({m['mean_evaluated_fraction']:.0%})",
            "speedup": f"{m['speedup_terms']:.2f}× | {self._clock()}",
            "stopped": f"{m['n_stopped']:,} of {m['n_test']:,} ({m['fraction_stopped']:.0%})",
        }

    def _clock(self) -> str:
        m = self.state.measured
        if m is None:
            return "timing…"
        return f"{m.time_ratio:.2f}×" + ("" if m.agrees else " (⚠ decisions differ)")

    def _html(self, figures, measured=None, busy=False) -> str:
        if figures is None:
            return "<div class='att-numbers'>No model yet.</div>"
        stale = " att-stale" if busy else ""
        values = self._values(figures)
        check = delta_check(figures)
        cards = "".join(
            self._card(key, label, doc, values[key], check) for key, label, doc in NUMBERS
        )
        note = (
            "<div class='att-note'>Training a new model: these numbers are the previous model's.</div>"
            if busy
            else ""
        )
        return f"{note}<div class='att-numbers{stale}'>{cards}</div>"

    @staticmethod
    def _card(key: str, label: str, doc: str, value: str, check: DeltaCheck | None) -> str:
        flag, miss = "", ""
        if check is not None and check.key == key:
            state = "miss" if check.exceeded else "met"
            miss = " att-card-miss" if check.exceeded else ""
            flag = (
                f"<div class='att-check att-{state}' data-key='{key}-check' "
                f"title='{html.escape(check.explanation(), quote=True)}'>{check.words()}</div>"
            )
        return (
            f"<div class='att-card{miss}' title='{html.escape(doc, quote=True)}'>"
            f"<div class='att-label'>{label}<span class='att-help'>?</span></div>"
            f"<div class='att-value' data-key='{key}'>{value}</div>{flag}</div>"
        )

    def __panel__(self):
        return pn.pane.HTML(
            pn.bind(
                self._html,
                self.state.param.figures,
                self.state.param.measured,
                self.state.param.busy,
            ),
            sizing_mode="stretch_width",
            stylesheets=[NUMBER_CSS],
        )


def _pct(v: float) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.2%}"


def _short_pct(v: float) -> str:
    """δ as a percentage with its three significant digits: 5.01%, 1%, 0.01%."""
    return f"{v * 100:.3g}%"


NUMBER_CSS = """
.att-numbers { display: grid; grid-template-columns: repeat(auto-fit, minmax(135px, 1fr));
                gap: 8px; }
.att-help { display: inline-block; width: 13px; height: 13px; line-height: 13px; margin-left: 4px;
            border-radius: 50%; border: 1px solid currentColor; font-size: 9px; text-align: center;
            vertical-align: 1px; }
.att-card { border: 1px solid var(--panel-border-color, #8884); border-radius: 6px;
            padding: 6px 10px; cursor: help; }
.att-label { font-size: 12px; opacity: 0.75; }
.att-value { font-size: 15px; font-weight: 600; }
.att-stale { opacity: 0.45; }
.att-note { font-size: 12px; color: #D55E00; margin-bottom: 4px; }
.att-check { font-size: 12px; margin-top: 2px; }
.att-met { opacity: 0.75; }
.att-miss { color: #D55E00; font-weight: 600; }
.att-card-miss { border-color: #D55E00; box-shadow: inset 3px 0 0 #D55E00; }
"""


TABLE_COLUMNS = {
    "family": "family",
    "z": "z",
    "nominal_delta": "δ' = Φ(−z)",
    "mean_evaluated_fraction": "fraction of terms",
    "stop_error": "stop-error",
    "disagreement": "disagreement",
    "accuracy": "accuracy",
    "precision": "precision",
    "recall": "recall",
    "speedup_terms": "speed-up (terms)",
}


class OperatingPointTable(pn.viewable.Viewer):
    """Every family at every scale on the test set: sortable, with a CSV download."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        self.table = pn.widgets.Tabulator(
            None,
            pagination="local",
            page_size=12,
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["att-op-table"],
        )
        self.pending = pn.pane.Markdown(
            "*Computing every rule's operating points…*", visible=False, margin=(0, 10)
        )
        self.state.param.watch(self._update, "figures")
        self._drawn = None
        self._update()

    def _update(self, *events) -> None:
        f = self.state.figures
        if f is None or f.tradeoff is self._drawn:
            return
        self._drawn = f.tradeoff
        if f.tradeoff is None:  # computed after the numbers; it follows
            self.pending.visible = True
            return
        self.pending.visible = False
        t = f.tradeoff.table
        frame = t[[c for c in TABLE_COLUMNS if c in t]].rename(columns=TABLE_COLUMNS)
        # Scales in steps of 0.25: a readable table (the CSV holds every scale).
        frame = frame[(frame["z"] * 4).round(6) % 1 == 0]
        self.table.value = frame.round(4).reset_index(drop=True)

    def __panel__(self):
        download = FileDownload(
            callback=lambda: exports.operating_points_csv(self.state),
            filename="operating_points.csv",
            label="Download every operating point (CSV)",
            color="primary",
            sizing_mode="stretch_width",
        )
        target = pn.widgets.FloatInput.from_param(
            self.state.param.target, step=0.001, css_classes=["att-target"], width=180
        )
        return pn.Column(
            pn.pane.Markdown(
                "**Cheapest rule for a target disagreement** (every family and scale on the "
                "test set — a choice, not a guarantee; the calibrated rule gives one):",
                margin=(0, 10),
            ),
            target,
            self.pending,
            self.table,
            download,
            sizing_mode="stretch_width",
        )


class SnippetView(pn.viewable.Viewer):
    """Python that rebuilds the current rule from scratch and prints the numbers shown."""

    state = param.ClassSelector(class_=DashboardState)

    def _code(self, figures) -> str:
        if figures is None:
            return ""
        return exports.snippet(self.state)

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown(
                "**Reproduce this point in Python** (prints the fraction of terms, the "
                "disagreement and the accuracy shown above):",
                margin=(0, 10),
            ),
            pn.widgets.CodeEditor(
                value=pn.bind(self._code, self.state.param.figures),
                language="python",
                readonly=True,
                sizing_mode="stretch_width",
                height=420,
                css_classes=["att-snippet"],
            ),
            sizing_mode="stretch_width",
        )
