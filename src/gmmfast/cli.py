"""The ``gmmfast`` command (also ``python -m gmmfast``).

Each subcommand lives in ``gmmfast/_cli/<name>.py`` and exposes
``add_parser(subparsers)``, which registers the subcommand and sets
``func(args) -> int``. With no subcommand, the main job runs on its embedded
default.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

#: Subcommand modules under gmmfast/_cli, in the order ``--help`` lists them.
SUBCOMMANDS = ["compare", "cluster", "lssvm-compare", "scene-compare"]
#: What ``gmmfast`` with no arguments runs.
DEFAULT = ["compare"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmmfast",
        description="Generalized Majorization-Minimization: clustering and latent SVMs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"gmmfast._cli.{name.replace('-', '_')}").add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv or DEFAULT)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
