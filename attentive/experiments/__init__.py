"""The paper's experiments (Figure 3 by simulation, Figure 4 on datasets).

* :mod:`~attentive.experiments.compute` — the experiments as data frames, through the public API
  of :mod:`attentive` (the estimator and :mod:`attentive.metrics`);
* :mod:`~attentive.experiments.comparison` — attentive against budgeted on the tradeoff plane;
* :mod:`~attentive.experiments.output` — CSV, JSON and PNG files (figures from
  :mod:`attentive.plots`);
* :mod:`~attentive.experiments.cli` — ``python -m attentive reproduce``.

Importing this package does not import HoloViews; writing files and drawing figures do.
"""

from attentive.experiments.comparison import (
    CurveComparison,
    budgeted_at,
    compare_curves,
    fraction_at_stop_error,
)
from attentive.experiments.compute import (
    SIMULATION,
    DatasetResult,
    SimulationResult,
    constant_rule_at,
    family_tradeoffs,
    reproduce_dataset,
    reproduce_simulation,
)

__all__ = [
    "SIMULATION",
    "CurveComparison",
    "DatasetResult",
    "SimulationResult",
    "budgeted_at",
    "compare_curves",
    "constant_rule_at",
    "family_tradeoffs",
    "fraction_at_stop_error",
    "reproduce_dataset",
    "reproduce_simulation",
]
