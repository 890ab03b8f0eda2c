"""k-means as a G-MM bound family (paper section 4.1), over the Cython kernels.

A bound is an assignment ``z`` (int32 labels); its value at centers ``w`` is
``b_z(w) = sum_i s_i ||x_i - mu_{z_i}||^2``; its minimiser is the weighted
means. The touching bound at ``w`` is the nearest-center assignment, and a
random valid bound comes from a Metropolis walk over assignments whose cost at
``w`` stays within the threshold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .._kernels import _kmeans as K
from .._kernels._common import openmp_max_threads
from .._validation import (check_int, check_random_state, check_real, check_sample_weight,
                           check_threads, draw_seed)
from ..core import Selection
from ..latent import WALK_BLOCK, repair
from . import _merge, _samplers
from ._samplers import walk_rounds
from .._validation import check_centers, check_data
from ._merge import ClusterSums, MergeBound

CHUNK = K.CHUNK
#: Memory cap for the per-slot cluster sums.
_SLOT_BYTES = 32 << 20
_MAX_SLOTS = 64


def n_slots(n: int, k: int, d: int) -> int:
    """Number of slots for cluster sums: depends on (n, k, d) only, never on threads."""
    n_chunks = -(-n // CHUNK)
    return max(1, min(n_chunks, _MAX_SLOTS, _SLOT_BYTES // (8 * k * (d + 4))))


def total(chunk_costs: np.ndarray) -> float:
    """A cost total from chunk sums: correctly rounded, so independent of any order."""
    return math.fsum(chunk_costs)


def labeling_cost(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                  n_threads: int, point_costs: Optional[np.ndarray] = None) -> float:
    """b_z(w): the cost of ``labels`` at ``centers`` (per point into ``point_costs`` if given)."""
    chunk = np.empty(-(-X.shape[0] // CHUNK))
    K.label_costs(X, sw, centers, labels, chunk,
                  np.empty(0) if point_costs is None else point_costs, n_threads)
    return total(chunk)


def update_centers(X: np.ndarray, sw: np.ndarray, labels: np.ndarray, centers_old: np.ndarray,
                   n_threads: int) -> Tuple[np.ndarray, np.ndarray]:
    """Minimiser of the bound of ``labels``: weighted means; an empty cluster keeps its center.

    Returns the new centers and each cluster's total weight.
    """
    k, d = centers_old.shape
    slots = n_slots(X.shape[0], k, d)
    sums = np.empty((slots, k, d))
    weights = np.empty((slots, k))
    K.accumulate(X, sw, labels, sums, weights, n_threads)
    centers = np.empty_like(centers_old)
    cluster_weights = np.empty(k)
    K.finalize_centers(sums, weights, centers_old, centers, cluster_weights)
    return centers, cluster_weights


@dataclass
class Assignment:
    """One pass of the assignment kernel at centers ``w`` (cached by the family)."""

    w: np.ndarray
    labels: np.ndarray            # nearest-center labels: the touching bound
    objective: float              # F(w)
    changed: int                  # points whose label differs from the previous pass's
    searched: int = 0             # points whose nearest center was searched (not pruned)
    prev_labels: Optional[np.ndarray] = None
    prev_value: float = float("nan")   # b_{prev_labels}(w)
    sums: Optional[ClusterSums] = None  # per-cluster sums of the nearest-center assignment
    chunk_costs: Optional[np.ndarray] = None       # cost totals per CHUNK rows (objective)
    chunk_prev_costs: Optional[np.ndarray] = None  # the same for prev_labels (prev_value)


#: Numbers of centers that moved far, checked row by row instead of lowering every row's
#: bound by their drift, that a pass considers (merge-split relocates a few centers per
#: iteration and moves their receivers): the one with the least predicted work is used.
JUMPED_CANDIDATES = (0, 1, 2, 4, 8, 16, 32)
#: Work of checking one jumped center for a kept row, in units of one center of a full
#: nearest-center search (a scalar distance against the search's blocked SIMD kernel;
#: measured at 1M x 16, k = 100 on AVX2: 9.5 ns against 1.4 ns).
JUMPED_COST = 8.0
#: A pass prunes when at least this fraction of rows is predicted to keep its label.
PRUNE_FRACTION = 0.05


class Bounds:
    """Per-row state of the pruned pass (Hamerly's bounds), for one X.

    For the labels and centers of the last pass (``centers``): ``upper[i]`` is the
    distance of row i to its center and ``lower[i]`` a lower bound on its distance
    to every other center; ``xsq`` is ||x_i||^2 (for the rounding margin). 24
    bytes per row. A pass prunes when :meth:`plan` predicts enough rows keep
    their label; either way it refreshes the bounds.
    """

    def __init__(self, X: np.ndarray):
        n = X.shape[0]
        self.xsq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        self.upper = np.empty(n)
        self.lower = np.empty(n)
        self.centers: Optional[np.ndarray] = None

    def plan(self, centers: np.ndarray, labels: Optional[np.ndarray]
             ) -> Tuple[bool, np.ndarray, np.ndarray, float]:
        """(prune?, drift per center, jumped centers, largest drift of the others) for a pass
        at ``centers`` from ``labels`` (those of the last pass)."""
        none = (False, np.zeros(centers.shape[0]), np.empty(0, dtype=np.int32), 0.0)
        if self.centers is None or self.centers.shape != centers.shape or labels is None:
            return none
        drift = np.sqrt(((centers.astype(np.float64) - self.centers) ** 2).sum(axis=1))
        drift *= 1.0 + 1e-12
        k, n = centers.shape[0], labels.shape[0]
        order = np.argsort(-drift, kind="stable")
        ms = np.array([m for m in JUMPED_CANDIDATES if m < k])
        bases = drift[order[ms]]
        kept = np.empty(ms.shape[0], dtype=np.int64)
        K.predict_kept(labels, self.upper, self.lower, drift, bases, kept)
        # work: kept rows check their m jumped centers, the others search all k
        best = int(np.argmin(kept * (ms * JUMPED_COST + 1.0) + (n - kept) * float(k)))
        jumped = np.sort(order[:ms[best]]).astype(np.int32)
        return (bool(kept[best] >= PRUNE_FRACTION * n), drift, jumped, float(bases[best]))


def assign(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, n_threads: int, *,
           prev_labels: Optional[np.ndarray] = None, with_sums: bool = False,
           sample_seed: Optional[int] = None, old_labels: Optional[np.ndarray] = None,
           point_costs: Optional[np.ndarray] = None, offset: int = 0,
           bounds: Optional[Bounds] = None) -> Assignment:
    """Nearest-center labels and F(w) in one pass over X.

    Optionally also b_{prev_labels}(w), the per-cluster sums of the new clusters
    (``with_sums``), with ``sample_seed`` a point per cluster drawn
    proportionally to its cost, and each row's cost into ``point_costs``.
    ``changed`` counts the labels that differ from ``old_labels`` (all of them
    if None). ``offset`` is the global index of X's first row (a chunk of a
    larger array): drawn points are global row indices. With ``bounds`` (whose
    last pass produced ``old_labels``), rows whose label provably stays are not
    searched; the labels are the same.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_chunks = -(-n // CHUNK)
    labels = (np.full(n, -1, dtype=np.int32) if old_labels is None
              else np.array(old_labels, dtype=np.int32))
    chunk = np.empty(n_chunks)
    chunk_prev = np.empty(n_chunks if prev_labels is not None else 0)
    changed = np.empty(n_chunks, dtype=np.int64)
    searched = np.empty(n_chunks, dtype=np.int64)
    slots = n_slots(n, k, d) if with_sums else 0
    resid = np.empty((slots, k, d))
    weight = np.empty((slots, k))
    cost = np.empty((slots, k))
    sampled = slots if sample_seed is not None else 0
    key = np.empty((sampled, k))
    pick = np.empty((sampled, k), dtype=np.int64)
    none = np.empty(0)
    prune, drift, jumped, base_drift = False, none, np.empty(0, dtype=np.int32), 0.0
    if bounds is not None:
        prune, drift, jumped, base_drift = bounds.plan(centers, old_labels)
    K.kmeans_pass(X, sw, centers, labels,
                  np.empty(0, dtype=np.int32) if prev_labels is None else prev_labels,
                  chunk, chunk_prev, changed, resid, weight, cost, key, pick,
                  0 if sample_seed is None else sample_seed, offset,
                  none if point_costs is None else point_costs,
                  none if bounds is None else bounds.upper,
                  none if bounds is None else bounds.lower,
                  none if bounds is None else bounds.xsq,
                  drift, jumped, base_drift, prune, searched, n_threads)
    if bounds is not None:
        bounds.centers = centers.astype(np.float64)
    objective = total(chunk)
    sums = None
    if with_sums:
        best = np.argmax(key, axis=0) if sampled else None
        sums = ClusterSums(w=centers, weight=weight.sum(axis=0), resid=resid.sum(axis=0),
                           cost=cost.sum(axis=0), objective=objective,
                           pick=pick[best, np.arange(k)] if sampled else None,
                           key=key[best, np.arange(k)] if sampled else None)
    return Assignment(w=centers, labels=labels, objective=objective, changed=int(changed.sum()),
                      searched=int(searched.sum()), prev_labels=prev_labels,
                      prev_value=total(chunk_prev) if prev_labels is not None else float("nan"),
                      sums=sums, chunk_costs=chunk,
                      chunk_prev_costs=chunk_prev if prev_labels is not None else None)


@dataclass
class WalkResult:
    labels: np.ndarray
    costs: np.ndarray     # per-point cost at the walk's centers
    value: float          # exact b_z(w) of the returned labels
    proposals: int
    accepted: int


def walk(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, start: np.ndarray,
         start_value: float, budget: float, n_steps: int, seed: int, n_threads: int,
         block_size: int = WALK_BLOCK) -> WalkResult:
    """Random walk from the valid assignment ``start`` over assignments costing <= ``budget``.

    The points are split into blocks of ``block_size`` (a function of n only);
    each block walks with its own random stream and its share of the slack,
    proportional to its size, so the union of the blocks is valid and the
    result is the same for any thread count. The value of the result is then
    recomputed from scratch; if rounding pushed it over the budget, moves are
    undone (largest cost increase first) until it is valid.
    """
    n = X.shape[0]
    k = centers.shape[0]
    if not start_value <= budget:
        raise ValueError(f"the starting assignment costs {start_value!r}, more than the "
                         f"budget {budget!r}; the walk must start from a valid assignment.")
    labels = start.copy()
    costs = np.empty(n)
    if k < 2 or n_steps == 0:
        labeling_cost(X, sw, centers, labels, n_threads, costs)
        return WalkResult(labels=labels, costs=costs, value=start_value, proposals=0, accepted=0)

    def step(todo, total, budget_, rng, accepted):
        K.walk(X, sw, centers, labels, costs, block_size, todo, total, budget_, rng, accepted,
               n_threads)

    accepted = walk_rounds(X, sw, centers, labels, costs, block_size, budget - start_value,
                           n_steps, seed, n_threads, step)
    value = labeling_cost(X, sw, centers, labels, n_threads)
    if value > budget:
        start_costs = np.empty(n)
        labeling_cost(X, sw, centers, start, n_threads, start_costs)
        value = repair(labels, start, costs, start_costs, budget,
                       lambda z: labeling_cost(X, sw, centers, z, n_threads))
    return WalkResult(labels=labels, costs=costs, value=value, proposals=n_steps,
                      accepted=accepted)


def sample_assignment(X: Any, centers: Any, labels: Any, budget: float, n_steps: int,
                      random_state: Any = None, *, sample_weight: Any = None
                      ) -> Tuple[np.ndarray, float, int]:
    """Sample a k-means bound: a random assignment whose cost at ``centers`` is <= ``budget``.

    A Metropolis random walk (uniform proposals: one point to another cluster;
    accepted iff the total cost stays within ``budget``) started at ``labels``,
    which must itself be within budget. O(d) per proposal; no n x k matrix.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    centers : array-like of shape (n_clusters, n_features)
    labels : array-like of int, shape (n_samples,)
        Valid starting assignment (e.g. the nearest centers).
    budget : float
        Upper limit on sum_i s_i ||x_i - centers[z_i]||^2 (v_{t-1} in the paper).
    n_steps : int
        Number of proposals.
    random_state : None, int or numpy Generator
    sample_weight : array-like of shape (n_samples,), optional

    Returns
    -------
    labels : ndarray of int32, shape (n_samples,)
    cost : float
        The exact cost of the returned labels (<= budget).
    n_accepted : int
        Number of accepted moves.
    """
    X = check_data(X, "X")
    centers = check_centers(centers, X)
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],) or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integers of shape ({X.shape[0]},), got "
                         f"{labels.dtype} of shape {labels.shape}.")
    if labels.size and (labels.min() < 0 or labels.max() >= centers.shape[0]):
        raise ValueError(f"labels must lie in [0, {centers.shape[0] - 1}].")
    n_steps = check_int(n_steps, "n_steps", 0)
    budget = check_real(budget, "budget")
    sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
    labels = np.ascontiguousarray(labels, dtype=np.int32)
    rng = check_random_state(random_state)
    n_threads = openmp_max_threads()
    start_value = labeling_cost(X, sw, centers, labels, n_threads)
    res = walk(X, sw, centers, labels, start_value, float(budget), n_steps, draw_seed(rng),
               n_threads)
    return res.labels, res.value, res.accepted


def balanced_bias(labels: np.ndarray, costs: np.ndarray) -> float:
    """Built-in bias against cluster starvation: entropy of the cluster sizes.

    Larger when points are spread evenly over clusters; an empty or starving
    cluster lowers it. Used by ``selection="balanced"``.
    """
    try:
        labels = np.asarray(labels)
    except ValueError as exc:       # ragged
        raise ValueError(f"labels must be an array of integers: {exc}") from None
    if labels.ndim != 1 or labels.shape[0] == 0 or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be a non-empty 1-D array of integers, got "
                         f"{labels.dtype} of shape {labels.shape}.")
    if labels.min() < 0 or labels.max() > np.iinfo(np.int32).max:
        raise ValueError(f"labels must lie in [0, {np.iinfo(np.int32).max}].")
    try:
        shape = np.shape(costs)
    except ValueError as exc:       # ragged
        raise ValueError(f"costs must be an array of numbers: {exc}") from None
    if shape != labels.shape:
        raise ValueError(f"costs must have the shape of labels {labels.shape}, got {shape}.")
    counts = np.bincount(labels)
    p = counts[counts > 0] / labels.shape[0]
    return float(-(p * np.log(p)).sum())


class KMeansBounds:
    """The k-means bound family for :func:`gmmfast.core.generalized_mm`.

    ``w`` is a (k, d) array of centers of X's dtype. A bound is either an int32
    label array (random and biased selections) or a
    :class:`~gmmfast.cluster._merge.MergeBound` built from per-cluster sums (MM and
    merge-split: then every iteration is one pass over X, and nothing but sums is
    needed to evaluate and minimise a bound). Evaluations at a new ``w`` are fused
    into one pass over X: the pass that finds the nearest centers (F(w) and the
    touching bound) also gives the sums, or the value of the previous label bound.
    Cached results are matched by object identity, so the numbers are those a fresh
    computation would give. ``selection="merge-split"`` in
    :func:`~gmmfast.core.generalized_mm` names :meth:`merge_split`.

    Parameters
    ----------
    X : array of shape (n, d), float32 or float64
    sample_weight : array of shape (n,), non-negative with a positive sum
    walk_steps : int >= 0
        Proposals per random selection.
    n_threads : int >= 1
    n_candidates : int
        Random valid bounds drawn for a biased selection (plus the touching one).
    sampler : {"uniform", "local", "gibbs"}
        How a random valid bound is drawn (see :mod:`gmmfast.cluster._samplers`):
        the paper's walk, the center-graph Metropolis-Hastings walk, or the
        maximum-entropy draw repaired to validity.
    n_neighbors : int
        Neighbours per center in the center graph ("local", "gibbs") and merge
        candidates per cluster (merge-split).
    local_eps : float
        Weight of uniform proposals in the "local" walk.
    relocate_empty : bool
        Minimise a merge bound with empty clusters by moving their centers to
        points of the costliest clusters (any center of an empty cluster
        minimises the bound); otherwise they keep their previous center.
    seed : int
        Seed of the points drawn for relocation (one stream per pass).
    prune : bool
        Skip the nearest-center search of rows whose label provably stays
        (:class:`Bounds`; 24 bytes per row); the results are the same.
    """

    #: Selections :func:`~gmmfast.core.generalized_mm` accepts by name besides "mm", "random".
    named_biases = ("merge-split",)

    def __init__(self, X: np.ndarray, sample_weight: np.ndarray, *, walk_steps: int,
                 n_threads: int, n_candidates: int = 8,
                 block_size: int = WALK_BLOCK, sampler: str = "uniform",
                 n_neighbors: int = 8, local_eps: float = 0.05, relocate_empty: bool = False,
                 seed: int = 0, prune: bool = True):
        X = check_data(X, "X")
        if sampler not in _samplers.SAMPLERS:
            raise ValueError(f"sampler must be one of {_samplers.SAMPLERS}, got {sampler!r}.")
        self.X = X
        self.sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        self.walk_steps = check_int(walk_steps, "walk_steps", 0)
        self.n_threads = check_threads(n_threads)
        self.n_candidates = check_int(n_candidates, "n_candidates", 0)
        self.block_size = check_int(block_size, "block_size", 1)
        self.sampler = sampler
        self.n_neighbors = check_int(n_neighbors, "n_neighbors", 1)
        self.local_eps = check_real(local_eps, "local_eps", 0.0)
        if self.local_eps > 1:
            raise ValueError(f"local_eps must be in [0, 1], got {local_eps!r}.")
        self.relocate_empty = bool(relocate_empty)
        self.seed = check_int(seed, "seed", 0)
        self.bounds = Bounds(X) if prune else None
        self.n_passes = 0
        self._at: Optional[Assignment] = None
        self._picked: Optional[Tuple[np.ndarray, np.ndarray, float]] = None
        self._graph: Optional[Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]] = None
        self._beta: Optional[float] = None

    def _assignment(self, w: np.ndarray, prev_labels: Optional[np.ndarray] = None) -> Assignment:
        a = self._at
        if a is None or a.w is not w:
            if not (isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype == self.X.dtype
                    and w.flags.c_contiguous and w.shape[0] >= 1):
                raise ValueError(f"centers (w) must be a C-contiguous 2-D array of X's dtype "
                                 f"{self.X.dtype} with at least one row, got "
                                 f"{getattr(w, 'dtype', type(w).__name__)} of shape "
                                 f"{np.shape(w)}.")
            check_centers(w, self.X, "centers (w)")
            sample_seed = None
            if self.relocate_empty:
                sample_seed = int(np.random.SeedSequence([self.seed, self.n_passes])
                                  .generate_state(1, np.uint64)[0])
            a = assign(self.X, self.sw, w, self.n_threads, prev_labels=prev_labels,
                       with_sums=True, sample_seed=sample_seed,
                       old_labels=None if a is None else a.labels, bounds=self.bounds)
            self.n_passes += 1
            self._at = a
        return a

    def row(self, i: int) -> np.ndarray:
        """Row i of X (a relocated center)."""
        return self.X[i]

    def new_center(self, others: np.ndarray, rng: np.random.Generator) -> int:
        """The row where a greedy k-means++ step puts one more center next to ``others``."""
        from ._init import new_center
        return new_center(self.X, self.sw, others, rng, self.n_threads)

    @property
    def last(self) -> Optional[Assignment]:
        """The most recent pass (labels, objective, points whose label changed)."""
        return self._at

    def objective(self, w: np.ndarray) -> float:
        return self._assignment(w).objective

    def labels(self, w: np.ndarray) -> np.ndarray:
        """Nearest-center labels at ``w``."""
        return self._assignment(w).labels

    def touching(self, w: np.ndarray) -> Any:
        return _merge.touching(self._assignment(w).sums)

    def bound_value(self, bound: Any, w: np.ndarray) -> float:
        if isinstance(bound, MergeBound):
            return _merge.value(bound, w)
        a = self._at
        if a is not None and a.w is w:
            if bound is a.labels:
                return a.objective
            if bound is a.prev_labels:
                return a.prev_value
        if self._picked is not None and self._picked[0] is bound and self._picked[1] is w:
            return self._picked[2]
        if a is None or a.w is not w:   # a new solution: fuse with its assignment pass
            return self._assignment(w, prev_labels=bound).prev_value
        return labeling_cost(self.X, self.sw, w, bound, self.n_threads)

    def minimize(self, bound: Any, w: np.ndarray) -> np.ndarray:
        if isinstance(bound, MergeBound):
            return _merge.minimize(bound, self.X.__getitem__ if self.relocate_empty else None)
        return update_centers(self.X, self.sw, bound, w, self.n_threads)[0]

    def _center_graph(self, w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        if self._graph is None or self._graph[0] is not w:
            self._graph = (w, _samplers.center_graph(w, self.n_neighbors))
        return self._graph[1]

    def _walk(self, w: np.ndarray, threshold: float, seed: int) -> WalkResult:
        a = self._assignment(w)
        if self.sampler == "uniform" or w.shape[0] < 2:
            return walk(self.X, self.sw, w, a.labels, a.objective, threshold, self.walk_steps,
                        seed, self.n_threads, self.block_size)
        if not a.objective <= threshold:
            raise ValueError(f"the starting assignment costs {a.objective!r}, more than the "
                             f"budget {threshold!r}; the walk must start from a valid "
                             "assignment.")
        X, sw, n_threads = self.X, self.sw, self.n_threads

        def exact(z, point_costs):
            return labeling_cost(X, sw, w, z, n_threads, point_costs)

        graph = self._center_graph(w)
        if self.sampler == "gibbs":
            labels, costs, value, moved, beta = _samplers.gibbs_sample(
                X, sw, w, a.labels, a.objective, threshold, graph, seed, n_threads, exact,
                self._beta)
            if 0 < beta < math.inf:
                self._beta = beta
            return WalkResult(labels=labels, costs=costs, value=value,
                              proposals=X.shape[0], accepted=moved)
        labels = a.labels.copy()
        costs = np.empty(X.shape[0])
        accepted = _samplers.local_walk(X, sw, w, labels, costs, graph, self.local_eps,
                                        self.block_size, threshold - a.objective,
                                        self.walk_steps, seed, n_threads)
        value = exact(labels, None)
        if value > threshold:
            start_costs = np.empty(X.shape[0])
            exact(a.labels, start_costs)
            value = repair(labels, a.labels, costs, start_costs, threshold,
                           lambda z: exact(z, None))
        return WalkResult(labels=labels, costs=costs, value=value, proposals=self.walk_steps,
                          accepted=accepted)

    def random_valid(self, w: np.ndarray, threshold: float,
                     rng: np.random.Generator) -> Selection:
        res = self._walk(w, threshold, draw_seed(rng))
        self._picked = (res.labels, w, res.value)
        return Selection(res.labels, res.proposals, res.accepted)

    def merge_split(self, w: np.ndarray, threshold: float) -> Selection:
        """The touching bound with the clusters cheapest to merge merged, within the threshold.

        See :func:`gmmfast.cluster._merge.select`; with ``relocate_empty`` the
        minimiser then moves the merged clusters' centers into the costliest
        clusters (a merge followed by a split). The Selection's ``proposals`` is
        the number of clusters (candidates) and ``accepted`` the number merged.
        """
        bound = _merge.select(self._assignment(w).sums, threshold, self.n_neighbors)
        return Selection(bound, w.shape[0], int(bound.merged.shape[0]))

    def biased_valid(self, w: np.ndarray, threshold: float, bias: Callable,
                     rng: np.random.Generator) -> Selection:
        """The best of the touching bound and ``n_candidates`` random valid bounds under ``bias``.

        ``bias="merge-split"`` is the built-in :meth:`merge_split` selection.
        """
        if isinstance(bias, str) and bias == "merge-split":
            return self.merge_split(w, threshold)
        a = self._assignment(w)
        costs = np.empty(self.X.shape[0])
        labeling_cost(self.X, self.sw, w, a.labels, self.n_threads, costs)
        best = (float(bias(a.labels, costs)), a.labels, a.objective)
        proposals = accepted = 0
        for _ in range(self.n_candidates):
            res = self._walk(w, threshold, draw_seed(rng))
            proposals += res.proposals
            accepted += res.accepted
            score = float(bias(res.labels, res.costs))
            if score > best[0]:
                best = (score, res.labels, res.value)
        self._picked = (best[1], w, best[2])
        return Selection(best[1], proposals, accepted)
