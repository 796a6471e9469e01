"""The interface every term source implements.

A term source is one kind of term (a support vector of an RBF model on dense rows, a feature of a
dense linear model, a weak learner, ...): it owns its precomputed arrays (built once per walk,
:meth:`TermSource.arrays`), holds the rows of the examples still walking, writes a block of
their terms (:meth:`TermSource.block`), drops rows (:meth:`TermSource.keep`), sums the first
``B`` terms of every row (:meth:`TermSource.totals`: full and budgeted evaluation), and states
what a term and a row cost. The walk (:mod:`attentive.evaluator.walk`), the pilot
(:mod:`attentive.evaluator.pilot`) and full evaluation never know which kind they hold.

To add a kind of term: subclass :class:`TermSource` in a module of
:mod:`attentive.evaluator.sources`, implement :meth:`~TermSource.usable` and
:meth:`~TermSource.block`, decorate it with :func:`attentive.evaluator.sources.register_source`
and import the module in that package's ``__init__`` (the import order is the routing order).
``tests/test_term_source_template.py`` is the test every source passes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from attentive.evaluator.plan import MAX_SURVIVAL_BLOCK, Thresholds, WalkPlan
from attentive.walk import Walk

__all__ = ["NotUsable", "TermSource"]


class NotUsable(Exception):
    """Raised by a source's constructor when the rows it was given turn out not to suit it (rows
    off the integer grid, say): the router takes the next source."""


class TermSource(ABC):
    """Weighted terms of the rows a walk holds, a block of walk positions at a time.

    Class attributes
    ----------------
    kind : str
        The name it is registered and reported under.
    magnitudes : bool
        :meth:`block` writes ``|w_{π(k)}| h_{π(k)}(x)`` (non-negative; the walk applies the
        weights' signs while summing, ``plan.weight_signs``) instead of ``w_{π(k)} h_{π(k)}(x)``.
    certified : bool
        Terms computed in reduced precision, each within :meth:`relative_error` of itself (a
        magnitudes source): the walk stops only where that bound makes the crossing certain and
        hands what it leaves unsure to :attr:`exact`. A source may set it per instance (exact
        on some rows, certified on others).
    exact : type[TermSource] or None
        For a certified source: the double-precision source of the same terms.
    walks_itself : bool
        The source finds its stops without blocks (:meth:`walk_chunk`), as sparse linear models do.
    reads_ahead : bool
        The constructor takes ``ahead_positions``: the number of leading walk positions (the
        walk's first blocks, :func:`attentive.evaluator.blocked._read_ahead`) whose products it
        computes as it reads the rows in, while each tile of them is in cache, instead of
        reading every row again for those blocks.

    Instance attributes (costs, in units of one term of a full evaluation)
    ---------------------------------------------------------------------
    term_cost : float
        A term computed in a walk's block, its running sum and comparisons included.
    mass_cost : float
        What a rule on the running mass adds to a walk's term.
    row_cost : float
        Holding a row through one more block beyond its terms (gathering it at a compaction,
        reading it in the block's product).
    max_block : int
        The longest block a survival schedule may give it.
    start_cost : float
        A row's fixed cost before its first block (a sketch's features); 0 by default.
    term_ns, prep_ns : float
        A full evaluation's term, and a row's preparation (conversion, norms: what walking and
        full evaluation with this source both pay first), in ns: what the pilot compares a walk
        with one source against full evaluation with another by.
    full_term_ns : float or None
        A term of full evaluation by :meth:`tile_totals`, in ns, where it differs from
        ``term_ns`` (a source that finishes its terms in float32 there).
    held_ns : float
        What a row costs a walk that holds it from its start beyond its preparation and its
        blocks, in ns (what full evaluation does not pay: the RBF grid and float32 sources' rows
        over more than 64 columns, :data:`attentive.evaluator.sources.rbf.HELD_COLUMN_NS`); 0 by
        default.
    """

    kind: ClassVar[str]
    magnitudes: ClassVar[bool] = False
    certified: ClassVar[bool] = False
    exact: ClassVar[type[TermSource] | None] = None
    walks_itself: ClassVar[bool] = False
    reads_ahead: ClassVar[bool] = False
    holds_wide_rows: ClassVar[bool] = False  # held_ns priced (dense_costs): sources measured

    term_cost: float = 1.2
    mass_cost: float = 0.2
    row_cost: float = 4.0
    start_cost: float = 0.0  # a row's fixed cost before any block (a sketch's features)
    term_ns: float = 2.0  # a full evaluation's term, in ns (what a wrapper's own costs compare to)
    prep_ns: float = 0.0  # a row's preparation before any term, in ns
    full_term_ns: float | None = None  # a term of full evaluation, ns, where not term_ns
    held_ns: float = 0.0  # a row held by a walk from its start, beyond prep and blocks, ns
    max_block: int = MAX_SURVIVAL_BLOCK

    @classmethod
    @abstractmethod
    def usable(cls, walk: Walk, plan: WalkPlan, X, precision: str) -> bool:
        """Whether this source serves ``walk`` on prepared rows ``X`` at ``precision``
        (``"single"`` or ``"double"``)."""

    @classmethod
    def serves_full(cls, X) -> bool:
        """Whether full evaluation takes this source for rows ``X`` where it is usable (it may
        leave them to a later one that evaluates every term faster). True by default. Asked
        before :meth:`usable`, on any prepared rows: cheap, and assuming nothing of them."""
        return True

    @classmethod
    def alternatives(cls, X) -> tuple[str, ...]:
        """Kinds of other sources that walk rows like ``X`` routed here to the same stops,
        sides and labels (each certified or exact): where a pilot prices walks, the evaluator
        walks with whichever it predicts cheapest. None by default (an empty tuple). Cheap,
        as :meth:`serves_full`."""
        return ()

    @classmethod
    def arrays(cls, walk: Walk, plan: WalkPlan):
        """What the source precomputes once per walk (support vectors in walk order, say);
        None by default. Kept by the plan under the source's :attr:`kind`."""
        return None

    def __init__(self, walk: Walk, plan: WalkPlan, X):
        self.walk = walk
        self.plan = plan
        self.X = X

    @property
    def n_rows(self) -> int:
        """Rows held."""
        return self.X.shape[0]

    def start(self) -> np.ndarray | None:
        """``U_0`` of each row held (None: 0 for every row)."""
        return None

    @abstractmethod
    def block(self, start: int, stop: int, out: np.ndarray) -> None:
        """Write the terms at walk positions ``[start, stop)`` of the rows held into ``out``,
        shape ``(stop − start, rows held)``."""

    def masses(self, start: int, stop: int, H: np.ndarray, out: np.ndarray | None = None):
        """``|w_{π(k)}| h_{π(k)}(x)`` of the block :meth:`block` just wrote into ``H``: what the
        running mass ``A_t`` adds up (a rule on the mass, a certified source's band). Written
        into ``out`` if given; else ``H`` itself where the terms are their magnitudes."""
        if self.magnitudes:
            if out is None:
                return H
            np.copyto(out, H)
            return out
        return np.multiply(H, self.plan.weight_signs[start:stop, None], out=out)

    def keep(self, idx: np.ndarray) -> None:
        """Hold only rows ``idx`` (indices among the rows held, increasing)."""
        self.X = self.X[idx]

    def restrict_pays(self, remaining: float) -> bool:
        """Whether a compacting copy of the rows held pays now by itself (it does when the copy
        makes later blocks cheaper), for walks expected to go on ``remaining`` more positions."""
        return False

    # -- certified sources ---------------------------------------------------------------------
    def relative_error(self) -> np.ndarray:
        """Per row held: a bound on the relative error of each term :meth:`block` writes."""
        raise NotImplementedError

    def band_split(self):
        """A tighter bound than :meth:`relative_error`'s where terms differ in their error:
        ``(base, per_weight, weights)``, each term ``k`` of a row held within ``(base +
        per_weight · weights[k]) |w| K̂`` of itself (``base``, ``per_weight`` per row,
        ``weights`` per walk position; never above :meth:`relative_error`); None where every
        term takes :meth:`relative_error`'s bound."""
        return None

    def row_allowance(self):
        """A part of the allowance that differs by row: ``(per_row, per_position)``, adding
        ``per_row[x] · per_position[t]`` to the band of row ``x`` at position ``t`` (None: no
        such part)."""
        return None

    def allowance(self, thr: Thresholds, final: float | None) -> np.ndarray:
        """Per position ``1..n``: double-precision rounding to add to a band on ``U_t``, for
        the rows held with a finite :meth:`relative_error` (the others are walked again in
        double precision)."""
        raise NotImplementedError

    def exact_source(self, X) -> TermSource:
        """The same terms of rows ``X`` in double precision (what a certified walk leaves unsure
        is walked again with it)."""
        return type(self).exact(self.walk, self.plan, X)

    def exact_totals(self, X, budget: int) -> np.ndarray:
        """``U_B`` of rows ``X`` in double precision."""
        return type(self).exact.tile_totals(self.walk, self.plan, X, budget)[0]

    # -- sources that walk without blocks ------------------------------------------------------
    def walk_chunk(self, thr: Thresholds):
        """Stops of the rows held (:attr:`walks_itself`): ``(at, side, U_at, U_n)`` per row, or
        None where this rule is walked by blocks after all."""
        raise NotImplementedError

    # -- full and budgeted evaluation ----------------------------------------------------------
    @classmethod
    def tile_totals(cls, walk: Walk, plan: WalkPlan, X, budget: int, final: float | None = None):
        """``U_B = U_0 + Σ_{k≤B} w_{π(k)} h_{π(k)}(x)`` of every row of a tile ``X``, and for a
        certified source a bound on each one's error (else None); ``final`` is the threshold
        ``U_B`` is compared with, if any (for the bound's rounding allowance). Default: one block
        of ``B`` positions, summed with the weights' signs (a magnitudes source) or as it is.
        Raises :class:`NotUsable` as the constructor does."""
        source = cls(walk, plan, X)
        out = np.empty((budget, source.n_rows))
        source.block(0, budget, out)
        if source.magnitudes:
            U = plan.weight_signs[:budget] @ out
        else:
            U = np.ones(budget) @ out
        start = source.start()
        if start is not None:
            U += start
        if not source.certified:
            return U, None
        rho = source.relative_error()
        # A row without a useful band (an infinite bound) is recomputed in double precision.
        band = np.full(rho.shape, np.inf)
        ok = np.isfinite(rho)
        band[ok] = rho[ok] * (np.ones(budget) @ out[:, ok])
        band[ok] += source.allowance(Thresholds(None, None), final)[budget - 1]
        return U, band
