"""k-means clustering: G-MM (GMMKMeans), the bound family, the random-walk sampler, the seeding
functions, and the drop-in KMeans with scikit-learn's semantics."""

from .._lazy import attach as _attach

#: Public names -> the module that defines them, imported on first use (PEP 562:
#: importing this package loads none of them).
_NAMES = {"KMeansBounds": "._family", "balanced_bias": "._family", "inertia": "._fit",
          "initial_centers": "._fit", "GMMKMeans": "._gmm_kmeans", "kmeans_parallel": "._init",
          "kmeans_plusplus": "._init", "KMeans": "._kmeans", "sample_assignment": "._samplers"}

__all__ = ["GMMKMeans", "KMeans", "KMeansBounds", "balanced_bias", "inertia",
           "initial_centers", "kmeans_parallel", "kmeans_plusplus", "sample_assignment"]

__getattr__, __dir__ = _attach(__name__, (), _NAMES)
