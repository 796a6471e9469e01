"""``python -m attentive serve``: serve the dashboard with ``panel serve app.py``."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "command",
    "configure_parser",
    "free_port",
    "run",
    "serving",
    "start",
    "stop",
    "wait_for_plots",
]

# Debian's Chromium, as the browser tests and the benchmarks drive it (headless, as root, on a
# machine whose only network is loopback: no background connections).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

APP = Path(__file__).resolve().parent.parent / "app.py"


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--address", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=5006, help="port to listen on")
    parser.add_argument("--show", action="store_true", help="open the dashboard in a browser")
    parser.add_argument(
        "--max-upload-mb",
        type=float,
        default=None,
        help="largest dataset file accepted for upload (default ATTENTIVE_MAX_UPLOAD_MB or 50)",
    )


def command(args: argparse.Namespace) -> list[str]:
    """The ``panel serve`` command line for ``args``."""
    limit_mb = args.max_upload_mb or float(os.environ.get("ATTENTIVE_MAX_UPLOAD_MB", 50))
    # Uploads travel over the websocket: its message limit must exceed the upload limit.
    ws_bytes = int((limit_mb + 10) * 1024 * 1024 * 4 / 3)  # base64 inflates by 4/3
    cmd = [
        sys.executable,
        "-m",
        "panel",
        "serve",
        str(APP),
        "--address",
        args.address,
        "--port",
        str(args.port),
        "--allow-websocket-origin",
        f"{args.address}:{args.port}",
        "--websocket-max-message-size",
        str(ws_bytes),
    ]
    if args.address in ("127.0.0.1", "localhost"):
        cmd += ["--allow-websocket-origin", f"localhost:{args.port}"]
    if args.show:
        cmd.append("--show")
    return cmd


def run(args: argparse.Namespace) -> int:
    """Become ``panel serve`` (the process is replaced, not forked): a SIGTERM or Ctrl-C sent to
    ``python -m attentive serve`` reaches the server itself, which then frees the port."""
    env = dict(os.environ)
    if args.max_upload_mb is not None:
        env["ATTENTIVE_MAX_UPLOAD_MB"] = str(args.max_upload_mb)
    cmd = command(args)
    os.chdir(APP.parent)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


# -- a server in the background, for the browser tests and the benchmarks ------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port: int, *, env: dict | None = None, log=subprocess.DEVNULL) -> subprocess.Popen:
    """Start ``panel serve app.py`` on 127.0.0.1:``port`` (the ``serve`` command's line)."""
    args = argparse.Namespace(address="127.0.0.1", port=port, show=False, max_upload_mb=None)
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(APP.parent), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        command(args), cwd=APP.parent, env=env, stdout=log, stderr=subprocess.STDOUT
    )


def wait_until_serving(port: int, proc: subprocess.Popen, timeout: float = 120.0) -> str:
    """Wait until the app answers on ``port``; return its URL. RuntimeError if it never does."""
    url = f"http://127.0.0.1:{port}/app"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=30):
                return url
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the dashboard did not answer within {timeout:.0f} s") from None
            time.sleep(0.3)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`start`."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def serving(
    *, env: dict | None = None, log_path: Path | None = None, timeout: float = 120.0
) -> Iterator[str]:
    """Serve the dashboard on a free loopback port for the duration of the block; yield its URL.

    Server output goes to ``log_path`` (if given); the server is stopped when the block exits.
    """
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(open(log_path, "wb")) if log_path else subprocess.DEVNULL
        port = free_port()
        proc = start(port, env=env, log=log)
        stack.callback(stop, proc)
        yield wait_until_serving(port, proc, timeout)


def wait_for_plots(page, n: int = 4, timeout: float = 120_000) -> None:
    """Wait until a Playwright ``page`` shows ``n`` Bokeh plot canvases (inside shadow roots)."""
    page.wait_for_function(
        """(n) => {
            const count = (root) => {
                let k = root.querySelectorAll('canvas').length;
                for (const el of root.querySelectorAll('*')) if (el.shadowRoot) k += count(el.shadowRoot);
                return k;
            };
            return count(document) >= n;
        }""",
        arg=n,
        timeout=timeout,
    )
