"""The one fit driver of the k-means estimators, in memory and on Dask.

A fit is ``n_init`` single runs from fresh initial centers, the best one kept (scikit-learn's
``KMeans.fit`` loop). The single run is chosen once by the estimator: :func:`gmm_run` (G-MM
with its escapes: :class:`~gmmfast.cluster.GMMKMeans`, ``KMeans(algorithm="gmm")``) or
scikit-learn's Lloyd loop (:func:`gmmfast.cluster._lloyd.lloyd`). What depends on where the
rows live (seeding, the bound family, the labels at the end) comes from the rows object,
:class:`~gmmfast.cluster._rows.MemoryRows` or :class:`~gmmfast.cluster._dask.DaskRows`,
picked once from the data kind by :func:`as_rows`, which also validates X and the weights
(once per fit).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, List, Optional, Union

import numpy as np

from .._validation import (NONE, Interval, Options, blas_single_threaded, check_data, check_int,
                           check_random_state, check_rows, check_threads, draw_seed,
                           validate_params)
from ..core import GMMResult, History, generalized_mm
from ._dask_tasks import is_dask_array
from ._escape import Escape, escape, pass_budget
from ._init import check_init
from ._rows import MemoryRows


def as_rows(X: Any, sample_weight: Any = None, *, n_features: Optional[int] = None,
            owner: str = "GMMKMeans", fit: bool = False) -> Any:
    """X and its weights, validated once, as :class:`MemoryRows` or (a dask array)
    :class:`~gmmfast.cluster._dask.DaskRows`. With ``n_features`` (a fitted estimator's),
    X must have that many columns; with ``fit`` (rows a fit clusters or seeds on), X must
    not be too small for squared distances nor its objective beyond float64
    (:func:`~gmmfast._validation.check_rows`; on a dask array checked from the first pass's
    maxima)."""
    if is_dask_array(X):
        from ._dask import DaskRows
        rows: Any = DaskRows(X, sample_weight, fit=fit)
    else:
        rows = MemoryRows(*check_rows(X, sample_weight, fit=fit))
    if n_features is not None and rows.d != n_features:
        raise ValueError(f"X has {rows.d} features, but {owner} is expecting {n_features} "
                         "features as input.")
    return rows


def inertia(X: Any, centers: Any, *, sample_weight: Any = None) -> float:
    """The k-means objective of ``centers`` on X: sum_i s_i min_j ||x_i - c_j||^2, in one pass
    over X (in memory or a dask array), as ``inertia_`` is computed.

    Parameters
    ----------
    X : array-like (n, d) or dask array
    centers : array-like (k, d)
    sample_weight : array-like (n,), optional

    Returns
    -------
    float
    """
    rows = as_rows(X, sample_weight)
    C = check_data(centers, "centers", dtype=rows.dtype)
    if C.shape[1] != rows.d:
        raise ValueError(f"centers must have {rows.d} columns like X, got shape {C.shape}.")
    return rows.objective(C)


def initial_centers(X: Any, n_clusters: int, init: Any = "k-means++", *,
                    init_size: Any = "auto", sample_weight: Any = None,
                    random_state: Any = None, n_threads: Optional[int] = None) -> np.ndarray:
    """Initial centers as :class:`~gmmfast.cluster.GMMKMeans` draws them (in memory or over a
    dask array's blocks): to compare methods from identical initialisations. One seeding by
    ``init``: the default fit's seeding restarts are not made here.

    Parameters
    ----------
    X : array-like (n, d) or dask array; float32 stays float32, other numbers become float64
    n_clusters : int in [1, n]
    init : {"k-means++", "k-means||", "forgy", "random-partition"}, array (n_clusters, d) or callable
        As ``GMMKMeans(init=...)``; a callable is called as ``init(X, n_clusters, rng)``.
    init_size : int >= n_clusters, "auto" or None, default="auto"
        As ``GMMKMeans(init_size=...)``: rows k-means++ and k-means|| seed on.
    sample_weight : array-like (n,), optional
    random_state : None, int, numpy Generator or RandomState
    n_threads : int >= 1, optional
        Threads of the kernels in memory (the result does not depend on them).

    Returns
    -------
    centers : ndarray (n_clusters, d) of X's dtype
    """
    rows = as_rows(X, sample_weight, fit=True)
    k = check_int(n_clusters, "n_clusters", 1, rows.n)
    validate_params({"init_size": init_size},
                    {"init_size": [Interval("int", k), Options("auto"), NONE]})
    # one seeding, never the default fit's seeding restarts (the best of many Lloyd runs)
    p = GMMParams(k=k, init=check_init(init, k, rows.d, rows.dtype), init_size=init_size,
                  restarts=0)
    rows.check(p)
    if n_threads is not None:
        rows.n_threads = check_threads(n_threads)
    return rows.seed(p, check_random_state(random_state))


#: sample_size="auto": the coarse level fits this many rows per center (at least
#: AUTO_MIN_SAMPLE rows); a set that small or smaller is fitted on all its rows. Measured (one
#: thread, AVX-512): at 1e5 and 1e6 x 16, k = 100, 64 rows per center with a 20,000-row floor
#: reached a lower SSE/n than 128 per center at the same time; the floor keeps small sets
#: (the SIPU sets, GMM-200) on all their rows.
AUTO_ROWS_PER_CENTER = 64
AUTO_MIN_SAMPLE = 20_000
#: ... unless the sample would hold at least 1 / AUTO_WHOLE_SHARE of the rows (a pass over it
#: saves at most half of one over every row) and fewer than AUTO_WHOLE_ROWS_PER_DIM x d rows
#: per center (too few to place a center in d dimensions): then "auto" is every row.
#: Measured (one thread, AVX-512, seeds 0-2): at 1e5 x 64 and 1e5 x 128, k = 1000, every row
#: ended at SSE/n 3491.2 and 7909.4 (means) against 3527.0 and 8005.0 on the sample, in 4.6
#: and 7.4 s against 2.4 and 4.1 s (faiss's defaults: 3.6 and 5.2 s); over seeds 0-4 it is
#: below scikit-learn's KMeans(n_init=1) with the same seed in 5 of 5 (bench/results/
#: seeds.md). At 1e5 x 16, k = 1000, the sample stays (every row: 1.8-2.5 s, over 2x faiss's
#: 0.6 s).
AUTO_WHOLE_SHARE = 2
AUTO_WHOLE_ROWS_PER_DIM = 2
#: Between the coarse level and every row, Lloyd's passes also run on samples of this many
#: rows per center (each level at most 1 / LEVEL_STEP of the next one's rows). Measured (one
#: thread, AVX-512, in one process): adding 256 per center (at 1e7 rows and k = 1000 the only
#: place it fits) took the default fit at 1e7 x 16 from 14.6 and 11.3 s to 12.4 and 10.4 s
#: (seeds 0, 1), at 1e7 x 64 from 20.2 to 17.7 s and at 1e7 x 128 from 35.3 to 29.2 s, each
#: at a slightly lower SSE/n: the finest level starts nearer its fixed point.
MIDDLE_ROWS_PER_CENTER = (256, 1024)
LEVEL_STEP = 4
#: The work a coarse level may spend (seeding, G-MM, escapes), in units of what faiss's
#: default training and its labelling search do on the same data ((FAISS_ITERATIONS x
#: min(n, 256 k) + n) x k x d), times ``escape_effort``. Measured (one thread, AVX-512, 5
#: seeds): 0.5 made the default fit 1.6x and 1.7x faiss's time at 1e5 and 1e6 x 16, k = 100,
#: SSE/n 601.4 and 599.5 against 604.2 and 612.6 for scikit-learn's KMeans(n_init=1); 1.0
#: made it 2.1x and 2.5x, SSE/n 597.3 and 596.8.
FAISS_ITERATIONS = 25
FAISS_ROWS_PER_CENTER = 256
COARSE_SHARE = 0.5


@dataclass
class Level:
    """One level of a coarse-to-fine fit: G-MM on ``rows`` rows (a uniform sample of the data,
    or all of it) or, after it, Lloyd's passes (:func:`polish`; the default selection's last
    level, on every row, even when G-MM's level was every row too), its iterations, the
    centers it ended at and its objective on those rows there, its seconds, and the record of
    its first G-MM run (invariants included)."""

    rows: int
    n_iter: int
    centers: np.ndarray
    objective: float
    seconds: float
    history: History


@dataclass
class GMMParams:
    """The resolved parameters of a G-MM k-means fit ("auto" values replaced, checked)."""

    k: int
    sample_size: Any = None      # rows of the coarse level: an int, "auto" or None (all)
    eta: float = 0.1
    init: Union[str, np.ndarray, Callable] = "k-means++"
    init_size: Any = "auto"      # rows k-means++ seeds on: an int, None (all) or "auto"
    n_init: int = 1
    max_iter: int = 300
    tol: float = 1e-4
    selection: Union[str, Callable] = "merge-split"
    walk_steps: int = 0
    n_candidates: int = 8
    sampler: str = "uniform"
    n_neighbors: int = 8
    patience: int = 80
    restarts: Any = "auto"       # seeding restarts: an int or "auto" (see restart_centers)
    escape_effort: float = 1.0
    max_time: Optional[float] = None
    verbose: int = 0

    def levels(self, n: int, d: int) -> List[int]:
        """Rows of each level for n rows of data in d dimensions, coarse to fine, the last
        one n: G-MM with its escapes runs on the first, Lloyd's passes on the others."""
        size = self.sample_size
        if isinstance(size, str):      # "auto": the default selection only
            if self.core_selection != "merge-split":
                return [n]
            size = max(AUTO_ROWS_PER_CENTER * self.k, AUTO_MIN_SAMPLE)
            if (AUTO_WHOLE_SHARE * size >= n
                    and size < AUTO_WHOLE_ROWS_PER_DIM * d * self.k):
                return [n]
        if size is None or size >= n:
            return [n]
        sizes = [size]
        for per_center in MIDDLE_ROWS_PER_CENTER:
            m = per_center * self.k
            if sizes[-1] * LEVEL_STEP <= m and m * LEVEL_STEP <= n:
                sizes.append(m)
        return sizes + [n]

    @property
    def polishes(self) -> bool:
        """Whether a fit on every row (one level) still ends with Lloyd's passes to a fixed
        point (:func:`polish`): the default selection (merge-split, eta < 1) does, whose G-MM
        stops at a gap of ``tol * F(w_0)``, which can leave it a relative 1e-6..1e-4 above a
        fixed point of Lloyd's map. Lloyd (eta = 1, "mm"), the paper's random bounds and the
        biased selections keep their results unchanged."""
        return isinstance(self.core_selection, str) and self.core_selection == "merge-split"

    @property
    def restarts_apply(self) -> bool:
        """Whether the seeding may be restarts (:func:`~gmmfast.cluster._restarts.
        restart_centers`): the default search (merge-split, eta < 1) seeded by k-means++."""
        return (self.restarts != 0 and isinstance(self.core_selection, str)
                and self.core_selection == "merge-split" and isinstance(self.init, str)
                and self.init == "k-means++")

    @property
    def core_selection(self) -> Union[str, Callable]:
        """The selection handed to :func:`~gmmfast.core.generalized_mm`: with eta = 1 every
        valid bound touches, so "random" and "merge-split" are Lloyd's "mm"."""
        if self.selection in ("random", "merge-split") and self.eta == 1.0:
            return "mm"
        if isinstance(self.selection, str) and self.selection == "balanced":
            from ._family import balanced_bias
            return balanced_bias
        return self.selection


@dataclass
class Run:
    """One single run's outcome: the centers, F there, the iterations (escape phases
    included), the first phase's history, the escapes, and what the rows object needs to
    finish the fit (the family, and the cluster sums at ``w`` when escapes computed them)."""

    w: np.ndarray
    objective: float
    n_iter: int
    history: Optional[History] = None
    escapes: List[Escape] = field(default_factory=list)
    labels: Any = None
    family: Any = None
    sums: Any = None
    levels: List[Level] = field(default_factory=list)
    restarts: Any = None


def fit_runs(n_init: int, start: Callable[[int], np.ndarray],
             single: Callable[[np.ndarray, int], Run],
             better: Callable[[Run, Run], bool] = lambda new, best: new.objective
             < best.objective) -> Run:
    """The best of ``n_init`` single runs: run r starts from ``start(r)``; a run replaces the
    best so far when ``better(run, best)``. BLAS runs single threaded (the kernels' OpenMP
    threads call it in parallel)."""
    best: Optional[Run] = None
    with blas_single_threaded():
        for r in range(n_init):
            res = single(start(r), r)
            if best is None or better(res, best):
                best = res
    return best


def gmm_run(rows: Any, w0: np.ndarray, p: GMMParams, rng: np.random.Generator,
            init_passes: float, level_passes: Optional[float] = None) -> Run:
    """One G-MM run from ``w0``: the family of ``rows`` (seeded from ``rng``), Algorithm 1,
    then, with merge-split, the escapes (:func:`~gmmfast.cluster._escape.escape`) within a
    budget of what ``level_passes`` passes over ``rows`` leave after the seeding and the
    first run or, if None, of ``escape_effort`` times the
    work of the initialisation (``init_passes`` passes of a k-center search) and of the
    first run."""
    selection = p.core_selection
    family = rows.family(p, selection, draw_seed(rng))
    callback = _progress(family) if p.verbose else None

    def phase(w: np.ndarray, max_iter: int) -> GMMResult:
        return generalized_mm(family, w, eta=p.eta, tol=p.tol, max_iter=max_iter,
                              selection=selection, random_state=rng, callback=callback)

    res = main = phase(w0, p.max_iter)
    escapes: List[Escape] = []
    sums = None
    if selection == "merge-split":
        res, escapes, sums = escape(
            family, res, phase, rng, n_neighbors=p.n_neighbors, patience=p.patience,
            max_iter=p.max_iter, max_time=p.max_time,
            max_passes=pass_budget(p.escape_effort, init_passes, res.n_iter, rows.n, p.k,
                                   rows.d) if level_passes is None
            else max(0.0, level_passes - init_passes - res.n_iter - 1))
        if p.verbose:
            kept = sum(e.accepted for e in escapes)
            print(f"  escapes: {len(escapes)} proposals, {kept} kept; objective "
                  f"{main.objective:.6g} -> {res.objective:.6g}", flush=True)
    return Run(w=res.w, objective=res.objective,
               n_iter=main.n_iter + sum(e.history.n_iter for e in escapes),
               history=main.history, escapes=escapes, family=family, sums=sums)


def fit_gmm(rows: Any, p: GMMParams, rng: np.random.Generator) -> Run:
    """A G-MM k-means fit on ``rows``, coarse to fine.

    The coarse level: ``p.n_init`` runs (seeding, G-MM, escapes) on a uniform sample of the
    first of :meth:`GMMParams.levels` rows, or on every row, the lowest objective kept. Then
    each finer level (a larger sample, then every row): Lloyd's passes from the previous
    level's centers to a fixed point (:func:`polish`). With the default selection
    (:attr:`GMMParams.polishes`) a fit on every row also ends with that polish, on the same
    rows (a second Level record): every default fit ends at a fixed point of Lloyd's map.
    The labels, F and the empty-cluster warning are those of every row (from the rows
    object)."""
    t0 = time.perf_counter()
    levels = p.levels(rows.n, rows.d)
    coarse = rows if len(levels) == 1 else rows.sample(levels[0], p.k, rng)
    level_passes = None if len(levels) == 1 else coarse_level_passes(p, rows.n, coarse.n)
    # "auto" restarts are for data fitted on all its rows: a coarse level's work is held to
    # its own budget (level_passes), which the restarts are not part of
    seeding = p if len(levels) == 1 or p.restarts != "auto" else replace(p, restarts=0)

    seed_rows = seeding_rows(rows, coarse, p, rng)

    def start(r: int) -> np.ndarray:
        t = time.perf_counter()
        w0 = seed_rows.seed(seeding, rng)
        if p.verbose:
            print(f"G-MM k-means{rows.where} run {r + 1}/{p.n_init}: initialisation "
                  f"({p.init if isinstance(p.init, str) else 'given'}) on {seed_rows.n} rows "
                  f"{time.perf_counter() - t:.2f} s", flush=True)
        return w0

    def single(w0: np.ndarray, r: int) -> Run:
        # the budget charges the seeding on the coarse rows; a larger one asked by init_size
        # is extra work, so the escapes keep what they have with the default seeding
        run = gmm_run(coarse, w0, p, rng, coarse.init_passes(p), level_passes)
        run.restarts = getattr(seed_rows, "restarts", None)
        return run

    best = fit_runs(p.n_init, start, single)
    best.levels = [Level(rows=coarse.n, n_iter=best.n_iter, centers=best.w,
                         objective=best.objective, seconds=time.perf_counter() - t0,
                         history=best.history)]
    for m in levels[1:-1]:
        best = polish(rows.sample(m, p.k, rng), best, p)
    if len(levels) > 1 or p.polishes:
        best = polish(rows, best, p)
    best.labels = rows.finish(best, p.k)
    return best


def seeding_rows(rows: Any, coarse: Any, p: GMMParams, rng: np.random.Generator) -> Any:
    """The rows a fit seeds on: the coarse level's, unless the fit is coarse to fine and
    ``init_size`` asks k-means++ or k-means|| for more of the data's rows than the coarse
    sample holds (an int, or None: every row); then a uniform sample of that many rows of the
    data, drawn apart from the coarse level's (every row when it asks for as many)."""
    if (coarse is rows or isinstance(p.init_size, str) or not isinstance(p.init, str)
            or p.init not in ("k-means++", "k-means||")):
        return coarse
    size = rows.n if p.init_size is None else min(p.init_size, rows.n)
    if size <= coarse.n:
        return coarse
    return rows if size >= rows.n else rows.sample(size, p.k, rng)


def coarse_level_passes(p: GMMParams, n: int, m: int) -> float:
    """Passes over the m rows of a coarse level the level may make (its seeding, its G-MM run
    and its escapes): ``escape_effort`` x COARSE_SHARE times the work of faiss's
    default training and labelling search on all n rows."""
    reference = FAISS_ITERATIONS * min(n, FAISS_ROWS_PER_CENTER * p.k) + n
    return p.escape_effort * COARSE_SHARE * reference / m


def polish(rows: Any, coarse: Run, p: GMMParams) -> Run:
    """A finer level (or the last one on the same rows): Lloyd's passes (G-MM with eta = 1)
    on ``rows`` from the previous level's centers, until no label changes (a fixed point of
    Lloyd's map: tol = 0), or ``p.max_iter`` passes.
    Monotone: never above the previous centers' objective on ``rows``. In memory the passes
    after the first are incremental (a row whose label provably stays is not read; F and the
    sums come from per-cluster moments), and the level's objective is summed from the rows
    at its end (one more read of the rows)."""
    t0 = time.perf_counter()
    coarse.family = None       # the previous level's buffers: freed before this level's
    family = rows.family(p, "mm", 0, incremental=True)
    if p.verbose:
        print(f"  finer level: Lloyd's passes on {rows.n} rows", flush=True)
    res = generalized_mm(family, coarse.w, eta=1.0, tol=0.0, max_iter=p.max_iter,
                         selection="mm", callback=_progress(family) if p.verbose else None)
    objective = family.exact_objective(res.w)
    levels = coarse.levels + [Level(rows=rows.n, n_iter=res.n_iter, centers=res.w,
                                    objective=objective,
                                    seconds=time.perf_counter() - t0, history=res.history)]
    return Run(w=res.w, objective=objective, n_iter=coarse.n_iter + res.n_iter,
               history=coarse.history, escapes=coarse.escapes, family=family, levels=levels,
               restarts=coarse.restarts)


def _progress(family: Any) -> Callable[[int, History], None]:
    """A verbose line per iteration: objective, gap, labels that changed (when the family
    counts them), seconds."""
    def callback(t: int, history: History) -> None:
        changed = getattr(family.last, "changed", None)
        moved = f", {changed} points changed cluster" if changed is not None else ""
        print(f"  iteration {t}: objective {history.objective[-1]:.6g}, "
              f"gap {history.gap[-1]:.3g}{moved}, {history.time[-1]:.2f} s", flush=True)
    return callback
