"""The multi-fold MIL bias of G-MM for latent structural SVMs (paper section 4.3)."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import numpy as np

from .._validation import NONE, Interval, validate_params
from ._solver import BoundSolver, SolveInfo

if TYPE_CHECKING:
    from ._family import LSSVMBounds

__all__ = ["MultifoldBias"]


class MultifoldBias:
    """Multi-fold MIL bias (paper section 4.3): g_i(z) = w^(k).phi(x_i, y_i, z) for i in fold k.

    w^(k) minimises the bound of the other K - 1 folds with their latent values
    fixed at the previous configuration z^{t-1}; maximising g_i is minimising
    the structured hinge loss of w^(k) on example i (the loss-augmented term
    does not depend on z). Fold solvers are warm-started across iterations.

    Parameters
    ----------
    n_folds : int >= 2
        Folds K (at most one per example: min(K, n) are used).
    tol, max_iter : optional
        Duality-gap tolerance (absolute, > 0) and iteration cap (>= 1) of the fold models'
        bound solvers; by default those of the family.

    The parameters are checked at the start of :meth:`LatentSSVM.fit` (before any pass over
    the data), as PottsBias's, and again by :meth:`setup`.
    """

    _parameter_constraints: dict = {
        "n_folds": [Interval("int", 2)],
        "tol": [NONE, Interval("real", 0, None, closed="neither")],
        "max_iter": [NONE, Interval("int", 1)],
    }

    def __init__(self, n_folds: int = 10, *, tol: Optional[float] = None,
                 max_iter: Optional[int] = None):
        self.n_folds = n_folds
        self.tol = tol
        self.max_iter = max_iter
        self._solvers: Optional[List[BoundSolver]] = None
        self._w: Optional[List[np.ndarray]] = None
        self.folds: Optional[np.ndarray] = None
        self.fold_info: List[List[SolveInfo]] = []
        self.last_gain: Optional[np.ndarray] = None

    def check_params(self) -> None:
        """n_folds, tol and max_iter as documented, else a ValueError naming the parameter
        (as ``MultifoldBias n_folds`` etc.: not LatentSSVM's n_folds, tol, max_iter)."""
        names = {f"MultifoldBias {k}": k for k in self._parameter_constraints}
        validate_params({shown: getattr(self, k) for shown, k in names.items()},
                        {shown: self._parameter_constraints[k] for shown, k in names.items()})

    def check_n_samples(self, n: int) -> None:
        """At least 2 folds of examples: n >= 2 (n_folds >= 2 is a parameter's check)."""
        if min(self.n_folds, n) < 2:
            raise ValueError(f"the multifold bias needs at least 2 folds and 2 examples, got "
                             f"n_folds={self.n_folds} with {n} examples.")

    def setup(self, family: "LSSVMBounds", rng: np.random.Generator) -> None:
        self.check_params()
        n = family.n
        self.check_n_samples(n)
        K = min(self.n_folds, n)
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
