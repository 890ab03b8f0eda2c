"""KMeans: scikit-learn's KMeans (constructor, defaults, attributes, convergence rule,
empty-cluster relocation, warnings, verbose lines) over gmmfast's kernels.

A thin class over the fit driver (:mod:`gmmfast.cluster._fit`): the single run is
scikit-learn's Lloyd loop (:func:`gmmfast.cluster._lloyd.lloyd`, one pass per iteration) or,
with ``algorithm="gmm"``, G-MM's (merge-split with escapes, as :class:`gmmfast.GMMKMeans`)
from the same initial centers.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from .. import _validation
from .._base import BaseEstimator, TransformerOutputMixin, feature_names
from .._kernels._common import openmp_max_threads
from .._validation import (BOOLEAN, CALLABLE, RANDOM_STATE, Interval, Kind, Options,
                           check_data, check_objective_range, check_random_state, check_rows,
                           check_sample_weight, validate_params)
from ._fit import GMMParams, Run, fit_runs, gmm_run
from ._gmm_kmeans import AUTO_PATIENCE, AUTO_STEPS_PER_POINT
from ._init import _plusplus
from ._lloyd import lloyd
from ._rows import MemoryRows
from ._sparse import CSRData, check_csr, is_sparse, pp_step

INITS = ("k-means++", "random")
ALGORITHMS = ("lloyd", "elkan", "gmm")


def _same_clustering(labels1: np.ndarray, labels2: np.ndarray, k: int) -> bool:
    """True if labels2 is labels1 with the clusters renamed (scikit-learn's test)."""
    mapping = np.full(k, -1, dtype=np.int64)
    mapping[labels1] = labels2
    return bool(np.array_equal(mapping[labels1], labels2))


class KMeans(TransformerOutputMixin, BaseEstimator):
    """k-means clustering, a drop-in replacement for ``sklearn.cluster.KMeans``.

    The constructor, defaults, attributes, convergence rule, empty-cluster relocation,
    warnings and verbose output are scikit-learn's (>= 1.5): change the import and keep the
    code. From the same initial centers the labels, centers, inertia and iteration count are
    scikit-learn's up to rounding; random draws (``random_state``) are gmmfast's own. The
    pass is gmmfast's (SIMD nearest-center search, Hamerly's bounds), so a fit is faster
    than scikit-learn's. ``algorithm="gmm"`` runs G-MM (:class:`gmmfast.GMMKMeans`,
    merge-split) from the same initial centers instead: usually a lower inertia. It is
    GMMKMeans's G-MM level (its escapes included) without the Lloyd's passes to a fixed point
    GMMKMeans ends with: it stops at G-MM's gap tolerance.

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
    feature_names_in_ : ndarray of shape ``(n_features_in_,)``
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
    _parameter_constraints: dict = {
        "n_clusters": [Interval("int", 1)],
        "init": [Options(*INITS), CALLABLE,
                 Kind(lambda v: not isinstance(v, (str, numbers.Number, bytes))
                      and np.ndim(v) != 0, "an array of shape (n_clusters, n_features)")],
        "n_init": [Options("auto"), Interval("int", 1)],
        "max_iter": [Interval("int", 1)],
        "tol": [Interval("real", 0)],
        "verbose": [Interval("int", 0), BOOLEAN],
        "random_state": [RANDOM_STATE],
        "copy_x": [BOOLEAN],
        "algorithm": [Options(*ALGORITHMS)],
    }

    def _check_X(self, X: Any, *, reset: bool, copy: bool = False, sample_weight: Any = None):
        """X as C-contiguous float32/float64 (dense) or :class:`CSRData` (sparse); on reset
        (a fit) returns it with the feature names and the checked ``sample_weight``, else
        checks the names and the width against the fit."""
        if reset:
            names = feature_names(X)
        else:       # names first, as scikit-learn: a frame of other columns may hold NaN
            self._check_feature_names(X, stacklevel=4)     # at the caller of predict etc.
        if is_sparse(X):
            data: Any = check_csr(X, "X", fit=reset)
            if reset:
                sw = check_sample_weight(sample_weight, data.shape[0], data.dtype)
                check_objective_range(data.top, sw, data.shape[1], sample_weight is not None)
        elif reset:
            data, sw = check_rows(X, sample_weight, fit=True)
        else:
            data = check_data(X, "X")
        if copy and not is_sparse(X) and (not isinstance(X, np.ndarray)
                                          or np.may_share_memory(data, X)):
            data = data.copy()
        if reset:
            return data, names, sw
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
            if np.count_nonzero(sw) < k:
                raise ValueError(f"init='random' draws the {k} initial centers among rows of "
                                 f"positive weight; sample_weight has {np.count_nonzero(sw)} "
                                 "such rows.")
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
        validate_params(self.get_params(), self._parameter_constraints)
        data, names, sw = self._check_X(X, reset=True, copy=bool(self.copy_x),
                                        sample_weight=sample_weight)
        sparse = isinstance(data, CSRData)
        n, d = data.shape
        k = int(self.n_clusters)
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
        tol = float(self.tol)
        if tol != 0:   # relative to the mean variance of the columns
            tol = tol * (data.column_variance_mean() if sparse else _column_variance_mean(data))
        rows = MemoryRows(data, sw, n_threads)
        try:
            best = fit_runs(n_init, lambda r: self._start(rows, init, random_state),
                            self._single_run(rows, algorithm, random_state, tol),
                            lambda new, best: new.objective < best.objective
                            and not _same_clustering(new.labels, best.labels, k))
        finally:
            if mean is not None and not self.copy_x:
                data += mean
        centers = best.w
        if mean is not None:
            centers = centers + mean
        distinct = int(np.count_nonzero(np.bincount(best.labels, minlength=k)))
        if distinct < k:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({k}). Possibly due to duplicate points in X.",
                          _validation.ConvergenceWarning, stacklevel=2)
        self.cluster_centers_ = centers
        self.labels_ = best.labels
        self.inertia_ = float(best.objective)
        self.n_iter_ = int(best.n_iter)
        self.n_features_in_ = d
        self._set_feature_names(names)
        self._n_features_out = k
        self._n_init, self._tol, self._algorithm = n_init, tol, algorithm
        self._n_threads = n_threads
        self._fitted = True
        return self

    def _start(self, rows: MemoryRows, init: Any, random_state: Any) -> np.ndarray:
        """A run's initial centers (the fit loop's seeding step)."""
        centers = self._init_centroids(rows.X, None, init, random_state, rows.sw)
        if self.verbose:
            print("Initialization complete")
        return centers

    def _single_run(self, rows: MemoryRows, algorithm: str, random_state: Any, tol: float):
        """The single run of ``algorithm``: scikit-learn's Lloyd loop ("lloyd", "elkan"; tol
        scaled by the data's variance) or G-MM's (``tol`` as GMMKMeans's: the relative gap)."""
        verbose = int(self.verbose)
        if algorithm != "gmm":
            end = "" if algorithm == "elkan" else "."

            def run_lloyd(centers: np.ndarray, r: int) -> Run:
                labels, inertia, w, n_iter = lloyd(rows, centers, int(self.max_iter), tol,
                                                   verbose, end)
                return Run(w=w, objective=inertia, n_iter=n_iter, labels=labels)
            return run_lloyd
        k = int(self.n_clusters)
        p = GMMParams(k=k, max_iter=int(self.max_iter), tol=float(self.tol),
                      walk_steps=AUTO_STEPS_PER_POINT * rows.n,
                      patience=max(AUTO_PATIENCE, k), verbose=verbose)

        def run_gmm(centers: np.ndarray, r: int) -> Run:
            res = gmm_run(rows, centers.copy(), p, check_random_state(random_state), 0.0)
            res.labels = res.family.labels(res.w)
            return res
        return run_gmm

    # -- using a fit ----------------------------------------------------------------------
    def _rows(self, X: Any, sample_weight: Any = None) -> MemoryRows:
        """X checked against the fit (width, feature names) with its weights."""
        self._check_is_fitted()
        data = self._check_X(X, reset=False)
        return MemoryRows(data, check_sample_weight(sample_weight, data.shape[0], data.dtype))

    def fit_predict(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit, then return the cluster of each training sample (``labels_``)."""
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X: Any) -> np.ndarray:
        """The closest cluster of each sample in X."""
        return self._rows(X).predict(self.cluster_centers_)

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        """Opposite of the value of X on the k-means objective (weighted inertia)."""
        return -self._rows(X, sample_weight).objective(self.cluster_centers_)

    def transform(self, X: Any) -> np.ndarray:
        """Distances of each sample to each cluster center, shape (n_samples, n_clusters)."""
        return self._wrap(self._rows(X).transform(self.cluster_centers_), X)

    def fit_transform(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit, then return the distances of the training samples to the centers."""
        self.fit(X, sample_weight=sample_weight)
        return self.transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the columns of :meth:`transform`: "kmeans0", "kmeans1", ..."""
        self._check_is_fitted()
        prefix = type(self).__name__.lower()
        return np.array([f"{prefix}{j}" for j in range(self._n_features_out)], dtype=object)

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
