"""Calibrate make_texture_scenes (the Table 3 substitute) by the oracle, before comparing methods.

Question: at which pixel noise are the texture scenes hard enough (the oracle,
trained with the true part labels, below 90 %), with initialisations that
differ in quality and a first bound from random labels that is not minimised
at w = 0? Looked at, per setting, and nothing else (no G-MM method):

1. lambda by validation: the oracle trained on the first two thirds of the
   training images and tested on the rest (images 0-199 and 200-299 of the
   default 300), for lambda in {10, 1} (ties within 1 point: the larger);
2. at that lambda: the oracle trained on all the training images and tested on
   the 300 test images; the first bound (common to every method) of random
   labels (seeds 0, 1), of the same labels with the paper's shared parts (for
   information), and of the coherent labels with Potts weight 0, 0.25, 0.5, 1
   (test accuracy, and the initial labels' agreement with the true parts);
   CCP from random labels (seed 0): test accuracy and the labels it changes;
   CCP from the coherent labels with Potts weight 0.5: test accuracy (its
   stickiness: how much a random start costs CCP).

Fixed a priori: make_texture_scenes' other defaults (5 classes, 12 textures,
10 x 10 regions of 8 pixels, 4 part regions per class, layout jitter 1, part
swap 0.1), one draw of 600 images (seed 0), images 0-299 train; the model
RegionPartModel(5, 12, (10, 10), shared_parts=False) (class-specific parts:
with shared parts the first bound of random labels is minimised at w = 0 for
any data, see RegionPartModel); bounds by the cutting plane to a duality gap
of 1e-3 F(0), at most 3000 planes (1e-4 needed 1300-3000+ planes per bound on
these data, too slow for Table 3's 68 runs). Screened: noise 0.3, 0.5.

Rule, fixed before running: a setting is admissible if the oracle's test
accuracy is in [40, 90) %, the first bound of random labels lowers F
(F(w_1) < F(0)) for both seeds, and the coherent initialisations differ in
quality (their first bounds' test accuracies span at least 3 points, or
their initial labels' part agreements span at least 5 points). Take the
noisiest admissible setting; if none is admissible, the one closest to it
(noting which condition fails). Added with ``--n-bins``/``--n-train`` (after
a scratch screen had found the 64-bin, 100-image setting, see
bench/results/scenes_calibration_d66_n100.md): CCP is sticky if from random
labels it ends at least 1 point below its accuracy from coherent labels
(Potts weight 0.5); reported, and required for admissibility.

Run: python bench/scenes_calibration.py [--jobs 2] [--noises 0.3,0.5] [--n-bins 8]
[--n-train 300] [--tol 1e-3] [--name scenes_calibration]   (about 20 minutes on 2 cores)
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from _common import markdown_table, write_results
from gmmfast.experiments import run_jobs
from gmmfast.experiments.table3 import (INIT_LAMBDAS, SceneData, initial_labels,
                                        load_scenes, part_agreement, run_method)
from gmmfast.lssvm import LatentSSVM, RegionPartModel

NOISES = [0.3, 0.5]
LAMS = [10.0, 1.0]
SOLVER = dict(solver_tol=1e-3, solver_max_iter=3000)


def fit(D: SceneData, lam: float, z0, X=None, y=None, shared=False):
    model = RegionPartModel(D.n_classes, D.n_parts, D.grid, shared_parts=shared)
    est = LatentSSVM(model, lam=lam, max_iter=1, **SOLVER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(D.X_train if X is None else X, D.y_train if y is None else y, latent_init=z0)
    return est


def calibrate(job: tuple) -> dict:
    from threadpoolctl import threadpool_limits
    noise, n_bins, n_train, tol = job
    t0 = time.perf_counter()
    gen = {} if n_bins is None else {"n_bins": n_bins}
    with threadpool_limits(limits=1):
        D = load_scenes(0, n_train=n_train, noise=noise, **gen)
        m = 2 * n_train // 3
        val = {}
        for lam in LAMS:
            est = fit(D, lam, D.Z_train[:m], D.X_train[:m], D.y_train[:m])
            val[lam] = est.score(D.X_train[m:], D.y_train[m:])
        best = max(val.values())
        lam = max(v for v in LAMS if val[v] >= best - 0.01)
        orc = fit(D, lam, D.Z_train)
        out = dict(noise=noise, val=val, lam=lam, oracle=orc.score(D.X_test, D.y_test),
                   oracle_converged=bool(orc.solve_info_[0].converged))
        fb = []
        for seed in (0, 1):
            z0 = initial_labels(D, "random", seed)
            e = fit(D, lam, z0)
            fb.append((e.objective_, e.score(D.X_test, D.y_test)))
        out["random_fb"] = fb
        shared = fit(D, lam, initial_labels(D, "random", 0), shared=True)
        out["random_fb_shared"] = (shared.objective_, float(np.linalg.norm(shared.coef_)))
        coh = {}
        for lp in INIT_LAMBDAS:
            z0 = initial_labels(D, lp)
            e = fit(D, lam, z0)
            coh[lp] = (e.score(D.X_test, D.y_test), part_agreement(z0, D.Z_train, D.n_parts,
                                                                    D.y_train))
        out["coherent"] = coh
        runs = {}
        for init in ("random", 0.5):
            runs[init] = run_method(D, "ccp", init, initial_labels(D, init, 0), lam=lam, tol=tol,
                                    max_iter=200, **SOLVER)
        r = runs["random"]
        out["ccp_random"] = (r.accuracy, r.changed, r.n_iter)
        out["ccp_coherent"] = runs[0.5].accuracy
    out["seconds"] = time.perf_counter() - t0
    return out


def admissible(r: dict) -> dict:
    acc = [a for a, _ in r["coherent"].values()]
    agree = [g for _, g in r["coherent"].values()]
    return dict(oracle=0.40 <= r["oracle"] < 0.90,
                first=all(F < 1.0 for F, _ in r["random_fb"]),
                coherent=(max(acc) - min(acc) >= 0.03) or (max(agree) - min(agree) >= 0.05),
                sticky=r["ccp_coherent"] - r["ccp_random"][0] >= 0.01)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--noises", default=",".join(map(str, NOISES)),
                    help="comma-separated pixel noises to screen (default: all of NOISES)")
    ap.add_argument("--n-bins", type=int, default=None,
                    help="orientation bins of the region features (default: the generator's, 8)")
    ap.add_argument("--n-train", type=int, default=300,
                    help="training images (the test images stay 300)")
    ap.add_argument("--tol", type=float, default=1e-3,
                    help="CCP's stopping tolerance (d_t <= tol F(w_0))")
    ap.add_argument("--name", default="scenes_calibration", help="results file stem")
    args = ap.parse_args()
    noises = [float(v) for v in args.noises.split(",") if v.strip()]
    t0 = time.perf_counter()
    jobs = [(v, args.n_bins, args.n_train, args.tol) for v in noises]
    results = run_jobs(calibrate, jobs, args.jobs,
                       lambda r: f"noise {r['noise']}: lambda {r['lam']}, {r['seconds']:.0f} s: "
                                 f"{ {k: v for k, v in r.items() if k != 'seconds'} }")
    rows, coh_rows = [], []
    for r in results:
        a = admissible(r)
        rows.append([r["noise"], " / ".join(f"{100 * r['val'][v]:.1f}" for v in LAMS), r["lam"],
                     f"{100 * r['oracle']:.1f}" + ("" if r["oracle_converged"] else
                                                   " (not converged)"),
                     " / ".join(f"{F:.4f}" for F, _ in r["random_fb"]),
                     " / ".join(f"{100 * acc:.1f}" for _, acc in r["random_fb"]),
                     f"{r['random_fb_shared'][0]:.4f} (|w_1| = {r['random_fb_shared'][1]:.3g})",
                     f"{100 * r['ccp_random'][0]:.1f}", f"{100 * r['ccp_random'][1]:.1f}",
                     r["ccp_random"][2], f"{100 * r['ccp_coherent']:.1f}",
                     "yes" if all(a.values()) else "no (" + ", ".join(
                         k for k, v in a.items() if not v) + ")"])
        for lp, (acc, agree) in r["coherent"].items():
            coh_rows.append([r["noise"], lp, f"{100 * agree:.1f}", f"{100 * acc:.1f}"])
    ok = [r for r in results if all(admissible(r).values())]
    if ok:
        chosen, how = max(ok, key=lambda r: r["noise"]), "the noisiest admissible setting"
    else:
        chosen = max(results, key=lambda r: sum(admissible(r).values()))
        how = "NO setting is admissible; the closest"
    body = "\n".join([
        "Calibration of `make_texture_scenes` (the rule is in the docstring of "
        "bench/scenes_calibration.py, fixed before running; no G-MM method is run here). "
        f"{args.n_train + 300} images (seed 0), {args.n_train} train / 300 test, "
        f"{'8' if args.n_bins is None else args.n_bins} orientation bins, chance 20 %; "
        "RegionPartModel(5, 12, (10, 10), shared_parts=False); cutting plane to a gap of "
        f"1e-3 F(0), <= 3000 planes; CCP to tol = {args.tol:g}.",
        "",
        markdown_table(["noise", "oracle validation acc. % for lambda = " +
                        " / ".join(map(str, LAMS)), "chosen lambda", "oracle test acc. %",
                        "first bound F(w_1), random labels (seeds 0 / 1)",
                        "its test acc. %", "same, shared parts: F(w_1)",
                        "CCP from random: acc. %", "CCP from random: labels changed %",
                        "CCP iterations", "CCP from coherent labels (Potts 0.5): acc. %",
                        "admissible"], rows),
        "",
        "Coherent initialisations (parts by k-means per class, alpha-expansion with Potts "
        "weight lambda): agreement of the initial labels with the true parts (best renaming "
        "per class) and the test accuracy of their first bound.",
        "",
        markdown_table(["noise", "Potts weight", "initial labels = truth %",
                        "first bound test acc. %"], coh_rows),
        "",
        f"Chosen ({how}): noise = {chosen['noise']}, lambda = {chosen['lam']}.",
        "",
        f"Total time {time.perf_counter() - t0:.0f} s with {args.jobs} processes.",
    ])
    write_results(args.name, "Scene substitute: calibration of the texture scenes "
                  "by the oracle", body)


if __name__ == "__main__":
    main()
