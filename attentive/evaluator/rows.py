"""Examples as the dense kernel sources hold them: the columns where some support vector is
non-zero, the integer grid of 8-bit images, and copies of rows made tile by tile.

``x · y`` needs only the columns where ``y`` is non-zero, while ``|x|²`` (an RBF kernel's) needs
all of them. The products take the smallest run of consecutive columns that holds every
support vector's non-zeros (an image's border is zero in every support vector): a view of the
rows, no copy. When the support vectors and the rows lie on or near a grid (every value ``k / s``
with integer ``k``, as pixels / 255 do), the rows are held as the integers ``k`` in float32: a
float32 product of integers whose every partial sum stays below 2^24 is exact in any summation
order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.errors import NonFiniteInput
from attentive.evaluator.precision import U32, U64
from attentive.evaluator.scratch import scratch

__all__ = [
    "GRID_LIMIT",
    "TILE_BYTES",
    "VECDOT_COLUMNS",
    "SupportColumns",
    "as_rows",
    "block_product",
    "check_finite_rows",
    "exact_single_products",
    "float64_tiles",
    "grid_rows",
    "grid_scale",
    "product_tile_rows",
    "restricted_rows",
    "row_norms",
    "single_row_norms",
    "squared_norms",
    "support_columns",
    "tile_rows",
]

U32_ROUNDING = 2.0**-23  # a generous bound on float32's relative rounding of one product
GRID_LIMIT = 2.0**24  # integers up to this are exact in float32, and so are sums of them
# Rows converted at a time are about TILE_BYTES (kept in a core's cache between the passes:
# float32 MNIST rows on a 2 MB L2, grid_rows took 6.2-6.5 ms for 6,730 rows in tiles of 128-256
# rows, 8.3 in tiles of 512, one thread; the float64 conversion of row_norms 2.4 against 3.8
# ms). 2^19 bytes: 167 float32 MNIST rows a tile, 83 float64 ones.
TILE_BYTES = 2**19


# A product of a tile of rows with a few columns (a sketch's projection) is fastest where its
# rows × columns × d stays within this: OpenBLAS on AVX-512 (its SkylakeX kernels) takes a
# product of at most 10^6 multiply-adds by its small-matrix kernel, 2-3 times faster a
# multiply-add than its packed one at these shapes. Float64 tiles of MNIST rows (784 columns),
# one thread, medians of 15 (2026-12-01): 9 columns 465 ns a row in tiles of 128 rows, 10
# columns 1,281 in tiles of 128 and 559 in tiles of 127; 17 columns 1,504 against 693 in tiles
# of 64; 33 columns 2,001 against 1,155 in tiles of 32. The Haswell kernels (AVX2) have no such
# path, and smaller tiles cost them more (7,000 rows, 17 columns: 14.8 ms in tiles of 75
# against 13.4 in tiles of 128; 33 columns 20.9 in tiles of 38 against 15.6): taken only where
# numpy's OpenBLAS runs one of SMALL_KERNELS.
SMALL_PRODUCT = 10**6
MIN_PRODUCT_TILE = 16
SMALL_KERNELS = frozenset({"skylakex", "cooperlake", "sapphirerapids"})


@functools.cache
def small_products() -> bool:
    """Whether the BLAS numpy's products run on has OpenBLAS's small-matrix kernels (as
    threadpoolctl reports its architecture): an OpenBLAS of one of :data:`SMALL_KERNELS`."""
    try:
        from attentive.evaluator.threads import thread_pools

        info = thread_pools().info()
    except Exception:  # pragma: no cover - threadpoolctl unable to inspect BLAS
        return False
    return any(
        i.get("internal_api") == "openblas"
        and str(i.get("architecture") or "").lower() in SMALL_KERNELS
        for i in info
    )


def product_tile_rows(d: int, columns: int, most: int) -> int:
    """Rows of ``d`` values a tile, for a product with ``columns`` columns: at most ``most``,
    and where the BLAS has small-matrix kernels (:func:`small_products`), few enough for them
    (:data:`SMALL_PRODUCT`) where that leaves at least :data:`MIN_PRODUCT_TILE`."""
    fits = SMALL_PRODUCT // max(1, d * columns)
    if fits >= MIN_PRODUCT_TILE and small_products():
        return int(min(most, fits))
    return int(most)


def tile_rows(d: int, itemsize: int = 8) -> int:
    """Rows of ``d`` values of ``itemsize`` bytes in a tile of about :data:`TILE_BYTES` (at
    least 64: narrow rows in tiles of a few rows would be all call overhead)."""
    return max(64, TILE_BYTES // max(1, d * itemsize))


# Slack on |k| ≤ s |x| for the rounding of s x and of the computed |x|² (≤ d u, d < 10^9).
_NORM_SLACK = 1.0 + 1e-6


def as_rows(Xp):
    """Prepared examples in a form whose rows can be sliced and fancy-indexed."""
    if sp.issparse(Xp):
        return Xp if Xp.format == "csr" else sp.csr_matrix(Xp)
    return Xp if isinstance(Xp, np.ndarray) else np.asarray(Xp)


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


# Rows at least this wide take their squared norms by ``np.vecdot`` (numpy ≥ 2: a BLAS dot a
# row), narrower ones by einsum. One thread, medians of 31 (2026-12-01, SkylakeX and Haswell
# kernels alike): float64 rows of 784 columns 118-121 ns a row against einsum's 318-325, float32
# blocks of 256 integers 117 against 183; at 50 columns 11.5 against 15.9, at 40 13-14 either
# way, at 10 einsum's 5.8 against 7.6-9.7.
VECDOT_COLUMNS = 48
_vecdot = getattr(np, "vecdot", None)


def squared_norms(X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``|x|²`` of each row of a 2-D array, in its dtype (every product summed once, in some
    order: the bounds that cover a sum of ``d`` products hold)."""
    if _vecdot is not None and X.shape[1] >= VECDOT_COLUMNS:
        # As silent as einsum: a finite row whose squares overflow has an infinite norm, and
        # its callers decide what that means (check_finite_rows evaluates such rows).
        with np.errstate(over="ignore", invalid="ignore"):
            return _vecdot(X, X, out=out)
    return np.einsum("ij,ij->i", X, X, out=out)


def float64_tiles(X: np.ndarray, T: int):
    """``(lo, hi, tile)`` over dense rows ``X``, ``T`` at a time, the tile in float64: float64
    rows as views, others converted into one buffer that every tile reuses (so a consumer must
    not keep a tile). A fresh array a tile cost its allocation: float32 MNIST rows in tiles of
    128, 440 ns a row against 255 into one buffer (one thread, 2026-12-01)."""
    m = X.shape[0]
    buf = None if X.dtype == np.float64 else np.empty((min(m, T), X.shape[1]))
    for lo in range(0, m, T):
        hi = min(m, lo + T)
        if buf is None:
            yield lo, hi, X[lo:hi]
        else:
            tile = buf[: hi - lo]
            np.copyto(tile, X[lo:hi], casting="same_kind")  # (complex rows are refused)
            yield lo, hi, tile


def row_norms(X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``|x|²`` of each row, accumulated in float64 whatever the rows' dtype (float32 rows are
    converted a tile at a time: einsum's own conversion is 4-5× slower)."""
    if X.dtype == np.float64:
        return squared_norms(X, out=out)
    out = np.empty(X.shape[0]) if out is None else out
    for lo, hi, tile in float64_tiles(X, tile_rows(X.shape[1])):
        squared_norms(tile, out=out[lo:hi])
    return out


def block_product(X: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``X Sᵀ`` (rows by support vectors) in float32 scratch. Rows by support vectors, not the
    other way round: a block of few support vectors against thousands of rows runs 2-4× faster
    in this orientation with OpenBLAS (which repacks the tall operand either way, but faster
    untransposed; MNIST-sized blocks of 8-16 support vectors measured), and the caller turns the
    result as it converts it to float64 anyway."""
    if not X.flags.c_contiguous:
        # A view of the rows' columns: with ``out=`` numpy leaves BLAS for its own loop here
        # (50-100× slower); without it, it calls BLAS with the view's leading dimension.
        return np.matmul(X, S.T)
    out = scratch().get("product", (X.shape[0], S.shape[0]), np.float32)
    return np.matmul(X, S.T, out=out)


# Values within this many grid units of an integer are "near the grid" (float32 pixels / 255:
# within 255 · 2^-24 ≈ 1.5e-5): their products are taken as integers, the distance bounded.
NEAR_GRID = 2.0**-10


def grid_scale(Y: np.ndarray) -> tuple[float, float] | None:
    """A scale ``s`` with every ``s · y`` within :data:`NEAR_GRID` of an integer of magnitude
    below 2^24 (``s`` from the smallest non-zero magnitude, 1, or 255), and the largest such
    distance (0 for values exactly on the grid, as 8-bit pixels / 255 in float64 are; about
    1.5e-5 for the same pixels stored in float32); None if there is none."""
    mags = np.abs(Y[Y != 0])
    if mags.size == 0 or not np.all(np.isfinite(mags)):
        return None
    smallest = float(mags.min())
    for s in dict.fromkeys((float(np.rint(1.0 / smallest)), 1.0, 255.0)):
        if not 1.0 <= s < GRID_LIMIT:
            continue
        t = mags * s
        dev = float(np.abs(t - np.rint(t)).max())
        if float(t.max()) < GRID_LIMIT and dev <= NEAR_GRID:
            return s, dev
    return None


@dataclass(frozen=True)
class SupportColumns:
    """The columns ``[first, stop)``: the smallest run holding every column where some support
    vector is non-zero (every column of a ``width``-wide row when no border is zero); and, if
    the support vectors lie on or near an integer grid there (:func:`grid_scale`), its scale
    ``s``, the nearest integers ``l`` of ``s y`` on those columns in float32 (walk order), the
    largest ``|l|`` and ``‖l‖₁``, and the largest distance ``|s y − l|`` of any value."""

    width: int
    first: int
    stop: int
    grid_scale: float | None = None
    grid32: np.ndarray | None = None
    grid_norm: float = 0.0
    grid_l1: float = 0.0
    grid_dev: float = 0.0

    @property
    def n_columns(self) -> int:
        return self.stop - self.first

    @property
    def whole(self) -> bool:
        return self.first == 0 and self.stop == self.width

    def view(self, X: np.ndarray) -> np.ndarray:
        """``X`` on these columns: a view (no copy)."""
        return X if self.whole else X[:, self.first : self.stop]

    def take(self, Y: np.ndarray) -> np.ndarray:
        """``Y`` on these columns, contiguous."""
        return np.ascontiguousarray(self.view(Y))


def support_columns(Y: np.ndarray) -> SupportColumns:
    """The :class:`SupportColumns` of dense support vectors ``Y`` (walk order)."""
    d = Y.shape[1]
    nonzero = np.flatnonzero(np.any(Y != 0, axis=0))
    first, stop = (int(nonzero[0]), int(nonzero[-1]) + 1) if nonzero.size else (0, 0)
    if nonzero.size == 0:
        first, stop = 0, d
    span = Y[:, first:stop]
    found = grid_scale(span)
    if found is not None:
        scale, dev = found
        L = np.rint(span * scale)
        norm = float(np.sqrt(np.einsum("ij,ij->i", L, L).max(initial=0.0)))
        if norm < GRID_LIMIT and exact_single_products():
            return SupportColumns(
                d,
                first,
                stop,
                scale,
                np.ascontiguousarray(L, dtype=np.float32),
                norm,
                float(np.abs(L).sum(axis=1).max(initial=0.0)),
                dev,
            )
    return SupportColumns(d, first, stop)


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


def row_on_grid(columns: SupportColumns, x: np.ndarray) -> bool:
    """Whether one row lies on or near the grid in every column. Input off the grid is most
    often off it in every row (standardised features), so one row tells before a tile is
    converted for nothing."""
    if columns.grid_scale is None:
        return False
    t = np.asarray(x, dtype=np.float64) * columns.grid_scale
    return bool(np.abs(t - np.rint(t)).max(initial=0.0) <= NEAR_GRID)


@dataclass
class GridRows:
    """Rows held as the nearest integers ``k`` of ``s x`` (every column, float32), and what
    that leaves out: ``|x|²`` over all columns, each row's largest distance ``e = max_i |s x_i −
    k_i|`` (0 on the grid) and a bound on each ``|x|²``'s error (0 where it is exact)."""

    K: np.ndarray
    norms2: np.ndarray
    dev: np.ndarray
    norm_error: np.ndarray
    products: np.ndarray | None = None  # (rows, p) float32: k · l of the ``ahead`` asked for

    @property
    def exact(self) -> bool:
        return not (self.dev.max(initial=0.0) > 0 or self.norm_error.max(initial=0.0) > 0)


def grid_rows(
    columns: SupportColumns, X: np.ndarray, ahead: np.ndarray | None = None
) -> GridRows | None:
    """Rows ``X`` as :class:`GridRows`; None when a row is not within :data:`NEAR_GRID` of the
    grid in some column, or could make a product's partial sums reach 2^24 (``|k| · max|l| ≥
    2^24``, by Cauchy–Schwarz). Rows it accepts are finite (NaN fails the distance test, ±inf
    the bound), as :func:`check_finite_rows` would find.

    Per tile of rows, while it is in cache: scaled, rounded, measured. Float64 rows (pixels /
    255 exactly) take ``|x|²`` from the rows themselves. Float32 rows (pixels / 255 as image
    pipelines store them) stay in float32: ``s x`` is off by at most ``u32 |s x|`` (added to the
    distance), and ``|x|²`` comes from the integers, exactly (sums of squares of integers up to
    255 over at most 256 columns stay below 2^24, so float32 sums them exactly in any order),
    off from the true norm by at most ``(2 e ‖k‖₁ + d e²) / s²``. Distances are taken per tile
    (whole-tile reductions are several times faster than per-row ones).

    ``ahead``: support vectors on the grid (``(p, columns)`` integers in float32, the first of a
    walk's), whose products with each tile's integers are taken while the tile is in cache
    (``products``: exact, as :func:`block_product` would give them, without a second read of
    every row for the walk's first blocks)."""
    s = columns.grid_scale
    m, d = X.shape
    if m and not row_on_grid(columns, X[0]):
        return None
    single = X.dtype == np.float32 and s <= _SQUARES_EXACT
    work = np.float32 if single else np.float64
    K = np.empty((m, d), dtype=np.float32)
    norms2, dev = np.empty(m), np.empty(m)
    T = max(1, min(m, tile_rows(d, np.dtype(work).itemsize)))
    scaled = np.empty((T, d), dtype=work)
    rounded = None if single else np.empty((T, d))
    partial = np.empty((T, -(-d // _SQUARE_COLUMNS)), dtype=np.float32) if single else None
    products = None if ahead is None else np.empty((m, ahead.shape[0]), dtype=np.float32)
    for lo in range(0, m, T):
        hi = min(m, lo + T)
        r = hi - lo
        tile = X[lo:hi]
        t = np.multiply(tile, work(s), out=scaled[:r], dtype=work)
        if single:
            rint = np.rint(t, out=K[lo:hi])
            for j, c0 in enumerate(range(0, d, _SQUARE_COLUMNS)):
                block = rint[:, c0 : c0 + _SQUARE_COLUMNS]
                squared_norms(block, out=partial[:r, j])  # integers < 2^24
            np.sum(partial[:r], axis=1, dtype=np.float64, out=norms2[lo:hi])
        else:
            row_norms(tile, out=norms2[lo:hi])
            rint = np.rint(t, out=rounded[:r])
            np.copyto(K[lo:hi], rint, casting="same_kind")  # integers below 2^24: exact
        if products is not None:
            # A view of the tile's columns: BLAS with its leading dimension (no ``out=``, which
            # would take numpy's own loop; block_product).
            products[lo:hi] = np.matmul(columns.view(K[lo:hi]), ahead.T)
        t -= rint
        dev[lo:hi] = max(float(t.max(initial=0.0)), -float(t.min(initial=0.0)))
        if single:
            # fl32(s x) is within u32 |s x| of s x, and |s x| ≤ max|k| + 1.
            top = max(float(rint.max(initial=0.0)), -float(rint.min(initial=0.0)))
            dev[lo:hi] += U32_ROUNDING * (top + 1.0)
    if single:
        l1 = np.sqrt(d * norms2)  # ‖k‖₁ ≤ √d |k|
        norm_error = (2.0 * dev * l1 + d * dev**2) / s**2
        norms2 /= s**2
    else:
        norm_error = np.zeros(m)
    # NaN or ±inf anywhere in a row makes its |x|² NaN or inf, and this test false.
    if not (
        dev.max(initial=0.0) <= NEAR_GRID
        and np.sqrt(norms2.max(initial=0.0)) * s * _NORM_SLACK * columns.grid_norm < GRID_LIMIT
    ):
        return None
    return GridRows(K, norms2, dev, norm_error, products)


# Float32 rows on a grid of scale up to this: integers up to 255, whose squares summed over 256
# columns stay below 2^24 (255² · 256 = 16,646,400).
_SQUARES_EXACT = 255.0
_SQUARE_COLUMNS = 256


def restricted_rows(columns: SupportColumns, X: np.ndarray, *, dtype=np.float64):
    """Rows ``X`` on the support vectors' columns in ``dtype`` (a view where ``X`` is of that
    dtype already), their ``|x|²`` over all columns, and a bound on each ``|x|²``'s error: float64
    rows summed in float64 (error 0: double rounding, as the reference's), float32 rows in
    float32 (:func:`single_row_norms`). Rows whose norm is not finite are refused
    (:class:`NonFiniteInput`) unless their values are finite."""
    if X.dtype == np.float32:
        norms2, error = single_row_norms(X)
    else:
        norms2, error = row_norms(X), np.zeros(X.shape[0])
    if not np.isfinite(norms2).all():
        check_finite_rows(norms2, X)
    rows = columns.view(X)
    if rows.dtype != dtype:
        rows = rows.astype(dtype)
    return rows, norms2, error


# Columns summed in float32 at a time by single_row_norms (then in float64).
NORM_CHUNK = 128


def single_row_norms(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``|x|²`` of float32 rows, summed in float32 over chunks of :data:`NORM_CHUNK` columns and
    the chunks in float64, and a bound on each one's error against the exact ``|x|²``.

    A sum of ``c`` squares in float32, in any order, is within ``γ_c = c u32 / (1 − c u32)`` of
    itself (the terms are all ≥ 0), plus ``2^-149`` a square that underflows; the chunks' sum in
    float64 adds ``(d / c + 1) u64`` of itself. About 3× faster than converting the rows to
    float64 a tile at a time (:func:`row_norms`; MNIST rows), for a bound of ``~8e-6 |x|²`` —
    in a term's exponent ``γ |x|²``, far inside the float32 product's own (:func:`attentive.
    evaluator.precision.product_relative_error`). A square that overflows makes the norm
    infinite (the row then goes to a double-precision source)."""
    m, d = X.shape
    c = NORM_CHUNK
    whole = d - d % c
    norms2 = np.zeros(m)
    if whole:
        blocks = X[:, :whole].reshape(m, whole // c, c)
        norms2 += np.einsum("ijk,ijk->ij", blocks, blocks).sum(axis=1, dtype=np.float64)
    if whole < d:
        rest = X[:, whole:]
        norms2 += np.einsum("ij,ij->i", rest, rest)
    g = (c + 1) * U32 / (1.0 - (c + 1) * U32)
    error = 1.01 * (g / (1.0 - g) + (d // c + 2) * U64) * norms2 + d * 2.0**-149
    return norms2, error
