"""Mixed precision for RBF walks on dense data, and its error analysis.

A stop needs only the side of a threshold that ``U_t`` is on, not ``U_t`` itself. So the RBF walk
can compute its kernel values in single precision (numpy's float32 ``exp`` is several times faster
than its float64 ``exp`` on CPUs without AVX-512), sum them in double precision, and bound the
error of every ``U_t`` (:func:`rbf_error_band`). A walk stops where the bound makes its crossing
certain; walks that come within the bound of a threshold first are walked again in double
precision, and walks that never stop get their ``U_n`` from a double-precision product. So stops,
sides and every returned value are those of the double-precision walk (when only labels are asked
for, a walk that never stops keeps its single-precision ``U_n`` unless it is within the bound of θ).
"""

from __future__ import annotations

import numpy as np

from attentive.evaluator.dense import (
    MIN_CHUNK,
    RBFTerms,
    Stops,
    Terms,
    augmented_rows,
    check_finite_rows,
    rbf_row_cost,
    walk_rows,
)
from attentive.evaluator.plan import BlockSchedule, Thresholds, WalkPlan

__all__ = [
    "EXP32_RELATIVE_ERROR",
    "SINGLE_PRODUCT_MIN_FEATURES",
    "RBFTerms32",
    "RBFTermsSingleProduct",
    "mixed_pays",
    "product_relative_error",
    "rbf_error_band",
    "rbf_totals",
    "single_exp_pays",
    "walk_rows_mixed",
    "walk_rows_single_product",
]

_U32 = 2.0**-24  # float32 unit roundoff
_U64 = 2.0**-53
# Allowance for the relative error of float32 exp: numpy's is at most 2.52 ulp (its documented
# bound, checked by tests/test_mixed_precision.py); 8 ulp leaves room for other implementations.
EXP32_RELATIVE_ERROR = 8 * 2.0**-23
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)
_MAX_BAND = 1e-3  # widest useful band at the last position, relative to Σ|w|


class RBFTerms32(Terms):
    """Dense RBF kernel with the exponent in double precision and ``exp`` in single precision.

    Holds one centred augmented copy of its rows (``x̃ = [2γ(x − c), 1, −γ|x − c|²]``): the
    error band needs the product's operands small, which centring does.
    """

    magnitudes = True

    def __init__(self, walk, plan, X):
        X_augmented, self.max_norm = augmented_rows(plan, np.asarray(X, dtype=np.float64))
        super().__init__(walk, plan, X_augmented)
        self.row_cost = rbf_row_cost(X_augmented.shape[1] - 2)
        self.buffer = np.empty(0, dtype=np.float32)

    def block(self, start, stop, out):
        np.matmul(self.plan.sv_augmented[start:stop], self.X.T, out=out)
        if self.buffer.size < out.size:
            self.buffer = np.empty(out.size, dtype=np.float32)
        single = self.buffer[: out.size].reshape(out.shape)
        np.copyto(single, out, casting="same_kind")
        np.exp(single, out=single)
        np.copyto(out, single)


def rbf_error_band(
    plan: WalkPlan, thr: Thresholds, max_norm: float, final: float | None = None
) -> np.ndarray:
    """Bound on ``|Û_t − U_t|`` for ``t = 1 .. n`` of the single-precision RBF walk.

    ``final`` is the threshold ``U_n`` is compared with (``θ_S + C_n``), if any.

    ``max_norm`` bounds ``|x − c|`` over the examples. Term ``k`` is ``|w| e^a`` with
    ``a = −γ|x − y|² ≤ 0``; the walk computes ``exp32(fl32(a + log|w| + e1))`` where ``e1`` is the
    double-precision product's error, at most ``(d + 8) u64 Σ_i |x̃_i ỹ_i|`` with
    ``Σ_i |x̃_i ỹ_i| ≤ γ(|x − c| + |y − c|)² + |log|w||``. With ``z = u32|a| + c0``,
    ``c0 = e1 (1 + u32) + u32 |log|w||`` and ``ρ`` the relative error of float32 ``exp``, the term's
    error is at most ``|w| e^a ((e^z − 1) + e^z ρ) ≤ |w| e^{c0} (u32 / ((1 − u32) e) + c0 + ρ)``
    (because ``|a| e^{a(1 − u32)} ≤ 1 / ((1 − u32) e)``), plus float32's smallest normal for
    underflow. To that is added the double-precision rounding of the running sums, the centring
    curve and the thresholds, here and in the reference, with a generous constant.
    """
    w = plan.ordered_weights
    n = w.size
    absw = np.abs(w)
    gamma = plan.rbf_gamma
    d = plan.sv_augmented.shape[1] - 2
    log_w = np.zeros(n)
    np.log(absw, out=log_w, where=absw > 0)
    np.abs(log_w, out=log_w)
    product_bound = gamma * (max_norm + plan.sv_norms) ** 2 + log_w
    e1 = 1.01 * (d + 8) * _U64 * product_bound
    c0 = e1 * (1 + _U32) + _U32 * log_w
    eta = absw * np.exp(c0) * (_U32 / ((1 - _U32) * np.e) + c0 + EXP32_RELATIVE_ERROR)
    eta += _FLOAT32_TINY
    eta[absw == 0] = 0.0
    band = 1.01 * np.cumsum(eta)
    # Double-precision rounding (ours and the reference's, whose kernel is not centred).
    raw = gamma * (max_norm + float(np.linalg.norm(plan.rbf_centre)) + plan.sv_raw_norm) ** 2
    scale = np.cumsum(absw) * (1.0 + raw) + np.abs(plan.centring_sums)
    for t in (thr.lower, thr.upper):
        if t is not None:
            scale[: n - 1] += np.where(np.isfinite(t), np.abs(t), 0.0)
    if final is not None and np.isfinite(final):
        scale[n - 1] += abs(final)
    band += 8 * (np.arange(1, n + 1) + d + 8) * _U64 * scale
    return band


_TOTALS_TILE_ELEMENTS = 2**16  # kept when full evaluation's tiles grew to 2^18 (not re-measured)


def rbf_totals(plan: WalkPlan, X_augmented: np.ndarray) -> np.ndarray:
    """``U_n`` in double precision for augmented examples, in cache-sized pieces."""
    m, n = X_augmented.shape[0], plan.sv_augmented.shape[0]
    out = np.empty(m)
    step = max(MIN_CHUNK, _TOTALS_TILE_ELEMENTS // max(1, n))
    for lo in range(0, m, step):
        H = X_augmented[lo : lo + step] @ plan.sv_augmented.T
        np.exp(H, out=H)
        np.matmul(H, plan.weight_signs, out=out[lo : lo + step])
    return out


# precision="auto": the pilot (plan.pilot_rows, walked in double precision) decides whether mixed
# precision pays. Measured per term on this project's first benchmark machine (no AVX-512):
# double walk ≈ 12 ns, mixed walk ≈ 6.5 ns plus ≈ 11.5 ns per term of a walk that never stops
# (its double-precision total); mixed wins while the share of terms spent on such walks stays
# below ≈ 0.45 of all terms walked. 0.3 leaves room for other CPUs.
MIXED_MAX_SURVIVOR_SHARE = 0.3


_SINGLE_EXP_PAYS: list[bool] = []


def single_exp_pays() -> bool:
    """Whether float32 ``exp`` is at least three times as fast as float64 ``exp`` here (measured
    once per process).

    It is where numpy has no vectorised double ``exp`` (x86 without AVX-512: about 9 ns against
    1.3 ns per element, ~7×); with AVX-512 both are vectorised (~1.9× on the development
    machine) and mixed precision would not pay. The cut sits between the two kinds of CPU, away
    from both: at 2× a loaded machine's measurement used to flip between processes.
    """
    if not _SINGLE_EXP_PAYS:
        import time

        a = np.linspace(-30.0, 0.0, 1 << 15)
        a32 = a.astype(np.float32)
        pairs = ((a, np.empty_like(a)), (a32, np.empty_like(a32)))
        best = [np.inf, np.inf]
        # Interleaved, best of many: other work on the machine slows both alike, and a burst of
        # it during one of the two measurements cannot flip the answer (which would change the
        # path, and so the last bits of stopped walks' scores, from one process to the next).
        for _ in range(25):
            for i, (x, out) in enumerate(pairs):
                t0 = time.perf_counter()
                np.exp(x, out=out)
                best[i] = min(best[i], time.perf_counter() - t0)
        _SINGLE_EXP_PAYS.append(best[0] >= 3.0 * best[1])
    return _SINGLE_EXP_PAYS[0]


def mixed_pays(pilot: Stops, n: int) -> bool:
    """Whether the pilot's walks stop often enough for mixed precision to be the faster walk."""
    survivor_terms = pilot.rows.size * n
    walked = int(pilot.at[:, 1].sum()) + survivor_terms
    return survivor_terms <= MIXED_MAX_SURVIVOR_SHARE * walked


def walk_rows_mixed(
    walk, plan: WalkPlan, Xc, schedule: BlockSchedule, thr: Thresholds, final: float | None = None
) -> Stops:
    """The RBF walk in mixed precision, with the same stops as the double-precision walk.

    The value at a stop is the single-precision running sum ``Û_t`` (within the error band of
    ``U_t``).

    Walks that never stop get ``U_n`` in double precision, unless ``final`` (a threshold on
    ``U_n``) is given: then only those whose single-precision ``Û_n`` is within the error band of
    it do, and the others keep ``Û_n`` — their side of ``final`` is certain, their value is not
    exact (labels only).
    """
    chunk = RBFTerms32(walk, plan, Xc)
    X_augmented = chunk.X  # the walk compacts chunk.X; the totals need the rows as given
    m, n = Xc.shape[0], int(schedule.edges[-1])
    band = rbf_error_band(plan, thr, chunk.max_norm, final)
    if not band[n - 1] <= _MAX_BAND * float(np.abs(plan.ordered_weights).sum()):
        # A band this wide (exponents of enormous magnitude) would leave most stops unsure.
        return walk_rows(RBFTerms(walk, plan, Xc), m, schedule, thr)
    res = walk_rows(chunk, m, schedule, thr, band[: n - 1])
    return settle_unsure(
        walk,
        plan,
        Xc,
        schedule,
        thr,
        res,
        band[n - 1],
        final,
        lambda rows: rbf_totals(plan, X_augmented[rows]),
    )


def settle_unsure(walk, plan, Xc, schedule, thr, res: Stops, band_n, final, exact_totals) -> Stops:
    """What a single-precision walk leaves to double precision, done in double precision.

    Walks that never stopped get their exact ``U_n`` (``exact_totals(rows)``), unless ``final``
    (a threshold on ``U_n``; labels only) is given and their ``Û_n`` is beyond ``band_n`` from
    it; walks whose crossing the band left unsure are walked again in double precision.
    """
    U = res.U
    if res.rows.size:
        exact = (
            np.ones(res.rows.size, dtype=bool) if final is None else np.abs(res.U - final) <= band_n
        )
        if exact.any():
            U = U.copy()
            U[exact] = exact_totals(res.rows[exact])
    rows, at, side, value = [res.rows], [res.at], [res.side], [res.value]
    if res.unsure.size:
        redo = walk_rows(RBFTerms(walk, plan, Xc[res.unsure]), res.unsure.size, schedule, thr)
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


# ----------------------------------------------------------------------------- float32 products
#
# With many features (MNIST: 784) the RBF walk's cost is its product, and a float32 product is
# twice as fast as a float64 one and reads half the memory. The exponent's other parts and exp
# stay in double precision; the product's error is bounded per row (below), and the walk stops
# only where that bound makes the crossing certain, exactly as with the single-precision exp.

SINGLE_PRODUCT_MIN_FEATURES = 65  # below, the product is cheap and the band would not pay
_MAX_RELATIVE_TERM_ERROR = 1e-3  # a row whose terms could be off by more walks in double


class RBFTermsSingleProduct(Terms):
    """Dense RBF kernel with the product ``x · 2γy`` in float32 on a float32 copy of the rows.

    ``|w| K(x, y) = exp(fl32(x · 2γy) + (−γ|y|² + log|w|) − γ|x|²)`` with the sum and ``exp`` in
    double precision. ``relative_error`` bounds, per row, the relative error of every term.
    """

    magnitudes = True

    def __init__(self, walk, plan, X):
        X = np.asarray(X, dtype=np.float64)
        d = X.shape[1]
        norms2 = np.einsum("ij,ij->i", X, X)
        check_finite_rows(norms2, X)
        # The rows as given until the first compaction gathers the survivors into float32:
        # converting every row up front would cost about as much as the first block.
        super().__init__(walk, plan, X)
        self.row = -plan.rbf_gamma * norms2
        self.relative_error = product_relative_error(plan, np.sqrt(norms2), d)
        self.row_cost = rbf_row_cost(d) / 2
        self.buffer = np.empty(0, dtype=np.float32)

    def keep(self, idx):
        self.X = self.X[idx].astype(np.float32, copy=False)
        self.row = self.row[idx]

    def block(self, start, stop, out):
        if self.X.dtype != np.float32:
            np.matmul(self.plan.sv_scaled[start:stop], self.X.T, out=out)
            out += self.plan.sv_offset[start:stop, None]
        else:
            if self.buffer.size < out.size:
                self.buffer = np.empty(out.size, dtype=np.float32)
            single = self.buffer[: out.size].reshape(out.shape)
            np.matmul(self.plan.sv_scaled32[start:stop], self.X.T, out=single)
            np.add(single, self.plan.sv_offset[start:stop, None], out=out)
        out += self.row
        np.exp(out, out=out)


def product_relative_error(plan: WalkPlan, x_norms: np.ndarray, d: int) -> np.ndarray:
    """Bound, per example, on the relative error of each term of the float32-product walk.

    The product of the float32 roundings of ``x`` and ``2γy`` (each element off by at most
    ``u32`` relatively), summed in any order in float32, is off from ``x · 2γy`` by at most
    ``((1 + u32)²(1 + γ_d) − 1) Σ|x_i 2γy_i| ≤ 1.01 (d + 2) u32 · 2γ|x||y|`` (``γ_d = d u32 /
    (1 − d u32)``; Cauchy–Schwarz). The rest of the exponent in double precision adds at most
    ``(d + 8) u64 (γ(|x| + |y|)² + |log|w||)``. An exponent off by ``e ≤ 10⁻³`` puts the term
    off by at most ``e^e − 1 ≤ 1.001 e`` of itself, and double-precision ``exp`` adds a few
    ulp. The result is ``ρ(x)``: every computed term ``|w| K̂`` is within ``ρ(x) |w| K̂`` of the
    exact one (``K̂ ≥ K (1 − ρ)``, so bounding by the computed magnitude loses a factor
    ``1/(1 − ρ)``, included).
    """
    gamma = plan.rbf_gamma
    y_max = plan.sv_raw_norm
    absw = np.abs(plan.ordered_weights)
    log_max = float(np.abs(np.log(absw[absw > 0])).max(initial=0.0))
    e = 1.01 * (d + 2) * _U32 * 2.0 * gamma * x_norms * y_max
    e += 1.01 * (d + 8) * _U64 * (gamma * (x_norms + y_max) ** 2 + log_max)
    rho = 1.001 * e + 8 * _U64
    return 1.01 * rho / (1.0 - rho)


def rounding_allowance(plan: WalkPlan, thr: Thresholds, max_norm: float, d: int, final=None):
    """Double-precision rounding of the running sums, the centring curve and the thresholds,
    here and in the reference, per position (the second part of :func:`rbf_error_band`)."""
    n = plan.n_terms
    absw = np.abs(plan.ordered_weights)
    raw = plan.rbf_gamma * (max_norm + plan.sv_raw_norm) ** 2
    scale = np.cumsum(absw) * (1.0 + raw) + np.abs(plan.centring_sums)
    for t in (thr.lower, thr.upper):
        if t is not None:
            scale[: n - 1] += np.where(np.isfinite(t), np.abs(t), 0.0)
    if final is not None and np.isfinite(final):
        scale[n - 1] += abs(final)
    return 8 * (np.arange(1, n + 1) + d + 8) * _U64 * scale


def raw_totals(plan: WalkPlan, X: np.ndarray) -> np.ndarray:
    """``U_n`` in double precision for raw rows ``X``."""
    return rbf_totals(plan, augmented_rows(plan, np.asarray(X, dtype=np.float64))[0])


def walk_rows_single_product(
    walk, plan: WalkPlan, Xc, schedule: BlockSchedule, thr: Thresholds, final: float | None = None
) -> Stops:
    """The RBF walk with float32 products, with the same stops as the double-precision walk.

    Walks the certified band leaves unsure are walked again in double precision; walks that
    never stop get ``U_n`` in double precision unless ``final`` (a threshold on ``U_n``; labels
    only) is given and their float32-product ``Û_n`` is beyond the band from it.
    """
    chunk = RBFTermsSingleProduct(walk, plan, Xc)
    m = Xc.shape[0]
    rho = chunk.relative_error
    if not rho.max(initial=0.0) <= _MAX_RELATIVE_TERM_ERROR:
        return walk_rows(RBFTerms(walk, plan, Xc), m, schedule, thr)
    max_norm = float(np.sqrt((-chunk.row / plan.rbf_gamma).max(initial=0.0)))
    allowance = rounding_allowance(plan, thr, max_norm, Xc.shape[1], final)
    res = walk_rows(chunk, m, schedule, thr, row_band=(rho, allowance))
    return settle_unsure(
        walk, plan, Xc, schedule, thr, res, res.band, final, lambda rows: raw_totals(plan, Xc[rows])
    )
