# Shared inline helpers for the kernels: fused float type, the squared distance
# every kernel uses (so that one labeling always gets one cost), a counter-based
# random stream per block, and the OpenMP thread count.
from libc.stdint cimport uint64_t, uint32_t

ctypedef fused floating:
    float
    double


cdef extern from *:
    """
    #include <stdint.h>
    #ifdef _OPENMP
    #include <omp.h>
    static int gmm_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int gmm_omp_max_threads(void) { return 1; }
    #endif

    /* SplitMix64 (Steele, Lea, Flood 2014): one 64-bit draw per call. */
    static inline uint64_t gmm_rng_next(uint64_t *s) {
        uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    /* Start state of stream `stream` under `seed`: blocks get independent
       streams that depend on (seed, block index) only, never on threads. */
    static inline uint64_t gmm_rng_stream(uint64_t seed, uint64_t stream) {
        uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (stream + 1));
        gmm_rng_next(&s);
        return gmm_rng_next(&s);
    }

    /* Uniform integer in [0, s) from the 32-bit draw x (Lemire 2019, exact:
       the rare biased draws are rejected and redrawn from the stream). */
    static inline uint32_t gmm_rng_bounded(uint32_t x, uint32_t s, uint64_t *state) {
        uint64_t m = (uint64_t)x * (uint64_t)s;
        uint32_t l = (uint32_t)m;
        if (l < s) {
            uint32_t t = (uint32_t)(-s) % s;
            while (l < t) {
                x = (uint32_t)(gmm_rng_next(state) >> 32);
                m = (uint64_t)x * (uint64_t)s;
                l = (uint32_t)m;
            }
        }
        return (uint32_t)(m >> 32);
    }

    /* Uniform double in [0, 1) with 53 random bits. */
    static inline double gmm_rng_uniform(uint64_t *state) {
        return (double)(gmm_rng_next(state) >> 11) * 0x1.0p-53;
    }
    """
    int gmm_omp_max_threads() noexcept nogil
    uint64_t gmm_rng_next(uint64_t *s) noexcept nogil
    uint64_t gmm_rng_stream(uint64_t seed, uint64_t stream) noexcept nogil
    uint32_t gmm_rng_bounded(uint32_t x, uint32_t s, uint64_t *state) noexcept nogil
    double gmm_rng_uniform(uint64_t *state) noexcept nogil


cdef extern from "gmm_cost.h":
    enum: GMM_COST_WIDE_D
    double gmm_cost_d(const double* x, const double* c, Py_ssize_t d) noexcept nogil
    double gmm_cost_f(const float* x, const float* c, Py_ssize_t d) noexcept nogil
    double gmm_cost_d_resid(const double* x, const double* c, Py_ssize_t d, double w,
                            double* r) noexcept nogil
    double gmm_cost_f_resid(const float* x, const float* c, Py_ssize_t d, double w,
                            double* r) noexcept nogil


cdef inline double sqdist_narrow(const floating* x, const floating* c, Py_ssize_t d) noexcept nogil:
    """sqdist's arithmetic below GMM_COST_WIDE_D features: four partial sums (features
    f = 0, 1, 2, 3 mod 4) combined as (s0 + s1) + (s2 + s3), independent chains, so the loop
    is not bound by the latency of one addition."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double t0, t1, t2, t3
    cdef Py_ssize_t f = 0
    while f + 4 <= d:
        t0 = <double>x[f] - <double>c[f]
        t1 = <double>x[f + 1] - <double>c[f + 1]
        t2 = <double>x[f + 2] - <double>c[f + 2]
        t3 = <double>x[f + 3] - <double>c[f + 3]
        s0 = s0 + t0 * t0
        s1 = s1 + t1 * t1
        s2 = s2 + t2 * t2
        s3 = s3 + t3 * t3
        f = f + 4
    if f < d:
        t0 = <double>x[f] - <double>c[f]
        s0 = s0 + t0 * t0
    if f + 1 < d:
        t1 = <double>x[f + 1] - <double>c[f + 1]
        s1 = s1 + t1 * t1
    if f + 2 < d:
        t2 = <double>x[f + 2] - <double>c[f + 2]
        s2 = s2 + t2 * t2
    return (s0 + s1) + (s2 + s3)


# Row widths as types. A loop over rows of one width (a walk: d is fixed) is compiled once
# per width, by taking a row_width argument, and calls row_cost: its body then holds one
# arithmetic and no branch on d. Choose the width outside the parallel loop: a test of
# d >= GMM_COST_WIDE_D that the compiler sees around a narrow loop tells it d < 32, and GCC
# then peels sqdist_narrow's loop into a chain of up to 7 tested steps, which cost the walk
# at d = 16 and 1e6 rows a fifth of its rate.
ctypedef signed char narrow_row
ctypedef short wide_row
ctypedef fused row_width:
    narrow_row
    wide_row


cdef inline double row_cost(const floating* x, const floating* c, Py_ssize_t d,
                            row_width width) noexcept nogil:
    """sqdist(x, c, d) for rows of the width `width` names (wide_row: d >= GMM_COST_WIDE_D)."""
    if row_width is wide_row:
        if floating is double:
            return gmm_cost_d(x, c, d)
        else:
            return gmm_cost_f(x, c, d)
    else:
        return sqdist_narrow(x, c, d)


cdef inline double sqdist(const floating* x, const floating* c, Py_ssize_t d) noexcept nogil:
    """Squared Euclidean distance, accumulated in double by direct differences.

    Below GMM_COST_WIDE_D (32) features: sqdist_narrow's four chains. Wider rows: gmm_cost.h's
    sixteen fused partial sums (SIMD, the same bits on every machine). Every kernel computes
    a cost this way (or by row_cost, the same arithmetic; see sqdist_resid), so a labeling
    has one cost.
    """
    if d >= GMM_COST_WIDE_D:
        return row_cost(x, c, d, <wide_row>0)
    return sqdist_narrow(x, c, d)


# Kernel twin, kept for speed: sqdist with the residual w (x - c) fused in (one read of x); the arithmetic of the distance must stay identical (a labeling has one cost).
cdef inline double sqdist_resid(const floating* x, const floating* c, Py_ssize_t d, double w,
                                double* resid) noexcept nogil:
    """sqdist(x, c, d), exactly, adding w (x - c) to resid[0..d-1] on the way (for wide rows
    fused, resid_f = fma(w, x_f - c_f, resid_f): see gmm_cost.h)."""
    if d >= GMM_COST_WIDE_D:
        if floating is double:
            return gmm_cost_d_resid(x, c, d, w, resid)
        else:
            return gmm_cost_f_resid(x, c, d, w, resid)
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double t0, t1, t2, t3
    cdef Py_ssize_t f = 0
    while f + 4 <= d:
        t0 = <double>x[f] - <double>c[f]
        t1 = <double>x[f + 1] - <double>c[f + 1]
        t2 = <double>x[f + 2] - <double>c[f + 2]
        t3 = <double>x[f + 3] - <double>c[f + 3]
        s0 = s0 + t0 * t0
        s1 = s1 + t1 * t1
        s2 = s2 + t2 * t2
        s3 = s3 + t3 * t3
        resid[f] = resid[f] + w * t0
        resid[f + 1] = resid[f + 1] + w * t1
        resid[f + 2] = resid[f + 2] + w * t2
        resid[f + 3] = resid[f + 3] + w * t3
        f = f + 4
    if f < d:
        t0 = <double>x[f] - <double>c[f]
        s0 = s0 + t0 * t0
        resid[f] = resid[f] + w * t0
    if f + 1 < d:
        t1 = <double>x[f + 1] - <double>c[f + 1]
        s1 = s1 + t1 * t1
        resid[f + 1] = resid[f + 1] + w * t1
    if f + 2 < d:
        t2 = <double>x[f + 2] - <double>c[f + 2]
        s2 = s2 + t2 * t2
        resid[f + 2] = resid[f + 2] + w * t2
    return (s0 + s1) + (s2 + s3)


cdef inline double block_costs(const floating* X, const floating* sw, const floating* C,
                               const int* labels, double* costs, Py_ssize_t lo, Py_ssize_t hi,
                               Py_ssize_t d) noexcept nogil:
    """costs[i] = sw[i] ||x_i - c_{labels[i]}||^2 for lo <= i < hi; returns their sum in order
    (the start value of a walk block)."""
    cdef Py_ssize_t i
    cdef double c, total = 0.0
    for i in range(lo, hi):
        c = sw[i] * sqdist(X + i * d, C + labels[i] * d, d)
        costs[i] = c
        total = total + c
    return total


cdef inline int threads_for(int n_threads, Py_ssize_t units, double work,
                            double grain) noexcept nogil:
    """Threads for a parallel loop of `units` iterations doing `work` flops in all.

    One thread per `grain` flops at most: below that, waking a thread costs
    more than it saves (much more on a loaded machine). Never changes results:
    partitions of the work do not depend on the thread count.
    """
    cdef double by_work = 1.0 + work / grain
    if by_work < n_threads:
        n_threads = <int>by_work
    if units < n_threads:
        n_threads = <int>units
    return n_threads if n_threads > 1 else 1


# -- Ctrl-C in long kernels ------------------------------------------------------------
#
# Every kernel that can run for more than ~0.1 s checks for signals between blocks of work,
# so Ctrl-C stops it within a fraction of a second:
#
# 1. Between blocks of about 10-100 ms of work, call `check_interrupt()` from a nogil
#    section. It briefly takes the GIL and runs the pending signal handlers; True means a
#    handler raised (Ctrl-C: KeyboardInterrupt) and that exception is now pending. Time a
#    block by its work (a counter of steps) or by `monotonic_seconds()`, never by a check per
#    inner iteration: taking the GIL costs about a microsecond, and more if another Python
#    thread holds it.
# 2. Python runs signal handlers only in the main thread, so call it from the thread that
#    called the kernel: between prange loops (split the work into rounds: the usual way),
#    or inside a parallel section only where `threadid() == 0` (the calling thread is
#    OpenMP's thread 0); the other threads then watch a shared flag through
#    `flag_get` / `flag_set` (a shared int, never a prange variable: Cython would make it
#    private), and the calling thread must keep checking until the others are done (take
#    work items from a shared `fetch_add` counter instead of prange, so the calling thread
#    knows when it has run out of work; _potts.alpha_expansion_batch does this).
# 3. On True, stop and return early from the nogil section (leave outputs unfinished), then
#    call `raise_interrupt()` right away, before any other Python call: it raises the
#    pending exception (KeyboardInterrupt) from the def function. Python-level code above
#    the kernel lets it propagate and must leave nothing half done: an estimator stays
#    unfitted (set its fitted attributes only after the last kernel returns).
#
# Example (a walk in rounds, as _latent.walk does):
#
#     while rounds_left:
#         with nogil:
#             for b in prange(n_blocks): ...one round of block b...
#             stopped = check_interrupt()
#         if stopped:
#             raise_interrupt()
from libc.stdint cimport int64_t


cdef extern from *:
    """
    #include <time.h>
    static inline double gmm_monotonic_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    static inline int gmm_flag_get(const int *flag) { return __atomic_load_n(flag, __ATOMIC_RELAXED); }
    static inline void gmm_flag_set(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELAXED); }
    static inline int64_t gmm_fetch_add(int64_t *counter, int64_t v) {
        return __atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
    }
    """
    double monotonic_seconds "gmm_monotonic_seconds"() noexcept nogil
    int flag_get "gmm_flag_get"(const int *flag) noexcept nogil
    void flag_set "gmm_flag_set"(int *flag) noexcept nogil
    int64_t fetch_add "gmm_fetch_add"(int64_t *counter, int64_t v) noexcept nogil


cdef extern from "Python.h":
    int _gmm_check_signals "PyErr_CheckSignals"() noexcept
    void* _gmm_err_occurred "PyErr_Occurred"() noexcept


cdef inline bint check_interrupt() noexcept nogil:
    """True if a signal handler raised (Ctrl-C); its exception is then pending (see above)."""
    with gil:
        return _gmm_check_signals() != 0


cdef inline int raise_interrupt() except -1:
    """Raise the exception `check_interrupt` left pending (KeyboardInterrupt if none is)."""
    if _gmm_err_occurred() == NULL:
        raise KeyboardInterrupt
    return -1
