"""Cluster state: aggregation by sparse products and splitting by regime."""

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.core import partition as partition_module
from aidopt.core.partition import Partition, nested_labels


def brute_sums(labels, a, k):
    return np.array([a[labels == c].sum(axis=0) for c in range(k)])


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_from_labels_renumbers_and_counts(rng):
    raw = rng.choice([3, 10, 42, 99], size=200)
    part = Partition.from_labels(raw)
    assert part.n_clusters == 4
    assert part.sizes.sum() == 200
    for k, value in enumerate([3, 10, 42, 99]):
        assert np.array_equal(part.members(k), np.flatnonzero(raw == value))
        assert part.sizes[k] == np.sum(raw == value)
    assert part.rate == pytest.approx(4 / 200)


@pytest.mark.parametrize(
    "raw",
    [
        np.array([5]),
        np.array([7, 7, 7], dtype=np.int8),
        np.arange(60_000, dtype=np.uint16)[::-3],
        np.array([9, 2, 9, 4], dtype=np.uint64),
        np.array([-4, 2, -4, 9]),  # negative: the sorting path
        np.array([0, 10**12, 3, 10**12]),  # values far beyond n: the sorting path
        np.random.default_rng(1).integers(0, 2 * 300 + 1023, size=300),  # the table's edge
    ],
)
def test_from_labels_numbers_as_a_sort_would(raw):
    """Labels numbered by a table of their values (small non-negative labels) or by a sort give
    the same partition: 0..K−1 in the order of the values."""
    _, expected = np.unique(raw, return_inverse=True)
    part = Partition.from_labels(raw)
    assert part.labels.dtype == np.int64
    np.testing.assert_array_equal(part.labels, expected)
    np.testing.assert_array_equal(part.sizes, np.bincount(expected))


def test_sums_and_means_equal_brute_force(rng):
    part = Partition.from_labels(rng.integers(0, 17, size=500))
    X = rng.standard_normal((500, 6))
    y = rng.standard_normal(500)
    k = part.n_clusters
    np.testing.assert_allclose(part.sums(X), brute_sums(part.labels, X, k), rtol=1e-12)
    np.testing.assert_allclose(part.sums(y), brute_sums(part.labels, y, k), rtol=1e-12)
    means = np.array([X[part.labels == c].mean(axis=0) for c in range(k)])
    np.testing.assert_allclose(part.means(X), means, rtol=1e-12)
    Xs = sp.random(500, 30, density=0.1, random_state=1, format="csr")
    np.testing.assert_allclose(
        part.sums(Xs).toarray(), brute_sums(part.labels, Xs.toarray(), k), rtol=1e-12
    )


def test_split_is_exhaustive_disjoint_pure_and_never_empty(rng):
    part = Partition.from_labels(rng.integers(0, 30, size=1000))
    regime = rng.integers(0, 4, size=1000)
    # make a few clusters pure so that some are kept whole
    for k in range(5):
        regime[part.labels == k] = 2
    child, n_impure = part.split(regime)
    impure = part.impure(regime)
    assert n_impure == impure.sum() > 0
    assert child.sizes.min() >= 1
    assert child.sizes.sum() == 1000
    # every new cluster lies inside its parent and is regime-pure
    for k in range(child.n_clusters):
        members = child.members(k)
        assert members.size == child.sizes[k]
        assert np.all(part.labels[members] == child.parent[k])
        assert np.all(regime[members] == child.cluster_regime[k])
    # pure parents are kept whole, impure parents split into their regime parts
    for q in range(part.n_clusters):
        children = np.flatnonzero(child.parent == q)
        n_regimes = np.unique(regime[part.labels == q]).size
        assert children.size == (n_regimes if impure[q] else 1)
    assert child.impure(regime).sum() == 0


def test_split_of_pure_partition_returns_itself(rng):
    part = Partition.from_labels(rng.integers(0, 5, size=50))
    same, n_impure = part.split(part.labels % 2)
    assert same is part and n_impure == 0


@pytest.mark.parametrize("shape", [(300, 4), (40_000, 3), (300, 0)])
def test_label_sums_column_by_column_and_by_the_sparse_indicator_agree_exactly(rng, shape):
    """Small matrices are summed by ``bincount`` per column (no SciPy import), large ones by the
    sparse indicator; both add the rows of a cluster in row order, so they agree to the bit."""
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-9, 10, size=shape)
    labels = rng.integers(0, 37, size=shape[0])
    small = shape[0] * shape[1] <= partition_module._BINCOUNT_ENTRIES
    assert small == (shape[0] == 300)
    got = partition_module.label_sums(labels, a, 40)
    indicator = sp.csr_matrix((np.ones(shape[0]), (labels, np.arange(shape[0]))), (40, shape[0]))
    assert got.shape == (40, shape[1])
    assert np.array_equal(got, np.asarray(indicator @ a))
    np.testing.assert_allclose(got, brute_sums(labels, a, 40).reshape(40, shape[1]), rtol=1e-9)


@pytest.mark.parametrize("kind", ["dense", "vector", "sparse"])
def test_incremental_sums_after_split_equal_full_recompute(rng, kind):
    n = 800
    a = {
        "dense": rng.standard_normal((n, 5)),
        "vector": rng.standard_normal(n),
        "sparse": sp.random(n, 40, density=0.05, random_state=3, format="csr"),
    }[kind]
    part = Partition.from_labels(rng.integers(0, 12, size=n))
    part.sums(a)  # cache, so that the children update incrementally
    for _ in range(3):
        part, _ = part.split(rng.integers(0, 2, size=n))
        got = part.sums(a)
        want = Partition.from_labels(part.labels).sums(a)
        if kind == "sparse":
            got, want = got.toarray(), want.toarray()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_regime_validation(rng):
    part = Partition.from_labels(rng.integers(0, 3, size=10))
    with pytest.raises(ValueError, match="shape"):
        part.split(np.zeros(9, dtype=int))
    with pytest.raises(ValueError, match="non-negative"):
        part.split(-np.ones(10, dtype=int))


def test_nested_labels_never_mix_groups(rng):
    groups = rng.integers(0, 2, size=300)
    labels = rng.integers(0, 7, size=300)
    part = Partition.from_labels(nested_labels(groups, labels))
    for k in range(part.n_clusters):
        members = part.members(k)
        assert np.unique(groups[members]).size == 1
        assert np.unique(labels[members]).size == 1


def test_finer_split_parts_nonempty_purity_by_regime(rng):
    n = 1200
    part = Partition.from_labels(rng.integers(0, 25, size=n))
    regime = rng.integers(0, 2, size=n)
    for k in range(4):  # pure clusters stay whole even though finer varies inside them
        regime[part.labels == k] = 1
    finer = 2 * rng.integers(0, 3, size=n) + regime  # sign × 3 bands: refines regime
    lone = rng.random(n) < 0.05  # and some entries as singletons (finer values ≥ 6)
    finer[lone] = 6 + np.flatnonzero(lone)
    impure = part.impure(regime)
    X = rng.standard_normal((n, 3))
    part.sums(X)  # cached: the children's sums are updated incrementally
    child, n_impure = part.split(regime, finer)
    assert n_impure == impure.sum() > 0
    assert child.sizes.min() >= 1 and child.sizes.sum() == n
    for q in range(part.n_clusters):
        rows = part.labels == q
        children = np.flatnonzero(child.parent == q)
        expected = np.unique(finer[rows]).size if impure[q] else 1
        assert children.size == expected
    for k in range(child.n_clusters):
        members = child.members(k)
        assert members.size == child.sizes[k]
        assert np.all(part.labels[members] == child.parent[k])
        assert np.all(regime[members] == child.cluster_regime[k])
        if impure[child.parent[k]]:
            assert np.unique(finer[members]).size == 1
    assert child.impure(regime).sum() == 0
    np.testing.assert_allclose(
        child.sums(X), Partition.from_labels(child.labels).sums(X), rtol=1e-12, atol=1e-12
    )


def test_finer_split_of_pure_partition_returns_itself(rng):
    part = Partition.from_labels(rng.integers(0, 5, size=50))
    same, n_impure = part.split(part.labels % 2, rng.integers(0, 9, size=50))
    assert same is part and n_impure == 0


def test_finer_that_does_not_refine_regime_is_an_error(rng):
    part = Partition.from_labels(np.zeros(40, dtype=int))
    regime = np.arange(40) % 2
    with pytest.raises(ValueError, match="finer does not refine regime"):
        part.split(regime, np.zeros(40, dtype=int))  # one finer part mixes both regimes
    with pytest.raises(ValueError, match="finer has shape"):
        part.split(regime, np.zeros(39, dtype=int))
    with pytest.raises(ValueError, match="finer must hold non-negative"):
        part.split(regime, -np.ones(40, dtype=int))


def test_weights_and_dense_sums_and_the_weighted_rows_of_a_container():

    from aidopt.data.containers import RegressionData

    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 3))
    X[X < 0.5] = 0.0
    w = rng.uniform(0.5, 2.0, size=30)
    part = Partition.from_labels(rng.integers(0, 5, size=30))
    np.testing.assert_array_equal(part.weights(None), part.sizes)
    np.testing.assert_allclose(part.weights(w), np.bincount(part.labels, weights=w))
    dense = part.dense_sums(sp.csr_matrix(X))
    assert isinstance(dense, np.ndarray)
    np.testing.assert_allclose(dense, part.sums(X))
    data = RegressionData.from_arrays(sp.csr_matrix(X), X[:, 0], weight=w)
    assert data.weighted_X is data.weighted_X  # one object: Partition.sums caches by it
    np.testing.assert_allclose(data.weighted_X.toarray(), X * w[:, None])
    np.testing.assert_allclose(data.weighted_y, X[:, 0] * w)
    plain = RegressionData.from_arrays(X, X[:, 0])
    assert plain.weighted_X is plain.X and plain.weighted_y is plain.y


def test_is_singletons_only_for_entry_k_in_cluster_k():
    assert Partition.singletons(5).is_singletons
    assert not Partition.from_labels([0, 0, 1, 2, 3]).is_singletons  # fewer clusters
    permuted = Partition(labels=np.array([1, 0, 2]), sizes=np.ones(3, dtype=np.int64))
    assert not permuted.is_singletons  # every entry alone, but cluster k is not entry k
