"""Kernel models over many features (RBF, and linear, polynomial and sigmoid kernels): the product
restricted to the columns where some support vector is non-zero, and exact float32 products of
data on an integer grid (8-bit images / 255).

Everything is compared with a brute-force computation: scikit-learn's ``decision_function`` for
full evaluation, ``apply_boundary`` on the full matrix of partial scores for the walks. Thresholds
are placed 1e-9 (relative) from the walks' values: a float32 product that is not exact (errors of
about 1e-7) decides some of them wrongly, double precision and exact integer products do not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import curved_boundary_for_test
from sklearn.base import clone
from sklearn.svm import SVC

import attentive.evaluator.dense as dense
from attentive.boundaries import budget_boundary, full_boundary
from attentive.errors import NonFiniteInput
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.plan import (
    GRID_LIMIT,
    column_runs,
    expected_remaining,
    grid_scale,
    walk_plan,
)
from attentive.terms import decompose
from attentive.walk import make_walk

SIDE = 12  # 12 × 12 images: 144 features, more than dense.AUGMENT_MAX_FEATURES


def _images(rng, m, scale=255):
    """Blobs on a zero border (the outer two pixels are 0 in every image), integers / scale."""
    yy, xx = np.mgrid[:SIDE, :SIDE]
    X = np.zeros((m, SIDE, SIDE))
    y = rng.integers(0, 2, m)
    for i in range(m):
        cx, cy = rng.uniform(4, 8, 2)
        r = 2.5 + 0.6 * y[i] + rng.uniform(-0.8, 0.8)
        X[i] = np.clip(1.6 - np.hypot(xx - cx, yy - cy) / r + rng.normal(0, 0.2, X[i].shape), 0, 1)
    X[:, :2] = X[:, -2:] = X[:, :, :2] = X[:, :, -2:] = 0.0
    X = np.rint(X.reshape(m, -1) * scale) / scale
    return X, y


@pytest.fixture(scope="module")
def grid_problem():
    rng = np.random.default_rng(3)
    X, y = _images(rng, 1400)
    model = SVC(gamma=0.05, C=1.0).fit(X[:400], y[:400])
    walk = make_walk(decompose(model), X[:400], y[:400], random_state=2)[0]
    assert walk.n_terms * 1000 > 2**15  # not a tiny problem (walked in one go)
    return model, walk, X[400:]


def _spy_modes(monkeypatch, source):
    """The modes ``source``'s walks ended in at each compaction or copy (so that a test cannot
    pass without using the path it tests)."""
    seen = []
    original = source.keep

    def keep(self, idx):
        original(self, idx)
        seen.append(self.mode)

    monkeypatch.setattr(source, "keep", keep)
    return seen


@pytest.fixture
def modes(monkeypatch):
    """The modes RBFTerms ended in."""
    return _spy_modes(monkeypatch, dense.RBFTerms)


def _boundary(S, rng, side, gap):
    """Thresholds on a random tenth of the positions, at low (lower side) or high (upper side)
    quantiles of the walks there, moved to ``gap`` (relative) from the nearest walk value, so
    that a walk misses or crosses each by about ``gap``."""
    n = S.shape[1]
    spread = float(np.abs(S).max()) + 1.0
    active = rng.random(n) < 0.1
    cols = np.arange(n)
    lower = np.quantile(S, rng.uniform(0.0, 0.05, n), axis=0)[cols, cols]
    upper = np.quantile(S, rng.uniform(0.95, 1.0, n), axis=0)[cols, cols]
    for t in (lower, upper):
        nearest = S[np.argmin(np.abs(S - t), axis=0), cols]
        t[:] = nearest + np.where(rng.random(n) < 0.5, -gap, gap) * spread
    lower[~active] = -np.inf
    upper[~active] = np.inf
    return curved_boundary_for_test(lower, upper, side, rng)


def _same(ev, ref):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)


def _knife_edges(walk, X, seed, side="both"):
    """A boundary 1e-9 from the walks' values of X, θ_S and the reference's result."""
    S = walk.partial_scores(X)
    boundary = _boundary(S, np.random.default_rng(seed), side, gap=1e-9)
    theta_s = walk.theta_s(0.0)
    return boundary, theta_s, apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)


def _walks_as_reference(walk, X, seed, **kwargs):
    """evaluate_blocked (with kwargs) on knife edges gives the reference's result."""
    boundary, theta_s, ref = _knife_edges(walk, X, seed)
    _same(evaluate_blocked(walk, X, boundary, theta_s, **kwargs), ref)


def test_the_plan_restricts_columns_and_finds_the_grid(grid_problem):
    model, walk, _ = grid_problem
    plan = walk_plan(walk)
    sv = model.support_vectors_
    used = np.flatnonzero(np.any(sv != 0, axis=0))
    assert 0 < plan.sv_columns.size < sv.shape[1]
    np.testing.assert_array_equal(plan.sv_columns, used)
    assert plan.sv_grid_scale == 255.0
    np.testing.assert_array_equal(
        plan.sv_grid32, np.rint(sv[walk.order][:, used] * 255).astype(np.float32)
    )


@pytest.mark.parametrize("rows", ["all", "every third", "shuffled, over two tiles"])
def test_grid_rows_are_the_rows_integers_and_norms(grid_problem, rows, monkeypatch):
    """grid_rows against a brute-force computation: the integers 255 x on the plan's columns,
    and −γ|x|² over all columns, for every row in order and for rows gathered by index."""
    monkeypatch.setattr(dense, "_GRID_TILE", 64)  # several tiles, the last one partial
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    rng = np.random.default_rng(5)
    idx = {
        "all": np.arange(len(X)),
        "every third": np.arange(0, len(X), 3),
        "shuffled, over two tiles": rng.permutation(len(X))[:100],
    }[rows]
    ints, norms2 = dense.grid_rows(plan, X, idx)
    assert ints.dtype == np.float32
    expected = np.rint(X[idx][:, plan.sv_columns] * 255.0)
    np.testing.assert_array_equal(ints, expected.astype(np.float32))
    np.testing.assert_allclose(norms2, (X[idx] ** 2).sum(axis=1), rtol=1e-13)


@pytest.fixture
def full_tiles(monkeypatch):
    """Each tile of rows full evaluation took on the grid ("grid") or off it ("off"); a list,
    which threads append to safely."""
    seen = []
    original = dense.grid_rows

    def grid_rows(plan, X, idx):
        out = original(plan, X, idx)
        seen.append("off" if out is None else "grid")
        return out

    monkeypatch.setattr(dense, "grid_rows", grid_rows)
    return seen


def _full_on_the_grid_matches_sklearn(model, walk, X, full_tiles, atol):
    """Full evaluation, in the default tiles and in tiles of 7 rows, every tile on the grid."""
    full = full_boundary(walk.n_terms)
    for chunk_size in (None, 7):
        ev = evaluate_blocked(walk, X, full, walk.theta_s(0.0), chunk_size=chunk_size)
        np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=atol)
    assert full_tiles.count("grid") > 1 and "off" not in full_tiles


def test_full_evaluation_on_the_grid_matches_sklearn(grid_problem, full_tiles):
    _full_on_the_grid_matches_sklearn(*grid_problem, full_tiles, atol=1e-12)


def test_full_evaluation_with_rows_off_the_grid_matches_sklearn(grid_problem, full_tiles):
    """A tile holding a row off the grid takes the double-precision product; the others stay
    on the grid."""
    model, walk, X = grid_problem
    X = X.copy()
    X[30, 40] += 1e-3
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0), chunk_size=25)
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-12)
    # Chunks of at most 25 rows (more when the rows are split evenly over the threads).
    assert full_tiles.count("off") == 1 and full_tiles.count("grid") == len(full_tiles) - 1
    assert len(full_tiles) >= -(-len(X) // 25)


@pytest.mark.parametrize("budget", [1, 37])
def test_budgeted_prefix_sums_on_the_grid_by_brute_force(grid_problem, full_tiles, budget):
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    U = dense.prefix_sums(walk, plan, X, budget, None, 1)
    terms = walk.terms.term_values(walk.prepare(X), walk.order[:budget])
    np.testing.assert_allclose(U, terms @ walk.ordered_weights[:budget], rtol=1e-11, atol=1e-13)
    assert "grid" in full_tiles and "off" not in full_tiles


def test_an_inexact_float32_product_would_fail_full_evaluation(grid_problem, monkeypatch):
    """The comparison with scikit-learn can fail: float32 products of rows that are not exact
    integers (errors of ~1e-7 of the product) miss rtol=1e-9."""
    model, walk, X = grid_problem
    plan = walk_plan(walk)
    monkeypatch.setattr(plan, "sv_grid_scale", 255.5)
    monkeypatch.setattr(plan, "sv_grid32", (plan.sv_grid32 * np.float32(255.5 / 255)))
    monkeypatch.setattr(dense, "grid_rows", _rounding_grid_rows)
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0))
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"block_size": 5, "chunk_size": 64}, {"block_size": 16, "n_jobs": 2, "chunk_size": 128}],
)
def test_grid_walk_equals_reference_on_knife_edges(grid_problem, modes, side, kwargs):
    _, walk, X = grid_problem
    _walks_and_labels_as_reference(walk, X, 7, side, **kwargs)
    assert "grid" in modes and "double" not in modes


def _walks_and_labels_as_reference(walk, X, seed, side="both", **kwargs):
    """On knife edges, with and without decision values: the reference's stops, sides and
    labels (and decisions, when asked for)."""
    boundary, theta_s, ref = _knife_edges(walk, X, seed, side)
    assert ref.stopped.any() and not ref.stopped.all()
    for values in (True, False):
        ev = evaluate_blocked(walk, X, boundary, theta_s, values=values, **kwargs)
        np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
        np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
        np.testing.assert_array_equal(ev.labels, ref.labels)
        if values:
            _same(ev, ref)


def test_an_inexact_float32_product_would_fail_the_knife_edge_test(grid_problem, monkeypatch):
    """The knife-edge test can fail: rows rounded to float32 off the grid (a product with errors
    of ~1e-7 of its value) change stops."""
    _, walk, X = grid_problem
    boundary, theta_s, ref = _knife_edges(walk, X, 7)
    plan = walk_plan(walk)
    # Pretend the data were on a grid of step 1 / 255.5: the rows' integers become inexact.
    monkeypatch.setattr(plan, "sv_grid_scale", 255.5)
    monkeypatch.setattr(plan, "sv_grid32", (plan.sv_grid32 * np.float32(255.5 / 255)))
    monkeypatch.setattr(dense, "grid_rows", _rounding_grid_rows)
    monkeypatch.setattr(dense, "row_on_grid", lambda plan, x: True)
    ev = evaluate_blocked(walk, X, boundary, theta_s)
    assert not np.array_equal(ev.n_evaluated, ref.n_evaluated)


def _rounding_grid_rows(plan, X, idx):
    """grid_rows without its check: rows rounded to float32 whatever they are."""
    rows = X.take(idx, axis=0)
    norms2 = np.einsum("ij,ij->i", rows, rows)
    return (rows[:, plan.sv_columns] * plan.sv_grid_scale).astype(np.float32), norms2


def test_rows_off_the_grid_walk_in_double_precision(grid_problem, modes):
    _, walk, X = grid_problem
    X = X.copy()
    X[5, 40] += 1e-3  # one value off the grid: its chunk walks in double precision
    _walks_as_reference(walk, X, 11, block_size=8)
    assert "double" in modes  # the chunk holding row 5 (others may be on the grid)


def test_one_row_tells_whether_rows_are_on_the_grid(grid_problem):
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    outside = np.setdiff1d(np.arange(X.shape[1]), plan.sv_columns)
    x = X[0].copy()
    assert dense.row_on_grid(plan, x)
    x[outside[0]] = 0.3337  # off the grid where every support vector is 0: no matter
    assert dense.row_on_grid(plan, x)
    x[plan.sv_columns[3]] += 1e-9
    assert not dense.row_on_grid(plan, x)
    x = X[0].copy()
    x[plan.sv_columns[0]] = np.nan
    assert not dense.row_on_grid(plan, x)


def test_input_off_the_grid_in_every_row_walks_in_double_precision(grid_problem, modes):
    """Pixels / 255 in float32 (read back as float64) are off the grid but for 0 and 1: the first
    row says so, so the walk plans its copies for double-precision products, and neither it nor
    full evaluation converts rows onto the grid."""
    model, walk, X = grid_problem
    X = ((X * 255).astype(np.float32) / np.float32(255)).astype(np.float64)
    assert not dense.row_on_grid(walk_plan(walk), X[0])
    assert dense.RBFTerms(walk, walk_plan(walk), X[:50]).grid is False
    assert dense.RBFTerms(walk, walk_plan(walk), np.rint(X[:50] * 255) / 255).grid is True
    _walks_as_reference(walk, X, 17, precision="double", block_size=8)
    assert modes and "grid" not in modes
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0))
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-12)


def test_restricted_rows_by_brute_force(grid_problem):
    """The double-precision copy of rows off the grid: the rows asked for, on the products'
    columns, with |x|² over every column, across tiles (1,000 rows: four tiles)."""
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    X = X + 1e-3 * np.random.default_rng(5).random(X.shape)  # every value off the grid
    some = np.flatnonzero(np.random.default_rng(6).random(len(X)) < 0.6)
    for idx in (np.arange(len(X)), some):
        for norms in (True, False):
            rows, norms2 = dense.restricted_rows(plan, X, idx, norms)
            np.testing.assert_array_equal(rows, X[idx][:, plan.sv_columns])
            if norms:
                np.testing.assert_allclose(norms2, (X[idx] ** 2).sum(axis=1), rtol=1e-13)
            else:
                assert norms2 is None


def test_rows_off_the_grid_compacted_from_the_rows_as_given(grid_problem, monkeypatch):
    """A walk off the grid that compacts before copying its rows gives the reference's stops and
    decisions. (Walks expected to stop soon are not worth a copy before their first block;
    here the copy is held off until the first compaction.)"""
    _, walk, X = grid_problem
    X = X + 1e-3 * np.random.default_rng(5).random(X.shape)
    seen = []
    original = dense.restricted_rows

    def spy(plan, rows, idx, norms):
        seen.append((idx.size < rows.shape[0], norms))
        return original(plan, rows, idx, norms)

    monkeypatch.setattr(dense, "restricted_rows", spy)
    monkeypatch.setattr(dense.RBFTerms, "restrict_pays", lambda self, remaining: False)
    _walks_as_reference(walk, X, 23, precision="double", block_size=32)
    assert (True, False) in seen  # a compaction of raw rows: some of them, norms known


def test_rows_off_the_grid_only_outside_the_products_columns_stay_on_the_grid(grid_problem, modes):
    """The grid is checked on the products' columns: values elsewhere (where every support
    vector is 0) only enter |x|², which comes from the rows as given, over every column."""
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    outside = np.setdiff1d(np.arange(X.shape[1]), plan.sv_columns)
    X = X.copy()
    X[::3, outside[0]] = 0.3337  # off the grid, and large enough to move every walk
    X[1::3, outside[-1]] = np.pi
    _walks_as_reference(walk, X, 13, precision="double")
    assert "grid" in modes and "double" not in modes


def test_a_grid_on_every_column_walks_on_the_grid(modes):
    """Support vectors non-zero in every column (no restriction, plan.sv_columns is None): the
    grid copy holds every column, equal to a brute-force computation, and the walk decides
    knife edges as the reference does."""
    rng = np.random.default_rng(8)
    X, y = _images(rng, 900)
    X = np.rint(np.clip(X + rng.uniform(0.0, 0.05, X.shape), 0.0, 1.0) * 255.0) / 255.0
    model = SVC(gamma=0.05, C=1.0).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=4)[0]
    plan = walk_plan(walk)
    assert plan.sv_columns is None and plan.sv_grid_scale == 255.0
    Xe = X[300:]
    idx = np.arange(0, len(Xe), 2)
    ints, norms2 = dense.grid_rows(plan, Xe, idx)
    np.testing.assert_array_equal(ints, np.rint(Xe[idx] * 255.0).astype(np.float32))
    np.testing.assert_allclose(norms2, (Xe[idx] ** 2).sum(axis=1), rtol=1e-13)
    _walks_as_reference(walk, Xe, 2, precision="double")
    assert "grid" in modes and "double" not in modes


def test_rows_whose_sums_could_reach_2_to_the_24_walk_in_double_precision(modes):
    """Integers (grid step 1) large enough that |k| · max|l| ≥ 2^24: not exact in float32."""
    rng = np.random.default_rng(5)
    X, y = _images(rng, 500, scale=1)
    X *= 2000.0  # integers up to 2,000
    model = SVC(gamma=1e-7, C=1.0).fit(X[:250], y[:250])
    walk = make_walk(decompose(model), X[:250], y[:250], random_state=0)[0]
    plan = walk_plan(walk)
    assert plan.sv_grid_scale is not None
    assert (
        plan.sv_grid_scale * np.linalg.norm(X[250:], axis=1).max() * plan.sv_grid_norm > GRID_LIMIT
    )
    Xe = X[250:]
    _walks_as_reference(walk, Xe, 1, block_size=8)
    assert modes and "grid" not in modes


def test_grid_scale():
    k = np.arange(256, dtype=np.float64)
    assert grid_scale(k[None, :] / 255.0) == 255.0
    assert grid_scale(k[None, 3:] / 255.0) == 255.0  # smallest value 3/255
    assert grid_scale(np.array([[0.0, 2.0, -7.0]])) == 1.0
    assert grid_scale(np.array([[0.0, 0.5, 0.25]])) == 4.0
    assert grid_scale(np.array([[0.0, np.pi]])) is None
    assert grid_scale(np.zeros((2, 3))) is None
    assert grid_scale(np.array([[2.0**25]])) is None


def test_exact_single_products_agree_with_double():
    if not dense.exact_single_products():
        pytest.skip("this BLAS does not multiply float32 integers exactly")
    rng = np.random.default_rng(0)
    A = rng.integers(0, 256, size=(300, 250)).astype(np.float32)
    B = rng.integers(0, 256, size=(250, 64)).astype(np.float32)
    np.testing.assert_array_equal(
        (A @ B).astype(np.float64), A.astype(np.float64) @ B.astype(np.float64)
    )


def test_column_runs_and_take_columns(grid_problem):
    cols = np.array([0, 1, 2, 5, 7, 8, 20])
    assert column_runs(cols) == ((0, 3, 0), (5, 6, 3), (7, 9, 4), (20, 21, 6))
    _, walk, X = grid_problem
    plan = walk_plan(walk)
    out = np.empty((X.shape[0], plan.sv_columns.size), dtype=np.float32)
    dense.take_columns(plan, X, out)
    np.testing.assert_array_equal(out, X[:, plan.sv_columns].astype(np.float32))


def test_expected_remaining_by_brute_force():
    rng = np.random.default_rng(0)
    n = 40
    stops = rng.integers(1, n + 1, 200)
    positions = np.arange(n)
    got = expected_remaining(stops, n, positions)
    for a in positions:
        alive = stops[stops > a]
        want = alive.mean() - a if alive.size else n - a
        assert got[a] == pytest.approx(want)
    np.testing.assert_array_equal(expected_remaining(None, n, positions), n - positions)


def test_estimator_on_grid_images_predicts_the_side_of_its_decisions(grid_problem, modes):
    """Through AttentiveClassifier: predict is classes_[decision ≥ θ], decisions and labels are
    the reference's (full partial scores), full evaluation is scikit-learn's decision_function."""
    from sklearn.frozen import FrozenEstimator

    from attentive.estimator import AttentiveClassifier

    model, _, X = grid_problem
    rng = np.random.default_rng(3)
    X_ref, y_ref = _images(rng, 600)
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="curved", side="both", delta=0.05, random_state=4
    ).fit(X_ref, y_ref)
    Xf = np.asfortranarray(X)  # any memory layout
    decision = clf.decision_function(Xf)
    labels = clf.predict(Xf)
    theta = clf.walk_.offset + clf.theta_s_
    np.testing.assert_array_equal(labels, clf.classes_[(decision >= theta).astype(int)])
    walk = clf.walk_
    ref = apply_boundary(
        walk.partial_scores(X), clf.boundary_, clf.theta_s_, walk.offset, walk.terms.classes
    )
    assert ref.stopped.any()
    np.testing.assert_array_equal(labels, ref.labels)
    np.testing.assert_allclose(decision, ref.decision, rtol=1e-9, atol=1e-9)
    assert "grid" in modes
    full = clf.with_rule("full")
    np.testing.assert_allclose(
        full.decision_function(Xf), model.decision_function(X), rtol=1e-9, atol=1e-12
    )


# ----------------------------------------------------------------- linear, polynomial, sigmoid

DOT_MODELS = {
    "linear": SVC(kernel="linear", C=0.5),
    "poly-3": SVC(kernel="poly", degree=3, gamma=0.01, coef0=1.0),
    "sigmoid": SVC(kernel="sigmoid", gamma=0.002, coef0=-0.5),
}


@pytest.fixture(scope="module", params=list(DOT_MODELS))
def dot_problem(request):
    rng = np.random.default_rng(8)
    X, y = _images(rng, 1300)
    model = clone(DOT_MODELS[request.param]).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=3)[0]
    plan = walk_plan(walk)
    assert plan.sv_columns is not None and plan.sv_grid_scale == 255.0
    assert walk.n_terms * 1000 > 2**15  # not a tiny problem
    return model, walk, X[300:]


@pytest.fixture
def dot_modes(monkeypatch):
    """The modes DotKernelTerms ended in."""
    return _spy_modes(monkeypatch, dense.DotKernelTerms)


def test_dot_kernels_on_the_grid_walk_as_the_reference(dot_problem, dot_modes):
    """Knife edges 1e-9 from the walks: the exact float32 products decide as the reference, with
    the survival schedule (a copy onto the grid before the first block), with small blocks and
    chunks (raw rows until the first compaction), and for labels only."""
    _, walk, X = dot_problem
    for kwargs in ({}, {}, {"block_size": 5, "chunk_size": 64}, {"n_jobs": 2, "block_size": 16}):
        _walks_and_labels_as_reference(walk, X, 29, **kwargs)
    assert "grid" in dot_modes and "double" not in dot_modes


def test_dot_kernels_full_and_budgeted_evaluation_on_the_grid(dot_problem, full_tiles):
    model, walk, X = dot_problem
    _full_on_the_grid_matches_sklearn(model, walk, X, full_tiles, atol=1e-9)
    plan = walk_plan(walk)
    for budget in (1, 37):
        U = dense.prefix_sums(walk, plan, X, budget, None, 1)
        terms = walk.terms.term_values(walk.prepare(X), walk.order[:budget])
        np.testing.assert_allclose(U, terms @ walk.ordered_weights[:budget], rtol=1e-11, atol=1e-12)


def test_dot_kernels_off_the_grid_take_the_support_vectors_columns(
    dot_problem, dot_modes, full_tiles
):
    """Rows read back from float32 (off the grid): the walks copy them onto the support vectors'
    columns in float64, full evaluation takes those columns too; both as the reference."""
    model, walk, X = dot_problem
    X = X.astype(np.float32).astype(np.float64)
    X[:, 0] = 0.3337  # a border column (every support vector 0 there): it must not matter
    _walks_as_reference(walk, X, 31, block_size=8)
    _walks_as_reference(walk, X, 31)
    assert dot_modes and set(dot_modes) == {"double"}
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0))
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
    assert full_tiles and set(full_tiles) == {"off"}


@pytest.mark.parametrize("where", ["border", "product column"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_dot_kernels_refuse_non_finite_rows_on_every_path(dot_problem, where, bad, monkeypatch):
    """A row with a NaN or an infinity anywhere (also in a column every support vector ignores)
    is refused by the walk (rows as given, the grid copy, the float64 copy), by full and by
    budgeted evaluation."""
    _, walk, X = dot_problem
    boundary, theta_s, _ = _knife_edges(walk, X[:400], 5)
    col = 0 if where == "border" else int(walk_plan(walk).sv_columns[3])
    Xb = X[:400].copy()
    Xb[250, col] = bad
    for b, kwargs in [
        (boundary, {}),  # survival schedule: the copy before the first block
        (boundary, {"block_size": 4}),  # rows as given first
        (full_boundary(walk.n_terms), {}),
        (budget_boundary(walk.n_terms, 20), {"chunk_size": 50}),
    ]:
        with pytest.raises(NonFiniteInput), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            evaluate_blocked(walk, Xb, b, theta_s, **kwargs)
    # Walks expected to stop soon are not worth a copy: the rows as given, in one block.
    monkeypatch.setattr(dense.DotKernelTerms, "restrict_pays", lambda self, remaining: False)
    with pytest.raises(NonFiniteInput), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        evaluate_blocked(walk, Xb, boundary, theta_s, block_size=walk.n_terms)


@pytest.mark.parametrize("data", ["on the grid", "off the grid", "few features"])
@pytest.mark.parametrize("change", [-30, -1, 1, 20])
def test_rbf_walks_and_full_evaluation_refuse_another_width(grid_problem, data, change):
    """Rows with fewer or more columns than the support vectors are refused (ValueError) by the
    walks and by full evaluation: the copies' column gather would otherwise clip the indices
    (fewer) or ignore the extra columns (more)."""
    _, walk, X = grid_problem
    if data == "off the grid":
        X = X.astype(np.float32).astype(np.float64)
    elif data == "few features":
        rng = np.random.default_rng(2)
        Xs, ys = rng.normal(size=(400, 8)), rng.integers(0, 2, 400)
        walk = make_walk(decompose(SVC(gamma=0.3).fit(Xs[:200], ys[:200])), Xs[:200], ys[:200])[0]
        X = Xs[200:]
    d = X.shape[1]
    boundary, theta_s, _ = _knife_edges(walk, X, 3)
    bad = X[:, :change] if change < 0 else np.hstack([X, np.full((len(X), change), 0.5)])
    for b, kwargs in [
        (boundary, {}),
        (boundary, {"block_size": 4}),
        (full_boundary(walk.n_terms), {}),
        (budget_boundary(walk.n_terms, 5), {}),
    ]:
        with pytest.raises(ValueError, match=f"2-D array of {d} features; got shape"):
            evaluate_blocked(walk, bad, b, theta_s, **kwargs)
