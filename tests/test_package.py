"""The package as a user meets it: importing a source tree that was never built."""
import shutil
import subprocess
import sys

import gmmfast


def test_unbuilt_source_tree_says_what_to_run(tmp_path):
    # a copy of the package without its compiled kernels, imported from the copy's root
    shutil.copytree(gmmfast.__path__[0], tmp_path / "gmmfast",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    run = subprocess.run([sys.executable, "-c", "import gmmfast"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: gmmfast is being imported from its source tree")
    assert "run `pip install -e .` in " + str(tmp_path) in last
