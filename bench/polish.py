"""What the one-level polish does to the default fit on small data.

On every row (one level), GMMKMeans's default selection (merge-split, eta < 1) ends with
Lloyd's passes to a fixed point (``levels_[1]``) after G-MM and its escapes (``levels_[0]``),
which stop at a gap of ``tol * F(w_0)``. For R15, D31 and GMM-200 (data seeds 0 and 11), 5
seeds each: the objective without the polish (the same fit with
``GMMParams.polishes`` off, which is exactly ``levels_[0]``) and with it, the labels the
polish changed, its iterations and seconds, the seconds of both fits, and whether each
ends at a fixed point (every label its nearest center, every center its cluster's mean).

    python bench/polish.py [--data-home PATH] [--seeds 5]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import DATA, markdown_table, simd_name, write_results
from threadpoolctl import threadpool_limits

from gmmfast import GMMKMeans
from gmmfast.cluster import _fit
from gmmfast.datasets import load_sipu, make_gmm200
from gmmfast.metrics import centroids_from_labels


def at_fixed_point(est: GMMKMeans, X: np.ndarray) -> bool:
    return (np.array_equal(est.predict(X), est.labels_)
            and np.allclose(est.cluster_centers_, centroids_from_labels(X, est.labels_),
                            rtol=1e-12, atol=1e-12))


def unpolished(k: int, seed: int, X: np.ndarray) -> GMMKMeans:
    """The default fit as before the one-level polish."""
    orig = _fit.GMMParams.polishes
    _fit.GMMParams.polishes = property(lambda self: False)
    try:
        return GMMKMeans(k, random_state=seed).fit(X)
    finally:
        _fit.GMMParams.polishes = orig


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-home", default=str(DATA if DATA.exists()
                                               else Path("/work/shared/data")))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    sets = [(name.upper(), load_sipu(name, args.data_home, download_if_missing=False)[0], k)
            for name, k in (("r15", 15), ("d31", 31))]
    sets += [(f"GMM-200 (data seed {s})", make_gmm200(s)[0], 200) for s in (0, 11)]
    rows = []
    with threadpool_limits(args.threads):
        for name, X, k in sets:
            for seed in range(args.seeds):
                t = time.perf_counter()
                plain = unpolished(k, seed, X)
                t_plain = time.perf_counter() - t
                t = time.perf_counter()
                est = GMMKMeans(k, random_state=seed).fit(X)
                t_est = time.perf_counter() - t
                g, pol = est.levels_
                assert plain.inertia_ == g.objective
                assert np.array_equal(plain.cluster_centers_, g.centers)
                b, a = plain.inertia_, est.inertia_
                rows.append([name, len(X), k, seed, f"{b:.10g}", f"{a:.10g}",
                             f"{(b - a) / b:.2e}", int((plain.labels_ != est.labels_).sum()),
                             pol.n_iter, f"{pol.seconds * 1e3:.2f}", f"{t_plain:.3f}",
                             f"{t_est:.3f}",
                             f"{at_fixed_point(plain, X)} / {at_fixed_point(est, X)}"])
                print(rows[-1], flush=True)
    body = (f"SIMD level: {simd_name()}; {args.threads} thread(s). GMMKMeans's defaults "
            "(eta=0.1, merge-split, k-means++, patience='auto'); on these sets every fit "
            "is one level (all rows), then the polish on the same rows.\n\n"
            + markdown_table(["data", "n", "k", "seed", "SSE unpolished", "SSE polished",
                              "relative drop", "labels changed", "polish iterations",
                              "polish ms", "fit s unpolished", "fit s polished",
                              "fixed point unpolished / polished"], rows))
    write_results("polish", "The one-level polish of the default fit", body)


if __name__ == "__main__":
    main()
