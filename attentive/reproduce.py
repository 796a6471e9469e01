"""Reproduce the paper's experiments: Figure 3 (simulation) and Figure 4 (datasets).

``python -m attentive reproduce --dataset NAME [--out DIR] [--quick]`` writes, into ``DIR/NAME/``:

* for a dataset: ``tradeoff.csv`` (attentive over τ and budgeted over B: mean evaluated fraction,
  stop-error, disagreement), ``pr.csv`` (precision–recall of the full, attentive and budgeted
  scores), ``summary.json`` and ``figure4.png`` (precision–recall on top, stop-error against
  computation below);
* for ``simulation``: ``decision_error.csv``, ``stopping_time.csv``, ``summary.json`` and
  ``figure3.png`` (required against actual decision error; mean stopping time against n).

The protocol is the paper's (SPEC §4, §6): θ = 0, terms in a seeded random order, centering on the
positive examples of the **training** set (the paper used the test positives), every constant τ from
the lowest partial score up to θ_S, every budget B = 1..n. Computation returns plain dataclasses;
writing and plotting are separate functions, so the notebook and the tests use the same numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.frozen import FrozenEstimator

from attentive.errors import InvalidParameterError
from attentive.metrics import (
    PRCurve,
    TradeoffCurve,
    attentive_tradeoff,
    budgeted_tradeoff,
    precision_recall,
)

__all__ = [
    "CurveComparison",
    "DatasetResult",
    "SimulationResult",
    "attentive_scores",
    "budgeted_at",
    "compare_curves",
    "configure_parser",
    "fraction_at_stop_error",
    "plot_figure3",
    "plot_figure4",
    "reproduce_dataset",
    "reproduce_simulation",
    "run",
    "sweep_taus",
    "write_dataset_result",
    "write_simulation_result",
]

SIMULATION = "simulation"
# The paper: "Attentive prediction requires less computation than Budgeted prediction if the
# required error rate is less than 30%".
PAPER_STOP_ERROR_LIMIT = 0.30
NEAR_ZERO_LOSS = (0.01, 0.005)
TERM_NAMES = {"kernel": "support vectors", "linear": "features", "boosting": "weak learners"}


# ----------------------------------------------------------------------------- curve comparison


@dataclass(frozen=True)
class CurveComparison:
    """Attentive against budgeted on the stop-error / computation plane.

    Both curves are compared at attentive's mean evaluated fractions, budgeted interpolated
    linearly between neighbouring budgets (the paper runs budgeted "with a budget set to the
    average number of support vectors evaluated by the Attentive predictor").

    Attributes
    ----------
    limit : float
        The stop-error below which the paper claims attentive wins (0.30).
    beats_below : float
        The largest stop-error ``s`` such that attentive ≤ budgeted at every attentive point with
        stop-error below ``s``: the attentive stop-error at the first point (from the cheapest-to-stop
        end, τ low) where attentive is worse; attentive's largest stop-error if it never is.
    ever_worse : bool
        Whether attentive is worse than budgeted anywhere on its curve.
    max_excess : float
        Largest ``attentive − budgeted`` stop-error over points where both are below ``limit``
        (0 when attentive is never worse there).
    max_excess_fraction : float
        Mean evaluated fraction where ``max_excess`` occurs (NaN when it is 0).
    worse_fractions : tuple of float
        ``(lowest, highest)`` mean evaluated fraction at which attentive is worse while both are
        below ``limit`` (NaNs when never).
    n_compared, n_worse : int
        Attentive points with both below ``limit``, and how many of them are worse.
    mean_difference : float
        Mean ``attentive − budgeted`` stop-error over those points (negative: attentive better on
        average; less sensitive to budgeted's jagged curve than ``max_excess``).
    """

    limit: float
    beats_below: float
    ever_worse: bool
    max_excess: float
    max_excess_fraction: float
    worse_fractions: tuple[float, float]
    n_compared: int
    n_worse: int
    mean_difference: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "beats_below": self.beats_below,
            "ever_worse": self.ever_worse,
            "max_excess": self.max_excess,
            "max_excess_fraction": self.max_excess_fraction,
            "worse_fractions": list(self.worse_fractions),
            "n_compared": self.n_compared,
            "n_worse": self.n_worse,
            "mean_difference": self.mean_difference,
        }


def budgeted_at(budgeted: TradeoffCurve, fractions) -> np.ndarray:
    """Budgeted stop-error at given mean evaluated fractions (linear between budgets)."""
    frac = np.asarray(budgeted.mean_evaluated_fraction, dtype=np.float64)
    err = np.asarray(budgeted.stop_error, dtype=np.float64)
    order = np.argsort(frac, kind="stable")
    frac, err = frac[order], err[order]
    return np.interp(np.asarray(fractions, dtype=np.float64), frac, err)


def _first_loss(att_err: np.ndarray, bud_err: np.ndarray) -> tuple[float, bool]:
    # A relative tolerance: both are ratios of the same counts, equal values must count as ties.
    worse = att_err > bud_err + 1e-12
    if not worse.any():
        return float(np.nanmax(att_err)), False
    return float(att_err[np.argmax(worse)]), True


def compare_curves(
    attentive: TradeoffCurve, budgeted: TradeoffCurve, limit: float = PAPER_STOP_ERROR_LIMIT
) -> CurveComparison:
    """Where attentive stops beating budgeted, and by how much it loses below ``limit``.

    Parameters
    ----------
    attentive : TradeoffCurve
        From :func:`attentive.metrics.attentive_tradeoff` (any order of τ).
    budgeted : TradeoffCurve
        From :func:`attentive.metrics.budgeted_tradeoff`.
    limit : float
        Stop-error below which the comparison is summarised (the paper's 30%).

    Returns
    -------
    CurveComparison
    """
    frac = np.asarray(attentive.mean_evaluated_fraction, dtype=np.float64)
    att = np.asarray(attentive.stop_error, dtype=np.float64)
    # Walk the attentive curve from no stopping (τ lowest, stop-error 0) towards θ_S.
    order = np.lexsort((-frac, att))
    frac, att = frac[order], att[order]
    bud = budgeted_at(budgeted, frac)
    beats, ever_worse = _first_loss(att, bud)
    inside = (att < limit) & (bud < limit)
    excess = np.where(inside, att - bud, -np.inf)
    worse = inside & (att > bud + 1e-12)
    if worse.any():
        k = int(np.argmax(excess))
        max_excess, where = float(excess[k]), float(frac[k])
        span = (float(frac[worse].min()), float(frac[worse].max()))
    else:
        max_excess, where, span = 0.0, float("nan"), (float("nan"), float("nan"))
    return CurveComparison(
        limit=float(limit),
        beats_below=beats,
        ever_worse=ever_worse,
        max_excess=max_excess,
        max_excess_fraction=where,
        worse_fractions=span,
        n_compared=int(inside.sum()),
        n_worse=int(worse.sum()),
        mean_difference=float(np.mean(att[inside] - bud[inside])) if inside.any() else float("nan"),
    )


def fraction_at_stop_error(curve: TradeoffCurve, level: float) -> float:
    """Smallest mean evaluated fraction from which on the stop-error stays ``≤ level``.

    That is the smallest fraction ``φ`` such that every point of the curve with fraction ``≥ φ``
    has stop-error ``≤ level``; for attentive (monotone in τ) it is simply the cheapest point within
    ``level``, for budgeted it ignores a lucky small budget followed by larger errors. 1.0 (no
    saving) when no point but full evaluation qualifies.
    """
    frac = np.asarray(curve.mean_evaluated_fraction, dtype=np.float64)
    err = np.asarray(curve.stop_error, dtype=np.float64)
    order = np.argsort(-frac, kind="stable")
    frac, err = frac[order], err[order]
    bad = ~(err <= level)  # NaN counts as bad
    if not bad.any():
        return float(frac[-1])
    first_bad = int(np.argmax(bad))
    return float(frac[first_bad - 1]) if first_bad > 0 else 1.0


# ----------------------------------------------------------------------------- datasets


def sweep_taus(S, theta_s: float, n_taus: int = 1000) -> np.ndarray:
    """The τ grid of the paper's sweep, from the lowest partial score up to ``θ_S``.

    Half the points are evenly spaced in τ, half are quantiles of the running minima of the walks
    (so the evaluated fraction is also sampled evenly); the result is sorted and unique.
    """
    S = np.asarray(S)
    n = S.shape[1]
    if n < 2:
        return np.array([float(theta_s)])
    run_min = np.minimum.accumulate(S[:, : n - 1], axis=1).ravel()
    low = float(min(run_min.min(), theta_s))
    even = np.linspace(low, theta_s, max(2, n_taus // 2))
    below = run_min[run_min <= theta_s]
    quant = (
        np.quantile(below, np.linspace(0.0, 1.0, max(2, n_taus - even.size))) if below.size else []
    )
    return np.unique(np.concatenate([even, quant, [theta_s]]))


def attentive_scores(S, offset: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's Algorithm 1 with a lower constant τ: ``c + τ`` if stopped, else ``f(x)``.

    Returns the scores and the boolean ``stopped`` (``S_t < τ`` for some ``t < n``).
    """
    S = np.asarray(S)
    n = S.shape[1]
    stopped = (S[:, : n - 1] < tau).any(axis=1) if n > 1 else np.zeros(S.shape[0], dtype=bool)
    return np.where(stopped, offset + tau, offset + S[:, n - 1]), stopped


@dataclass(frozen=True)
class OperatingPoint:
    """The τ and budget compared in the precision–recall panel.

    Attributes
    ----------
    rule : str
        How τ was chosen, in words.
    tau : float
        Attentive constant threshold in S space.
    mean_evaluated_fraction, stop_error : float
        Attentive at ``tau``.
    budget : int
        Budgeted B, the attentive mean number evaluated rounded.
    budget_stop_error : float
        Budgeted stop-error at ``budget``.
    """

    rule: str
    tau: float
    mean_evaluated_fraction: float
    stop_error: float
    budget: int
    budget_stop_error: float


@dataclass(frozen=True)
class DatasetResult:
    """Everything Figure 4 shows for one dataset, as plain data.

    Attributes
    ----------
    dataset, description, model : str
    term_name : str
        What a term is ("support vectors", "features", "weak learners").
    n_train, n_test, n_terms : int
    n_test_positive : int
    accuracy : float
        Of the full model on the test set.
    offset, theta_s : float
        ``c`` and ``θ_S = −c`` (θ = 0).
    attentive, budgeted : TradeoffCurve
    comparison : CurveComparison
    savings : dict
        For each near-zero stop-error level: the smallest fractions attentive and budgeted need.
    point : OperatingPoint
    pr : dict of str to PRCurve
        ``full``, ``attentive``, ``budgeted``.
    accuracy_at_point : dict
        Test accuracy of the three decisions at ``point``.
    settings : dict
        Seed, quick, centering, order, θ, n_taus.
    """

    dataset: str
    description: str
    model: str
    term_name: str
    n_train: int
    n_test: int
    n_terms: int
    n_test_positive: int
    accuracy: float
    offset: float
    theta_s: float
    attentive: TradeoffCurve
    budgeted: TradeoffCurve
    comparison: CurveComparison
    savings: dict[str, dict[str, float]]
    point: OperatingPoint
    pr: dict[str, PRCurve]
    accuracy_at_point: dict[str, float]
    settings: dict[str, Any] = field(default_factory=dict)

    def tradeoff_frame(self):
        """Both tradeoff curves in one long table (``tau`` empty for budgeted, ``budget`` for attentive)."""
        import pandas as pd

        att = self.attentive.to_frame()
        bud = self.budgeted.to_frame()
        cols = [
            "method",
            "tau",
            "budget",
            "mean_evaluated_fraction",
            "mean_evaluated",
            "stop_error",
            "disagreement",
        ]
        return pd.concat([att, bud], ignore_index=True).reindex(columns=cols)

    def pr_frame(self):
        """Precision–recall points of the three scores (threshold empty at the curve's end)."""
        import pandas as pd

        parts = []
        for name, c in self.pr.items():
            thresholds = np.append(c.thresholds, np.nan)
            parts.append(
                pd.DataFrame(
                    {
                        "method": name,
                        "precision": c.precision,
                        "recall": c.recall,
                        "threshold": thresholds,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)

    def summary(self) -> dict[str, Any]:
        """The headline numbers (what ``summary.json`` holds)."""
        return {
            "dataset": self.dataset,
            "description": self.description,
            "model": self.model,
            "term_name": self.term_name,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_test_positive": self.n_test_positive,
            "n_terms": self.n_terms,
            "accuracy": self.accuracy,
            "offset": self.offset,
            "theta_s": self.theta_s,
            "comparison": self.comparison.to_dict(),
            "savings": self.savings,
            "operating_point": vars(self.point),
            "average_precision": {k: c.average_precision for k, c in self.pr.items()},
            "accuracy_at_operating_point": self.accuracy_at_point,
            "settings": self.settings,
        }


def _load(name: str, data_home, download: bool):
    from attentive.data import load_dataset

    return load_dataset(name, data_home=data_home, download=download)


def _train(dataset, data_home, cache: bool):
    from attentive.data import data_home as resolve_home
    from attentive.models import default_model_params, train_model

    params = default_model_params(dataset.name)
    cache_dir = resolve_home(data_home) / "models"
    model = train_model(dataset, **params, cache=cache, cache_dir=cache_dir)
    return model, params


def reproduce_dataset(
    name: str,
    *,
    quick: bool = False,
    seed: int = 0,
    n_taus: int | None = None,
    pr_stop_error: float = 0.01,
    data_home=None,
    download: bool = True,
    cache: bool = True,
    dataset=None,
    model=None,
) -> DatasetResult:
    """Run the paper's Figure 4 experiment on one dataset.

    Parameters
    ----------
    name : str
        A dataset of :func:`attentive.data.list_datasets`.
    quick : bool
        Fewer τ values and budgets (for tests and previews); the curves are subsampled, not changed.
    seed : int
        Seeds the random order of the terms.
    n_taus : int, optional
        Number of τ values (default 1000, or 120 with ``quick``).
    pr_stop_error : float
        The precision–recall panel compares the three scores at the cheapest τ whose stop-error is
        at most this (the "near-zero loss" point), and budgeted at the same mean number of terms.
    data_home : path-like, optional
        Dataset and model cache.
    download : bool
        Allow downloading a missing dataset.
    cache : bool
        Load / save the trained model in ``<data_home>/models``.
    dataset, model : optional
        Use this :class:`~attentive.data.Dataset` and fitted model instead of loading and training
        (``model`` requires ``dataset``).

    Returns
    -------
    DatasetResult
    """
    from attentive.estimator import AttentiveClassifier

    if not 0.0 <= pr_stop_error < 1.0:
        raise InvalidParameterError(f"pr_stop_error must be in [0, 1), got {pr_stop_error!r}")
    if model is not None and dataset is None:
        raise InvalidParameterError("a prefit model needs the dataset it was trained on")
    started = time.perf_counter()
    if dataset is None:
        dataset = _load(name, data_home, download)
    if model is None:
        model, params = _train(dataset, data_home, cache)
    else:
        params = {"prefit": type(model).__name__}
    n_taus = n_taus or (120 if quick else 1000)

    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", centering="positive", random_state=seed
    )
    clf.fit(dataset.X_train, dataset.y_train)
    S = clf.walk_.partial_scores(dataset.X_test)
    m, n = S.shape
    theta_s, offset = float(clf.theta_s_), float(clf.offset_)
    y = np.asarray(dataset.y_test)

    taus = sweep_taus(S, theta_s, n_taus)
    att = attentive_tradeoff(S, theta_s, taus=taus, side="lower")
    budgets = None
    if quick and n > 200:
        budgets = np.unique(np.linspace(1, n, 200).round().astype(np.int64))
    bud = budgeted_tradeoff(S, theta_s, budgets=budgets, side="lower")
    comparison = compare_curves(att, bud)
    savings = {}
    for level in NEAR_ZERO_LOSS:
        a = fraction_at_stop_error(att, level)
        b = fraction_at_stop_error(bud, level)
        savings[f"{level:g}"] = {
            "attentive_fraction": a,
            "budgeted_fraction": b,
            "attentive_saving": 1.0 - a,
            "budgeted_saving": 1.0 - b,
        }

    # Operating point: the cheapest τ with stop-error ≤ pr_stop_error (τ grows, cost falls).
    ok = np.flatnonzero(att.stop_error <= pr_stop_error)
    k = int(ok[np.argmin(att.mean_evaluated_fraction[ok])]) if ok.size else int(np.argmin(taus))
    tau = float(taus[k])
    budget = int(min(n, max(1, round(att.mean_evaluated[k]))))
    bud_point = budgeted_tradeoff(S, theta_s, budgets=[budget], side="lower")
    point = OperatingPoint(
        rule=f"cheapest τ with attentive stop-error ≤ {pr_stop_error:g}",
        tau=tau,
        mean_evaluated_fraction=float(att.mean_evaluated_fraction[k]),
        stop_error=float(att.stop_error[k]),
        budget=budget,
        budget_stop_error=float(bud_point.stop_error[0]),
    )
    full_score = offset + S[:, n - 1]
    att_score, stopped = attentive_scores(S, offset, tau)
    bud_score = offset + (n / budget) * S[:, budget - 1]
    scores = {"full": full_score, "attentive": att_score, "budgeted": bud_score}
    pr = precision_recall(y, scores)
    # From the decisions, not the scores: a walk stopped at τ = θ_S scores exactly θ but is negative.
    full_pos = S[:, n - 1] >= theta_s
    decisions = {
        "full": full_pos,
        "attentive": full_pos & ~stopped,
        "budgeted": (n / budget) * S[:, budget - 1] >= theta_s,
    }
    accuracy_at_point = {k: float(np.mean(d == (y == 1))) for k, d in decisions.items()}
    kind = clf.terms_.kind
    return DatasetResult(
        dataset=dataset.name,
        description=dataset.description,
        model=repr(model),
        term_name=TERM_NAMES.get(kind, "terms"),
        n_train=int(dataset.X_train.shape[0]),
        n_test=int(m),
        n_terms=int(n),
        n_test_positive=int(np.sum(y == 1)),
        accuracy=accuracy_at_point["full"],
        offset=offset,
        theta_s=theta_s,
        attentive=att,
        budgeted=bud,
        comparison=comparison,
        savings=savings,
        point=point,
        pr=pr,
        accuracy_at_point=accuracy_at_point,
        settings={
            "seed": seed,
            "quick": quick,
            "theta": 0.0,
            "side": "lower",
            "centering": "positive examples of the training set",
            "order": "random",
            "n_taus": int(taus.size),
            "n_budgets": int(bud.parameter.size),
            "model_params": params,
            "seconds": round(time.perf_counter() - started, 3),
        },
    )


# ----------------------------------------------------------------------------- simulation


@dataclass(frozen=True)
class SimulationResult:
    """Everything Figure 3 shows, as plain data.

    Attributes
    ----------
    errors : list of BridgeSimulation
        Required against actual decision error, one per n.
    conservative : dict
        Per n: whether actual ≤ required + 2 standard errors at every δ.
    ns : ndarray
        Numbers of terms of the stopping-time panel.
    delta : float
        Required error rate of the stopping-time panel.
    times, times_truncated : ndarray
        ``E[T_τ]`` (the paper's Theorem 2) and ``E[min(T_τ, n)]`` (what a predictor with n terms
        pays).
    slope, slope_truncated : float
        Least-squares log-log slopes against n.
    settings : dict
    """

    errors: list
    conservative: dict[str, bool]
    ns: np.ndarray
    delta: float
    times: np.ndarray
    times_truncated: np.ndarray
    slope: float
    slope_truncated: float
    settings: dict[str, Any] = field(default_factory=dict)

    def error_frame(self):
        import pandas as pd

        return pd.concat([e.to_frame() for e in self.errors], ignore_index=True)

    def time_frame(self):
        import pandas as pd

        return pd.DataFrame(
            {
                "n": self.ns,
                "delta": self.delta,
                "mean_stopping_time": self.times,
                "mean_stopping_time_truncated": self.times_truncated,
            }
        )

    def summary(self) -> dict[str, Any]:
        worst = {}
        for e in self.errors:
            ratio = e.actual / e.deltas
            worst[str(e.n)] = {
                "max_actual_over_required": float(np.max(ratio)),
                "mean_actual_over_required": float(np.mean(ratio)),
                "paths_below_zero": e.n_paths,
            }
        return {
            "dataset": SIMULATION,
            "conservative": self.conservative,
            "actual_over_required": worst,
            "stopping_time_delta": self.delta,
            "ns": [int(v) for v in self.ns],
            "slope": self.slope,
            "slope_truncated": self.slope_truncated,
            "settings": self.settings,
        }


def reproduce_simulation(*, quick: bool = False, seed: int = 0) -> SimulationResult:
    """Run the paper's Figure 3 simulation (SPEC §5): ``X_i ~ N(0.05, 1)``, upper Constant-STST.

    Parameters
    ----------
    quick : bool
        n = 1000 only with 4,000 conditioned paths, and four n for the stopping time with 400
        paths; otherwise n = 1000 and 10,000 with 20,000 paths and nine n from 100 to 10,000 with
        2,000 paths.
    seed : int
    """
    from attentive.simulation import (
        default_deltas,
        simulate_decision_error,
        simulate_stopping_time,
        stopping_time_slope,
    )

    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    if quick:
        error_ns, n_paths, ns, time_paths = (1000,), 4_000, np.array([100, 300, 1000, 3000]), 400
    else:
        error_ns, n_paths, time_paths = (1000, 10_000), 20_000, 2_000
        ns = np.unique(np.geomspace(100, 10_000, 9).round().astype(np.int64))
    delta = 0.05
    deltas = default_deltas()
    errors = [
        simulate_decision_error(n, deltas, n_paths=n_paths, random_state=rng) for n in error_ns
    ]
    conservative = {str(e.n): bool(np.all(e.actual <= e.deltas + 2 * e.stderr)) for e in errors}
    times = simulate_stopping_time(ns, delta, n_paths=time_paths, truncate=False, random_state=rng)
    times_tr = simulate_stopping_time(
        ns, delta, n_paths=time_paths, truncate=True, random_state=rng
    )
    return SimulationResult(
        errors=errors,
        conservative=conservative,
        ns=ns,
        delta=delta,
        times=times,
        times_truncated=times_tr,
        slope=stopping_time_slope(ns, times),
        slope_truncated=stopping_time_slope(ns, times_tr),
        settings={
            "seed": seed,
            "quick": quick,
            "drift": 0.05,
            "conditioned_paths": n_paths,
            "stopping_time_paths": time_paths,
            "seconds": round(time.perf_counter() - started, 3),
        },
    )


# ----------------------------------------------------------------------------- figures


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


COLORS = {"full": "tab:red", "attentive": "tab:blue", "budgeted": "tab:green"}


def plot_figure4(result: DatasetResult):
    """The paper's Figure 4 for one dataset: precision–recall (top), stop-error vs computation.

    Returns a matplotlib ``Figure``.
    """
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.0, 8.4))
    p = result.point
    for name in ("full", "attentive", "budgeted"):
        c = result.pr[name]
        label = {
            "full": f"full ({result.n_terms} {result.term_name})",
            "attentive": f"attentive τ = {p.tau:.3g} ({p.mean_evaluated_fraction:.0%} evaluated)",
            "budgeted": f"budgeted B = {p.budget}",
        }[name]
        # full is drawn wide underneath so it stays visible where the others coincide with it
        top.step(
            c.recall,
            c.precision,
            where="post",
            color=COLORS[name],
            lw=3.5 if name == "full" else 1.5,
            alpha=0.6 if name == "full" else 1.0,
            label=f"{label}, AP {c.average_precision:.3f}",
        )
    top.set_xlabel("recall")
    top.set_ylabel("precision")
    top.set_xlim(0, 1.01)
    top.set_title(f"{result.dataset}: precision–recall on {result.n_test} test examples")
    top.legend(loc="lower left", fontsize=8)
    top.grid(alpha=0.3)

    att, bud = result.attentive, result.budgeted
    order = np.argsort(bud.mean_evaluated_fraction)
    bottom.plot(
        bud.mean_evaluated_fraction[order],
        bud.stop_error[order],
        color=COLORS["budgeted"],
        lw=1,
        label="budgeted (B = 1..n)",
    )
    order = np.argsort(att.mean_evaluated_fraction)
    bottom.plot(
        att.mean_evaluated_fraction[order],
        att.stop_error[order],
        color=COLORS["attentive"],
        lw=2,
        label="attentive (τ from min S_t to θ_S)",
    )
    bottom.plot([1.0], [0.0], "o", color=COLORS["full"], label="full")
    bottom.plot(
        [p.mean_evaluated_fraction],
        [p.stop_error],
        "s",
        mfc="none",
        color=COLORS["attentive"],
        ms=9,
        label="operating point of the PR panel",
    )
    cmp_ = result.comparison
    bottom.axhline(cmp_.limit, color="grey", ls=":", lw=1, label="30% stop-error (paper)")
    if cmp_.ever_worse:
        bottom.axhline(
            cmp_.beats_below,
            color=COLORS["attentive"],
            ls="--",
            lw=1,
            label=f"attentive ≤ budgeted below {cmp_.beats_below:.1%}",
        )
    bottom.set_xlabel(f"mean fraction of {result.term_name} evaluated")
    bottom.set_ylabel("stop-error  #(stopped ∧ full positive) / #full positive")
    bottom.set_xlim(0, 1.02)
    bottom.set_ylim(-0.02, 1.02)
    bottom.set_title("computation / stop-error tradeoff")
    bottom.legend(loc="upper right", fontsize=8)
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_figure3(result: SimulationResult):
    """The paper's Figure 3: required vs actual decision error; mean stopping time vs n."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.8))
    lo = min(float(np.min(e.deltas)) for e in result.errors)
    for e, marker in zip(result.errors, "os^v", strict=False):
        seen = e.actual > 0
        bars = left.errorbar(
            e.deltas[seen],
            e.actual[seen],
            yerr=2 * e.stderr[seen],
            fmt=marker + "-",
            ms=4,
            capsize=2,
            label=f"actual ± 2 s.e., n = {e.n} ({e.n_paths:,} paths)",
        )
        if (~seen).any():
            # no crossing observed: drawn at half a path so the point shows on log axes
            left.plot(
                e.deltas[~seen],
                np.full((~seen).sum(), 0.5 / e.n_paths),
                "v",
                color=bars[0].get_color(),
                mfc="none",
                label=f"n = {e.n}: none crossed",
            )
    left.plot([lo, 0.5], [lo, 0.5], "k--", lw=1, label="actual = required")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("required decision error δ")
    left.set_ylabel("actual P(cross τ before n | S_n < 0)")
    left.set_title("(a) Constant-STST is conservative")
    left.legend(fontsize=8, loc="upper left")
    left.grid(alpha=0.3, which="both")

    ns = np.asarray(result.ns, dtype=np.float64)
    for times, slope, label, color in (
        (result.times, result.slope, "E[T]  (Theorem 2)", "tab:blue"),
        (
            result.times_truncated,
            result.slope_truncated,
            "E[min(T, n)]  (predictor pays)",
            "tab:orange",
        ),
    ):
        a, b = np.polyfit(np.log(ns), np.log(times), 1)
        right.plot(ns, times, "o", color=color, label=label)
        right.plot(ns, np.exp(b) * ns**a, "-", color=color, lw=1, label=f"fit: slope {slope:.2f}")
    right.plot(ns, ns, ":", color="grey", lw=1, label="n (full evaluation)")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("n (number of terms)")
    right.set_ylabel("mean stopping time")
    right.set_title(f"(b) stopping time grows like √n (δ = {result.delta:g})")
    right.legend(fontsize=8, loc="upper left")
    right.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- writing


def _json_default(value):
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _clean(value):
    """JSON has no NaN: write ``null``."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(_clean(data), indent=2, default=_json_default) + "\n")


def _write_outputs(out_dir, frames: dict, summary: dict, figure, figure_name: str) -> dict:
    """Write each frame as ``NAME.csv``, ``summary.json`` and the figure as ``figure_name``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, frame in frames.items():
        paths[name] = out / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    paths["summary"] = out / "summary.json"
    _write_json(paths["summary"], summary)
    paths["figure"] = out / figure_name
    figure.savefig(paths["figure"], dpi=110)
    _pyplot().close(figure)
    return paths


def write_dataset_result(result: DatasetResult, out_dir) -> dict[str, Path]:
    """Write ``tradeoff.csv``, ``pr.csv``, ``summary.json`` and ``figure4.png`` into ``out_dir``."""
    frames = {"tradeoff": result.tradeoff_frame(), "pr": result.pr_frame()}
    return _write_outputs(out_dir, frames, result.summary(), plot_figure4(result), "figure4.png")


def write_simulation_result(result: SimulationResult, out_dir) -> dict[str, Path]:
    """Write ``decision_error.csv``, ``stopping_time.csv``, ``summary.json``, ``figure3.png``."""
    frames = {"decision_error": result.error_frame(), "stopping_time": result.time_frame()}
    return _write_outputs(out_dir, frames, result.summary(), plot_figure3(result), "figure3.png")


# ----------------------------------------------------------------------------- command line


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``reproduce`` command's arguments to ``parser``."""
    parser.add_argument(
        "--dataset",
        required=True,
        metavar="NAME",
        help="a dataset name (see `python -m attentive datasets`) or 'simulation' for Figure 3",
    )
    parser.add_argument("--out", default="results", help="output folder; files go to OUT/NAME/")
    parser.add_argument("--quick", action="store_true", help="fewer τ, budgets and paths (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random term order")
    parser.add_argument(
        "--pr-stop-error",
        type=float,
        default=0.01,
        help="PR panel: cheapest τ whose attentive stop-error is at most this (default 0.01)",
    )
    parser.add_argument(
        "--data-home",
        default=None,
        help="dataset and model cache (default $ATTENTIVE_DATA or ./data)",
    )
    parser.add_argument(
        "--no-download", action="store_true", help="fail instead of downloading a missing dataset"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="retrain instead of using the model cache"
    )


def _report_dataset(result: DatasetResult) -> list[str]:
    c, p = result.comparison, result.point
    lines = [
        f"{result.dataset}: {result.n_terms} {result.term_name}, test accuracy {result.accuracy:.4f} "
        f"({result.n_test} test examples, {result.n_test_positive} positive)",
        (
            f"  attentive ≤ budgeted wherever attentive's stop-error is below {c.beats_below:.1%}"
            if c.ever_worse
            else f"  attentive ≤ budgeted everywhere (its stop-error reaches {c.beats_below:.1%})"
        ),
    ]
    if c.n_worse:
        lines.append(
            f"  below {c.limit:.0%}: attentive worse at {c.n_worse}/{c.n_compared} points, by up to "
            f"{c.max_excess:.1%} (at {c.max_excess_fraction:.0%} evaluated)"
        )
    if c.n_compared:
        lines.append(
            f"  below {c.limit:.0%}: mean attentive − budgeted stop-error {c.mean_difference:+.1%}"
        )
    for level, s in result.savings.items():
        lines.append(
            f"  stop-error ≤ {float(level):.1%}: attentive needs {s['attentive_fraction']:.1%} of the "
            f"{result.term_name}, budgeted {s['budgeted_fraction']:.1%}"
        )
    lines.append(
        f"  PR point: τ = {p.tau:.4g}, {p.mean_evaluated_fraction:.1%} evaluated, stop-error "
        f"{p.stop_error:.2%}; budgeted B = {p.budget} stop-error {p.budget_stop_error:.2%}; AP "
        + ", ".join(f"{k} {v.average_precision:.4f}" for k, v in result.pr.items())
    )
    return lines


def run(args: argparse.Namespace) -> int:
    """Reproduce one dataset's Figure 4 or the Figure 3 simulation; returns the exit status."""
    name = args.dataset
    out = Path(args.out) / name
    if name == SIMULATION:
        result = reproduce_simulation(quick=args.quick, seed=args.seed)
        paths = write_simulation_result(result, out)
        for e in result.errors:
            ratio = e.actual / e.deltas
            print(
                f"simulation n = {e.n}: actual / required between {ratio.min():.2f} and "
                f"{ratio.max():.2f}; conservative: {result.conservative[str(e.n)]}"
            )
        print(
            f"  mean stopping time slope {result.slope:.3f} (E[T]), "
            f"{result.slope_truncated:.3f} (E[min(T, n)]) for n = {result.ns[0]}..{result.ns[-1]}"
        )
    else:
        result = reproduce_dataset(
            name,
            quick=args.quick,
            seed=args.seed,
            pr_stop_error=args.pr_stop_error,
            data_home=args.data_home,
            download=not args.no_download,
            cache=not args.no_cache,
        )
        paths = write_dataset_result(result, out)
        print("\n".join(_report_dataset(result)))
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0
