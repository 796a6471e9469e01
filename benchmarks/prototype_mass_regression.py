"""Prototype, not a library rule: the regression family with a second running sum.

Every family of the library stops on a threshold of the running sum ``S_t`` alone. This script
measures what a second statistic that the walk could keep at the cost of one more running sum
would buy: the running **mass** ``A_t = Σ_{k≤t} |w_k| h_k(x)`` (the uncentred sum of the term
magnitudes; for an RBF SVM, how much kernel mass near ``x`` the walk has met). Per position, least
squares on the reference walks (walked leave-one-out, as ``boundary="calibrated"`` walks them)

    S_n ≈ a_t + b_t S_t + c_t A_t,   residual spread σ_t,

and the rule stops lower when the estimate is below θ_S by more than ``z σ_t`` (upper: above), the
regression family with one more regressor. ``c_t = 0`` is the library's regression family, which
the script also runs through its own code as a check (identical numbers). Calibration is the
library's (Clopper–Pearson fixed-sequence scan over the same grid, δ = 1 %, α = 5 %) on the same
held-out part as ``bench rules``; fractions are measured on the test part, against the same oracle.

``--every K`` also measures the rule tested only at every K-th position (what an evaluator that
keeps ``A`` per block of K positions, not per position, would run).

Run: ``PYTHONPATH=. python benchmarks/prototype_mass_regression.py [--problems ...] [--seeds ...]``.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np

from attentive.bench_rules import ALPHA, DELTA, TARGET, calibration_split, fitted_classifier
from attentive.calibration import calibrate_scale
from attentive.data import load_dataset
from attentive.families import make_family
from attentive.grid import GridOutcomes, default_grid, grid_outcomes, oracle_stop_positions

PROBLEMS = ("mnist-t10k-2v5", "mnist-t10k-4v9", "mnist-t10k-3v8", "mnist-t10k-7v9")


def mass_sums(clf, X, own=None) -> np.ndarray:
    """``A_t`` for every position: running sums of ``|w_k| h_k(x)`` in walk order (the example's
    own term left out where ``own`` says which it is)."""
    walk = clf.walk_
    Xp = walk.prepare(X)
    values = walk.terms.term_values(Xp, walk.order)
    if own is not None:
        walk.leave_own_out(Xp, values, 0, own)
    values *= np.abs(walk.ordered_weights)
    return np.cumsum(values, axis=1)


def fit_lines(features: np.ndarray, target: np.ndarray):
    """Per position t, least squares ``target ≈ β_0 + Σ_j β_j features[:, t, j]``; returns the
    coefficients (n, 1 + k) and the residual spread (n,)."""
    m, n, k = features.shape
    design = np.concatenate([np.ones((m, n, 1)), features], axis=2)
    gram = np.einsum("mnk,mnl->nkl", design, design) + 1e-12 * np.eye(k + 1)
    beta = np.linalg.solve(gram, np.einsum("mnk,m->nk", design, target)[..., None])[..., 0]
    residual = target[:, None] - np.einsum("mnk,nk->mn", design, beta)
    return beta, np.sqrt(np.mean(residual**2, axis=0))


def outcomes(S, lower_score, upper_score, grid, theta_s) -> GridOutcomes:
    """As :func:`attentive.grid.grid_outcomes`, from crossing scores computed here."""
    m, n = S.shape
    full = S[:, -1] >= theta_s
    stop = []
    for score in (lower_score, upper_score):
        running = np.maximum.accumulate(score, axis=1)
        t = np.empty((m, grid.size), dtype=np.int64)
        for i in range(m):
            t[i] = 1 + np.searchsorted(running[i], grid, side="right")
        stop.append(t)
    n_evaluated = np.minimum(*stop)
    stopped = n_evaluated < n
    positive = np.where(stopped, stop[1] < stop[0], full[:, None])
    return GridOutcomes(grid, positive, n_evaluated, full, n)


def measure(outcomes_cal: GridOutcomes, outcomes_test: GridOutcomes) -> dict:
    report = calibrate_scale(outcomes_cal, delta=DELTA, alpha=ALPHA)
    frac = outcomes_test.evaluated_fractions()
    dis = outcomes_test.disagreement_rates()
    i = report.chosen_index
    ok = dis <= TARGET
    return {
        "calibrated": float(frac[i]) if i is not None else 1.0,
        "calibrated_disagreement": float(dis[i]) if i is not None else 0.0,
        "tuned": float(frac[ok].min()) if ok.any() else 1.0,
    }


def measure_split(name: str, dataset, seed: int, every: int) -> dict:
    X_fit, X_cal, y_fit = calibration_split(dataset, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = fitted_classifier(name, X_fit, y_fit, seed)
    own = clf._own_terms(X_fit)
    walk, theta = clf.walk_, clf.theta_s_
    walks = {
        "reference": (
            walk.partial_scores(X_fit, leave_own_out=True, own=own),
            mass_sums(clf, X_fit, own),
        ),
        "calibration": (walk.partial_scores(X_cal), mass_sums(clf, X_cal)),
        "test": (walk.partial_scores(dataset.X_test), mass_sums(clf, dataset.X_test)),
    }
    n = walks["test"][0].shape[1]
    M = clf.walk_statistics_.pooled.remainder_mean
    oracle = float(oracle_stop_positions(walks["test"][0], theta, M).mean() / n)
    grid = default_grid()
    rows = {}
    for family in ("regression", "heteroscedastic"):  # the library's own families
        fam = make_family(family, clf.walk_statistics_, theta, "both")
        rows[family] = measure(
            grid_outcomes(walks["calibration"][0], fam, grid),
            grid_outcomes(walks["test"][0], fam, grid),
        )
    R, RA = walks["reference"]
    only_s = lambda S, A: S[:, :, None]  # noqa: E731
    with_mass = lambda S, A: np.stack([S, A], axis=2)  # noqa: E731
    variants = {  # label: (regressors, test every k-th position)
        "regression (here)": (only_s, 1),
        "regression on S_t, A_t": (with_mass, 1),
    }
    if every > 1:
        variants[f"regression on S_t, A_t, every {every}"] = (with_mass, every)
    for label, (features, k) in variants.items():
        beta, sd = fit_lines(features(R, RA), R[:, -1])
        sd = np.maximum(sd[: n - 1], 1e-300)

        def scores(S, A, beta=beta, sd=sd, features=features, k=k):
            est = beta[None, : n - 1, 0] + np.einsum(
                "mnk,nk->mn", features(S, A)[:, : n - 1], beta[: n - 1, 1:]
            )
            lower, upper = (theta - est) / sd, (est - theta) / sd
            if k > 1:
                off = (np.arange(1, n) % k) != 0
                lower[:, off] = upper[:, off] = -np.inf
            return lower, upper

        rows[label] = measure(
            outcomes(walks["calibration"][0], *scores(*walks["calibration"]), grid, theta),
            outcomes(walks["test"][0], *scores(*walks["test"]), grid, theta),
        )
    for row in rows.values():
        row["calibrated_x_oracle"] = row["calibrated"] / oracle
        row["tuned_x_oracle"] = row["tuned"] / oracle
    return {"problem": name, "seed": seed, "oracle": oracle, "n_terms": n, "rules": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), metavar="NAME")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4], metavar="S")
    parser.add_argument("--every", type=int, default=8, metavar="K")
    args = parser.parse_args(argv)
    results = []
    for name in args.problems:
        dataset = load_dataset(name)
        per_seed = [measure_split(name, dataset, seed, args.every) for seed in args.seeds]
        results.extend(per_seed)
        print(
            f"\n{name}: × oracle over seeds {args.seeds} "
            f"(calibrated mean / seed {args.seeds[0]} / max; tuned mean)"
        )
        for label in per_seed[0]["rules"]:
            cal = np.array([r["rules"][label]["calibrated_x_oracle"] for r in per_seed])
            tuned = np.array([r["rules"][label]["tuned_x_oracle"] for r in per_seed])
            dis = np.array([r["rules"][label]["calibrated_disagreement"] for r in per_seed])
            print(
                f"  {label:36s} calibrated {cal.mean():5.2f} / {cal[0]:5.2f} / {cal.max():5.2f}"
                f"  (test disagreement ≤ {dis.max():.4f})   tuned {tuned.mean():5.2f}"
            )
    print(json.dumps({"delta": DELTA, "alpha": ALPHA, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
