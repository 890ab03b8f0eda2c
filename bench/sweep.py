"""G-MM's defaults against scikit-learn's k-means++ restarts at equal wall-clock time, over
many data sets (issue 29, item 3).

Sets: scikit-learn's bundled iris, wine, breast cancer, digits, diabetes; make_blobs with
equal and unequal spreads, unequal sizes, a linear (anisotropic) transform, 10 and 50
dimensions; moons, circles, uniform square and cube; Norm-25, GMM-200 (the package's
generators), SIPU R15 and D31 (read from the shared data folder, never downloaded); several
of them with 1-5 % uniform outliers added (points uniform on the set's bounding box
widened by 10 % each side; the true k stays the number of clusters). Every set is generated
from a fixed seed. Each set is run at k = its number of classes / clusters and at 3k.

Per cell: warm-up fits (not reported) measure one G-MM fit (``GMMKMeans(k,
random_state=s)``, the defaults) and one ``KMeans(k, init="k-means++", n_init=1)`` fit;
m0 = ceil(mean G-MM time / median KMeans time); since one call with n_init=m costs less
than m calls (scikit-learn's per-call overhead), KMeans(n_init=m) is then timed on a warm-up
seed and m scaled up by G-MM time / that time until it takes at least as long as G-MM (at
most 3 checks), so the restarts get at least as long. Then
for s = 0..seeds-1 both run from random_state = s, alternating, in one process, one thread
each (OpenMP and BLAS limited by threadpoolctl), each timed with its initialisation.
SSE of both is recomputed here the same way from the returned centers (every point to its
nearest center, float64 differences), so the comparison does not depend on either
library's bookkeeping of ``inertia_``.

Seed-level comparison: rel = (SSE_G-MM - SSE_KMeans) / SSE_KMeans; win rel < -1e-6, tie
|rel| <= 1e-6, loss rel > 1e-6; losses above 1e-4 and 1e-3 are counted too. A cell's
result compares the mean SSE over its seeds the same way.

Raw records go to bench/out/sweep.json (one per cell, written as each cell ends; --resume
keeps the cells already there and runs only the missing ones).
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from _common import DATA, ROOT, markdown_table, simd_name, write_results

OUT = ROOT / "bench" / "out" / "sweep.json"
TIE = 1e-6


def _data_home(arg):
    """The folder holding sipu/ (D31, R15): --data-home, else ../shared/data beside the
    repository's root, else the one beside the worktrees' folder."""
    cands = [Path(arg)] if arg else [DATA, ROOT.parents[1] / "shared" / "data"]
    for c in cands:
        if (c / "sipu" / "r15.data.gz").is_file():
            return c
    raise SystemExit(f"no SIPU data in {[str(c) for c in cands]}; pass --data-home")


def _outliers(X, frac, seed):
    """X with round(frac * n) points uniform on its bounding box widened by 10 % each side."""
    rng = np.random.default_rng(seed)
    lo, hi = X.min(0), X.max(0)
    pad = 0.1 * (hi - lo)
    m = int(round(frac * X.shape[0]))
    O = rng.uniform(lo - pad, hi + pad, size=(m, X.shape[1]))
    Z = np.vstack([X, O])
    return np.ascontiguousarray(Z[rng.permutation(Z.shape[0])])


def _std(X):
    s = X.std(0)
    return (X - X.mean(0)) / np.where(s > 0, s, 1.0)


def _blobs(n, centers, d=2, std=1.0, seed=0, box=(-10, 10)):
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(n_samples=n, centers=centers, n_features=d, cluster_std=std,
                      center_box=box, random_state=seed)
    return X


def build_sets(data_home):
    """name -> (description, generator of X, true k). Generators are deterministic."""
    from sklearn import datasets as skd
    from gmmfast.datasets import load_sipu, make_gmm200, make_norm25

    def aniso():
        X = _blobs(1500, 5, seed=170)
        return X @ np.array([[0.6, -0.64], [-0.41, 0.85]])

    def unequal_sizes():
        from sklearn.datasets import make_blobs
        sizes = [40, 100, 250, 600, 1000, 1500]
        X, _ = make_blobs(n_samples=sizes, centers=None, n_features=2, cluster_std=1.0,
                          center_box=(-15, 15), random_state=3)
        return X

    sets = {
        "iris-std": ("iris, standardized", lambda: _std(skd.load_iris().data), 3),
        "iris-raw": ("iris, raw (cm)", lambda: skd.load_iris().data.astype(float), 3),
        "wine-std": ("wine, standardized", lambda: _std(skd.load_wine().data), 3),
        "wine-raw": ("wine, raw (proline dominates)", lambda: skd.load_wine().data.astype(float), 3),
        "cancer-std": ("breast cancer, standardized",
                       lambda: _std(skd.load_breast_cancer().data), 2),
        "digits-raw": ("digits, raw pixels 0-16", lambda: skd.load_digits().data.astype(float), 10),
        "digits-std": ("digits, standardized (constant pixels left 0)",
                       lambda: _std(skd.load_digits().data.astype(float)), 10),
        "diabetes": ("diabetes features as shipped (mean-centred, scaled); no classes: "
                     "nominal k = 3", lambda: skd.load_diabetes().data.astype(float), 3),
        "blobs-equal": ("make_blobs, 5 centers, std 1, n 1000",
                        lambda: _blobs(1000, 5, seed=1), 5),
        "blobs-spreads": ("make_blobs, 8 centers, std 0.3-3, n 2000",
                          lambda: _blobs(2000, 8, std=np.linspace(0.3, 3.0, 8), seed=2,
                                         box=(-20, 20)), 8),
        "blobs-sizes": ("make_blobs, 6 centers, sizes 40-1500, n 3490", unequal_sizes, 6),
        "blobs-aniso": ("make_blobs, 5 centers, n 1500, times a linear map", aniso, 5),
        "blobs-10d": ("make_blobs, 15 centers, d 10, std 2, n 4000",
                      lambda: _blobs(4000, 15, d=10, std=2.0, seed=4), 15),
        "blobs-50d": ("make_blobs, 10 centers, d 50, std 3, n 5000",
                      lambda: _blobs(5000, 10, d=50, std=3.0, seed=5), 10),
        "blobs-20-10k": ("make_blobs, 20 centers, std 1.5, n 10000, box +-30",
                         lambda: _blobs(10000, 20, std=1.5, seed=6, box=(-30, 30)), 20),
        "moons": ("make_moons, n 1000, noise 0.05",
                  lambda: skd.make_moons(1000, noise=0.05, random_state=7)[0], 2),
        "circles": ("make_circles, n 1000, noise 0.05, factor 0.5",
                    lambda: skd.make_circles(1000, noise=0.05, factor=0.5, random_state=8)[0], 2),
        "square": ("uniform unit square, n 2000; no clusters: nominal k = 10",
                   lambda: np.random.default_rng(9).uniform(size=(2000, 2)), 10),
        "cube": ("uniform unit cube, n 3000; no clusters: nominal k = 8",
                 lambda: np.random.default_rng(10).uniform(size=(3000, 3)), 8),
        "norm25": ("Norm-25 (make_norm25(0)): n 10000, d 15", lambda: make_norm25(0)[0], 25),
        "r15": ("SIPU R15", lambda: load_sipu("r15", data_home, download_if_missing=False)[0], 15),
        "d31": ("SIPU D31", lambda: load_sipu("d31", data_home, download_if_missing=False)[0], 31),
        "gmm200": ("GMM-200 (make_gmm200(0)): n 10000", lambda: make_gmm200(0)[0], 200),
    }
    with_outliers = [("iris-std", 0.02), ("wine-std", 0.03), ("blobs-equal", 0.05),
                     ("blobs-spreads", 0.01), ("blobs-aniso", 0.05), ("blobs-50d", 0.02),
                     ("moons", 0.03), ("digits-raw", 0.01), ("r15", 0.02), ("d31", 0.05),
                     ("blobs-20-10k", 0.01)]
    for i, (base, frac) in enumerate(with_outliers):
        desc, gen, k = sets[base]
        sets[f"{base}+out{int(frac * 100)}%"] = (
            f"{desc}, plus {frac:.0%} uniform outliers",
            (lambda gen=gen, frac=frac, i=i: _outliers(gen(), frac, 1000 + i)), k)
    return sets


def sse(X, C):
    """Sum over points of the squared distance to the nearest center (float64; the nearest
    found by the expansion, its distance from the differences)."""
    X = np.asarray(X, np.float64)
    C = np.asarray(C, np.float64)
    cc = (C ** 2).sum(1)
    total = 0.0
    for lo in range(0, X.shape[0], 4096):
        B = X[lo:lo + 4096]
        j = np.argmin(cc[None, :] - 2.0 * B @ C.T, axis=1)
        total += float(((B - C[j]) ** 2).sum())
    return total


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run_cell(X, k, seeds, warmup):
    from sklearn.cluster import KMeans
    from gmmfast import GMMKMeans

    gmm = lambda s: GMMKMeans(k, random_state=s).fit(X)
    skl = lambda m, s: KMeans(k, init="k-means++", n_init=m, random_state=s).fit(X)
    t_g = [timed(lambda: gmm(10_000 + s))[1] for s in range(warmup)]
    t_k1 = [timed(lambda: skl(1, 10_000 + s))[1] for s in range(2 * warmup)]
    m0 = m = max(1, math.ceil(np.mean(t_g) / np.median(t_k1)))
    # One call with n_init=m costs less than m calls with n_init=1 (per-call overhead), so
    # check the restarts' time on a warm-up seed and scale m up until it reaches G-MM's.
    t_km = []
    for it in range(3):
        t = timed(lambda: skl(m, 20_000 + it))[1]
        t_km.append((m, t))
        if t >= np.mean(t_g):
            break
        m = max(m + 1, math.ceil(m * np.mean(t_g) / t))
    recs = []
    for s in range(seeds):
        g, tg = timed(lambda: gmm(s))
        km, tk = timed(lambda: skl(m, s))
        recs.append(dict(seed=s, gmm_sse=sse(X, g.cluster_centers_), gmm_inertia=float(g.inertia_),
                         gmm_s=tg, km_sse=sse(X, km.cluster_centers_),
                         km_inertia=float(km.inertia_), km_s=tk))
    return dict(m=m, m0=m0, warm_gmm_s=t_g, warm_km1_s=t_k1, warm_km_m_s=t_km, seeds=recs)


def classify(rel):
    return "win" if rel < -TIE else ("tie" if rel <= TIE else "loss")


def summary_row(label, rels):
    rels = np.asarray(rels)
    w = int((rels < -TIE).sum())
    t = int((np.abs(rels) <= TIE).sum())
    l = int((rels > TIE).sum())
    worst = rels.max() if len(rels) else float("nan")
    return [label, len(rels), w, t, l, int((rels > 1e-4).sum()), int((rels > 1e-3).sum()),
            f"{worst:+.2e}" + ("" if worst > TIE else " (no loss)")]


def report(records, args):
    cells = [r for key, r in records.items() if key != "_runs"]
    order = list(build_sets(None if args.no_data else _data_home(args.data_home)).keys()) \
        if not args.no_data else []
    pos = {name: i for i, name in enumerate(order)}
    cells.sort(key=lambda r: (pos.get(r["set"], 999), r["k"]))
    seed_rels, cell_rels, rows, ratios = [], [], [], []
    for c in cells:
        g = np.array([s["gmm_sse"] for s in c["seeds"]])
        km = np.array([s["km_sse"] for s in c["seeds"]])
        rel = (g - km) / km
        seed_rels += list(rel)
        crel = (g.mean() - km.mean()) / km.mean()
        cell_rels.append(crel)
        c["cell_rel"] = crel
        cls = [classify(x) for x in rel]
        tg = np.mean([s['gmm_s'] for s in c['seeds']])
        tk = np.mean([s['km_s'] for s in c['seeds']])
        ratios.append(tk / tg)
        rows.append([c["set"], c["n"], c["d"], c["k"], len(c["seeds"]),
                     f"{c.get('m0', c['m'])} -> {c['m']}", f"{tg:.3f}", f"{tk:.3f}",
                     f"{tk / tg:.2f}",
                     f"{g.mean():.6g}", f"{km.mean():.6g}", f"{crel:+.2e}",
                     f"{rel.max():+.2e}",
                     f"{cls.count('win')} / {cls.count('tie')} / {cls.count('loss')}"])
    n_sets = len({c["set"] for c in cells})
    summ = markdown_table(
        ["over", "comparisons", "wins", "ties", "losses", "losses > 1e-4", "losses > 1e-3",
         "worst relative loss"],
        [summary_row(f"seeds (each seed of each cell)", seed_rels),
         summary_row(f"cells (mean SSE over a cell's seeds)", cell_rels)])
    k0 = {}
    for c in cells:
        k0[c["set"]] = min(k0.get(c["set"], c["k"]), c["k"])
    groups = [("true k", lambda c: c["k"] == k0[c["set"]]),
              ("3k", lambda c: c["k"] != k0[c["set"]]),
              ("k <= 10", lambda c: c["k"] <= 10), ("k > 10", lambda c: c["k"] > 10),
              ("n < 1000", lambda c: c["n"] < 1000), ("n >= 1000", lambda c: c["n"] >= 1000),
              ("d = 2", lambda c: c["d"] == 2), ("d > 2", lambda c: c["d"] > 2),
              ("with outliers", lambda c: "+out" in c["set"]),
              ("without outliers", lambda c: "+out" not in c["set"])]
    by_group = markdown_table(
        ["group", "cells", "wins", "ties", "losses", "losses > 1e-4", "losses > 1e-3",
         "worst relative loss"],
        [summary_row(name, [c["cell_rel"] for c in cells if f(c)]) for name, f in groups])
    worst = sorted(cells, key=lambda c: -c["cell_rel"])[:10]
    worst_tab = markdown_table(
        ["set", "k", "cell relative difference", "worst seed"],
        [[c["set"], c["k"], f"{c['cell_rel']:+.2e}",
          f"{max((s['gmm_sse'] - s['km_sse']) / s['km_sse'] for s in c['seeds']):+.2e}"]
         for c in worst])
    # inertia_ as reported against the recomputed SSE (bookkeeping check)
    dev_g = max((abs(s["gmm_inertia"] - s["gmm_sse"]) / s["gmm_sse"] for c in cells
                 for s in c["seeds"]), default=0.0)
    dev_k = max((abs(s["km_inertia"] - s["km_sse"]) / s["km_sse"] for c in cells
                 for s in c["seeds"]), default=0.0)
    runs = records.get("_runs", [])
    runs_note = ("\n\nThe records come from: " + "; ".join(
        f"`{r['command']}` ({r['date']}, commit {r['commit']})" for r in runs) + "."
        if runs else "")
    descs = {}
    if not args.no_data:
        sets = build_sets(_data_home(args.data_home))
        descs = {name: sets[name][0] for name in sets}
    set_tab = markdown_table(["set", "what"], [[s, descs.get(s, "")] for s in
                                               dict.fromkeys(c["set"] for c in cells)])
    seeds_note = ", ".join(sorted({f"{c['set']} k={c['k']}: {len(c['seeds'])}" for c in cells
                                   if len(c["seeds"]) != args.seeds}))
    body = (
        f"G-MM's defaults (`GMMKMeans(k, random_state=s)`) against scikit-learn "
        f"`KMeans(k, init=\"k-means++\", n_init=m, random_state=s)` with m restarts chosen "
        f"per cell so the restarts take at least as long: m0 = ceil(mean G-MM time / median "
        f"time of one KMeans(n_init=1) fit), both measured on {args.warmup} and "
        f"{2 * args.warmup} warm-up fits not reported; then KMeans(n_init=m) timed on a "
        f"warm-up seed and m scaled up by the ratio until it takes at least G-MM's time "
        f"(one call with m restarts costs less than m calls). In the timed runs the "
        f"restarts took {np.median(ratios):.2f}x G-MM's time per cell in the median "
        f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x; the 2 cores were shared with "
        f"other jobs, so single times are noisy; in {sum(r < 1 for r in ratios)} of "
        f"{len(ratios)} cells the restarts ended up with less time than G-MM, "
        f"{sum(r < 1 and x > TIE for r, x in zip(ratios, cell_rels))} of them cells that G-MM "
        f"lost). {len(cells)} cells over {n_sets} sets "
        f"(each at its true k and 3k); seeds s = 0..{args.seeds - 1} per cell"
        + (f" except {seeds_note} (to keep the run within its time)" if seeds_note else "")
        + f". One thread each (OpenMP and BLAS, threadpoolctl; the process pinned to one "
        f"core), alternating in one process; SIMD level of the kernels: {simd_name()}. "
        "SSE recomputed here from each side's centers (every point to its nearest center). "
        f"Relative difference = (SSE G-MM - SSE KMeans) / SSE KMeans: win < -1e-6, tie within "
        f"1e-6, loss > 1e-6." + runs_note + "\n\n"
        "## Summary\n\n" + summ
        + "\n\n### Cells by group\n\n" + by_group
        + "\n\n## The 10 worst cells (by the relative difference of mean SSE)\n\n" + worst_tab
        + f"\n\nBookkeeping check: the largest relative gap between a fit's `inertia_` and "
        f"the SSE recomputed from its centers is {dev_g:.1e} for G-MM and {dev_k:.1e} for "
        f"KMeans.\n\n## Per cell\n\nTimes are seconds per fit (mean over seeds); SSE is "
        f"the mean over seeds; 'rel' is the relative difference of the means, 'worst seed' "
        f"the largest of a seed.\n\n"
        + markdown_table(["set", "n", "d", "k", "seeds", "m restarts (m0 -> m)", "G-MM s",
                          "KMeans s", "time ratio KMeans / G-MM",
                          "G-MM SSE", "KMeans SSE", "rel", "worst seed",
                          "seed wins / ties / losses"], rows)
        + "\n\n## Sets\n\nOutliers: uniform on the set's bounding box widened by 10 % on "
        "each side, added to the points (k unchanged).\n\n" + set_tab)
    write_results(args.name, "G-MM defaults vs k-means++ restarts at equal time: a sweep "
                  "over many sets", body)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2,
                    help="G-MM warm-up fits per cell (twice as many KMeans(n_init=1) fits)")
    ap.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    ap.add_argument("--seeds-for", default="gmm200:3",
                    help="fewer seeds for slow sets: name:seeds,... (default gmm200:3)")
    ap.add_argument("--data-home", default=None, help="folder holding sipu/ (R15, D31)")
    ap.add_argument("--resume", action="store_true", help="keep cells already in the json")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--name", default="sweep", help="bench/results/NAME.md")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the sets and exit")
    args = ap.parse_args()
    args.no_data = False
    out = Path(args.out)
    sets = build_sets(_data_home(args.data_home))
    if args.list:
        for name, (desc, gen, k) in sets.items():
            X = gen()
            print(f"{name:24s} n={X.shape[0]:6d} d={X.shape[1]:3d} k={k:4d}  {desc}")
        return
    names = [s for s in args.sets.split(",") if s] or list(sets)
    few = {kv.split(":")[0]: int(kv.split(":")[1]) for kv in args.seeds_for.split(",") if kv}
    records = json.loads(out.read_text()) if (args.resume or args.report_only) and out.exists() \
        else {}
    if not args.report_only:
        import datetime
        import subprocess
        import sys
        import os
        out.parent.mkdir(parents=True, exist_ok=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        records.setdefault("_runs", []).append(dict(
            command="python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
            date=datetime.datetime.now().isoformat(timespec="seconds"), commit=commit))
        with threadpool_limits(limits=1):
            for name in names:
                desc, gen, k0 = sets[name]
                X = np.ascontiguousarray(gen(), dtype=np.float64)
                for k in (k0, 3 * k0):
                    key = f"{name}|{k}"
                    if key in records:
                        continue
                    t0 = time.perf_counter()
                    rec = run_cell(X, k, few.get(name, args.seeds), args.warmup)
                    rec.update(set=name, n=int(X.shape[0]), d=int(X.shape[1]), k=k,
                               cell_s=time.perf_counter() - t0)
                    records[key] = rec
                    out.write_text(json.dumps(records, indent=1))
                    g = np.mean([s["gmm_sse"] for s in rec["seeds"]])
                    km = np.mean([s["km_sse"] for s in rec["seeds"]])
                    print(f"{name:24s} k={k:4d} m={rec['m']:3d} rel={(g - km) / km:+.2e} "
                          f"({rec['cell_s']:.1f} s)", flush=True)
    report(records, args)


if __name__ == "__main__":
    main()
