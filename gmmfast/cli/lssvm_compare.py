"""``gmmfast lssvm-compare``: CCP against G-MM (random, biased) for latent SVMs, Table 2 layout.

Cross-validated training of the latent-location model on cluttered objects
(digits among clutter with HOG-like window features, the stand-in for the
paper's mammals), from the initialisations "center",
"top-left" and "random"; prints the training objective and test error
(mean +- std over folds), the fraction of latent values changed by training,
and optionally writes the Figure 4 picture.
"""
from __future__ import annotations

import os
import time

from ..experiments.table2 import (INITS, LABELS, LAM, METHODS, compare, lam_floor, objects,
                                  oracle, tables)
from .._atomic import atomic_path
from ._args import fail, nonnegative_int, writing
from ._experiment import (DeprecatedAlias, add_experiment_parser, add_run_options,
                          check_args, check_at_least, check_lam_floor, check_outputs,
                          resolve_quick)
from ._report import report, settings

CMD = "lssvm-compare"
#: Options whose default --quick changes: (default, default with --quick); None: the data
#: generator's (50 images per class).
DEFAULTS = {"folds": (5, 2), "max_iter": (100, 5), "n_per_class": (None, 10)}


def add_parser(sub) -> None:
    p = add_experiment_parser(sub, CMD, METHODS,
                              help="latent SVMs by CCP vs G-MM on cluttered objects "
                                   "(Table 2 layout)")
    p.add_argument("--inits", default="center,top-left,random",
                   help=f"comma-separated, from {','.join(INITS)}")
    p.add_argument("--folds", type=int, default=None,
                   help="cross-validation folds (default: 5; 2 with --quick)")
    p.add_argument("--eta", type=float, default=0.1, help="G-MM progress coefficient")
    p.add_argument("--lam", type=float, default=None,
                   help="lambda (default: the one chosen by the calibration's validation)")
    p.add_argument("--lams", default=None,
                   help="comma-separated lambdas: choose one per run by validation on a fifth "
                        "of its training folds (instead of --lam)")
    p.add_argument("--bias-folds", type=int, default=10, help="K of the multi-fold bias")
    p.add_argument("--max-iter", type=int, default=None,
                   help="G-MM iterations at most (default: 100; 5 with --quick)")
    p.add_argument("--tol", type=float, default=1e-3, help="G-MM stopping gap (relative)")
    p.add_argument("--solver-tol", type=float, default=1e-4,
                   help="duality gap of each bound minimisation (relative to F(0))")
    p.add_argument("--cp-tol", dest="solver_tol", type=float, action=DeprecatedAlias,
                   help="deprecated name of --solver-tol")
    p.add_argument("--n-per-class", type=int, default=None,
                   help="images per class (default: 50, 300 in all; 10 with --quick)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    add_run_options(
        p, figure="write Figure 4 (latent locations after training, top-left init) here",
        oracle="skip the oracle row (a model trained with the true windows fixed)",
        quick="a tiny smoke-test version (60 images, 2 folds, 5 iterations, unless given); "
              "with so few "
              "images in d = 576 any windows separate the training set, so every run stops "
              "at t = 1 (FirstBoundWarning): it checks the plumbing, not the methods")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..experiments.table2 import plot_latent_changes
    resolve_quick(args, DEFAULTS)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    inits = [i.strip() for i in args.inits.split(",") if i.strip()]
    check_args(args, CMD, methods, METHODS, inits, INITS)
    check_at_least(args, CMD, (("bias_folds", 2), ("n_per_class", 1), ("folds", 2)))
    lams = None
    if args.lams is not None:
        if args.lam is not None:
            fail(CMD, "pass --lam or --lams, not both")
        try:
            lams = [float(v) for v in args.lams.split(",") if v.strip()]
        except ValueError:
            lams = []
        if not lams or not all(0 < v < float("inf") for v in lams):
            fail(CMD, f"--lams must be comma-separated finite numbers > 0, got {args.lams!r}")
    init = "top-left" if "top-left" in inits else inits[0]      # the init Figure 4 shows
    figure = check_outputs(CMD, args.out, [args.figure] if args.figure else [])
    n_folds, max_iter, n_per_class = args.folds, args.max_iter, args.n_per_class
    started = time.perf_counter()
    try:
        gen, D = objects(n_per_class, args.seed)    # drawn once: compare gets them
    except ValueError as exc:                       # only n_per_class is the user's
        fail(CMD, f"--n-per-class: {str(exc).rstrip('.')}")
    if n_folds > len(D.target):
        fail(CMD, f"--folds must be at most the {len(D.target)} images ({gen['n_per_class']} "
                  f"per class, --n-per-class, x {len(D.classes)} classes), got {n_folds}")
    if lams:
        trained = [("--lams", v) for v in lams]
        if args.oracle:                             # the oracle is trained at LAM
            trained.append(("the oracle's lambda (the default --lam; or --no-oracle)", LAM))
    else:
        trained = [("--lam", LAM if args.lam is None else args.lam)]
    check_lam_floor(CMD, trained, lambda tol: lam_floor(D, tol),
                    [("--solver-tol", args.solver_tol)])
    D, results, gen, lam = compare(methods, inits, n_folds=n_folds, eta=args.eta, lam=args.lam,
                                   lams=lams, bias_folds=args.bias_folds, max_iter=max_iter,
                                   tol=args.tol,
                                   solver_tol=args.solver_tol, n_per_class=n_per_class,
                                   seed=args.seed, jobs=args.jobs, data=(gen, D))
    orc = (oracle(D, n_folds, LAM if lams else lam, args.seed, args.solver_tol)
           if args.oracle else None)
    text = tables(D, results, methods, inits, orc)
    head = (f"{len(D.target)} cluttered objects ({len(D.classes)} classes, {D.data.shape[1]} "
            f"windows, d = {D.data.shape[2]}), {n_folds}-fold CV, " +
            settings([("lambda", f"{'chosen per run by validation from ' if lams else ''}{lam}"),
                      ("eta", args.eta), ("K", args.bias_folds), ("tol", args.tol),
                      ("solver_tol", args.solver_tol), ("max_iter", max_iter)]))
    with writing(CMD):
        report(head, started, text, args.out)
    for path in figure:
        with writing(CMD), atomic_path(path) as tmp:
            plot_latent_changes(D, results, methods, init, tmp, labels=LABELS)
        print(f"figure written to {os.path.abspath(path)}")
    return 0

