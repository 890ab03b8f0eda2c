"""The paper's latent-location model: multiclass classification with a latent candidate.

Example i is a set of L_i candidate feature vectors (e.g. the windows of an
image); ``phi(x, y, z)`` puts candidate ``x[z]`` in the y-th of ``n_classes``
blocks (paper section 5.2). Inference runs in Cython
(``_kernels/_lssvm.pyx``), and so do the model's fused solver steps: one
block-coordinate Frank-Wolfe pass (``bcfw_epoch``) and one dual coordinate
ascent pass with its dual state (``dcd_epoch``, ``dcd_state``), which read
and update the solvers' state arrays in place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _lssvm as kernels
from .._validation import INT32_MAX, check_array, check_indices, check_inplace, check_int, extent
from ._models import (Augmented, LatentModel, _threads, check_examples, check_loss_matrix,
                      check_prepared, check_weights, pass_sums)

__all__ = ["Candidates", "LatentMulticlassModel"]

#: Scores per example (L x n_classes) from which the fused epochs score an example by one
#: BLAS gemm: below it the loop vectorised over classes was faster (d = 64, float32).
GEMM_MIN_SCORES = 16

@dataclass
class Candidates:
    """Data of :class:`LatentMulticlassModel`: X (n, L, d) padded, and each example's L_i."""

    X: np.ndarray
    n_options: np.ndarray

    def __len__(self) -> int:
        return int(self.X.shape[0])


class LatentMulticlassModel(LatentModel):
    """Multiclass classification with a latent choice among candidate feature vectors.

    Each example is an array of L candidate feature vectors (e.g. the windows
    of an image): X has shape (n, L, d), or is a list of (L_i, d) arrays.
    ``phi(x, y, z)`` puts ``x[z]`` in the y-th of ``n_classes`` blocks, so
    ``w = (w_1, .., w_C)`` scores ``w_y . x[z]`` (paper section 5.2). With
    L = 1 the LS-SVM objective is the Crammer-Singer multiclass SVM.

    Parameters
    ----------
    n_classes : int >= 2
    loss : array of shape (n_classes, n_classes), optional
        Delta[y_true, y] (non-negative, zero diagonal); 0-1 loss by default.
    positions : array of shape (L, 2), optional
        Relative (row, column) in [0, 1] of each candidate, which enables the
        initialisations "center" and "top-left".
    """

    def __init__(self, n_classes: int, *, loss: Optional[Any] = None,
                 positions: Optional[Any] = None):
        self.n_classes = check_int(n_classes, "n_classes", 2, INT32_MAX)
        self._loss = check_loss_matrix(loss, self.n_classes)
        if positions is not None:
            positions = np.array(check_array(positions, "positions", dtype=np.float64))
            if positions.shape[1] != 2:
                raise ValueError(f"positions must be an (L, 2) array of finite (row, column) "
                                 f"coordinates, got shape {positions.shape}.")
        self.positions = positions

    def __repr__(self) -> str:
        return f"LatentMulticlassModel(n_classes={self.n_classes})"

    # -- data ------------------------------------------------------------------
    def prepare(self, X: Any) -> Candidates:
        """Validate X: an (n, L, d) array or a list of (L_i, d) arrays (padded to max L_i)."""
        if isinstance(X, Candidates):
            extent(self._data(X).X, "X")
            return X
        if isinstance(X, np.ndarray) and X.dtype != object:
            arr = check_examples(X, "an (n, L, d) array or a list of (L_i, d) arrays")
            n_options = np.full(arr.shape[0], arr.shape[1], dtype=np.int32)
        else:
            if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
                raise ValueError(f"X must be an (n, L, d) array or a list of (L_i, d) arrays, "
                                 f"got {X!r:.80}.")
            items = []
            for i, a in enumerate(X):
                try:
                    items.append(np.asarray(a))
                except (ValueError, TypeError) as exc:          # ragged rows
                    raise ValueError(f"X[{i}] must be an (L_i, d) array of numbers: {exc}"
                                     ) from None
            if not items:
                raise ValueError("X is empty: at least one example is required.")
            for i, a in enumerate(items):
                if a.ndim != 2 or a.shape[0] == 0 or a.dtype.kind not in "fiub":
                    raise ValueError(f"X[{i}] must be a non-empty (L_i, d) array of numbers, got "
                                     f"shape {a.shape} and dtype {a.dtype}.")
            d = items[0].shape[1]
            bad = [i for i, a in enumerate(items) if a.shape[1] != d]
            if bad:
                raise ValueError(f"every X[i] must have the same number of features d = {d}; "
                                 f"X[{bad[0]}] has {items[bad[0]].shape[1]}.")
            dtype = (np.float32 if all(a.dtype == np.float32 for a in items) else np.float64)
            n_options = np.array([a.shape[0] for a in items], dtype=np.int32)
            arr = np.zeros((len(items), int(n_options.max()), d), dtype=dtype)
            for i, a in enumerate(items):
                arr[i, : a.shape[0]] = a
            arr = check_array(arr, "X", ndim=3)
        if self.positions is not None and arr.shape[1] > self.positions.shape[0]:
            raise ValueError(f"X has {arr.shape[1]} candidates per example but positions has "
                             f"{self.positions.shape[0]} rows.")
        return Candidates(arr, n_options)

    def n_samples(self, data: Candidates) -> int:
        return int(data.X.shape[0])

    def _data(self, data: Any) -> Candidates:
        n, L = check_prepared(data, Candidates).shape[:2]
        opts = data.n_options
        if not (isinstance(opts, np.ndarray) and opts.dtype == np.int32 and opts.shape == (n,)
                and opts.flags.c_contiguous):
            raise ValueError(f"Candidates.n_options must be a C-contiguous int32 array of "
                             f"shape ({n},).")
        if (opts < 1).any() or (opts > L).any():
            raise ValueError(f"Candidates.n_options must lie in [1, {L}] (candidates per "
                             "example).")
        if self.positions is not None and L > self.positions.shape[0]:
            raise ValueError(f"X has {L} candidates per example but positions has "
                             f"{self.positions.shape[0]} rows.")
        return data

    def _latents(self, data: Candidates, z: Any, idx: np.ndarray) -> np.ndarray:
        return check_indices(z, "z", (idx.shape[0],), data.n_options[idx])

    def example(self, data: Candidates, i: int) -> np.ndarray:
        return data.X[i, : data.n_options[i]]

    def n_latent(self, data: Candidates) -> np.ndarray:
        return data.n_options

    def latent_positions(self, data: Candidates) -> Optional[np.ndarray]:
        return None if self.positions is None else self.positions[: data.X.shape[1]]

    # -- the model ---------------------------------------------------------------
    def size_joint_feature(self, data: Candidates) -> int:
        return self.n_classes * int(data.X.shape[2])

    def check_size(self, data: Candidates, size: int) -> None:
        d = data.X.shape[2]
        if self.n_classes * d != size:
            raise ValueError(f"X has {d} features per candidate, but the model was trained "
                             f"with {size // self.n_classes}.")

    def feature_norm_bound(self, data: Candidates) -> float:
        """max_i,z ||x_i[z]|| (phi puts one candidate in one block)."""
        X = data.X
        return float(np.sqrt(max(float(np.einsum("ijk,ijk->ij", X, X, dtype=np.float64).max()),
                                 0.0)))

    def joint_feature(self, x: np.ndarray, y: int, z: int) -> np.ndarray:
        d = x.shape[1]
        out = np.zeros(self.n_classes * d)
        out[y * d:(y + 1) * d] = x[z]
        return out

    def loss(self, y_true: int, y: int) -> float:
        return float(self._loss[int(y_true), int(y)])

    def loss_matrix(self) -> np.ndarray:
        return self._loss

    def _W(self, data: Candidates, w: np.ndarray) -> np.ndarray:
        return check_weights(w, self.n_classes * data.X.shape[2]).reshape(self.n_classes,
                                                                          data.X.shape[2])

    def loss_augmented(self, data: Candidates, y: np.ndarray, w: np.ndarray, idx: np.ndarray, *,
                       table: bool = False, phi: bool = False, augment: bool = True
                       ) -> Augmented:
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        m, (L, d), C = idx.shape[0], X.shape[1:], self.n_classes
        WT = np.ascontiguousarray(self._W(data, w).T)
        H = np.empty(m)
        y_hat = np.empty(m, dtype=np.int32)
        z_hat = np.empty(m, dtype=np.int32)
        tab = np.empty((m, L)) if table else np.empty((0, 0))
        n_chunks = -(-m // kernels.CHUNK)
        slots = np.empty((n_chunks, C, d)) if phi else np.empty((0, 0, 0))
        loss_slots = np.empty(n_chunks if phi else 0)
        Lm = self._loss if augment else np.zeros((C, C))
        kernels.augmented_pass(X, data.n_options, y, idx, WT, Lm, H, y_hat, z_hat, tab, slots,
                         loss_slots, _threads(m * L * d * C))
        phi_sum, loss_sum = pass_sums(self._loss, y, idx, y_hat, slots, loss_slots, phi, augment)
        return Augmented(H, y_hat, z_hat, tab if table else None, phi_sum, loss_sum)

    def latent_table(self, data: Candidates, y: np.ndarray, w: np.ndarray,
                     idx: np.ndarray) -> np.ndarray:
        data, y, idx = self._batch(data, y, idx)
        tab = np.empty((idx.shape[0], data.X.shape[1]))
        kernels.latent_table(data.X, data.n_options, y, idx, self._W(data, w), tab,
                       _threads(tab.size * data.X.shape[2]))
        return tab

    def joint_features(self, data: Candidates, y: np.ndarray, z: np.ndarray,
                       idx: np.ndarray) -> np.ndarray:
        data, y, idx = self._batch(data, y, idx)
        z = self._latents(data, z, idx)
        m, d = idx.shape[0], data.X.shape[2]
        out = np.zeros((m, self.n_classes, d))
        out[np.arange(m), y[idx]] = data.X[idx, z]
        return out.reshape(m, -1)

    def phi_sum(self, data: Candidates, y: np.ndarray, z: np.ndarray,
                idx: np.ndarray) -> np.ndarray:
        data, y, idx = self._batch(data, y, idx)
        z = self._latents(data, z, idx)
        X = data.X
        slots = np.empty((-(-idx.shape[0] // kernels.CHUNK), self.n_classes, X.shape[2]))
        kernels.phi_accumulate(X, y, z, idx, slots,
                         _threads(idx.shape[0] * X.shape[2] * 16))
        return slots.sum(axis=0).reshape(-1)

    # -- fused solver steps: inference and the dual update in one Cython pass ----------
    def bcfw_epoch(self, data: Candidates, y: np.ndarray, idx: np.ndarray, order: np.ndarray,
                   w: np.ndarray, P: np.ndarray, ell: np.ndarray, lam: float) -> float:
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        C, d, m = self.n_classes, X.shape[2], idx.shape[0]
        order = check_indices(order, "order", None, m, dtype=np.int64)
        W = check_inplace(w, "w", (C * d,)).reshape(C, d)
        P = check_inplace(P, "P", (m, C * d))
        ell = check_inplace(ell, "ell", (m,))
        return kernels.bcfw_epoch(X, data.n_options, y, idx, order, self._loss, W,
                            P.reshape(P.shape[0], C, d), ell, float(lam),
                            X.shape[1] * C >= GEMM_MIN_SCORES)

    def dcd_epoch(self, data: Candidates, y: np.ndarray, idx: np.ndarray, z: np.ndarray,
                  order: np.ndarray, w: np.ndarray, ws: Any, block_gap: np.ndarray,
                  lam: float, max_inner: int) -> float:
        """One dual coordinate ascent pass (see :class:`gmmfast.lssvm.DCD`), in place.

        ``w`` moves as the pass goes; ``block_gap[r]`` receives each visited example's
        block duality gap; returns their sum.
        """
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        m = idx.shape[0]
        z = self._latents(data, z, idx)
        order = check_indices(order, "order", None, m, dtype=np.int64)
        w = check_inplace(w, "w", (self.n_classes * X.shape[2],))
        block_gap = check_inplace(block_gap, "block_gap", (m,))
        self._check_ws(data, idx, ws)
        return kernels.dcd_epoch(X, data.n_options, y, idx, z,
                           order, self._loss, w.reshape(self.n_classes, X.shape[2]), ws.y, ws.z,
                           ws.alpha, ws.n, block_gap, float(lam), int(max_inner),
                           X.shape[1] * self.n_classes >= GEMM_MIN_SCORES)

    def dcd_state(self, data: Candidates, y: np.ndarray, idx: np.ndarray,
                  ws: Any) -> Tuple[np.ndarray, float]:
        """(sum_r sum_k alpha_rk phi_rk, sum_r sum_k alpha_rk Delta_rk) of the dual state."""
        data, y, idx = self._batch(data, y, idx)
        self._check_ws(data, idx, ws)
        P = np.empty((self.n_classes, data.X.shape[2]))
        ell = kernels.dcd_state(data.X, y, idx, self._loss, ws.y, ws.z, ws.alpha, ws.n, P)
        return P.reshape(-1), float(ell)

    def _check_ws(self, data: Candidates, idx: np.ndarray, ws: Any) -> None:
        """The working sets the DCD kernels read (arrays ``y``, ``z``, ``alpha`` of shape (m,
        capacity) and ``n`` (m,), as the DCD solver keeps them): shapes, and labels / latent
        values in range in every used slot."""
        m = idx.shape[0]
        cap = np.shape(ws.y)[1] if np.ndim(ws.y) == 2 else -1
        for name, arr, dt in (("ws.y", ws.y, np.int32), ("ws.z", ws.z, np.int32),
                              ("ws.alpha", ws.alpha, np.float64)):
            if not (isinstance(arr, np.ndarray) and arr.dtype == dt and arr.shape == (m, cap)
                    and arr.flags.c_contiguous and cap >= 1):
                raise ValueError(f"{name} must be a C-contiguous {np.dtype(dt)} array of shape "
                                 f"({m}, capacity), as WorkingSets makes it.")
        check_inplace(ws.alpha, "ws.alpha", (m, cap))
        used = check_indices(ws.n, "ws.n", (m,), cap + 1)
        if (used < 1).any():
            raise ValueError("ws.n must be at least 1 for every example (its own labelling).")
        slot = np.arange(cap)[None, :] < used[:, None]
        if (ws.y[slot] < 0).any() or (ws.y[slot] >= self.n_classes).any():
            raise ValueError(f"ws.y must hold labels in [0, {self.n_classes}).")
        lim = np.broadcast_to(data.n_options[idx][:, None], (m, cap))[slot]
        if (ws.z[slot] < 0).any() or (ws.z[slot] >= lim).any():
            raise ValueError("ws.z must hold latent values in [0, n_options) of each example.")
