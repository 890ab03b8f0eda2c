import os
from pathlib import Path

import pytest
from hypothesis import settings

# The same examples on every run: CI must not pass or fail by the draw of the day.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

ROOT = Path(__file__).resolve().parents[1]


def pytest_report_header(config):
    """Which gmmfast the suite tests: the installed wheel (CI: README's test command) or the
    source tree built in place (a developer's editable install)."""
    import gmmfast
    where = Path(gmmfast.__file__).resolve().parent
    kind = "source tree of this clone" if where == ROOT / "gmmfast" else "installed"
    info = gmmfast.kernel_info()
    return (f"gmmfast {gmmfast.__version__} from {where} ({kind}); kernels: {info['simd']}, "
            f"{info['openmp_max_threads']} OpenMP threads")


def shared_data_dir() -> Path:
    """The project's benchmark data: $GMMFAST_SHARED_DATA, else ../shared/data next to the
    repository, else the workplace's /work/shared/data."""
    env = os.environ.get("GMMFAST_SHARED_DATA")
    if env:
        return Path(env)
    for path in (ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if (path / "sipu").is_dir():
            return path
    return ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "sipu").is_dir():
        pytest.skip(f"benchmark data not found at {path} (set GMMFAST_SHARED_DATA)")
    return path


INTERRUPT_SCRIPT = """
import os, signal, sys, threading, time
# a shell that starts the tests in the background (`cmd &`) makes SIGINT ignored, and
# Python keeps it so: restore the handler a terminal would give
signal.signal(signal.SIGINT, signal.default_int_handler)
{setup}
sent = []
def fire():
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer({delay}, fire).start()
try:
    {call}
except KeyboardInterrupt:
    print("interrupted after", time.perf_counter() - sent[0])
    sys.exit(0)
print("finished without an interrupt")
sys.exit(1)
"""


@pytest.fixture
def interrupted():
    """Run ``call`` (after ``setup``) in a fresh interpreter, send it SIGINT ``delay`` s after
    the call starts; return the seconds from the signal to the KeyboardInterrupt (fails if
    the call finishes, hangs past ``timeout`` or dies)."""
    import subprocess
    import sys

    def run(setup: str, call: str, delay: float = 1.0, timeout: float = 120.0) -> float:
        code = INTERRUPT_SCRIPT.format(setup=setup, call=call, delay=delay)
        try:
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{call} still running {timeout} s after SIGINT")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return float(proc.stdout.split("interrupted after")[1])

    return run


#: Statistics of the fuzz test (test_fuzz.py), reported at the end of the run.
FUZZ_STATS = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = config.stash.get(FUZZ_STATS, None)
    if not stats:
        return
    tr = terminalreporter
    tr.section("fuzz test")
    total = sum(len(s["distinct"]) for s in stats.values())
    seconds = sum(s["seconds"] for s in stats.values())
    tr.write_line(f"{total} distinct inputs over {len(stats)} targets, {seconds:.1f} s in the "
                  "worker process")
    for name, s in sorted(stats.items()):
        tr.write_line(f"  {name}: {len(s['distinct'])} distinct, {s['valid']} valid results, "
                      f"{s['named']} named errors, {s['fail']} failures, {s['seconds']:.1f} s")
