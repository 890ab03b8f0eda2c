"""Which way of choosing valid bounds gives G-MM k-means the best objective per second?

Every configuration runs from the same initial centers (per data set, init
and trial) and is timed in the same process, alternating between
configurations within a trial. Configurations:

- Lloyd (eta = 1), the reference;
- random bounds from the paper's uniform walk (``sampler="uniform"``) with
  3, 30 and 100 proposals per point and iteration, eta = 0.02;
- random bounds from the center-graph Metropolis-Hastings walk
  (``sampler="local"``, same target), 30 proposals per point, eta = 0.02;
- the maximum-entropy draw repaired to validity (``sampler="gibbs"``), eta = 0.02;
- the merge-split selection for eta in ETAS.

Reported per data set and init: mean +- std and best SSE per point, mean
Centroid Index against the ground truth, iterations, median seconds per fit;
and a figure of mean SSE/n against median seconds per fit (objective against
time). GMMKMeans's defaults (selection, eta, init) are chosen from this.
"""
import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from _common import DATA, RESULTS, markdown_table, write_results

ETAS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5]


def configs():
    out = [("Lloyd", dict(eta=1.0))]
    for spp in (3, 30, 100):
        out.append((f"uniform walk {spp}/pt", dict(eta=0.02, selection="random",
                                                  sampler="uniform", walk_steps=spp)))
    out.append(("local walk 30/pt", dict(eta=0.02, selection="random", sampler="local",
                                         walk_steps=30)))
    out.append(("gibbs", dict(eta=0.02, selection="random", sampler="gibbs")))
    for eta in ETAS:
        out.append((f"merge-split eta={eta:g}", dict(eta=eta, selection="merge-split")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1,
                    help="OpenMP threads for every fit (default 1: the 2 shared cores are busy)")
    ap.add_argument("--sets", default="gmm200,d31,r15,norm25")
    ap.add_argument("--inits", default="forgy,k-means++,random-partition")
    args = ap.parse_args()
    from gmmfast import GMMKMeans
    from gmmfast.cluster import initial_centers
    from gmmfast.experiments.table1 import load_dataset
    from gmmfast.metrics import centroid_index, centroids_from_labels

    rows, points = [], {}
    cfgs = configs()
    for spec in args.sets.split(","):
        data = load_dataset(spec, data_home=str(DATA))
        X, k = data.X, data.k
        n = X.shape[0]
        truth = centroids_from_labels(X, data.y)
        for init in args.inits.split(","):
            res = {name: [] for name, _ in cfgs}
            for t in range(args.trials):
                w0 = initial_centers(X, k, init, random_state=np.random.default_rng([7, t]),
                                     n_threads=1)
                for name, kw in cfgs:
                    kw = dict(kw)
                    if "walk_steps" in kw:
                        kw["walk_steps"] = int(kw["walk_steps"] * n)
                    est = GMMKMeans(k, init=w0, random_state=t, **kw)
                    with threadpool_limits(limits=args.threads, user_api="openmp"):
                        t0 = time.perf_counter()
                        est.fit(X)
                        secs = time.perf_counter() - t0
                    assert not est.history_.invariant_violations()
                    res[name].append((est.inertia_ / n,
                                      centroid_index(est.cluster_centers_, truth),
                                      est.n_iter_, secs))
            for name, _ in cfgs:
                v = np.array(res[name])
                rows.append([data.name, init, name, f"{v[:, 0].mean():.4f} +- {v[:, 0].std():.4f}",
                             f"{v[:, 0].min():.4f}", f"{v[:, 1].mean():.2f}",
                             f"{v[:, 2].mean():.0f}", f"{np.median(v[:, 3]):.4f}"])
                points.setdefault(data.name, []).append(
                    (init, name, v[:, 0].mean(), np.median(v[:, 3])))
            print(data.name, init, "done", flush=True)
    figure(points, RESULTS / "walk_samplers.png")
    body = (f"{args.trials} trials per row; within a (data, init) block every row starts from "
            f"the same centers. Fits use {args.threads} OpenMP thread(s) and are timed in one "
            "process, alternating between configurations within a trial; the 2 cores are "
            "shared with other jobs, so times are indicative (the lead re-runs speed on a quiet "
            "machine). CI = Centroid Index against the ground truth (0: every cluster found).\n\n"
            "![objective against time](walk_samplers.png)\n\n"
            "Figure: mean SSE/n against median seconds per fit, one panel per data set and "
            "init. Uniform walk points from left to right: 3, 30, 100 proposals per point; "
            "merge-split points from right to left: eta = 0.01, 0.02, 0.05, 0.1, 0.2, 0.5.\n\n"
            + markdown_table(["data", "init", "bound selection", "SSE/n mean +- std", "best",
                              "CI mean", "iterations", "s / fit (median)"], rows))
    write_results("walk_samplers", "Bound selection for G-MM k-means: objective against time",
                  body)


def figure(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    def label_125(v, _):
        mant = f"{v:.1e}"[0]
        return f"{v:.3g}" if mant in "125" else ""

    sets = list(points)
    inits = sorted({p[0] for v in points.values() for p in v},
                   key=["forgy", "random-partition", "k-means++"].index)
    fig, axes = plt.subplots(len(sets), len(inits), figsize=(3.6 * len(inits), 2.7 * len(sets)),
                             squeeze=False)
    families = [("Lloyd", "k", "o"), ("uniform walk", "tab:blue", "o"),
                ("local walk", "tab:orange", "s"), ("gibbs", "tab:purple", "D"),
                ("merge-split", "tab:green", "^")]
    for r, name in enumerate(sets):
        for c, init in enumerate(inits):
            ax = axes[r][c]
            pts = [p for p in points[name] if p[0] == init]
            for fam, color, marker in families:
                sel = [p for p in pts if p[1].startswith(fam)]
                if sel:
                    ax.plot([p[3] for p in sel], [p[2] for p in sel], marker=marker,
                            color=color, ms=4, lw=1, label=fam)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(label_125))
            ax.yaxis.set_minor_formatter(FuncFormatter(label_125))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"{name}, {init}", fontsize=9)
            ax.tick_params(labelsize=7)
            if r == len(sets) - 1:
                ax.set_xlabel("median seconds per fit", fontsize=8)
            if c == 0:
                ax.set_ylabel("mean SSE per point", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=60)
    plt.close(fig)


if __name__ == "__main__":
    main()
