"""bench/remeasure.py: where each stale command runs, and the runner's commits."""
from __future__ import annotations

import shlex
import shutil
import sys

import pytest

from _gitrepo import bench_module, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def remeasure():
    with bench_module("remeasure") as module:
        yield module


def test_commands_go_to_their_core_a_free_core_or_both_cores(remeasure):
    cmds = [
        "python bench/scale.py --cells 10000000,16,1000 --contenders 'gmmfast,gmmfast "
        "sample_size=32*k' --repeats 1 --threads 1 --cpus 0 --name scale_faiss_1e7k1000",
        "python bench/scale.py --cells '100000,16,100;1000000,16,100' --repeats 3 --threads 1 "
        "--cpus 1 --name scale_faiss",
        "python bench/table1.py",
        "python bench/scenes_table3.py --jobs 1 --seeds 1 --inits 0,0.25",
        "python bench/scenes_table3.py --jobs 2 --seeds 1 --inits 0,0.25,0.5,1",
        "python bench/scale.py --cells 1000000,16,100 --repeats 3 --threads 2 --name x",
        "python bench/lloyd_iteration.py --repeats 3 --sizes 10000,2,200;100000,16,100",
        "python bench/scale_dask.py --part small --repeats 5",
    ]
    work = remeasure.plan(cmds)
    assert work["0"] == cmds[:1] and work["1"] == cmds[1:2]
    assert work["any"] == cmds[2:4]
    assert work["alone"] == cmds[4:]


def test_each_command_s_results_are_committed_with_its_exit_status(remeasure, tmp_path):
    repo = tmp_path / "repo"
    (repo / "bench" / "results").mkdir(parents=True)
    (repo / "bench" / "results" / "keep.md").write_text("old\n")
    init_repo(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")

    def writes(name: str, rc: int = 0) -> str:
        code = (f"import pathlib, sys; pathlib.Path('bench/results/{name}.md')"
                f".write_text('{name}; x'); sys.exit({rc})")
        return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"

    work = {"0": [writes("a")], "1": [writes("b", rc=3)], "any": [writes("c"), writes("d")],
            "alone": [writes("e")]}
    log = tmp_path / "log.txt"
    remeasure.Runner(repo, log, pin=False).streams(work)
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert len(subjects) == 6                                   # five results and the start
    assert sum("(rc=3)" in s for s in subjects) == 1 and "(rc=0)" in subjects[0]
    assert subjects[0].endswith(work["alone"][0])               # the one alone runs last
    for name in "abcde":
        assert (repo / "bench" / "results" / f"{name}.md").read_text() == f"{name}; x"
    assert git(repo, "status", "--porcelain") == ""
    lines = log.read_text().splitlines()
    assert sum(" START " in line for line in lines) == 5
    assert sum(" END rc=" in line for line in lines) == 5
    # a command that writes nothing makes no commit
    remeasure.Runner(repo, log, pin=False).run(f"{shlex.quote(sys.executable)} -c pass", None)
    assert len(git(repo, "log", "--format=%s").splitlines()) == 6
