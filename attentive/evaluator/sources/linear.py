"""Dense linear models: term ``k`` is feature ``π(k)``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.sources import register_source
from attentive.evaluator.sources.base import TermSource

__all__ = ["DenseLinearSource", "linear_totals"]


def linear_totals(walk, plan, X, budget: int) -> np.ndarray:
    """A linear model's sum over the first ``B`` walk positions of rows ``X`` (dense or sparse):
    one product with the weights of those features."""
    weights = walk.terms.weights
    if budget < plan.n_terms:
        weights = np.zeros_like(weights)
        idx = plan.order[:budget]
        weights[idx] = walk.terms.weights[idx]
    return np.asarray(X @ weights, dtype=np.float64).ravel()


@register_source
class DenseLinearSource(TermSource):
    """Columns put in walk order once; a block is a slice of them times the weights."""

    kind = "linear"
    row_cost = 2.0
    # A full evaluation is one product with the weights (~0.5 ns a term); a block multiplies a
    # slice of columns, then the walk sums and compares (~1 ns a term more).
    term_cost = 3.0

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return walk.terms.kind == "linear" and not sp.issparse(X)

    def __init__(self, walk, plan, X):
        super().__init__(walk, plan, np.asarray(X, dtype=np.float64)[:, plan.order])

    def block(self, start, stop, out):
        np.multiply(self.X[:, start:stop].T, self.plan.ordered_weights[start:stop, None], out)

    @classmethod
    def tile_totals(cls, walk, plan, X, budget, final=None):
        return linear_totals(walk, plan, X, budget), None
