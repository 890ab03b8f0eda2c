"""The interface of the bound solvers: what they share and the record of one solve.

A bound solver minimises the LS-SVM bound b_z(w) of one training set (the
examples ``idx``) for the latent values z it is given, warm-started from the
previous solve; :class:`CuttingPlane`, :class:`BCFW` and :class:`DCD` are the
three. :class:`BoundSolver` holds the validated training set and the one
loss-augmented pass every solver evaluates its points with; a subclass defines
``solve(z, w_start, aug_start=None) -> (w, Augmented, SolveInfo)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._validation import check_int, check_real
from ._models import Augmented, LatentModel, check_weights

__all__ = ["BoundSolver", "SolveInfo", "check_solver_args"]


@dataclass
class SolveInfo:
    """Statistics of one bound minimisation."""

    n_iter: int          # planes added (= loss-augmented passes after the start point)
    gap: float           # final certified duality gap P(w) - D(alpha)
    primal: float        # P(w) of the returned w (solver's evaluation)
    dual: float
    n_planes: int        # working-set size at the end
    converged: bool


def check_solver_args(model: Any, data: Any, y: Any, idx: Any, lam: float, tol: float,
                      max_iter: int) -> Tuple[Any, np.ndarray, np.ndarray, float, float, int]:
    """Validate a bound solver's arguments: returns (data, y as int32 labels of every example,
    idx as a non-empty int64 array of example indices, lam, tol, max_iter). The model checks
    y and idx again at every pass (O(n) with numpy)."""
    lam = check_real(lam, "lam", 0.0, low_open=True)
    tol = check_real(tol, "tol", 0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    if not isinstance(model, LatentModel):
        raise ValueError(f"model must be a gmmfast.lssvm.LatentModel, got {model!r:.80}.")
    data, y, idx = model._batch(data, y, idx)
    if idx.size == 0:
        raise ValueError("idx must be a non-empty 1-D array of example indices, got none.")
    R = model.feature_norm_bound(data)
    if R is not None and not np.isfinite(16.0 * R * R / lam):
        # the planes' Gram entries are up to 4 R^2; over lam, with room for their differences
        raise ValueError(f"the joint features of X (norms up to {R:.3g}) overflow the solver's "
                         f"arithmetic at lam={lam!r}: 16 R^2 / lam must be finite; scale X or "
                         "use a larger lam.")
    return data, y, idx, lam, tol, max_iter


class BoundSolver:
    """What the bound solvers share: the validated training set (model, data, y, the examples
    ``idx``), lam, the stopping rule (tol, max_iter), and one loss-augmented pass at a point.

    Subclasses define ``solve`` (below).
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, idx: np.ndarray, lam: float, *,
                 tol: float, max_iter: int, table: bool = False):
        data, y, idx, lam, tol, max_iter = check_solver_args(model, data, y, idx, lam, tol,
                                                             max_iter)
        self.model, self.data, self.y, self.idx = model, data, y, idx
        self.lam, self.tol, self.max_iter = lam, tol, max_iter
        self.table = bool(table)
        self.m = int(idx.shape[0])
        self.D = int(model.size_joint_feature(data))
        self.n_passes = 0

    def evaluate(self, w: np.ndarray) -> Augmented:
        """One loss-augmented pass at w over the examples (the plane and the primal value)."""
        self.n_passes += 1
        return self.model.loss_augmented(self.data, self.y, w, self.idx, table=self.table, phi=True)

    def _start(self, w_start: Any, aug_start: Optional[Augmented]
               ) -> Tuple[np.ndarray, Augmented]:
        """The start point checked (a vector of D reals, the same object when it is one already
        in float64) and its pass (evaluated unless given)."""
        w_start = check_weights(w_start, self.D, "w_start")
        if aug_start is None:
            return w_start, self.evaluate(w_start)
        if not isinstance(aug_start, Augmented):
            raise ValueError(f"aug_start must be None or the Augmented pass at w_start, got "
                             f"{type(aug_start).__name__}.")
        return w_start, aug_start

    def solve(self, z: np.ndarray, w_start: np.ndarray, aug_start: Optional[Augmented] = None
              ) -> Tuple[np.ndarray, Augmented, SolveInfo]:
        """Minimise b_z from ``w_start``; returns the best point, its pass and statistics.

        ``z`` holds the latent values of the examples ``idx`` (in that order);
        ``aug_start`` is the pass at ``w_start`` if already known.
        """
        raise NotImplementedError
