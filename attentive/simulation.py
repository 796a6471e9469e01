"""The Brownian-bridge simulation of the paper's Figure 3 (SPEC §5).

Walks ``S_t = Σ_{i≤t} X_i`` with ``X_i ~ N(drift, 1)`` i.i.d., ``w_i = 1``, ``θ = 0``, ``V = n``, and
the **upper** Constant-STST threshold ``τ(δ)`` of SPEC §2. Two quantities:

* the **actual** decision error ``P(max_{t<n} S_t > τ | S_n < 0)``. Paths ending below 0 are rare
  for large n (``P ≈ Φ(−drift √n)``, 3·10⁻⁷ at n = 10⁴), so instead of discarding almost every path
  we sample the conditioning event exactly: draw ``S_n`` from its normal law truncated to ``(−∞, 0)``,
  then the path given ``S_n`` — for i.i.d. Gaussian steps that is ``Z_t − (t/n) Z_n + (t/n) S_n`` with
  ``Z`` a standard walk, whatever the drift. ``method="direct"`` keeps the plain rejection estimate
  as an independent check for small n.
* the mean **stopping time** of unconditioned walks: ``E[T_τ]`` as in the paper's Theorem 2
  (grows like ``√n``), or ``E[min(T_τ, n)]``, what a predictor with n terms pays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import truncnorm

from attentive.boundaries import constant_threshold
from attentive.validation import check_delta

__all__ = [
    "BridgeSimulation",
    "default_deltas",
    "simulate_decision_error",
    "simulate_stopping_time",
    "stopping_time_slope",
]

_CHUNK_ELEMENTS = 4_000_000


def default_deltas(k: int = 12) -> np.ndarray:
    """A log grid of required error rates from 1e-3 to 0.5 (the paper's Figure 3a range)."""
    return np.geomspace(1e-3, 0.5, k)


def _taus(deltas, n: int) -> np.ndarray:
    return np.array([constant_threshold(d, float(n), 0.0, side="upper") for d in deltas])


def _chunks(total: int, n: int):
    step = max(1, _CHUNK_ELEMENTS // n)
    done = 0
    while done < total:
        size = min(step, total - done)
        yield size
        done += size


@dataclass(frozen=True)
class BridgeSimulation:
    """Result of :func:`simulate_decision_error`.

    Attributes
    ----------
    n : int
    deltas : ndarray
        Required error rates.
    taus : ndarray
        The upper Constant-STST thresholds.
    actual : ndarray
        Estimated ``P(cross τ before n | S_n < 0)``.
    stderr : ndarray
        Monte-Carlo standard errors of ``actual``.
    n_paths : int
        Paths ending below 0 that the estimate averages over.
    """

    n: int
    deltas: np.ndarray
    taus: np.ndarray
    actual: np.ndarray
    stderr: np.ndarray
    n_paths: int
    method: str

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            {
                "n": self.n,
                "required": self.deltas,
                "tau": self.taus,
                "actual": self.actual,
                "stderr": self.stderr,
                "paths_below_zero": self.n_paths,
            }
        )


def simulate_decision_error(
    n: int = 1000,
    deltas=None,
    *,
    drift: float = 0.05,
    n_paths: int = 20_000,
    method: str = "bridge",
    random_state=None,
) -> BridgeSimulation:
    """Estimate the actual decision error of the upper Constant-STST threshold (SPEC §5).

    Parameters
    ----------
    n : int
        Number of terms.
    deltas : array-like, optional
        Required error rates (default :func:`default_deltas`).
    drift : float
        ``E[X_i]``.
    n_paths : int
        For ``method="bridge"``: paths ending below 0 (all of them do). For ``"direct"``: paths
        simulated, of which only those ending below 0 count.
    method : {"bridge", "direct"}
    random_state : int or Generator, optional
    """
    deltas = default_deltas() if deltas is None else np.atleast_1d(np.asarray(deltas, float))
    for d in deltas:
        check_delta(d)
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    rng = np.random.default_rng(random_state)
    taus = _taus(deltas, n)
    crossed = np.zeros(deltas.size)
    kept = 0
    t_frac = np.arange(1, n) / n
    for size in _chunks(n_paths, n):
        if method == "bridge":
            b = (0.0 - drift * n) / np.sqrt(n)
            s_n = truncnorm.rvs(
                -np.inf, b, loc=drift * n, scale=np.sqrt(n), size=size, random_state=rng
            )
            Z = np.cumsum(rng.standard_normal((size, n - 1)), axis=1)
            z_n = Z[:, -1] + rng.standard_normal(size)
            paths = Z - np.outer(z_n - s_n, t_frac)
            below = np.ones(size, dtype=bool)
        elif method == "direct":
            steps = rng.standard_normal((size, n)) + drift
            paths = np.cumsum(steps, axis=1)
            below = paths[:, -1] < 0
            paths = paths[:, : n - 1]
        else:
            raise ValueError(f"method must be 'bridge' or 'direct', got {method!r}")
        peak = paths[below].max(axis=1)
        kept += int(below.sum())
        crossed += (peak[:, None] > taus[None, :]).sum(axis=0)
    actual = crossed / kept if kept else np.full(deltas.size, np.nan)
    stderr = np.sqrt(actual * (1 - actual) / kept) if kept else np.full(deltas.size, np.nan)
    return BridgeSimulation(n, deltas, taus, actual, stderr, kept, method)


def simulate_stopping_time(
    ns,
    delta: float = 0.05,
    *,
    drift: float = 0.05,
    n_paths: int = 2_000,
    truncate: bool = False,
    random_state=None,
) -> np.ndarray:
    """Mean stopping time of walks with positive drift at the upper threshold ``τ(δ)`` (SPEC §5).

    ``T_τ = inf{t : S_t ≥ τ}`` with ``τ`` the upper Constant-STST threshold for ``V = n``.

    Parameters
    ----------
    ns : int or array of int
        Numbers of terms.
    truncate : bool
        ``False`` (default): the paper's Theorem 2 quantity ``E[T_τ]``, the walk continuing past
        ``n`` until it crosses (``≈ (τ + overshoot)/drift``, so ``∝ √n``). ``True``: what a predictor
        with ``n`` terms pays, ``E[min(T_τ, n)]``; for small ``n`` most walks reach ``n`` first, so
        its log-log slope only approaches 1/2 for large ``n``.
    """
    check_delta(delta)
    if drift <= 0:
        raise ValueError(f"drift must be positive for the walks to cross, got {drift}")
    rng = np.random.default_rng(random_state)
    out = []
    for n in np.atleast_1d(ns):
        n = int(n)
        tau = constant_threshold(delta, float(n), 0.0, side="upper")
        horizon = n - 1 if truncate else 100 * n + int(50 * tau / drift)
        total = 0.0
        for size in _chunks(n_paths, n):
            start = np.zeros(size)
            first = np.full(size, n if truncate else horizon, dtype=np.int64)
            active = np.arange(size)
            done_steps = 0
            while active.size and done_steps < horizon:
                block = min(n, horizon - done_steps)
                paths = start[active, None] + np.cumsum(
                    rng.standard_normal((active.size, block)) + drift, axis=1
                )
                hit = paths >= tau
                crossed = hit.any(axis=1)
                first[active[crossed]] = done_steps + hit[crossed].argmax(axis=1) + 1
                start[active] = paths[:, -1]
                active = active[~crossed]
                done_steps += block
            total += float(first.sum())
        out.append(total / n_paths)
    return np.asarray(out)


def stopping_time_slope(ns, mean_times) -> float:
    """Least-squares slope of ``log(mean stopping time)`` against ``log n``."""
    slope, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(mean_times, float)), 1)
    return float(slope)
