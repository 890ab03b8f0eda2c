"""Merge-split bounds of k-means, from per-cluster sums alone.

One pass over the data at centers ``w`` gives, for the nearest-center
assignment, the sums of every cluster j (:class:`ClusterSums`): its weight
W_j, its residual sums D_j = sum_i s_i (x_i - w_j) and its cost. A *merge
bound* sends every point of cluster j to one cluster r(j) (r(j) = j unless j is
merged into a neighbour); its value at any centers u is exactly

    b(u) = F(w) + sum_j [2 D_j . (w_j - u_r(j)) + W_j ||w_j - u_r(j)||^2],

and its minimiser moves each receiving cluster to the mean of what it
receives. Merged clusters are empty in the bound, so any center minimises it
there: with relocation they move to points drawn (proportionally to their
cost) in the costliest clusters, a split. Nothing here touches the points, so
the same code serves a pass in memory and a pass over the chunks of a Dask
array; the touching bound (r = identity) is Lloyd's step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ._pass import ClusterSums
from ._samplers import center_neighbors

#: Rows of clusters whose merge costs are formed at once (memory: rows x neighbours x d).
_ROWS = 256


@dataclass
class MergeBound:
    """The bound that sends the points of cluster j (of ``sums``) to cluster ``target[j]``."""

    sums: ClusterSums
    target: np.ndarray

    @property
    def merged(self) -> np.ndarray:
        return np.flatnonzero(self.target != np.arange(self.target.shape[0]))


def touching(sums: ClusterSums) -> MergeBound:
    """The nearest-center assignment itself (b(w) = F(w)): MM's bound."""
    return MergeBound(sums, np.arange(sums.weight.shape[0]))


def _terms(sums: ClusterSums, rows: np.ndarray, u_rows: np.ndarray) -> np.ndarray:
    """2 D_j . (w_j - u_j) + W_j ||w_j - u_j||^2 for the clusters ``rows``: the change of
    their cost when their points move from w_j to u_j (``u_rows[i]`` for ``rows[i]``)."""
    delta = sums.w[rows].astype(np.float64) - u_rows
    return (2.0 * np.einsum("jd,jd->j", sums.resid[rows], delta)
            + sums.weight[rows] * np.einsum("jd,jd->j", delta, delta))


def value(bound: MergeBound, u: np.ndarray) -> float:
    """b(u), the bound's value at centers ``u``; b(w) = F(w) exactly for the touching bound."""
    s = bound.sums
    u = np.asarray(u, dtype=np.float64)
    rows = np.arange(s.weight.shape[0])
    moved = np.flatnonzero((bound.target != rows) | np.any(u != s.w, axis=1))
    if moved.shape[0] == 0:
        return s.objective
    return s.objective + math.fsum(_terms(s, moved, u[bound.target[moved]]))


def minimize(bound: MergeBound, relocate: Optional[Callable[[int], np.ndarray]] = None
             ) -> np.ndarray:
    """The minimiser: each receiving cluster at the mean of what it receives.

    Clusters that receive nothing keep their center, or, with ``relocate``
    (``relocate(i)`` returns row i of the data), the e-th of them moves to the
    point drawn in the cluster with the e-th largest cost at the new centers
    (clusters without a drawn point are passed over).
    """
    s = bound.sums
    k = s.weight.shape[0]
    r = bound.target
    w = s.w.astype(np.float64)
    weight = np.bincount(r, weights=s.weight, minlength=k)
    # what cluster r receives, relative to its own center: sum_j W_j (w_j - w_r) + D_j
    num = s.resid.copy()
    merged = bound.merged
    if merged.shape[0]:
        num[merged] += s.weight[merged, None] * (w[merged] - w[r[merged]])
        np.add.at(num, r[merged], num[merged])
        num[merged] = 0.0
    new = w.copy()
    full = weight > 0
    new[full] += num[full] / weight[full, None]
    empty = np.flatnonzero(~full)
    if relocate is not None and empty.shape[0] and s.pick is not None:
        cost = np.bincount(r, weights=s.cost, minlength=k)
        cost += np.bincount(r, weights=_terms(s, np.arange(k), new[r]), minlength=k)
        order = np.argsort(-cost, kind="stable")
        donors = [j for j in order if cost[j] > 0 and full[j] and s.pick[j] >= 0]
        for e, j in zip(empty, donors):
            new[e] = relocate(int(s.pick[j]))
    return new.astype(s.w.dtype, copy=False)


def merge_costs(sums: ClusterSums, n_neighbors: int):
    """For each cluster j, the cheapest merge into one of its ``n_neighbors`` nearest centers.

    Returns (receiver, cost): receiver[j] the cluster r minimising the cost
    R_j = 2 D_j . (w_j - w_r) + W_j ||w_j - w_r||^2 of sending all of j's points
    to w_r, and that cost (+inf for empty clusters or without neighbours). Memory
    O(k (neighbours + d)), formed in blocks of rows.
    """
    s = sums
    k = s.weight.shape[0]
    receiver = np.arange(k)
    cost = np.full(k, np.inf)
    L = min(int(n_neighbors), k - 1)
    if L <= 0:
        return receiver, cost
    nbr = center_neighbors(s.w, L)
    w = s.w.astype(np.float64)
    for lo in range(0, k, _ROWS):
        hi = min(lo + _ROWS, k)
        cand = nbr[lo:hi]                                    # (B, L)
        delta = w[lo:hi, None, :] - w[cand]                  # (B, L, d)
        R = (2.0 * np.einsum("bd,bld->bl", s.resid[lo:hi], delta)
             + s.weight[lo:hi, None] * np.einsum("bld,bld->bl", delta, delta))
        R[s.weight[cand] <= 0] = np.inf                      # never into an empty cluster
        best = np.argmin(R, axis=1)
        receiver[lo:hi] = cand[np.arange(hi - lo), best]
        cost[lo:hi] = R[np.arange(hi - lo), best]
    cost[s.weight <= 0] = np.inf
    return receiver, cost


def select(sums: ClusterSums, threshold: float, n_neighbors: int) -> MergeBound:
    """The valid merge bound (b(w) <= ``threshold``) that merges the cheapest clusters.

    Clusters are taken in increasing merge cost while the total stays within
    the slack ``threshold - F(w)``; a cluster is passed over if it receives a
    merged cluster or its receiver is merged itself. The value is then
    recomputed as :func:`value` does and clusters are dropped from the end
    until it is within the threshold, so the bound is valid whatever the
    rounding.
    """
    k = sums.weight.shape[0]
    bound = touching(sums)
    slack = threshold - sums.objective
    if not slack > 0 or k < 2:
        return bound
    receiver, cost = merge_costs(sums, n_neighbors)
    order = np.argsort(cost, kind="stable")
    merged = np.zeros(k, dtype=bool)
    receives = np.zeros(k, dtype=bool)
    taken = []
    spent = 0.0
    for j in order:
        c = cost[j]
        if not spent + c <= slack:        # also stops at +inf
            break
        r = receiver[j]
        if receives[j] or merged[r]:
            continue
        merged[j] = receives[r] = True
        spent += c
        taken.append(j)
    while taken:
        bound.target[taken] = receiver[taken]
        if value(bound, sums.w) <= threshold:
            break
        bound.target[taken[-1]] = taken[-1]     # rounding pushed it over: one merge fewer
        taken.pop()
    return bound
