"""The reconfigurable region-part model of the scene experiment (paper section 5.3).

An image is a grid of R = H * W regions with a feature vector each; its latent
value is a part label per region, the parts shared by all classes::

    score(x, y, z) = sum_r ( u_{z_r} . x_r + v_{y, z_r} )

(``u_p`` the part filters, ``v_{y,p}`` the class-to-part assignment scores).
For a fixed class the score is separable over regions, so the LS-SVM bound
family treats the R part labels of an image as R latent variables with the
per-region cost ``c_{i,r}(p) = -(u_p . x_r + v_{y_i,p}) / n``.

This module holds the model (Cython inference in ``_kernels/_regions.pyx``).
The Potts bias that favours spatially coherent labelings is in
``_potts_bias.py``, the paper's initialisations (parts by k-means, labels by
alpha-expansion) in ``_part_init.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _regions as kernels
from .._validation import INT32_MAX, check_grid, check_indices, check_int, extent
from ._models import (Augmented, LatentModel, _threads, check_examples, check_loss_matrix,
                      check_prepared, check_weights, pass_sums)

__all__ = ["RegionPartModel", "Regions"]

#: What the model and the initialisations accept as X.
REGION_FEATURES = "an (n, R, d) array of region features"


@dataclass
class Regions:
    """Data of :class:`RegionPartModel`: region features X of shape (n, R, d), C-contiguous."""

    X: np.ndarray

    def __len__(self) -> int:
        return int(self.X.shape[0])


class RegionPartModel(LatentModel):
    """Scene classification with a latent part label per region (the paper's RBoW model).

    ``w = (U, V)`` with part filters ``U`` (n_parts, d) and class-to-part
    scores ``V`` (n_classes, n_parts), flattened in that order (row-major);
    ``score(x, y, z) = sum_r U[z_r] . x[r] + V[y, z_r]``. The latent value of
    an image is an int32 vector of R part labels (``latent_shape = (R,)``).
    With ``shared_parts=False`` every class has its own n_parts filters (the
    original reconfigurable model of Parizi et al. 2012): U is (n_classes *
    n_parts, d) and ``score(x, y, z) = sum_r U[y n_parts + z_r] . x[r] + V[y, z_r]``.

    With shared parts the class enters only through V, so from part labels that
    do not depend on the class (random labels) the first bound is always
    minimised at w = 0 (its U block cancels against the wrong classes' pieces
    with the same labels, and random labels give every class the same part
    histogram); class-specific parts carry the class in U too.
    Loss-augmented inference computes the part responses ``x U^T`` once per
    image (BLAS), then each class in O(R n_parts); nogil, prange over images.

    Parameters
    ----------
    n_classes : int >= 2
    n_parts : int >= 1
        Parts shared by all classes.
    grid : (H, W), default=(10, 10)
        Regions per image, R = H * W in row-major order (the Potts bias and
        the coherent initialisation use the 4-neighbourhood of this grid).
    loss : array of shape (n_classes, n_classes), optional
        Delta[y_true, y]; 0-1 loss by default.
    shared_parts : bool, default=True
        Parts shared by all classes (the paper's model), or n_parts per class.
    """

    def __init__(self, n_classes: int, n_parts: int, grid: Tuple[int, int] = (10, 10), *,
                 loss: Optional[Any] = None, shared_parts: bool = True):
        self.n_classes = check_int(n_classes, "n_classes", 2, INT32_MAX)
        self.n_parts = check_int(n_parts, "n_parts", 1, INT32_MAX)
        self.grid = check_grid(grid)
        self._loss = check_loss_matrix(loss, self.n_classes)
        if not isinstance(shared_parts, (bool, np.bool_)):
            raise ValueError(f"shared_parts must be True or False, got {shared_parts!r}.")
        self.shared_parts = bool(shared_parts)

    def __repr__(self) -> str:
        extra = "" if self.shared_parts else ", shared_parts=False"
        return (f"RegionPartModel(n_classes={self.n_classes}, n_parts={self.n_parts}, "
                f"grid={self.grid}{extra})")

    @property
    def n_filters(self) -> int:
        """Rows of U: n_parts, or n_classes * n_parts without shared parts."""
        return self.n_parts * (1 if self.shared_parts else self.n_classes)

    def _off(self, y: int) -> int:
        return 0 if self.shared_parts else int(y) * self.n_parts

    @property
    def n_regions(self) -> int:
        return self.grid[0] * self.grid[1]

    # -- data ------------------------------------------------------------------
    def prepare(self, X: Any) -> Regions:
        """Validate X: an (n, R, d) array of finite numbers with R = H * W."""
        if isinstance(X, Regions):
            extent(self._data(X).X, "X")
            return X
        arr = check_examples(X, REGION_FEATURES)
        R = arr.shape[1]
        if R != self.n_regions:
            raise ValueError(f"X has {R} regions per image but grid {self.grid} has "
                             f"{self.n_regions}.")
        return Regions(arr)

    def n_samples(self, data: Regions) -> int:
        return int(data.X.shape[0])

    def _data(self, data: Any) -> Regions:
        R = check_prepared(data, Regions).shape[1]
        if R != self.n_regions:
            raise ValueError(f"X has {R} regions per image but grid {self.grid} has "
                             f"{self.n_regions}.")
        return data

    def example(self, data: Regions, i: int) -> np.ndarray:
        return data.X[i]

    def latent_shape(self, data: Regions) -> Tuple[int, ...]:
        return (self.n_regions,)

    def n_latent(self, data: Regions) -> np.ndarray:
        return np.full((data.X.shape[0], self.n_regions), self.n_parts, dtype=np.int32)

    # -- the model ---------------------------------------------------------------
    def size_joint_feature(self, data: Regions) -> int:
        return self.n_filters * int(data.X.shape[2]) + self.n_classes * self.n_parts

    def check_size(self, data: Regions, size: int) -> None:
        if self.size_joint_feature(data) != size:
            d = (size - self.n_classes * self.n_parts) / self.n_filters
            raise ValueError(f"X has {data.X.shape[2]} features per region, but the model was "
                             f"trained with {d:g}.")

    def feature_norm_bound(self, data: Regions) -> float:
        """sqrt((max_i sum_r ||x_ir||)^2 + R^2): the part sums are at most the sum of the
        region norms, the (class, part) counts sum to R."""
        X = data.X
        norms = np.sqrt(np.einsum("ijk,ijk->ij", X, X, dtype=np.float64)).sum(axis=1)
        return float(np.hypot(norms.max(), X.shape[1]))

    def joint_feature(self, x: np.ndarray, y: int, z: Any) -> np.ndarray:
        """phi(x, y, z): per part the sum of its regions' features, then (class, part) counts."""
        P, d = self.n_parts, x.shape[1]
        z = np.asarray(z, dtype=np.intp)
        U = np.zeros((self.n_filters, d))
        np.add.at(U, self._off(y) + z, x.astype(np.float64))
        V = np.zeros((self.n_classes, P))
        np.add.at(V[int(y)], z, 1.0)
        return np.concatenate([U.ravel(), V.ravel()])

    def loss(self, y_true: int, y: int) -> float:
        return float(self._loss[int(y_true), int(y)])

    def loss_matrix(self) -> np.ndarray:
        return self._loss

    def split(self, w: np.ndarray, d: int) -> Tuple[np.ndarray, np.ndarray]:
        """(U (n_filters, d), V (n_classes, n_parts)) views of w."""
        w = check_weights(w, self.n_filters * d + self.n_classes * self.n_parts)
        F, P = self.n_filters, self.n_parts
        return w[: F * d].reshape(F, d), w[F * d:].reshape(self.n_classes, P)

    def _work(self, data: Regions, m: int) -> int:
        return _threads(m * data.X.shape[1] * data.X.shape[2] * self.n_filters)

    def loss_augmented(self, data: Regions, y: np.ndarray, w: np.ndarray, idx: np.ndarray, *,
                       table: bool = False, phi: bool = False, augment: bool = True
                       ) -> Augmented:
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        m, (R, d), C, P = idx.shape[0], X.shape[1:], self.n_classes, self.n_parts
        U, V = self.split(w, d)
        UT = np.ascontiguousarray(U.T)
        V = np.ascontiguousarray(V)
        H = np.empty(m)
        y_hat = np.empty(m, dtype=np.int32)
        z_hat = np.empty((m, R), dtype=np.int32)
        tab = np.empty((m, R, P)) if table else np.empty((0, 0, 0))
        n_chunks = -(-m // kernels.CHUNK)
        slots = np.empty((n_chunks, self.n_filters * d + C * P)) if phi else np.empty((0, 0))
        loss_slots = np.empty(n_chunks if phi else 0)
        Lm = self._loss if augment else np.zeros((C, C))
        kernels.augmented_pass(X, y, idx, UT, V, Lm, H, y_hat, z_hat, tab, slots, loss_slots,
                         self._work(data, m))
        phi_sum, loss_sum = pass_sums(self._loss, y, idx, y_hat, slots, loss_slots, phi, augment)
        return Augmented(H, y_hat, z_hat, tab if table else None, phi_sum, loss_sum)

    def latent_table(self, data: Regions, y: np.ndarray, w: np.ndarray,
                     idx: np.ndarray) -> np.ndarray:
        """s_{i,r}(p) = u_p . x_r + v_{y_i,p} for i in ``idx``: shape (m, R, n_parts)."""
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        U, V = self.split(w, X.shape[2])
        tab = np.empty((idx.shape[0], X.shape[1], self.n_parts))
        kernels.latent_table(X, y, idx, np.ascontiguousarray(U.T), np.ascontiguousarray(V), tab,
                       self._work(data, idx.shape[0]))
        return tab

    def phi_sum(self, data: Regions, y: np.ndarray, z: np.ndarray,
                idx: np.ndarray) -> np.ndarray:
        data, y, idx = self._batch(data, y, idx)
        X = data.X
        m = idx.shape[0]
        z = check_indices(z, "z", (m, X.shape[1]), self.n_parts)
        D = self.size_joint_feature(data)
        slots = np.empty((-(-m // kernels.CHUNK), D))
        kernels.phi_accumulate(X, y, z, idx, self.n_parts, self.n_classes, slots,
                         _threads(m * X.shape[1] * X.shape[2] * 16), not self.shared_parts)
        return slots.sum(axis=0)

    def joint_features(self, data: Regions, y: np.ndarray, z: np.ndarray,
                       idx: np.ndarray) -> np.ndarray:
        data, y, idx = self._batch(data, y, idx)
        z = check_indices(z, "z", (idx.shape[0], data.X.shape[1]), self.n_parts)
        return np.array([self.joint_feature(data.X[int(i)], int(y[i]), z[r])
                         for r, i in enumerate(idx)], dtype=np.float64).reshape(
            idx.shape[0], self.size_joint_feature(data))
