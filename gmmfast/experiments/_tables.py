"""What the experiments' tables are made of: markdown tables, the runs of one (method, init)
cell, runs paired with CCP's from the same start, and one CSV line per run."""
from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np


def markdown_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def runs_of(results: Sequence[Any], method: str, init: str) -> List[Any]:
    """The runs of ``method`` from the initialisation ``init``."""
    return [r for r in results if r.method == method and r.init == init]


def cells(results: Sequence[Any], methods: Sequence[str], inits: Sequence[str]
          ) -> Iterator[Tuple[str, str, List[Any]]]:
    """(method, init, runs) of every cell that has runs, method by method."""
    for m in methods:
        for i in inits:
            rs = runs_of(results, m, i)
            if rs:
                yield m, i, rs


def mean(runs: Sequence[Any], value: Callable[[Any], float]) -> float:
    """The mean of ``value(run)`` over ``runs``."""
    return np.array([value(r) for r in runs], dtype=float).mean()


def mean_std(values: Sequence[float], fmt: str) -> str:
    """``mean ± std`` of ``values``, each formatted by ``fmt`` (e.g. ``".3f"``)."""
    a = np.asarray(values, dtype=float)
    return f"{format(a.mean(), fmt)} ± {format(a.std(), fmt)}"


def paired_with_ccp(results: Sequence[Any], methods: Sequence[str], inits: Sequence[str],
                    key: str, fallback: Optional[object] = None
                    ) -> Iterator[Tuple[str, str, List[Any], List[Any]]]:
    """(method, init, runs, CCP's runs) for every method but CCP (when CCP was run) and init.

    Each run is paired with CCP's run from the same init with the same ``key``
    (the fold, or the seed), or else with CCP's run whose ``key`` is
    ``fallback``; runs without a CCP run to pair with are left out, and so
    are cells without paired runs.
    """
    if "ccp" not in methods:
        return
    for m in methods:
        if m == "ccp":
            continue
        for i in inits:
            base = {getattr(r, key): r for r in runs_of(results, "ccp", i)}
            pairs = [(r, base.get(getattr(r, key), base.get(fallback)))
                     for r in runs_of(results, m, i)]
            pairs = [(r, b) for r, b in pairs if b is not None]
            if pairs:
                yield m, i, [r for r, _ in pairs], [b for _, b in pairs]


def paired_row(label: str, init: str, d_objective: np.ndarray, d_quality: np.ndarray,
               better: int) -> list:
    """A row of the comparison with CCP: the objective difference (method - CCP, mean +- std,
    and how many runs have the lower objective), the quality difference in points (mean +-
    std, and runs better/worse/all); ``better`` is the sign of a quality difference that is
    an improvement (+1 for accuracy, -1 for error)."""
    return [label, init,
            f"{d_objective.mean():+.4f} ± {d_objective.std():.4f}" if d_objective.size else "-",
            f"{int((d_objective < 0).sum())}/{d_objective.size}",
            f"{d_quality.mean():+.1f} ± {d_quality.std():.1f}",
            f"{int((better * d_quality > 0).sum())}/{int((better * d_quality < 0).sum())}/"
            f"{d_quality.size}"]


def runs_csv(results: Sequence[Any], columns: Sequence[str], order: Sequence[str]) -> str:
    """Every run as one CSV line of its ``columns``, sorted by the attributes ``order``."""
    lines = [",".join(columns)]
    for r in sorted(results, key=lambda r: tuple(getattr(r, a) for a in order)):
        lines.append(",".join(str(getattr(r, c)) for c in columns))
    return "\n".join(lines) + "\n"
