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
from ._validation import (check_array, check_int, check_random_state, check_real, draw_seed,
                          exact_sum)

#: Examples per walk block: sets up to this size walk as one chain (the paper's walk).
WALK_BLOCK = 1 << 15
#: The walk counts proposals in int64.
MAX_STEPS = 2**63 - 1
#: Blocks of one walk (far more than any data set in memory makes).
_MAX_BLOCKS = 2**31 - 1


def check_steps(n_steps: Any, name: str = "n_steps") -> int:
    """Random-walk proposals: an integer in [0, 2**63 - 1] (the kernels count in int64)."""
    return check_int(n_steps, name, 0, MAX_STEPS)


def block_plan(n: int, block_size: int, slack: float, n_steps: int
               ) -> Tuple[np.ndarray, np.ndarray]:
    """Slack and proposals of each block of ``block_size`` examples, proportional to its size.

    Block b gets ``slack * size_b / n`` and ``floor(n_steps * size_b / n)``
    proposals, the remainder one each to the first blocks, so the proposals add
    up to ``n_steps`` exactly, for any ``n_steps`` up to 2**63 - 1 (computed
    without overflowing int64).

    Parameters
    ----------
    n : int >= 1
    block_size : int >= 1
    slack : float, finite and >= 0
    n_steps : int in [0, 2**63 - 1]

    Returns
    -------
    block_slack : ndarray of float64, shape (ceil(n / block_size),)
    block_steps : ndarray of int64, same shape
    """
    n = check_int(n, "n", 1)
    block_size = check_int(block_size, "block_size", 1)
    n_steps = check_steps(n_steps)
    slack = check_real(slack, "slack", 0.0)
    n_blocks = -(-n // block_size)
    if n_blocks > _MAX_BLOCKS:
        raise ValueError(f"n / block_size must make at most {_MAX_BLOCKS} blocks, got n = {n} "
                         f"and block_size = {block_size}.")
    sizes = np.full(n_blocks, min(block_size, n), dtype=np.int64)
    sizes[-1] = n - min(block_size, n) * (n_blocks - 1)
    block_slack = slack * (sizes / n)
    # floor(n_steps * size / n) = q size + floor(r size / n) with n_steps = q n + r:
    # r size < n block_size, so nothing here overflows int64
    q, r = divmod(n_steps, n)
    block_steps = q * sizes + (r * sizes) // n
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
    """sum_i costs[i, labels[i]], correctly rounded (independent of any order); inf if the
    exact sum is beyond the largest float."""
    return exact_sum(costs[np.arange(costs.shape[0]), labels])


def _check_integers(values: Any, name: str, n: int, low: int, high: Any, what: str
                    ) -> np.ndarray:
    """``values`` as int32 of shape (n,), every entry in [low, high) (high: scalar or array)."""
    try:
        arr = np.asarray(values)
    except ValueError as exc:        # ragged nested sequences
        raise ValueError(f"{name} must be {n} integers: {exc}") from None
    if arr.dtype.kind not in "iu" or arr.shape != (n,):
        raise ValueError(f"{name} must be {n} integers, got {arr.dtype} of shape {arr.shape}.")
    if n and (arr.min() < low or (arr >= high).any()):
        raise ValueError(f"{name} must lie in [{low}, {what}), got values in "
                         f"[{arr.min()}, {arr.max()}].")
    return np.ascontiguousarray(arr, dtype=np.int32)


def sample_latent(costs: Any, labels: Any, budget: float, n_steps: int,
                  random_state: Any = None, *, n_options: Any = None,
                  block_size: int = WALK_BLOCK) -> Tuple[np.ndarray, float, int]:
    """A random configuration z with sum_i costs[i, z_i] <= budget, by a random walk from ``labels``.

    Parameters
    ----------
    costs : array-like of shape (n, m)
        c_i(j), real numbers; entries at j >= n_options[i] are never proposed
        (padding: any value). Among the options NaN and -inf are errors; +inf
        marks an option that is never taken.
    labels : array-like of int, shape (n,)
        Valid start (e.g. the row-wise argmin): finite costs summing to <= budget.
    budget : float
        Finite.
    n_steps : int in [0, 2**63 - 1]
        Proposals (example uniform, new option uniform among the others).
        Ctrl-C stops a long walk (KeyboardInterrupt).
    random_state : None, int, numpy Generator or RandomState
    n_options : array-like of int, shape (n,), optional
        Options per example, each in [1, m] (default m).
    block_size : int >= 1
        Examples per walk block (each block walks with its own random stream
        and share of the slack; see :func:`block_plan`).

    Returns
    -------
    labels : ndarray of int32
    value : float
        Exact sum of the chosen costs (<= budget).
    n_accepted : int
    """
    costs = check_array(costs, "costs", dtype=np.float64, finite=False)
    n, m = costs.shape
    if m > np.iinfo(np.int32).max:
        raise ValueError(f"costs may have at most 2**31 - 1 columns (options), got {m}.")
    opts = (np.full(n, m, dtype=np.int32) if n_options is None
            else _check_integers(n_options, "n_options", n, 1, m + 1, f"{m + 1} (m + 1)"))
    start = _check_integers(labels, "labels", n, 0, opts, "n_options[i]")
    bad = np.isnan(costs) | (costs == -np.inf)
    if n_options is not None and bad.any():
        bad &= np.arange(m) < opts[:, None]         # padding may hold anything
    if bad.any():
        raise ValueError("costs must not be NaN or -inf among the options of an example "
                         "(+inf marks an option never taken; padding beyond n_options[i] is "
                         "ignored).")
    used = costs[np.arange(n), start]
    if not np.isfinite(used).all():
        raise ValueError("costs of the starting labels must be finite.")
    budget = check_real(budget, "budget")
    n_steps = check_steps(n_steps)
    block_size = check_int(block_size, "block_size", 1, np.iinfo(np.int32).max)
    rng = check_random_state(random_state)
    start_value = table_value(costs, start)
    if not start_value <= budget:
        raise ValueError(f"the starting configuration costs {start_value!r}, more than the "
                         f"budget {budget!r}; the walk must start from a valid configuration.")
    if not math.isfinite(budget - start_value):
        raise ValueError(f"budget - (cost of the start) = {budget!r} - {start_value!r} "
                         "overflows; use a smaller budget.")
    out = start.copy()
    block_slack, block_steps = block_plan(n, block_size, budget - start_value, n_steps)
    accepted = np.zeros(block_slack.shape[0], dtype=np.int64)
    _latent.walk(costs, opts, out, block_size, block_slack, block_steps, draw_seed(rng),
                 accepted, openmp_max_threads())
    value = table_value(costs, out)
    if value > budget:
        idx = np.arange(n)
        now = costs[idx, out]
        value = repair(out, start, now, used, budget, lambda z: table_value(costs, z))
    return out, value, int(accepted.sum())
