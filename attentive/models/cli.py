"""``python -m attentive train DATASET [--kind K] [--C C] [--gamma G] [--out FILE]
[--classifier FILE [--delta D]]``.

Prints an elapsed-time line while training, then what was trained and where it is cached.
``--classifier`` also fits the calibrated classifier ``python -m attentive score`` takes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from attentive.data.registry import REGISTRY, load_dataset
from attentive.errors import AttentiveError, InvalidParameterError
from attentive.models.persistence import (
    check_model_path,
    load_model,
    model_fingerprint,
    save_model,
)
from attentive.models.training import (
    GAMMA_KINDS,
    KINDS,
    default_model_params,
    make_model,
    model_cache_path,
    train_model,
)
from attentive.validation import check_delta

__all__ = ["configure_parser", "elapsed_line", "run"]

#: --classifier's guarantee by default (with α = 0.05).
DEFAULT_DELTA = 0.01


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``train`` command's arguments to ``parser``."""
    parser.add_argument(
        "dataset",
        help=f"dataset name: {', '.join(REGISTRY)}, or mnist-t10k-<a>v<b> for any two digits, "
        "mnist-t10k-<a>vrest for a digit against the others",
    )
    parser.add_argument(
        "--kind", choices=KINDS, default=None, help="model (default: the dataset's preset)"
    )
    parser.add_argument("--C", type=float, default=None, help="regularisation C (default: preset)")
    parser.add_argument(
        "--gamma", default=None, help="RBF/poly/sigmoid gamma: a number, 'scale' or 'auto'"
    )
    parser.add_argument("--no-cache", action="store_true", help="retrain even if cached")
    parser.add_argument("--out", default=None, help="also save the model to this .skops file")
    parser.add_argument(
        "--classifier",
        default=None,
        help="also fit and save, to this .skops file, the classifier `score` takes: "
        "AttentiveClassifier(model, boundary='calibrated', side='both'), its model trained on "
        "the training rows less those held out to calibrate",
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        help="with --classifier: the disagreement with the full model to guarantee "
        f"(default {DEFAULT_DELTA:g}, α = 0.05)",
    )
    parser.add_argument(
        "--data-home",
        default=None,
        help="data and model cache (default: $ATTENTIVE_DATA or ./data)",
    )


def run(args: argparse.Namespace) -> int:
    """Train (or load from the cache) the model and report it; returns the exit status."""
    params = default_model_params(args.dataset)  # (the name decides: checked before loading)
    if args.kind is not None and args.kind != params["kind"]:
        params = {"kind": args.kind, "C": params["C"]}
    if args.C is not None:
        params["C"] = args.C
    if args.gamma is not None:
        if params["kind"] not in GAMMA_KINDS:
            raise InvalidParameterError(
                f"--gamma applies to the {', '.join(GAMMA_KINDS)} kernels, not to "
                f"--kind {params['kind']} (leave it out)"
            )
        params["gamma"] = _number_or_text(args.gamma)
    make_model(**params)  # (C and gamma checked before the data loads)
    for path in (args.out, args.classifier):
        if path:
            check_model_path(path)  # (a directory, say, refused before the training)
    if args.out and args.classifier and Path(args.out).resolve() == Path(args.classifier).resolve():
        raise InvalidParameterError(
            f"--out and --classifier name the same file, {args.out}: the classifier would "
            "overwrite the model; name two files"
        )
    if args.delta is not None and not args.classifier:
        raise InvalidParameterError(
            "--delta is the guarantee of the classifier --classifier FILE saves; without "
            "--classifier it does nothing (add --classifier FILE, or leave --delta out)"
        )
    if args.classifier:
        args.delta = DEFAULT_DELTA if args.delta is None else args.delta
        check_delta(args.delta)
    dataset = load_dataset(args.dataset, data_home=args.data_home, progress=True)
    cache_dir = None if args.data_home is None else f"{args.data_home}/models"
    path = model_cache_path(dataset, **params, cache_dir=cache_dir)
    label = ", ".join(f"{k}={v}" for k, v in params.items())
    model = None
    if path.is_file() and not args.no_cache:
        with elapsed_line(f"loading {label} on {dataset.name}"):
            with contextlib.suppress(AttentiveError):  # (damaged: trained again, told below)
                model = load_model(path, n_features=dataset.n_features)
    if model is None:
        # (A damaged cache had been announced as "loading" while it was trained again.)
        with elapsed_line(f"training {label} on {dataset.name}"):
            model = train_model(dataset, **params, cache=not args.no_cache, cache_dir=cache_dir)
    n_terms = getattr(model, "support_", None)
    terms = (
        f"{len(n_terms)} support vectors"
        if n_terms is not None
        else f"{dataset.n_features} features"
    )
    accuracy = float((model.predict(dataset.X_test) == dataset.y_test).mean())
    print(
        f"{type(model).__name__} ({label}): {terms}, test accuracy {accuracy:.3f}, "
        f"fingerprint {model_fingerprint(model)}"
    )
    if not args.no_cache and path.is_file():  # (a cache that could not be written: warned)
        print(f"cached at {path}")
    if args.out:
        print(f"saved to {save_model(model, args.out)}")
        if not args.classifier:
            # (score takes a classifier with its rule: this file holds the bare model.)
            print(
                "to score files with it (python -m attentive score), wrap it first: "
                "AttentiveClassifier(FrozenEstimator(model)).fit(X_ref, y_ref), saved with "
                "attentive.models.save_model (docs/scale.md); or train with --classifier FILE, "
                "or export one from the dashboard"
            )
    if args.classifier:
        _save_classifier(dataset, params, args.delta, args.classifier)
    return 0


def _save_classifier(dataset, params: dict, delta: float, path) -> None:
    """Fit and save the calibrated classifier ``score`` takes (its model trained on the fit
    part of the training rows, the rest held out to calibrate: a guarantee needs examples the
    model never saw)."""
    import warnings

    from attentive import AttentiveClassifier
    from attentive.models.training import make_model

    clf = AttentiveClassifier(
        make_model(**params), boundary="calibrated", side="both", delta=delta, random_state=0
    )
    with elapsed_line(f"fitting the calibrated classifier (δ = {delta:g})"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(dataset.X_train, dataset.y_train)
    guarantee = clf.calibration_.guarantee
    for w in caught:  # (the fallback's warning is the guarantee's sentence: said once)
        if issubclass(w.category, UserWarning) and str(w.message) != guarantee:
            print(f"note: {w.message}")
    print(guarantee)
    print(
        f"classifier saved to {save_model(clf, path)}; score files with it: python -m attentive "
        f"score --model {path} --input ROWS --output SCORES"
    )


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


@contextmanager
def elapsed_line(
    message: str, stream: TextIO | None = None, interval: float = 0.5
) -> Iterator[None]:
    """Show ``message … 12.3 s`` on one refreshed line while the block runs, then the total time.

    Only a terminal gets the refreshed line; a log or a pipe gets ``message …`` once and the
    total on a line of its own (no carriage returns in a file)."""
    stream = stream or sys.stderr
    start = time.perf_counter()
    live = bool(getattr(stream, "isatty", lambda: False)())
    done = threading.Event()

    def tick() -> None:
        while not done.wait(interval):
            stream.write(f"\r{message} … {time.perf_counter() - start:.1f} s")
            stream.flush()

    thread = threading.Thread(target=tick, daemon=True) if live else None
    if thread is None:
        stream.write(f"{message} …\n")
        stream.flush()
    else:
        thread.start()
    try:
        yield
    finally:
        done.set()
        if thread is not None:
            thread.join()
        prefix = "\r" if live else ""
        stream.write(f"{prefix}{message}: done in {time.perf_counter() - start:.1f} s\n")
        stream.flush()
