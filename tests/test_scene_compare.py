"""The scene experiment (Table 3 layout) and the ``gmmfast scene-compare`` command, tiny."""
from __future__ import annotations

import numpy as np
import pytest

from gmmfast.cli.scene_compare import parse_inits
from gmmfast.cli import main
from gmmfast.experiments.table3 import (initial_labels, load_scenes, oracle,
                                            part_agreement, run_method)


def test_part_agreement_is_invariant_to_renaming():
    rng = np.random.default_rng(0)
    Z = rng.integers(0, 5, size=(7, 9))
    perm = rng.permutation(5)
    assert part_agreement(perm[Z], Z, 5) == 1.0
    noisy = perm[Z].copy()
    noisy[0, :3] = (noisy[0, :3] + 1) % 5
    assert part_agreement(noisy, Z, 5) == pytest.approx(1 - 3 / 63)


def test_initial_labels_and_a_run():
    D = load_scenes(1, n_train=40, n_test=40, grid=(5, 5))
    z_r = initial_labels(D, "random", 3)
    assert z_r.shape == (40, 25) and z_r.dtype == np.int32
    np.testing.assert_array_equal(z_r, initial_labels(D, "random", 3))
    assert not np.array_equal(z_r, initial_labels(D, "random", 4))
    z_t = initial_labels(D, "truth")
    np.testing.assert_array_equal(z_t, D.Z_train)
    assert not np.shares_memory(z_t, D.Z_train)
    assert z_t.dtype == np.int32 and part_agreement(z_t, D.Z_train, D.n_parts, D.y_train) == 1.0
    with pytest.raises(ValueError, match="'random', 'truth' or a Potts weight"):
        initial_labels(D, "true")
    z_c = initial_labels(D, 0.5, 0)
    assert D.centres is not None and z_c.shape == (40, 25)
    assert D.centres.shape == (5, 12, D.X_train.shape[2])     # parts per class
    # k-means parts agree with the truth well above random labels (0.15-0.18 on this draw:
    # with a renaming per class and 8 images per class, chance is far above 1/12)
    agree = part_agreement(z_c, D.Z_train, D.n_parts, D.y_train)
    assert agree > part_agreement(z_r, D.Z_train, D.n_parts, D.y_train) + 0.08
    r = run_method(D, "gmm-biased", 0.5, z_c, lam=10.0, max_iter=3, solver_max_iter=300)
    assert r.invariant_violations == [] and r.init == "lambda=0.50" and r.n_iter <= 3
    assert r.accuracy > 0.35 and r.objective < 1.0      # seen 0.60; chance is 0.2
    assert r.latent.shape == (6, 25)
    o = oracle(D, 10.0)
    assert o["accuracy"] > 0.3 and o["converged"]       # chance is 0.2


def test_cli_runs_tiny(tmp_path, capsys):
    out = tmp_path / "t.md"
    fig = tmp_path / "lab.png"
    rc = main(["scene-compare", "--quick", "--methods", "ccp,gmm-biased", "--solver-max-iter",
               "100", "--out", str(out), "--figure", str(fig)])
    assert rc == 0
    text = out.read_text()
    for name in ("CCP", "G-MM biased (Potts)", "oracle (true parts fixed)", "lambda=0.50",
                 "Iterations to converge"):
        assert name in text
    assert (tmp_path / "lab_random.png").exists() and (tmp_path / "lab_lambda050.png").exists()
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["scene-compare", "--inits", "random,coherent"])
    assert info.value.code == 2 and "--inits" in capsys.readouterr().err
    assert parse_inits("random, truth,0.5") == ["random", "truth", 0.5]
    with pytest.raises(SystemExit) as info:
        main(["scene-compare", "--methods", "ccp,em"])
    assert info.value.code == 2 and "--methods" in capsys.readouterr().err


def test_compare_passes_the_generator_overrides():
    from gmmfast.experiments.table3 import compare
    D, results, gen, lam = compare(["ccp"], ["random"], n_seeds=1, n_train=12, n_test=10,
                                   generator=dict(grid=(4, 4), n_bins=16), max_iter=1,
                                   solver_max_iter=50, progress=False)
    assert D.X_train.shape == (12, 16, 18) and D.X_test.shape[0] == 10   # d = n_bins + 2
    assert gen["n_bins"] == 16 and gen["grid"] == (4, 4) and lam == 10.0
    assert len(results) == 1 and results[0].method == "ccp"


def test_compare_refuses_an_unknown_generator_parameter():
    from gmmfast.experiments.table3 import compare
    with pytest.raises(ValueError, match="generator: unknown parameter.*'bins'"):
        compare(["ccp"], ["random"], generator=dict(bins=16), progress=False)
    with pytest.raises(ValueError, match="n_bins must be an integer"):
        compare(["ccp"], ["random"], n_train=12, n_test=10, generator=dict(n_bins=2.5),
                progress=False)


def test_compare_runs_the_walk_variant_of_the_potts_bias():
    from gmmfast.experiments.table3 import compare
    D, results, gen, lam = compare(["gmm-biased", "gmm-biased-walk"], ["random"], n_seeds=1,
                                   n_train=12, n_test=10, generator=dict(grid=(4, 4)),
                                   max_iter=3, solver_max_iter=50, progress=False)
    assert sorted(r.method for r in results) == ["gmm-biased", "gmm-biased-walk"]
    for r in results:
        assert r.invariant_violations == [] and 1 <= r.n_iter <= 3


def test_compare_from_the_true_parts_runs_each_deterministic_method_once():
    from gmmfast.experiments.table3 import compare, coherence
    D, results, gen, lam = compare(["ccp"], ["truth"], n_seeds=3, n_train=12, n_test=10,
                                   generator=dict(grid=(4, 4)), max_iter=3,
                                   solver_max_iter=50, progress=False)
    assert len(results) == 1
    r = results[0]
    assert r.init == "truth" and r.parts_init == 1.0 and r.invariant_violations == []
    assert r.coherence_init == pytest.approx(coherence(D.Z_train, D.grid))


def test_region_positions_give_a_score_per_class_region_and_part():
    from gmmfast.experiments.table3 import region_positions
    from gmmfast.lssvm import RegionPartModel
    rng = np.random.default_rng(0)
    C, P, grid, d, s = 3, 4, (2, 3), 5, 2.5
    R = grid[0] * grid[1]
    X = rng.standard_normal((2, R, d))
    Xp = region_positions(X, s)
    assert Xp.shape == (2, R, d + R)
    np.testing.assert_array_equal(Xp[..., :d], X)
    np.testing.assert_array_equal(Xp[1, :, d:], s * np.eye(R))
    assert region_positions(X, 0) is X
    # class-specific filters with weights on the position columns only: score = A[c, r, z_r]
    A = rng.standard_normal((C, R, P))
    model = RegionPartModel(C, P, grid, shared_parts=False)
    U = np.zeros((C * P, d + R))
    U[:, d:] = A.transpose(0, 2, 1).reshape(C * P, R) / s
    w = np.concatenate([U.ravel(), np.zeros(C * P)])
    z = rng.integers(0, P, size=R)
    for c in range(C):
        score = w @ model.joint_feature(Xp[0], c, z)
        assert score == pytest.approx(A[c, np.arange(R), z].sum())
    with pytest.raises(ValueError, match="positions"):
        region_positions(X, -1.0)
    with pytest.raises(ValueError, match=r"\(n, R, d\)"):
        region_positions(X[0], 1.0)


def test_compare_with_region_positions(capsys):
    from gmmfast.experiments.table3 import compare
    D, results, gen, lam = compare(["ccp"], ["random"], n_seeds=1, n_train=12, n_test=10,
                                   generator=dict(grid=(4, 4), n_bins=16), positions=0.5,
                                   max_iter=2, solver_max_iter=50, progress=False)
    assert D.X_train.shape == (12, 16, 18 + 16) and D.X_test.shape == (10, 16, 18 + 16)
    assert gen["positions"] == 0.5
    np.testing.assert_array_equal(D.X_test[3, :, 18:], 0.5 * np.eye(16))
    assert results[0].invariant_violations == []
    with pytest.raises(SystemExit) as info:
        main(["scene-compare", "--quick", "--positions", "-1"])
    assert info.value.code == 2
    assert "--positions must be a finite number >= 0" in capsys.readouterr().err
