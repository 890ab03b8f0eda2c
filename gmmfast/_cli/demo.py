"""``gmmfast demo``: G-MM against Lloyd's k-means from identical initialisations."""
from __future__ import annotations

import time

import numpy as np


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="G-MM vs k-means on generated blobs (a small table)")
    p.add_argument("--n-samples", type=int, default=10000)
    p.add_argument("-k", "--n-clusters", type=int, default=100)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--eta", type=float, default=0.02)
    p.add_argument("--init", default="random-partition",
                   choices=["forgy", "random-partition", "k-means++"])
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def make_blobs(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """n points from k unit-variance 2-D Gaussians whose means are uniform on a square."""
    side = 5.0 * np.sqrt(k)
    means = rng.uniform(0, side, size=(k, 2))
    return means[rng.integers(0, k, size=n)] + rng.normal(size=(n, 2))


def run(args) -> int:
    from ..cluster import GMMKMeans

    rng = np.random.default_rng(args.seed)
    X = make_blobs(args.n_samples, args.n_clusters, rng)
    n, k = X.shape[0], args.n_clusters
    rows = {"k-means (eta=1)": [], f"G-MM (eta={args.eta:g})": []}
    times = {name: 0.0 for name in rows}
    for trial in range(args.trials):
        w0 = GMMKMeans(k, init=args.init)._init_centers(
            X, np.ones(n), k, args.init, np.random.default_rng([args.seed, trial]), 1)
        for name, eta in zip(rows, (1.0, args.eta)):
            t = time.perf_counter()
            m = GMMKMeans(k, eta=eta, init=w0, random_state=trial).fit(X)
            times[name] += time.perf_counter() - t
            rows[name].append((m.inertia_ / n, m.n_iter_))
    print(f"{n} points, {k} blobs in 2-D, init={args.init}, {args.trials} trials "
          "(both methods start from the same centers)")
    print(f"{'method':<20} {'SSE/n mean':>11} {'std':>8} {'best':>8} {'iters':>7} {'s/fit':>7}")
    for name, vals in rows.items():
        sse = np.array([v[0] for v in vals])
        its = np.mean([v[1] for v in vals])
        print(f"{name:<20} {sse.mean():11.4f} {sse.std():8.4f} {sse.min():8.4f} {its:7.1f} "
              f"{times[name] / args.trials:7.3f}")
    return 0
