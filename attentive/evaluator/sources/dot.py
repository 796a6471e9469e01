"""Linear, polynomial and sigmoid kernels on dense rows, in double precision.

``K(x, y) = k(x · y)`` is symmetric, so a block is one product of the block's support vectors
(walk order, on the columns where some support vector is non-zero) with the rows held, written
straight into the block, then ``k`` and the weights in place (over more than 64 features, on the
support vectors' columns only: a view of the rows). Rows are refused if not finite (every column,
as scikit-learn's kernels refuse them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.rows import SupportColumns, support_columns
from attentive.evaluator.sources import register_source
from attentive.evaluator.sources.base import TermSource
from attentive.evaluator.sources.rbf import WIDE_FEATURES, dense_costs
from attentive.terms import DOT_KERNELS, checked_rows, dot_kernel

__all__ = ["DotArrays", "DotKernelSource", "dot_arrays", "is_dense_dot_kernel"]


@dataclass(frozen=True)
class DotArrays:
    """A dense dot-kernel model's support vectors in walk order: on their columns."""

    columns: SupportColumns
    sv_all: np.ndarray  # (n, d), float64
    sv_cols: np.ndarray  # (n, columns): sv_all on the columns (sv_all itself if every column)

    @property
    def width(self) -> int:
        return self.columns.width


def dot_arrays(walk, plan) -> DotArrays:
    """The :class:`DotArrays` of ``walk`` (built once per walk)."""

    def build():
        Y = np.ascontiguousarray(np.asarray(walk.terms.support_vectors, np.float64)[plan.order])
        columns = support_columns(Y)
        return DotArrays(columns, Y, columns.take(Y))

    return plan.arrays("dot", build)


def is_dense_dot_kernel(walk, X) -> bool:
    terms = walk.terms
    return (
        terms.kind == "kernel"
        and terms.kernel in DOT_KERNELS
        and not sp.issparse(terms.support_vectors)
        and not sp.issparse(X)
    )


def finish_dot(out, walk, weights):
    """``w k(x · y)`` in place from the products ``out``."""
    dot_kernel(out, walk.terms.kernel, walk.terms.kernel_params)
    out *= weights[:, None]


@register_source
class DotKernelSource(TermSource):
    """Linear, polynomial and sigmoid kernels on dense rows (module docstring)."""

    kind = "dot-kernel"

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return is_dense_dot_kernel(walk, X)

    @classmethod
    def arrays(cls, walk, plan):
        return dot_arrays(walk, plan)

    def __init__(self, walk, plan, X):
        a = dot_arrays(walk, plan)
        d = a.width
        X = checked_rows(X, d)
        self.sv = a.sv_all
        if d > WIDE_FEATURES and not a.columns.whole:
            X = a.columns.view(X)  # x · y needs only the support vectors' columns
            self.sv = a.sv_cols
        super().__init__(walk, plan, X)
        dense_costs(self, d, single=False)

    def keep(self, idx):
        self.X = self.X[idx]  # fancy indexing: contiguous out, fast on views too

    def block(self, start, stop, out):
        np.matmul(self.sv[start:stop], self.X.T, out=out)
        finish_dot(out, self.walk, self.plan.ordered_weights[start:stop])
