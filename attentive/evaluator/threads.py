"""Threads for the evaluator: how many, the pool, and how rows are split among them.

Chunks of examples are independent and numpy's ufuncs and BLAS release the GIL, so chunks run on
the evaluator's own threads (kept between calls; share ``j`` of a call on thread ``j``), with
BLAS held to one thread meanwhile so that the two levels do not oversubscribe the cores.
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import threading
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext

import numpy as np

from attentive.errors import InvalidParameterError

__all__ = ["default_n_jobs", "resolve_n_jobs", "run_tasks", "split_rows", "usable_cores"]

MAX_JOBS = 8
PARALLEL_MIN_ELEMENTS = 2**18  # examples × terms below which threads cost more than they save
ENV_JOBS = "ATTENTIVE_N_JOBS"


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, and a container's CPU quota as
    joblib reads it (scikit-learn's ``n_jobs=-1``), the lower."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _joblib_cores()))


@functools.cache
def _joblib_cores() -> int:
    """joblib's count (it reads the cgroup's files: 56 µs, once, not on every call)."""
    from joblib import cpu_count

    return int(cpu_count())


def resolve_n_jobs(value: int) -> int:
    """Threads for ``n_jobs`` as scikit-learn and joblib read it: a positive count as given, a
    negative one counts back from the usable cores (``-1`` all of them, ``-2`` all but one; at
    least one). Not held to :data:`MAX_JOBS` as the default is: each thread keeps its scratch
    arrays (docs/speed.md), so ``-1`` on a 64-core machine keeps 64 of them. ``value`` is an
    integer other than 0 (:func:`attentive.validation.check_size` with ``negative=True``)."""
    return int(value) if value > 0 else max(1, usable_cores() + 1 + int(value))


def default_n_jobs() -> int:
    """Threads used when ``n_jobs`` is not given: ``$ATTENTIVE_N_JOBS`` (read as ``n_jobs`` is:
    ``-1`` for every usable core), else the usable cores (≤ 8)."""
    env = os.environ.get(ENV_JOBS, "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value == 0:
            raise InvalidParameterError(
                f"environment variable {ENV_JOBS} must be a whole number of threads other than "
                f"0 (-1 for every usable core), got {env!r}."
            )
        return resolve_n_jobs(value)
    return max(1, min(usable_cores(), MAX_JOBS))


_WORKERS: list = []  # the inboxes of the evaluator's threads; share j of a call runs on the j-th
_WORKERS_LOCK = threading.Lock()
_IN_WORKER = threading.local()
_BLAS: list = []


def _work(inbox: queue.SimpleQueue) -> None:
    _IN_WORKER.active = True
    while True:
        fn, future = inbox.get()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller, as concurrent.futures does
                future.set_exception(exc)
        del fn, future  # hold nothing of a call (its rows) until the next one


def _submit(work, shares: int) -> list:
    """Futures of ``work(j)`` for ``j < shares``, share ``j`` on the evaluator's ``j``-th thread.

    The threads are started when first needed and kept, as many as the most shares asked for.
    Each thread keeps its scratch arrays (:func:`attentive.evaluator.scratch.scratch`), so a call's shares always go to the
    same threads: calls with ``n_jobs`` from 1 to 8 keep 8 threads, and calls with 2 after them
    use (and grow the scratch of) the first two only. A pool per thread count kept 35 threads;
    one shared pool handed the shares to whichever threads were idle, so over many calls every
    thread grew its scratch. Submitted under the lock, so concurrent calls queue their shares on
    each thread in one order."""
    with _WORKERS_LOCK:
        while len(_WORKERS) < shares:
            inbox = queue.SimpleQueue()
            name = f"attentive_{len(_WORKERS)}"
            threading.Thread(target=_work, args=(inbox,), name=name, daemon=True).start()
            _WORKERS.append(inbox)
        futures = []
        for j in range(shares):
            future = Future()
            _WORKERS[j].put((lambda j=j: work(j), future))
            futures.append(future)
        return futures


def _after_fork() -> None:
    global _WORKERS_LOCK, _HOLD_LOCK
    _WORKERS.clear()  # a child process has none of its parent's threads
    _WORKERS_LOCK = threading.Lock()
    _HOLD_LOCK = threading.Lock()
    _HOLD[:] = [0, None]  # (the parent's holders are not in the child)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def thread_pools():
    """The process's one ``threadpoolctl.ThreadpoolController``, made on first use: entering its
    ``limit`` costs microseconds, where ``threadpool_limits`` scans the loaded libraries every
    time (milliseconds)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


_HOLD_LOCK = threading.Lock()
_HOLD: list = [0, None]  # [callers holding BLAS to one thread, the limiter the first one took]


@contextmanager
def _one_blas_thread():
    """A context that holds BLAS to one thread (our threads are the parallelism). The limit is
    the process's, so calls from several threads at once share one hold: the first to enter
    takes it and the last to leave restores what the first found (each taking and restoring
    its own, a caller leaving first restored BLAS's threads under the others, and the last to
    leave then left BLAS on one thread for good)."""
    with _HOLD_LOCK:
        if _HOLD[0] == 0:
            try:
                _HOLD[1] = thread_pools().limit(limits=1, user_api="blas")
            except Exception:  # pragma: no cover - threadpoolctl unable to inspect BLAS
                _HOLD[1] = None
        _HOLD[0] += 1
    try:
        yield
    finally:
        with _HOLD_LOCK:
            _HOLD[0] -= 1
            if _HOLD[0] == 0 and _HOLD[1] is not None:
                _HOLD[1].restore_original_limits()
                _HOLD[1] = None


def run_tasks(tasks: list, n_jobs: int, *, one_blas: bool = False) -> list:
    """Call every task (a no-argument function) and return the results in order; with
    ``one_blas``, BLAS held to one thread also where the tasks run on the calling thread (a
    walk's small products: BLAS's own threads gain nothing on them and, spinning after them,
    take the cores from the evaluator's threads' next call).

    Each thread is handed one share of the tasks at once — every ``k``-th task for ``k``
    threads, so that rows sorted by difficulty (long walks together) still spread over the
    threads — not one task at a time. Full evaluation runs many tiles (41 for 10,000 × 1,065
    on 20 features; 164 when the tiles were 4× smaller), and handing them out one by one cost
    more than the second thread gained (measured with the 164: ~20 ms on two threads as on
    one; 11.5–15.8 ms with one share per thread)."""
    if n_jobs <= 1 or len(tasks) <= 1 or getattr(_IN_WORKER, "active", False):
        # One thread, or a task of the evaluator's threads evaluating in its turn (its shares
        # would queue behind the task that waits for them).
        with _one_blas_thread() if one_blas else nullcontext():
            return [task() for task in tasks]
    shares = min(n_jobs, len(tasks))
    with _one_blas_thread():
        futures = _submit(lambda j: [task() for task in tasks[j::shares]], shares)
        done = [future.result() for future in futures]
    results = [None] * len(tasks)
    for j, share in enumerate(done):
        results[j::shares] = share
    return results


def split_rows(m: int, step: int, n_jobs: int) -> list[tuple[int, int]]:
    """Row ranges of at most ``step`` rows; with threads, a multiple of ``n_jobs`` equal ranges
    (when there are rows enough) so that no thread is left with one range more than another."""
    if m == 0:
        return []
    count = -(-m // max(1, step))
    if n_jobs > 1:
        count = min(m, -(-count // n_jobs) * n_jobs)
    edges = (np.arange(count + 1) * m) // count  # sizes differ by at most one row
    return list(itertools.pairwise(edges.tolist()))
