"""Scoring a Real-sim-shaped sparse problem of millions of rows on Dask: rows per second, memory.

The problem has Real-sim's shape (20,958 features, ~51 non-zeros per row, tf-idf-like rows of unit
norm, feature popularity following a power law); labels come from a hidden linear rule with 10 %
label noise. The model is ``AttentiveClassifier(LinearSVC(), early_stopping=True)`` (constant
boundary, δ = 0.05, walking: the default would evaluate these sparse rows in full), trained and
referenced on 40,000 generated rows, so its terms are the 20,958 features.

Two ways of feeding rows, each with 1 and then 2 single-threaded worker processes of a
``LocalCluster`` on 127.0.0.1 (:func:`attentive.scale.local_cluster`):

- ``generated``: each chunk is generated inside its worker from its own seed (a Dask array of CSR
  blocks), evaluated by :func:`attentive.scale.score_dask` and written by
  :func:`attentive.scale.write_scores`: the scoring pipeline without parsing;
- ``libsvm`` (``--libsvm``): the same rows written once to a LIBSVM file, then
  :func:`attentive.scale.score_file` (``python -m attentive score``): reading, parsing, scoring,
  writing.

For each run: rows per second (wall-clock, cluster start-up excluded), peak resident memory of
each worker process (``VmHWM``) and, to show it is flat in the number of rows, the same at a
quarter of the rows. The per-chunk split (generate or parse / evaluate / write, one process) says
what limits the rate.

Run: ``PYTHONPATH=. python benchmarks/bench_scale.py [--rows 2000000] [--chunk-rows 100000]
[--libsvm]``. The last line printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
from distributed import Client
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.svm import LinearSVC

from attentive import AttentiveClassifier
from attentive.scale import local_cluster, score_dask, score_file, write_scores
from attentive.scale.writing import _write_part

N_FEATURES = 20_958  # Real-sim
NNZ_PER_ROW = 51  # Real-sim: 3,709,083 non-zeros over 72,309 rows
_W_SEED = 12345


def _feature_popularity() -> np.ndarray:
    ranks = np.arange(1, N_FEATURES + 1)
    p = ranks**-0.8
    return p / p.sum()


def generate_rows(n_rows: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``n_rows`` Real-sim-like rows (CSR, unit-norm) and their ±1 labels, from ``seed``."""
    rng = np.random.default_rng(seed)
    popularity = _feature_popularity()
    counts = np.clip(rng.poisson(NNZ_PER_ROW, n_rows), 1, None)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = rng.choice(N_FEATURES, size=indptr[-1], p=popularity).astype(np.int32)
    data = rng.exponential(1.0, size=indptr[-1])
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, N_FEATURES))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    w = np.random.default_rng(_W_SEED).normal(size=N_FEATURES)
    score = X @ w
    y = np.where(score > np.median(score), 1, -1)
    flip = rng.random(n_rows) < 0.10
    y[flip] = -y[flip]
    return X, y


def _generated_block(seed: int, rows: int) -> sp.csr_matrix:
    return generate_rows(rows, seed)[0]


def generated_array(n_rows: int, chunk_rows: int) -> da.Array:
    """A Dask array of ``n_rows`` rows whose CSR blocks are generated where they are computed."""
    sizes = [chunk_rows] * (n_rows // chunk_rows) + (
        [n_rows % chunk_rows] if n_rows % chunk_rows else []
    )
    blocks = [
        da.from_delayed(
            dask.delayed(_generated_block, pure=True)(1000 + i, rows),
            shape=(rows, N_FEATURES),
            dtype=np.float64,
            meta=sp.csr_matrix((0, N_FEATURES)),
        )
        for i, rows in enumerate(sizes)
    ]
    return da.concatenate(blocks, axis=0)


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM; ``ru_maxrss`` would include the parent's from
    before the worker process was started)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def fit_model() -> AttentiveClassifier:
    X, y = generate_rows(40_000, seed=1)
    # Walks (early_stopping=True), as measured in docs/scale.md: the default ("auto") evaluates a
    # linear model over sparse rows in full, one sparse product, which is faster still.
    return AttentiveClassifier(LinearSVC(C=1.0), random_state=0, early_stopping=True).fit(X, y)


def chunk_split(clf, chunk_rows: int, folder: Path) -> dict[str, float]:
    """Seconds per chunk, one process: generate, format as LIBSVM and parse, evaluate, write."""
    t0 = time.perf_counter()
    X, y = generate_rows(chunk_rows, seed=999)
    t1 = time.perf_counter()
    buf = io.BytesIO()
    dump_svmlight_file(X, y, buf, zero_based=False)
    t2 = time.perf_counter()
    load_svmlight_file(io.BytesIO(buf.getvalue()), n_features=N_FEATURES, zero_based=False)
    t3 = time.perf_counter()
    from attentive.evaluation import evaluation_options
    from attentive.scale import evaluation_frame

    with evaluation_options(n_jobs=1):
        ev = clf.evaluate(X)
    t4 = time.perf_counter()
    _write_part(evaluation_frame(ev), str(folder / "split.parquet"))
    t5 = time.perf_counter()
    return {
        "generate_s": t1 - t0,
        "libsvm_format_s": t2 - t1,
        "libsvm_parse_s": t3 - t2,
        "evaluate_s": t4 - t3,
        "write_parquet_s": t5 - t4,
        "mean_evaluated_fraction": ev.mean_evaluated_fraction,
    }


def write_libsvm(path: Path, n_rows: int, chunk_rows: int) -> None:
    with open(path, "wb") as f:
        for i, start in enumerate(range(0, n_rows, chunk_rows)):
            X, y = generate_rows(min(chunk_rows, n_rows - start), 1000 + i)
            dump_svmlight_file(X, y, f, zero_based=False)


def run(clf, n_workers: int, n_rows: int, chunk_rows: int, folder: Path, libsvm: Path | None):
    out = folder / f"scores-{n_workers}-{n_rows}"
    with local_cluster(n_workers) as cluster, Client(cluster) as client:
        client.run(lambda: None)  # workers up before the clock starts
        started = time.perf_counter()
        if libsvm is None:
            summary = write_scores(
                score_dask(clf, generated_array(n_rows, chunk_rows)),
                out,
                n_terms=clf.n_terms_,
                client=client,
                progress=False,
            )
        else:
            summary = score_file(
                clf,
                libsvm,
                out,
                scheduler=client.scheduler.address,
                chunk_rows=chunk_rows,
                progress=False,
            )
        seconds = time.perf_counter() - started
        peaks = sorted(client.run(_peak_rss_mb).values())
    shutil.rmtree(out)
    assert summary.rows == n_rows, summary
    return {
        "workers": n_workers,
        "rows": n_rows,
        "seconds": seconds,
        "rows_per_s": n_rows / seconds,
        "peak_rss_mb_per_worker": peaks,
        "mean_evaluated_fraction": summary.mean_evaluated_fraction,
        "stopped": summary.stopped_lower + summary.stopped_upper,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--libsvm", action="store_true", help="also score from a LIBSVM file")
    args = parser.parse_args()

    clf = fit_model()
    results: dict = {"rows": args.rows, "chunk_rows": args.chunk_rows, "n_terms": clf.n_terms_}
    with tempfile.TemporaryDirectory(prefix="bench_scale-") as tmp:
        folder = Path(tmp)
        split = chunk_split(clf, args.chunk_rows, folder)
        results["per_chunk_one_process"] = split
        print(
            f"per chunk of {args.chunk_rows:,} rows (one process): "
            + ", ".join(f"{k} {v:.3f}" for k, v in split.items()),
            flush=True,
        )
        sources = {"generated": None}
        if args.libsvm:
            path = folder / "rows.libsvm"
            t = time.perf_counter()
            write_libsvm(path, args.rows, args.chunk_rows)
            print(
                f"wrote {path.stat().st_size / 1e9:.2f} GB of LIBSVM in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            sources["libsvm"] = path
        for name, source in sources.items():
            runs = []
            # the file holds args.rows rows; generated rows also at a quarter, for memory vs rows
            for n_rows in (args.rows // 4, args.rows) if source is None else (args.rows,):
                for workers in (1, 2):
                    r = run(clf, workers, n_rows, args.chunk_rows, folder, source)
                    runs.append(r)
                    print(
                        f"{name:9} {workers} worker(s) {n_rows:>10,} rows: {r['seconds']:7.1f} s, "
                        f"{r['rows_per_s']:>9,.0f} rows/s, peak RSS per worker "
                        f"{', '.join(f'{m:,.0f}' for m in r['peak_rss_mb_per_worker'])} MB",
                        flush=True,
                    )
            results[name] = runs
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
