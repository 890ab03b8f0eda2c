"""Initial centers for k-means: greedy k-means++, k-means||, Forgy and random partitions."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._kernels._common import openmp_max_threads
from .._validation import (CALLABLE, Kind, Options, check_data, check_int, check_random_state,
                           check_real, check_rows, check_threads, draw_seed,
                           validate_params)
from . import _pass
from ._pass import CHUNK, assign, update_centers


#: Rounds of rejection sampling before k-means++ falls back to a pass that applies the update.
_MAX_REJECTION_ROUNDS = 8


def kmeans_plusplus(X: Any, n_clusters: int, sample_weight: Any = None,
                    random_state: Any = None, *, n_trials: Optional[int] = None,
                    n_threads: Optional[int] = None) -> np.ndarray:
    """Greedy k-means++ seeding (Arthur & Vassilvitskii 2007; 2 + log k trials per center).

    The first center is a sample drawn by weight; each next one is the best, by
    potential, of ``n_trials`` samples drawn with probability proportional to
    s_i D_i (D_i: the squared distance to the nearest center so far), as in
    scikit-learn. One pass over X per center: the pass that scores center c's
    candidates (one SIMD kernel call, vectorised over 16 rows of float32 panels of X,
    see :class:`_SeedRows`) also applies center c - 1 to D. The candidates are
    therefore drawn before that update, from s_i D_i, and kept with probability
    D'_i / D_i (D' after the update): rejection sampling, so they are exactly draws
    from s_i D'_i. Memory beyond X: D (n doubles), per-chunk sums and, for float64 X
    of at least 1 MiB and float32 X of at most 256 MiB, the panels (n d float32s).
    The result depends on ``rng`` only, never on the thread count; float32 stays
    float32.

    Parameters
    ----------
    X : array-like (n, d); float32 stays float32, other numbers become float64
    n_clusters : int in [1, n]
    sample_weight : array-like (n,), optional
        Non-negative with a positive sum (default: ones).
    random_state : None, int, numpy Generator or RandomState
    n_trials : int >= 1, optional
        Candidates per center (default 2 + int(log k), as scikit-learn).
    n_threads : int >= 1, optional

    Returns
    -------
    centers : ndarray (n_clusters, d) of X's dtype
    """
    X, k, sw, rng, n_threads = _check(X, n_clusters, sample_weight, random_state, n_threads)
    if n_trials is not None:
        n_trials = check_int(n_trials, "n_trials", 1)
    return _plusplus(X, k, sw, rng, n_trials, n_threads)


def _check(X, n_clusters, sample_weight, random_state, n_threads):
    X, sw = check_rows(X, sample_weight, fit=True)
    k = check_int(n_clusters, "n_clusters", 1, X.shape[0])
    rng = check_random_state(random_state)
    n_threads = openmp_max_threads() if n_threads is None else check_threads(n_threads)
    return X, k, sw, rng, n_threads


#: float64 X of at least this many bytes is seeded on float32 panels (see _SeedRows); below
#: 1 MiB seeding takes milliseconds either way and keeps float64's distances.
SEED_FLOAT32_BYTES = 1 << 20
#: float32 X of at most this many bytes is seeded on panels (a copy of X); larger float32 X
#: is read in place by the row kernel.
SEED_PANEL_MAX_BYTES = 1 << 28


class _SeedRows:
    """X seen by k-means++ through float32 panels of its rows (:func:`gmmfast.cluster._pass.
    pp_panel`): the step's kernel then works on PANEL rows a vector, one subtraction and one
    fused multiply-add per row, candidate and coordinate (20,086 x 128, k = 100: 72 -> 40 ms
    per seeding on one AVX-512 thread; the row kernel spends its float lanes on the
    candidates, 7 of 16 at k = 100).

    Float64 X's panels hold its values rounded to float32: beyond the cache the pass is bound
    by memory, and float rows take float lanes. The candidates and the returned centers are
    X's rows; only the distances that weigh the draws and score the candidates see rows
    rounded to float32 (relative error 6e-8 per coordinate of the centered data), so the
    draws follow the same distribution up to that rounding (in tests the same centers were
    drawn). Where float32 cannot hold the distances (:data:`PANEL_D_MAX`), the seeding starts
    again on the float64 rows, from the same random state.
    """

    #: columns per call: exact (no padding to a vector of lanes), up to PANEL_MAX_CENTERS
    pp_columns = (1, _pass.PANEL_MAX_CENTERS)

    def __init__(self, X: np.ndarray, sample_weight: np.ndarray, n_threads: int):
        self.X = X
        self.shape = X.shape
        self.panels = _pass.pp_panel(X, n_threads)
        self.sw32 = sample_weight.astype(np.float32)

    def __getitem__(self, rows: Any) -> np.ndarray:
        return self.X[rows]

    @staticmethod
    def pp_step(rows: "_SeedRows", sample_weight: np.ndarray, closest: np.ndarray,
                CT: np.ndarray, update: bool, chunk_pot: np.ndarray, chunk_gain: np.ndarray,
                n_threads: int) -> None:
        _pass.pp_step_panel(rows.panels, rows.sw32, closest, CT, update, chunk_pot,
                            chunk_gain, n_threads)


def seeds_on_panels(X: np.ndarray) -> bool:
    """Whether dense X is seeded through :class:`_SeedRows`: float64 of at least
    SEED_FLOAT32_BYTES, float32 of at most SEED_PANEL_MAX_BYTES."""
    if X.dtype == np.float64:
        return X.nbytes >= SEED_FLOAT32_BYTES
    return X.nbytes <= SEED_PANEL_MAX_BYTES


def _plusplus(X: np.ndarray, k: int, sample_weight: np.ndarray, rng: np.random.Generator,
              n_trials: Optional[int], n_threads: int, pp_step: Any = None) -> np.ndarray:
    """kmeans_plusplus on validated arguments.

    ``pp_step`` replaces the dense kernel's step (:func:`gmmfast.cluster._pass.pp_step`,
    same arguments); X then only needs ``shape`` and rows as dense arrays by ``X[i]`` /
    ``X[indices]`` (CSR input: :class:`gmmfast.cluster._sparse.CSRData`). Dense X is read
    through float32 panels of its rows (:class:`_SeedRows`) unless small float64 or large
    float32 (:func:`seeds_on_panels`).
    """
    if pp_step is None and seeds_on_panels(X):
        state = rng.bit_generator.state
        centers = _greedy(_SeedRows(X, sample_weight, n_threads), k, sample_weight, rng,
                          n_trials, n_threads, _SeedRows.pp_step, panels=True)
        if centers is not None:
            return centers
        rng.bit_generator.state = state   # float32 distances out of range: seed in float64
    return _greedy(X, k, sample_weight, rng, n_trials, n_threads, pp_step)


#: The squared distances of float32 panels (:class:`_SeedRows`) must stay in float32's range:
#: the largest after the first center, D_max, within these bounds (a later candidate's
#: distance to a row is at most 4 D_max: both are rows, each within sqrt(D_max) of the first
#: center; 1e-30 is the bottom of the search's float32 screen). Float64 X beyond them (|x|
#: above about 1e18, or every distance below about 1e-15) is seeded on its float64 rows.
PANEL_D_MAX = float(np.finfo(np.float32).max) / 8
PANEL_D_MIN = 1e-30


def _greedy(X: Any, k: int, sample_weight: np.ndarray, rng: np.random.Generator,
            n_trials: Optional[int], n_threads: int, pp_step: Any,
            panels: bool = False) -> Optional[np.ndarray]:
    """Greedy k-means++ on X (an array, :class:`_SeedRows` or CSR rows) through ``pp_step``;
    with ``panels``, None as soon as the first center's float32 distances leave
    [PANEL_D_MIN, PANEL_D_MAX] (the caller then seeds on float64 rows)."""
    n = X.shape[0]
    if n_trials is None:
        n_trials = 2 + int(math.log(k))
    closest = np.full(n, np.inf)
    chunk_pot = np.empty(-(-n // CHUNK))
    prob = sample_weight / sample_weight.sum(dtype=np.float64)
    rows = np.empty(k, dtype=np.int64)    # the chosen centers, as rows of X
    none = np.empty(0, dtype=np.int64)
    rows[0] = rng.choice(n, p=prob)
    pp_gains(X, sample_weight, closest, chunk_pot, int(rows[0]), none, n_threads, pp_step)
    if panels and not PANEL_D_MIN <= float(closest.max()) <= PANEL_D_MAX:
        return None
    pending: Optional[int] = None
    for c in range(1, k):
        cand = pp_draw(X, sample_weight, closest, chunk_pot, n_trials, rng, prob, pending)
        if cand is None:              # most draws rejected: apply the update, then draw
            pp_gains(X, sample_weight, closest, chunk_pot, pending, none, n_threads, pp_step)
            pending = None
            cand = pp_draw(X, sample_weight, closest, chunk_pot, n_trials, rng, prob, None)
        best = int(np.argmax(pp_gains(X, sample_weight, closest, chunk_pot, pending, cand,
                                      n_threads, pp_step)))
        rows[c] = pending = int(cand[best])
    return X[rows]


def pp_gains(X: np.ndarray, sample_weight: np.ndarray, closest: np.ndarray,
             chunk_pot: np.ndarray, update: Optional[int], cand: np.ndarray,
             n_threads: int, pp_step: Any = None) -> np.ndarray:
    """One k-means++ pass: apply center ``update`` (a row of X, if any) to ``closest`` (D,
    the squared distance to the nearest center) and ``chunk_pot`` (the chunks' sums of
    s_i D_i), and return what each candidate row would lower the potential by.
    ``pp_step``: the kernel's step (default :func:`gmmfast.cluster._pass.pp_step`; CSR
    rows pass their own)."""
    if pp_step is None:
        pp_step = _pass.pp_step
    d = X.shape[1]
    # center lanes: a call's columns are a multiple of width, at most group of them
    width, group = getattr(X, "pp_columns", (_pass.pp_width(), 4 * _pass.pp_width()))
    lanes = np.concatenate([[update] if update is not None else [], cand]).astype(np.int64)
    gains = np.empty(lanes.shape[0])
    for lo in range(0, max(lanes.shape[0], 1), group):
        part = lanes[lo:lo + group]
        CT = np.zeros((d, max(-(-part.shape[0] // width), 1) * width))
        CT[:, :part.shape[0]] = X[part].T
        chunk_gain = np.empty((chunk_pot.shape[0], CT.shape[1]))
        pp_step(X, sample_weight, closest, CT, lo == 0 and update is not None,
                chunk_pot, chunk_gain, n_threads)
        gains[lo:lo + part.shape[0]] = chunk_gain[:, :part.shape[0]].sum(axis=0)
    if np.isnan(gains).any():         # the float kernel could not allocate its copy of CT
        raise MemoryError("k-means++: no memory for the candidates' float32 copy")
    return gains[lanes.shape[0] - cand.shape[0]:]


def pp_draw(X: np.ndarray, sample_weight: np.ndarray, closest: np.ndarray,
            chunk_pot: np.ndarray, n_trials: int, rng: np.random.Generator,
            prob: np.ndarray, pending: Optional[int]) -> Optional[np.ndarray]:
    """``n_trials`` rows drawn from s_i min(D_i, ||x_i - x_pending||^2), or None if the
    rejection rate is too high (then the caller applies the pending center first)."""
    n = X.shape[0]
    cum = np.cumsum(chunk_pot)
    potential = float(cum[-1])
    out: list = []
    for _ in range(_MAX_REJECTION_ROUNDS):
        m = n_trials - len(out)
        if potential > 0:
            targets = np.minimum(rng.random(m) * potential, np.nextafter(potential, 0))
            idx = _pass.pp_pick(sample_weight, closest, cum, targets)
        else:   # every point already sits on a center: duplicates are unavoidable
            idx = rng.choice(n, size=m, p=prob).astype(np.int64)
        if pending is not None:
            D = closest[idx]
            dp = ((X[idx].astype(np.float64) - X[pending].astype(np.float64)) ** 2).sum(1)
            keep = (rng.random(m) * D < np.minimum(D, dp)) | (D == 0)
            idx = idx[keep]
        out.extend(idx.tolist())
        if len(out) == n_trials:
            return np.asarray(out, dtype=np.int64)
    return None


def kmeans_parallel(X: Any, n_clusters: int, sample_weight: Any = None,
                    random_state: Any = None, *, oversampling: float = 2.0, rounds: int = 5,
                    n_threads: Optional[int] = None) -> np.ndarray:
    """k-means|| seeding (Bahmani et al. 2012): few passes, then a weighted reduction.

    Start from one row drawn by weight; in each of ``rounds`` rounds every row is
    drawn independently with probability min(1, l D_i / phi), D_i = s_i
    ||x_i - c||^2 to its nearest candidate, phi their sum and l = ``oversampling``
    k; one pass then updates D with the new candidates. Rounds continue past
    ``rounds`` while fewer than k candidates were drawn and phi > 0, so the result
    has k distinct centers wherever the data has them. Each candidate is then
    weighted by the sample weight of the rows nearest to it, and greedy k-means++
    on the weighted candidates picks the k centers. A row's draw depends on its
    global index and the round's seed only (a stream per row), so a chunked
    scheduler draws the same rows. Passes over X: rounds + 2; memory: D (n
    doubles), a byte per row and the candidates. Parameters as
    :func:`kmeans_plusplus`, and ``oversampling`` (l / k, > 0) and ``rounds`` (>= 1).
    """
    X, k, sw, rng, n_threads = _check(X, n_clusters, sample_weight, random_state, n_threads)
    oversampling = check_real(oversampling, "oversampling", 0.0)
    if not oversampling > 0:
        raise ValueError(f"oversampling must be > 0, got {oversampling!r}.")
    return _parallel(X, k, sw, rng, oversampling, check_int(rounds, "rounds", 1), n_threads)


def _parallel(X: np.ndarray, k: int, sample_weight: np.ndarray, rng: np.random.Generator,
              oversampling: float, rounds: int, n_threads: int) -> np.ndarray:
    """kmeans_parallel on validated arguments."""
    n, d = X.shape
    ell = oversampling * k
    prob = sample_weight / sample_weight.sum(dtype=np.float64)
    dist = np.full(n, np.inf)
    point_costs = np.empty(n)
    new = np.array([rng.choice(n, p=prob)], dtype=np.int64)
    cand = [new]
    n_cand = 1
    for r in range(10 * max(int(rounds), 1)):
        assign(X, sample_weight, np.ascontiguousarray(X[new]), n_threads, point_costs=point_costs)
        np.minimum(dist, point_costs, out=dist)
        phi = math.fsum(dist)
        if not phi > 0 or (r >= rounds and n_cand >= k):
            break
        new = _pass.draw_rows(dist, ell / phi, draw_seed(rng), 0, n_threads)
        if new.shape[0]:
            cand.append(new)
            n_cand += new.shape[0]
    C = np.ascontiguousarray(X[np.concatenate(cand)])
    weight = assign(X, sample_weight, C, n_threads, with_sums=True).sums.weight
    return _plusplus(C, k, weight.astype(X.dtype), rng, None, n_threads)


#: Rows drawn (in proportion to their cost) for an escape's new center, the one that lowers
#: the objective most is taken: 32 rather than k-means++'s 2 + log k, as a missed cluster
#: spread over several neighbours holds little of the cost (measured on GMM-200 data
#: seed 0: CI = 0 in 17/20 seeds with 7 candidates, 20/20 with 32).
NEW_CENTER_CANDIDATES = 32


def new_center(X: np.ndarray, sw: np.ndarray, others: np.ndarray, rng: np.random.Generator,
               n_threads: int) -> int:
    """The row where one greedy k-means++ step with NEW_CENTER_CANDIDATES candidates puts a
    new center next to ``others``."""
    n = X.shape[0]
    closest = np.empty(n)
    assign(X, np.ones(n, dtype=X.dtype), np.ascontiguousarray(others), n_threads,
           point_costs=closest)
    chunk_pot = np.add.reduceat(sw * closest, np.arange(0, n, CHUNK))
    prob = sw / sw.sum(dtype=np.float64)
    cand = pp_draw(X, sw, closest, chunk_pot, NEW_CENTER_CANDIDATES, rng,
                   prob, None)
    return int(cand[np.argmax(pp_gains(X, sw, closest, chunk_pot, None, cand, n_threads))])


#: Initialisations by name (GMMKMeans's ``init``), and every form ``init`` takes.
INITS = ("k-means++", "k-means||", "forgy", "random-partition")
INIT_FORMS = [Options(*INITS),
              Kind(lambda v: isinstance(v, (list, tuple)) or hasattr(v, "__array__"),
                   "an array of shape (n_clusters, n_features)"), CALLABLE]


def check_init(init: Any, k: int, d: int, dtype: np.dtype) -> Any:
    """``init`` in one of :data:`INIT_FORMS`; an array is returned as a finite (k, d) array
    of ``dtype`` (else a ValueError naming the shape it must have)."""
    validate_params({"init": init}, {"init": INIT_FORMS})
    if isinstance(init, str) or callable(init):
        return init
    init = check_data(init, "init", dtype=dtype)
    if init.shape != (k, d):
        raise ValueError(f"init array must have shape (n_clusters, n_features) = ({k}, {d}), "
                         f"got {init.shape}.")
    return init


def seed_centers(X: np.ndarray, sw: np.ndarray, k: int, init: Any, rng: np.random.Generator,
                 n_threads: int, init_size: int) -> np.ndarray:
    """Initial centers on validated arguments: by name, a copy of an array, or a callable's
    (checked); k-means++ and k-means|| on a uniform sample of ``init_size`` rows when X has
    more."""
    n = X.shape[0]
    if isinstance(init, np.ndarray):
        return init.copy()
    if callable(init):
        centers = check_data(init(X, k, rng), "init(X, n_clusters, random_state)",
                             dtype=X.dtype)
        if centers.shape != (k, X.shape[1]):
            raise ValueError(f"init callable must return an array of shape ({k}, "
                             f"{X.shape[1]}), got {centers.shape}.")
        return centers
    if init in ("k-means++", "k-means||"):
        if init_size < n:
            rows = np.sort(rng.choice(n, size=init_size, replace=False))
            X, sw = np.ascontiguousarray(X[rows]), np.ascontiguousarray(sw[rows])
        if init == "k-means++":
            return _plusplus(X, k, sw, rng, None, n_threads)
        return _parallel(X, k, sw, rng, 2.0, 5, n_threads)
    forgy = X[rng.choice(n, size=k, replace=False)]
    if init == "forgy":
        return np.ascontiguousarray(forgy)
    labels = rng.integers(0, k, size=n).astype(np.int32)   # random partition
    return update_centers(X, sw, labels, np.ascontiguousarray(forgy), n_threads)[0]
