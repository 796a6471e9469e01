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
    return Boundary("constant", "both", np.full(n, float(lower)), np.full(n, float(upper)))


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


def _with_estimate(n, lower, upper, slope, intercept, upper_intercept=None):
    return Boundary(
        "curved",
        "both",
        np.full(n, float(lower)),
        np.full(n, float(upper)),
        estimate_slope=np.asarray(slope, dtype=float),
        estimate_intercept=np.asarray(intercept, dtype=float),
        upper_estimate_intercept=None if upper_intercept is None else np.asarray(upper_intercept),
    )


def test_stopped_score_is_the_rules_estimate_moved_to_the_predicted_side():
    # Row 0 stops low at t = 2 (S_2 = -1.2): estimate 2·(-1.2) + 0.5 = -1.9 < θ: kept.
    # Row 1 stops low at t = 1 (S_1 = -1.5): estimate 3·(-1.5) + 7 = 2.5 lies on the positive
    #   side of θ = 0.25 although the rule predicts negative: moved just below θ.
    # Row 2 stops high at t = 1 (S_1 = 1.5): estimate 3·1.5 - 9 = -4.5 < θ: moved up to θ.
    S = np.array([[-0.5, -1.2, -3.0], [-1.5, 3.0, 3.0], [1.5, 0.0, 0.0]])
    b = _with_estimate(3, -1.0, 1.0, [3.0, 2.0, 1.0], [7.0, 0.5, 0.0], [-9.0, 0.0, 0.0])
    theta = 0.25
    ev = apply_boundary(S, b, theta_s=theta)
    np.testing.assert_array_equal(ev.stop_side, [-1, -1, 1])
    assert ev.decision[0] == pytest.approx(-1.9)
    assert ev.decision[1] == np.nextafter(theta, -np.inf)
    assert ev.decision[2] == theta
    np.testing.assert_array_equal(ev.positive, ev.decision >= theta)
    # With an offset c the estimates are c + (slope·S_t + intercept) on the f scale.
    ev = apply_boundary(S, b, theta_s=0.0, offset=10.0)
    assert ev.decision[0] == pytest.approx(10.0 - 1.9)
    # The paper's Algorithm 1 score: the crossed threshold, c + τ, on its side in the same way.
    ev = apply_boundary(S, b, theta_s=theta, stopped_score="boundary")
    np.testing.assert_allclose(ev.decision, [-1.0, -1.0, 1.0])


def test_non_stopped_scores_agree_with_labels_at_a_rounding_tie():
    # offset + S_n rounds to exactly θ while S_n < θ_S: the score must still say negative.
    ties = []
    for offset in np.linspace(0.01, 1.0, 100):
        theta = 0.3
        theta_s = theta - offset
        s_n = np.nextafter(theta_s, -np.inf)
        if offset + s_n >= theta:
            ties.append((offset, theta, theta_s, s_n))
    assert ties, "no rounding tie found to test with"
    for offset, theta, theta_s, s_n in ties:
        S = np.array([[0.0, s_n]])
        ev = apply_boundary(S, _flat(2), theta_s, offset, threshold=theta)
        assert not ev.positive[0]
        assert ev.decision[0] < theta


def test_a_boundary_of_another_length_is_an_error():
    from attentive import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="3 positions but the walk has 4 terms"):
        apply_boundary(np.zeros((2, 4)), _flat(3), theta_s=0.0)


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
