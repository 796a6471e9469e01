"""The calibrated boundary's views: its α control, its guarantee in words and its calibration table.

Nothing here computes: the report is ``calibration_`` of the calibrated classifier
(:meth:`DashboardState.calibration`); this module only selects its rows and words. The α control
hides itself unless the calibrated boundary is selected; the guarantee box keeps its place for
every other rule, saying that it has none (a click on the tradeoff plot, which picks a family,
moved the plots 90 px up under the cursor when the box went). Widgets are created per view
instance.

A model uploaded by the user was fitted elsewhere, maybe on the very examples held out here: the
scan is shown, but the box says plainly that there is no guarantee.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param

from attentive.app.models import from_upload
from attentive.app.numbers import delta_check, stale_note
from attentive.app.reactive import bind
from attentive.app.rules import is_sketched, nominal_delta, scaled_kinds
from attentive.app.state import DashboardState
from attentive.app.widgets import CalibrationControls

__all__ = ["CalibrationControls", "CalibrationView"]

CHOSEN_STYLE = "background-color: #CC79A733; font-weight: 600"
FAILED_STYLE = "color: #D55E00; font-weight: 600"
FORMATS = {
    "z": "{:.2f}",
    "k / m": "{:.1%}",
    "U (bound)": "{:.2%}",
    "evaluated": "{:.1%}",
    "chosen": lambda v: "✓" if v else "",
}
TABLE_HELP = (
    "The scan tests scales z from the most conservative (6) downwards. k counts the calibration "
    "examples whose early decision differs from the full evaluation's; U is the Clopper–Pearson "
    "upper bound on the disagreement rate at confidence 1 − α. The scan stops at the first "
    "U > δ and keeps the last scale that passed."
)
TABLE_CSS = """
table { font-size: 12px; border-collapse: collapse; width: 100%; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #8883; }
"""
# While a new model trains the box shows the previous model's guarantee, faded. A class, never an
# inline style: clearing ``styles`` does not remove an opacity already sent to the browser.
STALE_CSS = ":host(.att-stale) { opacity: 0.45; }"
NO_GUARANTEE = (
    "**No guarantee for an uploaded model.** It was fitted elsewhere, perhaps on the very "
    "examples held out here to calibrate, and a guarantee needs examples the model never saw. "
    "The scale below is what the scan chose on them: its disagreement is a measurement, not a "
    "bound."
)
# Where no scale passed the scan on them (too few held-out examples): nothing was chosen.
NO_GUARANTEE_NO_SCALE = (
    "**No guarantee for an uploaded model.** It was fitted elsewhere, perhaps on the very "
    "examples held out here to calibrate, and a guarantee needs examples the model never saw. "
    "No scale passed the scan below on them either: the rule is full evaluation."
)

SIDES = {"both": "two-sided", "lower": "lower-side", "upper": "upper-side"}
CALIBRATION_COLUMNS = {
    "z": "z",
    "k": "k (disagree)",
    "disagreement": "k / m",
    "upper_bound": "U (bound)",
    "evaluated_fraction": "evaluated",
    "status": "status",
    "chosen": "chosen",
}


def calibration_table(report):
    """The report's scan for display: one row per scale in scan order (``step`` 1..K)."""
    frame = report.to_frame()[list(CALIBRATION_COLUMNS)].rename(columns=CALIBRATION_COLUMNS)
    frame.insert(0, "step", np.arange(1, len(frame) + 1))
    return frame


def calibration_window(report, before: int = 5, after: int = 2) -> slice:
    """The rows around where the scan ended (every earlier row passed)."""
    end = max(report.n_tested - 1, 0)
    return slice(max(0, end - before), min(report.grid.size, end + after + 1))


def guarantee_headline(report) -> str:
    """The guarantee in one line (the report's full sentence is in the details)."""
    return (
        f"disagreement with the full model ≤ {report.delta:.3g} with probability "
        f"≥ {1 - report.alpha:.3g}: the {SIDES.get(report.side, report.side)} "
        f"{report.family} boundary at "
        f"z = {report.chosen_scale:.3g}, chosen on {report.m:,} held-out examples."
    )


def no_guarantee_words(rule, uploaded: bool = False) -> str:
    """In the guarantee box's place for a rule other than the calibrated one: what its δ is,
    and where a guarantee is to be had (not for an uploaded model: :data:`NO_GUARANTEE`)."""
    calibrated = (
        "The *calibrated* rule (Rule) has none either for an uploaded model: it was fitted "
        "elsewhere, perhaps on the examples held out here."
        if uploaded
        else "The *calibrated* rule (Rule) guarantees its disagreement with the full model "
        "≤ δ with probability ≥ 1 − α."
    )
    if rule.kind in scaled_kinds():
        family = rule.kind.removeprefix("sketched-")
        what = f"the sketched {family}" if is_sketched(rule.kind) else f"the {family}"
        return (
            f"**No guarantee for this rule.** {what[0].upper()}{what[1:]} boundary at "
            f"z = {rule.scale:.3g} is built for a stop-error of δ = {nominal_delta(rule.scale):.3g} "
            f"(the paper's requirement; the test set above measures it). {calibrated}"
        )
    return (
        "**No guarantee for this rule.** The budgeted rule evaluates the same number of terms "
        f"of every example, whatever they show. {calibrated}"
    )


def calibration_note(report, n_fit: int, uploaded: bool = False) -> str:
    """Where the calibration examples came from, in one sentence."""
    model = "" if uploaded else "the model, "
    return (
        f"Calibration set: m = {report.m:,} of the {n_fit + report.m:,} training examples, held "
        f"out (stratified, as AttentiveClassifier(boundary='calibrated') holds out) before "
        f"anything was fitted here; {model}μ and the reference statistics come from the other "
        f"{n_fit:,}. Any scale needs m ≥ {report.minimum_size:,} at δ = {report.delta:.3g}, "
        f"α = {report.alpha:.3g}. Family: {report.family}; {report.n_tested} of "
        f"{report.grid.size} scales tested."
    )


class CalibrationView(pn.viewable.Viewer):
    """The guarantee (or why there is none) next to the numbers, and the calibration table."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        self.alert = pn.pane.Alert(
            "", alert_type="success", sizing_mode="stretch_width", css_classes=["att-guarantee"]
        )
        self.note = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.caption = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.table = pn.pane.DataFrame(
            None, sizing_mode="stretch_width", stylesheets=[TABLE_CSS], css_classes=["att-table"]
        )
        # The guarantee in words stays in view; where it comes from (the calibration set and the
        # scan that chose the scale) folds away, so that the plots start near the top of the
        # page. Side by side on a wide screen, one under the other on a narrow one.
        self.sentence = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        details = pn.Card(
            self.sentence,
            self.note,
            self.caption,
            self.table,
            pn.pane.Markdown(TABLE_HELP, margin=(0, 10), styles={"opacity": "0.8"}),
            header=(
                header := pn.pane.Markdown(
                    "How the scale was chosen (click to open)",
                    margin=(0, 6),
                    styles={"font-size": "13px", "font-weight": "600"},
                )
            ),
            collapsed=True,
            sizing_mode="stretch_width",
            styles={"flex": "1 1 200px"},
            css_classes=["att-calibration-details"],
        )

        # Open, the details take a row of their own under the guarantee (beside it, their table
        # ran down a third of the page's width and left the rest blank).
        def toggled(event) -> None:
            details.styles = {"flex": "1 1 200px" if event.new else "1 1 100%"}
            header.object = (
                f"How the scale was chosen (click to {'open' if event.new else 'close'})"
            )

        details.param.watch(toggled, "collapsed")
        self.details = details
        # Under the guarantee, when the test set's disagreement is above δ: why the two agree.
        self.caveat = pn.pane.Markdown(
            "",
            sizing_mode="stretch_width",
            margin=(0, 10),
            visible=False,
            css_classes=["att-guarantee-caveat"],
            styles={"font-size": "13px"},
        )
        # Under the guarantee, what the calibration set shows beside it (the report's notes: the
        # rarer decision mostly decided the other way, on imbalanced data).
        self.report_notes = pn.pane.Alert(
            "",
            alert_type="warning",
            sizing_mode="stretch_width",
            visible=False,
            css_classes=["att-calibration-notes"],
            styles={"font-size": "13px"},
        )
        words = pn.Column(
            self.alert,
            self.report_notes,
            self.caveat,
            sizing_mode="stretch_width",
            styles={"flex": "2 1 340px"},
        )
        self._layout = pn.FlexBox(
            words,
            details,
            sizing_mode="stretch_width",
            css_classes=["att-calibration"],
            stylesheets=[STALE_CSS],
        )
        bind(self._draw, self.state, "calibration", "busy", "walks", watch=True)
        self._draw(self.state.calibration(), self.state.busy, self.state.walks)
        bind(self._draw_caveat, self.state, "numbers", "busy", "walks", watch=True)
        self._draw_caveat(self.state.numbers(), self.state.busy, self.state.walks)

    @staticmethod
    def _row_style(row):
        if row["chosen"]:
            return [CHOSEN_STYLE] * len(row)
        if row["status"] == "failed":
            return [FAILED_STYLE] * len(row)
        return [""] * len(row)

    def _draw(self, report, busy: bool, walks) -> None:
        """The guarantee in words and the scan for ``report``; faded while a model trains. For
        another rule (``report`` None), the box in the same place says it has no guarantee."""
        self._layout.css_classes = ["att-calibration", *(["att-stale"] if busy else [])]
        self._layout.visible = walks is not None
        self.details.visible = report is not None
        if report is None:
            self.alert.alert_type = "secondary"
            self.alert.object = no_guarantee_words(self.state.rule, from_upload(walks))
            self.report_notes.visible = False
            return
        stale = f" *({stale_note(self.state)})*" if busy else ""
        uploaded = from_upload(walks)
        self.sentence.object = report.guarantee
        self.report_notes.object = " ".join(report.notes)
        self.report_notes.visible = bool(report.notes)
        if uploaded:
            self.alert.alert_type = "warning"
            words = NO_GUARANTEE_NO_SCALE if report.fallback else NO_GUARANTEE
            self.alert.object = f"{words}{stale}"
        elif report.fallback:
            self.alert.alert_type = "warning"
            self.alert.object = (
                f"**No guarantee short of full evaluation.**{stale} {report.guarantee}"
            )
        else:
            self.alert.alert_type = "success"
            self.alert.object = f"**Guarantee**{stale}: {guarantee_headline(report)}"
        rows = calibration_window(report)
        table = calibration_table(report)
        shown = table.iloc[rows]
        passed_above = f" (steps 1–{rows.start} all passed)" if rows.start else ""
        self.caption.object = (
            f"**Calibration table**: steps {rows.start + 1}–{rows.stop} of the scan's "
            f"{len(table)} scales{passed_above}."
        )
        self.table.object = (
            shown.style.hide(axis="index").format(FORMATS).apply(self._row_style, axis=1)
        )
        n_fit = len(walks.problem.y_fit) if walks is not None else 0
        self.note.object = calibration_note(report, n_fit, uploaded) if walks else ""

    def _draw_caveat(self, metrics, busy: bool, walks) -> None:
        """Under a guarantee, the test set's disagreement above δ reconciled with it (a model
        fitted here only: an uploaded one has no guarantee to reconcile)."""
        check = None if busy else delta_check(self.state.rule, metrics, from_upload(walks))
        text = "" if check is None else check.guarantee_caveat()
        self.caveat.object = text
        self.caveat.visible = bool(text)

    def __panel__(self):
        return self._layout
