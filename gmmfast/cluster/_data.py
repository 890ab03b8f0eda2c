"""Validation of what k-means works on: points and centers whose squared distances fit the
floating type (the kernels compute ||c||^2 - 2 x.c in X's precision)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validation import check_array, extent


def max_abs(dtype: np.dtype, d: int) -> float:
    """The largest |value| whose squared distances, summed over d features, cannot overflow
    ``dtype`` (with room for the factor 2 of 2 x.c and for sums over a cluster)."""
    return float(np.sqrt(np.finfo(dtype).max / (64.0 * d)))


def check_data(X: Any, name: str = "X", dtype: Optional[np.dtype] = None) -> np.ndarray:
    """X as a C-contiguous float32/float64 2-D array, finite and small enough for squared
    distances in its precision (else a ValueError naming ``name`` and the limit)."""
    X = check_array(X, name, dtype=dtype, finite=False)
    top = extent(X, name)
    limit = max_abs(X.dtype, X.shape[1])
    if top > limit:
        hint = " or pass float64" if X.dtype == np.float32 else ""
        raise ValueError(f"{name} has values up to {top:.3g}; squared distances overflow "
                         f"{X.dtype} above |value| = {limit:.3g} (at {X.shape[1]} features): "
                         f"scale {name}{hint}.")
    return X


def check_centers(C: Any, X: np.ndarray, name: str = "centers") -> np.ndarray:
    """Centers for X: a finite (k, n_features) array of X's dtype, k >= 1, as check_data."""
    if isinstance(C, np.ndarray) and C.dtype != X.dtype and C.dtype.kind == "f":
        raise ValueError(f"{name} must have X's dtype {X.dtype}, got {C.dtype}.")
    C = check_data(C, name, dtype=X.dtype)
    if C.shape[1] != X.shape[1]:
        raise ValueError(f"{name} must have {X.shape[1]} columns like X, got shape {C.shape}.")
    return C
