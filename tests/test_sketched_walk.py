"""The sketched walk (SPEC §3b) against brute-force loops and the plain walk it is built from."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import relative_error
from sklearn.svm import SVC

from attentive import InvalidParameterError, decompose, make_walk, reference_statistics
from attentive.sketch import make_sketched_walk, sketch_walk
from attentive.walk import Walk


@pytest.fixture(scope="module")
def problem(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    model = SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr)
    terms = decompose(model)
    walk, mask = make_walk(terms, Xtr, ytr, centering="positive", random_state=3)
    sw = make_sketched_walk(walk, Xtr, ytr, centering="positive", k=3, m=24, random_state=0)
    own = np.full(len(ytr), -1)
    own[model.support_] = np.arange(terms.n_terms)
    return model, walk, sw, Xtr, ytr, Xte, mask, own


def _brute_force(sw, X, R, own=None):
    """``S^ρ_t`` for t = 0..n by the definitions, one row and one term at a time: h and h̃ per
    (row, term), μ^ρ_i = mean over R of h_i − h̃_i, the own term's h and h̃ set to 0."""
    terms, sketch = sw.terms, sw.sketch
    w, n = terms.weights, terms.n_terms
    H, Ht = terms.term_values(X), sketch.term_values(X)
    mu = terms.term_values(R).mean(axis=0)
    mu_rho = mu - sketch.term_values(R).mean(axis=0)
    out = np.empty((X.shape[0], n + 1))
    for r in range(X.shape[0]):
        h, ht = H[r].copy(), Ht[r].copy()
        if own is not None and own[r] >= 0:
            h[own[r]] = ht[own[r]] = 0.0
        running = sum(w[i] * (ht[i] - mu[i] + mu_rho[i]) for i in range(n))  # F̃(x)
        out[r, 0] = running
        for t, i in enumerate(sw.order, start=1):
            running += w[i] * (h[i] - ht[i] - mu_rho[i])
            out[r, t] = running
    return out


def test_partial_scores_match_the_definitions(problem):
    _, _, sw, Xtr, _, Xte, mask, _ = problem
    expected = _brute_force(sw, Xte[:10], Xtr[mask])
    np.testing.assert_allclose(sw.start_scores(Xte[:10]), expected[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sw.partial_scores(Xte[:10]), expected[:, 1:], rtol=1e-9, atol=1e-9)


def test_first_partial_score_is_the_sketch_plus_the_first_residual(problem):
    _, walk, sw, _, _, Xte, _, _ = problem
    i = sw.order[0]
    h = walk.terms.term_values(Xte, [i])[:, 0]
    ht = sw.sketch.term_values(Xte, [i])[:, 0]
    first = sw.start_scores(Xte) + sw.terms.weights[i] * (h - ht - sw.mu_rho[i])
    np.testing.assert_allclose(sw.partial_scores(Xte)[:, 0], first, rtol=1e-12, atol=1e-12)


def test_the_last_partial_score_is_the_plain_walks(problem):
    model, walk, sw, _, _, Xte, _, _ = problem
    S = sw.partial_scores(Xte)
    assert relative_error(S[:, -1], walk.partial_scores(Xte)[:, -1]) < 1e-12
    assert relative_error(sw.offset + S[:, -1], model.decision_function(Xte)) < 1e-9
    assert sw.offset == walk.offset and sw.theta_s(0.3) == walk.theta_s(0.3)
    np.testing.assert_array_equal(sw.order, walk.order)
    np.testing.assert_array_equal(sw.mu, walk.mu)


@pytest.mark.parametrize("by_value", [False, True])
def test_leave_own_out_zeroes_the_own_terms_sketch_too(problem, by_value):
    _, walk, sw, Xtr, _, _, mask, own = problem
    kwargs = {"leave_own_out": True, "own": None if by_value else own}
    S = sw.partial_scores(Xtr, **kwargs)
    plain = walk.partial_scores(Xtr, **kwargs)
    assert relative_error(S[:, -1], plain[:, -1]) < 1e-12
    expected = _brute_force(sw, Xtr, Xtr[mask], own)
    np.testing.assert_allclose(sw.start_scores(Xtr, **kwargs), expected[:, 0], rtol=1e-9)
    np.testing.assert_allclose(S, expected[:, 1:], rtol=1e-9, atol=1e-9)
    # Without leaving out, the training rows that are support vectors walk another path.
    assert np.max(np.abs(sw.partial_scores(Xtr)[own >= 0, -1] - S[own >= 0, -1])) > 0.1


def test_masses_are_the_plain_walks(problem):
    _, walk, sw, Xtr, _, Xte, _, own = problem
    S, A = sw.partial_scores_and_masses(Xte)
    np.testing.assert_array_equal(A, walk.partial_masses(Xte))
    np.testing.assert_array_equal(S, sw.partial_scores(Xte))
    _, A_loo = sw.partial_scores_and_masses(Xtr, leave_own_out=True, own=own)
    np.testing.assert_array_equal(A_loo, walk.partial_masses(Xtr, leave_own_out=True, own=own))


def test_contributions_are_the_partial_scores_steps(problem):
    _, _, sw, Xtr, _, _, _, own = problem
    Xp = sw.prepare(Xtr)
    S = sw.partial_scores(Xp, prepared=True, leave_own_out=True, own=own)
    steps = np.diff(S, axis=1)
    got = sw.contributions(Xp, 5, 40, leave_own_out=True, own=own)
    np.testing.assert_allclose(got, steps[:, 4:39], atol=1e-12)


def test_steps_give_the_start_and_the_residuals(problem):
    _, walk, sw, _, _, Xte, _, _ = problem
    steps = sw.steps(sw.prepare(Xte), masses=True)
    np.testing.assert_allclose(steps.start, sw.start_scores(Xte), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(steps.weights, walk.ordered_weights)
    plain = walk.steps(walk.prepare(Xte), masses=True)
    assert not plain.start.any()
    np.testing.assert_array_equal(plain.mass, steps.mass)
    np.testing.assert_allclose(plain.partial_scores(), walk.partial_scores(Xte), rtol=1e-12)


def test_residual_means_are_taken_over_the_plain_walks_reference_set(problem):
    _, _, sw, Xtr, _, _, mask, _ = problem
    R = Xtr[mask]
    rho = sw.terms.term_values(R) - sw.sketch.term_values(R)
    np.testing.assert_allclose(sw.mu_rho, rho.mean(axis=0), rtol=1e-9, atol=1e-12)


def test_an_uncentred_walk_has_uncentred_residuals(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    terms = decompose(SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr))
    walk, _ = make_walk(terms, Xtr, ytr, centering="none", random_state=0)
    sw = make_sketched_walk(walk, Xtr, ytr, centering="none", k=3, m=16)
    assert not sw.mu_rho.any()
    F = sw.start_scores(Xte)
    np.testing.assert_allclose(F, sw.sketch.term_values(Xte) @ terms.weights, rtol=1e-9)
    centred, _ = make_walk(terms, Xtr, ytr, centering="all", random_state=0)
    with pytest.raises(InvalidParameterError, match="pass the reference rows"):
        sketch_walk(centred, sw.sketch, None)


def test_reference_statistics_of_a_sketched_walk_match_brute_force(problem, monkeypatch):
    _, _, sw, Xtr, _, _, mask, own = problem
    monkeypatch.setattr("attentive.walk._CHUNK_ELEMENTS", 7 * sw.n_terms)  # several chunks
    X = Xtr[mask]
    stats = reference_statistics(sw, X, leave_own_out=True, own=own[mask])
    full = _brute_force(sw, X, X, own[mask])  # S_0 .. S_n
    start, S = full[:, 0], full[:, 1:]
    C = np.diff(full, axis=1)
    n = sw.n_terms
    v = np.mean(((C - (S[:, -1] - start)[:, None] / n) ** 2).sum(axis=1))
    assert stats.variance_terms == pytest.approx(v, rel=1e-8)
    R = S[:, -1:] - S
    np.testing.assert_allclose(stats.remainder_mean, R.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(stats.remainder_std, R.std(axis=0), atol=1e-7)
    assert stats.score_mean == pytest.approx(S[:, -1].mean(), rel=1e-9)
    assert stats.score_var == pytest.approx(S[:, -1].var(), rel=1e-8)
    cov = ((R - R.mean(axis=0)) * (S[:, -1:] - S[:, -1].mean())).mean(axis=0)
    np.testing.assert_allclose(stats.remainder_score_cov, cov, atol=1e-8)
    X_terms = C / sw.ordered_weights
    np.testing.assert_allclose(stats.term_mean, X_terms.mean(axis=0), atol=1e-9)
    assert stats.variance_independent == pytest.approx(
        np.sum(sw.ordered_weights**2 * X_terms.var(axis=0)), rel=1e-7
    )


def test_a_sketched_walk_is_not_a_plain_walk(problem):
    """The evaluator's paths take a plain Walk and start at 0: a sketched walk must not pass for
    one by accident."""
    _, _, sw, *_ = problem
    assert not isinstance(sw, Walk)
    assert Walk.starts_at_zero and not sw.starts_at_zero


def test_the_walk_and_the_sketch_must_belong_together(problem):
    _, _, sw, Xtr, ytr, *_ = problem
    other = decompose(SVC(kernel="rbf", gamma=0.5).fit(Xtr[:120], ytr[:120]))
    other_walk, _ = make_walk(other, Xtr, ytr, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"fitted for \d+ terms, the walk has \d+"):
        sketch_walk(other_walk, sw.sketch, Xtr)


# ------------------------------------------------------------------ the residual order
def _greedy_by_brute_force(C, shrinkage):
    """Each next term the one whose removal leaves the smallest variance of the sum of the
    terms still to walk, the variances taken over the rows of ``C`` directly, the terms'
    covariances shrunk by ``1 − shrinkage``: ``(1 − λ) Var(Σ c) + λ Σ Var(c)`` (the earliest
    among equals)."""

    own = np.array([np.var(C[:, j]) for j in range(C.shape[1])])
    left = list(range(C.shape[1]))
    order = []
    while left:
        total = C[:, left].sum(axis=1)  # the sum of the terms still to walk, on every row
        spreads = [
            (1 - shrinkage) * np.var(total - C[:, j]) + shrinkage * (own[left].sum() - own[j])
            for j in left
        ]
        j = left[int(np.argmin(spreads))]
        order.append(j)
        left.remove(j)
    return np.array(order)


def test_the_residual_order_walks_first_what_most_lowers_the_spread_left(problem):
    from attentive.sketch import residual_order
    from attentive.sketch.walk import ORDER_SHRINKAGE

    model, walk, sw, Xtr, _, Xte, mask, own = problem
    Xp = sw.prepare(Xtr)
    ordered = residual_order(sw, Xp, leave_own_out=True, own=own)
    # The contributions by the definitions (SPEC §3b), in the sketched walk's order: the fit
    # rows without their own terms, then each support vector as a row holding its own term.
    rows = np.diff(_brute_force(sw, Xtr, Xtr[mask], own=own), axis=1)
    support = np.diff(_brute_force(sw, model.support_vectors_, Xtr[mask]), axis=1)
    assert 0 < ORDER_SHRINKAGE < 1
    C = np.vstack([rows, support])
    expected = sw.order[_greedy_by_brute_force(C, ORDER_SHRINKAGE)]
    np.testing.assert_array_equal(ordered.order, expected)
    assert not np.array_equal(ordered.order, sw.order)
    # Without the support vectors' rows, the fit rows' alone (another order here).
    rows_only = residual_order(sw, Xp, leave_own_out=True, own=own, support_rows=False)
    np.testing.assert_array_equal(
        rows_only.order, sw.order[_greedy_by_brute_force(rows, ORDER_SHRINKAGE)]
    )
    assert not np.array_equal(rows_only.order, ordered.order)
    # Only the path changes: the start, the centring, the end and the offset are the same.
    np.testing.assert_array_equal(np.sort(ordered.order), np.arange(sw.n_terms))
    np.testing.assert_array_equal(ordered.mu_rho, sw.mu_rho)
    np.testing.assert_allclose(ordered.start_scores(Xte), sw.start_scores(Xte), rtol=1e-12)
    S, S0 = ordered.partial_scores(Xte), sw.partial_scores(Xte)
    assert relative_error(S[:, -1], S0[:, -1]) < 1e-12
    assert ordered.offset == sw.offset
    # The brute-force walk in the new order agrees with the walk's own partial scores.
    np.testing.assert_allclose(
        S[:10], _brute_force(ordered, Xte[:10], Xtr[mask])[:, 1:], rtol=1e-9, atol=1e-9
    )
    # The plain walk under it keeps its own order.
    np.testing.assert_array_equal(sw.walk.order, walk.order)


def test_the_residual_order_samples_at_most_max_rows_and_as_many_support_vectors(problem):
    """``max_rows`` reference rows, seeded, and no more support vectors than rows sampled (a
    seeded sample of them where there are more), checked against the greedy order of the
    contributions of exactly those rows by the definitions."""
    from attentive.sketch import residual_order
    from attentive.sketch.walk import ORDER_SHRINKAGE

    model, _, sw, Xtr, _, _, mask, own = problem
    Xp = sw.prepare(Xtr)
    rows = np.sort(np.random.default_rng(5).choice(Xp.shape[0], 60, replace=False))
    n_support = model.support_vectors_.shape[0]
    assert n_support > 60
    support = np.sort(np.random.default_rng(5).choice(n_support, 60, replace=False))
    sampled = residual_order(sw, Xp, leave_own_out=True, own=own, max_rows=60, random_state=5)
    on_rows = residual_order(sw, Xp[rows], leave_own_out=True, own=own[rows], random_state=5)
    np.testing.assert_array_equal(sampled.order, on_rows.order)
    C = np.vstack(
        [
            np.diff(_brute_force(sw, Xtr[rows], Xtr[mask], own=own[rows]), axis=1),
            np.diff(_brute_force(sw, model.support_vectors_[support], Xtr[mask]), axis=1),
        ]
    )
    expected = sw.order[_greedy_by_brute_force(C, ORDER_SHRINKAGE)]
    np.testing.assert_array_equal(sampled.order, expected)
    with pytest.raises(InvalidParameterError, match="at least one reference row"):
        residual_order(sw, Xp[:0])


def test_the_residual_order_of_many_terms_is_by_each_terms_own_spread(problem, monkeypatch):
    """Above MAX_COVARIANCE_TERMS (no n × n covariances), each term's own spread over the
    reference rows alone, largest first, ties in the walk's order."""
    import attentive.sketch.walk as sketched

    _, _, sw, Xtr, _, _, mask, own = problem
    monkeypatch.setattr(sketched, "MAX_COVARIANCE_TERMS", sw.n_terms - 1)
    model = problem[0]
    ordered = sketched.residual_order(sw, sw.prepare(Xtr), leave_own_out=True, own=own)
    C = np.diff(_brute_force(sw, Xtr, Xtr[mask], own=own), axis=1)
    support = np.diff(_brute_force(sw, model.support_vectors_, Xtr[mask]), axis=1)
    spread = np.vstack([C, support]).var(axis=0)
    expected = sw.order[np.argsort(-spread, kind="stable")]
    np.testing.assert_array_equal(ordered.order, expected)
