"""Former home of the blocked evaluator, now the package :mod:`attentive.evaluator`; these names
stay importable from here."""

from attentive.evaluator import (
    BlockSchedule,
    block_schedule,
    check_precision,
    check_size,
    default_n_jobs,
    evaluate_blocked,
)

__all__ = [
    "BlockSchedule",
    "block_schedule",
    "check_precision",
    "check_size",
    "default_n_jobs",
    "evaluate_blocked",
]
