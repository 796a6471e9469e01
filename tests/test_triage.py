"""A sketched walk's first positions taken with its sketch's pass (attentive.evaluator.triage):
the rows it decides stop where, and on the side, the reference's walks stop; every other row is
walked as before; the pilot takes it where it is priced cheaper.

The reference is ``apply_boundary`` on the sketched walk's partial scores and running masses;
the walks and thresholds are tests/test_sketch_paths.py's (thresholds kept off every walk value
by more than rounding).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from test_sketch_paths import _boundary, _same, sketched_walks  # noqa: F401 (a fixture)

from attentive.errors import NonFiniteInput
from attentive.evaluation import apply_boundary
from attentive.evaluator import blocked as blocked_module
from attentive.evaluator import evaluate_blocked
from attentive.evaluator import rows as rows_module
from attentive.evaluator import triage as triage_module
from attentive.evaluator.plan import thresholds, walk_plan
from attentive.evaluator.rows import MIN_PRODUCT_TILE, SMALL_PRODUCT, product_tile_rows
from attentive.evaluator.triage import triage

KINDS = ["rbf", "rbf-single", "rbf-single-f32", "rbf-grid", "rbf-single-axes"]


def _references(walk, X, rng):
    """(boundary, reference evaluation) for each side, on U_t and on U_t + κ_t A_t."""
    S, A = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    out = []
    for side in ("lower", "upper", "both"):
        boundary, spread = _boundary(S, rng, side)
        mass = dataclasses.replace(boundary, mass=rng.uniform(-0.05, 0.05, S.shape[1]))
        for b in (boundary, mass):
            ref = apply_boundary(S, b, theta_s, walk.offset, walk.terms.classes, A=A)
            out.append((b, ref, spread))
    return out


def _priced(monkeypatch, ns: float) -> list:
    """The triage priced at ``ns`` a row (a large negative price: always taken; a large one:
    never), and a record of the rows each triage was given and the rows it decided."""
    monkeypatch.setattr(triage_module, "TRIAGE_ROW_NS", ns)
    calls = []
    original = blocked_module.triage

    def spy(walk, plan, X, thr, b):
        found = original(walk, plan, X, thr, b)
        calls.append((X.shape[0], found.decided.at.shape[0]))
        return found

    monkeypatch.setattr(blocked_module, "triage", spy)
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_the_rows_a_triage_decides_stop_where_the_references_do(sketched_walks, kind):  # noqa: F811
    """Every row the reference stops at position 1 is decided, at 1 and on its side, with its
    statistic there; no other row is; the others keep their order and get the sketch's own
    features (to double rounding)."""
    walk, X = sketched_walks[kind]
    Xp = np.asarray(walk.prepare(X))
    plan = walk_plan(walk)
    rng = np.random.default_rng(11)
    S, A = walk.partial_scores_and_masses(X)
    seen = 0
    for boundary, ref, spread in _references(walk, X, rng):
        thr = thresholds(plan, boundary)
        found = triage(walk, plan, Xp, thr, 1)
        at_one = np.flatnonzero(ref.n_evaluated == 1)
        rows = found.decided.at[:, 0]
        np.testing.assert_array_equal(np.sort(rows), at_one)
        assert (found.decided.at[:, 1] == 1).all()
        np.testing.assert_array_equal(found.decided.side, ref.stop_side[rows])
        # The statistic at the stop: V_1 = U_1 (+ κ_1 A_1), uncentred (S_1 + C_1).
        V = S[rows, 0] + plan.centring_sums[0]
        if boundary.mass is not None:
            V = V + boundary.mass[0] * A[rows, 0]
        np.testing.assert_allclose(found.decided.value, V, rtol=1e-9, atol=1e-9 * spread)
        np.testing.assert_array_equal(found.rest, np.setdiff1d(np.arange(len(Xp)), at_one))
        np.testing.assert_allclose(
            found.features, walk.sketch.features(Xp[found.rest]), rtol=1e-12, atol=1e-15
        )
        seen += at_one.size
    assert seen > 0  # (the thresholds stop some walks at position 1)


@pytest.mark.parametrize("kind", ["rbf", "rbf-grid"])
def test_a_row_at_a_threshold_is_left_to_the_walk(sketched_walks, kind):  # noqa: F811
    """A threshold at a row's own statistic (to rounding, where a computation may fall either
    side) leaves that row to the walk: its crossing is not certain under the triage's bound.
    Without the bound about half of them would be decided by rounding alone."""
    walk, X = sketched_walks[kind]
    Xp = np.asarray(walk.prepare(X))
    plan = walk_plan(walk)
    S, _ = walk.partial_scores_and_masses(X)
    boundary, _ = _boundary(S, np.random.default_rng(8), "lower")
    for j in range(0, 400, 20):
        at = dataclasses.replace(boundary, lower=np.concatenate([[S[j, 0]], boundary.lower[1:]]))
        found = triage(walk, plan, Xp, thresholds(plan, at), 1)
        assert j in found.rest


@pytest.mark.parametrize("kind", KINDS)
def test_a_walk_after_a_triage_is_the_references(sketched_walks, kind, monkeypatch):  # noqa: F811
    """With the triage always taken, every path after a pilot (one chunk, chunks of 100 rows,
    two threads) gives the reference's stops, sides, labels and decisions; the triage ran and
    decided rows."""
    walk, X = sketched_walks[kind]
    calls = _priced(monkeypatch, -1e12)
    rng = np.random.default_rng(5)
    theta_s = walk.theta_s(0.0)
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())  # a certified source's, at most
    for boundary, ref, spread in _references(walk, X, rng):
        for precision in ("single", "double"):
            atol = 1e-9 * spread + (band if precision == "single" else 0.0)
            for kwargs in ({}, {"chunk_size": 100}, {"chunk_size": 150, "n_jobs": 2}):
                calls.clear()
                ev = evaluate_blocked(
                    walk, X, boundary, theta_s, precision=precision, path="walk", **kwargs
                )
                _same(ev, ref, atol)
                assert sum(rows for rows, _ in calls) == len(X)
                assert sum(decided for _, decided in calls) == int(np.sum(ref.n_evaluated == 1))
        pilot = next(iter(walk_plan(walk).pilots(boundary).by_kind.values()))
        assert pilot.triage == 1


def test_the_pilot_takes_a_triage_where_walks_stop_at_once_and_not_where_none_can(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """Priced as it is: thresholds that stop most walks at position 1 take the triage (its
    rows skip the source's preparation and first block); thresholds that stop none before
    position 3 do not (it would cost every row a column and decide nothing), and no triage
    runs."""
    walk, X = sketched_walks["rbf-grid"]
    calls = _priced(monkeypatch, triage_module.TRIAGE_ROW_NS)
    S, A = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    rng = np.random.default_rng(2)
    boundary, _ = _boundary(S, rng, "both")
    n = S.shape[1]
    middle = np.median(S[:, 0])
    at_once = dataclasses.replace(
        boundary,
        lower=np.concatenate([[middle - 1e-3], boundary.lower[1:]]),
        upper=np.concatenate([[middle + 1e-3], boundary.upper[1:]]),
    )
    late = dataclasses.replace(
        boundary,
        lower=np.concatenate([np.full(2, -np.inf), boundary.lower[2:]]),
        upper=np.concatenate([np.full(2, np.inf), boundary.upper[2:]]),
    )
    assert n > 3
    for b, expected in ((at_once, 1), (late, 0)):
        ref = apply_boundary(S, b, theta_s, walk.offset, walk.terms.classes, A=A)
        calls.clear()
        ev = evaluate_blocked(walk, X, b, theta_s, path="walk")
        _same(ev, ref, 1e-4 * float(np.abs(walk.ordered_weights).sum()))
        pilots = list(walk_plan(walk).pilots(b).by_kind.values())
        assert pilots and all(p.triage == expected for p in pilots)
        assert bool(calls) == bool(expected)
    assert (
        np.mean(
            apply_boundary(S, at_once, theta_s, walk.offset, walk.terms.classes).n_evaluated == 1
        )
        > 0.9
    )


def test_a_row_with_a_missing_value_is_still_refused_after_a_triage(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """A triage leaves a row whose norm is not finite to the walk's source, which refuses it
    (as without a triage); the other rows are not the cause."""
    walk, X = sketched_walks["rbf"]
    calls = _priced(monkeypatch, -1e12)
    S = walk.partial_scores(X)
    boundary, _ = _boundary(S, np.random.default_rng(4), "both")
    theta_s = walk.theta_s(0.0)
    for bad in (np.nan, np.inf):
        Y = np.array(X, dtype=np.float64)
        Y[7, 2] = bad
        with pytest.raises(NonFiniteInput):
            evaluate_blocked(walk, Y, boundary, theta_s, path="walk")
    assert calls  # (the triage ran, and let the row through to the source)


@pytest.mark.parametrize("d", [2, 50, 784, 5000, 10**6])
@pytest.mark.parametrize("columns", [1, 9, 10, 17, 65])
def test_product_tiles_fit_the_small_product_where_the_blas_has_it(d, columns, monkeypatch):
    most = 128
    monkeypatch.setattr(rows_module, "small_products", lambda: True)
    rows = product_tile_rows(d, columns, most)
    assert 1 <= rows <= most
    if SMALL_PRODUCT // (d * columns) >= MIN_PRODUCT_TILE:
        assert rows * columns * d <= SMALL_PRODUCT
        assert rows == most or (rows + 1) * columns * d > SMALL_PRODUCT
    else:
        assert rows == most
    monkeypatch.setattr(rows_module, "small_products", lambda: False)
    assert product_tile_rows(d, columns, most) == most


def test_the_blas_kernel_is_read_from_threadpoolctl(monkeypatch):
    """OpenBLAS on SkylakeX (AVX-512) has the small-matrix kernels, on Haswell (AVX2) not; a
    BLAS that is not OpenBLAS is not assumed to."""
    from attentive.evaluator import threads

    def reporting(*entries):
        controller = SimpleNamespace(info=lambda: list(entries))
        monkeypatch.setattr(threads, "thread_pools", lambda: controller)
        rows_module.small_products.cache_clear()
        return rows_module.small_products()

    try:
        assert reporting({"internal_api": "openblas", "architecture": "SkylakeX"})
        assert reporting(
            {"internal_api": "openmp"},
            {"internal_api": "openblas", "architecture": "SapphireRapids"},
        )
        assert not reporting({"internal_api": "openblas", "architecture": "Haswell"})
        assert not reporting({"internal_api": "mkl", "architecture": None})
    finally:
        monkeypatch.undo()
        rows_module.small_products.cache_clear()
