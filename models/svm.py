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

Matrix form: the dual of (9) with w kept as free variables v and α scaled to β = α/(M|C_k|),

    min  ½‖v‖² − Σ_k M|C_k| β_k   s.t.  v − Σ_k β_k M|C_k| ȳ_k x̄_k = 0,  Σ_k β_k M|C_k| ȳ_k = 0,
         0 ≤ β_k ≤ 1

(:func:`dual_program`). From the returned α the model makes an exactly feasible ᾱ (clip to the
box, rescale one class so that Σ ᾱ_k ȳ_k = 0), takes w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact minimiser
b̄ of (9) over b for that w̄, and reports D(ᾱ) = Σ ᾱ_k − ½‖w̄‖² (weak duality: D(ᾱ) ≤ F^t ≤ E*).
The Pyomo model is (9) itself.

Structure: (9) is the weighted soft-margin SVM on the centroids x̄_k with weights |C_k| and
C = M (:class:`aidopt.structures.WeightedSVM`), what libsvm solves exactly (its dual ᾱ and b̄
come back) and liblinear approximately (it penalises ½b² too: another problem, no bound).

Certificate (``lower_bound``): weak duality of (6) at the aggregated dual spread over the
entries, or at the dual complementary slackness gives the primal (the better of the two).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import pyomo.environ as pyo

from aidopt.certificate import (
    EPS,
    Bound,
    DualPoint,
    abs_column_sums,
    accurate_sum,
    accurate_tdot,
    accurate_weighted_sum,
    max_row_norm,
    repair_equalities,
)
from aidopt.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.contract import AggregatedModel, Evaluation, Previous
from aidopt.data.containers import BinaryData
from aidopt.data.svm import GENERATOR
from aidopt.exceptions import DataError
from aidopt.kernels import kernel_flag_options, kernel_from_flags
from aidopt.options import Option, from_args
from aidopt.partition import Partition, nested_labels
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.sample_fits import linear_svm_fit
from aidopt.solvers.base import SolveResult
from aidopt.structures import SVMFit, WeightedSVM, feasible_dual

__all__ = [
    "SVMAggregate",
    "SVMData",
    "SVMModel",
    "SVMSolution",
    "cluster_duals",
    "dual_program",
    "entry_duals_in_box",
    "optimal_intercept",
    "per_class_partition",
    "program_alpha",
    "stratified_sample",
    "training_accuracy",
]

SVMData = BinaryData  # the data an SVM takes: X (n × m), labels mapped to ±1

_SAMPLE_MIN = 1000  # rows of the sample that places the initial hyperplane


# ---------------------------------------------------------------------- shared pieces
def per_class_partition(
    y: NDArray[np.float64], score: NDArray[np.float64], rate: float, rng: np.random.Generator
) -> Partition:
    """Initial clusters (§3.2, §4): one k-means pass on the 1-D scores, separately per class.

    |K^0| = ⌈r^0 n⌉ clusters, shared between the classes in proportion to their sizes (at least
    one each); clusters never mix labels.
    """
    n = y.size
    total = n_clusters_for_rate(rate, n, minimum=2)
    labels = np.empty(n, dtype=np.int64)
    group = (y > 0).astype(np.int64)
    for g in (0, 1):
        rows = np.flatnonzero(group == g)
        k = int(min(rows.size, max(1, round(total * rows.size / n))))
        labels[rows] = kmeans_one_pass(score[rows], k, rng)
    return Partition.from_labels(nested_labels(group, labels))


def stratified_sample(y: NDArray[np.float64], size: int, rng: np.random.Generator) -> NDArray:
    """Row indices of a random sample of about ``size`` rows with both classes present."""
    n = y.size
    if size >= n:
        return np.arange(n)
    rows = []
    for cls in (-1.0, 1.0):
        members = np.flatnonzero(y == cls)
        k = min(members.size, max(10, round(size * members.size / n)))
        rows.append(rng.choice(members, size=k, replace=False))
    return np.sort(np.concatenate(rows))


def optimal_intercept(
    g: NDArray[np.float64], y: NDArray[np.float64], cost: NDArray[np.float64]
) -> float:
    """argmin_b Σ_k cost_k max{0, 1 − y_k(g_k + b)} (the best b of (9) for a fixed w).

    The function is convex piecewise linear with breakpoints b_k = y_k − g_k; its right slope
    at b is −Σ_{y_k=+1, b_k>b} cost_k + Σ_{y_k=−1, b_k≤b} cost_k. The minimisers form an
    interval [lo, hi] of breakpoints; its midpoint is returned.
    """
    bk = y - g
    order = np.argsort(bk, kind="stable")
    bk, yy, cc = bk[order], y[order], cost[order]
    pos_from = np.cumsum((cc * (yy > 0))[::-1])[::-1]
    slope_right = -np.r_[pos_from[1:], 0.0] + np.cumsum(cc * (yy < 0))
    lo = int(np.argmax(slope_right >= 0))  # first breakpoint where the slope turns ≥ 0
    hi = int(np.argmax(slope_right > 0)) if np.any(slope_right > 0) else bk.size - 1
    return float(0.5 * (bk[lo] + bk[hi]))


def dual_program(
    features: NDArray[np.float64], y: NDArray[np.float64], upper: NDArray[np.float64]
) -> MatrixProgram:
    """The dual of the weighted SVM, max Σα − ½‖Σ α_k y_k φ_k‖² s.t. Σ α_k y_k = 0,
    0 ≤ α ≤ upper, as a convex QP with α = upper∘β and w kept as free columns v:

        min ½‖v‖² − Σ_k u_k β_k   s.t.  v − Σ_k β_k u_k y_k φ_k = 0,  Σ_k β_k u_k y_k = 0,
            0 ≤ β ≤ 1   (u = upper).

    ``features`` holds φ_k as rows (centroids x̄_k, or a factor L with L Lᵀ = K̄). Columns
    (v, β): β are the last K.
    """
    K, r = features.shape
    coef = y * upper
    A = sp.vstack(
        [
            sp.hstack([sp.eye(r), sp.csr_matrix(-(features * coef[:, None]).T)]),
            sp.hstack([sp.csr_matrix((1, r)), sp.csr_matrix(coef[None, :])]),
        ]
    ).tocsc()
    return MatrixProgram(
        c=np.r_[np.zeros(r), -upper],
        A=A,
        row_lower=np.zeros(r + 1),
        row_upper=np.zeros(r + 1),
        col_lower=np.r_[np.full(r, -np.inf), np.zeros(K)],
        col_upper=np.r_[np.full(r, np.inf), np.ones(K)],
        Q=sp.diags(np.r_[np.ones(r), np.zeros(K)], format="csc"),
    )


def program_alpha(
    result: SolveResult, y: NDArray[np.float64], upper: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The exactly feasible ᾱ next to a solved :func:`dual_program`'s α = upper∘β."""
    return feasible_dual(result.x[-upper.size :] * upper, y, upper)


def entry_duals_in_box(
    labels: NDArray[np.int64],
    alpha: NDArray[np.float64],
    y: NDArray[np.float64],
    M: float,
    weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """a_i = ᾱ_k/W_k in [0, M] per unit weight (α̂_i = a_i w_i; w = 1 unweighted), values within
    1e-12·M of a bound set to it, and Σ a_i w_i y_i = 0 restored on the entries strictly inside
    the box (least-norm change)."""
    a = np.clip(cluster_duals(labels, alpha, weight, per_unit_weight=True), 0.0, M)
    a[a <= 1e-12 * M] = 0.0
    a[a >= (1 - 1e-12) * M] = M
    wy = y if weight is None else weight * y
    return repair_equalities(wy[None, :], np.zeros(1), a, 0.0, M)


def cluster_duals(
    labels: NDArray[np.int64],
    alpha: NDArray[np.float64],
    weight: NDArray[np.float64] | None = None,
    *,
    per_unit_weight: bool = False,
) -> NDArray[np.float64]:
    """α̂_i = ᾱ_k w_i / W_k for i ∈ C_k, W_k = Σ_{C_k} w_i (w = 1 unweighted: ᾱ_k/|C_k|, the
    dual recovery of §3.2); per unit weight, ᾱ_k / W_k."""
    totals = np.bincount(labels, weights=weight, minlength=alpha.size)
    per_unit = (alpha / totals)[labels]
    return per_unit if per_unit_weight or weight is None else per_unit * weight


def _cluster_sums(data: BinaryData, part: Partition) -> tuple[NDArray, NDArray]:
    """(W_k, Σ_{C_k} w_i x_i) per cluster, w_i = 1 for unweighted data; dense K × m (sparse X
    stays sparse: only its cluster sums, the aggregated problem's data, are dense)."""
    return part.weights(data.weight), part.dense_sums(data.weighted_X)


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
    """A hyperplane (w, b) and, when the backend gives it, the cluster duals ᾱ of (9).

    ``cluster_labels`` is the label vector of the partition the solution was computed on, so
    that :meth:`entry_duals` can map ᾱ to the entries.
    """

    w: NDArray[np.float64]
    b: float
    alpha: NDArray[np.float64] | None = None
    cluster_labels: NDArray[np.int64] | None = None
    partition: Partition | None = field(default=None, repr=False, compare=False)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        from aidopt.validation import check_predict_input

        rows = check_predict_input(X, self.w.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(rows @ self.w).ravel() + self.b

    def entry_duals(self, weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k w_i / W_k for every entry (w: the data's row weights, None: |C_k|;
        feasible for (6); optimal when certified)."""
        if self.alpha is None or self.cluster_labels is None:
            raise ValueError("this solution carries no dual values (its solver gave none)")
        return cluster_duals(self.cluster_labels, self.alpha, weight)


def _dual_value(agg: SVMAggregate, alpha: NDArray[np.float64]) -> tuple[float, NDArray]:
    """D(α) = Σ α_k − ½‖w(α)‖², w(α) = Σ α_k ȳ_k x̄_k; returns (D, w)."""
    w = (alpha * agg.label) @ agg.xbar
    return float(alpha.sum() - 0.5 * (w @ w)), w


# ---------------------------------------------------------------------- the model
class SVMModel(AggregatedModel[SVMData, SVMAggregate, SVMSolution]):
    """Linear SVM (7)/(9): min ½‖w‖² + M Σ_i max{0, 1 − y_i(w x_i + b)}.

    ``M`` is the penalty (libsvm's C; the paper's experiments use M = 0.1). On the command line
    ``--kernel rbf|poly`` (with ``--gamma``, ``--degree``, ``--coef0``) chooses the kernel SVM
    of Appendix B instead (:class:`aidopt.models.svm_kernel.KernelSVMModel`).
    """

    name: ClassVar[str] = "svm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    gives_lower_bound: ClassVar[bool] = True
    data_type: ClassVar[type] = BinaryData
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svm.md)
    supports_weights: ClassVar[bool] = True
    citation: ClassVar[str] = "Park & Klabjan (2016), §3.2, problems (7), (9), (10), Props. 3-4"
    generator: ClassVar[Any] = GENERATOR
    options: ClassVar[tuple[Option, ...]] = (
        Option("M", 0.1, "penalty M of (7) (libsvm's C)", low=0.0),
    )
    cli_extras: ClassVar[tuple[Option, ...]] = kernel_flag_options(
        "linear: the primal (9); rbf/poly: the aggregated dual (21) of Appendix B"
    )

    @classmethod
    def from_options(
        cls,
        kernel: str = "linear",
        gamma: float | None = None,
        degree: int | None = None,
        coef0: float | None = None,
        **values: Any,
    ) -> AggregatedModel:
        """The linear SVM, or the kernel SVM (21) for ``kernel`` rbf or poly (γ None: 1/m,
        degree None: 3, coef0 None: 1.0; the options a kernel does not use are ignored, as
        :class:`~aidopt.models.svm_kernel.KernelSVMModel` ignores them)."""
        if kernel == "linear":
            return cls(**values)
        from aidopt.models.svm_kernel import KernelSVMModel

        k = kernel_from_flags(kernel, gamma, degree, coef0, strict=False)
        return KernelSVMModel(
            kernel=k.kind, gamma=k.gamma, degree=k.degree, coef0=k.coef0, **values
        )

    @classmethod
    def from_cli(cls, args: Any) -> AggregatedModel:
        """As :meth:`from_options`, but a kernel flag that the chosen ``--kernel`` ignores
        (``--gamma`` with linear, ``--coef0`` with rbf, ...) is an error, not silently dropped."""
        values = from_args((*cls.options, *cls.cli_extras), args)
        kernel_from_flags(values["kernel"], values["gamma"], values["degree"], values["coef0"])
        return cls.from_options(**values)

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
        n/|sample|): :func:`aidopt.sample_fits.linear_svm_fit` (exact; the class-mean
        direction when it is stopped)."""
        return linear_svm_fit(X, y, self.M * scale)

    # ------------------------------------------------------------------ aggregated data
    def aggregate(self, data: SVMData, partition: Partition) -> SVMAggregate:
        """Weighted means x̄_k = Σ w_i x_i / W_k, weights W_k (|C_k| unweighted), labels ȳ_k."""
        weight, x_sum = _cluster_sums(data, partition)
        label = partition.sums(data.y) / partition.sizes  # exactly ±1: clusters never mix labels
        assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
        return SVMAggregate(x_sum=x_sum, label=label, weight=weight, partition=partition)

    # ------------------------------------------------------------------ aggregated problem (9)
    def build(self, agg: SVMAggregate) -> pyo.ConcreteModel:
        import pyomo.environ as pyo  # loaded when a Pyomo model is built (~0.7 s)

        xbar, ybar, weight, M = agg.xbar, agg.label, agg.weight, self.M
        model = pyo.ConcreteModel(name="SVM aggregated problem (9)")
        model.K = pyo.RangeSet(0, len(weight) - 1)  # clusters k ∈ K^t
        model.J = pyo.RangeSet(0, xbar.shape[1] - 1)  # attributes j
        model.w = pyo.Var(model.J)  # w_j, free
        model.b = pyo.Var()  # b, free
        model.xi = pyo.Var(model.K, domain=pyo.NonNegativeReals)  # ξ_k
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)  # ᾱ_k, when the solver gives it

        @model.Objective(sense=pyo.minimize)  # (9) ½‖w‖² + M Σ_k |C_k| ξ_k
        def regularised_weighted_hinge(m):
            return 0.5 * sum(m.w[j] ** 2 for j in m.J) + M * sum(weight[k] * m.xi[k] for k in m.K)

        @model.Constraint(model.K)  # (9) ȳ_k (w x̄_k + b) ≥ 1 − ξ_k
        def margin(m, k):
            score = sum(xbar[k, j] * m.w[j] for j in m.J) + m.b
            return ybar[k] * score >= 1 - m.xi[k]

        return model

    def extract(self, model: pyo.ConcreteModel, agg: SVMAggregate) -> SVMSolution:
        import pyomo.environ as pyo  # loaded when a Pyomo model is built (~0.7 s)

        w = np.array([pyo.value(model.w[j]) for j in model.J], dtype=np.float64)
        duals = [model.dual.get(model.margin[k]) for k in model.K]
        alpha = None
        if all(d is not None for d in duals):
            # α_k ≥ 0 is the multiplier's magnitude: Pyomo's solver interfaces disagree on the
            # sign of a ≥ row's dual (and any α in the box gives a valid bound)
            alpha = feasible_dual(
                np.abs(np.array(duals, dtype=float)), agg.label, self.M * agg.weight
            )
        return SVMSolution(
            w=w,
            b=float(pyo.value(model.b)),
            alpha=alpha,
            cluster_labels=agg.partition.labels,
            partition=agg.partition,
        )

    # ------------------------------------------------------------------ matrix form (dual)
    def matrix_program(self, agg: SVMAggregate, previous: Previous | None = None) -> MatrixProgram:
        """The dual of (9) in the scaled form of :func:`dual_program`."""
        return dual_program(agg.xbar, agg.label, self.M * agg.weight)

    def solution_from_program(self, result: SolveResult, agg: SVMAggregate) -> SVMSolution:
        return self._dual_solution(agg, program_alpha(result, agg.label, self.M * agg.weight))

    def program_bound(self, result: SolveResult, agg: SVMAggregate) -> float | None:
        """D(ᾱ) at the repaired dual point: a lower bound on F^t by weak duality."""
        return _dual_value(agg, program_alpha(result, agg.label, self.M * agg.weight))[0]

    def _dual_solution(self, agg: SVMAggregate, alpha: NDArray[np.float64]) -> SVMSolution:
        """w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact best b̄ of (9) for it."""
        _, w = _dual_value(agg, alpha)
        b = optimal_intercept(agg.xbar @ w, agg.label, self.M * agg.weight)
        return SVMSolution(
            w=w, b=b, alpha=alpha, cluster_labels=agg.partition.labels, partition=agg.partition
        )

    # ------------------------------------------------------------------ structure
    def to_structure(self, kind: type, agg: SVMAggregate, previous: Previous | None) -> WeightedSVM:
        """(9) as the weighted SVM on the centroids x̄_k, weights |C_k|, C = M, warm-started at
        the previous iteration's (w̄, b̄) (split clusters keep their side of its hyperplane)."""
        start = None if previous is None else (previous.solution.w, previous.solution.b)
        return WeightedSVM(y=agg.label, weight=agg.weight, C=self.M, features=agg.xbar, start=start)

    def from_structure(self, kind: type, answer: SVMFit, agg: SVMAggregate) -> SVMSolution:
        """(w, b) and, when the solver gives it (one that solves (9) exactly), the dual ᾱ."""
        if answer.alpha is None:
            return SVMSolution(w=answer.w, b=answer.b)
        return SVMSolution(
            w=answer.w,
            b=answer.b,
            alpha=answer.alpha,
            cluster_labels=agg.partition.labels,
            partition=agg.partition,
        )

    # ------------------------------------------------------------------ evaluation (10)
    def evaluate(self, data: SVMData, solution: SVMSolution) -> Evaluation:
        """E^t = ½‖w‖² + M Σ_i ω_i max{0, 1 − y_i(w x_i + b)} (10) (row weights ω_i, 1
        unweighted), with a bound on its rounding error; regime_i = [1 − y_i(w x_i + b) > 0]
        (Prop. 3)."""
        w, b = solution.w, solution.b
        violation = 1.0 - data.y * (data.X @ w + b)
        hinges = np.maximum(violation, 0.0)
        omega = data.weight
        hinge, hinge_error = accurate_weighted_sum(hinges, omega)
        norm_sq = float(w @ w)
        # |fl(f_i) − f_i| ≤ γ_{m+2}(Σ_j |x_ij||w_j| + |b| + 1), summed over i (× ω_i)
        if omega is None:
            scale = float(abs_column_sums(data.X) @ np.abs(w)) + data.n * (abs(b) + 1)
        else:
            scale = float((omega @ np.abs(data.X)) @ np.abs(w)) + float(omega.sum()) * (abs(b) + 1)
            scale *= 1 + (data.n + 2) * EPS
        score_error = (data.m + 3) * EPS * scale
        error = self.M * (hinge_error + score_error) + (data.m + 2) * EPS * norm_sq
        return Evaluation(
            0.5 * norm_sq + self.M * hinge, (violation > 0).astype(np.int64), None, error
        )

    def solution_to_dict(self, data: SVMData, solution: SVMSolution) -> dict[str, Any]:
        return {
            "w": {name: float(v) for name, v in zip(data.feature_names, solution.w, strict=True)},
            "b": float(solution.b),
            "training_accuracy": training_accuracy(data, solution.decision_function(data.X)),
            "labels": data.label_mapping(),
        }

    def solution_from_dict(
        self, data: SVMData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> SVMSolution:
        w = payload["w"]
        missing = [name for name in data.feature_names if name not in w]
        if missing:
            raise DataError(f"The solution has no weight for the column(s) {missing}.")
        return SVMSolution(np.array([float(w[c]) for c in data.feature_names]), float(payload["b"]))

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: SVMData,
        solution: SVMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
    ) -> Bound | None:
        """Weak duality on (6): for 0 ≤ α_i ≤ Mω_i (row weights ω, 1 unweighted) and any (w, b),
        (7) ≥ Σα_i − ½‖Σα_i y_i x_i‖² − b Σα_i y_i. α is the aggregated dual spread over the
        entries (α̂_i = ᾱ_k ω_i/W_k, W_k = Σ_{C_k} ω_i; ᾱ_k/|C_k| unweighted, §3.2),
        values within 1e-12 of a bound snapped to it and Σα̂_i y_i = 0 restored on the free
        entries; what remains of ρ = Σα̂_i y_i costs |b*||ρ| with |b*| ≤ 1 + ‖w*‖ max_i‖x_i‖,
        ‖w*‖ ≤ √(2E) (b* lies between the breakpoints y_i − w*·x_i). No duals (liblinear): no
        bound."""
        if dual is not None:
            a = dual.expand(data.n, evaluation.regime)
            if a.size and (a.min() < 0.0 or a.max() > self.M):
                raise ValueError(f"the dual point leaves its box [0, {self.M:g}]")
            return self._bound_at(data, a, evaluation, upper, "the given dual point")
        if solution.alpha is None or solution.cluster_labels is None:
            return None
        labels = solution.cluster_labels
        candidates = [(solution.alpha, "the aggregated dual")]
        candidates.append(
            (
                self._alpha_from_primal(data, solution),
                "the dual that complementary slackness gives the primal",
            )
        )
        return max(
            (
                self._bound_at(
                    data,
                    entry_duals_in_box(labels, alpha, data.y, self.M, data.weight),
                    evaluation,
                    upper,
                    f"{what} spread over the entries, on all data",
                )
                for alpha, what in candidates
            ),
            key=lambda b: b.value,
        )

    def _alpha_from_primal(self, data: SVMData, solution: SVMSolution) -> NDArray[np.float64]:
        """ᾱ_k from complementary slackness at (w, b): M|C_k| where the cluster's centroid
        violates the margin, 0 where it is outside, free on the margin; the free ones make
        Σᾱ_k ȳ_k = 0 and Σᾱ_k ȳ_k x̄_k = w hold as nearly as the box allows (least squares,
        the balance row last: it is the one feasibility needs)."""
        labels = solution.cluster_labels
        part = solution.partition or Partition.from_labels(labels)
        sizes, x_sum = _cluster_sums(data, part)  # W_k and Σ w_i x_i (|C_k|, Σ x_i unweighted)
        ybar = np.zeros(sizes.size)
        ybar[labels] = data.y
        xbar = x_sum / sizes[:, None]
        violation = 1.0 - ybar * (xbar @ solution.w + solution.b)
        tol = 1e-9 * (np.abs(xbar) @ np.abs(solution.w) + abs(solution.b) + 1.0)
        upper = self.M * sizes
        alpha = np.where(violation > 0, upper, 0.0)
        ties = np.abs(violation) <= tol
        alpha[ties] = 0.5 * upper[ties]
        A = np.vstack([ybar, (ybar[:, None] * xbar).T])
        target = np.r_[0.0, solution.w]
        alpha = repair_equalities(A, target, alpha, 0.0, upper, free=ties)
        return repair_equalities(A[:1], target[:1], alpha, 0.0, upper, free=ties)

    def _bound_at(self, data, a, evaluation, upper, source) -> Bound:
        """The bound of :meth:`lower_bound` at α = a∘ω, a ∈ [0, M]ⁿ per unit weight (α = a
        unweighted; weighted, fl(a_i ω_i) is shrunk by 1 − 2ε so that α_i ≤ M ω_i holds in exact
        arithmetic)."""
        source = f"dual (6) at {source}"
        omega = data.weight
        if omega is None:
            alpha, abs_x = a, abs_column_sums(data.X)
        else:
            alpha = (a * omega) * (1.0 - 2.0 * EPS)
            abs_x = (omega @ np.abs(data.X)) * (1 + (data.n + 2) * EPS)
        ay = alpha * data.y
        total, total_error = accurate_sum(alpha)
        rho, rho_error = accurate_sum(ay)
        w, w_error = accurate_tdot(data.X, ay, abs_bound=self.M * abs_x)
        norm, norm_up = float(np.linalg.norm(w)), float(np.linalg.norm(np.abs(w) + w_error))
        dual_value = total - 0.5 * norm**2
        b_bound = 1.0 + np.sqrt(2.0 * max(upper, 0.0)) * max_row_norm(data.X)
        allowance = total_error + 0.5 * (norm_up**2 - norm**2) * (1 + 4 * EPS)
        allowance += (abs(rho) + rho_error) * b_bound
        point = DualPoint.compress(a, evaluation.regime, (0.0, self.M))
        return Bound(dual_value - allowance, source, point, dual_value, allowance)


def training_accuracy(data: SVMData, decision: NDArray[np.float64]) -> float:
    """Share of entries with sign(f(x_i)) = y_i (f > 0 predicts +1, as scikit-learn)."""
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == data.y))


MODEL = SVMModel
