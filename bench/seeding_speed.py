"""Greedy k-means++ at each SIMD level, against scikit-learn's ``kmeans_plusplus``.

The seeding is the first step of every default fit (on its coarse sample) and of every fit
on all rows. Both libraries run the same algorithm: greedy k-means++ with 2 + int(ln k)
candidates a step, the one that lowers the potential most kept. gmmfast runs
:func:`gmmfast.cluster.kmeans_plusplus` with its kernels held to each instruction set the
processor has (``GMMFAST_SIMD``: AVX-512, AVX2, portable C), scikit-learn its
``sklearn.cluster.kmeans_plusplus``. Each contender runs in its own process (one thread:
OpenMP and BLAS limited to one, pinned with ``--cpus``), which seeds ``--calls`` times and
reports its fastest call; the processes alternate contender by contender, ``--repeats``
rounds, and the table gives the median over rounds. Also reported: the seeds' potential
F/n on the rows (the same algorithm: close, not equal, as the draws differ).

Data: bench/_common.mixture (a mixture of 4k Gaussians), float64, seed 0; the default
cells are the coarse samples of the default fit at 1e5 x {16, 128}, k = 100 (20,000 rows)
and at 1e6 x 64, k = 1000 (64,000 rows), and 100,000 rows at d = 64, k = 100.

    python bench/seeding_speed.py [--cells '20000,128,100;...'] [--repeats 3] [--cpus 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import markdown_table, write_results

CELLS = "20000,16,100;20000,128,100;100000,64,100;64000,64,1000"
LEVELS = (("avx512", 2), ("avx2", 1), ("generic", 0))
NAMES = {2: "AVX-512", 1: "AVX2", 0: "portable"}

CHILD = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
sys.path.insert(0, {bench!r})
from _common import mixture
n, d, k, calls, who = {n}, {d}, {k}, {calls}, {who!r}
X = mixture(n, d, k)
if who == "sklearn":
    from sklearn.cluster import kmeans_plusplus
    seed = lambda: kmeans_plusplus(X, k, random_state=0)[0]
    simd = "n/a"
else:
    import gmmfast
    from gmmfast.cluster import kmeans_plusplus
    seed = lambda: kmeans_plusplus(X, k, random_state=0, n_threads=1)
    simd = gmmfast.kernel_info()["simd"]
best = float("inf")
with threadpool_limits(1):
    for _ in range(calls):
        t = time.perf_counter()
        C = seed()
        best = min(best, time.perf_counter() - t)
from gmmfast.cluster import inertia
pot = inertia(X, np.ascontiguousarray(C, dtype=X.dtype)) / n
print(json.dumps({{"seconds": best, "potential": float(pot), "simd": simd}}))
"""


def run(cell, who, level_env, calls, cpus):
    n, d, k = cell
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("GMMFAST_SIMD", None)
    if level_env:
        env["GMMFAST_SIMD"] = level_env
    code = CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)), n=n, d=d, k=k,
                        calls=calls, who=who)
    argv = (["taskset", "-c", cpus] if cpus else []) + [sys.executable, "-c", code]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=CELLS, help="n,d,k;n,d,k;... (float64 rows)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of fresh processes")
    ap.add_argument("--calls", type=int, default=3, help="seedings per process (fastest kept)")
    ap.add_argument("--cpus", default=None, help="taskset -c CPUS for every process")
    args = ap.parse_args()
    if args.repeats < 1 or args.calls < 1:
        ap.error("--repeats and --calls must be at least 1")
    try:
        cells = [tuple(int(float(v)) for v in c.split(",")) for c in args.cells.split(";")]
    except ValueError:
        ap.error(f"--cells must be n,d,k;n,d,k;... with integers, got {args.cells!r}")
    if any(len(c) != 3 or min(c) < 1 or c[2] > c[0] for c in cells):
        ap.error("--cells: each cell is n,d,k with n >= k >= 1 and d >= 1")
    import gmmfast
    top = gmmfast.kernel_info()["simd_level"]
    contenders = [(f"gmmfast ({NAMES[lv]})", "gmmfast", env) for env, lv in LEVELS if lv <= top]
    contenders.append(("scikit-learn", "sklearn", None))
    rows = []
    for cell in cells:
        times = {name: [] for name, _, _ in contenders}
        last = {}
        for _ in range(args.repeats):
            for name, who, env in contenders:
                rec = run(cell, who, env, args.calls, args.cpus)
                times[name].append(rec["seconds"])
                last[name] = rec
                print(cell, name, rec, flush=True)
        sk = statistics.median(times["scikit-learn"])
        for name, _, _ in contenders:
            med = statistics.median(times[name])
            rows.append([f"{cell[0]:,} x {cell[1]}, k = {cell[2]}", name, last[name]["simd"],
                         f"{med * 1e3:.1f}", f"{min(times[name]) * 1e3:.1f}",
                         f"{sk / med:.2f}", f"{last[name]['potential']:.2f}"])
    body = (f"One thread per process; each process's fastest of {args.calls} calls, the "
            f"median over {args.repeats} rounds of fresh processes (contenders alternating). "
            "Speed-up: scikit-learn's median time over the contender's.\n\n"
            + markdown_table(["rows x d, k", "contender", "SIMD", "ms (median)", "ms (min)",
                              "speed-up over scikit-learn", "potential F/n"], rows))
    write_results("seeding_speed", "Greedy k-means++ at each SIMD level against scikit-learn",
                  body, versions={"gmmfast": gmmfast.__version__})


if __name__ == "__main__":
    main()
