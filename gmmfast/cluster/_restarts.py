"""Seeding restarts: G-MM's default search starts from the best of many k-means runs.

On small problems a Python-level G-MM phase costs as much as hundreds of short k-means runs,
and at small k such runs sample basins the escapes miss. :func:`restart_centers` runs them
(greedy k-means++, then Lloyd's iterations to a fixed point) in one nogil kernel call,
parallel over the runs, and returns the lowest; "auto" sizes them by work.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels._kmeans import simd_level
from .._kernels._restarts import lloyd_restarts
from .._validation import draw_seed


#: A row-center pair costs a restart as much as this many features more than it has: the
#: search and the k-means++ step cost a row-center pair about (d + 16) times a constant
#: (measured on 13 sets, d 2-64: 0.4-1.1 ns per pair and pass at d = 2, 4-5 ns at 50-64).
FEATURE_OVERHEAD = 16
#: Work (passes x n x k x (d + FEATURE_OVERHEAD)) the seeding restarts may spend with
#: ``restarts="auto"``, about 0.3-0.5 s on one core. A problem where two runs would cost
#: more gets none (large data: G-MM and its escapes use the time better). Measured
#: (bench/sweep.py, AMD Zen 4, AVX-512; 14 cells of 7 sets, then 12 seeds of 50-d blobs,
#: k = 30): 1.8e9 (2e8 row-center-feature products at d = 2, the budget before) left 4 cells
#: above equal-time restarts, 50-d blobs by 4.8e-4; 7.2e9 two, by 1.1e-6 and 1.1e-4 (4.5e-5
#: over 12 seeds); 1.44e10 wins that cell by 8e-5 at twice the time.
RESTART_WORK = 7.2e9
#: At most this many restarts, however small the problem.
MAX_RESTARTS = 1000
#: The most restarts an explicit ``restarts`` may ask for (beyond it an error names it).
RESTARTS_LIMIT = 1_000_000
#: Lloyd's passes a restart's work is first estimated at (before its first run).
_RESTART_PASSES = 20


@dataclass
class Restarts:
    """The seeding restarts of a fit: ``runs`` Lloyd runs from fresh greedy k-means++
    seeds, each to a fixed point of Lloyd's map; ``objectives`` their final objectives (in
    run order), ``n_iter`` their passes, ``best`` the run whose centers start G-MM."""

    runs: int
    objectives: np.ndarray
    n_iter: np.ndarray
    best: int


def restarts_fit(n: int, k: int, d: int, runs: Any, work: float = RESTART_WORK) -> bool:
    """Whether ``runs`` seeding restarts (an int, or "auto") go ahead on n rows, k centers, d
    features: an int always; "auto" when two runs fit in ``work`` (each estimated at
    _RESTART_PASSES passes and its seeding's 2 + log k, each n k (d + FEATURE_OVERHEAD))."""
    if runs != "auto":
        return int(runs) > 0
    return _unit(n, k, d) * (2 + int(math.log(k)) + _RESTART_PASSES) * 2 <= work


def _unit(n: int, k: int, d: int) -> float:
    """The work of one pass of a restart over n rows, k centers, d features."""
    return float(n) * k * (d + FEATURE_OVERHEAD)


def restart_centers(X: np.ndarray, sw: np.ndarray, k: int, runs: Any,
                    rng: np.random.Generator, n_threads: int,
                    work: float = RESTART_WORK) -> Optional[Tuple[np.ndarray, Restarts]]:
    """The centers of the lowest of ``runs`` k-means runs (greedy k-means++, 2 + log k
    trials per center, then Lloyd to a fixed point; one nogil kernel call, parallel over
    the runs), and their record. ``runs="auto"``: as many as ``work`` products allow,
    counting each run's passes and its seeding's trials, at most MAX_RESTARTS; None when
    not even two would fit. Depends on ``rng`` only, never on the thread count."""
    n, d = X.shape
    trials = 2 + int(math.log(k))
    unit = _unit(n, k, d)
    if not restarts_fit(n, k, d, runs, work):
        return None
    seed = draw_seed(rng)
    total = MAX_RESTARTS if runs == "auto" else int(runs)
    objectives = np.empty(total)
    n_iter = np.empty(total, dtype=np.intc)
    centers = np.empty((k, d), dtype=X.dtype)
    level = simd_level()
    best = lloyd_restarts(X, sw, k, seed, 0, 1, trials, 300, centers, objectives[:1],
                          n_iter[:1], n_threads, level)
    if runs == "auto":
        total = int(min(MAX_RESTARTS, work // ((n_iter[0] + trials) * unit)))
        if total < 2:
            return None
    if total > 1:
        rest = np.empty_like(centers)
        r = lloyd_restarts(X, sw, k, seed, 1, total - 1, trials, 300, rest, objectives[1:total],
                           n_iter[1:total], n_threads, level)
        if objectives[r] < objectives[0]:
            best, centers = r, rest
    return centers, Restarts(runs=total, objectives=objectives[:total].copy(),
                             n_iter=n_iter[:total].copy(), best=int(best))


def local_restarts(X: np.ndarray, sw: np.ndarray, rows: np.ndarray, m: int, runs: int,
                   seed: int, n_threads: int) -> Tuple[np.ndarray, float, float]:
    """The best of ``runs`` k-means runs (greedy k-means++, then Lloyd to a fixed point) with
    m centers on the rows ``rows`` of X: their centers, their objective on those rows, and
    the row-center pairs the runs computed (passes, seeding trials included, x rows x m)."""
    Xr = np.ascontiguousarray(X[rows])
    centers = np.empty((m, X.shape[1]), dtype=X.dtype)
    objectives = np.empty(runs)
    n_iter = np.empty(runs, dtype=np.intc)
    trials = 2 + int(math.log(m))
    best = lloyd_restarts(Xr, np.ascontiguousarray(sw[rows]), m, seed, 0, runs, trials, 300,
                          centers, objectives, n_iter, n_threads, simd_level())
    pairs = float(np.sum(n_iter + trials)) * rows.shape[0] * m
    return centers, float(objectives[best]), pairs
