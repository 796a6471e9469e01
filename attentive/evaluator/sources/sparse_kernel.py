"""Kernel models with sparse support vectors on sparse rows: a block is one sparse product.

The rows are held transposed (CSR of ``Xᵀ``), so that a block is Gustavson's product of the
block's support vectors (CSR, walk order) with them, written straight into the dense block
(scikit-learn's ``sparse_matmul_to_dense``, from version 1.8; before it these models take the
generic source). Each support-vector non-zero is read once per block and multiplies the rows that
share its feature, so the product's cost follows the terms computed, with nothing paid per block
and row but the block's values. Holding a row costs its transposition (at the start and at each
compaction). Full and budgeted evaluation take the other orientation (:meth:`tile_totals`). The
product holds the GIL: these walks run on one thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.sources import SPARSE, register_source
from attentive.evaluator.sources.base import TermSource
from attentive.terms import check_width, dot_kernel, refuse_non_finite

try:  # scikit-learn ≥ 1.8: a sparse × sparse product written into a dense array
    from sklearn.utils.sparsefuncs import sparse_matmul_to_dense
except ImportError:  # pragma: no cover - older scikit-learn: the generic source
    sparse_matmul_to_dense = None

__all__ = ["SparseKernelSource"]


@dataclass
class SparseArrays:
    """Support vectors in walk order as CSR (float64, sorted indices); for an RBF kernel
    ``−γ|y|² + log|w|`` of each; the transpose of them all, when first used."""

    sv: sp.csr_matrix
    offset: np.ndarray | None
    transposed: sp.csr_matrix | None = None

    def first_transposed(self, budget: int) -> sp.csr_matrix:
        """The first ``budget`` support vectors transposed (CSR), every one kept."""
        if budget < self.sv.shape[0]:
            return self.sv[:budget].T.tocsr()
        if self.transposed is None:
            self.transposed = self.sv.T.tocsr()
        return self.transposed


def sparse_arrays(walk, plan) -> SparseArrays:
    def build():
        Y = sp.csr_matrix(walk.terms.support_vectors, dtype=np.float64)[plan.order]
        Y.sort_indices()
        offset = None
        if walk.terms.kernel == "rbf":
            gamma = float(walk.terms.kernel_params["gamma"])
            with np.errstate(divide="ignore"):
                log_w = np.log(np.abs(plan.ordered_weights))
            offset = -gamma * np.asarray(Y.multiply(Y).sum(axis=1)).ravel() + log_w
        return SparseArrays(Y, offset)

    return plan.arrays("sparse-kernel", build)


def sparse_rows(arrays: SparseArrays, terms, X, transpose: bool = True):
    """Rows ``X`` as the products read them: CSR in float64, ``Xᵀ`` in CSR (None unless
    ``transpose``), and for an RBF kernel ``−γ|x|²`` of each row (else None). Refuses rows of
    another width (``ValueError``) and NaN or infinite values
    (:class:`attentive.errors.NonFiniteInput`), as scikit-learn's kernels do."""
    X = sp.csr_matrix(X, dtype=np.float64)
    check_width(X, arrays.sv.shape[1])
    refuse_non_finite(X.data)
    row = None
    if arrays.offset is not None:
        row = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        row *= -float(terms.kernel_params["gamma"])
    return X, X.T.tocsr() if transpose else None, row


def _rbf_from_dots(H: np.ndarray, terms, sv_part, row_part) -> None:
    """``|w| K(x, y) = exp(2γ x · y + (−γ|y|² + log|w|) − γ|x|²)`` in place from the dot
    products ``H``, the support vectors' and the rows' parts shaped to broadcast against it."""
    H *= 2.0 * float(terms.kernel_params["gamma"])
    H += sv_part
    H += row_part
    np.exp(H, out=H)


@register_source(priority=SPARSE)
class SparseKernelSource(TermSource):
    """Sparse rows against sparse support vectors (module docstring). RBF kernels give
    magnitudes, their weights' logarithms folded in.

    ``row_cost``: a block costs ~0.1 ms beyond its products (slicing the support vectors, the
    Python around the product and the kernel), ~30 terms per row of a 2,000-row chunk, and a
    row costs as much again to transpose at a compaction. Measured on synthetic-sparse (walks
    at f = 0.7-0.96): 1 and 4 are 1.1-1.4× slower than 16 to 128, which are alike."""

    kind = "sparse-kernel"
    row_cost = 32.0
    single_thread = True  # scikit-learn's sparse product holds the GIL

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return (
            sparse_matmul_to_dense is not None
            and walk.terms.kind == "kernel"
            and sp.issparse(walk.terms.support_vectors)
            and sp.issparse(X)
        )

    @classmethod
    def arrays(cls, walk, plan):
        return sparse_arrays(walk, plan)

    def __init__(self, walk, plan, X):
        self.a = sparse_arrays(walk, plan)
        X, self.XT, self.row = sparse_rows(self.a, walk.terms, X)
        super().__init__(walk, plan, X)

    @property
    def magnitudes(self):  # RBF kernels: |w| K, the signs applied in summing
        return self.a.offset is not None

    def keep(self, idx):
        super().keep(idx)
        self.XT = self.X.T.tocsr()
        if self.row is not None:
            self.row = self.row[idx]

    def block(self, start, stop, out):
        sparse_matmul_to_dense(self.a.sv[start:stop], self.XT, out=out)
        if self.a.offset is not None:
            _rbf_from_dots(out, self.walk.terms, self.a.offset[start:stop, None], self.row)
        else:
            dot_kernel(out, self.walk.terms.kernel, self.walk.terms.kernel_params)
            out *= self.plan.ordered_weights[start:stop, None]

    @classmethod
    def tile_totals(cls, walk, plan, X, budget, final=None):
        """Rows times the first ``B`` support vectors transposed, then the kernel and one
        product with the weights (RBF: with their signs, ``log|w|`` folded in).

        This orientation reads each row non-zero once and multiplies the support vectors that
        share its feature, so its cost does not depend on how many rows a tile holds
        (synthetic-sparse, 1,620 RBF support vectors: 8.6 ms for 2,000 rows in tiles of 161, 647
        or 2,000 rows); the walk's orientation reads every support vector once per tile and took
        22 ms in tiles of 161 rows, 10 in tiles of 1,294."""
        a = sparse_arrays(walk, plan)
        YT = a.first_transposed(budget)
        X, _, row = sparse_rows(a, walk.terms, X, transpose=False)
        H = sparse_matmul_to_dense(X, YT, out=np.empty((X.shape[0], budget)))
        if a.offset is not None:
            _rbf_from_dots(H, walk.terms, a.offset[:budget], row[:, None])
            return H @ plan.weight_signs[:budget], None
        dot_kernel(H, walk.terms.kernel, walk.terms.kernel_params)
        return H @ plan.ordered_weights[:budget], None
