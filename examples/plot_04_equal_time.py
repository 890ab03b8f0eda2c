"""
Equal time against scikit-learn's restarts
==========================================

A fair comparison of one G-MM fit against k-means gives k-means the same wall time:
scikit-learn's ``KMeans(init="k-means++", n_init=m)`` keeps the best of m restarts, with m
chosen so that the restarts take as long as the G-MM fit. Both run on one thread. This is
a small version of ``bench/equal_time.py`` (its measured results, with the machine and
the caveats, are on the benchmark page *Clustering quality at equal time*); the numbers
printed here are from the machine that built these pages.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans as SKKMeans
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.datasets import make_gmm200

X = make_gmm200(random_state=0, n_components=50)[0]
k, n = 50, len(X)

rows = []
with threadpool_limits(1):
    SKKMeans(n_clusters=k, n_init=1, random_state=0).fit(X)      # warm up both libraries
    GMMKMeans(n_clusters=k, random_state=0, patience=0).fit(X)
    for seed in range(3):
        t0 = time.perf_counter()
        gmm = GMMKMeans(n_clusters=k, random_state=seed).fit(X)
        t_gmm = time.perf_counter() - t0
        t0 = time.perf_counter()
        SKKMeans(n_clusters=k, n_init=1, random_state=seed).fit(X)
        t_one = time.perf_counter() - t0
        m = max(1, int(round(t_gmm / t_one)))
        t0 = time.perf_counter()
        sk = SKKMeans(n_clusters=k, n_init=m, random_state=seed).fit(X)
        t_sk = time.perf_counter() - t0
        rows.append((seed, gmm.inertia_ / n, t_gmm, sk.inertia_ / n, m, t_sk))
        print(f"seed {seed}: G-MM SSE/n {gmm.inertia_ / n:.4f} in {t_gmm:.2f} s;"
              f" best of {m} k-means++ restarts {sk.inertia_ / n:.4f} in {t_sk:.2f} s")

# %%
# Lower is better; each pair of bars is one seed.
rows = np.array(rows)
fig, ax = plt.subplots(figsize=(6, 4))
x = np.arange(len(rows))
ax.bar(x - 0.2, rows[:, 1], 0.4, label="GMMKMeans()")
ax.bar(x + 0.2, rows[:, 3], 0.4, label="scikit-learn, n_init = m")
for i, r in enumerate(rows):
    ax.annotate(f"m = {int(r[4])}", (i + 0.2, r[3]), ha="center", va="bottom", fontsize=8)
lo = rows[:, [1, 3]].min()
ax.set_ylim(lo * 0.98, rows[:, [1, 3]].max() * 1.01)
ax.set_xticks(x, [f"seed {int(s)}" for s in rows[:, 0]])
ax.set_ylabel("SSE per point")
ax.legend()
fig.tight_layout()
plt.show()
