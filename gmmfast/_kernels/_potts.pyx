# Potts energy and alpha-expansion on 4-connected H x W grids.
#
# E(z) = sum_p U[p, z_p] + lam * #{neighbouring pairs (p, q) with z_p != z_q}.
#
# Alpha-expansion (Boykov, Veksler, Zabih 2001) solves one binary problem per
# label alpha: every node keeps its label (x_p = 0) or takes alpha (x_p = 1).
# The binary energy is graph-representable (Kolmogorov, Zabih 2004) and solved
# exactly by a minimum s-t cut, here with our own Boykov-Kolmogorov max-flow
# (2004): two search trees grown from the terminals, augment, adopt orphans,
# after a first pass that saturates the paths s -> p -> q -> t.
#
# Layout: node p = row * W + col; arc (p, d) with d in {0: right, 1: down,
# 2: left, 3: up}; the reverse of (p, d) is (nbr(p, d), d ^ 2). Residual arc
# capacities live in rc[4 p + d]; the terminal residual of p is one signed
# number tr[p] (> 0: residual s -> p, < 0: residual p -> t). Cut convention:
# p on the source side means x_p = 0 (keep), sink side means x_p = 1; the arc
# s -> p carries the cost of x_p = 1, p -> t the cost of x_p = 0, and a
# pairwise term w (1 - x_p) x_q is the arc p -> q with capacity w.
#
# Each thread allocates one Work (O(H W) memory) once and reuses it for all
# its images; images are independent and the algorithm is deterministic, so
# results never depend on the thread count. Capacities and energies are in
# double whatever the unary dtype; a move is accepted only if the exactly
# recomputed energy strictly decreases, so the energy never increases even
# under rounding, and the loop terminates.
#
# Node indices are int, and arc 4 p + d must fit: grids have at most MAX_NODES
# nodes (indices into the unary table, p * L + l, are Py_ssize_t).
#
# Ctrl-C: one move on a large grid takes seconds, so the max-flow checks for
# signals as it goes (see _common.pxd). Threads take grids from a shared
# counter; the calling thread (OpenMP thread 0) checks signals every
# _CHECK_SECONDS while it works and, once it runs out of grids, until the
# others finish; every thread watches the shared stop flag.
from cython.parallel cimport prange, parallel, threadid
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t
from posix.unistd cimport usleep

from ._common cimport (floating, check_interrupt, raise_interrupt, monotonic_seconds,
                       flag_get, flag_set, fetch_add)

#: Largest grid (H * W nodes): arc indices 4 p + d must fit in an int.
MAX_NODES = (1 << 29) - 1
cdef Py_ssize_t _MAX_NODES = MAX_NODES
#: Seconds between signal checks, and max-flow steps between looks at the clock.
cdef double _CHECK_SECONDS = 0.02
cdef int64_t _POLL_OPS = 1 << 14

ctypedef fused integral:
    int32_t
    int64_t


cdef enum:
    FREE = 0
    SRC = 1
    SNK = 2
    BLOCKED = 3        # the sentinel node outside the grid
    TERMINAL = 4
    NO_PARENT = -1


cdef struct Work:
    int n              # nodes H * W; node n is a sentinel for "outside the grid"
    double* rc         # 4 (n + 1) residual arc capacities (0 on arcs leaving the grid)
    double* tr         # n + 1 signed terminal residuals
    int* nbr           # 4 n neighbour index, n outside the grid
    signed char* tree  # n + 1: FREE, SRC, SNK; BLOCKED for the sentinel
    signed char* parent  # n: direction to the parent, TERMINAL or NO_PARENT
    char* in_queue     # n: 1 while in the active queue
    int* queue         # n circular active queue
    int* orphans       # n orphan stack
    int* labels        # n current labeling
    int* cand          # n candidate labeling
    int* stop          # shared flag: a signal handler raised, every thread stops
    bint checker       # this thread (the caller's) runs the signal checks
    double next_check  # monotonic seconds of its next check


cdef Work* _work_new(int H, int W, int* stop, bint checker) noexcept nogil:
    """Buffers for one thread; H * W <= MAX_NODES (checked by the caller)."""
    cdef Work* w = <Work*>malloc(sizeof(Work))
    cdef int n = H * W, p, r, c
    cdef size_t nn = <size_t>n
    cdef Py_ssize_t a
    if w == NULL:
        return NULL
    w.n = n
    w.stop = stop
    w.checker = checker
    w.next_check = monotonic_seconds() + _CHECK_SECONDS
    w.rc = <double*>malloc(4 * (nn + 1) * sizeof(double))
    w.tr = <double*>malloc((nn + 1) * sizeof(double))
    w.nbr = <int*>malloc(4 * nn * sizeof(int))
    w.tree = <signed char*>malloc((nn + 1) * sizeof(signed char))
    w.parent = <signed char*>malloc((nn + 1) * sizeof(signed char))
    w.in_queue = <char*>malloc(nn * sizeof(char))
    w.queue = <int*>malloc(nn * sizeof(int))
    w.orphans = <int*>malloc(nn * sizeof(int))
    w.labels = <int*>malloc(nn * sizeof(int))
    w.cand = <int*>malloc(nn * sizeof(int))
    if (w.rc == NULL or w.tr == NULL or w.nbr == NULL or w.tree == NULL or w.parent == NULL
            or w.in_queue == NULL or w.queue == NULL or w.orphans == NULL or w.labels == NULL
            or w.cand == NULL):
        _work_free(w)
        return NULL
    for r in range(H):
        for c in range(W):
            p = r * W + c
            w.nbr[4 * p + 0] = p + 1 if c + 1 < W else n
            w.nbr[4 * p + 1] = p + W if r + 1 < H else n
            w.nbr[4 * p + 2] = p - 1 if c > 0 else n
            w.nbr[4 * p + 3] = p - W if r > 0 else n
    for a in range(4 * (<Py_ssize_t>n + 1)):
        w.rc[a] = 0.0
    w.tr[n] = 0.0
    w.tree[n] = BLOCKED
    w.parent[n] = NO_PARENT
    return w


cdef void _work_free(Work* w) noexcept nogil:
    if w == NULL:
        return
    free(w.rc)
    free(w.tr)
    free(w.nbr)
    free(w.tree)
    free(w.parent)
    free(w.in_queue)
    free(w.queue)
    free(w.orphans)
    free(w.labels)
    free(w.cand)
    free(w)


cdef bint _stopped(Work* w) noexcept nogil:
    """True once any thread saw a signal handler raise; the checker thread checks signals
    here every _CHECK_SECONDS (call it every _POLL_OPS steps of work or so)."""
    cdef double now
    if flag_get(w.stop):
        return True
    if w.checker:
        now = monotonic_seconds()
        if now >= w.next_check:
            w.next_check = now + _CHECK_SECONDS
            if check_interrupt():
                flag_set(w.stop)
                return True
    return False


cdef bint _maxflow(Work* w) noexcept nogil:
    """Boykov-Kolmogorov max-flow on the residual graph (w.rc, w.tr), in place.

    On return w.tree[p] == SRC exactly for the nodes reachable from the source
    in the residual graph: the source side of a minimum cut. Returns True if
    stopped early by a signal (see _stopped): the cut is then meaningless.
    """
    cdef int n = w.n
    cdef double* rc = w.rc
    cdef double* tr = w.tr
    cdef int* nbr = w.nbr
    cdef signed char* tree = w.tree
    cdef signed char* parent = w.parent
    cdef char* in_queue = w.in_queue
    cdef int* queue = w.queue
    cdef int* orphans = w.orphans
    cdef int j
    cdef int head = 0, count = 0, n_orph = 0
    cdef int p, q, d, a, ad, b, x, y, pd, t, k, newp, fp = 0, fd = 0
    cdef bint found
    cdef double cap, f
    cdef int64_t ops = 0, next_poll = _POLL_OPS

    # Saturate the paths s -> p -> q -> t first: on grids they carry most of
    # the flow and need no search trees.
    for p in range(n):
        if tr[p] <= 0:
            continue
        for d in range(4):
            q = nbr[4 * p + d]
            if tr[q] >= 0 or rc[4 * p + d] <= 0:  # also skips the sentinel
                continue
            f = tr[p]
            if rc[4 * p + d] < f:
                f = rc[4 * p + d]
            if -tr[q] < f:
                f = -tr[q]
            tr[p] -= f
            tr[q] += f
            rc[4 * p + d] -= f
            rc[4 * q + (d ^ 2)] += f
            if tr[p] <= 0:
                tr[p] = 0
                break
            if tr[q] >= 0:
                tr[q] = 0
            if rc[4 * p + d] <= 0:
                rc[4 * p + d] = 0

    for p in range(n):
        in_queue[p] = 0
        if tr[p] > 0:
            tree[p] = SRC
            parent[p] = TERMINAL
        elif tr[p] < 0:
            tree[p] = SNK
            parent[p] = TERMINAL
        else:
            tree[p] = FREE
            parent[p] = NO_PARENT
            continue
        queue[count] = p
        count += 1
        in_queue[p] = 1

    while True:
        # Growth: expand active nodes until the trees touch.
        found = False
        while count > 0:
            ops += 1
            if ops >= next_poll:
                next_poll = ops + _POLL_OPS
                if _stopped(w):
                    return True
            p = queue[head]
            t = tree[p]
            # Kernel twin, kept for speed: the source and sink trees grow by mirrored loops (the sink tree along reversed arcs); an inline helper would cost the innermost loop of the max-flow.
            if t == SRC:
                for d in range(4):
                    if rc[4 * p + d] <= 0:
                        continue
                    q = nbr[4 * p + d]
                    if tree[q] == FREE:
                        tree[q] = SRC
                        parent[q] = d ^ 2
                        if not in_queue[q]:
                            k = head + count
                            queue[k - n if k >= n else k] = q
                            count += 1
                            in_queue[q] = 1
                    elif tree[q] == SNK:
                        found = True
                        fp = p
                        fd = d
                        break
            elif t == SNK:
                for d in range(4):
                    q = nbr[4 * p + d]
                    if rc[4 * q + (d ^ 2)] <= 0:
                        continue
                    if tree[q] == FREE:
                        tree[q] = SNK
                        parent[q] = d ^ 2
                        if not in_queue[q]:
                            k = head + count
                            queue[k - n if k >= n else k] = q
                            count += 1
                            in_queue[q] = 1
                    elif tree[q] == SRC:
                        found = True
                        fp = p
                        fd = d
                        break
            if found:
                break  # p stays active: it may have more paths
            in_queue[p] = 0
            head += 1
            if head == n:
                head = 0
            count -= 1
        if not found:
            return False

        # The bridging arc a -> b, a in the source tree, b in the sink tree.
        if tree[fp] == SRC:
            a = fp
            ad = fd
        else:
            a = nbr[4 * fp + fd]
            ad = fd ^ 2
        b = nbr[4 * a + ad]

        # Bottleneck along s -> ... -> a -> b -> ... -> t.
        f = rc[4 * a + ad]
        x = a
        while parent[x] != TERMINAL:
            pd = parent[x]
            y = nbr[4 * x + pd]
            cap = rc[4 * y + (pd ^ 2)]
            if cap < f:
                f = cap
            x = y
        if tr[x] < f:
            f = tr[x]
        x = b
        while parent[x] != TERMINAL:
            pd = parent[x]
            cap = rc[4 * x + pd]
            if cap < f:
                f = cap
            x = nbr[4 * x + pd]
        if -tr[x] < f:
            f = -tr[x]

        # Augment; saturated tree arcs make orphans.
        rc[4 * a + ad] -= f
        rc[4 * b + (ad ^ 2)] += f
        x = a
        while parent[x] != TERMINAL:
            pd = parent[x]
            y = nbr[4 * x + pd]
            rc[4 * y + (pd ^ 2)] -= f
            rc[4 * x + pd] += f
            if rc[4 * y + (pd ^ 2)] <= 0:
                rc[4 * y + (pd ^ 2)] = 0
                parent[x] = NO_PARENT
                orphans[n_orph] = x
                n_orph += 1
            x = y
        tr[x] -= f
        if tr[x] <= 0:
            tr[x] = 0
            parent[x] = NO_PARENT
            orphans[n_orph] = x
            n_orph += 1
        x = b
        while parent[x] != TERMINAL:
            pd = parent[x]
            y = nbr[4 * x + pd]
            rc[4 * x + pd] -= f
            rc[4 * y + (pd ^ 2)] += f
            if rc[4 * x + pd] <= 0:
                rc[4 * x + pd] = 0
                parent[x] = NO_PARENT
                orphans[n_orph] = x
                n_orph += 1
            x = y
        tr[x] += f
        if tr[x] >= 0:
            tr[x] = 0
            parent[x] = NO_PARENT
            orphans[n_orph] = x
            n_orph += 1

        # Adoption: give each orphan a parent in its tree whose path reaches
        # the terminal, or free it and orphan its children. (Kolmogorov's
        # distance/time-stamp heuristic was measured slower on 10 x 10 grids.)
        while n_orph > 0:
            ops += 1
            if ops >= next_poll:
                next_poll = ops + _POLL_OPS
                if _stopped(w):
                    return True
            n_orph -= 1
            x = orphans[n_orph]
            t = tree[x]
            newp = -1
            for d in range(4):
                y = nbr[4 * x + d]
                if tree[y] != t or parent[y] == NO_PARENT:
                    continue
                if t == SRC:
                    cap = rc[4 * y + (d ^ 2)]
                else:
                    cap = rc[4 * x + d]
                if cap <= 0:
                    continue
                j = y
                while parent[j] != TERMINAL and parent[j] != NO_PARENT:
                    j = nbr[4 * j + parent[j]]
                    ops += 1
                if parent[j] == TERMINAL:
                    newp = d
                    break
            if newp >= 0:
                parent[x] = newp
                continue
            for d in range(4):
                y = nbr[4 * x + d]
                if tree[y] != t:
                    continue
                if t == SRC:
                    cap = rc[4 * y + (d ^ 2)]
                else:
                    cap = rc[4 * x + d]
                if cap > 0 and not in_queue[y]:
                    k = head + count
                    queue[k - n if k >= n else k] = y
                    count += 1
                    in_queue[y] = 1
                if parent[y] == (d ^ 2):
                    parent[y] = NO_PARENT
                    orphans[n_orph] = y
                    n_orph += 1
            tree[x] = FREE


cdef double _energy(const floating* U, int L, const int* z, int H, int W,
                    double lam) noexcept nogil:
    """sum_p U[p, z_p] + lam * (number of 4-neighbour pairs with different labels)."""
    cdef double s = 0.0
    cdef int64_t cut = 0
    cdef int r, c, p
    for p in range(H * W):
        s = s + <double>U[<Py_ssize_t>p * L + z[p]]
    for r in range(H):
        for c in range(W):
            p = r * W + c
            if c + 1 < W and z[p] != z[p + 1]:
                cut += 1
            if r + 1 < H and z[p] != z[p + W]:
                cut += 1
    return s + lam * <double>cut


cdef void _build_binary(Work* w, const floating* U, int L, double lam) noexcept nogil:
    """The two-label problem itself: x_p = z_p, source side = label 0."""
    cdef int p, d, q
    for p in range(w.n):
        w.tr[p] = <double>U[<Py_ssize_t>p * L + 1] - <double>U[<Py_ssize_t>p * L]
        for d in range(4):
            w.rc[4 * p + d] = lam if w.nbr[4 * p + d] < w.n else 0.0


cdef void _build_expansion(Work* w, const floating* U, int L, int alpha, double lam) noexcept nogil:
    """The alpha-expansion move from w.labels: x_p = 1 means p takes alpha.

    Per node, tr[p] accumulates cost(x_p = 1) - cost(x_p = 0). A pair of free
    nodes with equal labels costs lam [x_p != x_q] (arcs lam both ways); with
    different labels it costs lam (1 - x_p x_q) = lam - lam/2 x_p - lam/2 x_q
    + lam/2 [x_p != x_q]. A pair with one node already at alpha (fixed) adds
    lam to the other's cost of keeping its label.
    """
    cdef int n = w.n, p, q, d, fp, fq
    cdef int* z = w.labels
    cdef double half = 0.5 * lam, c
    for p in range(n):
        fp = z[p]
        w.tr[p] = (0.0 if fp == alpha else <double>U[<Py_ssize_t>p * L + alpha]
                   - <double>U[<Py_ssize_t>p * L + fp])
    for p in range(n):
        fp = z[p]
        for d in range(2):
            q = w.nbr[4 * p + d]
            if q == n:
                continue  # arcs to the sentinel stay at 0 from _work_new
            fq = z[q]
            c = 0.0
            if fp == alpha:
                if fq != alpha:
                    w.tr[q] -= lam
            elif fq == alpha:
                w.tr[p] -= lam
            elif fp == fq:
                c = lam
            else:
                c = half
                w.tr[p] -= half
                w.tr[q] -= half
            w.rc[4 * p + d] = c
            w.rc[4 * q + (d ^ 2)] = c


cdef int _solve(Work* w, const floating* U, int H, int W, int L, double lam,
                bint have_start, int max_moves, double* energy, double* trace) noexcept nogil:
    """Alpha-expansion on one grid from w.labels (or the unary argmin); returns the moves made,
    or -1 if stopped by a signal (see _stopped).

    trace (may be NULL) receives the energy before any move and after each move.
    """
    cdef int n = H * W, p, j, best, alpha = 0, moves = 0, fails = 0, need = L, changed = 1
    cdef double e, e_new, v, bv
    cdef int* tmp
    if not have_start:
        for p in range(n):
            best = 0
            bv = <double>U[<Py_ssize_t>p * L]
            for j in range(1, L):
                v = <double>U[<Py_ssize_t>p * L + j]
                if v < bv:
                    bv = v
                    best = j
            w.labels[p] = best
    e = _energy(U, L, w.labels, H, W, lam)
    if trace != NULL:
        trace[0] = e
    if L == 1 or max_moves == 0 or (lam == 0.0 and not have_start):
        # one label, no moves allowed, or the argmin already optimal
        energy[0] = e
        return 0
    while moves < max_moves:
        if _stopped(w):
            return -1
        if lam == 0.0:
            # The per-node argmin is the exact optimum.
            for p in range(n):
                best = 0
                bv = <double>U[<Py_ssize_t>p * L]
                for j in range(1, L):
                    v = <double>U[<Py_ssize_t>p * L + j]
                    if v < bv:
                        bv = v
                        best = j
                w.cand[p] = best
            fails = need  # one move, then stop
        elif L == 2:
            # One binary cut is the exact optimum.
            _build_binary(w, U, L, lam)
            if _maxflow(w):
                return -1
            for p in range(n):
                w.cand[p] = 0 if w.tree[p] == SRC else 1
            fails = need
        else:
            _build_expansion(w, U, L, alpha, lam)
            if _maxflow(w):
                return -1
            changed = 0
            for p in range(n):
                if w.tree[p] == SRC or w.labels[p] == alpha:
                    w.cand[p] = w.labels[p]
                else:
                    w.cand[p] = alpha
                    changed = 1
        e_new = _energy(U, L, w.cand, H, W, lam) if changed else e
        moves += 1
        if e_new < e:
            e = e_new
            tmp = w.labels
            w.labels = w.cand
            w.cand = tmp
            if fails < need:
                fails = 0
                need = L - 1
        else:
            fails += 1
        if trace != NULL:
            trace[moves] = e
        if fails >= need:
            break
        alpha = alpha + 1
        if alpha == L:
            alpha = 0
    energy[0] = e
    return moves


def alpha_expansion_batch(const floating[:, :, :, ::1] unary, double lam,
                          const int32_t[:, :, ::1] labels0, bint have_start, int max_moves,
                          int32_t[:, :, ::1] labels, double[::1] energy,
                          double[:, ::1] trace, bint record, int n_threads):
    """Alpha-expansion on each of n grids: unary (n, H, W, L) -> labels (n, H, W).

    labels0 is read only if have_start; trace (n, max_moves + 1) is written
    only if record (NaN after the last move). Raises ValueError for a grid of
    more than MAX_NODES nodes, MemoryError if a thread's buffers cannot be
    allocated, KeyboardInterrupt on Ctrl-C (outputs then unfinished).
    """
    cdef Py_ssize_t n = unary.shape[0]
    cdef Py_ssize_t N = unary.shape[1] * unary.shape[2]
    cdef int H = <int>unary.shape[1], W = <int>unary.shape[2], L = <int>unary.shape[3]
    cdef Py_ssize_t i
    cdef int p, moves
    cdef int64_t counters[2]   # [0]: next grid to take, [1]: grids finished
    cdef int flags[2]          # [0]: stop (a signal handler raised), [1]: allocation failed
    cdef Work* w = NULL
    cdef double* tr_row
    if n == 0:
        return
    if N > _MAX_NODES or unary.shape[3] > 2147483647:
        raise ValueError(f"alpha_expansion: grids of at most {MAX_NODES} nodes and 2**31 - 1 "
                         f"labels, got {unary.shape[1]} x {unary.shape[2]} x {unary.shape[3]}.")
    counters[0] = 0
    counters[1] = 0
    flags[0] = 0
    flags[1] = 0
    n_threads = max(1, min(n_threads, n))
    with nogil, parallel(num_threads=n_threads):
        w = _work_new(H, W, &flags[0], threadid() == 0)
        while True:
            i = fetch_add(&counters[0], 1)
            if i >= n:
                break
            if w == NULL:
                flag_set(&flags[1])
            elif not flag_get(&flags[0]):
                if have_start:
                    for p in range(N):
                        w.labels[p] = labels0[i, p // W, p % W]
                tr_row = &trace[i, 0] if record else NULL
                moves = _solve(w, &unary[i, 0, 0, 0], H, W, L, lam, have_start, max_moves,
                               &energy[i], tr_row)
                if moves >= 0:
                    for p in range(N):
                        labels[i, p // W, p % W] = w.labels[p]
            fetch_add(&counters[1], 1)
        if w != NULL and w.checker:
            # only this thread can run signal handlers: keep checking until the others finish
            while fetch_add(&counters[1], 0) < n and not _stopped(w):
                usleep(200)
        _work_free(w)
    if flags[0]:
        raise_interrupt()
    if flags[1]:
        raise MemoryError("alpha_expansion: could not allocate the per-thread buffers.")


def potts_energy_batch(const integral[:, :, ::1] labels, int64_t[::1] out, int n_threads):
    """Number of 4-neighbour pairs with different labels, per grid of labels (n, H, W)."""
    cdef Py_ssize_t n = labels.shape[0], H = labels.shape[1], W = labels.shape[2]
    cdef Py_ssize_t i, r, c
    cdef int64_t cut
    if n == 0:
        return
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            cut = 0
            for r in range(H):
                for c in range(W):
                    if c + 1 < W and labels[i, r, c] != labels[i, r, c + 1]:
                        cut = cut + 1
                    if r + 1 < H and labels[i, r, c] != labels[i, r + 1, c]:
                        cut = cut + 1
            out[i] = cut
