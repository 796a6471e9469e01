"""Shared fixtures: small binary problems and fitted models of every supported kind."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import settings
from sklearn.datasets import make_classification

# Property tests draw new examples on every local run (to find what a fixed draw misses); CI
# (.ci/run sets HYPOTHESIS_PROFILE=ci) draws the same ones on every run, so that what lands on
# main stays green for the same code.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def binary_problem():
    """A small dense binary problem: (X_train, y_train, X_test, y_test)."""
    X, y = make_classification(
        n_samples=360, n_features=8, n_informative=5, flip_y=0.05, class_sep=0.8, random_state=0
    )
    return X[:240], y[:240], X[240:], y[240:]


@pytest.fixture(scope="session")
def sparse_problem():
    """A small sparse binary problem (CSR)."""
    rng = np.random.default_rng(1)
    X = sp.random(300, 60, density=0.1, format="csr", random_state=rng)
    w = rng.normal(size=60)
    y = (X @ w + 0.1 * rng.normal(size=300) > np.median(X @ w)).astype(int)
    return X[:200], y[:200], X[200:], y[200:]


@pytest.fixture(autouse=True, scope="module")
def _forget_the_dashboards_sketches():
    """A walk's sketch, once fitted, is shared by every later dashboard session on that walk
    (as when served), in this process: a module that fits one for the default page left it to
    the modules after it, whose pages then offered sketched rules (tests/test_app_errors.py
    before tests/test_app_state.py failed two of the latter's tests), so that which tests pass
    depended on how the test runner shared the modules out. Each module starts
    without one. (Nothing is imported for the modules that never load the dashboard.)"""
    yield
    import sys

    sketches = sys.modules.get("attentive.app.sketches")
    if sketches is not None:
        sketches.sketch.clear()


@pytest.fixture
def offline_data_home(tmp_path_factory, monkeypatch):
    """A data home shared by the session's tests (models trained once) and no network: the
    mirror is a closed local port, so a download fails at once."""
    home = tmp_path_factory.getbasetemp() / "data-home"
    monkeypatch.setenv("ATTENTIVE_DATA", str(home))
    monkeypatch.setenv("ATTENTIVE_MIRROR", "http://127.0.0.1:9/")
    return home


def relative_error(a, b) -> float:
    """max |a - b| relative to the scale of b (at least 1)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def curved_boundary_for_test(lower, upper, side, rng):
    """A boundary of kind "curved" with the given thresholds, the other side's removed for a
    one-sided ``side`` (in place), an estimate ``S_t + random intercept`` for stopped scores."""
    from attentive.boundaries import Boundary

    n = lower.shape[0]
    if side == "lower":
        upper[:] = np.inf
    if side == "upper":
        lower[:] = -np.inf
    return Boundary(
        "curved",
        side,
        lower,
        upper,
        estimate_slope=np.ones(n),
        estimate_intercept=rng.normal(size=n),
    )


def pytest_collection_modifyitems(config, items):
    """Modules holding a test marked ``slow`` run first, each module's tests kept together and in
    order. Two workers (``make test``) share the tests out in this order; a long test left to the
    end runs alone while the other worker has nothing left. The browser tests (one at a time)
    keep their order: ``test_bad_inputs`` starts a Playwright of its own, which fails while the
    session's is running (a second sync Playwright in one thread)."""
    slow_modules = {
        item.module
        for item in items
        if item.get_closest_marker("slow") and not item.get_closest_marker("browser")
    }
    items.sort(key=lambda item: item.module not in slow_modules)
