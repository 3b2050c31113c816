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

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pyomo.environ as pyo

from aidopt.bench.spec import BenchSpec, Method, Workload
from aidopt.certificate import (
    EPS,
    Bound,
    DualPoint,
    abs_column_sums,
    accurate_sum,
    accurate_tdot,
    accurate_weighted_sum,
    dual_box,
    repair_equalities,
)
from aidopt.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.contract import AggregatedModel, Evaluation, Previous
from aidopt.data.containers import FeatureData
from aidopt.data.generate import Generator
from aidopt.kernels import kernel_flag_options, kernel_from_flags
from aidopt.options import Option, from_args
from aidopt.partition import Partition
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolveResult
from aidopt.structures import SVMFit, WeightedSVM


@dataclass(frozen=True, eq=False)
class Aggregate:
    """Cluster sums Σ_{i∈C_k} ω_i x_i, weights W_k = Σ_{C_k} ω_i (|C_k| without row weights),
    and N = Σ_i ω_i."""

    x_sum: NDArray[np.float64]
    weight: NDArray[np.float64]
    partition: Partition
    total: float

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]


@dataclass(frozen=True)
class Solution:
    """w, and the cluster duals a_k (None when the route gave none)."""

    w: NDArray[np.float64]
    a: NDArray[np.float64] | None
    partition: Partition


def blobs(n: int, m: int, *, seed: int = 0) -> pd.DataFrame:
    """Two Gaussian blobs around +2·1 and +3·1 (a domain away from the origin)."""
    rng = np.random.default_rng(seed)
    centre = np.where(rng.random(n) < 0.5, 2.0, 3.0)[:, None]
    X = centre + rng.standard_normal((n, m))
    return pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(m)])


#: ``aidopt generate ocsvm|svdd``
BLOBS = Generator(
    make=blobs,
    options=(
        Option("n", kind=int, low=1, help="rows"),
        Option("m", kind=int, low=1, help="features"),
    ),
    help="two Gaussian blobs away from the origin",
)


def _instance(n: int, m: int, seed: int) -> FeatureData:
    return FeatureData.from_frame(blobs(n, m, seed=seed))


class OneClassSVMModel(AggregatedModel[FeatureData, Aggregate, Solution]):
    """Linear large-margin one-class SVM (1): min ½‖w‖² + (C/N) Σ max{0, 1 − w·x_i}."""

    name: ClassVar[str] = "ocsvm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    gives_lower_bound: ClassVar[bool] = True
    data_type: ClassVar[type] = FeatureData
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svc.md)
    supports_weights: ClassVar[bool] = True
    citation: ClassVar[str] = (
        "Pham, Le & Dang, Scalable Support Vector Clustering Using Budget, (1)"
    )
    options: ClassVar[tuple[Option, ...]] = (Option("C", 1.0, "penalty C of (1)", low=0.0),)
    cli_extras: ClassVar[tuple[Option, ...]] = kernel_flag_options(
        "linear: the primal QP; rbf/poly: the aggregated dual (models/ocsvm_kernel.py)"
    )
    generator: ClassVar[Any] = BLOBS
    bench: ClassVar[Any] = BenchSpec(
        workloads=(Workload(make=_instance, sizes=((1_000, 3), (2_000, 5))),),
        methods=(
            Method("aid-activeset", "aid", solver="activeset", pair="full-highs"),
            Method("aid-highs", "aid", solver="highs", pair="full-highs"),
            Method("full-highs", "full", solver="highs"),
            Method("aid-gurobi", "aid", solver="gurobi", pair="full-highs"),
        ),
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
        """This linear model, or the kernel LM-OCSVM for ``kernel`` rbf or poly."""
        if kernel == "linear":
            return cls(**values)
        from aidopt.models.ocsvm_kernel import KernelOneClassModel

        k = kernel_from_flags(kernel, gamma, degree, coef0, strict=False)
        return KernelOneClassModel(
            kernel=k.kind, gamma=k.gamma, degree=k.degree, coef0=k.coef0, **values
        )

    @classmethod
    def from_cli(cls, args: Any) -> AggregatedModel:
        """As :meth:`from_options`; a kernel flag the chosen ``--kernel`` ignores is an error."""
        values = from_args((*cls.options, *cls.cli_extras), args)
        kernel_from_flags(values["kernel"], values["gamma"], values["degree"], values["coef0"])
        return cls.from_options(**values)

    def default_rate(self, data: FeatureData) -> float:
        """r^0 = max{1.1m/N, 1e-4}, the SVM's (§4)."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    def initial_partition(
        self, data: FeatureData, rate: float, rng: np.random.Generator
    ) -> Partition:
        """One k-means pass on the 1-D projections x_i·x̄ onto the mean direction."""
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, data.m + 1))
        return Partition.from_labels(kmeans_one_pass(data.X @ data.X.mean(axis=0), k, rng))

    def aggregate(self, data: FeatureData, partition: Partition) -> Aggregate:
        return Aggregate(
            partition.sums(data.weighted_X),
            partition.weights(data.weight),
            partition,
            data.total_weight,
        )

    def _cost(self, agg: Aggregate) -> NDArray[np.float64]:
        return self.C * agg.weight / agg.total  # (C/N) W_k

    # ------------------------------------------------------------------ the aggregated problem
    def build(self, agg: Aggregate) -> pyo.ConcreteModel:
        import pyomo.environ as pyo  # loaded when a Pyomo model is built (~0.7 s)

        xbar, cost = agg.xbar, self._cost(agg)
        m = pyo.ConcreteModel(name="LM-OCSVM aggregated problem")
        m.K = pyo.RangeSet(0, len(cost) - 1)  # clusters k
        m.J = pyo.RangeSet(0, xbar.shape[1] - 1)  # features j
        m.w = pyo.Var(m.J)
        m.xi = pyo.Var(m.K, domain=pyo.NonNegativeReals)
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)  # a_k

        @m.Objective(sense=pyo.minimize)  # ½‖w‖² + (C/N) Σ_k |C_k| ξ_k
        def regularised_hinge(m):
            return 0.5 * sum(m.w[j] ** 2 for j in m.J) + sum(cost[k] * m.xi[k] for k in m.K)

        @m.Constraint(m.K)  # w·x̄_k ≥ 1 − ξ_k
        def margin(m, k):
            return sum(xbar[k, j] * m.w[j] for j in m.J) >= 1 - m.xi[k]

        return m

    def extract(self, model: pyo.ConcreteModel, agg: Aggregate) -> Solution:
        w = np.array([model.w[j].value for j in model.J])
        duals = [model.dual.get(model.margin[k]) for k in model.K]
        a = None if None in duals else np.abs(np.array(duals, dtype=np.float64))
        return Solution(w, a, agg.partition)

    def matrix_program(self, agg: Aggregate, previous: Previous | None = None) -> MatrixProgram:
        """Columns [w (m), ξ (K)], rows x̄_k·w + ξ_k ≥ 1: the row duals are the a_k."""
        K, m = agg.x_sum.shape
        return MatrixProgram(
            c=np.r_[np.zeros(m), self._cost(agg)],
            A=sp.hstack([sp.csr_matrix(agg.xbar), sp.eye(K)]).tocsc(),
            row_lower=np.ones(K),
            row_upper=np.full(K, np.inf),
            col_lower=np.r_[np.full(m, -np.inf), np.zeros(K)],
            col_upper=np.full(m + K, np.inf),
            Q=sp.diags(np.r_[np.ones(m), np.zeros(K)]).tocsc(),
        )

    def solution_from_program(self, result: SolveResult, agg: Aggregate) -> Solution:
        m = agg.x_sum.shape[1]
        a = None if result.row_duals is None else np.abs(result.row_duals)
        return Solution(result.x[:m], a, agg.partition)

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
        return Solution(answer.w, answer.alpha, agg.partition)

    # ------------------------------------------------------------------ evaluation, certificate
    def evaluate(self, data: FeatureData, solution: Solution) -> Evaluation:
        """J(w) on all entries (hinges × ω_i, with its rounding bound); regime [1 − w·x_i > 0]."""
        w = solution.w
        violation = 1.0 - data.X @ w
        hinge, hinge_error = accurate_weighted_sum(np.maximum(violation, 0.0), data.weight)
        scale = self.C / data.total_weight
        top = float(data.row_weights.max())
        rows = float(abs_column_sums(data.X) @ np.abs(w)) + data.n
        score_error = (data.m + 3) * EPS * top * rows
        error = scale * (hinge_error + score_error) + (data.m + 2) * EPS * float(w @ w)
        objective = 0.5 * float(w @ w) + scale * hinge
        return Evaluation(objective, (violation > 0).astype(np.int64), None, error)

    def lower_bound(
        self,
        data: FeatureData,
        solution: Solution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
    ) -> Bound | None:
        """Weak duality for (1) at α_i ∈ [0, Cω_i/N]: J* ≥ Σα_i − ½‖Σα_i x_i‖². α is the
        solver's a_k or the a_k complementary slackness gives w (free clusters on the margin
        solve Σ a_k x̄_k = w by least squares), spread as a_k ω_i/W_k; the larger bound is kept.
        """
        top = self._box(data)
        if dual is not None:
            alpha = dual.expand(data.n, evaluation.regime)
            if alpha.size and (alpha.min() < 0 or np.any(alpha > top)):
                raise ValueError(f"the dual point leaves its box [0, {self.C:g} ω_i/N]")
            return self._bound_at(data, alpha, evaluation, "the given dual point")
        part = solution.partition
        candidates = [self._a_from_primal(data, solution)]
        if solution.a is not None:
            candidates.append(solution.a)
        omega = 1.0 if data.weight is None else data.weight
        totals = part.weights(data.weight)
        bounds = [
            self._bound_at(
                data,
                np.minimum(np.clip(a / totals, 0.0, None)[part.labels] * omega, top),
                evaluation,
                "the aggregated dual spread over the entries",
            )
            for a in candidates
        ]
        return max(bounds, key=lambda b: b.value)

    def _box(self, data: FeatureData) -> NDArray[np.float64]:
        """The upper bound Cω_i/N of every α_i (:func:`aidopt.certificate.dual_box`)."""
        return dual_box(self.C / data.total_weight, data.weight, data.n)

    def _a_from_primal(self, data: FeatureData, solution: Solution) -> NDArray[np.float64]:
        part = solution.partition
        totals = part.weights(data.weight)
        xbar = part.dense_sums(data.weighted_X) / totals[:, None]
        upper = self.C * totals / data.total_weight
        violation = 1.0 - xbar @ solution.w
        ties = np.abs(violation) <= 1e-9 * (1.0 + np.abs(xbar) @ np.abs(solution.w))
        a = np.where(violation > 0, upper, 0.0)
        a[ties] = 0.5 * upper[ties]
        return repair_equalities(np.ascontiguousarray(xbar.T), solution.w, a, 0.0, upper, free=ties)

    def _bound_at(self, data, alpha, evaluation, source) -> Bound:
        total, total_error = accurate_sum(alpha)
        top = float(self._box(data).max())
        w, w_error = accurate_tdot(data.X, alpha, abs_bound=top * abs_column_sums(data.X))
        norm, norm_up = float(np.linalg.norm(w)), float(np.linalg.norm(np.abs(w) + w_error))
        value = total - 0.5 * norm**2
        allowance = total_error + 0.5 * (norm_up**2 - norm**2) * (1 + 4 * EPS)
        if data.weight is None:
            point = DualPoint.compress(alpha, evaluation.regime, (0.0, self.C / data.n))
        else:
            support = np.flatnonzero(alpha)
            point = DualPoint(None, support.astype(np.int64), alpha[support])
        return Bound(
            value - allowance, f"dual of (1) at {source}, on all data", point, value, allowance
        )

    def solution_to_dict(self, data: FeatureData, solution: Solution) -> dict[str, Any]:
        inside = float(np.average(data.X @ solution.w >= 1.0 - math.sqrt(EPS), weights=data.weight))
        return {
            "w": {name: float(v) for name, v in zip(data.feature_names, solution.w, strict=True)},
            "share_inside": inside,
        }

    def solution_from_dict(
        self, data: FeatureData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> Solution:
        w = np.array([float(payload["w"][name]) for name in data.feature_names])
        return Solution(w, None, Partition.singletons(data.n))


MODEL = OneClassSVMModel
