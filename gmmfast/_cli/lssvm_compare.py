"""``gmmfast lssvm-compare``: CCP against G-MM (random, biased) for latent SVMs, Table 2 layout.

Cross-validated training of the latent-location model on cluttered digits
(the stand-in for the paper's mammals), from the initialisations "center",
"top-left" and "random"; prints the training objective and test error
(mean +- std over folds), the fraction of latent values changed by training,
and optionally writes the Figure 4 picture.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional, Sequence

import numpy as np

from ._jobs import report, run_jobs

#: Method labels of the command: (LatentSSVM method, random_bounds).
METHODS = {"ccp": ("ccp", "walk"), "gmm-random": ("gmm-random", "walk"),
           "gmm-random-subset": ("gmm-random", "subset"), "gmm-biased": ("gmm-biased", "walk")}
LABELS = {"ccp": "CCP", "gmm-random": "G-MM random (walk)",
          "gmm-random-subset": "G-MM random (subset S_t, paper)", "gmm-biased": "G-MM biased"}
INITS = ("center", "top-left", "random")


def add_parser(sub) -> None:
    p = sub.add_parser("lssvm-compare",
                       help="latent SVMs by CCP vs G-MM on cluttered digits (Table 2 layout)")
    p.add_argument("--methods", default="ccp,gmm-random,gmm-random-subset,gmm-biased",
                   help=f"comma-separated, from {','.join(METHODS)}")
    p.add_argument("--inits", default="center,top-left,random",
                   help=f"comma-separated, from {','.join(INITS)}")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    p.add_argument("--eta", type=float, default=0.1, help="G-MM progress coefficient")
    p.add_argument("--lam", type=float, default=None, help="lambda (default: the oracle's)")
    p.add_argument("--bias-folds", type=int, default=10, help="K of the multi-fold bias")
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-3, help="G-MM stopping gap (relative)")
    p.add_argument("--cp-tol", type=float, default=1e-4, help="cutting-plane duality gap")
    p.add_argument("--n-samples", type=int, default=None,
                   help="images (default: all 1083 digits 0-5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--out", default=None, help="write the tables to this markdown file")
    p.add_argument("--figure", default=None,
                   help="write Figure 4 (latent locations after training, top-left init) here")
    p.add_argument("--no-oracle", dest="oracle", action="store_false",
                   help="skip the oracle row (a model trained with the true windows fixed)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny smoke-test version (120 images, 2 folds, 5 iterations)")
    p.set_defaults(func=run)


def _one(job):
    """Worker: one (method, init, fold) run, single-threaded kernels."""
    from threadpoolctl import threadpool_limits
    from ..datasets import make_cluttered_digits
    from ..lssvm.experiment import run_fold
    (key, init, k, gen, folds, kw) = job
    method, rb = METHODS[key]
    with threadpool_limits(limits=1):
        D = make_cluttered_digits(**gen)
        r = run_fold(D, folds, k, method, init, random_bounds=rb, keep_latent=True, **kw)
    r.method = key
    return r


def compare(methods: Sequence[str], inits: Sequence[str], *, n_folds: int = 5,
            eta: float = 0.1, lam: Optional[float] = None, bias_folds: int = 10,
            max_iter: int = 100, tol: float = 1e-3, cp_tol: float = 1e-4,
            n_samples: Optional[int] = None, seed: int = 0, jobs: int = 1,
            progress: bool = True) -> tuple:
    """Run every (method, init, fold); returns (data, results, generator parameters, lam)."""
    from ..datasets import make_cluttered_digits
    from ..lssvm.experiment import DIGITS_DEFAULTS, LAM, cv_folds
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; choose from {list(METHODS)}")
    for i in inits:
        if i not in INITS:
            raise ValueError(f"unknown init {i!r}; choose from {list(INITS)}")
    lam = LAM if lam is None else lam
    gen = dict(DIGITS_DEFAULTS, n_samples=n_samples, random_state=seed)
    D = make_cluttered_digits(**gen)
    folds = cv_folds(len(D.target), n_folds, seed)
    kw = dict(lam=lam, eta=eta, n_folds_bias=bias_folds, tol=tol, max_iter=max_iter,
              cp_tol=cp_tol, seed=seed)
    jobs_list = [(m, i, k, gen, folds, kw) for i in inits for m in methods
                 for k in range(n_folds)]
    def describe(r):
        return (f"{r.init:>8} {LABELS[r.method]:<32} fold {r.fold + 1}: F = {r.objective:.4f}, "
                f"test error {100 * r.test_error:.1f} %, {r.n_iter} it, {r.seconds:.1f} s")

    results = run_jobs(_one, jobs_list, jobs, describe if progress else None)
    return D, results, gen, lam


def oracle(D, n_folds: int, lam: float, seed: int = 0, cp_tol: float = 1e-4) -> List[dict]:
    """The oracle of each fold: trained with the true windows held fixed."""
    from ..lssvm.experiment import cv_folds, oracle_fold
    folds = cv_folds(len(D.target), n_folds, seed)
    return [oracle_fold(D, folds, k, lam, cp_tol) for k in range(n_folds)]


def tables(D, results, methods: Sequence[str], inits: Sequence[str],
           oracle_results: Optional[List[dict]] = None) -> str:
    """Markdown: Table 2 (objective, test error) and the supporting figures per run."""
    from ..lssvm.experiment import summarize
    rows = summarize(results, methods, inits)
    for row, m in zip(rows, methods):
        row[0] = LABELS[m]
    if oracle_results:
        obj = np.array([o["objective"] for o in oracle_results])
        err = 100 * np.array([o["error"] for o in oracle_results])
        cell = [f"{obj.mean():.3f} ± {obj.std():.3f}", f"{err.mean():.1f} ± {err.std():.1f}"]
        rows.append(["oracle (true windows fixed)"] + cell * len(inits))
    head = ["method"] + [f"{i} {what}" for i in inits for what in ("objective", "test error %")]
    out = [_md(head, rows), ""]
    extra = []
    for m in methods:
        for i in inits:
            rs = [r for r in results if r.method == m and r.init == i]
            if not rs:
                continue
            a = lambda f: np.array([f(r) for r in rs], dtype=float)  # noqa: E731
            extra.append([LABELS[m], i,
                          f"{100 * a(lambda r: r.changed).mean():.1f}",
                          f"{100 * a(lambda r: r.train_loc).mean():.1f}",
                          f"{100 * a(lambda r: r.test_loc).mean():.1f}",
                          f"{a(lambda r: r.n_iter).mean():.1f}",
                          f"{a(lambda r: r.seconds).mean():.1f}",
                          sum(len(r.invariant_violations) for r in rs)])
    out.append(_md(["method", "init", "latent changed %", "train windows = truth %",
                    "test windows = truth %", "iterations", "s / fit",
                    "invariant violations"], extra))
    if "ccp" in methods:
        paired = []
        for m in methods:
            if m == "ccp":
                continue
            for i in inits:
                base = {r.fold: r for r in results if r.method == "ccp" and r.init == i}
                rs = [r for r in results if r.method == m and r.init == i and r.fold in base]
                if not rs:
                    continue
                dF = np.array([r.objective - base[r.fold].objective for r in rs])
                dE = 100 * np.array([r.test_error - base[r.fold].test_error for r in rs])
                paired.append([LABELS[m], i, f"{dF.mean():+.4f} ± {dF.std():.4f}",
                               f"{int((dF < 0).sum())}/{len(rs)}",
                               f"{dE.mean():+.1f} ± {dE.std():.1f}",
                               f"{int((dE < 0).sum())}/{int((dE > 0).sum())}/{len(rs)}"])
        if paired:
            out += ["", "Paired with CCP on the same fold and initial latent values "
                    "(difference = method - CCP; negative is better):", "",
                    _md(["method", "init", "objective difference",
                         "folds with lower objective", "test error difference (points)",
                         "folds better/worse/all"], paired)]
    return "\n".join(out)


def fold_csv(results) -> str:
    """Every run as one CSV line (method, init, fold and the measured figures)."""
    cols = ["method", "init", "fold", "objective", "test_error", "test_loc", "train_loc",
            "changed", "n_iter", "seconds", "cp_iters"]
    lines = [",".join(cols)]
    for r in sorted(results, key=lambda r: (r.init, r.method, r.fold)):
        lines.append(",".join(str(getattr(r, c)) for c in cols))
    return "\n".join(lines) + "\n"


def _md(header, rows) -> str:
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def run(args) -> int:
    from ..lssvm.experiment import plot_latent_changes
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    inits = [i.strip() for i in args.inits.split(",") if i.strip()]
    n_folds, max_iter, n_samples = args.folds, args.max_iter, args.n_samples
    if args.quick:
        n_folds, max_iter, n_samples = 2, 5, 120
    t = time.perf_counter()
    D, results, gen, lam = compare(methods, inits, n_folds=n_folds, eta=args.eta, lam=args.lam,
                                   bias_folds=args.bias_folds, max_iter=max_iter, tol=args.tol,
                                   cp_tol=args.cp_tol, n_samples=n_samples, seed=args.seed,
                                   jobs=args.jobs)
    orc = oracle(D, n_folds, lam, args.seed, args.cp_tol) if args.oracle else None
    text = tables(D, results, methods, inits, orc)
    head = (f"{len(D.target)} cluttered digits ({len(D.classes)} classes, {D.data.shape[1]} "
            f"windows, d = {D.data.shape[2]}), {n_folds}-fold CV, lambda = {lam}, eta = "
            f"{args.eta}, K = {args.bias_folds}, tol = {args.tol}, cp_tol = {args.cp_tol}, "
            f"max_iter = {max_iter}; {time.perf_counter() - t:.0f} s")
    report(head, text, args.out)
    if args.figure:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("--figure needs matplotlib: pip install 'gmmfast[plot]'", file=sys.stderr)
            return 1
        init = "top-left" if "top-left" in inits else inits[0]
        plot_latent_changes(D, results, methods, init, args.figure, labels=LABELS)
        print(f"figure written to {os.path.abspath(args.figure)}")
    return 0
