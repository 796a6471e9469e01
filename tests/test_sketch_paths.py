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
    return {
        "rbf": _problem(X, y, 0.3, 3, 16, 600),
        "rbf-single": _problem(wide, y, "scale", 8, 32, 600),
        "rbf-grid": _problem(pixels, labels, "scale", 8, 32, 600),
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


@pytest.mark.parametrize("kind", ["rbf", "rbf-single", "rbf-grid"])
def test_every_path_walks_the_sketched_walk_as_the_reference(sketched_walks, kind):
    walk, X = sketched_walks[kind]
    assert source_for(walk.walk, walk_plan(walk.walk), X, "single").kind == kind
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


@pytest.mark.parametrize("kind", ["rbf", "rbf-single", "rbf-grid"])
def test_the_evaluators_sketch_features_are_the_references(sketched_walks, kind):
    """The evaluator reads the rows a tile at a time and finishes the features once for all of
    them: the sketch's own ``features`` on the same rows (several tiles and a ragged last one;
    without the discarded-norm correction too), to double rounding."""
    from attentive.evaluator.sources.sketch import FEATURE_TILE, sketch_features

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
