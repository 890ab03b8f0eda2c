"""Python API over the Potts kernels: validation once, then contiguous arrays to Cython."""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from .._kernels import _potts as kernels
from .._kernels._common import openmp_max_threads
from .._validation import (INT32_MAX, check_array, check_grid, check_int, check_real,
                           check_sum_bound, check_threads, exact_sum, extent, float_text,
                           integer_array)

#: Largest grid alpha-expansion takes (H * W nodes; its arc indices are int).
MAX_NODES = kernels.MAX_NODES
#: Largest trace alpha_expansion(return_trace=True) allocates.
_TRACE_BYTES = 1 << 30


def _check_threads(n_threads: Optional[int], units: int) -> int:
    """Threads for ``units`` independent grids: default all; never more than the grids or
    the machine's threads (a huge request would make OpenMP fail to start its team)."""
    if n_threads is None:
        return max(1, min(int(openmp_max_threads()), units))
    return max(1, min(check_threads(n_threads), units))


def _check_lam(lam: Any, name: str = "lam") -> float:
    return check_real(lam, name, 0.0)


def _shape(x: Any, name: str) -> Tuple[int, ...]:
    try:
        return np.shape(x)
    except ValueError as exc:   # ragged nested sequences
        raise ValueError(f"{name} must be a rectangular array: {exc}") from None


def _check_labels(labels: Any, name: str, shape: Optional[Tuple[int, ...]] = None,
                  n_labels: Optional[int] = None) -> np.ndarray:
    """An integer array (optionally of ``shape``, values in [0, n_labels))."""
    _shape(labels, name)
    if hasattr(labels, "toarray"):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array.")
    arr = integer_array(labels, name)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}.")
    if n_labels is not None and arr.size and (arr.min() < 0 or arr.max() >= n_labels):
        raise ValueError(f"{name} must lie in [0, {n_labels}) (the number of labels L), got "
                         f"values in [{arr.min()}, {arr.max()}].")
    return arr


def _check_energy(top: float, nodes: int, lam: float, name: str, scale: str) -> None:
    """An energy of ``nodes`` unaries of |value| <= ``top`` and lam x at most 2 x nodes cut
    edges, summed in float64, within float64 (with room, :func:`check_sum_bound`), else a
    ValueError naming ``name`` and what to ``scale``."""
    lam_text = f" and lam = {lam:.3g}" if lam else ""
    check_sum_bound(
        nodes * (top + 2.0 * lam), 4.0,
        lambda reach, limit: (
            f"{name} has values up to {float_text(top)}{lam_text} on grids of {nodes} nodes: "
            f"the sum over a grid, in float64, can reach {reach} (limit {limit:.3g}): scale "
            f"{scale}."))


def _check_unary(unary: Any, lam: float) -> np.ndarray:
    """Unary costs of shape (H, W, L) or (n, H, W, L), every size >= 1, at most MAX_NODES
    nodes per grid (checked before any copy), finite float32/float64, and with ``lam`` an
    energy within float64 (:func:`_check_energy`)."""
    shape = _shape(unary, "unary")
    if len(shape) not in (3, 4):
        raise ValueError(f"unary must have shape (H, W, L) for one grid or (n, H, W, L) for a "
                         f"batch, got shape {shape}.")
    if 0 in shape[-3:]:
        raise ValueError(f"unary must have H, W, L >= 1, got shape {shape[-3:]}.")
    H, W, L = shape[-3:]
    if H * W > MAX_NODES or L > INT32_MAX:
        raise ValueError(f"unary: a grid may have at most {MAX_NODES} nodes (H * W) and "
                         f"2**31 - 1 labels, got H, W, L = {H}, {W}, {L}.")
    U = check_array(unary, "unary", ndim=len(shape), finite=False)
    _check_energy(extent(U, "unary"), H * W, lam, "unary", "unary or lam")
    return U


def potts_energy(labels: Any, *, n_threads: Optional[int] = None) -> Union[int, np.ndarray]:
    """Potts energy E(z): the number of 4-connected neighbouring pairs with different labels.

    Parameters
    ----------
    labels : array-like of int, shape (H, W) or (n, H, W)
        One labeling of an H x W grid, or a batch of n.
    n_threads : int >= 1, optional
        OpenMP threads over the grids of a batch (default: all; at most one per
        grid and at most the machine's threads).

    Returns
    -------
    energy : int, or ndarray of int64 of shape (n,) for a batch
    """
    arr = _check_labels(labels, "labels")
    if arr.ndim not in (2, 3):
        raise ValueError(f"labels must be a 2-D grid (H, W) or a 3-D batch (n, H, W), got "
                         f"shape {arr.shape}.")
    single = arr.ndim == 2
    batch = arr[None] if single else arr
    if batch.dtype not in (np.int32, np.int64):
        batch = batch.astype(np.int64)  # a bijection on the values: inequalities are kept
    batch = np.ascontiguousarray(batch)
    out = np.zeros(batch.shape[0], dtype=np.int64)
    kernels.potts_energy_batch(batch, out, _check_threads(n_threads, batch.shape[0]))
    return int(out[0]) if single else out


def grid_energy(unary: Any, labels: Any, lam: float) -> Union[float, np.ndarray]:
    """E(z) = sum_p unary[p, z_p] + lam * potts_energy(z), evaluated in float64 (numpy).

    Parameters
    ----------
    unary : array-like of shape (H, W, L) or (n, H, W, L)
    labels : array-like of int, shape (H, W) or (n, H, W), values in [0, L)
    lam : float >= 0

    Returns
    -------
    energy : float, or ndarray of float64 of shape (n,)
    """
    lam = _check_lam(lam)
    U = _check_unary(unary, lam)
    z = _check_labels(labels, "labels", U.shape[:-1], U.shape[-1])
    data = np.take_along_axis(U.astype(np.float64, copy=False), z[..., None].astype(np.intp),
                              axis=-1)[..., 0]
    if U.ndim == 3:
        return exact_sum(data.ravel()) + lam * potts_energy(z)
    return np.array([exact_sum(row.ravel()) for row in data]) + lam * potts_energy(z)


def alpha_expansion(unary: Any, lam: float, labels0: Any = None, max_cycles: int = 20, *,
                    return_trace: bool = False, n_threads: Optional[int] = None
                    ) -> Tuple[Any, ...]:
    """Minimise E(z) = sum_p unary[p, z_p] + lam * potts_energy(z) on grids by alpha-expansion.

    Each move solves, for one label alpha, the best labeling in which every
    node keeps its label or takes alpha, exactly by a minimum cut (our
    Boykov-Kolmogorov max-flow). Labels are visited 0, 1, ..., L-1, 0, ...;
    the run stops when L consecutive labels (L - 1 after an improvement) give
    no strict decrease, which is a local minimum for expansion moves: its
    energy is at most ``E_data(z*) + 2 lam E(z*)`` for any labeling z*, so
    within a factor 2 of the optimum when the unaries are >= 0. A move is
    accepted only if the recomputed energy strictly decreases, so the energy
    never increases. Special cases solved exactly in one move: L = 2 (one
    binary cut of the whole problem) and lam = 0 (the per-node argmin).

    Parameters
    ----------
    unary : array-like of shape (H, W, L) or (n, H, W, L)
        Cost of each label at each node; float32 or float64 (kept; integers
        become float64); finite. Energies are accumulated in float64.
    lam : float
        Potts weight, finite and >= 0.
    labels0 : array-like of int, shape (H, W) or (n, H, W), optional
        Start labeling, values in [0, L). Default: the per-node argmin.
    max_cycles : int, default=20
        At most ``max_cycles * L`` expansion moves per grid.
    return_trace : bool, default=False
        Also return the energy before the first move and after each move.
    n_threads : int >= 1, optional
        OpenMP threads over the grids of a batch (default: all; at most one
        per grid). Results do not depend on it.

    Returns
    -------
    labels : ndarray of int32, shape (H, W) or (n, H, W)
    energy : float, or ndarray of float64 of shape (n,)
        E(labels), summed in float64 in node order.
    trace : ndarray of float64, shape (max_cycles * L + 1,) or (n, max_cycles * L + 1)
        Only with ``return_trace``: ``trace[..., 0]`` is the start energy,
        ``trace[..., k]`` the energy after move k; NaN after the last move.

    Raises
    ------
    ValueError
        Bad input, or a grid of more than ``MAX_NODES`` (2**29 - 1) nodes.
    KeyboardInterrupt
        On Ctrl-C, within a few hundredths of a second even inside one move.
    """
    lam = _check_lam(lam)
    U = _check_unary(unary, lam)
    single = U.ndim == 3
    if single:
        U = U[None]
    n, H, W, L = U.shape
    max_cycles = check_int(max_cycles, "max_cycles", 1)
    if max_cycles * L > INT32_MAX - 1:
        raise ValueError(f"max_cycles * L must be < 2**31 - 1, got {max_cycles} * {L}.")
    max_moves = max_cycles * L
    if return_trace and n * (max_moves + 1) * 8 > _TRACE_BYTES:
        raise ValueError(f"return_trace with max_cycles = {max_cycles} needs a trace of "
                         f"{n} x {max_moves + 1} floats (> 1 GiB); lower max_cycles.")
    threads = _check_threads(n_threads, n)
    have_start = labels0 is not None
    if have_start:
        shape = (H, W) if single else (n, H, W)
        z0 = _check_labels(labels0, "labels0", shape, L)
        z0 = np.ascontiguousarray(z0.reshape(n, H, W), dtype=np.int32)
    else:
        z0 = np.zeros((1, 1, 1), dtype=np.int32)
    labels = np.empty((n, H, W), dtype=np.int32)
    energy = np.empty(n, dtype=np.float64)
    trace = (np.full((n, max_moves + 1), np.nan) if return_trace
             else np.empty((1, 1), dtype=np.float64))
    kernels.alpha_expansion_batch(U, lam, z0, have_start, max_moves, labels, energy,
                            trace, bool(return_trace), threads)
    if single:
        out = (labels[0], float(energy[0]))
        return out + (trace[0],) if return_trace else out
    return (labels, energy, trace) if return_trace else (labels, energy)


def potts_lagrangian(costs: Any, multiplier: float, grid: Tuple[int, int] = (10, 10),
                     labels0: Any = None, max_cycles: int = 20, *,
                     n_threads: Optional[int] = None
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per image, argmin_z ``multiplier * sum_r costs[i, r, z_r] + potts_energy(z)`` (alpha-expansion).

    This is the subproblem of the Lagrangian relaxation of the Potts bias
    (paper eq. 16): maximise ``-sum_i E(z_i)`` subject to
    ``sum_i c_i(z_i) <= budget``, with a per-region cost table c. A larger
    multiplier weights the cost more (at the limit the per-region argmin, the
    touching configuration); ``multiplier = 0`` ignores the costs.

    Parameters
    ----------
    costs : array-like of shape (n, R, L)
        Latent cost of label l at region r of image i; R = H * W, row-major.
    multiplier : float
        Lagrange multiplier, finite and >= 0.
    grid : (H, W), default=(10, 10)
    labels0 : array-like of int, shape (n, R) or (n, H, W), optional
        Start labelings (default: argmin of the scaled costs).
    max_cycles : int, default=20
    n_threads : int, optional

    Returns
    -------
    labels : ndarray of int32, shape (n, R)
    cost : ndarray of float64, shape (n,)
        ``sum_r costs[i, r, labels[i, r]]`` in float64 (correctly rounded).
    potts : ndarray of int64, shape (n,)
        ``potts_energy`` of each labeling.
    """
    C = check_array(costs, "costs", ndim=3, finite=False)
    n, R, L = C.shape
    if 0 in C.shape:
        raise ValueError(f"costs must have n, R, L >= 1, got shape {C.shape}.")
    H, W = check_grid(grid)
    if H * W != R:
        raise ValueError(f"grid {H} x {W} has {H * W} regions but costs has R = {R}.")
    mult = _check_lam(multiplier, "multiplier")
    top = extent(C, "costs")
    _check_energy(top, R, 0.0, "costs", "costs")                    # the cost sums
    _check_energy(top * mult, R, 1.0, "multiplier * costs", "costs or multiplier")
    if labels0 is not None:
        z0 = _check_labels(labels0, "labels0")
        if z0.shape == (n, R):
            z0 = z0.reshape(n, H, W)
        elif z0.shape != (n, H, W):
            raise ValueError(f"labels0 must have shape ({n}, {R}) or ({n}, {H}, {W}), got "
                             f"{z0.shape}.")
        labels0 = z0
    unary = (C * C.dtype.type(mult)).reshape(n, H, W, L)
    if not np.isfinite(unary).all():
        raise ValueError("multiplier * costs overflows; use a smaller multiplier.")
    labels, _ = alpha_expansion(unary, 1.0, labels0, max_cycles, n_threads=n_threads)
    labels = labels.reshape(n, R)
    picked = np.take_along_axis(C.astype(np.float64, copy=False), labels[..., None].astype(np.intp),
                                axis=-1)[..., 0]
    cost = np.array([exact_sum(row) for row in picked])
    return labels, cost, potts_energy(labels.reshape(n, H, W), n_threads=n_threads)
