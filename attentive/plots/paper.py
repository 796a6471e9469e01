"""The paper's figures as HoloViews elements, defined once for notebooks, files and the docs.

Each function takes data frames (those of :mod:`attentive.experiments`, or the CSV files written
from them) and returns a HoloViews ``Overlay`` or ``Layout`` carrying options for both plotting
backends: Bokeh (interactive, in notebooks and the dashboard) and matplotlib (PNG files, through
``hv.save(obj, path, backend="matplotlib")``, see :func:`save_png`).
Which one draws is the caller's choice (``hv.extension("bokeh")`` in a notebook).

* Figure 3 (simulation): :func:`decision_error_plot`, :func:`stopping_time_plot`, :func:`figure3`.
* Figure 4 (a dataset): :func:`precision_recall_plot`, :func:`tradeoff_plot`, :func:`figure4`.

For the dashboard: :func:`tradeoff_plot` and :func:`precision_recall_plot` need only the frame
columns they name (``method``, ``mean_evaluated_fraction``, ``stop_error``; ``method``,
``recall``, ``precision``); the overlays they return go into ``pn.pane.HoloViews`` or are
returned from a function wrapped in ``hv.DynamicMap``. Every method other than ``attentive`` and
``budgeted`` in a tradeoff frame is drawn as a rule family, so a newly registered family appears
without edits here.
"""

from __future__ import annotations

from collections.abc import Mapping

import holoviews as hv
import numpy as np
import pandas as pd

__all__ = [
    "COLORS",
    "decision_error_plot",
    "figure3",
    "figure4",
    "precision_recall_plot",
    "save_png",
    "stopping_time_plot",
    "style",
    "tradeoff_plot",
]


def _load_backends() -> None:
    """Register both backends' options without changing the caller's current backend.

    Called by each figure function, not on import: HoloViews' plotting packages import Panel.
    """
    if {"bokeh", "matplotlib"} <= set(hv.Store.loaded_backends()):
        return
    current = hv.Store.current_backend
    import holoviews.plotting.bokeh
    import holoviews.plotting.mpl  # noqa: F401

    hv.Store.set_current_backend(current)


COLORS = {"full": "#d62728", "attentive": "#1f77b4", "budgeted": "#2ca02c"}
FAMILY_COLORS = ("#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf")
_DASH = {"solid": ("solid", "-"), "dashed": ("dashed", "--"), "dotted": ("dotted", ":")}
_MARKER = {"o": "circle", "s": "square", "^": "triangle", "v": "inverted_triangle"}
_BOKEH_SIZE = {"width": 620, "height": 420}


def style(element, color: str, *, width: float = 1.5, dash: str = "solid", alpha: float = 1.0):
    """Line options for both backends (Bokeh and matplotlib name them differently)."""
    _load_backends()
    bokeh_dash, mpl_dash = _DASH[dash]
    return element.opts(
        color=color, line_width=width, line_dash=bokeh_dash, alpha=alpha, backend="bokeh"
    ).opts(color=color, linewidth=width, linestyle=mpl_dash, alpha=alpha, backend="matplotlib")


def _markers(element, color: str, marker: str = "o", size: float = 6, hollow: bool = False):
    _load_backends()
    bokeh = {"color": color, "marker": _MARKER[marker], "size": size}
    mpl = {"color": color, "marker": marker, "s": size**2}
    if hollow:
        bokeh.update(fill_alpha=0, line_width=2)
        mpl.update(facecolors="none", edgecolors=color, linewidth=1.5)
    return element.opts(**bokeh, backend="bokeh").opts(**mpl, backend="matplotlib")


def _panel(overlay, *, title: str, xlabel: str, ylabel: str, legend: str, height=None, **common):
    """Axis, legend and size options shared by every panel. ``height``: Bokeh draws the panel at
    that height and the width of its container (the dashboard) instead of a fixed size."""
    _load_backends()
    size = _BOKEH_SIZE if height is None else {"height": int(height), "responsive": True}
    return (
        overlay.opts(
            title=title,
            xlabel=xlabel,
            ylabel=ylabel,
            show_grid=True,
            legend_position=legend,
            **common,
        )
        .opts(**size, legend_opts={"label_text_font_size": "8pt"}, backend="bokeh")
        .opts(
            aspect=1.45,
            fontsize={"legend": 7, "title": 10, "labels": 9},
            backend="matplotlib",
        )
    )


def _layout(panels, cols: int):
    """Panels side by side (``cols``) with independent axes, at a readable size for files."""
    return (
        hv.Layout(panels)
        .cols(cols)
        .opts(shared_axes=False)
        .opts(fig_size=200, sublabel_format="", tight=True, backend="matplotlib")
    )


def _hline(y: float, xlim: tuple[float, float], label: str, kdims, vdims):
    # A two-point curve, not hv.HLine, so that it has a legend entry.
    return hv.Curve(([xlim[0], xlim[1]], [y, y]), kdims, vdims, label=label)


# ----------------------------------------------------------------------------- Figure 4


def precision_recall_plot(
    pr: pd.DataFrame,
    labels: Mapping[str, str] | None = None,
    title="",
    *,
    colors: Mapping[str, str] | None = None,
    height: int | None = None,
):
    """Precision–recall step curves, one per ``method`` of ``pr`` (``full`` drawn wide under the
    others so that it stays visible where they coincide with it).

    ``labels`` maps a method to its legend text (default: the method); ``colors`` a method to its
    colour (default :data:`COLORS`); ``height`` as in :func:`decision_error_plot`.
    """
    _load_backends()
    labels = dict(labels or {})
    palette = {**COLORS, **(colors or {})}
    curves = []
    for method, rows in pr.groupby("method", sort=False):
        curve = hv.Curve(
            (rows["recall"].to_numpy(), rows["precision"].to_numpy()),
            "recall",
            "precision",
            label=labels.get(method, method),
        ).opts(interpolation="steps-post")
        full = method == "full"
        color = palette.get(method, "#7f7f7f")
        curves.append(
            (not full, style(curve, color, width=4 if full else 1.8, alpha=0.55 if full else 1.0))
        )
    curves.sort(key=lambda c: c[0])  # full first, underneath
    overlay = hv.Overlay([c for _, c in curves])
    return _panel(
        overlay,
        title=title or "precision–recall",
        xlabel="recall",
        ylabel="precision",
        legend="bottom_left",
        xlim=(0, 1.01),
        height=height,
    )


def tradeoff_plot(
    tradeoff: pd.DataFrame,
    *,
    point: Mapping | None = None,
    comparison: Mapping | None = None,
    term_name: str = "terms",
    title: str = "computation / stop-error tradeoff",
):
    """Stop-error against the mean fraction of terms evaluated: budgeted (B = 1..n), attentive
    (the constant-τ sweep), every rule family in the frame (its scales z), the full model,
    ``point`` (``mean_evaluated_fraction``, ``stop_error``: the precision–recall operating point)
    and the paper's 30% limit with the stop-error below which attentive beats budgeted
    (``comparison``: ``limit``, ``beats_below``, ``ever_worse``)."""
    _load_backends()
    kd, vd = "mean_evaluated_fraction", "stop_error"
    xlim = (0.0, 1.02)
    layers = []

    def curve(rows, label):
        rows = rows.sort_values(kd, kind="stable")
        return hv.Curve((rows[kd].to_numpy(), rows[vd].to_numpy()), kd, vd, label=label)

    for i, (method, rows) in enumerate(
        (m, r) for m, r in tradeoff.groupby("method", sort=False) if m not in COLORS
    ):
        color = FAMILY_COLORS[i % len(FAMILY_COLORS)]
        layers.append(style(curve(rows, f"{method} family (z from 6 to −6)"), color, width=1.2))
    if (tradeoff["method"] == "budgeted").any():
        rows = tradeoff[tradeoff["method"] == "budgeted"]
        layers.append(style(curve(rows, "budgeted (B = 1..n)"), COLORS["budgeted"], width=1.2))
    if (tradeoff["method"] == "attentive").any():
        rows = tradeoff[tradeoff["method"] == "attentive"]
        label = "attentive (τ from min S_t to θ_S)"
        layers.append(style(curve(rows, label), COLORS["attentive"], width=2.5))
    layers.append(
        _markers(hv.Scatter(([1.0], [0.0]), kd, vd, label="full"), COLORS["full"], "o", 8)
    )
    if point is not None:
        op = hv.Scatter(
            ([point["mean_evaluated_fraction"]], [point["stop_error"]]),
            kd,
            vd,
            label="operating point of the PR panel",
        )
        layers.append(_markers(op, COLORS["attentive"], "s", 11, hollow=True))
    if comparison is not None:
        limit = comparison["limit"]
        line = _hline(limit, xlim, f"{limit:.0%} stop-error (paper)", kd, vd)
        layers.append(style(line, "#7f7f7f", width=1, dash="dotted"))
        if comparison.get("ever_worse"):
            s = comparison["beats_below"]
            line = _hline(s, xlim, f"attentive ≤ budgeted below {s:.1%}", kd, vd)
            layers.append(style(line, COLORS["attentive"], width=1, dash="dashed"))
    return _panel(
        hv.Overlay(layers),
        title=title,
        xlabel=f"mean fraction of {term_name} evaluated",
        ylabel="stop-error  #(stopped ∧ full positive) / #full positive",
        legend="top_right",
        xlim=xlim,
        ylim=(-0.02, 1.02),
    )


def figure4(tradeoff: pd.DataFrame, pr: pd.DataFrame, summary: Mapping):
    """The paper's Figure 4 for one dataset: precision–recall on top, the tradeoff below.

    ``summary`` is the experiment's summary (``summary.json``): it names the dataset, its terms
    and the operating point.
    """
    p = summary["operating_point"]
    ap = summary.get("average_precision", {})
    labels = {
        "full": f"full ({summary['n_terms']} {summary['term_name']})",
        "attentive": f"attentive τ = {p['tau']:.3g} ({p['mean_evaluated_fraction']:.0%} evaluated)",
        "budgeted": f"budgeted B = {p['budget']}",
    }
    labels = {k: f"{v}, AP {ap[k]:.3f}" if k in ap else v for k, v in labels.items()}
    top = precision_recall_plot(
        pr,
        labels,
        title=f"{summary['dataset']}: precision–recall on {summary['n_test']} test examples",
    )
    bottom = tradeoff_plot(
        tradeoff, point=p, comparison=summary.get("comparison"), term_name=summary["term_name"]
    )
    return _layout([top, bottom], cols=1)


# ----------------------------------------------------------------------------- Figure 3


def decision_error_plot(
    decision_error: pd.DataFrame, mark: float | None = None, height: int | None = None
):
    """Actual against required decision error on log–log axes, one series per n, with ± 2
    standard errors; δ values where no path crossed are drawn as hollow triangles at half a path.
    The reference ``actual = required`` is sampled densely so that it is y = x on any axes.
    ``mark``: a required error to mark with a vertical line (the dashboard's current δ);
    ``height``: drawn (Bokeh) at that height and its container's width, instead of a fixed size."""
    _load_backends()
    kd, vd = "required", "actual"
    layers = []
    markers = "os^v"
    lo = float(decision_error[kd].min())
    for i, (n, rows) in enumerate(decision_error.groupby("n", sort=True)):
        color = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")[i % 4]
        paths = int(rows["paths_below_zero"].iloc[0])
        seen = rows[rows[vd] > 0]
        label = f"actual ± 2 s.e., n = {n} ({paths:,} paths)"
        x, y = seen[kd].to_numpy(), seen[vd].to_numpy()
        err = 2 * seen["stderr"].to_numpy()
        # log axes: the lower error bar stops short of zero
        err_lo = np.minimum(err, 0.9 * y)
        layers.append(
            style(hv.ErrorBars((x, y, err_lo, err), kd, [vd, "lo", "hi"]), color, width=1).opts(
                edgecolor=color, capsize=2, backend="matplotlib"
            )
        )
        layers.append(style(hv.Curve((x, y), kd, vd, label=label), color))
        layers.append(_markers(hv.Scatter((x, y), kd, vd), color, markers[i % 4], 5))
        none = rows[rows[vd] <= 0]
        if len(none):
            ghost = hv.Scatter(
                (none[kd].to_numpy(), np.full(len(none), 0.5 / paths)),
                kd,
                vd,
                label=f"n = {n}: none crossed",
            )
            layers.append(_markers(ghost, color, "v", 7, hollow=True))
    grid = np.geomspace(lo, 0.5, 200)
    layers.append(
        style(hv.Curve((grid, grid), kd, vd, label="actual = required"), "black", dash="dashed")
    )
    if mark is not None:
        layers.append(style(hv.VLine(float(mark)), "#CC79A7", width=2, dash="dotted"))
    return _panel(
        hv.Overlay(layers),
        title="(a) Constant-STST is conservative",
        xlabel="required decision error δ",
        ylabel="actual P(cross τ before n | S_n < 0)",
        legend="top_left",
        logx=True,
        logy=True,
        height=height,
    )


def stopping_time_plot(
    stopping_time: pd.DataFrame, delta: float | None = None, height: int | None = None
):
    """Mean stopping time against n on log–log axes: ``E[T]`` (the paper's Theorem 2) and
    ``E[min(T, n)]`` (what a predictor pays), each with its least-squares line and slope, and n.
    ``height`` as in :func:`decision_error_plot`."""
    _load_backends()
    kd, vd = "n", "mean stopping time"
    ns = stopping_time["n"].to_numpy(dtype=np.float64)
    dense = np.geomspace(ns.min(), ns.max(), 100)
    layers = []
    for column, label, color in (
        ("mean_stopping_time", "E[T]  (Theorem 2)", "#1f77b4"),
        ("mean_stopping_time_truncated", "E[min(T, n)]  (predictor pays)", "#ff7f0e"),
    ):
        times = stopping_time[column].to_numpy(dtype=np.float64)
        slope, intercept = np.polyfit(np.log(ns), np.log(times), 1)
        layers.append(_markers(hv.Scatter((ns, times), kd, vd, label=label), color, "o", 7))
        fit = hv.Curve(
            (dense, np.exp(intercept) * dense**slope), kd, vd, label=f"fit: slope {slope:.2f}"
        )
        layers.append(style(fit, color, width=1))
    layers.append(
        style(
            hv.Curve((dense, dense), kd, vd, label="n (full evaluation)"), "#7f7f7f", dash="dotted"
        )
    )
    if delta is None and "delta" in stopping_time:
        delta = float(stopping_time["delta"].iloc[0])
    return _panel(
        hv.Overlay(layers),
        title="(b) E[T] grows like √n" + (f" (δ = {delta:g})" if delta else ""),
        xlabel="n (number of terms)",
        ylabel="mean stopping time",
        legend="top_left",
        logx=True,
        logy=True,
        height=height,
    )


def figure3(decision_error: pd.DataFrame, stopping_time: pd.DataFrame):
    """The paper's Figure 3: (a) required against actual decision error, (b) stopping time."""
    return _layout([decision_error_plot(decision_error), stopping_time_plot(stopping_time)], cols=2)


def save_png(figure, path, dpi: int = 120):
    """Render a HoloViews object to a PNG file through the matplotlib backend."""
    from pathlib import Path

    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    _load_backends()
    path = Path(path)
    hv.save(figure, path, backend="matplotlib", dpi=dpi)
    import matplotlib.pyplot as plt

    plt.close("all")
    return path
