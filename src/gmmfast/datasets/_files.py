"""Reading a user's points from a file."""
from __future__ import annotations

from pathlib import Path
from typing import Union

import numpy as np


def read_points(path: Union[str, Path]) -> np.ndarray:
    """A 2-D float array from ``.npy`` or a text table (comma or whitespace, optional header)."""
    path = Path(path)
    if path.suffix == ".npy":
        X = np.load(path, allow_pickle=False)
    else:
        with open(path) as fh:
            first = fh.readline()
        delimiter = "," if "," in first else None
        try:
            [float(v) for v in first.replace(",", " ").split()]
            skip = 0
        except ValueError:
            skip = 1          # a header line
        X = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{path} must hold a non-empty table of points, got shape {X.shape}.")
    return np.ascontiguousarray(X)

