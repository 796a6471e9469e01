"""The served dashboard in headless Chromium: it opens on MNIST t10k 2 vs 5 with the calibrated
rule; controls move the numbers and plots, the URL holds the view, and what the page shows is what
the exported classifier and the reproducing snippet compute."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DEFAULT = "mnist-t10k-2v5"
SHOTS = Path(os.environ.get("ATTENTIVE_UI_SHOTS", "/tmp/attentive-ui-shots"))


def number(page, key: str) -> str:
    return page.locator(f".att-value[data-key='{key}']").inner_text()


def wait_for_change(page, key: str, before: str, timeout: float = 90_000) -> str:
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
            return el && el.textContent !== before && !el.textContent.includes('timing');
        }""",
        arg=[key, before],
        timeout=timeout,
    )
    return number(page, key)


# Plots by title, or by figure name where the title follows the rule: the walks plot's names the
# statistic drawn (S_t, or the estimate of S_n for a mass-regression rule).
MAIN_PLOTS = (
    "TrajectoryView",
    "Tradeoff of every rule",
    "Precision–recall against the true labels",
    "Theory check: actual against required δ",
)


WALKS, TRADEOFF = MAIN_PLOTS[:2]


def wait_for_plots(page, timeout: float = 120_000) -> None:
    """Wait until the four (deferred) plots of the first tab are in the page's Bokeh document
    (counting canvases is not enough: the Brownian-bridge tab's plots load with the page)."""
    page.wait_for_function(
        """(titles) => {
            if (typeof Bokeh === 'undefined' || !Bokeh.documents.length) return false;
            const have = new Set();
            for (const d of Bokeh.documents) {
                for (const m of d.all_models) {
                    if (m.title && m.title.text) have.add(m.title.text).add(m.name);
                }
            }
            return titles.every((t) => have.has(t));
        }""",
        arg=list(MAIN_PLOTS),
        timeout=timeout,
    )


def load(page, server_url: str, query: str = "") -> None:
    page.goto(server_url + query)
    page.locator(".att-value[data-key='evaluated']").wait_for(timeout=120_000)


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def wait_for_query(page, name: str, value: str, timeout: float = 90_000) -> None:
    page.wait_for_function(
        "([k, v]) => new URLSearchParams(location.search).get(k) === v",
        arg=[name, value],
        timeout=timeout,
    )


def slider_handle(page, name: str):
    return page.locator(f".att-{name} .noUi-handle")


def press(page, name: str, key: str, times: int) -> None:
    handle = slider_handle(page, name)
    handle.focus()
    for _ in range(times):
        handle.press(key)


def expected_numbers(controls: dict) -> dict[str, str]:
    """The headline numbers a :class:`DashboardState` with ``controls`` shows."""
    from attentive.app.numbers import HeadlineNumbers
    from attentive.app.state import DashboardState

    state = DashboardState(**controls)
    assert state.n_errors == 0, state.last_error
    values = HeadlineNumbers.values(state.numbers())
    return {k: values[k] for k in ("evaluated", "disagreement", "stopped")}


def wait_for_numbers(page, expected: dict[str, str], timeout: float = 120.0) -> None:
    """Wait until the page shows ``expected`` (a background build may still be running)."""
    shown = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = {k: number(page, k) for k in expected}
        if shown == expected:
            return
        page.wait_for_timeout(250)
    assert shown == expected, f"{page.url} shows {shown}, expected {expected}"


def evaluated_terms(text: str) -> tuple[float, int]:
    """'180.8 of 686 (26%)' → (180.8, 686)."""
    mean, n = re.match(r"([\d,.]+) of ([\d,]+)", text).groups()
    return float(mean.replace(",", "")), int(n.replace(",", ""))


def percent(text: str) -> float:
    return float(text.rstrip("%")) / 100


# Bokeh models of the page (the plots are one Bokeh document).
LEGEND = """(title) => {
    const models = [...Bokeh.documents[0].all_models];
    const fig = models.find((m) => m.title && (m.title.text === title || m.name === title));
    if (!fig) return null;
    const out = [];
    for (const l of [...fig.center, ...fig.above, ...fig.below, ...fig.right]) {
        for (const it of (l.items ?? [])) if (it.visible) out.push(it.label.value);
    }
    return out;
}"""
STAR = """() => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.glyph && m.glyph.marker && m.glyph.marker.value === 'star') {
            return [m.data_source.data.x[0], m.data_source.data.y[0]];
        }
    }
    return null;
}"""
SNIPPET = """() => {
    for (const m of Bokeh.documents[0].all_models) {
        if (typeof m.code === 'string' && m.code.includes('AttentiveClassifier')) return m.code;
    }
    return null;
}"""
RANGES = """(title) => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.title && (m.title.text === title || m.name === title)) {
            return [m.x_range.start, m.x_range.end, m.y_range.start, m.y_range.end];
        }
    }
    return null;
}"""
ZOOM = """([title, r]) => {
    for (const m of Bokeh.documents[0].all_models) {
        if (m.title && (m.title.text === title || m.name === title)) {
            m.x_range.setv({start: r[0], end: r[1]});
            m.y_range.setv({start: r[2], end: r[3]});
        }
    }
}"""
TAP_POINT = """([title, x, y]) => {
    const find = (v) => {
        if (v.model && v.model.title && (v.model.title.text === title || v.model.name === title)) {
            return v;
        }
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


def test_default_is_mnist_calibrated_and_matches_the_exported_classifier(page, server_url):
    from attentive.data import load_dataset
    from attentive.models import load_model

    load(page, server_url)
    assert page.get_by_label("Dataset").input_value() == DEFAULT
    mean, n_terms = evaluated_terms(number(page, "evaluated"))
    assert n_terms >= 300  # an SVM with hundreds of support vectors, not a toy
    assert page.get_by_label("Rule", exact=True).input_value() == "calibrated"
    guarantee = page.locator(".att-guarantee").get_by_text("with probability ≥")
    guarantee.first.wait_for()
    # How the scale was chosen folds away under the guarantee; its card opens on a click.
    details = page.get_by_text("How the scale was chosen").first
    assert details.is_visible()
    assert not page.locator(".att-table").first.is_visible()
    details.click()
    page.locator(".att-table").first.wait_for(state="visible")
    # Open, the card takes a row of its own, as wide as the guarantee's row (beside it, it ran
    # down a third of the width and left the rest blank).
    page.wait_for_function(
        """() => {
            const find = (root, css) => {
                const hit = root.querySelector(css);
                if (hit) return hit;
                for (const el of root.querySelectorAll('*')) {
                    if (el.shadowRoot) { const h = find(el.shadowRoot, css); if (h) return h; }
                }
                return null;
            };
            const card = find(document, '.att-calibration-details');
            const row = find(document, '.att-calibration');
            if (!card || !row) return false;
            return card.getBoundingClientRect().width >= 0.9 * row.getBoundingClientRect().width;
        }""",
        timeout=30_000,
    )
    # The classifier the export button gives decides exactly what the page shows.
    with page.expect_download(timeout=120_000) as download:
        page.get_by_text("AttentiveClassifier (skops)").first.click()
    data = Path(download.value.path()).read_bytes()
    clf = load_model(data)  # the project's trusted loader, as the page's snippet loads it
    ds = load_dataset(DEFAULT)
    early = clf.evaluate(ds.X_test)
    full = clf.with_rule("full").evaluate(ds.X_test)
    assert clf.n_terms_ == n_terms
    assert f"{early.n_evaluated.mean():,.1f}" == f"{mean:,.1f}"
    shown = percent(number(page, "disagreement"))
    assert np.mean(early.positive != full.positive) == pytest.approx(shown, abs=5e-5)


def test_controls_move_numbers_and_the_url_holds_them(page, server_url):
    load(page, server_url)
    wait_for_plots(page)
    entries = page.evaluate("() => history.length")
    before = number(page, "evaluated")
    # The permutation seed changes the order, so the walks and where they stop.
    seed_input = page.locator(".att-seed input")
    seed_input.fill("11")
    seed_input.press("Enter")
    after_seed = wait_for_change(page, "evaluated", before)
    wait_for_query(page, "seed", "11")
    # δ up (log-scaled slider, keyboard): the calibrated rule is calibrated again. Its cost is
    # not monotone in δ (family="auto" may rank another family first: on seed 11 with
    # leave-one-out reference walks, δ = 1 % picks finite-population at 108.5 terms and
    # δ = 1.12 % heteroscedastic at 182.4), so only the move is checked here; the numbers
    # themselves are checked against Python below.
    press(page, "delta", "PageUp", 3)
    after_delta = wait_for_change(page, "evaluated", after_seed)
    # The address follows once the page is idle (Panel's location), not with the numbers.
    page.wait_for_function("() => Number(new URLSearchParams(location.search).get('delta')) > 0.01")
    # θ moves the decision threshold, so which walks are protected and where they stop.
    press(page, "theta", "PageUp", 3)
    after_theta = wait_for_change(page, "evaluated", after_delta)
    page.wait_for_function("() => Number(new URLSearchParams(location.search).get('theta')) > 0")
    # Side and centering are in the URL too.
    page.get_by_role("button", name="lower", exact=True).first.click()
    after_side = wait_for_change(page, "evaluated", after_theta)
    wait_for_query(page, "side", "lower")
    # Centering moves the constant rule (the calibrated one's families on reference walks of the
    # remainder are invariant to it: SPEC §2's M_t absorbs the centring).
    page.get_by_label("Rule", exact=True).select_option("constant")
    after_rule = wait_for_change(page, "evaluated", after_side)
    page.get_by_label("Centering").select_option("all")  # a new walk: built in the background
    wait_for_change(page, "evaluated", after_rule)
    wait_for_query(page, "centering", "all")
    # What the same controls give in Python; the page must come to show it, and so must a new
    # session opened on the URL alone.
    expected = expected_numbers(query(page))
    wait_for_numbers(page, expected)
    # The address followed every move in place: no history entry a move, whose Back would give
    # an address the page does not show (Panel's location pushes one a change, and reads none).
    assert page.evaluate("() => history.length") == entries
    url = page.url
    page.goto("about:blank")
    page.goto(url)
    page.locator(".att-value[data-key='evaluated']").wait_for(timeout=120_000)
    wait_for_numbers(page, expected)
    assert page.get_by_label("Centering").input_value() == "all"


def test_tradeoff_plot_has_every_family_and_the_oracle(page, server_url):
    import attentive

    load(page, server_url)
    wait_for_plots(page)
    page.wait_for_function(f"() => ({LEGEND})({TRADEOFF!r}) !== null")
    labels = page.evaluate(LEGEND, TRADEOFF)
    for name in attentive.family_names():
        assert name in labels
    assert any(label.startswith("oracle floor (plain walk) at 0.") for label in labels)
    assert "current rule" in labels
    # The star sits where the headline numbers say.
    x, y = page.evaluate(STAR)
    mean, n_terms = evaluated_terms(number(page, "evaluated"))
    assert x == pytest.approx(mean / n_terms, abs=1e-3)
    assert y == pytest.approx(percent(number(page, "disagreement")), abs=5e-5)


def test_target_disagreement_moves_the_point_and_the_snippet_reproduces_it(page, server_url):
    load(page, server_url)
    wait_for_plots(page)
    star_before = page.evaluate(STAR)
    before = number(page, "evaluated")
    page.get_by_text("Pick a threshold", exact=True).first.click()
    target = page.locator(".att-target input")
    target.fill("0.02")
    target.press("Enter")
    wait_for_change(page, "evaluated", before)
    page.wait_for_function(
        f"(b) => JSON.stringify(({STAR})()) !== JSON.stringify(b)", arg=star_before
    )
    rule = page.get_by_label("Rule", exact=True).input_value()
    assert rule != "calibrated"  # the cheapest family at its scale
    disagreement = percent(number(page, "disagreement"))
    assert disagreement <= 0.02
    mean, n_terms = evaluated_terms(number(page, "evaluated"))
    page.wait_for_function(f"() => ({SNIPPET})()?.includes('\"{rule}\", side=')")
    code = page.evaluate(SNIPPET)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    printed = dict(re.findall(r"^(.+?) (-?[\d.]+)$", out, flags=re.M))
    assert float(printed["mean fraction of terms"]) == pytest.approx(mean / n_terms, abs=2e-4)
    assert float(printed["disagreement"]) == pytest.approx(disagreement, abs=1e-4)
    assert float(printed["accuracy"]) == pytest.approx(
        percent(number(page, "accuracy").split("→")[1].strip()), abs=1e-3
    )


def test_guarantee_shows_only_for_the_calibrated_rule(page, server_url):
    """A point clicked on the tradeoff plot picks a family: the guarantee goes, and in its place
    the box says this rule has none, so the plot stays under the cursor (it moved 90 px up when
    the box went: a user's trial)."""
    load(page, server_url)
    wait_for_plots(page)
    guarantee = page.locator(".att-guarantee").get_by_text("Guarantee:").first
    guarantee.wait_for()
    before = number(page, "evaluated")
    x, y = page.evaluate(TAP_POINT, [TRADEOFF, 0.1, 0.01])
    page.mouse.click(x, y)
    wait_for_change(page, "evaluated", before)
    page.wait_for_function(
        "() => (new URLSearchParams(location.search).get('boundary') ?? 'calibrated')"
        " !== 'calibrated'"
    )
    guarantee.wait_for(state="hidden")
    page.locator(".att-guarantee").get_by_text("No guarantee for this rule.").first.wait_for()
    # The same point of the plot where it was (its axes do not move with the rule).
    assert abs(page.evaluate(TAP_POINT, [TRADEOFF, 0.1, 0.01])[1] - y) < 12


def test_the_url_holds_the_active_tab(page, server_url):
    """A shared address opens on the tab it was copied from (it opened on the first whatever
    the tab: a user's trial); a name that is no tab is reported."""
    load(page, server_url, "?tab=pick")
    page.locator(".att-op-table .tabulator-row").first.wait_for()
    assert page.locator(".att-op-table").first.is_visible()
    page.get_by_text("Brownian bridge").first.click()
    wait_for_query(page, "tab", "bridge")
    load(page, server_url, "?tab=plots")
    told = page.locator(".notyf__toast").filter(has_text="tab=plots is not a tab")
    told.first.wait_for()
    assert not page.locator(".att-op-table").first.is_visible()
    # The address then holds the tab shown (it kept tab=plots, told again on every reload),
    # and the browser's second sending of its address is not told again.
    wait_for_query(page, "tab", "walks")
    page.wait_for_timeout(1500)
    assert told.count() == 1


def test_a_refused_url_value_is_told_on_a_fresh_page(page, server_url):
    """A shared link's refused values are told as the page opens: they were reported while the
    page was being built, where a notification never shows, and not again when the browser sent
    its address a second time (a user's trial: nothing until an unrelated notification came).
    The address then holds the values in use."""
    load(page, server_url, "?seed=1.5&side=sideways")
    toasts = page.locator(".notyf__toast--error")
    toasts.filter(has_text="Permutation seed").first.wait_for(timeout=30_000)
    toasts.filter(has_text="Side").first.wait_for(timeout=30_000)
    wait_for_query(page, "seed", "0")
    wait_for_query(page, "side", "both")
    page.wait_for_timeout(1500)
    assert toasts.count() == 2, toasts.all_inner_texts()


def test_many_refused_url_values_are_told_in_one_notification(page, server_url):
    """A link of many bad values stacked a notification each over the page (sixteen for every
    control a user's trial spoiled): more than three of a kind come as one, which counts them
    and names the first six; the address then holds the values in use."""
    bad = "C=-4&gamma=abc&kernel=cubic&centering=x&seed=x&z=q&alpha=2&theta=9"
    load(page, server_url, f"?{bad}")
    toasts = page.locator(".notyf__toast--error")
    told = toasts.filter(has_text="8 errors while the page opened:")
    told.first.wait_for(timeout=30_000)
    wait_for_query(page, "seed", "0")
    page.wait_for_timeout(1500)
    assert toasts.count() == 1, toasts.all_inner_texts()
    text = told.first.inner_text()
    assert "gamma must be 'scale'" in text and "… and 2 more." in text, text


@pytest.mark.parametrize("theme", ["purple", "light", "Dark"])
def test_a_theme_the_page_does_not_have_is_told_not_a_blank_page(page, server_url, theme):
    """?theme=light (the other theme's natural name), ?theme=Dark or a typo raised a KeyError
    in Panel's template, and the page stayed blank (a teacher's trial of a shared link). Light
    is taken; another name (Dark too, which Panel's plots would draw in black ink on a dark page)
    is reported and the light page shown."""
    load(page, server_url, f"?theme={theme}")
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
    assert 0.2126 * red + 0.7152 * green + 0.0722 * blue > 160, background
    told = page.locator(".notyf__toast").filter(has_text=f"theme={theme} is not a theme")
    if theme == "light":
        page.wait_for_timeout(1500)
        assert told.count() == 0
    else:
        told.first.wait_for()


def test_switch_dataset(page, server_url):
    load(page, server_url)
    before = number(page, "stopped")
    page.get_by_label("Dataset").select_option("breast-cancer")
    after = wait_for_change(page, "stopped", before, timeout=120_000)
    assert "of 171" in after  # breast-cancer's test part
    wait_for_query(page, "dataset", "breast-cancer")


def test_malformed_upload_notifies_and_the_app_keeps_working(page, server_url, tmp_path):
    load(page, server_url)
    before = number(page, "evaluated")
    bad = tmp_path / "broken.csv"
    bad.write_text("label,a,b\n1,2\nx,y,z,w\n")
    page.locator(".att-data-upload input[type='file']").set_input_files(str(bad))
    toast = page.locator(".notyf__toast--error")
    toast.first.wait_for()
    assert "broken.csv" in toast.first.inner_text()
    # At the top right, over the header's end (at the bottom right a message covered the
    # tradeoff plot's axis, where a click had just been).
    box, width = toast.first.bounding_box(), page.viewport_size["width"]
    assert box["y"] < 150 and box["x"] + box["width"] > width - 60, box
    assert number(page, "evaluated") == before  # the previous state stays
    press(page, "delta", "PageUp", 3)
    wait_for_change(page, "evaluated", before)


def test_url_state_and_dark_theme(page, server_url):
    controls = {"boundary": "budget", "budget": 0.5, "side": "upper", "seed": 3}
    load(page, server_url, "?boundary=budget&budget=0.5&side=upper&seed=3&theme=dark")
    # The same controls in Python give the same numbers (the rule's controls are applied once
    # the seed's new walk is built).
    wait_for_numbers(page, expected_numbers(controls))
    assert "(50%)" in number(page, "evaluated")  # budget B = half the terms
    # The page is drawn dark: the body's computed background has a low luminance, and the
    # theme switch is off (the light page, by default, has it on and a light background).
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
    assert 0.2126 * red + 0.7152 * green + 0.0722 * blue < 80, background
    assert page.evaluate("() => !document.querySelector('#theme-switch').checked")


def test_a_hand_typed_url_is_applied_without_errors(page, server_url):
    """δ = 0.05 is not on the slider's grid and gamma arrives as a number: both are taken (δ
    snapped to the slider's grid), and nothing is reported — also after the browser has sent
    its address again on connecting."""
    load(page, server_url, "?boundary=constant&delta=0.05&gamma=0.05&side=lower")
    controls = {"boundary": "constant", "delta": 0.05, "gamma": "0.05", "side": "lower"}
    wait_for_numbers(page, expected_numbers(controls))
    page.wait_for_timeout(2000)  # a late notification would show by now
    assert page.locator(".notyf__toast--error").count() == 0
    # The address bar says what was applied: δ on the grid, not the typed 0.05.
    wait_for_query(page, "delta", str(rules_snap(0.05)))
    assert query(page)["boundary"] == "constant"


@pytest.mark.parametrize("seed", [9101, 9102, 9103])
def test_an_address_that_trains_a_model_lays_out_the_sidebar_for_its_rule(page, server_url, seed):
    """A seed no page has used trains a model, and the address's rule is applied once it is
    built: before the page had loaded, now and then (7 of 10 of a reviewer's loads; here 1 of
    2 before the fix), the widgets missed the change — the Rule said budget, but the sidebar
    kept the calibrated rule's δ and α sliders, no budget slider, and "How the scale was
    chosen". (Three seeds: each load would pass with the defect about a third of the time.)"""
    from tests.ui.test_picker import until

    load(page, server_url, f"?boundary=budget&seed={seed}")
    wait_for_numbers(page, expected_numbers({"boundary": "budget", "seed": seed}))
    budget = page.locator(".att-budget").first
    until(page, budget.is_visible, 60)
    for hidden in (".att-delta", ".att-alpha", ".att-calibration-details"):
        assert not page.locator(hidden).first.is_visible(), hidden
    page.locator(".att-guarantee").get_by_text("No guarantee for this rule.").first.wait_for()


def test_an_off_grid_url_value_is_replaced_by_the_value_in_use(page, server_url):
    """A hand-typed δ off the slider's grid and an over-precise θ: the numbers use the snapped
    values and the address bar then holds them, not what was typed."""
    load(page, server_url, "?boundary=constant&delta=0.0123456&theta=0.123456789")
    wait_for_query(page, "delta", str(rules_snap(0.0123456)))
    wait_for_query(page, "theta", "0.123457")
    controls = {"boundary": "constant", "delta": 0.0123456, "theta": 0.123456789}
    wait_for_numbers(page, expected_numbers(controls))


def rules_snap(delta: float) -> float:
    from attentive.app import rules

    return rules.snap_delta(delta)


def test_zoom_stays_on_delta_moves_and_refits_on_new_data(page, server_url):
    # The curved rule moves with every δ step; a calibrated one is a step function of δ (the
    # scan's chosen scale changes with the Clopper–Pearson bound's steps, not with each 2 %
    # move of δ: on the default problem it stays put from δ = 1 % to 1.29 %).
    load(page, server_url, "?boundary=curved")
    wait_for_plots(page)
    fitted = page.evaluate(RANGES, WALKS)
    zoom = [5.0, 20.0, -1.0, 0.0]
    assert fitted != zoom
    page.evaluate(ZOOM, [WALKS, zoom])  # what a box zoom does to the ranges
    before = number(page, "evaluated")
    press(page, "delta", "PageUp", 2)
    wait_for_change(page, "evaluated", before)
    page.wait_for_function(f"() => ({STAR})()[0] > 0")  # the plot data follows the numbers
    assert page.evaluate(RANGES, WALKS) == zoom
    before = number(page, "stopped")
    page.get_by_label("Dataset").select_option("breast-cancer")
    wait_for_change(page, "stopped", before, timeout=120_000)
    page.wait_for_function(
        f"(z) => JSON.stringify(({RANGES})({WALKS!r})) !== JSON.stringify(z)", arg=zoom
    )
    x0, x1 = page.evaluate(RANGES, WALKS)[:2]
    n_terms = evaluated_terms(number(page, "evaluated"))[1]
    assert n_terms < 300 and (x0, x1) == (0, n_terms)  # refit to breast-cancer's SVM


def test_click_on_the_tradeoff_plot_picks_delta(page, server_url):
    load(page, server_url, "?boundary=constant&delta=0.01")
    wait_for_plots(page)
    before = number(page, "evaluated")
    # The constant family's largest δ evaluates the fewest terms: click at the far left, error 0.
    x, y = page.evaluate(TAP_POINT, [TRADEOFF, 0.0, 0.0])
    page.mouse.click(x, y)
    page.wait_for_function("() => new URLSearchParams(location.search).get('delta') !== '0.01'")
    assert float(query(page)["delta"]) > 0.01
    after = wait_for_change(page, "evaluated", before)
    assert evaluated_terms(after)[0] < evaluated_terms(before)[0]


STOPS = """() => {
    for (const m of Bokeh.documents[0].all_models) {
        const d = m.data;
        if (d && d.example !== undefined && d.t !== undefined && d.s !== undefined) {
            return [Array.from(d.example), Array.from(d.t), Array.from(d.s)];
        }
    }
    return null;
}"""


def test_clicking_a_stop_focuses_that_example(page, server_url):
    load(page, server_url)
    wait_for_plots(page)
    page.wait_for_function(f"() => ({STOPS})() !== null && ({STOPS})()[0].length > 0")
    page.locator(".att-focus-view").get_by_text("Click a stop").first.wait_for()
    examples, ts, ss = page.evaluate(STOPS)
    x, y = page.evaluate(TAP_POINT, [WALKS, ts[0], ss[0]])
    # Bring the stop to the middle of the window (the main area scrolls), then click it.
    page.evaluate(f"() => document.getElementById('main').scrollBy(0, {y} - innerHeight / 2)")
    page.wait_for_function(
        f"() => Math.abs(({TAP_POINT})({[WALKS, ts[0], ss[0]]!r})[1] - innerHeight / 2) < 5"
    )
    x, y = page.evaluate(TAP_POINT, [WALKS, ts[0], ss[0]])
    page.mouse.click(x, y)
    focus = page.locator(".att-focus").first
    focus.wait_for()
    example = int(focus.get_attribute("data-example"))
    assert example in examples  # one of the drawn stops (stops may overlap at one point)
    t = int(focus.get_attribute("data-stop"))
    assert t == ts[examples.index(example)]  # where the walks plot shows it stopped
    n_terms = evaluated_terms(number(page, "evaluated"))[1]
    assert f"after {t:,} of {n_terms:,} terms" in focus.inner_text()
    assert page.locator(".att-focus img").count() == 1  # the digit
    assert page.locator(".att-strip img").count() == 16  # quickest and longest
    page.locator(".att-focus").first.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "focus.png"))


def test_brownian_bridge_tab_recomputes_on_a_slider_move(page, server_url):
    load(page, server_url)
    page.get_by_text("Brownian bridge", exact=True).first.click()
    summary = page.locator(".att-bridge p").first  # (the Markdown renders in a shadow root)
    summary.wait_for()
    before = summary.inner_text()
    assert "τ(δ = 0.05)" in before and "n = 1,000" in before
    press(page, "bridge-n", "PageUp", 2)  # more terms: a higher threshold, other walks
    deadline = time.monotonic() + 60
    while summary.inner_text() == before and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    after = summary.inner_text()
    assert "n = 1,000" not in after
    page.evaluate("() => document.getElementById('main').scrollBy(0, innerHeight * 0.75)")
    page.wait_for_timeout(300)  # the scroll, for the screenshot
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "bridge.png"))


def test_the_bridge_sliders_survive_the_theme_switch(page, server_url):
    """The theme switch reloads the page: the tab and its sliders come back from the URL (they
    went back to their defaults: a teacher's trial). A value the slider cannot take is told."""
    load(page, server_url, "?tab=bridge&bridge_n=500")
    summary = page.locator(".att-bridge p").first
    summary.wait_for()
    page.wait_for_function(
        "(el) => el.textContent.includes('n = 500 ')", arg=summary.element_handle()
    )
    press(page, "bridge-drift", "PageUp", 1)
    query = "() => new URLSearchParams(location.search).get('bridge_drift')"
    page.wait_for_function(query)
    page.wait_for_timeout(1000)  # (the keyboard's move settled)
    drift = float(page.evaluate(query))
    shown = page.locator(".att-bridge-drift .bk-slider-value").first
    assert drift > 0.05 and shown.inner_text() == f"{drift:.3f}"  # (its step's decimals)
    page.locator("#theme-switch").click()  # Panel's toggle: the page reloads, dark
    page.wait_for_function("() => new URLSearchParams(location.search).get('theme') === 'dark'")
    summary = page.locator(".att-bridge p").first
    summary.wait_for()
    assert "n = 500 " in summary.inner_text()
    shown = page.locator(".att-bridge-drift .bk-slider-value").first
    assert shown.inner_text() == f"{drift:.3f}"
    load(page, server_url, "?tab=bridge&bridge_n=7")
    page.locator(".notyf__toast").filter(has_text="bridge_n=7 is not a value").first.wait_for()
    page.locator(".att-bridge p").filter(has_text="n = 1,000 ").first.wait_for()


OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"
SIDEBAR_WIDTH = "() => document.getElementById('sidebar').getBoundingClientRect().width"
INTRO_WIDTH = """() => {
    const find = (root) => {
        for (const el of root.querySelectorAll('p')) {
            if (el.textContent.startsWith("A linear predictor's score")) return el;
        }
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) return h; }
        }
        return null;
    };
    return find(document).getBoundingClientRect().width;
}"""


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768), (390, 844)])
def test_layout_and_screenshots(browser, server_url, width, height):
    """No sideways overflow at a desktop, a small laptop and a phone size; on the phone the
    sidebar starts closed (the main area keeps the width) and the header button opens it.
    Screenshots (top of the page and the plots) are saved for a person to look at."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        load(page, server_url)
        wait_for_plots(page)
        page.wait_for_function(f"() => ({STAR})() !== null")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"dashboard-{width}x{height}.png"))
        assert page.evaluate(OVERFLOW) <= 0
        # The intro's lines use most of the main area's width (readable, not a word per line).
        main = width - page.evaluate(SIDEBAR_WIDTH)
        assert page.evaluate(INTRO_WIDTH) >= max(300, (main - 80) * 0.8)
        if width < 700:
            assert page.evaluate(SIDEBAR_WIDTH) < 5
            page.locator("#sidebar-button").click()
            page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() > 250")
            page.wait_for_timeout(400)  # the slide-in transition, for the screenshot
            page.screenshot(path=str(SHOTS / f"dashboard-{width}x{height}-sidebar.png"))
            page.locator("#sidebar-button").click()
            page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() < 5")
        else:
            assert page.evaluate(SIDEBAR_WIDTH) > 250
        page.get_by_text("Walks and rules").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"dashboard-{width}x{height}-plots.png"))
        page.evaluate("() => document.getElementById('main').scrollBy(0, window.innerHeight * 0.8)")
        page.wait_for_timeout(300)  # the scroll, for the screenshot
        page.screenshot(path=str(SHOTS / f"dashboard-{width}x{height}-plots-2.png"))
        assert page.evaluate(OVERFLOW) <= 0
    finally:
        context.close()
