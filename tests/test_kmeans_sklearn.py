"""gmmfast.KMeans, the drop-in replacement for scikit-learn's KMeans: scikit-learn's own test
module run against it, and its results from the same initial centers compared with
scikit-learn's."""
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.cluster import KMeans as SKKMeans
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans, KMeans
from gmmfast._validation import ConvergenceWarning, NotFittedError
from gmmfast.cluster._pass import assign
from gmmfast.cluster._sparse import SparseBounds, check_csr, csr_assign

# -- scikit-learn's test module ----------------------------------------------------------

SKLEARN_TESTS = Path(sklearn.__file__).parent / "cluster" / "tests" / "test_k_means.py"
IMPORT = "from sklearn.cluster import KMeans, MiniBatchKMeans, k_means, kmeans_plusplus\n"
REPLACEMENT = ("from sklearn.cluster import MiniBatchKMeans, k_means, kmeans_plusplus\n"
               "from gmmfast import KMeans\n")
#: The one place where tests of scikit-learn's module are left out, with the reason. Every
#: test that calls KMeans runs. Left out: the tests of MiniBatchKMeans (scikit-learn's own
#: class, which the rewritten import does not replace): they exercise nothing of gmmfast and
#: take 94 % of the module's time (about 140 of 150 s on the 2-core machine).
DESELECT = {"not MiniBatchKMeans and not minibatch":
            "tests of scikit-learn's MiniBatchKMeans only (not replaced, nothing of gmmfast)"}
CHECK = '''

def test_the_kmeans_under_test_is_gmmfasts():
    assert KMeans.__module__.startswith("gmmfast."), KMeans.__module__
'''


def test_scikit_learn_kmeans_test_module_passes(tmp_path):
    """scikit-learn's installed test_k_means.py with `KMeans` imported from gmmfast (its
    fixtures from sklearn.conftest, float32 cases switched on) passes with no failure."""
    text = SKLEARN_TESTS.read_text()
    assert text.count(IMPORT) == 1, "scikit-learn's import of KMeans changed; update IMPORT"
    path = tmp_path / "test_k_means_gmmfast.py"
    path.write_text(text.replace(IMPORT, REPLACEMENT) + CHECK)
    env = dict(os.environ, SKLEARN_RUN_FLOAT32_TESTS="1")
    cmd = [sys.executable, "-m", "pytest", "-p", "sklearn.conftest", "-p", "no:cacheprovider",
           "-q", "-rfEs", "--rootdir", str(tmp_path), str(path)]
    for expression in DESELECT:
        cmd += ["-k", expression]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert "failed" not in summary and "error" not in summary and "skipped" not in summary, \
        summary
    assert passed >= 150, summary      # 190 with scikit-learn 1.9 (93 MiniBatchKMeans left out)


# -- the same results as scikit-learn from the same initial centers ---------------------

def _data_sets():
    rng = np.random.default_rng(0)
    centers = rng.uniform(-20, 20, size=(30, 8))
    yield "blobs", centers[rng.integers(30, size=5000)] + rng.normal(scale=3, size=(5000, 8)), 30
    yield "uniform-2d", rng.uniform(size=(4000, 2)), 50
    yield "normal-64d", rng.normal(size=(3000, 64)), 16
    yield "offset", rng.normal(size=(3000, 5)) + 1e4, 10
    yield "sparse", sp.random(2000, 300, density=0.03, random_state=4, format="csr"), 12
    # 7 of 12 initial centers far from the data: empty clusters relocated at once
    yield "far-init", rng.normal(size=(2000, 3)) * 4 + rng.integers(0, 5, size=(2000, 1)) * 8, 12


def _init(name, X, k, dtype):
    rng = np.random.default_rng(7)
    rows = rng.choice(X.shape[0], k, replace=False)
    init = X[rows].toarray() if sp.issparse(X) else X[rows]
    if name == "far-init":
        init[5:] = rng.normal(size=(k - 5, X.shape[1])) * 100
    return np.asarray(init, dtype=dtype)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("data", list(_data_sets()), ids=lambda d: d[0])
def test_same_labels_centers_and_iterations_as_scikit_learn(data, dtype, weighted):
    name, X, k = data
    X = X.astype(dtype)
    init = _init(name, X, k, dtype)
    sw = np.random.default_rng(1).uniform(0.2, 3, X.shape[0]) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = SKKMeans(k, init=init, n_init=1).fit(X, sample_weight=sw)
        ours = KMeans(k, init=init, n_init=1).fit(X, sample_weight=sw)
    assert ours.n_iter_ == ref.n_iter_ > 3
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.cluster_centers_.dtype == dtype
    scale = np.abs(ref.cluster_centers_).max()
    eps = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0,
                               atol=eps * scale)
    # scikit-learn sums float32 costs in float32, we in float64
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-5 if dtype == np.float32 else 1e-12)


def test_relocation_takes_the_farthest_points_as_scikit_learn():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [30.0]])
    init = np.array([[1.0], [100.0], [200.0]])          # two clusters empty at once
    ref = SKKMeans(3, init=init, n_init=1, max_iter=1).fit(X)
    ours = KMeans(3, init=init, n_init=1, max_iter=1).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_[1:], [[30.0], [11.0]])


@pytest.mark.parametrize("algorithm", ["lloyd", "elkan"])
@pytest.mark.parametrize("tol", [1e-2, 0])
def test_verbose_lines_are_scikit_learns(algorithm, tol, capsys):
    X = np.random.default_rng(0).normal(size=(1000, 4))
    init = X[:6].copy()
    SKKMeans(6, init=init, n_init=1, tol=tol, verbose=1, algorithm=algorithm).fit(X)
    ref = capsys.readouterr().out
    KMeans(6, init=init, n_init=1, tol=tol, verbose=1, algorithm=algorithm).fit(X)
    ours = capsys.readouterr().out

    def shape(text):
        return re.sub(r"[-+0-9.e]+(?=[ .\n]|$)", "#", text)
    assert shape(ours) == shape(ref)
    assert ours.count("\n") == ref.count("\n") > 3


# -- algorithm="gmm" ------------------------------------------------------------------------

def test_gmm_is_gmmkmeans_from_the_same_initial_centers():
    rng = np.random.default_rng(3)
    means = rng.uniform(-10, 10, size=(40, 2))
    X = means[rng.integers(40, size=4000)] + rng.normal(size=(4000, 2))
    init = X[rng.choice(4000, 40, replace=False)]
    ours = KMeans(40, init=init, n_init=1, algorithm="gmm", random_state=5).fit(X)
    ref = GMMKMeans(40, init=init, random_state=5).fit(X)
    # KMeans(algorithm="gmm") is GMMKMeans's G-MM level; GMMKMeans then polishes with
    # Lloyd's passes (levels_[1]), which never end above it. The two paths round an escape
    # phase's objective differently in the last bit, which can change the order in which the
    # re-splits visit equal-cost groups: the same clustering, its clusters numbered apart
    gmm = ref.levels_[0]
    order = lambda C: C[np.lexsort(C.T[::-1])]
    np.testing.assert_allclose(order(ours.cluster_centers_), order(gmm.centers), rtol=1e-9,
                               atol=1e-9)
    nearest = ((X[:, None] - ours.cluster_centers_[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(ours.labels_, nearest)
    ref_labels = ((X[:, None] - gmm.centers[None]) ** 2).sum(-1).argmin(1)
    assert len(set(zip(ours.labels_, ref_labels))) == 40      # one cluster for one cluster
    assert ours.n_iter_ == gmm.n_iter == ref.n_iter_ - ref.levels_[1].n_iter
    assert ours.inertia_ == pytest.approx(gmm.objective, rel=1e-9)
    assert ref.inertia_ <= ours.inertia_ * (1 + 1e-12)
    lloyd = KMeans(40, init=init, n_init=1).fit(X)
    assert ours.inertia_ < lloyd.inertia_


def test_gmm_uses_kmeans_initialisation_and_n_init():
    X = np.random.default_rng(4).normal(size=(2000, 3))
    one = KMeans(10, algorithm="gmm", random_state=0, init="random", n_init=1).fit(X)
    three = KMeans(10, algorithm="gmm", random_state=0, init="random", n_init=3).fit(X)
    assert three._n_init == 3 and three.inertia_ <= one.inertia_
    assert KMeans(10, algorithm="gmm", init="random").fit(X)._n_init == 10


def test_gmm_on_sparse_input_is_a_clear_error():
    X = sp.random(50, 20, density=0.3, random_state=0, format="csr")
    with pytest.raises(ValueError, match="algorithm='gmm' does not support sparse"):
        KMeans(3, algorithm="gmm").fit(X)


# -- scikit-learn's behaviour around the fit --------------------------------------------------

def test_copy_x():
    X = np.random.default_rng(0).normal(size=(500, 3)) + 5.0
    before = X.copy()
    KMeans(4, random_state=0).fit(X)
    np.testing.assert_array_equal(X, before)                  # a copy was centered
    KMeans(4, random_state=0, copy_x=False).fit(X)
    np.testing.assert_allclose(X, before, rtol=0, atol=1e-12)  # centered in place, restored


def test_float32_kept_and_integers_become_float64():
    X = np.random.default_rng(0).normal(size=(300, 3))
    for dtype, expected in ((np.float32, np.float32), (np.float64, np.float64),
                            (np.int64, np.float64)):
        km = KMeans(3, random_state=0).fit((X * 10).astype(dtype))
        assert km.cluster_centers_.dtype == expected
        assert km.transform((X * 10).astype(dtype)).dtype == expected
        assert km.labels_.dtype == np.int32


def test_predict_takes_no_sample_weight_score_does():
    X = np.random.default_rng(0).normal(size=(300, 3))
    km = KMeans(3, random_state=0).fit(X)
    with pytest.raises(TypeError):
        km.predict(X, sample_weight=np.ones(300))
    w = np.random.default_rng(1).uniform(size=300)
    d2 = ((X - km.cluster_centers_[km.labels_]) ** 2).sum(1)
    assert km.score(X, sample_weight=w) == pytest.approx(-(w * d2).sum())
    np.testing.assert_array_equal(km.predict(X), km.labels_)


def test_n_init_keeps_the_lowest_inertia_and_random_init_uses_weights():
    X = np.random.default_rng(0).normal(size=(400, 2))
    runs = [KMeans(12, init="random", n_init=1, random_state=s).fit(X).inertia_
            for s in range(5)]
    assert KMeans(12, init="random", n_init=20, random_state=0).fit(X).inertia_ <= max(runs)
    w = np.zeros(400)
    w[:12] = 1.0
    km = KMeans(12, init="random", n_init=1, max_iter=1, tol=0, random_state=0)
    centers = km._init_centroids(X, None, "random", np.random.default_rng(0), w)
    assert sorted(map(tuple, centers)) == sorted(map(tuple, X[:12]))


def test_callable_init_gets_a_random_state_and_the_centered_data():
    X = np.random.default_rng(0).normal(size=(200, 2)) + 100.0
    seen = []

    def init(data, k, random_state):
        seen.append((float(np.abs(data.mean(0)).max()), type(random_state)))
        return data[random_state.permutation(data.shape[0])[:k]]
    km = KMeans(3, init=init, n_init=2, random_state=np.random.RandomState(0)).fit(X)
    assert len(seen) == 2 and all(m < 1e-9 and t is np.random.RandomState for m, t in seen)
    assert km._n_init == 2


def test_feature_names_and_set_output():
    import pandas as pd
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    km = KMeans(4, random_state=0).fit(df)
    np.testing.assert_array_equal(km.feature_names_in_, ["a", "b", "c"])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        km.predict(df.to_numpy())
    with pytest.raises(ValueError, match="feature names should match"):
        km.predict(df.rename(columns={"a": "z"}))
    out = km.set_output(transform="pandas").transform(df)
    assert list(out.columns) == ["kmeans0", "kmeans1", "kmeans2", "kmeans3"]
    assert out.index.equals(df.index)
    assert isinstance(km.fit_transform(df), pd.DataFrame)
    assert isinstance(km.set_output(transform="default").transform(df), np.ndarray)
    assert not hasattr(KMeans(4).fit(df.to_numpy()), "feature_names_in_")


def test_same_result_for_one_and_two_threads():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60_000, 6))
    Xs = sp.random(30_000, 400, density=0.02, random_state=0, format="csr")
    for data in (X, Xs):
        fits = []
        for threads in (1, 2):
            with threadpool_limits(limits=threads, user_api="openmp"):
                fits.append(KMeans(20, random_state=3, max_iter=20).fit(data))
        np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
        np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
        assert fits[0].inertia_ == fits[1].inertia_


@pytest.mark.parametrize("params, match", [
    ({"n_clusters": 0}, "n_clusters"), ({"n_clusters": 2.5}, "n_clusters"),
    ({"init": "forgy"}, "init must be one of"), ({"init": 3}, "init must be one of"),
    ({"n_init": 0}, "n_init"), ({"n_init": "many"}, "n_init"),
    ({"max_iter": 0}, "max_iter"), ({"tol": -1.0}, "tol"), ({"tol": "x"}, "tol"),
    ({"verbose": -1}, "verbose"), ({"copy_x": "yes"}, "copy_x"),
    ({"algorithm": "auto"}, "algorithm must be one of"), ({"random_state": -3}, "random_state"),
    ({"n_clusters": 400}, r"n_samples=300 should be >= n_clusters=400"),
    ({"init": np.zeros((2, 3))}, "does not match the number of clusters 8"),
])
def test_bad_parameters_are_clear_errors_and_leave_no_fit(params, match):
    X = np.random.default_rng(0).normal(size=(300, 3))
    km = KMeans(**params)
    with pytest.raises(ValueError, match=match):
        km.fit(X)
    with pytest.raises(NotFittedError):
        km.predict(X)


def test_bad_data_is_a_clear_error():
    with pytest.raises(ValueError, match="NaN or infinity"):
        KMeans(2).fit(np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        KMeans(2).fit(sp.csr_matrix(np.array([[0.0, 1.0], [np.inf, 2.0], [1.0, 1.0]])))
    with pytest.raises(ValueError, match="sample_weight"):
        KMeans(2).fit(np.eye(3), sample_weight=[1.0, -1.0, 1.0])
    km = KMeans(2, random_state=0).fit(np.eye(3))
    with pytest.raises(ValueError, match="X has 2 features, but KMeans is expecting 3"):
        km.predict(np.eye(2))


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            KMeans(n_clusters=2, n_init=2, max_iter=5),       # scikit-learn's test settings
            expected_failed_checks={      # as scikit-learn lists them for its KMeans
                f"check_sample_weight_equivalence_on_{kind}_data":
                    "randomised like scikit-learn's KMeans (which lists the same expected "
                    "failure); weights equal repetitions from a fixed init in scikit-learn's "
                    "own test_weighted_vs_repeated, run above"
                for kind in ("dense", "sparse")},
            on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:300]) for r in results
              if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 45


# -- the sparse pass --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_sparse_pass_matches_the_dense_pass_and_pruning_changes_no_label(dtype, index):
    A = sp.random(3000, 150, density=0.06, random_state=2, format="csr", dtype=dtype)
    A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
    X = check_csr(A)
    D = A.toarray()
    sw = np.random.default_rng(0).uniform(0.5, 2.0, 3000).astype(dtype)
    centers = D[:25].copy()
    bounds, labels, pruned = SparseBounds(3000), None, 0
    for _ in range(12):
        a = csr_assign(X, sw, centers, 2, with_sums=True, old_labels=labels, bounds=bounds)
        full = assign(D, sw, centers, 2, with_sums=True)
        np.testing.assert_array_equal(a.labels, full.labels)
        assert a.objective == pytest.approx(full.objective, rel=1e-9)
        np.testing.assert_allclose(a.sums.weight, full.sums.weight, rtol=1e-12)
        np.testing.assert_allclose(a.sums.resid, full.sums.resid, rtol=0, atol=1e-9)
        pruned += 3000 - a.searched
        labels = a.labels
        W = a.sums.weight
        new = centers.astype(np.float64)
        new[W > 0] += a.sums.resid[W > 0] / W[W > 0, None]
        centers = new.astype(dtype)
    assert pruned > 0


def test_sparse_input_is_validated_and_converted():
    dense = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
    coo = sp.coo_matrix(dense)
    dup = sp.csr_matrix((np.array([1.0, 1.0, 1.0, 3.0, 1.0, 1.0]),     # row 0: 2.0 as 1 + 1
                         np.array([1, 1, 0, 2, 0, 1]), np.array([0, 2, 3, 4, 6])), shape=(4, 3))
    assert not dup.has_canonical_format
    init = dense[[0, 2]]
    fits = [KMeans(2, init=init, n_init=1).fit(x) for x in
            (dense, coo, sp.csr_matrix(dense).astype(np.int64), dup)]
    for km in fits[1:]:
        np.testing.assert_array_equal(km.labels_, fits[0].labels_)
        np.testing.assert_allclose(km.cluster_centers_, fits[0].cluster_centers_)
        assert km.inertia_ == pytest.approx(fits[0].inertia_)
    np.testing.assert_allclose(fits[1].transform(coo), fits[0].transform(dense), atol=1e-12)
    with pytest.raises(ValueError, match="Complex data"):
        KMeans(2).fit(sp.csr_matrix(dense.astype(complex)))



def test_sparse_fit_scans_the_stored_values_once_for_the_range_checks(monkeypatch):
    """check_csr's extent serves the objective-range check too: one scan of the nnz values a
    fit, where there were two; a value beyond the range is still refused, naming X."""
    import gmmfast._validation as validation
    import gmmfast.cluster._kmeans as kmeans_module
    X = sp.random(300, 8, density=0.3, format="csr", random_state=0, dtype=np.float64)
    scans = []
    original = validation.extent

    def counting(arr, name="X"):
        scans.append(arr.shape)
        return original(arr, name)
    monkeypatch.setattr(validation, "extent", counting)
    monkeypatch.setattr(kmeans_module, "extent", counting, raising=False)
    KMeans(3, n_init=1, random_state=0).fit(X)
    assert scans.count(X.data.shape) == 1
    big = X.copy()
    big.data[:] = 1e152
    with pytest.raises(ValueError, match="X has values up to 1e.152.*scale X"):
        KMeans(3, n_init=1).fit(big)

def test_large_float64_data_is_seeded_through_float32_values(monkeypatch):
    """k-means++ reads large float64 X as float32 (memory-bound passes): the centers are X's
    float64 rows, drawn as from the float64 values (well-separated data: no draw is near a
    rounding boundary)."""
    import gmmfast.cluster._init as dropin
    rng = np.random.default_rng(0)
    means = rng.uniform(-50, 50, size=(40, 5))
    X = np.ascontiguousarray(means[rng.integers(40, size=6000)] + rng.normal(size=(6000, 5)))
    sw = rng.uniform(0.5, 2.0, 6000)
    km = KMeans(25)
    exact = km._init_centroids(X, None, "k-means++", np.random.default_rng(3), sw)
    monkeypatch.setattr(dropin, "SEED_FLOAT32_BYTES", 0)
    seen = []
    original = dropin._SeedRows.pp_step
    monkeypatch.setattr(dropin._SeedRows, "pp_step",
                        staticmethod(lambda rows, *a: seen.append(rows.panels.dtype) or
                                     original(rows, *a)))
    fast = km._init_centroids(X, None, "k-means++", np.random.default_rng(3), sw)
    assert seen and all(t == np.float32 for t in seen)
    assert fast.dtype == np.float64
    np.testing.assert_array_equal(fast, exact)
