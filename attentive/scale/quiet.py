"""Keep a chunk's bad row out of the workers' logs: the run tells it once.

Each try of a chunk that raises logs a "Compute Failed" report with the traceback on its
worker, and Dask tries a chunk four times (three retries) before the run fails with its error.
For a :class:`~attentive.errors.DataError` (a row of the input that cannot be scored: the run's
own message names file, line and column) that was four tracebacks before the one line the user
needs. Imported when a run starts its own cluster (it needs ``distributed``).
"""

from __future__ import annotations

import logging

from distributed import WorkerPlugin

__all__ = ["QuietDataErrors"]


def _not_a_data_error(record: logging.LogRecord) -> bool:
    """False for a worker's "Compute Failed" report of a DataError, else True."""
    if not str(record.msg).startswith("Compute Failed"):
        return True
    args = record.args if isinstance(record.args, tuple) else ()
    return not any(str(a).startswith("DataError(") for a in args)


class QuietDataErrors(WorkerPlugin):
    """Filters the workers' reports of a chunk's DataError out of their log (other failures
    are still logged)."""

    name = "attentive-quiet-data-errors"
    idempotent = True

    def setup(self, worker) -> None:
        logger = logging.getLogger("distributed.worker")
        if _not_a_data_error not in logger.filters:
            logger.addFilter(_not_a_data_error)

    def teardown(self, worker) -> None:
        logging.getLogger("distributed.worker").removeFilter(_not_a_data_error)
