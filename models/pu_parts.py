"""Positive–unlabeled (PU) learning with the double-hinge loss (Sansone et al. 2019), under AID:
what the linear model (``models/pu.py``, the primal (5)) and the kernel model
(``models/pu_kernel.py``, the dual (6)) share.

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

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import by_name
from aidopt.common.lazy import dense
from aidopt.common.options import Option
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    below,
    clipped_into,
    dual_box,
    plus_half_squared_norm,
)
from aidopt.core.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.core.contract import AggregatedModel, Evaluation, Previous
from aidopt.core.kernel_aggregate import LazyGram, SummedKernels
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.core.sample_fits import pu_fit
from aidopt.data.containers import PositiveUnlabeledData
from aidopt.data.pu import GENERATOR
from aidopt.exceptions import InvalidParameterError
from aidopt.numerics.kernels import (
    Kernel,
    kernel_flag_options,
    kernel_flags,
    kernel_from_flags,
    kernel_times,
)
from aidopt.numerics.rounding import (
    accurate_weighted_sum,
    minus,
    quotient_relative_error,
    ratio,
    sum_relative_error,
    times,
)
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import PULearning

__all__ = [
    "PUAggregate",
    "PUBase",
    "PUData",
    "PUSolution",
    "cluster_columns",
    "double_hinge",
    "pu_aggregate",
]

PUData = PositiveUnlabeledData  # the data PU learning takes: X (N × d), the labeled mask

_LINEAR = Kernel("linear")
SAMPLE_UNLABELED = 1000  # rows of the sample fit that places the initial clusters
SAMPLE_POSITIVE = 500
MIN_CLUSTERS = 10  # unlabeled clusters of C^0 at least


def double_hinge(f: NDArray[np.float64]) -> NDArray[np.float64]:
    """ℓ(f, −1) = max(f, 0, (1 + f)/2), the loss of an unlabeled point (digest §1.1)."""
    return np.maximum(np.maximum(f, 0.0), 0.5 * (1.0 + f))


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


class Limits(NamedTuple):
    """c1, c2 of the data, σ's box inside the exact one, c1's relative error bound."""

    c1: float
    c2: float
    box: NDArray[np.float64]
    relative: float


def below_c2(c2: float, total_error: float) -> tuple[float, float]:
    """(c2' ≤ the exact c2, r ≥ the relative error of c1 and c2) for c1, c2 computed as
    π/(2λ·p), 1/(2λ·n) from totals p, n within ``total_error`` (relatively): two roundings
    each (:func:`aidopt.core.certificate.below`)."""
    relative = quotient_relative_error(2, total_error)
    return below(c2, relative), relative


def pu_constants(weight, labeled, prior: float, lam: float) -> tuple[float, float]:
    """c1 = π/(2λp), c2 = 1/(2λn) with p, n the total weights of labeled / unlabeled rows."""
    return prior / (2.0 * lam * float(weight[labeled].sum())), 1.0 / (
        2.0 * lam * float(weight[~labeled].sum())
    )


def cluster_columns(rows: PUData) -> list[NDArray]:
    """(1, ω_i, [ω_i = 1], [i ∈ P], ω_i x_i) per row: their cluster sums are the
    aggregated data (and tell whether the weights of P and U are exact)."""
    return [ROW_COUNT, rows.row_weights, rows.unit_weight, rows.labeled, rows.weighted_X]


def pu_aggregate(sums: NDArray[np.float64], partition: Any) -> PUAggregate:
    """The aggregated data from the cluster sums of :meth:`cluster_columns`."""
    count, positives = sums[:, 0], sums[:, 3]
    assert np.all((positives == 0) | (positives == count)), "a cluster mixes P and U"
    exact = bool(np.all(sums[:, 2] == count))
    return PUAggregate(
        x_sum=np.ascontiguousarray(sums[:, 4:]),
        weight=sums[:, 1].copy(),
        labeled=positives > 0,
        partition=partition,
        total_error=0.0 if exact else sum_relative_error(partition.n),
    )


class PUBase(AggregatedModel[PUData, PUAggregate, PUSolution]):
    """PU learning (5)/(6) under AID: the double-hinge risk of Sansone et al. (2019) with λ‖f‖².

    ``kernel`` is an :class:`aidopt.numerics.kernels.Kernel` (default linear; the paper's Gaussian
    of scale 1 is ``Kernel("rbf", gamma=0.5)``); on the command line ``--kernel``, ``--gamma``,
    ``--degree`` and ``--coef0`` build it (an option the kernel ignores is an error).
    ``span_reduction`` solves the linear primal in the span of the centroids when its rank is
    below d (exact; fewer variables on wide data). A kernel other than linear makes the kernel
    model (:attr:`kernel_variant`, ``models/pu_kernel.py``).
    """

    name: ClassVar[str] = "pu"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    data_type: ClassVar[type] = PositiveUnlabeledData
    structures: ClassVar[tuple[type, ...]] = (PULearning,)
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

    def __new__(cls, *args: Any, **kwargs: Any) -> PUBase:
        """The kernel model (:attr:`kernel_variant`) for a :class:`Kernel` other than linear."""
        kernel = kwargs.get("kernel", args[2] if len(args) > 2 else _LINEAR)
        variant = cls.kernel_variant
        if variant is not None and isinstance(kernel, Kernel) and kernel.kind != "linear":
            return cast(PUBase, variant(*args, **kwargs))
        return super().__new__(cls)

    @classmethod
    def from_options(
        cls,
        kernel: Kernel | str = _LINEAR,
        gamma: float | None = None,
        degree: int | None = None,
        coef0: float | None = None,
        **values: Any,
    ) -> PUBase:
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
        return pu_constants(data.row_weights, data.labeled, self.prior, self.lam)

    def _limits(self, data: PUData) -> Limits:
        """c1, c2 of the data, σ's box c2'ω rounded down inside the exact [0, c2ω], and r ≥ c1's
        relative error (:func:`below_c2`: the weights' totals are float sums)."""
        c1, c2 = self.constants(data)
        c2_low, relative = below_c2(c2, data.weight_sums_error)
        return Limits(c1, c2, dual_box(c2_low, data.weight, data.n), relative)

    def default_rate(self, data: PUData) -> float:
        """r^0 = max{1.1 m/N, 0.0001} (the paper's SVM rate), with ≥ 10 unlabeled clusters."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    def initial_partition(self, data: PUData, rate: float, rng: np.random.Generator) -> Partition:
        """All positives in one cluster (their loss is affine: exact); the unlabeled rows by one
        k-means pass on the 1-D scores of a PU classifier fitted on a random sample."""
        unl = np.flatnonzero(~data.labeled)
        k = n_clusters_for_rate(rate, unl.size, minimum=min(unl.size, MIN_CLUSTERS))
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
        su = rng.choice(unl, size=min(unl.size, SAMPLE_UNLABELED), replace=False)
        sample_u = dense(data.X[su])
        weights_u = omega[su] * (omega[unl].sum() / omega[su].sum())
        if self.linear:
            mean_p = np.asarray(omega[pos] @ data.X[pos]).ravel() / omega[pos].sum()
            rows = np.vstack([mean_p, sample_u])
            weights = np.r_[omega[pos].sum(), weights_u]
        else:
            sp_ = rng.choice(pos, size=min(pos.size, SAMPLE_POSITIVE), replace=False)
            rows = np.vstack([data.X[sp_], sample_u])
            weights = np.r_[omega[sp_] * (omega[pos].sum() / omega[sp_].sum()), weights_u]
        mask = np.r_[np.ones(len(rows) - su.size, dtype=bool), np.zeros(su.size, dtype=bool)]
        fit = pu_fit(rows, mask, weights, self.prior, self.lam, self.kernel)
        if fit.coef is not None:
            return data.X[unl] @ fit.coef
        return kernel_times(self.kernel, data.X[unl], rows, fit.alpha)

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
            start=warm_start(agg, previous),
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
            constants=(
                *pu_constants(agg.weight, agg.labeled, self.prior, self.lam),
                agg.total_error,
            ),
        )

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
        weight = rows.weight
        P, U = rows.labeled, ~rows.labeled
        positive, pos_error = accurate_weighted_sum(f[P], None if weight is None else weight[P])
        loss, loss_error = accurate_weighted_sum(
            double_hinge(f[U]), None if weight is None else weight[U]
        )
        f_error = self._score_error(rows, solution)
        objective, error = minus(
            *times(c2, loss, loss_error, relative), *times(c1, positive, pos_error, relative)
        )
        error += max(c1, c2) * f_error
        if offset == 0:
            objective, error = plus_half_squared_norm(objective, error, solution.norm_sq, rows.m)
            error += self._norm_error(rows, solution)
        regime = np.where(rows.labeled, 0, _regime(f))
        return Evaluation(float(objective), regime, None, error)

    @abstractmethod
    def _score_error(self, rows: PUData, solution: PUSolution) -> float:
        """Σ_i ω_i |fl(f_i) − f_i| over the rows of a block (a bound)."""

    def _norm_error(self, rows: PUData, solution: PUSolution) -> float:
        """A bound on the error of ‖f − β‖² beyond :func:`plus_half_squared_norm`'s (0: w
        explicit)."""
        return 0.0

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
        limits = self._limits(data)
        if dual is None:
            if solution.partition is None:
                return None
            return self._aggregated_bound(data, solution, evaluation, upper, limits, aggregate)
        given = dual.expand(data.n, evaluation.regime)
        if np.any(given[data.labeled] != 0):
            raise ValueError("the dual point is set on labeled positives (σ lives on U)")
        sigma = clipped_into(given, limits.box, limits.relative, f"[0, {limits.c2:g} ω]")
        return self._bound_at(data, limits, sigma, evaluation, upper, "the given dual point")

    @abstractmethod
    def _aggregated_bound(
        self,
        data: PUData,
        solution: PUSolution,
        evaluation: Evaluation,
        upper: float,
        limits: Limits,
        aggregate: Any,
    ) -> Bound | None:
        """:meth:`lower_bound` at the dual the aggregated solution gives."""

    @abstractmethod
    def _bound_at(
        self,
        data: PUData,
        limits: Limits,
        sigma: NDArray,
        evaluation: Evaluation,
        upper: float,
        source: str,
    ) -> Bound:
        """:meth:`lower_bound` at a per-entry σ in ``limits.box``."""

    def _dual_point_of(
        self, data: PUData, sigma: NDArray, evaluation: Evaluation, c2: float
    ) -> DualPoint:
        """σ as a dual point: its support."""
        return DualPoint.on_support(sigma)

    def _offset(self, kmax: float, upper: float) -> tuple[float, float, float]:
        """(π/(2λ), its rounding bound, B ≥ |β*|) of the residual ρ = Σσ − π/(2λ)
        (:meth:`lower_bound`): |β*| ≤ 1 + ‖w*‖√kmax, ‖w*‖ ≤ g + √(g² + 2E), g = π√kmax/λ."""
        target, relative = ratio(self.prior, 2.0 * self.lam)
        g = self.prior * np.sqrt(kmax) / self.lam
        w_bound = g + np.sqrt(g * g + 2.0 * max(upper, 0.0))
        return target, relative * target, 1.0 + w_bound * np.sqrt(kmax)

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


def feasible_sigma(sigma: NDArray, agg: PUAggregate, prior: float, lam: float) -> NDArray:
    """σ clipped to its box and its sum set to π/(2λ) by spreading the residual over the room."""
    C = pu_constants(agg.weight, agg.labeled, prior, lam)[1] * agg.weight[~agg.labeled]
    sigma = np.clip(np.asarray(sigma, dtype=np.float64), 0.0, C)
    residual = prior / (2.0 * lam) - math.fsum(sigma)
    room = C - sigma if residual > 0 else sigma
    return np.clip(sigma + residual * room / math.fsum(room), 0.0, C)


def warm_start(agg: PUAggregate, previous: Previous | None) -> NDArray | str:
    """σ of the previous aggregated problem, each parent's σ shared by its children in
    proportion to their sizes (feasible: same Σσ, same σ/C ratio)."""
    part = agg.partition
    if previous is None or part.parent is None or previous.solution.cluster_sigma is None:
        return "feasible"
    parent_sigma = previous.solution.cluster_sigma[part.parent]
    parent_weight = previous.aggregate.weight[part.parent]
    sigma = parent_sigma * agg.weight / parent_weight
    return sigma[~agg.labeled]
