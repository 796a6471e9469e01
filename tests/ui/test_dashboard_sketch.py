"""The sketched rules in the served dashboard (issue 35, "In the dashboard"): a sketched rule
opened from an address draws its first numbers at once, fits the walk's sketch in the background,
then draws the walks after the sketch with their caption, the dashed sketched curves on the
tradeoff, and their rows in the table, where a target picks one and highlights it."""

from __future__ import annotations

import pytest

from attentive.app.plots.tradeoff import SKETCHED
from attentive.app.plots.walks import SKETCH_TITLE
from tests.ui.test_dashboard import (
    LEGEND,
    STAR,
    TRADEOFF,
    WALKS,
    load,
    wait_for_plots,
)
from tests.ui.test_lesson import WALKS_TITLE
from tests.ui.test_picker import SELECTED_ROW, enter, open_pick_tab, until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The captions under a plot (Bokeh Titles placed below it), by the plot's title or name.
CAPTIONS = """(title) => {
    const fig = [...Bokeh.documents[0].all_models].find(
        (m) => m.title && (m.title.text === title || m.name === title));
    return fig ? fig.below.filter((m) => m.text !== undefined && m.visible).map((m) => m.text) : null;
}"""
# Points drawn by the renderers of one legend item of the tradeoff plot.
ITEM_POINTS = """(label) => {
    const fig = [...Bokeh.documents[0].all_models].find((m) => m.name === 'TradeoffView');
    let n = 0;
    for (const l of [...fig.center, ...fig.above]) {  // (above the data area when narrow)
        for (const it of (l.items ?? [])) {
            if (it.label.value !== label) continue;
            for (const r of it.renderers) if (r.visible) n += r.data_source.data.x.length;
        }
    }
    return n;
}"""


def test_a_sketched_rule_from_an_address_shows_the_walk_after_the_sketch_and_its_rows(
    page, server_url
):
    load(page, server_url, "?dataset=synthetic-lowrank&boundary=sketched-curved&delta=0.01")
    wait_for_plots(page)
    page.locator(".att-sketch-note").get_by_text("a sketch with").first.wait_for(timeout=180_000)
    page.wait_for_function(f"() => ({WALKS_TITLE})() === {SKETCH_TITLE!r}")
    until(page, lambda: "F̃(x)" in " ".join(page.evaluate(CAPTIONS, WALKS) or []))
    until(page, lambda: SKETCHED in (page.evaluate(LEGEND, TRADEOFF) or []), timeout=120)
    assert page.evaluate(ITEM_POINTS, SKETCHED) > 0
    assert any("Dashed: the sketched rules" in c for c in page.evaluate(CAPTIONS, TRADEOFF))
    # The star sits at the work the headline card gives (the sketch counted).
    card = page.locator(".att-check[data-key='evaluated-sketch']").first.inner_text()
    work = float(card.split("work ")[1].split(" ")[0])
    assert page.evaluate(STAR)[0] == pytest.approx(work, abs=1e-3)
    speedup = page.locator(".att-check[data-key='speedup-sketch']").first.inner_text()
    # 1 / work, from the work the card rounds to three places (so within its rounding).
    shown = float(speedup.split("×")[0])
    assert shown == pytest.approx(1 / work, rel=0.0006 / work + 0.01)
    # The table lists the sketched rules with their sketch and work: a target picks the least
    # work (the sketch counted), here a sketched rule, and its row is the highlighted one.
    open_pick_tab(page)
    enter(page, ".att-target", "0.02")
    until(
        page, lambda: (page.evaluate(SELECTED_ROW) or {}).get("family", "").startswith("sketched-")
    )
    row = page.evaluate(SELECTED_ROW)
    assert float(row["sketch"]) > 0 and float(row["disagreement"]) <= 0.02
    until(page, lambda: page.evaluate(STAR)[0] == pytest.approx(float(row["work"]), abs=1e-3))
