"""Property-based fuzzing of every public function and estimator (issue 12, section 4).

Hypothesis draws, per target, valid inputs (including edge values: one sample, duplicates,
tiny and large scales, float32) and then perturbs at most one argument with a bad value:
wrong type, dtype (complex, strings, objects, booleans), shape, length, NaN or infinity,
out-of-range labels, extremes. Every call runs in a worker process (tests/fuzz_worker.py),
forked from a server that imported gmmfast once, so a crash is seen, not suffered. A call passes when it returns a result that passes the
target's check (finite, right shape, labels in range, the value recomputed by numpy, the
convergence invariants) or raises ValueError/TypeError whose message names one of the
call's parameters; a signal, a hang (> CASE_TIMEOUT s), another exception, an error that
names nothing or a wrong result fails.

Targets that once failed keep their exact failing calls (FIXED), run before the generated
inputs as regressions.
The number of distinct inputs tried is reported at the end of the pytest run.
"""
import hashlib
import io
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Seconds a single call may take before it counts as a hang (generous: a shared machine).
CASE_TIMEOUT = 30.0


# ------------------------------------------------------------------------------ the worker

class Worker:
    """A child process running cases, forked from a fork server that imported gmmfast once
    (a fresh worker costs milliseconds); replaced after a crash, a hang or any failure."""

    def __init__(self):
        import multiprocessing
        self.ctx = multiprocessing.get_context("forkserver")
        # gmmfast, not fuzz_worker: Python 3.11's fork server ignores sys.path (tests/)
        self.ctx.set_forkserver_preload(["gmmfast", "gmmfast.lssvm", "gmmfast.datasets",
                                         "gmmfast.metrics", "gmmfast.latent"])
        self.proc = None
        self.log = tempfile.NamedTemporaryFile(prefix="gmmfast-fuzz-", suffix=".log",
                                               delete=False).name

    def start(self):
        import fuzz_worker
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=fuzz_worker.serve, args=(child, self.log),
                                     daemon=True)
        self.proc.start()
        child.close()

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.conn.close()
            self.proc = None

    def close(self):
        self.stop()
        if os.path.exists(self.log):
            os.unlink(self.log)

    def _stderr_tail(self) -> str:
        with open(self.log, errors="replace") as fh:
            text = fh.read().split("\nExtension modules:")[0]
        return text[-1500:]

    def run(self, target: str, kw: dict):
        """Run one call; a failed call may have corrupted the worker, so it is replaced."""
        if self.proc is None:
            self.start()
        try:
            self.conn.send((target, kw))
            if not self.conn.poll(CASE_TIMEOUT):
                verdict = ("fail", f"hang: no answer within {CASE_TIMEOUT:.0f} s")
            else:
                verdict = self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.proc.join(5)
            code = self.proc.exitcode
            verdict = ("fail", f"crash: the worker died with exit code {code}"
                               f"{f' (signal {-code})' if code and code < 0 else ''}\n"
                               f"{self._stderr_tail()}")
        if verdict[0] == "fail":
            self.stop()
        return verdict


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


@pytest.fixture(scope="module")
def fuzz_stats(request):
    from conftest import FUZZ_STATS
    stats = request.config.stash.setdefault(FUZZ_STATS, {})
    return stats


# ------------------------------------------------------------------------------ inputs

def rng_of(seed):
    return np.random.default_rng(seed)


SEEDS = st.integers(0, 2**32 - 1)
#: Bad values for any parameter.
BAD_SCALARS = [None, "x", "", 1.5, -1, 0, True, 2**64, 2**63, float("nan"), float("inf"),
               -float("inf"), 1e300, -1e-300, 1j, [1], [[1, 2], [3]], (), {}]


def _perturb_array(a: np.ndarray, how: str):
    """A bad version of the valid array ``a``."""
    a = np.asarray(a)
    if how == "complex":
        return a.astype(complex) + 1j
    if how == "str":
        return a.astype(str)
    if how == "object-none":
        b = a.astype(object)
        if b.size:
            b.flat[0] = None
        return b
    if how == "bool":
        return a.astype(bool)
    if how in ("nan", "inf", "-inf", "huge", "tiny"):
        b = a.astype(np.float64 if a.dtype.kind != "f" else a.dtype, copy=True)
        if b.size:
            b.flat[-1] = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "huge": 1e308,
                          "tiny": 5e-324}[how]
        return b
    if how == "empty":
        return a[:0]
    if how == "ravel":
        return a.ravel()
    if how == "add-axis":
        return a[None]
    if how == "drop-last":
        return a[:-1]
    if how == "add-row":
        return np.concatenate([a, a[:1]]) if a.ndim and a.shape[0] else a
    if how == "drop-column":
        return a[..., :-1] if a.ndim >= 2 else a
    if how == "transpose":
        return a.T
    if how == "list":
        return a.tolist()
    if how == "ragged":
        return [list(r) for r in a.tolist()[:1]] + [[1.0]] if a.ndim >= 2 and a.size else [[1], [1, 2]]
    if how == "negative":
        return -np.abs(a) - 1 if a.dtype.kind in "iu" else -np.abs(a) - 1.0
    if how == "out-of-range":
        return a + (int(a.max()) + 1 if a.size and a.dtype.kind in "iu" else 10**6)
    if how == "float-labels":
        return a.astype(np.float64) + 0.5
    if how == "uint64-huge":
        return a.astype(np.uint64) + np.uint64(2**63)
    if how == "int32-wrap":
        return a.astype(np.int64) + 2**32
    raise AssertionError(how)


ARRAY_PERTURBATIONS = ["complex", "str", "object-none", "bool", "nan", "inf", "-inf", "huge",
                       "tiny", "empty", "ravel", "add-axis", "drop-last", "add-row",
                       "drop-column", "transpose", "list", "ragged"]
LABEL_PERTURBATIONS = ["negative", "out-of-range", "float-labels", "uint64-huge", "int32-wrap",
                       "empty", "drop-last", "add-row", "add-axis", "bool", "object-none"]


@st.composite
def bad_value(draw, value, endless=False):
    """A bad replacement for ``value``: a perturbed array (if it is one) or a bad scalar.

    ``endless``: a count for which a huge value is valid but would run for ages (n_init,
    walk steps): no 2**63 or 2**64 then.
    """
    if isinstance(value, np.ndarray) and draw(st.booleans()):
        kinds = LABEL_PERTURBATIONS if value.dtype.kind in "iu" else ARRAY_PERTURBATIONS
        return _perturb_array(value, draw(st.sampled_from(kinds)))
    pool = [v for v in BAD_SCALARS if not (endless and isinstance(v, int) and v >= 2**63)]
    return draw(st.sampled_from(pool))


@st.composite
def points(draw, n_max=30, d_max=3, dtypes=(np.float64, np.float32, np.int64),
           scales=(1e-3, 1.0, 1e3, 1e6), n_min=1):
    """A data matrix: sometimes one sample, duplicated rows, constant columns (valid unless
    an extreme scale overflows float32)."""
    n = draw(st.integers(n_min, n_max))
    d = draw(st.integers(1, d_max))
    rng = rng_of(draw(SEEDS))
    X = rng.normal(size=(n, d)) * draw(st.sampled_from(scales))
    kind = draw(st.sampled_from(["plain", "duplicates", "constant-column", "blobs"]))
    if kind == "duplicates" and n > 1:
        X = np.repeat(X[: max(1, n // 5)], 5, axis=0)[:n]
        X = np.concatenate([X, X[: n - X.shape[0]]]) if X.shape[0] < n else X
    elif kind == "constant-column":
        X[:, 0] = 3.0
    elif kind == "blobs":
        X += 20 * rng.integers(0, 3, size=(n, 1))
    dtype = draw(st.sampled_from(dtypes))
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(X.round() if dtype == np.int64 else X).astype(dtype)


def weights(draw, n, dtype=np.float64):
    rng = rng_of(draw(SEEDS))
    w = rng.random(n) + 0.1
    if n > 2 and draw(st.booleans()):
        w[0] = 0.0
    return w.astype(dtype)


@dataclass
class Spec:
    """A fuzz target: valid inputs, and the parameters that may be replaced by bad values."""

    name: str
    valid: Callable
    perturb: tuple = ()       # parameters that may be made bad (default: all but "function")
    examples: int = 200
    min_valid: float = 0.2    # at least this fraction of the cases must get a valid result
    calls: tuple = ()         # exact calls that once failed, run first (regressions)
    endless: tuple = ("n_init", "walk_steps", "n_steps", "max_iter", "solver_max_iter", "n_bisect",
                      "max_cycles", "exchanges", "n_samples", "n_components", "n_per_component",
                      "n_centers", "n_features")

    def cases(self):
        @st.composite
        def case(draw):
            kw = draw(self.valid())
            keys = [k for k in (self.perturb or kw) if k in kw and k != "function"]
            # half the cases valid, half with one bad argument
            which = draw(st.sampled_from([None] * len(keys) + keys)) if keys else None
            if which is not None:
                kw[which] = draw(bad_value(kw[which], endless=which in self.endless))
            return kw
        return case()


# ------------------------------------------------------------------------------ targets

@st.composite
def gmmkmeans(draw, scales=(1e-3, 1.0, 1e3, 1e6), dtypes=(np.float64, np.float32, np.int64)):
    X = draw(points(scales=scales, dtypes=dtypes))
    n = X.shape[0]
    k = draw(st.integers(1, min(n, 4)))
    init = draw(st.sampled_from(["k-means++", "forgy", "random-partition", "array"]))
    return dict(X=X, n_clusters=k, eta=draw(st.sampled_from([1e-9, 0.02, 0.1, 0.5, 1.0])),
                init=X[:k].astype(np.float64) if init == "array" else init,
                n_init=draw(st.sampled_from([1, 2, "auto"])),
                max_iter=draw(st.sampled_from([1, 3, 20])),
                tol=draw(st.sampled_from([0.0, 1e-4, 0.5])),
                selection=draw(st.sampled_from(["merge-split", "random", "mm", "balanced"])),
                walk_steps=draw(st.sampled_from(["auto", 0, 1, 50])),
                n_candidates=draw(st.sampled_from([0, 1, 3])),
                sampler=draw(st.sampled_from(["uniform", "local", "gibbs"])),
                n_neighbors=draw(st.sampled_from([1, 2, 8])),
                random_state=draw(st.sampled_from([0, 7, np.random.RandomState(1)])),
                sample_weight=None if draw(st.booleans()) else weights(draw, n))


@st.composite
def gmmkmeans_predict(draw):
    X = draw(points(n_min=4))
    k = draw(st.integers(1, 3))
    Xt = draw(points(d_max=1)) if X.shape[1] == 1 else rng_of(draw(SEEDS)).normal(
        size=(draw(st.integers(1, 10)), X.shape[1]))
    return dict(X_fit=X, n_clusters=k, X=Xt)


def _nearest(X, C, w=None):
    D = ((X.astype(np.float64)[:, None] - C.astype(np.float64)[None]) ** 2).sum(-1)
    if w is not None:
        D = D * w[:, None]
    return D.argmin(1), D


@st.composite
def sample_assignment_case(draw):
    X = draw(points(dtypes=(np.float64, np.float32)))
    n, d = X.shape
    k = draw(st.integers(1, 4))
    C = rng_of(draw(SEEDS)).normal(size=(k, d)).astype(X.dtype) * float(np.abs(X).max() + 1)
    w = None if draw(st.booleans()) else weights(draw, n, X.dtype)
    z, D = _nearest(X, C, w)
    start = float(D[np.arange(n), z].sum())
    slack = draw(st.sampled_from([0.0, 0.01, 1.0, 1e6]))
    return dict(X=X, centers=C, labels=z, budget=start * (1 + 1e-6) + slack * (start + 1),
                n_steps=draw(st.sampled_from([0, 1, 100, 5000])),
                random_state=draw(st.sampled_from([0, 3])), sample_weight=w)


@st.composite
def kmeans_bounds_case(draw):
    X = draw(points(dtypes=(np.float64, np.float32), n_min=2))
    n = X.shape[0]
    k = draw(st.integers(1, min(n, 4)))
    return dict(X=X, sample_weight=weights(draw, n, X.dtype),
                walk_steps=draw(st.sampled_from([0, 10, 500])),
                n_threads=draw(st.sampled_from([1, 2])),
                sampler=draw(st.sampled_from(["uniform", "local", "gibbs"])),
                block_size=draw(st.sampled_from([1, 7, 1 << 15])),
                relocate_empty=draw(st.booleans()), w0=np.ascontiguousarray(X[:k]),
                eta=draw(st.sampled_from([0.02, 0.3, 1.0])),
                tol=draw(st.sampled_from([0.0, 1e-4])),
                max_iter=draw(st.sampled_from([1, 5])),
                selection=draw(st.sampled_from(["random", "mm", "merge-split"])),
                random_state=draw(st.sampled_from([0, 5])))


@st.composite
def kmeans_plusplus_case(draw):
    X = draw(points(dtypes=(np.float64, np.float32)))
    return dict(X=X, n_clusters=draw(st.integers(1, X.shape[0])),
                sample_weight=weights(draw, X.shape[0], X.dtype), random_state=draw(SEEDS))


@st.composite
def balanced_bias_case(draw):
    n = draw(st.integers(1, 30))
    rng = rng_of(draw(SEEDS))
    return dict(labels=rng.integers(0, draw(st.integers(1, 5)), size=n).astype(np.int32),
                costs=rng.random(n))


@st.composite
def sample_latent_case(draw):
    rng = rng_of(draw(SEEDS))
    n, m = draw(st.integers(1, 30)), draw(st.integers(1, 5))
    costs = rng.normal(size=(n, m)) * draw(st.sampled_from([1e-3, 1.0, 1e6]))
    opts = None
    if draw(st.booleans()):
        opts = rng.integers(1, m + 1, size=n)
        pad = np.arange(m) >= opts[:, None]
        costs[pad] = draw(st.sampled_from([np.inf, np.nan, 0.0]))
    if m > 1 and draw(st.booleans()):
        costs[rng.random((n, m)) < 0.2] = np.inf          # options never taken
    allowed = np.where(np.isfinite(costs) & (np.arange(m) < (m if opts is None else opts[:, None])),
                       costs, np.inf)
    allowed[:, 0] = np.where(np.isfinite(allowed).any(1), allowed[:, 0], 0.0)
    costs[:, 0] = np.where(np.isfinite(costs[:, 0]), costs[:, 0], 0.0)
    labels = allowed.argmin(1)
    start = float(np.sum(costs[np.arange(n), labels]))
    slack = draw(st.sampled_from([0.0, 0.5, 100.0]))
    return dict(costs=costs, labels=labels, budget=start + slack * (abs(start) + 1),
                n_steps=draw(st.sampled_from([0, 1, 1000])), random_state=draw(SEEDS),
                n_options=opts, block_size=draw(st.sampled_from([1, 3, 1 << 15])))


@st.composite
def block_plan_case(draw):
    return dict(n=draw(st.integers(1, 10**6)), block_size=draw(st.integers(1, 1 << 16)),
                slack=draw(st.sampled_from([0.0, 1.5, 1e300])),
                n_steps=draw(st.sampled_from([0, 1, 10**9, 2**62, 2**63 - 1])))


INT_DTYPES = (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64)


@st.composite
def potts_energy_case(draw):
    rng = rng_of(draw(SEEDS))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=2, max_size=3)))
    z = rng.integers(0, draw(st.integers(1, 4)), size=shape)
    return dict(labels=z.astype(draw(st.sampled_from(INT_DTYPES))),
                n_threads=draw(st.sampled_from([None, 1, 2, 1000])))


@st.composite
def unary_case(draw, batch=None):
    rng = rng_of(draw(SEEDS))
    H, W, L = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    batch = draw(st.booleans()) if batch is None else batch
    shape = ((draw(st.integers(1, 3)),) if batch else ()) + (H, W, L)
    U = (rng.normal(size=shape) * draw(st.sampled_from([1e-3, 1.0, 1e4]))).astype(
        draw(st.sampled_from([np.float64, np.float32])))
    return U, rng


@st.composite
def alpha_expansion_case(draw):
    U, rng = draw(unary_case())
    z0 = rng.integers(0, U.shape[-1], size=U.shape[:-1]) if draw(st.booleans()) else None
    return dict(unary=U, lam=draw(st.sampled_from([0.0, 0.5, 3.0, 1e6])), labels0=z0,
                max_cycles=draw(st.sampled_from([1, 3, 20])),
                return_trace=draw(st.booleans()),
                n_threads=draw(st.sampled_from([None, 1, 2, 1000])))


@st.composite
def grid_energy_case(draw):
    U, rng = draw(unary_case())
    return dict(unary=U, labels=rng.integers(0, U.shape[-1], size=U.shape[:-1]),
                lam=draw(st.sampled_from([0.0, 0.5, 1e6])))


@st.composite
def potts_lagrangian_case(draw):
    U, rng = draw(unary_case(batch=True))
    n, H, W, L = U.shape
    z0 = rng.integers(0, L, size=(n, H * W)) if draw(st.booleans()) else None
    return dict(costs=U.reshape(n, H * W, L), multiplier=draw(st.sampled_from([0.0, 1.0, 1e9])),
                grid=(H, W), labels0=z0, max_cycles=draw(st.sampled_from([1, 20])))


@st.composite
def centroid_index_case(draw):
    rng = rng_of(draw(SEEDS))
    d = draw(st.integers(1, 3))
    A = rng.normal(size=(draw(st.integers(1, 8)), d))
    B = rng.normal(size=(draw(st.integers(1, 8)), d))
    fn = draw(st.sampled_from(["centroid_index", "centroid_index_one_way"]))
    kw = dict(function=fn, A=A, B=B)
    if fn == "centroid_index":
        kw["both"] = draw(st.booleans())
    return kw


@st.composite
def centroids_from_labels_case(draw):
    X = draw(points())
    z = rng_of(draw(SEEDS)).integers(-2, 4, size=X.shape[0])
    return dict(function="centroids_from_labels", X=X, labels=z)


@st.composite
def sse_case(draw):
    X = draw(points())
    C = rng_of(draw(SEEDS)).normal(size=(draw(st.integers(1, 4)), X.shape[1]))
    return dict(function="sse_per_point", X=X, centers=C)


@st.composite
def read_points_case(draw):
    rng = rng_of(draw(SEEDS))
    if draw(st.booleans()):
        X = rng.normal(size=(draw(st.integers(0, 5)), draw(st.integers(1, 3))))
        how = draw(st.sampled_from(["float64", "float32", "int", "bool", "complex", "1-D",
                                    "3-D", "nan", "str"]))
        arr = {"float32": X.astype(np.float32), "int": X.astype(int), "bool": X > 0,
               "complex": X + 1j, "1-D": X.ravel(), "3-D": X[None],
               "nan": np.where(X > 1, np.nan, X), "str": X.astype(str)}.get(how, X)
        buf = io.BytesIO()
        np.save(buf, arr)
        content = buf.getvalue()
        if draw(st.booleans()):
            content = content[: draw(st.integers(0, len(content)))]     # truncated file
        return dict(content=content, suffix=".npy")
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    sep = draw(st.sampled_from([",", " ", "\t", ", "]))
    rows = [sep.join(f"{v:.6g}" for v in rng.normal(size=d)) for _ in range(n)]
    if draw(st.booleans()):
        rows.insert(0, sep.join(f"col{j}" for j in range(d)))          # a header
    edits = draw(st.lists(st.sampled_from(["typo", "blank", "comment", "ragged", "nan", "inf"]),
                          max_size=2))
    for e in edits:
        i = draw(st.integers(0, len(rows) - 1))
        if e == "typo":
            rows[i] = rows[i].replace("0", "O", 1) if "0" in rows[i] else rows[i] + "x"
        elif e == "blank":
            rows.insert(i, "")
        elif e == "comment":
            rows.insert(i, "# a comment")
        elif e == "ragged":
            rows[i] = rows[i] + sep + "1.0"
        else:
            rows[i] = sep.join([e] * d)
    text = "\n".join(rows) + draw(st.sampled_from(["\n", "", "\r\n"]))
    bom = "\ufeff" if draw(st.booleans()) else ""
    return dict(content=(bom + text).encode("utf-8"),
                suffix=draw(st.sampled_from([".csv", ".txt", ""])))


@st.composite
def datasets_case(draw):
    fn = draw(st.sampled_from(["make_gmm200", "make_norm25", "load_sipu"]))
    if fn == "make_gmm200":
        return dict(function=fn, random_state=draw(SEEDS),
                    n_components=draw(st.integers(1, 10)),
                    n_per_component=draw(st.integers(1, 5)),
                    side=draw(st.sampled_from([1.0, 70.0, 1e6])),
                    min_distance=draw(st.sampled_from([0.0, 2.5, 50.0])),
                    shuffle=draw(st.booleans()), return_centers=draw(st.booleans()))
    if fn == "make_norm25":
        k = draw(st.integers(1, 5))
        return dict(function=fn, random_state=draw(SEEDS), n_centers=k,
                    n_samples=draw(st.integers(k, 50)), n_features=draw(st.integers(1, 4)),
                    side=draw(st.sampled_from([1.0, 500.0])),
                    std=draw(st.sampled_from([0.1, 1.0])), shuffle=draw(st.booleans()))
    return dict(function=fn, name=draw(st.sampled_from(["d31", "R15", "cloud"])))


@st.composite
def generators_case(draw):
    if draw(st.booleans()):
        return dict(function="make_cluttered_digits", n_samples=draw(st.integers(6, 20)),
                    classes=draw(st.sampled_from([(0, 1), (0, 1, 2, 3, 4, 5)])),
                    grid=draw(st.sampled_from([3, 9])), stride=draw(st.sampled_from([1, 2])),
                    n_distractors=draw(st.integers(0, 4)), noise=draw(st.sampled_from([0.0, 0.1])),
                    random_state=draw(SEEDS))
    n_parts = draw(st.integers(2, 4))
    return dict(function="make_scenes", n_samples=draw(st.integers(2, 12)),
                n_classes=draw(st.integers(2, 3)), n_parts=n_parts,
                n_features=draw(st.integers(1, 4)),
                grid=draw(st.sampled_from([(2, 2), (3, 4)])),
                regions_per_class=draw(st.integers(1, n_parts)),
                noise=draw(st.sampled_from([0.0, 1.5])), random_state=draw(SEEDS))


@st.composite
def lssvm_fit_case(draw):
    rng = rng_of(draw(SEEDS))
    C = draw(st.integers(2, 3))
    n = draw(st.integers(C, 10))
    y = np.concatenate([np.arange(C), rng.integers(0, C, size=n - C)])
    d = draw(st.integers(1, 3))
    regions = draw(st.booleans())
    kw = dict(y=y, n_classes=C, lam=draw(st.sampled_from([1e-3, 0.1, 10.0])),
              method=draw(st.sampled_from(["ccp", "gmm-random", "gmm-biased"])),
              eta=draw(st.sampled_from([0.1, 1.0])),
              random_bounds=draw(st.sampled_from(["walk", "subset"])),
              walk_steps=draw(st.sampled_from(["auto", 0, 10])),
              max_iter=draw(st.sampled_from([1, 3])), solver_tol=draw(st.sampled_from([1e-4, 1e-2])),
              solver_max_iter=draw(st.sampled_from([5, 50])), random_state=0)
    if regions:
        H, W = draw(st.sampled_from([(1, 2), (2, 2)]))
        kw.update(model="regions", n_parts=draw(st.integers(2, 3)), grid=(H, W), bias="potts",
                  X=rng.normal(size=(n, H * W, d)),
                  latent_init=draw(st.sampled_from([None, "random"])))
    else:
        L = draw(st.integers(1, 4))
        positions = rng.random((L, 2)) if draw(st.booleans()) else None
        inits = ["random"] + (["center", "top-left"] if positions is not None else [])
        kw.update(model="multiclass", positions=positions, bias="multifold",
                  n_folds=draw(st.integers(2, 3)),
                  solver=draw(st.sampled_from(["cutting-plane", "dcd"])),
                  X=rng.normal(size=(n, L, d)).astype(draw(st.sampled_from([np.float64,
                                                                            np.float32]))),
                  latent_init=draw(st.sampled_from(inits + ["array"])))
        if kw["latent_init"] == "array":
            kw["latent_init"] = rng.integers(0, L, size=n)
    return kw


@st.composite
def qp_case(draw):
    rng = rng_of(draw(SEEDS))
    K, d = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    A = rng.normal(size=(K, d))
    alpha = rng.dirichlet(np.ones(K)) if draw(st.booleans()) else None
    return dict(function="solve_simplex_qp", G=A @ A.T, b=rng.normal(size=K),
                lam=draw(st.sampled_from([1e-3, 1.0, 100.0])), alpha=alpha,
                tol=draw(st.sampled_from([1e-10, 1e-3])),
                max_iter=draw(st.sampled_from([10, 10000])))


@st.composite
def select_case(draw):
    rng = rng_of(draw(SEEDS))
    n, m = draw(st.integers(1, 12)), draw(st.integers(1, 4))
    costs = rng.normal(size=(n, m))
    touching = costs.argmin(1)
    start = float(costs[np.arange(n), touching].sum())
    budget = start + draw(st.sampled_from([0.0, 0.5, 10.0]))
    if draw(st.booleans()):
        return dict(function="lagrangian_select", gain=rng.normal(size=(n, m)), costs=costs,
                    budget=budget, start=touching, n_bisect=draw(st.sampled_from([0, 60])))
    return dict(function="subset_select", costs=costs, touching=touching,
                previous=rng.integers(0, m, size=n), budget=budget,
                order=rng.permutation(n), min_size=draw(st.integers(0, n)))


@st.composite
def potts_select_case(draw):
    rng = rng_of(draw(SEEDS))
    n, L = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    H, W = draw(st.sampled_from([(1, 1), (2, 2), (2, 3)]))
    costs = rng.normal(size=(n, H * W, L))
    touching = costs.argmin(-1)
    start = float(costs.min(-1).sum())
    return dict(function="potts_select", costs=costs,
                budget=start + draw(st.sampled_from([0.0, 0.5, 10.0])), touching=touching,
                grid=(H, W))


@st.composite
def parts_case(draw):
    rng = rng_of(draw(SEEDS))
    H, W = draw(st.sampled_from([(1, 2), (2, 2)]))
    n, d, P = draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    X = rng.normal(size=(n, H * W, d))
    fn = draw(st.sampled_from(["discover_parts", "part_unaries", "coherent_labels"]))
    if fn == "discover_parts":
        return dict(function=fn, X=X, n_parts=min(P, n * H * W), random_state=0)
    centres = rng.normal(size=(P, d))
    scale = draw(st.sampled_from([None, 1.0]))
    if fn == "part_unaries":
        return dict(function=fn, X=X, centres=centres, scale=scale)
    return dict(function=fn, X=X, centres=centres, lam=draw(st.sampled_from([0.0, 0.5])),
                grid=(H, W), scale=scale)


@st.composite
def solver_case(draw):
    rng = rng_of(draw(SEEDS))
    C, n, L, d = draw(st.integers(2, 3)), draw(st.integers(2, 8)), draw(st.integers(1, 3)), 2
    i32 = np.int32     # the dtypes the learner hands the solvers
    return dict(solver=draw(st.sampled_from(["cutting-plane", "bcfw"])), n_classes=C,
                X=rng.normal(size=(n, L, d)), y=rng.integers(0, C, size=n).astype(i32),
                idx=np.arange(n, dtype=np.int64), lam=draw(st.sampled_from([1e-2, 1.0])),
                tol=draw(st.sampled_from([1e-3, 1e-6])), max_iter=draw(st.sampled_from([1, 20])),
                z=rng.integers(0, L, size=n).astype(i32), w_start=np.zeros(C * d))


LSSVM_FIT = ("lam", "method", "eta", "random_bounds", "walk_steps", "max_iter", "solver_tol",
             "solver_max_iter", "random_state", "bias", "n_folds", "solver", "y", "latent_init")
KMEANS_FAMILY = ("X", "sample_weight", "w0", "walk_steps", "n_threads", "block_size", "sampler")

#: Targets that pass: every generated input gets a valid result or a named error.
TARGETS = [
    Spec("GMMKMeans.fit", gmmkmeans, examples=400),
    Spec("GMMKMeans.predict/transform/score", gmmkmeans_predict, perturb=("X",)),
    Spec("generalized_mm(KMeansBounds)", kmeans_bounds_case,
         perturb=("eta", "tol", "max_iter", "random_state")),
    Spec("sample_latent", sample_latent_case, examples=300),
    Spec("block_plan", block_plan_case),
    Spec("potts_energy", potts_energy_case),
    Spec("alpha_expansion", alpha_expansion_case, examples=300),
    Spec("grid_energy", grid_energy_case),
    Spec("potts_lagrangian", potts_lagrangian_case),
    Spec("centroid_index", centroid_index_case),
    Spec("centroids_from_labels", centroids_from_labels_case),
    Spec("sse_per_point", sse_case),
    Spec("read_points", read_points_case, perturb=("-",), examples=300),
    Spec("read_points(path)", lambda: st.fixed_dictionaries({"path": st.just("missing.csv")}),
         examples=20, min_valid=0),
    Spec("make_gmm200/make_norm25/load_sipu", datasets_case),
    Spec("LatentSSVM.fit", lssvm_fit_case, perturb=LSSVM_FIT, examples=120),
]

# Exact once-failing calls of the FIXED targets.
_X4 = np.array([[0.0], [1.0], [10.0], [11.0]])
_X300 = np.random.default_rng(0).random((300, 2))
_BOUNDS = dict(X=_X300, sample_weight=np.ones(300), walk_steps=0, n_threads=1,
               sampler="uniform", block_size=1 << 15, relocate_empty=False, w0=_X300[:3].copy(),
               eta=0.1, tol=1e-4, max_iter=300, selection="random", random_state=0)
_NEAR32 = np.array([[3.0, -1.32104862e-04], [3.0, 1.04900115e-04], [3.0, 3.61595041e-04]],
                   dtype=np.float32)
_NEAR32_9 = np.array([[3.0, 8.2161813e-04], [3.0, -1.3031572e-03], [3.0, 4.4637459e-04],
                      [3.0, 5.8111810e-04], [3.0, 2.9413251e-04], [3.0, 5.4671301e-04],
                      [3.0, -1.6290994e-04], [3.0, 5.9884624e-04], [3.0, -2.9245674e-04]],
                     dtype=np.float32)
_SA = dict(X=_X4, centers=_X4[:2].copy(), labels=np.array([0, 1, 1, 1]), budget=1e3, n_steps=10,
           random_state=0, sample_weight=None)
_FIT = dict(y=np.array([0, 1, 0, 1]), n_classes=2, lam=0.1, method="ccp", eta=0.1,
            random_bounds="walk", walk_steps="auto", max_iter=1, solver_tol=1e-4, solver_max_iter=5,
            random_state=0, model="multiclass", positions=None, bias="multifold", n_folds=2,
            solver="cutting-plane", X=np.arange(8.0).reshape(4, 1, 2), latent_init="random")
_CP = dict(solver="cutting-plane", n_classes=2, X=np.arange(16.0).reshape(4, 2, 2) / 16,
           y=np.array([0, 1, 0, 1], np.int32), idx=np.arange(4), lam=1.0, tol=1e-3,
           max_iter=20, z=np.zeros(4, np.int32), w_start=np.zeros(4))
_COSTS = np.array([[0.0, 1.0], [0.5, 0.2], [0.3, 0.9]])

#: Targets whose exact once-failing calls are kept as regressions (issue 12: k-means,
#: potts_select, then the LS-SVM models, solvers, helpers and data sets), run with the
#: generated inputs like TARGETS.
FIXED = [
    Spec("GMMKMeans.fit extreme values",
         lambda: gmmkmeans(scales=(1e20, 1e30, 1e154, 1e200, 1e-200),
                           dtypes=(np.float64, np.float32)), perturb=("-",),
         calls=(dict(X=(_X4 * 1e20).astype(np.float32), n_clusters=2, random_state=0),
                dict(X=_X4 * 1e154, n_clusters=2, random_state=0),
                # float64 rows near 1e19: their float32 screening overflowed (predict != labels_)
                dict(X=np.array([[1.2573022109339331e+19, -1.3210486329130189e+19],
                                 [6.4042265044328202e+19, 1.0490011715303971e+19]]),
                     n_clusters=2, eta=1e-9, max_iter=1, tol=0.0, n_candidates=0,
                     random_state=0, sample_weight=np.array([0.7369616873214543,
                                                             0.3697867137638703])))),
    Spec("generalized_mm(KMeansBounds) bad family data", kmeans_bounds_case,
         perturb=KMEANS_FAMILY,
         calls=(dict(_BOUNDS, w0=np.random.default_rng(1).random((3, 1))),   # issue 12's abort
                dict(_BOUNDS, sample_weight=np.ones(299)),      # reads past the buffer
                dict(_BOUNDS, X=None))),
    Spec("generalized_mm(KMeansBounds) selection", kmeans_bounds_case, perturb=("selection",),
         calls=(dict(_BOUNDS, selection="radnom"),
                # float32 points 1e-4 apart at 3.0: the float32 search's labels are the
                # nearest only to within its rounding, which the check now allows
                dict(_BOUNDS, X=_NEAR32, sample_weight=np.array([0.73696166, 0.3697867,
                                                                 0.14097352], np.float32),
                     w0=_NEAR32[:2].copy(), eta=0.02, tol=0.0, max_iter=1, block_size=1),
                # the same at 9 points: a gap d_t = B - F read -1e-8, within that rounding
                dict(_BOUNDS, X=_NEAR32_9, sample_weight=np.linspace(0.1, 1.0, 9,
                                                                     dtype=np.float32),
                     w0=_NEAR32_9[:2].copy(), eta=0.02, tol=0.0, max_iter=1, block_size=1))),
    Spec("sample_assignment", sample_assignment_case,
         calls=(dict(_SA, budget=None), dict(_SA, budget=[1e3]))),
    Spec("kmeans_plusplus", kmeans_plusplus_case,
         calls=(dict(X=None, n_clusters=1, sample_weight=np.ones(4), random_state=0),
                dict(X=_X4, n_clusters=2.5, sample_weight=np.ones(4), random_state=0),
                dict(X=_X4, n_clusters=2, sample_weight=np.array([1.0, np.nan, 1, 1]),
                     random_state=0))),
    Spec("balanced_bias", balanced_bias_case,
         calls=(dict(labels=np.array([-1, 0]), costs=np.zeros(2)),
                dict(labels=None, costs=np.zeros(2)))),
    Spec("potts_select", potts_select_case,           # fixed on the lssvm branch (680e0ed)
         calls=(dict(function="potts_select", costs=_COSTS[None], budget=None,
                     touching=_COSTS.argmin(1)[None], grid=(1, 3)),)),
    # the LS-SVM side of issue 12: models, solvers, selection and part helpers, data sets
    Spec("LatentMulticlassModel/RegionPartModel", lssvm_fit_case,
         perturb=("n_classes", "positions", "n_parts", "grid", "X"), examples=30,
         calls=(dict(_FIT, n_classes=2**64), dict(_FIT, positions=""), dict(_FIT, X=0),
                dict(_FIT, X=float("nan")),
                dict({k: v for k, v in _FIT.items() if k != "positions"}, model="regions",
                     n_parts=2**63, grid=(1, 1), bias="potts"))),
    Spec("solve_simplex_qp", qp_case,
         calls=(dict(function="solve_simplex_qp", G=np.eye(2), b=np.ones(2), lam=None),
                dict(function="solve_simplex_qp", G=np.eye(2), b=np.ones(2), lam=1.0,
                     alpha="x"),
                # the active set lost 1'x = 1 to rounding (lam b >> G): alpha off the simplex
                dict(function="solve_simplex_qp", G=np.diag([8.0, 19.0, 7.0]),
                     b=np.array([1.2, 0.2, 0.9]), lam=2**63, alpha=np.array([0.1, 0.2, 0.7])))),
    Spec("lagrangian_select/subset_select", select_case,
         calls=(dict(function="lagrangian_select", gain=None, costs=_COSTS, budget=2.0,
                     start=_COSTS.argmin(1)),
                dict(function="subset_select", costs=_COSTS, touching=_COSTS.argmin(1),
                     previous=0, budget=2.0, order=np.arange(3), min_size=0))),
    Spec("discover_parts/part_unaries/coherent_labels", parts_case,
         calls=(dict(function="discover_parts", X=None, n_parts=1, random_state=0),
                dict(function="part_unaries", X=np.ones((1, 2, 2)), centres=np.ones((2, 2)),
                     scale=()))),
    Spec("CuttingPlane/BCFW.solve", solver_case,
         calls=(dict(_CP, lam=None), dict(_CP, idx=np.array([0, 1, 2, 10**6])),
                # features overflow the planes' Gram matrix: the QP ran for minutes
                dict(_CP, X=np.array([[[0.65, -0.06], [0.8, 0.0], [1.38, -0.34]],
                                      [[2.25, -0.14], [1.6, 0.63], [1.24, 1e308]]]),
                     y=np.array([1, 1], np.int32), idx=np.arange(2), lam=0.01, tol=1e-6,
                     z=np.zeros(2, np.int32)),
                dict(_CP, solver="bcfw", w_start=np.full(4, np.nan)))),
    Spec("make_cluttered_digits/make_scenes", generators_case, examples=40,
         calls=(dict(function="make_cluttered_digits", n_samples=6, classes=None, grid=3,
                     stride=1, n_distractors=0, noise=0.0, random_state=0),
                dict(function="make_cluttered_digits", n_samples=6, classes=(0, 1), grid=3,
                     stride=1, n_distractors=2**63, noise=0.0, random_state=0),   # a hang
                dict(function="make_scenes", n_samples=12, n_classes=3, n_parts=2**64,
                     n_features=3, grid=(3, 4), regions_per_class=1, noise=0.0,
                     random_state=0))),
]


def _params(specs):
    return [pytest.param(spec, id=spec.name) for spec in specs]


def _call(spec: Spec, kw: dict, worker, fuzz_stats):
    """Run one case in the worker and count it; returns (verdict, detail)."""
    digest = hashlib.sha1(pickle.dumps((spec.name, kw))).hexdigest()
    stats = fuzz_stats.setdefault(spec.name, {"distinct": set(), "valid": 0, "named": 0,
                                              "fail": 0, "seconds": 0.0})
    stats["distinct"].add(digest)
    t0 = time.perf_counter()
    verdict, detail = worker.run(spec.name, kw)
    stats["seconds"] += time.perf_counter() - t0
    stats[verdict] += 1
    return verdict, detail


def _fuzz(spec: Spec, data, worker, fuzz_stats):
    kw = data.draw(spec.cases(), label="kwargs")
    verdict, detail = _call(spec, kw, worker, fuzz_stats)
    assert verdict != "fail", f"{spec.name}({_show(kw)}):\n{detail}"


def _show(kw):
    out = []
    for k, v in kw.items():
        if isinstance(v, np.ndarray):
            r = np.array2string(v, threshold=200, precision=17, separator=", ")
            out.append(f"{k}=np.array({r}, dtype={v.dtype})  # shape {v.shape}")
        else:
            out.append(f"{k}={v!r}"[:300])
    return ", ".join(out)


COMMON = dict(deadline=None, database=None, print_blob=False,
              suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("spec", _params(TARGETS + FIXED))
def test_fuzz(spec, worker, fuzz_stats):
    for kw in spec.calls:
        verdict, detail = _call(spec, kw, worker, fuzz_stats)
        assert verdict != "fail", f"{spec.name}({_show(kw)}):\n{detail}"

    @settings(max_examples=spec.examples, **COMMON)
    @given(data=st.data())
    def run(data):
        _fuzz(spec, data, worker, fuzz_stats)
    run()
    stats = fuzz_stats[spec.name]
    # the check must see both sides: results it verified, and rejections
    assert stats["valid"] >= spec.min_valid * spec.examples, \
        f"only {stats['valid']} valid results"
