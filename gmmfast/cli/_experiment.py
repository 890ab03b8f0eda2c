"""Options and checks shared by the latent-SVM experiment commands (lssvm-compare,
scene-compare): every value is validated, and the output files made writable, before any work
starts."""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from ._args import check_distinct_files, check_figure_file, check_output_file, fail


#: The methods both commands run unless --methods says otherwise.
DEFAULT_METHODS = "ccp,gmm-random,gmm-random-subset,gmm-biased"


def add_experiment_parser(sub, command: str, methods: Iterable[str],
                          help: str) -> argparse.ArgumentParser:
    """The parser of an experiment command, with its option --methods: comma-separated keys
    among ``methods`` (checked by :func:`check_args`)."""
    p = sub.add_parser(command, help=help)
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help=f"comma-separated, from {','.join(methods)}")
    return p


def add_run_options(p: argparse.ArgumentParser, *, figure: str, oracle: str,
                    quick: str) -> None:
    """--jobs, --out, --figure, --no-oracle and --quick; the help of the last three says what
    the command draws, trains and shrinks."""
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--out", default=None, help="write the tables to this markdown file")
    p.add_argument("--figure", default=None, help=figure)
    p.add_argument("--no-oracle", dest="oracle", action="store_false", help=oracle)
    p.add_argument("--quick", action="store_true", help=quick)


def resolve_quick(args: argparse.Namespace, defaults: dict) -> None:
    """Every option of ``defaults`` (the argparse dest -> (default, default with --quick))
    that was not given (None) set to its default, or to its --quick default with --quick: an
    option given on the command line is kept, with --quick or without."""
    for name, (normal, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else normal)


class DeprecatedAlias(argparse.Action):
    """An option kept under its old name for one release: stores the value, warns on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        new = "--" + self.dest.replace("_", "-")
        print(f"warning: {option_string} is deprecated and will be removed in gmmfast 0.3; "
              f"use {new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def check_at_least(args: argparse.Namespace, command: str,
                   minimums: Iterable[Tuple[str, int]]) -> None:
    """Every option ``--name`` that was given (not None) at least its minimum, checked in the
    order of ``minimums`` (pairs of the argparse dest and the minimum); :func:`fail` otherwise."""
    for name, low in minimums:
        value = getattr(args, name)
        if value is not None and value < low:
            fail(command, f"--{name.replace('_', '-')} must be at least {low}, got {value}")


def _check_choices(command: str, option: str, what: str, given: Sequence[object],
                   known: Iterable[str]) -> None:
    """At least one value given, each among ``known``; :func:`fail` otherwise."""
    known = list(known)
    if not given:
        fail(command, f"{option}: give at least one {what}")
    for v in given:
        if v not in known:
            fail(command, f"{option}: unknown {what} {v!r}; choose from {', '.join(known)}")


def check_args(args: argparse.Namespace, command: str, methods: Sequence[str],
               known_methods: Iterable[str], inits: Sequence[object] = (),
               known_inits: Iterable[str] = ()) -> None:
    """Methods and inits known, numbers in range; :func:`fail` otherwise (the output files
    are checked by :func:`check_outputs`)."""
    _check_choices(command, "--methods", "method", methods, known_methods)
    known_inits = list(known_inits)
    if known_inits:
        _check_choices(command, "--inits", "init", inits, known_inits)
    if not 0 < args.eta <= 1:
        fail(command, f"--eta must be in (0, 1], got {args.eta}")
    if not args.tol >= 0:
        fail(command, f"--tol must be >= 0, got {args.tol}")
    if not 0 < args.solver_tol < float("inf"):
        fail(command, f"--solver-tol must be a finite number > 0, got {args.solver_tol}")
    if args.lam is not None and not 0 < args.lam < float("inf"):
        fail(command, f"--lam must be a finite number > 0, got {args.lam}")
    check_at_least(args, command, (("max_iter", 1), ("jobs", 1)))


def check_outputs(command: str, out: Optional[str], figures: Sequence[str]) -> List[str]:
    """--out a writable file, every figure (the files of --figure) a writable file in a format
    matplotlib writes, and no two of them the same file; :func:`fail` otherwise. Returns the
    figures' files as savefig writes them (a suffix added where none was given)."""
    if out:
        check_output_file(command, "--out", out)
    figures = [check_figure_file(command, "--figure", f) for f in figures]
    check_distinct_files(command, [("--out", out)] + [("--figure", f) for f in figures])
    return figures


def check_lam_floor(command: str, lams: Sequence[Tuple[str, float]],
                    floor: Callable[[float], float],
                    solver_tols: Sequence[Tuple[str, float]]) -> None:
    """Every lambda of ``lams`` (pairs of the option that set it and its value) at least the
    learner's floor on the data, ``floor(solver_tol)``, at each solver tolerance of
    ``solver_tols`` (pairs of what sets it and its value); :func:`fail` otherwise."""
    for what, tol in solver_tols:
        low = floor(tol)
        for option, lam in lams:
            if not lam >= low:
                fail(command, f"{option} must be at least {low:.3g} on these data at {what} "
                              f"{tol:g} (below it the solvers' rounding error exceeds their "
                              f"tolerance), got {lam:g}")
