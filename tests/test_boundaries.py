"""Boundaries (SPEC §2): closed forms against Monte-Carlo and brute-force statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri
from sklearn.svm import SVC

from attentive import (
    InvalidParameterError,
    ReferenceStats,
    constant_boundary,
    constant_threshold,
    crossing_probability,
    curved_boundary,
    decompose,
    make_walk,
    reference_statistics,
)


def _bridge_min(n_paths, n_steps, theta, variance, rng):
    """Minimum and maximum of discrete Gaussian bridges from 0 to theta with variance V."""
    steps = rng.normal(scale=math.sqrt(variance / n_steps), size=(n_paths, n_steps))
    walk = np.cumsum(steps, axis=1)
    t = np.arange(1, n_steps + 1) / n_steps
    bridge = walk - np.outer(walk[:, -1] - theta, t)
    return bridge.min(axis=1), bridge.max(axis=1)


@pytest.mark.parametrize(
    ("tau", "theta", "variance"),
    [(-1.0, 0.0, 1.0), (-0.8, 0.5, 2.0), (1.2, 0.3, 1.5), (0.9, -0.4, 1.0)],
)
def test_crossing_probability_matches_monte_carlo_bridge(tau, theta, variance):
    rng = np.random.default_rng(42)
    lo, hi = _bridge_min(10_000, 1_000, theta, variance, rng)
    crossed = (lo < tau) if tau < 0 else (hi > tau)
    p_mc = crossed.mean()
    p = crossing_probability(tau, theta, variance)
    se = math.sqrt(p * (1 - p) / crossed.size)
    # A discrete walk crosses slightly less often than the continuous bridge: Siegmund's
    # correction shifts the level by 0.5826 sqrt(V / n) outwards.
    beta = 0.5826 * math.sqrt(variance / 1_000) * np.sign(tau)
    p_discrete = crossing_probability(tau + beta, theta, variance)
    assert p_discrete - 4 * se <= p_mc <= p + 4 * se
    assert abs(p_mc - p_discrete) <= 4 * se + 0.005


def test_crossing_probability_is_one_between_zero_and_theta():
    assert crossing_probability(0.5, 1.0, 1.0) == 1.0
    assert crossing_probability(-0.5, -1.0, 3.0) == 1.0
    np.testing.assert_allclose(
        crossing_probability(np.array([-2.0, 0.2]), 0.5, 1.0), [math.exp(-2 * 2 * 2.5), 1.0]
    )


@pytest.mark.parametrize("delta", [1e-4, 0.01, 0.05, 0.3])
@pytest.mark.parametrize("theta", [-1.5, 0.0, 0.7])
@pytest.mark.parametrize("variance", [0.3, 4.0])
def test_constant_threshold_solves_crossing_probability(delta, theta, variance):
    lo = constant_threshold(delta, variance, theta, side="lower")
    up = constant_threshold(delta, variance, theta, side="upper")
    assert lo < min(0.0, theta) and up > max(0.0, theta)
    assert crossing_probability(lo, theta, variance) == pytest.approx(delta, rel=1e-9)
    assert crossing_probability(up, theta, variance) == pytest.approx(delta, rel=1e-9)
    assert constant_threshold(delta, variance, theta, side="both") == (lo, up)


def test_constant_threshold_reduces_to_paper_formula_at_theta_zero():
    V, d = 2.5, 0.01
    paper = math.sqrt(V) * math.sqrt(math.log(1 / math.sqrt(d)))
    assert constant_threshold(d, V, 0.0, "upper") == pytest.approx(paper)
    assert constant_threshold(d, V, 0.0, "lower") == pytest.approx(-paper)


@pytest.mark.parametrize(
    "bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf"), "x", "0.1", True, None]
)
def test_bad_delta_is_refused(bad):
    with pytest.raises(InvalidParameterError, match="delta"):
        constant_threshold(bad, 1.0)


def test_bad_side_and_theta_are_refused():
    with pytest.raises(InvalidParameterError, match="side"):
        constant_threshold(0.1, 1.0, side="left")
    with pytest.raises(InvalidParameterError, match="theta"):
        constant_threshold(0.1, 1.0, theta=float("nan"))


@pytest.fixture(scope="module")
def walk_and_reference(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    terms = decompose(SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr))
    walk, mask = make_walk(terms, Xtr, ytr, centering="positive", random_state=0)
    return walk, Xtr[mask], Xtr[~mask]


def test_reference_statistics_match_brute_force(walk_and_reference, monkeypatch):
    walk, Xpos, _ = walk_and_reference
    # Force several chunks so the chunked accumulation is exercised.
    monkeypatch.setattr("attentive.walk._CHUNK_ELEMENTS", 7 * walk.n_terms)
    stats = reference_statistics(walk, Xpos)
    n = walk.n_terms
    C = walk.contributions(Xpos)
    S = np.cumsum(C, axis=1)
    s_n = S[:, -1]
    v_terms = np.mean([np.sum((C[r] - s_n[r] / n) ** 2) for r in range(C.shape[0])])
    assert stats.variance_terms == pytest.approx(v_terms, rel=1e-9)
    H = walk.terms.term_values(Xpos)[:, walk.order]
    v_ind = np.sum(walk.ordered_weights**2 * H.var(axis=0))
    assert stats.variance_independent == pytest.approx(v_ind, rel=1e-9)
    R = s_n[:, None] - S
    np.testing.assert_allclose(stats.remainder_mean, R.mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(stats.remainder_std, R.std(axis=0), atol=1e-8)
    assert stats.remainder_std[-1] == 0.0 and stats.remainder_mean[-1] == 0.0
    assert stats.score_mean == pytest.approx(s_n.mean(), rel=1e-9, abs=1e-12)
    assert stats.score_var == pytest.approx(s_n.var(), rel=1e-9)
    cov = ((R - R.mean(axis=0)) * (s_n - s_n.mean())[:, None]).mean(axis=0)
    np.testing.assert_allclose(stats.remainder_score_cov, cov, atol=1e-9)


def test_pooled_statistics_equal_statistics_of_union(walk_and_reference):
    walk, Xpos, Xneg = walk_and_reference
    pooled = ReferenceStats.pool(reference_statistics(walk, Xpos), reference_statistics(walk, Xneg))
    union = reference_statistics(walk, np.vstack([Xpos, Xneg]))
    assert pooled.n_reference == union.n_reference
    assert pooled.variance_terms == pytest.approx(union.variance_terms, rel=1e-9)
    assert pooled.variance_independent == pytest.approx(union.variance_independent, rel=1e-9)
    np.testing.assert_allclose(pooled.remainder_mean, union.remainder_mean, atol=1e-10)
    np.testing.assert_allclose(pooled.remainder_std, union.remainder_std, atol=1e-8)
    assert pooled.score_mean == pytest.approx(union.score_mean, rel=1e-9)
    assert pooled.score_var == pytest.approx(union.score_var, rel=1e-9)
    np.testing.assert_allclose(pooled.remainder_score_cov, union.remainder_score_cov, atol=1e-9)


def test_constant_boundary_arrays():
    b = constant_boundary(6, 0.05, 2.0, theta_s=0.3, side="lower")
    lo = b.lower[0]
    np.testing.assert_array_equal(b.lower, np.full(6, lo))
    assert np.isposinf(b.upper).all()
    # The lower root lies below both 0 and θ_S and its crossing probability is δ.
    assert lo < min(0.0, 0.3)
    assert crossing_probability(lo, 0.3, 2.0) == pytest.approx(0.05, rel=1e-12)
    b2 = constant_boundary(6, 0.05, 2.0, theta_s=0.3, side="both")
    up = b2.upper[0]
    assert (b2.upper == up).all() and up > 0.3
    assert crossing_probability(up, 0.3, 2.0) == pytest.approx(0.05, rel=1e-12)


def test_curved_boundary_formula(walk_and_reference):
    walk, Xpos, Xneg = walk_and_reference
    pos, neg = reference_statistics(walk, Xpos), reference_statistics(walk, Xneg)
    b = curved_boundary(pos, 0.1, theta_s=-0.2, side="both", upper_stats=neg)
    # What the boundary means, checked on the reference walks themselves (not its formula): a
    # positive reference walk at the lower threshold has remainder estimate exactly z·D_t below
    # θ_S, where M_t, D_t are the brute-force mean and spread of its class's remainders.
    z = ndtri(0.9)
    for stats_rows, threshold, sign in ((Xpos, b.lower, -1), (Xneg, b.upper, 1)):
        S = walk.partial_scores(stats_rows)
        R = S[:, -1:] - S
        M, D = R.mean(axis=0), R.std(axis=0)
        np.testing.assert_allclose(threshold + M, -0.2 + sign * z * D, atol=1e-9)
    # D_n = 0 and M_n = 0: the boundary closes at theta_S.
    assert b.lower[-1] == pytest.approx(-0.2) and b.upper[-1] == pytest.approx(-0.2)
