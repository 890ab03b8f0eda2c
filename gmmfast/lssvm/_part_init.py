"""The paper's initialisations of the scene model (section 5.3).

Parts are discovered by k-means on all region features
(:func:`discover_parts`); each training image is then labelled by
alpha-expansion with a Potts weight lambda over unaries that measure how far
each part is from the region's best (:func:`part_unaries`,
:func:`coherent_labels`).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .._validation import check_data, check_grid, check_int, check_real
from ..potts import alpha_expansion
from ._models import check_examples
from ._region_model import REGION_FEATURES

__all__ = ["coherent_labels", "discover_parts", "part_unaries"]


def discover_parts(X: np.ndarray, n_parts: int, *, random_state: Any = None) -> np.ndarray:
    """Initial parts: k-means (Lloyd from k-means++, ``GMMKMeans(selection="mm")``) on all regions.

    X (n, R, d) -> centres (n_parts, d); n_parts in [1, n R].
    """
    from ..cluster import GMMKMeans
    X = check_examples(X, REGION_FEATURES, dtype=np.float64)
    n_parts = check_int(n_parts, "n_parts", 1, X.shape[0] * X.shape[1])
    km = GMMKMeans(n_clusters=n_parts, eta=1.0, selection="mm", init="k-means++",
                   random_state=random_state)
    km.fit(X.reshape(-1, X.shape[2]))
    return np.asarray(km.cluster_centers_, dtype=np.float64)


def part_unaries(X: np.ndarray, centres: np.ndarray, scale: Optional[float] = None
                 ) -> Tuple[np.ndarray, float]:
    """Unaries of the coherent initialisation: normalised part scores, (n, R, n_parts).

    With linear part scores ``mu_p . x - |mu_p|^2 / 2`` (the k-means parts as
    filters), the unary of part p at region r is the score's shortfall from
    the region's best part, ``(|x_r - mu_p|^2 - min_q |x_r - mu_q|^2) / 2``,
    divided by ``scale`` (a real number > 0): by default the mean over the
    regions of X of the margin between their best and second-best part, so that
    Potts weight lambda = 1 makes one disagreeing neighbour pair cost one average
    margin. X (n, R, d) and centres (n_parts, d) must be small enough for squared
    distances in float64. Returns the unaries and the scale used.
    """
    X = check_examples(X, REGION_FEATURES, dtype=np.float64)
    d = X.shape[2]
    check_data(X.reshape(-1, d), "X")
    mu = check_data(centres, "centres", dtype=np.float64)
    if mu.shape[1] != d:
        raise ValueError(f"centres must have {d} columns (the features of X), got shape "
                         f"{mu.shape}.")
    if scale is not None:
        scale = check_real(scale, "scale", 0.0, low_open=True)
    d2 = ((X ** 2).sum(-1)[..., None] - 2.0 * X @ mu.T + (mu ** 2).sum(-1))
    half = 0.5 * (d2 - d2.min(axis=-1, keepdims=True))
    if scale is None:
        if mu.shape[0] > 1:
            scale = float(np.partition(half, 1, axis=-1)[..., 1].mean())
        else:
            scale = 1.0
        if not scale > 0:
            scale = 1.0
    with np.errstate(over="ignore"):      # an overflow is the error below
        unary = half / scale
    if not np.isfinite(unary).all():
        raise ValueError(f"the unaries overflow at scale={scale!r}: pass a larger scale or "
                         "rescale X and centres.")
    return unary, float(scale)


def coherent_labels(X: np.ndarray, centres: np.ndarray, lam: float, grid: Tuple[int, int],
                    scale: Optional[float] = None) -> np.ndarray:
    """Part labels per image by alpha-expansion: min_z sum_r unary[r, z_r] + lam * E(z).

    Unaries from :func:`part_unaries`; lam >= 0 (lam = 0 gives each region its nearest
    part). Returns int32 (n, R).
    """
    H, W = check_grid(grid)
    lam = check_real(lam, "lam", 0.0)
    U, _ = part_unaries(X, centres, scale)
    n, R, P = U.shape
    if R != H * W:
        raise ValueError(f"X has {R} regions but grid {grid} has {H * W}.")
    labels, _ = alpha_expansion(U.reshape(n, H, W, P), lam)
    return labels.reshape(n, R).astype(np.int32)
