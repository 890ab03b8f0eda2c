"""Re-measure the stale results: run the commands ``bench/stale.py --commands`` lists and
commit each results file as its command ends.

    python bench/remeasure.py --plan      # which command runs where, then exit
    python bench/remeasure.py             # run them (a built, clean checkout; see below)

Run it from the checkout whose code the results should measure, with its kernels built
(``python setup.py build_ext --inplace``) and ``PYTHONPATH`` at it, as every bench script
asks; ``git status`` must show no change (a results header names the commit it ran on).

The commands run in two streams, one pinned to each core (``taskset -c 0`` and ``-c 1``):
a command that pins its own contenders (``--cpus N``) runs in stream N, the other
one-thread commands in whichever stream is free; then the commands that use both cores
(``--threads 2``, ``--jobs 2``, and the scripts in :data:`BOTH_CORES`) run one at a time,
alone. That is how the published results were measured: each contender has a core, and
the load a run saw is in its header. After each command its results are committed
(``git commit -- bench/results``, the message naming the command and its exit status);
``bench/out/remeasure.log`` has every start and end. Stopped (Ctrl-C) and run again, it
picks up what is still stale: the committed results are fresh.

Commands run without a shell (split as a shell would, quotes and all): a header's command
is its arguments joined by spaces, so an argument with ``;`` in it (``--sizes
10000,2,200;...``) stays one argument.
"""
from __future__ import annotations

import argparse
import queue
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]

#: Scripts whose runs use both cores whatever their arguments (they time one and two
#: threads, or start Dask workers): they run alone.
BOTH_CORES = ("lloyd_iteration", "walk_throughput", "scale_dask")
CORES = (0, 1)


def where(command: str) -> str:
    """"0" or "1" (the core its ``--cpus`` pins it to), "any" (one thread, either core) or
    "alone" (both cores)."""
    args = shlex.split(command)
    script = next((Path(a).stem for a in args if a.endswith(".py")), "")
    for flag in ("--threads", "--jobs"):
        if flag in args[:-1] and args[args.index(flag) + 1] != "1":
            return "alone"
    if script in BOTH_CORES:
        return "alone"
    if "--cpus" in args[:-1]:
        cpus = args[args.index("--cpus") + 1]
        return cpus if cpus in {str(c) for c in CORES} else "alone"
    return "any"


def plan(commands: Sequence[str]) -> Dict[str, List[str]]:
    """The commands by where they run (see :func:`where`), each list in the given order."""
    out: Dict[str, List[str]] = {str(c): [] for c in CORES}
    out.update(any=[], alone=[])
    for c in commands:
        out[where(c)].append(c)
    return out


class Runner:
    """Runs commands in ``root`` (pinned to their stream's core with ``pin``) and commits
    ``bench/results`` after each (one commit at a time), logging to ``log``."""

    def __init__(self, root: Path, log: Path, pin: bool = True):
        self.root, self.log, self.pin = Path(root), Path(log), pin
        self.lock = threading.Lock()
        self.log.parent.mkdir(parents=True, exist_ok=True)

    def note(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {text}"
        with self.lock:
            with self.log.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        print(line, flush=True)

    def _results(self) -> Dict[str, Tuple[int, int]]:
        """(mtime in ns, size) of every file under bench/results."""
        top = self.root / "bench" / "results"
        return {str(f): (f.stat().st_mtime_ns, f.stat().st_size)
                for f in top.rglob("*") if f.is_file()} if top.is_dir() else {}

    def run(self, command: str, core: Optional[int]) -> int:
        pin = [] if core is None or not self.pin else ["taskset", "-c", str(core)]
        where_ = "both cores" if core is None else f"core {core}"
        before = self._results()
        self.note(f"START {where_}: {command}")
        rc = subprocess.run(pin + shlex.split(command), cwd=self.root).returncode
        self.note(f"END rc={rc} {where_}: {command}")
        wrote = self._results() != before
        message = f"re-measure (rc={rc}): {command}"
        with self.lock:
            subprocess.run(["git", "add", "-A", "bench/results"], cwd=self.root, check=True)
            if subprocess.run(["git", "diff", "--cached", "--quiet", "--", "bench/results"],
                              cwd=self.root).returncode:
                subprocess.run(["git", "commit", "-q", "-m", message, "--", "bench/results"],
                               cwd=self.root, check=True)
            elif wrote:
                # the other stream's run ended at the same time and its commit took these
                # files too: this run still gets its commit, its message and exit status
                subprocess.run(["git", "commit", "-q", "--allow-empty", "-m",
                                message + " (its files are in the commit before)"],
                               cwd=self.root, check=True)
        return rc

    def streams(self, work: Dict[str, List[str]]) -> None:
        """The pinned streams (own queue first, then the shared one), then the rest alone."""
        shared: "queue.Queue[str]" = queue.Queue()
        for c in work["any"]:
            shared.put(c)

        def stream(core: int) -> None:
            for c in work[str(core)]:
                self.run(c, core)
            while True:
                try:
                    c = shared.get_nowait()
                except queue.Empty:
                    return
                self.run(c, core)

        threads = [threading.Thread(target=stream, args=(core,)) for core in CORES]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in work["alone"]:
            self.run(c, None)


def main(argv: Optional[Iterable[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", action="store_true", help="print the plan and exit")
    ap.add_argument("--log", type=Path, default=ROOT / "bench" / "out" / "remeasure.log")
    args = ap.parse_args(None if argv is None else list(argv))
    sys.path.insert(0, str(ROOT / "bench"))
    import stale
    work = plan(stale.commands(stale.check(ROOT), ROOT))
    if args.plan:
        for key, cmds in work.items():
            label = {"any": "either core", "alone": "alone, both cores"}.get(key, f"core {key}")
            for c in cmds:
                print(f"{label}: {c}")
        return 0
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    if dirty.strip():
        print("remeasure: the checkout has uncommitted changes; commit or stash them first "
              "(a results header names the commit it ran on):\n" + dirty, file=sys.stderr)
        return 2
    Runner(ROOT, args.log).streams(work)
    left = stale.commands(stale.check(ROOT), ROOT)
    print(f"still stale: {len(left)} command(s)" if left else "every cited result is fresh")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
