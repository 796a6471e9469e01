"""Bad inputs not covered elsewhere: the permutation seed, θ of the wrong type, the upload limit's
setting, and the dashboard state's range checks for the seed, δ and θ.

Each case checks the error type (one of ours, a ``ValueError``/``TypeError`` subclass) and that
the message names what was wrong and what is expected. The table in ``docs/robustness.md`` points
at these tests and at the ones in the module tests.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from attentive import AttentiveClassifier
from attentive.data import max_upload_bytes
from attentive.errors import AttentiveError, InvalidParameterError
from attentive.walk import make_order

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("seed", [float("nan"), float("inf"), -1, 2.5, "x"])
def test_bad_seed_is_refused_by_the_estimator(binary_problem, seed):
    Xtr, ytr, _, _ = binary_problem
    with pytest.raises(InvalidParameterError) as info:
        AttentiveClassifier(SVC(), random_state=seed).fit(Xtr, ytr)
    msg = str(info.value)
    assert "random_state" in msg and "whole number ≥ 0" in msg and repr(seed) in msg


def test_bad_seed_is_named_by_the_calibrated_rule_too(binary_problem):
    """The calibration split took the seed to train_test_split, whose message read as a failure
    to split the data ("cannot hold out calibration_size='auto' of 240 examples ...")."""
    Xtr, ytr, _, _ = binary_problem
    with pytest.raises(InvalidParameterError, match=r"^random_state .*got -1\.$"):
        AttentiveClassifier(SVC(), boundary="calibrated", random_state=-1).fit(Xtr, ytr)


@pytest.mark.parametrize(
    "seed", [lambda: 2**32, lambda: np.random.default_rng(3), lambda: np.random.RandomState(3)]
)
def test_every_seed_the_walk_takes_the_calibrated_rule_takes(binary_problem, seed):
    """A Generator or an int of 2**32 or more (which the walk takes; train_test_split does not)
    seeds the calibration split too: the split is calibration_split's with the same seed."""
    from attentive.estimator import calibration_split

    Xtr, ytr, _, _ = binary_problem
    clf = AttentiveClassifier(SVC(), boundary="calibrated", random_state=seed()).fit(Xtr, ytr)
    _, X_cal, _, _ = calibration_split(Xtr, ytr, delta=0.05, random_state=seed())
    assert clf.calibration_.m == X_cal.shape[0]
    # the rows fit held out are calibration_split's (the model never saw them)
    seen = {tuple(r) for r in clf.estimator_.support_vectors_}
    assert not seen & {tuple(r) for r in X_cal}


@pytest.mark.parametrize("seed", [None, 0, 7, np.random.default_rng(3)])
def test_valid_seeds_give_a_permutation(seed):
    order = make_order(50, "random", random_state=seed)
    assert np.array_equal(np.sort(order), np.arange(50))


def test_same_seed_same_order_and_bad_seed_named():
    assert np.array_equal(
        make_order(30, "random", random_state=4), make_order(30, "random", random_state=4)
    )
    with pytest.raises(InvalidParameterError, match=r"random_state .*got -3"):
        make_order(30, "random", random_state=-3)


@pytest.mark.parametrize("theta", ["abc", None, float("-inf")])
def test_theta_not_a_finite_number_is_refused(binary_problem, theta):
    Xtr, ytr, _, _ = binary_problem
    with pytest.raises(InvalidParameterError, match=r"threshold must be a finite number, got"):
        AttentiveClassifier(SVC(), threshold=theta).fit(Xtr, ytr)


def test_upload_limit_setting_must_be_a_number(monkeypatch):
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "lots")
    with pytest.raises(
        InvalidParameterError, match=r"ATTENTIVE_MAX_UPLOAD_MB must be a number.*'lots'"
    ):
        max_upload_bytes()
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "2")
    assert max_upload_bytes() == 2 * 2**20
    with pytest.raises(InvalidParameterError, match="max_bytes must be positive"):
        max_upload_bytes(0)


# ----------------------------------------------------------------------------- dashboard state


@pytest.fixture
def state(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_DATA", str(tmp_path_factory.getbasetemp() / "data-home"))
    monkeypatch.setenv("ATTENTIVE_MIRROR", "http://127.0.0.1:9/")
    from attentive.app.state import DashboardState

    return DashboardState()


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("seed", 2**40, ["Permutation seed", "at most 2147483647"]),
        ("seed", float("inf"), ["Permutation seed", "whole number"]),
        ("seed", "abc", ["Permutation seed"]),
        ("delta", "abc", ["δ"]),
        ("delta", -0.2, ["δ", "at least 0.0001"]),
        ("theta", float("nan"), ["θ", "finite number"]),
        ("theta", -1e12, ["θ", "must be at least"]),
    ],
)
def test_state_refuses_out_of_range_values_and_keeps_the_previous_ones(state, name, value, words):
    before = (getattr(state, name), state.numbers(), state.n_errors)
    assert not state.set_controls(**{name: value})
    assert state.n_errors == before[2] + 1
    for word in words:
        assert word in state.last_error
    assert getattr(state, name) == before[0] and state.numbers() == before[1]


def test_every_user_error_type_is_a_value_or_type_error():
    import attentive.errors as errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, AttentiveError)
        if cls is not AttentiveError:
            assert issubclass(cls, ValueError | TypeError), name


def _with_repeated_entries(A):
    """``A`` as a CSR matrix that stores each entry twice, halved (the same matrix to scipy)."""
    coo = sp.csr_matrix(A).tocoo()
    rows = np.repeat(coo.row, 2)
    indptr = np.searchsorted(rows, np.arange(A.shape[0] + 1))
    out = sp.csr_matrix((np.repeat(coo.data / 2, 2), np.repeat(coo.col, 2), indptr), A.shape)
    assert not out.has_canonical_format and abs(out - sp.csr_matrix(A)).max() == 0
    return out


def test_a_pipeline_takes_a_sparse_matrix_with_repeated_entries_as_its_sum():
    """A review: the sum reached bare models only; behind MaxAbsScaler, the walk and the
    pipeline's own decisions differed by up to 1.2 on the repeated form."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler, Normalizer

    X, y = make_classification(700, 20, random_state=0)
    X[np.abs(X) < 0.7] = 0.0
    for head in (MaxAbsScaler(), Normalizer()):
        clf = AttentiveClassifier(make_pipeline(head, SVC()), random_state=0)
        clf.fit(_with_repeated_entries(X[:400]), y[:400])
        plain = make_pipeline(type(head)(), SVC()).fit(sp.csr_matrix(X[:400]), y[:400])
        twice = _with_repeated_entries(X[400:])
        np.testing.assert_allclose(
            clf.with_rule("full").decision_function(twice),
            plain.decision_function(sp.csr_matrix(X[400:])),
            rtol=1e-7,
            atol=1e-9,
        )


@pytest.mark.parametrize("fitted_on", ["dense", "sparse"])
def test_a_sparse_matrix_with_repeated_entries_is_the_matrix_it_sums_to(fitted_on):
    """A user's trial: an RBF SVC given a CSR matrix storing entries twice (what scipy and
    scikit-learn read as their sums) decided 6 of 300 rows wrongly, by up to 3.1, even in full;
    fitted on sparse rows, the partial scores, the oracle and calibration were off. Every
    method now takes the matrix it sums to (the caller's matrix is left as it is)."""
    X, y = make_classification(700, 20, random_state=0)
    X[np.abs(X) < 0.7] = 0.0
    train = X[:400] if fitted_on == "dense" else sp.csr_matrix(X[:400])
    clf = AttentiveClassifier(SVC(), boundary="curved", random_state=0, early_stopping=True)
    clf.fit(train, y[:400])
    twice, test = _with_repeated_entries(X[400:]), sp.csr_matrix(X[400:])
    np.testing.assert_allclose(
        clf.with_rule("full").decision_function(twice),
        clf.estimator_.decision_function(X[400:]),
        rtol=1e-9,
        atol=1e-12,
    )
    np.testing.assert_array_equal(clf.predict(twice), clf.predict(test))
    np.testing.assert_allclose(clf.partial_scores(twice), clf.partial_scores(test), atol=1e-12)
    np.testing.assert_array_equal(clf.oracle_n_evaluated(twice), clf.oracle_n_evaluated(test))
    assert not twice.has_canonical_format  # (not summed in place)
    if fitted_on == "sparse":  # fitted on the repeated form: the same model and walk
        again = AttentiveClassifier(SVC(), boundary="curved", random_state=0)
        again.fit(_with_repeated_entries(X[:400]), y[:400])
        np.testing.assert_allclose(
            again.estimator_.dual_coef_.toarray(), clf.estimator_.dual_coef_.toarray()
        )
        np.testing.assert_array_equal(again.predict(twice), clf.predict(test))


def test_labels_in_messages_read_as_written():
    """Unknown labels are named as the user wrote them ('a', 7), not as numpy reprs
    (np.str_('a'), np.int64(7))."""
    from sklearn.frozen import FrozenEstimator

    from attentive import operating_points

    X, y = make_classification(300, 6, random_state=0)
    model = SVC().fit(X, y)
    with pytest.raises(InvalidParameterError) as info:
        AttentiveClassifier(FrozenEstimator(model)).fit(X, np.where(y == 1, "a", "b"))
    assert "contain ['a', 'b']" in str(info.value) and "are [0, 1]" in str(info.value)
    clf = AttentiveClassifier(SVC()).fit(X, y)
    with pytest.raises(InvalidParameterError) as info:
        operating_points(clf, X[:50], np.full(50, 7))
    assert "know: [7]; its classes are [0, 1]" in str(info.value)
    assert "np." not in str(info.value)
