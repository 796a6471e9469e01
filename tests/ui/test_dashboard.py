"""The served dashboard in headless Chromium: controls move the numbers and plots, errors notify."""

from __future__ import annotations

import re

import pytest

from attentive.serve import wait_for_plots

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def number(page, key: str) -> str:
    return page.locator(f".att-value[data-key='{key}']").inner_text()


def wait_for_change(page, key: str, before: str, timeout: float = 30_000) -> str:
    page.wait_for_function(
        """([key, before]) => {
            const find = (root) => {
                const hit = root.querySelector(`.att-value[data-key='${key}']`);
                if (hit) return hit;
                for (const el of root.querySelectorAll('*')) {
                    if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) return h; }
                }
                return null;
            };
            const el = find(document);
            return el && el.textContent !== before;
        }""",
        arg=[key, before],
        timeout=timeout,
    )
    return number(page, key)


def load(page, server_url: str, query: str = "") -> None:
    page.goto(server_url + query)
    page.locator(".att-value[data-key='evaluated']").wait_for()


def slider_handle(page, name: str):
    return page.locator(f".att-{name} .noUi-handle")


def test_controls_move_numbers_and_plots(page, server_url, tmp_path):
    load(page, server_url)
    wait_for_plots(page)  # the four Bokeh plots render after the numbers
    before = number(page, "evaluated")
    # The permutation seed changes the order, so the walks and where they stop.
    seed_input = page.locator(".att-seed input")
    seed_input.fill("11")
    seed_input.press("Enter")
    after_seed = wait_for_change(page, "evaluated", before)
    page.wait_for_url(re.compile(r"seed=11"))  # the state lives in the URL
    # δ: the keyboard moves the log-scaled slider towards smaller δ.
    handle = slider_handle(page, "delta")
    handle.focus()
    for _ in range(3):
        handle.press("PageDown")
    after_delta = wait_for_change(page, "evaluated", after_seed)
    page.wait_for_url(re.compile(r"delta=0\.0"))
    # θ moves the decision threshold, so which walks are protected and where they stop.
    handle = slider_handle(page, "theta")
    handle.focus()
    for _ in range(3):
        handle.press("PageUp")
    wait_for_change(page, "evaluated", after_delta)
    page.wait_for_url(re.compile(r"theta="))
    page.screenshot(path=str(tmp_path / "controls.png"))


def test_switch_dataset(page, server_url, tmp_path):
    load(page, server_url)
    before = number(page, "stopped")
    page.locator(".att-dataset select").select_option("breast-cancer")
    after = wait_for_change(page, "stopped", before, timeout=60_000)
    assert "of 171" in after  # breast-cancer's test part
    page.wait_for_url(re.compile(r"dataset=breast-cancer"))
    page.screenshot(path=str(tmp_path / "breast-cancer.png"))


def test_malformed_upload_notifies_and_the_app_keeps_working(page, server_url, tmp_path):
    load(page, server_url)
    before = number(page, "evaluated")
    bad = tmp_path / "broken.csv"
    bad.write_text("label,a,b\n1,2\nx,y,z,w\n")
    page.locator(".att-data-upload input[type='file']").set_input_files(str(bad))
    toast = page.locator(".notyf__toast--error")
    toast.first.wait_for()
    assert "broken.csv" in toast.first.inner_text()
    assert number(page, "evaluated") == before  # the previous state stays
    handle = slider_handle(page, "delta")
    handle.focus()
    handle.press("PageUp")
    wait_for_change(page, "evaluated", before)
    page.screenshot(path=str(tmp_path / "after-bad-upload.png"))


def test_url_state_and_dark_theme(page, server_url, tmp_path):
    load(page, server_url, "?boundary=budget&delta=0.01&seed=3&theme=dark")
    evaluated = number(page, "evaluated")
    assert "(50%)" in evaluated or "(51%)" in evaluated  # budget B = half the terms
    wait_for_plots(page)
    page.screenshot(path=str(tmp_path / "dark-budget.png"))


def test_calibrated_boundary_states_its_guarantee(page, server_url, tmp_path):
    load(page, server_url)
    before = number(page, "evaluated")
    page.get_by_text("calibrated", exact=True).first.click()
    guarantee = page.locator(".att-guarantee").get_by_text("with probability ≥ 1 − α")
    guarantee.first.wait_for(timeout=60_000)  # the walk is refit without the calibration part
    page.wait_for_url(re.compile(r"boundary=calibrated"))
    assert "76 calibration examples" in guarantee.first.inner_text()
    assert page.get_by_text("Calibration table").first.is_visible()
    wait_for_change(page, "evaluated", before)
    page.screenshot(path=str(tmp_path / "calibrated.png"))


RANGES = """(title) => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.title && m.title.text === title) {
            return [m.x_range.start, m.x_range.end, m.y_range.start, m.y_range.end];
        }
    }
    return null;
}"""
ZOOM = """([title, r]) => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.title && m.title.text === title) {
            m.x_range.setv({start: r[0], end: r[1]});
            m.y_range.setv({start: r[2], end: r[3]});
        }
    }
}"""
TAP_POINT = """([title, x, y]) => {
    const find = (v) => {
        if (v.model && v.model.title && v.model.title.text === title) return v;
        for (const c of (v.child_views ?? [])) { const r = find(c); if (r) return r; }
        return null;
    };
    for (const root of Bokeh.index.roots ?? Object.values(Bokeh.index)) {
        const v = find(root);
        if (v) {
            const box = v.canvas_view.el.getBoundingClientRect();
            return [box.left + v.frame.x_scale.compute(x), box.top + v.frame.y_scale.compute(y)];
        }
    }
    return null;
}"""
WALKS = "Walks of the partial score S_t"
TRADEOFF = "Tradeoff: stop-error against terms evaluated"


def test_zoom_stays_on_delta_moves_and_refits_on_new_data(page, server_url, tmp_path):
    load(page, server_url)
    wait_for_plots(page)
    fitted = page.evaluate(RANGES, WALKS)
    zoom = [5.0, 20.0, -1.0, 0.0]
    assert fitted != zoom
    page.evaluate(ZOOM, [WALKS, zoom])  # what a box zoom does to the ranges
    before = number(page, "evaluated")
    handle = slider_handle(page, "delta")
    handle.focus()
    handle.press("PageDown")
    handle.press("PageDown")
    wait_for_change(page, "evaluated", before)
    page.wait_for_timeout(500)  # the plot data follows the numbers
    assert page.evaluate(RANGES, WALKS) == zoom
    before = number(page, "stopped")
    page.locator(".att-dataset select").select_option("breast-cancer")
    wait_for_change(page, "stopped", before, timeout=60_000)
    page.wait_for_function(
        f"(z) => JSON.stringify(({RANGES})({WALKS!r})) !== JSON.stringify(z)", arg=zoom
    )
    x0, x1 = page.evaluate(RANGES, WALKS)[:2]
    assert (x0, x1) == (0, 91)  # refit to breast-cancer's 91 terms
    page.screenshot(path=str(tmp_path / "zoom.png"))


def test_click_on_the_tradeoff_plot_picks_delta(page, server_url):
    load(page, server_url, "?delta=0.01")
    wait_for_plots(page)
    before = number(page, "evaluated")
    # The δ grid's largest δ evaluates the fewest terms: click at the far left, error 0.
    x, y = page.evaluate(TAP_POINT, [TRADEOFF, 0.0, 0.0])
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(r"delta=0\.[1-5]"))
    wait_for_change(page, "evaluated", before)
