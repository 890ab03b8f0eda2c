"""Where a GMMKMeans() fit spends its time, level by level and pass by pass, inside one process.

    python bench/passes.py --cell 10000000,16,1000            # the data scale.py makes
    python bench/passes.py --data X.npy --k 1000 --min-rows 1000000

A tool for judging a change to the kernels or the levels, not a published result: it prints
and writes nothing under bench/results/. It fits the default ``GMMKMeans(k)`` on one
thread and prints each level (rows, iterations, seconds) and, for every pass on at least
``--min-rows`` rows, its time: the exact passes (a level's first, a full search where no
bounds keep a row), and the incremental Lloyd passes with the labels they changed, the rows
they searched and tightened (read X for), and how many centers were jumped ("new" when the
pass changed them). Run it
from each build's tree (``PYTHONPATH`` at it, as every bench script) and compare the
incremental passes' times: on a virtual machine whose host takes freed pages back,
whole-process times of fresh processes depend on what ran just before (see
CONTRIBUTING.md), and so does an exact pass that first touches its arrays (at 1e7 rows the
same one took 0.56 or 1.15 s); the incremental passes much less so.

Data: ``--cell n,d,k`` uses scale.py's mixture file (float64 below 1e7 rows, float32 from
1e7), made in ``--data-dir`` if missing; ``--data`` any 2-d .npy file.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from _common import mixture_file
from scale import DATA_DIR, cell_dtype, data_path


def parse_cell(text: str):
    """'n,d,k' (n may be written 1e7) -> (n, d, k)."""
    try:
        n, d, k = (int(float(v)) for v in text.split(","))
    except ValueError:
        raise SystemExit(f"--cell must be 'n,d,k' with positive numbers, got {text!r}")
    if min(n, d, k) < 1 or k > n:
        raise SystemExit(f"--cell needs n >= k >= 1 and d >= 1, got {text!r}")
    return n, d, k


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--cell", help="n,d,k of scale.py's mixture (e.g. 1e7,16,1000)")
    src.add_argument("--data", type=Path, help="a 2-d .npy file")
    ap.add_argument("--k", type=int, help="clusters (with --data)")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--min-rows", type=int, default=1_000_000,
                    help="print the passes on at least this many rows")
    ap.add_argument("--seed", type=int, default=0, help="random_state of the fit")
    args = ap.parse_args(argv)
    if args.cell:
        n, d, k = parse_cell(args.cell)
        dtype = cell_dtype(n, memmap=False)
        path = data_path(args.data_dir, n, d, k, dtype)
        mixture_file(path, n, d, k, dtype)
    else:
        if args.k is None or args.k < 1:
            raise SystemExit("--data needs --k, a positive number of clusters")
        if not args.data.is_file():
            raise SystemExit(f"--data: no such file {args.data}")
        path, k = args.data, args.k
    X = np.load(path)
    if X.ndim != 2 or X.shape[0] < k:
        raise SystemExit(f"{path}: a 2-d array of at least k = {k} rows is needed, got "
                         f"shape {X.shape}")

    import gmmfast
    from gmmfast.cluster import _family, _pass
    from threadpoolctl import threadpool_limits

    step, plan = _pass.IncrementalLloyd.step, _pass.IncrementalLloyd._plan
    jumped = {}

    def planned(self, c64):
        out = plan(self, c64)
        group = self.jumped if out.regroup is None else out.regroup
        jumped[id(self)] = f"{group.shape[0]:>3}{'' if out.regroup is None else ' (new)'}"
        return out

    def timed(self, centers):
        t = time.perf_counter()
        out = step(self, centers)
        ms = (time.perf_counter() - t) * 1e3
        if self.X.shape[0] >= args.min_rows:
            print(f"  {self.X.shape[0]:>11,} rows, pass {self.passes:>3}: {ms:8.1f} ms, "
                  f"changed {out.changed:>8,}, searched {out.searched:>10,}, tightened "
                  f"{out.tightened:>11,}, jumped {jumped.get(id(self), '  0')}", flush=True)
            totals[self.X.shape[0]] = totals.get(self.X.shape[0], 0.0) + ms
        return out

    assign = _family.assign

    def exact(X_, *a, **kw):
        t = time.perf_counter()
        out = assign(X_, *a, **kw)
        if X_.shape[0] >= args.min_rows:
            ms = (time.perf_counter() - t) * 1e3
            print(f"  {X_.shape[0]:>11,} rows, exact pass: {ms:8.1f} ms, searched "
                  f"{out.searched:>10,}", flush=True)
        return out

    totals = {}
    _pass.IncrementalLloyd._plan, _pass.IncrementalLloyd.step = planned, timed
    _family.assign = exact
    print(f"{path.name}: {X.shape[0]:,} x {X.shape[1]} {X.dtype}, k = {k}, gmmfast from "
          f"{Path(gmmfast.__file__).parent}, kernels {gmmfast.kernel_info()['simd']}, "
          f"one thread", flush=True)
    with threadpool_limits(1):
        t = time.perf_counter()
        est = gmmfast.GMMKMeans(k, random_state=args.seed).fit(X)
        seconds = time.perf_counter() - t
    for rows, ms in sorted(totals.items()):
        print(f"incremental passes on {rows:,} rows: {ms / 1e3:.3f} s in all")
    levels = " -> ".join(f"{lv.rows:,} rows: {lv.n_iter} it, {lv.seconds:.3f} s"
                         for lv in est.levels_)
    print(f"fit: {seconds:.3f} s, SSE/n {est.inertia_ / X.shape[0]:.4f}; levels: {levels}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
