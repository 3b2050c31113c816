"""Kernel SVM under AID through the aggregated dual (Park & Klabjan 2016, Appendix B).

Original dual (6) with a Mercer kernel K(·,·) (linear, RBF or polynomial; ``aidopt.kernels``):

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

Costs. The centroid Gram is built block by block from kernel rows K(x_i, ·) and never holds
the n × n matrix: memory is K̄ itself (8K² bytes), one block of at most 2^22 kernel entries
(32 MiB) and its K-column cluster sums. After a split only the rows of the split clusters are
recomputed (O(|R| n m) for the |R| entries of split clusters; the first iteration is O(n² m));
the decision values cost O(n · n_SV · m) per iteration, n_SV = the entries of clusters with
ᾱ_k > 0. ``aidopt solve svm --full`` on this model builds the full n × n Gram (memory 8n²).

Solvers: ``libsvm`` = ``SVC(kernel="precomputed", C=M)`` on K̄ with ``sample_weight=|C_k|``,
which is (21) exactly. Generic solvers (Gurobi) get (21) in factored form: with K̄ = L Lᵀ
(eigendecomposition, eigenvalues below 1e-12·λ_max dropped), the dual with free v = Lᵀ(α∘ȳ) and
an identity Hessian (``models/svm.py``, ``dual_program``). HiGHS goes through the checked route
``solve_dual_checked`` (factored forms, then K̄ as a dense Hessian), as for the linear SVM.
Whatever the solver returns, the model repairs α to exact feasibility, reports D(ᾱ) with the
exact K̄ as the lower bound, and takes b̄ as the exact minimiser of (20) over b for the w̄ of ᾱ
(libsvm: its own b̄).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from aidopt.certificate import EPS, Bound, DualPoint, accurate_sum, max_row_norm
from aidopt.contract import AggregatedModel, Evaluation, Previous
from aidopt.deadline import TimeLimitReached, budget, call_with_timeout
from aidopt.exceptions import AidoptError, DataError, SolverCapabilityError
from aidopt.kernels import Kernel, squared_norms
from aidopt.models.svm import (
    _LIBSVM_OPTIONS,
    SVMData,
    _checked_options,
    _python,
    _tighter_tol,
    _time_limit_result,
    cluster_duals,
    dual_program,
    feasible_dual,
    optimal_intercept,
    per_class_partition,
    polish_on_face,
    solve_dual_checked,
    stratified_sample,
    training_accuracy,
)
from aidopt.partition import Partition
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.validation import check_choice, check_int, check_real

__all__ = ["KernelSVMAggregate", "KernelSVMModel", "KernelSVMSolution", "centroid_gram_sums"]

_BLOCK_ENTRIES = 1 << 22  # kernel entries per block (32 MiB of float64)
_EIG_RTOL = 1e-12  # eigenvalues of K̄ below this × λ_max are dropped from the factor L
_SAMPLE_MIN = 500  # rows of the sample that places the initial kernel hyperplane
_SAMPLE_MAX_ITER = 100_000  # libsvm iterations of that sample fit (an approximate fit is fine)
_SAMPLE_TIME_SHARE = 0.25  # at most this share of the time left goes to the sample fit


def kernel_times(
    kernel: Kernel,
    A: NDArray[np.float64],
    sq_a: NDArray[np.float64],
    B: NDArray[np.float64],
    sq_b: NDArray[np.float64],
    right: NDArray[np.float64] | sp.spmatrix,
) -> NDArray[np.float64]:
    """K(A, B) @ right, computed in row blocks of A (never more than 2^22 kernel entries)."""
    rows = max(1, _BLOCK_ENTRIES // max(1, B.shape[0]))
    out_shape = (A.shape[0],) if np.ndim(right) == 1 else (A.shape[0], right.shape[1])
    out = np.empty(out_shape)
    d = A.shape[1]
    for start in range(0, A.shape[0], rows):
        stop = min(start + rows, A.shape[0])
        block = kernel.from_inner(A[start:stop] @ B.T, sq_a[start:stop], sq_b, d)
        out[start:stop] = right.T.dot(block.T).T if sp.issparse(right) else block @ right
    return out


def centroid_gram_sums(
    kernel: Kernel, X: NDArray[np.float64], partition: Partition, rows: NDArray | None = None
) -> NDArray[np.float64]:
    """T_kq = Σ_{i∈C_k} Σ_{j∈C_q} K(x_i, x_j) (K̄ = T / (|C_k||C_q|)), block-wise.

    With ``rows`` (entry indices) only the contributions of those entries are summed, i.e. the
    rows of T for the clusters that contain them (all of whose entries must be in ``rows``).
    """
    sq = squared_norms(X)
    S = partition.indicator()  # K × n
    K = partition.n_clusters
    idx = np.arange(X.shape[0]) if rows is None else rows
    T = np.zeros((K, K))
    step = max(1, _BLOCK_ENTRIES // max(1, X.shape[0]))
    for start in range(0, idx.size, step):
        part = idx[start : start + step]
        P = kernel_times(kernel, X[part], sq[part], X, sq, S.T)  # |part| × K: Σ_{j∈C_q} K(x_i,x_j)
        owner = sp.csr_matrix(
            (np.ones(part.size), (partition.labels[part], np.arange(part.size))),
            shape=(K, part.size),
        )
        T += owner @ P
    return T


@dataclass(frozen=True, eq=False)
class KernelSVMAggregate:
    """Aggregated data of (21): centroid Gram sums, labels, weights, and the data it reads."""

    gram_sum: NDArray[np.float64]  # (K, K) T_kq = Σ Σ K(x_i, x_j)
    label: NDArray[np.float64]  # (K,) ȳ_k
    weight: NDArray[np.float64]  # (K,) |C_k|
    partition: Partition
    X: NDArray[np.float64]  # the original data (a reference, for the support vectors)

    @property
    def gram(self) -> NDArray[np.float64]:
        """K̄_kq = T_kq / (|C_k||C_q|)."""
        return self.gram_sum / np.outer(self.weight, self.weight)


@dataclass(frozen=True, eq=False)
class KernelSVMSolution:
    """f(x) = Σ_j dual_coef_j K(sv_j, x) + intercept, and the cluster duals ᾱ of (21)."""

    alpha: NDArray[np.float64]
    cluster_labels: NDArray[np.int64]
    intercept: float
    support_vectors: NDArray[np.float64]
    dual_coef: NDArray[np.float64]  # ᾱ_k ȳ_k / |C_k| for each entry of a support cluster
    kernel: Kernel
    norm_sq: float  # ‖w̄‖² = (ᾱ∘ȳ)ᵀ K̄ (ᾱ∘ȳ)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        from aidopt.validation import check_predict_input

        sv = self.support_vectors
        X = check_predict_input(X, sv.shape[1], type(self).__name__)
        if sv.shape[0] == 0:
            return np.full(X.shape[0], self.intercept)
        f = kernel_times(self.kernel, X, squared_norms(X), sv, squared_norms(sv), self.dual_coef)
        return f + self.intercept

    def entry_duals(self) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k / |C_k| for every entry (feasible for (6); optimal when certified)."""
        return cluster_duals(self.cluster_labels, self.alpha)


class KernelSVMModel(AggregatedModel[SVMData, KernelSVMAggregate, KernelSVMSolution]):
    """Kernel SVM (6)/(21) with penalty ``M``; kernel ∈ {linear, rbf, poly} (scikit-learn's
    conventions: rbf exp(−γ‖a−b‖²), poly (γ⟨a,b⟩ + coef0)^degree; γ = None means 1/m)."""

    name: ClassVar[str] = "svm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    gives_lower_bound: ClassVar[bool] = True
    special_solvers: ClassVar[tuple[str, ...]] = ("highs", "libsvm", "liblinear")
    citation: ClassVar[str] = "Park & Klabjan (2016), Appendix B, problems (20)-(21)"

    def __init__(
        self,
        M: float = 0.1,
        kernel: str = "rbf",
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
    ) -> None:
        self.M = M
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self._cache: tuple[NDArray, NDArray, NDArray] | None = None  # (X, labels, T)

    def check_params(self) -> None:
        owner = type(self).__name__
        check_real(self.M, "M", owner, low=0.0)
        check_choice(self.kernel, "kernel", owner, ("linear", "rbf", "poly"))
        check_real(self.gamma, "gamma", owner, low=0.0, allow_none=True)
        check_int(self.degree, "degree", owner, low=1)
        check_real(self.coef0, "coef0", owner)

    def kernel_for(self, m: int) -> Kernel:
        """The kernel with γ resolved for m-feature data (γ = 1/m when not given)."""
        gamma = self.gamma if self.gamma is not None else 1.0 / m
        return Kernel(self.kernel, float(gamma), self.degree, float(self.coef0))

    def summary(self) -> dict[str, Any]:
        return {
            "M": self.M,
            "kernel": self.kernel,
            "gamma": self.gamma,
            "degree": self.degree,
            "coef0": self.coef0,
        }

    # ------------------------------------------------------------------ data / clustering
    def data_from_frame(self, frame: pd.DataFrame, target: str | None) -> SVMData:
        return SVMData.from_frame(frame, target)

    def default_rate(self, data: SVMData) -> float:
        """r^0 = max{1.1m/n, 0.0001}, as for the linear SVM."""
        return min(1.0, max(1.1 * data.m / data.n, 0.0001))

    def initial_partition(self, data: SVMData, rate: float, rng: np.random.Generator) -> Partition:
        """Appendix B's alternative: a kernel SVM on a small sample, then one 1-D k-means pass
        per class on the decision values f_sample(x_i) of all entries.

        The sample fit only places C^0: at most ``_SAMPLE_MAX_ITER`` libsvm iterations, and
        under a time limit at most a quarter of the time left (in a child process killed then);
        a fit that is stopped or fails gives way to the difference of the kernel means of the
        two classes, f(x) = mean₊ k(x, ·) − mean₋ k(x, ·)."""
        from sklearn.svm import SVC

        kernel = self.kernel_for(data.m)
        rows = stratified_sample(data.y, max(_SAMPLE_MIN, 5 * data.m), rng)
        Xs, ys = data.X[rows], data.y[rows]
        fit = SVC(kernel="precomputed", C=self.M * data.n / rows.size, max_iter=_SAMPLE_MAX_ITER)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unconverged sample fit only places C^0
            try:
                fit = call_with_timeout(
                    fit.fit,
                    kernel(Xs, Xs),
                    ys,
                    timeout=budget(share=_SAMPLE_TIME_SHARE),
                    what="the sample fit that places the initial clusters",
                )
                sv, coef, intercept = Xs[fit.support_], fit.dual_coef_[0], fit.intercept_[0]
            except (TimeLimitReached, AidoptError):
                coef = np.where(ys > 0, 1.0 / (ys > 0).sum(), -1.0 / (ys < 0).sum())
                sv, intercept = Xs, 0.0
        score = kernel_times(kernel, data.X, squared_norms(data.X), sv, squared_norms(sv), coef)
        return per_class_partition(data.y, score + intercept, rate, rng)

    # ------------------------------------------------------------------ aggregated data
    def aggregate(self, data: SVMData, partition: Partition) -> KernelSVMAggregate:
        weight = partition.sizes.astype(np.float64)
        label = partition.sums(data.y) / weight
        assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
        T = self._gram_sums(data, partition)
        self._cache = (data.X, partition.labels, T)
        return KernelSVMAggregate(
            gram_sum=T, label=label, weight=weight, partition=partition, X=data.X
        )

    def _gram_sums(self, data: SVMData, partition: Partition) -> NDArray[np.float64]:
        """T for this partition; after a split only the rows of the split clusters are new."""
        kernel = self.kernel_for(data.m)
        cache, parent = self._cache, partition.parent
        if (
            cache is None
            or parent is None
            or cache[0] is not data.X
            or cache[1].size != data.n
            or parent.max() >= cache[2].shape[0]
            or not np.array_equal(parent[partition.labels], cache[1])
        ):
            return centroid_gram_sums(kernel, data.X, partition)
        prev_labels, prev_T = cache[1], cache[2]
        prev_sizes = np.bincount(prev_labels, minlength=prev_T.shape[0])
        remade = partition.sizes != prev_sizes[parent]
        T = prev_T[np.ix_(parent, parent)]
        rows = np.flatnonzero(remade[partition.labels])
        fresh = centroid_gram_sums(kernel, data.X, partition, rows)
        T[remade, :] = fresh[remade, :]
        T[:, remade] = fresh[remade, :].T
        return T

    # ------------------------------------------------------------------ aggregated dual (21)
    def build(self, agg: KernelSVMAggregate) -> pyo.ConcreteModel:
        Kbar, ybar, upper = agg.gram, agg.label, self.M * agg.weight
        model = pyo.ConcreteModel(name="Kernel SVM aggregated dual (21)")
        model.K = pyo.RangeSet(0, len(ybar) - 1)  # clusters k ∈ K^t
        model.alpha = pyo.Var(model.K, bounds=lambda m, k: (0.0, upper[k]))  # 0 ≤ α_k ≤ |C_k|M

        @model.Objective(sense=pyo.maximize)  # (21) Σ α_k − ½ Σ K̄_kq α_k α_q ȳ_k ȳ_q
        def dual_objective(m):
            quad = sum(
                Kbar[k, q] * ybar[k] * ybar[q] * m.alpha[k] * m.alpha[q] for k in m.K for q in m.K
            )
            return sum(m.alpha[k] for k in m.K) - 0.5 * quad

        @model.Constraint()  # (21) Σ_k α_k ȳ_k = 0
        def balance(m):
            return sum(m.alpha[k] * ybar[k] for k in m.K) == 0

        return model

    def extract(self, model: pyo.ConcreteModel, agg: KernelSVMAggregate) -> KernelSVMSolution:
        alpha = np.array([pyo.value(model.alpha[k]) for k in model.K], dtype=np.float64)
        return self._solution(agg, feasible_dual(alpha, agg.label, self.M * agg.weight))

    def matrix_program(
        self, agg: KernelSVMAggregate, previous: Previous | None = None
    ) -> MatrixProgram:
        """(21) in the factored, scaled form of ``dual_program`` (generic solvers)."""
        return dual_program(self._factor(agg), agg.label, self.M * agg.weight)

    def solution_from_program(
        self, result: SolveResult, agg: KernelSVMAggregate
    ) -> KernelSVMSolution:
        return self._solution(agg, self._program_alpha(result, agg))

    def program_bound(self, result: SolveResult, agg: KernelSVMAggregate) -> float | None:
        """D(ᾱ) with the exact K̄ at the repaired dual point: a lower bound on F^t."""
        return self._dual_value(agg, self._program_alpha(result, agg))

    def _program_alpha(self, result: SolveResult, agg: KernelSVMAggregate) -> NDArray:
        upper = self.M * agg.weight
        return feasible_dual(result.x[-upper.size :] * upper, agg.label, upper)

    @staticmethod
    def _factor(agg: KernelSVMAggregate) -> NDArray[np.float64]:
        """L with L Lᵀ = K̄ (eigenvalues below 1e-12·λ_max dropped)."""
        Kbar = agg.gram
        lam, V = np.linalg.eigh(0.5 * (Kbar + Kbar.T))
        keep = lam > _EIG_RTOL * max(lam[-1], 0.0)
        return V[:, keep] * np.sqrt(lam[keep])

    @staticmethod
    def _dual_value(agg: KernelSVMAggregate, alpha: NDArray[np.float64]) -> float:
        """D(α) = Σ α_k − ½ (α∘ȳ)ᵀ K̄ (α∘ȳ), the objective of (21)."""
        ay = alpha * agg.label
        return float(alpha.sum() - 0.5 * ay @ agg.gram @ ay)

    def solve_special(
        self,
        solver: str,
        agg: KernelSVMAggregate,
        *,
        time_limit: float | None,
        verbose: bool,
        options: dict[str, Any],
        previous: Previous | None,
    ) -> tuple[KernelSVMSolution | None, SolveResult]:
        """(21) by HiGHS (checked dual forms) or libsvm on the precomputed centroid Gram."""
        if solver == "liblinear":
            raise SolverCapabilityError(
                "Solver 'liblinear' handles only the linear kernel; use libsvm, highs or "
                "gurobi for the kernel SVM (or --kernel linear)."
            )
        if solver == "highs":
            return self._solve_highs(agg, time_limit, verbose, options)
        if solver != "libsvm":
            raise NotImplementedError(f"{type(self).__name__} has no special solver {solver!r}")
        from sklearn.svm import SVC

        kwargs = {"tol": 1e-3, **_checked_options(options, _LIBSVM_OPTIONS, "libsvm")}
        fit = SVC(kernel="precomputed", C=self.M, verbose=verbose, **kwargs)
        start = time.perf_counter()
        try:  # libsvm has no time limit: under one it runs in a child process killed then
            fit = call_with_timeout(
                fit.fit,
                agg.gram,
                agg.label,
                sample_weight=agg.weight,
                timeout=budget(time_limit),
                what="libsvm",
            )
        except TimeLimitReached as exc:
            return None, _time_limit_result(exc, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        alpha = np.zeros(agg.label.size)
        alpha[fit.support_] = np.abs(fit.dual_coef_[0])
        alpha = feasible_dual(alpha, agg.label, self.M * agg.weight)
        solution = self._solution(agg, alpha, float(fit.intercept_[0]))
        stopped = fit.fit_status_ != 0
        return solution, SolveResult(
            status=SolveStatus.ITERATION_LIMIT if stopped else SolveStatus.OPTIMAL,
            objective=self._primal_value(agg, solution),
            bound=self._dual_value(agg, alpha),
            seconds=seconds,
            iterations=int(np.max(fit.n_iter_)),
            message="iteration limit" if stopped else "optimal",
            refine=_tighter_tol(kwargs["tol"]),
        )

    def _solve_highs(self, agg, time_limit, verbose, options):
        upper, L = self.M * agg.weight, self._factor(agg)

        def certify(alpha):
            return self._dual_value(agg, alpha), self._primal_value(agg, self._solution(agg, alpha))

        Q = agg.gram * np.outer(agg.label, agg.label)  # the signed centroid Gram

        def polish(alpha):
            return polish_on_face(
                alpha, agg.label, upper, lambda a: Q @ a, lambda f: Q[np.ix_(f, f)]
            )

        alpha, result = solve_dual_checked(
            lambda form: dual_program(L, agg.label, upper, form, gram=agg.gram),
            upper.size,
            certify,
            agg.label,
            upper,
            polish,
            time_limit=time_limit,
            verbose=verbose,
            options=options,
        )
        return (None if alpha is None else self._solution(agg, alpha)), result

    def _primal_value(self, agg: KernelSVMAggregate, solution: KernelSVMSolution) -> float:
        """(20) at the solution: ½‖w̄‖² + M Σ_k |C_k| max{0, 1 − ȳ_k(w̄·φ̄_k + b̄)}."""
        g = agg.gram @ (solution.alpha * agg.label)
        hinge = np.maximum(0.0, 1.0 - agg.label * (g + solution.intercept))
        return float(0.5 * solution.norm_sq + self.M * agg.weight @ hinge)

    def _solution(
        self, agg: KernelSVMAggregate, alpha: NDArray[np.float64], b: float | None = None
    ) -> KernelSVMSolution:
        """The classifier of ᾱ; b̄ = the exact minimiser of (20) over b when not given."""
        ay = alpha * agg.label
        g = agg.gram @ ay  # w̄·φ̄_k
        if b is None:
            b = optimal_intercept(g, agg.label, self.M * agg.weight)
        labels = agg.partition.labels
        support = (alpha > 0)[labels]
        return KernelSVMSolution(
            alpha=alpha,
            cluster_labels=labels,
            intercept=float(b),
            support_vectors=agg.X[support],
            dual_coef=(ay / agg.weight)[labels[support]],
            kernel=self.kernel_for(agg.X.shape[1]),
            norm_sq=float(ay @ g),
        )

    # ------------------------------------------------------------------ evaluation (10)
    def evaluate(self, data: SVMData, solution: KernelSVMSolution) -> Evaluation:
        """E^t = ½‖w̄‖² + M Σ_i max{0, 1 − y_i f(x_i)}, with a bound on its rounding error."""
        violation = 1.0 - data.y * solution.decision_function(data.X)
        hinge, hinge_error = accurate_sum(np.maximum(violation, 0.0))
        kmax = self._kernel_max(data)
        n_sv = solution.support_vectors.shape[0]
        score_error = (
            (n_sv + data.m + 3)
            * EPS
            * (float(np.abs(solution.dual_coef).sum()) * kmax + abs(solution.intercept) + 1.0)
        )
        error = self.M * (hinge_error + data.n * score_error) + self._quad_error(
            solution, data, kmax
        )
        return Evaluation(
            0.5 * solution.norm_sq + self.M * hinge,
            (violation > 0).astype(np.int64),
            None,
            error,
        )

    def _kernel_max(self, data: SVMData) -> float:
        """max_i K(x_i, x_i) ≥ |K(x_i, x_j)| (Cauchy–Schwarz in feature space), rounded up."""
        kernel = self.kernel_for(data.m)
        if kernel.kind == "rbf":
            return 1.0
        r2 = max_row_norm(data.X) ** 2
        if kernel.kind == "linear":
            return r2
        top = max(abs(kernel.gamma * r2 + kernel.coef0), abs(kernel.coef0))
        return float(top**kernel.degree) * (1 + 8 * kernel.degree * EPS)

    @staticmethod
    def _quad_error(solution: KernelSVMSolution, data: SVMData, kmax: float) -> float:
        """Rounding bound of ½‖w̄‖² (sums of up to n² kernel values, each |K| ≤ kmax)."""
        mass = float(np.abs(solution.dual_coef).sum())
        return 0.5 * (data.n + 4) * EPS * mass**2 * kmax

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: SVMData,
        solution: KernelSVMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
    ) -> Bound | None:
        """Weak duality on (6) in feature space: Σα_i − ½‖Σ α_i y_i φ(x_i)‖² − b*Σα_i y_i ≤ E*
        for 0 ≤ α ≤ M. α̂_i = ᾱ_k/|C_k| spread from the clusters gives Σα̂_i = Σ_k ᾱ_k,
        Σα̂_i y_i = Σ_k ᾱ_k ȳ_k and ‖w‖² = (ᾱ∘ȳ)ᵀK̄(ᾱ∘ȳ) exactly; |b*| ≤ 1 + ‖w*‖ max√K(x,x),
        ‖w*‖ ≤ √(2E). With ``dual`` (the support entries' α̂, ``aidopt verify``) the same on
        the entries, the solution being that dual's own expansion."""
        if dual is None:
            labels = solution.cluster_labels
            sizes = np.bincount(labels, minlength=solution.alpha.size)
            cluster_label = np.zeros(solution.alpha.size)
            cluster_label[labels] = data.y
            if np.any(solution.alpha < 0) or np.any(
                solution.alpha > self.M * sizes * (1 + 8 * EPS)
            ):
                return None
            alpha = np.minimum(solution.alpha, self.M * sizes)  # rounding only
            signed = alpha * cluster_label
            source = "dual (6) at the aggregated dual (21) spread over the entries"
            entries = np.minimum(cluster_duals(labels, alpha), self.M)
        else:
            entries = dual.expand(data.n, None)
            if entries.size and (entries.min() < 0.0 or entries.max() > self.M):
                raise ValueError(f"the dual point leaves its box [0, {self.M:g}]")
            alpha, signed = entries, entries * data.y
            source = "dual (6) at the given dual point"
        total, total_error = accurate_sum(alpha)
        rho, rho_error = accurate_sum(signed)
        kmax = self._kernel_max(data)
        dual_value = total - 0.5 * solution.norm_sq
        b_bound = 1.0 + np.sqrt(2.0 * max(upper, 0.0) * kmax)
        allowance = total_error + self._quad_error(solution, data, kmax)
        allowance += (abs(rho) + rho_error) * b_bound
        support = np.flatnonzero(entries)
        point = DualPoint(None, support.astype(np.int64), entries[support])
        return Bound(dual_value - allowance, source, point, dual_value, allowance)

    def solution_from_dict(
        self, data: SVMData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> KernelSVMSolution:
        """The classifier f = Σ_i α̂_i y_i K(x_i, ·) + b of the certificate's dual point."""
        if dual is None:
            raise DataError("A kernel SVM solution is its dual expansion: the certificate's dual.")
        alpha = dual.expand(data.n, None)
        support = np.flatnonzero(alpha)
        sv, coef = data.X[support], (alpha * data.y)[support]
        kernel = self.kernel_for(data.m)
        norm_sq = float(
            coef @ kernel_times(kernel, sv, squared_norms(sv), sv, squared_norms(sv), coef)
        )
        return KernelSVMSolution(
            alpha=alpha,
            cluster_labels=np.arange(data.n),
            intercept=float(payload["b"]),
            support_vectors=sv,
            dual_coef=coef,
            kernel=kernel,
            norm_sq=norm_sq,
        )

    def solution_to_dict(self, data: SVMData, solution: KernelSVMSolution) -> dict[str, Any]:
        return {
            "b": float(solution.intercept),
            "training_accuracy": training_accuracy(data, solution.decision_function(data.X)),
            "labels": data.label_mapping(),
            "kernel": {
                "kind": solution.kernel.kind,
                "gamma": _python(solution.kernel.gamma),
                "degree": solution.kernel.degree,
                "coef0": solution.kernel.coef0,
            },
            "n_support_entries": int(solution.support_vectors.shape[0]),
        }
