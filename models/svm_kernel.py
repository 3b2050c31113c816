"""Kernel SVM under AID through the aggregated dual (Park & Klabjan 2016, Appendix B).

Original dual (6) with a Mercer kernel K(·,·) (linear, RBF or polynomial;
``aidopt.numerics.kernels``):

    max Σ_i α_i − ½ Σ_{i,j} K(x_i, x_j) α_i α_j y_i y_j
    s.t. Σ_i α_i y_i = 0,  0 ≤ α_i ≤ M                                           i ∈ I

Aggregated data: the feature-space centroids φ̄_k = mean_{i∈C_k} φ(x_i), never formed; only
their Gram matrix, the centroid Gram

    K̄_kq = ⟨φ̄_k, φ̄_q⟩ = (1 / (|C_k||C_q|)) Σ_{i∈C_k} Σ_{j∈C_q} K(x_i, x_j).

Aggregated dual (21):

    max Σ_k α_k − ½ Σ_{k,q} K̄_kq α_k α_q ȳ_k ȳ_q
    s.t. Σ_k α_k ȳ_k = 0,  0 ≤ α_k ≤ |C_k| M                                     k ∈ K^t

Its optimum equals F^t of the primal (20) = (9) with φ̄_k for x̄_k, so every result of §3.2
carries over (exactly, for any Mercer kernel: Prop. 3 and 4 hold in feature space).
Classifier on every entry: f(x_i) = Σ_k (ᾱ_k ȳ_k / |C_k|) Σ_{j∈C_k} K(x_j, x_i) + b̄;
E^t = ½‖w̄‖² + M Σ_i max{0, 1 − y_i f(x_i)} with ‖w̄‖² = Σ_{k,q} ᾱ_k ȳ_k K̄_kq ᾱ_q ȳ_q;
regime_i = 1 if 1 − y_i f(x_i) > 0 else 0 (the split rule of §3.2).

Costs (the centroid Gram by blocks, refreshed for split clusters only):
:mod:`aidopt.core.kernel_aggregate`; the decision values cost O(n · n_SV · m) per iteration,
n_SV = the entries of clusters with ᾱ_k > 0; ``--full`` on a matrix solver builds the n × n Gram
(8n² bytes; libsvm evaluates the kernel itself).

Forms. The Pyomo model is (21) itself. Matrix form: (21) factored, with K̄ = L Lᵀ
(eigendecomposition, eigenvalues below 1e-12·λ_max dropped), the dual with free v = Lᵀ(α∘ȳ) and
an identity Hessian (:func:`aidopt.solvers.svm_dual.scaled_dual`). Structure: the weighted SVM with
the Gram matrix K̄, weights |C_k| and C = M (:class:`aidopt.solvers.structures.WeightedSVM`, libsvm's
``kernel="precomputed"``). Whatever the solver returns, the model repairs α to exact
feasibility, reports D(ᾱ) with the exact K̄ as the lower bound, and takes b̄ as the exact
minimiser of (20) over b for the w̄ of ᾱ (libsvm: its own b̄).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.common.options import Option
from aidopt.core.certificate import Bound, DualPoint, cluster_duals, dual_box
from aidopt.core.clustering import per_class_partition, stratified_sample
from aidopt.core.contract import AggregatedModel, Evaluation, Previous
from aidopt.core.hinge import optimal_intercept, training_accuracy
from aidopt.core.kernel_aggregate import LazyGram, refreshed_gram_sums
from aidopt.core.partition import Partition
from aidopt.core.sample_fits import kernel_svm_scores
from aidopt.data.containers import BinaryData
from aidopt.exceptions import DataError
from aidopt.numerics.kernels import (
    Kernel,
    KernelParameters,
    expansion_error,
    kernel_model_options,
    kernel_times,
    quadratic_form_error,
)
from aidopt.numerics.rounding import (
    accurate_sum,
    accurate_weighted_sum,
    quotient_relative_error,
    sum_relative_error,
    total_weight_up,
)
from aidopt.solvers.algebra import Problem, Values
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import GRAM, SVMFit, WeightedSVM
from aidopt.solvers.svm_dual import dual_alpha, scaled_dual

__all__ = [
    "KernelSVMAggregate",
    "KernelSVMModel",
    "KernelSVMSolution",
]

_EIG_RTOL = 1e-12  # eigenvalues of K̄ below this × λ_max are dropped from the factor L
_SAMPLE_MIN = 500  # rows of the sample that places the initial kernel hyperplane
_SQUARE_SUMS_MAX = 1 << 25  # every cluster's sums S K (K × n) held at once up to this size


@dataclass(frozen=True, eq=False)
class KernelSVMAggregate(LazyGram):
    """Aggregated data of (21): centroid Gram sums, labels, weights, and the data it reads.

    Every cluster one entry (the full problem, ``singletons``): no Gram is summed; K̄ = K(X, X)
    is computed only for a route that asks for it (libsvm evaluates the kernel itself)."""

    gram_sum: NDArray[np.float64] | None  # (K, K) T_kq = Σ Σ K(x_i, x_j); None: singletons
    label: NDArray[np.float64]  # (K,) ȳ_k
    weight: NDArray[np.float64]  # (K,) W_k = Σ_{C_k} w_i (|C_k| without row weights)
    partition: Partition
    X: NDArray[np.float64]  # the original data (a reference, for the support vectors)
    kernel: Kernel
    row_weight: NDArray[np.float64] | None = None  # (n,) w_i, None: every row weighs 1


@dataclass(frozen=True, eq=False)
class KernelSVMSolution:
    """f(x) = Σ_j dual_coef_j K(sv_j, x) + intercept, and the cluster duals ᾱ of (21)."""

    alpha: NDArray[np.float64]
    cluster_labels: NDArray[np.int64]
    intercept: float
    support_vectors: NDArray[np.float64]
    dual_coef: NDArray[np.float64]  # ᾱ_k ȳ_k w_i / W_k for each entry i of a support cluster
    kernel: Kernel
    norm_sq: float  # ‖w̄‖² = (ᾱ∘ȳ)ᵀ K̄ (ᾱ∘ȳ)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        from aidopt.common.validation import check_predict_input

        sv = self.support_vectors
        X = check_predict_input(X, sv.shape[1], type(self).__name__)
        if sv.shape[0] == 0:
            return np.full(X.shape[0], self.intercept)
        return kernel_times(self.kernel, X, sv, self.dual_coef) + self.intercept

    def entry_duals(self, weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k w_i / W_k for every entry (w = 1, W_k = |C_k| without ``weight``):
        feasible for (6) with the box [0, M w_i]; optimal when certified."""
        return cluster_duals(self.cluster_labels, self.alpha, weight)


class KernelSVMModel(
    AggregatedModel[BinaryData, KernelSVMAggregate, KernelSVMSolution], KernelParameters
):
    """Kernel SVM (6)/(21) with penalty ``M``; kernel ∈ {linear, rbf, poly} (scikit-learn's
    conventions: rbf exp(−γ‖a−b‖²), poly (γ⟨a,b⟩ + coef0)^degree; γ = None means 1/m).

    Not registered on its own: ``aidopt solve svm --kernel rbf|poly`` reaches it through
    :meth:`aidopt.models.svm.SVMModel.from_options`, and results name it ``svm``.
    """

    name: ClassVar[str] = "svm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = BinaryData
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    structure_traits: ClassVar[frozenset[str]] = frozenset({GRAM})
    #: measured (docs/svm.md): the full problem on libsvm, which evaluates the kernel itself,
    #: then the certificate on all rows, is the fastest certified route at 10^4-5·10^4 rows;
    #: AID's centroid Gram re-sums ~n² kernel values per iteration
    default_solver: ClassVar[str] = "libsvm"
    full_problem_solvers: ClassVar[frozenset[str]] = frozenset({"libsvm"})
    supports_weights: ClassVar[bool] = True
    citation: ClassVar[str] = "Park & Klabjan (2016), Appendix B, problems (20)-(21)"
    options: ClassVar[tuple[Option, ...]] = (
        Option("M", 0.1, "penalty M of (6) (libsvm's C)", low=0.0),
        *kernel_model_options(),
    )
    M: float

    # ------------------------------------------------------------------ data / clustering
    def check_data(self, data: BinaryData) -> None:
        """Dense X only: the kernel blocks are dense anyway (sparse input: the linear SVM)."""
        if issparse(data.X):
            raise DataError(
                "The kernel SVM needs dense X; convert it (X.toarray()) or use the linear SVM, "
                "which keeps X sparse."
            )

    def default_rate(self, data: BinaryData) -> float:
        """r^0 = max{1.1m/n, 0.0001}, as for the linear SVM."""
        return min(1.0, max(1.1 * data.m / data.n, 0.0001))

    def initial_partition(
        self, data: BinaryData, rate: float, rng: np.random.Generator
    ) -> Partition:
        """Appendix B's alternative: a kernel SVM on a small sample, then one 1-D k-means pass
        per class on the decision values f_sample(x_i) of all entries
        (:func:`aidopt.core.sample_fits.kernel_svm_scores`: capped; the difference of the kernel
        means of the two classes when the fit is stopped or fails). At rate 1, every entry is
        its own cluster: the full problem (21) = (6)."""
        if rate >= 1.0:
            return Partition.singletons(data.n)
        rows = stratified_sample(data.y, max(_SAMPLE_MIN, 5 * data.m), rng)
        score = kernel_svm_scores(
            self.kernel_for(data.m),
            data.X,
            data.X[rows],
            data.y[rows],
            self.M * data.n / rows.size,
        )
        return per_class_partition(data.y, score, rate, rng)

    # ------------------------------------------------------------------ aggregated data
    def aggregate(
        self, data: BinaryData, partition: Partition, *, previous: Any = None
    ) -> KernelSVMAggregate:
        """T with the row weights (φ̄_k = Σ w_i φ(x_i) / W_k), ȳ_k, W_k (no T for singletons);
        the blocks of T of the clusters a split left as they were come from ``previous``."""
        label = partition.sums(data.y) / partition.sizes
        assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
        kernel = self.kernel_for(data.m)
        T = None
        if not partition.is_singletons:  # the full problem sums no Gram (LazyGram)
            cache = None
            if (
                previous is not None
                and previous.gram_sum is not None
                and previous.row_weight is data.weight
            ):
                cache = (previous.X, previous.partition.labels, previous.gram_sum)
            T = refreshed_gram_sums(kernel, data.X, partition, cache, data.weight)
        return KernelSVMAggregate(
            gram_sum=T,
            label=label,
            weight=partition.weights(data.weight),
            partition=partition,
            X=data.X,
            kernel=kernel,
            row_weight=data.weight,
        )

    # ------------------------------------------------------------------ aggregated dual (21)
    def declare(self, agg: KernelSVMAggregate) -> Problem:
        """(21), max Σ ᾱ_k − ½ Σ K̄_kq ᾱ_k ᾱ_q ȳ_k ȳ_q s.t. Σ ᾱ_k ȳ_k = 0, 0 ≤ ᾱ_k ≤ M|C_k|,
        in the factored, scaled form of :func:`~aidopt.solvers.svm_dual.scaled_dual`."""
        return scaled_dual(agg.factor, agg.label, self.M * agg.weight)

    def read(self, values: Values, agg: KernelSVMAggregate) -> KernelSVMSolution:
        return self._solution(agg, dual_alpha(values, agg.label, self.M * agg.weight))

    def program_bound(self, result: SolveResult, agg: KernelSVMAggregate) -> float | None:
        """D(ᾱ) with the exact K̄ at the repaired dual point: a lower bound on F^t."""
        values = self.declare(agg).values(result)
        return self._dual_value(agg, dual_alpha(values, agg.label, self.M * agg.weight))

    @staticmethod
    def _dual_value(agg: KernelSVMAggregate, alpha: NDArray[np.float64]) -> float:
        """D(α) = Σ α_k − ½ (α∘ȳ)ᵀ K̄ (α∘ȳ), the objective of (21)."""
        ay = alpha * agg.label
        return float(alpha.sum() - 0.5 * ay @ agg.gram @ ay)

    # ------------------------------------------------------------------ structure
    def to_structure(
        self, kind: type, agg: KernelSVMAggregate, previous: Previous | None
    ) -> WeightedSVM:
        """(21) as the weighted SVM with the Gram matrix K̄, weights W_k, C = M (for singletons:
        the rows and the kernel, which libsvm evaluates itself)."""
        if agg.singletons:
            return WeightedSVM(agg.label, agg.weight, self.M, features=agg.X, kernel=agg.kernel)
        return WeightedSVM(y=agg.label, weight=agg.weight, C=self.M, gram=agg.gram)

    def from_structure(
        self, kind: type, answer: SVMFit, agg: KernelSVMAggregate
    ) -> KernelSVMSolution:
        """The classifier of the solver's ᾱ, with its b̄."""
        assert answer.alpha is not None, "a kernel SVM's answer carries its dual"
        return self._solution(agg, answer.alpha, answer.b)

    def _solution(
        self, agg: KernelSVMAggregate, alpha: NDArray[np.float64], b: float | None = None
    ) -> KernelSVMSolution:
        """The classifier of ᾱ; b̄ = the exact minimiser of (20) over b when not given."""
        ay = alpha * agg.label
        g = agg.gram_times(ay)  # w̄·φ̄_k
        if b is None:
            b = optimal_intercept(g, agg.label, self.M * agg.weight)
        labels = agg.partition.labels
        support = (alpha > 0)[labels]
        coef = (ay / agg.weight)[labels[support]]
        if agg.row_weight is not None:
            coef = coef * agg.row_weight[support]
        return KernelSVMSolution(
            alpha=alpha,
            cluster_labels=labels,
            intercept=float(b),
            support_vectors=agg.X[support],
            dual_coef=coef,
            kernel=agg.kernel,
            norm_sq=float(ay @ g),
        )

    # ------------------------------------------------------------------ evaluation (10)
    def evaluate(
        self, data: BinaryData, solution: KernelSVMSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """E^t = ½‖w̄‖² + M Σ_i ω_i max{0, 1 − y_i f(x_i)} (row weights ω_i, 1 unweighted),
        with a bound on its rounding error."""
        violation = 1.0 - data.y * solution.decision_function(data.X)
        hinge, hinge_error = accurate_weighted_sum(np.maximum(violation, 0.0), data.weight)
        total_weight = data.total_weight if data.weight is None else total_weight_up(data.weight)
        kmax, entry = self.kernel_max(data), self.kernel_error(data)
        n_sv = solution.support_vectors.shape[0]
        mass = float(np.abs(solution.dual_coef).sum())
        score_error = expansion_error(n_sv, data.m, mass, kmax, entry, abs(solution.intercept) + 1)
        error = self.M * (hinge_error + total_weight * score_error) + self._quad_error(
            solution, data, kmax, entry
        )
        return Evaluation(
            0.5 * solution.norm_sq + self.M * hinge,
            (violation > 0).astype(np.int64),
            None,
            error,
        )

    @staticmethod
    def _quad_error(
        solution: KernelSVMSolution, data: BinaryData, kmax: float, entry: float
    ) -> float:
        """Rounding bound of ½‖w̄‖² (sums of up to n² kernel values, each |K| ≤ kmax and
        within ``entry`` of the exact value)."""
        mass = float(np.abs(solution.dual_coef).sum())
        return 0.5 * quadratic_form_error(mass, data.n, kmax, entry)

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: BinaryData,
        solution: KernelSVMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality on (6) in feature space: Σα_i − ½‖Σ α_i y_i φ(x_i)‖² − b*Σα_i y_i ≤ E*
        for 0 ≤ α_i ≤ M ω_i (row weights ω_i; 1 unweighted). α̂_i = ᾱ_k ω_i / W_k spread from
        the clusters gives Σα̂_i = Σ_k ᾱ_k, Σα̂_i y_i = Σ_k ᾱ_k ȳ_k and ‖w‖² = (ᾱ∘ȳ)ᵀK̄(ᾱ∘ȳ)
        exactly; |b*| ≤ 1 + ‖w*‖ max√K(x,x), ‖w*‖ ≤ √(2E). With ``dual`` (the support entries'
        α̂, ``aidopt verify``) the same on the entries, the solution being that dual's own
        expansion."""
        omega = data.row_weights
        box = dual_box(self.M, data.weight, data.n)
        if dual is None:
            labels = solution.cluster_labels
            totals = np.bincount(labels, weights=omega, minlength=solution.alpha.size)
            cluster_label = np.zeros(solution.alpha.size)
            cluster_label[labels] = data.y
            if np.any(solution.alpha < 0) or np.any(
                solution.alpha > self.M * totals * (1 + sum_relative_error(data.n + 6))
            ):
                return None
            alpha = np.minimum(solution.alpha, self.M * totals)  # rounding only
            signed = alpha * cluster_label
            source = "dual (6) at the aggregated dual (21) spread over the entries"
            entries = np.minimum(cluster_duals(labels, alpha, data.weight), box)
        else:
            entries = dual.expand(data.n, None)
            if entries.size and (entries.min() < 0.0 or np.any(entries > box)):
                raise ValueError(f"the dual point leaves its box [0, {self.M:g} w_i]")
            alpha, signed = entries, entries * data.y
            source = "dual (6) at the given dual point"
        total, total_error = accurate_sum(alpha)
        rho, rho_error = accurate_sum(signed)
        kmax = self.kernel_max(data)
        dual_value = total - 0.5 * solution.norm_sq
        b_bound = 1.0 + np.sqrt(2.0 * max(upper, 0.0) * kmax)
        allowance = total_error + self._quad_error(solution, data, kmax, self.kernel_error(data))
        allowance += (abs(rho) + rho_error) * b_bound
        if dual is None:
            # ᾱ_k ≤ fl(M fl(W_k)) ≤ M W_k (1 + δ), δ the product's rounding and W_k's (row
            # weights: float sums): (1 − δ)ᾱ is in the exact box, D((1 − δ)ᾱ) ≥ D(ᾱ) − δ Σᾱ_k
            weight_error = data.weight_sums_error
            allowance += quotient_relative_error(1, weight_error) * (total + total_error)
        point = DualPoint.on_support(entries)
        return Bound(dual_value - allowance, source, point, dual_value, allowance)

    def solution_from_dict(
        self, data: BinaryData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> KernelSVMSolution:
        """The classifier f = Σ_i α̂_i y_i K(x_i, ·) + b of the certificate's dual point."""
        if dual is None:
            raise DataError("A kernel SVM solution is its dual expansion: the certificate's dual.")
        alpha = dual.expand(data.n, None)
        support = np.flatnonzero(alpha)
        sv, coef = data.X[support], (alpha * data.y)[support]
        kernel = self.kernel_for(data.m)
        norm_sq = float(coef @ kernel_times(kernel, sv, sv, coef))
        return KernelSVMSolution(
            alpha=alpha,
            cluster_labels=np.arange(data.n),
            intercept=float(payload["b"]),
            support_vectors=sv,
            dual_coef=coef,
            kernel=kernel,
            norm_sq=norm_sq,
        )

    def solution_to_dict(self, data: BinaryData, solution: KernelSVMSolution) -> dict[str, Any]:
        return {
            "b": float(solution.intercept),
            "training_accuracy": training_accuracy(data, solution.decision_function(data.X)),
            "labels": data.label_mapping(),
            "kernel": dataclasses.asdict(solution.kernel),
            "n_support_entries": int(solution.support_vectors.shape[0]),
        }
