"""Cluster state: aggregation by sparse products and splitting by regime."""

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.partition import Partition, nested_labels


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
