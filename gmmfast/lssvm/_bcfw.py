"""Minimising one LS-SVM bound by block-coordinate Frank-Wolfe (Lacoste-Julien et al. 2013).

The alternative to the cutting plane (:mod:`._cutting_plane`), for the same
bound b_z(w) over the examples ``idx`` (m of them). The dual variables of
example i are a distribution alpha_i over labellings (y, z'); the solver
keeps P_i = sum alpha_i(y, z') phi(x_i, y, z') and l_i = sum alpha_i Delta(y_i, y) / m,
so that w(alpha) = (Psi(z) - sum_i P_i) / (lam m) with Psi(z) = sum_i phi(x_i, y_i, z_i)
and the dual value is D = sum_i l_i - lam/2 ||w||^2. Neither P_i nor l_i depends
on z, so the state is a feasible dual point of every bound of the family:
warm starts across G-MM iterations are exact, as for the cutting plane.

One epoch visits the examples in a random order; each step is one
loss-augmented inference and the exact line search towards its answer.
After each epoch w(alpha) is recomputed from the state, evaluated by one
full pass (the primal value b_z(w)), and the run stops when the best primal
value minus D is at most ``tol`` (a certified duality gap). The best
evaluated point is returned, and the start point is evaluated first.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ._models import Augmented
from ._solver import BoundSolver, SolveInfo

__all__ = ["BCFW"]


class BCFW(BoundSolver):
    """Block-coordinate Frank-Wolfe for the bounds of one training set (see module docstring).

    Parameters
    ----------
    model, data, y, idx, lam, tol, table : as :class:`CuttingPlane`
    max_iter : int
        Cap on epochs per solve.
    seed : int
        Seed of the visiting orders.
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, idx: np.ndarray, lam: float, *,
                 tol: float, max_iter: int, table: bool = False, seed: int = 0):
        super().__init__(model, data, y, idx, lam, tol=tol, max_iter=max_iter, table=table)
        self.rng = np.random.default_rng(seed)
        self.P: Optional[np.ndarray] = None
        self.ell: Optional[np.ndarray] = None

    def primal(self, w: np.ndarray, aug: Augmented, psi_sum: np.ndarray) -> float:
        return 0.5 * self.lam * float(w @ w) + (float(aug.H.sum()) - float(psi_sum @ w)) / self.m

    def solve(self, z: np.ndarray, w_start: np.ndarray, aug_start: Optional[Augmented] = None
              ) -> Tuple[np.ndarray, Augmented, SolveInfo]:
        lam, m = self.lam, self.m
        psi_sum = self.model.phi_sum(self.data, self.y, z, self.idx)
        w_start, aug_start = self._start(w_start, aug_start)
        if self.P is None:   # alpha_i on the fixed labelling (y_i, z_i): w(alpha) = 0
            self.P = self.model.joint_features(self.data, self.y, z, self.idx)
            self.ell = np.zeros(m)
        best_w, best_aug = w_start, aug_start
        best_p = self.primal(w_start, aug_start, psi_sum)
        epochs, converged = 0, False
        w = (psi_sum - self.P.sum(axis=0)) / (lam * m)
        dual = float(self.ell.sum()) - 0.5 * lam * float(w @ w)
        while True:
            if best_p - dual <= self.tol:
                converged = True
                break
            if epochs >= self.max_iter:
                break
            order = self.rng.permutation(m).astype(np.int64)
            self.model.bcfw_epoch(self.data, self.y, self.idx, order, w.copy(), self.P,
                                  self.ell, lam)
            epochs += 1
            w = (psi_sum - self.P.sum(axis=0)) / (lam * m)
            dual = float(self.ell.sum()) - 0.5 * lam * float(w @ w)
            aug = self.evaluate(w)
            p = self.primal(w, aug, psi_sum)
            if p < best_p:
                best_w, best_aug, best_p = w, aug, p
        info = SolveInfo(n_iter=epochs, gap=float(best_p - dual), primal=float(best_p),
                         dual=float(dual), n_planes=0, converged=converged)
        return best_w, best_aug, info
