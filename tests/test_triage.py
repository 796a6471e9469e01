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

from attentive.boundaries import full_boundary
from attentive.errors import NonFiniteInput
from attentive.evaluation import apply_boundary
from attentive.evaluator import blocked as blocked_module
from attentive.evaluator import evaluate_blocked
from attentive.evaluator import pilot as pilot_module
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

    def spy(walk, plan, X, thr, b, **kwargs):
        found = original(walk, plan, X, thr, b, **kwargs)
        calls.append((X.shape[0], kwargs.get("single", False), found.decided.at.shape[0]))
        return found

    monkeypatch.setattr(blocked_module, "triage", spy)
    return calls


@pytest.mark.parametrize("b", [1, 6])
@pytest.mark.parametrize("kind", KINDS)
def test_the_rows_a_triage_decides_stop_where_the_references_do(sketched_walks, kind, b):  # noqa: F811
    """Every row the reference stops within the first ``b`` positions is decided, at its
    position and on its side, with its statistic there; no other row is; the others keep their
    order and get the sketch's own features (to double rounding)."""
    walk, X = sketched_walks[kind]
    Xp = np.asarray(walk.prepare(X))
    plan = walk_plan(walk)
    rng = np.random.default_rng(11)
    S, A = walk.partial_scores_and_masses(X)
    seen = later = 0
    for boundary, ref, spread in _references(walk, X, rng):
        thr = thresholds(plan, boundary)
        found = triage(walk, plan, Xp, thr, b)
        within = np.flatnonzero(ref.n_evaluated <= b)
        rows = found.decided.at[:, 0]
        np.testing.assert_array_equal(np.sort(rows), within)
        at = found.decided.at[:, 1]
        np.testing.assert_array_equal(at, ref.n_evaluated[rows])
        np.testing.assert_array_equal(found.decided.side, ref.stop_side[rows])
        # The statistic at the stop: V_t = U_t (+ κ_t A_t), uncentred (S_t + C_t).
        V = S[rows, at - 1] + plan.centring_sums[at - 1]
        if boundary.mass is not None:
            V = V + boundary.mass[at - 1] * A[rows, at - 1]
        np.testing.assert_allclose(found.decided.value, V, rtol=1e-9, atol=1e-9 * spread)
        np.testing.assert_array_equal(found.rest, np.setdiff1d(np.arange(len(Xp)), within))
        np.testing.assert_allclose(
            found.features, walk.sketch.features(Xp[found.rest]), rtol=1e-12, atol=1e-15
        )
        seen += within.size
        later += int((at > 1).sum())
    assert seen > 0  # (the thresholds stop some walks within the first b positions)
    assert later > 0 or b == 1  # (and some after the first)


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
                assert sum(rows for rows, _, _ in calls) == len(X)
                assert sum(decided for _, _, decided in calls) == int(np.sum(ref.n_evaluated == 1))
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


@pytest.mark.parametrize("kind", ["rbf", "rbf-grid"])
def test_the_pilot_prices_holding_a_wide_row_for_the_rows_the_walk_holds(
    sketched_walks,  # noqa: F811
    monkeypatch,
    kind,
):
    """A row over more than 64 columns costs the walk that holds it from its start
    ``HELD_COLUMN_NS`` a column beyond the 64th (the RBF grid and float32 sources' ``held_ns``):
    without a triage every row, with one the share of the pilot's walks it leaves (stopped past
    its positions). Priced with and without it, the walk's cost differs by exactly that, in
    units of a full evaluation's term; rows of 6 features hold for nothing, and the double
    source's walks (not measured) are not charged."""
    from attentive.evaluator.sources import build_source
    from attentive.evaluator.sources import rbf as rbf_module

    walk, X = sketched_walks[kind]
    S, _ = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    boundary, _ = _boundary(S, np.random.default_rng(4), "both")
    plan = walk_plan(walk.walk)
    held = build_source(walk.walk, plan, X[:1], None).held_ns
    if kind == "rbf":
        assert X.shape[1] <= rbf_module.WIDE_FEATURES and held == 0.0
    else:
        columns = build_source(walk.walk, plan, X[:1], None).columns.n_columns
        assert columns > rbf_module.WIDE_FEATURES
        assert held == rbf_module.HELD_COLUMN_NS * (columns - rbf_module.WIDE_FEATURES) > 0
        double = build_source(walk.walk, plan, X[:1], "double")
        assert isinstance(double, rbf_module.RBFDoubleSource) and double.held_ns == 0.0

    def pilot(price):
        monkeypatch.setattr(rbf_module, "HELD_COLUMN_NS", price)
        b = dataclasses.replace(boundary)  # a boundary of its own: its own pilot
        evaluate_blocked(walk, X, b, theta_s, path="walk")
        kept = walk_plan(walk).pilots(b).by_kind  # (the grid's rows price the float32 walk too)
        (found,) = [p for (source, *_), p in kept.items() if source.kind == kind]
        return found

    default = rbf_module.HELD_COLUMN_NS
    priced, free = pilot(default), pilot(0.0)
    assert priced.triage == free.triage
    share = np.mean(priced.stops > priced.triage) if priced.triage else 1.0
    assert priced.walk_cost - free.walk_cost == pytest.approx(
        share * held / priced.term_ns, rel=1e-9, abs=1e-12
    )
    # the pilot knows that part (a walk's second thread is decided without it)
    assert free.held_cost == 0.0 and priced.held_cost == pytest.approx(share * held / free.term_ns)
    assert priced.unheld_walk_ns == pytest.approx(free.walk_ns, rel=1e-12)


def test_a_row_with_a_missing_value_is_still_refused_after_a_triage(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """A triage leaves a row whose norm is not finite to the walk's source, which refuses it
    (as without a triage), or on path "triage" to full evaluation's, which does too."""
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
    # Path "triage" takes rows over 64 columns: MNIST pixels in float32, triaged in float32
    # first (the row left unsure), then in double precision (left to full evaluation, which
    # refuses it), in a large call and in a call of a few rows (every term at once).
    walk, X = sketched_walks["rbf-grid"]
    _then_full(monkeypatch, True)
    S = walk.partial_scores(X)
    boundary, _ = _boundary(S, np.random.default_rng(4), "both")
    theta_s = walk.theta_s(0.0)
    assert evaluate_blocked(walk, X, boundary, theta_s, path="auto").path == "triage"
    for bad in (np.nan, np.inf):
        Y = np.array(X, dtype=np.float32)
        Y[7, 2] = bad
        calls.clear()
        with pytest.raises(NonFiniteInput):
            evaluate_blocked(walk, Y, boundary, theta_s, path="auto")
        assert calls[0][:2] == (len(Y), True) and calls[1][1] is False
        with pytest.raises(NonFiniteInput):
            evaluate_blocked(walk, Y[5:9], boundary, theta_s, path="auto")


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


def _exact_first_statistic(walk, plan, Xp, kappa=None):
    """V_1 of rows ``Xp`` in long double from the stored float64 parameters: the sketch's
    features and start, the first exact term and its sketched part (SPEC §3b)."""
    from attentive.evaluator.sources.sketch import sketch_arrays

    L = np.longdouble
    sketch, projection = walk.sketch, walk.sketch.projection
    X = np.asarray(Xp, dtype=np.float64).astype(L)
    gamma = L(sketch.gamma)
    G = X @ projection.stacked.astype(L)
    k = projection.projected_mean.shape[0]
    U = G[:, :k] - projection.projected_mean.astype(L)
    D = ((U[:, None, :] - projection.landmarks.astype(L)[None]) ** 2).sum(-1)
    r = (X * X).sum(1) - 2 * G[:, k] + L(projection.mean_norm) - (U * U).sum(1)
    a = np.exp(-gamma * (D + np.maximum(r, 0)[:, None]))
    arrays = sketch_arrays(walk, plan)
    start = a @ arrays.beta.astype(L) - L(arrays.mean_start)
    base = walk.walk
    s = np.asarray(base.terms.support_vectors, dtype=np.float64)[base.order[0]].astype(L)
    w = L(plan.ordered_weights[0])
    mag = abs(w) * np.exp(-gamma * ((X - s) ** 2).sum(1))
    V = start + (mag - a @ arrays.factors[0].astype(L)) * (1 if w >= 0 else -1)
    return V if kappa is None else V + L(kappa) * mag


@pytest.mark.parametrize("offset", [0.0, 30.0, 300.0, 3000.0])
def test_the_triages_bound_holds_against_long_double_arithmetic(offset):
    """Every row's statistic at position 1 (a threshold of +∞ decides them all, giving their
    values) is within the triage's bound of the same statistic in long double, on rows far
    from the origin too (where the features' correction r(x) cancels badly), with and without
    a rule on the running mass; and, near the origin, the bound is small enough to decide rows.
    (Without the features' part of the bound it fails at 3,000: 1.12 times the rest of it.)"""
    from test_sketch_paths import _problem

    from attentive.evaluator.plan import Thresholds

    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 10))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.5).astype(int)
    walk, rows = _problem(X + offset, y, 1.0, 8, 32, 600)
    assert not walk.sketch.on_coordinates
    Xp = np.asarray(walk.prepare(rows))
    plan = walk_plan(walk)
    n = walk.n_terms
    for kappa in (None, 0.3):
        thr = Thresholds(
            lower=np.full(n - 1, np.inf),
            upper=None,
            mass=None if kappa is None else np.full(n - 1, kappa),
        )
        found = triage(walk, plan, Xp, thr, 1)
        assert found.decided.at.shape[0] == len(Xp) and found.rest.size == 0
        order = np.argsort(found.decided.at[:, 0])
        exact = _exact_first_statistic(walk, plan, Xp, kappa)
        off = np.abs(found.decided.value[order] - exact).astype(np.float64)
        assert off.max() <= found.band[0], (off.max(), found.band[0])
        if offset == 0:  # (far out, the bound grows with ‖x‖²: 5e-6 at 300 in 10 dimensions)
            assert found.band[0] <= 1e-9 * (1.0 + np.abs(found.decided.value).max())


def test_a_walk_after_a_triage_on_two_threads_is_the_references(sketched_walks, monkeypatch):  # noqa: F811
    """Chunks walked on two threads, each triaged: the reference's stops, sides and labels."""
    walk, X = sketched_walks["rbf-grid"]
    calls = _priced(monkeypatch, -1e12)
    monkeypatch.setattr(blocked_module, "WALK_ROWS_PER_THREAD", 64)
    monkeypatch.setattr(blocked_module, "THREADED_WALK_NS", -np.inf)
    monkeypatch.setattr(blocked_module, "PARALLEL_MIN_ELEMENTS", 0)
    jobs = []
    run = blocked_module.run_tasks

    def counting(tasks, n_jobs, **kwargs):
        jobs.append(n_jobs)
        return run(tasks, n_jobs, **kwargs)

    monkeypatch.setattr(blocked_module, "run_tasks", counting)
    theta_s = walk.theta_s(0.0)
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())
    for boundary, ref, spread in _references(walk, X, np.random.default_rng(9))[:2]:
        jobs.clear()
        calls.clear()
        ev = evaluate_blocked(walk, X, boundary, theta_s, path="walk", chunk_size=100, n_jobs=2)
        _same(ev, ref, 1e-9 * spread + band)
        assert jobs == [2] and len(calls) == 6


def test_a_classifier_behind_a_scaler_decides_alike_with_and_without_the_triage(monkeypatch):
    """The estimator's path (rows through a StandardScaler a tile at a time, the calibrated rule
    on a sketched family): the triage always taken and never taken give the same stops, sides
    and labels, and decisions to rounding. Sparse rows are never triaged (their labels are the
    dense rows')."""
    import scipy.sparse as sp
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier
    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-3v8")
    X = np.asarray(ds.X_train, dtype=np.float32)[:900]
    y = np.asarray(ds.y_train)[:900]
    rows = np.asarray(ds.X_test, dtype=np.float32)[:500]

    def fitted(model):
        return AttentiveClassifier(
            model,
            boundary="calibrated",
            family="sketched-regression",
            sketch=(4, 16),
            early_stopping=True,
            random_state=0,
        ).fit(X, y)

    clf = fitted(make_pipeline(StandardScaler(), SVC(gamma="scale")))
    outcomes = []
    for ns in (-1e12, 1e12):
        calls = _priced(monkeypatch, ns)
        fresh = clf.with_rule()  # (a new rule: pilots priced again)
        outcomes.append((fresh.evaluate(rows), list(calls)))
    (on, on_calls), (off, off_calls) = outcomes
    assert on_calls and sum(decided for _, _, decided in on_calls) > 0 and not off_calls
    np.testing.assert_array_equal(on.n_evaluated, off.n_evaluated)
    np.testing.assert_array_equal(on.stop_side, off.stop_side)
    np.testing.assert_array_equal(on.labels, off.labels)
    np.testing.assert_allclose(on.decision, off.decision, rtol=1e-9, atol=1e-6)
    plain = fitted(SVC(gamma="scale"))
    calls = _priced(monkeypatch, -1e12)
    dense = plain.with_rule().evaluate(rows)
    assert calls
    calls.clear()
    sparse = plain.with_rule().evaluate(sp.csr_matrix(rows))
    assert not calls
    np.testing.assert_array_equal(sparse.labels, dense.labels)


def _then_full(monkeypatch, taken: bool, positions=(1,)) -> None:
    """Path "triage" (the triage's stops, every term of the other rows) priced as always
    paying, or as never, over the cheapest of ``positions``."""
    monkeypatch.setattr(pilot_module.Pilot, "then_full_pays", property(lambda self: taken))
    monkeypatch.setattr(pilot_module, "THEN_FULL_POSITIONS", positions)


def _expected(walk, X, boundary, theta_s, positions=1, **kwargs):
    """What path "triage" over ``positions`` must give, from the two paths it is made of, each
    computed on its own: the forced walk's outcome for the rows whose walk stops within those
    positions, every term's for the others (and which rows those are)."""
    walked = evaluate_blocked(walk, X, boundary, theta_s, path="walk", **kwargs)
    full = evaluate_blocked(walk, X, boundary, theta_s, path="full", **kwargs)
    early = walked.stopped & (walked.n_evaluated <= positions)
    return walked, full, early


def _is_triage_of(ev, walked, full, early, atol):
    assert ev.path == "triage"
    for name in ("n_evaluated", "stop_side", "positive", "labels", "stopped"):
        np.testing.assert_array_equal(
            getattr(ev, name), np.where(early, getattr(walked, name), getattr(full, name))
        )
    np.testing.assert_allclose(
        ev.decision, np.where(early, walked.decision, full.decision), rtol=1e-9, atol=atol
    )
    # Work: the sketch and a walked term for the rows stopped at once, every plain term else.
    np.testing.assert_allclose(ev.work, np.where(early, walked.work, walked.sketch_cost + 1.0))
    assert ev.work_fraction == pytest.approx(np.mean(ev.work))


def test_path_triage_is_not_taken_on_narrow_rows(sketched_walks, monkeypatch):  # noqa: F811
    """Rows over 64 columns or fewer (here 6) never take path "triage", even where it is
    priced as paying (measured slower than their walk behind a PCA(50)): they are walked or
    evaluated in full, as the pilot prices the walk."""
    walk, X = sketched_walks["rbf"]
    _then_full(monkeypatch, True)
    assert X.shape[1] <= blocked_module.TRIAGE_PATH_COLUMNS
    theta_s = walk.theta_s(0.0)
    for boundary, _ref, spread in _references(walk, X, np.random.default_rng(2)):
        ev = evaluate_blocked(walk, X, boundary, theta_s, path="auto")
        assert ev.path in ("walk", "full")
        _same(ev, evaluate_blocked(walk, X, boundary, theta_s, path=ev.path), 1e-9 * spread)


@pytest.mark.parametrize("positions", [1, 6])
@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind != "rbf"])
def test_path_triage_stops_the_rows_the_walk_stops_early_and_evaluates_the_rest_in_full(
    sketched_walks,  # noqa: F811
    kind,
    positions,
    monkeypatch,
):
    """Where the pilot prices it cheapest, "auto" stops the rows whose walk stops within the
    triage's positions (1, or 6), where and on the side the walk does, and gives every other
    row the full model's decision: against the forced walk and full evaluation, and against the
    reference (apply_boundary on the partial scores), for every chunking and two threads; the
    rows it gets wrong are among those the rule gets wrong."""
    walk, X = sketched_walks[kind]
    _then_full(monkeypatch, True, (positions,))
    rng = np.random.default_rng(9)
    theta_s = walk.theta_s(0.0)
    n = walk.n_terms
    band = 1e-4 * float(np.abs(walk.ordered_weights).sum())
    S = walk.partial_scores(X)
    full_ref = apply_boundary(S, full_boundary(n), theta_s, walk.offset, walk.terms.classes)
    stopped_early = later = 0
    for boundary, ref, spread in _references(walk, X, rng):
        for precision in ("single", "double"):
            atol = 1e-9 * spread + (band if precision == "single" else 0.0)
            for kwargs in ({}, {"chunk_size": 100}, {"chunk_size": 150, "n_jobs": 2}):
                ev = evaluate_blocked(
                    walk, X, boundary, theta_s, precision=precision, path="auto", **kwargs
                )
                expected = _expected(walk, X, boundary, theta_s, positions, precision=precision)
                _is_triage_of(ev, *expected, atol)
                early = ref.n_evaluated <= positions
                np.testing.assert_array_equal(
                    ev.labels, np.where(early, ref.labels, full_ref.labels)
                )
                np.testing.assert_array_equal(ev.n_evaluated, np.where(early, ref.n_evaluated, n))
                wrong, rule_wrong = ev.labels != full_ref.labels, ref.labels != full_ref.labels
                assert not (wrong & ~rule_wrong).any()
                stopped_early += int(early.sum())
                later += int((early & (ref.n_evaluated > 1)).sum())
    assert stopped_early > 0 and (later > 0 or positions == 1)


def _middle_row(walk, X):
    """A lower rule for rows ``X`` of ``walk`` and a row in the middle of its first position:
    (prepared rows, plan, partial scores, θ_S, spread, tolerance of decisions, the row, and
    ``lower_at(value)``: the rule with its first lower threshold at ``value``)."""
    Xp = np.asarray(walk.prepare(X))
    S, _ = walk.partial_scores_and_masses(X)
    boundary, spread = _boundary(S, np.random.default_rng(8), "lower")
    atol = 1e-9 * spread + 1e-4 * float(np.abs(walk.ordered_weights).sum())

    def lower_at(value):
        return dataclasses.replace(boundary, lower=np.concatenate([[value], boundary.lower[1:]]))

    j = int(np.argsort(S[:, 0])[len(X) // 2])
    return Xp, walk_plan(walk), S, walk.theta_s(0.0), spread, atol, j, lower_at


def _stops_of(tri):
    """{row: (position, side, value)} of a triage's decided rows."""
    at, side, value = tri.decided.at, tri.decided.side, tri.decided.value
    return {
        int(r): (int(t), int(s), float(v)) for (r, t), s, v in zip(at, side, value, strict=True)
    }


@pytest.mark.parametrize("b", [1, 6])
@pytest.mark.parametrize("kind", ["rbf-single-f32", "rbf-grid", "rbf-single-axes-f32"])
def test_a_float32_triage_decides_as_the_double_one_within_its_own_band(
    sketched_walks,  # noqa: F811
    kind,
    b,
):
    """Float32 rows over many columns triaged in float32 (``single``): every row it decides,
    the double-precision triage decides at the same position and on the same side, with a value
    within the row's float32 band there; a row it leaves neither decided nor unsure, the double
    one does not decide; it gives no features (its unsure rows are triaged again)."""
    walk, X = sketched_walks[kind]
    Xp = np.asarray(walk.prepare(X))
    assert Xp.dtype == np.float32 and Xp.shape[1] > blocked_module.TRIAGE_PATH_COLUMNS
    plan = walk_plan(walk)
    decided = unsure = 0
    for boundary, _ref, _spread in _references(walk, X, np.random.default_rng(4)):
        thr = thresholds(plan, boundary)
        double = triage(walk, plan, Xp, thr, b)
        single = triage(walk, plan, Xp, thr, b, single=True)
        assert single.features is None and single.band.shape == (b, len(Xp))
        exact, rough = _stops_of(double), _stops_of(single)
        for row, (at, side, value) in rough.items():
            assert exact[row][:2] == (at, side)
            assert abs(exact[row][2] - value) <= single.band[at - 1, row]
        assert set(exact) <= set(rough) | set(single.unsure.tolist())
        assert (single.band >= double.band[:, None]).all()
        decided += len(rough)
        unsure += single.unsure.size
    # (On coordinates P x is exact and the band narrow: none was left unsure there.)
    assert decided > 0 and (unsure > 0 or kind == "rbf-single-axes-f32")


def test_path_triage_triages_again_in_double_precision_what_float32_leaves_unsure(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """A threshold beyond a row's statistic at position 1 by half its float32 band (far wider
    than double precision's): the float32 triage leaves the row unsure, the double-precision
    one, given only the rows left unsure, stops it there; path "triage" gives every row the
    forced walk's outcome where that stops at once and full evaluation's elsewhere, whatever
    batch the row is in."""
    walk, X = sketched_walks["rbf-grid"]
    _then_full(monkeypatch, True)
    Xp, plan, S, theta_s, _, atol, j, lower_at = _middle_row(walk, X)
    wide = triage(walk, plan, Xp, thresholds(plan, lower_at(S[j, 0])), 1, single=True).band
    narrow = triage(walk, plan, Xp, thresholds(plan, lower_at(S[j, 0])), 1).band[0]
    at = lower_at(S[j, 0] + wide[0, j] / 2)
    assert wide[0, j] / 2 > 4 * narrow
    assert j in triage(walk, plan, Xp, thresholds(plan, at), 1, single=True).unsure
    calls = []
    original = blocked_module.triage

    def spy(walk, plan, X, thr, b, **kwargs):
        found = original(walk, plan, X, thr, b, **kwargs)
        calls.append((X.shape[0], kwargs.get("single", False), found.decided.at[:, 0].size))
        return found

    monkeypatch.setattr(blocked_module, "triage", spy)
    ev = evaluate_blocked(walk, X, at, theta_s, path="auto", reference=Xp[:300])
    _is_triage_of(ev, *_expected(walk, X, at, theta_s, reference=Xp[:300]), atol)
    assert ev.n_evaluated[j] == 1 and ev.stop_side[j] == -1
    # The float32 triage of the chunk, then the double one of its unsure rows only.
    assert calls[0][:2] == (len(X), True) and calls[1][1] is False and calls[1][0] < len(X) // 4
    for batch in (1, 7):
        idx = np.arange(j - j % batch, min(len(X), j - j % batch + batch))
        part = evaluate_blocked(walk, X[idx], at, theta_s, path="auto", reference=Xp[:300])
        np.testing.assert_array_equal(part.n_evaluated, ev.n_evaluated[idx])
        np.testing.assert_array_equal(part.labels, ev.labels[idx])


@pytest.mark.parametrize("kind", ["rbf-single", "rbf-grid"])
def test_path_triage_walks_the_rows_its_bound_leaves_unsure(
    sketched_walks,  # noqa: F811
    kind,
    monkeypatch,
):
    """A threshold beyond a row's statistic at position 1 by half the triage's bound there
    (double precision's rounding, from the chunk's largest row: far above a row's own): the
    triage cannot say whether the row stops there and path "triage" asks its walk, which stops
    it there; every row gets the forced walk's outcome if that stops at once and full
    evaluation's if not; and a row's outcome is the same evaluated alone, in a batch of 7, or
    with every row, although the triage's bound grows with the largest row of its chunk."""
    walk, X = sketched_walks[kind]
    _then_full(monkeypatch, True)
    Xp, plan, S, theta_s, spread, atol, j, lower_at = _middle_row(walk, X)
    half = triage(walk, plan, Xp, thresholds(plan, lower_at(S[j, 0])), 1).band[0] / 2
    at = lower_at(S[j, 0] + half)
    assert half > 1e-12 * spread
    unsure = triage(walk, plan, Xp, thresholds(plan, at), 1).unsure
    assert j in unsure
    ev = evaluate_blocked(walk, X, at, theta_s, path="auto", reference=Xp[:300])
    _is_triage_of(ev, *_expected(walk, X, at, theta_s, reference=Xp[:300]), atol)
    rows = np.unique(np.concatenate([unsure, np.arange(0, len(X), 37)]))
    for batch in (1, 7):
        for lo in range(0, rows.size, batch):
            idx = rows[lo : lo + batch]
            part = evaluate_blocked(walk, X[idx], at, theta_s, path="auto", reference=Xp[:300])
            assert part.path == "triage"
            np.testing.assert_array_equal(part.n_evaluated, ev.n_evaluated[idx])
            np.testing.assert_array_equal(part.labels, ev.labels[idx])
    assert ev.n_evaluated[j] == 1 and ev.stop_side[j] == -1


def test_the_pilot_prices_path_triage_from_the_triage_and_the_rows_it_leaves(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """Path "triage" is priced as the triage's pass (its features and positions) plus, for the
    share of the pilot's walks stopping past its positions, a gathered row and every term, less
    full evaluation's preparation of the rows it stops: a price of the gather moves it by
    exactly the share's gather; "auto" takes the path exactly where the price says it pays.
    (Over its first position here; the next test prices the others.)"""
    walk, X = sketched_walks["rbf-grid"]
    S, _ = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    boundary, _ = _boundary(S, np.random.default_rng(3), "both")
    monkeypatch.setattr(pilot_module, "THEN_FULL_POSITIONS", (1,))

    def pilot(gather):
        monkeypatch.setattr(pilot_module, "GATHER_NS", gather)
        b = dataclasses.replace(boundary)  # a boundary of its own: its own pilot
        ev = evaluate_blocked(walk, X, b, theta_s, path="auto")
        kept = walk_plan(walk).pilots(b).by_kind
        chosen = [
            p for p in kept.values() if p.walk_cost == min(q.walk_cost for q in kept.values())
        ]
        return ev, chosen[0]

    (ev0, free), (ev1, priced) = pilot(0.0), pilot(10.0)
    share = np.mean(free.stops > 1)
    assert 0 < share < 1 and free.then_full_positions == priced.then_full_positions == 1
    assert priced.then_full_cost - free.then_full_cost == pytest.approx(
        share * 10.0 * X.shape[1] / free.term_ns, rel=1e-9
    )
    for ev, p in ((ev0, free), (ev1, priced)):
        expected = "triage" if p.then_full_pays else ("walk" if p.walk_pays else "full")
        assert ev.path == expected
        if ev.path == "triage":
            assert ev.predicted_cost == pytest.approx(p.then_full_cost / p.full_cost)
    assert not pilot(1e9)[1].then_full_pays


def test_path_triage_takes_the_positions_its_pilot_prices_cheapest(
    sketched_walks,  # noqa: F811
    monkeypatch,
):
    """The pilot prices path "triage" over each of THEN_FULL_POSITIONS and takes the cheapest:
    its price and positions are those of the cheapest of the prices made with each alone (with
    the rows it leaves priced high, a later position than the first), and "auto" triages every
    chunk over those positions, with the outcome the forced walk and full evaluation give."""
    walk, X = sketched_walks["rbf-grid"]
    S, _ = walk.partial_scores_and_masses(X)
    theta_s = walk.theta_s(0.0)
    boundary, _ = _boundary(S, np.random.default_rng(3), "both")
    monkeypatch.setattr(pilot_module, "GATHER_NS", 20.0)
    candidates = (1, 2, 4, 8)

    def pilot(positions):
        monkeypatch.setattr(pilot_module, "THEN_FULL_POSITIONS", positions)
        b = dataclasses.replace(boundary)  # a boundary of its own: its own pilot
        evaluate_blocked(walk, X, b, theta_s, path="auto")
        kept = walk_plan(walk).pilots(b).by_kind.values()  # (the walk's source's: the cheapest)
        return min(kept, key=lambda p: p.walk_cost)

    alone = {c: pilot((c,)) for c in candidates}
    assert all(p.then_full_positions == c for c, p in alone.items())
    cost = {c: p.then_full_cost for c, p in alone.items()}
    best = min(cost, key=cost.get)
    assert best > 1 and len(set(cost.values())) == len(candidates)
    chosen = pilot(candidates)
    assert chosen.then_full_positions == best
    assert chosen.then_full_cost == pytest.approx(cost[best], rel=1e-12)
    # (weighed against the walk at its first position's price, wherever it is taken)
    assert all(p.first_position_cost == pytest.approx(cost[1], rel=1e-12) for p in alone.values())
    # "auto" triages over them (priced as paying).
    _then_full(monkeypatch, True, candidates)
    used = []
    original = blocked_module.triage

    def spy(walk, plan, X, thr, b, **kwargs):
        used.append(b)
        return original(walk, plan, X, thr, b, **kwargs)

    monkeypatch.setattr(blocked_module, "triage", spy)
    ev = evaluate_blocked(walk, X, boundary, theta_s, path="auto", chunk_size=200)
    assert len(used) >= 3 and set(used) == {best}
    atol = 1e-9 * (np.abs(S).max() + 1.0) + 1e-4 * float(np.abs(walk.ordered_weights).sum())
    _is_triage_of(ev, *_expected(walk, X, boundary, theta_s, best), atol)


def test_a_classifier_chooses_its_sketch_by_its_walk_whatever_path_auto_then_takes(monkeypatch):
    """``fit`` prices each sketch by its walk (``_walk_price``), as before path "triage"
    existed: the same sketch, costs and family whether that path is priced as always paying
    or as never. Then, where it pays, ``predict`` and ``decision_function`` take it: the
    forced walk's labels where it stops at once, the full model's elsewhere, on the
    threshold's side (scikit-learn's contract)."""
    import copy

    from sklearn.base import clone
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier
    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-2v5")
    X, Xt = (np.asarray(a, dtype=np.float32) for a in (ds.X_train, ds.X_test))
    clf = AttentiveClassifier(
        SVC(gamma="scale"), boundary="calibrated", side="both", delta=0.05, random_state=0
    )
    fitted = {}
    for taken in (False, True):
        _then_full(monkeypatch, taken)
        fitted[taken] = clone(clf).fit(X, ds.y_train)
    never, always = fitted[False], fitted[True]
    assert never.sketch_costs_ == always.sketch_costs_ == "measured"
    kept = [(o.k, o.m, o.family, o.total) for o in (f.sketch_choice_.kept for f in fitted.values())]
    assert kept[0] == kept[1]
    assert never.calibration_.family == always.calibration_.family
    np.testing.assert_array_equal(never.boundary_.lower, always.boundary_.lower)
    assert never.evaluate(Xt).path == "triage"  # (still priced as always paying)
    _then_full(monkeypatch, False)
    assert never.evaluate(Xt).path != "triage"
    _then_full(monkeypatch, True)
    ev = always.evaluate(Xt)
    assert ev.path == "triage"
    walked = copy.copy(always).set_params(early_stopping=True).evaluate(Xt)
    full = always.with_rule("full").evaluate(Xt)
    early = walked.stopped & (walked.n_evaluated == 1)
    assert 0 < early.sum() < len(Xt)
    np.testing.assert_array_equal(ev.labels, np.where(early, walked.labels, full.labels))
    np.testing.assert_array_equal(always.predict(Xt), ev.labels)
    decision = always.decision_function(Xt)
    np.testing.assert_array_equal(
        always.classes_[(decision >= always.threshold_).astype(int)], ev.labels
    )


def test_path_triage_is_weighed_against_the_walk_at_its_first_positions_price():
    """Path "triage" pays where its price over the first position is below the walk's and its
    price over its positions within TRIAGE_MARGIN of full evaluation: a cheaper price over more
    positions does not take it past a walk priced below its first position's."""
    from attentive.evaluator.plan import block_schedule

    def pilot(walk, first, best):
        return pilot_module.Pilot(
            stops=np.ones(4, dtype=np.int64),
            schedule=block_schedule(100),
            walk_cost=walk,
            full_cost=100.0,
            term_ns=1.0,
            then_full_cost=best,
            then_full_positions=8,
            first_position_cost=first,
        )

    margin = 100.0 * pilot_module.TRIAGE_MARGIN
    assert pilot(50.0, 45.0, 40.0).then_full_pays
    assert not pilot(42.0, 45.0, 40.0).then_full_pays  # (below the walk at 8 positions only)
    assert not pilot(99.0, margin + 2.0, margin + 1.0).then_full_pays  # (not below full's margin)
    assert pilot(99.0, margin + 2.0, margin - 1.0).then_full_pays  # (its positions' price is)
    assert not pilot(50.0, None, None).then_full_pays
