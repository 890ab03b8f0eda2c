"""The process that runs the fuzz test's calls (see test_fuzz.py), so a crash cannot take pytest.

:func:`serve` runs in a child forked from a multiprocessing fork server that imported this
module (and so gmmfast) once. For each ``(target, kwargs)`` received on its connection it sends
back ``(verdict, detail)``: "valid" (a result that passed the target's check), "named" (a
ValueError/TypeError naming a parameter of the call) or "fail" (anything else: a wrong
result, an error that names no parameter, another exception). A signal or a hang is seen by
the parent.

Every target is ``call(kw) -> result`` and ``check(kw, result)`` (raises AssertionError with
what is wrong); ``NAMES`` adds words an error may use for a parameter (e.g. "path" for the
file a test writes).
"""
import faulthandler
import math
import os
import re
import tempfile
import traceback
import warnings

import numpy as np

import gmmfast  # noqa: F401 - imported once, in the fork server (see test_fuzz.Worker)
import gmmfast.lssvm  # noqa: F401

# ------------------------------------------------------------------------------ helpers


def _arr(x):
    return np.asarray(x)


def _nearest_costs(X, C, w=None):
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    D = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    if w is not None:        # weights: an array or one number for all
        D = D * np.broadcast_to(np.asarray(w, dtype=np.float64), X.shape[:1])[:, None]
    return D


def _labels_ok(z, n, k):
    z = np.asarray(z)
    assert z.shape == (n,), f"labels of shape {z.shape}, expected ({n},)"
    assert z.dtype.kind in "iu", f"labels of dtype {z.dtype}"
    assert n == 0 or (z.min() >= 0 and z.max() < k), f"labels outside [0, {k})"


def _close(a, b, rtol, atol=0.0, what="value"):
    assert math.isfinite(a), f"{what} {a!r} is not finite"
    assert abs(a - b) <= atol + rtol * max(abs(a), abs(b)), f"{what} {a!r} != {b!r}"


def _check_kmeans_fit(km, X, k, w=None):
    X64 = np.asarray(X, dtype=np.float64)
    n, d = X64.shape
    _labels_ok(km.labels_, n, k)
    C = km.cluster_centers_
    assert C.shape == (k, d), f"centers of shape {C.shape}"
    assert np.isfinite(C).all(), "centers not finite"
    want = np.float32 if np.asarray(X).dtype == np.float32 else np.float64
    assert C.dtype == want, f"centers of dtype {C.dtype} for X of dtype {np.asarray(X).dtype}"
    D = _nearest_costs(X64, C, w)
    ww = 1.0 if w is None else np.broadcast_to(np.asarray(w, dtype=np.float64), (n,))
    energy = float((D.min(1)).sum()) + float(((X64 ** 2).sum(1) * ww).sum())
    eps = 1e-4 if want == np.float32 else 1e-10
    cost = float(D[np.arange(n), km.labels_].sum())
    _close(km.inertia_, cost, eps, eps * energy + 1e-300, "inertia_")
    assert cost <= D.min(1).sum() + eps * energy + 1e-300, "labels_ are not the nearest centers"
    assert 1 <= km.n_iter_, f"n_iter_ = {km.n_iter_}"
    viol = km.history_.invariant_violations(rtol=eps, atol=eps * energy + 1e-300)
    assert viol == [], f"invariants: {viol}"


# ------------------------------------------------------------------------------ targets

def _gmmkmeans_fit(kw):
    from gmmfast import GMMKMeans
    params = {k: v for k, v in kw.items() if k not in ("X", "sample_weight")}
    return GMMKMeans(**params).fit(kw["X"], sample_weight=kw.get("sample_weight"))


def _gmmkmeans_check(kw, km):
    w = kw.get("sample_weight")
    _check_kmeans_fit(km, kw["X"], kw["n_clusters"], None if w is None else np.asarray(w))
    assert np.array_equal(km.predict(kw["X"]), km.labels_), "predict(X) != labels_"


def _gmmkmeans_predict(kw):
    from gmmfast import GMMKMeans
    km = GMMKMeans(kw["n_clusters"], random_state=0, max_iter=5).fit(kw["X_fit"])
    return km, km.predict(kw["X"]), km.transform(kw["X"]), km.score(kw["X"])


def _gmmkmeans_predict_check(kw, out):
    km, z, T, score = out
    X = np.asarray(kw["X"], dtype=np.float64)
    _labels_ok(z, X.shape[0], kw["n_clusters"])
    D = _nearest_costs(X, km.cluster_centers_)
    assert T.shape == D.shape and np.allclose(T ** 2, D, rtol=1e-4, atol=1e-6 * (1 + D.max()))
    assert math.isfinite(score) and score <= 0


def _sample_assignment(kw):
    from gmmfast.cluster import sample_assignment
    return sample_assignment(**kw)


def _sample_assignment_check(kw, out):
    z, value, acc = out
    X = np.asarray(kw["X"], dtype=np.float64)
    C = np.asarray(kw["centers"], dtype=np.float64)
    _labels_ok(z, X.shape[0], C.shape[0])
    assert value <= kw["budget"], f"cost {value} > budget {kw['budget']}"
    w = kw.get("sample_weight")
    D = _nearest_costs(X, C, None if w is None else np.asarray(w))
    _close(value, float(D[np.arange(X.shape[0]), z].sum()), 1e-4, 1e-300, "cost")
    assert 0 <= acc <= kw["n_steps"], f"accepted {acc} of {kw['n_steps']} proposals"


def _kmeans_gmm(kw):
    from gmmfast.cluster import KMeansBounds
    from gmmfast.core import generalized_mm
    fam = KMeansBounds(kw["X"], kw["sample_weight"], walk_steps=kw["walk_steps"],
                       n_threads=kw["n_threads"], sampler=kw["sampler"],
                       block_size=kw["block_size"], relocate_empty=kw["relocate_empty"])
    return generalized_mm(fam, kw["w0"], eta=kw["eta"], tol=kw["tol"], max_iter=kw["max_iter"],
                          selection=kw["selection"], random_state=kw["random_state"])


def _kmeans_gmm_check(kw, res):
    X = np.asarray(kw["X"], dtype=np.float64)
    w = np.asarray(1.0 if kw["sample_weight"] is None else kw["sample_weight"], dtype=np.float64)
    if w.ndim == 0:                        # a scalar weight (or None: ones) for every point
        w = np.full(X.shape[0], float(w))
    assert w.shape == X.shape[:1], f"a result for {w.shape} weights and {X.shape[0]} points"
    assert np.shape(kw["w0"])[1:] == X.shape[1:], "a result for w0 and X of different widths"
    assert res.w.shape == np.shape(kw["w0"]) and np.isfinite(res.w).all(), "centers"
    D = _nearest_costs(X, res.w, w)
    energy = float(((X ** 2).sum(1) * w).sum()) + float(D.min(1).sum())
    # float32 rows are searched in float32: a label is the nearest center to within the
    # search's rounding, 4 (d + 4) 2^-24 (||x||^2 + max ||c||^2) in squared distance per row,
    # so F(w) and the gaps d_t = B(w) - F(w) hold to within that
    rounding = 0.0
    if np.asarray(kw["X"]).dtype == np.float32:
        csq = float((np.asarray(res.w, dtype=np.float64) ** 2).sum(1).max())
        rounding = 4 * (X.shape[1] + 4) * 2.0 ** -24 * float((((X ** 2).sum(1) + csq) * w).sum())
    _close(res.objective, float(D.min(1).sum()), 1e-4, 1e-9 * energy + rounding + 1e-300,
           "objective")
    viol = res.history.invariant_violations(rtol=1e-6, atol=1e-9 * energy + rounding + 1e-300)
    assert viol == [], f"invariants: {viol}"


def _kmeans_plusplus(kw):
    from gmmfast.cluster import kmeans_plusplus
    return kmeans_plusplus(kw["X"], kw["n_clusters"], kw["sample_weight"], kw["random_state"])


def _kmeans_plusplus_check(kw, C):
    X = np.asarray(kw["X"])
    assert C.shape == (kw["n_clusters"], X.shape[1]), f"centers of shape {C.shape}"
    rows = {tuple(r) for r in X.astype(C.dtype)}
    assert all(tuple(c) in rows for c in C), "a center is not a sample"


def _balanced_bias(kw):
    from gmmfast.cluster import balanced_bias
    return balanced_bias(kw["labels"], kw["costs"])


def _balanced_bias_check(kw, v):
    k = len(np.unique(kw["labels"]))
    assert isinstance(v, float) and 0 <= v <= math.log(max(k, 1)) + 1e-12, f"entropy {v}"


def _sample_latent(kw):
    from gmmfast.latent import sample_latent
    return sample_latent(**kw)


def _sample_latent_check(kw, out):
    from gmmfast.latent import table_value
    z, value, acc = out
    costs = np.asarray(kw["costs"], dtype=np.float64)
    n, m = costs.shape
    opts = np.full(n, m) if kw.get("n_options") is None else np.asarray(kw["n_options"])
    _labels_ok(z, n, m)
    assert (z < opts).all(), "a label beyond n_options"
    assert value <= kw["budget"] and value == table_value(costs, z), "value"
    assert 0 <= acc <= kw["n_steps"]


def _block_plan(kw):
    from gmmfast.latent import block_plan
    return block_plan(**kw)


def _block_plan_check(kw, out):
    slack, steps = out
    n, b = kw["n"], kw["block_size"]
    assert steps.shape == slack.shape == (-(-n // b),)
    assert int(steps.sum()) == kw["n_steps"] and (steps >= 0).all()
    assert math.isclose(float(slack.sum()), kw["slack"], rel_tol=1e-9, abs_tol=1e-300)


def _potts_energy(kw):
    from gmmfast.potts import potts_energy
    return potts_energy(**kw)


def _numpy_potts(z):
    z = np.asarray(z)
    return ((z[..., :, 1:] != z[..., :, :-1]).sum((-1, -2))
            + (z[..., 1:, :] != z[..., :-1, :]).sum((-1, -2)))


def _potts_energy_check(kw, e):
    assert np.array_equal(np.asarray(e), _numpy_potts(kw["labels"])), "energy"


def _grid_energy_ref(U, z, lam):
    U = np.asarray(U, dtype=np.float64)
    z = np.asarray(z)
    data = np.take_along_axis(U, z[..., None].astype(np.intp), -1)[..., 0]
    return data.sum((-1, -2)) + lam * _numpy_potts(z)


def _alpha_expansion(kw):
    from gmmfast.potts import alpha_expansion
    return alpha_expansion(**kw)


def _alpha_expansion_check(kw, out):
    U = np.asarray(kw["unary"], dtype=np.float64)
    z, e = out[0], out[1]
    assert z.shape == U.shape[:-1] and z.dtype == np.int32, "labels shape"
    assert z.min() >= 0 and z.max() < U.shape[-1], "labels outside [0, L)"
    lam = float(kw["lam"])
    ref = _grid_energy_ref(U, z, lam)
    scale = np.abs(U).sum() + lam * z.size * 2 + 1e-300
    assert np.allclose(e, ref, rtol=1e-9, atol=1e-12 * scale), "energy != E(labels)"
    start = kw.get("labels0")
    start = U.argmin(-1) if start is None else start
    assert np.all(np.asarray(e) <= _grid_energy_ref(U, start, lam) + 1e-9 * scale), \
        "energy above the start's"


def _grid_energy(kw):
    from gmmfast.potts import grid_energy
    return grid_energy(**kw)


def _grid_energy_check(kw, e):
    ref = _grid_energy_ref(kw["unary"], kw["labels"], float(kw["lam"]))
    assert np.allclose(e, ref, rtol=1e-9), "energy"


def _potts_lagrangian(kw):
    from gmmfast.potts import potts_lagrangian
    return potts_lagrangian(**kw)


def _potts_lagrangian_check(kw, out):
    from gmmfast.potts import potts_energy
    z, cost, pot = out
    C = np.asarray(kw["costs"], dtype=np.float64)
    n, R, L = C.shape
    H, W = kw["grid"]
    assert z.shape == (n, R) and z.min() >= 0 and z.max() < L
    ref = np.take_along_axis(C, z[..., None].astype(np.intp), -1)[..., 0].sum(1)
    assert np.allclose(cost, ref, rtol=1e-9, atol=1e-12 * (np.abs(C).sum() + 1e-300))
    assert np.array_equal(pot, potts_energy(z.reshape(n, H, W)))


def _metrics(kw):
    from gmmfast import metrics
    fn = getattr(metrics, kw.pop("function"))
    return fn(**kw)


def _centroid_index_check(kw, ci):
    kA, kB = len(np.asarray(kw["A"])), len(np.asarray(kw["B"]))
    if kw.get("both"):
        ci, ab, ba = ci
        assert ci == max(ab, ba)
    assert isinstance(ci, int) and 0 <= ci < max(kA, kB), f"CI {ci}"


def _centroids_from_labels_check(kw, C):
    X = np.asarray(kw["X"], dtype=np.float64)
    z = np.asarray(kw["labels"])
    u = np.unique(z)
    assert C.shape == (len(u), X.shape[1]) and np.isfinite(C).all()
    for j, lab in enumerate(u):
        assert np.allclose(C[j], X[z == lab].mean(0), rtol=1e-9, atol=1e-12 * np.abs(X).max())


def _sse_check(kw, v):
    ref = _nearest_costs(kw["X"], kw["centers"]).min(1).mean()
    _close(v, float(ref), 1e-9, 1e-300, "sse")


def _read_points(kw):
    from gmmfast.datasets import read_points
    if "path" in kw:
        return read_points(kw["path"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "points" + kw["suffix"])
        with open(path, "wb") as fh:
            fh.write(kw["content"])
        X = read_points(path)
    return X


def _read_points_check(kw, X):
    assert X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 and X.dtype == np.float64
    assert np.isfinite(X).all()
    if kw.get("suffix", ".npy") != ".npy":     # every data line becomes one point
        lines = [s.split("#", 1)[0].strip()
                 for s in kw["content"].decode("utf-8-sig").splitlines()]
        lines = [s for s in lines if s]
        assert X.shape[0] in (len(lines), len(lines) - 1), f"{X.shape[0]} points of {len(lines)}"


def _datasets(kw):
    from gmmfast import datasets
    fn = getattr(datasets, kw.pop("function"))
    if fn.__name__ == "load_sipu":
        with tempfile.TemporaryDirectory() as tmp:
            return fn(kw["name"], tmp, download_if_missing=False)
    return fn(**kw)


def _dataset_check(kw, out):
    X, y = (out.data, out.target) if hasattr(out, "data") else (out[0], out[1])
    X = np.asarray(X)
    assert X.ndim >= 2 and X.shape[0] == len(y) and np.isfinite(X).all()


def _lssvm_fit(kw):
    from gmmfast.lssvm import LatentMulticlassModel, LatentSSVM, RegionPartModel
    kw = dict(kw)
    X, y, latent_init = kw.pop("X"), kw.pop("y"), kw.pop("latent_init")
    if kw.pop("model") == "regions":
        model = RegionPartModel(kw.pop("n_classes"), kw.pop("n_parts"), kw.pop("grid"))
    else:
        model = LatentMulticlassModel(kw.pop("n_classes"), positions=kw.pop("positions"))
    est = LatentSSVM(model, **kw).fit(X, y, latent_init=latent_init)
    return est, est.predict(X)


def _lssvm_fit_check(kw, out):
    est, pred = out
    n = len(kw["y"])
    assert np.isfinite(est.coef_).all() and math.isfinite(est.objective_), "not finite"
    _labels_ok(pred, n, kw["n_classes"])
    f0 = est.history_.initial_objective
    viol = est.history_.invariant_violations(rtol=1e-6, atol=1e-9 * (abs(f0) + 1))
    assert viol == [], f"invariants: {viol}"


def _lssvm_function(kw):
    from gmmfast import lssvm
    fn = getattr(lssvm, kw.pop("function"))
    return fn(**kw)


def _qp_check(kw, out):
    alpha, dual = out
    b = np.asarray(kw["b"], dtype=np.float64)
    assert alpha.shape == b.shape and np.isfinite(alpha).all() and math.isfinite(dual)
    assert (alpha >= -1e-12).all() and abs(alpha.sum() - 1) <= 1e-9, "not on the simplex"


def _select_check(kw, out):
    from gmmfast.latent import table_value
    z, value = out[0], out[1]
    costs = np.asarray(kw["costs"], dtype=np.float64)
    zz = np.asarray(z).reshape(-1)
    costs2 = costs.reshape(-1, costs.shape[-1])
    assert zz.shape == (costs2.shape[0],) and zz.min() >= 0 and zz.max() < costs2.shape[1]
    assert value <= kw["budget"] and value == table_value(costs2, zz), "over budget"


def _parts_check(kw, out):
    arr = out[0] if isinstance(out, tuple) else out
    assert np.isfinite(np.asarray(arr, dtype=np.float64)).all()


def _solver(kw):
    from gmmfast.lssvm import BCFW, CuttingPlane, LatentMulticlassModel
    model = LatentMulticlassModel(kw["n_classes"])
    data = model.prepare(kw["X"])
    cls = CuttingPlane if kw["solver"] == "cutting-plane" else BCFW
    solver = cls(model, data, kw["y"], kw["idx"], kw["lam"], tol=kw["tol"],
                 max_iter=kw["max_iter"])
    return solver.solve(kw["z"], kw["w_start"])


def _solver_check(kw, out):
    w = out[0]
    assert np.isfinite(np.asarray(w)).all(), "w not finite"


TARGETS = {
    "GMMKMeans.fit": (_gmmkmeans_fit, _gmmkmeans_check),
    "GMMKMeans.fit extreme values": (_gmmkmeans_fit, _gmmkmeans_check),
    "GMMKMeans.predict/transform/score": (_gmmkmeans_predict, _gmmkmeans_predict_check),
    "sample_assignment": (_sample_assignment, _sample_assignment_check),
    "generalized_mm(KMeansBounds)": (_kmeans_gmm, _kmeans_gmm_check),
    "generalized_mm(KMeansBounds) bad family data": (_kmeans_gmm, _kmeans_gmm_check),
    "generalized_mm(KMeansBounds) selection": (_kmeans_gmm, _kmeans_gmm_check),
    "kmeans_plusplus": (_kmeans_plusplus, _kmeans_plusplus_check),
    "balanced_bias": (_balanced_bias, _balanced_bias_check),
    "sample_latent": (_sample_latent, _sample_latent_check),
    "block_plan": (_block_plan, _block_plan_check),
    "potts_energy": (_potts_energy, _potts_energy_check),
    "alpha_expansion": (_alpha_expansion, _alpha_expansion_check),
    "grid_energy": (_grid_energy, _grid_energy_check),
    "potts_lagrangian": (_potts_lagrangian, _potts_lagrangian_check),
    "centroid_index": (_metrics, _centroid_index_check),
    "centroids_from_labels": (_metrics, _centroids_from_labels_check),
    "sse_per_point": (_metrics, _sse_check),
    "read_points": (_read_points, _read_points_check),
    "read_points(path)": (_read_points, _read_points_check),
    "make_gmm200/make_norm25/load_sipu": (_datasets, _dataset_check),
    "make_cluttered_digits/make_scenes": (_datasets, _dataset_check),
    "LatentSSVM.fit": (_lssvm_fit, _lssvm_fit_check),
    "LatentMulticlassModel/RegionPartModel": (_lssvm_fit, _lssvm_fit_check),
    "solve_simplex_qp": (_lssvm_function, _qp_check),
    "lagrangian_select/subset_select": (_lssvm_function, _select_check),
    "potts_select": (_lssvm_function, _select_check),
    "discover_parts/part_unaries/coherent_labels": (_lssvm_function, _parts_check),
    "CuttingPlane/BCFW.solve": (_solver, _solver_check),
}

#: Targets whose documented errors include OSError (a missing file, a set not cached).
OS_ERRORS = {"read_points(path)", "make_gmm200/make_norm25/load_sipu"}

#: Words an error may use for a parameter besides its name, per parameter.
NAMES = {"content": ("points", "path", ".npy", ".txt", ".csv"), "suffix": ("points",),
         "path": ("missing.csv",), "name": ("SIPU", "sipu"),
         "w0": ("w_0", "centers", "w"), "function": (), "seed": ("rng",),
         "X_fit": ("X",), "labels0": ("labels0",), "n_options": ("n_options",)}


def _names_a_parameter(message, kw):
    """Does ``message`` name a parameter of the call (as a word: "y" is not in "dtype")?"""
    words = set(kw)
    for k in kw:
        words.update(NAMES.get(k, ()))
    words.discard("function")
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(w)}(?![A-Za-z0-9_])", message)
               for w in words)


def run_case(target, kw):
    call, check = TARGETS[target]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(dict(kw))
    except (ValueError, TypeError) as exc:
        msg = f"{type(exc).__name__}: {exc}"
        if _names_a_parameter(str(exc), kw):
            return "named", msg
        return "fail", f"error naming no parameter: {msg}"
    except OSError as exc:
        if target in OS_ERRORS and (exc.filename is not None or _names_a_parameter(str(exc), kw)):
            return "named", f"{type(exc).__name__}: {exc}"
        return "fail", "".join(traceback.format_exception(exc))[-2000:]
    except Exception as exc:                        # noqa: BLE001 - every other kind fails
        return "fail", "".join(traceback.format_exception(exc))[-2000:]
    try:
        check(kw, result)
    except Exception as exc:                        # noqa: BLE001
        return "fail", f"wrong result: {type(exc).__name__}: {exc}"
    return "valid", ""


def serve(conn, log_path):
    """Answer cases from ``conn`` until it closes; output and fatal errors go to ``log_path``."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    faulthandler.enable(open(log_path, "a"))
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        conn.send(run_case(*case))
