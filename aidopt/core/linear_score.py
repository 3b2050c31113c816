"""Models whose loss is piecewise linear in a linear score, with a ridge: the framework's part.

Park & Klabjan's form (1) with f = ½‖·‖²: for rows (x_i, y_i), i = 1…n,

    P* = min_{w,b}  ½‖w‖² + Σ_i ℓ(y_i, s_i),   s_i = x_i·w + b,   ℓ convex, piecewise linear in s

A model of this family (:class:`LinearScoreModel`; ``models/svr.py`` is one) states its loss ℓ,
the conjugate −ℓ*, its aggregated problem (declared once, :mod:`aidopt.solvers.algebra`) and how to
read w, b and the cluster multipliers from the solved declaration. Everything else is here, once,
for rows in memory and rows in blocks alike (the in-memory run is the one-block case of the same
code, and ``--engine dask`` needs nothing more):

* **Aggregate**: the cluster sums of (1, x_i, y_i); the aggregated rows are (x̄_k, ȳ_k) with
  weight W_k = |C_k|. By Jensen (ℓ is jointly convex in (y, s)) the aggregated optimum F ≤ P*.
* **Evaluation** E = ½‖w‖² + Σ ℓ(y_i, s_i) with a bound on its rounding error: the score's error
  ≤ (m + 3)ε(|x_i|·|w| + |b|) costs ``slope`` times that, and ℓ's own few roundings
  4ε·``magnitude`` per row.
* **Certificate** (weak duality; docs/certificates.md). With β_i the multiplier of s_i,

      D(β) = Σ_i −ℓ*(y_i, β_i) − ½‖Σ_i β_i x_i‖²   over   lo ≤ β_i ≤ hi,  Σ_i β_i = 0,

  and the aggregated multipliers β̄_k spread over the rows (β_i = β̄_k/W_k for i ∈ C_k) give
  Σ_i β_i x_i = Σ_k β̄_k x̄_k and D(β) = the aggregated dual value. On all rows the sums are
  accurate sums with rounding bounds, and the residual ρ = Σ_i β_i (0 in exact arithmetic) is
  charged B·|ρ|, where B ≥ |b*| is the model's ``intercept_bound`` with ‖w*‖ ≤ √(2U) from the
  proven upper bound U. The dual point is kept (its nonzero entries) for ``aidopt verify``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.lazy import dense
from aidopt.core.certificate import Bound, DualPoint, plus_half_squared_norm
from aidopt.core.clustering import ResidualBins
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous, SubSolve
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.exceptions import DataError
from aidopt.numerics.rounding import (
    EPS,
    accurate_sum,
    product_up,
    score_error,
)
from aidopt.solvers.algebra import DualForm, Problem, Values
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.solvers.program import ProblemClass

__all__ = ["Aggregate", "LinearFit", "LinearScoreModel"]


@dataclass(frozen=True, eq=False)
class Aggregate:
    """Cluster sums of (x_i, y_i, 1): Σ x_i (K × m), Σ y_i (K,), weights W_k = |C_k|."""

    x_sum: NDArray[np.float64]
    y_sum: NDArray[np.float64]
    weight: NDArray[np.float64]
    partition: Any

    @property
    def xbar(self) -> NDArray[np.float64]:
        """Centroids x̄_k = Σ x_i / W_k (K × m)."""
        return self.x_sum / self.weight[:, None]

    @property
    def ybar(self) -> NDArray[np.float64]:
        """Centroid targets ȳ_k = Σ y_i / W_k."""
        return self.y_sum / self.weight

    @property
    def K(self) -> int:
        """The number of clusters."""
        return int(self.weight.size)


@dataclass(frozen=True)
class LinearFit:
    """w, b and the cluster multipliers β̄_k of the score (None: the route gave none)."""

    w: NDArray[np.float64]
    b: float
    duals: NDArray[np.float64] | None
    partition: Any

    @property
    def coef(self) -> NDArray[np.float64]:
        """w (scikit-learn's ``coef_``)."""
        return self.w

    @property
    def intercept(self) -> float:
        """b (scikit-learn's ``intercept_``)."""
        return self.b

    def predict(self, X: Any) -> NDArray[np.float64]:
        """The scores x·w + b of the rows of X (an array or a scipy.sparse matrix)."""
        return np.asarray(X @ self.w).ravel() + self.b


class LinearScoreModel(BlockPass, AggregatedModel[Any, Aggregate, LinearFit]):
    """Base of a model min ½‖w‖² + Σ ℓ(y_i, x_i·w + b) (see the module docstring). A subclass
    states :meth:`loss`, :meth:`conjugate`, :attr:`dual_box`, :meth:`intercept_bound`,
    :meth:`declare` and :meth:`read`."""

    problem_class: ClassVar[ProblemClass] = ProblemClass.QP

    # ------------------------------------------------------------------ what a model states
    def loss(
        self, y: NDArray[np.float64], s: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
        """(ℓ(y_i, s_i), the linear piece of each row, a magnitude M_i with |computed ℓ − ℓ|
        ≤ 4ε M_i)."""
        raise NotImplementedError

    def slope(self) -> float:
        """A bound on |∂ℓ/∂s| (what an error in the score costs)."""
        raise NotImplementedError

    def conjugate(self, y: NDArray[np.float64], beta: NDArray[np.float64]) -> tuple:
        """−ℓ*(y_i, β_i) for β_i in the box, as a tuple of arrays each one product of two
        numbers (their sum is the value; each is rounded once)."""
        raise NotImplementedError

    def dual_box(self) -> tuple[float, float]:
        """(lo, hi): the domain of ℓ*, lo ≤ β_i ≤ hi."""
        raise NotImplementedError

    def intercept_bound(self, y_max: float, w_norm: float, row_norm: float) -> float:
        """B ≥ |b*| of some optimum, for max|y_i|, ‖w*‖ ≤ ``w_norm``, max‖x_i‖."""
        raise NotImplementedError

    def declare(self, agg: Aggregate) -> Problem:
        """The aggregated problem."""
        raise NotImplementedError

    def read(self, values: Values, agg: Aggregate) -> LinearFit:
        """w, b and the cluster multipliers β̄_k from the solved declaration."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the aggregated problem
    def default_rate(self, data: Any) -> float:
        """r^0 = max{1.1m/n, 1e-4} (§4)."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    def solve_procedure(
        self, agg: Aggregate, solve: SubSolve, previous: Previous | None
    ) -> tuple[LinearFit | None, SolveResult]:
        """The declaration on the user's solver (the matrix interface); when the solver fails
        on it, the declaration's dual form (:class:`~aidopt.solvers.algebra.DualForm`), read
        back as the declaration's answer. HiGHS's QP solver fails on the primal of some
        badly scaled aggregated problems (an ε-SVR with x × 1e-3) and solves their dual; the
        primal, when it works, is the faster (1.1 s against 21 s for an ε-SVR of 20,000 rows)."""
        problem = self.declare(agg)
        primal = problem.program()
        result = solve(primal)
        if result.status is SolveStatus.OPTIMAL:
            return self.read(problem.values(result), agg), result
        dual = DualForm(problem, primal)
        if dual.program is None:
            return None, result
        answer = solve(dual.program)
        if answer.status is not SolveStatus.OPTIMAL or answer.objective is None:
            return None, result
        value = -answer.objective  # the dual's optimum, min form: −F^t
        fit = self.read(dual.values(answer), agg)
        return fit, dataclasses.replace(answer, objective=value, bound=value)

    # ------------------------------------------------------------------ C^0 and the aggregate
    def initial_partition(self, data: Any, rate: float, rng: np.random.Generator) -> Partition:
        """C^0: the residual bins of :meth:`initial_rule`, fitted on a random sample."""
        rows = np.sort(rng.choice(data.n, size=self.initial_sample_size(data), replace=False))
        sample = dataclasses.replace(data, X=data.X[rows], y=data.y[rows])
        rule = self.initial_rule(sample, data, rate)
        return Partition.from_labels(self.initial_labels(data, 0, rule))

    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0."""
        return min(whole.n, max(1000, 20 * whole.m))

    def initial_rule(self, sample: Any, whole: Any, rate: float) -> ResidualBins:
        """Quantile bins (⌈r^0 n⌉ of them) of the residuals of a least-squares fit on the
        sample: rows alike in residual share a regime more often."""
        k = max(1, min(whole.n, math.ceil(rate * whole.n)))
        X = dense(sample.X)  # a sample: small
        design = np.column_stack([X, np.ones(sample.n)])
        coef = np.linalg.lstsq(design, sample.y, rcond=None)[0]
        residual = sample.y - design @ coef
        return ResidualBins(coef[:-1], float(coef[-1]), np.quantile(residual, np.arange(1, k) / k))

    def initial_labels(self, rows: Any, offset: int, rule: ResidualBins) -> NDArray[np.int64]:
        """The C^0 label of every row of a block: its residual's bin."""
        return rule.labels(rows.X, rows.y, offset)

    def cluster_columns(self, rows: Any) -> list[Any]:
        """Per-row columns (1, x_i, y_i) whose cluster sums are the aggregate."""
        if getattr(rows, "weight", None) is not None:
            raise DataError(f"The {self.name} model does not take row weights.")
        return [ROW_COUNT, rows.X, rows.y]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> Aggregate:
        """The aggregate from the cluster sums of :meth:`cluster_columns`."""
        return Aggregate(
            np.ascontiguousarray(sums[:, 1:-1]), sums[:, -1], sums[:, 0].copy(), partition
        )

    # ------------------------------------------------------------------ E^t
    def evaluate(self, data: Any, solution: LinearFit, *, aggregate: Any = None) -> Evaluation:
        """E^t on every row: :meth:`evaluate_rows` on one block."""
        return self.evaluate_rows(data, solution, 0, data)

    def evaluate_rows(self, rows: Any, solution: LinearFit, offset: int, whole: Any) -> Evaluation:
        """A block's share Σ ℓ(y_i, s_i) of E (plus ½‖w‖² at offset 0), its rounding bound, and
        the rows' regimes."""
        w, b = solution.w, solution.b
        loss, regime, magnitude = self.loss(rows.y, np.asarray(rows.X @ w).ravel() + b)
        total, error = accurate_sum(loss)
        error += self.slope() * score_error(rows.X, w, abs(b)) + 4 * EPS * float(magnitude.sum())
        if offset == 0:
            total, error = plus_half_squared_norm(total, error, float(w @ w), rows.m)
        return Evaluation(total, regime.astype(np.int64), None, error)

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: Any,
        solution: LinearFit,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """The best weak-duality bound over the candidate dual points, on all rows (at
        ``dual`` when given: ``aidopt verify``)."""
        if dual is None:
            return self.bound_on_rows(data, solution, upper, aggregate, DualPoint.on_support)
        beta = dual.expand(data.n, None)
        lo, hi = self.dual_box()
        if beta.size and (beta.min() < lo or beta.max() > hi):
            raise ValueError(f"the dual point leaves its box [{lo:g}, {hi:g}]")
        terms = self.bound_terms(data, beta)
        bound = self.bound_from_terms(
            terms, None, 0, upper, "the given dual point", data.feature_names
        )
        return dataclasses.replace(bound, dual=DualPoint.on_support(beta))

    def bound_candidates(self, agg: Aggregate, solution: LinearFit) -> tuple[list, None]:
        """The cluster multipliers per row, β̄_k/W_k clipped to the box (none without duals)."""
        if solution.duals is None or solution.duals.shape != agg.weight.shape:
            return [], None
        lo, hi = self.dual_box()
        s = np.clip(solution.duals / agg.weight, lo, hi)
        return [(s, "the dual of the aggregated problem")], None

    def bound_terms(self, rows: Any, beta: NDArray[np.float64]) -> DualSums:
        """The certificate's sums over a block of rows at β: the conjugate terms (each entry one
        rounded product), Σβ_i x_i and Σβ_i (:func:`~aidopt.core.dual_sums.dual_sums`)."""
        top = float(np.abs(beta).max(initial=0.0))
        terms = [(term, EPS) for term in self.conjugate(rows.y, beta)]
        return dual_sums(rows.X, terms, beta, top, beta, y=rows.y)

    def bound_from_terms(
        self,
        terms: DualSums,
        context: None,
        n_clusters: int,
        upper: float,
        source: str,
        names: Any,
    ) -> Bound:
        """D(β) minus the rounding allowances and the charge B·|Σβ_i| of the residual, B the
        model's :meth:`intercept_bound` with ‖w*‖ ≤ √(2U)."""
        w_norm = product_up(math.sqrt(2.0 * max(upper, 0.0)), 1.0)  # √(2U), its rounding
        B = self.intercept_bound(terms.y_max, w_norm, terms.row_norm)
        return terms.bound(source, offset_bound=B)

    # ------------------------------------------------------------------ the answer, as JSON
    def solution_to_dict(self, data: Any, solution: LinearFit) -> dict[str, Any]:
        """w by column name, and b."""
        return {"coef": by_name(data.feature_names, solution.w), "intercept": float(solution.b)}

    def solution_from_dict(
        self, data: Any, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> LinearFit:
        """The solution :meth:`solution_to_dict` describes."""
        w = from_names(payload.get("coef"), data.feature_names)
        return LinearFit(w, float(payload["intercept"]), None, Partition.singletons(data.n))
