"""bench/passes.py: the per-pass report of a default fit, and its refusals."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "passes.py"), *args],
                          capture_output=True, text=True, cwd=cwd)


def test_every_incremental_pass_and_level_is_reported(tmp_path):
    out = run("--cell", "30000,4,20", "--min-rows", "0", "--data-dir", str(tmp_path),
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.search(r"30,000 rows, exact pass: +[\d.]+ ms, searched +30,000", out.stdout)
    passes = re.findall(r"30,000 rows, pass +(\d+): +([\d.]+) ms", out.stdout)
    assert passes and [int(p) for p, _ in passes] == list(range(1, len(passes) + 1))
    total = float(re.search(r"incremental passes on 30,000 rows: ([\d.]+) s", out.stdout)[1])
    assert abs(total - sum(float(ms) for _, ms in passes) / 1e3) < 2e-3
    fit = re.search(r"fit: [\d.]+ s, SSE/n ([\d.]+); levels: (.*)", out.stdout)
    assert fit and "30,000 rows" in fit[2]
    assert (tmp_path / "mixture_30000x4_k20_float64_seed0.npy").is_file()


def test_bad_arguments_are_refused_before_any_work(tmp_path):
    out = run("--cell", "30000,4", cwd=tmp_path)
    assert out.returncode != 0 and "--cell must be 'n,d,k'" in out.stderr
    out = run("--cell", "10,4,20", cwd=tmp_path)
    assert out.returncode != 0 and "n >= k >= 1" in out.stderr
    out = run("--data", str(tmp_path / "none.npy"), "--k", "3", cwd=tmp_path)
    assert out.returncode != 0 and "no such file" in out.stderr
    out = run("--data", str(tmp_path / "none.npy"), cwd=tmp_path)
    assert out.returncode != 0 and "--data needs --k" in out.stderr
    assert not list(tmp_path.iterdir())
