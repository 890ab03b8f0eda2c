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
from scipy.linalg.cython_blas cimport dgemm

import numpy as np

from ._common cimport (check_interrupt, floating, gmm_rng_stream, gmm_rng_uniform,
                       raise_interrupt, sqdist, threads_for)

#: Flops below which another thread is not worth waking (as the other kernels).
cdef double _GRAIN = 2e5
#: Features from which a pass's nearest-center searches run as dgemm (a few rows at once).
cdef Py_ssize_t _GEMM_MIN_D = 16
#: Rows per dgemm.
cdef Py_ssize_t _BLOCK = 128
#: Relative rounding of csq_j - 2 x.c_j + ||x||^2 allowed for in a lower bound.
cdef double _ROUNDING = 1e-10


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


cdef void _seed(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                Py_ssize_t k, int n_trials, double total_weight, uint64_t* state,
                floating* C, double* closest, double* trial, const double* xsq,
                double* CT, double* csq, double* xbuf, double* S, int64_t* cand) noexcept nogil:
    """Greedy k-means++ into C: each new center the best of n_trials rows drawn with
    probability sw_i closest_i / potential, by the potential it leaves; closest_i ends as
    the squared distance of row i to its nearest center; trial holds n_trials potentials.
    With CT (d >= _GEMM_MIN_D) the candidates' distances come from one dgemm per
    block of _BLOCK rows (||x||^2 + ||c||^2 - 2 x.c, at least 0), else directly."""
    cdef Py_ssize_t i, c, t, r, best_t, q0, B, b, f
    cdef double pot, best_pot, dist
    cdef int M_ = n_trials, N_, K_ = <int>d
    cdef double one = 1.0, zero = 0.0
    cdef char tn = b'N'
    r = _draw(sw, NULL, n, total_weight, state)
    memcpy(C, X + r * d, d * sizeof(floating))
    pot = 0.0
    for i in range(n):
        closest[i] = sqdist(X + i * d, C, d)
        pot = pot + sw[i] * closest[i]
    for c in range(1, k):
        for t in range(n_trials):
            cand[t] = _draw(sw, closest, n, pot, state)
        best_pot = INFINITY
        best_t = 0
        if CT == NULL:
            for t in range(n_trials):
                r = cand[t]
                pot = 0.0
                for i in range(n):
                    dist = sqdist(X + i * d, X + r * d, d)
                    pot = pot + sw[i] * (dist if dist < closest[i] else closest[i])
                if pot < best_pot:
                    best_pot, best_t = pot, t
        else:
            for t in range(n_trials):
                csq[t] = xsq[cand[t]]
                trial[t] = 0.0
                for f in range(d):
                    CT[f * n_trials + t] = <double>X[cand[t] * d + f]
            q0 = 0
            while q0 < n:
                B = _BLOCK if n - q0 > _BLOCK else n - q0
                for b in range(B):
                    for f in range(d):
                        xbuf[b * d + f] = <double>X[(q0 + b) * d + f]
                N_ = <int>B
                dgemm(&tn, &tn, &M_, &N_, &K_, &one, CT, &M_, xbuf, &K_, &zero, S, &M_)
                for b in range(B):
                    i = q0 + b
                    for t in range(n_trials):
                        dist = xsq[i] + csq[t] - 2.0 * S[b * n_trials + t]
                        if dist < 0:
                            dist = 0.0
                        trial[t] = trial[t] + sw[i] * (dist if dist < closest[i] else closest[i])
                q0 = q0 + B
            for t in range(n_trials):
                if trial[t] < best_pot:
                    best_pot, best_t = trial[t], t
        r = cand[best_t]
        memcpy(C + c * d, X + r * d, d * sizeof(floating))
        pot = 0.0
        for i in range(n):
            dist = sqdist(X + i * d, X + r * d, d)
            if dist < closest[i]:
                closest[i] = dist
            pot = pot + sw[i] * closest[i]


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


cdef void _search(const floating* X, const int64_t* todo, Py_ssize_t m, Py_ssize_t d,
                  Py_ssize_t k, const floating* C, const double* CT, const double* csq,
                  double maxcsq, const double* xsq, double* xbuf, double* S, int* lab,
                  double* up, double* lo) noexcept nogil:
    """Rows todo[0..m): the nearest center lab[q], up[q] the exact distance to it and lo[q]
    a lower bound on the distance to every other center. With CT (d >= _GEMM_MIN_D: C^T,
    d x k, and csq = ||c_j||^2) by csq_j - 2 x.c_j, one dgemm per block of _BLOCK rows
    (rounding allowed for in lo); else by direct distances."""
    cdef Py_ssize_t q0, B, b, f, j, i, jb
    cdef double v, best, second, t
    cdef int M_ = <int>k, N_, K_ = <int>d
    cdef double one = 1.0, zero = 0.0
    cdef char tn = b'N'
    if CT == NULL:
        for b in range(m):
            i = todo[b]
            _nearest2(X + i * d, C, k, d, &jb, &best, &second)
            lab[b] = <int>jb
            up[b] = sqrt(best)
            lo[b] = sqrt(second)
        return
    q0 = 0
    while q0 < m:
        B = _BLOCK if m - q0 > _BLOCK else m - q0
        for b in range(B):
            i = todo[q0 + b]
            for f in range(d):
                xbuf[b * d + f] = <double>X[i * d + f]
        N_ = <int>B
        dgemm(&tn, &tn, &M_, &N_, &K_, &one, <double*>CT, &M_, xbuf, &K_, &zero, S, &M_)
        for b in range(B):
            best = INFINITY
            second = INFINITY
            jb = 0
            for j in range(k):
                v = csq[j] - 2.0 * S[b * k + j]
                if v < best:
                    second = best
                    best = v
                    jb = j
                elif v < second:
                    second = v
            i = todo[q0 + b]
            lab[q0 + b] = <int>jb
            up[q0 + b] = sqrt(sqdist(X + i * d, C + jb * d, d))
            t = second + xsq[i] - _ROUNDING * (xsq[i] + maxcsq)
            lo[q0 + b] = sqrt(t) if t > 0 else 0.0
        q0 = q0 + B


cdef double _layout(const floating* C, Py_ssize_t k, Py_ssize_t d, double* CT,
                    double* csq) noexcept nogil:
    """CT = C^T (d x k) and csq_j = ||c_j||^2; returns max_j csq_j."""
    cdef Py_ssize_t j, f
    cdef double big = 0.0
    for j in range(k):
        csq[j] = 0.0
        for f in range(d):
            CT[f * k + j] = <double>C[j * d + f]
            csq[j] = csq[j] + <double>C[j * d + f] * <double>C[j * d + f]
        if csq[j] > big:
            big = csq[j]
    return big


cdef double _lloyd(const floating* X, const floating* sw, Py_ssize_t n, Py_ssize_t d,
                   Py_ssize_t k, int max_iter, floating* C, floating* C_old, double* sums,
                   double* wsum, double* shift, double* half_gap, int* labels, double* upper,
                   double* lower, int* n_iter, const double* xsq, double* CT, double* csq,
                   double* xbuf, double* S, int64_t* todo, int* lab, double* up,
                   double* lo) noexcept nogil:
    """Lloyd's iterations from C until no label changes (or max_iter passes), with
    Hamerly's bounds (an upper bound on each row's distance to its center, a lower bound on
    the others: a row is searched only when they cross; the searches of a pass are
    batched, see _search) and cluster sums kept up to date by the rows that move. Returns
    sum_i sw_i ||x_i - c_{l_i}||^2 at the returned C, summed afresh over the rows; C is the
    mean of its cluster (or kept where the cluster is empty). CT is NULL for direct
    distances."""
    cdef Py_ssize_t i, j, q, f, it, a, m, far = 0
    cdef Py_ssize_t changed = 1
    cdef double dist, z, big, second, w, sse, maxcsq = 0.0
    memset(sums, 0, k * d * sizeof(double))
    memset(wsum, 0, k * sizeof(double))
    for i in range(n):
        todo[i] = i
    if CT != NULL:
        maxcsq = _layout(C, k, d, CT, csq)
    _search(X, todo, n, d, k, C, CT, csq, maxcsq, xsq, xbuf, S, labels, upper, lower)
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
        if CT != NULL and m > 0:
            maxcsq = _layout(C, k, d, CT, csq)
        _search(X, todo, m, d, k, C, CT, csq, maxcsq, xsq, xbuf, S, lab, up, lo)
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
    cdef double[:, :, ::1] rows = np.empty((T, 3, n))     # closest; upper, lower bounds
    cdef int[:, ::1] labels = np.empty((T, n), dtype=np.intc)
    cdef bint gemm = d >= _GEMM_MIN_D
    cdef double[::1] xsq = np.einsum("ij,ij->i", np.asarray(X, dtype=np.float64),
                                     np.asarray(X, dtype=np.float64)) if gemm else np.empty(1)
    cdef Py_ssize_t wide = max(k, n_trials)
    cdef double[:, ::1] CT = np.empty((T, d * wide if gemm else 1))
    cdef double[:, ::1] csq = np.empty((T, wide))
    cdef double[:, ::1] xbuf = np.empty((T, _BLOCK * d if gemm else 1))
    cdef double[:, ::1] S = np.empty((T, _BLOCK * wide if gemm else 1))
    cdef int64_t[:, ::1] cand = np.empty((T, n_trials), dtype=np.int64)
    cdef double[:, ::1] cand_pot = np.empty((T, n_trials))
    cdef int64_t[:, ::1] todo = np.empty((T, n), dtype=np.int64)
    cdef int[:, ::1] lab = np.empty((T, n), dtype=np.intc)
    cdef double[:, :, ::1] bounds = np.empty((T, 2, n))
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
                      &C[tid, 0, 0], &rows[tid, 0, 0], &cand_pot[tid, 0], &xsq[0],
                      &CT[tid, 0] if gemm else NULL, &csq[tid, 0], &xbuf[tid, 0],
                      &S[tid, 0], &cand[tid, 0])
                obj = _lloyd(&X[0, 0], &sample_weight[0], n, d, k, max_iter, &C[tid, 0, 0],
                             &C_old[tid, 0, 0], &sums[tid, 0, 0], &wsum[tid, 0],
                             &shift[tid, 0], &half_gap[tid, 0], &labels[tid, 0],
                             &rows[tid, 1, 0], &rows[tid, 2, 0], &n_iter[r - first], &xsq[0],
                             &CT[tid, 0] if gemm else NULL, &csq[tid, 0], &xbuf[tid, 0],
                             &S[tid, 0], &todo[tid, 0], &lab[tid, 0], &bounds[tid, 0, 0],
                             &bounds[tid, 1, 0])
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
