"""The big-M of the S3VM MIQP (:mod:`aidopt.solvers.s3vm_big_m`) against the exact optimum of
the branch and bound, and the cluster services the certificate uses (radii, halving)."""

from __future__ import annotations

import numpy as np
import pytest
from test_s3vm_branch_and_bound import random_structure, value

from aidopt.core.clustering import cluster_radii, halve
from aidopt.core.partition import Partition
from aidopt.exceptions import AidoptError
from aidopt.solvers.outer_approximation import solve_convex_qp
from aidopt.solvers.s3vm_big_m import BigM, local_search
from aidopt.solvers.s3vm_big_m import value as structure_value
from aidopt.solvers.s3vm_branch_and_bound import S3VMBranchAndBound


@pytest.mark.parametrize("bias", [None, 0.3])
@pytest.mark.parametrize("seed", range(4))
def test_the_big_m_holds_at_the_exact_optimum(seed, bias):
    s = random_structure(seed, bias=bias)
    m = s.features.shape[1]
    points = [np.r_[np.zeros(m), 0.0 if bias is None else bias]]
    bounds = BigM.of(s, points)
    fit, result = S3VMBranchAndBound().solve_structure(s, options={"gap": 1e-12})
    assert structure_value(s, fit.w, fit.b) == pytest.approx(value(s, fit.w, fit.b), rel=1e-14)
    assert bounds.upper == pytest.approx(value(s, np.zeros(m), points[0][-1]), rel=1e-14)
    assert np.linalg.norm(fit.w) <= bounds.W
    assert bounds.b_lo <= fit.b <= bounds.b_hi
    f_lo, f_hi = bounds.score_range(np.linalg.norm(s.features, axis=1))
    f = s.features @ fit.w + fit.b
    assert np.all(f_lo <= f) and np.all(f <= f_hi)
    record = bounds.check(s.features, fit.w, fit.b, result.objective)
    assert record["W_needed"] <= record["W"]
    with pytest.raises(AidoptError, match="big-M check failed"):  # W below √(2·objective)
        bounds.check(s.features, fit.w, fit.b, 4.0 * bounds.upper)
    with pytest.raises(AidoptError, match="big-M check failed"):  # scores outside the range
        bounds.check(s.features, fit.w, bounds.b_hi + 3.0 * np.abs(f_hi).max() + 1.0, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_the_local_search_never_ends_above_its_start(seed):
    s = random_structure(seed, n_u=10)
    start = np.zeros(s.features.shape[1] + 1)
    found = local_search(s, start, solve_convex_qp, lambda: None)
    assert structure_value(s, found[:-1], found[-1]) <= structure_value(s, start[:-1], 0.0)
    tighter = BigM.of(s, [start, found])
    assert tighter.upper <= BigM.of(s, [start]).upper


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e9])
def test_radii_bound_every_distance_and_halves_split_every_cluster(scale):
    rng = np.random.default_rng(0)
    X = scale * rng.normal(size=(60, 3))
    labels = rng.integers(0, 4, 60)
    labels[:4] = np.arange(4)
    partition = Partition.from_labels(labels)
    centres = np.vstack([X[labels == k].mean(axis=0) for k in range(4)])
    clusters = np.array([1, 3])
    rho = cluster_radii(X, partition, centres, clusters)
    for r, k in zip(rho, clusters, strict=True):
        assert r >= np.linalg.norm(X[labels == k] - centres[k], axis=1).max()
    for normal in (None, np.array([1.0, 0.0, 0.0])):
        split = halve(X, partition, clusters, normal)
        assert not split[~np.isin(labels, clusters)].any()
        for k in clusters:
            assert 0 < split[labels == k].sum() < np.count_nonzero(labels == k)
