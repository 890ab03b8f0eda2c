"""Sampling valid bounds for latent-variable models, shared by every bound family.

For latent-variable models a bound is a configuration ``z`` and its value at
``w_{t-1}`` is a constant plus ``sum_i c_i(z_i)``, so "pick a valid bound" is
"pick z with sum_i c_i(z_i) <= budget", starting from the touching
configuration (``argmin c_i``), which is always valid. This module holds the
parts of the random walk that do not depend on the model: how the points are
split into blocks (by n only, so results do not depend on the thread count),
the exact repair after rounding, and the walk over a table of costs.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Tuple

import numpy as np

from ._kernels import _latent
from ._kernels._common import openmp_max_threads
from ._validation import check_int, check_random_state, draw_seed

#: Examples per walk block: sets up to this size walk as one chain (the paper's walk).
WALK_BLOCK = 1 << 15


def block_plan(n: int, block_size: int, slack: float, n_steps: int
               ) -> Tuple[np.ndarray, np.ndarray]:
    """Slack and proposals of each block of ``block_size`` examples, proportional to its size."""
    n_blocks = -(-n // block_size)
    sizes = np.full(n_blocks, block_size, dtype=np.int64)
    sizes[-1] = n - block_size * (n_blocks - 1)
    block_slack = slack * (sizes / n)
    block_steps = (n_steps * sizes) // n
    block_steps[: n_steps - int(block_steps.sum())] += 1
    return block_slack, block_steps


def repair(labels: np.ndarray, start: np.ndarray, costs: np.ndarray, start_costs: np.ndarray,
           budget: float, exact_value: Callable[[np.ndarray], float]) -> float:
    """Undo moves (largest cost increase first) until ``exact_value(labels) <= budget``.

    Only rounding in a walk's running total can make this necessary; ``start``
    must be valid. Updates ``labels`` and ``costs`` in place; returns the value.
    """
    value = exact_value(labels)
    while value > budget:
        moved = np.flatnonzero(labels != start)
        increase = costs[moved] - start_costs[moved]
        undo = moved if increase.size == 0 or increase.max() <= 0 else moved[[np.argmax(increase)]]
        labels[undo] = start[undo]
        costs[undo] = start_costs[undo]
        value = exact_value(labels)
    return value


def table_value(costs: np.ndarray, labels: np.ndarray) -> float:
    """sum_i costs[i, labels[i]], correctly rounded (independent of any order)."""
    return math.fsum(costs[np.arange(costs.shape[0]), labels])


def sample_latent(costs: Any, labels: Any, budget: float, n_steps: int,
                  random_state: Any = None, *, n_options: Any = None,
                  block_size: int = WALK_BLOCK) -> Tuple[np.ndarray, float, int]:
    """A random configuration z with sum_i costs[i, z_i] <= budget, by a random walk from ``labels``.

    Parameters
    ----------
    costs : array-like of shape (n, m)
        c_i(j); entries at j >= n_options[i] are never proposed.
    labels : array-like of int, shape (n,)
        Valid start (e.g. the row-wise argmin).
    budget : float
    n_steps : int
        Proposals (example uniform, new option uniform among the others).
    random_state : None, int or numpy Generator
    n_options : array-like of int, shape (n,), optional
        Options per example (default m).

    Returns
    -------
    labels : ndarray of int32
    value : float
        Exact sum of the chosen costs (<= budget).
    n_accepted : int
    """
    costs = np.ascontiguousarray(costs, dtype=np.float64)
    if costs.ndim != 2 or costs.shape[0] == 0 or costs.shape[1] == 0:
        raise ValueError(f"costs must be a non-empty 2-D array, got shape {costs.shape}.")
    n, m = costs.shape
    opts = (np.full(n, m, dtype=np.int32) if n_options is None
            else np.ascontiguousarray(n_options, dtype=np.int32))
    if opts.shape != (n,) or opts.min() < 1 or opts.max() > m:
        raise ValueError(f"n_options must be {n} integers in [1, {m}].")
    start = np.asarray(labels)
    if start.shape != (n,) or start.dtype.kind not in "iu":
        raise ValueError(f"labels must be {n} integers, got {start.dtype} of shape {start.shape}.")
    if (start < 0).any() or (start >= opts).any():
        raise ValueError("labels must lie in [0, n_options[i]) for every example.")
    start = np.ascontiguousarray(start, dtype=np.int32)
    used = costs[np.arange(n), start]
    if not np.isfinite(used).all():
        raise ValueError("costs of the starting labels must be finite.")
    n_steps = check_int(n_steps, "n_steps", 0)
    start_value = table_value(costs, start)
    if not start_value <= budget:
        raise ValueError(f"the starting configuration costs {start_value!r}, more than the "
                         f"budget {budget!r}; the walk must start from a valid configuration.")
    rng = check_random_state(random_state)
    out = start.copy()
    block_slack, block_steps = block_plan(n, block_size, float(budget) - start_value, n_steps)
    accepted = np.zeros(block_slack.shape[0], dtype=np.int64)
    _latent.walk(costs, opts, out, block_size, block_slack, block_steps, draw_seed(rng),
                 accepted, openmp_max_threads())
    value = table_value(costs, out)
    if value > budget:
        idx = np.arange(n)
        now = costs[idx, out]
        value = repair(out, start, now, used, float(budget), lambda z: table_value(costs, z))
    return out, value, int(accepted.sum())
