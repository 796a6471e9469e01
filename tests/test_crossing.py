"""The crossing module (the one statement of SPEC §2's stopping rule) against loops written from
the rule itself: "the first ``t < n`` beyond a threshold; the lower side wins ties; never after
the last term; a NaN statistic (a walk already stopped) crosses nothing".

Values and thresholds are drawn from a few multiples of 1/4, so statistics equal to a threshold
(not a crossing: the comparisons are strict) and positions where both sides are crossed (a lower
threshold above the upper one) come up often; thresholds include ±inf.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attentive.evaluator.crossing import (
    certain_crossings,
    combine_sides,
    first_crossings,
    stops_of,
)

VALUES = [-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0]
THRESHOLDS = [*VALUES, -np.inf, np.inf]


def _first_by_loop(P, lower, upper, band=None):
    """Per walk (column of ``P``): the first position where a crossing is possible (within
    ``band`` of the statistic; None: exactly), whether it is certain and its side, by a loop.

    Returns ``{walk: (position, side, sure)}`` for the walks that (may) cross."""
    k, w = P.shape
    band = np.zeros((k, w)) if band is None else np.broadcast_to(band, (k, w))
    out = {}
    for j in range(w):
        for i in range(k):
            p, b = P[i, j], band[i, j]
            low = lower is not None and p - b < lower[i]
            high = upper is not None and p + b > upper[i]
            if not (low or high):
                continue
            sure_low = lower is not None and p < lower[i] - b
            sure_high = upper is not None and p > upper[i] + b and not low
            side = -1 if sure_low else 1 if sure_high else (-1 if low else 1)
            out[j] = (i, side, bool(sure_low or sure_high))
            break
    return out


@st.composite
def blocks(draw, min_positions=1):
    """A block of statistics (positions × walks) with whole or partial NaN walks, and each
    side's thresholds per position (None: the side unused)."""
    k = draw(st.integers(min_positions, 9))
    w = draw(st.integers(0, 8))
    P = draw(arrays(np.float64, (k, w), elements=st.sampled_from(VALUES)))
    for j in range(w):
        start = draw(st.sampled_from([k, k, 0, k // 2]))  # NaN from here on (k: none)
        P[start:, j] = np.nan
    sides = draw(st.sampled_from(["lower", "upper", "both", "none"]))
    lower = upper = None
    if sides in ("lower", "both"):
        lower = draw(arrays(np.float64, k, elements=st.sampled_from(THRESHOLDS)))
    if sides in ("upper", "both"):
        upper = draw(arrays(np.float64, k, elements=st.sampled_from(THRESHOLDS)))
    return P, lower, upper


def _as_dict(c, with_sure=False):
    out = {}
    for j, i, s, *sure in zip(
        c.walks.tolist(),
        c.first.tolist(),
        c.side.tolist(),
        *([c.sure] if with_sure else []),
        strict=True,
    ):
        out[j] = (i, s, bool(sure[0])) if with_sure else (i, s)
    return out


@settings(max_examples=400, deadline=None)
@given(blocks())
def test_first_crossings_by_loop(block):
    P, lower, upper = block
    expect = {j: (i, s) for j, (i, s, _) in _first_by_loop(P, lower, upper).items()}
    assert _as_dict(first_crossings(P, lower, upper)) == expect
    # Into caller's scratch arrays (the walk's): the same, and P is left alone.
    before = P.copy()
    scratch = (np.empty(P.shape, dtype=bool), np.empty(P.shape, dtype=bool))
    assert _as_dict(first_crossings(P, lower, upper, scratch=scratch)) == expect
    np.testing.assert_array_equal(P, before)


def test_a_position_crossed_on_both_sides_is_a_lower_stop():
    # Position 1's lower threshold is above its upper one: walk 0 crosses both sides there,
    # walk 1 only the upper side; walk 2 equals a threshold or is NaN (stopped): no crossing.
    P = np.array([[0.0, 0.0, -1.0], [0.5, 1.0, np.nan], [0.0, 0.0, 0.5]])
    lower = np.array([-1.0, 0.75, 0.5])
    upper = np.array([1.0, 0.25, 0.5])
    assert _as_dict(first_crossings(P, lower, upper)) == {0: (1, -1), 1: (1, 1)}
    # Whole walks, one more position (the last: never tested, though beyond both thresholds).
    V = np.column_stack([P.T, [9.0, 9.0, 9.0]])
    t, side = stops_of(V, np.append(lower, 10.0), np.append(upper, 0.0))
    np.testing.assert_array_equal(t, [2, 2, 4])
    np.testing.assert_array_equal(side, [-1, 1, 0])


@pytest.mark.parametrize("band_shape", ["scalar", "per position", "per walk", "per both"])
@settings(max_examples=150, deadline=None)
@given(block=blocks(), data=st.data())
def test_certain_crossings_by_loop(band_shape, block, data):
    P, lower, upper = block
    k, w = P.shape
    shape = {"scalar": (), "per position": (k, 1), "per walk": (w,), "per both": (k, w)}
    band = data.draw(
        arrays(np.float64, shape[band_shape], elements=st.sampled_from([0.0, 0.125, 0.25, 0.5]))
    )
    got = _as_dict(certain_crossings(P, lower, upper, band), with_sure=True)
    expect = _first_by_loop(P, lower, upper, band)
    # A side is reported for certain crossings only (an unsure one is walked again exactly).
    assert {j: (i, sure) for j, (i, _, sure) in got.items()} == {
        j: (i, sure) for j, (i, _, sure) in expect.items()
    }
    assert {j: s for j, (_, s, sure) in got.items() if sure} == {
        j: s for j, (_, s, sure) in expect.items() if sure
    }


@settings(max_examples=300, deadline=None)
@given(block=blocks(), data=st.data())
def test_a_certain_crossing_is_the_true_walks_crossing(block, data):
    """What the band is for: statistics known to within their band. A walk reported sure stops
    where, and on the side, the true walk does; a walk with no possible crossing has none."""
    P, lower, upper = block
    k, w = P.shape
    band = data.draw(arrays(np.float64, (k, w), elements=st.sampled_from([0.0, 0.125, 0.25])))
    # The true statistics: anywhere within the band (sampled on a finer grid, ends included).
    frac = data.draw(arrays(np.float64, (k, w), elements=st.sampled_from([-1.0, -0.5, 0, 0.5, 1])))
    true = P + frac * band
    truth = {j: (i, s) for j, (i, s, _) in _first_by_loop(true, lower, upper).items()}
    c = certain_crossings(P, lower, upper, band)
    reported = set(c.walks.tolist())
    for j, i, s, sure in zip(
        c.walks.tolist(), c.first.tolist(), c.side.tolist(), c.sure, strict=True
    ):
        if sure:
            assert truth.get(j) == (i, s)
        elif j in truth:
            assert truth[j][0] >= i  # the true walk does not cross before the unsure position
    assert not set(truth) - reported  # every true crossing was at least possible


@settings(max_examples=300, deadline=None)
@given(blocks(min_positions=2))
def test_stops_of_by_loop(block):
    """Whole walks along axis 0: the stop (1-based, n if none) and side; the last position is
    never tested, whatever its thresholds."""
    P, lower, upper = block
    V = P.T  # walks along axis 0, positions along axis 1
    m, n = V.shape
    t, side = stops_of(V, lower, upper)
    for j in range(m):
        want_t, want_side = n, 0
        for i in range(n - 1):
            low = lower is not None and V[j, i] < lower[i]
            high = upper is not None and V[j, i] > upper[i]
            if low or high:
                want_t, want_side = i + 1, -1 if low else 1
                break
        assert (t[j], side[j]) == (want_t, want_side)


def test_stops_of_a_single_position_never_stops():
    V = np.array([[5.0], [-5.0]])
    t, side = stops_of(V, np.array([np.inf]), np.array([-np.inf]))
    np.testing.assert_array_equal(t, [1, 1])
    np.testing.assert_array_equal(side, [0, 0])


@settings(max_examples=300, deadline=None)
@given(blocks(min_positions=2))
def test_combine_sides_equals_one_pass_over_both_sides(block):
    """Each side's first crossing found on its own (as the calibration grid and sparse linear
    models find them), then combined: the same stop and side as one pass over both sides."""
    P, lower, upper = block
    V = P.T
    m, n = V.shape
    none = np.full(n, np.nan)

    def first_of(thresholds, sign):
        if thresholds is None:
            return np.full(m, n + 3)  # a side never crossed: any value ≥ n
        t, side = stops_of(V, none if sign > 0 else thresholds, thresholds if sign > 0 else none)
        return np.where(side != 0, t, n)

    t, side = combine_sides(first_of(lower, -1), first_of(upper, 1), n)
    want_t, want_side = stops_of(V, lower, upper)
    np.testing.assert_array_equal(t, want_t)
    np.testing.assert_array_equal(side, want_side)


def test_combine_sides_by_cases():
    n = 5
    t_lower = np.array([2, 3, 3, 5, 7, 5, 1])
    t_upper = np.array([3, 2, 3, 1, 5, 9, 6])
    t, side = combine_sides(t_lower, t_upper, n)
    np.testing.assert_array_equal(t, [2, 2, 3, 1, 5, 5, 1])
    np.testing.assert_array_equal(side, [-1, 1, -1, 1, 0, 0, -1])
