"""A layout for phones and projectors (issue 32, "What must exist" 3): an emulated phone gets the
phone layout (a viewport meta, a collapsed sidebar, full-width plots), 1024×768 shows a plot on
its first screen, and no help tooltip covers a control. Screenshots are saved for a person."""

from __future__ import annotations

import pytest

from tests.ui.test_dashboard import OVERFLOW, SHOTS, SIDEBAR_WIDTH, STAR, load, wait_for_plots

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
WALKS_BOX = """() => {
    for (const root of Bokeh.index.roots ?? Object.values(Bokeh.index)) {
        const find = (v) => {
            if (v.model && v.model.name === 'TrajectoryView') return v;
            for (const c of (v.child_views ?? [])) { const r = find(c); if (r) return r; }
            return null;
        };
        const v = find(root);
        if (v) { const b = v.el.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; }
    }
    return null;
}"""
TOGGLE_TOOLTIP_HIDDEN = """() => {
    const tip = document.querySelector('fast-tooltip[anchor="sidebar-button"]');
    return !tip || getComputedStyle(tip).display === 'none';
}"""
# Where the tradeoff plot's legend is: [above its data area, inside it].
TRADEOFF_LEGEND = """() => {
    const fig = [...Bokeh.documents[0].all_models].find((m) => m.name === 'TradeoffView');
    const legend = (list) => list.some((m) => m.items !== undefined);
    return fig ? [legend(fig.above), legend(fig.center)] : null;
}"""
# The main area's tabs: their height, and the visible tab's with the header's.
TABS_HEIGHTS = """() => {
    let tabs = null;
    const walk = (root) => {
        for (const el of root.querySelectorAll('*')) {
            if ((el.className || '').toString().includes('bk-panel-models-tabs-Tabs')) tabs = el;
            if (el.shadowRoot) walk(el.shadowRoot);
        }
    };
    walk(document);
    if (!tabs) return null;
    const kids = [...tabs.shadowRoot.children];
    const shown = kids.filter((c) => c.className.toString().includes('layout-Column')
        && getComputedStyle(c).visibility === 'visible');
    const header = kids.find((c) => c.className.toString().includes('bk-header'));
    if (shown.length !== 1 || !header) return null;
    const h = (el) => el.getBoundingClientRect().height;
    return [h(tabs), h(shown[0]) + h(header)];
}"""
TOOLTIP_BOXES = """() => {
    const boxes = [];
    const walk = (root) => {
        for (const el of root.querySelectorAll('.bk-tooltip-content')) {
            const r = el.getBoundingClientRect();
            if (r.width > 0 && r.height > 0) boxes.push([r.left, r.top, r.right, r.bottom]);
        }
        for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
    };
    walk(document);
    return boxes;
}"""
# Each open tooltip's opacity and background, as drawn.
TOOLTIP_LOOK = """() => {
    const looks = [];
    const walk = (root) => {
        for (const el of root.querySelectorAll('.bk-tooltip-content')) {
            const style = getComputedStyle(el.getRootNode().host);
            if (el.getBoundingClientRect().width > 0) looks.push([style.opacity, style.backgroundColor]);
        }
        for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
    };
    walk(document);
    return looks;
}"""
CONTROL_BOXES = """() => {
    const boxes = [];
    const walk = (root) => {
        for (const el of root.querySelectorAll('input, select, button, .noUi-target')) {
            const r = el.getBoundingClientRect();
            if (r.width > 0 && r.height > 0) boxes.push([r.left, r.top, r.right, r.bottom]);
        }
        for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
    };
    walk(document.getElementById('sidebar'));
    return boxes;
}"""


# How far the main area (which scrolls, not the document) is wider than its window.
MAIN_OVERFLOW = (
    "() => { const m = document.getElementById('main'); return m.scrollWidth - m.clientWidth; }"
)


# The operating-point table's column titles whose header ends past the screen's right edge.
CUT_COLUMNS = """() => {
    const out = [];
    const find = (root) => {
        for (const el of root.querySelectorAll('.tabulator-col')) {
            const box = el.getBoundingClientRect();
            const title = el.querySelector('.tabulator-col-title');
            const text = title ? title.textContent.trim() : '';
            if (text && box.width > 0 && box.right > innerWidth + 1) out.push(text);
        }
        for (const el of root.querySelectorAll('*')) if (el.shadowRoot) find(el.shadowRoot);
    };
    find(document);
    return out;
}"""


def test_an_emulated_phone_gets_the_phone_layout(browser, server_url):
    """A phone (device pixel ratio 3, touch, a 390 px screen) lays the page out at its own width:
    the sidebar starts closed and the plots take the screen's width (before, without a viewport
    meta, it got the 980 px desktop page shrunk to 40 %); a help tooltip tapped in the sidebar
    is opaque."""
    context = browser.new_context(**PHONE)
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        load(page, server_url)
        meta = page.locator("meta[name='viewport']")
        assert "width=device-width" in meta.get_attribute("content")
        assert page.evaluate("() => document.documentElement.clientWidth") == 390
        assert page.evaluate(SIDEBAR_WIDTH) < 5
        wait_for_plots(page)
        page.wait_for_function(f"() => ({STAR})() !== null")
        left, _, width, _ = page.evaluate(WALKS_BOX)
        assert width >= 340 and left >= 0
        # The tradeoff legend goes above its data area (inside, it covered the curves' climbs).
        page.wait_for_function(f"() => JSON.stringify(({TRADEOFF_LEGEND})()) === '[true,false]'")
        assert page.evaluate(OVERFLOW) <= 0
        assert page.evaluate(MAIN_OVERFLOW) <= 0
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "phone.png"))
        # The teaching tab's three sliders wrap (in a row they ran 27 px past the screen, and
        # the main area scrolled sideways).
        page.get_by_text("Brownian bridge", exact=True).first.click()
        page.locator(".att-bridge-n").first.wait_for()
        page.wait_for_timeout(500)
        assert page.evaluate(MAIN_OVERFLOW) <= 0
        # The tabs take the shown tab's height, not the tallest's (the walks tab's: the bridge
        # tab ended in ~650 px of blank scroll).
        tabs, shown = page.evaluate(TABS_HEIGHTS)
        assert tabs <= shown + 2, (tabs, shown)
        # The table's last columns are off to the right on a phone: a hint says to swipe.
        page.get_by_text("Pick a threshold", exact=True).first.click()
        hint = page.locator(".att-narrow-only").first
        hint.wait_for(state="visible")
        # It names every column cut off at the screen's edge (with the sketched rules' work
        # column, disagreement — one of the two numbers a pick is made by — was cut to
        # "disagree…" and not named).
        page.wait_for_function(f"() => ({CUT_COLUMNS})().length > 0")  # (none: no hint needed)
        page.wait_for_timeout(1000)  # (the columns fitted to the times once they come)
        cut = page.evaluate(CUT_COLUMNS)
        for title in cut:
            assert title.split()[0] in hint.inner_text(), (cut, hint.inner_text())
        page.get_by_text("Walks and rules", exact=True).first.click()
        page.locator("#sidebar-button").click()
        page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() > 250")
        page.wait_for_timeout(400)
        # Open, it reaches the screen's foot (12 px short, the tab bar showed under its last
        # row), and the toggle's hover tooltip does not stay over the title after the tap.
        bottom, height = page.evaluate(
            "() => [document.getElementById('sidebar').getBoundingClientRect().bottom, innerHeight]"
        )
        assert abs(bottom - height) <= 1, (bottom, height)
        assert page.evaluate(TOGGLE_TOOLTIP_HIDDEN)
        page.screenshot(path=str(SHOTS / "phone-sidebar.png"))
        # A help tooltip, tapped, opens over the sidebar's own controls: it must hide them (at
        # Bokeh's 95 % opacity their labels and sliders showed through the text).
        icon = page.locator("#sidebar .bk-description, #sidebar .bk-TooltipIcon").nth(2)
        icon.click()
        page.wait_for_function(f"() => ({TOOLTIP_BOXES})().length > 0")
        assert page.evaluate(TOOLTIP_LOOK) == [["1", "rgb(255, 255, 255)"]]
        page.screenshot(path=str(SHOTS / "phone-help.png"))
    finally:
        context.close()


def test_the_first_screen_at_1024x768_shows_a_plot(browser, server_url):
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        load(page, server_url)
        wait_for_plots(page)
        _, top, _, height = page.evaluate(WALKS_BOX)
        visible = min(768, top + height) - top
        assert visible >= 200, (top, height)  # at least 200 px of the walks plot, unscrolled
        # The page itself does not scroll: the main area and the sidebar scroll within it (the
        # sidebar ran 8 px past the window, and a scroll into view pushed the header up).
        assert page.evaluate("() => document.documentElement.scrollHeight") == 768
        page.screenshot(path=str(SHOTS / "first-screen-1024x768.png"))
    finally:
        context.close()


def overlap(a, b) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_no_help_tooltip_covers_a_control(browser, server_url, width, height):
    """Every help icon of the sidebar, hovered: its tooltip opens beside the sidebar and covers
    no input, slider, select or button (the side buttons' help used to cover the δ slider)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        load(page, server_url)
        icons = page.locator("#sidebar .bk-description, #sidebar .bk-TooltipIcon")
        assert icons.count() >= 8
        checked = 0
        for i in range(icons.count()):
            icon = icons.nth(i)
            if not icon.is_visible():
                continue
            icon.scroll_into_view_if_needed()
            icon.hover()
            page.wait_for_function(f"() => ({TOOLTIP_BOXES})().length > 0")
            tip = page.evaluate(TOOLTIP_BOXES)[0]
            covered = [c for c in page.evaluate(CONTROL_BOXES) if overlap(tip, c)]
            assert not covered, (i, tip, covered)
            assert 0 <= tip[0] and tip[2] <= width and 0 <= tip[1] and tip[3] <= height
            checked += 1
            page.mouse.move(width - 5, height - 5)
            page.wait_for_function(f"() => ({TOOLTIP_BOXES})().length === 0")
        assert checked >= 8
    finally:
        context.close()
