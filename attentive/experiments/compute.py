"""The paper's experiments as data frames: Figure 4 on a dataset, Figure 3 by simulation.

Everything about walks, boundaries and scores goes through the public API of :mod:`attentive`:
the :class:`~attentive.AttentiveClassifier` gives the partial scores (``partial_scores``), the
Algorithm 1 and Algorithm 2 decisions and scores (``with_rule(...).evaluate`` with
``stopped_score="boundary"``) and each rule family's tradeoff (``scale_outcomes``);
:mod:`attentive.metrics` gives the τ sweep (:class:`~attentive.AttentiveSweep` over its
``default_taus``), the budgeted sweep, stop-error and precision–recall. This module only chooses
what to run and collects the results into frames and a summary; figures are drawn from those frames
by :mod:`attentive.plots` and written by :mod:`attentive.experiments.output`.

The protocol is the paper's (SPEC §4, §6): θ = 0, terms in a seeded random order, centering on the
positive examples of the **training** set (the paper used the test positives), every constant τ from
the lowest partial score up to θ_S, every budget B = 1..n.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.frozen import FrozenEstimator

from attentive import (
    AttentiveClassifier,
    AttentiveSweep,
    budgeted_tradeoff,
    family_names,
    mean_evaluated_fraction,
    precision_recall,
    stop_error,
)
from attentive.errors import InvalidParameterError
from attentive.experiments.comparison import (
    NEAR_ZERO_LOSS,
    compare_curves,
    fraction_at_stop_error,
)

__all__ = [
    "DATASET_STEPS",
    "SIMULATION",
    "SIMULATION_STEPS",
    "TRADEOFF_COLUMNS",
    "DatasetResult",
    "SimulationResult",
    "constant_rule_at",
    "family_tradeoffs",
    "reproduce_dataset",
    "reproduce_simulation",
]

SIMULATION = "simulation"
TERM_NAMES = {"kernel": "support vectors", "linear": "features", "boosting": "weak learners"}
TRADEOFF_COLUMNS = [
    "method",
    "tau",
    "budget",
    "z",
    "mean_evaluated_fraction",
    "mean_evaluated",
    "stop_error",
    "disagreement",
]
# What ``progress`` is told, in order, as each part of an experiment finishes.
DATASET_STEPS = ("data", "model", "walks", "tradeoff", "families", "operating point")
SIMULATION_STEPS = ("decision error", "stopping time")

Progress = Callable[[str], None]


def _noop(step: str) -> None:
    return None


# ----------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class DatasetResult:
    """Everything Figure 4 shows for one dataset.

    Attributes
    ----------
    tradeoff : pandas.DataFrame
        One row per point of a tradeoff curve, columns :data:`TRADEOFF_COLUMNS`: ``method`` is
        ``attentive`` (the paper's constant-τ sweep, ``tau`` set), ``budgeted`` (``budget`` set)
        or a registered rule family (its scales ``z``, :func:`family_tradeoffs`).
    pr : pandas.DataFrame
        Precision–recall points of the ``full``, ``attentive`` and ``budgeted`` scores: columns
        ``method, precision, recall, threshold`` (threshold empty at each curve's end).
    summary : dict
        The headline numbers, plain JSON data (what ``summary.json`` holds): dataset sizes,
        accuracy, ``comparison``, ``savings``, ``operating_point``, ``average_precision``,
        ``accuracy_at_operating_point``, ``settings``.
    """

    tradeoff: pd.DataFrame
    pr: pd.DataFrame
    summary: dict[str, Any]

    @property
    def name(self) -> str:
        return self.summary["dataset"]


def constant_rule_at(clf: AttentiveClassifier, tau: float) -> AttentiveClassifier:
    """``clf`` with a lower constant boundary at ``τ`` (S space), without refitting."""
    return clf.with_rule("constant", side="lower", tau=float(tau))


def family_tradeoffs(clf: AttentiveClassifier, X, side: str = "lower") -> pd.DataFrame:
    """Stop-error, disagreement and mean evaluated fraction of every registered rule family at
    every scale of the estimator's default grid, on ``X`` (one row per family and z)."""
    frames = []
    for name in family_names():
        out = clf.scale_outcomes(X, name)
        fraction = out.evaluated_fractions()
        errors = out.stop_errors(side)
        frames.append(
            pd.DataFrame(
                {
                    "method": name,
                    "z": out.grid,
                    "mean_evaluated_fraction": fraction,
                    "mean_evaluated": fraction * out.n_terms,
                    "stop_error": errors,
                    "disagreement": out.disagreement_rates(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True).reindex(columns=TRADEOFF_COLUMNS)


def _pr_frame(curves) -> pd.DataFrame:
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "method": name,
                    "precision": c.precision,
                    "recall": c.recall,
                    "threshold": np.append(c.thresholds, np.nan),
                }
            )
            for name, c in curves.items()
        ],
        ignore_index=True,
    )


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
    progress: Progress | None = None,
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
        Number of τ values of :meth:`attentive.AttentiveSweep.default_taus` (default 1000, or 120
        with ``quick``).
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
    progress : callable, optional
        Called with each name of :data:`DATASET_STEPS` as that step finishes.

    Returns
    -------
    DatasetResult
    """
    if not 0.0 <= pr_stop_error < 1.0:
        raise InvalidParameterError(f"pr_stop_error must be in [0, 1), got {pr_stop_error!r}")
    if model is not None and dataset is None:
        raise InvalidParameterError("a prefit model needs the dataset it was trained on")
    step = progress or _noop
    started = time.perf_counter()
    if dataset is None:
        dataset = _load(name, data_home, download)
    step("data")
    if model is None:
        model, params = _train(dataset, data_home, cache)
    else:
        params = {"prefit": type(model).__name__}
    step("model")
    n_taus = n_taus or (120 if quick else 1000)
    X, y = dataset.X_test, np.asarray(dataset.y_test)

    # The paper's Algorithm 1 score (c + τ for a stopped walk) is the estimator's "boundary" score.
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="full",
        side="lower",
        centering="positive",
        random_state=seed,
        stopped_score="boundary",
        early_stopping=True,  # the paper's walks, also on sparse linear models
    ).fit(dataset.X_train, dataset.y_train)
    S = clf.partial_scores(X)
    m, n = S.shape
    theta_s, offset = float(clf.theta_s_), float(clf.offset_)
    step("walks")

    sweep = AttentiveSweep(S, theta_s, side="lower")
    taus = sweep.default_taus(n_taus)
    att = sweep.curve(taus)
    budgets = None
    if quick and n > 200:
        budgets = np.unique(np.linspace(1, n, 200).round().astype(np.int64))
    bud = budgeted_tradeoff(S, theta_s, budgets=budgets, side="lower")
    del S
    comparison = compare_curves(att, bud)
    step("tradeoff")
    families = family_tradeoffs(clf, X, side="lower")
    step("families")

    # Operating point: the cheapest τ with stop-error ≤ pr_stop_error (τ grows, cost falls).
    ok = np.flatnonzero(att.stop_error <= pr_stop_error)
    k = int(ok[np.argmin(att.mean_evaluated_fraction[ok])]) if ok.size else int(np.argmin(taus))
    budget = int(min(n, max(1, round(att.mean_evaluated[k]))))
    rules = {
        "full": clf,
        "attentive": constant_rule_at(clf, float(taus[k])),
        "budgeted": clf.with_rule("budget", budget=budget),
    }
    outcomes = {key: rule.evaluate(X) for key, rule in rules.items()}
    full_positive = outcomes["full"].positive
    attentive = outcomes["attentive"]
    point = {
        "rule": f"cheapest τ with attentive stop-error ≤ {pr_stop_error:g}",
        "tau": float(rules["attentive"].boundary_.lower[0]),
        "tau_swept": float(taus[k]),
        "mean_evaluated_fraction": mean_evaluated_fraction(attentive.n_evaluated, n),
        "stop_error": stop_error(attentive.positive, full_positive, "lower"),
        "budget": budget,
        "budget_stop_error": stop_error(outcomes["budgeted"].positive, full_positive, "lower"),
    }
    pr = precision_recall(
        y, {key: e.decision for key, e in outcomes.items()}, pos_label=clf.classes_[1]
    )
    accuracy_at_point = {key: float(np.mean(e.labels == y)) for key, e in outcomes.items()}
    step("operating point")

    savings = {}
    for level in NEAR_ZERO_LOSS:
        a = fraction_at_stop_error(att, level)
        b = fraction_at_stop_error(bud, level)
        savings[f"{level:g}"] = {
            "attentive_fraction": a,
            "budgeted_fraction": b,
            "attentive_saving": 1.0 - a,
            "budgeted_saving": 1.0 - b,
            "family_fractions": {
                fam: fraction_at_stop_error(rows, level)
                for fam, rows in families.groupby("method", sort=False)
            },
        }
    tradeoff = pd.concat([att.to_frame(), bud.to_frame(), families], ignore_index=True).reindex(
        columns=TRADEOFF_COLUMNS
    )
    summary = {
        "dataset": dataset.name,
        "description": dataset.description,
        "model": repr(model),
        "term_name": TERM_NAMES.get(clf.terms_.kind, "terms"),
        "n_train": int(dataset.X_train.shape[0]),
        "n_test": int(m),
        "n_test_positive": int(np.sum(y == clf.classes_[1])),
        "n_terms": int(n),
        "accuracy": accuracy_at_point["full"],
        "offset": offset,
        "theta_s": theta_s,
        "comparison": comparison.to_dict(),
        "savings": savings,
        "operating_point": point,
        "average_precision": {key: c.average_precision for key, c in pr.items()},
        "accuracy_at_operating_point": accuracy_at_point,
        "families": list(family_names()),
        "settings": {
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
    }
    return DatasetResult(tradeoff=tradeoff, pr=_pr_frame(pr), summary=summary)


# ----------------------------------------------------------------------------- simulation


@dataclass(frozen=True)
class SimulationResult:
    """Everything Figure 3 shows.

    Attributes
    ----------
    decision_error : pandas.DataFrame
        Required against actual decision error, one row per (n, δ): columns ``n, required, tau,
        actual, stderr, paths_below_zero``.
    stopping_time : pandas.DataFrame
        Columns ``n, delta, mean_stopping_time`` (``E[T_τ]``, the paper's Theorem 2) and
        ``mean_stopping_time_truncated`` (``E[min(T_τ, n)]``, what a predictor with n terms pays).
    summary : dict
        ``conservative`` per n (actual ≤ required + 2 s.e. at every δ), ``actual_over_required``,
        the log-log ``slope`` and ``slope_truncated`` against n, ``settings``.
    """

    decision_error: pd.DataFrame
    stopping_time: pd.DataFrame
    summary: dict[str, Any]

    @property
    def name(self) -> str:
        return SIMULATION


def reproduce_simulation(
    *, quick: bool = False, seed: int = 0, progress: Progress | None = None
) -> SimulationResult:
    """Run the paper's Figure 3 simulation (SPEC §5): ``X_i ~ N(0.05, 1)``, upper Constant-STST.

    Parameters
    ----------
    quick : bool
        n = 1000 only with 4,000 conditioned paths, and four n for the stopping time with 400
        paths; otherwise n = 1000 and 10,000 with 20,000 paths and nine n from 100 to 10,000 with
        2,000 paths.
    seed : int
    progress : callable, optional
        Called with each name of :data:`SIMULATION_STEPS` as that step finishes.
    """
    from attentive.simulation import (
        default_deltas,
        simulate_decision_error,
        simulate_stopping_time,
        stopping_time_slope,
    )

    step = progress or _noop
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
    step("decision error")
    times = simulate_stopping_time(ns, delta, n_paths=time_paths, truncate=False, random_state=rng)
    times_tr = simulate_stopping_time(
        ns, delta, n_paths=time_paths, truncate=True, random_state=rng
    )
    step("stopping time")
    summary = {
        "dataset": SIMULATION,
        "conservative": {
            str(e.n): bool(np.all(e.actual <= e.deltas + 2 * e.stderr)) for e in errors
        },
        "actual_over_required": {
            str(e.n): {
                "max_actual_over_required": float(np.max(e.actual / e.deltas)),
                "mean_actual_over_required": float(np.mean(e.actual / e.deltas)),
                "paths_below_zero": e.n_paths,
            }
            for e in errors
        },
        "stopping_time_delta": delta,
        "ns": [int(v) for v in ns],
        "slope": stopping_time_slope(ns, times),
        "slope_truncated": stopping_time_slope(ns, times_tr),
        "settings": {
            "seed": seed,
            "quick": quick,
            "drift": 0.05,
            "conditioned_paths": n_paths,
            "stopping_time_paths": time_paths,
            "seconds": round(time.perf_counter() - started, 3),
        },
    }
    stopping_time = pd.DataFrame(
        {
            "n": ns,
            "delta": delta,
            "mean_stopping_time": times,
            "mean_stopping_time_truncated": times_tr,
        }
    )
    return SimulationResult(
        decision_error=pd.concat([e.to_frame() for e in errors], ignore_index=True),
        stopping_time=stopping_time,
        summary=summary,
    )
