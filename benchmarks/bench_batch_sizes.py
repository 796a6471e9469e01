"""Batch sizes: ``predict`` against full evaluation for calls of 1 to thousands of rows.

A row's path (walk or full evaluation) is chosen once per rule, from the pilot's sample, never
from the call's size: a row scored alone gets the outcome it gets in a batch. So small calls walk
where large ones do, and pay a walk's fixed costs per call (per block: the products' calls, the
running sums, the crossings) over fewer rows. This prints, per problem and rows per call, the
time per row of ``predict`` and of full evaluation (``decision_function`` of the same classifier
under ``boundary="full"``) and their ratio, on one thread and on two, medians of interleaved
rounds (``attentive.bench``'s timing repeats a short call to fill ~50 ms). Calls below 2^18
rows × terms run on one evaluator thread whatever ``n_jobs`` says: there the second thread
only lets BLAS use two. The shipped classifier: ``boundary=
"calibrated"``, δ = 1 %, α = 5 %, both sides (as ``python -m attentive bench``).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python \\
        benchmarks/bench_batch_sizes.py [--problems mnist-8vrest mnist-2v5] [--rounds 7]
"""

from __future__ import annotations

import argparse
import warnings

SIZES = (1, 10, 100, 1000)  # and the whole test set


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["mnist-8vrest", "mnist-2v5"])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    from sklearn.base import clone

    from attentive import AttentiveClassifier
    from attentive.bench import _blas_kernel, _blas_limits, _time_interleaved, method_call
    from attentive.bench_corpus import load_problem

    blas = _blas_limits()
    print(f"BLAS: {_blas_kernel()}; medians of {args.rounds} interleaved rounds")
    print("problem | rows a call | path | µs a row: predict, full (1 thread) | predict/full: "
          "1 thread, 2 threads")  # fmt: skip
    for name in args.problems:
        p = load_problem(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = AttentiveClassifier(
                clone(p.model),
                boundary="calibrated",
                side="both",
                delta=0.01,
                alpha=0.05,
                random_state=0,
            ).fit(p.X_train, p.y_train)
        full = clf.with_rule("full")
        for size in (*(s for s in SIZES if s < p.X_test.shape[0]), p.X_test.shape[0]):
            X = p.X_test[:size]
            calls = {}
            for jobs in (1, 2):
                for key, est, method in (("predict", clf, "predict"), ("full", full, "decision_function")):  # fmt: skip
                    calls[f"{key}_{jobs}"] = method_call(est, method, X, jobs=jobs, limits=blas)
            t = _time_interleaved(calls, args.rounds)
            per_row = {k: 1e6 * v / size for k, v in t.items()}
            path = clf.evaluate(X).path
            print(
                f"{name} | {size} | {path} | {per_row['predict_1']:.1f}, {per_row['full_1']:.1f}"
                f" | {t['predict_1'] / t['full_1']:.2f}, {t['predict_2'] / t['full_2']:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
