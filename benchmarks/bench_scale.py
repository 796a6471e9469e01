"""Scoring ten million Real-sim-shaped rows on a LocalCluster: rows per second against in-memory
evaluation, and peak memory per worker.

The problem has Real-sim's shape (20,958 features, ~51 non-zeros per row, tf-idf-like rows of unit
norm, feature popularity following a power law); labels come from a hidden linear rule with 10 %
label noise. The model is ``AttentiveClassifier(LinearSVC(), early_stopping=True)`` (constant
boundary, δ = 0.05, walking: the default would evaluate these sparse rows in full), trained and
referenced on 40,000 generated rows, so its terms are the 20,958 features.

Measured in one run, side by side:

- **in memory**: ``clf.evaluate`` on ``--memory-rows`` rows held in this process, one thread
  (what one worker does per chunk) and the evaluator's default threads: the reference rate.
- **generated**: each chunk generated inside its worker from its own seed (a Dask array of CSR
  blocks), evaluated by :func:`attentive.scale.score_dask`, written by
  :func:`attentive.scale.write_scores`: the scoring pipeline without a file; 1 and 2 workers, at
  a quarter of the rows and at all of them (memory flat in the number of rows).
- **libsvm** (``--libsvm``): the same rows written once to a LIBSVM file (zero-based, as
  scikit-learn writes by default: the reader's first pass over the whole file decides the base),
  then :func:`attentive.scale.score_file` — ``python -m attentive score``: first pass, parsing,
  scoring, writing; 2 workers. The first pass alone (``read_input``: counting line breaks on the
  client, then every chunk's smallest and largest index on the workers) is timed separately.

Every cluster is a :func:`attentive.scale.local_cluster` on 127.0.0.1 with single-threaded worker
processes and a memory limit per worker (``--memory-limit``; Dask pauses a worker at 80 % of it
and restarts one at 95 %; the worker processes at the end are checked to be those of the start).
Reported per run: wall-clock (cluster start excluded), rows per second, the ratio to the
in-memory one-thread rate per worker, and each worker's peak resident memory (``VmHWM``). The per-chunk split (generate, scan indices,
parse, evaluate, write; one process) says what limits the rate.

Run (the BLAS overrides of the workplace unset, as docs/speed.md's benchmarks do)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. .venv/bin/python \\
        benchmarks/bench_scale.py --rows 10000000 --libsvm

The last line printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import io
import json
import os
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
from attentive.data.reader import libsvm_index_range
from attentive.evaluation import evaluation_options
from attentive.scale import (
    evaluation_frame,
    local_cluster,
    read_input,
    score_dask,
    score_file,
    write_scores,
)
from attentive.scale.reading import line_chunks
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


def _chunk_sizes(n_rows: int, chunk_rows: int) -> list[int]:
    return [chunk_rows] * (n_rows // chunk_rows) + (
        [n_rows % chunk_rows] if n_rows % chunk_rows else []
    )


def _generated_block(seed: int, rows: int) -> sp.csr_matrix:
    return generate_rows(rows, seed)[0]


def generated_array(n_rows: int, chunk_rows: int) -> da.Array:
    """A Dask array of ``n_rows`` rows whose CSR blocks are generated where they are computed."""
    blocks = [
        da.from_delayed(
            dask.delayed(_generated_block, pure=True)(1000 + i, rows),
            shape=(rows, N_FEATURES),
            dtype=np.float64,
            meta=sp.csr_matrix((0, N_FEATURES)),
        )
        for i, rows in enumerate(_chunk_sizes(n_rows, chunk_rows))
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
    """Seconds per chunk, one process: generate, format as LIBSVM, scan its indices (the first
    pass), parse, evaluate, write."""
    t0 = time.perf_counter()
    X, y = generate_rows(chunk_rows, seed=999)
    t1 = time.perf_counter()
    buf = io.BytesIO()
    dump_svmlight_file(X, y, buf)
    text = buf.getvalue()
    t2 = time.perf_counter()
    libsvm_index_range(text)
    t3 = time.perf_counter()
    load_svmlight_file(io.BytesIO(text), n_features=N_FEATURES, zero_based=True)
    t4 = time.perf_counter()
    with evaluation_options(n_jobs=1):
        ev = clf.evaluate(X)
    t5 = time.perf_counter()
    _write_part(evaluation_frame(ev), str(folder / "split.parquet"))
    t6 = time.perf_counter()
    return {
        "generate_s": t1 - t0,
        "libsvm_format_s": t2 - t1,
        "libsvm_index_scan_s": t3 - t2,
        "libsvm_parse_s": t4 - t3,
        "evaluate_s": t5 - t4,
        "write_parquet_s": t6 - t5,
        "mean_evaluated_fraction": ev.mean_evaluated_fraction,
    }


def in_memory(clf, n_rows: int, chunk_rows: int) -> dict:
    """``clf.evaluate`` on ``n_rows`` rows held in memory: one thread, then the default."""
    X = sp.vstack(
        [generate_rows(r, 1000 + i)[0] for i, r in enumerate(_chunk_sizes(n_rows, chunk_rows))],
        format="csr",
    )
    out = {"rows": n_rows, "matrix_mb": (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 1e6}
    for name, n_jobs in (("one_thread", 1), ("default_threads", None)):
        started = time.perf_counter()
        with evaluation_options(n_jobs=n_jobs):
            clf.evaluate(X)
        seconds = time.perf_counter() - started
        out[name] = {"seconds": seconds, "rows_per_s": n_rows / seconds}
    return out


def write_libsvm(path: Path, n_rows: int, chunk_rows: int) -> None:
    """The generated rows, zero-based (scikit-learn's default), chunk after chunk."""
    with open(path, "wb") as f:
        for i, rows in enumerate(_chunk_sizes(n_rows, chunk_rows)):
            X, y = generate_rows(rows, 1000 + i)
            dump_svmlight_file(X, y, f)


def run(clf, n_workers, n_rows, chunk_rows, folder: Path, libsvm: Path | None, memory_limit):
    out = folder / f"scores-{n_workers}-{n_rows}"
    result = {"workers": n_workers, "rows": n_rows}
    cluster = local_cluster(n_workers, memory_limit=memory_limit)
    with cluster, Client(cluster) as client:
        pids = set(client.run(os.getpid).values())  # workers up before the clock starts
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
        if libsvm is not None:  # the first pass alone: line breaks, then indices on the workers
            t = time.perf_counter()
            line_chunks(libsvm, chunk_rows)
            result["line_chunks_s"] = time.perf_counter() - t
            t = time.perf_counter()
            read_input(libsvm, clf, chunk_rows=chunk_rows)
            result["read_input_first_pass_s"] = time.perf_counter() - t
        result["peak_rss_mb_per_worker"] = sorted(client.run(_peak_rss_mb).values())
        # the same worker processes as at the start: none was restarted over its memory limit
        result["workers_restarted"] = len(pids - set(client.run(os.getpid).values()))
    shutil.rmtree(out)
    assert summary.rows == n_rows, summary
    result.update(
        seconds=seconds,
        rows_per_s=n_rows / seconds,
        mean_evaluated_fraction=summary.mean_evaluated_fraction,
        stopped=summary.stopped_lower + summary.stopped_upper,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--memory-rows", type=int, default=1_000_000, help="in-memory reference")
    parser.add_argument("--memory-limit", default="3GiB", help="per worker")
    parser.add_argument("--libsvm", action="store_true", help="also score from a LIBSVM file")
    args = parser.parse_args()

    from threadpoolctl import threadpool_info

    results: dict = {
        "rows": args.rows,
        "chunk_rows": args.chunk_rows,
        "memory_limit": args.memory_limit,
        "cores": len(os.sched_getaffinity(0)),
        "load_average_before": os.getloadavg(),
        "blas": [
            {k: i.get(k) for k in ("internal_api", "architecture", "num_threads")}
            for i in threadpool_info()
        ],
    }
    print(f"BLAS: {results['blas']}; load average {results['load_average_before']}", flush=True)
    clf = fit_model()
    results["n_terms"] = clf.n_terms_
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
            size = path.stat().st_size
            results["libsvm_file"] = {"gb": size / 1e9, "write_s": time.perf_counter() - t}
            print(f"wrote {size / 1e9:.2f} GB of LIBSVM in {time.perf_counter() - t:.0f} s")
            sources["libsvm"] = path
        for name, source in sources.items():
            runs = []
            plan = (
                [(w, n) for n in (args.rows // 4, args.rows) for w in (1, 2)]
                if source is None
                else [(2, args.rows)]
            )
            for workers, n_rows in plan:
                r = run(clf, workers, n_rows, args.chunk_rows, folder, source, args.memory_limit)
                runs.append(r)
                first = (
                    f", first pass alone {r['read_input_first_pass_s']:.1f} s (of which "
                    f"counting lines on the client {r['line_chunks_s']:.1f} s)"
                    if "read_input_first_pass_s" in r
                    else ""
                )
                print(
                    f"{name:9} {workers} worker(s) {n_rows:>11,} rows: {r['seconds']:7.1f} s, "
                    f"{r['rows_per_s']:>9,.0f} rows/s, peak RSS per worker "
                    f"{', '.join(f'{m:,.0f}' for m in r['peak_rss_mb_per_worker'])} MB{first}",
                    flush=True,
                )
            results[name] = runs
    results["client_peak_rss_mb"] = _peak_rss_mb()  # before the in-memory reference
    memory = in_memory(clf, args.memory_rows, args.chunk_rows)
    results["in_memory"] = memory
    one = memory["one_thread"]["rows_per_s"]
    print(
        f"in memory, {args.memory_rows:,} rows ({memory['matrix_mb']:,.0f} MB of CSR): "
        f"one thread {one:,.0f} rows/s, default threads "
        f"{memory['default_threads']['rows_per_s']:,.0f} rows/s",
        flush=True,
    )
    for name in sources:
        for r in results[name]:
            r["ratio_to_in_memory_one_thread"] = r["rows_per_s"] / one
            r["ratio_per_worker"] = r["rows_per_s"] / one / r["workers"]
            print(
                f"{name:9} {r['workers']} worker(s) {r['rows']:>11,} rows: "
                f"{r['ratio_to_in_memory_one_thread']:.2f}× the in-memory one-thread rate "
                f"({r['ratio_per_worker']:.2f} per worker)",
                flush=True,
            )
    results["load_average_after"] = os.getloadavg()
    print(f"client peak RSS {results['client_peak_rss_mb']:,.0f} MB", flush=True)
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
