"""Positive–unlabeled (PU) learning with the double-hinge loss (Sansone et al. 2019), under AID.

Data: labeled positives P (p rows) and unlabeled rows U (n rows); class prior π ∈ (0, 1) of the
unlabeled data, regularisation λ > 0, kernel k; c1 = π/(2λp), c2 = 1/(2λn); f(x) = Σ_i α_i k(x, x_i)
+ β. The empirical risk (3) with the double hinge, plus λ‖f‖², divided by 2λ, is the primal (5):

    min_{α,β,ξ}  ½ αᵀKα − c1 Σ_{i∈P} f(x_i) + c2 Σ_{u∈U} ξ_u                              (5)
    s.t.         ξ_u ≥ 0,   ξ_u ≥ f(x_u),   ξ_u ≥ (1 + f(x_u))/2                     u ∈ U

(linear kernel: ½αᵀKα = ½‖w‖², f(x) = w·x + β, with w explicit). Its dual (6), in σ, δ ∈ ℝ^U:

    min  ½ σᵀK_UUσ − c1 1ᵀK_PUσ − ½ Σ_u δ_u                                              (6)
    s.t. Σ_u σ_u = c1 p = π/(2λ),  σ + δ/2 ≤ c2,  σ − δ/2 ≥ 0,  0 ≤ δ ≤ c2,

α from (7): α_i = c1 on P, α_u = −σ_u on U; min (5) = −(min (6) + ½ c1² 1ᵀK_PP1). The bias β is
(16), the mean of ∓1 − (Kα)_u over the non-bound u, or the midpoint of the KKT interval.

AID for PU (derived in docs/pu.md). The loss of a positive, −f, is affine in f, so all positives
aggregate exactly into one cluster; the loss of an unlabeled point, ℓ(f) = max(f, 0, (1 + f)/2),
has three regimes (f ≤ −1, −1 < f < 1, f ≥ 1). The aggregated problem is (5) on the clusters'
(feature-space) centroids φ̄_k, with weights |C_k| on the loss terms and the original c1, c2:

    F^t = min ½‖w‖² − c1 Σ_{k∈P} |C_k| f(φ̄_k) + c2 Σ_{k∈U} |C_k| ℓ(f(φ̄_k)),   f(φ̄) = ⟨w, φ̄⟩ + β.

By Jensen (ℓ convex, f affine in φ) F^t ≤ E* and F^{t−1} ≤ F^t; if every unlabeled cluster sits
in one regime at the aggregated optimum, that optimum is optimal for (5).

Declared forms (``build``, ``matrix_program``): linear kernel, the aggregated primal (5) with w
explicit (restricted to the span of the centroids when that is smaller); other kernels, the
aggregated dual (6) with the centroid Gram K̄_kq = mean_{C_k×C_q} k. Structure
(:class:`~aidopt.solvers.structures.PULearning`, (5)/(6) on weighted rows): the centroids with the
model's kernel (linear), the centroid Gram K̄ as a precomputed kernel (other kernels), or the
rows themselves (singletons), warm-started from the previous σ shared among the children.

Certificate (``lower_bound``): weak duality of (5) at the aggregated σ (or, linear kernel, the σ
complementary slackness gives the primal) spread over the unlabeled entries, on all data.

Row weights ω_i > 0 (a row's loss counts ω_i times; ``supports_weights``): p and n become the
total weights of P and U, the loss terms of (5) carry ω_i, the box of σ_u is [0, c2 ω_u], and the
clusters are the weighted means φ̄_k = Σ ω_i φ(x_i)/W_k with weights W_k = Σ_{C_k} ω_i — integer
weights give the problem with rows repeated. A scipy.sparse X stays sparse for the linear kernel
(only the K × d centroids are dense).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.lazy import dense, issparse
from aidopt.common.options import Option
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    below,
    best_with_dual,
    box_distance,
    clipped_into,
    dual_box,
    moved_mass,
    plus_half_squared_norm,
    repair_equalities,
    ridge_dual_bound,
    shifted_norm_error,
)
from aidopt.core.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.kernel_aggregate import LazyGram, SummedKernels, summed_kernels
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.core.sample_fits import pu_fit
from aidopt.data.containers import PositiveUnlabeledData
from aidopt.data.pu import GENERATOR
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.numerics.kernels import (
    Kernel,
    expansion_error,
    kernel_bound,
    kernel_entry_error,
    kernel_flag_options,
    kernel_flags,
    kernel_from_flags,
    kernel_times,
    quadratic_form_error,
)
from aidopt.numerics.rounding import (
    accurate_sum,
    accurate_weighted_sum,
    minus,
    product_up,
    quotient_relative_error,
    ratio,
    score_error,
    sum_relative_error,
    times,
    total_weight_up,
    weighted_below,
)
from aidopt.numerics.span import CentroidSpan
from aidopt.solvers.algebra import Problem, Values, quad_form, sum_squares
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import PULearning

__all__ = [
    "PUAggregate",
    "PUData",
    "PUModel",
    "PUSolution",
    "double_hinge",
    "optimal_bias",
]

PUData = PositiveUnlabeledData  # the data PU learning takes: X (N × d), the labeled mask

_LINEAR = Kernel("linear")
_SAMPLE_UNLABELED = 1000  # rows of the sample fit that places the initial clusters
_SAMPLE_POSITIVE = 500
_MIN_CLUSTERS = 10  # unlabeled clusters of C^0 at least


def double_hinge(f: NDArray[np.float64]) -> NDArray[np.float64]:
    """ℓ(f, −1) = max(f, 0, (1 + f)/2), the loss of an unlabeled point (digest §1.1)."""
    return np.maximum(np.maximum(f, 0.0), 0.5 * (1.0 + f))


def optimal_bias(
    F: NDArray[np.float64], weight: NDArray[np.float64], c1p: float, c2: float
) -> float:
    """argmin_β −c1p·β + c2 Σ_u w_u ℓ(F_u + β), the best bias for fixed α (F = Kα on U).

    The objective is convex piecewise linear in β with breakpoints −1 − F_u and 1 − F_u, each
    raising the slope by ½ c2 w_u from −c1p (β → −∞) to c2 n − c1p > 0 (π < 1); the result is
    the midpoint of the set of minimisers (which, at an optimal α, is the KKT interval of β).
    """
    breaks = np.r_[-1.0 - F, 1.0 - F]
    order = np.argsort(breaks, kind="stable")
    slope = -c1p + np.cumsum(np.r_[0.5 * c2 * weight, 0.5 * c2 * weight][order])
    k = int(np.searchsorted(slope, 0.0))  # first breakpoint after which the slope is ≥ 0
    lo = breaks[order[k]]
    flat = slope[k] <= 1e-12 * c1p and k + 1 < breaks.size  # slope 0 up to the next breakpoint
    return float(0.5 * (lo + breaks[order[k + 1]])) if flat else float(lo)


def _regime(f: NDArray[np.float64]) -> NDArray[np.int64]:
    """The piece of ℓ an unlabeled point is on: 0 (f ≤ −1), 1 (−1 < f < 1), 2 (f ≥ 1)."""
    return (f > -1.0).astype(np.int64) + (f >= 1.0)


@dataclass(frozen=True, eq=False)
class PUAggregate(LazyGram):
    """Aggregated data: cluster sums of x, weights |C_k|, which clusters are labeled; kernel
    models: the kernel sums of the clusters (:mod:`aidopt.core.kernel_aggregate`), whose
    ``gram`` is the centroid Gram K̄_kq = mean over C_k × C_q of k (K itself for singletons)."""

    x_sum: NDArray[np.float64]  # (K, d) Σ_{i∈C_k} ω_i x_i
    weight: NDArray[np.float64]  # (K,) W_k = Σ_{i∈C_k} ω_i (|C_k| without row weights)
    labeled: NDArray[np.bool_]  # (K,) cluster of labeled positives
    partition: Any  # a Partition, or a BlockPartition for rows in blocks
    summed: SummedKernels | None = None  # T and P of the clusters (kernel models)
    X: Any = None  # the rows (kernel models)
    kernel: Kernel | None = None  # k (kernel models)

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]

    row_weight: NDArray[np.float64] | None = None  # (N,) ω_i, None: every row weighs 1
    #: a bound on the relative rounding error of the total weights of P and U in ``weight``
    #: (0: exact, as integers are; rows in blocks with weights: (n + 2)ε)
    total_error: float = 0.0

    @property
    def gram_sum(self) -> NDArray[np.float64] | None:  # type: ignore[override]
        """T_kq = Σ_{C_k×C_q} ω_i ω_j k (None: singletons, or the linear kernel)."""
        return None if self.summed is None else self.summed.gram_sum

    def scores(self, alpha: NDArray[np.float64], bias: float) -> NDArray[np.float64] | None:
        """f = Σ_k (ᾱ_k/W_k) P_k· + β on every row, when the kernel sums P are kept."""
        found = None if self.summed is None else self.summed.scores(alpha / self.weight)
        return None if found is None else found + bias


@dataclass(frozen=True, eq=False)
class PUSolution:
    """f(x) = w·x + β (linear kernel) or Σ_i α_i k(x, x_i) + β over the training rows.

    ``norm_sq`` = ‖f − β‖² (‖w‖² or αᵀKα); ``cluster_sigma`` the σ of (6) per cluster of the
    aggregated problem (0 on labeled clusters) when a dual solver produced it. A kernel solution
    is f(x) = Σ_k (ᾱ_k/W_k) Σ_{j∈C_k} ω_j k(x, x_j) + β: coefficients per cluster, the labels
    and the row weights.
    """

    bias: float
    coef: NDArray[np.float64] | None
    norm_sq: float
    cluster_sigma: NDArray[np.float64] | None = None
    entry_coef: NDArray[np.float64] | None = None  # (K,) ᾱ_k/W_k, kernel solutions
    labels: NDArray[np.int64] | None = None  # (N,) the clusters of the solved partition
    train_decision: NDArray[np.float64] | None = None  # f on the training rows, when known
    partition: Any = None  # the partition the solution was computed on
    row_weight: NDArray[np.float64] | None = None  # (N,) ω_i of the training rows, or None
    #: (c1, c2, a bound on their relative error) of the aggregate it was solved on: what an
    #: evaluation on rows in blocks takes (in memory they come from the data)
    constants: tuple[float, float, float] | None = None

    @property
    def alpha(self) -> NDArray[np.float64] | None:
        """α_i = ᾱ_k ω_i/W_k for every training row i ∈ C_k (kernel solutions), else None."""
        if self.entry_coef is None:
            return None
        alpha = self.entry_coef[self.labels]
        return alpha if self.row_weight is None else alpha * self.row_weight


@dataclass(frozen=True)
class ScoreBins:
    """C^0 for rows in blocks (:meth:`PUModel.initial_rule`): the sample fit's w and the score
    edges of the unlabeled clusters."""

    direction: NDArray[np.float64]
    edges: NDArray[np.float64]


class _Limits(NamedTuple):
    """c1, c2 of the data, σ's box inside the exact one, c1's relative error bound."""

    c1: float
    c2: float
    box: NDArray[np.float64]
    relative: float


def _below_c2(c2: float, total_error: float) -> tuple[float, float]:
    """(c2' ≤ the exact c2, r ≥ the relative error of c1 and c2) for c1, c2 computed as
    π/(2λ·p), 1/(2λ·n) from totals p, n within ``total_error`` (relatively): two roundings
    each (:func:`aidopt.core.certificate.below`)."""
    relative = quotient_relative_error(2, total_error)
    return below(c2, relative), relative


def _constants(weight, labeled, prior: float, lam: float) -> tuple[float, float]:
    """c1 = π/(2λp), c2 = 1/(2λn) with p, n the total weights of labeled / unlabeled rows."""
    return prior / (2.0 * lam * float(weight[labeled].sum())), 1.0 / (
        2.0 * lam * float(weight[~labeled].sum())
    )


# ---------------------------------------------------------------------- the model
class PUModel(BlockPass, AggregatedModel[PUData, PUAggregate, PUSolution]):
    """PU learning (5)/(6) under AID: the double-hinge risk of Sansone et al. (2019) with λ‖f‖².

    ``kernel`` is an :class:`aidopt.numerics.kernels.Kernel` (default linear; the paper's Gaussian
    of scale 1 is ``Kernel("rbf", gamma=0.5)``); on the command line ``--kernel``, ``--gamma``,
    ``--degree`` and ``--coef0`` build it (an option the kernel ignores is an error).
    ``span_reduction`` solves the linear primal in the span of the centroids when its rank is
    below d (exact; fewer variables on wide data).
    """

    name: ClassVar[str] = "pu"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = PositiveUnlabeledData
    structures: ClassVar[tuple[type, ...]] = (PULearning,)
    describes_by_row_sums: ClassVar[bool] = True
    supports_weights: ClassVar[bool] = True
    default_solver: ClassVar[str] = "usmo"  # measured the fastest exact one (docs/pu.md §5)
    citation: ClassVar[str] = (
        "Sansone, De Natale & Zhou (2019), Efficient Training for Positive Unlabeled Learning, "
        "(5)-(7), (16); AID for PU derived in docs/pu.md"
    )
    generator: ClassVar[Any] = GENERATOR
    options: ClassVar[tuple[Option, ...]] = (
        Option("prior", help="class prior π ∈ (0, 1) of the unlabeled data", low=0.0, high=1.0),
        Option("lam", 0.01, "regularisation λ > 0 of (4)", low=0.0, flag="--lambda"),
        Option(
            "kernel",
            _LINEAR,
            "the kernel k (command line: --kernel, --gamma, --degree, --coef0)",
            kind=Kernel,
            cli=False,
        ),
        Option(
            "span_reduction",
            True,
            "solve the linear primal (5) in the span of the centroids when that is smaller",
            kind=bool,
            cli=False,
        ),
    )
    prior: float
    lam: float
    kernel: Kernel
    span_reduction: bool
    cli_extras: ClassVar[tuple[Option, ...]] = kernel_flag_options(
        "the kernel k: linear, rbf (Gaussian) or poly",
        "γ of rbf/poly (None: 1/m; the paper's Gaussian of scale 1 is γ = 0.5)",
    )

    @classmethod
    def from_options(
        cls,
        kernel: Kernel | str = _LINEAR,
        gamma: float | None = None,
        degree: int | None = None,
        coef0: float | None = None,
        **values: Any,
    ) -> PUModel:
        """The model; a kernel named by its kind (the command line, a result's ``params``) is
        built from ``gamma``, ``degree`` and ``coef0``, which the kernel must use."""
        if isinstance(kernel, str):
            kernel = kernel_from_flags(kernel, gamma, degree, coef0)
        elif (gamma, degree, coef0) != (None, None, None):
            raise InvalidParameterError(
                "gamma, degree and coef0 belong to the Kernel given as 'kernel'; set them there."
            )
        return cls(kernel=kernel, **values)  # type: ignore[call-arg]  # generated from options

    def summary(self) -> dict[str, Any]:
        """The parameters, the kernel as its kind and the parameters that kind uses (what
        :meth:`from_options` takes back)."""
        out = super().summary()
        if isinstance(self.kernel, Kernel):
            out.update(kernel_flags(self.kernel))
        return out

    @property
    def linear(self) -> bool:
        return self.kernel.kind == "linear"

    def constants(self, data: PUData) -> tuple[float, float]:
        """(c1, c2) = (π/(2λp), 1/(2λn)) of the original problem (p, n: total row weights)."""
        return _constants(data.row_weights, data.labeled, self.prior, self.lam)

    def _limits(self, data: PUData) -> _Limits:
        """c1, c2 of the data, σ's box c2'ω rounded down inside the exact [0, c2ω], and r ≥ c1's
        relative error (:func:`_below_c2`: the weights' totals are float sums)."""
        c1, c2 = self.constants(data)
        c2_low, relative = _below_c2(c2, data.weight_sums_error)
        return _Limits(c1, c2, dual_box(c2_low, data.weight, data.n), relative)

    def check_data(self, data: PUData) -> None:
        """A sparse X only with the linear kernel (kernel blocks are dense anyway)."""
        if not self.linear and issparse(data.X):
            raise DataError(
                f"PU learning with the {self.kernel.kind} kernel needs dense X; convert it "
                "(X.toarray()) or use the linear kernel, which keeps X sparse."
            )

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: PUData) -> float:
        """r^0 = max{1.1 m/N, 0.0001} (the paper's SVM rate), with ≥ 10 unlabeled clusters."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    def initial_partition(self, data: PUData, rate: float, rng: np.random.Generator) -> Partition:
        """All positives in one cluster (their loss is affine: exact); the unlabeled rows by one
        k-means pass on the 1-D scores of a PU classifier fitted on a random sample."""
        unl = np.flatnonzero(~data.labeled)
        k = n_clusters_for_rate(rate, unl.size, minimum=min(unl.size, _MIN_CLUSTERS))
        labels = np.zeros(data.n, dtype=np.int64)
        labels[unl] = 1 + kmeans_one_pass(self._sample_scores(data, rng), k, rng)
        return Partition.from_labels(labels)

    def _sample_scores(self, data: PUData, rng: np.random.Generator) -> NDArray[np.float64]:
        """f − β on the unlabeled rows, f fitted (:func:`aidopt.core.sample_fits.pu_fit`, capped)
        on ≤ 1,000 unlabeled and ≤ 500 positive rows, weighted to stand for all of them (the
        linear kernel uses the positives' centroid). Never worse than the class-mean direction:
        the fit starts at σ = πC, whose f − β is (π/2λ)·(k(·, mean_P) − k(·, mean_U))."""
        pos, unl = np.flatnonzero(data.labeled), np.flatnonzero(~data.labeled)
        omega = data.row_weights
        su = rng.choice(unl, size=min(unl.size, _SAMPLE_UNLABELED), replace=False)
        sample_u = dense(data.X[su])
        weights_u = omega[su] * (omega[unl].sum() / omega[su].sum())
        if self.linear:
            mean_p = np.asarray(omega[pos] @ data.X[pos]).ravel() / omega[pos].sum()
            rows = np.vstack([mean_p, sample_u])
            weights = np.r_[omega[pos].sum(), weights_u]
        else:
            sp_ = rng.choice(pos, size=min(pos.size, _SAMPLE_POSITIVE), replace=False)
            rows = np.vstack([data.X[sp_], sample_u])
            weights = np.r_[omega[sp_] * (omega[pos].sum() / omega[sp_].sum()), weights_u]
        mask = np.r_[np.ones(len(rows) - su.size, dtype=bool), np.zeros(su.size, dtype=bool)]
        fit = pu_fit(rows, mask, weights, self.prior, self.lam, self.kernel)
        if fit.coef is not None:
            return data.X[unl] @ fit.coef
        return kernel_times(self.kernel, data.X[unl], rows, fit.alpha)

    # ------------------------------------------------------------------ aggregated data
    def aggregate(
        self, data: PUData, partition: Partition, *, previous: PUAggregate | None = None
    ) -> PUAggregate:
        """The cluster sums of :meth:`cluster_columns` (:class:`BlockPass`); kernel models: and
        the kernel sums of the clusters (none for singletons), those of the clusters a split
        left as they were taken from ``previous``."""
        agg = super().aggregate(data, partition)
        if self.linear:
            return agg
        kept = None
        if previous is not None and previous.summed is not None:
            if previous.row_weight is data.weight:
                kept = previous.summed.kept
        summed = None
        if not partition.is_singletons:
            summed = summed_kernels(self.kernel, data.X, partition, kept, data.weight)
        kernel_data = {"X": data.X, "kernel": self.kernel, "row_weight": data.weight}
        return dataclasses.replace(agg, summed=summed, **kernel_data)

    def _span(self, agg: PUAggregate) -> CentroidSpan | None:
        """The centroids' span when it is smaller than the feature space (linear primal)."""
        if not self.span_reduction or agg.weight.size >= agg.x_sum.shape[1]:
            return None
        span = CentroidSpan.of(agg.xbar)
        return span if span.rank < agg.x_sum.shape[1] else None

    # ------------------------------------------------------------------ aggregated problem
    def declare(self, agg: PUAggregate) -> Problem:
        """Linear kernel: (5) with w explicit (in the centroids' span when that is smaller) and
        ℓ(f) = ½(1 + f)₊ + ½(f − 1)₊, two slacks per unlabeled cluster (HiGHS's active-set QP
        method cycles on the degenerate three-piece epigraph, docs/pu.md §5); other kernels:
        (6) on the centroid Gram K̄."""
        c1, c2 = _constants(agg.weight, agg.labeled, self.prior, self.lam)
        P, U = agg.labeled, ~agg.labeled
        nu = int(U.sum())
        if self.linear:
            span = self._span(agg)
            x = agg.xbar if span is None else span.reduced
            p = Problem("PU primal (5), linear kernel")
            w, beta = p.variables("w", x.shape[1]), p.variables("beta", 1)
            plus = p.variables("xi_plus", nu, lower=0.0)
            minus = p.variables("xi_minus", nu, lower=0.0)
            f_P, f_U = x[P] @ w + beta, x[U] @ w + beta
            half = 0.5 * c2 * agg.weight[U]
            p.minimize(0.5 * sum_squares(w) - c1 * agg.weight[P] @ f_P + half @ plus + half @ minus)
            p.subject_to("plus_one", plus >= f_U + 1.0)  # ξ⁺_u ≥ 1 + f(x̄_u)
            p.subject_to("minus_one", minus >= f_U - 1.0)  # ξ⁻_u ≥ f(x̄_u) − 1
            return p
        K, alpha_p, C = agg.gram, c1 * agg.weight[P], c2 * agg.weight[U]
        p = Problem("PU dual (6)")
        sigma = p.variables("sigma", nu, lower=0.0, upper=C)
        delta = p.variables("delta", nu, lower=0.0, upper=C)
        offset = 0.5 * float(alpha_p @ K[np.ix_(P, P)] @ alpha_p)  # max −(6) − offset = min (5)
        linear = (K[np.ix_(U, P)] @ alpha_p) @ sigma + 0.5 * np.ones(nu) @ delta
        p.maximize(linear - 0.5 * quad_form(sigma, K[np.ix_(U, U)]) - offset)
        p.subject_to("balance", np.ones(nu) @ sigma == self.prior / (2.0 * self.lam))  # c1 p
        p.subject_to("upper", sigma + 0.5 * delta <= C)
        p.subject_to("lower", sigma - 0.5 * delta >= 0.0)
        return p

    def read(self, values: Values, agg: PUAggregate) -> PUSolution:
        """(w, β) and σ_u = a_u + b_u from the two slack rows' multipliers (linear kernel), or
        the solution at the σ of (6) made feasible, with the best bias for its α."""
        if self.linear:
            return self._linear_solution(values["w"], float(values["beta"][0]), agg, _sigma(values))
        return self._dual_point(values["sigma"], agg)[0]

    def program_bound(self, result: SolveResult, agg: PUAggregate) -> float | None:
        """A lower bound on F^t by weak duality: −((6) + ½ α_PᵀK̄_PPα_P) at the σ the solver
        returned (linear kernel: σ_u = a_u + b_u) made exactly feasible; the solver's own
        bound when it returns no multipliers."""
        values = self.declare(agg).values(result)
        if not self.linear:
            return self._dual_point(values["sigma"], agg)[1]
        sigma = _sigma(values)
        return result.bound if sigma is None else self._linear_dual_value(sigma, agg)

    def _linear_solution(
        self, u: NDArray, beta: float, agg: PUAggregate, sigma: NDArray | None = None
    ) -> PUSolution:
        """(w, β) from the reduced coordinates; ``sigma`` the σ of the unlabeled clusters (the
        primal's row duals), when the route gives them."""
        span = self._span(agg)
        w = u if span is None else span.lift(u)
        cluster_sigma = None
        if sigma is not None:
            cluster_sigma = np.zeros(agg.weight.size)
            cluster_sigma[~agg.labeled] = _feasible_sigma(sigma, agg, self.prior, self.lam)
        return PUSolution(
            bias=beta,
            coef=w,
            norm_sq=float(w @ w),
            cluster_sigma=cluster_sigma,
            partition=agg.partition,
            constants=(*_constants(agg.weight, agg.labeled, self.prior, self.lam), agg.total_error),
        )

    def _linear_dual_value(self, sigma: NDArray, agg: PUAggregate) -> float:
        """The dual value −½‖w(σ)‖² + Σ min(σ, C − σ) ≤ F^t at σ (the σ = a + b of the primal's
        row duals) made feasible, w(σ) = Σ_k ᾱ_k x̄_k (7)."""
        weight, labeled = agg.weight, agg.labeled
        c1, c2 = _constants(weight, labeled, self.prior, self.lam)
        sigma = _feasible_sigma(sigma, agg, self.prior, self.lam)
        alpha = np.where(labeled, c1 * weight, 0.0)
        alpha[~labeled] = -sigma
        w_sigma = agg.xbar.T @ alpha
        C = c2 * weight[~labeled]
        return -0.5 * float(w_sigma @ w_sigma) + math.fsum(np.minimum(sigma, C - sigma))

    def _dual_point(self, sigma: NDArray, agg: PUAggregate) -> tuple[PUSolution, float]:
        """(solution, lower bound on F^t) at σ of the aggregated (6), made feasible.

        α from (7) per cluster, spread over the members (α_i = ᾱ_k ω_i/W_k); β the best bias for
        that α (robust to a σ near, not at, a bound, unlike (16)); the lower bound is
        −((6) + ½ α_PᵀK̄_PPα_P).
        """
        sigma = _feasible_sigma(sigma, agg, self.prior, self.lam)
        K, weight, labeled = agg.gram, agg.weight, agg.labeled
        c1, c2 = _constants(weight, labeled, self.prior, self.lam)
        U = np.flatnonzero(~labeled)
        alpha = np.where(labeled, c1 * weight, 0.0)
        alpha[U] = -sigma
        F = K @ alpha  # f − β at the centroids
        beta = optimal_bias(F[U], weight[U], c1 * float(weight[labeled].sum()), c2)
        norm_sq = float(alpha @ F)
        # (6) = ½σᵀK_UUσ − σᵀK_UPα_P − Σ min(σ, C − σ) = ½αᵀKα − ½α_PᵀK_PPα_P − Σ min(σ, C − σ)
        lower = -0.5 * norm_sq + math.fsum(np.minimum(sigma, c2 * weight[U] - sigma))
        cluster_sigma = np.zeros(weight.size)
        cluster_sigma[U] = sigma
        solution = PUSolution(
            bias=beta,
            coef=None,
            norm_sq=norm_sq,
            cluster_sigma=cluster_sigma,
            entry_coef=alpha / weight,
            labels=agg.partition.labels,
            partition=agg.partition,
            row_weight=agg.row_weight,
            train_decision=agg.scores(alpha, beta),
        )
        return solution, lower

    # ------------------------------------------------------------------ structure
    def to_structure(self, kind: type, agg: PUAggregate, previous: Previous | None) -> PULearning:
        """(5)/(6) on the weighted rows: the centroids with the model's kernel (linear kernel),
        the rows themselves (singletons), else the centroid Gram K̄ (kernel="precomputed");
        warm-started from the previous σ, each parent's shared by its children."""
        singletons = agg.weight.size == agg.partition.n
        kernel: Kernel | str = self.kernel
        X = agg.xbar
        if not (self.linear or singletons):
            X, kernel = agg.gram, "precomputed"
        return PULearning(
            X=X,
            labeled=agg.labeled,
            weight=agg.weight,
            prior=self.prior,
            lam=self.lam,
            kernel=kernel,
            start=_warm_start(agg, previous),
        )

    def from_structure(self, kind: type, answer: Any, agg: PUAggregate) -> PUSolution:
        """The solution from the answer's σ (per unlabeled cluster), α, β, w, ‖f − β‖² and, for
        singletons, f on the rows."""
        cluster_sigma = np.zeros(agg.weight.size)
        cluster_sigma[~agg.labeled] = answer.sigma
        kernel = answer.coef is None
        labels = getattr(agg.partition, "labels", None)  # None: rows in blocks
        singletons = agg.weight.size == agg.partition.n and labels is not None
        return PUSolution(
            bias=answer.bias,
            coef=answer.coef,
            # ‖w‖² of the w the solution is (the solver's own ‖f − β‖² can cancel badly at
            # large scales: −2,875 with features × 1e9), else the kernel form (its error is
            # charged in evaluate_rows)
            norm_sq=answer.norm_sq if kernel else float(answer.coef @ answer.coef),
            cluster_sigma=cluster_sigma,
            entry_coef=answer.alpha / agg.weight if kernel else None,
            labels=labels if kernel else None,
            train_decision=(
                answer.train_decision[labels]
                if singletons
                else agg.scores(answer.alpha, answer.bias)
                if kernel
                else None
            ),
            partition=agg.partition,
            row_weight=agg.row_weight if kernel else None,
            constants=(*_constants(agg.weight, agg.labeled, self.prior, self.lam), agg.total_error),
        )

    # ------------------------------------------------------------------ evaluation
    def decision_function(
        self, data: PUData, solution: PUSolution, X: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """f(x) for the rows of X (default: the training rows)."""
        if X is None:
            X = data.X
        else:
            X = check_predict_input(X, data.m, type(self).__name__, accept_sparse=self.linear)
        if solution.coef is not None:
            return X @ solution.coef + solution.bias
        alpha = solution.alpha
        assert alpha is not None, "a kernel solution carries α"
        support = np.flatnonzero(alpha)
        return kernel_times(self.kernel, X, data.X[support], alpha[support]) + solution.bias

    def training_scores(self, data: PUData, solution: PUSolution) -> NDArray[np.float64]:
        """f on the training rows: carried by a kernel solution of clusters whose kernel sums
        were kept (:meth:`PUAggregate.scores`) or of singletons solved by a structure solver,
        else computed."""
        if solution.train_decision is not None and solution.train_decision.size == data.n:
            return solution.train_decision
        return self.decision_function(data, solution)

    def evaluate(self, data: PUData, solution: PUSolution, *, aggregate: Any = None) -> Evaluation:
        """E^t = (5) at the solution (loss terms × ω_i), with a bound on its rounding error;
        regime 0/1/2 of ℓ per unlabeled row (0 for positives)."""
        return self.evaluate_rows(data, solution, 0, data)

    def evaluate_rows(
        self, rows: PUData, solution: PUSolution, offset: int, whole: Any
    ) -> Evaluation:
        """:meth:`evaluate` on the block ``rows`` of ``whole``: its share −c1 Σ_P ω f +
        c2 Σ_U ω ℓ(f) of (5) (plus ½‖f − β‖² in the block at offset 0) with its rounding
        bound, its regimes. c1, c2: of ``whole`` when it holds all rows, else of the aggregate
        the solution came from (with their error bound)."""
        f = self.training_scores(rows, solution)
        if isinstance(whole, PositiveUnlabeledData):
            (c1, c2), relative = self.constants(whole), 0.0
        else:
            c1, c2, relative = solution.constants  # type: ignore[misc]
        omega, weight = rows.row_weights, rows.weight
        P, U = rows.labeled, ~rows.labeled
        positive, pos_error = accurate_weighted_sum(f[P], None if weight is None else weight[P])
        loss, loss_error = accurate_weighted_sum(
            double_hinge(f[U]), None if weight is None else weight[U]
        )
        # |fl(f_i) − f_i| per row, weighted and summed (features: score_error; kernel
        # expansions: γ_K Σ|α| kmax and the kernel entries' own error)
        if solution.coef is not None:
            f_error = score_error(rows.X, solution.coef, abs(solution.bias), weight)
        else:
            mass = _alpha_mass(solution)
            kmax, entry = self._kernel_max(rows), kernel_entry_error(self.kernel, rows.X)
            f_error = total_weight_up(omega) * expansion_error(
                rows.n, rows.m, mass, kmax, entry, abs(solution.bias)
            )
        objective, error = minus(
            *times(c2, loss, loss_error, relative), *times(c1, positive, pos_error, relative)
        )
        error += max(c1, c2) * f_error
        if offset == 0:
            objective, error = plus_half_squared_norm(objective, error, solution.norm_sq, rows.m)
            if solution.coef is None:  # ‖f‖² = αᵀKα, a computed quadratic form
                mass = _alpha_mass(solution)
                entry = kernel_entry_error(self.kernel, rows.X)
                error += 0.5 * quadratic_form_error(mass, rows.n, self._kernel_max(rows), entry)
        regime = np.where(rows.labeled, 0, _regime(f))
        return Evaluation(float(objective), regime, None, error)

    def _kernel_max(self, data: PUData) -> float:
        """max_i k(x_i, x_i) ≥ |k(x_i, x_j)|, rounded up
        (:func:`aidopt.numerics.kernels.kernel_bound`)."""
        return kernel_bound(self.kernel, data.X)

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: PUData,
        solution: PUSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality for (5): c2 ω ℓ(f) = max_{σ∈[0,c2ω]} σf + min(σ, c2ω − σ), so for every
        σ_u ∈ [0, c2 ω_u] and every (w, β), (5) ≥ −½‖w(σ)‖² + Σ_U min(σ_u, c2ω_u − σ_u) + β ρ
        with w(σ) = c1 Σ_P ω_i φ(x_i) − Σ_U σ_u φ(x_u) (7) and ρ = Σσ − π/(2λ) (ω = 1 without
        row weights). σ is the aggregated σ_k spread over the unlabeled entries (σ_k ω_u/W_k),
        values within 1e-12 of 0, c2ω/2, c2ω snapped to them; ρ costs |β*||ρ| with
        |β*| ≤ 1 + ‖w*‖ max√k(x,x) (β* lies between the breakpoints ±1 − w*·φ(x_u)) and
        ‖w*‖ ≤ ‖g‖ + √(‖g‖² + 2E), ‖g‖ ≤ π√kmax/λ (from ℓ(f) ≥ πf, which cancels β). Linear
        kernel: w(σ) on all data; other kernels: ‖w(σ)‖² from the centroid Gram (exact for a σ
        proportional to ω on clusters)."""
        unl = ~data.labeled
        limits = self._limits(data)
        if dual is not None:
            given = dual.expand(data.n, evaluation.regime)
            if np.any(given[~unl] != 0):
                raise ValueError("the dual point is set on labeled positives (σ lives on U)")
            box_text = f"[0, {limits.c2:g} ω]"
            sigma = clipped_into(given, limits.box, limits.relative, box_text)
            norm_sq = None if self.linear else self._expansion_norm_sq(data, sigma, limits.c1)
            source = "the given dual point"
            return self._bound_at(data, limits, sigma, evaluation, upper, norm_sq, source)
        part = solution.partition
        if part is None:
            return None
        if self.linear:
            return self._linear_bound(data, solution, evaluation, upper, aggregate)
        if solution.cluster_sigma is None:
            return None
        totals = part.weights(data.weight)
        spread = np.where(unl, (solution.cluster_sigma / totals)[part.labels] * data.row_weights, 0)
        sigma = np.clip(spread, 0.0, limits.box)
        # ‖w(σ)‖² is the aggregate's, at the exact spread: σ differs from it by the spread's
        # roundings (a division by the float W_k, a product) and by the clipping
        moved = moved_mass(spread, sigma, quotient_relative_error(2, data.weight_sums_error))
        source = "dual (6) at the aggregated σ spread over the unlabeled entries, on all data"
        norm_sq = solution.norm_sq
        return self._bound_at(data, limits, sigma, evaluation, upper, norm_sq, source, moved)

    def _linear_bound(self, data, solution, evaluation, upper, aggregate) -> Bound | None:
        """:meth:`lower_bound` for the linear kernel: the chunked pass's hooks on one block."""
        part = solution.partition
        candidates, context = self.bound_candidates(
            self.aggregate_of(data, part, aggregate), solution
        )
        found = []
        for d, what in candidates:
            per_row = d[part.labels]
            terms = self.bound_terms(data, per_row)
            source = f"{what}, on all data"
            bound = self.bound_from_terms(terms, context, 0, upper, source, data.feature_names)
            found.append((bound, partial(self._cluster_dual_point, data, per_row, evaluation)))
        return best_with_dual(found)

    def _cluster_dual_point(self, data, per_row, evaluation) -> DualPoint:
        """The dual point of a candidate of :meth:`bound_candidates` spread over the rows."""
        sigma = weighted_below(per_row[:, 0], data.weight)
        return self._dual_point_of(data, sigma, evaluation, float(per_row[0, 2]))

    def _bound_at(
        self, data, limits: _Limits, sigma, evaluation, upper, norm_sq, source, moved=0.0
    ) -> Bound:
        """The bound of :meth:`lower_bound` at a per-entry σ in ``limits.box`` (``norm_sq``:
        ‖w(σ)‖² of a kernel expansion, for a σ within ``moved`` (Σ|Δσ|) of the one it was
        computed at; None: w(σ) summed from the rows — linear kernel). c1's error r moves w
        by at most r·π/(2λ)·√kmax."""
        c1, c2, box, relative = limits  # σ ≤ box ≤ the exact c2ω: min(σ, box − σ) ≤ the exact
        unl = ~data.labeled
        concave = [(box_distance(sigma, box)[unl], 0.0)]
        if norm_sq is None:
            alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
            terms = dual_sums(data.X, concave, alpha, max(c1, c2), sigma, weight=data.weight)
            bound = self.bound_from_terms(terms, relative, 0, upper, source, data.feature_names)
        else:
            kmax, entry = self._kernel_max(data), kernel_entry_error(self.kernel, data.X)
            value, value_error = accurate_sum(concave[0][0])
            sum_sigma, sum_error = accurate_sum(sigma)
            mass = product_up(c1, total_weight_up(data.row_weights[data.labeled])) + sum_sigma
            target, target_error, beta_bound = self._offset(kmax, upper)
            residual, residual_error = minus(sum_sigma, sum_error, target, target_error)
            quad_error = quadratic_form_error(mass, data.n, kmax, entry)
            shift = product_up(relative * (target + target_error) + moved, np.sqrt(kmax))
            bound = ridge_dual_bound(
                value,
                value_error,
                norm_sq,
                quad_error + shifted_norm_error(norm_sq, quad_error, shift),
                source,
                residual=residual,
                residual_error=residual_error,
                offset_bound=beta_bound,
            )
        return dataclasses.replace(bound, dual=self._dual_point_of(data, sigma, evaluation, c2))

    def _dual_point_of(self, data, sigma, evaluation, c2: float) -> DualPoint:
        """σ as a dual point: compressed by regime onto 0, c2/2, c2 (linear, unweighted), else
        its support."""
        if self.linear and data.weight is None:
            return DualPoint.compress(sigma, evaluation.regime, (0.0, 0.5 * c2, c2))
        support = np.flatnonzero(sigma)
        return DualPoint(None, support.astype(np.int64), sigma[support])

    def _offset(self, kmax: float, upper: float) -> tuple[float, float, float]:
        """(π/(2λ), its rounding bound, B ≥ |β*|) of the residual ρ = Σσ − π/(2λ)
        (:meth:`lower_bound`): |β*| ≤ 1 + ‖w*‖√kmax, ‖w*‖ ≤ g + √(g² + 2E), g = π√kmax/λ."""
        target, relative = ratio(self.prior, 2.0 * self.lam)
        g = self.prior * np.sqrt(kmax) / self.lam
        w_bound = g + np.sqrt(g * g + 2.0 * max(upper, 0.0))
        return target, relative * target, 1.0 + w_bound * np.sqrt(kmax)

    def _expansion_norm_sq(self, data: PUData, sigma: NDArray, c1: float) -> float:
        """‖w(σ)‖² = αᵀKα over the rows, α = c1 ω on P, −σ on U (kernel models, verify)."""
        alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
        support = np.flatnonzero(alpha)
        Xs = data.X[support]
        return float(alpha[support] @ kernel_times(self.kernel, Xs, Xs, alpha[support]))

    def _sigma_from_primal(self, agg: PUAggregate, solution: PUSolution) -> NDArray:
        """σ_k per cluster from complementary slackness at (w, β): 0 where f(x̄_k) < −1, c2W_k/2
        inside, c2W_k above 1; clusters at f = ±1 are free and, by least squares, make
        Σσ = π/(2λ) and w(σ) = w (7) hold as nearly as the box allows."""
        c1, c2 = _constants(agg.weight, agg.labeled, self.prior, self.lam)
        weight, x_sum, labeled = agg.weight, agg.x_sum, agg.labeled
        xbar = agg.xbar
        assert solution.coef is not None, "a linear solution carries w"
        f = xbar @ solution.coef + solution.bias
        tol = 1e-9 * (np.abs(xbar) @ np.abs(solution.coef) + abs(solution.bias) + 1.0)
        C = c2 * weight
        sigma = np.where(f < -1, 0.0, np.where(f > 1, C, 0.5 * C))
        ties = (np.abs(f - 1) <= tol) | (np.abs(f + 1) <= tol)
        sigma[ties] = np.where(f[ties] > 0, 0.75, 0.25) * C[ties]
        U = ~labeled
        A = np.vstack([np.ones(U.sum()), xbar[U].T])
        target = np.r_[
            self.prior / (2.0 * self.lam), c1 * x_sum[labeled].sum(axis=0) - solution.coef
        ]
        sigma[U] = repair_equalities(A, target, sigma[U], 0.0, C[U], free=ties[U])
        # Σσ = π/(2λ) is what feasibility needs (w(σ) = w only tightens): restore it last
        sigma[U] = repair_equalities(A[:1], target[:1], sigma[U], 0.0, C[U], free=ties[U])
        sigma[labeled] = 0.0
        return sigma

    # ------------------------------------------------------------------ the chunked data pass
    def check_blocks(self) -> None:
        """Rows in blocks take the linear kernel only (a kernel needs every row's Gram)."""
        if not self.linear:
            raise InvalidParameterError(
                f"PU learning with the {self.kernel.kind} kernel needs the kernel sums of all "
                "rows at once; rows in blocks (--engine) take the linear kernel."
            )

    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks."""
        return min(whole.n, max(2 * _SAMPLE_UNLABELED, 20 * whole.m))

    def initial_rule(self, sample: PUData, whole: Any, rate: float) -> ScoreBins:
        """C^0 without clustering every row at once: the linear PU fit of
        :meth:`_sample_scores` on the sample (its positives by their centroid, every row
        standing for n/|sample| rows), and the quantiles of its scores on the sample's
        unlabeled rows as the edges of the unlabeled clusters (the positives: one cluster).
        A sample without positives or without unlabeled rows gives one unlabeled cluster."""
        P, U = sample.labeled, ~sample.labeled
        n_unlabeled = max(1, round(whole.n * float(U.mean())))
        k = n_clusters_for_rate(rate, n_unlabeled, minimum=min(n_unlabeled, _MIN_CLUSTERS))
        if not (P.any() and U.any()):
            return ScoreBins(np.zeros(whole.m), np.empty(0))
        omega = sample.row_weights
        mean_p = (omega[P] @ sample.X[P]) / omega[P].sum()
        rows = np.vstack([mean_p, sample.X[U]])
        weights = np.r_[omega[P].sum(), omega[U]] * (whole.n / sample.n)
        mask = np.r_[True, np.zeros(int(U.sum()), dtype=bool)]
        direction = pu_fit(rows, mask, weights, self.prior, self.lam, self.kernel).coef
        assert direction is not None, "the linear sample fit carries w"
        score = sample.X[U] @ direction
        return ScoreBins(direction, np.quantile(score, np.arange(1, k) / k))

    def initial_labels(self, rows: PUData, offset: int, rule: ScoreBins) -> NDArray[np.int64]:
        """Positives 0; an unlabeled row 1 + the bin of its score."""
        bins = 1 + np.searchsorted(rule.edges, rows.X @ rule.direction)
        return np.where(rows.labeled, 0, bins).astype(np.int64)

    def cluster_columns(self, rows: PUData) -> list[NDArray]:
        """(1, ω_i, [ω_i ≠ 1], [i ∈ P], ω_i x_i) per row: their cluster sums are the
        aggregated data (and tell whether the weights of P and U are exact)."""
        return [ROW_COUNT, rows.row_weights, rows.non_unit_weight, rows.labeled, rows.weighted_X]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> PUAggregate:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`."""
        count, positives = sums[:, 0], sums[:, 3]
        assert np.all((positives == 0) | (positives == count)), "a cluster mixes P and U"
        exact = not np.any(sums[:, 2])
        return PUAggregate(
            x_sum=np.ascontiguousarray(sums[:, 4:]),
            weight=sums[:, 1].copy(),
            labeled=positives > 0,
            partition=partition,
            total_error=0.0 if exact else sum_relative_error(partition.n),
        )

    def bound_candidates(
        self, agg: PUAggregate, solution: PUSolution
    ) -> tuple[list[tuple[NDArray[np.float64], str]], float]:
        """Per cluster (σ_k/W_k, α_k/W_k, c2'): σ per unit weight from the aggregated σ and from
        the σ complementary slackness gives (w̄, β̄), values within 1e-12 of 0, c2/2, c2 snapped
        to them and clipped to [0, c2']; α per unit weight c1 on P, −σ on U (7); c2' = c2
        shrunk by its error bound (≤ the true c2: the box and min(σ, c2ω − σ) stay valid).
        The context is the relative error bound of c1."""
        c1, c2 = _constants(agg.weight, agg.labeled, self.prior, self.lam)
        c2_low, relative = _below_c2(c2, agg.total_error)
        candidates = []
        if solution.cluster_sigma is not None and solution.cluster_sigma.shape == agg.weight.shape:
            candidates.append((solution.cluster_sigma, "the aggregated σ"))
        if solution.coef is not None:
            rebuilt = self._sigma_from_primal(agg, solution)
            candidates.append((rebuilt, "the σ that complementary slackness gives the primal"))
        out = []
        for sigma, what in candidates:
            s = np.where(agg.labeled, 0.0, sigma / agg.weight)
            for anchor in (0.0, 0.5, 1.0):
                s[np.abs(s - anchor * c2) <= 1e-12 * c2] = anchor * c2
            s = np.clip(s, 0.0, c2_low)
            d = np.column_stack([s, np.where(agg.labeled, c1, -s), np.full(s.size, c2_low)])
            out.append((d, f"dual (6) at {what} spread over the unlabeled entries"))
        return out, relative

    def bound_terms(self, rows: PUData, d: NDArray[np.float64]) -> DualSums:
        """The row sums of the bound of :meth:`lower_bound` on the block ``rows`` at the
        per-row (σ/ω, α/ω, c2') of :meth:`bound_candidates`: Σ_U min(σ, c2'ω − σ) (exact, σ and
        the box rounded down), w(σ) = Σ α_i x_i and Σσ (:func:`~aidopt.core.dual_sums.
        dual_sums`)."""
        sigma = weighted_below(d[:, 0], rows.weight)  # σ = s∘ω, rounded down
        alpha = (
            d[:, 1]
            if rows.weight is None
            else np.where(rows.labeled, d[:, 1] * rows.weight, -sigma)
        )
        box = weighted_below(d[:, 2], rows.weight)  # ≥ σ, ≤ c2'ω
        concave = [(box_distance(sigma, box)[~rows.labeled], 0.0)]
        top = float(np.abs(alpha).max(initial=0.0))
        return dual_sums(rows.X, concave, alpha, top, sigma)

    def bound_from_terms(
        self,
        terms: DualSums,
        relative: float,
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound:
        """−½‖w(σ)‖² + Σ_U min(σ, c2ω − σ) minus the rounding allowances, |β*||ρ| (see
        :meth:`lower_bound`; kmax = max ‖x‖²) and what c1's error (``relative``) can change in
        w(σ): ‖Δw‖ ≤ relative · c1 Σ_P ω ‖x‖ ≤ relative · π/(2λ) · max ‖x‖."""
        kmax = product_up(terms.row_norm, terms.row_norm)
        target, target_error, beta_bound = self._offset(kmax, upper)
        shift = product_up(relative, target + target_error, terms.row_norm)
        return terms.bound(
            source,
            target=target,
            target_error=target_error,
            offset_bound=beta_bound,
            v_shift=shift,
        )

    def solution_from_dict(
        self, data: PUData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> PUSolution:
        """Linear: (w, b) by column; other kernels: f = Σ_i α_i k(x_i, ·) + b with α = c1 ω on
        the positives and −σ on the unlabeled rows (7), σ the certificate's dual point."""
        bias = float(payload["b"])
        if self.linear:
            coef = from_names(payload.get("w"), data.feature_names, "weight")
            return PUSolution(bias=bias, coef=coef, norm_sq=float(coef @ coef))
        if dual is None:
            raise DataError("A kernel PU solution is its dual expansion: the certificate's dual.")
        c1, _ = self.constants(data)
        sigma = dual.expand(data.n, None)
        alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
        support = np.flatnonzero(alpha)
        Xs = data.X[support]
        norm_sq = float(alpha[support] @ kernel_times(self.kernel, Xs, Xs, alpha[support]))
        return PUSolution(
            bias=bias,
            coef=None,
            norm_sq=norm_sq,
            entry_coef=alpha,
            labels=np.arange(data.n),
        )

    def solution_to_dict(
        self, data: PUData, solution: PUSolution, row_sums: NDArray | None = None
    ) -> dict[str, Any]:
        """β, w by column (linear kernel) and the prediction sign(f) of every row (f = 0 → +1);
        rows in blocks (``row_sums`` of :meth:`solution_row_sums` over them, ``data`` their
        header): the share of rows predicted +1 instead."""
        out: dict[str, Any] = {"b": float(solution.bias)}
        if solution.coef is not None:
            out["w"] = by_name(data.feature_names, solution.coef)
        if row_sums is not None:
            out["predicted_positive_share"] = float(row_sums[0] / row_sums[1])
            return out
        f = self.training_scores(data, solution)
        out["predictions"] = np.where(f >= 0.0, 1, -1).tolist()
        return out

    def solution_row_sums(self, rows: PUData, solution: PUSolution) -> NDArray[np.int64]:
        """(rows predicted +1, rows) of a block."""
        f = self.training_scores(rows, solution)
        return np.array([int(np.count_nonzero(f >= 0.0)), rows.n], dtype=np.int64)


def _alpha_mass(solution: PUSolution) -> float:
    """Σ_i |α_i| of a kernel solution."""
    assert solution.alpha is not None, "a kernel solution carries α"
    return float(np.abs(solution.alpha).sum())


def _sigma(values: Values) -> NDArray | None:
    """σ_u = a_u + b_u, the multipliers of the linear primal's two slack rows (None: none)."""
    plus, minus = values.dual("plus_one"), values.dual("minus_one")
    return None if plus is None or minus is None else plus + minus


def _feasible_sigma(sigma: NDArray, agg: PUAggregate, prior: float, lam: float) -> NDArray:
    """σ clipped to its box and its sum set to π/(2λ) by spreading the residual over the room."""
    C = _constants(agg.weight, agg.labeled, prior, lam)[1] * agg.weight[~agg.labeled]
    sigma = np.clip(np.asarray(sigma, dtype=np.float64), 0.0, C)
    residual = prior / (2.0 * lam) - math.fsum(sigma)
    room = C - sigma if residual > 0 else sigma
    return np.clip(sigma + residual * room / math.fsum(room), 0.0, C)


def _warm_start(agg: PUAggregate, previous: Previous | None) -> NDArray | str:
    """σ of the previous aggregated problem, each parent's σ shared by its children in
    proportion to their sizes (feasible: same Σσ, same σ/C ratio)."""
    part = agg.partition
    if previous is None or part.parent is None or previous.solution.cluster_sigma is None:
        return "feasible"
    parent_sigma = previous.solution.cluster_sigma[part.parent]
    parent_weight = previous.aggregate.weight[part.parent]
    sigma = parent_sigma * agg.weight / parent_weight
    return sigma[~agg.labeled]


MODEL = PUModel
