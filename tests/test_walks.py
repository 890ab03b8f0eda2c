"""The faster bound samplers (gmmfast/_kernels/_walks.pyx, gmmfast/cluster/_samplers.py).

Every sampler must return a valid bound (cost at the previous centers within
the threshold), be the same for any thread count, and the walks must target
the uniform distribution on valid assignments.
"""
import itertools

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.cluster import _merge, _samplers
from gmmfast.cluster import KMeansBounds
from gmmfast.cluster._pass import assign, labeling_cost
from gmmfast.core import generalized_mm
from gmmfast.metrics import centroid_index


def blobs(n, k, seed=0, spread=12.0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, spread * np.sqrt(k), size=(k, 2))
    y = rng.integers(0, k, size=n)
    return means[y] + rng.normal(size=(n, 2)), y, means


def exact(X, sw, C):
    return lambda z, pc=None: labeling_cost(X, sw, C, z, 1, pc)


# -- the center graph -----------------------------------------------------------------

def test_center_graph_is_symmetric_sorted_and_has_the_neighbours():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(40, 3))
    indptr, indices = _samplers.center_graph(C, 5)
    adj = np.zeros((40, 40), dtype=bool)
    for a in range(40):
        row = indices[indptr[a]:indptr[a + 1]]
        assert np.all(np.diff(row) > 0) and a not in row
        adj[a, row] = True
    assert (adj == adj.T).all()
    d = ((C[:, None] - C[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    knn = np.argsort(d, axis=1)[:, :5]
    assert all(adj[a, knn[a]].all() for a in range(40))
    assert (adj.sum(1) >= 5).all()
    ip, ix = _samplers.center_graph(C[:3], 10)            # fewer centers than neighbours
    assert np.array_equal(np.diff(ip), [2, 2, 2])


def test_center_neighbors_are_the_nearest_sorted_by_distance_then_index():
    """Across row blocks (k > 256) and with tied distances (integer grid centers), each row
    is the L nearest other centers in (distance, index) order."""
    rng = np.random.default_rng(3)
    for k, d, L in ((600, 4, 7), (300, 2, 12), (9, 3, 8), (5, 2, 1)):
        C = rng.integers(-3, 4, size=(k, d)).astype(float)      # many ties
        nbr = _samplers.center_neighbors(C, L)
        dist = ((C[:, None] - C[None]) ** 2).sum(-1)
        for a in range(k):
            order = sorted((dist[a, j], j) for j in range(k) if j != a)[:L]
            assert nbr[a].tolist() == [j for _, j in order]
    assert _samplers.center_neighbors(C[:1], 4).shape == (1, 0)
    with pytest.raises(ValueError, match="nearest_others"):
        from gmmfast._kernels import _walks
        _walks.nearest_others(np.zeros((3, 5)), np.zeros(4), 0, np.empty((3, 2), dtype=np.int64),
                              np.empty((3, 2)))


# -- the center-graph Metropolis-Hastings walk ------------------------------------------

def test_local_walk_targets_the_uniform_distribution_on_valid_assignments():
    """Tiny problem: enumerate every assignment; the walk's end points must be uniform on the valid ones."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [9.0, 0.0]])
    C = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [10.0, 0.0]])  # 1-NN graph: uneven degrees
    sw = np.ones(4)
    graph = _samplers.center_graph(C, 1)
    assert len(set(np.diff(graph[0]))) > 1                # MH correction matters
    start = assign(X, sw, C, 1).labels
    c = ((X[:, None] - C[None]) ** 2).sum(-1)
    base = c[np.arange(4), start].sum()
    budget = base + 30.0
    valid = [z for z in itertools.product(range(4), repeat=4)
             if c[np.arange(4), list(z)].sum() <= budget]
    index = {z: i for i, z in enumerate(valid)}
    counts = np.zeros(len(valid))
    draws = 6000
    for s in range(draws):
        z = start.copy()
        costs = np.empty(4)
        _samplers.local_walk(X, sw, C, z, costs, graph, 0.2, 1 << 15, budget - base, 100, s, 1)
        counts[index[tuple(z)]] += 1
    expected = draws / len(valid)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    # chi-square with len(valid) - 1 degrees of freedom: mean = dof, sd = sqrt(2 dof)
    dof = len(valid) - 1
    assert len(valid) > 20 and chi2 < dof + 5 * np.sqrt(2 * dof), (len(valid), chi2)


def test_local_walk_is_valid_and_thread_independent():
    X, _, _ = blobs(9000, 12, seed=1)
    sw = np.ones(len(X))
    C = X[:12].copy()
    a = assign(X, sw, C, 1)
    graph = _samplers.center_graph(C, 3)
    outs = []
    for threads in (1, 2):
        z = a.labels.copy()
        costs = np.empty(len(X))
        # enough proposals that the kernel really uses two threads (it caps them by work)
        acc = _samplers.local_walk(X, sw, C, z, costs, graph, 0.05, 1000,
                                   0.05 * a.objective, 2_000_000, 5, threads)
        outs.append((z, acc))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1] > 0
    assert labeling_cost(X, sw, C, outs[0][0], 1) <= 1.05 * a.objective


# -- the Gibbs (maximum-entropy) sampler ------------------------------------------------

def test_solve_beta_meets_the_expected_budget():
    rng = np.random.default_rng(0)
    delta = np.abs(rng.normal(size=(3000, 6))) * 5
    delta[:, 0] = 0
    delta[::7, 5] = np.inf                                # ragged rows
    for slack in (10.0, 300.0, 3000.0):
        beta, _ = _samplers.solve_beta(delta, slack, 1)
        mean, _ = _samplers._moments(delta, beta, 1)
        assert mean == pytest.approx(slack, rel=2e-3)
    h0, _ = _samplers._moments(delta, 0.0, 1)
    assert _samplers.solve_beta(delta, h0 * 2, 1)[0] == 0.0    # even uniform spends less


@pytest.mark.parametrize("frac", [0.001, 0.05, 0.5])
def test_gibbs_draw_is_valid_spends_the_slack_and_is_thread_independent(frac):
    X, _, _ = blobs(6000, 15, seed=2)
    sw = np.ones(len(X))
    C = X[:15].copy()
    a = assign(X, sw, C, 1)
    budget = a.objective * (1 + frac)
    graph = _samplers.center_graph(C, 6)
    outs = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            outs.append(_samplers.gibbs_sample(X, sw, C, a.labels, a.objective, budget, graph,
                                               11, threads, exact(X, sw, C)))
    (z1, c1, v1, m1, b1), (z2, c2, v2, m2, b2) = outs
    np.testing.assert_array_equal(z1, z2)
    assert v1 == v2 and m1 == m2 and b1 == b2
    assert v1 <= budget and v1 == labeling_cost(X, sw, C, z1, 1)
    np.testing.assert_allclose(c1.sum(), v1, rtol=1e-12)
    assert m1 > 0
    assert v1 - a.objective > 0.9 * (budget - a.objective)   # the draw uses the slack


def test_gibbs_with_no_slack_returns_the_touching_bound():
    X, _, _ = blobs(500, 5)
    sw = np.ones(len(X))
    C = X[:5].copy()
    a = assign(X, sw, C, 1)
    z, _, v, moved, _ = _samplers.gibbs_sample(X, sw, C, a.labels, a.objective, a.objective,
                                               _samplers.center_graph(C, 3), 0, 1,
                                               exact(X, sw, C))
    np.testing.assert_array_equal(z, a.labels)
    assert moved == 0 and v == a.objective


# -- merge-split --------------------------------------------------------------------------

def three_blobs():
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [20.0, 0.0], [40.0, 0.0]])
    y = np.repeat(np.arange(3), 200)
    return means[y] + rng.normal(size=(600, 2)), y, means


def sums_at(X, C, seed=None, sw=None):
    sw = np.ones(len(X)) if sw is None else sw
    return assign(X, sw, C, 1, with_sums=True, sample_seed=seed).sums


def test_merge_select_merges_the_cheapest_cluster_within_the_budget():
    X, _, _ = three_blobs()
    C = np.array([[-0.5, 0.0], [0.5, 0.0], [30.0, 0.0]])   # two centers share blob 0
    s = sums_at(X, C)
    bound = _merge.select(s, s.objective * 1.01, 2)
    assert list(bound.merged) in ([0], [1])
    assert _merge.value(bound, C) <= s.objective * 1.01
    assert set(np.unique(bound.target)) in ({0, 2}, {1, 2})
    # no slack: nothing can be merged
    none = _merge.select(s, s.objective, 2)
    assert none.merged.shape[0] == 0 and _merge.value(none, C) == s.objective


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_merge_bound_value_and_minimiser_equal_those_of_its_labels(dtype):
    """The sums formulas are exact: value = the labels' cost at any centers, minimiser = the
    labels' means."""
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(3000, 3)) + 50.0).astype(dtype)   # far from 0: no cancellation
    sw = rng.random(3000).astype(dtype) + 0.5
    C = X[rng.choice(3000, 12, replace=False)].copy()
    a = assign(X, sw, C, 2, with_sums=True)
    target = np.arange(12)
    target[[3, 7]] = [5, 0]
    bound = _merge.MergeBound(a.sums, target)
    z = target[a.labels]
    for U in (C, C + rng.normal(size=C.shape).astype(dtype)):
        exact_value = float((sw * ((X.astype(float) - U.astype(float)[z]) ** 2).sum(1)).sum())
        assert _merge.value(bound, U) == pytest.approx(exact_value, rel=1e-9)
    new = _merge.minimize(bound)
    assert new.dtype == dtype
    for j in range(12):
        if j in (3, 7):
            np.testing.assert_array_equal(new[j], C[j])        # empty: keeps its center
        else:
            m = (sw[z == j, None] * X[z == j].astype(float)).sum(0) / sw[z == j].sum()
            np.testing.assert_allclose(new[j], m, rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_relocation_moves_merged_centers_into_the_costliest_cluster():
    X, _, _ = three_blobs()
    C = np.array([[-0.5, 0.0], [0.5, 0.0], [30.0, 0.0]])   # cluster 2 covers two blobs
    s = sums_at(X, C, seed=7)
    assert (s.pick >= 0).all()
    bound = _merge.MergeBound(s, np.array([1, 1, 2]))     # merge 0 into 1
    new = _merge.minimize(bound, X.__getitem__)
    assert new[0, 0] > 10                                  # now inside the merged pair
    assert np.array_equal(new[0], X[s.pick[2]])
    # the drawn point depends on the seed and the row only, not on slots or threads
    again = assign(X, np.ones(len(X)), C, 2, with_sums=True, sample_seed=7).sums
    np.testing.assert_array_equal(again.pick, s.pick)


def test_merge_split_gmm_fixes_what_lloyd_cannot():
    X, _, means = three_blobs()
    # the third center starts among blob 0's right tail; when Lloyd's first step moves it
    # to 30, those points change cluster: that gap is G-MM's slack
    w0 = np.array([[-0.5, 0.0], [0.5, 0.0], [2.0, 0.0]])
    lloyd = GMMKMeans(3, eta=1.0, init=w0).fit(X)
    assert centroid_index(lloyd.cluster_centers_, means) == 1
    gmm = GMMKMeans(3, eta=0.05, init=w0, selection="merge-split", random_state=0).fit(X)
    assert centroid_index(gmm.cluster_centers_, means) == 0
    assert gmm.inertia_ < 0.2 * lloyd.inertia_
    assert gmm.history_.invariant_violations() == []
    assert gmm.history_.accepted.sum() >= 1                # clusters dissolved


def test_merge_split_with_eta_one_is_lloyd():
    X, _, _ = blobs(3000, 10, seed=4)
    w0 = X[:10].copy()
    a = GMMKMeans(10, eta=1.0, init=w0, selection="merge-split", tol=0).fit(X)
    b = GMMKMeans(10, eta=1.0, init=w0, selection="mm", tol=0).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_


# -- through the estimator ---------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(selection="random", sampler="local", walk_steps=40_000),
                                dict(selection="random", sampler="gibbs"),
                                dict(selection="merge-split")])
def test_estimator_samplers_same_for_one_and_two_threads(kw):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70_000, 2))                       # > 2 walk blocks
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            fits.append(GMMKMeans(20, eta=0.05, max_iter=5, tol=0, random_state=3,
                                  init="forgy", **kw).fit(X))
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].history_.accepted, fits[1].history_.accepted)
    assert fits[0].inertia_ == fits[1].inertia_


@pytest.mark.parametrize("kw", [dict(selection="random", sampler="uniform"),
                                dict(selection="random", sampler="local"),
                                dict(selection="random", sampler="gibbs"),
                                dict(selection="merge-split")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_option_keeps_the_bounds_valid(kw, dtype):
    X, _, _ = blobs(4000, 25, seed=5)
    for init in ("random-partition", "forgy"):
        m = GMMKMeans(25, eta=0.02, init=init, random_state=1, **kw).fit(X.astype(dtype))
        h = m.history_
        assert h.invariant_violations() == []
        assert (h.bound_at_previous <= h.threshold).all()
        assert m.cluster_centers_.dtype == dtype


def test_sampler_parameters_are_validated():
    X, _, _ = blobs(100, 3)
    with pytest.raises(ValueError, match="sampler"):
        GMMKMeans(3, sampler="metropolis").fit(X)
    with pytest.raises(ValueError, match="n_neighbors"):
        GMMKMeans(3, n_neighbors=0).fit(X)
    with pytest.raises(ValueError, match="selection"):
        GMMKMeans(3, selection="split").fit(X)


def test_bounds_family_directly_with_each_sampler():
    X, _, _ = blobs(2000, 8, seed=6)
    for sampler in ("local", "gibbs"):
        fam = KMeansBounds(X, np.ones(len(X)), walk_steps=5000, n_threads=1, sampler=sampler)
        res = generalized_mm(fam, X[:8].copy(), eta=0.05, tol=1e-6,
                             random_state=np.random.default_rng(0))
        assert res.history.invariant_violations() == []
        assert res.history.accepted.sum() > 0


def test_escapes_keep_every_invariant_and_never_raise_the_objective():
    from gmmfast.datasets import make_gmm200
    X, _ = make_gmm200(11)
    est = GMMKMeans(200, random_state=3, patience=15).fit(X)
    assert est.escapes_ and any(e.accepted for e in est.escapes_)
    best = est.history_.objective[-1]
    for e in est.escapes_:
        assert e.history.invariant_violations() == []
        assert e.history.initial_objective == e.start_objective
        assert e.accepted == (e.objective < best * (1 - 1e-12))
        best = min(best, e.objective) if e.accepted else best
        assert len(e.merged) == len(e.into) == len(e.rows) >= 1
    # G-MM's level ends at the best kept objective; Lloyd's polish never ends above it
    assert est.levels_[0].objective == best and est.inertia_ <= best
    assert est.levels_[0].n_iter == est.history_.n_iter + sum(e.history.n_iter
                                                               for e in est.escapes_)
    assert est.n_iter_ == est.levels_[0].n_iter + est.levels_[1].n_iter
    # the search ended after `patience` failed proposals in a row
    assert len(est.escapes_) >= 15 and not any(e.accepted for e in est.escapes_[-15:])
    plain = GMMKMeans(200, random_state=3, patience=0).fit(X)
    assert plain.escapes_ == [] and est.inertia_ < plain.inertia_


def test_escapes_respect_the_iteration_cap_and_the_work_budget():
    from gmmfast.cluster._escape import MIN_ESCAPE_WORK
    from gmmfast.datasets import make_gmm200
    X, _ = make_gmm200(0)
    est = GMMKMeans(200, random_state=0, max_iter=4).fit(X)
    assert est.history_.n_iter <= 4 and all(e.history.n_iter <= 4 for e in est.escapes_)
    # a budget of passes: with effort 0 only the floor of MIN_ESCAPE_WORK remains
    big = np.repeat(X, 40, axis=0)                     # 400,000 x 2, k = 200: 62.5 passes
    floor = MIN_ESCAPE_WORK / (big.shape[0] * 200 * 2)
    est = GMMKMeans(200, random_state=0, escape_effort=0.0, patience=10**6,
                    max_iter=30, sample_size=None).fit(big)
    assert all(e.passes >= e.history.n_iter + 1 for e in est.escapes_)
    passes = np.cumsum([e.passes for e in est.escapes_])
    assert passes[-1] > 0 and (passes[:-1] < floor).all()
    assert passes[-1] <= floor + 30 + 3


def test_resplits_lower_groups_of_clusters_once_the_merge_splits_run_out(monkeypatch):
    # 6 blobs in 20 dimensions split into 18 clusters: the 2k merge-split proposals run
    # out; clustering 3 neighbouring clusters afresh at a time lowers the objective further
    from sklearn.datasets import make_blobs
    import gmmfast.cluster._escape as escape_module
    X, _ = make_blobs(1800, centers=6, n_features=20, cluster_std=3.0, center_box=(-10, 10),
                      random_state=5)
    with threadpool_limits(limits=1, user_api="openmp"):
        est = GMMKMeans(18, random_state=0).fit(X)
    kinds = [e.kind for e in est.escapes_]
    assert "re-split" in kinds and kinds == sorted(kinds)      # merge-splits first
    best = est.history_.objective[-1]
    for e in est.escapes_:
        assert e.history.invariant_violations() == []
        assert e.accepted == (e.objective < best * (1 - 1e-12))
        best = min(best, e.objective) if e.accepted else best
        if e.kind == "re-split":
            assert len(e.merged) == 3 and list(e.merged) == list(e.into) and len(e.rows) == 0
    assert any(e.accepted for e in est.escapes_ if e.kind == "re-split")
    assert est.levels_[0].objective == best and est.inertia_ <= best
    # the same fit on two threads
    with threadpool_limits(limits=2, user_api="openmp"):
        two = GMMKMeans(18, random_state=0).fit(X)
    assert two.inertia_ == est.inertia_ and np.array_equal(two.labels_, est.labels_)
    # switched off (a group as large as k is never re-split), the fit ends higher
    monkeypatch.setattr(escape_module, "RESPLIT_GROUP", 18)
    off = GMMKMeans(18, random_state=0).fit(X)
    assert all(e.kind == "merge-split" for e in off.escapes_)
    assert est.inertia_ < off.inertia_ * (1 - 1e-4)


def test_no_resplits_above_k_40_where_patience_ends_before_the_pairs():
    # patience="auto" is max(80, k) and there are 2k merge-split pairs: above k = 40 the pairs
    # outlast it, so large-k fits (and every coarse level at k >= 100) never re-split
    X, _, _ = blobs(800, 20, seed=2)
    est = GMMKMeans(41, random_state=0, restarts=0).fit(X)        # 82 pairs, patience 80
    assert est.escapes_ and all(e.kind == "merge-split" for e in est.escapes_)
    more = GMMKMeans(41, random_state=0, restarts=0, patience=90).fit(X)   # pairs run out
    assert any(e.kind == "re-split" for e in more.escapes_)
