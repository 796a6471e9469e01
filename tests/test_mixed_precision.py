"""Float32 products with a certified error bound (``precision="auto"``, alias ``"mixed"``:
:class:`attentive.evaluator.sources.rbf_single.RBFSingleSource`, RBF models over more than 64
dense features off any integer grid) against double precision and the reference (full partial
scores + apply_boundary): the same stops, sides and labels; decision values within the band.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import attentive.evaluator.blocked as blocked
from attentive.boundaries import Boundary, curved_boundary, full_boundary, reference_statistics
from attentive.errors import InvalidParameterError
from attentive.evaluation import apply_boundary, evaluate, evaluation_options
from attentive.evaluator.pilot import (
    NOMINAL_CHUNK_ROWS,
    POSITION_NS,
    POSITION_THREADS,
    WALK_ROW_NS,
)
from attentive.evaluator.plan import Thresholds, survival_schedule, walk_plan
from attentive.evaluator.precision import (
    MAX_RELATIVE_TERM_ERROR,
    dot_bounds,
    product_relative_error,
)
from attentive.evaluator.sources import rbf_single
from attentive.evaluator.sources.rbf import HELD_COLUMN_NS, WIDE_FEATURES
from attentive.evaluator.sources.rbf_single import RBFSingleSource
from attentive.evaluator.walk import TRIANGULAR_MAX, whole_sums
from attentive.terms import decompose
from attentive.walk import make_walk


@pytest.fixture(scope="module")
def rbf():
    X, y = make_classification(
        n_samples=1500, n_features=100, n_informative=20, flip_y=0.05, random_state=5
    )
    X = StandardScaler().fit_transform(X)
    X_train, y_train = X[:600], y[:600]
    model = SVC(C=2.0, gamma="scale").fit(X_train, y_train)
    walk = make_walk(decompose(model), X_train, y_train, random_state=0)[0]
    return walk, X_train, y_train, X[600:]


@pytest.fixture
def settled(monkeypatch):
    """The float32 walks' outcomes (so that a test cannot pass without them): what each chunk
    walked in float32 left unsure and to double precision."""
    calls = []
    original = blocked.settle

    def counted(source, X, res, *args, **kwargs):
        calls.append((source.kind, res.unsure.size))
        return original(source, X, res, *args, **kwargs)

    monkeypatch.setattr(blocked, "settle", counted)
    return calls


def _curved(walk, X_train, y_train, delta, side="both"):
    pos = reference_statistics(walk, X_train[y_train == 1])
    neg = reference_statistics(walk, X_train[y_train == 0])
    return curved_boundary(pos, delta, walk.theta_s(0.0), side, upper_stats=neg)


def _band(walk):
    """The float32 products' band on a value: at most ρ Σ|w h| (ρ ≈ 1e-5 here) ≤ 1e-5 Σ|w|."""
    return 1e-5 * float(np.abs(walk.ordered_weights).sum())


def _assert_same(ev, ref, band=0.0):
    """Same stops, sides and labels; decisions to 1e-9, or within ``band``."""
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    scale = 1.0 + np.abs(ref.decision).max()
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9 * scale + band)


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_single_walk_matches_double_and_reference(rbf, settled, side, n_jobs):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.05, side)
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert 0.3 < ref.stopped.mean() < 1.0
    single = evaluate(walk, Xt, boundary, theta_s, n_jobs=n_jobs, precision="mixed", path="walk")
    assert settled and {kind for kind, _ in settled} == {"rbf-single"}
    del settled[:]
    double = evaluate(walk, Xt, boundary, theta_s, n_jobs=n_jobs, precision="double", path="walk")
    assert not settled
    _assert_same(double, ref)
    _assert_same(single, ref, _band(walk))
    _assert_same(single, double, _band(walk))
    assert (~single.stopped).any()  # some walks never stopped: their totals carry the band


def _knife_edge_boundary(S, rng, eps):
    """Lower thresholds a hair (``eps``) above or below the lowest walk at every position."""
    n = S.shape[1]
    lowest = S.min(axis=0)
    lower = lowest + np.where(rng.random(n) < 0.5, eps, -eps)
    return Boundary(kind="constant", side="lower", lower=lower, upper=np.full(n, np.inf))


def test_knife_edge_thresholds_fall_back_to_double_precision(rbf, settled, monkeypatch):
    walk, _, _, Xt = rbf
    S = walk.partial_scores(Xt)
    eps = 1e-9 * np.abs(S).max()  # far below float32's resolution, far above float64's
    boundary = _knife_edge_boundary(S, np.random.default_rng(0), eps)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.stopped.sum() > 20
    ev = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, path="walk")
    assert settled and sum(unsure for _, unsure in settled) > 0
    _assert_same(ev, ref, _band(walk))
    # Without the band, float32 products alone decide some of these knife edges wrongly.
    _without_error_bound(monkeypatch)
    unsafe = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, path="walk")
    assert not np.array_equal(unsafe.n_evaluated, ref.n_evaluated)


def test_error_band_bounds_the_single_precision_sums(rbf):
    """|Û_t − U_t| ≤ ρ(x) A_t + allowance_t, with U_t computed independently in extended
    precision from the definition."""
    walk, _, _, Xt = rbf
    plan = walk_plan(walk)
    Xc = Xt[:200]
    n = walk.n_terms
    source = RBFSingleSource(walk, plan, Xc)
    H = np.empty((n, len(Xc)))
    source.block(0, n, H)
    U_hat = np.cumsum(H * plan.weight_signs[:, None], axis=0)
    A = np.cumsum(H, axis=0)

    gamma = np.longdouble(walk.terms.kernel_params["gamma"])
    Y = np.asarray(walk.terms.support_vectors, dtype=np.longdouble)[walk.order]
    Xl = np.asarray(Xc, dtype=np.longdouble)
    d2 = ((Xl[None, :, :] - Y[:, None, :]) ** 2).sum(axis=2)
    w = np.asarray(plan.ordered_weights, dtype=np.longdouble)
    U = np.cumsum(w[:, None] * np.exp(-gamma * d2), axis=0)

    thr = Thresholds(lower=np.zeros(n - 1), upper=None)
    allowance = source.allowance(thr, 0.0)
    assert allowance.shape == (n,)
    band = source.relative_error()[None, :] * A + allowance[:, None]
    err = np.abs(U_hat - U).astype(np.float64)
    assert np.all(err <= band)
    total = float(np.abs(plan.ordered_weights).sum())
    assert err.max() > 1e-10 * total  # single precision is visible: the check can fail
    assert band[-1].max() < 1e-5 * total  # and the band is tight enough to decide most stops
    # The walk's band, split by support vector: base(x) A_t + per_norm(x) Σ_{k≤t} |y_k| |w| K̂_k.
    base, per_norm, norms = source.band_split()
    np.testing.assert_allclose(norms, np.sqrt((Y.astype(np.float64) ** 2).sum(axis=1)))
    weighted = np.cumsum(H * norms[:, None], axis=0)
    split = base[None, :] * A + per_norm[None, :] * weighted + allowance[:, None]
    assert np.all(err <= split)
    assert np.all(split <= band * (1 + 1e-12))
    assert (split[-1] < 0.9 * band[-1]).all()  # tighter: the support vectors' norms differ


@pytest.mark.parametrize("budget", [None, 37])
def test_the_float32_totals_are_within_their_band(rbf, budget):
    """Full and budgeted evaluation's totals from the float32 source (products, exponents,
    ``exp`` and sums all in float32): |Û_B − U_B| ≤ band, with U_B computed independently in
    extended precision from the definition; the float32 error is visible, and the band tight."""
    walk, _, _, Xt = rbf
    plan = walk_plan(walk)
    n = walk.n_terms
    B = n if budget is None else budget
    X = np.asarray(Xt[:300], dtype=np.float32)
    U_hat, band = RBFSingleSource.tile_totals(walk, plan, X, B, final=0.0)

    gamma = np.longdouble(walk.terms.kernel_params["gamma"])
    Y = np.asarray(walk.terms.support_vectors, dtype=np.longdouble)[walk.order][:B]
    Xl = np.asarray(X, dtype=np.longdouble)
    d2 = ((Xl[None, :, :] - Y[:, None, :]) ** 2).sum(axis=2)
    w = np.asarray(plan.ordered_weights, dtype=np.longdouble)[:B]
    U = (w[:, None] * np.exp(-gamma * d2)).sum(axis=0)
    err = np.abs(U_hat - U).astype(np.float64)
    assert np.all(err <= band)
    total = float(np.abs(plan.ordered_weights[:B]).sum())
    assert err.max() > 1e-9 * total  # float32 is visible: the check can fail
    assert band.max() < 1e-4 * total  # and the band is tight enough to decide most labels


def test_a_row_too_far_for_the_band_walks_in_double_precision(rbf, settled, monkeypatch):
    """Rows whose float32 products could be off by more than the band allows (about 1e-3 of a
    term) are not held by the float32 source: the router takes the double-precision one."""
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.05, "both")
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(
        walk.partial_scores(Xt), boundary, theta_s, walk.offset, walk.terms.classes
    )
    monkeypatch.setattr(
        rbf_single,
        "product_relative_error",
        lambda g, y, w, x, d, e=0.0, **kw: np.full(np.shape(x), 1e-2),
    )
    ev = evaluate(walk, Xt, boundary, theta_s, path="walk")
    assert not settled  # nothing walked in float32
    _assert_same(ev, ref)


def _far_rows(Xt, rows, scale=300.0):
    """``Xt`` with ``rows`` moved far out (a rare, long row): their float32 products' bound is
    above the band's limit, the other rows' far below it."""
    X = np.array(Xt, dtype=np.float32)
    X[rows] *= scale
    return X


def _count_exact_totals(monkeypatch) -> list[int]:
    """The number of rows of each call of the double-precision source's totals (what full
    evaluation sums again), recorded in the list returned."""
    calls = []
    exact = RBFSingleSource.exact.tile_totals.__func__

    def counted(cls, walk_, plan_, Xd, budget, final=None):
        calls.append(len(Xd))
        return exact(cls, walk_, plan_, Xd, budget, final)

    monkeypatch.setattr(RBFSingleSource.exact, "tile_totals", classmethod(counted))
    return calls


def test_full_evaluation_recomputes_only_the_rows_without_a_band(rbf, monkeypatch):
    """A tile with a few rows whose float32 products could be off by more than the band allows:
    those rows (and any whose label the band leaves unsure) are recomputed in double precision,
    the rest keep their float32 totals; labels are double precision's and scikit-learn's."""
    walk, X_train, y_train, Xt = rbf
    far = np.array([3, 50, 200])
    X = _far_rows(Xt[:400], far)
    plan = walk_plan(walk)
    rho = RBFSingleSource(walk, plan, X).relative_error()
    assert np.isinf(rho[far]).all() and np.isfinite(np.delete(rho, far)).all()
    recomputed = _count_exact_totals(monkeypatch)
    boundary = _curved(walk, X_train, y_train, 0.05)
    theta_s = walk.theta_s(0.0)
    ev = evaluate(walk, X, boundary, theta_s, path="full", n_jobs=1, precision="mixed")
    assert 0 < len(far) <= sum(recomputed) < len(X) // 4  # not the whole tile
    S = walk.partial_scores(X)
    ref = apply_boundary(S, full_boundary(walk.n_terms), theta_s, walk.offset, walk.terms.classes)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=_band(walk))


def test_a_walk_sets_rows_without_a_band_aside_for_double_precision(rbf, settled):
    """Rows a float32 source holds without a band would be unsure at every crossing: the chunk
    walks in float32 without them, and they are walked again in double precision with the
    rows it left unsure, so every stop is the reference's."""
    walk, X_train, y_train, Xt = rbf
    far = np.array([3, 50, 200])
    X = _far_rows(Xt[:400], far)
    boundary = _curved(walk, X_train, y_train, 0.05)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(walk.partial_scores(X), boundary, theta_s, walk.offset, walk.terms.classes)
    ev = evaluate(walk, X, boundary, theta_s, path="walk", n_jobs=1, precision="mixed")
    # One chunk, walked in float32, with at least the three far rows left to double precision
    # (not the whole chunk).
    assert [kind for kind, _ in settled] == ["rbf-single"]
    assert len(far) <= settled[0][1] < len(X) // 4
    _assert_same(ev, ref, band=_band(walk))  # the scores of walks that never stop: float32's


@pytest.mark.parametrize("on_mass, widen", [(False, 10.0), (True, 30.0)])
def test_the_pilot_finds_the_rows_a_certified_walk_leaves_to_double_precision(rbf, on_mass, widen):
    """``walked_again`` (which rows a certified walk would leave unsure, and which end within
    their band of the label's threshold), from the exact walks alone, against a float32 walk
    of the same rows: rows without a band, rows whose band (widened here, so that many are
    unsure) leaves a crossing unsure, and a rule on the running mass (its κ widens the band)."""
    from attentive.evaluator.pilot import walked_again
    from attentive.evaluator.plan import block_schedule, thresholds
    from attentive.evaluator.sources import build_source
    from attentive.evaluator.walk import walk_rows

    walk, X_train, y_train, Xt = rbf
    X = _far_rows(np.asarray(Xt[:300], dtype=np.float32), np.array([3, 50]))
    plan = walk_plan(walk)
    thr = thresholds(plan, _curved(walk, X_train, y_train, 0.05))
    if on_mass:
        # κ varying within a block: the band takes the block's widest.
        kappa = np.random.default_rng(0).uniform(-0.3, 0.3, size=walk.n_terms - 1)
        thr = Thresholds(thr.lower, thr.upper, mass=kappa)
    final = float(walk.theta_s(0.0) + plan.centring_sums[-1])
    # Blocks long enough that the band (the running mass at a block's end) differs from one
    # taken position by position.
    schedule = block_schedule(walk.n_terms, 20)

    def single(widen):
        source = build_source(walk, plan, X, "single")
        assert isinstance(source, RBFSingleSource)
        # A band wide enough to leave many walks unsure (the walk's, split by support vector).
        source.rho, source.base = source.rho * widen, source.base * widen
        source.per_norm = source.per_norm * widen
        return source

    def compare(thr, widen):
        exact = build_source(walk, plan, X, "double")
        sums = whole_sums(exact, thr, mass=True)
        again, ends = walked_again(single(widen), sums, thr, final, schedule.edges)
        res = walk_rows(single(widen), schedule, thr, final)
        np.testing.assert_array_equal(np.flatnonzero(again), np.sort(res.unsure))
        near = res.rows[np.abs(res.U - final) <= res.band]
        np.testing.assert_array_equal(np.flatnonzero(ends), np.sort(near))
        return again, ends

    again, _ = compare(thr, widen)
    assert again[[3, 50]].all() and 10 <= again.sum() <= len(X) - 50  # not only far rows, not all
    # Walks that never stop: those ending within their band of the threshold sum U_n again.
    never = Thresholds(np.full(walk.n_terms - 1, -1e300), None, mass=thr.mass)
    again, ends = compare(never, 100.0)
    assert np.flatnonzero(again).tolist() == [3, 50] and 0 < ends.sum() < len(X) - 2


def test_the_pilot_prices_what_a_certified_walk_leaves_to_double_precision(rbf):
    """Reference rows with a row the float32 source holds without a band: the call's chunks
    walk in float32 and walk such rows (and the rows their band leaves unsure) again in double
    precision, so the pilot prices the walk in float32 terms plus those rows' share of a walk
    in double precision (its preparation included), and the rows that end within their band
    of the threshold their share of a full evaluation in double precision."""
    from attentive.evaluator import evaluate_blocked
    from attentive.evaluator.pilot import walked_again
    from attentive.evaluator.plan import thresholds
    from attentive.evaluator.sources import build_source
    from attentive.evaluator.sources.rbf import RBFDoubleSource

    walk, X_train, y_train, Xt = rbf
    X = np.asarray(Xt[:400], dtype=np.float32)
    theta_s = walk.theta_s(0.0)
    plan = walk_plan(walk)
    clean = X[:128]
    loose = _far_rows(clean, np.array([3]))
    many = _far_rows(clean, np.arange(3, 128, 10))  # 13 of 128: a chunk's redone rows many
    single = build_source(walk, plan, loose, "single")
    double = build_source(walk, plan, loose, "double")
    assert isinstance(single, RBFSingleSource) and isinstance(double, RBFDoubleSource)
    assert np.isinf(single.relative_error()).sum() == 1
    assert double.term_ns > 1.3 * single.term_ns and double.prep_ns > single.prep_ns
    pilots, boundaries = [], []
    references = (clean, loose, many)
    for reference in references:
        boundary = _curved(walk, X_train, y_train, 0.05)  # a boundary of its own: its own pilot
        evaluate_blocked(walk, X, boundary, theta_s, reference=reference, n_jobs=1)
        (pilot,) = plan.pilots(boundary).by_kind.values()
        pilots.append(pilot)
        boundaries.append(boundary)
    # Nearly the same stops (one row of 128 moved far out).
    assert abs(pilots[1].stops.mean() - pilots[0].stops.mean()) < 0.05 * walk.n_terms
    n = walk.n_terms
    full_ns = single.full_term_ns
    assert full_ns < single.term_ns

    def priced(source, pilot):
        """The walk per row in ``source``'s terms, in ns: its blocks, and each position up to
        the longest walk at a fixed cost per chunk of rows (one running sum, two with a band),
        paid as POSITION_THREADS threads pay it, one after the other, and a row's own cost (and
        what holding a row of these 100 columns costs the walk: HELD_COLUMN_NS a column beyond
        the 64th)."""
        _, cost = survival_schedule(
            pilot.stops, n, source.row_cost, term_cost=source.term_cost, max_block=source.max_block
        )
        sums = 2 if source.certified else 1
        per_chunk = POSITION_THREADS * POSITION_NS * sums * pilot.stops.max()
        held = HELD_COLUMN_NS * (source.a.columns.n_columns - WIDE_FEATURES)
        assert source.held_ns == held > 0
        return cost * source.term_ns + per_chunk / NOMINAL_CHUNK_ROWS + WALK_ROW_NS + held

    final = float(theta_s + plan.centring_sums[-1])
    shares = []
    for reference, boundary, pilot in zip(references, boundaries, pilots, strict=True):
        thr = thresholds(plan, boundary)
        sums = whole_sums(build_source(walk, plan, reference, "double"), thr, mass=True)
        again, ends = walked_again(
            build_source(walk, plan, reference, "single"), sums, thr, final, pilot.schedule.edges
        )
        _, in_double = survival_schedule(
            pilot.stops, n, double.row_cost, term_cost=double.term_cost, max_block=double.max_block
        )
        redone = again.mean() * (in_double * double.term_ns + double.prep_ns)
        redone += ends.mean() * (n * double.term_ns + double.prep_ns)  # U_n again
        if again.mean() * NOMINAL_CHUNK_ROWS > TRIANGULAR_MAX:  # that walk's positions
            longest = pilot.stops[again].max()
            redone += POSITION_THREADS * POSITION_NS * longest / NOMINAL_CHUNK_ROWS
        expected = (priced(single, pilot) + redone) / full_ns
        assert pilot.walk_cost == pytest.approx(expected, rel=1e-12)
        shares.append(again.mean())
    assert shares[1] * 128 >= 1 and shares[1] * NOMINAL_CHUNK_ROWS <= TRIANGULAR_MAX
    assert shares[2] * NOMINAL_CHUNK_ROWS > TRIANGULAR_MAX  # both ways of pricing the redone
    assert pilots[2].walk_cost > pilots[1].walk_cost > pilots[0].walk_cost


@pytest.mark.parametrize("bad", ["float32", 32, True])
def test_bad_precision_is_rejected(rbf, bad):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.2)
    with pytest.raises(
        InvalidParameterError, match="precision must be one of 'auto', 'single', 'double', 'mixed'"
    ):
        evaluate(walk, Xt, boundary, walk.theta_s(0.0), precision=bad)
    with pytest.raises(InvalidParameterError, match="precision"):
        with evaluation_options(precision=bad):
            pass


def _without_error_bound(monkeypatch):
    """Float32 products taken as exact (no error bound): a walk that trusts them."""
    monkeypatch.setattr(
        rbf_single,
        "product_relative_error",
        lambda g, y, w, x, d, e=0.0, **kw: np.zeros(np.shape(x)),
    )
    monkeypatch.setattr(  # and the walk's band, split by support vector
        rbf_single,
        "split_relative_error",
        lambda g, y, w, x, d, e=0.0: (np.zeros(np.shape(x)), np.zeros(np.shape(x))),
    )


def test_labels_near_theta_are_decided_in_double_precision(rbf, settled, monkeypatch):
    """Walks that never stop keep their float32 totals unless θ is within their band."""
    walk, X_train, y_train, Xt = rbf
    S = walk.partial_scores(Xt)
    boundary = _curved(walk, X_train, y_train, 0.05, "lower")
    ref = apply_boundary(S, boundary, walk.theta_s(0.0), walk.offset, walk.terms.classes)
    survivors = np.flatnonzero(~ref.stopped)
    assert survivors.size > 100
    # θ half-way between one survivor's exact total and the float32 total a walk trusting its
    # products gives it: only the fallback to double precision near θ can give that survivor
    # the reference's label. The float32 total is read off such a walk (θ far from it), not
    # recomputed apart: its rounding depends on the BLAS kernel and on the product's shape
    # (one row against the walk's chunk of rows).
    j = survivors[0]
    far = float(S[j, -1]) + 1e3
    with monkeypatch.context() as patch:
        _without_error_bound(patch)
        trusting = evaluate(walk, Xt, boundary, far, path="walk")
    assert not trusting.stopped[j]
    approx = trusting.decision[j] - walk.offset
    assert approx != S[j, -1]
    theta_s = 0.5 * (approx + S[j, -1])
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert not ref.stopped[j]

    ev = evaluate(walk, Xt, boundary, theta_s, path="walk")
    assert settled
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=0, atol=_band(walk))
    # Full evaluation decides the same labels the same way.
    full = evaluate(walk, Xt, boundary, theta_s, path="full")
    np.testing.assert_array_equal(full.labels[j], S[j, -1] >= theta_s)

    _without_error_bound(monkeypatch)
    unsafe = evaluate(walk, Xt, boundary, theta_s, path="walk")
    # The boundary's thresholds do not depend on θ: the same walks, the same float32 total.
    np.testing.assert_array_equal(unsafe.n_evaluated, trusting.n_evaluated)
    assert unsafe.decision[j] - walk.offset == approx
    assert unsafe.labels[j] != ref.labels[j]


def test_estimator_predict_matches_double_precision(rbf, settled):
    from attentive.estimator import AttentiveClassifier

    _, X_train, y_train, Xt = rbf
    clf = AttentiveClassifier(
        SVC(C=2.0, gamma="scale"), boundary="curved", delta=0.05, early_stopping=True
    )
    clf.fit(X_train, y_train)
    with evaluation_options(precision="double"):
        expected = clf.predict(Xt)
        expected_decision = clf.decision_function(Xt)
    assert not settled
    np.testing.assert_array_equal(clf.predict(Xt), expected)
    assert settled
    np.testing.assert_allclose(
        clf.decision_function(Xt), expected_decision, rtol=1e-9, atol=_band(clf.walk_)
    )


def test_float32_products_give_the_double_walks_stops_on_knife_edges(monkeypatch):
    """Many features: the product in float32 under a per-row band. Thresholds 1e-9 from walks
    are decided as in double precision; without the band, float32 alone gets some wrong."""
    X, y = make_classification(n_samples=900, n_features=120, n_informative=20, random_state=2)
    X = X + 5.0
    model = SVC(gamma="scale").fit(X[:500], y[:500])
    walk = make_walk(decompose(model), X[:500], y[:500], random_state=0)[0]
    Xt = X[500:]
    S = walk.partial_scores(Xt)
    n = walk.n_terms
    rng = np.random.default_rng(0)
    # Half the walks stop at t = 3 (so the survivors are gathered), then knife edges: a lower
    # threshold 1e-9 above one surviving walk's partial score at later positions.
    lower = np.full(n, -np.inf)
    lower[2] = np.median(S[:, 2])
    survivors = np.flatnonzero(S[:, 2] >= lower[2])
    pos = np.sort(rng.choice(np.arange(48, n - 1), size=30, replace=False))
    cols = rng.choice(survivors, size=30, replace=False)
    lower[pos] = S[cols, pos] + 1e-9
    boundary = Boundary(kind="constant", side="lower", lower=lower, upper=np.full(n, np.inf))
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    kwargs = {"n_jobs": 1, "precision": "mixed", "block_size": 16, "path": "walk"}
    ev = evaluate(walk, Xt, boundary, theta_s, **kwargs)
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    _without_error_bound(monkeypatch)
    unsafe = evaluate(walk, Xt, boundary, theta_s, **kwargs)
    assert not np.array_equal(unsafe.n_evaluated, ref.n_evaluated)


@pytest.fixture(scope="module")
def quiet_columns():
    """An RBF model over 100 standardised features of which 20 barely vary in training (every
    support vector is small there), and test rows of which some are far out on those 20
    columns: a rare stroke's pixels after a StandardScaler."""
    rng = np.random.default_rng(11)
    X, y = make_classification(
        n_samples=1400, n_features=100, n_informative=20, flip_y=0.05, random_state=7
    )
    X = StandardScaler().fit_transform(X)
    quiet = np.arange(80, 100)
    X[:, quiet] *= 1e-3
    X_train, y_train, Xt = X[:600], y[:600], np.array(X[600:], dtype=np.float32)
    model = SVC(C=2.0, gamma="scale").fit(X_train, y_train)
    walk = make_walk(decompose(model), X_train, y_train, random_state=0)[0]
    far = np.arange(0, 400, 20)
    Xt[np.ix_(far, quiet)] = rng.choice([-1.0, 1.0], size=(far.size, quiet.size)) * 200.0
    return walk, X_train, y_train, Xt, far


def test_holders_bound_gives_rows_far_out_on_quiet_columns_a_band(quiet_columns):
    """Rows far out only where every support vector is small: Cauchy–Schwarz's bound leaves
    them no band; Hölder's (the row against each column's largest support-vector value) gives
    them one, and every term is still within it against extended precision."""
    walk, _, _, Xt, far = quiet_columns
    plan = walk_plan(walk)
    X = Xt[:400]
    source = RBFSingleSource(walk, plan, X)
    rho = source.relative_error()
    a = rbf_single.rbf_arrays(walk, plan)
    norms2 = np.einsum("ij,ij->i", X.astype(np.float64), X.astype(np.float64))
    by_cauchy_schwarz = product_relative_error(
        a.gamma, a.sv_norm, a.log_w_max, np.sqrt(norms2), X.shape[1]
    )
    assert (by_cauchy_schwarz[far] > MAX_RELATIVE_TERM_ERROR).all()  # no band by the first
    assert np.isfinite(rho[far]).all() and (rho[far] <= MAX_RELATIVE_TERM_ERROR).all()
    assert np.all(rho[far] < by_cauchy_schwarz[far] / 10)

    n = walk.n_terms
    H = np.empty((n, len(X)))
    source.block(0, n, H)
    gamma = np.longdouble(walk.terms.kernel_params["gamma"])
    Y = np.asarray(walk.terms.support_vectors, dtype=np.longdouble)[walk.order]
    Xl = np.asarray(X, dtype=np.longdouble)
    d2 = ((Xl[None, :, :] - Y[:, None, :]) ** 2).sum(axis=2)
    exact = np.abs(np.asarray(plan.ordered_weights, dtype=np.longdouble))[:, None] * np.exp(
        -gamma * d2
    )
    err = np.abs(H - exact).astype(np.float64)
    assert np.all(err <= rho[None, :] * H)
    # The walk's bound split by support vector: every term within its own (base + per_norm
    # |y|), the rows Hölder's bound gave a band keeping it for every term.
    base, per_norm, norms = source.band_split()
    assert np.all(err <= (base[None, :] + per_norm[None, :] * norms[:, None]) * H)
    np.testing.assert_array_equal(base[far], rho[far])
    assert not per_norm[far].any()
    near = np.setdiff1d(np.arange(len(X)), far)
    assert np.all(per_norm[near] > 0) and np.all(base[near] < rho[near])


def test_dot_bounds_are_above_every_support_vectors_sum_and_close_to_the_largest():
    """``dot_bounds`` against the exact ``max_y Σ|x_i 2γy_i|`` (extended precision), with
    float32 rows and sums that would round down."""
    rng = np.random.default_rng(4)
    Y = rng.normal(size=(50, 300)) * rng.uniform(1e-3, 10, size=300)
    X = (rng.normal(size=(40, 300)) * rng.uniform(1e-3, 1e3, size=300)).astype(np.float32)
    scaled = 2.0 * 0.01 * Y
    col_max = np.nextafter(np.abs(scaled).max(axis=0).astype(np.float32), np.float32(np.inf))
    got = dot_bounds(X, col_max)
    Xl, Sl = np.asarray(X, dtype=np.longdouble), np.asarray(scaled, dtype=np.longdouble)
    per_sv = np.abs(Xl) @ np.abs(Sl).T
    holder = np.abs(Xl) @ np.abs(Sl).max(axis=0)
    assert np.all(got >= holder) and np.all(holder >= per_sv.max(axis=1))
    assert np.all(got <= holder * (1 + 1e-4))  # and not much above it
    # An overflowing sum gives an infinite bound (Cauchy–Schwarz's then applies), not a wrong one.
    X[0, :] = 3e38
    assert np.isinf(dot_bounds(X, col_max)[0])


def test_full_evaluation_of_rows_far_out_on_quiet_columns_keeps_them_in_float32(
    quiet_columns, monkeypatch
):
    """Those rows keep their float32 totals (no double-precision recompute of them), and the
    labels are scikit-learn's."""
    walk, _, _, Xt, far = quiet_columns
    X = Xt[:400]
    recomputed = _count_exact_totals(monkeypatch)
    theta_s = walk.theta_s(0.0)
    ev = evaluate(walk, X, full_boundary(walk.n_terms), theta_s, path="full", n_jobs=1)
    assert sum(recomputed) < far.size  # the far rows were not all recomputed
    S = walk.partial_scores(X)
    ref = apply_boundary(S, full_boundary(walk.n_terms), theta_s, walk.offset, walk.terms.classes)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=_band(walk) * 10)


def test_rows_left_unsure_in_many_tiles_are_recomputed_together(rbf, monkeypatch):
    """Full evaluation over several tiles: the rows without a band in each are summed again in
    double precision in one go after the tiles (a product per tile repacked every support
    vector for a handful of rows), with the labels of double precision."""
    walk, _, _, Xt = rbf
    X = _far_rows(Xt[:400], np.array([3, 150, 300]))
    calls = _count_exact_totals(monkeypatch)
    theta_s = walk.theta_s(0.0)
    boundary = full_boundary(walk.n_terms)
    ev = evaluate(walk, X, boundary, theta_s, path="full", n_jobs=1, chunk_size=64)
    assert len(calls) == 1 and calls[0] >= 3  # seven tiles, one recompute
    with evaluation_options(precision="double"):
        ref = evaluate(walk, X, boundary, theta_s, path="full", n_jobs=1)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=_band(walk))


@pytest.fixture(scope="module")
def mnist_scaled():
    """MNIST 2 vs 5 (the project's t10k files) behind a StandardScaler, as users prepare it:
    the scaled test rows and the fitted walk; some rows are far out on rare pixels."""
    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-2v5")
    scaler = StandardScaler().fit(np.asarray(ds.X_train, dtype=np.float64))
    X_train = scaler.transform(np.asarray(ds.X_train, dtype=np.float64))
    y_train = np.asarray(ds.y_train)
    model = SVC(gamma="scale").fit(X_train, y_train)
    walk = make_walk(decompose(model), X_train, y_train, random_state=0)[0]
    return walk, scaler.transform(np.asarray(ds.X_test, dtype=np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_holders_bound_on_scaled_mnist_rows_holds_against_extended_precision(mnist_scaled, dtype):
    """The rows of scaled MNIST whose float32 products Cauchy–Schwarz leaves without a band,
    as float32 rows and as float64 rows the source rounds to float32: Hölder's bound gives
    some of them one, and their terms and their float32 totals are within it against extended
    precision."""
    walk, X_all = mnist_scaled
    plan = walk_plan(walk)
    X_all = X_all.astype(dtype)
    a = rbf_single.rbf_arrays(walk, plan)
    X64 = X_all.astype(np.float64)
    by_cauchy_schwarz = product_relative_error(
        a.gamma, a.sv_norm, a.log_w_max, np.sqrt(np.einsum("ij,ij->i", X64, X64)), X64.shape[1]
    )
    loose = np.flatnonzero(by_cauchy_schwarz > MAX_RELATIVE_TERM_ERROR)
    assert loose.size >= 3
    # A tile as full evaluation holds it: ordinary rows with the loose ones among them.
    rows = np.union1d(np.arange(200), loose[:12])
    X = X_all[rows]
    at = np.flatnonzero(np.isin(rows, loose))  # the loose rows' places in the tile
    source = RBFSingleSource(walk, plan, X)
    rho = source.relative_error()[at]
    ok = np.isfinite(rho)
    assert ok.any()  # some of them get a band now (1 of 7 on this model; 8 vs rest: 5 of 6)
    n = walk.n_terms
    H = np.empty((n, len(X)))
    source.block(0, n, H)
    H = H[:, at]
    gamma = np.longdouble(walk.terms.kernel_params["gamma"])
    Y = np.asarray(walk.terms.support_vectors, dtype=np.longdouble)[walk.order]
    Xl = np.asarray(X[at], dtype=np.longdouble)
    d2 = ((Xl[None, :, :] - Y[:, None, :]) ** 2).sum(axis=2)
    w = np.asarray(plan.ordered_weights, dtype=np.longdouble)
    terms = np.abs(w)[:, None] * np.exp(-gamma * d2)
    err = np.abs(H[:, ok] - terms[:, ok]).astype(np.float64)
    assert np.all(err <= rho[None, ok] * H[:, ok])
    assert (terms[:, ok] > 1e-30).any()  # not only terms that vanish
    U_hat, band = RBFSingleSource.tile_totals(walk, plan, X, n, final=0.0)
    U_hat, band = U_hat[at], band[at]
    U = (w[:, None] * np.exp(-gamma * d2)).sum(axis=0)
    assert np.isfinite(band[ok]).all()
    assert np.all(np.abs(U_hat[ok] - U[ok]).astype(np.float64) <= band[ok])


def test_rows_far_from_the_origin_get_no_band_rather_than_a_wrong_one():
    """Rows 1,000 away from the origin (the fixture's data shifted: the same model): a float32
    product's error can be more than its exponent's bound holds for (``e^e − 1 ≤ 1.001 e``
    needs ``e`` ≤ 1e-3), where ``1.01 ρ / (1 − ρ)`` turned negative and every row had a
    (negative) band. They get none now: walks and full evaluation give the reference's stops
    and labels (in double precision)."""
    from attentive.evaluator.precision import split_relative_error, term_relative_error

    X, y = make_classification(
        n_samples=1500, n_features=100, n_informative=20, flip_y=0.05, random_state=5
    )
    X = StandardScaler().fit_transform(X) + 1000.0
    X_train, y_train, Xt = X[:600], y[:600], X[600:]
    model = SVC(C=2.0, gamma="scale").fit(X_train, y_train)
    walk = make_walk(decompose(model), X_train, y_train, random_state=0)[0]
    a = rbf_single.rbf_arrays(walk, walk_plan(walk))
    norms = np.linalg.norm(Xt, axis=1)
    rho = product_relative_error(a.gamma, a.sv_norm, a.log_w_max, norms, Xt.shape[1])
    assert np.isinf(rho).all()  # no band (it was negative)
    base, per_norm = split_relative_error(a.gamma, a.sv_norm, a.log_w_max, norms, Xt.shape[1])
    assert np.isinf(base).all() and not per_norm.any()
    assert term_relative_error(np.array([1e-3])) > 0 and np.isinf(term_relative_error(2e-3))
    S = walk.partial_scores(Xt)
    boundary = _curved(walk, X_train, y_train, 0.05)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.stopped.any() and not ref.stopped.all()
    for path in ("walk", "full"):
        ev = evaluate(walk, Xt, boundary, theta_s, path=path, n_jobs=1)
        full = apply_boundary(
            S, full_boundary(walk.n_terms), theta_s, walk.offset, walk.terms.classes
        )
        # Stops and labels exactly; values to 1e-7 (both sides in double precision, whose
        # exponents −γ(|x|² − 2x·y + |y|²) lose ~1e-8 to cancellation at |x| ~ 1e4).
        _assert_same(ev, ref if path == "walk" else full, band=1e-7)
    np.testing.assert_array_equal(
        evaluate(walk, Xt, full_boundary(walk.n_terms), theta_s, path="full").labels,
        model.predict(Xt),
    )
