"""``python -m attentive datasets [list | info NAME | download NAME ...]``."""

from __future__ import annotations

import argparse
import shlex

from attentive.data.dataset import data_home
from attentive.data.registry import REGISTRY, list_datasets, load_dataset
from attentive.errors import InvalidParameterError

__all__ = ["configure_parser", "run"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``datasets`` command's arguments to ``parser``."""
    parser.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "info", "download"),
        help="list the datasets (default), describe some (from what is here: info downloads "
        "nothing), or download them into the cache",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"dataset names: {', '.join(REGISTRY)}, or mnist-t10k-<a>v<b> for any two digits, "
        "mnist-t10k-<a>vrest for a digit against the others (info: default every dataset; "
        "download: every one not shipped)",
    )
    parser.add_argument(
        "--data-home", default=None, help="download cache (default: $ATTENTIVE_DATA or ./data)"
    )
    parser.add_argument(
        "--mirror", default=None, help="download from this base URL instead of the usual mirrors"
    )


def run(args: argparse.Namespace) -> int:
    """List, describe or download datasets; returns the exit status."""
    infos = {info.name: info for info in list_datasets(args.data_home)}
    if args.action == "list":
        if args.names:
            raise InvalidParameterError(
                "datasets list takes no names (it lists every dataset); describe some with "
                f"python -m attentive datasets info {' '.join(args.names)}"
            )
        for info in infos.values():
            state = "offline" if info.offline else ("cached" if info.cached else "download")
            print(f"{info.name:<18} {state:<9} {info.description}")
        return 0
    names = args.names or [i.name for i in infos.values() if args.action == "info" or not i.offline]
    for name in names:
        info = infos.get(name)
        if args.action == "info" and info is not None and not info.cached:
            # Described, not downloaded: info reads what is here.
            # (the download command as this one was given: its cache and its mirror)
            options = "".join(
                f" {flag} {shlex.quote(str(value))}"
                for flag, value in (("--data-home", args.data_home), ("--mirror", args.mirror))
                if value is not None
            )
            print(
                f"{name}: not downloaded yet ({len(info.files)} file(s) into "
                f"{data_home(args.data_home)}; python -m attentive datasets download {name}"
                f"{options})"
            )
            print(f"  {info.description}")
            continue
        dataset = load_dataset(
            name,
            data_home=args.data_home,
            download=args.action == "download",
            base_url=args.mirror,
            progress=True,
        )
        print(dataset.summary())
        if args.action == "info":
            print(f"  {dataset.description}")
    return 0
