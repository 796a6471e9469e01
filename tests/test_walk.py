"""Centering, order and partial scores against brute-force loops (SPEC §1)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import relative_error
from sklearn.svm import SVC

from attentive import InvalidParameterError, decompose, make_walk
from attentive.walk import make_order


@pytest.fixture(scope="module")
def svc_terms(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    model = SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr)
    return model, decompose(model)


def test_partial_scores_match_brute_force_loop(binary_problem, svc_terms):
    Xtr, ytr, Xte, _ = binary_problem
    _, terms = svc_terms
    walk, _ = make_walk(terms, Xtr, ytr, centering="positive", order="random", random_state=3)
    S = walk.partial_scores(Xte[:15])
    H = terms.term_values(Xte[:15])
    pos = Xtr[ytr == terms.classes[1]]
    mu = terms.term_values(pos).mean(axis=0)
    for row in range(15):
        running = 0.0
        for k in range(terms.n_terms):
            i = walk.order[k]
            running += terms.weights[i] * (H[row, i] - mu[i])
            assert abs(S[row, k] - running) <= 1e-9 * max(1.0, abs(running))


@pytest.mark.parametrize("centering", ["positive", "all", "none"])
def test_offset_plus_last_partial_score_is_decision_function(binary_problem, svc_terms, centering):
    Xtr, ytr, Xte, _ = binary_problem
    model, terms = svc_terms
    walk, mask = make_walk(terms, Xtr, ytr, centering=centering, random_state=0)
    S = walk.partial_scores(Xte)
    assert relative_error(walk.offset + S[:, -1], model.decision_function(Xte)) < 1e-9
    if centering == "none":
        assert not walk.mu.any()
        assert mask.all()
    elif centering == "all":
        np.testing.assert_allclose(walk.mu, terms.term_values(Xtr).mean(axis=0))
    else:
        np.testing.assert_array_equal(mask, ytr == 1)


def test_theta_s_is_theta_minus_offset(binary_problem, svc_terms):
    Xtr, ytr, _, _ = binary_problem
    _, terms = svc_terms
    walk, _ = make_walk(terms, Xtr, ytr)
    assert walk.theta_s(0.7) == pytest.approx(0.7 - walk.offset)


def test_orders():
    w = np.array([0.5, -3.0, 1.0, 2.0, -0.1])
    assert list(make_order(5, "given")) == [0, 1, 2, 3, 4]
    assert list(make_order(5, "weight", w)) == [1, 3, 2, 0, 4]
    a, b, c = (make_order(50, "random", random_state=s) for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert sorted(a) == list(range(50))
    with pytest.raises(InvalidParameterError, match="order"):
        make_order(5, "sorted")


def test_positive_centering_needs_positive_reference(binary_problem, svc_terms):
    Xtr, ytr, _, _ = binary_problem
    _, terms = svc_terms
    with pytest.raises(InvalidParameterError, match="positive class"):
        make_walk(terms, Xtr[ytr == 0], ytr[ytr == 0], centering="positive")
    with pytest.raises(InvalidParameterError, match="centering"):
        make_walk(terms, Xtr, ytr, centering="median")


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_leave_own_out_walks_end_at_the_leave_one_out_estimate(binary_problem, kernel):
    """A training example's walk without its own support vector ends at Jaakkola and Haussler's
    leave-one-out estimate ``f(x_i) − w_i K(x_i, x_i)``; other examples' walks are unchanged, and
    so are the positions before the own term."""
    Xtr, ytr, Xte, _ = binary_problem
    model = SVC(kernel=kernel, gamma=0.1, degree=2).fit(Xtr, ytr)
    terms = decompose(model)
    walk, _ = make_walk(terms, Xtr, ytr, random_state=5)
    S_in = walk.partial_scores(Xtr)
    S_out = walk.partial_scores(Xtr, leave_own_out=True)
    f = model.decision_function(Xtr)
    loo = f.copy()
    sv = model.support_
    k_self = np.diag(
        (Xtr[sv] @ Xtr[sv].T * 0.1 + model.coef0) ** 2
        if kernel == "poly"
        else np.ones((sv.size, sv.size))
    )
    loo[sv] -= model.dual_coef_[0] * k_self
    assert relative_error(walk.offset + S_out[:, -1], loo) < 1e-9
    np.testing.assert_array_equal(np.delete(S_out, sv, axis=0), np.delete(S_in, sv, axis=0))
    pos = np.argsort(walk.order)  # position of each term in the walk
    for j, row in enumerate(sv):
        np.testing.assert_allclose(S_out[row, : pos[j]], S_in[row, : pos[j]], rtol=0, atol=1e-12)
        assert S_out[row, pos[j]] != S_in[row, pos[j]]
    # The same through a window of positions (how blocked paths walk).
    C = walk.contributions(Xtr, 40, 90, leave_own_out=True)
    np.testing.assert_allclose(C, np.diff(S_out, axis=1)[:, 39:89], atol=1e-12)
    assert (walk.partial_scores(Xte, leave_own_out=True) == walk.partial_scores(Xte)).all()
