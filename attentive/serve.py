"""``python -m attentive serve``: serve the dashboard with ``panel serve app.py``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["command", "configure_parser", "run"]

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
    env = dict(os.environ)
    if args.max_upload_mb is not None:
        env["ATTENTIVE_MAX_UPLOAD_MB"] = str(args.max_upload_mb)
    try:
        return subprocess.call(command(args), cwd=APP.parent, env=env)
    except KeyboardInterrupt:
        return 0
