"""Reporting an experiment's tables from the command line."""
from __future__ import annotations

import time
from typing import Iterable, Optional, Tuple

from .._atomic import atomic_open


def settings(values: Iterable[Tuple[str, object]]) -> str:
    """``name = value, ...``: the settings a header line records."""
    return ", ".join(f"{name} = {value}" for name, value in values)


def report(head: str, started: float, text: str, out: Optional[str]) -> None:
    """Print an experiment's header line, ended by the seconds since ``started`` (a
    ``time.perf_counter()`` value), and its tables; also write them to ``out`` if given
    (whole or not at all: :func:`gmmfast._atomic.atomic_open`; an OSError names ``out``)."""
    head = f"{head}; {time.perf_counter() - started:.0f} s"
    print(head)
    print(text)
    if out:
        with atomic_open(out) as fh:
            fh.write(head + "\n\n" + text + "\n")
