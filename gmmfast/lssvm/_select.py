"""Choosing a valid bound from a table of per-variable costs.

A bound z is valid when fsum_i c_i(z_i) <= B, the budget that the threshold
v_{t-1} leaves over the constant part of the bound (:func:`budget_for`). The
touching configuration (argmin c_i) is always valid; from it,
:func:`lagrangian_select` maximises a separable gain within the budget and
:func:`subset_select` is the paper's random scheme (CCP values for a growing
random subset of the examples).
"""
from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from .._validation import check_array, check_indices, check_int, check_real, integer_array
from ..latent import table_value

__all__ = ["budget_for", "lagrangian_select", "subset_select"]


def budget_for(threshold: float, const: float, touching_value: float = -np.inf) -> float:
    """A budget B on the table sum such that fl(const + sum) <= threshold whenever sum <= B.

    B is threshold - const, lowered ulp by ulp until fl(const + B) <= threshold
    (rounded addition is monotone), and never below ``touching_value``, the
    table sum of the touching configuration, which is valid by construction
    (fl(const + touching_value) = F(w) <= threshold).
    """
    B = threshold - const
    while const + B > threshold:
        B = np.nextafter(B, -np.inf)
    return float(max(B, touching_value))


def _check_costs(costs: Any, ndim: int = 2) -> np.ndarray:
    """A cost table: a float64 array of ``ndim`` dimensions (2: (n, m); the Potts bias's 3:
    (n, R, L)) of real numbers or +inf (a value never taken)."""
    costs = check_array(costs, "costs", dtype=np.float64, ndim=ndim, finite=False)
    if np.isnan(costs).any() or (costs == -np.inf).any():
        raise ValueError("costs must not contain NaN or -inf (+inf marks a value never taken).")
    return costs


def lagrangian_select(gain: np.ndarray, costs: np.ndarray, budget: float,
                      start: np.ndarray, n_bisect: int = 60) -> Tuple[np.ndarray, float]:
    """Maximise sum_i gain[i, z_i] subject to fsum_i costs[i, z_i] <= budget (approximately).

    Lagrangian relaxation of the budget: z(mu)_i = argmax_z gain - mu costs.
    ``start`` must be within budget (e.g. the touching configuration, the
    limit mu -> inf with ties broken by cost then gain). The smallest valid mu
    is found by bisection (in log scale); then, from that valid z(mu_hi), the
    examples where z(mu_lo) differs are switched greedily by gain per unit of
    cost while the budget allows. Returns a valid configuration and its cost.

    ``costs`` (n, m): real numbers, +inf where a value is never taken; ``gain`` (n, m):
    finite wherever ``costs`` is (anything elsewhere); ``budget`` finite; ``start`` (n,)
    values in [0, m); ``n_bisect`` an integer >= 0.
    """
    costs = _check_costs(costs)
    n, m = costs.shape
    gain = check_array(gain, "gain", dtype=np.float64, finite=False)
    if gain.shape != costs.shape:
        raise ValueError(f"gain must have the shape of costs {costs.shape}, got {gain.shape}.")
    budget = check_real(budget, "budget")
    start = check_indices(start, "start", (n,), m)
    n_bisect = check_int(n_bisect, "n_bisect", 0)
    finite = np.isfinite(costs)
    if not np.isfinite(gain[finite]).all():
        raise ValueError("gain must be finite wherever costs is finite (it is ignored where "
                         "costs is +inf).")
    rows = np.arange(n)
    g = np.where(finite, gain, -np.inf)

    def pick(mu: float) -> np.ndarray:
        return np.argmax(np.where(finite, g - mu * costs, -np.inf), axis=1).astype(np.int32)

    def value(z: np.ndarray) -> float:
        return table_value(costs, z)

    z0 = pick(0.0)
    v0 = value(z0)
    if v0 <= budget:
        return z0, v0
    best = start.copy()
    best_v = value(best)
    if not best_v <= budget:
        raise ValueError(f"start must be within budget: it costs {best_v!r}, more than the "
                         f"budget {budget!r}.")
    # scale: a multiplier that makes cost differences comparable with gain differences
    gspan = float(np.nanmax(np.where(finite, g, np.nan)) - np.nanmin(np.where(finite, g, np.nan)))
    cdiff = np.where(finite, costs, np.nan) - costs[rows, best][:, None]
    cspan = float(np.nanmax(np.abs(cdiff)))
    if not (gspan > 0 and cspan > 0):
        return best, best_v
    lo, hi = 0.0, gspan / cspan
    z_hi = pick(hi)
    v_hi = value(z_hi)
    for _ in range(200):
        if v_hi <= budget:
            break
        lo, hi = hi, hi * 4.0
        z_hi = pick(hi)
        v_hi = value(z_hi)
    if not v_hi <= budget:
        z_hi, v_hi = best, best_v
    z_lo = pick(lo) if lo > 0 else z0
    for _ in range(n_bisect):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 1024.0
        if not lo < mid < hi:
            break
        z = pick(mid)
        v = value(z)
        if v <= budget:
            hi, z_hi, v_hi = mid, z, v
        else:
            lo, z_lo = mid, z
    # prefer the Lagrangian answer if it beats the start in gain
    if g[rows, z_hi].sum() < g[rows, best].sum():
        z_hi, v_hi = best, best_v
    # greedy fill towards z_lo with the remaining budget
    diff = np.flatnonzero(z_lo != z_hi)
    if diff.size:
        dg = g[diff, z_lo[diff]] - g[diff, z_hi[diff]]
        dc = costs[diff, z_lo[diff]] - costs[diff, z_hi[diff]]
        useful = dg > 0
        diff, dg, dc = diff[useful], dg[useful], dc[useful]
        order = np.lexsort((-dg, np.where(dc > 0, -dg / np.maximum(dc, 1e-300), -np.inf)))
        z = z_hi.copy()
        slack = budget - v_hi
        for k in order:
            if dc[k] <= slack:
                i = diff[k]
                z[i] = z_lo[i]
                slack -= dc[k]
        v = value(z)
        if v <= budget:
            z_hi, v_hi = z, v
    return z_hi, v_hi


def subset_select(costs: np.ndarray, touching: np.ndarray, previous: np.ndarray, budget: float,
                  order: np.ndarray, min_size: int) -> Tuple[np.ndarray, float, int]:
    """The paper's random bounds: CCP values for the first s examples of ``order``, previous
    values for the others, with the smallest s >= min_size whose cost is within budget.

    s = n gives the touching configuration, always valid; the cost is
    non-increasing in s (each switch lowers it), so s is found by bisection.
    ``touching`` and ``previous`` have shape (n,) or (n,) + latent_shape (an
    example's latent variables switch together); ``costs`` has one row per
    latent variable, in the order of ``touching.reshape(-1)`` (real numbers, +inf
    where a value is never taken). ``order`` is a permutation of the n examples,
    ``min_size`` an integer in [0, n], ``budget`` finite and at least the cost of
    ``touching``.
    """
    costs = _check_costs(costs)
    m = costs.shape[1]
    touching = integer_array(touching, "touching")
    if touching.ndim == 0 or touching.size != costs.shape[0]:
        raise ValueError(f"touching must have one latent value per row of costs "
                         f"({costs.shape[0]}), in an array of shape (n,) or (n,) + "
                         f"latent_shape; got shape {touching.shape}.")
    touching = check_indices(touching, "touching", touching.shape, m)
    previous = check_indices(previous, "previous", touching.shape, m)
    n = touching.shape[0]
    order = check_indices(order, "order", (n,), n, dtype=np.intp)
    if n and np.bincount(order, minlength=n).max() != 1:
        raise ValueError(f"order must be a permutation of the {n} examples (each once).")
    budget = check_real(budget, "budget")
    min_size = check_int(min_size, "min_size", 0, n)

    def config(s: int) -> np.ndarray:
        z = previous.copy()
        sel = order[:s]
        z[sel] = touching[sel]
        return z

    def value(z: np.ndarray) -> float:
        return table_value(costs, z.reshape(-1))

    s_lo = min_size
    z = config(s_lo)
    v = value(z)
    if v <= budget:
        return z, v, s_lo
    if not value(touching) <= budget:
        raise ValueError(f"touching must be within budget: it costs {value(touching)!r}, more "
                         f"than the budget {budget!r}.")
    lo, hi = s_lo, n           # config(lo) invalid, config(hi) valid
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if value(config(mid)) <= budget:
            hi = mid
        else:
            lo = mid
    z = config(hi)
    return z, value(z), hi
