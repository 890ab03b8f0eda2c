"""Large-scale k-means on one machine: is GMMKMeans() as fast as faiss, at a lower SSE/n?

The question of issue 25: against faiss as its users call it (faiss.Kmeans(d, k) with its
defaults, then index.search(X, 1) for every row's label), and across faiss's knobs (niter,
max_points_per_centroid), does GMMKMeans() take at most 2x faiss's time and reach a lower
SSE/n than faiss, scikit-learn KMeans(n_init=1) and MiniBatchKMeans; and at every time
budget a faiss point reaches, has gmmfast a point (one of its sample sizes) at no more
time with a lower SSE/n?

Data: bench/_common.mixture (a mixture of 4k Gaussians in d dimensions), generated once
per cell into bench/out/data/*.npy (block by block through open_memmap; --data-dir); float64
up to 1e6 rows, float32 at 1e7 rows and in the memmap cell. In-memory cells load the file
into memory (np.load); the memmap cell (1e8 x 16, k = 100, float32; --memmap-rows) fits
np.load(path, mmap_mode="r") directly, after the parent has read the file once so that
every contender starts with it in the page cache.

Contenders (--list-contenders), each run in a fresh process (so its peak memory is its own,
and the libraries cannot share threads or caches): GMMKMeans() (sample_size="auto"),
GMMKMeans(sample_size=None) (every row), GMMKMeans(sample_size=s*k) for s = 32, 128, 512
rows per center, GMMKMeans(eta=1) (Lloyd's on every row), GMMKMeans(eta=1,
sample_size=s*k, max_iter=m) for (s, m) in {16, 32} x {3, 10} (Lloyd's coarse to fine, m
passes a level: gmmfast's short runs, as faiss's niter=10 is faiss's), scikit-learn
KMeans(n_init=1) and MiniBatchKMeans(n_init=1), faiss.Kmeans(d, k) with its defaults (niter=25,
max_points_per_centroid=256, seed 1234, float32) and at niter in {10, 25, 50} x
max_points_per_centroid in {256, 1024, all rows}, every faiss fit followed by
index.search(X, 1) in the same process and timing (float64 data converted to float32 in
the timing too: what a user runs). Random states: 0 for gmmfast and scikit-learn, faiss's
default seed. A contender whose fit would be the same as an earlier one's (a sample at
least as large as the data; faiss knobs that train on the same rows) is not run again: the
report names the one it equals.

Measured per contender: wall time of the fit and the labels of every row (median over
--repeats fresh processes, run round by round), SSE/n recomputed outside the timing for
every contender the same way (gmmfast.cluster.inertia(X, centers) / n, in X's precision),
iterations, faiss's split (convert, train, search), GMMKMeans's levels_ (rows, iterations,
seconds per level), and peak memory: what the fit added to the process's resident set
(VmHWM, reset through /proc/self/clear_refs after the data is loaded and the library
imported, minus VmRSS then); in the memmap cell the file's pages count in the resident
set, so the anonymous memory the fit added (RssAnon, sampled every 20 ms) and the file
pages it mapped (RssFile added) are reported instead. A contender past --timeout seconds is
stopped and reported as such, and not tried in larger cells (no smaller n, d and k) of the
same records.

Records accumulate in bench/out/NAME.json (one per cell and contender), so the grid can be
run in parts (--cells, --contenders, --resume); the markdown (bench/results/NAME.md), the
Pareto figure (NAME_pareto.png, one panel per cell) and the time-against-n figure
(NAME.png) are written from all records, and every verdict in them is computed from the
records.
"""
import argparse
import fnmatch
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import ROOT, RESULTS, commit_label, markdown_table, mixture_file, simd_name, write_results

OUT = ROOT / "bench" / "out"
DATA_DIR = OUT / "data"
FORMAT = 2                       # records' layout (1: the scale.py before issue 25's faiss grid)
MEMMAP_CELL = (100_000_000, 16, 100)
GRID = [(n, d, k, False) for n in (100_000, 1_000_000, 10_000_000) for d in (16, 64, 128)
        for k in (100, 1000)] + [MEMMAP_CELL + (True,)]

FAISS_NITER = (10, 25, 50)
FAISS_MPPC = (256, 1024, "all")
SAMPLES_PER_CENTER = (32, 128, 512)
#: Lloyd's passes coarse to fine, few of them on each level: (rows per center of the first level,
#: max_iter), gmmfast's points at faiss's short budgets (niter=10 on 256 rows per center)
LLOYD_SHORT = ((16, 3), (32, 3), (16, 10), (32, 10))


def _contenders():
    """name -> (kind, keyword arguments, what it is). Order matters: a contender that
    equals an earlier one's fit is reported as that one."""
    c = {
        "gmmfast": ("gmmfast", {},
                    'GMMKMeans(k, random_state=0): the defaults, sample_size="auto"'),
        "gmmfast sample_size=None": ("gmmfast", {"sample_size": None},
                                     "GMMKMeans(k, sample_size=None, random_state=0): every row "
                                     "at every level (the fit before coarse-to-fine)"),
    }
    for s in SAMPLES_PER_CENTER:
        c[f"gmmfast sample_size={s}*k"] = (
            "gmmfast", {"sample_size": ("per_center", s)},
            f"GMMKMeans(k, sample_size={s} * k, random_state=0): G-MM and its escapes on "
            f"{s} rows per center, then Lloyd's passes on every row")
    c["gmmfast eta=1"] = ("gmmfast", {"eta": 1.0},
                          "GMMKMeans(k, eta=1, random_state=0): Lloyd's on every row")
    for s, m in LLOYD_SHORT:
        c[f"gmmfast eta=1 sample_size={s}*k max_iter={m}"] = (
            "gmmfast", {"eta": 1.0, "sample_size": ("per_center", s), "max_iter": m},
            f"GMMKMeans(k, eta=1, sample_size={s} * k, max_iter={m}, random_state=0): "
            f"Lloyd's coarse to fine, {m} passes on {s} rows per center, then {m} on each "
            "finer level (faiss's short runs, in G-MM's levels)")
    c["sklearn"] = ("sklearn", {}, "sklearn.cluster.KMeans(k, n_init=1, random_state=0)")
    c["minibatch"] = ("minibatch", {},
                      "sklearn.cluster.MiniBatchKMeans(k, n_init=1, random_state=0)")
    c["faiss"] = ("faiss", {}, "faiss.Kmeans(d, k) with its defaults (niter=25, "
                  "max_points_per_centroid=256), then index.search(X, 1)")
    for it in FAISS_NITER:
        for mp in FAISS_MPPC:
            if (it, mp) == (25, 256):
                continue                                  # that is "faiss"
            what = "ceil(n / k): every row" if mp == "all" else mp
            c[f"faiss niter={it} mppc={mp}"] = (
                "faiss", {"niter": it, "max_points_per_centroid": mp},
                f"faiss.Kmeans(d, k, niter={it}, max_points_per_centroid={what}), then "
                "index.search(X, 1)")
    return c


CONTENDERS = _contenders()
GMMFAST = [w for w, (kind, _, _) in CONTENDERS.items() if kind == "gmmfast"]
FAISS = [w for w, (kind, _, _) in CONTENDERS.items() if kind == "faiss"]
#: scikit-learn's KMeans validates X with copy=copy_x (True): it copies the whole file into
#: memory, so it does not fit the memmap as a memmap.
MEMMAP_SKIP = {"sklearn": "not run by default on the memmap: scikit-learn's KMeans copies X "
                          "into memory before fitting (copy_x=True), so it does not fit the "
                          "file out of core; --contenders sklearn runs it"}


def resolve(who, n, k):
    """The keyword arguments a contender passes for n rows and k centers, and its 'fit key':
    two contenders with the same key run the same fit."""
    kind, kw, _ = CONTENDERS[who]
    kw = dict(kw)
    if kind == "gmmfast":
        s = kw.get("sample_size", "auto")
        if isinstance(s, tuple):                          # rows per center
            s = s[1] * k
        if isinstance(s, int) and s >= n:                 # documented: no more rows than the
            s = None                                      # sample: fitted on every row
        if "sample_size" in kw:
            kw["sample_size"] = s
        return kw, (kind, kw.get("eta", 0.1), s, kw.get("max_iter", 300))
    if kind == "faiss":
        niter = kw.get("niter", 25)
        mp = kw.get("max_points_per_centroid", 256)
        if mp == "all":
            mp = -(-n // k)
            kw["max_points_per_centroid"] = mp
        return kw, (kind, niter, min(n, mp * k))          # faiss subsamples only above mp * k
    return kw, (kind,)


# -- the child: one contender in this process -----------------------------------------------
def _status(*fields):
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key + ":" in fields:
                out[key] = int(line.split()[1])           # KiB, by name without ':' 
    return out


class _AnonPeak(threading.Thread):
    """The peak of RssAnon, sampled every ``every`` seconds (anonymous memory: the file
    pages of a memmap are not in it)."""

    def __init__(self, every=0.02):
        super().__init__(daemon=True)
        self.every, self.peak, self.stop = every, _status("RssAnon:")["RssAnon"], False

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, _status("RssAnon:")["RssAnon"])
            time.sleep(self.every)

    def finish(self):
        self.stop = True
        self.join()
        self.peak = max(self.peak, _status("RssAnon:")["RssAnon"])
        return self.peak


def child(spec):
    import numpy as np
    X = np.load(spec["path"], mmap_mode="r" if spec["memmap"] else None)
    n, d = X.shape
    k, who, kw = spec["k"], spec["who"], spec["kw"]
    kind = CONTENDERS[who][0]
    # import the contender's library (and the SSE's) before the baseline, so that 'added'
    # is the fit's own memory
    from gmmfast import kernel_info
    from gmmfast.cluster import inertia
    if kind == "gmmfast":
        from gmmfast import GMMKMeans
    elif kind == "sklearn":
        from sklearn.cluster import KMeans
    elif kind == "minibatch":
        from sklearn.cluster import MiniBatchKMeans
    else:
        import faiss
    extra = {}
    with open("/proc/self/clear_refs", "w") as f:     # reset the peak (VmHWM) to the RSS now
        f.write("5")
    before = _status("VmRSS:", "RssAnon:", "RssFile:")
    sampler = _AnonPeak() if spec["memmap"] else None
    if sampler:
        sampler.start()
    t = time.perf_counter()
    if kind == "gmmfast":
        est = GMMKMeans(k, random_state=0, **kw).fit(X)
        C, iters = est.cluster_centers_, est.n_iter_
    elif kind == "sklearn":
        est = KMeans(k, n_init=1, random_state=0).fit(X)
        C, iters = est.cluster_centers_, est.n_iter_
    elif kind == "minibatch":
        est = MiniBatchKMeans(k, n_init=1, random_state=0).fit(X)
        C, iters = est.cluster_centers_, est.n_iter_
        extra["steps"] = int(est.n_steps_)
    else:
        X32 = np.ascontiguousarray(X, dtype=np.float32)  # no copy of float32 rows (memmap too)
        t1 = time.perf_counter()
        km = faiss.Kmeans(d, k, **kw)
        km.train(X32)
        t2 = time.perf_counter()
        _, index = km.index.search(X32, 1)               # every row's label
        labels = index[:, 0]
        t3 = time.perf_counter()
        C, iters = km.centroids, km.cp.niter
        extra["split"] = dict(convert=t1 - t, train=t2 - t1, search=t3 - t2)
        extra["train_rows"] = min(n, km.cp.max_points_per_centroid * k)
        del labels
    seconds = time.perf_counter() - t
    after = _status("VmHWM:", "RssAnon:", "RssFile:")
    rec = dict(seconds=seconds, iterations=int(iters),
               added_mib=(after["VmHWM"] - before["VmRSS"]) / 1024.0,
               data_mib=X.nbytes / 2 ** 20, **extra)
    if sampler:
        rec["anon_added_mib"] = (sampler.finish() - before["RssAnon"]) / 1024.0
        rec["file_added_mib"] = (after["RssFile"] - before["RssFile"]) / 1024.0
    if kind == "gmmfast":
        rec["levels"] = [dict(rows=int(lv.rows), n_iter=int(lv.n_iter), seconds=lv.seconds,
                              objective_per_row=lv.objective / lv.rows) for lv in est.levels_]
    rec["sse"] = float(inertia(X, np.asarray(C, dtype=X.dtype))) / n
    from threadpoolctl import threadpool_info
    rec["pools"] = sorted({" ".join(str(p[f]) for f in ("internal_api", "version",
                                                         "architecture") if p.get(f))
                           + f": {p.get('num_threads')} thread(s)" for p in threadpool_info()})
    rec["simd"] = kernel_info()["simd"]
    print(json.dumps(rec))


# -- the parent -----------------------------------------------------------------------------
def data_path(data_dir, n, d, k, dtype):
    return Path(data_dir) / f"mixture_{n}x{d}_k{k}_{dtype}_seed0.npy"


def cell_dtype(n, memmap):
    return "float32" if memmap or n >= 10_000_000 else "float64"


def cell_key(n, d, k, memmap):
    return f"{n},{d},{k}" + (",memmap" if memmap else "")


def parse_key(key):
    parts = key.split(",")
    return int(parts[0]), int(parts[1]), int(parts[2]), len(parts) > 3


def fits_in_memory(n, d, memmap):
    if memmap:
        return True
    item = 4 if n >= 10_000_000 else 8
    return 3 * n * d * item < 20 * 2 ** 30


def warm(path):
    """Read the file once (into the page cache) and return the seconds it took."""
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass
    return time.perf_counter() - t


def run_one(spec, timeout, threads=None, cpus=None):
    env = dict(os.environ)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    argv = (["taskset", "-c", cpus] if cpus else []) + [
        sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", seconds=time.perf_counter() - t)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"]
        return dict(status="failed: " + lines[-1][:160])
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["status"] = "ok"
    notes = sorted({ln.strip()[:200] for ln in proc.stderr.splitlines() if "arn" in ln})
    if notes:
        rec["warnings"] = notes[:3]
    return rec


def cache(name):
    return OUT / f"{name}.json"


def command_line():
    """This run's command, as typed from the repository's root."""
    return " ".join(["python", "bench/scale.py"] + [shlex.quote(a) for a in sys.argv[1:]])


def load(name):
    path = cache(name)
    if not path.exists():
        return {}
    records = json.loads(path.read_text())
    if records.get("_format") != FORMAT:
        old = path.with_name(f"{name}.format1.json")
        path.rename(old)
        print(f"{path} holds records of the earlier scale.py: moved to {old}", flush=True)
        return {}
    return records


def save(records, name):
    path = cache(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    records["_format"] = FORMAT
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(records, indent=1))
    os.replace(tmp, path)


def parse_cells(text, memmap_rows):
    if not text:
        cells = list(GRID)
    else:
        cells = []
        for c in text.split(";"):
            c = c.strip()
            if c == "memmap":
                cells.append(MEMMAP_CELL + (True,))
                continue
            parts = [p.strip() for p in c.split(",")]
            if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "memmap"):
                raise SystemExit(f"--cells: expected n,d,k or n,d,k,memmap or memmap, got {c!r}")
            cells.append(tuple(int(float(v)) for v in parts[:3]) + (len(parts) == 4,))
    if memmap_rows:
        cells = [(memmap_rows, d, k, m) if m else (n, d, k, m) for n, d, k, m in cells]
    return cells


def pick_contenders(text, memmap):
    if not text:
        return [w for w in CONTENDERS if not (memmap and w in MEMMAP_SKIP)], True
    chosen = []
    for pat in (p.strip() for p in text.split(",")):
        hits = [w for w in CONTENDERS if fnmatch.fnmatchcase(w, pat)]
        if not hits:
            raise SystemExit(f"--contenders: {pat!r} matches none of {list(CONTENDERS)}")
        chosen += [w for w in hits if w not in chosen]
    return [w for w in CONTENDERS if w in chosen], False


def timed_out_smaller(records, n, d, k, who):
    """A cell no larger in n, d and k (and not this one) where ``who`` timed out, or None:
    every contender's work grows with n, d and k, so it would time out here too."""
    for key, cell in records.items():
        if key.startswith("_"):
            continue
        n2, d2, k2, _ = parse_key(key)
        if n2 <= n and d2 <= d and k2 <= k and (n2, d2, k2) != (n, d, k) \
                and cell.get(who, {}).get("status") == "timeout":
            return key
    return None


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Contenders:\n" + "\n".join(f"  {w!r}: {what}" for w, (_, _, what)
                                           in CONTENDERS.items()))
    ap.add_argument("--cells", default=None,
                    help="cells to run, separated by ';': 'n,d,k' (in memory: float64 below "
                         "1e7 rows, float32 from 1e7), 'n,d,k,memmap' (float32 .npy fitted "
                         "through np.load(mmap_mode='r')) or 'memmap' (the 1e8 x 16, k=100 "
                         "memmap cell). Default: n in {1e5, 1e6, 1e7} x d in {16, 64, 128} x k "
                         "in {100, 1000}, then the memmap cell")
    ap.add_argument("--memmap-rows", type=lambda v: int(float(v)), default=None,
                    help="rows of the memmap cell(s) instead of their n (e.g. 2e6 to check the "
                         "memmap path quickly; the file is generated once and kept)")
    ap.add_argument("--contenders", default=None,
                    help="comma-separated contender names or shell patterns (e.g. "
                         "'gmmfast*,faiss'); default: all (on the memmap cell all but "
                         "scikit-learn's KMeans, which copies X into memory); see the list "
                         "below or --list-contenders")
    ap.add_argument("--list-contenders", action="store_true",
                    help="print the contenders and what each one runs, then exit")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each contender (fresh processes, round by round over the "
                         "cell's contenders); times are the median (default 1)")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds after which a contender's process is stopped and reported "
                         "as timed out; it is then not tried in cells with no smaller n, d "
                         "and k in these records (default 900)")
    ap.add_argument("--resume", action="store_true",
                    help="skip contenders that already have a finished record for the cell "
                         "(to continue an interrupted grid); the report says when a cell's "
                         "records come from more than one run")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: write the markdown and the figures from the records")
    ap.add_argument("--name", default="scale",
                    help="records bench/out/NAME.json, results bench/results/NAME.md, "
                         "NAME_pareto.png and NAME.png (e.g. scale_2threads, so runs with other "
                         "threads keep their own records; default scale)")
    ap.add_argument("--threads", type=int, default=None,
                    help="limit every contender to this many threads (OMP_NUM_THREADS, "
                         "OPENBLAS_NUM_THREADS, MKL_NUM_THREADS); default: unlimited")
    ap.add_argument("--cpus", default=None,
                    help="run every contender under taskset -c CPUS (e.g. 1 with --threads 1)")
    ap.add_argument("--data-dir", default=str(DATA_DIR),
                    help="where the cells' data files are generated once and kept "
                         "(default bench/out/data; 1e7 x 128 float32 takes 4.8 GiB, the "
                         "1e8 x 16 memmap 6.0 GiB, the whole grid about 25 GiB)")
    ap.add_argument("--delete-data", action="store_true",
                    help="delete each cell's data file once its contenders have run (the "
                         "next run of the cell generates it again)")
    ap.add_argument("--child", default=None, metavar="SPEC",
                    help="internal: run one contender (a JSON spec) in this process and print "
                         "its record as JSON; the parent starts one such process per run")
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.list_contenders:
        for w, (_, _, what) in CONTENDERS.items():
            print(f"{w}: {what}")
        return
    cells = parse_cells(args.cells, args.memmap_rows)
    records = load(args.name)
    run_id = time.strftime("%Y-%m-%dT%H:%M:%S")
    if not args.report_only:
        records.setdefault("_runs", {})[run_id] = dict(command=command_line(), commit=commit_label())
        for n, d, k, memmap in cells:
            run_cell(records, args, run_id, n, d, k, memmap)
    report(records, args.name)


def run_cell(records, args, run_id, n, d, k, memmap):
    key = cell_key(n, d, k, memmap)
    cell = records.setdefault(key, {})
    if not fits_in_memory(n, d, memmap):
        cell["_skipped"] = "data does not fit in memory"
        save(records, args.name)
        return
    dtype = cell_dtype(n, memmap)
    path = data_path(args.data_dir, n, d, k, dtype)
    t = time.perf_counter()
    made = mixture_file(path, n, d, k, dtype)
    print(f"{key}: data {path} ({'generated' if made else 'cached'}, "
          f"{time.perf_counter() - t:.1f} s)", flush=True)
    who_list, default = pick_contenders(args.contenders, memmap)
    if memmap and default:
        for who, why in MEMMAP_SKIP.items():
            cell[who] = dict(status="skipped: " + why, run=run_id)
    todo, fit_keys = [], {}
    for who in CONTENDERS:                     # every contender's fit key, in canonical order
        kw, fk = resolve(who, n, k)
        same = fit_keys.setdefault(fk, who)
        if who not in who_list:
            continue
        if same != who:
            cell[who] = dict(status="same", same_as=same, run=run_id)
            continue
        if args.resume and cell.get(who, {}).get("status") == "ok":
            continue
        smaller = timed_out_smaller(records, n, d, k, who)
        if smaller:
            cell[who] = dict(status=f"skipped: timed out at the smaller cell {smaller} "
                                    "in these records", run=run_id)
            continue
        todo.append((who, kw))
    runs = {who: [] for who, _ in todo}
    for r in range(args.repeats):
        for who, kw in todo:
            if r and runs[who][-1]["status"] != "ok":
                continue
            warm_s = warm(path) if memmap else None
            spec = dict(path=str(path), memmap=memmap, k=k, who=who, kw=kw)
            load0 = os.getloadavg()[0]
            rec = run_one(spec, args.timeout, args.threads, args.cpus)
            rec.update(load_start=load0, load_end=os.getloadavg()[0])
            if warm_s is not None:
                rec["warm_read_s"] = warm_s
            runs[who].append(rec)
            print(key, who, f"run {r + 1}/{args.repeats}:",
                  {x: v for x, v in rec.items() if x not in ("levels", "pools")}, flush=True)
            cell[who] = merge(runs[who], args, run_id)
            save(records, args.name)
    if args.delete_data:
        path.unlink()


def merge(runs, args, run_id):
    """One record from a contender's runs: the median time; everything else from the run
    with the median time (SSE/n of every run kept)."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok or len(ok) < len(runs):
        rec = dict(runs[-1])
    else:
        times = [r["seconds"] for r in ok]
        rec = dict(sorted(ok, key=lambda r: r["seconds"])[(len(ok) - 1) // 2])
        rec["seconds"] = statistics.median(times)
        rec["times"] = times
        rec["sse_runs"] = [r["sse"] for r in ok]
    rec.update(threads=args.threads or os.cpu_count(), cpus=args.cpus, run=run_id,
               timeout=args.timeout, loads=[r.get("load_start") for r in runs])
    return rec


# -- the report -----------------------------------------------------------------------------
def short(who):
    """A point's label in the figure."""
    if who == "faiss":
        return "faiss defaults"
    if who.startswith("faiss niter="):
        it, mp = who[len("faiss niter="):].split(" mppc=")
        return f"{it} it/{mp}"
    if who == "gmmfast":
        return "GMMKMeans() auto"
    if who == "gmmfast sample_size=None":
        return "all rows"
    if who.startswith("gmmfast eta=1 sample_size="):
        s, m = who[len("gmmfast eta=1 sample_size="):].split(" max_iter=")
        return f"Lloyd {s}, {m} it"
    if who.startswith("gmmfast sample_size="):
        return who[len("gmmfast sample_size="):]
    return {"gmmfast eta=1": "Lloyd eta=1", "sklearn": "sklearn", "minibatch": "MiniBatch"}[who]


def point_label(cell, who):
    """A point's label, with the contenders that ran the same fit ('10 it/1024 = all')."""
    label = short(who)
    for other, r in cell.items():
        if isinstance(r, dict) and r.get("same_as") == who:
            alias = short(other)
            head = label.split("/")[0] + "/"
            label += " = " + (alias[len(head):] if alias.startswith(head) else alias)
    return label


def fmt_s(s):
    return f"{s:.3g}" if s < 10 else f"{s:.0f}"


def ok(cell, who):
    r = cell.get(who)
    return r if r and r.get("status") == "ok" else None


def verdicts(cell):
    """The issue's done-when tests on one cell's records: a dict of facts and sentences."""
    out = {}
    g, f = ok(cell, "gmmfast"), ok(cell, "faiss")
    if g and f:
        out["ratio"] = g["seconds"] / f["seconds"]
    below = {}
    for peer in ("faiss", "sklearn", "minibatch"):
        p = ok(cell, peer)
        below[peer] = g["sse"] < p["sse"] if g and p else None
    out["below"] = below
    gm = [(w, ok(cell, w)) for w in GMMFAST if ok(cell, w)]
    fa = [(w, ok(cell, w)) for w in FAISS if ok(cell, w)]
    cover = []
    for w, r in fa:
        hits = [(x, q) for x, q in gm if q["seconds"] <= r["seconds"] and q["sse"] < r["sse"]]
        best = min(hits, key=lambda h: h[1]["seconds"]) if hits else None
        cover.append((w, r, best))
    out["cover"] = cover
    out["pareto"] = (all(b for _, _, b in cover) if cover and gm else None)
    return out


def describe_status(r, cell):
    st = r.get("status", "not run")
    if st == "same":
        return f"same fit as {r['same_as']!r}"
    if st == "timeout":
        return f"stopped after {r.get('timeout', 0):.0f} s (timeout)"
    return st


def brief_status(r):
    """A record's status in a word or two (the cell's section says more)."""
    if not r:
        return "not run"
    st = r.get("status", "not run")
    return st.split(":")[0] if st != "same" else f"same as {r['same_as']}"


def yes_no(v):
    return "n/a" if v is None else ("yes" if v else "**no**")


def cell_title(key):
    n, d, k, memmap = parse_key(key)
    where = "float32 memmap (.npy, np.load(mmap_mode='r'))" if memmap else \
        ("float32 in memory" if n >= 10_000_000 else "float64 in memory")
    return f"{n:,} x {d}, k = {k}, {where}"


def cell_section(key, cell):
    n, d, _, memmap = parse_key(key)
    lines = [f"### {cell_title(key)}", ""]
    if "_skipped" in cell:
        return lines + [cell["_skipped"], ""]
    runs = sorted({r.get("run") for w, r in cell.items() if not w.startswith("_") and r.get("run")})
    if len(runs) > 1:
        lines += [f"Records of this cell come from {len(runs)} runs ({', '.join(runs)}): times "
                  "of different runs were measured under different loads.", ""]
    mem_head = (["peak anon MiB added (sampled)", "file pages MiB mapped"] if memmap
                else ["peak MiB added"])
    rows = []
    for who in CONTENDERS:
        r = cell.get(who)
        if r is None:
            continue
        if r.get("status") != "ok":
            rows.append([who, describe_status(r, cell)] + [""] * (5 + len(mem_head)))
            continue
        times = r.get("times", [r["seconds"]])
        wall = fmt_s(r["seconds"]) + (f" (median of {len(times)}: {min(times):.3g}-"
                                      f"{max(times):.3g})" if len(times) > 1 else "")
        if "split" in r:
            sp = r["split"]
            detail = (f"convert {sp['convert']:.2g} + train {sp['train']:.3g} on "
                      f"{r['train_rows']:,} rows + search {sp['search']:.3g}")
        elif "levels" in r:
            detail = " -> ".join(f"{lv['rows']:,} rows: {lv['n_iter']} it, {lv['seconds']:.3g} s"
                                 for lv in r["levels"])
        elif "steps" in r:
            detail = f"{r['steps']} steps"
        else:
            detail = ""
        sse = f"{r['sse']:.4f}"
        if len(set(r.get("sse_runs", [r["sse"]]))) > 1:
            sse += f" (runs: {min(r['sse_runs']):.4f}-{max(r['sse_runs']):.4f})"
        mem = ([f"{r['anon_added_mib']:.0f}", f"{r['file_added_mib']:.0f}"] if memmap
               else [f"{r['added_mib']:.0f}"])
        loads = [x for x in r.get("loads", [r.get("load_start")]) if x is not None]
        rows.append([who, wall, detail, r["iterations"], sse] + mem +
                     [r.get("threads", ""), "/".join(f"{x:.1f}" for x in loads)])
    lines.append(markdown_table(["contender", "wall s", "split / levels (rows, iterations, "
                                 "seconds)", "iterations", "SSE/n"] + mem_head +
                                ["threads", "load at start"], rows))
    v = verdicts(cell)
    lines.append("")
    if "ratio" in v:
        lines.append(f"- `GMMKMeans()` took {v['ratio']:.2f}x the time of faiss's defaults plus "
                     f"its labelling search ({fmt_s(ok(cell, 'gmmfast')['seconds'])} s against "
                     f"{fmt_s(ok(cell, 'faiss')['seconds'])} s): at most 2x: "
                     f"{yes_no(v['ratio'] <= 2)}.")
    g = ok(cell, "gmmfast")
    if g:
        parts = []
        for peer, below in v["below"].items():
            p = ok(cell, peer)
            if p:
                parts.append(f"{peer} {p['sse']:.4f}: {yes_no(below)}")
            else:
                r = cell.get(peer)
                parts.append(f"{peer}: {describe_status(r, cell) if r else 'not run'}")
        lines.append(f"- `GMMKMeans()`'s SSE/n {g['sse']:.4f} below " + "; ".join(parts) + ".")
    if v["cover"]:
        if v["pareto"]:
            lines.append("- Pareto: at every time budget a faiss point reaches, a gmmfast point "
                         "(any GMMKMeans configuration above) has no more time and a lower "
                         "SSE/n: **yes**.")
        else:
            lines.append("- Pareto: at every time budget a faiss point reaches, a gmmfast point "
                         "has no more time and a lower SSE/n: **no**; it fails at "
                         + ", ".join(f"{w!r} ({fmt_s(r['seconds'])} s, {r['sse']:.4f})"
                                     for w, r, b in v["cover"] if b is None) + ".")
        lines.append("")
        lines.append(markdown_table(
            ["faiss point", "wall s", "SSE/n", "fastest gmmfast point at no more time and lower "
             "SSE/n"],
            [[w, fmt_s(r["seconds"]), f"{r['sse']:.4f}",
              f"{b[0]} ({fmt_s(b[1]['seconds'])} s, {b[1]['sse']:.4f})" if b else "**none**"]
             for w, r, b in v["cover"]]))
    if memmap:
        warm_s = [r.get("warm_read_s") for r in cell.values() if isinstance(r, dict)
                  and r.get("warm_read_s") is not None]
        if warm_s:
            lines += ["", f"Before each contender the parent read the file once, so every "
                      f"contender started with it in the page cache ({min(warm_s):.2g}-"
                      f"{max(warm_s):.2g} s per read)."]
        per_row = [(w, r["anon_added_mib"] * 2 ** 20 / n) for w in CONTENDERS
                   if (r := ok(cell, w)) and "anon_added_mib" in r]
        if per_row:
            lines += ["", f"Anonymous memory each fit added per row of the file (a row is "
                      f"{4 * d} bytes; a copy of the rows would add at least that): "
                      + ", ".join(f"{w} {b:.0f} B" for w, b in per_row) + "."]
        if ok(cell, "faiss"):
            lines += ["", "faiss was given the memmap itself (train and index.search(X, 1) "
                      "in one call each): its float32 C-contiguous rows need no conversion, "
                      "so no row-block search was written."]
    lines.append("")
    return lines


def summary(records, keys):
    rows, tally = [], {"ratio": [], "below": [], "pareto": [], "partial": 0}
    for key in keys:
        cell = records[key]
        if "_skipped" in cell:
            continue
        v = verdicts(cell)
        g, f = ok(cell, "gmmfast"), ok(cell, "faiss")
        run = {p: b for p, b in v["below"].items() if b is not None}
        missing = [p for p, b in v["below"].items() if b is None]
        below_all = all(run.values()) if run and not missing else None
        below_txt = yes_no(below_all)
        if run and missing:
            below_txt = (f"{yes_no(all(run.values()))} over {', '.join(run)}; "
                         + ", ".join(f"{p}: {brief_status(cell.get(p))}" for p in missing))
        ratio = v.get("ratio")
        n, d, k, memmap = parse_key(key)
        rows.append([f"{n:,} x {d}, k={k}" + (", memmap" if memmap else ""),
                     fmt_s(g["seconds"]) if g else describe_status(cell.get("gmmfast", {}), cell),
                     fmt_s(f["seconds"]) if f else describe_status(cell.get("faiss", {}), cell),
                     f"{ratio:.2f}" if ratio is not None else "n/a",
                     f"{g['sse']:.4f}" if g else "", f"{f['sse']:.4f}" if f else "",
                     below_txt, yes_no(v["pareto"])])
        if ratio is not None:
            tally["ratio"].append(ratio <= 2)
        if below_all is not None:
            tally["below"].append(below_all)
        elif run:
            tally["partial"] += 1
        if v["pareto"] is not None:
            tally["pareto"].append(v["pareto"])
    table = markdown_table(["cell", "GMMKMeans() s", "faiss defaults + search s", "ratio",
                            "GMMKMeans() SSE/n", "faiss SSE/n",
                            "SSE/n below faiss, sklearn, MiniBatch", "Pareto"], rows)
    counts = "; ".join(f"{what}: {sum(t)}/{len(t)} cells" for what, t in
                       [("time at most 2x faiss", tally["ratio"]),
                        ("SSE/n below all three peers", tally["below"]),
                        ("Pareto test", tally["pareto"])])
    if tally["partial"]:
        counts += (f" ({tally['partial']} more cell(s) lack a peer's result: their SSE/n test "
                   "is shown over the peers that ran)")
    return table, counts


def report(records, name):
    keys = sorted((k for k in records if not k.startswith("_")), key=parse_key)
    pools = {}
    for k in keys:
        for w, r in records[k].items():
            if isinstance(r, dict) and w in CONTENDERS and r.get("status") == "ok":
                pools.setdefault(CONTENDERS[w][0], set()).update(r.get("pools", []))
    pools = "; ".join(f"{kind}: {', '.join(sorted(ps))}" for kind, ps in pools.items())
    simd = sorted({r["simd"] for k in keys for w, r in records[k].items()
                   if isinstance(r, dict) and r.get("simd")})
    threads = sorted({str(r.get("threads")) for k in keys for w, r in records[k].items()
                      if isinstance(r, dict) and r.get("status") == "ok"})
    cpus = sorted({str(r.get("cpus")) for k in keys for w, r in records[k].items()
                   if isinstance(r, dict) and r.get("status") == "ok"})
    repeats = sorted({len(r.get("times", [0])) for k in keys for w, r in records[k].items()
                      if isinstance(r, dict) and r.get("status") == "ok"})
    table, counts = summary(records, keys)
    used = sorted({r.get("run") for k in keys for r in records[k].values()
                   if isinstance(r, dict) and r.get("run")})
    runs = records.get("_runs", {})
    made = "\n".join(f"- {u}: `{runs[u]['command']}` on commit {runs[u]['commit']}"
                      if u in runs else f"- {u}: command not recorded" for u in used)
    what = "\n".join(f"- `{w}`: {txt}" for w, (_, _, txt) in CONTENDERS.items())
    simd = ", ".join(simd) or simd_name()
    body = f"""The records come from these runs (started at; the header above is the report's):
{made}

SIMD level the kernels dispatched to in the contenders' processes: {simd}.
Threads per contender: {', '.join(threads)} (OpenMP and BLAS limited through OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS; taskset -c {', '.join(cpus)}); threadpools the
contenders' processes reported: {pools or 'none recorded'} (the header's
threadpools line is the report-writing process's, not the contenders').
Runs per point: {', '.join(map(str, repeats))} (wall time: the median over runs, each a fresh
process, round by round over the cell's contenders). With one run a point is one
measurement: on this shared machine other jobs may have run at the same time; 'load at start'
is the 1-minute load average when each run started (it lags, and above the thread count other
jobs shared the cores and inflated the time).

What each contender runs (random_state=0 for gmmfast and scikit-learn; faiss's own default
seed):
{what}

Every wall time covers the fit and the labels of every row: GMMKMeans, KMeans and
MiniBatchKMeans compute labels_ in fit; faiss's time is the conversion to contiguous float32
(float64 cells: a copy; float32: none), Kmeans.train and index.search(X, 1), in one process.
SSE/n is recomputed outside the timing for every contender the same way
(gmmfast.cluster.inertia(X, centers) / n, in X's precision). Data: bench/_common.mixture, 4k
Gaussians, seed 0; float64 below 1e7 rows, float32 from 1e7 rows and in the memmap cell.
Peak memory: what the fit added to the process's resident set (in the memmap cell: the
anonymous memory it added, sampled every 20 ms, and the file pages it mapped). 'same fit as'
marks a configuration that runs exactly another's fit here (a sample at least as large as
the data is every row; faiss subsamples only above max_points_per_centroid x k rows), so it
was not run twice. A contender stopped by the timeout is not tried in larger cells (no
smaller n, d and k).

The done-when tests of issue 25, computed from these records: {counts}.
The Pareto test: every faiss point (defaults and knobs) must have a gmmfast point (any
GMMKMeans configuration run here: the sample sizes and eta=1) at no more wall time with a
lower SSE/n.

{table}

Figures: bench/results/{name}_pareto.png (SSE/n against wall time per cell, log time axis)
and bench/results/{name}.png (wall time against n, log-log).

## Cells

""" + "\n".join(line for key in keys for line in cell_section(key, records[key]))
    versions = {}
    for lib in ("faiss", "matplotlib"):
        try:
            versions[lib] = __import__(lib).__version__
        except ImportError:
            versions[lib] = "not installed"
    write_results(name, "Large-scale k-means: GMMKMeans against faiss (defaults and knobs), "
                  "scikit-learn and MiniBatch", body, versions)
    plot_pareto(records, keys, name)
    plot_scaling(records, keys, name)


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def place_labels(ax, points, fontsize=7):
    """Annotate ``points`` [(x, y, text, color, bold)] so that labels do not overlap each
    other or the markers: points within 3 px share one label ("a = b"), and each label takes
    the first free offset of a few around its point (an estimate of the text's box in
    pixels). Call after the axes' limits and the figure's layout are final."""
    px = ax.figure.dpi / 72.0
    height, char = fontsize * px * 1.25, fontsize * px * 0.56
    xy = [ax.transData.transform((x, y)) for x, y, *_ in points]
    groups = []
    for (x, y, text, color, bold), d in zip(points, xy):
        for g in groups:
            if g["color"] == color and abs(g["d"][0] - d[0]) < 3 and abs(g["d"][1] - d[1]) < 3:
                g["text"].append(text)
                g["bold"] |= bold
                break
        else:
            groups.append(dict(x=x, y=y, d=d, text=[text], color=color, bold=bold))
    taken = [(d[0] - 4, d[1] - 4, d[0] + 4, d[1] + 4) for d in xy]          # the markers
    bbox = ax.get_window_extent()
    offsets = [(5, 3), (5, -11), (-5, 3), (-5, -11), (5, 12), (-5, 12), (5, -20), (-5, -20),
               (5, 21), (-5, 21), (5, -29), (-5, -29)]
    for g in sorted(groups, key=lambda g: (g["d"][0], g["d"][1])):
        text = " = ".join(g["text"])
        w = len(text) * char
        choice = None
        for dx, dy in offsets:
            x0 = g["d"][0] + dx * px - (w if dx < 0 else 0)
            y0 = g["d"][1] + dy * px
            box = (x0, y0, x0 + w, y0 + height)
            inside = bbox.x0 <= box[0] and box[2] <= bbox.x1 and bbox.y0 <= box[1] \
                and box[3] <= bbox.y1
            free = all(box[2] < t[0] or t[2] < box[0] or box[3] < t[1] or t[3] < box[1]
                       for t in taken)
            if inside and free:
                choice = (dx, dy, box)
                break
        if choice is None:                       # crowded: the first offset, overlapping
            dx, dy = offsets[0]
            x0 = g["d"][0] + dx * px
            choice = (dx, dy, (x0, g["d"][1] + dy * px, x0 + w, g["d"][1] + dy * px + height))
        dx, dy, box = choice
        taken.append(box)
        ax.annotate(text, (g["x"], g["y"]), xytext=(dx, dy), textcoords="offset points",
                    ha="left" if dx >= 0 else "right", va="bottom", fontsize=fontsize,
                    color=g["color"], fontweight="bold" if g["bold"] else "normal")


def plot_pareto(records, keys, name):
    plt = _plt()
    keys = [k for k in keys if "_skipped" not in records[k]
            and any(ok(records[k], w) for w in CONTENDERS)]
    if plt is None or not keys:
        return
    cols = min(3, len(keys))
    nrows = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(7.0 * cols, 4.8 * nrows + 0.6),
                             squeeze=False)
    series = [("faiss.Kmeans + search (niter / max_points_per_centroid)", FAISS, "tab:red", "s"),
              ("GMMKMeans (sample_size: auto, s*k rows, all rows; or eta=1: Lloyd)", GMMFAST,
               "tab:blue", "o"),
              ("scikit-learn KMeans(n_init=1)", ["sklearn"], "tab:green", "^"),
              ("MiniBatchKMeans(n_init=1)", ["minibatch"], "tab:purple", "v")]
    labels = {}
    for ax, key in zip(axes.ravel(), keys):
        cell = records[key]
        pts = []
        for label, members, color, marker in series:
            mine = [(w, ok(cell, w)) for w in members if ok(cell, w)]
            if not mine:
                continue
            ax.scatter([r["seconds"] for _, r in mine], [r["sse"] for _, r in mine],
                       color=color, marker=marker, s=28, label=label, zorder=3)
            pts += [(r["seconds"], r["sse"], point_label(cell, w), color,
                     w in ("faiss", "gmmfast")) for w, r in mine]
        ax.set_xscale("log")
        ax.autoscale_view()
        x0, x1 = ax.get_xlim()
        ax.set_xlim(x0 / 1.3, x1 * 1.3)
        y0, y1 = ax.get_ylim()
        ax.set_ylim(y0 - 0.04 * (y1 - y0), y1 + 0.08 * (y1 - y0))
        gm = sorted((r["seconds"], r["sse"]) for w in GMMFAST if (r := ok(cell, w)))
        if gm:                                   # gmmfast's best SSE/n within each budget
            xs, ys, best = [], [], math.inf
            for t, s in gm:
                if s < best:
                    best = s
                    xs.append(t)
                    ys.append(s)
            ax.step(xs + [ax.get_xlim()[1]], ys + [ys[-1]], where="post", color="tab:blue",
                    alpha=0.35, lw=1, label="GMMKMeans: lowest SSE/n within the time")
        ax.set_title(cell_title(key), fontsize=9)
        ax.set_xlabel("wall time: fit + every row's label (s, log scale)")
        ax.set_ylabel("SSE / n over all rows")
        ax.grid(True, which="both", alpha=0.3)
        ax._pareto_points = pts
        for h, lab in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(lab, h)
    for ax in axes.ravel()[len(keys):]:
        ax.axis("off")
    ncol = 2 if cols == 1 else 3
    legend_in = 0.25 * -(-len(labels) // ncol) + 0.1
    fig.set_size_inches(7.0 * cols, 4.8 * nrows + legend_in)
    fig.legend(list(labels.values()), list(labels.keys()), loc="lower center", ncol=ncol,
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, legend_in / (4.8 * nrows + legend_in), 1, 1))
    for ax in axes.ravel()[:len(keys)]:
        place_labels(ax, ax._pareto_points)
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / f"{name}_pareto.png", dpi=100)
    plt.close(fig)


def plot_scaling(records, keys, name):
    plt = _plt()
    main = ["gmmfast", "gmmfast eta=1", "sklearn", "minibatch", "faiss"]
    pts = {}
    for key in keys:
        n, d, k, _ = parse_key(key)
        for w in main:
            r = ok(records[key], w)
            if r:
                pts.setdefault((d, k), {}).setdefault(w, []).append((n, r["seconds"]))
    if plt is None or not pts:
        return
    panels = sorted(pts)
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.5 * cols, 3.5 * nrows), squeeze=False)
    for ax, (d, k) in zip(axes.ravel(), panels):
        for w in main:
            p = sorted(pts[(d, k)].get(w, []))
            if p:
                ax.loglog(*zip(*p), marker="o", label=short(w))
        ax.set_title(f"d={d}, k={k}", fontsize=9)
        ax.set_xlabel("n")
        ax.set_ylabel("wall s")
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    main()
