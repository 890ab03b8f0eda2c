"""Clustering quality measures: the Centroid Index and the k-means objective per point.

The Centroid Index (Fränti, Rezaei, Zhao, "Centroid index: cluster level
similarity measure", Pattern Recognition 47(9), 2014) counts the clusters a
solution gets wrong at the cluster level: map every centroid of one solution
to its nearest centroid of the other; the centroids of the other that nothing
maps to ("orphans") are clusters that are missing. Taken both ways::

    CI_1(A -> B) = #{ b in B : no a in A has b as its nearest centroid }
    CI(A, B)     = max(CI_1(A -> B), CI_1(B -> A))

CI = 0 means the cluster structure is right (one-to-one), whatever the
objective value; CI = 3 on D31 means three true clusters are not found.
"""
from __future__ import annotations

from typing import Any, Tuple, Union

import numpy as np

from ._validation import check_array, check_data

__all__ = ["centroid_index", "centroid_index_one_way", "centroids_from_labels", "sse_per_point"]


def _check_pair(A: Any, B: Any, names: Tuple[str, str] = ("A", "B")
                ) -> Tuple[np.ndarray, np.ndarray]:
    # finite and small enough for squared distances (beyond, they overflow to inf and the
    # nearest centroid becomes the first)
    A = check_data(A, names[0], dtype=np.float64)
    B = check_data(B, names[1], dtype=np.float64)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of features, "
                         f"got {A.shape[1]} and {B.shape[1]}.")
    return A, B


def _orphans(A: np.ndarray, B: np.ndarray) -> int:
    """Centroids of B that are the nearest centroid of no centroid of A."""
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)   # (|A|, |B|), small: centroids only
    hit = np.zeros(B.shape[0], dtype=bool)
    hit[np.argmin(d, axis=1)] = True
    return int(B.shape[0] - hit.sum())


def centroid_index_one_way(A: Any, B: Any) -> int:
    """CI_1(A -> B): the centroids of B that no centroid of A maps to (its nearest).

    Parameters
    ----------
    A : array-like of shape (k_A, n_features)
    B : array-like of shape (k_B, n_features)

    Returns
    -------
    int in [max(0, k_B - k_A), k_B - 1]
    """
    A, B = _check_pair(A, B)
    return _orphans(A, B)


def centroid_index(A: Any, B: Any, *, both: bool = False) -> Union[int, Tuple[int, int, int]]:
    """Centroid Index of Fränti, Rezaei and Zhao (2014) between two sets of centroids.

    Parameters
    ----------
    A, B : array-like of shape (k_A, n_features), (k_B, n_features)
        E.g. found centers and ground-truth centroids (see :func:`centroids_from_labels`).
    both : bool, default=False
        Also return the two one-way values.

    Returns
    -------
    ci : int
        max(CI_1(A -> B), CI_1(B -> A)); 0 when the clusters correspond one to one.
    (ci, ci_ab, ci_ba) : tuple of int
        If ``both``.
    """
    A, B = _check_pair(A, B)
    ab, ba = _orphans(A, B), _orphans(B, A)
    ci = max(ab, ba)
    return (ci, ab, ba) if both else ci


def centroids_from_labels(X: Any, labels: Any) -> np.ndarray:
    """Mean of the points of each label, in the order of ``np.unique(labels)``."""
    X = check_array(X, "X", dtype=np.float64)
    try:
        labels = np.asarray(labels)
    except ValueError as exc:        # ragged nested sequences
        raise ValueError(f"labels must be {X.shape[0]} integers: {exc}") from None
    if labels.shape != (X.shape[0],) or labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be {X.shape[0]} integers, got {labels.dtype} of shape "
                         f"{labels.shape}.")
    uniq, inv = np.unique(labels, return_inverse=True)
    sums = np.zeros((uniq.shape[0], X.shape[1]))
    np.add.at(sums, inv, X)
    return sums / np.bincount(inv)[:, None]


def sse_per_point(X: Any, centers: Any) -> float:
    """The k-means objective divided by n: mean squared distance to the nearest center."""
    X, C = _check_pair(X, centers, ("X", "centers"))
    best = np.full(X.shape[0], np.inf)
    for c in C:   # O(n d) memory, whatever k
        np.minimum(best, ((X - c) ** 2).sum(axis=1), out=best)
    return float(best.mean())
