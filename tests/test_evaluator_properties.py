"""Property tests: the blocked evaluator equals the reference on any boundary and every path.

The reference is ``apply_boundary`` on the full matrix of partial scores. Linear walks use small
integer data and dyadic weights, so every partial sum is exact in floating point and thresholds
drawn from the walks' own values are true ties, decided identically by both; RBF walks (mixed
precision and double precision) use thresholds away from the walks by more than rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import curved_boundary_for_test
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.svm import SVC

from attentive.boundaries import Boundary
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.terms import TermDecomposition, decompose
from attentive.walk import Walk, make_walk

PATHS = {
    # name: keyword arguments of evaluate_blocked that select the path
    "small": {},
    "blocked": {"block_size": 3, "chunk_size": 5},
    "blocked-threads": {"block_size": 2, "chunk_size": 4, "n_jobs": 2},
    "one-block": {"block_size": 1000},
}


@st.composite
def exact_problems(draw):
    """A linear walk whose every partial sum is exact: integer x, weights k/8, μ = 0."""
    m = draw(st.integers(1, 9))
    n = draw(st.integers(1, 12))
    X = np.array(draw(st.lists(st.integers(-4, 4), min_size=m * n, max_size=m * n)), float)
    X = X.reshape(m, n)
    w = np.array(draw(st.lists(st.integers(-16, 16), min_size=n, max_size=n)), float) / 8
    b = draw(st.integers(-8, 8)) / 4
    seed = draw(st.integers(0, 2**16))
    terms = TermDecomposition(weights=w, intercept=b, kind="linear", classes=np.array([0, 1]))
    order = np.random.default_rng(seed).permutation(n)
    walk = Walk(terms=terms, mu=np.zeros(n), order=order)
    return walk, X


@st.composite
def boundaries_for(draw, S):
    """Thresholds from the walks' own values (ties), ±inf, or in between; any estimate."""
    n = S.shape[1]
    values = np.unique(np.concatenate([S.ravel(), [0.0, 0.5, -0.5]]))
    choice = st.one_of(
        st.sampled_from(values.tolist()),
        st.sampled_from([-np.inf, np.inf]),
        st.integers(-40, 40).map(lambda k: k / 16),
    )
    side = draw(st.sampled_from(["lower", "upper", "both"]))
    lower = np.array(draw(st.lists(choice, min_size=n, max_size=n)), float)
    upper = np.array(draw(st.lists(choice, min_size=n, max_size=n)), float)
    if side == "lower":
        upper[:] = np.inf
    if side == "upper":
        lower[:] = -np.inf
    kw = {}
    if draw(st.booleans()):
        kw = {
            "estimate_slope": np.array(
                draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float
            ),
            "estimate_intercept": np.array(
                draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float
            ),
        }
    return Boundary("constant", side, lower, upper, **kw)


def _same(ev, ref, atol=0.0):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.stopped, ref.stopped)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-12, atol=atol)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_problems(), st.data())
def test_blocked_evaluator_equals_reference_on_exact_walks(problem, data):
    walk, X = problem
    S = walk.partial_scores(X)
    boundary = data.draw(boundaries_for(S))
    theta_s = data.draw(st.sampled_from([0.0, *np.unique(S[:, -1]).tolist(), 0.25]))
    stopped_score = data.draw(st.sampled_from(["estimate", "boundary"]))
    ref = apply_boundary(
        S, boundary, theta_s, walk.offset, walk.terms.classes, stopped_score=stopped_score
    )
    # Every decision is on its predicted side of θ, however the thresholds and estimates fall.
    theta = walk.offset + theta_s
    np.testing.assert_array_equal(ref.positive, ref.decision >= theta)
    for kwargs in PATHS.values():
        ev = evaluate_blocked(
            walk, X, boundary, theta_s, precision="double", stopped_score=stopped_score, **kwargs
        )
        _same(ev, ref)
    # Sparse input takes the sparse linear walk (no loop over positions).
    ev = evaluate_blocked(
        walk, sp.csr_matrix(X), boundary, theta_s, precision="double", stopped_score=stopped_score
    )
    _same(ev, ref)


@pytest.fixture(scope="module")
def rbf_walk():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=500) > 0.5).astype(int)
    model = SVC(gamma=0.3).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=1)[0]
    return walk, X[300:]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rbf_paths_equal_reference_with_thresholds_off_the_walks(rbf_walk, data):
    walk, X = rbf_walk
    rows = data.draw(st.integers(1, X.shape[0]))
    Xe = X[:rows]
    S = walk.partial_scores(Xe)
    n = S.shape[1]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    spread = np.abs(S).max() + 1.0
    # Thresholds at random quantiles, then moved off every walk value by at least 1e-6·spread.
    lower = np.quantile(S, rng.uniform(0, 0.4, n), axis=None)
    upper = np.quantile(S, rng.uniform(0.6, 1.0, n), axis=None)
    for t in (lower, upper):
        near = np.abs(S - t).min(axis=0) < 1e-6 * spread
        t[near] += 1e-5 * spread
    side = data.draw(st.sampled_from(["lower", "upper", "both"]))
    boundary = curved_boundary_for_test(lower, upper, side, rng)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    band = 1e-5 * float(np.abs(walk.ordered_weights).sum())
    for precision in ("double", "mixed"):
        for kwargs in PATHS.values():
            ev = evaluate_blocked(walk, Xe, boundary, theta_s, precision=precision, **kwargs)
            # Mixed precision: stopped scores carry the certified single-precision error.
            _same(ev, ref, atol=1e-9 * spread + (band if precision == "mixed" else 0.0))
            np.testing.assert_array_equal(ev.positive, ev.decision >= walk.offset + theta_s)
