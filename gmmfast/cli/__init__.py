"""The ``gmmfast`` command (also ``python -m gmmfast``).

Each subcommand is a module of this package (``compare``, ``cluster``,
``lssvm_compare``, ``scene_compare``) exposing ``add_parser(subparsers)``,
which registers the subcommand and sets ``func(args) -> int``. With no
subcommand, the main job runs on its embedded default.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from . import cluster, compare, lssvm_compare, scene_compare

#: The subcommands by name, in the order ``--help`` lists them.
SUBCOMMANDS = {"compare": compare, "cluster": cluster, "lssvm-compare": lssvm_compare,
               "scene-compare": scene_compare}
#: What ``gmmfast`` with no arguments runs: a short compare (5 trials per initialisation:
#: about a minute of CPU; ``gmmfast compare`` runs 20, the paper 50).
DEFAULT = ["compare", "--trials", "5"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmmfast",
        description="Generalized Majorization-Minimization: clustering and latent SVMs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``gmmfast ARGV``; returns the exit code.

    Bad arguments exit with code 2 and one line ``gmmfast <cmd>: error: ...``
    (argparse also prints the usage); Ctrl-C exits with 130 and one line; a
    reader that closes the pipe early (``gmmfast ... | head``) ends the output
    quietly, as Unix tools do.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv or DEFAULT)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()      # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        print(f"gmmfast {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no file descriptor (e.g. captured)
        pass
