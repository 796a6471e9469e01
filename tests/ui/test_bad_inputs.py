"""Bad files and models uploaded in the browser: a notification says what was wrong and the numbers
on screen stay those of the previous state.

One ``panel serve app.py`` per module, on 127.0.0.1 with a small upload limit
(``ATTENTIVE_MAX_UPLOAD_MB``) and downloads pointed at a closed port; one fresh page (session) per
case. Skipped without Chromium unless ``ATTENTIVE_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attentive.serve import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.filterwarnings("ignore::UserWarning")]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("ATTENTIVE_UI_SHOTS", "/tmp"))
UPLOAD_LIMIT_MB = 0.01  # 10 KiB: a small file is over it
NUMBERS = ".att-value"
TOAST = ".notyf__toast"


def _skip_or_fail(reason: str):
    if os.environ.get("ATTENTIVE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """URL of the dashboard served with a 10 KiB upload limit (stopped after the module)."""
    from attentive.serve import serving

    home = tmp_path_factory.mktemp("ui-bad-inputs")
    env = {
        **os.environ,
        "ATTENTIVE_DATA": str(home / "data"),
        "ATTENTIVE_MIRROR": "http://127.0.0.1:9/",
        "ATTENTIVE_MAX_UPLOAD_MB": str(UPLOAD_LIMIT_MB),
    }
    try:
        with serving(env=env, log_path=home / "server.log", timeout=90) as url:
            yield url
    except RuntimeError as exc:
        pytest.fail(f"{exc}: {(home / 'server.log').read_text()[-2000:]}")


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        _skip_or_fail(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the playwright package is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, served):
    """A fresh session showing the default dataset's numbers."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.goto(served)
    pg.locator(NUMBERS).first.wait_for()
    # The evaluator's timing follows the numbers (a thread started once the page has loaded),
    # or comes with them (a timing kept from an earlier session):
    # wait for it, so that "the numbers did not move" compares settled numbers.
    pg.locator(NUMBERS).filter(has_text="timing…").first.wait_for(state="hidden")
    yield pg
    context.close()


def _numbers(page) -> list[str]:
    return page.locator(NUMBERS).all_inner_texts()


def _upload(page, kind: str, name: str, data: bytes) -> None:
    accept = ".skops" if kind == "model" else ".csv"
    page.locator(f"input[type=file][accept*='{accept}']").set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}]
    )


def _expect_refused(page, before: list[str], *phrases: str, shot: Path | None = None) -> str:
    """Wait for an error notification holding every phrase; the numbers must not have moved."""
    toast = page.locator(TOAST).filter(has_text=phrases[0]).first
    toast.wait_for(state="visible", timeout=12_000)
    text = toast.inner_text()
    for phrase in phrases:
        assert phrase in text, f"{phrase!r} not in the notification {text!r}"
    if shot is not None:
        page.wait_for_timeout(800)  # let the toast's slide-in animation finish
        page.screenshot(path=str(shot))
    assert _numbers(page) == before
    assert page.get_by_label("Dataset").input_value() == "mnist-t10k-2v5"
    return text


# ----------------------------------------------------------------------------- files


def _csv(labels, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(labels), 3)) + np.asarray(labels, float)[:, None]
    return (
        pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=labels).to_csv(index=False).encode()
    )


def test_malformed_csv_is_refused(page, tmp_path):
    before = _numbers(page)
    _upload(page, "data", "broken.csv", b"a,b,label\n1,2,0\n3,oops,1\n4,5,1\n")
    _expect_refused(
        page, before, "broken.csv", "'oops' is not a number", "features must be numeric",
        shot=tmp_path / "malformed.png",
    )  # fmt: skip


def test_malformed_libsvm_is_refused_with_the_expected_form_shown_whole(page):
    """The refusal quotes the expected ``'<label> <index>:<value> ...'``: notifications render
    HTML, so those words used to vanish as tags."""
    before = _numbers(page)
    _upload(page, "data", "bad.libsvm", b"this is not libsvm\n1 1:0.5 2:1\n")
    text = _expect_refused(page, before, "bad.libsvm", "line 1", "is not a number")
    assert "<label> <index>:<value>" in text, text


def test_non_binary_labels_offer_the_positive_class(page):
    before = _numbers(page)
    _upload(page, "data", "three.csv", _csv(list(range(3)) * 30))
    _expect_refused(page, before, "three.csv", "labels are not binary", "choose a positive class")
    # The offered choice works: naming the positive class loads the file one-vs-rest.
    box = page.get_by_label("Positive class (uploads)")
    box.fill("2")
    box.press("Enter")
    # Playwright's text locator looks inside nested shadow roots, where Panel renders Markdown.
    page.get_by_text("positive class: label = 2").first.wait_for(timeout=30_000)
    assert _numbers(page) != before


def test_file_over_the_upload_limit_is_refused(page):
    before = _numbers(page)
    data = b"".join(f"{i % 2} 1:{i} 2:{i * 0.5}\n".encode() for i in range(2000))
    assert len(data) > UPLOAD_LIMIT_MB * 2**20
    _upload(page, "data", "big.libsvm", data)
    _expect_refused(page, before, "big.libsvm", "over the upload limit", "ATTENTIVE_MAX_UPLOAD_MB")


# ----------------------------------------------------------------------------- models


@pytest.fixture(scope="module")
def digits():
    from attentive.data import load_dataset

    return load_dataset("digits-2v5")


def test_pickle_model_is_refused(page, digits, tmp_path):
    from sklearn.svm import LinearSVC

    model = LinearSVC().fit(digits.X_train, digits.y_train)
    before = _numbers(page)
    _upload(page, "model", "model.pkl", pickle.dumps(model))
    _expect_refused(
        page, before, "pickle", "never unpickles", "skops", shot=SHOTS / "notification_pickle.png"
    )


def test_untrusted_skops_file_lists_the_types(page, digits):
    import skops.io as sio
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.svm import SVC

    model = make_pipeline(FunctionTransformer(abs), SVC()).fit(digits.X_train, digits.y_train)
    untrusted = sio.get_untrusted_types(data=sio.dumps(model))
    assert untrusted
    before = _numbers(page)
    _upload(page, "model", "abs.skops", sio.dumps(model))
    _expect_refused(page, before, "types attentive does not trust", *untrusted)


def test_model_with_another_feature_count_is_refused(page):
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    model = LogisticRegression().fit(rng.normal(size=(40, 30)), np.arange(40) % 2)
    before = _numbers(page)
    _upload(page, "model", "thirty.skops", sio.dumps(model))
    _expect_refused(page, before, "expects 30 features but the dataset has 784")
