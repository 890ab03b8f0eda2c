"""k-means clustering: G-MM (GMMKMeans), the bound family, the random-walk sampler, the seeding
functions, and the drop-in KMeans with scikit-learn's semantics."""
from ._family import KMeansBounds, balanced_bias
from ._fit import inertia, initial_centers
from ._gmm_kmeans import GMMKMeans
from ._init import kmeans_parallel, kmeans_plusplus
from ._kmeans import KMeans
from ._samplers import sample_assignment

__all__ = ["GMMKMeans", "KMeans", "KMeansBounds", "balanced_bias", "inertia",
           "initial_centers", "kmeans_parallel", "kmeans_plusplus", "sample_assignment"]
