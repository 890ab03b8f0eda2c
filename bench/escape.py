"""How long should GMMKMeans keep escaping after G-MM converges? (patience, escape_effort)

1. Small sets with ground truth (R15, D31: ../shared/data; GMM-200 from
   gmmfast.datasets.make_gmm200): for each patience in --patience, --seeds fits of
   GMMKMeans(k, random_state=seed, patience=p) with every other parameter at its default.
   Reported: in how many seeds every true cluster was found (Centroid Index = 0), mean
   SSE/n, mean escape proposals and mean seconds per fit. patience=0 is G-MM alone.
2. A large set (bench/_common.mixture, --large n,d,k): escape_effort in --efforts (0 is
   patience=0) on --large-seeds seeds: mean SSE/n, seconds, passes over the data the
   escapes made, and the same for the first G-MM run.

Both libraries' threads are limited to --threads (threadpoolctl).
"""
import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _common import DATA, markdown_table, mixture, simd_name, write_results
from gmmfast import GMMKMeans
from gmmfast.datasets import make_gmm200
from gmmfast.experiments.table1 import load_dataset
from gmmfast.metrics import centroid_index, centroids_from_labels


def small_sets(names, seeds_of_gmm200):
    for name in names:
        if name == "gmm200":
            for seed in seeds_of_gmm200:
                X, y = make_gmm200(seed)
                yield f"GMM-200 (data seed {seed})", X, y, 200
        else:
            d = load_dataset(name, data_home=str(DATA))
            yield name.upper(), d.X, d.y, d.k


def fit(X, k, seed, **kw):
    t = time.perf_counter()
    est = GMMKMeans(k, random_state=seed, **kw).fit(X)
    return est, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--patience", default="0,80,160,auto")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sets", default="r15,d31,gmm200")
    ap.add_argument("--gmm200-seeds", default="0,11",
                    help="data seeds of GMM-200 (11: the set of issue 14's table)")
    ap.add_argument("--efforts", default="0,0.5,1,2")
    ap.add_argument("--large", default="200000,16,100")
    ap.add_argument("--large-seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    patience = [v if v == "auto" else int(v) for v in args.patience.split(",")]
    efforts = [float(v) for v in args.efforts.split(",") if v]
    rows, large = [], []
    with threadpool_limits(args.threads):
        for name, X, y, k in small_sets(args.sets.split(","),
                                             [int(v) for v in args.gmm200_seeds.split(",")]):
            truth = centroids_from_labels(X, y)
            for p in patience:
                ci, sse, props, secs = [], [], [], []
                for s in range(args.seeds):
                    est, t = fit(X, k, s, patience=p)
                    ci.append(centroid_index(est.cluster_centers_, truth))
                    sse.append(est.inertia_ / X.shape[0])
                    props.append(len(est.escapes_))
                    secs.append(t)
                rows.append([name, p, f"{sum(c == 0 for c in ci)}/{args.seeds}",
                             f"{np.mean(ci):.2f}", f"{np.mean(sse):.4f}",
                             f"{np.mean(props):.1f}", f"{np.mean(secs):.2f}"])
                print(rows[-1], flush=True)
        n, d, k = (int(float(v)) for v in args.large.split(","))
        X = mixture(n, d, k) if efforts else None
        for e in efforts:
            sse, secs, esc_passes, first = [], [], [], []
            for s in range(args.large_seeds):
                kw = dict(patience=0) if e == 0 else dict(escape_effort=e)
                est, t = fit(X, k, s, **kw)
                sse.append(est.inertia_ / n)
                secs.append(t)
                esc_passes.append(sum(x.passes for x in est.escapes_))
                first.append(est.history_.n_iter + 1)
            large.append([f"{n} x {d}, k={k}", "0 (patience=0)" if e == 0 else e,
                          f"{np.mean(sse):.4f} +- {np.std(sse):.4f}", f"{np.mean(secs):.1f}",
                          f"{np.mean(first):.0f}", f"{np.mean(esc_passes):.0f}"])
            print(large[-1], flush=True)
    body = (f"SIMD level: {simd_name()}; {args.threads} thread(s). Every parameter not "
            "named is GMMKMeans's default (eta=0.1, merge-split, k-means++, "
            "escape_effort=1.0 in part 1, patience='auto' = max(80, k) in part 2).\n\n"
            "## Patience on sets with ground truth\n\n"
            + markdown_table(["data", "patience", "CI = 0", "mean CI", "mean SSE/n",
                              "escape proposals", "s per fit"], rows)
            + "\n\n## Escape effort on a large set\n\n"
            + markdown_table(["data", "escape_effort", "SSE/n mean +- sd", "s per fit",
                              "passes of the first G-MM run", "passes of the escapes"],
                             large))
    write_results("escape", "Escapes after convergence: patience and effort", body)


if __name__ == "__main__":
    main()
