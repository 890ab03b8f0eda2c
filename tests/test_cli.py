"""The ``gmmfast compare`` and ``gmmfast cluster`` subcommands (small runs writing their files)."""
import csv
import json

import numpy as np
import pytest

from gmmfast import cli
from gmmfast.cli import compare


def test_compare_is_registered_and_readme_first_command_parses():
    assert "compare" in cli.SUBCOMMANDS and "cluster" in cli.SUBCOMMANDS
    # README's first command, unchanged: `gmmfast compare --trials 5`
    args = cli.build_parser().parse_args(["compare", "--trials", "5"])
    assert args.dataset == "gmm200" and args.trials == 5 < compare.DEFAULT_TRIALS
    assert args.func is compare.run


# --------------------------------------------------------------------------- issue 27, item 4

def test_version_prints_the_package_version(capsys):
    import gmmfast
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"gmmfast {gmmfast.__version__}\n"


def test_bare_gmmfast_prints_its_help_and_runs_no_job(capsys, monkeypatch):
    ran = []
    for name, module in cli.SUBCOMMANDS.items():       # a job would call a module's run
        monkeypatch.setattr(module, "run", lambda args, name=name: ran.append(name) or 0)
    assert cli.main([]) == cli.NO_COMMAND_EXIT == 2
    out, err = capsys.readouterr()
    assert ran == [] and err == ""
    assert out.startswith("usage: gmmfast ")
    assert all(name in out for name in cli.SUBCOMMANDS) and "--version" in out


def test_bare_gmmfast_in_a_real_process_answers_at_once():
    import time
    t0 = time.perf_counter()
    proc = _run_cli([])
    seconds = time.perf_counter() - t0
    assert proc.returncode == 2 and proc.stderr == ""
    assert proc.stdout.startswith("usage: gmmfast ") and "COMMAND" in proc.stdout
    # the old default job (a 5-trial compare) took about a minute; the help is the
    # interpreter's start and `import gmmfast` (about 2 s on a loaded 2-core machine)
    assert seconds < 15, seconds
    proc = _run_cli(["--version"])
    assert proc.returncode == 0 and proc.stdout.startswith("gmmfast ")


def cluster_help(capsys):
    """The text of ``gmmfast cluster --help``, argparse's line wrapping undone."""
    with pytest.raises(SystemExit) as info:
        cli.main(["cluster", "--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_cluster_help_shows_the_estimators_real_defaults(capsys):
    import inspect

    from gmmfast import GMMKMeans
    text = cluster_help(capsys)
    assert "GMMKMeans's" not in text
    entries = text[text.index("positional arguments:"):]      # past the usage lines
    defaults = inspect.signature(GMMKMeans).parameters
    for option, name in [("--eta", "eta"), ("--init", "init"), ("--selection", "selection"),
                         ("--sampler", "sampler"), ("--n-init", "n_init"),
                         ("--max-iter", "max_iter")]:
        entry = entries[entries.index(f"{option} "):]   # the option's own entry comes first
        shown = entry[entry.index("(default: ") + len("(default: "):].split(")")[0]
        assert shown == str(defaults[name].default), (option, shown)
    # the values themselves, so a change of a default shows here too
    assert "(default: 0.1)" in text and "(default: k-means++)" in text
    assert "(default: merge-split)" in text and "(default: 300)" in text


def test_cluster_parser_defaults_are_the_estimators():
    import inspect

    from gmmfast import GMMKMeans
    args = cli.build_parser().parse_args(["cluster", "x.csv", "-k", "3"])
    defaults = inspect.signature(GMMKMeans).parameters
    for name in ("eta", "init", "selection", "n_init", "max_iter"):
        assert getattr(args, name) == defaults[name].default, name
    assert args.sampler is None          # not given: only --selection random takes one


def test_cluster_init_offers_every_init_the_estimator_accepts(tmp_path, capsys):
    from gmmfast.cluster._init import INITS
    sub = cli.build_parser()._subparsers._group_actions[0].choices["cluster"]
    init = next(a for a in sub._actions if "--init" in a.option_strings)
    assert list(init.choices) == list(INITS) and "k-means||" in init.choices
    path = small_points(tmp_path)
    assert cli.main(["cluster", str(path), "-k", "3", "--init", "k-means||"]) == 0
    assert "init=k-means||" in capsys.readouterr().out


def test_cluster_verbose_prints_one_line_per_iteration_and_no_bar(tmp_path, capsys):
    import re
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(200, 2)) + c
                        for c in ([0, 0], [8, 0], [0, 8], [8, 8], [4, 4])])
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",")
    assert cli.main(["cluster", str(path), "-k", "5", "-v"]) == 0
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if line.startswith("  iteration ")]
    n_iter = int(re.search(r"; (\d+) iterations, ", out).group(1))
    assert len(lines) == n_iter > 0                     # as its help says: one per iteration
    assert "\r" not in out + err and "it/s" not in out + err      # and no progress bar
    # and nothing else but one line per phase and the report: for k = 5 a handful of lines
    # beyond the iterations, not a line per escape step or a bar redrawn per pass
    others = [line for line in out.splitlines() if not line.startswith("  iteration ")]
    phases = [line for line in others
              if line.startswith(("G-MM k-means run 1/1: initialisation", "  escapes: ",
                                  "  finer level: "))]
    assert len(phases) == 3, others              # one run: its seeding, escapes, the polish
    assert len(others) == len(phases) + 3, others   # + the report's three lines
    assert "No progress bar" in cluster_help(capsys)


def test_compare_small_run_writes_its_files(shared_data, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["compare", "--dataset", "r15", "--data-home", str(shared_data),
                   "--trials", "2", "--inits", "forgy,k-means++", "--out", str(out),
                   "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "R15: n=600, d=2, k=15" in text
    assert "| k-means |" in text and "G-MM (paper: uniform walk, eta=0.02)" in text
    assert "forgy avg +- std" in text and "k-means++ avg +- std" in text
    assert "G-MM invariant violations: 0" in text
    with open(out / "compare.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 3                          # inits x trials x methods
    assert {r["method"] for r in rows} == {"k-means", "gmm-paper", "gmm"}
    for r in rows:
        assert float(r["sse_per_point"]) > 0 and int(r["centroid_index"]) >= 0
    # identical initialisations: per (init, trial) every method starts from the same centers,
    # so G-MM can only be compared fairly; on R15 neither may be worse than SSE/n 3
    summary = json.loads((out / "compare.json").read_text())
    assert summary["config"]["trials"] == 2
    assert set(summary["summary"]) == {"k-means", "gmm-paper", "gmm"}
    for method, by_init in summary["summary"].items():
        assert set(by_init) == {"forgy", "k-means++"}
        for init, s in by_init.items():
            sse = [float(r["sse_per_point"]) for r in rows
                   if r["method"] == method and r["init"] == init]
            # the summary is the CSV's runs (seen: SSE/n 0.18 to 0.32 on this run)
            assert s["trials"] == len(sse) == 2
            assert s["mean"] == pytest.approx(np.mean(sse)) and s["best"] == min(sse)
            assert s["mean"] <= 3.0, (method, init, s["mean"])
    # the defaults find every R15 cluster from both initialisations (SSE/n 0.1810, CI 0)
    assert all(s["ci_mean"] == 0 for s in summary["summary"]["gmm"].values())
    for name in ("objective.png", "clusterings.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 400_000


def test_compare_on_a_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(40, 3)) + c for c in (0, 10, 20)])
    path = tmp_path / "points.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="")
    rc = cli.main(["compare", "--dataset", str(path), "-k", "3", "--trials", "1",
                   "--inits", "k-means++", "--methods", "k-means,gmm", "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "points.csv: n=120, d=3, k=3" in out and "Centroid Index" not in out


def cli_error(capsys, argv):
    """Run gmmfast ARGV expecting a usage error: exit code 2, the last stderr line
    'gmmfast <cmd>: error: ...', no traceback; returns that line."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith(f"gmmfast {argv[0]}: error: "), err
    assert "Traceback" not in "\n".join(err)
    return err[-1]


def test_compare_errors_are_clear(tmp_path, capsys):
    path = tmp_path / "p.txt"
    np.savetxt(path, np.random.default_rng(0).normal(size=(20, 2)))
    assert "-k is required" in cli_error(capsys, ["compare", "--dataset", str(path),
                                                  "--trials", "1"])
    assert "gmm200, norm25, d31, r15" in cli_error(capsys, ["compare", "--dataset", "cloud",
                                                            "--trials", "1"])
    assert "--inits" in cli_error(capsys, ["compare", "--inits", "kmeans++", "--trials", "1"])
    assert "--methods" in cli_error(capsys, ["compare", "--methods", "lloyd", "--trials", "1"])


@pytest.mark.parametrize("fmt", ["csv", "txt", "npy"])
def test_cluster_writes_labels_and_centers(tmp_path, capsys, fmt):
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(50, 2)) + c for c in ([0, 0], [9, 0], [0, 9])])
    path = tmp_path / f"x.{fmt}"
    if fmt == "npy":
        np.save(path, X)
    else:
        np.savetxt(path, X, delimiter="," if fmt == "csv" else " ")
    labels, centers = tmp_path / "labels.csv", tmp_path / "centers.csv"
    rc = cli.main(["cluster", str(path), "-k", "3", "-o", str(labels), "--centers",
                   str(centers)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "n=150, d=2, k=3" in out and "empty clusters: 0" in out
    z = np.loadtxt(labels, dtype=int)
    assert z.shape == (150,) and set(z) == {0, 1, 2}
    # the three blobs are recovered: each blob gets one label
    assert all(len(set(z[i:i + 50])) == 1 for i in (0, 50, 100))
    C = np.loadtxt(centers, delimiter=",")
    assert C.shape == (3, 2)


def test_cluster_options_and_errors(tmp_path, capsys):
    path = tmp_path / "x.txt"
    np.savetxt(path, np.random.default_rng(2).normal(size=(30, 2)))
    assert cli.main(["cluster", str(path), "-k", "4", "--eta", "1", "--init", "forgy"]) == 0
    assert "eta=1" in capsys.readouterr().out
    assert "no such file" in cli_error(capsys, ["cluster", str(tmp_path / "missing.csv"),
                                                "-k", "2"])
    assert "n_clusters=40" in cli_error(capsys, ["cluster", str(path), "-k", "40"])
    assert "--eta" in cli_error(capsys, ["cluster", str(path), "-k", "2", "--eta", "2"])


# --------------------------------------------------------------------------- hardening (issue 12)

@pytest.mark.parametrize("args, match", [
    (["-k", "0"], "-k/--n-clusters: must be an integer in [1,"),       # was: k = 200
    (["-k", "-3"], "-k/--n-clusters"),
    (["-k", "500000"], "-k 500000 is more than the 10000 points"),
    (["--eta", "0"], "--eta: must be a number in (0, 1]"),
    (["--eta", "nan"], "--eta"),
    (["--walk-steps", "abc"], "--walk-steps: must be 'auto' or an integer"),
    (["--walk-steps", "-5"], "--walk-steps"),
    (["--walk-steps", str(2**63)], "--walk-steps"),
    (["--threads", "-1"], "--threads: must be an integer in [1,"),      # was: ignored
    (["--threads", "0"], "--threads"),
    (["--trials", "0"], "--trials"),
    (["--seed", "-1"], "--seed"),
])
def test_compare_rejects_bad_numbers_before_any_work(capsys, args, match):
    line = cli_error(capsys, ["compare", "--no-progress", "--trials", "1"] + args)
    assert match in line


def test_compare_checks_its_output_folder_first(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "--out" in cli_error(capsys, ["compare", "--out", str(blocker)])
    assert "--out" in cli_error(capsys, ["compare", "--out", str(blocker / "sub")])


def test_compare_never_writes_over_its_data_file(tmp_path, capsys, monkeypatch):
    import gmmfast.cli.compare
    path = tmp_path / "compare.csv"       # the name of compare's table in --out
    np.savetxt(path, np.random.default_rng(0).random((60, 2)), delimiter=",")
    before = path.read_bytes()
    calls = []
    monkeypatch.setattr(gmmfast.cli.compare, "load_dataset", lambda *a, **kw: calls.append(a))
    (tmp_path / "link").symlink_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    for dataset, out in ((str(path), str(tmp_path)), ("compare.csv", "."),
                         (str(path), str(tmp_path / "link"))):
        line = cli_error(capsys, ["compare", "--dataset", dataset, "-k", "3", "--trials", "1",
                                  "--out", out, "--no-progress"])
        assert "--out" in line and "is the input file; give another --out folder" in line
    assert calls == [] and path.read_bytes() == before   # was: read, run, then overwritten


def small_points(tmp_path, name="x.txt"):
    path = tmp_path / name
    np.savetxt(path, np.random.default_rng(2).normal(size=(30, 2)))
    return path


@pytest.mark.parametrize("args, match", [
    (["-k", "0"], "-k/--n-clusters"),
    (["-k", "2", "--eta", "0"], "--eta"),
    (["-k", "2", "--n-init", "0"], "--n-init"),
    (["-k", "2", "--max-iter", "-1"], "--max-iter"),
    (["-k", "2", "--seed", "-4"], "--seed"),
    (["-k", "2", "--sampler", "gibbs"], "--sampler applies only to --selection random"),
    (["-k", "2", "--sampler", "local", "--selection", "mm"], "--sampler"),
])
def test_cluster_rejects_bad_options(tmp_path, capsys, args, match):
    assert match in cli_error(capsys, ["cluster", str(small_points(tmp_path))] + args)


def test_cluster_sampler_with_random_selection_runs(tmp_path, capsys):
    path = small_points(tmp_path)
    assert cli.main(["cluster", str(path), "-k", "3", "--selection", "random",
                     "--sampler", "local"]) == 0
    assert "selection=random" in capsys.readouterr().out


def test_cluster_checks_output_paths_before_reading_or_fitting(tmp_path, capsys, monkeypatch):
    import gmmfast.datasets
    path = small_points(tmp_path)
    calls = []
    monkeypatch.setattr(gmmfast.datasets, "read_points", lambda p: calls.append(p))
    for option in ("-o", "--centers"):
        line = cli_error(capsys, ["cluster", str(path), "-k", "2", option, "/nonexistent/x"])
        assert "folder /nonexistent does not exist" in line
        assert "is a folder" in cli_error(capsys, ["cluster", str(path), "-k", "2", option,
                                                   str(tmp_path)])
    assert calls == []                    # failed before any work (was: after the fit)


def test_cluster_never_writes_over_its_input_or_its_other_output(tmp_path, capsys):
    path = small_points(tmp_path)
    before = path.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(path)
    for option in ("-o", "--centers"):
        for same in (path, link, tmp_path / "." / path.name):
            line = cli_error(capsys, ["cluster", str(path), "-k", "2", option, str(same)])
            assert "is the input file" in line
    out = tmp_path / "out.txt"
    line = cli_error(capsys, ["cluster", str(path), "-k", "2", "-o", str(out),
                              "--centers", str(out)])
    assert "--centers" in line and "is the file of -o/--output" in line
    assert path.read_bytes() == before and not out.exists()
    assert cli.main(["cluster", str(path), "-k", "2", "-o", str(out),
                     "--centers", str(tmp_path / "centers.txt")]) == 0


@pytest.mark.parametrize("text, rows", [
    ("\ufeff1.0,2.0\n3.0,4.0\n5.0,6.0\n", 3),       # byte-order mark: was 2 rows
    ("\ufeffx,y\n1.0,2.0\n3.0,4.0\n", 2),           # mark and header
    ("x y\n1 2\n3 4\n", 2),
    ("# comment\n1,2\n3,4 # inline\n", 2),
])
def test_read_points_header_sniffing(tmp_path, text, rows):
    from gmmfast.datasets import read_points
    path = tmp_path / "p.csv"
    path.write_text(text, encoding="utf-8")
    X = read_points(path)
    assert X.shape == (rows, 2) and X[-1, 1] in (4.0, 6.0)


@pytest.mark.parametrize("text, match", [
    ("1.0,2.O\n3,4\n5,6\n", "line 1: cannot read '2.O'"),    # was: first row dropped
    ("1,2\n3,4\n5,x6\n", "line 3: cannot read 'x6'"),
    ("a,b\nc,d\n1,2\n", "line 2"),
    ("1,2\n3\n", "line 2: 1 values"),
    ("x,y\n", "no points"),
    ("1,2\nnan,3\n", "NaN or infinity"),
])
def test_read_points_errors_name_the_line(tmp_path, text, match):
    from gmmfast.datasets import read_points
    path = tmp_path / "p.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_points(path)


def test_cluster_reports_unreadable_files_in_one_line(tmp_path, capsys):
    bad = tmp_path / "typo.csv"
    bad.write_text("1.0,2.O\n3,4\n5,6\n")
    assert "line 1" in cli_error(capsys, ["cluster", str(bad), "-k", "2"])
    z = tmp_path / "c.npy"
    np.save(z, np.ones((5, 2), dtype=complex))
    assert "complex" in cli_error(capsys, ["cluster", str(z), "-k", "2"])   # was made real


def _run_cli(args, **kw):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "gmmfast"] + args, capture_output=True,
                          text=True, timeout=300, **kw)


def test_errors_in_a_real_process_are_one_line_with_code_2(tmp_path):
    proc = _run_cli(["cluster", str(small_points(tmp_path)), "-k", "2", "-o", "/nonexistent/x"])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "gmmfast cluster: error: -o/--output /nonexistent/x: folder /nonexistent does not exist"]


def test_a_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys
    # the reader goes away before anything is written (as `| head -0` would)
    proc = subprocess.Popen([sys.executable, "-m", "gmmfast", "cluster",
                             str(small_points(tmp_path)), "-k", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


# ------------------------------------------------ lssvm-compare, scene-compare: checks first

@pytest.fixture
def no_experiment(monkeypatch):
    """The experiment commands' runs replaced by a failure: a test passes only if the
    command stops before any fit."""
    from gmmfast.cli import lssvm_compare, scene_compare

    def compare(*args, **kw):
        raise AssertionError("the experiment ran")
    for module in (lssvm_compare, scene_compare):
        monkeypatch.setattr(module, "compare", compare)


@pytest.mark.parametrize("argv, match", [
    (["lssvm-compare", "--quick", "--eta", "0"], "--eta must be in (0, 1]"),
    (["scene-compare", "--quick", "--max-iter", "0"], "--max-iter must be at least 1"),
    (["lssvm-compare", "--quick", "--lam", "0.1", "--lams", "0.1,1"], "--lam or --lams"),
    (["scene-compare", "--quick", "--inits", "random,coherent"], "--inits: 'coherent'"),
])
def test_experiment_errors_exit_with_code_2(capsys, no_experiment, argv, match):
    assert match in cli_error(capsys, argv)       # was: exit code 1 (SystemExit(message))


def test_experiment_errors_in_a_real_process_are_one_line_with_code_2():
    proc = _run_cli(["scene-compare", "--quick", "--max-iter", "0"])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "gmmfast scene-compare: error: --max-iter must be at least 1, got 0"]


@pytest.mark.parametrize("argv, match", [
    (["lssvm-compare", "--quick", "--seed", "-1"],
     "argument --seed: must be an integer in [0, 2**63 - 1], got '-1'"),
    (["scene-compare", "--quick", "--data-seed", "-1"],
     "argument --data-seed: must be an integer in [0, 2**63 - 1], got '-1'"),
    (["scene-compare", "--quick", "--inits=-1"],
     "--inits: a Potts weight must be finite and >= 0, got -1.0"),
    (["scene-compare", "--quick", "--inits", "random,nan"], "--inits: a Potts weight must be"),
    (["scene-compare", "--quick", "--inits", "inf"], "--inits: a Potts weight must be"),
    # 2 images per class x 6 classes (the smallest data of the tests)
    (["lssvm-compare", "--n-per-class", "2", "--folds", "13"],
     "--folds must be at most the 12 images (2 per class, --n-per-class, x 6 classes), "
     "got 13"),
    (["lssvm-compare", "--n-per-class", "500"], "--n-per-class: n_per_class must be at most"),
    (["lssvm-compare", "--quick", "--lam", "1e-300"],
     "--lam must be at least 8.88e-12 on these data at --solver-tol 0.0001"),
    (["lssvm-compare", "--quick", "--lams", "0.1,1e-300"], "--lams must be at least 8.88e-12"),
    (["lssvm-compare", "--quick", "--solver-tol", "1e-13"], "--lam must be at least 0.00888"),
    (["scene-compare", "--quick", "--lam", "1e-12"], "--lam must be at least"),
])
def test_experiment_numbers_are_checked_before_any_work(capsys, no_experiment, argv, match):
    # was: a traceback from the data generator, the folds or the learner, after the work
    assert match in cli_error(capsys, argv)


def test_experiment_lam_floor_is_the_learners(capsys, no_experiment):
    """The command refuses exactly the lambdas LatentSSVM.fit refuses (its floor, on the data
    the command draws)."""
    from gmmfast.experiments import table2
    from gmmfast.lssvm import LatentMulticlassModel, LatentSSVM
    _, D = table2.objects(10, 0)                   # --quick's images
    floor = table2.lam_floor(D, 1e-4)
    est = LatentSSVM(LatentMulticlassModel(len(D.classes), positions=D.positions),
                     lam=floor * 0.99, max_iter=1)
    with pytest.raises(ValueError, match="too small"):
        est.fit(D.data, D.target)
    assert "--lam must be at least" in cli_error(
        capsys, ["lssvm-compare", "--quick", "--lam", repr(floor * 0.99)])
    with pytest.raises(AssertionError, match="the experiment ran"):   # accepted
        cli.main(["lssvm-compare", "--quick", "--lam", repr(floor)])


def test_experiment_outputs_are_checked_before_any_work(tmp_path, capsys, no_experiment):
    same = str(tmp_path / "same.png")
    for cmd in ("lssvm-compare", "scene-compare"):
        line = cli_error(capsys, [cmd, "--quick", "--out", str(tmp_path)])
        assert "--out " in line and "is a folder, not a file" in line   # was: after the run
        line = cli_error(capsys, [cmd, "--quick", "--figure", str(tmp_path / "fig.md")])
        assert ".md: matplotlib cannot write .md files; use one of" in line and "png" in line
        assert "--figure" in cli_error(capsys, [cmd, "--quick", "--figure",
                                                str(tmp_path / "no" / "f.png")])
    line = cli_error(capsys, ["lssvm-compare", "--quick", "--out", same, "--figure", same])
    assert "is the file of --out" in line                     # was: tables replaced by a PNG
    # scene-compare writes one picture per init: t.png -> t_random.png, t_lambda050.png
    line = cli_error(capsys, ["scene-compare", "--quick", "--out", str(tmp_path / "t_random.png"),
                              "--figure", str(tmp_path / "t.png")])
    assert "t_random.png: is the file of --out" in line
    assert not any(tmp_path.iterdir())


def test_figure_file_is_what_savefig_writes(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from gmmfast.cli._args import check_figure_file
    assert check_figure_file("x", "--figure", str(tmp_path / "f.PDF")) == str(tmp_path / "f.PDF")
    # no suffix: savefig appends its default format's
    assert check_figure_file("x", "--figure", str(tmp_path / "f")) == str(tmp_path / "f.png")
    assert check_figure_file("x", "--figure", str(tmp_path / "f.")) == str(tmp_path / "f.png")


# ------------------------------------------------ outputs: whole or not at all, checked first

def _enospc(fname, X, **kw):
    """np.savetxt on a full disk: part of the file written, then ENOSPC."""
    import errno
    fh = open(fname, "w") if isinstance(fname, str) else fname
    fh.write("0\n1\n")
    fh.flush()
    raise OSError(errno.ENOSPC, "No space left on device")


def test_cluster_write_failure_leaves_no_partial_file(tmp_path, capsys, monkeypatch):
    path = small_points(tmp_path)
    for option in ("-o", "--centers"):
        out = tmp_path / "out.txt"
        out.write_text("old\n")
        with monkeypatch.context() as m:
            m.setattr(np, "savetxt", _enospc)
            line = cli_error(capsys, ["cluster", str(path), "-k", "2", option, str(out)])
        # was: 'cannot write: [Errno 28] ...' (no file named) and a truncated, partial file
        assert line.endswith(f"error: cannot write {out}: No space left on device"), line
        assert out.read_text() == "old\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "x.txt"]


def test_atomic_writers_leave_the_old_file_or_none(tmp_path):
    from gmmfast._atomic import atomic_open, atomic_path
    target = tmp_path / "t.csv"
    for exc in (OSError(28, "No space left on device"), KeyboardInterrupt()):
        with pytest.raises(type(exc)) as info:
            with atomic_open(target) as fh:
                fh.write("partial")
                raise exc
        assert not target.exists() and list(tmp_path.iterdir()) == []
        if isinstance(exc, OSError):
            assert info.value.filename == str(target)     # the target, not the temporary
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with atomic_path(link) as tmp:
        assert tmp.endswith(".csv") and tmp != str(target)
        with open(tmp, "w") as fh:
            fh.write("new")
    assert link.is_symlink() and target.read_text() == "new"     # the link still points there
    assert target.stat().st_mode & 0o777 == 0o640                # the file's mode kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "t.csv"]



@pytest.mark.parametrize("stdout", ["file", "pipe"])
def test_cluster_writes_labels_to_dev_stdout(tmp_path, stdout):
    import os
    import subprocess
    import sys
    path = small_points(tmp_path)
    before = os.lstat("/dev/stdout")[:3]            # mode, inode, device
    argv = [sys.executable, "-m", "gmmfast", "cluster", str(path), "-k", "2",
            "-o", "/dev/stdout"]
    if stdout == "file":            # /dev/stdout is then a regular file: not to be replaced
        with open(tmp_path / "out", "w") as fh:
            proc = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, text=True,
                                  timeout=300)
        text = (tmp_path / "out").read_text()
    else:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        text = proc.stdout
    assert proc.returncode == 0, proc.stderr
    labels = [line for line in text.splitlines() if line in ("0", "1")]
    assert len(labels) == 30 and "wrote /dev/stdout" in text
    assert os.lstat("/dev/stdout")[:3] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["x.txt"] + (
        ["out"] if stdout == "file" else []))


def test_cluster_writes_labels_into_a_named_pipe(tmp_path, capsys):
    import os
    import threading
    path = small_points(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    try:
        assert cli.main(["cluster", str(path), "-k", "2", "-o", str(fifo)]) == 0
    finally:
        if reader.is_alive():           # nothing written: let the reader go
            with open(fifo, "w"):
                pass
        reader.join(timeout=60)
    assert got and len(got[0].split()) == 30
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "x.txt"]


@pytest.fixture
def compare_calls(monkeypatch):
    """The experiment commands' compare replaced by a recorder that stops the command."""
    from gmmfast.cli import lssvm_compare, scene_compare
    calls = []

    def compare(*args, **kw):
        calls.append(kw)
        raise KeyboardInterrupt
    for module in (lssvm_compare, scene_compare):
        monkeypatch.setattr(module, "compare", compare)
    return calls


@pytest.mark.parametrize("argv, expected", [
    (["lssvm-compare", "--quick"], dict(n_folds=2, max_iter=5, n_per_class=10)),
    (["lssvm-compare", "--quick", "--folds", "3", "--max-iter", "7", "--n-per-class", "4"],
     dict(n_folds=3, max_iter=7, n_per_class=4)),            # was: 2, 5, 10 (--quick's)
    (["scene-compare", "--quick"], dict(n_seeds=2, max_iter=5, n_train=60, n_test=60)),
    (["scene-compare", "--quick", "--seeds", "1", "--max-iter", "7", "--n-train", "20",
      "--n-test", "10"], dict(n_seeds=1, max_iter=7, n_train=20, n_test=10)),
])
def test_quick_changes_only_the_defaults_not_given(capsys, compare_calls, argv, expected):
    assert cli.main(argv) == 130
    assert {k: compare_calls[-1][k] for k in expected} == expected


def test_without_quick_the_defaults_are_the_documented_ones():
    from gmmfast.cli import lssvm_compare, scene_compare
    from gmmfast.cli._experiment import resolve_quick
    for cmd, module, expected in (
            ("lssvm-compare", lssvm_compare, dict(folds=5, max_iter=100, n_per_class=None)),
            ("scene-compare", scene_compare,
             dict(seeds=5, max_iter=200, n_train=300, n_test=300))):
        args = cli.build_parser().parse_args([cmd])
        resolve_quick(args, module.DEFAULTS)
        assert {k: getattr(args, k) for k in expected} == expected


# ------------------------------------------------------------------ reading points: checks first

def test_read_points_memory_maps_native_float64_npy(tmp_path):
    from gmmfast.datasets import read_points
    X = np.random.default_rng(0).normal(size=(40, 3))
    np.save(tmp_path / "x.npy", X)
    Y = read_points(tmp_path / "x.npy")
    assert np.array_equal(Y, X) and Y.dtype == np.float64 and Y.flags.c_contiguous
    assert not Y.flags.writeable and not Y.flags.owndata        # was: a copy in memory
    np.save(tmp_path / "v.npy", X[:, 0])
    assert read_points(tmp_path / "v.npy").shape == (40, 1)
    for other in (X.astype(np.float32), X.astype(">f8"), np.asfortranarray(X)):
        np.save(tmp_path / "o.npy", other)
        Z = read_points(tmp_path / "o.npy")
        assert Z.dtype == np.float64 and Z.flags.c_contiguous and np.allclose(Z, X, atol=1e-6)


def test_cluster_fits_a_memory_mapped_npy(tmp_path, capsys):
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(50, 2)) + c for c in ([0, 0], [9, 0], [0, 9])])
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.txt", X)
    for name in ("x.npy", "x.txt"):
        assert cli.main(["cluster", str(tmp_path / name), "-k", "3", "-o",
                         str(tmp_path / f"{name}.labels")]) == 0
    assert (tmp_path / "x.npy.labels").read_bytes() == (tmp_path / "x.txt.labels").read_bytes()


@pytest.mark.parametrize("array, match", [
    (np.ones((3, 2), dtype=complex), "complex"),
    (np.array([["a", "b"]]), "must hold real numbers, got dtype <U1"),
    (np.ones((0, 2)), r"non-empty table of points, got shape \(0, 2\)"),
    (np.ones((3, 0)), "non-empty"),
    (np.ones((2, 2, 2)), r"got shape \(2, 2, 2\)"),
])
def test_read_points_checks_the_npy_header_before_reading_the_data(tmp_path, monkeypatch,
                                                                   array, match):
    from gmmfast.datasets import read_points
    np.save(tmp_path / "a.npy", array)

    def read_array(*args, **kw):
        raise AssertionError("the data were read")
    monkeypatch.setattr(np.lib.format, "read_array", read_array)   # was: loaded, then checked
    with pytest.raises(ValueError, match=match):
        read_points(tmp_path / "a.npy")


def test_read_points_names_a_folder_a_pipe_or_a_device(tmp_path):
    import os
    import threading
    from gmmfast.datasets import read_points
    (tmp_path / "d.txt").mkdir()
    (tmp_path / "d.npy").mkdir()
    os.mkfifo(tmp_path / "p.csv")
    cases = [(tmp_path / "d.txt", "is a folder"), (tmp_path / "d.npy", "is a folder"),
             (tmp_path / "p.csv", "not a regular file"), ("/dev/zero", "not a regular file")]
    for path, match in cases:
        got = []

        def read():
            try:
                read_points(path)
            except Exception as exc:        # noqa: BLE001 -- the test looks at it
                got.append(exc)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout=30)              # was: a hang on the pipe and on /dev/zero
        assert got, f"{path}: still reading"
        assert isinstance(got[0], ValueError) and match in str(got[0]), (path, got)
        assert str(path) in str(got[0])       # was: IsADirectoryError for d.txt


def test_cluster_and_compare_name_an_input_that_is_no_file(tmp_path, capsys):
    folder = tmp_path / "data.csv"
    folder.mkdir()
    line = cli_error(capsys, ["cluster", str(folder), "-k", "2"])
    # was: 'no such file'
    assert line.endswith(f"error: {folder} is a folder, not a file of points"), line
    line = cli_error(capsys, ["compare", "--dataset", str(folder), "-k", "2", "--trials", "1"])
    assert f"{folder} is a folder, not a file of points" in line


# ------------------------------------------------------------------ Ctrl-C during start-up

def test_ctrl_c_while_the_command_starts_is_one_line(capsys, monkeypatch):
    import gmmfast.cli.compare

    def add_parser(sub):                # Ctrl-C while the subcommands are imported
        raise KeyboardInterrupt
    monkeypatch.setattr(gmmfast.cli.compare, "add_parser", add_parser)
    assert cli.main(["compare"]) == 130         # was: a KeyboardInterrupt traceback
    assert capsys.readouterr().err == "gmmfast: interrupted\n"


def test_ctrl_c_while_importing_in_a_real_process_exits_130(tmp_path):
    import subprocess
    import sys
    script = (
        "import os, runpy, signal, sys, threading\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import gmmfast\n"          # the package itself: light (its names load lazily)
        "sys.argv = ['gmmfast', 'cluster', sys.argv[1], '-k', '2']\n"
        "threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "runpy.run_module('gmmfast', run_name='__main__', alter_sys=True)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(small_points(tmp_path))],
                          capture_output=True, text=True, timeout=300)
    # was: a traceback from the imports of gmmfast.cli (numpy, the experiments)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr in ("gmmfast: interrupted\n", "gmmfast cluster: interrupted\n"), proc.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_cluster_chunk_mb_must_be_finite_and_positive(tmp_path, capsys, value):
    path = small_points(tmp_path)
    line = cli_error(capsys, ["cluster", str(path), "-k", "2", f"--chunk-mb={value}"])
    assert "--chunk-mb must be a finite number > 0" in line      # was: inf, nan accepted
    line = cli_error(capsys, ["cluster", str(path), "-k", "2", "--workers", "1",
                              f"--chunk-mb={value}"])
    assert "--chunk-mb must be a finite number > 0" in line      # was: inf crashed int()


def test_compare_checks_the_files_of_its_output_folder_first(tmp_path, capsys, monkeypatch):
    import gmmfast.cli.compare
    calls = []
    monkeypatch.setattr(gmmfast.cli.compare, "load_dataset", lambda *a, **kw: calls.append(a))
    for name in ("compare.csv", "compare.json", "objective.png"):
        out = tmp_path / name.replace(".", "_")
        (out / name).mkdir(parents=True)
        line = cli_error(capsys, ["compare", "--trials", "1", "--no-progress", "--out", str(out)])
        assert line.endswith(f"--out {out / name}: is a folder, not a file"), line
    assert calls == []                  # was: the whole run, then 'cannot write'
