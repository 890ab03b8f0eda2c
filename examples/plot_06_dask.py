"""
A fit on Dask
=============

:meth:`gmmfast.GMMKMeans.fit` takes a ``dask.array.Array`` chunked by rows. The coarse
level runs on the driver on a sample drawn across the blocks; each of Lloyd's passes runs
the same Cython kernels on every block in a task and sends back per-cluster sums, so the
rows are never gathered. Here a ``LocalCluster`` with one worker thread in this process
stands in for a real cluster (``Client("scheduler:8786")``); it is closed when the
``with`` block ends.
"""
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

from gmmfast import GMMKMeans

k, d, n = 20, 4, 200_000
rng = np.random.default_rng(0)
means = rng.uniform(-10, 10, size=(k, d))
X_np = means[rng.integers(k, size=n)] + rng.standard_normal((n, d))
# Any row-chunked dask array works: da.from_zarr, gmmfast.datasets.read_npy_dask, ...
X = da.from_array(X_np, chunks=(50_000, d))
print(X)

with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster) as client:
    km = GMMKMeans(n_clusters=k, random_state=0).fit(X)
    labels = km.labels_                       # lazy: the labels stay with the blocks
    counts = np.bincount(labels.compute(), minlength=k)
    print(f"SSE/n {km.inertia_ / X.shape[0]:.4f} after {km.n_iter_} iterations")
    print("levels:", [(lv.rows, lv.n_iter) for lv in km.levels_])
    print("cluster sizes:", counts.min(), "to", counts.max())

# %%
# The centers are a plain NumPy array on the driver; here they sit on the true means.
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(means[:, 0], means[:, 1], marker="x", c="k", label="true means")
ax.scatter(km.cluster_centers_[:, 0], km.cluster_centers_[:, 1], s=60, facecolors="none",
           edgecolors="tab:red", label="GMMKMeans on Dask")
ax.set_xlabel("feature 0")
ax.set_ylabel("feature 1")
ax.legend()
fig.tight_layout()
plt.show()
