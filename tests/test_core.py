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


# --------------------------------------------------------------------------- hardening (issue 12)

class Named(Toy):
    """A family that also accepts one bias by name."""

    named_biases = ("sum",)

    def biased_valid(self, w, v, bias, rng):
        return super().biased_valid(w, v, (lambda z: float(z.sum())) if bias == "sum" else bias,
                                    rng)


def test_unknown_selection_names_what_is_accepted():
    with pytest.raises(ValueError, match=r"selection must be one of 'random', 'mm', 'sum'.*"
                                         r"got 'radnom'"):
        generalized_mm(Named(P), 6.5, eta=0.5, selection="radnom")
    res = generalized_mm(Named(P), 6.5, eta=0.5, selection="sum", random_state=0)
    assert res.history.invariant_violations() == []
    for bad in (None, 1.5, True, [1, 2]):       # not a bias: was "'float' is not callable"
        with pytest.raises(ValueError, match="selection must be"):
            generalized_mm(Named(P), 6.5, eta=0.5, selection=bad)


def test_family_without_the_needed_methods_is_a_type_error():
    class NoWalk:
        objective = bound_value = minimize = touching = Toy.objective
    with pytest.raises(TypeError, match=r"family.*lacks \['random_valid'\]"):
        generalized_mm(NoWalk(), 6.5, eta=0.5, selection="random")
    with pytest.raises(TypeError, match="callback"):
        generalized_mm(Toy(P), 6.5, eta=0.5, callback="print")


@pytest.mark.parametrize("seed", [0, np.random.default_rng(0), np.random.RandomState(0)])
def test_random_state_accepts_int_generator_and_randomstate(seed):
    res = generalized_mm(Toy(P), 6.5, eta=0.2, tol=0, selection="random", random_state=seed)
    assert res.history.invariant_violations() == []
    if not isinstance(seed, np.random.RandomState):    # an int seeds the same Generator
        ref = generalized_mm(Toy(P), 6.5, eta=0.2, tol=0, selection="random",
                             random_state=np.random.default_rng(0))
        np.testing.assert_array_equal(res.history.objective, ref.history.objective)
    with pytest.raises(ValueError, match="random_state"):
        generalized_mm(Toy(P), 6.5, eta=0.2, random_state="0")


class Flat:
    """F = 0 everywhere; rounding makes every bound's minimum 3.8e-29 above F, more than its
    value at the previous solution (the numbers of the issue's k-means run on two points)."""

    def objective(self, w):
        return 0.0

    def bound_value(self, z, w):
        return 0.0 if w == 0 else 3.76e-29 if w == z + 1 else 2.53e-29

    def minimize(self, z, w):
        return z + 1

    def touching(self, w):
        return w


def test_stop_test_has_a_floor_when_the_objective_starts_at_zero():
    res = generalized_mm(Flat(), 0, eta=0.1, selection="mm")
    assert res.converged and res.n_iter == 2      # was: all 300 iterations


def test_gmmkmeans_on_two_distinct_points_stops_early():
    from gmmfast import GMMKMeans
    for seed in (4, 14):    # these draws ran all 300 iterations before the floor
        X = np.repeat(np.random.default_rng(seed).random((2, 2)), 50, 0)
        with pytest.warns(Warning):
            km = GMMKMeans(5, random_state=0).fit(X)
        # a handful of iterations in all (the first run, at most two escape phases that
        # meet the floor at once, the polish), not 300
        assert km.history_.n_iter <= 2 and km.n_iter_ <= 5 and km.inertia_ < 1e-25


def test_objective_that_is_not_finite_is_a_clear_error():
    class Inf(Toy):
        def objective(self, w):
            return float("inf")
    with pytest.raises(ValueError, match="F\\(w_0\\) = inf"):
        generalized_mm(Inf(P), 6.5, eta=0.5)


class Endless:
    """F(w) = -w, unbounded below: b_z(w) = -w + (w - z - 1)^2 touches F at w = z + 1 and is
    minimised at z + 1.5, so MM moves w by 0.5 per iteration with gap 0.25 forever."""

    def objective(self, w):
        return -float(w)

    def bound_value(self, z, w):
        return -float(w) + (w - z - 1.0) ** 2

    def minimize(self, z, w):
        return z + 1.5

    def touching(self, w):
        return w - 1.0


def test_huge_max_iter_allocates_nothing_up_front():
    import tracemalloc
    tracemalloc.start()
    try:
        res = generalized_mm(Endless(), 0, eta=1.0, tol=0, max_iter=10**10, selection="mm",
                             callback=lambda t, h: t < 2000 or (_ for _ in ()).throw(StopRun))
    except StopRun:
        res = None
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res is None and peak < 5 << 20           # was: MemoryError (80 GB preallocated)
    res = generalized_mm(Endless(), 0, eta=1.0, tol=0, max_iter=1000, selection="mm")
    h = res.history
    assert res.n_iter == h.n_iter == 1000 and h.bound.base is None   # trimmed copies
    np.testing.assert_array_equal(h.objective, -0.5 * np.arange(1, 1001))
    assert h.invariant_violations() == []


class StopRun(Exception):
    pass


def test_callback_gets_views_not_copies():
    seen = []

    def callback(t, h):
        assert h.n_iter == t and h.objective[-1] == -0.5 * t and h.proposals.shape == (t,)
        seen.append(h.bound.base is not None)       # a view: O(1) per iteration

    generalized_mm(Endless(), 0, eta=1.0, tol=0, max_iter=300, selection="mm",
                   callback=callback)
    assert len(seen) == 300 and all(seen)


def test_tol_inf_stops_at_the_first_gap_even_when_f0_is_zero():
    """tol = inf means "stop at the first gap"; with F(w_0) = 0 the stop gap inf x 0 was
    NaN, the test never held, and the run went on to convergence (28 iterations here)."""
    class Shifted:                  # F(w) = (w - 3)^2 - 9: F(0) = 0; the bound at b touches
        def objective(self, w):
            return (w - 3) ** 2 - 9

        def bound_value(self, b, w):
            return (w - 3) ** 2 - 9 + (w - b) ** 2

        def minimize(self, b, w):
            return (3 + b) / 2

        def touching(self, w):
            return w

    assert generalized_mm(Shifted(), 0.0, eta=1.0, tol=np.inf, selection="mm").n_iter == 1
    assert generalized_mm(Shifted(), 0.0, eta=1.0, tol=0.0, selection="mm").n_iter > 1
