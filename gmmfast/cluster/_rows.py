"""Rows in memory: what a k-means fit needs from data held in this process.

:class:`MemoryRows` holds a validated dense array (or, for ``KMeans``, CSR rows) with its
weights and offers the fit driver (:mod:`gmmfast.cluster._fit`) the single-run steps that
depend on where the rows live: seeding, the bound family, the labels at the end, and the
passes of ``predict``, ``score`` and ``transform``. Its Dask twin is
:class:`~gmmfast.cluster._dask.DaskRows`.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional, Union

import numpy as np

from .._kernels._common import openmp_max_threads
from .. import _validation
from .._validation import blas_single_threaded, draw_seed
from ._family import KMeansBounds
from ._init import seed_centers
from ._restarts import restart_centers
from ._pass import (HamerlyBounds, Pass, assign, distances, label_counts, labeling_cost,
                    sample_rows)
from ._sparse import CSRData, SparseBounds, csr_assign, csr_distances, csr_label_distances


class MemoryRows:
    """Validated rows in memory, dense (C-contiguous float32/float64) or CSR
    (:class:`~gmmfast.cluster._sparse.CSRData`), with their sample weights."""

    where = ""
    #: Computes of a scheduler (none in memory; see DaskRows.stats).
    stats = None

    def __init__(self, X: Union[np.ndarray, CSRData], sw: np.ndarray,
                 n_threads: Optional[int] = None):
        self.X, self.sw = X, sw
        self.n_threads = openmp_max_threads() if n_threads is None else n_threads
        self.sparse = isinstance(X, CSRData)
        self.n, self.d = X.shape
        self.dtype = X.dtype
        self._bounds: Any = None

    # -- G-MM's single-run steps -----------------------------------------------------------
    def check(self, p: Any) -> None:
        """Every G-MM option runs in memory."""

    def seed(self, p: Any, rng: np.random.Generator) -> np.ndarray:
        """Initial centers by ``p.init`` (see :class:`~gmmfast.cluster.GMMKMeans`): the best
        of the seeding restarts where they apply and fit the budget (``restarts`` then
        holds their record), else one seeding."""
        self.restarts = None
        if p.restarts_apply and not self.sparse:
            out = restart_centers(self.X, self.sw, p.k, p.restarts, rng, self.n_threads)
            if out is not None:
                w0, self.restarts = out
                return w0
        return seed_centers(self.X, self.sw, p.k, p.init, rng, self.n_threads,
                            self._init_size(p))

    def _init_size(self, p: Any) -> int:
        """Rows k-means++ and k-means|| seed on: all of them unless an integer asks fewer."""
        if p.init_size is None or isinstance(p.init_size, str):
            return self.n
        return min(p.init_size, self.n)

    def sample(self, size: int, k: int, rng: np.random.Generator) -> "MemoryRows":
        """A uniform sample of about ``size`` rows (see :func:`uniform_sample`; the rows a
        Dask array of the same rows would draw), with their weights, in row order."""
        def draw(p: float, seed: int):
            idx = sample_rows(self.n, p, seed, 0, self.n_threads)
            return self.X[idx], self.sw[idx]
        return MemoryRows(*uniform_sample(self.n, size, k, rng, draw), self.n_threads)

    def init_passes(self, p: Any) -> float:
        """The initialisation's work in passes of a k-center search over the data (k-means++:
        one pass per center over the rows it seeded on, each for 3 + int(log k) centers, the
        chosen one and the candidates)."""
        if not isinstance(p.init, str):
            return 0.0
        share = self._init_size(p) / self.n
        if p.init == "k-means++":
            return (3 + int(math.log(p.k))) * share
        if p.init == "k-means||":
            return 7.0 * share
        return 1.0

    def family(self, p: Any, selection: Any, seed: int,
               incremental: bool = False) -> KMeansBounds:
        """The k-means bound family on these rows (no second check of X); with
        ``incremental`` (Lloyd's iterations: selection "mm"), every pass after the first is
        incremental (see :class:`~gmmfast.cluster.KMeansBounds`)."""
        return KMeansBounds.from_checked(
            self.X, self.sw, walk_steps=p.walk_steps, n_threads=self.n_threads,
            n_candidates=p.n_candidates, sampler=p.sampler, n_neighbors=p.n_neighbors,
            relocate_empty=selection == "merge-split", seed=seed,
            incremental=incremental and selection == "mm")

    def finish(self, run: Any, k: int) -> np.ndarray:
        """The labels at the kept centers; a ConvergenceWarning if clusters are empty."""
        labels = run.family.final_labels(run.w)
        _warn_empty(self.X, self.sw, run.w, labels, k, self.n_threads)
        return labels

    # -- a fitted estimator's passes ---------------------------------------------------------
    def assign(self, centers: np.ndarray) -> Pass:
        """Nearest centers and the objective at ``centers`` (one pass)."""
        centers = np.ascontiguousarray(centers, dtype=self.dtype)
        with blas_single_threaded():
            run = csr_assign if self.sparse else assign
            return run(self.X, self.sw, centers, self.n_threads)

    def predict(self, centers: np.ndarray) -> np.ndarray:
        return self.assign(centers).labels

    def objective(self, centers: np.ndarray) -> float:
        return self.assign(centers).objective

    def transform(self, centers: np.ndarray) -> np.ndarray:
        """Euclidean distance of every row to every center, (n, k) of X's dtype."""
        centers = np.ascontiguousarray(centers, dtype=self.dtype)
        if self.sparse:
            return csr_distances(self.X, centers, self.n_threads)
        return distances(self.X, centers, self.n_threads)

    # -- scikit-learn's Lloyd loop (gmmfast.cluster._lloyd) ----------------------------------
    def step(self, centers: np.ndarray, old_labels: Optional[np.ndarray],
             with_sums: bool = True) -> Pass:
        """Labels at ``centers`` and their sums; ``old_labels`` are the last step's. Rows
        whose label provably stays are not searched (Hamerly's bounds, kept across steps)."""
        if self._bounds is None:
            self._bounds = (SparseBounds(self.n) if self.sparse
                            else HamerlyBounds(self.X))
        run = csr_assign if self.sparse else assign
        return run(self.X, self.sw, centers, self.n_threads, with_sums=with_sums,
                   old_labels=old_labels, bounds=self._bounds)

    def sq_distances(self, centers: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """||x_i - c_{labels_i}||^2 of every row (unweighted), float64."""
        if self.sparse:
            return csr_label_distances(self.X, centers, labels, self.n_threads)
        out = np.empty(self.n)
        labeling_cost(self.X, np.ones_like(self.sw), centers, labels, self.n_threads, out)
        return out


def uniform_sample(n: int, size: int, k: int, rng: np.random.Generator, draw: Any):
    """About ``size`` of ``n`` rows, each drawn with probability size / n by ``draw(p, seed)
    -> (rows, weights)`` (row i from the stream (seed, i)), redrawn with twice the
    probability while the sample has fewer than k rows or no weight. With size >= n every row
    is taken and ``rng`` is not used."""
    p = min(1.0, size / n)
    while True:
        seed = draw_seed(rng) if p < 1.0 else 0    # every row: nothing to draw
        rows, weights = draw(p, seed)
        if p >= 1.0 or (rows.shape[0] >= k and weights.sum(dtype=np.float64) > 0):
            return np.ascontiguousarray(rows), np.ascontiguousarray(weights)
        p = min(1.0, 2 * p)


def _warn_empty(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                k: int, n_threads: int) -> None:
    """Warn when the fitted clustering has empty clusters, saying why.

    Identical rows always share a cluster, and a cluster whose rows are not all
    identical has a positive cost; so X has at least (non-empty clusters) +
    (clusters with a positive cost) distinct rows. Only when that bound is below
    k are the rows counted exactly (a sort of X), so the usual case costs one
    count of the labels.
    """
    counts = label_counts(labels, sw, k, n_threads)
    n_empty = int((counts == 0).sum())
    if n_empty == 0:
        return
    costs = np.empty(X.shape[0])
    labeling_cost(X, sw, centers, labels, n_threads, costs)
    cluster_cost = np.bincount(labels, weights=costs, minlength=k)
    if (counts > 0).sum() + (cluster_cost > 0).sum() < k:
        rows = np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1])))
        n_points = np.unique(rows).shape[0]
        if n_points < k:
            warnings.warn(f"X has {n_points} distinct points, fewer than n_clusters ({k}): "
                          f"{n_empty} clusters are empty.", _validation.ConvergenceWarning,
                          stacklevel=5)
            return
    warn_empty_clusters(n_empty, k, stacklevel=6)


def warn_empty_clusters(n_empty: int, k: int, stacklevel: int) -> None:
    """The ConvergenceWarning of a fit that ends with ``n_empty`` of its ``k`` clusters empty
    (``stacklevel`` points at the caller of the estimator's fit)."""
    warnings.warn(f"{n_empty} of the {k} clusters are empty at the end (their centers kept "
                  "their last position); selection='merge-split' (the default) moves empty "
                  "clusters' centers into the costliest clusters.", _validation.ConvergenceWarning,
                  stacklevel=stacklevel)
