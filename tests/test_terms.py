"""Term decomposition reproduces decision_function for every supported model (SPEC §1)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import relative_error
from sklearn.ensemble import AdaBoostClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, sigmoid_kernel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from attentive import UnsupportedModelError, decompose
from attentive.errors import NonFiniteInput
from attentive.terms import integer_power

KERNELS = ["linear", "rbf", "poly", "sigmoid"]


def _full_score(terms, X):
    Xp = terms.prepare(X)
    return terms.intercept + terms.term_values(Xp) @ terms.weights


@pytest.mark.parametrize("kernel", KERNELS)
def test_svc_dense_terms_reproduce_decision_function(binary_problem, kernel):
    Xtr, ytr, Xte, _ = binary_problem
    params = {"gamma": 0.05, "coef0": 0.5} if kernel == "sigmoid" else {}
    model = SVC(kernel=kernel, C=1.0, degree=3, **params).fit(Xtr, ytr)
    terms = decompose(model)
    assert terms.kind == "kernel"
    assert terms.n_terms == model.support_vectors_.shape[0]
    assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9


@pytest.mark.parametrize("kernel", KERNELS)
def test_svc_sparse_terms_reproduce_decision_function(sparse_problem, kernel):
    Xtr, ytr, Xte, _ = sparse_problem
    model = SVC(kernel=kernel, C=1.0, gamma=0.5, coef0=0.1).fit(Xtr, ytr)
    terms = decompose(model)
    assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9


@pytest.mark.parametrize(
    "model",
    [LinearSVC(C=0.5), LogisticRegression(C=2.0, max_iter=2000)],
    ids=["LinearSVC", "LogisticRegression"],
)
@pytest.mark.parametrize("sparse", [False, True])
def test_linear_models_decompose_by_feature(binary_problem, sparse_problem, model, sparse):
    Xtr, ytr, Xte, _ = sparse_problem if sparse else binary_problem
    model = model.fit(Xtr, ytr)
    terms = decompose(model)
    assert terms.kind == "linear"
    assert terms.n_terms == Xtr.shape[1]
    assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9


def test_pipeline_head_is_applied_first(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    pipe = make_pipeline(StandardScaler(), SVC(kernel="rbf", gamma=0.1)).fit(Xtr * 10 + 3, ytr)
    terms = decompose(pipe)
    assert terms.head is not None
    X = Xte * 10 + 3
    assert relative_error(_full_score(terms, X), pipe.decision_function(X)) < 1e-9


def test_nested_pipeline_and_frozen_estimator(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    inner = make_pipeline(StandardScaler(), LinearSVC())
    outer = make_pipeline(StandardScaler(with_std=False), inner).fit(Xtr, ytr)
    terms = decompose(FrozenEstimator(outer))
    assert relative_error(_full_score(terms, Xte), outer.decision_function(Xte)) < 1e-9


def test_adaboost_samme_terms_are_weak_learners(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    model = AdaBoostClassifier(
        DecisionTreeClassifier(max_depth=1), n_estimators=25, random_state=0
    ).fit(Xtr, ytr)
    terms = decompose(model)
    assert terms.kind == "boosting"
    h = terms.term_values(Xte)
    assert set(np.unique(h)) <= {-1.0, 1.0}
    assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9


def test_weak_learners_see_the_rows_their_own_predict_would(binary_problem):
    """Trees get the rows converted once a block and no checks (their predict would convert
    them to float32 on every call); the terms are each learner's own ``predict`` on the rows as
    given (float64, float32, Fortran order, sparse), and a learner that is no tree gets the
    rows as they are."""
    import scipy.sparse as sp

    Xtr, ytr, Xte, _ = binary_problem
    Xte = Xte * 1.000001 + 1e-7  # values between float32 neighbours: the conversion matters
    trees = AdaBoostClassifier(
        DecisionTreeClassifier(max_depth=3), n_estimators=20, random_state=0
    ).fit(Xtr, ytr)
    logistic = AdaBoostClassifier(LogisticRegression(), n_estimators=5, random_state=0).fit(
        Xtr, ytr
    )
    sparse = sp.csr_matrix(np.where(np.abs(Xte) > 0.5, Xte, 0.0))
    for model in (trees, logistic):
        terms = decompose(model)
        for rows in (Xte, Xte.astype(np.float32), np.asfortranarray(Xte), sparse):
            expected = np.column_stack(
                [
                    np.where(t.predict(rows) == model.classes_[1], 1.0, -1.0)
                    for t in model.estimators_
                ]
            )
            idx = np.arange(3, len(model.estimators_), 2)
            np.testing.assert_array_equal(terms.term_values(rows), expected)
            np.testing.assert_array_equal(terms.term_values(rows, idx), expected[:, idx])
        assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9
    # Float32 CSR rows with unsorted indices: the same, and the caller's matrix left as it was.
    shuffled = sparse.astype(np.float32)
    for r in range(shuffled.shape[0]):
        lo, hi = shuffled.indptr[r], shuffled.indptr[r + 1]
        shuffled.indices[lo:hi] = shuffled.indices[lo:hi][::-1].copy()
        shuffled.data[lo:hi] = shuffled.data[lo:hi][::-1].copy()
    shuffled.has_sorted_indices = False
    kept = (shuffled.indices.copy(), shuffled.data.copy())
    expected = np.column_stack(
        [np.where(t.predict(shuffled) == trees.classes_[1], 1.0, -1.0) for t in trees.estimators_]
    )
    np.testing.assert_array_equal(decompose(trees).term_values(shuffled), expected)
    np.testing.assert_array_equal(shuffled.indices, kept[0])
    np.testing.assert_array_equal(shuffled.data, kept[1])

    # Rows off float32's finite values (NaN, ±inf, beyond its range): what each tree's own
    # checked predict does with them (a refusal and its message, or its values for NaN).
    def outcome(call):
        try:
            return call()
        except ValueError as error:
            return str(error)

    for bad in (np.nan, np.inf, -1e39):
        rows = Xte.copy()
        rows[3, 1] = bad
        own = outcome(
            lambda rows=rows: np.column_stack(
                [
                    np.where(t.predict(rows) == trees.classes_[1], 1.0, -1.0)
                    for t in trees.estimators_
                ]
            )
        )
        ours = outcome(lambda rows=rows: decompose(trees).term_values(rows))
        if isinstance(own, str):
            assert ours == own, bad
        else:
            np.testing.assert_array_equal(ours, own)
    # Sparse rows with 64-bit indices, which the trees' unchecked predict cannot read: checked.
    wide = sparse.copy()
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    expected = np.column_stack(
        [np.where(t.predict(sparse) == trees.classes_[1], 1.0, -1.0) for t in trees.estimators_]
    )
    np.testing.assert_array_equal(decompose(trees).term_values(wide), expected)


def _libsvm_powi(base: float, times: int) -> float:
    """libsvm's ``powi`` (svm.cpp), one value at a time."""
    tmp, ret, t = base, 1.0, times
    while t > 0:
        if t % 2 == 1:
            ret *= tmp
        tmp = tmp * tmp
        t //= 2
    return ret


@pytest.mark.parametrize("degree", [0, 1, 2, 3, 4, 5, 7, 8])
def test_integer_power_multiplies_in_libsvms_order(degree):
    rng = np.random.default_rng(degree)
    base = rng.normal(scale=1.5, size=(7, 11))
    expected = np.array([[_libsvm_powi(float(v), degree) for v in row] for row in base])
    work = base.copy()
    got = integer_power(work, degree)
    assert got is work  # in place
    np.testing.assert_array_equal(got, expected)  # the same products, so the same bits
    np.testing.assert_allclose(got, base.astype(np.longdouble) ** degree, rtol=4e-15 * degree)


def test_integer_power_refuses_a_negative_degree():
    with pytest.raises(ValueError, match="degree must be ≥ 0; got -1"):
        integer_power(np.ones((2, 2)), -1)


@pytest.mark.parametrize("degree", [0, 2, 5])
@pytest.mark.parametrize("sparse", [False, True])
def test_polynomial_terms_match_scikit_learn_for_any_degree(
    binary_problem, sparse_problem, degree, sparse
):
    Xtr, ytr, Xte, _ = sparse_problem if sparse else binary_problem
    model = SVC(kernel="poly", degree=degree, gamma=0.3, coef0=0.7).fit(Xtr, ytr)
    terms = decompose(model)
    # scikit-learn's polynomial_kernel refuses degree 0, which SVC accepts (every value is 1).
    want = (
        polynomial_kernel(Xte, model.support_vectors_, degree=degree, gamma=0.3, coef0=0.7)
        if degree
        else np.ones((Xte.shape[0], terms.n_terms))
    )
    np.testing.assert_allclose(terms.term_values(Xte), want, rtol=1e-13, atol=1e-300)
    assert relative_error(_full_score(terms, Xte), model.decision_function(Xte)) < 1e-9


@pytest.mark.parametrize(
    ("kernel", "reference"),
    [
        ("linear", lambda X, Y: linear_kernel(X, Y)),
        ("poly", lambda X, Y: polynomial_kernel(X, Y, degree=2, gamma=0.3, coef0=0.7)),
        ("sigmoid", lambda X, Y: sigmoid_kernel(X, Y, gamma=0.3, coef0=0.7)),
    ],
)
def test_dense_kernel_values_are_scikit_learns_bit_for_bit(binary_problem, kernel, reference):
    """Dense rows skip scikit-learn's checks but not its arithmetic (degree 2: one square)."""
    Xtr, ytr, Xte, _ = binary_problem
    model = SVC(kernel=kernel, degree=2, gamma=0.3, coef0=0.7).fit(Xtr, ytr)
    terms = decompose(model)
    idx = np.random.default_rng(0).permutation(terms.n_terms)[:17]
    got = terms.term_values(Xte, idx)
    np.testing.assert_array_equal(got, reference(Xte, model.support_vectors_[idx]))


@pytest.mark.parametrize("kernel", ["linear", "poly", "sigmoid"])
def test_dense_kernel_values_refuse_non_finite_and_misshapen_rows(binary_problem, kernel):
    Xtr, ytr, Xte, _ = binary_problem
    terms = decompose(SVC(kernel=kernel).fit(Xtr, ytr))
    bad = Xte[:5].copy()
    bad[3, 1] = np.nan
    with pytest.raises(NonFiniteInput, match="Input X contains NaN or infinity"):
        terms.term_values(bad)
    with pytest.raises(ValueError, match=f"2-D array of {Xtr.shape[1]} features; got shape"):
        terms.term_values(Xte[:, :-1])


def test_term_subset_matches_columns_of_full_matrix(binary_problem):
    Xtr, ytr, Xte, _ = binary_problem
    terms = decompose(SVC(kernel="rbf").fit(Xtr, ytr))
    idx = np.array([5, 0, 3])
    np.testing.assert_allclose(terms.term_values(Xte, idx), terms.term_values(Xte)[:, idx])


def test_multiclass_model_is_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.repeat([0, 1, 2], 30)
    with pytest.raises(UnsupportedModelError, match="binary"):
        decompose(SVC().fit(X, y))


def test_unsupported_model_and_kernel_are_refused(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    with pytest.raises(UnsupportedModelError, match="not supported"):
        decompose(DecisionTreeClassifier().fit(Xtr, ytr))
    K = Xtr @ Xtr.T
    with pytest.raises(UnsupportedModelError, match="precomputed"):
        decompose(SVC(kernel="precomputed").fit(K, ytr))
    with pytest.raises(UnsupportedModelError, match="is not fitted"):
        decompose(SVC())


class _FitCounting:
    """Mixed into a model: counts its fits."""

    fits = 0

    def fit(self, *args, **kwargs):
        type(self).fits += 1
        return super().fit(*args, **kwargs)


def test_a_model_that_will_be_refused_is_refused_before_its_fit(binary_problem):
    """An unsupported model, kernel or algorithm is refused before the wrapped model is fitted
    (a forest of 200 trees on 20,000 rows trained for 19 s only to be refused), and with the
    project's message (SVC's own about a precomputed matrix's shape came first)."""
    from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
    from sklearn.frozen import FrozenEstimator

    from attentive import AttentiveClassifier

    Xtr, ytr, _, _ = binary_problem

    class Forest(_FitCounting, RandomForestClassifier):
        pass

    class Kernel(_FitCounting, SVC):
        pass

    class Boost(_FitCounting, AdaBoostClassifier):
        pass

    cases = [
        (Forest(n_estimators=3), "Forest is not supported"),
        (make_pipeline(StandardScaler(), Forest(n_estimators=3)), "Forest is not supported"),
        (Kernel(kernel="precomputed"), "kernel='precomputed' is not supported"),
        (make_pipeline(StandardScaler(), Kernel(kernel=np.dot)), "kernel=<.*is not supported"),
    ]
    if "algorithm" in AdaBoostClassifier().get_params():
        cases.append((Boost(algorithm="SAMME.R"), "algorithm='SAMME.R'"))
    for model, message in cases:
        for cls in (Forest, Kernel, Boost):
            cls.fits = 0
        with pytest.raises(UnsupportedModelError, match=message):
            AttentiveClassifier(model).fit(Xtr, ytr)  # (X is not square: SVC would say so)
        assert Forest.fits == Kernel.fits == Boost.fits == 0, model
    # What is supported still fits, frozen or not.
    assert AttentiveClassifier(Kernel()).fit(Xtr, ytr).n_terms_ > 0 and Kernel.fits == 1
    frozen = FrozenEstimator(SVC().fit(Xtr, ytr))
    assert AttentiveClassifier(frozen).fit(Xtr, ytr).n_terms_ == frozen.estimator.n_support_.sum()


def test_decomposition_pickles(binary_problem):
    import pickle

    Xtr, ytr, Xte, _ = binary_problem
    terms = decompose(make_pipeline(StandardScaler(), SVC()).fit(Xtr, ytr))
    again = pickle.loads(pickle.dumps(terms))
    np.testing.assert_array_equal(_full_score(again, Xte), _full_score(terms, Xte))


def test_one_table_of_supported_models_drives_decomposition_persistence_and_docs(tmp_path):
    """Every model of attentive.SUPPORTED decomposes, saves and loads through the project's skops
    path, and is named in the README; anything else is refused by both."""
    from pathlib import Path

    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    from attentive import SUPPORTED
    from attentive.errors import UnsupportedModelError
    from attentive.models.persistence import check_supported_model, load_model, save_model

    X, y = make_classification(n_samples=120, n_features=6, random_state=0)
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for row in SUPPORTED:
        model = row.model_class().fit(X, y)
        terms = decompose(model)
        np.testing.assert_allclose(
            terms.intercept + terms.term_values(X) @ terms.weights,
            model.decision_function(X),
            rtol=1e-9,
            atol=1e-9,
        )
        check_supported_model(model)
        path = save_model(model, tmp_path / f"{row.name}.skops")
        loaded = load_model(path)
        np.testing.assert_allclose(loaded.decision_function(X), model.decision_function(X))
        assert f"`{row.name}`" in readme
    forest = RandomForestClassifier(n_estimators=2).fit(X, y)
    for check in (decompose, check_supported_model):
        with pytest.raises(UnsupportedModelError, match="RandomForestClassifier is not supported"):
            check(forest)


@pytest.mark.parametrize("sparse", [False, True])
def test_own_terms_find_each_training_support_vector(binary_problem, sparse_problem, sparse):
    Xtr, ytr, Xte, _ = sparse_problem if sparse else binary_problem
    model = SVC(kernel="rbf", gamma=0.5).fit(Xtr, ytr)
    own = decompose(model).own_terms(Xtr)
    # Brute force: scikit-learn's support_ lists the training rows that became support vectors,
    # in the order of the terms.
    expected = np.full(Xtr.shape[0], -1)
    expected[model.support_] = np.arange(model.support_.size)
    np.testing.assert_array_equal(own, expected)
    assert (decompose(model).own_terms(Xte) == -1).all()


def test_own_terms_through_a_pipeline_and_for_models_without_them(binary_problem):
    Xtr, ytr, _, _ = binary_problem
    pipe = make_pipeline(StandardScaler(), SVC(kernel="poly", degree=2)).fit(Xtr * 5 + 1, ytr)
    terms = decompose(pipe)
    own = terms.own_terms(terms.prepare(Xtr * 5 + 1))
    svc = pipe[-1]
    assert (own[svc.support_] == np.arange(svc.support_.size)).all()
    assert np.delete(own, svc.support_).max() == -1
    linear = decompose(LogisticRegression().fit(Xtr, ytr))
    assert (linear.own_terms(Xtr) == -1).all()
