"""Any model the term decomposition can evaluate (AdaBoost's weak learners, kernel models on
sparse rows with dense support vectors, ...): blocks from
:meth:`attentive.terms.TermDecomposition.term_values`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.sources import GENERIC, WEAK, register_source
from attentive.evaluator.sources.base import TermSource

__all__ = [
    "TermValuesSource",
    "WeakLearnerSource",
    "sparse_kernel_costs",
    "sparse_row_values",
    "weak_learner_costs",
]

# A kernel model's term on sparse rows (dense support vectors: scikit-learn's pairwise kernel of
# the rows held against a block of them), ns: ~2.5 and 0.145 a stored value of the row, and a
# row per block ~190 and 2.3 a stored value (its norm, the product's call). Fitted to blocks of
# 4, 16 and 64 terms of rows of 16-313 stored values over 784 columns (one thread, medians of 7,
# 2026-11-30): 4.8, 13.9, 23.7 and 47.8 ns a term, 225, 360, 575 and 900 a row and block. Priced
# at the default 2 ns a term and 4 terms a row, a sketched walk of MNIST 2 vs 5 as CSR rows
# (its sketch's features ~900 ns a row) was predicted at 2.1 of a full evaluation, measured at
# 0.43, and "auto" evaluated it in full (a user's trial: the same rows as LIBSVM and as CSV got
# other answers, 2.5-3 times slower than without the sketch).
SPARSE_TERM_NS = 2.5
SPARSE_TERM_VALUE_NS = 0.145
SPARSE_BLOCK_ROW_NS = 190.0
SPARSE_BLOCK_VALUE_NS = 2.3

# A weak learner's term is its ``predict`` on the rows held: ~20 ns a row and term for
# scikit-learn's trees given the rows converted (attentive.terms: 17-22 ns at 10-784 columns,
# AdaBoost of 200 stumps, 8,000 rows, one thread, 2026-11-30; 31 for trees of depth 3). The
# rows are converted once, where the source takes them (a row's preparation, ~0.3 ns a value),
# and a compaction copies the rows still walking (~0.3 ns a value: at 0.15 the walks of MNIST
# 4 vs 9's stumps compacted more often, in smaller blocks, and took 0.86 of a full evaluation
# against 0.56).
WEAK_LEARNER_NS = 20.0
CONVERSION_VALUE_NS = 0.3
COPY_VALUE_NS = 0.3


def weak_learner_costs(X) -> tuple[float, float, float]:
    """A weak learner's term of one row of ``X``, a row carried through one more block, and a
    row's conversion, ns (by the values a row holds: its columns, or its stored values where
    it is sparse)."""
    rows, columns = X.shape
    values = X.nnz / max(rows, 1) if sp.issparse(X) else columns
    return WEAK_LEARNER_NS, WEAK_LEARNER_NS + COPY_VALUE_NS * values, CONVERSION_VALUE_NS * values


def sparse_row_values(walk, plan) -> float:
    """The stored values a sparse row of a kernel model holds, as its dense support vectors'
    non-zeros (the rows a model scores are like those it was fitted on): a price that is the
    same for every batch of rows, a one-row batch included (whose own count would price the
    walk and full evaluation of a call at another row's size)."""

    def build():
        sv = walk.terms.support_vectors
        nonzero = sv.getnnz() if sp.issparse(sv) else np.count_nonzero(sv)
        return float(nonzero / max(sv.shape[0], 1))

    return plan.arrays("sparse-row-values", build)


def sparse_kernel_costs(values: float) -> tuple[float, float]:
    """A kernel model's term on sparse rows of ``values`` stored values, ns, and a row carried
    through a block, in terms (:data:`SPARSE_TERM_NS` and the others)."""
    term_ns = SPARSE_TERM_NS + SPARSE_TERM_VALUE_NS * values
    return term_ns, (SPARSE_BLOCK_ROW_NS + SPARSE_BLOCK_VALUE_NS * values) / term_ns


@register_source(priority=GENERIC)
class TermValuesSource(TermSource):
    """The terms as the decomposition computes them, times the weights. A kernel model's on
    sparse rows are priced as they cost (:func:`sparse_kernel_costs`)."""

    kind = "term-values"

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return True

    def __init__(self, walk, plan, X):
        super().__init__(walk, plan, X)
        if walk.terms.kind == "kernel" and sp.issparse(X):
            self.term_ns, self.row_cost = sparse_kernel_costs(sparse_row_values(walk, plan))

    def block(self, start, stop, out):
        out[:] = self.walk.terms.term_values(self.X, self.plan.order[start:stop]).T
        out *= self.plan.ordered_weights[start:stop, None]


@register_source(priority=WEAK)
class WeakLearnerSource(TermSource):
    """A boosted model's weak learners, by the decomposition, priced as they cost: ~20 ns a term
    (:func:`weak_learner_costs`), where the default prices a term at 2 ns. Against that, a
    walk's fixed costs per position and row (:mod:`attentive.evaluator.pilot`) priced boosted
    walks at 1.4-1.6 of a full evaluation where they measured 0.3-0.7, and "auto" evaluated
    them in full. One thread: a learner's ``predict`` is a few calls under the interpreter
    lock, and on two threads MNIST 4 vs 9's 200 stumps took 36 ms in full against 25 on one."""

    kind = "weak-learners"
    single_thread = True

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return walk.terms.kind == "boosting"

    def __init__(self, walk, plan, X):
        super().__init__(walk, plan, None)  # (the rows are held converted, below)
        self.rows = walk.terms.learner_rows(X)  # converted once (trees), kept as rows drop
        self.term_ns, row_ns, self.prep_ns = weak_learner_costs(X)
        self.row_cost = row_ns / self.term_ns

    @property
    def n_rows(self) -> int:
        return self.rows.rows.shape[0]

    def keep(self, idx):
        self.rows = self.rows.keep(idx)

    def block(self, start, stop, out):
        out[:] = self.walk.terms.learner_values(self.rows, self.plan.order[start:stop]).T
        out *= self.plan.ordered_weights[start:stop, None]
