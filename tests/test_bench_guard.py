"""bench/_common.py refuses to measure a gmmfast imported from another working tree."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_bench_script_refuses_another_trees_gmmfast(tmp_path):
    other = tmp_path / "other"
    (other / "gmmfast").mkdir(parents=True)
    (other / "gmmfast" / "__init__.py").write_text("")
    (other / "setup.py").write_text("")                 # a working tree, not an install
    code = f"import sys; sys.path[:0] = [{str(other)!r}, {str(ROOT / 'bench')!r}]; import _common"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 1
    assert f"gmmfast is imported from {other}" in out.stderr
    assert f"not from this repository ({ROOT})" in out.stderr
    # an installed package (no working tree around it) is taken as this repository's
    (other / "setup.py").unlink()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
