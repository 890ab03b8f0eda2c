"""The work of one block of a Dask array, and how blocks' results add up.

Every function here runs inside a task on a worker, on one block of rows (a numpy array),
with the same in-memory pass as a fit in memory (:mod:`gmmfast.cluster._pass`), and returns
a :class:`Part`: small per-cluster sums whose union over blocks is :func:`combine`. Cost totals
travel as exact expansions (lists of floats whose sum is exact) and are rounded once on the
driver, so F(w) is the correctly rounded sum of the chunks' costs, as in memory. Nothing here
imports dask.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from .._validation import check_magnitude, exact_sum
from ._pass import (CHUNK, assign, distances, draw_rows, labeling_cost, labeling_sums,
                    sample_rows)
from ._samplers import walk

#: Relative margin kept out of each block's share of the slack (covers rounding).
_MARGIN = 1e-12


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array``, without importing dask."""
    t = type(X)
    return t.__module__.split(".", 1)[0] == "dask" and hasattr(X, "chunks") and hasattr(X, "dask")


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
    ``wsum``/``wweight`` (coordinate sums and weights of the new labels), walk counts;
    ``top``: the largest |value| of X in the blocks, from the pass that checks them (None in
    the others), for the driver's whole-data checks.
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
    top: Optional[float] = None


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
            top=None if out.top is None else max(out.top, p.top),
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


# -- block tasks ------------------------------------------------------------------------

#: The attribute that marks an error of our checks raised in a task (see :func:`task_errors`).
CHECK_MARK = "_gmmfast_check"


@contextmanager
def marked():
    """Mark a ValueError or TypeError raised inside (a check of a block's input) as ours."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        setattr(exc, CHECK_MARK, True)
        raise


@contextmanager
def task_errors():
    """On the driver, around a compute or persist: an error of our checks raised in a task
    (:func:`marked`) is raised again as a clean copy, the same type and message without
    the scheduler's frames and chained exceptions; any other error as it comes."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        if getattr(exc, CHECK_MARK, False):
            raise type(exc)(*exc.args) from None
        raise


#: The error of sparse X, in memory (check_array) and in a dask array's blocks.
SPARSE_MESSAGE = "X: sparse input is not supported; pass a dense array (e.g. X.toarray())."


def is_sparse(X: Any) -> bool:
    """A scipy.sparse matrix or array (or anything that converts like one)."""
    return hasattr(X, "toarray") or hasattr(X, "tocsr")


@dataclass(frozen=True)
class BlockCheck:
    """What the first pass checks block ``index`` (rows from ``offset``) against: the shape
    (``rows``, ``cols``) and ``dtype`` its dask array declares for it."""

    index: int
    offset: int
    rows: int
    cols: int
    dtype: np.dtype

    def __call__(self, X_b: Any) -> None:
        shape = tuple(getattr(X_b, "shape", ()))
        dtype = getattr(X_b, "dtype", None)
        found = []
        if shape != (self.rows, self.cols):
            found.append(f"shape {shape} where it declares ({self.rows}, {self.cols})")
        if dtype != self.dtype:
            found.append(f"dtype {dtype} where it declares {self.dtype}")
        if found:
            raise ValueError(
                f"X: block {self.index} of the dask array (rows from {self.offset}) has "
                f"{' and '.join(found)}: the chunks or the dtype/meta it was built with "
                "(e.g. by map_blocks) are not those of its blocks.")


def _block(X_b: Any, dtype: np.dtype, check: Any) -> Tuple[np.ndarray, Optional[float]]:
    """The block as a C-contiguous array of ``dtype`` and, with ``check`` (the first pass),
    its largest |value| (None otherwise), checked dense, of the declared shape and dtype
    (``check`` a :class:`BlockCheck`), finite and within squared distances' range (the
    limit named)."""
    with marked():
        if check and is_sparse(X_b):     # a dask array declared dense with sparse blocks
            raise TypeError(SPARSE_MESSAGE)
        if isinstance(check, BlockCheck):
            check(X_b)
    X_b = np.ascontiguousarray(X_b, dtype=dtype)
    with marked():
        top = check_magnitude(X_b, X_b.shape[1]) if check else None
    return X_b, top


def _topped(part: Part, top: Optional[float]) -> Part:
    part.top = top
    return part


def _weights(sw_b: Any, n: int, dtype: np.dtype, check: bool) -> np.ndarray:
    if sw_b is None:
        return np.ones(n, dtype=dtype)
    sw = np.ascontiguousarray(sw_b, dtype=dtype)
    if check and (not np.isfinite(sw).all() or (sw < 0).any()):
        with marked():
            raise ValueError("sample_weight must be finite and >= 0.")
    return sw


def weight_stats(sw_b: np.ndarray):
    """A block of weights' float64 sum, whether all are finite, their minimum (inf when
    none) and whether one is positive: what the driver checks of the weights."""
    finite = bool(np.isfinite(sw_b).all())
    low = float(sw_b.min()) if sw_b.shape[0] else math.inf
    return float(sw_b.sum(dtype=np.float64)), finite, low, bool((sw_b > 0).any())


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
    X_b, top = _block(X_b, centers.dtype, check)
    n = X_b.shape[0]
    picks = sample_seed is not None
    if n == 0:                  # the kernel leaves the slot sums unset for zero rows
        return _topped(_empty_part(k, d, centers.dtype, sums, picks, False), top)
    sw = _weights(sw_b, n, centers.dtype, check)
    a = assign(X_b, sw, centers, 1, with_sums=sums, sample_seed=sample_seed, offset=offset)
    part = Part(cost=expansion(a.chunk_costs), counts=np.bincount(a.labels, minlength=k),
                top=top)
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
    X_b, top = _block(X_b, centers.dtype, check)
    n = X_b.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int32), _topped(
            _empty_part(k, d, centers.dtype, False, False, True), top)
    sw = _weights(sw_b, n, centers.dtype, check)
    a = assign(X_b, sw, centers, 1, prev_labels=prev)
    f_b = exact_sum(a.chunk_costs)
    b_b = exact_sum(a.chunk_prev_costs) if prev is not None else f_b
    labels, proposals, accepted = a.labels, 0, 0
    slack = 0.0 if eta is None else (1.0 - eta) * (b_b - f_b) - _MARGIN * (abs(f_b) + abs(b_b))
    if slack > 0 and n_steps > 0 and k > 1:
        res = walk(X_b, sw, centers, a.labels, f_b, f_b + slack, n_steps, seed, 1)
        labels, proposals, accepted = res.labels, res.proposals, res.accepted
    chunk = np.empty(-(-n // CHUNK))
    labeling_cost(X_b, sw, centers, labels, 1, chunk_costs=chunk)
    S, W = labeling_sums(X_b, sw, labels, k, 1)
    part = Part(cost=expansion(a.chunk_costs), counts=np.bincount(a.labels, minlength=k),
                prev=expansion(a.chunk_prev_costs) if prev is not None else list(
                    expansion(a.chunk_costs)),
                walked=expansion(chunk), wsum=S.sum(axis=0), wweight=W.sum(axis=0),
                proposals=proposals, accepted=accepted, top=top)
    return labels, part


def sample_block(X_b: Any, sw_b: Any, offset: int, p: float, seed: int, dtype: np.dtype,
                 check: bool) -> Part:
    """The block's rows drawn with probability ``p`` each (stream (seed, global row)), and
    their weights: a uniform sample across blocks that no chunking changes."""
    X_b, top = _block(X_b, dtype, check)
    n = X_b.shape[0]
    sw = _weights(sw_b, n, dtype, check)
    idx = sample_rows(n, p, seed, offset, 1)
    return Part(cost=[], counts=np.zeros(0, dtype=np.int64), extra=(X_b[idx], sw[idx]),
                top=top)


def parallel_update(X_b: Any, sw_b: Any, state: Any, new: np.ndarray, base: int, n_cand: int,
                    check: bool):
    """k-means|| on one block: D_i = min(D_i, s_i ||x_i - c||^2) over the new candidates
    (numbered from ``base``) and the nearest candidate of each row. Returns the state
    (D, nearest; kept on the worker) and a Part with the expansion of sum D and the
    weight of the rows nearest each of the ``n_cand`` candidates."""
    X_b, top = _block(X_b, new.dtype, check)
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
                              extra=weight, top=top)


def parallel_draw(X_b: Any, state: Any, scale: float, seed: int, offset: int,
                  dtype: np.dtype) -> Part:
    """k-means|| oversampling on one block: row i with probability min(1, scale D_i),
    from the stream (seed, offset + i) (so chunking changes nothing)."""
    X_b, _ = _block(X_b, dtype, False)
    idx = draw_rows(state[0], scale, seed, offset, 1)
    return Part(cost=[], counts=np.zeros(0, dtype=np.int64), extra=(X_b[idx],))


def partition_block(X_b: Any, sw_b: Any, k: int, seed: int, dtype: np.dtype,
                    check: bool) -> Part:
    """Random partition of one block (its own stream): coordinate sums and weights."""
    X_b, top = _block(X_b, dtype, check)
    n = X_b.shape[0]
    sw = _weights(sw_b, n, dtype, check)
    labels = np.random.default_rng(seed).integers(0, k, size=n).astype(np.int32)
    d = X_b.shape[1]
    S, W = labeling_sums(X_b, sw, labels, k, 1) if n else (np.zeros((1, k, d)), np.zeros((1, k)))
    return Part(cost=[], counts=np.zeros(k, dtype=np.int64), wsum=S.sum(axis=0),
                wweight=W.sum(axis=0), walked=[], prev=[], top=top)


def predict_block(X_b: Any, centers: np.ndarray) -> np.ndarray:
    """Nearest centers of one block's rows."""
    X_b, _ = _block(X_b, centers.dtype, True)
    if X_b.shape[0] == 0:
        return np.empty(0, dtype=np.int32)
    return assign(X_b, np.ones(X_b.shape[0], dtype=centers.dtype), centers, 1).labels


def transform_block(X_b: Any, centers: np.ndarray) -> np.ndarray:
    """Distances of one block's rows to every center."""
    X_b, _ = _block(X_b, centers.dtype, True)
    if X_b.shape[0] == 0:
        return np.empty((0, centers.shape[0]), dtype=centers.dtype)
    return distances(X_b, centers, 1)
