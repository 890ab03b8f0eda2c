"""Latent structural SVMs: kernels against numpy, the Crammer-Singer check, G-MM invariants."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from gmmfast.datasets import make_cluttered_digits
from gmmfast.latent import table_value
from gmmfast.lssvm import (LatentModel, LatentMulticlassModel, LatentSSVM, budget_for,
                           lagrangian_select, solve_simplex_qp, subset_select)


# -- reference implementations ---------------------------------------------------------------
def brute_augmented(X, n_options, y, W, loss, augment=True):
    """Loss-augmented inference by numpy: the first max in the order (z, y)."""
    n, L, d = X.shape
    C = W.shape[0]
    S = np.einsum("nld,cd->nlc", X.astype(np.float64), W)
    V = S + (loss[y][:, None, :] if augment else 0.0)
    V[np.arange(L)[None, :] >= n_options[:, None]] = -np.inf
    flat = V.reshape(n, -1)
    am = flat.argmax(axis=1)
    table = S[np.arange(n), :, y].copy()
    table[np.arange(L)[None, :] >= n_options[:, None]] = -np.inf
    y_hat, z_hat = am % C, am // C
    phi = np.zeros((C, d))
    np.add.at(phi, y_hat, X[np.arange(n), z_hat].astype(np.float64))
    return flat.max(axis=1), y_hat, z_hat, table, phi.reshape(-1), loss[y, y_hat].sum()


def tiny_digits(n=72, seed=0, **kw):
    params = dict(grid=3, stride=4, n_distractors=2)
    params.update(kw)
    return make_cluttered_digits(n, random_state=seed, **params)


# -- kernels -----------------------------------------------------------------------------
@pytest.mark.parametrize("L,C", [(1, 7), (5, 3), (81, 6)])   # loop path, BLAS path
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ragged", [False, True])
def test_loss_augmented_matches_numpy(L, C, dtype, ragged):
    rng = np.random.default_rng(1)
    n, d = 70, 9
    X = rng.normal(size=(n, L, d)).astype(dtype)
    n_options = rng.integers(1, L + 1, size=n).astype(np.int32) if ragged else np.full(n, L)
    for i in range(n):
        X[i, n_options[i]:] = 0
    y = rng.integers(0, C, size=n).astype(np.int32)
    loss = rng.uniform(0.5, 2.0, size=(C, C))
    np.fill_diagonal(loss, 0)
    model = LatentMulticlassModel(C, loss=loss)
    data = model.prepare([X[i, :n_options[i]] for i in range(n)]) if ragged else model.prepare(X)
    assert data.X.dtype == dtype
    W = rng.normal(size=(C, d))
    idx = rng.permutation(n).astype(np.int64)[: n - 7]
    width = data.X.shape[1]          # a ragged list is padded to its longest example
    assert width == n_options.max()
    for augment in (True, False):
        got = model.loss_augmented(data, y, W.reshape(-1), idx, table=True, phi=True,
                                   augment=augment)
        H, yh, zh, tab, phi, ls = brute_augmented(X[idx], n_options[idx], y[idx], W, loss,
                                                  augment)
        np.testing.assert_allclose(got.H, H, rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(got.y_hat, yh)
        np.testing.assert_array_equal(got.z_hat, zh)
        np.testing.assert_allclose(got.table, tab[:, :width], rtol=1e-10, atol=1e-10)
        assert np.all(np.isneginf(tab[:, width:]))
        np.testing.assert_allclose(got.phi_sum, phi, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got.loss_sum, ls, rtol=1e-12)
        lt = model.latent_table(data, y, W.reshape(-1), idx)
        np.testing.assert_allclose(lt, tab[:, :width], rtol=1e-10, atol=1e-10)
        # the plain-Python enumeration of the base class gives the same answers
        ref = LatentModel.loss_augmented(model, data, y, W.reshape(-1), idx[:15], table=True,
                                         phi=True, augment=augment)
        np.testing.assert_allclose(ref.H, got.H[:15], rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(ref.y_hat, got.y_hat[:15])
        np.testing.assert_array_equal(ref.z_hat, got.z_hat[:15])
    # latent completion (CCP's touching bound) = argmax_z of the true class's scores
    from gmmfast.lssvm import LSSVMBounds
    fam = LSSVMBounds(model, data, y, 0.1, np.zeros(n, dtype=np.int32), solver_tol=1e-3,
                      solver_max_iter=10)
    w1 = W.reshape(-1).copy()
    scores = np.einsum("nld,nd->nl", X.astype(np.float64), W[y])
    scores[np.arange(L)[None, :] >= n_options[:, None]] = -np.inf
    np.testing.assert_array_equal(fam.touching(w1), scores.argmax(axis=1))
    z = np.minimum(rng.integers(0, L, size=idx.shape[0]), n_options[idx] - 1)
    ref = np.zeros((C, d))
    np.add.at(ref, y[idx], X[idx, z].astype(np.float64))
    np.testing.assert_allclose(model.phi_sum(data, y, z, idx), ref.reshape(-1), rtol=1e-10,
                               atol=1e-10)


def test_simplex_qp_optimal():
    rng = np.random.default_rng(0)
    for K, lam in [(2, 0.5), (7, 0.01), (30, 1.0)]:
        A = rng.normal(size=(K, 5))
        G, b = A @ A.T, rng.uniform(0, 1, size=K)
        alpha, val = solve_simplex_qp(G, b, lam, tol=1e-12)
        assert alpha.min() >= 0 and abs(alpha.sum() - 1) < 1e-12
        g = b - G @ alpha / lam          # KKT: support coordinates have the largest gradient
        assert g[alpha > 1e-12].min() >= g.max() - 1e-9
        for _ in range(200):             # no random point of the simplex is better
            a = rng.dirichlet(np.ones(K) * 0.3)
            assert a @ b - a @ G @ a / (2 * lam) <= val + 1e-12


# -- the Crammer-Singer check ----------------------------------------------------------------
@pytest.mark.parametrize("solver", ["cutting-plane", "dcd"])
def test_crammer_singer_matches_linearsvc(solver):
    from sklearn.datasets import load_digits
    from sklearn.svm import LinearSVC
    X, y = load_digits(return_X_y=True)
    X, y = X[:400] / 16.0, y[:400]
    n, C = X.shape[0], 10
    for lam in (1.0 / n, 0.05):
        est = LatentSSVM(LatentMulticlassModel(C), lam=lam, max_iter=1, solver_tol=1e-5,
                         solver_max_iter=50000, solver=solver).fit(X[:, None, :], y)

        def F(W):
            s = X @ W.T
            hinge = (s + 1 - np.eye(C)[y]).max(axis=1) - s[np.arange(n), y]
            return lam / 2 * (W * W).sum() + hinge.mean()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=1 / (lam * n),
                            tol=1e-8, max_iter=100000).fit(X, y)
        # LinearSVC minimises 1/2||w||^2 + C sum hinge = F / lam: compare F
        ours, theirs = est.objective_, F(svc.coef_)
        assert abs(ours - F(est.coef_.reshape(C, -1))) < 1e-12
        assert abs(ours - theirs) <= 1e-3 * theirs, (lam, ours, theirs)
        assert est.solve_info_[0].converged


# -- G-MM on latent SVMs -------------------------------------------------------------------
METHODS = [("ccp", "walk"), ("gmm-random", "walk"), ("gmm-random", "subset"),
           ("gmm-biased", "walk")]


@pytest.mark.parametrize("method,rb", METHODS)
@pytest.mark.parametrize("init", ["center", "top-left", "random"])
def test_invariants_hold(method, rb, init):
    D = tiny_digits()
    est = LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05, method=method,
                     random_bounds=rb, eta=0.2, n_folds=3, max_iter=8, random_state=3)
    est.fit(D.data, D.target, latent_init=init)
    h = est.history_
    assert h.invariant_violations() == []
    assert h.initial_objective == 1.0
    assert est.objective_ <= h.initial_objective
    assert np.all(np.diff(h.bound) <= 1e-12)
    assert est.latent_.shape == (72,) and est.latent_.dtype == np.int32
    assert est.objective_ == pytest.approx(est.objective(D.data, D.target), abs=1e-12)
    # the first bound is the initialisation
    first = LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05, max_iter=1,
                       random_state=3).fit(D.data, D.target, latent_init=init)
    np.testing.assert_array_equal(first.latent_, first.latent_init_)
    np.testing.assert_array_equal(first.latent_init_, est.latent_init_)


def test_latent_init_array_is_copied():
    """latent_init_ is the estimator's own array: changing the caller's afterwards changes nothing."""
    D = tiny_digits()
    z0 = np.zeros(D.target.shape[0], dtype=np.int32)
    est = LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05,
                     max_iter=2).fit(D.data, D.target, latent_init=z0)
    assert not np.shares_memory(est.latent_init_, z0)
    z0[:] = 1
    assert np.all(est.latent_init_ == 0)


def test_eta_one_gives_ccp_iterates():
    D = tiny_digits(seed=1)
    kw = dict(lam=0.05, max_iter=6, tol=0.0, random_state=0)
    model = LatentMulticlassModel(6, positions=D.positions)
    ref = LatentSSVM(model, method="ccp", **kw).fit(D.data, D.target, latent_init="top-left")
    for method, rb in METHODS[1:]:
        est = LatentSSVM(model, method=method, random_bounds=rb, eta=1.0, n_folds=3, **kw)
        est.fit(D.data, D.target, latent_init="top-left")
        np.testing.assert_array_equal(est.history_.objective, ref.history_.objective)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
        np.testing.assert_array_equal(est.latent_, ref.latent_)


def test_gmm_explores_more_than_ccp_threshold():
    """With eta < 1 the selected bounds are not the touching ones (slack is used)."""
    D = tiny_digits(seed=2)
    est = LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05,
                     method="gmm-random", eta=0.1, max_iter=5, tol=0.0, random_state=0)
    est.fit(D.data, D.target, latent_init="center")
    h = est.history_
    assert np.any(h.bound_at_previous[1:] > h.objective[:-1])   # a non-touching bound was used
    assert np.any(h.accepted[1:] > 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_augmented_pass_with_two_threads_matches_numpy(dtype):
    """The kernel on 2 threads (forced, whatever the work size) over many chunks: every
    output equals numpy's and the 1-thread run's (a shared argmax would race here)."""
    from gmmfast._kernels import _lssvm as K
    rng = np.random.default_rng(5)
    n, L, d, C = 40 * K.CHUNK, 9, 8, 6
    X = rng.normal(size=(n, L, d)).astype(dtype)
    n_options = np.full(n, L, dtype=np.int32)
    y = rng.integers(0, C, size=n).astype(np.int32)
    loss = 1.0 - np.eye(C)
    W = rng.normal(size=(C, d))
    idx = rng.permutation(n).astype(np.int64)
    ref = brute_augmented(X[idx], n_options[idx], y[idx], W, loss)
    outs = []
    for threads in (1, 2, 2):
        H, yh, zh = np.empty(n), np.empty(n, np.int32), np.empty(n, np.int32)
        tab = np.empty((n, L))
        slots = np.empty((n // K.CHUNK, C, d))
        ls = np.empty(n // K.CHUNK)
        K.augmented_pass(X, n_options, y, idx, np.ascontiguousarray(W.T), loss, H, yh, zh,
                         tab, slots, ls, threads)
        np.testing.assert_array_equal(yh, ref[1])
        np.testing.assert_array_equal(zh, ref[2])
        outs.append((H, yh, zh, tab, slots.sum(axis=0), ls.sum()))
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(outs[1], outs[2]):
        np.testing.assert_array_equal(a, b)


def test_thread_count_and_seed_determinism(monkeypatch):
    import gmmfast.lssvm._models as M
    monkeypatch.setattr(M, "WORK_PER_THREAD", 1)      # tiny data: force the threaded passes
    D = tiny_digits(n=200, seed=3)
    outs = []
    for threads in (1, 2, 2):
        with threadpool_limits(limits=threads, user_api="openmp"):
            est = LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05,
                             method="gmm-random", max_iter=4, random_state=7)
            est.fit(D.data, D.target, latent_init="top-left")
        assert est.n_iter_ > 1
        outs.append((est.coef_, est.latent_, est.history_.bound))
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(outs[1], outs[2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("solver", ["bcfw", "dcd"])
def test_solver_matches_cutting_plane(solver):
    D = tiny_digits(seed=4)
    model = LatentMulticlassModel(6, positions=D.positions)
    kw = dict(lam=0.05, method="gmm-random", max_iter=4, solver_tol=1e-3, solver_max_iter=20000,
              random_state=0)
    a = LatentSSVM(model, solver="cutting-plane", **kw).fit(D.data, D.target, latent_init=D.latent)
    b = LatentSSVM(model, solver=solver, **kw).fit(D.data, D.target, latent_init=D.latent)
    for est in (a, b):
        assert est.history_.invariant_violations() == []
        assert all(s.converged and s.gap <= 1e-3 for s in est.solve_info_)
    # the first bound (the true windows) has one minimum: both solvers certify it to 1e-3
    assert a.history_.bound[0] == pytest.approx(b.history_.bound[0], abs=1e-3)
    assert b.solve_info_[0].dual <= a.history_.bound[0] + 1e-12
    assert a.solve_info_[0].dual <= b.history_.bound[0] + 1e-12
    with threadpool_limits(limits=1, user_api="openmp"):
        c = LatentSSVM(model, solver=solver, **kw).fit(D.data, D.target, latent_init=D.latent)
    np.testing.assert_array_equal(b.coef_, c.coef_)


def test_bcfw_kernel_matches_python_steps():
    D = tiny_digits(seed=4)
    model = LatentMulticlassModel(6, positions=D.positions)
    # single-example BCFW steps in plain Python agree with the kernel
    rng = np.random.default_rng(0)
    data = model.prepare(D.data)
    y = D.target.astype(np.int32)
    idx = np.arange(30, dtype=np.int64)
    P0 = model.joint_features(data, y, D.latent[:30], idx)
    order = rng.permutation(30).astype(np.int64)
    w0 = rng.normal(size=model.size_joint_feature(data)) * 0.1
    res = []
    for fn in (model.bcfw_epoch, lambda *a: LatentModel.bcfw_epoch(model, *a)):
        w, P, ell = w0.copy(), P0.copy(), np.zeros(30)
        gap = fn(data, y, idx, order, w, P, ell, 0.05)
        res.append((w, P, ell, gap))
    for u, v in zip(res[0], res[1]):
        np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-12)


def test_dcd_serves_the_multifold_bias():
    """The fold models of the bias are solved by the same kind of solver as the bounds."""
    D = tiny_digits(n=150, seed=0)
    fits = [LatentSSVM(LatentMulticlassModel(6, positions=D.positions), lam=0.05,
                       method="gmm-biased", n_folds=3, max_iter=5, solver=solver,
                       random_state=0).fit(D.data, D.target, latent_init="top-left")
            for solver in ("cutting-plane", "dcd")]
    for est in fits:
        assert est.history_.invariant_violations() == []
    assert fits[1].objective_ == pytest.approx(fits[0].objective_, abs=1e-2)


def test_solvers_agree_on_ragged_candidates():
    """Examples with 1 to 5 candidates (padded): the three solvers certify the same bound."""
    rng = np.random.default_rng(0)
    n, d, C = 120, 5, 3
    X = [rng.normal(size=(rng.integers(1, 6), d)) for _ in range(n)]
    y = rng.integers(0, C, n)
    for i in range(n):
        X[i][0] += 2.0 * np.eye(d)[y[i]]
    bounds = []
    for solver in ("cutting-plane", "dcd", "bcfw"):
        est = LatentSSVM(LatentMulticlassModel(C), lam=0.05, max_iter=5, solver_tol=1e-6,
                         solver_max_iter=100000, solver=solver)
        est.fit(X, y, latent_init=np.zeros(n, dtype=int))
        assert all(s.converged for s in est.solve_info_)
        assert est.history_.invariant_violations() == []
        bounds.append(est.history_.bound[0])
    assert max(bounds) - min(bounds) <= 2e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dcd_epoch_is_exact_block_ascent(dtype):
    """Each visit solves its example's dual sub-problem (over the working set) exactly."""
    from gmmfast.lssvm._dcd import WorkingSets
    D = tiny_digits(n=40, seed=2)
    model = LatentMulticlassModel(6)
    data = model.prepare(D.data.astype(dtype))
    X = data.X.astype(np.float64)
    y = D.target.astype(np.int32)
    m, lam = 40, 0.05
    idx = np.arange(m, dtype=np.int64)
    z = D.latent.astype(np.int32)
    ws = WorkingSets.at_labels(y, z, 16)
    psi = model.phi_sum(data, y, z, idx)
    w = np.zeros(model.size_joint_feature(data))
    gaps = np.zeros(m)
    loss = model.loss_matrix()

    def dual():
        P, ell = model.dcd_state(data, y, idx, ws)
        wd = (psi - P) / (lam * m)
        return wd, ell / m - 0.5 * lam * wd @ wd

    rng = np.random.default_rng(0)
    last = dual()[1]
    for r in rng.integers(0, m, size=60):
        est = model.dcd_epoch(data, y, idx, z, np.array([r], np.int64), w, ws, gaps, lam, 1000)
        wd, D_now = dual()
        np.testing.assert_allclose(w, wd, atol=1e-9)        # W kept in step with the state
        assert D_now >= last - 1e-12                          # an ascent step
        last = D_now
        k = ws.n[r]
        a = ws.alpha[r, :k]
        assert np.all(a >= 0) and a.sum() == pytest.approx(1.0, abs=1e-12)
        assert len(set(zip(ws.y[r, :k], ws.z[r, :k]))) == k   # no labelling twice
        # KKT of the sub-problem: every set member's gradient is at most that of the support
        g = np.array([wd.reshape(6, -1)[ws.y[r, j]] @ X[r, ws.z[r, j]] + loss[y[r], ws.y[r, j]]
                      for j in range(k)])
        assert g.max() - g[a > 0].min() <= 1e-9
        assert est == pytest.approx(gaps[r]) and est >= -1e-12


def test_dcd_returns_the_point_it_evaluated():
    """Certify after every full epoch (estimate forced to 0) and make the first epoch's point
    the best by its primal value: the returned w must be that point, not moved by the
    epochs that followed its evaluation."""
    from gmmfast.lssvm._dcd import DCD
    D = tiny_digits(n=60, seed=1)
    model = LatentMulticlassModel(6)
    data = model.prepare(D.data)
    y = D.target.astype(np.int32)
    idx = np.arange(60, dtype=np.int64)
    epoch = model.dcd_epoch

    class Always(LatentMulticlassModel):
        def dcd_epoch(self, *a):
            epoch(*a)
            return 0.0

    solver = DCD(Always(6), data, y, idx, 0.01, tol=1e-300, max_iter=4)   # never certified
    evaluated = []
    evaluate = solver.evaluate
    solver.evaluate = lambda w: evaluated.append(w.copy()) or evaluate(w)
    values = iter([10.0, 1.0, 5.0, 5.0, 5.0])   # start point, then one per epoch
    solver.primal = lambda w, aug, psi: next(values)
    w, aug, info = solver.solve(D.latent.astype(np.int32),
                                np.zeros(model.size_joint_feature(data)))
    assert len(evaluated) == 5 and info.primal == 1.0
    np.testing.assert_array_equal(w, evaluated[1])
    assert not np.array_equal(evaluated[1], evaluated[4])   # the epochs did move w


def test_dcd_needs_a_model_with_its_kernels():
    class PyMulticlass(LatentModel):
        def prepare(self, X):
            return [np.asarray(x, dtype=np.float64) for x in X]

    D = tiny_digits(n=20)
    est = LatentSSVM(PyMulticlass(), solver="dcd", max_iter=1)
    with pytest.raises(ValueError, match="solver='dcd' needs a model with dcd_epoch"):
        est.fit(D.data, D.target)
    assert not hasattr(est, "coef_")


def test_plain_python_model_trains_like_builtin():
    class PyMulticlass(LatentModel):
        """The latent multiclass model in plain Python: only the feature map."""

        n_classes = 3

        def prepare(self, X):
            return [np.asarray(x, dtype=np.float64) for x in X]

        def n_latent(self, data):
            return np.array([x.shape[0] for x in data], dtype=np.int32)

        def size_joint_feature(self, data):
            return 3 * data[0].shape[1]

        def joint_feature(self, x, y, z):
            out = np.zeros(3 * x.shape[1])
            out[y * x.shape[1]:(y + 1) * x.shape[1]] = x[z]
            return out

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(int(rng.integers(1, 5)), 4)) + (i % 3) for i in range(24)]
    y = np.arange(24) % 3
    z0 = np.zeros(24, dtype=np.int32)
    kw = dict(lam=0.1, method="gmm-random", max_iter=3, random_state=0)
    a = LatentSSVM(PyMulticlass(), **kw).fit(X, y, latent_init=z0)
    b = LatentSSVM(LatentMulticlassModel(3), **kw).fit(X, y, latent_init=z0)
    assert a.history_.invariant_violations() == []
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_array_equal(a.latent_, b.latent_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_lagrangian_select_valid_and_good():
    rng = np.random.default_rng(0)
    for trial in range(40):
        n, m = 4, 3
        costs = rng.normal(size=(n, m))
        gain = rng.normal(size=(n, m))
        touching = costs.argmin(axis=1).astype(np.int32)
        lo = table_value(costs, touching)
        hi = table_value(costs, costs.argmax(axis=1))
        budget = lo + rng.uniform(0, 1) * (hi - lo)
        z, v = lagrangian_select(gain, costs, budget, touching)
        assert v <= budget and v == table_value(costs, z)
        rows = np.arange(n)
        best = max(gain[rows, list(c)].sum() for c in itertools.product(range(m), repeat=n)
                   if table_value(costs, np.array(c)) <= budget)
        got = gain[rows, z].sum()
        assert got >= gain[rows, touching].sum() - 1e-12
        assert got <= best + 1e-12
        if table_value(costs, gain.argmax(axis=1)) <= budget:
            assert got == pytest.approx(best)


def test_subset_select_smallest_valid():
    rng = np.random.default_rng(1)
    costs = rng.normal(size=(30, 4))
    touching = costs.argmin(axis=1).astype(np.int32)
    previous = rng.integers(0, 4, size=30).astype(np.int32)
    order = rng.permutation(30)
    budget = (table_value(costs, touching) + table_value(costs, previous)) / 2
    z, v, s = subset_select(costs, touching, previous, budget, order, 1)
    assert v <= budget and 1 <= s <= 30
    np.testing.assert_array_equal(z[order[s:]], previous[order[s:]])
    np.testing.assert_array_equal(z[order[:s]], touching[order[:s]])
    if s > 1:
        z2 = previous.copy()
        z2[order[:s - 1]] = touching[order[:s - 1]]
        assert table_value(costs, z2) > budget


def test_budget_rounding():
    const = 0.1 + 0.2
    for thr in (0.3, 0.30000000000000004, 1.0, 1e-17):
        B = budget_for(thr, const)
        assert const + B <= thr


# -- input validation ----------------------------------------------------------------------
def test_bad_input_raises():
    D = tiny_digits(n=20)
    model = LatentMulticlassModel(6, positions=D.positions)
    est = LatentSSVM(model, max_iter=1)
    with pytest.raises(ValueError, match="y must contain labels in"):
        est.fit(D.data, D.target + 1)
    with pytest.raises(ValueError, match="y must have shape"):
        est.fit(D.data, D.target[:5])
    with pytest.raises(ValueError, match="same number of features"):
        est.fit([np.zeros((3, 4)), np.zeros((2, 5))], [0, 1])
    with pytest.raises(ValueError, match="latent_init"):
        est.fit(D.data, D.target, latent_init=np.full(20, 9))
    with pytest.raises(ValueError, match="latent_init"):
        est.fit(D.data, D.target, latent_init="middle")
    with pytest.raises(ValueError, match="positions"):
        LatentSSVM(LatentMulticlassModel(6), max_iter=1).fit(D.data, D.target,
                                                             latent_init="top-left")
    for lam in (0, -1.0, np.inf, "a"):
        with pytest.raises(ValueError, match="lam"):
            LatentSSVM(model, lam=lam).fit(D.data, D.target)
    with pytest.raises(ValueError, match="method"):
        LatentSSVM(model, method="cccp").fit(D.data, D.target)
    with pytest.raises(ValueError, match="eta"):
        LatentSSVM(model, eta=0).fit(D.data, D.target)
    with pytest.raises(ValueError, match="random_bounds"):
        LatentSSVM(model, random_bounds="uniform").fit(D.data, D.target)
    with pytest.raises(ValueError, match="NaN"):
        X = D.data.copy()
        X[0, 0, 0] = np.nan
        est.fit(X, D.target)
    with pytest.raises(ValueError, match=r"\(n, L, d\)"):
        est.fit(D.data[:, 0], D.target)
    with pytest.raises(ValueError, match="loss"):
        LatentMulticlassModel(3, loss=np.ones((3, 3)))
    est.fit(D.data, D.target)
    with pytest.raises(ValueError, match="features per candidate"):
        est.predict(D.data[:, :, :10])


def test_predict_and_list_input():
    D = tiny_digits(n=40)
    Xl = [D.data[i] for i in range(40)]
    a = LatentSSVM(LatentMulticlassModel(6), lam=0.05, max_iter=2, random_state=0)
    b = LatentSSVM(LatentMulticlassModel(6), lam=0.05, max_iter=2, random_state=0)
    a.fit(D.data, D.target, latent_init=D.latent)
    b.fit(Xl, D.target, latent_init=D.latent)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    y_hat, z_hat = a.predict(D.data, return_latent=True)
    assert y_hat.shape == z_hat.shape == (40,)
    # trained with the true windows, it fits its 40 examples (seen: 1.0; chance 1/6); was
    # `0 <= score <= 1`, which a mean of booleans always is
    assert a.score(D.data, D.target) == np.mean(y_hat == D.target) > 0.8


# -- the data set ------------------------------------------------------------------------------
def test_make_cluttered_digits():
    D = make_cluttered_digits(50, random_state=0)
    assert D.data.shape == (50, 81, 64) and D.data.dtype == np.float32
    assert D.images.shape == (50, 24, 24)
    assert set(np.unique(D.target)) <= set(range(6))
    assert D.positions.shape == (81, 2) and tuple(D.positions[40]) == (0.5, 0.5)
    np.testing.assert_array_equal(D.data, make_cluttered_digits(50, random_state=0).data)
    # without clutter the true window holds exactly the (pooled) enlarged digit
    E = make_cluttered_digits(20, random_state=1, n_distractors=0, noise=0.0, scale=1,
                              stride=2, dtype=np.float64)
    from sklearn.datasets import load_digits
    imgs = load_digits().images / 16.0
    for i in range(20):
        np.testing.assert_allclose(E.data[i, E.latent[i]], imgs[E.digit_index[i]].reshape(-1))
    with pytest.raises(ValueError, match="spread"):
        make_cluttered_digits(10, spread=-1)
    with pytest.raises(ValueError, match="classes"):
        make_cluttered_digits(10, classes=(3,))


def test_cli_runs_tiny(tmp_path, capsys):
    from gmmfast.cli import main
    out = tmp_path / "t.md"
    fig = tmp_path / "f.png"
    assert main(["lssvm-compare", "--n-per-class", "8", "--folds", "2", "--max-iter", "2",
                 "--methods", "ccp,gmm-random-subset,gmm-biased", "--inits", "top-left",
                 "--bias-folds", "2", "--out", str(out), "--figure", str(fig)]) == 0
    text = out.read_text()
    assert "CCP" in text and "G-MM biased" in text
    assert fig.stat().st_size > 1000


@pytest.mark.filterwarnings("ignore::gmmfast.lssvm.FirstBoundWarning")
def test_lambda_is_chosen_by_validation_inside_the_training_folds():
    """run_fold with several lambdas: the one with the lowest error on a held-out fifth of
    the training folds (ties to the larger), then the same fit as run_fold at that lambda."""
    from gmmfast.datasets import make_cluttered_objects
    from gmmfast.experiments.table2 import choose_lam, cv_folds, inner_split, run_fold, split
    train = np.arange(3, 53)
    fit, val = inner_split(train, seed=0, k=1)
    assert val.size == 10 and np.intersect1d(fit, val).size == 0
    np.testing.assert_array_equal(np.union1d(fit, val), train)
    np.testing.assert_array_equal(inner_split(train, seed=0, k=1)[1], val)
    assert not np.array_equal(inner_split(train, seed=0, k=2)[1], val)

    D = make_cluttered_objects(8, random_state=0)
    folds = cv_folds(len(D.target), 2, seed=0)
    kw = dict(tol=1e-3, max_iter=3, solver_tol=1e-3)
    lams = [0.001, 0.1, 10.0]
    r = run_fold(D, folds, 0, "ccp", "center", lam=lams, **kw)
    errors = choose_lam(D, split(len(D.target), folds, 0)[0], 0, "ccp", "center", lams,
                        n_folds=10, random_bounds="walk", solver="dcd", eta=0.1, **kw)
    assert r.val_errors == errors and set(errors) == set(lams)
    best = min(errors.values())
    assert r.lam == max(v for v in lams if errors[v] == best)
    again = run_fold(D, folds, 0, "ccp", "center", lam=r.lam, **kw)
    assert again.val_errors is None and again.lam == r.lam
    assert again.objective == r.objective and again.test_error == r.test_error
    from gmmfast.experiments.table2 import compare
    with pytest.raises(ValueError, match="lam or lams"):
        compare(["ccp"], ["center"], lam=0.1, lams=[0.1])
    with pytest.raises(ValueError, match="lams must be finite numbers > 0"):
        compare(["ccp"], ["center"], lams=[0.1, -1.0])


def test_cli_lams_is_validated_before_working(capsys):
    from gmmfast.cli import main
    for args, match in [(["--lams", bad], "--lams must be comma-separated finite numbers")
                        for bad in ("0.1,x", "0,0.1", "")] + [
                       (["--lam", "0.1", "--lams", "0.1,1"], "--lam or --lams")]:
        with pytest.raises(SystemExit) as info:
            main(["lssvm-compare", "--quick"] + args)
        assert info.value.code == 2 and match in capsys.readouterr().err


# -- hardening: small lam, the QP, bad lengths, interrupts, renamed parameters --------------
def test_simplex_qp_rank_deficient_needs_few_smo_steps():
    """More planes than dimensions (and repeated planes) make G singular; the active set
    solves such QPs exactly, where SMO alone took millions of steps at small lam."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(40, 5))
    A[20:] = A[:20]
    G, b = A @ A.T, rng.uniform(0, 1, 40)
    for lam in (1e-2, 1e-6):
        alpha, val = solve_simplex_qp(G, b, lam, tol=1e-9, max_iter=50)
        g = b - G @ alpha / lam
        assert g.max() - alpha @ g <= 1e-9          # Frank-Wolfe gap: certified optimal
        for _ in range(50):
            a = rng.dirichlet(np.ones(40) * 0.3)
            assert a @ b - a @ G @ a / (2 * lam) <= val + 1e-12


def test_simplex_qp_validates_its_input():
    G, b = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="alpha must be a point of the simplex"):
        solve_simplex_qp(G, b, 1.0, alpha=np.ones(2) / 2)   # read past alpha's buffer before
    with pytest.raises(ValueError, match="alpha must be a point"):
        solve_simplex_qp(G, b, 1.0, alpha=np.array([2.0, -1.0, 0.0]))
    with pytest.raises(ValueError, match=r"G must have shape \(3, 3\)"):
        solve_simplex_qp(np.eye(4), b, 1.0)
    with pytest.raises(ValueError, match="symmetric"):
        solve_simplex_qp(np.triu(np.ones((3, 3))), b, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        solve_simplex_qp(G, np.array([1.0, np.nan, 0.0]), 1.0)
    for lam in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="lam"):
            solve_simplex_qp(G, b, lam)
    with pytest.raises(ValueError, match="max_iter"):
        solve_simplex_qp(G, b, 1.0, max_iter=0)


def test_loss_matrix_must_hold_real_numbers():
    """check_loss_matrix did np.array(loss, dtype=float64): strings were parsed, complex
    entries lost their imaginary part, other entries got numpy's message naming nothing."""
    import warnings

    from gmmfast.lssvm import RegionPartModel
    for make in (lambda loss: LatentMulticlassModel(2, loss=loss),
                 lambda loss: RegionPartModel(2, 3, grid=(2, 2), loss=loss)):
        with pytest.raises(ValueError, match="loss must contain numbers"):
            make([["0", "1"], ["2.5", "0"]])
        with pytest.raises(ValueError, match="loss must contain numbers"):
            make([[0, "a"], [1, 0]])
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # no ComplexWarning: refused before any cast
            with pytest.raises(ValueError, match="loss: Complex data not supported"):
                make(np.array([[0, 1 + 5j], [1, 0]]))
        with pytest.raises(ValueError, match="loss must be a 2-D array"):
            make([0, 1, 1, 0])
        # real numbers of any real dtype are taken, and copied
        user = np.array([[0, 2], [1, 0]], dtype=np.int64)
        model = make(user)
        user[0, 1] = 7
        np.testing.assert_array_equal(model.loss_matrix(), [[0.0, 2.0], [1.0, 0.0]])
        assert model.loss_matrix().dtype == np.float64


def test_multifold_bias_checks_its_parameters_at_fit():
    """MultifoldBias(n_folds) was never checked: 2.5 or "3" raised a raw TypeError in setup."""
    from gmmfast.lssvm import MultifoldBias
    D = tiny_digits(30)
    model = LatentMulticlassModel(6, positions=D.positions)
    for kw, what in ((dict(n_folds=2.5), "MultifoldBias n_folds must be an integer >= 2"),
                     (dict(n_folds="3"), "MultifoldBias n_folds must be an integer >= 2"),
                     (dict(n_folds=1), "MultifoldBias n_folds must be an integer >= 2"),
                     (dict(tol=0.0), "MultifoldBias tol must be None or a real number > 0"),
                     (dict(max_iter=0), "MultifoldBias max_iter must be None or an integer")):
        est = LatentSSVM(model, method="gmm-biased", bias=MultifoldBias(**kw), max_iter=2,
                         random_state=0)
        with pytest.raises(ValueError, match=what):
            est.fit(D.data, D.target)
        assert not hasattr(est, "coef_")


def test_multifold_bias_fails_before_any_pass():
    """A bad MultifoldBias (or one example for its folds) was found by setup, after the
    first bound had been built and its pass over the data made, and after the estimator
    had been marked unfitted: a bad bias parameter now fails as LatentSSVM's own do,
    before any work, leaving a fitted estimator as it was."""
    from gmmfast.lssvm import MultifoldBias

    class Counting(LatentMulticlassModel):
        passes = 0

        def loss_augmented(self, *args, **kwargs):
            self.passes += 1
            return super().loss_augmented(*args, **kwargs)

    D = tiny_digits(30)
    model = Counting(6, positions=D.positions)
    est = LatentSSVM(model, method="gmm-biased", n_folds=3, max_iter=2, random_state=0)
    est.fit(D.data, D.target)
    coef, pred = est.coef_.copy(), est.predict(D.data)
    for bias, X, y, what in (
            (MultifoldBias(n_folds=1), D.data, D.target, "MultifoldBias n_folds must be an "
                                                         "integer >= 2, got 1"),
            (MultifoldBias(tol=-1.0), D.data, D.target, "MultifoldBias tol must be None or"),
            (MultifoldBias(max_iter=0), D.data, D.target, "MultifoldBias max_iter must be"),
            (MultifoldBias(3), D.data[:1], D.target[:1], "the multifold bias needs at least 2 "
                                                         "folds and 2 examples, got n_folds=3 "
                                                         "with 1 examples"),
            ("potts", D.data, D.target, "the Potts bias needs a model with a grid of regions")):
        model.passes = 0
        est.set_params(bias=bias)
        with pytest.raises(ValueError, match=what):
            est.fit(X, y)
        assert model.passes == 0
        np.testing.assert_array_equal(est.coef_, coef)        # the last fit, still usable
        np.testing.assert_array_equal(est.predict(D.data), pred)


class _TinyModel(LatentModel):
    """A plain-Python model keeping its contract: 3 latent values, features x[z] in y's block."""

    n_classes = 2

    def n_latent(self, data):
        return np.full(len(data), 3, dtype=np.int32)

    def size_joint_feature(self, data):
        return 4

    def joint_feature(self, x, y, z):
        out = np.zeros(4)
        out[2 * y:2 * y + 2] = x[z]
        return out


def test_plain_python_model_breaking_its_contract_is_named():
    """Contract breaches of a user's model got numpy's errors (n_latent of floats truncated,
    then an IndexError; n_latent 0, 'argmin of an empty sequence'; a wrong-size feature,
    'shapes not aligned') or a misleading one (NaN features: 'the latent initialisation does
    not touch F at w = 0')."""
    class FloatLatent(_TinyModel):
        def n_latent(self, data):
            return np.full(len(data), 2.5)

    class NoLatent(_TinyModel):
        def n_latent(self, data):
            return np.zeros(len(data), dtype=np.int32)

    class NanPhi(_TinyModel):
        def joint_feature(self, x, y, z):
            out = super().joint_feature(x, y, z)
            out[0] = np.nan
            return out

    class NanPass(_TinyModel):              # its own batch method: checked by its answer
        def loss_augmented(self, *args, **kwargs):
            aug = super().loss_augmented(*args, **kwargs)
            aug.H[3] = np.nan
            return aug

    class WrongSize(_TinyModel):
        def joint_feature(self, x, y, z):
            return np.zeros(5)

    class FloatSize(_TinyModel):
        def size_joint_feature(self, data):
            return 4.0

    rng = np.random.default_rng(0)
    X = [rng.standard_normal((3, 2)) for _ in range(20)]
    y = rng.integers(0, 2, 20)
    for model, what in (
            (FloatLatent(), r"FloatLatent.n_latent\(data\) must be an array of integers, got "
                            "dtype float64"),
            (NoLatent(), r"NoLatent.n_latent\(data\) must be at least 1 .* got values from 0"),
            (NanPhi(), r"NanPhi.joint_feature gave NaN or infinity \(example 0, y=0, z=0\)"),
            (NanPass(), r"NanPass's scores at w = 0 are NaN or infinite"),
            (WrongSize(), r"WrongSize.joint_feature must return a vector of "
                          r"size_joint_feature\(data\) = 4 real numbers, got .* shape \(5,\)"),
            (FloatSize(), r"FloatSize.size_joint_feature\(data\) must be an integer >= 1, "
                          "got 4.0")):
        est = LatentSSVM(model, max_iter=3, random_state=0)
        with pytest.raises(ValueError, match=what):
            est.fit(X, y)
        assert not hasattr(est, "coef_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LatentSSVM(_TinyModel(), max_iter=3, random_state=0).fit(X, y)     # the contract kept


def test_bias_answers_are_checked():
    """A select_valid bias's bound went unchecked (out-of-range values: a raw IndexError
    inside bound_value); a callable bias's gains went through np.asarray(dtype=float64)
    (strings parsed, imaginary parts dropped)."""
    from gmmfast.core import Selection
    D = tiny_digits(30)
    model = LatentMulticlassModel(6, positions=D.positions)
    L = D.data.shape[1]

    class OutOfRange:
        def select_valid(self, family, point, budget, rng):
            return Selection(np.full(family.n, 999, dtype=np.int32))

    class WrongShape:
        def select_valid(self, family, point, budget, rng):
            return Selection(point.touching[:5])

    class NoSelection:
        def select_valid(self, family, point, budget, rng):
            return point.touching

    def complex_gain(family, w, z):
        return np.zeros((family.n, family.width), dtype=complex)

    for bias, what in ((OutOfRange(), rf"OutOfRange.select_valid\(...\).bound\[0\] = 999 is out "
                                      rf"of range \[0, {L}\)"),
                       (WrongShape(), r"WrongShape.select_valid\(...\).bound must have shape "
                                      r"\(30,\), got \(5,\)"),
                       (NoSelection(), "NoSelection.select_valid must return a "
                                       "gmmfast.core.Selection, got ndarray"),
                       (complex_gain, "the gain table of the bias .*complex_gain: Complex data "
                                      "not supported")):
        est = LatentSSVM(model, method="gmm-biased", bias=bias, max_iter=3, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            with pytest.raises(ValueError, match=what):
                est.fit(D.data, D.target)


def _tiny_data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 2)) for _ in range(n)], rng.integers(0, 2, n)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NaN * w
def test_every_joint_feature_of_a_plain_python_model_is_checked():
    """Only the first example's feature was checked for its size, and NaN or infinity only
    where the w = 0 pass let it through: a wrong size elsewhere gave numpy's 'shapes not
    aligned' (or was broadcast into a sum when of size 1), and a NaN feature of a wrong
    label was never the argmax, so training went on without it."""
    class WrongSizeAt(_TinyModel):
        def joint_feature(self, x, y, z):
            return np.zeros(5) if x is self.bad else super().joint_feature(x, y, z)

    class OneAt(_TinyModel):                # size 1: broadcast by += and np.array
        def joint_feature(self, x, y, z):
            return np.ones(1) if x is self.bad else super().joint_feature(x, y, z)

    class NanAt(_TinyModel):                # NaN for a label other than the true one
        def joint_feature(self, x, y, z):
            out = super().joint_feature(x, y, z)
            if x is self.bad and y != self.label and z == 2:
                out[2 * y] = np.nan
            return out

    class InfAt(_TinyModel):
        def joint_feature(self, x, y, z):
            out = super().joint_feature(x, y, z)
            if x is self.bad and z == 1:
                out[3] = -np.inf
            return out

    X, y = _tiny_data()
    size = (r"{}.joint_feature must return a vector of size_joint_feature\(data\) = "
            r"4 real numbers, got dtype float64 and shape \({},\) \(example 7, y=\d, z=\d\)")
    nonfinite = r"{}.joint_feature gave NaN or infinity \(example 7, y={}, z={}\)"
    cases = [(WrongSizeAt(), size.format("WrongSizeAt", 5)), (OneAt(), size.format("OneAt", 1)),
             (NanAt(), nonfinite.format("NanAt", 1 - y[7], 2)),
             (InfAt(), nonfinite.format("InfAt", r"\d", 1))]
    for model, what in cases:
        model.bad, model.label = X[7], y[7]
        for solver in ("cutting-plane", "bcfw"):
            est = LatentSSVM(model, method="gmm-random", solver=solver, max_iter=3,
                             random_state=0)
            with pytest.raises(ValueError, match=what):
                est.fit(X, y, latent_init=np.full(20, 2, dtype=np.int32))
            assert not hasattr(est, "coef_")
        # every batch method that reads joint features checks them, whatever example
        data, yy = model.prepare(X), y.astype(np.int32)
        idx = np.arange(20, dtype=np.int64)
        z = np.full(20, 2 if isinstance(model, NanAt) else 1, dtype=np.int32)
        if isinstance(model, NanAt):
            yy = yy.copy()
            yy[7] = 1 - yy[7]               # the NaN feature is the true label's here
        w = np.full(4, 0.5)
        calls = [lambda: model.loss_augmented(data, yy, w, idx, table=True, phi=True),
                 lambda: model.latent_table(data, yy, w, idx),
                 lambda: model.phi_sum(data, yy, z, idx),
                 lambda: model.joint_features(data, yy, z, idx)]
        for call in calls:
            with pytest.raises(ValueError, match=r"\(example 7, "):
                call()


def test_plain_python_model_loss_matrix_is_checked():
    """LatentSSVM.fit took model.loss_matrix() through np.asarray(dtype=float64): strings
    were parsed, a wrong shape indexed (too large) or raised a raw IndexError (too small),
    NaN was reported as 'F(0) is 0', negative losses and a non-zero diagonal went in."""
    def model_with(matrix):
        class BadLoss(_TinyModel):
            def loss_matrix(self):
                return matrix
        return BadLoss()

    X, y = _tiny_data()
    who = r"BadLoss.loss_matrix\(\) must "
    form = who + r"be a finite non-negative \(2, 2\) array with a zero diagonal, got "
    for matrix, what in (([[0, 1, 1], [1, 0, 1], [1, 1, 0]], form + r"shape \(3, 3\)"),
                         ([[0.0]], form + r"shape \(1, 1\)"),
                         ([[0, np.nan], [1, 0]], form + "NaN or infinity"),
                         ([[0, -1], [1, 0]], form + r"a negative value \(-1.0\)"),
                         ([[0, 1], [1, 0.5]], form + r"\[1, 1\] = 0.5"),
                         ([["0", "1"], ["1", "0"]], who + "contain numbers"),
                         ([[0, 1j], [1, 0]], r"BadLoss.loss_matrix\(\): Complex data"),
                         (None, who + r"return an \(2, 2\) array of losses, got None")):
        est = LatentSSVM(model_with(matrix), max_iter=2, random_state=0)
        with pytest.raises(ValueError, match=what):
            est.fit(X, y)
        assert not hasattr(est, "coef_")
    # a valid matrix of integers (any real dtype) is taken as before
    est = LatentSSVM(model_with(np.array([[0, 2], [1, 0]])), max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert np.isfinite(est.objective_)


def test_check_loss_matrix_makes_one_copy():
    """check_loss_matrix did np.array(check_array(loss)): two copies of an integer or list
    loss (check_array's conversion, then np.array's), where one is enough."""
    import tracemalloc

    from gmmfast.lssvm._models import check_loss_matrix
    C = 600
    nbytes = C * C * 8
    user = (1 - np.eye(C, dtype=np.int64)) * 3
    for loss in (user, user.astype(np.float64).tolist(), user.astype(np.float64),
                 np.asfortranarray(user.astype(np.float64))):
        tracemalloc.start()
        try:
            Lm = check_loss_matrix(loss, C)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1.5 * nbytes, (type(loss), peak / nbytes)
        np.testing.assert_array_equal(Lm, user)
        assert Lm.dtype == np.float64 and Lm.flags.c_contiguous
        assert not np.may_share_memory(Lm, loss)       # the model's own copy


def test_simplex_qp_refuses_an_indefinite_gram_matrix():
    """G = [[1, 2], [2, 1]] (eigenvalues 3 and -1) is symmetric with a positive diagonal:
    it was accepted and the point returned was the objective's minimum on the simplex."""
    with pytest.raises(ValueError, match="positive semi-definite.*smallest eigenvalue is -1"):
        solve_simplex_qp(np.array([[1.0, 2.0], [2.0, 1.0]]), np.zeros(2), 1.0)
    # a rank-deficient Gram matrix (negative eigenvalues of rounding only) is still accepted
    A = np.random.default_rng(0).normal(size=(30, 3))
    alpha, _ = solve_simplex_qp(A @ A.T, np.ones(30), 1.0)
    assert abs(alpha.sum() - 1) < 1e-9


def test_qp_returns_to_python_between_chunks(monkeypatch):
    """Ctrl-C: SMO runs in chunks of QP_CHUNK steps, so a KeyboardInterrupt raised between
    two kernel calls stops a long QP (and a fit, which leaves no fitted state)."""
    import gmmfast.lssvm._simplex_qp as cp
    rng = np.random.default_rng(3)
    A = rng.normal(size=(40, 5))
    G, b = A @ A.T, rng.uniform(0, 1, 40)
    calls = []
    real = cp.kernels.simplex_qp

    def chunked(*args):
        calls.append(args[-1])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(cp, "QP_CHUNK", 10)
    monkeypatch.setattr(cp, "_active_set", lambda *a, **k: None)   # leave the work to SMO
    monkeypatch.setattr(cp.kernels, "simplex_qp", chunked)
    with pytest.raises(KeyboardInterrupt):
        cp._qp(G, b, 1e-6, np.full(40, 1 / 40), 1e-12, 10_000_000)
    assert calls == [10, 10, 10]
    # an interrupted fit leaves the estimator unfitted, even one fitted before
    D = tiny_digits(n=30)
    est = LatentSSVM(LatentMulticlassModel(6), lam=0.05, max_iter=2).fit(D.data, D.target)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        est.fit(D.data, D.target)
    assert not est.__sklearn_is_fitted__()


def test_small_lam_is_solved_and_tiny_lam_rejected():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4, 5)), rng.integers(0, 3, 60)
    est = LatentSSVM(LatentMulticlassModel(3), lam=1e-6, max_iter=3, random_state=0)
    with pytest.warns(Warning):
        est.fit(X, y, latent_init=np.zeros(60, dtype=np.int32))
    assert all(s.converged for s in est.solve_info_)
    for lam in (1e-20, 1e-300):
        with pytest.raises(ValueError, match=r"lam=.* is too small for this data"):
            LatentSSVM(LatentMulticlassModel(3), lam=lam).fit(X, y)


def test_no_signal_warning():
    """Random windows of random data: the first bound is minimised at w = 0 and the user is
    told so; informative windows train without the warning."""
    from gmmfast.lssvm import LatentInitWarning
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4, 5)), rng.integers(0, 3, 60)
    est = LatentSSVM(LatentMulticlassModel(3), lam=0.01, random_state=0)
    with pytest.warns(LatentInitWarning, match="minimised at w = 0"):
        est.fit(X, y, latent_init="random")
    assert est.n_iter_ == 1 and not np.any(est.coef_)
    D = tiny_digits(n=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LatentInitWarning)
        LatentSSVM(LatentMulticlassModel(6), lam=0.05, max_iter=2).fit(D.data, D.target,
                                                                       latent_init=D.latent)


def test_solver_parameters_renamed_with_deprecation():
    D = tiny_digits(n=30)
    model = LatentMulticlassModel(6)
    new = LatentSSVM(model, lam=0.05, max_iter=2, solver_tol=1e-3, solver_max_iter=50,
                     random_state=0)
    new.fit(D.data, D.target)
    old = LatentSSVM(model, lam=0.05, max_iter=2, cp_tol=1e-3, cp_max_iter=50, random_state=0)
    with pytest.warns(DeprecationWarning, match="cp_tol is deprecated"):
        old.fit(D.data, D.target)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    with pytest.raises(ValueError, match="either solver_tol or its deprecated name cp_tol"):
        with pytest.warns(DeprecationWarning):
            LatentSSVM(model, solver_tol=1e-3, cp_tol=1e-3).fit(D.data, D.target)


def test_model_methods_validate_lengths():
    """Each public batch method of the model reaches a boundscheck=False kernel: wrong lengths
    and out-of-range indices used to read past buffers; now they are clear errors."""
    from gmmfast.lssvm import Candidates
    rng = np.random.default_rng(0)
    n, L, d, C = 12, 3, 4, 3
    model = LatentMulticlassModel(C)
    data = model.prepare(rng.normal(size=(n, L, d)))
    y = rng.integers(0, C, n).astype(np.int32)
    w = rng.normal(size=C * d)
    idx = np.arange(n, dtype=np.int64)
    z = np.zeros(n, dtype=np.int32)
    with pytest.raises(ValueError, match=r"idx\[0\] = 12 is out of range"):
        model.loss_augmented(data, y, w, np.array([n, 0]))
    with pytest.raises(ValueError, match=r"y must have shape \(12,\)"):
        model.loss_augmented(data, y[:5], w, idx)
    with pytest.raises(ValueError, match="y.* out of range"):
        model.latent_table(data, np.full(n, C, dtype=np.int32), w, idx)
    with pytest.raises(ValueError, match="w must be a vector of 12"):
        model.latent_table(data, y, w[:-1], idx)
    with pytest.raises(ValueError, match=r"z must have shape \(12,\)"):
        model.phi_sum(data, y, z[:3], idx)
    with pytest.raises(ValueError, match="z.* out of range"):
        model.phi_sum(data, y, np.full(n, L, dtype=np.int32), idx)
    with pytest.raises(ValueError, match="n_options must lie in"):
        model.loss_augmented(Candidates(data.X, np.full(n, L + 1, dtype=np.int32)), y, w, idx)
    with pytest.raises(ValueError, match="data must be the Candidates"):
        model.loss_augmented(data.X, y, w, idx)
    with pytest.raises(ValueError, match="P must be a C-contiguous float64"):
        model.bcfw_epoch(data, y, idx, idx, np.zeros(C * d), np.zeros((n - 1, C * d)),
                         np.zeros(n), 0.1)
    with pytest.raises(ValueError, match=r"order\[11\] = 12 is out of range"):
        model.bcfw_epoch(data, y, idx, idx + 1, np.zeros(C * d), np.zeros((n, C * d)),
                         np.zeros(n), 0.1)
    from gmmfast.lssvm._dcd import WorkingSets
    ws = WorkingSets.at_labels(y, z, 4)
    ws.z[0, 0] = L                                      # a latent value past the candidates
    with pytest.raises(ValueError, match="ws.z must hold latent values"):
        model.dcd_state(data, y, idx, ws)
    from gmmfast.lssvm import CuttingPlane
    with pytest.raises(ValueError, match=r"idx\[1\] = 99 is out of range \[0, 12\)"):
        CuttingPlane(model, data, y, np.array([0, 99]), 0.1, tol=1e-3, max_iter=5)


def test_entries_name_their_bad_arguments():
    """Issue 12: the LS-SVM entries that reach kernels check what they are given (the fuzz
    test found each of these: crashes, hangs, wrong results or errors naming nothing)."""
    from gmmfast.lssvm import BCFW, CuttingPlane
    from gmmfast.lssvm._dcd import DCD
    # the QP: magnitudes its arithmetic cannot hold, and lam b >> G (the active set lost
    # 1'x = 1 to rounding and left alpha off the simplex)
    with pytest.raises(ValueError, match="G has entries up to 1e"):
        solve_simplex_qp(np.diag([4.0, 1e308]), np.ones(2), 100.0)
    with pytest.raises(ValueError, match="G / lam has entries"):
        solve_simplex_qp(np.eye(2), np.ones(2), 1e-300)
    a, _ = solve_simplex_qp(np.diag([8.0, 19.0, 7.0]), np.array([1.2, 0.2, 0.9]), 2**63,
                            alpha=np.array([0.1, 0.2, 0.7]))
    np.testing.assert_allclose(a, [1.0, 0.0, 0.0], atol=1e-12)   # G / lam ~ 0: max b.a
    # models
    with pytest.raises(ValueError, match=r"n_classes must be an integer in \[2, 2147483647\]"):
        LatentMulticlassModel(2**64)
    with pytest.raises(ValueError, match="positions must contain numbers"):
        LatentMulticlassModel(2, positions="")
    model = LatentMulticlassModel(2)
    for X in (0, float("nan"), "abc"):
        with pytest.raises(ValueError, match=r"X must be an \(n, L, d\) array"):
            model.prepare(X)
    with pytest.raises(ValueError, match=r"X\[1\] must be an \(L_i, d\) array"):
        model.prepare([np.ones((2, 2)), [[1.0], [1.0, 2.0]]])
    # solvers: features that overflow the planes' Gram matrix (the QP ran for minutes), a
    # start that is not finite, latent values that are not integers (DCD truncated them)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 2, 2))
    y, idx, z = np.array([0, 1, 0, 1], np.int32), np.arange(4), np.zeros(4, np.int32)
    big = X.copy()
    big[1, 1, 1] = 1e308
    with pytest.raises(ValueError, match="overflow the solver's arithmetic"):
        CuttingPlane(model, model.prepare(big), y, idx, 0.01, tol=1e-6, max_iter=20)
    data = model.prepare(X)
    with pytest.raises(ValueError, match="w_start contains NaN"):
        BCFW(model, data, y, idx, 1.0, tol=1e-3, max_iter=5).solve(z, np.full(4, np.nan))
    with pytest.raises(ValueError, match="z must be an array of integers"):
        DCD(model, data, y, idx, 1.0, tol=1e-3, max_iter=5).solve(z + 0.5, np.zeros(4))
    with pytest.raises(ValueError, match="lam must be a real number, got None"):
        CuttingPlane(model, data, y, idx, None, tol=1e-3, max_iter=5)
    with pytest.raises(ValueError, match="lam must be finite and > 0"):
        CuttingPlane(model, data, y, idx, 0.0, tol=1e-3, max_iter=5)
    # selection helpers
    costs = np.array([[0.0, 1.0], [0.5, 0.2], [0.3, 0.9]])
    t = costs.argmin(1)
    with pytest.raises(ValueError, match="gain must be"):
        lagrangian_select(None, costs, 2.0, t)
    with pytest.raises(ValueError, match="gain must be finite wherever costs is finite"):
        lagrangian_select(np.where(costs > 0.8, np.nan, -costs), costs, 2.0, t)
    with pytest.raises(ValueError, match="start must be within budget"):
        lagrangian_select(-costs, costs, 0.0, np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="previous must have shape"):
        subset_select(costs, t, 0, 2.0, np.arange(3), 0)
    with pytest.raises(ValueError, match="order must be a permutation"):
        subset_select(costs, t, t, 2.0, np.array([0, 0, 1]), 0)
    with pytest.raises(ValueError, match=r"min_size must be an integer in \[0, 3\]"):
        subset_select(costs, t, t, 2.0, np.arange(3), -1)
    with pytest.raises(ValueError, match="touching must be within budget"):
        subset_select(costs, t, np.array([1, 0, 1]), 0.0, np.arange(3), 0)


def test_a_first_bound_that_is_an_exact_fixed_point_is_reported():
    """30 cluttered objects in d = 576 are separated by any fixed windows: at w_1 every
    training image's initial window scores highest, d_1 = 0, and no method can move. The
    user is told (FirstBoundWarning naming the fixed point), not left with a silent t = 1."""
    from gmmfast.datasets import make_cluttered_objects
    from gmmfast.experiments.table2 import LAM, OBJECTS_DEFAULTS
    from gmmfast.lssvm import FirstBoundWarning
    D = make_cluttered_objects(**dict(OBJECTS_DEFAULTS, n_per_class=5, random_state=0))
    for method in ("ccp", "gmm-biased"):
        est = LatentSSVM(LatentMulticlassModel(len(D.classes), positions=D.positions), lam=LAM,
                         method=method, n_folds=3, solver="dcd")
        with pytest.warns(FirstBoundWarning, match="exact|fixed point") as caught:
            est.fit(D.data, D.target, latent_init="center")
        assert "d_1 = 0" in str(caught[0].message)
        assert est.n_iter_ == 1 and est.history_.gap[0] == 0
        assert np.array_equal(est.latent_, est.latent_init_)
        scores = np.einsum("nwd,nd->nw", D.data, est.coef_.reshape(len(D.classes), -1)[D.target])
        assert np.all(scores[np.arange(30), est.latent_init_] >= scores.max(axis=1) - 1e-9)
