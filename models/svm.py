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
kept as free variables v and ᾱ scaled to β = ᾱ/(M|C_k|)
(:func:`aidopt.solvers.svm_dual.scaled_dual`),

    min  ½‖v‖² − Σ_k M|C_k| β_k   s.t.  v − Σ_k β_k M|C_k| ȳ_k x̄_k = 0,  Σ_k β_k M|C_k| ȳ_k = 0,
         0 ≤ β_k ≤ 1.

From the returned ᾱ the model makes an exactly feasible one (clip to the box, rescale one class
so that Σ ᾱ_k ȳ_k = 0), takes w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact minimiser b̄ of (9) over b for
that w̄, and reports D(ᾱ) = Σ ᾱ_k − ½‖w̄‖² (weak duality: D(ᾱ) ≤ F^t ≤ E*).

Structure: (9) is the weighted soft-margin SVM on the centroids x̄_k with weights |C_k| and
C = M (:class:`aidopt.solvers.structures.WeightedSVM`), what libsvm solves exactly (its dual ᾱ and b̄
come back) and liblinear approximately (it penalises ½b² too: another problem, no bound).

Evaluation and certificate (:mod:`aidopt.core.hinge`, the framework's): E^t with its rounding
bound, and weak duality of (6) at the aggregated dual spread over the entries, or at the dual
complementary slackness gives the primal (the better of the two).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import by_name
from aidopt.common.options import Option
from aidopt.core.clustering import (
    ScoreBins,
    n_clusters_for_rate,
    per_class_partition,
    quantile_edges,
    stratified_sample,
)
from aidopt.core.contract import Previous
from aidopt.core.hinge import (
    HingeAggregate,
    HingeFit,
    HingeModel,
    optimal_intercept,
    training_accuracy,
)
from aidopt.core.partition import Partition
from aidopt.core.sample_fits import linear_svm_fit
from aidopt.data.containers import BinaryData
from aidopt.data.svm import GENERATOR
from aidopt.models.svm_kernel import KernelSVMModel
from aidopt.numerics.kernels import kernel_flag_options
from aidopt.solvers.algebra import Problem, sum_squares
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import MatrixProgram
from aidopt.solvers.svm_dual import dual_alpha, scaled_dual

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

SVMData = BinaryData  # the data an SVM takes: X (n × m), labels mapped to ±1
_SAMPLE_MIN = 1000  # rows of the sample that places the initial hyperplane

SVMAggregate = HingeAggregate  # centroids x̄_k, labels ȳ_k, weights |C_k| (W_k with weights)


class SVMSolution(HingeFit):
    """A hyperplane (w, b) and, when the backend gives it, the cluster duals ᾱ of (9) on the
    clusters ``partition`` (what :meth:`entry_duals` maps ᾱ to the entries with)."""


def _dual_value(agg: SVMAggregate, alpha: NDArray[np.float64]) -> tuple[float, NDArray]:
    """D(α) = Σ α_k − ½‖w(α)‖², w(α) = Σ α_k ȳ_k x̄_k; returns (D, w)."""
    w = (alpha * agg.label) @ agg.xbar
    return float(alpha.sum() - 0.5 * (w @ w)), w


# ---------------------------------------------------------------------- the model
class SVMModel(HingeModel):
    """Linear SVM (7)/(9): min ½‖w‖² + M Σ_i max{0, 1 − y_i(w x_i + b)}.

    ``M`` is the penalty (libsvm's C; the paper's experiments use M = 0.1). On the command line
    ``--kernel rbf|poly`` (with ``--gamma``, ``--degree``, ``--coef0``) chooses the kernel SVM
    of Appendix B instead (:class:`aidopt.models.svm_kernel.KernelSVMModel`).
    """

    name: ClassVar[str] = "svm"
    data_type: ClassVar[type] = BinaryData
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
    dual_title: ClassVar[str] = "dual (6)"
    solution_type: ClassVar[type[HingeFit]] = SVMSolution

    def unit_cost(self, total: float, total_error: float) -> tuple[float, float]:
        """M, exact."""
        return self.M, 0.0

    # ------------------------------------------------------------------ clustering
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

    def matrix_program(self, agg: SVMAggregate, previous: Previous | None = None) -> MatrixProgram:
        """The dual of (9), scaled (:func:`scaled_dual`)."""
        return scaled_dual(agg.xbar, agg.label, self.M * agg.weight).program()

    def solution_from_program(self, result: SolveResult, agg: SVMAggregate) -> HingeFit:
        return self._dual_solution(agg, self._program_alpha(result, agg))

    def program_bound(self, result: SolveResult, agg: SVMAggregate) -> float | None:
        """D(ᾱ) at the repaired dual point: a lower bound on F^t by weak duality."""
        return _dual_value(agg, self._program_alpha(result, agg))[0]

    def _program_alpha(self, result: SolveResult, agg: SVMAggregate) -> NDArray[np.float64]:
        upper = self.M * agg.weight
        return dual_alpha(scaled_dual(agg.xbar, agg.label, upper).values(result), agg.label, upper)

    def _dual_solution(self, agg: SVMAggregate, alpha: NDArray[np.float64]) -> HingeFit:
        """w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact best b̄ of (9) for it."""
        _, w = _dual_value(agg, alpha)
        b = optimal_intercept(agg.xbar @ w, agg.label, self.M * agg.weight)
        return self._fit(agg, w, b, alpha)

    def solution_to_dict(
        self, data: SVMData, solution: HingeFit, row_sums: NDArray | None = None
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

    def solution_row_sums(self, rows: SVMData, solution: HingeFit) -> NDArray[np.int64]:
        """(entries with sign(f(x_i)) = y_i, entries) of a block: the training accuracy as sums
        over rows (:func:`training_accuracy`)."""
        correct = np.where(solution.decision_function(rows.X) > 0, 1.0, -1.0) == rows.y
        return np.array([int(correct.sum()), rows.n], dtype=np.int64)

    # ------------------------------------------------------------------ C^0 on rows in blocks
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


MODEL = SVMModel
