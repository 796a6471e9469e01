"""Centering, order and partial scores (SPEC §1): the walk ``S_t(x)`` of one example.

A :class:`Walk` fixes the per-term means ``μ_i`` (from a reference set, never from the evaluated
examples), the permutation ``π`` and hence the offset ``c = b + Σ_i w_i μ_i``, so that
``f(x) = c + S_n(x)`` with ``S_t(x) = Σ_{k≤t} w_{π(k)} (h_{π(k)}(x) − μ_{π(k)})``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from attentive.errors import InvalidParameterError
from attentive.terms import TermDecomposition

__all__ = [
    "CENTERINGS",
    "ORDERS",
    "REFERENCE_WALKS",
    "PartialSums",
    "Walk",
    "WalkSteps",
    "make_order",
    "make_walk",
    "reference_mask",
    "row_chunks",
    "term_means",
]

CENTERINGS = ("positive", "all", "none")
ORDERS = ("random", "given", "weight")
#: How the reference (training) examples are walked for the statistics: see Walk.leave_own_out.
REFERENCE_WALKS = ("auto", "leave-one-out", "in-sample")

# Rows of reference data processed at once when accumulating statistics: bounds memory at
# about _CHUNK × n_terms × 8 bytes.
_CHUNK_ELEMENTS = 4_000_000


def row_chunks(n_rows: int, n_terms: int):
    step = max(1, _CHUNK_ELEMENTS // max(1, n_terms))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def reference_mask(y_ref, positive_label, centering: str) -> np.ndarray:
    """Which reference examples form R for ``centering`` (SPEC §1).

    ``positive`` keeps the positive class; ``all`` and ``none`` keep every example (for ``none``
    the means are zero, and R is still what the variance estimators average over).
    """
    if centering not in CENTERINGS:
        raise InvalidParameterError(f"centering must be one of {CENTERINGS}, got {centering!r}.")
    y_ref = np.asarray(y_ref)
    if centering == "positive":
        mask = y_ref == positive_label
        if not mask.any():
            raise InvalidParameterError(
                f"centering='positive' needs reference examples of the positive class "
                f"{positive_label!r}, but the reference set has none."
            )
        return mask
    return np.ones(y_ref.shape[0], dtype=bool)


def term_means(terms: TermDecomposition, X_ref_prepared) -> np.ndarray:
    """``μ_i`` = mean of ``h_i`` over the (prepared) reference examples, chunked over rows."""
    n = terms.n_terms
    m = X_ref_prepared.shape[0]
    if m == 0:
        raise InvalidParameterError("the reference set for centering is empty.")
    total = np.zeros(n)
    for rows in row_chunks(m, n):
        total += terms.term_values(X_ref_prepared[rows]).sum(axis=0)
    return total / m


def seeded_rng(random_state) -> np.random.Generator:
    """numpy's generator for ``random_state`` (None, a whole number ≥ 0, a RandomState or a
    Generator, which is returned as it is), with a message that names the parameter."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError):
        # numpy's own message ("SeedSequence expects int ...") does not say which parameter.
        raise InvalidParameterError(
            "random_state (the seed of the terms' order and of a calibration split) must be "
            "None, a whole number ≥ 0, a numpy RandomState or a numpy Generator, got "
            f"{random_state!r}."
        ) from None


def make_order(n_terms: int, order: str, weights=None, random_state=None) -> np.ndarray:
    """The permutation ``π`` of the terms (SPEC §1).

    ``random``: a uniformly random permutation seeded by ``random_state`` (the paper);
    ``given``: as stored; ``weight``: by ``|w_i|`` descending (stable).
    """
    if order == "random":
        return seeded_rng(random_state).permutation(n_terms)
    if order == "given":
        return np.arange(n_terms)
    if order == "weight":
        if weights is None:
            raise InvalidParameterError("order='weight' needs the term weights.")
        return np.argsort(-np.abs(np.asarray(weights)), kind="stable")
    raise InvalidParameterError(f"order must be one of {ORDERS}, got {order!r}.")


@dataclass(frozen=True)
class WalkSteps:
    """A chunk of walks before their running sums: what every walk gives its reference
    statistics, whether it starts at 0 (:class:`Walk`) or at a sketch's score
    (:class:`attentive.sketch.SketchedWalk`).

    ``S_t(x) = start(x) + Σ_{k≤t} weights[k] · centred[x, k]``.

    Attributes
    ----------
    start : ndarray (rows,)
        ``S_0(x)``: 0 for a plain walk.
    centred : ndarray (rows, n_terms)
        The centred term values in walk order: ``X_{π(k)}(x) = h_{π(k)}(x) − μ_{π(k)}`` for a
        plain walk, ``ρ_{π(k)}(x) − μ^ρ_{π(k)}`` for a sketched one.
    weights : ndarray (n_terms,)
        ``w_{π(k)}``.
    mass : ndarray (rows, n_terms) or None
        ``|w_{π(k)}| h_{π(k)}(x)`` (exact, uncentred), when asked for: the running mass's steps.
    """

    start: np.ndarray
    centred: np.ndarray
    weights: np.ndarray
    mass: np.ndarray | None = None

    def contributions(self) -> np.ndarray:
        """``w_{π(k)} X_{π(k)}(x)`` (a new array)."""
        return self.centred * self.weights

    def partial_scores(self) -> np.ndarray:
        """``S_t``, column ``t − 1``, computed in place of ``centred`` (which it returns)."""
        S = self.centred
        S *= self.weights
        np.cumsum(S, axis=1, out=S)
        if self.start.any():
            S += self.start[:, None]
        return S

    def partial_masses(self) -> np.ndarray:
        """``A_t``, column ``t − 1``, computed in place of ``mass`` (which it returns)."""
        return np.cumsum(self.mass, axis=1, out=self.mass)


class PartialSums:
    """A walk's partial scores and running masses, from its :meth:`steps` (one
    :class:`WalkSteps` per chunk of rows): what the plain walk and the sketched walk share."""

    def partial_scores(
        self,
        X,
        *,
        prepared: bool = False,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
    ) -> np.ndarray:
        """All partial scores: column ``t-1`` holds ``S_t(x)``, shape (n_examples, n_terms).

        ``leave_own_out``, ``own``: walks of reference examples without their own term
        (:meth:`Walk.leave_own_out`).
        """
        Xp = X if prepared else self.prepare(X)
        return self.steps(Xp, leave_own_out=leave_own_out, own=own).partial_scores()

    def partial_scores_and_masses(
        self,
        X,
        *,
        prepared: bool = False,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`partial_scores` and the running masses ``A_t = Σ_{k≤t} |w_{π(k)}|
        h_{π(k)}(x)`` (exact term values, uncentred) from one computation of the terms."""
        Xp = X if prepared else self.prepare(X)
        steps = self.steps(Xp, leave_own_out=leave_own_out, own=own, masses=True)
        return steps.partial_scores(), steps.partial_masses()


@dataclass(frozen=True)
class Walk(PartialSums):
    """A model's terms with their centering and order fixed.

    Attributes
    ----------
    terms : TermDecomposition
    mu : ndarray of shape (n_terms,)
        ``μ_i`` indexed like the model's terms (not permuted).
    order : ndarray of shape (n_terms,)
        ``π``: position ``k`` of the walk evaluates term ``order[k]``.
    """

    terms: TermDecomposition
    mu: np.ndarray
    order: np.ndarray
    ordered_weights: np.ndarray = field(init=False, repr=False)
    ordered_mu: np.ndarray = field(init=False, repr=False)
    #: ``S_0 = 0`` for every example (a sketched walk starts at the sketch's score instead).
    starts_at_zero: ClassVar[bool] = True

    def __post_init__(self):
        w = np.ascontiguousarray(self.terms.weights[self.order])
        m = np.ascontiguousarray(self.mu[self.order])
        w.flags.writeable = False
        m.flags.writeable = False
        object.__setattr__(self, "ordered_weights", w)
        object.__setattr__(self, "ordered_mu", m)

    @property
    def n_terms(self) -> int:
        return self.terms.n_terms

    @property
    def ordered_centres(self) -> np.ndarray:
        """What each walk position's term is centred by: ``μ_{π(k)}``."""
        return self.ordered_mu

    @property
    def offset(self) -> float:
        """``c = b + Σ_i w_i μ_i``, so that ``f(x) = c + S_n(x)``."""
        return float(self.terms.intercept + self.terms.weights @ self.mu)

    def theta_s(self, theta: float) -> float:
        """The decision threshold in S space, ``θ_S = θ − c``."""
        return float(theta) - self.offset

    def prepare(self, X):
        return self.terms.prepare(X)

    def contributions(
        self,
        X_prepared,
        start: int = 0,
        stop: int | None = None,
        *,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
    ) -> np.ndarray:
        """``w_{π(k)} X_{π(k)}(x)`` for walk positions ``k = start .. stop-1`` (0-based).

        ``leave_own_out``, ``own``: for reference (training) examples, see :meth:`leave_own_out`.
        """
        stop = self.n_terms if stop is None else stop
        idx = self.order[start:stop]
        values = self.terms.term_values(X_prepared, idx)
        if leave_own_out:
            self.leave_own_out(X_prepared, values, start, own)
        values -= self.ordered_mu[start:stop]
        values *= self.ordered_weights[start:stop]
        return values

    def steps(
        self,
        X_prepared,
        *,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
        masses: bool = False,
    ) -> WalkSteps:
        """The walks of prepared rows before their running sums (:class:`WalkSteps`): start 0,
        centred term values ``h_{π(k)}(x) − μ_{π(k)}``, and with ``masses`` the steps
        ``|w_{π(k)}| h_{π(k)}(x)`` of the running mass. ``leave_own_out``, ``own``: as in
        :meth:`contributions`."""
        values = self.terms.term_values(X_prepared, self.order)
        if leave_own_out:
            self.leave_own_out(X_prepared, values, 0, own)
        mass = values * np.abs(self.ordered_weights) if masses else None
        values -= self.ordered_mu
        return WalkSteps(np.zeros(values.shape[0]), values, self.ordered_weights, mass)

    def leave_own_out(
        self, X_prepared, values: np.ndarray, start: int = 0, own: np.ndarray | None = None
    ) -> np.ndarray:
        """Set to 0, in place, the value ``h_i(x_i)`` of each example's own term (the support
        vector that is the example itself) among the walk positions
        ``start .. start + values.shape[1] − 1``; returns ``values``.

        ``own`` gives each row's own term index (−1: none), as the model's ``support_`` says when
        it was fitted on these rows; without it, rows are matched to the support vectors by
        value (:meth:`TermDecomposition.own_terms`).

        The walk of a training example that is a support vector holds ``w_i K(x_i, x_i)``, a
        term no new example has: on an RBF SVM it pins most training scores to the margin
        (``f = ±1``), so reference statistics taken from those walks describe the training set,
        not new data. Without it, ``f(x_i) − w_i K(x_i, x_i)`` is the classic leave-one-out
        estimate of the example's score (Jaakkola & Haussler), and the walk is one a new example
        could have.
        """
        own = self.terms.own_terms(X_prepared) if own is None else np.asarray(own)
        rows = np.flatnonzero(own >= 0)
        if rows.size:
            pos = self.positions[own[rows]] - start
            inside = (pos >= 0) & (pos < values.shape[1])
            values[rows[inside], pos[inside]] = 0.0
        return values

    @property
    def positions(self) -> np.ndarray:
        """``π⁻¹``: the walk position (0-based) of each of the model's terms."""
        pos = np.empty_like(self.order)
        pos[self.order] = np.arange(self.order.size)
        return pos

    def partial_masses(
        self,
        X,
        *,
        prepared: bool = False,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
    ) -> np.ndarray:
        """All running masses: column ``t-1`` holds ``A_t(x) = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)``
        (uncentred), shape (n_examples, n_terms). For an RBF SVM, how much kernel mass near
        ``x`` the walk has met; with ``S_t`` it is the sums of the positive- and negative-weight
        terms separately. What a rule with a ``mass`` coefficient stops on besides ``S_t``
        (:class:`attentive.boundaries.Boundary`)."""
        return self.partial_scores_and_masses(
            X, prepared=prepared, leave_own_out=leave_own_out, own=own
        )[1]


def make_walk(
    terms: TermDecomposition,
    X_ref,
    y_ref,
    *,
    centering: str = "positive",
    order: str = "random",
    random_state=None,
) -> tuple[Walk, np.ndarray]:
    """Fix centering (from the reference set) and order.

    Returns the walk and the boolean mask of reference examples that form R.
    """
    mask = reference_mask(y_ref, terms.classes[1], centering)
    perm = make_order(terms.n_terms, order, terms.weights, random_state)
    if centering == "none":
        mu = np.zeros(terms.n_terms)
    else:
        Xp = terms.prepare(X_ref)
        mu = term_means(terms, Xp[np.flatnonzero(mask)])
    mu.flags.writeable = False
    return Walk(terms=terms, mu=mu, order=perm), mask
