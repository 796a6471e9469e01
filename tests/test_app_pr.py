"""The precision–recall plot is drawn in place: a new measurement re-assigns its sources and
legend labels and replaces no Bokeh model (in a notebook, a replaced figure came back from the
page as new models that Bokeh refused: a traceback in the cell's output)."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest
from bokeh.core.property.vectorization import Value
from bokeh.document import Document
from bokeh.models import Line, Step

from attentive.app import rules
from attentive.app.plots import PrecisionRecallView
from attentive.app.state import DashboardState


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


def drawn(doc: Document) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Legend label → (recall, precision) the document draws for it."""
    out = {}
    for legend_item in (m for m in doc.models if type(m).__name__ == "LegendItem"):
        (renderer,) = legend_item.renderers
        data = renderer.data_source.data
        label = legend_item.label
        text = label.value if isinstance(label, Value) else label
        out[text] = (np.asarray(data["recall"]), np.asarray(data["precision"]))
    return out


def test_a_new_measurement_redraws_the_precision_recall_plot_in_place():
    state = DashboardState()
    view = PrecisionRecallView(state=state)
    doc = Document()
    doc.add_root(pn.panel(view).get_root(doc))
    models = {m.id for m in doc.models}
    assert state.measured is not None
    state.set_controls(delta=0.05)  # a move, then its measurement
    m = state.measured
    assert {m.id for m in doc.models} == models  # nothing replaced, nothing added
    lines = [g for g in doc.models if isinstance(g, Line | Step)]
    assert lines and all(isinstance(g.line_color, str) for g in lines)
    # What is drawn is the measurement's precision–recall, labelled with its AP.
    shown = drawn(doc)
    assert len(shown) == 3
    for method, rows in m.pr.groupby("method"):
        (label,) = [k for k in shown if f"AP {m.average_precision[method]:.3f}" in k]
        recall, precision = shown[label]
        np.testing.assert_allclose(recall, rows["recall"], rtol=1e-6)
        np.testing.assert_allclose(precision, rows["precision"], rtol=1e-6)


def test_the_current_rules_entry_names_how_its_scores_are_made():
    """A stopped example scores c + τ under a boundary; the budget rule scores every example
    c + (n/B)·S_B (attentive.outcome), and its entry said "stops score c + τ"."""
    state = DashboardState(boundary="constant", side="both")
    view = PrecisionRecallView(state=state)
    doc = Document()
    doc.add_root(pn.panel(view).get_root(doc))
    assert any(k.startswith("current rule (stops score c + τ)") for k in drawn(doc))
    state.set_controls(boundary="budget")
    labels = list(drawn(doc))
    assert any(k.startswith("current rule (budget B: score c + (n/B)·S_B)") for k in labels)
    assert not any("c + τ" in k for k in labels)


def test_a_new_model_clears_the_curves_until_its_measurement_comes():
    """The measurement waits for the rules' timing: after a dataset switch the previous
    dataset's curves stayed for 4-18 s under its legend (AP 1.000 beside cards of another
    model: a teacher's trial). A move keeps the nearby rule's curves until its measurement;
    a new model clears them, the legend saying they are being evaluated."""
    rules.measure.clear()  # (no timing kept by another test: each is measured here)
    state = DashboardState()
    view = PrecisionRecallView(state=state)
    doc = Document()
    doc.add_root(pn.panel(view).get_root(doc))
    assert all("AP" in k for k in drawn(doc))
    state.background = lambda job, done, fail: None  # (measurements that never come)
    state.set_controls(delta=0.05)
    assert state.measured is None
    assert all("AP" in k for k in drawn(doc))  # a move: the curves stay
    assert state.set_controls(dataset="breast-cancer"), state.last_error
    shown = drawn(doc)
    assert len(shown) == 3 and all(k.endswith("evaluating…") for k in shown), list(shown)
    assert all(recall.size == 0 for recall, _ in shown.values())
    # The budget rule's entry is its own there too (a stopped score c + τ is not its).
    state.set_controls(boundary="budget")
    assert state.set_controls(dataset="mnist-t10k-2v5"), state.last_error
    labels = list(drawn(doc))
    assert any(k.startswith("current rule (budget B") for k in labels), labels
    assert not any("c + τ" in k for k in labels)
