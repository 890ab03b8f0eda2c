# Scores of many feature rows against a few weight columns by one BLAS dgemm, for
# the kernels whose examples are stacks of rows (LS-SVM candidate windows, scene
# regions). Accumulation is in double precision; float32 rows are converted into
# a caller-owned buffer. Every entry is the same dot product however the rows are
# blocked, so results do not depend on the blocking.
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport dgemm

from ._common cimport floating


cdef inline void rows_dot(const floating* x, Py_ssize_t N, Py_ssize_t d, const double* WT,
                          Py_ssize_t M, double* xbuf, double* S) noexcept nogil:
    """S (N, M) row-major = x (N, d) WT (d, M)."""
    cdef Py_ssize_t f
    cdef int M_ = <int>M, N_ = <int>N, K_ = <int>d
    cdef double one = 1.0, zero = 0.0
    cdef char tn = b'N'
    cdef const double* xd
    if floating is double:
        xd = x
    else:
        for f in range(N * d):
            xbuf[f] = <double>x[f]
        xd = xbuf
    dgemm(&tn, &tn, &M_, &N_, &K_, &one, <double*>WT, &M_, <double*>xd, &K_, &zero, S, &M_)


cdef inline void block_rows_dot(const floating[:, :, ::1] X, const int64_t[::1] idx,
                                Py_ssize_t q0, Py_ssize_t B, const double* WT, Py_ssize_t M,
                                double* xbuf, double* S) noexcept nogil:
    """S (B R, M) = X[idx[q]] (R, d) WT (d, M) stacked for q in [q0, q0 + B), one dgemm.

    Consecutive double examples are read in place; otherwise they are gathered
    (and converted) into ``xbuf`` (B R d doubles) first.
    """
    cdef Py_ssize_t R = X.shape[1], d = X.shape[2], b, f
    cdef int M_ = <int>M, N_ = <int>(B * R), K_ = <int>d
    cdef double one = 1.0, zero = 0.0
    cdef char tn = b'N'
    cdef const double* xd
    cdef const floating* src
    cdef bint contiguous = floating is double
    for b in range(1, B):
        if idx[q0 + b] != idx[q0] + b:
            contiguous = False
    if contiguous:
        xd = <const double*>&X[idx[q0], 0, 0]
    else:
        for b in range(B):
            src = &X[idx[q0 + b], 0, 0]
            for f in range(R * d):
                xbuf[b * R * d + f] = <double>src[f]
        xd = xbuf
    dgemm(&tn, &tn, &M_, &N_, &K_, &one, <double*>WT, &M_, <double*>xd, &K_, &zero, S, &M_)
