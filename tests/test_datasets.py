"""The clustering data sets: GMM-200, Norm-25 generators and the SIPU loader."""
import functools
import gzip
import http.server
import threading

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from gmmfast.datasets import get_data_home, load_sipu, make_gmm200, make_norm25
from gmmfast.metrics import centroids_from_labels


# -- GMM-200 -----------------------------------------------------------------------

def test_gmm200_matches_the_paper_description():
    X, y, means = make_gmm200(0, return_centers=True)
    assert X.shape == (10_000, 2) and X.dtype == np.float64
    assert np.array_equal(np.bincount(y), np.full(200, 50))
    assert means.shape == (200, 2)
    assert means.min() >= 0 and means.max() <= 70
    assert pdist(means).min() >= 2.5
    # unit-variance components: pooled within-component variance per coordinate ~ 1
    resid = X - means[y]
    assert resid.var(axis=0) == pytest.approx([1, 1], abs=0.05)
    assert abs(resid.mean()) < 0.03
    # the sample means are the component means up to sampling noise (sd 1/sqrt(50))
    assert np.abs(centroids_from_labels(X, y) - means).max() < 0.75


def test_gmm200_is_reproducible_and_seed_sensitive():
    a, ya = make_gmm200(3)
    b, yb = make_gmm200(3)
    c, _ = make_gmm200(4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ya, yb)
    assert not np.allclose(a, c)


def test_gmm200_shuffle_and_options():
    X, y = make_gmm200(1, n_components=20, n_per_component=7, side=30, min_distance=4,
                       shuffle=False)
    assert X.shape == (140, 2)
    np.testing.assert_array_equal(y, np.repeat(np.arange(20), 7))
    _, _, m = make_gmm200(1, n_components=20, side=30, min_distance=4, return_centers=True)
    assert pdist(m).min() >= 4


@pytest.mark.parametrize("kw, match", [
    (dict(n_components=0), "n_components"),
    (dict(n_per_component=0), "n_per_component"),
    (dict(side=-1), "side"),
    (dict(min_distance=-1), "min_distance"),
    (dict(n_components=50, side=5, min_distance=3), "could not place"),
])
def test_gmm200_rejects_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        make_gmm200(0, **kw)


# -- Norm-25 -----------------------------------------------------------------------

def test_norm25_matches_the_kmeanspp_description():
    X, y, means = make_norm25(0, return_centers=True)
    assert X.shape == (10_000, 15)
    assert np.array_equal(np.bincount(y), np.full(25, 400))
    assert means.shape == (25, 15) and means.min() >= 0 and means.max() <= 500
    resid = X - means[y]
    assert resid.var(axis=0) == pytest.approx(np.ones(15), abs=0.06)
    # well separated: the closest pair of centers is many standard deviations apart
    assert pdist(means).min() > 100


def test_norm25_uneven_split_and_errors():
    X, y = make_norm25(0, n_centers=3, n_samples=11, n_features=2)
    assert sorted(np.bincount(y)) == [3, 4, 4]
    with pytest.raises(ValueError, match="n_samples"):
        make_norm25(0, n_centers=5, n_samples=4)
    with pytest.raises(ValueError, match="std"):
        make_norm25(0, std=0)


# -- SIPU loader -------------------------------------------------------------------

@pytest.mark.parametrize("name, n, k", [("d31", 3100, 31), ("R15", 600, 15)])
def test_load_sipu_from_shared_data(shared_data, name, n, k):
    X, y = load_sipu(name, data_home=shared_data, download_if_missing=False)
    assert X.shape == (n, 2) and X.dtype == np.float64
    assert y.dtype == np.int64 and y.min() == 0 and y.max() == k - 1
    raw = np.loadtxt(shared_data / "sipu" / f"{name.lower()}.data.gz")
    np.testing.assert_array_equal(X, raw)
    truth = np.loadtxt(shared_data / "sipu" / f"{name.lower()}.labels0.gz").astype(int)
    np.testing.assert_array_equal(y, truth - 1)


def test_load_sipu_d31_reference_figure(shared_data):
    """The data README: centroids of the ground truth give SSE/n = 1.1430."""
    X, y = load_sipu("d31", data_home=shared_data)
    C = centroids_from_labels(X, y)
    assert ((X - C[y]) ** 2).sum() / len(X) == pytest.approx(1.1430, abs=5e-5)


def test_load_sipu_missing_offline_is_a_clear_error(tmp_path, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    # port 9 (discard) on localhost is closed: the download fails at once, as offline
    with pytest.raises(OSError) as err:
        load_sipu("d31", data_home=tmp_path, base_url="http://127.0.0.1:9/", timeout=5)
    msg = str(err.value)
    assert "d31" in msg and str(tmp_path) in msg and "http://127.0.0.1:9/D31.txt" in msg
    assert not any(tmp_path.rglob("D31.txt*"))      # no partial file left as a cache


def test_load_sipu_without_download_names_the_files(tmp_path):
    with pytest.raises(OSError, match="download_if_missing=False"):
        load_sipu("r15", data_home=tmp_path, download_if_missing=False)


def test_load_sipu_rejects_unknown_names():
    with pytest.raises(ValueError, match="name must be one of"):
        load_sipu("cloud")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(folder):
    server = http.server.HTTPServer(("127.0.0.1", 0),
                                    functools.partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_load_sipu_downloads_into_the_cache_then_reads_it_offline(tmp_path, shared_data,
                                                                  monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)             # talk to the local server directly
    # a stand-in for the SIPU page, serving R15.txt in its format: x, y, label per line
    site = tmp_path / "site"
    site.mkdir()
    X = np.loadtxt(shared_data / "sipu" / "r15.data.gz")
    lab = np.loadtxt(shared_data / "sipu" / "r15.labels0.gz")
    np.savetxt(site / "R15.txt", np.column_stack([X, lab]), fmt="%.4f\t%.4f\t%d")
    cache = tmp_path / "cache"
    server = _serve(site)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        X1, y1 = load_sipu("r15", data_home=cache, base_url=url)
    finally:
        server.shutdown()
        server.server_close()
    assert (cache / "sipu" / "R15.txt").is_file()
    np.testing.assert_allclose(X1, X, atol=1e-4)
    np.testing.assert_array_equal(y1, lab.astype(int) - 1)
    X2, y2 = load_sipu("r15", data_home=cache, base_url="http://127.0.0.1:9/")  # offline now
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


def test_load_sipu_checks_the_file_shape(tmp_path):
    folder = tmp_path / "sipu"
    folder.mkdir()
    with gzip.open(folder / "r15.data.gz", "wt") as fh:
        fh.write("1 2\n3 4\n")
    with gzip.open(folder / "r15.labels0.gz", "wt") as fh:
        fh.write("1\n2\n")
    with pytest.raises(ValueError, match="600 points"):
        load_sipu("r15", data_home=tmp_path)


def test_data_home_default_and_env(monkeypatch, tmp_path):
    monkeypatch.setenv("GMMFAST_DATA", str(tmp_path))
    assert get_data_home() == tmp_path
    assert get_data_home(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("GMMFAST_DATA")
    assert get_data_home().name == "gmmfast_data"


@pytest.mark.parametrize("call, match", [              # issue 12: found by the fuzz test
    (lambda: make_gmm200(0, n_components=2, min_distance=1j), "min_distance"),   # TypeError
    (lambda: make_norm25(0, n_centers=2, n_samples=4, side="1.5"), "side"),      # was accepted
    (lambda: make_norm25(0, n_centers=2, n_samples=4, std=True), "std"),
])
def test_generators_reject_non_real_numbers(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_read_points_rejects_a_non_path():
    from gmmfast.datasets import read_points
    with pytest.raises(TypeError, match="path must be"):
        read_points(None)


# -- the latent-SVM substitutes ------------------------------------------------------------------
def test_cluttered_objects_shape_and_truth():
    from gmmfast.datasets import make_cluttered_objects
    D = make_cluttered_objects(6, random_state=0)
    assert D.data.shape == (36, 49, 576) and D.data.dtype == np.float32
    assert np.bincount(D.target).tolist() == [6] * 6
    np.testing.assert_allclose(np.linalg.norm(D.data, axis=2), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(D.data, make_cluttered_objects(6, random_state=0).data)
    assert tuple(D.positions[24]) == (0.5, 0.5) and D.grid == 7 and D.window == 32
    # without clutter, background or noise the true window holds the object's histogram,
    # the best match among the windows for an object template of that image
    E = make_cluttered_objects(3, random_state=1, n_distractors=0, background=0.0, noise=0.0,
                               dtype=np.float64)
    from gmmfast.datasets._objects import orientation_cells
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits
    big = np.clip(zoom(load_digits().images[E.digit_index] / 16.0, (1, 4, 4), order=1), 0, 1)
    canvas = np.zeros((E.data.shape[0], 56, 56))
    r, c = np.divmod(E.latent, E.grid)
    for i in range(canvas.shape[0]):
        canvas[i, 4 * r[i]:4 * r[i] + 32, 4 * c[i]:4 * c[i] + 32] = big[i]
    np.testing.assert_allclose(canvas, E.images)
    H = orientation_cells(canvas, 4, 9)
    for i in range(canvas.shape[0]):
        ref = H[i, r[i]:r[i] + 8, c[i]:c[i] + 8].reshape(-1)
        np.testing.assert_allclose(E.data[i, E.latent[i]], ref / np.linalg.norm(ref))
    with pytest.raises(ValueError, match="multiple of cell"):
        make_cluttered_objects(2, scale=3, cell=5)
    with pytest.raises(ValueError, match="n_per_class"):
        make_cluttered_objects(1000)
    with pytest.raises(ValueError, match="background"):
        make_cluttered_objects(2, background=2.0)


def test_generators_name_their_bad_arguments():
    """Issue 12: classes=None reached int(); classes=(0, 1.5) was read as (0, 1); a huge
    n_distractors looped for ever; a huge grid or n_parts reached numpy's allocation."""
    from gmmfast.datasets import make_cluttered_digits, make_cluttered_objects, make_scenes
    for classes in (None, (0, 1.5), (3,), (1, 1), "01"):
        with pytest.raises(ValueError, match="classes must be at least two distinct digits"):
            make_cluttered_digits(6, classes=classes)
    with pytest.raises(ValueError, match=r"n_distractors must be an integer in \[0, 576\]"):
        make_cluttered_digits(6, n_distractors=2**63)
    with pytest.raises(ValueError, match="canvas side 8 \\* scale \\+ stride"):
        make_cluttered_digits(6, grid=2**63)
    with pytest.raises(ValueError, match="distractor_intensity must be in"):
        make_cluttered_digits(6, distractor_intensity=1.5)
    with pytest.raises(ValueError, match="spread must be a real number"):
        make_cluttered_digits(6, spread=True)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        make_cluttered_digits(6, dtype="x")
    with pytest.raises(ValueError, match="background photographs"):
        make_cluttered_objects(2, canvas_cells=100)
    with pytest.raises(ValueError, match=r"n_parts must be an integer in \[1, 2147483647\]"):
        make_scenes(12, n_parts=2**64)


def test_texture_scenes():
    from gmmfast.datasets import make_texture_scenes
    X, y, Z, p = make_texture_scenes(40, random_state=0, grid=(5, 5), return_params=True)
    assert X.shape == (40, 25, 10) and Z.shape == (40, 25) and Z.dtype == np.int32
    np.testing.assert_allclose(X.reshape(-1, 10).mean(0), 0, atol=1e-9)     # standardised
    np.testing.assert_allclose(X.reshape(-1, 10).std(0), 1, atol=1e-9)
    assert np.bincount(y).tolist() == [8] * 5
    np.testing.assert_array_equal(X, make_texture_scenes(40, random_state=0, grid=(5, 5))[0])
    # the layouts are make_scenes' (same draw of the layout after the part brightness)
    assert p["templates"].shape == (5, 5, 5) and p["images"].shape == (40, 40, 40)
    # a region's brightness feature follows its part's brightness
    bright = X[..., 8].reshape(-1)
    level = p["brightness"][Z.reshape(-1)]
    assert np.corrcoef(bright, level)[0, 1] > 0.5
    with pytest.raises(ValueError, match="square"):
        make_texture_scenes(10, grid=(4, 5))
    with pytest.raises(ValueError, match="noise"):
        make_texture_scenes(10, noise=-1)


# -- read_points: numpy's reader in one call, the line-by-line reader for what it rejects ----

TABLES = [
    "1.0,2.0\n3.0,4.0\n5.0,6.0\n",
    "\ufeffx,y\n1.0,2.0\n3.0,4.0\n",                     # byte-order mark and a header
    "# made by hand\n\nx y\n1 2\n# gap\n\n3 4\n",          # comments and blanks around a header
    "1\t2\n3\t4\n",
    "1, 2\n3 ,4\n",                                        # spaces around the commas
    "1,2 # inline comment\r\n3,4\r\n",                     # CRLF
    "7\n8\n9\n",                                           # one column
    "1e3,-2.5E-2\n.5,+3\n",
]


def test_read_points_rejects_an_empty_path():
    """'' became Path('.'), the working folder, reported as '. is a folder'."""
    from gmmfast.datasets import read_points
    with pytest.raises(ValueError, match="path must name a file, got ''"):
        read_points("")


@pytest.mark.parametrize("text", TABLES)
def test_read_points_fast_path_gives_the_line_by_line_array(tmp_path, monkeypatch, text):
    from gmmfast.datasets import _files, read_points
    path = tmp_path / "p.csv"
    path.write_text(text, encoding="utf-8")
    assert _files._read_text_fast(path) is not None       # the one-call path took it
    fast = read_points(path)
    monkeypatch.setattr(_files, "_read_text_fast", lambda p: None)
    slow = read_points(path)
    assert fast.dtype == slow.dtype == np.float64
    np.testing.assert_array_equal(fast, slow)


def test_read_points_fast_path_on_a_large_table(tmp_path, monkeypatch):
    from gmmfast.datasets import _files, read_points
    X = np.random.default_rng(0).standard_normal((5000, 16))
    path = tmp_path / "big.csv"
    np.savetxt(path, X, delimiter=",", header=",".join(f"c{j}" for j in range(16)), comments="")
    fast = read_points(path)
    np.testing.assert_array_equal(fast, X)                 # savetxt's %.18e round-trips
    monkeypatch.setattr(_files, "_read_text_fast", lambda p: None)
    np.testing.assert_array_equal(read_points(path), fast)


@pytest.mark.parametrize("text, match", [
    ("1,2\n3,4\n5,x6\n", "line 3: cannot read 'x6'"),
    ("x,y\n1,2\n3,4\n5\n7,8\n", "line 4: 1 values where the first data line has 2"),
    ("1 2\n3 4 5\n", "line 2: 3 values"),
    ("1.0,2.O\n3,4\n", "line 1: cannot read '2.O'"),
])
def test_read_points_malformed_file_still_names_the_line(tmp_path, text, match):
    from gmmfast.datasets import _files, read_points
    path = tmp_path / "p.csv"
    path.write_text(text, encoding="utf-8")
    assert _files._read_text_fast(path) is None           # left to the line-by-line reader
    with pytest.raises(ValueError, match=match):
        read_points(path)


# -- SIPU download: https, SHA-256 checked before the file is cached -----------------------

def _fake_urlopen(payload, seen):
    import contextlib
    import io

    @contextlib.contextmanager
    def urlopen(url, timeout=None):
        seen.append(url)
        yield io.BytesIO(payload)
    return urlopen


def _r15_txt(shared_data):
    X = np.loadtxt(shared_data / "sipu" / "r15.data.gz")
    lab = np.loadtxt(shared_data / "sipu" / "r15.labels0.gz")
    import io
    buf = io.BytesIO()
    np.savetxt(buf, np.column_stack([X, lab]), fmt="%.4f\t%.4f\t%d")
    return buf.getvalue()


def test_sipu_downloads_over_https():
    from gmmfast.datasets import _clustering
    assert _clustering.SIPU_URL.startswith("https://")
    assert set(_clustering.SIPU_SHA256) == {f for f, *_ in _clustering.SIPU_SETS.values()}


def test_load_sipu_wrong_checksum_is_a_clear_error_and_caches_nothing(tmp_path, shared_data,
                                                                      monkeypatch):
    import hashlib
    import urllib.request

    from gmmfast.datasets._clustering import ChecksumError
    payload = _r15_txt(shared_data)
    seen = []
    monkeypatch.setattr(urllib.request, "urlopen", _fake_urlopen(payload, seen))
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as err:
        load_sipu("r15", data_home=tmp_path, sha256=wrong)
    msg = str(err.value)
    assert isinstance(err.value, OSError)
    assert "SHA-256" in msg and "R15.txt" in msg and wrong in msg
    assert hashlib.sha256(payload).hexdigest() in msg and "it was not kept" in msg
    assert seen == ["https://cs.joensuu.fi/sipu/datasets/R15.txt"]
    assert list(tmp_path.rglob("R15.txt*")) == []          # no cache, no partial file
    # the right checksum (either case): downloaded, cached, read
    right = hashlib.sha256(payload).hexdigest().upper()
    X, y = load_sipu("r15", data_home=tmp_path, sha256=right)
    assert X.shape == (600, 2) and np.unique(y).shape[0] == 15
    assert (tmp_path / "sipu" / "R15.txt").read_bytes() == payload


def test_load_sipu_checks_the_table_checksum_by_default(tmp_path, shared_data, monkeypatch):
    import urllib.request

    from gmmfast.datasets import _clustering
    monkeypatch.setattr(urllib.request, "urlopen", _fake_urlopen(_r15_txt(shared_data), []))
    monkeypatch.setitem(_clustering.SIPU_SHA256, "R15.txt", "ab" * 32)
    with pytest.raises(_clustering.ChecksumError, match="expected abab"):
        load_sipu("r15", data_home=tmp_path)
    with pytest.raises(ValueError, match="64 hexadecimal digits"):
        load_sipu("r15", data_home=tmp_path, sha256="abc")


def test_load_sipu_failed_download_removes_the_folders_it_made(tmp_path):
    home = tmp_path / "new" / "home"
    with pytest.raises(OSError, match="downloading"):
        load_sipu("d31", data_home=home, base_url=(tmp_path / "nowhere").as_uri())
    assert list(tmp_path.iterdir()) == []       # was: new/home/sipu left behind, empty
    (tmp_path / "kept").mkdir()                 # a folder that was there is kept
    with pytest.raises(OSError, match="downloading"):
        load_sipu("d31", data_home=tmp_path / "kept", base_url=(tmp_path / "nowhere").as_uri())
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
    assert list((tmp_path / "kept").iterdir()) == []
