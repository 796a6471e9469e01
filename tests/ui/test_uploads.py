"""Uploaded models described truthfully and the fade that clears (issue 32, "What must exist"
5 and 6), in the served dashboard: no guarantee for a model fitted elsewhere, its own parameters
in the sidebar, a dataset switch that drops it with a notification, an exported classifier taken
back, a message for an empty file, refused files cleared from the input, one notification for a
reloaded upload address, and the guarantee box unfaded after every rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.test_dashboard import load, number, wait_for_change, wait_for_plots, wait_for_query
from tests.ui.test_picker import until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOAST = ".notyf__toast"
OPACITY = """() => {
    const find = (root) => {
        const hit = root.querySelector('.att-calibration');
        if (hit) return hit;
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) return h; }
        }
        return null;
    };
    const el = find(document);
    return el ? Number(getComputedStyle(el).opacity) : null;
}"""


def upload(page, kind: str, name: str, data: bytes) -> None:
    css = ".att-model-upload" if kind == "model" else ".att-data-upload"
    page.locator(f"{css} input[type=file]").set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}]
    )


def toasts(page, text: str) -> int:
    return page.locator(TOAST).filter(has_text=text).count()


def test_the_guarantee_box_fade_clears_after_every_rebuild(page, server_url):
    """While a new model trains the box is faded; after the seed's model, a dataset switch and
    a switch back it is fully opaque again each time (before, it stayed at 0.45 for good)."""
    load(page, server_url)
    # The first render's deferred plots in place before the first rebuild (a rebuild that
    # replaces them while Bokeh is still inserting them can raise in the page).
    wait_for_plots(page)
    page.locator(".att-guarantee").first.wait_for()
    assert page.evaluate(OPACITY) == 1
    for change in (
        lambda: (page.locator(".att-seed input").fill("5"), page.locator(".att-seed input").press("Enter")),
        lambda: page.get_by_label("Dataset").select_option("breast-cancer"),
        lambda: page.get_by_label("Dataset").select_option("mnist-t10k-2v5"),
    ):  # fmt: skip
        before = number(page, "evaluated")
        change()
        wait_for_change(page, "evaluated", before, timeout=120_000)
        until(page, lambda: page.evaluate(OPACITY) == 1, timeout=30)


def test_an_uploaded_model_gets_no_guarantee_shows_its_parameters_and_goes_on_a_switch(
    page, server_url
):
    import skops.io as sio
    from sklearn.svm import SVC

    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-2v5")
    model = SVC(C=3.0, gamma=0.02).fit(ds.X_train[:500], ds.y_train[:500])
    load(page, server_url)
    before = number(page, "evaluated")
    upload(page, "model", "svc.skops", sio.dumps(model))
    wait_for_change(page, "evaluated", before, timeout=120_000)
    page.locator(".att-guarantee").get_by_text(
        "No guarantee for an uploaded model"
    ).first.wait_for()
    shown = page.locator("p").filter(has_text="Uploaded model").first
    shown.wait_for()
    # Its own parameters, each once (the description names them: not repeated after it).
    until(page, lambda: "C=3" in shown.inner_text() and "gamma=0.02" in shown.inner_text())
    assert shown.inner_text().count("gamma") == 1 and "kernel='rbf'" in shown.inner_text()
    # Another dataset: the model is dropped, with a notification, and that dataset's own trains.
    page.get_by_label("Dataset").select_option("mnist-t10k-3v8")
    page.locator(TOAST).filter(has_text="svc.skops").first.wait_for()
    wait_for_query(page, "dataset", "mnist-t10k-3v8")
    page.locator(".att-guarantee").get_by_text("Guarantee:").first.wait_for(timeout=120_000)
    assert page.get_by_text("Uploaded model").count() == 0


def test_an_exported_classifier_uploads_back_and_empty_or_refused_files_are_told_and_cleared(
    page, server_url
):
    load(page, server_url)
    page.get_by_label("Rule", exact=True).select_option("constant")
    wait_for_query(page, "boundary", "constant")
    shown = number(page, "evaluated")
    with page.expect_download(timeout=120_000) as download:
        page.get_by_text("AttentiveClassifier (skops)").first.click()
    blob = Path(download.value.path()).read_bytes()
    upload(page, "model", "attentive_classifier.skops", blob)
    page.locator(".att-model-params").get_by_text("Uploaded model").first.wait_for(timeout=120_000)
    until(page, lambda: number(page, "evaluated") == shown)
    assert toasts(page, "error") == 0 or page.locator(".notyf__toast--error").count() == 0
    # An empty file is told; a refused file does not stay shown in its input.
    upload(page, "data", "empty.csv", b"")
    page.locator(TOAST).filter(has_text="empty.csv is empty").first.wait_for()
    upload(page, "data", "broken.csv", b"a,b,label\n1,2,0\n3,oops,1\n")
    page.locator(TOAST).filter(has_text="broken.csv").first.wait_for()
    files = page.locator(".att-data-upload input[type=file]").first
    until(page, lambda: files.evaluate("(el) => el.files.length") == 0)


def test_reloading_an_upload_address_notifies_once(page, server_url):
    """An address naming an uploaded file (uploads are not kept across a reload) is told once,
    not again when the browser sends its address a second time as it connects."""
    load(page, server_url, "?dataset=file%3A+good.csv&seed=2")
    page.locator(TOAST).filter(has_text="upload it again").first.wait_for()
    page.wait_for_timeout(4000)
    assert toasts(page, "upload it again") == 1
