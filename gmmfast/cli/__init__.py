"""The ``gmmfast`` command (also ``python -m gmmfast``).

Each subcommand is a module of this package (``compare``, ``cluster``,
``lssvm_compare``, ``scene_compare``) exposing ``add_parser(subparsers)``,
which registers the subcommand and sets ``func(args) -> int``. With no
subcommand, ``gmmfast`` prints its help and exits with code 2 (argparse's code for a
command line that names no job), starting nothing.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType
from typing import Dict, List, Optional

from .._version import __version__

#: The subcommands' modules by command name, in the order ``--help`` lists them. They are
#: imported by :func:`main` (most of the start-up time: numpy, the experiments), where
#: Ctrl-C is caught, not when this package is imported; :data:`SUBCOMMANDS` maps the
#: names to the modules.
_MODULES = {"compare": "compare", "cluster": "cluster", "lssvm-compare": "lssvm_compare",
            "scene-compare": "scene_compare"}
#: Exit code of a bare ``gmmfast`` (no subcommand): it prints the help and runs no job.
#: 2 is argparse's code for an incomplete command line, so a script that forgot the
#: subcommand fails instead of silently succeeding.
NO_COMMAND_EXIT = 2


def _subcommands() -> Dict[str, ModuleType]:
    return {name: importlib.import_module(f"{__name__}.{module}")
            for name, module in _MODULES.items()}


def __getattr__(name: str):
    if name == "SUBCOMMANDS":       # the subcommands by name (imported on first use)
        return _subcommands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmmfast",
        description="Generalized Majorization-Minimization: clustering and latent SVMs.",
        epilog="Start with `gmmfast compare --trials 5` (k-means against G-MM on GMM-200, "
               "about a minute); `gmmfast COMMAND --help` for a command's options.")
    parser.add_argument("--version", action="version", version=f"gmmfast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _subcommands().values():
        module.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``gmmfast ARGV``; returns the exit code.

    With no subcommand the help is printed on stdout and the code is
    :data:`NO_COMMAND_EXIT` (2). Bad arguments exit with code 2 and one line
    ``gmmfast <cmd>: error: ...`` (argparse also prints the usage); Ctrl-C exits with 130
    and one line, also while the command starts (its imports, reading the data); a reader
    that closes the pipe early (``gmmfast ... | head``) ends the output quietly, as Unix
    tools do.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    try:            # start-up (the imports of build_parser) included: Ctrl-C is one line
        parser = build_parser()
        args = parser.parse_args(argv)
        command = args.command
        if command is None:
            parser.print_help()
            return NO_COMMAND_EXIT
        code = int(args.func(args) or 0)
        sys.stdout.flush()      # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        return interrupted(command)
    return code


def interrupted(command: Optional[str] = None) -> int:
    """Report Ctrl-C as one line ``gmmfast [COMMAND]: interrupted``; returns the exit code,
    130 (128 + SIGINT), as a shell reports a command ended by Ctrl-C."""
    print(f"gmmfast{' ' + command if command else ''}: interrupted", file=sys.stderr)
    return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no file descriptor (e.g. captured)
        pass
