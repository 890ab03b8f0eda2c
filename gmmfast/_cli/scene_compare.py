"""``gmmfast scene-compare``: CCP against G-MM (random, Potts-biased) on scenes, Table 3 layout.

Trains the region-part model (:class:`gmmfast.lssvm.RegionPartModel`) on the
synthetic scenes from random part labels (several seeds) and from coherent
labels (parts by k-means, images labelled by alpha-expansion with Potts weight
lambda); prints test accuracy and training objective per method and
initialisation, the iteration counts (Table 4's scene rows) and, optionally,
writes pictures of part labelings before and after training.
"""
from __future__ import annotations

import os
import time
from typing import List, Optional, Sequence

import numpy as np

from ._jobs import report, run_jobs

#: Method keys of the command: (LatentSSVM method, random_bounds).
METHODS = {"ccp": ("ccp", "walk"), "gmm-random": ("gmm-random", "walk"),
           "gmm-random-subset": ("gmm-random", "subset"), "gmm-biased": ("gmm-biased", "walk")}
LABELS = {"ccp": "CCP", "gmm-random": "G-MM random (walk)",
          "gmm-random-subset": "G-MM random (subset S_t, paper)",
          "gmm-biased": "G-MM biased (Potts)"}
#: Methods whose runs are repeated over seeds from the coherent initialisations.
RANDOMISED = ("gmm-random", "gmm-random-subset")


def add_parser(sub) -> None:
    p = sub.add_parser("scene-compare",
                       help="region-part scene model by CCP vs G-MM (Table 3 layout)")
    p.add_argument("--methods", default="ccp,gmm-random,gmm-random-subset,gmm-biased",
                   help=f"comma-separated, from {','.join(METHODS)}")
    p.add_argument("--inits", default="random,0,0.25,0.5,1",
                   help="comma-separated: 'random' and/or Potts weights lambda of the "
                        "coherent initialisation")
    p.add_argument("--seeds", type=int, default=5,
                   help="seeds of the random initialisation and of G-MM random's bounds")
    p.add_argument("--eta", type=float, default=0.1, help="G-MM progress coefficient")
    p.add_argument("--lam", type=float, default=None,
                   help="LS-SVM lambda (default: the oracle's, bench/results/scenes_oracle.md)")
    p.add_argument("--noise", type=float, default=None,
                   help="feature noise of the generator (default: make_scenes' default)")
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--tol", type=float, default=1e-3, help="G-MM stopping gap (relative)")
    p.add_argument("--cp-tol", type=float, default=1e-4, help="cutting-plane duality gap")
    p.add_argument("--cp-max-iter", type=int, default=1000, help="cutting planes per bound")
    p.add_argument("--n-train", type=int, default=300)
    p.add_argument("--n-test", type=int, default=300)
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--out", default=None, help="write the tables to this markdown file")
    p.add_argument("--figure", default=None,
                   help="write pictures of part labelings here (one PNG per init; "
                        "'{init}' in the name is replaced)")
    p.add_argument("--no-oracle", dest="oracle", action="store_false",
                   help="skip the oracle row (the true part labels held fixed)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny smoke-test version (60 + 60 images, 6 x 6 grid, 2 seeds, "
                        "5 iterations)")
    p.set_defaults(func=run)


def parse_inits(text: str) -> list:
    out = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if tok == "random":
            out.append("random")
            continue
        try:
            out.append(float(tok))
        except ValueError:
            raise SystemExit(f"gmmfast scene-compare: error: --inits: {tok!r} is neither "
                             "'random' nor a Potts weight") from None
    return out


_CACHE: dict = {}


def _data(gen: dict):
    """The scenes (cached per process, with the parts discovered for the coherent inits)."""
    from ..lssvm.scene_experiment import load_scenes
    key = tuple(sorted((k, str(v)) for k, v in gen.items()))
    if key not in _CACHE:
        g = dict(gen)
        _CACHE.clear()
        _CACHE[key] = load_scenes(g.pop("seed"), g.pop("n_train"), g.pop("n_test"), **g)
    return _CACHE[key]


def _one(job):
    """Worker: one (method, init, seed) run, single-threaded kernels."""
    from threadpoolctl import threadpool_limits
    from ..lssvm.scene_experiment import initial_labels, run_method
    key, init, seed, gen, kw = job
    method, rb = METHODS[key]
    with threadpool_limits(limits=1):
        D = _data(gen)
        z0 = initial_labels(D, init, seed if init == "random" else 0)
        return run_method(D, method, init, z0, random_bounds=rb, seed=seed, key=key, **kw)


def jobs_for(methods: Sequence[str], inits: Sequence, n_seeds: int) -> List[tuple]:
    """(method, init, seed) of every run: random init over seeds for every method; coherent
    inits over seeds only for the randomised methods (G-MM random), else seed 0."""
    out = []
    for init in inits:
        for m in methods:
            seeds = range(n_seeds) if (init == "random" or m in RANDOMISED) else range(1)
            out += [(m, init, s) for s in seeds]
    return out


def compare(methods: Sequence[str], inits: Sequence, *, n_seeds: int = 5, eta: float = 0.1,
            lam: Optional[float] = None, noise: Optional[float] = None, max_iter: int = 200,
            tol: float = 1e-3, cp_tol: float = 1e-4, cp_max_iter: int = 1000,
            n_train: int = 300, n_test: int = 300, data_seed: int = 0,
            grid: Optional[tuple] = None, jobs: int = 1, progress: bool = True) -> tuple:
    """Run every (method, init, seed); returns (data, results, generator parameters, lam)."""
    from ..lssvm.scene_experiment import LAM
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; choose from {list(METHODS)}")
    lam = LAM if lam is None else lam
    gen = dict(seed=data_seed, n_train=n_train, n_test=n_test)
    if noise is not None:
        gen["noise"] = noise
    if grid is not None:
        gen["grid"] = tuple(grid)
    D = _data(gen)
    kw = dict(lam=lam, eta=eta, tol=tol, max_iter=max_iter, cp_tol=cp_tol,
              cp_max_iter=cp_max_iter)
    todo = [(m, i, s, gen, kw) for (m, i, s) in jobs_for(methods, inits, n_seeds)]
    def describe(r):
        return (f"{r.init:>12} {LABELS[r.method]:<32} seed {r.seed}: F = {r.objective:.4f}, "
                f"test accuracy {100 * r.accuracy:.1f} %, {r.n_iter} it, {r.seconds:.1f} s")

    results = run_jobs(_one, todo, jobs, describe if progress else None)
    return D, results, D.params, lam


def tables(D, results, methods: Sequence[str], inits: Sequence,
           oracle_result: Optional[dict] = None) -> str:
    """Markdown: Table 3 (test accuracy, objective), per-run figures, Table 4's scene rows."""
    from ..lssvm.scene_experiment import init_name, summarize
    names = [init_name(i) for i in inits]
    rows = summarize(results, methods, names, LABELS)
    if oracle_result is not None:
        rows.append(["oracle (true parts fixed)"] +
                    [f"{100 * oracle_result['accuracy']:.1f}",
                     f"{oracle_result['objective']:.4f}"] * len(names))
    head = ["method"] + [f"{i} {w}" for i in names for w in ("acc. %", "objective")]
    out = [_md(head, rows), ""]
    extra = []
    for m in methods:
        for i in names:
            rs = [r for r in results if r.method == m and r.init == i]
            if not rs:
                continue
            a = lambda f: np.array([f(r) for r in rs], dtype=float)  # noqa: E731
            extra.append([LABELS[m], i, len(rs),
                          f"{a(lambda r: r.n_iter).mean():.1f}",
                          f"{100 * a(lambda r: r.changed).mean():.1f}",
                          f"{100 * a(lambda r: r.parts_init).mean():.1f} → "
                          f"{100 * a(lambda r: r.parts_train).mean():.1f}",
                          f"{a(lambda r: r.coherence_init).mean():.1f} → "
                          f"{a(lambda r: r.coherence).mean():.1f}",
                          f"{a(lambda r: r.seconds).mean():.1f}",
                          f"{a(lambda r: r.seconds / max(r.n_iter, 1)).mean():.2f}",
                          sum(len(r.invariant_violations) for r in rs)])
    out.append(_md(["method", "init", "runs", "iterations", "labels changed %",
                    "parts = truth % (init → final)", "Potts energy per image (init → final)",
                    "s / fit", "s / iteration", "invariant violations"], extra))
    if "ccp" in methods:
        paired = []
        for m in methods:
            if m == "ccp":
                continue
            for i in names:
                base = {r.seed: r for r in results if r.method == "ccp" and r.init == i}
                rs = [r for r in results if r.method == m and r.init == i]
                if not rs or not base:
                    continue
                ref = [base.get(r.seed, base.get(0)) for r in rs]
                dF = np.array([r.objective - b.objective for r, b in zip(rs, ref)])
                dA = 100 * np.array([r.accuracy - b.accuracy for r, b in zip(rs, ref)])
                paired.append([LABELS[m], i, f"{dF.mean():+.4f} ± {dF.std():.4f}",
                               f"{int((dF < 0).sum())}/{len(rs)}",
                               f"{dA.mean():+.1f} ± {dA.std():.1f}",
                               f"{int((dA > 0).sum())}/{int((dA < 0).sum())}/{len(rs)}"])
        if paired:
            out += ["", "Paired with CCP from the same initial labels (difference = method - "
                    "CCP; for G-MM random from a coherent init every seed is paired with the "
                    "one CCP run):", "",
                    _md(["method", "init", "objective difference", "runs with lower objective",
                         "accuracy difference (points)", "runs better/worse/all"], paired)]
    # Table 4's scene rows: iterations to converge
    t4 = []
    for i in names:
        row = [i]
        for m in methods:
            rs = [r for r in results if r.method == m and r.init == i]
            row.append(_ms([r.n_iter for r in rs]) if rs else "-")
        t4.append(row)
    out += ["", "Iterations to converge (Table 4's scene rows; mean ± std over runs):", "",
            _md(["init"] + [LABELS[m] for m in methods], t4)]
    return "\n".join(out)


def _ms(v) -> str:
    a = np.asarray(v, dtype=float)
    return f"{a.mean():.1f}" if a.size == 1 else f"{a.mean():.1f} ± {a.std():.1f}"


def run_csv(results) -> str:
    """Every run as one CSV line."""
    cols = ["method", "init", "seed", "objective", "accuracy", "n_iter", "seconds", "changed",
            "parts_init", "parts_train", "coherence_init", "coherence", "cp_iters"]
    lines = [",".join(cols)]
    for r in sorted(results, key=lambda r: (r.init, r.method, r.seed)):
        lines.append(",".join(str(getattr(r, c)) for c in cols))
    return "\n".join(lines) + "\n"


def _md(header, rows) -> str:
    lines = ["| " + " | ".join(map(str, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def figure_path(pattern: str, init: str) -> str:
    tag = init.replace("lambda=", "lambda").replace(".", "")
    if "{init}" in pattern:
        return pattern.replace("{init}", tag)
    root, ext = os.path.splitext(pattern)
    return f"{root}_{tag}{ext or '.png'}"


def run(args) -> int:
    from ..lssvm.scene_experiment import init_name, oracle, plot_labelings
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"gmmfast scene-compare: error: --methods: unknown method {m!r}; "
                             f"choose from {', '.join(METHODS)}")
    inits = parse_inits(args.inits)
    seeds, max_iter, n_train, n_test, grid = (args.seeds, args.max_iter, args.n_train,
                                              args.n_test, None)
    if args.quick:
        seeds, max_iter, n_train, n_test, grid = 2, 5, 60, 60, (6, 6)
    t = time.perf_counter()
    D, results, gen, lam = compare(methods, inits, n_seeds=seeds, eta=args.eta, lam=args.lam,
                                   noise=args.noise, max_iter=max_iter, tol=args.tol,
                                   cp_tol=args.cp_tol, cp_max_iter=args.cp_max_iter,
                                   n_train=n_train, n_test=n_test, data_seed=args.data_seed,
                                   grid=grid, jobs=args.jobs)
    orc = oracle(D, lam) if args.oracle else None
    text = tables(D, results, methods, inits, orc)
    head = (f"{n_train} training + {n_test} test scenes (make_scenes {gen}), "
            f"RegionPartModel({D.n_classes}, {D.n_parts}, {D.grid}); lambda = {lam}, eta = "
            f"{args.eta}, tol = {args.tol}, cp_tol = {args.cp_tol}, max_iter = {max_iter}; "
            f"{time.perf_counter() - t:.0f} s")
    report(head, text, args.out)
    if args.figure:
        for init in inits:
            path = figure_path(args.figure, init_name(init))
            plot_labelings(D, results, methods, init_name(init), path, labels=LABELS)
            print(f"figure written to {os.path.abspath(path)}")
    return 0
