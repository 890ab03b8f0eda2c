# Kernels of the built-in latent multiclass model (paper section 5.2).
#
# An example x_i is an array of L candidate feature vectors x_i[z] (z < n_options[i],
# padded to L); phi(x, y, z) puts x[z] in the y-th of C blocks, so with
# w = (w_1..w_C) stored as W (C, d) the score is w.phi(x, y, z) = W[y] . x[z].
#
# Rules, chosen so that results never depend on the thread count:
# - examples are addressed through an index array `idx` (so a fold or a subset
#   is scored without copying X); position r of idx is processed on its own;
# - sums of feature vectors are accumulated per chunk of CHUNK positions
#   (sequentially inside the chunk) into that chunk's slot; the caller reduces
#   the slots in a fixed order;
# - scores are accumulated in double precision: in a pass by BLAS dgemm per block
#   of examples; in the one-example-at-a-time epochs (BCFW, DCD) by dgemm when the
#   candidates are many (the caller decides from the shapes), else by a loop
#   vectorised over classes. One pass gives every number the G-MM family
#   compares (H, the latent table), so they are consistent with each other.
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t
from libc.math cimport INFINITY

from ._common cimport floating
# The latent-SVM kernels (_lssvm.pyx, _regions.pyx) start alike: the same imports and chunk constants.
from ._gemm cimport block_rows_dot, rows_dot

CHUNK = 64
cdef Py_ssize_t _CHUNK = 64
#: Examples per dgemm of candidate scores (the BLAS path); CHUNK is a multiple.
cdef Py_ssize_t _BLOCK = 8


cdef inline double _dot(const floating* x, const double* wc, Py_ssize_t d) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t f
    for f in range(d):
        s = s + <double>x[f] * wc[f]
    return s


cdef inline void _dots(const floating* x, const double* WT, Py_ssize_t d, Py_ssize_t C,
                       double* acc) noexcept nogil:
    """acc[c] = sum_f x[f] WT[f, c], each sum sequential in f (as `_dot`); vectorises over c.

    Zero features are skipped (sparse rows such as digit images): the sums are the same.
    """
    cdef Py_ssize_t f, c
    cdef double xf
    cdef const double* row
    for c in range(C):
        acc[c] = 0.0
    for f in range(d):
        if x[f] == 0:
            continue
        xf = <double>x[f]
        row = WT + f * C
        for c in range(C):
            acc[c] = acc[c] + xf * row[c]


cdef inline void _scores(const floating* x, Py_ssize_t L, Py_ssize_t d, const double* WT,
                         Py_ssize_t C, bint use_gemm, double* xbuf, double* S) noexcept nogil:
    """S (L, C) row-major = x (L, d) WT (d, C): by BLAS dgemm, or by `_dots` per candidate."""
    cdef Py_ssize_t z
    if use_gemm:
        rows_dot(x, L, d, WT, C, xbuf, S)
    else:
        for z in range(L):
            _dots(x + z * d, WT, d, C, S + z * C)


cdef inline Py_ssize_t _argmax_augmented(const double* S, Py_ssize_t nz, Py_ssize_t C,
                                         const double* lrow) noexcept nogil:
    """The flat index z C + c of max_{z < nz, c} S[z, c] + lrow[c], the first in the order
    (z, c). Returned rather than written through pointers: inside a prange the caller's
    variables must be assigned directly to be thread-private."""
    cdef Py_ssize_t z, c, k = 0
    cdef double v, best = -INFINITY
    for z in range(nz):
        for c in range(C):
            v = S[z * C + c] + lrow[c]
            if v > best:
                best = v
                k = z * C + c
    return k


def augmented_pass(const floating[:, :, ::1] X, const int[::1] n_options, const int[::1] y,
                   const int64_t[::1] idx, const double[:, ::1] WT, const double[:, ::1] loss,
                   double[::1] H, int[::1] y_hat, int[::1] z_hat, double[:, ::1] table,
                   double[:, :, ::1] phi_slots, double[::1] loss_slots, int n_threads):
    """Loss-augmented inference for the examples idx[r], r < m.

    For each r (i = idx[r]): H[r] = max_{c, z} W[c] . x_i[z] + loss[y_i, c], reached
    first (in the order z, then c) at (y_hat[r], z_hat[r]). If ``table`` has m rows,
    table[r, z] = W[y_i] . x_i[z] (the latent scores of the true class; -inf for
    z >= n_options[i]). If ``phi_slots`` has rows, chunk q of positions adds
    x_i[z_hat] to phi_slots[q, y_hat] and loss[y_i, y_hat] to loss_slots[q].
    With a zero ``loss`` this is plain inference. WT is W transposed, (d, C).
    The scores come from one BLAS dgemm per block of _BLOCK examples (padded
    candidates are scored too), faster at every shape measured than a loop per
    example.
    """
    cdef Py_ssize_t m = idx.shape[0], L = X.shape[1], d = X.shape[2], C = WT.shape[1]
    cdef Py_ssize_t n_chunks = (m + _CHUNK - 1) // _CHUNK
    cdef bint want_table = table.shape[0] == m and m > 0
    cdef bint want_phi = phi_slots.shape[0] > 0
    cdef Py_ssize_t q, r, z, f, lo, hi, nz, k
    cdef int64_t i
    cdef int yi, by, bz
    cdef double best
    cdef Py_ssize_t b
    cdef double* S
    cdef double* Sr
    cdef double* xbuf
    cdef double* slot
    cdef const double* lrow
    cdef const floating* xz
    if m == 0:
        return
    with nogil, parallel(num_threads=n_threads):
        S = <double*>malloc(_BLOCK * L * C * sizeof(double))
        xbuf = <double*>malloc(_BLOCK * L * d * sizeof(double))
        for q in prange(n_chunks, schedule="static"):
            lo = q * _CHUNK
            hi = min(lo + _CHUNK, m)
            if want_phi:
                slot = &phi_slots[q, 0, 0]
                for f in range(C * d):
                    slot[f] = 0.0
                loss_slots[q] = 0.0
            for r in range(lo, hi):
                i = idx[r]
                yi = y[i]
                nz = n_options[i]
                b = (r - lo) % _BLOCK
                if b == 0:         # the scores of the next block of examples, one dgemm
                    block_rows_dot(X, idx, r, min(_BLOCK, hi - r), &WT[0, 0], C, xbuf, S)
                Sr = S + b * L * C
                lrow = &loss[yi, 0]
                k = _argmax_augmented(Sr, nz, C, lrow)
                by = <int>(k % C)
                bz = <int>(k // C)
                best = Sr[k] + lrow[by]
                if want_table:
                    for z in range(nz):
                        table[r, z] = Sr[z * C + yi]
                    for z in range(nz, L):
                        table[r, z] = -INFINITY
                H[r] = best
                y_hat[r] = by
                z_hat[r] = bz
                if want_phi:
                    xz = &X[i, bz, 0]
                    slot = &phi_slots[q, by, 0]
                    for f in range(d):
                        slot[f] = slot[f] + <double>xz[f]
                    loss_slots[q] = loss_slots[q] + lrow[by]
        free(S)
        free(xbuf)


def latent_table(const floating[:, :, ::1] X, const int[::1] n_options, const int[::1] y,
                 const int64_t[::1] idx, const double[:, ::1] W, double[:, ::1] table,
                 int n_threads):
    """table[r, z] = W[y_i] . x_i[z] for i = idx[r] and z < n_options[i]; -inf beyond."""
    cdef Py_ssize_t m = idx.shape[0], L = X.shape[1], d = X.shape[2]
    cdef Py_ssize_t r, z
    cdef int64_t i
    if m == 0:
        return
    with nogil:
        for r in prange(m, schedule="static", num_threads=n_threads):
            i = idx[r]
            for z in range(L):
                if z < n_options[i]:
                    table[r, z] = _dot(&X[i, z, 0], &W[y[i], 0], d)
                else:
                    table[r, z] = -INFINITY


def phi_accumulate(const floating[:, :, ::1] X, const int[::1] y, const int[::1] z,
                   const int64_t[::1] idx, double[:, :, ::1] phi_slots, int n_threads):
    """phi_slots[q, y_i] = sum of x_i[z_i] over the chunk q of positions (i = idx[r])."""
    cdef Py_ssize_t m = idx.shape[0], d = X.shape[2], C = phi_slots.shape[1]
    cdef Py_ssize_t n_chunks = (m + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t q, r, f, lo, hi
    cdef int64_t i
    cdef double* slot
    cdef const floating* xz
    if m == 0:
        return
    with nogil:
        for q in prange(n_chunks, schedule="static", num_threads=n_threads):
            lo = q * _CHUNK
            hi = min(lo + _CHUNK, m)
            slot = &phi_slots[q, 0, 0]
            for f in range(C * d):
                slot[f] = 0.0
            for r in range(lo, hi):
                i = idx[r]
                xz = &X[i, z[r], 0]
                slot = &phi_slots[q, y[i], 0]
                for f in range(d):
                    slot[f] = slot[f] + <double>xz[f]


cdef inline double _violation(const double* g, const double* a, Py_ssize_t K, Py_ssize_t* up,
                              Py_ssize_t* down) noexcept nogil:
    """max_k g_k - min_{a_k > 0} g_k, the KKT violation of max over the simplex; ``up`` gets
    the argmax, ``down`` the argmin over the support (-1 if a has none). For sequential
    callers only (written through pointers, see `_argmax_augmented`)."""
    cdef Py_ssize_t k
    cdef double gmax = -INFINITY, gmin = INFINITY
    up[0] = 0
    down[0] = -1
    for k in range(K):
        if g[k] > gmax:
            gmax = g[k]
            up[0] = k
        if a[k] > 0.0 and g[k] < gmin:
            gmin = g[k]
            down[0] = k
    return gmax - gmin


cdef inline double _fw_gap(const double* g, const double* a, Py_ssize_t K, Py_ssize_t* up,
                           double* gmin_support) noexcept nogil:
    """max_k g_k - a.g, the Frank-Wolfe gap of max over the simplex: it bounds max D - D(a)
    (D is concave). ``up`` gets the argmax, ``gmin_support`` min_{a_k > 0} g_k (+inf if a has
    no support). For sequential callers only (written through pointers, see
    `_argmax_augmented`)."""
    cdef Py_ssize_t k
    cdef double gmax = -INFINITY, gmin = INFINITY, ag = 0.0
    up[0] = 0
    for k in range(K):
        if g[k] > gmax:
            gmax = g[k]
            up[0] = k
        if a[k] > 0.0:
            ag = ag + a[k] * g[k]
            if g[k] < gmin:
                gmin = g[k]
    gmin_support[0] = gmin
    return gmax - ag


cdef inline double _move_mass(double* a, Py_ssize_t i, Py_ssize_t j, double newton) noexcept nogil:
    """Move t = min(newton, a[j]) of mass from coordinate j to i (the pairwise step of SMO
    with its exact line-search length ``newton``); returns t (nothing moves when t <= 0)."""
    cdef double t = a[j]
    if newton < t:
        t = newton
    if t <= 0.0:
        return 0.0
    a[i] = a[i] + t
    if t == a[j]:
        a[j] = 0.0
    else:
        a[j] = a[j] - t
    return t


def simplex_qp(const double[:, ::1] G, const double[::1] b, double lam, double[::1] alpha,
               double tol, Py_ssize_t max_iter):
    """Maximise D(a) = b.a - a'Ga / (2 lam) over the simplex (a >= 0, sum a = 1), from ``alpha``.

    Sequential minimal optimisation: each step moves mass to the coordinate of
    highest gradient i from the support coordinate j of largest exact gain
    (second-order working-set selection), by the exact line search clipped at
    alpha[j]. Stops when the Frank-Wolfe gap max_k g_k - alpha.g <= tol (g = b - G a / lam),
    which bounds the gap of the QP: max D - D(alpha) <= max_k g_k - alpha.g. ``alpha`` is
    updated in place; returns the number of steps and the final Frank-Wolfe gap.
    The caller validates the shapes: G (K, K), b and alpha (K,), alpha on the simplex.
    """
    cdef Py_ssize_t K = b.shape[0]
    cdef Py_ssize_t it = 0, k, i, j
    cdef double gi, gmin, curv, t, gain, best_gain, fw = INFINITY
    cdef double* g = <double*>malloc(K * sizeof(double))
    cdef double s
    if g == NULL:
        raise MemoryError()
    with nogil:
        for k in range(K):
            s = 0.0
            for i in range(K):
                s = s + G[k, i] * alpha[i]
            g[k] = b[k] - s / lam
        while it < max_iter:
            fw = _fw_gap(g, &alpha[0], K, &i, &gmin)
            gi = g[i]
            if fw <= tol or not gi > gmin:
                break
            # second-order choice of j (Fan, Chen, Lin 2005): the largest exact gain
            j = -1
            best_gain = -1.0
            for k in range(K):
                if alpha[k] > 0.0 and g[k] < gi:
                    curv = G[i, i] + G[k, k] - 2.0 * G[i, k]
                    if curv <= 1e-300:
                        gain = INFINITY
                    else:
                        gain = (gi - g[k]) * (gi - g[k]) / curv
                    if gain > best_gain:
                        best_gain = gain
                        j = k
            if j < 0 or i == j:
                break
            curv = G[i, i] + G[j, j] - 2.0 * G[i, j]
            t = _move_mass(&alpha[0], i, j, lam * (gi - g[j]) / curv if curv > 0.0 else INFINITY)
            if t <= 0.0:
                break
            for k in range(K):
                g[k] = g[k] - t * (G[k, i] - G[k, j]) / lam
            it += 1
    free(g)
    return it, fw


def bcfw_epoch(const floating[:, :, ::1] X, const int[::1] n_options, const int[::1] y,
               const int64_t[::1] idx, const int64_t[::1] order, const double[:, ::1] loss,
               double[:, ::1] W, double[:, :, ::1] P, double[::1] ell, double lam,
               bint use_gemm):
    """One pass of block-coordinate Frank-Wolfe (Lacoste-Julien et al. 2013) over ``order``.

    The dual state of example r (i = idx[r]) is P[r] = sum_k alpha_k phi(x_i, y_k, z_k)
    (a convex combination of joint features; shape (C, d)) and ell[r] = sum_k alpha_k
    Delta(y_i, y_k) / m; then w = (Psi(z) - sum_r P[r]) / (lam m) with Psi(z) the sum of
    the fixed latent features. Each step: loss-augmented inference at the current W
    gives the corner (y^, z^); the exact line search moves P[r], ell[r] towards it and
    W by the same amount. Sequential (results depend only on ``order``). Returns the
    sum of the block Frank-Wolfe gaps met during the pass (an estimate of the gap).
    """
    cdef Py_ssize_t m = idx.shape[0], L = X.shape[1], d = X.shape[2], C = W.shape[0]
    cdef Py_ssize_t t, r, c, f, nz, k
    cdef int64_t i
    cdef int yi, by, bz
    cdef double best, pw, pp, px, xx, num, den, gamma, lhat, dd, s, gap_sum = 0.0
    cdef double inv_lm = 1.0 / (lam * m)
    cdef const floating* xz
    cdef double* Pr
    cdef double* S = <double*>malloc(L * C * sizeof(double))
    cdef double* xbuf = <double*>malloc(L * d * sizeof(double))
    cdef double* WT = <double*>malloc(d * C * sizeof(double))
    with nogil:
        for t in range(order.shape[0]):
            r = order[t]
            i = idx[r]
            yi = y[i]
            nz = n_options[i]
            for c in range(C):                       # W may have moved: refresh W^T
                for f in range(d):
                    WT[f * C + c] = W[c, f]
            _scores(&X[i, 0, 0], nz, d, WT, C, use_gemm, xbuf, S)
            k = _argmax_augmented(S, nz, C, &loss[yi, 0])
            by = <int>(k % C)
            bz = <int>(k // C)
            best = S[k] + loss[yi, by]
            xz = &X[i, bz, 0]
            Pr = &P[r, 0, 0]
            pw = 0.0
            pp = 0.0
            for f in range(C * d):
                pw = pw + Pr[f] * (&W[0, 0])[f]
                pp = pp + Pr[f] * Pr[f]
            px = 0.0
            xx = 0.0
            for f in range(d):
                px = px + Pr[by * d + f] * <double>xz[f]
                xx = xx + <double>xz[f] * <double>xz[f]
            lhat = loss[yi, by] / m
            # diff = phi^ - P[r]; (w_i - w_s) = diff / (lam m)
            num = (S[bz * C + by] - pw) / m - ell[r] + lhat
            dd = pp - 2.0 * px + xx                  # ||diff||^2
            den = dd / (lam * m * m)
            if num > 0.0:
                gap_sum = gap_sum + num
            if den <= 0.0:
                continue
            gamma = num / den
            if gamma <= 0.0:
                continue
            if gamma > 1.0:
                gamma = 1.0
            # W -= gamma diff / (lam m); P[r] += gamma diff
            s = gamma * inv_lm
            for f in range(C * d):
                (&W[0, 0])[f] = (&W[0, 0])[f] + s * Pr[f]
                Pr[f] = (1.0 - gamma) * Pr[f]
            for f in range(d):
                W[by, f] = W[by, f] - s * <double>xz[f]
                Pr[by * d + f] = Pr[by * d + f] + gamma * <double>xz[f]
            ell[r] = (1.0 - gamma) * ell[r] + gamma * lhat
    free(S)
    free(xbuf)
    free(WT)
    return gap_sum


cdef inline Py_ssize_t _ws_find_or_add(int* wy, int* wz, double* wa, int* wn, Py_ssize_t cap,
                                       int yc, int zc, int keep_y, int keep_z) noexcept nogil:
    """Index of labelling (yc, zc) in one example's working set, adding it if absent.

    A full set replaces a member without dual mass (never (keep_y, keep_z));
    returns -1 when every member carries mass.
    """
    cdef Py_ssize_t k, n = wn[0]
    for k in range(n):
        if wy[k] == yc and wz[k] == zc:
            return k
    if n < cap:
        wy[n] = yc
        wz[n] = zc
        wa[n] = 0.0
        wn[0] = <int>(n + 1)
        return n
    for k in range(n):
        if wa[k] == 0.0 and not (wy[k] == keep_y and wz[k] == keep_z):
            wy[k] = yc
            wz[k] = zc
            return k
    return -1


cdef inline double _kernel(const floating* x, Py_ssize_t d, double* norms, int ya, int za,
                           int yb, int zb) noexcept nogil:
    """phi(x, ya, za) . phi(x, yb, zb) = [ya == yb] x[za] . x[zb]; norms caches x[z] . x[z] (< 0: unknown)."""
    cdef double s = 0.0
    cdef Py_ssize_t f
    cdef const floating* xa
    cdef const floating* xb
    if ya != yb:
        return 0.0
    if za == zb and norms[za] >= 0.0:
        return norms[za]
    xa = x + za * d
    xb = x + zb * d
    for f in range(d):
        s = s + <double>xa[f] * <double>xb[f]
    if za == zb:
        norms[za] = s
    return s


def dcd_epoch(const floating[:, :, ::1] X, const int[::1] n_options, const int[::1] y,
              const int64_t[::1] idx, const int[::1] z, const int64_t[::1] order,
              const double[:, ::1] loss, double[:, ::1] W, int[:, ::1] ws_y, int[:, ::1] ws_z,
              double[:, ::1] ws_a, int[::1] ws_n, double[::1] block_gap, double lam,
              Py_ssize_t max_inner, bint use_gemm):
    """One pass of dual coordinate ascent over per-example working sets, in ``order``.

    The n-slack dual of a bound: example r (i = idx[r]) has a distribution
    alpha_r over labellings (y', z'), kept as a working set (ws_y, ws_z, ws_a)[r, :ws_n[r]];
    w = (Psi(z) - sum_r sum_k alpha_rk phi(x_i, y'_k, z'_k)) / (lam m). A visit scores all
    labellings at the current W (see `_scores`), adds the loss-augmented argmax, the
    example's own labelling (y_i, z[r]) and, while there is room, every labelling
    whose gradient exceeds the lowest on the support to the set, then raises the dual over
    the set's alpha with the other examples fixed, by pairwise (SMO) steps with exact line
    search on the gradient g_k = w.phi_k + Delta(y_i, y'_k) (scaled by 1/m), until the
    largest violation is 0 or ``max_inner`` steps (the steps converge to the exact
    sub-problem solution; a few per visit are cheaper overall, as measured on the
    Crammer-Singer check); W moves by the net change. With one candidate per example
    this is the sequential dual method of Keerthi et al. (2008) for the Crammer-Singer SVM.
    Sequential: results depend only on ``order``. block_gap[r] is set, for the visited
    r, to the block duality gap (H_r - sum_k alpha_rk g_k) / m met before the step (0 when
    the example's alpha was already optimal); returns their sum, an estimate of the
    duality gap.
    """
    cdef Py_ssize_t m = idx.shape[0], L = X.shape[1], d = X.shape[2], C = W.shape[0]
    cdef Py_ssize_t cap = ws_y.shape[1]
    cdef Py_ssize_t t, r, zz, c, f, k, n, u, v, it
    cdef int64_t i
    cdef int yi, zi, by, bz
    cdef double best, val, viol, q, step, gmin, cst = 1.0 / (lam * m), gap_sum = 0.0
    cdef double kuu, kvv, kuv, ag
    cdef const floating* xi
    cdef int* wy
    cdef int* wz
    cdef double* wa
    cdef double* S = <double*>malloc(L * C * sizeof(double))
    cdef double* xbuf = <double*>malloc(L * d * sizeof(double))
    cdef double* g = <double*>malloc(cap * sizeof(double))
    cdef double* a0 = <double*>malloc(cap * sizeof(double))
    cdef double* norms = <double*>malloc(L * sizeof(double))
    cdef double* WT = <double*>malloc(d * C * sizeof(double))   # W transposed, kept in step
    try:
        if S == NULL or xbuf == NULL or g == NULL or a0 == NULL or norms == NULL or WT == NULL:
            raise MemoryError()
        with nogil:
            for c in range(C):
                for f in range(d):
                    WT[f * C + c] = W[c, f]
            for t in range(order.shape[0]):
                r = order[t]
                i = idx[r]
                yi = y[i]
                zi = z[r]
                xi = &X[i, 0, 0]
                _scores(xi, n_options[i], d, WT, C, use_gemm, xbuf, S)
                k = _argmax_augmented(S, n_options[i], C, &loss[yi, 0])
                by = <int>(k % C)
                bz = <int>(k // C)
                best = S[k] + loss[yi, by]
                wy = &ws_y[r, 0]
                wz = &ws_z[r, 0]
                wa = &ws_a[r, 0]
                _ws_find_or_add(wy, wz, wa, &ws_n[r], cap, yi, zi, yi, zi)
                _ws_find_or_add(wy, wz, wa, &ws_n[r], cap, by, bz, yi, zi)
                # every other labelling that violates (scores above the support's lowest
                # gradient) joins while there is room: with few labellings the sub-problem
                # is then over all of them, as in liblinear's Crammer-Singer solver
                gmin = INFINITY
                for k in range(ws_n[r]):
                    if wa[k] > 0.0:
                        val = S[wz[k] * C + wy[k]] + loss[yi, wy[k]]
                        if val < gmin:
                            gmin = val
                for zz in range(n_options[i]):
                    if ws_n[r] >= cap:
                        break
                    for c in range(C):
                        if S[zz * C + c] + loss[yi, c] > gmin:
                            _ws_find_or_add(wy, wz, wa, &ws_n[r], cap, <int>c, <int>zz, yi, zi)
                            if ws_n[r] >= cap:
                                break
                n = ws_n[r]
                for k in range(n):
                    norms[wz[k]] = -1.0
                ag = 0.0
                for k in range(n):
                    g[k] = S[wz[k] * C + wy[k]] + loss[yi, wy[k]]
                    a0[k] = wa[k]
                    ag = ag + wa[k] * g[k]
                block_gap[r] = (best - ag) / m
                gap_sum = gap_sum + block_gap[r]
                for it in range(max_inner):
                    viol = _violation(g, wa, n, &u, &v)
                    if v < 0 or u == v or viol <= 0.0:
                        break
                    kuu = _kernel(xi, d, norms, wy[u], wz[u], wy[u], wz[u])
                    kvv = _kernel(xi, d, norms, wy[v], wz[v], wy[v], wz[v])
                    kuv = _kernel(xi, d, norms, wy[u], wz[u], wy[v], wz[v])
                    q = kuu + kvv - 2.0 * kuv
                    step = _move_mass(wa, u, v, viol / (cst * q) if q > 0.0 else INFINITY)
                    if step <= 0.0:
                        break
                    # g_k -= cst * step * (phi_k . phi_u - phi_k . phi_v)
                    for k in range(n):
                        if wy[k] == wy[u] or wy[k] == wy[v]:
                            g[k] = g[k] - cst * step * (
                                _kernel(xi, d, norms, wy[k], wz[k], wy[u], wz[u])
                                - _kernel(xi, d, norms, wy[k], wz[k], wy[v], wz[v]))
                for k in range(n):
                    step = wa[k] - a0[k]
                    if step != 0.0:
                        step = cst * step
                        c = wy[k]
                        for f in range(d):
                            if xi[wz[k] * d + f] != 0:
                                W[c, f] = W[c, f] - step * <double>xi[wz[k] * d + f]
                                WT[f * C + c] = W[c, f]
    finally:
        free(S)
        free(xbuf)
        free(g)
        free(a0)
        free(norms)
        free(WT)
    return gap_sum


def dcd_state(const floating[:, :, ::1] X, const int[::1] y, const int64_t[::1] idx,
              const double[:, ::1] loss, const int[:, ::1] ws_y, const int[:, ::1] ws_z,
              const double[:, ::1] ws_a, const int[::1] ws_n, double[:, ::1] P):
    """P (C, d) = sum_r sum_k alpha_rk phi(x_i, y'_k, z'_k); returns sum_r sum_k alpha_rk Delta.

    Sequential over r, so the sums do not depend on the thread count.
    """
    cdef Py_ssize_t m = idx.shape[0], d = X.shape[2]
    cdef Py_ssize_t r, k, f
    cdef int64_t i
    cdef double a, ell = 0.0
    cdef const floating* xz
    with nogil:
        for f in range(P.shape[0] * d):
            (&P[0, 0])[f] = 0.0
        for r in range(m):
            i = idx[r]
            for k in range(ws_n[r]):
                a = ws_a[r, k]
                if a == 0.0:
                    continue
                ell = ell + a * loss[y[i], ws_y[r, k]]
                xz = &X[i, ws_z[r, k], 0]
                for f in range(d):
                    P[ws_y[r, k], f] = P[ws_y[r, k], f] + a * <double>xz[f]
    return ell
