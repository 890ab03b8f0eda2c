"""Leaving a converged clustering: merge one cluster, split another, run G-MM again.

G-MM's slack is (1 - eta) d_t, and d_t vanishes as the iterates converge, so a
configuration stuck with two centers in one true cluster and one center on two
true clusters can outlive the slack. After convergence, :func:`escape` proposes
such a pair explicitly: merge a cluster cheap to merge into its neighbour (merge
cost R_j, as in :mod:`gmmfast.cluster._merge`), put its center where one greedy
k-means++ step puts a new center for the other k - 1 (the best, by how much it
lowers the objective, of 2 + log k points drawn in proportion to their cost),
and run G-MM again from there as a new phase (Algorithm 1 from that start, its
own history and invariants). Where true clusters overlap, a missed cluster is
spread over several neighbours rather than held by one costly cluster, which
is why the new center goes where the objective drops most, not into the
costliest cluster. A phase that ends below the best objective so far is kept
and the proposals start over from it; otherwise the best solution stays.
Proposals come first in batches: the m cheapest merges that do not
conflict (no merged cluster receives another) with their centers on points
drawn in the m costliest clusters, m = k / 32 halved after each batch that
fails, so a large k is fixed many clusters per phase; then one merge at a
time, alternating the cheapest merges with the costliest clusters' points
(along the diagonals of the two rankings) and with a greedy k-means++ step.
When those proposals run out (at small k there are only 2k of them) the search
re-splits instead: a cluster and its RESPLIT_GROUP - 1 nearest neighbours (by
center distance; the costliest clusters first) are clustered afresh on their own
rows, the best of RESPLIT_RUNS k-means runs (greedy k-means++, then Lloyd; the
seeding restarts' kernel), and when that lowers their cost the G-MM phase runs
from the new centers. Where restarts would have to get every true cluster's
split right at once, this improves one group at a time (10 blobs in 50
dimensions split into 30 clusters: SSE 0.18 % below scikit-learn's restarts in the
same time, bench/results/sweep.md). It stops after a round of k groups in a row
that did not improve.
The guarantee: the objective of the kept solution never increases, each phase is a
G-MM run with its recorded invariants, and the search stops after
``patience`` proposals in a row that did not improve it, when they have made
as many passes over the data as the initialisation and the first G-MM run
did together (times ``effort``: a deterministic budget that grows with the
problem), or after ``max_time`` seconds.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .._validation import draw_seed
from ..core import GMMResult, History
from . import _merge
from ._restarts import local_restarts

#: A phase is kept when it lowers the best objective by more than this fraction (rounding).
_IMPROVEMENT = 1e-12
#: The first batch of proposals merges and re-seeds k / BATCH_DIVISOR clusters at once.
BATCH_DIVISOR = 32
#: Work (row-center-feature products, passes x n x k x d) the escape proposals may always
#: spend whatever the effort allows, about a second on one core: on small sets escaping
#: stops by patience alone.
MIN_ESCAPE_WORK = 1e10
#: A re-split proposal clusters afresh this many neighbouring clusters (about the centers
#: a true cluster gets at 3 times its number of clusters) ...
RESPLIT_GROUP = 3
#: ... as the best of this many k-means runs on their rows.
RESPLIT_RUNS = 10


def pass_budget(effort: float, init_passes: float, n_iter: int, n: int, k: int,
                d: int) -> float:
    """Passes over n rows (k centers, d features) the escapes may make: ``effort`` times
    those of the initialisation (in passes of a k-center search) and of the first G-MM
    run (its iterations and its start), never fewer than MIN_ESCAPE_WORK / (n k d). The
    same rule in memory and on Dask, so both fits make the same proposals (on Dask each
    pass also costs a scheduler round trip)."""
    return max(effort * (init_passes + n_iter + 1), MIN_ESCAPE_WORK / (n * k * d))


@dataclass
class Escape:
    """One proposal after convergence and the G-MM phase run from it.

    Attributes
    ----------
    merged, into : ndarray of int
        Clusters ``merged`` were merged into their neighbours ``into`` (a re-split: the
        clusters re-split, both).
    rows : ndarray of int
        Their centers were moved to these rows of X (a re-split: none).
    start_objective : float
        F at the proposed centers (the phase's F(w_0)).
    objective : float
        F at the end of the phase.
    accepted : bool
        The phase ended below the best objective so far and was kept.
    passes : int
        Passes over the data the proposal and its phase made.
    history : gmmfast.core.History
        The phase's record (its invariants are those of any G-MM run).
    kind : {"merge-split", "re-split"}
        The proposal: a merge and a split, or a group of clusters clustered afresh.
    """

    merged: np.ndarray
    into: np.ndarray
    rows: np.ndarray
    start_objective: float
    objective: float
    accepted: bool
    passes: int
    history: History
    kind: str = "merge-split"


def escape(family, best: GMMResult, run: Callable[[np.ndarray, int], GMMResult],
           rng: np.random.Generator, *, n_neighbors: int, patience: int, max_iter: int,
           max_passes: float, max_time: Optional[float]
           ) -> Tuple[GMMResult, List[Escape], Any]:
    """Merge-split, then re-split proposals after convergence (see the module); returns the
    best run, the record of every proposal and the cluster sums at the best run's centers.

    ``family`` is a sums-based bound family (:class:`~gmmfast.cluster._family.
    KMeansBounds`, or the Dask one) whose last pass was at ``best.w`` with points drawn
    for relocation; it gives ``row(i)`` (row i of the data) and, optionally,
    ``new_center(others, rng)`` (the row a greedy k-means++ step picks; without it only
    the costliest clusters' drawn points re-seed); in memory (``X``, ``sw`` and ``n_threads``
    its rows, their weights and its threads) the re-split stage follows (on Dask the search
    ends with the merge-split proposals). ``run(w0, max_iter)`` runs one
    G-MM phase from ``w0`` with the same family, of at most ``max_iter`` iterations.
    The phases together make about ``max_passes`` passes over the data (a phase
    makes one per iteration and one at its start, a k-means++ re-seed two more).
    """
    records: List[Escape] = []
    if patience <= 0:
        return best, records, family.last.sums
    start = time.perf_counter()
    sums = family.last.sums
    new_center = getattr(family, "new_center", None)

    passes = 0.0

    def out_of_time() -> bool:
        return passes >= max_passes or (max_time is not None
                                         and time.perf_counter() - start > max_time)

    def attempt(merged: np.ndarray, into: np.ndarray, rows: Optional[np.ndarray]) -> bool:
        nonlocal best, sums, passes
        cost = 0
        target = np.arange(sums.weight.shape[0])
        target[merged] = into
        w0 = _merge.minimize(_merge.MergeBound(sums, target))
        if rows is None:      # one merge, its center placed by a greedy k-means++ step
            rows = np.array([new_center(np.delete(w0, merged, axis=0), rng)])
            cost = 2
        w0[merged] = np.array([family.row(int(r)) for r in rows])
        res = run(w0, max_iter)
        cost += res.n_iter + 1
        passes += cost
        accepted = res.objective < best.objective * (1.0 - _IMPROVEMENT)
        records.append(Escape(merged=merged, into=into, rows=rows,
                              start_objective=res.history.initial_objective,
                              objective=res.objective, accepted=accepted, passes=cost,
                              history=res.history))
        if accepted:
            best, sums = res, family.last.sums
        return accepted

    m = sums.weight.shape[0] // BATCH_DIVISOR
    while m > 1 and not out_of_time():
        into, cost = _merge.merge_costs(sums, n_neighbors)
        merged = _cheapest_merges(into, cost, m)
        splits = _costliest(sums, exclude=merged)[:merged.shape[0]]
        merged = merged[:splits.shape[0]]
        if merged.shape[0] < 2 or not attempt(merged, into[merged], sums.pick[splits]):
            m //= 2
    failures = 0
    while True:
        into, cost = _merge.merge_costs(sums, n_neighbors)
        improved = False
        for j, row in _proposals(sums, cost, new_center is not None):
            if failures >= patience or out_of_time():
                return best, records, sums
            rows = None if row < 0 else np.array([row])
            if attempt(np.array([j]), into[[j]], rows):
                failures, improved = 0, True
                break
            failures += 1
        if not improved:
            break
    k = sums.weight.shape[0]
    m = RESPLIT_GROUP
    if not isinstance(getattr(family, "X", None), np.ndarray) or k <= m:
        return best, records, sums
    # the merge-split proposals ran out (small k): re-split groups of neighbouring clusters
    # until every group has failed once in a row
    failures = 0
    labels = family.labels(best.w).copy()
    n = labels.shape[0]
    passes += 1
    order = np.argsort(-sums.cost, kind="stable")
    t = 0
    while failures < min(patience, k) and not out_of_time():
        j = int(order[t % k])
        t += 1
        dist = np.einsum("jd,jd->j", best.w - best.w[j], best.w - best.w[j])
        dist[j] = -1.0
        group = np.sort(np.argsort(dist, kind="stable")[:m])
        rows = np.flatnonzero(np.isin(labels, group))
        failures += 1
        if rows.shape[0] <= m or not family.sw[rows].sum() > 0:
            continue
        centers, local, pairs = local_restarts(family.X, family.sw, rows, m, RESPLIT_RUNS,
                                               draw_seed(rng), family.n_threads)
        local_passes = pairs / (n * k) + rows.shape[0] / n
        passes += local_passes
        if not local < sums.cost[group].sum() * (1.0 - _IMPROVEMENT):
            continue
        w0 = best.w.copy()
        w0[group] = centers
        res = run(w0, max_iter)
        passes += res.n_iter + 1
        cost = res.n_iter + 1 + math.ceil(local_passes)
        accepted = res.objective < best.objective * (1.0 - _IMPROVEMENT)
        records.append(Escape(merged=group, into=group, rows=np.empty(0, dtype=np.int64),
                              start_objective=res.history.initial_objective,
                              objective=res.objective, accepted=accepted, passes=cost,
                              history=res.history, kind="re-split"))
        if accepted:
            best, sums = res, family.last.sums
            labels = family.last.labels.copy()
            order = np.argsort(-sums.cost, kind="stable")
            failures, t = 0, 0
    return best, records, sums


def _cheapest_merges(into: np.ndarray, cost: np.ndarray, m: int) -> np.ndarray:
    """Up to m clusters with the lowest merge costs, no merged cluster receiving another."""
    merged = np.zeros(into.shape[0], dtype=bool)
    receives = np.zeros(into.shape[0], dtype=bool)
    out = []
    for j in np.argsort(cost, kind="stable"):
        if len(out) == m or not np.isfinite(cost[j]):
            break
        if receives[j] or merged[into[j]]:
            continue
        merged[j] = receives[into[j]] = True
        out.append(j)
    return np.array(out, dtype=np.int64)


def _costliest(sums, exclude: np.ndarray = np.empty(0, dtype=np.int64)) -> np.ndarray:
    """Clusters by decreasing cost, those with a cost and a drawn point, but ``exclude``."""
    order = np.argsort(-sums.cost, kind="stable")
    keep = (sums.cost[order] > 0) & (sums.pick[order] >= 0) & ~np.isin(order, exclude)
    return order[keep]


def _proposals(sums, cost, greedy_steps: bool):
    """(cluster to merge, row for its center, or -1: a k-means++ step) in turn: the
    diagonals of (cheapest merge, costliest cluster's drawn point), and, with
    ``greedy_steps``, the cheapest merges with a k-means++ step each."""
    merges = np.argsort(cost, kind="stable")
    merges = merges[np.isfinite(cost[merges])]
    splits = _costliest(sums)
    pairs = ((j, int(sums.pick[c])) for j, c in _pairs(merges, splits))
    if not greedy_steps:
        yield from pairs
        return
    greedy = ((int(j), -1) for j in merges)
    for a, b in zip(pairs, greedy):
        yield a
        yield b


def _pairs(merge_order: np.ndarray, split_order: np.ndarray):
    """(cluster to merge, cluster to split) by the diagonals of the two rankings."""
    a, b = merge_order.shape[0], split_order.shape[0]
    for s in range(a + b - 1):
        for i in range(max(0, s - b + 1), min(a, s + 1)):
            j, c = int(merge_order[i]), int(split_order[s - i])
            if j != c:
                yield j, c
