"""``python -m attentive datasets [list | info NAME | download NAME ...]``."""

from __future__ import annotations

import argparse

from attentive.data.registry import REGISTRY, list_datasets, load_dataset

__all__ = ["configure_parser", "run"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``datasets`` command's arguments to ``parser``."""
    parser.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "info", "download"),
        help="list the datasets (default), describe some, or download them into the cache",
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"dataset names: {', '.join(REGISTRY)}"
    )
    parser.add_argument(
        "--data-home", default=None, help="download cache (default: $ATTENTIVE_DATA or ./data)"
    )
    parser.add_argument(
        "--mirror", default=None, help="download from this base URL instead of the usual mirrors"
    )


def run(args: argparse.Namespace) -> int:
    """List, describe or download datasets; returns the exit status."""
    if args.action == "list":
        for info in list_datasets(args.data_home):
            state = "offline" if info.offline else ("cached" if info.cached else "download")
            print(f"{info.name:<18} {state:<9} {info.description}")
        return 0
    names = args.names or [
        i.name for i in list_datasets(args.data_home) if args.action == "info" or not i.offline
    ]
    for name in names:
        dataset = load_dataset(
            name,
            data_home=args.data_home,
            download=True,
            base_url=args.mirror,
            progress=True,
        )
        print(dataset.summary())
        if args.action == "info":
            print(f"  {dataset.description}")
    return 0
