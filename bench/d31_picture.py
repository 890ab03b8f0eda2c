"""The paper's appendix figure: D31 clustered by k-means and by G-MM from one initialisation.

One random-partition initialisation (the paper's choice); panels: ground
truth, k-means, the paper's G-MM (uniform walk, eta = 0.02) and G-MM with the
package defaults (merge-split). Crosses are centers; a circled cross is a
dead cluster (no points). In the paper's code dead clusters collapsed onto
the origin; here they keep their previous center (k-means) or are re-seeded
(merge-split).
"""
import argparse

import numpy as np

from _common import DATA, RESULTS, markdown_table, write_results


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trial", type=int, default=0, help="which initialisation (seed)")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gmmfast import GMMKMeans
    from gmmfast.cluster import initial_centers
    from gmmfast.datasets import load_sipu
    from gmmfast.metrics import centroid_index, centroids_from_labels

    X, y = load_sipu("d31", DATA)
    n, k = X.shape[0], 31
    truth = centroids_from_labels(X, y)
    w0 = initial_centers(X, k, "random-partition",
                         random_state=np.random.default_rng(args.trial), n_threads=1)
    fits = [("k-means", GMMKMeans(k, eta=1.0, init=w0)),
            ("G-MM, paper (uniform walk, eta=0.02)",
             GMMKMeans(k, eta=0.02, selection="random", init=w0, random_state=args.trial)),
            ("G-MM, defaults (merge-split, eta=0.1)",
             GMMKMeans(k, init=w0, random_state=args.trial))]
    panels = [("ground truth", y, truth, np.zeros(k, dtype=bool))]
    rows = [["ground-truth centroids", f"{((X - truth[y]) ** 2).sum() / n:.4f}", "0", "0"]]
    for name, est in fits:
        est.fit(X)
        dead = np.bincount(est.labels_, minlength=k) == 0
        ci = centroid_index(est.cluster_centers_, truth)
        panels.append((f"{name}\nSSE/n = {est.inertia_ / n:.4f}, CI = {ci}", est.labels_,
                       est.cluster_centers_, dead))
        rows.append([name, f"{est.inertia_ / n:.4f}", str(ci), str(int(dead.sum()))])
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.1))
    for ax, (title, labels, centers, dead) in zip(axes, panels):
        ax.scatter(X[:, 0], X[:, 1], c=labels % 10, cmap="tab10", s=2, linewidths=0)
        ax.scatter(centers[:, 0], centers[:, 1], marker="x", c="k", s=30, linewidths=1.3)
        if dead.any():
            ax.scatter(centers[dead, 0], centers[dead, 1], marker="o", s=120,
                       facecolors="none", edgecolors="r", linewidths=1.2)
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal", adjustable="datalim")
    fig.suptitle(f"D31, one random-partition initialisation (seed {args.trial}); "
                 "colours match up to a permutation", fontsize=10)
    fig.tight_layout()
    fig.savefig(RESULTS / "d31_picture.png", dpi=60)
    plt.close(fig)
    body = ("![D31 clusterings](d31_picture.png)\n\n"
            + markdown_table(["solution", "SSE per point", "Centroid Index", "dead clusters"],
                             rows)
            + "\n\nThe paper's figure shows k-means with merged and dead clusters (its code "
            "moved dead centers to the origin) and a near-perfect G-MM solution.")
    write_results("d31_picture", "D31: ground truth, k-means and G-MM from one initialisation",
                  body)


if __name__ == "__main__":
    main()
