"""The one-pass k-means initial clustering assigns every row to its nearest centre."""

import numpy as np
import pytest

from aidopt.core.clustering import ScoreBins, kmeans_one_pass, n_clusters_for_rate, quantile_edges


@pytest.mark.parametrize("dim", [1, 2, 12])
def test_each_row_goes_to_its_nearest_centre(dim):
    rng = np.random.default_rng(dim)
    z = rng.standard_normal((3000, dim)) * np.arange(1, dim + 1)
    labels = kmeans_one_pass(z, 40, np.random.default_rng(5))
    assert labels.min() == 0 and np.unique(labels).size == labels.max() + 1
    # recompute the centres exactly as the function draws them and check the assignment
    zs = (z - z.mean(axis=0)) / z.std(axis=0)
    centres = zs[np.random.default_rng(5).choice(3000, size=40, replace=False)]
    dist = ((zs[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    nearest = dist.argmin(axis=1)
    # same partition up to renumbering: each label maps to exactly one centre
    pairs = np.unique(np.column_stack([labels, nearest]), axis=0)
    assert pairs.shape[0] == np.unique(labels).size == np.unique(nearest).size


def test_k_bounds_and_rate():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        kmeans_one_pass(np.zeros((5, 2)), 6, rng)
    assert n_clusters_for_rate(0.0005, 1000, minimum=3) == 3
    assert n_clusters_for_rate(0.01, 1000) == 10
    assert n_clusters_for_rate(2.0, 1000) == 1000


def test_full_kmeans_holds_the_deadline_and_beats_one_pass():
    from aidopt.common.deadline import TimeLimitReached, deadline
    from aidopt.core.clustering import kmeans_lloyd

    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(8, 5))
    z = centres[rng.integers(0, 8, size=4000)] + rng.normal(size=(4000, 5))

    def scatter(labels):
        means = np.array([z[labels == k].mean(axis=0) for k in np.unique(labels)])
        return float(((z - means[np.unique(labels, return_inverse=True)[1]]) ** 2).sum())

    full = kmeans_lloyd(z, 8, np.random.default_rng(1), full=True, standardize=False)
    one = kmeans_one_pass(z, 8, np.random.default_rng(1), standardize=False)
    assert scatter(full) <= scatter(one)
    with deadline(1e-9), pytest.raises(TimeLimitReached, match="initial k-means"):
        kmeans_lloyd(z, 8, np.random.default_rng(1), full=True)


def test_kmeans_seeds_from_a_sample_stay_near_the_full_seeding():
    """k-means++ seeds from a random sample of 20k rows, then one Lloyd step over all rows:
    every row labelled, the clusters' scatter within 10 % of seeding on all rows; a sample as
    large as the data changes nothing (the same random stream)."""
    from aidopt.core.clustering import kmeans_lloyd

    rng = np.random.default_rng(3)
    centres = rng.normal(scale=6.0, size=(30, 2))
    z = centres[rng.integers(0, 30, size=20_000)] + rng.normal(size=(20_000, 2))

    def scatter(labels):
        counts = np.bincount(labels)
        means = np.stack([np.bincount(labels, weights=z[:, j]) / counts for j in range(2)], 1)
        return float(((z - means[labels]) ** 2).sum())

    whole = kmeans_lloyd(z, 30, np.random.default_rng(4), standardize=False)
    sampled = kmeans_lloyd(z, 30, np.random.default_rng(4), standardize=False, seed_sample=600)
    assert sampled.shape == (20_000,) and np.unique(sampled).size == sampled.max() + 1 <= 30
    assert scatter(sampled) <= 1.1 * scatter(whole)
    same = kmeans_lloyd(z, 30, np.random.default_rng(4), standardize=False, seed_sample=20_000)
    np.testing.assert_array_equal(same, whole)


def test_score_bins_number_each_groups_bins_after_the_groups_before():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 3))
    direction, offset = np.array([1.0, -2.0, 0.5]), 0.3
    score = X @ direction + offset
    group = rng.random(500) < 0.4
    edges = (quantile_edges(score[~group], 4), quantile_edges(score[group], 3))
    labels = ScoreBins(direction, edges, offset).labels(X, group)
    assert edges[0].size == 3 and edges[1].size == 2
    assert set(labels[~group]) == {0, 1, 2, 3} and set(labels[group]) == {4, 5, 6}
    for k in range(7):  # every bin is an interval of the scores of one group
        members = score[labels == k]
        others = score[(labels != k) & (group == (k >= 4))]
        assert not np.any((others > members.min()) & (others < members.max()))
    one = ScoreBins(direction, (np.empty(0),), offset)
    assert not one.labels(X).any() and quantile_edges([], 5).size == 0
