"""The scikit-learn contract on real data: scores agree with predictions for every rule, side,
scale and evaluation path, and a pipeline sees the caller's data as it is."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.compose import make_column_transformer
from sklearn.ensemble import AdaBoostClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC, LinearSVC

from attentive import AttentiveClassifier, family_names
from attentive.calibration import CalibrationWarning
from attentive.data import load_dataset
from attentive.evaluation import apply_boundary, evaluation_options
from attentive.rules import rule_names


def _agree(clf, X, threshold=None):
    """predict(X) == classes_[(decision_function(X) >= θ)] and the same for evaluate()."""
    theta = clf.threshold if threshold is None else threshold
    d = clf.decision_function(X)
    p = clf.predict(X)
    np.testing.assert_array_equal(p, clf.classes_[(d >= theta).astype(int)])
    ev = clf.evaluate(X)
    np.testing.assert_array_equal(ev.labels, clf.classes_[(ev.decision >= theta).astype(int)])
    np.testing.assert_array_equal(ev.labels, p)
    return ev


@pytest.fixture(scope="module")
def mnist():
    """Real held-out data: MNIST t10k 3 vs 8, a model fitted on 700 training images."""
    ds = load_dataset("mnist-t10k-3v8")
    model = SVC(gamma=0.05).fit(ds.X_train[:700], ds.y_train[:700])
    return ds, model


BOUNDARIES = rule_names("family", "budget", "full")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize("delta", [0.01, 0.3])
def test_scores_agree_with_predictions_for_every_rule(mnist, boundary, side, delta):
    ds, model = mnist
    X_ref, y_ref = ds.X_train[:700], ds.y_train[:700]
    clf = AttentiveClassifier(
        FrozenEstimator(model), boundary=boundary, side=side, delta=delta, random_state=0
    ).fit(X_ref, y_ref)
    auto = _agree(clf, ds.X_test)
    # The rule's walk: the same stops, sides and scores as the reference on the full partial
    # scores; "auto" too where it walks, else the full model's decisions.
    ev = _agree(copy.copy(clf).set_params(early_stopping=True), ds.X_test)
    assert ev.path == (
        "budget" if boundary == "budget" else "walk" if boundary != "full" else "full"
    )
    S, A = clf.partial_scores(ds.X_test), clf.partial_masses(ds.X_test)
    for score in ("estimate", "boundary"):
        ref = apply_boundary(
            S, clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_, stopped_score=score, A=A
        )
        if score == "estimate":
            for got in (ev, auto) if auto.path != "full" else (ev,):
                np.testing.assert_array_equal(got.n_evaluated, ref.n_evaluated)
                np.testing.assert_array_equal(got.positive, ref.positive)
                np.testing.assert_allclose(got.decision, ref.decision, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(ref.positive, ref.decision >= clf.threshold)
    if auto.path == "full":
        np.testing.assert_allclose(auto.decision, clf.offset_ + S[:, -1], rtol=1e-6, atol=1e-6)
    for precision in ("double", "mixed"):
        for jobs in (1, 2):
            with evaluation_options(precision=precision, n_jobs=jobs, block_size=16):
                _agree(clf, ds.X_test)
    boundary_scores = clf.set_params(stopped_score="boundary")
    _agree(boundary_scores, ds.X_test)


@pytest.mark.parametrize("boundary", rule_names("sketched"))
@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize("delta", [0.01, 0.3])
def test_scores_agree_with_predictions_for_every_sketched_rule(mnist, boundary, side, delta):
    """A sketched rule (SPEC §3b) stops, scores and labels as its reference — the sketched
    walk's own partial scores and running masses — and its scores agree with its labels."""
    ds, model = mnist
    X_ref, y_ref = ds.X_train[:700], ds.y_train[:700]
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary=boundary,
        side=side,
        delta=delta,
        sketch=(8, 32),
        random_state=0,
    ).fit(X_ref, y_ref)
    _agree(clf, ds.X_test)
    ev = _agree(copy.copy(clf).set_params(early_stopping=True), ds.X_test)
    assert ev.path == "walk" and ev.sketch_cost > 0
    walk = clf.sketched_walk_
    S, A = walk.partial_scores_and_masses(ds.X_test)
    for score in ("estimate", "boundary"):
        ref = apply_boundary(
            S, clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_, stopped_score=score, A=A
        )
        np.testing.assert_array_equal(ref.positive, ref.decision >= clf.threshold)
        if score == "estimate":
            np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
            np.testing.assert_array_equal(ev.positive, ref.positive)
            np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-6, atol=1e-6)
    assert ev.stopped.any()


@pytest.mark.parametrize("family", [*family_names(), "auto"])
@pytest.mark.parametrize("delta", [0.01, 0.2])
@pytest.mark.parametrize("threshold", [0.0, 0.4])
def test_calibrated_scores_agree_with_predictions_negative_scales_included(
    mnist, family, delta, threshold
):
    ds, model = mnist
    clf = AttentiveClassifier(
        FrozenEstimator(model),
        boundary="curved",
        side="both",
        threshold=threshold,
        random_state=0,
    ).fit(ds.X_train[:700], ds.y_train[:700])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        clf.calibrate(ds.X_train[700:], delta=delta, alpha=0.05, family=family)
    _agree(clf, ds.X_test)  # on the path the pilot chooses
    # and walked, where the rule's stops are what decides
    ev = _agree(copy.copy(clf).set_params(early_stopping=True), ds.X_test)
    assert ev.path == "walk" and ev.stopped.any()
    if delta == 0.2 and family == "curved":
        # Aggressive calibration goes to a negative scale, where the rule's own estimate
        # S_t + M_t lies on the wrong side of θ for many stops: the scores must agree all the
        # same (this is what the check above would catch without the move to the right side).
        assert clf.calibration_.chosen_scale < 0
        S = clf.partial_scores(ds.X_test)
        stopped = np.flatnonzero(ev.stopped)
        t = ev.n_evaluated[stopped]
        raw = clf.boundary_.stop_estimate(t - 1, ev.stop_side[stopped], S[stopped, t - 1])
        wrong = (clf.offset_ + raw >= threshold) != ev.positive[stopped]
        assert wrong.mean() > 0.2


def test_other_models_sparse_input_and_boosting_agree():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 30))
    X[np.abs(X) < 1.0] = 0.0
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=600) > 0).astype(int)
    Xs = sp.csr_matrix(X)
    models = {
        "linear-sparse": (LinearSVC().fit(Xs[:400], y[:400]), Xs),
        "logistic": (LogisticRegression().fit(X[:400], y[:400]), X),
        "adaboost": (AdaBoostClassifier(n_estimators=40).fit(X[:400], y[:400]), X),
        "pipeline": (make_pipeline(StandardScaler(), SVC()).fit(X[:400], y[:400]), X),
    }
    for model, data in models.values():
        for boundary in ("curved", "regression", "finite-population", "mass-regression", "budget"):
            for side in ("lower", "both"):
                # early_stopping=True: the sparse linear model walks too ("auto" would evaluate
                # it in full, tests/test_early_stopping.py).
                clf = AttentiveClassifier(
                    FrozenEstimator(model),
                    boundary=boundary,
                    side=side,
                    delta=0.3,
                    early_stopping=True,
                ).fit(data[:400], y[:400])
                _agree(clf, data[400:])


def test_a_pipeline_sees_the_callers_dataframe():
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame(
        {
            "size": rng.normal(size=n),
            "weight": rng.normal(size=n),
            "colour": rng.choice(["green", "red", "blue"], size=n),
        }
    )
    y = (frame["size"] + (frame["colour"] == "green") * 1.5 + 0.3 * rng.normal(size=n)) > 0.7
    y = y.astype(int).to_numpy()
    pipe = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(), ["colour"]), (StandardScaler(), ["size", "weight"])
        ),
        SVC(),
    )
    clf = AttentiveClassifier(pipe, boundary="full").fit(frame[:300], y[:300])
    test = frame[300:]
    np.testing.assert_allclose(
        clf.decision_function(test), clf.estimator_.decision_function(test), rtol=1e-9, atol=1e-12
    )
    assert list(clf.feature_names_in_) == ["size", "weight", "colour"]
    stopping = AttentiveClassifier(pipe, boundary="curved", side="both", delta=0.2).fit(
        frame[:300], y[:300]
    )
    _agree(stopping, test)
    calibrated = AttentiveClassifier(pipe, boundary="calibrated", delta=0.2, alpha=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        calibrated.fit(frame[:300], y[:300])
    _agree(calibrated, test)
    # A column renamed: the pipeline's ColumnTransformer names it, as the bare pipeline does.
    with pytest.raises(ValueError, match=r"columns are missing: \{'size'\}"):
        clf.predict(test[["weight", "size", "colour"]].rename(columns={"size": "length"}))
