"""Dense RBF kernels in double precision, and the arrays every dense RBF source shares.

A term is ``|w| K(x, y) = exp(x̃ · ỹ)`` with the rows held as one centred augmented copy,
``x̃ = [2γ(x − c), 1, −γ|x − c|²]`` on the columns where some support vector is non-zero (the
norm over every column), and ``ỹ = [y − c, −γ|y − c|² + log|w|, 1]``: one product and one
``exp`` per block, the weight free. Centring both by the support vectors' mean keeps the
products small, and with them their rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.plan import MAX_SURVIVAL_BLOCK, WIDE_SURVIVAL_BLOCK
from attentive.evaluator.precision import rounding_allowance
from attentive.evaluator.rows import (
    SupportColumns,
    check_finite_rows,
    squared_norms,
    support_columns,
    tile_rows,
)
from attentive.evaluator.sources import register_source
from attentive.evaluator.sources.base import TermSource
from attentive.terms import check_width

__all__ = [
    "WIDE_FEATURES",
    "RBFArrays",
    "RBFDoubleSource",
    "dense_costs",
    "rbf_allowance",
    "rbf_arrays",
]

# Over more features than this a block's product dominates its cost: rows are worth keeping on
# the support vectors' columns and blocks may be longer (plan.WIDE_SURVIVAL_BLOCK).
WIDE_FEATURES = 64


# What a walk's term costs beyond a full evaluation's (running sums, comparisons: ~6 passes over
# the block) and a rule on the running mass adds (its sum and statistic), in ns per term; what a
# full evaluation's term costs (the product over d columns, then the exponent and exp) and what
# holding a row through one more block costs (the block's product repacks every row it reads),
# in ns — measured on this project's development machine with numpy's OpenBLAS on its AVX-512
# kernels (docs/speed.md, "The cost model"). Only their ratios matter.
WALK_TERM_NS, MASS_TERM_NS = 1.8, 1.0


# A row's preparation, ns a feature (MNIST-like float32 rows, 784 columns, one thread; the
# pilot compares a walk with one source against full evaluation with another by them): the
# double source's centred, augmented float64 copy (1.05 µs a row), the float32 source's norms
# (0.1 µs), the grid's conversion to integers (0.55 µs).
PREP_AUGMENTED, PREP_NORMS, PREP_GRID = 1.35, 0.12, 0.7

# What a row costs the walk that holds it from its start, ns a column beyond WIDE_FEATURES, beyond
# its preparation and its blocks (TermSource.held_ns; the RBF grid and float32 sources, whose
# walks were measured): every row of a walk without a triage, the rows a triage leaves to the
# walk with one (attentive.evaluator.triage). Over MNIST's columns the walk's source converts
# such a row again (onto the pixel grid, or its float32 norms), gathers it from the call's rows
# after a triage, copies it at every block its walk reaches (keep), and allocates fresh arrays
# for all of it, whose first touch costs page faults (5 vs 8's walk measured 20 % faster with
# the allocator keeping its pages). Fitted to the calibrated rule's walks of ten MNIST problems
# as users prepare them (pairs, a pipeline, one against the rest; 6,500-7,600 rows, one thread,
# medians of 11, 2026-12-02): priced without it at 0.20-0.63 of a full evaluation, they
# measured 0.42-1.16, a row so held 1.3-8.6 µs short (median 3.7 µs, over 680-720 columns;
# docs/speed.md). Counted from the 65th column, so that it grows from nothing; measured only
# at MNIST's width, and taken as linear between. Narrow rows (behind a PCA of 30-50
# components, 10-50 features) were priced within 10 % without it.
HELD_COLUMN_NS = 5.5


#: A dense kernel term's product, ns a feature: up to WIDE_FEATURES features, and beyond them,
#: float32 and float64. Fitted first on one machine (1.5 + 0.0085 d and 1.7 + 0.017 d ns a term:
#: float32 products of MNIST's shape at ~94 G multiply-adds a second); two machines since (an
#: Intel Xeon, 2026-11-28: 54 G; an AMD EPYC, 2026-12-01: ~50 G, float64 ~25 G) ran products of
#: MNIST's shape at half that rate: `np.exp(A @ B)` of 2,675 × 784 against 784 × 196, one
#: thread, 16.4 ns a term in float32 and 38.0 in float64 (787 × 784 against 784 × 666: 15.6 and
#: 31.1), where the first fit priced 8.2 and 15.0, so walks of MNIST pairs measured at 0.45 of
#: a full evaluation were priced at 0.90 and not taken. Over few features the first fit holds
#: (2,000 × 20 against 200: 0.95 and 1.73 ns a term; 80 features 2.08 and 4.08).
TERM_NS = {True: (1.5, 0.0085, 0.020), False: (1.7, 0.017, 0.042)}


def dense_term_ns(d: int, single: bool) -> float:
    """A full evaluation's dense RBF term over ``d`` features, ns (float32 products where
    ``single``): :data:`TERM_NS`' base, its first slope up to :data:`WIDE_FEATURES` features and
    its second beyond."""
    base, narrow, wide = TERM_NS[bool(single)]
    return base + narrow * min(d, WIDE_FEATURES) + wide * max(d - WIDE_FEATURES, 0)


def dense_costs(source, d: int, single: bool, prep: float = 0.0) -> None:
    """Set a dense kernel source's costs (in units of one term of a full evaluation) for rows of
    ``d`` features, with float32 (``single``) or float64 products: a full evaluation's term
    :func:`dense_term_ns` (at MNIST's ~700 columns ~15 ns in float32), a row through a block
    ``20 + 0.17 d`` ns (``20 + 0.3 d``) — at MNIST's ~700 columns about 10 terms. ``prep``: a
    row's preparation, ns a feature (:attr:`TermSource.prep_ns`). Where the source
    ``holds_wide_rows``, a row held by a walk from its start costs :data:`HELD_COLUMN_NS` a
    column beyond the 64th more (:attr:`TermSource.held_ns`)."""
    term_ns = dense_term_ns(d, single)
    row_ns = 20.0 + (0.17 if single else 0.3) * d
    source.term_ns = term_ns
    source.term_cost = 1.0 + WALK_TERM_NS / term_ns
    source.mass_cost = MASS_TERM_NS / term_ns
    source.row_cost = row_ns / term_ns
    source.prep_ns = prep * d
    source.held_ns = HELD_COLUMN_NS * max(0, d - WIDE_FEATURES) if source.holds_wide_rows else 0.0
    source.max_block = max_block_for(d)


def rbf_allowance(source, thr, final) -> np.ndarray:
    """The rounding allowance of a certified dense RBF source (float32 products): its rows'
    exponent parts ``source.row`` (−γ|x|²) bound the exponent's scale with the arrays'
    largest support-vector norm (:func:`attentive.evaluator.precision.rounding_allowance`); the
    rows without a useful band (an infinite bound, walked in double precision) take no part."""
    a = source.a
    row = source.row
    rho = source.relative_error()
    if rho is not None:  # rows without a band are walked again in double precision
        row = row[np.isfinite(rho)]
    max_norm = float(np.sqrt((-row / a.gamma).max(initial=0.0)))
    scale = a.gamma * (max_norm + a.sv_norm) ** 2
    p = source.plan
    return rounding_allowance(p.ordered_weights, p.centring_sums, thr, scale, a.width, final)


def max_block_for(d: int) -> int:
    """A block's product reads every row held once whatever its length, so over many features
    longer blocks pay where few walks stop: a float64 product over MNIST's ~520 columns cost
    ``1 + 15 / M`` times a tall product's time per term for ``M`` positions (float32 ``1 + 8 /
    M``). With few features a block's buffer of terms is what it costs, best kept in cache
    (synthetic RBF, 20 features: blocks over 64 measured 1.5-1.9× slower)."""
    return WIDE_SURVIVAL_BLOCK if d > WIDE_FEATURES else MAX_SURVIVAL_BLOCK


@dataclass(frozen=True)
class RBFArrays:
    """A dense RBF model's support vectors in walk order, as each dense RBF source uses them."""

    gamma: float
    columns: SupportColumns
    sv_offset: np.ndarray  # −γ|y|² + log|w|
    scaled32: np.ndarray  # 2γy on the columns, float32
    centre: np.ndarray  # the support vectors' mean
    augmented: np.ndarray  # [y − c on the columns, −γ|y − c|² + log|w|, 1], float64
    sv_norm: float  # max |y|
    sv_norms: np.ndarray  # |y| per position
    # Per column, the largest |2γy| over the support vectors, rounded up to float32.
    column_max32: np.ndarray
    centred_norm: float  # max |y − c|
    log_w_max: float  # max |log|w||

    @property
    def width(self) -> int:
        return self.columns.width


def rbf_arrays(walk, plan) -> RBFArrays:
    """The :class:`RBFArrays` of ``walk`` (built once per walk)."""

    def build():
        w = plan.ordered_weights
        gamma = float(walk.terms.kernel_params["gamma"])
        Y = np.asarray(walk.terms.support_vectors, dtype=np.float64)[plan.order]
        with np.errstate(divide="ignore"):
            log_w = np.log(np.abs(w))
        raw2 = np.einsum("ij,ij->i", Y, Y)
        columns = support_columns(Y)
        centre = Y.mean(axis=0) if len(Y) else np.zeros(Y.shape[1])
        Yc = columns.take(Y - centre)
        norms2 = np.einsum("ij,ij->i", Y - centre, Y - centre)
        scaled = 2.0 * gamma * Y
        finite_log = np.abs(log_w[np.isfinite(log_w)])
        return RBFArrays(
            gamma=gamma,
            columns=columns,
            sv_offset=-gamma * raw2 + log_w,
            scaled32=np.ascontiguousarray(columns.take(scaled), dtype=np.float32),
            centre=centre,
            augmented=np.ascontiguousarray(
                np.column_stack([Yc, -gamma * norms2 + log_w, np.ones(len(Y))])
            ),
            sv_norm=float(np.sqrt(raw2.max(initial=0.0))),
            sv_norms=np.sqrt(raw2),
            column_max32=_rounded_up32(np.abs(columns.take(scaled)).max(axis=0, initial=0.0)),
            centred_norm=float(np.sqrt(norms2.max(initial=0.0))),
            log_w_max=float(finite_log.max(initial=0.0)),
        )

    return plan.arrays("rbf", build)


def _rounded_up32(values: np.ndarray) -> np.ndarray:
    """``values`` in float32, none below its float64 value (one ulp up from the nearest)."""
    return np.nextafter(values.astype(np.float32), np.float32(np.inf))


def is_dense_rbf(walk, X) -> bool:
    terms = walk.terms
    return (
        terms.kind == "kernel"
        and terms.kernel == "rbf"
        and not sp.issparse(terms.support_vectors)
        and not sp.issparse(X)
    )


def augmented_rows(arrays: RBFArrays, X: np.ndarray, idx=None, dtype=np.float64):
    """``[2γ(x − c)_S, 1, −γ|x − c|²]`` of rows ``X[idx]`` (every row when None) on the support
    vectors' columns ``S`` (the norm over every column), and the largest ``|x − c|``. Refuses
    rows with a NaN or infinite value (:class:`attentive.errors.NonFiniteInput`).

    A tile of rows at a time: centred in float64 in a buffer that stays in cache, measured and
    scaled into the output from there (one centred copy of every row cost more than the rest:
    11 of 38 ms for 4,000 MNIST rows behind a StandardScaler, a walk of 0.16 of the terms)."""
    g = arrays.gamma
    rows = X if idx is None else X[idx]
    m, d = rows.shape
    k = arrays.columns.n_columns
    out = np.empty((m, k + 2), dtype=dtype)
    norms2 = np.empty(m)
    T = tile_rows(d)
    buf = np.empty((min(m, T), d))
    for lo in range(0, m, T):
        hi = min(m, lo + T)
        centred = np.subtract(rows[lo:hi], arrays.centre, out=buf[: hi - lo], dtype=np.float64)
        squared_norms(centred, out=norms2[lo:hi])
        np.multiply(arrays.columns.view(centred), 2.0 * g, out=out[lo:hi, :k])
    check_finite_rows(norms2, rows)
    out[:, k] = 1.0
    out[:, k + 1] = -g * norms2
    return out, float(np.sqrt(norms2.max(initial=0.0)))


@register_source
class RBFDoubleSource(TermSource):
    """Dense RBF kernel in double precision: rows as one centred augmented copy (module
    docstring), a block one product and one ``exp``."""

    kind = "rbf"
    magnitudes = True

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return is_dense_rbf(walk, X)

    @classmethod
    def arrays(cls, walk, plan):
        return rbf_arrays(walk, plan)

    def __init__(self, walk, plan, X):
        arrays = rbf_arrays(walk, plan)
        check_width(X, arrays.width)
        rows, self.max_norm = augmented_rows(arrays, np.asarray(X))
        super().__init__(walk, plan, rows)
        self.sv = arrays.augmented
        dense_costs(self, arrays.columns.n_columns, single=False, prep=PREP_AUGMENTED)

    def keep(self, idx):
        self.X = self.X[idx]  # fancy indexing: contiguous out, fast on views too

    def block(self, start, stop, out):
        np.matmul(self.sv[start:stop], self.X.T, out=out)
        np.exp(out, out=out)
