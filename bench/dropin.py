"""Is gmmfast.KMeans a faster drop-in for scikit-learn's KMeans, and is algorithm="gmm" worth it?

1. Whole fit with scikit-learn's defaults (init="k-means++", n_init="auto", tol=1e-4,
   max_iter=300): gmmfast.KMeans against sklearn.cluster.KMeans, in the same process,
   alternating (one fit of each per seed, in turn), medians over seeds, at 100k x 16 k=100,
   200k x 64 k=256, 20k x 2 k=200 (the mixture of 4k Gaussians of bench/scale.py) and a
   TF-IDF-like CSR matrix of 100k documents x 10,000 words, k=50. Timed with both libraries
   limited to 1 thread and with their default threads (all cores). Quality: SSE/n mean and
   standard deviation over the seeds (the same for any thread count: both libraries give
   thread-independent results), and the difference of the means with its standard error.
2. Equal time: KMeans(algorithm="gmm") against KMeans(n_init=m) with m chosen so that the
   restarts take about as long as the G-MM fit (gmmfast's KMeans and scikit-learn's each),
   default threads.
"""
import argparse
import contextlib
import os
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from _common import alternate, markdown_table, mixture, simd_name, write_results

DENSE = [(100_000, 16, 100), (200_000, 64, 256), (20_000, 2, 200)]
SPARSE = (100_000, 10_000, 50)
#: Seeds per data set (quality needs many; the large set is slow).
SEEDS = {(100_000, 16, 100): 20, (200_000, 64, 256): 8, (20_000, 2, 200): 30, SPARSE: 5}


def tfidf_like(n, d, topics, seed=0, doc_len=80):
    """n documents over a d-word vocabulary from `topics` topics: a topic draws 60 % of its
    words from a Zipf law (exponent 1.1) over its own random order of the vocabulary and 40 %
    from a Zipf background shared by all topics; lengths ~ Poisson(doc_len); sublinear tf
    (1 + log count), smoothed idf, rows l2-normalised (TfidfVectorizer(sublinear_tf=True))."""
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, d + 1) ** 1.1
    zipf /= zipf.sum()
    background = rng.permutation(d)
    topic = rng.integers(topics, size=n)
    length = np.maximum(rng.poisson(doc_len, size=n), 1)
    rows, cols = [], []
    for t in range(topics):
        docs = np.flatnonzero(topic == t)
        m = int(length[docs].sum())
        order = rng.permutation(d)
        words = np.where(rng.random(m) < 0.6, order[rng.choice(d, size=m, p=zipf)],
                         background[rng.choice(d, size=m, p=zipf)])
        rows.append(np.repeat(docs, length[docs]))
        cols.append(words)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X.data = 1.0 + np.log(X.data)
    df = np.bincount(X.indices, minlength=d)
    X.data *= (np.log((1.0 + n) / (1.0 + df)) + 1.0)[X.indices]
    norms = np.sqrt(np.bincount(np.repeat(np.arange(n), np.diff(X.indptr)),
                                weights=X.data ** 2, minlength=n))
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X


def compare(X, k, seeds, threads):
    """Alternating fits of scikit-learn's and gmmfast's KMeans (defaults), one per seed each."""
    from sklearn.cluster import KMeans as SKKMeans

    from gmmfast import KMeans
    out = {"scikit-learn": {"sse": [], "iter": []}, "gmmfast": {"sse": [], "iter": []}}

    def contender(name, cls):
        todo = iter(seeds)

        def fit():
            km = cls(k, random_state=next(todo)).fit(X)
            out[name]["sse"].append(km.inertia_ / X.shape[0])
            out[name]["iter"].append(km.n_iter_)
        return fit
    limit = threadpool_limits(limits=threads) if threads else contextlib.nullcontext()
    with limit:
        times = alternate({"scikit-learn": contender("scikit-learn", SKKMeans),
                           "gmmfast": contender("gmmfast", KMeans)}, repeats=len(seeds))
    for name in out:
        out[name]["time"] = times[name]
    return out


def sse_cell(values):
    v = np.asarray(values)
    return f"{v.mean():.4f} +- {v.std(ddof=1):.4f}" if v.shape[0] > 1 else f"{v[0]:.4f}"


def diff_cell(ours, ref):
    """Relative difference of the mean SSE/n, in %, with its standard error."""
    a, b = np.asarray(ours), np.asarray(ref)
    diff = (a.mean() - b.mean()) / b.mean() * 100
    se = np.sqrt(a.var(ddof=1) / a.shape[0] + b.var(ddof=1) / b.shape[0]) / b.mean() * 100
    return f"{diff:+.2f} % +- {se:.2f}"


def speed_rows(name, X, k, seeds, thread_settings, quality):
    rows = []
    for threads in thread_settings:
        t0 = time.perf_counter()
        r = compare(X, k, seeds, threads)
        sk, gm = r["scikit-learn"], r["gmmfast"]
        ratio = np.median(np.array(gm["time"]) / np.array(sk["time"]))
        rows.append([name, threads or f"default ({os.cpu_count()})", len(seeds),
                     f"{np.median(sk['time']):.2f}", f"{np.median(gm['time']):.2f}",
                     f"**{np.median(gm['time']) / np.median(sk['time']):.2f}**",
                     f"{ratio:.2f}",
                     f"{np.median(sk['iter']):.0f} / {np.median(gm['iter']):.0f}",
                     sse_cell(sk["sse"]), sse_cell(gm["sse"]), diff_cell(gm["sse"], sk["sse"])])
        quality[name] = r
        print(" | ".join(map(str, rows[-1])), f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return rows


def equal_time_rows(name, X, k, seeds, speed):
    """KMeans(algorithm="gmm") against restarts that take as long (default threads)."""
    from sklearn.cluster import KMeans as SKKMeans

    from gmmfast import KMeans
    gmm_time, gmm_sse = [], []
    for s in seeds:
        t = time.perf_counter()
        gmm_sse.append(KMeans(k, algorithm="gmm", random_state=s).fit(X).inertia_ / X.shape[0])
        gmm_time.append(time.perf_counter() - t)
    t_gmm = float(np.median(gmm_time))
    rows = [[name, 'gmmfast KMeans(algorithm="gmm")', 1, f"{t_gmm:.2f}", sse_cell(gmm_sse),
             f"{min(gmm_sse):.4f}", ""]]
    for label, cls, key in (("gmmfast KMeans", KMeans, "gmmfast"),
                            ("scikit-learn KMeans", SKKMeans, "scikit-learn")):
        m = max(1, int(round(t_gmm / float(np.median(speed[key]["time"])))))
        times, sse = [], []
        for s in seeds:
            t = time.perf_counter()
            sse.append(cls(k, n_init=m, random_state=s).fit(X).inertia_ / X.shape[0])
            times.append(time.perf_counter() - t)
        rows.append([name, f"{label}(n_init={m})", m, f"{np.median(times):.2f}", sse_cell(sse),
                     f"{min(sse):.4f}", diff_cell(gmm_sse, sse)])
        print(" | ".join(map(str, rows[-1])), flush=True)
    print(" | ".join(map(str, rows[0])), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=float, default=1.0,
                    help="scale the number of seeds per data set (default 1: 20, 8, 30, 5)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 0],
                    help="thread limits to time (0: each library's default)")
    ap.add_argument("--skip-sparse", action="store_true")
    ap.add_argument("--skip-equal-time", action="store_true")
    args = ap.parse_args()
    settings = [t or None for t in args.threads]
    load_start = os.getloadavg()

    def seeds_for(key):
        return list(range(max(2, int(round(SEEDS[key] * args.seeds)))))

    speed, quality, data = [], {}, {}
    for n, d, k in DENSE:
        name = f"{n // 1000}k x {d}, k={k}"
        data[name] = (mixture(n, d, k, seed=0), k, (n, d, k))
        speed += speed_rows(name, data[name][0], k, seeds_for((n, d, k)), settings, quality)
    if not args.skip_sparse:
        n, d, k = SPARSE
        X = tfidf_like(n, d, k, seed=0)
        name = f"{n // 1000}k x {d:,} CSR ({X.nnz / n:.0f} nonzeros/row), k={k}"
        speed += speed_rows(name, X, k, seeds_for(SPARSE), settings, quality)
    equal = []
    if not args.skip_equal_time:
        for name, (X, k, key) in data.items():
            equal += equal_time_rows(name, X, k, seeds_for(key), quality[name])
    load_end = os.getloadavg()

    shared = max(load_start[1], load_end[1]) > 1.0
    body = [
        f"SIMD level of the kernels: {simd_name()}. Whole `fit` with scikit-learn's defaults "
        "(`KMeans(k, random_state=seed)`: k-means++, n_init='auto' = 1, tol=1e-4, max_iter=300) "
        "on the mixture of 4k Gaussians of bench/scale.py (`bench/_common.py: mixture`, float64) "
        "and on a TF-IDF-like CSR matrix (`tfidf_like` in this script). Both in this process, "
        "alternating one fit each per seed; 'threads' limits both libraries (threadpoolctl, "
        "OpenMP and BLAS) or leaves their defaults. Ratio = gmmfast / scikit-learn (< 1: "
        "gmmfast faster); 'median ratio' is the median of the per-seed ratios. SSE/n: mean +- "
        "standard deviation over the seeds; the difference of the means is given with its "
        "standard error. The random draws differ between the libraries (same seeds, "
        "different generators), so the quality columns compare distributions.",
        "",
        f"Load average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in load_start)}; "
        f"at the end: {', '.join(f'{x:.2f}' for x in load_end)} on {os.cpu_count()} cores.",
    ]
    if shared:
        body.append(
            "**These timings were taken on a shared machine** (other agents' jobs kept the "
            "load above the core count): absolute times are inflated and noisy, and with 2 "
            "threads a parallel region ends only when the second thread, often preempted, "
            "reaches the barrier; this costs the library with the most (shorter) parallel "
            "regions most. The 1-thread rows are the less disturbed comparison.")
    body += ["", "## Whole fit", "",
             markdown_table(["data", "threads", "seeds", "scikit-learn s (median)",
                             "gmmfast s (median)", "ratio of medians", "median ratio",
                             "iterations (median, sklearn / gmmfast)", "SSE/n scikit-learn",
                             "SSE/n gmmfast", "gmmfast - sklearn (mean SSE/n)"], speed)]
    if equal:
        body += ["", "## algorithm=\"gmm\" against restarts at equal time (default threads)", "",
                 "m = round(median G-MM fit time / median time of one default fit of that "
                 "library, from the table above); 'vs G-MM' is the mean SSE/n of G-MM relative "
                 "to the row's (negative: G-MM lower).", "",
                 markdown_table(["data", "contender", "n_init", "time s (median)",
                                 "SSE/n mean +- sd", "SSE/n best", "G-MM vs this"], equal)]
    write_results("dropin", "Drop-in KMeans: gmmfast against scikit-learn, whole fit",
                  "\n".join(body))


if __name__ == "__main__":
    main()
