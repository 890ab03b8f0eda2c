"""The ``gmmfast compare`` and ``gmmfast cluster`` subcommands (small runs writing their files)."""
import csv
import json

import numpy as np
import pytest

from gmmfast import cli
from gmmfast._cli import compare


def test_compare_is_registered_and_the_default_job():
    assert "compare" in cli.SUBCOMMANDS and "cluster" in cli.SUBCOMMANDS
    assert cli.DEFAULT[0] == "compare"
    args = cli.build_parser().parse_args(cli.DEFAULT)
    assert args.dataset == "gmm200" and args.trials == compare.DEFAULT_TRIALS
    assert args.func is compare.run


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
    s = summary["summary"]["gmm"]["forgy"]
    assert s["trials"] == 2 and s["best"] <= s["mean"]
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


def test_compare_errors_are_clear(tmp_path):
    path = tmp_path / "p.txt"
    np.savetxt(path, np.random.default_rng(0).normal(size=(20, 2)))
    with pytest.raises(SystemExit, match="-k is required"):
        cli.main(["compare", "--dataset", str(path), "--trials", "1"])
    with pytest.raises(SystemExit, match="gmm200, norm25, d31, r15"):
        cli.main(["compare", "--dataset", "cloud", "--trials", "1"])
    with pytest.raises(SystemExit, match="--inits"):
        cli.main(["compare", "--inits", "kmeans++", "--trials", "1"])
    with pytest.raises(SystemExit, match="--methods"):
        cli.main(["compare", "--methods", "lloyd", "--trials", "1"])


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
    with pytest.raises(SystemExit, match="no such file"):
        cli.main(["cluster", str(tmp_path / "missing.csv"), "-k", "2"])
    with pytest.raises(SystemExit, match="n_clusters=40"):
        cli.main(["cluster", str(path), "-k", "40"])
    with pytest.raises(SystemExit, match="eta"):
        cli.main(["cluster", str(path), "-k", "2", "--eta", "2"])
