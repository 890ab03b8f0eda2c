"""Minimising one LS-SVM bound by dual coordinate ascent over per-example working sets.

The n-slack dual of the bound b_z over the examples ``idx`` (m of them): example
i has a distribution alpha_i over labellings (y, z'), and
w(alpha) = (Psi(z) - sum_i sum_k alpha_ik phi(x_i, y_k, z'_k)) / (lam m), with
Psi(z) = sum_i phi(x_i, y_i, z_i); the dual value is
D = 1/m sum_i sum_k alpha_ik Delta(y_i, y_k) - lam/2 ||w||^2. Each example keeps a
small working set of labellings; a visit adds the loss-augmented argmax (and the
other violating labellings while there is room) and then improves the example's
sub-problem over its set (the other examples fixed) by a few pairwise steps with
exact line search. With one candidate per example this is
the sequential dual method that liblinear uses for the Crammer-Singer SVM
(Keerthi, Sundararajan, Chang, Hsieh, Lin, KDD 2008); it converges linearly,
where block-coordinate Frank-Wolfe (one step towards one corner per visit)
is sublinear.

As for the other solvers the dual state does not depend on z, so it is a
feasible dual point of every bound of the family and warm starts across G-MM
iterations are exact. As in liblinear, an example met optimal in its block is
shrunk (skipped) until the remaining ones converge. The epochs report an
estimate of the duality gap (the block gaps met during the pass); when it falls
below ``tol`` on an epoch over every example, the point is evaluated by one full
loss-augmented pass, and the run stops only when that certified gap (best
primal value minus D) is at most ``tol``. The best
evaluated point is returned; the start point is evaluated first.

Needs a model with ``dcd_epoch`` and ``dcd_state`` (LatentMulticlassModel).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._validation import INT32_MAX, check_indices
from ._bcfw import BCFW
from ._models import Augmented
from ._solver import SolveInfo

__all__ = ["DCD", "WorkingSets"]

#: labellings kept per example
WORKING_SET_SIZE = 16
#: pairwise steps per visit (1 to 5 reached a certified gap in the same time on a Crammer-Singer
#: SVM, 50 were slower)
MAX_INNER = 3
#: first shrinking tolerance, as a fraction of the first epoch's gap estimate
SHRINK_START = 0.1


@dataclass
class WorkingSets:
    """Per-example labellings (y, z) and their dual mass; ``n[r]`` of the ``cap`` slots used."""

    y: np.ndarray       # (m, cap) int32
    z: np.ndarray       # (m, cap) int32
    alpha: np.ndarray   # (m, cap) float64
    n: np.ndarray       # (m,) int32

    @classmethod
    def at_labels(cls, labels: np.ndarray, z: np.ndarray, cap: int) -> "WorkingSets":
        """All mass on each example's own labelling (y_i, z_i): w(alpha) = 0."""
        m = labels.shape[0]
        ws = cls(np.zeros((m, cap), np.int32), np.zeros((m, cap), np.int32),
                 np.zeros((m, cap)), np.ones(m, np.int32))
        ws.y[:, 0] = labels
        ws.z[:, 0] = z
        ws.alpha[:, 0] = 1.0
        return ws


def check_dcd_model(model: Any) -> None:
    """Raise a ValueError unless ``model`` has the kernels the DCD solver needs."""
    if not (callable(getattr(model, "dcd_epoch", None)) and
            callable(getattr(model, "dcd_state", None))):
        raise ValueError(f"solver='dcd' needs a model with dcd_epoch and dcd_state "
                         f"(LatentMulticlassModel); {type(model).__name__} has not. "
                         "Use solver='cutting-plane' or 'bcfw'.")


class DCD(BCFW):
    """Dual coordinate ascent for the bounds of one training set (see module docstring).

    Parameters are those of :class:`BCFW` (``max_iter`` caps the epochs per solve).
    """

    def __init__(self, model: Any, *args: Any, **kwargs: Any):
        check_dcd_model(model)
        super().__init__(model, *args, **kwargs)
        self.ws: Optional[WorkingSets] = None

    def _w_dual(self, psi_sum: np.ndarray) -> Tuple[np.ndarray, float]:
        P, ell = self.model.dcd_state(self.data, self.y, self.idx, self.ws)
        w = (psi_sum - P) / (self.lam * self.m)
        return w, ell / self.m - 0.5 * self.lam * float(w @ w)

    def solve(self, z: np.ndarray, w_start: np.ndarray, aug_start: Optional[Augmented] = None
              ) -> Tuple[np.ndarray, Augmented, SolveInfo]:
        # one latent int per example (the model checks each against its latent values)
        z = check_indices(z, "z", (self.m,), INT32_MAX)
        psi_sum = self.model.phi_sum(self.data, self.y, z, self.idx)
        w_start, aug_start = self._start(w_start, aug_start)
        if self.ws is None:
            self.ws = WorkingSets.at_labels(self.y[self.idx], z, WORKING_SET_SIZE)
        best_w, best_aug = w_start, aug_start
        best_p = self.primal(w_start, aug_start, psi_sum)
        w, dual = self._w_dual(psi_sum)
        block_gap = np.zeros(self.m)
        active = np.ones(self.m, dtype=bool)
        epochs, eps_shrink = 0, np.inf
        while best_p - dual > self.tol and epochs < self.max_iter:
            visit = np.flatnonzero(active)
            order = visit[self.rng.permutation(visit.shape[0])]
            estimate = self.model.dcd_epoch(self.data, self.y, self.idx, z, order, w, self.ws,
                                            block_gap, self.lam, MAX_INNER)
            epochs += 1
            full = visit.shape[0] == self.m
            if full and not np.isfinite(eps_shrink):
                eps_shrink = max(self.tol, SHRINK_START * estimate)
            # shrinking (as liblinear): examples met optimal are skipped until the active
            # ones converge to eps_shrink; then everyone is visited and eps_shrink halves
            active[order[block_gap[order] <= 0.0]] = False
            if not full and estimate <= eps_shrink:
                active[:] = True
                eps_shrink = max(self.tol, 0.5 * eps_shrink)
            if (not full or estimate > self.tol) and epochs < self.max_iter:
                continue
            w, dual = self._w_dual(psi_sum)    # exact, free of the passes' rounding
            aug = self.evaluate(w)
            p = self.primal(w, aug, psi_sum)
            if p < best_p:     # a copy: the next epochs move w in place
                best_w, best_aug, best_p = w.copy(), aug, p
            active[:] = True
        converged = best_p - dual <= self.tol
        info = SolveInfo(n_iter=epochs, gap=float(best_p - dual), primal=float(best_p),
                         dual=float(dual), n_planes=0, converged=converged)
        return best_w, best_aug, info
