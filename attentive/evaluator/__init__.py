"""The blocked evaluator: compute terms only for the examples that are still walking.

:func:`attentive.evaluation.apply_boundary` needs every partial score ``S_t`` of every example, so
it costs as much as a full evaluation. :func:`evaluate_blocked` gives the same answer while
computing, block of walk positions after block, the terms of the examples that have not stopped
yet — or evaluates every term where its pilot predicts that walking would cost more.

Modules, one job each (docs/architecture.md draws them):

* :mod:`~attentive.evaluator.sources`: one term source per kind of term (its arrays, its blocks,
  its full sums, its costs) and the router that picks one;
* :mod:`~attentive.evaluator.crossing`: where a walk stops — the one statement of the stopping
  rule, which every path calls;
* :mod:`~attentive.evaluator.walk`: the blocked walk of a chunk of rows, and tiny problems;
* :mod:`~attentive.evaluator.totals`: full and budgeted evaluation;
* :mod:`~attentive.evaluator.pilot`: the survival curve, the blocks and the choice of path;
* :mod:`~attentive.evaluator.plan`: what a walk and a boundary need, computed once;
* :mod:`~attentive.evaluator.rows`, :mod:`~attentive.evaluator.precision`: rows as the dense
  sources hold them, and the certified error bounds of float32 products;
* :mod:`~attentive.evaluator.threads`, :mod:`~attentive.evaluator.scratch`: threads, and the
  scratch arrays kept per thread between calls (:func:`release_scratch` drops them);
* :mod:`~attentive.evaluator.blocked`: :func:`evaluate_blocked`.
"""

from attentive.errors import NonFiniteInput
from attentive.evaluator.blocked import evaluate_blocked, rejects_non_finite, resolved_precision
from attentive.evaluator.pilot import Pilot
from attentive.evaluator.plan import BlockSchedule, block_schedule, survival_schedule
from attentive.evaluator.scratch import release_scratch
from attentive.evaluator.sources import TermSource, register_source, source_for, sources
from attentive.evaluator.threads import default_n_jobs

__all__ = [
    "BlockSchedule",
    "NonFiniteInput",
    "Pilot",
    "TermSource",
    "block_schedule",
    "default_n_jobs",
    "evaluate_blocked",
    "register_source",
    "rejects_non_finite",
    "release_scratch",
    "resolved_precision",
    "source_for",
    "sources",
    "survival_schedule",
]
