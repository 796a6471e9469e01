"""The dashboard's shared cache (``attentive.app.cache.shared``): each value computed once when
several sessions ask for it at once; a value ``keep`` declines goes to the callers that waited for
it and is computed again by later ones; a failure leaves nothing held."""

from __future__ import annotations

import threading
import time

import pytest

from attentive.app.cache import shared


def _at_once(fn, n: int = 4) -> list:
    """``fn()`` in ``n`` threads started together; their results in order."""
    out = [None] * n
    start = threading.Barrier(n)

    def run(i):
        start.wait()
        out[i] = fn()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a caller is still blocked"
    return out


def test_callers_asking_at_once_share_one_computation():
    calls = []

    @shared(key=lambda x: x, max_items=4)
    def slow(x):
        calls.append(x)
        time.sleep(0.2)
        return object()

    values = _at_once(lambda: slow(1))
    assert len(calls) == 1 and all(v is values[0] for v in values)
    assert slow(1) is values[0] and slow.peek(1) is values[0]


def test_a_declined_value_goes_to_the_waiting_callers_and_later_ones_compute_again():
    """A timing taken on a busy machine (not kept): the sessions that waited for it show it;
    the next visit times again instead of showing it for good."""
    calls = []

    @shared(key=lambda x: x, max_items=4, keep=lambda v: v["steady"])
    def timing(x):
        calls.append(x)
        time.sleep(0.2)
        return {"steady": len(calls) > 1, "n": len(calls)}

    values = _at_once(lambda: timing(1))
    assert len(calls) == 1 and all(v is values[0] for v in values)
    assert not values[0]["steady"] and timing.peek(1) is None
    again = timing(1)  # later: computed again, steady now, and kept
    assert len(calls) == 2 and again["steady"] and timing(1) is again and len(calls) == 2


def test_a_failure_or_a_failing_keep_leaves_no_caller_blocked():
    attempts = []

    @shared(key=lambda x: x, max_items=4)
    def flaky(x):
        attempts.append(x)
        time.sleep(0.1)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return len(attempts)

    out = []

    def call():
        try:
            out.append(flaky(1))
        except RuntimeError as exc:
            out.append(exc)

    _at_once(call, n=2)
    # One caller saw the failure, the other computed the value itself.
    assert sum(isinstance(o, RuntimeError) for o in out) == 1 and 2 in out

    @shared(key=lambda x: x, max_items=4, keep=lambda v: 1 / 0)
    def bad_keep(x):
        return x

    with pytest.raises(ZeroDivisionError):
        bad_keep(1)
    errors = []

    def again():
        try:
            bad_keep(1)
        except ZeroDivisionError as exc:
            errors.append(exc)

    _at_once(again, n=2)  # fails if a caller stays blocked on the failed computation
    assert len(errors) == 2


def test_a_value_older_than_max_age_is_computed_again(monkeypatch):
    """A timing shown to every later session (the wall-clock card) is taken again once it is
    older than max_age (rules.measure: rules.MEASURE_MAX_AGE); younger, it is the stored one."""
    from attentive.app import cache, rules

    now = [1000.0]
    monkeypatch.setattr(cache.time, "monotonic", lambda: now[0])
    calls = []

    @shared(key=lambda x: x, max_items=4, max_age=60.0)
    def timed(x):
        calls.append(x)
        return object()

    first = timed(1)
    now[0] += 59.0
    assert timed(1) is first and timed.peek(1) is first and calls == [1]
    now[0] += 2.0
    assert timed.peek(1) is None  # too old: not offered
    second = timed(1)
    assert second is not first and calls == [1, 1]
    now[0] += 30.0
    assert timed(1) is second  # its own age counts from when it was stored
    # Evicted by size: its age goes with it.
    for x in (2, 3, 4, 5):
        timed(x)
    assert timed.peek(1) is None and set(timed._stored) == {2, 3, 4, 5}
    assert rules.measure.max_age == rules.MEASURE_MAX_AGE


def test_put_stores_a_value_that_later_calls_and_peeks_get():
    calls = []

    @shared(key=lambda x: x, max_items=2)
    def value(x):
        calls.append(x)
        return ("computed", x)

    assert value(1) == ("computed", 1)
    value.put(("given", 1), 1)
    value.put(("given", 2), 2)
    assert value.peek(1) == ("given", 1) and value(2) == ("given", 2) and calls == [1]
    value.put(("given", 3), 3)  # (max_items: the oldest goes)
    assert value.peek(1) is None and value.peek(3) == ("given", 3)
