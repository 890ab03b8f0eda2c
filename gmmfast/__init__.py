"""gmmfast: Generalized Majorization-Minimization (Naderi et al., ICML 2019) with fast kernels."""
import os as _os

try:    # the compiled kernels: missing when this is a source tree nobody built
    from ._kernels import _common as _built  # noqa: F401
except ImportError as _exc:     # pragma: no cover - exercised by a test in a subprocess
    raise ImportError(
        f"gmmfast is being imported from its source tree {_os.path.dirname(__file__)}, whose "
        "compiled kernels are not built: run `pip install -e .` in "
        f"{_os.path.dirname(_os.path.dirname(__file__))} to build them in place, or run "
        "Python from another directory to use the installed gmmfast.") from _exc
from . import potts
from ._kernel_info import kernel_info
from .cluster import GMMKMeans, KMeans, sample_assignment
from .core import BoundFamily, GMMResult, History, Selection, generalized_mm
from .lssvm import LatentMulticlassModel, LatentSSVM, RegionPartModel

from ._version import __version__

__all__ = ["BoundFamily", "GMMKMeans", "GMMResult", "History", "KMeans", "LatentMulticlassModel",
           "LatentSSVM", "RegionPartModel", "Selection", "generalized_mm", "kernel_info", "potts",
           "sample_assignment", "__version__"]
