"""Linear support vector machine under AID (Park & Klabjan 2016, §3.2).

Original primal (7), labels y_i ∈ {−1, +1}, penalty M (the C of libsvm):

    E* = min_{w,b,ξ}  ½‖w‖² + M Σ_{i∈I} ξ_i
         s.t.  y_i(w x_i + b) ≥ 1 − ξ_i,  ξ_i ≥ 0                               i ∈ I

Clusters never mix labels (each class is clustered on its own). Aggregated data: x̄_k = mean of
C_k, ȳ_k = the common label, weight |C_k|. Aggregated problem (9), a weighted SVM:

    F^t = min_{w,b,ξ}  ½‖w‖² + M Σ_k |C_k| ξ_k
          s.t.  ȳ_k(w x̄_k + b) ≥ 1 − ξ_k,  ξ_k ≥ 0                              k ∈ K^t

Upper bound (10): E^t = ½‖w̄‖² + M Σ_i max{0, 1 − y_i(w̄ x_i + b̄)}.
Declustering (Prop. 3): regime_i = 1 if 1 − y_i(w̄ x_i + b̄) > 0 else 0; every cluster pure ⇒
(w̄, b̄) optimal for (7) and E^t = F^t. Lower bound (Prop. 4): F^{t−1} ≤ F^t ≤ E*.
Dual recovery (§3.2): α̂_i = ᾱ_k / |C_k| for i ∈ C_k is feasible for the dual (6), gives the
same w, and is dual optimal when every cluster is pure (:meth:`SVMSolution.entry_duals`).

Declared once (``declare``): (9) itself, also the Pyomo model. Matrix form: its dual with w
kept as free variables v and ᾱ scaled to β = ᾱ/(M|C_k|) (``svm_parts.scaled_dual``),

    min  ½‖v‖² − Σ_k M|C_k| β_k   s.t.  v − Σ_k β_k M|C_k| ȳ_k x̄_k = 0,  Σ_k β_k M|C_k| ȳ_k = 0,
         0 ≤ β_k ≤ 1.

From the returned ᾱ the model makes an exactly feasible one (clip to the box, rescale one class
so that Σ ᾱ_k ȳ_k = 0), takes w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact minimiser b̄ of (9) over b for
that w̄, and reports D(ᾱ) = Σ ᾱ_k − ½‖w̄‖² (weak duality: D(ᾱ) ≤ F^t ≤ E*).

Structure: (9) is the weighted soft-margin SVM on the centroids x̄_k with weights |C_k| and
C = M (:class:`aidopt.solvers.structures.WeightedSVM`), what libsvm solves exactly (its dual ᾱ and b̄
come back) and liblinear approximately (it penalises ½b² too: another problem, no bound).

Certificate (``lower_bound``): weak duality of (6) at the aggregated dual spread over the
entries, or at the dual complementary slackness gives the primal (the better of the two).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.options import Option
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    best_with_dual,
    cluster_duals,
    plus_half_squared_norm,
    repair_equalities,
)
from aidopt.core.clustering import ScoreBins, n_clusters_for_rate, quantile_edges
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.core.sample_fits import linear_svm_fit
from aidopt.data.containers import BinaryData
from aidopt.data.svm import GENERATOR
from aidopt.models.svm_kernel import KernelSVMModel
from aidopt.models.svm_parts import (
    SVMData,
    dual_alpha,
    optimal_intercept,
    per_class_partition,
    scaled_dual,
    stratified_sample,
    training_accuracy,
)
from aidopt.numerics.kernels import kernel_flag_options
from aidopt.numerics.rounding import (
    accurate_weighted_sum,
    score_error,
    times,
    weighted_below,
)
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.structures import SVMFit, WeightedSVM, feasible_dual

__all__ = [
    "SVMAggregate",
    "SVMData",
    "SVMModel",
    "SVMSolution",
    "optimal_intercept",
    "per_class_partition",
    "stratified_sample",
    "training_accuracy",
]

_SAMPLE_MIN = 1000  # rows of the sample that places the initial hyperplane


# ---------------------------------------------------------------------- aggregate / solution
@dataclass(frozen=True, eq=False)
class SVMAggregate:
    """Aggregated data of (9): cluster sums of x, labels ȳ_k, weights |C_k|."""

    x_sum: NDArray[np.float64]  # (K, m)  Σ_{i∈C_k} x_i
    label: NDArray[np.float64]  # (K,)    ȳ_k ∈ {−1, +1}
    weight: NDArray[np.float64]  # (K,)   |C_k|
    partition: Partition

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]


@dataclass(frozen=True, eq=False)
class SVMSolution:
    """A hyperplane (w, b) and, when the backend gives it, the cluster duals ᾱ of (9) on the
    clusters ``partition`` (what :meth:`entry_duals` maps ᾱ to the entries with).
    """

    w: NDArray[np.float64]
    b: float
    alpha: NDArray[np.float64] | None = None
    partition: Any = field(default=None, repr=False, compare=False)

    @property
    def cluster_labels(self) -> NDArray[np.int64] | None:
        """The cluster of every entry (None without a partition, or with its labels kept beside
        blocks of rows)."""
        return getattr(self.partition, "labels", None)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        from aidopt.common.validation import check_predict_input

        rows = check_predict_input(X, self.w.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(rows @ self.w).ravel() + self.b

    def entry_duals(self, weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k w_i / W_k for every entry (w: the data's row weights, None: |C_k|;
        feasible for (6); optimal when certified)."""
        if self.alpha is None:
            raise ValueError("this solution carries no dual values (its solver gave none)")
        if self.cluster_labels is None:
            raise ValueError("the entries' clusters are not in memory (rows in blocks)")
        return cluster_duals(self.cluster_labels, self.alpha, weight)


def _dual_value(agg: SVMAggregate, alpha: NDArray[np.float64]) -> tuple[float, NDArray]:
    """D(α) = Σ α_k − ½‖w(α)‖², w(α) = Σ α_k ȳ_k x̄_k; returns (D, w)."""
    w = (alpha * agg.label) @ agg.xbar
    return float(alpha.sum() - 0.5 * (w @ w)), w


# ---------------------------------------------------------------------- the model
class SVMModel(BlockPass, AggregatedModel[SVMData, SVMAggregate, SVMSolution]):
    """Linear SVM (7)/(9): min ½‖w‖² + M Σ_i max{0, 1 − y_i(w x_i + b)}.

    ``M`` is the penalty (libsvm's C; the paper's experiments use M = 0.1). On the command line
    ``--kernel rbf|poly`` (with ``--gamma``, ``--degree``, ``--coef0``) chooses the kernel SVM
    of Appendix B instead (:class:`aidopt.models.svm_kernel.KernelSVMModel`).
    """

    name: ClassVar[str] = "svm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = BinaryData
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svm.md)
    describes_by_row_sums: ClassVar[bool] = True
    supports_weights: ClassVar[bool] = True
    citation: ClassVar[str] = "Park & Klabjan (2016), §3.2, problems (7), (9), (10), Props. 3-4"
    generator: ClassVar[Any] = GENERATOR
    options: ClassVar[tuple[Option, ...]] = (
        Option("M", 0.1, "penalty M of (7) (libsvm's C)", low=0.0),
    )
    M: float
    cli_extras: ClassVar[tuple[Option, ...]] = kernel_flag_options(
        "linear: the primal (9); rbf/poly: the aggregated dual (21) of Appendix B"
    )
    kernel_variant: ClassVar[Any] = KernelSVMModel

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: SVMData) -> float:
        """r^0 = max{1.1m/n, 0.0001} (paper §4)."""
        return min(1.0, max(1.1 * data.m / data.n, 0.0001))

    def initial_partition(self, data: SVMData, rate: float, rng: np.random.Generator) -> Partition:
        """Paper §4: hyperplane from a small sample, one 1-D k-means pass per class."""
        rows = stratified_sample(data.y, max(_SAMPLE_MIN, 20 * data.m), rng)
        w0, b0 = self._sample_hyperplane(data.X[rows], data.y[rows], data.n / rows.size)
        return per_class_partition(data.y, data.X @ w0 + b0, rate, rng)

    def _sample_hyperplane(self, X, y, scale: float) -> tuple[NDArray, float]:
        """A hinge-loss SVM on the sample with C = M·n/|sample| (each row stands for
        n/|sample|): :func:`aidopt.core.sample_fits.linear_svm_fit` (exact; the class-mean
        direction when it is stopped)."""
        return linear_svm_fit(X, y, self.M * scale)

    # ------------------------------------------------------------------ aggregated problem (9)
    def declare(self, agg: SVMAggregate) -> Problem:
        """(9): min ½‖w‖² + M Σ_k |C_k| ξ_k  s.t.  ȳ_k(w·x̄_k + b) ≥ 1 − ξ_k,  ξ_k ≥ 0."""
        K, m = agg.x_sum.shape
        p = Problem("SVM aggregated problem (9)")
        w, b, xi = p.variables("w", m), p.variables("b", 1), p.variables("xi", K, lower=0.0)
        p.minimize(0.5 * sum_squares(w) + self.M * agg.weight @ xi)
        p.subject_to("margin", agg.label * (agg.xbar @ w + b) >= 1.0 - xi)
        return p

    def read(self, values: Values, agg: SVMAggregate) -> SVMSolution:
        """(w̄, b̄) and the margin rows' multipliers ᾱ_k made exactly feasible (None when the
        solver gave none)."""
        alpha = values.dual("margin")
        if alpha is not None:
            alpha = feasible_dual(alpha, agg.label, self.M * agg.weight)
        return SVMSolution(values["w"].copy(), float(values["b"][0]), alpha, agg.partition)

    def matrix_program(self, agg: SVMAggregate, previous: Previous | None = None) -> MatrixProgram:
        """The dual of (9), scaled (:func:`scaled_dual`)."""
        return scaled_dual(agg.xbar, agg.label, self.M * agg.weight).program()

    def solution_from_program(self, result: SolveResult, agg: SVMAggregate) -> SVMSolution:
        return self._dual_solution(agg, self._program_alpha(result, agg))

    def program_bound(self, result: SolveResult, agg: SVMAggregate) -> float | None:
        """D(ᾱ) at the repaired dual point: a lower bound on F^t by weak duality."""
        return _dual_value(agg, self._program_alpha(result, agg))[0]

    def _program_alpha(self, result: SolveResult, agg: SVMAggregate) -> NDArray[np.float64]:
        upper = self.M * agg.weight
        return dual_alpha(scaled_dual(agg.xbar, agg.label, upper).values(result), agg.label, upper)

    def _dual_solution(self, agg: SVMAggregate, alpha: NDArray[np.float64]) -> SVMSolution:
        """w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact best b̄ of (9) for it."""
        _, w = _dual_value(agg, alpha)
        b = optimal_intercept(agg.xbar @ w, agg.label, self.M * agg.weight)
        return SVMSolution(w=w, b=b, alpha=alpha, partition=agg.partition)

    # ------------------------------------------------------------------ structure
    def to_structure(self, kind: type, agg: SVMAggregate, previous: Previous | None) -> WeightedSVM:
        """(9) as the weighted SVM on the centroids x̄_k, weights |C_k|, C = M, warm-started at
        the previous iteration's (w̄, b̄) (split clusters keep their side of its hyperplane)."""
        start = None if previous is None else (previous.solution.w, previous.solution.b)
        return WeightedSVM(y=agg.label, weight=agg.weight, C=self.M, features=agg.xbar, start=start)

    def from_structure(self, kind: type, answer: SVMFit, agg: SVMAggregate) -> SVMSolution:
        """(w, b) and, when the solver gives it (one that solves (9) exactly), the dual ᾱ."""
        assert answer.w is not None, "a linear SVM's answer carries w"
        if answer.alpha is None:
            return SVMSolution(w=answer.w, b=answer.b)
        return SVMSolution(
            w=answer.w,
            b=answer.b,
            alpha=answer.alpha,
            partition=agg.partition,
        )

    # ------------------------------------------------------------------ evaluation (10)
    def evaluate(
        self, data: SVMData, solution: SVMSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """E^t = ½‖w‖² + M Σ_i ω_i max{0, 1 − y_i(w x_i + b)} (10) (row weights ω_i, 1
        unweighted), with a bound on its rounding error; regime_i = [1 − y_i(w x_i + b) > 0]
        (Prop. 3)."""
        return self.evaluate_rows(data, solution, 0, data)

    def evaluate_rows(
        self, rows: SVMData, solution: SVMSolution, offset: int, whole: Any
    ) -> Evaluation:
        """:meth:`evaluate` on the block ``rows`` = entries offset, offset + 1, ... of ``whole``:
        its share M Σ ω_i hinge_i of E^t (plus ½‖w‖² in the block at offset 0), the bound on
        its rounding error, its regimes."""
        w, b = solution.w, solution.b
        violation = 1.0 - rows.y * (rows.X @ w + b)
        hinge, hinge_error = accurate_weighted_sum(np.maximum(violation, 0.0), rows.weight)
        hinge_error += score_error(rows.X, w, abs(b) + 1.0, rows.weight)  # 1 − y_i(x_i·w + b)
        objective, error = times(self.M, hinge, hinge_error)
        if offset == 0:
            objective, error = plus_half_squared_norm(objective, error, float(w @ w), rows.m)
        return Evaluation(objective, (violation > 0).astype(np.int64), None, error)

    def solution_to_dict(
        self, data: SVMData, solution: SVMSolution, row_sums: NDArray | None = None
    ) -> dict[str, Any]:
        """(w, b), the training accuracy and the label mapping; ``row_sums``: the sums of
        :meth:`solution_row_sums` over all rows, when they are in blocks (``data``: their
        header)."""
        if row_sums is None:
            row_sums = self.solution_row_sums(data, solution)
        return {
            "w": by_name(data.feature_names, solution.w),
            "b": float(solution.b),
            "training_accuracy": float(row_sums[0] / row_sums[1]),
            "labels": data.label_mapping(),
        }

    def solution_row_sums(self, rows: SVMData, solution: SVMSolution) -> NDArray[np.int64]:
        """(entries with sign(f(x_i)) = y_i, entries) of a block: the training accuracy as sums
        over rows (:func:`training_accuracy`)."""
        correct = np.where(solution.decision_function(rows.X) > 0, 1.0, -1.0) == rows.y
        return np.array([int(correct.sum()), rows.n], dtype=np.int64)

    def solution_from_dict(
        self, data: SVMData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> SVMSolution:
        return SVMSolution(
            from_names(payload.get("w"), data.feature_names, "weight"), float(payload["b"])
        )

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: SVMData,
        solution: SVMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality on (6): for 0 ≤ α_i ≤ Mω_i (row weights ω, 1 unweighted) and any (w, b),
        (7) ≥ Σα_i − ½‖Σα_i y_i x_i‖² − b Σα_i y_i. α is a cluster dual spread over the
        entries (α_i = a_k ω_i with a_k = ᾱ_k/W_k, W_k = Σ_{C_k} ω_i; ᾱ_k/|C_k| unweighted,
        §3.2; :meth:`bound_candidates`); what rounding leaves of ρ = Σα_i y_i costs |b*||ρ| with
        |b*| ≤ 1 + ‖w*‖ max_i‖x_i‖, ‖w*‖ ≤ √(2E) (b* lies between the breakpoints
        y_i − w*·x_i). No duals (liblinear): no bound."""
        if dual is not None:
            a = dual.expand(data.n, evaluation.regime)
            if a.size and (a.min() < 0.0 or a.max() > self.M):
                raise ValueError(f"the dual point leaves its box [0, {self.M:g}]")
            bound = self._bound_at(data, a, upper, "the given dual point")
            return best_with_dual([(bound, partial(self._dual_point, a, evaluation))])
        if solution.alpha is None:
            return None
        dual_point = partial(self._dual_point, evaluation=evaluation)
        return self.bound_on_rows(data, solution, upper, aggregate, dual_point)

    def bound_candidates(
        self, agg: SVMAggregate, solution: SVMSolution
    ) -> tuple[list[tuple[NDArray[np.float64], str]], None]:
        """The cluster duals per unit weight a_k ∈ [0, M] to spread over the entries, each with
        what it is: the aggregated dual ᾱ and the dual complementary slackness gives (w̄, b̄),
        each as a_k = ᾱ_k/W_k, values within 1e-12·M of a bound snapped to it and
        Σ_k a_k W_k ȳ_k = 0 (= Σ_i α_i y_i) restored on the clusters strictly inside the box."""
        if solution.alpha is None or solution.alpha.shape != agg.weight.shape:
            return [], None
        candidates = (
            (solution.alpha, "the aggregated dual"),
            (
                self._alpha_from_primal(agg, solution),
                "the dual that complementary slackness gives the primal",
            ),
        )
        balance = (agg.weight * agg.label)[None, :]
        out = []
        for alpha, what in candidates:
            a = np.clip(alpha / agg.weight, 0.0, self.M)
            a[a <= 1e-12 * self.M] = 0.0
            a[a >= (1 - 1e-12) * self.M] = self.M
            out.append((repair_equalities(balance, np.zeros(1), a, 0.0, self.M), what))
        return out, None

    def _alpha_from_primal(self, agg: SVMAggregate, solution: SVMSolution) -> NDArray[np.float64]:
        """ᾱ_k from complementary slackness at (w, b): M W_k where the cluster's centroid
        violates the margin, 0 where it is outside, free on the margin; the free ones make
        Σᾱ_k ȳ_k = 0 and Σᾱ_k ȳ_k x̄_k = w hold as nearly as the box allows (least squares,
        the balance row last: it is the one feasibility needs)."""
        xbar, ybar = agg.xbar, agg.label
        violation = 1.0 - ybar * (xbar @ solution.w + solution.b)
        tol = 1e-9 * (np.abs(xbar) @ np.abs(solution.w) + abs(solution.b) + 1.0)
        upper = self.M * agg.weight
        alpha = np.where(violation > 0, upper, 0.0)
        ties = np.abs(violation) <= tol
        alpha[ties] = 0.5 * upper[ties]
        A = np.vstack([ybar, (ybar[:, None] * xbar).T])
        target = np.r_[0.0, solution.w]
        alpha = repair_equalities(A, target, alpha, 0.0, upper, free=ties)
        return repair_equalities(A[:1], target[:1], alpha, 0.0, upper, free=ties)

    def bound_terms(self, rows: SVMData, a: NDArray[np.float64]) -> DualSums:
        """The row sums of the bound of :meth:`lower_bound` at α = a∘ω on the block ``rows``
        (a ∈ [0, M] per unit weight, one per row; α = a unweighted; weighted, fl(a_i ω_i) is
        shrunk by 1 − 2ε so that α_i ≤ M ω_i holds in exact arithmetic): Σα_i, Σα_i y_i x_i
        and Σα_i y_i (:func:`~aidopt.core.dual_sums.dual_sums`)."""
        alpha = weighted_below(a, rows.weight)
        ay = alpha * rows.y
        return dual_sums(rows.X, [(alpha, 0.0)], ay, self.M, ay, weight=rows.weight)

    def bound_from_terms(
        self,
        terms: DualSums,
        context: None,
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound:
        """D(α) = Σα_i − ½‖w(α)‖² minus every rounding allowance and |b*||ρ|, ρ = Σα_i y_i,
        |b*| ≤ 1 + √(2E)·max‖x_i‖ (see :meth:`lower_bound`)."""
        b_bound = 1.0 + np.sqrt(2.0 * max(upper, 0.0)) * terms.row_norm
        return terms.bound(f"dual (6) at {source}", offset_bound=b_bound)

    def _bound_at(self, data, a, upper, source) -> Bound:
        """The bound of :meth:`lower_bound` at α = a∘ω on all rows (its dual point not yet
        attached: :meth:`_dual_point`)."""
        terms = self.bound_terms(data, a)
        return self.bound_from_terms(terms, None, 0, upper, source, data.feature_names)

    def _dual_point(self, a: NDArray[np.float64], evaluation: Evaluation) -> DualPoint:
        """a as a dual point (compact: the entries not at their regime's bound 0 or M)."""
        return DualPoint.compress(a, evaluation.regime, (0.0, self.M))

    # ------------------------------------------------------------------ the chunked data pass
    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks."""
        return min(whole.n, max(_SAMPLE_MIN, 20 * whole.m))

    def initial_rule(self, sample: SVMData, whole: Any, rate: float) -> ScoreBins:
        """C^0 without clustering every row at once: the sample hyperplane of
        :meth:`initial_partition`, and per class the quantiles of its scores on the sample as
        the edges of ⌈r^0 n⌉ clusters shared in proportion to the classes (at least one each;
        a class the sample missed is one cluster)."""
        n = whole.n
        positive = sample.y > 0
        if positive.all() or not positive.any():
            w0, b0 = np.zeros(whole.m), 0.0
        else:
            w0, b0 = self._sample_hyperplane(sample.X, sample.y, n / sample.n)
        score = sample.X @ w0 + b0
        total = n_clusters_for_rate(rate, n, minimum=2)
        edges = tuple(
            quantile_edges(members, max(1, round(total * members.size / sample.n)))
            for members in (score[~positive], score[positive])
        )
        return ScoreBins(w0, edges, b0)

    def initial_labels(self, rows: SVMData, offset: int, rule: ScoreBins) -> NDArray[np.int64]:
        """Cluster labels of a block under ``rule``: its class's score bin (labels of the +1
        class after those of the −1 class)."""
        return rule.labels(rows.X, rows.y > 0)

    def cluster_columns(self, rows: SVMData) -> list[NDArray]:
        """(1, ω_i, ω_i x_i, y_i) per row: their cluster sums are the aggregated data (ω_i = 1
        without row weights: the row count again)."""
        omega = ROW_COUNT if rows.weight is None else rows.weight
        return [ROW_COUNT, omega, rows.weighted_X, rows.y]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> SVMAggregate:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`."""
        label = sums[:, -1] / sums[:, 0]
        assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
        return SVMAggregate(
            x_sum=np.ascontiguousarray(sums[:, 2:-1]),
            label=label,
            weight=sums[:, 1].copy(),
            partition=partition,
        )


MODEL = SVMModel
