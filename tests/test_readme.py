"""README.md runs as written: every ```python block executes verbatim in a fresh interpreter
(outside the source tree, so on the gmmfast that the tests import), and the two ```bash
blocks that .ci/run executes are the first two, in their order (install + main job, then
the test command on a wheel)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def fenced_blocks(text: str, language: str) -> list:
    """The contents of the ```LANGUAGE blocks of ``text``, in order (as .ci/run reads them:
    an opening line exactly ```LANGUAGE, a closing line exactly ```)."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```$", text, re.M | re.S)


def python_blocks() -> list:
    return fenced_blocks(README.read_text(encoding="utf-8"), "python")


def test_readme_has_python_blocks():
    assert python_blocks(), "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs_verbatim(index, tmp_path):
    code = python_blocks()[index]
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, f"README python block {index + 1} failed:\n{code}\n{run.stderr}"


def test_readme_bash_blocks_are_what_ci_runs():
    bash = fenced_blocks(README.read_text(encoding="utf-8"), "bash")
    assert len(bash) >= 2
    install, tests = bash[0], bash[1]
    # 1st: a user's install from the clone, then the main job
    assert "pip install ." in install and "gmmfast compare" in install
    # 2nd: a wheel built, installed with its test extras, the suite run against it
    assert "pip wheel --no-deps -w dist ." in tests
    assert re.search(r"pip install \"\$\(ls dist/gmmfast-\*\.whl\)\[test[,\w]*\]\"", tests)
    assert "pytest" in tests and "python -m pytest" not in tests    # -m would add the cwd
    # ...and the documentation built with warnings as errors (the docs extra installed)
    assert re.search(r"\[test[,\w]*docs[,\w]*\]", tests)
    # sphinx-build, not python -m sphinx: -m would put the clone's root, the unbuilt source
    # tree, first on the path
    assert "sphinx-build -W --keep-going -b html docs docs/_build/html" in tests
    assert "python -m sphinx" not in tests


def test_fenced_blocks_reads_what_ci_reads():
    text = "x\n```bash\nfirst\n```\n```python\nimport os\n```\n```bash\nsecond\nthird\n```\n"
    assert fenced_blocks(text, "bash") == ["first\n", "second\nthird\n"]
    assert fenced_blocks(text, "python") == ["import os\n"]
