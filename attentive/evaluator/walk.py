"""The blocked walk: a chunk of examples walked block of positions after block, only the walks
still active computed, the stops decided by :mod:`attentive.evaluator.crossing`.

Per block: the source's terms of the rows held (one product for a kernel), running sums (one
vector operation per position over all held walks), the crossing module's first crossings. A walk
that crosses is marked done (its sum becomes NaN, which no comparison crosses); the rows still
walking are gathered into a compact copy only when that costs less than carrying the finished ones
through the next block. A certified source's walk stops only where its error band makes the
crossing certain; :func:`settle` then walks what it left unsure again in double precision.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from attentive.evaluator.crossing import (
    LOWER,
    UPPER,
    Crossings,
    certain_crossings,
    first_crossings,
    stops_of,
)
from attentive.evaluator.plan import BlockSchedule, Thresholds, expected_remaining
from attentive.evaluator.scratch import scratch
from attentive.evaluator.sources import TermSource

__all__ = ["Stops", "settle", "walk_rows", "walk_whole", "whole_sums"]

TRIANGULAR_MAX = 128  # running sums as a triangular product up to this many examples / terms


@dataclass
class Stops:
    """A chunk's outcome: rows that never stopped with their ``U_n``, and the stops."""

    rows: np.ndarray
    U: np.ndarray
    at: np.ndarray  # (k, 2): chunk row, stop position t (1-based)
    side: np.ndarray  # (k,): −1 lower, +1 upper
    value: np.ndarray  # (k,): the rule's statistic (U_t, or U_t + κ_t A_t) at the stop
    unsure: np.ndarray  # chunk rows whose crossing the error band left unsure
    band: np.ndarray | None = None  # per-row error bound on U of the rows that never stopped

    @staticmethod
    def of_all(at, side, value, U_n) -> Stops:
        """The :class:`Stops` of a chunk whose every row's stop (``n`` if none) is known."""
        stopped = side != 0
        rows = np.flatnonzero(~stopped)
        hit = np.flatnonzero(stopped)
        return Stops(
            rows=rows,
            U=np.asarray(U_n)[rows],
            at=np.column_stack([hit, np.asarray(at)[hit]]).astype(np.int64),
            side=np.asarray(side)[hit].astype(np.int8),
            value=np.asarray(value)[hit],
            unsure=np.zeros(0, dtype=np.int64),
        )


_LOWER_TRIANGLES: dict = {}


def _lower_triangle(size: int) -> np.ndarray:
    """Ones on and below the diagonal, (size, size), kept (read only): a block's running sums
    as one product, without building the matrix again every block."""
    T = _LOWER_TRIANGLES.get(size)
    if T is None:
        T = np.tril(np.ones((size, size)))
        T.flags.writeable = False
        _LOWER_TRIANGLES[size] = T
    return T


def _running_sums(H, U, signs, magnitudes):
    """``U + cumsum(±H)`` down the rows of ``H`` (block, m), summed in walk order (in place,
    except for a few examples)."""
    size, m = H.shape
    if m <= TRIANGULAR_MAX and size <= TRIANGULAR_MAX:
        # Few examples: per-position vector operations would be all call overhead.
        T = _lower_triangle(size)
        if magnitudes:
            T = T * signs
        out = T @ H
        out += U
        return out
    # One vector operation per position over all held walks: numpy's cumsum along either axis
    # of H costs several times more per element (measured).
    prev = U
    for i in range(size):
        (np.subtract if magnitudes and signs[i] < 0 else np.add)(prev, H[i], out=H[i])
        prev = H[i]
    return H


def walk_rows(
    source: TermSource,
    schedule: BlockSchedule,
    thr: Thresholds,
    final: float | None = None,
    survival: np.ndarray | None = None,
) -> Stops:
    """Walk the rows ``source`` holds block by block, dropping walks as they cross.

    ``thr.lower`` / ``thr.upper`` are thresholds on ``U_t`` for positions ``t < n``; with
    ``thr.mass`` (a rule on a second running sum) the walk also keeps each row's running mass
    ``A_t = Σ_{k≤t} |w_{π(k)}| h_{π(k)}(x)`` and compares ``U_t + κ_t A_t`` with them, and a
    stop's ``value`` is that statistic. ``survival``: stop positions of a sample of walks like
    these (the pilot's), for :meth:`TermSource.restrict_pays`.

    A certified source (terms within ``ρ(x)`` of themselves) is walked with a band per row,
    ``ρ(x) A (1 + max|κ_t|) + allowance`` over a block (``A`` the row's running sum of term
    magnitudes to the block's end, which bounds ``A_t`` within it): a walk stops only where its
    crossing is certain (:func:`attentive.evaluator.crossing.certain_crossings`); walks that
    come within the band first are set aside in ``unsure``, and the band of each walk that
    never stops is returned with it (``final``: the threshold ``U_n`` is compared with, for the
    allowance). Rows it holds without a useful band (an infinite ``ρ(x)``) go to ``unsure``
    before the first block. Where the source splits its bound by term
    (:meth:`TermSource.band_split`), ``ρ(x) A`` is ``base(x) A + per_weight(x) Σ_{k≤t} weight_k
    |w| h_k``, a second running mass; a part of the allowance that differs by row
    (:meth:`TermSource.row_allowance`) joins each row's band.

    A walk that stops has its sum set to NaN and stays among the rows held until gathering the
    others into a compact copy costs less than carrying it: ``(held − live) × next block ≥
    row_cost × live`` (in units of one term).
    """
    plan = source.plan
    m = source.n_rows
    n = int(schedule.edges[-1])
    lower, upper, kappa = thr.lower, thr.upper, thr.mass
    certified = source.certified
    magnitudes = source.magnitudes
    start_values = source.start()
    U = np.zeros(m) if start_values is None else np.array(start_values, dtype=np.float64)
    # The running mass A_t: a rule on it needs it, and so does a certified source's band.
    track_mass = kappa is not None or certified
    split = row_allowance = None  # a certified source's band split by term or row (below)
    if track_mass:
        mass_sum = np.zeros(m)
    held = np.arange(m)
    alive = np.ones(m, dtype=bool)
    live = m
    stops, sides, values, unsure = [], [], [], []
    if certified:
        rho = source.relative_error()
        # (The allowance is the rows' with a band: TermSource.allowance; and a part of it
        # that differs by row, TermSource.row_allowance.) A block's band takes each largest
        # over the block's positions (the thresholds' and centring's sizes, a sketch's
        # features' reach, are not monotone along the walk); U_n's own is the last position's.
        allowance = source.allowance(thr, final)
        row_allowance = source.row_allowance()
        if row_allowance is not None:
            per_row, reach = row_allowance
        # Rows without a useful band (an infinite bound: a float32 product that could be off
        # by more than a band allows) would be unsure at every crossing: set aside at once for
        # double precision (settle), the others walked by this source. Dropped from the rows
        # held with the first walks that stop.
        loose = np.flatnonzero(~np.isfinite(rho))
        if loose.size:
            unsure.append(loose)
            U[loose] = np.nan
            alive[loose] = False
            live -= loose.size
            rho = np.where(np.isfinite(rho), rho, 0.0)  # (no band of theirs is looked at)
            if row_allowance is not None:
                per_row = np.where(alive, per_row, 0.0)
        # A band split by term (TermSource.band_split): ρ(x) A_t becomes base(x) A_t +
        # per_weight(x) Σ_{k≤t} weight_k |w| h_k, a second running mass ``weighted``.
        split = source.band_split()
        if split is not None:
            rho, per_weight, weights = split
            rho = np.where(alive, rho, 0.0)
            per_weight = np.where(alive, per_weight, 0.0)
            weighted = np.zeros(m)
    bufs = scratch()
    remaining = expected_remaining(survival, n, schedule.edges[:-1])
    for j, (start, stop) in enumerate(itertools.pairwise(schedule.edges.tolist())):
        if live == 0:  # every row set aside
            break
        size = stop - start
        if (
            live < held.size and (held.size - live) * size >= source.row_cost * live
        ) or source.restrict_pays(remaining[j]):
            keep = np.flatnonzero(alive)
            source.keep(keep)
            held, U = held[keep], U[keep]
            alive = np.ones(live, dtype=bool)
            if certified:
                rho = rho[keep]
                if row_allowance is not None:
                    per_row = per_row[keep]
                if split is not None:
                    per_weight, weighted = per_weight[keep], weighted[keep]
            if track_mass:
                mass_sum = mass_sum[keep]
        k = held.size
        H = bufs.get("terms", (size, k))
        source.block(start, stop, H)
        if kappa is not None:
            M = source.masses(start, stop, H, out=bufs.get("mass", (size, k)))
            if certified and split is not None:
                weighted = weighted + weights[start:stop] @ M
            M = _running_sums(M, mass_sum, None, False)
            mass_sum = M[size - 1].copy()
        elif certified:  # A_t to the block's end
            M = source.masses(start, stop, H)
            mass_sum = mass_sum + M.sum(axis=0)
            if split is not None:
                weighted = weighted + weights[start:stop] @ M
        P = _running_sums(H, U, plan.weight_signs[start:stop], magnitudes)
        U = P[size - 1].copy()
        checked = min(stop, n - 1) - start
        if checked <= 0:
            break
        P = P[:checked]
        if kappa is not None:
            # The rule's statistic U_t + κ_t A_t (a NaN sum stays NaN: a stopped walk).
            V = np.multiply(M[:checked], kappa[start : start + checked, None], out=M[:checked])
            P = np.add(V, P, out=V)
        lo = None if lower is None else lower[start : start + checked]
        up = None if upper is None else upper[start : start + checked]
        compare = (bufs.get("low", P.shape, bool), bufs.get("high", P.shape, bool))
        if certified:
            # |Û_t − U_t| ≤ ρ(x) A_t (and |V̂_t − V_t| ≤ ρ(x) A_t (1 + |κ_t|)), plus rounding;
            # A_t at the block's end bounds it within the block. Walks that may cross under
            # the widest band are found in one pass; only they are looked at walk by walk.
            beta = rho * mass_sum
            if split is not None:
                beta += per_weight * weighted
            if kappa is not None:
                beta *= 1.0 + float(np.abs(kappa[start : start + checked]).max())
            beta += float(allowance[start : start + checked].max())
            if row_allowance is not None:
                beta += per_row * float(reach[start : start + checked].max())
            widest = float(np.max(beta, where=alive, initial=0.0))
            c = first_crossings(
                P,
                None if lo is None else lo + widest,
                None if up is None else up - widest,
                scratch=compare,
            )
            c = _settle_band(P, lo, up, beta, c)
            unsure.append(held[c.walks[~c.sure]])
            sure = c.sure
        else:
            c = first_crossings(P, lo, up, scratch=compare)
            sure = slice(None)
        if c.walks.size == 0:
            continue
        sides.append(c.side[sure])
        values.append(P[c.first, c.walks][sure])
        stops.append(np.column_stack([held[c.walks[sure]], start + c.first[sure] + 1]))
        U[c.walks] = np.nan
        alive[c.walks] = False
        live -= c.walks.size
        if live == 0:
            break
    at = np.concatenate(stops) if stops else np.zeros((0, 2), dtype=np.int64)
    side = np.concatenate(sides) if sides else np.zeros(0, dtype=np.int8)
    value = np.concatenate(values) if values else np.zeros(0)
    rest = np.concatenate(unsure) if unsure else np.zeros(0, dtype=np.int64)
    out = Stops(rows=held[alive], U=U[alive], at=at, side=side, value=value, unsure=rest)
    if certified:
        out.band = rho[alive] * mass_sum[alive] + allowance[-1]
        if row_allowance is not None:
            out.band += per_row[alive] * reach[-1]
        if split is not None:
            out.band += per_weight[alive] * weighted[alive]
    return out


def _settle_band(P, lo, up, beta, c: Crossings) -> Crossings:
    """The certain crossings of walks with a band ``beta`` per walk, from ``c``: their first
    crossings under the widest band (every walk that may cross under its own band is among
    them). Judged at that position: beyond a threshold by more than the walk's band, a sure
    crossing (the lower side winning a tie); within it, unsure; short of it by more than the
    band (the widest band found a position the walk's own band does not), the walk's own first
    possible crossing is looked for by :func:`certain_crossings` on its column alone."""
    if c.walks.size == 0:
        return Crossings(c.walks, c.first, c.side, np.zeros(0, dtype=bool))
    v = P[c.first, c.walks]
    b = beta[c.walks]
    inf = np.full(v.size, np.inf)
    lo_t = -inf if lo is None else lo[c.first]
    up_t = inf if up is None else up[c.first]
    sure_low = v < lo_t - b
    maybe_low = v < lo_t + b
    sure_up = (v > up_t + b) & ~maybe_low
    maybe = maybe_low | (v > up_t - b)
    sure = sure_low | sure_up
    side = np.where(sure_low, LOWER, UPPER).astype(np.int8)
    first = c.first
    later = np.flatnonzero(~maybe)
    if later.size:
        # Short of both thresholds by more than its band here: look further along its walk.
        d = certain_crossings(P[:, c.walks[later]], lo, up, b[later])
        found = np.zeros(later.size, dtype=bool)
        found[d.walks] = True
        first = first.copy()
        first[later[d.walks]] = d.first
        side[later[d.walks]] = d.side
        sure[later[d.walks]] = d.sure
        keep = np.ones(v.size, dtype=bool)
        keep[later[~found]] = False  # no possible crossing in this block after all
        return Crossings(c.walks[keep], first[keep], side[keep], sure[keep])
    return Crossings(c.walks, first, side, sure)


# Walks of at most this many terms take their prefix sums from one product with a triangular
# matrix (m·n² multiply-adds at ~0.05 ns against cumsum's ~3.5 ns per element: even at n = 64).
SMALL_PREFIX_PRODUCT = 64


def _prefix_matrix(plan, weights: np.ndarray, kind: str) -> np.ndarray:
    """``L[k, t] = weights[k]`` for ``k ≤ t``, else 0: ``H @ L`` is every prefix sum of the
    weighted terms (cached per plan)."""
    L = plan.prefix_matrices.get(kind)
    if L is None:
        n = weights.size
        L = plan.prefix_matrices[kind] = np.triu(np.ones((n, n))) * weights[:, None]
    return L


def whole_sums(source: TermSource, thr: Thresholds, *, mass: bool = False):
    """Every term of every row ``source`` holds at once: ``(V, U, A)``, each (rows, n) — the
    rule's statistic at each position (``U_t``, or ``U_t + κ_t A_t`` for a rule on the running
    mass, at ``t < n``), the uncentred sums ``U_t`` and the running mass ``A_t`` (None unless
    the rule is on it or ``mass``)."""
    plan = source.plan
    n = plan.n_terms
    H = np.empty((n, source.n_rows))
    source.block(0, n, H)
    masses = (
        None if thr.mass is None and not mass else source.masses(0, n, H, out=np.empty_like(H)).T
    )
    H = H.T
    weights, kind = (plan.weight_signs, "signs") if source.magnitudes else (np.ones(n), "ones")
    if n <= SMALL_PREFIX_PRODUCT:
        # One small product gives every prefix sum, the weights (or signs) folded in: faster
        # than numpy's cumsum (~3.5 ns per element, not vectorised) for walks this short, and
        # equal to it to rounding (each sum of the same terms in another order).
        U = H @ _prefix_matrix(plan, weights, kind)
        A = None if masses is None else masses @ _prefix_matrix(plan, np.ones(n), "ones")
    else:
        U = np.cumsum(H * weights, axis=1)
        A = None if masses is None else np.cumsum(masses, axis=1)
    start = source.start()
    if start is not None:
        U += start[:, None]
    V = U
    if thr.mass is not None:
        V = U.copy()
        V[:, : n - 1] += thr.mass * A[:, : n - 1]
    return V, U, A


def walk_whole(source: TermSource, thr: Thresholds) -> Stops:
    """Every term of every row ``source`` holds at once, then the stops (tiny problems, and the
    pilot): one block of all ``n`` positions, every prefix sum (:func:`whole_sums`), the
    crossing module's stops of the whole matrix. Not for certified sources (the caller passes
    their exact counterpart)."""
    n = source.plan.n_terms
    V, U, _ = whole_sums(source, thr)
    at, side = stops_of(V, thr.lower, thr.upper)
    rows = np.arange(V.shape[0])
    return Stops.of_all(at, side, V[rows, at - 1], U[:, n - 1])


def settle(source: TermSource, X, res: Stops, final, walk_exact) -> Stops:
    """What a certified walk of rows ``X`` (by ``source``) leaves to double precision, done in
    double precision.

    Walks whose crossing the band left unsure are walked again (``walk_exact(rows)``: a
    :class:`Stops` of the exact source on those rows); walks that never stopped and whose ``U_n``
    is within their band of ``final`` get their exact ``U_n``; the others keep theirs (their side
    of ``final`` is certain, their value within the band)."""
    U = res.U
    if res.rows.size and final is not None:
        near = np.flatnonzero(np.abs(res.U - final) <= res.band)
        if near.size:
            U = U.copy()
            U[near] = source.exact_totals(X[res.rows[near]], source.plan.n_terms)
    rows, at, side, value = [res.rows], [res.at], [res.side], [res.value]
    if res.unsure.size:
        redo = walk_exact(res.unsure)
        rows.append(res.unsure[redo.rows])
        U = np.concatenate([U, redo.U])
        at.append(np.column_stack([res.unsure[redo.at[:, 0]], redo.at[:, 1]]))
        side.append(redo.side)
        value.append(redo.value)
    return Stops(
        rows=np.concatenate(rows),
        U=U,
        at=np.concatenate(at),
        side=np.concatenate(side),
        value=np.concatenate(value),
        unsure=res.unsure,
    )
