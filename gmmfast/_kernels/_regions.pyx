# Kernels of the region-part model (paper section 5.3, the reconfigurable bag of parts).
#
# An image x_i is a grid of R regions with a feature vector x_i[r] each; its latent
# value is a part label z_r in 0..P-1 per region; parts are shared by the C classes:
#
#     score(x, y, z) = sum_r ( U[z_r] . x[r] + V[y, z_r] )
#
# with U (P, d) the part filters and V (C, P) the class-to-part assignment scores;
# w = (U, V) flattened row-major. Per image the part responses S = x U^T (R, P) are
# computed once (BLAS dgemm, double precision), then every class costs R P additions:
# for a fixed class the score is separable over regions, so
#
#     max_z score(x, c, z) = sum_r max_p ( S[r, p] + V[c, p] ).
#
# Rules (as _lssvm.pyx): examples addressed through `idx`, position r of idx processed
# on its own; sums of joint features accumulated per chunk of CHUNK positions into that
# chunk's slot (the caller reduces the slots in a fixed order); sums over regions in
# region order. Results never depend on the thread count. Ties: per region the first
# maximising part, then the first maximising class.
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.stdint cimport int64_t
from libc.math cimport INFINITY

import numpy as np

from ._common cimport floating
# The latent-SVM kernels (_lssvm.pyx, _regions.pyx) start alike: the same imports and chunk constants.
from ._gemm cimport block_rows_dot, rows_dot

#: Positions per chunk (one slot of joint-feature sums each); depends on nothing but n.
CHUNK = 16
cdef Py_ssize_t _CHUNK = 16
#: Images per dgemm of part responses.
cdef Py_ssize_t _BLOCK = 8


cdef inline void _class_totals(const double* S, Py_ssize_t R, Py_ssize_t Pt, Py_ssize_t P,
                               bint class_parts, const double* VT, Py_ssize_t C, double* acc,
                               double* tot) noexcept nogil:
    """tot[c] = sum_r max_p (S[r, off(c) + p] + VT[p, c]) for every class c, regions in order.

    S has Pt columns; off(c) = c P with class-specific parts, else 0. With shared
    parts the max runs over parts with the classes innermost (vectorised); a max
    is exact, so every total equals the per-class sequential one.
    """
    cdef Py_ssize_t r, p, c
    cdef double s
    cdef const double* row
    cdef const double* v
    for c in range(C):
        tot[c] = 0.0
    for r in range(R):
        row = S + r * Pt
        if class_parts:
            for c in range(C):
                acc[c] = row[c * P] + VT[c]
                for p in range(1, P):
                    s = row[c * P + p] + VT[p * C + c]
                    acc[c] = s if s > acc[c] else acc[c]
        else:
            for c in range(C):
                acc[c] = row[0] + VT[c]
            for p in range(1, P):
                v = VT + p * C
                for c in range(C):
                    s = row[p] + v[c]
                    acc[c] = s if s > acc[c] else acc[c]
        for c in range(C):
            tot[c] = tot[c] + acc[c]


def augmented_pass(const floating[:, :, ::1] X, const int[::1] y, const int64_t[::1] idx,
                   const double[:, ::1] UT, const double[:, ::1] V, const double[:, ::1] loss,
                   double[::1] H, int[::1] y_hat, int[:, ::1] z_hat, double[:, :, ::1] table,
                   double[:, ::1] phi_slots, double[::1] loss_slots, int n_threads):
    """Loss-augmented inference for the images idx[q], q < m.

    For each q (i = idx[q]): H[q] = max_{c, z} score(x_i, c, z) + loss[y_i, c], reached at
    class y_hat[q] with part labels z_hat[q] (R,). If ``table`` has m rows,
    table[q, r, p] = S[r, off(y_i) + p] + V[y_i, p] (the latent scores of the true class
    per region). If ``phi_slots`` has rows, chunk k of positions adds the joint feature of
    (y_hat, z_hat) to phi_slots[k] (layout: U block Pt*d, then V block C*P) and
    loss[y_i, y_hat] to loss_slots[k]. With a zero ``loss`` this is plain inference.
    UT is U transposed, (d, Pt): Pt = P parts shared by the classes, or Pt = C P with
    class-specific parts (class c's part p is row off(c) + p = c P + p of U).
    Part responses come from one dgemm per block of BLOCK images.
    """
    cdef Py_ssize_t m = idx.shape[0], R = X.shape[1], d = X.shape[2]
    cdef Py_ssize_t Pt = UT.shape[1], C = V.shape[0], P = V.shape[1]
    cdef bint class_parts = Pt != P
    cdef Py_ssize_t n_chunks = (m + _CHUNK - 1) // _CHUNK
    cdef bint want_table = table.shape[0] == m and m > 0
    cdef bint want_phi = phi_slots.shape[0] > 0
    cdef Py_ssize_t k, q, q0, b, B, r, p, c, f, lo, hi, off, D = Pt * d + C * P
    cdef int64_t i
    cdef int yi, by, bp
    cdef double best, tot, s, bs
    cdef double* S
    cdef double* Sq
    cdef double* xbuf
    cdef double* acc
    cdef double* tots
    cdef double* slot
    cdef const double* row
    cdef const double* vrow
    cdef const floating* xr
    cdef double[:, ::1] VT = np.ascontiguousarray(np.asarray(V).T)
    if m == 0:
        return
    with nogil, parallel(num_threads=n_threads):
        S = <double*>malloc(_BLOCK * R * Pt * sizeof(double))
        xbuf = <double*>malloc(_BLOCK * R * d * sizeof(double))
        acc = <double*>malloc(2 * C * sizeof(double))
        tots = acc + C
        for k in prange(n_chunks, schedule="static"):
            lo = k * _CHUNK
            hi = min(lo + _CHUNK, m)
            if want_phi:
                slot = &phi_slots[k, 0]
                for f in range(D):
                    slot[f] = 0.0
                loss_slots[k] = 0.0
            q0 = lo
            while q0 < hi:
                B = min(_BLOCK, hi - q0)
                block_rows_dot(X, idx, q0, B, &UT[0, 0], Pt, xbuf, S)
                for b in range(B):
                    q = q0 + b
                    i = idx[q]
                    yi = y[i]
                    Sq = S + b * R * Pt
                    _class_totals(Sq, R, Pt, P, class_parts, &VT[0, 0], C, acc, tots)
                    best = -INFINITY
                    by = 0
                    for c in range(C):
                        tot = tots[c] + loss[yi, c]
                        if tot > best:
                            best = tot
                            by = <int>c
                    H[q] = best
                    y_hat[q] = by
                    vrow = &V[by, 0]
                    off = by * P if class_parts else 0
                    for r in range(R):
                        row = Sq + r * Pt + off
                        bp = 0
                        bs = row[0] + vrow[0]
                        for p in range(1, P):
                            s = row[p] + vrow[p]
                            if s > bs:
                                bs = s
                                bp = <int>p
                        z_hat[q, r] = bp
                        if want_phi:
                            xr = &X[i, r, 0]
                            slot = &phi_slots[k, (off + bp) * d]
                            for f in range(d):
                                slot[f] = slot[f] + <double>xr[f]
                            phi_slots[k, Pt * d + by * P + bp] = \
                                phi_slots[k, Pt * d + by * P + bp] + 1.0
                    if want_phi:
                        loss_slots[k] = loss_slots[k] + loss[yi, by]
                    if want_table:
                        vrow = &V[yi, 0]
                        off = yi * P if class_parts else 0
                        for r in range(R):
                            row = Sq + r * Pt + off
                            for p in range(P):
                                table[q, r, p] = row[p] + vrow[p]
                q0 = q0 + B
        free(S)
        free(xbuf)
        free(acc)


def latent_table(const floating[:, :, ::1] X, const int[::1] y, const int64_t[::1] idx,
                 const double[:, ::1] UT, const double[:, ::1] V, double[:, :, ::1] table,
                 int n_threads):
    """table[q, r, p] = U[off(y_i) + p] . x_i[r] + V[y_i, p] for i = idx[q] (same arithmetic
    as the pass; off as there)."""
    cdef Py_ssize_t m = idx.shape[0], R = X.shape[1], d = X.shape[2], Pt = UT.shape[1]
    cdef Py_ssize_t P = V.shape[1]
    cdef bint class_parts = Pt != P
    cdef Py_ssize_t q, r, p, off
    cdef int64_t i
    cdef double* S
    cdef double* xbuf
    cdef const double* vrow
    if m == 0:
        return
    with nogil, parallel(num_threads=n_threads):
        S = <double*>malloc(R * Pt * sizeof(double))
        xbuf = <double*>malloc(R * d * sizeof(double))
        for q in prange(m, schedule="static"):
            i = idx[q]
            rows_dot(&X[i, 0, 0], R, d, &UT[0, 0], Pt, xbuf, S)
            vrow = &V[y[i], 0]
            off = y[i] * P if class_parts else 0
            for r in range(R):
                for p in range(P):
                    table[q, r, p] = S[r * Pt + off + p] + vrow[p]
        free(S)
        free(xbuf)


def phi_accumulate(const floating[:, :, ::1] X, const int[::1] y, const int[:, ::1] z,
                   const int64_t[::1] idx, Py_ssize_t n_parts, Py_ssize_t n_classes,
                   double[:, ::1] phi_slots, int n_threads, bint class_parts=False):
    """phi_slots[k] = sum of phi(x_i, y_i, z[q]) over the chunk k of positions (i = idx[q])."""
    cdef Py_ssize_t m = idx.shape[0], R = X.shape[1], d = X.shape[2]
    cdef Py_ssize_t P = n_parts, C = n_classes
    cdef Py_ssize_t Pt = C * P if class_parts else P, D = Pt * d + C * P, off
    cdef Py_ssize_t n_chunks = (m + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t k, q, r, f, lo, hi
    cdef int64_t i
    cdef int p, yi
    cdef double* slot
    cdef const floating* xr
    if m == 0:
        return
    with nogil:
        for k in prange(n_chunks, schedule="static", num_threads=n_threads):
            lo = k * _CHUNK
            hi = min(lo + _CHUNK, m)
            for f in range(D):
                phi_slots[k, f] = 0.0
            for q in range(lo, hi):
                i = idx[q]
                yi = y[i]
                off = yi * P if class_parts else 0
                for r in range(R):
                    p = z[q, r]
                    xr = &X[i, r, 0]
                    slot = &phi_slots[k, (off + p) * d]
                    for f in range(d):
                        slot[f] = slot[f] + <double>xr[f]
                    phi_slots[k, Pt * d + yi * P + p] = phi_slots[k, Pt * d + yi * P + p] + 1.0


# -- greedy single-region moves under a cost budget (the Potts bias's local search) ------------
#
# A move gives one region a label of one of its 4 neighbours. Its priority key is
# (category, k1, k2, cell): category 0 lowers the Potts energy without raising the cost
# (k1 = dE, k2 = dc), category 1 keeps the energy and lowers the cost (k1 = dc), category 2
# lowers the energy at a cost (mode 0: k1 = cost per unit of energy saved; mode 1: k1 = the
# cost, the cheapest first; k2 = dE). Moves are taken from a
# binary heap, smallest key first, while their cost fits the slack; after a move the region
# and its neighbours are re-evaluated (stale heap entries are recognised by a version
# number). Each move lowers (energy, cost) lexicographically, so the search ends.
# Sequential and deterministic (the cell index breaks ties).
cdef struct Move:
    int cat
    double k1
    double k2
    Py_ssize_t cell          # i * R + r: Py_ssize_t, so n * R may exceed 2^31
    int version
    int label
    double dc


cdef struct Heap:
    Move* data
    Py_ssize_t size
    Py_ssize_t cap


cdef inline bint _before(Move* a, Move* b) noexcept nogil:
    if a.cat != b.cat:
        return a.cat < b.cat
    if a.k1 != b.k1:
        return a.k1 < b.k1
    if a.k2 != b.k2:
        return a.k2 < b.k2
    return a.cell < b.cell


cdef int _push(Heap* h, Move m) noexcept nogil:
    cdef Py_ssize_t i, p
    cdef Move* grown
    cdef Move tmp
    if h.size == h.cap:
        grown = <Move*>realloc(h.data, 2 * h.cap * sizeof(Move))
        if grown == NULL:
            return -1
        h.data = grown
        h.cap = 2 * h.cap
    i = h.size
    h.data[i] = m
    h.size += 1
    while i > 0:
        p = (i - 1) // 2
        if _before(&h.data[i], &h.data[p]):
            tmp = h.data[i]
            h.data[i] = h.data[p]
            h.data[p] = tmp
            i = p
        else:
            break
    return 0


cdef Move _pop(Heap* h) noexcept nogil:
    cdef Move top = h.data[0]
    cdef Move tmp
    cdef Py_ssize_t i = 0, l, r, s
    h.size -= 1
    h.data[0] = h.data[h.size]
    while True:
        l = 2 * i + 1
        r = l + 1
        s = i
        if l < h.size and _before(&h.data[l], &h.data[s]):
            s = l
        if r < h.size and _before(&h.data[r], &h.data[s]):
            s = r
        if s == i:
            break
        tmp = h.data[i]
        h.data[i] = h.data[s]
        h.data[s] = tmp
        i = s
    return top


cdef inline int _nbrs(int r, int H, int W, int* out) noexcept nogil:
    """Neighbours of region r (up, down, left, right) in out; returns their number."""
    cdef int i = r // W, j = r % W, k = 0
    if i > 0:
        out[k] = r - W
        k += 1
    if i < H - 1:
        out[k] = r + W
        k += 1
    if j > 0:
        out[k] = r - 1
        k += 1
    if j < W - 1:
        out[k] = r + 1
        k += 1
    return k


cdef inline bint _best_move(const double* c, const int* zi, int r, int H, int W, Py_ssize_t cell,
                            int version, Py_ssize_t tabu_cell, int tabu_label, int mode,
                            Move* out) noexcept nogil:
    """The best move of region r of one image (labels zi, costs c (R, L)); False if none."""
    cdef int nb[4]
    cdef int k = _nbrs(r, H, W, nb), a, b, cur = zi[r], lab, dis_cur = 0, dE, cat
    cdef bint found = False, seen
    cdef double dc, k1, k2
    cdef Move m
    for a in range(k):
        if zi[nb[a]] != cur:
            dis_cur += 1
    for a in range(k):
        lab = zi[nb[a]]
        if lab == cur or (cell == tabu_cell and lab == tabu_label):
            continue
        seen = False
        for b in range(a):
            if zi[nb[b]] == lab:
                seen = True
        if seen:
            continue
        dE = -dis_cur
        for b in range(k):
            if zi[nb[b]] != lab:
                dE += 1
        dc = c[lab] - c[cur]
        if dE < 0 and dc <= 0:
            cat = 0
            k1 = dE
            k2 = dc
        elif dE == 0 and dc < 0:
            cat = 1
            k1 = dc
            k2 = 0.0
        elif dE < 0:
            cat = 2
            k1 = dc / (-dE) if mode == 0 else dc
            k2 = dE
        else:
            continue
        m.cat = cat
        m.k1 = k1
        m.k2 = k2
        m.cell = cell
        m.version = version
        m.label = lab
        m.dc = dc
        if not found or _before(&m, out):
            out[0] = m
            found = True
    return found


def greedy_moves(const double[:, :, ::1] costs, int[:, ::1] z, double slack, int H, int W,
                 Py_ssize_t tabu_cell=-1, int tabu_label=-1, int mode=0):
    """Greedy single-region moves on the labelings z (n, R) in place; returns the slack left.

    ``costs`` (n, R, L). The move (tabu_cell = i * R + r, tabu_label) is never made.
    ``mode`` orders the moves that cost: 0 by cost per unit of energy saved, 1 cheapest first.
    """
    cdef Py_ssize_t n = z.shape[0], R = z.shape[1], L = costs.shape[2]
    cdef Py_ssize_t i, q, cell
    cdef int r, k, a
    cdef int nb[5]           # 4 neighbours and the region itself
    cdef int* version = <int*>calloc(n * R, sizeof(int))
    cdef Heap h
    cdef Move m, top
    cdef int failed = 0
    # checked here, before any unchecked indexing: the grid, the shapes and the labels
    if costs.shape[0] != n or costs.shape[1] != R or H < 1 or W < 1 or <Py_ssize_t>H * W != R:
        raise ValueError(f"greedy_moves: costs {tuple(costs.shape)[:3]} and z {(n, R)} must "
                         f"agree, and the grid {H} x {W} must have R = {R} regions.")
    if n * R and (np.min(z) < 0 or np.max(z) >= L):
        raise ValueError(f"greedy_moves: labels must lie in [0, {L}).")
    h.cap = n * R + 16
    h.size = 0
    h.data = <Move*>malloc(h.cap * sizeof(Move))
    if version == NULL or h.data == NULL:
        free(version)
        free(h.data)
        raise MemoryError()
    with nogil:
        for i in range(n):
            for r in range(R):
                cell = i * R + r
                if _best_move(&costs[i, r, 0], &z[i, 0], r, H, W, cell, 0, tabu_cell,
                              tabu_label, mode, &m):
                    if _push(&h, m) != 0:
                        failed = 1
        while h.size > 0 and not failed:
            top = _pop(&h)
            if top.version != version[top.cell] or top.dc > slack:
                continue
            i = top.cell // R
            r = <int>(top.cell % R)
            z[i, r] = top.label
            slack = slack - top.dc
            version[top.cell] += 1
            k = _nbrs(r, H, W, nb)
            nb[k] = r
            for a in range(k + 1):
                cell = i * R + nb[a]
                if a < k:
                    version[cell] += 1
                if _best_move(&costs[i, nb[a], 0], &z[i, 0], nb[a], H, W, cell,
                              version[cell], tabu_cell, tabu_label, mode, &m):
                    if _push(&h, m) != 0:
                        failed = 1
                        break
    free(version)
    free(h.data)
    if failed:
        raise MemoryError()
    return slack
