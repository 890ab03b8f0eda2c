"""Which initialisation, on how many rows? Quality of the whole G-MM fit against the time
of seeding, at the scale benchmark's sizes.

For each data set and seed, GMMKMeans() (merge-split, eta = 0.1) is fitted from
k-means++ on all rows, from k-means++ on a uniform sample of m = c k rows
(init_size, c in --per-cluster: coarse to fine, a sample of its own, apart from the coarse
level's), from k-means++ on the coarse level's sample (init_size="auto", the default) and
from k-means|| on all rows; reported: seconds of
the seeding alone, seconds of the whole fit, SSE per point of the fit (mean over
seeds) and its ratio to the full k-means++ fit's. Data: bench/_common.mixture (a
mixture of 4k Gaussians, the scale issue's generator).
"""
import argparse
import time

import numpy as np

from _common import markdown_table, mixture, simd_name, write_results

SIZES = [(1_000_000, 16, 100), (200_000, 64, 1000)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--per-cluster", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--sizes", default=None, help="n,d,k;n,d,k (default: the two scale cells)")
    args = ap.parse_args()
    sizes = SIZES if not args.sizes else [tuple(int(float(v)) for v in s.split(","))
                                          for s in args.sizes.split(";")]

    from gmmfast import GMMKMeans
    from gmmfast.cluster import kmeans_parallel, kmeans_plusplus
    from gmmfast.cluster._fit import GMMParams

    rows = []
    for n, d, k in sizes:
        X = mixture(n, d, k)
        coarse = GMMParams(k=k, sample_size="auto").levels(n, d)[0]
        variants = [("k-means++ on every row (init_size=None)", "k-means++", None),
                    (f"k-means++ on the coarse sample, about {coarse:,} rows (init_size='auto',"
                     " the default)", "k-means++", "auto")]
        variants += [(f"k-means++ on {c}k rows", "k-means++", c * k)
                     for c in args.per_cluster if c * k < n]
        variants += [("k-means|| on every row", "k-means||", None)]
        base = None
        for name, init, size in variants:
            seed_s, fit_s, sse = [], [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                sw = np.ones(n)
                t = time.perf_counter()
                if size is None:
                    fn = kmeans_plusplus if init == "k-means++" else kmeans_parallel
                    fn(X, k, sw, rng)
                else:
                    m = coarse if size == "auto" else size
                    rows_ = np.sort(rng.choice(n, size=m, replace=False))
                    kmeans_plusplus(np.ascontiguousarray(X[rows_]), k, sw[rows_], rng)
                seed_s.append(time.perf_counter() - t)
                est = GMMKMeans(k, init=init, init_size=size, random_state=seed)
                t = time.perf_counter()
                est.fit(X)
                fit_s.append(time.perf_counter() - t)
                sse.append(est.inertia_ / n)
            m = float(np.mean(sse))
            base = m if base is None else base
            rows.append([f"{n} x {d}, k={k}", name, f"{np.median(seed_s):.2f}",
                         f"{np.median(fit_s):.2f}", f"{m:.4f}", f"{m / base:.4f}"])
            print(rows[-1], flush=True)
    table = markdown_table(["data", "initialisation", "seeding s (median)", "whole fit s (median)",
                            "SSE/n of the fit (mean)", "vs k-means++ on every row"], rows)
    body = (f"SIMD level: {simd_name()}. {args.seeds} seeds per row; each fit is "
            "GMMKMeans(k, init=..., init_size=...) with the defaults otherwise (merge-split, "
            "eta = 0.1), all threads. 'seeding s' times the seeding alone, 'whole fit s' the "
            "fit including its own seeding.\n\n" + table)
    write_results("init", "Initialisation: quality of the fit against seeding time", body)


if __name__ == "__main__":
    main()
