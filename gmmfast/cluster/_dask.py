"""Rows on Dask: what a k-means fit needs from a row-chunked ``dask.array.Array``.

:class:`DaskRows` is the Dask twin of :class:`~gmmfast.cluster._rows.MemoryRows`: it offers
the fit driver (:mod:`gmmfast.cluster._fit`) the same single-run steps, each one pass (or a
few) over the blocks: seeding (:func:`~gmmfast.cluster._dask_blocks.init_centers`), the bound
families of :mod:`gmmfast.cluster._dask_family`, the labels at the end (a lazy dask array: n
labels may not fit on the driver, and X is not read again unless they are wanted), and the
passes of ``predict``, ``score`` and ``transform``. ``dask`` is imported inside the
functions, so ``import gmmfast`` never imports it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import numpy as np

from .._validation import exact_sum
from ._dask_blocks import as_blocks, draw_sample, init_centers, run_pass
from ._dask_family import DASK_SELECTIONS, DaskSumsFamily, DaskWalkFamily
from ._dask_tasks import predict_block, transform_block
from ._restarts import restarts_fit
from ._rows import MemoryRows, warn_empty_clusters

#: Every row of data up to this size may be gathered to the driver for an explicit ``restarts``
#: count (a G-MM level on every row, :meth:`DaskRows.in_memory`, is bounded by the coarse
#: level's rows instead, as a sample of larger data is).
MAX_GATHER_BYTES = 1 << 28


class DaskRows:
    """A dask array chunked by rows (float32/float64, one chunk across the columns) and its
    sample weights, as blocks; the values are checked in the first pass over them (with
    ``fit``, rows a fit clusters, also against the whole-data limits of an in-memory fit)."""

    where = " on dask,"

    def __init__(self, X: Any, sample_weight: Any = None, fit: bool = False):
        self.data = as_blocks(X, sample_weight, fit)
        self.X = self.data.X
        self.n, self.d = self.X.shape
        self.dtype = self.data.dtype
        self._memory: Optional[MemoryRows] = None

    @property
    def stats(self) -> list:
        """(seconds, bytes received by the driver) of every compute of the fit so far."""
        return list(self.data.stats)

    # -- G-MM's single-run steps -----------------------------------------------------------
    def check(self, p: Any) -> None:
        """Refuse what does not run on a dask array, before any work."""
        if not isinstance(p.selection, str) or p.selection not in DASK_SELECTIONS:
            raise ValueError(f"selection must be one of {DASK_SELECTIONS} on a dask array, got "
                             f"{p.selection!r}.")
        if p.selection == "random" and p.sampler != "uniform":
            raise ValueError(f"sampler must be 'uniform' on a dask array, got {p.sampler!r}.")
        if p.restarts_apply and p.restarts != "auto" \
                and self.n * self.d * self.dtype.itemsize > MAX_GATHER_BYTES:
            raise ValueError(f"restarts={p.restarts} on a dask array gathers every row to the "
                             f"driver, and this one has more than {MAX_GATHER_BYTES >> 20} MiB; "
                             "pass restarts='auto' (none on large data) or 0.")
        if p.init_size is None and isinstance(p.init, str) and p.init == "k-means++":
            raise ValueError("init_size=None with init='k-means++' would take one pass over a "
                             "dask array per center; give init_size (a sample, 'auto' by "
                             "default) or use init='k-means||'.")

    def sample(self, size: int, k: int, rng: np.random.Generator) -> MemoryRows:
        """A uniform sample of about ``size`` rows drawn across the blocks, in memory (the
        rows an in-memory fit of the same rows draws)."""
        return MemoryRows(*draw_sample(self.data, size, k, rng))

    def gathers(self, p: Any) -> bool:
        """Whether G-MM's level runs on every row gathered to the driver: the default search
        (merge-split) on data no larger than its default coarse level (``sample_size="auto"``,
        64 rows per center, at least 20,000, or every row where that sample would hold half
        of them and fewer than 2 d rows per center). Those are at most twice the rows of the
        sample a larger fit gathers for its coarse level, so no size limit applies beyond
        that one."""
        return (isinstance(p.core_selection, str) and p.core_selection == "merge-split"
                and replace(p, sample_size="auto").levels(self.n, self.d)[0] >= self.n)

    def in_memory(self, p: Any) -> Optional[MemoryRows]:
        """Every row, gathered to the driver once and kept until the polish, where
        :meth:`gathers`: the seeding, G-MM and the escapes then run as an in-memory fit of
        the same rows runs them, and only the polish passes over the blocks (summed in
        another order, the escapes' choices could differ). None otherwise (larger data is
        seeded over the blocks, as :func:`~gmmfast.cluster.initial_centers` seeds it)."""
        if not self.gathers(p):
            return None
        if self._memory is None:
            self._memory = self.sample(self.n, p.k, np.random.default_rng(0))  # rng unused
        return self._memory

    def seed(self, p: Any, rng: np.random.Generator) -> np.ndarray:
        """Initial centers: those of the gathered rows where :meth:`in_memory` (or the seeding
        restarts, which gather every row) apply, ``restarts`` then holding their record; else
        over the blocks."""
        self.restarts = None
        rows = self.in_memory(p)
        if rows is None and p.restarts_apply and restarts_fit(self.n, p.k, self.d, p.restarts):
            rows = self.sample(self.n, p.k, rng)     # every row, rng unused
        if rows is not None:
            w0 = rows.seed(p, rng)
            self.restarts = rows.restarts
            return w0
        return init_centers(self.data, p, rng)

    def init_passes(self, p: Any) -> float:
        """The seeding's work in passes over the rows, for the escapes' budget: the in-memory
        figure on gathered rows, else one."""
        rows = self.in_memory(p)
        return 1.0 if rows is None else rows.init_passes(p)

    def family(self, p: Any, selection: Any, seed: int, incremental: bool = False) -> Any:
        """The bound family: that of the gathered rows for a G-MM level :meth:`in_memory`
        keeps on the driver, else over the blocks, every pass exact. ``incremental`` marks
        the polish (Lloyd's passes): it releases the gathered rows, and its blocks keep their
        labels and bounds on the workers between passes."""
        if incremental:
            self._memory = None
        elif self.in_memory(p) is not None:
            return self._memory.family(p, selection, seed)
        if selection == "random":
            return DaskWalkFamily(self.data, eta=p.eta, walk_steps=p.walk_steps, seed=seed)
        return DaskSumsFamily(self.data, n_neighbors=p.n_neighbors,
                              relocate_empty=selection == "merge-split", seed=seed,
                              bounded=incremental and selection == "mm")

    def finish(self, run: Any, k: int) -> Any:
        """The lazy labels at the kept centers; a ConvergenceWarning if clusters are empty
        (counted from the sums of the kept run's last pass, with no pass more)."""
        last = run.family.last
        if run.sums is not None:
            weight = run.sums.weight
        elif last.sums is not None:
            weight = last.sums.weight
        else:
            weight = last.part.counts
        n_empty = int((weight == 0).sum())
        if n_empty:
            warn_empty_clusters(n_empty, k, stacklevel=5)
        return self.predict(run.w)

    # -- a fitted estimator's passes ---------------------------------------------------------
    def predict(self, centers: np.ndarray) -> Any:
        """Nearest centers of the rows: a lazy int32 dask array."""
        c = np.ascontiguousarray(centers, dtype=self.dtype)
        return self.X.map_blocks(predict_block, c, dtype=np.int32, drop_axis=1)

    def transform(self, centers: np.ndarray) -> Any:
        """Distances of the rows to the centers: a lazy dask array (n, k)."""
        c = np.ascontiguousarray(centers, dtype=self.dtype)
        return self.X.map_blocks(transform_block, c, dtype=self.dtype,
                                 chunks=(self.X.chunks[0], (c.shape[0],)))

    def objective(self, centers: np.ndarray) -> float:
        """The k-means objective at ``centers`` (one pass)."""
        c = np.ascontiguousarray(centers, dtype=self.dtype)
        return exact_sum(run_pass(self.data, c, sums=False).cost)
