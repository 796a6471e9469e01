"""Choosing the sketch's size (k, m), or no sketch, on the reference profile (SPEC §3b).

A sketch pays when what it saves in walked terms is more than what it costs: per row its own cost
(:func:`attentive.sketch.sketch_cost`) plus, per walked term, the m-dot product that gives the
term's ``h̃_i(x)`` (a walked term costs ``1 + m/d`` plain terms). For each candidate — no sketch
and a few (k, m) — :func:`choose_sketch` builds the walk and its statistics on the reference
examples, ranks every family that carries over on the reference profile
(:func:`attentive.grid.reference_profile`, the data the model was fitted on: the calibration set
takes no part) and takes the cheapest evaluated fraction at disagreement ≤ δ (or where a scan of
``m`` calibration examples would stop, ``calibration=(m, α)``). The total cost in
full-evaluation units is

    total = sketch cost + walked fraction × (1 + m/d)        (no sketch: the walked fraction),

and the cheapest candidate wins; no sketch wins ties. Where a cost model prices the options, the
smaller :data:`COUNT_SIZES` are fitted and priced too but not ranked (``count_only``): the
estimator keeps one where the count decides — where every option would cost a full evaluation's
time anyway, or as the least work where the evaluator's pilot predicts its walk no slower than
the fastest's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from attentive.errors import InvalidParameterError
from attentive.families import (
    WalkStatistics,
    applicable_families,
    family_names,
    make_family,
    walk_statistics,
)
from attentive.grid import default_grid, profile_point, reference_profile
from attentive.sketch.nystrom import fit_sketch, principal_directions, unit_coordinates
from attentive.sketch.walk import ORDER_ROWS_SHARE, SKETCH_ORDERS, residual_order, sketch_walk
from attentive.validation import check_delta

__all__ = [
    "AXIS_SIZES",
    "COUNT_SIZES",
    "DEFAULT_SIZES",
    "SketchChoice",
    "SketchOption",
    "cheapest_at",
    "choose_sketch",
]

#: The (k, m) tried besides no sketch: principal directions and landmarks, m = 4k. Against the
#: grid k ∈ {4, 8, 16, 32} × m ∈ {16, 32, 64, 128} on ten MNIST problems
#: (benchmarks/bench_sketch_sizes.py, docs/method.md "Sketched walks"), the cheapest of these
#: three was within 4 % of the cheapest of all sixteen by the evaluator's measured costs (what
#: the estimator chooses by); by the count of multiply-adds within 8 % on eight of them.
DEFAULT_SIZES = ((4, 16), (8, 32), (16, 64))
#: Tried besides those where the principal directions are coordinates (rows already
#: decorrelated, as behind a PCA: :data:`attentive.sketch.nystrom.AXIS_SHARE`). A row's
#: projection is then free, and its sketch costs mostly its m landmarks (``m·(k + 2)``): more
#: directions per landmark pay. On the sixteen sizes of benchmarks/bench_sketch_sizes.py,
#: MNIST behind ``PCA(50)`` at the evaluator's measured costs: 8 against the rest cheapest at
#: (8, 16) (0.104, against 0.129 for the best of DEFAULT_SIZES), 4 vs 9 at (16, 16) (0.277
#: against 0.283), 2 vs 5 at (4, 16), one of DEFAULT_SIZES.
AXIS_SIZES = ((8, 16), (16, 16))
#: Tried besides those, and not ranked by a cost model: kept by the count of multiply-adds (where
#: no cost model prices the options, where the evaluator evaluates every term anyway, or as the
#: least work where its pilot predicts the walk no slower than the fastest's: the estimator's
#: ``_cheapest_sketch``): smaller sketches. On models of 100–350 support vectors a row's
#: projection is most of the count, and on the reference profile (benchmarks/
#: bench_sketch_sizes.py, 2026-11-30) (1, 4) or (2, 8) was the least work on MNIST 1 vs 7, 6
#: vs 8, 2 vs 5 and 1 against the rest, 0.58–0.81 of the best of DEFAULT_SIZES. Not ranked by
#: the evaluator's measured costs: its price of a walked term (a full evaluation's term and the
#: m-dot product) is below what a walk's terms cost (their blocks' rows, sums and crossings),
#: and a smaller sketch walks more of them — on MNIST 9 against the rest (1, 4) and (2, 8)
#: walked at 0.55 and 0.50 of a full evaluation against 0.46 at (4, 16), one thread.
COUNT_SIZES = ((1, 4), (2, 8))
_PROFILE_ROWS = 2000  # as the estimator's family ranking


@dataclass(frozen=True)
class SketchOption:
    """One candidate of :func:`choose_sketch` and its cost on the reference profile.

    Attributes
    ----------
    k, m : int or None
        The sketch's principal directions (or coordinates, :data:`AXIS_SIZES`) and landmarks
        (None, None: no sketch).
    sketch_cost : float
        A row's sketch in full-evaluation units (0 without one).
    term_cost : float
        A walked term's cost in plain-walk terms: ``1 + m/d`` (1 without a sketch).
    walked_fraction : float
        The cheapest mean evaluated fraction of the walk at disagreement ≤ δ on the reference
        profile (or at the scale a scan would choose: ``choose_sketch``'s ``calibration``), over
        the families and scales (1 when none gets there).
    family : str or None
        The family that reached it, and ``scale`` its z (None when none did).
    walk : Walk or SketchedWalk or None
    statistics : WalkStatistics or None
        The option's walk and its reference statistics, as chosen; None in a classifier saved
        and loaded again, pickled or deep-copied (:meth:`SketchChoice.__getstate__`: the kept
        sketch's walk is the classifier's ``sketched_walk_``).
    profile : dict
        Each family's tradeoff on the reference profile, ``{name: (disagreement, evaluated
        fraction)}`` per scale of the default grid (:func:`attentive.grid.reference_profile`).
    count_only : bool
        One of :data:`COUNT_SIZES` priced by a cost model: :attr:`SketchChoice.best` leaves it
        out (it is weighed by the count of multiply-adds, :attr:`counted_total`, where the
        estimator's ``_cheapest_sketch`` says the count decides).
    counted : tuple or None
        :attr:`counted_costs`, kept where the walk is not (:meth:`without_walk`).
    """

    k: int | None
    m: int | None
    sketch_cost: float
    term_cost: float
    walked_fraction: float
    family: str | None
    scale: float | None
    walk: object
    statistics: WalkStatistics
    profile: dict
    count_only: bool = False
    counted: tuple | None = None  # counted_costs, kept where the walk is not (without_walk)

    @property
    def total(self) -> float:
        """Full-evaluation units per row: the sketch plus the walked terms at their cost."""
        return self.sketch_cost + self.walked_fraction * self.term_cost

    @property
    def counted_costs(self) -> tuple[float, float]:
        """``(sketch cost, walked term cost)`` by SPEC §3b's count of multiply-adds, whatever
        cost model priced the option (``(0, 1)`` without a sketch)."""
        if self.k is None:
            return 0.0, 1.0
        if self.walk is None:
            return self.counted
        return self.walk.cost, self.walk.walked_term_cost

    def without_walk(self) -> SketchOption:
        """This option's numbers without its walk and statistics (arrays of the model's size,
        and the model's pipeline again: :meth:`SketchChoice.__getstate__`)."""
        if self.walk is None:
            return self
        return dataclasses.replace(self, walk=None, statistics=None, counted=self.counted_costs)

    @property
    def counted_total(self) -> float:
        """:attr:`total` by the count of multiply-adds."""
        cost, term_cost = self.counted_costs
        return cost + self.walked_fraction * term_cost

    @property
    def label(self) -> str:
        return "no sketch" if self.k is None else f"k={self.k}, m={self.m}"

    def __repr__(self) -> str:
        # The walk, statistics and profile are arrays of the model's size: named, not printed.
        rule = "none reaches δ" if self.family is None else f"{self.family} z={self.scale:g}"
        ranked = "; weighed by the count only" if self.count_only else ""
        return (
            f"SketchOption({self.label}: total {self.total:.4g} = sketch {self.sketch_cost:.4g}"
            f" + walked {self.walked_fraction:.4g} × {self.term_cost:.4g}; {rule}{ranked})"
        )


@dataclass(frozen=True)
class SketchChoice:
    """Every candidate of :func:`choose_sketch` (no sketch first) and the cheapest.
    ``calibration``: the ``(m, α)`` each was judged at (where a scan of m calibration examples
    would stop, :func:`attentive.grid.profile_point`), or None (at disagreement ≤ δ).
    ``kept``: the option a classifier kept (``AttentiveClassifier.sketch_choice_``; it may
    differ from :attr:`best`, see ``sketch_costs_``), or None where the choice was not made
    for one."""

    options: tuple[SketchOption, ...]
    delta: float
    calibration: tuple | None = None
    kept: SketchOption | None = None

    def __getstate__(self) -> dict:
        """Saved (skops, pickle, a deep copy), the options keep their numbers, not their walks
        and statistics (:meth:`SketchOption.without_walk`): every option tried held the model's
        pipeline in its walk, and a classifier over 784 named columns saved a schema of 33 MB
        (its ColumnTransformer 12 times) that load_model refused. The kept sketch's walk is the
        classifier's ``sketched_walk_``."""
        state = dict(self.__dict__)
        slim = tuple(o.without_walk() for o in self.options)
        state["options"] = slim
        if self.kept is not None:
            state["kept"] = next(
                (s for o, s in zip(self.options, slim, strict=True) if o is self.kept),
                self.kept.without_walk(),
            )
        return state

    @property
    def best(self) -> SketchOption:
        """The cheapest total; the earliest (so no sketch) among equals. Options ranked by the
        count only (``count_only``) are left out."""
        return min((o for o in self.options if not o.count_only), key=lambda o: o.total)

    def __repr__(self) -> str:
        options = "".join(f"\n    {o!r}," for o in self.options)
        at = "" if self.calibration is None else f", calibration={self.calibration!r}"
        kept = "" if self.kept is None else f", kept {self.kept.label!r}"
        return (
            f"SketchChoice(delta={self.delta:g}{at}, best {self.best.label!r}{kept}, "
            f"options=({options}\n))"
        )


def order_rows(rows: int, max_rows: int = _PROFILE_ROWS) -> int:
    """How many of ``rows`` reference rows the residual order is chosen on: a seeded share
    :data:`~attentive.sketch.walk.ORDER_ROWS_SHARE` of them, at most ``max_rows``."""
    return max(1, min(max_rows, math.ceil(ORDER_ROWS_SHARE * rows)))


def cheapest_at(
    profile: dict, delta: float, calibration=None
) -> tuple[float, str | None, float | None]:
    """The smallest evaluated fraction at disagreement ≤ δ over the families and scales of a
    :func:`attentive.grid.reference_profile` (default grid), or over the families at the scale
    calibration on ``calibration = (m, α)`` examples would choose
    (:func:`attentive.grid.profile_point`): ``(fraction, family, z)``, or ``(1, None, None)``
    if none gets there."""
    grid = default_grid()
    best = (1.0, None, None)
    for name, (rates, fractions) in profile.items():
        j = profile_point(rates, fractions, delta, calibration)
        if j is not None and fractions[j] < best[0]:
            best = (float(fractions[j]), name, float(grid[j]))
    return best


def choose_sketch(
    walk,
    X_ref,
    y_ref,
    *,
    delta: float,
    ref_mask,
    theta_s: float,
    side: str = "both",
    families=None,
    sizes=None,
    variance: str = "terms",
    leave_own_out: bool = False,
    own=None,
    statistics: WalkStatistics | None = None,
    profile: dict | None = None,
    cost_model=None,
    landmarks: str = "kmeans++",
    order: str = "residual",
    max_rows: int = _PROFILE_ROWS,
    calibration=None,
    random_state=0,
) -> SketchChoice:
    """Cost of no sketch and of each sketch size on the reference profile; the cheapest wins.

    Parameters
    ----------
    walk : Walk
        The plain walk (its ``μ`` and offset are kept by every sketched walk, and its order
        too with ``order="walk"``).
    X_ref, y_ref :
        The reference examples the walk's statistics come from (raw rows): the sketch is fitted
        on them, and the profile is a seeded sample of at most ``max_rows`` of them.
    delta : float
        The disagreement the rules must keep on the profile.
    ref_mask : array of bool
        R, the rows the walk's ``μ`` was taken from (:func:`attentive.walk.make_walk`).
    theta_s, side :
        The decision threshold in S space and the sides the rules stop on.
    families : sequence of str, optional
        Family names (default: every registered one); a sketched walk takes those that carry
        over (:func:`attentive.families.applicable_families`).
    sizes : sequence of (k, m), optional
        The sketches tried besides no sketch. Default: :data:`DEFAULT_SIZES`,
        :data:`AXIS_SIZES` too where the reference rows' principal directions are coordinates,
        and :data:`COUNT_SIZES` (with a ``cost_model``, ranked by the count only:
        ``SketchOption.count_only``) where a default size fits (so not on rows of 4 features or
        fewer, nor with fewer than 16 reference rows).
    variance, leave_own_out, own :
        As for the walk's statistics (:func:`attentive.families.walk_statistics`).
    statistics, profile : optional
        The plain walk's statistics and its :func:`attentive.grid.reference_profile` (every
        family in ``families``, at most ``max_rows`` rows) when computed already.
    cost_model : callable, optional
        ``cost_model(sketch) -> (sketch cost, walked term cost)`` in full-evaluation units and
        plain-walk terms. Default: the multiply-add count of SPEC §3b (``sketch.cost``,
        ``sketch.walked_term_cost``); an evaluator that measures its own costs passes those.
    order : {"residual", "walk"}, default="residual"
        The order of each sketched walk's residual terms: the one that lowers the spread of
        what remains of the walk fastest over a seeded half of the reference rows (at most
        ``max_rows``: :func:`order_rows`) and the support vectors as rows holding their own
        terms (:func:`attentive.sketch.residual_order`), or the plain walk's order π.
    calibration : (m, α), optional
        Judge each candidate where calibration on ``m`` examples at (δ, α) would stop on the
        profile's rates (:func:`attentive.grid.profile_point`) instead of at disagreement ≤ δ.
    """
    delta = check_delta(delta)
    if order not in SKETCH_ORDERS:
        raise InvalidParameterError(f"order must be one of {SKETCH_ORDERS}, got {order!r}.")
    names = tuple(family_names() if families is None else families)
    if not names:
        raise InvalidParameterError("choose_sketch needs at least one family.")
    ref_mask = np.asarray(ref_mask, dtype=bool)
    common = {"leave_own_out": leave_own_out, "own": own}
    Xp = walk.prepare(X_ref)
    X_centring = Xp[np.flatnonzero(ref_mask)] if walk.mu.any() else None
    options = []
    # A sketch needs fewer principal directions than features, and landmarks among the rows.
    d, rows = Xp.shape[1], Xp.shape[0]
    default = sizes is None
    sizes = [(k, m) for k, m in (DEFAULT_SIZES if default else sizes) if k < d and m <= rows]
    more = [(k, m) for k, m in AXIS_SIZES if k < d and m <= rows] if default else []
    # One decomposition for every size: each takes the leading k of the largest k's directions.
    most = max((k for k, _ in (*sizes, *more)), default=0)
    directions = principal_directions(Xp, most, random_state=random_state) if sizes else None
    if more and directions is not None and unit_coordinates(directions) is not None:
        sizes = sorted(set(sizes) | set(more))
    # The smaller sizes ranked by the count only, where a cost model prices the others.
    small = [(k, m) for k, m in COUNT_SIZES if k < d and m <= rows] if default and sizes else []
    count_only = set(small) - set(sizes) if cost_model is not None else set()
    if small:
        sizes = sorted(set(sizes) | set(small))
    for size in (None, *sizes):
        if size is None:
            candidate, k, m, cost, term_cost = walk, None, None, 0.0, 1.0
        else:
            k, m = size
            sketch = fit_sketch(
                walk.terms,
                Xp,
                k=k,
                m=m,
                landmarks=landmarks,
                random_state=random_state,
                directions=directions,
            )
            candidate = sketch_walk(walk, sketch, X_centring)
            if order == "residual":
                # Fixed as new rows would see it: without a training row's own support vector
                # (matched by value when the walks are in-sample and own is not given), and with
                # the support vectors as rows holding theirs (a new row close to one holds
                # much of its term).
                candidate = residual_order(
                    candidate,
                    Xp,
                    leave_own_out=True,
                    own=own,
                    max_rows=order_rows(rows, max_rows),
                    random_state=random_state,
                )
            cost, term_cost = (
                (sketch.cost, sketch.walked_term_cost) if cost_model is None else cost_model(sketch)
            )
        stats = (
            statistics
            if size is None and statistics is not None
            else walk_statistics(
                candidate, X_ref, y_ref, ref_mask=ref_mask, variance=variance, **common
            )
        )
        if size is None and profile is not None:
            tradeoffs = profile
        else:
            usable = [name for name in names if name in applicable_families(stats)]
            fams = [make_family(name, stats, theta_s, side) for name in usable]
            tradeoffs = reference_profile(candidate, X_ref, fams, max_rows=max_rows, **common)
        fraction, family, z = cheapest_at(tradeoffs, delta, calibration)
        options.append(
            SketchOption(
                k,
                m,
                cost,
                term_cost,
                fraction,
                family,
                z,
                candidate,
                stats,
                tradeoffs,
                count_only=size in count_only,
            )
        )
    return SketchChoice(tuple(options), delta, calibration)
