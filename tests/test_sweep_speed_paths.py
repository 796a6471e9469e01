"""AttentiveSweep's record-based counts against a naive loop over τ (SPEC §4 definitions)."""

import numpy as np
import pytest

from attentive.metrics import AttentiveSweep


def _naive(S, theta_s, taus, side):
    """Per τ: walk every example to its first crossing at t < n, count terms and stops."""
    n = S.shape[1]
    full_positive = S[:, -1] >= theta_s
    protected = full_positive if side == "lower" else ~full_positive
    out = []
    for tau in taus:
        crossed = S[:, : n - 1] < tau if side == "lower" else S[:, : n - 1] > tau
        any_cross = crossed.any(axis=1)
        t = np.where(any_cross, np.argmax(crossed, axis=1) + 1, n)
        out.append((t.sum(), any_cross.sum(), (any_cross & protected).sum()))
    return np.array(out).T


@pytest.mark.parametrize("side", ["lower", "upper"])
@pytest.mark.parametrize("kind", ["continuous", "integer", "tiny"])
def test_counts_equal_naive_loop(side, kind):
    rng = np.random.default_rng(7)
    if kind == "continuous":
        S = np.cumsum(rng.normal(0.05, 1.0, size=(60, 40)), axis=1)
    elif kind == "integer":  # many exact ties between partial scores and with τ
        S = np.cumsum(rng.integers(-2, 3, size=(50, 30)), axis=1).astype(float)
    else:
        S = rng.normal(size=(3, 2))
    theta_s = 0.3 if kind != "integer" else 1.0
    sweep = AttentiveSweep(S, theta_s, side)
    taus = np.concatenate([sweep.default_taus(41), np.unique(S), [-np.inf, np.inf]])
    total, stopped, bad = sweep.counts(taus)
    want = _naive(S, theta_s, taus, side)
    np.testing.assert_array_equal(total, want[0])
    np.testing.assert_array_equal(stopped, want[1])
    np.testing.assert_array_equal(bad, want[2])
    curve = sweep.curve(taus)
    np.testing.assert_allclose(curve.mean_evaluated_fraction, want[0] / S.size)


def test_single_term_never_stops():
    S = np.array([[1.0], [-2.0]])
    total, stopped, _ = AttentiveSweep(S, 0.0, "lower").counts([-5.0, 0.0, 5.0])
    np.testing.assert_array_equal(total, [2, 2, 2])
    np.testing.assert_array_equal(stopped, [0, 0, 0])
