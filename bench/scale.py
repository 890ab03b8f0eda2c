"""Large-scale clustering on one machine: gmmfast against scikit-learn, MiniBatchKMeans and faiss.

Data: bench/_common.mixture (a mixture of 4k Gaussians in d dimensions, the scale
issue's generator), float64 up to 1e6 rows, float32 at 1e7 rows. Contenders, each in a
fresh process (so peak memory is its own): GMMKMeans() (defaults: k-means++, merge-split,
eta = 0.1, escapes), GMMKMeans(eta=1) (Lloyd), 'gmmfast init+1' (the
initialisation and one iteration: GMMKMeans(max_iter=1, patience=0)), scikit-learn
KMeans(n_init=1) and KMeans(n_init=m) with m matched to GMMKMeans()'s time, MiniBatchKMeans(n_init=1) and
faiss-cpu Kmeans(niter=25) (random initialisation, float32, its defaults otherwise: it
trains on a random subsample of 256 points per centroid when n is larger, so at 1M x 16
x 100 it sees 25,600 rows; the SSE/n is still over all rows).
Each contender's SSE/n is recomputed the same way for all (nearest center of every row
of X in X's precision, costs in float64). Peak memory is what the fit added to the
process's resident set: the peak (VmHWM, reset through /proc/self/clear_refs after the
data is made and the library imported) minus the resident set at the start of the fit. A contender that runs past --timeout seconds is stopped
and reported as such; cells whose data would not fit in memory are skipped.

Results accumulate in bench/out/scale.json (one record per cell and contender), so the
grid can be run in parts (--cells); the markdown and the log-log figure are written from
all records.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


from _common import ROOT, RESULTS, markdown_table, simd_name, write_results

CACHE = ROOT / "bench" / "out" / "scale.json"
GRID = [(n, d, k) for n in (100_000, 1_000_000, 10_000_000) for d in (16, 64, 128)
        for k in (100, 1000)] + [(200_000, 64, 1000)]
CONTENDERS = ["gmmfast", "gmmfast eta=1", "gmmfast init+1", "sklearn", "sklearn n_init=m", "minibatch", "faiss"]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {bench!r})
import numpy as np
from _common import mixture
n, d, k, who, m = {n}, {d}, {k}, {who!r}, {m}
X = mixture(n, d, k, dtype=np.float32 if n >= 10_000_000 else np.float64)
# import the contender's library before the baseline, so 'added' is the fit's own memory
if who.startswith("gmmfast"):
    from gmmfast import GMMKMeans
elif who.startswith("sklearn"):
    from sklearn.cluster import KMeans
elif who == "minibatch":
    from sklearn.cluster import MiniBatchKMeans
else:
    import faiss
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])      # KiB
open("/proc/self/clear_refs", "w").write("5")   # reset the peak (VmHWM) to the current RSS
before = status("VmRSS:")
t = time.perf_counter()
if who.startswith("gmmfast"):
    kw = {{"gmmfast": {{}}, "gmmfast eta=1": dict(eta=1.0),
          "gmmfast init+1": dict(max_iter=1, patience=0)}}[who]
    est = GMMKMeans(k, random_state=0, **kw)
    est.fit(X)
    C, iters = est.cluster_centers_, est.n_iter_
elif who.startswith("sklearn"):
    est = KMeans(k, n_init=m, random_state=0).fit(X)
    C, iters = est.cluster_centers_, est.n_iter_
elif who == "minibatch":
    est = MiniBatchKMeans(k, n_init=1, random_state=0).fit(X)
    C, iters = est.cluster_centers_, est.n_iter_
else:
    km = faiss.Kmeans(d, k, niter=25, seed=0)
    km.train(np.ascontiguousarray(X, dtype=np.float32))
    C, iters = km.centroids, 25
seconds = time.perf_counter() - t
after = status("VmHWM:")
from gmmfast.cluster import inertia
sse = inertia(X, np.asarray(C, dtype=X.dtype)) / n
print(json.dumps(dict(seconds=seconds, iterations=int(iters), sse=sse,
                      added_mib=(after - before) / 1024.0, data_mib=X.nbytes / 2 ** 20)))
"""


def run_one(n, d, k, who, m, timeout, threads=None, cpus=None):
    code = CHILD.format(bench=str(ROOT / "bench"), n=n, d=d, k=k, who=who, m=m)
    env = dict(os.environ)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    argv = (["taskset", "-c", cpus] if cpus else []) + [sys.executable, "-c", code]
    t = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(status=f"> {timeout:.0f} s", seconds=time.perf_counter() - t)
    if proc.returncode != 0:
        return dict(status="failed: " + proc.stderr.strip().splitlines()[-1][:120])
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["status"] = "ok"
    return rec


def cache(name):
    return CACHE if name == "scale" else CACHE.with_name(f"{name}.json")


def load(name="scale"):
    path = cache(name)
    return json.loads(path.read_text()) if path.exists() else {}


def save(records, name="scale"):
    path = cache(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1))


def fits_in_memory(n, d):
    item = 4 if n >= 10_000_000 else 8
    return 3 * n * d * item < 20 * 2 ** 30


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", default=None,
                    help="n,d,k;n,d,k... (default: the whole grid and 200000,64,1000)")
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--name", default="scale",
                    help="records bench/out/NAME.json, results bench/results/NAME.md and .png "
                         "(e.g. scale_2threads, so runs with other threads keep their own table)")
    ap.add_argument("--threads", type=int, default=None,
                    help="limit every contender to this many threads (OpenMP and BLAS)")
    ap.add_argument("--cpus", default=None, help="run every contender under taskset -c CPUS")
    args = ap.parse_args()
    cells = GRID if not args.cells else [tuple(int(float(v)) for v in c.split(","))
                                         for c in args.cells.split(";")]
    who_list = [c.strip() for c in args.contenders.split(",")]
    records = load(args.name)
    if not args.report_only:
        for n, d, k in cells:
            key = f"{n},{d},{k}"
            cell = records.setdefault(key, {})
            if not fits_in_memory(n, d):
                cell["skipped"] = "data does not fit in memory"
                continue
            for who in who_list:
                m = 1
                if who == "sklearn n_init=m":
                    g, s = cell.get("gmmfast", {}), cell.get("sklearn", {})
                    if g.get("status") != "ok" or s.get("status") != "ok":
                        continue
                    m = max(1, math.ceil(g["seconds"] / s["seconds"]))
                rec = run_one(n, d, k, who, m, args.timeout, args.threads, args.cpus)
                rec["n_init"] = m
                rec["threads"] = args.threads or os.cpu_count()
                rec["load"] = os.getloadavg()[0]
                cell[who] = rec
                save(records, args.name)
                print(key, who, rec, flush=True)
    report(records, args.name)


def report(records, name="scale"):
    rows, fig = [], {}
    for key in sorted(records, key=lambda s: tuple(int(v) for v in s.split(","))):
        n, d, k = (int(v) for v in key.split(","))
        cell = records[key]
        if "skipped" in cell:
            rows.append([f"{n} x {d}, k={k}", "all", "", cell["skipped"], "", "", "", ""])
            continue
        for who in CONTENDERS:
            r = cell.get(who)
            if r is None:
                continue
            label = who if who != "sklearn n_init=m" else f"sklearn n_init={r.get('n_init')}"
            if r["status"] != "ok":
                rows.append([f"{n} x {d}, k={k}", label, r.get("threads", ""), r["status"], "", "", "",
                             ""])
                continue
            rows.append([f"{n} x {d}, k={k}", label, r.get("threads", ""), f"{r['seconds']:.1f}",
                         r["iterations"], f"{r['sse']:.4f}", f"{r['added_mib']:.0f}",
                         f"{r['load']:.1f}"])
            fig.setdefault((d, k, who), []).append((n, r["seconds"]))
    table = markdown_table(["data", "contender", "threads", "wall s", "iterations", "SSE/n",
                            "peak MiB added", "load"], rows)
    body = (f"SIMD level of the nearest-center search: {simd_name()}. Every contender ran in "
            "its own process, with the threads given ('threads': OpenMP and BLAS limited by "
            "environment variables, pinned to one core by taskset when 1); 'load' is the "
            "1-minute load average when it started (above the thread count, other jobs shared "
            "the cores and wall times are inflated). SSE/n recomputed identically for every contender. 1e7-row sets are "
            "float32, the others float64; gmmfast keeps float32 (faiss always trains in "
            "float32, by default on at most 256 rows per centroid). 'gmmfast init+1' is "
            "GMMKMeans(max_iter=1, patience=0): the initialisation and one iteration.\n\n" + table + f"\n\nFigure: bench/results/{name}.png (wall time "
            "against n, log-log, one panel per (d, k)).")
    write_results(name, "Large-scale clustering: gmmfast against scikit-learn, MiniBatch "
                  "and faiss", body)
    plot(fig, name)


def plot(fig, name="scale"):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    panels = sorted({(d, k) for d, k, _ in fig})
    if not panels:
        return
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    f, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, (d, k) in zip(axes.ravel(), panels):
        for who in CONTENDERS:
            pts = sorted(fig.get((d, k, who), []))
            if pts:
                ax.loglog(*zip(*pts), marker="o", label=who)
        ax.set_title(f"d={d}, k={k}", fontsize=9)
        ax.set_xlabel("n")
        ax.set_ylabel("wall s")
    axes.ravel()[0].legend(fontsize=7)
    f.tight_layout()
    f.savefig(RESULTS / f"{name}.png", dpi=80)


if __name__ == "__main__":
    main()
