"""The k-means bound families over the blocks of a Dask array (one pass per iteration).

:class:`DaskSumsFamily` serves "mm" (Lloyd) and "merge-split" from per-cluster sums alone,
with the bounds of :mod:`gmmfast.cluster._merge` chosen on the driver, as in memory; for
the polish (Lloyd's passes to a fixed point) each block keeps its labels and Hamerly bounds
on its worker between passes (:func:`bounded_pass_block`), so a row whose label provably
stays is not searched;
:class:`DaskWalkFamily` serves the paper's random bounds: the walked labels of each block
stay on the workers (n int32, never X) and the walk is fused into the pass: at centers w
each block finds its nearest labels, the value of the previous bound's labels, and walks
with its own share of the slack, (1 - eta) (b_b - F_b) less a rounding margin (the shares
add up to at most v - F(w), so the union of the walks is a valid bound), with its own
random stream (seed, pass, first row).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._validation import exact_sum
from ..core import Selection
from . import _merge
from ._dask_blocks import Blocks, _rows, cluster_sums, reduce_tree, run_pass
from ._dask_tasks import (Part, _block, _empty_part, _topped, _weights, expansion, task_errors,
                          walk_block)
from ._merge import MergeBound
from ._pass import ClusterSums, HamerlyBounds, assign

#: Selections that run on a Dask array.
DASK_SELECTIONS = ("merge-split", "mm", "random")


@dataclass
class BlockBounds:
    """A block's state between the polish's passes, kept on its worker: the labels of the
    last pass and their Hamerly bounds at its centers (20 bytes per row)."""

    labels: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    centers: np.ndarray


def bounded_pass_block(X_b: Any, sw_b: Any, centers: np.ndarray,
                       state: Optional[BlockBounds], check: Any):
    """One block of a Lloyd pass at ``centers`` (the cost, counts and per-cluster sums of
    :func:`~gmmfast.cluster._dask_tasks.pass_block`, no drawn points) from the block's state
    of the last pass: rows whose label provably stays are not searched, the labels and sums
    are those of a full search. Returns the new state and the block's Part."""
    k, d = centers.shape
    X_b, top = _block(X_b, centers.dtype, check)
    n = X_b.shape[0]
    if n == 0:
        return None, _topped(_empty_part(k, d, centers.dtype, True, False, False), top)
    sw = _weights(sw_b, n, centers.dtype, check)
    bounds = HamerlyBounds(X_b)
    if state is not None:          # copied: a task never changes its inputs
        bounds.upper[:], bounds.lower[:] = state.upper, state.lower
        bounds.centers = state.centers
    a = assign(X_b, sw, centers, 1, with_sums=True, bounds=bounds,
               old_labels=None if state is None else state.labels)
    s = a.sums
    part = Part(cost=expansion(a.chunk_costs), counts=np.bincount(a.labels, minlength=k),
                weight=s.weight, resid=s.resid, sse=s.cost, top=top)
    return BlockBounds(a.labels, bounds.upper, bounds.lower, bounds.centers), part


def _persist_pass(data: Blocks, outs: list):
    """The (state, Part) delayed pairs of a pass's blocks: the states persisted (they stay on
    the workers, one per block), the Parts reduced to one on the driver. ``outs`` is emptied
    once submitted, so the pass's inputs (the last pass's states, where the caller holds no
    other reference) are released block by block as the new states are computed."""
    import dask
    data.passes += 1
    with task_errors():
        persisted = dask.persist(*[st for st, _ in outs], reduce_tree([p for _, p in outs]))
    outs.clear()
    return list(persisted[:-1]), data.compute(persisted[-1])[0]


@dataclass
class _Pass:
    w: np.ndarray
    part: Part
    sums: Optional[ClusterSums] = None
    labels: Optional[list] = None       # random: the walked labels of each block (on workers)

    @property
    def objective(self) -> float:
        return exact_sum(self.part.cost)


class _Family:
    """What both dask families share: the blocks, the seed of their random streams, the
    passes made and the cached pass at the latest centers."""

    def __init__(self, data: Blocks, seed: int):
        self.data = data
        self.seed = seed
        self.n_passes = 0
        self._at: Optional[_Pass] = None

    @property
    def last(self) -> Optional[_Pass]:
        """The latest pass (its Part has F's expansion and the nearest-center counts)."""
        return self._at

    def objective(self, w: np.ndarray) -> float:
        return self._pass(w).objective

    def exact_objective(self, w: np.ndarray) -> float:
        """F(w) summed from the rows: every pass over the blocks is exact."""
        return self.objective(w)


class DaskSumsFamily(_Family):
    """MM and merge-split over the blocks of a dask array: one pass per iteration.

    The in-memory :class:`~gmmfast.cluster.KMeansBounds` with its sums,
    with the pass run by :func:`run_pass`; bounds are
    :class:`~gmmfast.cluster._merge.MergeBound` and everything else happens on the
    driver in :mod:`gmmfast.cluster._merge`. Relocated centers are the rows drawn in
    the pass (they travel with the sums), so relocation reads nothing more.
    """

    def __init__(self, data: Blocks, *, n_neighbors: int, relocate_empty: bool, seed: int,
                 bounded: bool = False):
        super().__init__(data, seed)
        self.n_neighbors = n_neighbors
        self.relocate_empty = relocate_empty
        #: bounded ("mm" only): each block's BlockBounds of the last pass, on the workers
        self.bounded = bounded and not relocate_empty
        self._states: Optional[list] = None

    def _pass(self, w: np.ndarray) -> _Pass:
        if self._at is None or self._at.w is not w:
            sample_seed = None
            if self.relocate_empty:     # the in-memory family's seed of this pass
                sample_seed = int(np.random.SeedSequence([self.seed, self.n_passes])
                                  .generate_state(1, np.uint64)[0])
            if self.bounded:
                part = self._bounded_pass(w)
            else:
                part = run_pass(self.data, w, sums=True, sample_seed=sample_seed)
            self.n_passes += 1
            self._at = _Pass(w=w, part=part, sums=cluster_sums(part, w))
        return self._at

    def touching(self, w: np.ndarray) -> MergeBound:
        return _merge.touching(self._pass(w).sums)

    def _bounded_pass(self, w: np.ndarray) -> Part:
        """A pass from every block's state of the last one (none: a full search), the new
        states kept on the workers. The last pass's states are referenced by this pass's
        tasks only, so a worker holds one block's two states only while it computes it (20
        bytes per row in all, not 40)."""
        import dask
        c = dask.delayed(w)
        task = dask.delayed(bounded_pass_block, pure=False, nout=2)
        states, self._states = self._states or [None] * len(self.data.blocks), None
        outs = [task(xb, swb, c, st, check)
                for xb, swb, st, check in zip(self.data.blocks, self.data.sw_blocks, states,
                                              self.data.checks())]
        del states
        self._states, part = _persist_pass(self.data, outs)
        return part

    def row(self, i: int) -> np.ndarray:
        """Row i of X: from the last pass when it was drawn there, else read."""
        a = self._at
        if a is not None and a.sums.pick is not None:
            hit = np.flatnonzero(a.sums.pick == i)
            if hit.shape[0]:
                return np.asarray(a.part.rows[int(hit[0])])
        return _rows(self.data, [i])[0]

    def bound_value(self, bound: MergeBound, w: np.ndarray) -> float:
        return _merge.value(bound, w)

    def minimize(self, bound: MergeBound, w: np.ndarray) -> np.ndarray:
        relocate = None
        s = bound.sums
        if self.relocate_empty and s.pick is not None:
            rows = {int(p): self._at.part.rows[j] for j, p in enumerate(s.pick) if p >= 0} \
                if self._at is not None and self._at.sums is s else {}
            relocate = rows.__getitem__
        return _merge.minimize(bound, relocate)

    def biased_valid(self, w: np.ndarray, threshold: float, bias: Any,
                     rng: np.random.Generator) -> Selection:
        if not (isinstance(bias, str) and bias == "merge-split"):
            raise ValueError(f"selection {bias!r} does not run on a dask array; use one of "
                             f"{DASK_SELECTIONS}.")
        bound = _merge.select(self._pass(w).sums, threshold, self.n_neighbors)
        return Selection(bound, w.shape[0], int(bound.merged.shape[0]))


@dataclass
class WalkBound:
    """A random bound on a dask array: labels on the workers and their sums at ``w``."""

    w: np.ndarray
    labels: list
    value: float            # b(w), exact
    wsum: np.ndarray
    wweight: np.ndarray


class DaskWalkFamily(_Family):
    """The paper's random bounds over the blocks of a dask array, one pass per iteration.

    The pass at w_t (which gives F(w_t) and b_t(w_t) from the labels of b_t, kept on the
    workers) also draws b_{t+1}: every block walks from its nearest labels with its share
    of the slack v_t - F(w_t) (see :func:`walk_block`), so :meth:`random_valid` only checks
    the union against the threshold; if the check fails (it cannot, unless the caller's
    eta differs), a pass without walks returns the touching bound.
    """

    def __init__(self, data: Blocks, *, eta: float, walk_steps: int, seed: int):
        super().__init__(data, seed)
        self.eta = eta
        self.walk_steps = walk_steps
        n = data.n
        steps = (walk_steps * data.sizes) // max(n, 1)
        steps[: walk_steps - int(steps.sum())] += 1
        self.steps = steps

    def _run(self, w: np.ndarray, prev: Optional[WalkBound], walking: bool) -> _Pass:
        import dask
        c = dask.delayed(w)
        task = dask.delayed(walk_block, pure=False, nout=2)
        outs = []
        for b, (xb, swb, o, check) in enumerate(zip(self.data.blocks, self.data.sw_blocks,
                                                    self.data.offsets, self.data.checks())):
            seed = int(np.random.SeedSequence([self.seed, self.n_passes, int(o)])
                       .generate_state(1, np.uint64)[0])
            outs.append(task(xb, swb, c, None if prev is None else prev.labels[b],
                             self.eta if walking else None, int(self.steps[b]), seed, check))
        self.n_passes += 1
        labels, part = _persist_pass(self.data, outs)
        return _Pass(w=w, part=part, labels=labels)

    def _pass(self, w: np.ndarray, prev: Optional[WalkBound] = None) -> _Pass:
        if self._at is None or self._at.w is not w:
            self._at = self._run(w, prev, walking=True)
        return self._at

    def _bound(self, p: _Pass) -> WalkBound:
        return WalkBound(w=p.w, labels=p.labels, value=exact_sum(p.part.walked),
                         wsum=p.part.wsum, wweight=p.part.wweight)

    def touching(self, w: np.ndarray) -> WalkBound:
        self._at = self._run(w, None, walking=False)
        return self._bound(self._at)

    def random_valid(self, w: np.ndarray, threshold: float,
                     rng: np.random.Generator) -> Selection:
        p = self._pass(w)
        bound = self._bound(p)
        if not bound.value <= threshold:
            bound = self.touching(w)
            p = self._at
        return Selection(bound, p.part.proposals, p.part.accepted)

    def bound_value(self, bound: WalkBound, w: np.ndarray) -> float:
        if w is bound.w:
            return bound.value
        return exact_sum(self._pass(w, prev=bound).part.prev)

    def minimize(self, bound: WalkBound, w: np.ndarray) -> np.ndarray:
        new = np.asarray(w, dtype=np.float64).copy()
        full = bound.wweight > 0
        new[full] = bound.wsum[full] / bound.wweight[full, None]
        return new.astype(w.dtype)
