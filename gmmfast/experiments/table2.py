"""The paper's LS-SVM experiment (section 5.2, Table 2, Figure 4) on cluttered objects.

Used by the ``gmmfast lssvm-compare`` command: 5-fold cross-validation
folds, the oracle check (true latent values held fixed), one cross-validated
run of a method from an initialisation, the Table 2 summary and the Figure 4
picture. The data are :func:`gmmfast.datasets.make_cluttered_objects` (digits
among clutter on photographic backgrounds, HOG-like window features), whose
defaults and default lambda were fixed by a calibration of the oracle and of
CCP before any method was compared (``lams`` instead chooses lambda in every
run by validation inside its training folds); bounds are minimised by dual
coordinate ascent (``solver="dcd"``).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from ..lssvm import LatentInitWarning, LatentMulticlassModel, LatentSSVM
from ..lssvm._learner import lam_floor as _learner_lam_floor
from ._jobs import run_jobs
from ._tables import (cells, markdown_table, mean, mean_std, paired_row, paired_with_ccp,
                      runs_csv, runs_of)

__all__ = ["objects", "lam_floor", "cv_folds", "FoldResult", "oracle_fold", "first_bound",
           "inner_split", "choose_lam", "run_fold", "summarize",
           "plot_latent_changes", "compare", "oracle", "tables", "fold_csv",
           "OBJECTS_DEFAULTS", "LAM", "SOLVER", "METHOD_NAMES", "METHODS", "LABELS", "INITS"]

#: Generator parameters of the experiment (make_cluttered_objects' defaults), fixed by a
#: calibration before any method was compared: among background contrasts 0.25, 0.5, 1 and 2,
#: 4, 8 distractor fragments, the most cluttered setting at which the oracle's cross-validated
#: error is at most 15 % (7.7 %), the first bound from random windows lowers F, CCP from random
#: windows errs on at most 60 % (53 %; chance 83 %) and CCP from the top-left windows changes
#: under 20 % of them (9 %).
OBJECTS_DEFAULTS: Dict[str, Any] = dict(n_per_class=50, scale=4, cell=4, canvas_cells=14,
                                        spread=1.5, n_distractors=4, distractor_size=4,
                                        distractor_intensity=1.0, background=0.5, noise=0.05)
#: lambda, chosen by the oracle's cross-validated error in the same calibration.
LAM = 0.001
#: Bound minimiser of the experiment: dual coordinate ascent (4x faster than the cutting
#: plane at this size, the same certified duality gap).
SOLVER = "dcd"
METHOD_NAMES = {"ccp": "CCP", "gmm-random": "G-MM random", "gmm-biased": "G-MM biased"}


def objects(n_per_class: Optional[int] = None, seed: int = 0) -> tuple:
    """The experiment's images: make_cluttered_objects with OBJECTS_DEFAULTS (``n_per_class``
    images per class instead of the default if given) drawn with ``seed``; returns (generator
    parameters, data), drawn anew at every call (:func:`compare` takes them as ``data``)."""
    from ..datasets import make_cluttered_objects
    gen = dict(OBJECTS_DEFAULTS, random_state=seed)
    if n_per_class is not None:
        gen["n_per_class"] = n_per_class
    return gen, make_cluttered_objects(**gen)


def lam_floor(D, solver_tol: float) -> float:
    """The smallest lambda LatentSSVM accepts on the images ``D`` at ``solver_tol`` (training
    on a fold of them accepts it too)."""
    return _learner_lam_floor(_model(D), D.data, D.target, solver_tol)


def cv_folds(n: int, n_folds: int = 5, seed: int = 0) -> List[np.ndarray]:
    """Test indices of each fold: a fixed random partition of range(n)."""
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(perm[k::n_folds]) for k in range(n_folds)]


def split(n: int, folds: List[np.ndarray], k: int):
    test = folds[k]
    train = np.setdiff1d(np.arange(n), test)
    return train, test


@dataclass
class FoldResult:
    """One training run on one cross-validation fold."""

    method: str
    init: str
    fold: int
    objective: float           # F(w) on the training set
    test_error: float          # classification error on the held-out fold
    test_loc: float            # held-out images whose predicted window is the true one
    train_loc: float           # training images whose imputed window is the true one
    test_loc1: float           # ... within one grid step of the true one
    train_loc1: float
    changed: float             # fraction of latent values changed by training
    n_iter: int
    seconds: float
    cp_iters: int
    no_signal: bool = False    # LatentInitWarning: the first bound was minimised at w = 0
    lam: float = float("nan")  # the lambda trained with
    val_errors: Optional[Dict[float, float]] = None  # validation error per lambda, if chosen
    total_seconds: float = float("nan")  # seconds including the choice of lambda
    invariant_violations: List[str] = field(default_factory=list)
    latent_init: Optional[np.ndarray] = None
    latent: Optional[np.ndarray] = None
    train_index: Optional[np.ndarray] = None
    history_objective: Optional[np.ndarray] = None


def _model(D) -> LatentMulticlassModel:
    return LatentMulticlassModel(len(D.classes), positions=D.positions)


def near(z: np.ndarray, truth: np.ndarray, grid: int) -> np.ndarray:
    """Whether each window is within one grid step (in row and column) of the true one."""
    return np.maximum(np.abs(z // grid - truth // grid), np.abs(z % grid - truth % grid)) <= 1


def _fit(est: LatentSSVM, X, y, latent_init) -> bool:
    """Fit; return whether the LatentInitWarning (no signal in the initial values) was raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LatentInitWarning)
        est.fit(X, y, latent_init=latent_init)
    other = [w for w in caught if not issubclass(w.category, LatentInitWarning)]
    for w in other:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return len(other) < len(caught)


def oracle_fold(D, folds, k: int, lam: float, solver_tol: float = 1e-4,
                solver: str = SOLVER) -> dict:
    """Train on the true latent values (held fixed), test on the held-out fold; the solver's
    random order seeded by the fold, as :func:`first_bound`'s (unseeded, DCD's coordinate
    order came from fresh entropy and the oracle's test error moved from run to run)."""
    train, test = split(len(D.target), folds, k)
    est = LatentSSVM(_model(D), lam=lam, method="ccp", max_iter=1, solver_tol=solver_tol,
                     solver=solver, random_state=k)
    _fit(est, D.data[train], D.target[train], D.latent[train])
    y_hat, z_hat = est.predict(D.data[test], return_latent=True)
    return dict(error=float(np.mean(y_hat != D.target[test])),
                loc=float(np.mean(z_hat == D.latent[test])),
                loc1=float(np.mean(near(z_hat, D.latent[test], D.grid))),
                objective=float(est.objective_))


def first_bound(D, folds, k: int, lam: float, init: str, solver_tol: float = 1e-4,
                solver: str = SOLVER) -> dict:
    """Minimise the first bound (the initial latent values) only: common to every method."""
    train, test = split(len(D.target), folds, k)
    est = LatentSSVM(_model(D), lam=lam, method="ccp", max_iter=1, solver_tol=solver_tol,
                     solver=solver, random_state=k)
    _fit(est, D.data[train], D.target[train], init)
    return dict(objective=float(est.objective_), bound=float(est.history_.bound[0]),
                norm=float(np.linalg.norm(est.coef_)),
                error=float(1.0 - est.score(D.data[test], D.target[test])))


def inner_split(train: np.ndarray, seed: int, k: int, fraction: float = 0.2):
    """A fixed random split of a training fold into (fit, validation) indices (for lambda)."""
    perm = np.random.default_rng([seed, k, 1]).permutation(train.size)
    n_val = max(1, int(round(fraction * train.size)))
    return np.sort(train[perm[n_val:]]), np.sort(train[perm[:n_val]])


def _train(D, train, method: str, init: str, k: int, seed: int, lam: float, kw: dict):
    est = LatentSSVM(_model(D), lam=lam, method=method,
                     random_state=np.random.default_rng([seed, k]), **kw)
    t = time.perf_counter()
    no_signal = _fit(est, D.data[train], D.target[train], init)
    return est, no_signal, time.perf_counter() - t


def choose_lam(D, train, k: int, method: str, init: str, lams: Sequence[float], *,
               seed: int = 0, **kw) -> Dict[float, float]:
    """Validation error of ``method`` from ``init`` for each lambda in ``lams``.

    Trains on four fifths of the training fold (:func:`inner_split`) and
    measures the error on the other fifth; ``kw`` are LatentSSVM parameters.
    """
    fit, val = inner_split(train, seed, k)
    errors = {}
    for lam in lams:
        est, _, _ = _train(D, fit, method, init, k, seed, lam, kw)
        errors[float(lam)] = float(np.mean(est.predict(D.data[val]) != D.target[val]))
    return errors


def run_fold(D, folds, k: int, method: str, init: str, *, lam: Union[float, Sequence[float]],
             eta: float = 0.1, n_folds_bias: int = 10, random_bounds: str = "walk",
             tol: float = 1e-3, max_iter: int = 100, solver_tol: float = 1e-4,
             solver: str = SOLVER, seed: int = 0, keep_latent: bool = False) -> FoldResult:
    """Train ``method`` from ``init`` on all folds but k; evaluate on fold k.

    ``lam`` is a number, or several: then the one with the lowest validation
    error (:func:`choose_lam`; ties to the larger lambda) is used, on the
    training folds only.
    """
    train, test = split(len(D.target), folds, k)
    opts = dict(eta=eta, n_folds=n_folds_bias, random_bounds=random_bounds, tol=tol,
                max_iter=max_iter, solver_tol=solver_tol, solver=solver)
    val_errors = None
    t = time.perf_counter()
    if np.ndim(lam):
        val_errors = choose_lam(D, train, k, method, init, lam, seed=seed, **opts)
        lam = min(val_errors, key=lambda v: (val_errors[v], -v))
    est, no_signal, seconds = _train(D, train, method, init, k, seed, float(lam), opts)
    total = time.perf_counter() - t
    y_hat, z_hat = est.predict(D.data[test], return_latent=True)
    return FoldResult(
        method=method, init=init, fold=k, objective=float(est.objective_),
        test_error=float(np.mean(y_hat != D.target[test])),
        test_loc=float(np.mean(z_hat == D.latent[test])),
        train_loc=float(np.mean(est.latent_ == D.latent[train])),
        test_loc1=float(np.mean(near(z_hat, D.latent[test], D.grid))),
        train_loc1=float(np.mean(near(est.latent_, D.latent[train], D.grid))),
        changed=float(np.mean(est.latent_ != est.latent_init_)), n_iter=est.n_iter_,
        seconds=seconds, cp_iters=int(sum(s.n_iter for s in est.solve_info_)),
        no_signal=no_signal, invariant_violations=est.history_.invariant_violations(),
        lam=float(lam), val_errors=val_errors, total_seconds=total,
        latent_init=est.latent_init_.copy() if keep_latent else None,
        latent=est.latent_.copy() if keep_latent else None,
        train_index=train if keep_latent else None,
        history_objective=est.history_.objective.copy())


def summarize(results: Sequence[FoldResult], methods: Sequence[str], inits: Sequence[str]
              ) -> List[list]:
    """Rows of Table 2: method, then per init objective and test error (%) as mean +- std."""
    rows = []
    for m in methods:
        row = [METHOD_NAMES.get(m, m)]
        for init in inits:
            rs = runs_of(results, m, init)
            if not rs:
                row += ["-", "-"]
                continue
            row += [mean_std([r.objective for r in rs], ".3f"),
                    mean_std(100 * np.array([r.test_error for r in rs]), ".1f")]
        rows.append(row)
    return rows


def plot_latent_changes(D, results: Sequence[FoldResult], methods: Sequence[str], init: str,
                        path: str, labels: Optional[Dict[str, str]] = None) -> None:
    """Figure 4: final latent windows, one colour per fold; below, their offsets from the truth.

    Top row: each cross is a training image at its imputed window after
    training, in relative image coordinates (jittered slightly so that crosses
    at one window do not hide each other); the first panel shows the true
    windows. The title gives the fraction of latent values changed by
    training. Bottom row: counts of (row, column) offsets, in grid steps,
    of the imputed window from the true one (the first panel: of the
    initial windows), with the mean offset.
    """
    import matplotlib
    from matplotlib.figure import Figure     # not pyplot: the caller's backend is left alone
    g = D.grid
    ncol = len(methods) + 1
    fig = Figure(figsize=(2.3 * ncol, 5.3))
    axes = fig.subplots(2, ncol, squeeze=False)
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    rng = np.random.default_rng(0)
    name = lambda m: (labels or METHOD_NAMES).get(m, m)  # noqa: E731
    for ax in axes[0]:
        ax.set_xlim(-0.08, 1.08)
        ax.set_ylim(1.08, -0.08)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
    axes[0, 0].set_ylabel("row (relative)", fontsize=7)
    axes[1, 0].set_ylabel("row offset (steps)", fontsize=7)

    def scatter(ax, z, colour):
        p = D.positions[z] + rng.uniform(-0.03, 0.03, size=(z.shape[0], 2))
        ax.plot(p[:, 1], p[:, 0], ".", ms=2.5, alpha=0.5, color=colour)

    def offsets(ax, pairs, title):
        counts = np.zeros((2 * g - 1, 2 * g - 1))
        mean = np.zeros(2)
        total = 0
        for z, truth in pairs:
            dr = z // g - truth // g
            dc = z % g - truth % g
            np.add.at(counts, (dr + g - 1, dc + g - 1), 1)
            mean += [dr.sum(), dc.sum()]
            total += z.shape[0]
        ext = (-(g - 1) - 0.5, g - 1 + 0.5, g - 1 + 0.5, -(g - 1) - 0.5)
        ax.imshow(counts, cmap="Greys", extent=ext, interpolation="nearest")
        ax.axhline(0, lw=0.4, color="tab:red")
        ax.axvline(0, lw=0.4, color="tab:red")
        mean /= max(total, 1)
        ax.set_title(f"{title}\nmean offset ({mean[0]:+.1f}, {mean[1]:+.1f})", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.set_xlabel("column offset", fontsize=7)

    scatter(axes[0, 0], D.latent, "0.3")
    axes[0, 0].set_title("true windows\n(all images)", fontsize=8)
    init_pairs = []
    for ax_top, ax_bot, m in zip(axes[0, 1:], axes[1, 1:], methods):
        rs = sorted((r for r in results if r.method == m and r.init == init and
                     r.latent is not None), key=lambda r: r.fold)
        for r in rs:
            scatter(ax_top, r.latent, colours[r.fold % len(colours)])
        if rs and not init_pairs:
            init_pairs = [(r.latent_init, D.latent[r.train_index]) for r in rs]
        changed = np.mean([r.changed for r in rs]) if rs else float("nan")
        ax_top.set_title(f"{name(m)}\n{100 * changed:.1f}% changed", fontsize=8)
        offsets(ax_bot, [(r.latent, D.latent[r.train_index]) for r in rs], "after training")
    offsets(axes[1, 0], init_pairs, "initial windows")
    fig.suptitle(f"latent windows after training, init = {init} (top: one colour per fold; "
                 "bottom: offset from the true window)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=72)


#: Method labels of the command: (LatentSSVM method, random_bounds).
METHODS = {"ccp": ("ccp", "walk"), "gmm-random": ("gmm-random", "walk"),
           "gmm-random-subset": ("gmm-random", "subset"), "gmm-biased": ("gmm-biased", "walk")}


LABELS = {"ccp": "CCP", "gmm-random": "G-MM random (walk)",
          "gmm-random-subset": "G-MM random (subset S_t, paper)", "gmm-biased": "G-MM biased"}


INITS = ("center", "top-left", "random")


def _one(D, job):
    """Worker: one (method, init, fold) run on the images ``D``, single-threaded kernels."""
    from threadpoolctl import threadpool_limits
    (key, init, k, folds, kw) = job
    method, rb = METHODS[key]
    with threadpool_limits(limits=1):
        r = run_fold(D, folds, k, method, init, random_bounds=rb, keep_latent=True, **kw)
    r.method = key
    return r


def compare(methods: Sequence[str], inits: Sequence[str], *, n_folds: int = 5,
            eta: float = 0.1, lam: Optional[float] = None,
            lams: Optional[Sequence[float]] = None, bias_folds: int = 10,
            max_iter: int = 100, tol: float = 1e-3, solver_tol: float = 1e-4,
            n_per_class: Optional[int] = None, seed: int = 0, jobs: int = 1,
            progress: bool = True, solver: str = SOLVER, data: Optional[tuple] = None) -> tuple:
    """Run every (method, init, fold); returns (data, results, generator parameters, lam).

    ``data``: the images, as :func:`objects` ``(n_per_class, seed)`` returns them (generator
    parameters, data), when the caller has drawn them already; else they are drawn here.
    They are drawn once and shared by every run (:func:`run_jobs`'s ``shared``).

    ``lams``: instead of one ``lam``, choose lambda from these in every run by
    validation inside its training folds (:func:`run_fold`); the returned
    ``lam`` is then the list.
    """
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; choose from {list(METHODS)}")
    for i in inits:
        if i not in INITS:
            raise ValueError(f"unknown init {i!r}; choose from {list(INITS)}")
    if lams is not None:
        if lam is not None:
            raise ValueError("pass lam or lams, not both")
        lams = [float(v) for v in lams]
        if not lams or not all(0 < v < np.inf for v in lams):
            raise ValueError(f"lams must be finite numbers > 0, got {lams}")
    lam = (LAM if lam is None else lam) if lams is None else lams
    gen, D = objects(n_per_class, seed) if data is None else data
    folds = cv_folds(len(D.target), n_folds, seed)
    kw = dict(lam=lam, eta=eta, n_folds_bias=bias_folds, tol=tol, max_iter=max_iter,
              solver_tol=solver_tol, solver=solver, seed=seed)
    jobs_list = [(m, i, k, folds, kw) for i in inits for m in methods
                 for k in range(n_folds)]
    def describe(r):
        return (f"{r.init:>8} {LABELS[r.method]:<32} fold {r.fold + 1}: F = {r.objective:.4f}, "
                f"test error {100 * r.test_error:.1f} %, {r.n_iter} it, lambda {r.lam:g}, "
                f"{r.seconds:.1f} s")

    results = run_jobs(_one, jobs_list, jobs, describe if progress else None, shared=D)
    return D, results, gen, lam


def oracle(D, n_folds: int, lam: float, seed: int = 0, solver_tol: float = 1e-4,
           solver: str = SOLVER) -> List[dict]:
    """The oracle of each fold: trained with the true windows held fixed."""
    folds = cv_folds(len(D.target), n_folds, seed)
    return [oracle_fold(D, folds, k, lam, solver_tol, solver) for k in range(n_folds)]


def tables(D, results, methods: Sequence[str], inits: Sequence[str],
           oracle_results: Optional[List[dict]] = None) -> str:
    """Markdown: Table 2 (objective, test error) and the supporting figures per run."""
    rows = summarize(results, methods, inits)
    for row, m in zip(rows, methods):
        row[0] = LABELS[m]
    if oracle_results:
        cell = [mean_std([o["objective"] for o in oracle_results], ".3f"),
                mean_std(100 * np.array([o["error"] for o in oracle_results]), ".1f")]
        rows.append(["oracle (true windows fixed)"] + cell * len(inits))
    head = ["method"] + [f"{i} {what}" for i in inits for what in ("objective", "test error %")]
    out = [markdown_table(head, rows), ""]
    extra = []
    chosen = any(r.val_errors is not None for r in results)
    for m, i, rs in cells(results, methods, inits):
        extra.append([LABELS[m], i,
                      f"{100 * mean(rs, lambda r: r.changed):.1f}",
                      f"{100 * mean(rs, lambda r: r.train_loc1):.1f}",
                      f"{100 * mean(rs, lambda r: r.test_loc1):.1f}",
                      f"{mean(rs, lambda r: r.n_iter):.1f}",
                      f"{mean(rs, lambda r: r.seconds):.1f}",
                      f"{sum(r.no_signal for r in rs)}/{len(rs)}",
                      sum(len(r.invariant_violations) for r in rs)]
                     + ([" ".join(f"{r.lam:g}" for r in sorted(rs, key=lambda r: r.fold))]
                        if chosen else []))
    out.append(markdown_table(["method", "init", "latent changed %",
                               "train windows within 1 step of truth %",
                               "test windows within 1 step %", "iterations", "s / fit",
                               "stopped at w = 0 (LatentInitWarning)", "invariant violations"]
                              + (["lambda chosen by validation (fold 1, 2, ...)"]
                                 if chosen else []), extra))
    paired = []
    for m, i, rs, base in paired_with_ccp(results, methods, inits, "fold"):
        # F depends on lambda: compare objectives only where both used the same one
        dF = np.array([r.objective - b.objective for r, b in zip(rs, base)
                       if r.lam == b.lam or np.isnan(r.lam)])
        dE = 100 * np.array([r.test_error - b.test_error for r, b in zip(rs, base)])
        paired.append(paired_row(LABELS[m], i, dF, dE, better=-1))
    if paired:
        out += ["", "Paired with CCP on the same fold and initial latent values "
                "(difference = method - CCP; negative is better):", "",
                markdown_table(["method", "init", "objective difference"
                                + (" (folds where both chose the same lambda)"
                                   if chosen else ""),
                                "folds with lower objective", "test error difference (points)",
                                "folds better/worse/all"], paired)]
    return "\n".join(out)


def fold_csv(results) -> str:
    """Every run as one CSV line (method, init, fold and the measured figures)."""
    return runs_csv(results, ["method", "init", "fold", "objective", "test_error", "test_loc",
                              "train_loc", "test_loc1", "train_loc1", "changed", "n_iter",
                              "seconds", "cp_iters", "no_signal", "lam", "total_seconds"],
                    order=("init", "method", "fold"))
