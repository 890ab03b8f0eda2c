"""The LS-SVM bound family for :func:`gmmfast.core.generalized_mm` (paper section 4.2).

Objective (lambda = ``lam``)::

    F(w) = lam/2 ||w||^2 + 1/n sum_i [ max_{y,z} (w.phi(x_i,y,z) + Delta(y,y_i)) - max_z w.phi(x_i,y_i,z) ]

A bound is a latent configuration z (int32, one value per example, or an
array of shape ``(n,) + latent_shape`` when the model gives each example
several latent variables); b_z(w) replaces the last max by
w.phi(x_i, y_i, z_i). At a point w every quantity comes from one
loss-augmented pass (cached by the identity of w):

    const(w) = lam/2 ||w||^2 + 1/n fsum_i H_i(w)        H_i = the loss-augmented max
    c_i(z)   = -w.phi(x_i, y_i, z) / n                 the per-example cost table
    b_z(w)   = const(w) + fsum_i c_i(z_i)              F(w) = const(w) + fsum_i min_z c_i(z)

so "b_z(w_{t-1}) <= v_{t-1}" is the budget ``fsum_i c_i(z_i) <= v_{t-1} - const``
over the cost table, exactly the form :func:`gmmfast.latent.sample_latent` walks.
With several latent variables per example the score is separable over them
(``c_i(z) = sum_v c_{i,v}(z_v)``), so the table has one row per *variable*
(n * V rows, e.g. n * R for one part label per region): the touching bound,
the walk and the budget work per variable, unchanged.
The budget is rounded down until const + budget <= v_{t-1} in floating point,
so any configuration within it is valid as the core checks it.

Bounds are selected by:

- touching: CCP's latent completion z_i = argmax_z w.phi(x_i, y_i, z);
- random, "walk": the uniform random walk over valid configurations from the
  touching one (``sample_latent``);
- random, "subset" (the paper's experimental scheme): take the examples in a
  random order, set the first |S_t| to their CCP values and keep the others'
  previous values, growing |S_t| from |S_{t-1}| until the bound is valid
  (an example's latent variables move together);
- biased: maximise a separable bias sum_i g_i(z_i) over the valid bounds by
  Lagrangian relaxation of the one budget (bisection on the multiplier, then
  a greedy fill of the remaining budget); the touching bound is always valid.
  The built-in separable bias is multi-fold MIL (:class:`MultifoldBias`). A
  bias object with a ``select_valid(family, point, budget, rng)`` method
  does its own maximisation over valid bounds (the Potts bias of the scene
  model, :class:`gmmfast.lssvm.PottsBias`, which is not separable).

Minimisation is the warm-started cutting plane (:class:`CuttingPlane`). It
is solved to a tolerance, so ``minimize`` returns the previous solution when
the solver's answer has a larger bound value (as the core measures it): this
keeps b_t(w_t) <= b_t(w_{t-1}) exactly.

The first bound is the user's latent initialisation: G-MM starts at w_0 = 0,
where every score is 0 and every configuration gives b_z(0) = F(0), so all
bounds touch and the initial z is a valid (touching) first bound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from .._validation import check_array, check_indices, check_int, check_real, integer_array
from ..core import Selection
from ..latent import sample_latent, table_value
from ._bcfw import BCFW
from ._cutting_plane import CuttingPlane
from ._dcd import DCD
from ._models import Augmented
from ._solver import SolveInfo

__all__ = ["LSSVMBounds", "MultifoldBias", "lagrangian_select", "subset_select"]


@dataclass
class PointEval:
    """Everything about one point w that the family needs (one loss-augmented pass)."""

    w: np.ndarray
    aug: Augmented
    const: float           # lam/2 ||w||^2 + fsum(H) / n
    costs: np.ndarray      # c_i(z) = -s_i(z) / n, +inf beyond an example's latent values
    touching: np.ndarray   # argmin_z c_i(z) (first minimum): CCP's latent completion
    objective: float


def budget_for(threshold: float, const: float, touching_value: float = -np.inf) -> float:
    """A budget B on the table sum such that fl(const + sum) <= threshold whenever sum <= B.

    B is threshold - const, lowered ulp by ulp until fl(const + B) <= threshold
    (rounded addition is monotone), and never below ``touching_value``, the
    table sum of the touching configuration, which is valid by construction
    (fl(const + touching_value) = F(w) <= threshold).
    """
    B = threshold - const
    while const + B > threshold:
        B = np.nextafter(B, -np.inf)
    return float(max(B, touching_value))


def _check_costs(costs: Any) -> np.ndarray:
    """A cost table: a 2-D float64 array of real numbers or +inf (a value never taken)."""
    costs = check_array(costs, "costs", dtype=np.float64, finite=False)
    if np.isnan(costs).any() or (costs == -np.inf).any():
        raise ValueError("costs must not contain NaN or -inf (+inf marks a value never taken).")
    return costs


def lagrangian_select(gain: np.ndarray, costs: np.ndarray, budget: float,
                      start: np.ndarray, n_bisect: int = 60) -> Tuple[np.ndarray, float]:
    """Maximise sum_i gain[i, z_i] subject to fsum_i costs[i, z_i] <= budget (approximately).

    Lagrangian relaxation of the budget: z(mu)_i = argmax_z gain - mu costs.
    ``start`` must be within budget (e.g. the touching configuration, the
    limit mu -> inf with ties broken by cost then gain). The smallest valid mu
    is found by bisection (in log scale); then, from that valid z(mu_hi), the
    examples where z(mu_lo) differs are switched greedily by gain per unit of
    cost while the budget allows. Returns a valid configuration and its cost.

    ``costs`` (n, m): real numbers, +inf where a value is never taken; ``gain`` (n, m):
    finite wherever ``costs`` is (anything elsewhere); ``budget`` finite; ``start`` (n,)
    values in [0, m); ``n_bisect`` an integer >= 0.
    """
    costs = _check_costs(costs)
    n, m = costs.shape
    gain = check_array(gain, "gain", dtype=np.float64, finite=False)
    if gain.shape != costs.shape:
        raise ValueError(f"gain must have the shape of costs {costs.shape}, got {gain.shape}.")
    budget = check_real(budget, "budget")
    start = check_indices(start, "start", (n,), m)
    n_bisect = check_int(n_bisect, "n_bisect", 0)
    finite = np.isfinite(costs)
    if not np.isfinite(gain[finite]).all():
        raise ValueError("gain must be finite wherever costs is finite (it is ignored where "
                         "costs is +inf).")
    rows = np.arange(n)
    g = np.where(finite, gain, -np.inf)

    def pick(mu: float) -> np.ndarray:
        return np.argmax(np.where(finite, g - mu * costs, -np.inf), axis=1).astype(np.int32)

    def value(z: np.ndarray) -> float:
        return table_value(costs, z)

    z0 = pick(0.0)
    v0 = value(z0)
    if v0 <= budget:
        return z0, v0
    best = start.copy()
    best_v = value(best)
    if not best_v <= budget:
        raise ValueError(f"start must be within budget: it costs {best_v!r}, more than the "
                         f"budget {budget!r}.")
    # scale: a multiplier that makes cost differences comparable with gain differences
    gspan = float(np.nanmax(np.where(finite, g, np.nan)) - np.nanmin(np.where(finite, g, np.nan)))
    cdiff = np.where(finite, costs, np.nan) - costs[rows, best][:, None]
    cspan = float(np.nanmax(np.abs(cdiff)))
    if not (gspan > 0 and cspan > 0):
        return best, best_v
    lo, hi = 0.0, gspan / cspan
    z_hi = pick(hi)
    v_hi = value(z_hi)
    for _ in range(200):
        if v_hi <= budget:
            break
        lo, hi = hi, hi * 4.0
        z_hi = pick(hi)
        v_hi = value(z_hi)
    if not v_hi <= budget:
        z_hi, v_hi = best, best_v
    z_lo = pick(lo) if lo > 0 else z0
    for _ in range(n_bisect):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 1024.0
        if not lo < mid < hi:
            break
        z = pick(mid)
        v = value(z)
        if v <= budget:
            hi, z_hi, v_hi = mid, z, v
        else:
            lo, z_lo = mid, z
    # prefer the Lagrangian answer if it beats the start in gain
    if g[rows, z_hi].sum() < g[rows, best].sum():
        z_hi, v_hi = best, best_v
    # greedy fill towards z_lo with the remaining budget
    diff = np.flatnonzero(z_lo != z_hi)
    if diff.size:
        dg = g[diff, z_lo[diff]] - g[diff, z_hi[diff]]
        dc = costs[diff, z_lo[diff]] - costs[diff, z_hi[diff]]
        useful = dg > 0
        diff, dg, dc = diff[useful], dg[useful], dc[useful]
        order = np.lexsort((-dg, np.where(dc > 0, -dg / np.maximum(dc, 1e-300), -np.inf)))
        z = z_hi.copy()
        slack = budget - v_hi
        for k in order:
            if dc[k] <= slack:
                i = diff[k]
                z[i] = z_lo[i]
                slack -= dc[k]
        v = value(z)
        if v <= budget:
            z_hi, v_hi = z, v
    return z_hi, v_hi


def subset_select(costs: np.ndarray, touching: np.ndarray, previous: np.ndarray, budget: float,
                  order: np.ndarray, min_size: int) -> Tuple[np.ndarray, float, int]:
    """The paper's random bounds: CCP values for the first s examples of ``order``, previous
    values for the others, with the smallest s >= min_size whose cost is within budget.

    s = n gives the touching configuration, always valid; the cost is
    non-increasing in s (each switch lowers it), so s is found by bisection.
    ``touching`` and ``previous`` have shape (n,) or (n,) + latent_shape (an
    example's latent variables switch together); ``costs`` has one row per
    latent variable, in the order of ``touching.reshape(-1)`` (real numbers, +inf
    where a value is never taken). ``order`` is a permutation of the n examples,
    ``min_size`` an integer in [0, n], ``budget`` finite and at least the cost of
    ``touching``.
    """
    costs = _check_costs(costs)
    m = costs.shape[1]
    touching = integer_array(touching, "touching")
    if touching.ndim == 0 or touching.size != costs.shape[0]:
        raise ValueError(f"touching must have one latent value per row of costs "
                         f"({costs.shape[0]}), in an array of shape (n,) or (n,) + "
                         f"latent_shape; got shape {touching.shape}.")
    touching = check_indices(touching, "touching", touching.shape, m)
    previous = check_indices(previous, "previous", touching.shape, m)
    n = touching.shape[0]
    order = check_indices(order, "order", (n,), n, dtype=np.intp)
    if n and np.bincount(order, minlength=n).max() != 1:
        raise ValueError(f"order must be a permutation of the {n} examples (each once).")
    budget = check_real(budget, "budget")
    min_size = check_int(min_size, "min_size", 0, n)

    def config(s: int) -> np.ndarray:
        z = previous.copy()
        sel = order[:s]
        z[sel] = touching[sel]
        return z

    def value(z: np.ndarray) -> float:
        return table_value(costs, z.reshape(-1))

    s_lo = min_size
    z = config(s_lo)
    v = value(z)
    if v <= budget:
        return z, v, s_lo
    if not value(touching) <= budget:
        raise ValueError(f"touching must be within budget: it costs {value(touching)!r}, more "
                         f"than the budget {budget!r}.")
    lo, hi = s_lo, n           # config(lo) invalid, config(hi) valid
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if value(config(mid)) <= budget:
            hi = mid
        else:
            lo = mid
    z = config(hi)
    return z, value(z), hi


class MultifoldBias:
    """Multi-fold MIL bias (paper section 4.3): g_i(z) = w^(k).phi(x_i, y_i, z) for i in fold k.

    w^(k) minimises the bound of the other K - 1 folds with their latent values
    fixed at the previous configuration z^{t-1}; maximising g_i is minimising
    the structured hinge loss of w^(k) on example i (the loss-augmented term
    does not depend on z). Fold solvers are warm-started across iterations.

    Parameters
    ----------
    n_folds : int
    tol, max_iter : cutting-plane tolerance (absolute) and cap for the fold models.
    """

    def __init__(self, n_folds: int = 10, *, tol: Optional[float] = None,
                 max_iter: Optional[int] = None):
        self.n_folds = n_folds
        self.tol = tol
        self.max_iter = max_iter
        self._solvers: Optional[List[CuttingPlane]] = None
        self._w: Optional[List[np.ndarray]] = None
        self.folds: Optional[np.ndarray] = None
        self.fold_info: List[List[SolveInfo]] = []
        self.last_gain: Optional[np.ndarray] = None

    def setup(self, family: "LSSVMBounds", rng: np.random.Generator) -> None:
        n = family.n
        K = min(self.n_folds, n)
        if K < 2:
            raise ValueError(f"the multifold bias needs at least 2 folds and 2 examples, got "
                             f"n_folds={self.n_folds} with {n} examples.")
        perm = rng.permutation(n)
        self.folds = np.empty(n, dtype=np.int64)
        self.folds[perm] = np.arange(n) % K
        tol = family.solver_tol if self.tol is None else self.tol
        it = family.solver_max_iter if self.max_iter is None else self.max_iter
        self._solvers = [family.make_solver(np.flatnonzero(self.folds != k).astype(np.int64),
                                            tol=tol, max_iter=it, table=False,
                                            seed=int(rng.integers(2**63)))
                         for k in range(K)]
        self._w = [np.zeros(family.D) for _ in range(K)]

    def release(self) -> None:
        """Drop the fold solvers (they hold the training data)."""
        self._solvers = None
        self._w = None
        self.last_gain = None

    def __call__(self, family: "LSSVMBounds", w_prev: np.ndarray, z_prev: np.ndarray
                 ) -> np.ndarray:
        """The gain table g ((n,) + latent_shape + (max_latent,)), -inf beyond the latent values."""
        if self._solvers is None:
            raise RuntimeError("MultifoldBias.setup must be called first")
        gain = np.empty((family.n,) + family.latent_shape + (family.width,))
        infos = []
        for k, solver in enumerate(self._solvers):
            wk, _, info = solver.solve(z_prev[solver.idx], self._w[k])
            self._w[k] = wk
            infos.append(info)
            held = np.flatnonzero(self.folds == k).astype(np.int64)
            gain[held] = family.model.latent_table(family.data, family.y, wk, held)
        self.fold_info.append(infos)
        self.last_gain = gain
        return gain


class LSSVMBounds:
    """The LS-SVM bound family: see the module docstring.

    Parameters
    ----------
    model, data, y : the model, its prepared data and int32 labels in [0, n_classes)
    lam : float > 0
    z_init : int32 (n,) + latent_shape
        Latent initialisation: the first bound.
    solver_tol, solver_max_iter : bound solver's duality-gap tolerance (absolute) and iteration cap
    solver : "cutting-plane", "bcfw" or "dcd"
    random_bounds : "walk" or "subset"
    walk_steps : int
        Proposals per random-walk selection.
    bias : None, MultifoldBias, an object with ``select_valid`` (e.g. PottsBias), or
        callable(family, w_prev, z_prev) -> gain table

    Attributes
    ----------
    latent_shape : tuple
        Shape of one example's latent value (``()`` for one int).
    n_vars : int
        Latent variables per example (``prod(latent_shape)``); the cost table
        of a point has ``n * n_vars`` rows.
    width : int
        Columns of the cost table (the largest number of values of a variable).
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, lam: float, z_init: np.ndarray, *,
                 solver_tol: float, solver_max_iter: int, random_bounds: str = "walk",
                 walk_steps: int = 0, bias: Any = None, solver: str = "cutting-plane",
                 seed: int = 0):
        self.model, self.data, self.y = model, data, y
        self.lam = float(lam)
        self.n = int(model.n_samples(data))
        self.D = int(model.size_joint_feature(data))
        self.latent_shape = tuple(int(s) for s in model.latent_shape(data))
        self.n_vars = int(np.prod(self.latent_shape, dtype=np.int64))
        self.zshape = (self.n,) + self.latent_shape
        n_latent = np.asarray(model.n_latent(data))
        if n_latent.shape != self.zshape:
            raise ValueError(f"model.n_latent(data) must have shape {self.zshape} (examples x "
                             f"latent_shape), got {n_latent.shape}.")
        #: values of each latent variable, one entry per row of the cost table
        self.n_latent = np.ascontiguousarray(n_latent.reshape(-1), dtype=np.int32)
        self.width = int(self.n_latent.max())
        self.z_init = z_init
        self.solver_tol, self.solver_max_iter = solver_tol, solver_max_iter
        self.random_bounds = random_bounds
        self.walk_steps = walk_steps
        self.bias = bias
        self.idx = np.arange(self.n, dtype=np.int64)
        self.solver_kind = solver
        self.solver = self.make_solver(self.idx, tol=solver_tol, max_iter=solver_max_iter, table=True,
                                       seed=seed)
        self.w0 = np.zeros(self.D)
        self.z_prev: Optional[np.ndarray] = None    # the bound of the last iteration
        self.subset_size = 1
        self.solve_info: List[SolveInfo] = []
        self.kept_previous = 0                      # minimisations that kept w_{t-1}
        self._evals: dict = {}

    def make_solver(self, idx: np.ndarray, *, tol: float, max_iter: int, table: bool,
                    seed: int = 0):
        """A bound solver (cutting plane, BCFW or DCD) for the training examples ``idx``."""
        if self.solver_kind == "dcd":
            return DCD(self.model, self.data, self.y, idx, self.lam, tol=tol,
                       max_iter=max_iter, table=table, seed=seed)
        if self.solver_kind == "bcfw":
            return BCFW(self.model, self.data, self.y, idx, self.lam, tol=tol,
                        max_iter=max_iter, table=table, seed=seed)
        return CuttingPlane(self.model, self.data, self.y, idx, self.lam, tol=tol,
                            max_iter=max_iter, table=table)

    # -- evaluation at a point (cached by identity) -----------------------------------
    def _make_eval(self, w: np.ndarray, aug: Augmented) -> PointEval:
        n = self.n
        table = aug.table.reshape(n * self.n_vars, aug.table.shape[-1])
        costs = -table / n
        costs[~np.isfinite(table)] = np.inf
        touching = np.argmin(costs, axis=1).astype(np.int32)
        const = 0.5 * self.lam * float(w @ w) + math.fsum(aug.H) / n
        objective = const + table_value(costs, touching)
        return PointEval(w, aug, const, costs, touching.reshape(self.zshape), objective)

    def table_value(self, costs: np.ndarray, z: np.ndarray) -> float:
        """fsum of the costs of the configuration z (any shape with n * n_vars entries)."""
        return table_value(costs, np.reshape(z, -1))

    def at(self, w: np.ndarray) -> PointEval:
        e = self._evals.get(id(w))
        if e is None or e.w is not w:
            aug = self.model.loss_augmented(self.data, self.y, w, self.idx, table=True, phi=True)
            e = self._make_eval(w, aug)
            self._remember(e)
        return e

    def _remember(self, e: PointEval) -> None:
        self._evals.pop(id(e.w), None)
        self._evals[id(e.w)] = e
        while len(self._evals) > 3:      # w_{t-1}, w_t and one spare
            self._evals.pop(next(iter(self._evals)))

    # -- BoundFamily ----------------------------------------------------------------
    def objective(self, w: np.ndarray) -> float:
        return self.at(w).objective

    def bound_value(self, bound: np.ndarray, w: np.ndarray) -> float:
        e = self.at(w)
        return e.const + self.table_value(e.costs, bound)

    def _first(self, w: np.ndarray) -> Optional[Selection]:
        if self.z_prev is None and w is self.w0:
            return Selection(self.z_init.copy())
        return None

    def touching(self, w: np.ndarray) -> np.ndarray:
        first = self._first(w)
        return first.bound if first is not None else self.at(w).touching

    def minimize(self, bound: np.ndarray, w: np.ndarray) -> np.ndarray:
        e = self.at(w)
        w_new, aug_new, info = self.solver.solve(bound, w, e.aug)
        self.solve_info.append(info)
        self.z_prev = bound
        if w_new is w:
            return w
        e_new = self._make_eval(w_new, aug_new)
        self._remember(e_new)
        if e_new.const + self.table_value(e_new.costs, bound) > self.bound_value(bound, w):
            self.kept_previous += 1
            return w
        return w_new

    def random_valid(self, w: np.ndarray, threshold: float, rng: np.random.Generator
                     ) -> Selection:
        first = self._first(w)
        if first is not None:
            return first
        e = self.at(w)
        budget = budget_for(threshold, e.const, self.table_value(e.costs, e.touching))
        if self.random_bounds == "subset":
            order = rng.permutation(self.n)
            z, _, size = subset_select(e.costs, e.touching, self.z_prev, budget, order,
                                       self.subset_size)
            self.subset_size = size
            return Selection(z, proposals=size, accepted=int((z != self.z_prev).sum()))
        z, _, acc = sample_latent(e.costs, e.touching.reshape(-1), budget, self.walk_steps, rng,
                                  n_options=self.n_latent)
        return Selection(z.reshape(self.zshape), proposals=self.walk_steps, accepted=acc)

    def biased_valid(self, w: np.ndarray, threshold: float, bias: Any,
                     rng: np.random.Generator) -> Selection:
        first = self._first(w)
        if first is not None:
            return first
        e = self.at(w)
        budget = budget_for(threshold, e.const, self.table_value(e.costs, e.touching))
        if hasattr(bias, "select_valid"):        # a bias that maximises itself (not separable)
            return bias.select_valid(self, e, budget, rng)
        gain = np.asarray(bias(self, w, self.z_prev), dtype=np.float64)
        shapes = (e.costs.shape, self.zshape + (self.width,))
        if gain.shape not in shapes:
            raise ValueError(f"the bias must return a table of gains of shape {shapes[1]}, "
                             f"got shape {gain.shape}.")
        gain = gain.reshape(e.costs.shape)
        z, _ = lagrangian_select(gain, e.costs, budget, e.touching.reshape(-1))
        return Selection(z.reshape(self.zshape))
