"""k-means clustering by G-MM: the estimator, the bound family and the random-walk sampler."""
from ._bounds import KMeansBounds, balanced_bias, sample_assignment
from ._kmeans import GMMKMeans, kmeans_plusplus

__all__ = ["GMMKMeans", "KMeansBounds", "balanced_bias", "kmeans_plusplus", "sample_assignment"]
