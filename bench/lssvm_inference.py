"""Throughput of loss-augmented inference for LatentMulticlassModel (examples per second).

Question: how many examples per second does the kernel that every cutting
plane and every G-MM evaluation runs process at the experiment's shape
(L = 81 candidate windows, d = 64, 6 classes), and how does it compare with
the same computation in numpy (one BLAS matmul over all windows, then
argmax), in the same process, one after the other? Also: in the
one-example-at-a-time epochs (BCFW, DCD), one dgemm per example against the
loop vectorised over classes, which sets GEMM_MIN_SCORES (the pass itself
scores blocks of examples by one dgemm each).

The epochs are timed by calling their kernel, ``gmmfast._kernels._lssvm.bcfw_epoch``, with
the path forced each way: the one internal import of this script (the library chooses the
path itself and offers no switch).

Run: python bench/lssvm_inference.py
"""
from __future__ import annotations

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_limits

from _common import alternate, markdown_table, write_results
from gmmfast._kernels import _lssvm as K  # noqa: E402
from gmmfast.lssvm import LatentMulticlassModel  # noqa: E402

REPEATS = 7
#: BLAS limited to one thread, as LatentSSVM runs its passes (built once: building scans the
#: loaded libraries, which costs about a millisecond).
BLAS = ThreadpoolController()


def numpy_augmented(X, y, W, loss):
    """Peer: scores by one matmul, loss added, argmax over (window, class); phi sum by add.at."""
    n, L, d = X.shape
    C = W.shape[0]
    S = (X.reshape(n * L, d) @ W.T.astype(X.dtype)).reshape(n, L, C) + loss[y][:, None, :]
    flat = S.reshape(n, -1)
    am = flat.argmax(axis=1)
    y_hat, z_hat = am % C, am // C
    phi = np.zeros((C, d))
    np.add.at(phi, y_hat, X[np.arange(n), z_hat])
    return flat.max(axis=1), phi


def main() -> None:
    rng = np.random.default_rng(0)
    n, L, d, C = 4000, 81, 64, 6
    rows = []
    for dtype in (np.float32, np.float64):
        X = rng.random((n, L, d)).astype(dtype)
        y = rng.integers(0, C, size=n).astype(np.int32)
        W = rng.normal(size=(C, d))
        model = LatentMulticlassModel(C)
        data = model.prepare(X)
        idx = np.arange(n, dtype=np.int64)
        loss = model.loss_matrix()
        def our_pass():    # as LatentSSVM calls it: BLAS on one thread under our threads
            with BLAS.limit(limits=1, user_api="blas"):
                model.loss_augmented(data, y, W.reshape(-1), idx, table=True, phi=True)

        for threads in (1, 2):
            with threadpool_limits(limits=threads):
                t = alternate({"gmmfast": our_pass,
                               "numpy": lambda: numpy_augmented(X, y, W, loss)},
                              repeats=1, block=REPEATS)
            ours, peer = np.median(t["gmmfast"]), np.median(t["numpy"])
            rows.append([np.dtype(dtype).name, threads, f"{n / ours:,.0f}", f"{n / peer:,.0f}",
                         f"{peer / ours:.2f}"])
            print(rows[-1], flush=True)
    # per-example scoring in an epoch: gemm against the class-vectorised loop, float32
    path_rows = []
    for L2, C2 in [(1, 10), (4, 6), (9, 6), (16, 6), (81, 2), (81, 6), (81, 20)]:
        m = 2000
        X = rng.random((m, L2, d)).astype(np.float32)
        y = rng.integers(0, C2, size=m).astype(np.int32)
        loss = 1.0 - np.eye(C2)
        idx = np.arange(m, dtype=np.int64)
        order = rng.permutation(m).astype(np.int64)
        no = np.full(m, L2, dtype=np.int32)
        W0 = rng.normal(size=(C2, d)) * 0.01

        def call(g):       # one BCFW epoch from the same state
            return lambda: K.bcfw_epoch(X, no, y, idx, order, loss, W0.copy(),
                                        np.zeros((m, C2, d)), np.zeros(m), 0.1, g)
        with threadpool_limits(limits=1):
            t = alternate({"loop": call(False), "gemm": call(True)}, repeats=REPEATS)
        lo, ge = np.median(t["loop"]), np.median(t["gemm"])
        path_rows.append([L2, C2, L2 * C2, f"{m / lo:,.0f}", f"{m / ge:,.0f}",
                          "gemm" if ge < lo else "loop"])
        print(path_rows[-1], flush=True)
    body = "\n".join([
        f"Loss-augmented inference over {n} examples with L = {L}, d = {d}, {C} classes "
        "(the cutting plane's pass: scores, the latent table of the true class, the argmax, "
        "and the feature sum of the argmax). "
        "'threads' is both the OpenMP threads of the kernel and the BLAS threads of numpy; "
        "ours runs with BLAS on one thread, as LatentSSVM calls it (its OpenMP threads call "
        f"dgemm). Median of {REPEATS} calls in a row, ours first, then numpy's: once numpy "
        "has run on 2 BLAS threads, OpenBLAS's threads keep spinning for a while and take "
        "the second core from our second OpenMP thread (alternating call by call or in "
        "blocks of 5 halved our 2-thread rate on this 2-core machine). "
        "Timings on a shared 2-core machine are noisy; the lead re-runs speed benchmarks on a "
        "quiet machine.",
        "",
        markdown_table(["dtype", "threads", "gmmfast examples/s", "numpy examples/s",
                        "speed-up vs numpy"], rows),
        "",
        "Scoring in the epochs (float32, one thread, 2000 examples, d = 64): examples/s of "
        "one BCFW epoch (a visit scores one example, steps, and updates W) with the loop "
        "vectorised over classes and with one dgemm per example; the model's epochs take the "
        "gemm path from the smallest L x n_classes at which it is the faster one here "
        "(GEMM_MIN_SCORES in gmmfast/lssvm/_multiclass.py). (The pass above "
        "scores blocks of 8 examples by one dgemm, which was faster than the loop at every "
        "shape tried, d = 2 to 64.)",
        "",
        markdown_table(["L", "classes", "L x classes", "loop examples/s", "gemm examples/s",
                        "faster"], path_rows),
    ])
    write_results("lssvm_inference", "LS-SVM: loss-augmented inference throughput", body)


if __name__ == "__main__":
    main()
