"""The focus view: one test example (a stop clicked on the walks plot, :attr:`DashboardState.focus`)
with its numbers — where its walk stopped, the full score, whether the early decision agreed —
and, for image data (MNIST: 784 pixels in [0, 1]), the 28×28 digit; beside it a strip of the
test examples that stopped quickest and those that walked longest.

Nothing here computes a score: the numbers are the current rule's outcome
(:attr:`Figures.n_evaluated`, ``positive``, ``full_positive``) and ``full_score`` of the walk.
"""

from __future__ import annotations

import base64
import html
import struct
import zlib

import numpy as np
import panel as pn
import param

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
.att-thumb { text-align: center; font-size: 11px; }
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


class FocusView(pn.viewable.Viewer):
    """The clicked example and the strips of quickest-stopped and longest-walked examples."""

    state = param.ClassSelector(class_=DashboardState)

    def _html(self, figures, focus: int) -> str:
        s = self.state
        w = s.walks
        if figures is None or w is None or figures.n_evaluated.size == 0:
            return ""
        X = w.X_test
        images = is_image(X)
        n = figures.n_terms
        names = s.class_names
        parts = []
        if 0 <= focus < figures.n_evaluated.size:
            t = int(figures.n_evaluated[focus])
            early, full = bool(figures.positive[focus]), bool(figures.full_positive[focus])
            stop = (
                f"after {t:,} of {n:,} terms ({t / n:.0%})" if t < n else f"never: all {n:,} terms"
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
            parts.append(
                "<div class='att-hint'>Click a stop (×) on the walks plot to see that example "
                "here.</div>"
            )
        if images:
            quick, slow = extremes(figures.n_evaluated)
            for title, idx in (("Stopped quickest", quick), ("Walked longest", slow)):
                thumbs = "".join(
                    f"<div class='att-thumb'>{_img(X, int(i), 56)}"
                    f"<br>t = {int(figures.n_evaluated[i]):,}</div>"
                    for i in idx
                )
                parts.append(
                    f"<div class='att-strip-title'>{title} (terms evaluated t)</div>"
                    f"<div class='att-strip'>{thumbs}</div>"
                )
        return "".join(parts)

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown("**Focus on an example**", margin=(0, 10)),
            pn.pane.HTML(
                pn.bind(self._html, self.state.param.figures, self.state.param.focus),
                sizing_mode="stretch_width",
                stylesheets=[FOCUS_CSS],
                css_classes=["att-focus-view"],
            ),
            sizing_mode="stretch_width",
        )
