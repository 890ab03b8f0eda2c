"""The synthetic scene generator: shapes, determinism, and the structure it promises."""
import numpy as np
import pytest

from gmmfast.datasets import make_scenes
from gmmfast.potts import potts_energy


def test_shapes_dtypes_and_balanced_classes():
    X, y, Z = make_scenes(n_samples=53, n_classes=4, n_parts=7, n_features=5, grid=(6, 8),
                          random_state=0)
    assert X.shape == (53, 48, 5) and X.dtype == np.float64
    assert y.shape == (53,) and y.dtype == np.int64
    assert Z.shape == (53, 48) and Z.dtype == np.int32
    assert sorted(np.bincount(y, minlength=4).tolist()) == [13, 13, 13, 14]
    assert Z.min() >= 0 and Z.max() < 7
    assert np.isfinite(X).all()
    X32, _, _ = make_scenes(n_samples=10, dtype=np.float32, random_state=0)
    assert X32.dtype == np.float32


def test_deterministic_given_random_state():
    a = make_scenes(n_samples=40, random_state=3)
    b = make_scenes(n_samples=40, random_state=np.random.default_rng(3))
    c = make_scenes(n_samples=40, random_state=4)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)
    assert not np.array_equal(a[0], c[0])


def test_features_are_noisy_prototypes():
    X, y, Z, P = make_scenes(n_samples=30, noise=0.0, random_state=1, return_params=True)
    assert np.array_equal(X, P["prototypes"][Z])
    X, y, Z, P = make_scenes(n_samples=200, noise=0.7, random_state=1, return_params=True)
    resid = X - P["prototypes"][Z]
    assert resid.std() == pytest.approx(0.7, rel=0.02)
    assert abs(resid.mean()) < 0.01


def test_without_variation_every_image_is_its_class_template():
    X, y, Z, P = make_scenes(n_samples=25, layout_jitter=0.0, part_swap=0.0, random_state=2,
                             return_params=True)
    T = P["templates"].reshape(P["templates"].shape[0], -1)
    assert np.array_equal(Z, T[y])
    # each template uses exactly its class's regions_per_class distinct parts (or fewer if a
    # seed's Voronoi cell holds no cell centre)
    for c in range(T.shape[0]):
        assert set(np.unique(T[c])) <= set(P["parts"][c])
        assert len(set(P["parts"][c])) == P["parts"].shape[1]


def test_labelings_are_coherent_and_parts_shared_between_classes():
    X, y, Z, P = make_scenes(random_state=5, return_params=True)
    n = Z.shape[0]
    true = potts_energy(Z.reshape(n, 10, 10))
    shuffled = potts_energy(np.random.default_rng(0).permuted(Z, axis=1).reshape(n, 10, 10))
    assert true.mean() < 0.5 * shuffled.mean()
    users = np.zeros(P["prototypes"].shape[0], dtype=int)
    for c in range(P["parts"].shape[0]):
        users[np.unique(P["parts"][c])] += 1
    assert users.max() >= 2  # some part belongs to several classes' layouts


def test_class_signal_is_in_the_layout():
    # With the true part labels, the nearest class template (Hamming) recovers
    # the class far above chance; from a single region's part it does not.
    X, y, Z, P = make_scenes(random_state=6, return_params=True)
    T = P["templates"].reshape(P["templates"].shape[0], -1)
    pred = (Z[:, None, :] != T[None]).sum(-1).argmin(1)
    assert (pred == y).mean() > 0.8
    one_region = (Z[:, [0]] != T[None, :, 0]).argmin(1)
    assert (one_region == y).mean() < (pred == y).mean()


@pytest.mark.parametrize("kwargs, match", [
    ({"n_samples": 0}, "n_samples"),
    ({"n_classes": 0}, "n_classes"),
    ({"n_parts": 3, "regions_per_class": 4}, "regions_per_class"),
    ({"grid": (10,)}, "grid"),
    ({"grid": (0, 5)}, "grid"),
    ({"noise": -1.0}, "noise"),
    ({"noise": float("nan")}, "noise"),
    ({"layout_jitter": -0.5}, "layout_jitter"),
    ({"part_swap": 1.5}, "part_swap"),
    ({"dtype": np.int32}, "dtype"),
    ({"random_state": -1}, "random_state"),
])
def test_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_scenes(**kwargs)
