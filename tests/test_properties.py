"""Property-based tests of the core: any weights, terms, orders and boundaries."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attentive import apply_boundary, make_walk
from attentive.boundaries import Boundary
from attentive.terms import TermDecomposition

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def problems(draw):
    m = draw(st.integers(1, 12))
    n = draw(st.integers(1, 15))
    X = draw(arrays(np.float64, (m, n), elements=finite))
    w = draw(arrays(np.float64, n, elements=finite))
    b = draw(finite)
    X_ref = draw(arrays(np.float64, (draw(st.integers(2, 8)), n), elements=finite))
    y_ref = np.arange(X_ref.shape[0]) % 2
    order = draw(st.sampled_from(["random", "given", "weight"]))
    seed = draw(st.integers(0, 2**31 - 1))
    centering = draw(st.sampled_from(["positive", "all", "none"]))
    return X, w, b, X_ref, y_ref, order, seed, centering


@st.composite
def boundaries(draw, n):
    kind = draw(st.sampled_from(["flat", "curved", "full"]))
    side = draw(st.sampled_from(["lower", "upper", "both"]))
    if kind == "full":
        lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    elif kind == "flat":
        lower, upper = np.full(n, draw(finite)), np.full(n, draw(finite))
    else:
        lower = draw(arrays(np.float64, n, elements=finite))
        upper = draw(arrays(np.float64, n, elements=finite))
    if side == "lower":
        upper = np.full(n, np.inf)
    elif side == "upper":
        lower = np.full(n, -np.inf)
    slope = draw(arrays(np.float64, n, elements=st.floats(-10, 10)))
    intercept = draw(arrays(np.float64, n, elements=st.floats(-10, 10)))
    return Boundary(kind, side, lower, upper, estimate_slope=slope, estimate_intercept=intercept)


@settings(max_examples=150, deadline=None)
@given(problems(), st.data())
def test_walks_are_finite_stop_before_last_term_and_sum_to_full(problem, data):
    X, w, b, X_ref, y_ref, order, seed, centering = problem
    n = X.shape[1]
    terms = TermDecomposition(weights=w, intercept=b, kind="linear", classes=np.array([0, 1]))
    walk, _ = make_walk(terms, X_ref, y_ref, centering=centering, order=order, random_state=seed)
    S = walk.partial_scores(X)
    # Full evaluation equals the brute-force sum, in any order and with any centering.
    brute = b + X @ w
    scale = 1.0 + np.abs(X) @ np.abs(w) + abs(b) + np.abs(X_ref).max() * np.abs(w).sum()
    assert np.all(np.abs(walk.offset + S[:, -1] - brute) <= 1e-9 * scale)
    boundary = data.draw(boundaries(n))
    theta_s = data.draw(finite)
    ev = apply_boundary(S, boundary, theta_s, walk.offset)
    assert np.all(np.isfinite(ev.decision))
    assert np.all((ev.n_evaluated >= 1) & (ev.n_evaluated <= n))
    # Never stop after (or at) the last term.
    assert not np.any(ev.stopped & (ev.n_evaluated >= n))
    assert np.all(ev.n_evaluated[~ev.stopped] == n)
    # Unstopped examples get their full decision.
    full_pos = S[:, -1] >= theta_s
    np.testing.assert_array_equal(ev.positive[~ev.stopped], full_pos[~ev.stopped])
