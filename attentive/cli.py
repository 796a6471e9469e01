"""Command line: ``python -m attentive COMMAND ...``.

Each command lives in its own module, which exposes ``configure_parser(parser)`` and
``run(args) -> int``; this file only wires them together, importing a module when its command runs
(so ``--help`` stays fast and the core never imports Panel).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from pathlib import Path

from attentive.errors import AttentiveError

# command name -> (module implementing it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "datasets": ("attentive.data.cli", "list, describe and download the datasets"),
    "train": ("attentive.models.cli", "train (or load from cache) a model on a dataset"),
    "reproduce": ("attentive.experiments.cli", "regenerate the paper's figures and tables"),
    "bench": ("attentive.bench", "time sklearn vs full vs attentive evaluation"),
    "serve": ("attentive.serve", "serve the dashboard (panel serve app.py)"),
    "score": ("attentive.score_cli", "score a large LIBSVM/CSV/Parquet file on Dask to Parquet"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attentive",
        description="Attentive prediction: early-stopped evaluation of linear predictors.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise
            p.set_defaults(_unavailable=module_name)
            continue
        module.configure_parser(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "_unavailable", None):
        print(f"command {args.command!r} is not available in this build", file=sys.stderr)
        return 2
    shown_as = warnings.formatwarning
    warnings.formatwarning = _warning_lines(shown_as)
    try:
        return int(args._run(args) or 0)
    except AttentiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        warnings.formatwarning = shown_as


def _warning_lines(other):
    """How warnings are worded while a command runs: attentive's own (raised from this package)
    as the commands' lines, ``warning: …`` (not Python's ``file:line: Category: …`` and the
    source line that raised it); others (numpy's, say) by ``other``, as before. Only the
    wording: where warnings go (stderr, or a caller's ``catch_warnings(record=True)``) is
    unchanged."""
    package = Path(__file__).resolve().parent

    def line(message, category, filename, lineno, line=None) -> str:
        try:
            ours = Path(filename).resolve().is_relative_to(package)
        except (OSError, ValueError):  # (a frozen module's name, say)
            ours = False
        if ours:
            return f"warning: {message}\n"
        return other(message, category, filename, lineno, line)

    return line


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
