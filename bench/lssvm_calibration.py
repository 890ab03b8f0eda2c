"""Calibrate make_cluttered_objects (the Table 2 substitute) by the oracle and CCP's stickiness.

Question: which clutter settings give a latent-location problem like the
paper's mammals, before any G-MM method is run on it? Looked at, per setting,
and nothing else:

1. lambda by validation: the oracle (the model trained with the *true*
   windows held fixed) by 5-fold cross-validation (the experiment's folds) for
   lambda in {0.1, 0.03, 0.01, 0.003, 0.001}; the lambda of lowest mean test
   error is chosen (ties within 1 point: the larger);
2. at that lambda: the first bound from random windows (F(w_1) against
   F(0) = 1, and its test error), CCP from random windows (test error) and CCP
   from the top-left windows (the fraction of windows it changes: stickiness),
   in each of the 5 folds.

Fixed a priori: 6 classes x 50 images, 32-pixel objects on 56-pixel canvases
(L = 49 windows one 4-pixel cell apart, d = 8 x 8 cells x 9 orientations =
576 > 240 training images per fold), spread 1.5 grid steps, fragments of 4
digit pixels at full intensity, noise 0.05; CCP with tol = 1e-3, at most 100
iterations, bounds minimised by DCD to a duality gap of 1e-4 F(0).
Screened: the background contrast (0.25, 0.5, 1.0) and the number of
distractor fragments (2, 4, 8).

Rule, fixed before running: a setting is admissible if the oracle's error is
<= 15 %, the first bound from random windows lowers F (F(w_1) < F(0)) in
every fold, CCP from random windows reaches a mean test error <= 60 % (chance:
83.3 %), and CCP from top-left changes < 20 % of the windows (mean over
folds). Among admissible settings take the most cluttered (most fragments,
then the highest background contrast). If none is admissible, take the one
closest to it (the lowest CCP top-left change among those meeting the other
three conditions) and say so.

Run: python bench/lssvm_calibration.py [--jobs 2]   (about an hour on 2 cores)
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from _common import markdown_table, write_results
from gmmfast.datasets import make_cluttered_objects
from gmmfast.experiments import run_jobs
from gmmfast.experiments.table2 import (cv_folds, first_bound, oracle_fold,
                                        run_fold)

FIXED = dict(n_per_class=50, scale=4, cell=4, canvas_cells=14, spread=1.5, distractor_size=4,
             distractor_intensity=1.0, noise=0.05)
BACKGROUNDS = [0.25, 0.5, 1.0]
DISTRACTORS = [2, 4, 8]
LAMS = [0.1, 0.03, 0.01, 0.003, 0.001]
N_FOLDS = 5
SEED = 0


def calibrate(job):
    from threadpoolctl import threadpool_limits
    background, n_distractors = job
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        D = make_cluttered_objects(random_state=SEED, background=background,
                                   n_distractors=n_distractors, **FIXED)
        folds = cv_folds(len(D.target), N_FOLDS, SEED)
        orc = {lam: [oracle_fold(D, folds, k, lam) for k in range(N_FOLDS)] for lam in LAMS}
        err = {lam: float(np.mean([o["error"] for o in v])) for lam, v in orc.items()}
        best = min(err.values())
        lam = max(lam for lam in LAMS if err[lam] <= best + 0.01)
        fb = [first_bound(D, folds, k, lam, "random") for k in range(N_FOLDS)]
        ccp = {init: [run_fold(D, folds, k, "ccp", init, lam=lam, tol=1e-3, max_iter=100)
                      for k in range(N_FOLDS)] for init in ("random", "top-left")}
    return dict(background=background, n_distractors=n_distractors, err=err, lam=lam,
                loc1=float(np.mean([o["loc1"] for o in orc[lam]])),
                fb_F=[r["objective"] for r in fb], fb_err=float(np.mean([r["error"] for r in fb])),
                rand_err=float(np.mean([r.test_error for r in ccp["random"]])),
                rand_err_std=float(np.std([r.test_error for r in ccp["random"]])),
                tl_changed=float(np.mean([r.changed for r in ccp["top-left"]])),
                tl_err=float(np.mean([r.test_error for r in ccp["top-left"]])),
                rand_changed=float(np.mean([r.changed for r in ccp["random"]])),
                seconds=time.perf_counter() - t0)


def admissible(r) -> dict:
    return dict(oracle=r["err"][r["lam"]] <= 0.15, first=max(r["fb_F"]) < 1.0,
                random=r["rand_err"] <= 0.60, sticky=r["tl_changed"] < 0.20)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    jobs = [(b, k) for k in DISTRACTORS for b in BACKGROUNDS]
    results = run_jobs(calibrate, jobs, args.jobs,
                       lambda r: (f"background {r['background']}, {r['n_distractors']} "
                                  f"fragments: lambda {r['lam']}, {r['seconds']:.0f} s"))
    rows, ok = [], []
    for r in results:
        a = admissible(r)
        if all(a.values()):
            ok.append(r)
        rows.append([r["background"], r["n_distractors"],
                     " / ".join(f"{100 * r['err'][lam]:.1f}" for lam in LAMS), r["lam"],
                     f"{100 * r['loc1']:.1f}",
                     f"{np.mean(r['fb_F']):.3f} (max {max(r['fb_F']):.3f})",
                     f"{100 * r['fb_err']:.1f}",
                     f"{100 * r['rand_err']:.1f} ± {100 * r['rand_err_std']:.1f}",
                     f"{100 * r['rand_changed']:.1f}",
                     f"{100 * r['tl_changed']:.1f}", f"{100 * r['tl_err']:.1f}",
                     "yes" if all(a.values()) else "no (" + ", ".join(
                         k for k, v in a.items() if not v) + ")"])
    if ok:
        chosen = max(ok, key=lambda r: (r["n_distractors"], r["background"]))
        how = "the most cluttered admissible setting"
    else:
        near = [r for r in results if all(v for k, v in admissible(r).items() if k != "sticky")]
        chosen = min(near or results, key=lambda r: r["tl_changed"])
        how = "NO setting is admissible; the closest (lowest CCP top-left change)"
    body = "\n".join([
        "Calibration of `make_cluttered_objects` (the rule is in the docstring of "
        "bench/lssvm_calibration.py, fixed before running; no G-MM method is run here).",
        f"Fixed: `{FIXED}`; 5-fold CV (seed 0), n = 300, chance error 83.3 %. Oracle: the "
        "model trained with the true windows held fixed. First bound: F(w_1) of the random "
        "windows' bound (F(0) = 1). CCP: tol 1e-3, DCD solver, gap 1e-4.",
        "",
        markdown_table(["background", "fragments", "oracle error % for lambda = " +
                        " / ".join(map(str, LAMS)), "chosen lambda",
                        "oracle loc. within 1 step %", "first bound F(w_1), random",
                        "first bound error %, random", "CCP from random: error %",
                        "CCP from random: changed %", "CCP from top-left: changed %",
                        "CCP from top-left: error %", "admissible"], rows),
        "",
        f"Chosen ({how}): background = {chosen['background']}, n_distractors = "
        f"{chosen['n_distractors']}, lambda = {chosen['lam']}.",
        "",
        f"Total time {time.perf_counter() - t0:.0f} s with {args.jobs} processes.",
    ])
    write_results("lssvm_calibration", "LS-SVM substitute: calibration of the cluttered objects "
                  "by the oracle and CCP's stickiness", body)


if __name__ == "__main__":
    main()
