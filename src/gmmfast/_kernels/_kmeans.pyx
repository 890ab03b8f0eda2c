# Kernels of the k-means bound family.
#
# A bound is an assignment z (int32 labels); its value at centers w is
# b_z(w) = sum_i s_i ||x_i - mu_{z_i}||^2 with sample weights s_i.
#
# Layout rules, all chosen so that results never depend on the thread count:
# - samples are processed in chunks of CHUNK rows; every cost total is summed
#   per chunk (sequentially inside the chunk) and the chunk sums are combined
#   by the caller in a fixed way;
# - center sums are accumulated per "slot" (a fixed group of chunks whose
#   boundaries depend on n, k and d only) and the slots are reduced in order;
# - the random walk runs on blocks of points whose boundaries depend on n
#   only, each with its own random stream (seed, block index) and its own
#   share of the slack.
# Costs are always computed by `sqdist` (direct differences, in double), so a
# labeling has one cost whichever kernel computes it.
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free
from libc.stdint cimport uint64_t, uint32_t, int64_t
from libc.math cimport sqrt

import numpy as np

from scipy.linalg.cython_blas cimport sgemm, dgemm

from ._common cimport (
    floating, sqdist, gmm_rng_next, gmm_rng_stream, gmm_rng_bounded,
    gmm_omp_max_threads, gmm_has_openmp, threads_for, block_costs,
)

CHUNK = 256
cdef Py_ssize_t _CHUNK = 256
# Floating-point operations worth one more thread: below this, waking a thread
# costs more than it saves (and on a loaded machine, much more).
cdef Py_ssize_t _GRAIN = 1 << 20




def openmp_max_threads():
    """Number of threads an OpenMP region would use now (1 without OpenMP)."""
    return gmm_omp_max_threads()


def has_openmp():
    """True if the kernels were compiled with OpenMP."""
    return bool(gmm_has_openmp())


cdef inline void _gemm_minus2_xct(const floating* X, const floating* C, int n, int k, int d,
                                  floating* out) noexcept nogil:
    """out (n x k, row-major) += -2 X C^T, with X (n x d) and C (k x d) row-major."""
    cdef floating alpha = -2.0
    cdef floating beta = 1.0
    cdef char ta = b'T'
    cdef char tb = b'N'
    if floating is float:
        sgemm(&ta, &tb, &k, &n, &d, &alpha, <float*>C, &d, <float*>X, &d, &beta, out, &k)
    else:
        dgemm(&ta, &tb, &k, &n, &d, &alpha, <double*>C, &d, <double*>X, &d, &beta, out, &k)


cdef extern from "gmm_argmin.h":
    int gmm_argmin_level() noexcept nogil
    Py_ssize_t gmm_argmin_block_d(int level) noexcept nogil
    Py_ssize_t gmm_argmin_block_f(int level) noexcept nogil
    void gmm_argmin_d(int level, const double* X, Py_ssize_t n, Py_ssize_t d, const double* CT,
                      const double* csq, Py_ssize_t kp, int* labels) noexcept nogil
    void gmm_argmin_f(int level, const float* X, Py_ssize_t n, Py_ssize_t d, const float* CT,
                      const float* csq, Py_ssize_t kp, int* labels) noexcept nogil

cdef int _MAX_LEVEL = gmm_argmin_level()
cdef int _LEVEL = _MAX_LEVEL


def simd_level(level=None):
    """The instruction set of the nearest-center search: 2 AVX-512, 1 AVX2, 0 portable.

    With `level`, use that variant from now on (at most what the processor
    supports); returns the level in use.
    """
    global _LEVEL
    if level is not None:
        if level not in (0, 1, 2) or level > _MAX_LEVEL:
            raise ValueError(f"level must be in 0..{_MAX_LEVEL} on this processor, got {level!r}")
        _LEVEL = level
    return _LEVEL


def simd_block(dtype):
    """Centers per block of the nearest-center search: k is padded to a multiple of it."""
    if np.dtype(dtype) == np.float32:
        return gmm_argmin_block_f(_LEVEL)
    return gmm_argmin_block_d(_LEVEL)


cdef void _argmin_chunk(const floating* X, Py_ssize_t n_c, Py_ssize_t d, Py_ssize_t k,
                        const floating* C, const floating* CT, const floating* csq,
                        Py_ssize_t kp, int level, bint use_gemm, floating* buf,
                        int* labels) noexcept nogil:
    """Nearest-center labels of the n_c rows of X, by ||c||^2 - 2 x.c (first minimum).

    With use_gemm the products come from BLAS on the whole chunk;
    otherwise from the register-blocked SIMD search of gmm_argmin.h over the
    transposed, padded centers CT = -2 C^T (d x kp), which is faster.
    """
    cdef Py_ssize_t i, j
    cdef floating best
    cdef floating* row
    cdef int bj
    if not use_gemm:
        if floating is double:
            gmm_argmin_d(level, X, n_c, d, CT, csq, kp, labels)
        else:
            gmm_argmin_f(level, X, n_c, d, CT, csq, kp, labels)
        return
    for i in range(n_c):
        for j in range(k):
            buf[i * k + j] = csq[j]
    _gemm_minus2_xct(X, C, <int>n_c, <int>k, <int>d, buf)
    for i in range(n_c):
        row = buf + i * k
        best = row[0]
        bj = 0
        for j in range(1, k):
            if row[j] < best:
                best = row[j]
                bj = <int>j
        labels[i] = bj


cdef inline void _clear_slot(double* ss, double* sw, Py_ssize_t k, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(k * d):
        ss[j] = 0.0
    for j in range(k):
        sw[j] = 0.0


cdef inline void _add_point(double* ss, double* sw, const floating* x, double wi, Py_ssize_t j,
                            Py_ssize_t d) noexcept nogil:
    """Add sample x with weight wi to cluster j of a slot's sums."""
    cdef Py_ssize_t f
    sw[j] = sw[j] + wi
    for f in range(d):
        ss[j * d + f] = ss[j * d + f] + wi * x[f]


def assign(const floating[:, ::1] X, const floating[::1] sample_weight,
           const floating[:, ::1] centers, int[::1] labels, double[::1] chunk_costs,
           const int[::1] prev_labels, double[::1] chunk_prev_costs,
           double[:, :, ::1] slot_sums, double[:, ::1] slot_weights,
           Py_ssize_t n_slots, int n_threads):
    """Nearest-center labels and their costs, in one pass over X.

    Writes `labels`, and per chunk the cost total of those labels
    (`chunk_costs`). If `prev_labels` is not empty, also the cost total of
    `prev_labels` at these centers (`chunk_prev_costs`); if `slot_sums` is not
    empty, also the weighted sums and weights of the new clusters per slot
    (the minimiser of the touching bound, without a second pass).
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef bint with_prev = prev_labels.shape[0] > 0
    cdef bint with_sums = slot_sums.shape[0] > 0
    cdef int level = _LEVEL
    # the SIMD search beats BLAS gemm at every d measured (bench/lloyd_iteration.py)
    # with AVX2 or AVX-512; without them, gemm is faster
    cdef bint use_gemm = level == 0
    cdef Py_ssize_t width = simd_block(np.asarray(centers).dtype)
    cdef Py_ssize_t kp = (k + width - 1) // width * width
    cdef floating[:, ::1] CT = np.zeros((d, kp), dtype=np.asarray(centers).dtype)
    cdef floating[::1] csq = np.full(kp, np.inf, dtype=np.asarray(centers).dtype)
    np.multiply(np.asarray(centers).T, -2, out=np.asarray(CT)[:, :k])    # exact scaling
    np.asarray(csq)[:k] = np.einsum("ij,ij->i", np.asarray(centers), np.asarray(centers))
    cdef Py_ssize_t s, c, c0, c1, i, i0, i1, f, j
    cdef double acc, acc_prev, wi
    cdef floating* buf
    cdef double* ss
    cdef double* sw
    if n == 0:
        return
    n_threads = threads_for(n_threads, n_slots, <double>n * (k + 2) * d, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        buf = <floating*> malloc(_CHUNK * k * sizeof(floating))
        for s in prange(n_slots, schedule="dynamic"):
            c0 = s * n_chunks // n_slots
            c1 = (s + 1) * n_chunks // n_slots
            if with_sums:
                ss = &slot_sums[s, 0, 0]
                sw = &slot_weights[s, 0]
                _clear_slot(ss, sw, k, d)
            for c in range(c0, c1):
                i0 = c * _CHUNK
                i1 = min(i0 + _CHUNK, n)
                _argmin_chunk(&X[i0, 0], i1 - i0, d, k, &centers[0, 0], &CT[0, 0], &csq[0],
                              kp, level, use_gemm, buf, &labels[i0])
                acc = 0.0
                acc_prev = 0.0
                for i in range(i0, i1):
                    wi = sample_weight[i]
                    acc = acc + wi * sqdist(&X[i, 0], &centers[labels[i], 0], d)
                    if with_prev:
                        acc_prev = acc_prev + wi * sqdist(&X[i, 0], &centers[prev_labels[i], 0], d)
                    if with_sums:
                        _add_point(ss, sw, &X[i, 0], wi, labels[i], d)
                chunk_costs[c] = acc
                if with_prev:
                    chunk_prev_costs[c] = acc_prev
        free(buf)


def label_costs(const floating[:, ::1] X, const floating[::1] sample_weight,
                const floating[:, ::1] centers, const int[::1] labels,
                double[::1] chunk_costs, double[::1] point_costs, int n_threads):
    """Cost total of `labels` at `centers` per chunk; per point too if `point_costs` is not empty."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef bint with_points = point_costs.shape[0] > 0
    cdef Py_ssize_t c, i, i0, i1
    cdef double acc, ci
    n_threads = threads_for(n_threads, n_chunks, <double>n * d, _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            acc = 0.0
            for i in range(i0, i1):
                ci = sample_weight[i] * sqdist(&X[i, 0], &centers[labels[i], 0], d)
                if with_points:
                    point_costs[i] = ci
                acc = acc + ci
            chunk_costs[c] = acc


def accumulate(const floating[:, ::1] X, const floating[::1] sample_weight,
               const int[::1] labels, double[:, :, ::1] slot_sums,
               double[:, ::1] slot_weights, int n_threads):
    """Weighted sums and weights of the clusters of `labels`, per slot."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = slot_sums.shape[1]
    cdef Py_ssize_t n_slots = slot_sums.shape[0]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t s, i, i0, i1, f, j
    cdef double wi
    cdef double* ss
    cdef double* sw
    n_threads = threads_for(n_threads, n_slots, <double>n * d, _GRAIN)
    with nogil:
        for s in prange(n_slots, schedule="dynamic", num_threads=n_threads):
            i0 = min((s * n_chunks // n_slots) * _CHUNK, n)
            i1 = min(((s + 1) * n_chunks // n_slots) * _CHUNK, n)
            ss = &slot_sums[s, 0, 0]
            sw = &slot_weights[s, 0]
            _clear_slot(ss, sw, k, d)
            for i in range(i0, i1):
                _add_point(ss, sw, &X[i, 0], sample_weight[i], labels[i], d)


def finalize_centers(const double[:, :, ::1] slot_sums, const double[:, ::1] slot_weights,
                     const floating[:, ::1] centers_old, floating[:, ::1] centers_new,
                     double[::1] weights):
    """Means of the clusters from the slot sums (reduced in slot order).

    A cluster with no weight keeps its previous center: the bound does not
    depend on it, so the previous center is still a minimiser. Returns the
    number of such empty clusters; `weights` receives each cluster's weight.
    """
    cdef Py_ssize_t n_slots = slot_sums.shape[0], k = slot_sums.shape[1], d = slot_sums.shape[2]
    cdef Py_ssize_t s, j, f
    cdef double wj, acc
    cdef int n_empty = 0
    with nogil:
        for j in range(k):
            wj = 0.0
            for s in range(n_slots):
                wj = wj + slot_weights[s, j]
            weights[j] = wj
            if wj > 0:
                for f in range(d):
                    acc = 0.0
                    for s in range(n_slots):
                        acc = acc + slot_sums[s, j, f]
                    centers_new[j, f] = <floating>(acc / wj)
            else:
                n_empty += 1
                for f in range(d):
                    centers_new[j, f] = centers_old[j, f]
    return n_empty


def distances(const floating[:, ::1] X, const floating[:, ::1] centers,
              floating[:, ::1] out, int n_threads):
    """Euclidean distances of every row of X to every center (the transform)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t i, j
    cdef double t
    n_threads = threads_for(n_threads, n, <double>n * k * d, _GRAIN)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            for j in range(k):
                t = sqdist(&X[i, 0], &centers[j, 0], d)
                out[i, j] = <floating>sqrt(t)


cdef int64_t _walk_block(const floating* X, const floating* sw, const floating* C,
                         int* labels, double* costs, Py_ssize_t lo, Py_ssize_t hi,
                         Py_ssize_t d, Py_ssize_t k, double slack, int64_t n_steps,
                         uint64_t state) noexcept nogil:
    """Metropolis walk over the assignments of points lo..hi-1.

    Starts at the given labels, proposes moving a uniformly drawn point to a
    uniformly drawn other cluster, and accepts iff the block's cost stays
    within its start cost plus `slack`. The proposal is symmetric and the
    acceptance is the indicator of validity, so the walk targets the uniform
    distribution on the valid assignments of the block. O(d) per proposal.
    """
    cdef Py_ssize_t i
    cdef uint32_t nb = <uint32_t>(hi - lo)
    cdef uint32_t km1 = <uint32_t>(k - 1)
    cdef uint64_t r
    cdef int zi, j
    cdef double total = 0.0, budget, c, t0, t1, nt
    cdef int64_t step, accepted = 0
    cdef const floating* xi
    cdef const floating* cj
    total = block_costs(X, sw, C, labels, costs, lo, hi, d)
    budget = total + slack
    for step in range(n_steps):
        r = gmm_rng_next(&state)
        i = lo + gmm_rng_bounded(<uint32_t>(r >> 32), nb, &state)
        j = <int>gmm_rng_bounded(<uint32_t>r, km1, &state)
        zi = labels[i]
        if j >= zi:
            j = j + 1
        if d == 2:      # the common case, spelled out (the compiler unswitches this test)
            xi = X + 2 * i
            cj = C + 2 * j
            t0 = <double>xi[0] - <double>cj[0]
            t1 = <double>xi[1] - <double>cj[1]
            c = sw[i] * (t0 * t0 + t1 * t1)
        else:
            c = sw[i] * sqdist(X + i * d, C + j * d, d)
        nt = total + (c - costs[i])
        if nt <= budget:
            labels[i] = j
            costs[i] = c
            total = nt
            accepted += 1
    return accepted


def walk(const floating[:, ::1] X, const floating[::1] sample_weight,
         const floating[:, ::1] centers, int[::1] labels, double[::1] costs,
         Py_ssize_t block_size, const double[::1] block_slack,
         const int64_t[::1] block_steps, uint64_t seed, int64_t[::1] block_accepted,
         int n_threads):
    """Random walk over valid assignments, one independent chain per block of points.

    Block b holds points [b * block_size, (b + 1) * block_size) and may spend
    `block_slack[b]` above its start cost. Writes the new `labels`, their
    per-point `costs` and the accepted moves per block.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_blocks = block_slack.shape[0]
    cdef Py_ssize_t b, lo, hi
    if n == 0 or k < 2:
        block_accepted[:] = 0
        return
    n_threads = threads_for(n_threads, n_blocks, <double>np.asarray(block_steps).sum() * d,
                            _GRAIN)
    with nogil:
        for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
            lo = b * block_size
            hi = min(lo + block_size, n)
            block_accepted[b] = _walk_block(
                &X[0, 0], &sample_weight[0], &centers[0, 0], &labels[0], &costs[0],
                lo, hi, d, k, block_slack[b], block_steps[b], gmm_rng_stream(seed, <uint64_t>b))
