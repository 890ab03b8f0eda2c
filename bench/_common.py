"""Shared helpers for the benchmarks: the results header and alternating timings.

Every script under bench/ answers one question, prints a table and writes it to
bench/results/NAME.md, headed by how it was made (see DESIGN.md, Benchmarks).

Scripts run as ``python bench/NAME.py`` (from the repository's root, with this repository's
gmmfast installed, e.g. ``pip install -e .``; one imported from another working tree is
refused) and import this module as ``from _common import ...``: Python puts the script's
folder, bench/, first on sys.path.
"""
from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _check_measured_package() -> None:
    """Refuse to measure another tree's gmmfast: a script run from a clone while gmmfast is
    installed in editable mode from another working tree (``pip install -e /elsewhere``)
    imports that tree's code, and its results would carry this clone's commit. An installed
    (non-editable) package is taken as built from this repository."""
    import gmmfast
    where = Path(gmmfast.__file__).resolve().parents[1]
    if where != ROOT and ((where / "setup.py").is_file() or (where / ".git").exists()):
        raise SystemExit(f"bench: gmmfast is imported from {where}, not from this repository "
                         f"({ROOT}): the results would carry this repository's commit. Build "
                         f"this repository's kernels and run with PYTHONPATH={ROOT}, or "
                         f"pip install -e {ROOT}.")


_check_measured_package()
RESULTS = ROOT / "bench" / "results"
DATA = ROOT.parent / "shared" / "data"


def _cpu_model() -> str:
    """The CPU's model name, with its family and model numbers where /proc/cpuinfo has them
    (a virtual machine may name only "AMD EPYC": family 25 is Zen 3 or 4, 26 Zen 5)."""
    fields: Dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model") and key not in fields:
                fields[key] = value.strip()
            if not line.strip() and fields:
                break                      # the first processor's block is enough
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return name


def commit_label() -> str:
    """HEAD's short hash, marked when tracked files other than results have uncommitted
    changes. Results files (bench/results/) are not what a script measures: another
    script's uncommitted report does not make this run's code differ from HEAD."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    try:
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                    ":(exclude)bench/results")
        return git("rev-parse", "--short", "HEAD") + (" (with uncommitted changes)"
                                                      if dirty else "")
    except OSError:
        return "unknown"


def machine_header(command: str, versions: Optional[Dict[str, str]] = None) -> str:
    """Markdown lines: command, date, commit, CPU, cores, SIMD level, library versions (and
    ``versions``, e.g. a contender's library), BLAS."""
    import scipy
    from threadpoolctl import threadpool_info
    commit = commit_label()
    try:
        import sklearn
        skl = sklearn.__version__
    except ImportError:
        skl = "not installed"
    blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('user_api')}, "
                     f"{i.get('num_threads')} threads, {i.get('architecture', '?')})"
                     for i in threadpool_info())
    lines = [
        f"- command: `{command}`",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- commit: {commit}",
        f"- machine: {_cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; SIMD level of the kernels: {simd_name()}",
        f"- python {platform.python_version()}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, scikit-learn {skl}"
        + "".join(f", {lib} {v}" for lib, v in (versions or {}).items()),
        f"- threadpools: {blas}",
    ]
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines.append(f"- load average when written (1, 5, 15 min): {load} on {os.cpu_count()} "
                     "cores; above ~0.5 other jobs shared the machine")
    except OSError:
        pass
    for var, what in (("OPENBLAS_CORETYPE", "changes the BLAS kernels"),
                      ("GMMFAST_SIMD", "caps gmmfast's kernels' instruction set"),
                      ("FAISS_OPT_LEVEL", "chooses faiss's instruction set")):
        if os.environ.get(var):
            lines.append(f"- {var}={os.environ[var]} ({what})")
    return "\n".join(lines)


#: The heading of a results file's hand-written section, kept when the file is re-measured.
NOTES_HEADING = "## Notes (written by hand"


def write_results(name: str, title: str, body: str,
                  versions: Optional[Dict[str, str]] = None) -> Path:
    """Write bench/results/NAME.md with the machine header (``versions``: more libraries'
    versions for it) and ``body``; print it too.

    The previous file's hand-written notes (from a line starting with
    :data:`NOTES_HEADING` to its end) are kept after the new body, and a warning says they
    were written for the previous run: re-read them against the new figures."""
    # as a shell takes it: "--sizes '10000,2,200;...'" stays one argument when pasted
    command = "python " + shlex.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    text = f"# {title}\n\n{machine_header(command, versions)}\n\n{body.rstrip()}\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    at = old.find("\n" + NOTES_HEADING)
    if at >= 0:
        text += old[at:].rstrip() + "\n"
        print(f"warning: {path.name} keeps its hand-written notes from the previous run; "
              "re-read them against the new figures", file=sys.stderr)
    path.write_text(text)
    print(text)
    return path


def alternate(funcs: Dict[str, Callable[[], object]], repeats: int = 5,
              block: int = 1) -> Dict[str, List[float]]:
    """Time each function ``repeats`` times ``block`` calls in a row, alternating between
    them round by round; seconds per call.

    Blocks keep one library's threads from competing with the next one's: OpenBLAS's
    threads busy-wait for a while after a call.
    """
    times: Dict[str, List[float]] = {name: [] for name in funcs}
    for _ in range(repeats):
        for name, fn in funcs.items():
            for _ in range(block):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    return times


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table."""
    out = ["| " + " | ".join(map(str, header)) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(out)


def mixture(n: int, d: int, k: int, dtype=np.float64, seed: int = 0,
            block: int = 1_000_000, out: Optional[np.ndarray] = None) -> np.ndarray:
    """The scale benchmarks' data: a mixture of 4k Gaussians in d dimensions,
    ``M = normal(scale=10, (4k, d)); X = M[randint(4k, n)] + normal((n, d))``, generated
    block by block straight into ``dtype`` (no float64 copy of a float32 set), into ``out``
    (an (n, d) array of ``dtype``, e.g. a memory-mapped .npy) when given: the same rows."""
    rng = np.random.default_rng(seed)
    M = rng.normal(scale=10.0, size=(4 * k, d))
    X = np.empty((n, d), dtype=dtype) if out is None else out
    if X.shape != (n, d) or X.dtype != np.dtype(dtype):
        raise ValueError(f"out must be ({n}, {d}) {np.dtype(dtype)}, got {X.shape} {X.dtype}")
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        X[lo:hi] = M[rng.integers(4 * k, size=hi - lo)] + rng.normal(size=(hi - lo, d))
    return X


def mixture_file(path: Path, n: int, d: int, k: int, dtype=np.float64, seed: int = 0) -> bool:
    """:func:`mixture`'s rows written block by block into the .npy file ``path`` (through
    ``np.lib.format.open_memmap``: never the whole set in memory), unless ``path`` already
    holds an (n, d) array of ``dtype``. A file is renamed into place only once complete.
    Returns whether it was generated now."""
    path = Path(path)
    if path.exists():
        try:
            old = np.load(path, mmap_mode="r")
            if old.shape == (n, d) and old.dtype == np.dtype(dtype):
                return False
        except (ValueError, OSError):
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    X = np.lib.format.open_memmap(part, mode="w+", dtype=dtype, shape=(n, d))
    mixture(n, d, k, dtype, seed, out=X)
    X.flush()
    del X
    os.replace(part, path)
    return True


def simd_name() -> str:
    """The SIMD level the nearest-center search dispatches to on this machine."""
    from gmmfast import kernel_info
    return kernel_info()["simd"]
