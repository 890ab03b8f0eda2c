"""scikit-learn's Lloyd loop on rows in memory (dense or CSR), for the drop-in KMeans.

One pass (:meth:`gmmfast.cluster._rows.MemoryRows.step`) gives, at the current centers, the
labels, the inertia, the labels that changed and the per-cluster sums, hence the next
centers: one pass is one iteration of scikit-learn's loop (labels at the centers, then the
means of those labels). Hamerly's bounds skip the rows whose label provably stays, which
changes no label.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _merge
from ._pass import Pass


def _next_centers(rows: Any, a: Pass, centers: np.ndarray) -> np.ndarray:
    """scikit-learn's M-step from the sums of one pass: each cluster's weighted mean.

    Empty clusters (zero weight) first take the rows farthest from their centers, in
    scikit-learn's order (``argpartition`` of the distances, the farthest of its
    picks for the first empty cluster), which leave their clusters; a cluster still
    empty then (all rows on their centers) sits on the center of the heaviest one.
    """
    s = a.sums
    weight = s.weight.copy()
    resid = s.resid.copy()
    c = centers.astype(np.float64)
    moved = {}
    empty = np.flatnonzero(weight == 0)
    if empty.shape[0]:
        dist = rows.sq_distances(centers, a.labels)
        if dist.max() > 0:
            m = empty.shape[0]
            far = np.argpartition(dist.astype(centers.dtype), -m)[:-m - 1:-1]
            for e, i in zip(empty, far):
                w = float(rows.sw[i])
                x = np.asarray(rows.X[i], dtype=np.float64)
                o = a.labels[i]
                resid[o] -= w * (x - c[o])
                weight[o] -= w
                weight[e] = w
                resid[e] = w * (x - c[e])
                moved[e] = x
    new = c.copy()
    full = weight > 0
    new[full] += resid[full] / weight[full, None]
    for e, x in moved.items():
        if weight[e] > 0:
            new[e] = x
    if not full.all():
        new[~full] = new[np.argmax(weight)]
    return new.astype(centers.dtype)


def lloyd(rows: Any, centers: np.ndarray, max_iter: int, tol: float, verbose: int,
          end: str = ".") -> Tuple[np.ndarray, float, np.ndarray, int]:
    """One run of scikit-learn's Lloyd loop from ``centers`` on ``rows`` (MemoryRows).

    Iteration i: labels at the centers, the means of those labels. Stops when no label
    changed (strict convergence), when the squared center shift is at most ``tol``, or
    after ``max_iter`` iterations; without strict convergence the labels are taken again at
    the final centers. Returns (labels, inertia, centers, iterations).
    """
    labels: Optional[np.ndarray] = None
    last: Optional[Pass] = None
    strict = False
    for i in range(max_iter):
        a = rows.step(centers, labels)
        new = _next_centers(rows, a, centers)
        if verbose:
            print(f"Iteration {i}, inertia {a.objective}{end}")
        labels, last = a.labels, a
        if a.changed == 0:
            centers = new
            if verbose:
                print(f"Converged at iteration {i}: strict convergence.")
            strict = True
            break
        shift = float(((new.astype(np.float64) - centers.astype(np.float64)) ** 2).sum())
        centers = new
        if shift <= tol:
            if verbose:
                print(f"Converged at iteration {i}: center shift {shift} within tolerance "
                      f"{tol}.")
            break
    if strict:   # labels unchanged: their cost at the new centers, from the sums
        inertia = _merge.value(_merge.touching(last.sums), centers)
    else:        # labels at the final centers
        last = rows.step(centers, labels, with_sums=False)
        labels, inertia = last.labels, last.objective
    return labels, inertia, centers, i + 1
