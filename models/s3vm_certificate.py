"""The certificate of the S3VM under AID (``models/s3vm.py``; docs/s3vm.md).

Prop. 5 of Park & Klabjan claims that "every cluster pure" proves optimality; it does not: the
unlabeled loss max{0, 1 − |f|} is not convex, so (15) is not a relaxation of (12), and pure
clusters only prove optimality among hyperplanes that keep the current clusters pure (tests hold
a counterexample). The certificate here is valid: with ρ_k = max_{i∈D_k} ‖x_i − x̄_k‖ and
W* = √(2E^t) ≥ ‖w*‖, every unlabeled entry has

    max{0, 1 − |f(x_i)|} ≥ max{0, 1 − ρ_k W* − |f(x̄_k)|},

so (15) with unlabeled margins 1 − ρ_k W* is a relaxation of (12) (it is (15) itself when every
unlabeled cluster is one point, ρ = 0). When every cluster is pure that problem is solved; the
run is certified optimal only when its proven bound L satisfies E^t − L ≤ tol. Otherwise the
unlabeled clusters that its solution places inside the margin are halved along its hyperplane
and AID goes on. The bound is the MIQP solver's: solver-attested, not re-checkable from the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import dense
from aidopt.core.clustering import cluster_radii, halve
from aidopt.core.partition import Partition
from aidopt.data.containers import SemiSupervisedData

__all__ = ["S3VMCertificate", "centroids", "certify", "halves", "spread_clusters"]

Hyperplane = tuple[NDArray[np.float64], float]
#: (15) with the given unlabeled margins, solved: (its proven lower bound or None, its
#: hyperplane (w, b) or None)
Relaxation = Callable[[NDArray[np.float64]], tuple[float | None, Hyperplane | None]]
_SAVED = ("certified", "kind", "upper_bound", "lower_bound", "W")  # in a result's JSON


@dataclass(frozen=True)
class S3VMCertificate:
    """The global-optimality check run when every cluster is pure (module docstring).

    ``lower_bound`` is L (None when the bound problem was not solved to optimality),
    ``W`` the norm bound √(2E^t), ``split`` an (n,) 0/1 array that halves the clusters the bound
    problem exploits (None when certified).
    """

    certified: bool
    upper_bound: float
    lower_bound: float | None
    W: float
    kind: str  # "exact-clusters" (all ρ_k = 0) or "relaxed-margins"
    split: NDArray[np.int64] | None = None

    def to_dict(self) -> dict[str, Any]:
        """What a result's JSON keeps (not the split)."""
        return {key: getattr(self, key) for key in _SAVED}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> S3VMCertificate:
        return cls(**{key: saved[key] for key in _SAVED})


def certify(
    data: SemiSupervisedData,
    partition: Partition,
    unlabeled: NDArray[np.int64],
    upper: float,
    tol: float,
    exact_bound: float | None,
    relaxed: Relaxation,
) -> S3VMCertificate:
    """The check of the module docstring at a solution of value E^t = ``upper`` whose clusters
    are pure: ``unlabeled`` the unlabeled clusters, ``exact_bound`` the proven bound of (15)
    itself (used when every unlabeled cluster is a point), ``relaxed`` the relaxation's solve."""
    rho = radii(data, partition, unlabeled)
    W = math.sqrt(2.0 * upper)
    targets = unlabeled[rho > 0]
    if targets.size == 0:  # unlabeled clusters of identical points: (15) is a relaxation
        bound, kind, hyperplane = exact_bound, "exact-clusters", None
    else:
        kind = "relaxed-margins"
        bound, hyperplane = relaxed(1.0 - rho * W)
    if bound is not None and upper - bound <= tol:
        return S3VMCertificate(True, upper, bound, W, kind)
    split = halves(data, partition, targets, hyperplane)
    return S3VMCertificate(False, upper, bound, W, kind, split)


def halves(
    data: SemiSupervisedData,
    partition: Partition,
    targets: NDArray[np.int64],
    hyperplane: Hyperplane | None,
) -> NDArray[np.int64]:
    """0/1 per entry halving the unlabeled clusters ``targets`` (ρ_k > 0) that a relaxed problem
    exploits: those whose mean lies inside the margin of its hyperplane (all of them when there
    is none or none does), along the hyperplane's normal (:func:`aidopt.core.clustering.halve`)."""
    if hyperplane is None:
        return halve(data.X, partition, targets)
    w, b = hyperplane
    means = dense(partition.means(data.X))[targets]
    inside = targets[np.abs(means @ w + b) < 1.0]
    return halve(data.X, partition, inside if inside.size else targets, w)


def radii(
    data: SemiSupervisedData, partition: Partition, clusters: NDArray[np.int64]
) -> NDArray[np.float64]:
    """ρ_k = max_{i∈C_k} ‖x_i − x̄_k‖ for the given clusters, x̄_k the (weighted) centroid of
    (15), rounded up (:func:`aidopt.core.clustering.cluster_radii`)."""
    return cluster_radii(data.X, partition, centroids(data, partition), clusters)


def spread_clusters(data: SemiSupervisedData, partition: Partition) -> NDArray[np.int64]:
    """The unlabeled clusters that are not one point (ρ_k > 0)."""
    unlabeled = np.bincount(partition.labels, weights=(~data.labeled).astype(np.float64))
    U = np.flatnonzero(unlabeled > 0)
    return U[radii(data, partition, U) > 0]


def centroids(data: SemiSupervisedData, partition: Partition) -> NDArray[np.float64]:
    """x̄_k = Σ_{C_k} ω_i x_i / W_k, dense K × m (the plain means without row weights)."""
    sums = partition.dense_sums(data.weighted_X)
    return sums / partition.weights(data.weight)[:, None]
