"""The ``gmmfast`` command (also ``python -m gmmfast``).

Each subcommand is a module of this package (``compare``, ``cluster``,
``lssvm_compare``, ``scene_compare``) exposing ``add_parser(subparsers)``,
which registers the subcommand and sets ``func(args) -> int``. With no
subcommand, ``gmmfast`` prints its help and exits with code 2 (argparse's code for a
command line that names no job), starting nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from .._version import __version__
from . import cluster, compare, lssvm_compare, scene_compare

#: The subcommands by name, in the order ``--help`` lists them.
SUBCOMMANDS = {"compare": compare, "cluster": cluster, "lssvm-compare": lssvm_compare,
               "scene-compare": scene_compare}
#: Exit code of a bare ``gmmfast`` (no subcommand): it prints the help and runs no job.
#: 2 is argparse's code for an incomplete command line, so a script that forgot the
#: subcommand fails instead of silently succeeding.
NO_COMMAND_EXIT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmmfast",
        description="Generalized Majorization-Minimization: clustering and latent SVMs.",
        epilog="Start with `gmmfast compare --trials 5` (k-means against G-MM on GMM-200, "
               "about a minute); `gmmfast COMMAND --help` for a command's options.")
    parser.add_argument("--version", action="version", version=f"gmmfast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``gmmfast ARGV``; returns the exit code.

    With no subcommand the help is printed on stdout and the code is
    :data:`NO_COMMAND_EXIT` (2). Bad arguments exit with code 2 and one line
    ``gmmfast <cmd>: error: ...`` (argparse also prints the usage); Ctrl-C exits with 130 and one line; a
    reader that closes the pipe early (``gmmfast ... | head``) ends the output
    quietly, as Unix tools do.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return NO_COMMAND_EXIT
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
