"""Bad files, models and downloads given to the dashboard's state: each is reported in the
dashboard's words and the previous state (numbers, dataset, model) stays.

docs/robustness.md names these tests in its bad-input table.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from attentive.app.state import DashboardState, user_message
from attentive.data import load_dataset
from attentive.errors import DataError, UntrustedModelError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DEFAULT = "mnist-t10k-2v5"


@pytest.fixture(autouse=True)
def _offline(offline_data_home):
    """No network; models trained once per test session."""


@pytest.fixture
def state():
    return DashboardState()


@pytest.fixture(scope="module")
def mnist():
    return load_dataset(DEFAULT)


def _csv(labels, n_features=3, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(labels), n_features)) + np.asarray(labels, float)[:, None]
    columns = [f"f{i}" for i in range(n_features)]
    return pd.DataFrame(X, columns=columns).assign(label=labels).to_csv(index=False).encode()


def _unchanged(state, figures, dataset=DEFAULT, model_source="train") -> None:
    assert state.figures is figures
    assert state.dataset == dataset
    assert state.model_source == model_source


def test_malformed_upload_is_reported_and_changes_nothing(state):
    figures = state.figures
    assert not state.upload_dataset(b"a,b,label\n1,2,0\n3,oops,1\n4,5,1\n", "broken.csv")
    assert state.n_errors == 1
    assert "broken.csv" in state.last_error and "'oops' is not a number" in state.last_error
    _unchanged(state, figures)
    assert "file: broken.csv" not in state.param.dataset.objects


def test_upload_over_the_limit_is_refused(state, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "0.01")
    figures = state.figures
    data = b"".join(f"{i % 2} 1:{i} 2:{i * 0.5}\n".encode() for i in range(2000))
    assert not state.upload_dataset(data, "big.libsvm")
    assert "big.libsvm" in state.last_error
    assert "over the upload limit of 0.01 MB" in state.last_error
    assert "ATTENTIVE_MAX_UPLOAD_MB" in state.last_error
    _unchanged(state, figures)


def test_upload_with_many_labels_asks_for_the_positive_class(state):
    figures = state.figures
    assert not state.upload_dataset(_csv(list(range(3)) * 30), "three.csv")
    assert "labels are not binary" in state.last_error
    assert "'Positive class (uploads)' field" in state.last_error
    _unchanged(state, figures)
    # Naming the positive class retries the kept file, one label against the rest.
    state.set_controls(positive_class="2")
    assert state.dataset == "file: three.csv"
    assert state.figures is not figures
    y = state.walks.y_test
    assert 0 < y.sum() < len(y) / 2  # one label of three is positive
    assert "label = 2" in state.dataset_info


def test_library_messages_are_worded_for_the_dashboard():
    data_error = DataError(
        "t.csv: the labels are not binary; choose a positive class (positive_class=...) to make "
        "a one-vs-rest problem"
    )
    assert "in the 'Positive class (uploads)' field" in user_message(data_error)
    assert "positive_class=" not in user_message(data_error)
    untrusted = UntrustedModelError(
        "the uploaded model contains types attentive does not trust, so it was not loaded: "
        "builtins.abs. Trusted beyond numpy and scikit-learn's estimators: a, b, c"
    )
    msg = user_message(untrusted)
    assert msg.endswith("See docs/robustness.md for the types attentive trusts.")
    assert "builtins.abs" in msg and "Trusted beyond" not in msg


def test_pickled_model_is_refused_without_unpickling(state, mnist):
    from sklearn.svm import LinearSVC

    class Boom:
        def __reduce__(self):  # unpickling this would raise: it must never happen
            return (pytest.fail, ("the upload was unpickled",))

    figures = state.figures
    for blob in (pickle.dumps(LinearSVC().fit(mnist.X_train, mnist.y_train)), pickle.dumps(Boom())):
        assert not state.upload_model(blob, "model.pkl")
        assert "pickle" in state.last_error and "never unpickles" in state.last_error
    _unchanged(state, figures)


def test_model_with_other_features_or_classes_is_refused(state):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    figures = state.figures
    thirty = LogisticRegression().fit(rng.normal(size=(40, 30)), np.arange(40) % 2)
    assert not state.upload_model(sio.dumps(thirty), "thirty.skops")
    assert "expects 30 features but the dataset has 784" in state.last_error
    three = LogisticRegression().fit(rng.normal(size=(60, 784)), np.arange(60) % 3)
    assert not state.upload_model(sio.dumps(three), "three.skops")
    assert "fitted on 3 classes" in state.last_error
    assert "needs a binary model" in state.last_error
    _unchanged(state, figures)


def test_uploaded_model_is_used_and_a_mismatching_dataset_is_refused(state, mnist):
    from sklearn.svm import LinearSVC

    model = LinearSVC().fit(mnist.X_train, mnist.y_train)
    assert state.upload_model(sio.dumps(model), "linear.skops")
    assert state.model_source == "upload"
    assert state.walks.n_terms == 784  # a linear model: one term per feature
    figures = state.figures
    # breast-cancer has 30 features: the uploaded model cannot score it.
    assert not state.set_controls(dataset="breast-cancer") or state.dataset == DEFAULT
    assert "784 features" in state.last_error
    _unchanged(state, figures, model_source="upload")


def test_failed_download_is_reported_and_the_dataset_goes_back(state):
    figures = state.figures
    state.set_controls(dataset="gisette")  # not cached; the mirror is a closed port
    assert "could not download gisette_scale.bz2" in state.last_error
    assert "to install it by hand" in state.last_error
    # Short enough for a notification to show whole: what failed and what to do, not every
    # address tried with its network error.
    assert "needs internet" in state.last_error
    assert "tried" not in state.last_error and "\n" not in state.last_error
    assert len(state.last_error) <= 400, state.last_error
    _unchanged(state, figures)
