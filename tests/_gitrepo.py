"""Helpers of the tests of the bench tools that work on git repositories (stale.py,
remeasure.py): a bench script imported as a module, and git in a temporary repository."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def bench_module(name: str) -> Iterator[ModuleType]:
    """bench/<name>.py imported as the module bench_<name> (registered while in use:
    dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def git(repo: Path, *args: str) -> str:
    """git ``args`` in ``repo``; its output, stripped."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def init_repo(repo: Path) -> None:
    """An empty repository at ``repo`` with a committer set and no signing."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "commit.gpgsign", "false")
