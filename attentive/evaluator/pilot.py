"""The pilot: where the walks of a call are expected to stop, and from that, whether walking pays
and which blocks to walk in.

A strided sample of the call's rows (every row's terms computed at once, the stops found as the
reference finds them) gives a survival curve: the share of walks still going at each position.
:func:`attentive.evaluator.plan.survival_schedule` turns it into the cheapest blocks and their
predicted cost per walk, in units of one term of a full evaluation; a full evaluation costs ``n``
such units. The evaluator walks only where the walk is predicted to cost less
(:attr:`Pilot.walk_pays`). The pilot is kept per walk, boundary and kind of term source, so only
the first call of at least :data:`PILOT_MIN` rows pays for it (its rows are evaluated again with
the others).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attentive.evaluator.plan import BlockSchedule, Thresholds, WalkPlan, survival_schedule
from attentive.evaluator.walk import walk_whole

__all__ = ["PILOT_MIN", "PILOT_ROWS", "Pilot", "pilot_for", "pilot_rows"]

# Calls below PILOT_MIN rows have no pilot of their own (they walk, or use one kept from an
# earlier call); the pilot takes PILOT_ROWS rows spread over the call.
PILOT_MIN = 256
PILOT_ROWS = 128
WALK_MARGIN = 0.9


@dataclass(frozen=True)
class Pilot:
    """A sample of walks' stops and what they predict.

    Attributes
    ----------
    stops : ndarray of int
        Stop positions (1-based; ``n`` for walks that never stop) of the pilot's walks.
    schedule : BlockSchedule
        The cheapest blocks for walks like these.
    walk_cost, full_cost : float
        Predicted cost per row of walking with ``schedule`` and of evaluating every term, in
        units of one term of a full evaluation.
    """

    stops: np.ndarray
    schedule: BlockSchedule
    walk_cost: float
    full_cost: float

    @property
    def walk_pays(self) -> bool:
        """Whether walking is predicted to cost clearly less than evaluating every term (the
        prediction is within about ±0.15 of a full evaluation's cost where it was measured:
        closer than :data:`WALK_MARGIN`, the walk is not worth the risk)."""
        return self.walk_cost <= WALK_MARGIN * self.full_cost

    @property
    def evaluated_fraction(self) -> float:
        n = int(self.schedule.edges[-1])
        return float(np.mean(self.stops) / n) if n else 1.0


def pilot_rows(m: int) -> np.ndarray:
    """The rows of a call of ``m`` rows that its pilot walks: spread evenly (data sorted by
    class would mislead a pilot of the first rows); none below :data:`PILOT_MIN`."""
    if m < PILOT_MIN:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, m - 1, min(PILOT_ROWS, m // 2)).astype(np.int64))


def pilot_for(plan: WalkPlan, boundary, thr: Thresholds, kind: str, X, make_source) -> Pilot | None:
    """The pilot kept for (walk, boundary, source ``kind``), made from rows of ``X`` if there is
    none yet and ``X`` has at least :data:`PILOT_MIN` rows (else None). ``make_source(rows)``
    gives the source that holds rows as the walk's chunks will."""
    kept = plan.pilots(boundary)
    pilot = kept.get(kind)
    if pilot is not None:
        return pilot
    rows = pilot_rows(X.shape[0])
    if rows.size == 0:
        return None
    source = make_source(X[rows])
    n = plan.n_terms
    stops = np.full(rows.size, n, dtype=np.int64)
    res = walk_whole(source, thr)
    stops[res.at[:, 0]] = res.at[:, 1]
    term_cost = source.term_cost + (source.mass_cost if thr.mass is not None else 0.0)
    schedule, cost = survival_schedule(
        stops, n, source.row_cost, term_cost=term_cost, max_block=source.max_block
    )
    pilot = Pilot(
        stops=stops, schedule=schedule, walk_cost=cost + source.start_cost, full_cost=float(n)
    )
    kept[kind] = pilot
    return pilot
