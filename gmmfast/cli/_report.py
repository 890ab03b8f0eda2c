"""Reporting an experiment's tables from the command line."""
from __future__ import annotations

from typing import Optional


def report(head: str, text: str, out: Optional[str]) -> None:
    """Print an experiment's header line and tables; also write them to ``out`` if given."""
    print(head)
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(head + "\n\n" + text + "\n")

