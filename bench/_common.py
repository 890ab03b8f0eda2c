"""Shared helpers for the benchmarks: the results header and alternating timings.

Every script under bench/ answers one question, prints a table and writes it to
bench/results/NAME.md, headed by how it was made (see DESIGN.md, Benchmarks).

Scripts run as ``python bench/NAME.py`` (from the repository's root, with gmmfast
installed, e.g. ``pip install -e .``) and import this module as ``from _common import ...``:
Python puts the script's folder, bench/, first on sys.path.
"""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DATA = ROOT.parent / "shared" / "data"


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_header(command: str) -> str:
    """Markdown lines: command, date, commit, CPU, cores, SIMD level, library versions, BLAS."""
    import scipy
    from threadpoolctl import threadpool_info
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        commit += " (with uncommitted changes)" if dirty else ""
    except OSError:
        commit = "unknown"
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
        f"{scipy.__version__}, scikit-learn {skl}",
        f"- threadpools: {blas}",
    ]
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines.append(f"- load average when written (1, 5, 15 min): {load} on {os.cpu_count()} "
                     "cores; above ~0.5 other jobs shared the machine")
    except OSError:
        pass
    if "OPENBLAS_CORETYPE" in os.environ:
        lines.append(f"- OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} (changes the BLAS kernels)")
    return "\n".join(lines)


def write_results(name: str, title: str, body: str) -> Path:
    """Write bench/results/NAME.md with the machine header and ``body``; print it too."""
    command = "python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    text = f"# {title}\n\n{machine_header(command)}\n\n{body.rstrip()}\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
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
            block: int = 1_000_000) -> np.ndarray:
    """The scale benchmarks' data: a mixture of 4k Gaussians in d dimensions,
    ``M = normal(scale=10, (4k, d)); X = M[randint(4k, n)] + normal((n, d))``, generated
    block by block straight into ``dtype`` (no float64 copy of a float32 set)."""
    rng = np.random.default_rng(seed)
    M = rng.normal(scale=10.0, size=(4 * k, d))
    X = np.empty((n, d), dtype=dtype)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        X[lo:hi] = M[rng.integers(4 * k, size=hi - lo)] + rng.normal(size=(hi - lo, d))
    return X


def simd_name() -> str:
    """The SIMD level the nearest-center search dispatches to on this machine."""
    from gmmfast import kernel_info
    return kernel_info()["simd"]
