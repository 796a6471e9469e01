"""Which rules centering moves (SPEC §1–§3).

Centring subtracts ``C_t = Σ_{k≤t} w μ`` from the running sum and ``C_n`` from the offset. A rule
that estimates the rest of the walk from reference walks (curved: ``S_t + M_t``; the regressions:
``a_t + b_t S_t``, fitted on ``(S_t, S_n)``) sees the same statistic minus θ_S under every centring,
so it stops the same examples at the same terms. The constant rule's V and the finite-population
rule's per-term spread are of the centred terms, so centring moves them. The dashboard's Centering
help states this; here it is checked against the estimator's own evaluation.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.svm import SVC

from attentive import AttentiveClassifier

INVARIANT = ("curved", "regression", "heteroscedastic", "mass-regression")


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(
        n_samples=500, n_features=12, n_informative=6, flip_y=0.05, random_state=3
    )
    model = SVC(kernel="rbf", gamma="scale", C=1.0).fit(X[:250], y[:250])
    out = {}
    for centering in ("positive", "all", "none"):
        clf = AttentiveClassifier(
            FrozenEstimator(model), centering=centering, random_state=5, early_stopping=True
        )
        out[centering] = clf.fit(X[250:400], y[250:400])
    return out, X[400:]


def _outcome(clf, X, family, z):
    ev = clf.with_rule(family, side="both", threshold=0.0, z=z).evaluate(X)
    return ev.positive, ev.n_evaluated


@pytest.mark.parametrize("family", INVARIANT)
def test_rules_on_reference_walks_of_the_remainder_do_not_depend_on_centering(fitted, family):
    classifiers, X = fitted
    for z in (0.5, 1.5):
        pos, n_eval = _outcome(classifiers["positive"], X, family, z)
        assert (n_eval < classifiers["positive"].n_terms_).mean() > 0.2  # the rule does stop
        for centering in ("all", "none"):
            other_pos, other_eval = _outcome(classifiers[centering], X, family, z)
            np.testing.assert_array_equal(other_pos, pos)
            np.testing.assert_array_equal(other_eval, n_eval)


def test_centering_moves_the_constant_rule(fitted):
    classifiers, X = fitted
    means = {c: _outcome(clf, X, "constant", 1.0)[1].mean() for c, clf in classifiers.items()}
    assert len({round(m, 6) for m in means.values()}) == 3, means
