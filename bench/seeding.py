"""Where the coarse-to-fine default loses to one scikit-learn run: k-means++'s greedy choice
made on a sample.

bench/seeds.py finds ``GMMKMeans()`` above scikit-learn's ``KMeans(n_init=1)`` on average at
100,000 x 64 and x 128, k = 100 (and bench/scale.py at 1e6 x 64 and x 128, k = 1000), while
G-MM on every row (``sample_size=None``) is below it. The default seeds (k-means++) and runs
G-MM on a uniform sample of max(64 k, 20,000) rows. This script separates the seeding from the
rest: each contender draws k-means++ centers, then Lloyd's passes on every row run from them
to a fixed point (``GMMKMeans(k, init=centers, eta=1, tol=0, sample_size=None)``, the same
for every contender), so the final SSE/n differs only by where the seeds came from:

- greedy k-means++ (scikit-learn's ``kmeans_plusplus``: 2 + int(ln k) candidates a step,
  the one that lowers the potential most kept) on every row, on a uniform sample of the
  default's coarse size, and on a sample four times as large (at most every row);
- plain k-means++ (one candidate a step: ``n_local_trials=1``) on every row and on the sample.

Seeds from scikit-learn's own ``kmeans_plusplus``, so the finding is not an artefact of
gmmfast's seeding kernels. Reported over ``--seeds`` random states (the sample drawn afresh
for each): the mean final SSE/n, its standard error, the seeding's own potential F/n on
every row, and the seeding's seconds (one process, one thread: a guide to its cost, not a
speed claim).

    python bench/seeding.py [--cells '100000,64,100;...'] [--seeds 12]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import markdown_table, mixture, simd_name, write_results
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.cluster import inertia
from gmmfast.cluster._fit import GMMParams

CELLS = "100000,64,100;100000,128,100;100000,16,100"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=CELLS, help="n,d,k;n,d,k;... (float64 in memory)")
    ap.add_argument("--seeds", type=int, default=12)
    args = ap.parse_args()
    if args.seeds < 2:
        ap.error("--seeds must be at least 2 (a standard error needs two values)")
    from sklearn.cluster import kmeans_plusplus
    cells = [tuple(int(float(v)) for v in c.split(",")) for c in args.cells.split(";")]
    rows = []
    with threadpool_limits(1):
        for n, d, k in cells:
            X = mixture(n, d, k)
            m = GMMParams(k=k, sample_size="auto").levels(n, d)[0]   # the default's coarse rows
            greedy = 2 + int(math.log(k))
            contenders = [(f"greedy ({greedy} candidates), every row", n, None),
                          (f"greedy, sample of {m:,} rows (the default's coarse level)", m,
                           None),
                          (f"greedy, sample of {min(n, 4 * m):,} rows", min(n, 4 * m), None),
                          ("plain (1 candidate), every row", n, 1),
                          (f"plain, sample of {m:,} rows", m, 1)]
            base = None
            for name, size, trials in contenders:
                if size >= n and "every row" not in name:
                    continue           # a sample as large as the data: every row, above
                final, potential, seconds = [], [], []
                for seed in range(args.seeds):
                    rng = np.random.default_rng([seed, size])
                    Xs = X if size >= n else X[np.sort(rng.choice(n, size, replace=False))]
                    t = time.perf_counter()
                    C, _ = kmeans_plusplus(Xs, k, random_state=seed, n_local_trials=trials)
                    seconds.append(time.perf_counter() - t)
                    potential.append(inertia(X, C) / n)
                    fit = GMMKMeans(k, init=C, eta=1, tol=0, sample_size=None).fit(X)
                    final.append(fit.inertia_ / n)
                final = np.array(final)
                base = final.mean() if base is None else base
                rows.append([f"{n:,} x {d}, k={k}", name, f"{final.mean():.2f}",
                             f"{final.std(ddof=1) / math.sqrt(len(final)):.2f}",
                             f"{100 * (final.mean() - base) / base:+.2f} %",
                             f"{np.mean(potential):.1f}", f"{np.median(seconds):.3g}"])
                print(rows[-1], flush=True)
    body = (f"SIMD level: {simd_name()}; 1 thread; random_state 0 to {args.seeds - 1} for "
            "every contender (the sample drawn afresh for each); data: bench/_common.mixture "
            "(4k Gaussians, data seed 0), float64. Every contender: k-means++ centers from "
            "scikit-learn's kmeans_plusplus on the rows named, then Lloyd's passes on every "
            "row to a fixed point.\n\n"
            + markdown_table(["cell", "seeding", "mean final SSE/n", "standard error",
                              "against greedy on every row", "seeding's F/n (every row)",
                              "seeding s (one process)"], rows))
    write_results("seeding", "k-means++ on a sample or on every row: the final SSE/n after "
                  "Lloyd's passes", body)


if __name__ == "__main__":
    main()
