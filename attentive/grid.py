"""Every scale of a rule family at once (SPEC §3's grid), in bounded memory.

:func:`grid_outcomes` applies a whole grid of scales to walks with one running maximum per example
and side plus a binary search per scale; :func:`walk_grid_outcomes` does it for raw examples a
chunk of rows at a time (never the whole matrix of partial scores). Calibration scans these
outcomes; tradeoff curves, operating points and the family ranking of ``family="auto"``
(:func:`reference_profile`, :func:`family_ranking`) read them; the oracle
(:func:`oracle_stop_positions`) is the floor they are compared with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attentive.errors import InvalidParameterError
from attentive.evaluator.crossing import combine_sides
from attentive.families import BoundaryFamily

__all__ = [
    "GridOutcomes",
    "check_grid",
    "default_grid",
    "family_ranking",
    "grid_outcomes",
    "oracle_stop_positions",
    "reference_profile",
    "walk_grid_outcomes",
]


def default_grid() -> np.ndarray:
    """The grid of scales fixed in advance: ``z`` from 6 down to −6 in steps of 0.05.

    ``z = 6`` (nominal δ' ≈ 1e-9) is far more conservative than any useful boundary; at ``z = −6``
    every family stops nearly every walk at once (a negative z moves the boundary past θ_S), so
    the grid covers each family's whole useful range and a scan that reaches its end has
    nothing more aggressive to try. Fixed-sequence testing pays nothing for a longer grid.
    """
    return np.round(np.arange(6.0, -6.0 - 1e-9, -0.05), 2)


def check_grid(grid) -> np.ndarray:
    try:
        g = np.asarray(default_grid() if grid is None else grid, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"grid must be a non-empty 1-d array of finite scales (numbers), got {grid!r:.80} "
            f"({exc})."
        ) from None
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
        raise InvalidParameterError(
            f"grid must be a non-empty 1-d array of finite scales, got shape {g.shape}."
        )
    if g.size > 1 and not np.all(np.diff(g) < 0):
        raise InvalidParameterError(
            "grid must be strictly decreasing (most conservative scale first), as fixed-sequence "
            "testing scans it in order."
        )
    return g


@dataclass(frozen=True)
class GridOutcomes:
    """Early decisions of every example under every scale of a grid.

    Attributes
    ----------
    grid : ndarray (K,)
    positive : ndarray of bool (m, K)
        Early decision per example and scale.
    n_evaluated : ndarray of int (m, K)
        Terms evaluated per example and scale.
    full_positive : ndarray of bool (m,)
        The full decision ``S_n ≥ θ_S``.
    n_terms : int
    """

    grid: np.ndarray
    positive: np.ndarray
    n_evaluated: np.ndarray
    full_positive: np.ndarray
    n_terms: int

    @property
    def disagree(self) -> np.ndarray:
        """(m, K) bool: early decision differs from the full one."""
        return self.positive != self.full_positive[:, None]

    @staticmethod
    def concatenate(parts) -> GridOutcomes:
        """The outcomes of several sets of examples, one after the other."""
        first = parts[0]
        return GridOutcomes(
            first.grid,
            np.concatenate([p.positive for p in parts]),
            np.concatenate([p.n_evaluated for p in parts]),
            np.concatenate([p.full_positive for p in parts]),
            first.n_terms,
        )

    def subset(self, rows) -> GridOutcomes:
        """The outcomes of some examples only (e.g. a calibration or test split)."""
        return GridOutcomes(
            self.grid,
            self.positive[rows],
            self.n_evaluated[rows],
            self.full_positive[rows],
            self.n_terms,
        )

    def disagreement_counts(self) -> np.ndarray:
        """``k_j`` per scale."""
        return self.disagree.sum(axis=0)

    def disagreement_rates(self) -> np.ndarray:
        return self.disagree.mean(axis=0)

    def stop_errors(self, side: str) -> np.ndarray:
        """The paper's stop-error per scale (SPEC §4): lower, stopped full positives over full
        positives; upper, stopped full negatives over full negatives; both, the disagreement."""
        if side == "both":
            return self.disagreement_rates()
        stopped = self.n_evaluated < self.n_terms
        F = self.full_positive if side == "lower" else ~self.full_positive
        return (stopped & F[:, None]).sum(axis=0) / max(int(F.sum()), 1)

    def evaluated_fractions(self) -> np.ndarray:
        """Mean evaluated fraction per scale."""
        return self.n_evaluated.mean(axis=0) / self.n_terms


def grid_outcomes(S, family: BoundaryFamily, grid=None, A=None) -> GridOutcomes:
    """Apply every scale of ``grid`` to walks with partial scores ``S`` at once.

    Equals ``apply_boundary(S, family.boundary(z), θ_S, A=A)`` for each z (tested against it),
    but costs one running maximum per example and side plus a binary search per example and
    scale. ``A``: the walks' running masses, needed by a family that ``uses_mass``.
    """
    grid = check_grid(grid)
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] != family.n_terms:
        raise InvalidParameterError(
            f"S must have shape (examples, {family.n_terms}), got {S.shape}."
        )
    mass = None
    if family.uses_mass:
        if A is None:
            raise InvalidParameterError(
                f"the {family.name} family stops on S_t and the running mass A_t: pass A "
                "(Walk.partial_masses) along with S."
            )
        A = np.asarray(A, dtype=np.float64)
        if A.shape != S.shape:
            raise InvalidParameterError(f"A must have the shape of S, {S.shape}, got {A.shape}.")
        mass = A[:, : S.shape[1] - 1]
    m, n = S.shape
    K = grid.size
    full_positive = S[:, n - 1] >= family.theta_s if n else np.zeros(m, dtype=bool)
    if n <= 1 or m == 0:
        return GridOutcomes(
            grid,
            np.repeat(full_positive[:, None], K, axis=1),
            np.full((m, K), n, dtype=np.int64),
            full_positive,
            n,
        )
    head = S[:, : n - 1]
    stop = {}
    for upper, active in ((False, family.side != "upper"), (True, family.side != "lower")):
        if not active:
            stop[upper] = np.full((m, K), n, dtype=np.int64)
            continue
        score = (
            family.crossing_scores(head, upper, mass=mass)
            if mass is not None
            else family.crossing_scores(head, upper)
        )
        running = np.maximum.accumulate(score, axis=1)
        thr = family.thresholds(grid, upper)
        # The first t with running_t > thr is 1 + #{t : running_t ≤ thr}: running is
        # non-decreasing, so that count is a binary search (no crossing gives n).
        t = np.empty((m, K), dtype=np.int64)
        for i in range(m):
            t[i] = 1 + np.searchsorted(running[i], thr, side="right")
        stop[upper] = t
    n_evaluated, side = combine_sides(stop[False], stop[True], n)
    positive = np.where(side != 0, side > 0, full_positive[:, None])
    return GridOutcomes(grid, positive, n_evaluated, full_positive, n)


def walk_grid_outcomes(
    walk, X, families, grid=None, *, leave_own_out: bool = False, own=None
) -> list[GridOutcomes]:
    """:func:`grid_outcomes` of raw examples ``X`` for several families, in bounded memory.

    The partial scores (and, for a family that uses them, the running masses) are computed a
    chunk of rows at a time (never the whole (m × n) matrix) and shared by every family. ``leave_own_out``: ``X`` is reference data, walked without each
    example's own term (:meth:`attentive.walk.Walk.leave_own_out`).
    """
    from attentive.walk import row_chunks

    grid = check_grid(grid)
    Xp = walk.prepare(X)
    m = Xp.shape[0]
    parts: list[list[GridOutcomes]] = [[] for _ in families]
    masses = any(fam.uses_mass for fam in families)
    for rows in row_chunks(m, walk.n_terms * (2 if masses else 1)):
        kwargs = {
            "prepared": True,
            "leave_own_out": leave_own_out,
            "own": None if own is None else own[rows],
        }
        if masses:
            S, A = walk.partial_scores_and_masses(Xp[rows], **kwargs)
        else:
            S, A = walk.partial_scores(Xp[rows], **kwargs), None
        for k, fam in enumerate(families):
            parts[k].append(grid_outcomes(S, fam, grid, A=A))
    if m == 0:
        S = np.zeros((0, walk.n_terms))
        return [grid_outcomes(S, fam, grid, A=S) for fam in families]
    return [GridOutcomes.concatenate(p) for p in parts]


def reference_profile(
    walk,
    X,
    families,
    *,
    max_rows: int = 2000,
    seed: int = 0,
    leave_own_out: bool = False,
    own=None,
) -> dict:
    """Each family's tradeoff on reference examples: ``{name: (disagreement, evaluated fraction)}``
    per scale of the default grid, on at most ``max_rows`` of ``X`` (a seeded sample), walked
    without their own support vectors with ``leave_own_out``.

    For ``family="auto"``: ranking the families on the data the model and its statistics were
    fitted on, which the calibration set is independent of, keeps the guarantee at the full α.
    """
    from sklearn.utils import _safe_indexing
    from sklearn.utils.validation import _num_samples

    n_rows = _num_samples(X)
    rows = np.arange(n_rows)
    if n_rows > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n_rows, max_rows, replace=False))
    outcomes = walk_grid_outcomes(
        walk,
        _safe_indexing(X, rows),
        families,
        leave_own_out=leave_own_out,
        own=None if own is None else np.asarray(own)[rows],
    )
    return {
        fam.name: (out.disagreement_rates(), out.evaluated_fractions())
        for fam, out in zip(families, outcomes, strict=True)
    }


def profile_point(rates, fractions, delta: float, calibration=None) -> int | None:
    """The scale of one family's tradeoff on a :func:`reference_profile` it is judged at: the
    index of its cheapest evaluated fraction at disagreement ≤ δ; with ``calibration = (m,
    α)``, the scale calibration on ``m`` examples would choose if they disagreed at the
    profile's rates — the fixed-sequence scan of their Clopper–Pearson bounds at (δ, α), SPEC
    §3 (None where no scale gets there).

    The scan asks for a disagreement count whose upper bound is ≤ δ: on a few hundred
    calibration examples about none at δ = 1 %, α = 5 % (one needs 473), far below δ. A family
    cheapest at disagreement δ may then be dear where calibration stops, and the one that is
    cheapest there is what calibration makes of the choice."""
    rates = np.asarray(rates, dtype=np.float64)
    fractions = np.asarray(fractions, dtype=np.float64)
    if calibration is None:
        ok = np.flatnonzero(rates <= delta)
        return int(ok[np.argmin(fractions[ok])]) if ok.size else None
    from attentive.calibration import clopper_pearson_upper, fixed_sequence_scan

    m, alpha = calibration
    counts = np.clip(np.rint(rates * m), 0, m)
    chosen, _ = fixed_sequence_scan(clopper_pearson_upper(counts, int(m), alpha), delta)
    return chosen


def family_ranking(profile: dict, delta: float, calibration=None) -> list[str]:
    """Family names from cheapest to dearest in a :func:`reference_profile` at disagreement ≤ δ,
    or where calibration on ``calibration = (m, α)`` examples would stop
    (:func:`profile_point`); families that never get there last, by their lowest disagreement."""

    def cost(name):
        rates, fractions = profile[name]
        j = profile_point(rates, fractions, delta, calibration)
        return (0, float(fractions[j])) if j is not None else (1, float(np.min(rates)))

    return sorted(profile, key=cost)


def oracle_stop_positions(S, theta_s: float, remainder_mean=None) -> np.ndarray:
    """Terms an all-knowing rule of the curved family evaluates, per example.

    The running estimate of the full score is ``S_t + M_t``; an example's oracle position is one
    past the last ``t`` at which ``S_t + M_t ≥ θ_S`` differs from its final decision
    ``S_n ≥ θ_S`` (1 if it never differs, at most n). Stopping earlier would stop on an estimate
    whose sign is still wrong, so its mean fraction is a floor for such rules.

    Parameters
    ----------
    S : ndarray (m, n)
        Partial scores.
    theta_s : float
    remainder_mean : ndarray (n,), optional
        ``M_t`` (default 0: the running sum itself).
    """
    S = np.asarray(S, dtype=np.float64)
    m, n = S.shape
    if n == 0:
        return np.zeros(m, dtype=np.int64)
    M = np.zeros(n) if remainder_mean is None else np.asarray(remainder_mean, dtype=np.float64)
    if M.shape != (n,):
        raise InvalidParameterError(f"remainder_mean must have shape ({n},), got {M.shape}.")
    final = S[:, n - 1] >= theta_s
    differ = (S + M >= theta_s) != final[:, None]
    any_differ = differ.any(axis=1)
    last = n - np.argmax(differ[:, ::-1], axis=1)  # 1-based last differing t
    return np.minimum(np.where(any_differ, last + 1, 1), n).astype(np.int64)
