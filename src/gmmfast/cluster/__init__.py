"""k-means clustering by G-MM: the estimator, the bound family and the random-walk sampler."""
from ._bounds import KMeansBounds, balanced_bias, sample_assignment
from ._init import kmeans_parallel, kmeans_plusplus
from ._kmeans import GMMKMeans

__all__ = ["GMMKMeans", "KMeansBounds", "balanced_bias", "kmeans_parallel", "kmeans_plusplus",
           "sample_assignment"]
