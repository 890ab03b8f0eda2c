# The random walk over latent configurations given by a table of costs.
#
# For latent-variable models a bound is a configuration z = (z_1..z_n) and its
# value at w_{t-1} is a constant plus sum_i c_i(z_i). Here the costs are a
# table: costs[i, j] = c_i(j) for j < n_options[i] (ragged problems pad the
# rest). The walk is the k-means walk with a table lookup instead of a
# distance: blocks of examples whose boundaries depend on n only, one random
# stream per block, the slack split between blocks, so results do not depend
# on the thread count.
from cython.parallel cimport prange
from libc.stdint cimport uint64_t, uint32_t, int64_t

import numpy as np

from ._common cimport gmm_rng_next, gmm_rng_stream, gmm_rng_bounded, threads_for


cdef int64_t _walk_block(const double* costs, Py_ssize_t m, const int* n_options,
                         int* labels, Py_ssize_t lo, Py_ssize_t hi, double slack,
                         int64_t n_steps, uint64_t state) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint32_t nb = <uint32_t>(hi - lo)
    cdef uint32_t ni
    cdef uint64_t r
    cdef int zi, j
    cdef double total = 0.0, budget, nt
    cdef int64_t step, accepted = 0
    for i in range(lo, hi):
        total = total + costs[i * m + labels[i]]
    budget = total + slack
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
        nt = total + (costs[i * m + j] - costs[i * m + zi])
        if nt <= budget:
            labels[i] = j
            total = nt
            accepted += 1
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
    """
    cdef Py_ssize_t n = costs.shape[0], m = costs.shape[1]
    cdef Py_ssize_t n_blocks = block_slack.shape[0]
    cdef Py_ssize_t b, lo, hi
    if n == 0:
        return
    n_threads = threads_for(n_threads, n_blocks, <double>np.asarray(block_steps).sum(), 1 << 20)
    with nogil:
        for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
            lo = b * block_size
            hi = min(lo + block_size, n)
            block_accepted[b] = _walk_block(&costs[0, 0], m, &n_options[0], &labels[0],
                                            lo, hi, block_slack[b], block_steps[b],
                                            gmm_rng_stream(seed, <uint64_t>b))
