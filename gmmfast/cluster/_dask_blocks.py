"""A Dask array as row blocks: validation, one pass over the blocks, rows, and seeding.

The driver side of the Dask path. :func:`as_blocks` turns a row-chunked dask array (and its
weights) into :class:`Blocks`; :func:`run_pass` maps a block task of
:mod:`gmmfast.cluster._dask_tasks` over the blocks and adds up their Parts with a tree of
combine tasks (``SPLIT_EVERY`` inputs each, a tree fixed by the number of blocks, so the
result never depends on the number of workers). X is never gathered, never persisted, and
its values are checked in the first pass. ``dask`` is imported inside the functions.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._kernels._common import openmp_max_threads
from .._validation import (check_array, check_not_empty, check_sample_weight,
                           check_underflow, draw_seed, exact_sum, float_dtype_for,
                           objective_range)
from ._dask_tasks import (SPARSE_MESSAGE, BlockCheck, Part, combine, expansion, is_dask_array,
                          is_sparse, parallel_draw, parallel_update, partition_block,
                          pass_block, sample_block, task_errors, weight_stats)
from ._init import _plusplus, seed_centers
from ._pass import ClusterSums
from ._rows import uniform_sample

#: Inputs per combine task of the tree reduction.
SPLIT_EVERY = 8


def auto_sample_size(n: int, k: int) -> int:
    """Rows of the sample k-means++ seeds on when ``init_size="auto"``: max(256 k, 100,000)
    (faiss trains on 256 rows per center; 100,000 rows keep small k well seeded)."""
    return min(n, max(256 * k, 100_000))


def reduce_tree(parts: list) -> Any:
    """A tree of :func:`combine` tasks over delayed Parts (fixed by their number)."""
    import dask
    while len(parts) > 1:
        parts = [dask.delayed(combine, pure=False)(*parts[i:i + SPLIT_EVERY])
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


@dataclass
class Blocks:
    """A row-chunked dask array as its blocks: delayed blocks of X and of the weights,
    the global index of each block's first row, and whether the first pass still has to
    check the values (finite X, finite non-negative weights). With ``fit`` (rows a fit
    clusters), the first pass's largest |value| is also held to what an in-memory fit
    checks of the whole data (:meth:`check_whole`): squared distances that do not
    underflow, an objective within float64 (``total``: the weights' float64 sum)."""

    X: Any
    blocks: list
    sw_blocks: list
    offsets: np.ndarray
    sizes: np.ndarray
    dtype: np.dtype
    weighted: bool
    fit: bool = False
    total: float = 0.0
    unchecked: bool = True
    passes: int = 0
    stats: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    def check_now(self) -> bool:
        check, self.unchecked = self.unchecked, False
        return check

    def checks(self) -> list:
        """Per block, what its task checks: in the first pass (:meth:`check_now`) a
        :class:`~gmmfast.cluster._dask_tasks.BlockCheck` (the shape and dtype the dask array
        declares for it; the values), None in the others."""
        if not self.check_now():
            return [None] * len(self.blocks)
        d = int(self.X.shape[1])
        return [BlockCheck(b, int(o), int(s), d, self.dtype)
                for b, (o, s) in enumerate(zip(self.offsets, self.sizes))]

    def compute(self, *objs):
        """dask.compute, recording the seconds and the bytes the driver received."""
        import dask
        t0 = time.perf_counter()
        with task_errors():
            out = dask.compute(*objs)
        self.stats.append((time.perf_counter() - t0, _nbytes(out)))
        for o in out:
            if isinstance(o, Part) and o.top is not None:     # the checking pass's result
                self.check_whole(o.top)
        return out

    def check_whole(self, top: float) -> None:
        """The checks of an in-memory fit that need all of X (its largest |value|
        ``top``, from the first pass): no underflow, the objective within float64."""
        if self.fit:
            check_underflow(top, self.dtype)
            objective_range(top, self.total, self.n, self.X.shape[1], self.weighted)


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
    check_not_empty(X.shape)
    if is_sparse(getattr(X, "_meta", None)):      # scipy.sparse blocks: as in memory
        raise TypeError(SPARSE_MESSAGE)
    dtype = float_dtype_for(X.dtype)
    if X.dtype != dtype:
        X = X.astype(dtype)
    return X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X


def as_blocks(X: Any, sample_weight: Any, fit: bool = False) -> Blocks:
    """The dask array (see :func:`float_rows`) and the sample weights as row blocks; ``fit``:
    rows a fit clusters (see :class:`Blocks`)."""
    X = float_rows(X)
    sizes = np.asarray(X.chunks[0], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    blocks = list(X.to_delayed().ravel())
    weighted = sample_weight is not None
    total = float(X.shape[0])
    if not weighted:
        sw_blocks = [None] * len(blocks)
    elif is_dask_array(sample_weight):
        sw_blocks, total = dask_weights(sample_weight, X)
    else:   # in memory: validated here, sent to the workers once (not with every pass)
        sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        total = float(sw.sum(dtype=np.float64))
        import dask
        sw_blocks = list(dask.persist(*[dask.delayed(sw[o:o + s])
                                        for o, s in zip(offsets, sizes)]))
    return Blocks(X=X, blocks=blocks, sw_blocks=sw_blocks, offsets=offsets, sizes=sizes,
                  dtype=X.dtype, weighted=weighted, fit=fit, total=total)


def dask_weights(sample_weight: Any, X: Any):
    """A dask array of sample weights for X (see :func:`float_rows`) as X's dtype in X's row
    chunks, as persisted delayed blocks (read once, then every pass takes them from the
    workers), and the float64 sum of the weights; refused with the errors of
    :func:`~gmmfast._validation.check_sample_weight` in memory, in the same order."""
    import dask
    import dask.array as da
    float_dtype_for(sample_weight.dtype, "sample_weight")     # complex, strings
    shape, n = sample_weight.shape, X.shape[0]
    if sample_weight.ndim != 1:
        raise ValueError(f"sample_weight must be a 1-D array, got a {sample_weight.ndim}-D "
                         f"array of shape {shape}.")
    check_not_empty(shape, "sample_weight")
    if shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {shape}.")
    sw = sample_weight.astype(X.dtype).rechunk((X.chunks[0],))
    blocks = list(dask.persist(*sw.to_delayed().ravel()))
    stats = dask.compute(*[dask.delayed(weight_stats, pure=False)(b) for b in blocks])
    total = math.fsum(t for t, _, _, _ in stats)
    finite = all(f for _, f, _, _ in stats)
    low = min(m for _, _, m, _ in stats)
    positive = any(p for _, _, _, p in stats)
    if not finite:
        raw = sample_weight.astype(np.float64)
        raw_finite, top = dask.compute(da.isfinite(raw).all(), abs(raw).max())
        if raw_finite:      # finite, but beyond X's dtype
            raise ValueError(f"sample_weight has values up to {float(top):.3g}, "
                             f"beyond {X.dtype}'s largest "
                             f"({float(np.finfo(X.dtype).max):.3g}; X is {X.dtype}): "
                             "scale sample_weight.")
        raise ValueError("sample_weight contains NaN or infinity; all values must be finite.")
    if low < 0:
        raise ValueError("sample_weight must be finite and >= 0.")
    if not positive:
        raise ValueError("sample_weight must have a positive sum; all weights are zero.")
    return blocks, float(total)


def run_pass(data: Blocks, centers: np.ndarray, *, sums: bool = True,
             sample_seed: Optional[int] = None) -> Part:
    """One pass over the blocks at ``centers``, reduced to one Part on the driver."""
    import dask
    c = dask.delayed(centers)
    task = dask.delayed(pass_block, pure=False)
    parts = [task(xb, swb, c, int(o), sums, sample_seed, check)
             for xb, swb, o, check in zip(data.blocks, data.sw_blocks, data.offsets,
                                          data.checks())]
    data.passes += 1
    return data.compute(reduce_tree(parts))[0]


def cluster_sums(part: Part, w: np.ndarray) -> ClusterSums:
    return ClusterSums(w=w, weight=part.weight, resid=part.resid, cost=part.sse,
                       objective=exact_sum(part.cost), pick=part.pick, key=part.key)


def _rows(data: Blocks, idx: Any) -> np.ndarray:
    """Rows ``idx`` of X (in that order), reading only the blocks that hold them."""
    idx = np.asarray(idx, dtype=np.int64)
    order = np.argsort(idx, kind="stable")
    rows = np.empty((idx.shape[0], data.X.shape[1]), dtype=data.dtype)
    got = data.compute(data.X[idx[order]])[0]
    if is_sparse(got) or got.shape != rows.shape or got.dtype != data.dtype:
        raise ValueError(        # before the first pass (forgy): blocks misdeclared
            f"X: rows read from the dask array have "
            f"{'sparse type' if is_sparse(got) else f'shape {got.shape}, dtype {got.dtype}'}"
            f" where it declares shape {rows.shape}, dtype {data.dtype}: the chunks or the "
            "dtype/meta it was built with (e.g. by map_blocks) are not those of its blocks.")
    rows[order] = got
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
    task = dask.delayed(sample_block, pure=False)

    def draw(p: float, seed: int):
        parts = [task(xb, swb, int(o), p, seed, data.dtype, check)
                 for xb, swb, o, check in zip(data.blocks, data.sw_blocks, data.offsets,
                                              data.checks())]
        data.passes += 1
        return data.compute(reduce_tree(parts))[0].extra

    return uniform_sample(data.n, size, k, rng, draw)


def _n_distinct(rows: np.ndarray) -> int:
    rows = np.ascontiguousarray(rows)
    return np.unique(rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))).shape[0]


def kmeans_parallel_blocks(data: Blocks, k: int, rng: np.random.Generator, *,
                           oversampling: float = 2.0, rounds: int = 5) -> np.ndarray:
    """k-means|| (Bahmani et al. 2012) over the blocks, as
    :func:`~gmmfast.cluster.kmeans_parallel` in memory.

    Each round is a pass that lowers D with the new candidates (D and the nearest candidate
    stay on the workers: 12 bytes per row, released at the end) and a pass that draws the
    next candidates by global row index, then a weighted greedy
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
        outs = [update(xb, swb, st, c, base, n_cand, check)
                for xb, swb, st, check in zip(data.blocks, data.sw_blocks, states,
                                              data.checks())]
        data.passes += 1
        with task_errors():
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
    return _plusplus(C, k, part.extra.astype(data.dtype), rng, None, openmp_max_threads())


def init_centers(data: Blocks, p: Any, rng: np.random.Generator) -> np.ndarray:
    """Initial centers over the blocks by ``p.init``: ``"k-means++"`` seeds on a uniform
    sample of ``p.init_size`` rows drawn across the blocks ("auto": :func:`auto_sample_size`),
    ``"k-means||"`` runs over all blocks (:func:`kmeans_parallel_blocks`) unless
    ``init_size`` is an integer; "forgy" reads k rows; "random-partition" is one pass."""
    import dask
    k, init, n = p.k, p.init, data.n
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
        size = p.init_size
        if isinstance(size, str):            # "auto"
            size = auto_sample_size(n, k) if init == "k-means++" else None
        if size is not None and size < n:
            S, sw = draw_sample(data, size, k, rng)   # seeded as in memory (not as all X)
            return seed_centers(S, sw, k, init, rng, openmp_max_threads(), S.shape[0])
        if init == "k-means||":
            return kmeans_parallel_blocks(data, k, rng)
        S, sw = draw_sample(data, n, k, rng)    # init_size >= n: all rows, as asked
        return seed_centers(S, sw, k, init, rng, openmp_max_threads(), S.shape[0])
    forgy = _rows(data, rng.choice(n, size=k, replace=False))
    if init == "forgy":
        return forgy
    seed = draw_seed(rng)               # random partition, a stream per block
    task = dask.delayed(partition_block, pure=False)
    parts = [task(xb, swb, k, int(np.random.SeedSequence([seed, int(o)]).generate_state(
        1, np.uint64)[0]), data.dtype, check)
        for xb, swb, o, check in zip(data.blocks, data.sw_blocks, data.offsets,
                                     data.checks())]
    data.passes += 1
    part = data.compute(reduce_tree(parts))[0]
    full = part.wweight > 0
    centers = forgy.astype(np.float64)
    centers[full] = part.wsum[full] / part.wweight[full, None]
    return centers.astype(data.dtype)
