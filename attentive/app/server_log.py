"""A quiet server log when browser tabs close: tracebacks that only say "the tab was closed".

Closing a tab while the server is writing to it is normal use, yet two layers below the dashboard
print a traceback for it:

* **"Task exception was never retrieved … WebSocketClosedError"** (asyncio's default exception
  handler). Panel writes a patch as several tornado ``write_message`` futures
  (``panel.io.document.dispatch_tornado``) and awaits them later in a task of the document; when
  the session is destroyed first, Panel cancels that task, and the futures that already failed
  because the socket was closed are never awaited — asyncio logs each one when it is collected.
* **"Uncaught exception GET /app/ws … AssertionError"** (tornado's request log). Bokeh's keep-alive
  ping finds the closed socket and detaches its session; when tornado then calls the socket's
  ``on_close``, Bokeh asks for that session again (``ServerConnection.session`` asserts). The
  same assertion is logged as **"error handling message … AssertionError"**
  (``bokeh.server.protocol_handler``) when a patch the browser sent just before closing arrives
  after the session was detached.

:func:`install` (called by every served session; it acts once per server process and event loop)
drops exactly these records and passes everything else on unchanged: any other exception of
a task goes to the loop's previous (or default) handler, any other tornado error stays logged.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from types import TracebackType

__all__ = ["install", "is_closed_socket_ping", "is_closed_socket_write"]

_installed_loops: weakref.WeakSet = weakref.WeakSet()
_filter_installed = False


def _closed_errors() -> tuple[type[BaseException], ...]:
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    return (WebSocketClosedError, StreamClosedError)


def is_closed_socket_write(context: dict) -> bool:
    """Whether an asyncio exception ``context`` is a write to a closed websocket that nobody
    awaited (a future or task that failed with tornado's ``WebSocketClosedError`` or
    ``StreamClosedError``)."""
    exc = context.get("exception")
    future = context.get("future") or context.get("task")
    return (
        isinstance(exc, _closed_errors())
        and isinstance(future, asyncio.Future)
        and "never retrieved" in str(context.get("message", ""))
    )


def _frames(tb: TracebackType | None):
    while tb is not None:
        yield tb.tb_frame.f_code
        tb = tb.tb_next


def is_closed_socket_ping(record: logging.LogRecord) -> bool:
    """Whether a log ``record`` is Bokeh's AssertionError from a websocket connection whose
    session was already detached (``ServerConnection.session``: ``assert self._session is not
    None``), on closing the socket or on a message that arrived after the detach."""
    if not record.exc_info or record.exc_info[0] is not AssertionError:
        return False
    codes = list(_frames(record.exc_info[2]))
    return (
        bool(codes)
        and codes[-1].co_name == "session"
        and codes[-1].co_filename.replace("\\", "/").endswith("bokeh/server/connection.py")
    )


class _DropClosedSocketPing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not is_closed_socket_ping(record)


def _handler(previous):
    def handle(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if is_closed_socket_write(context):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handle.attentive_quiet = True
    return handle


def install(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Keep closed tabs out of the server log (once per event loop and process; idempotent)."""
    global _filter_installed
    if not _filter_installed:
        for name in ("tornado.application", "bokeh.server.protocol_handler"):
            logging.getLogger(name).addFilter(_DropClosedSocketPing())
        _filter_installed = True
    if loop is None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            from tornado.ioloop import IOLoop

            loop = IOLoop.current().asyncio_loop
    if loop in _installed_loops:
        return
    previous = loop.get_exception_handler()
    if not getattr(previous, "attentive_quiet", False):
        loop.set_exception_handler(_handler(previous))
    _installed_loops.add(loop)
