"""KMeans: scikit-learn's KMeans (constructor, defaults, attributes, convergence rule,
empty-cluster relocation, warnings, verbose lines) over gmmfast's kernels.

A thin class: the pass of :func:`gmmfast.cluster._bounds.assign` (or its CSR twin in
:mod:`gmmfast.cluster._sparse`) gives, at the current centers, the labels, the inertia, the
labels that changed and the per-cluster sums, hence the next centers; so one pass is one
iteration of scikit-learn's Lloyd loop (labels at the centers, then the means of those
labels). Hamerly's bounds skip the rows whose label provably stays, which changes no label.
``algorithm="gmm"`` runs :class:`gmmfast.GMMKMeans` (G-MM, merge-split) from the same
initial centers.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from .._base import BaseEstimator
from .._kernels import _kmeans as K
from .._kernels._common import openmp_max_threads
from .._validation import (ConvergenceWarning, blas_single_threaded, check_int,
                           check_random_state, check_real, check_sample_weight)
from . import _merge
from ._bounds import Assignment, Bounds, assign, labeling_cost
from .._validation import check_data
from ._init import _plusplus
from ._sparse import (CSRData, SparseBounds, check_csr, csr_assign, csr_distances,
                      csr_label_distances, is_sparse, pp_step)

INITS = ("k-means++", "random")
ALGORITHMS = ("lloyd", "elkan", "gmm")
OUTPUTS = ("default", "pandas", "polars")


# -- one pass over dense or CSR rows ---------------------------------------------------------

class _Rows:
    """X (dense, or CSR as :class:`CSRData`) with its weights and pruning state: the pass
    at given centers, and what the empty-cluster relocation needs."""

    def __init__(self, X: Union[np.ndarray, CSRData], sw: np.ndarray, n_threads: int,
                 prune: bool = True):
        self.X, self.sw, self.n_threads = X, sw, n_threads
        self.sparse = isinstance(X, CSRData)
        self.bounds: Any = None
        if prune:
            self.bounds = SparseBounds(X.shape[0]) if self.sparse else Bounds(X)

    def step(self, centers: np.ndarray, old_labels: Optional[np.ndarray],
             with_sums: bool = True) -> Assignment:
        """Labels at ``centers`` and their sums; ``old_labels`` are the last pass's."""
        run = csr_assign if self.sparse else assign
        return run(self.X, self.sw, centers, self.n_threads, with_sums=with_sums,
                   old_labels=old_labels, bounds=self.bounds)

    def sq_distances(self, centers: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """||x_i - c_{labels_i}||^2 of every row (unweighted), float64."""
        if self.sparse:
            return csr_label_distances(self.X, centers, labels, self.n_threads)
        out = np.empty(self.X.shape[0])
        labeling_cost(self.X, np.ones_like(self.sw), centers, labels, self.n_threads, out)
        return out


def _next_centers(rows: _Rows, a: Assignment, centers: np.ndarray) -> np.ndarray:
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


def lloyd(rows: _Rows, centers: np.ndarray, max_iter: int, tol: float, verbose: int,
          end: str = ".") -> Tuple[np.ndarray, float, np.ndarray, int]:
    """One run of scikit-learn's Lloyd loop from ``centers``.

    Iteration i: labels at the centers, the means of those labels. Stops when no label
    changed (strict convergence), when the squared center shift is at most ``tol``, or
    after ``max_iter`` iterations; without strict convergence the labels are taken again at
    the final centers. Returns (labels, inertia, centers, iterations).
    """
    labels: Optional[np.ndarray] = None
    last: Optional[Assignment] = None
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


def _same_clustering(labels1: np.ndarray, labels2: np.ndarray, k: int) -> bool:
    """True if labels2 is labels1 with the clusters renamed (scikit-learn's test)."""
    mapping = np.full(k, -1, dtype=np.int64)
    mapping[labels1] = labels2
    return bool(np.array_equal(mapping[labels1], labels2))


def _feature_names(X: Any) -> Optional[np.ndarray]:
    """Column names of a data frame if they are all strings (as scikit-learn), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or hasattr(X, "tocsr"):
        return None
    names = np.asarray(list(columns), dtype=object)
    is_str = np.array([isinstance(c, str) for c in names], dtype=bool)
    if names.shape[0] and is_str.all():
        return names
    if is_str.any():
        raise TypeError("Feature names are only supported if all input features have string "
                        f"names, but your input has {sorted({type(c).__name__ for c in names})}"
                        " as feature name / column name types.")
    return None


class KMeans(BaseEstimator):
    """k-means clustering, a drop-in replacement for ``sklearn.cluster.KMeans``.

    The constructor, defaults, attributes, convergence rule, empty-cluster relocation,
    warnings and verbose output are scikit-learn's (>= 1.5): change the import and keep the
    code. From the same initial centers the labels, centers, inertia and iteration count are
    scikit-learn's up to rounding; random draws (``random_state``) are gmmfast's own. The
    pass is gmmfast's (SIMD nearest-center search, Hamerly's bounds), so a fit is faster
    (bench/results/dropin.md). ``algorithm="gmm"`` runs G-MM (:class:`gmmfast.GMMKMeans`,
    merge-split) from the same initial centers instead: usually a lower inertia.

    Parameters
    ----------
    n_clusters : int, default=8
    init : {"k-means++", "random"}, callable or array-like of shape (n_clusters, n_features), default="k-means++"
        "k-means++": greedy k-means++ (2 + log k trials per center); "random":
        ``n_clusters`` distinct rows drawn with probability proportional to their weight;
        a callable is called as ``init(X, n_clusters, random_state=rs)`` with a numpy
        RandomState (the data X as the fit sees it: centered if dense, as scikit-learn).
    n_init : "auto" or int, default="auto"
        Runs from different initialisations; the lowest inertia is kept. "auto": 1 for
        "k-means++" and arrays, 10 for "random" and callables.
    max_iter : int, default=300
    tol : float, default=1e-4
        Convergence when the squared shift of the centers between two iterations is at most
        ``tol`` times the mean variance of the columns of X. With ``algorithm="gmm"``:
        G-MM's relative gap tolerance (see :class:`gmmfast.GMMKMeans`).
    verbose : int, default=0
    random_state : None, int, numpy RandomState or Generator, default=None
    copy_x : bool, default=True
        Dense X is centered for accurate distances: on a copy, or (False) in place and
        restored after the fit.
    algorithm : {"lloyd", "elkan", "gmm"}, default="lloyd"
        "lloyd" and "elkan" run the same exact Lloyd iterations (pruned by Hamerly's bounds);
        "gmm" runs G-MM with merge-split bounds (dense X only).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of int32, shape (n_samples,)
    inertia_ : float
    n_iter_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when X has string column names.
    """

    def __init__(self, n_clusters: int = 8, *,
                 init: Union[str, np.ndarray, Callable] = "k-means++",
                 n_init: Union[int, str] = "auto", max_iter: int = 300, tol: float = 1e-4,
                 verbose: int = 0, random_state: Any = None, copy_x: bool = True,
                 algorithm: str = "lloyd"):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm

    # -- validation ---------------------------------------------------------------------
    def _check_params(self) -> dict:
        init = self.init
        if isinstance(init, str):
            if init not in INITS:
                raise ValueError(f"init must be one of {INITS}, a callable or an array of "
                                 f"shape (n_clusters, n_features), got {init!r}.")
        elif not callable(init) and (isinstance(init, (numbers.Number, bytes))
                                     or np.ndim(init) == 0):
            raise ValueError(f"init must be one of {INITS}, a callable or an array of shape "
                             f"(n_clusters, n_features), got {init!r}.")
        if isinstance(self.n_init, str):
            if self.n_init != "auto":
                raise ValueError(f"n_init must be 'auto' or an integer >= 1, got "
                                 f"{self.n_init!r}.")
        else:
            check_int(self.n_init, "n_init", 1)
        if not isinstance(self.copy_x, (bool, np.bool_)):
            raise ValueError(f"copy_x must be a boolean, got {self.copy_x!r}.")
        if not isinstance(self.algorithm, str) or self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}.")
        verbose = self.verbose
        if not isinstance(verbose, (bool, np.bool_)):
            verbose = check_int(verbose, "verbose", 0)
        return dict(k=check_int(self.n_clusters, "n_clusters", 1),
                    max_iter=check_int(self.max_iter, "max_iter", 1),
                    tol=check_real(self.tol, "tol", 0.0),
                    verbose=int(verbose))

    def _check_X(self, X: Any, *, reset: bool, copy: bool = False):
        """X as C-contiguous float32/float64 (dense) or :class:`CSRData` (sparse); on reset
        records the feature names, else checks them and the width against the fit."""
        names = _feature_names(X)
        if is_sparse(X):
            data: Any = check_csr(X, "X")
        else:
            data = check_data(X, "X")
            if copy and (not isinstance(X, np.ndarray) or np.may_share_memory(data, X)):
                data = data.copy()
        if reset:
            return data, names
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was "
                          "fitted with feature names", UserWarning, stacklevel=3)
        elif fitted is None and names is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without "
                          "feature names", UserWarning, stacklevel=3)
        elif fitted is not None and (names.shape != fitted.shape or (names != fitted).any()):
            raise ValueError("The feature names should match those that were passed during "
                             f"fit.\nFeature names seen at fit time: {list(fitted)}\n"
                             f"Feature names given now: {list(names)}")
        if data.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {data.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return data

    def _validate_center_shape(self, X: Any, centers: np.ndarray,
                               n_centroids: Optional[int] = None) -> None:
        k = self.n_clusters if n_centroids is None else n_centroids
        if centers.shape[0] != k:
            raise ValueError(f"The shape of the initial centers {centers.shape} does not match "
                             f"the number of clusters {k}.")
        if centers.shape[1] != X.shape[1]:
            raise ValueError(f"The shape of the initial centers {centers.shape} does not match "
                             f"the number of features of the data {X.shape[1]}.")

    # -- initialisation -----------------------------------------------------------------
    def _init_centroids(self, X: Any, x_squared_norms: Any, init: Any, random_state: Any,
                        sample_weight: Any, init_size: Optional[int] = None,
                        n_centroids: Optional[int] = None) -> np.ndarray:
        """Initial centers (scikit-learn's signature; ``x_squared_norms`` is unused).

        ``random_state``: a numpy Generator, RandomState, int or None. A callable ``init``
        gets a RandomState: ``random_state`` itself if it is one.
        """
        if not isinstance(X, CSRData):
            X = check_csr(X) if is_sparse(X) else np.ascontiguousarray(X)
        n = X.shape[0]
        k = self.n_clusters if n_centroids is None else n_centroids
        legacy = random_state if isinstance(random_state, np.random.RandomState) else None
        rng = check_random_state(random_state)
        sw = np.ascontiguousarray(sample_weight, dtype=X.dtype)
        if init_size is not None and init_size < n:
            rows = rng.integers(0, n, size=init_size)
            X = check_csr(X.X[rows]) if isinstance(X, CSRData) else np.ascontiguousarray(X[rows])
            sw = np.ascontiguousarray(sw[rows])
            n = init_size
        if isinstance(init, str) and init == "k-means++":
            step = pp_step if isinstance(X, CSRData) else None
            return _plusplus(X, k, sw, rng, None, openmp_max_threads(), step)
        if isinstance(init, str) and init == "random":
            rows = rng.choice(n, size=k, replace=False, p=sw / sw.sum(dtype=np.float64))
            return np.ascontiguousarray(X[rows])
        if callable(init):
            if legacy is None:
                legacy = np.random.RandomState(int(rng.integers(0, 2**32)))
            centers = init(X.X if isinstance(X, CSRData) else X, k, random_state=legacy)
            if is_sparse(centers):
                centers = centers.toarray()
            centers = check_data(centers, "init(X, n_clusters, random_state)", dtype=X.dtype)
            self._validate_center_shape(X, centers, k)
            return centers
        return np.array(init, dtype=X.dtype, order="C")

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> "KMeans":
        """Compute k-means clustering.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            float32 stays float32; other numbers become float64; sparse input becomes CSR.
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (not used by an array or callable ``init``).

        Returns
        -------
        self
        """
        p = self._check_params()
        data, names = self._check_X(X, reset=True, copy=bool(self.copy_x))
        sparse = isinstance(data, CSRData)
        n, d = data.shape
        k = p["k"]
        if n < k:
            raise ValueError(f"n_samples={n} should be >= n_clusters={k}.")
        init = self.init
        init_is_array = not isinstance(init, str) and not callable(init)
        if isinstance(self.n_init, str):   # "auto"
            n_init = 10 if (isinstance(init, str) and init == "random") or callable(init) else 1
        else:
            n_init = int(self.n_init)
        if init_is_array:
            init = check_data(init, "init", dtype=data.dtype).copy()
            self._validate_center_shape(data, init)
            if n_init != 1:
                warnings.warn("Explicit initial center position passed: performing only one "
                              f"init in {type(self).__name__} instead of n_init={n_init}.",
                              RuntimeWarning, stacklevel=2)
                n_init = 1
        algorithm = self.algorithm
        if algorithm == "elkan" and k == 1:
            warnings.warn("algorithm='elkan' doesn't make sense for a single cluster. Using "
                          "'lloyd' instead.", RuntimeWarning, stacklevel=2)
            algorithm = "lloyd"
        if algorithm == "gmm" and sparse:
            raise ValueError("algorithm='gmm' does not support sparse X; use algorithm='lloyd' "
                             "for sparse input or pass X.toarray().")
        sw = check_sample_weight(sample_weight, n, data.dtype)
        random_state = self.random_state
        if not isinstance(random_state, np.random.RandomState):
            random_state = check_random_state(random_state)
        n_threads = openmp_max_threads()
        mean = None
        if not sparse:   # center for accurate distances (scikit-learn does the same)
            if not data.flags.writeable:
                data = data.copy()
            mean = data.mean(axis=0)
            data -= mean
            if init_is_array:
                init -= mean
        tol = p["tol"]
        if tol != 0:   # relative to the mean variance of the columns
            tol = tol * (data.column_variance_mean() if sparse else _column_variance_mean(data))
        try:
            best = self._runs(data, sw, init, n_init, algorithm, random_state, tol, p,
                              n_threads)
        finally:
            if mean is not None and not self.copy_x:
                data += mean
        labels, inertia, centers, n_iter = best
        if mean is not None:
            centers = centers + mean
        distinct = int(np.count_nonzero(np.bincount(labels, minlength=k)))
        if distinct < k:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({k}). Possibly due to duplicate points in X.",
                          ConvergenceWarning, stacklevel=2)
        self.cluster_centers_ = centers
        self.labels_ = labels
        self.inertia_ = float(inertia)
        self.n_iter_ = int(n_iter)
        self.n_features_in_ = d
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._n_features_out = k
        self._n_init, self._tol, self._algorithm = n_init, tol, algorithm
        self._n_threads = n_threads
        self._fitted = True
        return self

    def _runs(self, data, sw, init, n_init, algorithm, random_state, tol, p, n_threads):
        """The ``n_init`` runs; the one with the lowest inertia (and a different clustering
        than the best so far, as scikit-learn) is kept."""
        k = p["k"]
        best = None
        # one pruning state for all runs: a run's first pass searches every row
        rows = None if algorithm == "gmm" else _Rows(data, sw, n_threads)
        with blas_single_threaded():
            for _ in range(n_init):
                centers = self._init_centroids(data, None, init, random_state, sw)
                if p["verbose"]:
                    print("Initialization complete")
                if algorithm == "gmm":
                    res = self._gmm(data, sw, centers, random_state, p)
                else:
                    res = lloyd(rows, centers, p["max_iter"], tol, p["verbose"],
                                "" if algorithm == "elkan" else ".")
                if best is None or (res[1] < best[1]
                                    and not _same_clustering(res[0], best[0], k)):
                    best = res
        return best

    def _gmm(self, X: np.ndarray, sw: np.ndarray, centers: np.ndarray, random_state: Any,
             p: dict) -> Tuple[np.ndarray, float, np.ndarray, int]:
        """One G-MM run (GMMKMeans, merge-split) from ``centers``."""
        from ._kmeans import GMMKMeans
        gm = GMMKMeans(n_clusters=p["k"], init=centers, n_init=1, max_iter=p["max_iter"],
                       tol=p["tol"], random_state=check_random_state(random_state),
                       verbose=p["verbose"])
        with warnings.catch_warnings():   # empty clusters are reported by fit, as scikit-learn
            warnings.simplefilter("ignore", ConvergenceWarning)
            gm.fit(X, sample_weight=sw)
        return gm.labels_, gm.inertia_, gm.cluster_centers_, gm.n_iter_

    # -- using a fit ----------------------------------------------------------------------
    def _labels_inertia(self, X: Any, sample_weight: Any = None) -> Assignment:
        sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        centers = np.ascontiguousarray(self.cluster_centers_, dtype=X.dtype)
        with blas_single_threaded():
            if isinstance(X, CSRData):
                return csr_assign(X, sw, centers, openmp_max_threads())
            return assign(X, sw, centers, openmp_max_threads())

    def fit_predict(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit, then return the cluster of each training sample (``labels_``)."""
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X: Any) -> np.ndarray:
        """The closest cluster of each sample in X."""
        self._check_is_fitted()
        return self._labels_inertia(self._check_X(X, reset=False)).labels

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        """Opposite of the value of X on the k-means objective (weighted inertia)."""
        self._check_is_fitted()
        return -self._labels_inertia(self._check_X(X, reset=False), sample_weight).objective

    def _transform(self, X: Any) -> np.ndarray:
        centers = np.ascontiguousarray(self.cluster_centers_, dtype=X.dtype)
        if isinstance(X, CSRData):
            return csr_distances(X, centers, openmp_max_threads())
        out = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
        K.distances(X, centers, out, openmp_max_threads())
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Distances of each sample to each cluster center, shape (n_samples, n_clusters)."""
        self._check_is_fitted()
        return self._wrap(self._transform(self._check_X(X, reset=False)), X)

    def fit_transform(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit, then return the distances of the training samples to the centers."""
        self.fit(X, sample_weight=sample_weight)
        return self._wrap(self._transform(self._check_X(X, reset=False)), X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the columns of :meth:`transform`: "kmeans0", "kmeans1", ..."""
        self._check_is_fitted()
        prefix = type(self).__name__.lower()
        return np.array([f"{prefix}{j}" for j in range(self._n_features_out)], dtype=object)

    def set_output(self, *, transform: Optional[str] = None) -> "KMeans":
        """Output container of ``transform`` and ``fit_transform``: "default" (ndarray),
        "pandas" or "polars" (data frames with the columns of get_feature_names_out);
        None leaves it unchanged (scikit-learn's global ``transform_output`` applies)."""
        if transform is None:
            return self
        if not isinstance(transform, str) or transform not in OUTPUTS:
            raise ValueError(f"transform must be one of {OUTPUTS} or None, got {transform!r}.")
        self._sklearn_output_config = {"transform": transform}
        return self

    def _wrap(self, out: np.ndarray, X: Any) -> Any:
        """``out`` in the container chosen by set_output (or scikit-learn's config)."""
        how = getattr(self, "_sklearn_output_config", {}).get("transform")
        if how is None:
            try:
                from sklearn import get_config
                how = get_config().get("transform_output", "default")
            except ImportError:
                how = "default"
        if how == "pandas":
            import pandas as pd
            index = X.index if isinstance(X, pd.DataFrame) else None
            return pd.DataFrame(out, index=index, columns=self.get_feature_names_out())
        if how == "polars":
            import polars as pl
            return pl.DataFrame(out, schema=list(self.get_feature_names_out()), orient="row")
        return out

    def _more_sklearn_tags(self, tags: Any) -> Any:
        from sklearn.utils import TransformerTags
        tags.estimator_type = "clusterer"
        tags.transformer_tags = TransformerTags(preserves_dtype=["float64", "float32"])
        tags.input_tags.sparse = True
        return tags


def _column_variance_mean(X: np.ndarray) -> float:
    """Mean over the columns of their variance; X is already centered (column means ~0), so
    it is the mean square less the squared remaining mean, in double and without a copy."""
    n = X.shape[0]
    sq = np.einsum("ij,ij->j", X, X, dtype=np.float64) / n
    m = X.sum(axis=0, dtype=np.float64) / n
    return float((sq - m * m).mean())
