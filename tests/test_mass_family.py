"""The mass-regression family: its table against least squares, its rule against the reference
on every evaluation path, and the running masses against a loop over the model's terms."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.ensemble import AdaBoostClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC, LinearSVC

from attentive import AttentiveClassifier, InvalidParameterError
from attentive.data import load_dataset
from attentive.evaluation import apply_boundary, evaluation_options, first_crossing
from attentive.families import WalkStatistics, make_family
from attentive.families.mass import mass_table


def _lstsq_table(S, A):
    """Per position, numpy's least squares of S_n on [1, S_t, A_t] and the residual spread."""
    m, n = S.shape
    coef, spread = np.empty((n, 3)), np.empty(n)
    for t in range(n):
        design = np.column_stack([np.ones(m), S[:, t], A[:, t]])
        beta = np.linalg.lstsq(design, S[:, -1], rcond=None)[0]
        coef[t] = beta
        spread[t] = np.sqrt(np.mean((S[:, -1] - design @ beta) ** 2))
    return coef, spread


def test_mass_table_is_least_squares_per_position():
    rng = np.random.default_rng(0)
    m, n = 400, 30
    terms = rng.normal(size=(m, n)) * rng.uniform(0.5, 2.0, size=n)
    mass_terms = np.abs(terms) + rng.normal(scale=0.1, size=(m, n))
    S, A = np.cumsum(terms, axis=1), np.cumsum(mass_terms, axis=1)
    S[:, -1] += 0.5 * A[:, 10]  # S_n (every position's target) depends on an early mass
    table = mass_table(S, A)
    coef, spread = _lstsq_table(S, A)
    np.testing.assert_allclose(table.intercept[:-1], coef[:-1, 0], atol=1e-9)
    np.testing.assert_allclose(table.slope[:-1], coef[:-1, 1], atol=1e-9)
    np.testing.assert_allclose(table.mass_slope[:-1], coef[:-1, 2], atol=1e-9)
    np.testing.assert_allclose(table.residual_std[:-1], spread[:-1], atol=1e-9)
    assert np.abs(table.mass_slope[10:-1]).max() > 0.1
    # The last position decides at S_n itself.
    assert (table.intercept[-1], table.slope[-1], table.mass_slope[-1]) == (0.0, 1.0, 0.0)
    assert table.residual_std[-1] == 0.0 and table.n_reference == m


def test_collinear_mass_falls_back_to_the_regression_on_s():
    """Weights of one sign make A_t = S_t + a constant per position: no second regressor."""
    rng = np.random.default_rng(1)
    S = np.cumsum(rng.normal(size=(300, 12)), axis=1)
    A = S + np.arange(12.0)
    table = mass_table(S, A)
    assert np.all(table.mass_slope == 0.0)
    for t in range(11):
        slope, intercept = np.polyfit(S[:, t], S[:, -1], 1)
        spread = np.sqrt(np.mean((S[:, -1] - slope * S[:, t] - intercept) ** 2))
        assert table.slope[t] == pytest.approx(slope, rel=1e-9, abs=1e-12)
        assert table.intercept[t] == pytest.approx(intercept, rel=1e-9, abs=1e-12)
        assert table.residual_std[t] == pytest.approx(spread, rel=1e-9, abs=1e-12)


def test_regressors_constant_up_to_rounding_are_left_out():
    """A first term that is the same for every walk (a bias feature) predicts nothing: its
    position gets slope 0 and the whole spread, not a slope of 1e15 fitted to rounding."""
    rng = np.random.default_rng(3)
    m, n = 500, 8
    terms = rng.normal(size=(m, n))
    terms[:, 0] = 0.7 + 3e-16 * rng.normal(size=m)  # 0.7 up to a few ulps
    S = np.cumsum(terms, axis=1)
    A = np.cumsum(np.abs(terms), axis=1)
    A[:, 1] = 3.1 * (1.0 + 3e-16 * rng.normal(size=m))  # a mass constant up to a few ulps
    table = mass_table(S, A)
    assert table.slope[0] == 0.0 and table.mass_slope[0] == 0.0
    assert table.residual_std[0] == pytest.approx(S[:, -1].std(), rel=1e-9)
    assert table.mass_slope[1] == 0.0
    slope = np.polyfit(S[:, 1], S[:, -1], 1)[0]
    assert table.slope[1] == pytest.approx(slope, rel=1e-9)
    # Elsewhere both regressors are used.
    assert np.all(table.mass_slope[2:-1] != 0.0)


def test_tiny_inputs():
    S = np.array([[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0]])
    table = mass_table(S, np.abs(S))
    assert table.n_reference == 3 and np.all(np.isfinite(table.residual_std))
    one = mass_table(np.array([[1.0], [2.0]]), np.array([[1.0], [2.0]]))
    assert (one.slope[0], one.intercept[0], one.residual_std[0]) == (1.0, 0.0, 0.0)


@pytest.fixture(scope="module")
def rbf_problem():
    X, y = make_classification(
        n_samples=2400, n_features=8, n_informative=5, flip_y=0.05, random_state=2
    )
    clf = AttentiveClassifier(
        SVC(C=1.0), boundary="mass-regression", side="both", delta=0.05, random_state=0
    ).fit(X[:600], y[:600])
    return clf, X[600:]


def test_running_masses_against_a_loop_over_the_terms(rbf_problem):
    clf, X = rbf_problem
    svc = clf.estimator_
    walk = clf.walk_
    K = rbf_kernel(X[:50], svc.support_vectors_, gamma=svc._gamma)
    A = np.zeros((50, clf.n_terms_))
    total = np.zeros(50)
    for k, i in enumerate(walk.order):
        total = total + np.abs(svc.dual_coef_[0, i]) * K[:, i]
        A[:, k] = total
    np.testing.assert_allclose(clf.partial_masses(X[:50]), A, rtol=1e-12, atol=1e-12)
    S, A2 = walk.partial_scores_and_masses(X[:50])
    np.testing.assert_array_equal(S, clf.partial_scores(X[:50]))
    np.testing.assert_array_equal(A2, clf.partial_masses(X[:50]))


def test_the_rule_stops_on_the_estimate_with_the_mass(rbf_problem):
    """The boundary on V_t = S_t + κ_t A_t is the family's rule written out: stop lower where
    a_t + b_t S_t + c_t A_t < θ_S − z σ_t; a stopped walk scores c + a_t + b_t V_t."""
    clf, X = rbf_problem
    table = clf.walk_statistics_.mass
    assert table is not None and np.abs(np.asarray(table.mass_slope)[:-1]).max() > 0
    b = clf.boundary_
    assert b.uses_mass
    z = b.params["z"]
    S, A = clf.partial_scores(X), clf.partial_masses(X)
    a, bs, c, sd = (
        np.asarray(v) for v in (table.intercept, table.slope, table.mass_slope, table.residual_std)
    )
    est = a + bs * S + c * A
    theta = clf.theta_s_
    n = clf.n_terms_
    ok = bs[: n - 1] > 0
    low = (est[:, : n - 1] < theta - z * sd[: n - 1]) & ok
    high = (est[:, : n - 1] > theta + z * sd[: n - 1]) & ok
    crossed = low | high
    first = np.where(crossed.any(axis=1), np.argmax(crossed, axis=1) + 1, n)
    ev = _walking(clf).evaluate(X)
    np.testing.assert_array_equal(ev.n_evaluated, first)
    assert ev.stopped.mean() > 0.3
    rows = np.flatnonzero(ev.stopped)
    t = ev.n_evaluated[rows] - 1
    score = clf.offset_ + est[rows, t]
    # z > 0: a stop's estimate lies beyond θ on its side, so the score is the estimate itself.
    assert z > 0
    np.testing.assert_allclose(ev.decision[rows], score, rtol=1e-9, atol=1e-9)


def test_the_running_estimate_and_its_thresholds_are_the_tables(rbf_problem):
    """Boundary.running_estimate is a_t + b_t S_t + c_t A_t (NaN where b_t ≤ 0) and
    estimate_thresholds θ_S ∓ z σ_t: what the walks plot draws for a mass rule, on the scale of
    S_n where V_t's grow like 1 / b_t."""
    clf, X = rbf_problem
    table, b = clf.walk_statistics_.mass, clf.boundary_
    z = b.params["z"]
    S, A = clf.partial_scores(X), clf.partial_masses(X)
    a, bs, c, sd = (
        np.asarray(v) for v in (table.intercept, table.slope, table.mass_slope, table.residual_std)
    )
    ok = bs > 0
    assert ok.mean() > 0.5 and not ok.all()  # both kinds of position
    est = b.running_estimate(S, A)
    np.testing.assert_allclose(est[:, ok], (a + bs * S + c * A)[:, ok], rtol=1e-9, atol=1e-9)
    assert np.isnan(est[:, ~ok]).all()
    lower, upper = b.estimate_thresholds()
    theta = clf.theta_s_
    np.testing.assert_allclose(lower[ok], theta - z * sd[ok], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(upper[ok], theta + z * sd[ok], rtol=1e-9, atol=1e-9)
    assert np.isnan(lower[~ok]).all() and np.isnan(upper[~ok]).all()
    # A rule without an estimate, or with one intercept a side, has no single running estimate.
    with pytest.raises(InvalidParameterError, match="no single estimate"):
        clf.with_rule("constant").boundary_.running_estimate(S)


def test_without_a_table_the_family_is_the_regression(rbf_problem):
    clf, _ = rbf_problem
    s = clf.walk_statistics_
    plain = WalkStatistics(s.positive, s.negative, s.pooled, s.variance)
    mass = make_family("mass-regression", plain, clf.theta_s_, "both").boundary(2.0)
    reg = make_family("regression", plain, clf.theta_s_, "both").boundary(2.0)
    assert not mass.uses_mass
    np.testing.assert_allclose(mass.lower, reg.lower)
    np.testing.assert_allclose(mass.upper, reg.upper)


def test_a_mass_rule_needs_the_masses(rbf_problem):
    clf, X = rbf_problem
    S = clf.partial_scores(X[:20])
    with pytest.raises(InvalidParameterError, match="running masses A"):
        apply_boundary(S, clf.boundary_, clf.theta_s_)
    # (also where there is no position to stop at)
    with pytest.raises(InvalidParameterError, match="running masses A"):
        first_crossing(S[:, :1], dataclasses.replace(clf.boundary_, **_first(clf.boundary_)))
    with pytest.raises(InvalidParameterError, match="shape of S"):
        apply_boundary(S, clf.boundary_, clf.theta_s_, A=S[:, :5])
    fam = clf.boundary_family()
    from attentive.grid import grid_outcomes

    with pytest.raises(InvalidParameterError, match="pass A"):
        grid_outcomes(S, fam)


def _first(boundary):
    """The fields of ``boundary`` cut to its first position."""
    return {
        name: getattr(boundary, name)[:1]
        for name in ("lower", "upper", "estimate_slope", "estimate_intercept", "mass")
    }


def test_reference_walks_leave_their_own_term_out_of_the_mass(rbf_problem):
    clf, _ = rbf_problem
    walk = clf.walk_
    X_ref = clf.estimator_.support_vectors_[:30]
    own = np.arange(30)  # row i is support vector i
    S, A = walk.partial_scores_and_masses(X_ref, leave_own_out=True, own=own)
    values = walk.terms.term_values(walk.prepare(X_ref), walk.order)
    pos = walk.positions[own]
    values[np.arange(30), pos] = 0.0
    np.testing.assert_allclose(A, np.cumsum(values * np.abs(walk.ordered_weights), axis=1))
    np.testing.assert_allclose(S, walk.partial_scores(X_ref, leave_own_out=True, own=own))
    full = walk.partial_masses(X_ref)
    assert np.all(full[:, -1] > A[:, -1])  # each had its own term, now left out


def test_a_mass_free_table_gives_a_plain_boundary(rbf_problem):
    """κ = 0 everywhere: no mass on the boundary, so every evaluation path runs it as it is."""
    clf, _ = rbf_problem
    s = clf.walk_statistics_
    t = s.mass
    flat = dataclasses.replace(t, mass_slope=np.zeros_like(t.mass_slope))
    stats = dataclasses.replace(s, mass=flat)
    b = make_family("mass-regression", stats, clf.theta_s_, "both").boundary(2.0)
    assert not b.uses_mass and b.mass is None


def _walking(clf):
    """The classifier with early_stopping=True: it walks the rule (with "auto" it may evaluate
    every term instead, where its pilot predicts walking would cost more)."""
    return copy.copy(clf).set_params(early_stopping=True)


def _assert_as_reference(clf, X, **options):
    """The rule's walk (early_stopping=True) gives the reference's stops, decisions and labels;
    "auto" gives them too, or, where it evaluates in full, the full model's."""
    S, A = clf.partial_scores(X), clf.partial_masses(X)
    ref = apply_boundary(S, clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_, A=A)
    with evaluation_options(**options):
        ev = _walking(clf).evaluate(X)
        labels = _walking(clf).predict(X)
        auto = clf.evaluate(X)
    assert ev.path == "walk"
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(labels, ref.labels)
    if auto.path == "walk":
        np.testing.assert_array_equal(auto.n_evaluated, ref.n_evaluated)
        np.testing.assert_allclose(auto.decision, ref.decision, rtol=1e-9, atol=1e-9)
    else:
        assert auto.path == "full" and not auto.stopped.any()
        np.testing.assert_allclose(auto.decision, clf.offset_ + S[:, -1], rtol=1e-9, atol=1e-9)
    return ref


@pytest.mark.parametrize(
    "options",
    [
        {},  # pilot, survival schedule, blocks
        {"block_size": 16, "n_jobs": 2},
        {"block_size": 5, "chunk_size": 97, "precision": "mixed"},  # 8 features: double anyway
    ],
)
def test_evaluator_equals_the_reference_few_features(rbf_problem, options):
    clf, X = rbf_problem
    ref = _assert_as_reference(clf, X, **options)
    assert 0.2 < ref.stopped.mean() < 1.0


@pytest.mark.parametrize("side", ["lower", "upper"])
def test_evaluator_equals_the_reference_one_side(rbf_problem, side):
    clf, X = rbf_problem
    one = clf.with_rule("mass-regression", side=side, delta=0.05)
    assert one.boundary_.uses_mass
    for options in ({}, {"block_size": 8}):
        ref = _assert_as_reference(one, X, **options)
        assert ref.stopped.any()
        assert set(np.unique(ref.stop_side[ref.stopped])) == {-1 if side == "lower" else 1}


def test_evaluator_equals_the_reference_short_rbf_walk():
    """An RBF model of at most 64 terms: the one-go walk's triangular product for the mass."""
    from attentive.evaluator.walk import SMALL_PREFIX_PRODUCT

    X, y = make_classification(n_samples=1000, n_features=6, class_sep=2.0, random_state=5)
    clf = AttentiveClassifier(
        SVC(C=0.5, gamma=0.05),
        boundary="mass-regression",
        side="both",
        delta=0.1,
        random_state=0,
    ).fit(X[:300], y[:300])
    assert clf.n_terms_ <= SMALL_PREFIX_PRODUCT and clf.boundary_.uses_mass
    ref = _assert_as_reference(clf, X[300:])
    assert ref.stopped.any()
    _assert_as_reference(clf, X[300:], block_size=6)


def test_evaluator_equals_the_reference_tiny_call(rbf_problem):
    """A few rows: every term at once (walks longer than the triangular product's limit)."""
    from attentive.evaluator.blocked import _SMALL_PROBLEM
    from attentive.evaluator.walk import SMALL_PREFIX_PRODUCT

    clf, X = rbf_problem
    rows = _SMALL_PROBLEM // clf.n_terms_
    assert clf.n_terms_ > SMALL_PREFIX_PRODUCT and rows >= 20
    ref = _assert_as_reference(clf, X[:rows])
    assert ref.stopped.any()


def test_evaluator_equals_the_reference_on_mnist():
    """784 features, pixels on a grid: the raw and grid copies of the double-precision walk."""
    ds = load_dataset("mnist-t10k-3v8")
    clf = AttentiveClassifier(
        FrozenEstimator(SVC(gamma=0.05).fit(ds.X_train[:600], ds.y_train[:600])),
        boundary="mass-regression",
        side="both",
        delta=0.05,
        random_state=0,
    ).fit(ds.X_train[:600], ds.y_train[:600])
    assert clf.boundary_.uses_mass
    for options in ({}, {"block_size": 32, "n_jobs": 2}):
        ref = _assert_as_reference(clf, ds.X_test, **options)
        assert ref.stopped.mean() > 0.3


def test_evaluator_equals_the_reference_for_other_models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 30))
    X[np.abs(X) < 1.0] = 0.0
    y = (X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.normal(size=900) > 0).astype(int)
    Xs = sp.csr_matrix(X)
    models = {
        "linear-sparse": (LinearSVC().fit(Xs[:400], y[:400]), Xs),
        "logistic": (LogisticRegression().fit(X[:400], y[:400]), X),
        "adaboost": (AdaBoostClassifier(n_estimators=40).fit(X[:400], y[:400]), X),
        "poly": (SVC(kernel="poly", degree=2).fit(X[:400], y[:400]), X),
        # Sparse support vectors and rows: blocks of magnitudes (RBF) or signed terms.
        "rbf-sparse": (SVC(gamma=0.05).fit(Xs[:400], y[:400]), Xs),
        "poly-sparse": (SVC(kernel="poly", degree=2).fit(Xs[:400], y[:400]), Xs),
    }
    for name, (model, data) in models.items():
        clf = AttentiveClassifier(
            FrozenEstimator(model),
            boundary="mass-regression",
            side="both",
            delta=0.2,
            early_stopping=True,  # the sparse linear model walks too
            random_state=0,
        ).fit(data[:400], y[:400])
        stopped = 0
        for options in ({}, {"block_size": 4}):
            # 500 rows: the tiny problems' one-go walk where rows × terms is small, else blocks.
            stopped += _assert_as_reference(clf, data[400:], **options).stopped.sum()
        assert stopped > 0, name


def test_a_calibrated_mass_rule_survives_the_trusted_skops_round_trip(rbf_problem, tmp_path):
    from attentive.models import load_model, save_model

    clf, X = rbf_problem
    path = save_model(clf, tmp_path / "mass.skops")
    loaded = load_model(path)
    assert loaded.boundary_.uses_mass
    np.testing.assert_array_equal(loaded.boundary_.mass, clf.boundary_.mass)
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(
        loaded.boundary_family().boundary(1.5).mass, clf.boundary_family().boundary(1.5).mass
    )


def test_a_linear_model_on_sparse_rows_walks_a_mass_rule_as_the_reference():
    """The sparse linear source's own walk (range-maximum queries on ``U_t``) cannot test
    ``U_t + κ_t A_t``: a mass rule walks its rows in blocks, stops equal to the reference's
    (its own walk ignored the mass and stopped where ``U_t`` alone crossed)."""
    from attentive.boundaries import Boundary
    from attentive.evaluator import evaluate_blocked
    from attentive.terms import decompose
    from attentive.walk import make_walk

    rng = np.random.default_rng(0)
    X = sp.random(600, 40, density=0.3, format="csr", random_state=rng)
    y = (X @ rng.normal(size=40) > 0.5).astype(int)
    model = LinearSVC().fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], centering="all", random_state=0)[0]
    n = walk.n_terms
    S, A = walk.partial_scores_and_masses(X[300:])
    kappa = np.full(n, -0.5)
    V = S + kappa * A
    lower = np.full(n, np.quantile(V, 0.2))
    upper = np.full(n, np.quantile(V, 0.95))
    boundary = Boundary("constant", "both", lower, upper, mass=kappa)
    ref = apply_boundary(S, boundary, 0.0, walk.offset, walk.terms.classes, A=A)
    assert 0.2 < ref.stopped.mean() < 0.9
    for kwargs in ({"block_size": 4}, {"chunk_size": 50, "n_jobs": 2}, {}):
        ev = evaluate_blocked(walk, X[300:], boundary, 0.0, path="walk", **kwargs)
        assert ev.path == "walk"
        np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
        np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
        np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)
