"""How much of a one-seed SSE/n comparison is the seed: the scale grid's 1e5-row cells, many seeds.

bench/scale.py compares every contender at random_state=0. This script fits the same data
(bench/_common.mixture, float64, data seed 0) with ``--seeds`` values of random_state and
reports each contender's SSE/n: its mean, its spread (the least and the largest) and, seed by
seed, how often ``GMMKMeans()`` ends below scikit-learn's ``KMeans(n_init=1)`` run with the
same seed. Contenders: the defaults (coarse to fine), ``sample_size=None`` (G-MM on every
row), ``eta=1`` (Lloyd's iterations, k-means++ on every row) and scikit-learn.
All in one process, one thread: the seconds are a guide to the cost of each configuration,
not a speed claim (bench/scale.py times each contender in its own process).

    python bench/seeds.py [--cells '100000,16,100;...'] [--seeds 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _common import markdown_table, mixture, simd_name, write_results
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans

CELLS = "100000,16,100;100000,16,1000;100000,64,100;100000,64,1000;100000,128,100;100000,128,1000"
CONTENDERS = {
    "GMMKMeans()": {},
    "GMMKMeans(sample_size=None)": {"sample_size": None},
    "GMMKMeans(eta=1)": {"eta": 1},
    "sklearn KMeans(n_init=1)": None,
}


def fit(name: str, X: np.ndarray, k: int, seed: int) -> float:
    """SSE/n of one contender's fit."""
    kw = CONTENDERS[name]
    if kw is None:
        from sklearn.cluster import KMeans
        return KMeans(k, n_init=1, random_state=seed).fit(X).inertia_ / X.shape[0]
    return GMMKMeans(k, random_state=seed, **kw).fit(X).inertia_ / X.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", default=CELLS, help="n,d,k;n,d,k;...")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    cells = [tuple(int(float(v)) for v in c.split(",")) for c in args.cells.split(";")]
    rows, wins = [], []
    with threadpool_limits(1):
        for n, d, k in cells:
            X = mixture(n, d, k)
            sse = {}
            for name in CONTENDERS:
                values, seconds = [], []
                for seed in range(args.seeds):
                    t = time.perf_counter()
                    values.append(fit(name, X, k, seed))
                    seconds.append(time.perf_counter() - t)
                sse[name] = np.array(values)
                rows.append([f"{n:,} x {d}, k={k}", name, f"{np.mean(values):.2f}",
                             f"{np.min(values):.2f} - {np.max(values):.2f}",
                             f"{np.median(seconds):.3g}"])
                print(rows[-1], flush=True)
            gm, sk = sse["GMMKMeans()"], sse["sklearn KMeans(n_init=1)"]
            full = sse["GMMKMeans(sample_size=None)"]
            wins.append([f"{n:,} x {d}, k={k}", f"{int((gm < sk).sum())}/{args.seeds}",
                         f"{100 * (gm.mean() - sk.mean()) / sk.mean():+.2f} %",
                         f"{int((full < sk).sum())}/{args.seeds}",
                         f"{100 * (full.mean() - sk.mean()) / sk.mean():+.2f} %"])
    body = (f"SIMD level: {simd_name()}; 1 thread; random_state 0 to {args.seeds - 1} for "
            "every contender; data: bench/_common.mixture (4k Gaussians, data seed 0), "
            "float64.\n\n"
            + markdown_table(["cell", "contender", "mean SSE/n", "least - largest",
                              "median s (one process)"], rows)
            + "\n\nSeed by seed against scikit-learn's KMeans(n_init=1) with the same "
            "random_state:\n\n"
            + markdown_table(["cell", "GMMKMeans() below sklearn", "mean, relative to sklearn",
                              "sample_size=None below sklearn", "mean, relative to sklearn"],
                             wins))
    write_results("seeds", "SSE/n over many seeds: the defaults against scikit-learn", body)


if __name__ == "__main__":
    main()
