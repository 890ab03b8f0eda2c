"""Samplers of valid k-means bounds that mix faster than the paper's uniform walk.

A k-means bound is an assignment z; it is valid at centers w when
``b_z(w) = sum_i s_i ||x_i - mu_{z_i}||^2 <= budget`` (the threshold v_{t-1}).
Every sampler starts from the nearest-center assignment (valid, since
budget >= F(w)) and returns an assignment whose exactly recomputed cost is
within the budget.

- ``"uniform"``: the paper's walk (:func:`walk`; public as
  :func:`sample_assignment`).
- ``"local"``: the same target (uniform on valid assignments) by a
  Metropolis-Hastings walk whose proposals favour neighbouring clusters in a
  k-nearest-neighbour graph of the centers (:func:`local_walk`).
- ``"gibbs"``: the maximum-entropy distribution over each point's candidate
  clusters (its nearest center and that center's graph neighbours) whose
  expected cost meets the budget, drawn independently per point, then repaired
  to validity (:func:`gibbs_sample`). For many points the uniform distribution
  on valid assignments concentrates on this one, so a draw is what a long
  walk would reach, at the price of one pass over n x (neighbours + 1) costs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _walks as walk_kernels
from .._kernels._common import openmp_max_threads
from .._validation import (check_centers, check_data, check_int, check_random_state, check_real,
                           check_sample_weight, draw_seed)
from ..latent import WALK_BLOCK, block_plan, repair
from ._pass import labeling_cost, walk_round, walk_start

#: Samplers GMMKMeans accepts.
SAMPLERS = ("uniform", "local", "gibbs")
#: Rows of center-to-center distances formed at once (memory: rows x k doubles).
_GRAPH_ROWS = 256


def center_neighbors(centers: np.ndarray, n_neighbors: int) -> np.ndarray:
    """The ``n_neighbors`` nearest other centers of each center, shape (k, n_neighbors) int64.

    Squared distances come from a gemm of the centers (||a||^2 + ||b||^2 - 2 a.b, in
    double) in blocks of rows, so memory is O(rows x k), never k x k x d; BLAS runs single
    threaded in a fit, so the result does not depend on the thread count. Each row is
    sorted by (distance, index).
    """
    C = np.asarray(centers, dtype=np.float64)
    k = C.shape[0]
    L = min(int(n_neighbors), k - 1)
    out = np.empty((k, max(L, 0)), dtype=np.int64)
    if L <= 0:
        return out
    sq = np.einsum("ij,ij->i", C, C)
    best = np.empty((min(_GRAPH_ROWS, k), L))
    for lo in range(0, k, _GRAPH_ROWS):
        hi = min(lo + _GRAPH_ROWS, k)
        walk_kernels.nearest_others(C[lo:hi] @ C.T, sq, lo, out[lo:hi], best)
    return out


def center_graph(centers: np.ndarray, n_neighbors: int) -> Tuple[np.ndarray, np.ndarray]:
    """Symmetric k-nearest-neighbour graph of the centers, CSR with sorted rows (int32).

    a ~ b when b is among the ``n_neighbors`` nearest other centers of a, or a
    among those of b (:func:`center_neighbors`).
    """
    k = centers.shape[0]
    nbr = center_neighbors(centers, n_neighbors)
    if nbr.shape[1] == 0:
        return np.zeros(k + 1, dtype=np.int32), np.zeros(0, dtype=np.int32)
    src = np.repeat(np.arange(k), nbr.shape[1])
    dst = nbr.ravel()
    edges = np.unique(np.concatenate([src * k + dst, dst * k + src]))
    a, b = np.divmod(edges, k)
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.add.at(indptr, a + 1, 1)
    return np.cumsum(indptr).astype(np.int32), b.astype(np.int32)


#: Proposals per round of a walk (about 0.1 s of work): between rounds the walk returns to
#: Python, so Ctrl-C stops even a walk of 10**10 proposals.
WALK_ROUND = 1 << 22


def walk_rounds(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                costs: np.ndarray, block_size: int, budget_slack: float, n_steps: int,
                seed: int, n_threads: int, step) -> int:
    """Run a blocked walk in rounds from ``labels`` (valid), in place; returns accepted moves.

    ``step(block_steps, total, budget, rng, accepted)`` advances every block by its
    share of one round (the uniform walk's or the local walk's kernel with their other
    arguments bound). The chains do not depend on how the proposals are split.
    """
    n = X.shape[0]
    block_slack, block_steps = block_plan(n, block_size, budget_slack, n_steps)
    n_blocks = block_slack.shape[0]
    total, budget, rng = walk_start(X, sw, centers, labels, costs, block_size, block_slack,
                                    seed, n_threads)
    accepted = np.zeros(n_blocks, dtype=np.int64)
    done = np.zeros(n_blocks, dtype=np.int64)
    per_block = max(1, WALK_ROUND // n_blocks)
    while True:
        todo = np.minimum(block_steps - done, per_block)
        if not todo.any():
            return int(accepted.sum())
        step(todo, total, budget, rng, accepted)
        done += todo


def local_walk(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
               costs: np.ndarray, graph: Tuple[np.ndarray, np.ndarray], eps: float,
               block_size: int, slack: float, n_steps: int, seed: int,
               n_threads: int) -> int:
    """Run the center-graph Metropolis-Hastings walk in place; return the accepted moves."""
    def step(todo, total, budget, rng, accepted):
        walk_kernels.local_walk(X, sw, centers, graph[0], graph[1], float(eps), labels, costs,
                                block_size, todo, total, budget, rng, accepted, n_threads)

    return walk_rounds(X, sw, centers, labels, costs, block_size, slack, n_steps, seed,
                       n_threads, step)


@dataclass
class WalkResult:
    """A random valid bound: its labels, their per-point costs at the walk's centers, the exact
    value b_z(w) and the walk's statistics."""

    labels: np.ndarray
    costs: np.ndarray
    value: float
    proposals: int
    accepted: int


def walk(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, start: np.ndarray,
         start_value: float, budget: float, n_steps: int, seed: int, n_threads: int,
         block_size: int = WALK_BLOCK) -> WalkResult:
    """The paper's random walk from the valid assignment ``start`` over assignments costing
    <= ``budget``.

    The points are split into blocks of ``block_size`` (a function of n only);
    each block walks with its own random stream and its share of the slack,
    proportional to its size, so the union of the blocks is valid and the
    result is the same for any thread count. The value of the result is then
    recomputed from scratch; if rounding pushed it over the budget, moves are
    undone (largest cost increase first) until it is valid.
    """
    n = X.shape[0]
    k = centers.shape[0]
    if not start_value <= budget:
        raise ValueError(f"the starting assignment costs {start_value!r}, more than the "
                         f"budget {budget!r}; the walk must start from a valid assignment.")
    labels = start.copy()
    costs = np.empty(n)
    if k < 2 or n_steps == 0:
        labeling_cost(X, sw, centers, labels, n_threads, costs)
        return WalkResult(labels=labels, costs=costs, value=start_value, proposals=0, accepted=0)

    def step(todo, total, budget_, rng, accepted):
        walk_round(X, sw, centers, labels, costs, block_size, todo, total, budget_, rng,
                   accepted, n_threads)

    accepted = walk_rounds(X, sw, centers, labels, costs, block_size, budget - start_value,
                           n_steps, seed, n_threads, step)
    value = labeling_cost(X, sw, centers, labels, n_threads)
    if value > budget:
        start_costs = np.empty(n)
        labeling_cost(X, sw, centers, start, n_threads, start_costs)
        value = repair(labels, start, costs, start_costs, budget,
                       lambda z: labeling_cost(X, sw, centers, z, n_threads))
    return WalkResult(labels=labels, costs=costs, value=value, proposals=n_steps,
                      accepted=accepted)


def sample_assignment(X: Any, centers: Any, labels: Any, budget: float, n_steps: int,
                      random_state: Any = None, *, sample_weight: Any = None
                      ) -> Tuple[np.ndarray, float, int]:
    """Sample a k-means bound: a random assignment whose cost at ``centers`` is <= ``budget``.

    A Metropolis random walk (uniform proposals: one point to another cluster;
    accepted iff the total cost stays within ``budget``) started at ``labels``,
    which must itself be within budget. O(d) per proposal; no n x k matrix.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    centers : array-like of shape (n_clusters, n_features)
    labels : array-like of int, shape (n_samples,)
        Valid starting assignment (e.g. the nearest centers).
    budget : float
        Upper limit on sum_i s_i ||x_i - centers[z_i]||^2 (v_{t-1} in the paper).
    n_steps : int
        Number of proposals.
    random_state : None, int or numpy Generator
    sample_weight : array-like of shape (n_samples,), optional

    Returns
    -------
    labels : ndarray of int32, shape (n_samples,)
    cost : float
        The exact cost of the returned labels (<= budget).
    n_accepted : int
        Number of accepted moves.
    """
    X = check_data(X, "X")
    centers = check_centers(centers, X)
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],) or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integers of shape ({X.shape[0]},), got "
                         f"{labels.dtype} of shape {labels.shape}.")
    if labels.size and (labels.min() < 0 or labels.max() >= centers.shape[0]):
        raise ValueError(f"labels must lie in [0, {centers.shape[0] - 1}].")
    n_steps = check_int(n_steps, "n_steps", 0)
    budget = check_real(budget, "budget")
    sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
    labels = np.ascontiguousarray(labels, dtype=np.int32)
    rng = check_random_state(random_state)
    n_threads = openmp_max_threads()
    start_value = labeling_cost(X, sw, centers, labels, n_threads)
    res = walk(X, sw, centers, labels, start_value, float(budget), n_steps, draw_seed(rng),
               n_threads)
    return res.labels, res.value, res.accepted


def _moments(delta: np.ndarray, beta: float, n_threads: int) -> Tuple[float, float]:
    n_chunks = -(-delta.shape[0] // walk_kernels.CHUNK)
    mean, var = np.empty(n_chunks), np.empty(n_chunks)
    walk_kernels.gibbs_moments(delta, beta, mean, var, n_threads)
    return math.fsum(mean), math.fsum(var)


def solve_beta(delta: np.ndarray, slack: float, n_threads: int,
               beta0: Optional[float] = None, rtol: float = 1e-3,
               max_evals: int = 60) -> Tuple[float, int]:
    """beta >= 0 with sum_i E_beta[delta_i] = slack (0 if even beta = 0 spends less).

    The expected excess h(beta) decreases in beta with h'(beta) = -sum_i
    Var_beta[delta_i]; safeguarded Newton steps in log(beta) inside a
    bracket, started at ``beta0`` (the previous iteration's beta). Returns
    beta and the number of evaluations of h.
    """
    h0, _ = _moments(delta, 0.0, n_threads)
    evals = 1
    if h0 <= slack:
        return 0.0, evals
    lo, hi = 0.0, math.inf           # h(lo) > slack >= h(hi)
    n = delta.shape[0]
    beta = beta0 if beta0 is not None and beta0 > 0 else n / slack
    while evals < max_evals:
        h, var = _moments(delta, beta, n_threads)
        evals += 1
        if abs(h - slack) <= rtol * slack:
            return beta, evals
        if h > slack:
            lo = beta
        else:
            hi = beta
        # Newton in t = log beta: dh/dt = -beta var
        step = (h - slack) / (beta * var) if var > 0 else math.inf
        nxt = beta * math.exp(min(max(step, -2.0), 2.0))
        if not lo < nxt < hi:
            nxt = math.sqrt(lo * hi) if lo > 0 and hi < math.inf else (
                beta * 4.0 if hi == math.inf else beta / 4.0)
        if hi < math.inf and lo > 0 and hi / lo < 1 + 1e-12:
            return hi, evals
        beta = nxt
    return (hi if hi < math.inf else beta), evals


def gibbs_sample(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, start: np.ndarray,
                 start_value: float, budget: float, graph: Tuple[np.ndarray, np.ndarray],
                 seed: int, n_threads: int, exact_costs, beta0: Optional[float] = None
                 ) -> Tuple[np.ndarray, np.ndarray, float, int, float]:
    """One draw of the maximum-entropy sampler, repaired to validity.

    Each point i draws its label among its candidates (``start[i]`` and the
    graph neighbours of ``start[i]``) with probability proportional to
    exp(-beta delta_il), delta_il its cost above the start label, with beta
    set so the expected total cost equals ``budget``. If the draw overshoots,
    moves are undone, largest delta first, until the exact cost is within the
    budget.

    ``exact_costs(labels, point_costs) -> float`` recomputes a labeling's cost
    from scratch (per point into ``point_costs``).

    Returns labels, per-point costs, their exact total, the number of moved
    points and beta.
    """
    n = X.shape[0]
    indptr, indices = graph
    width = 1 + (int(np.diff(indptr).max()) if indices.shape[0] else 0)
    costs = np.empty(n)
    slack = budget - start_value
    if width == 1 or not slack > 0:
        labels = start.copy()
        return labels, costs, exact_costs(labels, costs), 0, math.inf
    cand = np.empty((n, width), dtype=np.int32)
    delta = np.empty((n, width))
    walk_kernels.candidate_deltas(X, sw, centers, start, indptr, indices, cand, delta, n_threads)
    beta, _ = solve_beta(delta, slack, n_threads, beta0)
    labels = np.empty(n, dtype=np.int32)
    drawn = np.empty(n)
    walk_kernels.gibbs_draw(cand, delta, beta, labels, drawn, seed, n_threads)
    value = exact_costs(labels, costs)
    if value > budget:
        moved = np.flatnonzero(labels != start)
        order = moved[np.argsort(-drawn[moved], kind="stable")]
        # smallest prefix of the largest moves whose removal brings the estimate within budget
        excess = value - budget
        cut = int(np.searchsorted(np.cumsum(drawn[order]), excess, side="left")) + 1
        undo = order[:cut]
        labels[undo] = start[undo]
        value = exact_costs(labels, costs)
        if value > budget:   # rounding only: undo one move at a time
            start_costs = np.empty(n)
            exact_costs(start, start_costs)
            value = repair(labels, start, costs, start_costs, budget,
                           lambda z: exact_costs(z, None))
    n_moved = int(np.count_nonzero(labels != start))
    return labels, costs, value, n_moved, beta
