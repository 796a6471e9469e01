"""Dashboard speed: server-side recompute per slider move, trajectory drawing, first page render.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_app.py            # everything
    PYTHONPATH=. .venv/bin/python benchmarks/bench_app.py --no-browser

1. On an RBF SVM with about 1,000 support vectors and 2,000 test examples (the offline
   ``synthetic`` dataset), the figure data for one control move (what ``DashboardState`` recomputes)
   is timed per control: δ (the target: median ≤ 50 ms), the trajectory count, boundary kinds, and
   θ / seed (which rebuild a cached sweep / walk once, then hit the cache).
2. The same δ move through the state, the four plot views and the numbers attached to a Bokeh
   document: the time and the size of the patch a browser would receive (only changed columns).
3. ``panel serve app.py`` started cold, then the time until headless Chromium shows the headline
   numbers (first render), and a second page on the warm server.
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


def bench_recompute(n_train: int, n_test: int) -> None:
    from attentive.app.cache import model_bundle, walk_bundle
    from attentive.app.compute import compute_figures
    from attentive.data import load_dataset
    from attentive.models import train_model

    t = time.perf_counter()
    ds = load_dataset("synthetic", n_train=n_train, n_test=n_test)
    model = train_model(ds, kind="rbf", C=1.0, gamma="scale")
    models = model_bundle(("bench", n_train, n_test), ds, ("rbf",), lambda: model)
    walks = walk_bundle(models, "positive", 0)
    print(
        f"model: {walks.n_terms:,} support vectors, {walks.S.shape[0]:,} test examples "
        f"(train + S matrix {time.perf_counter() - t:.1f} s, once per dataset/model/seed)"
    )
    base = dict(kind="constant", side="lower", delta=0.05, theta=0.0, budget=0.5, n_trajectories=60)
    compute_figures(walks, **base)  # builds the cached sweep for (side, θ)
    deltas = iter(np.geomspace(1e-4, 0.5, 1000))
    d = timed(lambda: compute_figures(walks, **{**base, "delta": next(deltas)}), 40)
    print(f"δ move (constant, lower)          {ms(d)}   target ≤ 50 ms")
    counts = iter(np.arange(10, 500, 7))
    k = timed(lambda: compute_figures(walks, **{**base, "n_trajectories": int(next(counts))}), 30)
    print(f"trajectory count move             {ms(k)}")
    compute_figures(walks, **{**base, "kind": "curved", "side": "both"})  # its δ-curve, once
    deltas = iter(np.geomspace(1e-4, 0.5, 1000))
    c = timed(
        lambda: compute_figures(
            walks, **{**base, "kind": "curved", "side": "both", "delta": next(deltas)}
        ),
        20,
    )
    print(f"δ move (curved, both sides)        {ms(c)}")
    b = timed(lambda: compute_figures(walks, **{**base, "kind": "budget"}), 20)
    print(f"budget boundary                    {ms(b)}")
    thetas = iter(np.linspace(-0.5, 0.5, 50))
    th = timed(lambda: compute_figures(walks, **{**base, "theta": float(next(thetas))}), 8)
    print(f"θ move, uncached (new sweep)       {ms(th)}")
    th2 = timed(lambda: compute_figures(walks, **{**base, "theta": 0.0}), 10)
    print(f"θ move back to a cached θ          {ms(th2)}")


def bench_views() -> None:
    """A δ move through the state and the four plot views, with the Bokeh patch it produces."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.protocol import Protocol

    from attentive.app.state import DashboardState
    from attentive.app.views import (
        HeadlineNumbers,
        PrecisionRecallView,
        TheoryView,
        TradeoffView,
        TrajectoryView,
    )

    pn.extension()
    state = DashboardState(dataset="synthetic")  # the offline default size: 1,500 test examples
    doc = Document()
    views = [
        V(state=state) for V in (TrajectoryView, TradeoffView, PrecisionRecallView, TheoryView)
    ]
    for v in [*views, HeadlineNumbers(state=state)]:
        doc.add_root(pn.panel(v).get_root(doc))
    events = []
    doc.on_change(events.append)
    protocol = Protocol()
    deltas = itertools.cycle((0.001, 0.01, 0.1, 0.3, 0.003, 0.03, 0.2, 0.005, 0.05, 0.5))
    sizes = []

    def move():
        events.clear()
        state.delta = next(deltas)
        msg = protocol.create("PATCH-DOC", events)
        sizes.append(len(msg.content_json) + sum(len(b.to_bytes()) for b in msg._buffers))

    move()
    t = timed(move, 30)
    print(
        f"δ move through state, plots, numbers ({state.walks.n_terms} terms, "
        f"{state.walks.S.shape[0]} test examples): {ms(t)}; "
        f"patch median {statistics.median(sizes) / 1e3:.0f} kB, {len(events)} document events"
    )


def bench_first_render() -> None:
    from playwright.sync_api import sync_playwright

    from attentive import serve

    port = serve.free_port()
    env = dict(os.environ)
    env.setdefault("ATTENTIVE_DATA", tempfile.mkdtemp(prefix="attentive-bench-"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 800})
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
            page.goto(f"http://127.0.0.1:{port}/app", timeout=120_000)
            page.locator(".att-value").first.wait_for(timeout=120_000)
            cold = time.perf_counter() - start
            serve.wait_for_plots(page)
            plots = time.perf_counter() - start
            warm = []
            for _ in range(3):
                t = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/app")
                page.locator(".att-value").first.wait_for(timeout=120_000)
                warm.append(time.perf_counter() - t)
        finally:
            serve.stop(proc)
            browser.close()
    print(
        f"first render after starting panel serve (offline default, empty model cache): "
        f"{cold:.1f} s (server listening after {listening:.1f} s)   target ≤ 10 s"
    )
    print(f"all four plots drawn: {plots:.1f} s after starting panel serve")
    print(f"page render on the warm server: median {statistics.median(warm):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=3000)
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    bench_recompute(args.n_train, args.n_test)
    bench_views()
    if not args.no_browser and Path("/usr/bin/chromium").exists():
        bench_first_render()


if __name__ == "__main__":
    main()
