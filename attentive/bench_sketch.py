"""Issue 35's rule targets for sketched walks (``python -m attentive bench rules --targets``).

On MNIST as users prepare it (float32 pixels / 255, ``SVC(gamma="scale")``, C = 1 and 10, four
pairs and one digit against the rest; :mod:`attentive.bench_corpus`) the classifier of the
product — ``AttentiveClassifier(boundary="calibrated", side="both", delta=0.01, alpha=0.05)``,
``family="auto"`` and ``sketch="auto"`` — is fitted on each of five seeded splits of the training
part (the seed also draws the calibration part and the order of the terms) and walks the test
rows (``early_stopping=True``: the rule's own work, not a full evaluation chosen instead):

- **work**: :attr:`attentive.Evaluation.work_fraction`, the sketch plus the exact terms walked at
  their cost, in units of a full evaluation (SPEC §3b's count of multiply-adds);
- the **plain walk's oracle floor** (:meth:`AttentiveClassifier.oracle_n_evaluated`);
- **target**: the mean work over the splits at most 1/3 of the mean floor on models with at least
  200 support vectors, at most 1/2 below that.

Besides, per split: the sketch ``choose_sketch`` kept (by the evaluator's measured costs), the
rule ``family="auto"`` calibrated, each sketched rule calibrated on its own, the sketched walk's
oracle floor in work units; and, unless ``--no-counted``, the same classifier choosing its
sketch and ranking its rules by the count of multiply-adds instead (``counted``): what the target's
units would choose. On the 40-feature problem the target is that ``auto`` never keeps a sketch.
The last line printed is one JSON object with every number.
"""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np

from attentive.estimator import AttentiveClassifier

__all__ = [
    "FEW_FEATURES",
    "SEEDS",
    "TARGET_PROBLEMS",
    "CountedCosts",
    "measure_few_features",
    "measure_split",
    "measure_target",
    "run_targets",
    "work_limit",
]

_PAIRS = ("2v5", "4v9", "3v8", "7v9", "8vrest")
TARGET_PROBLEMS = (*(f"mnist-{p}" for p in _PAIRS), *(f"mnist-{p}-C10" for p in _PAIRS))
FEW_FEATURES = ("dense-40",)
SEEDS = (0, 1, 2, 3, 4)
LARGE_MODEL = 200  # support vectors from which the work must be ≤ 1/3 of the floor (else 1/2)


class CountedCosts(AttentiveClassifier):
    """:class:`AttentiveClassifier` choosing its sketch and ranking its rules by SPEC §3b's count
    of multiply-adds (the units of :attr:`attentive.Evaluation.work_fraction`) instead of the
    evaluator's measured costs. A diagnostic of the benchmark, not a classifier to use."""

    def _sketch_cost_model(self):
        return None  # choose_sketch's default: the sketch's own count


def work_limit(n_terms: float) -> float:
    """The target's bound on work / plain oracle floor for a model of ``n_terms`` terms."""
    return 1 / 3 if n_terms >= LARGE_MODEL else 1 / 2


def measure_split(problem, seed: int, *, counted: bool = False, families: bool = True) -> dict:
    """The calibrated rule (``family="auto"``, ``sketch="auto"``) fitted on one split of
    ``problem``'s training rows, measured on its test rows."""
    from sklearn.base import clone

    from attentive.bench_rules import ALPHA, DELTA, calibration_split
    from attentive.families.sketched import sketched_names
    from attentive.grid import oracle_stop_positions

    cls = CountedCosts if counted else AttentiveClassifier
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback to the full model is reported below
        clf = cls(
            clone(problem.model),
            boundary="calibrated",
            side="both",
            delta=DELTA,
            alpha=ALPHA,
            random_state=seed,
        ).fit(problem.X_train, problem.y_train)
    fit_seconds = time.perf_counter() - started
    X = problem.X_test
    n = clf.n_terms_
    full = clf.with_rule("full").evaluate(X).positive

    def walked(rule) -> dict:
        ev = copy.copy(rule).set_params(early_stopping=True).evaluate(X)
        return {
            "work": float(ev.work_fraction),
            "walked": float(ev.mean_evaluated_fraction),
            "sketch_cost": float(ev.sketch_cost),
            "disagreement": float(np.mean(ev.positive != full)),
        }

    report = clf.calibration_
    choice = clf.sketch_choice_
    kept = clf._kept_sketch()
    out = {
        "seed": int(seed),
        "n_terms": int(n),
        "oracle": float(clf.oracle_n_evaluated(X).mean() / n),
        "fit_seconds": fit_seconds,
        # The sketch kept (the cheapest by the costs it was chosen at: ``sketch_costs_``).
        "sketch": None if choice is None else ("no sketch" if kept is None else kept.label),
        "sketch_costs": getattr(clf, "sketch_costs_", None),
        "options": []
        if choice is None
        else [
            {
                "sketch": o.label,
                "total": o.total,
                "walked": o.walked_fraction,
                "family": o.family,
                "count_only": o.count_only,
            }
            for o in choice.options
        ],
        "family": report.family,
        "z": report.chosen_scale,
        "fallback": bool(report.fallback),
        **walked(clf),
    }
    sketched = clf.sketched_walk_
    if sketched is not None:
        S = sketched.partial_scores(X)
        M = clf.sketched_statistics_.pooled.remainder_mean
        floor = float(oracle_stop_positions(S, clf.theta_s_, M).mean() / n)
        out["sketched_oracle_work"] = sketched.cost + floor * sketched.walked_term_cost
        if families:
            _, X_cal, _ = calibration_split(problem, seed)
            out["families"] = {}
            for name in sketched_names():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rule = clf.with_rule(name).calibrate(X_cal, family=name)
                out["families"][name] = walked(rule)
    return out


def measure_target(name: str, seeds=SEEDS, *, counted: bool = True, quick: bool = False) -> dict:
    """Every split of one MNIST problem and the target's verdict (module docstring);
    ``quick``: the problem's small version (a check that it runs)."""
    from attentive.bench_corpus import load_problem

    problem = load_problem(name, quick, tiled=False)
    splits = [measure_split(problem, seed) for seed in seeds]
    result = {
        "problem": name,
        "n_features": int(problem.X_train.shape[1]),
        "splits": splits,
        **_verdict(splits),
    }
    if counted:
        result["counted"] = [measure_split(problem, s, counted=True, families=False) for s in seeds]
        result["counted_verdict"] = _verdict(result["counted"])
    return result


def _verdict(splits: list[dict]) -> dict:
    n_terms = float(np.mean([s["n_terms"] for s in splits]))
    work = float(np.mean([s["work"] for s in splits]))
    oracle = float(np.mean([s["oracle"] for s in splits]))
    limit = work_limit(n_terms)
    return {
        "mean_n_terms": n_terms,
        "mean_work": work,
        "mean_oracle": oracle,
        "work_x_oracle": work / oracle,
        "limit": limit,
        "passed": bool(work <= limit * oracle),
    }


def measure_few_features(name: str, seeds=SEEDS, *, quick: bool = False) -> dict:
    """Whether ``auto`` keeps a sketch (or ranks a sketched rule first) on any split."""
    from attentive.bench_corpus import load_problem

    problem = load_problem(name, quick, tiled=False)
    splits = [measure_split(problem, seed, families=False) for seed in seeds]
    picked = [
        s["sketch"] not in (None, "no sketch") or s["family"].startswith("sketched-")
        for s in splits
    ]
    return {
        "problem": name,
        "n_features": int(problem.X_train.shape[1]),
        "splits": splits,
        "passed": not any(picked),
    }


def _print_split(s: dict, label: str) -> None:
    options = ", ".join(
        f"{o['sketch']} {o['total']:.3f}" + (" (by the count only)" if o.get("count_only") else "")
        for o in s["options"]
    )
    scale = " (fallback)" if s["fallback"] else f" z={s['z']:g}"
    print(
        f"    {label} split {s['seed']}: {s['n_terms']} SVs, floor {s['oracle']:.3f}; "
        f"{s['sketch'] or 'no sketch considered'} → {s['family']}{scale}: work {s['work']:.3f} "
        f"(walked {s['walked']:.3f} + sketch {s['sketch_cost']:.3f}), "
        f"disagreement {s['disagreement']:.4f}, fit {s['fit_seconds']:.1f} s"
    )
    if options:
        priced = f" — kept at the {s['sketch_costs']} costs" if s.get("sketch_costs") else ""
        print(f"      choice (total at δ on the reference profile): {options}{priced}")
    if "sketched_oracle_work" in s:
        fams = ", ".join(
            f"{k.removeprefix('sketched-')} {v['work']:.3f}"
            for k, v in s.get("families", {}).items()
        )
        print(
            f"      sketched walk's floor in work {s['sketched_oracle_work']:.3f}"
            + (f"; each sketched rule calibrated: {fams}" if fams else "")
        )


def _print_verdict(v: dict, label: str) -> None:
    status = "PASS" if v["passed"] else "FAIL"
    print(
        f"  {status} {label}: mean work {v['mean_work']:.3f} = {v['work_x_oracle']:.2f} × the "
        f"plain floor {v['mean_oracle']:.3f} (target ≤ {v['limit']:.2f}: "
        f"{v['mean_n_terms']:.0f} SVs on average)"
    )


def run_targets(args) -> dict:
    """Print and return every problem's measurements and verdicts."""
    from attentive.bench import _blas_kernel

    seeds = tuple(args.seeds) if args.seeds else SEEDS
    problems = args.problems or [*TARGET_PROBLEMS, *FEW_FEATURES]
    blas = _blas_kernel()
    print(f"δ = 1 %, α = 5 %, splits {list(seeds)}; BLAS kernel (threadpoolctl): {blas}")
    targets, few = [], []
    for name in problems:
        if name in FEW_FEATURES:
            r = measure_few_features(name, seeds, quick=args.quick)
            few.append(r)
            print(f"\n{name} ({r['n_features']} features)")
            for s in r["splits"]:
                _print_split(s, "auto")
            status = "PASS" if r["passed"] else "FAIL"
            print(f"  {status} few features: auto kept no sketch on any of {len(seeds)} splits")
            continue
        r = measure_target(name, seeds, counted=not args.no_counted, quick=args.quick)
        targets.append(r)
        print(f"\n{name} ({r['n_features']} features)")
        for s in r["splits"]:
            _print_split(s, "auto")
        for s in r.get("counted", []):
            _print_split(s, "counted")
        _print_verdict(r, "target (the classifier as shipped)")
        if "counted_verdict" in r:
            _print_verdict(r["counted_verdict"], "if chosen by the multiply-add count")
    if targets:
        print(f"\nissue 35's rule target (δ = 1 %, α = 5 %, mean over {len(seeds)} splits)")
        print(f"  {'problem':18s} {'SVs':>5s} {'floor':>6s} {'work':>6s} {'×floor':>7s} {'≤':>5s}")
        for r in targets:
            status = "PASS" if r["passed"] else "FAIL"
            counted = r.get("counted_verdict")
            extra = (
                f"   counted: {counted['mean_work']:.3f} ({counted['work_x_oracle']:.2f}×) "
                f"{'PASS' if counted['passed'] else 'FAIL'}"
                if counted
                else ""
            )
            print(
                f"  {r['problem']:18s} {r['mean_n_terms']:5.0f} {r['mean_oracle']:6.3f} "
                f"{r['mean_work']:6.3f} {r['work_x_oracle']:7.2f} {r['limit']:5.2f} {status}{extra}"
            )
    return {"seeds": list(seeds), "blas": blas, "targets": targets, "few_features": few}
