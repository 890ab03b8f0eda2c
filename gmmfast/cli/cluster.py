"""``gmmfast cluster FILE -k K``: k-means by G-MM on your own data (CSV, text or .npy)."""
from __future__ import annotations

import inspect
import sys
import time
from pathlib import Path

import numpy as np

from .._atomic import atomic_open
from ._args import (check_distinct_files, check_output_file, eta, fail, nonnegative_int,
                    positive_int, writing)

CMD = "cluster"


def _estimator_defaults() -> dict:
    """GMMKMeans's default parameter values, read from its signature: the one source of the
    defaults this command shows and uses."""
    from ..cluster import GMMKMeans
    return {name: param.default
            for name, param in inspect.signature(GMMKMeans).parameters.items()}


def add_parser(sub) -> None:
    from ..cluster._gmm_kmeans import SELECTIONS
    from ..cluster._init import INITS
    from ..cluster._samplers import SAMPLERS

    default = _estimator_defaults()
    p = sub.add_parser("cluster", help="cluster your own data (CSV, text or .npy) by G-MM",
                       description="k-means by G-MM on your own data (CSV, text or .npy); "
                                   "prints the objective, writes labels and centers.")
    p.add_argument("file", help="points, one per row: .npy, or CSV/whitespace text "
                                "(an optional header line is skipped)")
    p.add_argument("-k", "--n-clusters", type=positive_int, required=True)
    p.add_argument("--eta", type=eta, default=default["eta"],
                   help="progress coefficient in (0, 1]; 1 is Lloyd's k-means "
                        "(default: %(default)s)")
    p.add_argument("--init", default=default["init"], choices=INITS,
                   help="initialisation (default: %(default)s)")
    p.add_argument("--selection", default=default["selection"],
                   choices=SELECTIONS,
                   help="bound selection (default: %(default)s)")
    # None: not given (only --selection random takes it); the estimator's default is shown
    p.add_argument("--sampler", default=None, choices=SAMPLERS,
                   help="sampler of random bounds; only with --selection random (the other "
                        f"selections draw no random bounds) (default: {default['sampler']})")
    p.add_argument("--n-init", type=positive_int, default=default["n_init"],
                   help="runs; the best is kept (default: %(default)s)")
    p.add_argument("--max-iter", type=positive_int, default=default["max_iter"],
                   help="G-MM iterations per run at most (default: %(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="random seed (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, help="write one label per line here")
    p.add_argument("--centers", default=None, help="write the centers here (CSV)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print one line per G-MM iteration (objective, gap, points that "
                        "changed cluster, seconds) and one per phase (initialisation, "
                        "escapes, finer level); each escape proposal and finer level counts "
                        "its iterations from 1 again. No progress bar")
    dist = p.add_argument_group("on a Dask cluster (pip install \"gmmfast[dask]\")")
    dist.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="run on the dask.distributed scheduler at ADDRESS; a .npy file is "
                           "read by the workers in row blocks (they must see the same path)")
    dist.add_argument("--workers", type=int, default=None, metavar="N",
                      help="run on a local Dask cluster of N worker processes (1 thread each); "
                           "a .npy file larger than memory is memory-mapped in row blocks")
    dist.add_argument("--chunk-mb", type=float, default=64.0,
                      help="size of a row block of the .npy file in MB (default 64)")
    p.set_defaults(func=run)


def _dask_client(args):
    """A dask.distributed client for --scheduler/--workers (None without them)."""
    if args.scheduler is None and args.workers is None:
        return None
    if args.scheduler is not None and args.workers is not None:
        fail(CMD, "give --scheduler or --workers, not both")
    if args.workers is not None and args.workers < 1:
        fail(CMD, f"--workers must be >= 1, got {args.workers}")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        fail(CMD, "--scheduler/--workers need Dask: pip install \"gmmfast[dask]\"")
    if args.scheduler is not None:
        return Client(args.scheduler)
    return Client(LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               processes=True, dashboard_address=None))


def _run_dask(args, path, client) -> int:
    """``gmmfast cluster`` on Dask: X read in row blocks, labels written block by block."""
    import dask.array as da

    from ..datasets import read_npy_dask, read_points
    try:
        if path.suffix == ".npy":
            X = read_npy_dask(path, int(args.chunk_mb * 2**20))
        else:
            X = read_points(path)
            X = da.from_array(X, chunks=(max(1, int(args.chunk_mb * 2**20) // (8 * X.shape[1])),
                                         X.shape[1]))
    except ValueError as exc:
        fail(CMD, f"cannot read {path}: {exc}")
    est, seconds = _fit(args, X)
    n, d = X.shape
    p = est.get_params()
    workers = len(client.scheduler_info()["workers"])
    print(f"{path.name}: n={n}, d={d}, k={args.n_clusters}; G-MM (selection={p['selection']}, "
          f"eta={p['eta']:g}, init={p['init']}) on Dask, {workers} workers, "
          f"{X.numblocks[0]} row blocks")
    print(f"objective (SSE) {est.inertia_:.6g}, per point {est.inertia_ / n:.6g}; "
          f"{est.n_iter_} iterations, {seconds:.2f} s")
    sizes = np.zeros(args.n_clusters, dtype=np.int64)
    if args.output:
        with writing(CMD), atomic_open(args.output) as fh:
            for block in est.labels_.to_delayed().ravel():
                labels = block.compute()
                sizes += np.bincount(labels, minlength=args.n_clusters)
                np.savetxt(fh, labels, fmt="%d")
    else:
        sizes = da.bincount(est.labels_, minlength=args.n_clusters).compute()
    print(f"cluster sizes: min {sizes.min()}, median {int(np.median(sizes))}, max {sizes.max()}"
          f"; empty clusters: {int((sizes == 0).sum())}")
    if args.output:
        print(f"wrote {args.output}")
    if args.centers:
        _write_centers(args.centers, est.cluster_centers_)
    return 0


def _write_centers(path: str, centers) -> None:
    with writing(CMD), atomic_open(path) as fh:
        np.savetxt(fh, centers, delimiter=",", fmt="%.10g")
    print(f"wrote {path}")


def _fit(args, X):
    """GMMKMeans from the command line's options, fitted to X (in memory or a dask array);
    returns it and the seconds the fit took."""
    from ..cluster import GMMKMeans
    params = {name: getattr(args, name) for name in ("eta", "init", "selection", "sampler")
              if getattr(args, name) is not None}
    est = GMMKMeans(args.n_clusters, n_init=args.n_init, max_iter=args.max_iter,
                    random_state=args.seed, verbose=int(args.verbose), **params)
    t0 = time.perf_counter()
    try:
        est.fit(X)
    except ValueError as exc:
        fail(CMD, str(exc))
    return est, time.perf_counter() - t0


def run(args) -> int:
    from ..datasets import read_points
    from .._validation import check_input_file

    if not 0 < args.chunk_mb < float("inf"):      # was: inf crashed int(), checked with Dask only
        fail(CMD, f"--chunk-mb must be a finite number > 0, got {args.chunk_mb}")
    if args.sampler is not None and args.selection != "random":
        fail(CMD, "--sampler applies only to --selection random (the other selections draw "
                  "no random bounds); add --selection random or drop --sampler")
    for option, out in (("-o/--output", args.output), ("--centers", args.centers)):
        if out:
            check_output_file(CMD, option, out)
    check_distinct_files(CMD, [("input", args.file), ("-o/--output", args.output),
                               ("--centers", args.centers)])
    path = Path(args.file)
    if not path.exists():
        fail(CMD, f"no such file: {path}")
    try:                    # a folder, a pipe or a device: named now, not a hang or a traceback
        check_input_file(path)
    except ValueError as exc:
        fail(CMD, str(exc).rstrip("."))
    client = _dask_client(args)
    if client is not None:
        try:
            return _run_dask(args, path, client)
        finally:
            cluster = client.cluster
            client.close()
            if cluster is not None:
                cluster.close()
    try:
        X = read_points(path)
    except (ValueError, OSError) as exc:
        fail(CMD, f"cannot read {path}: {exc}")
    est, seconds = _fit(args, X)
    n, d = X.shape
    sizes = np.bincount(est.labels_, minlength=args.n_clusters)
    p = est.get_params()
    print(f"{path.name}: n={n}, d={d}, k={args.n_clusters}; G-MM (selection={p['selection']}, "
          f"eta={p['eta']:g}, init={p['init']})")
    print(f"objective (SSE) {est.inertia_:.6g}, per point {est.inertia_ / n:.6g}; "
          f"{est.n_iter_} iterations, {seconds:.2f} s")
    print(f"cluster sizes: min {sizes.min()}, median {int(np.median(sizes))}, max {sizes.max()}"
          f"; empty clusters: {int((sizes == 0).sum())}")
    if args.output:
        with writing(CMD), atomic_open(args.output) as fh:
            np.savetxt(fh, est.labels_, fmt="%d")
        print(f"wrote {args.output}")
    if args.centers:
        _write_centers(args.centers, est.cluster_centers_)
    if not args.output and not args.centers:
        print("(use -o labels.csv to save the labels)", file=sys.stderr)
    return 0
