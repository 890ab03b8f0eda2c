"""Clustering data sets of the paper (section 5.1): GMM-200, Norm-25 and the SIPU sets.

- :func:`make_gmm200`: the paper's own set (10,000 points, 200 unit-variance
  2-D Gaussians of 50 points whose means are uniform on a 70 x 70 square, at
  least 2.5 apart).
- :func:`make_norm25`: Norm-25 of the k-means++ paper (Arthur & Vassilvitskii
  2007): 25 centers uniform in a 15-D hypercube of side 500, unit-variance
  Gaussian points around them.
- :func:`load_sipu`: the SIPU benchmark sets (D31, R15) read from a folder in
  the clustering-benchmarks layout (``NAME.data.gz``, ``NAME.labels0.gz``) or,
  when missing, downloaded over https from the SIPU page of the University of
  Eastern Finland into a cache folder (its SHA-256 checked where known).

The paper's fourth set, Cloud, is not provided.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from .._atomic import atomic_path
from .._validation import check_int, check_random_state, check_real

__all__ = ["make_gmm200", "make_norm25", "load_sipu", "SIPU_SETS", "SIPU_SHA256", "ChecksumError",
           "get_data_home"]

#: SIPU sets the loader knows: name -> (file on the SIPU page, points, dims, clusters).
SIPU_SETS = {
    "d31": ("D31.txt", 3100, 2, 31),
    "r15": ("R15.txt", 600, 2, 15),
}
#: Where the SIPU files are downloaded from (the original page, over https).
SIPU_URL = "https://cs.joensuu.fi/sipu/datasets/"
#: SHA-256 (hex) of each file on the SIPU page, checked after every download before the file
#: is cached. None: not known to this package -- no copy of the page's own file was at hand
#: to compute it from (the reference data we test with is the clustering-benchmarks layout,
#: other bytes), so such a download is checked only by its shape and labels. Pass
#: ``load_sipu(..., sha256=...)`` to pin a checksum you trust.
SIPU_SHA256 = {
    "D31.txt": None,
    "R15.txt": None,
}
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class ChecksumError(OSError):
    """A downloaded file's SHA-256 is not the expected one (the file is not kept)."""


def _check_positive(value: Any, name: str) -> float:
    v = check_real(value, name, 0.0)
    if v <= 0:
        raise ValueError(f"{name} must be a positive real number, got {value!r}.")
    return v


def _separated_means(rng: np.random.Generator, n_centers: int, side: float, dim: int,
                     min_distance: float, max_tries: int) -> np.ndarray:
    """Means uniform on [0, side]^dim, each at least ``min_distance`` from the earlier ones.

    Sequential rejection: a candidate is drawn uniformly and kept if it is far
    enough from every mean kept so far, so the kept set is uniform given the
    separation constraint being met one mean at a time.
    """
    means = np.empty((n_centers, dim))
    count, tries = 0, 0
    min_sq = min_distance ** 2
    while count < n_centers:
        if tries >= max_tries:
            raise ValueError(f"could not place {n_centers} means at least {min_distance} apart "
                             f"in a {dim}-D cube of side {side} after {max_tries} draws; "
                             "lower min_distance or n_centers.")
        cand = rng.uniform(0.0, side, size=dim)
        tries += 1
        if count == 0 or ((means[:count] - cand) ** 2).sum(axis=1).min() >= min_sq:
            means[count] = cand
            count += 1
    return means


def _blobs(rng: np.random.Generator, means: np.ndarray, per_center: int, std: float,
           shuffle: bool) -> Tuple[np.ndarray, np.ndarray]:
    k, d = means.shape
    y = np.repeat(np.arange(k, dtype=np.int64), per_center)
    X = means[y] + std * rng.standard_normal((k * per_center, d))
    if shuffle:
        order = rng.permutation(y.shape[0])
        X, y = X[order], y[order]
    return np.ascontiguousarray(X), y


def make_gmm200(random_state: Any = None, *, n_components: int = 200, n_per_component: int = 50,
                side: float = 70.0, min_distance: float = 2.5, shuffle: bool = True,
                return_centers: bool = False):
    """GMM-200 of the paper: 200 unit-variance 2-D Gaussians, 50 points each.

    The means are uniform on a ``side`` x ``side`` square, every pair at least
    ``min_distance`` apart (sequential rejection sampling); each component
    contributes ``n_per_component`` points from N(mean, I).

    Parameters
    ----------
    random_state : None, int or numpy Generator
    n_components, n_per_component : int
    side, min_distance : float
    shuffle : bool, default=True
        Shuffle the points (otherwise they come sorted by component).
    return_centers : bool, default=False

    Returns
    -------
    X : ndarray of shape (n_components * n_per_component, 2)
    y : ndarray of int64
        Component of each point (the ground truth).
    centers : ndarray of shape (n_components, 2)
        Only if ``return_centers``.
    """
    rng = check_random_state(random_state)
    k = check_int(n_components, "n_components", 1)
    m = check_int(n_per_component, "n_per_component", 1)
    side = _check_positive(side, "side")
    min_distance = check_real(min_distance, "min_distance", 0.0)
    means = _separated_means(rng, k, side, 2, min_distance, max_tries=1000 * k)
    X, y = _blobs(rng, means, m, 1.0, shuffle)
    return (X, y, means) if return_centers else (X, y)


def make_norm25(random_state: Any = None, *, n_centers: int = 25, n_samples: int = 10000,
                n_features: int = 15, side: float = 500.0, std: float = 1.0,
                shuffle: bool = True, return_centers: bool = False):
    """Norm-25 of the k-means++ paper: 25 centers uniform in a 15-D cube of side 500.

    Points are drawn from N(center, std^2 I) with ``n_samples / n_centers``
    points per center (the remainder goes to the first centers).

    Parameters
    ----------
    random_state : None, int or numpy Generator
    n_centers, n_samples, n_features : int
    side, std : float
    shuffle : bool, default=True
    return_centers : bool, default=False

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of int64
    centers : ndarray of shape (n_centers, n_features)
        Only if ``return_centers``.
    """
    rng = check_random_state(random_state)
    k = check_int(n_centers, "n_centers", 1)
    n = check_int(n_samples, "n_samples", k)
    d = check_int(n_features, "n_features", 1)
    side = _check_positive(side, "side")
    std = _check_positive(std, "std")
    means = rng.uniform(0.0, side, size=(k, d))
    y = np.repeat(np.arange(k, dtype=np.int64), n // k)
    y = np.concatenate([y, np.arange(n - y.shape[0], dtype=np.int64)])
    y.sort()
    X = means[y] + std * rng.standard_normal((n, d))
    if shuffle:
        order = rng.permutation(n)
        X, y = X[order], y[order]
    X = np.ascontiguousarray(X)
    return (X, y, means) if return_centers else (X, y)


# -- SIPU loader -------------------------------------------------------------------

def get_data_home(data_home: Union[str, os.PathLike, None] = None) -> Path:
    """The cache folder for downloaded data: ``data_home``, else $GMMFAST_DATA, else ~/gmmfast_data."""
    if data_home is None:
        data_home = os.environ.get("GMMFAST_DATA", os.path.join("~", "gmmfast_data"))
    return Path(os.path.expanduser(str(data_home)))


def _read_matrix(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return np.loadtxt(fh, ndmin=2)


def _from_benchmark_layout(folder: Path, name: str):
    """Read NAME.data.gz / NAME.labels0.gz (or uncompressed) from ``folder`` or folder/sipu."""
    for base in (folder, folder / "sipu"):
        for ext in (".gz", ""):
            data = base / f"{name}.data{ext}"
            labels = base / f"{name}.labels0{ext}"
            if data.is_file() and labels.is_file():
                return _read_matrix(data), _read_matrix(labels)[:, 0]
    return None


def _download(url: str, target: Path, timeout: float, sha256: Optional[str] = None) -> str:
    """Download ``url`` to ``target`` (atomically); its SHA-256, checked against ``sha256``
    (hex) when given: a mismatch raises :class:`ChecksumError` and leaves no file. A failed
    download also removes the folders it created for ``target`` (if still empty)."""
    created = []                    # the folders made here, deepest first
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        created.append(folder)
        folder = folder.parent
    digest = hashlib.sha256()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # whole or not at all: a broken download never looks like a cached file
        with atomic_path(target) as tmp:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
                while True:
                    chunk = resp.read(1 << 16)
                    if not chunk:
                        break
                    digest.update(chunk)
                    out.write(chunk)
            got = digest.hexdigest()
            if sha256 is not None and got != sha256.lower():
                raise ChecksumError(f"the SHA-256 of the downloaded {target.name} is {got}, "
                                    f"expected {sha256.lower()}: the download is corrupt or "
                                    "the file on the server changed; it was not kept.")
    except BaseException:
        _remove_empty(created)
        raise
    return got

def _remove_empty(folders: List[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def load_sipu(name: str, data_home: Union[str, os.PathLike, None] = None, *,
              download_if_missing: bool = True, base_url: str = SIPU_URL,
              timeout: float = 30.0, sha256: Optional[str] = None
              ) -> Tuple[np.ndarray, np.ndarray]:
    """A SIPU clustering benchmark set (``"d31"`` or ``"r15"``) with its ground truth.

    Looks in ``data_home`` (or its ``sipu/`` subfolder) for the
    clustering-benchmarks layout ``NAME.data.gz`` + ``NAME.labels0.gz``, then for
    a previously downloaded ``NAME.txt`` from the SIPU page (three columns: x,
    y, label). If neither is there and ``download_if_missing``, the SIPU file is
    downloaded into ``data_home`` (default :func:`get_data_home`), over https from
    the SIPU page by default; its SHA-256 is checked before it is cached when it is known
    (``sha256``, else :data:`SIPU_SHA256`).

    Parameters
    ----------
    name : {"d31", "r15"} (case-insensitive)
    data_home : path, optional
    download_if_missing : bool, default=True
    base_url : str
        Where the SIPU files live (the original page by default).
    timeout : float
        Seconds before a download attempt is given up.
    sha256 : str, optional
        Expected SHA-256 (64 hex digits) of the downloaded file; default
        ``SIPU_SHA256[file]``, which is None (not checked) while this package does not know
        the page's checksums.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, 2)
    y : ndarray of int64
        Ground-truth cluster of each point, 0-based.

    Raises
    ------
    ValueError
        Unknown name, or a file that does not have the expected shape.
    OSError
        The set is not cached and cannot be downloaded (offline, a checksum mismatch --
        :class:`ChecksumError`, or ``download_if_missing=False``); the message names the
        files looked for.
    """
    if not isinstance(name, str) or name.lower() not in SIPU_SETS:
        raise ValueError(f"name must be one of {sorted(SIPU_SETS)}, got {name!r}.")
    key = name.lower()
    fname, n, d, k = SIPU_SETS[key]
    if sha256 is None:
        sha256 = SIPU_SHA256.get(fname)
    elif not isinstance(sha256, str) or not _HEX64.fullmatch(sha256):
        raise ValueError(f"sha256 must be 64 hexadecimal digits, got {sha256!r}.")
    home = get_data_home(data_home)
    found = _from_benchmark_layout(home, key)
    if found is None:
        cached = home / "sipu" / fname
        if not cached.is_file():
            looked = (f"{home / 'sipu' / (key + '.data.gz')} (+ .labels0.gz) or {cached}")
            if not download_if_missing:
                raise OSError(f"SIPU set {key!r} not found: looked for {looked}; "
                              "download_if_missing=False.")
            url = base_url.rstrip("/") + "/" + fname
            try:
                _download(url, cached, timeout, sha256)
            except ChecksumError as exc:
                raise ChecksumError(f"SIPU set {key!r}: downloading {url} failed: {exc}") from exc
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise OSError(f"SIPU set {key!r} is not cached (looked for {looked}) and "
                              f"downloading {url} failed: {exc}. Put the files there by hand "
                              "or pass data_home= pointing at a folder that holds them."
                              ) from exc
        table = _read_matrix(cached)
        if table.shape[1] != d + 1:
            raise ValueError(f"{cached} should have {d + 1} columns (coordinates and label), "
                             f"got {table.shape[1]}.")
        found = (table[:, :d], table[:, d])
    X, labels = found
    if X.shape != (n, d) or labels.shape != (n,):
        raise ValueError(f"SIPU set {key!r} should have {n} points in {d} dimensions with one "
                         f"label each, got data {X.shape} and labels {labels.shape}.")
    y = labels.astype(np.int64)
    if not np.array_equal(y, labels) or np.unique(y).shape[0] != k:
        raise ValueError(f"SIPU set {key!r} should have {k} integer ground-truth labels.")
    y = np.unique(y, return_inverse=True)[1].astype(np.int64)
    return np.ascontiguousarray(X, dtype=np.float64), y
