"""Helpers shared by the data and model tests: a loopback HTTP server and small data files.

Nothing here touches the network: the server listens on 127.0.0.1 and serves files the tests write.
"""

from __future__ import annotations

import gzip
import http.server
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# The real MNIST t10k files tracked in the repository (data/README.md).
MNIST_T10K = Path(__file__).resolve().parents[1] / "data" / "mnist-t10k"


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serve ``server.files[name]``; ``server.truncate`` names files sent cut short."""

    def do_GET(self) -> None:
        name = self.path.lstrip("/")
        body = self.server.files.get(name)  # type: ignore[attr-defined]
        if body is None:
            self.send_error(404, "not found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if name in self.server.truncate:  # type: ignore[attr-defined]
            body = body[: len(body) // 2]  # promise the whole file, send half, hang up
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass


@contextmanager
def loopback_server(files: dict[str, bytes], truncate: tuple[str, ...] = ()) -> Iterator[str]:
    """Serve ``files`` on 127.0.0.1 in a thread; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.files = files  # type: ignore[attr-defined]
    server.truncate = set(truncate)  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (a server that is down)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    server.server_close()
    return f"http://127.0.0.1:{port}/"


def idx_bytes(array: np.ndarray) -> bytes:
    """Encode a uint8 array as a gzipped IDX file (independent of attentive's reader)."""
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return gzip.compress(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())
