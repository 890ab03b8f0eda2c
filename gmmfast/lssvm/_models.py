"""Models for latent structural SVMs: feature map, inference and loss (separate from the learner).

A model defines the joint feature map ``phi(x, y, z)`` of an example ``x``,
a label ``y`` in ``0..n_classes-1`` and a latent value ``z``, the label loss
``Delta(y_true, y)``, and (in batch form) the three problems a learner needs:

- loss-augmented inference  ``argmax_{y, z} w.phi(x_i, y, z) + Delta(y_i, y)``
- inference                 ``argmax_{y, z} w.phi(x_i, y, z)``
- latent completion         ``argmax_z w.phi(x_i, y_i, z)`` (from the table of
  latent scores ``s_i(z) = w.phi(x_i, y_i, z)``)

:class:`LatentModel` implements all batch methods by enumeration from
``joint_feature``, so a model written in plain Python only defines
``n_classes``, ``prepare``/``n_latent`` (if its data are not a sequence of
examples), ``size_joint_feature`` and ``joint_feature``; it is slow but
exact. :class:`LatentMulticlassModel` (the paper's latent-location model,
in ``_multiclass.py``) and :class:`RegionPartModel` (the scene model, in
``_region_model.py``) run the same methods in Cython. Ties are broken the same
way everywhere: the first maximum in the order z, then y.

Latent variables. By default an example has one latent variable, an int in
``0..n_latent_i-1``. A model may give each example several latent variables
by returning a non-empty ``latent_shape(data)`` (e.g. ``(R,)``: one part label
per region, :class:`gmmfast.lssvm.RegionPartModel`). Then a latent value is
an int array of that shape, ``n_latent`` has shape ``(n,) + latent_shape``
(the values of each variable), and the latent score table has one row per
variable, ``(m,) + latent_shape + (max_latent,)``. The learner needs the score
to be *separable* over the variables for a fixed label,
``w.phi(x_i, y, z) = sum_v s_{i,v}(z_v)``, so that a bound's value is a sum of
per-variable costs and the touching bound, the random walk and the budget all
work per variable. Such models must implement the batch methods themselves
(enumeration over every joint value is not done).

Fused solver steps. A model may also run a bound solver's per-example steps
together with its inference, in one pass: ``bcfw_epoch`` (block-coordinate
Frank-Wolfe; :class:`LatentModel` runs it by enumeration) and ``dcd_epoch`` /
``dcd_state`` (dual coordinate ascent; :class:`LatentMulticlassModel` runs
them in Cython). They update the solver's state arrays in place and import
nothing of the solvers: the solvers call them, never the other way round.

This module holds the base model, the record of an inference pass
(:class:`Augmented`) and the checks that the models' data share.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels._common import openmp_max_threads
from .._validation import (INT32_MAX, check_array, check_indices, check_int, extent,
                           integer_array)

__all__ = ["LatentModel", "Augmented"]

#: Multiply-adds per extra OpenMP thread: below this a pass runs on fewer threads (the
#: start-up of a parallel region costs more than it saves; results do not depend on it).
WORK_PER_THREAD = 1 << 21


def _threads(work: int) -> int:
    return int(max(1, min(openmp_max_threads(), work // WORK_PER_THREAD)))


@dataclass
class Augmented:
    """Loss-augmented inference for the examples ``idx`` at ``w``.

    Attributes
    ----------
    H : ndarray (m,)
        max_{y, z} w.phi(x_i, y, z) + Delta(y_i, y).
    y_hat : ndarray of int32 (m,)
    z_hat : ndarray of int32 (m,) + latent_shape
        The maximisers.
    table : ndarray (m,) + latent_shape + (max_latent,), or None
        s_i(z) = w.phi(x_i, y_i, z) (the latent scores of the true label; per
        latent variable when there are several), -inf beyond the example's
        latent values.
    phi_sum : ndarray (size_joint_feature,) or None
        sum_i phi(x_i, y_hat_i, z_hat_i).
    loss_sum : float
        sum_i Delta(y_i, y_hat_i).
    """

    H: np.ndarray
    y_hat: np.ndarray
    z_hat: np.ndarray
    table: Optional[np.ndarray]
    phi_sum: Optional[np.ndarray]
    loss_sum: float


class LatentModel:
    """Base model: every batch method by enumeration over (y, z) from ``joint_feature``.

    Subclasses define ``n_classes``, ``size_joint_feature(data)`` and
    ``joint_feature(x, y, z)``, and ``n_latent(data)`` (latent values per
    example). ``prepare(X)`` turns user input into the model's data (default:
    a list of the examples); ``example(data, i)`` returns one example.
    ``latent_positions`` may return (n_latent_max, 2) relative image
    coordinates (row, column in [0, 1]) of the latent values, which enables
    the named initialisations "center" and "top-left". A model with several
    latent variables per example (``latent_shape``) overrides the batch
    methods ``loss_augmented``, ``latent_table``, ``phi_sum`` and
    ``joint_features``.
    """

    n_classes: int = 2

    def _single_latent_only(self, data: Any, what: str) -> None:
        if tuple(self.latent_shape(data)) != ():
            raise NotImplementedError(
                f"{type(self).__name__} has latent_shape {tuple(self.latent_shape(data))}: "
                f"it must implement {what} itself (the base class enumerates one latent int).")

    # -- data ------------------------------------------------------------------
    def prepare(self, X: Any) -> Any:
        """Validate ``X`` and return the model's data for it."""
        data = list(X)
        if not data:
            raise ValueError("X is empty: at least one example is required.")
        return data

    def n_samples(self, data: Any) -> int:
        return len(data)

    def _data(self, data: Any) -> Any:
        """Check the structure of prepared data (what the kernels index by); returns it."""
        return data

    def _batch(self, data: Any, y: Any, idx: Any) -> Tuple[Any, np.ndarray, np.ndarray]:
        """The arguments of a batch method, checked: the data, y as int32 labels of every
        example in [0, n_classes), idx as int64 example indices in [0, n)."""
        data = self._data(data)
        n = self.n_samples(data)
        y = check_indices(y, "y", (n,), self.n_classes)
        idx = check_indices(idx, "idx", None, n, dtype=np.int64)
        return data, y, idx

    def example(self, data: Any, i: int) -> Any:
        return data[i]

    def n_latent(self, data: Any) -> np.ndarray:
        """Number of latent values of each example, int32 of shape (n,) + latent_shape."""
        raise NotImplementedError

    def latent_shape(self, data: Any) -> Tuple[int, ...]:
        """Shape of one example's latent value: () for one int (the default), (R,) for R ints."""
        return ()

    def latent_positions(self, data: Any) -> Optional[np.ndarray]:
        """(n_latent_max, 2) relative (row, column) of each latent value, or None."""
        return None

    # -- the model ---------------------------------------------------------------
    def size_joint_feature(self, data: Any) -> int:
        raise NotImplementedError

    def check_size(self, data: Any, size: int) -> None:
        """Raise a ValueError if ``data`` does not fit a w of ``size`` entries."""
        if self.size_joint_feature(data) != size:
            raise ValueError(f"X gives joint features of size {self.size_joint_feature(data)}, "
                             f"but the model was trained with {size}.")

    def joint_feature(self, x: Any, y: int, z: int) -> np.ndarray:
        raise NotImplementedError

    def _checked_feature(self, x: Any, i: int, y: int, z: Any, size: int,
                         finite: bool = True) -> np.ndarray:
        """``joint_feature(x, y, z)`` of example ``i`` as the batch methods below receive it:
        a vector of ``size`` finite real numbers, else a ValueError naming the method and
        the example. Each vector is checked where it is received (its length compared, its
        values tested by np.isfinite unless ``finite`` is False, when the caller tests
        them), with no further call to the model, so a model whose sizes differ between
        examples, or whose features are NaN or infinite for some (y, z), is named whichever
        pass reads them first. The vector is returned as the model gave it (np.asarray
        keeps its dtype): the arithmetic is that of before."""
        phi = np.asarray(self.joint_feature(x, y, z))
        if phi.shape != (size,) or phi.dtype.kind not in "fiub":
            raise ValueError(
                f"{type(self).__name__}.joint_feature must return a vector of "
                f"size_joint_feature(data) = {size} real numbers, got dtype {phi.dtype} and "
                f"shape {phi.shape} (example {i}, y={y}, z={_latent_text(z)}).")
        if finite:
            self._check_finite(phi, i, y, z)
        return phi

    def _check_finite(self, phi: np.ndarray, i: int, y: int, z: Any) -> None:
        if not np.isfinite(phi).all():
            raise ValueError(
                f"{type(self).__name__}.joint_feature gave NaN or infinity (example {i}, "
                f"y={y}, z={_latent_text(z)}): joint features must be finite.")

    def _checked_score(self, w: np.ndarray, x: Any, i: int, y: int, z: Any,
                       size: int) -> float:
        """w.phi(x_i, y, z), the feature checked as by :meth:`_checked_feature` but its
        finiteness on the score: with w finite, w.phi is NaN or infinite exactly when phi
        holds a NaN or an infinity (or the sum overflows), so np.isfinite reads phi only
        then (a score overflowing from finite features goes on as before)."""
        phi = self._checked_feature(x, i, y, z, size, finite=False)
        s = float(np.dot(w, phi))
        if not math.isfinite(s):
            self._check_finite(phi, i, y, z)
        return s

    def feature_norm_bound(self, data: Any) -> Optional[float]:
        """An upper bound on ||phi(x_i, y, z)|| over the examples, labels and latent values
        (None when unknown; the learner then skips its check of ``lam``)."""
        return None

    def loss(self, y_true: int, y: int) -> float:
        """Delta(y_true, y); 0-1 by default."""
        return 0.0 if int(y_true) == int(y) else 1.0

    def loss_matrix(self) -> np.ndarray:
        """Delta as an (n_classes, n_classes) array, [y_true, y]."""
        C = self.n_classes
        return np.array([[self.loss(a, b) for b in range(C)] for a in range(C)], dtype=np.float64)

    # -- batch problems (the learner calls only these) -----------------------------
    def loss_augmented(self, data: Any, y: np.ndarray, w: np.ndarray, idx: np.ndarray, *,
                       table: bool = False, phi: bool = False, augment: bool = True
                       ) -> Augmented:
        """Loss-augmented inference (plain inference with ``augment=False``) for examples ``idx``."""
        self._single_latent_only(data, "loss_augmented")
        nl = self.n_latent(data)
        m = idx.shape[0]
        width = int(nl.max())
        H = np.empty(m)
        y_hat = np.empty(m, dtype=np.int32)
        z_hat = np.empty(m, dtype=np.int32)
        tab = np.full((m, width), -np.inf) if table else None
        phi_sum = np.zeros(self.size_joint_feature(data)) if phi else None
        loss_sum = 0.0
        C = self.n_classes
        D = len(w)
        for r, i in enumerate(idx):
            x = self.example(data, int(i))
            yi = int(y[i])
            best, by, bz = -np.inf, 0, 0
            for z in range(int(nl[i])):
                for c in range(C):
                    s = self._checked_score(w, x, i, c, z, D)
                    if table and c == yi:
                        tab[r, z] = s
                    v = s + (self.loss(yi, c) if augment else 0.0)
                    if v > best:
                        best, by, bz = v, c, z
            H[r], y_hat[r], z_hat[r] = best, by, bz
            if phi:
                phi_sum += self._checked_feature(x, i, by, bz, D)
                loss_sum += self.loss(yi, by)
        return Augmented(H, y_hat, z_hat, tab, phi_sum, loss_sum)

    def latent_table(self, data: Any, y: np.ndarray, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """s_i(z) = w.phi(x_i, y_i, z) for i in ``idx``: shape (m, max_latent), -inf padded."""
        self._single_latent_only(data, "latent_table")
        nl = self.n_latent(data)
        tab = np.full((idx.shape[0], int(nl.max())), -np.inf)
        D = len(w)
        for r, i in enumerate(idx):
            x = self.example(data, int(i))
            for z in range(int(nl[i])):
                tab[r, z] = self._checked_score(w, x, i, int(y[i]), z, D)
        return tab

    def phi_sum(self, data: Any, y: np.ndarray, z: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """sum_r phi(x_i, y_i, z[r]) over i = idx[r]."""
        self._single_latent_only(data, "phi_sum")
        out = np.zeros(self.size_joint_feature(data))
        D = out.shape[0]
        for r, i in enumerate(idx):
            out += self._checked_feature(self.example(data, int(i)), i, int(y[i]), int(z[r]), D)
        return out

    def joint_features(self, data: Any, y: np.ndarray, z: np.ndarray,
                       idx: np.ndarray) -> np.ndarray:
        """phi(x_i, y_i, z[r]) for i = idx[r], as rows of an (m, size_joint_feature) array."""
        D = self.size_joint_feature(data)
        return np.array([self._checked_feature(self.example(data, int(i)), i, int(y[i]),
                                               int(z[r]), D)
                         for r, i in enumerate(idx)], dtype=np.float64).reshape(idx.shape[0], D)

    def bcfw_epoch(self, data: Any, y: np.ndarray, idx: np.ndarray, order: np.ndarray,
                   w: np.ndarray, P: np.ndarray, ell: np.ndarray, lam: float) -> float:
        """One block-coordinate Frank-Wolfe pass (see :class:`gmmfast.lssvm.BCFW`), in place.

        ``w`` (updated as the pass goes), ``P`` (m, size_joint_feature), ``ell`` (m,).
        Returns the sum of the block gaps met.
        """
        m = idx.shape[0]
        gaps = 0.0
        for r in order:
            i = int(idx[r])
            a = self.loss_augmented(data, y, w, idx[r:r + 1])
            yh = int(a.y_hat[0])
            zh = a.z_hat[0] if a.z_hat.ndim > 1 else int(a.z_hat[0])
            phi_hat = self._checked_feature(self.example(data, i), i, yh, zh, len(w))
            lhat = self.loss(int(y[i]), yh) / m
            diff = phi_hat - P[r]
            num = float(diff @ w) / m - ell[r] + lhat
            den = float(diff @ diff) / (lam * m * m)
            gaps += max(num, 0.0)
            if den <= 0 or num <= 0:
                continue
            gamma = min(num / den, 1.0)
            w -= gamma * diff / (lam * m)
            P[r] += gamma * diff
            ell[r] = (1 - gamma) * ell[r] + gamma * lhat
        return gaps


def _latent_text(z: Any) -> str:
    """A latent value for a message: an int, or a short list (several latent variables)."""
    return str(np.asarray(z).tolist()) if np.ndim(z) else str(int(z))


# -- checks of the models' data and arguments (they reach boundscheck=False kernels) --------
def check_weights(w: Any, size: int, name: str = "w") -> np.ndarray:
    """w as a float64 vector of ``size`` finite entries (a ValueError naming ``name``
    otherwise)."""
    try:
        arr = np.asarray(w)
    except (ValueError, TypeError):               # ragged nested sequences
        arr = np.asarray(w, dtype=object)
    if arr.dtype.kind not in "fiu" or arr.shape != (size,):
        raise ValueError(f"{name} must be a vector of {size} real numbers (size_joint_feature), "
                         f"got dtype {arr.dtype} and shape {arr.shape}.")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    extent(arr, name)
    return arr


def check_examples(X: Any, what: str, dtype: Optional[Any] = None) -> np.ndarray:
    """A model's input X as a finite C-contiguous float32/float64 array of 3 dimensions, none
    of them empty (through check_array); errors say what X must be (``what``, e.g. "an
    (n, R, d) array of region features")."""
    try:
        ndim = np.ndim(X)
    except (ValueError, TypeError):               # ragged: check_array says so, naming X
        ndim = 3
    if ndim != 3:
        raise ValueError(f"X must be {what}, got shape {np.shape(X)}.")
    arr = check_array(X, "X", dtype=dtype, ndim=3)
    if 0 in arr.shape:
        raise ValueError(f"X must be {what}, non-empty in every dimension; got shape "
                         f"{arr.shape}.")
    return arr


def check_prepared(data: Any, kind: type) -> np.ndarray:
    """A model's prepared data: a ``kind`` (e.g. Candidates) whose X is a non-empty 3-D
    C-contiguous float32/float64 array; returns that X."""
    if not isinstance(data, kind):
        raise ValueError(f"data must be the {kind.__name__} returned by prepare(X), got "
                         f"{type(data).__name__}.")
    X = data.X
    if not (isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64) and X.ndim == 3
            and X.flags.c_contiguous and X.shape[0] >= 1 and X.shape[1] >= 1
            and X.shape[2] >= 1):
        raise ValueError(f"{kind.__name__}.X must be a non-empty C-contiguous float32/float64 "
                         "array of 3 dimensions; build it with the model's prepare(X).")
    return X


def check_loss_matrix(loss: Optional[Any], n_classes: int, name: str = "loss") -> np.ndarray:
    """Delta(y_true, y) as a (C, C) float64 C-contiguous array of its own (never the caller's
    memory): 0-1 when None; else finite, >= 0, zero diagonal, else a ValueError naming
    ``name``."""
    C = n_classes
    if loss is None:
        return 1.0 - np.eye(C)
    # real numbers only (check_array refuses strings, complex and other non-numeric
    # entries, naming loss). One copy, so that the model never shares the caller's array:
    # check_array made one already unless loss was a C-contiguous float64 array (or wraps
    # one), which it then returns or views
    Lm = check_array(loss, name, dtype=np.float64, ndim=2, finite=False)
    if not isinstance(loss, (list, tuple)) and np.may_share_memory(Lm, loss):
        Lm = Lm.copy()
    got = None
    if Lm.shape != (C, C):
        got = f"shape {Lm.shape}"
    elif not np.isfinite(Lm).all():
        got = "NaN or infinity"
    elif (Lm < 0).any():
        got = f"a negative value ({float(Lm.min())!r})"
    elif (np.diag(Lm) != 0).any():
        k = int(np.flatnonzero(np.diag(Lm))[0])
        got = f"[{k}, {k}] = {float(Lm[k, k])!r}"
    if got is not None:
        raise ValueError(f"{name} must be a finite non-negative ({C}, {C}) array with a "
                         f"zero diagonal, got {got}.")
    return Lm


def check_model_loss_matrix(model: Any) -> np.ndarray:
    """``model.loss_matrix()`` through :func:`check_loss_matrix` (real numbers, finite,
    >= 0, zero diagonal, (n_classes, n_classes)), else a ValueError naming the method; a
    model written in Python may break that contract."""
    who = f"{type(model).__name__}.loss_matrix()"
    loss = model.loss_matrix()
    if loss is None:             # check_loss_matrix reads None as the 0-1 loss
        raise ValueError(f"{who} must return an ({model.n_classes}, {model.n_classes}) "
                         "array of losses, got None.")
    return check_loss_matrix(loss, model.n_classes, who)


# -- a model's answers checked where they enter the learner (a model written in Python may
#    break its contract; these checks are one per fit, on small arrays) -----------------------
def check_n_latent(model: Any, data: Any, shape: Tuple[int, ...]) -> np.ndarray:
    """``model.n_latent(data)`` as a C-contiguous int32 array of ``shape`` ((n,) +
    latent_shape) with every entry in [1, 2**31 - 1] (a latent variable needs a value; the
    kernels hold int32), else a ValueError naming the method and what it returned."""
    who = f"{type(model).__name__}.n_latent(data)"
    nl = integer_array(model.n_latent(data), who)
    if nl.shape != tuple(shape):
        raise ValueError(f"{who} must have shape {tuple(shape)} (examples x latent_shape), "
                         f"got {nl.shape}.")
    if nl.size and (nl.min() < 1 or nl.max() > INT32_MAX):
        raise ValueError(f"{who} must be at least 1 (every latent variable needs a value) and "
                         f"at most {INT32_MAX}, got values from {nl.min()} to {nl.max()}.")
    return np.ascontiguousarray(nl, dtype=np.int32)


def check_size_joint_feature(model: Any, data: Any) -> int:
    """``model.size_joint_feature(data)`` as an int >= 1, else a ValueError naming it."""
    return check_int(model.size_joint_feature(data),
                     f"{type(model).__name__}.size_joint_feature(data)", 1)


def check_joint_feature(model: Any, data: Any, y: int, z: Any, size: int) -> None:
    """One joint feature, phi(x_0, y, z) of the first example: a vector of ``size`` real
    numbers (size_joint_feature), else a ValueError naming ``model.joint_feature`` and what
    it returned. A spot check before the first pass; the base class's batch methods check
    every feature they read (:meth:`LatentModel._checked_feature`)."""
    who = f"{type(model).__name__}.joint_feature"
    phi = np.asarray(model.joint_feature(model.example(data, 0), y, z))
    if phi.dtype.kind not in "fiub" or phi.shape != (size,):
        raise ValueError(f"{who} must return a vector of size_joint_feature(data) = {size} "
                         f"real numbers, got dtype {phi.dtype} and shape {phi.shape} (first "
                         "example).")


def pass_sums(loss: np.ndarray, y: np.ndarray, idx: np.ndarray, y_hat: np.ndarray,
              slots: np.ndarray, loss_slots: np.ndarray, phi: bool, augment: bool
              ) -> Tuple[Optional[np.ndarray], float]:
    """(phi_sum, loss_sum) of a kernel's inference pass from its per-chunk slots (None, 0.0
    without ``phi``). Without ``augment`` the kernel added zeros as Delta: the loss of the
    predictions is summed here."""
    if not phi:
        return None, 0.0
    if augment:
        return slots.sum(axis=0).reshape(-1), float(loss_slots.sum())
    return slots.sum(axis=0).reshape(-1), float(loss[y[idx], y_hat].sum())

