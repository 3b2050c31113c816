"""Models whose loss is a weighted hinge of a linear score, with a ridge: the framework's part.

For rows x_i with labels y_i = ±1 (all +1 for a model without labels) and row weights ω_i
(1 without), a per-unit-weight cost c > 0 and an optional intercept b:

    P* = min_{w[,b]}  ½‖w‖² + c Σ_i ω_i max{0, 1 − y_i(x_i·w + b)}

— the linear SVM (7) (c = M, with b) and the linear one-class SVM (1) (c = C/N, N = Σ ω_i, no
b). A model of this family (:class:`HingeModel`) states its data, c (:meth:`HingeModel.unit_cost`),
its initial clusters and its aggregated problem (declared once, with variables ``w``, ``b`` when
it has an intercept, and the margin rows ``margin``). Everything else is here, once, for rows in
memory and rows in blocks alike:

* **Aggregate**: cluster sums of (ω_i, ω_i x_i, y_i): centroids x̄_k, labels ȳ_k (clusters never
  mix labels), weights W_k = Σ_{C_k} ω_i, and N = Σ_k W_k with its rounding bound. By Jensen the
  aggregated optimum F ≤ P*.
* **Evaluation** E = ½‖w‖² + c Σ ω_i hinge_i with a bound on its rounding error; the regime of a
  row is [1 − y_i(x_i·w + b) > 0].
* **Certificate** (weak duality; docs/certificates.md): for 0 ≤ α_i ≤ c ω_i and every (w, b),

      P* ≥ Σ_i α_i − ½‖Σ_i α_i y_i x_i‖² − b* Σ_i α_i y_i,

  α a cluster dual spread over the rows (α_i = a_k ω_i, a_k = ᾱ_k/W_k ∈ [0, c]): the solver's ᾱ
  and the one complementary slackness gives (w̄, b̄), the better bound kept. With an intercept,
  what rounding leaves of ρ = Σ α_i y_i costs |b*||ρ|, |b*| ≤ 1 + ‖w*‖ max‖x_i‖ and ‖w*‖ ≤ √(2U)
  (b* lies between the breakpoints y_i − w*·x_i). The dual point is α, per entry.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import from_names
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    below,
    clipped_into,
    cluster_duals,
    dual_box,
    plus_half_squared_norm,
    repair_equalities,
)
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.numerics.rounding import (
    accurate_weighted_sum,
    score_error,
    sum_relative_error,
    times,
    weighted_below,
)
from aidopt.solvers.algebra import Values
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import SVMFit, WeightedSVM, feasible_dual

__all__ = ["HingeAggregate", "HingeFit", "HingeModel", "optimal_intercept", "training_accuracy"]


@dataclass(frozen=True, eq=False)
class HingeAggregate:
    """Cluster sums Σ ω_i x_i (K × m), labels ȳ_k (all 1 without labels), weights W_k, and
    N = Σ_k W_k (``total_error``: a bound on its relative rounding error beyond the correctly
    rounded sum; 0 when every weight is 1)."""

    x_sum: NDArray[np.float64]
    label: NDArray[np.float64]
    weight: NDArray[np.float64]
    partition: Any
    total: float
    total_error: float = 0.0

    @property
    def xbar(self) -> NDArray[np.float64]:
        """Centroids x̄_k = Σ ω_i x_i / W_k."""
        return self.x_sum / self.weight[:, None]


@dataclass(frozen=True, eq=False)
class HingeFit:
    """A hyperplane (w, b) (b = 0 without an intercept) and, when the route gives them, the
    cluster duals ᾱ on the clusters ``partition``; N of the aggregate it was solved on (what an
    evaluation on rows in blocks scales a cost C/N by)."""

    w: NDArray[np.float64]
    b: float = 0.0
    alpha: NDArray[np.float64] | None = None
    partition: Any = field(default=None, repr=False)
    total: float | None = None
    total_error: float = 0.0

    @property
    def cluster_labels(self) -> NDArray[np.int64] | None:
        """The cluster of every entry (None without a partition in memory)."""
        return self.partition.labels if isinstance(self.partition, Partition) else None

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """The scores x·w + b of the rows of X (an array or a scipy.sparse matrix)."""
        rows = check_predict_input(X, self.w.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(rows @ self.w).ravel() + self.b

    def entry_duals(self, weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k w_i / W_k for every entry (w: the data's row weights, None: |C_k|;
        feasible for the dual; optimal when certified)."""
        if self.alpha is None:
            raise ValueError("this solution carries no dual values (its solver gave none)")
        if self.cluster_labels is None:
            raise ValueError("the entries' clusters are not in memory (rows in blocks)")
        return cluster_duals(self.cluster_labels, self.alpha, weight)


class HingeModel(BlockPass, AggregatedModel[Any, HingeAggregate, HingeFit]):
    """Base of a model min ½‖w‖² + c Σ ω_i max{0, 1 − y_i(x_i·w + b)} (module docstring). A
    subclass states :attr:`intercept`, :attr:`labeled`, :attr:`dual_title`, :meth:`unit_cost`,
    :meth:`declare`, its initial clusters and how it describes its answer."""

    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    structures: ClassVar[tuple[type, ...]] = (WeightedSVM,)
    default_solver: ClassVar[str] = "activeset"  # exact, warm-started (docs/svm.md)
    describes_by_row_sums: ClassVar[bool] = True
    supports_weights: ClassVar[bool] = True
    #: the model has the free offset b (and its dual the row Σ α_i y_i = 0)
    intercept: ClassVar[bool] = True
    #: the rows carry labels y_i = ±1 (else every y_i is +1)
    labeled: ClassVar[bool] = True
    #: the dual's name in the certificate's source, e.g. "dual (6)"
    dual_title: ClassVar[str] = "dual"
    #: the type of the solutions (a subclass of :class:`HingeFit` names itself in messages)
    solution_type: ClassVar[type[HingeFit]] = HingeFit

    # ------------------------------------------------------------------ what a model states
    def unit_cost(self, total: float, total_error: float) -> tuple[float, float]:
        """(c, a bound on its computed value's relative error) for rows of total weight N
        within ``total_error`` (relatively)."""
        raise NotImplementedError

    def box(self, total: float, total_error: float) -> tuple[float, float]:
        """(the dual box's scale c rounded below the exact one, c's relative error)."""
        c, relative = self.unit_cost(total, total_error)
        return (below(c, relative) if relative else c), relative

    def default_rate(self, data: Any) -> float:
        """r^0 = max{1.1m/n, 1e-4} (Park & Klabjan §4)."""
        return min(1.0, max(1.1 * data.m / data.n, 1e-4))

    # ------------------------------------------------------------------ the aggregated problem
    def read(self, values: Values, agg: HingeAggregate) -> HingeFit:
        """w̄, b̄ and the margin rows' multipliers ᾱ_k (None when the solver gave none), with an
        intercept made exactly feasible for the balance row (the candidates clip them)."""
        alpha = values.dual("margin")
        if alpha is not None and self.intercept:
            alpha = feasible_dual(alpha, agg.label, self._cost(agg) * agg.weight)
        b = float(values["b"][0]) if self.intercept else 0.0
        return self._fit(agg, values["w"].copy(), b, alpha)

    def _cost(self, agg: HingeAggregate) -> float:
        """c on the aggregate's rows (of total weight N)."""
        return self.unit_cost(agg.total, agg.total_error)[0]

    def _fit(self, agg: HingeAggregate, w: NDArray, b: float, alpha: NDArray | None) -> HingeFit:
        return self.solution_type(w, b, alpha, agg.partition, agg.total, agg.total_error)

    def to_structure(
        self, kind: type, agg: HingeAggregate, previous: Previous | None
    ) -> WeightedSVM:
        """The aggregated problem as the weighted SVM on the centroids x̄_k, weights W_k, cost
        c, warm-started at the previous iteration's (w̄, b̄) (split clusters keep their side of
        its hyperplane)."""
        start = None if previous is None else (previous.solution.w, previous.solution.b)
        return WeightedSVM(
            y=agg.label,
            weight=agg.weight,
            C=self._cost(agg),
            features=agg.xbar,
            start=start,
            intercept=self.intercept,
        )

    def from_structure(self, kind: type, answer: SVMFit, agg: HingeAggregate) -> HingeFit:
        """(w̄, b̄) and, when the solver gives it (one that solves the problem exactly), ᾱ."""
        assert answer.w is not None, "a linear SVM's answer carries w"
        return self._fit(agg, answer.w, answer.b if self.intercept else 0.0, answer.alpha)

    # ------------------------------------------------------------------ the aggregate
    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks."""
        return min(whole.n, max(1000, 20 * whole.m))

    def cluster_columns(self, rows: Any) -> list[Any]:
        """(1, ω_i, [ω_i = 1], ω_i x_i, y_i) per row: their cluster sums are the aggregate (the
        third tells whether N is exact; the labels only for a labeled model)."""
        unweighted = rows.weight is None
        omega = ROW_COUNT if unweighted else rows.weight
        unit = ROW_COUNT if unweighted else rows.unit_weight
        return [ROW_COUNT, omega, unit, rows.weighted_X, *([rows.y] if self.labeled else [])]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> HingeAggregate:
        """The aggregate from the cluster sums of :meth:`cluster_columns`: N = Σ_k W_k, exact
        when every weight is 1 (integers), else within (n + 2)ε of Σ_i ω_i."""
        count, weight = sums[:, 0], sums[:, 1].copy()
        if self.labeled:
            label = sums[:, -1] / count
            assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
            x_sum = sums[:, 3:-1]
        else:
            label, x_sum = np.ones(count.size), sums[:, 3:]
        exact = bool(np.all(sums[:, 2] == count))
        error = 0.0 if exact else sum_relative_error(partition.n)
        total = math.fsum(weight)
        return HingeAggregate(np.ascontiguousarray(x_sum), label, weight, partition, total, error)

    # ------------------------------------------------------------------ E^t
    def evaluate(self, data: Any, solution: HingeFit, *, aggregate: Any = None) -> Evaluation:
        """E^t on every row: :meth:`evaluate_rows` on one block."""
        return self.evaluate_rows(data, solution, 0, data)

    def evaluate_rows(self, rows: Any, solution: HingeFit, offset: int, whole: Any) -> Evaluation:
        """A block's share c Σ ω_i hinge_i of E^t (plus ½‖w‖² in the block at offset 0), the
        bound on its rounding error, its regimes. N: of ``whole`` when it holds all rows, else
        of the aggregate the solution came from."""
        w, b = solution.w, solution.b
        score = rows.X @ w + b
        violation = 1.0 - (rows.y * score if self.labeled else score)
        hinge, hinge_error = accurate_weighted_sum(np.maximum(violation, 0.0), rows.weight)
        hinge_error += score_error(rows.X, w, abs(b) + 1.0, rows.weight)  # 1 − y_i(x_i·w + b)
        if isinstance(whole, self.data_type):
            total, total_error = whole.total_weight, 0.0
        else:
            assert solution.total is not None, "a solution on blocks carries N"
            total, total_error = solution.total, solution.total_error
        c, c_error = self.unit_cost(total, total_error)
        objective, error = times(c, hinge, hinge_error, c_error)
        if offset == 0:
            objective, error = plus_half_squared_norm(objective, error, float(w @ w), rows.m)
        return Evaluation(objective, (violation > 0).astype(np.int64), None, error)

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: Any,
        solution: HingeFit,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """The best weak-duality bound (module docstring) over :meth:`bound_candidates`, on all
        rows; at ``dual`` (α per entry, ``aidopt verify``) when given, clipped into the box
        c ω_i computed from the data. The dual point kept is α: compressed onto the regimes'
        bounds 0 and c without row weights, its support with them."""
        cap, relative = self.box(data.total_weight, data.weight_sums_error)

        def point(alpha: NDArray[np.float64]) -> DualPoint:
            if data.weight is None:
                return DualPoint.compress(alpha, evaluation.regime, (0.0, cap))
            return DualPoint.on_support(alpha)

        if dual is None:
            return self.bound_on_rows(
                data, solution, upper, aggregate, lambda a: point(weighted_below(a, data.weight))
            )
        given = dual.expand(data.n, evaluation.regime)
        top = dual_box(cap, data.weight, data.n)
        alpha = clipped_into(given, top, relative, f"[0, {cap:g} ω_i]")
        terms = self._terms(data, alpha, cap)
        bound = self.bound_from_terms(terms, None, 0, upper, "the given dual point", [])
        return dataclasses.replace(bound, dual=point(alpha))

    def bound_candidates(
        self, agg: HingeAggregate, solution: HingeFit
    ) -> tuple[list[tuple[NDArray[np.float64], str]], None]:
        """The cluster duals per unit weight a_k ∈ [0, c] to spread over the entries, each with
        what it is: the solver's ᾱ (when it gave one) and the one complementary slackness gives
        (w̄, b̄) (with an intercept, only next to the solver's: a route without duals solved
        another problem, liblinear's that penalises b, and gives no bound), each as ᾱ_k/W_k;
        with an intercept, values within 1e-12·c of a bound snapped to it and Σ_k a_k W_k ȳ_k
        = 0 restored on the clusters strictly inside the box."""
        cap, _ = self.box(agg.total, agg.total_error)
        candidates = []
        if solution.alpha is not None and solution.alpha.shape == agg.weight.shape:
            candidates.append((solution.alpha, "the aggregated dual"))
        elif self.intercept:  # a route without duals may solve another problem (liblinear)
            return [], None
        primal = self._alpha_from_primal(agg, solution)
        candidates.append((primal, "the dual that complementary slackness gives the primal"))
        balance = (agg.weight * agg.label)[None, :]
        out = []
        for alpha, what in candidates:
            a = np.clip(alpha / agg.weight, 0.0, cap)
            if self.intercept:  # the repair moves only the clusters truly inside the box
                a[a <= 1e-12 * cap] = 0.0
                a[a >= (1 - 1e-12) * cap] = cap
                a = repair_equalities(balance, np.zeros(1), a, 0.0, cap)
            out.append((a, what))
        return out, None

    def _alpha_from_primal(self, agg: HingeAggregate, solution: HingeFit) -> NDArray[np.float64]:
        """ᾱ_k from complementary slackness at (w, b): c W_k where the cluster's centroid
        violates the margin, 0 where it is outside, free on the margin; the free ones make
        Σ ᾱ_k ȳ_k x̄_k = w (and Σ ᾱ_k ȳ_k = 0) hold as nearly as the box allows (least squares,
        the balance row last: it is the one feasibility needs)."""
        xbar, ybar, w, b = agg.xbar, agg.label, solution.w, solution.b
        violation = 1.0 - ybar * (xbar @ w + b)
        tol = 1e-9 * (np.abs(xbar) @ np.abs(w) + abs(b) + 1.0)
        upper = self._cost(agg) * agg.weight
        alpha = np.where(violation > 0, upper, 0.0)
        ties = np.abs(violation) <= tol
        alpha[ties] = 0.5 * upper[ties]
        A, target = np.ascontiguousarray((ybar[:, None] * xbar).T), w
        if not self.intercept:
            return repair_equalities(A, target, alpha, 0.0, upper, free=ties)
        A, target = np.vstack([ybar, A]), np.r_[0.0, w]
        alpha = repair_equalities(A, target, alpha, 0.0, upper, free=ties)
        return repair_equalities(A[:1], target[:1], alpha, 0.0, upper, free=ties)

    def bound_terms(self, rows: Any, a: NDArray[np.float64]) -> DualSums:
        """The row sums of the bound at α = a∘ω on the block ``rows`` (a ∈ [0, c] per unit
        weight; weighted, fl(a_i ω_i) is shrunk by 1 − 2ε so that α_i ≤ c ω_i holds in exact
        arithmetic)."""
        return self._terms(rows, weighted_below(a, rows.weight), float(a.max(initial=0.0)))

    def _terms(self, rows: Any, alpha: NDArray[np.float64], top: float) -> DualSums:
        """Σα_i, Σα_i y_i x_i and Σα_i y_i on the block ``rows`` at α ≤ top·ω
        (:func:`~aidopt.core.dual_sums.dual_sums`)."""
        coef = alpha * rows.y if self.labeled else alpha
        residual = coef if self.intercept else None
        return dual_sums(rows.X, [(alpha, 0.0)], coef, top, residual, weight=rows.weight)

    def bound_from_terms(
        self,
        terms: DualSums,
        context: None,
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound:
        """Σα_i − ½‖Σα_i y_i x_i‖² minus every rounding allowance and, with an intercept,
        |b*||ρ| with ρ = Σα_i y_i and |b*| ≤ 1 + √(2U)·max‖x_i‖."""
        b_bound = 1.0 + math.sqrt(2.0 * max(upper, 0.0)) * terms.row_norm
        return terms.bound(
            f"{self.dual_title} at {source}", offset_bound=b_bound if self.intercept else 0.0
        )

    # ------------------------------------------------------------------ the answer, as JSON
    def solution_from_dict(
        self, data: Any, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> HingeFit:
        """The hyperplane of a saved answer (w by column name, and b), every row its own
        cluster."""
        w = from_names(payload.get("w"), data.feature_names, "weight")
        b = float(payload["b"]) if self.intercept else 0.0
        return self.solution_type(w, b, None, Partition.singletons(data.n))


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


def training_accuracy(data: Any, decision: NDArray[np.float64]) -> float:
    """Share of entries with sign(f(x_i)) = y_i (f > 0 predicts +1, as scikit-learn)."""
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == data.y))
