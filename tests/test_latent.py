"""The generic walk over a table of latent costs (gmmfast.latent)."""
import itertools

import numpy as np
import pytest
from scipy.stats import chi2
from threadpoolctl import threadpool_limits

from gmmfast.latent import block_plan, repair, sample_latent, table_value


def test_samples_are_valid_and_respect_options():
    rng = np.random.default_rng(0)
    costs = rng.random((500, 7))
    opts = rng.integers(1, 8, size=500)
    costs[np.arange(7)[None, :] >= opts[:, None]] = np.inf    # padding never proposed
    start = np.where(np.isfinite(costs), costs, np.inf).argmin(1)
    budget = table_value(costs, start) + 20.0
    z, value, acc = sample_latent(costs, start, budget, 200_000, 1, n_options=opts)
    assert value <= budget and value == table_value(costs, z)
    assert (z < opts).all() and acc > 0
    assert (z[opts == 1] == 0).all()


def test_uniform_over_valid_configurations():
    costs = np.array([[0.0, 1.0, 2.5], [0.0, 0.7, 3.0], [0.2, 0.0, 1.1]])
    configs = np.array(list(itertools.product(range(3), repeat=3)))
    values = costs[np.arange(3), configs].sum(1)
    budget = 2.0
    valid = [tuple(c) for c in configs[values <= budget]]
    counts = dict.fromkeys(valid, 0)
    start = costs.argmin(1)
    for s in range(2000):
        z, _, _ = sample_latent(costs, start, budget, 40, s)
        counts[tuple(z)] += 1
    f = np.array(list(counts.values()))
    e = 2000 / len(valid)
    assert chi2.sf(((f - e) ** 2 / e).sum(), len(valid) - 1) > 1e-4


def test_thread_count_does_not_change_result():
    rng = np.random.default_rng(3)
    costs = rng.random((10_000, 5))
    start = costs.argmin(1)
    budget = table_value(costs, start) + 50
    outs = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="openmp"):
            outs.append(sample_latent(costs, start, budget, 100_000, 5, block_size=999))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1:] == outs[1][1:]


def test_block_plan_splits_everything():
    slack, steps = block_plan(10, 3, 1.0, 7)
    assert steps.sum() == 7 and len(steps) == 4
    np.testing.assert_allclose(slack, [0.3, 0.3, 0.3, 0.1])


def test_repair_restores_validity():
    costs = np.array([[0.0, 5.0], [0.0, 1.0], [0.0, 2.0]])
    start = np.zeros(3, dtype=np.int32)
    z = np.ones(3, dtype=np.int32)
    now = costs[np.arange(3), z].copy()
    value = repair(z, start, now, np.zeros(3), 3.0, lambda lab: table_value(costs, lab))
    assert value <= 3.0
    np.testing.assert_array_equal(z, [0, 1, 1])     # the largest increase went first


@pytest.mark.parametrize("kw, match", [
    (dict(budget=-1.0), "budget"),
    (dict(labels=np.zeros(3, int)), "labels"),
    (dict(labels=np.full(4, 5)), "labels"),
    (dict(n_options=np.zeros(4, int)), "n_options"),
    (dict(costs=np.zeros((0, 2))), "costs"),
])
def test_bad_input(kw, match):
    args = dict(costs=np.zeros((4, 3)), labels=np.zeros(4, int), budget=1.0, n_steps=5)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        sample_latent(**args)


# --------------------------------------------------------------------------- hardening (issue 12)

@pytest.mark.parametrize("n_steps", [2**62, 10**17, 2**63 - 1, 12_345_678_901])
def test_block_plan_is_exact_for_huge_step_counts(n_steps):
    n, block = 100_000, 1 << 15
    slack, steps = block_plan(n, block, 2.0, n_steps)
    sizes = [block, block, block, n - 3 * block]
    assert steps.dtype == np.int64 and int(steps.sum()) == n_steps   # was 1 or 0 (overflow)
    exact = [n_steps * s // n for s in sizes]                        # Python ints: no overflow
    assert all(0 <= int(a) - e <= 1 for a, e in zip(steps, exact))
    np.testing.assert_allclose(slack, [2.0 * s / n for s in sizes])


@pytest.mark.parametrize("args, match", [
    ((0, 3, 1.0, 5), "n must"), ((10, 0, 1.0, 5), "block_size"), ((10, 3, -1.0, 5), "slack"),
    ((10, 3, float("nan"), 5), "slack"), ((10, 3, float("inf"), 5), "slack"),
    ((10, 3, 1.0, -1), "n_steps"), ((10, 3, 1.0, 2**63), "n_steps"), ((10, 3, 1.0, 2.5), "n_steps"),
])
def test_block_plan_rejects_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        block_plan(*args)


def test_block_plan_small_n_and_block_larger_than_n():
    slack, steps = block_plan(5, 1 << 15, 1.0, 7)
    assert steps.tolist() == [7] and slack.tolist() == [1.0]


@pytest.mark.parametrize("kw, match", [
    (dict(n_steps=2**63), "n_steps"),
    (dict(n_steps=-1), "n_steps"),
    (dict(budget=float("nan")), "budget"),
    (dict(budget=float("inf")), "budget"),
    (dict(budget="2"), "budget"),
    (dict(budget=True), "budget"),
    (dict(block_size=0), "block_size"),
    (dict(n_options=np.full(4, 2.0)), "n_options"),              # was truncated silently
    (dict(n_options=np.full(4, 2**32 + 3, dtype=np.int64)), "n_options"),   # was wrapped to 3
    (dict(labels=np.full(4, 2**32, dtype=np.uint64)), "labels"),
    (dict(labels=np.zeros(4)), "labels"),
    (dict(costs=np.zeros((4, 3), dtype=complex)), "costs"),      # was made real
    (dict(costs=np.array([["0"] * 3] * 4)), "costs"),            # was parsed
    (dict(costs=np.full((4, 3), np.nan)), "costs"),
    (dict(costs=np.tile([0.0, -np.inf, 1.0], (4, 1))), "costs"),
    (dict(costs=np.zeros(4)), "costs"),
    (dict(random_state=-1), "random_state"),
])
def test_sample_latent_rejects_bad_input(kw, match):
    args = dict(costs=np.zeros((4, 3)), labels=np.zeros(4, int), budget=1.0, n_steps=5)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        sample_latent(**args)


def test_sample_latent_infinite_options_and_padding():
    costs = np.array([[0.0, np.inf, 1.0], [0.0, 0.5, np.nan], [0.0, 2.0, -np.inf]])
    opts = np.array([3, 2, 2])       # the NaN and -inf are padding
    for seed in range(20):
        z, value, _ = sample_latent(costs, np.zeros(3, int), 1.5, 200, seed, n_options=opts)
        assert value <= 1.5 and z[0] != 1 and (z < opts).all()
        assert value == table_value(costs, z)


def test_table_value_overflow_is_infinite_not_an_error():
    costs = np.full((3, 1), 1e308)
    assert table_value(costs, np.zeros(3, int)) == np.inf
    assert table_value(-costs, np.zeros(3, int)) == -np.inf


def test_a_long_walk_stops_on_ctrl_c(interrupted):
    # 2**62 proposals would run for centuries; Ctrl-C must stop it between rounds
    seconds = interrupted(
        "import numpy as np\nfrom gmmfast.latent import sample_latent\n"
        "costs = np.random.default_rng(0).random((100_000, 4))",
        "sample_latent(costs, costs.argmin(1), 1e9, 2**62, 0)")
    assert seconds < 2.0


def test_ragged_and_oversized_inputs_are_named():            # issue 12: found by the fuzz test
    with pytest.raises(ValueError, match="n_options must be"):
        sample_latent(np.zeros((4, 3)), np.zeros(4, int), 1.0, 5, n_options=[[1, 2], [3]])
    with pytest.raises(ValueError, match="at most 2147483647 blocks"):
        block_plan(2**64, 293, 1.0, 0)                        # tried to allocate 447 PiB
