"""How examples were evaluated (``Evaluation.path``), how "auto" chooses between walking and full
evaluation, float32 input, and the estimator's ``precision``.

Independent computations: the reference walk over every partial score
(:func:`attentive.evaluation.apply_boundary`), scikit-learn's own ``decision_function`` and
``predict``, and each term's value from scikit-learn's ``rbf_kernel``.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import skops.io as sio
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from attentive import AttentiveClassifier, InvalidParameterError
from attentive.boundaries import Boundary, budget_boundary, full_boundary
from attentive.data import load_dataset
from attentive.evaluation import apply_boundary, evaluate, evaluation_options
from attentive.evaluator import evaluate_blocked
from attentive.evaluator.pilot import PILOT_MIN, WALK_MARGIN, pilot_rows
from attentive.evaluator.plan import walk_plan
from attentive.models import load_model, save_model
from attentive.terms import decompose
from attentive.walk import make_walk


@pytest.fixture(scope="module")
def rbf():
    """An RBF model over 8 features and 1,000 rows to evaluate (enough for a pilot)."""
    X, y = make_classification(
        n_samples=1400, n_features=8, n_informative=5, flip_y=0.05, random_state=3
    )
    model = SVC(gamma=0.3).fit(X[:400], y[:400])
    walk = make_walk(decompose(model), X[:400], y[:400], random_state=0)[0]
    return model, walk, X[400:], X[:400], y[:400]


def _quantiles(S, q_low, q_high):
    """Constant thresholds at quantiles of the walks' values (off them by far more than
    rounding)."""
    n = S.shape[1]
    eps = 1e-7 * (1.0 + np.abs(S).max())
    return Boundary(
        "constant",
        "both",
        np.full(n, np.quantile(S, q_low) + eps),
        np.full(n, np.quantile(S, q_high) + eps),
    )


def _same_as(ev, ref, rtol=1e-9):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=rtol, atol=rtol)


def test_every_path_says_which_it_is(rbf):
    model, walk, X, _, _ = rbf
    S = walk.partial_scores(X)
    theta_s = walk.theta_s(0.0)
    boundary = _quantiles(S, 0.2, 0.8)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.path == "reference" and 0.2 < ref.stopped.mean() < 0.95

    walked = evaluate_blocked(walk, X, boundary, theta_s, path="walk")
    assert walked.path == "walk"
    _same_as(walked, ref)

    # "full": every term, the full model's decisions, whatever the rule.
    for ev in (
        evaluate_blocked(walk, X, boundary, theta_s, path="full"),
        evaluate_blocked(walk, X, full_boundary(walk.n_terms), theta_s),
        evaluate_blocked(walk, X, full_boundary(walk.n_terms), theta_s, path="walk"),
    ):
        assert ev.path == "full"
        assert not ev.stopped.any() and (ev.n_evaluated == walk.n_terms).all()
        np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(ev.labels, model.predict(X))

    budget = budget_boundary(walk.n_terms, 20)
    ev = evaluate_blocked(walk, X, budget, theta_s, path="auto")
    assert ev.path == "budget"
    _same_as(ev, apply_boundary(S, budget, theta_s, walk.offset, walk.terms.classes))
    assert apply_boundary(S, budget, theta_s).path == "budget"

    with pytest.raises(InvalidParameterError, match="path must be one of 'auto', 'walk', 'full'"):
        evaluate_blocked(walk, X, boundary, theta_s, path="fast")


def test_auto_evaluates_in_full_where_the_pilot_predicts_walking_costs_more(rbf):
    """A rule that stops almost nothing: walking would cost every term and more (a row held
    through each block), so "auto" evaluates every term — the full model's decisions — and says
    so. The pilot's stops are the reference's on the pilot's rows."""
    model, walk, X, _, _ = rbf
    S = walk.partial_scores(X)
    theta_s = walk.theta_s(0.0)
    boundary = _quantiles(S, 0.0005, 0.9995)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert 0 < ref.stopped.mean() < 0.05
    assert X.shape[0] >= PILOT_MIN

    ev = evaluate_blocked(walk, X, boundary, theta_s, path="auto")
    assert ev.path == "full"
    assert not ev.stopped.any() and (ev.n_evaluated == walk.n_terms).all()
    np.testing.assert_allclose(ev.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ev.labels, model.predict(X))

    (pilot,) = walk_plan(walk).pilots(boundary).by_kind.values()
    assert not pilot.walk_pays and pilot.walk_cost > pilot.full_cost
    # The evaluation carries the pilot's price of the walk it declined.
    assert ev.predicted_cost == pytest.approx(pilot.walk_cost / pilot.full_cost) and (
        ev.predicted_cost > 1
    )
    np.testing.assert_array_equal(pilot.stops, ref.n_evaluated[pilot_rows(X.shape[0])])
    # The pilot is kept: a later call too small for a pilot of its own, even a single row,
    # evaluates in full too; asked to walk, it walks as the reference does.
    for small in (X[:200], X[7:8]):
        assert evaluate_blocked(walk, small, boundary, theta_s).path == "full"
    walked = evaluate_blocked(walk, X, boundary, theta_s, path="walk")
    assert walked.path == "walk"
    _same_as(walked, ref)


def test_auto_walks_where_the_pilot_predicts_walking_pays(rbf):
    _, walk, X, _, _ = rbf
    S = walk.partial_scores(X)
    theta_s = walk.theta_s(0.0)
    boundary = _quantiles(S, 0.3, 0.7)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert ref.mean_evaluated_fraction < 0.5
    ev = evaluate_blocked(walk, X, boundary, theta_s, path="auto")
    assert ev.path == "walk"
    _same_as(ev, ref)
    (pilot,) = walk_plan(walk).pilots(boundary).by_kind.values()
    assert pilot.walk_pays
    assert ev.predicted_cost == pytest.approx(pilot.walk_cost / pilot.full_cost) and (
        ev.predicted_cost <= WALK_MARGIN
    )
    # Asked for one path, no pilot prices it.
    assert evaluate_blocked(walk, X, boundary, theta_s, path="full").predicted_cost is None
    np.testing.assert_array_equal(pilot.stops, ref.n_evaluated[pilot_rows(X.shape[0])])
    # Calls too small for a pilot, without one kept, walk.
    fresh = _quantiles(S, 0.0005, 0.9995)
    assert evaluate_blocked(walk, X[: PILOT_MIN - 1], fresh, theta_s).path == "walk"


def _in_batches(walk, X, boundary, theta_s, sizes, **kw):
    """``X`` evaluated in consecutive batches of ``sizes`` (cycled), each a call of its own."""
    out, lo, k = [], 0, 0
    while lo < X.shape[0]:
        hi = lo + sizes[k % len(sizes)]
        out.append(evaluate_blocked(walk, X[lo:hi], boundary, theta_s, **kw))
        lo, k = hi, k + 1
    return out


@pytest.mark.parametrize("quantiles", [(0.0005, 0.9995), (0.3, 0.7)], ids=["full", "walk"])
def test_with_reference_rows_a_rows_outcome_never_depends_on_its_batch(rbf, quantiles):
    """Given reference rows, "auto" decides from their stops alone: every call takes the same
    path, so the same rows evaluated all at once, in batches of any size (single rows, calls
    too small for a pilot, tiny problems) and in another order give the same outcome row for
    row — on a rule where walking does not pay (every row the full model's decision) and on one
    where it does (every row the reference walk's). The pilot's stops are the reference walk's
    on the reference rows."""
    model, walk, X, X_ref, _ = rbf
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(X)
    boundary = _quantiles(S, *quantiles)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    R = X_ref[::4]  # 100 rows: the pilot walks them all
    batches = _in_batches(walk, X[:300], boundary, theta_s, [1, 7, 40, 252], reference=R)
    whole = evaluate_blocked(walk, X, boundary, theta_s, reference=R)
    expected_path = "full" if quantiles[0] < 0.01 else "walk"
    assert {ev.path for ev in batches} == {expected_path} and whole.path == expected_path
    if expected_path == "full":
        assert not whole.stopped.any()
        np.testing.assert_array_equal(whole.labels, model.predict(X))
    else:
        _same_as(whole, ref)
    for field in ("n_evaluated", "stop_side", "labels"):
        got = np.concatenate([getattr(ev, field) for ev in batches])
        np.testing.assert_array_equal(got, getattr(whole, field)[:300])
    got = np.concatenate([ev.decision for ev in batches])
    np.testing.assert_allclose(got, whole.decision[:300], rtol=1e-9, atol=1e-9)
    reversed_ = evaluate_blocked(walk, X[::-1], boundary, theta_s, reference=R)
    np.testing.assert_array_equal(reversed_.n_evaluated[::-1], whole.n_evaluated)

    pilots = walk_plan(walk).pilots(boundary)
    sample = apply_boundary(
        walk.partial_scores(R), boundary, theta_s, walk.offset, walk.terms.classes
    )
    np.testing.assert_array_equal(np.sort(pilots.stops), np.sort(sample.n_evaluated))


def test_the_estimators_batches_give_the_same_outcome_as_one_call():
    """``AttentiveClassifier`` keeps reference rows for the pilot: ``evaluate`` on the whole set,
    on batches of many sizes and row by row agree, field by field (a row evaluated in full in
    one call used to be walked in another, with another label)."""
    X, y = make_classification(
        n_samples=900, n_features=4, n_informative=3, n_redundant=0, random_state=4
    )
    clf = AttentiveClassifier(SVC(C=0.5), random_state=0).fit(X[:300], y[:300])
    assert clf.pilot_rows_.shape[0] >= 1
    Xt = X[300:]
    whole = clf.evaluate(Xt)
    parts = [clf.evaluate(Xt[lo : lo + 70]) for lo in range(0, Xt.shape[0], 70)]
    singles = [clf.evaluate(Xt[i : i + 1]) for i in range(0, Xt.shape[0], 37)]
    assert {ev.path for ev in parts + singles} == {whole.path}
    for field in ("n_evaluated", "stop_side", "labels", "decision"):
        # Decision values to rounding (a product's blocking depends on the rows it holds).
        same = np.testing.assert_array_equal if field != "decision" else _to_rounding
        same(np.concatenate([getattr(ev, field) for ev in parts]), getattr(whole, field))
        same(
            np.concatenate([getattr(ev, field) for ev in singles]),
            getattr(whole, field)[::37],
        )
    # The rows survive saving.
    loaded = load_model(sio.dumps(clf))
    np.testing.assert_array_equal(loaded.pilot_rows_, clf.pilot_rows_)


def _to_rounding(actual, desired):
    np.testing.assert_allclose(actual, desired, rtol=1e-12, atol=1e-12)


def test_the_estimators_early_stopping_is_the_path(rbf):
    model, _, X, X_ref, y_ref = rbf
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="constant", side="both", delta=1e-6, random_state=0
    ).fit(X_ref, y_ref)
    ref = apply_boundary(
        clf.partial_scores(X), clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_
    )
    assert 0 < ref.stopped.mean() < 0.05  # almost nothing stops
    auto = clf.evaluate(X)
    assert auto.path == "full"
    np.testing.assert_allclose(auto.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(clf.predict(X), model.predict(X))
    walking = copy.copy(clf).set_params(early_stopping=True)
    ev = walking.evaluate(X)
    assert ev.path == "walk"
    _same_as(ev, ref)
    np.testing.assert_array_equal(walking.predict(X), ref.labels)
    never = copy.copy(clf).set_params(early_stopping=False)
    assert never.evaluate(X).path == "full"
    assert clf.with_rule("budget", budget=10).evaluate(X).path == "budget"


# ----------------------------------------------------------------------------- float32, precision


@pytest.fixture(scope="module")
def pixels32():
    """MNIST 3 vs 8 as image pipelines store it: float32 pixels / 255 (near the integer grid)."""
    ds = load_dataset("mnist-t10k-3v8")
    X, Xt = ds.X_train.astype(np.float32), ds.X_test.astype(np.float32)
    model = SVC(gamma="scale").fit(X[:500], ds.y_train[:500])
    return model, X[:500], ds.y_train[:500], Xt


@pytest.fixture(scope="module")
def standardised():
    """Off any grid: 100 standardised features (float32 products with a certified bound)."""
    X, y = make_classification(
        n_samples=1300, n_features=100, n_informative=20, flip_y=0.05, random_state=6
    )
    X = StandardScaler().fit_transform(X)
    model = SVC(gamma="scale", C=3.0).fit(X[:500], y[:500])
    return model, X[:500], y[:500], X[500:]


def _term_mass(model, X):
    """``Σ_k |w_k| K(x, y_k)`` per row, from scikit-learn's kernel."""
    K = rbf_kernel(np.asarray(X, np.float64), model.support_vectors_, gamma=model._gamma)
    return K @ np.abs(model.dual_coef_[0])


def test_float32_input_stays_float32_through_predict(pixels32, monkeypatch):
    import attentive.estimator as estimator_module

    model, X, y, Xt = pixels32
    seen = []
    original = estimator_module.evaluate

    def spy(walk, rows, *args, **kwargs):
        seen.append(rows.dtype)
        return original(walk, rows, *args, **kwargs)

    monkeypatch.setattr(estimator_module, "evaluate", spy)
    full = AttentiveClassifier(FrozenEstimator(model), boundary="full").fit(X, y)
    del seen[:]
    np.testing.assert_array_equal(full.predict(Xt), model.predict(Xt))
    assert seen == [np.float32]
    # A rule's own stops, walked on the float32 rows, are the reference's.
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="curved",
        side="both",
        delta=0.05,
        random_state=0,
        early_stopping=True,
    ).fit(X, y)
    del seen[:]
    ev = clf.evaluate(Xt)
    assert seen == [np.float32]
    ref = apply_boundary(
        clf.partial_scores(Xt), clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_
    )
    assert ref.stopped.any() and ev.path == "walk"
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    np.testing.assert_array_equal(clf.predict(Xt), ref.labels)


def test_a_calls_path_never_depends_on_the_kind_of_rows_an_earlier_call_had(pixels32):
    """The pilot's costs are kept per kind of rows: float32 pixels after a call with the same
    rows in float64 (as read from a CSV file) are priced as float32 rows, as on a classifier
    that never saw the float64 call (the two kinds' walks cost differently, so a pilot shared
    between them would price one of them wrongly)."""
    model, X, y, Xt = pixels32
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="curved", side="both", delta=0.01, random_state=0
    ).fit(X, y)
    first, fresh = copy.deepcopy(clf), copy.deepcopy(clf)
    first.evaluate(Xt.astype(np.float64))
    ev, ev_fresh = first.evaluate(Xt), fresh.evaluate(Xt)
    assert ev.path == ev_fresh.path
    _same_as(ev, ev_fresh, rtol=0)
    kept = walk_plan(first.walk_).pilots(first.boundary_).by_kind
    own = walk_plan(fresh.walk_).pilots(fresh.boundary_).by_kind
    # (Float32 pixels are priced for each source that may walk them: the grid's and the
    # float32 one's, RBFGridSource.alternatives.)
    assert {key[3] for key in own} == {"<f4"} and {key[3] for key in kept} == {"<f4", "<f8"}
    for key, pilot in own.items():
        assert kept[key].walk_cost == pilot.walk_cost
        assert pilot.full_cost == model.n_support_.sum()
    doubles = {p.walk_cost for key, p in kept.items() if key[3] == "<f8"}
    assert doubles and not doubles & {p.walk_cost for p in own.values()}


@pytest.mark.parametrize("data", ["pixels32", "standardised"])
def test_precision_double_gives_scikit_learns_decisions(request, data):
    model, X, y, Xt = request.getfixturevalue(data)
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", precision="double", random_state=0
    ).fit(X, y)
    expected = model.decision_function(Xt)
    got = clf.decision_function(Xt)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * _term_mass(model, Xt).max())
    np.testing.assert_array_equal(clf.predict(Xt), model.predict(Xt))
    # The same through evaluation_options, for a classifier left at "auto".
    auto = copy.copy(clf).set_params(precision="auto")
    with evaluation_options(precision="double"):
        np.testing.assert_allclose(
            auto.decision_function(Xt), expected, rtol=1e-9, atol=1e-9 * _term_mass(model, Xt).max()
        )


def test_precision_double_when_the_first_row_is_on_the_grid_and_others_near_it(pixels32):
    """A chunk whose first row is exactly on the integer grid routes to the grid source; rows
    after it only near the grid (float32 pixels) would give it a band. Under "double" no source
    with a band serves a chunk: decisions are scikit-learn's to double precision."""
    _, X, y, Xt = pixels32
    X = np.rint(np.asarray(X, np.float64) * 255) / 255  # support vectors on the grid
    model = SVC(gamma="scale").fit(X, y)
    rows = np.asarray(Xt, dtype=np.float64)  # float32 pixels: near the grid
    rows[0] = np.rint(rows[0] * 255) / 255  # the first row exactly on it
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", precision="double", random_state=0
    ).fit(X, y)
    mass = _term_mass(model, rows).max()
    for block in (None, 64):  # whole calls and chunks whose first rows are near the grid
        with evaluation_options(chunk_size=block):
            got = clf.decision_function(rows)
            # double precision: ~1e-15 of Σ|w h|; a float32 band here is ~1e-8 of it
            assert np.abs(got - model.decision_function(rows)).max() <= 1e-12 * mass


@pytest.mark.parametrize("data", ["pixels32", "standardised"])
def test_precision_auto_is_within_the_certified_band(request, data):
    """Default precision: labels are the model's own; decision values are off by float32
    products' error (visible: more than double precision's), within the certified band of
    each row: its terms' relative error bound (the term source's, from the row alone) times
    ``Σ|w h|``, far below the docs' worst case of 1e-4 of it."""
    from attentive.evaluator.sources import build_source

    model, X, y, Xt = request.getfixturevalue(data)
    clf = AttentiveClassifier(FrozenEstimator(model), boundary="full", random_state=0).fit(X, y)
    assert clf.precision == "auto"
    got = clf.decision_function(Xt)
    expected = model.decision_function(Xt)
    np.testing.assert_array_equal(clf.predict(Xt), model.predict(Xt))
    mass = _term_mass(model, Xt)
    error = np.abs(got - expected)
    walk = clf.walk_
    source = build_source(walk, walk_plan(walk), Xt, "single")
    assert source.certified, source.kind
    rho = source.relative_error()
    assert np.all(error <= rho * mass * 1.01 + 1e-12 * mass)
    assert np.all(error <= 1e-4 * mass)
    assert error.max() > 1e-12 * mass.max()  # float32 products: the check can fail


@pytest.mark.parametrize("bad", ["single", "mixed", "float32", None, 64])
def test_bad_precision_is_named(rbf, bad):
    model, _, X, X_ref, y_ref = rbf
    message = "precision must be 'auto' or 'double', got " + repr(bad).replace("(", r"\(")
    with pytest.raises(InvalidParameterError, match=message):
        AttentiveClassifier(FrozenEstimator(model), precision=bad).fit(X_ref, y_ref)
    clf = AttentiveClassifier(FrozenEstimator(model)).fit(X_ref, y_ref)
    with pytest.raises(InvalidParameterError, match=message):
        copy.copy(clf).set_params(precision=bad).predict(X)


@pytest.mark.parametrize("how", ["skops", "pickle"])
def test_precision_survives_saving_and_a_model_saved_before_it_loads_with_auto(
    pixels32, tmp_path, how
):
    model, X, y, Xt = pixels32
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary="full", precision="double", random_state=0
    ).fit(X, y)

    def round_trip(obj):
        if how == "pickle":
            return pickle.loads(pickle.dumps(obj))
        return load_model(save_model(obj, tmp_path / "model.skops"))

    again = round_trip(clf)
    assert again.precision == "double"
    np.testing.assert_array_equal(again.decision_function(Xt), clf.decision_function(Xt))
    old = copy.copy(clf)
    del old.precision  # what a classifier saved by an earlier version holds
    if how == "skops":
        loaded = load_model(sio.dumps(old))  # the project's loader: trusted types only
    else:
        loaded = round_trip(old)
    assert loaded.precision == "auto" and loaded.get_params()["precision"] == "auto"
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    default = AttentiveClassifier(FrozenEstimator(model), boundary="full", random_state=0)
    default.fit(X, y)
    np.testing.assert_array_equal(loaded.decision_function(Xt), default.decision_function(Xt))


def test_the_core_function_takes_the_path_and_precision(rbf):
    model, walk, X, _, _ = rbf
    S = walk.partial_scores(X)
    theta_s = walk.theta_s(0.0)
    boundary = _quantiles(S, 0.2, 0.8)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    ev = evaluate(walk, X, boundary, theta_s, path="walk", precision="double")
    assert ev.path == "walk"
    _same_as(ev, ref)
    full = evaluate(walk, X, boundary, theta_s, path="full")
    assert full.path == "full"
    np.testing.assert_allclose(full.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
