"""Load test of the served dashboard: concurrent sessions moving δ and switching datasets.

It starts ``panel serve app.py --address 127.0.0.1 --port <free port>`` itself, opens
``--sessions`` headless websocket sessions at once (:func:`bokeh.client.pull_session`: the same
protocol a browser speaks, without rendering, so what is timed is the server's work plus the
transfer). Each session first announces ``document_ready`` as a browser does once the page is
idle, which makes the server render the four plots (they load after the page); it then acts like
a person for ``--seconds``: it moves the δ slider (``value`` and ``value_throttled``, as a
released drag sends them) or switches the dataset, then waits for the server's resulting document
changes. One update's latency is the time from the change being sent to the last document patch
of that update: the headline numbers (and, after a dataset switch, the dataset line) must show the
values this session asked for, and the update counts as complete when no further patch (plot
data) arrives for ``--quiet`` seconds; the quiet window itself is not counted. The time until the
numbers alone arrive is reported too.

Isolation: session ``k`` has its own permutation seed ``k``, its own dataset order and its own δ
sequence. Every patch a session receives is checked: its headline numbers must be those of its own
previous or requested (dataset, seed, δ), computed beforehand in this process by
:class:`attentive.app.state.DashboardState` (inline, the same code path without a server). Numbers
that are neither count as an isolation violation (and as *cross-session* when they equal what
another session is showing). After every update the session's dataset, δ and seed widgets must
still hold its own values.

Server errors: tracebacks and ``ERROR`` lines in the server's log, plus error notifications pushed
to any session.

Run: ``PYTHONPATH=. python benchmarks/load_test.py [--sessions 8] [--seconds 60]``. The last line
printed is one JSON object with every number. Bounded: ``--hard-timeout`` (default seconds + 240)
stops everything, the server included.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import math
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attentive import serve
from attentive.app import rules

ROOT = Path(__file__).resolve().parent.parent
# The first is the dashboard's default (every session starts there).
OFFLINE_DATASETS = (
    "mnist-t10k-2v5",
    "digits-2v5",
    "breast-cancer",
    "synthetic",
    "synthetic-sparse",
)
# δ values with three significant digits: the slider sends log10(δ) and the app rounds
# 10**value to three digits, so these arrive exactly.
DELTAS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
DEFAULT_DELTA = 0.01
NUMBERS_RE = re.compile(r"data-key='(\w+)'>(.*?)</div>")
ERROR_RE = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|\bCRITICAL\b")


# ----------------------------------------------------------------------------- expectations


def expected_numbers(datasets, seeds, deltas) -> dict[tuple, dict[str, str]]:
    """Headline numbers for every (dataset, seed, δ), computed in-process (no server)."""
    import warnings

    warnings.simplefilter("ignore")
    from attentive.app.numbers import HeadlineNumbers
    from attentive.app.state import DashboardState

    state = DashboardState()
    view = HeadlineNumbers(state=state)
    table = {}
    for ds in datasets:
        for seed in seeds:
            state.set_controls(dataset=ds, seed=seed)
            if state.last_error:
                raise RuntimeError(f"cannot compute the expected numbers: {state.last_error}")
            for delta in deltas:
                state.set_controls(delta=delta)
                values = dict(view.values(state.numbers()))
                table[ds, seed, delta] = values
    return table


def parse_numbers(text: str | None) -> dict[str, str] | None:
    """The headline numbers in the HTML pane's (escaped) text, keyed like ``NUMBERS``."""
    if not text or "att-numbers" not in text:
        return None
    found = dict(NUMBERS_RE.findall(html.unescape(text)))
    if "speedup" in found:
        # "3.79× | 1.92×": the term-count ratio is the rule's; the wall-clock one is measured
        # per session (and "timing…" until then), so only the first is compared.
        found["speedup"] = found["speedup"].split("|")[0].strip()
    return found or None


# ----------------------------------------------------------------------------- server


def scan_log(text: str) -> list[str]:
    return [line for line in text.splitlines() if ERROR_RE.search(line)]


# ----------------------------------------------------------------------------- sessions


@dataclass
class Update:
    kind: str  # "seed", "delta" or "dataset"
    latency: float | None  # seconds until the update's last patch, None on timeout
    ok: bool  # the numbers (and widgets) ended as this session's own
    numbers: float | None = None  # seconds until the headline numbers were right


@dataclass
class SessionResult:
    index: int
    connect_s: float = math.nan
    plots_s: float = math.nan  # from document_ready to the four plots in the document
    updates: list[Update] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    cross_session: int = 0
    notifications: int = 0
    error: str = ""


class Session:
    """One simulated user on its own thread and IO loop."""

    def __init__(self, k, url, expected, seconds, think, update_timeout, showing, stop, quiet):
        self.k, self.url, self.expected = k, url, expected
        self.seconds, self.think, self.update_timeout = seconds, think, update_timeout
        self.showing, self.stop = showing, stop  # shared: what every session should show now
        self.quiet = quiet
        self.done, self.done_at = None, None
        self.last_patch = 0.0
        self.rng = np.random.default_rng(1000 + k)
        self.seed = k
        datasets = list(OFFLINE_DATASETS)
        self.dataset_cycle = datasets[k % len(datasets) :] + datasets[: k % len(datasets)]
        self.result = SessionResult(k)

    # -- document access ------------------------------------------------------------------
    def _find(self, doc):
        from attentive.app.state import DashboardState

        models = {}
        for m in doc.models:
            name = type(m).__name__
            props = m.properties_with_values(include_defaults=True)
            title = props.get("title")
            if name == "Slider" and title == DashboardState.param.delta.label:
                models["delta"] = m
            elif name == "CustomSelect" and title == DashboardState.param.dataset.label:
                models["dataset"] = m
            elif name == "TextInput" and title == DashboardState.param.seed.label:
                models["seed"] = m  # a text field whose entries the state validates
            elif "text" in props and isinstance(props["text"], str):
                if "att-numbers" in props["text"]:
                    models["numbers"] = m
                elif "positive class:" in props["text"]:
                    models["info"] = m
            elif name.startswith("NotificationArea"):
                models["notifications"] = m
        missing = {"delta", "dataset", "seed", "numbers", "info"} - set(models)
        if missing:
            raise RuntimeError(f"the page has no model for {sorted(missing)}")
        return models

    def _numbers(self):
        return parse_numbers(self.models["numbers"].text)

    def _info_names(self, dataset: str) -> bool:
        return f"<strong>{dataset}</strong>" in html.unescape(self.models["info"].text or "")

    # -- the run -----------------------------------------------------------------------------
    def run(self) -> None:
        import panel as pn
        from bokeh.client import pull_session

        # The page's Panel models (table, code editor, ...) must be known to deserialise it.
        pn.extension("tabulator", "codeeditor")
        from tornado.ioloop import IOLoop

        loop = IOLoop()
        session = None
        try:
            start = time.perf_counter()
            session = pull_session(url=self.url, io_loop=loop)
            self.result.connect_s = time.perf_counter() - start
            self.session = session
            self.models = self._find(session.document)
            loop.run_sync(self._drive, timeout=self.seconds + 4 * self.update_timeout + 60)
        except Exception as exc:
            self.result.error = f"{type(exc).__name__}: {exc}"
        finally:
            if session is not None:
                try:
                    session.close()
                except Exception:
                    pass
            loop.close(all_fds=True)

    async def _reader(self):
        """Apply every PATCH-DOC the server sends (bokeh's own reader recurses per message)."""
        conn = self.session._connection
        while True:
            msg = await conn._pop_message()
            if msg is None:
                self.closed = True
                self.changed.set()
                return
            if msg.msgtype == "PATCH-DOC":
                self.last_patch = time.perf_counter()
                self.session._handle_patch(msg)
                if self.done_at is None and self.done is not None and self.done():
                    self.done_at = self.last_patch  # when the patch arrived, not when seen
                self._check_patch()
                self.changed.set()

    def _check_patch(self):
        shown = self._numbers()
        if shown is not None and shown not in self.allowed:
            self.result.violations.append(f"numbers {shown} are not this session's own")
            others = [v for i, v in self.showing.items() if i != self.k]
            if any(shown == self.expected[o] for o in others if o in self.expected):
                self.result.cross_session += 1
        area = self.models.get("notifications")
        if area is not None:
            notes = area.properties_with_values(include_defaults=True).get("notifications") or []
            self.result.notifications = max(self.result.notifications, len(notes))

    async def _wait(self, done) -> float | None:
        start = time.perf_counter()
        deadline = start + self.update_timeout
        while not done():
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or self.closed:
                return None
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                return None
        return time.perf_counter() - start

    async def _settled(self, start: float) -> float:
        """Wait until no patch has arrived for ``quiet`` s; the time of the last one from ``start``."""
        while not self.closed:
            wait = self.last_patch + self.quiet - time.perf_counter()
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        return max(self.last_patch, start) - start

    def _n_plots(self) -> int:
        from bokeh.models import Plot

        return sum(isinstance(m, Plot) for m in self.session.document.models)

    async def _load_plots(self) -> None:
        """Send ``document_ready`` (as a browser does) and wait for the four deferred plots."""
        from bokeh.document.events import MessageSentEvent
        from bokeh.events import DocumentReady

        start = time.perf_counter()
        event = MessageSentEvent(self.session.document, "bokeh_event", DocumentReady())
        self.session._connection._send_patch_document(self.session.id, event)
        deadline = start + 4 * self.update_timeout
        while self._n_plots() < 4:
            if time.perf_counter() > deadline or self.closed:
                raise RuntimeError(f"the plots did not load ({self._n_plots()} of 4)")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1.0)
            except TimeoutError:
                pass
        self.result.plots_s = await self._settled(start)

    def _send_throttled(self, slider, value: float) -> None:
        # value_throttled is read-only in Python; a browser sends it when a drag is released.
        from bokeh.document.events import ModelChangedEvent

        event = ModelChangedEvent(self.session.document, slider, "value_throttled", value)
        self.session._connection._send_patch_document(self.session.id, event)

    async def _act(self, kind: str, dataset: str, seed: int, delta: float) -> None:
        target = (dataset, seed, delta)
        want = self.expected[target]
        self.allowed = [self.expected[self.current], want]
        self.showing[self.k] = target
        start = time.perf_counter()
        m = self.models
        if kind == "delta":
            value = math.log10(delta)
            m["delta"].value = value
            self._send_throttled(m["delta"], value)
        elif kind == "dataset":
            m["dataset"].value = dataset
        else:
            m["seed"].value = str(seed)

        def done():
            return self._numbers() == want and self._info_names(dataset)

        self.done, self.done_at = done, None
        ok = await self._wait(done) is not None
        numbers = max(self.done_at or start, start) - start if ok else None
        latency = await self._settled(start) if ok else None
        self.done = None
        if not ok:
            self.result.violations.append(
                f"{kind} → {target}: after {self.update_timeout:.0f} s the page shows "
                f"{self._numbers()}, expected {want}"
            )
        widgets = (m["dataset"].value, round(10 ** m["delta"].value, 12), int(m["seed"].value))
        # The slider shows δ on its grid (log10 δ in steps of 0.01): 0.3 is shown as 0.302.
        shown_delta = rules.snap_delta(delta)
        if widgets[0] != dataset or widgets[2] != seed or not math.isclose(widgets[1], shown_delta):
            self.result.violations.append(f"widgets show {widgets}, expected {target}")
            ok = False
        self.result.updates.append(Update(kind, latency, ok, numbers))
        self.current = target

    async def _drive(self):
        self.changed = asyncio.Event()
        self.closed = False
        self.current = (OFFLINE_DATASETS[0], 0, DEFAULT_DELTA)
        self.allowed = [self.expected[self.current]]
        self.showing[self.k] = self.current
        reader = asyncio.ensure_future(self._reader())
        await self._load_plots()
        if self._numbers() != self.expected[self.current]:
            self.result.violations.append("a new session does not show the default numbers")
        if self.seed != 0:
            await self._act("seed", self.current[0], self.seed, self.current[2])
        end = time.monotonic() + self.seconds
        n_switch = 0
        while time.monotonic() < end and not self.stop.is_set() and not self.closed:
            await asyncio.sleep(self.rng.uniform(*self.think))
            dataset, seed, delta = self.current
            if self.rng.random() < 0.2:
                n_switch += 1
                dataset = self.dataset_cycle[n_switch % len(self.dataset_cycle)]
                await self._act("dataset", dataset, seed, delta)
                continue
            # A δ whose numbers differ from those shown, so the update is observable.
            shown = self.expected[self.current]
            choices = [d for d in DELTAS if self.expected[dataset, seed, d] != shown]
            if choices:
                await self._act("delta", dataset, seed, float(self.rng.choice(choices)))
        reader.cancel()


# ----------------------------------------------------------------------------- report


def summarize(results: list[SessionResult], log_lines: list[str], args) -> dict:
    lat = {"all": []}
    numbers = {"all": []}
    timeouts = 0
    for r in results:
        for u in r.updates:
            if u.latency is None:
                timeouts += 1
                continue
            lat["all"].append(u.latency)
            lat.setdefault(u.kind, []).append(u.latency)
            numbers["all"].append(u.numbers)
            numbers.setdefault(u.kind, []).append(u.numbers)

    def stats(v):
        if not v:
            return {"n": 0}
        return {
            "n": len(v),
            "median_ms": round(1000 * statistics.median(v), 1),
            "p95_ms": round(1000 * float(np.quantile(v, 0.95)), 1),
            "max_ms": round(1000 * max(v), 1),
        }

    violations = sum(len(r.violations) for r in results)
    summary = {
        "sessions": args.sessions,
        "seconds": args.seconds,
        "think_s": list(args.think),
        "updates": sum(len(r.updates) for r in results),
        "latency": {k: stats(v) for k, v in lat.items()},
        "numbers_latency": {k: stats(v) for k, v in numbers.items()},
        "connect_s_median": round(statistics.median(r.connect_s for r in results), 2),
        "plots_s_median": round(statistics.median(r.plots_s for r in results), 2),
        "timeouts": timeouts,
        "server_errors": len(log_lines),
        "error_notifications": sum(r.notifications for r in results),
        "session_failures": [f"{r.index}: {r.error}" for r in results if r.error],
        "isolation_violations": violations,
        "cross_session_values": sum(r.cross_session for r in results),
    }
    a = summary["latency"]["all"]
    summary["pass"] = bool(
        a.get("n", 0) > 0
        and a["median_ms"] <= 300
        and a["p95_ms"] <= 1000
        and timeouts == 0
        and not log_lines
        and summary["error_notifications"] == 0
        and not summary["session_failures"]
        and violations == 0
    )
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=(0.25, 0.75),
        metavar=("MIN", "MAX"),
        help="pause between a session's actions, uniform in [MIN, MAX] seconds",
    )
    parser.add_argument("--update-timeout", type=float, default=15.0)
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.15,
        help="an update is complete when no patch arrives for this long (seconds)",
    )
    parser.add_argument("--hard-timeout", type=float, default=None)
    parser.add_argument("--keep-log", type=Path, default=None, help="copy the server log here")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 32 or not 0 < args.seconds <= 600:
        parser.error("--sessions must be in 1..32 and --seconds in (0, 600]")
    hard = args.hard_timeout or args.seconds + 240

    workdir = Path(tempfile.mkdtemp(prefix="attentive-load-"))
    env = {**os.environ, "ATTENTIVE_DATA": str(workdir / "data"), "PYTHONPATH": str(ROOT)}
    # Shared by this process and the server: the models trained for the expectations are the
    # ones the server loads from the on-disk model cache.
    os.environ["ATTENTIVE_DATA"] = env["ATTENTIVE_DATA"]
    port = serve.free_port()
    log_path = workdir / "server.log"
    log = open(log_path, "wb")
    proc = serve.start(port, env=env, log=log)

    stop = threading.Event()

    def watchdog():
        if not stop.wait(hard):
            print(f"hard timeout of {hard:.0f} s reached; stopping", file=sys.stderr, flush=True)
            serve.stop(proc)
            os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        t0 = time.perf_counter()
        expected = expected_numbers(OFFLINE_DATASETS, range(args.sessions), DELTAS)
        print(
            f"expected numbers for {len(expected)} (dataset, seed, δ) in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        url = serve.wait_until_serving(port, proc, timeout=120)
        showing: dict[int, tuple] = {}
        run_stop = threading.Event()
        sessions = [
            Session(
                k,
                url,
                expected,
                args.seconds,
                tuple(args.think),
                args.update_timeout,
                showing,
                run_stop,
                args.quiet,
            )
            for k in range(args.sessions)
        ]
        threads = [threading.Thread(target=s.run, daemon=True) for s in sessions]
        print(f"{args.sessions} sessions on {url} for {args.seconds:.0f} s", flush=True)
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1.0, hard - (time.perf_counter() - t0)))
        run_stop.set()
    finally:
        stop.set()
        serve.stop(proc)
        log.close()
    log_text = log_path.read_text(errors="replace")
    if args.keep_log:
        args.keep_log.write_text(log_text)
    log_lines = scan_log(log_text)
    results = [s.result for s in sessions]
    summary = summarize(results, log_lines, args)

    a = summary["latency"]["all"]
    print(f"updates: {summary['updates']}  timeouts: {summary['timeouts']}")
    for title, key in (
        ("whole update (numbers and plots)", "latency"),
        ("numbers only", "numbers_latency"),
    ):
        print(f"latency until {title}:")
        for kind, st in summary[key].items():
            if st.get("n"):
                print(
                    f"  {kind:8s} n={st['n']:4d}  median {st['median_ms']:7.1f} ms  "
                    f"p95 {st['p95_ms']:7.1f} ms  max {st['max_ms']:7.1f} ms"
                )
    print(
        f"median connect (first page document): {summary['connect_s_median']:.2f} s; "
        f"then the four plots: {summary['plots_s_median']:.2f} s"
    )
    print(f"server errors in the log: {summary['server_errors']}")
    for line in log_lines[:10]:
        print("   ", line)
    print(f"error notifications: {summary['error_notifications']}")
    print(
        f"isolation violations: {summary['isolation_violations']} "
        f"(cross-session values: {summary['cross_session_values']})"
    )
    for r in results:
        for v in r.violations[:3]:
            print(f"   session {r.index}: {v}")
        if r.error:
            print(f"   session {r.index} failed: {r.error}")
    print(
        f"targets (median ≤ 300 ms, p95 ≤ 1000 ms, no errors, isolated): "
        f"{'met' if summary['pass'] else 'NOT met'} (median {a.get('median_ms')} ms, "
        f"p95 {a.get('p95_ms')} ms)"
    )
    print(json.dumps(summary))
    return 0 if summary["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
