"""NaN and infinite examples: kernel models on dense arrays find them in the evaluator (RBF from
the squared norms every path computes anyway, linear / polynomial / sigmoid kernels from each tile
or chunk they read), so the estimator skips its own pass over the input and raises scikit-learn's
error; every other model is checked by the estimator as before. Finite values whose squares
overflow are evaluated, not refused.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC
from sklearn.utils.validation import validate_data
from test_evaluator_columns import _images

from attentive.boundaries import budget_boundary, curved_boundary, full_boundary
from attentive.boundaries import reference_statistics as stats
from attentive.estimator import AttentiveClassifier
from attentive.evaluation import apply_boundary
from attentive.evaluator import NonFiniteInput, evaluate_blocked, rejects_non_finite
from attentive.evaluator.sources import grid as grid_module
from attentive.terms import decompose
from attentive.walk import make_walk


def _walk_and_boundary(X, y, gamma):
    model = SVC(gamma=gamma, C=1.0).fit(X, y)
    walk = make_walk(decompose(model), X, y, random_state=0)[0]
    theta_s = walk.theta_s(0.0)
    boundary = curved_boundary(
        stats(walk, X[y == 1]), 0.2, theta_s, "both", upper_stats=stats(walk, X[y == 0])
    )
    return walk, boundary, theta_s


@pytest.fixture(scope="module")
def low():
    """8 features: augmented rows in double precision."""
    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, flip_y=0.05, random_state=3
    )
    return (*_walk_and_boundary(X[:300], y[:300], 0.3), X[300:])


@pytest.fixture(scope="module")
def images():
    """144 features on the 8-bit grid, a zero border: the grid source, exact."""
    X, y = _images(np.random.default_rng(3), 1100)
    return (*_walk_and_boundary(X[:300], y[:300], 0.05), X[300:])


@pytest.fixture(scope="module")
def images_near_grid(images):
    """The same images stored in float32: near the grid (the grid source with a band), or in
    double precision the augmented rows."""
    walk, boundary, theta_s, X = images
    return walk, boundary, theta_s, X.astype(np.float32)


@pytest.fixture(scope="module")
def wide():
    """100 standardised features, off any grid: float32 products of the rows as given."""
    X, y = make_classification(n_samples=900, n_features=100, n_informative=20, random_state=4)
    X = StandardScaler().fit_transform(X)
    return (*_walk_and_boundary(X[:300], y[:300], "scale"), X[300:])


# (problem, boundary, evaluate_blocked options, rows): every path that computes RBF row norms,
# each term source's (walks, the pilot's, full and budgeted evaluation, tiny problems).
PATHS = {
    "rbf": ("low", "curved", {"precision": "double"}, None),
    "rbf, walk": ("low", "curved", {"path": "walk"}, None),
    "rbf-single": ("wide", "curved", {}, None),
    "rbf-single, walk in blocks": ("wide", "curved", {"path": "walk", "block_size": 8}, None),
    "rbf-grid": ("images", "curved", {"path": "walk"}, None),
    "rbf-grid, 2 threads": ("images", "curved", {"n_jobs": 2, "path": "walk"}, None),
    "rbf-grid, one block": ("images", "curved", {"block_size": 600, "path": "walk"}, None),
    "rbf-grid near": ("images_near_grid", "curved", {"path": "walk"}, None),
    "rbf, near-grid rows": ("images_near_grid", "curved", {"precision": "double"}, None),
    "auto": ("images", "curved", {}, None),
    "full": ("images", "full", {}, None),
    "full, near grid": ("images_near_grid", "full", {}, None),
    "full, single": ("wide", "full", {}, None),
    "budget": ("low", "budget", {"chunk_size": 100}, None),
    "budget, grid": ("images", "budget", {"chunk_size": 100, "n_jobs": 2}, None),
    "tiny": ("images", "curved", {}, 20),
}


def _problem(request, name, kind, rows):
    walk, boundary, theta_s, X = request.getfixturevalue(name)
    if kind == "full":
        boundary = full_boundary(walk.n_terms)
    elif kind == "budget":
        boundary = budget_boundary(walk.n_terms, 10)
    return walk, boundary, theta_s, X[:rows].copy()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_every_rbf_path_refuses_non_finite_rows(request, path, bad):
    name, kind, options, rows = PATHS[path]
    walk, boundary, theta_s, X = _problem(request, name, kind, rows)
    assert rejects_non_finite(walk, X)
    evaluate_blocked(walk, X, boundary, theta_s, **options)  # finite: no error
    # The first row (a pilot's), the last (the last chunk's); an image's border column is one
    # where every support vector is 0, left out of the products (only |x|² reads it).
    border = 0 if name.startswith("images") else 3
    bad = np.float32(bad) if X.dtype == np.float32 else bad
    for row, col in ((0, 5), (X.shape[0] - 1, 5), (X.shape[0] // 2, border)):
        Xb = X.copy()
        Xb[row, col] = bad
        with pytest.raises(NonFiniteInput), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            evaluate_blocked(walk, Xb, boundary, theta_s, **options)


def test_the_grid_source_refuses_a_nan_outside_the_products_columns(images, monkeypatch):
    """A NaN where every support vector is 0 takes its rows off the grid; the next source finds
    it (through |x|²) and refuses it: the chunks before it used the grid."""
    walk, boundary, theta_s, X = images
    seen = []
    original = grid_module.grid_rows

    def grid_rows(columns, rows, ahead=None):
        out = original(columns, rows, ahead)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(grid_module, "grid_rows", grid_rows)
    Xb = X.copy()
    Xb[400, 0] = np.nan
    with pytest.raises(NonFiniteInput), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        evaluate_blocked(
            walk, Xb, boundary, theta_s, chunk_size=300, block_size=16, path="walk", n_jobs=1
        )
    assert seen[0] is True  # the chunks before row 400's did use the grid copy
    assert seen[-1] is False


@pytest.mark.parametrize("name", ["low", "images"])
def test_finite_values_whose_squares_overflow_are_evaluated(request, name):
    walk, boundary, theta_s, X = request.getfixturevalue(name)
    X = X.copy()
    X[[0, 7, 300], 40 % X.shape[1]] = 1e200  # |x|² = inf, every value finite
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = apply_boundary(
            walk.partial_scores(X), boundary, theta_s, walk.offset, walk.terms.classes
        )
    for precision in ("double", "single"):
        with warnings.catch_warnings():
            # (The float32 paths' casts of 1e200 warn, as they always have; the norms do not.)
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.filterwarnings("error", message=".*vecdot", category=RuntimeWarning)
            ev = evaluate_blocked(walk, X, boundary, theta_s, precision=precision, path="walk")
        np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
        np.testing.assert_array_equal(ev.labels, ref.labels)


MODELS = {
    "rbf": (SVC(gamma=0.3), "low", True),
    "rbf on images": (SVC(gamma=0.05), "images", True),
    "poly": (SVC(kernel="poly", degree=2), "low", True),
    "sigmoid": (SVC(kernel="sigmoid", gamma=0.05), "low", True),
    "linear": (LinearSVC(), "low", False),
    "pipeline": (make_pipeline(StandardScaler(), SVC(gamma=0.3)), "low", False),
}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("boundary", ["curved", "full", "budget"])
def test_the_estimator_raises_scikit_learns_error(request, model, boundary):
    estimator, name, evaluator_checks = MODELS[model]
    X = request.getfixturevalue(name)[3]  # the test rows: fit on some, evaluate the others
    y = (X.sum(axis=1) > np.median(X.sum(axis=1))).astype(int)
    kwargs = {"budget": 0.5} if boundary == "budget" else {"delta": 0.2}
    clf = AttentiveClassifier(estimator, boundary=boundary, random_state=0, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X[:300], y[:300])
    X = X[300:].copy()
    assert rejects_non_finite(clf.walk_, X) is evaluator_checks
    clf.predict(X)
    for bad in (np.nan, np.inf):
        X[len(X) // 2, 5] = bad
        with pytest.raises(ValueError) as expected:
            validate_data(clf, X, accept_sparse=["csr", "csc"], dtype=np.float64, reset=False)
        for method in (clf.predict, clf.decision_function, clf.evaluate, clf.partial_scores):
            with pytest.raises(ValueError) as got, warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                method(X)
            if model != "pipeline":  # a pipeline's first step checks its input itself
                assert type(got.value) is ValueError
                assert str(got.value) == str(expected.value)
            elif bad != np.inf:  # (the scaler refuses infinity itself; NaN it passes on)
                assert isinstance(got.value, ValueError)
                assert "after the pipeline's transforms" in str(got.value)


@pytest.mark.parametrize("model", ["rbf", "linear"])
def test_the_estimator_evaluates_finite_values_whose_sum_overflows(low, model):
    """The estimator's own check (models the evaluator does not check) is a sum: one that
    overflows sends the input to scikit-learn's exact check, which lets it through."""
    X = low[3]
    y = (X.sum(axis=1) > np.median(X.sum(axis=1))).astype(int)
    clf = AttentiveClassifier(MODELS[model][0], delta=0.2, random_state=0).fit(X[:300], y[:300])
    X = X[300:].copy()
    X[3, [1, 2]] = 1.5e308  # finite; their sum is not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert clf.predict(X).shape == (X.shape[0],)
