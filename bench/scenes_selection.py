"""How coherent are the bounds the Potts bias selects, against the random walk's?

The Potts bias maximises -sum_i E(z_i) over the valid bounds (labelings whose
cost table sum is within the budget). That problem is a budgeted labeling
problem; ``potts_select`` solves it approximately (Lagrangian bisection with
alpha-expansion, a knapsack over the labelings met, greedy moves and
exchanges). Two questions:

1. Small problems (n images of a small grid, Gaussian costs, budgets from
   1 % to 60 % of the way from the touching labeling's cost to the costliest):
   in how many does some valid labeling found by the uniform walk from the
   touching start (40 walks of 400-800 proposals) have a lower total Potts
   energy than ``potts_select``'s, and by how much?
2. The Table 3 problem, at the solution w after 5 CCP iterations from the
   coherent labels (lambda = 0.5), with thresholds F(w) + slack for a range
   of slacks: the Potts energy per image of the touching labeling, of
   ``potts_select``'s, and of the walk's (10 proposals per region label),
   and the seconds each takes.

Run: python bench/scenes_selection.py
"""
from __future__ import annotations

import time

import numpy as np

from _common import markdown_table, write_results
from gmmfast.latent import sample_latent, table_value  # noqa: E402
from gmmfast.lssvm import LatentSSVM, LSSVMBounds, budget_for, potts_select  # noqa: E402
from gmmfast.experiments.table3 import LAM, initial_labels, load_scenes  # noqa: E402
from gmmfast.potts import potts_energy  # noqa: E402

SMALL = [((3, 3), 3, 3, 600, 400, 123), ((3, 3), 3, 3, 600, 400, 5),
         ((4, 4), 4, 4, 300, 800, 123), ((2, 5), 5, 2, 300, 400, 9)]
FRACS = [0.01, 0.05, 0.1, 0.3, 0.6]


def small_problems():
    rows = []
    for grid, n, L, trials, steps, seed in SMALL:
        rng = np.random.default_rng(seed)
        R = grid[0] * grid[1]
        worse, margin, t_sel = 0, [], 0.0
        for trial in range(trials):
            costs = rng.normal(size=(n, R, L))
            touching = costs.argmin(-1).astype(np.int32)
            flat = costs.reshape(-1, L)
            lo = table_value(flat, touching.ravel())
            hi = table_value(flat, costs.argmax(-1).ravel())
            budget = lo + FRACS[trial % len(FRACS)] * (hi - lo)
            t = time.perf_counter()
            z, v, info = potts_select(costs, budget, touching, grid)
            t_sel += time.perf_counter() - t
            assert v <= budget
            walk = min(potts_energy(sample_latent(flat, touching.ravel(), budget, steps, s)[0]
                                    .reshape(n, *grid)).sum() for s in range(40))
            if info["energy"] > walk:
                worse += 1
                margin.append(info["energy"] - walk)
        rows.append([f"{n} images of {grid[0]} x {grid[1]}, {L} labels (seed {seed})", trials,
                     f"40 x {steps}", worse, "-" if not margin else f"{max(margin):.0f}",
                     f"{1e3 * t_sel / trials:.1f}"])
        print(rows[-1], flush=True)
    return rows


def table3_problem():
    D = load_scenes(0)
    z0 = initial_labels(D, 0.5, 0)
    est = LatentSSVM(D.model(), lam=LAM, method="ccp", max_iter=5, tol=0.0,
                     solver_max_iter=1000).fit(D.X_train, D.y_train, latent_init=z0)
    model = D.model()
    data = model.prepare(D.X_train)
    fam = LSSVMBounds(model, data, D.y_train.astype(np.int32), LAM, est.latent_, solver_tol=1.0,
                      solver_max_iter=1)
    w = est.coef_
    e = fam.at(w)
    F = e.objective
    n, R = D.Z_train.shape
    grid = D.grid
    costs = e.costs.reshape(n, R, -1)
    rows = []
    E = lambda z: float(potts_energy(np.asarray(z).reshape(n, *grid)).mean())  # noqa: E731
    for slack in (1e-4, 1e-3, 3e-3, 1e-2, 3e-2):
        budget = budget_for(F + slack, e.const, fam.table_value(e.costs, e.touching))
        t = time.perf_counter()
        z, v, info = potts_select(costs, budget, e.touching, grid)
        t_p = time.perf_counter() - t
        t = time.perf_counter()
        zw, vw, acc = sample_latent(e.costs, e.touching.reshape(-1), budget, 10 * n * R, 0,
                                    n_options=fam.n_latent)
        t_w = time.perf_counter() - t
        rows.append([f"{slack:g}", f"{E(e.touching):.1f}", f"{E(z):.1f}", f"{E(zw):.1f}",
                     f"{100 * np.mean(z != e.touching):.1f}",
                     f"{100 * np.mean(zw.reshape(n, R) != e.touching):.1f}",
                     f"{t_p:.2f}", f"{t_w:.3f}"])
        print(rows[-1], flush=True)
    return rows, F


def main() -> None:
    t0 = time.perf_counter()
    small = small_problems()
    big, F = table3_problem()
    body = "\n".join([
        "## 1. Small problems: is any labeling found by the walk more coherent?",
        "",
        "Gaussian costs per (region, label); budgets at 1, 5, 10, 30 and 60 % of the way from "
        "the touching labeling's cost to the costliest labeling's (cycled over the trials). "
        "`walk better` counts the trials in which the best of 40 walks from the touching "
        "labeling found a valid labeling with a lower total Potts energy than potts_select.",
        "",
        markdown_table(["problem", "trials", "walks x proposals", "walk better",
                        "largest margin (edges)", "potts_select ms / call"], small),
        "",
        "## 2. The Table 3 problem",
        "",
        f"300 training scenes, at w after 5 CCP iterations from the lambda = 0.5 labels "
        f"(F(w) = {F:.4f}); the threshold is F(w) + slack. Potts energy per image of the "
        "touching (CCP) labeling, of potts_select's and of the walk's (10 proposals per region "
        "label, 300000), the fraction of region labels each changes from the touching "
        "labeling, and the seconds each takes (one thread; a loaded 2-core machine).",
        "",
        markdown_table(["slack", "E touching", "E Potts-selected", "E walk",
                        "Potts: labels changed %", "walk: labels changed %",
                        "potts_select s", "walk s"], big),
        "",
        f"Total time {time.perf_counter() - t0:.0f} s.",
    ])
    write_results("scenes_selection", "Scene experiment: coherence of the Potts-biased bounds",
                  body)


if __name__ == "__main__":
    main()
