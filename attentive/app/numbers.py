"""The numbers: headline cards (term-count speed-up and the measured wall clock), the table of
operating points with the two ways to pick one, and the Python snippet that reproduces the
current point.

δ is the error a rule is asked for, so the card of the error δ bounds says whether the test set
met it (:func:`delta_check`): for the calibrated rule the disagreement (δ is the disagreement it
guarantees), for a family the paper's stop-error (δ is the stop-error its boundary is built for,
z = Φ⁻¹(1 − δ)); the budgeted rule has no δ.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import pandas as pd
import panel as pn
import param
from bokeh.models import HTMLTemplateFormatter

from attentive.app import controls, exports, rules
from attentive.app.models import from_upload
from attentive.app.reactive import bind
from attentive.app.state import DashboardState
from attentive.app.widgets import FileDownload, checked_input

__all__ = [
    "SLOWER_WARNING",
    "UNSTEADY",
    "DeltaCheck",
    "HeadlineNumbers",
    "OperatingPointTable",
    "ReadOnlyTable",
    "SnippetView",
    "delta_check",
    "share",
]

# The wall-clock card's second line where the rule takes longer than full evaluation (the guided
# tour's sketched step explains it in these words).
SLOWER_WARNING = "walking costs more than full evaluation here"
# Its second line where the rule a time budget picked times over that budget on the card.
OVER_BUDGET = "over the {budget} µs budget"
OVER_BUDGET_TITLE = (
    "A time budget's pick times its rules before the page redraws (the median of a few runs; "
    "the table shows their fastest); the card times the rule as the median of its rounds, "
    "each beside a full evaluation. Type a lower budget to stay within it here."
)
# Its second line where no example stops (the rule is full evaluation; the ratio is noise).
EVERY_TERM = "no example stops: this is full evaluation"
# Its second line where full evaluation ran far slower than when the table timed it (the machine
# busy through every round): no verdict, and the longer explanation on hover.
BUSY = "machine busy, full evaluation {ratio} its usual time: timed again next visit"
BUSY_TITLE = (
    "Full evaluation took over {limit:g}× its time in the operating points' table in every "
    "round: something else was running the whole time. The rounds' ratio can still be right, "
    "but the µs per example say little about this rule, so the timing gets no verdict and is "
    "not kept: the next visit of this rule times it again."
)
# Its second line where the timing's rounds stayed far apart (the machine was busy): no verdict,
# and the longer explanation on hover.
UNSTEADY = "machine busy, rounds {spread} apart: timed again next visit"
UNSTEADY_TITLE = (
    "Every attempt's rounds of the timing spread more than {limit:g}× (largest over smallest "
    "ratio): something else was running. The median says little about this rule's speed, so it "
    "gets no verdict and is not kept: the next visit of this rule times it again."
)


def stale_note(state) -> str:
    """Whose numbers are shown while a model trains: named by dataset where the model asked for
    is another dataset's (a shared address's page showed the default's numbers as "the previous
    model's", on a page that had shown no model before)."""
    shown, asked = (_dataset_words(d) for d in (state.walks_dataset, state.dataset))
    if shown != asked:
        return f"the {shown} model's numbers, while the model for {asked} trains"
    return "the previous model's numbers, while the new model trains"


def _dataset_words(name: str) -> str:
    """A dataset as a sentence names it: an uploaded file by its name."""
    file = name.removeprefix(controls.UPLOAD_PREFIX)
    return f"uploaded {file}" if file != name else name


NUMBERS = (
    # key, label, explanation, format
    (
        "accuracy",
        "Accuracy",
        "Fraction of test labels predicted right: by the full evaluation → by attentive prediction.",
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
        "Terms per example",
        "Average number of terms (support vectors or features) computed per example before stopping.",
    ),
    (
        "speedup",
        "Speed-up in terms",
        "n / mean terms evaluated: how many times fewer kernel or feature evaluations.",
    ),
    (
        "clock",
        "Wall-clock speed-up",
        "Measured time of the full evaluation over the attentive evaluator's on the test set (the evaluator the exported classifier uses): the median of 7 rounds that each run both back to back, with the lowest and highest round in brackets, and the attentive time per test example (a median: the table of every rule, under Pick a threshold, gives the fastest of 3 runs, so it reads lower).",
    ),
    (
        "stopped",
        "Examples stopped",
        "Test examples whose walk crossed the boundary before the last term.",
    ),
)


# The stop-error card's explanation, by the rule's side (SPEC §4; metrics.stop_error): the
# lower side's alone read as what every side measures, beside a different number (a user's
# trial: 0.55 % on the upper side, with a disagreement of 0.30 %).
STOP_ERROR_DOCS = {
    "lower": NUMBERS[1][2],
    "upper": "Of the examples the full evaluation calls negative (upper side), the fraction stopped and called positive.",
    "both": "With both sides: the fraction of all test examples whose early decision differs from the full evaluation's (the disagreement).",
}


@dataclass(frozen=True)
class DeltaCheck:
    """The measured error that δ bounds for the current rule, against δ."""

    key: str  # the headline number compared: "disagreement" or "stop_error"
    measured: float
    delta: float
    calibrated: bool
    # Calibrated: the test set's 95 % Clopper–Pearson interval for the rate, and its size.
    interval: tuple[float, float] | None = None
    n_test: int | None = None
    # False for a calibrated scale of an uploaded model: fitted elsewhere, perhaps on the very
    # examples held out to calibrate, it has no guarantee (calibration_view.NO_GUARANTEE).
    guaranteed: bool = True

    @property
    def exceeded(self) -> bool:
        """True when the test set's error is above δ."""
        return self.measured > self.delta

    def words(self) -> str:
        d = _short_pct(self.delta)
        if self.exceeded and self.calibrated:
            return f"⚠ above δ = {d} on this test set"
        return f"⚠ above δ = {d}" if self.exceeded else f"✓ within δ = {d}"

    def explanation(self) -> str:
        if not self.calibrated:
            what = "the stop-error this rule's boundary is built for (z = Φ⁻¹(1 − δ))"
        elif self.guaranteed:
            what = (
                "the disagreement with the full evaluation that the calibrated rule guarantees "
                "(with probability ≥ 1 − α over the calibration draw)"
            )
        else:
            what = (
                "the disagreement with the full evaluation the scale was calibrated for. An "
                "uploaded model has no guarantee: it was fitted elsewhere, perhaps on the very "
                "examples held out here to calibrate"
            )
        relation = "is above" if self.exceeded else "is within"
        name = "Disagreement" if self.key == "disagreement" else "Stop-error"
        text = f"{name} on the test set, {_pct(self.measured)}, {relation} δ = {_short_pct(self.delta)}: {what}."
        if self.calibrated and self.interval is not None:
            lo, hi = self.interval
            text += (
                f" The test set's {self.n_test:,} examples put the rate between {_pct(lo)} and "
                f"{_pct(hi)} (95 % Clopper–Pearson)."
            )
            if not self.guaranteed:
                return text
            text = text[:-1] + (
                ". The guarantee is about the rate on future examples and fails for at most a "
                "share α of calibration draws"
            )
            text += (
                ": the whole interval lies above δ, so this draw is likely one of them (more "
                "calibration examples, or another split, make it rarer)."
                if lo > self.delta
                else "."
            )
        return text

    def guarantee_caveat(self) -> str:
        """Beside a calibrated rule's guarantee, when the test set's disagreement is above δ:
        the two numbers reconciled in words (the card's warning alone reads as a broken
        guarantee). Empty otherwise."""
        if not (self.calibrated and self.exceeded and self.guaranteed):
            return ""
        text = (
            f"On this test set the disagreement is {_pct(self.measured)}, above δ = "
            f"{_short_pct(self.delta)}"
        )
        if self.interval is None:
            return text + (
                ". The guarantee is about the rate on future examples, and fails for at most a "
                "share α of calibration draws."
            )
        lo, hi = self.interval
        text += (
            f" (its {self.n_test:,} examples put the rate between {_pct(lo)} and {_pct(hi)}, "
            "95 % Clopper–Pearson). The guarantee is about the rate on future examples, and "
            "fails for at most a share α of calibration draws: "
        )
        return text + (
            "this interval lies wholly above δ, so this draw is likely one of them (more "
            "calibration examples, or another split, make that rarer)."
            if lo > self.delta
            else "this interval reaches below δ, so the test set's own chance can explain it."
        )


def delta_check(
    rule: rules.Rule, metrics: dict | None, uploaded: bool = False
) -> DeltaCheck | None:
    """The error δ bounds for ``rule``, measured on the test set (``metrics``), against δ.

    Calibrated: δ bounds the disagreement with the full evaluation. A family (constant, curved,
    …): δ = Φ(−z) is the paper's stop-error requirement. Budget: None (δ plays no part), as when
    the error is undefined (NaN). ``uploaded``: the model was fitted elsewhere, so a calibrated
    scale carries no guarantee (the check still compares with δ; its explanation says so).
    """
    if metrics is None:
        return None
    if rule.kind == "calibrated":
        key, delta = "disagreement", rule.delta
    elif rule.kind in rules.scaled_kinds():
        key, delta = "stop_error", rules.nominal_delta(rule.scale)
    else:
        return None
    measured = metrics.get(key)
    if measured is None or not math.isfinite(measured):
        return None
    if rule.kind != "calibrated":
        return DeltaCheck(key, float(measured), float(delta), False)
    interval = metrics.get("disagreement_interval")
    return DeltaCheck(
        key, float(measured), float(delta), True, interval, metrics.get("n_test"), not uploaded
    )


def share(k: int, n: int) -> str:
    """``k`` of ``n`` as a percentage that never rounds up to 100 % (or down to 0 %) unless it
    is exactly that: 672 of 673 is 99.9 %."""
    if n <= 0:
        return "—"
    frac = k / n
    text = f"{frac:.0%}"
    if text == "100%" and k < n:  # one decimal, rounded down: never 100 %
        text = f"{math.floor(frac * 1000) / 10:.1f}%"
    elif text == "0%" and k > 0:  # one decimal, rounded as the table rounds: 0.38 % is 0.4 %
        text = f"{frac:.1%}"
        if text == "0.0%":
            text = "<0.1%"
    return text


class HeadlineNumbers(pn.viewable.Viewer):
    """The headline numbers as cards, each explaining itself on hover.

    The card of the error δ bounds carries a second line (``.att-check``), apart from the number
    itself: "✓ within δ = …" or, in the warning colour, "⚠ above δ = …" (:func:`delta_check`).
    The wall-clock card says so when walking costs more than full evaluation.
    """

    state = param.ClassSelector(class_=DashboardState)

    @staticmethod
    def values(m: dict, measured=None) -> dict[str, str]:
        """The cards' texts for metrics ``m`` and the evaluator's ``measured`` timing."""
        return {
            "accuracy": f"{m['accuracy_full']:.1%} → {m['accuracy_attentive']:.1%}",
            "stop_error": _pct(m["stop_error"]),
            "disagreement": _pct(m["disagreement"]),
            "evaluated": f"{m['mean_evaluated']:,.1f} of {m['n_terms']:,} "
            f"({share(round(m['mean_evaluated'] * 10), m['n_terms'] * 10)})",
            "speedup": f"{m['speedup_terms']:.2f}×",
            "clock": _clock(measured),
            "stopped": f"{m['n_stopped']:,} of {m['n_test']:,} ({share(m['n_stopped'], m['n_test'])})",
        }

    @staticmethod
    def sketch_lines(m: dict) -> dict[str, str]:
        """A sketched rule's second lines: its work with the sketch, beside the terms."""
        if not m.get("sketch_cost"):
            return {}
        return {
            "evaluated": f"+ the sketch: work {m['work_fraction']:.3f} of a full evaluation",
            "speedup": f"{m['speedup_work']:.2f}× in work, with the sketch",
        }

    def _html(self, metrics, measured=None, busy=False, _time_budget=None) -> str:
        if metrics is None:
            return "<div class='att-numbers'>No model yet.</div>"
        stale = " att-stale" if busy else ""
        values = self.values(metrics, measured)
        check = delta_check(self.state.rule, metrics, from_upload(self.state.walks))
        lines = self.sketch_lines(metrics)
        # Nothing stops: the rule is full evaluation, and a ratio below 1 is the timing's noise.
        every_term = metrics["n_stopped"] == 0 and not metrics.get("sketch_cost")
        docs = {"stop_error": STOP_ERROR_DOCS[self.state.side]}
        over = over_budget(self.state, measured)
        cards = "".join(
            self._card(
                key,
                label,
                docs.get(key, doc),
                values[key],
                check,
                measured,
                lines.get(key),
                every_term,
                over,
            )
            for key, label, doc in NUMBERS
        )
        note = stale_note(self.state)
        note = f"<div class='att-note'>{note[0].upper()}{note[1:]}.</div>" if busy else ""
        return f"{note}<div class='att-numbers{stale}'>{cards}</div>"

    @staticmethod
    def _card(
        key,
        label,
        doc,
        value,
        check: DeltaCheck | None,
        measured,
        line=None,
        every_term=False,
        over: float | None = None,
    ) -> str:
        flag, miss = "", ""
        if line:
            flag = (
                f"<div class='att-check att-met' data-key='{key}-sketch'>{html.escape(line)}</div>"
            )
        if check is not None and check.key == key:
            state = "miss" if check.exceeded else "met"
            miss = " att-card-miss" if check.exceeded else ""
            flag = (
                f"<div class='att-check att-{state}' data-key='{key}-check' "
                f"title='{html.escape(check.explanation(), quote=True)}'>{check.words()}</div>"
            )
        if key == "clock" and measured is not None:
            # As the card shows it (two decimals): "1.00×" never comes with the warning.
            slower = round(measured.time_ratio, 2) < 1 and not every_term
            title = ""
            if not measured.steady and measured.busy is not None:
                line = "⚠ " + BUSY.format(ratio=_times(measured.busy))
                title = BUSY_TITLE.format(limit=rules.BUSY_FULL)
            elif not measured.steady:
                line = "⚠ " + UNSTEADY.format(spread=_times(measured.spread))
                title = UNSTEADY_TITLE.format(limit=rules.STEADY_SPREAD)
            elif over is not None:
                # (Two decimals: 8.04 against a budget of 8 read "8.0 µs … over the 8 µs".)
                line = f"⚠ {measured.us_per_example:,.2f} µs per example: {OVER_BUDGET.format(budget=_plain(over))}"
                title = OVER_BUDGET_TITLE
            elif slower:
                line = f"⚠ {SLOWER_WARNING}"
            else:
                line = f"{measured.us_per_example:,.1f} µs per example" + (
                    f"; {EVERY_TERM}" if every_term else ""
                )
            state = "met" if measured.steady and not slower and over is None else "miss"
            flag = (
                f"<div class='att-check att-{state}' data-key='clock-check'"
                + (f" title='{html.escape(title, quote=True)}'" if title else "")
                + f">{html.escape(line)}</div>"
            )
        return (
            f"<div class='att-card{miss}' title='{html.escape(doc, quote=True)}'>"
            f"<div class='att-label'>{label}<span class='att-help'>?</span></div>"
            f"<div class='att-value' data-key='{key}'>{value}</div>{flag}</div>"
        )

    def __panel__(self):
        # (time_budget: the card's over-budget line goes with the budget that picked the rule.)
        return pn.pane.HTML(
            bind(self._html, self.state, "numbers", "measured", "busy", "time_budget"),
            sizing_mode="stretch_width",
            stylesheets=[NUMBER_CSS],
        )


def over_budget(state, measured) -> float | None:
    """The time budget (µs per example) that picked the rule in use, where the card's steady
    timing of that rule is over it; else None. The pick timed the rule within the budget where
    it could (:func:`attentive.app.rules.timed_pick`), but the card times it otherwise (beside
    full evaluation, while the page redraws): a rule picked within budget could time over it
    on the card, and a notification said so, then went, leaving the field's budget beside a
    card above it."""
    budget = state.time_budget
    if measured is None or budget is None or not measured.steady or not state.still_picked():
        return None
    return float(budget) if measured.us_per_example > budget else None


def _plain(value: float) -> str:
    """A number as typed, without an exponent: 8, 7.5, 1,234,567."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _clock(measured) -> str:
    if measured is None:
        return "timing…"
    lo, hi = measured.ratio_spread
    text = f"{measured.time_ratio:.2f}× ({lo:.2f}–{hi:.2f})"
    return text + ("" if measured.agrees else " (⚠ decisions differ)")


def _times(v: float) -> str:
    """A spread as the busy line gives it: 3.4×, 12×, 150×; ∞ where a round took no time."""
    if not math.isfinite(v):
        return "∞×"
    return f"{v:.1f}×" if v < 10 else f"{v:.0f}×"


def _pct(v: float) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.2%}"


def _short_pct(v: float) -> str:
    """δ as a percentage with three significant digits: 5.01%, 1%, 0.01%."""
    return f"{v * 100:.3g}%"


NUMBER_CSS = """
.att-numbers { display: grid; grid-template-columns: repeat(auto-fit, minmax(128px, 1fr));
                gap: 6px; }
.att-help { display: inline-block; width: 13px; height: 13px; line-height: 13px; margin-left: 4px;
            border-radius: 50%; border: 1px solid currentColor; font-size: 9px; text-align: center;
            vertical-align: 1px; }
.att-card { border: 1px solid var(--panel-border-color, #8884); border-radius: 6px;
            padding: 4px 8px; cursor: help; }
.att-label { font-size: 12px; opacity: 0.75; white-space: nowrap; overflow: hidden;
             text-overflow: ellipsis; }
.att-value { font-size: 15px; font-weight: 600; }
.att-stale { opacity: 0.45; }
.att-note { font-size: 12px; color: #D55E00; margin-bottom: 4px; }
.att-check { font-size: 12px; margin-top: 2px; }
.att-met { opacity: 0.75; }
.att-miss { color: #D55E00; font-weight: 600; }
.att-card-miss { border-color: #D55E00; box-shadow: inset 3px 0 0 #D55E00; }
"""

# The columns that decide, shown at any width; the others on demand. The sketch's cost and the
# work (sketch + terms walked) show only where the table has sketched rules.
MAIN_COLUMNS = {
    "family": "family",
    "z": "z",
    "mean_evaluated_fraction": "terms",
    "sketch_cost": "sketch",
    "work_fraction": "work",
    "disagreement": "disagreement",
    "accuracy": "accuracy",
    "us_per_example": "µs / example",
}
MORE_COLUMNS = {
    "nominal_delta": "δ' = Φ(−z)",
    "stop_error": "stop-error",
    "precision": "precision",
    "recall": "recall",
    "speedup_terms": "speed-up",
    "measured": "timed",
}
# Every column the table has, from its first draw on: a table without its times (they follow the
# operating points) or without sketched rules has the same columns, empty or hidden. In the
# browser a new set of columns rebuilds the table (Panel's Tabulator), and a change of its columns
# or hidden columns that arrives before the rebuilt table exists raises ("Cannot read properties
# of null (reading 'firstChild' / 'offsetWidth')") and drops the rest of that update.
TABLE_COLUMNS = {**MAIN_COLUMNS, **MORE_COLUMNS, "current": "current"}
# What each column's title means, on hover: the times are not the wall-clock card's (the fastest
# of a few runs, most rows interpolated, against the card's median of 7 rounds: 7.9 µs in the
# table beside 9.4 on the card for the default rule), and z is not the δ slider's value.
TABLE_TOOLTIPS = {
    "family": "The boundary's family (sketched: a sketch of the score first, then the walk).",
    "z": "The boundary's scale z. A click on a row picks that family at this z, and the δ slider "
    "moves to its δ' = Φ(−z).",
    "terms": "Mean fraction of the n terms computed per test example before stopping.",
    "sketch": "The sketch's cost per example, in full evaluations (the same on every row).",
    "work": "Sketch plus terms walked per example, in full evaluations.",
    "disagreement": "Fraction of test examples whose decision differs from full evaluation's.",
    "accuracy": "Fraction of test labels predicted right by the rule.",
    "µs / example": (
        f"The evaluator's time per test example: the fastest of {rules.TIMED_RUNS} runs, for "
        f"{rules.TIMED_PER_FAMILY} rules of each family (the 'timed' column) and full "
        "evaluation, and of a rule a time budget picked, which is timed before it is kept; the "
        "rows between them interpolated along the work. The wall-clock card gives the median of "
        f"{rules.TIMING_ROUNDS} rounds, so it reads higher."
    ),
    "δ' = Φ(−z)": "The nominal error of the scale z: the δ slider's value at this row.",
    "stop-error": "The side's stop-error: lower, of the examples full evaluation calls positive "
    "the fraction stopped and called negative; upper, the reverse; both sides, the disagreement.",
    "precision": "Of the test examples the rule calls positive, the fraction that are.",
    "recall": "Of the positive test examples, the fraction the rule calls positive.",
    "speed-up": "The speed-up in terms: n / mean terms computed per example.",
    "timed": "Whether this row's time was run (else interpolated between timed rows).",
}
# Their types where not float: a row is "timed" and "current" or not, before the times too.
TABLE_TYPES = {"family": object, "measured": bool, "current": bool}
# On a phone the table's first columns fill the screen: disagreement, accuracy and µs are off to
# the right, and nothing said so (a user's trial). The hint shows on narrow screens only.
NARROW_HINT = (
    "Swipe the table sideways for its other columns (disagreement, accuracy, µs per example)."
)
NARROW_CSS = (
    ".att-narrow-only { display: none; } "
    "@media (max-width: 700px) { .att-narrow-only { display: inline; font-weight: 600; } }"
)
# (An underscore template, Bokeh's: ``value`` is the cell's; the text takes the table's colour.)
TERMS_BAR = (
    '<span style="display: inline-block; position: relative; width: 36px; height: 0.8em; '
    'margin-right: 6px; vertical-align: -0.05em; background: #8883">'
    '<span style="position: absolute; left: 0; top: 0; bottom: 0; '
    'width: <%= Math.max(0, Math.min(1, value)) * 100 %>%; background: #9B3F7A"></span></span>'
    "<%= value.toFixed(4) %>"
)
FOUR_DECIMALS = ("sketch", "work", "disagreement", "accuracy", "stop-error", "precision", "recall")
FOUR_DECIMALS += ("δ' = Φ(−z)",)
# Tabulator's own formatters (plain dicts, shared by every table); the terms column's Bokeh
# formatter is made per table (table_formats).
TABLE_FORMATS = {
    # Fractions with their four decimals written out: "0.0" beside "0.0015" read as another
    # kind of number (a user's trial).
    **{
        name: {"type": "money", "decimal": ".", "thousand": "", "symbol": "", "precision": 4}
        for name in FOUR_DECIMALS
    },
    # "Show every column": a speed-up with two decimals (3.4049 stood above 3.697), and whether
    # a row was timed as a tick (the words true / false made the table scroll at 1440 px).
    "speed-up": {
        "type": "money",
        "decimal": ".",
        "thousand": "",
        "symbol": "×",
        "symbolAfter": True,
        "precision": 2,
    },
    "timed": {"type": "tickCross", "crossElement": False},
}
# (As numbers stand without a formatter.)
TABLE_ALIGN = {**dict.fromkeys(FOUR_DECIMALS, "right"), "speed-up": "right", "timed": "center"}


def table_formats() -> dict:
    """:data:`TABLE_FORMATS` and the terms column's: a bar of the fraction on a track of 0 to 1,
    then the number, clear of the bar (Tabulator's progress bar centred it over the bar and
    wrote 0.209 beside 0.02: four decimals now, as the other fractions). A Bokeh formatter, new
    for each table: Panel's Tabulator hooks every table onto the formatter it is given, and one
    shared by all sessions kept each session's state alive."""
    return {"terms": HTMLTemplateFormatter(template=TERMS_BAR), **TABLE_FORMATS}


# Column widths are fitted to the data again whenever it changes: fitted to the first rows drawn
# only (Tabulator's default), a table drawn before its sketched rules arrived cut
# "sketched-heteroscedastic" to "sketched-cu" and a z of 2.3263 to "2.326".
TABLE_CONFIGURATION = {"layoutColumnsOnNewData": True}
# With sketched rules, fixed widths for the names and scales (the rows of a page fit the columns:
# "sketched-curved" then left "sketched-heteroscedastic", or a highlighted row's bold, cut).
SKETCHED_WIDTHS = {"family": 180, "z": 64}
# The highlighted row (not bold: the columns are fitted to the plain text, and a bold
# "finite-population" was cut); a narrower gutter for the sort arrow than Tabulator's 25 px (the deciding
# columns fit 1024 px with a sketch's work column too).
TABLE_CSS = """
.tabulator-row.tabulator-selected { background-color: #ffd70080 !important; }
.tabulator .tabulator-header .tabulator-col.tabulator-sortable .tabulator-col-title { padding-right: 16px !important; }
"""


def table_rows(table, point: tuple[str, float] | None):
    """The rows the table shows: each family at the scales z in steps of 0.25 that the δ slider
    can set (:func:`rules.on_slider`: a click on a row moves the slider to it), and the current
    rule's own row ``point`` = (family, exact z); ``current`` marks it. The CSV has every scale."""
    on_quarter = (table["z"] * 4).round(6) % 1 == 0
    on_quarter &= table.index.isin(rules.on_slider(table).index)
    family, z = point if point is not None else (None, None)
    current = (table["family"] == family) & (table["z"] == z)
    rows = table[on_quarter | current].copy()
    rows["current"] = current[on_quarter | current].to_numpy()
    return rows.reset_index(drop=True)


def table_frame(rows: pd.DataFrame | None) -> pd.DataFrame:
    """``rows`` (:func:`table_rows`; None: no rows yet) as the table shows them: every column of
    :data:`TABLE_COLUMNS` under its title, in that order, with the same types whatever is known
    (a time not measured yet is empty and its row not timed), rounded for the screen."""
    frame = pd.DataFrame(columns=list(TABLE_COLUMNS)) if rows is None else rows
    frame = frame.reindex(columns=list(TABLE_COLUMNS))
    for flag in ("measured", "current"):
        frame[flag] = frame[flag].eq(True)  # missing (not timed yet): False
    frame = frame.astype({c: TABLE_TYPES.get(c, float) for c in TABLE_COLUMNS})
    return frame.rename(columns=TABLE_COLUMNS).round(4).round({"µs / example": 1})


class ReadOnlyTable(pn.widgets.Tabulator):
    """A Tabulator whose cells the page cannot edit (``disabled``) and whose data it never
    changes: the data the page sends is ignored. In JupyterLab, Panel's page sent every change
    made in the kernel back to it (now kept in the page, ``attentive.app.comm``); when the
    operating-point table's new value had fewer rows than the old, the old data came back
    afterwards and Tabulator raised "Must have equal len keys and value" into the cell's output
    (docs/app.md). A disabled table has nothing of the user's to take."""

    def _process_data(self, data) -> None:
        if self.disabled:
            return
        super()._process_data(data)


class OperatingPointTable(pn.viewable.Viewer):
    """Every family at every scale on the test set with its time per example, the current rule
    highlighted; two ways to pick a rule (a target disagreement, a time budget); a click on a row
    picks it; a CSV download."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        self.table = ReadOnlyTable(
            table_frame(None),
            pagination="local",
            page_size=10,
            disabled=True,
            selectable=1,
            show_index=False,
            layout="fit_data_table",
            sizing_mode="stretch_width",
            hidden_columns=self._hidden_columns(False, False),
            formatters=table_formats(),
            text_align=TABLE_ALIGN,
            header_tooltips=TABLE_TOOLTIPS,
            configuration=TABLE_CONFIGURATION,
            stylesheets=[TABLE_CSS],
            css_classes=["att-op-table"],
        )
        self.more = pn.widgets.Checkbox(label="Show every column", css_classes=["att-more"])
        self.more.param.watch(self._show_more, "value")
        self.pending = pn.pane.Markdown(
            "*Computing every rule's operating points and timing them…*",
            visible=False,
            margin=(0, 10),
        )
        self.table.on_click(self._row_clicked)  # a user's click (the selection is the highlight)
        bind(self._update, self.state, "table", "rule", watch=True)
        self._update(self.state.table())

    @staticmethod
    def _hidden_columns(more: bool, sketched: bool) -> list[str]:
        # With a sketch, "work" (the sketch plus the terms walked, what a target minimises) is in
        # view in place of "terms" and "sketch" (the same on every row of a sketch; the note
        # above the table gives it): all three pushed accuracy and µs past 1024 px.
        on_demand = [*MORE_COLUMNS.values(), *(("terms", "sketch") if sketched else ())]
        hidden = [] if more else on_demand
        return [*hidden, *(() if sketched else ("sketch", "work")), "current"]

    def _sketched_rows(self) -> bool:
        value = self.table.value
        return value is not None and bool(value["family"].map(rules.is_sketched).any())

    def _show_more(self, event) -> None:
        self.table.hidden_columns = self._hidden_columns(event.new, self._sketched_rows())

    def _update(self, table, rule=None) -> None:
        self.pending.visible = table is None
        if table is None:
            return
        frame = table_frame(table_rows(table, self._point()))
        self.table.value = frame
        sketched = self._sketched_rows()
        hidden = self._hidden_columns(self.more.value, sketched)
        if self.table.hidden_columns != hidden:
            self.table.hidden_columns = hidden
        widths = SKETCHED_WIDTHS if sketched else {}
        if self.table.widths != widths:
            self.table.widths = widths
        here = [int(i) for i in frame.index[frame["current"]]]
        self.table.selection = here
        if here:
            self.table.page = here[0] // self.table.page_size + 1

    def _point(self) -> tuple[str, float] | None:
        """The current rule's row: its family and z, or the family and scale the calibrated
        rule chose."""
        s = self.state
        if s.rule.kind in rules.scaled_kinds():
            return s.rule.kind, s.z
        report = s.calibration()
        if report is not None and not report.fallback:
            return report.family, float(report.chosen_scale)
        return None

    def _row_clicked(self, event) -> None:
        if event.row is None or self.table.value is None:
            return
        row = self.table.value.iloc[event.row]
        if (row["family"], float(row["z"])) != (self.state.boundary, self.state.z):
            self.state.select_rule(str(row["family"]), float(row["z"]))

    def __panel__(self):
        download = FileDownload(
            callback=lambda: exports.operating_points_csv(self.state),
            filename="operating_points.csv",
            label="Download every operating point (CSV)",
            color="primary",
            sizing_mode="stretch_width",
        )
        flex = {"flex": "1 1 220px"}
        pickers = pn.FlexBox(
            *(
                checked_input(
                    self.state,
                    name,
                    on_enter=lambda name=name: self.state.pick(name),
                    placeholder=hint,
                    css_classes=[css],
                    styles=flex,
                )
                for name, hint, css in (
                    ("target", "e.g. 0.01 (1 %)", "att-target"),
                    ("time_budget", "e.g. 20", "att-time-budget"),
                )
            ),
            sizing_mode="stretch_width",
        )
        return pn.Column(
            pn.pane.Markdown(
                "**Pick a rule** (every family and scale on the test set — a choice, not a "
                "guarantee; the calibrated rule gives one). Type a value and press Enter; a click "
                "on a row picks it too. The highlighted row is the current rule."
                f"<span class='att-narrow-only'> {NARROW_HINT}</span>",
                margin=(0, 10),
                stylesheets=[NARROW_CSS],
            ),
            pickers,
            self.pending,
            self.table,
            self.more,
            download,
            sizing_mode="stretch_width",
        )


class SnippetView(pn.viewable.Viewer):
    """Python that rebuilds the current rule from scratch and prints the numbers shown."""

    state = param.ClassSelector(class_=DashboardState)

    def _code(self, metrics) -> str:
        return "" if metrics is None else exports.snippet(self.state)

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown(
                "**Reproduce this point in Python** (prints the fraction of terms, the "
                "disagreement and the accuracy shown above):",
                margin=(0, 10),
            ),
            pn.widgets.CodeEditor(
                value=bind(self._code, self.state, "numbers"),
                language="python",
                readonly=True,
                sizing_mode="stretch_width",
                height=440,
                css_classes=["att-snippet"],
            ),
            sizing_mode="stretch_width",
        )
