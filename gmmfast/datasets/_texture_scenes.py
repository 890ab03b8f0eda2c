"""Scenes painted with generated textures: the stand-in for MIT-Indoor in the scene experiment.

The paper's scene model (section 5.3) cuts an image into a 10 x 10 grid of
regions, describes each region by a feature vector, and gives each region a
latent part label. This generator paints images whose regions are textures and
describes the regions by gradient statistics, so that a region's part is
ambiguous on its own (pixel noise, neighbouring textures bleeding into a
region's gradients) while part regions are spatially coherent:

1. Parts: ``n_parts`` generated textures, oriented band-pass noise (6
   orientations x 2 spatial frequencies, cycled) with a brightness of their own.
2. Layouts: as :func:`gmmfast.datasets.make_scenes` (class templates of
   ``regions_per_class`` part regions on the grid, jittered per image, parts
   swapped with probability ``part_swap``; Voronoi cells, so part regions
   are coherent).
3. Painting: every part present in an image gets a fresh texture field over the
   whole image, shown in its cells; then Gaussian pixel noise ``noise``.
4. Region features: the cell's histogram of gradient orientations
   (:func:`gmmfast.datasets.orientation_cells`, ``n_bins`` bins, contrast
   normalised over 3 x 3 cells), its mean brightness and the log of its mean
   gradient magnitude: d = n_bins + 2, each feature standardised (zero mean, unit
   variance) over all the regions drawn (large shared offsets in the features
   made the cutting plane of the region model several times slower).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Tuple, Union

import numpy as np

from .._validation import check_float_dtype, check_int, check_random_state, check_real
from ._objects import orientation_cells
from ._scenes import check_layout, scene_layouts

__all__ = ["make_texture_scenes"]


def _texture_filters(n_parts: int, size: int) -> np.ndarray:
    """Fourier amplitude of each part's texture: an oriented band-pass filter, (P, size, size)."""
    fy = np.fft.fftfreq(size)[:, None]
    fx = np.fft.fftfreq(size)[None, :]
    radius = np.hypot(fx, fy)
    angle = np.arctan2(fy, fx)
    out = np.empty((n_parts, size, size))
    for k in range(n_parts):
        theta = (k % 6) * math.pi / 6.0
        f0 = 0.12 if (k // 6) % 2 == 0 else 0.28
        dtheta = np.angle(np.exp(2j * (angle - theta))) / 2.0     # orientation, mod pi
        out[k] = np.exp(-0.5 * ((radius - f0) / (0.25 * f0)) ** 2 - 0.5 * (dtheta / 0.3) ** 2)
    return out


def make_texture_scenes(n_samples: int = 600, n_classes: int = 5, n_parts: int = 12, *,
                        grid: Tuple[int, int] = (10, 10), cell: int = 8,
                        regions_per_class: int = 4, layout_jitter: float = 1.0,
                        part_swap: float = 0.1, noise: float = 0.3, n_bins: int = 8,
                        dtype: Any = np.float64, random_state: Any = None,
                        return_params: bool = False
                        ) -> Union[Tuple[np.ndarray, np.ndarray, np.ndarray],
                                   Tuple[np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]]:
    """Texture scenes: grids of regions with shared, spatially coherent latent parts.

    Parameters
    ----------
    n_samples : int, default=600
        Images; classes are balanced (sizes differ by at most one).
    n_classes, n_parts : int, default=5, 12
        Scene classes and textures (the shared part pool).
    grid : (H, W), default=(10, 10)
        Regions per image, R = H * W, row-major.
    cell : int >= 4, default=8
        Region side in pixels (images are H cell x W cell pixels).
    regions_per_class, layout_jitter, part_swap :
        The layouts, as :func:`gmmfast.datasets.make_scenes`.
    noise : float >= 0, default=0.3
        Standard deviation of the Gaussian pixel noise (textures have standard
        deviation 0.15 around brightness levels in [0.3, 0.7]).
    n_bins : int >= 2, default=8
        Orientation bins of the region features.
    dtype : float32 or float64
    random_state : None, int or numpy Generator
    return_params : bool
        Also return the generating parameters (and the painted images).

    Returns
    -------
    X : (n_samples, R, n_bins + 2) region features
    y : (n_samples,) int64 scene class
    Z : (n_samples, R) int32 true part of every region
    params : dict, only with ``return_params``: ``seeds``, ``parts``, ``templates``
        (as make_scenes), ``brightness`` (n_parts,), ``images`` (n, H cell, W cell).
    """
    n_samples, n_classes, n_parts, (H, W), K, layout_jitter, part_swap = check_layout(
        n_samples, n_classes, n_parts, grid, regions_per_class, layout_jitter, part_swap)
    if H != W:
        raise ValueError(f"grid must be square (H == W) for the painted images, got {grid!r}.")
    cell = check_int(cell, "cell", 4)
    noise = check_real(noise, "noise", 0.0)
    n_bins = check_int(n_bins, "n_bins", 2)
    dt = check_float_dtype(dtype)
    rng = check_random_state(random_state)

    brightness = rng.uniform(0.3, 0.7, size=n_parts)
    y, Z, params = scene_layouts(rng, n_samples, n_classes, n_parts, (H, W), K, layout_jitter,
                                 part_swap)
    S = H * cell
    filters = _texture_filters(n_parts, S)
    images = np.empty((n_samples, S, S))
    for i in range(n_samples):
        labels = Z[i].reshape(H, W)
        pix = np.repeat(np.repeat(labels, cell, axis=0), cell, axis=1)
        img = np.empty((S, S))
        for k in np.unique(labels):
            field = np.fft.ifft2(np.fft.fft2(rng.standard_normal((S, S))) * filters[k]).real
            field *= 0.15 / max(float(field.std()), 1e-12)
            mask = pix == k
            img[mask] = brightness[k] + field[mask]
        images[i] = img + noise * rng.standard_normal((S, S))
    hist = orientation_cells(images, cell, n_bins).reshape(n_samples, H * W, n_bins)
    blocks = images.reshape(n_samples, H, cell, W, cell)
    mean = blocks.mean(axis=(2, 4)).reshape(n_samples, H * W)
    gy, gx = np.gradient(images, axis=(1, 2))
    mag = np.hypot(gx, gy).reshape(n_samples, H, cell, W, cell).mean(axis=(2, 4))
    X = np.concatenate([hist, mean[..., None],
                        np.log(mag.reshape(n_samples, H * W, 1) + 1e-3)], axis=2)
    flat = X.reshape(-1, X.shape[2])
    X = (X - flat.mean(axis=0)) / np.maximum(flat.std(axis=0), 1e-12)
    X = X.astype(dt, copy=False)
    if not return_params:
        return X, y, Z
    return X, y, Z, dict(params, brightness=brightness, images=images)
