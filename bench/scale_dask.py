"""G-MM k-means on a Dask cluster against dask-ml's KMeans, and a fit larger than the workers' memory.

Question (issue 10): on the same LocalCluster (2 worker processes, 1 thread each), how do
`GMMKMeans()` and `GMMKMeans(eta=1)` on a dask array compare with dask-ml's `KMeans`
(time, iterations, SSE/n) at 20,000 x 16 x 60 (no larger than the default's coarse level),
1M x 16 x 100 and 1M x 64 x 1000, which seeding should a
dask fit use, and what does a fit of 4e7 x 16 float32 cost (generated chunk by chunk,
workers limited to 1 GB each): seconds per iteration and bytes moved per iteration, and,
for the default fit, whose polish keeps 20 bytes a row on the workers, their memory.

    python bench/scale_dask.py --part small --repeats 10
    python bench/scale_dask.py --part peers16 --repeats 5
    python bench/scale_dask.py --part init
    python bench/scale_dask.py --part peers64 --repeats 1 --daskml-limit 600
    python bench/scale_dask.py --part ooc
    python bench/scale_dask.py --part ooc-nosteal
    python bench/scale_dask.py --part ooc-default

The peer parts also fit `GMMKMeans()` on the same rows as one numpy array in the driver
(same seed): the Dask fit should be that fit. ``--daskml-limit`` stops dask-ml after that
many seconds (its time is then a lower bound and it has no SSE).

Each part stores its rows in bench/results/scale_dask.json; every run rewrites
bench/results/scale_dask.md from all parts measured so far.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import threading
import time
import warnings

import numpy as np

from _common import RESULTS, machine_header, markdown_table, write_results

STORE = RESULTS / "scale_dask.json"


def mixture(n, d, m=400, seed=0):
    """The issue's data: a mixture of m Gaussians, M = normal(scale=10), unit noise."""
    rng = np.random.default_rng(seed)
    M = rng.normal(scale=10, size=(m, d))
    return M[rng.integers(0, m, n)] + rng.normal(size=(n, d))


def cluster(**kw):
    from distributed import Client, LocalCluster
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, **kw)
    return lc, Client(lc)


def worker_bytes(client):
    """Bytes the workers sent to other workers or to the client so far (sum)."""
    out = client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
    return int(sum(out.values()))


def fit_gmm(X, k, seed, labels=False, **kw):
    """A timed GMMKMeans fit's record and (``labels``: a pass more, after the timing) its
    labels."""
    from gmmfast import GMMKMeans
    t = time.perf_counter()
    m = GMMKMeans(k, random_state=seed, **kw).fit(X)
    seconds = time.perf_counter() - t
    if labels:
        labels = m.labels_.compute() if hasattr(m.labels_, "compute") else m.labels_
    return dict(seconds=seconds, n_iter=int(m.n_iter_),
                sse=float(m.inertia_) / X.shape[0],
                violations=len(m.history_.invariant_violations()),
                passes=[list(p) for p in getattr(m, "_dask_passes", [])],
                levels=[int(lv.rows) for lv in m.levels_]), labels


def objective(X, centers):
    """F(centers) = sum_i min_j ||x_i - c_j||^2, one pass (outside any timing)."""
    from gmmfast.cluster import inertia
    return inertia(X, centers)


def fit_daskml(X, k, seed):
    """dask-ml's KMeans; its SSE is recomputed as F(cluster_centers_): dask-ml's inertia_
    is a sum of unsquared distances when its last step moved the centers."""
    from dask_ml.cluster import KMeans
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = KMeans(n_clusters=k, max_iter=25, random_state=seed).fit(X)
    seconds = time.perf_counter() - t
    msgs = sorted({str(w.message)[:90] for w in caught if "clusters in init" in str(w.message)})
    return dict(seconds=seconds, n_iter=int(m.n_iter_),
                sse=objective(X, m.cluster_centers_) / X.shape[0],
                inertia_reported=float(m.inertia_) / X.shape[0], warnings=msgs,
                distinct_centers=int(np.unique(m.cluster_centers_, axis=0).shape[0]))


def fit_daskml_limited(client, X, k, seed, limit):
    """fit_daskml, stopped after ``limit`` seconds (None: no limit): then the workers are
    restarted (which cancels its tasks and drops the persisted data) and the row says so."""
    if limit is None:
        return fit_daskml(X, k, seed), False
    out = {}

    def run():
        try:
            out["row"] = fit_daskml(X, k, seed)
        except Exception as exc:          # cancelled by the restart below
            out["error"] = repr(exc)[:200]

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    if "row" in out:
        return out["row"], False
    client.restart()
    thread.join(60)
    return dict(seconds=float(limit), stopped=True, n_iter=None, sse=None,
                warnings=[]), True


MEMORY = "GMMKMeans() in memory (the same rows, 2 threads)"
DASKML = "dask-ml KMeans(max_iter=25)"


def part_peers(n, d, k, repeats, contenders, limit=None, chunk=100_000):
    import dask.array as da
    lc, client = cluster()
    data = mixture(n, d)

    def persisted():
        client.wait_for_workers(2)
        return da.from_array(data, chunks=(chunk, d)).persist()
    try:
        X = persisted()
        runs = {name: [] for name in contenders}
        for r in range(repeats):              # alternating, one run each per round
            dask_labels = None
            for name in contenders:
                if name == DASKML:
                    row, restarted = fit_daskml_limited(client, X, k, r, limit)
                    if restarted:             # the restart dropped the persisted blocks
                        X = persisted()
                elif name == MEMORY:
                    row, labels = fit_gmm(data, k, r, labels=True)   # the machine's 2 threads
                    row["same_labels_as_dask"] = bool(np.array_equal(labels, dask_labels))
                    row["sse_vs_dask"] = row["sse"] / runs["GMMKMeans()"][-1]["sse"] - 1
                else:
                    row, labels = fit_gmm(X, k, r, labels=name == "GMMKMeans()",
                                          **contenders[name])
                    if name == "GMMKMeans()":
                        dask_labels = labels
                runs[name].append(row)
                print(name, r, {a: b for a, b in row.items() if a != "passes"}, flush=True)
    finally:
        client.close()
        lc.close()
    return runs


def part_init(repeats):
    """Seeding choices at 1M x 16 x 100: seeding time and the default fit's SSE after it."""
    import dask.array as da
    from gmmfast.cluster import inertia, initial_centers
    lc, client = cluster()
    choices = {"k-means++ on 25,600 rows (256 per center)": dict(init_size=25_600),
               "k-means++ on 100,000 rows ('auto')": dict(init_size="auto"),
               "k-means++ on 400,000 rows": dict(init_size=400_000),
               "k-means|| over all blocks": dict(init="k-means||")}
    rows = {name: [] for name in choices}
    try:
        X = da.from_array(mixture(1_000_000, 16), chunks=(100_000, 16)).persist()
        client.wait_for_workers(2)
        for r in range(repeats):
            for name, kw in choices.items():
                t = time.perf_counter()
                w0 = initial_centers(X, 100, random_state=np.random.default_rng(r), **kw)
                t_init = time.perf_counter() - t
                f0 = inertia(X, w0) / 1e6
                res, _ = fit_gmm(X, 100, r, **kw)
                rows[name].append(dict(init_seconds=t_init, init_sse=f0, **res))
                print(name, r, t_init, f0, res["sse"], res["seconds"], flush=True)
    finally:
        client.close()
        lc.close()
    return rows


def _add_means(noise, M, block_info=None):
    b = block_info[0]["chunk-location"][0]
    z = np.random.default_rng([1, b]).integers(0, M.shape[0], noise.shape[0])
    return M[z] + noise


def part_ooc(n=40_000_000, d=16, k=100, chunk=1_000_000, stealing=True, default=False):
    """4e7 x 16 float32 generated chunk by chunk, workers limited to 1 GB each: three Lloyd
    iterations, or (``default``) the default fit, whose polish keeps 20 bytes a row of
    labels and bounds on the workers."""
    import dask
    import dask.array as da
    import distributed  # noqa: F401  (registers the distributed config)
    from gmmfast import GMMKMeans
    with dask.config.set({"distributed.scheduler.work-stealing": stealing}):
        lc, client = cluster(memory_limit="1GB")
    try:
        client.wait_for_workers(2)
        pids0 = client.run(os.getpid)
        M = np.random.default_rng(0).normal(scale=10, size=(400, d)).astype(np.float32)
        noise = da.random.default_rng(0).standard_normal(size=(n, d), chunks=(chunk, d),
                                                         dtype=np.float32)
        # each block's component labels come from a stream of its own, in the task that
        # adds the means to the block's noise: a block never waits for another's data
        X = noise.map_blocks(_add_means, M, dtype=np.float32)
        b0 = worker_bytes(client)
        t = time.perf_counter()
        kw = {} if default else dict(eta=1.0, max_iter=3, tol=0)
        m = GMMKMeans(k, random_state=0, verbose=1, **kw).fit(X)
        seconds = time.perf_counter() - t
        moved = worker_bytes(client) - b0
        pids1 = client.run(os.getpid)
        peak = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        spilled = client.run(lambda dask_worker: list(dask_worker.data.spilled_total))
        passes = m._dask_passes
        return dict(n=n, d=d, k=k, chunk=chunk, seconds=seconds, n_iter=int(m.n_iter_),
                    sse=float(m.inertia_) / n, passes=[list(p) for p in passes],
                    worker_bytes=moved, same_workers=pids0 == pids1,
                    n_workers=len(pids1), peak_rss=sorted(peak.values()),
                    violations=sum(len(lv.history.invariant_violations())
                                   for lv in m.levels_),
                    levels=[dict(rows=lv.rows, n_iter=lv.n_iter, seconds=lv.seconds,
                                 sse=lv.objective / lv.rows) for lv in m.levels_],
                    spilled_bytes=sorted(int(v[0]) for v in spilled.values()),
                    centers_bytes=int(m.cluster_centers_.nbytes))
    finally:
        client.close()
        lc.close()


# -- report --------------------------------------------------------------------------------

def _stat(vals, fmt="{:.1f}"):
    vals = np.asarray(vals, dtype=float)
    if vals.size == 1:
        return fmt.format(vals[0])
    return f"{fmt.format(np.median(vals))} (median of {vals.size})"


def _notes(rs):
    if "same_labels_as_dask" in rs[0]:
        same = sum(r["same_labels_as_dask"] for r in rs)
        diff = max(abs(r["sse_vs_dask"]) for r in rs)
        return (f"labels identical to the Dask fit's in {same}/{len(rs)} seeds, SSE/n within "
                f"a relative {diff:.1e}; {sum(r['violations'] for r in rs)} invariant "
                "violations")
    if "violations" in rs[0]:
        return f"{sum(r['violations'] for r in rs)} invariant violations"
    warned = sorted({w for r in rs for w in r.get("warnings", [])})
    return "; ".join(warned + [
        f"distinct centers {min(r['distinct_centers'] for r in rs)}-"
        f"{max(r['distinct_centers'] for r in rs)}; its inertia_/n (unsquared distances) "
        f"{np.mean([r['inertia_reported'] for r in rs]):.2f}"])


def _peers_table(runs):
    peer = runs[DASKML]
    ref = np.median([r["seconds"] for r in peer])
    stopped = any(r.get("stopped") for r in peer)
    out = []
    for name, rs in runs.items():
        if any(r.get("stopped") for r in rs):
            out.append([name, f"> {ref:.0f} (stopped unfinished)", "1.0x", "-", "-", "-",
                        "; ".join(sorted({w for r in rs for w in r.get("warnings", [])}))])
            continue
        sse = np.array([r["sse"] for r in rs])
        t = np.median([r["seconds"] for r in rs])
        out.append([name, _stat([r["seconds"] for r in rs]),
                    "- (not on Dask)" if name == MEMORY else
                    f"{'> ' if stopped else ''}{ref / t:.1f}x",
                    _stat([r["n_iter"] for r in rs], "{:.0f}"),
                    f"{sse.mean():.2f} +- {sse.std():.2f}" if sse.size > 1 else f"{sse[0]:.2f}",
                    f"{sse.min():.2f}",
                    _notes(rs)])
    return markdown_table(["contender", "seconds", "speed-up vs dask-ml", "iterations",
                           "SSE/n mean +- std", "best SSE/n", "notes"], out)


def _peers_text(runs):
    """What the table cannot say: the seeds, a stopped dask-ml, the in-memory twin."""
    n_runs = len(runs["GMMKMeans()"])
    text = (f"Seeds 0-{n_runs - 1} (random_state = repeat); rounds alternate between the "
            "contenders. SSE/n is F(cluster_centers_) / n for every contender, computed after "
            "the timing.")
    stopped = [r for r in runs[DASKML] if r.get("stopped")]
    if stopped:
        text += (f" dask-ml was stopped after {stopped[0]['seconds']:.0f} s without finishing "
                 "its 25 iterations (its tasks cancelled by restarting the workers): its time "
                 "is a lower bound, and it has no SSE.")
    if MEMORY in runs:
        levels = runs["GMMKMeans()"][0].get("levels")
        how = ("the coarse level's sample is drawn by global row across the blocks and fitted "
               "in memory on the driver, and only the finer levels pass over the blocks")
        if levels and levels[0] == levels[-1]:
            how = ("the data is no larger than the coarse level: its rows are gathered to the "
                   "driver once and fitted there as in memory, and only the polish (Lloyd's "
                   "passes on the same rows) passes over the blocks")
        text += (f" `{MEMORY}` fits the same rows as one numpy array in the driver with the "
                 "same seed (its time is not a Dask time: no scheduling, the driver's "
                 f"threads); the Dask default fit should be that fit, since {how}"
                 + (f" (levels of {', '.join(f'{m:,}' for m in levels)} rows)." if levels
                    else "."))
    return text


def measured(store, part):
    """The line saying when, on which commit and machine a part was measured."""
    return "Measured: " + store.get("measured", {}).get(part, "not recorded") + "."


def provenance(command):
    """Command, date, commit, machine and SIMD level of this run, in one line."""
    from gmmfast import kernel_info
    keep = ("command", "date", "commit", "machine", "load average")
    lines = [ln[2:] for ln in machine_header(command).splitlines()
             if ln.startswith("- ") and ln[2:].startswith(keep)]
    return "; ".join(lines) + f"; kernels {kernel_info()['simd']}"


def _ooc_default(store):
    """The default fit of the out-of-core set: its levels, and the workers' memory with the
    polish's bounds held on them."""
    if "ooc-default" not in store:
        return []
    o = store["ooc-default"]
    bounds = 20 * o["n"]
    rows = [[f"{lv['rows']:,}", lv["n_iter"], f"{lv['seconds']:.1f}", f"{lv['sse']:.2f}"]
            for lv in o["levels"]]
    return [
        "### The default fit of the same set", "", measured(store, "ooc-default"), "",
        f"`GMMKMeans({o['k']}, random_state=0)`: G-MM with its escapes on a sample on the "
        "driver, Lloyd's passes on the finer levels, the last one (the polish, on every row) "
        "keeping each block's labels and Hamerly bounds on its worker: 20 bytes a row, "
        f"{bounds / 1e9:.2f} GB in all, {bounds / 2e9:.2f} GB a worker, against the 1 GB "
        "limit.", "",
        markdown_table(["level rows", "iterations", "seconds", "SSE/n on its rows"], rows),
        "", markdown_table(["measure", "value"], [
            ["whole fit", f"{o['seconds']:.1f} s"],
            ["passes over X", len(o["passes"])],
            ["SSE/n (every row)", f"{o['sse']:.2f}"],
            ["workers killed or restarted", "none" if o["same_workers"] else "YES"],
            ["peak RSS of the workers", ", ".join(f"{p / 2**20:.0f} MiB"
                                                 for p in o["peak_rss"])],
            ["data spilled to disk by each worker (its size in memory)",
             ", ".join(f"{b / 2**20:.0f} MiB" for b in o["spilled_bytes"])],
            ["invariant violations", o["violations"]],
        ]), ""]


def report(store):
    import dask
    import distributed
    from gmmfast import kernel_info
    level = kernel_info()["simd"]
    try:
        import dask_ml
        dml = dask_ml.__version__
    except ImportError:
        dml = "not installed"
    body = [f"dask {dask.__version__}, distributed {distributed.__version__}, dask-ml {dml}. "
            f"Nearest-center kernels dispatched to **{level}**. Every contender ran on the same "
            "`LocalCluster(n_workers=2, threads_per_worker=1, processes=True)` (one thread per "
            "worker, so 2 threads on each side), data persisted on the workers in chunks of "
            "100,000 rows (the small part: 2,500). Each part's line gives the load average "
            "when it ended (2 cores: above about 0.5 beyond the benchmark's own 2, other jobs "
            "shared the machine).",
            "",
            "Measured part by part (the header above is that of the last write); each part "
            "says when, on which commit and machine it was measured.", ""]
    for key, title in (("small", "20,000 x 16 float64, k = 60 (mixture of 400 Gaussians), "
                              "in 8 blocks of 2,500 rows"),
                       ("peers16", "1M x 16 float64, k = 100 (mixture of 400 Gaussians)"),
                       ("peers64", "1M x 64 float64, k = 1000 (mixture of 400 Gaussians)")):
        if key in store:
            body += [f"## {title}", "", measured(store, key), "",
                     _peers_text(store[key]), "", _peers_table(store[key]), ""]
            g = store[key].get("GMMKMeans()")
            if g:
                per = [s for r in g for s, _ in r["passes"]]
                got = [b for r in g for _, b in r["passes"]]
                body += [f"GMMKMeans(): median {np.median(per):.3f} s per pass over the data "
                         f"(dask compute, scheduling included), {int(np.median(got))} bytes "
                         "returned to the driver per pass.", ""]
    if "init" in store:
        rows = []
        for name, rs in store["init"].items():
            rows.append([name, _stat([r["init_seconds"] for r in rs], "{:.2f}"),
                         f"{np.mean([r['init_sse'] for r in rs]):.1f}",
                         _stat([r["seconds"] for r in rs]),
                         f"{np.mean([r['sse'] for r in rs]):.2f} +- "
                         f"{np.std([r['sse'] for r in rs]):.2f}",
                         f"{min(r['sse'] for r in rs):.2f}"])
        body += ["## Seeding a dask fit (1M x 16, k = 100, then `GMMKMeans()`)", "",
                 measured(store, "init"), "",
                 "The seeding columns time `initial_centers` on the whole dask array (the "
                 "seeding of a fit on every row); the fit columns time `GMMKMeans()` with "
                 "that seeding option.", "",
                 markdown_table(["seeding", "seeding seconds", "SSE/n at the seeds",
                                 "whole fit seconds", "final SSE/n mean +- std",
                                 "best"], rows), ""]
        coarse = sorted({r["levels"][0] for rs in store["init"].values() for r in rs
                         if "levels" in r})
        if coarse:
            body += [f"The default fit seeds its coarse level, a sample of {coarse[0]:,}-"
                     f"{coarse[-1]:,} rows held on the driver: k-means++ with an `init_size` "
                     "at or above that seeds on the whole sample, whatever its value, so the "
                     "k-means++ rows fit the same centers (their fit seconds differ by the "
                     "run only); k-means|| seeds the sample by its own rounds.", ""]
    if "ooc" in store:
        o = store["ooc"]
        per = [s for s, _ in o["passes"]]
        got = [b for _, b in o["passes"]]
        data_gb = o["n"] * o["d"] * 4 / 1e9
        body += [
            "## Larger than the workers' memory: 4e7 x 16 float32, workers limited to 1 GB",
            "", measured(store, "ooc"), "",
            f"X = {data_gb:.2f} GB, generated chunk by chunk (`da.random` noise plus the means "
            f"of 400 components drawn per block; blocks of {o['chunk']:,} rows, never "
            f"persisted, so every pass generates them again), 2 workers with "
            f"`memory_limit='1GB'` each; `GMMKMeans(eta=1, max_iter=3, tol=0)`, k = {o['k']}.",
            "",
            markdown_table(["measure", "value"], [
                ["whole fit (a pass drawing the 100,000-row seeding sample, then 4 passes)",
                 f"{o['seconds']:.1f} s"],
                ["iterations", o["n_iter"]],
                ["seconds per pass over X (each pass regenerates the blocks)",
                 ", ".join(f"{s:.1f}" for s in per)],
                ["bytes returned to the driver per pass", ", ".join(map(str, got))],
                ["bytes sent by workers (to workers and driver), whole fit, per pass",
                 f"{o['worker_bytes']:,} / {len(per)} passes = "
                 f"{o['worker_bytes'] // max(len(per), 1):,}"],
                ["centers sent by the driver per pass", f"{o['centers_bytes']:,} bytes"],
            ] + ([[
                "the same fit with dask's work stealing off: bytes sent by workers per pass, "
                "seconds per pass",
                f"{store['ooc-nosteal']['worker_bytes'] // len(store['ooc-nosteal']['passes']):,}"
                f"; " + ", ".join(f"{s:.1f}" for s, _ in store["ooc-nosteal"]["passes"])]]
                if "ooc-nosteal" in store else []) + [

                ["workers killed or restarted", "none" if o["same_workers"] else "YES"],
                ["peak RSS of the workers", ", ".join(f"{p / 2**20:.0f} MiB"
                                                     for p in o["peak_rss"])],
                ["SSE/n after 3 iterations", f"{o['sse']:.2f}"],
                ["invariant violations", o["violations"]],
            ]), "",
            "The workers' sent bytes are dask's transfers of any kind: blocks "
            f"({o['chunk'] * o['d'] * 4 / 1e6:.0f} MB each) that work stealing moves to an "
            "idle worker, the seeding sample, and the Parts. What the algorithm itself moves "
            "per pass is the centers to the workers and one Part per block up the tree (each "
            f"the size of the root Part returned to the driver: {got[-1] / 1e3:.1f} kB here, "
            f"so {o['n'] // o['chunk']} blocks make "
            f"{got[-1] * (o['n'] // o['chunk']) / 1e6:.1f} MB).", ""] + _ooc_default(store) + [
            "### Growth to 1e9 points on 100 workers (on paper)", "",
            "Per iteration the driver sends the centers (k d values: one key, fetched once by "
            "each worker) and one small task per block, and receives one Part: k (d + 3) "
            "float64 sums and counts plus a few floats of exact cost expansion (merge-split "
            "adds a drawn row per cluster). Blocks' Parts are combined by a tree of 8-input "
            "tasks; a combine task runs where most of its inputs are, so most of the tree "
            "stays inside a worker. Traffic per iteration is at most (blocks + workers) x "
            "k (d + 4) x 8 bytes: it does not grow with n at a fixed number of blocks per "
            "worker. At k = 100, d = 16, 1e9 rows in 1,000 blocks of 1e6 rows (10 per "
            f"worker) move at most {1000 * 100 * 20 * 8 / 1e6:.0f} MB per iteration if no "
            f"combine were local, about {100 * 100 * 20 * 8 / 1e6:.1f} MB with worker-local "
            "first levels (O(workers k d)), and the driver receives one Part "
            f"({got[-1] / 1e3:.1f} kB measured here), against 64 GB of data. Compute grows "
            f"as n k d / workers: {np.median(per):.1f} s per pass measured here for "
            f"{o['n']:.0e} rows on 2 workers (block generation included), so 1e9 rows on "
            f"100 workers take {1e9 / o['n'] * 2 / 100:.1f} x that, about "
            f"{np.median(per) * 1e9 / o['n'] * 2 / 100:.0f} s per iteration on the same "
            "cores; the scheduler's ~1,150 tasks per pass (about 1 ms each) add 1-2 s. The "
            "driver's work per iteration (merge-split selection, new centers) is "
            "O(k (d + neighbours)), independent of n and of the workers. Memory per worker "
            "for Lloyd's passes (`eta=1`) is the blocks in flight (here 2 x 64 MB of X and "
            "their labels), not its share of X: the workers' peak RSS was "
            f"{max(o['peak_rss']) / 1e9:.2f} GB at most, against the 1 GB limit." + (
                " The default fit's polish also keeps each block's labels and Hamerly bounds "
                "on its worker, 20 bytes a row: a share of n, 0.2 GB a worker for 1e9 rows on "
                f"100 workers (here {20 * d['n'] / 2e9:.2f} GB a worker; its peak RSS was "
                f"{max(d['peak_rss']) / 1e9:.2f} GB at most, "
                f"{'nothing' if not any(d['spilled_bytes']) else 'some data'} spilled)."
                if (d := store.get("ooc-default")) else ""), ""]
    write_results("scale_dask", "G-MM k-means on Dask against dask-ml, and past the workers' "
                  "memory", "\n".join(body))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["small", "peers16", "peers64", "init", "ooc",
                                       "ooc-nosteal", "ooc-default", "report"],
                    required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--daskml-limit", type=float, default=None,
                    help="stop dask-ml after this many seconds (a lower bound, no SSE)")
    args = ap.parse_args()
    store = json.loads(STORE.read_text()) if STORE.exists() else {}
    contenders = {"GMMKMeans()": {}, MEMORY: None, "GMMKMeans(eta=1)": dict(eta=1.0),
                  DASKML: None}
    if args.part == "small":
        store["small"] = part_peers(20_000, 16, 60, args.repeats, contenders,
                                    args.daskml_limit, chunk=2_500)
    elif args.part == "peers16":
        store["peers16"] = part_peers(1_000_000, 16, 100, args.repeats, contenders,
                                      args.daskml_limit)
    elif args.part == "peers64":
        store["peers64"] = part_peers(1_000_000, 64, 1000, args.repeats, contenders,
                                      args.daskml_limit)
    elif args.part == "init":
        store["init"] = part_init(args.repeats)
    elif args.part == "ooc":
        store["ooc"] = part_ooc()
    elif args.part == "ooc-nosteal":
        store["ooc-nosteal"] = part_ooc(stealing=False)
    elif args.part == "ooc-default":
        store["ooc-default"] = part_ooc(default=True)
    if args.part != "report":
        limit = f" --daskml-limit {args.daskml_limit:g}" if args.daskml_limit else ""
        store.setdefault("measured", {})[args.part] = provenance(
            f"python bench/scale_dask.py --part {args.part} --repeats {args.repeats}{limit}")
    STORE.write_text(json.dumps(store, indent=1))
    report(store)


if __name__ == "__main__":
    main()
