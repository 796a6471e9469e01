"""``early_stopping``: walk where it can save time, evaluate in full where it cannot.

A linear model over a sparse matrix is evaluated in full by default (one sparse product; no walk
beats it, docs/speed.md); ``early_stopping=True`` walks it anyway and ``False`` never walks.
(Where "auto" evaluates dense models in full, from its pilot's prediction, is in
tests/test_evaluation_paths.py.)
Each is checked against an independent computation: scikit-learn's own ``decision_function``
for full evaluation, and the reference walk over every partial score
(:func:`attentive.evaluation.apply_boundary`) for the walk.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import SVC, LinearSVC

from attentive import AttentiveClassifier
from attentive.evaluation import apply_boundary, evaluate
from attentive.evaluator.plan import InvalidParameterError, walk_plan


def _reference(clf, X):
    """The rule's walk, from every partial score (independent of the blocked evaluator)."""
    return apply_boundary(
        clf.partial_scores(X),
        clf.boundary_,
        clf.theta_s_,
        clf.offset_,
        clf.classes_,
        threshold=clf.threshold,
    )


@pytest.fixture(scope="module")
def sparse_linear(sparse_problem):
    Xtr, ytr, Xte, _ = sparse_problem
    clf = AttentiveClassifier(
        LinearSVC(random_state=0), boundary="constant", side="both", delta=0.1, random_state=0
    ).fit(Xtr, ytr)
    return clf, Xte


def test_auto_evaluates_a_sparse_linear_model_in_full(sparse_linear):
    clf, Xte = sparse_linear
    assert clf.early_stopping == "auto"
    model = clf.estimator_
    np.testing.assert_allclose(
        clf.decision_function(Xte), model.decision_function(Xte), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_array_equal(clf.predict(Xte), model.predict(Xte))
    ev = clf.evaluate(Xte)
    assert ev.path == "full"
    np.testing.assert_array_equal(ev.n_evaluated, clf.n_terms_)
    assert not ev.stopped.any()
    # The rule itself does stop these walks: that is what "auto" chose not to do.
    assert _reference(clf, Xte).stopped.mean() > 0.2


def test_true_walks_a_sparse_linear_model_as_the_reference_does(sparse_linear):
    clf, Xte = sparse_linear
    walking = _with(clf, early_stopping=True)
    ev = walking.evaluate(Xte)
    assert ev.path == "walk"
    ref = _reference(walking, Xte)
    assert ref.stopped.any() and not ref.stopped.all()
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(walking.predict(Xte), ref.labels)
    # A new rule from with_rule keeps the setting.
    assert walking.with_rule("regression", delta=0.1).early_stopping is True


def _with(clf, **params):
    import copy

    return copy.copy(clf).set_params(**params)


def _eager(clf):
    """A rule that stops every walk at its first term (a lower threshold far above any S_1):
    walking it pays wherever walking can pay at all."""
    return clf.with_rule("constant", side="lower", tau=clf.theta_s_ + 1e6)


@pytest.fixture(scope="module")
def wide_sparse_linear():
    """A linear model over 3,000 sparse features: on dense rows a walk that stops early reads a
    few columns of each, where a full evaluation reads them all (with 60, one product with the
    weights costs less than a walk's fixed part per row, and "auto" evaluates in full)."""
    rng = np.random.default_rng(3)
    X = sp.random(400, 3000, density=0.05, format="csr", random_state=rng)
    y = (X @ rng.normal(size=3000) > 0).astype(int)
    clf = AttentiveClassifier(
        LinearSVC(random_state=0), boundary="constant", side="both", delta=0.1, random_state=0
    ).fit(X[:250], y[:250])
    return clf, X[250:]


def test_auto_walks_dense_input_and_a_sparse_pipeline_head_decides(
    wide_sparse_linear, sparse_linear
):
    clf, Xte = wide_sparse_linear
    eager = _eager(clf)
    dense = Xte.toarray()
    auto, walking = eager.evaluate(dense), _with(eager, early_stopping=True).evaluate(dense)
    assert auto.path == walking.path == "walk" and auto.stopped.any()
    # Narrow rows: the same eager rule is evaluated in full, its walk priced above it.
    narrow, narrow_rows = sparse_linear
    assert _eager(narrow).evaluate(narrow_rows.toarray()).path == "full"
    np.testing.assert_array_equal(auto.n_evaluated, walking.n_evaluated)
    np.testing.assert_array_equal(auto.positive, walking.positive)
    assert eager.evaluate(Xte).path == "full"  # the same rows, sparse
    # The delta = 0.1 rule stops walks too, late: on dense rows "auto" walks it only where the
    # pilot (from the reference rows) predicts walking pays.
    kept = walk_plan(clf.walk_).pilots(clf.boundary_).by_kind
    ev = clf.evaluate(dense)
    (pilot,) = [p for (source, *_), p in kept.items() if source.kind == "linear"]
    assert ev.path == ("walk" if pilot.walk_pays else "full")
    # What the walk sees decides, not what the caller passed: a head that makes sparse rows
    # dense walks them, a head that makes dense rows sparse is evaluated in full.
    rng = np.random.default_rng(5)
    X = sp.random(400, 3000, density=0.05, format="csr", random_state=rng) * 7.0
    y = (X @ rng.normal(size=3000) > 0).astype(int)
    heads = {
        "densify": (FunctionTransformer(lambda Z: Z.toarray(), accept_sparse=True), X),
        "sparsify": (FunctionTransformer(sp.csr_matrix), X.toarray()),
    }
    for name, (head, data) in heads.items():
        piped = _eager(
            AttentiveClassifier(
                make_pipeline(head, LinearSVC(random_state=0)),
                boundary="constant",
                side="both",
                delta=0.1,
                random_state=0,
            ).fit(data[:250], y[:250])
        )
        ev = piped.evaluate(data[250:])
        assert _reference(piped, data[250:]).stopped.mean() > 0.2, name
        if name == "densify":
            assert ev.path == "walk" and ev.stopped.mean() > 0.2
        else:
            assert ev.path == "full"
            np.testing.assert_array_equal(ev.n_evaluated, piped.n_terms_)
            np.testing.assert_allclose(
                ev.decision,
                piped.estimator_.decision_function(data[250:]),
                rtol=1e-12,
                atol=1e-12,
            )


def test_false_never_stops_and_budgets_are_kept(binary_problem, sparse_linear):
    Xtr, ytr, Xte, _ = binary_problem
    clf = AttentiveClassifier(
        SVC(gamma=0.1),
        boundary="curved",
        side="both",
        delta=0.3,
        random_state=0,
        early_stopping=True,
    ).fit(Xtr, ytr)
    assert clf.evaluate(Xte).stopped.any()
    never = _with(clf, early_stopping=False)
    ev = never.evaluate(Xte)
    assert not ev.stopped.any()
    np.testing.assert_allclose(
        never.decision_function(Xte), clf.estimator_.decision_function(Xte), rtol=1e-9, atol=1e-9
    )
    # A budget is not a walk that might stop: "auto" keeps it on sparse linear models too;
    # False evaluates every term whatever the rule, a budget included.
    sparse_clf, Xs = sparse_linear
    budget = sparse_clf.with_rule("budget", budget=10)
    np.testing.assert_array_equal(budget.evaluate(Xs).n_evaluated, 10)
    everything = _with(budget, early_stopping=False).evaluate(Xs)
    np.testing.assert_array_equal(everything.n_evaluated, sparse_clf.n_terms_)
    np.testing.assert_allclose(
        everything.decision, sparse_clf.estimator_.decision_function(Xs), rtol=1e-12, atol=1e-12
    )
    S = sparse_clf.partial_scores(Xs)
    n = sparse_clf.n_terms_
    np.testing.assert_allclose(
        budget.evaluate(Xs).decision,
        np.where(
            (sparse_clf.offset_ + n / 10 * S[:, 9] >= 0),
            np.maximum(sparse_clf.offset_ + n / 10 * S[:, 9], 0.0),
            sparse_clf.offset_ + n / 10 * S[:, 9],
        ),
        rtol=1e-9,
        atol=1e-9,
    )


@pytest.mark.parametrize("value", ["yes", None, 1, "Auto"])
def test_bad_values_are_named(sparse_problem, sparse_linear, value):
    Xtr, ytr, Xte, _ = sparse_problem
    with pytest.raises(InvalidParameterError, match="early_stopping must be 'auto', True or False"):
        AttentiveClassifier(LinearSVC(), early_stopping=value).fit(Xtr, ytr)
    clf, _ = sparse_linear
    with pytest.raises(InvalidParameterError, match=repr(value)):
        _with(clf, early_stopping=value).predict(Xte)


def test_the_core_function_takes_the_path(sparse_linear):
    clf, Xte = sparse_linear
    walked = evaluate(clf.walk_, Xte, clf.boundary_, clf.theta_s_, path="walk")
    auto = evaluate(clf.walk_, Xte, clf.boundary_, clf.theta_s_)
    full = evaluate(clf.walk_, Xte, clf.boundary_, clf.theta_s_, path="full")
    assert walked.path == "walk" and walked.stopped.any()
    np.testing.assert_array_equal(walked.n_evaluated, _reference(clf, Xte).n_evaluated)
    for ev in (auto, full):
        assert ev.path == "full" and not ev.stopped.any()
        np.testing.assert_allclose(
            ev.decision, clf.estimator_.decision_function(Xte), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("how", ["skops", "pickle"])
def test_a_classifier_saved_before_the_parameter_existed_loads_with_the_default(sparse_linear, how):
    import pickle

    import skops.io as sio
    from sklearn.base import clone

    from attentive.models import load_model

    clf, Xte = sparse_linear
    old = _with(clf)
    del old.early_stopping  # what a classifier saved by an earlier version holds
    if how == "skops":
        again = load_model(sio.dumps(old))  # the project's loader: trusted types only
    else:
        again = pickle.loads(pickle.dumps(old))
    assert again.early_stopping == "auto"
    assert again.get_params()["early_stopping"] == "auto"
    assert clone(again).early_stopping == "auto"
    assert "AttentiveClassifier" in repr(again)
    np.testing.assert_array_equal(again.evaluate(Xte).n_evaluated, clf.n_terms_)
    assert again.with_rule("regression", delta=0.1).evaluate(Xte).n_evaluated.min() == clf.n_terms_
    # A value that was saved is kept.
    walking = load_model(sio.dumps(_with(clf, early_stopping=True)))
    assert walking.early_stopping is True and walking.evaluate(Xte).stopped.any()
