"""``python -m attentive bench``: wall-clock of the calibrated rule against full evaluation,
scikit-learn and scikit-learn-intelex on the same fitted model.

For each problem of :mod:`attentive.bench_corpus` (offline), the calibrated two-sided classifier
of issue 34 — ``AttentiveClassifier(SVC(...), boundary="calibrated", side="both", delta=0.01,
alpha=0.05, random_state=0)`` — is fitted, and in one process, interleaved round by round, are
timed:

* ``sklearn``: the fitted model's own ``decision_function`` (libsvm / liblinear, one thread);
* ``sklearnex``: scikit-learn-intelex's ``SVC.decision_function`` on the **same** model (its
  support vectors, dual coefficients and intercept; the ``bench`` extra installs it), on one
  thread and on its default threads;
* ``full``: ``clf.with_rule("full").decision_function`` (every term);
* ``predict`` and ``decision_function`` of the calibrated classifier (``early_stopping="auto"``:
  the evaluator walks the rule or evaluates in full, whichever its pilot predicts is faster);

ours on one thread (``n_jobs=1``) and on the default thread count; where ``predict`` evaluates
in full, the walk it declined (``early_stopping=True``) too, and behind a pipeline its head's
transform alone (one thread). It prints ``f`` (the rule's mean evaluated fraction), the path the
evaluator took, the ratios, and PASS / FAIL against the targets of issue 34 (medians over
rounds, ratios within one run; ``--quick`` judges none):

* ``predict`` ≤ 1.05 × full on every problem, and ≤ (f + 0.15) × full where f ≤ 0.6;
* full at least as fast as scikit-learn-intelex on the MNIST-like float32 problems;
* ``predict`` ≥ 1.5× as fast as scikit-learn-intelex where f ≤ 0.4.

Timed as a user's machine runs: numpy's OpenBLAS on its own kernels. This workplace's
``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` hold it to AVX2; the benchmark re-runs itself
without them (``--keep-blas-env`` keeps them) and prints the kernel threadpoolctl sees. The last
line printed is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import sys
import time
import tracemalloc

import numpy as np

__all__ = ["configure_parser", "run"]

_BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    # `bench` times the evaluator; `bench rules` compares the stopping rules (attentive.bench_rules).
    from attentive import bench_rules
    from attentive.bench_corpus import DEFAULT, problem_name, problem_names

    sub = parser.add_subparsers(dest="what", metavar="[rules]")
    rules = sub.add_parser("rules", help="stopping rules against the oracle, tuned and calibrated")
    bench_rules.configure_parser(rules)
    rules.set_defaults(_bench=bench_rules.run)
    parser.add_argument(
        "--problems",
        nargs="+",
        default=list(DEFAULT),
        type=problem_name,
        metavar="NAME",
        help=f"problems to time (default: all of {problem_names()})",
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="threads of the default runs (default: what evaluate() uses by default)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small problems and few rounds (for CI: it runs)"
    )
    parser.add_argument(
        "--keep-blas-env",
        action="store_true",
        help=f"keep {' and '.join(_BLAS_ENV)} (default: re-run without them)",
    )


def _blas_kernel() -> str:
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
    return ", ".join(sorted({f"{i.get('architecture')}" for i in blas})) or "unknown"


class _HeadThenPeer:
    """A fitted pipeline's transforms, then the peer's ``SVC`` (both score the same model)."""

    def __init__(self, head, peer):
        self.head, self.peer = head, peer

    def decision_function(self, X):
        return self.peer.decision_function(self.head.transform(X))


def _peer(model, X_fit, y_fit):
    """scikit-learn-intelex's ``SVC`` holding ``model``'s support vectors, dual coefficients
    and intercept (so both score the same model), or None where it is not installed or the
    model is not an ``SVC``. A pipeline ending in an ``SVC``: its own transforms, then the
    peer's ``SVC``."""
    from sklearn.pipeline import Pipeline
    from sklearn.svm import SVC

    if isinstance(model, Pipeline) and type(model[-1]) is SVC:
        head = model[:-1]
        peer = _peer(model[-1], head.transform(X_fit), y_fit)
        return None if peer is None else _HeadThenPeer(head, peer)
    if type(model) is not SVC:
        return None
    try:
        from sklearnex.svm import SVC as PeerSVC
    except ImportError:
        return None
    peer = PeerSVC(**model.get_params()).fit(X_fit, y_fit)
    # sklearnex rebuilds its oneDAL model from these when they are set.
    peer.support_vectors_ = model.support_vectors_
    peer.dual_coef_ = model.dual_coef_
    peer.intercept_ = model.intercept_
    peer.support_ = model.support_
    peer._n_support = model._n_support
    peer._gamma = model._gamma
    peer._onedal_estimator.gamma = model._gamma  # gamma="scale" was resolved on other rows
    peer._onedal_estimator._onedal_model = None
    return peer


def _no_peer(model) -> str:
    """Why :func:`_peer` gave no peer for ``model``: scikit-learn-intelex is not installed, or
    the model is not an ``SVC`` (a pipeline's last step aside), which is all it scores here."""
    try:
        from sklearnex.svm import SVC  # noqa: F401
    except ImportError:
        return "sklearnex not installed (pip install 'attentive[bench]')"
    name = type(_final_step(model)).__name__
    return f"no sklearnex peer for {name} (the peer is timed for SVC only)"


def _final_step(model):
    from sklearn.pipeline import Pipeline

    return model[-1] if isinstance(model, Pipeline) else model


def _peer_threads(n: int | None) -> None:
    """oneDAL's thread count (None: every core)."""
    import daal4py

    daal4py.daalinit(n if n is not None else 0)


def _blas_limits():
    """``limits(n)``: a context holding BLAS (and OpenMP) to ``n`` threads (None: as they are),
    from the evaluator's one ``ThreadpoolController``. ``threadpool_limits(n)`` scans the loaded
    libraries each time it is entered (2.6 ms with scikit-learn-intelex loaded, measured), which
    a timed call would include: a fixed time added to ours and the peer's alike, pulling every
    ratio towards 1."""
    from attentive.evaluator.threads import thread_pools

    controller = thread_pools()

    def limits(n: int | None):
        return contextlib.nullcontext() if n is None else controller.limit(limits=n)

    return limits


def method_call(clf, method: str, X, *, jobs: int | None = 1, limits=None):
    """``clf.method(X)`` as a call to time: under ``evaluation_options(n_jobs=jobs)`` and, with
    ``limits`` (:func:`_blas_limits`), BLAS held to one thread when one job runs (the evaluator
    holds it to one inside its own threads) and left as it is otherwise."""
    from attentive.evaluation import evaluation_options

    def call():
        blas = contextlib.nullcontext() if limits is None else limits(1 if jobs == 1 else None)
        with blas, evaluation_options(n_jobs=jobs):
            return getattr(clf, method)(X)

    return call


def _time_interleaved(methods: dict, rounds: int) -> dict:
    """Median seconds per call of each method; methods alternate within every round."""
    names = list(methods)
    inner = {}
    for name in names:  # warm up and pick repeats so each measurement lasts ≥ ~50 ms
        t0 = time.perf_counter()
        methods[name]()
        inner[name] = max(1, int(np.ceil(0.05 / max(time.perf_counter() - t0, 1e-6))))
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            for _ in range(inner[name]):
                methods[name]()
            times[name].append((time.perf_counter() - t0) / inner[name])
    return {name: float(np.median(t)) for name, t in times.items()}


def _peak_mb(fn) -> float:
    """Peak traced memory of one call, the evaluator's scratch arrays dropped first."""
    from attentive.evaluator import release_scratch

    release_scratch()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _input_mb(X) -> float:
    if hasattr(X, "data") and hasattr(X, "indices"):
        return (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    return np.asarray(X).nbytes / 2**20


def _bench_problem(name: str, args) -> dict:
    from sklearn.base import clone

    from attentive.bench_corpus import load_problem
    from attentive.estimator import AttentiveClassifier

    p = load_problem(name, args.quick)
    t0 = time.perf_counter()
    att = AttentiveClassifier(
        clone(p.model), boundary="calibrated", side="both", delta=0.01, alpha=0.05, random_state=0
    ).fit(p.X_train, p.y_train)
    fit_seconds = time.perf_counter() - t0
    model = att.estimator_
    full = att.with_rule("full")
    walking = copy.copy(att).set_params(early_stopping=True)
    X = p.X_test
    ev = att.evaluate(X)
    rule = walking.evaluate(X)
    full_ev = full.evaluate(X)
    peer = _peer(model, p.X_train, p.y_train)

    blas = _blas_limits()

    def ours(clf, jobs, method):
        return method_call(clf, method, X, jobs=jobs, limits=blas)

    def peer_call(threads):
        def call():
            _peer_threads(threads)
            with blas(threads):
                return peer.decision_function(X)

        return call

    def one_thread(fn):
        def call():
            with blas(1):
                return fn()

        return call

    methods = {"sklearn": one_thread(lambda: model.decision_function(X))}
    if peer is not None:
        methods["sklearnex_1"] = peer_call(1)
        methods["sklearnex"] = peer_call(None)
    # Where `predict` does not walk (it evaluates in full, or stops only the rows its triage
    # decides: path "triage"), the walk it declined is timed too; behind a pipeline, the head
    # alone (its transform of every row, which `predict` applies too, a StandardScaler tile by
    # tile): about a floor under `predict`.
    walk_declined = ev.path != "walk" and rule.mean_evaluated_fraction < 1.0
    for sfx, jobs in (("_1", 1), ("", args.jobs)):
        methods["full" + sfx] = ours(full, jobs, "decision_function")
        methods["predict" + sfx] = ours(att, jobs, "predict")
        methods["decision" + sfx] = ours(att, jobs, "decision_function")
        if walk_declined:
            methods["walk" + sfx] = ours(walking, jobs, "predict")
    if att.walk_.terms.head is not None:
        methods["head_1"] = one_thread(lambda: att.walk_.prepare(X))
    t = _time_interleaved(methods, args.rounds)
    if peer is not None:
        _peer_threads(None)
    f = rule.mean_evaluated_fraction
    out = {
        "n_terms": int(att.n_terms_),
        "n_test": int(X.shape[0]),
        "fit_seconds": fit_seconds,
        "family": att.calibration_.family if att.calibration_ is not None else None,
        "f": f,
        "path": ev.path,
        "f_auto": ev.mean_evaluated_fraction,
        "disagreement": float(np.mean(ev.positive != full_ev.positive)),
        "full_labels_match_sklearn": bool(np.array_equal(full_ev.labels, model.predict(X))),
        "full_vs_sklearn_max_abs_diff": float(
            np.max(np.abs(full_ev.decision - model.decision_function(X)), initial=0.0)
        ),
        "mnist_like": p.mnist_like,
        "seconds": t,
        "input_mb": _input_mb(X),
        "peak_mb_predict": _peak_mb(ours(att, 1, "predict")),
    }
    from attentive.evaluator import resolved_precision, source_for
    from attentive.evaluator.plan import walk_plan
    from attentive.evaluator.rows import as_rows

    rows = as_rows(att.walk_.prepare(X[:1]))
    source = source_for(att.walk_, walk_plan(att.walk_), rows, resolved_precision(att.precision))
    out["source"] = source.kind
    out["walking_can_pay"] = bool(getattr(source, "walking_pays", True))
    out["no_peer"] = None if peer is not None else _no_peer(model)
    out["targets"] = _targets(out, peer is not None)
    return out


def _targets(r: dict, with_peer: bool) -> dict:
    """Issue 34's targets for one problem, and issue 35's ``predict`` at least twice as fast as
    the peer on every MNIST-like problem: ``{name: (ratio, limit, met)}``, one thread and the
    default (``_1`` and no suffix)."""
    t, f = r["seconds"], r["f"]
    out = {}
    for sfx in ("_1", ""):
        ratio = t["predict" + sfx] / t["full" + sfx]
        out["predict/full ≤ 1.05" + sfx] = (ratio, 1.05, ratio <= 1.05)
        if f <= 0.6 and r["walking_can_pay"]:
            out["predict/full ≤ f+0.15" + sfx] = (ratio, f + 0.15, ratio <= f + 0.15)
        if with_peer:
            if r["mnist_like"]:
                q = t["full" + sfx] / t["sklearnex" + sfx]
                out["full/sklearnex ≤ 1" + sfx] = (q, 1.0, q <= 1.0)
                q = t["predict" + sfx] / t["sklearnex" + sfx]
                out["predict/sklearnex ≤ 1/2" + sfx] = (q, 0.5, q <= 0.5)
            if f <= 0.4:
                q = t["predict" + sfx] / t["sklearnex" + sfx]
                out["predict/sklearnex ≤ 1/1.5" + sfx] = (q, 1 / 1.5, q <= 1 / 1.5)
    return out


def _lines(name: str, r: dict, jobs: int, quick: bool = False) -> list[str]:
    t = r["seconds"]
    lines = [
        f"{name}: {r['n_terms']} terms, {r['n_test']} rows, source {r['source']} | calibrated "
        f"{r['family']}, f={r['f']:.3f} (the rule's walk); path taken: {r['path']} "
        f"(f={r['f_auto']:.3f}); disagreement {r['disagreement']:.4f}",
    ]
    if not r["walking_can_pay"]:
        lines.append(
            "  (f + 0.15 not applicable: a linear model over a sparse matrix is one sparse "
            "product, which no walk beats; docs/speed.md)"
        )
    for sfx, label in (("_1", "1 thread"), ("", f"{jobs} threads")):
        peer = (
            f", sklearnex {t['sklearnex' + sfx] * 1e3:.1f} ms"
            if "sklearnex" + sfx in t
            else f", {r.get('no_peer') or 'no sklearnex peer'}"
        )
        walk = (
            f", the walk predict declined {t['walk' + sfx] * 1e3:.1f} ms "
            f"({t['walk' + sfx] / t['full' + sfx]:.2f} of full)"
            if "walk" + sfx in t
            else ""
        )
        lines.append(
            f"  {label}: sklearn {t['sklearn'] * 1e3:.1f} ms{peer}, full "
            f"{t['full' + sfx] * 1e3:.1f} ms, predict {t['predict' + sfx] * 1e3:.1f} ms "
            f"({t['predict' + sfx] / t['full' + sfx]:.2f} of full), decision_function "
            f"{t['decision' + sfx] * 1e3:.1f} ms ({t['decision' + sfx] / t['full' + sfx]:.2f})"
            f"{walk}"
        )
    if "head_1" in t:
        peer = (
            f" = {t['head_1'] / t['sklearnex_1']:.2f} of sklearnex's whole call"
            if "sklearnex_1" in t
            else ""
        )
        lines.append(
            f"  the pipeline's head alone, 1 thread: {t['head_1'] * 1e3:.1f} ms "
            f"({t['head_1'] / t['predict_1']:.2f} of predict){peer}"
        )
    for key, (ratio, limit, met) in r["targets"].items():
        verdict = "(quick run, not judged)" if quick else "PASS" if met else "FAIL"
        lines.append(f"  {verdict} {key}: {ratio:.3f} (limit {limit:.3f})")
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print one summary per problem, then one JSON line."""
    if getattr(args, "what", None) == "rules":
        return args._bench(args)
    rerun = not args.keep_blas_env and sys.argv[1:2] == ["bench"]
    if rerun and any(v in os.environ for v in _BLAS_ENV):
        # OpenBLAS reads these when numpy loads: run again without them.
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_ENV}
        argv = [sys.executable, "-m", "attentive", "bench", *sys.argv[2:]]
        sys.stdout.flush()
        os.execve(sys.executable, argv, env)
    from attentive.errors import InvalidParameterError
    from attentive.evaluator import default_n_jobs

    if args.rounds < 1 or (args.jobs is not None and args.jobs < 1):
        raise InvalidParameterError("--rounds and --jobs must be positive integers.")
    args.rounds = min(args.rounds, 2) if args.quick else args.rounds
    args.jobs = args.jobs or default_n_jobs()
    results: dict = {
        "problems": {},
        "n_jobs": args.jobs,
        "rounds": args.rounds,
        "blas_kernel": _blas_kernel(),
        "blas_env": {v: os.environ.get(v) for v in _BLAS_ENV},
        "load_average_before": list(os.getloadavg()),
    }
    print(
        f"numpy's BLAS kernel: {results['blas_kernel']} "
        f"({', '.join(f'{k}={v}' for k, v in results['blas_env'].items())}); "
        f"{args.jobs} threads for the default runs; {args.rounds} rounds",
        flush=True,
    )
    for name in args.problems:
        r = _bench_problem(name, args)
        results["problems"][name] = r
        print("\n".join(_lines(name, r, args.jobs, args.quick)), flush=True)
    checks = [met for r in results["problems"].values() for (_, _, met) in r["targets"].values()]
    results["judged"] = not args.quick
    results["passed"], results["failed"] = (
        (sum(checks), len(checks) - sum(checks)) if results["judged"] else (None, None)
    )
    results["load_average_after"] = list(os.getloadavg())
    verdicts = (
        f"quick run (small problems, few rounds): none of the {len(checks)} targets is judged "
        "here, only on a full run"
        if args.quick
        else f"targets: {results['passed']} PASS, {results['failed']} FAIL"
    )
    print(
        f"{verdicts}; load average {results['load_average_before'][0]:.2f} before, "
        f"{results['load_average_after'][0]:.2f} after ({os.cpu_count()} CPUs)"
    )
    print(json.dumps(results, default=float))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    configure_parser(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
