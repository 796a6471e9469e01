"""The focus view: one test example (a stop clicked on the walks plot, or a thumbnail clicked,
:attr:`DashboardState.focus`) with its numbers — where its walk stopped, the full score, whether
the early decision agreed — and, for image data (MNIST: 784 pixels in [0, 1]), the 28×28 digit;
beside it a strip of the test examples that stopped quickest and those that walked longest. When
the focus changes the view scrolls itself into sight (the walks plot is above it).

Nothing here computes a score: the numbers are the current rule's outcome
(:meth:`DashboardState.outcome`: ``n_evaluated``, ``positive``, ``full_positive``) and
``full_score`` of the walk. The view is a small :class:`panel.custom.JSComponent`: its HTML comes
from Python, and a click on a thumbnail sends the example back.
"""

from __future__ import annotations

import base64
import html
import struct
import zlib
from typing import ClassVar

import numpy as np
import panel as pn
import param
from panel.custom import JSComponent

from attentive.app.numbers import share
from attentive.app.reactive import bind
from attentive.app.state import DashboardState

__all__ = ["FocusView", "digit_png", "extremes"]

SIDE = 28  # MNIST images are 28×28
N_THUMBS = 8

FOCUS_CSS = """
.att-focus { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.att-focus img, .att-strip img { image-rendering: pixelated; border: 1px solid #8886; }
.att-focus table { font-size: 13px; border-collapse: collapse; }
.att-focus td { padding: 2px 8px; border-bottom: 1px solid #8883; }
.att-strip { display: flex; flex-wrap: wrap; gap: 6px; }
.att-thumb { text-align: center; font-size: 11px; cursor: pointer; border-radius: 4px; }
.att-thumb:hover { outline: 2px solid #CC79A7; }
.att-thumb.att-current { outline: 2px solid #D55E00; }
.att-strip-title { font-size: 13px; font-weight: 600; margin: 8px 0 4px; }
.att-hint { opacity: 0.75; font-size: 13px; }
"""


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def digit_png(pixels: np.ndarray) -> bytes:
    """A grayscale PNG of a 28×28 image given as 784 values in [0, 1] (ink dark on white)."""
    img = np.asarray(pixels, dtype=np.float64).reshape(SIDE, SIDE)
    grey = (255 * (1 - np.clip(img, 0, 1))).round().astype(np.uint8)
    raw = b"".join(b"\x00" + row.tobytes() for row in grey)  # filter type 0 per row
    header = struct.pack(">IIBBBBB", SIDE, SIDE, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(raw))
        + _png_chunk(b"IEND", b"")
    )


def is_image(X) -> bool:
    """Whether the rows of ``X`` are 28×28 images with pixel values in [0, 1]."""
    return X.shape[1] == SIDE * SIDE and float(X.min()) >= 0 and float(X.max()) <= 1


def extremes(n_evaluated: np.ndarray, k: int = N_THUMBS) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` test examples that stopped quickest and the ``k`` that walked longest
    (ties broken by index, so the strip is stable)."""
    order = np.argsort(np.asarray(n_evaluated), kind="stable")
    return order[:k], order[::-1][:k]


def _row(X, i: int) -> np.ndarray:
    row = X[i]
    return np.asarray(row.todense() if hasattr(row, "todense") else row).ravel()


def _img(X, i: int, size: int) -> str:
    data = base64.b64encode(digit_png(_row(X, i))).decode()
    return (
        f"<img src='data:image/png;base64,{data}' width='{size}' height='{size}' alt='example {i}'>"
    )


class FocusPane(JSComponent):
    """HTML from Python; a click on an element with ``data-pick`` sets :attr:`picked`; a new
    :attr:`scroll` value brings the view into sight."""

    html = param.String(default="")
    picked = param.Integer(default=-1)
    scroll = param.Integer(default=0)

    _stylesheets: ClassVar[list[str]] = [FOCUS_CSS]
    _esm = """
    export function render({ model, el }) {
      const box = document.createElement('div');
      box.className = 'att-focus-view';
      const draw = () => { box.innerHTML = model.html; };
      draw();
      model.on('html', draw);
      box.addEventListener('click', (event) => {
        const hit = event.target.closest('[data-pick]');
        if (hit) { model.picked = Number(hit.dataset.pick); }
      });
      model.on('scroll', () => el.scrollIntoView({ behavior: 'smooth', block: 'start' }));
      el.appendChild(box);
    }
    """


class FocusView(pn.viewable.Viewer):
    """The clicked example and the strips of quickest-stopped and longest-walked examples."""

    state = param.ClassSelector(class_=DashboardState)

    def _html(self, outcome, focus: int, walks) -> str:
        w = walks
        if outcome is None or w is None or outcome.n_evaluated.size == 0:
            return ""
        X = w.X_test
        images = is_image(X)
        n = outcome.n_terms
        names = w.class_names
        parts = []
        if 0 <= focus < outcome.n_evaluated.size:
            t = int(outcome.n_evaluated[focus])
            early, full = bool(outcome.positive[focus]), bool(outcome.full_positive[focus])
            stop = (
                # (As the cards write it: 513 of 514 is 99.8 %, never 100 %.)
                f"after {t:,} of {n:,} terms ({share(t, n)})"
                if t < n
                else f"never: all {n:,} terms"
            )
            agreed = "yes" if early == full else "no (a disagreement)"
            rows = [
                ("stopped", stop),
                ("full score f(x)", f"{float(w.full_score[focus]):.4g}"),
                ("early decision", names[early]),
                ("full decision", names[full]),
                ("agreed", agreed),
                ("true label", names[bool(w.y_test[focus])]),
            ]
            table = "".join(
                f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                for a, b in rows
            )
            picture = _img(X, focus, 140) if images else ""
            parts.append(
                f"<div class='att-focus' data-example='{focus}' data-stop='{t}'>{picture}"
                f"<div><div class='att-strip-title'>Test example {focus:,}</div>"
                f"<table>{table}</table></div></div>"
            )
        else:
            thumbnails = ", or a thumbnail below," if images else ""
            parts.append(
                f"<div class='att-hint'>Click a stop (×) on the walks plot{thumbnails} to see "
                "that example here.</div>"
            )
        if images:
            quick, slow = extremes(outcome.n_evaluated)
            for title, idx in (("Stopped quickest", quick), ("Walked longest", slow)):
                thumbs = "".join(
                    f"<div class='att-thumb{' att-current' if int(i) == focus else ''}' "
                    f"data-pick='{int(i)}' title='test example {int(i):,}: click to see it'>"
                    f"{_img(X, int(i), 56)}<br>t = {int(outcome.n_evaluated[i]):,}</div>"
                    for i in idx
                )
                parts.append(
                    f"<div class='att-strip-title'>{title} (terms evaluated t; click one)</div>"
                    f"<div class='att-strip'>{thumbs}</div>"
                )
        return "".join(parts)

    def __panel__(self):
        s = self.state
        pane = FocusPane(
            html=self._html(s.outcome(), s.focus, s.walks),
            sizing_mode="stretch_width",
            css_classes=["att-focus-view"],
        )
        bind(lambda *a: setattr(pane, "html", self._html(*a)), s, "outcome", "focus", "walks", watch=True)  # fmt: skip

        def picked(event) -> None:
            if event.new >= 0:
                s.focus = event.new
                pane.picked = -1  # the same thumbnail clicked again is a new pick

        pane.param.watch(picked, "picked")
        # A new focus (a stop or a thumbnail clicked) brings the view into sight.
        s.param.watch(
            lambda event: setattr(pane, "scroll", pane.scroll + 1) if event.new >= 0 else None,
            "focus",
        )
        return pn.Column(
            pn.pane.Markdown("**Focus on an example**", margin=(0, 10)),
            pane,
            sizing_mode="stretch_width",
        )
