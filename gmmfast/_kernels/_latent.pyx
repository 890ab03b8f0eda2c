# The random walk over latent configurations given by a table of costs.
#
# For latent-variable models a bound is a configuration z = (z_1..z_n) and its
# value at w_{t-1} is a constant plus sum_i c_i(z_i). Here the costs are a
# table: costs[i, j] = c_i(j) for j < n_options[i] (ragged problems pad the
# rest). The walk is the k-means walk with a table lookup instead of a
# distance: blocks of examples whose boundaries depend on n only, one random
# stream per block, the slack split between blocks, so results do not depend
# on the thread count.
# Long walks run in rounds of about _ROUND proposals per thread: a round walks the
# next few unfinished blocks, each at most _ROUND steps further (a block stays in cache
# until it is done). Each block keeps its random stream and running total between
# rounds, so the rounds change nothing in the result; Ctrl-C is checked between them.
from cython.parallel cimport prange
from libc.stdint cimport uint64_t, uint32_t, int64_t

import numpy as np

from ._common cimport (gmm_rng_next, gmm_rng_stream, gmm_rng_bounded, threads_for,
                       check_interrupt, raise_interrupt)

#: Proposals per block and round, and per thread and round (tens of milliseconds).
cdef int64_t _ROUND = 1 << 22


cdef int64_t _walk_block(const double* costs, Py_ssize_t m, const int* n_options,
                         int* labels, Py_ssize_t lo, Py_ssize_t hi, double budget,
                         double* running, int64_t n_steps, uint64_t* rng) noexcept nogil:
    """n_steps proposals of the walk of block [lo, hi) from running total *running; returns
    the accepted ones and updates *running and the stream *rng."""
    cdef Py_ssize_t i
    cdef uint32_t nb = <uint32_t>(hi - lo)
    cdef uint32_t ni
    cdef uint64_t r, state = rng[0]
    cdef int zi, j
    cdef double total = running[0], nt
    cdef int64_t step, accepted = 0
    for step in range(n_steps):
        r = gmm_rng_next(&state)
        i = lo + gmm_rng_bounded(<uint32_t>(r >> 32), nb, &state)
        ni = <uint32_t>n_options[i]
        if ni < 2:
            continue
        j = <int>gmm_rng_bounded(<uint32_t>r, ni - 1, &state)
        zi = labels[i]
        if j >= zi:
            j = j + 1
# Kernel twin, kept for speed: the accept step of every walk (_kmeans.pyx, _walks.pyx).
        nt = total + (costs[i * m + j] - costs[i * m + zi])
        if nt <= budget:
            labels[i] = j
            total = nt
            accepted += 1
    running[0] = total
    rng[0] = state
    return accepted


def walk(const double[:, ::1] costs, const int[::1] n_options, int[::1] labels,
         Py_ssize_t block_size, const double[::1] block_slack,
         const int64_t[::1] block_steps, uint64_t seed, int64_t[::1] block_accepted,
         int n_threads):
    """Metropolis walk over configurations z with sum_i costs[i, z_i] within budget.

    Block b holds examples [b * block_size, (b + 1) * block_size) and may spend
    `block_slack[b]` above its start cost. A proposal draws an example
    uniformly and another of its options uniformly; it is accepted iff the
    block stays within budget (uniform target on the valid configurations).
    Raises KeyboardInterrupt (labels then half walked) on Ctrl-C.
    """
    cdef Py_ssize_t n = costs.shape[0], m = costs.shape[1]
    cdef Py_ssize_t n_blocks = block_slack.shape[0]
    cdef Py_ssize_t b, b0, b1, lo, hi, i
    cdef int64_t step, work
    cdef double total
    cdef int threads
    cdef bint stopped = False
    if n == 0 or n_blocks == 0:
        return
    rng_np = np.empty(n_blocks, dtype=np.uint64)
    running_np = np.zeros(n_blocks)
    budget_np = np.empty(n_blocks)
    done_np = np.zeros(n_blocks, dtype=np.int64)
    cdef uint64_t[::1] rng = rng_np
    cdef double[::1] running = running_np, budget = budget_np
    cdef int64_t[::1] done = done_np
    threads = threads_for(n_threads, n_blocks, <double>n, 1 << 20)
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=threads):
            lo = b * block_size
            hi = min(lo + block_size, n)
            total = 0.0
# Kernel twin, kept for speed: a chain's start, as in _kmeans.pyx walk_start (costs come from a table here).
            for i in range(lo, hi):
                total = total + costs[i, labels[i]]
            running[b] = total
            budget[b] = total + block_slack[b]
            rng[b] = gmm_rng_stream(seed, <uint64_t>b)
            block_accepted[b] = 0
    b0 = 0
    while True:
        while b0 < n_blocks and done[b0] >= block_steps[b0]:
            b0 += 1
        if b0 == n_blocks:
            break
        work = 0
        b1 = b0
        while b1 < n_blocks and (b1 == b0 or work + min(block_steps[b1] - done[b1], _ROUND)
                                 <= _ROUND * n_threads):
            work += min(block_steps[b1] - done[b1], _ROUND)
            b1 += 1
        threads = threads_for(n_threads, b1 - b0, <double>work, 1 << 20)
        with nogil:
            for b in prange(b0, b1, schedule="dynamic", num_threads=threads):
                step = min(block_steps[b] - done[b], _ROUND)
                if step > 0:
                    lo = b * block_size
                    block_accepted[b] += _walk_block(&costs[0, 0], m, &n_options[0],
                                                     &labels[0], lo, min(lo + block_size, n),
                                                     budget[b], &running[b], step, &rng[b])
                    done[b] += step
            stopped = check_interrupt()
        if stopped:
            raise_interrupt()
