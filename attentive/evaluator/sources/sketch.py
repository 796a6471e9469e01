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

The features are computed as the reference computes them (:meth:`attentive.sketch.
NystromSketch.features`, in float64, a tile of rows at a time), so the sketched parts agree with
the reference to double rounding; a certified inner source's band covers its exact terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.precision import U64
from attentive.evaluator.scratch import scratch
from attentive.evaluator.sources.base import TermSource

__all__ = ["SketchArrays", "SketchedSource", "is_sketched", "sketch_cost_model"]


def is_sketched(walk) -> bool:
    """Whether ``walk`` is a sketched walk (it has a sketch and the plain walk under it)."""
    return getattr(walk, "sketch", None) is not None and getattr(walk, "walk", None) is not None


@dataclass(frozen=True)
class SketchArrays:
    """A sketched walk's arrays in walk order: ``|w_{π(k)}| b_{π(k)}`` (n, m), ``β`` and ``ā · β``,
    and per position the size of what a block's sketched terms add up to, for the rounding
    allowance: ``Σ_{k≤t} |w_{π(k)}| ‖b_{π(k)}‖₁``."""

    factors: np.ndarray
    beta: np.ndarray
    mean_start: float
    size: np.ndarray


def sketch_arrays(walk, plan) -> SketchArrays:
    def build():
        factors = np.abs(walk.ordered_weights)[:, None] * walk.ordered_factors
        factors = np.ascontiguousarray(factors)
        return SketchArrays(
            factors=factors,
            beta=np.asarray(walk.beta, dtype=np.float64),
            mean_start=float(walk.feature_mean @ walk.beta),
            size=np.cumsum(np.abs(factors).sum(axis=1)),
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
    for lo in range(0, m, FEATURE_TILE):
        tile = np.asarray(X[lo : lo + FEATURE_TILE], dtype=np.float64)
        hi = lo + tile.shape[0]
        np.matmul(tile, projection.stacked, out=G[lo:hi])
        if norms is not None:
            np.einsum("ij,ij->i", tile, tile, out=norms[lo:hi])
    return projection.features_of(G, norms, sketch.gamma)


def _term_ns(d: int) -> float:
    """A full evaluation's term over ``d`` features, ns (float32 products: ``dense_costs``)."""
    return 1.5 + 0.0085 * d


def _features_ns(sketch) -> float:
    """A row's sketch features, ns: its conversion to float64 and the projection over d columns
    (a narrow product: ~0.12 ns a multiply-add, measured on MNIST with k = 8), the m distances
    in k dimensions and m exponentials."""
    d, k, m = sketch.n_features, sketch.k, sketch.m
    return 0.12 * (k + 1) * d + 0.1 * m * k + 2.0 * m


def _walked_ns(sketch) -> float:
    """What a walked term adds after a sketch, ns: its m-dot product, the copy of its magnitude
    and the subtraction (measured: ~25 % of a term over MNIST's 700 columns at m = 32)."""
    return 0.05 * sketch.m + 1.5


def sketch_cost_model(n_terms: int):
    """The evaluator's own costs of a sketch, for :func:`attentive.sketch.choose_sketch`:
    ``sketch -> (a row's features in units of a full evaluation, a walked term's cost in plain
    walk terms)``, measured as the other costs of ``sources/rbf.py`` (docs/speed.md)."""

    def cost(sketch):
        term_ns = _term_ns(sketch.n_features)
        return _features_ns(sketch) / (n_terms * term_ns), 1.0 + _walked_ns(sketch) / term_ns

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

    def __init__(self, inner: TermSource, walk, plan, X):
        super().__init__(walk, plan, X)
        self.inner = inner
        self.arrays_ = sketch_arrays(walk, plan)
        features = sketch_features(walk, X)
        self.start_values = features @ self.arrays_.beta - self.arrays_.mean_start
        # Held one feature a row (m, rows): a block's sketched terms come out as the block's
        # (positions, rows), and are subtracted without a transposed pass.
        self.features_t = np.ascontiguousarray(features.T)
        self.certified = inner.certified
        self._sketched = None
        term_ns = self.term_ns = inner.term_ns
        self.prep_ns = inner.prep_ns
        self.full_term_ns = inner.full_term_ns
        self.term_cost = inner.term_cost + _walked_ns(walk.sketch) / term_ns
        self.mass_cost = inner.mass_cost
        self.row_cost = inner.row_cost
        self.max_block = inner.max_block
        self.start_cost = _features_ns(walk.sketch) / term_ns

    @property
    def n_rows(self) -> int:
        return self.features_t.shape[1]

    def start(self):
        return self.start_values

    def keep(self, idx):
        self.inner.keep(idx)
        self.features_t = self.features_t[:, idx]
        self.start_values = self.start_values[idx]

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

    def allowance(self, thr, final):
        """The inner source's, plus the rounding of the sketched parts: the features and their
        products with the blocks' ``w b`` in double precision, at most ``8 (m + d + 8) u64`` of
        ``max ‖a(x)‖_∞ Σ_{k≤t} |w| ‖b‖₁ + |F̃(x)|`` at position ``t``."""
        own = self.inner.allowance(thr, final)
        a_max = float(np.abs(self.features_t).max(initial=0.0))
        start_max = float(np.abs(self.start_values).max(initial=0.0))
        m, d = self.walk.sketch.m, self.walk.sketch.n_features
        return own + 8 * (m + d + 8) * U64 * (a_max * self.arrays_.size + start_max)

    def exact_source(self, X):
        return SketchedSource(self.inner.exact_source(X), self.walk, self.plan, X)

    def exact_totals(self, X, budget):
        """``U^ρ_B`` in double precision: the plain walk's ``U_B`` moved from its centring to
        this walk's (``U^ρ_n = U_n − C_n + C^ρ_n``; only ``B = n`` is asked for)."""
        base_plan = self.inner.plan
        U = self.inner.exact_totals(X, budget)
        return U - base_plan.centring_sums[budget - 1] + self.plan.centring_sums[budget - 1]
