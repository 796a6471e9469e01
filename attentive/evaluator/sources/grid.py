"""Dense kernels on or near an integer grid: float32 products of integers.

When the support vectors and the rows lie on a grid (every value ``k / s`` with integer ``k``, as
8-bit pixels / 255 do), the rows are held as the integers ``k`` on the support vectors' columns
in float32 (:func:`attentive.evaluator.rows.grid_rows`). A float32 product of integers whose
every partial sum stays below 2^24 is **exact** in any summation order (checked per row by
Cauchy–Schwarz, ``|k| · max|l| < 2^24``), so ``x · y = (k · l) / s²`` costs a float32 product
(about twice as fast as a float64 one) and one rounding.

Values stored in float32 (pixels / 255 as image pipelines keep them) are not on the grid but
within about 1.5e-5 grid units of it. Taken as their nearest integers, ``|s x · s y − k · l| ≤
e_x ‖l‖₁ + e_y ‖k‖₁ + c e_x e_y`` (``e``: a row's largest distance to the grid, ``c`` columns):
for an RBF kernel a certified relative error of about 1e-7 per term, two or three orders below
what float32 products of the values themselves can be certified to. Such a source is
``certified`` (the walk stops where the bound makes the crossing certain); exactly on the grid it
is exact. Rows off the grid make the router take the next source.
"""

from __future__ import annotations

import numpy as np

from attentive.evaluator.precision import U64, term_relative_error
from attentive.evaluator.rows import GridRows, block_product, grid_rows, row_on_grid
from attentive.evaluator.sources import GRID, register_source
from attentive.evaluator.sources.base import NotUsable, TermSource
from attentive.evaluator.sources.dot import (
    dot_arrays,
    finish_dot,
    is_dense_dot_kernel,
)
from attentive.evaluator.sources.rbf import (
    PREP_GRID,
    WIDE_FEATURES,
    RBFDoubleSource,
    dense_costs,
    is_dense_rbf,
    rbf_allowance,
    rbf_arrays,
)
from attentive.terms import check_width

__all__ = ["DotGridSource", "RBFGridSource", "grid_relative_error"]


def _near_grid(columns, X) -> bool:
    return (
        columns.grid_scale is not None
        and X.shape[1] > WIDE_FEATURES
        and X.shape[0] > 0
        and row_on_grid(columns, X[0])
    )


def _exactly_on_grid(columns, X) -> bool:
    """Whether the support vectors and the first row lie exactly on the grid (float64 values
    ``k / s``): products exact, no band. Float32 rows are held with a rounding allowance."""
    if columns.grid_scale is None or columns.grid_dev != 0:
        return False
    if X.dtype == np.float32 or X.shape[0] == 0:
        return False
    t = np.asarray(X[0], dtype=np.float64) * columns.grid_scale
    return bool(np.all(t == np.rint(t)))


def grid_relative_error(arrays, held: GridRows) -> np.ndarray:
    """Bound, per row, on the relative error of each RBF term ``|w| K(x, y)`` computed as
    ``exp((k · l) 2γ / s² + (−γ|y|² + log|w|) − γ|x|²)`` from the nearest integers ``k``, ``l``
    of ``s x``, ``s y`` (distances at most ``e_x`` = ``dev``, ``e_y``).

    The exponent's product is off from ``2γ x · y`` by at most ``2γ / s² (e_x ‖l‖₁ + e_y ‖k‖₁
    + c e_x e_y)`` (``‖k‖₁ ≤ √c (s|x| + √c e_x)``, ``c`` columns), and ``−γ|x|²`` by ``γ`` times
    the norm's own error (``norm_error``, :func:`attentive.evaluator.rows.grid_rows`); the rest
    of the exponent in
    double precision adds at most ``(d + 8) u64 (γ(|x| + |y|)² + |log|w||)``, and ``exp`` a few
    ulp. An exponent off by ``E ≤ 10⁻³`` puts the term off by at most ``1.001 E`` of itself
    (bounded by the computed magnitude: a factor ``1 / (1 − ρ)``, included)."""
    c = arrays.columns
    s = c.grid_scale
    cols = c.n_columns
    dev, norm_error = held.dev, held.norm_error
    x = np.sqrt(held.norms2)
    k1 = np.sqrt(cols) * (s * x + np.sqrt(cols) * dev)
    e = 2.0 * arrays.gamma / s**2 * (dev * c.grid_l1 + c.grid_dev * k1 + cols * dev * c.grid_dev)
    e += arrays.gamma * norm_error
    e += 1.01 * (c.width + 8) * U64 * (arrays.gamma * (x + arrays.sv_norm) ** 2 + arrays.log_w_max)
    return term_relative_error(e)  # infinite (no band) where e is too large for the bound


class _GridRows(TermSource):
    """Rows as integers on the support vectors' columns, in float32. The products of a walk's
    first blocks (its first ``ahead_positions`` positions) are taken as the rows are converted,
    a tile at a time while it is in cache: MNIST 8 against the rest's conversion and first two
    blocks (24 support vectors, 7,000 rows) read every row once instead of three times."""

    reads_ahead = True

    def _hold(self, walk, plan, X, columns, ahead_positions: int = 0) -> GridRows:
        check_width(X, columns.width)
        ahead = columns.grid32[:ahead_positions] if ahead_positions else None
        held = grid_rows(columns, np.asarray(X), ahead)
        if held is None:
            raise NotUsable("a row is off the support vectors' grid")
        super().__init__(walk, plan, columns.view(held.K))
        self.columns = columns
        self.ahead = held.products  # (rows held, ahead_positions) float32, or None
        dense_costs(self, columns.n_columns, single=True, prep=PREP_GRID)
        return held

    def keep(self, idx):
        self.X = self.X[idx]  # fancy indexing: contiguous out, fast on views too
        if self.ahead is not None:
            self.ahead = self.ahead[idx]

    def _products(self, start, stop, out, scale):
        """``out = scale · (k · l)`` for the block's support vectors: the float32 product of
        integers is exact, so this is one rounding from ``scale · (k · l)``. The product is
        taken rows by support vectors (:func:`block_product`), or was as the rows came in
        (``ahead``: the same exact values), and turned as it is converted."""
        if self.ahead is not None and stop <= self.ahead.shape[1]:
            single = self.ahead[:, start:stop]
        else:
            single = block_product(self.X, self.columns.grid32[start:stop])
        np.multiply(single.T, scale, out=out, dtype=np.float64)


@register_source(priority=GRID)
class RBFGridSource(_GridRows):
    """Dense RBF kernel on or near the integer grid: ``|w| K(x, y) = exp((k · l) 2γ / s² +
    (−γ|y|² + log|w|) − γ|x|²)``, certified where a row or a support vector is off the grid by
    a little (module docstring), exact where none is."""

    kind = "rbf-grid"
    magnitudes = True
    holds_wide_rows = True
    exact = RBFDoubleSource

    @classmethod
    def usable(cls, walk, plan, X, precision):
        if not is_dense_rbf(walk, X):
            return False
        columns = rbf_arrays(walk, plan).columns
        # Double precision promises decision values to about 1e-12: near the grid, the band's.
        if precision == "double" and not _exactly_on_grid(columns, X):
            return False
        return _near_grid(columns, X)

    @classmethod
    def alternatives(cls, X):
        # Float32 rows near the grid: the float32 source walks them without the conversion to
        # integers (its band, ~100x wider, leaves more walks to double precision); the pilot
        # prices both (on MNIST pixels the float32 walk measured 0.5-1.0 of the grid's time).
        return () if cls.serves_full(X) else ("rbf-single",)

    @classmethod
    def serves_full(cls, X):
        # Float32 rows near the grid carry a band here as they would with the float32 source,
        # which takes them without converting them to integers first: full evaluation in
        # 0.85-0.9 of the time on MNIST pairs (in-process A/B, 4,000 rows). Walks take either
        # (alternatives).
        dtype = getattr(X, "dtype", None)  # (no copy of rows that have one)
        return (np.asarray(X).dtype if dtype is None else dtype) != np.float32

    @classmethod
    def arrays(cls, walk, plan):
        return rbf_arrays(walk, plan)

    def __init__(self, walk, plan, X, ahead_positions: int = 0):
        a = self.a = rbf_arrays(walk, plan)
        held = self._hold(walk, plan, X, a.columns, ahead_positions)
        self.row = -a.gamma * held.norms2
        self.scale = 2.0 * a.gamma / a.columns.grid_scale**2
        self.certified = not held.exact or a.columns.grid_dev > 0
        self.rho = grid_relative_error(a, held) if self.certified else None

    def keep(self, idx):
        super().keep(idx)
        self.row = self.row[idx]
        if self.rho is not None:
            self.rho = self.rho[idx]

    def block(self, start, stop, out):
        self._products(start, stop, out, self.scale)
        out += self.a.sv_offset[start:stop, None]
        out += self.row
        np.exp(out, out=out)

    def relative_error(self):
        return self.rho

    def allowance(self, thr, final):
        return rbf_allowance(self, thr, final)


@register_source(priority=GRID)
class DotGridSource(_GridRows):
    """Linear, polynomial and sigmoid kernels exactly on the integer grid: ``w k((k · l) /
    s²)`` (rows or support vectors near the grid but not on it take the next source)."""

    kind = "dot-grid"

    @classmethod
    def usable(cls, walk, plan, X, precision):
        if not is_dense_dot_kernel(walk, X):
            return False
        columns = dot_arrays(walk, plan).columns
        return columns.grid_dev == 0 and _near_grid(columns, X)

    @classmethod
    def arrays(cls, walk, plan):
        return dot_arrays(walk, plan)

    def __init__(self, walk, plan, X, ahead_positions: int = 0):
        columns = dot_arrays(walk, plan).columns
        if not self._hold(walk, plan, X, columns, ahead_positions).exact:  # on the grid: finite
            raise NotUsable("a row is near the grid but not on it")
        self.scale = 1.0 / columns.grid_scale**2

    def block(self, start, stop, out):
        self._products(start, stop, out, self.scale)
        finish_dot(out, self.walk, self.plan.ordered_weights[start:stop])
