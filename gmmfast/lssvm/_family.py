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
- random, "subset" (the paper's experimental scheme, :func:`subset_select`):
  take the examples in a random order, set the first |S_t| to their CCP
  values and keep the others' previous values, growing |S_t| from |S_{t-1}|
  until the bound is valid (an example's latent variables move together);
- biased: maximise a separable bias sum_i g_i(z_i) over the valid bounds by
  Lagrangian relaxation of the one budget (:func:`lagrangian_select`); the
  touching bound is always valid. The built-in separable bias is multi-fold
  MIL (:class:`MultifoldBias`). A bias object with a
  ``select_valid(family, point, budget, rng)`` method does its own
  maximisation over valid bounds (the Potts bias of the scene model,
  :class:`gmmfast.lssvm.PottsBias`, which is not separable).

Minimisation is by a warm-started bound solver (:class:`CuttingPlane`,
:class:`BCFW` or :class:`DCD`). It is solved to a tolerance, so ``minimize``
returns the previous solution when the solver's answer has a larger bound
value (as the core measures it): this keeps b_t(w_t) <= b_t(w_{t-1}) exactly.

The first bound is the user's latent initialisation: G-MM starts at w_0 = 0,
where every score is 0 and every configuration gives b_z(0) = F(0), so all
bounds touch and the initial z is a valid (touching) first bound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

from ..core import Selection
from ..latent import sample_latent, table_value
from ._bcfw import BCFW
from ._cutting_plane import CuttingPlane
from ._dcd import DCD
from .._validation import check_indices, float_dtype_for
from ._models import Augmented, check_joint_feature, check_n_latent, check_size_joint_feature
from ._select import budget_for, lagrangian_select, subset_select
from ._solver import BoundSolver, SolveInfo

__all__ = ["LSSVMBounds"]


@dataclass
class PointEval:
    """Everything about one point w that the family needs (one loss-augmented pass)."""

    w: np.ndarray
    aug: Augmented
    const: float           # lam/2 ||w||^2 + fsum(H) / n
    costs: np.ndarray      # c_i(z) = -s_i(z) / n, +inf beyond an example's latent values
    touching: np.ndarray   # argmin_z c_i(z) (first minimum): CCP's latent completion
    objective: float


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
        self.D = check_size_joint_feature(model, data)
        self.latent_shape = tuple(int(s) for s in model.latent_shape(data))
        self.n_vars = int(np.prod(self.latent_shape, dtype=np.int64))
        self.zshape = (self.n,) + self.latent_shape
        #: values of each latent variable, one entry per row of the cost table
        self.n_latent = check_n_latent(model, data, self.zshape).reshape(-1)
        self.width = int(self.n_latent.max())
        self.z_init = z_init
        z0 = z_init[0]
        check_joint_feature(model, data, int(y[0]), int(z0) if np.ndim(z0) == 0 else z0, self.D)
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
                    seed: int = 0) -> BoundSolver:
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
            return self._check_selection(bias.select_valid(self, e, budget, rng), bias)
        gain = self._check_gain(bias(self, w, self.z_prev), bias)
        shapes = (e.costs.shape, self.zshape + (self.width,))
        if gain.shape not in shapes:
            raise ValueError(f"the bias must return a table of gains of shape {shapes[1]}, "
                             f"got shape {gain.shape}.")
        gain = gain.reshape(e.costs.shape)
        z, _ = lagrangian_select(gain, e.costs, budget, e.touching.reshape(-1))
        return Selection(z.reshape(self.zshape))

    def _check_selection(self, sel: Any, bias: Any) -> Selection:
        """What ``bias.select_valid`` returned: a Selection whose bound is a latent
        configuration ((n,) + latent_shape integers, each within its variable's values),
        else a ValueError naming the bias (its validity is the core's check)."""
        who = f"{type(bias).__name__}.select_valid"
        if not isinstance(sel, Selection):
            raise ValueError(f"{who} must return a gmmfast.core.Selection, got "
                             f"{type(sel).__name__}.")
        sel.bound = check_indices(sel.bound, f"{who}(...).bound", self.zshape,
                                  self.n_latent.reshape(self.zshape))
        return sel

    @staticmethod
    def _check_gain(gain: Any, bias: Any) -> np.ndarray:
        """A callable bias's gain table as float64: real numbers only (strings or complex
        numbers were converted), else a ValueError naming the bias."""
        who = f"the gain table of the bias {getattr(bias, '__qualname__', type(bias).__name__)}"
        try:
            arr = np.asarray(gain)
        except (ValueError, TypeError) as exc:        # ragged nested sequences
            raise ValueError(f"{who} must be an array of numbers: {exc}") from None
        float_dtype_for(arr.dtype, who)
        return arr.astype(np.float64, copy=False)
