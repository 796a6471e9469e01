"""Keep a chunk's bad row out of the workers' logs: the run tells it once.

Each try of a chunk that raises logs a "Compute Failed" report with the traceback on its
worker, and Dask tries a chunk four times (three retries) before the run fails with its error.
For a :class:`~attentive.errors.DataError` (a row of the input that cannot be scored: the run's
own message names file, line and column) that was four tracebacks before the one line the user
needs. Likewise a worker's traceback when its heartbeat finds the scheduler gone, which the run's
own cluster closing can cause. Imported when a run starts its own cluster (it needs
``distributed``).
"""

from __future__ import annotations

import logging

from distributed import WorkerPlugin

__all__ = ["QuietDataErrors"]

# What a worker logs when its heartbeat finds the scheduler gone.
CLOSING_HEARTBEAT = "Failed to communicate with scheduler during heartbeat"


def _worth_logging(record: logging.LogRecord) -> bool:
    """False for a worker's "Compute Failed" report of a DataError, or for its report that a
    heartbeat found the scheduler gone (the run's own cluster closing, after the run told its
    outcome: a refusal that comes as the cluster starts could be followed by a traceback of
    the worker's), else True."""
    if str(record.msg).startswith(CLOSING_HEARTBEAT):
        return False
    if not str(record.msg).startswith("Compute Failed"):
        return True
    args = record.args if isinstance(record.args, tuple) else ()
    return not any(str(a).startswith("DataError(") for a in args)


class QuietDataErrors(WorkerPlugin):
    """Filters the workers' reports of a chunk's DataError, and of a heartbeat that finds the
    scheduler gone, out of their log (other failures are still logged)."""

    name = "attentive-quiet-data-errors"
    idempotent = True

    def setup(self, worker) -> None:
        logger = logging.getLogger("distributed.worker")
        if _worth_logging not in logger.filters:
            logger.addFilter(_worth_logging)

    def teardown(self, worker) -> None:
        logging.getLogger("distributed.worker").removeFilter(_worth_logging)
