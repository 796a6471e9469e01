"""The sketched walk (SPEC §3b): start at the sketch's score, then walk what the sketch got wrong.

With a sketch ``h̃_i`` of every term (:class:`attentive.sketch.NystromSketch`), the residuals
``ρ_i(x) = h_i(x) − h̃_i(x)`` are centred by their own means over the reference set R of the
plain walk's ``μ``: ``μ^ρ_i = μ_i − μ̃_i``, ``μ̃_i = mean_R h̃_i = ā · b_i`` (``ā`` the mean of the
sketch's row features over R). Then

    S^ρ_0(x) = F̃(x) = Σ_i w_i (h̃_i(x) − μ̃_i) = (a(x) − ā) · β,
    S^ρ_t(x) = F̃(x) + Σ_{k≤t} w_{π(k)} (ρ_{π(k)}(x) − μ^ρ_{π(k)}),

in the order π of the plain walk it holds, so ``S^ρ_n = S_n``: the same offset c, the same θ_S,
the same full decision. What changes is the path: the residual terms are small where the sketch
is good, so the walk starts near its end and wanders little (docs/method.md).
:func:`residual_order` gives the same walk over a plain walk of another order, the residual
terms that leave the least uncertain remainder first (what the estimator keeps by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from attentive.errors import InvalidParameterError
from attentive.sketch.nystrom import NystromSketch, fit_sketch
from attentive.walk import PartialSums, Walk, WalkSteps, reference_mask, row_chunks

__all__ = [
    "SKETCH_ORDERS",
    "SketchedWalk",
    "make_sketched_walk",
    "residual_order",
    "sketch_walk",
]

#: How a sketched walk orders its residual terms: ``"residual"``, the order that lowers the
#: spread of what remains fastest over reference rows (:func:`residual_order`); ``"walk"``, the
#: plain walk's order π (SPEC §3b as written).
SKETCH_ORDERS = ("residual", "walk")

#: How far :func:`residual_order` shrinks the residuals' covariances towards none (their
#: covariance matrix towards its diagonal: ``(1 − λ) G + λ diag G``). Measured on MNIST 3 vs 8,
#: 7 vs 9 and 8 vs rest (k = 4, 8, 16; test rows, order fixed on the fit rows): every λ from
#: 0.3 to 0.7 gave held-out oracle floors below both ends; λ = 0.5 2-36 % below λ = 0 (the
#: covariances of a few hundred rows taken at face value) and 22-66 % below λ = 1 (each term's
#: own spread alone).
ORDER_SHRINKAGE = 0.5
#: The share of the reference rows (a seeded sample, at most ``max_rows``) the estimator's residual
#: order is chosen on (:func:`attentive.sketch.choose_sketch`). The greedy choice favours, for the
#: late positions, terms whose residuals happen to be small on the rows it sees, so on those rows
#: the remainder's spread is understated: on MNIST 2 vs 5 behind a StandardScaler, new rows' spread
#: was 1.1-1.4 times the reference walks' past the first terms when the order was chosen on every
#: reference row (1.03 in the plain walk's order), and the rules stopped too soon — every sketched
#: rule disagreed on 2 of 473 calibration rows at z = 6, and the classifier fell back to full
#: evaluation. Chosen on half of them, the other half walks it as new rows do: no fallback there,
#: and the work target's ratios on twenty pixel problems within -0.02 to +0.04 of what they were
#: (docs/method.md, "The residual order").
ORDER_ROWS_SHARE = 0.5
#: Whether :func:`residual_order` also counts each support vector as a row of its sample, walked
#: with its own term (``w_i (1 − h̃_i(s_i))`` and the rest). Fit rows are walked without their own
#: term, as no new row is the support vector itself; but a new row close to one holds much of its
#: term, and a support vector with no fit row near it shows a small residual on every fit row, so
#: the order put it late. On MNIST 3 vs 5 behind a StandardScaler (split 2, half the training
#: rows held out), the calibration rows that every sketched rule got wrong even at z = 6 each had
#: one such term late in the walk: h = 0.47, 0.21 and 0.09 at positions 264 and 271 of 305, h̃
#: near 0. Counted, those terms walk early (docs/method.md, "The support vectors as rows";
#: docs/results.md for the work targets before and after). Where there are more support vectors
#: than reference rows sampled, a seeded sample of as many.
SUPPORT_ROWS = True
#: Above this many terms :func:`residual_order` orders by each term's own spread alone (the
#: covariance matrix takes n² doubles, and each chunk's product as many again: 2 × 128 MB at
#: 4,096 terms, 2 × 3.2 GB at 20,000).
MAX_COVARIANCE_TERMS = 4096


@dataclass(frozen=True)
class SketchedWalk(PartialSums):
    """A plain :class:`attentive.walk.Walk` (its terms, ``μ``, order ``π``, offset) walked after
    a sketch: the same reference API (``steps``, ``partial_scores``,
    ``partial_scores_and_masses``, ``contributions``, ``offset``, ``theta_s``), with partial
    scores ``S^ρ_t`` that start at the sketch's score (:meth:`start_scores`) and add residual
    terms, and running masses of the exact terms (in this walk's order).

    Attributes
    ----------
    walk : Walk
        The plain walk whose order π this walk follows (the estimator's own plain walk, or the
        same terms and ``μ`` in the order :func:`residual_order` gives): its ``S_n`` is this
        walk's ``S^ρ_n``.
    sketch : NystromSketch
    feature_mean : ndarray (m,)
        ``ā``, the mean of the sketch's row features over the reference set R of the plain
        walk's ``μ`` (zeros when the plain walk is not centred).
    mu_rho : ndarray (n_terms,)
        ``μ^ρ_i = μ_i − ā · b_i``, in the model's order of terms.
    beta : ndarray (m,)
        ``β = Σ_i w_i b_i``.
    """

    walk: Walk
    sketch: NystromSketch
    feature_mean: np.ndarray = field(repr=False)
    mu_rho: np.ndarray = field(init=False, repr=False)
    beta: np.ndarray = field(init=False, repr=False)
    ordered_mu_rho: np.ndarray = field(init=False, repr=False)
    ordered_factors: np.ndarray = field(init=False, repr=False)
    #: The walk starts at the sketch's score ``F̃(x)``, not at 0.
    starts_at_zero: ClassVar[bool] = False

    def __post_init__(self):
        walk, sketch = self.walk, self.sketch
        if sketch.n_terms != walk.n_terms:
            raise InvalidParameterError(
                f"the sketch was fitted for {sketch.n_terms} terms, the walk has {walk.n_terms}."
            )
        B = sketch.term_factors
        mu_rho = walk.mu - B @ self.feature_mean
        derived = {
            "mu_rho": mu_rho,
            "beta": walk.terms.weights @ B,
            "ordered_mu_rho": np.ascontiguousarray(mu_rho[walk.order]),
            "ordered_factors": np.ascontiguousarray(B[walk.order]),
        }
        for name, value in derived.items():
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    # What the plain walk fixes, unchanged.
    @property
    def terms(self):
        return self.walk.terms

    @property
    def n_terms(self) -> int:
        return self.walk.n_terms

    @property
    def mu(self) -> np.ndarray:
        return self.walk.mu

    @property
    def order(self) -> np.ndarray:
        return self.walk.order

    @property
    def ordered_weights(self) -> np.ndarray:
        return self.walk.ordered_weights

    @property
    def positions(self) -> np.ndarray:
        return self.walk.positions

    @property
    def ordered_centres(self) -> np.ndarray:
        """What each walk position's residual is centred by: ``μ^ρ_{π(k)}``."""
        return self.ordered_mu_rho

    @property
    def offset(self) -> float:
        """``c``, the plain walk's: ``f(x) = c + S^ρ_n(x)``."""
        return self.walk.offset

    def theta_s(self, theta: float) -> float:
        return self.walk.theta_s(theta)

    def prepare(self, X):
        return self.walk.prepare(X)

    def leave_own_out(self, X_prepared, values, start: int = 0, own=None) -> np.ndarray:
        return self.walk.leave_own_out(X_prepared, values, start, own)

    # The sketch.
    @property
    def cost(self) -> float:
        """A row's sketch in full-evaluation units (:func:`attentive.sketch.sketch_cost`)."""
        return self.sketch.cost

    @property
    def walked_term_cost(self) -> float:
        """A walked term's cost in plain-walk terms, ``1 + m/d``."""
        return self.sketch.walked_term_cost

    def _own(self, X_prepared, leave_own_out: bool, own) -> np.ndarray | None:
        if not leave_own_out:
            return None
        return self.terms.own_terms(X_prepared) if own is None else np.asarray(own)

    def _start(self, a: np.ndarray, own: np.ndarray | None) -> np.ndarray:
        start = a @ self.beta
        start -= self.feature_mean @ self.beta
        if own is not None:
            # Leave-one-out: the own term's h̃ is 0 too, so F̃ loses w_own h̃_own(x).
            rows = np.flatnonzero(own >= 0)
            i = own[rows]
            own_sketch = np.einsum("ij,ij->i", a[rows], self.sketch.term_factors[i])
            start[rows] -= self.terms.weights[i] * own_sketch
        return start

    def start_scores(
        self, X, *, prepared: bool = False, leave_own_out: bool = False, own=None
    ) -> np.ndarray:
        """``S^ρ_0(x) = F̃(x) = (a(x) − ā) · β``: the sketch's estimate of ``S_n`` (so
        ``c + F̃(x)`` estimates ``f(x)``), from the row's sketch alone: ``k·d + m·k`` multiply-
        adds and m exponentials, nothing per term. ``leave_own_out``: the own term's ``h̃`` is
        0 (:meth:`attentive.walk.Walk.leave_own_out`)."""
        Xp = X if prepared else self.prepare(X)
        return self._start(self.sketch.features(Xp), self._own(Xp, leave_own_out, own))

    def _residuals(self, X_prepared, a, own, start=0, stop=None, masses=False):
        """``ρ_{π(k)}(x) − μ^ρ_{π(k)}`` for walk positions ``start .. stop − 1`` from the rows'
        features ``a``, the own terms' ``h`` and ``h̃`` set to 0 (``own``: each row's own term
        or −1; None: none left out); with ``masses`` also ``|w_{π(k)}| h_{π(k)}(x)``."""
        stop = self.n_terms if stop is None else stop
        values = self.terms.term_values(X_prepared, self.order[start:stop])
        sketched = a @ self.ordered_factors[start:stop].T
        if own is not None:
            self.walk.leave_own_out(X_prepared, values, start, own)
            self.walk.leave_own_out(X_prepared, sketched, start, own)
        mass = values * np.abs(self.ordered_weights[start:stop]) if masses else None
        values -= sketched
        values -= self.ordered_mu_rho[start:stop]
        return values, mass

    def steps(
        self,
        X_prepared,
        *,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
        masses: bool = False,
    ) -> WalkSteps:
        """The sketched walks of prepared rows before their running sums: start ``F̃(x)``,
        centred residuals ``ρ_{π(k)}(x) − μ^ρ_{π(k)}``, and with ``masses`` the steps
        ``|w_{π(k)}| h_{π(k)}(x)`` of the running mass (exact values, as the plain walk's).
        ``leave_own_out``: both ``h`` and ``h̃`` of each row's own term are 0, so the own
        residual is 0 and ``S^ρ_n`` is the plain walk's leave-one-out ``S_n``."""
        own = self._own(X_prepared, leave_own_out, own)
        a = self.sketch.features(X_prepared)
        centred, mass = self._residuals(X_prepared, a, own, masses=masses)
        return WalkSteps(self._start(a, own), centred, self.ordered_weights, mass)

    def contributions(
        self,
        X_prepared,
        start: int = 0,
        stop: int | None = None,
        *,
        leave_own_out: bool = False,
        own: np.ndarray | None = None,
    ) -> np.ndarray:
        """``w_{π(k)} (ρ_{π(k)}(x) − μ^ρ_{π(k)})`` for walk positions ``k = start .. stop-1``."""
        own = self._own(X_prepared, leave_own_out, own)
        a = self.sketch.features(X_prepared)
        values, _ = self._residuals(X_prepared, a, own, start, stop)
        values *= self.ordered_weights[start:stop]
        return values

    def partial_masses(
        self, X, *, prepared: bool = False, leave_own_out: bool = False, own=None
    ) -> np.ndarray:
        """The running masses of the exact terms in this walk's order (its plain walk's: the
        sketch does not change them)."""
        return self.walk.partial_masses(X, prepared=prepared, leave_own_out=leave_own_out, own=own)


def sketch_walk(walk: Walk, sketch: NystromSketch, X_centring=None) -> SketchedWalk:
    """The sketched walk of ``walk`` with a fitted ``sketch``.

    ``X_centring``: the prepared rows of the reference set R that the plain walk's ``μ`` was
    taken from (the residuals are centred on the same rows); None when the walk is not centred
    (``μ = 0``: then ``μ^ρ = 0`` too).
    """
    if X_centring is None:
        if walk.mu.any():
            raise InvalidParameterError(
                "the walk is centred (μ ≠ 0): pass the reference rows its μ was taken from, so "
                "that the residuals are centred on the same rows."
            )
        mean = np.zeros(sketch.m)
    else:
        rows = X_centring.shape[0]
        if rows == 0:
            raise InvalidParameterError("the reference set for centering is empty.")
        total = np.zeros(sketch.m)
        for chunk in row_chunks(rows, sketch.m):
            total += sketch.features(X_centring[chunk]).sum(axis=0)
        mean = total / rows
    mean.flags.writeable = False
    return SketchedWalk(walk=walk, sketch=sketch, feature_mean=mean)


def residual_order(
    walk: SketchedWalk,
    X_prepared,
    *,
    leave_own_out: bool = False,
    own=None,
    max_rows: int = 2000,
    random_state=0,
    support_rows: bool | None = None,
) -> SketchedWalk:
    """The same sketched walk with its residual terms in the order that makes what remains of
    the walk least uncertain soonest.

    ``C``, the centred residual contributions ``w_i (ρ_i(x) − μ^ρ_i)`` of reference rows
    ``X_prepared`` (a seeded sample of at most ``max_rows``; ``leave_own_out``, ``own``: as
    :meth:`SketchedWalk.steps`) and, with ``support_rows`` (default :data:`SUPPORT_ROWS`), of
    the support vectors as rows that hold their own terms (a new row close to a support vector
    holds much of its term, a fit row walked without its own term none; a seeded sample of as
    many as the reference rows sampled, where there are more), has covariance ``G`` over those
    rows, shrunk towards its diagonal (:data:`ORDER_SHRINKAGE`). The order is greedy: each next
    position takes the term whose removal most lowers the variance of the remainder
    ``R_t = S^ρ_n − S^ρ_t``,
    ``Var(R − c_j) = Var R − 2 Cov(R, c_j) + G_jj`` (ties kept in the walk's order). Above
    :data:`MAX_COVARIANCE_TERMS` terms, by each term's own spread ``G_jj`` alone. The sketch,
    the centring and so ``S^ρ_n = S_n`` are unchanged; only the path is. Where the sketch is
    good, what it gets wrong is mostly a few support vectors, the same
    ones over many rows: walked first, the remainder's spread ``D_t`` falls much faster than
    under a random order (docs/method.md, "Sketched walks"). The rules of a sketched walk
    estimate their statistics per position from reference walks in this order, and
    calibration holds for any order fixed before it (SPEC §3).
    """
    rows = X_prepared.shape[0]
    if rows == 0:
        raise InvalidParameterError("residual_order needs at least one reference row.")
    pick = np.arange(rows)
    if rows > max_rows:
        rng = np.random.default_rng(random_state)
        pick = np.sort(rng.choice(rows, max_rows, replace=False))
    samples = [(X_prepared[pick], None if own is None else np.asarray(own)[pick], leave_own_out)]
    if SUPPORT_ROWS if support_rows is None else support_rows:
        support = np.asarray(walk.terms.support_vectors, dtype=np.float64)
        if support.shape[0] > pick.size:
            # Never more of them than rows: thousands of support vectors (dense-40's 3,664
            # against 2,000 rows) would outweigh the rows, and their n² residuals cost as much.
            rng = np.random.default_rng(random_state)
            support = support[np.sort(rng.choice(support.shape[0], pick.size, replace=False))]
        samples.append((support, None, False))
    n = walk.n_terms
    covariances = n <= MAX_COVARIANCE_TERMS
    sums, squares = np.zeros(n), np.zeros(n)
    G = np.zeros((n, n)) if covariances else None
    count = 0
    for Xs, own_s, left_out in samples:
        own_s = walk._own(Xs, left_out, own_s)
        count += Xs.shape[0]
        for chunk in row_chunks(Xs.shape[0], n):
            a = walk.sketch.features(Xs[chunk])
            values, _ = walk._residuals(Xs[chunk], a, None if own_s is None else own_s[chunk])
            values *= walk.ordered_weights
            sums += values.sum(axis=0)
            if covariances:
                G += values.T @ values
            else:
                squares += np.einsum("ij,ij->j", values, values)
    mean = sums / count
    if covariances:
        G /= count
        G -= np.outer(mean, mean)
        own_spread = np.diag(G).copy()
        G *= 1.0 - ORDER_SHRINKAGE
        G[np.diag_indices(n)] = own_spread
        positions = _greedy_order(G)
    else:
        positions = np.argsort(-(squares / count - mean**2), kind="stable")
    plain = walk.walk
    reordered = Walk(terms=plain.terms, mu=plain.mu, order=plain.order[positions])
    return SketchedWalk(walk=reordered, sketch=walk.sketch, feature_mean=walk.feature_mean)


def _greedy_order(G: np.ndarray) -> np.ndarray:
    """Positions, each next the one that most lowers the variance of the sum of those left:
    with ``G`` the covariance of the terms, the remainder ``R`` (all terms at first) loses
    ``2 Cov(R, c_j) − G_jj`` when term j is walked. ``argmax`` keeps the earliest among equals."""
    n = G.shape[0]
    cov = G.sum(axis=1)
    diagonal = np.diag(G).copy()
    left = np.ones(n, dtype=bool)
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        gain = np.where(left, 2.0 * cov - diagonal, -np.inf)
        j = int(np.argmax(gain))
        out[t] = j
        left[j] = False
        cov -= G[:, j]
    return out


def make_sketched_walk(
    walk: Walk,
    X_ref,
    y_ref,
    *,
    centering: str = "positive",
    k: int = 16,
    m: int = 64,
    landmarks: str = "kmeans++",
    random_state=0,
    corrected: bool = True,
) -> SketchedWalk:
    """Fit a sketch on the reference examples ``(X_ref, y_ref)`` (raw rows; all of them) and
    sketch ``walk``, whose ``μ`` was fitted on the same examples with ``centering``
    (:func:`attentive.walk.make_walk`). ``k``, ``m``, ``landmarks``, ``random_state``,
    ``corrected``: as :func:`attentive.sketch.fit_sketch`."""
    Xp = walk.prepare(X_ref)
    sketch = fit_sketch(
        walk.terms,
        Xp,
        k=k,
        m=m,
        landmarks=landmarks,
        random_state=random_state,
        corrected=corrected,
    )
    if centering == "none":
        return sketch_walk(walk, sketch, None)
    mask = reference_mask(y_ref, walk.terms.classes[1], centering)
    return sketch_walk(walk, sketch, Xp[np.flatnonzero(mask)])
