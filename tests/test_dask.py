"""GMMKMeans on a dask array, on a real dask.distributed LocalCluster the tests start and stop.

What is identical and what only to rounding, and why:
- Labels are computed per row by the same kernel, so at the same centers they are identical
  whatever the chunking or the workers.
- F(w) is the correctly rounded sum of the costs of CHUNK (256) row chunks: identical to the
  in-memory F when every block starts at a multiple of 256 rows (same chunks), else equal to
  rounding.
- Per-cluster sums are added in a tree fixed by the blocks (never by the workers): identical
  for any number of workers; against memory or another chunking they are summed in another
  order, so centers agree to rounding only.
- The initialisations draw rows by global index (streams keyed by the row), and their totals
  are exact, so for equal weights they are identical for any chunking.
- The random walk gives each block its own slack share and stream: identical for any number
  of workers, not across chunkings.
"""
import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from gmmfast import GMMKMeans  # noqa: E402
from gmmfast.cluster import _dask_blocks  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def mixture(n=6000, d=3, m=12, seed=0, sort=False):
    rng = np.random.default_rng(seed)
    M = rng.normal(scale=10, size=(m, d))
    z = rng.integers(0, m, n)
    if sort:
        z = np.sort(z)
    return M[z] + rng.normal(size=(n, d))


def fitted_pair(X, chunks, **kw):
    """The same estimator fitted in memory and on the dask array."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = GMMKMeans(**kw).fit(X)
        dsk = GMMKMeans(**kw).fit(da.from_array(X, chunks=(chunks, X.shape[1])))
    return mem, dsk


@pytest.mark.parametrize("chunks", [1024, (1000, 17, 2983, 2000)])
def test_eta_one_from_same_centers_matches_memory(client, chunks):
    X = mixture()
    C0 = X[:8].copy()
    mem, dsk = fitted_pair(X, chunks, n_clusters=8, eta=1.0, init=C0, random_state=0)
    assert dsk.n_iter_ == mem.n_iter_
    np.testing.assert_allclose(dsk.cluster_centers_, mem.cluster_centers_, rtol=1e-12,
                               atol=1e-12)
    assert isinstance(dsk.labels_, da.Array)
    np.testing.assert_array_equal(dsk.labels_.compute(), mem.labels_)
    np.testing.assert_allclose(dsk.history_.objective, mem.history_.objective, rtol=1e-12)
    if chunks == 1024:    # blocks start at multiples of 256: the same chunk costs, exactly
        assert dsk.history_.initial_objective == mem.history_.initial_objective
    assert dsk.history_.invariant_violations() == []


def test_float32_stays_float32(client):
    X = mixture().astype(np.float32)
    mem, dsk = fitted_pair(X, 1024, n_clusters=8, eta=1.0, init=X[:8].copy(), random_state=0)
    assert dsk.cluster_centers_.dtype == np.float32
    assert dsk.transform(da.from_array(X, chunks=1024)).dtype == np.float32
    assert dsk.inertia_ == pytest.approx(mem.inertia_, rel=1e-6)
    assert dsk.history_.invariant_violations(rtol=1e-6) == []


@pytest.fixture
def over_the_blocks(monkeypatch):
    """Nothing is gathered to the driver for G-MM's level: the default search's G-MM and
    escapes pass over the blocks, as they do with ``sample_size=None`` on data larger than
    the default coarse level."""
    from gmmfast.cluster import _dask
    monkeypatch.setattr(_dask.DaskRows, "gathers", lambda self, p: False)


@pytest.mark.parametrize("n, d, m, k, seed", [(8000, 4, 30, 20, 0), (8000, 4, 30, 20, 1),
                                              (20_000, 16, 80, 60, 2), (20_000, 16, 80, 60, 3)])
def test_defaults_on_data_no_larger_than_the_coarse_level_are_the_in_memory_fit(
        client, n, d, m, k, seed):
    """Where the coarse level is every row (sample_size="auto": at least 20,000), the rows
    are gathered once and the seeding, G-MM and the escapes run
    as in memory; the polish passes over the blocks to the same fixed point of Lloyd's map.
    (Over the blocks the escapes chose otherwise: up to 2 % apart at 20,000 x 16, k = 60.)"""
    X = mixture(n=n, d=d, m=m, seed=seed)
    mem, dsk = fitted_pair(X, 1500, n_clusters=k, random_state=seed)
    assert [lv.rows for lv in dsk.levels_] == [lv.rows for lv in mem.levels_] == [n] * 2
    np.testing.assert_array_equal(dsk.restarts_.objectives, mem.restarts_.objectives)
    np.testing.assert_array_equal(dsk.levels_[0].centers, mem.levels_[0].centers)
    assert len(dsk.escapes_) == len(mem.escapes_) > 0
    np.testing.assert_array_equal(dsk.labels_.compute(), mem.labels_)
    assert dsk.inertia_ == pytest.approx(mem.inertia_, rel=1e-9)
    assert all(lv.history.invariant_violations() == [] for lv in dsk.levels_)
    # (to rounding: a level's objective is summed over the blocks in another order)
    assert dsk.inertia_ == dsk.levels_[1].objective <= dsk.levels_[0].objective * (1 + 1e-12)


def test_only_the_default_search_on_data_no_larger_than_its_coarse_level_is_gathered():
    """DaskRows.gathers: merge-split (eta < 1) on at most the default coarse level's rows
    (64 per center, at least 20,000), whatever their size in bytes (a sample of larger data
    is as large); never Lloyd, nor larger data (whose fit seeds a sample, and which
    initial_centers seeds over the blocks)."""
    from gmmfast.cluster._dask import MAX_GATHER_BYTES, DaskRows
    from gmmfast.cluster._fit import GMMParams
    small, large = (da.zeros((n, 2), chunks=(5000, 2)) for n in (20_000, 20_001))
    assert DaskRows(small).in_memory(GMMParams(k=8)) is not None      # every row, once
    assert DaskRows(small).in_memory(GMMParams(k=8, eta=1.0)) is None
    assert DaskRows(large).in_memory(GMMParams(k=8)) is None
    assert DaskRows(large).in_memory(GMMParams(k=400)) is not None    # 25,600 rows a level
    huge = DaskRows(da.zeros((1 << 21, 32), chunks=(1 << 19, 32)))   # 512 MiB, not computed
    assert huge.n * huge.d * 8 > MAX_GATHER_BYTES
    assert huge.gathers(GMMParams(k=1 << 15))                         # 2^21 rows a level
    assert not huge.gathers(GMMParams(k=(1 << 15) - 1))               # a sample of them


def test_defaults_over_the_blocks_within_two_percent_of_memory(client, over_the_blocks):
    X = mixture(n=8000, d=4, m=30, seed=0)
    mem, dsk = fitted_pair(X, 1500, n_clusters=20, random_state=0)
    # the same seeding restarts on the gathered rows as in memory, so both runs start from
    # the same centers and neither ends above them; the escapes then draw their proposals on
    # different rows (blocks or memory) and may part
    assert dsk.restarts_ is not None and mem.restarts_ is not None
    np.testing.assert_array_equal(dsk.restarts_.objectives, mem.restarts_.objectives)
    start = mem.restarts_.objectives[mem.restarts_.best]
    assert dsk.inertia_ <= start * (1 + 1e-9) and mem.inertia_ <= start * (1 + 1e-9)
    assert abs(dsk.inertia_ - mem.inertia_) <= 0.02 * mem.inertia_
    assert dsk.history_.invariant_violations() == []
    assert (dsk.history_.bound_at_previous <= dsk.history_.threshold).all()
    assert [lv.rows for lv in dsk.levels_] == [lv.rows for lv in mem.levels_] == [8000] * 2
    assert dsk.inertia_ == dsk.levels_[1].objective <= dsk.levels_[0].objective * (1 + 1e-12)


def test_the_default_fit_on_dask_polishes_to_the_in_memory_fixed_point(client,
                                                                        over_the_blocks):
    """From the same centers without escapes, G-MM's level over the blocks is the in-memory
    one to rounding; the polish over the blocks then ends at the same fixed point of Lloyd's map
    (the labels, the centers to rounding, inertia_ the exact F of every row)."""
    from gmmfast.cluster import inertia
    from gmmfast.metrics import centroids_from_labels
    X = mixture(n=8000, d=4, m=30, seed=0)
    mem, dsk = fitted_pair(X, 1500, n_clusters=20, init=X[:20].copy(), patience=0,
                           random_state=0)
    assert [lv.rows for lv in dsk.levels_] == [lv.rows for lv in mem.levels_] == [8000] * 2
    np.testing.assert_allclose(dsk.levels_[0].centers, mem.levels_[0].centers, rtol=1e-12,
                               atol=1e-12)
    labels = dsk.labels_.compute()
    np.testing.assert_array_equal(labels, mem.labels_)
    np.testing.assert_allclose(dsk.cluster_centers_, mem.cluster_centers_, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(dsk.cluster_centers_, centroids_from_labels(X, labels),
                               rtol=1e-12, atol=1e-12)
    assert dsk.inertia_ == pytest.approx(mem.inertia_, rel=1e-12)
    assert dsk.inertia_ == pytest.approx(inertia(X, dsk.cluster_centers_), rel=1e-12)
    assert dsk.inertia_ <= dsk.levels_[0].objective
    assert all(lv.history.invariant_violations() == [] for lv in dsk.levels_)


def test_the_polish_keeps_bounds_on_the_workers_and_ends_where_full_passes_end(monkeypatch):
    """The polish's blocks keep their labels and Hamerly bounds between passes: Lloyd's
    passes from the same centers give the same labels, centers, objectives and iterations as
    full passes, searching fewer rows after the first (synchronous scheduler: the searches
    are counted in this process)."""
    import dask
    from gmmfast.cluster import _dask_family
    from gmmfast.core import generalized_mm
    X = mixture(n=6000, d=4, m=30, seed=8)
    data = _dask_blocks.as_blocks(da.from_array(X, chunks=(1000, 4)), None)
    searched = []
    assign = _dask_family.assign
    monkeypatch.setattr(_dask_family, "assign", lambda *a, **kw: (
        lambda out: searched.append(out.searched) or out)(assign(*a, **kw)))
    runs = []
    with dask.config.set(scheduler="synchronous"):
        for bounded in (False, True):
            family = _dask_family.DaskSumsFamily(data, n_neighbors=8, relocate_empty=False,
                                                 seed=0, bounded=bounded)
            runs.append(generalized_mm(family, X[:20].copy(), eta=1.0, tol=0.0, max_iter=100,
                                       selection="mm"))
    full, bounded = runs
    assert full.n_iter == bounded.n_iter >= 5
    np.testing.assert_array_equal(full.w, bounded.w)
    np.testing.assert_array_equal(full.history.objective, bounded.history.objective)
    # (the full passes are pass_block's: never counted) 6 blocks per bounded pass
    per_pass = np.array(searched).reshape(bounded.n_iter + 1, 6).sum(axis=1)
    assert per_pass[0] == 6000 and per_pass[-3:].max() < 600


class _StatesHeld(distributed.WorkerPlugin):
    """Records the most polish states (BlockBounds) a worker held at once."""

    def setup(self, worker):
        self.worker = worker
        worker.most_states = 0

    def transition(self, key, start, finish, **kwargs):
        from gmmfast.cluster._dask_family import BlockBounds
        if finish == "memory":
            held = sum(isinstance(v, BlockBounds) for v in list(self.worker.data.values()))
            self.worker.most_states = max(self.worker.most_states, held)


def test_the_polish_holds_one_state_per_block_on_the_workers():
    """A pass's tasks hold the last pass's states, the driver does not: each is released once
    its block's new state is computed, so the workers hold about one generation of states (20
    bytes a row), not two or more (the driver's references kept them to the pass's end)."""
    X = mixture(n=30_000, d=4, m=40, seed=0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        c.register_plugin(_StatesHeld())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = GMMKMeans(12, random_state=0).fit(da.from_array(X, chunks=(3000, 4)))
        most = c.run(lambda dask_worker: dask_worker.most_states)
    assert len(m.levels_) == 2 and m.levels_[-1].rows == 30_000 and m.levels_[-1].n_iter >= 3
    # (a release reaches a worker after the scheduler learns the new state is computed, so
    # a few more are held for a moment; two generations held to the end of the pass are 20
    # at least: 29 before the tasks alone held the last pass's states)
    assert 10 <= sum(most.values()) < 20


def _fits(X, chunks, configs):
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    return [GMMKMeans(**kw).fit(Xd) for kw in configs]


def test_identical_for_one_and_two_workers(client, over_the_blocks):
    X = mixture(n=5000, seed=3)
    configs = [dict(n_clusters=8, eta=1.0, random_state=1),
               dict(n_clusters=8, random_state=2, patience=5),
               dict(n_clusters=8, eta=0.1, selection="random", walk_steps=20000, max_iter=15,
                    random_state=3),
               dict(n_clusters=8, init="k-means||", random_state=4, max_iter=5, patience=5)]
    two = _fits(X, 700, configs)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        one = _fits(X, 700, configs)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
        assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_
        np.testing.assert_array_equal(a.history_.bound, b.history_.bound)
        np.testing.assert_array_equal(a.history_.threshold, b.history_.threshold)
    assert two[2].history_.accepted.sum() > 0          # the random walks moved points
    assert two[2].history_.invariant_violations() == []


def test_chunkings(client):
    X = mixture(n=6000, seed=4)
    chunkings = [1024, (2560, 512, 2928), (1000, 333, 2667, 2000)]
    blocks = [_dask_blocks.as_blocks(da.from_array(X, chunks=(c, 3)), None) for c in chunkings]
    # initialisations: identical for every chunking (rows drawn by global index)
    inits = [_dask_blocks.kmeans_parallel_blocks(b, 8, np.random.default_rng(0)) for b in blocks]
    samples = [_dask_blocks.draw_sample(b, 900, 8, np.random.default_rng(0))[0] for b in blocks]
    for c, s in zip(inits[1:], samples[1:]):
        np.testing.assert_array_equal(c, inits[0])
        np.testing.assert_array_equal(s, samples[0])
    assert np.unique(inits[0], axis=0).shape[0] == 8
    # Lloyd from those centers: same labels and iterations, centers to rounding; F(w_0)
    # exactly equal where blocks start at multiples of 256 rows
    fits = [GMMKMeans(8, eta=1.0, init=inits[0]).fit(da.from_array(X, chunks=(c, 3)))
            for c in chunkings]
    for f in fits[1:]:
        assert f.n_iter_ == fits[0].n_iter_
        np.testing.assert_allclose(f.cluster_centers_, fits[0].cluster_centers_, rtol=1e-12)
        np.testing.assert_array_equal(f.labels_.compute(), fits[0].labels_.compute())
    assert fits[1].history_.initial_objective == fits[0].history_.initial_objective
    assert fits[2].history_.initial_objective == pytest.approx(
        fits[0].history_.initial_objective, rel=1e-13)


def test_empty_and_small_chunks_and_clusters_in_one_chunk(client, over_the_blocks):
    # rows sorted by mixture component: most clusters live in one block only; blocks of
    # zero rows and blocks smaller than k
    X = mixture(n=3000, d=2, m=6, seed=5, sort=True)
    chunks = (0, 5, 1195, 0, 3, 1797, 0)
    C0 = X[::375].copy()              # 8 centers, each from one block's rows
    mem, dsk = fitted_pair(X, chunks, n_clusters=8, eta=1.0, init=C0, random_state=0)
    np.testing.assert_array_equal(dsk.labels_.compute(), mem.labels_)
    np.testing.assert_allclose(dsk.cluster_centers_, mem.cluster_centers_, rtol=1e-12)
    for kw in (dict(patience=5), dict(selection="random", eta=0.2, walk_steps=5000, max_iter=10)):
        m = GMMKMeans(8, random_state=1, **kw).fit(da.from_array(X, chunks=(chunks, 2)))
        assert m.history_.invariant_violations() == []
        assert np.isfinite(m.cluster_centers_).all()
        sizes = np.bincount(m.labels_.compute(), minlength=8)
        assert sizes.sum() == 3000


def test_predict_transform_score_are_lazy_and_agree(client):
    X = mixture()
    Xd = da.from_array(X, chunks=(1024, 3))
    m = GMMKMeans(8, random_state=0, patience=5).fit(Xd)
    labels, dist = m.predict(Xd), m.transform(Xd)
    assert isinstance(labels, da.Array) and isinstance(dist, da.Array)
    np.testing.assert_array_equal(labels.compute(), m.predict(X))
    np.testing.assert_array_equal(dist.compute(), m.transform(X))
    assert m.score(Xd) == m.score(X)              # same 256-row chunks: exactly equal
    assert m.score(Xd) == -m.inertia_
    w = np.random.default_rng(0).uniform(0, 2, X.shape[0])
    assert m.score(Xd, sample_weight=da.from_array(w, chunks=1024)) == m.score(X,
                                                                              sample_weight=w)


def _logged_block(block, path, block_info=None):
    with open(path, "a") as f:
        f.write(f"{block_info[0]['chunk-location'][0]}\n")
    return block


@pytest.mark.parametrize("kw", [dict(eta=1.0), dict(patience=5), dict(selection="random", eta=0.1,
                                                              walk_steps=3000)])
def test_one_pass_over_the_blocks_per_iteration(client, over_the_blocks, tmp_path, kw):
    X = mixture(n=4000)
    log = tmp_path / "reads.txt"
    log.touch()
    Xd = da.from_array(X, chunks=(1000, 3)).map_blocks(_logged_block, str(log),
                                                       dtype=X.dtype)
    m = GMMKMeans(8, init=X[:8].copy(), max_iter=4, tol=0, random_state=0, **kw).fit(Xd)
    reads = np.bincount(np.loadtxt(log, dtype=int), minlength=4)
    # the pass at w_0, then one per iteration; nothing else reads X (labels_ is lazy);
    # each escape phase (merge-split) is a run of its own, and its re-seeded center may be
    # read from the block holding it; the default selection's polish (Lloyd's passes on the
    # same rows) is a run of its own too
    passes = m.history_.n_iter + 1 + sum(e.history.n_iter + 1 for e in m.escapes_)
    passes += sum(lv.history.n_iter + 1 for lv in m.levels_[1:])
    assert (reads >= passes).all() and reads.sum() <= 4 * passes + len(m.escapes_)


def test_a_gathered_level_reads_the_blocks_once(client, tmp_path):
    """The default fit on data no larger than its coarse level: one read of every block to
    gather the rows for the seeding, G-MM and the escapes, then the polish's passes."""
    X = mixture(n=4000)
    log = tmp_path / "reads.txt"
    log.touch()
    Xd = da.from_array(X, chunks=(1000, 3)).map_blocks(_logged_block, str(log),
                                                       dtype=X.dtype)
    m = GMMKMeans(8, random_state=0).fit(Xd)
    assert len(m.escapes_) > 0 and m.restarts_ is not None
    reads = np.bincount(np.loadtxt(log, dtype=int), minlength=4)
    polish = m.levels_[1].history.n_iter + 1
    np.testing.assert_array_equal(reads, 1 + polish)


def test_kmeans_parallel_finds_every_distinct_point(client):
    rng = np.random.default_rng(6)
    P = rng.normal(scale=5, size=(10, 2))
    X = P[rng.integers(0, 10, 4000)]
    m = GMMKMeans(10, init="k-means||", eta=1.0, random_state=0).fit(
        da.from_array(X, chunks=(700, 2)))
    assert np.unique(m.cluster_centers_, axis=0).shape[0] == 10
    assert m.inertia_ == pytest.approx(0.0, abs=1e-9)


def test_sample_weight_dask_numpy_and_memory_agree(client):
    X = mixture()
    w = np.random.default_rng(1).integers(0, 4, X.shape[0]).astype(float)
    Xd = da.from_array(X, chunks=(1024, 3))
    kw = dict(n_clusters=8, eta=1.0, init=X[:8].copy())
    a = GMMKMeans(**kw).fit(Xd, sample_weight=w)
    b = GMMKMeans(**kw).fit(Xd, sample_weight=da.from_array(w, chunks=1024))
    mem = GMMKMeans(**kw).fit(X, sample_weight=w)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_allclose(a.cluster_centers_, mem.cluster_centers_, rtol=1e-12)
    assert a.inertia_ == pytest.approx(mem.inertia_, rel=1e-12)


@pytest.mark.parametrize("make, params, match", [
    (lambda X: da.from_array(np.where(np.arange(X.size).reshape(X.shape) == 7, np.nan, X),
                             chunks=(500, 3)), {}, "NaN"),
    (lambda X: da.from_array(np.where(np.arange(X.size).reshape(X.shape) == 7, 1e160, X),
                             chunks=(500, 3)), {}, r"values up to 1e\+160; squared distances "
                                                   "overflow float64"),
    (lambda X: da.from_array(X[:, 0], chunks=500), {}, "2-D"),
    (lambda X: da.from_array(X, chunks=(500, 3)), dict(selection="balanced"), "selection"),
    (lambda X: da.from_array(X, chunks=(500, 3)), dict(init_size=None), "init_size"),
    (lambda X: da.from_array(X, chunks=(500, 3)), dict(selection="random", sampler="gibbs"),
     "sampler"),
    (lambda X: da.from_array(X, chunks=(500, 3)), dict(eta=2.0), "eta"),
])
def test_bad_input_raises_and_leaves_no_state(client, make, params, match):
    X = mixture(n=2000)
    m = GMMKMeans(8, random_state=0, **params)
    with pytest.raises(ValueError, match=match):
        m.fit(make(X))
    assert not hasattr(m, "cluster_centers_")


def test_errors_in_tasks_are_raised_clean_from_the_workers(client):
    """A check's error raised on a worker: the same type and message, without the
    scheduler's frames."""
    X = mixture(n=2000)
    X[1500, 1] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinity") as e:
        GMMKMeans(4, random_state=0).fit(da.from_array(X, chunks=(500, 3)))
    assert not [t for t in e.traceback if "site-packages/distributed" in str(t.path)
                or "site-packages/dask" in str(t.path)]
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_predict_checks_width(client):
    X = mixture(n=2000)
    m = GMMKMeans(4, random_state=0, max_iter=3).fit(da.from_array(X, chunks=(500, 3)))
    with pytest.raises(ValueError, match="features"):
        m.predict(da.from_array(X[:, :2], chunks=(500, 2)))
    wide = da.from_array(X, chunks=(500, 1))     # columns in chunks are merged, not refused
    np.testing.assert_array_equal(m.predict(wide).compute(), m.predict(X))


def test_import_gmmfast_does_not_import_dask():
    code = "import sys, gmmfast; from gmmfast import GMMKMeans; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_cli_cluster_on_a_scheduler_reads_npy_in_blocks(client, tmp_path, capsys):
    from gmmfast import cli
    X = mixture(n=3000, d=2, m=3, seed=7).astype(np.float32)
    path = tmp_path / "points.npy"
    np.save(path, X)
    labels, centers = tmp_path / "labels.txt", tmp_path / "centers.csv"
    address = client.scheduler.address
    rc = cli.main(["cluster", str(path), "-k", "3", "--eta", "1", "--scheduler", address,
                   "--chunk-mb", "0.01", "-o", str(labels), "--centers", str(centers)])
    out = capsys.readouterr().out
    assert rc == 0 and "on Dask, 2 workers, 3 row blocks" in out
    C = np.loadtxt(centers, delimiter=",", ndmin=2)
    nearest = np.argmin(((X[:, None, :] - C[None].astype(np.float32)) ** 2).sum(-1), axis=1)
    assert (np.loadtxt(labels, dtype=int) == nearest).mean() > 0.999   # centers as printed
    for argv, match in ((["--scheduler", address, "--workers", "2"], "not both"),
                        (["--workers", "0"], "--workers must be >= 1"),
                        (["--scheduler", address, "--chunk-mb", "0"], "--chunk-mb")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["cluster", str(path), "-k", "3"] + argv)
        assert exit_.value.code == 2 and match in capsys.readouterr().err


def test_public_seeding_and_inertia_take_a_dask_array(client):
    from gmmfast.cluster import inertia, initial_centers
    X = mixture(n=3000)
    Xd = da.from_array(X, chunks=(700, 3))
    w0 = initial_centers(Xd, 8, "forgy", random_state=3)
    np.testing.assert_array_equal(w0, initial_centers(X, 8, "forgy", random_state=3))
    assert inertia(Xd, w0) == inertia(X, w0)
    with pytest.raises(ValueError, match="init_size=None with init='k-means\\+\\+'"):
        initial_centers(Xd, 8, init_size=None)


@pytest.mark.parametrize("init_size", ["auto", 6000])
def test_coarse_to_fine_on_dask_is_the_in_memory_fit(client, init_size):
    """The sample is drawn by global row across the blocks, the coarse level runs in memory on
    the driver, the fine level passes over the blocks: the fit of the in-memory rows (also
    when k-means++ seeds on a larger sample of its own)."""
    X = mixture(n=20_000)
    mem = GMMKMeans(12, sample_size=2000, init_size=init_size, random_state=5).fit(X)
    dsk = GMMKMeans(12, sample_size=2000, init_size=init_size,
                    random_state=5).fit(da.from_array(X, chunks=(3000, 3)))
    assert [lv.rows for lv in dsk.levels_] == [lv.rows for lv in mem.levels_]
    np.testing.assert_array_equal(dsk.levels_[0].centers, mem.levels_[0].centers)
    assert dsk.inertia_ == pytest.approx(mem.inertia_, rel=1e-9)
    np.testing.assert_array_equal(dsk.labels_.compute(), mem.labels_)
    assert all(lv.history.invariant_violations() == [] for lv in dsk.levels_)


def test_explicit_restarts_refuse_to_gather_a_large_dask_array():
    """restarts=int gathers every row to the driver: refused above 256 MiB, before any work
    (the array below is never computed)."""
    X = da.zeros((1 << 25, 2), chunks=(1 << 22, 2))
    with pytest.raises(ValueError, match="restarts=5 on a dask array gathers"):
        GMMKMeans(4, restarts=5).fit(X)
