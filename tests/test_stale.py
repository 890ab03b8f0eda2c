"""bench/stale.py on a tiny temporary git repository: fresh and stale results files."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import numpy as np
import pytest

from _gitrepo import ROOT, bench_module, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def stale():
    with bench_module("stale") as module:
        yield module


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "--short", "HEAD")


def header(commit_line: str = "", simd: str = "AVX2", script: str = "table1") -> str:
    lines = ["# a table", "", f"- command: `python bench/{script}.py --seeds 3`",
             "- date: 2026-11-27T00:00:00"]
    if commit_line:
        lines.append(f"- commit: {commit_line}")
    machine = "- machine: AMD EPYC, 2 cores, Linux"
    if simd:
        machine += f"; SIMD level of the kernels: {simd}"
    lines += [machine, "", "| a | b |", "|---|---|", "| 1 | 2 |", ""]
    return "\n".join(lines)


@pytest.fixture
def repo(tmp_path):
    """A package, two bench scripts and README citing one results file; one commit."""
    r = tmp_path / "repo"
    for path, text in {
        "gmmfast/__init__.py": "",
        "gmmfast/cluster/_fit.py": "x = 1\n",
        "gmmfast/lssvm/_learner.py": "y = 1\n",
        "gmmfast/py.typed": "",
        "bench/_common.py": "",
        "bench/table1.py": "print('table 1')\n",
        "bench/walk_throughput.py": "",
        "README.md": "Table 1 (`bench/results/table1.md`); how: bench/results/NAME.md.\n",
    }.items():
        (r / path).parent.mkdir(parents=True, exist_ok=True)
        (r / path).write_text(text)
    init_repo(r)
    commit(r, "code")
    return r


def write_results(repo: Path, name: str, text: str) -> None:
    path = repo / "bench" / "results" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def verdicts(stale, repo, every=False):
    return {e.name: e for e in stale.check(repo, every)}


def test_fresh_then_stale_after_a_change_to_measured_code(stale, repo, capsys):
    c = git(repo, "rev-parse", "--short", "HEAD")
    write_results(repo, "table1.md", header(c))
    commit(repo, "results")                        # results and README: not measured code
    e = verdicts(stale, repo)["table1.md"]
    assert not e.stale and e.script == "table1" and e.simd == "AVX2" and e.commit == c
    assert e.cited_by == ["README.md"]
    assert stale.main(["--root", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "table1.md" in out and "fresh" in out and "STALE" not in out
    # neither a docs-only file nor code another bench script measures makes it stale
    (repo / "gmmfast" / "py.typed").write_text("partial\n")
    (repo / "gmmfast" / "lssvm" / "_learner.py").write_text("y = 2\n")
    commit(repo, "docs-only and LS-SVM")
    assert not verdicts(stale, repo)["table1.md"].stale
    # a change to the clustering code does
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 2\n")
    change = commit(repo, "change k-means")
    e = verdicts(stale, repo)["table1.md"]
    assert e.stale and e.changes == [change]
    assert change in e.reasons[0] and "later commit" in e.reasons[0]
    assert stale.main(["--root", str(repo)]) == 1
    out = capsys.readouterr().out
    assert "STALE" in out and change in out


def test_commands_lists_the_runs_that_re_measure_the_stale_files(stale, repo, capsys):
    (repo / "bench" / "scale.py").write_text("")
    c = commit(repo, "a merged report's script")
    merged = header(c, script="scale").replace("# a table", "# a merged report") + (
        "The records come from these runs (started at; the header above is the report's):\n"
        f"- 2026-11-27T01:00:00: `python bench/scale.py --cells 1,2,3` on commit {c}\n"
        f"- 2026-11-27T02:00:00: `python bench/scale.py --cells memmap` on commit {c}\n"
        f"- 2026-11-27T03:00:00: `python bench/scale.py --cells 'a b'` on commit {c}\n")
    write_results(repo, "table1.md", header(c))
    write_results(repo, "scale_x.md", merged)
    write_results(repo, "scale_y.md", header(c, script="scale").replace(
        "--seeds 3", "--cells a b"))          # the last run again, as its header writes it
    (repo / "README.md").write_text("`bench/results/table1.md`, `bench/results/scale_x.md`, "
                                    "`bench/results/scale_y.md`\n")
    commit(repo, "results")
    assert stale.main(["--root", str(repo), "--commands"]) == 0
    assert capsys.readouterr().out.strip() == ""          # nothing stale, nothing to run
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 2\n")
    commit(repo, "change k-means")
    assert stale.main(["--root", str(repo), "--commands"]) == 1
    assert capsys.readouterr().out.split("\n")[:5] == [
        "python bench/scale.py --cells 1,2,3", "python bench/scale.py --cells memmap",
        "python bench/scale.py --cells 'a b'", "python bench/scale.py --seeds 3",
        "python bench/table1.py --seeds 3"]


def test_a_merged_report_re_measured_in_part_stays_stale_for_its_older_runs(stale, repo,
                                                                            capsys):
    """A merged report's header names the commit that wrote it (its last run); the cells
    of runs on an older commit are judged at theirs, for the package code (the script at the
    header's): stale after a change to the package, and --commands lists those runs only."""
    (repo / "bench" / "scale.py").write_text("")
    old = commit(repo, "a merged report's script")
    (repo / "bench" / "scale.py").write_text("print('the report, rendered anew')\n")
    script = commit(repo, "the script only")
    dask = f"Measured: command: `python bench/scale.py --part a`; date: 2026-11-27T00:00:00; " \
           f"commit: {old}; machine: x; SIMD level of the kernels: AVX2.\n"

    def report(new):
        return header(new, script="scale").replace("--seeds 3", "--cells c") + (
            "The records come from these runs (started at; the header above is the report's):\n"
            f"- 2026-11-27T01:00:00: `python bench/scale.py --cells a` on commit {old}\n"
            f"- 2026-11-27T02:00:00: `python bench/scale.py --cells b` on commit {old} (with "
            f"uncommitted changes)\n"
            f"- 2026-11-27T03:00:00: `python bench/scale.py --cells c` on commit {new}\n\n"
            + dask)

    write_results(repo, "scale_x.md", report(script))
    (repo / "README.md").write_text("`bench/results/scale_x.md`\n")
    commit(repo, "results")
    e = verdicts(stale, repo)["scale_x.md"]
    assert not e.stale and len(e.runs) == 4      # the script changed: not what the runs measured
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 2\n")
    change = commit(repo, "change k-means")
    write_results(repo, "scale_x.md", report(change))       # one cell re-measured since
    commit(repo, "cell c again")
    e = verdicts(stale, repo)["scale_x.md"]
    assert e.stale and e.changes == []
    assert e.reasons == [f"3 run(s) of the report on commit {old}: 1 later commit(s) change "
                         f"the code they measured: {change}"]
    assert stale.main(["--root", str(repo), "--commands"]) == 1
    assert capsys.readouterr().out.split("\n")[:4] == [
        "python bench/scale.py --cells a", "python bench/scale.py --cells b",
        "python bench/scale.py --part a", ""]
    write_results(repo, "scale_x.md", report(change).replace(f"on commit {old}",
                  f"on commit {change}").replace(f"commit: {old}", f"commit: {change}"))
    commit(repo, "every cell again")
    assert not verdicts(stale, repo)["scale_x.md"].stale


def test_comments_and_docstrings_change_no_measurement(stale, repo):
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text('"""Fit."""\nx = 1\n')
    c = commit(repo, "code")
    write_results(repo, "table1.md", header(c))
    commit(repo, "results")
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text(
        '"""The fit driver."""\n# one\nx = 1  # the value\n\n\ndef f():\n    """F."""\n')
    commit(repo, "add f")                          # a function is code
    assert verdicts(stale, repo)["table1.md"].stale
    write_results(repo, "table1.md", header(git(repo, "rev-parse", "--short", "HEAD")))
    commit(repo, "results again")
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text(
        '"""The fit driver, re-worded."""\nx = 1  # its value\n\n\ndef f():\n'
        '    """What f does."""\n')
    commit(repo, "docstrings")
    assert not verdicts(stale, repo)["table1.md"].stale
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text(
        '"""The fit driver, re-worded."""\nx = 1  # its value\n\n\ndef f():\n'
        '    """What f does."""\n    return 2\n')
    change = commit(repo, "f returns 2")
    assert verdicts(stale, repo)["table1.md"].changes == [change]


def test_only_the_measuring_definitions_of_bench_common_count(stale, repo):
    common = repo / "bench" / "_common.py"
    common.write_text("def alternate(f):\n    return f()\n\n\ndef write_results(t):\n"
                      "    return t\n")
    (repo / "bench" / "dropin.py").write_text("")
    (repo / "README.md").write_text("The drop-in: `bench/results/dropin.md`.\n")
    write_results(repo, "dropin.md", header(commit(repo, "scripts"), script="dropin"))
    commit(repo, "results")
    common.write_text("def alternate(f):\n    return f()\n\n\ndef write_results(t):\n"
                      "    return t + ' and its notes'\n\n\nNOTES = 1\n")
    commit(repo, "the writer keeps notes")          # writing the file is not measuring
    assert not verdicts(stale, repo)["dropin.md"].stale
    common.write_text("def alternate(f):\n    f()\n    return f()\n\n\ndef write_results(t):"
                      "\n    return t\n")
    change = commit(repo, "the timing calls twice")
    assert verdicts(stale, repo)["dropin.md"].changes == [change]


def test_a_declared_commit_stales_nothing_and_is_named(stale, repo, monkeypatch, capsys):
    write_results(repo, "table1.md", header(git(repo, "rev-parse", "--short", "HEAD")))
    commit(repo, "results")
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 1\nif x > 1e37:\n    x = 2\n")
    commit(repo, "a guard")
    guard = git(repo, "rev-parse", "HEAD")
    assert verdicts(stale, repo)["table1.md"].stale
    monkeypatch.setattr(stale, "DECLARED_UNCHANGED", {guard: "no benchmark reaches it"})
    assert not verdicts(stale, repo)["table1.md"].stale
    assert stale.main(["--root", str(repo)]) == 0
    assert f"{guard[:9]}: no benchmark reaches it" in capsys.readouterr().out
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 3\n")
    change = commit(repo, "not declared")
    assert verdicts(stale, repo)["table1.md"].changes == [change]


def test_a_change_to_the_script_itself_makes_it_stale(stale, repo):
    write_results(repo, "table1.md", header(git(repo, "rev-parse", "--short", "HEAD")))
    commit(repo, "results")
    (repo / "bench" / "table1.py").write_text("print('table 1, new')\n")
    commit(repo, "new script")
    assert verdicts(stale, repo)["table1.md"].stale


@pytest.mark.parametrize("commit_line, reason", [
    ("", "no commit"),
    ("deadbee", "commit deadbee unknown"),
    ("unknown", "commit 'unknown' is not a commit hash"),
])
def test_missing_or_unknown_commit_is_stale(stale, repo, commit_line, reason):
    write_results(repo, "table1.md", header(commit_line))
    commit(repo, "results")
    e = verdicts(stale, repo)["table1.md"]
    assert e.stale and any(reason in r for r in e.reasons), e.reasons
    assert stale.main(["--root", str(repo)]) == 1


@pytest.mark.parametrize("simd", ["", "not recorded by this run (an earlier machine)"])
def test_missing_simd_level_is_stale(stale, repo, simd):
    write_results(repo, "table1.md", header(git(repo, "rev-parse", "--short", "HEAD"), simd))
    commit(repo, "results")
    e = verdicts(stale, repo)["table1.md"]
    assert e.stale and e.reasons == ["no SIMD level in the header"]
    assert stale.main(["--root", str(repo)]) == 1


def test_dirty_commit_is_read_as_its_commit(stale, repo):
    c = git(repo, "rev-parse", "--short", "HEAD")
    write_results(repo, "table1.md", header(f"{c} (with uncommitted changes)", "AVX-512"))
    commit(repo, "results")
    e = verdicts(stale, repo)["table1.md"]
    assert not e.stale and e.dirty and e.commit == c and e.simd == "AVX-512"
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 3\n")
    commit(repo, "change")
    e = verdicts(stale, repo)["table1.md"]
    assert e.stale and "uncommitted" in e.reasons[0]


def test_cited_but_missing_and_bare_names(stale, repo):
    (repo / "README.md").write_text("See `walk_throughput.md` and results/gone.md; "
                                    "CHANGELOG.md is no results file.\n")
    commit(repo, "readme")
    v = verdicts(stale, repo)
    assert set(v) == {"walk_throughput.md", "gone.md"}        # the bare name of a bench script
    assert all(e.stale and e.reasons == ["cited but not in bench/results/"] for e in v.values())


def test_docs_and_examples_cite_too_and_all_checks_every_file(stale, repo):
    c = git(repo, "rev-parse", "--short", "HEAD")
    write_results(repo, "table1.md", header(c) + "\nFigure: `table1_objective.png`.\n")
    write_results(repo, "table1_objective.png", "not really a png")
    write_results(repo, "walk_throughput.md", header(c, script="walk_throughput"))
    write_results(repo, "uncited.md", header(c))
    (repo / "README.md").write_text("no citation here\n")
    (repo / "docs" / "guide").mkdir(parents=True)
    (repo / "docs" / "guide" / "kmeans.rst").write_text(
        ".. image:: ../../bench/results/table1_objective.png\n")
    (repo / "docs" / "notes.txt").write_text("bench/results/uncited.md\n")   # not a docs source
    (repo / "examples").mkdir()
    (repo / "examples" / "speed.py").write_text("# walk_throughput.md: proposals per second\n")
    commit(repo, "docs")
    v = verdicts(stale, repo)
    assert set(v) == {"table1_objective.png", "walk_throughput.md"}
    assert v["table1_objective.png"].cited_by == ["docs/guide/kmeans.rst"]
    assert v["table1_objective.png"].header_from == "table1.md"   # the file naming the figure
    assert v["walk_throughput.md"].cited_by == ["examples/speed.py"]
    assert not any(e.stale for e in v.values())
    (repo / ".gitignore").write_text("docs/_build/\n")
    (repo / "docs" / "_build").mkdir()
    (repo / "docs" / "_build" / "page.md").write_text("bench/results/uncited.md\n")  # ignored
    assert set(verdicts(stale, repo)) == {"table1_objective.png", "walk_throughput.md"}
    every = verdicts(stale, repo, every=True)
    assert set(every) == {"table1.md", "table1_objective.png", "walk_throughput.md",
                          "uncited.md"}
    assert every["uncited.md"].cited_by == [] and not every["uncited.md"].stale


def test_a_pattern_cites_every_results_file_it_matches(stale, repo):
    c = git(repo, "rev-parse", "--short", "HEAD")
    for name in ("walk_truth.md", "walk_truth_data1.md", "walk_random.md", "scale_a.md",
                 "scale_b.md"):
        write_results(repo, name, header(c))
    (repo / "README.md").write_text("From the truth (`walk_truth*.md`); every file: "
                                    "`bench/results/*.md`, `*.png`; the grid: "
                                    "[here](../bench/results/scale_*.md); not a results path: "
                                    "`other/walk_random*.md`.\n")
    commit(repo, "results")
    assert set(verdicts(stale, repo)) == {"walk_truth.md", "walk_truth_data1.md", "scale_a.md",
                                          "scale_b.md"}


def test_scene_runs_from_named_inits_measure_no_clustering_code(stale, repo):
    """A scenes_table3 run whose --inits are only "random" and "truth" never runs k-means (the
    coherent inits' discover_parts): a change to gmmfast/cluster stales only the others."""
    assert stale.named_inits_only("python bench/scenes_table3.py --inits random,truth --x 1")
    assert stale.named_inits_only("`python bench/scenes_table3.py --inits=truth`")
    assert not stale.named_inits_only("python bench/scenes_table3.py --inits random,0.5")
    assert not stale.named_inits_only("python bench/scenes_table3.py --seeds 3")  # default
    (repo / "bench" / "scenes_table3.py").write_text("")
    c = commit(repo, "the script")
    for name, inits in (("named.md", "random,truth"), ("coherent.md", "random,0.25")):
        write_results(repo, name, header(c, script="scenes_table3").replace(
            "--seeds 3", f"--seeds 3 --inits {inits}"))
    (repo / "README.md").write_text("`named.md`, `coherent.md`\n")
    commit(repo, "results")
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 2\n")
    commit(repo, "a clustering change")
    v = verdicts(stale, repo)
    assert not v["named.md"].stale and v["coherent.md"].stale
    (repo / "gmmfast" / "lssvm" / "_learner.py").write_text("y = 2\n")
    commit(repo, "a latent SVM change")
    assert verdicts(stale, repo)["named.md"].stale


def test_unknown_script_measures_the_whole_package(stale, repo):
    write_results(repo, "other.md", header(git(repo, "rev-parse", "--short", "HEAD"),
                                           script="brand_new"))
    (repo / "README.md").write_text("bench/results/other.md\n")
    commit(repo, "results")
    (repo / "gmmfast" / "py.typed").write_text("partial\n")      # docs-only: never counts
    commit(repo, "typing marker")
    assert not verdicts(stale, repo)["other.md"].stale
    (repo / "gmmfast" / "lssvm" / "_learner.py").write_text("y = 3\n")
    commit(repo, "any package change")
    e = verdicts(stale, repo)["other.md"]
    assert e.script == "brand_new" and e.stale


def test_measured_table_names_existing_scripts_and_paths(stale):
    """The table speaks of this repository: every key a bench script, every path present (a
    script missing from it is checked against the whole package)."""
    for script, paths in stale.MEASURED.items():
        assert (ROOT / "bench" / f"{script}.py").is_file(), script
        for p in paths:
            assert (ROOT / p.split(")")[-1]).exists(), (script, p)


def test_the_search_code_is_reached_only_where_the_table_says(stale, monkeypatch):
    """RESTARTS and ESCAPES are left out of what some scripts measure: the k-means of the
    LS-SVM and scene models (discover_parts) and the random-walk fits never call the seeding
    restarts' kernel nor the escapes; lloyd_iteration's fits (given centers, patience=0) call
    the escapes' entry only (no proposals, no kernel); merge-split with escapes from given
    centers (eta_sweep, walk_samplers) and a default fit call both (the check's control)."""
    from gmmfast import GMMKMeans
    from gmmfast.cluster import _fit, _restarts
    from gmmfast.lssvm import discover_parts
    calls = []
    kernel, escape = _restarts.lloyd_restarts, _fit.escape
    monkeypatch.setattr(_restarts, "lloyd_restarts",
                        lambda *a, **kw: calls.append("kernel") or kernel(*a, **kw))
    monkeypatch.setattr(_fit, "escape", lambda *a, **kw: calls.append("escape") or escape(*a, **kw))

    def reached(fit):
        calls.clear()
        fit()
        return set(calls)
    regions = np.random.default_rng(0).normal(size=(60, 5, 3))     # (n, R, d)
    assert reached(lambda: discover_parts(regions, 4, random_state=0)) == set()
    X = regions.reshape(-1, 3)
    C = X[:4].copy()
    walk = dict(selection="random", eta=0.02, walk_steps=200)
    assert reached(lambda: GMMKMeans(4, init=C, random_state=0, **walk).fit(X)) == set()
    assert reached(lambda: GMMKMeans(4, init=C, eta=1.0).fit(X)) == set()
    assert reached(lambda: GMMKMeans(4, init=C, max_iter=3, tol=0, patience=0).fit(X)) \
        == {"escape"}
    est = GMMKMeans(4, init=C, random_state=0)
    assert reached(lambda: est.fit(X)) == {"escape", "kernel"}
    assert any(e.kind == "re-split" for e in est.escapes_)
    assert reached(lambda: GMMKMeans(4, random_state=0).fit(X)) == {"escape", "kernel"}
    # the table says so, and the scripts still fit that way
    M = stale.MEASURED
    assert all(p in stale._LSSVM for p in stale.NOT_REACHED)
    assert all(p in M[s] for s in ("walk_steps", "walk_throughput") for p in stale.NOT_REACHED)
    assert all(p in M["lloyd_iteration"] for p in stale.RESTARTS)
    assert not any(p in M["lloyd_iteration"] for p in stale.ESCAPES)
    assert not any(p in M[s] for s in ("eta_sweep", "walk_samplers") for p in stale.NOT_REACHED)
    text = {s: (ROOT / "bench" / f"{s}.py").read_text() for s in
            ("lloyd_iteration", "walk_steps", "walk_throughput")}
    assert "init=C" in text["lloyd_iteration"] and "patience=0" in text["lloyd_iteration"]
    assert 'selection="random"' in text["walk_steps"] and "GMMKMeans" not in text["walk_throughput"]

def modules_reached(stale, tmp_path: Path, *steps: str) -> List[List[str]]:
    """Run ``steps`` (Python source) one after another in a fresh process, from an empty folder
    (the installed package, not an unbuilt source tree, as CI runs); after each, the modules
    of gmmfast.cluster and the k-means kernels (CLUSTER_KERNELS) imported so far."""
    code = """
import sys
kernels = [m.split(":(exclude)gmmfast/_kernels/")[1].split(".")[0] for m in sys.argv[1:]]
def reached():
    return sorted(m for m in sys.modules if m.startswith("gmmfast.cluster")
                  or m in ["gmmfast._kernels." + k for k in kernels])
""" + "".join(f"{step}\nprint(reached())\n" for step in steps)
    out = subprocess.run([sys.executable, "-c", code, *stale.CLUSTER_KERNELS], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [ast.literal_eval(line) for line in out]


def test_the_objects_and_potts_scripts_never_reach_the_clustering_code(stale, tmp_path):
    """The LS-SVM scripts of the cluttered objects and potts_throughput leave gmmfast.cluster
    and the k-means kernels (CLUSTER_KERNELS) out of what they measure: in a fresh process a
    G-MM fit with the multi-fold bias and an alpha-expansion import neither; the scenes'
    discover_parts does (the check's control)."""
    objects = """
import numpy as np
from gmmfast.datasets import make_cluttered_objects
from gmmfast.experiments.table2 import OBJECTS_DEFAULTS, LAM, SOLVER
from gmmfast.lssvm import LatentMulticlassModel, LatentSSVM
from gmmfast.potts import alpha_expansion
D = make_cluttered_objects(**dict(OBJECTS_DEFAULTS, n_per_class=6, scale=2, canvas_cells=8,
                                  random_state=0))
LatentSSVM(LatentMulticlassModel(len(D.classes), positions=D.positions), lam=LAM,
           method="gmm-biased", n_folds=2, solver=SOLVER, max_iter=3,
           random_state=0).fit(D.data, D.target, latent_init="top-left")
alpha_expansion(np.random.default_rng(0).random((6, 6, 3)), 0.5)"""
    parts = """
from gmmfast.lssvm import discover_parts
discover_parts(np.random.default_rng(0).normal(size=(30, 4, 3)), 3, random_state=0)"""
    before, after = modules_reached(stale, tmp_path, objects, parts)
    assert before == []
    assert "gmmfast._kernels._kmeans" in after and "gmmfast.cluster" in after
    M = stale.MEASURED
    for script in ("lssvm_calibration", "lssvm_crammer_singer", "lssvm_inference",
                   "lssvm_selection", "lssvm_table2", "potts_throughput"):
        assert not any(p.startswith("gmmfast/cluster") for p in M[script]), script
        assert all(p in M[script] for p in stale.CLUSTER_KERNELS), script
    assert "gmmfast/cluster/" in M["scenes_table3"]
    assert not any(p in M["scenes_table3"] for p in stale.CLUSTER_KERNELS[:2])  # _kmeans, simd


def test_scene_runs_from_named_inits_never_reach_the_clustering_code(stale, tmp_path):
    """Every scenes_table3 method from "random" and "truth", and the oracle, in a fresh
    process: neither gmmfast.cluster nor a k-means kernel is imported; a coherent init (a
    Potts weight) imports both (the check's control)."""
    named = """
from gmmfast.experiments.table3 import METHODS, compare, initial_labels, oracle
D, _, _, lam = compare(list(METHODS), ["random", "truth"], n_seeds=1, max_iter=2, n_train=10,
                       n_test=5, generator=dict(n_bins=4, grid=(4, 4)), positions=1.0,
                       solver_max_iter=30, progress=False)
oracle(D, lam, solver_max_iter=30)"""
    before, after = modules_reached(stale, tmp_path, named, "initial_labels(D, 0.5)")
    assert before == []
    assert "gmmfast._kernels._kmeans" in after and "gmmfast.cluster" in after
    assert set(stale.measured_paths("scenes_table3", "--inits random,truth")) \
        >= set(stale._OBJECTS)
    assert not any(p.startswith("gmmfast/cluster") for p in stale.measured_paths(
        "scenes_table3", "--inits random,truth"))


def test_only_a_dask_array_reaches_the_dask_path(stale, tmp_path):
    """DASK is left out of what every in-memory script measures: in a fresh process the
    fits those scripts make (the default coarse to fine, Lloyd, the paper's random bounds,
    KMeans dense and sparse, the scenes' discover_parts; the experiments' modules) import
    none of its modules; a fit on a dask array does (the check's control)."""
    memory = """
import warnings
import numpy as np
import scipy.sparse as sp
from gmmfast import GMMKMeans, KMeans
import gmmfast.experiments.table1, gmmfast.experiments.table3
from gmmfast.lssvm import discover_parts
X = np.random.default_rng(0).normal(size=(3000, 3))
warnings.simplefilter("ignore")
GMMKMeans(5, random_state=0).fit(X)
GMMKMeans(5, sample_size=500, random_state=0).fit(X)
GMMKMeans(5, eta=1.0, random_state=0).fit(X.astype(np.float32))
GMMKMeans(5, selection="random", eta=0.02, walk_steps=100, max_iter=5, random_state=0).fit(X)
KMeans(5, random_state=0).fit(X)
KMeans(5, random_state=0).fit(sp.csr_matrix(X))
discover_parts(np.random.default_rng(0).normal(size=(30, 4, 3)), 3, random_state=0)"""
    dask = """
import dask
import dask.array as da
with dask.config.set(scheduler="synchronous"):
    GMMKMeans(5, random_state=0).fit(da.from_array(X, chunks=(1000, 3)))"""
    modules = [f"gmmfast.cluster.{p.split('/')[-1][:-3]}" for p in stale.DASK]
    before, after = modules_reached(stale, tmp_path, memory, dask)
    assert "gmmfast.cluster._fit" in before and not set(modules) & set(before)
    assert set(modules) <= set(after)
    M = stale.MEASURED
    assert all(all(p in paths for p in stale.DASK) for script, paths in M.items()
               if script != "scale_dask" and "gmmfast/cluster/" in paths), M
    assert not any(p in M["scale_dask"] for p in stale.DASK)


def test_a_commit_declared_for_some_scripts_stales_only_the_others(stale, repo, monkeypatch,
                                                                    capsys):
    here = git(repo, "rev-parse", "--short", "HEAD")
    write_results(repo, "table1.md", header(here))
    write_results(repo, "sweep.md", header(here, script="sweep"))
    commit(repo, "results")
    (repo / "gmmfast" / "cluster" / "_fit.py").write_text("x = 4\n")
    change = commit(repo, "a kernel change")
    full = git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(stale, "DECLARED_UNCHANGED_FOR",
                        {full: (("sweep",), "its figures checked identical")})
    v = verdicts(stale, repo, every=True)
    assert v["table1.md"].changes == [change] and not v["sweep.md"].stale
    assert stale.main(["--root", str(repo), "--all"]) == 1
    out = capsys.readouterr().out
    assert f"results of sweep (DECLARED_UNCHANGED_FOR): {full[:9]}: its figures" in out
