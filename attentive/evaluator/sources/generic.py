"""Any model the term decomposition can evaluate (AdaBoost's weak learners, kernel models on
sparse rows with dense support vectors, ...): blocks from
:meth:`attentive.terms.TermDecomposition.term_values`."""

from __future__ import annotations

from attentive.evaluator.sources import GENERIC, register_source
from attentive.evaluator.sources.base import TermSource

__all__ = ["TermValuesSource"]


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
