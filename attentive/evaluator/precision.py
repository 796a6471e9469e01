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

__all__ = ["U32", "U64", "product_relative_error", "rounding_allowance"]

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
    """
    norm_error = np.asarray(norm_error, dtype=np.float64)
    x_norms = np.sqrt(np.asarray(x_norms, dtype=np.float64) ** 2 + norm_error)
    e = 1.01 * (d + 2) * U32 * 2.0 * gamma * x_norms * sv_norm
    e += gamma * norm_error
    e += 1.01 * (d + 8) * U64 * (gamma * (x_norms + sv_norm) ** 2 + log_w_max)
    rho = 1.001 * e + 8 * U64
    return 1.01 * rho / (1.0 - rho)


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
