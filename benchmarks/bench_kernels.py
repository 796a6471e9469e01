"""Every SVC kernel on one problem: scikit-learn vs full vs attentive evaluation.

Usage: ``PYTHONPATH=. python benchmarks/bench_kernels.py [--data synthetic-sparse | mnist |
mnist-float32] [--rounds 7] [--quick]``

``--data synthetic`` (default): 10,000 test rows × 20 dense features. ``--data
synthetic-sparse``: Real-sim's shape, 2,000 sparse test rows × 20,958 features (sparse support
vectors and rows). ``--data mnist``: MNIST t10k 3 vs 8 (the shipped files; the test images ten
times, 6,940 rows × 784 features, as in ``python -m attentive bench``), pixels / 255 on their
integer grid, so every kernel's products are exact float32 products of integers. ``--data
mnist-float32``: the same with the pixels / 255 stored in float32, as image pipelines often hold
them, and read back as float64: off any grid, so the products are in float64.

For the linear, polynomial (degree 3), sigmoid and RBF kernels, each fitted on the same data:
``SVC.decision_function``, full evaluation and the walk of a curved two-sided rule (δ = 0.01)
through ``AttentiveClassifier.predict``, on one thread and on the default, in interleaved rounds
(medians). BLAS is held to one thread throughout, as in ``python -m attentive bench``: otherwise
its threads, still spinning after a call on one thread, slow the next call on two.
Prints the ratios measured side by side; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np


def main(argv=None) -> int:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    ap.add_argument("--quick", action="store_true", help="a small problem and 2 rounds")
    ap.add_argument(
        "--data",
        choices=("synthetic", "synthetic-sparse", "mnist", "mnist-float32"),
        default="synthetic",
        help="problem",
    )
    args = ap.parse_args(argv)
    with threadpool_limits(1):
        return _run(args)


def _run(args) -> int:
    from sklearn.frozen import FrozenEstimator
    from sklearn.svm import SVC

    from attentive.bench import _time_interleaved
    from attentive.data import load_dataset
    from attentive.estimator import AttentiveClassifier
    from attentive.evaluation import evaluation_options
    from attentive.evaluator.threads import default_n_jobs

    rounds = 2 if args.quick else args.rounds
    if args.data.startswith("mnist"):
        ds = load_dataset("mnist-t10k-3v8")
        stored = np.float32 if args.data == "mnist-float32" else np.float64
        X_train = np.asarray(ds.X_train, dtype=stored).astype(np.float64)
        X = np.asarray(ds.X_test, dtype=stored).astype(np.float64)
        y_train, X = ds.y_train, np.tile(X, (1 if args.quick else 10, 1))
    else:
        if args.data == "synthetic":
            sizes = (
                dict(n_train=800, n_test=1000) if args.quick else dict(n_train=3500, n_test=10000)
            )
        else:
            sizes = dict(n_train=500, n_test=500) if args.quick else dict(n_train=2000, n_test=2000)
        ds = load_dataset(args.data, **sizes)
        X_train, y_train, X = ds.X_train, ds.y_train, ds.X_test
    jobs = default_n_jobs()
    report = {
        "data": args.data,
        "n_test": int(X.shape[0]),
        "rounds": rounds,
        "n_jobs": jobs,
        "kernels": {},
    }
    for kernel in ("linear", "poly", "sigmoid", "rbf"):
        model = SVC(kernel=kernel, C=1.0, gamma="scale", degree=3).fit(X_train, y_train)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the rule's own fit warnings are not the subject
            full = AttentiveClassifier(FrozenEstimator(model), boundary="full")
            full.fit(X_train, y_train)
            att = AttentiveClassifier(
                FrozenEstimator(model), boundary="curved", delta=0.01, random_state=0
            ).fit(X_train, y_train)
        diff = float(np.max(np.abs(full.decision_function(X) - model.decision_function(X))))

        def on(clf, n_jobs, method):
            def call():
                with evaluation_options(n_jobs=n_jobs):
                    return getattr(clf, method)(X)

            return call

        t = _time_interleaved(
            {
                "sklearn": lambda model=model: model.decision_function(X),
                "full_1": on(full, 1, "decision_function"),
                "predict_1": on(att, 1, "predict"),
                "full": on(full, jobs, "decision_function"),
                "predict": on(att, jobs, "predict"),
            },
            rounds,
        )
        f = att.evaluate(X).mean_evaluated_fraction
        r = {
            "n_terms": int(full.n_terms_),
            "f": f,
            "full_vs_sklearn_max_abs_diff": diff,
            "ms": {k: v * 1e3 for k, v in t.items()},
            "sklearn_over_full_1": t["sklearn"] / t["full_1"],
            "predict_over_full_1": t["predict_1"] / t["full_1"],
            "sklearn_over_full": t["sklearn"] / t["full"],
            "predict_over_full": t["predict"] / t["full"],
        }
        report["kernels"][kernel] = r
        print(
            f"{kernel}: {r['n_terms']} terms, f={f:.3f}, full to {diff:.1e} of scikit-learn | "
            f"sklearn {t['sklearn'] * 1e3:.1f} ms | 1 thread: full {t['full_1'] * 1e3:.1f} ms "
            f"({r['sklearn_over_full_1']:.1f}x sklearn), predict {t['predict_1'] * 1e3:.1f} ms "
            f"({r['predict_over_full_1']:.2f} of full) | {jobs} threads: full "
            f"{t['full'] * 1e3:.1f} ms ({r['sklearn_over_full']:.1f}x), predict "
            f"{t['predict'] * 1e3:.1f} ms ({r['predict_over_full']:.2f} of full)",
            flush=True,
        )
    report["load_average"] = list(os.getloadavg())
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
