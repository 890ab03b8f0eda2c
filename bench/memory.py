"""Peak memory of a fit beyond the data itself, gmmfast against scikit-learn.

Each fit runs in a fresh process, after the data is made and the library imported. The
peak resident set (VmHWM) is then reset to the current one (/proc/self/clear_refs), and
the peak after the fit minus the resident set before it is what the fit added. Columns:
5-iteration fits from the same given centers (Lloyd, the random walk, merge-split,
scikit-learn's lloyd), and whole fits with every default (k-means++ included:
GMMKMeans(k), scikit-learn KMeans(k, n_init=1)). The scale issue's limits: 20,000 x 784,
k = 1000 may add 2x the data + 100 MiB; 200k x 64, k = 1000 half the data + 64 MiB.
"""
import argparse
import subprocess
import sys

from _common import markdown_table, write_results

SIZES = [(10_000, 2, 200), (100_000, 16, 100), (200_000, 64, 256), (1_000_000, 2, 100),
         (20_000, 784, 1000), (200_000, 64, 1000)]

CHILD = r"""
import sys, numpy as np
n, d, k, which, eta, selection, whole = {n}, {d}, {k}, {which!r}, {eta}, {selection!r}, {whole}
X = np.random.default_rng(0).random((n, d))
C = X[:k].copy()
if which == "sklearn":
    from sklearn.cluster import KMeans
    est = (KMeans(k, n_init=1, random_state=0) if whole else
           KMeans(k, init=C, n_init=1, max_iter=5, tol=0, algorithm="lloyd"))
else:
    from gmmfast import GMMKMeans
    est = (GMMKMeans(k, random_state=0) if whole else
           GMMKMeans(k, eta=eta, init=C, max_iter=5, tol=0, selection=selection))


def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])      # KiB


open("/proc/self/clear_refs", "w").write("5")   # the peak so far is the data's making
before = status("VmRSS:")
est.fit(X)
print((status("VmHWM:") - before) / 1024.0, X.nbytes / 2**20)
"""


def peak(n, d, k, which, eta=1.0, selection="mm", whole=False):
    code = CHILD.format(n=n, d=d, k=k, which=which, eta=eta, selection=selection,
                        whole=whole)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default=None, help="n,d,k;n,d,k... (default: all)")
    args = ap.parse_args()
    sizes = SIZES if not args.sizes else [tuple(int(float(v)) for v in c.split(","))
                                          for c in args.sizes.split(";")]
    rows = []
    for n, d, k in sizes:
        ours, data = peak(n, d, k, "gmmfast")
        gmm, _ = peak(n, d, k, "gmmfast", eta=0.02, selection="random")
        split, _ = peak(n, d, k, "gmmfast", eta=0.1, selection="merge-split")
        skl, _ = peak(n, d, k, "sklearn")
        whole, _ = peak(n, d, k, "gmmfast", whole=True)
        skl_whole, _ = peak(n, d, k, "sklearn", whole=True)
        rows.append([f"{n} x {d}, k={k}", f"{data:.1f}", f"{ours:.1f}", f"{gmm:.1f}",
                     f"{split:.1f}", f"{skl:.1f}", f"{whole:.1f}", f"{skl_whole:.1f}"])
        print(rows[-1], flush=True)
    body = ("MiB added to the resident set's peak by a fit (fresh process each; see the "
            "script's docstring); n x k would be 8 n k bytes (e.g. 1.5 GiB for "
            "1,000,000 x 200). X is uniform random float64.\n\n"
            + markdown_table(["data", "X MiB", "gmmfast Lloyd (eta=1), 5 it.",
                              "gmmfast random walk (eta=0.02), 5 it.",
                              "gmmfast merge-split (eta=0.1), 5 it.", "sklearn lloyd, 5 it.",
                              "GMMKMeans() whole fit", "sklearn KMeans() whole fit"], rows))
    write_results("memory", "Peak memory of a fit", body)


if __name__ == "__main__":
    main()
