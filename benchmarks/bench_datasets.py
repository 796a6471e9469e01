"""The calibrated rule's walk against full evaluation on data beyond the benchmark's problems.

Usage: ``PYTHONPATH=. python benchmarks/bench_datasets.py [--kernels rbf poly sigmoid]
[--rounds 7] [--quick]``

``python -m attentive bench`` times MNIST with its pixels / 255 on an integer grid, which the
exact float32 products rely on. Most data are not on a grid. For each problem and kernel this
fits ``SVC(kernel=..., gamma="scale")`` on half of the training rows, the calibrated two-sided
rule (δ = 1 %) on all of them, and times full evaluation, ``predict`` and ``decision_function``
on one thread in interleaved rounds (medians), with BLAS held to one thread. Problems:

* ``make_classification`` with 8, 30, 100, 300 and 1,000 features (6,000 test rows; every
  support vector non-zero in every column, nothing on a grid);
* MNIST t10k 3 vs 8 (the shipped files, test images ten times: 6,940 rows) with the pixels /
  255 stored in float32 and read back (off the grid, border columns zero), and standardised
  (every column used).

Prints each problem's evaluated fraction f and the ratios to full evaluation; the last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np


def _problems(quick: bool):
    from sklearn.datasets import make_classification

    from attentive.data import load_dataset

    n = 1500 if quick else 9000
    for d, sep in ((8, 1.0), (30, 1.0), (100, 0.8), (300, 0.6), (1000, 0.5)):
        if quick and d > 100:
            continue
        X, y = make_classification(
            n_samples=n,
            n_features=d,
            n_informative=min(d - 2, 20),
            n_redundant=0,
            class_sep=sep,
            flip_y=0.03,
            random_state=d,
        )
        third = n // 3
        yield f"make_classification d={d}", X[:third], y[:third], X[third:]
    ds = load_dataset("mnist-t10k-3v8")
    reps = 1 if quick else 10
    X_train = np.asarray(ds.X_train, dtype=np.float32).astype(np.float64)
    X_test = np.tile(np.asarray(ds.X_test, dtype=np.float32).astype(np.float64), (reps, 1))
    yield "MNIST 3 vs 8, pixels in float32", X_train, ds.y_train, X_test
    mean, std = float(ds.X_train.mean()), float(ds.X_train.std())
    X_test = np.tile((np.asarray(ds.X_test) - mean) / std, (reps, 1))
    yield "MNIST 3 vs 8, standardised", (ds.X_train - mean) / std, ds.y_train, X_test


def main(argv=None) -> int:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["rbf", "poly", "sigmoid"])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    ap.add_argument("--quick", action="store_true", help="small problems and 2 rounds")
    args = ap.parse_args(argv)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rule's own fit warnings are not the subject
        return _run(args)


def _run(args) -> int:
    from sklearn.frozen import FrozenEstimator
    from sklearn.svm import SVC

    from attentive.bench import _time_interleaved, method_call
    from attentive.estimator import AttentiveClassifier
    from attentive.evaluation import evaluation_options

    rounds = 2 if args.quick else args.rounds
    report = {"rounds": rounds, "problems": []}
    for name, X_train, y_train, X in _problems(args.quick):
        for kernel in args.kernels:
            half = len(X_train) // 2
            model = SVC(kernel=kernel, gamma="scale").fit(X_train[:half], y_train[:half])
            att = AttentiveClassifier(
                FrozenEstimator(model),
                boundary="calibrated",
                side="both",
                delta=0.01,
                random_state=0,
            ).fit(X_train, y_train)
            full = att.with_rule("full")

            t = _time_interleaved(
                {
                    "full": method_call(full, "decision_function", X),
                    "predict": method_call(att, "predict", X),
                    "decision": method_call(att, "decision_function", X),
                },
                rounds,
            )
            with evaluation_options(n_jobs=1):
                f = att.evaluate(X).mean_evaluated_fraction
            r = {
                "problem": name,
                "kernel": kernel,
                "n_terms": int(att.n_terms_),
                "n_test": int(X.shape[0]),
                "f": f,
                "ms": {k: v * 1e3 for k, v in t.items()},
                "predict_over_full": t["predict"] / t["full"],
                "decision_over_full": t["decision"] / t["full"],
            }
            report["problems"].append(r)
            print(
                f"{name}, {kernel}: {r['n_terms']} terms, f={f:.3f} | 1 thread: full "
                f"{t['full'] * 1e3:.1f} ms, predict {r['predict_over_full']:.3f} of full, "
                f"decision_function {r['decision_over_full']:.3f} of full",
                flush=True,
            )
    report["load_average"] = list(os.getloadavg())
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
