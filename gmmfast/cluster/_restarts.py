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

from .._kernels._restarts import lloyd_restarts
from .._validation import draw_seed


#: Work (row-center-feature products, passes x n x k x d) the seeding restarts may spend
#: with ``restarts="auto"``: about 0.1-0.3 s on one core. Measured (bench/sweep.py, AMD
#: Zen 4): 5e7 left cancer-std k=6, digits-std k=10 and D31 k=31 above equal-time restarts
#: (+5e-5, +1e-3, +4e-6); 2e8 wins or ties them. A problem where two runs would cost
#: more gets none (large data: G-MM and its escapes use the time better).
RESTART_WORK = 2e8
#: At most this many restarts, however small the problem.
MAX_RESTARTS = 1000
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
    features: an int always; "auto" when two runs fit in ``work`` products (each estimated
    at _RESTART_PASSES passes and its seeding's 2 + log k)."""
    if runs != "auto":
        return int(runs) > 0
    return float(n) * k * d * (2 + int(math.log(k)) + _RESTART_PASSES) * 2 <= work


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
    unit = float(n) * k * d
    if not restarts_fit(n, k, d, runs, work):
        return None
    seed = draw_seed(rng)
    total = MAX_RESTARTS if runs == "auto" else int(runs)
    objectives = np.empty(total)
    n_iter = np.empty(total, dtype=np.intc)
    centers = np.empty((k, d), dtype=X.dtype)
    best = lloyd_restarts(X, sw, k, seed, 0, 1, trials, 300, centers, objectives[:1],
                          n_iter[:1], n_threads)
    if runs == "auto":
        total = int(min(MAX_RESTARTS, work // ((n_iter[0] + trials) * unit)))
        if total < 2:
            return None
    if total > 1:
        rest = np.empty_like(centers)
        r = lloyd_restarts(X, sw, k, seed, 1, total - 1, trials, 300, rest, objectives[1:total],
                           n_iter[1:total], n_threads)
        if objectives[r] < objectives[0]:
            best, centers = r, rest
    return centers, Restarts(runs=total, objectives=objectives[:total].copy(),
                             n_iter=n_iter[:total].copy(), best=int(best))
