"""GMMKMeans on a dask array refuses bad input as a fit in memory does: the same error type
and message, checked in the passes it makes anyway (on the local synchronous scheduler
unless a test says otherwise; tests/test_dask.py runs the fits on a distributed cluster)."""
import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from gmmfast import GMMKMeans  # noqa: E402
from gmmfast.cluster import initial_centers  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def mixture(n=2000, d=3, m=6, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.normal(scale=10, size=(m, d))
    return M[rng.integers(0, m, n)] + rng.normal(size=(n, d))


def refusal(fit, *args, **kw):
    """(type, message) of the error ``fit`` raises."""
    with pytest.raises((ValueError, TypeError)) as e:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(*args, **kw)
    return e.type, str(e.value)


def same_refusal(X, Xd, est=None, **kw):
    """The in-memory fit's and the dask fit's errors, which must be equal; the estimator
    keeps no fitted state."""
    est = est or GMMKMeans(4, random_state=0)
    mem = refusal(est.fit, X, **kw.get("mem", {}))
    dsk = refusal(est.fit, Xd, **kw.get("dsk", {}))
    assert dsk == mem
    assert not hasattr(est, "cluster_centers_")
    return mem


@pytest.mark.parametrize("scale, dtype, match", [
    (1e-160, np.float64, "underflow float64"),
    (1e-18, np.float32, "underflow float32"),
    (1e151, np.float64, "sum of squared distances"),
])
def test_whole_data_limits_as_in_memory(scale, dtype, match):
    X = (mixture() * scale).astype(dtype)
    for chunks in (500, (1, 1999)):
        _, message = same_refusal(X, da.from_array(X, chunks=(chunks, 3)))
        assert match in message
    assert refusal(initial_centers, da.from_array(X, chunks=(500, 3)), 4, random_state=0) \
        == refusal(initial_centers, X, 4, random_state=0)


def test_weighted_objective_range_as_in_memory():
    X = mixture() * 1e140
    w = np.full(X.shape[0], 1e30)
    Xd = da.from_array(X, chunks=(500, 3))
    for sw in (w, da.from_array(w, chunks=700)):
        _, message = same_refusal(X, Xd, mem=dict(sample_weight=w), dsk=dict(sample_weight=sw))
        assert "sample_weight summing to" in message


def test_whole_data_limits_leave_valid_data_alone():
    """Tiny values in one block, large in another: the whole data is within the limits (as
    in memory), though one block alone is not; predict/score/inertia are not held to them."""
    X = mixture()
    X[:500] *= 1e-160
    m = GMMKMeans(4, random_state=0, max_iter=5).fit(da.from_array(X, chunks=(500, 3)))
    tiny = da.from_array(X[:500], chunks=(100, 3))
    assert m.predict(tiny).compute().shape == (500,)
    assert np.isfinite(m.score(tiny))


def test_sparse_blocks_refused_as_in_memory():
    sparse = pytest.importorskip("scipy.sparse")
    X = mixture()
    mem = refusal(GMMKMeans(4).fit, sparse.csr_matrix(X))
    assert mem[0] is TypeError and "X: sparse" in mem[1]
    blocks = da.from_array(X, chunks=(500, 3))
    declared = blocks.map_blocks(sparse.csr_matrix)              # its meta is sparse
    hidden = blocks.map_blocks(sparse.csr_matrix, meta=np.empty((0, 0)))    # declared dense
    for Xd in (declared, hidden):
        assert refusal(GMMKMeans(4).fit, Xd) == mem
    assert refusal(GMMKMeans(4, init="k-means||").fit, hidden) == mem


@pytest.mark.parametrize("wrong, found", [
    (lambda b: b.astype(np.float32), "dtype float32 where it declares float64"),
    (lambda b: b[:-1], r"shape \(499, 3\) where it declares \(500, 3\)"),
    (lambda b: b[:, :2], r"shape \(500, 2\) where it declares \(500, 3\)"),
])
@pytest.mark.parametrize("kw", [{}, dict(init="k-means||", sample_size=None),
                                dict(selection="random", eta=0.5, init="forgy"),
                                dict(sample_size=None, init="random-partition")])
def test_misdeclared_blocks_are_named(wrong, found, kw):
    """Blocks whose shape or dtype is not what the dask array declares (map_blocks with a
    wrong chunks= or dtype=) are refused in the first pass, naming X, the block, what is
    declared and what was found."""
    X = mixture(n=2000)
    Xd = da.from_array(X, chunks=(500, 3)).map_blocks(wrong, dtype=np.float64,
                                                      chunks=(500, 3))
    with pytest.raises(ValueError, match="where it declares") as e:
        GMMKMeans(4, random_state=0, max_iter=3, **kw).fit(Xd)
    if kw.get("init") == "forgy":      # k rows read before the first pass, if they show it
        assert e.match(r"^X: (rows read from the dask array have |block \d of the dask)")
    else:
        assert e.match(r"X: block \d of the dask array .* has " + found)


@pytest.mark.parametrize("init", ["k-means++", "k-means||"])
def test_seeding_on_a_sample_is_the_in_memory_seeding(init):
    """Valid data (a few large rows, the rest tiny): a seeding sample that misses the large
    rows is seeded, not refused as underflowing (the whole data was checked); and the
    sample's seeding is the internal one an in-memory fit runs."""
    X = mixture(n=50000) * 1e-150      # more rows than a level gathered to the driver
    X[:3] = 1.0
    Xd = da.from_array(X, chunks=(5000, 3))
    C = initial_centers(Xd, 3, init=init, init_size=200, random_state=0)
    assert C.shape == (3, 3) and np.isfinite(C).all()
    m = GMMKMeans(3, init=init, init_size=200, random_state=0, max_iter=3).fit(Xd)
    assert np.isfinite(m.inertia_)


def _weights(kind, n):
    w = np.ones(n)
    if kind == "2-D":
        return w[:, None]
    if kind == "short":
        return w[:-1]
    if kind == "empty":
        return w[:0]
    if kind == "complex":
        return w + 1j
    if kind == "beyond float32":
        return w * 1e39
    w[7] = {"nan": np.nan, "inf": np.inf, "negative": -1.0}.get(kind, w[7])
    return w * 0 if kind == "zero" else w


@pytest.mark.parametrize("kind", ["2-D", "short", "empty", "complex", "nan", "inf", "negative",
                                  "zero", "beyond float32"])
def test_dask_sample_weight_refused_as_in_memory(kind):
    X = mixture().astype(np.float32)
    w = _weights(kind, X.shape[0])
    chunks = max(1, min(700, w.shape[0]))
    wd = da.from_array(w, chunks=(chunks,) + w.shape[1:])
    for Xd in (da.from_array(X, chunks=(500, 3)),):
        same_refusal(X, Xd, mem=dict(sample_weight=w), dsk=dict(sample_weight=wd))


def test_dask_sample_weight_is_read_once():
    """The weights' graph is computed once (checked, then persisted), not in every pass."""
    X = mixture()
    w = np.random.default_rng(1).random(X.shape[0])
    reads = []

    def read(b):
        reads.append(b.shape[0])
        return b

    wd = da.from_array(w, chunks=500).map_blocks(read, dtype=w.dtype)
    m = GMMKMeans(4, eta=1.0, init="forgy", random_state=0, max_iter=20, tol=0)
    m.fit(da.from_array(X, chunks=(500, 3)), sample_weight=wd)
    assert m.n_iter_ > 2 and sum(reads) == X.shape[0]
    mem = GMMKMeans(4, eta=1.0, init="forgy", random_state=0, max_iter=20, tol=0)
    mem.fit(X, sample_weight=w)
    np.testing.assert_allclose(m.cluster_centers_, mem.cluster_centers_, rtol=1e-10)


def _no_scheduler_frames(excinfo):
    paths = [str(entry.path) for entry in excinfo.traceback]
    assert not [p for p in paths if "site-packages/dask" in p
                or "site-packages/distributed" in p], paths
    exc = excinfo.value
    assert exc.__cause__ is None and exc.__suppress_context__


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
@pytest.mark.parametrize("bad, error, match", [
    (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 1500, np.nan, X), ValueError,
     "X contains NaN or infinity"),
    (lambda X: X * 1e160, ValueError, "squared distances overflow"),
])
def test_errors_in_tasks_are_raised_clean(scheduler, bad, error, match):
    """A check's error raised in a task comes to the user as a copy (same type, same
    message) raised on the driver: no scheduler frames, no chained exceptions."""
    Xd = da.from_array(bad(mixture()), chunks=(500, 3))
    with dask.config.set(scheduler=scheduler):
        with pytest.raises(error, match=match) as e:
            GMMKMeans(4, random_state=0).fit(Xd)
    _no_scheduler_frames(e)


def test_an_in_memory_fit_drops_the_last_dask_fits_record():
    X = mixture()
    m = GMMKMeans(4, random_state=0, max_iter=3).fit(da.from_array(X, chunks=(500, 3)))
    assert m._dask_passes
    m.fit(X)
    assert not hasattr(m, "_dask_passes")
