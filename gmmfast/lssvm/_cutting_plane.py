"""Minimising one LS-SVM bound: the 1-slack cutting-plane method (Joachims, Finley, Yu 2009).

A bound fixes the latent values z of the examples ``idx`` (m of them)::

    b_z(w) = lam/2 ||w||^2 + 1/m sum_i [ max_{y,z'} (w.phi(x_i,y,z') + Delta(y_i,y)) - w.phi(x_i,y_i,z_i) ]

In the 1-slack form this is min over w, xi of lam/2 ||w||^2 + xi subject to
xi >= b_k + w.a_k for every joint labelling k, where a labelling
(y^_i, z^_i)_i gives b_k = 1/m sum Delta(y_i, y^_i) and
a_k = P_k - psi(z), with P_k = 1/m sum phi(x_i, y^_i, z^_i) and
psi(z) = 1/m sum phi(x_i, y_i, z_i). The method keeps a working set of
planes, solves the dual of the restricted problem (a QP over the simplex,
:func:`solve_simplex_qp`),
adds the most violated plane at the new w (loss-augmented inference) and
stops when the duality gap ``min_w P(w) - D(alpha)`` over the evaluated
points is at most ``tol``. D(alpha) is a lower bound on min b_z for any
alpha on the simplex (weak duality), so the gap is a certificate.

Warm starts. The planes are stored as (P_k, b_k), which do not depend on z:
every stored plane is a valid cut for every bound of the family, so the
working set and the dual variables carry over from one G-MM iteration to the
next and only a = P - psi(z) is recomputed. The returned w is the best
evaluated point, and the start point is evaluated first, so the answer is
never worse (by the solver's own evaluation) than the warm start.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .._validation import check_int
from ._models import Augmented
from ._simplex_qp import _qp
from ._solver import BoundSolver, SolveInfo

__all__ = ["CuttingPlane"]


class CuttingPlane(BoundSolver):
    """The 1-slack cutting-plane solver for the bounds of one training set.

    Parameters
    ----------
    model : LatentModel
    data, y : the model's data and int32 labels (all examples)
    idx : int64 array
        The examples of this training set (all of them, or the other folds).
    lam : float
        Regularisation lambda.
    tol : float
        Absolute duality-gap tolerance.
    max_iter : int
        Cap on planes added per solve.
    table : bool
        Ask the passes for the latent score table (the G-MM family caches it).
    max_planes, inactive_limit : int
        Working-set cap; a plane inactive (alpha = 0) for ``inactive_limit``
        consecutive QPs is dropped.
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, idx: np.ndarray, lam: float, *,
                 tol: float, max_iter: int, table: bool = False, max_planes: int = 500,
                 inactive_limit: int = 50):
        super().__init__(model, data, y, idx, lam, tol=tol, max_iter=max_iter, table=table)
        self.max_planes = check_int(max_planes, "max_planes", 1)
        self.inactive_limit = check_int(inactive_limit, "inactive_limit", 0)
        self.P = np.empty((0, self.D))   # plane feature means P_k
        self.b = np.empty(0)             # plane losses b_k
        self.age = np.empty(0, dtype=np.int64)
        self.alpha: Optional[np.ndarray] = None   # [zero plane, planes...]

    def primal(self, w: np.ndarray, aug: Augmented, psi: np.ndarray) -> float:
        """P(w) = lam/2 ||w||^2 + 1/m sum_i H_i - psi.w."""
        return 0.5 * self.lam * float(w @ w) + float(aug.H.sum()) / self.m - float(psi @ w)

    def _add(self, aug: Augmented) -> None:
        self.P = np.vstack([self.P, aug.phi_sum[None, :] / self.m])
        self.b = np.append(self.b, aug.loss_sum / self.m)
        self.age = np.append(self.age, 0)
        if self.alpha is not None:
            self.alpha = np.append(self.alpha, 0.0)

    def _prune(self) -> None:
        keep = self.age <= self.inactive_limit
        if keep.sum() > self.max_planes:
            order = np.argsort(self.age, kind="stable")
            keep = np.zeros_like(keep)
            keep[order[: self.max_planes]] = True
        if keep.all():
            return
        drop_mass = float(self.alpha[1:][~keep].sum())
        self.P, self.b, self.age = self.P[keep], self.b[keep], self.age[keep]
        self.alpha = np.concatenate([[self.alpha[0] + drop_mass], self.alpha[1:][keep]])

    def solve(self, z: np.ndarray, w_start: np.ndarray, aug_start: Optional[Augmented] = None
              ) -> Tuple[np.ndarray, Augmented, SolveInfo]:
        """Minimise b_z from ``w_start`` by cutting planes (see :meth:`BoundSolver.solve`)."""
        lam, m = self.lam, self.m
        psi = self.model.phi_sum(self.data, self.y, z, self.idx) / m
        w_start, aug_start = self._start(w_start, aug_start)
        best_w, best_aug = w_start, aug_start
        best_p = self.primal(w_start, aug_start, psi)
        self._add(aug_start)
        if self.alpha is None:
            self.alpha = np.zeros(1 + self.b.shape[0])
            self.alpha[0] = 1.0
        A = self.P - psi                                  # rows a_k (zero plane excluded)
        G = np.zeros((A.shape[0] + 1, A.shape[0] + 1))
        G[1:, 1:] = A @ A.T
        dual, gap, it, converged = -np.inf, np.inf, 0, False
        while True:
            bb = np.concatenate([[0.0], self.b])
            # the restricted QP needs no more accuracy than a fraction of the current gap
            qp_tol = 0.1 * self.tol if not np.isfinite(gap) else max(0.1 * self.tol, 0.01 * gap)
            _qp(G, bb, lam, self.alpha, qp_tol, 10_000_000)
            a = self.alpha[1:]
            w = -(a @ A) / lam
            dual = float(a @ self.b) - 0.5 * lam * float(w @ w)
            gap = best_p - dual
            if gap <= self.tol:
                converged = True
                break
            if it >= self.max_iter:
                break
            aug = self.evaluate(w)
            p = self.primal(w, aug, psi)
            if p < best_p:
                best_w, best_aug, best_p = w, aug, p
            it += 1
            gap = best_p - dual
            if gap <= self.tol:
                converged = True
                break
            active = self.alpha[1:] > 0
            self.age[active] = 0
            self.age[~active] += 1
            n_before = self.b.shape[0]
            self._prune()
            if self.b.shape[0] != n_before:
                A = self.P - psi
                G = np.zeros((A.shape[0] + 1, A.shape[0] + 1))
                G[1:, 1:] = A @ A.T
            self._add(aug)
            a_new = self.P[-1] - psi
            row = A @ a_new
            A = np.vstack([A, a_new[None, :]])
            k = A.shape[0]
            G2 = np.zeros((k + 1, k + 1))
            G2[:k, :k] = G
            G2[k, 1:k] = row
            G2[1:k, k] = row
            G2[k, k] = float(a_new @ a_new)
            G = G2
        info = SolveInfo(n_iter=it, gap=float(gap), primal=float(best_p), dual=float(dual),
                         n_planes=int(self.b.shape[0]), converged=converged)
        return best_w, best_aug, info
