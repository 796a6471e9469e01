"""Certified error bounds of single-precision RBF terms (SPEC §1's terms computed with float32
products), for the walks and full evaluation that use them.

A stop needs only the side of a threshold that ``U_t`` is on, and a label only the side of θ
that ``U_n`` is on. So a term source may compute its products in float32 and bound, per row, the
relative error of every term it gives (:func:`product_relative_error`): the walk then stops only
where the bound makes the crossing certain, and re-walks in double precision the walks it leaves
unsure; full evaluation recomputes in double precision the rows whose side of θ the bound leaves
unsure. Stops, sides and labels are those of double precision; values are within the bound.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "MAX_EXPONENT_ERROR",
    "U32",
    "U64",
    "dot_bounds",
    "product_relative_error",
    "rounding_allowance",
    "single_totals_error",
    "split_relative_error",
    "term_relative_error",
]

U32 = 2.0**-24  # float32 unit roundoff
U64 = 2.0**-53
# A row whose terms could be off by more than this walks in double precision: its band would
# leave most of its crossings unsure.
MAX_RELATIVE_TERM_ERROR = 1e-3


def product_relative_error(
    gamma: float,
    sv_norm: float,
    log_w_max: float,
    x_norms: np.ndarray,
    d: int,
    norm_error: np.ndarray | float = 0.0,
    dot_bound: np.ndarray | None = None,
) -> np.ndarray:
    """Bound, per example, on the relative error of each RBF term ``|w| K(x, y)`` computed as
    ``exp(fl32(x · 2γy) + (−γ|y|² + log|w|) − γ|x|²)`` with the product in float32 and the rest
    in double precision.

    The product of the float32 roundings of ``x`` and ``2γy`` (each element off by at most
    ``u32`` relatively), summed in any order in float32, is off from ``x · 2γy`` by at most
    ``((1 + u32)²(1 + γ_d) − 1) Σ|x_i 2γy_i| ≤ 1.01 (d + 2) u32 · 2γ|x||y|`` (``γ_d = d u32 /
    (1 − d u32)``; Cauchy–Schwarz). The rest of the exponent in double precision adds at most
    ``(d + 8) u64 (γ(|x| + |y|)² + |log|w||)``. An exponent off by ``e ≤ 10⁻³`` puts the term off
    by at most ``e^e − 1 ≤ 1.001 e`` of itself, and double-precision ``exp`` adds a few ulp. The
    result ``ρ(x)``: every computed term ``|w| K̂`` is within ``ρ(x) |w| K̂`` of the exact one
    (``K̂ ≥ K (1 − ρ)``, so bounding by the computed magnitude loses a factor ``1/(1 − ρ)``,
    included). ``sv_norm`` is the largest ``|y|``, ``log_w_max`` the largest ``|log|w||``.
    ``norm_error``: a bound on the error of the ``|x|²`` the exponent's ``−γ|x|²`` was computed
    from (``x_norms`` their roots), which moves the exponent by ``γ`` times as much.
    ``dot_bound``: per row, another upper bound on ``Σ|x_i 2γy_i|`` over every support vector
    (:func:`dot_bounds`), used where it is below Cauchy–Schwarz's ``2γ|x||y|``.
    """
    x_norms, rest = _exponent_rest(gamma, sv_norm, log_w_max, x_norms, d, norm_error)
    dots = 2.0 * gamma * x_norms * sv_norm
    if dot_bound is not None:
        dots = np.minimum(dots, dot_bound)
    return term_relative_error(1.01 * (d + 2) * U32 * dots + rest)


def _exponent_rest(gamma, sv_norm, log_w_max, x_norms, d, norm_error):
    """``(|x|, rest)``: the rows' norms with their ``|x|²``'s error bound added, and what bounds
    a term's exponent error besides its float32 product — the norm's error (``γ`` times it) and
    double precision's rounding at the largest ``|y|`` and ``|log|w||``."""
    norm_error = np.asarray(norm_error, dtype=np.float64)
    x_norms = np.sqrt(np.asarray(x_norms, dtype=np.float64) ** 2 + norm_error)
    rest = gamma * norm_error
    rest = rest + 1.01 * (d + 8) * U64 * (gamma * (x_norms + sv_norm) ** 2 + log_w_max)
    return x_norms, rest


#: The largest error of a term's exponent the bounds here hold for: ``e^e − 1 ≤ 1.001 e`` needs
#: ``e`` at most about this. A row whose exponent could be off by more has no useful band.
MAX_EXPONENT_ERROR = 1e-3


def term_relative_error(e) -> np.ndarray:
    """A term's relative error from a bound ``e`` on its exponent's: ``1.01 ρ / (1 − ρ)`` with
    ``ρ = 1.001 e + 8 u64`` (``exp`` in double precision adds a few ulp; bounding by the computed
    magnitude loses ``1 / (1 − ρ)``). Infinite where ``e`` is above :data:`MAX_EXPONENT_ERROR`
    (the step ``e^e − 1 ≤ 1.001 e`` no longer holds, and ``1 − ρ`` may be negative) or not a
    number: no band."""
    e = np.asarray(e, dtype=np.float64)
    rho = 1.001 * e + 8 * U64
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.01 * rho / (1.0 - rho)
    return np.where(e <= MAX_EXPONENT_ERROR, out, np.inf)


def split_relative_error(
    gamma: float,
    sv_norm: float,
    log_w_max: float,
    x_norms: np.ndarray,
    d: int,
    norm_error: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`product_relative_error`'s bound split by support vector: ``(base, per_norm)`` per
    example, such that the term of a support vector ``y`` (``|y| ≤ sv_norm``) is within ``(base +
    per_norm |y|) |w| K̂`` of the exact one, and ``base + per_norm · sv_norm`` is the bound
    :func:`product_relative_error` gives (by Cauchy–Schwarz).

    The product's part of the exponent's error, ``1.01 (d + 2) u32 · 2γ|x||y|``, is the term's
    own; the rest (the norm's error, double precision's rounding at the largest ``|y|`` and
    ``|log|w||``) and the factor ``1.01 / (1 − ρ₀)`` are taken at their largest, ``ρ₀`` the
    largest term's ``1.001 e + 8 u64``: the bound of each step of :func:`product_relative_error`
    holds term by term, and a term's ``ρᵢ / (1 − ρᵢ)`` is at most ``ρᵢ / (1 − ρ₀)``. A band on a
    running sum is then ``base Σ|w| K̂ + per_norm Σ|y| |w| K̂``, far below ``ρ Σ|w| K̂`` where
    a few support vectors of large norm set ``sv_norm`` (standardised pixels: 9-10 times).
    Rows without a useful band (:func:`term_relative_error`): ``base`` infinite, ``per_norm``
    0."""
    x_norms, rest = _exponent_rest(gamma, sv_norm, log_w_max, x_norms, d, norm_error)
    per_dot = 1.01 * (d + 2) * U32 * 2.0 * gamma * x_norms
    e = per_dot * sv_norm + rest
    rho0 = 1.001 * e + 8 * U64
    ok = e <= MAX_EXPONENT_ERROR  # else no band (term_relative_error)
    c = np.where(ok, 1.01 / np.where(ok, 1.0 - rho0, 1.0), 0.0)
    base = np.where(ok, c * (1.001 * rest + 8 * U64), np.inf)
    return base, c * 1.001 * per_dot


def rounding_allowance(
    weights: np.ndarray,
    centring_sums: np.ndarray,
    thresholds,
    scale: float,
    d: int,
    final: float | None = None,
) -> np.ndarray:
    """Double-precision rounding of the running sums, the centring curve and the thresholds, here
    and in the reference, per position ``t = 1 .. n``: what a band adds to the terms' own error.

    ``scale`` bounds the size of a term's exponent (``γ(|x| + |y|)²``), ``thresholds`` is a
    :class:`~attentive.evaluator.plan.Thresholds`, ``final`` the threshold ``U_n`` is compared
    with, if any."""
    n = weights.size
    absw = np.abs(weights)
    size = np.cumsum(absw) * (1.0 + scale) + np.abs(centring_sums)
    for t in (thresholds.lower, thresholds.upper):
        if t is not None:
            size[: n - 1] += np.where(np.isfinite(t), np.abs(t), 0.0)
    if final is not None and np.isfinite(final):
        size[n - 1] += abs(final)
    return 8 * (np.arange(1, n + 1) + d + 8) * U64 * size


#: ``np.exp`` in float32 is within this many units in the last place of the exact value (NumPy's
#: SIMD implementations measure at most 2.52, and its tests allow 3; the C library's ``expf`` 1).
EXP32_ULPS = 8


def dot_bounds(rows: np.ndarray, column_max32: np.ndarray) -> np.ndarray:
    """Per float32 row ``x`` (on the support vectors' columns), an upper bound on
    ``Σ_i |x_i| max_y |2γy_i|`` and so on ``Σ_i |x_i 2γy_i|`` for every support vector ``y``
    (``column_max32``: those maxima rounded up to float32).

    Hölder's bound where Cauchy–Schwarz's ``2γ|x| max|y|`` is loose: a row far out on columns
    where every support vector is small (a rare stroke's pixels after a StandardScaler). It is
    summed in float32; ``k`` products of non-negative values and their sum are within
    ``(1 + u32)^(k+1) − 1 ≤ 1.01 (k + 1) u32`` of themselves, and rows rounded to float32 from
    float64 within ``u32``, so the computed value times ``1 + 1.01 (k + 3) u32`` is above the
    exact one (infinite where the sum overflows)."""
    k = rows.shape[1]
    if (k + 3) * U32 > 0.01:
        return np.full(rows.shape[0], np.inf)
    with np.errstate(over="ignore"):
        sums = np.abs(rows) @ column_max32
    return sums.astype(np.float64) * (1.0 + 1.01 * (k + 3) * U32)


def single_totals_error(
    rho: np.ndarray, exponent_size: np.ndarray, masses: np.ndarray, budget: int
) -> np.ndarray:
    """Bound, per row, on the error of ``U_B = Σ_{k≤B} s_k |w| K̂_k`` computed in float32 from
    the float32 products: the exponent ``fl(fl(p + fl(o)) + fl(r))`` (``o`` the support
    vector's part, ``r = −γ|x|²``) summed in float32, ``exp`` in float32, and the signed sum
    and the mass ``M̂ = Σ |w| K̂`` taken by one float32 product.

    ``rho``: the products' bound (:func:`product_relative_error`, which also covers the norm's
    error); ``exponent_size``: per row a bound on ``|p| + |o| + |r|``; ``masses``: ``M̂``. The
    roundings of ``o`` and ``r`` and the two additions move the exponent by at most
    ``3.01 u32`` of its size; an exponent off by ``E ≤ 10⁻³`` puts ``exp`` off by at most
    ``1.001 E`` of itself, float32 ``exp`` adds :data:`EXP32_ULPS` ulps (``2^-23`` each,
    relatively), and a term below float32's normal range at most that many ``2^-149``. Both
    sums in float32 are within ``γ_B = B u32 / (1 − B u32)`` of ``Σ K̂`` (the signs are ±1),
    and ``Σ K̂ ≤ M̂ / (1 − γ_B)``. Rows whose ``rho`` is infinite keep an infinite bound."""
    e = 1.0 / 1.001 * np.asarray(rho, dtype=np.float64) + 3.01 * U32 * exponent_size
    term = 1.001 * e + EXP32_ULPS * 2.0**-23
    term = term / (1.0 - term)
    g = budget * U32 / (1.0 - budget * U32)
    return (term + g) * masses / (1.0 - g) + budget * EXP32_ULPS * 2.0**-149
