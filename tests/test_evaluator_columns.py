"""Kernel models over many features (RBF, and linear, polynomial and sigmoid kernels): the products
restricted to the span of columns where some support vector is non-zero, exact float32 products
of data on an integer grid (8-bit images / 255), and float32 products of data near it (pixels /
255 stored in float32) under a certified band.

Everything is compared with a brute-force computation: scikit-learn's ``decision_function`` for
full evaluation, ``apply_boundary`` on the full matrix of partial scores for the walks. Thresholds
are placed 1e-9 (relative) from the walks' values ("knife edges"): a float32 product that is not
exact (errors of about 1e-7) decides some of them wrongly unless its error band sends them to
double precision; double precision and exact integer products decide them as the reference.
Which term source served a call is seen by spying on their construction (``built``), so that a
test cannot pass without using the path it tests.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from conftest import curved_boundary_for_test
from sklearn.base import clone
from sklearn.svm import SVC

from attentive.boundaries import budget_boundary, full_boundary
from attentive.errors import NonFiniteInput
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.plan import expected_remaining, walk_plan
from attentive.evaluator.rows import (
    GRID_LIMIT,
    NEAR_GRID,
    VECDOT_COLUMNS,
    exact_single_products,
    float64_tiles,
    grid_rows,
    grid_scale,
    restricted_rows,
    row_norms,
    row_on_grid,
    single_row_norms,
    squared_norms,
)
from attentive.evaluator.sources import NotUsable, sources
from attentive.evaluator.sources.dot import dot_arrays
from attentive.evaluator.sources.rbf import rbf_arrays
from attentive.evaluator.totals import totals
from attentive.terms import decompose
from attentive.walk import make_walk

SIDE = 12  # 12 × 12 images: 144 features, more than the 64 above which products use columns


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


def _float32(X):
    """The images as image pipelines store them: float32 (near the grid, not on it)."""
    return X.astype(np.float32)


@pytest.fixture(scope="module")
def grid_problem():
    rng = np.random.default_rng(3)
    X, y = _images(rng, 1400)
    model = SVC(gamma=0.05, C=1.0).fit(X[:400], y[:400])
    walk = make_walk(decompose(model), X[:400], y[:400], random_state=2)[0]
    assert walk.n_terms * 1000 > 2**15  # not a tiny problem (walked in one go)
    return model, walk, X[400:]


@pytest.fixture
def built(monkeypatch):
    """The kinds of term source built during a test, in order; ``kind + "!"`` where a source's
    constructor found the rows did not suit it (the router then takes the next one)."""
    seen = []
    for cls in sources():
        original = cls.__init__

        def init(self, *args, _cls=cls, _original=original, **kwargs):
            try:
                _original(self, *args, **kwargs)
            except NotUsable:
                if type(self) is _cls:
                    seen.append(_cls.kind + "!")
                raise
            if type(self) is _cls:
                seen.append(_cls.kind)

        monkeypatch.setattr(cls, "__init__", init)
    return seen


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


def _same(ev, ref, atol=1e-9):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=atol)


def _knife_edges(walk, X, seed, side="both"):
    """A boundary 1e-9 from the walks' values of X, θ_S and the reference's result."""
    S = walk.partial_scores(X)
    boundary = _boundary(S, np.random.default_rng(seed), side, gap=1e-9)
    theta_s = walk.theta_s(0.0)
    return boundary, theta_s, apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)


def _band(walk):
    """A certified source's values are within about 1e-6 of Σ|w h| ≤ Σ|w| (docs/speed.md)."""
    return 1e-5 * float(np.abs(walk.ordered_weights).sum())


def _walks_as_reference(walk, X, seed, side="both", atol=1e-9, **kwargs):
    """evaluate_blocked (walking, with kwargs) on knife edges gives the reference's result."""
    boundary, theta_s, ref = _knife_edges(walk, X, seed, side)
    assert ref.stopped.any() and not ref.stopped.all()
    ev = evaluate_blocked(walk, X, boundary, theta_s, path="walk", **kwargs)
    assert ev.path == "walk"
    _same(ev, ref, atol=atol)
    return boundary, theta_s, ref


def test_the_support_columns_are_a_span_and_find_the_grid(grid_problem):
    model, walk, _ = grid_problem
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    sv = model.support_vectors_
    used = np.flatnonzero(np.any(sv != 0, axis=0))
    # The smallest run of columns holding every support vector's non-zeros.
    assert (columns.first, columns.stop) == (used[0], used[-1] + 1)
    assert 0 < columns.n_columns < sv.shape[1] and not columns.whole
    assert columns.grid_scale == 255.0 and columns.grid_dev == 0.0
    L = np.rint(sv[walk.order][:, columns.first : columns.stop] * 255)
    np.testing.assert_array_equal(columns.grid32, L.astype(np.float32))
    assert columns.grid_norm == pytest.approx(np.linalg.norm(L, axis=1).max(), rel=1e-12)
    assert columns.grid_l1 == np.abs(L).sum(axis=1).max()
    X = np.arange(3 * sv.shape[1], dtype=float).reshape(3, -1)
    view = columns.view(X)
    assert np.shares_memory(view, X)
    np.testing.assert_array_equal(view, X[:, columns.first : columns.stop])
    taken = columns.take(X)
    assert taken.flags.c_contiguous and not np.shares_memory(taken, X)
    np.testing.assert_array_equal(taken, view)


@pytest.mark.parametrize("tile", ["default", "64 rows"])
@pytest.mark.parametrize("rows", ["all", "every third", "shuffled"])
def test_grid_rows_are_the_rows_integers_and_norms(grid_problem, rows, tile, monkeypatch):
    """grid_rows against a brute-force computation: the integers 255 x (every column), |x|²
    over all columns, and for float32 rows (near the grid) bounds on the distance to the grid
    and on the norm's error that hold — in tiles of the default size and of 64 rows (many
    tiles, the last one partial)."""
    from attentive.evaluator import rows as rows_module

    _, walk, X = grid_problem
    if tile == "64 rows":
        monkeypatch.setattr(rows_module, "TILE_BYTES", 1)
        assert rows_module.tile_rows(X.shape[1], 4) == 64
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    rng = np.random.default_rng(5)
    idx = {
        "all": np.arange(len(X)),  # more than one tile of rows
        "every third": np.arange(0, len(X), 3),
        "shuffled": rng.permutation(len(X))[:100],
    }[rows]
    assert grid_rows(columns, X[:0]).K.shape == (0, X.shape[1])  # no rows, no tile
    held = grid_rows(columns, X[idx])
    assert held.exact and held.K.dtype == np.float32
    np.testing.assert_array_equal(held.K, np.rint(X[idx] * 255.0).astype(np.float32))
    np.testing.assert_allclose(held.norms2, (X[idx] ** 2).sum(axis=1), rtol=1e-13)
    X32 = _float32(X[idx])
    near = grid_rows(columns, X32)
    assert not near.exact
    x = X32.astype(np.float64)
    np.testing.assert_array_equal(near.K, np.rint(x * 255.0).astype(np.float32))
    distance = np.abs(x * 255.0 - np.rint(x * 255.0)).max(axis=1)
    assert np.all(distance <= near.dev) and near.dev.max() <= NEAR_GRID
    assert np.all(np.abs(near.norms2 - (x**2).sum(axis=1)) <= near.norm_error)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_grid_source_reading_ahead_gives_its_first_blocks_exactly(
    grid_problem, dtype, monkeypatch
):
    """The products of a walk's first blocks taken as the rows are converted (its first
    ``ahead_positions``): against the integers' products by brute force; every block the source
    writes — within the read-ahead (where it takes no product of the rows), across its end and
    after dropping rows — the same bit for bit as a source that reads every row again."""
    from attentive.evaluator.sources import grid as grid_module
    from attentive.evaluator.sources.grid import RBFGridSource

    _, walk, X = grid_problem
    plan = walk_plan(walk)
    columns = rbf_arrays(walk, plan).columns
    rows = X.astype(dtype)
    ahead = columns.grid32[:5]
    held = grid_rows(columns, rows, ahead)
    K = np.rint(rows.astype(np.float64) * 255.0)
    expected = K[:, columns.first : columns.stop] @ ahead.astype(np.float64).T
    np.testing.assert_array_equal(held.products, expected)  # integers: exact in float32
    assert grid_rows(columns, rows).products is None
    reading = RBFGridSource(walk, plan, rows, ahead_positions=5)
    plain = RBFGridSource(walk, plan, rows)
    assert reading.ahead.shape == (len(rows), 5) and plain.ahead is None

    products = []
    original = grid_module.block_product

    def block_product(X, S):
        products.append(S.shape[0])
        return original(X, S)

    monkeypatch.setattr(grid_module, "block_product", block_product)

    def same_block(start, stop, reads):
        a, b = (np.empty((stop - start, reading.n_rows)) for _ in range(2))
        products.clear()
        reading.block(start, stop, a)
        assert products == ([stop - start] if reads else [])
        plain.block(start, stop, b)
        np.testing.assert_array_equal(a, b)

    same_block(0, 2, reads=False)
    same_block(2, 5, reads=False)
    same_block(3, 9, reads=True)  # past the read-ahead: the product of the rows held
    keep = np.arange(0, len(rows), 3)
    reading.keep(keep)
    plain.keep(keep)
    same_block(2, 5, reads=False)
    same_block(5, 12, reads=True)


def test_walks_reading_ahead_stop_where_walks_that_do_not_stop(grid_problem, monkeypatch):
    """The evaluator asks a source that reads the rows in for its first blocks' products
    (_read_ahead); on knife edges, the stops, sides and decisions are the reference's, and
    those of a walk whose source does not read ahead."""
    import attentive.evaluator.blocked as blocked
    from attentive.evaluator.sources.grid import RBFGridSource

    _, walk, X = grid_problem
    rows = _float32(X)
    boundary, theta_s, ref = _knife_edges(walk, rows.astype(np.float64), 8)
    asked = []
    original = RBFGridSource.__init__

    def init(self, *args, ahead_positions=0, **kwargs):
        asked.append(ahead_positions)
        original(self, *args, ahead_positions=ahead_positions, **kwargs)

    monkeypatch.setattr(RBFGridSource, "__init__", init)
    kwargs = dict(path="walk", chunk_size=150, block_size=8)
    ahead = evaluate_blocked(walk, rows, boundary, theta_s, **kwargs)
    assert asked and all(a == 16 for a in asked)  # two blocks of 8
    monkeypatch.setattr(RBFGridSource, "reads_ahead", False)
    asked.clear()
    without = evaluate_blocked(walk, rows, boundary, theta_s, **kwargs)
    assert asked and not any(asked)
    _same(ahead, without, atol=0.0)
    _same(ahead, ref, atol=_band(walk))
    assert blocked._read_ahead(blocked.block_schedule(1000, 100)) == 0  # too long to hold


def _full_on_the_grid_matches_sklearn(model, walk, X, built, atol, kind):
    """Full evaluation, in the default tiles and in tiles of 7 rows, every tile on the grid."""
    full = full_boundary(walk.n_terms)
    for chunk_size in (None, 7):
        ev = evaluate_blocked(walk, X, full, walk.theta_s(0.0), chunk_size=chunk_size)
        np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=atol)
        np.testing.assert_array_equal(ev.labels, model.predict(X))
    assert built.count(kind) > 1 and set(built) == {kind}


def test_full_evaluation_on_the_grid_matches_sklearn(grid_problem, built):
    _full_on_the_grid_matches_sklearn(*grid_problem, built, atol=1e-12, kind="rbf-grid")


@pytest.mark.parametrize("precision", ["double", "auto"])
def test_full_evaluation_with_a_row_off_the_grid_matches_sklearn(grid_problem, built, precision):
    """A tile holding a row off the grid takes the next source (double precision, or float32
    products within their band); the others stay on the grid."""
    model, walk, X = grid_problem
    X = X.copy()
    X[30, 40] += 1e-3
    ev = evaluate_blocked(
        walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0), chunk_size=25, precision=precision
    )
    atol = 1e-12 if precision == "double" else _band(walk)
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=atol)
    np.testing.assert_array_equal(ev.labels, model.predict(X))
    fallback = "rbf" if precision == "double" else "rbf-single"
    assert built.count("rbf-grid!") == 1 and built.count(fallback) == 1
    # Tiles of at most 25 rows (more when the rows are split evenly over the threads).
    assert built.count("rbf-grid") >= -(-len(X) // 25) - 1


@pytest.mark.parametrize("budget", [1, 37])
def test_budgeted_sums_on_the_grid_by_brute_force(grid_problem, built, budget):
    _, walk, X = grid_problem
    U = totals(walk, walk_plan(walk), X, budget, "single", None, None, 1)
    terms = walk.terms.term_values(walk.prepare(X), walk.order[:budget])
    np.testing.assert_allclose(U, terms @ walk.ordered_weights[:budget], rtol=1e-11, atol=1e-13)
    assert "rbf-grid" in built and "rbf-grid!" not in built


def test_float32_pixels_take_float32_products_with_a_band_and_double_precision_without(
    grid_problem, built
):
    """The same images stored in float32: near the grid. Full evaluation takes the float32
    source (a band, as the grid source would carry here, without the conversion to integers;
    walks keep the grid): visibly off scikit-learn's decisions (so the 1e-12 comparison above
    can fail) but within its certified band; with precision="double" it is scikit-learn's to
    1e-12."""
    model, walk, X = grid_problem
    X32 = _float32(X)
    expected = model.decision_function(X32)
    full = full_boundary(walk.n_terms)
    ev = evaluate_blocked(walk, X32, full, walk.theta_s(0.0))
    # The float32 source; the double one for the few labels its band leaves unsure.
    assert built[0] == "rbf-single" and set(built) <= {"rbf-single", "rbf"}
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(ev.decision, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ev.decision, expected, rtol=0, atol=_band(walk))
    np.testing.assert_array_equal(ev.labels, model.predict(X32))
    del built[:]
    ev = evaluate_blocked(walk, X32, full, walk.theta_s(0.0), precision="double")
    assert "rbf-grid" not in built and "rbf" in built
    np.testing.assert_allclose(ev.decision, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"block_size": 5, "chunk_size": 64}, {"block_size": 16, "n_jobs": 2, "chunk_size": 128}],
)
def test_grid_walk_equals_reference_on_knife_edges(grid_problem, built, side, kwargs):
    _, walk, X = grid_problem
    _walks_as_reference(walk, X, 7, side, **kwargs)
    assert "rbf-grid" in built and not {"rbf", "rbf-single", "rbf-grid!"} & set(built)


@pytest.mark.parametrize("precision", ["auto", "double"])
def test_float32_pixels_walk_as_the_reference_on_knife_edges(grid_problem, built, precision):
    """Near the grid, the band leaves knife edges unsure and they are walked again in double
    precision: the reference's stops, sides and labels; decision values within the band."""
    _, walk, X = grid_problem
    atol = _band(walk) if precision == "auto" else 1e-9
    _walks_as_reference(walk, _float32(X), 7, precision=precision, atol=atol)
    assert ("rbf-grid" in built) == (precision == "auto")


@pytest.mark.parametrize("priced_lower", ["rbf-grid", "rbf-single", "as priced"])
def test_float32_pixels_walk_with_the_source_their_pilot_prices_lower(
    grid_problem, monkeypatch, priced_lower
):
    """Float32 rows near the grid are walked by the grid's integer products or by the float32
    source (RBFGridSource.alternatives): with a pilot, by the one it prices lower — each made
    the dearer in turn by a fixed cost per row, and as the pilot prices them — and either way
    to the reference's stops, sides and labels."""
    from attentive.evaluator import blocked
    from attentive.evaluator.sources import grid as grid_module
    from attentive.evaluator.sources import rbf_single

    _, walk, X = grid_problem
    X32 = _float32(X)
    S = walk.partial_scores(X32)
    boundary = _boundary(S, np.random.default_rng(3), "both", gap=1e-6)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.stopped.any()
    dearer = {"rbf-grid": rbf_single.RBFSingleSource, "rbf-single": grid_module.RBFGridSource}
    if priced_lower in dearer:
        cls = dearer[priced_lower]
        monkeypatch.setattr(cls, "start_cost", 1e6)  # (a class attribute the pilot adds)
    walked = []
    original = blocked.walk_rows

    def spy(source, *args, **kwargs):
        walked.append(source.kind)
        return original(source, *args, **kwargs)

    monkeypatch.setattr(blocked, "walk_rows", spy)
    from attentive.evaluator import pilot as pilot_module

    summed = []
    whole_sums = pilot_module.whole_sums

    def counted(*args, **kwargs):
        summed.append(1)
        return whole_sums(*args, **kwargs)

    monkeypatch.setattr(pilot_module, "whole_sums", counted)
    ev = evaluate_blocked(walk, X32, boundary, theta_s, path="walk")
    assert len(summed) == 1  # the sample's exact walks, once for both sources priced
    priced = {
        key[0].kind: p.walk_cost for key, p in walk_plan(walk).pilots(boundary).by_kind.items()
    }
    assert set(priced) == {"rbf-grid", "rbf-single"}
    cheaper = min(priced, key=priced.get)
    if priced_lower in dearer:
        assert cheaper == priced_lower
    # The chunks' walks by the cheaper one (and what its band leaves, by the double source).
    assert walked and walked[0] == cheaper and set(walked) <= {cheaper, "rbf"}
    _same(ev, ref, atol=_band(walk))


def test_without_its_band_the_near_grid_walk_would_fail_the_knife_edge_test(
    grid_problem, monkeypatch
):
    """The knife-edge test can fail: the float32 pixels' near-integer products (errors of ~1e-8
    of a term) taken as exact change stops."""
    from attentive.evaluator.sources import grid as grid_module

    _, walk, X = grid_problem
    X32 = _float32(X)
    boundary, theta_s, ref = _knife_edges(walk, X32, 7)
    monkeypatch.setattr(
        grid_module, "grid_relative_error", lambda arrays, held: np.zeros(held.norms2.shape)
    )
    ev = evaluate_blocked(walk, X32, boundary, theta_s, path="walk")
    assert not np.array_equal(ev.n_evaluated, ref.n_evaluated)


def test_a_row_off_the_grid_walks_by_the_next_source(grid_problem, built):
    _, walk, X = grid_problem
    X = X.copy()
    X[5, 40] += 1e-3  # one value off the grid: its chunk takes double precision
    _walks_as_reference(walk, X, 11, block_size=8, precision="double")
    assert "rbf-grid!" in built and "rbf" in built


def test_one_row_tells_whether_rows_are_near_the_grid(grid_problem):
    _, walk, X = grid_problem
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    x = X[0].copy()
    assert row_on_grid(columns, x)
    x[columns.first + 3] += 1e-9  # within NEAR_GRID of the grid: near it
    assert row_on_grid(columns, x)
    assert row_on_grid(columns, _float32(X[0]))
    x[columns.first + 3] += 1e-3  # a quarter of a grid step away
    assert not row_on_grid(columns, x)
    x = X[0].copy()
    x[0] = 0.3337  # off the grid where every support vector is 0: off all the same
    assert not row_on_grid(columns, x)
    x = X[0].copy()
    x[columns.first] = np.nan
    assert not row_on_grid(columns, x)


def test_rows_off_the_grid_outside_the_products_columns_walk_by_the_next_source(
    grid_problem, built
):
    """Values where every support vector is 0 enter only |x|²: rows off the grid there are
    not on the grid (the grid source holds every column), and walk as the reference does."""
    model, walk, X = grid_problem
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    X = X.copy()
    X[::3, 0] = 0.3337  # off the grid, and large enough to move every walk
    X[1::3, columns.width - 1] = np.pi
    assert columns.first > 0 and columns.stop < columns.width  # both columns outside the span
    _walks_as_reference(walk, X, 13, precision="double")
    assert "rbf" in built and "rbf-grid" not in built
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0))
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=_band(walk))


def test_restricted_rows_by_brute_force(grid_problem):
    """Rows as the float32 source holds them: the support vectors' columns (a view where the
    dtype is kept) and |x|² over every column."""
    _, walk, X = grid_problem
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    X = X + 1e-3 * np.random.default_rng(5).random(X.shape)  # every value off the grid
    for dtype in (np.float64, np.float32):
        rows, norms2, error = restricted_rows(columns, X, dtype=dtype)
        assert rows.dtype == dtype and np.shares_memory(rows, X) == (dtype == np.float64)
        np.testing.assert_array_equal(rows, X[:, columns.first : columns.stop].astype(dtype))
        np.testing.assert_allclose(norms2, (X**2).sum(axis=1), rtol=1e-13)
        assert not error.any()  # float64 rows: summed in float64
    X32 = _float32(X)
    rows, norms2, error = restricted_rows(columns, X32, dtype=np.float32)
    assert np.shares_memory(rows, X32)  # float32 rows as given: a view
    np.testing.assert_array_equal(rows, X32[:, columns.first : columns.stop])
    # Float32 rows: summed in float32 by chunks, within their bound of the exact norm.
    exact = (X32.astype(np.float64) ** 2).sum(axis=1)
    assert np.all(np.abs(norms2 - exact) <= error) and np.all(error <= 1e-5 * exact)
    bad = X.copy()
    bad[3, 0] = np.nan
    with pytest.raises(NonFiniteInput):
        restricted_rows(columns, bad)
    big = X.copy()
    big[3, 0] = 1e200  # finite: its square overflows, the row is not refused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isinf(restricted_rows(columns, big)[1][3])


@pytest.mark.parametrize("d", [1, 127, 128, 129, 784, 1000])
def test_single_row_norms_are_within_their_bound_of_the_exact_norms(d):
    """|x|² of float32 rows summed in float32 by chunks: within the returned bound of the exact
    sum of squares (rational arithmetic), for rows of every size of value, including squares
    that underflow; a square that overflows float32 gives an infinite norm."""
    rng = np.random.default_rng(d)
    X = np.concatenate(
        [
            rng.standard_normal((4, d)) * scale
            for scale in (1e-25, 1e-3, 1.0, 1e6, 1e15)  # 1e-25: squares below float32's range
        ]
    ).astype(np.float32)
    X[0] = np.float32(1.0) + np.float32(2.0**-23)  # the same value in every column
    norms2, error = single_row_norms(X)
    exact = np.array([float(sum(Fraction(float(v)) ** 2 for v in row)) for row in X])
    assert np.all(np.abs(norms2 - exact) <= error)
    assert np.all(error <= 1e-5 * exact + d * 2.0**-149)
    if d >= 128:  # the float32 sums are visible: the check can fail
        assert np.any(norms2 != exact)
    big = X[:2].copy()
    big[1, 0] = 1e20
    assert np.isinf(single_row_norms(big)[0][1]) and np.isfinite(single_row_norms(big)[0][0])


@pytest.mark.parametrize("d", [1, 10, VECDOT_COLUMNS - 1, VECDOT_COLUMNS, 784])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_squared_norms_and_row_norms_are_within_a_sums_bound_of_the_exact_norms(d, dtype):
    """|x|² by squared_norms (either way it sums: einsum below VECDOT_COLUMNS, vecdot from it)
    and by row_norms (float64 whatever the rows, float32 ones converted a tile at a time):
    within γ_d of the exact sum of squares (rational arithmetic), rows of every size of value;
    integers whose squares sum below 2^24 come out exact in float32."""
    rng = np.random.default_rng(d)
    X = np.concatenate([rng.standard_normal((3, d)) * s for s in (1e-3, 1.0, 1e6)]).astype(dtype)
    exact = np.array([float(sum(Fraction(float(v)) ** 2 for v in row)) for row in X])
    u = 2.0**-24 if dtype == np.float32 else 2.0**-53
    got = squared_norms(X)
    assert got.dtype == dtype and got.shape == (X.shape[0],)
    assert np.all(np.abs(got - exact) <= 1.01 * (d + 1) * u * exact)
    out = np.full(X.shape[0], np.nan, dtype=dtype)
    assert squared_norms(X, out=out) is out and np.array_equal(out, got)
    wide = row_norms(X)
    assert wide.dtype == np.float64
    assert np.all(np.abs(wide - exact) <= 1.01 * (d + 1) * 2.0**-53 * exact)
    ints = rng.integers(0, 256, (5, d)).astype(np.float32)[:, : min(d, 256)]
    exact_ints = (ints.astype(np.int64) ** 2).sum(axis=1)
    assert np.array_equal(squared_norms(ints), exact_ints.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_float64_tiles_cover_the_rows_once_in_order_as_float64(dtype):
    """Every row once, in order, as float64 values equal to the rows'; float64 rows as views
    of themselves (no copy), others in one buffer reused from tile to tile."""
    X = (np.random.default_rng(0).standard_normal((203, 7)) * 100).astype(dtype)
    seen, buffers = [], set()
    for lo, hi, tile in float64_tiles(X, 64):
        assert tile.dtype == np.float64 and tile.shape == (hi - lo, 7)
        assert np.array_equal(tile, X[lo:hi].astype(np.float64))
        assert np.shares_memory(tile, X) == (dtype == np.float64)
        buffers.add(tile.__array_interface__["data"][0])
        seen.append((lo, hi))
    assert seen == [(0, 64), (64, 128), (128, 192), (192, 203)]
    assert len(buffers) == (4 if dtype == np.float64 else 1)


def test_a_grid_on_every_column_walks_on_the_grid(built):
    """Support vectors non-zero in every column (no restriction): the grid copy holds every
    column, equal to a brute-force computation, and the walk decides knife edges as the
    reference does, in double precision too (rows exactly on the grid)."""
    rng = np.random.default_rng(8)
    X, y = _images(rng, 900)
    X = np.rint(np.clip(X + rng.uniform(0.0, 0.05, X.shape), 0.0, 1.0) * 255.0) / 255.0
    model = SVC(gamma=0.05, C=1.0).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=4)[0]
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    assert columns.whole and columns.grid_scale == 255.0
    Xe = X[300:]
    held = grid_rows(columns, Xe[::2])
    np.testing.assert_array_equal(held.K, np.rint(Xe[::2] * 255.0).astype(np.float32))
    np.testing.assert_allclose(held.norms2, (Xe[::2] ** 2).sum(axis=1), rtol=1e-13)
    _walks_as_reference(walk, Xe, 2, precision="double")
    assert "rbf-grid" in built and "rbf" not in built


def test_rows_whose_sums_could_reach_2_to_the_24_walk_by_the_next_source(built):
    """Integers (grid step 1) large enough that |k| · max|l| ≥ 2^24: not exact in float32."""
    rng = np.random.default_rng(5)
    X, y = _images(rng, 500, scale=1)
    X *= 2000.0  # integers up to 2,000
    model = SVC(gamma=1e-7, C=1.0).fit(X[:250], y[:250])
    walk = make_walk(decompose(model), X[:250], y[:250], random_state=0)[0]
    columns = rbf_arrays(walk, walk_plan(walk)).columns
    assert columns.grid_scale is not None
    Xe = X[250:]
    assert columns.grid_scale * np.linalg.norm(Xe, axis=1).max() * columns.grid_norm > GRID_LIMIT
    assert grid_rows(columns, Xe) is None
    _walks_as_reference(walk, Xe, 1, block_size=8, precision="double")
    assert "rbf" in built and "rbf-grid" not in built


def test_grid_scale():
    k = np.arange(256, dtype=np.float64)
    assert grid_scale(k[None, :] / 255.0) == (255.0, 0.0)
    assert grid_scale(k[None, 3:] / 255.0) == (255.0, 0.0)  # smallest value 3/255
    assert grid_scale(np.array([[0.0, 2.0, -7.0]])) == (1.0, 0.0)
    assert grid_scale(np.array([[0.0, 0.5, 0.25]])) == (4.0, 0.0)
    assert grid_scale(np.array([[0.0, np.pi]])) is None
    assert grid_scale(np.zeros((2, 3))) is None
    assert grid_scale(np.array([[2.0**25]])) is None
    # float32 pixels / 255: near the grid, by their largest distance from it.
    near = (k[None, :] / 255.0).astype(np.float32).astype(np.float64)
    s, dev = grid_scale(near)
    assert s == 255.0 and dev == np.abs(near * 255 - np.rint(near * 255)).max() and 0 < dev
    assert grid_scale(near + 1e-4) is None


def test_exact_single_products_agree_with_double():
    if not exact_single_products():
        pytest.skip("this BLAS does not multiply float32 integers exactly")
    rng = np.random.default_rng(0)
    A = rng.integers(0, 256, size=(300, 250)).astype(np.float32)
    B = rng.integers(0, 256, size=(250, 64)).astype(np.float32)
    np.testing.assert_array_equal(
        (A @ B).astype(np.float64), A.astype(np.float64) @ B.astype(np.float64)
    )


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


def test_estimator_on_grid_images_predicts_the_side_of_its_decisions(grid_problem, built):
    """Through AttentiveClassifier: predict is classes_[decision ≥ θ], decisions and labels are
    the reference's (full partial scores), full evaluation is scikit-learn's decision_function."""
    from sklearn.frozen import FrozenEstimator

    from attentive.estimator import AttentiveClassifier

    model, _, X = grid_problem
    rng = np.random.default_rng(3)
    X_ref, y_ref = _images(rng, 600)
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="curved",
        side="both",
        delta=0.05,
        random_state=4,
        early_stopping=True,
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
    assert "rbf-grid" in built
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
    columns = dot_arrays(walk, walk_plan(walk)).columns
    assert not columns.whole and columns.grid_scale == 255.0
    assert walk.n_terms * 1000 > 2**15  # not a tiny problem
    return model, walk, X[300:]


def test_dot_kernels_on_the_grid_walk_as_the_reference(dot_problem, built):
    """Knife edges 1e-9 from the walks: the exact float32 products decide as the reference, with
    the pilot's blocks (twice: the second call with the kept pilot), small blocks and chunks,
    and threads."""
    _, walk, X = dot_problem
    for kwargs in ({}, {}, {"block_size": 5, "chunk_size": 64}, {"n_jobs": 2, "block_size": 16}):
        _walks_as_reference(walk, X, 29, **kwargs)
    assert "dot-grid" in built and not {"dot-kernel", "dot-grid!"} & set(built)


def test_dot_kernels_full_and_budgeted_evaluation_on_the_grid(dot_problem, built):
    model, walk, X = dot_problem
    _full_on_the_grid_matches_sklearn(model, walk, X, built, atol=1e-9, kind="dot-grid")
    plan = walk_plan(walk)
    for budget in (1, 37):
        U = totals(walk, plan, X, budget, "single", None, None, 1)
        terms = walk.terms.term_values(walk.prepare(X), walk.order[:budget])
        np.testing.assert_allclose(U, terms @ walk.ordered_weights[:budget], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("rows", ["float32", "read back from float32"])
def test_dot_kernels_near_the_grid_take_the_double_precision_source(dot_problem, built, rows):
    """Rows near the grid but not on it (no certified band for dot kernels): the walks and full
    evaluation take the double-precision source on the support vectors' columns; both as the
    reference. A border column (every support vector 0 there) does not matter."""
    model, walk, X = dot_problem
    X = _float32(X) if rows == "float32" else _float32(X).astype(np.float64)
    X[:, 0] = 0.3337
    _walks_as_reference(walk, X, 31, block_size=8)
    _walks_as_reference(walk, X, 31)
    assert built and {k for k in built if not k.endswith("!")} == {"dot-kernel"}
    ev = evaluate_blocked(walk, X, full_boundary(walk.n_terms), walk.theta_s(0.0))
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("where", ["border", "product column"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_dot_kernels_refuse_non_finite_rows_on_every_path(dot_problem, where, bad):
    """A row with a NaN or an infinity anywhere (also in a column every support vector ignores)
    is refused by the walk (the grid copy or the double-precision rows), by a walk in one block,
    by full and by budgeted evaluation, whatever the path."""
    _, walk, X = dot_problem
    boundary, theta_s, _ = _knife_edges(walk, X[:400], 5)
    col = 0 if where == "border" else dot_arrays(walk, walk_plan(walk)).columns.first + 3
    Xb = X[:400].copy()
    Xb[250, col] = bad
    for b, kwargs in [
        (boundary, {}),
        (boundary, {"path": "walk"}),
        (boundary, {"block_size": 4, "path": "walk"}),
        (boundary, {"block_size": walk.n_terms, "path": "walk"}),
        (boundary, {"path": "full"}),
        (full_boundary(walk.n_terms), {}),
        (budget_boundary(walk.n_terms, 20), {"chunk_size": 50}),
    ]:
        with pytest.raises(NonFiniteInput), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            evaluate_blocked(walk, Xb, b, theta_s, **kwargs)


@pytest.mark.parametrize("data", ["on the grid", "near the grid", "few features"])
@pytest.mark.parametrize("change", [-30, -1, 1, 20])
def test_rbf_walks_and_full_evaluation_refuse_another_width(grid_problem, data, change):
    """Rows with fewer or more columns than the support vectors are refused (ValueError) by the
    walks and by full evaluation: the copies' column span would otherwise read past the rows
    (fewer) or ignore the extra columns (more)."""
    _, walk, X = grid_problem
    if data == "near the grid":
        X = _float32(X)
    elif data == "few features":
        rng = np.random.default_rng(2)
        Xs, ys = rng.normal(size=(400, 8)), rng.integers(0, 2, 400)
        walk = make_walk(decompose(SVC(gamma=0.3).fit(Xs[:200], ys[:200])), Xs[:200], ys[:200])[0]
        X = Xs[200:]
    d = X.shape[1]
    boundary, theta_s, _ = _knife_edges(walk, X, 3)
    bad = X[:, :change] if change < 0 else np.hstack([X, np.full((len(X), change), 0.5, X.dtype)])
    for b, kwargs in [
        (boundary, {}),
        (boundary, {"block_size": 4, "path": "walk"}),
        (full_boundary(walk.n_terms), {}),
        (budget_boundary(walk.n_terms, 5), {}),
    ]:
        with pytest.raises(ValueError, match=f"2-D array of {d} features; got shape"):
            evaluate_blocked(walk, bad, b, theta_s, **kwargs)
