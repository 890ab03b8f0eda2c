"""The iterations faiss's k-means runs with its defaults, cell by cell of the scale grid.

``faiss.Kmeans(d, k)`` is given ``niter=25``, but faiss stops as soon as an iteration
leaves its objective unchanged (a fixed point of Lloyd's map on its training rows), so it
often runs fewer: its work in a cell is (iterations run) x (training rows, at most
``max_points_per_centroid`` = 256 per center) + n rows searched for the labels. The
default ``GMMKMeans()`` gives its coarse level a budget of COARSE_SHARE times that work with
every one of the 25 iterations counted (``gmmfast.cluster._fit.coarse_level_passes``); this
script puts the two side by side: where faiss stops early, the coarse level alone spends
more than faiss's whole fit.

One process, one thread (OpenMP and BLAS), faiss's default seed; the data are bench/scale.py's
(its files in ``--data-dir``, generated there if missing). Measured per cell: the iterations
faiss ran (``len(Kmeans.iteration_stats)``), the training rows, the training time, and the
objective of its last two iterations.

    python bench/faiss_iterations.py [--cells '100000,128,100;...'] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from _common import markdown_table, mixture_file, write_results
from scale import DATA_DIR, GRID, cell_dtype, data_path, parse_cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=None,
                    help="bench/scale.py's --cells syntax (default: its 18 in-memory cells)")
    ap.add_argument("--data-dir", default=str(DATA_DIR),
                    help="where bench/scale.py's data files are (or are written)")
    args = ap.parse_args()
    # bench/scale.py's cells, in its syntax (the memmap cell only when asked for)
    cells = (parse_cells(args.cells, None) if args.cells
             else [c for c in GRID if not c[3]])

    import faiss
    from threadpoolctl import threadpool_limits
    from gmmfast.cluster._fit import (COARSE_SHARE, FAISS_ITERATIONS, FAISS_ROWS_PER_CENTER,
                                      GMMParams, coarse_level_passes)

    faiss.omp_set_num_threads(1)
    rows = []
    for n, d, k, memmap in cells:
        dtype = cell_dtype(n, memmap)
        path = data_path(args.data_dir, n, d, k, dtype)
        mixture_file(path, n, d, k, np.dtype(dtype))
        X = np.load(path, mmap_mode="r")
        X32 = np.ascontiguousarray(X, dtype=np.float32)   # float32 files: the map itself
        km = faiss.Kmeans(d, k)
        with threadpool_limits(1):
            t = time.perf_counter()
            km.train(X32)
            seconds = time.perf_counter() - t
        ran = len(km.iteration_stats)
        objs = [s["obj"] for s in km.iteration_stats[-2:]]
        train = min(n, km.cp.max_points_per_centroid * k)
        work = ran * train + n                      # training searches + the labelling search
        # the default fit's rule itself: its passes over a one-row level are row searches
        budget = coarse_level_passes(GMMParams(k=k), n, 1)
        print(f"{n}x{d}x{k}: {ran} of {km.cp.niter} iterations", flush=True)
        rows.append([f"{n:,} x {d}, k = {k}", f"{ran} of {km.cp.niter}", f"{train:,}",
                     f"{seconds:.3g}", " -> ".join(f"{o:.7g}" for o in objs), f"{work:,}",
                     f"{budget:,.0f}", f"{budget / work:.2f}"])
        del X, X32, km
    body = ("One thread; faiss.Kmeans(d, k) with its defaults (niter 25, "
            "max_points_per_centroid 256, seed 1234) trained on each cell's rows (float32). "
            "faiss's work: iterations run x training rows + n (its labelling search, "
            "index.search(X, 1)), in row searches against the k centers. The coarse level's "
            f"budget: COARSE_SHARE ({COARSE_SHARE}) x ({FAISS_ITERATIONS} x min(n, "
            f"{FAISS_ROWS_PER_CENTER} k) + n) row searches, the seeding included "
            "(gmmfast.cluster._fit.coarse_level_passes); the polish on every row comes on "
            "top of it. train s: Kmeans.train, one call (for float32 files, the 1e7-row "
            "cells, faiss draws its training rows through the file's memory map).\n\n"
            + markdown_table(["cell", "faiss iterations run", "training rows", "train s",
                              "objective, last two iterations", "faiss's work (row searches)",
                              "coarse level's budget (row searches)",
                              "budget / faiss's work"], rows))
    write_results("faiss_iterations", "The iterations faiss runs with its defaults, and the "
                  "coarse level's budget beside them", body,
                  versions={"faiss": faiss.__version__})


if __name__ == "__main__":
    main()
