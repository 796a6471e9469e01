"""Bad files, models and downloads given to the dashboard's state: each is reported in the
dashboard's words and the previous state (numbers, dataset, model) stays.

docs/robustness.md names these tests in its bad-input table.
"""

from __future__ import annotations

import io
import pickle
import re

import numpy as np
import pandas as pd
import panel as pn
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


def _unchanged(state, walks, dataset=DEFAULT, model_source="train") -> None:
    assert state.walks is walks
    assert state.dataset == dataset
    assert state.model_source == model_source


def test_malformed_upload_is_reported_and_changes_nothing(state):
    walks = state.walks
    assert not state.upload_dataset(b"a,b,label\n1,2,0\n3,oops,1\n4,5,1\n", "broken.csv")
    assert state.n_errors == 1
    assert "broken.csv" in state.last_error and "'oops' is not a number" in state.last_error
    _unchanged(state, walks)
    assert "file: broken.csv" not in state.param.dataset.objects


def test_an_upload_with_a_value_too_large_for_a_kernel_is_refused_and_changes_nothing(state):
    """A user's trial: one cell of 1e308 in a good CSV made every score NaN; the switch failed
    half-way (θ's bounds NaN): numbers of the new file beside the old sketch, controls that no
    longer applied, the previous upload gone. The reader refuses such a value, naming it."""
    good = _csv([0, 1] * 100)
    assert state.upload_dataset(good, "good.csv")
    walks = state.walks
    frame = pd.read_csv(io.BytesIO(good))
    frame.loc[5, "f1"] = 1e308
    assert not state.upload_dataset(frame.to_csv(index=False).encode(), "huge.csv")
    assert "huge.csv: row 6, column 2 is 1e+308" in state.last_error
    _unchanged(state, walks, dataset="file: good.csv")
    assert "file: huge.csv" not in state.param.dataset.objects


def test_a_model_whose_scores_are_not_finite_is_refused_and_the_one_in_use_kept(state, monkeypatch):
    """Whatever makes the scores NaN (the reader's bound aside), the new walk is refused before
    anything of it is applied: θ's range, the rule and the numbers stay those of the model in
    use, and the controls go back to it."""
    import dataclasses

    from attentive.app import state as state_module

    walks, original = state.walks, state_module.walks

    def nan_scores(*args, **kwargs):
        built = original(*args, **kwargs)
        return dataclasses.replace(built, full_score=np.full_like(built.full_score, np.nan))

    monkeypatch.setattr(state_module, "walks", nan_scores)
    bounds = state.param.theta.bounds
    state.set_controls(seed=5)
    assert "scores on mnist-t10k-2v5 are not all finite" in state.last_error
    assert state.walks is walks and state.seed == 0
    assert state.param.theta.bounds == bounds


def test_the_positive_class_of_one_upload_does_not_block_the_next(state):
    """A user's trial: three.csv read with positive class 2, then good.csv (labels 0 and 1) was
    refused ("the positive class '2' is not among the labels found"); a model uploaded next
    went to three.csv, and clearing the field loaded the refused file. The next file is read
    with its own labels; the same file uploaded again keeps its class."""
    three = _csv(list(range(3)) * 30)
    assert not state.upload_dataset(three, "three.csv")
    state.positive_class = "2"  # (the retry the notification asks for)
    assert state.dataset == "file: three.csv"
    assert state.walks.problem.dataset.positive_meaning.endswith("2")
    assert state.upload_dataset(three, "three.csv")  # the same file again: the class stays
    assert state.positive_class == "2"
    assert state.upload_dataset(_csv([0, 1] * 60), "good.csv")
    assert state.dataset == "file: good.csv" and state.positive_class == ""
    assert state.walks.problem.dataset.n_features == 3 and state.n_errors == 1


def test_the_class_typed_for_a_file_is_cleared_by_a_registry_dataset(state):
    """A user's trial: three.csv read with positive class 2, then breast-cancer chosen (the
    field still said 2), then a bird / fish file refused: "the positive class '2' is not among
    the labels found (bird, fish)". A registry dataset clears the field; the next file is read
    with its own labels; three.csv chosen again is read with its class."""
    three = _csv(list(range(3)) * 30)
    assert not state.upload_dataset(three, "three.csv")
    state.positive_class = "2"
    assert state.dataset == "file: three.csv"
    state.dataset = "breast-cancer"
    assert state.positive_class == "" and state.dataset == "breast-cancer"
    errors = state.n_errors
    birds = _csv([0, 1] * 60).replace(b",0\n", b",bird\n").replace(b",1\n", b",fish\n")
    assert state.upload_dataset(birds, "good2.csv"), state.last_error
    assert state.n_errors == errors and state.dataset == "file: good2.csv"
    state.dataset = "file: three.csv"
    assert state.positive_class == "2"
    assert state.walks.problem.dataset.positive_meaning.endswith("2")


def test_each_upload_keeps_its_own_positive_class(state):
    """A review of the fix above: a multiclass file uploaded after another one was read with
    the earlier file's class (the failed build's revert put the class back, which retried the
    file with it), and choosing the earlier file again lost its class (and the file with it).
    Each file is read with its own class: asked for where it has none yet, restored when it is
    chosen again."""
    a = _csv(list(range(3)) * 30)
    assert not state.upload_dataset(a, "a.csv")
    state.positive_class = "2"
    assert state.dataset == "file: a.csv"
    b = _csv([0, 1, 2, 3] * 25, seed=1)
    assert not state.upload_dataset(b, "b.csv")  # its own labels: which is positive?
    assert "labels are not binary (4 labels" in state.last_error
    assert state.dataset == "file: a.csv" and state.positive_class == "2"  # (a in use)
    assert "file: b.csv" not in state.param.dataset.objects
    state.positive_class = "3"  # b's class: b is read with it
    assert state.dataset == "file: b.csv"
    assert state.walks.problem.dataset.positive_meaning.endswith("3")
    state.dataset = "file: a.csv"  # chosen again: read with its own class
    assert state.positive_class == "2" and state.dataset == "file: a.csv"
    assert state.walks.problem.dataset.positive_meaning.endswith("2")
    assert "file: b.csv" in state.param.dataset.objects


def test_upload_over_the_limit_is_refused(state, monkeypatch):
    monkeypatch.setenv("ATTENTIVE_MAX_UPLOAD_MB", "0.01")
    walks = state.walks
    data = b"".join(f"{i % 2} 1:{i} 2:{i * 0.5}\n".encode() for i in range(2000))
    assert not state.upload_dataset(data, "big.libsvm")
    assert "big.libsvm" in state.last_error
    assert "over the upload limit of 0.01 MB" in state.last_error
    assert "ATTENTIVE_MAX_UPLOAD_MB" in state.last_error
    _unchanged(state, walks)


def test_upload_with_many_labels_asks_for_the_positive_class(state):
    walks = state.walks
    assert not state.upload_dataset(_csv(list(range(3)) * 30), "three.csv")
    assert "labels are not binary" in state.last_error
    assert "'Positive class (uploads)' field" in state.last_error
    _unchanged(state, walks)
    # Naming the positive class retries the kept file, one label against the rest.
    state.set_controls(positive_class="2")
    assert state.dataset == "file: three.csv"
    assert state.walks is not walks
    y = state.walks.y_test
    assert 0 < y.sum() < len(y) / 2  # one label of three is positive
    assert "label = 2" in state.walks.problem.dataset.positive_meaning


def test_library_messages_are_worded_for_the_dashboard():
    data_error = DataError(
        "t.csv: the labels are not binary; choose a positive class (positive_class=...) to make "
        "a one-vs-rest problem"
    )
    assert "in the 'Positive class (uploads)' field" in user_message(data_error)
    assert "positive_class=" not in user_message(data_error)
    # An upload's labels are found by the column's name; the dashboard has no label_column.
    from attentive.data.userfile import load_user_file

    with pytest.raises(DataError) as no_label:
        load_user_file(b"a,b,c\n1,2,0\n3,4,1\n", filename="bad.csv")
    msg = user_message(no_label.value)
    assert "label_column" not in msg and msg.startswith("bad.csv: ")
    assert "name exactly one column 'label', 'labels', 'class', 'target' or 'y'" in msg
    assert "columns: 'a', 'b', 'c'" in msg
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

    walks = state.walks
    for blob in (pickle.dumps(LinearSVC().fit(mnist.X_train, mnist.y_train)), pickle.dumps(Boom())):
        assert not state.upload_model(blob, "model.pkl")
        assert "pickle" in state.last_error and "never unpickles" in state.last_error
    _unchanged(state, walks)


def test_model_with_other_features_or_classes_is_refused(state):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    walks = state.walks
    thirty = LogisticRegression().fit(rng.normal(size=(40, 30)), np.arange(40) % 2)
    assert not state.upload_model(sio.dumps(thirty), "thirty.skops")
    assert "expects 30 features but the dataset has 784" in state.last_error
    three = LogisticRegression().fit(rng.normal(size=(60, 784)), np.arange(60) % 3)
    assert not state.upload_model(sio.dumps(three), "three.skops")
    assert "fitted on 3 classes" in state.last_error
    assert "needs a binary model" in state.last_error
    _unchanged(state, walks)


def test_an_uploaded_model_is_described_truthfully_and_dropped_on_a_dataset_switch(state, mnist):
    """An uploaded model is used as it is: the sidebar's parameters are its own, the guarantee is
    withheld (the model may have seen the held-out examples); a switch to another dataset drops
    it with a notification and trains that dataset's model (before, an MNIST 2 vs 5 model was
    applied to 3 vs 8 without a word)."""
    from sklearn.svm import SVC

    from attentive.app.calibration_view import CalibrationView

    model = SVC(C=3.0, gamma=0.02).fit(mnist.X_train[:400], mnist.y_train[:400])
    assert state.upload_model(sio.dumps(model), "svc.skops")
    assert state.model_source == "upload" and state.n_errors == 0, state.last_error
    assert state.walks.n_terms == model.support_vectors_.shape[0]
    assert state.walks.problem.params == {"kernel": "rbf", "C": 3.0, "gamma": 0.02}
    from attentive.app.widgets import Controls

    sidebar = Controls(state=state)._model_params(state.walks, "upload")
    assert sidebar.startswith(f"**Uploaded model**: {state.walks.problem.description}")
    for name, text in (("kernel", "'rbf'"), ("C", "3"), ("gamma", "0.02")):  # each once
        assert len(re.findall(rf"\b{name} ?= ?{text}", sidebar)) == 1, sidebar
    view = CalibrationView(state=state)
    assert "No guarantee for an uploaded model" in view.alert.object
    assert view.alert.alert_type == "warning"
    # Nor do the disagreement card's hover text and the exported operating point claim one
    # (both did: "... that the calibrated rule guarantees", the scan's guarantee sentence).
    import json

    from attentive.app import exports
    from attentive.app.numbers import HeadlineNumbers

    state.set_controls(boundary="calibrated")
    page = HeadlineNumbers(state=state)._html(state.numbers())
    hit = re.search(r"data-key='disagreement-check' title='([^']*)'", page)
    assert hit is not None, page
    assert "guarantees" not in hit.group(1) and "no guarantee" in hit.group(1)
    calibration = json.loads(exports.operating_point_json(state))["calibration"]
    assert calibration["guaranteed"] is False
    assert calibration["guarantee"] == exports.UPLOADED_NO_GUARANTEE
    assert not view.caveat.visible
    errors = state.n_errors
    state.dataset = "mnist-t10k-3v8"  # what the dataset selector does
    assert state.n_errors == errors + 1 and state.error_level == "warning"
    assert "svc.skops" in state.last_error and "mnist-t10k-3v8" in state.last_error
    assert state.model_source == "train" and state.dataset == "mnist-t10k-3v8"
    assert not state.walks.problem.model_source.uploaded
    assert "Guarantee" in view.alert.object


def test_upload_picked_before_a_model_file_is_a_hint_not_an_error(state):
    """Picking "upload" under Model before choosing a file showed a red error (a user's trial:
    an ordinary exploratory click). It is a hint now, naming where the file goes; the toggle
    returns to "train" and the trained model stays."""
    from attentive.app.controls import MODEL_UPLOAD_LABEL
    from attentive.app.state import NO_MODEL_FILE_YET
    from attentive.app.widgets import Controls

    walks, errors = state.walks, state.n_errors
    state.model_source = "upload"  # what the toggle does
    assert state.n_errors == errors + 1 and state.error_level == "info"
    assert state.last_error == NO_MODEL_FILE_YET
    assert state.model_source == "train" and state.walks is walks
    # The hint names the sidebar's own words over the file input.
    assert f'"{MODEL_UPLOAD_LABEL}"' in NO_MODEL_FILE_YET
    texts = [
        pane.object
        for pane in Controls(state=state).__panel__().select(pn.pane.Markdown)
        if isinstance(pane.object, str)
    ]
    assert f"{MODEL_UPLOAD_LABEL}:" in texts


def test_an_exported_classifier_can_be_uploaded_back(state):
    """The skops file the export button gives is a model the upload takes: the same model, the
    same numbers at the same rule."""
    from attentive.app import exports

    state.set_controls(boundary="constant", side="lower", delta=0.05)
    shown = state.numbers()
    blob = exports.classifier_bytes(state)
    assert state.upload_model(blob, "attentive_classifier.skops"), state.last_error
    assert state.model_source == "upload" and state.walks.problem.model_source.uploaded
    assert state.numbers()["mean_evaluated"] == shown["mean_evaluated"]
    assert state.numbers()["disagreement"] == shown["disagreement"]


@pytest.mark.parametrize(
    "rule",
    [
        {"boundary": "heteroscedastic", "side": "both", "z": 0.7929},
        {"boundary": "calibrated", "side": "both", "delta": 0.05},
        {"boundary": "budget", "side": "lower", "budget": 0.3, "theta": 0.2},
        {"boundary": "constant", "side": "lower", "delta": 0.02},
    ],
)
def test_an_exported_classifier_comes_back_at_its_rule_on_a_fresh_page(rule):
    """A user's trial: a rule picked by a time budget (heteroscedastic, z = 0.793, 5 % of the
    terms) exported, and the file uploaded on a fresh page, showed the page's calibrated rule
    (11 %) without a word. The page now sets back the rule it was exported at, says so, and
    shows the exporting page's numbers."""
    from attentive.app import exports

    first = DashboardState()
    first.set_controls(seed=3)
    assert first.set_controls(**rule), first.last_error
    shown, blob = first.numbers(), exports.classifier_bytes(first)
    page = DashboardState()
    assert page.upload_model(blob, "attentive_classifier.skops"), page.last_error
    assert page.error_level == "info" and "its rule is set back" in page.last_error
    for name in ("boundary", "side", "seed", "centering", "theta"):
        assert getattr(page, name) == pytest.approx(getattr(first, name)), name
    n = first.walks.n_terms
    assert page.rule.budget_terms(n) == first.rule.budget_terms(n)  # (the budget's terms)
    assert page.rule.z == pytest.approx(first.rule.z, abs=1e-9) if first.rule.z else True
    assert page.rule.delta == first.rule.delta
    assert page.numbers()["mean_evaluated"] == pytest.approx(shown["mean_evaluated"])
    assert page.numbers()["disagreement"] == pytest.approx(shown["disagreement"])


def test_an_empty_file_gets_a_message(state):
    walks = state.walks
    assert not state.upload_dataset(b"", "empty.csv")
    assert "empty.csv is empty" in state.last_error
    assert not state.upload_model(b"", "empty.skops")
    assert "empty.skops is empty" in state.last_error
    _unchanged(state, walks)


def test_failed_download_is_reported_and_the_dataset_goes_back(state):
    walks = state.walks
    state.set_controls(dataset="gisette")  # not cached; the mirror is a closed port
    assert "could not download gisette_scale.bz2" in state.last_error
    assert "to install it by hand" in state.last_error
    # Short enough for a notification to show whole: what failed and what to do, not every
    # address tried with its network error.
    assert "needs internet" in state.last_error
    assert "tried" not in state.last_error and "\n" not in state.last_error
    assert len(state.last_error) <= 400, state.last_error
    _unchanged(state, walks)


def test_a_notification_shows_a_message_as_text_whole_up_to_its_limit():
    """Notifications render HTML: the message is escaped (its ``<label>`` is text, not a tag) and
    only a message longer than the limit is cut, with an ellipsis."""
    import html

    from attentive.app.layout import NOTIFICATION_CHARS, notification_text

    quoted = "rows.libsvm, line 1: expected '<label> <index>:<value> ...' & increasing indices"
    assert html.unescape(notification_text(quoted)) == quoted
    assert "<label>" not in notification_text(quoted)
    advice = "x" * 590 + " upload the rows with --one-based"  # an ambiguous index base's length
    assert html.unescape(notification_text(advice)) == advice
    long = "y" * (NOTIFICATION_CHARS + 50)
    cut = notification_text(long)
    assert len(cut) == NOTIFICATION_CHARS and cut.endswith("…")


def test_an_uploaded_linear_svc_is_described_without_a_gamma():
    """A linear kernel has no gamma: the sidebar said "SVC(kernel='linear', C=2); gamma =
    'scale'" (and its gamma field is hidden for such a kernel too)."""
    from sklearn.svm import SVC

    from attentive.app.widgets import Controls

    state = DashboardState(dataset="synthetic")
    ds = load_dataset("synthetic")
    model = SVC(kernel="linear", C=2.0).fit(ds.X_train, ds.y_train)
    assert state.upload_model(sio.dumps(model), "linear.skops"), state.last_error
    described = Controls(state=state)._model_params(state.walks, "upload")
    assert "kernel='linear'" in described and "C=2" in described
    assert "gamma" not in described, described


def test_the_dashboards_words_for_what_only_the_command_line_has(state):
    """A user's trial: an upload's messages named --exclude and --format, which the dashboard
    does not have; a semicolon-separated CSV was told about its labels' column, not its
    separator; "1%" in the target field (its placeholder writes "1 %") was refused."""
    from attentive.app.inputs import user_message
    from attentive.data.reader import ExpectedFeatures, feature_columns, guess_format

    with pytest.raises(DataError) as info:
        feature_columns(["a", "b", "c"], 3, ExpectedFeatures(n_features=2), where="f.csv")
    said = user_message(info.value)
    assert "--exclude" not in said and "remove the columns that are not features" in said
    with pytest.raises(DataError) as info:
        guess_format("rows.pkl", b"\x80\x04", allowed=("libsvm", "csv"))
    assert "--format" not in user_message(info.value) and "format=" in str(info.value)
    walks = state.walks
    row = ",".join(["0.5"] * 5)
    assert not state.upload_dataset(f"{row}\n{row}\n".encode(), "rows.txt")  # CSV as .txt
    assert "as in CSV" in state.last_error and "--format" not in state.last_error
    assert "name it .csv" in state.last_error
    assert not state.upload_dataset(b"f0;f1;label\n1;2;0\n3;4;1\n", "eu.csv")
    assert "separated by semicolons" in state.last_error
    _unchanged(state, walks)
    state.set_controls(target="2%")
    assert state.target == 0.02 and state.n_errors == 2  # (the uploads' only)


def test_the_one_column_hint_is_worded_for_the_page():
    """A file read as one column names how another separator is given: the command line's
    --sep and --format, which the page has not. The page says what it reads instead."""
    from attentive.data.reader import one_column_hint
    from attentive.errors import DataError

    library = "rows.csv has 1 feature column, but the model expects 4" + one_column_hint(",")
    assert "--sep" in library
    said = user_message(DataError(library))
    assert "split at commas" in said and "the page splits a .csv file at commas" in said
    assert "--sep" not in said and "--format" not in said and "sep=" not in said


def test_many_notifications_held_back_while_the_page_opened_show_as_one():
    """An address of many refused values told each one as a notification of its own, stacked
    over the page; held back until the page loaded, up to three of a level still show one by one,
    more as one notification that counts them and gives the first six a line each (escaped
    text kept whole as entities), in the order they came."""
    from attentive.app.layout import UNTOLD_APART, UNTOLD_LINES, held_back, notification_text

    few = [(notification_text(f"value {i} <refused>"), "warning") for i in range(UNTOLD_APART)]
    assert held_back(few) == few
    many = [(notification_text(f"value {i} <refused>"), "warning") for i in range(16)]
    error = (notification_text("the model failed"), "error")
    shown = held_back([many[0], error, *many[1:]])
    assert [level for _, level in shown] == ["warning", "error"] and shown[1] == error
    text = shown[0][0]
    lines = text.split("<br>")
    assert lines[0] == "16 warnings while the page opened:"
    assert lines[1 : UNTOLD_LINES + 1] == [f"• value {i} &lt;refused&gt;" for i in range(6)]
    assert lines[-1] == f"… and {16 - UNTOLD_LINES} more." and len(lines) == UNTOLD_LINES + 2
    # a long line is cut, never inside an entity
    long = notification_text("x" * 296 + "<tag> and more")
    ((merged, _),) = held_back([(long, "error")] * 4)
    line = merged.split("<br>")[1]
    assert line == "• " + "x" * 296 + "…"


def test_the_dashboards_words_for_the_readers_hints_of_other_formats_and_columns(state):
    """The reader's hints name the command line's options (--format, --sep, --exclude); an
    upload is told what the dashboard can do instead."""
    from attentive.app.inputs import user_message
    from attentive.data.reader import ExpectedFeatures, feature_columns

    walks = state.walks
    # The same named as LIBSVM, a LIBSVM file named as CSV, pandas' index: no options named.
    for data, name in (
        (b"f0;f1;label\n1;2;0\n3;4;1\n", "eu.txt"),
        (b"# by hand\n1 1:0.5\n-1 1:2\n", "rows.csv"),
    ):
        assert not state.upload_dataset(data, name)
        assert "--" not in state.last_error and "format=" not in state.last_error, state.last_error
    assert "save it with commas (named .csv) or tabs (named .tsv)" in user_message(
        DataError("x: its cells are separated by semicolons, as in CSV: if the file is CSV, say "
                  "so and name the separator (--format csv --sep ';', format='csv', sep=';')")
    )  # fmt: skip
    with pytest.raises(DataError) as info:
        feature_columns(["Unnamed: 0", "a", "b"], 3, ExpectedFeatures(n_features=2), where="f")
    said = user_message(info.value)
    assert "--exclude" not in said and "df.to_csv(path, index=False)" in said, said
    with pytest.raises(DataError) as info:
        feature_columns(["a", "b", "Unnamed: 2"], 3, ExpectedFeatures(n_features=2), where="f")
    said = user_message(info.value)
    assert "--exclude" not in said and said.endswith("(a trailing comma)? Remove it"), said
    _unchanged(state, walks)


def test_closing_the_tour_sets_back_the_users_upload_model_and_rule(state):
    """A user's trial: an uploaded file and a chosen rule, then the guided tour, then "Close the
    tour": the page was left on the tour's dataset and rule, the upload and the rule gone from
    view without a word. Closing it (or Done) sets back every control the tour changed — the
    uploaded file, the model uploaded for it and the rule — and says so; Paper view, a preset
    the user asks for, says where their file is."""
    from sklearn.svm import SVC

    from attentive.app.tour import RESTORED, STEPS, Tour

    data = _csv([0, 1] * 100)
    assert state.upload_dataset(data, "mine.csv")
    frame = pd.read_csv(io.BytesIO(data))
    model = SVC(C=2.0).fit(frame[["f0", "f1", "f2"]].to_numpy(), frame["label"])
    assert state.upload_model(sio.dumps(model), "mine.skops"), state.last_error
    assert state.set_controls(boundary="curved", side="upper", delta=0.05, seed=3)
    before = {
        name: getattr(state, name)
        for name in ("dataset", "model_source", "model_file", "boundary", "side", "delta", "seed")
    }
    assert before["dataset"] == "file: mine.csv" and before["model_source"] == "upload"
    for last in (2, len(STEPS) - 1):  # closed part-way, then Done at the last step
        tour = Tour(state=state)
        errors = state.n_errors
        tour.start()
        # The tour's dataset does not drop the uploaded model for good, and says so.
        assert state.n_errors == errors + 1 and state.error_level == "info"
        assert "closing it brings back mine.csv and mine.skops" in state.last_error
        for i in range(1, last + 1):
            tour.step = i
        assert state.dataset != before["dataset"] and state.model_source == "train"
        tour.step = -1
        assert {name: getattr(state, name) for name in before} == before
        assert state.walks.problem.model_source.uploaded
        assert state.walks.n_terms == model.support_vectors_.shape[0]
        assert state.last_error == RESTORED and state.error_level == "info"
    # A rule a target picked: the rule and the target are set back.
    state.set_controls(target=0.05)
    picked = (state.boundary, state.z, state.target)
    assert picked[2] == 0.05
    tour = Tour(state=state)
    tour.start()
    assert state.target is None
    tour.step = -1
    assert (state.boundary, state.z, state.target) == picked
    tour = Tour(state=state)
    tour.paper_view()
    assert state.dataset == "synthetic"
    assert "mine.csv is still in the Dataset list" in state.last_error


def test_a_model_fitted_on_the_files_own_labels_is_used_and_predicts_them(state):
    """A user's trial: a file labelled 2 and 5, and an SVC fitted on its columns with those
    labels as they are: refused ("the reference labels contain [0, 1], which the fitted model
    does not know"), since the dashboard codes a file's labels 0 / 1. Such a model is used, its
    classes and the exported classifier's predictions are the file's labels, and every number
    is that of the same model fitted on the labels coded 0 / 1. A model whose positive class
    (scikit-learn's larger label) is the file's negative one is refused, naming the class to
    choose."""
    import json

    from sklearn.svm import SVC

    from attentive.app import exports

    data = _csv([2, 5] * 100)
    assert state.upload_dataset(data, "twofive.csv"), state.last_error
    frame = pd.read_csv(io.BytesIO(data))
    X, y = frame[["f0", "f1", "f2"]].to_numpy(), frame["label"].to_numpy()
    positive = int(state.positive_class or 5)
    coded = SVC(C=2.0).fit(X, (y == positive).astype(int))
    assert state.upload_model(sio.dumps(coded), "coded.skops"), state.last_error
    numbers = state.numbers()
    assert list(state.walks.classifier.classes_) == [0, 1]
    own = SVC(C=2.0).fit(X, y)
    assert state.upload_model(sio.dumps(own), "own.skops"), state.last_error
    assert state.model_source == "upload" and state.n_errors == 0, state.last_error
    assert list(state.walks.classifier.classes_) == [2, 5]
    assert state.numbers() == numbers
    point = json.loads(exports.operating_point_json(state))
    assert point["classes"] == {"negative": 2, "positive": 5}
    assert point["kernel"] == "rbf" and point["C"] == 2.0 and point["gamma"] == "scale"
    # 200 rows: too few held out for any scale to pass the scan. The box and the JSON say so,
    # not that the scale shown is what the scan chose (a user's trial).
    from attentive.app.calibration_view import NO_GUARANTEE_NO_SCALE, CalibrationView

    assert state.boundary == "calibrated" and point["calibration"]["fallback"] is True
    assert point["calibration"]["guarantee"] == exports.UPLOADED_NO_SCALE
    assert CalibrationView(state=state).alert.object.startswith(NO_GUARANTEE_NO_SCALE)
    from attentive.app import rules

    clf = rules.rule_classifier(state.walks, state.rule)
    assert set(np.unique(clf.predict(state.walks.problem.dataset.X_test))) == {2, 5}
    # The file's 2 as the positive class: the model calls 5 positive.
    errors = state.n_errors
    state.positive_class = "2"
    assert state.n_errors == errors + 1
    assert "calls 5 its positive class" in state.last_error
    assert "choose 5 as the positive class" in state.last_error


def test_a_zero_one_model_on_a_file_whose_positive_class_is_0_is_warned_about(state):
    """A reviewer's case: a file labelled 0 / 1 with 0 chosen as the positive class, and a model
    fitted on the file's own labels: the page codes the file's 0 as 1, the model calls its 1
    positive, and every decision was the other way round without a word (accuracy 0.04 against
    0.95). A model fitted on the page's coding is right as it is, and which of the two it is
    cannot be told: the page warns, naming the class to choose."""
    from sklearn.svm import SVC

    data = _csv([0, 1] * 100)
    assert state.upload_dataset(data, "zeroone.csv"), state.last_error
    state.positive_class = "0"
    assert state.walks.problem.dataset.class_names[1] == "0"
    frame = pd.read_csv(io.BytesIO(data))
    X, y = frame[["f0", "f1", "f2"]].to_numpy(), frame["label"].to_numpy()
    errors = state.n_errors
    assert state.upload_model(sio.dumps(SVC().fit(X, y)), "raw.skops"), state.last_error
    assert state.n_errors == errors + 1 and state.error_level == "warning"
    assert "calls 0 positive" in state.last_error
    assert "choose 1 as the positive class" in state.last_error
    # On the file's 1 as the positive class, the same model is right: no warning.
    errors = state.n_errors
    state.positive_class = "1"
    assert state.model_source == "upload" and state.n_errors == errors, state.last_error


def test_a_refused_file_leaves_an_uploaded_model_and_the_training_fields_as_they_were(state, mnist):
    """With an uploaded model in use, a dataset file refused (a text column) said both that the
    model was switched for the file ("… gets its own trained model") and that the file was
    refused, and the file's generic preset stayed in the training fields: γ = "scale" for
    MNIST, which the next "train" (and a shared address) then used. Now only the refusal is
    said and every field is as it was; a file that is read says the switch once it is in use."""
    from sklearn.svm import SVC

    model = SVC(C=3.0, gamma=0.02).fit(mnist.X_train[:400], mnist.y_train[:400])
    assert state.upload_model(sio.dumps(model), "svc.skops"), state.last_error
    before = {k: getattr(state, k) for k in ("kernel", "C", "gamma", "dataset", "model_file")}
    assert before["gamma"] != "scale"  # (MNIST's preset: the file's generic one differs)
    walks, errors = state.walks, state.n_errors
    reported = []
    state.param.watch(lambda e: reported.append(state.last_error), "n_errors")
    bad = b"f0,f1,label\n1,red,0\n2,3,1\n4,5,0\n6,7,1\n"
    assert not state.upload_dataset(bad, "textfeat.csv")
    assert state.n_errors == errors + 1, reported
    assert "'red' is not a number" in state.last_error
    assert not any("gets its own trained model" in r for r in reported)
    assert {k: getattr(state, k) for k in before} == before
    assert state.model_source == "upload" and state.walks is walks
    # A file that is read: the switch is said once its model is in use.
    reported.clear()
    assert state.upload_dataset(_csv([0, 1] * 60), "good.csv")
    assert state.model_source == "train" and state.dataset.endswith("good.csv")
    assert any("svc.skops was uploaded for" in r for r in reported), reported


@pytest.mark.parametrize(
    "text, said",
    [
        ("123456789012345678901234567890", "not 123456789012345678901234567890."),
        (" -7 ", "at least 0, not -7."),
        ("2.5", "expected a whole number, got '2.5'"),
        ("1e3", None),  # (a URL's number: accepted as the whole number it is)
        ("9" * 5000, "expected a whole number, got '" + "9" * 5000 + "'"),  # (Python's limit)
    ],
)
def test_a_typed_whole_number_is_quoted_as_typed(text, said):
    """A seed of 30 digits was read through a float and refused as "not
    123456789012345677877719597056", another number than the one typed."""
    s = DashboardState()
    ok = s.set_controls(seed=text)
    if said is None:
        assert ok and s.seed == 1000
    else:
        assert not ok and s.last_error.endswith(said), s.last_error


def test_the_pages_own_model_uploaded_back_keeps_the_guarantee(state):
    """A user's trial: the exported classifier uploaded on a fresh page was described as
    "fitted elsewhere … the model may have seen them", no guarantee, though it is the model the
    page trains. Bit for bit that model (refitted on the page's fit part: the same fingerprint),
    it is described so and the calibrated rule keeps its guarantee (so with other settings the
    page trains the same way: C = 2); the same SVC fitted on the whole training part (the
    held-out rows too), or on other rows, does not."""
    import json

    from sklearn.base import clone

    from attentive.app import exports
    from attentive.app.calibration_view import CalibrationView
    from attentive.app.layout import model_words

    own = state.walks.problem
    blob = exports.classifier_bytes(state)
    page = DashboardState()
    assert page.upload_model(blob, "attentive_classifier.skops"), page.last_error
    assert page.walks.problem.model_source.uploaded and page.walks.problem.trained_here
    assert "the model this page trains" in model_words(page.walks, page.dataset)
    assert "Guarantee" in CalibrationView(state=page).alert.object
    calibration = json.loads(exports.operating_point_json(page))["calibration"]
    assert calibration["guaranteed"] is True
    other = DashboardState()
    wider = clone(own.model).set_params(C=2.0).fit(own.X_fit, own.y_fit)
    assert other.upload_model(sio.dumps(wider), "svc.skops"), other.last_error
    assert other.walks.problem.trained_here
    ds = own.dataset
    for fitted in (
        clone(own.model).fit(ds.X_train, ds.y_train),  # saw the held-out rows
        clone(own.model).fit(own.X_fit[:400], own.y_fit[:400]),  # other rows
    ):
        other = DashboardState()
        assert other.upload_model(sio.dumps(fitted), "svc.skops"), other.last_error
        assert not other.walks.problem.trained_here
        assert "fitted elsewhere" in model_words(other.walks, other.dataset)
        assert "No guarantee for an uploaded model" in CalibrationView(state=other).alert.object


class Deferred:
    """An executor that holds each build until :meth:`finish` runs it, setting ``busy`` as the
    served page's background executor does (every build the tests above run runs at once)."""

    def __init__(self):
        self.state, self.queue = None, []

    def __call__(self, job, done, fail):
        from attentive.app.state import run_inline

        if self.state is None:  # (the first page, built as the state is made)
            return run_inline(job, done, fail)
        self.state.param.update(busy=True)
        self.queue.append((job, done, fail))

    def finish(self) -> None:
        """Run the builds held, in order, each ending as a served one does: ``busy`` set
        False after it, whether or not another build is still to come."""
        from attentive.app.state import run_inline

        while self.queue:
            run_inline(*self.queue.pop(0))
            self.state.param.update(busy=False)


def test_uploads_while_a_build_is_running_keep_their_rule_and_their_words(mnist):
    """A review of the fixes above, with builds that finish later (as served): an exported
    classifier uploaded while another build ran lost its rule (the first build's end was taken
    for its own); the word that an uploaded model gave way to a file's trained model was lost
    where a second build overtook the first; a registry dataset chosen while an uploaded model
    was in use kept the class typed for a file; a training field typed while an uploaded model
    was in use was set back by a later refused file."""
    from sklearn.svm import SVC

    from attentive.app import exports

    first = DashboardState()
    first.set_controls(seed=3, boundary="heteroscedastic", side="lower", z=0.7929)
    blob = exports.classifier_bytes(first)
    ex = Deferred()
    page = ex.state = DashboardState(executor=ex)
    ex.finish()
    page.set_controls(seed=5)  # a build under way
    page.upload_model(blob, "exported.skops")
    ex.finish()
    assert (page.boundary, page.side, page.seed) == ("heteroscedastic", "lower", 3)
    assert "its rule is set back" in page.last_error
    # An uploaded model, a file's class, then a registry dataset: the class is cleared.
    three = _csv(list(range(3)) * 30)
    page.upload_dataset(three, "three.csv")
    ex.finish()
    page.positive_class = "2"
    ex.finish()
    model = SVC(gamma=0.02).fit(np.random.default_rng(0).normal(size=(90, 3)), [0, 1] * 45)
    assert page.upload_model(sio.dumps(model), "svc.skops") or page.building
    ex.finish()
    assert page.model_source == "upload", page.last_error
    reported = []
    page.param.watch(lambda e: reported.append(page.last_error), "n_errors")
    page.dataset = "breast-cancer"
    page.dataset = "mnist-t10k-3v8"  # (overtakes the build for breast-cancer)
    ex.finish()
    assert page.dataset == "mnist-t10k-3v8" and page.positive_class == ""
    assert page.model_source == "train"
    assert [r for r in reported if "svc.skops was uploaded for three.csv" in r], reported
    # A training field typed while an uploaded model is in use survives a refused file.
    mnist_model = SVC(gamma=0.02).fit(mnist.X_train[:300], mnist.y_train[:300])
    page.dataset = "mnist-t10k-2v5"
    ex.finish()
    assert page.upload_model(sio.dumps(mnist_model), "m.skops") or page.building
    ex.finish()
    page.set_controls(C=7.0)
    ex.finish()
    page.upload_dataset(b"f0,f1,label\n1,red,0\n2,3,1\n", "bad.csv")
    ex.finish()
    assert "'red' is not a number" in page.last_error
    assert page.model_source == "upload" and page.C == 7.0, page.last_error
    # The model dropped by hand (train), then another dataset: nothing to say of the upload.
    reported.clear()
    page.model_source = "train"
    page.dataset = "mnist-t10k-3v8"
    ex.finish()
    assert not [r for r in reported if "was uploaded for" in r], reported
    # An uploaded model dropped by a switch, and its dataset chosen again before the switch's
    # model was in use: that model is back, and nothing is said.
    page.dataset = "mnist-t10k-2v5"
    ex.finish()
    assert page.upload_model(sio.dumps(mnist_model), "m.skops") or page.building
    ex.finish()
    reported.clear()
    page.dataset = "mnist-t10k-3v8"
    page.dataset = "mnist-t10k-2v5"
    ex.finish()
    assert page.model_source == "upload" and page.dataset == "mnist-t10k-2v5"
    assert not [r for r in reported if "was uploaded for" in r], reported
    # The exported classifier uploaded again while its model is in use (a build of another
    # seed pending): its rule now; later builds leave the user's rule alone.
    page.upload_model(blob, "exported.skops")
    ex.finish()
    page.set_controls(z=1.5)
    page.set_controls(seed=9)  # (pending)
    page.upload_model(blob, "exported.skops")  # (its seed again: the model in use)
    assert page.side == "lower" and page.rule.z == pytest.approx(first.rule.z)
    page.set_controls(z=1.5)
    page.set_controls(seed=11)
    ex.finish()
    assert page.rule.z == pytest.approx(1.5) and page.seed == 11


def test_a_classifier_made_by_the_library_is_used_at_the_pages_rule_where_the_page_cannot_make_it(
    mnist,
):
    """A review: an AttentiveClassifier fitted in Python with a seed beyond the page's field
    (2**31 + 5) broke the upload (an uncaught error, the page left half-switched); one fitted
    with settings the page does not make (the paper's in-sample reference walks, another
    variance) was said to be "set back" at a rule the page walks otherwise. The seed out of
    range is left as it is; a classifier of other settings is used at the page's rule, and
    the page says why."""
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier
    from attentive.app import rules

    X, y = mnist.X_train[:500], mnist.y_train[:500]
    state = DashboardState()
    seed = state.seed
    kw = {"boundary": "curved", "delta": 0.05, "reference_walks": "leave-one-out"}
    far = AttentiveClassifier(SVC(gamma=0.02), random_state=2**31 + 5, **kw).fit(X, y)
    assert state.upload_model(sio.dumps(far), "far.skops"), state.last_error
    assert state.model_source == "upload" and state.seed == seed and not state.building
    assert state.boundary == "curved" and "its rule is set back" in state.last_error
    assert f"its seed = {2**31 + 5} is beyond the page's field, which keeps {seed}" in (
        state.last_error
    )
    for others, said in (
        ({"variance": "independent"}, "variance='independent'"),
        ({"reference_walks": "in-sample"}, "reference_walks='in-sample'"),
    ):
        other = AttentiveClassifier(SVC(gamma=0.02), random_state=1, **{**kw, **others})
        page = DashboardState()
        assert page.upload_model(sio.dumps(other.fit(X, y)), "other.skops"), page.last_error
        assert page.boundary == "calibrated" and said in page.last_error
        assert "used at the page's rule" in page.last_error and page.error_level == "info"
    # A calibrated rule of one family: calibrated here among every family; which one is said
    # where it is another.
    fixed = AttentiveClassifier(
        SVC(gamma=0.02), boundary="calibrated", family="constant", random_state=1, side="both"
    ).fit(X, y)
    page = DashboardState()
    assert page.upload_model(sio.dumps(fixed), "fixed.skops"), page.last_error
    assert page.boundary == "calibrated" and "its rule is set back" in page.last_error
    here = rules.rule_classifier(page.walks, page.rule).calibration_.family
    assert (here != "constant") == ("where the file's is constant" in page.last_error)
    # A threshold beyond this model's scores: nothing of its rule is set, and the page says so.
    out = AttentiveClassifier(SVC(gamma=0.02), random_state=1, threshold=50.0, **kw).fit(X, y)
    page = DashboardState()
    assert page.upload_model(sio.dumps(out), "out.skops"), page.last_error
    assert (page.boundary, page.theta) == ("calibrated", 0.0)
    assert "θ = 50 is outside this model's scores" in page.last_error
