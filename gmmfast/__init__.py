"""gmmfast: Generalized Majorization-Minimization (Naderi et al., ICML 2019) with fast kernels."""
from .cluster import GMMKMeans, sample_assignment
from .core import BoundFamily, GMMResult, History, Selection, generalized_mm
from .lssvm import LatentMulticlassModel, LatentSSVM  # noqa: F401

__version__ = "0.1.0"

__all__ = ["BoundFamily", "GMMKMeans", "GMMResult", "History", "Selection",
           "generalized_mm", "sample_assignment", "__version__"]
