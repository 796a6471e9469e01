"""Calibration in bounded memory on a Real-sim-shaped problem.

A linear SVM over 20,958 sparse features (Real-sim's width, generated offline) is calibrated on
20,000 examples with ``family="auto"``. The calibration walks the examples a chunk of rows at a
time, so no (20,000 × 20,958) matrix of partial scores (3.4 GB in float64) is ever built.
Reports the process's peak resident memory (``ru_maxrss``) before and after, the Python-level
peak (tracemalloc) during ``calibrate``, and the time.

Run: ``PYTHONPATH=. python benchmarks/bench_calibration_memory.py [--rows N]``; the last line is one
JSON object. Target: peak ≤ 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc
import warnings

from sklearn.svm import LinearSVC

from attentive import AttentiveClassifier
from attentive.data import load_dataset


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args(argv)
    ds = load_dataset("synthetic-sparse", n_train=2000, n_test=args.rows)
    clf = AttentiveClassifier(LinearSVC(), boundary="curved", side="both", random_state=0)
    clf.fit(ds.X_train, ds.y_train)
    before = _rss_mb()
    tracemalloc.start()
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.calibrate(ds.X_test, delta=0.01, alpha=0.05, family="auto")
    seconds = time.perf_counter() - started
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = _rss_mb()
    dense_mb = args.rows * clf.n_terms_ * 8 / 2**20
    print(
        f"{args.rows:,} calibration rows × {clf.n_terms_:,} terms (a dense partial-score matrix "
        f"would take {dense_mb:,.0f} MB): calibrate took {seconds:.1f} s; traced peak "
        f"{traced_peak / 2**20:.0f} MB; process peak RSS {before:.0f} MB before, {after:.0f} MB "
        f"after (target ≤ 1,536 MB); chose {clf.calibration_.family} at z = "
        f"{clf.calibration_.chosen_scale}"
    )
    print(
        json.dumps(
            {
                "rows": args.rows,
                "terms": int(clf.n_terms_),
                "seconds": seconds,
                "traced_peak_mb": traced_peak / 2**20,
                "peak_rss_mb_before": before,
                "peak_rss_mb_after": after,
                "dense_matrix_mb": dense_mb,
                "family": clf.calibration_.family,
                "z": clf.calibration_.chosen_scale,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
