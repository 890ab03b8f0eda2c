"""Synthetic scenes for the reconfigurable region-part model (paper section 5.3).

The paper trains on MIT-Indoor: images cut into a 10 x 10 grid of regions, a
feature vector per region, and a latent part label per region with parts
shared by all scene classes. This generator makes data of the same shape
whose ground truth is known:

1. ``n_parts`` part prototypes ``mu_k ~ N(0, I_d)``, shared by all classes.
2. Each class has a layout template: ``regions_per_class`` seed points placed
   uniformly on the grid, each carrying a distinct part drawn from the shared
   pool (so classes reuse each other's parts). A cell belongs to the region of
   its nearest seed (a Voronoi partition): coherent, convex part regions.
3. Each image of class c jitters the seeds of c's template by
   ``N(0, layout_jitter^2)`` cells (regions move, grow and shrink), and each
   region's part is replaced by a uniformly drawn part with probability
   ``part_swap``; the cells take the parts of their nearest jittered seed.
4. Region features are noisy prototypes: ``x_r = mu_{z_r} + noise * N(0, I_d)``.

The class is carried by which parts occur, where and how much, never by one
region alone; with noisy features a single region's part is ambiguous, so
labelings that are spatially coherent carry the class signal.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple, Union

import numpy as np

from .._validation import (INT32_MAX, check_float_dtype, check_grid, check_int,
                           check_random_state, check_real)


def check_layout(n_samples: Any, n_classes: Any, n_parts: Any, grid: Any,
                 regions_per_class: Any, layout_jitter: Any, part_swap: Any
                 ) -> Tuple[int, int, int, Tuple[int, int], int, float, float]:
    """The layout parameters of the scene generators (see :func:`make_scenes`), checked:
    labels and parts are stored as int32, so n_classes and n_parts are at most 2**31 - 1."""
    n_samples = check_int(n_samples, "n_samples", 1)
    n_classes = check_int(n_classes, "n_classes", 1, INT32_MAX)
    n_parts = check_int(n_parts, "n_parts", 1, INT32_MAX)
    H, W = check_grid(grid)
    K = check_int(regions_per_class, "regions_per_class", 1, min(n_parts, H * W))
    layout_jitter = check_real(layout_jitter, "layout_jitter", 0.0)
    part_swap = check_real(part_swap, "part_swap", 0.0, 1.0)
    return n_samples, n_classes, n_parts, (H, W), K, layout_jitter, part_swap


def make_scenes(n_samples: int = 300, n_classes: int = 5, n_parts: int = 12,
                n_features: int = 16, *, grid: Tuple[int, int] = (10, 10),
                regions_per_class: int = 4, noise: float = 1.5, layout_jitter: float = 1.0,
                part_swap: float = 0.1, dtype: Any = np.float64, random_state: Any = None,
                return_params: bool = False
                ) -> Union[Tuple[np.ndarray, np.ndarray, np.ndarray],
                           Tuple[np.ndarray, np.ndarray, np.ndarray, Dict[str, np.ndarray]]]:
    """Synthetic scenes: grids of regions with shared, spatially coherent latent parts.

    Parameters
    ----------
    n_samples : int, default=300
        Number of images; classes are balanced (sizes differ by at most one).
    n_classes : int, default=5
    n_parts : int, default=12
        Size of the shared part pool.
    n_features : int, default=16
        Dimension d of a region's feature vector.
    grid : (H, W), default=(10, 10)
        Regions per image: R = H * W, in row-major order.
    regions_per_class : int, default=4
        Part regions in a class's layout template (distinct parts; at most
        ``n_parts`` and at most R).
    noise : float, default=1.5
        Standard deviation of the feature noise per coordinate (prototypes
        have unit variance per coordinate).
    layout_jitter : float, default=1.0
        Standard deviation, in cells, of each image's shift of every seed.
    part_swap : float, default=0.1
        Probability that an image replaces a region's part by a uniformly drawn part.
    dtype : float32 or float64, default=float64
        dtype of X.
    random_state : None, int or numpy Generator
        Makes the output deterministic.
    return_params : bool, default=False
        Also return the generating parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, R, n_features)
        Region features.
    y : ndarray of int64, shape (n_samples,)
        Scene class.
    Z : ndarray of int32, shape (n_samples, R)
        True part label of every region.
    params : dict, only with ``return_params``
        ``prototypes`` (n_parts, d), ``seeds`` (n_classes, regions_per_class, 2)
        as (row, col) in cell units, ``parts`` (n_classes, regions_per_class),
        ``templates`` (n_classes, H, W): the unjittered layout of each class.
    """
    n_samples, n_classes, n_parts, (H, W), K, layout_jitter, part_swap = check_layout(
        n_samples, n_classes, n_parts, grid, regions_per_class, layout_jitter, part_swap)
    R = H * W
    d = check_int(n_features, "n_features", 1)
    noise = check_real(noise, "noise", 0.0)
    dt = check_float_dtype(dtype)
    rng = check_random_state(random_state)

    prototypes = rng.normal(size=(n_parts, d))
    y, Z, params = scene_layouts(rng, n_samples, n_classes, n_parts, (H, W), K, layout_jitter,
                                 part_swap)
    X = prototypes[Z] + noise * rng.normal(size=(n_samples, R, d))
    X = X.astype(dt, copy=False)
    if not return_params:
        return X, y, Z
    return X, y, Z, dict(params, prototypes=prototypes)


def scene_layouts(rng: np.random.Generator, n_samples: int, n_classes: int, n_parts: int,
                  grid: Tuple[int, int], regions_per_class: int, layout_jitter: float,
                  part_swap: float) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
    """Classes and true part labels of scenes (steps 2-3 of the module docstring).

    Returns y (n,), Z (n, H W) int32 and the parameters ``seeds`` (n_classes,
    regions_per_class, 2), ``parts`` (n_classes, regions_per_class) and ``templates``
    (n_classes, H, W).
    """
    H, W = grid
    R, K = H * W, regions_per_class
    seeds = rng.uniform(0.0, 1.0, size=(n_classes, K, 2)) * np.array([H, W])
    parts = np.stack([rng.choice(n_parts, size=K, replace=False) for _ in range(n_classes)])

    y = rng.permutation(np.arange(n_samples) % n_classes).astype(np.int64)
    img_seeds = seeds[y] + layout_jitter * rng.normal(size=(n_samples, K, 2))
    img_parts = parts[y].copy()
    swap = rng.random(size=(n_samples, K)) < part_swap
    img_parts[swap] = rng.integers(0, n_parts, size=int(swap.sum()))

    centres = np.stack(np.meshgrid(np.arange(H) + 0.5, np.arange(W) + 0.5, indexing="ij"),
                       axis=-1).reshape(R, 2)

    def layout(s: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Part of each cell's nearest seed; s (m, K, 2), p (m, K) -> (m, R)."""
        d2 = ((centres[None, :, None, :] - s[:, None, :, :]) ** 2).sum(-1)
        return np.take_along_axis(p, d2.argmin(-1), axis=1)

    Z = layout(img_seeds, img_parts).astype(np.int32)
    params = {"seeds": seeds, "parts": parts,
              "templates": layout(seeds, parts).astype(np.int32).reshape(n_classes, H, W)}
    return y, Z, params
