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
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.options import Option
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    clipped_into,
    dual_box,
    plus_half_squared_norm,
    ratio_below,
    repair_equalities,
)
from aidopt.core.clustering import ScoreBins, kmeans_one_pass, n_clusters_for_rate, quantile_edges
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.partition import Partition
from aidopt.data.containers import FeatureData
from aidopt.data.one_class import BLOBS
from aidopt.models.ocsvm_kernel import KernelOneClassModel
from aidopt.numerics.kernels import kernel_flag_options
from aidopt.numerics.rounding import (
    accurate_weighted_sum,
    ratio,
    score_error,
    sum_relative_error,
    times,
    weighted_below,
)
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import NO_INTERCEPT, SVMFit, WeightedSVM

_INSIDE_TOL = 1e-8  # a row with w·x_i ≥ 1 − this counts as inside the domain (≈ √ε)


@dataclass(frozen=True, eq=False)
class Aggregate:
    """Cluster sums Σ_{i∈C_k} ω_i x_i, weights W_k = Σ_{C_k} ω_i (|C_k| without row weights),
    and N = Σ_i ω_i (``total_error``: a bound on the relative rounding error of N beyond the
    correctly rounded sum, 0 when N is that, as ``math.fsum`` gives it)."""

    x_sum: NDArray[np.float64]
    weight: NDArray[np.float64]
    partition: Any
    total: float
    total_error: float = 0.0

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]


@dataclass(frozen=True)
class Solution:
    """w, and the cluster duals a_k (None when the route gave none); N and its error bound
    from the aggregate it was solved on (what an evaluation on rows in blocks scales by)."""

    w: NDArray[np.float64]
    a: NDArray[np.float64] | None
    partition: Any
    total: float | None = None
    total_error: float = 0.0


class OneClassSVMModel(BlockPass, AggregatedModel[FeatureData, Aggregate, Solution]):
    """Linear large-margin one-class SVM (1): min ½‖w‖² + (C/N) Σ max{0, 1 − w·x_i}."""

    name: ClassVar[str] = "ocsvm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = FeatureData
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    structure_traits: ClassVar[frozenset[str]] = frozenset({NO_INTERCEPT})
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svc.md)
    describes_by_row_sums: ClassVar[bool] = True
    supports_weights: ClassVar[bool] = True
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

    def default_rate(self, data: FeatureData) -> float:
        """r^0 = max{1.1m/N, 1e-4}, the SVM's (§4)."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    def initial_partition(
        self, data: FeatureData, rate: float, rng: np.random.Generator
    ) -> Partition:
        """One k-means pass on the 1-D projections x_i·x̄ onto the mean direction."""
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, data.m + 1))
        return Partition.from_labels(kmeans_one_pass(data.X @ data.X.mean(axis=0), k, rng))

    def _cost(self, agg: Aggregate) -> NDArray[np.float64]:
        return self.C * agg.weight / agg.total  # (C/N) W_k

    # ------------------------------------------------------------------ the aggregated problem
    def declare(self, agg: Aggregate) -> Problem:
        """min ½‖w‖² + (C/N) Σ_k W_k ξ_k  s.t.  w·x̄_k ≥ 1 − ξ_k,  ξ_k ≥ 0."""
        K, m = agg.x_sum.shape
        p = Problem("LM-OCSVM aggregated problem")
        w, xi = p.variables("w", m), p.variables("xi", K, lower=0.0)
        p.minimize(0.5 * sum_squares(w) + self._cost(agg) @ xi)
        p.subject_to("margin", agg.xbar @ w + xi >= 1.0)
        return p

    def read(self, values: Values, agg: Aggregate) -> Solution:
        """w̄ and the cluster duals a_k ≥ 0 of the margin rows (None when the solver gave none)."""
        a = values.dual("margin")
        return Solution(values["w"].copy(), a, agg.partition, agg.total, agg.total_error)

    def to_structure(self, kind: type, agg: Aggregate, previous: Previous | None) -> WeightedSVM:
        """The aggregated problem as the weighted SVM on x̄_k with b fixed at 0 (ρ = 1), all
        labels +1, costs (C/N) W_k; warm-started at the previous w̄."""
        start = None if previous is None else (previous.solution.w, 0.0)
        K = agg.weight.size
        return WeightedSVM(
            y=np.ones(K),
            weight=agg.weight,
            C=self.C / agg.total,
            features=agg.xbar,
            start=start,
            intercept=False,
        )

    def from_structure(self, kind: type, answer: SVMFit, agg: Aggregate) -> Solution:
        """w̄ and the cluster duals a_k = α_k ∈ [0, (C/N) W_k]."""
        assert answer.w is not None, "a linear SVM's answer carries w"
        return Solution(answer.w, answer.alpha, agg.partition, agg.total, agg.total_error)

    # ------------------------------------------------------------------ evaluation, certificate
    def evaluate(
        self, data: FeatureData, solution: Solution, *, aggregate: Any = None
    ) -> Evaluation:
        """J(w) on all entries (hinges × ω_i, with its rounding bound); regime [1 − w·x_i > 0]."""
        return self.evaluate_rows(data, solution, 0, data)

    def evaluate_rows(
        self, rows: FeatureData, solution: Solution, offset: int, whole: Any
    ) -> Evaluation:
        """:meth:`evaluate` on the block ``rows`` of ``whole``: its share (C/N) Σ ω_i hinge_i
        of J(w) (plus ½‖w‖² in the block at offset 0) with its rounding bound, its regimes. N:
        of ``whole`` when it holds all rows, else of the aggregate the solution came from."""
        w = solution.w
        violation = 1.0 - rows.X @ w
        hinge, hinge_error = accurate_weighted_sum(np.maximum(violation, 0.0), rows.weight)
        if isinstance(whole, FeatureData):
            total, total_error = whole.total_weight, 0.0
        else:
            assert solution.total is not None, "a solution on blocks carries N"
            total, total_error = solution.total, solution.total_error
        hinge_error += score_error(rows.X, w, 1.0, rows.weight)  # 1 − x_i·w
        scale, scale_error = ratio(self.C, total, total_error)  # C/N
        objective, error = times(scale, hinge, hinge_error, scale_error)
        if offset == 0:
            objective, error = plus_half_squared_norm(objective, error, float(w @ w), rows.m)
        return Evaluation(objective, (violation > 0).astype(np.int64), None, error)

    def lower_bound(
        self,
        data: FeatureData,
        solution: Solution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality for (1) at α_i ∈ [0, Cω_i/N]: J* ≥ Σα_i − ½‖Σα_i x_i‖². α is the
        solver's a_k or the a_k complementary slackness gives w (free clusters on the margin
        solve Σ a_k x̄_k = w by least squares), spread as a_k ω_i/W_k
        (:meth:`bound_candidates`); the larger bound is kept.
        """
        if dual is not None:
            total_error = data.weight_sums_error
            scale, relative = ratio_below(self.C, data.total_weight, total_error)
            given = dual.expand(data.n, evaluation.regime)
            top = dual_box(scale, data.weight, data.n)
            alpha = clipped_into(given, top, relative, f"[0, {self.C:g} ω_i/N]")
            terms = self._terms(data, alpha, float(alpha.max(initial=0.0)))
            bound = self.bound_from_terms(
                terms, None, 0, upper, "the given dual point", list(data.feature_names)
            )
            return dataclasses.replace(bound, dual=self._dual_point(data, evaluation, alpha))

        def dual_point(s: NDArray[np.float64]) -> DualPoint:
            return self._dual_point(data, evaluation, self._alpha(data, s))

        return self.bound_on_rows(data, solution, upper, aggregate, dual_point)

    def bound_candidates(
        self, agg: Aggregate, solution: Solution
    ) -> tuple[list[tuple[NDArray[np.float64], str]], None]:
        """The cluster duals per unit weight s_k = a_k/W_k ∈ [0, C/N] to spread over the
        entries: the dual complementary slackness gives w̄ and the solver's, each with what it
        is (N's rounding error, when it has one, shrinks the box)."""
        cap, _ = ratio_below(self.C, agg.total, agg.total_error)
        candidates = [
            (self._a_from_primal(agg, solution), "the dual complementary slackness gives w̄")
        ]
        if solution.a is not None and solution.a.shape == agg.weight.shape:
            candidates.append((solution.a, "the solver's dual"))
        return [
            (np.clip(a / agg.weight, 0.0, cap), f"dual of (1) at {what}") for a, what in candidates
        ], None

    def _a_from_primal(self, agg: Aggregate, solution: Solution) -> NDArray[np.float64]:
        xbar = agg.xbar
        upper = self.C * agg.weight / agg.total
        violation = 1.0 - xbar @ solution.w
        ties = np.abs(violation) <= 1e-9 * (1.0 + np.abs(xbar) @ np.abs(solution.w))
        a = np.where(violation > 0, upper, 0.0)
        a[ties] = 0.5 * upper[ties]
        return repair_equalities(np.ascontiguousarray(xbar.T), solution.w, a, 0.0, upper, free=ties)

    @staticmethod
    def _alpha(rows: FeatureData, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """α_i = s_i ω_i, the product rounded down by 2ε (s unweighted)."""
        return weighted_below(s, rows.weight)

    def bound_terms(self, rows: FeatureData, s: NDArray[np.float64]) -> DualSums:
        """Σα_i and Σα_i x_i on the block ``rows`` at α = s∘ω (s per unit weight, one per row,
        in [0, C/N]), with their rounding bounds."""
        alpha = self._alpha(rows, s)
        return self._terms(rows, alpha, float(alpha.max(initial=0.0)))

    @staticmethod
    def _terms(rows: FeatureData, alpha: NDArray[np.float64], top: float) -> DualSums:
        return dual_sums(rows.X, [(alpha, 0.0)], alpha, top)

    def bound_from_terms(
        self,
        terms: DualSums,
        context: None,
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound:
        """Σα_i − ½‖Σα_i x_i‖² minus the rounding allowances (no offset: no residual)."""
        return terms.bound(source)

    def _dual_point(self, data, evaluation, alpha) -> DualPoint:
        """α as a dual point: compressed by regime onto 0, C/N without row weights."""
        if data.weight is None:
            return DualPoint.compress(alpha, evaluation.regime, (0.0, self.C / data.n))
        support = np.flatnonzero(alpha)
        return DualPoint(None, support.astype(np.int64), alpha[support])

    # ------------------------------------------------------------------ the chunked data pass
    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks."""
        return min(whole.n, max(1000, 20 * whole.m))

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

    def cluster_columns(self, rows: FeatureData) -> list[NDArray]:
        """(ω_i, [ω_i ≠ 1], ω_i x_i) per row: their cluster sums are the aggregated data (and
        tell whether N = Σ W_k is exact)."""
        return [rows.row_weights, rows.non_unit_weight, rows.weighted_X]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> Aggregate:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`: N = Σ_k W_k,
        exact for unit weights (integers), else within (n + 2)ε of Σ_i ω_i."""
        weight = sums[:, 0].copy()
        exact = not np.any(sums[:, 1])
        return Aggregate(
            np.ascontiguousarray(sums[:, 2:]),
            weight,
            partition,
            math.fsum(weight),
            0.0 if exact else sum_relative_error(partition.n),
        )

    def solution_to_dict(
        self, data: FeatureData, solution: Solution, row_sums: NDArray | None = None
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

    def solution_row_sums(self, rows: FeatureData, solution: Solution) -> NDArray[np.float64]:
        """(Σ ω_i over the rows inside the domain, Σ ω_i) of a block."""
        inside = rows.X @ solution.w >= 1.0 - _INSIDE_TOL
        w = rows.row_weights
        return np.array([math.fsum(w[inside]), math.fsum(w)])

    def solution_from_dict(
        self, data: FeatureData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> Solution:
        w = from_names(payload.get("w"), data.feature_names, "weight")
        return Solution(w, None, Partition.singletons(data.n))


MODEL = OneClassSVMModel
