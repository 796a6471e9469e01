"""Term decomposition of fitted scikit-learn models (SPEC §1).

Every supported model is ``f(x) = b + Σ_i w_i h_i(x)``. :func:`decompose` turns a fitted model into a
:class:`TermDecomposition` that can evaluate any subset of the ``h_i`` on new examples, so that a
walk can be computed one block of terms at a time.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)

from attentive.errors import NonFiniteInput, UnsupportedModelError

__all__ = [
    "KERNELS",
    "SUPPORTED",
    "SUPPORTED_MODELS",
    "SupportedModel",
    "TermDecomposition",
    "check_model_kind",
    "decompose",
    "supported_entry",
]


KERNELS = ("linear", "rbf", "poly", "sigmoid")
DOT_KERNELS = ("linear", "poly", "sigmoid")  # kernels that are a function of x · y alone


@dataclass(frozen=True)
class LearnerRows:
    """Rows as a boosted model's weak learners take them (:meth:`TermDecomposition.
    learner_rows`): ``checked`` where each learner's ``predict`` checks them itself."""

    rows: object
    checked: bool

    def keep(self, idx) -> LearnerRows:
        """The same for rows ``idx`` only."""
        return LearnerRows(self.rows[idx], self.checked)


@dataclass(frozen=True)
class TermDecomposition:
    """A fitted binary linear predictor written as ``f(x) = intercept + Σ_i weights[i] h_i(x)``.

    Holds only arrays and the fitted scikit-learn objects (no closures), so it pickles and can be
    stored with ``skops``.

    Attributes
    ----------
    weights : ndarray of shape (n_terms,)
        ``w_i`` (SPEC §1 table).
    intercept : float
        ``b``.
    kind : {"kernel", "linear", "boosting"}
        What a term is: a support vector, a feature, or a weak learner.
    classes : ndarray of shape (2,)
        The model's ``classes_``; ``classes[1]`` is the positive class.
    head : estimator or None
        The pipeline's earlier steps, applied to raw ``X`` first.
    kernel : str or None
        For SVC: the kernel name, with ``kernel_params`` (resolved ``gamma``, ``coef0``, ``degree``)
        and ``support_vectors`` (dense array or sparse CSR matrix).
    learners : list or None
        For boosting: the fitted weak learners.
    """

    weights: np.ndarray
    intercept: float
    kind: str
    classes: np.ndarray
    head: object | None = field(default=None, repr=False)
    kernel: str | None = None
    kernel_params: dict | None = None
    support_vectors: object | None = field(default=None, repr=False)
    learners: list | None = field(default=None, repr=False)

    @property
    def n_terms(self) -> int:
        return int(self.weights.shape[0])

    def prepare(self, X):
        """Apply the pipeline's earlier steps (if any) to raw ``X``."""
        if self.head is None:
            return X
        from attentive.heads import apply_head

        return apply_head(self.head, X)

    def prepare_by_tiles(self, X):
        """``prepare(X)`` where it must be whole; where the head can be applied a tile at a time
        (:func:`attentive.heads.tiled_rows`), rows that apply it to each slice taken."""
        if self.head is not None:
            from attentive.heads import tiled_rows

            tiled = tiled_rows(self.head, X)
            if tiled is not None:
                return tiled
        return self.prepare(X)

    def term_values(self, X, idx=None) -> np.ndarray:
        """``h_i(x)`` for the terms ``idx`` (all terms when None), on prepared ``X``.

        Returns a dense float64 array of shape (n_examples, len(idx)).
        """
        idx = np.arange(self.n_terms) if idx is None else np.asarray(idx)
        if self.kind == "kernel":
            out = kernel_values(X, self.support_vectors[idx], self.kernel, self.kernel_params)
        elif self.kind == "linear":
            out = X[:, idx]
        else:
            out = self.learner_values(self.learner_rows(X), idx)
        out = out.toarray() if sp.issparse(out) else out
        return np.asarray(out, dtype=np.float64)

    def learner_rows(self, X) -> LearnerRows:
        """Prepared rows ``X`` as a boosted model's weak learners take them
        (:meth:`learner_values`). Decision trees check and convert their input on every call (a
        float32 copy of every row: most of a stump's time on MNIST's 784 columns); where every
        learner is one, the rows are converted once, as each tree would convert them (float32 in
        C order, or CSR with 32-bit indices, always a copy), and each tree's ``predict`` is
        called with ``check_input=False``. Rows that are not finite there (NaN, ±inf, values
        beyond float32), sparse rows whose indices need 64 bits, and learners that are not trees
        take ``predict`` as it is, with its own checks and messages."""
        from sklearn.tree import DecisionTreeClassifier

        if not all(isinstance(t, DecisionTreeClassifier) for t in self.learners or ()):
            return LearnerRows(X, checked=True)
        with np.errstate(over="ignore", invalid="ignore"):  # (found below, by the sum)
            if sp.issparse(X):
                rows = sp.csr_matrix(X).astype(np.float32)
                values = rows.data
                if rows.indices.dtype != np.intc or rows.indptr.dtype != np.intc:
                    return LearnerRows(X, checked=True)
            else:
                rows = np.ascontiguousarray(X, dtype=np.float32)
                values = rows
            if not np.isfinite(values.sum()):  # (a large finite sum too: then checked, slower)
                return LearnerRows(X, checked=True)
        return LearnerRows(rows, checked=False)

    def learner_values(self, rows: LearnerRows, idx) -> np.ndarray:
        """``h_i(x)`` (±1) of the weak learners ``idx`` on rows from :meth:`learner_rows`."""
        out = np.empty((rows.rows.shape[0], len(idx)), dtype=np.float64)
        kw = {} if rows.checked else {"check_input": False}
        for j, i in enumerate(idx):
            predicted = self.learners[i].predict(rows.rows, **kw)
            out[:, j] = np.where(predicted == self.classes[1], 1.0, -1.0)
        return out

    def own_terms(self, X) -> np.ndarray:
        """For each (prepared) example, the index of the term that *is* that example — a support
        vector equal to it, as a training example of a kernel model is — or −1.

        A training example that became a support vector carries its own term
        ``w_i K(x_i, x_i)`` in its walk; no new example does. Reference statistics can leave that
        term out (:meth:`attentive.walk.Walk.leave_own_out`), so that walks of the training set
        look like walks of new data. Only kernel models have such terms; other kinds give −1.
        Rows are matched by exact value, so a row equal to a support vector is taken for it; a
        model fitted on known rows says better (its ``support_``, as the estimator uses).
        """
        m = X.shape[0]
        own = np.full(m, -1, dtype=np.int64)
        if self.kind != "kernel" or m == 0:
            return own
        index = {key: i for i, key in enumerate(_row_keys(self.support_vectors))}
        for r, key in enumerate(_row_keys(X)):
            own[r] = index.get(key, -1)
        return own


def _row_keys(M) -> list[bytes]:
    """One hashable key per row, equal for rows with equal values (dense or sparse)."""
    if sp.issparse(M):
        M = sp.csr_matrix(M, dtype=np.float64, copy=True)
        M.eliminate_zeros()
        M.sum_duplicates()
        M.sort_indices()
        ind, data, ptr = M.indices.astype(np.int64), M.data, M.indptr
        return [
            ind[ptr[r] : ptr[r + 1]].tobytes() + b"|" + data[ptr[r] : ptr[r + 1]].tobytes()
            for r in range(M.shape[0])
        ]
    A = np.ascontiguousarray(M, dtype=np.float64) + 0.0  # −0.0 and 0.0 alike
    return [row.tobytes() for row in A]


def kernel_values(X, Y, kernel: str, params: dict) -> np.ndarray:
    """``K(x, y)`` for rows of ``X`` against rows of ``Y`` with an SVC's resolved parameters."""
    if kernel in DOT_KERNELS and not sp.issparse(X) and not sp.issparse(Y):
        return _dense_kernel_values(X, Y, kernel, params)
    if kernel == "rbf":
        return rbf_kernel(X, Y, gamma=params["gamma"])
    if kernel == "linear":
        return linear_kernel(X, Y)
    if kernel == "poly":
        # Sparse rows: γ x · y + c0 from scikit-learn, then the power by repeated squaring: numpy's
        # ``**`` with an integer exponent other than 0, 1, 2 calls ``pow``, ~48 ns per value here
        # against ~0.3 ns per multiply (25-40× faster term values).
        base = polynomial_kernel(X, Y, degree=1, gamma=params["gamma"], coef0=params["coef0"])
        return integer_power(base, int(params["degree"]))
    return sigmoid_kernel(X, Y, gamma=params["gamma"], coef0=params["coef0"])


def _dense_kernel_values(X, Y, kernel: str, params: dict) -> np.ndarray:
    """Linear, polynomial and sigmoid kernels of dense rows, computed as scikit-learn's pairwise
    functions do (``X Yᵀ``, then :func:`dot_kernel`) without their checks of both arrays on every
    call: ~135 µs here, as long as the product of 133 rows × 1,967 support vectors × 20 features
    they wrap (full evaluation of such a model runs in tiles of that size)."""
    Y = np.asarray(Y, dtype=np.float64)
    return dot_kernel(checked_rows(X, Y.shape[1]) @ Y.T, kernel, params)


def checked_rows(X, width: int) -> np.ndarray:
    """Dense examples as a float64 array of ``width`` features, refusing another shape
    (``ValueError``) and NaN or infinite values (:class:`attentive.errors.NonFiniteInput`), as
    scikit-learn's kernels refuse them."""
    X = np.asarray(X, dtype=np.float64)
    check_width(X, width)
    refuse_non_finite(X)
    return X


def check_width(X, width: int) -> None:
    """Raise ``ValueError`` unless ``X`` (dense or sparse) is 2-D with ``width`` features."""
    if X.ndim != 2 or X.shape[1] != width:
        raise ValueError(
            f"expected examples as a 2-D array of {width} features; got shape {X.shape}"
        )


def refuse_non_finite(values: np.ndarray) -> None:
    """Raise :class:`attentive.errors.NonFiniteInput` if ``values`` hold a NaN or an infinity.

    A finite sum proves every value finite (NaN and ±inf propagate): one pass, no boolean
    array; only a sum that overflows needs the value-by-value check."""
    with np.errstate(over="ignore", invalid="ignore"):
        finite = math.isfinite(float(np.einsum(values, list(range(values.ndim)), [])))
    if not finite and not np.isfinite(values).all():
        raise NonFiniteInput("Input X contains NaN or infinity.")


def dot_kernel(K: np.ndarray, kernel: str, params: dict) -> np.ndarray:
    """Kernel values from the dot products ``K = x · y`` for the kernels that depend on them only
    (linear, polynomial, sigmoid), in scikit-learn's order of operations: times γ, plus c0, then
    the power or ``tanh``. In place: returns ``K``."""
    if kernel == "linear":
        return K
    K *= params["gamma"]
    K += params["coef0"]
    if kernel == "poly":
        return integer_power(K, int(params["degree"]))
    return np.tanh(K, out=K)


def integer_power(base: np.ndarray, degree: int) -> np.ndarray:
    """``base ** degree`` for an integer ``degree ≥ 0`` by repeated squaring, the products taken
    as libsvm's ``powi`` takes them (which scikit-learn's SVC evaluates its polynomial kernel
    with). In place: returns ``base``."""
    if degree < 0:
        raise ValueError(f"the polynomial kernel's degree must be ≥ 0; got {degree}")
    if degree == 0:
        base.fill(1.0)
        return base
    result = None  # powi's ``ret`` (1 until a set bit), ``base`` its ``tmp``
    while degree > 1:
        if degree & 1:
            result = base.copy() if result is None else np.multiply(result, base, out=result)
        degree >>= 1
        np.multiply(base, base, out=base)
    if result is not None:  # the top bit: ret · tmp (one rounded product, in either order)
        np.multiply(result, base, out=base)
    return base


def _unwrap(estimator):
    """Split a (possibly frozen, possibly pipelined) estimator into (head steps, final model)."""
    # FrozenEstimator (sklearn.frozen) keeps the fitted model in ``estimator``.
    from sklearn.frozen import FrozenEstimator

    while isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    steps = getattr(estimator, "steps", None)
    if steps is not None and hasattr(estimator, "named_steps"):
        head_steps = list(steps[:-1])
        inner_head, final = _unwrap(steps[-1][1])
        if inner_head is not None:
            head_steps.extend(inner_head.steps)
        if not head_steps:
            return None, final
        from sklearn.pipeline import Pipeline

        return Pipeline(head_steps), final
    return None, estimator


def _check_binary(classes, name: str) -> np.ndarray:
    classes = np.asarray(classes)
    if classes.shape[0] != 2:
        raise UnsupportedModelError(
            f"{name} was fitted on {classes.shape[0]} classes {classes.tolist()}; attentive "
            "prediction needs a binary model (exactly 2 classes)."
        )
    return classes


def _check_kernel(model) -> None:
    """An SVC's kernel must be one whose terms the core computes (not precomputed or callable)."""
    kernel = model.kernel
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise UnsupportedModelError(
            f"{type(model).__name__} with kernel={kernel!r} is not supported; use kernel "
            "'linear', 'rbf', 'poly' or 'sigmoid'."
        )


def _check_algorithm(model) -> None:
    """AdaBoost's votes are terms under SAMME only."""
    algorithm = getattr(model, "algorithm", "SAMME")
    if algorithm not in ("SAMME", "deprecated"):
        raise UnsupportedModelError(
            f"AdaBoostClassifier(algorithm={algorithm!r}) is not supported; use algorithm='SAMME'."
        )


def _svc_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, type(model).__name__)
    _check_kernel(model)
    dual = model.dual_coef_
    # sklearn stores dual_coef_ and intercept_ with the sign that decision_function uses.
    weights = np.asarray(dual.toarray() if sp.issparse(dual) else dual, dtype=np.float64)[0].copy()
    sv = model.support_vectors_
    sv = sp.csr_matrix(sv) if sp.issparse(sv) else np.ascontiguousarray(sv, dtype=np.float64)
    return TermDecomposition(
        weights=weights,
        intercept=float(model.intercept_[0]),
        kind="kernel",
        classes=classes,
        kernel=model.kernel,
        kernel_params={
            "gamma": float(model._gamma),
            "coef0": float(model.coef0),
            "degree": int(model.degree),
        },
        support_vectors=sv,
    )


def _linear_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, type(model).__name__)
    coef = model.coef_
    coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef, dtype=np.float64)
    if coef.ndim == 1:  # RidgeClassifier stores a binary model's coefficients as one vector
        coef = coef[None, :]
    if coef.ndim != 2 or coef.shape[0] != 1:
        raise UnsupportedModelError(
            f"{type(model).__name__} has coef_ of shape {coef.shape}; expected one row (binary)."
        )
    intercept = float(np.ravel(model.intercept_)[0]) if np.size(model.intercept_) else 0.0
    return TermDecomposition(
        weights=coef[0].copy(), intercept=intercept, kind="linear", classes=classes
    )


def _adaboost_terms(model) -> TermDecomposition:
    classes = _check_binary(model.classes_, "AdaBoostClassifier")
    _check_algorithm(model)
    learners = list(model.estimators_)
    raw = np.asarray(model.estimator_weights_, dtype=np.float64)
    # decision_function codes a vote as +w for the predicted class and -w for the other, sums the
    # two columns with opposite signs (hence 2w) and divides by the sum of all estimator weights.
    weights = 2.0 * raw[: len(learners)] / raw.sum()
    return TermDecomposition(
        weights=weights, intercept=0.0, kind="boosting", classes=classes, learners=learners
    )


@dataclass(frozen=True)
class SupportedModel:
    """One row of the table of models the core can walk."""

    model_class: type
    term: str  # what a term is: "support vector", "feature" or "weak learner"
    read: object = field(repr=False)  # model -> TermDecomposition
    note: str = ""

    @property
    def name(self) -> str:
        return self.model_class.__name__

    @property
    def qualified_name(self) -> str:
        """The class's import path as skops records it (for the trusted-type list)."""
        return f"{self.model_class.__module__}.{self.model_class.__qualname__}"


def _supported_table() -> tuple[SupportedModel, ...]:
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.linear_model import (
        LogisticRegression,
        RidgeClassifier,
        RidgeClassifierCV,
        SGDClassifier,
    )
    from sklearn.svm import SVC, LinearSVC, NuSVC

    kernels = "kernel linear, rbf, poly or sigmoid; dense or sparse support vectors"
    return (
        SupportedModel(SVC, "support vector", _svc_terms, kernels),
        SupportedModel(NuSVC, "support vector", _svc_terms, kernels),
        SupportedModel(LinearSVC, "feature", _linear_terms),
        SupportedModel(LogisticRegression, "feature", _linear_terms),
        SupportedModel(RidgeClassifier, "feature", _linear_terms),
        SupportedModel(RidgeClassifierCV, "feature", _linear_terms),
        SupportedModel(SGDClassifier, "feature", _linear_terms),
        SupportedModel(AdaBoostClassifier, "weak learner", _adaboost_terms, "algorithm SAMME"),
    )


#: The one table of supported models (binary, fitted; or a Pipeline ending in one), checked with
#: ``isinstance``: decomposition, persistence, the dashboard's upload and the docs all read it.
SUPPORTED: tuple[SupportedModel, ...] = _supported_table()

SUPPORTED_MODELS = (
    ", ".join(f"{row.name} ({row.note})" if row.note else row.name for row in SUPPORTED)
    + ", or a Pipeline ending in one of them (binary models only)"
)


def supported_entry(model) -> SupportedModel:
    """The table row ``model`` (the final model, not a pipeline) is an instance of."""
    for row in SUPPORTED:
        if isinstance(model, row.model_class):
            return row
    if type(model).__name__ == "AttentiveClassifier":  # (wrapped, or ending a pipeline)
        raise UnsupportedModelError(
            "an AttentiveClassifier inside another model or at the end of a Pipeline is not "
            "supported here: give the classifier the model itself, with the steps before it "
            "inside, AttentiveClassifier(make_pipeline(StandardScaler(), SVC()), ...), which "
            "applies them to the rows it walks"
        )
    raise UnsupportedModelError(
        f"{type(model).__name__} is not supported. Supported: {SUPPORTED_MODELS}."
    )


def check_model_kind(estimator) -> None:
    """Raise :class:`UnsupportedModelError` for a model (fitted or not) that :func:`decompose`
    will refuse whatever it is fitted on: another kind of final model, an SVC kernel other than
    linear, rbf, poly or sigmoid (a precomputed or callable one), AdaBoost not SAMME. Checked
    before a fit, which could take long only to be refused."""
    _, model = _unwrap(estimator)
    read = supported_entry(model).read
    if read is _svc_terms:
        _check_kernel(model)
    elif read is _adaboost_terms:
        _check_algorithm(model)


def decompose(estimator) -> TermDecomposition:
    """Write a fitted binary scikit-learn model as a sum of terms (SPEC §1).

    Parameters
    ----------
    estimator : fitted estimator
        An ``SVC`` (kernel linear, rbf, poly or sigmoid), ``LinearSVC``, ``LogisticRegression``,
        ``AdaBoostClassifier`` (SAMME), a ``Pipeline`` ending in one of them, or a
        ``FrozenEstimator`` wrapping any of these.

    Returns
    -------
    TermDecomposition
        With ``decomposition.intercept + term_values(prepare(X)) @ weights`` equal to
        ``estimator.decision_function(X)``.

    Raises
    ------
    UnsupportedModelError
        For any other model, a non-binary model, or an unsupported kernel.
    """
    head, model = _unwrap(estimator)
    name = type(model).__name__
    supported_entry(model)
    if not hasattr(model, "classes_"):
        raise UnsupportedModelError(
            f"{name} is not fitted (it has no classes_); fit it first, or pass it unfitted to "
            "AttentiveClassifier, which fits it."
        )
    terms = supported_entry(model).read(model)
    if head is not None:
        terms = dataclasses.replace(terms, head=head)
    return terms
