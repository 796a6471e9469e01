"""How far a sketch lowers the oracle's floor (SPEC §3b): the plain walk against sketched walks.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. .venv/bin/python
benchmarks/bench_sketch_floor.py [--problems NAME ...] [--C 1 10] [--order residual|walk]``
(``--order``: the order of the residual terms of the sizes' sketched walks, ``choose_sketch``'s:
``walk``, the default, the plain walk's random order, in which docs/method.md's numbers were
measured, or ``residual``, the estimator's; the landmark and correction comparisons below are
made in the plain walk's order either way).

Problems, prepared as users prepare them: MNIST t10k pairs and one digit against the rest, pixels
/ 255 stored in float32 (read back as float64), ``SVC(gamma="scale")`` with C = 1 and 10; and a
40-feature generated problem (``synthetic`` with 40 features, 12,000 training rows: about 3,000
support vectors) for C = 1. Each model is fitted in ``AttentiveClassifier(boundary="curved",
reference_walks="leave-one-out", random_state=0)`` on the training part, its reference walks
leave-one-out as ``boundary="calibrated"`` walks them; every number below is on the test part.

For each problem it prints the plain walk's oracle floor (``oracle_n_evaluated``: one past the
last position where ``S_t + M_t`` is on the wrong side of θ_S, as a mean fraction of the n terms)
and, for each sketch size (k, m) of :func:`attentive.sketch.choose_sketch`:

- ``V``: the reference walks' mean bridge variance (SPEC §2's ``V(x)`` of the walk's steps,
  pooled over the training rows walked leave-one-out) over the plain walk's;
- ``floor``: the sketched walk's oracle floor (the same, on ``S^ρ_t + M^ρ_t``; at least one exact
  term per row, as every rule evaluates); ``floor0``: the same if a row could stop on the sketch
  alone (position 0, before any exact term);
- ``sketch``: the sketch's cost per row in full-evaluation units, ``(k+1)·d + m·(k+2)`` over
  ``n·d``; ``total`` = ``floor × (1 + m/d) + sketch`` (each walked term also takes its m-dot
  product);
- ``agree``: the share of test rows on which the sketch alone (``c + F̃(x) ≥ 0``) agrees with the
  full model; ``agree0``: the same for the walk's estimate at position 0, ``F̃ + M_0`` (``M_0``
  the reference mean of ``S_n − F̃``); ``rms``: the RMS of ``F̃ − S_n`` over the RMS spread of
  ``S_n``;
- ``tuned``: the cheapest total of any family that carries over at test disagreement ≤ 1 % (its
  scale chosen on the test rows: a floor for calibrated rules, not a guarantee);
- ``profile``: :func:`choose_sketch`'s total on the reference profile (training rows,
  leave-one-out), at δ = 1 %; ``*`` marks its choice.

Then the sketch alone with k-means++ landmarks, a seeded sample, and k-means++ without the
``e^{−γ r}`` correction (agreement, rms); the sketched walk without the correction (its
reference walks' bridge variance V and its oracle floor, k = 16, m = 64 and k = 32, m = 128);
and measured times on one BLAS
thread: a row's sketch against a full evaluation (float64 products, the numpy reference path) in
float64 and with float32 products; the projection's product appended to a first block of 64
exact terms (what it adds when the rows are read once for both); and the m-dot products of every
term against the full evaluation (the measured overhead of a walked term, against the model's
m/d). The last line printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

PAIRS = ("mnist-t10k-2v5", "mnist-t10k-4v9", "mnist-t10k-3v8", "mnist-t10k-7v9")
OVR = "mnist-t10k-8vrest"
#: 40 features: 12,000 training rows (about 3,000 support vectors) and 6,000 (about 1,800).
SYNTHETIC = {"synthetic-40": 12000, "synthetic-40-6k": 6000}
PROBLEMS = (*PAIRS, OVR, *SYNTHETIC)
DELTA = 0.01
ROUNDS = 7
TIMED = ((16, 64), (32, 128))  # the sizes timed and measured without the correction


def _as_float32_pixels(X) -> np.ndarray:
    """Pixels / 255 stored in float32, read back as float64 (what a user's array holds)."""
    return np.asarray(X, dtype=np.float32).astype(np.float64)


def load_problem(name: str):
    """``(X_train, y_train, X_test)`` of a problem of this benchmark."""
    from attentive.data import load_dataset

    if name in SYNTHETIC:
        ds = load_dataset("synthetic", n_features=40, n_train=SYNTHETIC[name], n_test=2000)
        return ds.X_train, np.asarray(ds.y_train), ds.X_test
    if name == OVR:
        from sklearn.model_selection import train_test_split

        from attentive.data.mnist import load_t10k

        images, labels = load_t10k()
        X = images.reshape(-1, 784) / 255.0
        y = (labels == 8).astype(np.int64)
        X_train, X_test, y_train, _ = train_test_split(
            X, y, test_size=0.35, random_state=0, stratify=y
        )
        return _as_float32_pixels(X_train), y_train, _as_float32_pixels(X_test)
    ds = load_dataset(name)
    return _as_float32_pixels(ds.X_train), np.asarray(ds.y_train), _as_float32_pixels(ds.X_test)


def _median_time(f, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _floors(walk, stats, X_test, theta_s, start_mean) -> tuple[float, float, np.ndarray, float]:
    """The oracle floor (at least one exact term), the floor if a row may stop on its start
    value alone, ``S_n`` on the test rows, and ``M_0``."""
    from attentive.grid import oracle_stop_positions

    n = walk.n_terms
    Xp = walk.prepare(X_test)
    steps = walk.steps(Xp)
    start = steps.start.copy()
    S = steps.partial_scores()
    M = np.asarray(stats.pooled.remainder_mean)
    floor = oracle_stop_positions(S, theta_s, M).mean() / n
    # Position 0 first: M_0 = mean over the reference of S_n − S_0.
    M0 = stats.pooled.score_mean - start_mean
    at0 = oracle_stop_positions(np.column_stack([start, S]), theta_s, np.r_[M0, M]) - 1
    return float(floor), float(at0.mean() / n), S[:, -1], float(M0)


def _tuned(option, X_test, theta_s, side) -> tuple[float, str | None]:
    """The cheapest total at test disagreement ≤ δ over the families that carry over."""
    from attentive.families import applicable_families, make_family
    from attentive.grid import reference_profile
    from attentive.sketch import cheapest_at

    fams = [
        make_family(name, option.statistics, theta_s, side)
        for name in applicable_families(option.statistics)
    ]
    profile = reference_profile(option.walk, X_test, fams, max_rows=X_test.shape[0])
    fraction, family, _ = cheapest_at(profile, DELTA)
    return option.sketch_cost + fraction * option.term_cost, family


def _landmark_quality(walk, X_train, y_train, X_test, S_n, theta_s, sizes) -> list[dict]:
    """Agreement and rms of ``F̃`` with k-means++ landmarks, a seeded sample, and k-means++
    without the ``e^{−γ r}`` correction."""
    from attentive.sketch import make_sketched_walk

    rows = []
    spread = float(np.sqrt(np.mean((S_n - S_n.mean()) ** 2)))

    def quality(F):
        return {
            "agree": float(np.mean((F >= theta_s) == (S_n >= theta_s))),
            "rms": float(np.sqrt(np.mean((F - S_n) ** 2)) / spread),
        }

    for k, m in sizes:
        row = {"k": k, "m": m}
        for landmarks in ("kmeans++", "sample"):
            sw = make_sketched_walk(walk, X_train, y_train, k=k, m=m, landmarks=landmarks)
            row[landmarks] = quality(sw.start_scores(X_test))
        sw = make_sketched_walk(walk, X_train, y_train, k=k, m=m, corrected=False)
        row["uncorrected"] = quality(sw.start_scores(X_test))
        rows.append(row)
    return rows


def _correction(clf, choice, X_train, y_train, X_test, own) -> list[dict]:
    """The sketched walk without the ``e^{−γ r}`` factors against with them, at two sizes:
    the reference walks' mean bridge variance V (pooled) and the test oracle floor."""
    from attentive.families import walk_statistics
    from attentive.grid import oracle_stop_positions
    from attentive.sketch import make_sketched_walk

    rows = []
    for option in choice.options:
        if (option.k, option.m) not in TIMED:
            continue
        sw = make_sketched_walk(
            clf.walk_, X_train, y_train, k=option.k, m=option.m, corrected=False
        )
        stats = walk_statistics(
            sw, X_train, y_train, ref_mask=y_train == clf.classes_[1], leave_own_out=True, own=own
        )
        floor = oracle_stop_positions(
            sw.partial_scores(X_test), clf.theta_s_, stats.pooled.remainder_mean
        ).mean()
        rows.append(
            {
                "k": option.k,
                "m": option.m,
                "V": option.statistics.pooled.variance_terms,
                "V_uncorrected": stats.pooled.variance_terms,
                "floor_uncorrected": float(floor / clf.n_terms_),
            }
        )
    return rows


def _timings(clf, option, X_test) -> dict:
    """Measured per-row times on one BLAS thread: full evaluation (float64 products), the
    sketch in float64 and float32, the m-dot products of every term."""
    from threadpoolctl import threadpool_limits

    terms, sketch = clf.terms_, option.walk.sketch
    X = np.tile(X_test, (max(1, -(-4000 // X_test.shape[0])), 1))
    sv = np.asarray(terms.support_vectors)
    w, gamma = terms.weights, sketch.gamma
    ss = np.einsum("ij,ij->i", sv, sv)
    beta = option.walk.beta
    # The same products in float32 (rows as a user's float32 array, the sketch's arrays cast).
    X32, beta32 = X.astype(np.float32), beta.astype(np.float32)
    projection32 = sketch.projection.astype(np.float32)

    def full():
        K = X @ sv.T
        K *= -2.0
        K += np.einsum("ij,ij->i", X, X)[:, None]
        K += ss
        K *= -gamma
        return np.exp(K, out=K) @ w

    def sketch64():
        return sketch.projection.features(X, gamma) @ beta

    def sketch32():
        return projection32.features(X32, gamma) @ beta32

    A = sketch.features(X)
    B = sketch.term_factors
    # A blocked walk reads every row for its first block of exact terms anyway: the projection's
    # columns appended to that block's support vectors share the read.
    block = np.ascontiguousarray(sv[:64].T)
    fused = np.ascontiguousarray(np.column_stack([block, sketch.projection.stacked]))

    with threadpool_limits(1):
        t_full = _median_time(full)
        t_64 = _median_time(sketch64)
        t_32 = _median_time(sketch32)
        t_terms = _median_time(lambda: A @ B.T)
        t_block = _median_time(lambda: X @ block)
        t_fused = _median_time(lambda: X @ fused)
    F64, F32 = sketch64(), sketch32()
    scale = float(np.max(np.abs(F64))) or 1.0
    return {
        "rows": int(X.shape[0]),
        "full_ms": 1e3 * t_full,
        "sketch64_ms": 1e3 * t_64,
        "sketch32_ms": 1e3 * t_32,
        "sketch64_x_full": t_64 / t_full,
        "sketch32_x_full": t_32 / t_full,
        "projection_fused_x_full": (t_fused - t_block) / t_full,
        "model_cost": option.sketch_cost,
        "float32_max_error": float(np.max(np.abs(F64 - F32)) / scale),
        "term_dots_x_full": t_terms / t_full,
        "model_term_overhead": option.term_cost - 1.0,
    }


def measure(name: str, C: float, landmarks: bool, timings: bool, order: str = "walk") -> dict:
    from sklearn.svm import SVC

    from attentive import AttentiveClassifier
    from attentive.sketch import choose_sketch

    started = time.perf_counter()
    X_train, y_train, X_test = load_problem(name)
    clf = AttentiveClassifier(
        SVC(gamma="scale", C=C),
        boundary="curved",
        side="both",
        reference_walks="leave-one-out",
        random_state=0,
    ).fit(X_train, y_train)
    walk = clf.walk_
    own = np.full(len(y_train), -1)
    own[clf.estimator_.support_] = np.arange(clf.n_terms_)
    choice = choose_sketch(
        walk,
        X_train,
        y_train,
        delta=DELTA,
        ref_mask=y_train == clf.classes_[1],
        theta_s=clf.theta_s_,
        side="both",
        leave_own_out=True,
        own=own,
        statistics=clf.walk_statistics_,
        order=order,
    )
    plain_oracle = float(clf.oracle_n_evaluated(X_test).mean() / clf.n_terms_)
    plain_variance = clf.walk_statistics_.pooled.variance_terms
    full_positive = None
    rows = []
    S_n = None
    for option in choice.options:
        start_mean = 0.0
        if option.k is not None:
            start_mean = float(
                option.walk.start_scores(X_train, leave_own_out=True, own=own).mean()
            )
        floor, floor0, s_n, M0 = _floors(
            option.walk, option.statistics, X_test, clf.theta_s_, start_mean
        )
        if S_n is None:
            S_n = s_n
            full_positive = S_n >= clf.theta_s_
        row = {
            "k": option.k,
            "m": option.m,
            "floor": floor,
            "floor0": floor0,
            "sketch": option.sketch_cost,
            "total": floor * option.term_cost + option.sketch_cost,
            "V": option.statistics.pooled.variance_terms / plain_variance,
            "profile": option.total,
            "profile_family": option.family,
            "chosen": option is choice.best,
        }
        row["tuned"], row["tuned_family"] = _tuned(option, X_test, clf.theta_s_, "both")
        if option.k is not None:
            F = option.walk.start_scores(X_test)
            spread = float(np.sqrt(np.mean((S_n - S_n.mean()) ** 2)))
            row["agree"] = float(np.mean((F >= clf.theta_s_) == full_positive))
            row["agree0"] = float(np.mean((F + M0 >= clf.theta_s_) == full_positive))
            row["rms"] = float(np.sqrt(np.mean((F - S_n) ** 2)) / spread)
            row["n_check"] = float(np.max(np.abs(s_n - S_n)) / max(1.0, np.max(np.abs(S_n))))
        rows.append(row)
    result = {
        "problem": name,
        "C": C,
        "n_terms": int(clf.n_terms_),
        "d": int(X_train.shape[1]),
        "n_train": int(X_train.shape[0]),
        "n_test": int(X_test.shape[0]),
        "oracle_plain": plain_oracle,
        "rows": rows,
        "chosen": choice.best.label,
    }
    sizes = [(o.k, o.m) for o in choice.options if o.k is not None]
    if landmarks:
        result["landmarks"] = _landmark_quality(
            walk, X_train, y_train, X_test, S_n, clf.theta_s_, sizes
        )
    result["correction"] = _correction(clf, choice, X_train, y_train, X_test, own)
    if timings:
        result["timings"] = {
            f"k={o.k},m={o.m}": _timings(clf, o, X_test)
            for o in choice.options
            if (o.k, o.m) in TIMED
        }
    result["seconds"] = time.perf_counter() - started
    return result


def report(r: dict) -> None:
    print(
        f"\n{r['problem']}  C={r['C']:g}: n = {r['n_terms']} support vectors, d = {r['d']}, "
        f"{r['n_train']} training / {r['n_test']} test rows ({r['seconds']:.0f} s)"
    )
    print(
        f"  plain walk oracle floor (AttentiveClassifier.oracle_n_evaluated): "
        f"{r['oracle_plain']:.3f}"
    )
    print(
        "   k    m |     V |  floor floor0 | sketch  total  x plain | agree agree0   rms |"
        " tuned@1% (family)        | profile"
    )
    for row in r["rows"]:
        tail = (
            f"{row['tuned']:.4f} {'(' + str(row['tuned_family']) + ')':<18}| "
            f"{row['profile']:.4f}{'*' if row['chosen'] else ''}"
        )
        if row["k"] is None:
            print(
                f"  no sketch | {row['V']:.3f} | {row['floor']:.4f}      - |      -  "
                f"{row['total']:.4f}    1.00 |"
                f"     -      -     - | {tail}"
            )
            continue
        print(
            f"  {row['k']:2d} {row['m']:4d} | {row['V']:.3f} | {row['floor']:.4f} {row['floor0']:.4f} | "
            f"{row['sketch']:.4f} {row['total']:.4f} {row['total'] / r['oracle_plain']:7.2f} | "
            f"{row['agree']:.3f}  {row['agree0']:.3f} {row['rms']:.3f} | {tail}"
        )
    worst = max((row.get("n_check", 0.0) for row in r["rows"]), default=0.0)
    print(f"  S^ρ_n against the plain S_n: largest relative difference {worst:.1e}")
    print(f"  choose_sketch (reference profile, δ = {DELTA:.0%}): {r['chosen']}")
    if "landmarks" in r:
        print(
            "  the sketch alone (agree / rms): k-means++ landmarks, a seeded sample, and "
            "k-means++ without the e^(-γ r) correction"
        )
        for row in r["landmarks"]:
            a, b, c = row["kmeans++"], row["sample"], row["uncorrected"]
            print(
                f"   k={row['k']:2d} m={row['m']:3d}: k-means++ {a['agree']:.3f} / "
                f"{a['rms']:.3f}   sample {b['agree']:.3f} / {b['rms']:.3f}   uncorrected "
                f"{c['agree']:.3f} / {c['rms']:.3f}"
            )
    for c in r["correction"]:
        floor = next(x["floor"] for x in r["rows"] if (x["k"], x["m"]) == (c["k"], c["m"]))
        print(
            f"  without the e^(-γ r) correction (k={c['k']}, m={c['m']}): reference V "
            f"{c['V_uncorrected'] / c['V']:.1f}× the corrected walk's, oracle floor "
            f"{c['floor_uncorrected']:.4f} against {floor:.4f}"
        )
    for label, t in r.get("timings", {}).items():
        print(
            f"  times ({label}, {t['rows']} rows, 1 thread): full {t['full_ms']:.1f} ms; sketch "
            f"float64 {t['sketch64_ms']:.2f} ms = {t['sketch64_x_full']:.3f} of full, float32 "
            f"{t['sketch32_ms']:.2f} ms = {t['sketch32_x_full']:.3f} (model {t['model_cost']:.3f}; "
            f"float32 error {t['float32_max_error']:.1e} of max |F̃|); the projection's "
            f"product fused with a first block of 64 terms adds {t['projection_fused_x_full']:.3f}"
            f" of full; m-dots of every term "
            f"{t['term_dots_x_full']:.3f} of full (model m/d = {t['model_term_overhead']:.3f})"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    parser.add_argument("--C", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--no-landmarks", action="store_true", help="skip k-means++ vs sample")
    parser.add_argument("--no-timings", action="store_true", help="skip the measured times")
    parser.add_argument("--order", default="walk", choices=("walk", "residual"))
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_info

    blas = [(i.get("internal_api"), i.get("architecture")) for i in threadpool_info()]
    print(f"BLAS (threadpoolctl): {blas}")
    results = []
    for name in args.problems:
        for C in args.C if name not in SYNTHETIC else [1.0]:
            r = measure(name, C, not args.no_landmarks, not args.no_timings, args.order)
            report(r)
            results.append(r)
            sys.stdout.flush()
    print(json.dumps({"blas": blas, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
