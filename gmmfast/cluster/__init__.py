"""k-means clustering: G-MM (GMMKMeans), the bound family, the random-walk sampler, and the
drop-in KMeans with scikit-learn's semantics."""
from ._bounds import KMeansBounds, balanced_bias, sample_assignment
from ._init import kmeans_parallel, kmeans_plusplus
from ._kmeans import GMMKMeans
from ._sklearn import KMeans

__all__ = ["GMMKMeans", "KMeans", "KMeansBounds", "balanced_bias", "kmeans_parallel",
           "kmeans_plusplus", "sample_assignment"]
