# Faster samplers of valid k-means bounds (assignments z with sum_i c_i(z_i) <= budget).
#
# The paper's walk (in _kmeans.pyx) proposes moving a random point to a
# uniformly drawn other cluster; on data with many clusters almost every
# proposal goes far away and is rejected. Two remedies live here:
#
# - `local_walk`: the same Metropolis walk targeting the uniform distribution
#   on valid assignments, but proposals favour clusters adjacent to the
#   point's current one in a symmetric k-nearest-neighbour graph of the
#   centers (mixed with a uniform proposal of weight eps so every assignment
#   stays reachable). A Metropolis-Hastings factor q(j -> a) / q(a -> j)
#   corrects for the unequal degrees, so the target is unchanged.
# - the Gibbs (maximum-entropy) sampler: each point independently draws a
#   label among candidate clusters with probability proportional to
#   exp(-beta * delta), where delta is the cost above its start label and beta
#   is set so that the expected total cost meets the budget. The caller
#   repairs the rare overshoot so the bound stays valid.
#
# Thread-count independence as in _kmeans.pyx: walks run on blocks of points
# whose boundaries depend on n only, each with its own stream (seed, block);
# the Gibbs sampler draws per chunk of CHUNK points with stream (seed, chunk);
# sums are formed per chunk in a fixed order and combined by the caller.
from cython.parallel cimport prange
from libc.stdint cimport uint64_t, uint32_t, int64_t
from libc.math cimport exp, INFINITY

import numpy as np

from ._common cimport (
    threads_for,
    floating, sqdist, gmm_rng_next, gmm_rng_stream, gmm_rng_bounded, gmm_rng_uniform,
    row_width, narrow_row, wide_row, row_cost, GMM_COST_WIDE_D,
)

CHUNK = 256
cdef Py_ssize_t _CHUNK = 256
# Floating-point operations worth one more thread. Larger than _kmeans.pyx's
# grain: the Gibbs sampler opens several short parallel regions per iteration
# (one per step of the beta solve), and on a loaded machine each region costs
# milliseconds when a team member is descheduled (measured: a 4000-point fit
# took 9.6 s with 2 threads and 0.3 s with 1 at load 3.4 on 2 cores).
cdef double _GRAIN = <double>(1 << 23)
# Rough flops of one exp() in the Gibbs kernels.
cdef double _EXP_COST = 20.0




cdef inline double _row_min(const double* row, Py_ssize_t m) noexcept nogil:
    """min_l row[l] (the shift that keeps exp(-beta (delta - min)) finite)."""
    cdef Py_ssize_t l
    cdef double lo = row[0]
    for l in range(1, m):
        if row[l] < lo:
            lo = row[l]
    return lo


cdef inline bint _adjacent(const int* indices, int lo, int hi, int j) noexcept nogil:
    """True if j is among the sorted indices[lo:hi] (binary search)."""
    cdef int end = hi, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo < end and indices[lo] == j


cdef int64_t _local_block(const floating* X, const floating* sw, const floating* C,
                          const int* indptr, const int* indices, double eps,
                          int* labels, double* costs, Py_ssize_t lo, Py_ssize_t hi,
                          Py_ssize_t d, Py_ssize_t k, double* running, double budget,
                          int64_t n_steps, uint64_t* rng, row_width width) noexcept nogil:
    """Metropolis-Hastings walk over the assignments of points lo..hi-1.

    Proposal: a point i uniformly, then with probability eps a uniformly drawn
    other cluster, else a uniformly drawn neighbour of its cluster a in the
    center graph. q(a -> j) = eps / (k - 1) + (1 - eps) [j ~ a] / deg(a);
    the graph is symmetric, so the move is accepted with probability
    [valid] * min(1, q(j -> a) / q(a -> j)): the uniform distribution on the
    valid assignments of the block is the stationary distribution. `running` (the
    block's cost) and `rng` carry over rounds (see _kmeans.walk_start).
    """
    cdef Py_ssize_t i
    cdef uint32_t nb = <uint32_t>(hi - lo)
    cdef uint32_t km1 = <uint32_t>(k - 1)
    cdef double q_unif = eps / <double>(k - 1)
    cdef uint64_t r, state = rng[0]
    cdef int a, j, da, dj, p0
    cdef bint adj
    cdef double total = running[0], c, nt, q_fwd, q_rev
    cdef int64_t step, accepted = 0
    for step in range(n_steps):
        r = gmm_rng_next(&state)
        i = lo + gmm_rng_bounded(<uint32_t>(r >> 32), nb, &state)
        a = labels[i]
        p0 = indptr[a]
        da = indptr[a + 1] - p0
        if da == 0 or gmm_rng_uniform(&state) < eps:
            j = <int>gmm_rng_bounded(<uint32_t>r, km1, &state)
            if j >= a:
                j = j + 1
            adj = da > 0 and _adjacent(indices, p0, p0 + da, j)
        else:
            j = indices[p0 + <int>gmm_rng_bounded(<uint32_t>r, <uint32_t>da, &state)]
            adj = True
        c = sw[i] * row_cost(X + i * d, C + j * d, d, width)
        nt = total + (c - costs[i])
        if nt > budget:
            continue
        if adj:
            dj = indptr[j + 1] - indptr[j]
            q_fwd = q_unif + (1.0 - eps) / da
            q_rev = q_unif + (1.0 - eps) / dj
            if q_rev < q_fwd and gmm_rng_uniform(&state) * q_fwd >= q_rev:
                continue
# Kernel twin, kept for speed: the accept step of every walk (_kmeans.pyx _walk_block, _latent.pyx).
        labels[i] = j
        costs[i] = c
        total = nt
        accepted += 1
    running[0] = total
    rng[0] = state
    return accepted


def local_walk(const floating[:, ::1] X, const floating[::1] sample_weight,
               const floating[:, ::1] centers, const int[::1] indptr, const int[::1] indices,
               double eps, int[::1] labels, double[::1] costs, Py_ssize_t block_size,
               const int64_t[::1] block_steps, double[::1] block_total,
               const double[::1] block_budget, uint64_t[::1] block_rng,
               int64_t[::1] block_accepted, int n_threads):
    """One round of the Metropolis-Hastings walk with center-graph proposals, one chain per
    block of points (started by _kmeans.walk_start).

    `indptr`/`indices` is the symmetric center graph in CSR form with sorted
    rows. Block b holds points [b * block_size, (b + 1) * block_size) and makes
    `block_steps[b]` proposals. Writes the new `labels`, their per-point
    `costs` and adds the accepted moves to `block_accepted`.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = centers.shape[0]
    cdef Py_ssize_t n_blocks = block_steps.shape[0]
    if sample_weight.shape[0] != n or labels.shape[0] != n or costs.shape[0] != n \
            or centers.shape[1] != d or block_size < 1 or n_blocks != (n + block_size - 1) // block_size \
            or block_total.shape[0] != n_blocks or block_budget.shape[0] != n_blocks \
            or block_rng.shape[0] != n_blocks or block_accepted.shape[0] != n_blocks \
            or indptr.shape[0] != k + 1:
        raise ValueError("local_walk: X, sample_weight, labels, costs, centers, the graph and "
                         "the block arrays disagree")
    if n == 0 or k < 2:
        return
    n_threads = threads_for(n_threads, n_blocks,
                            <double>np.asarray(block_steps).sum() * (d + 4), _GRAIN)
    # The row width is chosen here, outside the parallel loop (see row_width in _common.pxd:
    # inside it, the test would tell the compiler d < 32).
    if d >= GMM_COST_WIDE_D:
        _local_blocks(&X[0, 0], &sample_weight[0], &centers[0, 0], &indptr[0], &indices[0],
                      eps, &labels[0], &costs[0], n, d, k, block_size, n_blocks,
                      &block_steps[0], &block_total[0], &block_budget[0], &block_rng[0],
                      &block_accepted[0], n_threads, <wide_row>0)
    else:
        _local_blocks(&X[0, 0], &sample_weight[0], &centers[0, 0], &indptr[0], &indices[0],
                      eps, &labels[0], &costs[0], n, d, k, block_size, n_blocks,
                      &block_steps[0], &block_total[0], &block_budget[0], &block_rng[0],
                      &block_accepted[0], n_threads, <narrow_row>0)


# Kernel twin, kept for speed: _kmeans.pyx _walk_blocks holds the uniform walk's blocks alike.
cdef void _local_blocks(const floating* X, const floating* sw, const floating* C,
                        const int* indptr, const int* indices, double eps, int* labels,
                        double* costs, Py_ssize_t n, Py_ssize_t d, Py_ssize_t k,
                        Py_ssize_t block_size, Py_ssize_t n_blocks, const int64_t* block_steps,
                        double* block_total, const double* block_budget, uint64_t* block_rng,
                        int64_t* block_accepted, int n_threads, row_width width) noexcept nogil:
    """local_walk's blocks in parallel, one chain each, at one row width."""
    cdef Py_ssize_t b, lo
    for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
        lo = b * block_size
        block_accepted[b] += _local_block(X, sw, C, indptr, indices, eps, labels, costs, lo,
                                          min(lo + block_size, n), d, k, &block_total[b],
                                          block_budget[b], block_steps[b], &block_rng[b],
                                          width)


def candidate_deltas(const floating[:, ::1] X, const floating[::1] sample_weight,
                     const floating[:, ::1] centers, const int[::1] start,
                     const int[::1] indptr, const int[::1] indices,
                     int[:, ::1] cand, double[:, ::1] delta, int n_threads):
    """Candidate clusters of each point and their cost above its start label.

    Candidates of point i: its start label a = start[i] (delta 0) followed by
    the neighbours of a in the center graph; unused slots of a row get
    cand = -1 and delta = +inf.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = cand.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t c, i, i0, i1, l
    cdef int a, p, deg, j
    cdef double c0
    if sample_weight.shape[0] != n or start.shape[0] != n or centers.shape[1] != d \
            or cand.shape[0] != n or delta.shape[0] != n or delta.shape[1] != m:
        raise ValueError("candidate_deltas: X, sample_weight, start, cand and delta disagree")
    n_threads = threads_for(n_threads, n_chunks, <double>n * m * (d + 1), _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            for i in range(i0, i1):
                a = start[i]
                c0 = sample_weight[i] * sqdist(&X[i, 0], &centers[a, 0], d)
                cand[i, 0] = a
                delta[i, 0] = 0.0
                p = indptr[a]
                deg = indptr[a + 1] - p
                for l in range(1, m):
                    if l <= deg:
                        j = indices[p + l - 1]
                        cand[i, l] = j
                        delta[i, l] = sample_weight[i] * sqdist(&X[i, 0], &centers[j, 0], d) - c0
                    else:
                        cand[i, l] = -1
                        delta[i, l] = INFINITY


def gibbs_moments(const double[:, ::1] delta, double beta, double[::1] chunk_mean,
                  double[::1] chunk_var, int n_threads):
    """Per chunk, the sums over points of the mean and variance of delta under exp(-beta delta).

    Row i's distribution is p_il = exp(-beta delta_il) / Z_i over its finite
    entries (delta_i0 = 0 is the start label). Their sums give the expected
    excess cost of a Gibbs draw and its derivative in beta (minus the variance).
    """
    cdef Py_ssize_t n = delta.shape[0], m = delta.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t c, i, i0, i1, l
    cdef double z, s1, s2, e, dl, lo, mean, accm, accv
    n_threads = threads_for(n_threads, n_chunks, <double>n * m * _EXP_COST, _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            accm = 0.0
            accv = 0.0
            for i in range(i0, i1):
                lo = _row_min(&delta[i, 0], m)
# Kernel twin, kept for speed: the Gibbs moments and the Gibbs draw below scan a row's candidates alike.
                z = 0.0
                s1 = 0.0
                s2 = 0.0
                for l in range(m):
                    dl = delta[i, l]
                    if dl == INFINITY:
                        continue
                    e = exp(-beta * (dl - lo))
                    z = z + e
                    s1 = s1 + e * dl
                    s2 = s2 + e * dl * dl
                mean = s1 / z
                accm = accm + mean
                accv = accv + (s2 / z - mean * mean if s2 / z > mean * mean else 0.0)
            chunk_mean[c] = accm
            chunk_var[c] = accv


def gibbs_draw(const int[:, ::1] cand, const double[:, ::1] delta, double beta,
               int[::1] labels, double[::1] drawn_delta, uint64_t seed, int n_threads):
    """Draw each point's label from exp(-beta delta) over its candidates.

    Chunk c of CHUNK points uses the random stream (seed, c), so the draw is
    the same for any thread count.
    """
    cdef Py_ssize_t n = delta.shape[0], m = delta.shape[1]
    cdef Py_ssize_t n_chunks = (n + _CHUNK - 1) // _CHUNK
    cdef Py_ssize_t c, i, i0, i1, l, pick
    cdef double z, u, e, dl, lo, acc
    cdef uint64_t state
    if cand.shape[0] != n or cand.shape[1] != m or labels.shape[0] != n \
            or drawn_delta.shape[0] != n:
        raise ValueError("gibbs_draw: cand, delta, labels and drawn_delta disagree")
    n_threads = threads_for(n_threads, n_chunks, <double>n * m * 2 * _EXP_COST, _GRAIN)
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            i0 = c * _CHUNK
            i1 = min(i0 + _CHUNK, n)
            state = gmm_rng_stream(seed, <uint64_t>c)
            for i in range(i0, i1):
                lo = _row_min(&delta[i, 0], m)
                z = 0.0
                for l in range(m):
                    dl = delta[i, l]
                    if dl != INFINITY:
                        z = z + exp(-beta * (dl - lo))
                u = gmm_rng_uniform(&state) * z
                pick = 0
                acc = 0.0
                for l in range(m):
                    dl = delta[i, l]
                    if dl == INFINITY:
                        continue
                    acc = acc + exp(-beta * (dl - lo))
                    pick = l
                    if u < acc:
                        break
                labels[i] = cand[i, pick]
                drawn_delta[i] = delta[i, pick]


def nearest_others(const double[:, ::1] G, const double[::1] sq, Py_ssize_t lo,
                   int64_t[:, ::1] out, double[:, ::1] best):
    """The L = out.shape[1] nearest other centers of centers lo .. lo + B - 1.

    `G` (B x k) holds the dot products C[lo + b] . C[j] and `sq` (k,) the squared norms;
    the squared distance of centers i = lo + b and j is (sq[i] + sq[j]) - 2 G[b, j], as
    numpy forms it. Row b of `out` gets the L nearest j != i sorted by (distance, index);
    `best` (B x L) is scratch for their distances. One scan of G keeping the L best: no
    selection over k x k values, no temporaries.
    """
    cdef Py_ssize_t B = G.shape[0], k = G.shape[1], L = out.shape[1]
    cdef Py_ssize_t b, i, j, m, p
    cdef double v, si
    if sq.shape[0] != k or out.shape[0] != B or best.shape[0] < B or best.shape[1] != L \
            or L > k - 1 or lo < 0 or lo + B > k:
        raise ValueError("nearest_others: G, sq, out and best disagree, or L > k - 1")
    if L == 0:
        return
    with nogil:
        for b in range(B):
            i = lo + b
            si = sq[i]
            m = 0                                   # neighbours held so far
            for j in range(k):
                if j == i:
                    continue
                v = (si + sq[j]) - 2.0 * G[b, j]
                if m == L and not v < best[b, L - 1]:
                    continue
                # insert after every held distance <= v: ties keep the lower index first
                p = m if m < L else L - 1
                while p > 0 and best[b, p - 1] > v:
                    best[b, p] = best[b, p - 1]
                    out[b, p] = out[b, p - 1]
                    p -= 1
                best[b, p] = v
                out[b, p] = j
                if m < L:
                    m += 1
