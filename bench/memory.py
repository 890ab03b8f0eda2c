"""Peak memory of a fit beyond the data itself, gmmfast against scikit-learn.

Each fit runs in a fresh process; the peak resident set size (ru_maxrss) after
the fit minus the one just before it is what the fit added.
"""
import argparse
import subprocess
import sys

from _common import markdown_table, write_results

SIZES = [(10_000, 2, 200), (100_000, 16, 100), (200_000, 64, 256), (1_000_000, 2, 100)]

CHILD = r"""
import resource, sys, numpy as np
n, d, k, which, eta = {n}, {d}, {k}, {which!r}, {eta}
X = np.random.default_rng(0).random((n, d))
C = X[:k].copy()
if which == "sklearn":
    from sklearn.cluster import KMeans
    est = KMeans(k, init=C, n_init=1, max_iter=5, tol=0, algorithm="lloyd")
else:
    from gmmfast import GMMKMeans
    est = GMMKMeans(k, eta=eta, init=C, max_iter=5, tol=0, selection={selection!r})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
est.fit(X)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) / 1024.0, X.nbytes / 2**20)
"""


def peak(n, d, k, which, eta=1.0, selection="mm"):
    code = CHILD.format(n=n, d=d, k=k, which=which, eta=eta,
                        selection=selection)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main():
    argparse.ArgumentParser(description=__doc__).parse_args()
    rows = []
    for n, d, k in SIZES:
        ours, data = peak(n, d, k, "gmmfast")
        gmm, _ = peak(n, d, k, "gmmfast", eta=0.02, selection="random")
        split, _ = peak(n, d, k, "gmmfast", eta=0.1, selection="merge-split")
        skl, _ = peak(n, d, k, "sklearn")
        rows.append([f"{n} x {d}, k={k}", f"{data:.1f}", f"{ours:.1f}", f"{gmm:.1f}",
                     f"{split:.1f}", f"{skl:.1f}"])
    body = ("MiB added to the peak resident set by a 5-iteration fit (fresh process each); n x k "
            "would be 8 n k bytes (e.g. 1.5 GiB for 1,000,000 x 200).\n\n"
            + markdown_table(["data", "X MiB", "gmmfast Lloyd (eta=1)",
                              "gmmfast G-MM random walk (eta=0.02)",
                              "gmmfast G-MM merge-split (eta=0.1)", "sklearn lloyd"], rows))
    write_results("memory", "Peak memory of a fit", body)


if __name__ == "__main__":
    main()
