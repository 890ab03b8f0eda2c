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
from libc.math cimport sqrt, log, INFINITY

import numpy as np

from ._common cimport (
    floating, sqdist, sqdist_resid, gmm_rng_next, gmm_rng_stream, gmm_rng_bounded,
    gmm_rng_uniform, threads_for, block_costs, row_width, narrow_row, wide_row, row_cost,
    GMM_COST_WIDE_D,
)

CHUNK = 256
cdef Py_ssize_t _CHUNK = 256
#: The exact pass checks up to this many jumped centers one distance at a time; more, all
#: at once (_jump_bounds: a blocked search, after a float32 copy of the row when screened).
SCALAR_JUMPED = 2
cdef Py_ssize_t _SCALAR_JUMPED = SCALAR_JUMPED
# Floating-point operations worth one more thread: below this, waking a thread
# costs more than it saves (and on a loaded machine, much more).
cdef Py_ssize_t _GRAIN = 1 << 20



cdef extern from "gmm_simd.h":
    int gmm_argmin_level() noexcept nogil
    Py_ssize_t gmm_argmin_block_d(int level) noexcept nogil
    Py_ssize_t gmm_argmin_block_f(int level) noexcept nogil
    void gmm_argmin2_d(int level, const double* X, const int64_t* rows, Py_ssize_t n,
                       Py_ssize_t d, const double* CT, const double* csq, Py_ssize_t kp,
                       Py_ssize_t kc, int* labels, double* best, double* second) noexcept nogil
    void gmm_argmin2_f(int level, const float* X, const int64_t* rows, Py_ssize_t n,
                       Py_ssize_t d, const float* CT, const float* csq, Py_ssize_t kp,
                       Py_ssize_t kc, int* labels, float* best, float* second) noexcept nogil
    Py_ssize_t gmm_search_cols_d(int level, Py_ssize_t m) noexcept nogil
    Py_ssize_t gmm_search_cols_f(int level, Py_ssize_t m) noexcept nogil
    void gmm_minother_d(int level, const double* X, const int64_t* rows, Py_ssize_t n,
                        Py_ssize_t d, const double* CT, const double* csq, Py_ssize_t kp,
                        Py_ssize_t kc, const int* own, double* out) noexcept nogil
    void gmm_minother_f(int level, const float* X, const int64_t* rows, Py_ssize_t n,
                        Py_ssize_t d, const float* CT, const float* csq, Py_ssize_t kp,
                        Py_ssize_t kc, const int* own, float* out) noexcept nogil
    Py_ssize_t gmm_pp_width(int level) noexcept nogil
    int gmm_pp_d(int level, const double* X, Py_ssize_t n, Py_ssize_t d, const double* CT,
                 Py_ssize_t tp, const double* sw, double* closest, int update, double* pot,
                 double* gain) noexcept nogil
    int gmm_pp_f(int level, const float* X, Py_ssize_t n, Py_ssize_t d, const double* CT,
                 Py_ssize_t tp, const float* sw, double* closest, int update, double* pot,
                 double* gain) noexcept nogil
    int gmm_ppp_f(int level, const float* XP, Py_ssize_t n, Py_ssize_t n_xp, Py_ssize_t d,
                  const double* CT, Py_ssize_t tp, const float* sw, double* closest, int update,
                  double* pot, double* gain) noexcept nogil
    enum: GMM_PANEL
    enum: GMM_PP_MAX_TP

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


cdef extern from "gmm_bounds.h":
    Py_ssize_t gmm_lazy_keep(int level, const int* labels, const double* upper,
                             const double* lower, const double* lower_jumped,
                             const double* xsq, const int64_t* idx, Py_ssize_t p0,
                             Py_ssize_t p1, const double* up_shift, const double* low_shift,
                             const double* jump_shift, const double* jump_gap, double tol,
                             double maxcsq, int64_t* miss) noexcept nogil
    void gmm_watch_mark(int level, const int* labels, const double* upper,
                        const double* lower, const double* lower_jumped, const double* xsq,
                        Py_ssize_t p0, Py_ssize_t p1, const double* up_cap,
                        const double* low_cap, const double* jump_cap, double tol,
                        double csq_cap, unsigned char* mask) noexcept nogil


cdef extern from "gmm_cost.h":
    double gmm_cost_d_at(int level, const double* x, const double* c, Py_ssize_t d, double w,
                         double* r) noexcept nogil
    double gmm_cost_f_at(int level, const float* x, const float* c, Py_ssize_t d, double w,
                         double* r) noexcept nogil


def wide_cost(const floating[::1] x, const floating[::1] c, double w, double[::1] resid,
              int level):
    """||x - c||^2 by gmm_cost.h's arithmetic (the cost of a row of at least 32 features),
    adding w (x - c) to `resid`, with its variant for SIMD `level` (for tests: every level
    gives the same bits)."""
    cdef Py_ssize_t d = x.shape[0]
    if d < 1 or c.shape[0] != d or resid.shape[0] != d:
        raise ValueError(f"wide_cost: x, c and resid must have the same length >= 1, got "
                         f"{x.shape[0]}, {c.shape[0]}, {resid.shape[0]}")
    if level < 0 or level > _MAX_LEVEL:
        raise ValueError(f"level must be in 0..{_MAX_LEVEL} on this processor, got {level!r}")
    if floating is double:
        return gmm_cost_d_at(level, &x[0], &c[0], d, w, &resid[0])
    return gmm_cost_f_at(level, &x[0], &c[0], d, w, &resid[0])


cdef bint _SCREEN = True
#: Screening in float32 needs ||x||^2 + max ||c||^2 in this range: below its top (float32's
#: largest value is 3.4e38; |2 x.c| <= ||x||^2 + ||c||^2) every term stays finite, above its
#: bottom the margin tau stays far above float32's subnormal spacing (1.4e-45).
cdef double _SCREEN_LO = 1e-30, _SCREEN_HI = 1e37


def float32_screening(enabled=None):
    """Whether float64 searches are screened in float32 first (the labels are the same);
    with `enabled`, switch it (for tests and benchmarks). Returns the setting in use."""
    global _SCREEN
    if enabled is not None:
        _SCREEN = bool(enabled)
    return bool(_SCREEN)


def simd_block(dtype):
    """Centers per block of the nearest-center search: k is padded to a multiple of it."""
    if np.dtype(dtype) == np.float32:
        return gmm_argmin_block_f(_LEVEL)
    return gmm_argmin_block_d(_LEVEL)


# Kernel twin, kept for speed: sqdist (_common.pxd) with c = 0, without reading a zero vector.
cdef inline double sqnorm(const floating* x, Py_ssize_t d) noexcept nogil:
    """||x||^2 accumulated in double, in sqdist's four partial sums (independent chains: one
    chain of d additions waited on each addition's latency, about 4 d cycles a row, which
    at d = 128 cost about a sixth of a search over 100 centers). The passes' ||x||^2 (their
    searches' rounding margin) are summed this way."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double t0, t1, t2, t3
    cdef Py_ssize_t f = 0
    while f + 4 <= d:
        t0 = <double>x[f]
        t1 = <double>x[f + 1]
        t2 = <double>x[f + 2]
        t3 = <double>x[f + 3]
        s0 = s0 + t0 * t0
        s1 = s1 + t1 * t1
        s2 = s2 + t2 * t2
        s3 = s3 + t3 * t3
        f = f + 4
    if f < d:
        t0 = <double>x[f]
        s0 = s0 + t0 * t0
    if f + 1 < d:
        t1 = <double>x[f + 1]
        s1 = s1 + t1 * t1
    if f + 2 < d:
        t2 = <double>x[f + 2]
        s2 = s2 + t2 * t2
    return (s0 + s1) + (s2 + s3)


cdef inline void _rows_to_float32(const floating* X, Py_ssize_t d, const int64_t* rows,
                                  Py_ssize_t m, float* xf) noexcept nogil:
    """xf[q * d + f] = X[rows[q], f] rounded to float32: the rows a float32 screen searches."""
    cdef Py_ssize_t q, f
    cdef const floating* x
    for q in range(m):
        x = X + rows[q] * d
        for f in range(d):
            xf[q * d + f] = <float>x[f]


cdef void _search(const floating* X, Py_ssize_t d, const int64_t* rows, Py_ssize_t m,
                  Py_ssize_t n_centers, const floating* CT, const floating* csq, Py_ssize_t kp,
                  const float* CT32, const float* csq32, Py_ssize_t kp32, bint screen,
                  const double* xsq, double tol, double tol32, double maxcsq, int level,
                  float* xf, const int64_t* ident, int* lab, float* b32, float* s32,
                  floating* bt, floating* st, int64_t* redo_rows, int64_t* redo_at,
                  int* out_label, double* out_lower, double* out_best) noexcept nogil:
    """Nearest center of rows[0..m) of X (first minimum of ||c||^2 - 2 x.c in X's precision,
    the gmm_simd.h search) and a lower bound on the distance to every other center; with
    `out_best` (else NULL), a lower bound on the distance to the nearest center too.

    With `screen` (float64 X), the search runs first in float32 on converted rows
    (twice the SIMD width): a row whose float32 best and second-best values are further
    apart than their rounding (tol32 (||x||^2 + max ||c||^2)) has its label, if
    ||x||^2 + max ||c||^2 lies in [`_SCREEN_LO`, `_SCREEN_HI`); the other rows are searched
    again in float64. The labels are those of the float64 search.
    `xsq[q]` holds ||x_rows[q]||^2; the layouts' first `n_centers` columns are centers (the
    search scans gmm_search_cols of them, not the padding after them).
    """
    cdef Py_ssize_t q, r = 0
    cdef double tau, lb
    if screen:
        _rows_to_float32(X, d, rows, m, xf)
        gmm_argmin2_f(level, xf, ident, m, d, CT32, csq32, kp32,
                      gmm_search_cols_f(level, n_centers), lab, b32, s32)
        for q in range(m):
            tau = tol32 * (xsq[q] + maxcsq)
            # outside [_SCREEN_LO, _SCREEN_HI) float32 overflows or its rounding is not
            # relative: such rows are searched in float64
            if (<double>s32[q] - <double>b32[q] > tau
                    and _SCREEN_LO <= xsq[q] + maxcsq < _SCREEN_HI):
                out_label[q] = lab[q]
                lb = <double>s32[q] + xsq[q] - tau
                out_lower[q] = sqrt(lb) if lb > 0 else 0.0
                if out_best != NULL:
                    lb = <double>b32[q] + xsq[q] - tau
                    out_best[q] = sqrt(lb) if lb > 0 else 0.0
            else:
                redo_rows[r] = rows[q]
                redo_at[r] = q
                r = r + 1
    else:
        for q in range(m):
            redo_rows[q] = rows[q]
            redo_at[q] = q
        r = m
    if r == 0:
        return
    if floating is double:
        gmm_argmin2_d(level, X, redo_rows, r, d, CT, csq, kp,
                      gmm_search_cols_d(level, n_centers), lab, bt, st)
    else:
        gmm_argmin2_f(level, X, redo_rows, r, d, CT, csq, kp,
                      gmm_search_cols_f(level, n_centers), lab, bt, st)
    for q in range(r):
        out_label[redo_at[q]] = lab[q]
        tau = tol * (xsq[redo_at[q]] + maxcsq)
        lb = <double>st[q] + xsq[redo_at[q]] - tau
        out_lower[redo_at[q]] = sqrt(lb) if lb > 0 else 0.0
        if out_best != NULL:
            lb = <double>bt[q] + xsq[redo_at[q]] - tau
            out_best[redo_at[q]] = sqrt(lb) if lb > 0 else 0.0


cdef void _jump_bounds(const floating* X, Py_ssize_t d, const int64_t* rows, Py_ssize_t m,
                       const int* own, Py_ssize_t n_centers, const floating* CT,
                       const floating* csq, Py_ssize_t kp, const float* CT32,
                       const float* csq32, Py_ssize_t kp32, bint screen, const double* xsq,
                       double tol, double tol32, double maxcsq, int level, float* xf,
                       const int64_t* ident, float* v32, floating* vt,
                       double* out_lb2) noexcept nogil:
    """A lower bound out_lb2[q] on the squared distance from row rows[q] of X to each of the
    layout's n_centers centers but the own[q]-th (-1: none): the least search value over
    them (gmm_minother, in float32 for float64 X with `screen`), plus ||x||^2 (xsq[q]), less
    the search's rounding. No label is needed, so no row is searched again in float64; a
    row outside the float32 screen's range gets -inf (it is searched)."""
    cdef Py_ssize_t q
    if screen:
        _rows_to_float32(X, d, rows, m, xf)
        gmm_minother_f(level, xf, ident, m, d, CT32, csq32, kp32,
                       gmm_search_cols_f(level, n_centers), own, v32)
        for q in range(m):
            if _SCREEN_LO <= xsq[q] + maxcsq < _SCREEN_HI:
                out_lb2[q] = <double>v32[q] + xsq[q] - tol32 * (xsq[q] + maxcsq)
            else:
                out_lb2[q] = -INFINITY
        return
    if floating is double:
        gmm_minother_d(level, X, rows, m, d, CT, csq, kp, gmm_search_cols_d(level, n_centers),
                       own, vt)
    else:
        gmm_minother_f(level, X, rows, m, d, CT, csq, kp, gmm_search_cols_f(level, n_centers),
                       own, vt)
    for q in range(m):
        out_lb2[q] = <double>vt[q] + xsq[q] - tol * (xsq[q] + maxcsq)


def jump_lower_bounds(const floating[:, ::1] X, const int64_t[::1] rows,
                      const floating[:, ::1] centers, const int[::1] own, double[::1] out):
    """out[q] = the lower bound the incremental pass's check of the jumped centers leaves on
    the squared distance from row rows[q] of X to every row of `centers` but the own[q]-th
    (-1: none): _jump_bounds on the centers' own search layout, at the current SIMD level
    (for tests; -inf where the float32 screen cannot tell)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0], m = rows.shape[0]
    if centers.shape[1] != d or k < 1:
        raise ValueError(f"jump_lower_bounds: centers must be (k >= 1, {d}), got "
                         f"{tuple(np.asarray(centers).shape)}")
    if own.shape[0] != m or out.shape[0] != m:
        raise ValueError("jump_lower_bounds: rows, own and out must have one entry per row")
    R, O = np.asarray(rows), np.asarray(own)
    if m and (R.min() < 0 or R.max() >= n or O.min() < -1 or O.max() >= k):
        raise ValueError(f"jump_lower_bounds: rows must lie in [0, {n}) and own in [-1, {k})")
    dtype = np.asarray(X).dtype
    CT_arr, csq_arr, CT32_arr, csq32_arr, screen_, tol_, tol32_, maxcsq_ = _search_layout(
        centers, dtype)
    cdef floating[:, ::1] CT = CT_arr
    cdef floating[::1] csq = csq_arr
    cdef float[:, ::1] CT32 = CT32_arr
    cdef float[::1] csq32 = csq32_arr
    cdef double[::1] xsq = np.einsum("ij,ij->i", np.asarray(X)[R].astype(np.float64),
                                     np.asarray(X)[R].astype(np.float64)) if m else np.zeros(1)
    cdef int64_t[::1] ident = np.arange(max(m, 1), dtype=np.int64)
    cdef float[::1] xf = np.empty(max(m * d, 1), dtype=np.float32)
    cdef float[::1] v32 = np.empty(max(m, 1), dtype=np.float32)
    cdef floating[::1] vt = np.empty(max(m, 1), dtype=dtype)
    cdef bint screen = screen_
    cdef double tol = tol_, tol32 = tol32_, maxcsq = maxcsq_
    cdef int level = _LEVEL
    if m == 0:
        return
    with nogil:
        _jump_bounds(&X[0, 0], d, &rows[0], m, &own[0], k, &CT[0, 0], &csq[0], CT.shape[1],
                     &CT32[0, 0], &csq32[0], CT32.shape[1], screen, &xsq[0], tol, tol32,
                     maxcsq, level, &xf[0], &ident[0], &v32[0], &vt[0], &out[0])


def _center_layout(centers, dtype):
    """CT = -2 C^T padded with zero columns to a multiple of the SIMD block, and
    csq = ||c||^2 padded with +inf (padded centers are never chosen), in `dtype`."""
    C = np.asarray(centers)
    k, d = C.shape
    width = simd_block(dtype)
    kp = (k + width - 1) // width * width
    CT = np.zeros((d, kp), dtype=dtype)
    CT[:, :k] = C.T * -2.0                       # exact scaling, then rounded to dtype
    csq = np.full(kp, np.inf, dtype=dtype)
    csq[:k] = np.einsum("ij,ij->i", C.astype(np.float64), C.astype(np.float64))
    return CT, csq


def _rounding_tol(Py_ssize_t d, dtype):
    """The search's rounding margin for rows of `dtype`: tau = tol (||x||^2 + max ||c||^2) in
    squared distance. The search's rounding is below eps d (||x||^2 + ||c||^2); 4x that, with
    room for the rounding of x and c to float32, separates a label from every other
    center."""
    return 4.0 * (d + 4) * (2.0 ** -24 if np.dtype(dtype) == np.float32 else 2.0 ** -53)


def _search_layout(centers, dtype):
    """What `_search` needs at `centers` for rows of `dtype`: (CT, csq) in `dtype`, the
    float32 layout (CT32, csq32) and whether float64 rows are screened with it, the rounding
    margins (tol, tol32: tau = tol (||x||^2 + maxcsq) in squared distance) and maxcsq, the
    largest ||c||^2."""
    dtype = np.dtype(dtype)
    k, d = centers.shape[0], centers.shape[1]
    CT, csq = _center_layout(centers, dtype)
    C64 = np.asarray(centers, dtype=np.float64)
    maxcsq = float(np.max(np.einsum("ij,ij->i", C64, C64))) if k else 0.0
    # centers beyond the screen's range put every row outside it (the rows' ||x||^2 +
    # maxcsq >= maxcsq): no float32 layout then, whose cast would overflow
    screen = _SCREEN and dtype == np.float64 and maxcsq < _SCREEN_HI
    CT32, csq32 = _center_layout(centers, np.float32) if screen else (
        np.zeros((1, 1), np.float32), np.zeros(1, np.float32))
    tol = _rounding_tol(d, dtype)
    tol32 = _rounding_tol(d, np.float32)
    return CT, csq, CT32, csq32, screen, tol, tol32, maxcsq


def _jumped_layout(centers, jumped, dtype):
    """The search layout of the centers that jumped (:func:`_search_layout` of
    centers[jumped]; a placeholder when none did) and jpos, each center's place among them
    (-1: it did not jump): what _jump_bounds checks a row against, all at once."""
    k, d = centers.shape[0], centers.shape[1]
    J = np.asarray(jumped)
    CJ = np.asarray(centers)[J] if J.shape[0] else np.zeros((1, d), dtype)
    jpos = np.full(k, -1, dtype=np.int32)
    jpos[J] = np.arange(J.shape[0], dtype=np.int32)
    return _search_layout(CJ, dtype) + (jpos,)


cdef class PassBuffers:
    """The buffers of one :func:`kmeans_pass` besides X, the weights, the centers and the
    labels, with explicit switches for what the pass fills (no switch is an empty array).

    Built by the pass layer (gmmfast.cluster._pass), which keeps the numpy arrays and reads
    the results from them; the shapes are checked here, once, against n rows, k centers and
    d features. Optional parts (None = not computed):

    - ``prev_labels`` with ``chunk_prev_costs``: the cost total per chunk of that labeling
      at the pass's centers (a bound's value at new centers);
    - ``slot_resid``, ``slot_weight``, ``slot_sse``: per slot (chunks s * n_chunks //
      n_slots up to the next slot's) and cluster, the residual sums, weights and costs of
      the new labels; with ``slot_key``, ``slot_pick``, ``seed`` and ``offset`` a point per
      slot and cluster drawn with probability proportional to its cost;
    - ``point_costs``: each row's cost;
    - ``upper``, ``lower``, ``xsq`` (Hamerly's bounds, in and out) and, with ``prune``,
      the drift of every center, the ``jumped`` centers and the largest drift
      ``base_drift`` of the others; with ``fill_xsq`` (a pass that searches every row, not
      ``prune``) ``xsq`` is out only: the pass writes ||x_i||^2 as it reads the rows.
    """
    cdef double[::1] chunk_costs, chunk_prev_costs, point_costs, upper, lower, xsq, drift
    cdef int64_t[::1] chunk_changed, chunk_searched
    cdef int[::1] prev_labels, jumped
    cdef double[:, :, ::1] slot_resid
    cdef double[:, ::1] slot_weight, slot_sse, slot_key
    cdef int64_t[:, ::1] slot_pick
    cdef uint64_t seed
    cdef int64_t offset
    cdef double base_drift
    cdef Py_ssize_t n, k, d, n_slots
    cdef bint with_prev, with_sums, with_sample, with_points, track, prune, fill_xsq

    def __init__(self, Py_ssize_t n, Py_ssize_t k, Py_ssize_t d, *, chunk_costs,
                 chunk_changed, chunk_searched, prev_labels=None, chunk_prev_costs=None,
                 slot_resid=None, slot_weight=None, slot_sse=None, slot_key=None,
                 slot_pick=None, uint64_t seed=0, int64_t offset=0, point_costs=None,
                 upper=None, lower=None, xsq=None, drift=None, jumped=None,
                 double base_drift=0.0, bint prune=False, bint fill_xsq=False):
        cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
        none_d, none_i = np.empty(0), np.empty(0, dtype=np.int32)
        self.n, self.k, self.d = n, k, d
        self.with_prev = prev_labels is not None
        self.with_sums = slot_weight is not None
        self.with_sample = slot_key is not None
        self.with_points = point_costs is not None
        self.track = upper is not None
        self.prune = prune
        self.fill_xsq = fill_xsq
        self.chunk_costs, self.chunk_changed = chunk_costs, chunk_changed
        self.chunk_searched = chunk_searched
        self.prev_labels = prev_labels if self.with_prev else none_i
        self.chunk_prev_costs = chunk_prev_costs if self.with_prev else none_d
        self.slot_weight = slot_weight if self.with_sums else np.empty((0, 0))
        self.slot_sse = slot_sse if self.with_sums else np.empty((0, 0))
        self.slot_resid = slot_resid if self.with_sums else np.empty((0, 0, 0))
        self.slot_key = slot_key if self.with_sample else np.empty((0, 0))
        self.slot_pick = slot_pick if self.with_sample else np.empty((0, 0), dtype=np.int64)
        self.seed, self.offset = seed, offset
        self.point_costs = point_costs if self.with_points else none_d
        self.upper = upper if self.track else none_d
        self.lower = lower if self.track else none_d
        self.xsq = xsq if self.track else none_d
        self.drift = drift if drift is not None else none_d
        self.jumped = jumped if jumped is not None else none_i
        self.base_drift = base_drift
        self.n_slots = self.slot_weight.shape[0] if self.with_sums else n_chunks
        if self.chunk_costs.shape[0] != n_chunks or self.chunk_changed.shape[0] != n_chunks \
                or self.chunk_searched.shape[0] != n_chunks:
            raise ValueError(f"PassBuffers: chunk arrays must have {n_chunks} entries")
        if self.with_points and self.point_costs.shape[0] != n:
            raise ValueError("PassBuffers: point_costs has the wrong length")
        if self.with_prev and (self.prev_labels.shape[0] != n
                               or self.chunk_prev_costs.shape[0] != n_chunks):
            raise ValueError("PassBuffers: prev_labels / chunk_prev_costs have the wrong length")
        if self.with_sums and (self.slot_resid.shape[0] != self.n_slots
                               or self.slot_resid.shape[1] != k or self.slot_resid.shape[2] != d
                               or self.slot_weight.shape[1] != k
                               or self.slot_sse.shape[0] != self.n_slots
                               or self.slot_sse.shape[1] != k):
            raise ValueError("PassBuffers: slot arrays have the wrong shape")
        if self.with_sample and (not self.with_sums or self.slot_key.shape[0] != self.n_slots
                                 or self.slot_key.shape[1] != k
                                 or self.slot_pick.shape[0] != self.n_slots
                                 or self.slot_pick.shape[1] != k):
            raise ValueError("PassBuffers: slot_key / slot_pick have the wrong shape")
        if self.n_slots < 1 or self.n_slots > max(n_chunks, 1):
            raise ValueError(f"PassBuffers: between 1 and {n_chunks} slots, got {self.n_slots}")
        if self.track and (self.upper.shape[0] != n or self.lower.shape[0] != n
                           or self.xsq.shape[0] != n):
            raise ValueError("PassBuffers: upper, lower and xsq must have one entry per row")
        if prune and (not self.track or self.drift.shape[0] != k):
            raise ValueError("PassBuffers: prune needs the bounds and one drift per center")
        if fill_xsq and (prune or not self.track):
            raise ValueError("PassBuffers: fill_xsq needs the bounds and a pass that searches "
                             "every row (not prune)")
        if self.jumped.shape[0] and (np.asarray(self.jumped).min() < 0
                                     or np.asarray(self.jumped).max() >= k):
            raise ValueError("PassBuffers: jumped centers out of range")
        if self.with_prev and n and (np.asarray(self.prev_labels).min() < 0
                                     or np.asarray(self.prev_labels).max() >= k):
            raise ValueError("PassBuffers: prev_labels out of range")


def kmeans_pass(const floating[:, ::1] X, const floating[::1] sample_weight,
                const floating[:, ::1] centers, int[::1] labels, PassBuffers buf not None,
                int n_threads):
    """One pass over X at `centers`: nearest-center labels and what the k-means bounds need.

    Writes, for the chunks of CHUNK rows, into `buf` (:class:`PassBuffers`):
    - `labels` (in: the previous labels, or -1; out: the nearest centers, first minimum),
      `chunk_changed[c]` the rows of chunk c whose label changed, `chunk_costs[c]` the cost
      total of the new labels, `chunk_searched[c]` the rows that were searched;
    - with `prev_labels`, `chunk_prev_costs[c]`, the cost total of that labeling at these
      centers;
    - with the slot sums, per slot s and cluster j of the new labels: the weight W_sj, the
      residual sums R_sj = sum s_i (x_i - c_j) and the cost total; the slots are reduced in
      order by the caller, so the sums depend on (n, k, d) only, never on the thread count;
    - with `slot_key`, per slot and cluster a point drawn with probability proportional to
      its cost (Efraimidis-Spirakis: the largest log(u_i) / cost_i, u_i from the stream
      (seed, offset + i)), its row index + offset in `slot_pick` (-1 if none). The draw
      depends on the global row index only, so any partition of the rows into slots or
      chunks draws the same point;
    - with `point_costs`, each row's cost s_i ||x_i - c_{label_i}||^2.

    The search for float64 X is screened in float32 (see _search); labels are those of the
    float64 search.

    Pruning (exact, Hamerly's bounds): with `upper`, `upper[i]` receives the distance of row
    i to its center and `lower[i]` a lower bound on its distance to every other center;
    `xsq` holds ||x_i||^2. With `prune`, they hold those bounds for the previous labels at
    the previous centers; center j moved by `drift[j]`, and every center but those in
    `jumped` by at most `base_drift`. A row keeps its label without a search when upper +
    drift of its center, plus a margin for the rounding of the search, stays below its
    lowered bound and its distances to the jumped centers: the labels are those the full
    search gives.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    if centers.shape[1] != d or sample_weight.shape[0] != n or labels.shape[0] != n:
        raise ValueError("kmeans_pass: X, sample_weight, centers and labels disagree in shape")
    if buf.n != n or buf.k != k or buf.d != d:
        raise ValueError(f"kmeans_pass: buffers for ({buf.n}, {buf.k}, {buf.d}), got "
                         f"({n}, {k}, {d})")
    if n and (np.asarray(labels).min() < -1 or np.asarray(labels).max() >= k):
        raise ValueError("kmeans_pass: labels must be -1 or in [0, k)")
    cdef bint with_prev = buf.with_prev, with_sums = buf.with_sums
    cdef bint with_sample = buf.with_sample, with_points = buf.with_points
    cdef bint track = buf.track, prune = buf.prune, fill_xsq = buf.fill_xsq
    cdef double[::1] chunk_costs = buf.chunk_costs, chunk_prev_costs = buf.chunk_prev_costs
    cdef double[::1] point_costs = buf.point_costs, upper = buf.upper, lower = buf.lower
    cdef double[::1] xsq = buf.xsq, drift = buf.drift
    cdef int64_t[::1] chunk_changed = buf.chunk_changed, chunk_searched = buf.chunk_searched
    cdef int[::1] prev_labels = buf.prev_labels, jumped = buf.jumped
    cdef double[:, :, ::1] slot_resid = buf.slot_resid
    cdef double[:, ::1] slot_weight = buf.slot_weight, slot_sse = buf.slot_sse
    cdef double[:, ::1] slot_key = buf.slot_key
    cdef int64_t[:, ::1] slot_pick = buf.slot_pick
    cdef uint64_t seed = buf.seed
    cdef int64_t offset = buf.offset
    cdef double base_drift = buf.base_drift
    cdef Py_ssize_t n_jumped = jumped.shape[0]
    cdef Py_ssize_t n_slots = buf.n_slots
    if n == 0:
        return
    # Kernel twin, kept for speed: kmeans_pass and kmeans_lazy_pass bind the search layout to
    # typed views alike (Cython types fused locals per function, so no helper can hand them).
    cdef int level = _LEVEL
    CT_arr, csq_arr, CT32_arr, csq32_arr, screen_, tol_, tol32_, maxcsq_ = _search_layout(
        centers, np.asarray(X).dtype)
    cdef floating[:, ::1] CT = CT_arr
    cdef floating[::1] csq = csq_arr
    cdef Py_ssize_t kp = CT.shape[1]
    cdef bint screen = screen_
    cdef float[:, ::1] CT32 = CT32_arr
    cdef float[::1] csq32 = csq32_arr
    cdef Py_ssize_t kp32 = CT32.shape[1]
    cdef double tol = tol_, tol32 = tol32_, maxcsq = maxcsq_
    cdef int64_t[::1] ident = np.arange(_CHUNK, dtype=np.int64)
    # Kernel twin, kept for speed: the jumped centers' layout bound as kmeans_lazy_pass binds
    # it (fused locals are per function); a row only they may take is checked at once
    CTJ_arr, csqJ_arr, CTJ32_arr, csqJ32_arr, screenJ_, tolJ_, tolJ32_, maxcsqJ_, jpos_arr = \
        _jumped_layout(centers, jumped, np.asarray(X).dtype)
    cdef floating[:, ::1] CTJ = CTJ_arr
    cdef floating[::1] csqJ = csqJ_arr
    cdef Py_ssize_t kpJ = CTJ.shape[1]
    cdef bint screenJ = screenJ_
    cdef float[:, ::1] CTJ32 = CTJ32_arr
    cdef float[::1] csqJ32 = csqJ32_arr
    cdef Py_ssize_t kpJ32 = CTJ32.shape[1]
    cdef double tolJ = tolJ_, tolJ32 = tolJ32_, maxcsqJ = maxcsqJ_
    cdef const int[::1] jpos = jpos_arr
    cdef Py_ssize_t s, c, c0, c1, i, i0, i1, f, j, q, m, jj, mj
    cdef double acc, acc_prev, wi, ci, key, ub, lb, dj2, tau, d2, xs
    cdef int64_t changed
    cdef int old
    cdef bint keep
    cdef uint64_t state
    cdef int* newlab
    cdef double* newlow
    cdef int64_t* todo
    cdef double* xq
    cdef float* xf
    cdef int* lab
    cdef float* b32
    cdef float* s32
    cdef floating* bt
    cdef floating* st
    cdef int64_t* redo_rows
    cdef int64_t* redo_at
    cdef int* sl
    cdef double* slb
    cdef int64_t* jrows
    cdef int* jl
    cdef double* jxq
    cdef double* jub
    cdef double* jlb
    cdef double* jlb2
    n_threads = threads_for(n_threads, n_slots, <double>n * (k + 4) * d, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        jrows = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        jl = <int*> malloc(_CHUNK * sizeof(int))
        jxq = <double*> malloc(_CHUNK * sizeof(double))
        jub = <double*> malloc(_CHUNK * sizeof(double))
        jlb = <double*> malloc(_CHUNK * sizeof(double))
        jlb2 = <double*> malloc(_CHUNK * sizeof(double))
        newlab = <int*> malloc(_CHUNK * sizeof(int))
        newlow = <double*> malloc(_CHUNK * sizeof(double))
        todo = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        xq = <double*> malloc(_CHUNK * sizeof(double))
        xf = <float*> malloc(_CHUNK * d * sizeof(float)) if screen else NULL
        lab = <int*> malloc(_CHUNK * sizeof(int))
        b32 = <float*> malloc(_CHUNK * sizeof(float))
        s32 = <float*> malloc(_CHUNK * sizeof(float))
        bt = <floating*> malloc(_CHUNK * sizeof(floating))
        st = <floating*> malloc(_CHUNK * sizeof(floating))
        redo_rows = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        redo_at = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        sl = <int*> malloc(_CHUNK * sizeof(int))
        slb = <double*> malloc(_CHUNK * sizeof(double))
        for s in prange(n_slots, schedule="dynamic"):
            c0 = s * n_chunks // n_slots
            c1 = (s + 1) * n_chunks // n_slots
# Kernel twin, kept for speed: the slot layout and zeroing of the CSR pass (_sparse.pyx csr_pass), the same slots for dense and sparse rows.
            if with_sums:
                for j in range(k):
                    slot_weight[s, j] = 0.0
                    slot_sse[s, j] = 0.0
                    for f in range(d):
                        slot_resid[s, j, f] = 0.0
                    if with_sample:
                        slot_key[s, j] = -INFINITY
                        slot_pick[s, j] = -1
            for c in range(c0, c1):
                i0 = c * _CHUNK
                i1 = min(i0 + _CHUNK, n)
                # rows whose label provably stays keep it; the others are searched. A row
                # that only the jumped centers may take is checked against them below.
                m = 0
                mj = 0
                for i in range(i0, i1):
                    old = labels[i]
                    keep = False
                    if prune and old >= 0:
                        ub = upper[i] + drift[old]
                        lb = lower[i] - base_drift
                        tau = tol * (xsq[i] + maxcsq)
                        ub = ub * ub * (1.0 + 1e-12) + tau
                        keep = lb > 0 and ub < lb * lb
                        if keep and n_jumped > _SCALAR_JUMPED:
                            jrows[mj] = i
                            jl[mj] = jpos[old]
                            jxq[mj] = xsq[i]
                            jub[mj] = ub
                            jlb[mj] = lb
                            mj = mj + 1
                            continue
                        jj = 0
                        while keep and jj < n_jumped:    # a few: one distance each
                            j = jumped[jj]
                            if j != old:
                                dj2 = sqdist(&X[i, 0], &centers[j, 0], d)
                                if ub < dj2:
                                    if dj2 < lb * lb:
                                        lb = sqrt(dj2)
                                else:
                                    keep = False
                            jj = jj + 1
                        if keep:
                            newlab[i - i0] = old
                            newlow[i - i0] = lb
                    if not keep:
                        todo[m] = i
                        if track and not fill_xsq:
                            xq[m] = xsq[i]
                        else:
                            xs = sqnorm(&X[i, 0], d)
                            xq[m] = xs
                            if fill_xsq:
                                xsq[i] = xs
                        m = m + 1
                if mj:
                    # a lower bound on each row's squared distance to the jumped centers but
                    # its own (the search's rounding allowed for): kept when its loosened
                    # distance to its own center stays below it
                    _jump_bounds(&X[0, 0], d, jrows, mj, jl, n_jumped, &CTJ[0, 0], &csqJ[0],
                                 kpJ, &CTJ32[0, 0], &csqJ32[0], kpJ32, screenJ, jxq, tolJ,
                                 tolJ32, maxcsqJ, level, xf, &ident[0], b32, bt, jlb2)
                    for q in range(mj):
                        i = jrows[q]
                        if jub[q] < jlb2[q]:
                            lb = jlb[q]
                            if jlb2[q] < lb * lb:
                                lb = sqrt(jlb2[q])
                            newlab[i - i0] = labels[i]
                            newlow[i - i0] = lb
                        else:     # pruned passes have xsq filled (track, not fill_xsq)
                            todo[m] = i
                            xq[m] = xsq[i]
                            m = m + 1
                if m:
                    _search(&X[0, 0], d, todo, m, k, &CT[0, 0], &csq[0], kp, &CT32[0, 0],
                            &csq32[0], kp32, screen, xq, tol, tol32, maxcsq, level, xf,
                            &ident[0], lab, b32, s32, bt, st, redo_rows, redo_at, sl, slb, NULL)
                    for q in range(m):
                        newlab[todo[q] - i0] = sl[q]
                        newlow[todo[q] - i0] = slb[q]
                acc = 0.0
                acc_prev = 0.0
                changed = 0
                for i in range(i0, i1):
                    wi = sample_weight[i]
                    j = newlab[i - i0]
                    if labels[i] != j:
                        changed = changed + 1
                        labels[i] = <int>j
                    if with_sums:
                        d2 = sqdist_resid(&X[i, 0], &centers[j, 0], d, wi, &slot_resid[s, j, 0])
                        ci = wi * d2
                        slot_weight[s, j] = slot_weight[s, j] + wi
                        slot_sse[s, j] = slot_sse[s, j] + ci
                        if with_sample and ci > 0:
                            state = gmm_rng_stream(seed, <uint64_t>(offset + i))
                            key = log(gmm_rng_uniform(&state)) / ci
                            if key > slot_key[s, j]:
                                slot_key[s, j] = key
                                slot_pick[s, j] = offset + i
                    else:
                        d2 = sqdist(&X[i, 0], &centers[j, 0], d)
                        ci = wi * d2
                    if track:
                        upper[i] = sqrt(d2)
                        lower[i] = newlow[i - i0]
                    if with_points:
                        point_costs[i] = ci
                    acc = acc + ci
                    if with_prev:
                        acc_prev = acc_prev + wi * sqdist(&X[i, 0], &centers[prev_labels[i], 0], d)
                chunk_costs[c] = acc
                chunk_changed[c] = changed
                chunk_searched[c] = m
                if with_prev:
                    chunk_prev_costs[c] = acc_prev
        free(newlab)
        free(newlow)
        free(todo)
        free(xq)
        free(xf)
        free(lab)
        free(b32)
        free(s32)
        free(bt)
        free(st)
        free(redo_rows)
        free(redo_at)
        free(sl)
        free(slb)
        free(jrows)
        free(jl)
        free(jxq)
        free(jub)
        free(jlb)
        free(jlb2)


# -- incremental Lloyd passes ------------------------------------------------------------
#
# Lloyd's passes near a fixed point change few labels, and the centers move little. The
# incremental pass reads only the bounds of a row whose label provably stays (no read of
# X); the few rows that fail are tightened and searched, and the per-cluster sums change by
# the rows that changed label only. The sums are kept relative to per-cluster anchors a_j
# (the centers of the level's first, exact pass), which keeps their cancellation small: W_j,
# S'_j = sum s_i (x_i - a_j) and Q'_j = sum s_i ||x_i - a_j||^2 (see gmmfast.cluster._pass).


cdef class LazyBuffers:
    """The state of the incremental Lloyd passes (:func:`kmeans_lazy_pass`) on n rows, k
    centers and d features, and their outputs; built once per level by the pass layer
    (gmmfast.cluster._pass), which owns the numpy arrays and updates the per-center inputs
    in place between passes. Shapes and the labels' range are checked here, once.

    Per row, kept across passes (in and out):

    - ``labels`` (int32): the nearest centers at the last pass's centers;
    - ``upper``, ``lower``, ``lower_jumped``: Hamerly's bounds in offset form, with two
      lower bounds (two groups of centers, as Yinyang k-means keeps): the distance of row i
      to its center is at most ``upper[i] + cum_drift[labels[i]]``, its distance to every
      other center that is not jumped at least ``lower[i] - cum_other[labels[i]]``, and to
      every other jumped center at least ``lower_jumped[i] - cum_jumped[labels[i]]``;
    - ``xsq``: ||x_i||^2 (in; the search's rounding margin).

    The jumped centers (:meth:`set_jumped`, after :func:`lazy_regroup`) are the few that
    move far in every pass: their moves do not loosen every row's ``lower``, and a row near
    none of them keeps its ``lower_jumped`` for many passes. Per center (in, updated by the
    pass layer before each pass): ``cum_drift[j]``, the sum of center j's moves since the
    anchors; ``cum_other[j]`` and ``cum_jumped[j]``, the sums over the passes of the largest
    move of the other centers that are not jumped and that are (-inf while none is: then
    ``lower_jumped`` bounds nothing); ``jump_gap[j]``, a lower bound on the distance from
    center j to every other jumped center (+inf if none): a row of cluster j is at least
    jump_gap[j] - (its distance to c_j) from those. ``anchors`` (k, d, X's dtype): a_j.

    Scratch: ``slot_delta`` (n_slots, k, d + 3) and ``slot_touched`` (n_slots, k, uint8),
    n_slots groups of chunks as in :class:`PassBuffers`.

    The watch list (:meth:`set_watch`; a pass over every row marks its rows in a mask after
    :meth:`request_mask`): the rows whose bounds might not keep their label while every
    ``cum_drift[j]`` stays at most ``drift_cap[j]``, every ``cum_other[j]`` at most
    ``other_cap[j]``, every ``cum_jumped[j]`` at most ``jump_cap[j]``, the largest ||c||^2
    at most ``csq_cap`` and the jumped centers stay the same. While those hold, a pass reads
    those rows' bounds only: every other row would be kept without a write, so the labels,
    bounds and deltas are those of a pass over every row, bit for bit. Otherwise the pass
    reads every row.

    Out: ``delta`` (k, d + 3): per cluster j, the change of (W_j, S'_j, Q'_j, rows of
    positive weight) by the rows that changed label, reduced in slot order by
    :func:`kmeans_lazy_deltas` (each slot's part is in ``slot_delta`` where
    ``slot_touched``);
    ``slot_changed``, ``slot_searched`` and ``slot_tightened`` (n_slots,): per slot the
    rows whose label changed, that were searched, and whose distance to their center was
    recomputed (the rows of X the pass read).
    """
    cdef int[::1] labels
    cdef double[::1] upper, lower, lower_jumped, xsq, cum_drift, cum_other, cum_jumped
    cdef double[::1] jump_gap
    cdef object anchors
    cdef double[:, :, ::1] slot_delta
    cdef unsigned char[:, ::1] slot_touched
    cdef double[:, ::1] delta
    cdef int64_t[::1] slot_changed, slot_searched, slot_tightened
    cdef int[::1] jumped
    cdef Py_ssize_t n, k, d, n_slots
    cdef int64_t[::1] watch, watch_start
    cdef double[::1] drift_cap, other_cap, jump_cap
    cdef double csq_cap
    cdef bint watching
    cdef unsigned char[::1] mask
    cdef double[::1] mask_drift, mask_other, mask_jump
    cdef double mask_csq
    cdef bint marking

    def _caps(self, drift_cap, other_cap, jump_cap):
        """Copies of the caps, checked: float64, one per center."""
        caps = [np.asarray(c) for c in (drift_cap, other_cap, jump_cap)]
        if any(c.dtype != np.float64 or c.shape != (self.k,) for c in caps):
            raise ValueError(f"LazyBuffers: drift_cap, other_cap and jump_cap must be float64 "
                             f"of length {self.k}")
        return [c.copy() for c in caps]

    def request_mask(self, mask, drift_cap, other_cap, jump_cap, double csq_cap):
        """Let the next passes over every row set ``mask[i]`` (uint8, one per row) to 1 for
        the rows a watch list at these caps must hold (the pass's own test at the caps,
        which every operation of it preserves in floating point: a row left out is kept by
        every pass within them), 0 for the others."""
        M = np.asarray(mask)
        if M.dtype != np.uint8 or M.shape != (self.n,) or not M.flags.c_contiguous:
            raise ValueError(f"LazyBuffers: mask must be a contiguous uint8 array of {self.n} "
                             f"rows")
        self.mask_drift, self.mask_other, self.mask_jump = self._caps(drift_cap, other_cap,
                                                                      jump_cap)
        self.mask = M
        self.mask_csq = csq_cap
        self.marking = True

    def cancel_mask(self):
        """No mask from the next passes."""
        self.marking = False

    def set_watch(self, rows, drift_cap, other_cap, jump_cap, double csq_cap):
        """Watch ``rows`` (int64, increasing, in [0, n)) while the caps hold and the jumped
        centers stay the same (see the class docstring; ``drift_cap``, ``other_cap`` and
        ``jump_cap``: float64, one per center)."""
        R = np.asarray(rows)
        if R.dtype != np.int64 or R.ndim != 1 or (R.size and (R.min() < 0 or R.max() >= self.n
                                                              or np.any(np.diff(R) <= 0))):
            raise ValueError(f"LazyBuffers: watched rows must be increasing int64 rows in "
                             f"[0, {self.n})")
        caps = self._caps(drift_cap, other_cap, jump_cap)
        n_chunks = (self.n + _CHUNK - 1) // _CHUNK
        starts = np.minimum(np.arange(self.n_slots + 1, dtype=np.int64) * n_chunks
                            // self.n_slots * _CHUNK, self.n)
        self.watch = np.ascontiguousarray(R)
        self.watch_start = np.searchsorted(R, starts).astype(np.int64)
        self.drift_cap, self.other_cap, self.jump_cap = caps
        self.csq_cap = csq_cap
        self.watching = True

    def clear_watch(self):
        """Forget the watch list: every pass reads every row's bounds."""
        self.watching = False

    def watch_holds(self, double maxcsq):
        """Whether the watch list covers the next pass (at centers whose largest ||c||^2 is
        ``maxcsq``, with the shifts set; the jumped centers cannot change while a list is
        kept)."""
        return bool(self.watching and maxcsq <= self.csq_cap
                    and np.all(np.asarray(self.cum_drift) <= np.asarray(self.drift_cap))
                    and np.all(np.asarray(self.cum_other) <= np.asarray(self.other_cap))
                    and np.all(np.asarray(self.cum_jumped) <= np.asarray(self.jump_cap)))

    def set_jumped(self, jumped):
        """The jumped centers (int32, distinct, in [0, k)), after :func:`lazy_regroup` has
        made every row's two lower bounds hold for them (the watch list is dropped): a row
        whose ``lower_jumped`` cannot keep it is checked at its exact distance to them."""
        J = np.asarray(jumped)
        if J.dtype != np.int32 or J.ndim != 1 or (J.size and (J.min() < 0 or J.max() >= self.k)):
            raise ValueError(f"LazyBuffers: jumped must be int32 centers in [0, {self.k})")
        if J.size > 1 and not np.all(np.diff(np.sort(J)) > 0):
            raise ValueError("LazyBuffers: jumped centers must be distinct")
        self.jumped = J
        self.watching = False
        self.marking = False

    def __init__(self, Py_ssize_t n, Py_ssize_t k, Py_ssize_t d, *, labels, upper, lower,
                 lower_jumped, xsq, cum_drift, cum_other, cum_jumped, jump_gap, anchors,
                 slot_delta, slot_touched, delta, slot_changed, slot_searched, slot_tightened):
        cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
        self.n, self.k, self.d = n, k, d
        self.labels, self.upper, self.lower, self.xsq = labels, upper, lower, xsq
        self.lower_jumped = lower_jumped
        self.cum_drift, self.cum_other, self.jump_gap = cum_drift, cum_other, jump_gap
        self.cum_jumped = cum_jumped
        self.slot_delta, self.slot_touched, self.delta = slot_delta, slot_touched, delta
        self.slot_changed, self.slot_searched = slot_changed, slot_searched
        self.slot_tightened = slot_tightened
        self.n_slots = self.slot_delta.shape[0]
        self.jumped = np.empty(0, dtype=np.int32)
        self.watch = np.empty(0, dtype=np.int64)
        self.watch_start = np.zeros(self.n_slots + 1, dtype=np.int64)
        self.drift_cap, self.other_cap, self.jump_cap = np.zeros(k), np.zeros(k), np.zeros(k)
        self.csq_cap = 0.0
        self.watching = False
        self.mask = np.zeros(1, dtype=np.uint8)
        self.mask_drift, self.mask_other, self.mask_jump = np.zeros(k), np.zeros(k), np.zeros(k)
        self.mask_csq = 0.0
        self.marking = False
        A = np.asarray(anchors)
        if A.dtype not in (np.float32, np.float64) or A.ndim != 2 or A.shape != (k, d) \
                or not A.flags.c_contiguous:
            raise ValueError(f"LazyBuffers: anchors must be a C-contiguous ({k}, {d}) "
                             f"float32 or float64 array, got {A.dtype} {A.shape}")
        self.anchors = A
        if self.labels.shape[0] != n or self.upper.shape[0] != n \
                or self.lower.shape[0] != n or self.lower_jumped.shape[0] != n \
                or self.xsq.shape[0] != n:
            raise ValueError("LazyBuffers: labels, upper, lower, lower_jumped and xsq must "
                             "have one entry per row")
        if self.cum_drift.shape[0] != k or self.cum_other.shape[0] != k \
                or self.cum_jumped.shape[0] != k or self.jump_gap.shape[0] != k:
            raise ValueError("LazyBuffers: cum_drift, cum_other, cum_jumped and jump_gap must "
                             "have one entry per center")
        if self.n_slots < 1 or self.n_slots > max(n_chunks, 1):
            raise ValueError(f"LazyBuffers: between 1 and {max(n_chunks, 1)} slots, got "
                             f"{self.n_slots}")
        if self.slot_delta.shape[1] != k or self.slot_delta.shape[2] != d + 3 \
                or self.slot_touched.shape[0] != self.n_slots \
                or self.slot_touched.shape[1] != k:
            raise ValueError("LazyBuffers: slot_delta must be (n_slots, k, d + 3) and "
                             "slot_touched (n_slots, k)")
        if self.delta.shape[0] != k or self.delta.shape[1] != d + 3:
            raise ValueError(f"LazyBuffers: delta must be ({k}, {d + 3})")
        if self.slot_changed.shape[0] != self.n_slots \
                or self.slot_searched.shape[0] != self.n_slots \
                or self.slot_tightened.shape[0] != self.n_slots:
            raise ValueError("LazyBuffers: slot_changed, slot_searched and slot_tightened "
                             "must have one entry per slot")
        if n and (np.asarray(labels).min() < 0 or np.asarray(labels).max() >= k):
            raise ValueError("LazyBuffers: labels out of range")


cdef inline void _moment(double* row, const floating* x, const floating* a, Py_ssize_t d,
                         double w, double sign) noexcept nogil:
    """Add sign x (w, w (x - a), w ||x - a||^2, [w > 0]) to row[0 .. d + 3): one row
    entering (+1) or leaving (-1) a cluster with anchor a; the numbers are those an exact
    pass at centers a sums (sqdist and sqdist_resid's differences)."""
    cdef Py_ssize_t f
    row[0] = row[0] + sign * w
    for f in range(d):
        row[1 + f] = row[1 + f] + sign * (w * (<double>x[f] - <double>a[f]))
    row[d + 1] = row[d + 1] + sign * (w * sqdist(x, a, d))
    if w > 0:
        row[d + 2] = row[d + 2] + sign


cdef inline double* _slot_row(double* row, unsigned char* touched, Py_ssize_t d
                              ) noexcept nogil:
    """A slot's delta row of one cluster (d + 3 numbers), zeroed on its first use in this
    pass (``touched`` is its flag)."""
    cdef Py_ssize_t f
    if not touched[0]:
        touched[0] = 1
        for f in range(d + 3):
            row[f] = 0.0
    return row


def kmeans_lazy_pass(const floating[:, ::1] X, const floating[::1] sample_weight,
                     const floating[:, ::1] centers, LazyBuffers buf not None,
                     Py_ssize_t slot_lo, Py_ssize_t slot_hi, int n_threads):
    """Slots [slot_lo, slot_hi) of one incremental Lloyd pass at `centers` (see
    :class:`LazyBuffers`); the caller loops over blocks of slots (Ctrl-C gets through
    between them), then reduces the slots with :func:`kmeans_lazy_deltas`.

    A row keeps its label without reading X when its loosened bounds separate it from every
    other center by more than the search's rounding margin (as in :func:`kmeans_pass`; for
    the jumped centers the larger of its ``lower_jumped`` bound and the triangle
    inequality's jump_gap - its upper bound); otherwise its distance to its center is
    recomputed (tightened). A row that then only the
    jumped centers (`buf.jumped`) may take is checked against them, the rows of a batch all
    at once by a blocked least-value search on the jumped centers' own layout (gmm_minother:
    a lower bound on the distance to every jumped center but the row's own, allowing for the
    search's rounding; no label, so no float64 redo and no merge of the lanes); a row that
    neither check keeps is searched (`_search`, screened in float32 for float64 X): the labels
    are those of a full search. Searched rows get exact bounds, checked rows an exact
    ``lower_jumped`` (so they are not checked again until the jumped centers move that far
    nearer); the rows whose label
    changed add their moments to `delta` (removed from the old cluster, added to the new),
    per slot in row order (then in slot order by :func:`kmeans_lazy_deltas`): the results
    do not depend on the thread count.

    Returns whether the pass read the watched rows only (see :class:`LazyBuffers`), with
    the same results as a pass over every row. A pass over every row marks the mask of
    :meth:`LazyBuffers.request_mask` if one is requested.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    if centers.shape[1] != d or sample_weight.shape[0] != n:
        raise ValueError("kmeans_lazy_pass: X, sample_weight and centers disagree in shape")
    if buf.n != n or buf.k != k or buf.d != d:
        raise ValueError(f"kmeans_lazy_pass: buffers for ({buf.n}, {buf.k}, {buf.d}), got "
                         f"({n}, {k}, {d})")
    cdef const floating[:, ::1] anchors = buf.anchors     # X's dtype (checked by Cython)
    cdef int[::1] labels = buf.labels
    cdef double[::1] upper = buf.upper, lower = buf.lower, xsq = buf.xsq
    cdef double[::1] lowj = buf.lower_jumped
    cdef double[::1] cum_drift = buf.cum_drift, cum_other = buf.cum_other
    cdef double[::1] cum_jumped = buf.cum_jumped
    cdef double[::1] jump_gap = buf.jump_gap
    cdef int[::1] jumped = buf.jumped
    cdef Py_ssize_t n_jumped = jumped.shape[0]
    cdef double[:, :, ::1] slot_delta = buf.slot_delta
    cdef unsigned char[:, ::1] touched = buf.slot_touched
    cdef double[:, ::1] delta = buf.delta
    cdef int64_t[::1] slot_changed = buf.slot_changed, slot_searched = buf.slot_searched
    cdef int64_t[::1] slot_tightened = buf.slot_tightened
    cdef Py_ssize_t n_slots = buf.n_slots
    if not 0 <= slot_lo <= slot_hi <= n_slots:
        raise ValueError(f"kmeans_lazy_pass: slots [{slot_lo}, {slot_hi}) out of [0, {n_slots}]")
    if n == 0 or slot_lo == slot_hi:
        return False
    # Kernel twin, kept for speed: kmeans_pass and kmeans_lazy_pass bind the search layout to
    # typed views alike (Cython types fused locals per function, so no helper can hand them).
    cdef int level = _LEVEL
    CT_arr, csq_arr, CT32_arr, csq32_arr, screen_, tol_, tol32_, maxcsq_ = _search_layout(
        centers, np.asarray(X).dtype)
    cdef floating[:, ::1] CT = CT_arr
    cdef floating[::1] csq = csq_arr
    cdef Py_ssize_t kp = CT.shape[1]
    cdef bint screen = screen_
    cdef float[:, ::1] CT32 = CT32_arr
    cdef float[::1] csq32 = csq32_arr
    cdef Py_ssize_t kp32 = CT32.shape[1]
    cdef double tol = tol_, tol32 = tol32_, maxcsq = maxcsq_
    # the jumped centers' own search layout: a row that only they may take is checked
    # against them all at once, by the blocked search (a lower bound on its distance to each)
    CTJ_arr, csqJ_arr, CTJ32_arr, csqJ32_arr, screenJ_, tolJ_, tolJ32_, maxcsqJ_, jpos_arr = \
        _jumped_layout(centers, jumped, np.asarray(X).dtype)
    cdef floating[:, ::1] CTJ = CTJ_arr
    cdef floating[::1] csqJ = csqJ_arr
    cdef Py_ssize_t kpJ = CTJ.shape[1]
    cdef bint screenJ = screenJ_
    cdef float[:, ::1] CTJ32 = CTJ32_arr
    cdef float[::1] csqJ32 = csqJ32_arr
    cdef Py_ssize_t kpJ32 = CTJ32.shape[1]
    cdef double tolJ = tolJ_, tolJ32 = tolJ32_, maxcsqJ = maxcsqJ_
    cdef int64_t[::1] ident = np.arange(_CHUNK, dtype=np.int64)
    cdef const int[::1] jpos = jpos_arr
    cdef bint watched = buf.watch_holds(maxcsq)
    # with no jumped center (cum_jumped -inf) lower_jumped bounds nothing: the scans read
    # lower in its place (the same result, no second array streamed)
    cdef const double* lj_rows = &lowj[0] if n_jumped > 0 else &lower[0]
    cdef const int64_t[::1] watch = buf.watch
    cdef const int64_t[::1] watch_start = buf.watch_start
    cdef Py_ssize_t p, p_lo, p_hi, b, p0, p1
    cdef bint marking = buf.marking and not watched
    cdef unsigned char[::1] wmask = buf.mask
    # the loosened shifts at the mask's caps (the same operations as up_shift, low_shift)
    cdef double[::1] up_cap = np.asarray(buf.mask_drift) * (1.0 + 1e-12)
    cdef double[::1] low_cap = np.asarray(buf.mask_other) * (1.0 + 1e-12)
    cdef double[::1] jump_cap = np.asarray(buf.mask_jump) * (1.0 + 1e-12)
    cdef double csq_cap = buf.mask_csq
    # the loosened bounds, with room for the rounding of the running sums of drifts
    cdef double[::1] up_shift = np.asarray(cum_drift) * (1.0 + 1e-12)
    cdef double[::1] low_shift = np.asarray(cum_other) * (1.0 + 1e-12)
    cdef double[::1] jump_shift = np.asarray(cum_jumped) * (1.0 + 1e-12)
    cdef Py_ssize_t s, c, i, i0, i1, j, q, m, f
    cdef int old
    cdef double ub, lb, lbj, lball, tau, d2, wi, lj0
    cdef unsigned char st_
    cdef int64_t n_changed, n_searched, n_tight
    cdef int64_t* todo
    cdef int64_t* miss
    cdef Py_ssize_t n_miss
    cdef const int64_t* widx = &watch[0] if watched else NULL
    cdef double* xq
    cdef float* xf
    cdef int* lab
    cdef float* b32
    cdef float* s32
    cdef floating* bt
    cdef floating* st
    cdef int64_t* redo_rows
    cdef int64_t* redo_at
    cdef int* sl
    cdef double* slb
    cdef double* row
    # rows the bounds did not keep, in row order (pend; pstate 1: tightened and checked
    # against the jumped centers, 3: checked at the loose upper bound (tightened only if
    # that fails), 2: kept by the check, 0: searched), and the checked ones' data
    cdef Py_ssize_t mp, mj
    cdef int64_t* pend
    cdef unsigned char* pstate
    cdef double* pd2
    cdef double* pub
    cdef double* plb
    cdef double* ptau
    cdef int64_t* jrows
    cdef int64_t* jat
    cdef double* jxq
    cdef int* jl
    cdef double* jlb2
    cdef Py_ssize_t rows = (watch_start[slot_hi] - watch_start[slot_lo]) if watched else \
        min(slot_hi * n_chunks // n_slots * _CHUNK, n) - slot_lo * n_chunks // n_slots * _CHUNK
    # a kept row costs a few operations: a thread per 256k rows at most
    n_threads = threads_for(n_threads, slot_hi - slot_lo, <double>rows * 4, _GRAIN)
    with nogil, parallel(num_threads=n_threads):
        todo = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        miss = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        xq = <double*> malloc(_CHUNK * sizeof(double))
        xf = <float*> malloc(_CHUNK * d * sizeof(float)) if screen else NULL
        lab = <int*> malloc(_CHUNK * sizeof(int))
        b32 = <float*> malloc(_CHUNK * sizeof(float))
        s32 = <float*> malloc(_CHUNK * sizeof(float))
        bt = <floating*> malloc(_CHUNK * sizeof(floating))
        st = <floating*> malloc(_CHUNK * sizeof(floating))
        redo_rows = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        redo_at = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        sl = <int*> malloc(_CHUNK * sizeof(int))
        slb = <double*> malloc(_CHUNK * sizeof(double))
        pend = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        pstate = <unsigned char*> malloc(_CHUNK * sizeof(unsigned char))
        pd2 = <double*> malloc(_CHUNK * sizeof(double))
        pub = <double*> malloc(_CHUNK * sizeof(double))
        plb = <double*> malloc(_CHUNK * sizeof(double))
        ptau = <double*> malloc(_CHUNK * sizeof(double))
        jrows = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        jat = <int64_t*> malloc(_CHUNK * sizeof(int64_t))
        jxq = <double*> malloc(_CHUNK * sizeof(double))
        jl = <int*> malloc(_CHUNK * sizeof(int))
        jlb2 = <double*> malloc(_CHUNK * sizeof(double))
        for s in prange(slot_lo, slot_hi, schedule="dynamic"):
            n_changed = 0
            n_searched = 0
            n_tight = 0
            for j in range(k):
                touched[s, j] = 0
            # the slot's rows (whole chunks) or its watched rows, in batches of CHUNK
            if watched:
                p_lo = watch_start[s]
                p_hi = watch_start[s + 1]
            else:
                p_lo = s * n_chunks // n_slots * _CHUNK
                p_hi = min((s + 1) * n_chunks // n_slots * _CHUNK, n)
            for b in range((p_hi - p_lo + _CHUNK - 1) // _CHUNK):
                p0 = p_lo + b * _CHUNK
                p1 = min(p0 + _CHUNK, p_hi)
                m = 0
                mp = 0
                mj = 0
                # the rows whose loosened bounds keep their label (X not read, nothing
                # written) are decided by one vectorised scan; the others (miss) go on to the
                # checks below
                n_miss = gmm_lazy_keep(level, &labels[0], &upper[0], &lower[0], lj_rows,
                                       &xsq[0], widx, p0, p1, &up_shift[0], &low_shift[0],
                                       &jump_shift[0], &jump_gap[0], tol, maxcsq, miss)
                for q in range(n_miss):
                    p = miss[q]
                    i = watch[p] if watched else p
                    old = labels[i]
                    # lower bounds on the distance to the other centers: those that are not
                    # jumped (lb) and those that are (lbj: the larger of lower_jumped's and
                    # the triangle inequality's)
                    lb = lower[i] - low_shift[old]
                    lj0 = lowj[i] - jump_shift[old]
                    ub = upper[i] + up_shift[old]
                    tau = tol * (xsq[i] + maxcsq)
                    if n_jumped > 0 and lb > 0 and ub * ub * (1.0 + 1e-12) + tau < lb * lb:
                        # only the jumped centers may stand in the way, even at the loose
                        # upper bound: checked below first, tightened only if that fails
                        st_ = 3
                        d2 = ub * ub
                    else:
                        d2 = sqdist(&X[i, 0], &centers[old, 0], d)
                        n_tight = n_tight + 1
                        ub = sqrt(d2)
                        lbj = jump_gap[old] - ub
                        if lj0 > lbj:
                            lbj = lj0
                        lball = lb if lb < lbj else lbj
                        if not lball > 0:
                            lball = 0.0
                        if d2 * (1.0 + 1e-12) + tau < lball * lball:
                            upper[i] = ub - cum_drift[old]
                            continue                # kept after tightening
                        # only the jumped centers may stand in the way: checked below, all
                        # rows of the batch at once; else searched
                        st_ = 1 if (n_jumped > 0 and lb > 0
                                    and d2 * (1.0 + 1e-12) + tau < lb * lb) else 0
                    pend[mp] = i
                    pstate[mp] = st_
                    if st_ != 0:
                        pd2[mp] = d2
                        pub[mp] = ub
                        plb[mp] = lb
                        ptau[mp] = tau
                        jrows[mj] = i
                        jat[mj] = mp
                        jxq[mj] = xsq[i]
                        mj = mj + 1
                    mp = mp + 1
                if mj > 0:
                    # a lower bound on each checked row's squared distance to the jumped
                    # centers but its own (the search's rounding allowed for)
                    for q in range(mj):
                        jl[q] = jpos[labels[jrows[q]]]
                    _jump_bounds(&X[0, 0], d, jrows, mj, jl, n_jumped, &CTJ[0, 0],
                                 &csqJ[0], kpJ, &CTJ32[0, 0], &csqJ32[0], kpJ32, screenJ, jxq,
                                 tolJ, tolJ32, maxcsqJ, level, xf, &ident[0], b32, bt, jlb2)
                    for q in range(mj):
                        c = jat[q]
                        i = jrows[q]
                        old = labels[i]
                        if pstate[c] == 3 and not (pd2[c] * (1.0 + 1e-12) + ptau[c]
                                                   < jlb2[q]):
                            # the loose bound was not enough: tightened, checked again
                            pd2[c] = sqdist(&X[i, 0], &centers[old, 0], d)
                            pub[c] = sqrt(pd2[c])
                            n_tight = n_tight + 1
                            if not pd2[c] * (1.0 + 1e-12) + ptau[c] < plb[c] * plb[c]:
                                pstate[c] = 0
                                continue            # searched
                            pstate[c] = 1
                        if pd2[c] * (1.0 + 1e-12) + ptau[c] < jlb2[q]:
                            if pstate[c] == 1:      # tightened: its exact upper bound
                                upper[i] = pub[c] - cum_drift[old]
                            # its distance to the jumped centers, for the next passes
                            lowj[i] = sqrt(jlb2[q]) + cum_jumped[old]
                            pstate[c] = 2           # kept after checking the jumped centers
                        else:
                            pstate[c] = 0           # searched
                for c in range(mp):
                    if pstate[c] != 2:
                        i = pend[c]
                        todo[m] = i
                        xq[m] = xsq[i]
                        m = m + 1
                if m > 0:
                    _search(&X[0, 0], d, todo, m, k, &CT[0, 0], &csq[0], kp, &CT32[0, 0],
                            &csq32[0], kp32, screen, xq, tol, tol32, maxcsq, level, xf,
                            &ident[0], lab, b32, s32, bt, st, redo_rows, redo_at, sl, slb, NULL)
                    n_searched = n_searched + m
                    for q in range(m):
                        i = todo[q]
                        j = sl[q]
                        old = labels[i]
                        upper[i] = sqrt(sqdist(&X[i, 0], &centers[j, 0], d)) - cum_drift[j]
                        lower[i] = slb[q] + cum_other[j]
                        if n_jumped > 0:            # (cum_jumped is -inf while none is)
                            lowj[i] = slb[q] + cum_jumped[j]
                        if j != old:
                            labels[i] = <int>j
                            n_changed = n_changed + 1
                            wi = sample_weight[i]
                            row = _slot_row(&slot_delta[s, old, 0], &touched[s, old], d)
                            _moment(row, &X[i, 0], &anchors[old, 0], d, wi, -1.0)
                            row = _slot_row(&slot_delta[s, j, 0], &touched[s, j], d)
                            _moment(row, &X[i, 0], &anchors[j, 0], d, wi, 1.0)
                if marking:                 # a pass over every row: p is the row
                    gmm_watch_mark(level, &labels[0], &upper[0], &lower[0], lj_rows,
                                   &xsq[0], p0, p1, &up_cap[0], &low_cap[0], &jump_cap[0],
                                   tol, csq_cap, &wmask[0])
            slot_changed[s] = n_changed
            slot_searched[s] = n_searched
            slot_tightened[s] = n_tight
        free(todo)
        free(miss)
        free(xq)
        free(xf)
        free(lab)
        free(b32)
        free(s32)
        free(bt)
        free(st)
        free(redo_rows)
        free(redo_at)
        free(sl)
        free(slb)
        free(pend)
        free(pstate)
        free(pd2)
        free(pub)
        free(plb)
        free(ptau)
        free(jrows)
        free(jat)
        free(jxq)
        free(jl)
        free(jlb2)
    return watched


def kmeans_lazy_deltas(LazyBuffers buf not None):
    """`delta` of an incremental pass whose every slot :func:`kmeans_lazy_pass` has made:
    the slots' changes of the moments, added in slot order."""
    cdef Py_ssize_t k = buf.k, d = buf.d, n_slots = buf.n_slots, j, s, f
    cdef double[:, :, ::1] slot_delta = buf.slot_delta
    cdef unsigned char[:, ::1] touched = buf.slot_touched
    cdef double[:, ::1] delta = buf.delta
    with nogil:
        for j in range(k):
            for f in range(d + 3):
                delta[j, f] = 0.0
            for s in range(n_slots):
                if touched[s, j]:
                    for f in range(d + 3):
                        delta[j, f] = delta[j, f] + slot_delta[s, j, f]


cdef inline double _carried(double own, double other, double gap) noexcept nogil:
    """A row's bound on a group of centers after some join it (:func:`lazy_regroup`): its
    old bound ``own`` on those that stay, and for those that join, the larger of its old bound
    ``other`` on them and ``gap`` (their least distance to its center less its upper bound)."""
    if other > gap:
        gap = other
    return own if own < gap else gap


def predict_lazy_kept(const int[::1] labels, const double[::1] upper,
                      const double[::1] lower, const double[::1] lower_jumped,
                      const int64_t[::1] starts, Py_ssize_t width, const double[::1] cum_drift,
                      const double[::1] cum_other, const double[::1] cum_jumped,
                      const double[::1] drift, const double[:, ::1] gap_in,
                      const double[:, ::1] gap_out, const double[:, ::1] other,
                      const double[:, ::1] jumped_other, const double[:, ::1] gap,
                      int64_t[::1] kept, int64_t[::1] kept_others):
    """For the incremental pass (see :class:`LazyBuffers`), on the sampled rows (``width``
    rows from each of ``starts``) and for each candidate q of the jumped centers:
    ``kept[q]``, the rows whose loosened bounds keep their label, and ``kept_others[q]``,
    those whose bounds separate them from the centers that are not jumped (the others are
    then checked at their exact distances). The bounds are those :func:`lazy_regroup`
    makes with ``gap_in[q]`` and ``gap_out[q]`` (+inf: the jumped centers stay) from the
    state's shifts (``cum_drift``, ``cum_other``, ``cum_jumped``), then moved by ``drift``
    with the candidate's shifts ``other[q]`` and ``jumped_other[q]`` and gaps ``gap[q]``.
    Before the rounding margin and any tightening: a prediction, that chooses which centers
    are jumped, never a label."""
    cdef Py_ssize_t n = labels.shape[0], k = drift.shape[0], nq = kept.shape[0]
    cdef Py_ssize_t b, i, q
    cdef int l
    cdef double ub0, ub, lo, lj, lo2, lj2, t
    if gap_in.shape[0] != nq or gap_in.shape[1] != k or gap_out.shape[0] != nq \
            or gap_out.shape[1] != k or other.shape[0] != nq or other.shape[1] != k \
            or jumped_other.shape[0] != nq or jumped_other.shape[1] != k \
            or gap.shape[0] != nq or gap.shape[1] != k:
        raise ValueError("predict_lazy_kept: the shifts and gaps must be (candidates, k)")
    if cum_drift.shape[0] != k or cum_other.shape[0] != k or cum_jumped.shape[0] != k:
        raise ValueError("predict_lazy_kept: the state's shifts must have k entries")
    if upper.shape[0] != n or lower.shape[0] != n or lower_jumped.shape[0] != n \
            or kept_others.shape[0] != nq:
        raise ValueError("predict_lazy_kept: labels, bounds and kept disagree")
    if np.asarray(starts).size and (np.asarray(starts).min() < 0
                                    or np.asarray(starts).max() >= max(n, 1)):
        raise ValueError("predict_lazy_kept: starts out of range")
    kept[:] = 0
    kept_others[:] = 0
    with nogil:
        for b in range(starts.shape[0]):
            for i in range(starts[b], min(starts[b] + width, n)):
                l = labels[i]
                if l < 0 or l >= k:
                    continue
                ub0 = upper[i] + cum_drift[l]
                ub = ub0 + drift[l]
                lo = lower[i] - cum_other[l]
                lj = lower_jumped[i] - cum_jumped[l]
                for q in range(nq):
                    lo2 = _carried(lo, lj, gap_out[q, l] - ub0)   # the centers leaving
                    lj2 = _carried(lj, lo, gap_in[q, l] - ub0)    # ... and joining them
                    if ub < lo2 - other[q, l]:
                        kept_others[q] += 1
                        t = gap[q, l] - ub
                        lj2 = lj2 - jumped_other[q, l]
                        if ub < (lj2 if lj2 > t else t):
                            kept[q] += 1


def lazy_regroup(LazyBuffers buf not None, const double[::1] gap_in,
                 const double[::1] gap_out, bint jumped_after, int n_threads):
    """Before the jumped centers change (at the last pass's centers): every row's two lower
    bounds (see :class:`LazyBuffers`) are made to hold for the new groups. Per center j,
    ``gap_in[j]`` and ``gap_out[j]`` are lower bounds on its distance to the other centers
    that join the jumped ones and that leave them (+inf if none): a row of cluster j is at
    least gap - (its upper bound) from those (the triangle inequality), and at least its old
    group's bound. So the bound on the jumped centers becomes min(old jumped bound,
    max(old other bound, gap_in - upper)), that on the others min(old other bound,
    max(old jumped bound, gap_out - upper)): a row far from the centers that change group
    keeps its bounds. ``lower[i]`` keeps its offset (``cum_other``); with `jumped_after`
    ``lower_jumped[i]`` becomes the bound itself (the pass layer then sets ``cum_jumped``
    to 0), without it (no center to be jumped: ``cum_jumped`` -inf) it is left as it is."""
    cdef Py_ssize_t n = buf.n, k = buf.k, i
    if gap_in.shape[0] != k or gap_out.shape[0] != k:
        raise ValueError(f"lazy_regroup: gap_in and gap_out must have {k} entries")
    cdef int[::1] labels = buf.labels
    cdef double[::1] upper = buf.upper, lower = buf.lower, lowj = buf.lower_jumped
    cdef double[::1] cum_other = buf.cum_other
    cdef double[::1] up_shift = np.asarray(buf.cum_drift) * (1.0 + 1e-12)
    cdef double[::1] low_shift = np.asarray(buf.cum_other) * (1.0 + 1e-12)
    cdef double[::1] jump_shift = np.asarray(buf.cum_jumped) * (1.0 + 1e-12)
    cdef double a, b, ub
    cdef int l
    n_threads = threads_for(n_threads, n, <double>n * 8, _GRAIN)
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            l = labels[i]
            ub = upper[i] + up_shift[l]
            a = lower[i] - low_shift[l]
            b = lowj[i] - jump_shift[l]
            lower[i] = _carried(a, b, gap_out[l] - ub) + cum_other[l]
            if jumped_after:
                lowj[i] = _carried(b, a, gap_in[l] - ub)


def predict_kept(const int[::1] labels, const double[::1] upper, const double[::1] lower,
                 const double[::1] drift, const double[::1] bases, int64_t[::1] kept):
    """How many rows the next pruned pass would keep without a search (before the rounding
    margin and the jumped centers) for each of several largest drifts of the other centers,
    in one pass: ``kept[q]`` counts the rows with upper + drift of its center < lower -
    ``bases[q]``. ``bases`` must be non-increasing."""
    cdef Py_ssize_t n = labels.shape[0], nb = bases.shape[0], i, q
    cdef double slack
    if upper.shape[0] != n or lower.shape[0] != n:
        raise ValueError("predict_kept: labels, upper and lower disagree in length")
    if kept.shape[0] != nb:
        raise ValueError("predict_kept: bases and kept disagree in length")
    if nb and np.any(np.diff(np.asarray(bases)) > 0):
        raise ValueError("predict_kept: bases must be non-increasing")
    if n and (np.asarray(labels).min() < 0 or np.asarray(labels).max() >= drift.shape[0]):
        raise ValueError("predict_kept: labels out of range of drift")
    cdef int64_t[::1] first = np.zeros(nb + 1, dtype=np.int64)
    with nogil:
        for i in range(n):
            slack = lower[i] - upper[i] - drift[labels[i]]
            q = 0
            while q < nb and not slack > bases[q]:
                q = q + 1
            first[q] += 1          # kept for bases[q:], not for bases[:q]
        for q in range(nb):
            kept[q] = first[q] + (kept[q - 1] if q else 0)


def row_sqnorms(const floating[:, ::1] X, double[::1] out, int n_threads):
    """out[i] = ||x_i||^2 in double (:func:`sqnorm`, as the passes sum it; the search's
    rounding margin needs it to about eps d relative; numpy's einsum with a float64 result
    casts through a buffer, 7x slower on float32 rows)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i
    if out.shape[0] != n:
        raise ValueError(f"row_sqnorms: out must have one entry per row ({n})")
    n_threads = threads_for(n_threads, n, <double>n * d, _GRAIN)
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = sqnorm(&X[i, 0], d)


def label_counts(const int[::1] labels, const floating[::1] sample_weight, bint positive,
                 Py_ssize_t k, int n_threads):
    """Rows per label in [0, k) (int64, k entries): every row, or with `positive` the rows of
    positive weight only (np.bincount's counts, without its int64 copy of the labels)."""
    cdef Py_ssize_t n = labels.shape[0], b, i, lo, hi
    cdef int l
    if sample_weight.shape[0] != n:
        raise ValueError("label_counts: labels and sample_weight disagree in length")
    cdef Py_ssize_t n_blocks = max(1, min(64, (n + (1 << 16) - 1) >> 16))
    cdef int64_t[:, ::1] part = np.zeros((n_blocks, k), dtype=np.int64)
    cdef int64_t[::1] bad = np.zeros(n_blocks, dtype=np.int64)     # labels out of range
    n_threads = threads_for(n_threads, n_blocks, <double>n, _GRAIN)
    with nogil:
        for b in prange(n_blocks, num_threads=n_threads, schedule="static"):
            lo = b * n // n_blocks
            hi = (b + 1) * n // n_blocks
            for i in range(lo, hi):
                l = labels[i]
                if l < 0 or l >= k:
                    bad[b] += 1
                elif not positive or sample_weight[i] > 0:
                    part[b, l] += 1
    if np.asarray(bad).any():
        raise ValueError(f"label_counts: labels out of [0, {k})")
    return np.asarray(part).sum(axis=0)


def label_costs(const floating[:, ::1] X, const floating[::1] sample_weight,
                const floating[:, ::1] centers, const int[::1] labels,
                double[::1] chunk_costs, double[::1] point_costs, int n_threads):
    """Cost total of `labels` at `centers` per chunk; per point too unless `point_costs` is
    None."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef bint with_points = point_costs is not None
    if labels.shape[0] != n or sample_weight.shape[0] != n or centers.shape[1] != d \
            or chunk_costs.shape[0] != n_chunks or (with_points and point_costs.shape[0] != n):
        raise ValueError("label_costs: X, sample_weight, labels and the outputs disagree")
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
    if labels.shape[0] != n or sample_weight.shape[0] != n or slot_sums.shape[2] != d \
            or slot_weights.shape[0] != n_slots or slot_weights.shape[1] != k:
        raise ValueError("accumulate: X, sample_weight, labels and slot arrays disagree")
    n_threads = threads_for(n_threads, n_slots, <double>n * d, _GRAIN)
    with nogil:
        for s in prange(n_slots, schedule="dynamic", num_threads=n_threads):
            i0 = min((s * n_chunks // n_slots) * _CHUNK, n)
            i1 = min(((s + 1) * n_chunks // n_slots) * _CHUNK, n)
            for j in range(k):
                slot_weights[s, j] = 0.0
                for f in range(d):
                    slot_sums[s, j, f] = 0.0
            for i in range(i0, i1):
                wi = sample_weight[i]
                j = labels[i]
                slot_weights[s, j] = slot_weights[s, j] + wi
                for f in range(d):
                    slot_sums[s, j, f] = slot_sums[s, j, f] + wi * X[i, f]


def finalize_centers(const double[:, :, ::1] slot_sums, const double[:, ::1] slot_weights,
                     const floating[:, ::1] centers_old, floating[:, ::1] centers_new,
                     double[::1] weights):
    """Means of the clusters from the slot sums (reduced in slot order).

    A cluster with no weight keeps its previous center: the bound does not
    depend on it, so the previous center is still a minimiser. `weights`
    receives each cluster's weight.
    """
    cdef Py_ssize_t n_slots = slot_sums.shape[0], k = slot_sums.shape[1], d = slot_sums.shape[2]
    cdef Py_ssize_t s, j, f
    cdef double wj, acc
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
                for f in range(d):
                    centers_new[j, f] = centers_old[j, f]


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


# Random walks over valid assignments run in rounds: every block of points is one chain with
# its own running cost, budget and random stream (block_total, block_budget, block_rng);
# walk_start sets them, each call of walk / _walks.local_walk advances every block by its
# share of the round. The caller returns to Python between rounds, so Ctrl-C stops a long
# walk; the chains are the same however the proposals are split into rounds.

def walk_start(const floating[:, ::1] X, const floating[::1] sample_weight,
               const floating[:, ::1] centers, const int[::1] labels, double[::1] costs,
               Py_ssize_t block_size, const double[::1] block_slack, uint64_t seed,
               double[::1] block_total, double[::1] block_budget, uint64_t[::1] block_rng,
               int n_threads):
    """Start the chains: per-point costs of `labels`, each block's cost total, its budget
    (total + its slack) and its random stream (seed, block index)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_blocks = block_slack.shape[0]
    cdef Py_ssize_t b, lo
    # walk_start and walk check the same chain buffers (twins of one shape check).
    if sample_weight.shape[0] != n or labels.shape[0] != n or costs.shape[0] != n \
            or centers.shape[1] != d or block_size < 1 or n_blocks != (n + block_size - 1) // block_size \
            or block_total.shape[0] != n_blocks or block_budget.shape[0] != n_blocks \
            or block_rng.shape[0] != n_blocks:
        raise ValueError("walk_start: X, sample_weight, labels, costs, centers and the block "
                         "arrays disagree")
    if n and (np.asarray(labels).min() < 0 or np.asarray(labels).max() >= k):
        raise ValueError("walk_start: labels out of range")
    n_threads = threads_for(n_threads, n_blocks, <double>n * d, _GRAIN)
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            lo = b * block_size
            block_total[b] = block_costs(&X[0, 0], &sample_weight[0], &centers[0, 0],
                                         &labels[0], &costs[0], lo, min(lo + block_size, n), d)
            block_budget[b] = block_total[b] + block_slack[b]
            block_rng[b] = gmm_rng_stream(seed, <uint64_t>b)


cdef int64_t _walk_block(const floating* X, const floating* sw, const floating* C,
                         int* labels, double* costs, Py_ssize_t lo, Py_ssize_t hi,
                         Py_ssize_t d, Py_ssize_t k, double* running, double budget,
                         int64_t n_steps, uint64_t* rng, row_width width) noexcept nogil:
    """Metropolis walk over the assignments of points lo..hi-1, `n_steps` proposals.

    Proposes moving a uniformly drawn point to a uniformly drawn other cluster,
    and accepts iff the block's cost stays within `budget`. The proposal is
    symmetric and the acceptance is the indicator of validity, so the walk
    targets the uniform distribution on the valid assignments of the block.
    O(d) per proposal. `running` (the block's cost) and `rng` carry over rounds.
    """
    cdef Py_ssize_t i
    cdef uint32_t nb = <uint32_t>(hi - lo)
    cdef uint32_t km1 = <uint32_t>(k - 1)
    cdef uint64_t r, state = rng[0]
    cdef int zi, j
    cdef double total = running[0], c, t0, t1, nt
    cdef int64_t step, accepted = 0
    cdef const floating* xi
    cdef const floating* cj
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
            c = sw[i] * row_cost(X + i * d, C + j * d, d, width)
# Kernel twin, kept for speed: the accept step of every walk (_walks.pyx local_walk, _latent.pyx), inlined in each chain.
        nt = total + (c - costs[i])
        if nt <= budget:
            labels[i] = j
            costs[i] = c
            total = nt
            accepted += 1
    running[0] = total
    rng[0] = state
    return accepted


def walk(const floating[:, ::1] X, const floating[::1] sample_weight,
         const floating[:, ::1] centers, int[::1] labels, double[::1] costs,
         Py_ssize_t block_size, const int64_t[::1] block_steps, double[::1] block_total,
         const double[::1] block_budget, uint64_t[::1] block_rng,
         int64_t[::1] block_accepted, int n_threads):
    """One round of the random walk over valid assignments (see walk_start).

    Block b holds points [b * block_size, (b + 1) * block_size) and makes
    `block_steps[b]` proposals; the new `labels`, their per-point `costs`, and
    the accepted moves (added to `block_accepted`) are written.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_blocks = block_steps.shape[0]
    # walk_start and walk check the same chain buffers (twins of one shape check).
    if sample_weight.shape[0] != n or labels.shape[0] != n or costs.shape[0] != n \
            or centers.shape[1] != d or block_size < 1 or n_blocks != (n + block_size - 1) // block_size \
            or block_total.shape[0] != n_blocks or block_budget.shape[0] != n_blocks \
            or block_rng.shape[0] != n_blocks or block_accepted.shape[0] != n_blocks:
        raise ValueError("walk: X, sample_weight, labels, costs, centers and the block arrays "
                         "disagree")
    if n == 0 or k < 2:
        return
    n_threads = threads_for(n_threads, n_blocks, <double>np.asarray(block_steps).sum() * d,
                            _GRAIN)
    # The row width is chosen here, outside the parallel loop (see row_width in _common.pxd:
    # inside it, the test would tell the compiler d < 32).
    if d >= GMM_COST_WIDE_D:
        _walk_blocks(&X[0, 0], &sample_weight[0], &centers[0, 0], &labels[0], &costs[0], n, d,
                     k, block_size, n_blocks, &block_steps[0], &block_total[0],
                     &block_budget[0], &block_rng[0], &block_accepted[0], n_threads,
                     <wide_row>0)
    else:
        _walk_blocks(&X[0, 0], &sample_weight[0], &centers[0, 0], &labels[0], &costs[0], n, d,
                     k, block_size, n_blocks, &block_steps[0], &block_total[0],
                     &block_budget[0], &block_rng[0], &block_accepted[0], n_threads,
                     <narrow_row>0)


# Kernel twin, kept for speed: _walks.pyx _local_blocks holds local_walk's blocks alike (each
# calls its own inlined chain; a shared helper would need a call through a pointer per block).
cdef void _walk_blocks(const floating* X, const floating* sw, const floating* C, int* labels,
                       double* costs, Py_ssize_t n, Py_ssize_t d, Py_ssize_t k,
                       Py_ssize_t block_size, Py_ssize_t n_blocks, const int64_t* block_steps,
                       double* block_total, const double* block_budget, uint64_t* block_rng,
                       int64_t* block_accepted, int n_threads, row_width width) noexcept nogil:
    """walk's blocks in parallel, one chain each, at one row width."""
    cdef Py_ssize_t b, lo
    for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
        lo = b * block_size
        block_accepted[b] += _walk_block(X, sw, C, labels, costs, lo, min(lo + block_size, n),
                                         d, k, &block_total[b], block_budget[b],
                                         block_steps[b], &block_rng[b], width)


def pp_width():
    """Center lanes per vector of the k-means++ kernel; a call takes 1 to 4 vectors."""
    return gmm_pp_width(_LEVEL)


def pp_step(const floating[:, ::1] X, const floating[::1] sample_weight, double[::1] closest,
            const double[:, ::1] CT, bint update, double[::1] chunk_pot,
            double[:, ::1] chunk_gain, int n_threads):
    """One pass of k-means++ over X, per chunk of CHUNK rows (see gmm_simd.h).

    `CT` (d x tp, tp 1 to 4 multiples of pp_width()) holds centers as columns. With
    `update`, column 0 is the center chosen last: closest_i = min(closest_i,
    ||x_i - c_0||^2) and chunk_pot[c] = sum_i s_i closest_i over chunk c. Always:
    chunk_gain[c, t] = sum_i s_i max(0, closest_i - ||x_i - c_t||^2), what column t would
    lower the potential by (after the update). Sums in row order: they depend on the
    chunk only, never on the thread count.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], tp = CT.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t width = gmm_pp_width(_LEVEL)
    cdef int level = _LEVEL
    cdef Py_ssize_t c, i0, i1
    if sample_weight.shape[0] != n or closest.shape[0] != n or CT.shape[0] != d:
        raise ValueError("pp_step: X, sample_weight, closest and CT disagree in shape")
    if tp % width or tp < width or tp > 4 * width:
        raise ValueError(f"pp_step: CT needs 1 to 4 multiples of {width} columns, got {tp}")
    if chunk_pot.shape[0] != n_chunks or chunk_gain.shape[0] != n_chunks \
            or chunk_gain.shape[1] != tp:
        raise ValueError(f"pp_step: chunk_pot ({n_chunks},) and chunk_gain ({n_chunks}, {tp}) "
                         "have the wrong shape")
    n_threads = threads_for(n_threads, n_chunks, <double>n * tp * d, _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            if floating is double:
                gmm_pp_d(level, &X[i0, 0], i1 - i0, d, &CT[0, 0], tp, &sample_weight[i0],
                         &closest[i0], update, &chunk_pot[c], &chunk_gain[c, 0])
            else:
                gmm_pp_f(level, &X[i0, 0], i1 - i0, d, &CT[0, 0], tp, &sample_weight[i0],
                         &closest[i0], update, &chunk_pot[c], &chunk_gain[c, 0])


PANEL = GMM_PANEL
PANEL_MAX_CENTERS = GMM_PP_MAX_TP


def pp_panel(const floating[:, ::1] X, float[:, :, ::1] XP, int n_threads):
    """X's rows as float32 panels of PANEL rows for pp_step_panel: XP[b, f, r] =
    X[PANEL b + r, f], zero past the last row (XP: (ceil(n / PANEL), d, PANEL))."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], nb = (X.shape[0] + GMM_PANEL - 1) // GMM_PANEL
    cdef Py_ssize_t b, f, r, i
    if XP.shape[0] != nb or XP.shape[1] != d or XP.shape[2] != GMM_PANEL:
        raise ValueError(f"pp_panel: XP must be ({nb}, {d}, {GMM_PANEL}), got "
                         f"({XP.shape[0]}, {XP.shape[1]}, {XP.shape[2]})")
    n_threads = threads_for(n_threads, nb, <double>n * d, _GRAIN)
    with nogil:
        for b in prange(nb, schedule="static", num_threads=n_threads):
            for r in range(GMM_PANEL):
                i = b * GMM_PANEL + r
                if i < n:
                    for f in range(d):
                        XP[b, f, r] = <float>X[i, f]
                else:
                    for f in range(d):
                        XP[b, f, r] = 0.0


def pp_step_panel(const float[:, :, ::1] XP, const float[::1] sample_weight,
                  double[::1] closest, const double[:, ::1] CT, bint update,
                  double[::1] chunk_pot, double[:, ::1] chunk_gain, int n_threads):
    """pp_step on X's rows as panels (pp_panel; n = len(closest) rows): the same sums, each
    (row, center) distance in float32 as pp_step's float rows, for any 1 to
    PANEL_MAX_CENTERS columns of CT (no padding); the per-chunk sums add the rows in
    PANEL lanes (see gmm_simd.h)."""
    cdef Py_ssize_t n = closest.shape[0], d = CT.shape[0], tp = CT.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef int level = _LEVEL
    cdef Py_ssize_t c, i0, i1
    if XP.shape[0] != (n + GMM_PANEL - 1) // GMM_PANEL or XP.shape[1] != d \
            or XP.shape[2] != GMM_PANEL or sample_weight.shape[0] != n:
        raise ValueError("pp_step_panel: XP, sample_weight, closest and CT disagree in shape")
    if tp < 1 or tp > GMM_PP_MAX_TP:
        raise ValueError(f"pp_step_panel: CT needs 1 to {GMM_PP_MAX_TP} columns, got {tp}")
    if d < 1:
        raise ValueError("pp_step_panel: the rows need at least one feature (CT has 0 rows)")
    if chunk_pot.shape[0] != n_chunks or chunk_gain.shape[0] != n_chunks \
            or chunk_gain.shape[1] != tp:
        raise ValueError(f"pp_step_panel: chunk_pot ({n_chunks},) and chunk_gain ({n_chunks}, "
                         f"{tp}) have the wrong shape")
    n_threads = threads_for(n_threads, n_chunks, <double>n * tp * d, _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            gmm_ppp_f(level, &XP[i0 // GMM_PANEL, 0, 0], i1 - i0, n - i0, d, &CT[0, 0], tp,
                      &sample_weight[i0], &closest[i0], update, &chunk_pot[c],
                      &chunk_gain[c, 0])


def pp_pick(const floating[::1] sample_weight, const double[::1] closest,
            const double[::1] chunk_cum, const double[::1] targets, int64_t[::1] out):
    """Rows drawn by k-means++: for each target in [0, chunk_cum[-1]), the first row whose
    running total of s_i closest_i exceeds it.

    `chunk_cum` is the running total of the chunks' potentials (rows in chunks of CHUNK).
    The chunk is found by bisection, the row by a scan inside it; a target left over by
    rounding takes the chunk's last row of positive potential.
    """
    cdef Py_ssize_t n = closest.shape[0]
    cdef Py_ssize_t n_chunks = chunk_cum.shape[0]
    cdef Py_ssize_t q, lo, hi, mid, i, i0, i1, pick
    cdef double r, acc, p
    if sample_weight.shape[0] != n or n_chunks != (n + _CHUNK - 1) // _CHUNK \
            or out.shape[0] != targets.shape[0]:
        raise ValueError("pp_pick: sample_weight, closest, chunk_cum and out disagree")
    if n == 0:
        raise ValueError("pp_pick: no rows")
    with nogil:
        for q in range(targets.shape[0]):
            lo = 0
            hi = n_chunks - 1
            while lo < hi:           # first chunk whose running total exceeds the target
                mid = (lo + hi) // 2
                if chunk_cum[mid] > targets[q]:
                    hi = mid
                else:
                    lo = mid + 1
            r = targets[q] - (chunk_cum[lo - 1] if lo > 0 else 0.0)
            i0 = lo * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            acc = 0.0
            pick = -1
            for i in range(i0, i1):
                p = sample_weight[i] * closest[i]
                if p > 0:
                    pick = i
                    acc = acc + p
                    if acc > r:
                        break
            out[q] = pick if pick >= 0 else i1 - 1


def draw_rows(const double[::1] dist, double scale, uint64_t seed, int64_t offset,
              unsigned char[::1] out, int n_threads):
    """out[i] = 1 with probability min(1, scale dist_i), else 0 (k-means|| oversampling).

    The uniform of row i comes from the stream (seed, offset + i): the draw depends on the
    global row index only, never on threads or on how the rows are split into chunks.
    """
    cdef Py_ssize_t n = dist.shape[0], i
    cdef uint64_t state
    if out.shape[0] != n:
        raise ValueError("draw_rows: dist and out disagree in length")
    n_threads = threads_for(n_threads, n, <double>n * 20, _GRAIN)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            state = gmm_rng_stream(seed, <uint64_t>(offset + i))
            out[i] = gmm_rng_uniform(&state) < scale * dist[i]
