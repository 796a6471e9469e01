"""Dense RBF kernels over many features with float32 products and a certified error bound.

With many features (MNIST: 784) an RBF term's cost is its product, and a float32 product is twice
as fast as a float64 one and reads half the memory. ``|w| K(x, y) = exp(fl32(x · 2γy) +
(−γ|y|² + log|w|) − γ|x|²)``: the product in float32, the rest of the exponent and ``exp`` in
double precision. Every term is within ``ρ(x)`` of itself, relatively
(:func:`attentive.evaluator.precision.product_relative_error`): the walk stops only where that
makes the crossing certain, and what it leaves unsure is done again by :class:`RBFDoubleSource`.

Rows already in float32 are multiplied as given (a view on the support vectors' columns); float64
rows are converted to float32 on those columns at once.
"""

from __future__ import annotations

import numpy as np

from attentive.evaluator.plan import Thresholds
from attentive.evaluator.precision import (
    MAX_RELATIVE_TERM_ERROR,
    dot_bounds,
    product_relative_error,
    single_totals_error,
    split_relative_error,
)
from attentive.evaluator.rows import block_product, restricted_rows, row_norms
from attentive.evaluator.sources import SINGLE, register_source
from attentive.evaluator.sources.base import NotUsable, TermSource
from attentive.evaluator.sources.rbf import (
    PREP_NORMS,
    WIDE_FEATURES,
    RBFDoubleSource,
    dense_costs,
    is_dense_rbf,
    rbf_allowance,
    rbf_arrays,
)
from attentive.terms import check_width

__all__ = ["FLOAT32_FINISH_SAVING", "MAX_LOOSE_SHARE", "RBFSingleSource"]

#: What finishing a term in float32 saves in full evaluation (:meth:`RBFSingleSource.
#: tile_totals`), ns: 0.65 against 1.85 ns a term for the exponent, exp and sums (MNIST tiles).
FLOAT32_FINISH_SAVING = 1.2
#: Rows whose terms' bound by Cauchy–Schwarz is above this get Hölder's too (a pass over them;
#: for every row it would cost 10-15 % of a full evaluation of MNIST pixels, where it decides
#: no more labels).
TIGHTEN_ABOVE = MAX_RELATIVE_TERM_ERROR
#: A tile with more than this share of rows without a useful band goes to double precision whole.
MAX_LOOSE_SHARE = 0.25


@register_source(priority=SINGLE)
class RBFSingleSource(TermSource):
    """Dense RBF kernel over more than 64 features with float32 products (module docstring)."""

    kind = "rbf-single"
    magnitudes = True
    holds_wide_rows = True
    certified = True
    exact = RBFDoubleSource

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return precision == "single" and is_dense_rbf(walk, X) and X.shape[1] > WIDE_FEATURES

    @classmethod
    def arrays(cls, walk, plan):
        return rbf_arrays(walk, plan)

    def __init__(self, walk, plan, X):
        a = self.a = rbf_arrays(walk, plan)
        X = np.asarray(X)
        check_width(X, a.width)
        d = a.width
        rows, norms2, norm_error = restricted_rows(a.columns, X, dtype=np.float32)
        super().__init__(walk, plan, rows)
        self.row = -a.gamma * norms2
        # Per row, a bound on Σ|x_i 2γy_i| over every support vector: Cauchy–Schwarz's, and
        # Hölder's (precision.dot_bounds: a pass over the row) where the first puts the terms'
        # bound above TIGHTEN_ABOVE (behind a StandardScaler, 6.6 % of MNIST 8 vs rest's rows
        # have no useful band by the first, 1.1 % by both; full evaluation recomputed 568 of
        # 7,000 rows in double precision, now 134).
        self.dots = 2.0 * a.gamma * np.sqrt(norms2 + norm_error) * a.sv_norm
        self.rho = product_relative_error(
            a.gamma, a.sv_norm, a.log_w_max, np.sqrt(norms2), d, norm_error
        )
        wide = np.flatnonzero(self.rho > TIGHTEN_ABOVE)
        if wide.size:
            # Their |x|² in double precision too: far out, float32's bound on it (~1e-5 |x|²)
            # alone moves the exponent by more than a band allows.
            norms2[wide] = row_norms(X[wide])
            norm_error[wide] = 0.0
            self.row[wide] = -a.gamma * norms2[wide]
            held = rows if wide.size == len(rows) else rows[wide]
            self.dots[wide] = np.minimum(self.dots[wide], dot_bounds(held, a.column_max32))
            self.rho[wide] = product_relative_error(
                a.gamma,
                a.sv_norm,
                a.log_w_max,
                np.sqrt(norms2[wide]),
                d,
                norm_error[wide],
                dot_bound=self.dots[wide],
            )
        # A row whose terms could be off by more than MAX_RELATIVE_TERM_ERROR (a long row far
        # out: standardised pixels of a rare stroke) has no useful band: its bound is set to
        # infinity. Full evaluation recomputes just that row in double precision, the rest of
        # the tile keeping its float32 products; a walk sets it aside for double precision
        # (walk.walk_rows). A tile of many such rows goes to double precision whole.
        loose = ~(self.rho <= MAX_RELATIVE_TERM_ERROR)
        if loose.any():
            if loose.mean() > MAX_LOOSE_SHARE:
                raise NotUsable(
                    "many rows' float32 products could be off by more than a band allows"
                )
            self.rho[loose] = np.inf
        # The bound split by support vector (precision.split_relative_error) for the walk's
        # band; rows whose Hölder bound is the lower keep theirs for every term.
        self.base, self.per_norm = split_relative_error(
            a.gamma, a.sv_norm, a.log_w_max, np.sqrt(norms2), d, norm_error
        )
        if wide.size:
            self.base[wide], self.per_norm[wide] = self.rho[wide], 0.0
        self.base[loose], self.per_norm[loose] = np.inf, 0.0
        # The rows' ``(|x|², bound on its error)`` as held at construction (a sketched walk's
        # float32 features take them instead of summing them again); not kept by ``keep``.
        self.row_norms = (norms2, norm_error)
        dense_costs(self, a.columns.n_columns, single=True, prep=PREP_NORMS)
        self.full_term_ns = self.term_ns - FLOAT32_FINISH_SAVING

    def keep(self, idx):
        self.X = self.X[idx]  # fancy indexing: contiguous out, fast on views too
        self.row = self.row[idx]
        self.rho = self.rho[idx]
        self.base, self.per_norm = self.base[idx], self.per_norm[idx]
        self.dots = self.dots[idx]
        self.row_norms = None

    def block(self, start, stop, out):
        single = block_product(self.X, self.a.scaled32[start:stop])
        np.add(single.T, self.a.sv_offset[start:stop, None], out=out)
        out += self.row
        np.exp(out, out=out)

    @classmethod
    def tile_totals(cls, walk, plan, X, budget, final=None):
        """``U_B`` of a tile's rows for full and budgeted evaluation, all in float32: the
        products, the exponent, ``exp`` and the two sums (signed, and the mass for the bound)
        in one product of the terms with ``[s | 1]`` (about a third of the time of finishing
        them in float64 over MNIST's rows), under the bound of
        :func:`attentive.evaluator.precision.single_totals_error` plus the double-precision
        rounding allowance; rows without a useful bound get an infinite one (recomputed in
        double precision by the caller)."""
        source = cls(walk, plan, X)
        a = source.a
        E = block_product(source.X, a.scaled32[:budget])
        E += a.sv_offset[:budget].astype(np.float32)
        E += source.row.astype(np.float32)[:, None]
        np.exp(E, out=E)
        signs = np.ones((budget, 2), dtype=np.float32)
        signs[:, 0] = plan.weight_signs[:budget]
        UM = (E @ signs).astype(np.float64)
        U, masses = UM[:, 0], UM[:, 1]
        size = 1.01 * source.dots + np.abs(a.sv_offset).max(initial=0.0)
        size += np.abs(source.row)
        band = np.full(U.shape, np.inf)
        ok = np.isfinite(source.rho)
        band[ok] = single_totals_error(source.rho[ok], size[ok], masses[ok], budget)
        band[ok] += source.allowance(Thresholds(None, None), final)[budget - 1]
        return U, band

    def relative_error(self):
        return self.rho

    def band_split(self):
        return self.base, self.per_norm, self.a.sv_norms

    def allowance(self, thr, final):
        return rbf_allowance(self, thr, final)
