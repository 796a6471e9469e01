"""The front door for experiments and the dashboard: another rule without refitting, every
scale of a family at once, operating points and the cheapest one, the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.svm import SVC

from attentive import AttentiveClassifier, cheapest_operating_point, operating_points
from attentive.errors import InvalidParameterError


def _walking(clf):
    """The rule's own walk (early_stopping=True): operating points describe it, where "auto"
    may evaluate every term instead (tests/test_evaluation_paths.py)."""
    return clf.set_params(early_stopping=True)


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(
        n_samples=1400, n_features=10, n_informative=6, flip_y=0.03, random_state=4
    )
    model = SVC(gamma=0.1).fit(X[:600], y[:600])
    clf = AttentiveClassifier(FrozenEstimator(model), boundary="curved", random_state=3)
    return clf.fit(X[:600], y[:600]), model, X, y


@pytest.mark.parametrize(
    "params",
    [
        {"boundary": "constant", "delta": 0.05, "side": "both"},
        {"boundary": "regression", "delta": 0.2, "side": "upper", "threshold": 0.3},
        {"boundary": "finite-population", "delta": 0.1, "side": "lower"},
        {"boundary": "budget", "budget": 0.25},
        {"boundary": "full"},
    ],
)
def test_with_rule_predicts_as_a_classifier_fitted_with_those_parameters(fitted, params):
    clf, model, X, y = fitted
    moved = clf.with_rule(**params)
    fresh = AttentiveClassifier(FrozenEstimator(model), random_state=3, **params)
    fresh.fit(X[:600], y[:600])
    np.testing.assert_allclose(moved.boundary_.lower, fresh.boundary_.lower, rtol=1e-12)
    np.testing.assert_allclose(moved.boundary_.upper, fresh.boundary_.upper, rtol=1e-12)
    a, b = moved.evaluate(X[600:]), fresh.evaluate(X[600:])
    np.testing.assert_array_equal(a.n_evaluated, b.n_evaluated)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.decision, b.decision, rtol=1e-12)
    # The original keeps its own rule.
    assert clf.boundary == "curved" and clf.boundary_.kind == "curved"


def test_with_rule_starts_from_the_fitted_rule_and_owns_its_model_parameters():
    """``set_params`` after ``fit`` moves the parameters, not the fitted rule (``predict`` keeps
    it until a refit): ``with_rule()`` took the moved ones (another family at another δ, other
    decisions) and now starts from the fitted rule. The copy's model parameters are its own: a
    ``set_params`` on the copy changed the original's (one shared object)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=700, n_features=8, random_state=2)
    clf = AttentiveClassifier(
        make_pipeline(StandardScaler(), SVC(gamma=0.2)),
        boundary="constant",
        delta=0.05,
        random_state=0,
    ).fit(X[:500], y[:500])
    before = clf.evaluate(X[500:])
    clf.set_params(boundary="curved", delta=0.4)
    same = clf.with_rule()
    assert same.boundary == "constant" and same.delta == 0.05
    np.testing.assert_array_equal(same.boundary_.lower, clf.boundary_.lower)
    after = same.evaluate(X[500:])
    np.testing.assert_array_equal(after.n_evaluated, before.n_evaluated)
    np.testing.assert_array_equal(after.decision, before.decision)
    # A δ given, the family is still the fitted one; the copy's with_rule() starts from its own.
    moved = clf.with_rule(delta=0.2)
    assert moved.boundary == "constant" and moved.with_rule().delta == 0.2
    moved.set_params(estimator__svc__C=5.0)
    assert clf.get_params()["estimator__svc__C"] == 1.0
    assert moved.estimator_ is clf.estimator_  # (the fitted model is shared)


def test_with_rule_at_a_scale_and_its_errors(fitted):
    clf = fitted[0]
    moved = clf.with_rule("regression", z=-0.4, side="both")
    expect = clf.with_rule(side="both").boundary_family("regression").boundary(-0.4)
    np.testing.assert_array_equal(moved.boundary_.lower, expect.lower)
    with pytest.raises(InvalidParameterError, match="cannot calibrate without data"):
        clf.with_rule("calibrated")
    with pytest.raises(InvalidParameterError, match="boundary must be one of"):
        clf.with_rule("nonsense")


def test_with_rule_keeps_a_calibrated_rule_where_nothing_moves_its_scale(fitted):
    """A calibrated classifier's current rule is its family at the calibrated z: with_rule()
    with no scale keeps it (it went to the family at Φ⁻¹(1 − δ): 0.018 → 0.048 evaluated on
    MNIST 2 vs 5 in a user's trial), a new threshold keeps the z, a δ moves it, and a rule that
    fell back to full evaluation stays full. The copies carry no guarantee."""
    from scipy.stats import norm

    clf, _, X, _ = fitted
    X_cal, X_eval = X[600:1100], X[1100:]
    cal = _walking(clf.with_rule("curved", side="both")).calibrate(
        X_cal, delta=0.05, family="curved"
    )
    z = cal.calibration_.chosen_scale
    assert z is not None and abs(z - norm.ppf(1 - 0.05)) > 0.1  # (else the test shows nothing)
    same = cal.with_rule()
    assert same.calibration_ is None
    a, b = same.evaluate(X_eval), cal.evaluate(X_eval)
    np.testing.assert_array_equal(a.n_evaluated, b.n_evaluated)
    np.testing.assert_array_equal(a.labels, b.labels)
    moved = cal.with_rule(threshold=0.2)
    expect = _walking(clf.with_rule("curved", z=z, side="both", threshold=0.2))
    np.testing.assert_array_equal(moved.boundary_.lower, expect.boundary_.lower)
    np.testing.assert_array_equal(moved.predict(X_eval), expect.predict(X_eval))
    by_delta = cal.with_rule(delta=0.05)
    assert by_delta.boundary_.params["z"] == pytest.approx(norm.ppf(1 - 0.05))
    with pytest.warns(UserWarning):  # (CalibrationWarning: no scale passes on 5 examples)
        fell = clf.with_rule("curved").calibrate(X_cal[:5], delta=0.05, family="curved")
    assert fell.calibration_.fallback
    assert fell.with_rule().boundary_.kind == "full"


def test_operating_points_match_each_rule_evaluated_on_its_own(fitted):
    clf, _, X, y = fitted
    X_eval, y_eval = X[600:], y[600:]
    grid = np.array([3.0, 1.5, 0.5, 0.0, -0.5])
    table = operating_points(clf, X_eval, y_eval, families=["curved", "regression"], grid=grid)
    assert len(table) == 10
    full = clf.with_rule("full").evaluate(X_eval).positive
    for row in table.itertuples():
        ev = _walking(clf.with_rule(row.family, z=row.z)).evaluate(X_eval)
        assert row.mean_evaluated_fraction == pytest.approx(ev.mean_evaluated_fraction)
        assert row.disagreement == pytest.approx(np.mean(ev.positive != full))
        assert row.accuracy == pytest.approx(np.mean(ev.positive == (y_eval == 1)))
        tp = np.sum(ev.positive & (y_eval == 1))
        n_pos = ev.positive.sum()
        expect = tp / n_pos if n_pos else np.nan  # no positive prediction: undefined
        assert row.precision == pytest.approx(expect, nan_ok=True)
        assert row.recall == pytest.approx(tp / np.sum(y_eval == 1))


def test_cheapest_operating_point_is_the_brute_force_minimum(fitted):
    clf, _, X, _ = fitted
    X_eval = X[600:]
    table = operating_points(clf, X_eval)
    for target in (0.0, 0.01, 0.05):
        row = cheapest_operating_point(clf, X_eval, target)
        ok = table[table.disagreement <= target]
        assert row.mean_evaluated_fraction == pytest.approx(ok.mean_evaluated_fraction.min())
        ev = _walking(clf.with_rule(row.family, z=row.z)).evaluate(X_eval)
        full = clf.with_rule("full").evaluate(X_eval).positive
        assert np.mean(ev.positive != full) <= target
    with pytest.raises(InvalidParameterError, match="max_disagreement"):
        cheapest_operating_point(clf, X_eval, 1.5)


def test_oracle_against_a_loop(fitted):
    clf, _, X, _ = fitted
    S = clf.partial_scores(X[600:700])
    M = clf.walk_statistics_.pooled.remainder_mean
    n = clf.n_terms_
    expect = []
    for row in S:
        final = row[-1] >= clf.theta_s_
        last_wrong = max(
            (t + 1 for t in range(n) if (row[t] + M[t] >= clf.theta_s_) != final), default=0
        )
        expect.append(min(last_wrong + 1, n))
    np.testing.assert_array_equal(clf.oracle_n_evaluated(X[600:700]), expect)


def test_stop_error_column_and_a_constant_rule_at_a_given_tau(fitted):
    clf, _, X, _ = fitted
    X_eval = X[600:]
    lower = clf.with_rule(side="lower")
    table = operating_points(lower, X_eval, families=["curved"], grid=np.array([2.0, 0.5]))
    full = clf.with_rule("full").evaluate(X_eval).positive
    for row in table.itertuples():
        ev = _walking(lower.with_rule("curved", z=row.z)).evaluate(X_eval)
        # SPEC §4, lower side: stopped full positives over full positives.
        assert row.stop_error == pytest.approx((ev.stopped & full).sum() / full.sum())
    S = clf.partial_scores(X_eval)
    tau = float(np.quantile(S[:, :-1], 0.1))
    ev = _walking(clf.with_rule("constant", side="lower", tau=tau)).evaluate(X_eval)
    first = np.array(
        [np.argmax(r[:-1] < tau) + 1 if (r[:-1] < tau).any() else S.shape[1] for r in S]
    )
    np.testing.assert_array_equal(ev.n_evaluated, first)
    with pytest.raises(InvalidParameterError, match="one-sided constant boundary"):
        clf.with_rule("constant", side="both", tau=tau)


def test_the_cheapest_operating_point_counts_a_sketched_rules_sketch():
    """A sketched rule's row costs its sketch plus its walked terms (``work_fraction``, what its
    own evaluation reports); the cheapest is the least work, not the fewest exact terms. A
    5-feature problem with a large sketch (k = 2, m = 64): its rules walk few terms, but each
    costs 1 + m/d plain terms, so plain rules are cheaper."""
    from attentive.families.sketched import is_sketched_name

    X, y = make_classification(
        3000, n_features=5, n_informative=4, n_redundant=0, flip_y=0.1, random_state=0
    )
    clf = AttentiveClassifier(
        SVC(), boundary="curved", side="both", sketch=(2, 64), random_state=0
    ).fit(X[:1500], y[:1500])
    X_eval = X[1500:]
    table = operating_points(clf, X_eval)
    sketched = table["family"].map(is_sketched_name)
    assert sketched.any() and (table.loc[~sketched, "sketch_cost"] == 0).all()
    np.testing.assert_array_equal(
        table.loc[~sketched, "work_fraction"], table.loc[~sketched, "mean_evaluated_fraction"]
    )
    for row in table[sketched].iloc[::7].itertuples():
        ev = _walking(clf.with_rule(row.family, z=row.z)).evaluate(X_eval)
        assert ev.mean_evaluated_fraction == pytest.approx(row.mean_evaluated_fraction)
        assert ev.work_fraction == pytest.approx(row.work_fraction)
        assert row.sketch_cost == pytest.approx(ev.sketch_cost) and row.sketch_cost > 0
    target = 0.01
    ok = table[table.disagreement <= target]
    row = cheapest_operating_point(clf, X_eval, target)
    assert row.work_fraction == pytest.approx(ok.work_fraction.min())
    # Here the fewest exact terms is a sketched rule that costs more than the cheapest.
    fewest = ok.loc[ok.mean_evaluated_fraction.idxmin()]
    assert is_sketched_name(fewest.family) and fewest.work_fraction > row.work_fraction


def test_with_rule_names_a_bad_scale_and_takes_any_it_can_name_by_delta(fitted):
    """z is the family's scale: a NaN, an infinity, a string, a bool or a z whose Φ(−z) is 0 or 1
    in floating point is refused by name; a z far out but within that range is the family's rule
    at z, and its delta gives z back (a refit makes the same rule)."""
    from attentive.estimator import Z_RANGE

    clf, _, X, _ = fitted
    for bad in (np.nan, np.inf, "two", "2", True, np.True_, -100.0, 40.0):
        with pytest.raises(InvalidParameterError, match="z must be a number from -8 to 37"):
            clf.with_rule("curved", z=bad)
    family = clf.boundary_family("curved")
    for z in (*Z_RANGE, 8.5, np.float32(2.5)):
        rule = clf.with_rule("curved", z=z)
        assert 0 < rule.delta < 1
        np.testing.assert_array_equal(rule.boundary_.upper, family.boundary(z).upper)
        np.testing.assert_array_equal(rule.boundary_.lower, family.boundary(z).lower)
        if z > 0:  # a refit's boundary, from delta (δ far from 1: the same z to rounding)
            np.testing.assert_allclose(rule._make_boundary().upper, rule.boundary_.upper)
    # Far below every useful scale, every walk stops at its first term; far above, none stops.
    low, high = Z_RANGE
    assert (_walking(clf.with_rule("curved", z=low)).evaluate(X[600:]).n_evaluated == 1).all()
    far = _walking(clf.with_rule("curved", z=high)).evaluate(X[600:])
    assert (far.n_evaluated == clf.n_terms_).all()


def test_labels_must_be_the_models_classes_one_per_example(fitted):
    """Labels of another kind (0/1 for a model fitted on "no"/"yes", 0/5) used to count every
    example as negative: accuracy about 0.5, precision and recall 0, without a word."""
    clf, _, X, y = fitted
    X_eval, y_eval = X[600:800], y[600:800]
    table = operating_points(clf, X_eval, y_eval, families=["curved"])
    row = table.loc[table.disagreement.idxmin()]  # about the full model's decisions
    full = clf.with_rule("full").predict(X_eval)
    assert row.disagreement <= 0.02
    assert row.accuracy == pytest.approx(np.mean(full == y_eval), abs=0.02)
    for wrong in (np.where(y_eval == 1, "a", "b"), y_eval * 5.0):
        with pytest.raises(InvalidParameterError, match=r"labels the fitted model does not know"):
            operating_points(clf, X_eval, wrong, families=["curved"])
        with pytest.raises(InvalidParameterError, match=r"its classes are \[.*0.*1.*\]"):
            cheapest_operating_point(clf, X_eval, 0.01, wrong)
    with pytest.raises(InvalidParameterError, match=r"200 examples, got labels of shape \(197,\)"):
        cheapest_operating_point(clf, X_eval, 0.01, y_eval[:197])
