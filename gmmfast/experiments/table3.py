"""The paper's scene-recognition experiment (section 5.3, Table 3, Table 4's scene rows).

Used by the ``gmmfast scene-compare`` command: the texture scenes (:func:`gmmfast.datasets.make_texture_scenes`) split into
training and test images, the region-part model with class-specific parts
(``RegionPartModel(shared_parts=False)``: with the paper's shared parts the
first bound from random labels is always minimised at w = 0, see
RegionPartModel), the initialisations (random part labels, or parts
discovered by k-means on each class's training regions and each training
image labelled by alpha-expansion with Potts weight lambda),
the oracle (true part labels held fixed), one training run of a method, the
Table 3 summary and the picture of part labelings before and after training.
Optionally every region's one-hot grid position is appended to its features
(``positions``, :func:`region_positions`): the RBoW model's region-to-part
assignment scores, a score per (class, region, part).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .._validation import check_real
from ..lssvm import LatentSSVM, PottsBias, RegionPartModel, coherent_labels, discover_parts
from ..lssvm._learner import lam_floor as _learner_lam_floor
from ..potts import potts_energy
from ._jobs import run_jobs
from ._tables import (cells, markdown_table, mean, mean_std, paired_row, paired_with_ccp,
                      runs_csv, runs_of)

__all__ = ["SCENES_DEFAULTS", "LAM", "INIT_LAMBDAS", "NAMED_INITS", "SceneData", "SceneResult",
           "load_scenes", "scenes", "lam_floor", "region_positions", "initial_labels", "oracle",
           "first_bound", "run_method", "part_agreement",
           "summarize", "plot_labelings", "METHOD_NAMES"]

#: Generator parameters (make_texture_scenes' defaults), fixed by a calibration of the oracle
#: before any method was compared: 300 training and 300 test images from one draw (seed 0), at
#: a pixel noise (0.3) where the oracle stays below 90 % test accuracy (87.3 %).
SCENES_DEFAULTS: Dict[str, Any] = dict(n_classes=5, n_parts=12, grid=(10, 10), cell=8,
                                       regions_per_class=4, layout_jitter=1.0,
                                       part_swap=0.1, noise=0.3)
#: make_texture_scenes' parameters that a comparison may override (the rest are set here).
GENERATOR_KEYS = frozenset(SCENES_DEFAULTS) | {"n_bins"}
N_TRAIN = 300
N_TEST = 300
#: lambda (regularisation) of the LS-SVM, chosen by validation of the oracle: 86.0 % at 10
#: against 87.0 % at 1, a tie within one point, which goes to the larger lambda.
LAM = 10.0
#: Parts per class (class-specific parts, the original reconfigurable model).
SHARED_PARTS = False
#: Potts weights of the coherent initialisations (the paper's).
INIT_LAMBDAS = (0.0, 0.25, 0.5, 1.0)
#: Initialisations named by a string (the others are Potts weights): see initial_labels.
NAMED_INITS = ("random", "truth")
METHOD_NAMES = {"ccp": "CCP", "gmm-random": "G-MM random", "gmm-biased": "G-MM biased"}


@dataclass
class SceneData:
    """Training and test scenes: X (n, R, d), y (n,), true part labels Z (n, R)."""

    X_train: np.ndarray
    y_train: np.ndarray
    Z_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    Z_test: np.ndarray
    params: Dict[str, Any]
    centres: Optional[np.ndarray] = None      # parts discovered on the training regions
                                              # ((n_classes, n_parts, d) if class-specific)

    @property
    def grid(self):
        return tuple(self.params["grid"])

    @property
    def n_classes(self) -> int:
        return int(self.params["n_classes"])

    @property
    def n_parts(self) -> int:
        return int(self.params["n_parts"])

    def model(self) -> RegionPartModel:
        return RegionPartModel(self.n_classes, self.n_parts, self.grid,
                               shared_parts=SHARED_PARTS)


def region_positions(X: np.ndarray, scale: float) -> np.ndarray:
    """X (n, R, d) with ``scale`` times the one-hot code of every region's position appended:
    (n, R, d + R); X itself when scale is 0.

    With class-specific parts a part filter then has a weight per region, so
    every (class, region, part) gets a score of its own: the RBoW model's
    region-to-part assignment scores (paper section 5.3: unaries are "the dot
    product scores between the feature vector extracted from an image region
    and a part filter plus the corresponding region-to-part assignment
    score"), through which a class's spatial layout enters the objective.
    """
    scale = check_real(scale, "positions", 0.0)
    if X.ndim != 3:
        raise ValueError(f"X must be an (n, R, d) array of region features, got shape {X.shape}.")
    if scale == 0.0:
        return X
    n, R, _ = X.shape
    code = np.broadcast_to(scale * np.eye(R, dtype=X.dtype), (n, R, R))
    return np.concatenate([X, code], axis=2)


def load_scenes(seed: int = 0, n_train: int = N_TRAIN, n_test: int = N_TEST, *,
                positions: float = 0.0, **overrides: Any) -> SceneData:
    """One draw of ``make_texture_scenes`` (seed): the first n_train images for training, the
    rest test; ``positions`` > 0 appends the regions' one-hot positions, scaled by it, to their
    features (:func:`region_positions`)."""
    from ..datasets import make_texture_scenes
    positions = check_real(positions, "positions", 0.0)       # checked before the drawing
    params = dict(SCENES_DEFAULTS, **overrides)
    X, y, Z = make_texture_scenes(n_train + n_test, random_state=seed, **params)
    X = region_positions(X, positions)
    params = dict(params, n_train=n_train, n_test=n_test, seed=seed)
    if positions:
        params["positions"] = positions
    return SceneData(X[:n_train], y[:n_train], Z[:n_train], X[n_train:], y[n_train:],
                     Z[n_train:], params)


def initial_labels(D: SceneData, init: Union[str, float], seed: int = 0) -> np.ndarray:
    """The first bound's part labels (n_train, R).

    "random": every region a uniformly drawn part (generator seeded by
    ``seed``). "truth": the true parts (not an initialisation a user has:
    CCP from it measures the objective of the basin around the truth, against
    which the methods' objectives from random labels are read). A float
    lambda: parts discovered once by k-means (Lloyd from k-means++, seed 0) on
    the training regions (with class-specific parts: on each class's training
    regions, n_parts per class), then each training image labelled by
    alpha-expansion with the normalised part scores as unaries and Potts
    weight lambda (:func:`gmmfast.lssvm.coherent_labels`).
    """
    if isinstance(init, str):
        if init == "truth":
            return D.Z_train.astype(np.int32)        # a copy: the caller may change it
        if init not in NAMED_INITS:
            raise ValueError(f"init must be 'random', 'truth' or a Potts weight, got {init!r}.")
        rng = np.random.default_rng([seed, 1])
        return rng.integers(0, D.n_parts, size=D.Z_train.shape).astype(np.int32)
    if SHARED_PARTS:
        if D.centres is None:
            D.centres = discover_parts(D.X_train, D.n_parts, random_state=0)
        return coherent_labels(D.X_train, D.centres, float(init), D.grid)
    if D.centres is None:
        D.centres = np.stack([discover_parts(D.X_train[D.y_train == c], D.n_parts,
                                             random_state=0) for c in range(D.n_classes)])
    z = np.empty(D.Z_train.shape, dtype=np.int32)
    for c in range(D.n_classes):
        mine = D.y_train == c
        z[mine] = coherent_labels(D.X_train[mine], D.centres[c], float(init), D.grid)
    return z


def init_name(init: Union[str, float]) -> str:
    return init if isinstance(init, str) else f"lambda={float(init):.2f}"


def part_agreement(Z_pred: np.ndarray, Z_true: np.ndarray, n_parts: int,
                   classes: Optional[np.ndarray] = None) -> float:
    """Fraction of regions whose part agrees with the truth under the best one-to-one renaming
    (one renaming per class when ``classes`` is given: class-specific parts)."""
    from scipy.optimize import linear_sum_assignment
    groups = [np.ones(Z_true.shape[0], dtype=bool)] if classes is None else [
        classes == c for c in np.unique(classes)]
    hit = 0.0
    for g in groups:
        M = np.zeros((n_parts, n_parts))
        np.add.at(M, (Z_pred[g].ravel(), Z_true[g].ravel()), 1)
        r, c = linear_sum_assignment(-M)
        hit += M[r, c].sum()
    return float(hit / Z_true.size)


def coherence(Z: np.ndarray, grid) -> float:
    """Mean Potts energy per image (neighbouring regions with different parts)."""
    return float(potts_energy(np.asarray(Z).reshape(-1, *grid)).mean())


def oracle(D: SceneData, lam: float, solver_tol: float = 1e-4, solver_max_iter: int = 5000) -> dict:
    """Train with the true part labels held fixed; test accuracy and part agreement."""
    est = LatentSSVM(D.model(), lam=lam, method="ccp", max_iter=1, solver_tol=solver_tol,
                     solver_max_iter=solver_max_iter)
    est.fit(D.X_train, D.y_train, latent_init=D.Z_train)
    y_hat, z_hat = est.predict(D.X_test, return_latent=True)
    return dict(accuracy=float(np.mean(y_hat == D.y_test)),
                parts=float(np.mean(z_hat == D.Z_test)),
                objective=float(est.objective_),
                converged=bool(est.solve_info_[0].converged),
                cp_iters=int(est.solve_info_[0].n_iter))


def first_bound(D: SceneData, lam: float, z0: np.ndarray, solver_tol: float = 1e-4,
                solver_max_iter: int = 5000) -> dict:
    """Minimise the first bound (the initial labels) only: common to every method."""
    est = LatentSSVM(D.model(), lam=lam, method="ccp", max_iter=1, solver_tol=solver_tol,
                     solver_max_iter=solver_max_iter)
    t = time.perf_counter()
    est.fit(D.X_train, D.y_train, latent_init=z0)
    return dict(objective=float(est.objective_), norm=float(np.linalg.norm(est.coef_)),
                accuracy=float(est.score(D.X_test, D.y_test)),
                converged=bool(est.solve_info_[0].converged),
                cp_iters=int(est.solve_info_[0].n_iter), seconds=time.perf_counter() - t)


@dataclass
class SceneResult:
    """One training run."""

    method: str                   # key of the method (e.g. "gmm-random-subset")
    init: str                     # "random", "truth" or "lambda=0.25"
    seed: int
    objective: float              # F(w) on the training set
    accuracy: float               # test accuracy
    n_iter: int
    seconds: float
    changed: float                # fraction of part labels changed by training
    parts_train: float            # agreement of the final labels with the truth (best renaming)
    parts_init: float             # the same for the initial labels
    coherence: float              # mean Potts energy of the final labels per image
    coherence_init: float
    cp_iters: int
    invariant_violations: List[str] = field(default_factory=list)
    history_objective: Optional[np.ndarray] = None
    history_time: Optional[np.ndarray] = None
    latent_init: Optional[np.ndarray] = None     # a few images' labels (for the picture)
    latent: Optional[np.ndarray] = None


def run_method(D: SceneData, method: str, init: Union[str, float], z0: np.ndarray, *,
               lam: float = LAM, eta: float = 0.1, random_bounds: str = "walk",
               bias: Union[str, PottsBias] = "potts", tol: float = 1e-3, max_iter: int = 200,
               solver_tol: float = 1e-4, solver_max_iter: int = 1000, seed: int = 0,
               key: Optional[str] = None, keep: int = 6) -> SceneResult:
    """Train ``method`` from the labels ``z0``; evaluate on the test images."""
    est = LatentSSVM(D.model(), lam=lam, method=method, eta=eta, bias=bias,
                     random_bounds=random_bounds, tol=tol, max_iter=max_iter, solver_tol=solver_tol,
                     solver_max_iter=solver_max_iter, random_state=np.random.default_rng([seed, 2]))
    t = time.perf_counter()
    est.fit(D.X_train, D.y_train, latent_init=z0)
    seconds = time.perf_counter() - t
    P = D.n_parts
    by_class = None if SHARED_PARTS else D.y_train
    return SceneResult(
        method=key or method, init=init_name(init), seed=seed,
        objective=float(est.objective_), accuracy=float(est.score(D.X_test, D.y_test)),
        n_iter=est.n_iter_, seconds=seconds,
        changed=float(np.mean(est.latent_ != est.latent_init_)),
        parts_train=part_agreement(est.latent_, D.Z_train, P, by_class),
        parts_init=part_agreement(est.latent_init_, D.Z_train, P, by_class),
        coherence=coherence(est.latent_, D.grid),
        coherence_init=coherence(est.latent_init_, D.grid),
        cp_iters=int(sum(s.n_iter for s in est.solve_info_)),
        invariant_violations=est.history_.invariant_violations(),
        history_objective=est.history_.objective.copy(),
        history_time=est.history_.time.copy(),
        latent_init=est.latent_init_[:keep].copy(), latent=est.latent_[:keep].copy())


def _ms(values: Sequence[float], fmt: str, scale: float = 1.0, std: bool = True) -> str:
    a = scale * np.asarray(values, dtype=float)
    if a.size == 0:
        return "-"
    if a.size == 1 or not std:
        return format(a.mean(), fmt)
    return mean_std(a, fmt)


def summarize(results: Sequence[SceneResult], methods: Sequence[str], inits: Sequence[str],
              labels: Optional[Dict[str, str]] = None) -> List[list]:
    """Rows of Table 3: method, then per init test accuracy (%) and training objective.

    Mean ± std over the runs of a cell (seeds), std shown when there are several.
    """
    rows = []
    for m in methods:
        row = [(labels or METHOD_NAMES).get(m, m)]
        for init in inits:
            rs = runs_of(results, m, init)
            row += [_ms([r.accuracy for r in rs], ".1f", 100), _ms([r.objective for r in rs],
                                                                 ".4f")]
        rows.append(row)
    return rows


def plot_labelings(D: SceneData, results: Sequence[SceneResult], methods: Sequence[str],
                   init: str, path: str, labels: Optional[Dict[str, str]] = None,
                   n_images: int = 4, seed: int = 0) -> None:
    """Part labelings of a few training images: truth, initial, and after each method.

    Rows: the true parts, the initial labels (common to every method), then
    each method's final labels (the run with ``seed``). Part indices are
    arbitrary (the model's parts are discovered, not named): every panel's
    colours are renamed by the best one-to-one match with the true parts over
    all training regions shown, so equal colours mean matched parts.
    """
    import matplotlib
    from matplotlib.figure import Figure     # not pyplot: the caller's backend is left alone
    from scipy.optimize import linear_sum_assignment
    P = D.n_parts
    H, W = D.grid
    rs = {r.method: r for r in results if r.init == init and r.seed == seed
          and r.latent is not None}
    shown = [m for m in methods if m in rs]
    if not shown:
        return
    truth = D.Z_train[:n_images]

    def renamed(Z):
        Z = np.asarray(Z)[:n_images]
        M = np.zeros((P, P))
        np.add.at(M, (Z.ravel(), truth.ravel()), 1)
        r, c = linear_sum_assignment(-M)
        mapping = np.empty(P, dtype=np.int64)
        mapping[r] = c
        return mapping[Z]

    rows = [("true parts", truth, None), ("initial", renamed(rs[shown[0]].latent_init), None)]
    for m in shown:
        r = rs[m]
        rows.append(((labels or METHOD_NAMES).get(m, m), renamed(r.latent), r))
    cmap = matplotlib.colormaps["tab20"].resampled(P)
    fig = Figure(figsize=(1.25 * n_images + 0.9, 1.3 * len(rows)))
    axes = fig.subplots(len(rows), n_images, squeeze=False)
    for a, (name, Z, r) in enumerate(rows):
        E = potts_energy(np.asarray(Z).reshape(-1, H, W))
        for b in range(n_images):
            ax = axes[a, b]
            ax.imshow(Z[b].reshape(H, W), cmap=cmap, vmin=-0.5, vmax=P - 0.5,
                      interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"E={E[b]}", fontsize=6, pad=1.5)
            if b == 0:
                label = name if r is None else f"{name}\nacc {100 * r.accuracy:.0f}%"
                ax.set_ylabel(label, fontsize=6.5)
        for b in range(n_images):
            axes[0, b].set_title(f"class {D.y_train[b]}, E={potts_energy(truth[b].reshape(H, W))}",
                                 fontsize=6, pad=1.5)
    fig.suptitle(f"part labels of {n_images} training images, init {init} "
                 f"(E = Potts energy)", fontsize=7)
    fig.tight_layout(pad=0.3, rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=80)


#: Method keys of the command: (LatentSSVM method, random_bounds, bias).
METHODS = {"ccp": ("ccp", "walk", "potts"), "gmm-random": ("gmm-random", "walk", "potts"),
           "gmm-random-subset": ("gmm-random", "subset", "potts"),
           "gmm-biased": ("gmm-biased", "walk", "potts"),
           "gmm-biased-walk": ("gmm-biased", "walk", PottsBias(search="walk"))}


LABELS = {"ccp": "CCP", "gmm-random": "G-MM random (walk)",
          "gmm-random-subset": "G-MM random (subset S_t, paper)",
          "gmm-biased": "G-MM biased (Potts)",
          "gmm-biased-walk": "G-MM biased (Potts, walk from touching)"}


#: Methods whose runs are repeated over seeds from the coherent initialisations.
RANDOMISED = ("gmm-random", "gmm-random-subset")


def _data(gen: dict):
    """The scenes of the parameters ``gen`` (with the parts discovered for the coherent
    inits)."""
    g = dict(gen)
    return load_scenes(g.pop("seed"), g.pop("n_train"), g.pop("n_test"), **g)


def scenes(n_train: int = N_TRAIN, n_test: int = N_TEST, data_seed: int = 0,
           generator: Optional[Dict[str, Any]] = None, positions: float = 0.0) -> tuple:
    """The scenes of :func:`compare` (its arguments of the same names); returns (their
    parameters, data), drawn anew at every call (:func:`compare` takes them as ``data``)."""
    overrides = dict(generator or {})
    bad = sorted(set(overrides) - GENERATOR_KEYS)
    if bad:
        raise ValueError(f"generator: unknown parameter(s) {bad}; choose from "
                         f"{sorted(GENERATOR_KEYS)}.")
    gen = dict(overrides, seed=data_seed, n_train=n_train, n_test=n_test, positions=positions)
    return gen, _data(gen)


def lam_floor(D: SceneData, solver_tol: float) -> float:
    """The smallest lambda LatentSSVM accepts on the training scenes of ``D`` at
    ``solver_tol``."""
    return _learner_lam_floor(D.model(), D.X_train, D.y_train, solver_tol)


def _one(D, job):
    """Worker: one (method, init, seed) run on the scenes ``D``, single-threaded kernels."""
    from threadpoolctl import threadpool_limits
    key, init, seed, kw = job
    method, rb, bias = METHODS[key]
    with threadpool_limits(limits=1):
        z0 = initial_labels(D, init, seed if init == "random" else 0)
        return run_method(D, method, init, z0, random_bounds=rb, bias=bias, seed=seed, key=key,
                          **kw)


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
            lam: Optional[float] = None, max_iter: int = 200, tol: float = 1e-3,
            solver_tol: float = 1e-3, solver_max_iter: int = 1000, n_train: int = 300,
            n_test: int = 300, data_seed: int = 0, generator: Optional[Dict[str, Any]] = None,
            positions: float = 0.0, jobs: int = 1, progress: bool = True,
            data: Optional[tuple] = None) -> tuple:
    """Run every (method, init, seed); returns (data, results, generator parameters, lam).

    ``generator`` overrides make_texture_scenes' parameters (SCENES_DEFAULTS),
    e.g. ``dict(noise=0.5, n_bins=64)``; the values are validated there.
    ``positions``: scale of the region-position features (see :func:`load_scenes`).
    ``data``: the scenes, as :func:`scenes` returns them for the same arguments (parameters,
    data), when the caller has drawn them already; else they are drawn here. They are drawn
    once and shared by every run (:func:`run_jobs`'s ``shared``).
    """
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; choose from {list(METHODS)}")
    lam = LAM if lam is None else lam
    gen, D = scenes(n_train, n_test, data_seed, generator, positions) if data is None else data
    kw = dict(lam=lam, eta=eta, tol=tol, max_iter=max_iter, solver_tol=solver_tol,
              solver_max_iter=solver_max_iter)
    todo = [(m, i, s, kw) for (m, i, s) in jobs_for(methods, inits, n_seeds)]
    def describe(r):
        return (f"{r.init:>12} {LABELS[r.method]:<32} seed {r.seed}: F = {r.objective:.4f}, "
                f"test accuracy {100 * r.accuracy:.1f} %, {r.n_iter} it, {r.seconds:.1f} s")

    results = run_jobs(_one, todo, jobs, describe if progress else None, shared=D)
    return D, results, D.params, lam


def tables(D, results, methods: Sequence[str], inits: Sequence,
           oracle_result: Optional[dict] = None) -> str:
    """Markdown: Table 3 (test accuracy, objective), per-run figures, Table 4's scene rows."""
    names = [init_name(i) for i in inits]
    rows = summarize(results, methods, names, LABELS)
    if oracle_result is not None:
        rows.append(["oracle (true parts fixed)"] +
                    [f"{100 * oracle_result['accuracy']:.1f}",
                     f"{oracle_result['objective']:.4f}"] * len(names))
    head = ["method"] + [f"{i} {w}" for i in names for w in ("acc. %", "objective")]
    out = [markdown_table(head, rows), ""]
    extra = []
    for m, i, rs in cells(results, methods, names):
        extra.append([LABELS[m], i, len(rs),
                      f"{mean(rs, lambda r: r.n_iter):.1f}",
                      f"{100 * mean(rs, lambda r: r.changed):.1f}",
                      f"{100 * mean(rs, lambda r: r.parts_init):.1f} → "
                      f"{100 * mean(rs, lambda r: r.parts_train):.1f}",
                      f"{mean(rs, lambda r: r.coherence_init):.1f} → "
                      f"{mean(rs, lambda r: r.coherence):.1f}",
                      f"{mean(rs, lambda r: r.seconds):.1f}",
                      f"{mean(rs, lambda r: r.seconds / max(r.n_iter, 1)):.2f}",
                      sum(len(r.invariant_violations) for r in rs)])
    out.append(markdown_table(["method", "init", "runs", "iterations", "labels changed %",
                               "parts = truth % (init → final)",
                               "Potts energy per image (init → final)", "s / fit",
                               "s / iteration", "invariant violations"], extra))
    paired = []
    for m, i, rs, base in paired_with_ccp(results, methods, names, "seed", fallback=0):
        dF = np.array([r.objective - b.objective for r, b in zip(rs, base)])
        dA = 100 * np.array([r.accuracy - b.accuracy for r, b in zip(rs, base)])
        paired.append(paired_row(LABELS[m], i, dF, dA, better=+1))
    if paired:
        out += ["", "Paired with CCP from the same initial labels (difference = method - "
                "CCP; for G-MM random from a coherent init every seed is paired with the "
                "one CCP run):", "",
                markdown_table(["method", "init", "objective difference",
                                "runs with lower objective", "accuracy difference (points)",
                                "runs better/worse/all"], paired)]
    # Table 4's scene rows: iterations to converge
    t4 = []
    for i in names:
        row = [i]
        for m in methods:
            rs = runs_of(results, m, i)
            row.append(_ms([r.n_iter for r in rs], ".1f") if rs else "-")
        t4.append(row)
    out += ["", "Iterations to converge (Table 4's scene rows; mean ± std over runs):", "",
            markdown_table(["init"] + [LABELS[m] for m in methods], t4)]
    return "\n".join(out)


def run_csv(results) -> str:
    """Every run as one CSV line."""
    return runs_csv(results, ["method", "init", "seed", "objective", "accuracy", "n_iter",
                              "seconds", "changed", "parts_init", "parts_train",
                              "coherence_init", "coherence", "cp_iters"],
                    order=("init", "method", "seed"))


def figure_path(pattern: str, init: str) -> str:
    tag = init.replace("lambda=", "lambda").replace(".", "")
    if "{init}" in pattern:
        return pattern.replace("{init}", tag)
    root, ext = os.path.splitext(pattern)
    return f"{root}_{tag}{ext or '.png'}"

