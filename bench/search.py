"""The labelling pass against faiss's search and scikit-learn's predict.

Every default fit ends with passes over every row, the first a full search, and a fitted
estimator's ``predict`` is one such pass; faiss's users label rows with ``index.search``
(its labelling search in bench/scale.py). The scale issue asks the pass to cost no more
than faiss's own search over the same rows. Here each library labels the same rows at the
same centers:

- gmmfast: ``GMMKMeans.predict(X)`` (validation included), the centers set by fitting the
  estimator on the centers themselves with ``init=C, eta=1, max_iter=1`` (each center its
  own cluster: the centers stay C, checked);
- faiss: ``IndexFlatL2(d)`` holding C as float32, ``index.search(X32, 1)``, with the
  conversion to float32 that float64 rows need (``np.ascontiguousarray(X, np.float32)``)
  timed as part of it and also reported alone;
- scikit-learn: ``KMeans.predict(X)``, fitted the same way, then its ``cluster_centers_``
  set to C (its fit centers the data, and the rounding moves the centers a little).

Each contender runs in its own process (one thread: OpenMP and BLAS limited to one, pinned
with ``--cpus``), which labels the rows ``--calls`` times and reports its fastest call; the
processes alternate contender by contender, ``--repeats`` rounds, and the table gives the
median over rounds. "GFMA/s" is n k d over the time (the multiply-adds of the distances
alone). "rows labelled otherwise" counts the rows whose label differs from gmmfast's (rows
almost equidistant from two centers can differ: faiss searches in float32, gmmfast resolves
float64 rows in float64, scikit-learn in float64).

Data: bench/_common.mixture (a mixture of 4k Gaussians, seed 0), in the dtype the cell
names; the centers are k rows drawn from it (seed 1).

faiss-cpu's wheels bundle an OpenBLAS that may not know the processor and then runs its
generic kernels (threadpoolctl's ``internal_api`` line in the table says which); on a recent
Intel Xeon set ``OPENBLAS_CORETYPE=SkylakeX`` (see the large-data guide).

    python bench/search.py [--cells '1000000,128,100,float64;...'] [--repeats 3]
                           [--calls 2] [--cpus 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import markdown_table, write_results

CELLS = ";".join(f"1000000,{d},{k},{dt}" for dt in ("float64", "float32")
                 for d in (16, 64, 128) for k in (100, 1000))
CONTENDERS = ("gmmfast", "faiss", "sklearn")

CHILD = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits, threadpool_info
sys.path.insert(0, {bench!r})
from _common import mixture
n, d, k, dtype, calls, who = {n}, {d}, {k}, {dtype!r}, {calls}, {who!r}
X = mixture(n, d, k, dtype=np.dtype(dtype))
C = np.ascontiguousarray(X[np.random.default_rng(1).choice(n, k, replace=False)])
info = {{}}
if who == "faiss":
    import faiss
    index = faiss.IndexFlatL2(d)
    index.add(np.ascontiguousarray(C, dtype=np.float32))
    def label():
        t = time.perf_counter()
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        info["convert"] = min(info.get("convert", np.inf), time.perf_counter() - t)
        return index.search(X32, 1)[1][:, 0]
else:
    if who == "sklearn":
        from sklearn.cluster import KMeans
        km = KMeans(k, init=C, n_init=1, max_iter=1).fit(C)
        km.cluster_centers_ = C.copy()   # its fit centers the data: the rounding moves them
    else:
        from gmmfast.cluster import GMMKMeans
        km = GMMKMeans(k, init=C, eta=1, max_iter=1, sample_size=None).fit(C)
    assert np.array_equal(km.cluster_centers_, C), "the centers moved"
    label = lambda: km.predict(X)
best = float("inf")
with threadpool_limits(1):
    for _ in range(calls):
        t = time.perf_counter()
        labels = label()
        best = min(best, time.perf_counter() - t)
blas = sorted({{p.get("internal_api", "") + " " + str(p.get("architecture", ""))
               for p in threadpool_info() if p.get("user_api") == "blas"}})
np.save({out!r}, np.asarray(labels, dtype=np.int32))
print(json.dumps({{"seconds": best, "convert": info.get("convert"), "blas": blas}}))
"""


def run(cell, who, calls, cpus, out):
    n, d, k, dtype = cell
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)), n=n, d=d, k=k,
                        dtype=dtype, calls=calls, who=who, out=out)
    argv = (["taskset", "-c", cpus] if cpus else []) + [sys.executable, "-c", code]
    res = subprocess.run(argv, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{who} on {cell} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def parse_cells(text):
    cells = []
    for c in text.split(";"):
        parts = c.split(",")
        if len(parts) != 4 or parts[3] not in ("float32", "float64"):
            raise ValueError(c)
        n, d, k = (int(float(v)) for v in parts[:3])
        if min(n, d, k) < 1 or k > n:
            raise ValueError(c)
        cells.append((n, d, k, parts[3]))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=CELLS,
                    help="n,d,k,dtype;... (dtype float32 or float64, n >= k >= 1)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of fresh processes")
    ap.add_argument("--calls", type=int, default=2, help="labellings per process (fastest kept)")
    ap.add_argument("--cpus", default=None, help="taskset -c CPUS for every process")
    args = ap.parse_args()
    if args.repeats < 1 or args.calls < 1:
        ap.error("--repeats and --calls must be at least 1")
    try:
        cells = parse_cells(args.cells)
    except ValueError as e:
        ap.error(f"--cells: each cell is n,d,k,dtype with n >= k >= 1 and dtype float32 or "
                 f"float64, got {e}")
    import numpy as np
    import faiss
    import gmmfast
    tmp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
    os.makedirs(tmp, exist_ok=True)
    rows, blas = [], set()
    for cell in cells:
        n, d, k, dtype = cell
        times = {who: [] for who in CONTENDERS}
        convert = []
        for _ in range(args.repeats):
            for who in CONTENDERS:
                rec = run(cell, who, args.calls, args.cpus, os.path.join(tmp, f"search_{who}.npy"))
                times[who].append(rec["seconds"])
                if rec["convert"] is not None:
                    convert.append(rec["convert"])
                if who == "faiss":
                    blas.update(rec["blas"])
                print(cell, who, rec, flush=True)
        labels = {who: np.load(os.path.join(tmp, f"search_{who}.npy")) for who in CONTENDERS}
        med = {who: statistics.median(times[who]) for who in CONTENDERS}
        conv = (f" (convert {statistics.median(convert) * 1e3:.1f})"
                if dtype == "float64" and convert else "")
        rows.append([f"{n:,} x {d}, k = {k}", dtype,
                     f"{med['gmmfast'] * 1e3:.1f}", f"{med['faiss'] * 1e3:.1f}{conv}",
                     f"{med['sklearn'] * 1e3:.1f}",
                     f"{med['gmmfast'] / med['faiss']:.2f}",
                     f"{med['gmmfast'] / med['sklearn']:.2f}",
                     f"{n * k * d / med['gmmfast'] / 1e9:.0f} / {n * k * d / med['faiss'] / 1e9:.0f}",
                     f"{int(np.sum(labels['faiss'] != labels['gmmfast']))} / "
                     f"{int(np.sum(labels['sklearn'] != labels['gmmfast']))}"])
    for who in CONTENDERS:
        try:
            os.remove(os.path.join(tmp, f"search_{who}.npy"))
        except FileNotFoundError:
            pass
    body = (f"One thread per process; each process's fastest of {args.calls} calls, the median "
            f"over {args.repeats} rounds of fresh processes (contenders alternating). Times in "
            "ms; a float64 cell's faiss time includes the conversion to float32 (in brackets "
            f"alone). faiss's BLAS: {', '.join(sorted(blas)) or 'not reported'}.\n\n"
            + markdown_table(["rows x d, k", "rows", "gmmfast predict", "faiss search",
                              "scikit-learn predict", "gmmfast / faiss",
                              "gmmfast / scikit-learn", "GFMA/s gmmfast / faiss",
                              "rows labelled otherwise: faiss / scikit-learn"], rows))
    write_results("search", "The labelling pass against faiss's search and scikit-learn's "
                  "predict", body, versions={"gmmfast": gmmfast.__version__,
                                             "faiss": faiss.__version__})


if __name__ == "__main__":
    main()
