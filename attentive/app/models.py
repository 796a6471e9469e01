"""Datasets, models and fitted classifiers for the dashboard, cached by content with ``pn.cache``.

Everything here goes through the library's public API: :func:`attentive.data.load_dataset`,
:func:`attentive.models.make_model` / :func:`~attentive.models.load_model` and an
:class:`~attentive.AttentiveClassifier` fitted once per (problem, centering, seed). Slider moves
never refit: they ask this classifier for another rule (``with_rule``).

The training part is split once, as the estimator splits it for its calibrated rule
(:func:`attentive.estimator.calibration_split` at the dashboard's default δ = 1 %, α = 5 %,
seed 0: 30 % held out, raised up to 40 % when the scan needs more examples), so every rule — the
calibrated one included — lives on the same walk and the same model, trained on the fit part (the
guarantee of SPEC §3 needs examples the model never saw). The split does not follow δ and α
moves: that would retrain the model on every move.

Cached values are shared by every session and never modified: numpy arrays are read-only and the
classifier is only ever copied (``with_rule``), never refit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import panel as pn
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator

from attentive import AttentiveClassifier
from attentive.data.dataset import label_text
from attentive.errors import InvalidParameterError
from attentive.estimator import calibration_split

__all__ = [
    "CALIBRATION_ALPHA",
    "CALIBRATION_DELTA",
    "MAX_TRAJECTORIES",
    "REFERENCE_WALKS",
    "SPLIT_SEED",
    "DataSource",
    "ModelSource",
    "Problem",
    "Walks",
    "clear_caches",
    "content_hash",
    "from_upload",
    "frozen",
    "problem",
    "walks",
]

# The calibration hold-out is the estimator's for its calibrated rule at these δ and α (the
# dashboard's defaults), with this seed.
CALIBRATION_DELTA = 0.01
CALIBRATION_ALPHA = 0.05
SPLIT_SEED = 0
# Test examples whose walks the dashboard can draw (a fixed, seed-independent sample).
MAX_TRAJECTORIES = 500
# How the reference (fit) examples are walked for the statistics every family is built from: a
# support vector without its own term w_i K(x_i, x_i), so the statistics describe new data. The
# classifier is fitted with boundary="constant" and calibrated later, so "auto" would keep the
# in-sample walks; the dashboard's default rule is the calibrated one, whose families and chosen
# point are the library's best with leave-one-out walks (docs/calibration.md, "The reference walks").
REFERENCE_WALKS = "leave-one-out"


def content_hash(data: bytes) -> str:
    """A short digest of uploaded bytes, used as a cache key."""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def frozen(a, dtype=None) -> np.ndarray:
    """``a`` as a read-only array (copied when it shares memory with a writeable one)."""
    out = np.array(a, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class DataSource:
    """Where a dataset comes from: a registry name, or an uploaded file (bytes kept for loading)."""

    name: str
    data: bytes | None = field(default=None, repr=False)
    filename: str = ""
    positive_class: str | None = None

    @classmethod
    def of(cls, name: str, upload: tuple[bytes, str] | None, positive_class: str | None = None):
        """A registry dataset, or the uploaded file ``upload`` = (bytes, file name)."""
        if upload is None:
            return cls(name)
        return cls(name, upload[0], upload[1], positive_class)

    @property
    def key(self) -> tuple:
        if self.data is None:
            return ("registry", self.name)
        return ("file", content_hash(self.data), self.positive_class)

    def load(self, model=None):
        """The dataset; an uploaded file is read for ``model`` when one is given (the shared
        reader then decides a LIBSVM file's index base and checks CSV columns against it)."""
        from attentive.data import load_dataset, load_user_file

        if self.data is None:
            return load_dataset(self.name)
        return load_user_file(
            self.data, filename=self.filename, positive_class=self.positive_class, model=model
        )


@dataclass(frozen=True)
class ModelSource:
    """The model: training parameters, or an uploaded skops file."""

    kind: str = "rbf"
    C: float = 1.0
    gamma: str | float = "scale"
    data: bytes | None = field(default=None, repr=False)

    @property
    def uploaded(self) -> bool:
        return self.data is not None

    @property
    def key(self) -> tuple:
        if self.data is not None:
            return ("file", content_hash(self.data))
        return ("train", self.kind, float(self.C), self.gamma)


def _key_hash(obj) -> bytes:
    return repr(obj.key).encode()


_HASH = {DataSource: _key_hash, ModelSource: _key_hash}


@dataclass(frozen=True)
class Problem:
    """A dataset, its fit / calibration split and a model fitted on the fit part.

    Attributes
    ----------
    key : tuple
    dataset : attentive.data.Dataset
    model : fitted estimator
    X_fit, y_fit, X_cal, y_cal : arrays
        The training part split as the estimator splits it (:func:`split`).
    model_source : ModelSource
    description : str
    params : dict
        The model's own kernel, C and gamma where it has them (an upload's are shown).
    """

    key: tuple
    dataset: Any
    model: Any
    X_fit: Any
    y_fit: np.ndarray
    X_cal: Any
    y_cal: np.ndarray
    model_source: ModelSource
    description: str
    params: dict = field(default_factory=dict)
    #: An uploaded model's own labels for the dataset's negative and positive class, where it was
    #: fitted on the file's labels (``2`` and ``5``) rather than on 0 / 1: ``y_fit`` and
    #: ``y_cal`` are in them, and so are the classifier's classes and predictions.
    labels: np.ndarray | None = None
    #: An uploaded model that is, to the bit, the one this page trains on the fit part for its
    #: settings (an exported classifier uploaded back): it never saw the examples held out, so
    #: the calibrated rule's guarantee holds for it (:func:`fitted_here`).
    trained_here: bool = False

    @property
    def fitted_elsewhere(self) -> bool:
        """Whether the model was uploaded and is not the page's own (no guarantee then)."""
        return self.model_source.uploaded and not self.trained_here

    def truth(self, y) -> np.ndarray:
        """The dataset's labels ``y`` (0 / 1) as the model's classes."""
        y = np.asarray(y)
        return y if self.labels is None else self.labels[y.astype(np.int64)]


def split(X, y):
    """``(X_fit, X_cal, y_fit, y_cal)``: the calibration hold-out of a training part, the one
    ``AttentiveClassifier(boundary="calibrated", delta=CALIBRATION_DELTA,
    alpha=CALIBRATION_ALPHA, random_state=SPLIT_SEED)`` makes."""
    return calibration_split(
        X, y, delta=CALIBRATION_DELTA, alpha=CALIBRATION_ALPHA, random_state=SPLIT_SEED
    )


def _unwrapped(model):
    """The model an uploaded file holds: an exported AttentiveClassifier's own fitted model."""
    while True:
        if isinstance(model, AttentiveClassifier):
            model = model.estimator_
        elif isinstance(model, FrozenEstimator):
            model = model.estimator
        else:
            return model


def model_params(model) -> dict:
    """The kernel, C and gamma of ``model``'s last step, where it has them."""
    from attentive.models import final_estimator

    last = final_estimator(model)
    params = last.get_params(deep=False) if hasattr(last, "get_params") else {}
    return {k: params[k] for k in ("kernel", "C", "gamma") if k in params}


@pn.cache(max_items=8, hash_funcs=_HASH)
def load(source: DataSource, model: ModelSource | None = None):
    """The dataset of ``source`` (cached by name or content), an upload read for the uploaded
    ``model`` if there is one."""
    if model is None:
        return source.load()
    from attentive.models import load_model

    return source.load(load_model(model.data))


#: The kernels whose γ means something (a linear SVC holds one it never uses): the model's
#: description and the exported operating point give it for these only.
GAMMA_KERNELS = ("rbf", "poly", "sigmoid")


@pn.cache(max_items=8, hash_funcs=_HASH)
def problem(data: DataSource, model: ModelSource) -> Problem:
    """Load the data, split it and train (or load and check) the model."""
    from attentive.models import final_estimator, load_model, make_model

    # An uploaded file is read for an uploaded model (attentive.data.reader: index base, columns).
    ds = load(data, model if model.uploaded and data.data is not None else None)
    X_fit, X_cal, y_fit, y_cal = split(ds.X_train, ds.y_train)
    labels = None
    here = False
    if model.uploaded:
        fitted = _unwrapped(load_model(model.data, n_features=ds.n_features))
        labels = model_labels(fitted, ds.class_names)
        if labels is not None:
            y_fit, y_cal = labels[np.asarray(y_fit)], labels[np.asarray(y_cal)]
        else:
            here = fitted_here(fitted, X_fit, y_fit)
    else:
        fitted = clone(make_model(model.kind, C=model.C, gamma=model.gamma)).fit(X_fit, y_fit)
    last = final_estimator(fitted)
    name = type(last).__name__
    kernel = getattr(last, "kernel", None)
    c = getattr(last, "C", None)
    # γ as the model holds it ("scale", "auto" or a number) for the kernels that have one: it
    # changes the model as much as C does (gamma="auto" on MNIST: 267 support vectors).
    gamma = getattr(last, "gamma", None) if kernel in GAMMA_KERNELS else None
    shown = ""
    if isinstance(gamma, str):
        shown = f", gamma={gamma!r}"
    elif gamma is not None:
        shown = f", gamma={gamma:g}"
    description = name + (f"(kernel={kernel!r}, C={c:g}{shown})" if kernel is not None else "")
    return Problem(
        key=(data.key, model.key),
        dataset=ds,
        model=fitted,
        X_fit=X_fit,
        y_fit=np.asarray(y_fit),
        X_cal=X_cal,
        y_cal=np.asarray(y_cal),
        model_source=model,
        description=description,
        params=model_params(fitted),
        labels=labels,
        trained_here=here,
    )


def fitted_here(model, X_fit, y_fit) -> bool:
    """Whether an uploaded ``model`` is the one the page trains for its settings on the fit
    part ``X_fit, y_fit`` (the same class and parameters as :func:`attentive.models.make_model`
    gives, and the same fitted state when fitted there again: :func:`attentive.models.
    model_fingerprint`). A pipeline, or a model of other settings, is not."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC, LinearSVC

    from attentive.models import make_model, model_fingerprint

    if type(model) is SVC:
        kind = model.kernel
    elif type(model) is LinearSVC:
        kind = "linear-svc"
    elif type(model) is LogisticRegression:
        kind = "logistic"
    else:
        return False
    try:
        candidate = make_model(kind, C=model.C, gamma=getattr(model, "gamma", "scale"))
    except (InvalidParameterError, ValueError, TypeError):
        return False
    if candidate.get_params() != model.get_params():
        return False
    if kind in ("rbf", "linear", "poly", "sigmoid") and not _svc_of_rows(model, X_fit):
        return False  # (at once: no refit for an SVC fitted on other rows)
    try:
        refit = clone(candidate).fit(X_fit, y_fit)
    except Exception:  # (a refit that fails says nothing of the upload, which is used as it is)
        return False
    return model_fingerprint(refit) == model_fingerprint(model)


def _svc_of_rows(model, X) -> bool:
    """Whether a fitted SVC was fitted on rows of the shape of ``X`` whose support vectors are
    ``X``'s rows at its ``support_``: a cheap look before refitting."""
    import scipy.sparse as sp

    if tuple(getattr(model, "shape_fit_", ())) != tuple(X.shape):
        return False
    support = np.asarray(getattr(model, "support_", []))
    if support.size and (support.min() < 0 or support.max() >= X.shape[0]):
        return False
    rows = X[support]
    rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)
    vectors = model.support_vectors_
    vectors = vectors.toarray() if sp.issparse(vectors) else np.asarray(vectors)
    return rows.shape == vectors.shape and np.array_equal(rows, vectors)


def model_labels(model, class_names) -> np.ndarray | None:
    """An uploaded binary ``model``'s classes in the dataset's order (negative, positive), where
    they are the dataset's own class names and not 0 / 1 (a model fitted on an uploaded file's
    labels as they are); None otherwise (0 / 1, or classes the fit refuses as unknown). A model
    whose positive class — scikit-learn's larger label — is the dataset's negative one is refused,
    naming the class to choose."""
    from attentive.models import final_estimator

    classes = getattr(final_estimator(model), "classes_", None)
    if classes is None or len(classes) != 2:
        return None
    classes = np.asarray(classes)
    # (As the dataset names its classes: label_text, 5.0 as "5".)
    texts = [label_text(c) for c in classes]
    if set(texts) <= _ZERO_ONE:
        return None
    if texts == list(class_names):
        return classes
    if texts == list(reversed(class_names)):
        raise InvalidParameterError(
            f"The uploaded model calls {texts[1]} its positive class (scikit-learn's larger "
            f"label) and this dataset calls {class_names[1]} positive: choose {texts[1]} as the "
            "positive class (uploads) to use the model."
        )
    return None


_ZERO_ONE = {"0", "1", "False", "True", "false", "true"}


def label_note(built: Walks) -> str | None:
    """A warning where an uploaded model's classes are 0 and 1 and the file's are too, with 0
    (or False) its positive class: the page codes that class 1, so a model fitted on the file's
    own labels decides the other way round here, while one fitted on the page's coding (an
    exported classifier) is right — which of the two cannot be told from the model."""
    p = built.problem
    if not p.model_source.uploaded or p.labels is not None:
        return None
    negative, positive = (str(c) for c in p.dataset.class_names)
    classes = {label_text(c) for c in built.classifier.classes_}
    if classes <= _ZERO_ONE and {negative, positive} <= _ZERO_ONE and positive in {"0", "False", "false"}:  # fmt: skip
        return (
            f"This file calls {positive} positive, which the page codes 1. A model fitted on the "
            f"file's own labels calls its 1 positive and decides the other way round here: choose "
            f"{negative} as the positive class then (one fitted on the page's coding, as an exported "
            "classifier is, is right as it is)."
        )
    return None


@dataclass(frozen=True)
class Walks:
    """A problem with its walk fixed (centering, order): the classifier every rule comes from.

    Attributes
    ----------
    key : tuple
    problem : Problem
    classifier : AttentiveClassifier
        Fitted on the fit part (``FrozenEstimator`` of the model), ``boundary="constant"``,
        ``reference_walks=REFERENCE_WALKS``, ``side="lower"``, threshold 0; every rule the dashboard shows is ``classifier.with_rule``.
    S : ndarray (n_test, n_terms), read-only
        ``classifier.partial_scores(X_test)``: the walks drawn, the budgeted curve and the τ sweep.
    A : ndarray (n_test, n_terms), read-only
        The running masses ``A_t = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)`` of the same walks
        (``classifier.partial_masses(X_test)``): with ``S``, the
        estimate of ``S_n`` a mass-regression rule stops on (``Boundary.running_estimate``).
    full_score : ndarray
        ``f(x) = c + S_n(x)`` on the test set.
    y_test : ndarray of bool
        True labels (positive class).
    sample : ndarray of int
        The test examples the walks plot draws (a prefix is a uniform sample).
    """

    key: tuple
    problem: Problem
    classifier: AttentiveClassifier
    S: np.ndarray
    A: np.ndarray
    full_score: np.ndarray
    y_test: np.ndarray
    sample: np.ndarray
    centering: str
    seed: int

    @property
    def n_terms(self) -> int:
        return int(self.classifier.n_terms_)

    @property
    def offset(self) -> float:
        return float(self.classifier.offset_)

    @property
    def X_test(self):
        return self.problem.dataset.X_test

    @property
    def term_kind(self) -> str:
        return self.classifier.terms_.kind

    @property
    def class_names(self) -> tuple[str, str]:
        """The negative and the positive class in the dataset's words."""
        return tuple(map(str, self.problem.dataset.class_names))


def from_upload(walks: Walks | None) -> bool:
    """Whether ``walks`` come from an uploaded model fitted elsewhere, perhaps on the examples
    held out here: no guarantee (an upload of the page's own model has one: ``trained_here``)."""
    return walks is not None and walks.problem.fitted_elsewhere


def _walks_hash(obj) -> bytes:
    return repr(obj.key).encode()


WALKS_HASH = {Walks: _walks_hash}


@pn.cache(max_items=6, hash_funcs=_HASH)
def walks(data: DataSource, model: ModelSource, centering: str, seed: int) -> Walks:
    """Fit the classifier (centering and order on the fit part) and walk the test set once."""
    p = problem(data, model)
    clf = AttentiveClassifier(
        FrozenEstimator(p.model),
        boundary="constant",
        centering=centering,
        reference_walks=REFERENCE_WALKS,
        random_state=int(seed),
        # The dashboard shows what the rule does, also where walking cannot save time.
        early_stopping=True,
    ).fit(p.X_fit, p.y_fit)
    X_test = p.dataset.X_test
    # Through the classifier's public methods, which check the examples as predict does (an
    # uploaded file's features may be sparse or need converting).
    S = frozen(clf.partial_scores(X_test), dtype=np.float64)
    A = frozen(clf.partial_masses(X_test), dtype=np.float64)
    y_test = frozen(p.truth(p.dataset.y_test) == clf.classes_[1])
    # A fixed order of the test examples (seed-independent: moving the seed changes the walks,
    # not which examples are drawn).
    sample = frozen(np.random.default_rng(0).permutation(S.shape[0])[:MAX_TRAJECTORIES])
    return Walks(
        key=(p.key, centering, int(seed)),
        problem=p,
        classifier=clf,
        S=S,
        A=A,
        full_score=frozen(clf.offset_ + S[:, -1]),
        y_test=y_test,
        sample=sample,
        centering=centering,
        seed=int(seed),
    )


def clear_caches() -> None:
    """Empty the caches (tests and benchmarks measure cold starts with it)."""
    for fn in (load, problem, walks):
        fn.clear()
    from attentive.app import rules

    rules.clear_caches()
