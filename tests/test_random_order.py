"""Monte Carlo over random permutations: what the random walk order promises (SPEC §2).

Under ``order="random"`` the walk of one example samples its n terms without replacement, so over
the permutations: ``E[S_t] = (t/n) S_n`` (the budgeted estimate ``(n/B) S_B`` is unbiased) and
``Var[S_t] = V(x) t (n − t) / (n (n − 1))`` with SPEC's bridge variance
``V(x) = Σ_i (w_i X_i(x) − S_n(x)/n)²``. Checked on a real model's walks with many seeds, against
those formulas computed from the terms directly.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from attentive import AttentiveClassifier
from attentive.data import load_dataset
from attentive.walk import make_walk

N_PERMUTATIONS = 4000


@pytest.fixture(scope="module")
def mnist_walks():
    ds = load_dataset("mnist-t10k-4v9")
    X, y = ds.X_train[:500], ds.y_train[:500]
    clf = AttentiveClassifier(SVC(gamma=0.05), boundary="full", random_state=0).fit(X, y)
    return clf, X, y, ds.X_test[:3]


def test_partial_scores_over_permutations_have_the_bridge_moments(mnist_walks):
    clf, X, y, Xe = mnist_walks
    terms = clf.terms_
    # Each example's centred, weighted terms, computed from the model directly.
    walk0 = make_walk(terms, X, y, centering="positive", order="given")[0]
    y_terms = (terms.term_values(Xe) - walk0.mu) * terms.weights
    n = terms.n_terms
    s_n = y_terms.sum(axis=1)
    V = ((y_terms - s_n[:, None] / n) ** 2).sum(axis=1)
    rng = np.random.default_rng(0)
    t_checks = np.array([1, n // 10, n // 2, n - 2])
    samples = np.empty((N_PERMUTATIONS, Xe.shape[0], t_checks.size))
    for k in range(N_PERMUTATIONS):
        perm = rng.permutation(n)
        samples[k] = np.cumsum(y_terms[:, perm], axis=1)[:, t_checks - 1]
    mean, var = samples.mean(axis=0), samples.var(axis=0, ddof=1)
    frac = t_checks / n
    expect_var = V[:, None] * t_checks * (n - t_checks) / (n * (n - 1))
    # Means within 4 Monte Carlo standard errors; variances within 4 standard errors of the
    # sample variance, estimated from the draws' fourth moment (single RBF terms are heavy
    # tailed, so near t = 1 or n − 1 that error is far larger than the normal-theory one).
    se = np.sqrt(expect_var / N_PERMUTATIONS)
    assert np.all(np.abs(mean - frac * s_n[:, None]) <= 4 * se + 1e-12)
    m4 = ((samples - mean) ** 4).mean(axis=0)
    se_var = np.sqrt(np.maximum(m4 - var**2, 0.0) / N_PERMUTATIONS)
    assert np.all(np.abs(var - expect_var) <= 4 * se_var)
    # ... and the check is sharp enough to tell the bridge variance from the plain binomial one
    # (sampling with replacement: t V / n), which it must reject in the middle of the walk.
    with_replacement = V[:, None] * t_checks / n
    assert np.all(np.abs(var - with_replacement)[:, 2] > 4 * se_var[:, 2])
    # The budgeted estimate (n/B) S_B is unbiased for S_n.
    B = n // 10
    budgeted = samples[:, :, 1] * n / B
    assert np.all(np.abs(budgeted.mean(axis=0) - s_n) <= 4 * budgeted.std(axis=0) / 63)
    # The estimator's own walks are such permutations: same S_n whatever the seed, and the
    # per-example V averaged over the reference class is the estimator's variance_ input.
    for seed in (1, 2):
        other = AttentiveClassifier(SVC(gamma=0.05), boundary="full", random_state=seed)
        other.fit(X, y)
        np.testing.assert_allclose(
            other.partial_scores(Xe)[:, -1], clf.partial_scores(Xe)[:, -1], rtol=1e-10
        )


def test_reference_variance_is_the_mean_bridge_variance_of_the_positives(mnist_walks):
    clf, X, y, _ = mnist_walks
    terms = clf.terms_
    walk0 = make_walk(terms, X, y, centering="positive", order="given")[0]
    pos = X[y == clf.classes_[1]]
    y_terms = (terms.term_values(pos) - walk0.mu) * terms.weights
    s_n = y_terms.sum(axis=1)
    V = ((y_terms - s_n[:, None] / terms.n_terms) ** 2).sum(axis=1)
    # Computed independently of reference_statistics, in another order of the terms.
    assert clf.variance_ == pytest.approx(V.mean(), rel=1e-9)
