"""How long should the random walk be? Quality of G-MM k-means against time per fit.

For each walk length (proposals per point and iteration), G-MM (eta = 0.02)
runs from the same initialisations as Lloyd (eta = 1) on D31 and R15 (SIPU;
read from ../shared/data) and on a generated 200-blob set like the paper's
GMM-200. Reported: mean and best SSE per point, mean iterations and seconds
per fit. The default of GMMKMeans(walk_steps="auto") is chosen from this table.
"""
import argparse
import time

import numpy as np

from _common import DATA, markdown_table, write_results

STEPS = [0, 0.3, 1, 3, 10, 30, 100]


def blobs200(seed=0):
    """10,000 points from 200 unit Gaussians on a 70 x 70 square, centers >= 2.5 apart."""
    rng = np.random.default_rng(seed)
    means = []
    while len(means) < 200:
        m = rng.uniform(0, 70, 2)
        if all(np.hypot(*(m - q)) >= 2.5 for q in means):
            means.append(m)
    return np.repeat(np.array(means), 50, axis=0) + rng.normal(size=(10_000, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    from gmmfast import GMMKMeans
    from gmmfast.cluster import initial_centers

    sets = [("D31", np.loadtxt(DATA / "sipu" / "d31.data.gz"), 31),
            ("R15", np.loadtxt(DATA / "sipu" / "r15.data.gz"), 15),
            ("200 blobs", blobs200(), 200)]
    rows = []
    for name, X, k in sets:
        n = X.shape[0]
        for init in ("random-partition", "k-means++"):
            inits = [initial_centers(X, k, init, random_state=np.random.default_rng(t),
                                     n_threads=1)
                     for t in range(args.trials)]
            lloyd = [GMMKMeans(k, eta=1.0, init=w0).fit(X).inertia_ / n for w0 in inits]
            rows.append([name, init, "Lloyd", f"{np.mean(lloyd):.4f}", f"{np.min(lloyd):.4f}",
                         "", ""])
            for spp in STEPS:
                sse, its, secs = [], [], []
                for t, w0 in enumerate(inits):
                    t0 = time.perf_counter()
                    m = GMMKMeans(k, eta=0.02, init=w0, walk_steps=int(spp * n),
                                  selection="random", random_state=t).fit(X)
                    secs.append(time.perf_counter() - t0)
                    sse.append(m.inertia_ / n)
                    its.append(m.n_iter_)
                rows.append([name, init, spp, f"{np.mean(sse):.4f} +- {np.std(sse):.4f}",
                             f"{np.min(sse):.4f}", f"{np.mean(its):.0f}",
                             f"{np.mean(secs):.3f}"])
    body = (f"{args.trials} trials per row, identical initialisations across rows of a "
            "block. walk steps = proposals per point and iteration (0: no walk, G-MM then "
            "keeps the touching bound but the gap rule of eta still applies).\n\n"
            + markdown_table(["data", "init", "walk steps / point", "SSE/n mean +- std",
                              "best", "iterations", "s / fit"], rows))
    write_results("walk_steps", "Walk length: quality against time (G-MM k-means, eta = 0.02)",
                  body)


if __name__ == "__main__":
    main()
