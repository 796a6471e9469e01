"""The focus view: the clicked example's numbers are the current rule's, the digit is the row's
pixels, and the strips are the quickest-stopped and longest-walked test examples."""

from __future__ import annotations

import dataclasses
import struct
import zlib

import numpy as np
import pytest

from attentive.app.focus import FocusView, digit_png, extremes
from attentive.app.state import DashboardState

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


def decode_grey_png(data: bytes) -> np.ndarray:
    """Pixels of an 8-bit grayscale PNG with filter 0 on every row (what digit_png writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0]
        assert crc == zlib.crc32(kind + body)
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h = size
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, w + 1)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:]


def test_digit_png_holds_the_pixels():
    rng = np.random.default_rng(0)
    pixels = rng.random(784)
    grey = decode_grey_png(digit_png(pixels))
    np.testing.assert_array_equal(grey, np.round(255 * (1 - pixels)).reshape(28, 28))


def test_extremes_are_the_quickest_and_the_longest():
    n_evaluated = np.array([5, 1, 9, 1, 7, 3])
    quick, slow = extremes(n_evaluated, k=2)
    assert list(quick) == [1, 3] and list(slow) == [2, 4]


def test_focus_shows_the_current_rules_numbers_for_the_clicked_example():
    state = DashboardState()
    view = FocusView(state=state)
    assert "Click a stop" in view._html(state.outcome(), state.focus, state.walks)
    f = state.outcome()
    example = int(state.walk_figure().stops["example"].iloc[0])  # a click on the first stop
    state.focus = example
    text = view._html(f, state.focus, state.walks)
    t = int(f.n_evaluated[example])
    assert f"data-example='{example}' data-stop='{t}'" in text
    assert f"after {t:,} of {f.n_terms:,} terms" in text
    # Its share as the cards write it: one term short of all is never 100 % (a teacher's trial
    # read "after 513 of 514 terms (100%)").
    n, short = f.n_terms, f.n_evaluated.copy()
    short[example] = n - 1
    one_short = view._html(dataclasses.replace(f, n_evaluated=short), state.focus, state.walks)
    assert f"after {n - 1:,} of {n:,} terms (99." in one_short and "(100%)" not in one_short
    assert f"{float(state.walks.full_score[example]):.4g}" in text
    agreed = bool(f.positive[example]) == bool(f.full_positive[example])
    assert ("<b>yes</b>" in text) == agreed
    assert text.count("<img") == 1 + 2 * 8  # the digit and two strips
    # Each thumbnail names its example for a click (the view sends it back as the focus).
    quick, slow = extremes(f.n_evaluated)
    for i in (*quick, *slow):
        assert f"data-pick='{int(i)}'" in text
    # A new walk (here: another seed) forgets the focus.
    state.set_controls(seed=5)
    assert state.focus == -1


@pytest.mark.parametrize("dataset", ["mnist-t10k-2v5", "synthetic"])
def test_the_hint_offers_thumbnails_only_where_there_are_some(dataset):
    """Rows that are not images get no strips of thumbnails; the hint said to click one."""
    state = DashboardState(dataset=dataset)
    text = FocusView(state=state)._html(state.outcome(), -1, state.walks)
    images = "<img" in text
    assert images == (dataset != "synthetic")
    assert "Click a stop" in text and ("thumbnail" in text) == images
