"""A sketched walk's first positions, taken with its sketch's one pass over the rows: the rows
that stop there never go to the exact source.

Most of a sketched walk's rows stop at its first checks (MNIST as float32 pixels / 255, 7,000
rows, calibrated rule at δ = 1 %: 54–70 % at position 1, 62–75 % by position 4), yet each pays
the exact source's preparation of its row (a copy on the pixel grid, an augmented float64 copy,
float32 norms) and a row through its first block. Here the first ``b`` support vectors in walk
order join the sketch's projection as ``b`` more columns of its product (``X [Pᵀ | x̄ | S_bᵀ]``,
one read of each tile), so the same pass gives every row's features, start ``F̃(x)`` and its
first ``b`` exact terms ``|w| e^{−γ(‖x‖² − 2 x · s + ‖s‖²)}``; the statistic at positions
``1..b`` is then compared with the thresholds as the walk compares it
(:func:`attentive.evaluator.crossing.certain_crossings`, under a bound on this computation's
rounding). A row whose crossing there is certain is decided; every other row (no crossing by
``b``, or one the bound leaves unsure, or a row whose norm is not finite) is walked from the
start by the source it was routed to, with its features passed on — or, on the evaluator's path
``"triage"``, evaluated in full (the unsure ones walked first). Stops, sides and labels are the
walk's; a stop's value is within the bound (double rounding; float32's where the rows were
triaged in float32, ``single``).

Priced by the pilot (:func:`attentive.evaluator.pilot.pilot_for`, with :func:`triage_ns`): taken
only where the rows it decides save more than its pass costs every row. Before a walk it takes
:data:`TRIAGE_POSITIONS`; on path ``"triage"`` the pilot prices each of
:data:`attentive.evaluator.pilot.THEN_FULL_POSITIONS` and takes the cheapest (each later
position stops more rows, and spares them every term, for a column of every row's product).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from attentive.evaluator.crossing import certain_crossings
from attentive.evaluator.precision import U32, U64
from attentive.evaluator.rows import (
    float64_tiles,
    product_tile_rows,
    squared_norms,
    tile_rows,
)
from attentive.evaluator.sources.sketch import (
    DOUBLE_MADD_NS,
    FEATURE_TILE,
    bounded_features,
    is_sketched,
    sketch_arrays,
)
from attentive.evaluator.walk import Stops

__all__ = [
    "TRIAGE_POSITIONS",
    "TRIAGE_POSITION_NS",
    "Triage",
    "merged",
    "triage",
    "triage_ns",
    "triage_positions",
    "triageable",
]

#: Positions a triage takes before a walk: the first check decides most of what it can (54–70 %
#: of MNIST's rows stop at position 1, 62–75 % by 4), and each position is a column of every
#: row's product (and the walk of the rows it leaves starts again at their first position).
TRIAGE_POSITIONS = 1


#: A triage's cost a row beyond its features and its positions' products, ns: each position's
#: exponential, the sketched part, the running sums, the crossings, and the rows' bookkeeping.
#: Measured at 80–230 ns a row over the features (4,096 rows of MNIST 8 and 3 against the rest,
#: 2 vs 5 standardised, 8 against the rest behind a PCA(50); one thread, medians of 21,
#: 2026-12-01), of which a position's product is ~30 over 784 columns.
TRIAGE_ROW_NS = 120.0


#: Each position past the first, ns a row beyond its column of the product: its exponential, its
#: sketched part, its running sums, its band and crossings, and the rows a wider float32 band
#: leaves to the double-precision triage. Measured at 10-27 ns over MNIST's 784 columns (path
#: "triage" over 1 to 32 positions against its price without it: 7 vs 9 at C = 10, 2 vs 5
#: standardised, 4 vs 9; 7,000 rows, one thread, medians of 7, 2026-12-03).
TRIAGE_POSITION_NS = 20.0


def triage_ns(walk, positions: int) -> float:
    """What a row's triage over ``positions`` positions costs beyond its sketch features, ns: a
    column of the product a position, :data:`TRIAGE_ROW_NS`, and :data:`TRIAGE_POSITION_NS`
    a position past the first. (Its features replace the walk's, and are priced as the walk's
    source prices its own: the pilot.)"""
    return (
        positions * DOUBLE_MADD_NS * walk.sketch.n_features
        + TRIAGE_ROW_NS
        + max(0, positions - 1) * TRIAGE_POSITION_NS
    )


@dataclass(frozen=True)
class Triage:
    """What a triage of a chunk's rows found.

    Attributes
    ----------
    decided : Stops
        The rows (of the chunk) whose walk stops within the first positions, certainly.
    rest : ndarray of int
        The chunk's other rows, in order: to be walked from the start (on path "triage": to be
        evaluated in full, once the unsure ones are known not to stop).
    features : ndarray (len(rest), m) or None
        Their sketch features, as :func:`attentive.evaluator.sources.sketch.sketch_features`
        computes them (to double rounding); None from a single triage (:func:`triage`).
    band : ndarray (b,) or (b, rows)
        The bound on the computed statistic's error at each position (a crossing is certain
        beyond it); per row too for a single triage.
    unsure : ndarray of int
        The chunk's rows, of ``rest`` and in order, whose statistic may cross within the first
        positions but not certainly under ``band``: only their walk says whether they stop
        there. Every other row of ``rest`` certainly does not.
    """

    decided: Stops
    rest: np.ndarray
    features: np.ndarray
    band: np.ndarray
    unsure: np.ndarray


def triageable(walk, X) -> bool:
    """Whether a triage can take rows ``X`` of ``walk``: a sketched walk of a dense RBF model
    (the sketch is for those) on dense rows."""
    if not is_sketched(walk) or sp.issparse(X):
        return False
    terms = walk.walk.terms
    return (
        terms.kind == "kernel"
        and terms.kernel == "rbf"
        and not sp.issparse(terms.support_vectors)
        and walk.n_terms >= 2
    )


def triage_positions(n_terms: int) -> int:
    """The positions a triage checks for a walk of ``n_terms`` terms (never the last)."""
    return max(0, min(TRIAGE_POSITIONS, n_terms - 1))


@dataclass(frozen=True)
class _Arrays:
    stacked: np.ndarray  # (d, k + 1 + b): the projection's [Pᵀ | x̄], then s_π(1..b)
    stacked32: np.ndarray  # the same in float32 (a single triage's one product)
    sv_norms2: np.ndarray  # (b,) ‖s‖²
    sv_norms: np.ndarray  # (b,) ‖s‖
    log_w: np.ndarray  # (b,) log |w|
    reach: float  # 2‖x̄‖ + max‖L‖: the features' rounding grows with (2‖x‖ + reach)²


def _arrays(walk, plan, b: int) -> _Arrays:
    def build():
        base = walk.walk
        S = np.asarray(base.terms.support_vectors, dtype=np.float64)[np.asarray(base.order)[:b]]
        projection = walk.sketch.projection
        own = projection.stacked if projection.coordinates is None else projection.stacked[:, -1:]
        norms2 = squared_norms(S)
        with np.errstate(divide="ignore"):
            log_w = np.log(np.abs(plan.ordered_weights[:b]))
        landmark_norm = float(np.sqrt(squared_norms(projection.landmarks).max(initial=0.0)))
        return _Arrays(
            stacked=np.ascontiguousarray(np.column_stack([own, S.T])),
            stacked32=np.ascontiguousarray(np.column_stack([own, S.T]), dtype=np.float32),
            sv_norms2=norms2,
            sv_norms=np.sqrt(norms2),
            log_w=log_w,
            reach=2.0 * float(np.sqrt(projection.mean_norm)) + landmark_norm,
        )

    return plan.arrays(("triage", b), build)


def triage(walk, plan, X, thr, b: int, *, single: bool = False) -> Triage:
    """The triage of prepared dense rows ``X`` of the sketched ``walk`` (module docstring) over
    its first ``b`` positions (``1 ≤ b < n``), under the thresholds ``thr``. A row with a NaN or
    an infinite value gets NaN there, silently: it is left to the walk's source, which refuses
    it as it always does.

    ``single`` (float32 rows ``X`` only): the product in float32 straight from the rows (in
    tiles of rows for OpenBLAS's small-matrix kernel; no float64 copy), and ``‖x‖²`` in float32
    in the same tiles (bounded by ``γ_d``); the band then holds each row's bound on what float32 moved (:func:`~attentive.evaluator.
    sources.sketch.bounded_features`' for the features, and the same products' for the first
    terms), so more rows are left unsure, and a row whose bound is not finite is. Its
    ``features`` are then None: an unsure row's are not the walk's to double rounding, and a
    caller triages those rows again in double precision before it walks them."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _triage(walk, plan, X, thr, b, single)


def _triage(walk, plan, X, thr, b: int, single: bool) -> Triage:
    sketch = walk.sketch
    projection = sketch.projection
    gamma = float(walk.walk.terms.kernel_params["gamma"])
    arrays = _arrays(walk, plan, b)
    m, d = X.shape
    k = projection.projected_mean.shape[0]
    coords = projection.coordinates
    own = arrays.stacked.shape[1] - b  # the projection's columns in the product
    norms2 = np.empty(m)
    columns = arrays.stacked.shape[1]
    if single:
        # Float32 products (X is float32: the one rounding is the columns'), in tiles for
        # OpenBLAS's small-matrix kernel where it has one (2.4 against 3.1 ms for 6,970 MNIST
        # rows and 19 columns).
        # ‖x‖² in float32 too, each tile while it is in cache (squared_norms: a sum of d
        # squares in some order, within γ_d of itself; 2^-149 a square that underflows).
        T = product_tile_rows(d, columns, m)
        product32 = np.empty((m, columns), dtype=np.float32)
        norms32 = np.empty(m, dtype=np.float32)
        for lo in range(0, m, T):
            tile = X[lo : lo + T]
            np.matmul(tile, arrays.stacked32, out=product32[lo : lo + T])
            squared_norms(tile, out=norms32[lo : lo + T])
        product = product32.astype(np.float64)
        norms2 = norms32.astype(np.float64)
        # (Of the computed norm: the exact one is within γ_d / (1 − γ_d) of it.)
        gamma_d = d * U32 / (1.0 - d * U32)
        norm_error = 1.01 * (gamma_d / (1.0 - gamma_d)) * norms2 + d * 2.0**-149
        G = product[:, :own] if coords is None else np.empty((m, k + 1))
        if coords is not None:
            G[:, :k] = X[:, coords]
    else:
        T = product_tile_rows(d, columns, max(FEATURE_TILE, tile_rows(d)))
        product = np.empty((m, columns))  # G = X [Pᵀ | x̄] first (x̄'s column alone on coords)
        G = product[:, :own] if coords is None else np.empty((m, k + 1))
        for lo, hi, tile in float64_tiles(X, T):
            np.matmul(tile, arrays.stacked, out=product[lo:hi])
            if coords is not None:
                G[lo:hi, :k] = tile[:, coords]
            squared_norms(tile, out=norms2[lo:hi])
    if coords is not None:
        G[:, k] = product[:, 0]
    cross = product[:, own:]
    if single:
        # Each product within g ‖x‖ ‖s‖ (+ what underflows): the column rounded to float32 (u),
        # a dot product of d float32 products in any order (γ_d), its conversion (exact).
        g = 1.01 * (U32 + d * U32 / (1.0 - d * U32) + 2 * U64)
        features, feature_error = bounded_features(projection, G, norms2, norm_error, g, gamma)
    else:
        features = projection.features_of(G, norms2 if projection.corrected else None, gamma)
    sk = sketch_arrays(walk, plan)
    start = features @ sk.beta - sk.mean_start
    # The first b exact terms |w| h and what the walk adds at each: |w| (h − h̃), signed; by
    # position, then row ((b, rows): the running sums and crossings go along whole rows).
    D = np.empty((b, m))
    np.multiply(cross.T, -2.0, out=D)
    D += norms2
    D += arrays.sv_norms2[:, None]
    np.maximum(D, 0.0, out=D)
    D *= -gamma
    D += arrays.log_w[:, None]
    mags = np.exp(D, out=D)
    sketched = sk.factors[:b] @ features.T
    R = mags - sketched
    R *= plan.weight_signs[:b, None]
    U = _running(R)
    U += start
    A = _running(mags.copy())
    kappa = None if thr.mass is None else thr.mass[:b]
    V = U if kappa is None else U + kappa[:, None] * A
    # A bound on |computed − exact| of V_t, one per position, from the rows' largest values
    # (a band a little wider than a row's own leaves a few more rows to the walk, no error);
    # every row whose norm or statistic is not finite is left to the walk. u = u64 below.
    finite = np.isfinite(V).all(axis=0) & np.isfinite(norms2)
    x_max = float(np.sqrt(norms2.max(initial=0.0, where=finite)))
    # - Each first term: D = ‖x‖² − 2 x · s + ‖s‖², float64 sums of d products, off by at most
    #   (d + 4) u (‖x‖ + ‖s‖)² (doubled), moving |w| e^{−γD} by |w| h (e^{γ ΔD} − 1).
    dD = 2.0 * (d + 4) * U64 * (x_max + arrays.sv_norms) ** 2
    mag_max = mags.max(axis=1, initial=0.0, where=finite)  # (|w| h ≥ 0)
    d_mag = mag_max * (np.expm1(1.0001 * gamma * dD) + 8 * U64) + 2.0**-1021
    # - The features: each D_j = ‖U − L_j‖² + r(x), r = ‖x‖² − 2 x · x̄ + ‖x̄‖² − ‖U‖² (‖U‖ ≤
    #   ‖x‖ + ‖x̄‖), off by at most 4 (d + k + 8) u (2‖x‖ + 2‖x̄‖ + max‖L‖)², which cancels badly
    #   for rows far from the origin; a feature (≤ 1) moves by at most e^{γ ΔD} − 1, and the start
    #   a(x) · β and the sketched parts a(x) · |w| b with it: (‖β‖₁ + Σ_{k≤t} |w| ‖b‖₁) times it.
    dF = 4.0 * (d + k + 8) * U64 * (2.0 * x_max + arrays.reach) ** 2
    d_feature = np.expm1(1.0001 * gamma * dF) + 8 * U64
    beta_norm = float(np.abs(sk.beta).sum())
    # - Products and sums in double precision: 8 (m + d + 8) u of the sizes summed.
    sketched_max = np.abs(sketched).max(axis=1, initial=0.0, where=finite)
    start_max = float(np.abs(start).max(initial=0.0, where=finite))
    size = start_max + beta_norm + abs(sk.mean_start) + np.cumsum(mag_max + sketched_max)
    band = np.cumsum(d_mag) + d_feature * (beta_norm + sk.size[:b])
    band += 8 * (sketch.m + d + 8) * U64 * (sk.size[:b] + size)
    if kappa is not None:  # V = U + κ A: the terms' error again through κ, and κ A's rounding
        band += np.abs(kappa) * (np.cumsum(d_mag) + 4 * b * U64 * np.cumsum(mag_max))
    band *= 2.0
    band[np.isnan(band)] = np.inf  # (every term underflowing far out: 0 · ∞; decides nothing)
    if single:
        # Per row, what float32 moved: the features (each within feature_error, the start and
        # the sketched parts with them) and each first term's D by the norm's bound and twice
        # its product's, at most ``moved`` for the largest ‖s‖ of the b, so each term by at most
        # |w| h (e^{γ moved} − 1) and the first t by A_t times that; a row without a finite
        # bound is left unsure (V = 0, an infinite band).
        x_norm = np.sqrt(norms2 + norm_error)
        s_max = float(arrays.sv_norms.max(initial=0.0))
        moved = norm_error + 2.0 * (g * x_norm * s_max + 1.01 * d * 2.0**-149)
        d_mag32 = A * (1.001 * np.expm1(1.001 * gamma * moved))
        if kappa is not None:
            d_mag32 *= 1.0 + np.abs(kappa)[:, None]
        d_mag32 += np.multiply.outer(beta_norm + sk.size[:b], feature_error)
        band = band[:, None] + 2.0 * d_mag32
        loose = ~(np.isfinite(band).all(axis=0) & finite)
        if loose.any():
            V = V.copy()
            V[:, loose] = 0.0
            band[:, loose] = np.inf
    elif not finite.all():
        V = V.copy()
        V[:, ~finite] = np.nan  # (crosses nothing: walked)
    lower = None if thr.lower is None else thr.lower[:b]
    upper = None if thr.upper is None else thr.upper[:b]
    c = certain_crossings(V, lower, upper, band if single else band[:, None])
    hit = c.walks[c.sure]
    first = c.first[c.sure]
    decided_mask = np.zeros(m, dtype=bool)
    decided_mask[hit] = True
    rest = np.flatnonzero(~decided_mask)
    decided = Stops(
        rows=np.zeros(0, dtype=np.int64),
        U=np.zeros(0),
        at=np.column_stack([hit, first + 1]).astype(np.int64),
        side=c.side[c.sure].astype(np.int8),
        value=V[first, hit],
        unsure=np.zeros(0, dtype=np.int64),
    )
    return Triage(
        decided=decided,
        rest=rest,
        features=None if single else features[rest],
        band=band,
        unsure=c.walks[~c.sure],
    )


def _running(P: np.ndarray) -> np.ndarray:
    """``P`` (positions, rows) summed along its positions, in place: a whole row of sums at a
    time (numpy's ``cumsum`` along the first axis walks each column on its own: 0.3-0.5 ms for
    16 positions of 3,400 rows against ~0.05). The same sums in the same order."""
    for t in range(1, P.shape[0]):
        np.add(P[t - 1], P[t], out=P[t])
    return P


def merged(tri: Triage, walked: Stops) -> Stops:
    """The chunk's :class:`Stops` from a triage and the walk of its other rows (``walked``,
    whose rows are positions in ``tri.rest``)."""
    rest = tri.rest
    return Stops(
        rows=rest[walked.rows],
        U=walked.U,
        at=np.concatenate(
            [tri.decided.at, np.column_stack([rest[walked.at[:, 0]], walked.at[:, 1]])]
        ).astype(np.int64),
        side=np.concatenate([tri.decided.side, walked.side]).astype(np.int8),
        value=np.concatenate([tri.decided.value, walked.value]),
        unsure=rest[walked.unsure],
    )
