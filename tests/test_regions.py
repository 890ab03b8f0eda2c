"""The region-part scene model, several latent variables per example, and the Potts bias."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from gmmfast.datasets import make_scenes
from gmmfast.latent import sample_latent, table_value
from gmmfast.lssvm import (LatentSSVM, LSSVMBounds, PottsBias, RegionPartModel, coherent_labels,
                           discover_parts, part_unaries, potts_select, subset_select)
from gmmfast.potts import alpha_expansion, potts_energy


def tiny_scenes(n=40, seed=0, grid=(4, 4), **kw):
    params = dict(n_classes=3, n_parts=4, n_features=4, grid=grid, regions_per_class=3,
                  noise=1.0)
    params.update(kw)
    return make_scenes(n, random_state=seed, **params)


def brute_augmented(X, y, U, V, loss, augment=True):
    """numpy: per class sum_r max_p (S_c + V[c]) (+ Delta); first class, first part on ties.

    S_c are the responses of class c's filters: all of U when it has n_parts rows (shared
    parts), else its c-th block of n_parts rows."""
    C, P = V.shape
    S = np.einsum("nrd,pd->nrp", X.astype(np.float64), U)
    Sc = [S if U.shape[0] == P else S[..., c * P:(c + 1) * P] for c in range(C)]
    tot = np.stack([(Sc[c] + V[c]).max(-1).sum(-1) for c in range(C)], axis=1)
    if augment:
        tot = tot + loss[y]
    y_hat = tot.argmax(1)
    pick = lambda labels: np.stack([Sc[c][q] for q, c in enumerate(labels)])  # noqa: E731
    z_hat = (pick(y_hat) + V[y_hat][:, None, :]).argmax(-1)
    table = pick(y) + V[y][:, None, :]
    return tot.max(1), y_hat, z_hat, table


# -- the model's kernels -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("augment", [True, False])
@pytest.mark.parametrize("shared", [True, False])
def test_loss_augmented_matches_numpy(dtype, augment, shared):
    rng = np.random.default_rng(0)
    n, (Hg, Wg), d, P, C = 90, (3, 5), 6, 5, 4     # 90 > one chunk of 64
    R = Hg * Wg
    X = rng.normal(size=(n, R, d)).astype(dtype)
    y = rng.integers(0, C, size=n).astype(np.int32)
    loss = rng.uniform(0.5, 2.0, size=(C, C))
    np.fill_diagonal(loss, 0)
    model = RegionPartModel(C, P, (Hg, Wg), loss=loss, shared_parts=shared)
    data = model.prepare(X)
    assert data.X.dtype == dtype
    w = rng.normal(size=model.size_joint_feature(data))
    assert w.shape == ((1 if shared else C) * P * d + C * P,)
    U, V = model.split(w, d)
    idx = rng.permutation(n).astype(np.int64)[: n - 9]
    a = model.loss_augmented(data, y, w, idx, table=True, phi=True, augment=augment)
    H, yh, zh, tab = brute_augmented(X[idx], y[idx], U, V, loss, augment)
    np.testing.assert_allclose(a.H, H, rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(a.y_hat, yh)
    np.testing.assert_array_equal(a.z_hat, zh)
    np.testing.assert_allclose(a.table, tab, rtol=1e-12, atol=1e-10)
    assert a.z_hat.shape == (idx.shape[0], R) and a.table.shape == (idx.shape[0], R, P)
    phi = sum(model.joint_feature(X[i], yh[q], zh[q]) for q, i in enumerate(idx))
    np.testing.assert_allclose(a.phi_sum, phi, rtol=1e-12, atol=1e-9)
    assert a.loss_sum == pytest.approx(loss[y[idx], yh].sum())
    # H is the score of the maximiser plus its loss (w.phi consistent with the kernel)
    for q in range(5):
        i = idx[q]
        s = w @ model.joint_feature(X[i], yh[q], zh[q]) + (loss[y[i], yh[q]] if augment else 0)
        assert s == pytest.approx(a.H[q], abs=1e-9)
    np.testing.assert_allclose(model.latent_table(data, y, w, idx), tab, rtol=1e-12, atol=1e-10)
    z = rng.integers(0, P, size=(idx.shape[0], R)).astype(np.int32)
    ref = sum(model.joint_feature(X[i], y[i], z[q]) for q, i in enumerate(idx))
    np.testing.assert_allclose(model.phi_sum(data, y, z, idx), ref, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(model.joint_features(data, y, z, idx).sum(0), ref, atol=1e-9)


def test_kernels_do_not_depend_on_thread_count():
    X, y, Z = tiny_scenes(n=200, seed=1)
    model = RegionPartModel(3, 4, (4, 4))
    data = model.prepare(X)
    w = np.random.default_rng(1).normal(size=model.size_joint_feature(data))
    idx = np.arange(200, dtype=np.int64)
    outs = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            import gmmfast.lssvm._models as M
            old = M.WORK_PER_THREAD
            M.WORK_PER_THREAD = 1          # force the threaded path
            try:
                a = model.loss_augmented(data, y.astype(np.int32), w, idx, table=True, phi=True)
            finally:
                M.WORK_PER_THREAD = old
        outs.append(a)
    for f in ("H", "y_hat", "z_hat", "table", "phi_sum"):
        np.testing.assert_array_equal(getattr(outs[0], f), getattr(outs[1], f))


# -- several latent variables per example in the bound family --------------------------------
def _family(seed=0, n=30, **kw):
    X, y, Z = tiny_scenes(n=n, seed=seed)
    model = RegionPartModel(3, 4, (4, 4))
    data = model.prepare(X)
    fam = LSSVMBounds(model, data, y.astype(np.int32), 0.1, Z.copy(), solver_tol=1e-4,
                      solver_max_iter=200, **kw)
    return fam, X, y, Z


def test_bound_family_is_per_variable():
    fam, X, y, Z = _family()
    assert fam.latent_shape == (16,) and fam.n_vars == 16 and fam.width == 4
    w = np.random.default_rng(0).normal(size=fam.D)
    e = fam.at(w)
    assert e.costs.shape == (30 * 16, 4) and e.touching.shape == (30, 16)
    # F(w) = lam/2 |w|^2 + 1/n sum_i [H_i - max_z score(x_i, y_i, z)], by brute force
    model = fam.model
    U, V = model.split(w, X.shape[2])
    H, *_ = brute_augmented(X, y, U, V, model.loss_matrix())
    S = np.einsum("nrd,pd->nrp", X, U) + V[y][:, None, :]
    F = 0.05 * w @ w + np.mean(H - S.max(-1).sum(-1))
    assert fam.objective(w) == pytest.approx(F, rel=1e-12)
    # b_z(w) for any z, and b_z(w) >= F(w) with equality at the touching labels
    z = np.random.default_rng(1).integers(0, 4, size=(30, 16)).astype(np.int32)
    bz = 0.05 * w @ w + np.mean(H - np.take_along_axis(S, z[..., None], -1)[..., 0].sum(-1))
    assert fam.bound_value(z, w) == pytest.approx(bz, rel=1e-12)
    assert fam.bound_value(z, w) >= fam.objective(w)
    assert fam.bound_value(e.touching, w) == fam.objective(w)
    np.testing.assert_array_equal(e.touching, S.argmax(-1))


@pytest.mark.parametrize("rb", ["walk", "subset"])
def test_random_bounds_per_variable_are_valid(rb):
    fam, X, y, Z = _family(random_bounds=rb, walk_steps=2000)
    rng = np.random.default_rng(0)
    w = rng.normal(size=fam.D) * 0.3
    fam.z_prev = Z.astype(np.int32)
    e = fam.at(w)
    F = fam.objective(w)
    for slack in (0.0, 0.01, 0.1):
        thr = F + slack
        sel = fam.random_valid(w, thr, rng)
        assert sel.bound.shape == (30, 16) and sel.bound.dtype == np.int32
        assert fam.bound_value(sel.bound, w) <= thr
        if rb == "subset":   # whole images switch: every image is either previous or touching
            for i in range(30):
                assert (np.array_equal(sel.bound[i], Z[i]) or
                        np.array_equal(sel.bound[i], e.touching[i]))
    # with slack the walk leaves the touching labels on some regions
    if rb == "walk":
        assert (sel.bound != e.touching).any()


def test_subset_select_switches_whole_images():
    rng = np.random.default_rng(2)
    n, R, L = 12, 5, 3
    costs = rng.normal(size=(n * R, L))
    touching = costs.argmin(1).astype(np.int32).reshape(n, R)
    previous = rng.integers(0, L, size=(n, R)).astype(np.int32)
    order = rng.permutation(n)
    budget = (table_value(costs, touching.ravel()) + table_value(costs, previous.ravel())) / 2
    z, v, s = subset_select(costs, touching, previous, budget, order, 1)
    assert v <= budget and v == table_value(costs, z.ravel())
    np.testing.assert_array_equal(z[order[:s]], touching[order[:s]])
    np.testing.assert_array_equal(z[order[s:]], previous[order[s:]])


# -- the Potts bias ----------------------------------------------------------------------------
def _problem(rng, n, grid, L, frac):
    R = grid[0] * grid[1]
    costs = rng.normal(size=(n, R, L))
    touching = costs.argmin(-1).astype(np.int32)
    lo = table_value(costs.reshape(-1, L), touching.ravel())
    hi = table_value(costs.reshape(-1, L), costs.argmax(-1).ravel())
    return costs, touching, lo + frac * (hi - lo)


@pytest.mark.parametrize("search", ["global", "walk"])
def test_potts_select_always_valid_and_never_less_coherent_than_touching(search):
    rng = np.random.default_rng(0)
    for trial in range(30):
        grid = (int(rng.integers(1, 5)), int(rng.integers(2, 5)))
        L = int(rng.integers(2, 5))
        costs, touching, budget = _problem(rng, int(rng.integers(1, 6)), grid, L,
                                           rng.choice([0.0, 1e-3, 0.05, 0.2, 0.6, 1.0]))
        z, v, info = potts_select(costs, budget, touching, grid, search=search)
        n = costs.shape[0]
        assert z.shape == touching.shape and z.dtype == np.int32
        assert v <= budget and v == table_value(costs.reshape(-1, L), z.ravel())
        E = potts_energy(z.reshape(n, *grid)).sum()
        assert E == info["energy"]
        assert E <= potts_energy(touching.reshape(n, *grid)).sum() == info["touching_energy"]
        if search == "walk":
            assert info["evaluations"] == 0           # no alpha-expansion on the walk


def test_potts_select_beats_every_walk_labeling():
    """Among valid labelings found by the walk from the touching start, none is more coherent."""
    rng = np.random.default_rng(1)
    for trial in range(12):
        grid = (3, 3)
        n, L = 3, 3
        costs, touching, budget = _problem(rng, n, grid, L, [0.02, 0.1, 0.3][trial % 3])
        z, v, info = potts_select(costs, budget, touching, grid)
        flat = costs.reshape(-1, L)
        best_walk = np.inf
        for seed in range(40):
            zw, vw, _ = sample_latent(flat, touching.ravel(), budget, 400, seed)
            assert vw <= budget
            best_walk = min(best_walk, potts_energy(zw.reshape(n, *grid)).sum())
        assert info["energy"] <= best_walk


def test_potts_select_exact_on_tiny_problems_often():
    """Against exhaustive search (2 images of 2 x 2, 2 labels): valid, within a small gap, and
    optimal in most trials (Lagrangian + greedy fill is not exact in general)."""
    rng = np.random.default_rng(3)
    exact = 0
    for trial in range(25):
        costs, touching, budget = _problem(rng, 2, (2, 2), 2, rng.uniform(0.05, 0.7))
        z, v, info = potts_select(costs, budget, touching, (2, 2))
        flat = costs.reshape(-1, 2)
        best = np.inf
        for c in itertools.product(range(2), repeat=8):
            zz = np.array(c, dtype=np.int32)
            if table_value(flat, zz) <= budget:
                best = min(best, potts_energy(zz.reshape(2, 2, 2)).sum())
        assert info["energy"] >= best
        assert info["energy"] <= best + 2
        exact += info["energy"] == best
    assert exact >= 20


def test_potts_select_extremes():
    rng = np.random.default_rng(4)
    costs, touching, _ = _problem(rng, 4, (3, 3), 3, 0.0)
    flat = costs.reshape(-1, 3)
    # no slack: only labelings costing exactly the touching value (generically: touching)
    z, v, info = potts_select(costs, table_value(flat, touching.ravel()), touching, (3, 3))
    np.testing.assert_array_equal(z, touching)
    # any budget: every image constant (E = 0)
    z, v, info = potts_select(costs, 1e9, touching, (3, 3))
    assert info["energy"] == 0 and info["multiplier"] == 0.0
    assert (z == z[:, :1]).all()
    with pytest.raises(ValueError, match="budget"):
        potts_select(costs, table_value(flat, touching.ravel()) - 1.0, touching, (3, 3))


def test_potts_select_walk_stays_near_the_touching_labeling():
    """Two clean halves per image, any budget: the global search makes every image one part
    (E = 0); the walk cannot, since moving any region off a straight boundary raises E."""
    n, H, W, L = 3, 4, 4, 3
    touching = np.zeros((n, H, W), dtype=np.int32)
    touching[:, :, W // 2:] = 1
    touching = touching.reshape(n, H * W)
    costs = np.ones((n, H * W, L))
    costs[np.arange(n)[:, None], np.arange(H * W)[None, :], touching] = 0.0
    z, v, info = potts_select(costs, 1e9, touching, (H, W))
    assert info["energy"] == 0 and (z == z[:, :1]).all()
    z, v, info = potts_select(costs, 1e9, touching, (H, W), search="walk")
    np.testing.assert_array_equal(z, touching)
    assert info["energy"] == info["touching_energy"] == n * H and math.isnan(info["multiplier"])
    with pytest.raises(ValueError, match="search must be 'global' or 'walk', got 'local'"):
        potts_select(costs, 1e9, touching, (H, W), search="local")


def test_potts_select_checks_its_counts_and_costs():
    """n_bisect and exchanges were not checked (negatives accepted, non-integers a raw
    TypeError naming nothing), and a -inf cost gave a labeling of cost -inf where
    lagrangian_select refuses -inf."""
    rng = np.random.default_rng(0)
    costs, touching, _ = _problem(rng, 3, (2, 2), 3, 0.5)
    budget = table_value(costs.reshape(-1, 3), touching.ravel()) + 0.5
    for kw, what in ((dict(n_bisect=-1), "n_bisect must be an integer >= 0"),
                     (dict(n_bisect=1.5), "n_bisect must be an integer >= 0"),
                     (dict(exchanges=-5), "exchanges must be an integer >= 0"),
                     (dict(exchanges="x"), "exchanges must be an integer >= 0"),
                     (dict(max_cycles=0, search="walk"), "max_cycles must be an integer >= 1")):
        with pytest.raises(ValueError, match=what):
            potts_select(costs, budget, touching, (2, 2), **kw)
    bad = costs.copy()
    bad[0, 0, 2] = -np.inf
    with pytest.raises(ValueError, match="costs must not contain NaN or -inf"):
        potts_select(bad, budget, touching, (2, 2))
    z, v, _ = potts_select(costs, budget, touching, (2, 2), n_bisect=0, exchanges=0)
    assert v <= budget


def test_potts_bias_search_is_checked_before_fitting():
    X, y, Z = tiny_scenes(n=12, seed=6)
    est = LatentSSVM(RegionPartModel(3, 4, (4, 4)), method="gmm-biased",
                     bias=PottsBias(search="local"), max_iter=2)
    with pytest.raises(ValueError, match="search must be 'global' or 'walk', got 'local'"):
        est.fit(X, y, latent_init="random")
    assert not hasattr(est, "coef_")


def test_potts_bias_takes_n_bisect_as_potts_select_does():
    """PottsBias wanted n_bisect >= 1 while potts_select, which it runs, takes 0 (no
    bisection: the valid end of the factor-4 bracket of the multiplier), so
    PottsBias(n_bisect=0) failed in the middle of a fit."""
    X, y, Z = tiny_scenes(n=24, seed=6)
    z0 = _init(X, 0.5)
    kw = dict(lam=1.0, method="gmm-biased", eta=0.2, max_iter=3, tol=0.0, solver_max_iter=300,
              random_state=0)
    est = LatentSSVM(RegionPartModel(3, 4, (4, 4)), bias=PottsBias(n_bisect=0), **kw)
    est.fit(X, y, latent_init=z0)
    assert est.history_.invariant_violations() == []
    assert est.bias_.n_bisect == 0 and len(est.bias_.energies) == est.n_iter_ - 1
    est.set_params(bias=PottsBias(n_bisect=-1))
    with pytest.raises(ValueError, match="PottsBias n_bisect must be an integer >= 0, got -1"):
        est.fit(X, y, latent_init=z0)


def test_potts_bias_fails_before_any_pass():
    """PottsBias's parameters were checked by setup, after the first bound had been built
    and its pass over the data made, and after the estimator had been marked unfitted: a
    bad one now fails as LatentSSVM's own parameters do, before any work, naming
    the parameter and what it accepts, and a fitted estimator is left as it was."""
    class Counting(RegionPartModel):
        passes = 0

        def loss_augmented(self, *args, **kwargs):
            self.passes += 1
            return super().loss_augmented(*args, **kwargs)

    X, y, Z = tiny_scenes(n=12, seed=6)
    z0 = _init(X, 0.5)
    model = Counting(3, 4, (4, 4))
    est = LatentSSVM(model, lam=1.0, method="gmm-biased", bias=PottsBias(search="walk"),
                     max_iter=2, random_state=0)
    est.fit(X, y, latent_init=z0)
    assert not np.array_equal(est.coef_, np.zeros_like(est.coef_))
    coef, pred = est.coef_.copy(), est.predict(X)
    for bias, what in ((PottsBias(n_bisect=-1), "PottsBias n_bisect must be an integer >= 0, "
                                                "got -1"),
                       (PottsBias(n_bisect=2.5), "PottsBias n_bisect must be an integer >= 0"),
                       (PottsBias(max_cycles=0), "PottsBias max_cycles must be an integer >= 1, "
                                                 "got 0"),
                       (PottsBias(search="local"), "PottsBias search must be 'global' or "
                                                   "'walk', got 'local'")):
        model.passes = 0
        est.set_params(bias=bias)
        with pytest.raises(ValueError, match=what):
            est.fit(X, y, latent_init=z0)
        assert model.passes == 0
        np.testing.assert_array_equal(est.coef_, coef)        # the last fit, still usable
        np.testing.assert_array_equal(est.predict(X), pred)


# -- initialisation ----------------------------------------------------------------------------
def test_coherent_initialisation():
    X, y, Z = tiny_scenes(n=30, seed=5, grid=(6, 6), noise=0.8)
    cent = discover_parts(X, 4, random_state=0)
    assert cent.shape == (4, 4)
    U, scale = part_unaries(X, cent)
    assert U.min() == 0 and scale > 0
    # the margin of the best part over the second is 1 on average
    assert np.partition(U, 1, axis=-1)[..., 1].mean() == pytest.approx(1.0)
    energies = []
    for lam in (0.0, 0.25, 0.5, 1.0):
        z = coherent_labels(X, cent, lam, (6, 6))
        assert z.shape == (30, 36) and z.dtype == np.int32
        if lam == 0:
            np.testing.assert_array_equal(z, U.argmin(-1))
        ref, _ = alpha_expansion(U.reshape(30, 6, 6, 4), lam)
        np.testing.assert_array_equal(z, ref.reshape(30, 36))
        energies.append(potts_energy(z.reshape(30, 6, 6)).sum())
    assert energies[0] > energies[-1]            # lambda makes the labelings coherent
    assert np.all(np.diff(energies) <= 0)


# -- the learner on the scene model ----------------------------------------------------------
METHODS = [("ccp", "walk", "potts"), ("gmm-random", "walk", "potts"),
           ("gmm-random", "subset", "potts"), ("gmm-biased", "walk", "potts"),
           ("gmm-biased", "walk", "multifold"), ("gmm-biased", "walk", PottsBias(search="walk"))]


def _init(X, kind):
    if kind == "random":
        return "random"
    cent = discover_parts(X, 4, random_state=0)
    return coherent_labels(X, cent, kind, (4, 4))


@pytest.mark.parametrize("method,rb,bias", METHODS)
@pytest.mark.parametrize("init", ["random", 0.5])
def test_invariants_hold(method, rb, bias, init):
    X, y, Z = tiny_scenes(n=36, seed=6)
    est = LatentSSVM(RegionPartModel(3, 4, (4, 4)), lam=1.0, method=method, random_bounds=rb,
                     bias=bias, eta=0.2, n_folds=3, max_iter=6, solver_max_iter=300,
                     random_state=2)
    est.fit(X, y, latent_init=_init(X, init))
    h = est.history_
    assert h.invariant_violations() == []
    assert h.initial_objective == 1.0
    assert est.latent_.shape == (36, 16) and est.latent_.dtype == np.int32
    assert est.latent_init_.shape == (36, 16)
    assert est.objective_ == pytest.approx(est.objective(X, y), abs=1e-12)
    yh, zh = est.predict(X, return_latent=True)
    assert yh.shape == (36,) and zh.shape == (36, 16)
    if init != "random":
        assert est.objective_ < 1.0
    if method == "gmm-biased" and (bias == "potts" or isinstance(bias, PottsBias)):
        assert isinstance(est.bias_, PottsBias) and est.bias_ is not bias
        assert est.bias_.search == ("global" if bias == "potts" else bias.search)
        b = est.bias_
        assert len(b.energies) == est.n_iter_ - 1       # the first bound is the init
        assert all(e <= t for e, t in zip(b.energies, b.touching_energies))


def test_potts_biased_labelings_are_more_coherent_than_ccp():
    X, y, Z = tiny_scenes(n=36, seed=7)
    z0 = _init(X, 0.0)
    kw = dict(lam=1.0, eta=0.1, max_iter=6, tol=0.0, solver_max_iter=300, random_state=0)
    model = RegionPartModel(3, 4, (4, 4))
    ccp = LatentSSVM(model, method="ccp", **kw).fit(X, y, latent_init=z0)
    bia = LatentSSVM(model, method="gmm-biased", bias="potts", **kw).fit(X, y, latent_init=z0)
    E = lambda z: potts_energy(z.reshape(-1, 4, 4)).sum()  # noqa: E731
    assert E(bia.latent_) < E(ccp.latent_)


def test_eta_one_gives_ccp_iterates():
    X, y, Z = tiny_scenes(n=30, seed=8)
    z0 = _init(X, 0.25)
    kw = dict(lam=1.0, max_iter=4, tol=0.0, solver_max_iter=300, random_state=0)
    model = RegionPartModel(3, 4, (4, 4))
    ref = LatentSSVM(model, method="ccp", **kw).fit(X, y, latent_init=z0)
    for method, rb, bias in METHODS[1:]:
        est = LatentSSVM(model, method=method, random_bounds=rb, bias=bias, eta=1.0,
                         n_folds=3, **kw).fit(X, y, latent_init=z0)
        np.testing.assert_array_equal(est.history_.objective, ref.history_.objective)
        np.testing.assert_array_equal(est.latent_, ref.latent_)


def test_thread_count_and_seed_determinism():
    X, y, Z = tiny_scenes(n=30, seed=9)
    outs = []
    for threads in (1, 2, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            est = LatentSSVM(RegionPartModel(3, 4, (4, 4), shared_parts=False), lam=1.0,
                             method="gmm-random", max_iter=3, tol=0.0, solver_max_iter=200,
                             random_state=7)
            est.fit(X, y, latent_init="random")
        assert est.n_iter_ == 3 and np.any(est.coef_)     # class-specific parts train
        outs.append((est.coef_, est.latent_, est.latent_init_, est.history_.bound))
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(outs[1], outs[2]):
        np.testing.assert_array_equal(a, b)


def test_random_labels_carry_no_signal_with_shared_parts():
    """With shared parts the class enters only through V: the first bound of random labels
    is minimised at w = 0 (the user is warned); class-specific parts learn from them."""
    from gmmfast.lssvm import LatentInitWarning
    X, y, Z = tiny_scenes(n=60, seed=4)
    z0 = np.random.default_rng(0).integers(0, 4, size=Z.shape).astype(np.int32)
    shared = LatentSSVM(RegionPartModel(3, 4, (4, 4)), lam=1.0, solver_max_iter=300)
    with pytest.warns(LatentInitWarning):
        shared.fit(X, y, latent_init=z0)
    assert not np.any(shared.coef_)
    own = LatentSSVM(RegionPartModel(3, 4, (4, 4), shared_parts=False), lam=1.0, max_iter=1,
                     solver_max_iter=300)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", LatentInitWarning)
        own.fit(X, y, latent_init=z0)
    assert own.objective_ < 1.0 and np.any(own.coef_)


def test_random_labels_of_class_specific_parts_stop_at_the_first_bound_with_a_warning():
    """Random labels with class-specific parts: every part template of a class is about the
    class mean, d_1 is ~1e-4 F(w_0), so tol = 1e-3 stops at t = 1 without moving a label; the
    user is told (FirstBoundWarning, not LatentInitWarning: w_1 != 0) and a smaller tol trains
    on. A run asked for one iteration is not warned."""
    import warnings
    from gmmfast.lssvm import FirstBoundWarning, LatentInitWarning
    X, y, Z = tiny_scenes(n=60, seed=4)
    z0 = np.random.default_rng(0).integers(0, 4, size=Z.shape).astype(np.int32)

    def fit(**kw):
        est = LatentSSVM(RegionPartModel(3, 4, (4, 4), shared_parts=False), lam=1.0,
                         solver_max_iter=300, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y, latent_init=z0)
        return est, [w.category for w in caught]

    stuck, caught = fit(tol=1e-3)
    assert caught == [FirstBoundWarning] and LatentInitWarning not in caught
    assert stuck.n_iter_ == 1 and np.array_equal(stuck.latent_, z0) and np.any(stuck.coef_)
    assert 0 < stuck.history_.gap[0] <= 1e-3 * stuck.history_.initial_objective
    moved, caught = fit(tol=1e-6)
    assert caught == [] and moved.n_iter_ > 1
    assert np.mean(moved.latent_ != z0) > 0.5 and moved.objective_ < stuck.objective_
    _, caught = fit(tol=1e-3, max_iter=1)
    assert caught == []


def test_region_model_validates_lengths():
    X, y, Z = tiny_scenes(n=10)
    model = RegionPartModel(3, 4, (4, 4))
    data = model.prepare(X)
    y = y.astype(np.int32)
    w = np.zeros(model.size_joint_feature(data))
    idx = np.arange(10, dtype=np.int64)
    with pytest.raises(ValueError, match=r"idx\[0\] = 10 is out of range"):
        model.loss_augmented(data, y, w, np.array([10]))
    with pytest.raises(ValueError, match="w must be a vector"):
        model.latent_table(data, y, w[:-2], idx)
    with pytest.raises(ValueError, match="z.* out of range"):
        model.phi_sum(data, y, np.full((10, 16), 4, dtype=np.int32), idx)
    with pytest.raises(ValueError, match="z must have shape"):
        model.joint_features(data, y, Z[:3], idx)
    # phi_sum reshaped any z of m * R entries: a transposed labelling, or a flat one, gave
    # a wrong sum where joint_features refused it
    z = np.zeros((4, 16), dtype=np.int32)
    for bad in (np.ascontiguousarray(z.T), z.reshape(-1)):
        with pytest.raises(ValueError, match=r"z must have shape \(4, 16\), got"):
            model.phi_sum(data, y, bad, idx[:4])
    with pytest.raises(ValueError, match="grid"):
        potts_select(np.zeros((2, 16, 3)), 1.0, np.zeros((2, 16), dtype=np.int32), (3, 3))
    with pytest.raises(ValueError, match="touching.* out of range"):
        potts_select(np.zeros((2, 16, 3)), 1.0, np.full((2, 16), 3, dtype=np.int32), (4, 4))
    from gmmfast._kernels import _regions as K
    with pytest.raises(ValueError, match="labels must lie"):
        K.greedy_moves(np.zeros((2, 16, 3)), np.full((2, 16), 5, dtype=np.int32), 1.0, 4, 4)


def test_oracle_labels_train_a_classifier():
    X, y, Z = tiny_scenes(n=90, seed=10, noise=0.5, n_parts=6, regions_per_class=2)
    est = LatentSSVM(RegionPartModel(3, 6, (4, 4)), lam=1.0, max_iter=1, solver_max_iter=500)
    est.fit(X[:60], y[:60], latent_init=Z[:60])
    assert est.score(X[60:], y[60:]) > 0.6          # chance is 1/3


def test_bad_input_raises():
    X, y, Z = tiny_scenes(n=12)
    model = RegionPartModel(3, 4, (4, 4))
    est = LatentSSVM(model, max_iter=1)
    with pytest.raises(ValueError, match="regions per image"):
        est.fit(X[:, :15], y)
    with pytest.raises(ValueError, match=r"\(n, R, d\)"):
        est.fit(X[0], y)
    with pytest.raises(ValueError, match="latent_init"):
        est.fit(X, y, latent_init=Z[:, :5])
    with pytest.raises(ValueError, match="out of range"):
        est.fit(X, y, latent_init=Z + 4)
    with pytest.raises(ValueError, match="positions"):
        est.fit(X, y, latent_init="center")
    Xn = X.copy()
    Xn[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="grid"):
        RegionPartModel(3, 4, (4,))
    with pytest.raises(ValueError, match="n_parts"):
        RegionPartModel(3, 0)
    with pytest.raises(ValueError, match="bias"):
        LatentSSVM(model, method="gmm-biased", bias="coherent").fit(X, y)
    from gmmfast.lssvm import LatentMulticlassModel
    with pytest.raises(ValueError, match="Potts bias"):
        LatentSSVM(LatentMulticlassModel(3), method="gmm-biased", bias="potts",
                   max_iter=2).fit(X[:, :4], y, latent_init="random")
    fitted = LatentSSVM(model, lam=1.0, max_iter=1, solver_max_iter=50).fit(X, y, latent_init=Z)
    with pytest.raises(ValueError, match="features per region"):
        fitted.predict(X[..., :3])


def test_bcfw_solver_agrees_on_the_region_model():
    X, y, Z = tiny_scenes(n=40, seed=0, n_parts=6, regions_per_class=2, noise=0.5)
    kw = dict(lam=1.0, method="gmm-biased", bias="potts", max_iter=3, solver_tol=1e-3,
              solver_max_iter=5000, random_state=0)
    a = LatentSSVM(RegionPartModel(3, 6, (4, 4)), solver="bcfw", **kw).fit(X, y, latent_init=Z)
    b = LatentSSVM(RegionPartModel(3, 6, (4, 4)), **kw).fit(X, y, latent_init=Z)
    assert a.history_.invariant_violations() == []
    assert all(s.converged for s in a.solve_info_)
    assert a.history_.bound[0] < 0.9          # the true labels' bound is not minimised at 0
    assert a.history_.bound[0] == pytest.approx(b.history_.bound[0], abs=1e-3)


def test_part_helpers_name_their_bad_arguments():
    """Issue 12: X and centres of the initialisation helpers were not validated (None, a
    scale of (), more parts than regions reached numpy or the k-means with errors naming
    nothing or the wrong parameter)."""
    X = np.random.default_rng(0).normal(size=(1, 4, 2))
    with pytest.raises(ValueError, match=r"X must be an \(n, R, d\) array"):
        discover_parts(None, 1)
    with pytest.raises(ValueError, match=r"n_parts must be an integer in \[1, 4\]"):
        discover_parts(X, 5)
    with pytest.raises(ValueError, match="centres must have 2 columns"):
        part_unaries(X, np.ones((2, 3)))
    with pytest.raises(ValueError, match="scale must be a real number"):
        part_unaries(X, np.ones((2, 2)), scale=())
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        part_unaries(X, np.ones((2, 2)), scale=0.0)
    with pytest.raises(ValueError, match="centres has values up to"):   # squared distances
        part_unaries(X, np.array([[0.0, 0.0], [1e200, 0.0]]))
    with pytest.raises(ValueError, match="unaries overflow"):
        part_unaries(X, np.array([[0.0, 0.0], [1.0, 0.0]]), scale=1e-320)
    with pytest.raises(ValueError, match="lam must be finite and >= 0"):
        coherent_labels(X, np.ones((2, 2)), -1.0, (2, 2))
    with pytest.raises(ValueError, match=r"n_parts must be an integer in \[1, 2147483647\]"):
        RegionPartModel(3, 2**63)
