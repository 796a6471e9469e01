"""Every evaluation path runs a sketched walk (SPEC §3b) as its reference walks it.

The reference is ``apply_boundary`` on the sketched walk's full partial scores and running masses
(:class:`attentive.sketch.SketchedWalk`, checked against SPEC §3b term by term in
tests/test_sketched_walk.py); the evaluator wraps whichever source the plain walk's rows are
routed to (double precision, float32 products under a certified band, the near integer grid)
and walks in one go, in blocks, on threads, or after a pilot. Thresholds are kept away from
every walk value by more than rounding, so each path must find the same stops.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import curved_boundary_for_test
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from attentive.boundaries import budget_boundary, full_boundary
from attentive.evaluation import apply_boundary
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.plan import walk_plan
from attentive.evaluator.sources import source_for
from attentive.sketch import make_sketched_walk
from attentive.terms import decompose
from attentive.walk import make_walk

PATHS = {
    "tiny, in one go": {},
    "blocked": {"block_size": 3, "chunk_size": 5},
    "blocked-threads": {"block_size": 2, "chunk_size": 4, "n_jobs": 2},
    "one-block": {"block_size": 1000},
}


def _problem(X, y, gamma, k, m, rows):
    model = SVC(gamma=gamma, C=2.0).fit(X[:300], y[:300])
    walk = make_walk(decompose(model), X[:300], y[:300], random_state=1)[0]
    sketched = make_sketched_walk(walk, X[:300], y[:300], k=k, m=m)
    return sketched, X[300 : 300 + rows]


@pytest.fixture(scope="module")
def sketched_walks():
    """Sketched walks over each RBF source: few features (double), many standardised features
    (float32 products, certified) and float32 pixels near the integer grid (certified)."""
    from attentive.data import load_dataset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=1000) > 0.5).astype(int)
    wide = StandardScaler().fit_transform(rng.normal(size=(1000, 80)) + X[:, :1])
    ds = load_dataset("mnist-t10k-3v8")
    pixels = np.concatenate([ds.X_train[:300], ds.X_test[:600]]).astype(np.float32)
    labels = np.concatenate([ds.y_train[:300], ds.y_test[:600]])
    single = _problem(wide, y, "scale", 8, 32, 600)
    # Rows behind a PCA fitted on the sketch's reference rows: decorrelated there, so the
    # sketch's directions are coordinates (a row's projection is its own values).
    mixed = rng.normal(size=(1000, 80)) @ rng.normal(size=(80, 80)) / 9.0 + X[:, :1]
    axes = _problem(PCA(80).fit(mixed[:300]).transform(mixed), y, "scale", 8, 32, 600)
    assert axes[0].sketch.on_coordinates and not single[0].sketch.on_coordinates
    return {
        "rbf": _problem(X, y, 0.3, 3, 16, 600),
        "rbf-single": single,
        # The same walk on the same rows stored in float32: the float32 source keeps them as
        # they are and shares its float32 norms (and their bound) with the features.
        "rbf-single-f32": (single[0], single[1].astype(np.float32)),
        "rbf-grid": _problem(pixels, labels, "scale", 8, 32, 600),
        "rbf-single-axes": axes,
        "rbf-single-axes-f32": (axes[0], axes[1].astype(np.float32)),
    }


def _boundary(S, rng, side):
    """Thresholds at random quantiles of the walks, moved off every walk value."""
    n = S.shape[1]
    spread = np.abs(S).max() + 1.0
    lower = np.quantile(S, rng.uniform(0, 0.4, n), axis=None)
    upper = np.quantile(S, rng.uniform(0.6, 1.0, n), axis=None)
    for t in (lower, upper):
        near = np.abs(S - t).min(axis=0) < 1e-6 * spread
        t[near] += 1e-5 * spread
    return curved_boundary_for_test(lower, upper, side, rng), spread


def _same(ev, ref, atol):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=atol)


@pytest.mark.parametrize("kind", ["rbf", "rbf-single", "rbf-grid", "rbf-single-axes"])
def test_every_path_walks_the_sketched_walk_as_the_reference(sketched_walks, kind):
    walk, X = sketched_walks[kind]
    source = source_for(walk.walk, walk_plan(walk.walk), X, "single").kind
    assert source == kind.removesuffix("-axes")
    rng = np.random.default_rng(0)
    S, A = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())  # a certified source's, at most
    for side in ("lower", "upper", "both"):
        boundary, spread = _boundary(S, rng, side)
        # A rule on the running mass too: S_t + κ_t A_t, κ small enough to keep some stops.
        mass = dataclasses.replace(boundary, mass=rng.uniform(-0.05, 0.05, S.shape[1]))
        for b in (boundary, mass):
            ref = apply_boundary(S, b, theta_s, walk.offset, walk.terms.classes, A=A)
            assert ref.stopped.any()
            for precision in ("double", "single"):
                atol = 1e-9 * spread + (band if precision == "single" else 0.0)
                rows = X[: 1 + int(rng.integers(X.shape[0] // 10))]  # in one go: few rows
                ev = evaluate_blocked(walk, rows, b, theta_s, precision=precision, path="walk")
                _same(ev, apply_boundary(S[: len(rows)], b, theta_s, walk.offset,
                                         walk.terms.classes, A=A[: len(rows)]), atol)  # fmt: skip
                few = 150  # blocks of 2 terms and chunks of 4 rows: enough to cross them all
                for kwargs in PATHS.values():
                    ev = evaluate_blocked(
                        walk, X[:few], b, theta_s, precision=precision, path="walk", **kwargs
                    )
                    assert ev.path == "walk"
                    _same(ev, apply_boundary(S[:few], b, theta_s, walk.offset,
                                             walk.terms.classes, A=A[:few]), atol)  # fmt: skip
                # ≥ 256 rows and no block size: a pilot sets the blocks.
                plan = walk_plan(walk)
                ev = evaluate_blocked(walk, X, b, theta_s, precision=precision, path="walk")
                assert plan.pilots(b), "the pilot path was not taken"
                _same(ev, ref, atol)
                np.testing.assert_array_equal(ev.positive, ev.decision >= walk.offset + theta_s)


@pytest.mark.parametrize("kind", ["rbf", "rbf-grid"])
def test_full_and_budgeted_sums_of_a_sketched_walk_are_the_plain_walks(sketched_walks, kind):
    walk, X = sketched_walks[kind]
    theta_s = walk.theta_s(0.0)
    n = walk.n_terms
    S = walk.walk.partial_scores(X)
    for boundary, terms in ((full_boundary(n), n), (budget_boundary(n, n // 3), n // 3)):
        ev = evaluate_blocked(walk, X, boundary, theta_s, precision="double")
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        np.testing.assert_array_equal(ev.positive, ref.positive)
        np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-12, atol=1e-12)
        assert (ev.n_evaluated == terms).all()
        assert ev.sketch_cost == 0 and ev.work_fraction == pytest.approx(terms / n)


@pytest.mark.parametrize("kind", ["rbf", "rbf-single", "rbf-grid", "rbf-single-axes"])
def test_the_evaluators_sketch_features_are_the_references(sketched_walks, kind, monkeypatch):
    """The evaluator reads the rows a tile at a time and finishes the features once for all of
    them: the sketch's own ``features`` on the same rows (several tiles and a ragged last one;
    without the discarded-norm correction too), to double rounding."""
    from attentive.evaluator import rows as rows_module
    from attentive.evaluator.sources.sketch import FEATURE_TILE, sketch_features

    monkeypatch.setattr(rows_module, "TILE_BYTES", 1)  # tiles of FEATURE_TILE rows
    walk, X = sketched_walks[kind]
    Xp = walk.prepare(X)
    assert Xp.shape[0] > 2 * FEATURE_TILE and Xp.shape[0] % FEATURE_TILE
    ref = walk.sketch.features(Xp)
    np.testing.assert_allclose(sketch_features(walk, Xp), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sketch_features(walk, Xp[:1]), ref[:1], rtol=1e-12, atol=1e-15)
    assert sketch_features(walk, Xp[:0]).shape == (0, walk.sketch.m)
    sketch = walk.sketch
    projection = dataclasses.replace(sketch.projection, corrected=False)
    plain = SimpleNamespace(
        sketch=SimpleNamespace(projection=projection, m=sketch.m, gamma=sketch.gamma)
    )
    uncorrected = sketch_features(plain, Xp)
    direct = projection.features(np.asarray(Xp, dtype=np.float64), sketch.gamma)
    np.testing.assert_allclose(uncorrected, direct, rtol=1e-12, atol=1e-15)
    assert np.all(uncorrected >= ref) and np.any(uncorrected > ref)  # e^{−γ r(x)} ≤ 1 is gone


@pytest.mark.parametrize(
    "kind", ["rbf-single", "rbf-single-f32", "rbf-grid", "90 columns", "rbf-single-axes-f32"]
)
@pytest.mark.parametrize("corrected", [True, False])
def test_float32_features_are_within_their_bound(sketched_walks, kind, corrected):
    """The features a walk over float32 products takes (float32 products by chunks) are within
    the bound it carries into its band, against the sketch's own features of the same rows in
    double precision; the bound is far below a feature's size. Rows far out (scaled up) too:
    their bound grows with them."""
    from attentive.evaluator.sources.sketch import (
        MAX_FEATURE_ERROR,
        SINGLE_CHUNK,
        single_features,
    )

    if kind == "90 columns":  # not a multiple of the chunk: the last columns' own product
        rng = np.random.default_rng(5)
        Z = rng.normal(size=(900, 90))
        labels = (Z[:, 0] + 0.4 * Z[:, 1] ** 2 > 0.3).astype(int)
        walk, X = _problem(Z, labels, "scale", 6, 24, 600)
        assert X.shape[1] % SINGLE_CHUNK
    else:
        walk, X = sketched_walks[kind]
    Xp = np.asarray(walk.prepare(X))
    projection = dataclasses.replace(walk.sketch.projection, corrected=corrected)
    gamma = walk.sketch.gamma
    for rows in (Xp, 3.0 * Xp[:50], Xp[:1]):
        a, err = single_features(projection, rows, gamma)
        ref = projection.features(np.asarray(rows, dtype=np.float64), gamma)
        off = np.abs(a - ref).max(axis=1)
        assert np.all(np.isfinite(err))
        assert np.all(off <= err), float((off / err).max())
        if projection.coordinates is not None and not corrected:
            assert off.max() == 0  # P x is the rows' own values, and x · x̄ is not needed
        else:
            assert off.max() > 0  # float32 products do round
    a, err = single_features(projection, Xp, gamma)
    assert np.median(err) < MAX_FEATURE_ERROR / 2
    # With the norms (and their bound) a float32 source summed: the same features and bound.
    from attentive.evaluator.rows import single_row_norms

    shared = single_features(projection, Xp, gamma, norms=single_row_norms(Xp))
    np.testing.assert_array_equal(shared[0], a)
    np.testing.assert_array_equal(shared[1], err)
    assert single_features(projection, Xp[:0], gamma)[0].shape == (0, walk.sketch.m)


def _sketched_sources(monkeypatch):
    """Spy on the evaluator's sketched sources: (inner kind, feature bound) of each one built."""
    from attentive.evaluator.sources import sketch as module

    built = []
    init = module.SketchedSource.__init__

    def spy(self, inner, walk, plan, X, features=None):
        init(self, inner, walk, plan, X, features)
        built.append((inner.kind, self.feature_error))

    monkeypatch.setattr(module.SketchedSource, "__init__", spy)
    return built


@pytest.mark.parametrize(
    "kind", ["rbf", "rbf-single", "rbf-single-f32", "rbf-grid", "rbf-single-axes-f32"]
)
def test_float32_features_only_over_the_float32_source(sketched_walks, monkeypatch, kind):
    """A sketched walk over the float32 source takes its features from float32 products, under
    a band (feature_error > 0); over the double source and the grid (exact products) they are
    the reference's (no bound), and so under ``precision="double"``. Either way the stops are
    the reference's."""
    walk, X = sketched_walks[kind]
    built = _sketched_sources(monkeypatch)
    S, A = walk.partial_scores_and_masses(X)
    boundary, spread = _boundary(S, np.random.default_rng(3), "both")
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes, A=A)
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())
    for precision in ("single", "double"):
        built.clear()
        ev = evaluate_blocked(
            walk, X, boundary, theta_s, path="walk", block_size=4, precision=precision
        )
        _same(ev, ref, 1e-9 * spread + (band if precision == "single" else 0.0))
        assert built
        first_inner, first_error = built[0]
        if precision == "single" and kind.startswith("rbf-single"):
            assert first_inner == "rbf-single" and first_error > 0
        else:
            assert first_inner != "rbf-single" and first_error == 0


@pytest.mark.parametrize("kind", ["rbf-single"])
def test_features_off_by_their_whole_bound_leave_every_stop_as_the_references(
    sketched_walks, monkeypatch, kind
):
    """The band covers the features' error: features moved by their whole bound, all in the
    direction that moves the sketch's start most (β's signs), still give the reference's stops,
    sides and labels (walks the move makes unsure are walked again in double precision). The
    bound is made 300 times the real one, so that the move is far beyond the inner source's own
    band and the thresholds' distance to every walk value: without the features' part of the
    band the stops differ (checked last)."""
    from attentive.evaluator.sources import sketch as module

    walk, X = sketched_walks[kind]
    rng = np.random.default_rng(7)
    exact = module.single_features
    direction = np.sign(walk.beta)

    def moved(projection, rows, gamma, **kwargs):
        a, err = exact(projection, rows, gamma, **kwargs)
        err = 300.0 * err
        return a + err[:, None] * direction, err

    monkeypatch.setattr(module, "single_features", moved)
    monkeypatch.setattr(module, "MAX_FEATURE_ERROR", np.inf)
    built = _sketched_sources(monkeypatch)
    S, A = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    Xp = np.asarray(walk.prepare(X))
    _, err = exact(walk.sketch.projection, Xp, walk.sketch.gamma)
    ahead = np.abs(walk.beta - np.cumsum(walk.ordered_weights[:, None] * walk.ordered_factors, 0))
    # A stopped walk's value carries the move: within its band, as the docs say.
    moved_by = 1.01 * 300.0 * float(err.max()) * float(ahead.sum(axis=1).max())
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum()) + moved_by
    cases = []
    for side in ("lower", "upper", "both"):
        boundary, spread = _boundary(S, rng, side)
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes, A=A)
        for kwargs in ({"block_size": 3, "chunk_size": 50}, {}):
            ev = evaluate_blocked(walk, X, boundary, theta_s, path="walk", **kwargs)
            _same(ev, ref, 1e-9 * spread + band)
            cases.append((boundary, kwargs, ref))
    assert any(error > 0 for _, error in built)
    # The control: the same moves without the features' part of the band change stops.
    banded = module.SketchedSource.__init__

    def unbanded(self, inner, walk, plan, X, features=None):
        banded(self, inner, walk, plan, X, features)
        self.feature_error = 0.0

    monkeypatch.setattr(module.SketchedSource, "__init__", unbanded)
    differ = 0
    for boundary, kwargs, ref in cases:
        ev = evaluate_blocked(walk, X, boundary, theta_s, path="walk", **kwargs)
        differ += int(np.sum(ev.n_evaluated != ref.n_evaluated))
    assert differ > 0


def test_the_pilot_finds_the_walks_a_sketched_float32_walk_leaves_to_double_precision(
    sketched_walks, monkeypatch
):
    """``walked_again`` on a sketched walk over the float32 source, whose features come from
    float32 products with a bound per row (widened 30 times here, so that it decides many
    crossings), against that walk itself: the walks it leaves unsure, and those that end within
    their band of the label's threshold."""
    from attentive.evaluator.pilot import walked_again
    from attentive.evaluator.plan import block_schedule, thresholds
    from attentive.evaluator.sources import build_source
    from attentive.evaluator.sources import sketch as module
    from attentive.evaluator.walk import walk_rows, whole_sums

    walk, X = sketched_walks["rbf-single"]
    exact_features = module.single_features

    def widened(projection, rows, gamma, **kwargs):
        a, err = exact_features(projection, rows, gamma, **kwargs)
        return a, 30.0 * err

    monkeypatch.setattr(module, "single_features", widened)
    monkeypatch.setattr(module, "MAX_FEATURE_ERROR", np.inf)
    plan, base_plan = walk_plan(walk), walk_plan(walk.walk)
    S, _ = walk.partial_scores_and_masses(X)
    boundary, _ = _boundary(S, np.random.default_rng(5), "both")
    thr = thresholds(plan, boundary)
    final = float(walk.theta_s(0.0) + plan.centring_sums[-1])
    schedule = block_schedule(walk.n_terms, 6)
    rows = np.asarray(X)

    def source(precision):
        inner = build_source(walk.walk, base_plan, rows, precision)
        return module.SketchedSource(inner, walk, plan, rows)

    single = source("single")
    assert single.inner.kind == "rbf-single"
    per_row, reach = single.row_allowance()
    assert np.ptp(per_row) > 0 and reach[0] > reach[-1]  # a bound per row, falling along the walk
    sums = whole_sums(source("double"), thr, mass=True)
    again, ends = walked_again(single, sums, thr, final, schedule.edges)
    res = walk_rows(source("single"), schedule, thr, final)
    np.testing.assert_array_equal(np.flatnonzero(again), np.sort(res.unsure))
    near = res.rows[np.abs(res.U - final) <= res.band]
    np.testing.assert_array_equal(np.flatnonzero(ends), np.sort(near))
    assert 5 <= again.sum() < len(rows) // 2
