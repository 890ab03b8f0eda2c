"""gmmfast: Generalized Majorization-Minimization (Naderi et al., ICML 2019) with fast kernels."""
from . import potts
from .cluster import GMMKMeans, KMeans, sample_assignment
from .core import BoundFamily, GMMResult, History, Selection, generalized_mm
from .lssvm import LatentMulticlassModel, LatentSSVM, RegionPartModel

__version__ = "0.1.0"

__all__ = ["BoundFamily", "GMMKMeans", "GMMResult", "History", "KMeans", "LatentMulticlassModel",
           "LatentSSVM", "RegionPartModel", "Selection", "generalized_mm", "potts",
           "sample_assignment", "__version__"]
