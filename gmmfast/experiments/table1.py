"""The paper's Table 1: G-MM against k-means from identical initialisations (the paper's Table 1).

For every trial and initialisation scheme one set of initial centers is drawn
and every method starts from it:

- ``k-means``: Lloyd's algorithm (G-MM with eta = 1). An empty cluster keeps
  its previous center (the paper's code moved it to the origin instead).
- ``gmm-paper``: G-MM as in the paper: random valid bounds from the uniform
  random walk (``selection="random", sampler="uniform"``) with ``--eta``.
- ``gmm``: G-MM with the package defaults (see :class:`gmmfast.GMMKMeans`).

The objective is reported as SSE per point (the k-means objective divided by
n), mean +- std and best over the trials, as in the paper; with ground-truth
labels also the Centroid Index (0: every true cluster found).
"""
from __future__ import annotations

import csv
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .._atomic import atomic_open, atomic_path
from ..datasets import read_points
from .._validation import check_input_file
from ._tables import markdown_table

INITS = ("forgy", "random-partition", "k-means++")


INIT_TITLES = {"forgy": "forgy", "random-partition": "random partition", "k-means++": "k-means++"}


METHODS = ("k-means", "gmm-paper", "gmm")


DATASETS = ("gmm200", "norm25", "d31", "r15")


#: Trials per initialisation by default (the paper used 50: --trials 50). The default run on
#: GMM-200 takes about 15 s on 2 quiet cores, about 2 minutes on 2 cores shared with other jobs.
DEFAULT_TRIALS = 20


@dataclass
class Dataset:
    """Points, optional ground-truth labels and the number of clusters to look for."""

    name: str
    X: np.ndarray
    y: Optional[np.ndarray]
    k: int


def load_dataset(spec: str, *, data_home: Optional[str] = None, seed: int = 0) -> Dataset:
    """``gmm200``, ``norm25`` (generated with ``seed``), ``d31``, ``r15`` (SIPU) or a file.

    A file is a CSV/whitespace text table or a ``.npy`` array, one point per
    row; it has no ground truth, so ``-k`` must be given.
    """
    from ..datasets import load_sipu, make_gmm200, make_norm25

    key = spec.lower()
    if key == "gmm200":
        X, y = make_gmm200(seed)
        return Dataset("GMM-200", X, y, 200)
    if key == "norm25":
        X, y = make_norm25(seed)
        return Dataset("Norm-25", X, y, 25)
    if key in ("d31", "r15"):
        X, y = load_sipu(key, data_home)
        return Dataset(key.upper(), X, y, int(y.max()) + 1)
    path = Path(spec)
    check_input_file(path)          # a folder, a pipe or a device: named
    if not path.is_file():
        note = " (the paper's Cloud set is not available)" if key == "cloud" else ""
        raise ValueError(f"--dataset must be {', '.join(DATASETS)} or an existing file, "
                         f"got {spec!r}{note}.")
    return Dataset(path.name, read_points(path), None, 0)


def method_params(method: str, eta: float, walk_steps) -> dict:
    """GMMKMeans parameters of a method (besides init and random_state)."""
    if method == "k-means":
        return dict(eta=1.0)
    if method == "gmm-paper":
        return dict(eta=eta, selection="random", sampler="uniform", walk_steps=walk_steps)
    if method == "gmm":
        return {}
    raise ValueError(f"methods must be among {METHODS}, got {method!r}.")


def method_title(method: str, eta: float) -> str:
    from ..cluster import GMMKMeans

    if method == "k-means":
        return "k-means"
    if method == "gmm-paper":
        return f"G-MM (paper: uniform walk, eta={eta:g})"
    d = GMMKMeans().get_params()
    return f"G-MM (defaults: {d['selection']}, eta={d['eta']:g})"


def run_trials(data: Dataset, *, inits: Sequence[str] = INITS, trials: int = 50,
               eta: float = 0.02, methods: Sequence[str] = METHODS, seed: int = 0,
               walk_steps="auto", progress: bool = False, k: Optional[int] = None) -> List[dict]:
    """Run every method from the same initial centers; one record per (init, trial, method)."""
    from ..cluster import GMMKMeans, initial_centers
    from ..metrics import centroid_index, centroids_from_labels

    k = k or data.k
    X = data.X
    n = X.shape[0]
    sw = np.ones(n)
    truth = centroids_from_labels(X, data.y) if data.y is not None else None
    records = []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(inits) * trials * len(methods), desc=f"{data.name} k={k}",
                   leave=False)
    try:
        for i_init, init in enumerate(inits):
            for trial in range(trials):
                w0 = initial_centers(X, k, init, sample_weight=sw, n_threads=1,
                                     random_state=np.random.default_rng([seed, i_init, trial]))
                for i_m, method in enumerate(methods):
                    est = GMMKMeans(k, init=w0, random_state=np.random.default_rng(
                        [seed, i_init, trial, i_m + 1]), **method_params(method, eta, walk_steps))
                    t0 = time.perf_counter()
                    est.fit(X)
                    seconds = time.perf_counter() - t0
                    h = est.history_
                    rec = dict(dataset=data.name, k=k, init=init, trial=trial, method=method,
                               sse_per_point=est.inertia_ / n, n_iter=est.n_iter_,
                               seconds=seconds,
                               empty_clusters=int(k - np.unique(est.labels_).shape[0]),
                               acceptance=float(h.accepted.sum() / h.proposals.sum())
                               if h.proposals.sum() else float("nan"),
                               invariant_violations=len(h.invariant_violations()))
                    if truth is not None:
                        rec["centroid_index"] = centroid_index(est.cluster_centers_, truth)
                    records.append(rec)
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return records


def summarize(records: List[dict]) -> Dict[str, Dict[str, dict]]:
    """Per method and init: mean, std, best SSE/n, iterations, seconds, Centroid Index."""
    out: Dict[str, Dict[str, dict]] = {}
    for r in records:
        out.setdefault(r["method"], {}).setdefault(r["init"], []).append(r)
    summary: Dict[str, Dict[str, dict]] = {}
    for method, by_init in out.items():
        summary[method] = {}
        for init, rs in by_init.items():
            sse = np.array([r["sse_per_point"] for r in rs])
            its = np.array([r["n_iter"] for r in rs])
            secs = np.array([r["seconds"] for r in rs])
            s = dict(trials=len(rs), mean=float(sse.mean()), std=float(sse.std()),
                     best=float(sse.min()), iter_mean=float(its.mean()),
                     iter_std=float(its.std()), seconds_mean=float(secs.mean()),
                     seconds_median=float(np.median(secs)))
            if "centroid_index" in rs[0]:
                ci = np.array([r["centroid_index"] for r in rs])
                s.update(ci_mean=float(ci.mean()), ci_zero=int((ci == 0).sum()))
            summary[method][init] = s
    return summary


def fmt(v: float) -> str:
    """Four decimals, one above 10, scientific notation for large or tiny values."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    if abs(v) >= 1e4 or abs(v) < 1e-2:
        return f"{v:.2e}"
    return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"


def table1(summary: Dict[str, Dict[str, dict]], methods: Sequence[str], inits: Sequence[str],
           eta: float) -> str:
    """The paper's Table 1 layout (markdown): avg +- std and best per initialisation."""
    head = ["method"]
    for init in inits:
        head += [f"{INIT_TITLES[init]} avg +- std", "best"]
    rows = []
    for m in methods:
        row = [method_title(m, eta)]
        for init in inits:
            s = summary[m][init]
            row += [f"{fmt(s['mean'])} +- {fmt(s['std'])}", fmt(s["best"])]
        rows.append(row)
    return markdown_table(head, rows)


def details(summary: Dict[str, Dict[str, dict]], methods: Sequence[str],
            inits: Sequence[str], eta: float) -> str:
    """Iterations, seconds per fit and Centroid Index per method and initialisation."""
    has_ci = "ci_mean" in next(iter(next(iter(summary.values())).values()))
    head = ["method", "init", "iterations", "s / fit (mean)"]
    if has_ci:
        head += ["Centroid Index (mean)", "CI = 0"]
    rows = []
    for m in methods:
        for init in inits:
            s = summary[m][init]
            row = [method_title(m, eta), INIT_TITLES[init],
                   f"{s['iter_mean']:.1f} +- {s['iter_std']:.1f}", f"{s['seconds_mean']:.3f}"]
            if has_ci:
                row += [f"{s['ci_mean']:.2f}", f"{s['ci_zero']}/{s['trials']}"]
            rows.append(row)
    return markdown_table(head, rows)


def plot_objectives(records: List[dict], methods: Sequence[str], inits: Sequence[str],
                    eta: float, path: Path, title: str) -> None:
    """Strip plot of SSE/n per trial, one column per (init, method); identical inits joined."""
    from matplotlib.figure import Figure     # not pyplot: the caller's backend is left alone

    fig = Figure(figsize=(3.2 * len(inits), 3.2))
    axes = fig.subplots(1, len(inits), squeeze=False, sharey=False)
    colors = {"k-means": "tab:red", "gmm-paper": "tab:blue", "gmm": "tab:green"}
    for ax, init in zip(axes[0], inits):
        by = {m: np.array([r["sse_per_point"] for r in records
                           if r["init"] == init and r["method"] == m]) for m in methods}
        for x, m in enumerate(methods):
            v = by[m]
            jitter = np.linspace(-0.15, 0.15, v.shape[0]) if v.shape[0] > 1 else np.zeros(1)
            ax.scatter(x + jitter, v, s=8, color=colors.get(m, "k"), alpha=0.7)
            ax.hlines(v.mean(), x - 0.3, x + 0.3, color="k", lw=1.5)
        ax.set_xticks(range(len(methods)))
        ax.set_xticklabels([{"k-means": "k-means", "gmm-paper": "G-MM\npaper",
                             "gmm": "G-MM\ndefault"}[m] for m in methods], fontsize=8)
        ax.set_title(INIT_TITLES[init], fontsize=9)
        vals = np.concatenate(list(by.values()))
        if vals.max() > 20 * vals.min() > 0:
            ax.set_yscale("log")
    axes[0][0].set_ylabel("SSE per point (bar: mean)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def plot_clusterings(X: np.ndarray, y: Optional[np.ndarray], panels: List[tuple],
                     path: Path, title: str = "") -> None:
    """Side by side 2-D scatter plots: ground truth (if any) and (name, labels, centers) panels."""
    from matplotlib.figure import Figure     # not pyplot: the caller's backend is left alone

    allp = ([("ground truth", y, None)] if y is not None else []) + list(panels)
    fig = Figure(figsize=(3.6 * len(allp), 3.6))
    axes = fig.subplots(1, len(allp), squeeze=False)
    for ax, (name, labels, centers) in zip(axes[0], allp):
        ax.scatter(X[:, 0], X[:, 1], c=labels % 20, cmap="tab20", s=2, linewidths=0)
        if centers is not None:
            ax.scatter(centers[:, 0], centers[:, 1], marker="x", c="k", s=25, linewidths=1.2)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal", adjustable="datalim")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=72)


#: The files :func:`write_outputs` writes in its folder (the figures only with matplotlib,
#: clusterings.png only for 2-d points).
OUTPUT_FILES = ("compare.csv", "compare.json", "objective.png", "clusterings.png")


def write_outputs(out: Path, data: Dataset, records: List[dict], summary: dict,
                  config: dict, methods: Sequence[str], inits: Sequence[str], eta: float,
                  k: int) -> List[Path]:
    """compare.csv (one row per fit), compare.json (config + summary), PNG figures; each
    written whole or not at all (:mod:`gmmfast._atomic`; an OSError names its file)."""
    from ..cluster import GMMKMeans, initial_centers

    csv_name, json_name, objective_name, clusterings_name = OUTPUT_FILES
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with atomic_open(out / csv_name, newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(records[0]))
        w.writeheader()
        w.writerows(records)
    written.append(out / csv_name)
    with atomic_open(out / json_name) as fh:
        json.dump(dict(config=config, summary=summary), fh, indent=1)
    written.append(out / json_name)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: no figures (pip install matplotlib)", file=sys.stderr)
        return written
    with atomic_path(out / objective_name) as tmp:
        plot_objectives(records, methods, inits, eta, tmp,
                        f"{data.name}, k={k}: SSE per point over {config['trials']} trials")
    written.append(out / objective_name)
    if data.X.shape[1] == 2:
        init = "random-partition" if "random-partition" in inits else inits[0]
        w0 = initial_centers(data.X, k, init, n_threads=1, random_state=np.random.default_rng(
            [config["seed"], list(inits).index(init), 0]))
        panels = []
        for i_m, m in enumerate(methods):
            est = GMMKMeans(k, init=w0, random_state=np.random.default_rng(
                [config["seed"], list(inits).index(init), 0, i_m + 1]),
                **method_params(m, eta, config["walk_steps"])).fit(data.X)
            panels.append((f"{method_title(m, eta)}\nSSE/n = {est.inertia_ / data.X.shape[0]:.4g}",
                           est.labels_, est.cluster_centers_))
        with atomic_path(out / clusterings_name) as tmp:
            plot_clusterings(data.X, data.y, panels, tmp,
                             f"{data.name}: one {INIT_TITLES[init]} initialisation (trial 0)")
        written.append(out / clusterings_name)
    return written

