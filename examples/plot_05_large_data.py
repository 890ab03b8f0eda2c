"""
A large fit, coarse to fine, with progress
==========================================

On more rows than ``max(64 k, 20000)`` the default ``GMMKMeans`` runs G-MM and its
escapes on a uniform sample of the rows (``sample_size="auto"``), then polishes the
centers with Lloyd's passes, on a larger sample and then on every row, to a fixed point.
``verbose=1`` prints each iteration; ``levels_`` records each level. A million generated
rows (d = 16, k = 100, float32) keep this example to a few seconds; the same call takes
a memory-mapped ``.npy`` (``numpy.load(path, mmap_mode="r")``), read in row blocks.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

from gmmfast import GMMKMeans

rng = np.random.default_rng(0)
k, d, n = 100, 16, 1_000_000
means = rng.uniform(-4, 4, size=(k, d))
X = (means[rng.integers(k, size=n)] + rng.standard_normal((n, d))).astype(np.float32)

t0 = time.perf_counter()
km = GMMKMeans(n_clusters=k, random_state=0, verbose=1).fit(X)
print(f"\n{time.perf_counter() - t0:.2f} s, SSE/n {km.inertia_ / n:.4f}, "
      f"centers {km.cluster_centers_.dtype}")

# %%
# The levels: rows each one read, its iterations and its seconds.
for i, lv in enumerate(km.levels_):
    print(f"level {i}: {lv.rows:>7d} rows, {lv.n_iter:>4d} iterations, {lv.seconds:.3f} s")

fig, ax = plt.subplots(figsize=(6, 3.5))
names = [f"{lv.rows:,} rows" for lv in km.levels_]
ax.barh(names, [lv.seconds for lv in km.levels_])
ax.invert_yaxis()
ax.set_xlabel("seconds")
ax.set_title("time per level (coarse to fine)")
fig.tight_layout()
plt.show()
