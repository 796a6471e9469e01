"""The Nyström sketch of an RBF SVM (SPEC §3b) against explicit per-term formulas."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import PCA
from sklearn.svm import SVC

from attentive import InvalidParameterError, UnsupportedModelError, decompose
from attentive.errors import NonFiniteInput
from attentive.sketch import fit_sketch, sketch_cost, walked_term_cost
from attentive.sketch.nystrom import AXIS_SHARE, RCOND, principal_directions


@pytest.fixture(scope="module")
def rbf_problem(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    model = SVC(kernel="rbf", gamma=0.1).fit(Xtr, ytr)
    return model, decompose(model), Xtr, Xte


def _rbf(A, B, gamma):
    """K(a, b) = exp(−γ ‖a − b‖²), one pair at a time."""
    return np.array([[np.exp(-gamma * np.sum((a - b) ** 2)) for b in B] for a in A])


def _spec_sketch(sketch, X, S):
    """SPEC §3b term by term: ``h̃_i(x) = e^{−γ r(x)} e^{−γ r(s_i)} K(P x̃, L) K(L,L)⁺ K(L, P s̃_i)``
    with ``r(z) = ‖(z − x̄) − PᵀP (z − x̄)‖²``."""
    g, P, L, xbar = sketch.gamma, sketch.components, sketch.landmarks, sketch.mean
    W = np.linalg.pinv(_rbf(L, L, g), rcond=RCOND, hermitian=True)

    def r(z):
        zc = z - xbar
        return float(np.sum((zc - P.T @ (P @ zc)) ** 2))

    out = np.empty((X.shape[0], S.shape[0]))
    for row, x in enumerate(X):
        left = np.exp(-g * r(x)) * _rbf([P @ (x - xbar)], L, g)[0]
        for i, s in enumerate(S):
            right = np.exp(-g * r(s)) * _rbf(L, [P @ (s - xbar)], g)[:, 0]
            out[row, i] = left @ W @ right
    return out


@pytest.mark.parametrize(("k", "m", "landmarks"), [(3, 20, "kmeans++"), (5, 40, "sample")])
def test_sketch_values_match_the_spec_formula_term_by_term(rbf_problem, k, m, landmarks):
    _, terms, Xtr, Xte = rbf_problem
    sketch = fit_sketch(terms, Xtr, k=k, m=m, landmarks=landmarks, random_state=1)
    S = terms.support_vectors
    expected = _spec_sketch(sketch, Xte[:12], S)
    got = sketch.term_values(Xte[:12])
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12)
    idx = np.array([4, 0, 7])
    np.testing.assert_allclose(sketch.term_values(Xte[:12], idx), expected[:, idx], rtol=1e-8)


def test_principal_directions_are_the_top_k_of_the_reference_rows(rbf_problem):
    _, terms, Xtr, _ = rbf_problem
    sketch = fit_sketch(terms, Xtr, k=3, m=10)
    P = sketch.components
    np.testing.assert_allclose(P @ P.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(sketch.mean, Xtr.mean(axis=0))
    _, vecs = np.linalg.eigh(np.cov(Xtr.T))
    top = vecs[:, ::-1][:, :3]
    np.testing.assert_allclose(P.T @ P, top @ top.T, atol=1e-6)  # the same subspace


def test_nothing_discarded_and_every_point_a_landmark_gives_the_exact_kernel(rbf_problem):
    """k = d: the projection discards nothing (r = 0); landmarks = all reference rows (which hold
    the support vectors): the Nyström form is exact on them."""
    _, terms, Xtr, _ = rbf_problem
    d = Xtr.shape[1]
    sketch = fit_sketch(terms, Xtr, k=d, m=Xtr.shape[0], landmarks="sample")
    exact = terms.term_values(Xtr[:40])
    assert np.max(np.abs(sketch.term_values(Xtr[:40]) - exact)) < 1e-6


def test_more_landmarks_approach_the_exact_kernel_on_new_rows():
    """k = d = 2 and more and more landmarks: the sketch converges to K on rows not fitted."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    terms = decompose(SVC(kernel="rbf", gamma=0.5).fit(X[:600], y[:600]))
    exact = terms.term_values(X[1000:])
    errors = [
        np.max(np.abs(fit_sketch(terms, X[:1000], k=2, m=m).term_values(X[1000:]) - exact))
        for m in (5, 20, 80, 320)
    ]
    assert errors[0] > errors[1] > errors[2] > errors[3]
    assert errors[3] < 1e-4


def test_a_projection_that_discards_keeps_the_spec_per_term_form_on_landmarks(rbf_problem):
    """k < d with every reference row a landmark: on reference rows the Nyström factor is exact,
    so h̃ is SPEC §3b's per-term sketch exp(−γ(‖P x̃ − P s̃‖² + r(x) + r(s))), which differs from
    K by the dropped cross term exp(2γ (x̃ − PᵀP x̃)·(s̃ − PᵀP s̃))."""
    _, terms, Xtr, _ = rbf_problem
    sketch = fit_sketch(terms, Xtr, k=3, m=Xtr.shape[0], landmarks="sample")
    g, P, xbar = sketch.gamma, sketch.components, sketch.mean
    X, S = Xtr[:20] - xbar, terms.support_vectors - xbar
    QX, QS = X - X @ P.T @ P, S - S @ P.T @ P
    proj = ((X @ P.T)[:, None, :] - (S @ P.T)[None, :, :]) ** 2
    per_term = np.exp(
        -g * (proj.sum(axis=2) + (QX**2).sum(axis=1)[:, None] + (QS**2).sum(axis=1)[None, :])
    )
    np.testing.assert_allclose(sketch.term_values(Xtr[:20]), per_term, atol=1e-6)
    cross = np.exp(2 * g * QX @ QS.T)
    np.testing.assert_allclose(per_term * cross, terms.term_values(Xtr[:20]), rtol=1e-9)


def test_without_the_correction_the_sketch_is_the_kernel_of_the_projections(rbf_problem):
    _, terms, Xtr, Xte = rbf_problem
    sketch = fit_sketch(terms, Xtr, k=3, m=20, corrected=False)
    g, P, L, xbar = sketch.gamma, sketch.components, sketch.landmarks, sketch.mean
    W = np.linalg.pinv(_rbf(L, L, g), rcond=RCOND, hermitian=True)
    left = _rbf((Xte[:8] - xbar) @ P.T, L, g)
    right = _rbf(L, (terms.support_vectors - xbar) @ P.T, g)
    np.testing.assert_allclose(sketch.term_values(Xte[:8]), left @ W @ right, rtol=1e-8, atol=1e-14)
    # The correction is separable: one factor per row, one per support vector.
    corrected = fit_sketch(terms, Xtr, k=3, m=20)
    np.testing.assert_array_equal(corrected.landmarks, sketch.landmarks)  # the same fit

    def r(Z):
        Zc = Z - xbar
        return ((Zc - Zc @ P.T @ P) ** 2).sum(axis=1)

    factor = np.exp(-g * r(Xte))[:, None] * np.exp(-g * r(terms.support_vectors))
    np.testing.assert_allclose(
        corrected.term_values(Xte), factor * sketch.term_values(Xte), rtol=1e-8, atol=1e-14
    )


def test_sketch_cost_counts_a_rows_multiply_adds():
    n, d, k, m = 300, 784, 16, 64
    projection, norm, distances, exponentials, dot = k * d, d, m * k, m, m
    assert sketch_cost(n, d, k, m) == pytest.approx(
        (projection + norm + distances + exponentials + dot) / (n * d)
    )
    # Coordinates for directions: the projection is k of the row's values, no multiply-add.
    assert sketch_cost(n, d, k, m, coordinates=True) == pytest.approx(
        (norm + distances + exponentials + dot) / (n * d)
    )
    assert walked_term_cost(d, m) == pytest.approx((d + m) / d)
    assert sketch_cost(10 * n, d, k, m) == pytest.approx(sketch_cost(n, d, k, m) / 10)


def test_a_rows_features_take_nothing_per_term(rbf_problem, monkeypatch):
    _, terms, Xtr, Xte = rbf_problem
    sketch = fit_sketch(terms, Xtr, k=3, m=16)
    a = sketch.features(Xte)
    assert a.shape == (Xte.shape[0], 16)

    def refuse(*args, **kwargs):
        raise AssertionError("the sketch computed a kernel value per term")

    monkeypatch.setattr("attentive.terms.kernel_values", refuse)
    monkeypatch.setattr(type(terms), "term_values", refuse)
    np.testing.assert_array_equal(sketch.features(Xte), a)


def test_a_non_rbf_model_gets_a_clear_not_available(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    for model in (SVC(kernel="poly").fit(Xtr, ytr), SVC(kernel="linear").fit(Xtr, ytr)):
        with pytest.raises(UnsupportedModelError, match=r"RBF SVMs only.*without a sketch"):
            fit_sketch(decompose(model), Xtr)
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(UnsupportedModelError, match="linear terms"):
        fit_sketch(decompose(LogisticRegression().fit(Xtr, ytr)), Xtr)


def test_bad_sizes_and_inputs_are_refused_with_what_was_expected(rbf_problem):
    _, terms, Xtr, Xte = rbf_problem
    with pytest.raises(
        InvalidParameterError,
        match=r"k=9 is too large: at most 8 \(8 features, 240 reference rows\)",
    ):
        fit_sketch(terms, Xtr, k=9)
    with pytest.raises(
        InvalidParameterError, match=r"m=241 is too large: at most 240 \(240 reference rows\)"
    ):
        fit_sketch(terms, Xtr, k=2, m=241)
    for bad in (0, -1, 2.5, True, "4"):
        with pytest.raises(InvalidParameterError, match="k must be a whole number"):
            fit_sketch(terms, Xtr, k=bad)
    with pytest.raises(InvalidParameterError, match="landmarks must be one of"):
        fit_sketch(terms, Xtr, landmarks="grid")
    with pytest.raises(InvalidParameterError, match="fitted on dense rows"):
        fit_sketch(terms, sp.csr_matrix(Xtr), k=2, m=8)
    sketch = fit_sketch(terms, Xtr, k=2, m=8)
    # Sparse rows to score are fine (a model fitted on dense rows scores sparse ones too).
    np.testing.assert_allclose(
        sketch.features(sp.csr_matrix(Xte)), sketch.features(Xte), rtol=1e-12, atol=0
    )
    for rows in (Xte[:, :5], sp.csr_matrix(Xte[:, :5])):
        with pytest.raises(ValueError, match="8 features"):
            sketch.features(rows)
    bad = sp.csr_matrix(Xte)
    bad.data[3] = np.nan
    with pytest.raises(NonFiniteInput):
        sketch.features(bad)


def test_fit_is_seeded(rbf_problem):
    _, terms, Xtr, Xte = rbf_problem
    a = fit_sketch(terms, Xtr, k=3, m=16, random_state=5).term_values(Xte)
    b = fit_sketch(terms, Xtr, k=3, m=16, random_state=5).term_values(Xte)
    c = fit_sketch(terms, Xtr, k=3, m=16, random_state=6).term_values(Xte)
    np.testing.assert_array_equal(a, b)
    assert np.max(np.abs(a - c)) > 0


def test_directions_computed_once_serve_every_smaller_k(rbf_problem):
    """``principal_directions`` of the rows ``fit_sketch`` samples: a sketch given them takes
    their first k, spans the top-k principal subspace, and draws the same landmarks."""
    from attentive.sketch import principal_directions

    _, terms, Xtr, _ = rbf_problem
    directions = principal_directions(Xtr, 6, random_state=3)
    np.testing.assert_allclose(directions @ directions.T, np.eye(6), atol=1e-10)
    _, vecs = np.linalg.eigh(np.cov(Xtr.T))
    for k in (2, 4, 6):
        shared = fit_sketch(terms, Xtr, k=k, m=12, random_state=3, directions=directions)
        np.testing.assert_array_equal(shared.components, directions[:k])
        top = vecs[:, ::-1][:, :k]
        np.testing.assert_allclose(shared.components.T @ shared.components, top @ top.T, atol=1e-6)
    # k equal to the features' count: the exact decomposition both ways, and the same sample and
    # landmarks (the random draws do not depend on where the directions came from).
    full = principal_directions(Xtr, 8, random_state=3)
    alone = fit_sketch(terms, Xtr, k=8, m=12, random_state=3)
    shared = fit_sketch(terms, Xtr, k=8, m=12, random_state=3, directions=full)
    np.testing.assert_array_equal(shared.components, alone.components)
    np.testing.assert_array_equal(shared.landmarks, alone.landmarks)
    np.testing.assert_array_equal(shared.term_factors, alone.term_factors)
    with pytest.raises(InvalidParameterError, match=r"at least k=7 principal directions of 8"):
        fit_sketch(terms, Xtr, k=7, m=12, directions=directions)
    with pytest.raises(InvalidParameterError, match=r"directions must hold"):
        fit_sketch(terms, Xtr, k=2, m=12, directions=directions[:, :5])


@pytest.fixture(scope="module")
def decorrelated_problem():
    """Rows behind a PCA fitted on the reference rows (a pipeline's head), and the same rows
    before it (correlated): (terms on the PCA's rows, their reference rows, new rows, terms on
    the correlated rows, their reference rows)."""
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(900, 10)) @ rng.normal(size=(10, 10))
    y = (Z[:, 0] + 0.5 * Z[:, 1] ** 2 > 0.5).astype(int)
    X = PCA(random_state=0).fit(Z[:600]).transform(Z)
    terms = decompose(SVC(gamma="scale").fit(X[:600], y[:600]))
    mixed = decompose(SVC(gamma="scale").fit(Z[:600], y[:600]))
    return terms, X[:600], X[600:], mixed, Z[:600]


def test_decorrelated_rows_take_their_coordinates_for_directions(decorrelated_problem):
    """Where the reference rows are decorrelated (behind a PCA), P is the k coordinates of
    largest variance (rows of the identity, largest first), which hold what the top k principal
    directions hold; the sketch is then SPEC §3b's with that P, term by term, dense and sparse,
    and its count has no projection. The same rows before the PCA get principal directions."""
    terms, Xtr, Xte, mixed, Ztr = decorrelated_problem
    variance = np.var(Xtr, axis=0)
    top = np.argsort(-variance)[:4]
    eigen = np.linalg.eigvalsh(np.cov(Xtr.T, bias=True))[::-1]
    assert variance[top].sum() >= AXIS_SHARE * eigen[:4].sum()
    sketch = fit_sketch(terms, Xtr, k=4, m=24, random_state=2)
    assert sketch.on_coordinates
    np.testing.assert_array_equal(sketch.components, np.eye(Xtr.shape[1])[top])
    np.testing.assert_array_equal(principal_directions(Xtr, 6)[:4], sketch.components)
    expected = _spec_sketch(sketch, Xte[:10], terms.support_vectors)
    np.testing.assert_allclose(sketch.term_values(Xte[:10]), expected, rtol=1e-8, atol=1e-12)
    sparse = sketch.features(sp.csr_matrix(Xte[:10]))
    np.testing.assert_allclose(sparse, sketch.features(Xte[:10]), rtol=1e-12, atol=1e-15)
    d, n = Xtr.shape[1], terms.n_terms
    assert sketch.cost == pytest.approx((d + 24 * (4 + 2)) / (n * d))
    before = fit_sketch(mixed, Ztr, k=4, m=24, random_state=2)
    assert not before.on_coordinates
    assert np.count_nonzero(np.abs(before.components) > 1e-3) > 4 * 2
    assert before.cost == pytest.approx(((4 + 1) * d + 24 * (4 + 2)) / (mixed.n_terms * d))


def test_coordinates_only_where_they_hold_nearly_what_the_directions_hold():
    """A correlated pair among decorrelated columns: the top direction is its diagonal, which
    holds more than any one coordinate by more than AXIS_SHARE allows (the two leading
    coordinates hold what the two leading directions hold, but every leading k' must), so no
    coordinates; with the pair barely correlated, coordinates."""
    from attentive.sketch.nystrom import axis_directions

    rng = np.random.default_rng(1)
    base = rng.normal(size=(2000, 6)) * np.array([1.0, 0.9, 0.5, 0.4, 0.3, 0.2])
    for tilt, expect in ((1.0, False), (0.03, True)):
        X = base.copy()
        X[:, 1] += tilt * X[:, 0]  # correlated (tilt 1) or nearly not (tilt 0.03)
        X -= X.mean(axis=0)
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        axes = axis_directions(X, Vt[:2])
        assert (axes is not None) is expect
        # Brute force, for k' = 1 and 2: the k' largest columns' squared norm against the k'
        # leading directions'.
        columns = np.sort((X**2).sum(axis=0))[::-1]
        held = [columns[:j].sum() >= AXIS_SHARE * ((X @ Vt[:j].T) ** 2).sum() for j in (1, 2)]
        assert all(held) is expect
