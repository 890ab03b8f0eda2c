"""The Centroid Index (Fränti, Rezaei, Zhao 2014) on hand-made cases, and the helpers."""
import numpy as np
import pytest

from gmmfast.metrics import (centroid_index, centroid_index_one_way, centroids_from_labels,
                             sse_per_point)

# four true clusters on a square
TRUE = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])


def test_identical_and_permuted_solutions_have_index_zero():
    assert centroid_index(TRUE, TRUE) == 0
    found = TRUE[[2, 0, 3, 1]] + 0.4          # a permutation, slightly off
    assert centroid_index(found, TRUE, both=True) == (0, 0, 0)


def test_one_cluster_missed_one_split():
    # two centers share the cluster at (0, 0); nothing near (10, 10)
    found = np.array([[-1.0, 0.0], [1.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    # found -> true: nobody maps to (10, 10): one orphan
    assert centroid_index_one_way(found, TRUE) == 1
    # true -> found: (0,0) -> (-1,0) [tie broken by the lower index], (10,0) -> (10,0),
    # (0,10) -> (0,10), (10,10) -> (10,0) or (0,10): (1,0) is an orphan
    assert centroid_index_one_way(TRUE, found) == 1
    assert centroid_index(found, TRUE, both=True) == (1, 1, 1)


def test_two_errors_counted_by_hand():
    # (0,0) and (10,0) merged into one center between them; two centers at (0,10)
    found = np.array([[5.0, 0.0], [-0.5, 10.0], [0.5, 10.0], [10.0, 10.0]])
    # found -> true: (5,0) -> (0,0) (tie, lower index), others -> (0,10), (0,10), (10,10):
    # (10,0) is an orphan
    assert centroid_index_one_way(found, TRUE) == 1
    # true -> found: (0,0),(10,0) -> (5,0); (0,10) -> (-0.5,10); (10,10) -> (10,10):
    # (0.5,10) is an orphan
    assert centroid_index_one_way(TRUE, found) == 1
    far = np.array([[100.0, 100.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # far -> true: (100,100) -> (10,10), the rest -> (0,0): (10,0) and (0,10) are orphans
    assert centroid_index_one_way(far, TRUE) == 2
    assert centroid_index(far, TRUE) == 2


def test_different_numbers_of_clusters():
    three = TRUE[:3]
    # 3 centers cannot reach 4 true clusters: at least one orphan one way
    ci, ab, ba = centroid_index(three, TRUE, both=True)
    assert ab == 1 and ba == 0 and ci == 1
    one = TRUE[:1]
    assert centroid_index(one, TRUE) == 3


def test_symmetric_in_its_arguments():
    rng = np.random.default_rng(0)
    for _ in range(20):
        A, B = rng.normal(size=(6, 3)), rng.normal(size=(8, 3))
        ci, ab, ba = centroid_index(A, B, both=True)
        ci2, ab2, ba2 = centroid_index(B, A, both=True)
        assert ci == ci2 and ab == ba2 and ba == ab2
        assert 8 - 6 <= ab <= 7 and 0 <= ba <= 5


def test_input_validation():
    with pytest.raises(ValueError, match="same number of features"):
        centroid_index(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        centroid_index(np.array([[np.nan, 0.0]]), TRUE)


def test_centroids_from_labels_and_sse():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0], [10.0, 12.0]])
    y = np.array([5, 5, 2, 2])
    C = centroids_from_labels(X, y)
    np.testing.assert_array_equal(C, [[10.0, 11.0], [1.0, 0.0]])    # order of np.unique
    assert sse_per_point(X, C) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="labels"):
        centroids_from_labels(X, y[:3])


def test_errors_name_the_parameters_of_each_function():     # issue 12: found by the fuzz test
    with pytest.raises(ValueError, match="centers must"):
        sse_per_point(np.zeros((3, 2)), "")                 # said "B must contain numbers"
    with pytest.raises(ValueError, match="X must"):
        sse_per_point(-1, np.zeros((2, 2)))                 # said "A must be a 2-D array"
    with pytest.raises(ValueError, match="labels must"):
        centroids_from_labels(np.zeros((2, 1)), [[1, 2], [3]])   # numpy's ragged error


def test_centroids_beyond_squared_distances_range_are_refused():
    """A = [[0], [2e200]] and B = [[1e150], [1.9e200]] pair up one to one, but their squared
    distances overflowed to inf, argmin took the first centroid and CI came out 1."""
    A, B = np.array([[0.0], [2e200]]), np.array([[1e150], [1.9e200]])
    with pytest.raises(ValueError, match=r"A has values up to 2e\+200; squared distances "
                                         r"overflow float64"):
        centroid_index(A, B)
    with pytest.raises(ValueError, match="centers has values up to"):
        sse_per_point(A * 1e-200, B)
    assert centroid_index(A * 1e-200, B * 1e-200, both=True) == (0, 0, 0)
