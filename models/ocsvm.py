"""Linear large-margin one-class SVM (LM-OCSVM) under AID.

Pham, Le & Dang, "Scalable Support Vector Clustering Using Budget", eq. (1), with the linear
kernel: the domain of novelty is the half-space w·x ≥ 1 (ρ = 1, no bias). For X (N × m):

    J* = min_w  ½‖w‖² + (C/N) Σ_i max{0, 1 − w·x_i}                                        (1)

Aggregated problem (Park & Klabjan's recipe; the seed's digest §6), centroids x̄_k, weights |C_k|:

    F^t = min_{w,ξ}  ½‖w‖² + (C/N) Σ_k |C_k| ξ_k
          s.t.       w·x̄_k ≥ 1 − ξ_k,  ξ_k ≥ 0                                   k ∈ K^t

Jensen: Σ_{i∈C_k} max{0, 1 − w·x_i} ≥ |C_k| max{0, 1 − w·x̄_k}, so F^t ≤ J*. Regime of entry i:
[1 − w·x_i > 0]; every cluster pure ⇒ the aggregated optimum is optimal for (1).
Dual of (1): max Σ_i α_i − ½‖Σ_i α_i x_i‖², 0 ≤ α_i ≤ C/N — no equality constraint (there is
no bias), so the aggregated dual a_k spread over the entries, α_i = a_k/|C_k|, is feasible as it
is, and its dual value on all data is the certificate's lower bound.

Row weights ω_i > 0 (row i's hinge counts ω_i times; ``supports_weights``): N = Σ ω_i, the
centroids are weighted means with weights W_k = Σ_{C_k} ω_i, the box of α_i is [0, Cω_i/N] and
the spread α_i = a_k ω_i/W_k; integer weights give the problem with rows repeated.

Evaluation and certificate (:mod:`aidopt.core.hinge`, the framework's, which also keeps the
scale C/N of a dual box below the exact one when N is a rounded sum of weights).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import by_name
from aidopt.common.options import Option
from aidopt.core.clustering import ScoreBins, kmeans_one_pass, n_clusters_for_rate, quantile_edges
from aidopt.core.hinge import HingeAggregate, HingeFit, HingeModel
from aidopt.core.partition import Partition
from aidopt.data.containers import FeatureData
from aidopt.data.one_class import BLOBS
from aidopt.models.ocsvm_kernel import KernelOneClassModel
from aidopt.numerics.kernels import kernel_flag_options
from aidopt.numerics.rounding import ratio
from aidopt.solvers.algebra import Problem, sum_squares
from aidopt.solvers.structures import NO_INTERCEPT

_INSIDE_TOL = 1e-8  # a row with w·x_i ≥ 1 − this counts as inside the domain (≈ √ε)


class OneClassSVMModel(HingeModel):
    """Linear large-margin one-class SVM (1): min ½‖w‖² + (C/N) Σ max{0, 1 − w·x_i}."""

    name: ClassVar[str] = "ocsvm"
    data_type: ClassVar[type] = FeatureData
    structure_traits: ClassVar[frozenset[str]] = frozenset({NO_INTERCEPT})
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svc.md)
    citation: ClassVar[str] = (
        "Pham, Le & Dang, Scalable Support Vector Clustering Using Budget, (1)"
    )
    options: ClassVar[tuple[Option, ...]] = (Option("C", 1.0, "penalty C of (1)", low=0.0),)
    C: float
    cli_extras: ClassVar[tuple[Option, ...]] = kernel_flag_options(
        "linear: the primal QP; rbf/poly: the aggregated dual (models/ocsvm_kernel.py)"
    )
    generator: ClassVar[Any] = BLOBS
    kernel_variant: ClassVar[Any] = KernelOneClassModel
    intercept: ClassVar[bool] = False
    labeled: ClassVar[bool] = False
    dual_title: ClassVar[str] = "dual of (1)"

    def unit_cost(self, total: float, total_error: float) -> tuple[float, float]:
        """C/N and its relative error (N within ``total_error`` of Σ ω_i)."""
        return ratio(self.C, total, total_error)

    def initial_partition(
        self, data: FeatureData, rate: float, rng: np.random.Generator
    ) -> Partition:
        """One k-means pass on the 1-D projections x_i·x̄ onto the mean direction."""
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, data.m + 1))
        return Partition.from_labels(kmeans_one_pass(data.X @ data.X.mean(axis=0), k, rng))

    # ------------------------------------------------------------------ the aggregated problem
    def declare(self, agg: HingeAggregate) -> Problem:
        """min ½‖w‖² + (C/N) Σ_k W_k ξ_k  s.t.  w·x̄_k ≥ 1 − ξ_k,  ξ_k ≥ 0."""
        K, m = agg.x_sum.shape
        p = Problem("LM-OCSVM aggregated problem")
        w, xi = p.variables("w", m), p.variables("xi", K, lower=0.0)
        p.minimize(0.5 * sum_squares(w) + self.C * agg.weight / agg.total @ xi)
        p.subject_to("margin", agg.xbar @ w + xi >= 1.0)
        return p

    # ------------------------------------------------------------------ the answer
    def solution_to_dict(
        self, data: FeatureData, solution: HingeFit, row_sums: NDArray | None = None
    ) -> dict[str, Any]:
        """w and the (weighted) share of the rows inside the domain w·x ≥ 1; ``row_sums``: the
        sums of :meth:`solution_row_sums` over all rows, when they are in blocks (``data``:
        their header)."""
        if row_sums is None:
            row_sums = self.solution_row_sums(data, solution)
        return {
            "w": by_name(data.feature_names, solution.w),
            "share_inside": float(row_sums[0] / row_sums[1]),
        }

    def solution_row_sums(self, rows: FeatureData, solution: HingeFit) -> NDArray[np.float64]:
        """(Σ ω_i over the rows inside the domain, Σ ω_i) of a block."""
        inside = rows.X @ solution.w >= 1.0 - _INSIDE_TOL
        w = rows.row_weights
        return np.array([math.fsum(w[inside]), math.fsum(w)])

    # ------------------------------------------------------------------ C^0 on rows in blocks
    def initial_rule(self, sample: FeatureData, whole: Any, rate: float) -> ScoreBins:
        """The projections of :meth:`initial_partition` onto the sample's mean direction,
        binned at their quantiles on the sample (⌈r^0 N⌉ bins) instead of k-means on all."""
        k = n_clusters_for_rate(rate, whole.n, minimum=min(whole.n, whole.m + 1))
        direction = sample.X.mean(axis=0)
        projection = sample.X @ direction
        return ScoreBins(direction, (quantile_edges(projection, k),))

    def initial_labels(self, rows: FeatureData, offset: int, rule: ScoreBins) -> NDArray[np.int64]:
        """Cluster labels of a block: the bin of its projection."""
        return rule.labels(rows.X)


MODEL = OneClassSVMModel
