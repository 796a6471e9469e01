"""Algorithms 1 and 2 on hand-made walks, and evaluate() against the reference."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from attentive import (
    apply_boundary,
    budget_boundary,
    constant_boundary,
    curved_boundary,
    decompose,
    evaluate,
    full_boundary,
    make_walk,
    reference_statistics,
)
from attentive.boundaries import Boundary


def _flat(n, lower=-np.inf, upper=np.inf):
    return Boundary(
        "constant", "both", np.full(n, float(lower)), np.full(n, float(upper)), np.zeros(n)
    )


def test_hand_made_walks_lower_side():
    S = np.array(
        [
            [0.5, 1.0, 1.5, 2.0],  # never crosses
            [-0.5, -1.2, -3.0, -4.0],  # crosses -1 at t = 2
            [-0.2, -0.4, -0.9, -5.0],  # would cross only at t = n: not a stop
            [-1.5, 3.0, 3.0, 3.0],  # crosses at t = 1 although it ends positive
        ]
    )
    ev = apply_boundary(S, _flat(4, lower=-1.0), theta_s=0.0, offset=10.0, classes=("a", "b"))
    np.testing.assert_array_equal(ev.n_evaluated, [4, 2, 4, 1])
    np.testing.assert_array_equal(ev.stopped, [False, True, False, True])
    np.testing.assert_array_equal(ev.stop_side, [0, -1, 0, -1])
    np.testing.assert_array_equal(ev.labels, ["b", "a", "a", "a"])
    # Algorithm 1: a stopped example scores c + tau, others f(x) = c + S_n.
    np.testing.assert_allclose(ev.decision, [12.0, 9.0, 5.0, 9.0])
    assert ev.mean_evaluated_fraction == pytest.approx(11 / 16)


def test_hand_made_walks_two_sided():
    S = np.array([[0.5, 2.5, 0.0], [-0.5, -2.5, 0.0], [0.1, 0.1, 0.1]])
    ev = apply_boundary(S, _flat(3, lower=-2.0, upper=2.0), theta_s=0.05)
    np.testing.assert_array_equal(ev.stop_side, [1, -1, 0])
    np.testing.assert_array_equal(ev.positive, [True, False, True])
    np.testing.assert_allclose(ev.decision, [2.0, -2.0, 0.1])


def test_budgeted_rule_scales_partial_score():
    S = np.array([[1.0, -3.0, 2.0, 0.0], [-0.1, 0.4, 0.2, 9.0]])
    ev = apply_boundary(S, budget_boundary(4, 2), theta_s=0.0, offset=1.0)
    np.testing.assert_allclose(ev.decision, [1.0 + 2 * -3.0, 1.0 + 2 * 0.4])
    np.testing.assert_array_equal(ev.positive, [False, True])
    np.testing.assert_array_equal(ev.n_evaluated, [2, 2])


def test_budget_must_be_in_range():
    from attentive import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="budget"):
        budget_boundary(4, 0)
    with pytest.raises(InvalidParameterError, match="budget"):
        budget_boundary(4, 5)


@pytest.fixture(scope="module")
def fitted_walk(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    model = SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr)
    walk, mask = make_walk(decompose(model), Xtr, ytr, random_state=1)
    stats = reference_statistics(walk, Xtr[mask])
    return model, walk, stats, Xte


@pytest.mark.parametrize("kind", ["constant", "curved", "budget", "full"])
@pytest.mark.parametrize("side", ["lower", "upper", "both"])
def test_evaluate_matches_reference_on_full_partial_scores(fitted_walk, kind, side):
    model, walk, stats, Xte = fitted_walk
    theta_s = walk.theta_s(0.0)
    n = walk.n_terms
    boundary = {
        "constant": lambda: constant_boundary(n, 0.2, stats.variance_terms, theta_s, side),
        "curved": lambda: curved_boundary(stats, 0.2, theta_s, side),
        "budget": lambda: budget_boundary(n, n // 3),
        "full": lambda: full_boundary(n),
    }[kind]()
    ref = apply_boundary(walk.partial_scores(Xte), boundary, theta_s, walk.offset)
    ev = evaluate(walk, Xte, boundary, theta_s)
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)
    if kind == "full":
        np.testing.assert_allclose(ev.decision, model.decision_function(Xte), rtol=1e-9, atol=1e-9)
