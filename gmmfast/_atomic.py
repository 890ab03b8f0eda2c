"""Writing an output file whole or not at all.

A file is written to a temporary file in its own folder, then renamed over the
target with :func:`os.replace` (atomic on POSIX and Windows): a failure (a full
disk, Ctrl-C, an exception) leaves the old file, or none, never a partial one,
and removes the temporary file. A path that names no regular file (``/dev/stdout``,
a pipe, a device) is written directly: there is nothing to rename over.

An :class:`OSError` raised while writing names the target file (``filename``),
not the temporary one.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import IO, Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]


def is_special(path: PathLike) -> bool:
    """Whether ``path`` names something that is not a regular file or a new file in a
    folder: a device, a pipe, a socket, or a file reached through ``/dev`` or ``/proc``
    (``/dev/stdout`` when the output is redirected to a file); it is written in place."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError:
        return False                    # a new file (a bad folder fails when written)
    if not stat.S_ISREG(st.st_mode):
        return True
    absolute = os.path.abspath(path)
    return any(absolute == top or absolute.startswith(top + os.sep)
               for top in ("/dev", "/proc"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[str]:
    """A temporary path to write in place of ``path`` (same folder, same suffix: a writer
    that reads the format from the suffix, such as matplotlib's ``savefig``, writes the same
    format), renamed over ``path`` when the block ends without an exception and removed
    otherwise. For a special file (:func:`is_special`) it is ``path`` itself."""
    path = os.fspath(path)
    if is_special(path):
        with _named(path):
            yield path
        return
    target = os.path.realpath(path)     # a symbolic link keeps pointing at the new file
    folder, name = os.path.split(target)
    with _named(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=os.path.splitext(name)[1],
                                   dir=folder)
        os.close(fd)
    try:
        yield tmp
        with _named(path):
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """``open(path, mode, **kwargs)`` for writing, through :func:`atomic_path`: the file
    appears, whole, when the block ends without an exception."""
    with atomic_path(path) as tmp:
        with _named(path), open(tmp, mode, **kwargs) as fh:
            yield fh


@contextlib.contextmanager
def _named(path: PathLike) -> Iterator[None]:
    """An OSError in the block re-raised naming ``path`` (not a temporary file)."""
    try:
        yield
    except OSError as exc:
        if exc.filename == os.fspath(path):
            raise
        raise type(exc)(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc


def describe(exc: OSError) -> str:
    """``FILE: REASON`` of an error raised by the writers above."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason
