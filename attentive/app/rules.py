"""The dashboard's numbers: every rule asked of the fitted classifier through the public API.

No boundary is built and no walk is walked here: a rule is ``walks.classifier.with_rule(...)``
(the exported classifier is the same object), a family's whole tradeoff is its
``scale_outcomes`` on the test set, the table of operating points is
:func:`attentive.operating_points`, calibration is ``calibrate``, the oracle floor is
``oracle_n_evaluated`` and the family curves are :func:`attentive.experiments.family_tradeoffs`
(the ones ``reproduce`` draws). A sketched rule is the same, asked of the classifier with the
walk's sketch (:mod:`attentive.app.sketches`), once it is fitted: its cost is its work — the
sketch plus the walked terms, in units of a full evaluation.

Two speeds. What depends on (walk, side, θ) — every family's outcomes on a grid of scales that
contains every δ the slider can reach, the tradeoff curves, the table — is computed once and
cached. A δ move then reads one column of the current family's outcomes. The evaluator itself
(``evaluate``, timed, with the paper's Algorithm-1 scores for precision–recall) runs after the
move, in the background when served: :func:`measure`.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import panel as pn
from scipy.special import ndtr, ndtri
from scipy.stats import beta

from attentive import (
    AttentiveSweep,
    CalibrationReport,
    GridOutcomes,
    InvalidParameterError,
    budgeted_tradeoff,
    default_grid,
    disagreement_rate,
    family_names,
    precision_recall,
    stop_error,
)
from attentive.app import sketches
from attentive.app.cache import shared
from attentive.app.models import WALKS_HASH, Walks
from attentive.calibration import clopper_pearson_upper
from attentive.families.sketched import base_family, is_sketched_name
from attentive.operating_points import cheapest_row, outcome_points
from attentive.rules import rule_names

__all__ = [
    "DEFAULT_ALPHA",
    "DELTA_RANGE",
    "Rule",
    "Tradeoff",
    "base_family",
    "bridge_envelope",
    "calibrated",
    "cheapest",
    "delta_of",
    "delta_steps",
    "family_outcomes",
    "is_sketched",
    "kinds",
    "lowest_within_time",
    "measure",
    "nominal_delta",
    "outcome",
    "rule_classifier",
    "rule_times",
    "scale_column",
    "scaled_kinds",
    "settable",
    "snap_alpha",
    "snap_delta",
    "snap_z",
    "theta_range",
    "timed_table",
    "tradeoff",
    "tradeoff_ready",
]

DELTA_RANGE = (1e-4, 0.5)
DEFAULT_ALPHA = 0.05
# The δ slider moves log10 δ in steps of this size; δ is shown with three significant digits.
LOG_DELTA_STEP = 0.01
# Budgets on the budgeted tradeoff curve (B = 1..n subsampled).
N_BUDGETS = 200


def kinds() -> list[str]:
    """The rules the dashboard offers: every registered family, their sketched rules, the budget
    and calibrated."""
    return list(rule_names("family", "sketched", "budget", "calibrated"))


def scaled_kinds() -> tuple[str, ...]:
    """The rules with a scale z: the families and their sketched rules."""
    return rule_names("family", "sketched")


def is_sketched(kind) -> bool:
    """Whether ``kind`` is a sketched rule (a family walked after the sketch, SPEC §3b)."""
    return is_sketched_name(kind)


def snap_alpha(alpha: float) -> float:
    """α as the slider's steps of 0.005 meant it, without a float sum's noise (a step to
    0.156 arrived as 0.15599999999999997, and the address said so): rounded to 9 significant
    digits, so an address's own α (0.0123) stays as written."""
    return float(f"{alpha:.9g}")


def snap_delta(delta: float) -> float:
    """δ on the slider's grid (log10 in steps of 0.01, three significant digits), where a value
    of two significant digits lies within half a step, that value: 0.05, not 10**-1.30 =
    0.0501 (a shared address's δ = 0.05 read "≤ 0.0501" in the guarantee)."""
    lo, hi = DELTA_RANGE
    d = min(hi, max(lo, float(delta)))
    step = round(math.log10(d) / LOG_DELTA_STEP) * LOG_DELTA_STEP
    on_grid = float(f"{10**step:.3g}")
    rounder = float(f"{on_grid:.2g}")
    if abs(math.log10(rounder) - step) <= LOG_DELTA_STEP / 2:
        on_grid = rounder
    return min(hi, max(lo, on_grid))


def delta_steps() -> np.ndarray:
    """Every δ the slider can reach."""
    lo, hi = (math.log10(v) for v in DELTA_RANGE)
    logs = np.arange(round(lo / LOG_DELTA_STEP), round(hi / LOG_DELTA_STEP) + 1) * LOG_DELTA_STEP
    return np.unique([snap_delta(10**v) for v in logs])


def z_of(delta: float) -> float:
    """The scale the estimator uses for δ: ``z = Φ⁻¹(1 − δ)`` (as ``with_rule(delta=...)``)."""
    return float(ndtri(1.0 - float(delta)))


def nominal_delta(z: float) -> float:
    """The stop-error a family's boundary at scale ``z`` is built for: ``δ' = Φ(−z)``."""
    return float(ndtr(-float(z)))


def delta_of(z: float) -> float:
    """The slider's δ for scale ``z``: :func:`nominal_delta` on the slider's grid."""
    return snap_delta(nominal_delta(z))


#: The scales the δ slider can set, lowest first: z for δ = 50 % (0) up to z for δ = 0.01 %.
#: The pickers (a target, a time budget, a click on the tradeoff plot) choose among these only,
#: so the slider, the address and the card always name the rule that runs.
SLIDER_Z = (z_of(DELTA_RANGE[1]), z_of(DELTA_RANGE[0]))


def on_slider(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of an operating-point table (a ``z`` column) whose scale the δ slider can set
    (:data:`SLIDER_Z`): the grid's other scales (δ' = Φ(−z) above 50 % or below 0.01 %) stay
    on the tradeoff plot's curves and in the CSV, but no picker moves the rule there."""
    return table[settable(table["z"].to_numpy(dtype=np.float64))]


def settable(z):
    """Whether the δ slider can set the scale(s) ``z`` (:data:`SLIDER_Z`, to rounding)."""
    lo, hi = SLIDER_Z
    z = np.asarray(z, dtype=np.float64)
    return (z >= lo - 1e-9) & (z <= hi + 1e-9)


def slider_span() -> str:
    """The δ slider's range in words, for a picker's refusal."""
    lo, hi = DELTA_RANGE
    return f"δ from {lo:g} to {hi:g}"


# Scales on which each family's outcomes are computed: the calibration grid and every slider δ.
Z_GRID = np.unique(np.concatenate([default_grid(), [z_of(d) for d in delta_steps()]]))[::-1]
_Z_INDEX = {float(z): i for i, z in enumerate(Z_GRID)}


def scale_column(z: float) -> int:
    """The column of :data:`Z_GRID` (and of :func:`family_outcomes`) that holds scale ``z``."""
    j = _Z_INDEX.get(float(z))
    if j is None:
        raise InvalidParameterError(f"z = {z:g} is not one of the dashboard's scales.")
    return j


def snap_z(z: float) -> float:
    """The dashboard's scale nearest ``z`` (a hand-typed URL's z lands on the grid)."""
    return float(Z_GRID[int(np.argmin(np.abs(Z_GRID - float(z))))])


@dataclass(frozen=True)
class Rule:
    """The controls that pick a rule (what ``with_rule`` and ``calibrate`` receive)."""

    kind: str = "constant"
    side: str = "lower"
    delta: float = 0.05
    theta: float = 0.0
    budget: float = 0.5
    alpha: float = DEFAULT_ALPHA
    z: float | None = None  # a family's scale (the picker's exact z), else Φ⁻¹(1 − δ)

    @property
    def scale(self) -> float:
        """The family's scale: ``z`` if chosen, else ``Φ⁻¹(1 − δ)``."""
        return z_of(self.delta) if self.z is None else float(self.z)

    def budget_terms(self, n_terms: int) -> int:
        return max(1, min(n_terms, math.ceil(float(self.budget) * n_terms)))


def _classifier(walks: Walks, kind: str):
    """The fitted classifier a rule of ``kind`` is asked of: the walk's, or for a sketched rule
    the one with the walk's sketch (fitted by :func:`attentive.app.sketches.sketch`)."""
    if not is_sketched(kind):
        return walks.classifier
    sketch = sketches.sketch(walks)
    if not sketch.pays:
        raise InvalidParameterError(f"{kind}: {sketch.reason}: {sketch.detail}")
    return sketch.classifier


def _base(walks: Walks, side: str, theta: float, kind: str = "constant"):
    """The classifier for rules of ``kind`` at this side and θ (its constant rule)."""
    return _classifier(walks, kind).with_rule("constant", side=side, threshold=float(theta))


@pn.cache(max_items=24, hash_funcs=WALKS_HASH)
def family_outcomes(walks: Walks, family: str, side: str, theta: float) -> GridOutcomes:
    """A family's (or sketched rule's) early decisions on the test set at every scale of
    :data:`Z_GRID`."""
    return _base(walks, side, theta, family).scale_outcomes(walks.X_test, family, Z_GRID)


@pn.cache(max_items=24, hash_funcs=WALKS_HASH)
def calibrated(walks: Walks, side: str, theta: float, delta: float, alpha: float):
    """The classifier calibrated on the held-out examples (``family="auto"``, SPEC §3)."""
    base = walks.classifier.with_rule("curved", side=side, threshold=float(theta))
    with warnings.catch_warnings():
        # A fallback to full evaluation is stated on the page (the report's guarantee).
        warnings.simplefilter("ignore")
        return base.calibrate(
            walks.problem.X_cal, delta=float(delta), alpha=float(alpha), family="auto"
        )


def rule_classifier(walks: Walks, rule: Rule):
    """The fitted classifier making ``rule``'s decisions: the one the dashboard exports."""
    if rule.kind == "calibrated":
        return calibrated(walks, rule.side, rule.theta, rule.delta, rule.alpha)
    if rule.kind == "budget":
        return walks.classifier.with_rule(
            "budget",
            side=rule.side,
            threshold=float(rule.theta),
            budget=rule.budget_terms(walks.n_terms),
        )
    if rule.kind not in scaled_kinds():
        raise InvalidParameterError(f"boundary must be one of {kinds()}, got {rule.kind!r}.")
    at = {"side": rule.side, "threshold": float(rule.theta)}
    if rule.z is not None:
        return _classifier(walks, rule.kind).with_rule(rule.kind, z=float(rule.z), **at)
    return _classifier(walks, rule.kind).with_rule(rule.kind, delta=float(rule.delta), **at)


@dataclass(frozen=True)
class Outcome:
    """The current rule on the test set: early decisions and terms evaluated per example; for a
    sketched rule also the sketch's cost per row and a walked term's (full-evaluation units)."""

    positive: np.ndarray
    n_evaluated: np.ndarray
    full_positive: np.ndarray
    n_terms: int
    report: CalibrationReport | None = None
    sketch_cost: float = 0.0
    term_cost: float = 1.0

    @property
    def stopped(self) -> np.ndarray:
        return self.n_evaluated < self.n_terms

    @property
    def work_fraction(self) -> float:
        """Work per example in full evaluations: the sketch and the exact terms at their cost
        (the fraction of terms evaluated without a sketch; ``Evaluation.work_fraction``)."""
        fraction = float(self.n_evaluated.mean()) / self.n_terms
        return self.sketch_cost + fraction * self.term_cost


@pn.cache(max_items=16, hash_funcs=WALKS_HASH)
def _budget_outcome(walks: Walks, side: str, theta: float, budget: int) -> tuple:
    ev = walks.classifier.with_rule(
        "budget", side=side, threshold=float(theta), budget=int(budget)
    ).evaluate(walks.X_test)
    return ev.positive, ev.n_evaluated


def outcome(walks: Walks, rule: Rule) -> Outcome:
    """The current rule's decisions: one column of its family's cached outcomes."""
    n = walks.n_terms
    report = None
    kind, z = rule.kind, None
    if kind == "calibrated":
        clf = rule_classifier(walks, rule)
        report = clf.calibration_
        kind, z = report.family, report.chosen_scale
    elif kind in scaled_kinds():
        z = rule.scale
    costs = {}
    if is_sketched(kind):
        sketch = sketches.sketch(walks)
        costs = {"sketch_cost": sketch.sketch_cost, "term_cost": sketch.term_cost}
    any_family = family_names()[0]
    full = family_outcomes(walks, kind if z is not None else any_family, rule.side, rule.theta)
    if kind == "budget":
        pos, n_eval = _budget_outcome(walks, rule.side, rule.theta, rule.budget_terms(n))
    elif z is None:  # calibration fell back to full evaluation
        pos, n_eval = full.full_positive, np.full(full.full_positive.size, n)
    else:
        j = scale_column(z)
        pos, n_eval = full.positive[:, j], full.n_evaluated[:, j]
    return Outcome(pos, n_eval, full.full_positive, n, report, **costs)


# ----------------------------------------------------------------------------- tradeoff


@dataclass(frozen=True)
class Tradeoff:
    """Every rule on one tradeoff, for one (walk, side, θ).

    Attributes
    ----------
    families : DataFrame
        ``method`` (family), ``z``, ``mean_evaluated_fraction``, ``stop_error``,
        ``disagreement`` (:func:`attentive.experiments.family_tradeoffs`) and ``work_fraction``,
        the work per example in full evaluations (a sketched rule's includes its sketch: the
        plot's x); with the sketch, the sketched rules' rows follow the families'.
    budgeted, sweep : DataFrame
        The budgeted rule over B and (one-sided only) the paper's constant τ sweep.
    table : DataFrame
        :func:`attentive.operating_points` with the stop-error: one row per family (or sketched
        rule) and scale, with ``sketch_cost`` (0 without a sketch) and ``work_fraction``.
    oracle_fraction : float
        Mean evaluated fraction of the all-knowing rule (a floor, disagreement 0).
    """

    families: pd.DataFrame
    budgeted: pd.DataFrame
    sweep: pd.DataFrame
    table: pd.DataFrame
    oracle_fraction: float
    theta_s: float


def _curve_frame(curve) -> pd.DataFrame:
    f = curve.to_frame()
    return f.rename(columns={curve.parameter_name: "parameter"})


def _tables_key(walks: Walks, side: str, theta: float, sketched: bool = False) -> tuple:
    return (walks.key, side, float(theta), bool(sketched))


@shared(key=_tables_key, max_items=12)
def tradeoff(walks: Walks, side: str, theta: float, sketched: bool = False) -> Tradeoff:
    """The tradeoff of every family, the budgeted baseline, the τ sweep and the oracle floor;
    ``sketched``: with the sketched rules too (the walk's sketch must pay).

    Computed once per (walk, side, θ, sketched) even when several sessions ask at once;
    ``tradeoff.peek(walks, side, theta)`` is the cached value or None (the state draws the
    numbers first and computes a missing tradeoff in the background)."""
    from attentive.experiments.compute import family_tradeoffs

    if sketched:
        return _with_sketched(tradeoff(walks, side, theta), walks, side, theta)
    base = _base(walks, side, theta)
    X, S, n = walks.X_test, walks.S, walks.n_terms
    families = family_tradeoffs(base, X, side)
    table = _points(walks, side, theta, base.scaled_rules())
    if "stop_error" not in table:
        table = table.merge(
            families.rename(columns={"method": "family"})[["family", "z", "stop_error"]],
            on=["family", "z"],
            how="left",
        )
    budgets = np.unique(np.linspace(1, n, min(n, N_BUDGETS)).round().astype(np.int64))
    budgeted = _curve_frame(budgeted_tradeoff(S, base.theta_s_, budgets, side))
    sweep = (
        _curve_frame(AttentiveSweep(S, base.theta_s_, side).curve())
        if side in ("lower", "upper")
        else pd.DataFrame(columns=budgeted.columns)
    )
    oracle = float(np.mean(base.oracle_n_evaluated(X))) / n
    families["work_fraction"] = families["mean_evaluated_fraction"]
    return Tradeoff(families, budgeted, sweep, table, oracle, float(base.theta_s_))


def _points(walks: Walks, side: str, theta: float, names) -> pd.DataFrame:
    """:func:`attentive.operating_points` of the rules ``names`` on the test set, from their
    cached outcomes on :data:`Z_GRID` (:func:`family_outcomes`: the scales the rules' own
    outcomes use, the slider's δ among them, so every rule the controls can set is a row of the
    table and the picker highlights it)."""
    return pd.concat(
        [
            outcome_points(
                _base(walks, side, theta, name),
                name,
                family_outcomes(walks, name, side, theta),
                # (the true classes as the model's: an uploaded model's may be a file's own)
                np.asarray(walks.classifier.classes_)[walks.y_test.astype(np.int64)],
            )
            for name in names
        ],
        ignore_index=True,
    )


def _with_sketched(plain: Tradeoff, walks: Walks, side: str, theta: float) -> Tradeoff:
    """``plain`` with the sketched rules' rows: their operating points on the test set (one
    pass per rule over the scales), each at its work — the sketch plus the walked terms
    (:func:`attentive.operating_points.outcome_points`)."""
    rows = _points(walks, side, theta, rule_names("sketched"))
    curves = rows.rename(columns={"family": "method"})
    curves["mean_evaluated"] = curves["mean_evaluated_fraction"] * walks.n_terms
    curves = curves[[c for c in plain.families.columns if c in curves]]
    return dataclasses.replace(
        plain,
        families=pd.concat([plain.families, curves], ignore_index=True),
        table=pd.concat([plain.table, rows[plain.table.columns]], ignore_index=True),
    )


def tradeoff_ready(walks: Walks, side: str, theta: float) -> Tradeoff | None:
    """The tradeoff if it is cached, else None (nothing is computed)."""
    return tradeoff.peek(walks, side, theta)


def cheapest(walks: Walks, side: str, theta: float, sketched: bool, target: float) -> pd.Series:
    """The cheapest rule (least work per example; ties: the more conservative scale, then the
    rule listed first) whose disagreement on the test set is at most ``target`` (``sketched``:
    the sketched rules compete too), as :func:`attentive.cheapest_operating_point` chooses,
    among the scales the δ slider can set (:func:`on_slider`)."""
    whole = tradeoff(walks, side, theta, sketched).table
    table = on_slider(whole)
    if not (table["disagreement"] <= float(target)).any():
        # Only a rule beyond the slider (δ' below 0.01 %) reaches it, or the target is refused.
        row = cheapest_row(whole, target, "the target")
        raise InvalidParameterError(
            f"no rule at {slider_span()} reaches disagreement ≤ {float(target):g} on this test "
            f"set (the {row['family']} rule at z = {float(row['z']):.2f}, beyond the slider, "
            "does); the budget rule with B at every term evaluates them all."
        )
    return cheapest_row(table, target, "the target")


#: Rules timed per family for :func:`rule_times` (spread over the family's evaluated fractions),
#: and runs of each (the fastest is kept).
TIMED_PER_FAMILY = 4
TIMED_RUNS = 3


@shared(key=_tables_key, max_items=12)
def rule_times(walks: Walks, side: str, theta: float, sketched: bool = False) -> pd.DataFrame:
    """Microseconds per test example of every operating point of :func:`tradeoff`'s table
    (``sketched``: with the sketched rules' rows, timed after the plain ones).

    The evaluator runs on the test set (the fastest of :data:`TIMED_RUNS`, in passes over the
    rules; an implausible time taken again: :data:`IMPLAUSIBLE`) at
    :data:`TIMED_PER_FAMILY` rules of each family, spread over its evaluated fractions, and at
    full evaluation; the other rows are interpolated along the family's evaluated fraction
    (``measured`` says which rows' times were measured: not a rule timed busy throughout,
    which is interpolated too). Timing every one of the ~3,700 rows would take
    minutes; a family's time follows its fraction of terms closely between the timed rules.
    """
    X = walks.X_test
    if sketched:
        plain = rule_times(walks, side, theta)
        table = tradeoff(walks, side, theta, True).table
        rows = table[table["family"].map(is_sketched)]
        full_us = plain.attrs["full_us_per_example"]
        times = pd.concat([plain, _timed(walks, side, theta, rows, full_us)], ignore_index=True)
        times.attrs["full_us_per_example"] = full_us
        return times
    full_us = _fastest_us(_base(walks, side, theta).with_rule("full"), X)
    times = _timed(walks, side, theta, tradeoff(walks, side, theta).table, full_us)
    times.attrs["full_us_per_example"] = full_us
    return times


def _timed(
    walks: Walks, side: str, theta: float, table: pd.DataFrame, full_us: float
) -> pd.DataFrame:
    """:func:`rule_times` of the rows of ``table``: :data:`TIMED_PER_FAMILY` rules of each
    family timed (:func:`_fastest_each`, implausible times taken again: :func:`_implausible`),
    the others interpolated along its work per example."""
    groups, clfs, work, family_of = [], [], [], []
    for family, rows in table.groupby("family", sort=False):
        base = _base(walks, side, theta, family)
        rows = rows.sort_values("work_fraction")
        picks = np.unique(np.linspace(0, len(rows) - 1, TIMED_PER_FAMILY).round().astype(int))
        anchors = rows.iloc[picks]
        groups.append((rows, anchors, len(clfs)))
        clfs += [base.with_rule(family, z=float(z)) for z in anchors["z"]]
        work += list(anchors["work_fraction"])
        family_of += [family] * len(anchors)
    us = _fastest_each(clfs, walks.X_test)
    for _ in range(RETIMES):
        again = _implausible(us, work, family_of, full_us)
        if not again:
            break
        time.sleep(RETIME_PAUSE)
        retimed = _fastest_each([clfs[i] for i in again], walks.X_test)
        for i, u in zip(again, retimed, strict=True):
            us[i] = min(us[i], u)
    # A rule still implausible after its retimes was timed on a busy machine throughout: its
    # time is not known, and it is interpolated as the rows between the timed ones are — from
    # its family's plausible times (a user's trial kept 70.4 µs per example beside a full
    # evaluation of ~12 for a sketched rule, and 21.5 beside 17.8 for one doing more work).
    busy = set(_implausible(us, work, family_of, full_us))
    out = []
    for rows, anchors, start in groups:
        frame = rows[["family", "z"]].copy()
        timed = np.asarray(us[start : start + len(anchors)], dtype=float)
        kept = np.array([start + j not in busy for j in range(len(anchors))])
        if not kept.any():  # (every one busy: the times as measured)
            kept[:] = True
        at, known = anchors["work_fraction"].to_numpy()[kept], timed[kept]
        if not kept[-1]:
            # (The rule doing the most work busy: beyond the last plausible one, towards full
            # evaluation's time at a full evaluation's work, not held flat.)
            at, known = np.append(at, max(1.0, at[-1])), np.append(known, max(full_us, known[-1]))
        frame["us_per_example"] = np.interp(rows["work_fraction"], at, known)
        frame["measured"] = frame["z"].isin(anchors["z"][kept])
        out.append(frame)
    return pd.concat(out, ignore_index=True)


#: A timed rule is implausible (:func:`_implausible`) at more than this many times full
#: evaluation's time, or than a rule of its family that walks more terms. Served, a burst of
#: work on the server's main thread (another session's page) holds the interpreter lock through
#: every run of a rule: a user's trial saw rules at 297, 150 and 104 µs per example beside
#: neighbours at 5, and the time-budget picker chose by them. Such rules are timed again,
#: :data:`RETIMES` times at most, :data:`RETIME_PAUSE` seconds apart, keeping the fastest run.
IMPLAUSIBLE = 3.0
RETIMES = 2
RETIME_PAUSE = 0.5


def _implausible(us, work, family_of, full_us: float) -> list[int]:
    """Indices of the timed rules whose time (``us``, µs per example, at ``work`` of a full
    evaluation in family ``family_of``) is implausible: above :data:`IMPLAUSIBLE` × full
    evaluation's, or × that of a rule of the same family doing more work."""
    out = []
    for i, (u, w, f) in enumerate(zip(us, work, family_of, strict=True)):
        more = [v for v, x, g in zip(us, work, family_of, strict=True) if g == f and x > w]
        if u > IMPLAUSIBLE * full_us or (more and u > IMPLAUSIBLE * min(more)):
            out.append(i)
    return out


def _fastest_each(clfs, X) -> list[float]:
    """Each classifier's fastest ``evaluate(X)`` in µs per example over :data:`TIMED_RUNS`
    passes, after one untimed run of each. The passes go over every classifier in turn, so a
    burst of other work slows one run of a rule rather than all of them."""
    for clf in clfs:
        clf.evaluate(X)
    best = [np.inf] * len(clfs)
    for _ in range(TIMED_RUNS):
        for i, clf in enumerate(clfs):
            t = time.perf_counter()
            clf.evaluate(X)
            best[i] = min(best[i], time.perf_counter() - t)
    return [float(b) * 1e6 / max(X.shape[0], 1) for b in best]


def _fastest_us(clf, X) -> float:
    """``clf.evaluate(X)``'s fastest time per example in µs over :data:`TIMED_RUNS` runs, after
    one untimed run (a new classifier's first evaluation prepares its evaluator). The fastest,
    as ``timeit`` advises: another program or session can only slow a run down (the median of
    three, taken on a busy machine, once put a rule at 27 % of the terms at 517 µs beside one
    at 50 % at 142 µs). :func:`_fastest_each` of one classifier."""
    return _fastest_each([clf], X)[0]


def timed_table(trade: Tradeoff, times: pd.DataFrame | None) -> pd.DataFrame:
    """The operating points of ``trade`` with their time per example (:func:`rule_times`)."""
    if times is None:
        return trade.table
    return trade.table.merge(times, on=["family", "z"], how="left")


#: Rules a time budget's pick times at most (:func:`timed_pick`), runs of each (after one
#: untimed run), and the seconds of timing after which it times no more rules (the pick runs on
#: the page's thread: a test set of 25,000 rows at 50 µs a row takes 1.25 s a run).
PICK_TIMINGS = 6
PICK_RUNS = 5
PICK_SECONDS = 0.5


def times_cover(times: pd.DataFrame | None, trade: Tradeoff) -> bool:
    """Whether ``times`` holds a time for every operating point of ``trade`` (the plain rules'
    times do not cover a table with the sketched rules: they are computed after it)."""
    if times is None:
        return False
    rows = trade.table[["family", "z"]].merge(times[["family", "z"]], how="left", indicator=True)
    return bool((rows["_merge"] == "both").all())


def timed_pick(
    walks: Walks,
    side: str,
    theta: float,
    sketched: bool,
    budget: float,
    times: pd.DataFrame | None = None,
) -> tuple[pd.Series, pd.DataFrame]:
    """The rule a time budget picks, timed: its row (of :func:`timed_table`) and the times
    (``times``, default :func:`rule_times`; they must cover the table, :func:`times_cover`)
    with what was timed.

    :func:`lowest_within_time` picks by the table, whose times are the fastest of a few runs
    and, between the rules timed, interpolated along a family's fraction of terms, and the pick
    goes where the interpolation errs low. The card times the rule picked as the median of its
    rounds. On MNIST 2 vs 5 (the default page), budgets of 3.5 to 8 µs picked interpolated rows
    at 3.47–7.35 µs that timed at 3.50–7.52 (fastest of three runs, thrice; up to 25 % above),
    and the fastest of a rule's runs was ~9 % below their median. So the rule picked is timed,
    :data:`PICK_RUNS` runs, and it is *within* the budget where their median is: their fastest
    becomes its time in the table (``measured``; its family's other rows are interpolated again
    with it; a rule the table timed already keeps its time). A rule timed over the budget is
    listed at their median (or its time in the table, if that is higher), and scales the limit
    the table's other times are held to by its fastest over its median (a rule whose fastest
    run is within ``budget × fastest / median`` has its median within the budget, if it runs
    alike) — but never below the time the table lists for a rule timed within the budget (a
    rule listed as faster than one timed within it is a candidate too). So no rule the table
    lists as faster than the rule picked has a lower disagreement: a browser test found one in
    a run of five, when a rule over the budget stayed listed at its fastest run, and rules
    between the scaled limit and the pick's time were never candidates. The pick is then made
    again, among the rules within that limit in the table as it now stands and the rules timed
    within the budget, until it lands on one of the latter. After :data:`PICK_TIMINGS` timings,
    or :data:`PICK_SECONDS` of them, the rule timed within the budget with the lowest
    disagreement stands; where none was, the table's pick as it then stands (its time there
    within the budget: the timed rows at their fastest, those over it at their median), else
    the last rule timed (the card says if it is over the budget). A timing whose fastest run is over
    :data:`IMPLAUSIBLE` times full evaluation's or the table's time of that rule (the machine
    busy through it) is neither kept nor judged: the rule is timed again within those limits,
    or the table's pick stands. A table without a ``measured`` column is taken as timed
    throughout, and its pick is not timed."""
    key = (walks, side, theta, sketched)
    trade = tradeoff(*key)
    times = times if times_cover(times, trade) else rule_times(*key)
    row = lowest_within_time(timed_table(trade, times), budget)
    if "measured" not in row.index:
        return row, times
    limit, within, last, tried = float(budget), set(), None, 0
    started = time.perf_counter()
    full_us = float(times.attrs.get("full_us_per_example", np.inf))
    for _ in range(PICK_TIMINGS):
        family, z = str(row["family"]), float(row["z"])
        if (family, z) in within:
            break
        if tried and time.perf_counter() - started > PICK_SECONDS:
            row = None
            break
        runs = _runs_us(_base(walks, side, theta, family).with_rule(family, z=z), walks.X_test)
        fastest, median = min(runs), float(np.median(runs))
        tried += 1
        if fastest > IMPLAUSIBLE * min(full_us, float(row["us_per_example"])):
            # The machine was busy through every run (another program, another session's
            # work): a user's trial kept rules at 137–203 µs beside neighbours at 5, for every
            # later session and in the exports. Not kept, not judged: timed again, or the
            # table's pick stands.
            continue
        last = (family, z)
        if median <= budget:
            within.add(last)
            if not bool(row["measured"]):
                times = with_time(times, trade.table, family, z, fastest)
        else:
            limit = min(limit, budget * fastest / median)
            # Over the budget by its median: listed at it (its family's untimed rows
            # interpolated again with it), so the table shows why it was not picked. (Its
            # fastest run there, within the budget, had it in the table beside the pick: a
            # rule faster by the table and with a lower disagreement than the rule picked.)
            times = with_time(
                times, trade.table, family, z, max(median, float(row["us_per_example"]))
            )
        table = timed_table(trade, times)
        row = _lowest_among(table, max(limit, _slowest(table, within)), within)
        if row is None:
            break
    else:
        row = None  # (timings spent on rules over the budget: the row picked last is untimed)
    table = timed_table(trade, times)
    if last is None:  # (nothing timed: PICK_TIMINGS is 0, or every timing was implausible)
        row = lowest_within_time(table, budget)
    elif within and (row is None or (str(row["family"]), float(row["z"])) not in within):
        row = _lowest_among(table, -np.inf, within)
    elif not within:
        # (No rule timed within the budget: the table's pick as it now stands, whose time there
        # is within it; none, the last rule timed.)
        row = _lowest_among(table, budget, set())
        row = _lowest_among(table, -np.inf, {last}) if row is None else row
    return table[(table["family"] == row["family"]) & (table["z"] == row["z"])].iloc[0], times


def _slowest(table: pd.DataFrame, rules: set) -> float:
    """The largest time ``table`` lists for ``rules`` ((family, z) pairs), −inf for none."""
    if not rules:
        return -np.inf
    named = [(f, float(z)) in rules for f, z in zip(table["family"], table["z"], strict=True)]
    return float(table.loc[named, "us_per_example"].max())


def _lowest_among(table: pd.DataFrame, limit: float, rules: set) -> pd.Series | None:
    """The lowest disagreement among the rows the slider can set that are within ``limit`` or
    among ``rules`` ((family, z) pairs); ties go to the faster rule, then the more conservative
    scale. None where there are none."""
    table = on_slider(table)
    named = pd.Series(
        [(f, float(z)) in rules for f, z in zip(table["family"], table["z"], strict=True)],
        index=table.index,
        dtype=bool,
    )
    ok = table[(table["us_per_example"] <= limit) | named]
    if ok.empty:
        return None
    best = ok.sort_values(
        ["disagreement", "us_per_example", "z"], ascending=[True, True, False], kind="stable"
    )
    return best.iloc[0]


def _runs_us(clf, X) -> list[float]:
    """``clf.evaluate(X)``'s :data:`PICK_RUNS` runs in µs per example, after one untimed run."""
    clf.evaluate(X)
    runs = []
    for _ in range(PICK_RUNS):
        t = time.perf_counter()
        clf.evaluate(X)
        runs.append((time.perf_counter() - t) * 1e6 / max(X.shape[0], 1))
    return runs


def with_time(
    times: pd.DataFrame, table: pd.DataFrame, family: str, z: float, us: float
) -> pd.DataFrame:
    """``times`` (of :func:`rule_times`) with rule ``family`` at ``z`` timed at ``us`` µs per
    example (``measured``), the family's rows that were not timed interpolated again along their
    fraction of terms (``table``, the operating points)."""
    out = times.copy()
    out.attrs = dict(times.attrs)
    mine = (out["family"] == family).to_numpy()
    at = mine & (np.abs(out["z"].to_numpy() - z) <= 1e-12)
    out.loc[at, "us_per_example"] = float(us)
    out.loc[at, "measured"] = True
    rows = out.loc[mine, ["z"]].merge(
        table.loc[table["family"] == family, ["z", "work_fraction"]], on="z", how="left"
    )
    work = rows["work_fraction"].to_numpy()
    measured = out.loc[mine, "measured"].to_numpy(dtype=bool)
    anchors = np.argsort(work[measured], kind="stable")
    us_all = np.array(out.loc[mine, "us_per_example"], dtype=float)  # (a copy: writeable)
    xs, ys = work[measured][anchors], us_all[measured][anchors]
    us_all[~measured] = np.interp(work[~measured], xs, ys)
    out.loc[mine, "us_per_example"] = us_all
    return out


def theta_range(walks: Walks) -> tuple[float, float]:
    """θ's range for a walk: the central 99 % of f(x) on the test set and 0, widened by 5 %."""
    lo, hi = np.quantile(walks.full_score, [0.005, 0.995])
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    span = hi - lo or 1.0
    return round(lo - 0.05 * span, 2), round(hi + 0.05 * span, 2)


def lowest_within_time(table: pd.DataFrame, us_per_example: float) -> pd.Series:
    """The rule with the lowest disagreement among those of ``table`` (operating points with a
    ``us_per_example`` column) that the δ slider can set (:func:`on_slider`) and take at most
    ``us_per_example`` µs per example; ties go to the faster rule, then the more conservative
    scale."""
    budget = float(us_per_example)
    best = _lowest_among(table, budget, set())
    if best is None:
        fastest = float(on_slider(table)["us_per_example"].min())
        raise InvalidParameterError(
            f"no rule at {slider_span()} runs within {budget:g} µs per example on this test "
            f"set; the fastest takes {fastest:.3g} µs."
        )
    return best


# ----------------------------------------------------------------------------- measurement


@dataclass(frozen=True)
class Measurement:
    """The evaluator run on the test set at the current rule (what the exported model does).

    ``seconds`` and ``full_seconds`` are the medians of the rounds; ``ratios`` the ratio of full
    evaluation over the rule within each round (both run back to back)."""

    seconds: float
    full_seconds: float
    agrees: bool
    mean_evaluated: float
    pr: pd.DataFrame
    average_precision: dict
    ratios: tuple = ()
    n_examples: int = 1
    #: Whether the kept rounds spread at most :data:`STEADY_SPREAD`, and full evaluation ran
    #: within :data:`BUSY_FULL` times its time in the operating points' table (``busy``). An
    #: unsteady timing (the machine stayed busy over every attempt) gives no verdict and is taken
    #: again on the next visit: :func:`measure` does not keep it.
    steady: bool = True
    #: Full evaluation's time here over its time in the table, where that is over
    #: :data:`BUSY_FULL` (the machine busy through every round: a user's trial read 202.93 µs
    #: per example, "steady", for a rule timed at 5.4 alone); None otherwise.
    busy: float | None = None

    @property
    def time_ratio(self) -> float:
        """The median of the rounds' ratios full / rule (> 1: the rule is faster)."""
        if self.ratios:
            return float(np.median(self.ratios))
        return self.full_seconds / self.seconds if self.seconds > 0 else float("nan")

    @property
    def ratio_spread(self) -> tuple[float, float]:
        """The lowest and highest ratio over the rounds."""
        r = self.ratios or (self.time_ratio,)
        return float(min(r)), float(max(r))

    @property
    def spread(self) -> float:
        """Highest over lowest ratio of the rounds (:func:`ratios_spread`; 1 for one round)."""
        return ratios_spread(self.ratios or (self.time_ratio,))

    @property
    def us_per_example(self) -> float:
        return 1e6 * self.seconds / max(self.n_examples, 1)


#: Rounds of the timing: each times the rule and full evaluation back to back.
TIMING_ROUNDS = 7


def interleaved_times(fns, rounds: int = TIMING_ROUNDS) -> tuple[list[list[float]], list]:
    """Every run's time of each of ``fns`` over ``rounds`` rounds, run in turn within each round
    (so a stall of the machine or of the server's other threads hits one round's pair, not one
    side of every ratio), and each function's last result."""
    times: list[list[float]] = [[] for _ in fns]
    out = [None] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            out[i] = fn()
            times[i].append(time.perf_counter() - t)
    return times, out


#: A timing whose per-round ratios spread wider than this (largest over smallest) was taken
#: while something else ran (another session's tables, a page being drawn, another program):
#: it is taken again, up to :data:`TIMING_ATTEMPTS` times, and the steadiest kept. Quiet, the
#: default rule's seven ratios spread 1.02–1.78 (1.7×); taken on a machine busy with other
#: work, 0.10–0.54 (5.4×), a median of 0.13× kept for every later visit. A timing still that
#: wide after every attempt (a server sampled by a profiler: 0.07–0.83, 12×, three times) is
#: shown as unsteady, without a verdict, and not kept (:attr:`Measurement.steady`).
STEADY_SPREAD = 3.0
TIMING_ATTEMPTS = 3


def ratios_spread(ratios) -> float:
    """Highest over lowest of the rounds' ratios; infinite without rounds or with a zero one."""
    return max(ratios) / min(ratios) if ratios and min(ratios) > 0 else float("inf")


def steady_times(fns, rounds: int = TIMING_ROUNDS, attempts: int = TIMING_ATTEMPTS):
    """:func:`interleaved_times` of ``fns`` (the first timed against the second), taken again
    while the per-round ratios spread more than :data:`STEADY_SPREAD`; the attempt with the
    narrowest spread is returned."""
    best, best_spread = None, np.inf
    for _ in range(max(1, attempts)):
        times, out = interleaved_times(fns, rounds)
        ratios = [f / r for f, r in zip(times[1], times[0], strict=True) if r > 0 and f > 0]
        spread = ratios_spread(ratios)
        if best is None or spread < best_spread:
            best, best_spread = (times, out), spread
        if spread <= STEADY_SPREAD:
            break
    return best


#: Seconds a timing is shown to later visits: a steady timing can still have been taken while
#: the server drew another session's pages the whole time (a user's trial saw 0.13×, with the
#: "walking costs more" warning, shown to every later session of a server where the rule alone
#: times 1.54×). Older, the next visit times the rule again.
MEASURE_MAX_AGE = 300.0


@shared(
    key=lambda walks, rule: (walks.key, rule),
    max_items=64,
    keep=lambda m: m.steady,
    max_age=MEASURE_MAX_AGE,
)
def measure(walks: Walks, rule: Rule) -> Measurement:
    """Run the evaluator at ``rule`` on the test set: wall-clock time against full evaluation
    (:data:`TIMING_ROUNDS` rounds, taken again if they spread wide: :func:`steady_times`),
    whether its decisions are the dashboard's, and the
    precision–recall of the paper's Algorithm-1 scores (``stopped_score="boundary"``) beside the
    full score and a budget of the same mean cost. Once per (walk, rule): a rule visited again
    shows the timing it had, unless that timing was unsteady or is older than
    :data:`MEASURE_MAX_AGE` (it is taken again then)."""
    current = outcome(walks, rule)
    clf = copy.copy(rule_classifier(walks, rule)).set_params(stopped_score="boundary")
    X = walks.X_test
    full = walks.classifier.with_rule("full")
    (rule_runs, full_runs), (ev, _) = steady_times(
        [lambda: clf.evaluate(X), lambda: full.evaluate(X)]
    )
    ratios = tuple(f / r for f, r in zip(full_runs, rule_runs, strict=True) if r > 0 and f > 0)
    agrees = bool(
        np.array_equal(ev.positive, current.positive)
        and np.array_equal(ev.n_evaluated, current.n_evaluated)
    )
    n = walks.n_terms
    b = max(1, min(n, round(float(ev.work_fraction) * n)))  # the same work per example
    budget = walks.classifier.with_rule(
        "budget", side=rule.side, threshold=float(rule.theta), budget=b
    ).set_params(stopped_score="boundary")
    scores = {
        "full": walks.full_score,
        "attentive": ev.decision,
        "budgeted": budget.evaluate(X).decision,
    }
    curves = precision_recall(walks.y_test, scores)
    pr = pd.concat(
        [
            pd.DataFrame({"method": k, "recall": c.recall, "precision": c.precision})
            for k, c in curves.items()
        ],
        ignore_index=True,
    )
    full_seconds = float(np.median(full_runs))
    busy = _busy(walks, rule, full_seconds)
    return Measurement(
        seconds=float(np.median(rule_runs)),
        full_seconds=full_seconds,
        agrees=agrees,
        mean_evaluated=float(ev.n_evaluated.mean()),
        pr=pr,
        average_precision={k: float(c.average_precision) for k, c in curves.items()},
        ratios=ratios,
        n_examples=int(walks.y_test.size),
        steady=ratios_spread(ratios) <= STEADY_SPREAD and busy is None,
        busy=busy,
    )


#: Full evaluation's median round on the card over its fastest in the operating points' table
#: beyond which the card's timing is a busy machine's (:func:`_busy`). Wider than
#: :data:`IMPLAUSIBLE`: a median against a fastest, beside a page being drawn (served on a quiet
#: machine, the card's timings ran 1.2–2.1× the table's), where the case it is for ran 40×.
BUSY_FULL = 5.0


def _busy(walks: Walks, rule: Rule, full_seconds: float) -> float | None:
    """Full evaluation's median time here over its time in the operating points' table (the
    fastest of a few runs, :func:`rule_times`, where already computed), where that is over
    :data:`BUSY_FULL`; else None. The rounds' ratios stay steady when the machine is busy
    through all of them, the µs per example do not."""
    times = rule_times.peek(walks, rule.side, rule.theta, False)
    table_us = None if times is None else times.attrs.get("full_us_per_example")
    if not table_us or not np.isfinite(table_us):
        return None
    here = 1e6 * full_seconds / max(int(walks.y_test.size), 1)
    ratio = here / float(table_us)
    return ratio if ratio > BUSY_FULL else None


# ----------------------------------------------------------------------------- small helpers


def bridge_envelope(
    n: int, variance: float, theta_s: float, delta: float, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Brownian bridge the constant boundary assumes (SPEC §2): from ``S_0 = 0`` to
    ``S_n = θ_S`` with variance V, mean ``t θ_S / n`` and spread ``sqrt(V t (n − t)) / n``;
    returns the mean and the band ``± z`` spreads with ``z = Φ⁻¹(1 − δ)``."""
    t = np.asarray(positions, dtype=np.float64)
    mean = t * theta_s / n
    spread = z_of(delta) * np.sqrt(np.maximum(variance * t * (n - t), 0.0)) / n
    return mean, mean - spread, mean + spread


def metrics(walks: Walks, current: Outcome, side: str) -> dict:
    """The headline numbers of the current rule on the test set."""
    y = walks.y_test
    pos, full = current.positive, current.full_positive
    mean_eval = float(current.n_evaluated.mean())
    n = walks.n_terms
    work = current.work_fraction
    return {
        "accuracy_full": float(np.mean(full == y)),
        "accuracy_attentive": float(np.mean(pos == y)),
        "stop_error": stop_error(pos, full, side),
        "disagreement": disagreement_rate(pos, full),
        # The test set's own uncertainty about it: 95 % two-sided Clopper–Pearson.
        "disagreement_interval": rate_interval(int(np.sum(pos != full)), int(pos.size)),
        "mean_evaluated": mean_eval,
        "mean_evaluated_fraction": mean_eval / n,
        "speedup_terms": n / mean_eval if mean_eval > 0 else float("nan"),
        # A sketched rule's work includes its sketch (the others': the fraction of terms).
        "sketch_cost": current.sketch_cost,
        "work_fraction": work,
        "speedup_work": 1.0 / work if work > 0 else float("nan"),
        "n_stopped": int(current.stopped.sum()),
        "fraction_stopped": float(current.stopped.mean()),
        "n_test": int(pos.size),
        "n_terms": n,
    }


def rate_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval at ``level`` for a rate of ``k`` events in ``n``
    trials (each side at (1 − level) / 2, the upper side as :func:`clopper_pearson_upper`)."""
    if n < 1:
        return (float("nan"), float("nan"))
    tail = (1.0 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    return lo, float(clopper_pearson_upper(k, n, tail))


def clear_caches() -> None:
    for fn in (family_outcomes, calibrated, _budget_outcome, tradeoff, rule_times, measure):
        fn.clear()
    sketches.sketch.clear()
