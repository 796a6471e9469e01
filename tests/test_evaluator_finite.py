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
from attentive.evaluator import dense as dense_module
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
    """8 features: augmented rows (double), or single-precision exp (mixed)."""
    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, flip_y=0.05, random_state=3
    )
    return (*_walk_and_boundary(X[:300], y[:300], 0.3), X[300:])


@pytest.fixture(scope="module")
def images():
    """144 features on the 8-bit grid, a zero border: the grid copy and the raw rows."""
    X, y = _images(np.random.default_rng(3), 1100)
    return (*_walk_and_boundary(X[:300], y[:300], 0.05), X[300:])


@pytest.fixture(scope="module")
def images_off_grid(images):
    """The same images read back from float32: off the grid, so the walk's one copy of the rows
    holds them restricted to the products' columns in float64, their norms taken as it reads
    them."""
    walk, boundary, theta_s, X = images
    return walk, boundary, theta_s, X.astype(np.float32).astype(np.float64)


# (problem, boundary, evaluate_blocked options, rows): every path that computes RBF row norms.
PATHS = {
    "augmented": ("low", "curved", {"precision": "double"}, None),
    "mixed exp": ("low", "curved", {"precision": "mixed"}, None),
    "grid copy": ("images", "curved", {"precision": "double"}, None),
    "grid copy, 2 threads": ("images", "curved", {"precision": "double", "n_jobs": 2}, None),
    "raw rows": ("images", "curved", {"precision": "double", "block_size": 600}, None),
    "restricted copy": ("images_off_grid", "curved", {"precision": "double"}, None),
    "single product": ("images", "curved", {"precision": "mixed"}, None),
    "full": ("images", "full", {}, None),
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
    for row, col in ((0, 5), (X.shape[0] - 1, 5), (X.shape[0] // 2, border)):
        Xb = X.copy()
        Xb[row, col] = bad
        with pytest.raises(NonFiniteInput), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            evaluate_blocked(walk, Xb, boundary, theta_s, **options)


def test_the_grid_copy_refuses_a_nan_outside_the_products_columns(images, monkeypatch):
    """The grid copy checks the grid on the products' columns only: a NaN elsewhere reaches it
    (and must not pass it) through |x|²."""
    walk, boundary, theta_s, X = images
    seen = []
    original = dense_module.grid_rows

    def grid_rows(plan, rows, idx):
        out = original(plan, rows, idx)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(dense_module, "grid_rows", grid_rows)
    Xb = X.copy()
    Xb[400, 0] = np.nan
    with pytest.raises(NonFiniteInput), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        evaluate_blocked(walk, Xb, boundary, theta_s, precision="double", chunk_size=300)
    assert seen and all(seen[:1])  # the chunks before row 400's did use the grid copy
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
        for precision in ("double", "mixed"):
            ev = evaluate_blocked(walk, X, boundary, theta_s, precision=precision)
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
            assert type(got.value) is ValueError
            if model != "pipeline":  # a pipeline's first step checks its input itself
                assert str(got.value) == str(expected.value)


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
