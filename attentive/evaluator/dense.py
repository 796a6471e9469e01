"""The walk over blocks of positions for dense term sources (kernel models, dense linear models),
the one-pass prefix sums of full and budgeted evaluation, and the one-go walk of tiny problems.

Per block only the walks still active are computed: term values (for an RBF kernel one BLAS
product and one in-place ``exp``), running sums (one vector operation per position over all held
walks), one comparison per side and first crossings. A walk that crosses is marked done (its sum
becomes NaN, which no comparison crosses); the rows still walking are gathered into a compact copy
only when that costs less than carrying the finished ones through the next block.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.errors import NonFiniteInput
from attentive.evaluator.plan import (
    GRID_LIMIT,
    MAX_SURVIVAL_BLOCK,
    WIDE_SURVIVAL_BLOCK,
    BlockSchedule,
    Thresholds,
    WalkPlan,
    expected_remaining,
)
from attentive.evaluator.sparse import (
    sparse_kernel_block,
    sparse_kernel_rows,
    sparse_kernel_sums,
    sparse_kernel_walks,
    sparse_transposed_svs,
)
from attentive.evaluator.threads import PARALLEL_MIN_ELEMENTS, run_tasks, split_rows
from attentive.terms import check_width, checked_rows, dot_kernel, refuse_non_finite
from attentive.walk import Walk

__all__ = [
    "ColumnTerms",
    "DotKernelTerms",
    "NonFiniteInput",
    "RBFTerms",
    "SparseKernelTerms",
    "Stops",
    "Terms",
    "as_rows",
    "check_finite_rows",
    "prefix_sums",
    "release_scratch",
    "restricted_rows",
    "source_row_cost",
    "survival_max_block",
    "term_source",
    "walk_rows",
    "walk_small",
]

FULL_TILE_ELEMENTS = 2**18  # chunk × terms of the one-pass (full / budget) evaluation
MIN_CHUNK = 64
AUGMENT_MAX_FEATURES = 64  # the double RBF walk holds an augmented copy up to this many features
_TRIANGULAR_MAX = 128  # running sums as a triangular product up to this many examples / terms


def check_finite_rows(norms2: np.ndarray, X: np.ndarray) -> None:
    """Raise :class:`NonFiniteInput` when a row of ``X`` holds a NaN or an infinite value, from
    the rows' squared norms ``norms2`` (which the RBF paths compute anyway).

    A finite ``|x|²`` (or ``|x − c|²`` with a finite ``c``) proves its row finite: NaN and ±inf
    propagate into a sum of squares. Only rows whose norm is not finite — non-finite values, or
    finite ones whose squares overflow — are looked at value by value, so finite rows cost one
    pass over ``m`` norms."""
    if np.isfinite(norms2).all():
        return
    if not np.isfinite(X[~np.isfinite(norms2)]).all():
        raise NonFiniteInput("Input X contains NaN or infinity.")


class Terms:
    """Weighted term values of the rows a walk still holds, terms along rows of a block.

    ``block`` returns ``|w_{π(k)}| h_{π(k)}(x)`` (non-negative) when ``magnitudes`` is True, the
    sign being applied while summing, else ``w_{π(k)} h_{π(k)}(x)``. ``keep`` drops rows (their
    indices among the rows held); ``row_cost`` is what holding a row through one more block costs
    beyond its terms (gathering it, reading it in the product), in units of one term.
    """

    magnitudes = False
    row_cost = 4.0

    def restrict_pays(self, remaining: float) -> bool:
        """Whether a compacting copy of the rows held pays now by itself (it does when the copy
        makes later blocks cheaper), for walks expected to go on ``remaining`` more positions."""
        return False

    def __init__(self, walk: Walk, plan: WalkPlan, X):
        self.walk = walk
        self.plan = plan
        self.X = X

    def keep(self, idx: np.ndarray) -> None:
        self.X = self.X[idx]

    def block(self, start: int, stop: int, out: np.ndarray) -> None:
        """Write the (stop − start, rows held) block into ``out``."""
        out[:] = self.walk.terms.term_values(self.X, self.plan.order[start:stop]).T
        out *= self.plan.ordered_weights[start:stop, None]


def rbf_row_cost(d: int) -> float:
    """Gathering a row of ``d`` features against one RBF term (a product of length ``d``, an
    ``exp``, a running sum): about 16 terms for MNIST's 784 features, 6 for 20 (measured)."""
    return 2.0 + 16.0 * d / (d + 48.0)


class _OneCopy:
    """Rows of many features held as given until one copy of them, which keeps only the
    columns where some support vector is non-zero (``plan.sv_columns``): on the plan's integer
    grid in float32 when the support vectors and the rows lie on it (exact products,
    :func:`grid_rows`), else in float64 (:func:`restricted_rows`). The copy is made at the
    first compaction, or before a block when :meth:`restrict_pays`. Shared by
    :class:`RBFTerms` and :class:`DotKernelTerms`, which set ``mode`` and ``row_cost``
    (:func:`source_row_cost`)."""

    def _plan_copy(self, plan: WalkPlan, X: np.ndarray, d: int) -> None:
        """Whether the rows will go onto the grid, and what the copy gains and costs. Leaves
        ``mode`` "raw" when a copy gains something, else sets it to "double" (the rows as
        given, every column a product column)."""
        k = d if plan.sv_columns is None else plan.sv_columns.size
        # In units of one term over all columns: what each later position saves per row, and
        # what the copy of a row costs (measured on MNIST with RBF terms: a gather ≈ 0.9 µs,
        # the grid conversion and its check ≈ 1.4 µs, a term ≈ 36 ns over 784 columns in
        # float64).
        self.grid = plan.sv_grid_scale is not None and exact_single_products()
        self.grid = self.grid and len(X) > 0 and row_on_grid(plan, X[0])
        if self.grid:
            self.restrict_gain = 1.0 - 0.4 * (k + 8.0) / (d + 8.0)
            self.restrict_cost = 2.5 * rbf_row_cost(d)
        elif k < d:
            self.restrict_gain = 1.0 - (k + 8.0) / (d + 8.0)
            self.restrict_cost = 1.5 * rbf_row_cost(d)
        else:
            self.mode = "double"

    def restrict_pays(self, remaining: float) -> bool:
        """Whether copying the rows held (restricted, on the grid if they are) pays now, for
        walks expected to go on for ``remaining`` more positions."""
        return self.mode == "raw" and remaining * self.restrict_gain >= self.restrict_cost

    def _grid_product(self, start: int, stop: int, out: np.ndarray, scale: float) -> None:
        """``out = scale · (k · l)`` for the block's support vectors on the grid: the float32
        product of integers is exact, so this is one rounding from ``scale / s² · (x · y)``."""
        single = scratch().get("single", out.shape, np.float32)
        np.matmul(self.plan.sv_grid32[start:stop], self.X.T, out=single)  # exact integers
        np.multiply(single, scale, out=out, dtype=np.float64)

    def _copy(self, idx: np.ndarray, norms: bool):
        """The copy of rows ``idx`` of the rows held as given: (rows, their ``|x|²`` over every
        column or None, the mode it puts the walk in). Rows on the grid always come with their
        norms (and are finite); restricted float64 rows with them when ``norms``. A row
        non-finite in its norm is refused (:class:`NonFiniteInput`)."""
        grid = grid_rows(self.plan, self.X, idx) if self.grid else None
        if grid is not None:
            return grid[0], grid[1], "grid"
        rows, norms2 = restricted_rows(self.plan, self.X, idx, norms)
        if norms2 is not None and not np.isfinite(norms2).all():
            check_finite_rows(norms2, self.X[idx])
        return rows, norms2, "double"


class RBFTerms(_OneCopy, Terms):
    """Dense RBF kernel in double precision.

    With few features the rows are held as one centred augmented copy
    (``x̃ = [2γ(x − c), 1, −γ|x − c|²]``, so ``exp(x̃ · ỹ) = |w| K(x, y)``): one product and one
    ``exp`` per block, the copy costing little. With many (MNIST's 784) the rows are first read
    as given: ``|w| K(x, y) = exp(x · 2γy + (−γ|y|² + log|w|) − γ|x|²)``, one product and three
    passes. The first copy of the rows (a compaction, or :meth:`restrict_pays` when the walks
    are expected to go on long enough) keeps only the columns where some support vector is
    non-zero (``x · y`` needs no others; ``|x|²`` was taken over all of them), and:

    * when the support vectors and these rows lie on a grid (every value ``k / s`` with integer
      ``k``, as 8-bit pixels divided by 255 do: :func:`attentive.evaluator.plan.grid_scale`),
      holds the integers ``k = s x`` in float32. A float32 product of integers whose every
      partial sum stays below 2^24 is **exact** in any summation order (checked per row by
      Cauchy–Schwarz, ``|k| · max|l| < 2^24``), so ``x · 2γy = (k · l) 2γ / s²`` costs a
      float32 product (about 2.5× faster than a float64 one here) and one rounding: the terms
      are those of the double-precision walk up to double rounding;
    * otherwise holds the restricted rows in float64.
    """

    magnitudes = True

    def __init__(self, walk, plan, X):
        X = np.asarray(X, dtype=np.float64)
        check_width(X, plan.sv_scaled.shape[1])  # a copy's np.take would clip a wrong one
        d = X.shape[1]
        self.mode = "augmented" if d <= AUGMENT_MAX_FEATURES else "raw"
        if self.mode == "augmented":
            X = augmented_rows(plan, X)[0]
        self.row = None  # −γ|x|² of the rows held, when first needed (the grid copy computes it)
        super().__init__(walk, plan, X)
        self.row_cost = rbf_row_cost(d)
        if self.mode == "raw":
            self._plan_copy(plan, X, d)

    def _row(self) -> np.ndarray:
        if self.row is None:  # raw mode: self.X holds the rows as given
            norms2 = np.einsum("ij,ij->i", self.X, self.X)
            check_finite_rows(norms2, self.X)
            self.row = -self.plan.rbf_gamma * norms2
        return self.row

    def keep(self, idx):
        if self.mode == "augmented":
            self.X = self.X.take(idx, axis=0)
            return
        if self.mode != "raw":
            self.row = self.row[idx]
            self.X = self.X.take(idx, axis=0)
            return
        rows, norms2, self.mode = self._copy(idx, self.row is None)
        self.row = self.row[idx] if norms2 is None else norms2 * -self.plan.rbf_gamma
        self.X = rows

    def block(self, start, stop, out):
        plan = self.plan
        if self.mode == "augmented":
            np.matmul(plan.sv_augmented[start:stop], self.X.T, out=out)
            np.exp(out, out=out)
            return
        if self.mode == "grid":
            self._grid_product(start, stop, out, 2.0 * plan.rbf_gamma / plan.sv_grid_scale**2)
        else:
            sv = plan.sv_scaled if self.mode == "raw" else plan.sv_scaled_cols
            np.matmul(sv[start:stop], self.X.T, out=out)
        out += plan.sv_offset[start:stop, None]
        out += self._row()
        np.exp(out, out=out)


_GRID_TILE = 256  # rows converted at a time (kept in cache between the passes)
# Slack on |k| ≤ s |x| for the rounding of s x and of the computed |x|² (≤ d u, d < 10^9).
_NORM_SLACK = 1.0 + 1e-6


def row_on_grid(plan: WalkPlan, x: np.ndarray) -> bool:
    """Whether one row lies on the plan's grid on its columns. Input off the grid is most often
    off it in every row (float32 pixels / 255, scaled features), so one row tells before a tile
    of 256 is converted for nothing, or a walk plans its copies for products it will not get."""
    x = x if plan.sv_columns is None else x[plan.sv_columns]
    scaled = x * plan.sv_grid_scale
    return bool(np.array_equal(np.rint(scaled), scaled))


def grid_rows(plan: WalkPlan, X: np.ndarray, idx: np.ndarray):
    """Rows ``X[idx]`` on the plan's columns as integers ``k = s x`` in float32, with their
    ``|x|²`` (over all columns, the norms :meth:`RBFTerms._row` scales by −γ); None when one is
    not on the grid on these columns (``s x`` not an integer exactly) or could make a product's
    partial sums reach 2^24 (``s |x| · max|l| ≥ 2^24``, by Cauchy–Schwarz, as ``|k| ≤ s |x|``).

    Per tile of rows: ``|x|²`` (the one pass over all columns, the tile then in cache), the
    plan's columns taken in one ``np.take``, then scaled, rounded, checked and converted to
    float32 over those columns only. Rows it accepts are finite (NaN fails the check, ±inf or
    NaN in any column the bound), as :func:`check_finite_rows` would find.

    One ``np.take`` per tile rather than one slice copy per column run (26 on MNIST): as fast
    on one thread, and it keeps its speed when two threads convert rows at once, which the
    run copies do not (measured on MNIST tiles: 1.95× the throughput of one thread against
    1.1×). Rows are gathered with ``mode="clip"`` (the indices are valid): with ``out=``,
    numpy's default mode writes through a temporary copy, 2.5× slower here."""
    s = plan.sv_grid_scale
    cols = plan.sv_columns
    m, d = idx.size, X.shape[1]
    if m and not row_on_grid(plan, X[idx[0]]):
        return None
    k = d if cols is None else cols.size
    out = np.empty((m, k), dtype=np.float32)
    norms2 = np.empty(m)
    T = min(m, _GRID_TILE)
    scaled = np.empty((T, k)) if cols is None else None
    rounded = np.empty((T, k))
    differ = np.empty((T, k), dtype=bool)
    contiguous = m == X.shape[0]  # idx is every row, in order (from flatnonzero)
    raw = None if contiguous else np.empty((T, d))
    for lo in range(0, m, _GRID_TILE):
        hi = min(m, lo + _GRID_TILE)
        r = hi - lo
        if contiguous:
            tile = X[lo:hi]
        else:
            tile = np.take(X, idx[lo:hi], axis=0, out=raw[:r], mode="clip")
        np.einsum("ij,ij->i", tile, tile, out=norms2[lo:hi])
        if cols is None:
            t = np.multiply(tile, s, out=scaled[:r])
        else:
            t = np.take(tile, cols, axis=1)
            t *= s
        rint = np.rint(t, out=rounded[:r])
        if np.not_equal(t, rint, out=differ[:r]).any():
            return None
        # Integers below 2^24 (checked below): exact in float32.
        np.copyto(out[lo:hi], rint, casting="same_kind")
    # NaN or ±inf anywhere in a row makes its |x|² NaN or inf, and this test false.
    if not np.sqrt(norms2.max(initial=0.0)) * s * _NORM_SLACK * plan.sv_grid_norm < GRID_LIMIT:
        return None
    return out, norms2


def restricted_rows(plan: WalkPlan, X: np.ndarray, idx: np.ndarray, norms: bool):
    """Rows ``X[idx]`` on the plan's columns in float64, and with ``norms`` their ``|x|²`` over
    all columns (else None), tile by tile as :func:`grid_rows` converts them: each tile's rows
    gathered (not when ``idx`` is every row, in order), their norms taken while the tile is in
    cache, then its columns in one ``np.take``. Gathering whole rows first and then their
    columns copied the input once more (on MNIST off the grid, 6,940 rows: 10.2 ms)."""
    cols = plan.sv_columns
    m, d = idx.size, X.shape[1]
    k = d if cols is None else cols.size
    out = np.empty((m, k))
    norms2 = np.empty(m) if norms else None
    contiguous = m == X.shape[0]  # idx is every row, in order (from flatnonzero)
    if contiguous and cols is None:
        np.copyto(out, X)
        return out, None if norms2 is None else np.einsum("ij,ij->i", X, X, out=norms2)
    T = min(m, _GRID_TILE)
    raw = None if contiguous else np.empty((T, d))
    for lo in range(0, m, _GRID_TILE):
        hi = min(m, lo + _GRID_TILE)
        if contiguous:
            tile = X[lo:hi]
        else:
            tile = np.take(X, idx[lo:hi], axis=0, out=raw[: hi - lo], mode="clip")
        if norms2 is not None:
            np.einsum("ij,ij->i", tile, tile, out=norms2[lo:hi])
        if cols is None:
            np.copyto(out[lo:hi], tile)
        else:
            np.take(tile, cols, axis=1, out=out[lo:hi], mode="clip")
    return out, norms2


_EXACT_SINGLE_PRODUCTS: list[bool] = []


def exact_single_products() -> bool:
    """Whether this BLAS computes float32 products of integers with partial sums below 2^24
    exactly (IEEE float32 arithmetic in any order does; checked once on one product)."""
    if not _EXACT_SINGLE_PRODUCTS:
        rng = np.random.default_rng(0)
        A = rng.integers(0, 256, size=(72, 256)).astype(np.float64)
        B = rng.integers(0, 256, size=(256, 40)).astype(np.float64)
        B[:, 0] = 255.0  # 255² · 256 = 16,646,400: just below 2^24
        A[0] = 255.0
        exact = A @ B
        ok = bool(exact.max() < GRID_LIMIT) and np.array_equal(
            (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float64), exact
        )
        _EXACT_SINGLE_PRODUCTS.append(ok)
    return _EXACT_SINGLE_PRODUCTS[0]


class ColumnTerms(Terms):
    """Dense linear models: term ``k`` is feature ``π(k)``; columns put in walk order once."""

    row_cost = 2.0

    def __init__(self, walk, plan, X):
        super().__init__(walk, plan, np.asarray(X, dtype=np.float64)[:, plan.order])

    def block(self, start, stop, out):
        np.multiply(self.X[:, start:stop].T, self.plan.ordered_weights[start:stop, None], out)


class DotKernelTerms(_OneCopy, Terms):
    """Linear, polynomial and sigmoid kernels on dense rows: ``K(x, y) = k(x · y)`` is symmetric,
    so a block is one product of the block's support vectors (walk order, ``plan.sv_ordered``)
    with the rows held, written straight into the block (no gather of support vectors, no
    transposed copy), then ``k`` and the weights in place.

    Over more than :data:`AUGMENT_MAX_FEATURES` features the rows make one copy as an RBF
    walk's do (:class:`_OneCopy`): on the support vectors' columns only, and on their integer
    grid in float32 when the rows lie on it, ``x · y = (k · l) / s²`` with the product exact
    (MNIST's pixels / 255). Rows are refused if not finite (every column, as scikit-learn's
    kernels refuse them) before a block reads them as given; a copy onto the grid proves them
    finite, a float64 copy takes their norms."""

    def __init__(self, walk, plan, X):
        X = np.asarray(X, dtype=np.float64)
        d = plan.sv_ordered.shape[1]
        check_width(X, d)
        super().__init__(walk, plan, X)
        self.checked = False  # the rows held found finite
        self.mode = "raw" if d > AUGMENT_MAX_FEATURES else "given"
        self.row_cost = source_row_cost(DotKernelTerms, d)
        if self.mode == "raw":
            self._plan_copy(plan, X, d)

    def keep(self, idx):
        if self.mode == "raw":
            self.X, _, self.mode = self._copy(idx, not self.checked)
            self.checked = True
        else:
            self.X = self.X.take(idx, axis=0)

    def block(self, start, stop, out):
        plan = self.plan
        if not self.checked:
            refuse_non_finite(self.X)
            self.checked = True
        if self.mode == "grid":
            self._grid_product(start, stop, out, 1.0 / plan.sv_grid_scale**2)
        else:
            sv = plan.sv_ordered_cols if self.mode == "double" else plan.sv_ordered
            np.matmul(sv[start:stop], self.X.T, out=out)
        dot_kernel(out, self.walk.terms.kernel, self.walk.terms.kernel_params)
        out *= plan.ordered_weights[start:stop, None]


class SparseKernelTerms(Terms):
    """Kernel models with sparse support vectors on CSR rows: the rows held transposed, a block
    one sparse product written straight into it (:func:`attentive.evaluator.sparse.
    sparse_kernel_block`). RBF kernels give magnitudes, their weights' logarithms folded in.

    ``row_cost``: a block costs ~0.1 ms beyond its products (slicing the support vectors, the
    Python around the product and the kernel), ~30 terms per row of a 2,000-row chunk, and a
    row costs as much again to transpose at a compaction. Measured on synthetic-sparse (walks
    at f = 0.7-0.96): 1 and 4 are 1.1-1.4× slower than 16 to 128, which are alike."""

    row_cost = 32.0

    def __init__(self, walk, plan, X):
        X, self.XT, self.row = sparse_kernel_rows(plan, walk.terms, X)
        super().__init__(walk, plan, X)
        self.magnitudes = plan.sv_csr_offset is not None

    def keep(self, idx):
        super().keep(idx)
        self.XT = self.X.T.tocsr()
        if self.row is not None:
            self.row = self.row[idx]

    def block(self, start, stop, out):
        sparse_kernel_block(self.plan, self.walk.terms, self.XT, self.row, start, stop, out)


def _wide_products(source: type[Terms], d: int) -> bool:
    """Whether ``source``'s blocks are dense products over many features (RBF rows not held
    augmented, dot kernels copied onto the support vectors' columns)."""
    return source in (RBFTerms, DotKernelTerms) and d > AUGMENT_MAX_FEATURES


def source_row_cost(source: type[Terms], d: int) -> float:
    """``row_cost`` of ``source``'s walks over ``d`` features: for products over many features
    a row is what it costs an RBF walk (:func:`rbf_row_cost`; a dot kernel's term is the same
    product). For dot kernels over MNIST's 784 features, against the generic 4 terms: ``predict``
    3-10 % faster (polynomial and sigmoid models on and off the grid, in-process A/B)."""
    if source is RBFTerms or _wide_products(source, d):
        return rbf_row_cost(d)
    return source.row_cost


def survival_max_block(source: type[Terms], d: int) -> int:
    """The longest block a survival schedule may give ``source``'s walks over ``d`` features.

    A block's product reads every row held once, whatever the block's length: for ``M``
    positions a float64 product over MNIST's 512-532 columns cost ``1 + 15 / M`` times a tall
    product's time per term (float32 on the grid: ``1 + 8 / M``), so where few walks stop
    longer blocks pay. Dense RBF rows over more than :data:`AUGMENT_MAX_FEATURES` features
    and dot kernels on dense rows of as many may take :data:`WIDE_SURVIVAL_BLOCK` positions
    (measured in-process against 64, one thread, ``predict``: MNIST off the grid 4-9 % faster,
    on it 0-5 %; polynomial, sigmoid and RBF models on MNIST and on 100-300 dense features
    3-12 %; docs/speed.md). With fewer features a block's buffer of terms is what its cost is
    about, and blocks stay at :data:`MAX_SURVIVAL_BLOCK`, where it stays in cache (synthetic
    RBF, 20 features: longer blocks measured 1.5-1.9× slower)."""
    return WIDE_SURVIVAL_BLOCK if _wide_products(source, d) else MAX_SURVIVAL_BLOCK


def term_source(walk: Walk, plan: WalkPlan, Xp) -> type[Terms]:
    if sparse_kernel_walks(plan, Xp):
        return SparseKernelTerms
    if plan.sv_scaled is not None and not sp.issparse(Xp):
        return RBFTerms
    if plan.sv_ordered is not None and not sp.issparse(Xp):
        return DotKernelTerms
    if walk.terms.kind == "linear" and not sp.issparse(Xp):
        return ColumnTerms
    return Terms


def as_rows(Xp):
    """Prepared examples in a form whose rows can be sliced and fancy-indexed."""
    if sp.issparse(Xp):
        return Xp if Xp.format == "csr" else sp.csr_matrix(Xp)
    return Xp if isinstance(Xp, np.ndarray) else np.asarray(Xp)


def augmented_rows(plan: WalkPlan, X) -> tuple[np.ndarray, float]:
    """``x̃ = [2γ(x − c), 1, −γ|x − c|²]`` for rows ``X`` (so ``exp(x̃ · ỹ) = |w| K(x, y)`` with
    the plan's augmented support vectors) and the largest ``|x − c|``."""
    g = plan.rbf_gamma
    m, d = X.shape
    out = np.empty((m, d + 2))
    centred = out[:, :d]
    np.subtract(X, plan.rbf_centre, out=centred)
    norms2 = np.einsum("ij,ij->i", centred, centred)
    check_finite_rows(norms2, X)
    centred *= 2.0 * g
    out[:, d] = 1.0
    np.multiply(norms2, -g, out=out[:, d + 1])
    return out, float(np.sqrt(norms2.max(initial=0.0)))


def take_columns(plan: WalkPlan, X: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``X[:, plan.sv_columns]`` written into ``out`` (its first columns; any float dtype), by
    slices of the column runs (a fancy-indexed copy is several times slower)."""
    if plan.sv_columns is None:
        np.copyto(out[:, : X.shape[1]], X, casting="same_kind")
        return out
    for first, stop, at in plan.sv_column_runs:
        np.copyto(out[:, at : at + stop - first], X[:, first:stop], casting="same_kind")
    return out


def restricted_augmented_rows(plan: WalkPlan, X: np.ndarray, scratch=None) -> np.ndarray:
    """The augmented rows of :func:`augmented_rows` restricted to the plan's columns (those
    where some support vector is non-zero), to be multiplied with ``plan.sv_augmented_cols``:
    ``[2γ(x − c)_S, 1, −γ|x − c|²]``, the norm over all columns."""
    g = plan.rbf_gamma
    m, d = X.shape
    k = d if plan.sv_columns is None else plan.sv_columns.size
    if scratch is None or scratch.shape[0] < m:
        scratch = np.empty((m, d))
    centred = scratch[:m]
    np.subtract(X, plan.rbf_centre, out=centred)
    out = np.empty((m, k + 2))
    norms2 = np.einsum("ij,ij->i", centred, centred)
    check_finite_rows(norms2, X)
    np.multiply(norms2, -g, out=out[:, k + 1])
    take_columns(plan, centred, out)
    out[:, :k] *= 2.0 * g
    out[:, k] = 1.0
    return out


def prefix_sums(walk: Walk, plan: WalkPlan, Xp, budget: int, chunk_size, n_jobs) -> np.ndarray:
    """``U_B(x) = Σ_{k≤B} w_{π(k)} h_{π(k)}(x)`` for every example, in row chunks."""
    m, n = Xp.shape[0], walk.n_terms
    if walk.terms.kind == "linear":
        # A linear model's sum over the first B positions is one (sparse) product with the
        # weights of those features.
        weights = walk.terms.weights
        if budget < n:
            weights = np.zeros_like(weights)
            idx = plan.order[:budget]
            weights[idx] = walk.terms.weights[idx]
        return np.asarray(Xp @ weights, dtype=np.float64).ravel()
    out = np.empty(m)
    idx = plan.order[:budget]
    rbf = plan.sv_augmented is not None and not sp.issparse(Xp)
    # Support vectors on an integer grid (MNIST's pixels / 255): rows on it take the walk's exact
    # float32 product of integers (RBFTerms), about 1.75× faster than the float64 augmented
    # product on MNIST; a tile with a row off the grid falls back to the latter (grid_rows looks
    # at the tile's first row before converting any: float32 pixels / 255, off the grid but for
    # 0 and 1, cost no more than rows never tried on it).
    # Linear, polynomial and sigmoid kernels likewise (x · y = (k · l) / s²).
    grid = Xp.shape[1] > AUGMENT_MAX_FEATURES and plan.sv_grid_scale is not None
    grid = grid and not sp.issparse(Xp) and exact_single_products()
    sparse = sparse_kernel_walks(plan, Xp)
    YT = sparse_transposed_svs(plan, budget) if sparse else None  # once, for every tile
    # Tiles of 2^18 values (2 MB): MNIST's products run faster on taller tiles (512 rows 12%
    # faster than 103), and with few features fewer, larger tiles cost less Python per value
    # and share better between threads (synthetic RBF: 1.1× / 1.2-1.4× faster than 2^16 values
    # on one / two threads, sigmoid and linear kernels 1.3-1.8×).
    step = chunk_size or max(MIN_CHUNK, FULL_TILE_ELEMENTS // max(1, budget))
    if rbf or grid:  # dense rows against dense support vectors (np.take would clip a width)
        check_width(Xp, plan.sv_scaled.shape[1] if rbf else plan.sv_ordered.shape[1])

    def task(lo, hi):
        def go():
            X = Xp[lo:hi]
            on_grid = None
            if grid:
                X = np.asarray(X, dtype=np.float64)
                on_grid = grid_rows(plan, X, np.arange(hi - lo))
            if on_grid is not None and rbf:
                # |w| K = exp((k · l) 2γ/s² + (−γ|y|² + log|w|) − γ|x|²), k · l exact in float32.
                K, norms2 = on_grid
                H = np.multiply(
                    K @ plan.sv_grid32[:budget].T,
                    2.0 * plan.rbf_gamma / plan.sv_grid_scale**2,
                    dtype=np.float64,
                )
                H += plan.sv_offset[:budget]
                H -= plan.rbf_gamma * norms2[:, None]
                np.exp(H, out=H)
                np.matmul(H, plan.weight_signs[:budget], out=out[lo:hi])
            elif on_grid is not None:
                # x · y = (k · l) / s², k · l exact in float32.
                H = np.multiply(
                    on_grid[0] @ plan.sv_grid32[:budget].T,
                    1.0 / plan.sv_grid_scale**2,
                    dtype=np.float64,
                )
                dot_kernel(H, walk.terms.kernel, walk.terms.kernel_params)
                np.matmul(H, plan.ordered_weights[:budget], out=out[lo:hi])
            elif rbf:
                # Cache-sized tiles of centred augmented rows on the columns where some support
                # vector is non-zero: one product, one exp, one sum.
                H = restricted_augmented_rows(plan, np.asarray(X, dtype=np.float64))
                H = H @ plan.sv_augmented_cols[:budget].T
                np.exp(H, out=H)
                np.matmul(H, plan.weight_signs[:budget], out=out[lo:hi])
            elif sparse:
                out[lo:hi] = sparse_kernel_sums(plan, walk.terms, X, YT)
            elif plan.sv_ordered is not None and not sp.issparse(X):
                X = checked_rows(X, plan.sv_ordered.shape[1])
                if plan.sv_columns is not None:  # x · y needs only the support vectors' columns
                    X = np.take(X, plan.sv_columns, axis=1)
                H = X @ plan.sv_ordered_cols[:budget].T
                dot_kernel(H, walk.terms.kernel, walk.terms.kernel_params)
                np.matmul(H, plan.ordered_weights[:budget], out=out[lo:hi])
            else:
                out[lo:hi] = walk.terms.term_values(X, idx) @ plan.ordered_weights[:budget]

        return go

    # scikit-learn's sparse product holds the GIL: a second thread would only split the tiles.
    jobs = n_jobs if m * budget >= PARALLEL_MIN_ELEMENTS and not sparse else 1
    run_tasks([task(lo, hi) for lo, hi in split_rows(m, step, jobs)], jobs)
    return out


@dataclass
class Stops:
    """A chunk's outcome: rows that never stopped with their ``U_n``, and the stops."""

    rows: np.ndarray
    U: np.ndarray
    at: np.ndarray  # (k, 2): chunk row, stop position t (1-based)
    side: np.ndarray  # (k,): −1 lower, +1 upper
    value: np.ndarray  # (k,): U_t at the stop
    unsure: np.ndarray  # chunk rows whose crossing the error band left unsure (walked again)
    band: np.ndarray | None = None  # per-row error bound on U of the rows that never stopped


def _running_sums(H, U, signs, magnitudes):
    """``U + cumsum(±H)`` down the rows of ``H`` (block, m), summed in walk order (in place,
    except for a few examples)."""
    size, m = H.shape
    if m <= _TRIANGULAR_MAX and size <= _TRIANGULAR_MAX:
        # Few examples: per-position vector operations would be all call overhead.
        T = np.tril(np.ones((size, size)))
        if magnitudes:
            T *= signs
        out = T @ H
        out += U
        return out
    # One vector operation per position over all held walks: numpy's cumsum along either axis
    # of H costs several times more per element (measured).
    prev = U
    for i in range(size):
        (np.subtract if magnitudes and signs[i] < 0 else np.add)(prev, H[i], out=H[i])
        prev = H[i]
    return H


class _Buffers:
    """Grow-only scratch arrays, by name (fresh large arrays cost page faults on every block).

    One set per thread, kept between calls (:func:`scratch`): memory that numpy frees goes back
    to the system when it is large, so every call paid the first touch of its blocks again —
    on MNIST 3 vs 8 (6,940 rows, 336 RBF support vectors, one thread) ~3,000 page faults and
    ~6 ms of system time per ``predict`` of ~38 ms. An array above :data:`_SCRATCH_MAX_BYTES` is
    not kept. Nothing returned from an evaluation refers to these arrays."""

    def __init__(self):
        self.data: dict = {}

    def get(self, name: str, shape: tuple, dtype=np.float64) -> np.ndarray:
        size = shape[0] * shape[1]
        key = (name, np.dtype(dtype).str)
        buf = self.data.get(key)
        if buf is None or buf.size < size:
            buf = np.empty(size, dtype=dtype)
            if buf.nbytes <= _SCRATCH_MAX_BYTES:
                self.data[key] = buf
        return buf[:size].reshape(shape)


# A block is at most 128 positions × 8,192 rows (8 MB of float64 terms): kept; larger scratch
# (a caller's own chunk_size or block_size) is allocated per call.
_SCRATCH_MAX_BYTES = 16 * 2**20
_SCRATCH = threading.local()
_EVERY_SCRATCH: weakref.WeakSet = weakref.WeakSet()  # every thread's, for release_scratch
_EVERY_SCRATCH_LOCK = threading.Lock()


def scratch() -> _Buffers:
    """This thread's scratch arrays. Every thread that evaluates keeps one set (the caller's,
    and each of the evaluator's threads, :mod:`~attentive.evaluator.threads`): at most a few
    blocks' worth, ~25 MB per thread with 784 features, until :func:`release_scratch` or the
    thread's end."""
    bufs = getattr(_SCRATCH, "buffers", None)
    if bufs is None:
        bufs = _SCRATCH.buffers = _Buffers()
        with _EVERY_SCRATCH_LOCK:
            _EVERY_SCRATCH.add(bufs)
    return bufs


def release_scratch() -> None:
    """Drop the scratch arrays every thread keeps between evaluations (after a large batch, or
    before measuring an evaluation's memory). Safe at any time: an evaluation running in another
    thread keeps the arrays it holds, and allocates again what it asks for next."""
    with _EVERY_SCRATCH_LOCK:
        every = list(_EVERY_SCRATCH)
    for bufs in every:
        bufs.data.clear()


def walk_rows(
    source: Terms, m: int, schedule: BlockSchedule, thr: Thresholds, band=None, row_band=None
) -> Stops:
    """Walk ``m`` examples (``source``'s rows) block by block, dropping walks as they cross.

    ``thr.lower`` / ``thr.upper`` are thresholds on ``U_t`` for positions ``t < n``. With
    ``band`` (a bound on the error of the computed ``U_t``, per position) a walk stops only where
    its crossing is certain: beyond the threshold by more than the band, with every earlier
    position short of the threshold by more than the band. Walks that come within the band
    first are set aside in ``unsure`` for an exact walk. ``row_band = (scale, allowance)`` is
    such a bound per row instead: ``scale[row] · A + allowance[t]`` over a block ending at ``t``,
    where ``A`` is the row's running sum of term magnitudes to the end of the block (the source
    gives magnitudes).

    A walk that stops has its sum set to NaN (no comparison crosses it again) and stays among the
    rows held until gathering the others into a compact copy costs less than carrying it:
    ``(held − live) × next block ≥ row_cost × live`` (in units of one term).

    With ``thr.mass`` (a rule on a second running sum) the walk also keeps each row's running
    mass ``A_t = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)`` and compares ``U_t + κ_t A_t`` with the
    thresholds; a stop's ``value`` is that statistic. (No error band: such rules run in double
    precision.)
    """
    plan = source.plan
    n = int(schedule.edges[-1])
    lower, upper = thr.lower, thr.upper
    kappa = thr.mass
    if kappa is not None:
        if band is not None or row_band is not None:
            raise ValueError("a rule on the running mass is walked without an error band.")
        mass_sum = np.zeros(m)
    lower_test, upper_test = lower, upper
    if band is not None:
        lower_test = None if lower is None else lower + band
        upper_test = None if upper is None else upper - band
    if row_band is not None:
        scale, allowance = row_band
        A = np.zeros(m)
    held = np.arange(m)
    alive = np.ones(m, dtype=bool)
    live = m
    U = np.zeros(m)
    bufs = scratch()
    stops, sides, values, unsure = [], [], [], []
    remaining = expected_remaining(thr.stops, n, schedule.edges[:-1])
    for j, (start, stop) in enumerate(itertools.pairwise(schedule.edges.tolist())):
        size = stop - start
        if (
            live < held.size and (held.size - live) * size >= source.row_cost * live
        ) or source.restrict_pays(remaining[j]):
            keep = np.flatnonzero(alive)
            source.keep(keep)
            held, U = held[keep], U[keep]
            alive = np.ones(live, dtype=bool)
            if row_band is not None:
                scale, A = scale[keep], A[keep]
            if kappa is not None:
                mass_sum = mass_sum[keep]
        k = held.size
        H = bufs.get("terms", (size, k))
        source.block(start, stop, H)
        if row_band is not None:
            A += H.sum(axis=0)
            beta = scale * A
            beta += allowance[stop - 1]
        if kappa is not None:
            # |w| h: the block itself for a source of magnitudes, else the signed terms unsigned.
            M = bufs.get("mass", (size, k))
            if source.magnitudes:
                np.copyto(M, H)
            else:
                np.multiply(H, plan.weight_signs[start:stop, None], out=M)
            M = _running_sums(M, mass_sum, None, False)
            mass_sum = M[size - 1].copy()
        P = _running_sums(H, U, plan.weight_signs[start:stop], source.magnitudes)
        U = P[size - 1].copy()
        checked = min(stop, n - 1) - start
        if checked <= 0:
            break
        P = P[:checked]
        if kappa is not None:
            # The rule's statistic U_t + κ_t A_t (a NaN sum stays NaN: a stopped walk).
            V = np.multiply(M[:checked], kappa[start : start + checked, None], out=M[:checked])
            P = np.add(V, P, out=V)
        crossed = low = None
        if lower is not None:
            Q = P
            if row_band is not None:
                Q = np.subtract(P, beta, out=bufs.get("shifted", P.shape))
            low = np.less(
                Q, lower_test[start : start + checked, None], out=bufs.get("low", P.shape, bool)
            )
            crossed = low
        if upper is not None:
            Q = P
            if row_band is not None:
                Q = np.add(P, beta, out=bufs.get("shifted", P.shape))
            high = np.greater(
                Q, upper_test[start : start + checked, None], out=bufs.get("high", P.shape, bool)
            )
            crossed = high if crossed is None else np.logical_or(low, high, out=high)
        hit_cols = np.flatnonzero(crossed.any(axis=0))
        if hit_cols.size == 0:
            continue
        first = np.argmax(crossed[:, hit_cols], axis=0)
        value = P[first, hit_cols]
        side = np.ones(hit_cols.size, dtype=np.int8)
        low_first = low[first, hit_cols] if low is not None else None
        if band is None and row_band is None:
            if low_first is not None:
                side[low_first] = -1
            sure = slice(None)
        else:
            # Certain: beyond a threshold by more than the band; the lower side wins ties, so a
            # lower crossing that is only possible leaves the side unsure.
            t = start + first
            margin = band[t] if band is not None else beta[hit_cols]
            sure = np.zeros(hit_cols.size, dtype=bool)
            if lower is not None:
                np.less(value, lower[t] - margin, out=sure)
                side[sure] = -1
            if upper is not None:
                up = value > upper[t] + margin
                if low_first is not None:
                    up &= ~low_first
                sure |= up
            unsure.append(held[hit_cols[~sure]])
        sides.append(side[sure])
        values.append(value[sure])
        stops.append(np.column_stack([held[hit_cols[sure]], start + first[sure] + 1]))
        U[hit_cols] = np.nan
        alive[hit_cols] = False
        live -= hit_cols.size
        if live == 0:
            break
    at = np.concatenate(stops) if stops else np.zeros((0, 2), dtype=np.int64)
    side = np.concatenate(sides) if sides else np.zeros(0, dtype=np.int8)
    value = np.concatenate(values) if values else np.zeros(0)
    rest = np.concatenate(unsure) if unsure else np.zeros(0, dtype=np.int64)
    out = Stops(rows=held[alive], U=U[alive], at=at, side=side, value=value, unsure=rest)
    if row_band is not None:
        out.band = scale[alive] * A[alive] + allowance[-1]
    return out


# Walks of at most this many terms take their prefix sums from one product with a triangular
# matrix (m·n² multiply-adds at ~0.05 ns against cumsum's ~3.5 ns per element: even at n = 64).
SMALL_PREFIX_PRODUCT = 64


def _prefix_matrix(plan: WalkPlan, weights: np.ndarray, kind: str) -> np.ndarray:
    """``L[k, t] = weights[k]`` for ``k ≤ t``, else 0: ``H @ L`` is every prefix sum of the
    weighted terms (cached per plan)."""
    L = plan.prefix_matrices.get(kind)
    if L is None:
        n = weights.size
        L = plan.prefix_matrices[kind] = np.triu(np.ones((n, n))) * weights[:, None]
    return L


def walk_small(walk: Walk, plan: WalkPlan, Xp, thr: Thresholds):
    """A tiny problem in one go: every term of every example, then the first crossings."""
    n = plan.n_terms
    if plan.sv_scaled is not None and not sp.issparse(Xp):
        source = RBFTerms(walk, plan, Xp)
        H = np.empty((n, Xp.shape[0]))
        source.block(0, n, H)
        H, weights, kind = H.T, plan.weight_signs, "signs"
        mass_weights, mass_kind = np.ones(n), "ones"
    else:
        H = walk.terms.term_values(Xp, plan.order)
        weights, kind = plan.ordered_weights, "weights"
        mass_weights, mass_kind = np.abs(plan.ordered_weights), "magnitudes"
    V = None
    if thr.mass is not None:
        # The running mass A_t (H holds |w| h, or h), and the rule's statistic U_t + κ_t A_t.
        if n <= SMALL_PREFIX_PRODUCT:
            A = H @ _prefix_matrix(plan, mass_weights, mass_kind)
        else:
            A = np.cumsum(H * mass_weights, axis=1)
    if n <= SMALL_PREFIX_PRODUCT:
        # One small product gives every prefix sum, the weights (or signs) folded in: faster
        # than numpy's cumsum (~3.5 ns per element, not vectorised) for walks this short, and
        # equal to it to rounding (each sum of the same terms in another order).
        U = H @ _prefix_matrix(plan, weights, kind)
    else:
        H *= weights
        U = np.cumsum(H, axis=1)
    P = U[:, : n - 1]
    if thr.mass is not None:
        V = U.copy()
        V[:, : n - 1] += thr.mass * A[:, : n - 1]
        P = V[:, : n - 1]
    crossed = low = None
    if thr.lower is not None:
        low = crossed = P < thr.lower
    if thr.upper is not None:
        high = P > thr.upper
        crossed = high if crossed is None else np.logical_or(low, high, out=high)
    first = np.argmax(crossed, axis=1)
    rows = np.arange(P.shape[0])
    hit = crossed[rows, first]  # argmax finds a True if there is one
    at = np.where(hit, first + 1, n)
    side = hit.astype(np.int8)
    if low is not None:
        side[low[rows, first] & hit] = -1
    return at, side, U[:, n - 1], (U if V is None else V)[rows, at - 1]
