"""``gmmfast scene-compare``: CCP against G-MM (random, Potts-biased) on scenes, Table 3 layout.

Trains the region-part model (:class:`gmmfast.lssvm.RegionPartModel`) on the
synthetic scenes from random part labels (several seeds) and from coherent
labels (parts by k-means, images labelled by alpha-expansion with Potts weight
lambda); prints test accuracy and training objective per method and
initialisation, the iteration counts (Table 4's scene rows) and, optionally,
writes pictures of part labelings before and after training.
"""
from __future__ import annotations

import inspect
import os
import time

from .._validation import check_real
from ..experiments.table3 import (LABELS, LAM, METHODS, NAMED_INITS, compare, figure_path,
                                  init_name, lam_floor, scenes, tables)
from .._atomic import atomic_path
from ._args import fail, nonnegative_int, writing
from ._experiment import (DeprecatedAlias, add_experiment_parser, add_run_options,
                          check_args, check_at_least, check_lam_floor, check_outputs,
                          resolve_quick)
from ._report import report, settings

CMD = "scene-compare"
#: Options whose default --quick changes: (default, default with --quick).
DEFAULTS = {"seeds": (5, 2), "max_iter": (200, 5), "n_train": (300, 60), "n_test": (300, 60)}


def add_parser(sub) -> None:
    from ..datasets import make_texture_scenes
    noise = inspect.signature(make_texture_scenes).parameters["noise"].default
    p = add_experiment_parser(sub, CMD, METHODS,
                              help="region-part scene model by CCP vs G-MM (Table 3 layout)")
    p.add_argument("--inits", default=None,
                   help="comma-separated: 'random', 'truth' (the true parts) and/or "
                        "Potts weights lambda of the coherent initialisation (default "
                        "random,0,0.25,0.5,1; random,0.5 with --quick)")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds of the random initialisation and of G-MM random's bounds "
                        "(default: 5; 2 with --quick)")
    p.add_argument("--eta", type=float, default=0.1, help="G-MM progress coefficient")
    p.add_argument("--lam", type=float, default=None,
                   help="LS-SVM lambda (default: 10, the oracle's best by validation on "
                        "the default scenes)")
    p.add_argument("--noise", type=float, default=None,
                   help=f"pixel noise of the generator (default: {noise}, "
                        "make_texture_scenes' default)")
    p.add_argument("--positions", type=float, default=0.0,
                   help="scale of the one-hot region positions appended to every region's "
                        "features (default 0: none): a score per (class, region, part)")
    p.add_argument("--max-iter", type=int, default=None,
                   help="G-MM iterations at most (default: 200; 5 with --quick)")
    p.add_argument("--tol", type=float, default=1e-3, help="G-MM stopping gap (relative)")
    p.add_argument("--solver-tol", type=float, default=1e-3,
                   help="duality gap of each bound minimisation, relative to F(0) "
                        "(default 1e-3, the calibration's)")
    p.add_argument("--solver-max-iter", type=int, default=1000,
                   help="cutting planes per bound minimisation")
    p.add_argument("--cp-tol", dest="solver_tol", type=float, action=DeprecatedAlias,
                   help="deprecated name of --solver-tol")
    p.add_argument("--cp-max-iter", dest="solver_max_iter", type=int, action=DeprecatedAlias,
                   help="deprecated name of --solver-max-iter")
    p.add_argument("--n-train", type=int, default=None,
                   help="training scenes (default: 300; 60 with --quick)")
    p.add_argument("--n-test", type=int, default=None,
                   help="test scenes (default: 300; 60 with --quick)")
    p.add_argument("--data-seed", type=nonnegative_int, default=0)
    add_run_options(
        p, figure="write pictures of part labelings here (one PNG per init; '{init}' in the "
                  "name is replaced)",
        oracle="skip the oracle row (the true part labels held fixed)",
        quick="a tiny smoke-test version (60 + 60 images, 6 x 6 grid, 2 seeds, 5 iterations, "
              "inits random and 0.5, lambda 10; the options given are kept)")
    p.set_defaults(func=run)


def parse_inits(text: str) -> list:
    out = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if tok in NAMED_INITS:
            out.append(tok)
            continue
        try:
            weight = float(tok)
        except ValueError:
            fail(CMD, f"--inits: {tok!r} is not 'random', 'truth' or a Potts weight")
        try:            # the Potts weights coherent_labels accepts
            out.append(check_real(weight, "--inits: a Potts weight", 0.0))
        except ValueError as exc:
            fail(CMD, str(exc).rstrip("."))
    return out


def run(args) -> int:
    from ..experiments.table3 import oracle, plot_labelings
    resolve_quick(args, DEFAULTS)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    check_args(args, CMD, methods, METHODS)
    inits = parse_inits(args.inits if args.inits is not None else
                        "random,0.5" if args.quick else "random,0,0.25,0.5,1")
    if not inits:
        fail(CMD, "--inits: give at least one initialisation")
    check_at_least(args, CMD, (("seeds", 1), ("solver_max_iter", 1), ("n_train", 2),
                               ("n_test", 1)))
    for name in ("noise", "positions"):
        value = getattr(args, name)
        if value is not None and not 0 <= value < float("inf"):
            fail(CMD, f"--{name} must be a finite number >= 0, got {value}")
    seeds, max_iter, n_train, n_test, grid, lam = (args.seeds, args.max_iter, args.n_train,
                                                   args.n_test, None, args.lam)
    if args.quick:
        grid = (6, 6)
        lam = 10.0 if lam is None else lam
    lam = LAM if lam is None else lam
    figures = check_outputs(CMD, args.out, [figure_path(args.figure, init_name(init))
                                            for init in inits] if args.figure else [])
    solver_tol = args.solver_tol
    started = time.perf_counter()
    generator = {k: v for k, v in (("noise", args.noise), ("grid", grid)) if v is not None}
    gen, D = scenes(n_train, n_test, args.data_seed, generator, args.positions)  # once
    tols = [("--solver-tol", solver_tol)]
    if args.oracle:                 # the oracle is trained at its own solver tolerance
        tols.append(("the oracle's solver tolerance (or --no-oracle)",
                     inspect.signature(oracle).parameters["solver_tol"].default))
    check_lam_floor(CMD, [("--lam", lam)], lambda tol: lam_floor(D, tol), tols)
    D, results, gen, lam = compare(methods, inits, n_seeds=seeds, eta=args.eta, lam=lam,
                                   max_iter=max_iter, tol=args.tol, solver_tol=solver_tol,
                                   solver_max_iter=args.solver_max_iter,
                                   n_train=n_train, n_test=n_test, data_seed=args.data_seed,
                                   generator=generator, positions=args.positions,
                                   jobs=args.jobs, data=(gen, D))
    orc = oracle(D, lam) if args.oracle else None
    text = tables(D, results, methods, inits, orc)
    head = (f"{n_train} training + {n_test} test scenes (make_texture_scenes {gen}), "
            f"RegionPartModel({D.n_classes}, {D.n_parts}, {D.grid}, shared_parts=False); " +
            settings([("lambda", lam), ("eta", args.eta), ("tol", args.tol),
                      ("solver_tol", solver_tol), ("max_iter", max_iter)]))
    with writing(CMD):
        report(head, started, text, args.out)
    for init, path in zip(inits, figures):
        with writing(CMD), atomic_path(path) as tmp:
            plot_labelings(D, results, methods, init_name(init), tmp, labels=LABELS)
        print(f"figure written to {os.path.abspath(path)}")
    return 0

