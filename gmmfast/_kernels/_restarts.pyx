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

# The searches and the k-means++ steps are those of the passes (gmm_simd.h, see _kmeans.pyx).
cdef extern from "gmm_simd.h":
    int gmm_argmin_level() noexcept nogil
    Py_ssize_t gmm_argmin_block_d(int level) noexcept nogil
    Py_ssize_t gmm_argmin_block_f(int level) noexcept nogil
    Py_ssize_t gmm_search_cols_d(int level, Py_ssize_t m) noexcept nogil
    Py_ssize_t gmm_search_cols_f(int level, Py_ssize_t m) noexcept nogil
    void gmm_argmin2_d(int level, const double* X, const int64_t* rows, Py_ssize_t n,
                       Py_ssize_t d, const double* CT, const double* csq, Py_ssize_t kp,
                       Py_ssize_t kc, int* labels, double* best, double* second) noexcept nogil
    void gmm_argmin2_f(int level, const float* X, const int64_t* rows, Py_ssize_t n,
                       Py_ssize_t d, const float* CT, const float* csq, Py_ssize_t kp,
                       Py_ssize_t kc, int* labels, float* best, float* second) noexcept nogil
    Py_ssize_t gmm_pp_width(int level) noexcept nogil
    int gmm_pp_d(int level, const double* X, Py_ssize_t n, Py_ssize_t d, const double* CT,
                 Py_ssize_t tp, const double* sw, double* closest, int update, double* pot,
                 double* gain) noexcept nogil
    int gmm_pp_f(int level, const float* X, Py_ssize_t n, Py_ssize_t d, const double* CT,
                 Py_ssize_t tp, const float* sw, double* closest, int update, double* pot,
                 double* gain) noexcept nogil

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


cdef void _pp(int level, const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
              const double* PT, Py_ssize_t tp, double* closest, int update, double* pot,
              double* gain) noexcept nogil:
    if floating is double:
        gmm_pp_d(level, X, n, d, PT, tp, sw, closest, update, pot, gain)
    else:
        gmm_pp_f(level, X, n, d, PT, tp, sw, closest, update, pot, gain)


cdef double _update(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                    const floating* c, double* closest) noexcept nogil:
    """closest_i = min(closest_i, ||x_i - c||^2); returns the potential sum_i sw_i closest_i.
    One center: sqdist's loop over the features beats a k-means++ step with one lane used."""
    cdef Py_ssize_t i
    cdef double dist, pot = 0.0
    for i in range(n):
        dist = sqdist(X + i * d, c, d)
        if dist < closest[i]:
            closest[i] = dist
        pot = pot + sw[i] * closest[i]
    return pot


cdef void _seed(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                Py_ssize_t k, int n_trials, double total_weight, uint64_t* state, int level,
                floating* C, double* closest, double* PT, double* gain,
                int64_t* cand) noexcept nogil:
    """Greedy k-means++ into C: each new center the best of n_trials rows drawn with
    probability sw_i closest_i / potential, the one that lowers the potential most (first
    among equals); closest_i ends as the squared distance of row i to its nearest center.
    The candidates' gains are gmm_simd.h's k-means++ step (in groups of at most 4 vectors
    of W lanes; PT d x 4W, gain n_trials + 4W), the update a loop over the rows."""
    cdef Py_ssize_t i, c, t, g, r, best_t, f, tp, W = gmm_pp_width(level)
    cdef double pot, best_gain
    for i in range(n):
        closest[i] = INFINITY
    r = _draw(sw, NULL, n, total_weight, state)
    for c in range(k):
        memcpy(C + c * d, X + r * d, d * sizeof(floating))
        if c == k - 1:
            break
        pot = _update(X, sw, n, d, X + r * d, closest)
        for t in range(n_trials):
            cand[t] = _draw(sw, closest, n, pot, state)
        g = 0
        while g < n_trials:                    # what each candidate lowers the potential by
            tp = n_trials - g if n_trials - g < 4 * W else 4 * W
            for f in range(d):
                for t in range(tp):
                    PT[f * ((tp + W - 1) // W * W) + t] = <double>X[cand[g + t] * d + f]
            _pp(level, X, sw, n, d, PT, (tp + W - 1) // W * W, closest, 0, &pot, gain + g)
            g = g + tp
        best_t = 0
        best_gain = gain[0]
        for t in range(1, n_trials):
            if gain[t] > best_gain:
                best_gain, best_t = gain[t], t
        r = cand[best_t]
    _update(X, sw, n, d, C + (k - 1) * d, closest)


cdef void _search(int level, const floating* X, const int64_t* todo, Py_ssize_t m,
                  Py_ssize_t d, const floating* C, Py_ssize_t k, const floating* CT,
                  const floating* csq, Py_ssize_t kp, double maxcsq, double tol,
                  const double* xsq, floating* bt, floating* st, int* lab, double* up,
                  double* lo) noexcept nogil:
    """Rows todo[0..m): the nearest center lab[q] (gmm_simd.h's search, first minimum of
    csq_j - 2 x.c_j in X's precision), up[q] the exact distance to it and lo[q] a lower
    bound on the distance to every other center (its rounding, tol (||x||^2 + max csq),
    allowed for)."""
    cdef Py_ssize_t q, i
    cdef double t
    if m == 0:
        return
    if floating is double:
        gmm_argmin2_d(level, X, todo, m, d, CT, csq, kp, gmm_search_cols_d(level, k), lab, bt,
                      st)
    else:
        gmm_argmin2_f(level, X, todo, m, d, CT, csq, kp, gmm_search_cols_f(level, k), lab, bt,
                      st)
    for q in range(m):
        i = todo[q]
        up[q] = sqrt(sqdist(X + i * d, C + lab[q] * d, d))
        t = <double>st[q] + xsq[i] - tol * (xsq[i] + maxcsq)
        lo[q] = sqrt(t) if t > 0 else 0.0


cdef double _layout(const floating* C, Py_ssize_t k, Py_ssize_t kp, Py_ssize_t d,
                    floating* CT, floating* csq) noexcept nogil:
    """The search's layout: CT = -2 C^T (d x kp, zero columns past k), csq_j = ||c_j||^2
    (+inf past k: never chosen); returns max_j csq_j."""
    cdef Py_ssize_t j, f
    cdef double big = 0.0, s
    for j in range(kp):
        if j >= k:
            csq[j] = INFINITY
            for f in range(d):
                CT[f * kp + j] = 0
            continue
        s = 0.0
        for f in range(d):
            CT[f * kp + j] = -2 * C[j * d + f]
            s = s + <double>C[j * d + f] * <double>C[j * d + f]
        csq[j] = <floating>s
        if s > big:
            big = s
    return big


cdef double _lloyd(int level, const floating* X, const floating* sw, Py_ssize_t n,
                   Py_ssize_t d, Py_ssize_t k, Py_ssize_t kp, double tol, int max_iter,
                   floating* C, floating* C_old, double* sums, double* wsum, double* shift,
                   double* half_gap, int* labels, double* upper, double* lower, int* n_iter,
                   const double* xsq, floating* CT, floating* csq, floating* bt, floating* st,
                   int64_t* todo, int* lab, double* up, double* lo) noexcept nogil:
    """Lloyd's iterations from C until no label changes (or max_iter passes), with
    Hamerly's bounds (an upper bound on each row's distance to its center, a lower bound on
    the others: a row is searched only when they cross; the searches of a pass are
    batched, see _search) and cluster sums kept up to date by the rows that move. Returns
    sum_i sw_i ||x_i - c_{l_i}||^2 at the returned C, summed afresh over the rows; C is the
    mean of its cluster (or kept where the cluster is empty)."""
    cdef Py_ssize_t i, j, q, f, it, a, m, far = 0
    cdef Py_ssize_t changed = 1
    cdef double dist, z, big, second, w, sse, maxcsq = 0.0
    memset(sums, 0, k * d * sizeof(double))
    memset(wsum, 0, k * sizeof(double))
    for i in range(n):
        todo[i] = i
    maxcsq = _layout(C, k, kp, d, CT, csq)
    _search(level, X, todo, n, d, C, k, CT, csq, kp, maxcsq, tol, xsq, bt, st, labels, upper,
            lower)
    for i in range(n):
        a = labels[i]
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
        m = 0
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
            todo[m] = i
            m = m + 1
        if m > 0:
            maxcsq = _layout(C, k, kp, d, CT, csq)
        _search(level, X, todo, m, d, C, k, CT, csq, kp, maxcsq, tol, xsq, bt, st, lab, up, lo)
        changed = 0
        for q in range(m):
            i = todo[q]
            j = lab[q]
            a = labels[i]
            upper[i] = up[q]
            lower[i] = lo[q]
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
                   int n_threads, int level=-1):
    """Runs first .. first + n_runs - 1: greedy k-means++ (n_trials draws per center), then
    Lloyd's iterations to a fixed point (at most max_iter passes). objectives[j] and
    n_iter[j] receive run first + j's objective and passes; best_centers the centers of
    the run of lowest objective (the lowest run index among equals). Returns that run's
    index. ``level``: the SIMD variant of the searches (gmmfast._kernels._kmeans.simd_level;
    -1, the best the processor has)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t j = 0, i, f, tid, T, kp, W
    cdef int64_t r, lo, hi, best_run = -1
    cdef int stopped = 0
    cdef double total_weight = 0.0, best_obj = INFINITY, obj, tol
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
    if level > gmm_argmin_level() or level < -1:
        raise ValueError(f"lloyd_restarts: level must be in -1..{gmm_argmin_level()}, "
                         f"got {level}")
    if level == -1:
        level = gmm_argmin_level()
    for i in range(n):
        total_weight += sample_weight[i]
    if not total_weight > 0:
        raise ValueError("lloyd_restarts: the sample weights sum to zero")
    T = threads_for(n_threads, n_runs, <double>n_runs * n * k * d * (n_trials + 10),
                    _GRAIN)
    dtype = np.float32 if floating is float else np.float64
    W = gmm_pp_width(level)
    kp = gmm_argmin_block_f(level) if floating is float else gmm_argmin_block_d(level)
    kp = (k + kp - 1) // kp * kp
    # the search's rounding is below eps d (||x||^2 + ||c||^2); 4x that (as the passes)
    tol = 4.0 * (d + 4) * (2.0 ** -24 if floating is float else 2.0 ** -53)
    cdef floating[:, :, ::1] C = np.empty((T, k, d), dtype=dtype)
    cdef floating[:, :, ::1] keepC = np.empty((T, k, d), dtype=dtype)
    cdef double[:, :, ::1] sums = np.empty((T, k, d))
    cdef floating[:, :, ::1] C_old = np.empty((T, k, d), dtype=dtype)
    cdef double[:, ::1] wsum = np.empty((T, k))
    cdef double[:, ::1] shift = np.empty((T, k))
    cdef double[:, ::1] half_gap = np.empty((T, k))
    cdef double[:, :, ::1] rows = np.empty((T, 3, n))     # closest; upper, lower bounds
    cdef int[:, ::1] labels = np.empty((T, n), dtype=np.intc)
    cdef double[::1] xsq = np.empty(n)
    cdef floating[:, ::1] CT = np.empty((T, d * kp), dtype=dtype)
    cdef floating[:, ::1] csq = np.empty((T, kp), dtype=dtype)
    cdef floating[:, :, ::1] second = np.empty((T, 2, n), dtype=dtype)   # best, second
    cdef double[:, ::1] PT = np.zeros((T, d * 4 * W))
    cdef double[:, ::1] gain = np.empty((T, n_trials + 4 * W))
    cdef int64_t[:, ::1] cand = np.empty((T, n_trials), dtype=np.int64)
    cdef int64_t[:, ::1] todo = np.empty((T, n), dtype=np.int64)
    cdef int[:, ::1] lab = np.empty((T, n), dtype=np.intc)
    cdef double[:, :, ::1] bounds = np.empty((T, 2, n))
    cdef double[::1] thread_obj = np.full(T, np.inf)
    cdef int64_t[::1] thread_run = np.full(T, -1, dtype=np.int64)
    with nogil:
        for i in range(n):
            xsq[i] = 0.0
            for f in range(d):
                xsq[i] = xsq[i] + <double>X[i, f] * <double>X[i, f]
    lo = first
    while lo < first + n_runs:         # rounds of a few runs per thread: Ctrl-C between
        hi = min(lo + 4 * T, first + n_runs)
        with nogil, parallel(num_threads=T):
            tid = threadid()
            for r in prange(lo, hi, schedule="dynamic"):
                state = gmm_rng_stream(seed, <uint64_t>r)
                _seed(&X[0, 0], &sample_weight[0], n, d, k, n_trials, total_weight, &state,
                      level, &C[tid, 0, 0], &rows[tid, 0, 0], &PT[tid, 0], &gain[tid, 0],
                      &cand[tid, 0])
                obj = _lloyd(level, &X[0, 0], &sample_weight[0], n, d, k, kp, tol, max_iter,
                             &C[tid, 0, 0], &C_old[tid, 0, 0], &sums[tid, 0, 0], &wsum[tid, 0],
                             &shift[tid, 0], &half_gap[tid, 0], &labels[tid, 0],
                             &rows[tid, 1, 0], &rows[tid, 2, 0], &n_iter[r - first], &xsq[0],
                             &CT[tid, 0], &csq[tid, 0], &second[tid, 0, 0],
                             &second[tid, 1, 0], &todo[tid, 0], &lab[tid, 0],
                             &bounds[tid, 0, 0], &bounds[tid, 1, 0])
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
