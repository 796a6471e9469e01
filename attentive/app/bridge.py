"""The Brownian-bridge teaching tab's data (no Panel): simulated walks with a drift, the
Constant-STST boundary for δ, required against actual error, and the √n growth of the stopping
time (SPEC §5, the paper's Figure 3, through :mod:`attentive.simulation`).

Walks are ``S_t = Σ_{i≤t} X_i`` with ``X_i ~ N(drift, 1)``, ``V = n``, ``θ = 0`` and the upper
threshold τ(δ): a walk stops (predicts positive) the first time ``S_t ≥ τ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from attentive import constant_threshold
from attentive.simulation import (
    simulate_decision_error,
    simulate_stopping_time,
    stopping_time_slope,
)

__all__ = ["BridgeFigures", "bridge_figures"]

N_WALKS = 40
ERROR_PATHS = 2_000
TIME_PATHS = 300


@dataclass(frozen=True)
class BridgeFigures:
    """What the tab draws: ``x``/``y`` one NaN-separated path of the walks (each cut at its stop),
    ``stop_t``/``stop_s`` the stops, ``tau`` the threshold, ``decision_error`` the simulation's
    required against actual error (:meth:`attentive.simulation.BridgeSimulation.to_frame`; also as
    ``required``/``actual``/``stderr``/``error_paths``), ``ns``/``mean_times`` the mean stopping
    time ``E[T]`` and its log-log slope, ``mean_times_truncated`` ``E[min(T, n)]``.
    :attr:`decision_error` and :attr:`stopping_time` are the frames the paper's Figure 3 is drawn
    from (:mod:`attentive.plots`)."""

    n: int
    drift: float
    delta: float
    tau: float
    x: np.ndarray
    y: np.ndarray
    stop_t: np.ndarray
    stop_s: np.ndarray
    decision_error: pd.DataFrame
    ns: np.ndarray
    mean_times: np.ndarray
    mean_times_truncated: np.ndarray
    slope: float

    @property
    def required(self) -> np.ndarray:
        return self.decision_error["required"].to_numpy()

    @property
    def actual(self) -> np.ndarray:
        return self.decision_error["actual"].to_numpy()

    @property
    def stderr(self) -> np.ndarray:
        return self.decision_error["stderr"].to_numpy()

    @property
    def error_paths(self) -> int:
        return int(self.decision_error["paths_below_zero"].iloc[0])

    def error_points(self) -> dict[str, np.ndarray]:
        """Figure 3 (a)'s points where some path crossed: ``required``/``actual`` and the ± 2
        standard-error bar ``lower``/``upper`` (on log axes the lower end stops short of zero);
        ``none_required``/``none_at`` the δ where no path crossed, drawn at half a path; and
        ``reference`` the line ``actual = required``."""
        de = self.decision_error
        seen = de[de["actual"] > 0]
        y = seen["actual"].to_numpy(dtype=np.float64)
        err = 2.0 * seen["stderr"].to_numpy(dtype=np.float64)
        none = de[de["actual"] <= 0]
        return {
            "required": seen["required"].to_numpy(dtype=np.float64),
            "actual": y,
            "lower": y - np.minimum(err, 0.9 * y),
            "upper": y + err,
            "none_required": none["required"].to_numpy(dtype=np.float64),
            "none_at": np.full(len(none), 0.5 / max(self.error_paths, 1)),
            "reference": np.geomspace(float(de["required"].min()), 0.5, 200),
        }

    def stopping_fits(self) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
        """Figure 3 (b)'s least-squares lines on log–log axes, for ``"mean"`` (``E[T]``) and
        ``"truncated"`` (``E[min(T, n)]``): ``(n, fitted time, slope)`` over a dense n."""
        dense = np.geomspace(self.ns.min(), self.ns.max(), 100)
        out = {}
        for key, times in (("mean", self.mean_times), ("truncated", self.mean_times_truncated)):
            slope, intercept = np.polyfit(np.log(self.ns), np.log(times), 1)
            out[key] = (dense, np.exp(intercept) * dense**slope, float(slope))
        return out

    @property
    def stopping_time(self) -> pd.DataFrame:
        """Mean stopping times against n, as :func:`attentive.plots.stopping_time_plot` takes them."""
        return pd.DataFrame(
            {
                "n": self.ns.astype(np.int64),
                "delta": self.delta,
                "mean_stopping_time": self.mean_times,
                "mean_stopping_time_truncated": self.mean_times_truncated,
            }
        )


def _walks(n: int, drift: float, tau: float, rng) -> tuple[np.ndarray, ...]:
    S = np.cumsum(rng.standard_normal((N_WALKS, n)) + drift, axis=1)
    hit = S >= tau
    crossed = hit.any(axis=1)
    stop = np.where(crossed, hit.argmax(axis=1) + 1, n)  # terms evaluated
    t = np.arange(n + 1, dtype=np.float64)
    S0 = np.concatenate([np.zeros((N_WALKS, 1)), S], axis=1)
    keep = t[None, :] <= stop[:, None]
    y = np.where(keep, S0, np.nan)
    x = np.broadcast_to(t, y.shape)
    gap = np.full((N_WALKS, 1), np.nan)
    xs = np.concatenate([x, gap], axis=1).ravel()
    ys = np.concatenate([y, gap], axis=1).ravel()
    # Drop the NaN tail after each stop (one NaN between walks is enough).
    keep_flat = np.concatenate([keep, np.ones((N_WALKS, 1), dtype=bool)], axis=1).ravel()
    return xs[keep_flat], ys[keep_flat], stop[crossed], S0[np.flatnonzero(crossed), stop[crossed]]


def bridge_figures(drift: float, n: int, delta: float, seed: int = 0) -> BridgeFigures:
    """The tab's data for a drift, a number of terms n and a required error δ."""
    n = int(n)
    rng = np.random.default_rng(seed)
    tau = constant_threshold(float(delta), float(n), 0.0, side="upper")
    x, y, stop_t, stop_s = _walks(n, float(drift), tau, rng)
    sim = simulate_decision_error(n, drift=drift, n_paths=ERROR_PATHS, random_state=seed)
    ns = np.unique(np.geomspace(max(8, n // 16), n, 5).round().astype(np.int64))
    times = simulate_stopping_time(ns, delta, drift=drift, n_paths=TIME_PATHS, random_state=seed)
    truncated = simulate_stopping_time(
        ns, delta, drift=drift, n_paths=TIME_PATHS, truncate=True, random_state=seed
    )
    return BridgeFigures(
        n=n,
        drift=float(drift),
        delta=float(delta),
        tau=float(tau),
        x=x,
        y=y,
        stop_t=stop_t.astype(np.float64),
        stop_s=stop_s,
        decision_error=sim.to_frame(),
        ns=ns.astype(np.float64),
        mean_times=times,
        mean_times_truncated=truncated,
        slope=stopping_time_slope(ns, times),
    )
