"""Any model the term decomposition can evaluate (AdaBoost's weak learners, kernel models on
sparse rows with dense support vectors, ...): blocks from
:meth:`attentive.terms.TermDecomposition.term_values`."""

from __future__ import annotations

import scipy.sparse as sp

from attentive.evaluator.sources import GENERIC, WEAK, register_source
from attentive.evaluator.sources.base import TermSource

__all__ = ["TermValuesSource", "WeakLearnerSource", "weak_learner_costs"]

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


@register_source(priority=GENERIC)
class TermValuesSource(TermSource):
    """The terms as the decomposition computes them, times the weights."""

    kind = "term-values"

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return True

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
