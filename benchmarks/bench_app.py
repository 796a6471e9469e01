"""Dashboard speed on its default (MNIST t10k 2 vs 5, calibrated rule): server time of the first
render and of a slider move, and the first page render in a browser.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_app.py            # everything
    PYTHONPATH=. .venv/bin/python benchmarks/bench_app.py --no-browser
    PYTHONPATH=. .venv/bin/python benchmarks/bench_app.py --first-render 3   # 3. only, 3 times

1. First render, server side: a fresh session's :class:`DashboardState` with empty caches (load the
   dataset, train the SVM, fit the classifier, build the walk, calibrate, compute the figure data),
   then a second session on the warm caches.
2. Slider moves, server side: ``set_controls`` for δ (the calibrated rule and a family), θ, the
   trajectory count and the target disagreement, each through the state *and* the four plots and
   the numbers attached to a Bokeh document (what the served loop does before it sends the patch);
   the patch size a browser receives. The evaluator's wall-clock timing, which the served app runs
   in a thread after the patch, is timed on its own.
3. ``panel serve app.py`` started cold, then the time until headless Chromium shows the headline
   numbers, the four plots, and every rule's tradeoff (its curves and the table follow the
   numbers); a second page on the warm server.
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def ms(xs) -> str:
    return f"median {1e3 * statistics.median(xs):7.1f} ms  (min {1e3 * min(xs):6.1f}, n={len(xs)})"


def no_measure(job, done, fail) -> None:
    """A measure executor that skips the evaluator's timing (served, it runs in a thread)."""


def bench_first_render_server() -> None:
    from attentive.app import models, rules
    from attentive.app.state import DashboardState

    models.clear_caches()
    rules.clear_caches()
    t = time.perf_counter()
    state = DashboardState()
    cold = time.perf_counter() - t
    w = state.walks
    print(
        f"default: {state.dataset}, rule {state.boundary}, {w.n_terms:,} terms, "
        f"{w.S.shape[0]:,} test examples"
    )
    print(f"first render, server, empty caches (train + walk + calibrate + figures): {cold:.2f} s")
    warm = timed(DashboardState, 3)
    print(f"first render, server, a second session (warm caches):   {ms(warm)}")


def bench_moves() -> None:
    import panel as pn
    from bokeh.document import Document
    from bokeh.protocol import Protocol

    from attentive.app import rules
    from attentive.app.numbers import HeadlineNumbers
    from attentive.app.plots import PrecisionRecallView, TheoryView, TradeoffView, TrajectoryView
    from attentive.app.state import DashboardState

    pn.extension()
    state = DashboardState()
    state.measure_executor = no_measure
    doc = Document()
    views = [
        V(state=state) for V in (TrajectoryView, TradeoffView, PrecisionRecallView, TheoryView)
    ]
    for v in [*views, HeadlineNumbers(state=state)]:
        doc.add_root(pn.panel(v).get_root(doc))
    events = []
    doc.on_change(events.append)
    protocol = Protocol()

    def run(label: str, values, repeat: int) -> None:
        sizes = []
        cycle = itertools.cycle(values)

        def move():
            events.clear()
            state.set_controls(**next(cycle))
            if not events:  # nothing changed on the page
                sizes.append(0)
                return
            msg = protocol.create("PATCH-DOC", events)
            sizes.append(len(msg.content_json) + sum(len(b.to_bytes()) for b in msg._buffers))

        move()  # the first visit of each value fills the caches
        for _ in range(len(values) - 1):
            move()
        sizes.clear()
        t = timed(move, repeat)
        print(f"{label:<34} {ms(t)}; patch median {statistics.median(sizes) / 1e3:6.1f} kB")

    deltas = [0.005, 0.01, 0.02, 0.05, 0.1, 0.003, 0.03]
    run("δ move (calibrated)", [{"delta": d} for d in deltas], 21)
    run("α move (calibrated)", [{"alpha": a} for a in (0.1, 0.2, 0.01, 0.05)], 12)
    state.set_controls(boundary="constant")
    run("δ move (constant family)", [{"delta": d} for d in deltas], 21)
    run("trajectory count move", [{"n_trajectories": k} for k in (20, 60, 150, 300)], 12)
    state.set_controls(boundary="calibrated", delta=0.01)
    run("θ move (cached after first visit)", [{"theta": x} for x in (0.0, 0.1, -0.1)], 9)

    targets = itertools.cycle((0.005, 0.01, 0.02, 0.05))

    def target_move():
        state.target = next(targets)

    target_move()
    print(f"{'target disagreement (cheapest rule)':<34} {ms(timed(target_move, 8))}")
    current = rules.outcome(state.walks, state.rule)
    m = timed(lambda: rules.measure(state.walks, state.rule, current), 3)
    print(f"evaluator timing (thread, after)   {ms(m)}")


def bench_holoviews_streams() -> None:
    """The same updates through HoloViews ``Pipe`` streams and through the in-place Bokeh views.

    For the walks plot (the largest: up to 300 walks of up to 686 terms, the boundary, stops and
    the bridge band), the figure data of several δ values is computed once; then each δ step is
    applied (a) by the dashboard's view, which assigns only the sources whose columns changed,
    and (b) by one HoloViews ``DynamicMap`` per source fed by a ``Pipe`` with the same columns (a
    Curve per line, a Scatter for points) and sent only when its columns changed, rendered by
    ``pn.pane.HoloViews`` into the same kind of Bokeh document. Both are timed up to the
    serialised patch a browser would receive. The tradeoff plot, the other plot a δ move
    changes, is timed as the dashboard draws it and as benchmarks/holoviews_tradeoff.py draws
    the same plot with HoloViews.
    ``Buffer`` streams append rows to a window; a δ move replaces the stops and the boundary, so
    there is nothing for a Buffer to append. The precision–recall and theory plots do not change
    on a δ move of the calibrated rule (the first is drawn when the evaluator's timing arrives).
    Last, a move of the Brownian-bridge tab, whose error and stopping-time plots are the paper's
    HoloViews elements redrawn on every move.
    """
    import holoviews as hv
    import panel as pn
    from bokeh.document import Document
    from bokeh.protocol import Protocol

    from attentive.app.plots import TradeoffView, TrajectoryView
    from attentive.app.plots.base import same
    from attentive.app.plots.bridge import BridgeTab
    from attentive.app.state import DashboardState

    hv.extension("bokeh", logo=False)
    pn.extension()
    protocol = Protocol()
    state = DashboardState()
    state.measure_executor = no_measure
    figures = []
    for d in (0.005, 0.01, 0.02, 0.05, 0.1, 0.003, 0.03):
        state.set_controls(delta=d)
        figures.append(state.figures)

    def patch_size(events) -> int:
        if not events:
            return 0
        msg = protocol.create("PATCH-DOC", events)
        return len(msg.content_json) + sum(len(b.to_bytes()) for b in msg._buffers)

    def timed_steps(label: str, root, step, n_steps: int, warm: int) -> None:
        doc = Document()
        doc.add_root(root)
        events, sizes, times = [], [], []
        doc.on_change(events.append)
        for i in range(warm + n_steps):
            events.clear()
            t = time.perf_counter()
            step(i)
            size = patch_size(events)
            if i >= warm:
                times.append(time.perf_counter() - t)
                sizes.append(size)
        print(f"{label:<40} {ms(times)}; patch median {statistics.median(sizes) / 1e3:6.1f} kB")

    def element(name: str, data: dict):
        cols = [c for c, v in data.items() if np.asarray(v).dtype.kind == "f"]
        x, ys = cols[0], cols[1:] or cols[:1]
        if name in ("stops", "point", "budgeted", "sweep"):
            return hv.Scatter(data, kdims=[x], vdims=ys)
        return hv.Overlay([hv.Curve(data, kdims=[x], vdims=[y]) for y in ys])

    def compare(View) -> None:
        k = len(figures)
        view = View(state=state)
        root = pn.panel(view).get_root(Document())  # builds the figure
        datas = [view._data(f) for f in figures]
        timed_steps(
            f"{View.__name__} δ step, in-place Bokeh",
            root,
            lambda i: view._refresh(figures[i % k]),
            2 * k,
            k,
        )
        pipes = {name: hv.streams.Pipe(data=cols) for name, cols in datas[0].items()}
        maps = [
            hv.DynamicMap(lambda data, name=name: element(name, data), streams=[pipe])
            for name, pipe in pipes.items()
        ]
        overlay = hv.Overlay(maps).collate().opts(responsive=True, min_height=300)

        def send(i: int) -> None:
            for name, cols in datas[i % k].items():
                if not all(same(pipes[name].data[c], v) for c, v in cols.items()):
                    pipes[name].send(cols)

        hv_root = pn.pane.HoloViews(overlay).get_root(Document())
        timed_steps(f"{View.__name__} δ step, HoloViews Pipe", hv_root, send, 2 * k, k)

    compare(TrajectoryView)
    # The tradeoff plot: the dashboard's in-place view against the same plot drawn with
    # HoloViews (benchmarks/holoviews_tradeoff.py: static curves, the star in a Pipe-fed map).
    from holoviews_tradeoff import HoloViewsTradeoffView

    k = len(figures)
    for label, view, step in (
        ("in-place Bokeh", TradeoffView(state=state), "_refresh"),
        ("HoloViews", HoloViewsTradeoffView(state=state), "_send"),
    ):
        root = pn.panel(view).get_root(Document())
        apply = getattr(view, step)
        timed_steps(
            f"TradeoffView δ step, {label}", root, lambda i, a=apply: a(figures[i % k]), 2 * k, k
        )
    tab = BridgeTab()
    drifts = (0.02, 0.05, 0.1, 0.2)
    timed_steps(
        "bridge tab drift move (simulate + redraw)",
        pn.panel(tab).get_root(Document()),
        lambda i: setattr(tab, "drift", drifts[i % len(drifts)]),
        8,
        1,
    )


def bench_first_render_browser() -> None:
    from playwright.sync_api import sync_playwright

    from attentive import serve

    port = serve.free_port()
    env = dict(os.environ)
    env.setdefault("ATTENTIVE_DATA", tempfile.mkdtemp(prefix="attentive-bench-"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        start = time.perf_counter()
        proc = serve.start(port, env=env)
        try:
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    time.sleep(0.05)
            listening = time.perf_counter() - start
            page.goto(f"http://127.0.0.1:{port}/app", timeout=180_000)
            page.locator(".att-value").first.wait_for(timeout=180_000)
            cold = time.perf_counter() - start
            serve.wait_for_plots(page, n=7)  # the four plots and the bridge tab's three
            plots = time.perf_counter() - start
            # Every rule's tradeoff follows the numbers (computed in a thread): its curves and
            # the table of operating points are there when the table's note has gone.
            page.get_by_text("Computing every rule's operating points").wait_for(
                state="hidden", timeout=180_000
            )
            curves = time.perf_counter() - start
            warm = []
            for _ in range(3):
                t = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/app")
                page.locator(".att-value").first.wait_for(timeout=180_000)
                warm.append(time.perf_counter() - t)
        finally:
            serve.stop(proc)
            browser.close()
    print(
        f"browser: numbers shown {cold:.1f} s after starting panel serve "
        f"(listening after {listening:.1f} s); four plots drawn at {plots:.1f} s, "
        f"the tradeoff curves and table at {curves:.1f} s; "
        f"a page on the warm server: median {statistics.median(warm):.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--first-render",
        type=int,
        default=0,
        metavar="N",
        help="only the browser's first render after a cold panel serve, N times",
    )
    args = parser.parse_args()
    if args.first_render:
        for _ in range(args.first_render):
            bench_first_render_browser()
        return
    bench_first_render_server()
    bench_moves()
    bench_holoviews_streams()
    if not args.no_browser and Path("/usr/bin/chromium").exists():
        bench_first_render_browser()


if __name__ == "__main__":
    main()
