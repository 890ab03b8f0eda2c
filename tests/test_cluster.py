"""GMMKMeans and the k-means bound family: invariants, Lloyd equivalence, determinism, validation."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.cluster import (KMeansBounds, balanced_bias, initial_centers, kmeans_plusplus,
                             sample_assignment)
from gmmfast.cluster._pass import assign
from gmmfast.cluster._samplers import walk
from gmmfast.core import generalized_mm
from gmmfast._validation import ConvergenceWarning, NotFittedError


def sse(X, centers, labels, w=None):
    w = np.ones(len(X)) if w is None else w
    return float((w * ((X.astype(float) - centers[labels].astype(float)) ** 2).sum(1)).sum())


def blobs(n=600, k=6, d=2, seed=0, spread=10.0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-spread, spread, size=(k, d))
    return means[rng.integers(0, k, n)] + rng.normal(size=(n, d)), means


# -- invariants of every run ------------------------------------------------------

@st.composite
def problems(draw):
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 4))
    k = draw(st.sampled_from([1, n, min(n, 3), min(n, 7)]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=draw(st.sampled_from([1e-3, 1.0, 1e3])), size=(n, d))
    if draw(st.booleans()):      # duplicate points
        X = X[rng.integers(0, max(1, n // 3), size=n)]
    return X.astype(dtype), k, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), eta=st.sampled_from([0.01, 0.2, 1.0]),
       selection=st.sampled_from(["random", "mm", "balanced", "merge-split"]),
       init=st.sampled_from(["k-means++", "forgy", "random-partition"]))
def test_invariants_on_every_iteration(problem, eta, selection, init):
    X, k, seed = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GMMKMeans(k, eta=eta, init=init, selection=selection, max_iter=40, tol=0,
                      random_state=seed, walk_steps=50, n_candidates=2).fit(X)
    h = m.history_
    eps = np.finfo(X.dtype).eps
    rounding = X.shape[0] * (64 * eps * np.abs(X).max()) ** 2     # matters when F(w_0) ~ 0
    assert h.invariant_violations(rtol=1e-6 if X.dtype == np.float32 else 1e-9,
                                  atol=rounding) == []
    assert (h.bound_at_previous <= h.threshold).all()          # exact validity
    assert m.cluster_centers_.dtype == X.dtype and m.cluster_centers_.shape == (k, X.shape[1])
    assert m.labels_.shape == (X.shape[0],) and 0 <= m.labels_.min() and m.labels_.max() < k
    assert np.isclose(m.inertia_, sse(X, m.cluster_centers_, m.labels_), rtol=1e-9, atol=1e-30)
    # G-MM's level: its first run and escapes; the default selection then polishes on the
    # same rows (Lloyd's passes to a fixed point), the others end there
    g = m.levels_[0]
    kept = [e.objective for e in m.escapes_ if e.accepted]
    assert g.objective == (kept[-1] if kept else h.objective[-1])
    assert g.n_iter == h.n_iter + sum(e.history.n_iter for e in m.escapes_)
    assert m.n_iter_ == sum(lv.n_iter for lv in m.levels_)
    assert m.inertia_ == m.levels_[-1].objective
    assert h.n_iter <= 40 and all(e.history.n_iter <= 40 for e in m.escapes_)
    for e in m.escapes_:
        assert e.history.invariant_violations(rtol=1e-6 if X.dtype == np.float32 else 1e-9,
                                              atol=rounding) == []
    if selection == "merge-split" and eta < 1:
        assert [lv.rows for lv in m.levels_] == [X.shape[0]] * 2
        p = m.levels_[1].history
        assert p.invariant_violations(rtol=1e-6 if X.dtype == np.float32 else 1e-9,
                                      atol=rounding) == []
        assert m.levels_[1].n_iter == p.n_iter <= 40
        assert m.inertia_ <= g.objective * (1 + 1e-9) + rounding
    else:
        assert len(m.levels_) == 1
    if k == X.shape[0] and np.unique(X, axis=0).shape[0] == k:
        assert m.inertia_ <= h.initial_objective


def test_history_records_walk_statistics():
    X, _ = blobs(2000, 10)
    m = GMMKMeans(10, eta=0.05, selection="random", walk_steps=3000, random_state=0,
                  init="random-partition").fit(X)
    h = m.history_
    assert (h.proposals == 3000).all()
    assert (h.accepted > 0).any() and (h.accepted <= h.proposals).all()
    assert np.all(np.diff(h.time) >= 0)


# -- Lloyd --------------------------------------------------------------------------

@pytest.mark.parametrize("d", [2, 20])        # direct distances and the BLAS gemm path
@pytest.mark.parametrize("how", [dict(eta=1.0), dict(eta=0.3, selection="mm")])
def test_eta_one_is_lloyd(d, how):
    from sklearn.cluster import KMeans
    X, means = blobs(3000, 12, d, seed=d, spread=2.0)      # overlapping: many iterations
    for trial in range(3):
        init = kmeans_plusplus(X, 12, np.ones(len(X)), np.random.default_rng(trial))
        ours = GMMKMeans(12, init=init, tol=0, max_iter=300, **how).fit(X)
        ref = KMeans(12, init=init, n_init=1, tol=0, max_iter=300, algorithm="lloyd").fit(X)
        assert ours.n_iter_ >= 4
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
        np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-10,
                                   atol=1e-12)
        assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-10)
        # scikit-learn also counts the final pass that finds the labels unchanged
        assert ours.n_iter_ in (ref.n_iter_, ref.n_iter_ - 1)


def test_lloyd_objective_never_increases():
    X, _ = blobs(2000, 15, 3)
    m = GMMKMeans(15, eta=1.0, init="random-partition", tol=0, random_state=4).fit(X)
    f = np.r_[m.history_.initial_objective, m.history_.objective]
    assert np.all(np.diff(f) <= 1e-9 * f[0])


def test_integer_weights_equal_repeated_points():
    X, _ = blobs(500, 5, 2, seed=3)
    w = np.random.default_rng(0).integers(0, 4, size=len(X)).astype(float)
    init = X[:5].copy()
    a = GMMKMeans(5, eta=1.0, init=init, tol=0).fit(X, sample_weight=w)
    b = GMMKMeans(5, eta=1.0, init=init, tol=0).fit(np.repeat(X, w.astype(int), axis=0))
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-12)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-12)


# -- determinism ------------------------------------------------------------------

@pytest.mark.parametrize("selection", ["random", "merge-split"])
@pytest.mark.parametrize("d", [2, 16])
def test_same_result_for_one_and_two_threads(d, selection):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70_000, d)).astype(np.float64)       # > 2 walk blocks, many slots
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            m = GMMKMeans(20, eta=0.05, max_iter=6, tol=0, random_state=7,
                          init="random-partition", selection=selection).fit(X)
        fits.append(m)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].history_.accepted, fits[1].history_.accepted)
    assert fits[0].inertia_ == fits[1].inertia_


def test_walk_blocks_are_thread_independent():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 3))
    sw = np.ones(len(X))
    C = X[:8].copy()
    a = assign(X, sw, C, 1)
    outs = []
    for threads in (1, 2):
        r = walk(X, sw, C, a.labels, a.objective, a.objective * 1.05, 50_000, 99, threads,
                 block_size=700)
        outs.append(r)
    np.testing.assert_array_equal(outs[0].labels, outs[1].labels)
    assert outs[0].value == outs[1].value and outs[0].accepted == outs[1].accepted
    assert outs[0].value <= a.objective * 1.05


def test_random_state_reproducible_and_seed_sensitive():
    X, _ = blobs(1000, 8)
    fit = lambda s: GMMKMeans(8, random_state=s, init="random-partition").fit(X)
    np.testing.assert_array_equal(fit(3).cluster_centers_, fit(3).cluster_centers_)
    assert not np.array_equal(fit(3).labels_, fit(4).labels_)


# -- dtypes and API -----------------------------------------------------------------

def test_float32_stays_float32():
    X, _ = blobs(800, 5, 3)
    X32 = X.astype(np.float32)
    m = GMMKMeans(5, random_state=0).fit(X32)
    assert m.cluster_centers_.dtype == np.float32
    assert m.transform(X32).dtype == np.float32
    m64 = GMMKMeans(5, random_state=0).fit(X)
    assert m64.cluster_centers_.dtype == np.float64
    assert m.inertia_ == pytest.approx(m64.inertia_, rel=1e-3)


def test_predict_transform_score_agree_with_fit():
    X, _ = blobs(900, 6, 4)
    m = GMMKMeans(6, random_state=2, n_init=3)
    labels = m.fit_predict(X)
    np.testing.assert_array_equal(labels, m.predict(X))
    D = m.transform(X)
    assert D.shape == (len(X), 6)
    np.testing.assert_array_equal(D.argmin(1), labels)
    np.testing.assert_allclose(D.min(1) ** 2, ((X - m.cluster_centers_[labels]) ** 2).sum(1))
    assert m.score(X) == pytest.approx(-m.inertia_, rel=1e-12)
    np.testing.assert_allclose(m.fit_transform(X), m.transform(X))


def test_feature_names_out_match_scikit_learn_kmeans():
    from sklearn.cluster import KMeans
    X = np.random.default_rng(5).normal(size=(60, 3))
    ours = GMMKMeans(4, random_state=0)
    with pytest.raises(NotFittedError):
        ours.get_feature_names_out()
    names = ours.fit(X).get_feature_names_out()
    theirs = KMeans(4, n_init=1, random_state=0).fit(X).get_feature_names_out()
    assert names.dtype == theirs.dtype and names.shape == (4,) == ours.transform(X[:2]).shape[1:]
    assert list(names) == [n.replace("kmeans", "gmmkmeans") for n in theirs]


def test_n_init_auto_follows_scikit_learn():
    X = np.random.default_rng(4).normal(size=(300, 2))
    for init, runs in (("k-means++", 1), ("forgy", 10), ("random-partition", 10)):
        auto = GMMKMeans(5, init=init, n_init="auto", random_state=3).fit(X)
        explicit = GMMKMeans(5, init=init, n_init=runs, random_state=3).fit(X)
        np.testing.assert_array_equal(auto.cluster_centers_, explicit.cluster_centers_)
        assert auto.n_init == "auto"                # the parameter is left as given


def test_n_init_keeps_best_objective(monkeypatch):
    """The kept run is the lowest of the n_init runs actually made (was: at most the median of
    six other fits, and an `assert` on a list that is never empty)."""
    from gmmfast.cluster import _fit
    X, _ = blobs(1500, 12, 2, seed=5)
    seen = []
    real = _fit.gmm_run

    def spy(*args, **kwargs):
        run = real(*args, **kwargs)
        seen.append(run.objective)
        return run

    monkeypatch.setattr(_fit, "gmm_run", spy)
    best = GMMKMeans(12, eta=1.0, init="forgy", n_init=6, random_state=0).fit(X)
    assert len(seen) == 6 and len(set(seen)) > 1       # the runs differ: the choice matters
    assert best.levels_[0].objective == min(seen)
    assert best.inertia_ <= min(seen)


def test_callable_init_and_bias():
    X, _ = blobs(600, 4)
    calls = []

    def init(X_, k, rng):
        calls.append(k)
        return X_[rng.choice(len(X_), k, replace=False)]

    def bias(labels, costs):
        assert labels.shape == costs.shape == (len(X),)
        return -float(costs.sum())

    m = GMMKMeans(4, init=init, selection=bias, n_candidates=3, random_state=0).fit(X)
    assert calls == [4]
    assert m.history_.invariant_violations() == []
    assert (m.history_.proposals > 0).all()


@pytest.mark.parametrize("returned, error, match", [
    (None, TypeError, "got NoneType"),
    (np.zeros(3), TypeError, r"got ndarray of shape \(3,\)"),
    ("1.0", TypeError, "got str"),
    (np.complex128(1.0), TypeError, "got complex128"),
    (float("nan"), ValueError, "not nan"),
])
def test_a_bias_returning_no_real_number_is_named(returned, error, match):
    """A bias's score is compared with the others': None, arrays, strings and complex numbers
    gave float()'s errors (which name neither selection nor the bias) or were parsed, and NaN
    was never ranked, silently."""
    X, _ = blobs(300, 4)
    with pytest.raises(error, match=r"selection: a bias g\(labels, costs\) .*" + match):
        GMMKMeans(4, selection=lambda labels, costs: returned, random_state=0).fit(X)


def test_a_bias_cannot_write_into_the_fits_labels():
    """The labels a bias sees are the fit's own assignment: read-only, so a bias that writes
    into them fails instead of corrupting the fit."""
    X, _ = blobs(300, 4)

    def writes(labels, costs):
        labels[0] = (labels[0] + 1) % 4
        return 0.0
    with pytest.raises(ValueError, match="read-only"):
        GMMKMeans(4, selection=writes, random_state=0).fit(X)


def test_balanced_bias_prefers_even_sizes():
    even = np.repeat(np.arange(4), 25)
    starved = np.r_[np.zeros(97, int), 1, 2, 3]
    assert balanced_bias(even, np.zeros(100)) > balanced_bias(starved, np.zeros(100))


def test_get_set_params_and_repr():
    m = GMMKMeans(5, eta=0.1)
    assert m.get_params()["eta"] == 0.1 and m.get_params()["n_clusters"] == 5
    assert m.set_params(eta=0.5) is m and m.eta == 0.5
    assert "eta=0.5" in repr(m)
    with pytest.raises(ValueError, match="Invalid parameter 'bogus'"):
        m.set_params(bogus=1)


# -- bad input ----------------------------------------------------------------------

X_OK = np.random.default_rng(0).normal(size=(20, 2))


@pytest.mark.parametrize("X, params, match", [
    (np.array([[0.0, np.nan]] * 5), {}, "NaN or infinity"),
    (np.array([[0.0, np.inf]] * 5), {}, "NaN or infinity"),
    (np.empty((0, 2)), {}, "empty"),
    (np.arange(10.0), {}, "2-D"),
    (X_OK, dict(n_clusters=21), "n_clusters=21"),
    (X_OK, dict(n_clusters=0), "n_clusters"),
    (X_OK, dict(eta=0), "eta"),
    (X_OK, dict(eta=1.01), "eta"),
    (X_OK, dict(eta=-0.5), "eta"),
    (X_OK, dict(init="kmeans++"), "init must be one of"),
    (X_OK, dict(init=None), r"init must be one of .*an array of shape .*or a callable, got None"),
    (X_OK, dict(init=5), r"init must be one of .*got 5"),
    (X_OK, dict(restarts=2**63), r"restarts must be an integer in \[0, 1000000\]"),
    (X_OK, dict(restarts=10**6 + 1), "restarts must be an integer in"),
    (X_OK, dict(init=np.zeros((3, 2))), r"init array must have shape"),
    (X_OK, dict(init=np.zeros((8, 3))), r"init array must have shape"),
    (X_OK, dict(selection="greedy"), "selection must be one of"),
    (X_OK, dict(walk_steps=-1), "walk_steps"),
    (X_OK, dict(walk_steps="many"), "walk_steps"),
    (X_OK, dict(n_init=0), "n_init"),
    (X_OK, dict(n_init="10"), "n_init must be an integer >= 1 or 'auto'"),
    (X_OK, dict(max_iter=0), "max_iter"),
    (X_OK, dict(tol=-1.0), "tol"),
    (X_OK, dict(random_state="seed"), "random_state"),
])
def test_bad_input_raises_clear_error(X, params, match):
    m = GMMKMeans(**{"n_clusters": 8, **params})
    with pytest.raises(ValueError, match=match):
        m.fit(X)
    assert not hasattr(m, "cluster_centers_") and not hasattr(m, "labels_")


def test_failed_refit_leaves_previous_fit_untouched():
    m = GMMKMeans(3, random_state=0).fit(X_OK)
    centers = m.cluster_centers_.copy()
    with pytest.raises(ValueError):
        m.fit(np.full((20, 2), np.nan))
    np.testing.assert_array_equal(m.cluster_centers_, centers)


def test_unfitted_and_wrong_width():
    with pytest.raises(NotFittedError):
        GMMKMeans(2).predict(X_OK)
    m = GMMKMeans(2, random_state=0).fit(X_OK)
    with pytest.raises(ValueError, match="X has 3 features, but GMMKMeans is expecting 2"):
        m.predict(np.zeros((4, 3)))


def test_data_too_small_for_squared_distances_is_refused_at_fit_only():
    """Fitting data whose squared distances underflow its dtype (float32 below |x| = 3e-16,
    float64 below 1e-146) gave wrong labels silently; it is refused naming X. Rows to label
    and centers near zero are not held to it, nor all-zero data."""
    from gmmfast import KMeans
    from gmmfast.cluster import kmeans_plusplus
    X = np.random.default_rng(3).normal(size=(200, 4))
    for data in ((X * 1e-20).astype(np.float32), X * 1e-150):
        for fit in (lambda: GMMKMeans(3, random_state=0).fit(data),
                    lambda: KMeans(3, random_state=0).fit(data),
                    lambda: kmeans_plusplus(data, 3, random_state=0)):
            with pytest.raises(ValueError, match=r"X has values only up to .*underflow"):
                fit()
    GMMKMeans(3, random_state=0).fit((X * 1e-12).astype(np.float32))
    GMMKMeans(3, random_state=0).fit(X * 1e-140)
    with pytest.warns(ConvergenceWarning, match="1 distinct points"):
        GMMKMeans(2, random_state=0).fit(np.zeros((20, 3)))
    m = GMMKMeans(3, random_state=0).fit(X.astype(np.float32))
    assert m.predict((X[:5] * 1e-30).astype(np.float32)).shape == (5,)
    from gmmfast.cluster import inertia, initial_centers
    assert inertia((X[:5] * 1e-30).astype(np.float32), m.cluster_centers_) > 0
    with pytest.raises(ValueError, match="underflow"):
        initial_centers((X * 1e-20).astype(np.float32), 3, random_state=0)
    GMMKMeans(3, init=np.full((3, 4), 1e-30), random_state=0).fit(X)


def test_an_objective_beyond_float64_is_refused_before_the_fit():
    """Data within the per-row limit whose (weighted) sum of squared distances can overflow
    float64 ended in "OverflowError: intermediate overflow in fsum" (200,000 rows at 1e152)
    or in "F(w_0) = inf" that did not name sample_weight; the fits now refuse it naming X
    (and sample_weight when given), a sparse fit too. inertia() at given centers returns
    inf, as a sum beyond float64 is."""
    import scipy.sparse as sp
    from gmmfast import KMeans
    from gmmfast.cluster import inertia
    X = np.random.default_rng(4).normal(size=(2000, 2))
    big = X * 1e152          # |x| <= 4e152: 2000 rows x 4 x 2 x (4e152)^2 is beyond float64
    for fit in (lambda: GMMKMeans(3, random_state=0).fit(big),
                lambda: KMeans(3, random_state=0).fit(big),
                lambda: kmeans_plusplus(big, 3, random_state=0),
                lambda: KMeansBounds(big, None, walk_steps=0, n_threads=1)):
        with pytest.raises(ValueError, match=r"X has values up to .* and 2,000 rows: .*"
                                             r"scale X\.$"):
            fit()
    heavy = np.full(2000, 1e10)
    for fit in (lambda: GMMKMeans(3, random_state=0).fit(X * 1e150, sample_weight=heavy),
                lambda: KMeans(3, random_state=0).fit(sp.csr_matrix(X * 1e150),
                                                      sample_weight=heavy)):
        with pytest.raises(ValueError, match=r"sample_weight summing to 2e\+13: .*scale X or "
                                             r"sample_weight\.$"):
            fit()
    m = GMMKMeans(3, random_state=0).fit(X * 1e150)         # within range: fits as before
    np.testing.assert_allclose(m.inertia_, GMMKMeans(3, random_state=0).fit(X).inertia_
                               * 1e300, rtol=1e-12)
    assert inertia(np.tile(big, (20, 1)), big[:3]) == np.inf     # 5.8e308


def test_kmeans_random_init_names_too_few_positive_weights():
    from gmmfast import KMeans
    w = np.r_[np.ones(3), np.zeros(17)]
    with pytest.raises(ValueError, match=r"init='random' draws the 4 initial centers among "
                                         r"rows of positive weight; sample_weight has 3"):
        KMeans(4, init="random", random_state=0).fit(X_OK, sample_weight=w)
    KMeans(3, init="random", random_state=0).fit(X_OK, sample_weight=w)


def test_sparse_data_too_small_for_squared_distances_is_refused_at_fit():
    import scipy.sparse as sp
    from gmmfast import KMeans
    X = np.random.default_rng(3).normal(size=(200, 4))
    tiny = sp.csr_matrix((X * 1e-20).astype(np.float32))
    with pytest.raises(ValueError, match=r"X has values only up to .*underflow float32"):
        KMeans(3, random_state=0).fit(tiny)
    m = KMeans(3, random_state=0).fit(sp.csr_matrix(X.astype(np.float32)))
    assert m.predict(tiny).shape == (200,)


def test_sample_weight_beyond_the_dtype_of_X_is_named():
    with pytest.raises(ValueError, match=r"sample_weight has values up to 1e\+300, beyond "
                                         r"float32's largest"):
        GMMKMeans(2).fit(X_OK.astype(np.float32), sample_weight=np.full(20, 1e300))
    with pytest.raises(ValueError, match="sample_weight contains NaN or infinity"):
        GMMKMeans(2).fit(X_OK, sample_weight=np.full(20, np.nan))


def test_sample_weight_validation():
    with pytest.raises(ValueError, match="sample_weight"):
        GMMKMeans(2).fit(X_OK, sample_weight=-np.ones(20))
    with pytest.raises(ValueError, match="sample_weight"):
        GMMKMeans(2).fit(X_OK, sample_weight=np.ones(3))


def test_fewer_distinct_points_than_clusters_warns_and_works():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]]), 4, axis=0)
    with pytest.warns(UserWarning, match="3 distinct points"):
        m = GMMKMeans(5, random_state=0).fit(X)
    assert m.inertia_ == pytest.approx(0.0, abs=1e-12)
    assert np.unique(m.labels_).size == 3


def test_int_input_becomes_float64():
    X = np.random.default_rng(0).integers(0, 50, size=(60, 2))
    assert GMMKMeans(3, random_state=0).fit(X).cluster_centers_.dtype == np.float64


def test_complex_and_sparse_rejected():
    with pytest.raises(ValueError, match="Complex"):
        GMMKMeans(2).fit(X_OK + 1j)
    scipy_sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="sparse"):
        GMMKMeans(2).fit(scipy_sparse.csr_matrix(X_OK))


# -- the sampler ------------------------------------------------------------------

def test_sample_assignment_is_valid_and_moves():
    X, _ = blobs(3000, 10, 2)
    C = X[:10].copy()
    start = ((X[:, None, :] - C[None]) ** 2).sum(-1).argmin(1)
    f = sse(X, C, start)
    labels, cost, acc = sample_assignment(X, C, start, f * 1.1, 100_000, random_state=0)
    assert labels.dtype == np.int32
    assert cost <= f * 1.1
    assert cost == pytest.approx(sse(X, C, labels), rel=1e-12)
    assert acc > 0 and (labels != start).sum() > 0
    # a budget equal to the start cost admits no cost-increasing move
    same, cost0, _ = sample_assignment(X, C, start, f, 10_000, random_state=0)
    assert cost0 <= f


def test_sample_assignment_is_uniform_over_valid_assignments():
    # 4 points, 3 clusters: 81 assignments, enumerated; the walk's end state should be
    # uniform over those within the budget
    X = np.array([[0.0], [1.0], [3.0], [4.0]])
    C = np.array([[0.5], [2.0], [3.5]])
    import itertools
    configs = np.array(list(itertools.product(range(3), repeat=4)))
    costs = ((X[:, 0][None, :] - C[configs, 0]) ** 2).sum(1)
    start = configs[costs.argmin()]
    budget = costs.min() + 6.0
    valid = {tuple(c) for c in configs[costs <= budget]}
    counts = dict.fromkeys(valid, 0)
    n_samples = 3000
    for s in range(n_samples):
        labels, cost, _ = sample_assignment(X, C, start, budget, 60, random_state=s)
        counts[tuple(labels)] += 1          # KeyError if an invalid assignment came out
    freq = np.array(list(counts.values()))
    expected = n_samples / len(valid)
    chi2 = ((freq - expected) ** 2 / expected).sum()
    from scipy.stats import chi2 as chi2_dist
    assert len(valid) > 5
    assert chi2_dist.sf(chi2, len(valid) - 1) > 1e-4


@pytest.mark.parametrize("kw, match", [
    (dict(budget=0.0), "budget"),
    (dict(labels=np.zeros(5, int)), "labels"),
    (dict(labels=np.full(20, 9)), "labels"),
    (dict(n_steps=-1), "n_steps"),
    (dict(centers=np.zeros((3, 5))), "centers"),
])
def test_sample_assignment_bad_input(kw, match):
    args = dict(X=X_OK, centers=X_OK[:3], labels=np.zeros(20, int), budget=1e9, n_steps=10)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        sample_assignment(**args)


def test_bound_family_in_generic_core():
    X, _ = blobs(1000, 5)
    fam = KMeansBounds(X, np.ones(len(X)), walk_steps=2000, n_threads=1)
    res = generalized_mm(fam, X[:5].copy(), eta=0.1, tol=1e-6,
                         random_state=np.random.default_rng(0))
    assert res.history.invariant_violations() == []
    assert res.objective == pytest.approx(sse(X, res.w, fam.labels(res.w)), rel=1e-12)


# -- the paper's D31 result (Table 1, random partition) ----------------------------

def test_gmm_beats_kmeans_on_d31_from_random_partition(shared_data):
    X = np.loadtxt(shared_data / "sipu" / "d31.data.gz")
    n, k = X.shape[0], 31
    km, gm = [], []
    for trial in range(8):
        w0 = initial_centers(X, k, "random-partition",
                             random_state=np.random.default_rng(trial), n_threads=1)
        km.append(GMMKMeans(k, eta=1.0, init=w0, tol=0).fit(X).inertia_ / n)
        gm.append(GMMKMeans(k, eta=0.02, init=w0, selection="random",
                            random_state=trial).fit(X).inertia_ / n)
    # paper: k-means 52.6 +- 47.1, G-MM 1.21 +- 0.05 (SSE per point); best known 1.0946
    assert np.mean(gm) < np.mean(km)
    assert np.mean(gm) < 1.6 and min(gm) >= 1.09


# -- scikit-learn's estimator checks -------------------------------------------------

def test_feature_names_and_set_output_as_scikit_learn():
    """GMMKMeans records a data frame's column names and checks them, with scikit-learn's
    messages (compared with sklearn.cluster.KMeans's), and set_output chooses transform's
    container, as gmmfast.KMeans (the same mixin)."""
    pd = pytest.importorskip("pandas")
    from sklearn import config_context
    from sklearn.cluster import KMeans as SkKMeans
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"],
                      index=np.arange(300) * 2)
    est = GMMKMeans(4, random_state=0).fit(df)
    sk = SkKMeans(4, n_init=1, random_state=0).fit(df)
    np.testing.assert_array_equal(est.feature_names_in_, sk.feature_names_in_)
    assert est.feature_names_in_.dtype == object

    def messages(model, X):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.predict(X)
        return [(str(w.message).replace(type(model).__name__, "EST"), w.category, w.filename)
                for w in caught]
    ours = messages(est, df.to_numpy())
    assert ours == [m[:2] + (__file__,) for m in messages(sk, df.to_numpy())]   # at the caller
    assert ours[0][0] == "X does not have valid feature names, but EST was fitted with feature names"
    for bad in (df.rename(columns={"a": "z"}), df[["b", "a", "c"]]):
        with pytest.raises(ValueError, match="feature names should match") as ours_err:
            est.predict(bad)
        with pytest.raises(ValueError) as sk_err:
            sk.predict(bad)
        assert str(ours_err.value).splitlines()[0] == str(sk_err.value).splitlines()[0]
    plain = GMMKMeans(4, random_state=0).fit(df.to_numpy())
    assert not hasattr(plain, "feature_names_in_")
    assert messages(plain, df)[0][0] == "X has feature names, but EST was fitted without feature names"
    assert not hasattr(est.fit(df.to_numpy()), "feature_names_in_")      # a refit forgets them
    est.fit(df)

    assert isinstance(est.transform(df), np.ndarray)
    assert est.set_output(transform="pandas") is est
    out = est.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == [f"gmmkmeans{j}" for j in range(4)]
    assert out.index.equals(df.index)
    np.testing.assert_allclose(out.to_numpy(), est.set_output(transform="default").transform(df))
    assert isinstance(est.set_output(transform="pandas").fit_transform(df), pd.DataFrame)
    est.set_output(transform="default")
    with config_context(transform_output="pandas"):      # scikit-learn's global setting
        assert isinstance(GMMKMeans(4, random_state=0).fit(df).transform(df), pd.DataFrame)
        assert isinstance(est.transform(df), np.ndarray)  # set_output wins
    with pytest.raises(ValueError, match="transform must be one of"):
        est.set_output(transform="arrow")


def test_set_output_names_a_missing_container_library(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_polars(name, *args, **kwargs):
        if name == "polars":
            raise ModuleNotFoundError("No module named 'polars'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_polars)
    monkeypatch.delitem(__import__("sys").modules, "polars", raising=False)
    m = GMMKMeans(2)
    with pytest.raises(ImportError, match=r"set_output\(transform='polars'\) needs polars"):
        m.set_output(transform="polars")
    assert not hasattr(m, "_sklearn_output_config")


@pytest.mark.parametrize("check", ["check_dataframe_column_names_consistency",
                                   "check_set_output_transform",
                                   "check_set_output_transform_pandas",
                                   "check_global_output_transform_pandas",
                                   "check_n_features_in_after_fitting"])
@pytest.mark.parametrize("name", ["GMMKMeans", "KMeans"])
def test_scikit_learn_feature_name_and_output_checks(name, check):
    """scikit-learn's checks of feature names and set_output, which its check_estimator
    (1.9) does not yield for third-party estimators: run by hand on both estimators."""
    pytest.importorskip("pandas")
    from sklearn.utils import estimator_checks
    import gmmfast
    est = getattr(gmmfast, name)(n_clusters=2, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the checks' own frames mix names on purpose
        getattr(estimator_checks, check)(name, est)

def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            GMMKMeans(n_clusters=2, n_init=2, max_iter=5),
            expected_failed_checks={
                "check_sample_weight_equivalence_on_dense_data":
                    "randomised like scikit-learn's KMeans (which lists the same expected "
                    "failure); exact equivalence is tested in "
                    "test_integer_weights_equal_repeated_points"},
            on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 45


# -- the nearest-center kernels -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_simd_variant_finds_the_nearest_center(dtype):
    from gmmfast._kernels import _kmeans as K
    rng = np.random.default_rng(0)
    top = K.simd_level()
    try:
        for level in range(top + 1):
            K.simd_level(level)
            for n, d, k in [(5, 2, 3), (257, 2, 200), (1001, 15, 100), (333, 3, 1),
                            (13, 40, 33), (600, 1, 17)]:
                X = rng.normal(size=(n, d)).astype(dtype)
                C = rng.normal(size=(k, d)).astype(dtype)
                labels = assign(X, np.ones(n, dtype), C, 2).labels
                ref = ((X[:, None].astype(float) - C[None]) ** 2).sum(-1).argmin(1)
                np.testing.assert_array_equal(labels, ref, err_msg=f"level {level}")
            # ties resolve to the first center, like a scalar loop
            X = np.zeros((9, 2), dtype)
            C = np.zeros((20, 2), dtype)
            assert (assign(X, np.ones(9, dtype), C, 1).labels == 0).all()
    finally:
        K.simd_level(top)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_simd_variant_merges_its_lanes_to_the_first_minimum_and_the_second(dtype):
    """The search's lanes merged (gmm_simd.h): at every SIMD level the label is the first
    nearest center, also when equal centers sit in different lanes and blocks, and the
    lower bound the search leaves on the other centers is the second-nearest distance (the
    nearest one again when a center is repeated), up to the search's rounding."""
    from gmmfast._kernels import _kmeans as K
    from gmmfast.cluster._pass import HamerlyBounds
    rng = np.random.default_rng(1)
    top = K.simd_level()
    try:
        for level in range(top + 1):
            K.simd_level(level)
            for n, d, k in [(1001, 15, 100), (300, 3, 37), (64, 1, 5)]:
                C = rng.normal(size=(k, d))
                C[[k - 1, k // 2]] = C[1]           # one center three times, lanes apart
                X = (C[rng.integers(0, k, n)] + 0.3 * rng.normal(size=(n, d))).astype(dtype)
                C = C.astype(dtype)
                bounds = HamerlyBounds(X)
                labels = assign(X, np.ones(n, dtype), C, 1, bounds=bounds).labels
                D = np.sqrt(((X[:, None].astype(float) - C[None].astype(float)) ** 2).sum(-1))
                np.testing.assert_array_equal(labels, D.argmin(1), err_msg=f"level {level}")
                second = np.sort(D, axis=1)[:, 1]
                assert np.all(bounds.lower <= second + 1e-9), level
                # in squared distance, within the margin of a float32 search's rounding
                # (float64 rows are screened in float32)
                np.testing.assert_allclose(bounds.lower ** 2, second ** 2, atol=1e-3, rtol=1e-4)
                tied = np.isin(labels, [1, k // 2, k - 1])
                assert tied.any() and labels[tied].max() == 1    # the first of the three
    finally:
        K.simd_level(top)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wide_row_cost_is_the_same_bits_at_every_simd_level(dtype):
    """gmm_cost.h, the cost of a row of 32 or more features: its AVX-512, AVX2 and portable
    variants give the same cost and the same residual sums, bit for bit (every operation
    rounded once), and both are the exact values to within the rounding of a sum of d
    terms; d mod 16 != 0 takes the tail's zeroed block."""
    from gmmfast._kernels import _kmeans as K
    rng = np.random.default_rng(3)
    for d in (32, 33, 47, 64, 128, 129, 300):
        for _ in range(20):
            x = (rng.normal(size=d) * 10.0 ** rng.uniform(-3, 3)).astype(dtype)
            c = (rng.normal(size=d) * 10.0 ** rng.uniform(-3, 3)).astype(dtype)
            w = float(rng.uniform(0, 3))
            r0 = rng.normal(size=d)
            out = []
            for level in range(K.simd_level() + 1):
                r = r0.copy()
                out.append((K.wide_cost(x, c, w, r, level), r))
            t = x.astype(np.float64) - c.astype(np.float64)
            assert out[0][0] == pytest.approx((t * t).sum(), rel=1e-13)
            np.testing.assert_allclose(out[0][1], r0 + w * t, rtol=1e-13, atol=1e-12)
            for v, r in out[1:]:
                assert v == out[0][0]
                np.testing.assert_array_equal(r, out[0][1])
    with pytest.raises(ValueError, match="same length"):
        K.wide_cost(np.zeros(40, dtype), np.zeros(39, dtype), 1.0, np.zeros(40), 0)
    with pytest.raises(ValueError, match="level must be"):
        K.wide_cost(np.zeros(40, dtype), np.zeros(40, dtype), 1.0, np.zeros(40), 3)


def test_verbose_prints_a_line_per_iteration(capsys):
    X, _ = blobs(300, 3)
    est = GMMKMeans(3, verbose=1, random_state=0, max_iter=5, tol=0).fit(X)
    out = capsys.readouterr().out
    assert "G-MM k-means run 1/1: initialisation (k-means++)" in out
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("iteration ")]
    assert len(lines) == est.n_iter_ >= 1
    assert "objective" in lines[0] and "gap" in lines[0] and "points changed cluster" in lines[0]
    GMMKMeans(3, random_state=0, max_iter=5).fit(X)
    assert capsys.readouterr().out == ""                    # nothing by default


@pytest.mark.parametrize("kw", [dict(eta=1.0), dict(eta=0.02, selection="random")])
def test_empty_clusters_left_at_the_end_are_reported(kw):
    X, _ = blobs(600, 3, seed=1)
    init = np.vstack([X[:2], [[1e3, 1e3]]])            # one center far from every point
    with pytest.warns(ConvergenceWarning, match="1 of the 3 clusters are empty"):
        est = GMMKMeans(3, init=init, random_state=0, **kw).fit(X)
    assert np.bincount(est.labels_, minlength=3).min() == 0
    # the default relocates it: no empty cluster, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = GMMKMeans(3, init=init, random_state=0).fit(X)
    assert np.bincount(est.labels_, minlength=3).min() > 0


@pytest.mark.parametrize("sampler", ["uniform", "local"])
def test_a_fit_with_a_very_long_walk_stops_on_ctrl_c_and_stays_unfitted(interrupted, sampler):
    seconds = interrupted(
        "import numpy as np\n"
        "from gmmfast import GMMKMeans\n"
        "X = np.random.default_rng(0).normal(size=(20000, 3))\n"
        f"est = GMMKMeans(8, eta=0.02, selection='random', sampler='{sampler}', "
        "walk_steps=10**10, random_state=0)\n",
        "est.fit(X)", delay=1.0)
    assert seconds < 2.0


def test_overflowing_data_is_a_clear_error():
    X4 = np.array([[0.0], [1.0], [10.0], [11.0]])
    with pytest.raises(ValueError, match=r"X has values up to 1.1e\+21.*scale X or pass float64"):
        GMMKMeans(2, random_state=0).fit((X4 * 1e20).astype(np.float32))
    with pytest.raises(ValueError, match=r"X has values up to 1.1e\+155"):
        GMMKMeans(2, random_state=0).fit(X4 * 1e154)
    # just below the limit it fits, with exact labels
    est = GMMKMeans(2, random_state=0).fit((X4 * 1e16).astype(np.float32))
    assert sorted(np.bincount(est.labels_)) == [2, 2]


# -- validation happens once per fit ----------------------------------------------------------

def _count_checks(monkeypatch, shape):
    """Count the full checks of the values of arrays of ``shape`` (``extent``: the pass that
    finds NaN, infinity and the largest |value|)."""
    import gmmfast._validation as V
    seen = []
    real = V.extent

    def counting(arr, name="X"):
        if arr.shape == shape or arr.size == int(np.prod(shape)):
            seen.append(name)
        return real(arr, name)
    monkeypatch.setattr(V, "extent", counting)
    return seen


@pytest.mark.parametrize("make", [
    lambda: GMMKMeans(5, random_state=0),
    lambda: GMMKMeans(5, selection="random", walk_steps=100, random_state=0),
    lambda: __import__("gmmfast").KMeans(5, random_state=0),
    lambda: __import__("gmmfast").KMeans(5, algorithm="gmm", random_state=0),
])
def test_x_is_validated_once_per_fit(monkeypatch, make):
    X = np.random.default_rng(0).normal(size=(300, 3))
    seen = _count_checks(monkeypatch, X.shape)
    make().fit(X, sample_weight=np.ones(300))
    assert seen == ["X"]


def test_initial_centers_are_the_fits_start_and_inertia_its_objective(monkeypatch):
    X = np.random.default_rng(2).normal(size=(500, 3))
    from gmmfast.cluster import inertia, _restarts
    for init in ("k-means++", "k-means||", "forgy", "random-partition"):
        w0 = initial_centers(X, 6, init, random_state=4)
        est = GMMKMeans(6, init=init, random_state=4, n_init=1, restarts=0).fit(X)
        assert est.history_.initial_objective == inertia(X, w0)
    # one seeding: never the default fit's restarts (Table 1 compares methods from it)
    default = GMMKMeans(6, random_state=4).fit(X)
    assert default.restarts_.runs > 1
    assert default.history_.initial_objective < inertia(X, initial_centers(X, 6, random_state=4))

    def refuse(*args, **kwargs):
        raise AssertionError("the seeding restarts ran")
    monkeypatch.setattr(_restarts, "lloyd_restarts", refuse)
    initial_centers(X, 6, "k-means++", random_state=4)
    with pytest.raises(AssertionError, match="restarts ran"):
        GMMKMeans(6, random_state=4).fit(X)
    monkeypatch.undo()
    assert inertia(X, est.cluster_centers_) == est.inertia_ == -est.score(X)
    with pytest.raises(ValueError, match="init must be one of"):
        initial_centers(X, 6, "kmeans++")
    with pytest.raises(ValueError, match=r"init array must have shape .* \(6, 3\)"):
        initial_centers(X, 6, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="init_size must be an integer >= 6"):
        initial_centers(X, 6, init_size=3)
    with pytest.raises(ValueError, match="centers must have 3 columns"):
        inertia(X, np.zeros((2, 2)))


# -- coarse to fine ---------------------------------------------------------------------------

def test_coarse_to_fine_ends_at_a_fixed_point_of_lloyd_on_every_row():
    from gmmfast.cluster import inertia
    from gmmfast.metrics import centroids_from_labels
    X = blobs(20_000, 12, seed=3)[0]
    est = GMMKMeans(12, sample_size=1500, random_state=0).fit(X)
    assert [lv.rows < 20_000 for lv in est.levels_] == [True, False]
    assert est.levels_[-1].rows == 20_000
    for lv in est.levels_:
        assert lv.history.invariant_violations() == []
    for e in est.escapes_:      # the coarse level's escape phases
        assert e.history.invariant_violations() == []
    assert est.levels_[0].n_iter == (est.levels_[0].history.n_iter
                                     + sum(e.history.n_iter for e in est.escapes_))
    assert est.levels_[1].n_iter == est.levels_[1].history.n_iter
    assert est.n_iter_ == est.levels_[0].n_iter + est.levels_[1].n_iter
    # every row's label is its nearest center, every center the mean of its rows: a fixed
    # point of Lloyd's map; inertia_ is F of every row there
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    np.testing.assert_allclose(est.cluster_centers_, centroids_from_labels(X, est.labels_),
                               rtol=1e-12, atol=1e-12)
    assert est.inertia_ == pytest.approx(inertia(X, est.cluster_centers_), rel=1e-12)
    # the fine level starts at the coarse centers (F of every row there) and never ends above
    assert est.levels_[1].history.initial_objective == inertia(X, est.levels_[0].centers)
    assert est.inertia_ <= est.levels_[1].history.initial_objective


def _overlapping():
    """Overlapping blobs on which the default fit's G-MM stops 2.5e-4 above a fixed point of
    Lloyd's map (its gap tolerance): its centers are not the means of their nearest rows."""
    from sklearn.datasets import make_blobs
    return make_blobs(2000, centers=10, cluster_std=2.5, random_state=3)[0]


def _unpolished(monkeypatch):
    """Fits as before the one-level polish: G-MM's level is the end of the fit."""
    from gmmfast.cluster import _fit
    monkeypatch.setattr(_fit.GMMParams, "polishes", property(lambda self: False))


@pytest.mark.parametrize("data", ["blobs", "overlapping"])
def test_the_default_fit_on_every_row_ends_at_a_fixed_point_of_lloyd(monkeypatch, data):
    """Small data (one level): the default selection's G-MM and escapes, then Lloyd's passes
    on the same rows to a fixed point; never above the unpolished fit, which is its first
    level."""
    from gmmfast.cluster import inertia
    from gmmfast.metrics import centroids_from_labels
    X = blobs(3000, 8, seed=5)[0] if data == "blobs" else _overlapping()
    n = X.shape[0]
    # restarts=0: G-MM from one k-means++ seed, which it can leave short of a fixed point
    # (from the seeding restarts it starts at one, and the polish has less to do); patience
    # 15, fewer than the 2k merge-split pairs: no re-splits, whose last phase ends nearer one
    kw = dict(restarts=0, patience=15, random_state=0)
    est = GMMKMeans(10 if data == "overlapping" else 8, **kw).fit(X)
    g, p = est.levels_
    assert g.rows == p.rows == n
    # a fixed point: one more assignment from cluster_centers_ changes no label, every center
    # is the mean of its rows; inertia_ is the exact F of every row there
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    np.testing.assert_allclose(est.cluster_centers_, centroids_from_labels(X, est.labels_),
                               rtol=1e-12, atol=1e-12)
    assert est.inertia_ == pytest.approx(inertia(X, est.cluster_centers_), rel=1e-12)
    assert est.inertia_ == pytest.approx(sse(X, est.cluster_centers_, est.labels_), rel=1e-12)
    # the record: G-MM's level (first run and escapes), then the polish from its centers
    assert g.n_iter == est.history_.n_iter + sum(e.history.n_iter for e in est.escapes_)
    assert p.n_iter == p.history.n_iter >= 1 and est.n_iter_ == g.n_iter + p.n_iter
    assert g.history is est.history_
    for lv in est.levels_:
        assert lv.history.invariant_violations() == []
    assert p.history.initial_objective == pytest.approx(g.objective, rel=1e-12)
    assert est.inertia_ == p.objective <= g.objective
    # the unpolished fit (same seed) is exactly the first level
    _unpolished(monkeypatch)
    plain = GMMKMeans(est.n_clusters, **kw).fit(X)
    assert [lv.rows for lv in plain.levels_] == [n]
    np.testing.assert_array_equal(plain.cluster_centers_, g.centers)
    assert plain.inertia_ == g.objective and plain.n_iter_ == g.n_iter
    assert est.inertia_ <= plain.inertia_
    if data == "overlapping":   # G-MM had stopped short of a fixed point; the polish moved on
        assert est.inertia_ < plain.inertia_ * (1 - 1e-5) and p.n_iter >= 2
        assert not np.allclose(plain.cluster_centers_,
                               centroids_from_labels(X, plain.labels_), rtol=1e-9, atol=1e-9)


def test_the_one_level_polish_is_the_same_for_any_thread_count():
    X = _overlapping()
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            fits.append(GMMKMeans(10, random_state=1).fit(X))
    a, b = fits
    assert len(a.levels_) == 2
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_
    assert [lv.n_iter for lv in a.levels_] == [lv.n_iter for lv in b.levels_]
    assert [lv.objective for lv in a.levels_] == [lv.objective for lv in b.levels_]


@pytest.mark.parametrize("make", [
    lambda: GMMKMeans(10, eta=1.0, random_state=0),
    lambda: GMMKMeans(10, selection="mm", random_state=0),
    lambda: GMMKMeans(10, eta=0.02, selection="random", walk_steps=2000, random_state=0),
    lambda: GMMKMeans(10, selection="balanced", n_candidates=2, walk_steps=500,
                      random_state=0),
    lambda: __import__("gmmfast").KMeans(10, random_state=0),
    lambda: __import__("gmmfast").KMeans(10, algorithm="gmm", random_state=0),
])
def test_lloyd_the_random_bounds_and_kmeans_are_not_polished(monkeypatch, make):
    """Lloyd (eta = 1, "mm"), the paper's random bounds, the biased selections and
    gmmfast.KMeans keep their results: they never reach the polish, and their fits are those
    of the driver without it."""
    from gmmfast.cluster import _fit
    X = _overlapping()
    ref = make().fit(X)

    def refused(*args, **kwargs):
        raise AssertionError("polished")
    monkeypatch.setattr(_fit, "polish", refused)
    est = make().fit(X)
    np.testing.assert_array_equal(est.cluster_centers_, ref.cluster_centers_)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert est.inertia_ == ref.inertia_ and est.n_iter_ == ref.n_iter_
    if isinstance(est, GMMKMeans):
        assert [lv.rows for lv in est.levels_] == [X.shape[0]]
        assert est.n_iter_ == est.levels_[0].n_iter
        assert est.inertia_ == est.levels_[0].objective


def test_sample_size_auto_is_every_row_for_lloyd_and_small_data():
    X = blobs(3000, 5, seed=1)[0]
    # the default selection polishes on the same rows (a second level), Lloyd does not
    assert [lv.rows for lv in GMMKMeans(5, random_state=0).fit(X).levels_] == [3000, 3000]
    assert [lv.rows for lv in GMMKMeans(5, sample_size=None, random_state=0).fit(X).levels_] \
        == [3000, 3000]
    assert [lv.rows for lv in GMMKMeans(5, eta=1.0, sample_size="auto", random_state=0)
            .fit(X).levels_] == [3000]
    # an explicit sample size applies to every selection
    lv = GMMKMeans(5, eta=1.0, sample_size=500, random_state=0).fit(X).levels_
    assert len(lv) == 2 and lv[0].rows < 3000 and lv[1].rows == 3000


@pytest.mark.parametrize("init_size, seeded", [("auto", "sample"), (300, 300),
                                                 (2500, 2500), (None, 5000)])
def test_init_size_beyond_the_coarse_sample_seeds_on_that_many_rows(monkeypatch, init_size,
                                                                     seeded):
    """Coarse to fine, init_size larger than the coarse sample (or None) seeds k-means++ on
    that many of X's rows, not on the sample (which held it to the sample's size before);
    "auto" seeds on the sample, a smaller size on part of it."""
    import gmmfast.cluster._rows as rows_module
    calls = []
    real = rows_module.seed_centers

    def spy(X, sw, k, init, rng, n_threads, size):
        calls.append((X.shape[0], min(size, X.shape[0])))
        return real(X, sw, k, init, rng, n_threads, size)

    monkeypatch.setattr(rows_module, "seed_centers", spy)
    X = blobs(5000, 5, seed=2)[0]
    est = GMMKMeans(5, sample_size=600, init_size=init_size, random_state=0).fit(X)
    coarse = est.levels_[0].rows
    assert len(calls) == 1 and 400 < coarse < 800
    given, used = calls[0]
    if seeded == "sample":
        assert given == used == coarse
    elif seeded == 300:
        assert given == coarse and used == 300
    else:       # a Bernoulli sample of about that many rows, seeded on exactly that many
        assert used == seeded and abs(given - seeded) <= 0.1 * seeded
    assert est.levels_[-1].rows == 5000


def test_coarse_to_fine_is_the_same_for_any_thread_count():
    X = blobs(20_000, 12, seed=4)[0]
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            fits.append(GMMKMeans(12, sample_size=1500, random_state=7).fit(X))
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    assert fits[0].inertia_ == fits[1].inertia_


@pytest.mark.parametrize("value, match", [(3, "sample_size must be an integer >= 5"),
                                          ("all", "sample_size must be an integer >= 1, "
                                                  "'auto' or None")])
def test_bad_sample_size(value, match):
    with pytest.raises(ValueError, match=match):
        GMMKMeans(5, sample_size=value).fit(blobs(300, 5)[0])


def test_seeding_restarts_start_gmm_from_their_best_run():
    """The default search on a small set: many k-means runs (greedy k-means++, Lloyd to a
    fixed point) in one kernel call, G-MM from the lowest; the record says which."""
    X = blobs(600, 6, seed=3)[0]
    est = GMMKMeans(6, random_state=0).fit(X)
    r = est.restarts_
    assert r is not None and 2 <= r.runs <= 1000
    assert r.objectives.shape == r.n_iter.shape == (r.runs,)
    assert (r.n_iter >= 1).all()
    assert r.best == int(np.argmin(r.objectives))          # lowest index among equals
    # G-MM's first phase starts where the best run ended (a fixed point of Lloyd's map)
    assert est.history_.initial_objective == pytest.approx(r.objectives[r.best], rel=1e-9)
    assert est.inertia_ <= r.objectives[r.best] * (1 + 1e-12)
    # the same seed, the same fit; restarts=0 is the single k-means++ seeding
    again = GMMKMeans(6, random_state=0).fit(X)
    np.testing.assert_array_equal(again.cluster_centers_, est.cluster_centers_)
    assert GMMKMeans(6, restarts=0, random_state=0).fit(X).restarts_ is None
    assert GMMKMeans(6, restarts=7, random_state=0).fit(X).restarts_.runs == 7


def test_seeding_restarts_only_where_they_apply():
    X = blobs(600, 6, seed=3)[0]
    # other initialisations, selections and eta = 1 keep their documented behaviour
    assert GMMKMeans(6, init="random-partition", random_state=0).fit(X).restarts_ is None
    assert GMMKMeans(6, eta=1.0, random_state=0).fit(X).restarts_ is None
    assert GMMKMeans(6, selection="random", random_state=0).fit(X).restarts_ is None
    with pytest.raises(ValueError, match="restarts=3 needs init='k-means\\+\\+'"):
        GMMKMeans(6, init="forgy", restarts=3).fit(X)
    with pytest.raises(ValueError, match="restarts"):
        GMMKMeans(6, restarts=-1).fit(X)
    # "auto" makes none where two runs would cost more than its work budget
    big = np.random.default_rng(0).normal(size=(20000, 64))
    assert GMMKMeans(100, random_state=0, max_iter=3, patience=0).fit(big).restarts_ is None
    # nor on the coarse level of a coarse-to-fine fit (beyond 20,000 rows), where a count
    # still runs: cheap as they would be, they are not part of that level's budget
    many = blobs(30000, 4, seed=2)[0]
    fit = GMMKMeans(4, random_state=0).fit(many)
    assert fit.levels_[0].rows < 30000 and fit.restarts_ is None
    assert GMMKMeans(4, random_state=0).fit(many[:20000]).restarts_.runs > 1
    assert GMMKMeans(4, random_state=0, restarts=3).fit(many).restarts_.runs == 3


@pytest.mark.parametrize("d", [2, 20])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_restarts_kernel_is_independent_of_threads_and_validates(dtype, d):
    from gmmfast._kernels._restarts import lloyd_restarts
    X = blobs(2000, 5, d=d, seed=1, spread=3.0)[0].astype(dtype)
    sw = np.ones(X.shape[0], dtype=dtype)
    out = []
    for threads in (1, 2, 3):
        C = np.empty((5, d), dtype=dtype)
        obj, it = np.empty(40), np.empty(40, dtype=np.intc)
        best = lloyd_restarts(X, sw, 5, 11, 0, 40, 3, 300, C, obj, it, threads)
        out.append((best, C, obj, it))
    for best, C, obj, it in out[1:]:
        assert best == out[0][0]
        np.testing.assert_array_equal(C, out[0][1])
        np.testing.assert_array_equal(obj, out[0][2])
        np.testing.assert_array_equal(it, out[0][3])
    best, C, obj, it = out[0]
    assert obj[best] == obj.min()
    # each run ends at a fixed point: its centers are the means of their nearest rows
    from gmmfast.metrics import centroids_from_labels
    lab = ((X[:, None, :].astype(np.float64) - C[None].astype(np.float64)) ** 2).sum(-1).argmin(1)
    np.testing.assert_allclose(C, centroids_from_labels(X.astype(np.float64), lab),
                               rtol=1e-5 if dtype == np.float32 else 1e-10)
    # a later batch continues the same streams: runs 10..39 alone give the same results
    obj2, it2 = np.empty(30), np.empty(30, dtype=np.intc)
    lloyd_restarts(X, sw, 5, 11, 10, 30, 3, 300, np.empty((5, d), dtype=dtype), obj2, it2, 2)
    np.testing.assert_array_equal(obj2, obj[10:])
    with pytest.raises(ValueError, match="k must be"):
        lloyd_restarts(X, sw, 0, 11, 0, 1, 3, 300, C, obj[:1], it[:1], 1)
    with pytest.raises(ValueError, match="wrong shape"):
        lloyd_restarts(X, sw, 5, 11, 0, 2, 3, 300, C, obj[:1], it[:1], 1)
    with pytest.raises(ValueError, match="sample_weight"):
        lloyd_restarts(X, sw[:-1], 5, 11, 0, 1, 3, 300, C, obj[:1], it[:1], 1)
    with pytest.raises(ValueError, match="level must be"):
        lloyd_restarts(X, sw, 5, 11, 0, 1, 3, 300, C, obj[:1], it[:1], 1, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_restarts_kernel_every_simd_level_and_many_trials(dtype):
    """Every SIMD variant of the searches and k-means++ steps (gmm_simd.h) ends each run at
    a fixed point with the objective of its centers. 40 trials are more candidates than one
    k-means++ call takes (4 vectors of 2, 4 or 8 lanes), so each variant scores them in
    different groups: on these well-separated blobs every variant makes the same runs (a
    candidate given another's gain would change them)."""
    from gmmfast._kernels._kmeans import simd_level
    from gmmfast._kernels._restarts import lloyd_restarts
    from gmmfast.metrics import centroids_from_labels
    X, _ = blobs(1500, 7, d=9, seed=3, spread=2.0)
    X = X.astype(dtype)
    sw = np.ones(X.shape[0], dtype=dtype)
    X64 = X.astype(np.float64)
    runs = {}
    for level in range(simd_level() + 1):
        for trials in (1, 40):
            C = np.empty((7, 9), dtype=dtype)
            obj, it = np.empty(6), np.empty(6, dtype=np.intc)
            best = lloyd_restarts(X, sw, 7, 5, 0, 6, trials, 300, C, obj, it, 1, level)
            lab = ((X64[:, None, :] - C[None].astype(np.float64)) ** 2).sum(-1).argmin(1)
            np.testing.assert_allclose(C, centroids_from_labels(X64, lab),
                                       rtol=1e-5 if dtype == np.float32 else 1e-10)
            sse = ((X64 - C.astype(np.float64)[lab]) ** 2).sum()
            assert obj[best] == pytest.approx(sse, rel=1e-5 if dtype == np.float32 else 1e-10)
            runs[level, trials] = (obj, it)
    for (level, trials), (obj, it) in runs.items():
        np.testing.assert_array_equal(obj, runs[0, trials][0])
        np.testing.assert_array_equal(it, runs[0, trials][1])


def test_auto_levels_add_a_middle_level_only_where_it_fits():
    """sample_size="auto": the coarse sample (64 rows per center, at least 20,000), then the
    middle levels of MIDDLE_ROWS_PER_CENTER that stay within 1 / LEVEL_STEP of their
    neighbours, then every row."""
    from gmmfast.cluster._fit import GMMParams
    assert GMMParams(k=1000, sample_size="auto").levels(10**7, 16) == [64_000, 256_000,
                                                                       1_024_000, 10**7]
    assert GMMParams(k=1000, sample_size="auto").levels(10**6, 128) == [64_000, 10**6]
    assert GMMParams(k=100, sample_size="auto").levels(10**7, 16) == [20_000, 102_400, 10**7]
    assert GMMParams(k=100, sample_size="auto").levels(50_000, 16) == [20_000, 50_000]


def test_auto_levels_take_every_row_where_the_sample_is_large_and_thin():
    """sample_size="auto" fits every row where the sample would hold at least half of them
    and fewer than 2 d rows per center; a sample given as a number is always drawn, and a
    small d or a small share keeps the sample."""
    from gmmfast.cluster._fit import GMMParams
    auto = GMMParams(k=1000, sample_size="auto")
    assert auto.levels(100_000, 64) == [100_000]          # 64 per center < 2 x 64
    assert auto.levels(100_000, 128) == [100_000]
    assert auto.levels(100_000, 32) == [64_000, 100_000]  # 64 per center = 2 x 32
    assert auto.levels(128_001, 128) == [64_000, 128_001]  # less than half the rows
    assert GMMParams(k=100, sample_size="auto").levels(100_000, 128) == [20_000, 100_000]
    assert GMMParams(k=1000, sample_size=64_000).levels(100_000, 128) == [64_000, 100_000]
