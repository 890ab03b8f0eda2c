"""G-MM k-means on a Dask array: one pass over the blocks per iteration, per-cluster sums.

Everything Dask-specific lives here; ``dask`` is imported inside the functions, so
``import gmmfast`` never imports it. :class:`~gmmfast.cluster.GMMKMeans` hands a
``dask.array.Array`` to :func:`fit`, :func:`predict`, :func:`transform` and :func:`score`.

The scheme (DESIGN.md, "Scale"): each block of rows runs the in-memory kernels in one task
(:func:`gmmfast.cluster._bounds.assign`) and returns small per-cluster sums; a tree of
combine tasks adds them up (``SPLIT_EVERY`` inputs per task, a tree fixed by the number of
blocks, so the result never depends on the number of workers); the driver turns the sums
into centers and into the next valid bound with :mod:`gmmfast.cluster._merge`. X is never
gathered, never persisted by the estimator and read once per iteration. Cost totals travel
as exact expansions (lists of floats whose sum is exact) and are rounded once on the driver,
so F(w) is the correctly rounded sum of the chunks' costs, as in memory.

Selections: "mm" (Lloyd) and "merge-split" work from the sums alone. "random" keeps the
walked labels of each block on the workers (n int32, never X) and fuses the walk into the
pass: at centers w each block finds its nearest labels, the value of the previous bound's
labels, and walks with its own share of the slack, (1 - eta) (b_b - F_b) less a rounding
margin (the shares add up to at most v - F(w), so the union of the walks is a valid bound),
with its own random stream (seed, pass, first row).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

from .._kernels import _kmeans as K
from .._kernels._common import openmp_max_threads
from .._validation import (ConvergenceWarning, check_array, check_random_state,
                           check_sample_weight, draw_seed)
from ..core import Selection, generalized_mm
from . import _merge
from ._bounds import CHUNK, assign, n_slots, walk
from ._escape import escape, pass_budget
from ._init import kmeans_parallel, kmeans_plusplus
from ._merge import ClusterSums, MergeBound

#: Inputs per combine task of the tree reduction.
SPLIT_EVERY = 8
#: Relative margin kept out of each block's share of the slack (covers rounding).
_MARGIN = 1e-12
#: Selections that run on a Dask array.
DASK_SELECTIONS = ("merge-split", "mm", "random")


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array``, without importing dask."""
    t = type(X)
    return t.__module__.split(".", 1)[0] == "dask" and hasattr(X, "chunks") and hasattr(X, "dask")


def auto_sample_size(n: int, k: int) -> int:
    """Rows of the sample k-means++ seeds on when ``init_size="auto"`` (bench/scale_dask.py)."""
    return min(n, max(256 * k, 100_000))


# -- exact totals -------------------------------------------------------------------

def expansion(values: Any) -> List[float]:
    """Floats whose exact sum is the exact sum of ``values`` (a few terms, largest first).

    Each term is the correctly rounded remainder (math.fsum), so the list ends when the
    remainder is exactly zero. Combining blocks is list concatenation; ``math.fsum`` of
    the union is the correctly rounded total, whatever the blocks were.
    """
    vals = [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]
    parts: List[float] = []
    while True:
        s = math.fsum(vals + [-p for p in parts])
        if s == 0.0:
            return parts
        parts.append(s)


# -- the partial sums of one block, and their combination ------------------------------

@dataclass
class Part:
    """What one block (or a subtree of blocks) returns to the driver; all fields add up.

    ``cost``: expansion of F(w) (nearest-center costs); ``counts``: rows per nearest
    cluster; merge-split/mm: ``weight``, ``resid``, ``sse`` (ClusterSums) and the draw
    ``key``, ``pick`` (global row), ``rows`` (the picked rows); random: ``prev`` (the
    expansion of the previous labels' cost), ``walked`` (the new labels' cost),
    ``wsum``/``wweight`` (coordinate sums and weights of the new labels), walk counts.
    """

    cost: List[float]
    counts: np.ndarray
    weight: Optional[np.ndarray] = None
    resid: Optional[np.ndarray] = None
    sse: Optional[np.ndarray] = None
    key: Optional[np.ndarray] = None
    pick: Optional[np.ndarray] = None
    rows: Optional[np.ndarray] = None
    prev: Optional[List[float]] = None
    walked: Optional[List[float]] = None
    wsum: Optional[np.ndarray] = None
    wweight: Optional[np.ndarray] = None
    proposals: int = 0
    accepted: int = 0
    extra: Any = None


def combine(*parts: Part) -> Part:
    """The Part of the union of blocks, in block order (the first largest key's pick wins)."""
    out = parts[0]
    for p in parts[1:]:
        out = Part(
            cost=expansion(out.cost + p.cost),
            counts=out.counts + p.counts,
            weight=None if out.weight is None else out.weight + p.weight,
            resid=None if out.resid is None else out.resid + p.resid,
            sse=None if out.sse is None else out.sse + p.sse,
            prev=None if out.prev is None else expansion(out.prev + p.prev),
            walked=None if out.walked is None else expansion(out.walked + p.walked),
            wsum=None if out.wsum is None else out.wsum + p.wsum,
            wweight=None if out.wweight is None else out.wweight + p.wweight,
            proposals=out.proposals + p.proposals, accepted=out.accepted + p.accepted,
            extra=_combine_extra(out.extra, p.extra),
            **_pick_union(out, p))
    return out


def _pick_union(a: Part, b: Part) -> dict:
    if a.key is None:
        return {}
    take = b.key > a.key
    return dict(key=np.where(take, b.key, a.key), pick=np.where(take, b.pick, a.pick),
                rows=np.where(take[:, None], b.rows, a.rows))


def _combine_extra(a: Any, b: Any) -> Any:
    """Init payloads: arrays add up (candidate weights), tuples of row sets concatenate."""
    if a is None:
        return None
    if isinstance(a, tuple):
        return tuple(np.concatenate([x, y]) for x, y in zip(a, b))
    return a + b


def reduce_tree(parts: list) -> Any:
    """A tree of :func:`combine` tasks over delayed Parts (fixed by their number)."""
    import dask
    while len(parts) > 1:
        parts = [dask.delayed(combine, pure=False)(*parts[i:i + SPLIT_EVERY])
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


# -- block tasks ------------------------------------------------------------------------

def _block(X_b: Any, dtype: np.dtype, check: bool) -> np.ndarray:
    X_b = np.ascontiguousarray(X_b, dtype=dtype)
    if check and not np.isfinite(X_b).all():
        raise ValueError("X contains NaN or infinity; all values must be finite.")
    return X_b


def _weights(sw_b: Any, n: int, dtype: np.dtype, check: bool) -> np.ndarray:
    if sw_b is None:
        return np.ones(n, dtype=dtype)
    sw = np.ascontiguousarray(sw_b, dtype=dtype)
    if check and (not np.isfinite(sw).all() or (sw < 0).any()):
        raise ValueError("sample_weight must be finite and >= 0.")
    return sw


def _empty_part(k: int, d: int, dtype: np.dtype, sums: bool, picks: bool, walked: bool) -> Part:
    z = np.zeros
    return Part(cost=[], counts=z(k, dtype=np.int64),
                weight=z(k) if sums else None, resid=z((k, d)) if sums else None,
                sse=z(k) if sums else None,
                key=np.full(k, -np.inf) if picks else None,
                pick=np.full(k, -1, dtype=np.int64) if picks else None,
                rows=z((k, d), dtype=dtype) if picks else None,
                prev=[] if walked else None, walked=[] if walked else None,
                wsum=z((k, d)) if walked else None, wweight=z(k) if walked else None)


def pass_block(X_b: Any, sw_b: Any, centers: np.ndarray, offset: int, sums: bool,
               sample_seed: Optional[int], check: bool) -> Part:
    """One block of a pass at ``centers``: the nearest-center cost, counts and (``sums``)
    the per-cluster sums of :class:`~gmmfast.cluster._merge.ClusterSums`, with a point
    drawn per cluster (``sample_seed``) and its row, for merge-split's relocation."""
    k, d = centers.shape
    X_b = _block(X_b, centers.dtype, check)
    n = X_b.shape[0]
    picks = sample_seed is not None
    if n == 0:                  # the kernel leaves the slot sums unset for zero rows
        return _empty_part(k, d, centers.dtype, sums, picks, False)
    sw = _weights(sw_b, n, centers.dtype, check)
    a = assign(X_b, sw, centers, 1, with_sums=sums, sample_seed=sample_seed, offset=offset)
    part = Part(cost=expansion(a.chunk_costs), counts=np.bincount(a.labels, minlength=k))
    if sums:
        s = a.sums
        part.weight, part.resid, part.sse = s.weight, s.resid, s.cost
        if picks:
            part.key, part.pick = s.key, s.pick
            part.rows = np.zeros((k, d), dtype=centers.dtype)
            mine = s.pick >= 0
            part.rows[mine] = X_b[s.pick[mine] - offset]
    return part


def walk_block(X_b: Any, sw_b: Any, centers: np.ndarray, prev: Optional[np.ndarray],
               eta: Optional[float], n_steps: int, seed: int, check: bool):
    """One block of a random-selection pass at ``centers``: nearest labels, the previous
    labels' cost, and a walk from the nearest labels with the block's share of the slack,
    (1 - eta) (b_b - F_b) less a rounding margin (no walk if ``eta`` is None). Returns the
    new labels (kept on the worker) and the block's Part."""
    k, d = centers.shape
    X_b = _block(X_b, centers.dtype, check)
    n = X_b.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int32), _empty_part(k, d, centers.dtype, False, False, True)
    sw = _weights(sw_b, n, centers.dtype, check)
    a = assign(X_b, sw, centers, 1, prev_labels=prev)
    f_b = math.fsum(a.chunk_costs)
    b_b = math.fsum(a.chunk_prev_costs) if prev is not None else f_b
    labels, proposals, accepted = a.labels, 0, 0
    slack = 0.0 if eta is None else (1.0 - eta) * (b_b - f_b) - _MARGIN * (abs(f_b) + abs(b_b))
    if slack > 0 and n_steps > 0 and k > 1:
        res = walk(X_b, sw, centers, a.labels, f_b, f_b + slack, n_steps, seed, 1)
        labels, proposals, accepted = res.labels, res.proposals, res.accepted
    chunk = np.empty(-(-n // CHUNK))
    K.label_costs(X_b, sw, centers, labels, chunk, np.empty(0), 1)
    slots = n_slots(n, k, d)
    S, W = np.empty((slots, k, d)), np.empty((slots, k))
    K.accumulate(X_b, sw, labels, S, W, 1)
    part = Part(cost=expansion(a.chunk_costs), counts=np.bincount(a.labels, minlength=k),
                prev=expansion(a.chunk_prev_costs) if prev is not None else list(
                    expansion(a.chunk_costs)),
                walked=expansion(chunk), wsum=S.sum(axis=0), wweight=W.sum(axis=0),
                proposals=proposals, accepted=accepted)
    return labels, part


# -- the data as blocks ----------------------------------------------------------------

@dataclass
class Blocks:
    """A row-chunked dask array as its blocks: delayed blocks of X and of the weights,
    the global index of each block's first row, and whether the first pass still has to
    check the values (finite X, finite non-negative weights)."""

    X: Any
    blocks: list
    sw_blocks: list
    offsets: np.ndarray
    sizes: np.ndarray
    dtype: np.dtype
    weighted: bool
    unchecked: bool = True
    passes: int = 0
    stats: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    def check_now(self) -> bool:
        check, self.unchecked = self.unchecked, False
        return check

    def compute(self, *objs):
        """dask.compute, recording the seconds and the bytes the driver received."""
        import dask
        t0 = time.perf_counter()
        out = dask.compute(*objs)
        self.stats.append((time.perf_counter() - t0, _nbytes(out)))
        return out


def _nbytes(obj: Any) -> int:
    import pickle
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def float_rows(X: Any) -> Any:
    """The dask array validated by shape and dtype (values are checked in the first pass),
    as float32/float64 with one chunk across the columns."""
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got a {X.ndim}-D dask array of shape "
                         f"{X.shape}.")
    if any(math.isnan(s) for s in X.shape):
        raise ValueError("X has unknown chunk sizes (nan in its shape); call "
                         "X.compute_chunk_sizes() first.")
    if X.shape[0] == 0:
        raise ValueError(f"X is empty: found array with 0 sample(s) (shape={X.shape}); at "
                         "least 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         "required.")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must contain real numbers, got dtype {X.dtype}.")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X


def as_blocks(X: Any, sample_weight: Any) -> Blocks:
    """The dask array (see :func:`float_rows`) and the sample weights as row blocks."""
    import dask.array as da
    X = float_rows(X)
    sizes = np.asarray(X.chunks[0], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    blocks = list(X.to_delayed().ravel())
    weighted = sample_weight is not None
    if not weighted:
        sw_blocks = [None] * len(blocks)
    elif is_dask_array(sample_weight):
        if sample_weight.shape != (X.shape[0],):
            raise ValueError(f"sample_weight must have shape ({X.shape[0]},), got "
                             f"{sample_weight.shape}.")
        sw = sample_weight.astype(X.dtype).rechunk((X.chunks[0],))
        total, low, finite = da.compute(sw.sum(dtype=np.float64), sw.min(),
                                        da.isfinite(sw).all())
        if not finite or low < 0:
            raise ValueError("sample_weight must be finite and >= 0.")
        if not total > 0:
            raise ValueError("sample_weight must have a positive sum; all weights are zero.")
        sw_blocks = list(sw.to_delayed().ravel())
    else:   # in memory: validated here, sent to the workers once (not with every pass)
        sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        import dask
        sw_blocks = list(dask.persist(*[dask.delayed(sw[o:o + s])
                                        for o, s in zip(offsets, sizes)]))
    return Blocks(X=X, blocks=blocks, sw_blocks=sw_blocks, offsets=offsets, sizes=sizes,
                  dtype=X.dtype, weighted=weighted)


def run_pass(data: Blocks, centers: np.ndarray, *, sums: bool = True,
             sample_seed: Optional[int] = None) -> Part:
    """One pass over the blocks at ``centers``, reduced to one Part on the driver."""
    import dask
    c = dask.delayed(centers)
    check = data.check_now()
    task = dask.delayed(pass_block, pure=False)
    parts = [task(xb, swb, c, int(o), sums, sample_seed, check)
             for xb, swb, o in zip(data.blocks, data.sw_blocks, data.offsets)]
    data.passes += 1
    return data.compute(reduce_tree(parts))[0]


def cluster_sums(part: Part, w: np.ndarray) -> ClusterSums:
    return ClusterSums(w=w, weight=part.weight, resid=part.resid, cost=part.sse,
                       objective=math.fsum(part.cost), pick=part.pick, key=part.key)


# -- bound families -----------------------------------------------------------------------

@dataclass
class _Pass:
    w: np.ndarray
    part: Part
    sums: Optional[ClusterSums] = None
    labels: Optional[list] = None       # random: the walked labels of each block (on workers)

    @property
    def objective(self) -> float:
        return math.fsum(self.part.cost)


class _Family:
    """What both dask families share: the cached pass at the latest centers."""

    _at: Optional[_Pass] = None

    def _pass(self, w: np.ndarray) -> _Pass:
        raise NotImplementedError

    @property
    def last(self) -> Optional[_Pass]:
        """The latest pass (its Part has F's expansion and the nearest-center counts)."""
        return self._at

    def objective(self, w: np.ndarray) -> float:
        return self._pass(w).objective


class DaskSumsBounds(_Family):
    """MM and merge-split over the blocks of a dask array: one pass per iteration.

    The in-memory :class:`~gmmfast.cluster._bounds.KMeansBounds` with ``sums=True``,
    with the pass run by :func:`run_pass`; bounds are
    :class:`~gmmfast.cluster._merge.MergeBound` and everything else happens on the
    driver in :mod:`gmmfast.cluster._merge`. Relocated centers are the rows drawn in
    the pass (they travel with the sums), so relocation reads nothing more.
    """

    def __init__(self, data: Blocks, *, n_neighbors: int, relocate_empty: bool, seed: int):
        self.data = data
        self.n_neighbors = n_neighbors
        self.relocate_empty = relocate_empty
        self.seed = seed
        self.n_passes = 0
        self._at: Optional[_Pass] = None

    def _pass(self, w: np.ndarray) -> _Pass:
        if self._at is None or self._at.w is not w:
            sample_seed = None
            if self.relocate_empty:     # the in-memory family's seed of this pass
                sample_seed = int(np.random.SeedSequence([self.seed, self.n_passes])
                                  .generate_state(1, np.uint64)[0])
            part = run_pass(self.data, w, sums=True, sample_seed=sample_seed)
            self.n_passes += 1
            self._at = _Pass(w=w, part=part, sums=cluster_sums(part, w))
        return self._at

    def touching(self, w: np.ndarray) -> MergeBound:
        return _merge.touching(self._pass(w).sums)

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


class DaskWalkBounds(_Family):
    """The paper's random bounds over the blocks of a dask array, one pass per iteration.

    The pass at w_t (which gives F(w_t) and b_t(w_t) from the labels of b_t, kept on the
    workers) also draws b_{t+1}: every block walks from its nearest labels with its share
    of the slack v_t - F(w_t) (see :func:`walk_block`), so :meth:`random_valid` only checks
    the union against the threshold; if the check fails (it cannot, unless the caller's
    eta differs), a pass without walks returns the touching bound.
    """

    def __init__(self, data: Blocks, *, eta: float, walk_steps: int, seed: int):
        self.data = data
        self.eta = eta
        self.walk_steps = walk_steps
        self.seed = seed
        self.n_passes = 0
        self._at: Optional[_Pass] = None
        n = data.n
        steps = (walk_steps * data.sizes) // max(n, 1)
        steps[: walk_steps - int(steps.sum())] += 1
        self.steps = steps

    def _run(self, w: np.ndarray, prev: Optional[WalkBound], walking: bool) -> _Pass:
        import dask
        c = dask.delayed(w)
        check = self.data.check_now()
        task = dask.delayed(walk_block, pure=False, nout=2)
        outs = []
        for b, (xb, swb, o) in enumerate(zip(self.data.blocks, self.data.sw_blocks,
                                             self.data.offsets)):
            seed = int(np.random.SeedSequence([self.seed, self.n_passes, int(o)])
                       .generate_state(1, np.uint64)[0])
            outs.append(task(xb, swb, c, None if prev is None else prev.labels[b],
                             self.eta if walking else None, int(self.steps[b]), seed, check))
        labels = [lab for lab, _ in outs]
        parts = [p for _, p in outs]
        self.n_passes += 1
        self.data.passes += 1
        persisted = dask.persist(*labels, reduce_tree(parts))
        labels, root = list(persisted[:-1]), persisted[-1]
        part = self.data.compute(root)[0]
        return _Pass(w=w, part=part, labels=labels)

    def _pass(self, w: np.ndarray, prev: Optional[WalkBound] = None) -> _Pass:
        if self._at is None or self._at.w is not w:
            self._at = self._run(w, prev, walking=True)
        return self._at

    def _bound(self, p: _Pass) -> WalkBound:
        return WalkBound(w=p.w, labels=p.labels, value=math.fsum(p.part.walked),
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
        return math.fsum(self._pass(w, prev=bound).part.prev)

    def minimize(self, bound: WalkBound, w: np.ndarray) -> np.ndarray:
        new = np.asarray(w, dtype=np.float64).copy()
        full = bound.wweight > 0
        new[full] = bound.wsum[full] / bound.wweight[full, None]
        return new.astype(w.dtype)


# -- initialisation over the blocks ------------------------------------------------------

def sample_block(X_b: Any, sw_b: Any, offset: int, p: float, seed: int, dtype: np.dtype,
                 check: bool) -> Part:
    """The block's rows drawn with probability ``p`` each (stream (seed, global row)), and
    their weights: a uniform sample across blocks that no chunking changes."""
    X_b = _block(X_b, dtype, check)
    n = X_b.shape[0]
    sw = _weights(sw_b, n, dtype, check)
    drawn = np.zeros(n, dtype=np.uint8)
    K.draw_rows(np.ones(n), p, seed, offset, drawn, 1)
    idx = np.flatnonzero(drawn)
    return Part(cost=[], counts=np.zeros(0, dtype=np.int64), extra=(X_b[idx], sw[idx]))


def parallel_update(X_b: Any, sw_b: Any, state: Any, new: np.ndarray, base: int, n_cand: int,
                    check: bool):
    """k-means|| on one block: D_i = min(D_i, s_i ||x_i - c||^2) over the new candidates
    (numbered from ``base``) and the nearest candidate of each row. Returns the state
    (D, nearest; kept on the worker) and a Part with the expansion of sum D and the
    weight of the rows nearest each of the ``n_cand`` candidates."""
    X_b = _block(X_b, new.dtype, check)
    n = X_b.shape[0]
    sw = _weights(sw_b, n, new.dtype, check)
    if state is None:
        state = (np.full(n, np.inf), np.full(n, -1, dtype=np.int64))
    dist, near = state
    if n:
        costs = np.empty(n)
        a = assign(X_b, sw, new, 1, point_costs=costs)
        closer = costs < dist
        dist[closer] = costs[closer]
        near[closer] = base + a.labels[closer]
    weight = np.bincount(near[near >= 0], weights=sw[near >= 0].astype(np.float64),
                         minlength=n_cand)
    return (dist, near), Part(cost=expansion(dist), counts=np.zeros(0, dtype=np.int64),
                              extra=weight)


def parallel_draw(X_b: Any, state: Any, scale: float, seed: int, offset: int,
                  dtype: np.dtype) -> Part:
    """k-means|| oversampling on one block: row i with probability min(1, scale D_i),
    from the stream (seed, offset + i) of :func:`K.draw_rows` (so chunking changes nothing)."""
    X_b = _block(X_b, dtype, False)
    dist = state[0]
    drawn = np.zeros(dist.shape[0], dtype=np.uint8)
    K.draw_rows(dist, scale, seed, offset, drawn, 1)
    idx = np.flatnonzero(drawn)
    return Part(cost=[], counts=np.zeros(0, dtype=np.int64), extra=(X_b[idx],))


def _rows(data: Blocks, idx: Any) -> np.ndarray:
    """Rows ``idx`` of X (in that order), reading only the blocks that hold them."""
    idx = np.asarray(idx, dtype=np.int64)
    order = np.argsort(idx, kind="stable")
    rows = np.empty((idx.shape[0], data.X.shape[1]), dtype=data.dtype)
    rows[order] = data.compute(data.X[idx[order]])[0]
    return rows


def _first_row(data: Blocks, rng: np.random.Generator) -> int:
    """A row drawn with probability proportional to its weight."""
    if not data.weighted:
        return int(rng.integers(data.n))
    import dask
    totals = np.array([math.fsum(e) for e in data.compute(
        *[dask.delayed(expansion)(swb) for swb in data.sw_blocks])])
    u = rng.random() * math.fsum(totals)
    cum = np.cumsum(totals)
    b = min(int(np.searchsorted(cum, u, side="right")), len(totals) - 1)
    sw_b = np.asarray(data.compute(data.sw_blocks[b])[0], dtype=np.float64)
    within = np.cumsum(sw_b)
    r = u - (cum[b - 1] if b else 0.0)
    i = min(int(np.searchsorted(within, r, side="right")), sw_b.shape[0] - 1)
    while sw_b[i] <= 0 and i > 0:       # rounding put the target past the last weighted row
        i -= 1
    return int(data.offsets[b]) + i


def draw_sample(data: Blocks, size: int, k: int, rng: np.random.Generator):
    """About ``size`` rows drawn uniformly across the blocks (each row with probability
    size / n) with their weights; redrawn larger if it has fewer than k rows or no weight.
    With size >= n every row is taken and ``rng`` is not used (so seeding on it is the
    in-memory seeding)."""
    import dask
    p = min(1.0, size / data.n)
    task = dask.delayed(sample_block, pure=False)
    while True:
        seed = draw_seed(rng) if p < 1.0 else 0    # every row: nothing to draw
        check = data.check_now()
        parts = [task(xb, swb, int(o), p, seed, data.dtype, check)
                 for xb, swb, o in zip(data.blocks, data.sw_blocks, data.offsets)]
        data.passes += 1
        rows, weights = data.compute(reduce_tree(parts))[0].extra
        if p >= 1.0 or (rows.shape[0] >= k and weights.sum(dtype=np.float64) > 0):
            return np.ascontiguousarray(rows), np.ascontiguousarray(weights)
        p = min(1.0, 2 * p)


def _n_distinct(rows: np.ndarray) -> int:
    rows = np.ascontiguousarray(rows)
    return np.unique(rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))).shape[0]


def kmeans_parallel_blocks(data: Blocks, k: int, rng: np.random.Generator, *,
                           oversampling: float = 2.0, rounds: int = 5) -> np.ndarray:
    """k-means|| (Bahmani et al. 2012) over the blocks, as :func:`kmeans_parallel` in memory.

    Each round is a pass that lowers D with the new candidates (D and the nearest candidate
    stay on the workers: 12 bytes per row, released at the end) and a pass that draws the
    next candidates with :func:`K.draw_rows` by global row index, then a weighted greedy
    k-means++ on the driver. Rounds go on past ``rounds`` while there are fewer than k
    distinct candidates and D is not zero. Nothing depends on the chunking or the workers
    (the first row aside, when weights are not all equal: then rounding may).
    """
    import dask
    ell = float(oversampling) * k
    new = _rows(data, [_first_row(data, rng)])
    cand = [new]
    n_cand = 1
    states: list = [None] * len(data.blocks)
    update = dask.delayed(parallel_update, pure=False, nout=2)
    draw = dask.delayed(parallel_draw, pure=False)

    def lower(new: np.ndarray, base: int) -> Part:
        nonlocal states
        c = dask.delayed(new)
        check = data.check_now()
        outs = [update(xb, swb, st, c, base, n_cand, check)
                for xb, swb, st in zip(data.blocks, data.sw_blocks, states)]
        data.passes += 1
        done = dask.persist(*[o[0] for o in outs], reduce_tree([o[1] for o in outs]))
        states = list(done[:-1])
        return data.compute(done[-1])[0]

    part = lower(new, 0)
    for r in range(10 * max(int(rounds), 1)):
        phi = math.fsum(part.cost)
        if not phi > 0 or (r >= rounds and _n_distinct(np.concatenate(cand)) >= k):
            break
        seed = draw_seed(rng)
        parts = [draw(xb, st, ell / phi, seed, int(o), data.dtype)
                 for xb, st, o in zip(data.blocks, states, data.offsets)]
        data.passes += 1
        rows = data.compute(reduce_tree(parts))[0].extra[0]
        if rows.shape[0]:
            cand.append(rows)
            n_cand += rows.shape[0]
            part = lower(np.ascontiguousarray(rows), n_cand - rows.shape[0])
    states = []
    C = np.ascontiguousarray(np.concatenate(cand))
    return kmeans_plusplus(C, k, part.extra.astype(data.dtype), rng,
                           n_threads=openmp_max_threads())


def partition_block(X_b: Any, sw_b: Any, k: int, seed: int, dtype: np.dtype,
                    check: bool) -> Part:
    """Random partition of one block (its own stream): coordinate sums and weights."""
    X_b = _block(X_b, dtype, check)
    n = X_b.shape[0]
    sw = _weights(sw_b, n, dtype, check)
    labels = np.random.default_rng(seed).integers(0, k, size=n).astype(np.int32)
    d = X_b.shape[1]
    slots = n_slots(n, k, d) if n else 1
    S, W = np.zeros((slots, k, d)), np.zeros((slots, k))
    if n:
        K.accumulate(X_b, sw, labels, S, W, 1)
    return Part(cost=[], counts=np.zeros(k, dtype=np.int64), wsum=S.sum(axis=0),
                wweight=W.sum(axis=0), walked=[], prev=[])


def init_centers(est: Any, data: Blocks, p: dict, rng: np.random.Generator) -> np.ndarray:
    """Initial centers on a dask array (see :func:`fit` for what each ``init`` does)."""
    import dask
    k, init, n = p["k"], p["init"], data.n
    if isinstance(init, np.ndarray):
        return init.copy()
    if callable(init):
        centers = check_array(init(data.X, k, rng), "init(X, n_clusters, random_state)",
                              dtype=data.dtype)
        if centers.shape != (k, data.X.shape[1]):
            raise ValueError(f"init callable must return an array of shape ({k}, "
                             f"{data.X.shape[1]}), got {centers.shape}.")
        return centers
    if init in ("k-means++", "k-means||"):
        size = est.init_size
        if isinstance(size, str):            # "auto"
            size = auto_sample_size(n, k) if init == "k-means++" else None
        if size is not None and size < n:
            S, sw = draw_sample(data, size, k, rng)
            seed = kmeans_plusplus if init == "k-means++" else kmeans_parallel
            return seed(S, k, sw, rng, n_threads=openmp_max_threads())
        if init == "k-means||":
            return kmeans_parallel_blocks(data, k, rng)
        S, sw = draw_sample(data, n, k, rng)    # init_size >= n: all rows, as asked
        return kmeans_plusplus(S, k, sw, rng, n_threads=openmp_max_threads())
    forgy = _rows(data, rng.choice(n, size=k, replace=False))
    if init == "forgy":
        return forgy
    seed = draw_seed(rng)               # random partition, a stream per block
    task = dask.delayed(partition_block, pure=False)
    check = data.check_now()
    parts = [task(xb, swb, k, int(np.random.SeedSequence([seed, int(o)]).generate_state(
        1, np.uint64)[0]), data.dtype, check)
        for xb, swb, o in zip(data.blocks, data.sw_blocks, data.offsets)]
    data.passes += 1
    part = data.compute(reduce_tree(parts))[0]
    full = part.wweight > 0
    centers = forgy.astype(np.float64)
    centers[full] = part.wsum[full] / part.wweight[full, None]
    return centers.astype(data.dtype)


# -- the estimator's entry points --------------------------------------------------------

def fit(est: Any, X: Any, sample_weight: Any = None) -> Any:
    """``GMMKMeans.fit`` on a dask array (see :class:`~gmmfast.cluster.GMMKMeans`).

    ``labels_`` is a lazy dask array (the nearest centers, computed when asked: n labels
    may not fit on the driver, and X is not read again unless they are wanted);
    ``cluster_centers_``, ``inertia_``, ``n_iter_`` and ``history_`` are as in memory.
    ``init="k-means++"`` seeds on a uniform sample of ``init_size`` rows drawn across the
    blocks ("auto": :func:`auto_sample_size`); ``init="k-means||"`` runs over all blocks
    (:func:`kmeans_parallel_blocks`) unless ``init_size`` is an integer.
    """
    X = float_rows(X)
    p = est._check_params(X)
    selection, eta = p["selection"], p["eta"]
    if not isinstance(selection, str) or selection not in DASK_SELECTIONS:
        raise ValueError(f"selection must be one of {DASK_SELECTIONS} on a dask array, got "
                         f"{selection!r}.")
    if selection == "random" and p["sampler"] != "uniform":
        raise ValueError(f"sampler must be 'uniform' on a dask array, got {p['sampler']!r}.")
    if est.init_size is None and isinstance(p["init"], str) and p["init"] == "k-means++":
        raise ValueError("init_size=None with init='k-means++' would take one pass over a "
                         "dask array per center; give init_size (a sample, 'auto' by "
                         "default) or use init='k-means||'.")
    if selection in ("random", "merge-split") and eta == 1.0:
        selection = "mm"
    rng = check_random_state(est.random_state)
    data = as_blocks(X, sample_weight)
    best: Optional[tuple] = None
    for run in range(p["n_init"]):
        t0 = time.perf_counter()
        w0 = init_centers(est, data, p, rng)
        if p["verbose"]:
            print(f"G-MM k-means on dask, run {run + 1}/{p['n_init']}: initialisation "
                  f"({p['init'] if isinstance(p['init'], str) else 'given'}) "
                  f"{time.perf_counter() - t0:.2f} s", flush=True)
        seed = draw_seed(rng)
        if selection == "random":
            family: Any = DaskWalkBounds(data, eta=eta, walk_steps=p["walk_steps"], seed=seed)
        else:
            family = DaskSumsBounds(data, n_neighbors=p["n_neighbors"],
                                    relocate_empty=selection == "merge-split", seed=seed)
        callback = None
        if p["verbose"]:
            def callback(t, history):
                print(f"  iteration {t}: objective {history.objective[-1]:.6g}, gap "
                      f"{history.gap[-1]:.3g}, {history.time[-1]:.2f} s", flush=True)
        res = generalized_mm(family, w0, eta=eta, tol=p["tol"], max_iter=p["max_iter"],
                             selection=selection, random_state=rng, callback=callback)
        main, escapes, weight = res, [], family.last.sums.weight if selection != "random" \
            else family.last.part.counts
        if selection == "merge-split":   # escapes by the costliest clusters' drawn points
            res, escapes, sums = escape(
                family, res,
                lambda w, iters: generalized_mm(family, w, eta=eta, tol=p["tol"],
                                                max_iter=iters, selection=selection,
                                                random_state=rng, callback=callback),
                rng, n_neighbors=p["n_neighbors"], patience=p["patience"],
                max_iter=p["max_iter"], max_time=p["max_time"],
                max_passes=pass_budget(p["escape_effort"], 1.0, res.n_iter, data.X.shape[0],
                                       p["k"], data.X.shape[1]))
            weight = sums.weight
        if best is None or res.objective < best[0].objective:
            best = (res, main, escapes, weight)
    best, main, escapes, weight = best
    n_empty = int((weight == 0).sum())
    if n_empty:
        warnings.warn(f"{n_empty} of the {p['k']} clusters are empty at the end (their "
                      "centers kept their last position); selection='merge-split' (the "
                      "default) moves empty clusters' centers into the costliest clusters.",
                      ConvergenceWarning, stacklevel=3)
    est.cluster_centers_ = best.w
    est.labels_ = _labels(data.X, best.w)
    est.inertia_ = best.objective
    est.n_iter_ = main.n_iter + sum(e.history.n_iter for e in escapes)
    est.history_ = main.history
    est.escapes_ = escapes
    est.n_features_in_ = data.X.shape[1]
    est._dask_passes = list(data.stats)
    est._fitted = True
    return est


def _predict_block(X_b: Any, centers: np.ndarray) -> np.ndarray:
    X_b = _block(X_b, centers.dtype, True)
    if X_b.shape[0] == 0:
        return np.empty(0, dtype=np.int32)
    return assign(X_b, np.ones(X_b.shape[0], dtype=centers.dtype), centers, 1).labels


def _transform_block(X_b: Any, centers: np.ndarray) -> np.ndarray:
    X_b = _block(X_b, centers.dtype, True)
    out = np.empty((X_b.shape[0], centers.shape[0]), dtype=centers.dtype)
    if X_b.shape[0]:
        K.distances(X_b, centers, out, 1)
    return out


def _labels(X: Any, centers: np.ndarray) -> Any:
    c = np.ascontiguousarray(centers, dtype=X.dtype)
    return X.map_blocks(_predict_block, c, dtype=np.int32, drop_axis=1)


def _test_data(est: Any, X: Any) -> Any:
    est._check_is_fitted()
    X = float_rows(X)
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input.")
    return X


def predict(est: Any, X: Any) -> Any:
    """Nearest centers of a dask array's rows: a lazy int32 dask array."""
    return _labels(_test_data(est, X), est.cluster_centers_)


def transform(est: Any, X: Any) -> Any:
    """Distances of a dask array's rows to the centers: a lazy dask array (n, k)."""
    X = _test_data(est, X)
    c = np.ascontiguousarray(est.cluster_centers_, dtype=X.dtype)
    return X.map_blocks(_transform_block, c, dtype=X.dtype,
                        chunks=(X.chunks[0], (c.shape[0],)))


def score(est: Any, X: Any, sample_weight: Any = None) -> float:
    """Opposite of the k-means objective of a dask array at the fitted centers (one pass)."""
    X = _test_data(est, X)
    data = as_blocks(X, sample_weight)
    c = np.ascontiguousarray(est.cluster_centers_, dtype=data.dtype)
    return -math.fsum(run_pass(data, c, sums=False).cost)
