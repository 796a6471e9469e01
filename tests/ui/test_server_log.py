"""Closing browser tabs leaves no traceback in the server log.

The server runs with a fast keep-alive ping and short-lived unused sessions, so that the two races
of a closed tab happen within the test: the ping finding a closed socket before tornado closes it
(Bokeh's AssertionError in ``on_close``), and a session destroyed with writes to its closed socket
pending (asyncio's "Task exception was never retrieved … WebSocketClosedError").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

import pytest

from tests.ui.conftest import VIEWPORT, _require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_closing_tabs_logs_no_traceback(browser, tmp_path):
    """The shared browser (one Playwright per test session) against a server of its own."""
    from attentive import serve

    _require_browser()
    port = serve.free_port()
    args = argparse.Namespace(address="127.0.0.1", port=port, show=False, max_upload_mb=None)
    cmd = [
        *serve.command(args),
        "--keep-alive",
        "40",
        "--check-unused-sessions",
        "300",
        "--unused-session-lifetime",
        "300",
    ]
    env = {
        **os.environ,
        "ATTENTIVE_DATA": str(tmp_path / "home"),
        "ATTENTIVE_MIRROR": "http://127.0.0.1:9/",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(serve.APP.parent), os.environ.get("PYTHONPATH")])
        ),
    }
    log_path = tmp_path / "panel.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=serve.APP.parent, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            url = serve.wait_until_serving(port, proc)
            context = browser.new_context(viewport=VIEWPORT)
            try:
                for i in range(8):
                    page = context.new_page()
                    page.goto(url)
                    page.locator(".att-value[data-key='evaluated']").wait_for(timeout=120_000)
                    # Moves whose patches are large (the walks), then the tab closes at once,
                    # while they are being written.
                    for name in ("trajectories", "delta"):
                        handle = page.locator(f".att-{name} .noUi-handle")
                        handle.focus()
                        for _ in range(4):
                            handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                    page.close()
            finally:
                context.close()
            time.sleep(3)  # the closed sessions are destroyed (unused for 0.3 s)
        finally:
            serve.stop(proc)
    text = log_path.read_text(errors="replace")
    assert text.count("WebSocket connection closed") >= 8, text[-3000:]
    for bad in ("Traceback", "never retrieved", "WebSocketClosedError", "AssertionError"):
        assert bad not in text, f"{bad!r} in the server log:\n{text[-6000:]}"
