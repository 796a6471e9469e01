"""The calibrated boundary's views: its α control, its guarantee in words and its calibration table.

Nothing here computes: the report, the table and the note come ready in
:attr:`DashboardState.figures` (``calibration``, ``calibration_table``, ``calibration_note``, built
by :mod:`attentive.app.compute` from :mod:`attentive.calibration`). Both views hide themselves
unless the calibrated boundary is selected. Widgets are created per view instance.
"""

from __future__ import annotations

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import BooleanFormatter, NumberFormatter

from attentive.app.compute import CALIBRATION_COLUMNS
from attentive.app.state import DashboardState

__all__ = ["CalibrationControls", "CalibrationView"]

PAGE_SIZE = 8
COLUMNS = ["step", *CALIBRATION_COLUMNS.values()]
CHOSEN_STYLE = "background-color: #CC79A733; font-weight: 600"
FAILED_STYLE = "color: #D55E00"
FORMATTERS = {
    "z": NumberFormatter(format="0.00"),
    "k / m": NumberFormatter(format="0.0%"),
    "U (bound)": NumberFormatter(format="0.00%"),
    "evaluated": NumberFormatter(format="0.0%"),
    "chosen": BooleanFormatter(),
}
TABLE_HELP = (
    "Fixed-sequence test (SPEC §3): scales z from most conservative (6) down; k = calibration "
    "examples whose early decision differs from the full one, U = Clopper–Pearson upper bound "
    "on the disagreement rate at confidence 1 − α. The scan stops at the first U > δ and keeps "
    "the last scale that passed."
)


def _is_calibrated(state: DashboardState) -> bool:
    return state.boundary == "calibrated"


class CalibrationControls(pn.viewable.Viewer):
    """The α slider, shown only while the calibrated boundary is selected."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        p = self.state.param
        self.alpha_slider = pn.widgets.FloatSlider.from_param(
            p.alpha,
            step=0.005,
            format="0.000",
            sizing_mode="stretch_width",
            css_classes=["att-alpha"],
        )
        self._layout = pn.Row(
            self.alpha_slider,
            pn.widgets.TooltipIcon(value=p.alpha.doc, margin=(28, 0, 0, -10)),
            visible=_is_calibrated(self.state),
            sizing_mode="stretch_width",
        )
        self.state.param.watch(self._show, "boundary")

    def _show(self, event) -> None:
        self._layout.visible = event.new == "calibrated"

    def __panel__(self):
        return self._layout


class CalibrationView(pn.viewable.Viewer):
    """The guarantee (or why there is none) next to the numbers, and the calibration table."""

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        super().__init__(**params)
        self.alert = pn.pane.Alert(
            "", alert_type="success", sizing_mode="stretch_width", css_classes=["att-guarantee"]
        )
        self.note = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=COLUMNS),
            disabled=True,
            show_index=False,
            pagination="local",
            page_size=PAGE_SIZE,
            formatters=FORMATTERS,
            selectable=False,
            layout="fit_data_stretch",
            sizing_mode="stretch_width",
            css_classes=["att-calibration-table"],
        )
        self.table.style.apply(self._row_style, axis=1)
        details = pn.Card(
            pn.pane.Markdown(TABLE_HELP, margin=(0, 10)),
            self.table,
            title="Calibration table",
            collapsed=False,
            sizing_mode="stretch_width",
        )
        self._layout = pn.Column(self.alert, self.note, details, sizing_mode="stretch_width")
        self.state.param.watch(self._update, "figures")
        self._draw(self.state.figures)

    @staticmethod
    def _row_style(row):
        if row["chosen"]:
            return [CHOSEN_STYLE] * len(row)
        if row["status"] == "failed":
            return [FAILED_STYLE] * len(row)
        return [""] * len(row)

    def _update(self, event) -> None:
        self._draw(event.new)

    def _draw(self, figures) -> None:
        report = None if figures is None else figures.calibration
        self._layout.visible = report is not None
        if report is None:
            return
        if report.fallback:
            self.alert.alert_type = "warning"
            self.alert.object = f"**No guarantee below full evaluation.** {report.guarantee}"
        else:
            self.alert.alert_type = "success"
            self.alert.object = f"**Guarantee.** {report.guarantee}"
        self.note.object = figures.calibration_note
        self.table.value = figures.calibration_table
        # Open the page where the scan ended: the chosen scale, or the first failure.
        focus = report.chosen_index if report.chosen_index is not None else report.n_tested - 1
        self.table.page = max(0, focus) // PAGE_SIZE + 1

    def __panel__(self):
        return self._layout
