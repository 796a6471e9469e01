"""Which sketch sizes (k, m) ``choose_sketch`` needs to try: a wide grid against the sizes it tries.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. .venv/bin/python
benchmarks/bench_sketch_sizes.py [--problems NAME ...] [--order residual|walk]``.

For each MNIST problem of :mod:`attentive.bench_corpus` (float32 pixels / 255,
``SVC(gamma="scale")``, C = 1 and 10, four pairs and 8 against the rest), the model is fitted on
the part of the training rows that ``AttentiveClassifier(boundary="calibrated")`` keeps for
fitting (seed 0), its reference rows walked leave-one-out, as ``fit`` does before choosing a
sketch. :func:`attentive.sketch.choose_sketch` then measures, on that reference profile at
δ = 1 %, each size of the grid k ∈ {4, 8, 16, 32} × m ∈ {16, 32, 64, 128} and the smaller
k ∈ {1, 2} × m ∈ {4, 8, 16}: the cheapest walked fraction of any family that carries over, and
its total cost in full-evaluation units under two cost models — the count of multiply-adds of
SPEC §3b (``count``) and the evaluator's measured costs (``measured``,
:func:`attentive.evaluator.sources.sketch.sketch_cost_model`, what ``AttentiveClassifier``
chooses by where the evaluator walks). Per problem and cost model it prints no sketch's total,
the best size of the grid and the best of the sizes ``sketch="auto"`` ranks by that model
(:data:`attentive.sketch.DEFAULT_SIZES`, and by the count :data:`attentive.sketch.COUNT_SIZES`
too), and how much more the latter costs. The last line printed is one JSON object with every
number. ``--order``: the order of the sketched walks' residual terms (``choose_sketch``'s
``order``; default ``residual``, the estimator's; docs/method.md's numbers "in the random
order" are ``walk``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

PAIRS = ("2v5", "4v9", "3v8", "7v9", "8vrest")
PROBLEMS = (*(f"mnist-{p}" for p in PAIRS), *(f"mnist-{p}-C10" for p in PAIRS))
GRID = (
    *((k, m) for k in (1, 2) for m in (4, 8, 16)),
    *((k, m) for k in (4, 8, 16, 32) for m in (16, 32, 64, 128)),
)
DELTA = 0.01


def measure(name: str, order: str = "residual") -> dict:
    from sklearn.base import clone

    from attentive import AttentiveClassifier
    from attentive.bench_corpus import load_problem
    from attentive.bench_rules import calibration_split
    from attentive.evaluator.sources.sketch import sketch_cost_model
    from attentive.sketch import COUNT_SIZES, DEFAULT_SIZES, choose_sketch

    problem = load_problem(name, tiled=False)
    X, _, y = calibration_split(problem, 0)
    clf = AttentiveClassifier(
        clone(problem.model),
        boundary="curved",
        side="both",
        reference_walks="leave-one-out",
        sketch="none",
        random_state=0,
    ).fit(X, y)
    started = time.perf_counter()
    choice = choose_sketch(
        clf.walk_,
        X,
        y,
        delta=DELTA,
        ref_mask=y == clf.classes_[1],
        theta_s=clf.theta_s_,
        leave_own_out=True,
        own=clf._own_terms(X),
        statistics=clf.walk_statistics_,
        profile=dict(clf.reference_profile_),
        sizes=GRID,
        order=order,
    )
    seconds = time.perf_counter() - started
    measured = sketch_cost_model(clf.n_terms_)
    rows = []
    for o in choice.options:
        cost, term = (0.0, 1.0) if o.k is None else measured(o.walk.sketch)
        rows.append(
            {
                "k": o.k,
                "m": o.m,
                "walked": o.walked_fraction,
                "family": o.family,
                "count": o.total,
                "measured": cost + o.walked_fraction * term,
            }
        )
    summary = {}
    for model in ("count", "measured"):
        sized = [r for r in rows if r["k"] is not None]
        best = min(sized, key=lambda r: r[model])
        ranked = {*DEFAULT_SIZES, *(COUNT_SIZES if model == "count" else ())}
        default = min((r for r in sized if (r["k"], r["m"]) in ranked), key=lambda r: r[model])
        summary[model] = {
            "none": rows[0][model],
            "best": best[model],
            "best_size": [best["k"], best["m"]],
            "default": default[model],
            "default_size": [default["k"], default["m"]],
            "default_x_best": default[model] / best[model],
        }
    return {
        "problem": name,
        "n_terms": int(clf.n_terms_),
        "seconds": seconds,
        "sizes": rows,
        "summary": summary,
    }


def report(r: dict) -> None:
    print(f"\n{r['problem']}: {r['n_terms']} SVs ({r['seconds']:.0f} s for {len(GRID)} sizes)")
    print(f"  {'k':>3s} {'m':>4s} {'walked':>7s} {'count':>7s} {'measured':>9s}  family")
    for row in r["sizes"][1:]:
        print(
            f"  {row['k']:3d} {row['m']:4d} {row['walked']:7.3f} {row['count']:7.3f} "
            f"{row['measured']:9.3f}  {row['family']}"
        )
    for model, s in r["summary"].items():
        print(
            f"  {model:9s} no sketch {s['none']:.3f}; best of the grid {s['best']:.3f} "
            f"{tuple(s['best_size'])}; best of the sizes tried {s['default']:.3f} "
            f"{tuple(s['default_size'])} = {s['default_x_best']:.3f} × the grid's"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--problems",
        nargs="+",
        default=list(PROBLEMS),
        help="attentive.bench_corpus names (default: the ten MNIST problems above)",
    )
    parser.add_argument("--order", default="residual", choices=("residual", "walk"))
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_info

    blas = [(i.get("internal_api"), i.get("architecture")) for i in threadpool_info()]
    print(f"BLAS (threadpoolctl): {blas}, numpy {np.__version__}")
    results = []
    for name in args.problems:
        results.append(measure(name, args.order))
        report(results[-1])
        sys.stdout.flush()
    worst = {
        model: max(r["summary"][model]["default_x_best"] for r in results)
        for model in ("count", "measured")
    }
    print(f"\nworst best-of-the-sizes-tried against best-of-grid: {worst}")
    print(json.dumps({"blas": blas, "delta": DELTA, "results": results, "worst": worst}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
