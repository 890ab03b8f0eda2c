# cython: language_level=3
"""Many short k-means runs at once: greedy k-means++ seeding, then Lloyd's iterations to a
fixed point, each run on its own random stream, in parallel over the runs.

On small problems a Python-level pass costs far more than its arithmetic, so a search
that samples many basins needs the whole run (seeding and iterations) in one nogil call.
Run r draws from the stream (seed, r) only: its result never depends on the thread
count or on which thread ran it, and the best run is chosen by (objective, r).
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

import numpy as np

from ._common cimport (check_interrupt, floating, gmm_rng_stream, gmm_rng_uniform,
                       raise_interrupt, sqdist, threads_for)

#: Flops below which another thread is not worth waking (as the other kernels).
cdef double _GRAIN = 2e5


cdef Py_ssize_t _draw(const floating* sw, const double* closest, Py_ssize_t n, double pot,
                      uint64_t* state) noexcept nogil:
    """A row drawn with probability sw_i closest_i / pot (closest None: sw_i / pot)."""
    cdef double target = gmm_rng_uniform(state) * pot, acc = 0.0, p
    cdef Py_ssize_t i, last = -1
    for i in range(n):
        p = sw[i] * (closest[i] if closest != NULL else 1.0)
        if p > 0:
            last = i
            acc = acc + p
            if acc > target:
                return i
    return last if last >= 0 else n - 1


cdef double _seed(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                  Py_ssize_t k, int n_trials, double total_weight, uint64_t* state,
                  floating* C, double* closest, double* trial, double* keep) noexcept nogil:
    """Greedy k-means++ (each new center the best of n_trials draws by the potential it
    leaves) into C; returns nothing useful but fills closest (squared distance of each row
    to its nearest center). trial and keep are scratch rows of n doubles."""
    cdef Py_ssize_t i, c, t, r, best_r
    cdef double pot, new_pot, best_pot, dist
    cdef double* tmp
    r = _draw(sw, NULL, n, total_weight, state)
    memcpy(C, X + r * d, d * sizeof(floating))
    pot = 0.0
    for i in range(n):
        closest[i] = sqdist(X + i * d, C, d)
        pot = pot + sw[i] * closest[i]
    for c in range(1, k):
        best_pot = INFINITY
        best_r = 0
        for t in range(n_trials):
            r = _draw(sw, closest, n, pot, state)
            new_pot = 0.0
            for i in range(n):
                dist = sqdist(X + i * d, X + r * d, d)
                trial[i] = dist if dist < closest[i] else closest[i]
                new_pot = new_pot + sw[i] * trial[i]
            if new_pot < best_pot:
                best_pot, best_r = new_pot, r
                tmp = keep
                keep = trial
                trial = tmp
        memcpy(C + c * d, X + best_r * d, d * sizeof(floating))
        memcpy(closest, keep, n * sizeof(double))
        pot = best_pot
    return pot


cdef void _nearest2(const floating* x, const floating* C, Py_ssize_t k, Py_ssize_t d,
                    Py_ssize_t* j1, double* d1, double* d2) noexcept nogil:
    """The nearest center j1 of x (first minimum), its squared distance d1 and the
    second-smallest squared distance d2 (+inf when k = 1)."""
    cdef Py_ssize_t j
    cdef double dist
    d1[0] = INFINITY
    d2[0] = INFINITY
    j1[0] = 0
    for j in range(k):
        dist = sqdist(x, C + j * d, d)
        if dist < d1[0]:
            d2[0] = d1[0]
            d1[0] = dist
            j1[0] = j
        elif dist < d2[0]:
            d2[0] = dist


cdef double _lloyd(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                   Py_ssize_t k, int max_iter, floating* C, floating* C_old, double* sums,
                   double* wsum, double* shift, double* half_gap, int* labels, double* upper,
                   double* lower, int* n_iter) noexcept nogil:
    """Lloyd's iterations from C until no label changes (or max_iter passes), with
    Hamerly's bounds (an upper bound on each row's distance to its center, a lower bound on
    the others: a row is searched only when they cross) and cluster sums kept up to date
    by the rows that move. Returns sum_i sw_i ||x_i - c_{l_i}||^2 at the returned C,
    summed afresh over the rows; C is the mean of its cluster (or kept where the
    cluster is empty)."""
    cdef Py_ssize_t i, j, q, f, it, a, far = 0
    cdef Py_ssize_t changed = 1
    cdef double d1, d2, dist, z, big, second, w, sse
    memset(sums, 0, k * d * sizeof(double))
    memset(wsum, 0, k * sizeof(double))
    for i in range(n):
        _nearest2(X + i * d, C, k, d, &a, &d1, &d2)
        labels[i] = <int>a
        upper[i] = sqrt(d1)
        lower[i] = sqrt(d2)
        wsum[a] = wsum[a] + sw[i]
        for f in range(d):
            sums[a * d + f] = sums[a * d + f] + sw[i] * X[i * d + f]
    n_iter[0] = 1
    for it in range(1, max_iter):
        memcpy(C_old, C, k * d * sizeof(floating))
        for j in range(k):
            if wsum[j] > 0:
                for f in range(d):
                    C[j * d + f] = <floating>(sums[j * d + f] / wsum[j])
        big = 0.0
        second = 0.0
        for j in range(k):
            shift[j] = sqrt(sqdist(C + j * d, C_old + j * d, d))
            if shift[j] > big:
                second = big
                big = shift[j]
                far = j
            elif shift[j] > second:
                second = shift[j]
            half_gap[j] = INFINITY
        for j in range(k):
            for q in range(j + 1, k):
                dist = 0.5 * sqrt(sqdist(C + j * d, C + q * d, d))
                if dist < half_gap[j]:
                    half_gap[j] = dist
                if dist < half_gap[q]:
                    half_gap[q] = dist
        changed = 0
        for i in range(n):
            a = labels[i]
            upper[i] = upper[i] + shift[a]
            lower[i] = lower[i] - (second if a == far else big)
            z = lower[i] if lower[i] > half_gap[a] else half_gap[a]
            if upper[i] <= z:
                continue
            upper[i] = sqrt(sqdist(X + i * d, C + a * d, d))
            if upper[i] <= z:
                continue
            _nearest2(X + i * d, C, k, d, &j, &d1, &d2)
            upper[i] = sqrt(d1)
            lower[i] = sqrt(d2)
            if j != a:
                changed = changed + 1
                labels[i] = <int>j
                w = sw[i]
                wsum[a] = wsum[a] - w
                wsum[j] = wsum[j] + w
                for f in range(d):
                    sums[a * d + f] = sums[a * d + f] - w * X[i * d + f]
                    sums[j * d + f] = sums[j * d + f] + w * X[i * d + f]
        n_iter[0] = <int>(it + 1)
        if changed == 0:
            break
    if changed != 0 or max_iter == 1:     # stopped by max_iter: the means of the labels
        for j in range(k):
            if wsum[j] > 0:
                for f in range(d):
                    C[j * d + f] = <floating>(sums[j * d + f] / wsum[j])
    sse = 0.0
    for i in range(n):
        sse = sse + sw[i] * sqdist(X + i * d, C + labels[i] * d, d)
    return sse


def lloyd_restarts(const floating[:, ::1] X, const floating[::1] sample_weight, int k,
                   uint64_t seed, int64_t first, int64_t n_runs, int n_trials, int max_iter,
                   floating[:, ::1] best_centers, double[::1] objectives, int[::1] n_iter,
                   int n_threads):
    """Runs first .. first + n_runs - 1: greedy k-means++ (n_trials draws per center), then
    Lloyd's iterations to a fixed point (at most max_iter passes). objectives[j] and
    n_iter[j] receive run first + j's objective and passes; best_centers the centers of
    the run of lowest objective (the lowest run index among equals). Returns that run's
    index."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t j = 0, i, tid, T
    cdef int64_t r, lo, hi, best_run = -1
    cdef int stopped = 0
    cdef double total_weight = 0.0, best_obj = INFINITY, obj
    cdef uint64_t state
    if sample_weight.shape[0] != n or n == 0 or d == 0:
        raise ValueError("lloyd_restarts: X needs rows and features, sample_weight one "
                         "weight per row")
    if k < 1 or k > n:
        raise ValueError(f"lloyd_restarts: k must be in [1, {n}], got {k}")
    if n_runs < 1 or n_trials < 1 or max_iter < 1:
        raise ValueError("lloyd_restarts: n_runs, n_trials and max_iter must be >= 1")
    if best_centers.shape[0] != k or best_centers.shape[1] != d \
            or objectives.shape[0] != n_runs or n_iter.shape[0] != n_runs:
        raise ValueError("lloyd_restarts: best_centers (k, d), objectives and n_iter "
                         "(n_runs,) have the wrong shape")
    for i in range(n):
        total_weight += sample_weight[i]
    if not total_weight > 0:
        raise ValueError("lloyd_restarts: the sample weights sum to zero")
    T = threads_for(n_threads, n_runs, <double>n_runs * n * k * d * (n_trials + 10),
                    _GRAIN)
    dtype = np.float32 if floating is float else np.float64
    cdef floating[:, :, ::1] C = np.empty((T, k, d), dtype=dtype)
    cdef floating[:, :, ::1] keepC = np.empty((T, k, d), dtype=dtype)
    cdef double[:, :, ::1] sums = np.empty((T, k, d))
    cdef floating[:, :, ::1] C_old = np.empty((T, k, d), dtype=dtype)
    cdef double[:, ::1] wsum = np.empty((T, k))
    cdef double[:, ::1] shift = np.empty((T, k))
    cdef double[:, ::1] half_gap = np.empty((T, k))
    cdef double[:, :, ::1] rows = np.empty((T, 3, n))
    cdef int[:, ::1] labels = np.empty((T, n), dtype=np.intc)
    cdef double[::1] thread_obj = np.full(T, np.inf)
    cdef int64_t[::1] thread_run = np.full(T, -1, dtype=np.int64)
    lo = first
    while lo < first + n_runs:         # rounds of a few runs per thread: Ctrl-C between
        hi = min(lo + 4 * T, first + n_runs)
        with nogil, parallel(num_threads=T):
            tid = threadid()
            for r in prange(lo, hi, schedule="dynamic"):
                state = gmm_rng_stream(seed, <uint64_t>r)
                _seed(&X[0, 0], &sample_weight[0], n, d, k, n_trials, total_weight, &state,
                      &C[tid, 0, 0], &rows[tid, 0, 0], &rows[tid, 1, 0], &rows[tid, 2, 0])
                obj = _lloyd(&X[0, 0], &sample_weight[0], n, d, k, max_iter, &C[tid, 0, 0],
                             &C_old[tid, 0, 0], &sums[tid, 0, 0], &wsum[tid, 0],
                             &shift[tid, 0], &half_gap[tid, 0], &labels[tid, 0],
                             &rows[tid, 1, 0], &rows[tid, 2, 0], &n_iter[r - first])
                objectives[r - first] = obj
                if obj < thread_obj[tid] or (obj == thread_obj[tid] and r < thread_run[tid]):
                    thread_obj[tid] = obj
                    thread_run[tid] = r
                    memcpy(&keepC[tid, 0, 0], &C[tid, 0, 0], k * d * sizeof(floating))
        with nogil:
            stopped = check_interrupt()
        if stopped:
            raise_interrupt()
        lo = hi
    for tid in range(T):
        if thread_run[tid] >= 0 and (thread_obj[tid] < best_obj or (
                thread_obj[tid] == best_obj and thread_run[tid] < best_run)):
            best_obj, best_run, j = thread_obj[tid], thread_run[tid], tid
    best_centers[:, :] = keepC[j]
    return best_run
