"""(Superseded by bench/scenes_calibration.py: Table 3 now runs on make_texture_scenes, which
load_scenes draws; bench/results/scenes_oracle.md records the earlier make_scenes substitute.)

Fix the scene generator and lambda by the oracle check, before any training method is compared.

Question: can the region-part model learn the synthetic scenes at all when the
part labels are known, and with which regularisation lambda? Only the oracle
(and, for information, the first bound common to every method) is looked at,
never CCP or G-MM.

Rule, written before running:

- Data: ``make_scenes`` with its defaults (5 classes, 12 shared parts,
  d = 16, 10 x 10 grid, 4 part regions per class, noise 1.5, layout jitter 1,
  part swap 0.1), one draw of 600 images (seed 0): images 0-299 train,
  300-599 test. Model: ``RegionPartModel(5, 12, (10, 10))``, 0-1 loss.
- Oracle: the LS-SVM trained by the cutting plane (duality gap 1e-4, at most
  5000 planes) with the true part labels held fixed.
- lambda: among {0.3, 1, 3, 10}, the one with the highest oracle accuracy by
  5-fold cross-validation on the training images (ties within 1 point: the
  larger lambda); a lambda whose oracle solve does not converge within the
  5000 planes is not eligible.
- Admissible if the oracle's test accuracy at that lambda is at least chance
  + 20 points (40 %) and at most 98 %. If not, ``noise`` is multiplied by 1.5
  (too easy) or divided by 1.5 (too hard), once, and lambda chosen again.

Supplementary setting (added after the first run of this script; see below):
noise = 3.0, everything else as above, lambda chosen by the same rule, same
admissibility range (no further change if it fails: it is then reported as
inadmissible and not used).

Reported for information, not used: the first bound of every initialisation
of the experiment (random labels, seeds 0-4; the coherent labels with Potts
weight 0, 0.25, 0.5, 1): F(w_1) after minimising it from w_0 = 0 (F(0) = 1),
|w_1| and the test accuracy of w_1. If w_1 = 0 the gap d_1 is 0 and
Algorithm 1 stops at t = 1 for every method.

Why the supplementary setting. The first run of this script (main setting
only) chose the defaults and lambda = 10, and its first-bound table showed
the coherent initialisations already at the oracle's test accuracy: k-means
recovers the parts from single regions (oracle part accuracy 87 %), so no
choice of bounds can improve on the initial labels. Four trial runs from the
lambda = 0.5 labels (CCP, G-MM random walk/subset, G-MM biased: 93.3-93.7 %
against the oracle's 94.0 %) confirmed it. The main setting is kept as the
experiment's Table 3. The supplementary setting was then declared, once and
before any method ran on it, with a reason fixed a priori: doubling the
feature noise makes a single region's part ambiguous (the distance between
two prototypes, about sqrt(2 d) = 5.7, against noise 3 per coordinate), the
regime in which coherent labelings should carry the class signal. It is
reported beside the main table, whatever it shows.

Run: python bench/scenes_oracle.py   (a few minutes on 2 cores)
"""
from __future__ import annotations

import time

import numpy as np

from _common import markdown_table, write_results
from gmmfast.lssvm import LatentSSVM
from gmmfast.experiments.table3 import (
    INIT_LAMBDAS, SCENES_DEFAULTS, first_bound, init_name, initial_labels, load_scenes, oracle)

LAMS = [0.3, 1.0, 3.0, 10.0]
N_FOLDS = 5
CP_MAX = 5000


def cv_oracle(D, lam):
    """5-fold CV accuracy of the oracle on the training images."""
    n = D.y_train.shape[0]
    perm = np.random.default_rng(0).permutation(n)
    accs, conv = [], True
    for k in range(N_FOLDS):
        te = np.sort(perm[k::N_FOLDS])
        tr = np.setdiff1d(np.arange(n), te)
        est = LatentSSVM(D.model(), lam=lam, method="ccp", max_iter=1, solver_tol=1e-4,
                         solver_max_iter=CP_MAX)
        est.fit(D.X_train[tr], D.y_train[tr], latent_init=D.Z_train[tr])
        conv &= bool(est.solve_info_[0].converged)
        accs.append(est.score(D.X_train[te], D.y_train[te]))
    return float(np.mean(accs)), float(np.std(accs)), conv


SUPPLEMENTARY_NOISE = 3.0


def screen(noise_factor: float, rows: list, base: float = SCENES_DEFAULTS["noise"]) -> tuple:
    D = load_scenes(0, noise=base * noise_factor)
    cv = {}
    for lam in LAMS:
        t = time.perf_counter()
        acc, sd, conv = cv_oracle(D, lam)
        cv[lam] = (acc, conv)
        o = oracle(D, lam, solver_max_iter=CP_MAX)
        rows.append([D.params["noise"], lam, f"{100 * acc:.1f} ± {100 * sd:.1f}",
                     "yes" if conv else "no", f"{100 * o['accuracy']:.1f}",
                     f"{100 * o['parts']:.1f}", f"{o['objective']:.4f}", o["cp_iters"],
                     f"{time.perf_counter() - t:.0f}"])
        print(rows[-1], flush=True)
    eligible = [lam for lam in LAMS if cv[lam][1]]
    best_acc = max(cv[lam][0] for lam in eligible)
    lam = max(lam for lam in eligible if cv[lam][0] >= best_acc - 0.01)
    return D, lam


def setting(base_noise: float, title: str) -> tuple:
    """The oracle screen, the rule's choice and the first-bound table of one setting."""
    rows = []
    D, lam = screen(1.0, rows, base_noise)
    o = oracle(D, lam, solver_max_iter=CP_MAX)
    chance = 1.0 / D.n_classes
    change = None
    if o["accuracy"] > 0.98:
        change = 1.5
    elif o["accuracy"] < chance + 0.20:
        change = 1 / 1.5
    if base_noise != SCENES_DEFAULTS["noise"]:
        change = None            # the supplementary setting is never changed
    if change is not None:
        D, lam = screen(change, rows, base_noise)
        o = oracle(D, lam, solver_max_iter=CP_MAX)
    admissible = chance + 0.20 <= o["accuracy"] <= 0.98
    fb_rows = []
    inits = [("random", s) for s in range(5)] + [(lam_p, 0) for lam_p in INIT_LAMBDAS]
    for init, seed in inits:
        z0 = initial_labels(D, init, seed)
        r = first_bound(D, lam, z0, solver_max_iter=CP_MAX)
        fb_rows.append([init_name(init) + (f" (seed {seed})" if init == "random" else ""),
                        f"{r['objective']:.4f}", f"{r['norm']:.3g}",
                        f"{100 * r['accuracy']:.1f}", "yes" if r["converged"] else "no",
                        r["cp_iters"], f"{r['seconds']:.1f}"])
        print(fb_rows[-1], flush=True)
    body = [
        f"## {title}",
        "",
        markdown_table(["noise", "lambda", "oracle CV accuracy % (train, 5 folds)",
                        "converged in every fold", "oracle test accuracy %",
                        "oracle test parts %", "training objective", "cutting planes",
                        "seconds"], rows),
        "",
        f"Chosen: noise = {D.params['noise']}, lambda = {lam}. Oracle test accuracy "
        f"{100 * o['accuracy']:.1f} % (chance {100 * chance:.0f} %), admissible range "
        f"[{100 * (chance + 0.2):.0f}, 98] %: {'admissible' if admissible else 'NOT admissible'}"
        f"{'' if change is None else ' (noise changed once by the rule)'}.",
        "",
        "First bound of each initialisation (information only): F(w_1) after minimising the "
        "bound of the initial labels from w_0 = 0 (F(0) = 1), its norm and test accuracy. "
        "Parts for the coherent initialisations: k-means (Lloyd from k-means++, seed 0) on the "
        "30000 training regions.",
        "",
        markdown_table(["initial labels", "F(w_1)", "|w_1|", "test accuracy of w_1 %",
                        "converged", "cutting planes", "seconds"], fb_rows),
    ]
    return body, D, lam


def main() -> None:
    t0 = time.perf_counter()
    body = ["Oracle check of `make_scenes` (the docstring of bench/scenes_oracle.py has the "
            "rule, written before running, and why a supplementary setting was added). Oracle = "
            "the LS-SVM trained by the cutting plane with the true part labels held fixed; "
            "`parts %` = test regions whose predicted part is the true one. Only the oracle and "
            "the first bound are looked at, never CCP or G-MM.", ""]
    b, _, _ = setting(SCENES_DEFAULTS["noise"], "Main setting: make_scenes' defaults")
    body += b + [""]
    b, _, _ = setting(SUPPLEMENTARY_NOISE, f"Supplementary setting: noise = "
                      f"{SUPPLEMENTARY_NOISE} (declared after the main setting's first run)")
    body += b + ["", f"Total time {time.perf_counter() - t0:.0f} s."]
    write_results("scenes_oracle", "Scene experiment: the oracle check of the generator",
                  "\n".join(body))


if __name__ == "__main__":
    main()
