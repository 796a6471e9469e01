"""The blocked evaluator: compute terms only for the examples that are still walking.

:func:`attentive.evaluation.apply_boundary` needs every partial score ``S_t`` of every example, so
it costs as much as a full evaluation. :func:`evaluate_blocked` gives the same answer while
computing, block of walk positions after block, the terms of the examples that have not stopped
yet.

Modules, one job each:

* :mod:`~attentive.evaluator.plan`: what a walk and a boundary need, computed once (weights in walk
  order, the centring curve, thresholds on uncentred sums, blocks from a survival curve);
* :mod:`~attentive.evaluator.threads`: thread count, pool and row ranges;
* :mod:`~attentive.evaluator.dense`: term sources and the blocked walk over dense data, full and
  budgeted prefix sums, tiny problems, the scratch arrays kept per thread between calls
  (:func:`release_scratch` drops them);
* :mod:`~attentive.evaluator.mixed`: the RBF walk with single-precision ``exp`` and its certified
  error band;
* :mod:`~attentive.evaluator.sparse`: sparse linear models without a loop over positions;
* :mod:`~attentive.evaluator.blocked`: :func:`evaluate_blocked`, which picks the path.

``S_t`` agrees with the reference's sequential sum to rounding (about ``1e-15 · Σ|w h|``), so stop
positions are identical except for a walk that lands within that distance of a threshold
(the mixed-precision walk counts that distance in its error band).
"""

from attentive.evaluator.blocked import (
    NonFiniteInput,
    evaluate_blocked,
    rejects_non_finite,
    walking_pays,
)
from attentive.evaluator.dense import release_scratch
from attentive.evaluator.mixed import EXP32_RELATIVE_ERROR, rbf_error_band, single_exp_pays
from attentive.evaluator.plan import BlockSchedule, block_schedule, survival_schedule
from attentive.evaluator.threads import default_n_jobs

__all__ = [
    "EXP32_RELATIVE_ERROR",
    "BlockSchedule",
    "NonFiniteInput",
    "block_schedule",
    "default_n_jobs",
    "evaluate_blocked",
    "rbf_error_band",
    "rejects_non_finite",
    "release_scratch",
    "single_exp_pays",
    "survival_schedule",
    "walking_pays",
]
