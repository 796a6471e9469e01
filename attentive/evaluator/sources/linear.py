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
    """The rows as they come; a block gathers its features' columns of the rows still walking
    and multiplies them by the weights. Nothing is copied up front: putting every column in walk
    order first (as this source did) cost more per row than a full evaluation, one product with
    the weights, so a walk that stopped at its first block took 5-7 times as long (2,000, 500
    and 60 features, 10,000 rows, one thread). Rows dropped are dropped from an index, not
    copied."""

    kind = "linear"
    # A full evaluation is one product with the weights: ~0.5 ns a term (60-2,000 features,
    # 10,000 rows, one thread). A block gathers a column of each row it holds (~1-2 ns a term),
    # multiplies, and the walk sums and compares (~1 ns more); a row carried through one more
    # block costs its index and the gather's start.
    term_ns = 0.5
    term_cost = 7.0
    row_cost = 8.0

    @classmethod
    def usable(cls, walk, plan, X, precision):
        return walk.terms.kind == "linear" and not sp.issparse(X)

    def __init__(self, walk, plan, X):
        super().__init__(walk, plan, np.asarray(X, dtype=np.float64))
        self.rows = None  # the rows held, as indices into X (None: every row)

    @property
    def n_rows(self) -> int:
        return self.X.shape[0] if self.rows is None else self.rows.size

    def keep(self, idx):
        self.rows = idx if self.rows is None else self.rows[idx]

    def block(self, start, stop, out):
        columns = self.plan.order[start:stop]
        part = self.X[:, columns] if self.rows is None else self.X[np.ix_(self.rows, columns)]
        np.multiply(part.T, self.plan.ordered_weights[start:stop, None], out)

    @classmethod
    def tile_totals(cls, walk, plan, X, budget, final=None):
        return linear_totals(walk, plan, X, budget), None
