"""Cluttered digits: a small stand-in for the paper's mammals data (section 5.2).

Each image is a canvas with one handwritten digit (from the 8 x 8 digits that
scikit-learn ships, ``sklearn.datasets.load_digits``, no download) placed on a
grid of candidate windows, mostly near the centre, among clutter: fragments
of other digits and uniform background noise. The class is the digit; the
latent variable is the window that holds it. Features of a window are its
raw pixels (d = window^2 = 64, values in [0, 1]; no HOG: the digits are 8 x 8).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._validation import check_int, check_random_state

__all__ = ["make_cluttered_digits", "Bunch", "window_features"]


class Bunch(dict):
    """A dict whose keys are also attributes (as scikit-learn's Bunch)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def window_features(images: np.ndarray, window: int, stride: int, grid: int,
                    pool: int = 1) -> np.ndarray:
    """The pixels of every window on a ``grid`` x ``grid`` lattice, averaged over
    ``pool`` x ``pool`` blocks: (n, grid^2, (window / pool)^2).

    Window z = r * grid + c has its top-left pixel at (r * stride, c * stride).
    """
    n = images.shape[0]
    if window % pool:
        raise ValueError(f"window ({window}) must be a multiple of pool ({pool}).")
    side = images.shape[1]
    if pool > 1:   # pooled image at every pixel offset: mean of the pool x pool block
        c = np.cumsum(np.cumsum(np.pad(images.astype(np.float64), ((0, 0), (1, 0), (1, 0))),
                                axis=1), axis=2)
        m = side - pool + 1
        blocks = (c[:, pool:, pool:] - c[:, :m, pool:] - c[:, pool:, :m] + c[:, :m, :m]) / pool ** 2
    else:
        blocks = images
    k = window // pool
    out = np.empty((n, grid * grid, k * k), dtype=images.dtype)
    for r in range(grid):
        for c_ in range(grid):
            r0, c0 = r * stride, c_ * stride
            patch = blocks[:, r0:r0 + window:pool, c0:c0 + window:pool]
            out[:, r * grid + c_] = patch.reshape(n, -1)
    return out


def make_cluttered_digits(n_samples: Any = None, *, classes: Sequence[int] = (0, 1, 2, 3, 4, 5),
                          grid: int = 9, stride: int = 1, spread: float = 1.0,
                          n_distractors: int = 4, distractor_size: int = 3,
                          distractor_intensity: float = 0.75, noise: float = 0.1, scale: int = 2, dtype: Any = np.float32,
                          random_state: Any = None) -> Bunch:
    """Digits in cluttered canvases, with the digit's window as the latent variable.

    Digits are enlarged ``scale`` times (bilinear), windows are ``8 * scale``
    pixels and their features are the window's pixels averaged over
    ``scale`` x ``scale`` blocks, so d = 64 always; a canvas has side
    ``8 * scale + stride * (grid - 1)`` pixels. The digit's window is
    drawn as (centre + round(N(0, spread^2))) on each grid axis, clipped to the
    grid, so a small ``spread`` puts most digits at or next to the centre
    window. ``n_distractors`` square fragments (side ``distractor_size``)
    cut at random from other digit images (of any of the ten classes) are
    pasted at uniformly random places (pixel-wise maximum, so they may cover
    part of the digit), and every pixel gets uniform noise in [0, ``noise``].
    Pixels are scaled to [0, 1].

    The defaults are the setting fixed by the oracle check
    (bench/results/lssvm_oracle.md, before any training method was compared):
    16-pixel digits on a 24-pixel canvas, 9 x 9 windows one pixel apart
    (L = 81, d = 64), 14 % of the digits exactly at the centre window.

    Parameters
    ----------
    n_samples : int, optional
        Images to make, cycling through the available digits of ``classes``
        in a random order (default: each of them once; about 180 per class).
    classes : sequence of int
        Digit classes used as objects; relabelled 0..len(classes)-1.
    grid, stride : int
        Candidate windows: grid x grid positions, ``stride`` pixels apart.
    spread : float >= 0
        Standard deviation of the digit's position in grid steps.
    n_distractors, distractor_size : int
        Fragments per image and their side in digit pixels (before ``scale``).
    distractor_intensity : float in [0, 1]
        Fragments' pixels are multiplied by this.
    noise : float >= 0
    scale : int >= 1
        Enlargement of the digits (1: 8 x 8 digits, windows of 8 pixels).
    dtype : float32 or float64
    random_state : None, int or numpy Generator

    Returns
    -------
    Bunch with
        data : (n, grid^2, 64) window features (the X of LatentMulticlassModel)
        target : (n,) int labels in 0..len(classes)-1
        latent : (n,) int, the true window z = row * grid + column
        positions : (grid^2, 2) relative (row, column) in [0, 1] of each window
        images : (n, side, side) the canvases
        digit_index : (n,) index of the digit in load_digits
        window, stride, grid, scale : the window geometry
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("make_cluttered_digits needs scikit-learn (pip install "
                          "'gmmfast[datasets]').") from exc
    grid = check_int(grid, "grid", 1)
    stride = check_int(stride, "stride", 1)
    n_distractors = check_int(n_distractors, "n_distractors", 0)
    distractor_size = check_int(distractor_size, "distractor_size", 1, 8)
    for name, v in (("spread", spread), ("noise", noise),
                    ("distractor_intensity", distractor_intensity)):
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}.")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}.")
    classes = [int(c) for c in classes]
    if len(classes) < 2 or len(set(classes)) != len(classes) or not all(
            0 <= c <= 9 for c in classes):
        raise ValueError(f"classes must be at least two distinct digits in 0..9, got {classes}.")
    scale = check_int(scale, "scale", 1)
    rng = check_random_state(random_state)
    digits = load_digits()
    images8 = digits.images / 16.0
    if scale > 1:
        from scipy.ndimage import zoom
        images8 = np.clip(zoom(images8, (1, scale, scale), order=1), 0.0, 1.0)
    win = 8 * scale
    labels = digits.target
    pool = np.flatnonzero(np.isin(labels, classes))
    if n_samples is None:
        n = pool.shape[0]
    else:
        n = check_int(n_samples, "n_samples", 1)
    order = rng.permutation(pool)
    chosen = order[np.arange(n) % order.shape[0]]
    remap = {c: k for k, c in enumerate(classes)}
    target = np.array([remap[int(labels[i])] for i in chosen], dtype=np.int64)
    side = win + stride * (grid - 1)
    centre = (grid - 1) / 2.0
    pos = np.clip(np.rint(centre + spread * rng.standard_normal((n, 2))), 0, grid - 1).astype(int)
    canvas = rng.uniform(0.0, noise, size=(n, side, side)) if noise > 0 else np.zeros(
        (n, side, side))
    s = distractor_size * scale
    for k in range(n):
        for _ in range(n_distractors):
            src = int(rng.integers(0, images8.shape[0]))
            while src == chosen[k]:
                src = int(rng.integers(0, images8.shape[0]))
            a, b = rng.integers(0, win - s + 1, size=2)
            r, c = rng.integers(0, side - s + 1, size=2)
            frag = distractor_intensity * images8[src, a:a + s, b:b + s]
            canvas[k, r:r + s, c:c + s] = np.maximum(canvas[k, r:r + s, c:c + s], frag)
        r, c = pos[k] * stride
        canvas[k, r:r + win, c:c + win] = np.maximum(canvas[k, r:r + win, c:c + win],
                                                     images8[chosen[k]])
    canvas = np.clip(canvas, 0.0, 1.0).astype(dtype)
    rows, cols = np.divmod(np.arange(grid * grid), grid)
    positions = np.stack([rows, cols], axis=1) / max(grid - 1, 1)
    return Bunch(data=window_features(canvas, win, stride, grid, scale), target=target,
                 latent=(pos[:, 0] * grid + pos[:, 1]).astype(np.int64), positions=positions,
                 images=canvas, digit_index=chosen, window=win, stride=stride, grid=grid,
                 scale=scale,
                 classes=np.array(classes))
