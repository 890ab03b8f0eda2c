"""How fast is one Lloyd iteration, against scikit-learn's on the same data and threads?

Both run Lloyd's algorithm from the same initial centers for a fixed number of
iterations (tol=0): ours as GMMKMeans(eta=1) (exactly Lloyd), scikit-learn's as
KMeans(algorithm="lloyd"); scikit-learn's Elkan is listed for context, and one G-MM
iteration of the default selection (GMMKMeans(eta=0.1, patience=0), merge-split from the
per-cluster sums) against one of our Lloyd iterations (the scale issue's target: at most
1.3x). Time
per iteration = fit time / n_iter_ (for G-MM, on every row (sample_size=None): the seconds
and iterations of its level, ``levels_[0]``, without the Lloyd passes to a fixed point that
end a default fit), median
of --repeats runs in a row per
library (one library's idle OpenMP/BLAS threads keep spinning after its call
and slow the next library's threads when calls alternate).

The roofline columns: a Lloyd iteration without pruning computes 2 n k d
floating-point operations of distances; "GFlop/s" is that count over our
time per iteration, and "gemm peak" is the float64 rate of a large square
matmul (numpy's BLAS) measured in the same run with the same threads: a
distance kernel cannot beat it by much, so the ratio to scikit-learn is
capped near peak / scikit-learn's rate wherever scikit-learn already runs
gemm (d >= 32).
"""
import time

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

from _common import alternate, markdown_table, write_results

SIZES = [(10_000, 2, 200), (100_000, 16, 100), (200_000, 64, 256)]


def gemm_peak(repeats: int = 3, size: int = 2048) -> float:
    """float64 GFlop/s of a size^3 matmul (best of repeats), at the current BLAS threads."""
    A = np.random.default_rng(1).random((size, size))
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - t)
    return 2.0 * size ** 3 / best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--sizes", default=None, help="n,d,k;n,d,k... (default: SIZES)")
    args = ap.parse_args()
    sizes = SIZES if not args.sizes else [tuple(int(float(v)) for v in c.split(","))
                                          for c in args.sizes.split(";")]

    from sklearn.cluster import KMeans
    from gmmfast import GMMKMeans, kernel_info

    rows = []
    for n, d, k in sizes:
        rng = np.random.default_rng(0)
        X = rng.random((n, d))
        C = X[rng.choice(n, k, replace=False)].copy()
        for threads in args.threads:
            iters, level_s = {}, []

            def run(name, est):
                def fn():
                    m = est.fit(X)
                    iters[name] = m.n_iter_
                    if name == "gmm":       # G-MM's level alone: the fit then polishes
                        iters[name] = m.levels_[0].n_iter
                        level_s.append(m.levels_[0].seconds)
                return fn
            funcs = {
                "gmmfast": run("gmmfast", GMMKMeans(k, eta=1.0, init=C, max_iter=args.iters, tol=0)),
                "sklearn lloyd": run("sklearn lloyd", KMeans(k, init=C, n_init=1, max_iter=args.iters,
                                                             tol=0, algorithm="lloyd")),
                "sklearn elkan": run("sklearn elkan", KMeans(k, init=C, n_init=1, max_iter=args.iters,
                                                             tol=0, algorithm="elkan")),
                "gmm": run("gmm", GMMKMeans(k, init=C, max_iter=args.iters, tol=0, patience=0,
                                             sample_size=None)),
            }
            with threadpool_limits(limits=threads):
                times = alternate(funcs, repeats=1, block=args.repeats)
                peak = gemm_peak()
            flops = 2.0 * n * k * d
            per_it = {name: np.median(t) / iters[name] for name, t in times.items()}
            per_it["gmm"] = np.median(level_s) / iters["gmm"]
            rows.append([f"{n} x {d}, k={k}", threads, iters["gmmfast"],
                         f"{per_it['gmmfast'] * 1e3:.2f}", f"{per_it['sklearn lloyd'] * 1e3:.2f}",
                         f"**{per_it['sklearn lloyd'] / per_it['gmmfast']:.2f}**",
                         f"{per_it['sklearn elkan'] * 1e3:.2f}",
                         f"{per_it['sklearn elkan'] / per_it['gmmfast']:.2f}",
                         f"{per_it['gmm'] * 1e3:.2f}", f"{per_it['gmm'] / per_it['gmmfast']:.2f}",
                         f"{flops / per_it['gmmfast'] / 1e9:.1f}",
                         f"{flops / per_it['sklearn lloyd'] / 1e9:.1f}", f"{peak:.1f}"])
    table = markdown_table(
        ["data", "threads", "iters", "gmmfast ms/iter", "sklearn lloyd ms/iter",
         "lloyd / gmmfast", "sklearn elkan ms/iter", "elkan / gmmfast",
         "G-MM merge-split ms/iter", "G-MM / our Lloyd", "gmmfast GFlop/s",
         "sklearn GFlop/s", "float64 gemm peak GFlop/s"], rows)
    level = kernel_info()["simd_level"]
    body = (f"SIMD level of the nearest-center search: {level} (2 = AVX-512, 1 = AVX2, "
            f"0 = BLAS gemm). Uniform random data, same initial centers, {args.iters} iterations, "
            f"tol=0; median of {args.repeats} runs in a row per library (alternating run by run, "
            "each library's spinning idle threads slowed the other's 2-thread runs: on 10000 x "
            "2, k=200 the ratio read 3.5 instead of 4.6 in a check); both libraries limited to "
            "the same number of OpenMP and BLAS threads. A ratio above 1 means gmmfast is "
            "faster. GFlop/s: 2 n k d distance operations per iteration over the time per "
            "iteration (pruning skips some, so above peak means rows were pruned); gemm peak: "
            "a 2048^3 float64 numpy matmul in the same run and threads.\n\n"
            + table)
    write_results("lloyd_iteration", "Lloyd iteration time: gmmfast vs scikit-learn", body)


if __name__ == "__main__":
    main()
