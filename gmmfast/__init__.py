"""gmmfast: Generalized Majorization-Minimization (Naderi et al., ICML 2019) with fast kernels.

The public names load lazily (PEP 562, :mod:`gmmfast._lazy`): ``import gmmfast`` checks
that the compiled kernels are there and imports nothing else; ``gmmfast.GMMKMeans`` (or
``from gmmfast import GMMKMeans``) imports :mod:`gmmfast.cluster` when first used, and
scikit-learn, dask and matplotlib are imported only by the code that needs them.
"""
import os as _os

try:    # the compiled kernels: missing when this is a source tree nobody built
    from ._kernels import _common as _built  # noqa: F401
except ImportError as _exc:     # pragma: no cover - exercised by a test in a subprocess
    raise ImportError(
        f"gmmfast is being imported from its source tree {_os.path.dirname(__file__)}, whose "
        "compiled kernels are not built: run `pip install -e .` in "
        f"{_os.path.dirname(_os.path.dirname(__file__))} to build them in place, or run "
        "Python from another directory to use the installed gmmfast.") from _exc
from ._lazy import attach as _attach

from ._version import __version__

__all__ = ["BoundFamily", "GMMKMeans", "GMMResult", "History", "KMeans", "LatentMulticlassModel",
           "LatentSSVM", "RegionPartModel", "Selection", "generalized_mm", "kernel_info", "potts",
           "sample_assignment", "__version__"]

#: Subpackages and modules loaded on first access (``gmmfast.datasets``, ...).
_SUBMODULES = ["cli", "cluster", "core", "datasets", "experiments", "latent", "lssvm", "metrics",
               "potts"]
#: Public names -> the module that defines them.
_NAMES = {"kernel_info": "._kernel_info",
          "GMMKMeans": ".cluster", "KMeans": ".cluster", "sample_assignment": ".cluster",
          "BoundFamily": ".core", "GMMResult": ".core", "History": ".core",
          "Selection": ".core", "generalized_mm": ".core",
          "LatentMulticlassModel": ".lssvm", "LatentSSVM": ".lssvm",
          "RegionPartModel": ".lssvm"}

__getattr__, __dir__ = _attach(__name__, _SUBMODULES, _NAMES)
