"""The test every term source passes (``attentive.evaluator.sources``): one or more problems per
registered source, each checked against computations that share nothing with the source.

* routing: :func:`source_for` picks the source on its problem;
* :meth:`block` against scikit-learn's kernel functions (or the features, or the weak learners'
  ``predict``) times the weights, ``|w| h`` for a source of magnitudes, and :meth:`masses`
  against ``|w| h``; a certified source's
  terms against the terms computed from their definition in extended precision
  (``np.longdouble``), each within the source's :meth:`relative_error` of itself;
* :meth:`keep` then :meth:`block` equal to the blocks of a source holding the kept rows;
* :meth:`tile_totals` equal to the sums of the first ``B`` brute-force terms (and, for every
  term, scikit-learn's ``decision_function`` minus the intercept); a certified source's error
  never beyond the band it returns;
* costs positive and finite;
* a whole walk (:func:`evaluate_blocked` with ``path="walk"``) equal to ``apply_boundary`` on
  every partial score, through this source.

Adding a source: register it, then add its problem to ``CASES`` below;
:func:`test_every_registered_source_has_a_problem` fails until then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.ensemble import AdaBoostClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import (
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from attentive.boundaries import Boundary
from attentive.data import load_dataset
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.plan import walk_plan
from attentive.evaluator.rows import as_rows
from attentive.evaluator.sources import source_for, sources
from attentive.terms import decompose
from attentive.walk import make_walk


@dataclass(frozen=True)
class Problem:
    """A fitted model, its walk, rows to evaluate (as the walk prepares them) and the precision
    a caller asks for."""

    model: object
    walk: object
    X: object
    precision: str


# -------------------------------------------------------------------------------------- data


@cache
def _mnist():
    """MNIST 3 vs 8: pixels / 255 in float64 (exactly on the integer grid)."""
    ds = load_dataset("mnist-t10k-3v8")
    return ds.X_train[:300], ds.y_train[:300], ds.X_test[:400]


@cache
def _standardised(n_features):
    """Off any grid: standardised features."""
    X, y = make_classification(
        n_samples=700,
        n_features=n_features,
        n_informative=min(20, n_features - 2),
        flip_y=0.05,
        random_state=n_features,
    )
    X = StandardScaler().fit_transform(X)
    return X[:300], y[:300], X[300:]


@cache
def _sparse(n_features=60):
    rng = np.random.default_rng(7)
    X = sp.random(700, n_features, density=0.15, format="csr", random_state=rng)
    X.data = rng.exponential(size=X.data.size)
    y = (X @ rng.normal(size=n_features) > 0.3).astype(int)
    return X[:300], y[:300], X[300:]


def _problem(model, data, precision="single", *, as_float32=False, rows=None):
    X, y, Xt = data
    if as_float32:  # as image pipelines store pixels / 255: near the grid, not on it
        X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    model = model.fit(X, y)
    walk = make_walk(decompose(model), X, y, centering="all", random_state=0)[0]
    Xt = Xt if rows is None else rows(Xt)
    return Problem(model, walk, as_rows(walk.prepare(Xt)), precision)


def _to_sparse(X):
    return sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))


# kind -> {problem id: builder}. Every registered source has at least one.
CASES = {
    "sparse-kernel": {
        "rbf": lambda: _problem(SVC(gamma=0.5), _sparse()),
        "poly": lambda: _problem(SVC(kernel="poly", degree=2, gamma=0.5, coef0=1.0), _sparse()),
    },
    "rbf-grid": {
        "exact grid": lambda: _problem(SVC(gamma="scale"), _mnist()),
        "exact grid, double": lambda: _problem(SVC(gamma="scale"), _mnist(), "double"),
        "near grid (float32 pixels)": lambda: _problem(
            SVC(gamma="scale", C=3.0), _mnist(), as_float32=True
        ),
    },
    "dot-grid": {
        "poly": lambda: _problem(SVC(kernel="poly", degree=3, gamma=0.01, coef0=1.0), _mnist()),
        "sigmoid": lambda: _problem(
            SVC(kernel="sigmoid", gamma=0.002, coef0=-0.5), _mnist(), "double"
        ),
    },
    "rbf-single": {
        "standardised": lambda: _problem(SVC(gamma="scale", C=3.0), _standardised(100)),
    },
    "rbf": {
        "few features": lambda: _problem(SVC(gamma=0.3), _standardised(8)),
        "many features, double": lambda: _problem(
            SVC(gamma="scale", C=3.0), _standardised(100), "double"
        ),
        "float32 pixels, double": lambda: _problem(
            SVC(gamma="scale"), _mnist(), "double", as_float32=True
        ),
    },
    "dot-kernel": {
        "poly off the grid": lambda: _problem(
            SVC(kernel="poly", degree=2, gamma=0.01, coef0=1.0), _standardised(100)
        ),
        "sigmoid": lambda: _problem(
            SVC(kernel="sigmoid", gamma=0.05, coef0=-0.2), _standardised(8)
        ),
        "linear kernel": lambda: _problem(SVC(kernel="linear", C=0.3), _standardised(8)),
    },
    "linear": {
        "logistic": lambda: _problem(LogisticRegression(), _standardised(20)),
        "linearsvc": lambda: _problem(LinearSVC(C=0.5), _standardised(8)),
    },
    "sparse-linear": {
        "linearsvc": lambda: _problem(LinearSVC(C=0.5), _sparse()),
        "logistic": lambda: _problem(LogisticRegression(C=2.0), _sparse(120)),
    },
    "weak-learners": {
        "adaboost": lambda: _problem(
            AdaBoostClassifier(n_estimators=40, random_state=0), _standardised(8)
        ),
        "adaboost, trees on sparse rows": lambda: _problem(
            AdaBoostClassifier(
                DecisionTreeClassifier(max_depth=3), n_estimators=30, random_state=0
            ),
            _standardised(8),
            rows=_to_sparse,
        ),
    },
    "term-values": {
        "dense support vectors, sparse rows": lambda: _problem(
            SVC(gamma=0.3), _standardised(8), rows=_to_sparse
        ),
    },
}

PROBLEMS = [(kind, name) for kind, named in CASES.items() for name in named]


@cache
def _build(kind, name) -> Problem:
    return CASES[kind][name]()


def _source_class(kind):
    (cls,) = [c for c in sources() if c.kind == kind]
    return cls


def test_every_registered_source_has_a_problem():
    """A new term source needs a problem here (and every problem here a registered source)."""
    assert {cls.kind for cls in sources()} == set(CASES)


@pytest.fixture(params=PROBLEMS, ids=[f"{k}: {n}" for k, n in PROBLEMS])
def case(request):
    kind, name = request.param
    return _source_class(kind), _build(kind, name)


# --------------------------------------------------------------------- independent computations


def _brute_terms(problem, rows, positions):
    """``w h`` of walk positions ``positions`` for rows ``rows`` of the problem (rows along
    axis 0), from scikit-learn: its kernel functions, the features, the weak learners."""
    walk = problem.walk
    terms = walk.terms
    X = problem.X[rows]
    idx = walk.order[positions]
    w = terms.weights[idx]
    if terms.kind == "kernel":
        Y = terms.support_vectors[idx]
        p = terms.kernel_params
        K = {
            "rbf": lambda: rbf_kernel(X, Y, gamma=p["gamma"]),
            "poly": lambda: polynomial_kernel(X, Y, p["degree"], p["gamma"], p["coef0"]),
            "sigmoid": lambda: sigmoid_kernel(X, Y, p["gamma"], p["coef0"]),
            "linear": lambda: linear_kernel(X, Y),
        }[terms.kernel]()
        return np.asarray(K) * w
    if terms.kind == "linear":
        cols = X[:, idx]
        return np.asarray(cols.toarray() if sp.issparse(cols) else cols, dtype=np.float64) * w
    votes = [np.where(terms.learners[i].predict(X) == terms.classes[1], 1.0, -1.0) for i in idx]
    return np.column_stack(votes) * w


def _exact_rbf_magnitudes(problem, rows, positions):
    """``|w| exp(−γ |x − y|²)`` in extended precision, from the definition (differences, not
    the expanded product), rows along axis 0."""
    terms = problem.walk.terms
    idx = problem.walk.order[positions]
    Y = np.asarray(terms.support_vectors[idx], dtype=np.longdouble)
    w = np.abs(np.asarray(terms.weights[idx], dtype=np.longdouble))
    gamma = np.longdouble(terms.kernel_params["gamma"])
    X = np.asarray(problem.X[rows], dtype=np.longdouble)
    out = np.empty((X.shape[0], idx.size), dtype=np.longdouble)
    for i, x in enumerate(X):
        d2 = ((Y - x) ** 2).sum(axis=1)
        out[i] = w * np.exp(-gamma * d2)
    return out


def _block(source, start, stop):
    out = np.empty((stop - start, source.n_rows))
    source.block(start, stop, out)
    return out


# ---------------------------------------------------------------------------------- the checks


ROWS = 120  # rows for blocks and sums (the walk takes every row of the problem)


def test_routing_picks_the_source(case):
    cls, problem = case
    plan = walk_plan(problem.walk)
    assert source_for(problem.walk, plan, problem.X, problem.precision) is cls


def _positions(n):
    """A block at the start, one in the middle and the last positions."""
    mid = n // 2
    return [(0, min(n, 7)), (mid, min(n, mid + 13)), (max(0, n - 5), n)]


def test_block_against_brute_force(case):
    cls, problem = case
    walk = problem.walk
    rows = np.arange(min(ROWS, problem.X.shape[0]))
    source = cls(walk, walk_plan(walk), problem.X[rows])
    assert source.n_rows == rows.size
    for start, stop in _positions(walk.n_terms):
        block = _block(source, start, stop)
        # The block's masses |w| h, h signed (a rule on the running mass, a certified source's band).
        masses = source.masses(start, stop, block.copy(), out=np.empty_like(block)).T
        got = block.T  # rows along axis 0
        positions = np.arange(start, stop)
        if source.certified:
            assert walk.terms.kernel == "rbf", "a certified source needs an exact reference here"
            exact = _exact_rbf_magnitudes(problem, rows, positions)
            rho = source.relative_error()
            assert rho.shape == (rows.size,) and np.all(rho < 1e-3)
            error = np.abs(got - exact).astype(np.float64)
            assert np.all(error <= rho[:, None] * got)
            np.testing.assert_array_equal(masses, got)
            continue
        want = _brute_terms(problem, rows, positions)
        scale = np.abs(want).max(initial=0.0)
        signs = np.where(walk.ordered_weights[positions] < 0, -1.0, 1.0)
        np.testing.assert_allclose(masses, want * signs, rtol=1e-9, atol=1e-12 * scale)
        if source.magnitudes:
            want = np.abs(want)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale)


def test_certified_errors_are_real_and_bounded_tightly(case):
    """Where a source is certified, its float32 products are visible (the check above can fail)
    and its bound is tight enough to decide most crossings: ~1e-7 relative near the integer
    grid (the float32 pixels here: 2e-6), ~1e-5 for standardised features."""
    cls, problem = case
    walk = problem.walk
    rows = np.arange(min(ROWS, problem.X.shape[0]))
    source = cls(walk, walk_plan(walk), problem.X[rows])
    if not source.certified:
        # An exact source: a grid source exactly on the grid, or double precision.
        assert cls.kind != "rbf-single"
        return
    positions = np.arange(walk.n_terms)
    got = _block(source, 0, walk.n_terms).T
    exact = _exact_rbf_magnitudes(problem, rows, positions)
    relative = (np.abs(got - exact) / exact).astype(np.float64)
    assert relative.max() > 1e-12
    rho = source.relative_error()
    assert np.all(relative <= rho[:, None] * (got / exact).astype(np.float64))
    assert rho.max() < (1e-5 if cls.kind == "rbf-grid" else 1e-4)


def test_keep_then_block_equals_a_source_of_the_kept_rows(case):
    cls, problem = case
    walk, plan = problem.walk, walk_plan(problem.walk)
    m = min(ROWS, problem.X.shape[0])
    rows = problem.X[:m]
    kept = np.flatnonzero(np.random.default_rng(0).random(m) < 0.4)
    held = cls(walk, plan, rows)
    rho = held.relative_error() if held.certified else None
    held.keep(kept)
    fresh = cls(walk, plan, rows[kept])
    assert held.n_rows == fresh.n_rows == kept.size
    if rho is not None:
        np.testing.assert_array_equal(held.relative_error(), rho[kept])
    start = held.start()
    if start is not None:
        np.testing.assert_allclose(start, fresh.start(), rtol=1e-12)
    for a, b in _positions(walk.n_terms):
        tol = 2 * float(rho.max()) if rho is not None else 1e-12
        np.testing.assert_allclose(_block(held, a, b), _block(fresh, a, b), rtol=tol, atol=0)
    held.keep(np.arange(0, kept.size, 2))  # a second compaction
    np.testing.assert_allclose(
        _block(held, 0, walk.n_terms),
        _block(cls(walk, plan, rows[kept[::2]]), 0, walk.n_terms),
        rtol=2 * float(rho.max()) if rho is not None else 1e-12,
    )


@pytest.mark.parametrize("budget", ["one", "half", "every"])
def test_tile_totals_against_brute_force(case, budget):
    cls, problem = case
    walk, plan = problem.walk, walk_plan(problem.walk)
    n = walk.n_terms
    B = {"one": 1, "half": max(1, n // 2), "every": n}[budget]
    rows = np.arange(min(ROWS, problem.X.shape[0]))
    final = 0.25
    U, band = cls.tile_totals(walk, plan, problem.X[rows], B, final)
    assert U.shape == (rows.size,)
    certified = cls(walk, plan, problem.X[rows[:2]]).certified
    assert (band is not None) == certified
    positions = np.arange(B)
    if certified:
        exact = _exact_rbf_magnitudes(problem, rows, positions) @ np.asarray(
            plan.weight_signs[:B], dtype=np.longdouble
        )
        error = np.abs(U - exact).astype(np.float64)
        assert band.shape == U.shape and np.all(error <= band)
        return
    terms = _brute_terms(problem, rows, positions)
    scale = np.abs(terms).sum(axis=1).max()
    np.testing.assert_allclose(U, terms.sum(axis=1), rtol=1e-9, atol=1e-11 * scale)
    if B == n and hasattr(problem.model, "decision_function"):
        # Every term: scikit-learn's own decision function, less the intercept.
        X = problem.X[rows]
        if sp.issparse(X) and not sp.issparse(getattr(problem.model, "support_vectors_", X)):
            X = X.toarray()  # (scikit-learn's SVC fitted on dense rows refuses sparse ones)
        f = problem.model.decision_function(X) - walk.terms.intercept
        np.testing.assert_allclose(U, f, rtol=1e-9, atol=1e-11 * scale)


def test_costs_are_positive_and_finite(case):
    cls, problem = case
    source = cls(problem.walk, walk_plan(problem.walk), problem.X[:50])
    for cost in (source.term_cost, source.mass_cost, source.row_cost):
        assert math.isfinite(cost) and cost > 0
    assert isinstance(source.max_block, (int, np.integer)) and source.max_block >= 1


def _boundary(S):
    """Both sides at about 30 positions, at per-position quantiles of the walks (a few
    percent stop at each), off their values by far more than rounding (two correct summation
    orders never disagree); ±inf elsewhere."""
    n = S.shape[1]
    eps = 1e-6 * (1.0 + np.abs(S).max())
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    active = np.arange(0, n - 1, max(1, n // 30))
    lower[active] = np.quantile(S[:, active], 0.03, axis=0) + eps
    upper[active] = np.quantile(S[:, active], 0.97, axis=0) + eps
    return Boundary("constant", "both", lower, upper)


@pytest.mark.parametrize("options", [{"block_size": 8}, {}], ids=["blocks of 8", "pilot"])
def test_walk_through_the_source_equals_the_reference(case, options, monkeypatch):
    cls, problem = case
    walk = problem.walk
    # (Walked by this source, not by another the pilot prices lower: TermSource.alternatives,
    # tested where a source names one.)
    monkeypatch.setattr(cls, "alternatives", classmethod(lambda c, X: ()))
    used = []
    for method in ("block", "walk_chunk"):
        original = getattr(cls, method)

        def spy(self, *args, _original=original):
            if type(self) is cls:
                used.append(cls.kind)
            return _original(self, *args)

        monkeypatch.setattr(cls, method, spy)
    S = walk.partial_scores(problem.X)
    theta_s = walk.theta_s(0.0)
    boundary = _boundary(S)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert 0.1 < ref.stopped.mean() < 1.0
    ev = evaluate_blocked(
        walk, problem.X, boundary, theta_s, path="walk", precision=problem.precision, **options
    )
    assert used, f"the walk did not use {cls.kind}"
    assert ev.path == "walk"
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    # Decision values: to rounding, or within a certified source's band (its terms' relative
    # error times Σ|w h| ≤ Σ|w| for an RBF kernel).
    atol = 1e-9 * (1.0 + np.abs(ref.decision).max())
    source = cls(walk, walk_plan(walk), problem.X)
    if source.certified:
        atol += 1.01 * float(source.relative_error().max()) * np.abs(walk.ordered_weights).sum()
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=atol)
