"""Metrics and tradeoff curves (SPEC §4) against naive per-threshold loops."""

from __future__ import annotations

import numpy as np
import pytest

from attentive import (
    apply_boundary,
    attentive_tradeoff,
    budget_boundary,
    budgeted_tradeoff,
    disagreement_rate,
    mean_evaluated_fraction,
    precision_recall,
    stop_error,
)
from attentive.boundaries import Boundary


def test_stop_error_definitions_on_hand_made_decisions():
    full = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    early = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 0], bool)
    assert stop_error(early, full, "lower") == pytest.approx(1 / 4)
    assert stop_error(early, full, "upper") == pytest.approx(1 / 6)
    assert disagreement_rate(early, full) == pytest.approx(2 / 10)
    assert stop_error(early, full, "both") == pytest.approx(2 / 10)
    assert np.isnan(stop_error(early[4:], full[4:], "lower"))
    assert mean_evaluated_fraction([2, 4, 6], 8) == pytest.approx(0.5)


def _random_walks(m=120, n=40, seed=0):
    rng = np.random.default_rng(seed)
    drift = rng.normal(0, 0.3, size=(m, 1))
    return np.cumsum(rng.normal(size=(m, n)) + drift, axis=1)


def _naive_curve(S, theta_s, taus, side):
    n = S.shape[1]
    rows = []
    for tau in taus:
        lower = np.full(n, tau if side == "lower" else -np.inf)
        upper = np.full(n, tau if side == "upper" else np.inf)
        ev = apply_boundary(S, Boundary("constant", side, lower, upper), theta_s)
        full = S[:, -1] >= theta_s
        rows.append(
            (
                ev.mean_evaluated_fraction,
                stop_error(ev.positive, full, side),
                disagreement_rate(ev.positive, full),
            )
        )
    return np.array(rows)


@pytest.mark.parametrize("side", ["lower", "upper"])
@pytest.mark.parametrize("theta_s", [0.0, 1.3])
def test_attentive_sweep_equals_naive_loop(side, theta_s):
    S = _random_walks()
    lo, hi = S.min(), S.max()
    taus = np.linspace(lo - 1, theta_s, 57) if side == "lower" else np.linspace(theta_s, hi + 1, 57)
    # Include thresholds exactly equal to partial scores: ties must follow the strict rule.
    taus = np.concatenate([taus, S[3, :5], S[7, 10:12]])
    curve = attentive_tradeoff(S, theta_s, taus=taus, side=side)
    naive = _naive_curve(S, theta_s, taus, side)
    np.testing.assert_allclose(curve.mean_evaluated_fraction, naive[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.stop_error, naive[:, 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.disagreement, naive[:, 2], rtol=0, atol=1e-12)


def test_attentive_sweep_default_range_spans_min_score_to_theta():
    S = _random_walks()
    curve = attentive_tradeoff(S, 0.5, n_taus=30)
    assert curve.parameter[0] == pytest.approx(S[:, :-1].min())
    assert curve.parameter[-1] == pytest.approx(0.5)
    # At the most extreme tau nothing but the minimum's own row can stop: almost full work.
    assert curve.mean_evaluated_fraction[0] > 0.95
    assert np.all(np.diff(curve.mean_evaluated_fraction) <= 1e-12)


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
def test_budgeted_tradeoff_equals_naive_loop(side):
    S = _random_walks(m=80, n=25, seed=3)
    theta_s = 0.4
    curve = budgeted_tradeoff(S, theta_s, side=side)
    full = S[:, -1] >= theta_s
    for j, B in enumerate(range(1, 26)):
        ev = apply_boundary(S, budget_boundary(25, B), theta_s)
        assert curve.mean_evaluated_fraction[j] == pytest.approx(ev.mean_evaluated_fraction)
        assert curve.disagreement[j] == pytest.approx(disagreement_rate(ev.positive, full))
        assert curve.stop_error[j] == pytest.approx(stop_error(ev.positive, full, side))
    assert curve.disagreement[-1] == 0.0
    frame = curve.to_frame()
    assert list(frame["budget"]) == list(range(1, 26))


def _brute_average_precision(y, s):
    order = np.argsort(-s, kind="stable")
    thresholds = np.unique(s)[::-1]
    ap, prev_recall = 0.0, 0.0
    for t in thresholds:
        pred = s >= t
        tp = np.sum(pred & (y == 1))
        recall = tp / np.sum(y == 1)
        precision = tp / np.sum(pred)
        ap += (recall - prev_recall) * precision
        prev_recall = recall
    assert order.size == s.size
    return ap


def test_precision_recall_average_precision_matches_brute_force():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 200)
    full = y + rng.normal(0, 0.8, 200)
    attentive = np.where(full < -0.5, -0.5, full)  # stopped examples share one score
    curves = precision_recall(y, {"full": full, "attentive": attentive})
    for name, s in (("full", full), ("attentive", attentive)):
        assert curves[name].average_precision == pytest.approx(_brute_average_precision(y, s))
        assert curves[name].precision.shape == curves[name].recall.shape


@pytest.mark.parametrize(
    "early, full",
    [
        ([2, 5, 5, 2], [5, 5, 2, 2]),  # class labels: read as booleans, every pair "agrees"
        ([-1, 1], [1, -1]),
        (["no", "yes"], ["yes", "yes"]),
        ([0.3, -1.2], [0.5, 2.0]),  # decision values
    ],
)
def test_labels_are_refused_where_positives_are_meant(early, full):
    """Read as booleans, labels 2 / 5 or -1 / +1 are all "positive" and every pair agrees
    (0.0 for a rate of 0.5): refused, naming what to pass instead."""
    for fn in (disagreement_rate, lambda e, f: stop_error(e, f, "lower")):
        with pytest.raises(ValueError, match=r"classes_\[1\]"):
            fn(early, full)
    # The same decisions said as booleans are measured.
    e = np.asarray(early) == np.asarray(early)[-1]
    f = np.asarray(full) == np.asarray(early)[-1]
    assert disagreement_rate(e, f) == pytest.approx(np.mean(e != f))


def test_zero_one_decisions_are_measured_and_lengths_must_match():
    early, full = np.array([1, 0, 1, 1]), np.array([1.0, 1.0, 0.0, 1.0])
    assert disagreement_rate(early, full) == pytest.approx(0.5)
    # Booleans held as objects (a frame's column of True / False) are booleans.
    as_objects = np.array([True, False, True, True], dtype=object)
    assert disagreement_rate(as_objects, full) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="such as None"):
        disagreement_rate(np.array([True, None, 1, 0], dtype=object), full)
    assert stop_error(early, full, "lower") == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="one value per example each; got 4 and 3"):
        disagreement_rate(early, full[:3])
    with pytest.raises(ValueError, match="1-D"):
        disagreement_rate(early[None, :], full[None, :])
