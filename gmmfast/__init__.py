"""gmmfast: Generalized Majorization-Minimization (Naderi et al., ICML 2019) with fast kernels."""
from .cluster import GMMKMeans, sample_assignment
from . import potts  # noqa: F401  (Potts energy and alpha-expansion on grids)
from .core import BoundFamily, GMMResult, History, Selection, generalized_mm

__version__ = "0.1.0"

__all__ = ["BoundFamily", "GMMKMeans", "GMMResult", "History", "Selection",
           "generalized_mm", "sample_assignment", "__version__"]
