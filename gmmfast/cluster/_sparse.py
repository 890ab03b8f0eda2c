"""k-means on CSR sparse rows: validation and the passes over the sparse kernels.

The same pass as the dense one (:func:`gmmfast.cluster._pass.assign`): nearest-center
labels (first minimum of ||c||^2 - 2 x.c, the dots from the rows' nonzeros), the objective,
the labels that changed and, on request, the per-cluster sums as a
:class:`~gmmfast.cluster._merge.ClusterSums`, so a Lloyd step or a bound's value is computed
from them exactly as for dense data. With :class:`SparseBounds` (Hamerly's bounds) rows whose
label provably stays are not searched; the labels are the same.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._kernels import _sparse as sparse_kernels
from .._validation import check_magnitude, check_not_empty, float_dtype_for
from ._pass import ClusterSums, Pass, n_slots, total


def is_sparse(X: Any) -> bool:
    """True for a scipy sparse matrix or array."""
    import scipy.sparse as sp
    return sp.issparse(X)


def check_csr(X: Any, name: str = "X", fit: bool = False) -> "CSRData":
    """A scipy sparse X as validated CSR data (:class:`CSRData`).

    Any sparse format becomes CSR (a copy unless it is one); float32 and float64 are kept,
    integers and booleans become float64; duplicate entries are summed (on a copy). The
    values must be finite and small enough for squared distances in their precision, and
    X needs at least one row and one column. With ``fit`` (rows a fit clusters), the values
    must also not be so small that squared distances underflow (:func:`check_magnitude`).
    """
    import scipy.sparse as sp
    if not sp.issparse(X):
        raise ValueError(f"{name} must be a scipy sparse matrix, got {type(X).__name__}.")
    if X.format != "csr":
        X = X.tocsr()
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}.")
    dtype = float_dtype_for(X.dtype, name)
    if X.dtype != dtype:
        X = X.astype(dtype)
    n, d = X.shape
    check_not_empty(X.shape, name)
    indptr, indices = X.indptr, X.indices
    if (indptr.shape != (n + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0)
            or indptr[-1] > indices.shape[0] or X.data.shape[0] != indices.shape[0]):
        raise ValueError(f"{name} is not a valid CSR matrix (indptr must be non-decreasing "
                         "from 0 to at most the number of stored values).")
    nnz = int(indptr[-1])
    if nnz and (indices[:nnz].min() < 0 or indices[:nnz].max() >= d):
        raise ValueError(f"{name} is not a valid CSR matrix: column indices outside [0, {d}).")
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    top = check_magnitude(X.data, d, name, fit) if X.data.shape[0] else 0.0
    return CSRData(X, top)


class CSRData:
    """Validated CSR rows and their squared norms, as the sparse kernels take them.

    Indexing gives dense rows of X's dtype (``X[i]`` 1-D, ``X[indices]`` 2-D), which is all
    :func:`gmmfast.cluster._init._plusplus` needs besides its kernel (:func:`pp_step`).
    ``top``: the largest |stored value|, which :func:`check_csr` found.
    """

    def __init__(self, X: Any, top: float):
        self.X = X
        self.top = top
        self.data = np.ascontiguousarray(X.data)
        index = np.int32 if X.indices.dtype == np.int32 and X.indptr.dtype == np.int32 \
            else np.int64
        self.indices = np.ascontiguousarray(X.indices, dtype=index)
        self.indptr = np.ascontiguousarray(X.indptr, dtype=index)
        self.shape = X.shape
        self.dtype = X.dtype
        self.xsq = np.empty(X.shape[0])
        sparse_kernels.row_norms(self.data, self.indices, self.indptr, self.xsq)

    def __getitem__(self, rows: Any) -> np.ndarray:
        if np.ndim(rows) == 0:
            return self.X[[int(rows)]].toarray()[0]
        return self.X[np.asarray(rows)].toarray()

    def column_variance_mean(self) -> float:
        """The mean over columns of the (unweighted) variance of each column."""
        n, d = self.shape
        data = self.data[:self.indptr[-1]].astype(np.float64)
        cols = self.indices[:self.indptr[-1]]
        mean = np.bincount(cols, weights=data, minlength=d) / n
        count = np.bincount(cols, minlength=d)
        dev = data - mean[cols]
        var = (np.bincount(cols, weights=dev * dev, minlength=d) + (n - count) * mean ** 2) / n
        return float(var.mean())


def pp_step(X: CSRData, sample_weight: np.ndarray, closest: np.ndarray, CT: np.ndarray,
            update: bool, chunk_pot: np.ndarray, chunk_gain: np.ndarray, n_threads: int) -> None:
    """The k-means++ pass of :func:`gmmfast._kernels._kmeans.pp_step` over CSR rows."""
    sparse_kernels.pp_step(X.data, X.indices, X.indptr, sample_weight, X.xsq, closest,
              np.ascontiguousarray(CT, dtype=np.float64), update, chunk_pot, chunk_gain,
              n_threads)


class SparseBounds:
    """Per-row state of the pruned sparse pass (Hamerly's bounds), 16 bytes per row.

    After a pass at ``centers``: ``upper[i]`` bounds row i's distance to its center from
    above, ``lower[i]`` its distance to every other center from below.
    """

    def __init__(self, n: int):
        self.upper = np.empty(n)
        self.lower = np.empty(n)
        self.centers: Optional[np.ndarray] = None

    def drifts(self, centers: np.ndarray):
        """(prune?, drift of each center, largest drift of the other centers) since the last
        pass."""
        k = centers.shape[0]
        if self.centers is None or self.centers.shape != centers.shape:
            return False, np.zeros(k), np.zeros(k)
        drift = np.sqrt(((centers.astype(np.float64) - self.centers) ** 2).sum(axis=1))
        drift *= 1.0 + 1e-12
        if k == 1:
            return True, drift, np.zeros(1)
        top = np.argsort(-drift, kind="stable")[:2]
        other = np.full(k, drift[top[0]])
        other[top[0]] = drift[top[1]]
        return True, drift, other


def csr_assign(X: CSRData, sw: np.ndarray, centers: np.ndarray, n_threads: int, *,
               with_sums: bool = False, old_labels: Optional[np.ndarray] = None,
               bounds: Optional[SparseBounds] = None) -> Pass:
    """Nearest-center labels, F(w) and (``with_sums``) the cluster sums of CSR rows in one
    pass: :func:`gmmfast.cluster._pass.assign` for sparse X. With ``bounds`` (whose last
    pass produced ``old_labels``) rows whose label provably stays are not searched."""
    n, d = X.shape
    k = centers.shape[0]
    n_chunks = -(-n // sparse_kernels.CHUNK)
    labels = (np.full(n, -1, dtype=np.int32) if old_labels is None
              else np.array(old_labels, dtype=np.int32))
    CT, csq = sparse_kernels.center_layout(centers)
    slots = n_slots(n, k, d) if with_sums else 0
    sums = np.empty((slots, k, d))
    weight = np.empty((slots, k))
    cost = np.empty((slots, k))
    chunk = np.empty(n_chunks)
    changed = np.empty(n_chunks, dtype=np.int64)
    searched = np.empty(n_chunks, dtype=np.int64)
    prune, drift, other = False, np.zeros(k), np.zeros(k)
    if bounds is not None and old_labels is not None:
        prune, drift, other = bounds.drifts(centers)
    none = np.empty(0)
    sparse_kernels.csr_pass(X.data, X.indices, X.indptr, sw, X.xsq, CT, csq, k, labels, chunk,
                            changed, searched, sums, weight, cost,
                            none if bounds is None else bounds.upper,
                            none if bounds is None else bounds.lower, drift, other, prune,
                            n_threads)
    if bounds is not None:
        bounds.centers = centers.astype(np.float64)
    objective = total(chunk)
    cluster_sums = None
    if with_sums:
        W = weight.sum(axis=0)
        resid = sums.sum(axis=0) - W[:, None] * centers.astype(np.float64)
        cluster_sums = ClusterSums(w=centers, weight=W, resid=resid, cost=cost.sum(axis=0),
                                   objective=objective)
    return Pass(w=centers, labels=labels, objective=objective, changed=int(changed.sum()),
                      searched=int(searched.sum()), sums=cluster_sums)


def csr_label_distances(X: CSRData, centers: np.ndarray, labels: np.ndarray,
                        n_threads: int) -> np.ndarray:
    """||x_i - c_{labels_i}||^2 of every row (unweighted), float64."""
    CT, csq = sparse_kernels.center_layout(centers)
    out = np.empty(X.shape[0])
    sparse_kernels.label_distances(X.data, X.indices, X.indptr, X.xsq, CT, csq,
                      np.ascontiguousarray(labels, dtype=np.int32), out, n_threads)
    return out


def csr_distances(X: CSRData, centers: np.ndarray, n_threads: int) -> np.ndarray:
    """Euclidean distances of every row to every center, shape (n, k), X's dtype."""
    CT, csq = sparse_kernels.center_layout(centers)
    out = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
    sparse_kernels.distances(X.data, X.indices, X.indptr, X.xsq, CT, csq, out, n_threads)
    return out
