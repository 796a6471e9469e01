"""Sketched rules in AttentiveClassifier (SPEC §3b): which sketch and which family it keeps, the
rules' stops, scores and costs, and the rest of the estimator's contract with a sketch.

The references are computed here independently: the residual walk from scikit-learn's RBF
kernel and the sketch's term values (:func:`_residual_walk`), the ranking of ``family="auto"``
from the reference profiles and the evaluator's cost model, the sketch's cost from its sizes.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import skops.io as sio
from sklearn.base import clone
from sklearn.compose import make_column_transformer
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC, LinearSVC

from attentive import AttentiveClassifier, InvalidParameterError, family_names
from attentive.calibration import CalibrationWarning
from attentive.evaluation import apply_boundary
from attentive.evaluator.sources.rbf import dense_term_ns
from attentive.evaluator.sources.sketch import sketch_cost_model
from attentive.families import make_family
from attentive.families.sketched import base_family, sketched_names
from attentive.grid import reference_profile
from attentive.models import load_model, save_model

DELTA, ALPHA = 0.01, 0.05


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def digits():
    """MNIST t10k 7 vs 9 as users prepare it (float32 pixels / 255, ``gamma="scale"``), the
    calibrated rule with ``family="auto"`` fitted on the training part: a sketch pays here
    (its choice is checked in the tests), and the rows go through the near-grid source or the
    float32 one, whichever the pilot prices lower."""
    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-7v9")
    X = np.asarray(ds.X_train, dtype=np.float32)
    y = np.asarray(ds.y_train)
    X_test = np.asarray(ds.X_test, dtype=np.float32)
    clf = AttentiveClassifier(
        SVC(gamma="scale"),
        boundary="calibrated",
        side="both",
        delta=DELTA,
        alpha=ALPHA,
        random_state=0,
    ).fit(X, y)
    # The rows fit kept for its reference set (the estimator's own split, replayed).
    X_fit, X_cal, y_fit, _ = train_test_split(
        X, y, test_size=clf._calibration_examples(len(y)), stratify=y, random_state=0
    )
    return clf, X_fit, y_fit, X_cal, X_test


@pytest.fixture(scope="module")
def small():
    """Ten features, a model of a few hundred support vectors and a sketch asked for by size,
    its residual terms in the plain walk's order (``sketch_order="walk"``): a sketch that does
    not pay (two principal directions shorten the walks a little, and each walked term's m-dot
    product costs twice its kernel value over 10 features), kept because it was asked for."""
    X, y = make_classification(
        n_samples=1400, n_features=10, n_informative=6, flip_y=0.03, random_state=3
    )
    model = SVC(C=1.0).fit(X[:500], y[:500])
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="curved",
        side="both",
        sketch=(2, 32),
        sketch_order="walk",
        random_state=0,
    ).fit(X[:500], y[:500])
    return clf, X[:500], y[:500], X[500:]


def _residual_walk(clf, X, X_fit, y_fit):
    """The sketched walk's partial scores and running masses, from SPEC §3b term by term:
    ``S^ρ_t = Σ_i w_i (h̃_i − μ̃_i) + Σ_{k≤t} w_{π(k)} (h − h̃ − μ + μ̃)_{π(k)}`` with
    ``h = K(s_i, x)`` from scikit-learn, ``h̃`` the sketch's term values and ``μ̃`` their mean
    over the positive reference examples (``centering="positive"``), in the sketched walk's
    order π (its own: ``sketch_order="residual"``)."""
    terms, walk, sketch = clf.terms_, clf.walk_, clf.sketched_walk_.sketch
    prepared = np.asarray(walk.prepare(X), dtype=np.float64)
    H = rbf_kernel(prepared, np.asarray(terms.support_vectors), gamma=sketch.gamma)
    H_sketch = sketch.term_values(prepared)
    positives = np.asarray(walk.prepare(X_fit[y_fit == clf.classes_[1]]), dtype=np.float64)
    mu_sketch = sketch.term_values(positives).mean(axis=0)
    w, order = terms.weights, clf.sketched_walk_.order
    start = (H_sketch - mu_sketch) @ w
    steps = (H - H_sketch - (walk.mu - mu_sketch))[:, order] * w[order]
    S = start[:, None] + np.cumsum(steps, axis=1)
    A = np.cumsum(H[:, order] * np.abs(w[order]), axis=1)
    return S, A


def _calibrated(problem, cls=AttentiveClassifier, **kw):
    """The two-sided calibrated classifier of issue 35's benchmarks (δ = 1 %, α = 5 %, seed 0)
    fitted on a :mod:`attentive.bench_corpus` problem's training rows."""
    clf = cls(
        problem.model,
        boundary="calibrated",
        side="both",
        delta=DELTA,
        alpha=ALPHA,
        random_state=0,
        **kw,
    )
    return clf.fit(problem.X_train, problem.y_train)


def _agree(clf, X):
    """predict == classes_[decision_function ≥ θ], and evaluate() says the same."""
    d, p = clf.decision_function(X), clf.predict(X)
    np.testing.assert_array_equal(p, clf.classes_[(d >= clf.threshold).astype(int)])
    ev = clf.evaluate(X)
    np.testing.assert_array_equal(ev.labels, p)
    np.testing.assert_array_equal(
        ev.labels, clf.classes_[(ev.decision >= clf.threshold).astype(int)]
    )
    return ev


def _own(clf, n_rows):
    own = np.full(n_rows, -1)
    own[clf.estimator_.support_] = np.arange(clf.n_terms_)
    return own


def _reaches(profile, delta: float, calibration) -> bool:
    """Whether some scale passes the scan (:func:`_ranking`'s loop) on ``(rates, costs)``."""
    return _ranking({"x": profile}, delta, calibration, keys_only=True)["x"][0] == 0


def _ranking(profiles: dict, delta: float, calibration=None, keys_only: bool = False):
    """Cheapest first at disagreement ≤ δ, or (``calibration = (m, α)``) at the scale the
    Clopper–Pearson fixed-sequence scan would stop at on m examples disagreeing at the profile's
    rates; rules that never get there last, by their lowest disagreement (loops over the grid
    with scipy's beta quantile, not attentive.grid.family_ranking)."""
    from scipy.stats import beta

    keys = {}
    for name, (rates, costs) in profiles.items():
        if calibration is None:
            ok = [c for r, c in zip(rates, costs, strict=True) if r <= delta]
            keys[name] = (0, min(ok)) if ok else (1, min(rates))
            continue
        m, alpha = calibration
        last = None
        for j, rate in enumerate(rates):
            k = round(rate * m)
            upper = 1.0 if k >= m else beta.ppf(1 - alpha, k + 1, m - k)
            if upper > delta:
                break
            last = j
        keys[name] = (0, costs[last]) if last is not None else (1, min(rates))
    return keys if keys_only else sorted(keys, key=lambda name: keys[name])


# ------------------------------------------------------------------ which rule auto chooses
def test_auto_ranks_plain_and_sketched_rules_by_their_cost_on_the_reference_set(digits):
    clf, X_fit, y_fit, X_cal, _ = digits
    choice = clf.sketch_choice_
    kept = clf._kept_sketch()
    assert kept.k is not None and clf.sketched_walk_ is kept.walk
    # The evaluator's costs, counted here: a row's sketch and a walked term's.
    for option in choice.options[1:]:
        c, t = sketch_cost_model(clf.n_terms_)(option.walk.sketch)
        assert option.total == pytest.approx(c + option.walked_fraction * t)
    # The fastest where its rule would be walked; else (every term evaluated anyway) the least
    # work by the count (the estimator's _cheapest_sketch).
    mass = 0.0  # what a rule on the running mass adds per walked term, at measured costs
    if clf.sketch_costs_ == "measured":
        assert kept is choice.best and kept.total < choice.options[0].total  # the sketch pays
        cost, term_cost = sketch_cost_model(clf.n_terms_)(clf.sketched_walk_.sketch)
        d = clf.sketched_walk_.sketch.n_features
        mass = 1.0 / dense_term_ns(d, True)  # 1 ns against a float32 term over d columns
    else:
        assert kept is min(choice.options, key=lambda o: o.counted_total)
        assert kept.counted_total < choice.options[0].counted_total
        cost, term_cost = kept.counted_costs
    # Every rule's tradeoff on the fit rows (walked leave-one-out), at its cost.
    own = _own(clf, len(y_fit))
    common = {"leave_own_out": True, "own": own}
    plain = reference_profile(
        clf.walk_,
        X_fit,
        [make_family(n, clf.walk_statistics_, clf.theta_s_, "both") for n in family_names()],
        **common,
    )
    sketched = reference_profile(
        clf.sketched_walk_,
        X_fit,
        [
            make_family(base_family(n), clf.sketched_statistics_, clf.theta_s_, "both")
            for n in sketched_names()
        ],
        **common,
    )
    for name, (_, fractions) in plain.items():
        np.testing.assert_array_equal(clf.reference_profile_[name][1], fractions)

    def extra(name, f):
        return f * mass if name == "mass-regression" else 0.0

    profiles = {
        **{n: (r, f + extra(n, f)) for n, (r, f) in plain.items()},
        **{
            "sketched-" + n: (r, cost + f * term_cost + extra(n, f))
            for n, (r, f) in sketched.items()
        },
    }
    # Judged where calibration on the held-out part would stop (grid.profile_point).
    expected = _ranking(profiles, DELTA, (len(X_cal), ALPHA))
    assert list(clf.calibration_.ranking) == expected
    assert expected[0].startswith("sketched-")  # a sketched rule is the cheapest
    assert clf.calibration_.family == expected[0]
    assert clf.boundary_.params["walk"] == "sketched"


def test_the_calibration_rows_take_no_part_in_the_choice(digits):
    """Only their count does: the ranking is judged where a scan of that many examples would
    stop on the reference profile's rates (grid.profile_point), whichever rows they are."""
    clf, _, _, X_cal, X_test = digits
    n = len(X_cal)
    assert len(X_test) > n
    rankings = []
    for rows in (X_cal, X_test[:n], X_test[-n:]):
        other = copy.copy(clf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            other.calibrate(rows, family="auto")
        rankings.append(other.calibration_.ranking)
        assert other.sketched_walk_ is clf.sketched_walk_
    assert rankings[0] == rankings[1] == rankings[2] == clf.calibration_.ranking


def test_costs_rank_a_sketch_that_does_not_pay_after_the_plain_rules(small):
    """Asked for by size, the sketch shortens the walk, but its walked terms cost more than the
    terms they save: ``family="auto"`` ranks every sketched rule after the plain rules that
    reach δ, which their walked fraction alone would not."""
    clf, _, _, X_cal = small
    delta = 0.05
    cost, term_cost = sketch_cost_model(clf.n_terms_)(clf.sketched_walk_.sketch)
    assert term_cost > 2
    walked = {n: clf.reference_profile_[n] for n in clf.reference_profile_}
    point = (600, 0.1)  # where calibrate(X_cal[:600], alpha=0.1) below ranks them
    assert _ranking(walked, delta, point)[0].startswith("sketched-")  # the fractions alone
    # (a rule on the running mass also pays its second sum per walked term, at measured costs)
    d = clf.sketched_walk_.sketch.n_features
    mass = 1.0 / dense_term_ns(d, True) if clf.sketch_costs_ == "measured" else 0.0
    costs = {
        n: (
            r,
            (cost + f * term_cost if n.startswith("sketched-") else f)
            + (f * mass if n.endswith("mass-regression") else 0.0),
        )
        for n, (r, f) in walked.items()
    }
    expected = _ranking(costs, delta, point)
    reaching = [n for n in expected if _reaches(costs[n], delta, point)]
    assert not reaching[0].startswith("sketched-")
    cal = clf.with_rule("curved").calibrate(X_cal[:600], delta=delta, alpha=0.1, family="auto")
    assert list(cal.calibration_.ranking) == expected
    assert not cal.calibration_.family.startswith("sketched-")


def test_where_no_sketch_pays_none_is_kept_and_no_sketched_rule_is_offered():
    """The benchmark's 40-feature problem (``bench_corpus``'s dense-40, its quick size), its
    residual terms in the plain walk's order: every size shortens the walk, none pays for its
    walked terms' m-dot products. (In the residual order the walks are short enough that one
    pays on the reference profile: docs/method.md.)"""
    from attentive.bench_corpus import load_problem

    problem = load_problem("dense-40", quick=True)
    clf = _calibrated(problem, sketch_order="walk")
    choice = clf.sketch_choice_
    none, *sketches = choice.options
    assert none.k is None and len(sketches) >= 2
    model = sketch_cost_model(clf.n_terms_)
    for option in sketches:
        c, t = model(option.walk.sketch)
        assert option.walked_fraction < none.walked_fraction  # shorter walks...
        assert none.walked_fraction <= c + option.walked_fraction * t  # ...that cost more
    assert choice.best is none and clf.sketched_walk_ is None
    assert not any(name.startswith("sketched-") for name in clf.calibration_.ranking)
    assert not any(name.startswith("sketched-") for name in clf.reference_profile_)
    with pytest.raises(InvalidParameterError, match=r"needs a sketch.*no sketch paid"):
        clf.with_rule("sketched-curved", z=1.0)
    with pytest.raises(InvalidParameterError, match=r"no sketch paid"):
        clf.boundary_family("sketched-regression")


def test_no_sketched_rule_without_a_sketch_and_each_reason_named(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    kw = {"delta": 0.2, "alpha": 0.2, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        linear = AttentiveClassifier(LinearSVC(), boundary="calibrated", **kw).fit(Xtr, ytr)
        poly = AttentiveClassifier(SVC(kernel="poly"), boundary="calibrated", **kw).fit(Xtr, ytr)
    assert linear.sketch_choice_ is None and poly.sketch_choice_ is None
    with pytest.raises(InvalidParameterError, match=r"linear terms.*RBF SVMs only"):
        linear.with_rule("sketched-curved")
    with pytest.raises(InvalidParameterError, match=r"kernel 'poly'.*RBF SVMs only"):
        poly.with_rule("sketched-curved", z=1.0)
    with pytest.raises(InvalidParameterError, match=r"linear terms.*RBF SVMs only"):
        AttentiveClassifier(LinearSVC(), boundary="sketched-curved").fit(Xtr, ytr)
    # An RBF model: not with sketch="none", nor after a rule that cannot use a sketch.
    none = AttentiveClassifier(SVC(gamma=0.1), boundary="sketched-curved", sketch="none")
    with pytest.raises(InvalidParameterError, match=r"fitted with sketch='none'"):
        none.fit(Xtr, ytr)
    plain = AttentiveClassifier(SVC(gamma=0.1), boundary="curved").fit(Xtr, ytr)
    assert plain.sketch_choice_ is None
    with pytest.raises(InvalidParameterError, match=r"when a rule can use one.*sketch=\(k, m\)"):
        plain.with_rule("sketched-mass-regression")
    # A size asked for that cannot be fitted.
    with pytest.raises(InvalidParameterError, match=r"asks for a sketch, but the model has linear"):
        AttentiveClassifier(LinearSVC(), sketch=(2, 8)).fit(Xtr, ytr)
    with pytest.raises(InvalidParameterError, match=r"support vectors sparse.*needs dense"):
        AttentiveClassifier(SVC(), sketch=(2, 8)).fit(sp.csr_matrix(Xtr), ytr)
    dense = FrozenEstimator(SVC().fit(Xtr, ytr))
    with pytest.raises(InvalidParameterError, match=r"the rows are sparse.*needs dense"):
        AttentiveClassifier(dense, sketch=(2, 8)).fit(sp.csr_matrix(Xtr), ytr)
    with pytest.raises(InvalidParameterError, match=r"k must be below their n_features = 8"):
        AttentiveClassifier(SVC(), sketch=(8, 8)).fit(Xtr, ytr)
    for bad in ("always", (4,), (4, 0), (4.0, 16), (True, 16), 4):
        with pytest.raises(InvalidParameterError, match=r"sketch must be 'auto', 'none' or a pair"):
            AttentiveClassifier(SVC(), sketch=bad).fit(Xtr, ytr)
    with pytest.raises(InvalidParameterError, match=r"family must be 'auto' or one of"):
        AttentiveClassifier(SVC(), family="sketched-constant").fit(Xtr, ytr)


def test_fit_sketch_after_a_plain_fit_offers_what_fit_chooses_for_a_sketched_rule(digits):
    """Fitted with a plain rule, a classifier keeps no sketch and offers the families only;
    ``fit_sketch`` on its fit rows then keeps the sketch that :meth:`fit` keeps for a sketched
    rule on the same rows, and offers the sketched rules (operating points included). Run
    again, it chooses the same (the plain walk's profile only, not the sketched rules')."""
    from attentive import operating_points

    clf, X_fit, y_fit, _, X_test = digits
    frozen, rows = FrozenEstimator(clf.estimator_), X_test[:300]
    kw = {"side": "both", "delta": DELTA, "random_state": 0}
    plain = AttentiveClassifier(frozen, boundary="curved", **kw).fit(X_fit, y_fit)
    assert plain.sketched_walk_ is None and plain.scaled_rules() == tuple(family_names())
    with pytest.raises(InvalidParameterError, match=r"fit_sketch\(X, y\)"):
        plain.with_rule("sketched-curved", z=1.0)
    direct = AttentiveClassifier(frozen, boundary="sketched-curved", **kw).fit(X_fit, y_fit)
    assert direct.sketched_walk_ is not None
    assert plain.fit_sketch(X_fit, y_fit) is plain
    assert plain.scaled_rules() == (*family_names(), *sketched_names())

    def totals(c):
        return [(o.label, o.total) for o in c.sketch_choice_.options]

    assert totals(plain) == totals(direct)
    size = (direct.sketched_walk_.sketch.k, direct.sketched_walk_.sketch.m)
    assert (plain.sketched_walk_.sketch.k, plain.sketched_walk_.sketch.m) == size
    assert plain.reference_profile_.keys() == direct.reference_profile_.keys()
    for name, (rates, fractions) in direct.reference_profile_.items():
        np.testing.assert_array_equal(plain.reference_profile_[name][0], rates)
        np.testing.assert_array_equal(plain.reference_profile_[name][1], fractions)
    np.testing.assert_array_equal(
        plain.with_rule("sketched-curved", z=1.0).decision_function(rows),
        direct.with_rule("sketched-curved", z=1.0).decision_function(rows),
    )
    table = operating_points(plain, rows)
    assert set(table["family"]) == {*family_names(), *sketched_names()}
    sketched = table[table["family"].str.startswith("sketched-")].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        sketched, operating_points(direct, rows, families=sketched_names())
    )
    again = copy.deepcopy(plain).fit_sketch(X_fit, y_fit)
    assert totals(again) == totals(plain)
    assert again.reference_profile_.keys() == plain.reference_profile_.keys()


def test_fit_sketch_refuses_rows_the_model_was_not_fitted_on(digits):
    """The whole training set where the classifier held part of it out to calibrate (the
    natural mistake: its support vectors index the fit part), or fewer rows: a clear error
    naming the rows expected and how to get them, and nothing the classifier had is lost."""
    from attentive.data import load_dataset
    from attentive.estimator import calibration_split

    clf, X_fit, y_fit, _, _ = digits
    fitted = copy.deepcopy(clf)
    ds = load_dataset("mnist-t10k-7v9")  # what the fixture fitted on, whole
    X_all, y_all = np.asarray(ds.X_train, dtype=np.float32), np.asarray(ds.y_train)
    before = fitted.sketch_choice_
    for X, y in ((X_all, y_all), (X_fit[:100], y_fit[:100])):
        with pytest.raises(ValueError, match=rf"fit.s order: {len(X_fit)} rows, got {len(X)}\."):
            fitted.fit_sketch(X, y)
    with pytest.raises(ValueError, match="calibration_split"):
        fitted.fit_sketch(X_all, y_all)
    with pytest.raises(ValueError, match="labels"):
        fitted.fit_sketch(X_fit, y_fit[:-1])
    # As many rows, but another split's (overlapping the calibration part), or fit's reversed.
    X_other, _, y_other, _ = calibration_split(
        X_all, y_all, delta=DELTA, alpha=ALPHA, random_state=1
    )
    assert len(X_other) == len(X_fit)
    for X, y in ((X_other, y_other), (X_fit[::-1], y_fit[::-1])):
        with pytest.raises(ValueError, match="not those rows in that order"):
            fitted.fit_sketch(X, y)
    with pytest.raises(ValueError, match="not those rows in that order"):
        fitted.fit_sketch(X_fit, np.roll(y_fit, 1))  # fit's rows, the labels of others
    assert fitted.sketch_choice_ is before  # untouched
    # Fit's rows as float64 (read back from a file, say) are still fit's.
    assert copy.deepcopy(fitted).fit_sketch(X_fit.astype(np.float64), y_fit).sketch_choice_
    # The split the message names gives the fit part back.
    X_again, _, y_again, _ = calibration_split(
        X_all, y_all, delta=DELTA, alpha=ALPHA, random_state=0
    )
    np.testing.assert_array_equal(X_again, X_fit)
    np.testing.assert_array_equal(y_again, y_fit)


def test_sketch_order_walks_the_residuals_in_the_order_residual_order_gives(digits):
    """``sketch_order="residual"`` (the default) keeps the sketched walk that
    :func:`attentive.sketch.residual_order` makes of the plain walk's on the fit rows, walked as
    the reference walks are; ``"walk"`` keeps the plain walk's order. Both
    sketches are the same, and so is every full score; the residual order's rules stop sooner
    on the test rows."""
    from attentive.sketch import residual_order
    from attentive.sketch.choice import order_rows

    clf, X_fit, y_fit, _, X_test = digits
    frozen, rows = FrozenEstimator(clf.estimator_), X_test[:400]
    # One size for both (which size is cheapest depends on the order).
    kw = {"boundary": "sketched-curved", "side": "both", "delta": DELTA, "random_state": 0}
    kw["sketch"] = (8, 32)
    residual = AttentiveClassifier(frozen, **kw).fit(X_fit, y_fit)
    plain = AttentiveClassifier(frozen, sketch_order="walk", **kw).fit(X_fit, y_fit)
    assert residual.get_params()["sketch_order"] == "residual"
    assert (residual.sketched_walk_.sketch.k, residual.sketched_walk_.sketch.m) == (
        plain.sketched_walk_.sketch.k,
        plain.sketched_walk_.sketch.m,
    )
    np.testing.assert_array_equal(plain.sketched_walk_.order, plain.walk_.order)
    # The order as new rows see it: each fit row's own support vector left out (matched by
    # value: the reference walks are in-sample here, boundary="sketched-curved"), chosen on a
    # seeded half of the fit rows (order_rows), so that the other half walks it as new rows do,
    # and on the support vectors as rows holding their own terms (residual_order's default).
    assert residual.reference_walks_ == "in-sample"
    Xp = plain.walk_.prepare(X_fit)
    half = order_rows(Xp.shape[0])
    assert half == -(-Xp.shape[0] // 2) < Xp.shape[0]
    expected = residual_order(plain.sketched_walk_, Xp, leave_own_out=True, max_rows=half)
    np.testing.assert_array_equal(residual.sketched_walk_.order, expected.order)
    every_row = residual_order(plain.sketched_walk_, Xp, leave_own_out=True)
    assert not np.array_equal(every_row.order, expected.order)
    assert not np.array_equal(residual.sketched_walk_.order, residual.walk_.order)
    # The plain walk keeps its order; the scores are the model's either way.
    np.testing.assert_array_equal(residual.walk_.order, plain.walk_.order)
    np.testing.assert_allclose(  # float32 rows: within the float32 band (docs/speed.md)
        residual.with_rule("full").decision_function(rows),
        clf.estimator_.decision_function(rows),
        rtol=2e-5,
        atol=2e-5,
    )
    sooner = [
        c.with_rule("sketched-curved", z=2.0).set_params(early_stopping=True).evaluate(rows)
        for c in (residual, plain)
    ]
    assert sooner[0].n_evaluated.mean() < 0.8 * sooner[1].n_evaluated.mean()
    with pytest.raises(InvalidParameterError, match=r"sketch_order must be one of"):
        AttentiveClassifier(frozen, sketch_order="largest").fit(X_fit, y_fit)
    # A classifier saved before sketch_order existed was sketched in the walk's order: it loads
    # with sketch_order="walk" and keeps the walk it was fitted with.
    old = copy.copy(residual)
    delattr(old, "sketch_order")
    back = load_model(sio.dumps(old))
    assert back.get_params()["sketch_order"] == "walk"
    np.testing.assert_array_equal(back.sketched_walk_.order, residual.sketched_walk_.order)
    np.testing.assert_array_equal(back.predict(rows), residual.predict(rows))


# --------------------------------------------------------------------- what a sketched rule does
def _sketched_cases(digits, small):
    clf_d, X_fit_d, y_fit_d, _, X_test_d = digits
    clf_s, X_fit_s, y_fit_s, X_test_s = small
    return [
        (clf_d, X_test_d[:400], X_fit_d, y_fit_d),
        (clf_s, X_test_s[:400], X_fit_s, y_fit_s),
    ]


@pytest.mark.parametrize("case", [0, 1], ids=["digits-float32", "ten-features"])
def test_sketched_rules_stop_where_the_residual_walk_does(digits, small, case):
    clf, X, X_fit, y_fit = _sketched_cases(digits, small)[case]
    S, A = _residual_walk(clf, X, X_fit, y_fit)
    # The residual walk ends where the model does.
    np.testing.assert_allclose(
        clf.offset_ + S[:, -1], clf.estimator_.decision_function(X), rtol=1e-9, atol=1e-9
    )
    stopped = 0
    for name in sketched_names():
        for z in (0.5, 2.0):
            rule = clf.with_rule(name, z=z, side="both").set_params(early_stopping=True)
            assert rule.boundary_.params["walk"] == "sketched"
            ev = rule.evaluate(X)
            ref = apply_boundary(
                S, rule.boundary_, rule.theta_s_, rule.offset_, rule.classes_,
                A=A if rule.boundary_.uses_mass else None,
            )  # fmt: skip
            assert ev.path == "walk"
            np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated, err_msg=name)
            np.testing.assert_array_equal(ev.stop_side, ref.stop_side, err_msg=name)
            np.testing.assert_array_equal(ev.positive, ref.positive, err_msg=name)
            # Float32 rows: decision values within the float32 band, about 1e-6 of Σ|w h|.
            band = 1e-6 * float(np.abs(rule.walk_.ordered_weights).sum())
            np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-6, atol=band)
            stopped += ev.stopped.sum()
    assert stopped > 0


@pytest.mark.parametrize("case", [0, 1], ids=["digits-float32", "ten-features"])
def test_predictions_are_the_side_of_the_scores_for_sketched_rules(digits, small, case):
    clf, X, _, _ = _sketched_cases(digits, small)[case]
    for name in sketched_names():
        for side in ("lower", "upper", "both"):
            for score in ("estimate", "boundary"):
                for early in (True, "auto"):
                    rule = clf.with_rule(name, z=1.0, side=side)
                    rule.set_params(stopped_score=score, early_stopping=early)
                    _agree(rule, X)
    # The calibrated rule as fitted, on its own walk.
    _agree(clf, X)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_rows_walk_a_sketched_rule_as_their_dense_copy_does(digits, small, fmt):
    """A model fitted on dense rows scores sparse ones (a LIBSVM file, a CSR batch): a sketched
    rule's features come from the rows' non-zeros, and the walks, stops and labels are those of
    the same rows dense, on every path."""
    import scipy.sparse as sp

    for clf, X, X_fit, y_fit in _sketched_cases(digits, small):
        X = np.asarray(X, dtype=np.float64)
        Xs = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
        sketch = clf.sketched_walk_.sketch
        np.testing.assert_allclose(sketch.features(Xs), sketch.features(X), rtol=1e-12, atol=0)
        for early in (True, "auto", False):
            rule = clf.with_rule("sketched-curved", z=1.0, side="both")
            rule.set_params(early_stopping=early)
            sparse = rule.evaluate(Xs)
            if early == "auto":
                # The path depends on the kind of rows (sparse ones take the double-precision
                # term values): the dense rows on the path the sparse ones took.
                rule.set_params(early_stopping=sparse.path == "walk")
            dense = rule.evaluate(X)
            np.testing.assert_array_equal(sparse.n_evaluated, dense.n_evaluated)
            np.testing.assert_array_equal(sparse.labels, dense.labels)
            # Dense float32 pixels take float32 products within their band (docs/speed.md);
            # sparse rows the double-precision term values.
            np.testing.assert_allclose(sparse.decision, dense.decision, rtol=1e-6, atol=1e-6)
            assert early is not True or sparse.stopped.any()
        S, _ = _residual_walk(clf, X[:50], X_fit, y_fit)
        np.testing.assert_allclose(
            clf.sketched_walk_.partial_scores(Xs[:50]), S, rtol=1e-9, atol=1e-9
        )
    bad = sp.csr_matrix(np.asarray(X)[:3, :-1])
    with pytest.raises(ValueError, match="features"):
        sketch.features(bad)


def test_the_work_counts_the_sketch_beside_the_exact_terms(small, digits):
    for clf, X in ((small[0], small[3]), (digits[0], digits[4])):
        sketch = clf.sketched_walk_.sketch
        n, d, k, m = clf.n_terms_, sketch.n_features, sketch.k, sketch.m
        own_count = ((k + 1) * d + m * (k + 2)) / (n * d)  # SPEC §3b: P x̃, ‖x̃‖², L, exp, β
        rule = clf.with_rule("sketched-regression", z=1.0).set_params(early_stopping=True)
        ev = rule.evaluate(X)
        assert ev.path == "walk" and ev.stopped.any()
        assert ev.sketch_cost == pytest.approx(own_count, rel=1e-12)
        assert ev.walked_term_cost == pytest.approx(1 + m / d, rel=1e-12)
        walked = ev.n_evaluated.mean() / n
        assert ev.work_fraction == pytest.approx(own_count + walked * (1 + m / d), rel=1e-12)
        assert ev.mean_evaluated_fraction == pytest.approx(walked)
        # Without a sketch: the exact terms alone; evaluated in full: no sketch computed.
        plain = clf.with_rule("regression", z=1.0).set_params(early_stopping=True).evaluate(X)
        assert plain.sketch_cost == 0 and plain.work_fraction == plain.mean_evaluated_fraction
        full = copy.copy(rule).set_params(early_stopping=False).evaluate(X)
        assert full.path == "full" and full.sketch_cost == 0 and full.work_fraction == 1.0
        budget = clf.with_rule("budget", budget=0.5).evaluate(X)
        assert budget.sketch_cost == 0 and budget.work_fraction == pytest.approx(0.5, abs=1 / n)


# ------------------------------------------------------------------------- the estimator contract
def test_a_classifier_with_a_sketch_survives_the_trusted_skops_round_trip(digits, tmp_path):
    clf, _, _, _, X_test = digits
    X = X_test[:300]
    loaded = load_model(save_model(clf, tmp_path / "sketched.skops"))
    # The dashboard's export (skops bytes) loaded as its snippet loads it.
    exported = load_model(sio.dumps(clf))
    for again in (loaded, exported):
        np.testing.assert_array_equal(
            again.sketched_walk_.sketch.term_factors, clf.sketched_walk_.sketch.term_factors
        )
        assert again.calibration_.family == clf.calibration_.family
        np.testing.assert_array_equal(again.predict(X), clf.predict(X))
        # (Its pilot is not saved: blocks of other lengths, sums equal to the last bits.)
        np.testing.assert_allclose(
            again.decision_function(X), clf.decision_function(X), rtol=1e-12, atol=1e-12
        )
        rule, mine = (c.with_rule("sketched-mass-regression", z=1.0) for c in (again, clf))
        np.testing.assert_array_equal(rule.evaluate(X).n_evaluated, mine.evaluate(X).n_evaluated)
        assert list(again._profile_costs()) == list(clf._profile_costs())
    # A classifier saved before sketches existed loads with sketch="auto" and predicts as saved.
    old = copy.copy(clf.with_rule("curved", z=1.0))
    expected = old.predict(X)
    for name in ("sketch", "sketch_choice_", "sketched_walk_", "sketched_statistics_"):
        delattr(old, name)
    old.reference_profile_ = {
        k: v for k, v in old.reference_profile_.items() if not k.startswith("sketched-")
    }
    back = load_model(sio.dumps(old))
    assert back.get_params()["sketch"] == "auto"
    np.testing.assert_array_equal(back.predict(X), expected)
    with pytest.raises(InvalidParameterError, match="needs a sketch"):
        back.with_rule("sketched-curved")


def test_a_saved_sketch_choice_keeps_numbers_not_walks(digits):
    """Every option tried was saved with its walk and statistics, each holding the model's
    pipeline: a classifier over 784 named columns saved a schema of 33 MB (12 copies of its
    ColumnTransformer), which load_model refused. Saved, the options keep their numbers
    (totals, counted costs, profiles); the kept sketch's walk is sketched_walk_ alone."""
    clf = digits[0]
    back = load_model(sio.dumps(clf))
    choice, saved = clf.sketch_choice_, back.sketch_choice_
    assert all(o.walk is not None for o in choice.options)  # (in memory, as chosen)
    assert all(o.walk is None and o.statistics is None for o in saved.options)
    for mine, theirs in zip(choice.options, saved.options, strict=True):
        assert (theirs.k, theirs.m, theirs.total) == (mine.k, mine.m, mine.total)
        assert theirs.counted_costs == mine.counted_costs
        assert theirs.counted_total == mine.counted_total
    walk = back.sketched_walk_
    kept = back._kept_sketch()
    assert kept is saved.kept and (kept.k, kept.m) == (walk.sketch.k, walk.sketch.m)
    assert kept.counted_costs == (walk.cost, walk.walked_term_cost)
    assert repr(saved) == repr(choice)
    # The sketch costs the file its own arrays, not a walk per option tried.
    plain = clone(clf).set_params(sketch="none").fit(*digits[1:3])
    sizes = [len(sio.dumps(c)) for c in (clf, plain)]
    assert sizes[0] < 1.6 * sizes[1], sizes


def test_sparse_rows_of_a_sketched_rule_are_priced_as_they_cost(digits):
    """The rows as a CSR matrix (a LIBSVM file) were priced at the generic source's default term
    (2 ns, where a kernel's term on sparse rows costs ~25) against their sketch's features
    priced as dense rows': the walk was predicted at 2.1 of a full evaluation (0.43 measured)
    and "auto" evaluated it in full, 2.5-3 times slower than with no sketch (a user's trial).
    Priced as they cost, they walk; walked, they stop where the dense rows do."""
    clf, _, _, _, X_test = digits
    X = X_test[:400]
    sparse = clf.evaluate(sp.csr_matrix(X))
    assert sparse.path == "walk" and sparse.predicted_cost < 0.6, sparse.predicted_cost
    walking = copy.copy(clf).set_params(early_stopping=True)
    dense, sparse = walking.evaluate(X), walking.evaluate(sp.csr_matrix(X))
    np.testing.assert_array_equal(sparse.n_evaluated, dense.n_evaluated)
    np.testing.assert_array_equal(sparse.labels, dense.labels)
    np.testing.assert_array_equal(sparse.stop_side, dense.stop_side)


def _stops_as_the_residual_walk(clf, test, X_fit, y_fit):
    """The walked rule (early stopping) agrees with its scores and stops where the residual
    walk computed from the sketch's own terms does, and stops some rows."""
    ev = _agree(clf.set_params(early_stopping=True), test)
    S, _ = _residual_walk(clf, test, X_fit, y_fit)
    ref = apply_boundary(S, clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_)
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    assert ev.stopped.any()
    return ev


def test_a_pipeline_on_a_dataframe_fits_its_sketch_on_the_transformed_rows():
    rng = np.random.default_rng(4)
    n = 900
    numbers = pd.DataFrame(rng.normal(size=(n, 24)), columns=[f"x{i}" for i in range(24)])
    colour = rng.choice(["green", "red", "blue"], size=n)
    frame = numbers.assign(colour=colour)
    score = numbers["x0"] - numbers["x1"] * numbers["x2"] + (colour == "green") * 1.2
    y = (score + 0.4 * rng.normal(size=n) > 0.3).astype(int).to_numpy()
    pipe = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(), ["colour"]), (StandardScaler(), list(numbers.columns))
        ),
        SVC(gamma="scale"),
    )
    clf = AttentiveClassifier(
        pipe, boundary="sketched-curved", side="both", delta=0.1, sketch=(4, 16), random_state=0
    ).fit(frame[:600], y[:600])
    test = frame[600:]
    head = clf.estimator_[:-1]
    transformed = head.transform(frame[:600])
    sketch = clf.sketched_walk_.sketch
    assert sketch.n_features == transformed.shape[1] == 27
    np.testing.assert_allclose(sketch.mean, transformed.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert list(clf.feature_names_in_) == list(frame.columns)
    _stops_as_the_residual_walk(clf, test, frame[:600], y[:600])
    # The calibrated rule with family="auto" on the same frame: it considers a sketch too.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        calibrated = AttentiveClassifier(
            pipe, boundary="calibrated", delta=0.1, alpha=0.2, random_state=0
        ).fit(frame[:700], y[:700])
    assert calibrated.sketch_choice_ is not None
    _agree(calibrated, frame[700:])


def _correlated_rows():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(900, 30)) @ rng.normal(size=(30, 30)) / 5.0
    y = (Z[:, 0] - 0.3 * Z[:, 1] * Z[:, 2] + 0.5 * rng.normal(size=900) > 0).astype(int)
    return Z, y


@pytest.mark.parametrize("head", ["PCA", "StandardScaler"])
def test_auto_tries_more_directions_per_landmark_only_where_they_are_coordinates(head):
    """``sketch="auto"`` weighs DEFAULT_SIZES and the smaller COUNT_SIZES, and AXIS_SIZES too
    where the directions are coordinates (behind a PCA: a row's projection costs nothing, its
    landmarks most); behind a StandardScaler the same rows are correlated and AXIS_SIZES are not
    tried. COUNT_SIZES are ranked by the count only: the fastest by the measured costs is never
    one of them."""
    from sklearn.decomposition import PCA

    from attentive.sketch import AXIS_SIZES, COUNT_SIZES, DEFAULT_SIZES

    Z, y = _correlated_rows()
    first = PCA(20, random_state=0) if head == "PCA" else StandardScaler()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        clf = AttentiveClassifier(
            make_pipeline(first, SVC(gamma="scale")),
            boundary="calibrated",
            delta=0.1,
            alpha=0.2,
            random_state=0,
        ).fit(Z[:700], y[:700])
    none, *options = clf.sketch_choice_.options
    assert none.k is None
    tried = [(o.k, o.m) for o in options]
    axes = head == "PCA"
    assert tried == sorted({*DEFAULT_SIZES, *COUNT_SIZES, *(AXIS_SIZES if axes else ())})
    assert all(o.walk.sketch.on_coordinates is axes for o in options)
    assert [(o.k, o.m) for o in options if o.count_only] == sorted(COUNT_SIZES)
    _agree(clf, Z[700:])


def test_behind_a_pca_the_sketch_takes_coordinates_and_keeps_them_through_skops(tmp_path):
    """Behind a PCA the rows are decorrelated: the sketch's directions are coordinates (a
    row's projection is its own values). Its walks stop where the reference's residual walk
    does, scores agree with labels and with scikit-learn's decision_function where every term
    is walked, and the trusted skops round trip keeps the coordinates and the predictions."""
    from sklearn.decomposition import PCA

    Z, y = _correlated_rows()
    pipe = make_pipeline(PCA(12, random_state=0), SVC(gamma="scale"))
    clf = AttentiveClassifier(
        pipe, boundary="sketched-curved", side="both", delta=0.1, sketch=(4, 16), random_state=0
    ).fit(Z[:600], y[:600])
    sketch = clf.sketched_walk_.sketch
    assert sketch.on_coordinates
    assert set(np.flatnonzero(sketch.components.any(axis=0))) < set(range(12))
    test = Z[600:]
    _stops_as_the_residual_walk(clf, test, Z[:600], y[:600])
    full = clf.with_rule("full")
    np.testing.assert_allclose(
        full.decision_function(test), clf.estimator_.decision_function(test), atol=1e-9
    )
    loaded = load_model(save_model(clf, tmp_path / "pca.skops"))
    assert loaded.sketched_walk_.sketch.on_coordinates
    np.testing.assert_array_equal(loaded.predict(test), clf.predict(test))
    np.testing.assert_allclose(
        loaded.decision_function(test), clf.decision_function(test), rtol=1e-12, atol=1e-12
    )


@pytest.mark.slow
def test_a_sketch_that_pays_by_the_count_on_forty_features_is_evaluated_in_full(monkeypatch):
    """The benchmark's 40-feature problem (``dense-40``, about 3,600 support vectors): in the
    residual order a sketch pays on the reference profile, so ``auto`` keeps one, but its walk
    of thousands of cheap positions does not pay in wall-clock (measured with every support
    vector in the residual order, a walk of 0.19 of the terms: 0.56 of a full evaluation on one
    thread, 0.99-1.04 on two, where full evaluation runs 1.7 times faster). The pilot prices the
    positions (as two threads pay them) and evaluates in full; without that price it would
    walk."""
    import attentive.evaluator.pilot as pilot
    from attentive.bench_corpus import load_problem

    problem = load_problem("dense-40")
    clf = _calibrated(problem)
    assert clf.n_terms_ > 3000 and clf.sketched_walk_ is not None
    assert clf.calibration_.family.startswith("sketched-")
    rows = problem.X_test[:2000]
    unpriced = copy.deepcopy(clf)  # walks and pilots of its own
    ev = clf.evaluate(rows)
    assert ev.path == "full"
    np.testing.assert_array_equal(ev.labels, clf.estimator_.predict(rows))
    monkeypatch.setattr(pilot, "POSITION_NS", 0.0)
    assert unpriced.evaluate(rows).path == "walk"


def _counted_total(option) -> float:
    """An option's total by SPEC §3b's count, from its sizes (independent of the estimator)."""
    from attentive.sketch import sketch_cost, walked_term_cost

    if option.k is None:
        return option.walked_fraction
    sketch = option.walk.sketch
    return sketch_cost(sketch.n_terms, sketch.n_features, option.k, option.m) + (
        option.walked_fraction * walked_term_cost(sketch.n_features, option.m)
    )


def _assert_ranked_at_the_count(clf):
    """A sketched rule's cost in ``family="auto"``'s ranking is its sketch plus its walked
    terms', by SPEC §3b's count."""
    costs = clf._profile_costs()
    name = next(n for n in costs if n.startswith("sketched-"))
    _, fractions = clf.reference_profile_[name]
    np.testing.assert_allclose(
        costs[name][1],
        clf.sketched_walk_.cost + fractions * clf.sketched_walk_.walked_term_cost,
        rtol=1e-12,
    )


class _FastestAlways(AttentiveClassifier):
    """Keeps the fastest option by the measured costs, walked or not (the choice before)."""

    def _cheapest_sketch(self, choice, X):
        return choice.best, "measured"


@pytest.mark.slow
def test_where_no_walk_pays_the_least_work_by_the_count_is_kept(monkeypatch):
    """MNIST 4 vs 9 (float32 pixels / 255), the evaluator told that no walk pays (its margin 0:
    on this shared machine's kind its walks pay, 0.58 of a full evaluation): by the measured
    costs the smallest sketch they rank is the fastest, but its rule would be evaluated in full
    anyway (the evaluator's pilot), so every option takes a full evaluation's time and the one
    with the least work by the count is kept and ranked at the count; its calibrated rule then
    does less work on the test rows, with the same path."""
    from attentive.bench_corpus import load_problem
    from attentive.evaluator import pilot as pilot_module

    monkeypatch.setattr(pilot_module, "WALK_MARGIN", 0.0)
    monkeypatch.setattr(pilot_module, "TRIAGE_MARGIN", 0.0)  # (nor stopping what the triage does)

    problem = load_problem("mnist-4v9")
    clf, before = _calibrated(problem), _calibrated(problem, cls=_FastestAlways)
    choice = clf.sketch_choice_
    least = min(choice.options, key=_counted_total)
    assert least is not choice.best  # the two cost models disagree here
    assert clf.sketch_costs_ == "count" and before.sketch_costs_ == "measured"
    assert (clf.sketched_walk_.sketch.k, clf.sketched_walk_.sketch.m) == (least.k, least.m)
    assert before.sketched_walk_.sketch.k == choice.best.k
    # Ranked at the count: a sketched rule's cost is its sketch plus its walked terms'.
    _assert_ranked_at_the_count(clf)
    X = problem.X_test[:3000]
    ev, ev_before = clf.evaluate(X), before.evaluate(X)
    assert ev.path == ev_before.path == "full"
    walked = [c.set_params(early_stopping=True).evaluate(X) for c in (clf, before)]
    assert walked[0].work_fraction < walked[1].work_fraction


def test_a_smaller_size_is_kept_where_the_count_decides_or_the_pilot_prices_it_no_slower(
    monkeypatch,
):
    """MNIST 1 vs 7 (float32 pixels / 255): the smaller COUNT_SIZES are fitted too, the
    evaluator's pilot forced to each answer. Where the fastest option's rule would be evaluated
    in full, the least work by the count is kept — here a smaller size — and the rules are
    ranked at the count. Where it would be walked, the fastest by the measured costs (which
    never rank the smaller sizes, even priced at nothing) is kept, unless the pilot prices the
    least work's walk no slower."""
    from attentive.bench_corpus import load_problem
    from attentive.sketch import COUNT_SIZES

    problem = load_problem("mnist-1v7")
    monkeypatch.setattr(AttentiveClassifier, "_walk_price", lambda self, option, X: None)
    clf = _calibrated(problem)
    choice = clf.sketch_choice_
    least = min(choice.options, key=_counted_total)
    assert (least.k, least.m) in COUNT_SIZES and least.count_only
    assert clf.sketch_costs_ == "count"
    assert (clf.sketched_walk_.sketch.k, clf.sketched_walk_.sketch.m) == (least.k, least.m)
    # The choice names the option kept beside its own best (which leaves the smaller sizes out).
    assert choice.kept is least and choice.best is not least
    assert f"best {choice.best.label!r}, kept {least.label!r}" in repr(choice)
    _assert_ranked_at_the_count(clf)
    _agree(clf, problem.X_test[:200])

    # Where the walk pays: the measured costs decide, the smaller sizes priced at nothing are
    # not ranked, and the pilot prices the least work's walk slower than the fastest's.
    measured = AttentiveClassifier._sketch_cost_model

    def free_small(self):
        model = measured(self)
        return lambda sk: (0.0, 0.0) if (sk.k, sk.m) in COUNT_SIZES else model(sk)

    def pilot(fastest_price, other_price):
        def price(self, option, X):
            return fastest_price if option is self.sketch_choice_.best else other_price

        return price

    monkeypatch.setattr(AttentiveClassifier, "_walk_price", pilot(0.5, 0.6))
    monkeypatch.setattr(AttentiveClassifier, "_sketch_cost_model", free_small)
    walked = _calibrated(problem)
    assert walked.sketch_costs_ == "measured"
    options = walked.sketch_choice_.options
    assert all(o.total == 0.0 for o in options if o.count_only)
    fastest = min((o for o in options if not o.count_only), key=lambda o: o.total)
    assert fastest.total > 0.0 and walked.sketch_choice_.kept is fastest
    kept = walked._kept_sketch()
    kept_size = (None, None) if kept is None else (kept.k, kept.m)
    assert kept_size == (fastest.k, fastest.m)

    # The pilot prices the least work's walk as fast as the fastest's: the least work is kept.
    monkeypatch.setattr(AttentiveClassifier, "_sketch_cost_model", measured)
    monkeypatch.setattr(AttentiveClassifier, "_walk_price", pilot(0.5, 0.5))
    tied = _calibrated(problem)
    least = min(tied.sketch_choice_.options, key=_counted_total)
    assert least is not tied.sketch_choice_.best
    assert tied.sketch_choice_.kept is least and tied.sketch_costs_ == "measured"
    assert (tied.sketched_walk_.sketch.k, tied.sketched_walk_.sketch.m) == (least.k, least.m)
    _agree(tied, problem.X_test[:200])


@pytest.mark.slow
def test_where_the_walk_pays_the_fastest_is_kept_unless_the_pilot_prices_less_work_as_fast(
    monkeypatch,
):
    """MNIST 8 against the rest: the fastest option's rule is walked (the pilot says it pays),
    so the fastest by the measured costs is kept, or the least work by the count where the
    pilot's own prices (recorded as fit asks for them) put its walk no slower; the kept rule
    walks the test rows."""
    from attentive.bench_corpus import load_problem

    problem = load_problem("mnist-8vrest")
    prices = {}
    real = AttentiveClassifier._walk_price

    def recorded(self, option, X):
        prices[option.label] = real(self, option, X)
        return prices[option.label]

    monkeypatch.setattr(AttentiveClassifier, "_walk_price", recorded)
    clf = _calibrated(problem)
    choice = clf.sketch_choice_
    best, least = choice.best, min(choice.options, key=_counted_total)
    assert clf.sketch_costs_ == "measured" and prices[best.label] is not None
    if least is not best and choice.kept is least:
        assert prices[least.label] is not None and prices[least.label] <= prices[best.label]
    else:
        assert choice.kept is best
        assert (
            least is best or prices[least.label] is None or prices[least.label] > prices[best.label]
        )
    assert (clf.sketched_walk_.sketch.k, clf.sketched_walk_.sketch.m) == (
        choice.kept.k,
        choice.kept.m,
    )
    assert clf.evaluate(problem.X_test[:3000]).path == "walk"


def test_fit_sketch_takes_the_rows_fit_took_whatever_the_model_saw_before():
    """A pipeline whose SVC was frozen after seeing more rows (its ``shape_fit_``) takes its
    sketch from the rows ``fit`` had; a classifier that held nothing out and was calibrated
    afterwards is not told to split its rows."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=900, n_features=10, n_informative=6, random_state=4)
    scaler = StandardScaler().fit(X[:600])
    svc = SVC(gamma="scale").fit(scaler.transform(X[:600]), y[:600])
    model = make_pipeline(scaler, FrozenEstimator(svc))
    kw = {"side": "both", "random_state": 0, "reference_walks": "in-sample"}
    clf = AttentiveClassifier(FrozenEstimator(model), boundary="curved", **kw).fit(X[:300], y[:300])
    assert clf.fit_sketch(X[:300], y[:300]).sketch_choice_ is not None
    with pytest.raises(ValueError, match="300 rows, got 600") as refused:
        clf.fit_sketch(X[:600], y[:600])
    assert "calibration_split" not in str(refused.value)
    clf.calibrate(X[600:])
    with pytest.raises(ValueError, match="300 rows, got 250") as refused:
        clf.fit_sketch(X[:250], y[:250])
    assert "calibration_split" not in str(refused.value)
    # The pipeline itself (its scaler refitted, its SVC frozen): the SVC's support_ indexes the
    # 600 rows it saw, not fit's, so each row's own term is found by value (none here: the
    # scaler fitted on 300 rows moves them), where it used to raise IndexError.
    kw["reference_walks"] = "leave-one-out"
    loo = AttentiveClassifier(model, boundary="curved", **kw).fit(X[:300], y[:300])
    assert loo.n_own_terms_ == 0
    np.testing.assert_array_equal(
        loo._own_terms(X[:300]), loo.terms_.own_terms(loo.walk_.prepare(X[:300]))
    )


def test_the_sketch_choice_prints_its_options_not_their_arrays(digits):
    """In a notebook, ``clf.sketch_choice_`` shows each option's cost and rule in a few lines
    (it holds walks, statistics and profiles of the model's size: once a megabyte printed)."""
    clf = digits[0]
    choice = clf.sketch_choice_
    text = repr(choice)
    assert len(text) < 200 * len(choice.options)
    assert f"best {choice.best.label!r}" in text
    for option in choice.options:
        assert option.label in text and f"total {option.total:.4g}" in text
        assert option.family is None or f"{option.family} z={option.scale:g}" in text


def test_fit_sketch_behind_a_pipeline_takes_fits_rows_in_either_precision():
    """The rows' digest is of the rows as given (in double precision), not as a pipeline's
    transform makes them: a StandardScaler makes float32 and float64 copies of the same pixels
    differ, and fit's own rows as float64 are still fit's; reversed, they are not."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from attentive.data import load_dataset

    ds = load_dataset("mnist-t10k-2v5")
    X = np.asarray(ds.X_train, dtype=np.float32)[:300]
    y = np.asarray(ds.y_train)[:300]
    scaler = StandardScaler().fit(X)
    assert not np.array_equal(scaler.transform(X), scaler.transform(X.astype(np.float64)))
    model = make_pipeline(StandardScaler(), SVC(gamma="scale"))
    clf = AttentiveClassifier(model, boundary="curved", side="both", sketch="none", random_state=0)
    clf.fit(X, y)
    clf.set_params(sketch=(4, 16))
    assert clf.fit_sketch(X.astype(np.float64), y).sketched_walk_ is not None
    with pytest.raises(ValueError, match="not those rows in that order"):
        clf.fit_sketch(X[::-1], y[::-1])
