"""
The history of a fit and its escapes
====================================

Every G-MM run records, for each iteration t, the quantities of the paper's Algorithm 1
in a :class:`gmmfast.History`: ``threshold`` is v_{t-1}, ``bound_at_previous`` is
b_t(w_{t-1}) (valid when it is at most v_{t-1}), ``bound`` is b_t(w_t), ``objective`` is
F(w_t) and ``gap`` is d_t = b_t(w_t) - F(w_t). This example plots them for the paper's
G-MM (random valid bounds, ``eta=0.02``) and then the escapes that
:class:`gmmfast.GMMKMeans` proposes after G-MM converges.
"""
import matplotlib.pyplot as plt
import numpy as np

from gmmfast import GMMKMeans
from gmmfast.datasets import make_gmm200

X = make_gmm200(random_state=0, n_components=50)[0]
n = len(X)

paper = GMMKMeans(n_clusters=50, eta=0.02, selection="random", init="random-partition",
                  random_state=0).fit(X)
h = paper.history_
print(f"{h.n_iter} iterations, F(w_0)/n = {h.initial_objective / n:.3f}, "
      f"F(w_T)/n = {h.objective[-1] / n:.3f}")
print("invariants violated:", h.invariant_violations() or "none")

# %%
# Each bound is chosen below the threshold at the previous solution, and its minimum is
# lower still. The objective can go up from one iteration to the next (G-MM is not a
# descent method on F), but the bound values b_t(w_t) never do. The right panel shows the
# gap d_t shrinking to the stopping rule.
t = np.arange(1, h.n_iter + 1)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.plot(t, h.threshold / n, "k--", label="threshold $v_{t-1}$")
ax0.plot(t, h.bound_at_previous / n, ".", label="$b_t(w_{t-1})$")
ax0.plot(t, h.bound / n, label="$b_t(w_t)$")
ax0.plot(t, h.objective / n, label="$F(w_t)$")
ax0.set_yscale("log")
ax0.set_xlabel("iteration t")
ax0.set_ylabel("per point")
ax0.legend()
ax1.semilogy(t, np.maximum(h.gap, 1e-12) / n)
ax1.set_xlabel("iteration t")
ax1.set_ylabel("gap $d_t$ per point")
fig.tight_layout()

# %%
# The default fit (merge-split bounds, ``eta=0.1``) converges in a few iterations; then it
# proposes escapes: dissolve a cheap cluster, re-seed its center elsewhere, run G-MM again
# and keep the result only when it is lower. ``escapes_`` holds every proposal.
km = GMMKMeans(n_clusters=50, random_state=0).fit(X)
esc = km.escapes_
kept = [e for e in esc if e.accepted]
print(f"{len(esc)} escape proposals, {len(kept)} kept; SSE/n {km.inertia_ / n:.4f}")
for level in km.levels_:
    print(f"level on {level.rows} rows: {level.n_iter} iterations, "
          f"objective/n {level.objective / level.rows:.4f}")

fig, ax = plt.subplots(figsize=(7, 4))
idx = np.arange(len(esc))
start = np.array([e.start_objective for e in esc]) / n
end = np.array([e.objective for e in esc]) / n
acc = np.array([e.accepted for e in esc])
ax.plot(idx, start, "k-", lw=1, label="objective before the proposal")
ax.plot(idx[~acc], end[~acc], "x", c="0.6", label="rejected (higher)")
ax.plot(idx[acc], end[acc], "o", c="tab:red", label="kept (lower)")
ax.set_xlabel("escape proposal")
ax.set_ylabel("SSE per point")
ax.legend()
fig.tight_layout()
plt.show()
