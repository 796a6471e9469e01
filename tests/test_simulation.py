"""The Brownian-bridge simulation (SPEC §5): conservative boundary and sqrt(n) stopping time."""

from __future__ import annotations

import numpy as np
import pytest

from attentive.simulation import (
    default_deltas,
    simulate_decision_error,
    simulate_stopping_time,
    stopping_time_slope,
)


def test_exact_bridge_sampler_agrees_with_direct_rejection():
    deltas = np.array([0.01, 0.1, 0.5])
    bridge = simulate_decision_error(100, deltas, n_paths=30_000, random_state=0)
    direct = simulate_decision_error(100, deltas, n_paths=100_000, method="direct", random_state=1)
    assert direct.n_paths > 20_000  # about 31% of walks end below 0 at n = 100
    se = np.sqrt(bridge.stderr**2 + direct.stderr**2)
    assert np.all(np.abs(bridge.actual - direct.actual) <= 4 * se + 1e-4)


@pytest.mark.parametrize("n", [1000, 10_000])
def test_constant_boundary_is_conservative(n):
    sim = simulate_decision_error(
        n, default_deltas(8), n_paths=4000 if n > 1000 else 10_000, random_state=2
    )
    # The simulated boundary is the paper's: |τ| = sqrt(V) sqrt(ln(1/sqrt(δ))) with V = n, θ = 0.
    np.testing.assert_allclose(sim.taus, np.sqrt(n) * np.sqrt(np.log(1 / np.sqrt(sim.deltas))))
    assert np.all(sim.actual <= sim.deltas + 3 * sim.stderr)
    # Not vacuous: the actual error grows with the required one.
    assert sim.actual[-1] > 10 * max(sim.actual[0], 1e-4)


def test_stopping_time_grows_like_sqrt_n():
    ns = np.geomspace(100, 10_000, 5).astype(int)
    times = simulate_stopping_time(ns, 0.05, n_paths=600, random_state=0)
    slope = stopping_time_slope(ns, times)
    assert 0.4 <= slope <= 0.6
    truncated = simulate_stopping_time(ns, 0.05, n_paths=600, truncate=True, random_state=0)
    assert np.all(truncated <= ns)
    assert np.all(truncated <= times * 1.05)


def test_simulation_rejects_bad_delta():
    from attentive import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        simulate_decision_error(100, [0.0])
