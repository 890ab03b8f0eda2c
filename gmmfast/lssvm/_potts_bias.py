"""The Potts bias of the scene experiment (paper eq. 16): favour coherent region labelings.

The bias of a bound is g(b) = -sum_i E(z_i), E the Potts energy of image i's
part labeling on its 4-connected grid. It is not separable over regions, so
:class:`PottsBias` maximises it over the valid bounds itself
(:func:`potts_select`: Lagrangian relaxation of the budget with
alpha-expansion per image, a knapsack over the labelings met, then local
search by the greedy moves of ``_kernels/_regions.pyx``).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

import numpy as np

from .._kernels import _regions as kernels
from .._validation import check_grid, check_indices, check_int
from ..core import Selection
from ..latent import table_value
from ..potts import potts_energy, potts_lagrangian
from ._select import _check_costs

__all__ = ["PottsBias", "potts_select"]


def _check_search(search: Any, name: str = "search") -> None:
    if not (isinstance(search, str) and search in ("global", "walk")):
        raise ValueError(f"{name} must be 'global' or 'walk', got {search!r}.")


def potts_select(costs: np.ndarray, budget: float, touching: np.ndarray,
                 grid: Tuple[int, int], *, search: str = "global", n_bisect: int = 30,
                 max_cycles: int = 20, exchanges: int = 16
                 ) -> Tuple[np.ndarray, float, Dict[str, float]]:
    """The most coherent labeling within budget: min sum_i E(z_i) s.t. fsum c(z) <= budget.

    ``costs`` (n, R, L) is the per-region cost table (real numbers or +inf, no NaN or
    -inf), ``touching`` (n, R) a labeling within budget (the per-region argmin).
    ``n_bisect`` (int >= 0) bisection steps on the multiplier once step 1 has bracketed it
    within a factor 4 (0 keeps the bracket's valid end), ``max_cycles`` (int >= 1)
    alpha-expansion cycles per image, ``exchanges`` (int >= 0) as in step 3.

    ``search="walk"`` climbs from the touching labeling on the paper's walk
    graph (labelings that differ in one region, all within budget): step 3
    below from the touching labeling only, a local maximum of the bias near
    the touching bound. ``search="global"`` (default) also takes steps 1 and
    2, which can jump to any labeling within budget, e.g. one part per image
    (E = 0) whenever the budget allows it:

    1. Lagrangian relaxation of the one budget: for a multiplier mu every
       image solves ``min_z mu * c_i(z) + E(z_i)`` by alpha-expansion
       (:func:`gmmfast.potts.potts_lagrangian`); the smallest mu whose labeling
       is within budget is found by bisection in log scale (mu -> inf gives the
       touching labeling, always valid; mu -> 0 every image's cheapest constant
       labeling, E = 0, which is returned at once if it is within budget).
    2. Every labeling met on the way is a candidate for its image; one
       candidate per image is chosen by the greedy multiple-choice knapsack
       (each image's lower convex hull of (cost, energy), steps taken in order
       of energy saved per unit of cost while the budget allows).
    3. Local search: single regions take a neighbour's label, greedily, when
       that lowers the energy within the remaining budget (or keeps the energy
       and lowers the cost), the moves that cost ordered by cost per unit of
       energy saved or cheapest first; run from the knapsack's choice and from
       the touching labeling. From the best result (the most coherent, then
       the cheapest), up to ``exchanges`` exchanges: undo one change, forbid
       it, search again with the freed budget.

    Returns the labeling (n, R) int32 within budget, its exact cost, and
    diagnostics (the multiplier, the Potts energies of the result and of the
    touching labeling, the alpha-expansion batches solved).
    """
    costs = _check_costs(costs, ndim=3)      # -inf refused as by lagrangian_select
    if 0 in costs.shape:
        raise ValueError(f"costs must be a non-empty (n, R, L) array, got shape {costs.shape}.")
    n, R, L = costs.shape
    H, W = check_grid(grid)
    if H * W != R:
        raise ValueError(f"grid {grid} has {H * W} regions but costs has R = {R}.")
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or math.isnan(budget):
        raise ValueError(f"budget must be a real number, got {budget!r}.")
    touching = check_indices(touching, "touching", (n, R), L)
    _check_search(search)
    n_bisect = check_int(n_bisect, "n_bisect", 0)
    max_cycles = check_int(max_cycles, "max_cycles", 1)
    exchanges = check_int(exchanges, "exchanges", 0)
    flat = costs.reshape(n * R, L)

    def value(z: np.ndarray) -> float:
        return table_value(flat, z.reshape(-1))

    def energy(z: np.ndarray) -> np.ndarray:
        return potts_energy(z.reshape(n, H, W))

    t_val = value(touching)
    if not t_val <= budget:
        raise ValueError(f"the touching labeling costs {t_val!r}, more than the budget "
                         f"{budget!r}.")
    e_touch = energy(touching)
    info = {"multiplier": math.inf if search == "global" else math.nan,
            "energy": float(e_touch.sum()),
            "touching_energy": float(e_touch.sum()), "evaluations": 0}
    if search == "global":
        # mu -> 0: the cheapest constant labeling of each image (E = 0 everywhere)
        const = np.repeat(costs.sum(axis=1).argmin(axis=1)[:, None], R, axis=1).astype(np.int32)
        c_val = value(const)
        if c_val <= budget:
            info.update(multiplier=0.0, energy=0.0)
            return const, c_val, info
    if e_touch.sum() == 0:
        return touching, t_val, info
    best = (float(e_touch.sum()), t_val, touching.copy(), e_touch)

    def consider(cand: np.ndarray) -> None:
        nonlocal best
        vc = value(cand)
        if vc <= budget:
            ec = energy(cand)
            if (float(ec.sum()), vc) < best[:2]:
                best = (float(ec.sum()), vc, cand, ec)

    starts = [(touching, t_val)]
    mu_hi = math.nan                  # no multiplier on the walk
    if search == "global":
        z, v, mu_hi = _global_candidate(costs, budget, touching, t_val, e_touch, const, grid,
                                        value, info, n_bisect, max_cycles)
        consider(z)
        starts.insert(0, (z, v))
    # 3. local search on single regions from the touching labeling (and, global only, from
    #    the knapsack's choice), both orders of the moves; exchanges from the best result
    for start, v_start in starts:
        for mode in (0, 1):
            cand = np.ascontiguousarray(start, dtype=np.int32).copy()
            kernels.greedy_moves(costs, cand, float(budget - v_start), H, W, -1, -1, mode)
            consider(cand)
    consider(_exchanges(costs, best[2], touching, budget - best[1], grid, exchanges))
    _, v, z, e = best
    info.update(multiplier=mu_hi, energy=float(e.sum()))
    return z, v, info


def _global_candidate(costs: np.ndarray, budget: float, touching: np.ndarray, t_val: float,
                      e_touch: np.ndarray, const: np.ndarray, grid: Tuple[int, int],
                      value: Any, info: Dict[str, Any], n_bisect: int, max_cycles: int
                      ) -> Tuple[np.ndarray, float, float]:
    """Steps 1 and 2 of :func:`potts_select`: (labeling within budget, its cost, multiplier).

    ``t_val`` and ``e_touch`` are the touching labeling's cost and energies, ``const``
    every image's cheapest constant labeling (over budget); ``info["evaluations"]``
    counts the alpha-expansion batches solved.
    """
    n, R, L = costs.shape
    cands = [(touching, costs_per_image(costs, touching), e_touch),
             (const, costs_per_image(costs, const), np.zeros(n, dtype=np.int64))]
    # 1. bisection on the multiplier; scale: one Potts edge against a region's typical margin
    srt = np.sort(costs, axis=2)
    gaps = (srt[:, :, 1] - srt[:, :, 0]) if L > 1 else np.ones((n, R))
    pos = gaps[gaps > 0]
    mu0 = 1.0 / float(np.median(pos)) if pos.size else 1.0

    def solve(mu: float) -> float:
        z, c, e = potts_lagrangian(costs, mu, grid, max_cycles=max_cycles)
        info["evaluations"] += 1
        cands.append((z, c, e))
        return value(z)

    mu_hi, mu_lo = math.inf, None
    if solve(mu0) <= budget:
        mu_hi = mu0
        for _ in range(60):           # go down until invalid
            if solve(mu_hi / 4.0) <= budget:
                mu_hi /= 4.0
            else:
                mu_lo = mu_hi / 4.0
                break
    else:
        mu_lo = mu0
        for _ in range(60):           # go up until valid
            if solve(mu_lo * 4.0) <= budget:
                mu_hi = mu_lo * 4.0
                break
            mu_lo *= 4.0
    if mu_lo is not None and math.isfinite(mu_hi):
        for _ in range(n_bisect):
            mid = math.sqrt(mu_lo * mu_hi)
            if not mu_lo < mid < mu_hi:
                break
            if solve(mid) <= budget:
                mu_hi = mid
            else:
                mu_lo = mid
    # 2. one candidate per image: greedy multiple-choice knapsack
    z = _choose_candidates(cands, budget - t_val)
    v = value(z)
    if not v <= budget:               # rounding in the running sums: the touching start is safe
        z, v = touching.copy(), t_val
    return z, v, mu_hi


def _choose_candidates(cands: List[Tuple[np.ndarray, np.ndarray, np.ndarray]],
                       slack: float) -> np.ndarray:
    """Greedy multiple-choice knapsack over per-image candidate labelings.

    ``cands[0]`` is the start (the touching labeling, the cheapest per image).
    Each image's candidates are reduced to the lower convex hull of (extra
    cost over the start, energy); hull steps of all images are taken in order
    of energy saved per unit of cost while ``slack`` allows (a step that does
    not fit ends that image's climb).
    """
    Z = np.stack([c[0] for c in cands])              # (K, n, R)
    C = np.stack([c[1] for c in cands]) - cands[0][1]  # extra cost over the start (K, n)
    E = np.stack([c[2] for c in cands]).astype(np.float64)
    K, n = C.shape
    choice = np.zeros(n, dtype=np.int64)
    steps = []                                       # (ratio, image, candidate, dc)
    for i in range(n):
        order = np.lexsort((E[:, i], C[:, i]))
        hull = []
        c0, e0 = C[0, i], E[0, i]
        # candidates cheaper than the start (possible only by rounding) are ignored
        pts = [(C[k, i], E[k, i], k) for k in order if C[k, i] >= c0 and E[k, i] < e0]
        while pts:
            # next hull vertex: the best energy saved per unit of cost from (c0, e0)
            best = None
            for (c, e, k) in pts:
                dc = c - c0
                r = np.inf if dc <= 0 else (e0 - e) / dc
                if best is None or r > best[0] or (r == best[0] and e < best[2]):
                    best = (r, c, e, k)
            r, c, e, k = best
            hull.append((r, i, k, c - c0))
            c0, e0 = c, e
            pts = [(c2, e2, k2) for (c2, e2, k2) in pts if c2 >= c0 and e2 < e0]
        steps += hull
    steps.sort(key=lambda s: -s[0])
    blocked = np.zeros(n, dtype=bool)
    for r, i, k, dc in steps:
        if blocked[i]:
            continue
        if dc <= slack:
            choice[i] = k
            slack -= dc
        else:
            blocked[i] = True
    return Z[choice, np.arange(n)].copy()


def _exchanges(costs: np.ndarray, z: np.ndarray, start: np.ndarray, slack: float,
               grid: Tuple[int, int], exchanges: int) -> np.ndarray:
    """Up to ``exchanges`` exchanges from the labeling z (with ``slack`` of budget left).

    The greedy moves (Cython, ``_kernels/_regions.pyx:greedy_moves``) give a
    region a neighbour's label, one at a time from a priority queue: first
    those that lower the Potts energy without raising the cost, then those
    that keep the energy and lower the cost, then those that lower the energy
    at a cost while the slack allows. An exchange returns one changed region
    (relative to ``start``) to its start label, forbids the label it had, and
    runs the moves again with the slack freed; it is kept if the total energy
    drops (or stays and the cost drops). The costliest changes are tried first.
    """
    n, R = z.shape
    H, W = grid
    z = np.ascontiguousarray(z, dtype=np.int32).copy()
    left = float(slack)

    def score(zz: np.ndarray, left_: float) -> Tuple[float, float]:
        return (float(potts_energy(zz.reshape(n, H, W)).sum()), -left_)

    cur = score(z, left)
    tried: set = set()
    for _ in range(exchanges):
        changed = np.argwhere(z != start)
        if changed.size == 0:
            break
        ci, cr = changed[:, 0], changed[:, 1]
        dc = costs[ci, cr, z[ci, cr]] - costs[ci, cr, start[ci, cr]]
        pick = None
        for j in np.argsort(-dc, kind="stable"):
            key = (int(ci[j]), int(cr[j]), int(z[ci[j], cr[j]]))
            if key not in tried:
                pick = key
                break
        if pick is None:
            break
        tried.add(pick)
        i, r, lab = pick
        z2 = z.copy()
        z2[i, r] = start[i, r]
        freed = float(costs[i, r, lab] - costs[i, r, start[i, r]])
        left2 = kernels.greedy_moves(costs, z2, left + freed, H, W, i * R + r, lab, 0)
        new = score(z2, left2)
        if new < cur:
            z, left, cur = z2, left2, new
    return z


def costs_per_image(costs: np.ndarray, z: np.ndarray) -> np.ndarray:
    """sum_r costs[i, r, z[i, r]] per image, correctly rounded."""
    picked = np.take_along_axis(costs, z[..., None].astype(np.intp), axis=-1)[..., 0]
    return np.array([math.fsum(row) for row in picked])


@dataclass
class PottsBias:
    """The paper's bias for the scene model: g(b) = -sum_i E(z_i) (eq. 16).

    E is the Potts energy of an image's part labeling on its 4-connected grid
    (the number of neighbouring regions with different parts). Maximised over
    the valid bounds by :func:`potts_select` (Lagrangian relaxation of the
    budget, alpha-expansion per image); the touching bound is always valid, so
    a valid bound is always returned.

    Parameters
    ----------
    n_bisect : int >= 0, default=30
        Bisection steps on the multiplier once a factor-4 bracket of it is found, as
        :func:`potts_select` (which runs them) takes them: 0 keeps the bracket's valid end,
        fewer alpha-expansion batches for a labeling that is within the budget as always,
        if perhaps less coherent.
    max_cycles : int >= 1, default=20
        Alpha-expansion cycles per image.
    search : {"global", "walk"}, default="global"
        "global": the most coherent valid labeling that potts_select finds
        anywhere (from random labels, where all of a class's parts score
        alike, that is one part per image). "walk": the most coherent one it
        reaches from the touching labeling by single-region moves within the
        budget (a local maximum on the paper's walk graph).

    The parameters are checked at the start of :meth:`LatentSSVM.fit` (before any pass
    over the data), and again by :meth:`setup`.

    Attributes
    ----------
    multipliers, energies, touching_energies : lists of float
        Filled during a fit. Per G-MM iteration: the multiplier used (NaN with search="walk"), the
        total Potts energy of the selected labeling and that of the touching
        (CCP) labeling.
    """

    n_bisect: int = 30
    max_cycles: int = 20
    search: str = "global"
    multipliers: List[float] = field(default_factory=list)
    energies: List[float] = field(default_factory=list)
    touching_energies: List[float] = field(default_factory=list)

    def fresh(self) -> "PottsBias":
        """A new bias with the same parameters and no record."""
        return PottsBias(self.n_bisect, self.max_cycles, self.search)

    def check_params(self) -> None:
        """n_bisect (int >= 0), max_cycles (int >= 1) and search as documented, else a
        ValueError naming the parameter (as ``PottsBias n_bisect`` etc.)."""
        check_int(self.n_bisect, "PottsBias n_bisect", 0)
        check_int(self.max_cycles, "PottsBias max_cycles", 1)
        _check_search(self.search, "PottsBias search")

    @staticmethod
    def check_model(model: Any, latent_shape: Tuple[int, ...]) -> None:
        """A model with a grid of regions and one latent part label per region (the
        ``latent_shape`` it gives the data), else a ValueError."""
        grid = getattr(model, "grid", None)
        if grid is None or tuple(latent_shape) != (grid[0] * grid[1],):
            raise ValueError("the Potts bias needs a model with a grid of regions and one latent "
                             f"part label per region (e.g. RegionPartModel); got {model!r}.")

    def setup(self, family: Any, rng: np.random.Generator) -> None:
        self.check_model(family.model, family.latent_shape)
        self.check_params()

    def select_valid(self, family: Any, point: Any, budget: float,
                     rng: np.random.Generator) -> Selection:
        grid = family.model.grid
        costs = point.costs.reshape(family.n, family.n_vars, point.costs.shape[1])
        z, _, info = potts_select(costs, budget, point.touching, grid, search=self.search,
                                  n_bisect=self.n_bisect, max_cycles=self.max_cycles)
        self.multipliers.append(info["multiplier"])
        self.energies.append(info["energy"])
        self.touching_energies.append(info["touching_energy"])
        return Selection(z, proposals=int(info["evaluations"]))
