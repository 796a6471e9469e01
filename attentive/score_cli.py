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
        help="LIBSVM/svmlight, CSV or Parquet file (or Parquet directory); text may be gzip, "
        "bz2 or xz compressed",
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
        help="an existing Dask scheduler (tcp://host:port), trusted as the code you run: Dask "
        "runs what it sends; default: a local cluster on 127.0.0.1 (any local user can reach it "
        "during the run: use a machine you do not share with untrusted users)",
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
    base = parser.add_mutually_exclusive_group()
    base.add_argument(
        "--zero-based",
        dest="zero_based",
        action="store_const",
        const=True,
        default=None,
        help="LIBSVM feature indices start at 0 (default: as the file's '# Column indices are "
        "...' header line says, else detected; a file that reads either way is refused until "
        "you say which)",
    )
    base.add_argument(
        "--one-based",
        dest="zero_based",
        action="store_const",
        const=False,
        help="LIBSVM feature indices start at 1",
    )
    header = parser.add_mutually_exclusive_group()
    header.add_argument(
        "--header",
        dest="header",
        action="store_const",
        const=True,
        default=None,
        help="the CSV file's first line names its columns (default: detected)",
    )
    header.add_argument(
        "--no-header",
        dest="header",
        action="store_const",
        const=False,
        help="the CSV file's first line is a row of data",
    )
    parser.add_argument(
        "--sep",
        default=None,
        metavar="CHAR",
        help="the CSV file's field separator, one character such as ';' or '|', or 'tab' "
        "(default: a tab for .tsv files, else a comma)",
    )
    parser.add_argument(
        "--exclude",
        default="",
        metavar="COLUMNS",
        help="comma-separated CSV/Parquet columns that are not features (e.g. a label)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier run's output (only that, or an empty directory)",
    )
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
            f"the score command needs {exc.name}: make scale in the repository (or pip install "
            "'attentive[scale]')"
        ) from None
    if args.chunk_rows < 1:
        raise InvalidParameterError(f"--chunk-rows must be ≥ 1, got {args.chunk_rows}")
    if args.workers is not None and args.workers < 1:
        raise InvalidParameterError(
            f"--workers must be ≥ 1, got {args.workers} (leave it out for one worker per core)"
        )
    if args.workers is not None and args.scheduler:
        raise InvalidParameterError(
            "--workers sizes the local cluster; with --scheduler the scheduler's workers run"
        )
    try:
        summary = score_file(
            args.model,
            args.input,
            args.output,
            scheduler=args.scheduler,
            n_workers=args.workers,
            chunk_rows=args.chunk_rows,
            format=args.format,
            zero_based=args.zero_based,
            header=args.header,
            exclude=tuple(c.strip() for c in args.exclude.split(",") if c.strip()),
            sep=args.sep,
            progress=False if args.no_progress else None,
            overwrite=args.overwrite,
        )
    except KeyboardInterrupt:
        print(f"interrupted: {args.output} was not written", file=sys.stderr)
        return 130
    print(summary.text(), file=sys.stdout)
    return 0
