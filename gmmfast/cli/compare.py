"""``gmmfast compare``: G-MM against k-means from identical initialisations (the paper's Table 1).

A thin wrapper over :mod:`gmmfast.experiments.table1`: parses and validates the
arguments, runs the trials, prints the tables and writes the files.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import List, Sequence

from ..experiments.table1 import (DEFAULT_TRIALS, INITS, METHODS, OUTPUT_FILES, details,
                                  load_dataset, run_trials, summarize, table1, write_outputs)
from ._args import (check_distinct_files, check_output_dir, check_output_file, eta, fail,
                    nonnegative_int, positive_int, walk_steps, writing)

CMD = "compare"


def _csv_list(text: str, allowed: Sequence[str], name: str) -> List[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        fail(CMD, f"{name} must be a comma-separated list of {', '.join(allowed)}; "
                  f"got {text!r}")
    return items


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare", help="G-MM vs k-means from identical initialisations (the paper's Table 1)",
        description="G-MM against k-means from identical initialisations, in the layout of the "
                    "paper's Table 1 (mean +- std and best SSE per point per initialisation).")
    p.add_argument("--dataset", default="gmm200",
                   help="gmm200 (default), norm25, d31, r15, or a CSV/.npy file of points")
    p.add_argument("-k", "--n-clusters", type=positive_int, default=None,
                   help="clusters (default: the data set's number of true clusters)")
    p.add_argument("--inits", default=",".join(INITS),
                   help=f"comma-separated initialisations (default: {','.join(INITS)})")
    p.add_argument("--methods", default=",".join(METHODS),
                   help="comma-separated: k-means, gmm-paper (the paper's uniform walk with "
                        "--eta), gmm (package defaults); default: all three")
    p.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS,
                   help=f"trials per initialisation (default {DEFAULT_TRIALS}; the paper: 50)")
    p.add_argument("--eta", type=eta, default=0.02,
                   help="progress coefficient of gmm-paper (default 0.02, as in the paper)")
    p.add_argument("--walk-steps", type=walk_steps, default="auto",
                   help="walk proposals per iteration of gmm-paper (default: auto)")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the data and the trials")
    p.add_argument("--data-home", default=None,
                   help="folder with the SIPU files (default: $GMMFAST_DATA or ~/gmmfast_data; "
                        "downloaded there if missing)")
    p.add_argument("--out", default=None, help="write compare.csv, compare.json and PNGs here")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="OpenMP threads (default: all)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    inits = _csv_list(args.inits, INITS, "--inits")
    methods = _csv_list(args.methods, METHODS, "--methods")
    if args.out:
        check_output_dir(CMD, "--out", args.out)
        if os.path.isdir(args.out):     # its files: none a folder or a read-only file
            for name in OUTPUT_FILES:
                check_output_file(CMD, "--out", os.path.join(args.out, name))
        # the outputs have fixed names in --out: none may be the data file (--dataset)
        check_distinct_files(CMD, [("input", args.dataset)] +
                             [("--out", os.path.join(args.out, name)) for name in OUTPUT_FILES],
                             remedy="give another --out folder")
    try:
        data = load_dataset(args.dataset, data_home=args.data_home, seed=args.seed)
    except (ValueError, OSError) as exc:
        fail(CMD, str(exc))
    k = args.n_clusters or data.k
    if not k:
        fail(CMD, "-k is required for a data file")
    n = data.X.shape[0]
    if k > n:
        fail(CMD, f"-k {k} is more than the {n} points of {data.name}")
    progress = not args.no_progress and sys.stderr.isatty()
    limits = (threadpool_limits(limits=args.threads, user_api="openmp")
              if args.threads is not None else None)
    t0 = time.perf_counter()
    try:
        records = run_trials(data, inits=inits, trials=args.trials, eta=args.eta,
                             methods=methods, seed=args.seed, walk_steps=args.walk_steps,
                             progress=progress, k=k)
    except ValueError as exc:
        fail(CMD, str(exc))
    finally:
        if limits is not None:
            limits.restore_original_limits()
    wall = time.perf_counter() - t0
    summary = summarize(records)
    n, d = data.X.shape
    print(f"{data.name}: n={n}, d={d}, k={k}; {args.trials} trials per initialisation; "
          "every method starts from the same centers in a trial.")
    print("Objective: SSE per point (k-means objective / n); lower is better.\n")
    print(table1(summary, methods, inits, args.eta))
    print()
    print(details(summary, methods, inits, args.eta))
    bad = sum(r["invariant_violations"] for r in records)
    print(f"\n{len(records)} fits in {wall:.1f} s; G-MM invariant violations: {bad}.")
    print("k-means keeps an empty cluster's previous center (the paper's code moved it to the "
          "origin).")
    if args.out:
        config = dict(dataset=args.dataset, name=data.name, n=n, d=d, k=k, inits=inits,
                      methods=methods, trials=args.trials, eta=args.eta,
                      walk_steps=args.walk_steps, seed=args.seed, wall_seconds=wall,
                      threads=args.threads or os.cpu_count())
        with writing(CMD):
            written = write_outputs(Path(args.out), data, records, summary, config, methods,
                                    inits, args.eta, k)
        for path in written:
            print(f"wrote {path}")
    return 0 if bad == 0 else 1

