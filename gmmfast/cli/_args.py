"""Argument checks shared by the subcommands: argparse types, output paths, one-line errors.

Every error a subcommand reports is one line ``gmmfast <cmd>: error: ...`` on
stderr with exit code 2, as argparse reports a bad argument; outputs are
checked before any work is done.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator, List, NoReturn, Optional, Sequence, Tuple, Union

from .._atomic import describe, is_special


def fail(cmd: str, message: str) -> NoReturn:
    """Report ``message`` as ``gmmfast <cmd>: error: ...`` and exit with code 2."""
    print(f"gmmfast {cmd}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


@contextlib.contextmanager
def writing(cmd: str) -> Iterator[None]:
    """An OSError in the block (a file that cannot be written: the writers of
    :mod:`gmmfast._atomic` leave no partial file) reported as ``cannot write FILE: REASON``
    by :func:`fail` (exit code 2)."""
    try:
        yield
    except OSError as exc:
        fail(cmd, f"cannot write {describe(exc)}")


#: Largest integer an option takes (the kernels count in int64).
INT_MAX = 2**63 - 1


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= INT_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in [{low}, 2**63 - 1], got "
                                         f"{text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _integer(text, 1)


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _integer(text, 0)


def eta(text: str) -> float:
    """argparse type: the progress coefficient, a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def walk_steps(text: str) -> Union[str, int]:
    """argparse type: 'auto' or an integer >= 0 (walk proposals per iteration)."""
    if text == "auto":
        return text
    try:
        return _integer(text, 0)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer in [0, 2**63 - 1], "
                                         f"got {text!r}") from None


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def check_output_file(cmd: str, option: str, path: str) -> None:
    """Fail unless ``path`` can be written: not a folder, in an existing writable folder (a
    device or a pipe, such as /dev/stdout, written in place: writable itself)."""
    p = Path(path)
    if p.is_dir():
        fail(cmd, f"{option} {path}: is a folder, not a file")
    if is_special(path):        # /dev/stdout, a pipe: written in place, its folder unused
        if not os.access(path, os.W_OK):
            fail(cmd, f"{option} {path}: not writable")
        return
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        fail(cmd, f"{option} {path}: folder {parent} does not exist")
    if not _writable_dir(parent) or (p.exists() and not os.access(p, os.W_OK)):
        fail(cmd, f"{option} {path}: not writable")


def check_figure_file(cmd: str, option: str, path: str) -> str:
    """Fail unless matplotlib can save a figure as ``path``: a format its savefig writes
    (from the suffix; none: savefig's default format, whose suffix it appends) and a
    writable file (:func:`check_output_file`). Returns the file savefig writes.

    matplotlib is imported here, not when the command starts."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        fail(cmd, f"{option} needs matplotlib: pip install 'gmmfast[plot]'")
    canvas = Figure().canvas
    fmt = os.path.splitext(path)[1][1:]
    if not fmt:
        path = path.rstrip(".") + "." + canvas.get_default_filetype()
    elif fmt.lower() not in canvas.get_supported_filetypes():
        fail(cmd, f"{option} {path}: matplotlib cannot write .{fmt} files; use one of "
                  f"{', '.join(sorted(canvas.get_supported_filetypes()))}")
    check_output_file(cmd, option, path)
    return path


def check_distinct_files(cmd: str, files: Sequence[Tuple[str, Optional[str]]],
                         remedy: str = "give another file") -> None:
    """Fail if an output of ``files`` ((option, path) pairs, the input first; None: not
    given) names the same file as the input or as another output: writing it would destroy
    what is read or written before it. ``remedy`` ends the message."""
    seen: List[Tuple[str, str]] = []
    for option, path in files:
        if not path:
            continue
        for other, earlier in seen:
            if _same_file(path, earlier):
                what = "the input file" if other == "input" else f"the file of {other}"
                fail(cmd, f"{option} {path}: is {what}; {remedy}")
        seen.append((option, path))


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (links followed; for files that do not
    exist yet, the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output_dir(cmd: str, option: str, path: str) -> None:
    """Fail unless folder ``path`` exists and is writable, or can be created."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            fail(cmd, f"{option} {path}: exists and is not a folder")
        if not _writable_dir(p):
            fail(cmd, f"{option} {path}: folder is not writable")
        return
    ancestor = p.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not _writable_dir(ancestor):
        fail(cmd, f"{option} {path}: cannot create it ({ancestor} is not a writable folder)")
