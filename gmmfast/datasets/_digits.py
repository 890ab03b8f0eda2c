"""Cluttered digits: a small stand-in for the paper's mammals data (section 5.2).

Each image is a canvas with one handwritten digit (from the 8 x 8 digits that
scikit-learn ships, ``sklearn.datasets.load_digits``, no download) placed on a
grid of candidate windows, mostly near the centre, among clutter: fragments
of other digits and uniform background noise. The class is the digit; the
latent variable is the window that holds it. Features of a window are its
raw pixels (d = window^2 = 64, values in [0, 1]; no HOG: the digits are 8 x 8).
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from .._validation import check_float_dtype, check_int, check_random_state, check_real

__all__ = ["make_cluttered_digits", "Bunch", "window_features"]

#: Largest canvas side, in pixels, of the digit generators (a float64 canvas of this side is
#: 8 GiB; the experiments' canvases have 24 to 56 pixels).
MAX_CANVAS_SIDE = 1 << 15


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


def digits_loader(who: str) -> Callable[[], Any]:
    """scikit-learn's ``load_digits`` (the generators' objects); ImportError without it."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{who} needs scikit-learn (pip install 'gmmfast[datasets]').") from exc
    return load_digits


def check_digit_classes(classes: Any) -> List[int]:
    """The digit classes of a generator: at least two distinct integers in 0..9."""
    try:
        items = None if isinstance(classes, (str, bytes)) else list(classes)
    except TypeError:                                  # not iterable
        items = None
    if (items is None or len(items) < 2 or not all(
            isinstance(c, numbers.Integral) and not isinstance(c, (bool, np.bool_))
            and 0 <= c <= 9 for c in items) or len(set(int(c) for c in items)) != len(items)):
        raise ValueError(f"classes must be at least two distinct digits in 0..9, got {classes!r}.")
    return [int(c) for c in items]


def check_canvas(side: int, what: str, n_distractors: Any) -> int:
    """A canvas side ``what`` = ``side`` pixels of at most MAX_CANVAS_SIDE; returns the number
    of distractors checked against it (at most one per canvas pixel)."""
    if side > MAX_CANVAS_SIDE:
        raise ValueError(f"the canvas side {what} = {side} pixels is larger than "
                         f"{MAX_CANVAS_SIDE}; choose a smaller geometry.")
    return check_int(n_distractors, "n_distractors", 0, side * side)


def draw_windows(rng: np.random.Generator, n: int, g: int, spread: float
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """Each image's object window on a g x g grid, (row, column) drawn around the centre with
    standard deviation ``spread`` (clipped to the grid), and the relative (row, column) in
    [0, 1] of every window: (n, 2) int and (g^2, 2) float."""
    centre = (g - 1) / 2.0
    pos = np.clip(np.rint(centre + spread * rng.standard_normal((n, 2))), 0, g - 1).astype(int)
    rows, cols = np.divmod(np.arange(g * g), g)
    return pos, np.stack([rows, cols], axis=1) / max(g - 1, 1)


def paste_digit(canvas: np.ndarray, rng: np.random.Generator, digits: np.ndarray, own: int,
                at: Tuple[int, int], n_distractors: int, size: int, intensity: float) -> None:
    """Clutter and object of one square canvas, in place (pixel-wise maximum each time).

    ``n_distractors`` fragments of side ``size``, cut at random from ``digits`` other than
    ``own`` and multiplied by ``intensity``, at uniformly random places; then the digit
    ``own`` with its top-left pixel at ``at``.
    """
    O, S = digits.shape[1], canvas.shape[0]
    for _ in range(n_distractors):
        src = int(rng.integers(0, digits.shape[0]))
        while src == own:
            src = int(rng.integers(0, digits.shape[0]))
        a, b = rng.integers(0, O - size + 1, size=2)
        r, c = rng.integers(0, S - size + 1, size=2)
        frag = intensity * digits[src, a:a + size, b:b + size]
        canvas[r:r + size, c:c + size] = np.maximum(canvas[r:r + size, c:c + size], frag)
    r, c = at
    canvas[r:r + O, c:c + O] = np.maximum(canvas[r:r + O, c:c + O], digits[own])


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

    The defaults are the setting fixed by an oracle check before any training
    method was compared (the oracle, trained with the true windows, errs on
    6.7 % of held-out digits, and the first bound of the centre or top-left
    windows is not minimised at w = 0):
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
    load_digits = digits_loader("make_cluttered_digits")
    grid = check_int(grid, "grid", 1)
    stride = check_int(stride, "stride", 1)
    scale = check_int(scale, "scale", 1)
    side = 8 * scale + stride * (grid - 1)
    n_distractors = check_canvas(side, "8 * scale + stride * (grid - 1)", n_distractors)
    distractor_size = check_int(distractor_size, "distractor_size", 1, 8)
    spread = check_real(spread, "spread", 0.0)
    noise = check_real(noise, "noise", 0.0)
    distractor_intensity = check_real(distractor_intensity, "distractor_intensity", 0.0, 1.0)
    dtype = check_float_dtype(dtype)
    classes = check_digit_classes(classes)
    rng = check_random_state(random_state)
    n = None if n_samples is None else check_int(n_samples, "n_samples", 1)
    digits = load_digits()
    images8 = digits.images / 16.0
    if scale > 1:
        from scipy.ndimage import zoom
        images8 = np.clip(zoom(images8, (1, scale, scale), order=1), 0.0, 1.0)
    win = 8 * scale
    labels = digits.target
    pool = np.flatnonzero(np.isin(labels, classes))
    if n is None:
        n = pool.shape[0]
    order = rng.permutation(pool)
    chosen = order[np.arange(n) % order.shape[0]]
    remap = {c: k for k, c in enumerate(classes)}
    target = np.array([remap[int(labels[i])] for i in chosen], dtype=np.int64)
    pos, positions = draw_windows(rng, n, grid, spread)
    canvas = rng.uniform(0.0, noise, size=(n, side, side)) if noise > 0 else np.zeros(
        (n, side, side))
    for k in range(n):
        paste_digit(canvas[k], rng, images8, chosen[k], pos[k] * stride, n_distractors,
                    distractor_size * scale, distractor_intensity)
    canvas = np.clip(canvas, 0.0, 1.0).astype(dtype)
    return Bunch(data=window_features(canvas, win, stride, grid, scale), target=target,
                 latent=(pos[:, 0] * grid + pos[:, 1]).astype(np.int64), positions=positions,
                 images=canvas, digit_index=chosen, window=win, stride=stride, grid=grid,
                 scale=scale,
                 classes=np.array(classes))
