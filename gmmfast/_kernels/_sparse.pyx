# Kernels of k-means on CSR sparse rows (scikit-learn's sparse KMeans input).
#
# A row x (nonzeros v_p at columns idx_p) is compared with centers through
# ||x - c||^2 = ||x||^2 - 2 x.c + ||c||^2: the dots x.c for all centers come from one sweep
# over the row's nonzeros against CT, the centers transposed (n_features x kp, kp a multiple
# of 16, padded with zero columns whose ||c||^2 is +inf), in double whatever the data type
# (gmm_sparse.h). Labels are the first minimum of ||c_j||^2 - 2 x.c_j, as in the dense kernels
# and scikit-learn.
#
# The layout rules of _kmeans.pyx hold: rows in chunks of CHUNK, cost totals per chunk,
# cluster sums per slot (groups of chunks whose boundaries depend on n, k and d only), so the
# results never depend on the thread count.
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t
from libc.math cimport sqrt, INFINITY

import numpy as np

from ._common cimport floating, threads_for

ctypedef fused index_t:
    int32_t
    int64_t

CHUNK = 256
cdef Py_ssize_t _CHUNK = 256
cdef Py_ssize_t _GRAIN = 1 << 20
#: Columns of CT are padded to a multiple of this (the register block of gmm_sparse.h).
BLOCK = 16
# rounding of ||c||^2 - 2 x.c in double: below (nnz + 20) eps (||x||^2 + ||c||^2); 4x that
cdef double _EPS = 2.0 ** -53


cdef extern from "gmm_sparse.h":
    void gmm_csr_dots_d32(Py_ssize_t nnz, const double* v, const int32_t* idx, const double* CT,
                          Py_ssize_t kp, double* acc) noexcept nogil
    void gmm_csr_dots_d64(Py_ssize_t nnz, const double* v, const int64_t* idx, const double* CT,
                          Py_ssize_t kp, double* acc) noexcept nogil
    void gmm_csr_dots_f32(Py_ssize_t nnz, const float* v, const int32_t* idx, const double* CT,
                          Py_ssize_t kp, double* acc) noexcept nogil
    void gmm_csr_dots_f64(Py_ssize_t nnz, const float* v, const int64_t* idx, const double* CT,
                          Py_ssize_t kp, double* acc) noexcept nogil


cdef inline void _dots(const floating* v, const index_t* idx, Py_ssize_t nnz, const double* CT,
                       Py_ssize_t kp, double* acc) noexcept nogil:
    """acc[j] = x.CT[:, j] for the row with nonzeros (v, idx), j < kp."""
    if floating is double:
        if index_t is int32_t:
            gmm_csr_dots_d32(nnz, v, idx, CT, kp, acc)
        else:
            gmm_csr_dots_d64(nnz, v, idx, CT, kp, acc)
    else:
        if index_t is int32_t:
            gmm_csr_dots_f32(nnz, v, idx, CT, kp, acc)
        else:
            gmm_csr_dots_f64(nnz, v, idx, CT, kp, acc)


cdef inline double _dot_one(const floating* v, const index_t* idx, Py_ssize_t nnz,
                            const double* CT, Py_ssize_t kp, Py_ssize_t j) noexcept nogil:
    """x.CT[:, j] for one column j, in the order of the nonzeros."""
    cdef Py_ssize_t p
    cdef double acc = 0.0
    for p in range(nnz):
        acc = acc + <double>v[p] * CT[idx[p] * kp + j]
    return acc


def center_layout(centers):
    """(CT, csq) for the kernels: CT = C^T in double padded with zero columns to a multiple of
    BLOCK, csq = ||c||^2 (pairwise sums, in double) padded with +inf."""
    C = np.asarray(centers, dtype=np.float64)
    k, d = C.shape
    kp = max(-(-k // BLOCK), 1) * BLOCK
    CT = np.zeros((d, kp))
    CT[:, :k] = C.T
    csq = np.full(kp, np.inf)
    csq[:k] = (C * C).sum(axis=1)
    return CT, csq


def _check_csr(data, indices, indptr, Py_ssize_t n):
    if indptr.shape[0] != n + 1 or data.shape[0] != indices.shape[0]:
        raise ValueError("sparse kernel: indptr must have n + 1 entries and data / indices "
                         "the same length")
    if n and (indptr[0] != 0 or indptr[n] > data.shape[0]):
        raise ValueError("sparse kernel: indptr must start at 0 and end within data")


def row_norms(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              double[::1] out):
    """out[i] = ||x_i||^2 in double (the nonzeros summed in order)."""
    cdef Py_ssize_t n = out.shape[0], i, p
    cdef double acc
    _check_csr(data, indices, indptr, n)
    with nogil:
        for i in range(n):
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc = acc + <double>data[p] * <double>data[p]
            out[i] = acc


def csr_pass(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
             const floating[::1] sample_weight, const double[::1] xsq,
             const double[:, ::1] CT, const double[::1] csq, Py_ssize_t k, int[::1] labels,
             double[::1] chunk_costs, int64_t[::1] chunk_changed,
             int64_t[::1] chunk_searched, double[:, :, ::1] slot_sums,
             double[:, ::1] slot_weight, double[:, ::1] slot_cost, double[::1] upper,
             double[::1] lower, const double[::1] drift, const double[::1] drift_other,
             bint prune, int n_threads):
    """One pass over the CSR rows at the centers (CT, csq): nearest-center labels and sums.

    Writes per chunk of CHUNK rows: `labels` (in: the previous labels or -1; out: the
    nearest centers, first minimum), `chunk_changed[c]` the rows whose label changed,
    `chunk_costs[c]` the total of s_i ||x_i - c_{label_i}||^2, `chunk_searched[c]` the rows
    whose nearest center was searched. If `slot_weight` is not empty, per slot s and cluster
    j: the weight W_sj, the sums S_sj = sum s_i x_i (dense, n_features) and the cost total.

    Pruning (exact, Hamerly's bounds): if `upper` is not empty it receives an upper bound on
    each row's distance to its center and `lower` a lower bound on its distance to every
    other center. With `prune` they hold those bounds for the previous labels at the previous
    centers; center j moved by `drift[j]` and the others by at most `drift_other[j]`. A row
    keeps its label without a search when its distance to its center (computed exactly)
    plus the rounding margin of a search stays below the lowered bound: the labels are those
    the full search gives.
    """
    cdef Py_ssize_t n = labels.shape[0], d = CT.shape[0], kp = CT.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef bint with_sums = slot_weight.shape[0] > 0
    cdef bint track = upper.shape[0] > 0
    cdef Py_ssize_t n_slots = slot_weight.shape[0] if with_sums else n_chunks
    _check_csr(data, indices, indptr, n)
    if sample_weight.shape[0] != n or xsq.shape[0] != n or csq.shape[0] != kp or k < 1 \
            or k > kp:
        raise ValueError("csr_pass: sample_weight, xsq, labels, CT and csq disagree in shape")
    if chunk_costs.shape[0] != n_chunks or chunk_changed.shape[0] != n_chunks \
            or chunk_searched.shape[0] != n_chunks:
        raise ValueError(f"csr_pass: chunk arrays must have {n_chunks} entries")
    if with_sums and (slot_sums.shape[0] != n_slots or slot_sums.shape[1] != k
                      or slot_sums.shape[2] != d or slot_weight.shape[1] != k
                      or slot_cost.shape[0] != n_slots or slot_cost.shape[1] != k):
        raise ValueError("csr_pass: slot arrays have the wrong shape")
    if n_slots < 1 or n_slots > max(n_chunks, 1):
        raise ValueError(f"csr_pass: between 1 and {n_chunks} slots, got {n_slots}")
    if track and (upper.shape[0] != n or lower.shape[0] != n):
        raise ValueError("csr_pass: upper and lower must have one entry per row")
    if prune and (not track or drift.shape[0] != k or drift_other.shape[0] != k):
        raise ValueError("csr_pass: prune needs the bounds and the drifts of the k centers")
    if n and (np.asarray(labels).min() < -1 or np.asarray(labels).max() >= k):
        raise ValueError("csr_pass: labels must be -1 or in [0, k)")
    if n == 0:
        return
    cdef double maxcsq = float(np.max(np.asarray(csq)[:k]))
    cdef Py_ssize_t s, c, c0, c1, i, i0, i1, j, p, nz, best_j
    cdef double acc, wi, ci, d2, tau, lb, best, second, val
    cdef int64_t changed, searched
    cdef int old
    cdef bint keep
    cdef double* dots
    n_threads = threads_for(n_threads, n_slots, <double>data.shape[0] * kp + n * k, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        dots = <double*> malloc(kp * sizeof(double))
        for s in prange(n_slots, schedule="dynamic"):
            c0 = s * n_chunks // n_slots
            c1 = (s + 1) * n_chunks // n_slots
# Kernel twin, kept for speed: the slot layout and zeroing of the dense pass (_kmeans.pyx kmeans_pass).
            if with_sums:
                for j in range(k):
                    slot_weight[s, j] = 0.0
                    slot_cost[s, j] = 0.0
                    for p in range(d):
                        slot_sums[s, j, p] = 0.0
            for c in range(c0, c1):
                i0 = c * _CHUNK
                i1 = min(i0 + _CHUNK, n)
                acc = 0.0
                changed = 0
                searched = 0
                for i in range(i0, i1):
                    p = indptr[i]
                    nz = indptr[i + 1] - p
                    tau = 4.0 * (nz + 20) * _EPS * (xsq[i] + maxcsq)
                    old = labels[i]
                    keep = False
                    if prune and old >= 0:
                        lb = lower[i] - drift_other[old]
                        if lb > 0:
                            d2 = xsq[i] - 2.0 * _dot_one(&data[p], &indices[p], nz, &CT[0, 0],
                                                         kp, old) + csq[old]
                            if d2 < 0:
                                d2 = 0.0
                            keep = (d2 + 3.0 * tau) * (1.0 + 1e-12) < lb * lb
                            if keep:
                                best_j = old
                                if track:
                                    upper[i] = sqrt(d2 + tau)
                                    lower[i] = lb
                    if not keep:
                        searched = searched + 1
                        _dots(&data[p], &indices[p], nz, &CT[0, 0], kp, dots)
                        best = INFINITY
                        second = INFINITY
                        best_j = 0
                        for j in range(k):
                            val = csq[j] - 2.0 * dots[j]
                            if val < best:
                                second = best
                                best = val
                                best_j = j
                            elif val < second:
                                second = val
                        d2 = xsq[i] + best
                        if d2 < 0:
                            d2 = 0.0
                        if track:
                            upper[i] = sqrt(d2 + tau)
                            lb = second + xsq[i] - tau
                            lower[i] = sqrt(lb) if lb > 0 else 0.0
                    if old != best_j:
                        changed = changed + 1
                        labels[i] = <int>best_j
                    wi = sample_weight[i]
                    ci = wi * d2
                    acc = acc + ci
                    if with_sums:
                        slot_weight[s, best_j] = slot_weight[s, best_j] + wi
                        slot_cost[s, best_j] = slot_cost[s, best_j] + ci
                        for j in range(p, p + nz):
                            slot_sums[s, best_j, indices[j]] = (slot_sums[s, best_j, indices[j]]
                                                                + wi * <double>data[j])
                chunk_costs[c] = acc
                chunk_changed[c] = changed
                chunk_searched[c] = searched
        free(dots)


def label_distances(const floating[::1] data, const index_t[::1] indices,
                    const index_t[::1] indptr, const double[::1] xsq, const double[:, ::1] CT,
                    const double[::1] csq, const int[::1] labels, double[::1] out,
                    int n_threads):
    """out[i] = ||x_i - c_{labels[i]}||^2 (unweighted, >= 0)."""
    cdef Py_ssize_t n = labels.shape[0], kp = CT.shape[1], i, p
    cdef double d2
    _check_csr(data, indices, indptr, n)
    if xsq.shape[0] != n or out.shape[0] != n or csq.shape[0] != kp:
        raise ValueError("label_distances: xsq, labels, out and csq disagree in shape")
    if n and (np.asarray(labels).min() < 0 or np.asarray(labels).max() >= kp
              or not np.isfinite(np.asarray(csq)[np.asarray(labels)]).all()):
        raise ValueError("label_distances: labels out of range")
    n_threads = threads_for(n_threads, n, <double>data.shape[0] * 4, _GRAIN)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            p = indptr[i]
            d2 = xsq[i] - 2.0 * _dot_one(&data[p], &indices[p], indptr[i + 1] - p, &CT[0, 0],
                                         kp, labels[i]) + csq[labels[i]]
            out[i] = d2 if d2 > 0 else 0.0


def distances(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const double[::1] xsq, const double[:, ::1] CT, const double[::1] csq,
              floating[:, ::1] out, int n_threads):
    """out[i, j] = ||x_i - c_j|| for the k = out.shape[1] centers (the transform)."""
    cdef Py_ssize_t n = out.shape[0], k = out.shape[1], kp = CT.shape[1], i, j, p
    cdef double d2
    cdef double* dots
    _check_csr(data, indices, indptr, n)
    if xsq.shape[0] != n or csq.shape[0] != kp or k > kp:
        raise ValueError("distances: xsq, out, CT and csq disagree in shape")
    if n == 0:
        return
    n_threads = threads_for(n_threads, n, <double>data.shape[0] * kp, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        dots = <double*> malloc(kp * sizeof(double))
        for i in prange(n, schedule="static"):
            p = indptr[i]
            _dots(&data[p], &indices[p], indptr[i + 1] - p, &CT[0, 0], kp, dots)
            for j in range(k):
                d2 = xsq[i] - 2.0 * dots[j] + csq[j]
                out[i, j] = <floating>sqrt(d2) if d2 > 0 else 0
        free(dots)


def pp_step(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
            const floating[::1] sample_weight, const double[::1] xsq, double[::1] closest,
            const double[:, ::1] CT, bint update, double[::1] chunk_pot,
            double[:, ::1] chunk_gain, int n_threads):
    """One pass of k-means++ over the CSR rows, per chunk of CHUNK rows: _kmeans.pp_step for
    sparse rows.

    `CT` (n_features x tp) holds centers as columns. With `update`, column 0 is the center
    chosen last: closest_i = min(closest_i, ||x_i - c_0||^2) and chunk_pot[c] = sum_i s_i
    closest_i over chunk c. Always: chunk_gain[c, t] = sum_i s_i max(0, closest_i -
    ||x_i - c_t||^2). Sums in row order: they depend on the chunk only.
    """
    cdef Py_ssize_t n = closest.shape[0], tp = CT.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t c, i, i0, i1, t, p
    cdef double pot, cl, g, si
    cdef double* dots
    cdef double* gain
    cdef double* ctsq
    _check_csr(data, indices, indptr, n)
    if sample_weight.shape[0] != n or xsq.shape[0] != n:
        raise ValueError("pp_step: sample_weight, xsq and closest disagree in length")
    if chunk_pot.shape[0] != n_chunks or chunk_gain.shape[0] != n_chunks \
            or chunk_gain.shape[1] != tp or tp < 1:
        raise ValueError(f"pp_step: chunk_pot ({n_chunks},) and chunk_gain ({n_chunks}, {tp}) "
                         "have the wrong shape")
    ctsq_arr = np.einsum("ft,ft->t", np.asarray(CT), np.asarray(CT))
    cdef double[::1] ctsq_v = ctsq_arr
    n_threads = threads_for(n_threads, n_chunks, <double>data.shape[0] * tp, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        dots = <double*> malloc(tp * sizeof(double))
        gain = <double*> malloc(tp * sizeof(double))
        for c in prange(n_chunks, schedule="static"):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            pot = 0.0
            for t in range(tp):
                gain[t] = 0.0
            for i in range(i0, i1):
                p = indptr[i]
                _dots(&data[p], &indices[p], indptr[i + 1] - p, &CT[0, 0], tp, dots)
                for t in range(tp):
                    g = xsq[i] - 2.0 * dots[t] + ctsq_v[t]
                    dots[t] = g if g > 0 else 0.0
                cl = closest[i]
                si = sample_weight[i]
                if update:
                    if dots[0] < cl:
                        cl = dots[0]
                        closest[i] = cl
                    pot = pot + si * cl
                for t in range(tp):
                    g = cl - dots[t]
                    if g > 0:
                        gain[t] = gain[t] + si * g
            if update:
                chunk_pot[c] = pot
            for t in range(tp):
                chunk_gain[c, t] = gain[t]
        free(dots)
        free(gain)
