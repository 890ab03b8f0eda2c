"""k-means as a G-MM bound family (paper section 4.1): :class:`KMeansBounds`.

A bound is an assignment ``z`` (int32 labels); its value at centers ``w`` is
``b_z(w) = sum_i s_i ||x_i - mu_{z_i}||^2``; its minimiser is the weighted
means. The touching bound at ``w`` is the nearest-center assignment, and a
random valid bound comes from a Metropolis walk over assignments whose cost at
``w`` stays within the threshold. Every evaluation at new centers is one pass
(:mod:`gmmfast.cluster._pass`).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .._validation import (check_centers, check_int, check_real, check_rows, check_threads,
                           draw_seed)
from ..core import Selection
from ..latent import WALK_BLOCK, repair
from . import _merge, _samplers
from ._init import new_center
from ._merge import MergeBound
from ._pass import HamerlyBounds, IncrementalLloyd, Pass, assign, labeling_cost, update_centers
from ._samplers import WalkResult, walk


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
        (:class:`~gmmfast.cluster._pass.HamerlyBounds`; 24 bytes per row); the results are
        the same.
    incremental : bool
        For Lloyd's iterations (``selection="mm"``) only: every pass after the first is
        incremental (:class:`~gmmfast.cluster._pass.IncrementalLloyd`): a row whose label
        provably stays costs a scan of its bounds, and the cluster sums change by the rows
        whose label changed. The labels are those of the exact passes; F(w) and the sums
        come from per-cluster moments: F within 1e-12 of F(w_0) (a pass beyond that
        re-anchors them with an exact pass; measured ~1e-16 of F when Lloyd polishes good
        centers, even far from the origin); :meth:`exact_objective` sums F from the rows.
        Other selections refuse it, and so does ``relocate_empty`` (it draws rows in every
        exact pass).
    """

    #: Selections :func:`~gmmfast.core.generalized_mm` accepts by name besides "mm", "random".
    named_biases = ("merge-split",)

    def __init__(self, X: np.ndarray, sample_weight: np.ndarray, *, walk_steps: int,
                 n_threads: int, n_candidates: int = 8,
                 block_size: int = WALK_BLOCK, sampler: str = "uniform",
                 n_neighbors: int = 8, local_eps: float = 0.05, relocate_empty: bool = False,
                 seed: int = 0, prune: bool = True, incremental: bool = False):
        X, sw = check_rows(X, sample_weight, fit=True)
        if incremental and relocate_empty:
            raise ValueError("incremental=True serves Lloyd's iterations (selection='mm'): "
                             "relocate_empty needs the rows drawn in exact passes.")
        if sampler not in _samplers.SAMPLERS:
            raise ValueError(f"sampler must be one of {_samplers.SAMPLERS}, got {sampler!r}.")
        local_eps = check_real(local_eps, "local_eps", 0.0)
        if local_eps > 1:
            raise ValueError(f"local_eps must be in [0, 1], got {local_eps!r}.")
        self._setup(X, sw,
                    walk_steps=check_int(walk_steps, "walk_steps", 0),
                    n_threads=check_threads(n_threads),
                    n_candidates=check_int(n_candidates, "n_candidates", 0),
                    block_size=check_int(block_size, "block_size", 1), sampler=sampler,
                    n_neighbors=check_int(n_neighbors, "n_neighbors", 1), local_eps=local_eps,
                    relocate_empty=bool(relocate_empty), seed=check_int(seed, "seed", 0),
                    prune=bool(prune), incremental=bool(incremental))

    @classmethod
    def from_checked(cls, X: np.ndarray, sample_weight: np.ndarray, **options: Any
                     ) -> "KMeansBounds":
        """The family on data and options its caller has validated (an estimator's fit):
        no second pass over X. ``options`` as for the constructor, all of them given."""
        self = cls.__new__(cls)
        self._setup(X, sample_weight, **options)
        return self

    def _setup(self, X: np.ndarray, sw: np.ndarray, *, walk_steps: int, n_threads: int,
               n_candidates: int, block_size: int = WALK_BLOCK, sampler: str, n_neighbors: int,
               local_eps: float = 0.05, relocate_empty: bool, seed: int,
               prune: bool = True, incremental: bool = False) -> None:
        self.X, self.sw = X, sw
        self.walk_steps, self.n_threads, self.n_candidates = walk_steps, n_threads, n_candidates
        self.block_size, self.sampler, self.n_neighbors = block_size, sampler, n_neighbors
        self.local_eps, self.relocate_empty, self.seed = local_eps, relocate_empty, seed
        self.bounds = HamerlyBounds(X) if prune or incremental else None
        self.incremental = incremental
        self._lazy: Optional[IncrementalLloyd] = None   # after the first pass, if incremental
        self.n_passes = 0
        self._at: Optional[Pass] = None
        self._picked: Optional[Tuple[np.ndarray, np.ndarray, float]] = None
        self._graph: Optional[Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]] = None
        self._beta: Optional[float] = None

    def _assignment(self, w: np.ndarray, prev_labels: Optional[np.ndarray] = None) -> Pass:
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
            if self._lazy is not None and not self._lazy.stale:
                a = self._lazy.step(w)
            else:
                old = None if a is None else a.labels
                if self._lazy is not None:     # stale moments (rounding, Ctrl-C): re-anchor
                    old = self._lazy.labels    # (the labels its bounds are for)
                    self.bounds = self._lazy.release()
                a = assign(self.X, self.sw, w, self.n_threads, prev_labels=prev_labels,
                           with_sums=True, sample_seed=sample_seed, old_labels=old,
                           bounds=self.bounds)
                if self.incremental:     # an exact pass starts the incremental ones
                    self._lazy = IncrementalLloyd(self.X, self.sw, a, self.bounds,
                                                  self.n_threads)
                    self.bounds = None
            self.n_passes += 1
            self._at = a
        return a

    def row(self, i: int) -> np.ndarray:
        """Row i of X (a relocated center)."""
        return self.X[i]

    def new_center(self, others: np.ndarray, rng: np.random.Generator) -> int:
        """The row where a greedy k-means++ step puts one more center next to ``others``."""
        return new_center(self.X, self.sw, others, rng, self.n_threads)

    @property
    def last(self) -> Optional[Pass]:
        """The most recent pass (labels, objective, points whose label changed)."""
        return self._at

    def objective(self, w: np.ndarray) -> float:
        return self._assignment(w).objective

    def labels(self, w: np.ndarray) -> np.ndarray:
        """Nearest-center labels at ``w`` (an array of their own)."""
        a = self._assignment(w)
        return a.labels if self._lazy is None else a.labels.copy()

    def final_labels(self, w: np.ndarray) -> np.ndarray:
        """The labels at ``w`` when the fit is over: after incremental passes, their array
        itself (no copy of n labels), and this family makes no more passes."""
        a = self._assignment(w)
        if self._lazy is None:
            return a.labels
        labels = self._lazy.labels
        self._lazy, self._at = None, None
        return labels

    def exact_objective(self, w: np.ndarray) -> float:
        """F(w) summed from the rows: the pass's own F, or, after an incremental pass (whose
        F comes from the moments), one more read of X (no search)."""
        a = self._assignment(w)
        if not a.exact:
            a.objective = self._lazy.exact_objective(w)
            a.exact = True
        return a.objective

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

    def _exact_passes_only(self, selection: str) -> None:
        if self.incremental:
            raise ValueError(f"selection {selection!r} needs exact passes; incremental=True "
                             "serves Lloyd's iterations (selection='mm') only.")

    def random_valid(self, w: np.ndarray, threshold: float,
                     rng: np.random.Generator) -> Selection:
        self._exact_passes_only("random")
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
        self._exact_passes_only("merge-split")
        bound = _merge.select(self._assignment(w).sums, threshold, self.n_neighbors)
        return Selection(bound, w.shape[0], int(bound.merged.shape[0]))

    def biased_valid(self, w: np.ndarray, threshold: float, bias: Callable,
                     rng: np.random.Generator) -> Selection:
        """The best of the touching bound and ``n_candidates`` random valid bounds under ``bias``.

        ``bias="merge-split"`` is the built-in :meth:`merge_split` selection.
        """
        if isinstance(bias, str) and bias == "merge-split":
            return self.merge_split(w, threshold)
        self._exact_passes_only("a bias")
        a = self._assignment(w)
        costs = np.empty(self.X.shape[0])
        labeling_cost(self.X, self.sw, w, a.labels, self.n_threads, costs)
        best = (_score(bias, a.labels, costs), a.labels, a.objective)
        proposals = accepted = 0
        for _ in range(self.n_candidates):
            res = self._walk(w, threshold, draw_seed(rng))
            proposals += res.proposals
            accepted += res.accepted
            score = _score(bias, res.labels, res.costs)
            if score > best[0]:
                best = (score, res.labels, res.value)
        self._picked = (best[1], w, best[2])
        return Selection(best[1], proposals, accepted)


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _score(bias: Callable, labels: np.ndarray, costs: np.ndarray) -> float:
    """``bias(labels, costs)`` (on read-only views: the labels are the fit's own) as a float;
    a bias that returns no real number, or NaN (which no comparison would rank), is a
    TypeError or ValueError naming selection."""
    s = bias(_read_only(labels), _read_only(costs))
    if np.ndim(s) != 0 or isinstance(s, (str, bytes)) or np.iscomplexobj(s):
        raise TypeError(f"selection: a bias g(labels, costs) must return a real number, got "
                        f"{type(s).__name__}{f' of shape {np.shape(s)}' if np.ndim(s) else ''}.")
    try:
        value = float(s)
    except (TypeError, ValueError):
        raise TypeError(f"selection: a bias g(labels, costs) must return a real number, got "
                        f"{type(s).__name__}.") from None
    if math.isnan(value):
        raise ValueError(f"selection: a bias g(labels, costs) must return a real number, not "
                         f"{s!r}.")
    return value
