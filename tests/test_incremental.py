"""Incremental Lloyd passes (KMeansBounds(incremental=True), gmmfast.cluster._pass.IncrementalLloyd,
the kmeans_lazy_pass kernel): the labels of a full search at every iteration, F from the
moments within rounding of the exact F, thread-count independence, refused buffers."""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.cluster import KMeansBounds
from gmmfast.cluster import _pass
from gmmfast.cluster._pass import assign, labeling_cost, update_centers
from gmmfast.core import generalized_mm


def _mixture(n, d, k, rng, offset=0.0, dtype=np.float64, sd=1.0):
    M = rng.normal(scale=6, size=(k, d))
    return (M[rng.integers(k, size=n)] + sd * rng.normal(size=(n, d)) + offset).astype(dtype)


def _unequal(n, d, rng, offset=0.0):
    """90 % of the rows in one wide blob, the rest in 40 tight ones far out."""
    big = rng.normal(size=(int(0.9 * n), d))
    M = rng.normal(scale=30, size=(40, d))
    small = M[rng.integers(40, size=n - big.shape[0])] + 0.01 * rng.normal(size=(n - big.shape[0], d))
    return (np.vstack([big, small])[rng.permutation(n)] + offset)


def _grid(n, rng, dtype):
    """Integer points of a small grid: many rows at exactly equal distance from two centers."""
    return rng.integers(0, 12, size=(n, 2)).astype(dtype)


def _data_sets():
    rng = np.random.default_rng(11)
    yield "blobs f64", _mixture(30_000, 6, 40, rng), None
    yield "blobs f32", _mixture(30_000, 6, 40, rng, dtype=np.float32), None
    yield "offset 1e4 f64", _mixture(30_000, 5, 30, rng, offset=1e4), None
    yield "offset 1e3 f32", _mixture(30_000, 3, 30, rng, offset=1e3, dtype=np.float32), None
    X = _unequal(30_000, 4, rng, offset=1e4)
    yield "unequal sizes, weights", X, rng.exponential(size=X.shape[0]) ** 2
    yield "grid ties f64", _grid(20_000, rng, np.float64), None
    yield "grid ties f32", _grid(20_000, rng, np.float32), None


def _run(X, sw, w0, incremental, threads, check=None, max_iter=60):
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=threads, seed=0, incremental=incremental)
    steps = []

    def callback(t, history):
        a = fam.last
        steps.append((a.labels.copy(), a.w.copy(), a.objective, a.exact))
        if check is not None:
            check(a, history)

    res = generalized_mm(fam, w0, eta=1.0, selection="mm", tol=0, max_iter=max_iter,
                         callback=callback)
    return fam, res, steps


@pytest.mark.parametrize("threads", [1, 2])
def test_incremental_passes_give_the_labels_of_the_exact_passes(threads):
    """Along Lloyd's run, every incremental pass has the labels of a full search at its
    centers (no pruning), and the run follows the exact passes' run: the same labels at
    every iteration, the centers equal to rounding, the same fixed point."""
    for name, X, sw in _data_sets():
        sw = np.ones(X.shape[0], X.dtype) if sw is None else sw.astype(X.dtype)
        rng = np.random.default_rng(3)
        k = 25
        w0 = X[rng.choice(X.shape[0], k, replace=False)].copy()
        if name.startswith("grid"):
            w0 = w0 + 0.5          # centers between grid points: ties at every pass

        def full_search(a, history):
            ref = assign(X, sw, a.w, 1)
            np.testing.assert_array_equal(a.labels, ref.labels, err_msg=name)

        fam, res, steps = _run(X, sw, w0, True, threads, check=full_search)
        _, ref, ref_steps = _run(X, sw, w0, False, threads)
        # the stop (d_t <= 0 or b_t >= b_t-1) may come one pass apart at the fixed point,
        # where d_t is zero up to rounding: both runs end there
        assert abs(res.n_iter - ref.n_iter) <= 1, name
        assert sum(not s[3] for s in steps) >= res.n_iter - 1, name   # incremental passes
        scale = float(np.abs(X).max())
        for (lab, w, f, _), (rlab, rw, rf, _) in zip(steps, ref_steps):
            np.testing.assert_array_equal(lab, rlab, err_msg=name)
            np.testing.assert_allclose(w, rw, rtol=0, atol=1e-12 * scale * (
                1e6 if X.dtype == np.float32 else 1.0), err_msg=name)
            assert f == pytest.approx(rf, rel=1e-12), name
        # (float32 centers far from the origin round their means: the exact passes' d_t
        # can then be below -1e-9 F(w_0) too)
        if not ref.history.invariant_violations():
            assert not res.history.invariant_violations(), name
        np.testing.assert_array_equal(fam.labels(res.w), ref_steps[-1][0], err_msg=name)


def _lloyd_fixed_point(n):
    """Incremental Lloyd run to its fixed point on n rows of 8-d blobs, k = 30: (X, weights,
    the incremental state, the run, the generator for what follows)."""
    rng = np.random.default_rng(4)
    X = _mixture(n, 8, 30, rng)
    sw = np.ones(len(X))
    w0 = X[rng.choice(len(X), 30, replace=False)].copy()
    fam, res, _ = _run(X, sw, w0, True, 1, max_iter=300)
    return X, sw, fam._lazy, res, rng


def test_a_pass_near_the_fixed_point_reads_few_rows():
    """Near a fixed point (centers that moved a little), the rows whose label stays cost a
    scan of their bounds: the pass reads (tightens or searches) only a few rows of X."""
    X, sw, lazy, res, rng = _lloyd_fixed_point(200_000)
    w = res.w + 1e-4 * rng.normal(size=res.w.shape)         # a small move
    a = lazy.step(np.ascontiguousarray(w))
    assert a.tightened + a.searched < 0.02 * len(X)
    np.testing.assert_array_equal(a.labels, assign(X, sw, w, 1).labels)
    # one center jumps: rows far from it still read nothing, the labels stay exact
    w[3] += 4.0
    a = lazy.step(np.ascontiguousarray(w))
    np.testing.assert_array_equal(a.labels, assign(X, sw, w, 1).labels)
    assert a.tightened < 0.5 * len(X)


def _moment_errors(X, sw, w0, max_iter=100):
    errs = []

    def check(a, history):
        exact = labeling_cost(X, sw, a.w, a.labels, 1)
        errs.append((abs(a.objective - exact), exact, history.initial_objective, a.exact))

    fam, res, _ = _run(X, sw, w0, True, 2, check=check, max_iter=max_iter)
    return fam, res, errs


@pytest.mark.parametrize("case", ["offset 1e4", "offset 1e6", "float32 offset 1e3",
                                  "unequal sizes offset 1e4"])
def test_F_from_the_moments_is_within_1e_12_of_the_exact_F(case):
    """Far from the origin the moments, kept relative to anchors (the centers of the first
    pass), lose nothing to cancellation: F from them is within 1e-12 of the exact F
    (measured: below 1e-15), far inside the invariants' 1e-9."""
    rng = np.random.default_rng(8)
    if case == "float32 offset 1e3":
        X = _mixture(60_000, 4, 30, rng, offset=1e3, dtype=np.float32)
    elif case.startswith("unequal"):
        X = _unequal(60_000, 4, rng, offset=1e4)
    else:
        X = _mixture(60_000, 6, 30, rng, offset=float(case.split()[-1]))
    sw = np.ones(len(X), X.dtype)
    w0 = X[rng.choice(len(X), 30, replace=False)].copy()
    fam, res, errs = _moment_errors(X, sw, w0)
    assert len(errs) >= 3
    assert max(e / f for e, f, _, _ in errs) <= 1e-12
    if X.dtype == np.float64:     # (float32 means far from the origin round: see above)
        assert not res.history.invariant_violations()
    assert fam.exact_objective(res.w) == labeling_cost(X, sw, res.w, fam.labels(res.w), 1)


def test_the_moments_are_re_anchored_when_their_rounding_grows():
    """Tight clusters (sd 1e-3) far from the origin, centers starting 5 away from them: F
    falls a million-fold in one pass while the centers move far from their anchors, and F
    from the moments is off by ~1e-10 of F (still ~1e-16 of F(w_0), the invariants'
    scale). The next pass is then exact (re-anchored), and the final F is exact."""
    rng = np.random.default_rng(1)
    n, d, k = 60_000, 8, 20
    M = rng.normal(scale=10, size=(k, d))
    X = M[rng.integers(k, size=n)] + 1e-3 * rng.normal(size=(n, d)) + 1e4
    v = rng.normal(size=M.shape)
    w0 = np.ascontiguousarray(1e4 + M + 5 * v / np.linalg.norm(v, axis=1, keepdims=True))
    sw = np.ones(n)
    fam, res, errs = _moment_errors(X, sw, w0)
    assert max(e / f0 for e, _, f0, _ in errs) <= 1e-12
    first_lazy = next(i for i, (_, _, _, exact) in enumerate(errs) if not exact)
    assert errs[first_lazy][0] > 1e-12 * errs[first_lazy][1]    # the case is adversarial ...
    assert errs[first_lazy + 1][3]                            # ... so the next pass is exact
    assert fam.exact_objective(res.w) == assign(X, sw, res.w, 1).objective


def test_incremental_passes_do_not_depend_on_the_thread_count(monkeypatch):
    """The moments' deltas are summed per slot in row order and reduced in slot order: 1 and
    2 threads, and passes made in blocks of slots, give bit-identical labels, centers and
    records (n large enough for the kernel to use both threads)."""
    rng = np.random.default_rng(2)
    X = _mixture(400_000, 3, 40, rng, offset=50.0)
    sw = rng.random(len(X))
    w0 = X[rng.choice(len(X), 40, replace=False)].copy()
    runs = [_run(X, sw, w0, True, t, max_iter=40) for t in (1, 2)]
    monkeypatch.setattr(_pass, "LAZY_BLOCK", 30_000)       # 14 calls of ~5 slots a pass
    runs.append(_run(X, sw, w0, True, 2, max_iter=40))
    (_, r1, s1), (_, r2, s2), (_, r3, s3) = runs
    for a, b in zip(s1, s3):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2] == b[2]
    assert r1.n_iter == r2.n_iter
    for a, b in zip(s1, s2):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2] == b[2]
    for f in ("bound_at_previous", "threshold", "bound", "objective", "gap"):
        np.testing.assert_array_equal(getattr(r1.history, f), getattr(r2.history, f))


def test_the_default_fit_polishes_to_a_fixed_point_whatever_the_thread_count():
    """GMMKMeans() on more rows than its coarse sample: the fine level's incremental passes
    end at a fixed point of Lloyd's map (the labels are the nearest centers, the centers the
    means of their labels), inertia_ is the exact F, and 1 and 2 threads give bit-identical
    results."""
    rng = np.random.default_rng(6)
    X = _mixture(120_000, 4, 12, rng, offset=100.0)
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            fits.append(GMMKMeans(12, random_state=3).fit(X))
    m = fits[0]
    assert [lv.rows for lv in m.levels_][-1] == len(X) and len(m.levels_) >= 2
    sw = np.ones(len(X))
    a = assign(X, sw, m.cluster_centers_, 1)
    np.testing.assert_array_equal(a.labels, m.labels_)
    assert m.inertia_ == a.objective
    means, _ = update_centers(X, sw, m.labels_, m.cluster_centers_, 1)
    np.testing.assert_allclose(means, m.cluster_centers_, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    assert fits[0].inertia_ == fits[1].inertia_


def test_incremental_serves_lloyd_only():
    X = np.random.default_rng(0).normal(size=(500, 2))
    sw = np.ones(500)
    with pytest.raises(ValueError, match="relocate_empty"):
        KMeansBounds(X, sw, walk_steps=0, n_threads=1, relocate_empty=True, incremental=True)
    fam = KMeansBounds(X, sw, walk_steps=10, n_threads=1, incremental=True)
    with pytest.raises(ValueError, match="selection='mm'"):
        generalized_mm(fam, X[:4].copy(), eta=0.5, selection="random", max_iter=3)
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=1, incremental=True)
    with pytest.raises(ValueError, match="selection='mm'"):
        generalized_mm(fam, X[:4].copy(), eta=0.5, selection="merge-split", max_iter=3)


# -- the buffer record ---------------------------------------------------------------------

def _buffers(n=1000, k=7, d=3, slots=2, dtype=np.float64, **change):
    from gmmfast._kernels import _kmeans as K
    args = dict(labels=np.zeros(n, np.int32), upper=np.zeros(n), lower=np.zeros(n),
                lower_jumped=np.zeros(n), xsq=np.zeros(n), cum_drift=np.zeros(k),
                cum_other=np.zeros(k), cum_jumped=np.full(k, -np.inf),
                jump_gap=np.full(k, np.inf), anchors=np.zeros((k, d), dtype),
                slot_delta=np.zeros((slots, k, d + 3)), slot_touched=np.zeros((slots, k), np.uint8),
                delta=np.zeros((k, d + 3)), slot_changed=np.zeros(slots, np.int64),
                slot_searched=np.zeros(slots, np.int64), slot_tightened=np.zeros(slots, np.int64))
    args.update(change)
    return K.LazyBuffers(n, k, d, **args)


@pytest.mark.parametrize("change,match", [
    (dict(labels=np.zeros(999, np.int32)), "one entry per row"),
    (dict(upper=np.zeros(1001)), "one entry per row"),
    (dict(xsq=np.zeros(10)), "one entry per row"),
    (dict(cum_drift=np.zeros(6)), "one entry per center"),
    (dict(jump_gap=np.zeros(8)), "one entry per center"),
    (dict(anchors=np.zeros((7, 4))), "anchors"),
    (dict(anchors=np.zeros((7, 3), np.int64)), "anchors"),
    (dict(anchors=np.zeros((3, 7)).T), "anchors"),
    (dict(slot_delta=np.zeros((2, 7, 5))), "slot_delta"),
    (dict(slot_touched=np.zeros((3, 7), np.uint8)), "slot_delta"),
    (dict(slot_delta=np.zeros((9, 7, 6)), slot_touched=np.zeros((9, 7), np.uint8)), "slots"),
    (dict(delta=np.zeros((7, 5))), "delta"),
    (dict(slot_changed=np.zeros(3, np.int64)), "one entry per slot"),
    (dict(labels=np.full(1000, 7, np.int32)), "labels out of range"),
    (dict(labels=np.full(1000, -1, np.int32)), "labels out of range"),
])
def test_lazy_buffers_refuse_bad_shapes(change, match):
    with pytest.raises(ValueError, match=match):
        _buffers(**change)


def test_lazy_buffers_refuse_bad_jumped_centers_and_mismatched_data():
    from gmmfast._kernels import _kmeans as K
    buf = _buffers()
    for bad in (np.array([7], np.int32), np.array([-1], np.int32), np.array([1], np.int64)):
        with pytest.raises(ValueError, match="jumped"):
            buf.set_jumped(bad)
    buf.set_jumped(np.array([0, 6], np.int32))
    X, sw, C = np.zeros((1000, 3)), np.ones(1000), np.zeros((7, 3))
    K.kmeans_lazy_pass(X, sw, C, buf, 0, 2, 1)                 # the right shapes pass
    with pytest.raises(ValueError, match="buffers for"):
        K.kmeans_lazy_pass(X[:999], sw[:999], C, buf, 0, 2, 1)
    with pytest.raises(ValueError, match="buffers for"):
        K.kmeans_lazy_pass(X, sw, C[:6], buf, 0, 2, 1)
    with pytest.raises(ValueError, match="disagree"):
        K.kmeans_lazy_pass(X, sw[:10], C, buf, 0, 2, 1)
    with pytest.raises(ValueError, match="slots"):
        K.kmeans_lazy_pass(X, sw, C, buf, 1, 3, 1)
    with pytest.raises(ValueError):                            # anchors of another dtype
        K.kmeans_lazy_pass(X.astype(np.float32), sw.astype(np.float32),
                           C.astype(np.float32), buf, 0, 2, 1)


def test_rows_at_near_ties_with_a_jumped_center_get_the_search_s_label():
    """A center jumps next to rows of another cluster, leaving them within 1e-9 of a tie, far
    from the origin (where the search's own rounding is ~1e-8): the jumped center is checked
    at its exact distance, and a row is kept only if it is separated by more than the
    search's rounding margin, so every label is the full search's."""
    rng = np.random.default_rng(12)
    d, k = 4, 30
    M = rng.normal(scale=20, size=(k, d)) + 1e4
    X = M[rng.integers(k, size=60_000)] + rng.normal(size=(60_000, d))
    a, b = 0, 1
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    B_new = M[a] + 1.5 * u                           # where b jumps: 1.5 from a's center
    # rows on the bisecting plane of a and B_new, nudged by +-1e-9 along u
    t = rng.normal(size=(20_000, d))
    t -= np.outer(t @ u, u)
    ties = (M[a] + B_new) / 2 + t + np.outer(rng.uniform(-1e-9, 1e-9, size=20_000), u)
    X = np.ascontiguousarray(np.vstack([X, ties])[rng.permutation(80_000)])
    sw = np.ones(len(X))
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=1, seed=0, incremental=True)
    fam.objective(M.copy())
    lazy = fam._lazy
    C = M.copy()
    C[b] = B_new
    got = lazy.step(C)
    want = assign(X, sw, C, 1)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.searched < len(X) // 2           # the jumped center did not send every row


def test_an_interrupted_pass_is_followed_by_an_exact_one(monkeypatch):
    """Ctrl-C between two blocks of a pass leaves the moments behind and the rows it did not
    reach unchecked against the centers that jumped: the state is stale, the bounds it hands
    back allow for the jump (the jumped centers' own bound, shifted before the pass), and
    the family's next pass is exact, with a full search's labels and the exact F."""
    rng = np.random.default_rng(9)
    X = _mixture(100_000, 4, 20, rng)
    sw = np.ones(len(X))
    monkeypatch.setattr(_pass, "LAZY_BLOCK", 20_000)
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=1, seed=0, incremental=True)
    w0 = X[rng.choice(len(X), 20, replace=False)].copy()
    fam.objective(w0)
    kernel = _pass.kernels.kmeans_lazy_pass
    calls = []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return kernel(*args)

    plan = _pass.IncrementalLloyd._plan
    jumped = []

    def recorded(self, c64):
        out = plan(self, c64)
        jumped.append(len(self.jumped if out.regroup is None else out.regroup))
        return out

    monkeypatch.setattr(_pass.kernels, "kmeans_lazy_pass", interrupted)
    monkeypatch.setattr(_pass.IncrementalLloyd, "_plan", recorded)
    w1 = w0 + 0.01
    w1[[2, 5]] += 3.0                          # two centers jump: checked row by row
    with pytest.raises(KeyboardInterrupt):
        fam.objective(np.ascontiguousarray(w1))
    assert jumped == [2]
    monkeypatch.setattr(_pass.kernels, "kmeans_lazy_pass", kernel)
    w2 = np.ascontiguousarray(w1)              # the centers of the interrupted pass
    a = fam._assignment(w2)
    assert a.exact
    ref = assign(X, sw, w2, 1)
    np.testing.assert_array_equal(a.labels, ref.labels)
    assert a.objective == ref.objective
    w3 = np.ascontiguousarray(w1 + 0.05)
    b = fam._assignment(w3)                    # incremental again, from the exact pass
    assert not b.exact
    np.testing.assert_array_equal(b.labels, assign(X, sw, w3, 1).labels)


# -- the watch list ------------------------------------------------------------------------

def _spy_passes(monkeypatch):
    """Record whether each call of the incremental pass kernel read the watched rows only."""
    calls = []
    real = _pass.kernels.kmeans_lazy_pass

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(_pass.kernels, "kmeans_lazy_pass", spy)
    return calls


@pytest.mark.parametrize("threads", [1, 2])
def test_passes_over_the_watch_list_give_the_results_of_passes_over_every_row(
        monkeypatch, threads):
    """Near a fixed point the passes read only the watched rows (the others provably keep
    their labels), and Lloyd's run is the same bit for bit as with no list: labels,
    centers and F at every iteration, on data with offsets, float32, weights and ties."""
    watched_passes = 0
    for name, X, sw in _data_sets():
        sw = np.ones(X.shape[0], X.dtype) if sw is None else sw.astype(X.dtype)
        rng = np.random.default_rng(3)
        w0 = X[rng.choice(X.shape[0], 25, replace=False)].copy()
        if name.startswith("grid"):
            w0 = w0 + 0.5
        monkeypatch.setattr(_pass, "WATCH_SHARE", 0.0)            # no list is ever kept
        _, ref, ref_steps = _run(X, sw, w0, True, threads, max_iter=300)
        monkeypatch.setattr(_pass, "WATCH_SHARE", 0.25)
        calls = _spy_passes(monkeypatch)
        _, res, steps = _run(X, sw, w0, True, threads, max_iter=300)
        monkeypatch.undo()
        watched_passes += sum(calls)
        assert res.n_iter == ref.n_iter, name
        for (lab, w, f, _), (rlab, rw, rf, _) in zip(steps, ref_steps):
            np.testing.assert_array_equal(lab, rlab, err_msg=name)
            np.testing.assert_array_equal(w, rw, err_msg=name)
            assert f == rf, name
        np.testing.assert_array_equal(steps[-1][0], assign(X, sw, steps[-1][1], 1).labels,
                                      err_msg=name)
    assert watched_passes >= 20


def test_a_watch_list_that_leaves_out_rows_near_a_boundary_would_miss_their_changes():
    """The list's test is what keeps the labels exact: a list that leaves every row out
    misses the labels that change when the centers move, and the list the kernel makes at
    the same caps catches them all."""
    from gmmfast._kernels import _kmeans as K
    X, sw, lazy, res, rng = _lloyd_fixed_point(100_000)
    w = np.ascontiguousarray(res.w + 1e-2 * rng.normal(size=res.w.shape))
    truth = assign(X, sw, w, 1).labels
    assert np.any(truth != lazy.labels)                       # the move changes labels
    caps = (lazy.cum_drift + 0.08, lazy.cum_other + 0.08, lazy.cum_jumped + 0.08, 1e9)
    missed = _watch_step(K, X, sw, w, lazy, np.empty(0, np.int64), caps)
    assert np.any(missed != truth)
    np.testing.assert_array_equal(_watch_step(K, X, sw, w, lazy, None, caps), truth)


def _watch_step(K, X, sw, w, lazy, rows, caps):
    """One incremental pass at ``w`` from copies of ``lazy``'s state, over the watch list
    ``rows`` (None: the list a pass over every row at the last centers marks at ``caps``);
    its labels."""
    n, d = X.shape
    k = w.shape[0]
    labels = lazy.labels.copy()
    cum_drift, cum_other = lazy.cum_drift.copy(), lazy.cum_other.copy()
    cum_jumped = lazy.cum_jumped.copy()
    buf = K.LazyBuffers(n, k, d, labels=labels, upper=lazy._upper.copy(),
                        lower=lazy._lower.copy(), lower_jumped=lazy._lower_jumped.copy(),
                        xsq=lazy._bounds.xsq, cum_drift=cum_drift, cum_other=cum_other,
                        cum_jumped=cum_jumped, jump_gap=np.full(k, np.inf),
                        anchors=lazy.anchors, slot_delta=np.empty((2, k, d + 3)),
                        slot_touched=np.empty((2, k), np.uint8), delta=np.empty((k, d + 3)),
                        slot_changed=np.empty(2, np.int64), slot_searched=np.empty(2, np.int64),
                        slot_tightened=np.empty(2, np.int64))
    buf.set_jumped(lazy.jumped)
    if rows is None:
        mask = np.empty(n, np.uint8)
        buf.request_mask(mask, *caps)
        assert not K.kmeans_lazy_pass(X, sw, lazy.centers, buf, 0, 2, 1)   # every row
        buf.cancel_mask()
        rows = np.flatnonzero(mask).astype(np.int64)
        assert 0 < rows.shape[0] < n // 4                 # the list is short
    # the shifts of the move to w (in the arrays the buffers hold)
    drift = np.sqrt(((w - lazy.centers) ** 2).sum(axis=1)) * (1.0 + 1e-12)
    cum_drift += drift
    cum_other += drift.max()
    cum_jumped += drift.max()
    buf.set_watch(rows, *caps)
    assert K.kmeans_lazy_pass(X, sw, w, buf, 0, 2, 1)   # within the caps: the list only
    return labels


def test_the_watch_list_refuses_bad_rows_and_caps():
    buf = _buffers()
    caps = (np.zeros(7), np.zeros(7), np.zeros(7), 0.0)
    for rows in (np.array([3, 2], np.int64), np.array([1, 1], np.int64),
                 np.array([1000], np.int64), np.array([-1], np.int64),
                 np.array([1, 2], np.int32)):
        with pytest.raises(ValueError, match="watched rows"):
            buf.set_watch(rows, *caps)
    with pytest.raises(ValueError, match="drift_cap"):
        buf.set_watch(np.arange(3, dtype=np.int64), np.zeros(6), np.zeros(7), np.zeros(7), 0.0)
    with pytest.raises(ValueError, match="jump_cap"):
        buf.set_watch(np.arange(3, dtype=np.int64), np.zeros(7), np.zeros(7), np.zeros(8), 0.0)
    for mask in (np.empty(999, np.uint8), np.empty(1000, np.int8), np.empty(2000, np.uint8)[::2]):
        with pytest.raises(ValueError, match="mask"):
            buf.request_mask(mask, *caps)
    with pytest.raises(ValueError, match="other_cap"):
        buf.request_mask(np.empty(1000, np.uint8), np.zeros(7), np.zeros(8), np.zeros(7), 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_label_counts_are_bincount_s(dtype):
    from gmmfast._kernels import _kmeans as K
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 50, size=300_001).astype(np.int32)
    labels[labels == 7] = 8                                     # an empty cluster
    sw = rng.random(labels.shape[0]).astype(dtype)
    sw[::3] = 0.0
    for threads in (1, 2):
        np.testing.assert_array_equal(_pass.label_counts(labels, sw, 52, threads),
                                      np.bincount(labels, minlength=52))
        np.testing.assert_array_equal(_pass.label_counts(labels, sw, 52, threads, positive=True),
                                      np.bincount(labels[sw > 0], minlength=52))
    with pytest.raises(ValueError, match="out of"):
        K.label_counts(labels, sw, False, 40, 1)
    with pytest.raises(ValueError, match="length"):
        K.label_counts(labels, sw[:10], False, 52, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_jumped_centers_check_bounds_every_center_but_the_row_s_own(dtype):
    """The incremental pass's check of the centers that jumped (gmm_minother): at every SIMD
    level, for 1 to 40 centers (one to three vectors and a partial one) and rows whose own
    center is among them or not, a lower bound on the squared distance to every other
    center, within the search's rounding of the least one; the own center is left out
    (it is the nearest here, so a bound taken over it would be far too low)."""
    from gmmfast._kernels import _kmeans as K
    rng = np.random.default_rng(21)
    top = K.simd_level()
    try:
        for level in range(top + 1):
            K.simd_level(level)
            for m, d in [(1, 3), (2, 16), (7, 5), (16, 16), (17, 2), (33, 9), (40, 1)]:
                C = rng.normal(scale=5, size=(m, d)) + 100.0
                own = rng.integers(-1, m, size=300).astype(np.int32)
                # rows next to their own center (or anywhere for own = -1)
                X = np.where(own[:, None] >= 0, C[np.maximum(own, 0)], C.mean(0)) \
                    + 0.1 * rng.normal(size=(300, d))
                X, Cd = X.astype(dtype), C.astype(dtype)
                rows = rng.permutation(300).astype(np.int64)[:257]
                out = np.empty(rows.shape[0])
                K.jump_lower_bounds(X, rows, Cd, own[rows], out)
                D2 = ((X[rows][:, None].astype(float) - Cd[None].astype(float)) ** 2).sum(-1)
                mine = own[rows] >= 0
                D2[np.flatnonzero(mine), own[rows][mine]] = np.inf
                want = D2.min(axis=1)
                if m == 1:
                    assert np.all(out[mine] == np.inf) and np.all(out[~mine] <= want[~mine])
                    continue
                scale = (X[rows].astype(float) ** 2).sum(1) + (C ** 2).sum(1).max()
                eps = 2.0 ** -24 if dtype == np.float32 or K.float32_screening() else 2.0 ** -53
                assert np.all(out <= want), (level, m, d)
                np.testing.assert_array_less(want - out, 8 * (d + 4) * eps * scale,
                                             err_msg=f"level {level}, m {m}, d {d}")
    finally:
        K.simd_level(top)


def test_the_jumped_centers_check_refuses_bad_rows_and_own_centers():
    from gmmfast._kernels import _kmeans as K
    X, C = np.zeros((5, 2)), np.zeros((3, 2))
    rows, own, out = np.arange(4, dtype=np.int64), np.zeros(4, np.int32), np.empty(4)
    with pytest.raises(ValueError, match="rows must lie"):
        K.jump_lower_bounds(X, rows + 2, C, own, out)
    with pytest.raises(ValueError, match="own in"):
        K.jump_lower_bounds(X, rows, C, own + 3, out)
    with pytest.raises(ValueError, match="one entry per row"):
        K.jump_lower_bounds(X, rows, C, own[:3], out)
    with pytest.raises(ValueError, match="centers must be"):
        K.jump_lower_bounds(X, rows, np.zeros((3, 4)), own, out)


def test_incremental_passes_are_the_same_at_every_simd_level():
    """The scan of the bounds (gmm_bounds.h) and the jumped centers' check are compiled per
    SIMD level: Lloyd's incremental run gives the same labels, centers and F at every
    iteration at each level: the labels of a full search. (Which rows are tightened and
    searched may differ between levels: the search's and the check's values round
    differently with each vector width, which moves the bounds, not the labels.)"""
    from gmmfast._kernels import _kmeans as K
    top = K.simd_level()
    rng = np.random.default_rng(8)
    sets = [_mixture(40_000, 5, 60, rng, offset=30.0),
            _mixture(40_000, 16, 60, rng, dtype=np.float32),
            _grid(20_000, rng, np.float64)]
    try:
        for X in sets:
            sw = np.ones(X.shape[0], X.dtype)
            w0 = X[rng.choice(X.shape[0], 30, replace=False)] + 0.25
            runs = []
            for level in range(top + 1):
                K.simd_level(level)
                counts = []
                _, res, steps = _run(X, sw, w0, True, 2, max_iter=200,
                                     check=lambda a, h: counts.append((a.searched,
                                                                       a.tightened)))
                runs.append((res.n_iter, steps, counts))
            n_iter, steps, counts = runs[-1]
            assert sum(t for _, t in counts) > 0 and n_iter > 3
            for level, (n2, steps2, counts2) in enumerate(runs[:-1]):
                assert n2 == n_iter and sum(t for _, t in counts2) > 0, level
                for (lab, w, f, _), (lab2, w2, f2, _) in zip(steps, steps2):
                    np.testing.assert_array_equal(lab, lab2)
                    np.testing.assert_array_equal(w, w2)
                    assert f == f2, level
    finally:
        K.simd_level(top)


# -- the jumped centers' own bound ---------------------------------------------------------

def _regroup_run(monkeypatch, broken=False):
    """Incremental passes whose jumped centers are forced (kept, joined, replaced, dropped,
    taken from none) while some centers jump; the labels of each pass and of a full search.
    ``broken``: the regroup forgets the centers that leave the jumped ones."""
    rng = np.random.default_rng(21)
    X = _mixture(60_000, 4, 20, rng)
    sw = np.ones(len(X))
    w = X[rng.choice(len(X), 20, replace=False)].copy()
    for _ in range(5):
        w, _ = update_centers(X, sw, assign(X, sw, w, 1).labels, w, 1)
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=1, seed=0, incremental=True)
    fam.objective(np.ascontiguousarray(w))
    forced = []
    real = _pass.IncrementalLloyd.plans

    def plan(self, c64):
        p = real(self, c64, [np.array(forced[-1], dtype=np.int32)])[0]
        if broken and p.regroup is not None:
            p = p._replace(gap_out=np.full(c64.shape[0], np.inf))
        return p

    monkeypatch.setattr(_pass.IncrementalLloyd, "_plan", plan)

    def unit():
        u = rng.normal(size=4)
        return u / np.linalg.norm(u)

    def toward(a, b, t):
        return w[a] + t * (w[b] - w[a]) / np.linalg.norm(w[b] - w[a])

    moves = [([2, 5], {2: w[2] + 2.0 * unit(), 5: w[5] + 2.0 * unit()}),
             ([2, 5], {2: w[0] + 0.8 * unit(), 5: w[5] + 1.0 * unit()}),  # 2 next to 0
             ([5, 7], {2: None, 7: w[7] + 1.5 * unit()}),                # 2 leaves, moves on
             ([], {5: w[5] + 0.2 * unit()}),
             ([1, 3], {1: w[1] + 2.0 * unit(), 3: w[3] + 2.0 * unit()}),
             ([1, 3, 9], {9: w[9] + 2.0 * unit(), 1: w[1] + 0.5 * unit()})]
    got, want = [], []
    for group, jumps in moves:
        forced.append(group)
        w = w + 0.01 * rng.normal(size=w.shape)
        for j, c in jumps.items():
            w[j] = toward(j, 0, 0.3) if c is None else c
        c = np.ascontiguousarray(w)
        a = fam._assignment(c)
        assert not a.exact
        assert np.array_equal(fam._lazy.jumped, group)
        got.append(a.labels.copy())
        want.append(assign(X, sw, c, 1).labels)
    return got, want


def test_the_jumped_centers_may_change_and_every_pass_keeps_the_search_s_labels(monkeypatch):
    """The jumped centers kept, joined, replaced (one leaves while it moves on), dropped and
    taken again while centers jump: every pass has a full search's labels. The regroup's
    bound on the centers that leave is what keeps them: without it a pass misses labels."""
    got, want = _regroup_run(monkeypatch)
    for t, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"pass {t + 1}")
    got, want = _regroup_run(monkeypatch, broken=True)
    assert any(np.any(g != w) for g, w in zip(got, want))


def test_ctrl_c_while_the_jumped_centers_change_drops_the_bounds(monkeypatch):
    """Ctrl-C right after the rows' bounds were made for new jumped centers, before the
    state records them: the bounds handed back are dropped (every row searched) and the next
    pass is exact, with a full search's labels."""
    rng = np.random.default_rng(5)
    X = _mixture(50_000, 4, 20, rng)
    sw = np.ones(len(X))
    fam = KMeansBounds(X, sw, walk_steps=0, n_threads=1, seed=0, incremental=True)
    w0 = X[rng.choice(len(X), 20, replace=False)].copy()
    fam.objective(w0)
    real = _pass.kernels.lazy_regroup

    def interrupted(*args):
        real(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(_pass.kernels, "lazy_regroup", interrupted)
    monkeypatch.setattr(_pass.IncrementalLloyd, "_plan", lambda self, c64: self.plans(
        c64, [np.array([2, 5], dtype=np.int32)])[0])
    w1 = w0 + 0.01
    w1[[2, 5]] += 3.0
    w1 = np.ascontiguousarray(w1)
    with pytest.raises(KeyboardInterrupt):
        fam.objective(w1)
    monkeypatch.undo()
    a = fam._assignment(w1)
    assert a.exact and a.searched == len(X)
    np.testing.assert_array_equal(a.labels, assign(X, sw, w1, 1).labels)


def test_the_regroup_and_the_prediction_refuse_bad_shapes():
    from gmmfast._kernels import _kmeans as K
    buf = _buffers()
    with pytest.raises(ValueError, match="gap_in and gap_out"):
        K.lazy_regroup(buf, np.zeros(6), np.zeros(7), True, 1)
    n, k = 1000, 7
    z, zq = np.zeros(k), np.zeros((2, k))
    kept = np.empty(2, np.int64)
    args = [np.zeros(n, np.int32), np.zeros(n), np.zeros(n), np.zeros(n),
            np.zeros(1, np.int64), 64, z, z, z, z, zq, zq, zq, zq, zq, kept, kept.copy()]
    K.predict_lazy_kept(*args)
    for at, bad, match in ((10, np.zeros((3, k)), "candidates"),
                           (7, np.zeros(6), "k entries"),
                           (3, np.zeros(n - 1), "disagree"),
                           (4, np.array([n], np.int64), "starts")):
        with pytest.raises(ValueError, match=match):
            K.predict_lazy_kept(*args[:at], bad, *args[at + 1:])
