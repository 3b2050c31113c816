"""Least-absolute-deviation regression under AID (Park & Klabjan 2016, §3.1).

Original problem (2), with an optional intercept β₀ (a column of ones):

    E* = min_{β₀, β}  Σ_{i∈I} |y_i − β₀ − x_i β|

Aggregated data: x̄_k = mean_{i∈C_k} x_i, ȳ_k = mean_{i∈C_k} y_i, weight |C_k|.
Aggregated problem (3), as an LP with the deviation split e_k = e⁺_k − e⁻_k:

    F^t = min  Σ_{k∈K^t} |C_k| (e⁺_k + e⁻_k)
          s.t. ȳ_k − β₀ − x̄_k β = e⁺_k − e⁻_k,   e⁺_k, e⁻_k ≥ 0      k ∈ K^t

Upper bound (4): E^t = Σ_i |y_i − β̄₀ − x_i β̄| at the aggregated optimum.
Declustering (Prop. 1): regime_i = 1 if r_i = y_i − β̄₀ − x_i β̄ > 0 else 0; a cluster is pure
when its residuals share a regime, and when every cluster is pure E^t = F^t = E*.
Lower bound (Prop. 2): F^{t−1} ≤ F^t ≤ E*.

Matrix form (the fast path): the LP dual of (3), with one column per cluster and one row per
coefficient, which HiGHS' simplex solves an order of magnitude faster than (3) itself:

    max  Σ_k t_k s_k   s.t.  Σ_k S_k s_k = 0,   −1 ≤ s_k ≤ 1,
    S_k = Σ_{i∈C_k} (1, x_i),  t_k = Σ_{i∈C_k} y_i;

β = −(row duals) is an optimal solution of (3), and t·s at any feasible s is a lower bound on
F^t (weak duality). When clusters split, s_child = s_parent stays feasible (S_k = Σ S_child), so
the previous simplex basis, mapped to the children, warm-starts the next solve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from aidopt.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.contract import AggregatedModel, Evaluation, Previous
from aidopt.data.io import feature_matrix, target_column
from aidopt.exceptions import DataError
from aidopt.partition import Partition
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolveResult
from aidopt.validation import check_bool, check_matrix, check_vector

__all__ = ["LADAggregate", "LADData", "LADModel", "LADSolution"]

_BASIC, _LOWER, _UPPER = 1, 0, 2  # HiGHS basis status codes


@dataclass(frozen=True, eq=False)
class LADData:
    """Regression data: X (n × m) and y (n,), validated (finite, numeric, matching lengths)."""

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    feature_names: tuple[str, ...]
    target_name: str = "y"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "y",
    ) -> LADData:
        X = check_matrix(X, "X")
        y = check_vector(y, X.shape[0], "y")
        names = (
            tuple(feature_names)
            if feature_names is not None
            else tuple(f"x{j + 1}" for j in range(X.shape[1]))
        )
        if len(names) != X.shape[1]:
            raise DataError(f"X has {X.shape[1]} columns but {len(names)} feature names.")
        return cls(X=X, y=y, feature_names=names, target_name=target_name)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def m(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True, eq=False)
class LADAggregate:
    """Aggregated data: cluster sums of (1, x) and y; centroids = sums / |C_k|."""

    x_sum: NDArray[np.float64]  # (K, m)   Σ_{i∈C_k} x_i
    y_sum: NDArray[np.float64]  # (K,)     Σ_{i∈C_k} y_i
    weight: NDArray[np.float64]  # (K,)    |C_k|
    partition: Partition

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]

    @property
    def ybar(self) -> NDArray[np.float64]:
        return self.y_sum / self.weight


@dataclass(frozen=True)
class LADSolution:
    """Coefficients β (m,) and intercept β₀ (0.0 when not fitted)."""

    coef: NDArray[np.float64]
    intercept: float

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        return np.asarray(X, dtype=np.float64) @ self.coef + self.intercept


class LADModel(AggregatedModel[LADData, LADAggregate, LADSolution]):
    """LAD regression (2)/(3). ``fit_intercept`` adds β₀ (a column of ones)."""

    name: ClassVar[str] = "lad"
    problem_class: ClassVar[ProblemClass] = ProblemClass.LP
    gives_lower_bound: ClassVar[bool] = True
    citation: ClassVar[str] = "Park & Klabjan (2016), §3.1, problems (2)-(4), Props. 1-2"

    def __init__(self, fit_intercept: bool = True) -> None:
        self.fit_intercept = fit_intercept

    def check_params(self) -> None:
        check_bool(self.fit_intercept, "fit_intercept", type(self).__name__)

    def summary(self) -> dict[str, Any]:
        return {"fit_intercept": self.fit_intercept}

    def n_coefficients(self, data: LADData) -> int:
        return data.m + int(self.fit_intercept)

    # ------------------------------------------------------------------ data
    def data_from_frame(self, frame: pd.DataFrame, target: str | None) -> LADData:
        if target is None:
            raise DataError("LAD needs a target column.")
        y = target_column(frame, target)
        if not pd.api.types.is_numeric_dtype(y):
            raise DataError(f"Target column {target!r} is not numeric.")
        X, names = feature_matrix(frame, target)
        return LADData.from_arrays(X, y.to_numpy(), names, target)

    def check_data(self, data: LADData) -> None:
        p = self.n_coefficients(data)
        if data.n < p:
            raise DataError(
                f"Fewer rows ({data.n}) than coefficients ({p}: {data.m} columns"
                f"{' + intercept' if self.fit_intercept else ''}); the fit is not identified."
            )

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: LADData) -> float:
        """r^0 = max{3m/n, 0.0005} if m·n > 5·10^8, else max{2m/n, 0.0005} (paper §4)."""
        m, n = self.n_coefficients(data), data.n
        factor = 3 if m * n > 5e8 else 2
        return min(1.0, max(factor * m / n, 0.0005))

    def initial_partition(self, data: LADData, rate: float, rng: np.random.Generator) -> Partition:
        """Paper §4: fit on a small random sample → residuals r; one k-means pass on (r, y)."""
        p = self.n_coefficients(data)
        size = min(data.n, max(20 * p, 1000))
        sample = rng.choice(data.n, size=size, replace=False)
        coef, intercept = self._sample_fit(data.X[sample], data.y[sample])
        residual = data.y - data.X @ coef - intercept
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, p + 1))
        return Partition.from_labels(kmeans_one_pass(np.column_stack([residual, data.y]), k, rng))

    def _sample_fit(self, X, y) -> tuple[NDArray[np.float64], float]:
        """Least-squares fit on the sample: only used to place the initial clusters."""
        design = np.column_stack([np.ones(len(y)), X]) if self.fit_intercept else X
        beta = np.linalg.lstsq(design, y, rcond=None)[0]
        return (beta[1:], float(beta[0])) if self.fit_intercept else (beta, 0.0)

    # ------------------------------------------------------------------ aggregated data
    def aggregate(self, data: LADData, partition: Partition) -> LADAggregate:
        return LADAggregate(
            x_sum=partition.sums(data.X),
            y_sum=partition.sums(data.y),
            weight=partition.sizes.astype(np.float64),
            partition=partition,
        )

    # ------------------------------------------------------------------ aggregated problem (3)
    def build(self, agg: LADAggregate) -> pyo.ConcreteModel:
        xbar, ybar, weight = agg.xbar, agg.ybar, agg.weight
        model = pyo.ConcreteModel(name="LAD aggregated problem (3)")
        model.K = pyo.RangeSet(0, len(weight) - 1)  # clusters k ∈ K^t
        model.J = pyo.RangeSet(0, xbar.shape[1] - 1)  # attributes j ∈ J
        model.beta = pyo.Var(model.J)  # β_j, free
        model.beta0 = pyo.Var()  # β₀, the intercept
        if not self.fit_intercept:
            model.beta0.fix(0.0)
        model.e_plus = pyo.Var(model.K, domain=pyo.NonNegativeReals)  # e⁺_k
        model.e_minus = pyo.Var(model.K, domain=pyo.NonNegativeReals)  # e⁻_k

        @model.Objective(sense=pyo.minimize)  # (3) Σ_k |C_k| |ȳ_k − x̄_k β|
        def weighted_absolute_deviation(m):
            return sum(weight[k] * (m.e_plus[k] + m.e_minus[k]) for k in m.K)

        @model.Constraint(model.K)  # (3) ȳ_k − β₀ − x̄_k β = e⁺_k − e⁻_k
        def deviation(m, k):
            fit = m.beta0 + sum(xbar[k, j] * m.beta[j] for j in m.J)
            return ybar[k] - fit == m.e_plus[k] - m.e_minus[k]

        return model

    def extract(self, model: pyo.ConcreteModel, agg: LADAggregate) -> LADSolution:
        coef = np.array([pyo.value(model.beta[j]) for j in model.J], dtype=np.float64)
        return LADSolution(coef=coef, intercept=float(pyo.value(model.beta0)))

    # ------------------------------------------------------------------ matrix form (LP dual)
    def matrix_program(self, agg: LADAggregate, previous: Previous | None = None) -> MatrixProgram:
        columns = self._dual_columns(agg)  # (p, K): S_k as columns
        K = len(agg.weight)
        start = self._warm_basis(agg, previous) if previous is not None else None
        return MatrixProgram(
            c=-agg.y_sum,
            A=sp.csc_matrix(columns),
            row_lower=np.zeros(columns.shape[0]),
            row_upper=np.zeros(columns.shape[0]),
            col_lower=-np.ones(K),
            col_upper=np.ones(K),
            start_basis=start,
        )

    def solution_from_program(self, result: SolveResult, agg: LADAggregate) -> LADSolution:
        beta = -np.asarray(result.row_duals)
        if self.fit_intercept:
            return LADSolution(coef=beta[1:].copy(), intercept=float(beta[0]))
        return LADSolution(coef=beta, intercept=0.0)

    def program_bound(self, result: SolveResult, agg: LADAggregate) -> float | None:
        """t·s at the returned dual point: a lower bound on F^t by weak duality."""
        return float(agg.y_sum @ result.x)

    def _dual_columns(self, agg: LADAggregate) -> NDArray[np.float64]:
        if self.fit_intercept:
            return np.vstack([agg.weight, agg.x_sum.T])
        return np.ascontiguousarray(agg.x_sum.T)

    @staticmethod
    def _warm_basis(agg: LADAggregate, previous: Previous) -> tuple | None:
        """Map the previous simplex basis to the split clusters.

        A nonbasic parent's children keep its bound; of a basic parent's children the first
        stays basic and the others sit at the bound their residual sign asks for (regime 1 →
        s = +1), so the basis keeps exactly one basic column per basic parent.
        """
        part = agg.partition
        basis = previous.result.basis
        if basis is None or part.parent is None:
            return None
        col_prev, row_prev = basis
        status = col_prev[part.parent].copy()
        basic_child = np.flatnonzero(status == _BASIC)
        _, first = np.unique(part.parent[basic_child], return_index=True)
        extra = np.setdiff1d(basic_child, basic_child[first], assume_unique=True)
        status[extra] = np.where(part.cluster_regime[extra] == 1, _UPPER, _LOWER)
        return status, row_prev

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, data: LADData, solution: LADSolution) -> Evaluation:
        residual = data.y - data.X @ solution.coef - solution.intercept
        return Evaluation(
            objective=float(np.abs(residual).sum()), regime=(residual > 0).astype(np.int64)
        )

    def solution_to_dict(self, data: LADData, solution: LADSolution) -> dict[str, Any]:
        return {
            "coef": {
                name: float(v) for name, v in zip(data.feature_names, solution.coef, strict=True)
            },
            "intercept": float(solution.intercept),
        }


# ---------------------------------------------------------------------- CLI hooks
MODEL_CLASS = LADModel


def add_cli_arguments(parser) -> None:
    """Options of ``aidopt solve lad``."""
    parser.add_argument("--no-intercept", action="store_true", help="fit without the intercept β₀")


def model_from_cli(args) -> LADModel:
    return LADModel(fit_intercept=not args.no_intercept)
