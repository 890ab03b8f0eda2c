"""k-means++ seeding (gmmfast.cluster.kmeans_plusplus) and the one-pass assignment kernel."""
import itertools

import numpy as np
import pytest

from gmmfast.cluster import kmeans_plusplus
from gmmfast.cluster._pass import assign


def potential(X, C):
    return float(((X[:, None, :].astype(float) - C[None].astype(float)) ** 2).sum(-1).min(1).sum())


def test_plain_kmeans_plusplus_draws_exactly_by_squared_distance():
    """With one trial per center, k-means++ draws center c with probability proportional to
    min_j ||x - c_j||^2: compare the joint law of (c1, c2, c3) with its exact value. The
    third draw goes through the rejection step (drawn before the second center's update)."""
    X = np.array([[0.0], [1.0], [3.0], [7.0], [12.0]])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    n = len(X)
    exact = {}
    for a, b, c in itertools.permutations(range(n), 3):
        pa = w[a] / w.sum()
        da = w * (X[:, 0] - X[a, 0]) ** 2
        pb = da[b] / da.sum()
        dab = w * np.minimum((X[:, 0] - X[a, 0]) ** 2, (X[:, 0] - X[b, 0]) ** 2)
        exact[(a, b, c)] = pa * pb * dab[c] / dab.sum()
    rng = np.random.default_rng(0)
    runs = 20000
    counts = dict.fromkeys(exact, 0)
    for _ in range(runs):
        C = kmeans_plusplus(X, 3, w, rng, n_trials=1, n_threads=1)
        key = tuple(int(np.flatnonzero(X[:, 0] == v)[0]) for v in C[:, 0])
        counts[key] += 1
    tv = 0.5 * sum(abs(counts[key] / runs - p) for key, p in exact.items())
    assert tv < 0.02          # sampling noise at 20000 runs is about 0.01


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_plusplus_is_thread_independent_and_keeps_the_dtype(dtype):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30_000, 7)).astype(dtype)       # > 100 chunks of 256 rows
    w = (rng.random(30_000) + 0.1).astype(dtype)
    one = kmeans_plusplus(X, 40, w, np.random.default_rng(5), n_threads=1)
    two = kmeans_plusplus(X, 40, w, np.random.default_rng(5), n_threads=2)
    assert one.dtype == dtype
    np.testing.assert_array_equal(one, two)
    # every center is a distinct row of X
    rows = {tuple(r) for r in X}
    assert all(tuple(c) in rows for c in one) and len({tuple(c) for c in one}) == 40


def test_kmeans_plusplus_potential_matches_scikit_learn():
    from sklearn.cluster import kmeans_plusplus as sk_plusplus
    rng = np.random.default_rng(2)
    M = rng.normal(scale=8, size=(60, 4))
    X = M[rng.integers(60, size=6000)] + rng.normal(size=(6000, 4))
    ours = [potential(X, kmeans_plusplus(X, 30, np.ones(6000), np.random.default_rng(s)))
            for s in range(8)]
    theirs = [potential(X, sk_plusplus(X, 30, random_state=s)[0]) for s in range(8)]
    assert abs(np.mean(ours) / np.mean(theirs) - 1) < 0.1


def test_kmeans_plusplus_never_picks_zero_weight_points_and_survives_covered_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 2))
    w = np.ones(500)
    w[::2] = 0.0
    C = kmeans_plusplus(X, 25, w, rng)
    chosen = [int(np.flatnonzero((X == c).all(1))[0]) for c in C]
    assert all(i % 2 == 1 for i in chosen)
    # 1000 copies of one point and one other point: after two centers the potential is 0
    # (the third draw's rejection step rejects everything, and falls back)
    X = np.vstack([np.zeros((1000, 2)), [[5.0, 5.0]]])
    C = kmeans_plusplus(X, 3, np.ones(1001), np.random.default_rng(0))
    assert C.shape == (3, 2) and {tuple(c) for c in C[:2]} == {(0.0, 0.0), (5.0, 5.0)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pass_gives_exact_cluster_sums_for_any_thread_count(dtype):
    rng = np.random.default_rng(4)
    # far from 0 in float64 (residual sums must not cancel); float32's nearest-center search
    # ranks ||c||^2 - 2 x.c in float32, which near ties needs data near 0 to be exact
    X = (rng.normal(size=(20_000, 5)) + (100 if dtype == np.float64 else 0)).astype(dtype)
    w = (rng.random(20_000) + 0.5).astype(dtype)
    C = X[rng.choice(20_000, 9, replace=False)].copy()
    a1 = assign(X, w, C, 1, with_sums=True, sample_seed=11)
    a2 = assign(X, w, C, 2, with_sums=True, sample_seed=11)
    ref = ((X[:, None].astype(float) - C[None].astype(float)) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(a1.labels, ref)
    np.testing.assert_array_equal(a1.labels, a2.labels)
    assert a1.changed == 20_000 and a1.objective == a2.objective
    for f in ("weight", "resid", "cost", "pick"):
        np.testing.assert_array_equal(getattr(a1.sums, f), getattr(a2.sums, f))
    s = a1.sums
    for j in range(9):
        m = ref == j
        diff = X[m].astype(float) - C[j].astype(float)
        assert s.weight[j] == pytest.approx(w[m].astype(float).sum(), rel=1e-12)
        np.testing.assert_allclose(s.resid[j], (w[m, None] * diff).sum(0), rtol=1e-9, atol=1e-9)
        assert s.cost[j] == pytest.approx((w[m] * (diff ** 2).sum(1)).sum(), rel=1e-12)
        assert ref[s.pick[j]] == j                       # the drawn point lies in its cluster
    assert s.objective == pytest.approx(s.cost.sum(), rel=1e-12)
    # a second pass from these labels at the same centers changes nothing
    again = assign(X, w, C, 2, old_labels=a1.labels)
    assert again.changed == 0


def test_points_are_drawn_in_proportion_to_their_cost():
    """The per-cluster draw (Efraimidis-Spirakis keys) follows the costs: over many seeds the
    far point of a cluster is drawn as often as its share of the cluster's cost."""
    X = np.array([[0.0], [1.0], [3.0]])
    C = np.array([[0.0]])
    hits = np.zeros(3)
    for seed in range(4000):
        hits[assign(X, np.ones(3), C, 1, with_sums=True, sample_seed=seed).sums.pick[0]] += 1
    np.testing.assert_allclose(hits / hits.sum(), [0.0, 0.1, 0.9], atol=0.02)


def _fit_family(X, w0, prune, selection, eta, threads=1):
    from gmmfast.cluster import KMeansBounds
    from gmmfast.core import generalized_mm
    fam = KMeansBounds(X, np.ones(len(X), X.dtype), walk_steps=0, n_threads=threads,
                       relocate_empty=selection == "merge-split", prune=prune, seed=3)
    searched = []
    res = generalized_mm(fam, w0, eta=eta, selection=selection, tol=0, max_iter=25,
                         random_state=np.random.default_rng(0),
                         callback=lambda t, h: searched.append(fam.last.searched))
    return res, fam.labels(res.w), searched


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("selection,eta", [("mm", 1.0), ("merge-split", 0.1)])
def test_pruned_passes_give_the_same_run(dtype, selection, eta):
    """Hamerly's bounds skip rows whose label provably stays; every iterate, label and
    recorded number must equal those of the unpruned passes, and rows must be skipped."""
    rng = np.random.default_rng(5)
    M = rng.normal(scale=6, size=(40, 6))
    X = (M[rng.integers(40, size=20_000)] + rng.normal(size=(20_000, 6))).astype(dtype)
    w0 = X[rng.choice(20_000, 25, replace=False)].copy()
    plain, plain_labels, _ = _fit_family(X, w0, False, selection, eta)
    pruned, pruned_labels, searched = _fit_family(X, w0, True, selection, eta, threads=2)
    np.testing.assert_array_equal(plain.w, pruned.w)
    np.testing.assert_array_equal(plain_labels, pruned_labels)
    for f in ("bound_at_previous", "threshold", "bound", "objective", "gap", "accepted"):
        np.testing.assert_array_equal(getattr(plain.history, f), getattr(pruned.history, f))
    assert min(searched) < 0.2 * len(X)                  # late passes search few rows


def test_predicted_kept_rows_and_the_plan_with_many_jumped_centers():
    """predict_kept counts, for each largest drift of the other centers, the rows whose bound
    keeps their label; the plan checks the jumped centers when that is the least work, and
    the pass then gives the labels of a full search."""
    from gmmfast._kernels import _kmeans as K
    from gmmfast.cluster._pass import HamerlyBounds, assign
    rng = np.random.default_rng(8)
    n, k = 5000, 64
    labels = rng.integers(k, size=n).astype(np.int32)
    upper, lower, drift = rng.random(n), 1 + rng.random(n), rng.random(k) / 2
    bases = np.sort(rng.random(6))[::-1].copy()
    kept = np.empty(6, dtype=np.int64)
    K.predict_kept(labels, upper, lower, drift, bases, kept)
    want = [(upper + drift[labels] < lower - b).sum() for b in bases]
    np.testing.assert_array_equal(kept, want)
    with pytest.raises(ValueError, match="non-increasing"):
        K.predict_kept(labels, upper, lower, drift, bases[::-1].copy(), kept)
    # 12 of 256 centers jump far (as merge-split relocations do), the others barely move
    k = 256
    M = rng.normal(scale=8, size=(k, 4))
    X = M[rng.integers(k, size=40_000)] + rng.normal(size=(40_000, 4))
    sw = np.ones(len(X))
    bounds = HamerlyBounds(X)
    first = assign(X, sw, M, 1, bounds=bounds)
    C = M + 1e-3 * rng.normal(size=M.shape)
    C[:12] = X[rng.choice(len(X), 12, replace=False)]
    prune, _, jumped, _ = bounds.plan(C, first.labels)
    assert prune and jumped.shape[0] >= 12
    pruned = assign(X, sw, C, 1, old_labels=first.labels, bounds=bounds)
    plain = assign(X, sw, C, 1)
    np.testing.assert_array_equal(pruned.labels, plain.labels)
    assert pruned.objective == plain.objective
    assert pruned.searched < 0.9 * len(X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_jump", [2, 48])
def test_the_exact_pass_checks_many_jumped_centers_at_once(dtype, n_jump):
    """When merge-split moves many centers far (48 of 512 here), the exact pass's plan takes
    them all as jumped (more than 32) and checks the kept rows against them at once, by the
    blocked search (a few, 2, one distance at a time): at every SIMD level the labels and F
    are those of a full search, and most rows are not searched."""
    from gmmfast._kernels import _kmeans as K
    from gmmfast.cluster._pass import HamerlyBounds, assign
    rng = np.random.default_rng(9)
    k = 512
    M = rng.normal(scale=8, size=(k, 5))
    X = (M[rng.integers(k, size=30_000)] + rng.normal(size=(30_000, 5))).astype(dtype)
    sw = np.ones(len(X), dtype)
    C = M + 1e-3 * rng.normal(size=M.shape)
    C[:n_jump] = X[rng.choice(len(X), n_jump, replace=False)]
    C = C.astype(dtype)
    plain = assign(X, sw, C, 1)
    top = K.simd_level()
    try:
        for level in range(top + 1):
            K.simd_level(level)
            bounds = HamerlyBounds(X)
            first = assign(X, sw, M.astype(dtype), 2, bounds=bounds)
            prune, _, jumped, _ = bounds.plan(C, first.labels)
            assert prune and jumped.shape[0] >= n_jump
            pruned = assign(X, sw, C, 2, old_labels=first.labels, bounds=bounds)
            np.testing.assert_array_equal(pruned.labels, plain.labels)
            assert pruned.objective == plain.objective
            assert pruned.searched < 0.5 * len(X)
    finally:
        K.simd_level(top)


def test_screened_float64_search_breaks_ties_like_the_float64_search():
    """float64 rows are searched in float32 first; rows whose best two centers are within the
    rounding are searched again in float64, so exact and near ties resolve as before."""
    rng = np.random.default_rng(6)
    C = rng.normal(size=(50, 8))
    # rows exactly between two centers, and rows within 1e-12 of such a midpoint
    a, b = rng.integers(50, size=(2, 4000))
    mid = (C[a] + C[b]) / 2
    X = np.vstack([mid, mid + 1e-12 * rng.normal(size=mid.shape), rng.normal(size=(4000, 8))])
    from gmmfast._kernels import _kmeans as K
    labels = assign(X, np.ones(len(X)), C, 2).labels
    try:
        K.float32_screening(False)
        exact = assign(X, np.ones(len(X)), C, 2).labels
    finally:
        K.float32_screening(True)
    np.testing.assert_array_equal(labels, exact)
    d2 = ((X[:, None] - C[None]) ** 2).sum(-1)
    assert (d2[np.arange(len(X)), labels] <= d2.min(1) + 1e-9 * (1 + d2.min(1))).all()


def test_the_first_pass_writes_the_row_norms_it_reads():
    """Hamerly's bounds get ||x||^2 from the first pass (it searches every row, so it reads
    every row); bounds set from elsewhere (the Dask blocks keep upper, lower and the centers
    only) get them before a pruned pass; a pruned pass cannot write them."""
    from gmmfast._kernels import _kmeans as K
    from gmmfast.cluster._pass import HamerlyBounds
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        M = rng.normal(scale=6, size=(20, 5))
        X = (M[rng.integers(20, size=5000)] + rng.normal(size=(5000, 5))).astype(dtype)
        sw = np.ones(len(X), dtype)
        norms = (X.astype(np.float64) ** 2).sum(axis=1)
        bounds = HamerlyBounds(X)
        assert not bounds.xsq_filled
        first = assign(X, sw, M.astype(dtype), 1, bounds=bounds)
        assert bounds.xsq_filled
        np.testing.assert_allclose(bounds.xsq, norms, rtol=1e-12)
        kept = HamerlyBounds(X)
        kept.upper[:], kept.lower[:], kept.centers = bounds.upper, bounds.lower, bounds.centers
        C = (M + 1e-3).astype(dtype)
        pruned = assign(X, sw, C, 1, old_labels=first.labels, bounds=kept)
        assert kept.xsq_filled and pruned.searched < len(X)
        np.testing.assert_array_equal(kept.xsq, bounds.xsq)
        np.testing.assert_array_equal(pruned.labels, assign(X, sw, C, 1).labels)
    n_chunks = -(-len(X) // K.CHUNK)
    with pytest.raises(ValueError, match="fill_xsq"):
        K.PassBuffers(len(X), 20, 5, chunk_costs=np.empty(n_chunks),
                      chunk_changed=np.empty(n_chunks, np.int64),
                      chunk_searched=np.empty(n_chunks, np.int64), upper=kept.upper,
                      lower=kept.lower, xsq=kept.xsq, drift=np.zeros(20), prune=True,
                      fill_xsq=True)


@pytest.mark.parametrize("vectors", [1, 2, 3, 4])
def test_kmeans_plusplus_step_on_float_rows_matches_the_exact_gains(vectors):
    """Float rows take the step's float lanes (twice a double vector's): the update, the
    potential and every lane's gain agree with float64 arithmetic on the same values to
    float32's rounding, for 1 to 4 vectors of lanes (one or two float vectors, padded)."""
    from gmmfast.cluster import _pass
    rng = np.random.default_rng(7)
    n, d = 1000, 13
    X = rng.normal(scale=3.0, size=(n, d)).astype(np.float32)
    sw = rng.uniform(0.5, 2.0, n).astype(np.float32)
    tp = vectors * _pass.pp_width()
    CT = np.ascontiguousarray(X[rng.choice(n, tp, replace=False)].T.astype(np.float64))
    closest = rng.uniform(5.0, 80.0, n)
    n_chunks = -(-n // _pass.CHUNK)
    chunk_pot, chunk_gain = np.empty(n_chunks), np.empty((n_chunks, tp))
    X64, w64 = X.astype(np.float64), sw.astype(np.float64)
    D = ((X64[:, None, :] - CT.T[None]) ** 2).sum(-1)
    cl = np.minimum(closest, D[:, 0])
    _pass.pp_step(X, sw, closest, CT, True, chunk_pot, chunk_gain, 1)
    np.testing.assert_allclose(closest, cl, rtol=(d + 2) * 2.0 ** -23)
    np.testing.assert_allclose(chunk_pot.sum(), (w64 * cl).sum(), rtol=1e-6)
    gains = (w64[:, None] * np.maximum(cl[:, None] - D, 0.0)).sum(0)
    np.testing.assert_allclose(chunk_gain.sum(0), gains, rtol=1e-5, atol=1e-3)
    assert chunk_gain[:, 0].sum() == 0.0          # the update's own lane lowers nothing


@pytest.mark.parametrize("n", [1, 15, 16, 300, 1000])
def test_kmeans_plusplus_panel_step_matches_the_row_kernel(n):
    """The step on row panels (pp_step_panel), at every SIMD level, for 1 to 32 centers and
    a partial last panel and chunk: every (row, center) distance is the float row kernel's
    (the same closest after the update, bit for bit, where the row kernel's lanes fit),
    and the potential and the gains are the exact sums to float32's rounding."""
    from gmmfast._kernels import _kmeans as K
    from gmmfast.cluster import _pass
    rng = np.random.default_rng(11)
    d = 13
    X = rng.normal(scale=3.0, size=(n, d)).astype(np.float32)
    sw = rng.uniform(0.5, 2.0, n).astype(np.float32)
    sw[::7] = 0.0
    XP = _pass.pp_panel(X, 2)
    assert XP.shape == (-(-n // _pass.PANEL), d, _pass.PANEL)
    n_chunks = -(-n // _pass.CHUNK)
    X64, w64 = X.astype(np.float64), sw.astype(np.float64)
    top = K.simd_level()
    try:
        for level in range(top + 1):
            K.simd_level(level)
            for tp in (1, 2, 7, 9, 16, 23, 32):
                CT = np.ascontiguousarray(rng.normal(scale=3.0, size=(d, tp)))
                closest = rng.uniform(5.0, 80.0, n)
                before = closest.copy()
                chunk_pot, chunk_gain = np.empty(n_chunks), np.empty((n_chunks, tp))
                _pass.pp_step_panel(XP, sw, closest, CT, True, chunk_pot, chunk_gain, 2)
                D = ((X64[:, None, :] - CT.T.astype(np.float32)[None]) ** 2).sum(-1)
                cl = np.minimum(before, D[:, 0])
                np.testing.assert_allclose(closest, cl, rtol=(d + 2) * 2.0 ** -23)
                np.testing.assert_allclose(chunk_pot.sum(), (w64 * cl).sum(), rtol=1e-6)
                gains = (w64[:, None] * np.maximum(cl[:, None] - D, 0.0)).sum(0)
                np.testing.assert_allclose(chunk_gain.sum(0), gains, rtol=1e-5, atol=1e-3)
                width = _pass.pp_width()
                if tp % width == 0 and tp <= 4 * width:   # the row kernel takes these
                    row_closest = before.copy()
                    row_pot, row_gain = np.empty(n_chunks), np.empty((n_chunks, tp))
                    _pass.pp_step(X, sw, row_closest, CT, True, row_pot, row_gain, 1)
                    np.testing.assert_array_equal(closest, row_closest)
                    np.testing.assert_allclose(chunk_gain, row_gain, rtol=1e-12, atol=1e-9)
    finally:
        K.simd_level(top)


def test_kmeans_plusplus_panels_refuse_wrong_shapes():
    from gmmfast.cluster import _pass
    X = np.zeros((40, 3), np.float32)
    with pytest.raises(ValueError, match="XP must be"):
        _pass.kernels.pp_panel(X, np.empty((2, 3, _pass.PANEL), np.float32), 1)
    XP = _pass.pp_panel(X, 1)
    sw, closest = np.ones(40, np.float32), np.full(40, np.inf)
    pot, gain = np.empty(1), np.empty((1, 33))
    with pytest.raises(ValueError, match="1 to 32 columns"):
        _pass.pp_step_panel(XP, sw, closest, np.zeros((3, 33)), True, pot, gain, 1)
    with pytest.raises(ValueError, match="disagree in shape"):
        _pass.pp_step_panel(XP, sw[:39], closest, np.zeros((3, 2)), True, pot, gain[:, :2], 1)
    # no features: refused before the kernel (whose prefetch distance divides by the panel's
    # size), which killed the process
    XP0 = _pass.pp_panel(np.zeros((40, 0), np.float32), 1)
    with pytest.raises(ValueError, match="at least one feature"):
        _pass.pp_step_panel(XP0, sw, closest, np.zeros((0, 2)), True, pot, gain[:, :2], 1)


def test_kmeans_plusplus_is_the_same_on_panels_and_rows(monkeypatch):
    """Seeding through panels (the default for dense X) draws the same centers as the row
    kernel on the same float32 values (same seeds; the distances are the same bits, the
    sums differ only in their order)."""
    import gmmfast.cluster._init as init
    rng = np.random.default_rng(5)
    means = rng.uniform(-20, 20, size=(60, 16))
    X = (means[rng.integers(60, size=5000)] + rng.normal(size=(5000, 16))).astype(np.float32)
    for k in (50, 300):
        for seed in range(3):
            panel = init.kmeans_plusplus(X, k, random_state=seed, n_threads=2)
            monkeypatch.setattr(init, "SEED_PANEL_MAX_BYTES", 0)
            row = init.kmeans_plusplus(X, k, random_state=seed, n_threads=2)
            monkeypatch.undo()
            np.testing.assert_array_equal(panel, row)


def three_blobs(n=50_000):
    """Three separated blobs in 3 features, float64 of more than 1 MiB (seeded on panels)."""
    X = np.random.default_rng(0).normal(size=(n, 3))
    X[:n // 4] += 8
    X[n // 4:n // 2] -= 8
    return X


@pytest.mark.parametrize("scale", [2.0 ** 70, 2.0 ** -85])
def test_kmeans_plusplus_seeds_float64_beyond_float32s_range_on_float64_rows(monkeypatch,
                                                                             scale):
    """float64 X whose squared distances float32 cannot hold (|x| about 1e21, or 3e-26) is
    seeded on its float64 rows from the same random state: the seeds are those of the
    float64 seeding, so three separated blobs get a seed each (on float32 panels the
    distances overflowed or underflowed, and no seeding in 20 found all three)."""
    import gmmfast.cluster._init as init
    X = three_blobs() * scale
    assert init.seeds_on_panels(X)
    for seed in range(5):
        C = kmeans_plusplus(X, 3, random_state=seed)
        assert len({int(np.sign(c) * (abs(c) > 4)) for c in C[:, 0] / scale}) == 3
        g = np.random.default_rng(seed)
        panels = (kmeans_plusplus(X, 3, random_state=g), g.random())
        monkeypatch.setattr(init, "SEED_FLOAT32_BYTES", 1 << 62)
        g = np.random.default_rng(seed)
        rows = (kmeans_plusplus(X, 3, random_state=g), g.random())
        monkeypatch.undo()
        np.testing.assert_array_equal(panels[0], rows[0])
        assert panels[1] == rows[1]          # the generator left in the same state


def test_a_fit_beyond_float32s_range_scales_exactly_and_warns_nothing():
    """float64 rows and centers at |x| about 1e21 (squares beyond the float32 screen): the
    search skips the screen (no float32 layout, whose cast overflowed with a warning per
    pass) and Lloyd's fit is the unscaled fit's, scaled by the power of two exactly."""
    import warnings
    from gmmfast.cluster import GMMKMeans
    X = three_blobs(20_000)
    C = X[[0, 15_000, 19_999]]
    s = 2.0 ** 70
    base = GMMKMeans(3, init=C, eta=1, sample_size=None).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = GMMKMeans(3, init=C * s, eta=1, sample_size=None).fit(X * s)
    np.testing.assert_array_equal(big.labels_, base.labels_)
    np.testing.assert_array_equal(big.cluster_centers_, base.cluster_centers_ * s)
    assert big.inertia_ == base.inertia_ * s * s
