"""GMMKMeans: k-means clustering optimised by Generalized Majorization-Minimization."""
from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from .._base import BaseEstimator
from .._kernels import _kmeans as K
from .._kernels._common import openmp_max_threads
from .._validation import (ConvergenceWarning, blas_single_threaded, check_int, check_real,
                           check_random_state, check_sample_weight, check_walk_steps, draw_seed)
from ..core import GMMResult, check_eta, check_max_iter, check_tol, generalized_mm
from . import _dask
from ._bounds import KMeansBounds, assign, balanced_bias, labeling_cost, update_centers
from .._validation import check_data
from ._escape import escape, pass_budget
from ._init import _parallel, _plusplus
from ._samplers import SAMPLERS

INITS = ("k-means++", "k-means||", "forgy", "random-partition")
SELECTIONS = ("random", "mm", "balanced", "merge-split")
#: Proposals per point and iteration when walk_steps="auto" (see bench/walk_steps.py).
AUTO_STEPS_PER_POINT = 30
#: patience="auto" is max(AUTO_PATIENCE, n_clusters) (bench/escape.py: GMM-200, k = 200, finds
#: every cluster in 19/20 seeds on data seed 11 and 20/20 on data seed 0 with 160, in 18/20
#: and 20/20 with 80; R15 and D31 in 20/20 with 80).
AUTO_PATIENCE = 80


class GMMKMeans(BaseEstimator):
    """k-means clustering by Generalized Majorization-Minimization (G-MM).

    Lloyd's algorithm is MM: each iteration assigns every point to its nearest
    center (the bound that touches the k-means objective) and moves the
    centers to the means. G-MM only asks that each new assignment costs, at
    the previous centers, no more than ``v = eta F + (1 - eta) b`` of the
    previous iteration; with ``selection="random"`` it draws such an
    assignment by a random walk, which lets it leave the local minima near the
    initialisation that Lloyd sticks to (Naderi et al., ICML 2019). The
    default, ``selection="merge-split"``, spends that allowance on merging
    the clusters that are cheapest to merge into a neighbour and re-seeds their
    centers in the costliest clusters: measured in bench/walk_samplers.py and
    bench/equal_time.py, it finds far better clusterings per second than the
    random walk and than restarted k-means, and like Lloyd it needs one pass
    over the data per iteration (it works from per-cluster sums). The paper's
    G-MM is ``GMMKMeans(eta=0.02, selection="random")``.

    Parameters
    ----------
    n_clusters : int, default=8
    eta : float in (0, 1], default=0.1
        Progress coefficient. 1 gives Lloyd's algorithm exactly. The paper
        uses 0.02 with random bounds; 0.1 is as good for merge-split and takes
        fewer iterations (bench/walk_samplers.py).
    init : {"k-means++", "k-means||", "forgy", "random-partition"}, array of shape (n_clusters, n_features) or callable, default="k-means++"
        "k-means++": greedy k-means++ (2 + log k candidates per center, as
        scikit-learn), one pass over the rows per center; "k-means||":
        Bahmani et al.'s oversampling in 5 passes, reduced by weighted
        k-means++ (:func:`gmmfast.cluster.kmeans_parallel`); "forgy": k
        distinct samples; "random-partition": each sample to a random cluster,
        centers at the means (an empty cluster gets a random sample); a
        callable is called as ``init(X, n_clusters, random_state)`` with a
        numpy Generator and returns the centers.
    init_size : int, "auto" or None, default="auto"
        Rows ("k-means++", "k-means||") seed on: a uniform sample of this many
        rows (with their weights) when X has more; None seeds on all rows.
        "auto" seeds on all rows (bench/init.py measures the trade-off).
    n_init : int or "auto", default=1
        Runs from different initialisations; the one with the lowest objective is kept.
        "auto" (as scikit-learn's KMeans): 10 for "forgy" and "random-partition", else 1.
    max_iter : int, default=300
        Iterations of the G-MM run, and of each escape proposal's run.
    tol : float, default=1e-4
        Stop when the gap d_t = b_t(w_t) - F(w_t) is at most ``tol * F(w_0)``.
    selection : {"merge-split", "random", "mm", "balanced"} or callable, default="merge-split"
        How bounds are chosen among the valid ones. "random": a random walk
        over assignments (the paper's random bounds); "mm": the touching bound
        (Lloyd); "balanced": the built-in bias against cluster starvation (the
        entropy of the cluster sizes, see :func:`balanced_bias`); a callable
        ``g(labels, costs) -> float`` is a bias: the highest-scoring of the
        touching bound and ``n_candidates`` random valid bounds is used;
        "merge-split": the touching bound with the clusters that are cheapest
        to merge into a neighbouring cluster merged while the bound stays
        valid, and the freed centers moved to points of the costliest clusters
        (any center of an empty cluster minimises the bound).
    walk_steps : int or "auto", default="auto"
        Random-walk proposals per iteration (random selection, walk samplers);
        "auto" is 30 per sample (bench/walk_steps.py).
    n_candidates : int, default=8
        Random valid bounds scored by a bias (biased selection only).
    sampler : {"uniform", "local", "gibbs"}, default="uniform"
        How a random valid bound is drawn. "uniform": the paper's random walk
        (a random point to a uniformly drawn other cluster, accepted iff the
        bound stays valid); "local": a Metropolis-Hastings walk with the same
        target (uniform on the valid assignments) whose proposals favour
        clusters adjacent in a nearest-neighbour graph of the centers;
        "gibbs": each point draws its cluster among its nearest center and
        that center's graph neighbours from the maximum-entropy distribution
        whose expected cost meets the threshold, repaired to validity
        (``walk_steps`` is then unused). Every sampled bound is valid.
    n_neighbors : int, default=8
        Neighbours per center in the center graph ("local" and "gibbs"), and
        the merge candidates of a cluster ("merge-split").
    patience : int or "auto", default="auto"
        With "merge-split": after G-MM converges, propose leaving the solution
        (merge a cheap cluster, re-seed its center where the objective drops
        most, run G-MM again from there; :mod:`gmmfast.cluster._escape`) and
        keep a result only if its objective is lower; stop after ``patience``
        proposals in a row that did not lower it. 0 disables. "auto" is
        max(80, n_clusters): the (merge, split) pairs to try grow with k.
        Deterministic for a fixed ``random_state``. Chosen from bench/escape.py.
    escape_effort : float, default=1.0
        The escape proposals also stop once they have made this many times as
        many passes over the data as the initialisation (counted in passes of a
        k-center search: k-means++ costs about 3 + log k) and the first G-MM run
        did together, but never fewer passes than cost 10^10 row-center-feature
        products (about a second on one core; small sets stop by ``patience``
        alone): on large sets escaping about doubles the work of a fit.
        Deterministic.
    max_time : float or None, default=None
        Also stop proposing after this many seconds (the result then depends
        on the machine's speed).
    random_state : None, int, numpy Generator or RandomState, default=None
        Results are identical for a fixed seed whatever the thread count.
    verbose : int, default=0
        Print a line per iteration (objective, gap, points whose nearest
        center changed, seconds); nothing by default.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of int32, shape (n_samples,)
        Nearest center of each training sample.
    inertia_ : float
        Sum of weighted squared distances to the nearest center, F(w).
    n_iter_ : int
        Iterations of the kept run, its escape phases included.
    history_ : gmmfast.core.History
        Per-iteration record of the kept run's first G-MM phase (bounds, thresholds,
        gaps, walk statistics).
    escapes_ : list of gmmfast.cluster._escape.Escape
        Every escape proposal of the kept run in order: what was merged and
        re-seeded, the phase's objective and History, and whether it was kept
        (the kept objective never increases).
    n_features_in_ : int

    Notes
    -----
    scikit-learn's ``check_estimator`` finds that fitting with integer weights differs
    from fitting on repeated rows (``check_sample_weight_equivalence_on_dense_data``):
    k-means++ and the escapes draw rows at random, and repeated rows change the draws.
    scikit-learn's own KMeans fails it for the same reason and lists it as an expected
    failure; so does this project's test (pass it in ``expected_failed_checks``). With the
    same initial centers and eta = 1, weights and repeated rows give the same fit (tested).
    """

    def __init__(self, n_clusters: int = 8, *, eta: float = 0.1,
                 init: Union[str, np.ndarray, Callable] = "k-means++",
                 init_size: Union[int, str, None] = "auto",
                 n_init: Union[int, str] = 1,
                 max_iter: int = 300, tol: float = 1e-4,
                 selection: Union[str, Callable] = "merge-split",
                 walk_steps: Union[int, str] = "auto", n_candidates: int = 8,
                 sampler: str = "uniform", n_neighbors: int = 8,
                 patience: Union[int, str] = "auto", escape_effort: float = 1.0,
                 max_time: Optional[float] = None,
                 random_state: Any = None, verbose: int = 0):
        self.n_clusters = n_clusters
        self.eta = eta
        self.init = init
        self.init_size = init_size
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.selection = selection
        self.walk_steps = walk_steps
        self.n_candidates = n_candidates
        self.sampler = sampler
        self.n_neighbors = n_neighbors
        self.patience = patience
        self.escape_effort = escape_effort
        self.max_time = max_time
        self.random_state = random_state
        self.verbose = verbose

    # -- validation -------------------------------------------------------------
    def _check_params(self, X: np.ndarray) -> dict:
        n, d = X.shape
        k = check_int(self.n_clusters, "n_clusters", 1)
        if k > n:
            raise ValueError(f"n_samples={n} should be >= n_clusters={k}.")
        init = self.init
        if isinstance(self.n_init, str):
            if self.n_init != "auto":
                raise ValueError(f"n_init must be an integer >= 1 or 'auto', got {self.n_init!r}.")
            n_init = 10 if isinstance(init, str) and init in ("forgy", "random-partition") else 1
        else:
            n_init = check_int(self.n_init, "n_init", 1)
        if isinstance(init, str):
            if init not in INITS:
                raise ValueError(f"init must be one of {INITS}, an array of shape "
                                 f"(n_clusters, n_features) or a callable, got {init!r}.")
        elif callable(init):
            pass
        else:
            init = check_data(init, "init", dtype=X.dtype)
            if init.shape != (k, d):
                raise ValueError(f"init array must have shape (n_clusters, n_features) = "
                                 f"({k}, {d}), got {init.shape}.")
            if n_init != 1:
                warnings.warn("Explicit initial centers given: n_init is set to 1.",
                              RuntimeWarning, stacklevel=3)
                n_init = 1
        selection = self.selection
        if isinstance(selection, str):
            if selection not in SELECTIONS:
                raise ValueError(f"selection must be one of {SELECTIONS} or a callable "
                                 f"g(labels, costs) -> float, got {selection!r}.")
        elif not callable(selection):
            raise ValueError(f"selection must be one of {SELECTIONS} or a callable, "
                             f"got {selection!r}.")
        walk_steps = check_walk_steps(self.walk_steps, AUTO_STEPS_PER_POINT * n)
        init_size = self.init_size
        if init_size is None or (isinstance(init_size, str) and init_size == "auto"):
            init_size = n
        elif isinstance(init_size, str):
            raise ValueError(f"init_size must be an integer >= n_clusters, 'auto' or None, "
                             f"got {init_size!r}.")
        else:
            init_size = min(check_int(init_size, "init_size", k), n)
        if not isinstance(self.sampler, str) or self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}.")
        max_time = self.max_time
        if max_time is not None:
            max_time = check_real(max_time, "max_time", 0.0)
        patience = self.patience
        if isinstance(patience, str):
            if patience != "auto":
                raise ValueError(f"patience must be an integer >= 0 or 'auto', got {patience!r}.")
            patience = max(AUTO_PATIENCE, k)
        return dict(sampler=self.sampler, patience=check_int(patience, "patience", 0),
                    escape_effort=check_real(self.escape_effort, "escape_effort", 0.0),
                    max_time=max_time,
                    n_neighbors=check_int(self.n_neighbors, "n_neighbors", 1),
                    k=k, init=init, init_size=init_size, n_init=n_init, selection=selection,
                    eta=check_eta(self.eta), tol=check_tol(self.tol),
                    max_iter=check_max_iter(self.max_iter), walk_steps=walk_steps,
                    n_candidates=check_int(self.n_candidates, "n_candidates", 0),
                    verbose=check_int(self.verbose, "verbose", 0))

    def _check_test_data(self, X: Any) -> np.ndarray:
        self._check_is_fitted()
        X = check_data(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X

    # -- fitting ------------------------------------------------------------------
    def _init_centers(self, X, sw, k, init, rng, n_threads, init_size=None):
        n = X.shape[0]
        if isinstance(init, np.ndarray):
            return init.copy()
        if callable(init):
            centers = check_data(init(X, k, rng), "init(X, n_clusters, random_state)",
                                 dtype=X.dtype)
            if centers.shape != (k, X.shape[1]):
                raise ValueError(f"init callable must return an array of shape ({k}, "
                                 f"{X.shape[1]}), got {centers.shape}.")
            return centers
        if init in ("k-means++", "k-means||"):
            if init_size is not None and init_size < n:
                rows = np.sort(rng.choice(n, size=init_size, replace=False))
                X, sw = np.ascontiguousarray(X[rows]), np.ascontiguousarray(sw[rows])
            if init == "k-means++":
                return _plusplus(X, k, sw, rng, None, n_threads)
            return _parallel(X, k, sw, rng, 2.0, 5, n_threads)
        forgy = X[rng.choice(n, size=k, replace=False)]
        if init == "forgy":
            return np.ascontiguousarray(forgy)
        labels = rng.integers(0, k, size=n).astype(np.int32)   # random partition
        return update_centers(X, sw, labels, np.ascontiguousarray(forgy), n_threads)[0]

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> "GMMKMeans":
        """Cluster X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a dask array
            float32 stays float32; other numeric input becomes float64. A
            ``dask.array.Array`` chunked by rows is fitted on its cluster, one pass
            per iteration; then ``labels_`` is a lazy dask array
            (:func:`gmmfast.cluster._dask.fit`).
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights; the objective is sum_i s_i ||x_i - mu_{z_i}||^2.

        Returns
        -------
        self
        """
        if _dask.is_dask_array(X):      # X and its labels stay on the cluster
            return _dask.fit(self, X, sample_weight)
        X = check_data(X, "X")
        p = self._check_params(X)
        sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        rng = check_random_state(self.random_state)
        n_threads = openmp_max_threads()
        eta, selection = p["eta"], p["selection"]
        if selection in ("random", "merge-split") and eta == 1.0:
            selection = "mm"     # every valid bound touches: the touching one is Lloyd's
        core_selection = balanced_bias if selection == "balanced" else selection
        best: Optional[GMMResult] = None
        best_family = None
        with blas_single_threaded():
            for run in range(p["n_init"]):
                t0 = time.perf_counter()
                w0 = self._init_centers(X, sw, p["k"], p["init"], rng, n_threads, p["init_size"])
                init_passes = _init_passes(p, X.shape[0])
                if p["verbose"]:
                    print(f"G-MM k-means run {run + 1}/{p['n_init']}: initialisation "
                          f"({p['init'] if isinstance(p['init'], str) else 'given'}) "
                          f"{time.perf_counter() - t0:.2f} s", flush=True)
                family = KMeansBounds(X, sw, walk_steps=p["walk_steps"], n_threads=n_threads,
                                      n_candidates=p["n_candidates"],
                                      sampler=p["sampler"], n_neighbors=p["n_neighbors"],
                                      relocate_empty=selection == "merge-split",
                                      seed=draw_seed(rng))
                res = self._run(family, w0, p, core_selection, rng, run)
                main, escapes = res, []
                if selection == "merge-split":
                    res, escapes, _ = escape(
                        family, res,
                        lambda w, iters: self._run(family, w, dict(p, max_iter=iters),
                                                   core_selection, rng, run),
                        rng, n_neighbors=p["n_neighbors"], patience=p["patience"],
                        max_iter=p["max_iter"], max_time=p["max_time"],
                        max_passes=pass_budget(p["escape_effort"], init_passes, res.n_iter,
                                               X.shape[0], p["k"], X.shape[1]))
                    if p["verbose"]:
                        kept = sum(e.accepted for e in escapes)
                        print(f"  escapes: {len(escapes)} proposals, {kept} kept; objective "
                              f"{main.objective:.6g} -> {res.objective:.6g}", flush=True)
                if best is None or res.objective < best[0].objective:
                    best, best_family = (res, main, escapes), family
            res, main, escapes = best
            labels = best_family.labels(res.w)
            _warn_empty(X, sw, res.w, labels, p["k"], n_threads)
        self.cluster_centers_ = res.w
        self.labels_ = labels
        self.inertia_ = res.objective
        self.n_iter_ = main.n_iter + sum(e.history.n_iter for e in escapes)
        self.history_ = main.history
        self.escapes_ = escapes
        self.n_features_in_ = X.shape[1]
        self._fitted = True
        return self

    def _run(self, family, w0, p, selection, rng, run) -> GMMResult:
        callback = None
        if p["verbose"]:
            def callback(t, history):
                print(f"  iteration {t}: objective {history.objective[-1]:.6g}, "
                      f"gap {history.gap[-1]:.3g}, {family.last.changed} points changed "
                      f"cluster, {history.time[-1]:.2f} s", flush=True)
        return generalized_mm(family, w0, eta=p["eta"], tol=p["tol"], max_iter=p["max_iter"],
                              selection=selection, random_state=rng, callback=callback)

    def fit_predict(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit and return the training labels."""
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X: Any, sample_weight: Any = None) -> np.ndarray:
        """Index of the nearest center of each sample (lazy for a dask array)."""
        if _dask.is_dask_array(X):
            return _dask.predict(self, X)
        X = self._check_test_data(X)
        return self._assign(X, sample_weight).labels

    def _assign(self, X, sample_weight):
        sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
        centers = np.ascontiguousarray(self.cluster_centers_, dtype=X.dtype)
        with blas_single_threaded():
            return assign(X, sw, centers, openmp_max_threads())

    def transform(self, X: Any) -> np.ndarray:
        """Euclidean distance of each sample to each center, shape (n_samples, n_clusters)."""
        if _dask.is_dask_array(X):
            return _dask.transform(self, X)
        X = self._check_test_data(X)
        centers = np.ascontiguousarray(self.cluster_centers_, dtype=X.dtype)
        out = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
        K.distances(X, centers, out, openmp_max_threads())
        return out

    def fit_transform(self, X: Any, y: Any = None, sample_weight: Any = None) -> np.ndarray:
        """Fit, then return the distances of the training samples to the centers."""
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the columns of :meth:`transform`: "gmmkmeans0", "gmmkmeans1", ... (as
        scikit-learn names KMeans's); ``input_features`` is ignored."""
        self._check_is_fitted()
        prefix = type(self).__name__.lower()
        return np.array([f"{prefix}{j}" for j in range(self.cluster_centers_.shape[0])],
                        dtype=object)

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        """Opposite of the k-means objective of X at the fitted centers."""
        if _dask.is_dask_array(X):
            return _dask.score(self, X, sample_weight)
        X = self._check_test_data(X)
        return -self._assign(X, sample_weight).objective

    def _more_sklearn_tags(self, tags: Any) -> Any:
        from sklearn.utils import TransformerTags
        tags.estimator_type = "clusterer"
        tags.transformer_tags = TransformerTags(preserves_dtype=["float64", "float32"])
        return tags


def _warn_empty(X: np.ndarray, sw: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                k: int, n_threads: int) -> None:
    """Warn when the fitted clustering has empty clusters, saying why.

    Identical rows always share a cluster, and a cluster whose rows are not all
    identical has a positive cost; so X has at least (non-empty clusters) +
    (clusters with a positive cost) distinct rows. Only when that bound is below
    k are the rows counted exactly (a sort of X), so the usual case costs one
    bincount.
    """
    counts = np.bincount(labels, minlength=k)
    n_empty = int((counts == 0).sum())
    if n_empty == 0:
        return
    costs = np.empty(X.shape[0])
    labeling_cost(X, sw, centers, labels, n_threads, costs)
    cluster_cost = np.bincount(labels, weights=costs, minlength=k)
    if (counts > 0).sum() + (cluster_cost > 0).sum() < k:
        rows = np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1])))
        n_points = np.unique(rows).shape[0]
        if n_points < k:
            warnings.warn(f"X has {n_points} distinct points, fewer than n_clusters ({k}): "
                          f"{n_empty} clusters are empty.", ConvergenceWarning, stacklevel=3)
            return
    warnings.warn(f"{n_empty} of the {k} clusters are empty at the end (their centers kept "
                  "their last position); selection='merge-split' (the default) moves empty "
                  "clusters' centers into the costliest clusters.", ConvergenceWarning,
                  stacklevel=3)


def _init_passes(p: dict, n: int) -> float:
    """The initialisation's work in passes of a k-center search over the data (k-means++:
    one pass per center over the rows it seeded on, each for 3 + int(log k) centers, the
    chosen one and the candidates)."""
    init = p["init"]
    if not isinstance(init, str):
        return 0.0
    share = p["init_size"] / n
    if init == "k-means++":
        return (3 + int(math.log(p["k"]))) * share
    if init == "k-means||":
        return 7.0 * share
    return 1.0
