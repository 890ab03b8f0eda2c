"""bench/_common.py refuses to measure a gmmfast imported from another working tree, and keeps
a results file's hand-written notes when it writes the file again."""
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


def test_a_rewritten_results_file_keeps_its_hand_written_notes(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import _common
    finally:
        sys.path.remove(str(ROOT / "bench"))
    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.setattr(_common, "machine_header", lambda command, versions=None: "- header")
    path = _common.write_results("r", "Title", "| a |\n| 1 |\n")
    assert "Notes" not in path.read_text()
    notes = "## Notes (written by hand after the run; everything above is generated)\n\nWhy.\n"
    path.write_text(path.read_text() + "\n" + notes)
    _common.write_results("r", "Title", "| a |\n| 2 |\n")
    text = path.read_text()
    assert "| 2 |" in text and "| 1 |" not in text
    assert text.endswith("\n\n" + notes) and text.count("## Notes") == 1
