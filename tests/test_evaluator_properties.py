"""Property tests: every evaluation path stops where the reference does, on any boundary.

The reference is ``apply_boundary`` on the full matrix of partial scores (and running masses);
every path decides its stops through :mod:`attentive.evaluator.crossing`: tiny problems in one
go, the blocked walk (chunks, threads), sparse linear rows (range-maximum queries), a rule on
the running mass, the calibration grid (:func:`attentive.grid.grid_outcomes`), and RBF models
through each of their term sources (double precision, float32 products under a certified
band, the integer grid).

Linear walks use small integer data and dyadic weights, so every partial sum (and running mass)
is exact in floating point and thresholds drawn from the walks' own values are true ties,
decided identically by every path; RBF walks use thresholds away from the walks by more than
rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import curved_boundary_for_test
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from attentive.boundaries import Boundary, full_boundary
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.plan import walk_plan
from attentive.evaluator.sources import source_for
from attentive.families.base import BoundaryFamily, standardised
from attentive.grid import grid_outcomes
from attentive.terms import TermDecomposition, decompose
from attentive.walk import Walk, make_walk

PATHS = {
    # name: keyword arguments of evaluate_blocked that select the path (each walks the rule)
    "tiny, in one go": {},
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


def _ints(draw, n, lo=-3, hi=3, scale=1.0):
    return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), float) / scale


@st.composite
def boundaries_for(draw, S, A):
    """Thresholds from the walks' own values (ties), ±inf, or in between; any estimate; a rule
    on the running mass (``S_t + κ_t A_t``, κ a multiple of 1/4: still exact) or not."""
    n = S.shape[1]
    mass = _ints(draw, n, scale=4) if draw(st.booleans()) else None
    V = S if mass is None else S + mass * A
    values = np.unique(np.concatenate([V.ravel(), [0.0, 0.5, -0.5]]))
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
        kw = {"estimate_slope": _ints(draw, n), "estimate_intercept": _ints(draw, n)}
    return Boundary("constant", side, lower, upper, mass=mass, **kw)


def _same(ev, ref, atol=0.0):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.stopped, ref.stopped)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-12, atol=atol)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_problems(), st.data())
def test_every_path_equals_the_reference_on_exact_walks(problem, data):
    walk, X = problem
    S, A = walk.partial_scores_and_masses(X)
    boundary = data.draw(boundaries_for(S, A))
    theta_s = data.draw(st.sampled_from([0.0, *np.unique(S[:, -1]).tolist(), 0.25]))
    stopped_score = data.draw(st.sampled_from(["estimate", "boundary"]))

    def reference(b):
        return apply_boundary(
            S, b, theta_s, walk.offset, walk.terms.classes, stopped_score=stopped_score, A=A
        )

    def run(rows, b=boundary, **kwargs):
        return evaluate_blocked(
            walk, rows, b, theta_s, precision="double", stopped_score=stopped_score, **kwargs
        )

    ref = reference(boundary)
    # Every decision is on its predicted side of θ, however the thresholds and estimates fall.
    theta = walk.offset + theta_s
    np.testing.assert_array_equal(ref.positive, ref.decision >= theta)
    # A boundary without a finite threshold before the last term is evaluated in full.
    n = S.shape[1]
    walks = bool(
        np.any(boundary.lower[: n - 1] > -np.inf) or np.any(boundary.upper[: n - 1] < np.inf)
    )
    for kwargs in PATHS.values():
        for path in ("walk", "auto"):  # dense rows: "auto" walks (no pilot this small)
            ev = run(X, path=path, **kwargs)
            _same(ev, ref)
            assert ev.path == ("walk" if walks else "full")
    # Sparse rows: the sparse linear source's own walk (range-maximum queries), or blocks
    # under a rule on the running mass; "auto" evaluates them in full.
    Xs = sp.csr_matrix(X)
    for kwargs in PATHS.values():
        _same(run(Xs, path="walk", **kwargs), ref)
    full_ref = reference(full_boundary(walk.n_terms))
    for rows, kwargs in ((Xs, {"path": "auto"}), (X, {"path": "full"}), (Xs, {"path": "full"})):
        ev = run(rows, **kwargs)
        assert ev.path == "full"
        _same(ev, full_ref)


class _ShiftFamily(BoundaryFamily):
    """A test family: at scale z, thresholds ``lower_t − z σ_t`` and ``upper_t + z σ_t`` (σ ≥ 0;
    a lower threshold may lie above the upper one: both sides crossed at one position)."""

    name = "shift (test)"

    def __init__(self, lower, upper, spread, theta_s, side):
        self.lower, self.upper, self.spread = lower, upper, spread
        self.theta_s = float(theta_s)
        self.side = side

    @property
    def n_terms(self):
        return self.lower.size

    def boundary(self, z):
        n = self.n_terms
        return self._sided_boundary(
            z, self.lower - z * self.spread, self.upper + z * self.spread, np.ones(n), np.zeros(n)
        )

    def crossing_scores(self, head, upper):
        k = head.shape[1]
        if upper:
            return standardised(head - self.upper[:k], self.spread[:k])
        return standardised(self.lower[:k] - head, self.spread[:k])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_problems(), st.data())
def test_the_calibration_grid_equals_the_reference_at_every_scale(problem, data):
    walk, X = problem
    S = walk.partial_scores(X)
    n = S.shape[1]
    values = np.unique(np.concatenate([S.ravel(), [0.0]]))
    choice = st.one_of(st.sampled_from(values.tolist()), st.sampled_from([-np.inf, np.inf]))
    lower = np.array(data.draw(st.lists(choice, min_size=n, max_size=n)), float)
    upper = np.array(data.draw(st.lists(choice, min_size=n, max_size=n)), float)
    spread = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=n, max_size=n))
    )
    side = data.draw(st.sampled_from(["lower", "upper", "both"]))
    theta_s = data.draw(st.sampled_from([0.0, *np.unique(S[:, -1]).tolist()]))
    family = _ShiftFamily(lower, upper, spread, theta_s, side)
    grid = np.array([2.0, 1.0, 0.25, 0.0, -0.5, -2.0])
    out = grid_outcomes(S, family, grid)
    for k, z in enumerate(grid):
        ref = apply_boundary(S, family.boundary(z), theta_s)
        np.testing.assert_array_equal(out.n_evaluated[:, k], ref.n_evaluated)
        np.testing.assert_array_equal(out.positive[:, k], ref.positive)
    np.testing.assert_array_equal(out.full_positive, S[:, -1] >= theta_s)


# ----------------------------------------------------------------------------------------- RBF


def _rbf_problem(X, y, gamma, rows):
    model = SVC(gamma=gamma, C=2.0).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=1)[0]
    return walk, X[300 : 300 + rows]


@pytest.fixture(scope="module")
def rbf_walks():
    """RBF walks whose rows go to each RBF term source: few features (double precision), many
    standardised features (float32 products, certified) and float32 pixels near the integer
    grid (certified)."""
    from attentive.data import load_dataset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=500) > 0.5).astype(int)
    wide = StandardScaler().fit_transform(rng.normal(size=(500, 80)) + X[:, :1])
    ds = load_dataset("mnist-t10k-3v8")
    pixels = np.concatenate([ds.X_train[:300], ds.X_test[:200]]).astype(np.float32)
    y_pixels = np.concatenate([ds.y_train[:300], ds.y_test[:200]])
    return {
        "rbf": _rbf_problem(X, y, 0.3, 200),
        "rbf-single": _rbf_problem(wide, y, "scale", 200),
        "rbf-grid": _rbf_problem(pixels, y_pixels, "scale", 200),
    }


@pytest.mark.parametrize("kind", ["rbf", "rbf-single", "rbf-grid"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rbf_paths_equal_reference_with_thresholds_off_the_walks(rbf_walks, kind, data):
    walk, X = rbf_walks[kind]
    assert source_for(walk, walk_plan(walk), X, "single").kind == kind
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
    # A certified source's values are within its band (about 1e-5 of Σ|w| at most here).
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())
    for precision in ("double", "single"):
        for kwargs in PATHS.values():
            ev = evaluate_blocked(
                walk, Xe, boundary, theta_s, precision=precision, path="walk", **kwargs
            )
            assert ev.path == "walk"
            _same(ev, ref, atol=1e-9 * spread + (band if precision == "single" else 0.0))
            np.testing.assert_array_equal(ev.positive, ev.decision >= walk.offset + theta_s)
