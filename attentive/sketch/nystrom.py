"""The Nyström sketch of an RBF SVM's terms (SPEC §3b): a cheap ``h̃_i(x) ≈ h_i(x) = K(s_i, x)``.

Fitted on reference rows (after any pipeline head): their mean ``x̄``, the top k principal
directions ``P`` (k × d, orthonormal rows) and m landmarks ``L`` of the projected rows. With
``x̃ = x − x̄`` and the squared norm the projection discards ``r(x) = ‖x̃‖² − ‖P x̃‖²``,

    K(x, s) = e^{−γ ‖P x̃ − P s̃‖²} e^{−γ r(x)} e^{−γ r(s)} e^{2γ (x̃ − Pᵀ P x̃)·(s̃ − Pᵀ P s̃)}

exactly; the sketch drops the last factor (the cross term of the discarded parts) and replaces the
first by its Nyström form on the landmarks, ``K(P x̃, L) W K(L, P s̃)`` with ``W = K(L, L)⁺``:

    h̃_i(x) = a(x) · b_i,   a(x) = e^{−γ r(x)} K(P x̃, L),   b_i = e^{−γ r(s_i)} W K(L, P s̃_i).

A row costs its ``a(x)`` — ``k·d`` for the projection, ``d`` for ``‖x̃‖²``, ``m·k`` for the
landmark distances and ``m`` exponentials — and ``Σ_i w_i h̃_i(x) = a(x) · β`` one more m-dot
product with ``β = Σ_i w_i b_i``: nothing per (row, support vector). A term walked exactly also
needs its ``h̃_i(x)``, one m-dot product. :func:`sketch_cost` counts it all in units of a full
evaluation's multiply-adds (``n·d`` per row).

Rows already decorrelated (a PCA in the pipeline leaves its components so) have principal
directions that are nearly coordinates: where the k coordinates of largest variance hold nearly
what the top k directions hold (:data:`AXIS_SHARE`), they are ``P``, and a row's projection is
k of its own values — the ``k·d`` is gone, and with it most of a sketch's cost on a few dozen
features.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from attentive.errors import InvalidParameterError, UnsupportedModelError
from attentive.terms import TermDecomposition, check_width, checked_rows, refuse_non_finite

__all__ = [
    "AXIS_SHARE",
    "LANDMARKS",
    "NystromSketch",
    "RowProjection",
    "axis_directions",
    "fit_sketch",
    "principal_directions",
    "sketch_available",
    "sketch_cost",
    "sketch_unavailable",
    "unit_coordinates",
    "walked_term_cost",
]

#: How the landmarks are picked among the projected reference rows: k-means++ seeding
#: (spread out, the default: measured closer to the kernel, docs/method.md) or a seeded uniform
#: sample.
LANDMARKS = ("kmeans++", "sample")
#: Eigenvalues of ``K(L, L)`` below this share of the largest are dropped from its inverse: the
#: regularised pseudo-inverse, so that ``β``'s products lose at most ~1e-8 of their size to
#: rounding (a 1e-8 condition number times float64's 1e-16).
RCOND = 1e-8
#: Reference rows the principal directions and landmarks are fitted on (a seeded sample).
MAX_ROWS = 3000
#: Where the k coordinates of largest variance hold at least this share of what the top k
#: principal directions hold (of the centred reference rows' squared norm, for every leading
#: k' ≤ k), they are ``P``: rows already decorrelated — a PCA in the pipeline leaves its
#: components so (MNIST behind ``PCA(50)``: 0.997-1.000 of it; pixels and standardised pixels
#: 0.03-0.09) — lose next to nothing of the sketch, and a row's projection is then k of its own
#: values, with no k·d product.
AXIS_SHARE = 0.99


def sketch_available(terms: TermDecomposition, X_ref) -> bool:
    """Whether a sketch can be fitted for ``terms`` on reference rows ``X_ref`` (raw): an RBF
    SVM with dense support vectors whose rows, after the pipeline's head, are dense."""
    return sketch_unavailable(terms, X_ref) is None


def sketch_unavailable(terms: TermDecomposition, X_ref=None) -> str | None:
    """Why no sketch can be fitted for ``terms`` on reference rows ``X_ref`` (raw), or None
    when one can (:func:`sketch_available`). ``X_ref=None``: the model alone."""
    if terms.kind != "kernel" or terms.kernel != "rbf":
        what = f"kernel {terms.kernel!r}" if terms.kind == "kernel" else f"{terms.kind} terms"
        return f"the model has {what}, and sketches are fitted for RBF SVMs only"
    if sp.issparse(terms.support_vectors):
        return "the model stores its support vectors sparse, and the sketch needs dense ones"
    if X_ref is None:
        return None
    head = terms.prepare(X_ref[:1]) if hasattr(X_ref, "shape") else None
    if head is None or sp.issparse(head):
        return (
            "the rows are sparse (after the pipeline's transforms), and the sketch needs dense ones"
        )
    return None


def sketch_cost(
    n_terms: int, n_features: int, k: int, m: int, *, coordinates: bool = False
) -> float:
    """A row's sketch in units of a full evaluation (``n·d`` multiply-adds per row, SPEC §3b).

    ``(k + 1)·d + m·(k + 2)``: the projection ``P x̃`` (k·d), ``‖x − x̄‖²`` (d), the distances to
    the m landmarks (m·k), their m exponentials (each counted as one multiply-add, as the unit
    counts a full evaluation's n exponentials inside its n·d) and ``a(x) · β`` (m).
    ``coordinates``: ``P``'s rows are coordinates (:data:`AXIS_SHARE`), so ``P x`` is k of the
    row's own values and the projection costs no multiply-add: ``d + m·(k + 2)``."""
    projection = 0 if coordinates else k * n_features
    return (projection + n_features + m * (k + 2)) / (n_terms * n_features)


def walked_term_cost(n_features: int, m: int) -> float:
    """A term walked exactly after a sketch, in units of a plain walk's term (d multiply-adds):
    its kernel value and its sketch value ``a(x) · b_i`` (m), ``1 + m/d``."""
    return 1.0 + m / n_features


@dataclass(frozen=True)
class NystromSketch:
    """The fitted sketch of one RBF model's terms (module docstring).

    Attributes
    ----------
    gamma : float
        The model's γ.
    mean : ndarray (d,)
        ``x̄``, the reference rows' mean.
    components : ndarray (k, d)
        ``P``, orthonormal rows: the top k principal directions of the reference rows, or the k
        coordinates of largest variance where those hold nearly as much (:data:`AXIS_SHARE`;
        rows of the identity, and a row's projection is then k of its own values).
    landmarks : ndarray (m, k)
        ``L``, projected reference rows.
    landmark_inverse : ndarray (m, m)
        ``W``, the regularised pseudo-inverse of ``K(L, L)`` (eigenvalues below ``RCOND`` times
        the largest dropped).
    term_factors : ndarray (n_terms, m)
        ``b_i`` per term, in the model's order of terms.
    corrected : bool
        Whether the factors ``e^{−γ r}`` are applied (the sketch of SPEC §3b); False keeps the
        kernel of the projections alone, to measure what the correction does.
    projection : RowProjection
        The arrays a row's features are computed from (derived from the above).
    """

    gamma: float
    mean: np.ndarray = field(repr=False)
    components: np.ndarray = field(repr=False)
    landmarks: np.ndarray = field(repr=False)
    landmark_inverse: np.ndarray = field(repr=False)
    term_factors: np.ndarray = field(repr=False)
    corrected: bool = True
    projection: RowProjection = field(init=False, repr=False)

    def __post_init__(self):
        projection = RowProjection.of(self.mean, self.components, self.landmarks, self.corrected)
        object.__setattr__(self, "projection", projection)

    @property
    def k(self) -> int:
        return int(self.components.shape[0])

    @property
    def m(self) -> int:
        return int(self.landmarks.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.components.shape[1])

    @property
    def n_terms(self) -> int:
        return int(self.term_factors.shape[0])

    @property
    def on_coordinates(self) -> bool:
        """Whether ``P``'s rows are coordinates (:data:`AXIS_SHARE`): a row's projection is k of
        its own values (their columns: ``projection.coordinates``)."""
        return self.projection.coordinates is not None

    @property
    def cost(self) -> float:
        """A row's sketch in full-evaluation units (:func:`sketch_cost`)."""
        return sketch_cost(
            self.n_terms, self.n_features, self.k, self.m, coordinates=self.on_coordinates
        )

    @property
    def walked_term_cost(self) -> float:
        """A walked term's cost in plain-walk terms (:func:`walked_term_cost`)."""
        return walked_term_cost(self.n_features, self.m)

    def features(self, X) -> np.ndarray:
        """``a(x) = e^{−γ r(x)} K(P x̃, L)`` for prepared rows ``X``, dense or sparse (a model
        fitted on dense rows scores sparse ones too): (rows, m)."""
        if sp.issparse(X):
            return self.projection.sparse_features(_sparse_rows(X, self.n_features), self.gamma)
        return self.projection.features(_dense_rows(X, self.n_features), self.gamma)

    def term_values(self, X, idx=None, *, features: np.ndarray | None = None) -> np.ndarray:
        """``h̃_i(x) = a(x) · b_i`` for the terms ``idx`` (all when None): (rows, len(idx)).
        ``features``: ``a(x)`` of these rows, when computed already."""
        a = self.features(X) if features is None else features
        B = self.term_factors if idx is None else self.term_factors[np.asarray(idx)]
        return a @ B.T


@dataclass(frozen=True)
class RowProjection:
    """What a row's features ``a(x)`` are computed from, arranged for one product per row:
    ``X [Pᵀ | x̄]`` gives ``P x`` and ``x · x̄`` at once (one d × (k + 1) product and no centred
    copy of the rows), then ``P x̃ = P x − P x̄`` and ``‖x̃‖² = ‖x‖² − 2 x · x̄ + ‖x̄‖²``.
    Where ``P``'s rows are coordinates (``coordinates``: their columns), ``P x`` is those values
    of the row, and the product is ``X x̄`` alone (:meth:`products`). Products in the dtype of
    its arrays (:meth:`astype`)."""

    stacked: np.ndarray  # (d, k + 1): Pᵀ, then x̄
    projected_mean: np.ndarray  # (k,): P x̄
    mean_norm: float  # ‖x̄‖²
    landmarks: np.ndarray  # (m, k)
    corrected: bool = True  # the e^{−γ r(x)} factor (False: measuring what it does)
    coordinates: np.ndarray | None = None  # (k,): P's rows are e_j for these j, else None

    @staticmethod
    def of(mean, components, landmarks, corrected: bool = True) -> RowProjection:
        stacked = np.ascontiguousarray(np.column_stack([components.T, mean]))
        return RowProjection(
            stacked,
            components @ mean,
            float(mean @ mean),
            landmarks,
            corrected,
            unit_coordinates(components),
        )

    def products(self, X, out: np.ndarray | None = None) -> np.ndarray:
        """``G = X [Pᵀ | x̄]`` of rows ``X`` (dense, or sparse: over their non-zeros), (rows,
        k + 1): one product; where ``P``'s rows are coordinates, the rows' values there (exact)
        and ``X x̄``."""
        sparse = sp.issparse(X)
        if self.coordinates is None:
            return np.asarray(X @ self.stacked) if sparse else np.matmul(X, self.stacked, out=out)
        k = self.coordinates.size
        if out is None:
            out = np.empty((X.shape[0], k + 1), np.result_type(X.dtype, self.stacked.dtype))
        values = X[:, self.coordinates]
        out[:, :k] = values.toarray() if sparse else values
        out[:, k] = X @ self.stacked[:, k]
        return out

    def astype(self, dtype) -> RowProjection:
        """The same projection with arrays of ``dtype`` (float32: single-precision products)."""
        return dataclasses.replace(
            self,
            stacked=self.stacked.astype(dtype),
            projected_mean=self.projected_mean.astype(dtype),
            landmarks=self.landmarks.astype(dtype),
        )

    def features(self, X: np.ndarray, gamma: float) -> np.ndarray:
        """``a(x)`` of rows ``X``: the discarded-norm factor ``e^{−γ r(x)}`` times the RBF
        kernel to the landmarks, ``r(x) = ‖x̃‖² − ‖P x̃‖²`` clipped at 0 against rounding."""
        norms = np.einsum("ij,ij->i", X, X) if self.corrected else None
        return self.features_of(self.products(X), norms, gamma)

    def sparse_features(self, X: sp.csr_matrix, gamma: float) -> np.ndarray:
        """:meth:`features` of sparse rows (float64 CSR): the same products and norms, taken
        over each row's non-zeros."""
        norms = np.asarray(X.multiply(X).sum(axis=1)).ravel() if self.corrected else None
        return self.features_of(self.products(X), norms, gamma)

    def features_of(self, G: np.ndarray, norms: np.ndarray | None, gamma: float) -> np.ndarray:
        """:meth:`features` from what its one pass over the rows gives: their products ``G = X
        [Pᵀ | x̄]`` and their ``‖x‖²`` (None without the correction). The rest is a few
        operations per row on (rows, k + 1) and (rows, m) arrays, so a caller that reads the
        rows a tile at a time calls this once for all of them."""
        # −γ D_j = −γ (‖U‖² + r) + 2γ U · L_j − γ ‖L_j‖², U = P x̃, r = max(‖x̃‖² − ‖U‖², 0):
        # one product [U | ‖U‖² + r | 1] M of k + 2 columns gives every exponent (not a product
        # and seven passes over the (rows, m) distances: 0.61–0.71 of the time, one thread).
        k = self.projected_mean.shape[0]
        rows = G.shape[0]
        A = np.empty((rows, k + 2), dtype=np.result_type(G.dtype, self.landmarks.dtype))
        U = np.subtract(G[:, :k], self.projected_mean, out=A[:, :k])
        own = np.einsum("ij,ij->i", U, U, out=A[:, k])
        if self.corrected:
            # (‖U‖² + max(‖x̃‖² − ‖U‖², 0) = max(‖x̃‖², ‖U‖²).)
            np.maximum(own, norms - 2.0 * G[:, k] + self.mean_norm, out=own)
        A[:, k + 1] = 1.0
        L = self.landmarks
        M = np.empty((k + 2, L.shape[0]), dtype=A.dtype)
        M[:k] = (2.0 * gamma) * L.T
        M[k] = -gamma
        M[k + 1] = -gamma * np.einsum("ij,ij->i", L, L)
        E = A @ M
        np.minimum(E, 0.0, out=E)  # (distances clipped at 0 against rounding)
        return np.exp(E, out=E)


def _dense_rows(X, width: int) -> np.ndarray:
    if sp.issparse(X):
        raise InvalidParameterError(
            "the Nyström sketch is fitted on dense rows (it finds principal directions of x − x̄); "
            "got a sparse matrix. Densify the reference rows, or walk without a sketch."
        )
    return checked_rows(X, width)


def _sparse_rows(X, width: int) -> sp.csr_matrix:
    """Sparse rows to compute features of: float64 CSR of ``width`` features, their stored
    values finite (as :func:`attentive.terms.checked_rows` asks of dense rows)."""
    check_width(X, width)
    X = sp.csr_matrix(X, dtype=np.float64)
    refuse_non_finite(X.data)
    return X


def _principal_directions(X: np.ndarray, k: int, random_state) -> np.ndarray:
    """Top k right singular vectors of the centred rows ``X`` (k × d, orthonormal rows), or the
    k coordinates of largest variance where they hold nearly as much (:func:`axis_directions`)."""
    if k >= min(X.shape):
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        P = np.ascontiguousarray(Vt[:k])
    else:
        from sklearn.utils.extmath import randomized_svd

        _, _, Vt = randomized_svd(X, k, n_iter=7, random_state=random_state)
        P = np.ascontiguousarray(Vt)
    axes = axis_directions(X, P)
    return P if axes is None else axes


def axis_directions(X: np.ndarray, P: np.ndarray) -> np.ndarray | None:
    """The k coordinates of largest variance of the centred rows ``X``, as rows of the identity
    (k × d, in decreasing variance), where for every leading k' ≤ k they hold at least
    :data:`AXIS_SHARE` of what the leading k' rows of ``P`` (principal directions) hold of
    ``‖X‖²``; else None."""
    k = P.shape[0]
    variance = np.einsum("ij,ij->j", X, X)
    top = np.argsort(-variance, kind="stable")[:k]
    held_by_axes = np.cumsum(variance[top])
    projected = X @ P.T
    held_by_directions = np.cumsum(np.einsum("ij,ij->j", projected, projected))
    if not np.all(held_by_axes >= AXIS_SHARE * held_by_directions):
        return None
    axes = np.zeros_like(P)
    axes[np.arange(k), top] = 1.0
    return axes


def unit_coordinates(components: np.ndarray) -> np.ndarray | None:
    """The columns ``j`` where each row of ``components`` is ``e_j`` (one 1, zeros elsewhere,
    distinct columns), or None."""
    P = np.asarray(components)
    if P.ndim != 2 or P.shape[0] == 0:
        return None
    cols = np.argmax(P, axis=1)
    rows = np.arange(P.shape[0])
    if not (
        np.all(P[rows, cols] == 1.0)
        and np.count_nonzero(P) == P.shape[0]
        and np.unique(cols).size == cols.size
    ):
        return None
    return cols.astype(np.intp)


def _leading_directions(directions, k: int, d: int) -> np.ndarray:
    P = np.asarray(directions, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != d or P.shape[0] < k:
        raise InvalidParameterError(
            f"directions must hold at least k={k} principal directions of {d} features, got an "
            f"array of shape {P.shape}."
        )
    return np.ascontiguousarray(P[:k])


def principal_directions(X_ref_prepared, k: int, *, max_rows: int = MAX_ROWS, random_state=0):
    """The top k principal directions (k × d, orthonormal rows) that :func:`fit_sketch` fits on
    the same rows with the same ``max_rows`` and ``random_state`` — or the k coordinates of
    largest variance where they hold nearly as much (:func:`axis_directions`); any smaller k'
    takes their first k' rows (``fit_sketch(..., directions=...)``)."""
    X = _dense_rows(X_ref_prepared, X_ref_prepared.shape[1])
    rng = np.random.default_rng(random_state)
    sample = _reference_sample(X, max_rows, rng)
    k = min(int(k), *sample.shape)
    return _principal_directions(sample - X.mean(axis=0), k, int(rng.integers(2**31 - 1)))


def _reference_sample(X: np.ndarray, max_rows: int, rng: np.random.Generator) -> np.ndarray:
    """A seeded sample of at most ``max_rows`` rows of X (all of them when there are fewer)."""
    rows = X.shape[0]
    if rows > max_rows:
        return X[np.sort(rng.choice(rows, max_rows, replace=False))]
    return X


def _landmarks(U: np.ndarray, m: int, method: str, rng: np.random.Generator) -> np.ndarray:
    if method == "sample":
        return U[np.sort(rng.choice(U.shape[0], m, replace=False))]
    from sklearn.cluster import kmeans_plusplus

    centers, _ = kmeans_plusplus(U, m, random_state=int(rng.integers(2**31 - 1)))
    return centers


def _pseudo_inverse(K: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """``K⁺`` of a symmetric positive semi-definite K, eigenvalues ≤ rcond·max dropped."""
    vals, vecs = np.linalg.eigh(K)
    keep = vals > rcond * vals[-1]
    V = vecs[:, keep]
    return (V / vals[keep]) @ V.T


def fit_sketch(
    terms: TermDecomposition,
    X_ref_prepared,
    *,
    k: int = 16,
    m: int = 64,
    landmarks: str = "kmeans++",
    max_rows: int = MAX_ROWS,
    random_state=0,
    corrected: bool = True,
    directions=None,
) -> NystromSketch:
    """Fit the Nyström sketch of an RBF model's terms on reference rows (SPEC §3b).

    Parameters
    ----------
    terms : TermDecomposition
        An SVC with ``kernel="rbf"`` (dense support vectors).
    X_ref_prepared : array (rows, d)
        Reference rows after the pipeline's head (``walk.prepare(X)``), dense. ``x̄`` is their
        mean; the principal directions and the landmarks come from a seeded sample of at most
        ``max_rows`` of them.
    k : int
        Principal directions kept (at most d and the rows sampled): the top k, or the k
        coordinates of largest variance where those hold nearly as much (:data:`AXIS_SHARE`).
    m : int
        Landmarks (at most the rows sampled).
    landmarks : {"kmeans++", "sample"}
        k-means++ seeding on the projected rows, or a seeded uniform sample of them.
    random_state : int
        Seeds the sample, the randomized SVD and the landmarks.
    corrected : bool
        False drops the factors ``e^{−γ r}`` (the kernel of the projections alone): not a sketch
        to use, a way to measure what the correction does (docs/method.md).
    directions : array (K, d), optional
        Principal directions of the same rows computed already (:func:`principal_directions`
        with the same ``max_rows`` and ``random_state``, ``K ≥ k``): ``P`` is their first k.
        Sketches of several sizes then share one decomposition (:func:`attentive.sketch.
        choose_sketch`).
    """
    if terms.kind != "kernel" or terms.kernel != "rbf":
        what = f"kernel {terms.kernel!r}" if terms.kind == "kernel" else f"{terms.kind} terms"
        raise UnsupportedModelError(
            f"a sketch is available for RBF SVMs only (SVC with kernel='rbf'); this model has "
            f"{what}. Walk it without a sketch."
        )
    if sp.issparse(terms.support_vectors):
        raise UnsupportedModelError(
            "the Nyström sketch needs dense support vectors; this model stores them sparse."
        )
    sv = np.asarray(terms.support_vectors, dtype=np.float64)
    d = sv.shape[1]
    X = _dense_rows(X_ref_prepared, d)
    if landmarks not in LANDMARKS:
        raise InvalidParameterError(f"landmarks must be one of {LANDMARKS}, got {landmarks!r}.")
    rng = np.random.default_rng(random_state)
    sample = _reference_sample(X, max_rows, rng)
    rows_used = sample.shape[0]
    limits = {
        "k": (min(d, rows_used), f"{d} features, {rows_used} reference rows"),
        "m": (rows_used, f"{rows_used} reference rows"),
    }
    for name, value in (("k", k), ("m", m)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidParameterError(f"{name} must be a whole number ≥ 1, got {value!r}.")
        top, why = limits[name]
        if value > top:
            raise InvalidParameterError(f"{name}={value} is too large: at most {top} ({why}).")
    gamma = float(terms.kernel_params["gamma"])
    mean = X.mean(axis=0)
    seed = int(rng.integers(2**31 - 1))  # drawn either way: the landmarks' draws stay the same
    if directions is None:
        P = _principal_directions(sample - mean, int(k), seed)
    else:
        P = _leading_directions(directions, int(k), d)
    L = _landmarks((sample - mean) @ P.T, int(m), landmarks, rng)
    W = _pseudo_inverse(np.exp(-gamma * _squared_distances(L, L)))
    # b_i = e^{−γ r(s_i)} W K(L, P s̃_i) = W a(s_i): the same features as a row's, times W.
    B = RowProjection.of(mean, P, L, corrected).features(sv, gamma) @ W
    for a in (mean, P, L, W, B):
        a.flags.writeable = False
    return NystromSketch(
        gamma=gamma,
        mean=mean,
        components=P,
        landmarks=L,
        landmark_inverse=W,
        term_factors=B,
        corrected=corrected,
    )


def _squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``‖a − b‖²`` for rows of A against rows of B, as ``‖a‖² + ‖b‖² − 2 a·b`` clipped at 0."""
    D = A @ B.T
    D *= -2.0
    D += np.einsum("ij,ij->i", A, A)[:, None]
    D += np.einsum("ij,ij->i", B, B)
    return np.maximum(D, 0.0, out=D)
