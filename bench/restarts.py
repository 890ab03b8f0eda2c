"""What one seeding restart costs: gmmfast's restarts kernel against scikit-learn's KMeans.

The default search (``GMMKMeans(restarts="auto")``) starts G-MM from the best of many
k-means runs (greedy k-means++ seeding, then Lloyd's iterations to a fixed point), all in
one nogil kernel call. Whether those runs use the time better than scikit-learn's own
restarts depends on what one run costs. For several sets of bench/sweep.py, one thread:
``restart_centers(X, w, k, runs=R)`` (the function the fit calls) against
``KMeans(k, n_init=m, init="k-means++")``, each timed as a whole call, alternating, the
median of 5; seconds per run (the call divided by its runs), the ratio, and the best
objective each call found (its SSE).

    python bench/restarts.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _common import alternate, markdown_table, simd_name, write_results
from sweep import _data_home, build_sets
from threadpoolctl import threadpool_limits

import sklearn
from sklearn.cluster import KMeans

from gmmfast.cluster._restarts import restart_centers

#: (set, k, gmmfast runs per call, scikit-learn restarts per call)
CELLS = [("iris-std", 9, 400, 40), ("moons", 6, 200, 40), ("circles", 6, 200, 40),
         ("cube", 8, 100, 20), ("cancer-std", 6, 200, 40), ("digits-std", 10, 40, 10),
         ("digits-raw", 10, 40, 10), ("blobs-50d", 30, 20, 10)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args()
    sets = build_sets(_data_home(args.data_home))
    rows = []
    with threadpool_limits(1):
        for name, k, runs, m in CELLS:
            X = np.ascontiguousarray(sets[name][1](), dtype=np.float64)
            w = np.ones(X.shape[0])
            best = {}

            def ours():
                C, rec = restart_centers(X, w, k, runs, np.random.default_rng(0), 1)
                best["gmmfast"] = rec.objectives[rec.best]

            def peer():
                best["scikit-learn"] = KMeans(k, n_init=m, random_state=0).fit(X).inertia_

            times = alternate({"gmmfast": ours, "scikit-learn": peer}, repeats=args.repeats)
            t_ours = float(np.median(times["gmmfast"])) / runs
            t_peer = float(np.median(times["scikit-learn"])) / m
            rows.append([name, f"{X.shape[0]} x {X.shape[1]}", k, runs, m,
                         f"{t_ours * 1e3:.3f}", f"{t_peer * 1e3:.3f}", f"{t_peer / t_ours:.2f}",
                         f"{best['gmmfast']:.6g}", f"{best['scikit-learn']:.6g}"])
            print(rows[-1], flush=True)
    body = (
        f"One thread (OpenMP and BLAS); SIMD level of the kernels: {simd_name()}. Each call "
        f"timed whole, the two alternating, median of {args.repeats}; ms per run = the "
        "call's seconds / its runs. Both seed by greedy k-means++ (2 + log k trials per "
        "center) and iterate Lloyd's map; gmmfast to no label change (Hamerly's bounds, "
        "dgemm searches from 16 features), scikit-learn to its tol = 1e-4 (center shift, "
        "relative to the data's variance). 'best SSE' is the lowest objective of the call's "
        "runs (different random streams: a sanity check, not a comparison of quality).\n\n"
        + markdown_table(["set", "n x d", "k", "gmmfast runs", "scikit-learn restarts",
                          "gmmfast ms / run", "scikit-learn ms / run",
                          "ratio (scikit-learn / gmmfast)", "gmmfast best SSE",
                          "scikit-learn best SSE"], rows))
    write_results("restarts", "Seeding restarts: one run of gmmfast's kernel against one "
                  "scikit-learn restart", body, {"scikit-learn": sklearn.__version__})


if __name__ == "__main__":
    main()
