"""``python -m attentive reproduce --dataset NAME [--out DIR] [--quick]``.

Writes, into ``DIR/NAME/``:

* for a dataset: ``tradeoff.csv`` (attentive over τ, budgeted over B and every rule family over its
  scales z: mean evaluated fraction, stop-error, disagreement), ``pr.csv`` (precision–recall of the
  full, attentive and budgeted scores), ``summary.json`` and ``figure4.png`` (precision–recall on
  top, stop-error against computation below);
* for ``simulation``: ``decision_error.csv``, ``stopping_time.csv``, ``summary.json`` and
  ``figure3.png`` (required against actual decision error; mean stopping time against n).

A tqdm bar shows the experiment's steps on a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from attentive.errors import InvalidParameterError
from attentive.experiments.compute import (
    DATASET_STEPS,
    SIMULATION,
    SIMULATION_STEPS,
    DatasetResult,
    SimulationResult,
    reproduce_dataset,
    reproduce_simulation,
)
from attentive.validation import file_in_the_way

__all__ = ["configure_parser", "run"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``reproduce`` command's arguments to ``parser``."""
    parser.add_argument(
        "--dataset",
        required=True,
        metavar="NAME",
        help="a dataset name (see `python -m attentive datasets`) or 'simulation' for Figure 3",
    )
    parser.add_argument("--out", default="results", help="output folder; files go to OUT/NAME/")
    parser.add_argument("--quick", action="store_true", help="fewer τ, budgets and paths (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random term order")
    parser.add_argument(
        "--pr-stop-error",
        type=float,
        default=0.01,
        help="PR panel: cheapest τ whose attentive stop-error is at most this (default 0.01)",
    )
    parser.add_argument(
        "--data-home",
        default=None,
        help="dataset and model cache (default $ATTENTIVE_DATA or ./data)",
    )
    parser.add_argument(
        "--no-download", action="store_true", help="fail instead of downloading a missing dataset"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="retrain instead of using the model cache"
    )


def report_dataset(result: DatasetResult) -> list[str]:
    """The headline numbers of a dataset's experiment, as printed lines."""
    s = result.summary
    c, p, terms = s["comparison"], s["operating_point"], s["term_name"]
    lines = [
        f"{s['dataset']}: {s['n_terms']} {terms}, test accuracy {s['accuracy']:.4f} "
        f"({s['n_test']} test examples, {s['n_test_positive']} positive)",
        (
            f"  at the same computation, attentive's stop-error ≤ budgeted's at every τ tried "
            f"where attentive's is below {c['beats_below']:.1%}"
            if c["ever_worse"]
            else f"  at the same computation, attentive's stop-error ≤ budgeted's at every τ tried "
            f"(its largest stop-error: {c['beats_below']:.1%})"
        ),
    ]
    if c["n_worse"]:
        lines.append(
            f"  below {c['limit']:.0%}: attentive worse at {c['n_worse']}/{c['n_compared']} "
            f"points, by up to {100 * c['max_excess']:.1f} percentage points of stop-error (at "
            f"{c['max_excess_fraction']:.0%} evaluated)"
        )
    if c["n_compared"]:
        lines.append(
            f"  below {c['limit']:.0%}: mean attentive − budgeted stop-error "
            f"{100 * c['mean_difference']:+.1f} percentage points"
        )
    for level, sv in s["savings"].items():
        families = ", ".join(f"{k} {v:.1%}" for k, v in sv["family_fractions"].items())
        lines.append(
            f"  stop-error ≤ {float(level):.1%}: attentive needs {sv['attentive_fraction']:.1%} of "
            f"the {terms}, budgeted {sv['budgeted_fraction']:.1%}; families: {families}"
        )
    lines.append(
        f"  PR point: τ = {p['tau']:.4g}, {p['mean_evaluated_fraction']:.1%} evaluated, stop-error "
        f"{p['stop_error']:.2%}; budgeted B = {p['budget']} stop-error "
        f"{p['budget_stop_error']:.2%}; AP "
        + ", ".join(f"{k} {v:.4f}" for k, v in s["average_precision"].items())
    )
    return lines


def report_simulation(result: SimulationResult) -> list[str]:
    """The headline numbers of the simulation, as printed lines."""
    s = result.summary
    lines = [
        f"simulation n = {n}: actual / required between "
        f"{(rows.actual / rows.required).min():.2f} and {(rows.actual / rows.required).max():.2f}; "
        f"conservative: {s['conservative'][str(n)]}"
        for n, rows in result.decision_error.groupby("n")
    ]
    lines.append(
        f"  mean stopping time slope {s['slope']:.3f} (E[T]), {s['slope_truncated']:.3f} "
        f"(E[min(T, n)]) for n = {s['ns'][0]}..{s['ns'][-1]}"
    )
    return lines


def _check_out(folder: Path) -> list[Path]:
    """The results' folder (``--out``/NAME): not an existing file, nor one under a file, and one
    this process can write in (made if missing, and a file made and removed there), before the
    computation. The folders made here, the deepest first."""
    blocking = file_in_the_way(folder)
    if blocking is not None:
        what = "is a file" if blocking == folder else f"is under {blocking}, a file"
        raise InvalidParameterError(
            f"the results' folder {folder} {what}; --out names the folder the results go to "
            "(each dataset's in a folder of its name, made if missing), such as results"
        )
    made = [f for f in (folder, *folder.parents) if not f.is_dir()]  # (deepest first)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        _remove_empty(made)
        raise InvalidParameterError(
            f"cannot write the results to {folder} ({exc.strerror or exc}); pass --out a folder "
            "you can write in"
        ) from exc
    return made


def run(args: argparse.Namespace) -> int:
    """Reproduce one dataset's Figure 4 or the Figure 3 simulation; returns the exit status."""
    name = args.dataset
    if args.seed < 0:
        raise InvalidParameterError(f"--seed must be a whole number ≥ 0, got {args.seed}")
    out = Path(args.out) / name
    made = _check_out(out)  # (before the computation, not after: OUT/NAME and its parents)
    try:
        return _reproduce(args, name, out)
    except KeyboardInterrupt:
        _remove_empty(made)
        print(
            f"interrupted: {out} was not written (earlier results there are kept)", file=sys.stderr
        )
        return 130
    except BaseException:
        _remove_empty(made)  # (folders made for results that did not come)
        raise


def _written(write, result, out: Path) -> dict:
    """``write(result, out)``; a file system's refusal (a full disk, say) as an error of the
    command, not a traceback (nothing of the run written: :mod:`attentive.experiments.output`)."""
    try:
        return write(result, out)
    except OSError as exc:
        raise InvalidParameterError(
            f"cannot write the results to {out} ({exc.strerror or exc}); earlier results there "
            "are kept"
        ) from exc


def _remove_empty(folders: list[Path]) -> None:
    """Remove those of ``folders`` (the deepest first) that exist and are empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def _reproduce(args: argparse.Namespace, name: str, out: Path) -> int:
    from tqdm.auto import tqdm

    from attentive.experiments.output import write_dataset_result, write_simulation_result

    steps = SIMULATION_STEPS if name == SIMULATION else DATASET_STEPS
    # disable=None: the bar shows on a terminal only
    with tqdm(total=len(steps) + 1, desc=name, unit="step", disable=None, leave=False) as bar:

        def progress(step: str) -> None:
            bar.set_postfix_str(step)
            bar.update()

        if name == SIMULATION:
            result = reproduce_simulation(quick=args.quick, seed=args.seed, progress=progress)
            paths = _written(write_simulation_result, result, out)
            lines = report_simulation(result)
        else:
            result = reproduce_dataset(
                name,
                quick=args.quick,
                seed=args.seed,
                pr_stop_error=args.pr_stop_error,
                data_home=args.data_home,
                download=not args.no_download,
                cache=not args.no_cache,
                progress=progress,
            )
            paths = _written(write_dataset_result, result, out)
            lines = report_dataset(result)
        progress("files")
    print("\n".join(lines))
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0
