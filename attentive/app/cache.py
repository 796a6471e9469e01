"""A cache shared by every session that computes each value once, even when asked at once.

``pn.cache`` computes a value again in every session that asks for it before the first one has
stored it: eight sessions opening the same dataset at once trained eight models. :func:`shared`
keeps ``pn.cache``'s role (a bounded least-recently-used store of values that are never
modified) and adds two things the dashboard needs: callers asking for the same key while it is
being computed wait for that computation instead of repeating it, and :meth:`Shared.peek` tells
whether a value is ready without computing it (the state draws the numbers first and leaves the
tradeoff to a background job when it is not). A value ``keep`` declines (a timing taken while
the machine was busy) goes to its caller and to those waiting for it, but is not stored: a later
caller computes it again. With ``max_age``, a value older than that many seconds is computed
again by its next caller (a timing: the machine it was taken on has changed since).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Shared", "shared"]

_MISSING = object()


class _Run:
    """One computation of a key: its callers wait on ``lock``; ``value`` once it succeeded."""

    __slots__ = ("lock", "value")

    def __init__(self):
        self.lock = threading.Lock()
        self.value = _MISSING


class Shared:
    """``fn`` with a bounded shared cache keyed by ``key(*args)``; see :func:`shared`."""

    def __init__(
        self,
        fn: Callable,
        key: Callable[..., Hashable],
        max_items: int,
        keep: Callable[[Any], bool] | None = None,
        max_age: float | None = None,
    ):
        self.fn = fn
        self.key = key
        self.max_items = int(max_items)
        self.keep = keep
        self.max_age = max_age
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._stored: dict[Hashable, float] = {}  # when each value was stored (time.monotonic)
        self._running: dict[Hashable, _Run] = {}
        self._guard = threading.Lock()
        functools.update_wrapper(self, fn)

    def _get(self, k: Hashable) -> Any:
        """The stored value of ``k`` (moved to the recent end), or _MISSING; one older than
        ``max_age`` is dropped. Under ``_guard``."""
        value = self._values.get(k, _MISSING)
        if value is _MISSING:
            return value
        if self.max_age is not None and time.monotonic() - self._stored[k] > self.max_age:
            del self._values[k], self._stored[k]
            return _MISSING
        self._values.move_to_end(k)
        return value

    def peek(self, *args) -> Any:
        """The cached value for ``args``, or None if it is not computed yet (nothing runs)."""
        k = self.key(*args)
        with self._guard:
            value = self._get(k)
            return None if value is _MISSING else value

    def __call__(self, *args):
        k = self.key(*args)
        while True:
            with self._guard:
                value = self._get(k)
                if value is not _MISSING:
                    return value
                run = self._running.get(k)
                if run is None:
                    run = self._running[k] = _Run()
                    run.lock.acquire()
                    break
            # Another caller is computing this key: wait for it and take its value, stored or
            # not (a value ``keep`` declines goes to the callers that waited for it; later ones
            # compute it again). If it failed, compute it here.
            with run.lock:
                pass
            if run.value is not _MISSING:
                return run.value
        try:
            value = self.fn(*args)
            kept = self.keep is None or bool(self.keep(value))
        except BaseException:
            with self._guard:
                del self._running[k]
            run.lock.release()
            raise
        with self._guard:
            if kept:
                self._store(k, value)
            del self._running[k]
        run.value = value
        run.lock.release()
        return value

    def put(self, value: Any, *args) -> None:
        """Store ``value`` as the value for ``args`` (what a later call or :meth:`peek` gets)."""
        k = self.key(*args)
        with self._guard:
            self._store(k, value)

    def _store(self, k: Hashable, value: Any) -> None:
        """Keep ``value`` for ``k`` as the most recent, the oldest beyond ``max_items`` dropped.
        Under ``_guard``."""
        self._values[k] = value
        self._values.move_to_end(k)
        self._stored[k] = time.monotonic()
        while len(self._values) > self.max_items:
            old, _ = self._values.popitem(last=False)
            del self._stored[old]

    def clear(self) -> None:
        with self._guard:
            self._values.clear()
            self._stored.clear()


def shared(
    key: Callable[..., Hashable],
    max_items: int,
    keep: Callable[[Any], bool] | None = None,
    max_age: float | None = None,
) -> Callable[[Callable], Shared]:
    """Decorator: cache ``fn``'s results by ``key(*args)`` (at most ``max_items``, least recently
    used dropped first), computing each key once when several threads ask for it at once;
    ``keep(value)`` false: that value is returned but not stored; ``max_age``: a value stored
    longer ago than that many seconds is computed again."""

    def wrap(fn: Callable) -> Shared:
        return Shared(fn, key, max_items, keep, max_age)

    return wrap
