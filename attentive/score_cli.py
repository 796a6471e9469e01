"""``python -m attentive score``: evaluate an exported classifier over a large file on Dask.

Dask is an optional extra (``pip install attentive[scale]``); it is imported when the command
runs, so the rest of the command line works without it.
"""

from __future__ import annotations

import argparse
import sys

from attentive.errors import InvalidParameterError


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, help="the exported AttentiveClassifier (.skops file)"
    )
    parser.add_argument(
        "--input",
        required=True,
        help="LIBSVM/svmlight, CSV (with a header line) or Parquet file (or Parquet directory)",
    )
    parser.add_argument(
        "--output",
        required=True,
        help="Parquet directory to create: one part per chunk, rows in input order",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="an existing Dask scheduler (tcp://host:port); default: a local cluster on 127.0.0.1",
    )
    parser.add_argument(
        "--chunk-rows", type=int, default=100_000, metavar="N", help="rows per chunk (100000)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="workers of the local cluster (default: one per core)",
    )
    parser.add_argument(
        "--format",
        choices=("libsvm", "csv", "parquet"),
        default=None,
        help="default: from the name",
    )
    parser.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM feature indices start at 0 (default: at 1)",
    )
    parser.add_argument(
        "--exclude",
        default="",
        metavar="COLUMNS",
        help="comma-separated CSV/Parquet columns that are not features (e.g. a label)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar (shown on a terminal)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from attentive.scale import score_file
    except ModuleNotFoundError as exc:
        if exc.name not in ("dask", "distributed", "pyarrow"):
            raise
        raise InvalidParameterError(
            f"the score command needs {exc.name}: pip install 'attentive[scale]'"
        ) from None
    if args.chunk_rows < 1:
        raise InvalidParameterError(f"--chunk-rows must be ≥ 1, got {args.chunk_rows}")
    summary = score_file(
        args.model,
        args.input,
        args.output,
        scheduler=args.scheduler,
        n_workers=args.workers,
        chunk_rows=args.chunk_rows,
        format=args.format,
        zero_based=args.zero_based,
        exclude=tuple(c for c in args.exclude.split(",") if c),
        progress=False if args.no_progress else None,
        overwrite=args.overwrite,
    )
    print(summary.text(), file=sys.stdout)
    return 0
