"""What the kernel one-class models share (the LM-OCSVM, ``models/ocsvm_kernel.py``, and SVDD,
``models/svdd.py``): the kernel options, the initial clusters (k-means in input space), the
aggregate — centroid Gram sums refreshed for split clusters only (:mod:`aidopt.core.
kernel_aggregate`), the weighted mean of K(x_i, x_i) per cluster, N = Σ ω_i —, the domain of
novelty a solution defines with its scores on the training rows, the warm start, the rounding
bounds of its expansion, and the solution a certificate's dual point describes.

A model of this family states its aggregated dual (``declare`` / ``read``, the structure), what
its domain f is (:meth:`KernelDomainModel.solution_of`), its evaluation and its certificate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.core.certificate import DualPoint, clipped_into, cluster_duals, dual_box, moved_mass
from aidopt.core.clustering import kmeans_lloyd, n_clusters_for_rate
from aidopt.core.contract import AggregatedModel, Previous
from aidopt.core.kernel_aggregate import LazyGram, SummedKernels, summed_kernels
from aidopt.core.partition import Partition
from aidopt.data.containers import FeatureData
from aidopt.exceptions import DataError
from aidopt.numerics.kernel_expansion import Domain
from aidopt.numerics.kernels import (
    Kernel,
    KernelParameters,
    expansion_error,
    kernel_times,
    quadratic_form_error,
)
from aidopt.numerics.rounding import quotient_relative_error
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import BoxQP

__all__ = ["DomainAggregate", "DomainSolution", "KernelDomainModel"]

_MIN_CLUSTERS = 8  # initial clusters at least (a kernel domain needs a few pieces to start)
_RATE = 0.005  # the default initial aggregation rate (default_rate)


@dataclass(frozen=True, eq=False)
class DomainAggregate(LazyGram):
    """Centroid Gram sums T_kq = Σ_{i∈C_k} Σ_{j∈C_q} ω_i ω_j K(x_i, x_j), W_k = Σ_{C_k} ω_i,
    the weighted mean of K(x_i, x_i) per cluster, N = Σ ω_i (ω = 1 without row weights).

    Every cluster one entry (the full problem): no T is summed (``gram_sum`` None, K̄ from
    :class:`~aidopt.core.kernel_aggregate.LazyGram`)."""

    gram_sum: NDArray[np.float64] | None
    weight: NDArray[np.float64]
    diag_mean: NDArray[np.float64]  # Σ_{i∈C_k} ω_i K(x_i, x_i) / W_k
    partition: Partition
    X: NDArray[np.float64]
    total: float  # N = Σ_i ω_i
    row_weight: NDArray[np.float64] | None = None  # ω_i, None: every row weighs 1
    kernel: Kernel | None = None
    #: the kernel sums (T, and P when kept) that the next aggregation reuses
    summed: SummedKernels | None = None


@dataclass(frozen=True, eq=False)
class DomainSolution:
    """The cluster duals a_k, the domain f they define, ‖Σ_k a_k φ̄_k‖² = aᵀK̄a, and (SVDD) the
    aggregated radius R̄² that the regimes are taken against."""

    a: NDArray[np.float64]
    cluster_labels: NDArray[np.int64]
    domain: Domain
    norm_sq: float
    radius_sq: float | None = None
    train_expansion: NDArray[np.float64] | None = None  # Σ_j c_j K(x_j, x_i) on the entries
    train_X: NDArray[np.float64] | None = None  # the entries it was computed for

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        if self.train_expansion is not None and X is self.train_X:
            domain = self.domain
            value = self.train_expansion - domain.offset
            if domain.diag_coef:
                value = value + domain.diag_coef * domain.kernel.diag(X)
            return value
        return self.domain.decision_function(X)

    @property
    def support_vectors(self) -> NDArray[np.float64]:
        return self.domain.support_vectors

    def entry_duals(self, weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """α̂_i = a_k ω_i/W_k for every entry (a_k/|C_k| without ``weight``)."""
        return cluster_duals(self.cluster_labels, self.a, weight)


class KernelDomainModel(
    AggregatedModel[FeatureData, DomainAggregate, DomainSolution], KernelParameters
):
    """What the kernel one-class models share: the kernel, the initial clusters (k-means in input
    space), the centroid Gram refreshed only for split clusters, the factor L Lᵀ = K̄."""

    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = FeatureData
    structures: ClassVar[tuple[type, ...]] = (BoxQP,)
    supports_weights: ClassVar[bool] = True
    default_solver: ClassVar[str] = "boxqp"

    def check_data(self, data: FeatureData) -> None:
        if data.n < 2:
            raise DataError(f"A domain of novelty needs at least 2 rows; got {data.n}.")
        if issparse(data.X):
            raise DataError("The kernel one-class models need dense X (X.toarray()).")

    def default_rate(self, data: FeatureData) -> float:
        """r^0 = max{1.1m/N, 0.005} (at least 8 clusters, below). Measured on two moons
        (γ = 8, libsvm's problems at ν = 0.05 and 0.375, 2026-11-27): the SVM's 1e-4 starts
        from 8 clusters whatever N, and their splits recompute ~5·N² kernel entries; 0.005
        (N/200 clusters) recomputes 1.4·N² at 10^5 (131 → 51 s; 10^3 and 10^4 1.1–2× faster
        too; 0.02 pays in the aggregated solves: 103 s)."""
        return min(1.0, max(1.1 * data.m / data.n, _RATE))

    def initial_partition(
        self, data: FeatureData, rate: float, rng: np.random.Generator
    ) -> Partition:
        """k-means (k-means++ seeds from 20k random rows, one Lloyd step over all) in input
        space: for an RBF kernel, rows that are close in input space are close in feature space,
        so clusters start near pure. At rate 1, every entry its own cluster (the full problem)."""
        if rate >= 1.0:
            return Partition.singletons(data.n)
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, _MIN_CLUSTERS))
        labels = kmeans_lloyd(data.X, k, rng, standardize=False, seed_sample=20 * k)
        return Partition.from_labels(labels)

    def aggregate(
        self, data: FeatureData, partition: Partition, *, previous: Any = None
    ) -> DomainAggregate:
        """T = S P with the kept kernel sums P (:func:`cluster_kernel_sums`: refreshed for split
        clusters only, the others taken from ``previous``), or T by blocks when n·K is too
        large to keep P."""
        kernel = self.kernel_for(data.m)
        cache = None
        if previous is not None and previous.row_weight is data.weight:
            cache = None if previous.summed is None else previous.summed.kept
        omega = data.weight
        summed = None
        if not partition.is_singletons:  # the full problem sums no Gram (LazyGram)
            summed = summed_kernels(kernel, data.X, partition, cache, omega)
        weight = partition.weights(omega)
        diag = kernel.diag(data.X)
        return DomainAggregate(
            kernel=kernel,
            gram_sum=None if summed is None else summed.gram_sum,
            weight=weight,
            diag_mean=partition.sums(diag if omega is None else diag * omega) / weight,
            partition=partition,
            X=data.X,
            total=data.total_weight,
            row_weight=omega,
            summed=summed,
        )

    def train_scores(self, agg: DomainAggregate, a: NDArray[np.float64]) -> dict[str, Any]:
        """Σ_k (a_k/W_k) P_ik on every entry, when the kernel sums are kept."""
        scores = None if agg.summed is None else agg.summed.scores(a / agg.weight)
        return {} if scores is None else {"train_expansion": scores, "train_X": agg.X}

    def expansion(
        self, agg: DomainAggregate, a: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The entries of the clusters with a_k > 0 and their coefficients a_k ω_i/W_k."""
        labels = agg.partition.labels
        support = (a > 0)[labels]
        coef = (a / agg.weight)[labels[support]]
        if agg.row_weight is not None:
            coef = coef * agg.row_weight[support]
        return agg.X[support], coef

    @staticmethod
    def warm_start(agg: DomainAggregate, previous: Previous | None) -> NDArray | None:
        """The previous a_k split over the children in proportion to their weights W_k (the
        boxes scale with W_k, so this stays feasible)."""
        parent = agg.partition.parent
        if previous is None or parent is None:
            return None
        old = previous.solution.a
        if parent.max() >= old.size:
            return None
        old_sizes = np.bincount(parent, weights=agg.weight, minlength=old.size)
        return old[parent] * agg.weight / old_sizes[parent]

    @staticmethod
    def quad_error(domain: Domain, n: int, kmax: float, entry: float) -> float:
        """Rounding bound of a quadratic form Σ c_i c_j K_ij over up to n² terms, each entry
        within ``entry`` of K_ij."""
        return quadratic_form_error(float(np.abs(domain.coef).sum()), n, kmax, entry)

    def expansion_error(self, domain: Domain, kmax: float, m: int, n: int, entry: float) -> float:
        """Rounding bound of one value Σ_j c_j K(s_j, x) (the sums in either order: by support
        vector, or by cluster sums of at most n terms; each entry within ``entry``)."""
        terms = domain.support_vectors.shape[0] + n
        mass = float(np.abs(domain.coef).sum())
        return expansion_error(terms, m, mass, kmax, entry, 1.0)

    @staticmethod
    def entry_point(
        data: FeatureData,
        solution: DomainSolution,
        dual: DualPoint | None,
        scale: float,
        relative: float,
        box_text: str,
    ) -> tuple[NDArray[np.float64], float, str]:
        """The per-entry dual α of a certificate in the box scale·ω_i (``scale`` rounded below
        the exact one, within ``relative``), Σ|Δα_i| from the point whose ‖w‖² the solution
        holds, and where α comes from: the aggregated dual spread over the entries (clipped;
        the clipping and the spread's rounding, float W_k with row weights, are what moved) or
        the given point (``aidopt verify``; refused beyond its box's rounding)."""
        top = dual_box(scale, data.weight, data.n)
        if dual is None:
            spread = solution.entry_duals(data.weight)
            alpha = np.minimum(spread, top)
            spread_error = quotient_relative_error(2, data.weight_sums_error)
            where = "the aggregated dual spread over the entries, on all data"
            return alpha, moved_mass(spread, alpha, spread_error), where
        given = dual.expand(data.n, None)
        alpha = clipped_into(given, top, relative, box_text)
        return alpha, moved_mass(given, alpha, 0.0), "the given dual point"

    def solution_from_dict(
        self, data: FeatureData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> DomainSolution:
        """The domain of the certificate's dual point α̂ (the support entries' coefficients)."""
        if dual is None:
            raise DataError("A kernel one-class solution is its dual expansion: the certificate's")
        alpha = dual.expand(data.n, None)
        support = np.flatnonzero(alpha)
        sv, coef = data.X[support], alpha[support]
        kernel = self.kernel_for(data.m)
        norm_sq = float(coef @ kernel_times(kernel, sv, sv, coef))
        radius_sq = payload.get("radius_sq")
        labels = np.arange(data.n)
        return self.solution_of(sv, coef, kernel, norm_sq, alpha, labels, radius_sq)

    def solution_of(
        self, sv, coef, kernel, norm_sq, a, labels, radius_sq, **scores
    ) -> DomainSolution:
        """The model's solution for an expansion (each model says what its f is)."""
        raise NotImplementedError
