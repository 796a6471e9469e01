"""The sketched walk's terms (SPEC §3b): a start per row and residual terms, over any exact
source of the plain walk's terms.

A sketched walk (:class:`attentive.sketch.SketchedWalk`) starts every row at the sketch's score
``F̃(x) = (a(x) − ā) · β`` and adds, position after position, ``w_{π(k)} (h_{π(k)}(x) −
h̃_{π(k)}(x))`` with ``h̃_i(x) = a(x) · b_i``: its uncentred sums ``U^ρ_t = F̃(x) + Σ_{k≤t} w (h −
h̃)`` (centred by ``C^ρ_t = Σ_{k≤t} w μ^ρ``) end where the plain walk's do. :class:`SketchedSource`
wraps the source the plain walk's rows get (grid, float32, float64: whatever the router chose)
and takes from it the exact terms; per row it adds the sketch's features ``a(x)`` (the row's
only fixed cost, nothing per support vector), per block one product of the rows' features with
the block's ``w b`` (``m`` multiply-adds a term). The exact terms' magnitudes stay the running
mass's steps (a rule on the mass, a certified source's band), as in the plain walk.

Over the float32 source (``rbf-single``: dense rows off the pixel grid, float32 products under a
band) the features come from float32 products too (:func:`single_features`: the projection by
chunks of columns, with a bound per row), and their bound joins the band: a walk whose crossing
it makes unsure is walked again in double precision, so stops, sides and labels stay those of
double precision. Over every other source they are computed as the reference computes them
(:meth:`attentive.sketch.NystromSketch.features`, in float64, a tile of rows at a time) and
agree with it to double rounding; a certified inner source's band covers its exact terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.precision import U32, U64
from attentive.evaluator.rows import (
    float64_tiles,
    product_tile_rows,
    single_row_norms,
    squared_norms,
    tile_rows,
)
from attentive.evaluator.scratch import scratch
from attentive.evaluator.sources.base import TermSource
from attentive.evaluator.sources.generic import sparse_row_values

__all__ = ["SketchArrays", "SketchedSource", "is_sketched", "sketch_cost_model"]


def is_sketched(walk) -> bool:
    """Whether ``walk`` is a sketched walk (it has a sketch and the plain walk under it)."""
    return getattr(walk, "sketch", None) is not None and getattr(walk, "walk", None) is not None


@dataclass(frozen=True)
class SketchArrays:
    """A sketched walk's arrays in walk order: ``|w_{π(k)}| b_{π(k)}`` (n, m), ``β`` and ``ā · β``;
    per position the size of what a block's sketched terms add up to, for the rounding
    allowance, ``Σ_{k≤t} |w_{π(k)}| ‖b_{π(k)}‖₁``, and how far the features can move the sum,
    ``‖β − Σ_{k≤t} w_{π(k)} b_{π(k)}‖₁`` (``ahead``: ``U^ρ_t = a(x) · (β − Σ_{k≤t} w b) + …``,
    so features off by ``ε`` move it by at most ``ε`` times that norm; about 0 at ``t = n``, as
    ``β = Σ w b``: ``U_n`` carries no feature error). It falls along the walk; the walk takes
    a block's band at its largest over the block's positions (``walk_rows``)."""

    factors: np.ndarray
    beta: np.ndarray
    mean_start: float
    size: np.ndarray
    ahead: np.ndarray


def sketch_arrays(walk, plan) -> SketchArrays:
    def build():
        factors = np.abs(walk.ordered_weights)[:, None] * walk.ordered_factors
        factors = np.ascontiguousarray(factors)
        beta = np.asarray(walk.beta, dtype=np.float64)
        signed = walk.ordered_weights[:, None] * walk.ordered_factors
        return SketchArrays(
            factors=factors,
            beta=beta,
            mean_start=float(walk.feature_mean @ walk.beta),
            size=np.cumsum(np.abs(factors).sum(axis=1)),
            ahead=np.abs(beta - np.cumsum(signed, axis=0)).sum(axis=1),
        )

    return plan.arrays("sketch", build)


# Rows a sketch's features read at a time: a float64 tile of 128 MNIST rows (0.8 MB) stays in
# cache for its conversion, product and norms (7,000 rows of MNIST 8 against the rest: 4.3 ms in
# tiles of 128 against 5.5 in tiles of 512, one thread, medians of 21).
FEATURE_TILE = 128


def sketch_features(walk, X: np.ndarray) -> np.ndarray:
    """``a(x)`` of prepared rows ``X``, as the reference computes them. Sparse rows: by the
    sketch itself, over their non-zeros. Dense rows: the one pass over the rows (their float64
    conversion, products with ``[Pᵀ | x̄]`` and ``‖x‖²``) a tile at a time, in cache instead of
    one float64 copy of every row; the rest once for all the rows (:meth:`attentive.sketch.
    nystrom.RowProjection.features_of`: three calls a tile, not a dozen, so two threads
    computing features do not queue for the interpreter between small calls)."""
    sketch = walk.sketch
    if sp.issparse(X):  # rows of a model fitted on dense ones: products over their non-zeros
        return sketch.features(X)
    X = np.asarray(X)
    projection = sketch.projection
    m = X.shape[0]
    G = np.empty((m, projection.stacked.shape[1]))
    norms = np.empty(m) if projection.corrected else None
    # (Narrow rows: more of them a tile; few enough for OpenBLAS's small-matrix kernel.)
    T = product_tile_rows(
        X.shape[1], projection.stacked.shape[1], max(FEATURE_TILE, tile_rows(X.shape[1]))
    )
    for lo, hi, tile in float64_tiles(X, T):
        projection.products(tile, out=G[lo:hi])
        if norms is not None:
            squared_norms(tile, out=norms[lo:hi])
    return projection.features_of(G, norms, sketch.gamma)


#: Columns a float32 product of :func:`single_features` sums at a time (the chunks are summed in
#: float64): the bound on a dot product grows with its length, ``γ_c ≈ c u32``, so short chunks
#: make it ~50× tighter than one product over MNIST's 784 columns (a tile's chunks are one
#: batched product). With chunks of 64 columns, 2,066 of 7,000 of MNIST 8 against the rest's
#: sketched walks (float32 pixels taken by the float32 source, an experiment) were left unsure,
#: with chunks of 16 1,336, with the float32 source's own band alone 716.
SINGLE_CHUNK = 16
#: Rows whose float32 features may be off by more than this (a feature is at most 1) get them in
#: double precision: their band would leave their crossings unsure.
MAX_FEATURE_ERROR = 1e-4
#: A multiply-add of a dense projection (``P x`` over the row's d columns, and ``x · x̄``), ns:
#: :func:`single_features`' float32 products by chunks, and the double-precision features
#: (:func:`sketch_features`). Fitted, with :data:`FEATURE_READ_NS`, to features of ~7,000
#: MNIST rows (784 float32 columns: 8 against the rest, pixels and 2 vs 5 standardised) at
#: (k, m) = (1, 4), (2, 8), (4, 16), (8, 32) and (16, 64), one thread, medians of 15–21, four
#: runs (2026-11-30): double precision 414–429, 465–508, 522–558, 615–644 and 1,019–1,069 ns a
#: row; priced at 422, 462, 546, 723 and 1,114.
#: The float32 features measured 296–998 then, but 1,210 ns a row at (1, 4) and 1,559 at
#: (4, 16) against the double-precision features' 687 and 898 in the same process
#: (2026-12-01, 4,096 rows of 2 vs 5 standardised and 3 against the rest, OpenBLAS's own
#: kernels): a tile's ~49 chunk products are as many small calls. They are priced as the
#: double-precision ones, not below them.
DOUBLE_MADD_NS = 0.04
#: What reading a dense row costs the features, ns a column, whatever k: the tile's conversion
#: to float64 and the rows' norms (fitted to the double-precision features; the float32 ones,
#: whose chunks' small products are as many calls, had their own price,
#: ``SINGLE_FEATURE_READ_NS`` and ``SINGLE_MADD_NS``, until 2026-12-01, when they measured no
#: cheaper).
FEATURE_READ_NS = 0.39
#: Where ``P``'s rows are coordinates (rows behind a PCA: narrow), a column of the row: its
#: product with ``x̄`` and its read (fitted to rows of 30–50 columns, as ``FEATURE_ROW_NS``).
SINGLE_COORDINATE_NS = 0.09
COORDINATE_NS = 0.12


def single_features(
    projection, X: np.ndarray, gamma: float, *, norms=None
) -> tuple[np.ndarray, np.ndarray]:
    """``a(x)`` of rows ``X`` from float32 products, and per row a bound on
    ``max_j |â_j(x) − a_j(x)|`` against the features of the same rows in exact arithmetic (which
    :meth:`attentive.sketch.nystrom.RowProjection.features` computes to double rounding).

    The products ``G = X [Pᵀ | x̄]`` are taken in float32 over chunks of :data:`SINGLE_CHUNK`
    columns, a tile of rows at a time (converted to float32 there, if they are not), the chunks
    summed in float64; ``‖x‖²`` in float32 by
    chunks (:func:`attentive.evaluator.rows.single_row_norms`, with its bound); the rest in
    float64 as the reference does it (``RowProjection.features_of``). ``norms``: the rows'
    ``(‖x‖², bound on its error)`` when computed already. The bound, step by step
    (``u = u32``, ``u' = u64``, ``c`` a chunk's columns, ``q`` the chunks):

    - each ``G_j`` is within ``ε_j = g ‖x‖ ‖s_j‖ + 1.01 d 2^-149`` of ``x · s_j``, ``g = 1.01 (u +
      γ_c + (q + 1) u')``: the column ``s_j`` rounded to float32 (``u``; one more for rows
      rounded to it), a chunk's dot product in any order (``γ_c = c u / (1 − c u)`` of
      ``Σ|x_i||s_i|``), the chunks' float64 sum (``(q + 1) u'``, the remainder's product the
      last part), ``Σ|x_i||s_i| ≤ ‖x‖ ‖s_j‖`` (Cauchy–Schwarz; ``‖x‖`` from the norm plus its
      bound) and what underflows (``2^-149`` a product);
    - so ``U = P x − P x̄`` moves by at most ``e_U = ‖(ε_j)_{j<k}‖``, each ``D_j = ‖U − L_j‖² +
      r`` through ``U`` by ``2 (‖U‖ + max‖L‖) e_U + e_U²``, and ``r = ‖x‖² − 2 G_k + ‖x̄‖² −
      ‖U‖²`` by the norm's bound ``+ 2 ε_k + 2 ‖U‖ e_U + e_U²`` (the clips at 0 do not widen a
      difference), plus the float64 rounding of both, at most ``16 (d + k + 8) u'`` of the
      sizes summed;
    - ``a_j = e^{−γ D_j}`` is then within ``â_j (e^{1.0001 γ ΔD} − 1)`` plus a few ulps of
      ``exp`` (and the smallest normal double, for features that underflow).

    Where ``P``'s rows are coordinates (``projection.coordinates``) ``P x`` is the rows' own
    values, exact (``ε_j = 0`` for ``j < k``), and only ``x · x̄`` is a float32 product.

    Rows without a finite bound (norms beyond float32's range) get ``inf``."""
    m, d = X.shape
    S = projection.stacked
    k = S.shape[1] - 1
    axes = projection.coordinates
    # Where P's rows are coordinates, G's first k columns are the rows' own values (exact, taken
    # from X below): only x · x̄ is a product.
    S32 = np.asarray(S if axes is None else S[:, k:], dtype=np.float32)
    c = SINGLE_CHUNK
    q, rest = divmod(d, c)
    chunks = S32[: q * c].reshape(q, c, S32.shape[1])
    G = np.empty((m, k + 1))
    multiplied = G if axes is None else G[:, k:]
    # A tile of rows converted and multiplied at a time (in cache for the tile's chunks).
    T = tile_rows(d, 4)
    for lo in range(0, m, T):
        tile = np.asarray(X[lo : lo + T], dtype=np.float32)
        r = tile.shape[0]
        parts = np.matmul(tile[:, : q * c].reshape(r, q, c).transpose(1, 0, 2), chunks)
        np.sum(parts, axis=0, dtype=np.float64, out=multiplied[lo : lo + r])
        if rest:
            multiplied[lo : lo + r] += tile[:, q * c :] @ S32[q * c :]
    if axes is not None:
        G[:, :k] = X[:, axes]
    if projection.corrected:
        norms2, norm_error = single_row_norms(X) if norms is None else norms
    else:
        # Only sizes the bound (‖x‖ in Cauchy–Schwarz): summed in float64, off by at most
        # (d + 1) u64 of itself, far inside this allowance.
        norms2 = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        norm_error = 1e-8 * norms2
    # The bound (docstring); rows not in float32 are rounded to it first (one more u32).
    chunk_error = c * U32 / (1.0 - c * U32)
    g = 1.01 * ((1 if X.dtype == np.float32 else 2) * U32 + chunk_error + (q + 1) * U64)
    return bounded_features(projection, G, norms2, norm_error, g, gamma)


def bounded_features(projection, G, norms2, norm_error, g: float, gamma: float):
    """The features ``a(x)`` from products ``G = X [Pᵀ | x̄]`` each within ``g ‖x‖ ‖s_j‖ + 1.01 d
    2^-149`` of the exact ones (float32 products: :func:`single_features`) and norms ``‖x‖²``
    within ``norm_error``, and per row a bound on ``max_j |â_j(x) − a_j(x)|`` (the steps of
    :func:`single_features`' docstring after the products')."""
    d = projection.stacked.shape[0]
    S = projection.stacked
    k = S.shape[1] - 1
    axes = projection.coordinates
    a = projection.features_of(G, norms2 if projection.corrected else None, gamma)
    x_bound2 = norms2 + norm_error
    x_norm = np.sqrt(x_bound2)
    col = np.sqrt(np.einsum("ij,ij->j", S, S))
    # Each product may also lose what underflows: at most 2^-149 per float32 product. The
    # products' errors e_j ≤ g ‖x‖ ‖s_j‖ + under bound P x's by ‖e‖ ≤ g ‖x‖ ‖(‖s_j‖)_j‖ +
    # √k under (the triangle inequality; none on coordinates: the rows' own values).
    under = 1.01 * d * 2.0**-149
    e_mean = g * x_norm * col[k] + under  # x · x̄'s
    if axes is not None:
        e_U = np.zeros_like(x_norm)
    else:
        e_U = g * float(np.sqrt(np.sum(col[:k] ** 2))) * x_norm + np.sqrt(k) * under
    U = G[:, :k] - projection.projected_mean
    u_norm = np.sqrt(np.einsum("ij,ij->i", U, U))
    landmarks = projection.landmarks
    l_max = float(np.sqrt(np.einsum("ij,ij->i", landmarks, landmarks).max(initial=0.0)))
    dD = (2.0 * (u_norm + l_max) + e_U) * e_U
    size = (u_norm + l_max) ** 2
    if projection.corrected:
        dD += norm_error + 2.0 * e_mean + (2.0 * u_norm + e_U) * e_U
        size += x_bound2 + 2.0 * np.abs(G[:, k]) + projection.mean_norm + u_norm**2
    dD += 16 * (d + k + 8) * U64 * size
    a_max = a.max(axis=1, initial=0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        # (+ the smallest normal double, times the move: features that underflow to 0.)
        err = (a_max + 2.0**-1021) * (np.expm1(1.0001 * gamma * dD) + 8 * U64) + 2.0**-1021
    err[~(np.isfinite(err) & np.isfinite(dD))] = np.inf
    return a, err


def single_source_features(walk, X, inner) -> tuple[np.ndarray, np.ndarray]:
    """Features of the rows the float32 source ``inner`` holds (:func:`single_features`, with
    the ``‖x‖²`` that source computed), and each row's bound on their error. Rows whose bound
    is above :data:`MAX_FEATURE_ERROR` get their features in double precision (bound 0)."""
    X = np.asarray(X)
    features, error = single_features(
        walk.sketch.projection, X, walk.sketch.gamma, norms=inner.row_norms
    )
    loose = np.flatnonzero(~(error <= MAX_FEATURE_ERROR))
    if loose.size:
        features[loose] = sketch_features(walk, X[loose])
        error[loose] = 0.0
    return features, error


def _term_ns(d: int) -> float:
    """A full evaluation's term over ``d`` features, ns (float32 products, as ``dense_costs``
    prices them: :func:`attentive.evaluator.sources.rbf.dense_term_ns`)."""
    from attentive.evaluator.sources.rbf import dense_term_ns

    return dense_term_ns(d, True)


#: What a row's features cost whatever their size, ns: the correction ``r(x)``, the clip, the
#: features' transposed copy and the start ``a(x) · β``, and each tile's calls shared by its
#: rows. Without it, features of rows behind a PCA of 30–50 components (k = 4–8, m = 16,
#: coordinates) measured 95–103 ns a row against 46–59 priced, and of MNIST pixels 586–603
#: against 509 (one thread, medians of 15, 2026-11-30): a pipeline's small model (135 terms
#: over 30 columns) walked at 1.1–1.4 times its full evaluation.
FEATURE_ROW_NS = 45.0


#: A sparse row's sketch features (:meth:`attentive.sketch.NystromSketch.features` over its
#: stored values), ns: ~75, and a stored value ~4.7 and 0.1 a direction (its products, its norm,
#: the conversions), and the landmarks' distances and exponentials as for dense rows. Fitted to
#: rows of 16-313 stored values over 784 columns at (k, m) = (2, 8) and (16, 64), and MNIST 2 vs 5
#: as CSR rows (162 values) at five sizes, 887-1,476 ns (one thread, medians of 7, 2026-11-30);
#: priced as dense rows they were 422-1,114.
SPARSE_FEATURE_ROW_NS = 75.0
SPARSE_FEATURE_VALUE_NS = 4.7


def _sparse_features_ns(sketch, values: float) -> float:
    """A sparse row's sketch features, ns, for a row of ``values`` stored values."""
    k, m = sketch.k, sketch.m
    value_ns = SPARSE_FEATURE_VALUE_NS + 0.1 * (k + 1)
    return SPARSE_FEATURE_ROW_NS + value_ns * values + 0.1 * m * k + 2.0 * m


def _features_ns(sketch, single: bool = False) -> float:
    """A row's sketch features, ns: reading its d columns and the projection over them (k + 1
    products of d multiply-adds: ``P x`` and ``x · x̄``), the m distances in k dimensions and m
    exponentials, and :data:`FEATURE_ROW_NS`. ``single``: the projection in float32 by chunks
    (:func:`single_features`), priced as the double-precision one except on coordinates. Where ``P``'s rows are
    coordinates the product is ``x · x̄`` alone, and the k values are copied (~1 ns each)."""
    d, k, m = sketch.n_features, sketch.k, sketch.m
    if sketch.on_coordinates:
        projection = (SINGLE_COORDINATE_NS if single else COORDINATE_NS) * d + 1.0 * k
    else:  # (float32 features by chunks are priced as the double-precision ones: above)
        projection = FEATURE_READ_NS * d + DOUBLE_MADD_NS * (k + 1) * d
    return projection + 0.1 * m * k + 2.0 * m + FEATURE_ROW_NS


def _walked_ns(sketch) -> float:
    """What a walked term adds after a sketch, ns: its m-dot product, the copy of its magnitude
    and the subtraction (measured: ~25 % of a term over MNIST's 700 columns at m = 32)."""
    return 0.05 * sketch.m + 1.5


def sketch_cost_model(n_terms: int, single: bool = False):
    """The evaluator's own costs of a sketch, for :func:`attentive.sketch.choose_sketch`:
    ``sketch -> (a row's features in units of a full evaluation, a walked term's cost in plain
    walk terms)``, measured as the other costs of ``sources/rbf.py`` (docs/speed.md).
    ``single``: rows a walk takes from the float32 source, whose features come from float32
    products (:func:`single_features`)."""

    def cost(sketch):
        term_ns = _term_ns(sketch.n_features)
        features = _features_ns(sketch, single) / (n_terms * term_ns)
        return features, 1.0 + _walked_ns(sketch) / term_ns

    return cost


class SketchedSource(TermSource):
    """A sketched walk's start and residual terms over ``inner``, the exact source of the plain
    walk's terms on the same rows (module docstring). Not routed itself: the evaluator wraps
    the source the plain walk's rows are routed to."""

    kind = "sketched"
    magnitudes = True  # |w| (h − h̃), the weights' signs applied in summing

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return is_sketched(walk)

    def __init__(self, inner: TermSource, walk, plan, X, features=None):
        super().__init__(walk, plan, X)
        self.inner = inner
        self.arrays_ = sketch_arrays(walk, plan)
        # Over float32 products under a band (the certified float32 source) the features come
        # from float32 products too, each row's bound joining its band (row_allowance);
        # elsewhere, and where given (a triage's: attentive.evaluator.triage), they are the
        # reference's to double rounding.
        single = features is None and inner.kind == "rbf-single" and not sp.issparse(X)
        if features is not None:
            errors = np.zeros(np.shape(X)[0])
        elif single:
            features, errors = single_source_features(walk, X, inner)
        else:
            features, errors = sketch_features(walk, X), np.zeros(np.shape(X)[0])
        # Each row's bound on its features' error (0 where they are the reference's), and the
        # largest of them.
        self.feature_errors = errors
        self.feature_error = float(errors.max(initial=0.0))
        self.start_values = features @ self.arrays_.beta - self.arrays_.mean_start
        # Held one feature a row (m, rows): a block's sketched terms come out as the block's
        # (positions, rows), and are subtracted without a transposed pass.
        self.features_t = np.ascontiguousarray(features.T)
        self.certified = inner.certified
        self._sketched = None
        term_ns = self.term_ns = inner.term_ns
        self.prep_ns = inner.prep_ns
        self.held_ns = inner.held_ns
        self.full_term_ns = inner.full_term_ns
        self.term_cost = inner.term_cost + _walked_ns(walk.sketch) / term_ns
        self.mass_cost = inner.mass_cost
        self.row_cost = inner.row_cost
        self.max_block = inner.max_block
        if sp.issparse(X):  # (features over the stored values: sketch_features)
            values = sparse_row_values(walk.walk, plan)
            self.start_cost = _sparse_features_ns(walk.sketch, values) / term_ns
        else:
            self.start_cost = _features_ns(walk.sketch, single) / term_ns

    @property
    def n_rows(self) -> int:
        return self.features_t.shape[1]

    def start(self):
        return self.start_values

    def keep(self, idx):
        self.inner.keep(idx)
        self.features_t = self.features_t[:, idx]
        self.start_values = self.start_values[idx]
        self.feature_errors = self.feature_errors[idx]

    def block(self, start, stop, out):
        """``|w| (h − h̃)``: the exact magnitudes less ``a(x) · (|w| b)``, the signs applied in
        summing (so ``w (h − h̃)``)."""
        self.inner.block(start, stop, out)
        if not self.inner.magnitudes:  # |w| h from w h
            out *= self.plan.weight_signs[start:stop, None]
        sketched = scratch().get("sketched", out.shape)
        np.matmul(self.arrays_.factors[start:stop], self.features_t, out=sketched)
        self._sketched = sketched
        out -= sketched

    def masses(self, start, stop, H, out=None):
        """``|w| h``: the block plus its sketched part back (a pass only when asked for)."""
        return np.add(H, self._sketched, out=out)

    def relative_error(self):
        return self.inner.relative_error()

    def band_split(self):
        return self.inner.band_split()

    def allowance(self, thr, final):
        """The inner source's, plus the rounding of the sketched parts: the features and their
        products with the blocks' ``w b`` in double precision, at most ``8 (m + d + 8) u64`` of
        ``max ‖a(x)‖_∞ Σ_{k≤t} |w| ‖b‖₁ + |F̃(x)|`` at position ``t``. (Features from float32
        products add their own bound, row by row: :meth:`row_allowance`.)"""
        own = self.inner.allowance(thr, final)
        a_max = float(np.abs(self.features_t).max(initial=0.0))
        start_max = float(np.abs(self.start_values).max(initial=0.0))
        m, d = self.walk.sketch.m, self.walk.sketch.n_features
        return own + 8 * (m + d + 8) * U64 * (a_max * self.arrays_.size + start_max)

    def row_allowance(self):
        """Where the features come from float32 products: a row's features off by at most its
        bound ``ε(x)`` move ``U^ρ_t`` by at most ``ε(x) ‖β − Σ_{k≤t} w b‖₁`` — ``(1.01 ε(x) per
        row, ‖β − Σ_{k≤t} w b‖₁ per position)``; None where they are the reference's."""
        if not self.feature_error:
            return None
        return 1.01 * self.feature_errors, self.arrays_.ahead

    def exact_source(self, X):
        return SketchedSource(self.inner.exact_source(X), self.walk, self.plan, X)

    def exact_totals(self, X, budget):
        """``U^ρ_B`` in double precision: the plain walk's ``U_B`` moved from its centring to
        this walk's (``U^ρ_n = U_n − C_n + C^ρ_n``; only ``B = n`` is asked for)."""
        base_plan = self.inner.plan
        U = self.inner.exact_totals(X, budget)
        return U - base_plan.centring_sums[budget - 1] + self.plan.centring_sums[budget - 1]
