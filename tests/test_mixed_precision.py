"""The mixed-precision RBF walk (single-precision ``exp``, certified error band) against the
double-precision walk and the reference (full partial scores + apply_boundary)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import attentive.evaluator.blocked as blocked
import attentive.evaluator.mixed as mixed
from attentive.boundaries import Boundary, curved_boundary, reference_statistics
from attentive.errors import InvalidParameterError
from attentive.evaluation import apply_boundary, evaluate, evaluation_options
from attentive.evaluator.plan import PILOT_MIN, Thresholds, walk_plan
from attentive.terms import decompose
from attentive.walk import make_walk


@pytest.fixture(scope="module")
def rbf():
    X, y = make_classification(
        n_samples=1500, n_features=12, n_informative=6, flip_y=0.05, random_state=5
    )
    # Far from the origin: uncentred augmented products would cancel badly here.
    X = 3.0 * X + 40.0
    X_train, y_train = X[:600], y[:600]
    model = SVC(C=2.0, gamma="scale").fit(X_train, y_train)
    walk = make_walk(decompose(model), X_train, y_train, random_state=0)[0]
    return walk, X_train, y_train, X[600:]


@pytest.fixture
def mixed_calls(monkeypatch):
    """Counts the chunks walked in mixed precision (so a test cannot pass without using it)."""
    calls = []
    original = mixed.walk_rows_mixed

    def counted(*args, **kwargs):
        res = original(*args, **kwargs)
        calls.append(res)
        return res

    monkeypatch.setattr(blocked, "walk_rows_mixed", counted)
    return calls


def _curved(walk, X_train, y_train, delta, side="both"):
    pos = reference_statistics(walk, X_train[y_train == 1])
    neg = reference_statistics(walk, X_train[y_train == 0])
    return curved_boundary(pos, delta, walk.theta_s(0.0), side, upper_stats=neg)


def _assert_same(ev, ref, band=0.0):
    """Same stops, sides and decisions; a stopped walk's score (its estimate from ``S_t``) may
    differ by ``band``, the single-precision walk's certified error (0: exact)."""
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    scale = 1.0 + np.abs(ref.decision).max()
    done = ~ref.stopped
    np.testing.assert_allclose(ev.decision[done], ref.decision[done], rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(
        ev.decision[~done], ref.decision[~done], rtol=1e-9, atol=1e-9 * scale + band
    )


def _band(walk):
    """The mixed walk's error band at the last position is about 1e-6 of Σ|w| (docs/speed.md)."""
    return 1e-5 * float(np.abs(walk.ordered_weights).sum())


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_mixed_walk_matches_double_and_reference(rbf, mixed_calls, side, n_jobs):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.05, side)
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert 0.3 < ref.stopped.mean() < 1.0
    mixed = evaluate(walk, Xt, boundary, theta_s, n_jobs=n_jobs, precision="mixed")
    double = evaluate(walk, Xt, boundary, theta_s, n_jobs=n_jobs, precision="double")
    assert mixed_calls, "the mixed-precision walk was not used"
    _assert_same(mixed, ref, _band(walk))
    _assert_same(mixed, double, _band(walk))
    assert (~mixed.stopped).any()  # some walks never stopped: their totals were recomputed


def _knife_edge_boundary(S, rng, eps):
    """Lower thresholds a hair (``eps``) above or below the lowest walk at every position."""
    n = S.shape[1]
    lowest = S.min(axis=0)
    lower = lowest + np.where(rng.random(n) < 0.5, eps, -eps)
    return Boundary(kind="constant", side="lower", lower=lower, upper=np.full(n, np.inf))


def test_knife_edge_thresholds_fall_back_to_double_precision(rbf, mixed_calls, monkeypatch):
    walk, _, _, Xt = rbf
    S = walk.partial_scores(Xt)
    eps = 1e-9 * np.abs(S).max()  # far below float32's resolution, far above float64's
    boundary = _knife_edge_boundary(S, np.random.default_rng(0), eps)
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.stopped.sum() > 20
    ev = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, precision="mixed")
    assert mixed_calls and sum(r.unsure.size for r in mixed_calls) > 0
    _assert_same(ev, ref, _band(walk))
    # Without the band, single precision alone decides some of these knife edges wrongly.
    monkeypatch.setattr(
        mixed, "rbf_error_band", lambda plan, thr, max_norm, final=None: np.zeros(S.shape[1])
    )
    unsafe = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, precision="mixed")
    assert not np.array_equal(unsafe.n_evaluated, ref.n_evaluated)


def _single_precision_terms(walk, X):
    """The mixed walk's term magnitudes ``|w| exp32(·)`` of every position for ``X`` (positions
    along rows), and the largest centred norm of ``X`` (what the band needs)."""
    source = mixed.RBFTerms32(walk, walk_plan(walk), X)
    H = np.empty((walk.n_terms, len(X)))
    source.block(0, walk.n_terms, H)
    return H, source.max_norm


def test_error_band_bounds_the_single_precision_sums(rbf):
    """|Û_t − U_t| ≤ band_t, with U_t computed independently in extended precision."""
    walk, _, _, Xt = rbf
    plan = walk_plan(walk)
    Xc = Xt[:300]
    n = walk.n_terms
    H, max_norm = _single_precision_terms(walk, Xc)
    U_hat = np.cumsum(H * plan.weight_signs[:, None], axis=0)

    # Extended precision, straight from the definition |w| exp(−γ |x − y|²).
    gamma = np.longdouble(walk.terms.kernel_params["gamma"])
    Y = np.asarray(walk.terms.support_vectors, dtype=np.longdouble)[walk.order]
    Xl = np.asarray(Xc, dtype=np.longdouble)
    d2 = ((Xl[None, :, :] - Y[:, None, :]) ** 2).sum(axis=2)
    w = np.asarray(plan.ordered_weights, dtype=np.longdouble)
    U = np.cumsum(w[:, None] * np.exp(-gamma * d2), axis=0)

    thr = Thresholds(lower=np.zeros(n - 1), upper=None)
    band = mixed.rbf_error_band(plan, thr, max_norm, final=0.0)
    assert band.shape == (n,)
    err = np.abs(U_hat - U).astype(np.float64)
    assert np.all(err <= band[:, None])
    total = float(np.abs(plan.ordered_weights).sum())
    assert err.max() > 1e-10 * total  # single precision is visible: the check can fail
    assert band[-1] < 1e-5 * total  # and the band is tight enough to decide most stops


def test_a_useless_band_falls_back_to_the_double_walk(rbf, mixed_calls, monkeypatch):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.05, "both")
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(
        walk.partial_scores(Xt), boundary, theta_s, walk.offset, walk.terms.classes
    )
    monkeypatch.setattr(
        mixed,
        "rbf_error_band",
        lambda plan, thr, max_norm, final=None: np.full(walk.n_terms, 1e300),
    )
    ev = evaluate(walk, Xt, boundary, theta_s, precision="mixed")
    assert mixed_calls and all(r.unsure.size == 0 for r in mixed_calls)
    _assert_same(ev, ref, _band(walk))


def test_float32_exp_is_within_the_assumed_error():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(-87.0, 0.0, 2_000_000), rng.uniform(-1.0, 5.0, 200_000)])
    a32 = a.astype(np.float32)
    approx = np.exp(a32).astype(np.float64)
    exact = np.exp(a32.astype(np.float64))
    assert np.max(np.abs(approx - exact) / exact) <= mixed.EXP32_RELATIVE_ERROR / 2


def test_pilot_picks_double_precision_when_few_walks_stop(rbf, mixed_calls, monkeypatch):
    monkeypatch.setattr(blocked, "single_exp_pays", lambda: True)
    walk, X_train, y_train, Xt = rbf
    theta_s = walk.theta_s(0.0)
    strict = _curved(walk, X_train, y_train, 1e-9, "lower")
    ref = apply_boundary(walk.partial_scores(Xt), strict, theta_s, walk.offset, walk.terms.classes)
    assert ref.stopped.mean() < 0.5
    _assert_same(evaluate(walk, Xt, strict, theta_s), ref, _band(walk))
    assert not mixed_calls
    loose = _curved(walk, X_train, y_train, 0.2, "both")
    evaluate(walk, Xt, loose, theta_s)
    assert mixed_calls


def test_auto_precision_walks_small_calls_and_slow_single_exp_in_double(
    rbf, mixed_calls, monkeypatch
):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.2, "both")
    theta_s = walk.theta_s(0.0)
    monkeypatch.setattr(blocked, "single_exp_pays", lambda: True)
    evaluate(walk, Xt[: PILOT_MIN - 1], boundary, theta_s, block_size=16)
    assert not mixed_calls
    monkeypatch.setattr(blocked, "single_exp_pays", lambda: False)
    evaluate(walk, Xt, boundary, theta_s)
    assert not mixed_calls
    evaluate(walk, Xt, boundary, theta_s, precision="mixed")  # asked for: used regardless
    assert mixed_calls


@pytest.mark.parametrize("bad", ["single", "float32", 32, True])
def test_bad_precision_is_rejected(rbf, bad):
    walk, X_train, y_train, Xt = rbf
    boundary = _curved(walk, X_train, y_train, 0.2)
    with pytest.raises(
        InvalidParameterError, match="precision must be one of 'auto', 'mixed', 'double'"
    ):
        evaluate(walk, Xt, boundary, walk.theta_s(0.0), precision=bad)
    with pytest.raises(InvalidParameterError, match="precision"):
        with evaluation_options(precision=bad):
            pass


def _single_precision_totals(walk, X):
    """``Û_n − C_n``: the single-precision walk's final sums, recomputed outside the walk."""
    plan = walk_plan(walk)
    H, _ = _single_precision_terms(walk, X)
    return (H * plan.weight_signs[:, None]).sum(axis=0) - plan.centring_sums[-1]


def test_predict_labels_in_mixed_precision_are_exact(rbf, mixed_calls, monkeypatch):
    """Labels only: walks that never stop keep single-precision totals unless θ is too close."""
    monkeypatch.setattr(blocked, "single_exp_pays", lambda: True)
    walk, X_train, y_train, Xt = rbf
    S = walk.partial_scores(Xt)
    # One-sided: about half the walks never stop, so decision values would walk in double.
    boundary = _curved(walk, X_train, y_train, 0.05, "lower")
    ref = apply_boundary(S, boundary, walk.theta_s(0.0), walk.offset, walk.terms.classes)
    survivors = np.flatnonzero(~ref.stopped)
    assert survivors.size > 100
    # θ half-way between one survivor's exact and single-precision totals: only the fallback
    # to double precision near θ can give that survivor the reference's label.
    j = survivors[0]
    approx = _single_precision_totals(walk, Xt[j : j + 1])[0]
    assert approx != S[j, -1]
    theta_s = 0.5 * (approx + S[j, -1])
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)

    labels_only = evaluate(walk, Xt, boundary, theta_s, values=False)
    assert mixed_calls
    np.testing.assert_array_equal(labels_only.labels, ref.labels)
    np.testing.assert_array_equal(labels_only.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(labels_only.stop_side, ref.stop_side)
    # Survivors' values are within the band of the exact ones (not to 1e-9).
    total = float(np.abs(walk.ordered_weights).sum())
    np.testing.assert_allclose(labels_only.decision, ref.decision, rtol=0, atol=1e-5 * total)

    mixed_calls.clear()
    evaluate(walk, Xt, boundary, theta_s)  # with values, the pilot picks double precision here
    assert not mixed_calls

    monkeypatch.setattr(
        mixed, "rbf_error_band", lambda plan, thr, max_norm, final=None: np.zeros(S.shape[1])
    )
    unsafe = evaluate(walk, Xt, boundary, theta_s, values=False)
    assert unsafe.labels[j] != ref.labels[j]


def test_estimator_predict_matches_double_precision(rbf, mixed_calls, monkeypatch):
    from attentive.estimator import AttentiveClassifier

    monkeypatch.setattr(blocked, "single_exp_pays", lambda: True)
    _, X_train, y_train, Xt = rbf
    clf = AttentiveClassifier(SVC(C=2.0, gamma="scale"), boundary="curved", delta=0.05)
    clf.fit(X_train, y_train)
    with evaluation_options(precision="double"):
        expected = clf.predict(Xt)
        expected_decision = clf.decision_function(Xt)
    assert not mixed_calls
    np.testing.assert_array_equal(clf.predict(Xt), expected)
    assert mixed_calls
    np.testing.assert_allclose(clf.decision_function(Xt), expected_decision, rtol=1e-9, atol=1e-9)


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
    # Half the walks stop at t = 3 (so the survivors are gathered into float32), then knife
    # edges: a lower threshold 1e-9 above one surviving walk's partial score at later positions.
    lower = np.full(n, -np.inf)
    lower[2] = np.median(S[:, 2])
    survivors = np.flatnonzero(S[:, 2] >= lower[2])
    pos = np.sort(rng.choice(np.arange(48, n - 1), size=30, replace=False))
    cols = rng.choice(survivors, size=30, replace=False)
    lower[pos] = S[cols, pos] + 1e-9
    boundary = Boundary(kind="constant", side="lower", lower=lower, upper=np.full(n, np.inf))
    theta_s = walk.theta_s(0.0)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    ev = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, precision="mixed", block_size=16)
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    monkeypatch.setattr(
        mixed, "product_relative_error", lambda plan, norms, d: np.zeros(norms.shape)
    )
    unsafe = evaluate(walk, Xt, boundary, theta_s, n_jobs=1, precision="mixed", block_size=16)
    assert not np.array_equal(unsafe.n_evaluated, ref.n_evaluated)
