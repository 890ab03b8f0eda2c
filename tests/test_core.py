"""Algorithm 1 on a small problem written in plain Python, independent of k-means."""
import itertools

import numpy as np
import pytest

from gmmfast.core import Selection, generalized_mm, next_threshold


class Toy:
    """F(w) = sum_i min_j (w - P[i, j])^2 over a scalar w; a bound fixes one j per i.

    Bounds are 1/2-strongly convex quadratics; the family is small enough that
    "valid" can be enumerated exactly.
    """

    def __init__(self, P, scale=1.0):
        self.P = np.asarray(P, dtype=float)
        self.scale = scale
        n, m = self.P.shape
        self.configs = [np.array(c) for c in itertools.product(range(m), repeat=n)]

    def objective(self, w):
        return self.scale * float(((w - self.P) ** 2).min(axis=1).sum())

    def bound_value(self, z, w):
        return self.scale * float(((w - self.P[np.arange(len(z)), z]) ** 2).sum())

    def minimize(self, z, w):
        return float(self.P[np.arange(len(z)), z].mean())

    def touching(self, w):
        return ((w - self.P) ** 2).argmin(axis=1)

    def valid(self, w, v):
        return [z for z in self.configs if self.bound_value(z, w) <= v]

    def random_valid(self, w, v, rng):
        valid = self.valid(w, v)
        return Selection(valid[rng.integers(len(valid))], proposals=1, accepted=1)

    def biased_valid(self, w, v, bias, rng):
        valid = self.valid(w, v)
        return Selection(max(valid, key=lambda z: bias(z)))


P = np.array([[0.0, 4.0], [1.0, 5.0], [2.0, 9.0], [3.5, 7.0], [8.0, 6.0]])


@pytest.mark.parametrize("selection", ["random", "mm", lambda z: float(z.sum())])
@pytest.mark.parametrize("eta", [0.05, 0.3, 1.0])
def test_invariants_hold_on_every_iteration(selection, eta):
    res = generalized_mm(Toy(P), 6.5, eta=eta, tol=0, max_iter=200, selection=selection,
                         random_state=np.random.default_rng(1))
    h = res.history
    assert h.invariant_violations() == []
    assert h.n_iter == res.n_iter == len(h.gap) == len(h.threshold)
    assert h.threshold[0] == h.initial_objective == Toy(P).objective(6.5)
    # v_t = eta F(w_t) + (1 - eta) b_t(w_t) exactly as recorded
    np.testing.assert_allclose(h.threshold[1:],
                               eta * h.objective[:-1] + (1 - eta) * h.bound[:-1])
    assert (h.bound_at_previous <= h.threshold).all()
    assert np.all(np.diff(h.bound) <= 1e-12)


def test_eta_one_gives_mm_iterates():
    toy = Toy(P)
    mm = generalized_mm(toy, 6.5, eta=0.4, tol=0, selection="mm")
    rnd = generalized_mm(toy, 6.5, eta=1.0, tol=0, selection="random",
                         random_state=np.random.default_rng(0))
    # with eta = 1 every valid bound touches F at w_{t-1}; on this problem the touching
    # bound is unique, so random selection must reproduce MM exactly
    np.testing.assert_array_equal(mm.history.objective, rnd.history.objective)
    assert mm.w == rnd.w
    # MM's objective never increases
    assert np.all(np.diff(np.r_[mm.history.initial_objective, mm.history.objective]) <= 0)


def test_relative_tolerance_is_scale_free():
    runs = [generalized_mm(Toy(P, scale), 6.5, eta=0.2, tol=1e-3, selection="random",
                           random_state=np.random.default_rng(3)) for scale in (1.0, 1000.0)]
    assert runs[0].n_iter == runs[1].n_iter
    assert runs[0].w == runs[1].w


class Broken(Toy):
    def random_valid(self, w, v, rng):
        worst = max(self.configs, key=lambda z: self.bound_value(z, w))
        return Selection(worst)


def test_invalid_bound_raises():
    with pytest.raises(RuntimeError, match="invalid bound"):
        generalized_mm(Broken(P), 6.5, eta=0.5, random_state=np.random.default_rng(0))


@pytest.mark.parametrize("kw", [dict(eta=0), dict(eta=1.5), dict(eta=float("nan")),
                                dict(eta="0.5"), dict(eta=0.5, tol=-1),
                                dict(eta=0.5, max_iter=0), dict(eta=0.5, max_iter=2.5)])
def test_bad_parameters(kw):
    name = [k for k in kw if k != "eta" or len(kw) == 1][0]
    with pytest.raises(ValueError, match=name):
        generalized_mm(Toy(P), 6.5, **kw)


def test_next_threshold_never_below_objective():
    assert next_threshold(1.0, 0.1, 0.3) == 0.1
    assert next_threshold(0.3, 2.0, 1.0) == 2.0     # a bound below F by rounding
    assert next_threshold(0.5, 1.0, 3.0) == 2.0
