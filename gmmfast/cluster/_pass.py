"""The pass layer: every call into the dense k-means kernels goes through this module.

A *pass* reads X once at given centers and returns a :class:`Pass` record: the
nearest-center labels (the touching bound), F(w), how many labels changed and, on request,
the value of another labeling at these centers, the per-cluster sums of
:class:`~gmmfast.cluster._merge.ClusterSums` (with a point per cluster drawn in proportion
to its cost), and each row's cost. :class:`HamerlyBounds` lets a pass skip the rows whose
label provably stays (the labels are the same). The other kernels are wrapped here too:
costs of a labeling, cluster means, distances, the random walk's rounds and the k-means++
and k-means|| steps. Callers hand validated, C-contiguous arrays of one float type (the
public functions of the package validate; nothing here checks values again).

Thread-count independence: rows are processed in chunks of CHUNK, cost totals are summed
per chunk and combined with :func:`total` (correctly rounded), cluster sums per slot (a
group of chunks fixed by n, k and d) reduced in order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from .._kernels import _kmeans as kernels
from .._validation import exact_sum

CHUNK = kernels.CHUNK
#: Memory cap for the per-slot cluster sums.
_SLOT_BYTES = 32 << 20
_MAX_SLOTS = 64



def n_slots(n: int, k: int, d: int) -> int:
    """Number of slots for cluster sums: depends on (n, k, d) only, never on threads."""
    n_chunks = -(-n // CHUNK)
    return max(1, min(n_chunks, _MAX_SLOTS, _SLOT_BYTES // (8 * k * (d + 4))))


def total(chunk_costs: np.ndarray) -> float:
    """A cost total from chunk sums: correctly rounded, so independent of any order."""
    return exact_sum(chunk_costs)


@dataclass
class ClusterSums:
    """Per-cluster sums of the nearest-center assignment at centers ``w`` (one pass).

    Attributes
    ----------
    w : ndarray (k, d)
        The centers of the pass.
    weight : ndarray (k,)
        W_j, the total sample weight of cluster j.
    resid : ndarray (k, d)
        D_j = sum_i s_i (x_i - w_j) over the points of cluster j.
    cost : ndarray (k,)
        sum_i s_i ||x_i - w_j||^2 over the points of cluster j.
    objective : float
        F(w), the exact total cost (correctly rounded sum of the chunks' totals).
    pick : ndarray of int64 (k,) or None
        A row index drawn in each cluster with probability proportional to its
        cost (-1 if the cluster has no cost), when the pass drew them.
    key : ndarray (k,) or None
        The draw's key (the largest log(u_i) / cost_i of the cluster): the pick
        of a union of row sets is the pick with the largest key.
    """

    w: np.ndarray
    weight: np.ndarray
    resid: np.ndarray
    cost: np.ndarray
    objective: float
    pick: Optional[np.ndarray] = None
    key: Optional[np.ndarray] = None


@dataclass
class Pass:
    """What one pass at centers ``w`` computed (families cache it by the identity of ``w``)."""

    w: np.ndarray
    labels: np.ndarray            # nearest-center labels: the touching bound
    objective: float              # F(w)
    changed: int                  # points whose label differs from the previous pass's
    searched: int = 0             # points whose nearest center was searched (not pruned)
    tightened: int = 0            # incremental passes: rows whose distance to their center
                                  # was recomputed (with `searched`, the rows of X read)
    exact: bool = True            # objective summed from the rows (False: from the moments
                                  # of an incremental pass, equal up to rounding)
    prev_labels: Optional[np.ndarray] = None
    prev_value: float = float("nan")   # b_{prev_labels}(w)
    sums: Optional[ClusterSums] = None  # per-cluster sums of the nearest-center assignment
    chunk_costs: Optional[np.ndarray] = None       # cost totals per CHUNK rows (objective)
    chunk_prev_costs: Optional[np.ndarray] = None  # the same for prev_labels (prev_value)


#: Numbers of centers that moved far, checked against a row's distance instead of lowering
#: every row's bound by their drift, that an exact pass considers (merge-split relocates a
#: few centers per iteration and moves their receivers): the one with the least predicted
#: work is used. (The incremental passes keep their jumped centers: JOIN_CANDIDATES.)
JUMPED_CANDIDATES = (0, 1, 2, 4, 8, 16, 32)
#: Work of checking one jumped center for a kept row, in units of one center of a full
#: nearest-center search (a scalar distance against the search's blocked SIMD kernel;
#: measured at 1M x 16, k = 100 on AVX2: 9.5 ns against 1.4 ns).
JUMPED_COST = 8.0
#: Work of checking a row against one block of jumped centers (a blocked least-value search
#: on their own layout), in the same units. Not sensitive: at 1M x 16, k = 1000 (one
#: thread, AVX-512) the finest level's 20 passes took 1.55-1.9 s for any value from 8 to 96
#: (two runs each; 3.5 s with the row-by-row check before; measured with the argmin2
#: search, whose merge of the lanes made a check cost 2.5x what gmm_minother's does).
JUMPED_BLOCK_COST = 24.0
#: What the exact pass's plan considers: merge-split can move more than 32 centers far in
#: one G-MM iteration (1e5 x 16, k = 1000: with at most 32, 17 of the coarse level's 39
#: passes searched every row; with up to 256, checked blocked, none after the first).
EXACT_JUMPED_CANDIDATES = JUMPED_CANDIDATES + (64, 128, 256)
#: A pass prunes when at least this fraction of rows is predicted to keep its label.
PRUNE_FRACTION = 0.05


class HamerlyBounds:
    """Per-row state of the pruned pass (Hamerly's bounds), for one X.

    For the labels and centers of the last pass (``centers``): ``upper[i]`` is the
    distance of row i to its center and ``lower[i]`` a lower bound on its distance
    to every other center; ``xsq`` is ||x_i||^2 (for the rounding margin), written by the
    first pass, which searches every row, as it reads them (``xsq_filled``; a pruned pass
    on bounds set from elsewhere computes them first). 24
    bytes per row. A pass prunes when :meth:`plan` predicts enough rows keep
    their label; either way it refreshes the bounds.
    """

    def __init__(self, X: np.ndarray):
        n = X.shape[0]
        self.xsq = np.empty(n)
        self.xsq_filled = False
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
        ms = np.array([m for m in EXACT_JUMPED_CANDIDATES if m < k])
        bases = drift[order[ms]]
        kept = np.empty(ms.shape[0], dtype=np.int64)
        kernels.predict_kept(labels, self.upper, self.lower, drift, bases, kept)
        # work: kept rows check their m jumped centers (a few one at a time, more blocked,
        # as the incremental pass does), the others search all k
        blocks = -(-ms // kernels.simd_block(centers.dtype))
        check = np.where(ms <= kernels.SCALAR_JUMPED, ms * JUMPED_COST,
                         blocks * JUMPED_BLOCK_COST)
        best = int(np.argmin(kept * (check + 1.0) + (n - kept) * float(k)))
        jumped = np.sort(order[:ms[best]]).astype(np.int32)
        return (bool(kept[best] >= PRUNE_FRACTION * n), drift, jumped, float(bases[best]))


def assign(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, n_threads: int, *,
           prev_labels: Optional[np.ndarray] = None, with_sums: bool = False,
           sample_seed: Optional[int] = None, old_labels: Optional[np.ndarray] = None,
           point_costs: Optional[np.ndarray] = None, offset: int = 0,
           bounds: Optional[HamerlyBounds] = None) -> Pass:
    """One pass: nearest-center labels and F(w), and what is asked for besides.

    ``prev_labels``: also b_{prev_labels}(w); ``with_sums``: the per-cluster sums of the
    new clusters, with ``sample_seed`` a point per cluster drawn proportionally to its
    cost; ``point_costs``: each row's cost written there. ``changed`` counts the labels
    that differ from ``old_labels`` (all of them if None). ``offset`` is the global index
    of X's first row (a block of a larger array): drawn points are global row indices.
    With ``bounds`` (whose last pass produced ``old_labels``), rows whose label provably
    stays are not searched; the labels are the same.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_chunks = -(-n // CHUNK)
    labels = (np.full(n, -1, dtype=np.int32) if old_labels is None
              else np.array(old_labels, dtype=np.int32))
    chunk = np.empty(n_chunks)
    chunk_prev = np.empty(n_chunks) if prev_labels is not None else None
    slots = n_slots(n, k, d)
    sums = dict(slot_resid=np.empty((slots, k, d)), slot_weight=np.empty((slots, k)),
                slot_sse=np.empty((slots, k))) if with_sums else {}
    if with_sums and sample_seed is not None:
        sums.update(slot_key=np.empty((slots, k)), slot_pick=np.empty((slots, k), np.int64),
                    seed=sample_seed, offset=offset)
    prune = {}
    if bounds is not None:
        go, drift, jumped, base_drift = bounds.plan(centers, old_labels)
        if go and not bounds.xsq_filled:         # bounds restored from elsewhere (Dask)
            kernels.row_sqnorms(X, bounds.xsq, n_threads)
            bounds.xsq_filled = True
        prune = dict(upper=bounds.upper, lower=bounds.lower, xsq=bounds.xsq, drift=drift,
                     jumped=jumped, base_drift=base_drift, prune=go,
                     fill_xsq=not bounds.xsq_filled)
    changed = np.empty(n_chunks, dtype=np.int64)
    searched = np.empty(n_chunks, dtype=np.int64)
    buf = kernels.PassBuffers(n, k, d, chunk_costs=chunk, chunk_changed=changed,
                        chunk_searched=searched,
                        prev_labels=prev_labels, chunk_prev_costs=chunk_prev,
                        point_costs=point_costs, **sums, **prune)
    kernels.kmeans_pass(X, sw, centers, labels, buf, n_threads)
    if bounds is not None:
        bounds.centers = centers.astype(np.float64)
        bounds.xsq_filled = True
    objective = total(chunk)
    cluster_sums = None
    if with_sums:
        cluster_sums = ClusterSums(w=centers, weight=sums["slot_weight"].sum(axis=0),
                                   resid=sums["slot_resid"].sum(axis=0),
                                   cost=sums["slot_sse"].sum(axis=0), objective=objective)
        if sample_seed is not None:
            best = np.argmax(sums["slot_key"], axis=0)
            cluster_sums.pick = sums["slot_pick"][best, np.arange(k)]
            cluster_sums.key = sums["slot_key"][best, np.arange(k)]
    return Pass(w=centers, labels=labels, objective=objective,
                changed=int(changed.sum()), searched=int(searched.sum()),
                prev_labels=prev_labels,
                prev_value=total(chunk_prev) if prev_labels is not None else float("nan"),
                sums=cluster_sums, chunk_costs=chunk, chunk_prev_costs=chunk_prev)


#: Rows at the start of every slot on which an incremental pass predicts how many rows its
#: bounds keep, for each number of jumped centers.
LAZY_SAMPLE = 64
#: ... and the share of them kept by the bounds alone above which no center counts as jumped.
LAZY_KEEP_ALL = 0.99
#: Rows per call of the incremental pass kernel (Ctrl-C gets through between calls).
LAZY_BLOCK = 1 << 22
#: Estimated rounding of F from the moments, relative to F, above which the next pass is
#: exact (and re-anchors the moments); the invariants allow 1e-9 of F(w_0).
LAZY_RTOL = 1e-12
#: The watch list: after a pass over every row that tightened fewer than 1 / WATCH_TIGHT of
#: them, the rows whose bounds might fail within WATCH_PASSES more passes at that pass's
#: largest drift are listed, and the next passes read only theirs while the drifts stay
#: within that (the others provably keep their labels: the same results, bit for bit). A
#: list of more than WATCH_SHARE of the rows is not kept.
WATCH_PASSES = 8
WATCH_TIGHT = 16
WATCH_SHARE = 0.25
#: Work of changing the jumped centers (a scan of every row's bounds, about what the pass's
#: own scan costs), per row, in the units of JUMPED_COST.
REGROUP_COST = 16.0
#: At most this many jumped centers (a checked row reads them all).
JUMPED_MAX = 64
#: How many of the centers that drifted most an incremental pass considers joining to the
#: jumped ones, and making the jumped ones instead of them (0: none).
JOIN_CANDIDATES = (2, 8, 32)
REPLACE_CANDIDATES = (0, 8, 32)


def largest_other(drift: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Per center o: the largest drift of the ``members`` other than o (0 if none)."""
    out = np.zeros(drift.shape[0])
    if members.shape[0]:
        d = drift[members]
        a = int(np.argmax(d))
        out[:] = d[a]
        out[members[a]] = np.delete(d, a).max() if d.shape[0] > 1 else 0.0
    return out


def nearest(gaps: np.ndarray, cols: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per center: the least of ``gaps`` (from :func:`center_gaps` with ``cols``) over the
    centers ``group`` (a subset of cols), +inf if it is empty."""
    if group.shape[0] == 0:
        return np.full(gaps.shape[0], np.inf)
    return gaps[:, np.searchsorted(cols, group)].min(axis=1)


def center_gaps(C: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(k, len(cols)): each center's distance to the centers ``cols`` (C's rows), from the
    Gram matrix, lowered by its rounding (below (d + 2) eps (||c_l||^2 + ||c_J||^2)); +inf
    to itself."""
    csq = np.einsum("ij,ij->i", C, C)
    dist = csq[:, None] + csq[cols][None, :]
    dist *= 1.0 - 4.0 * (C.shape[1] + 2) * 2.0 ** -53
    dist -= 2.0 * (C @ C[cols].T)
    np.sqrt(np.maximum(dist, 0.0, out=dist), out=dist)
    dist[cols, np.arange(cols.shape[0])] = np.inf
    return dist


class Plan(NamedTuple):
    """What an incremental pass does (:meth:`IncrementalLloyd._plan`): per center, its
    ``drift`` since the last pass, the largest drift of the other centers that are not
    jumped (``other``) and of the other jumped ones (``jumped_other``), and its distance to
    the other jumped ones (``gap``, lowered for rounding, +inf if none); ``regroup``, the
    jumped centers to take before the pass (None: they stay), with each center's distance
    at the last pass's centers to the other centers that join them and that leave them
    (``gap_in``, ``gap_out``; see :func:`~gmmfast._kernels._kmeans.lazy_regroup`)."""
    drift: np.ndarray
    other: np.ndarray
    jumped_other: np.ndarray
    gap: np.ndarray
    regroup: Optional[np.ndarray] = None
    gap_in: Optional[np.ndarray] = None
    gap_out: Optional[np.ndarray] = None


class IncrementalLloyd:
    """Incremental Lloyd passes on one X (the touching bound only: Lloyd's iterations).

    Started from an exact pass (``first``, with sums, made with ``bounds``, whose per-row
    arrays this object takes over), it keeps in memory each row's label and Hamerly's bounds
    (4 + 32 bytes a row: two lower bounds, for the jumped centers and for the others) and,
    per cluster j, the moments relative to an anchor a_j (the
    centers of ``first``): the weight W_j, S'_j = sum s_i (x_i - a_j), Q'_j = sum s_i ||x_i -
    a_j||^2 and the rows of positive weight. A pass (:meth:`step`) reads only the bounds of
    a row whose label provably stays (no read of X), tightens and searches the others (the
    labels are those of a full search: the kernel keeps the exact pass's rounding margin),
    and updates the moments by the rows whose label changed, reduced in slot order (the
    results do not depend on the thread count). The cluster sums at centers w follow from
    the moments (:meth:`cluster_sums`):

        D_j = S'_j - W_j (w_j - a_j),
        cost_j = Q'_j - 2 (w_j - a_j).S'_j + W_j ||w_j - a_j||^2,

    and F(w) is the correctly rounded sum of the costs. Lloyd's centers stay near their
    anchors, so the cancellation is small (F equals the exact F to about 1e-16 relative in
    the polish, even on data far from the origin). A pass whose estimated rounding of F
    (:meth:`rounding`) exceeds LAZY_RTOL F marks the state ``stale``: its owner then makes an
    exact pass (from :meth:`release`'s bounds and :attr:`labels`) and starts a new state
    from it, anchored at its centers. A pass runs in blocks of about LAZY_BLOCK rows; one
    interrupted between blocks (Ctrl-C) leaves the state stale too. :meth:`exact_objective`
    sums F from the rows. Near the fixed point the passes read only a watch list (the rows
    whose bounds may fail within a few more passes' drift, see WATCH_PASSES): at 1e8 rows
    the long tail of passes that change a few dozen labels costs the list, not a scan of
    every row's bounds.
    """

    def __init__(self, X: np.ndarray, sw: np.ndarray, first: Pass, bounds: HamerlyBounds,
                 n_threads: int):
        if first.sums is None or bounds.centers is None:
            raise ValueError("IncrementalLloyd starts from an exact pass with its sums, made "
                             "with the bounds it takes over.")
        n, d = X.shape
        k = first.w.shape[0]
        self.X, self.sw, self.n_threads = X, sw, n_threads
        self.anchors = np.array(first.w, dtype=X.dtype, order="C")
        self.centers = self.anchors.astype(np.float64)     # of the last pass (for drifts)
        self.weight = first.sums.weight.copy()
        self.moment = first.sums.resid.copy()              # S'
        self.square = first.sums.cost.copy()               # Q'
        self.count = label_counts(first.labels, sw, k, n_threads, positive=True).astype(
            np.float64)
        # the first pass's labels become this state's (no copy of n labels); the pass keeps
        # a read-only view of them
        self.labels = first.labels
        first.labels = self.labels.view()
        first.labels.flags.writeable = False
        self.passes = 0                                    # since the anchors
        self.stale = False
        self._regrouping = False
        self._bounds = bounds
        self.cum_drift, self.cum_other = np.zeros(k), np.zeros(k)
        self.cum_jumped = np.full(k, -np.inf)              # no center is jumped yet
        self.jump_gap = np.full(k, np.inf)
        self.jumped = np.empty(0, dtype=np.int32)
        self._lower_jumped = np.zeros(n)    # bounds nothing while cum_jumped is -inf
        slots = n_slots(n, k, d)
        n_chunks = -(-n // CHUNK)
        self._sample = (np.arange(slots, dtype=np.int64) * n_chunks // slots) * CHUNK
        self._sampled = int(np.minimum(n - self._sample, LAZY_SAMPLE).sum())
        self._slots = slots        # passes run in blocks of about LAZY_BLOCK rows
        self._block = max(1, min(slots, LAZY_BLOCK * slots // max(n, 1)))
        self.delta = np.empty((k, d + 3))
        self.slot_changed, self.slot_searched, self.slot_tightened = (
            np.empty(slots, dtype=np.int64) for _ in range(3))
        self.buffers = kernels.LazyBuffers(
            n, k, d, labels=self.labels, upper=bounds.upper, lower=bounds.lower,
            lower_jumped=self._lower_jumped, xsq=bounds.xsq, cum_drift=self.cum_drift,
            cum_other=self.cum_other, cum_jumped=self.cum_jumped, jump_gap=self.jump_gap,
            anchors=self.anchors, slot_delta=np.empty((slots, k, d + 3)),
            slot_touched=np.empty((slots, k), dtype=np.uint8), delta=self.delta,
            slot_changed=self.slot_changed, slot_searched=self.slot_searched,
            slot_tightened=self.slot_tightened)
        self._upper, self._lower = bounds.upper, bounds.lower
        self._labels = self.labels.view()
        self._labels.flags.writeable = False
        self._watch_mask: Optional[np.ndarray] = None      # n bytes, made on first use

    def step(self, centers: np.ndarray) -> Pass:
        """An incremental pass at ``centers`` (C-contiguous, X's dtype). Its ``labels`` are
        this object's array (read-only): the next pass changes them."""
        c64 = centers.astype(np.float64)
        plan = self._plan(c64)
        self.stale = True      # until the pass is whole: Ctrl-C between blocks leaves the
        if plan.regroup is not None:                 # bounds valid, the moments behind
            self._regrouping = True        # (Ctrl-C from here to its end: bounds dropped)
            kernels.lazy_regroup(self.buffers, plan.gap_in, plan.gap_out,
                                 plan.regroup.shape[0] > 0, self.n_threads)
            self.cum_jumped[:] = 0.0 if plan.regroup.shape[0] else -np.inf
            self.jumped = plan.regroup
            self.buffers.set_jumped(plan.regroup)
            self._regrouping = False
        self.cum_drift += plan.drift
        self.cum_other += plan.other
        self.cum_jumped += plan.jumped_other
        self.jump_gap[:] = plan.gap
        self.centers = c64
        caps = self._request_mask(c64, plan.drift, float(plan.other.max()),
                                  float(plan.jumped_other.max()))
        watched = False
        for lo in range(0, self._slots, self._block):
            watched = kernels.kmeans_lazy_pass(self.X, self.sw, centers, self.buffers, lo,
                                               min(lo + self._block, self._slots),
                                               self.n_threads)
        kernels.kmeans_lazy_deltas(self.buffers)
        d = self.X.shape[1]
        self.weight += self.delta[:, 0]
        self.moment += self.delta[:, 1:d + 1]
        self.square += self.delta[:, d + 1]
        self.count += self.delta[:, d + 2]
        empty = self.count < 0.5           # counts are exact integers
        self.weight[empty] = 0.0
        self.moment[empty] = 0.0
        self.square[empty] = 0.0
        sums = self.cluster_sums(centers)
        self.passes += 1
        self.stale = self.rounding(centers) > LAZY_RTOL * sums.objective
        tightened, changed = int(self.slot_tightened.sum()), int(self.slot_changed.sum())
        if not watched:          # a pass over every row: its mask makes the next list
            self._watch(caps, tightened, changed)
        return Pass(w=centers, labels=self._labels, objective=sums.objective,
                    changed=changed, searched=int(self.slot_searched.sum()),
                    tightened=tightened, sums=sums, exact=False)

    def _request_mask(self, c64: np.ndarray, drift: np.ndarray, other: float,
                      jumped: float) -> Optional[Tuple]:
        """Ask the pass to mark the rows a watch list must hold while the centers move at
        most WATCH_PASSES x this pass's largest moves more (``other`` of the centers that
        are not jumped, ``jumped`` of those that are, each center by its group's): the caps,
        or None if nothing moved."""
        self.buffers.cancel_mask()
        if not float(drift.max()) > 0:
            return None
        if self._watch_mask is None:
            self._watch_mask = np.empty(self.X.shape[0], dtype=np.uint8)
        horizon = np.full(drift.shape[0], WATCH_PASSES * other)
        horizon[self.jumped] = WATCH_PASSES * jumped
        # every center stays within the horizon of where it is: a cap on max ||c||^2
        csq_cap = (math.sqrt(float(np.einsum("ij,ij->i", c64, c64).max()))
                   + float(horizon.max())) ** 2 * (1.0 + 1e-9)
        caps = (self.cum_drift + horizon, self.cum_other + WATCH_PASSES * other,
                self.cum_jumped + WATCH_PASSES * jumped, csq_cap)
        self.buffers.request_mask(self._watch_mask, *caps)
        return caps

    def _watch(self, caps: Optional[Tuple], tightened: int, changed: int) -> None:
        """After a pass over every row: the watch list of its mask, kept when the pass
        tightened fewer than 1 / WATCH_TIGHT of the rows, changed a label (else Lloyd's run
        ends) and the list holds at most WATCH_SHARE of them."""
        self.buffers.clear_watch()
        n = self.X.shape[0]
        if caps is None or self.stale or tightened * WATCH_TIGHT >= n or changed == 0:
            return
        marked = self._watch_mask.view(np.bool_)          # 0/1 bytes: numpy's fast path
        if np.count_nonzero(marked) <= WATCH_SHARE * n:
            self.buffers.set_watch(np.flatnonzero(marked).astype(np.int64, copy=False), *caps)

    def plans(self, c64: np.ndarray, groups: List[np.ndarray]) -> List[Plan]:
        """The :class:`Plan` of the pass to ``c64`` with each of ``groups`` (increasing int32
        centers) as its jumped centers (the jumped centers now: no regroup)."""
        drift = np.sqrt(((c64 - self.centers) ** 2).sum(axis=1)) * (1.0 + 1e-12)
        k = drift.shape[0]
        G = self.jumped
        grouped = np.zeros(k, dtype=bool)
        grouped[G] = True
        rests = []                                    # the centers not in each group
        used, moved = grouped.copy(), np.zeros(k, dtype=bool)
        for group in groups:
            rest = np.ones(k, dtype=bool)
            rest[group] = False
            rests.append(rest)
            used[group] = True
            moved[group[~grouped[group]]] = True      # joining the jumped centers ...
            moved[G[rest[G]]] = True                  # ... or leaving them
        cols, last_cols = np.flatnonzero(used), np.flatnonzero(moved)
        now, last = center_gaps(c64, cols), center_gaps(self.centers, last_cols)
        out = []
        for group, rest in zip(groups, rests):
            shifts = (drift, largest_other(drift, np.flatnonzero(rest)),
                      largest_other(drift, group), nearest(now, cols, group))
            if np.array_equal(group, G):
                out.append(Plan(*shifts))
            else:
                out.append(Plan(*shifts, regroup=group,
                                gap_in=nearest(last, last_cols, group[~grouped[group]]),
                                gap_out=nearest(last, last_cols, G[rest[G]])))
        return out

    def _predict(self, plans: List[Plan]) -> Tuple[np.ndarray, np.ndarray]:
        """(kept, kept_others) of :func:`~gmmfast._kernels._kmeans.predict_lazy_kept` on
        the sample for each plan."""
        k = plans[0].drift.shape[0]
        inf = np.full(k, np.inf)
        kept = np.empty(len(plans), dtype=np.int64)
        kept_others = np.empty(len(plans), dtype=np.int64)
        kernels.predict_lazy_kept(
            self.labels, self._upper, self._lower, self._lower_jumped, self._sample,
            LAZY_SAMPLE, self.cum_drift, self.cum_other, self.cum_jumped, plans[0].drift,
            np.array([inf if p.gap_in is None else p.gap_in for p in plans]),
            np.array([inf if p.gap_out is None else p.gap_out for p in plans]),
            np.array([p.other for p in plans]), np.array([p.jumped_other for p in plans]),
            np.array([p.gap for p in plans]), kept, kept_others)
        return kept, kept_others

    def _plan(self, c64: np.ndarray) -> Plan:
        """The :class:`Plan` of the pass to ``c64``.

        A row whose bounds separate it from every center costs a scan of its bounds; a row
        separated from the centers that are not jumped only is checked at its distances to
        the jumped ones (a read of X, as the exact pass does); the others are searched. The
        jumped centers stay from pass to pass (a checked row's bound on its distance to them
        holds until they have moved that far), unless one of these is predicted to cost
        less work, REGROUP_COST a row included: the m centers that are not jumped and
        drifted most join them (up to JUMPED_MAX in all, m from JOIN_CANDIDATES), or the m
        that drifted most replace them (m from REPLACE_CANDIDATES). The work is predicted on
        a sample (LAZY_SAMPLE rows at the start of every slot) in the units of
        :meth:`HamerlyBounds.plan`; the jumped centers stay without a look at the others
        when the sample keeps LAZY_KEEP_ALL of its rows with them (the usual pass near a
        fixed point)."""
        G = self.jumped
        keep = self.plans(c64, [G])[0]
        drift = keep.drift
        if drift.max() == 0.0 or self._predict([keep])[0][0] >= LAZY_KEEP_ALL * self._sampled:
            return keep
        k = drift.shape[0]
        order = np.argsort(-drift, kind="stable")
        grouped = np.zeros(k, dtype=bool)
        grouped[G] = True
        free = order[~grouped[order]]                     # not jumped, by drift
        groups: List[np.ndarray] = [G]
        for m in JOIN_CANDIDATES:      # the m that drifted most join the jumped ones ...
            if m < k and G.shape[0] + m <= JUMPED_MAX:
                groups.append(np.sort(np.concatenate([G, free[:m]])).astype(np.int32))
        for m in REPLACE_CANDIDATES:   # ... or replace them
            if m >= k:
                continue
            group = np.sort(order[:m]).astype(np.int32)
            if not any(np.array_equal(group, g) for g in groups):
                groups.append(group)
        plans = self.plans(c64, groups)
        kept, kept_others = self._predict(plans)
        blocks = -(-np.array([g.shape[0] for g in groups]) // kernels.simd_block(self.X.dtype))
        work = ((self._sampled - kept_others) * (k + JUMPED_COST)
                + (kept_others - kept) * (JUMPED_COST + blocks * JUMPED_BLOCK_COST)
                + np.where(np.arange(len(plans)) > 0, REGROUP_COST * self._sampled, 0.0))
        return plans[int(np.argmin(work))]

    def cluster_sums(self, centers: np.ndarray) -> ClusterSums:
        """The :class:`ClusterSums` of the current labels at ``centers``, from the moments."""
        u = centers.astype(np.float64) - self.anchors
        resid = self.moment - self.weight[:, None] * u
        cost = (self.square - 2.0 * np.einsum("jd,jd->j", u, self.moment)
                + self.weight * np.einsum("jd,jd->j", u, u))
        np.maximum(cost, 0.0, out=cost)
        return ClusterSums(w=centers, weight=self.weight.copy(), resid=resid, cost=cost,
                           objective=exact_sum(cost))

    def rounding(self, centers: np.ndarray) -> float:
        """An estimate of the rounding of F from the moments at ``centers``: eps (passes +
        4) sum_j (Q'_j + 2 |(w_j - a_j).S'_j| + W_j ||w_j - a_j||^2), the size of the terms
        that cancel, times the additions each running sum has seen."""
        u = centers.astype(np.float64) - self.anchors
        size = (self.square + 2.0 * np.abs(np.einsum("jd,jd->j", u, self.moment))
                + self.weight * np.einsum("jd,jd->j", u, u))
        return 2.0 ** -52 * (self.passes + 4) * float(size.sum())

    def release(self) -> HamerlyBounds:
        """The bounds this state took over, back in Hamerly's form (valid at the last pass's
        centers, even if that pass was interrupted), for an exact pass; this state is then
        done."""
        b = self._bounds
        k = self.cum_other.shape[0]
        if self._regrouping:           # interrupted while the groups changed: no bound
            b.lower[:] = 0.0
        else:                          # lower: every center
            kernels.lazy_regroup(self.buffers, np.full(k, np.inf), np.full(k, -np.inf), False,
                                 self.n_threads)
            b.lower -= self.cum_other[self.labels] * (1.0 + 1e-12)
        b.upper += self.cum_drift[self.labels] * (1.0 + 1e-12)
        b.centers = self.centers
        self._bounds = None
        return b

    def exact_objective(self, centers: np.ndarray) -> float:
        """F at the last pass's ``centers`` summed from the rows (one read of X, no search):
        the number an exact pass reports."""
        return labeling_cost(self.X, self.sw, centers, self.labels, self.n_threads)


def label_counts(labels: np.ndarray, sw: np.ndarray, k: int, n_threads: int,
                 positive: bool = False) -> np.ndarray:
    """Rows per cluster (int64, k entries), or rows of positive weight with ``positive``:
    np.bincount's counts, in one parallel read of int32 labels."""
    if labels.dtype != np.int32 or sw.dtype not in (np.float32, np.float64) \
            or not labels.flags.c_contiguous or not sw.flags.c_contiguous:
        return np.bincount(labels[sw > 0] if positive else labels, minlength=k)
    return kernels.label_counts(labels, sw, positive, k, n_threads)


def labeling_cost(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                  n_threads: int, point_costs: Optional[np.ndarray] = None,
                  chunk_costs: Optional[np.ndarray] = None) -> float:
    """b_z(w): the cost of ``labels`` at ``centers`` (per point into ``point_costs`` and per
    chunk into ``chunk_costs`` if given)."""
    chunk = np.empty(-(-X.shape[0] // CHUNK)) if chunk_costs is None else chunk_costs
    kernels.label_costs(X, sw, centers, labels, chunk, point_costs, n_threads)
    return total(chunk)


def labeling_sums(X: np.ndarray, sw: np.ndarray, labels: np.ndarray, k: int,
                 n_threads: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per-slot coordinate sums (slots, k, d) and weights (slots, k) of the clusters of
    ``labels``; reduce them in slot order."""
    slots = n_slots(X.shape[0], k, X.shape[1])
    sums, weights = np.empty((slots, k, X.shape[1])), np.empty((slots, k))
    kernels.accumulate(X, sw, labels, sums, weights, n_threads)
    return sums, weights


def update_centers(X: np.ndarray, sw: np.ndarray, labels: np.ndarray, centers_old: np.ndarray,
                   n_threads: int) -> Tuple[np.ndarray, np.ndarray]:
    """Minimiser of the bound of ``labels``: weighted means; an empty cluster keeps its center.

    Returns the new centers and each cluster's total weight.
    """
    sums, weights = labeling_sums(X, sw, labels, centers_old.shape[0], n_threads)
    centers = np.empty_like(centers_old)
    cluster_weights = np.empty(centers_old.shape[0])
    kernels.finalize_centers(sums, weights, centers_old, centers, cluster_weights)
    return centers, cluster_weights


def distances(X: np.ndarray, centers: np.ndarray, n_threads: int) -> np.ndarray:
    """Euclidean distances of every row to every center, shape (n, k), X's dtype."""
    out = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
    kernels.distances(X, centers, out, n_threads)
    return out


# -- the random walk's rounds (see gmmfast.cluster._samplers) ----------------------------------

def walk_start(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
               costs: np.ndarray, block_size: int, block_slack: np.ndarray, seed: int,
               n_threads: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start the walk's chains from ``labels``: each row's cost into ``costs``; returns each
    block's cost total, budget and random stream."""
    n_blocks = block_slack.shape[0]
    block_total, budget = np.empty(n_blocks), np.empty(n_blocks)
    rng = np.empty(n_blocks, dtype=np.uint64)
    kernels.walk_start(X, sw, centers, labels, costs, block_size, block_slack, seed,
                       block_total, budget, rng, n_threads)
    return block_total, budget, rng


def walk_round(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
               costs: np.ndarray, block_size: int, todo: np.ndarray, block_total: np.ndarray,
               budget: np.ndarray, rng: np.ndarray, accepted: np.ndarray,
               n_threads: int) -> None:
    """One round of the uniform walk: block b makes ``todo[b]`` proposals, in place."""
    kernels.walk(X, sw, centers, labels, costs, block_size, todo, block_total, budget, rng,
                 accepted, n_threads)


# -- seeding: k-means++ and k-means|| (see gmmfast.cluster._init) ------------------------------

pp_width = kernels.pp_width
PANEL = kernels.PANEL
PANEL_MAX_CENTERS = kernels.PANEL_MAX_CENTERS


def pp_panel(X: np.ndarray, n_threads: int) -> np.ndarray:
    """X's rows as float32 panels for :func:`pp_step_panel`: (ceil(n / PANEL), d, PANEL),
    panel b holding rows PANEL b .. PANEL b + PANEL - 1 feature-major, zero past the last."""
    n, d = X.shape
    XP = np.empty((-(-n // PANEL), d, PANEL), dtype=np.float32)
    kernels.pp_panel(X, XP, n_threads)
    return XP


def pp_step_panel(XP: np.ndarray, sw: np.ndarray, closest: np.ndarray, CT: np.ndarray,
                  update: bool, chunk_pot: np.ndarray, chunk_gain: np.ndarray,
                  n_threads: int) -> None:
    """:func:`pp_step` over the rows as panels (:func:`pp_panel`; float32 ``sw``), any 1
    to PANEL_MAX_CENTERS columns of ``CT``."""
    kernels.pp_step_panel(XP, sw, closest, CT, update, chunk_pot, chunk_gain, n_threads)


def pp_step(X: np.ndarray, sw: np.ndarray, closest: np.ndarray, CT: np.ndarray, update: bool,
            chunk_pot: np.ndarray, chunk_gain: np.ndarray, n_threads: int) -> None:
    """One k-means++ pass over X: apply the first lane of ``CT`` to ``closest`` if
    ``update``, and each lane's gain per chunk into ``chunk_gain``."""
    kernels.pp_step(X, sw, closest, CT, update, chunk_pot, chunk_gain, n_threads)


def pp_pick(sw: np.ndarray, closest: np.ndarray, chunk_cum: np.ndarray,
            targets: np.ndarray) -> np.ndarray:
    """The rows whose running total of s_i closest_i first exceeds each target."""
    out = np.empty(targets.shape[0], dtype=np.int64)
    kernels.pp_pick(sw, closest, chunk_cum, targets, out)
    return out


def sample_rows(n: int, p: float, seed: int, offset: int, n_threads: int,
                block: int = 1 << 20) -> np.ndarray:
    """Indices of rows drawn each with probability ``p``, row i by the stream (seed, offset +
    i): a uniform sample that no partition of the rows into blocks changes."""
    ones = np.ones(min(n, block))
    parts = [lo + draw_rows(ones[:min(block, n - lo)], p, seed, offset + lo, n_threads)
             for lo in range(0, n, block)]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def draw_rows(dist: np.ndarray, scale: float, seed: int, offset: int,
              n_threads: int) -> np.ndarray:
    """Indices of the rows drawn with probability min(1, scale dist_i), row i by the stream
    (seed, offset + i): the draw depends on the global row index only."""
    drawn = np.zeros(dist.shape[0], dtype=np.uint8)
    kernels.draw_rows(dist, scale, seed, offset, drawn, n_threads)
    return np.flatnonzero(drawn)
