"""The paper's claims, small enough for the suite: each test is a claim of Naderi et al. (ICML
2019) on a small draw, and each fails when the mechanism it guards is switched off (the
docstrings say how that was checked, by hand, with the numbers seen).

- Table 1: from identical initialisations the paper's G-MM (random valid bounds, eta = 0.02)
  reaches a mean SSE at most k-means' on GMM-200 and Norm-25.
- Table 2: on cluttered objects G-MM with the multi-fold MIL bias reaches a lower training
  objective than CCP from the top-left and from random windows.
- Table 3: on scenes the Potts bias gives more coherent part labelings than CCP from random
  part labels.

The margins asserted are well inside the gaps seen on these draws (and on the neighbouring
seeds, noted per test): a test that passes by a hair would be flaky and say little.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from gmmfast.experiments import table1


# --------------------------------------------------------------------------- Table 1

def table1_means(dataset, inits, trials, seed=0):
    """Mean SSE/n of k-means and of the paper's G-MM per initialisation, every trial of both
    starting from the same centers: the runs of ``gmmfast compare`` (table1.run_trials)."""
    data = table1.load_dataset(dataset, seed=seed)
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")          # Lloyd's empty clusters (ConvergenceWarning)
        records = table1.run_trials(data, inits=inits, trials=trials, eta=0.02,
                                    methods=("k-means", "gmm-paper"), seed=seed)
    assert all(r["invariant_violations"] == 0 for r in records)
    s = table1.summarize(records)
    return {init: (s["k-means"][init]["mean"], s["gmm-paper"][init]["mean"]) for init in inits}


def test_table1_gmm200_paper_gmm_at_most_kmeans_from_identical_inits():
    """GMM-200 (draw 0), 3 trials per initialisation.

    Seen on draws 0-4 (4 trials) as G-MM mean / k-means mean: random partition 0.15-0.21,
    forgy 0.93-0.99, k-means++ 0.988-0.994. Here (draw 0, 3 trials, one thread): random
    partition 2.163 vs 13.882, forgy 2.053 vs 2.113, k-means++ 1.854 vs 1.866.

    Checked by hand that it fails without G-MM's mechanism: with ``table1.method_params``
    patched so that "gmm-paper" runs eta=1 (every valid bound touches: Lloyd's iterates), or
    selection="mm" (the touching bound) at eta=0.02, every mean equals k-means' and the first
    assertion fails: 13.882 > 0.5 * 13.882.
    """
    means = table1_means("gmm200", ("random-partition", "forgy", "k-means++"), trials=3)
    km, gmm = means["random-partition"]
    assert gmm <= 0.5 * km, means         # the paper: 1.85 against 11.20 from random partitions
    km, gmm = means["forgy"]
    assert gmm <= 0.995 * km, means
    km, gmm = means["k-means++"]
    assert gmm <= km * (1 + 1e-12), means


def test_table1_norm25_paper_gmm_at_most_kmeans_from_identical_inits():
    """Norm-25 (draw 0), 2 trials per initialisation.

    Seen on draws 0-4 (4 trials) as G-MM mean / k-means mean: random partition 0.07-0.66,
    forgy 0.34-0.75, k-means++ 1.0 (both reach the 25 true clusters: 15.0 SSE/n).

    Here (draw 0, 2 trials): random partition 70502 vs 103064 (0.68), forgy 16243 vs 43477
    (0.37), k-means++ 15.0025 both.

    Checked by hand: with "gmm-paper" patched to eta=1 or to selection="mm" every mean equals
    k-means' and the test fails at the random-partition assertion: 103064 > 0.9 * 103064.
    """
    means = table1_means("norm25", ("random-partition", "forgy", "k-means++"), trials=2)
    km, gmm = means["random-partition"]
    assert gmm <= 0.9 * km, means
    km, gmm = means["forgy"]
    assert gmm <= 0.8 * km, means
    km, gmm = means["k-means++"]
    assert gmm <= km * (1 + 1e-12), means


# --------------------------------------------------------------------------- Table 2

#: A small cluttered-objects draw: the experiment's generator (table2.OBJECTS_DEFAULTS) at half
#: the object scale on an 8-cell canvas (25 candidate windows of 144 features instead of 49 of
#: 576), 20 images per class.
SMALL_OBJECTS = dict(n_per_class=20, scale=2, canvas_cells=8)


@pytest.fixture(scope="module")
def small_objects():
    from gmmfast.datasets import make_cluttered_objects
    from gmmfast.experiments.table2 import OBJECTS_DEFAULTS
    return make_cluttered_objects(**dict(OBJECTS_DEFAULTS, **SMALL_OBJECTS, random_state=0))


def lssvm_objective(D, method, init, bias="multifold", eta=0.1):
    """Training objective F after a fit of ``method`` from ``init`` on all of D: the
    experiment's settings (table2.run_fold: dcd, tol 1e-3, solver tol 1e-4) at lambda 0.001
    (the experiment's LAM) with 5 bias folds (the experiment: 10)."""
    from gmmfast.experiments.table2 import LAM, SOLVER
    from gmmfast.lssvm import LatentMulticlassModel, LatentSSVM
    est = LatentSSVM(LatentMulticlassModel(len(D.classes), positions=D.positions), lam=LAM,
                     method=method, eta=eta, bias=bias, n_folds=5, solver=SOLVER, tol=1e-3,
                     max_iter=100, solver_tol=1e-4, random_state=np.random.default_rng([0, 0]))
    with threadpool_limits(limits=1):
        est.fit(D.data, D.target, latent_init=init)
    assert est.history_.invariant_violations() == []
    return est.objective_


def touching_bias(family, w_prev, z_prev):
    """A 'bias' that is CCP's choice: the gains are the scores at the previous solution, so the
    valid bound maximising them is the touching one (used by hand to switch the multi-fold
    bias off)."""
    return family.model.latent_table(family.data, family.y, w_prev,
                                     np.arange(family.n, dtype=np.int64))


@pytest.mark.parametrize("init", ["top-left", "random"])
def test_table2_multifold_bias_beats_ccp_training_objective(small_objects, init):
    """G-MM with the multi-fold MIL bias ends at a lower training objective F than CCP.

    Seen (F of G-MM biased / F of CCP) on draws 0-4 of SMALL_OBJECTS: top-left 0.86, 0.94,
    0.87, 0.88, 0.92; random 0.73, 0.94, 0.86, 0.80, 0.87. Here (draw 0): top-left 0.394 vs
    0.460, random 0.325 vs 0.447. (At lambda 0.01 on draw 0 from top-left CCP was lower, 0.829
    vs 0.838: the claim is the paper's at its lambda, not at every one.)

    Checked by hand that it fails without the bias: with ``bias=touching_bias`` (gains = the
    scores at the previous solution, CCP's choice) or ``eta=1`` G-MM biased gives CCP's F
    exactly and the assertion fails (0.460 > 0.95 * 0.460 from top-left).
    """
    ccp = lssvm_objective(small_objects, "ccp", init)
    gmm = lssvm_objective(small_objects, "gmm-biased", init)
    assert gmm <= 0.95 * ccp, (gmm, ccp)


# --------------------------------------------------------------------------- Table 3

#: The bias of the scenes claim (a module attribute, to switch it off by hand).
SCENES_BIAS = "potts"


@pytest.fixture(scope="module")
def small_scenes():
    from gmmfast.experiments.table3 import load_scenes
    return load_scenes(0, n_train=25, n_test=5, grid=(5, 5))


def test_table3_potts_bias_more_coherent_than_ccp_from_random_parts(small_scenes):
    """From random part labels, G-MM with the Potts bias ends with far more coherent labelings
    (lower Potts energy per image: neighbouring regions with different parts) than CCP.

    The experiment's run (table3.run_method: lambda 10, eta 0.1) on 25 training scenes of
    5 x 5 regions, 3 iterations. Seen on draws 0, 1, 2 (Potts energy per image, from 36-37 for
    the random labels): CCP 31.8, 33.6, 32.4; G-MM biased 0.1, 0.5, 0.2. The full experiment
    (bench/results/scenes_table3_random_d66_n100.md) shows the same: 148 against 18.

    Checked by hand that it fails without the bias: with ``bias=touching_bias`` (CCP's
    choice) or ``eta=1`` G-MM biased's labelings are CCP's and the assertion fails
    (31.8 > 0.5 * 31.8).
    """
    from gmmfast.experiments.table3 import initial_labels, run_method
    D = small_scenes
    z0 = initial_labels(D, "random", 0)
    kw = dict(max_iter=3, tol=1e-5, solver_max_iter=300, seed=0)
    with threadpool_limits(limits=1):
        ccp = run_method(D, "ccp", "random", z0, **kw)
        gmm = run_method(D, "gmm-biased", "random", z0, bias=SCENES_BIAS, **kw)
    assert ccp.invariant_violations == [] and gmm.invariant_violations == []
    assert ccp.coherence_init == gmm.coherence_init > 30        # the same random labels
    assert gmm.coherence <= 0.5 * ccp.coherence, (gmm.coherence, ccp.coherence)
    assert gmm.coherence < 5
