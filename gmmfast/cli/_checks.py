"""Argument checks shared by the latent-SVM experiment commands (lssvm-compare, scene-compare):
every value is validated, and the output files made writable, before any work starts."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Iterable, Sequence


class DeprecatedAlias(argparse.Action):
    """An option kept under its old name for one release: stores the value, warns on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        new = "--" + self.dest.replace("_", "-")
        print(f"warning: {option_string} is deprecated and will be removed in gmmfast 0.3; "
              f"use {new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _fail(command: str, message: str) -> None:
    raise SystemExit(f"gmmfast {command}: error: {message}")


def _check_choices(command: str, option: str, what: str, given: Sequence[object],
                   known: Iterable[str]) -> None:
    """At least one value given, each among ``known``; SystemExit otherwise."""
    known = list(known)
    if not given:
        _fail(command, f"{option}: give at least one {what}")
    for v in given:
        if v not in known:
            _fail(command, f"{option}: unknown {what} {v!r}; choose from {', '.join(known)}")


def check_args(args: argparse.Namespace, command: str, methods: Sequence[str],
               known_methods: Iterable[str], inits: Sequence[object] = (),
               known_inits: Iterable[str] = ()) -> None:
    """Methods and inits known, numbers in range, output paths writable; SystemExit otherwise."""
    _check_choices(command, "--methods", "method", methods, known_methods)
    known_inits = list(known_inits)
    if known_inits:
        _check_choices(command, "--inits", "init", inits, known_inits)
    if not 0 < args.eta <= 1:
        _fail(command, f"--eta must be in (0, 1], got {args.eta}")
    if not args.tol >= 0:
        _fail(command, f"--tol must be >= 0, got {args.tol}")
    if not 0 < args.solver_tol < float("inf"):
        _fail(command, f"--solver-tol must be a finite number > 0, got {args.solver_tol}")
    if args.lam is not None and not 0 < args.lam < float("inf"):
        _fail(command, f"--lam must be a finite number > 0, got {args.lam}")
    if args.max_iter < 1:
        _fail(command, f"--max-iter must be at least 1, got {args.max_iter}")
    if args.jobs < 1:
        _fail(command, f"--jobs must be at least 1, got {args.jobs}")
    for name in ("out", "figure"):
        path = getattr(args, name, None)
        if path:
            folder = os.path.dirname(os.path.abspath(path.replace("{init}", "x")))
            if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
                _fail(command, f"--{name}: cannot write to {path!r} (no such writable folder "
                               f"{folder!r})")
