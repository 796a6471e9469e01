"""The second-running-sum prototype (benchmarks/prototype_mass_regression.py) measures against the
library: with the running sum as its only regressor it must be the library's regression family."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from attentive.bench_rules import calibration_split, fitted_classifier
from attentive.data import load_dataset
from attentive.families import make_family
from attentive.families.regression import regression_statistics
from attentive.grid import default_grid, grid_outcomes

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "prototype_mass_regression.py"


@pytest.fixture(scope="module")
def proto():
    spec = importlib.util.spec_from_file_location("prototype_mass_regression", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fitted():
    ds = load_dataset("digits-2v5")
    X_fit, X_cal, y_fit = calibration_split(ds, seed=1)
    clf = fitted_classifier("digits-2v5", X_fit, y_fit, seed=1)
    return clf, X_fit, X_cal, ds.X_test


def test_lines_on_the_running_sum_alone_are_the_regression_family(proto, fitted):
    clf, X_fit, _, _ = fitted
    own = clf._own_terms(X_fit)
    R = clf.walk_.partial_scores(X_fit, leave_own_out=True, own=own)
    beta, sd = proto.fit_lines(R[:, :, None], R[:, -1])
    reg = regression_statistics(clf.walk_statistics_.pooled)
    n = R.shape[1]
    # The library takes its lines from the reference statistics' moments, the prototype solves
    # least squares on the walks themselves: the same lines (the last position is S_n itself).
    np.testing.assert_allclose(beta[: n - 1, 1], reg.slope[: n - 1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(beta[: n - 1, 0], reg.intercept[: n - 1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sd[: n - 1], reg.residual_std[: n - 1], rtol=1e-5, atol=1e-9)


def test_prototype_outcomes_are_the_grids(proto, fitted):
    clf, _, _, X_test = fitted
    S = clf.walk_.partial_scores(X_test)
    fam = make_family("regression", clf.walk_statistics_, clf.theta_s_, "both")
    grid = default_grid()
    lower, upper = fam.crossing_scores(S[:, :-1], False), fam.crossing_scores(S[:, :-1], True)
    mine = proto.outcomes(S, lower, upper, grid, clf.theta_s_)
    ref = grid_outcomes(S, fam, grid)
    np.testing.assert_array_equal(mine.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(mine.positive, ref.positive)


def test_mass_sums_are_running_sums_of_term_magnitudes(proto, fitted):
    clf, _, X_cal, _ = fitted
    A = proto.mass_sums(clf, X_cal)
    w = clf.walk_
    H = w.terms.term_values(w.prepare(X_cal), w.order)  # h_k(x) in walk order, uncentred
    # Brute force: add |w_k| h_k one position at a time.
    expected = np.zeros_like(A)
    acc = np.zeros(A.shape[0])
    for k in range(A.shape[1]):
        acc = acc + abs(w.ordered_weights[k]) * H[:, k]
        expected[:, k] = acc
    np.testing.assert_allclose(A, expected, rtol=1e-12, atol=1e-12)
