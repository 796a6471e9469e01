"""The served dashboard's log filters (attentive.app.server_log): a write to a closed websocket
that nobody awaited and Bokeh's keep-alive race are dropped, everything else is still logged."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys

import pytest
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from attentive.app import server_log


async def _fail(exc: BaseException) -> None:
    raise exc


def _unretrieved(exc: BaseException, install: bool, caplog) -> list[logging.LogRecord]:
    """Run a task that fails with ``exc`` and is never awaited; what asyncio logs about it."""
    loop = asyncio.new_event_loop()
    try:
        if install:
            server_log.install(loop)

        async def main():
            task = asyncio.ensure_future(_fail(exc))
            await asyncio.sleep(0.01)  # it fails; nobody retrieves its exception
            del task

        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.run_until_complete(main())
            gc.collect()
            return [r for r in caplog.records if r.name == "asyncio"]
    finally:
        loop.close()


@pytest.mark.parametrize("exc", [WebSocketClosedError(), StreamClosedError()])
def test_unretrieved_closed_socket_write_is_dropped(exc, caplog):
    assert _unretrieved(exc, install=False, caplog=caplog), "asyncio logs it by default"
    caplog.clear()
    assert _unretrieved(exc, install=True, caplog=caplog) == []


def test_other_task_errors_are_still_logged(caplog):
    records = _unretrieved(RuntimeError("a real bug"), install=True, caplog=caplog)
    assert any("never retrieved" in r.getMessage() for r in records)


def test_previous_handler_is_kept():
    loop = asyncio.new_event_loop()
    seen = []
    try:
        loop.set_exception_handler(lambda lp, ctx: seen.append(ctx["message"]))
        server_log.install(loop)
        server_log.install(loop)  # idempotent
        loop.call_exception_handler({"message": "other", "exception": ValueError()})
        loop.call_exception_handler(
            {
                "message": "Task exception was never retrieved",
                "exception": WebSocketClosedError(),
                "future": loop.create_future(),
            }
        )
    finally:
        loop.close()
    assert seen == ["other"]


def _record(exc_info) -> logging.LogRecord:
    return logging.LogRecord(
        "tornado.application", logging.ERROR, __file__, 1, "Uncaught exception", None, exc_info
    )


def test_bokeh_keep_alive_race_is_recognised():
    from bokeh.server.connection import ServerConnection

    class Handler:
        def on_close(self):  # what Bokeh's WSHandler.on_close does after client_lost
            self.connection.session.notify_connection_lost()

    h = Handler()
    h.connection = ServerConnection.__new__(ServerConnection)
    h.connection._session = None
    try:
        h.on_close()
    except AssertionError:
        race = sys.exc_info()
    assert server_log.is_closed_socket_ping(_record(race))
    try:
        raise AssertionError("another assertion")
    except AssertionError:
        other = sys.exc_info()
    assert not server_log.is_closed_socket_ping(_record(other))
    assert not server_log.is_closed_socket_ping(_record(None))


def test_a_patch_after_the_session_was_detached_is_dropped_from_bokehs_log(caplog):
    """A patch the browser sent just before closing, handled after the session was detached:
    Bokeh's protocol handler logs the same assertion; other errors there stay in the log."""
    from bokeh.server.connection import ServerConnection

    connection = ServerConnection.__new__(ServerConnection)
    connection._session = None

    def patch():  # what bokeh.server.session's patch handler does
        return connection.session._handle_patch(None, connection)

    try:
        patch()
    except AssertionError:
        detached = sys.exc_info()
    try:
        raise RuntimeError("a real error")
    except RuntimeError:
        real = sys.exc_info()
    loop = asyncio.new_event_loop()
    try:
        server_log.install(loop)
    finally:
        loop.close()
    log = logging.getLogger("bokeh.server.protocol_handler")
    with caplog.at_level(logging.ERROR, logger="bokeh.server.protocol_handler"):
        log.error("error handling message", exc_info=detached)
        log.error("error handling message", exc_info=real)
    assert [r.exc_info[0] for r in caplog.records] == [RuntimeError]
