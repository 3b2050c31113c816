"""The check loss of a linear fit and the certificate of its LP: the framework's part of LAD and
quantile regression (``models/lad.py``), written once for rows in memory and rows in blocks.

For rows (x_i, y_i) with weights w_i > 0 (1 unweighted), z_i = (1, x_i) with an intercept (x_i
without), and costs (c⁺, c⁻) of a positive and a negative residual:

    E* = min_β  Σ_i w_i ρ(y_i − z_i β),   ρ(r) = c⁺ r⁺ + c⁻ r⁻       (|r| for c⁺ = c⁻ = 1)

A model of this family (:class:`CheckLossModel`) states its costs, its aggregated problem and its
policy (initial clusters, declustering, warm starts). Everything else is here:

* **Aggregate**: the cluster sums (W_k, Σ w_i x_i, Σ w_i y_i); the aggregated rows are the
  weighted means (x̄_k, ȳ_k) with weight W_k. A pure cluster's loss is W_k ρ(ȳ_k − z̄_k β), and
  ρ is convex, so the aggregated optimum F ≤ E* (Park & Klabjan, Props. 1-2).
* **Evaluation** E = Σ_i w_i ρ(r_i) with a bound on its rounding error (|fl(r_i) − r_i| ≤
  γ_{m+2}(|y_i| + Σ_j |x_ij||β_j| + |β₀|), times max(c⁺, c⁻)); regime = [r_i > 0]. On a large
  dense unweighted X one compiled read of the rows also sums the certificate's terms at the
  candidate duals (:func:`aidopt.numerics.compiled.residual_loss`).
* **Certificate** (weak duality of the LP, docs/certificates.md): for u_i ∈ w_i[−c⁻, c⁺] and
  any β, E(β) ≥ uᵀy − βᵀ(Zᵀu). u is a cluster dual s spread over the entries (u_i = s_k w_i),
  repaired so that Zᵀu ≈ 0 (:func:`aidopt.core.certificate.repair_equalities`: the box-and-
  equality structure); the residual e = Zᵀu that rounding leaves costs |β*ᵀe| ≤
  ‖Dβ*‖₂‖D⁻¹e‖₂ with ‖Dβ*‖₂ bounded from the data and the proven upper bound.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.lazy import dense, issparse
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import Bound, DualPoint, best_with_dual, repair_equalities
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation
from aidopt.core.linear_score import Aggregate
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.data.containers import RegressionData
from aidopt.exceptions import DataError, DataWarning
from aidopt.numerics import compiled
from aidopt.numerics.rounding import (
    CHUNK,
    EPS,
    GAMMA,
    GAMMA_FOURS,
    abs_column_sums,
    abs_column_sums_from,
    abs_column_sums_known,
    abs_products_bound,
    accurate_sum,
    accurate_tdot,
    added_blocks,
    added_chunk_sums,
    safe_min_eigenvalue,
    sum_relative_error,
    vector_sums,
    weighted_below,
)
from aidopt.solvers.program import ProblemClass

__all__ = ["BoundTerms", "CheckLossAggregate", "CheckLossFit", "CheckLossModel"]


def _cluster_sums(data: RegressionData, part: Partition) -> tuple[NDArray, NDArray, NDArray]:
    """(W_k, Σ_{C_k} w_i x_i, Σ_{C_k} w_i y_i) per cluster, w_i = 1 for unweighted data: a
    pure cluster's weighted loss Σ w_i ρ(r_i) is W_k ρ(ȳ_k − z̄_k β) at the weighted means."""
    # a sparse X stays sparse: only its cluster sums (the aggregated data) are dense
    return part.weights(data.weight), part.dense_sums(data.weighted_X), part.sums(data.weighted_y)


@dataclass(frozen=True, eq=False)
class CheckLossAggregate(Aggregate):
    """Aggregated data (:class:`aidopt.core.linear_score.Aggregate`: cluster sums of x and y,
    weights |C_k|, centroids x̄, ȳ), and the design matrix of the centroids."""

    def design(self, intercept: bool) -> NDArray[np.float64]:
        """Z̄ = (1, x̄_k) per row (x̄ alone without intercept), built without temporaries."""
        K, m = self.x_sum.shape
        Z = np.empty((K, m + int(intercept)))
        if intercept:
            Z[:, 0] = 1.0
        np.divide(self.x_sum, self.weight[:, None], out=Z[:, int(intercept) :])
        return Z


@dataclass(frozen=True)
class CheckLossFit:
    """Coefficients β (m,) and intercept β₀ (0.0 when not fitted).

    ``cluster_dual`` is the solver's dual s_k ∈ [−c⁻, c⁺] of the aggregated LP per cluster of
    ``partition`` (the multiplier of cluster k's residual row), when the route gives one.
    """

    coef: NDArray[np.float64]
    intercept: float
    partition: Partition | None = field(default=None, repr=False, compare=False)
    cluster_dual: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """The predictions x·β + β₀ for the rows of X (an array or a scipy.sparse matrix)."""
        X = check_predict_input(X, self.coef.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(X @ self.coef).ravel() + self.intercept


@dataclass(frozen=True, eq=False)
class _BoundRead:
    """The certificate's terms at each candidate dual of ``solution``, summed in the read of
    the rows that evaluated it (:meth:`CheckLossModel.evaluate`), with the aggregated Gram."""

    solution: CheckLossFit
    candidates: list[tuple[NDArray[np.float64], str]]
    gram: NDArray[np.float64]
    terms: list[BoundTerms]


@dataclass(frozen=True)
class BoundTerms:
    """Row sums of the certificate at u (:meth:`CheckLossModel.bound_terms`); blocks of rows add."""

    value: float  # uᵀy
    value_error: float  # a bound on its rounding error
    e: NDArray[np.float64]  # Zᵀu (p,)
    e_error: NDArray[np.float64]  # a bound on its rounding error per coefficient
    norm_y_squared: float  # ‖W½y‖₂² (in floating point)
    w_min: float  # min w_i (1 unweighted)
    n: int  # rows summed

    @classmethod
    def total(cls, blocks: list[BoundTerms]) -> BoundTerms:
        """The terms of the union of the blocks (:func:`aidopt.numerics.rounding.added_blocks`)."""
        value, value_error = added_blocks(
            [b.value for b in blocks], [b.value_error for b in blocks]
        )
        e, e_error = added_blocks([b.e for b in blocks], [b.e_error for b in blocks])
        return cls(
            value,
            value_error,
            e,
            e_error,
            math.fsum(b.norm_y_squared for b in blocks),
            min(b.w_min for b in blocks),
            sum(b.n for b in blocks),
        )


class CheckLossModel(BlockPass, AggregatedModel[RegressionData, CheckLossAggregate, CheckLossFit]):
    """Base of a model min Σ_i w_i ρ(y_i − z_i β) (see the module docstring). A subclass states
    :meth:`costs`, the option ``fit_intercept``, :meth:`declare` and :meth:`read`, and its
    policy; :meth:`split_regime` refines the regimes of a block (default: none)."""

    problem_class = ProblemClass.LP
    data_type = RegressionData
    supports_weights = True
    fit_intercept: bool

    def costs(self) -> tuple[float, float]:
        """(c⁺, c⁻): the costs of a positive and a negative residual."""
        raise NotImplementedError

    def cost_error(self) -> float:
        """δ ≥ |ĉ − c| for both float costs ĉ of exact costs c (0: exact). The evaluation and
        the dual box use ĉ; E of the exact problem is at most Ê + δ Σ w|r|, and a dual point up
        to δ outside the exact box costs at most δ Σ w|r*| ≤ δ E*/min c: both are charged."""
        return 0.0

    def split_regime(
        self, size: NDArray[np.float64], regime: NDArray, offset: int, whole: Any
    ) -> NDArray | None:
        """A finer regime of a block's rows from |r_i| (``size``) and [r_i > 0], or None."""
        return None

    def n_coefficients(self, data: RegressionData) -> int:
        """p: the columns of X, and the intercept when it is fitted."""
        return data.m + int(self.fit_intercept)

    # ------------------------------------------------------------------ data
    def check_data(self, data: RegressionData) -> None:
        """Refuse data with fewer rows than coefficients (the fit is not identified)."""
        p = self.n_coefficients(data)
        if data.n < p:
            raise DataError(
                f"Fewer rows ({data.n}) than coefficients ({p}: {data.m} columns"
                f"{' + intercept' if self.fit_intercept else ''}); the fit is not identified."
            )

    def cluster_columns(self, rows: RegressionData) -> list[NDArray]:
        """(w_i, w_i x_i, w_i y_i) per row: their cluster sums are the aggregated data (w_i = 1
        without row weights: the clusters' row counts)."""
        w = ROW_COUNT if rows.weight is None else rows.weight
        return [w, rows.weighted_X, rows.weighted_y]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> CheckLossAggregate:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`."""
        return CheckLossAggregate(
            x_sum=np.ascontiguousarray(sums[:, 1:-1]),
            y_sum=sums[:, -1].copy(),
            weight=sums[:, 0].copy(),
            partition=partition,
        )

    # ------------------------------------------------------------------ aggregated data
    def aggregate(
        self, data: RegressionData, partition: Partition, *, previous: Any = None
    ) -> CheckLossAggregate:
        """The cluster sums (W_k, Σ w x, Σ w y), read-only (the certificate reuses them); for
        singletons the rows themselves, not copied."""
        if (
            data.weight is None
            and not issparse(data.X)
            and partition.n_clusters == data.n
            and np.array_equal(partition.labels, np.arange(data.n))
        ):  # singletons (the full problem): the data themselves, no copy
            return CheckLossAggregate(data.X, data.y, np.ones(data.n), partition)
        weight, x_sum, y_sum = _cluster_sums(data, partition)
        for sums in (weight, x_sum, y_sum):  # the certificate reuses them: no solver writes
            sums.flags.writeable = False
        return CheckLossAggregate(x_sum=x_sum, y_sum=y_sum, weight=weight, partition=partition)

    def evaluate(
        self, data: RegressionData, solution: CheckLossFit, *, aggregate: Any = None
    ) -> Evaluation:
        """E^t = Σ_i w_i ρ(y_i − β₀ − x_i β) (w_i = 1 unweighted) with a bound on its rounding
        error; regime = [r_i > 0]. On a large dense unweighted X, for a solution of clusters of
        these rows just aggregated, the same compiled read sums the certificate's terms at its
        candidate duals (``bound_terms``: :meth:`lower_bound` reads no row)."""
        found = self._candidates_to_read(data, solution, aggregate)
        if found is None:
            evaluation = self.evaluate_rows(data, solution, 0, data)
        else:
            candidates, gram = found
            duals = np.vstack([s for s, _ in candidates])
            labels = solution.partition.labels  # type: ignore[union-attr]
            evaluation, terms = self._evaluated_rows(data, solution, 0, data, labels, duals)
            if terms is not None:
                read = _BoundRead(solution, candidates, gram, terms)
                evaluation = dataclasses.replace(evaluation, bound_terms=read)
        return evaluation

    def _candidates_to_read(
        self, data: RegressionData, solution: CheckLossFit, agg: CheckLossAggregate | None
    ) -> tuple | None:
        """:meth:`bound_candidates` of the solution's clusters when the evaluation's compiled
        read can sum their terms: the rows are large, dense, unweighted and ``agg`` holds the
        cluster sums of exactly these clusters (they are reused); else None."""
        part = solution.partition
        if (
            agg is None
            or agg.x_sum is data.X  # the full problem (singletons): the rows themselves
            or part is None
            or agg.partition is not part
            or data.weight is not None
            or compiled.kernels_for(data.X) is None
        ):
            return None
        return self.bound_candidates(agg, solution)

    def evaluate_rows(
        self, rows: RegressionData, solution: CheckLossFit, offset: int, whole: Any
    ) -> Evaluation:
        """:meth:`evaluate` on the block ``rows`` = entries offset, offset + 1, ... of ``whole``
        (n, m): the block's share of E^t and of its error bound, its regimes, and its split
        regime ('band': the block's ⌊band fraction · rows⌋ smallest |r_i| become singletons,
        numbered 2 + their index in ``whole``)."""
        return self._evaluated_rows(rows, solution, offset, whole, None, ())[0]

    def evaluate_and_bound_rows(
        self,
        rows: RegressionData,
        solution: CheckLossFit,
        offset: int,
        whole: Any,
        labels: NDArray[np.integer],
        duals: NDArray[np.float64],
    ) -> tuple[Evaluation, list[BoundTerms]]:
        """:meth:`evaluate_rows` and :meth:`cluster_bound_terms` of the block (``duals``: q × K,
        a cluster dual per row): on a large dense unweighted X in one compiled read of the rows
        (each chunk's dual sums while its rows are in cache), else one after the other."""
        duals = np.asarray(duals, dtype=np.float64)
        evaluation, terms = self._evaluated_rows(rows, solution, offset, whole, labels, duals)
        if terms is None:
            terms = self.cluster_bound_terms(rows, labels, duals)
        return evaluation, terms

    def _evaluated_rows(self, rows, solution, offset, whole, labels, duals):
        """(:meth:`evaluate_rows`, the certificate's terms at ``duals`` when the compiled read
        gave them, else None)."""
        c_plus, c_minus = self.costs()
        w = rows.weight
        kernels = compiled.kernels_for(rows.X) if w is None else None
        terms = None
        if kernels is not None:  # |r|, sign r, chunk sums of ρ(r) (and of |X|, the duals' terms)
            known = abs_column_sums_known(rows.X)  # the run's first evaluation sums |X|
            found = kernels.residual_loss(
                rows.X,
                rows.y,
                solution.coef,
                solution.intercept,
                c_plus,
                c_minus,
                CHUNK,
                labels,
                duals if len(duals) else None,
                abs_sums=not known,
            )
            column_sums = (
                abs_column_sums(rows.X)
                if known
                else abs_column_sums_from(rows.X, found.abs_sums.sum(axis=0))
            )
            if len(duals):
                terms = self._chunk_bound_terms(rows, found.products, found.scalars, column_sums)
            size, regime = found.size, found.positive
            total, added = added_chunk_sums(found.loss[:, None])
            objective = float(total[0])
            loss_sum = (objective + float(added[0])) * (1 + 2 * GAMMA)  # ≥ Σ|ρ(r_i)|
            sum_error = GAMMA * loss_sum * (1 + 2 * EPS) + float(added[0])
        else:
            # r = y − Xβ − β₀ (in this order) in one vector of n: each costs page faults
            residual = np.asarray(rows.X @ solution.coef, dtype=np.float64)
            np.subtract(rows.y, residual, out=residual)
            residual -= solution.intercept
            positive = residual > 0
            regime = positive.view(np.int8)  # 1 where r_i > 0
            size = np.abs(residual)
            if c_plus == c_minus:  # c·|r| is (±c)·r to the bit
                loss = size if c_plus == 1.0 else size * c_plus
            else:
                loss = np.where(positive, c_plus, c_minus) * size
            if w is not None:
                loss = loss * w
            objective, sum_error = accurate_sum(loss)
            if w is not None or (c_plus, c_minus) != (1.0, 1.0):  # needed below only then
                loss_sum = float(loss.sum()) * (1 + 2 * GAMMA)
            column_sums = abs_column_sums(rows.X) if w is None else None
        if w is None and (c_plus, c_minus) != (1.0, 1.0):
            sum_error += EPS * loss_sum  # the products c·|r_i|
        # |fl(r_i) − r_i| ≤ γ_{m+2} (|y_i| + Σ_j |x_ij||β_j| + |β₀|), summed over i (× w_i)
        if w is None:
            scale = (
                vector_sums(rows.y)[0]
                + float(column_sums @ np.abs(solution.coef))
                + rows.n * abs(solution.intercept)
            )
        else:
            scale = (
                float(w @ np.abs(rows.y))
                + float((w @ np.abs(rows.X)) @ np.abs(solution.coef))
                + float(w.sum()) * abs(solution.intercept)
            ) * (1 + sum_relative_error(rows.n))
            sum_error += 2 * EPS * loss_sum  # the products c·r_i·w_i
        residual_error = (rows.m + 3) * EPS * scale * max(c_plus, c_minus)
        error = sum_error + residual_error
        if delta := self.cost_error():  # Σ w|r| ≤ (Ê + its error)/min ĉ, with room for δ
            error += 2 * delta * (abs(objective) + error) / min(c_plus, c_minus)
        finer = self.split_regime(size, regime, offset, whole)
        return Evaluation(objective, regime, finer, error), terms

    def solution_to_dict(self, data: RegressionData, solution: CheckLossFit) -> dict[str, Any]:
        """β by column name, and β₀."""
        return {"coef": by_name(data.feature_names, solution.coef), "intercept": solution.intercept}

    def solution_from_dict(
        self, data: RegressionData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> CheckLossFit:
        """The fit :meth:`solution_to_dict` describes (a column it lacks is named)."""
        coef = from_names(payload.get("coef"), data.feature_names)
        return CheckLossFit(coef, float(payload.get("intercept", 0.0)))

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: RegressionData,
        solution: CheckLossFit,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality on the original LP: for u_i ∈ w_i[−c⁻, c⁺] and any β,
        Σ_i w_i ρ(y_i − z_i β) ≥ uᵀy − βᵀ(Zᵀu), z_i = (1, x_i), w_i = 1 for unweighted data. u is
        the aggregated dual spread over the entries (u_i = s_k w_i for i ∈ C_k; Zᵀu = Σ_k s_k S_k,
        S_k = Σ_{C_k} w_i z_i), repaired so that Zᵀu ≈ 0 on the clusters whose s_k is inside its
        box; the residual e = Zᵀu that rounding leaves costs |β*ᵀe| ≤ ‖Dβ*‖₂‖D⁻¹e‖₂ with
        ‖Dβ*‖₂ ≤ (‖W½y‖₂ + E/(min(c⁺, c⁻)√min w)) / √λ_min(D⁻¹GD⁻¹) (‖W½Zβ*‖₂ ≤ ‖W½y‖₂ +
        ‖W½r*‖₁), D = diag(√G_jj), and ZᵀWZ ⪰ G = Σ_k W_k z̄_k z̄_kᵀ (the aggregated Gram at the
        weighted means). A (nearly) rank-deficient design gives no bound, with a warning naming the
        dependent columns. The terms are the evaluation's (``bound_terms``) when its read summed
        them for this solution, else summed here in a read of their own."""
        c_plus, c_minus = self.costs()
        if dual is not None:
            s = dual.expand(data.n, evaluation.regime)
            if s.size and (s.min() < -c_minus or s.max() > c_plus):
                raise ValueError(f"the dual point leaves its box [{-c_minus:g}, {c_plus:g}]")
            bound = self._bound_at(
                data, s, upper, self._full_gram(data), data.n, "the given dual point"
            )
            return best_with_dual([(bound, partial(self._dual_point, s, evaluation))])
        part = solution.partition
        if part is None:
            return None
        read = evaluation.bound_terms
        if isinstance(read, _BoundRead) and read.solution is solution:  # summed as evaluated
            candidates, gram, all_terms = read.candidates, read.gram, read.terms
        else:
            candidates, gram = self.bound_candidates(
                self.aggregate_of(data, part, aggregate), solution
            )
            duals = np.vstack([s for s, _ in candidates])
            all_terms = self.cluster_bound_terms(data, part.labels, duals)
        found = []
        for (s, what), terms in zip(candidates, all_terms, strict=True):
            source = f"{what} spread over the entries, on all data"
            bound = self.bound_from_terms(
                terms, gram, part.n_clusters, upper, source, list(data.feature_names)
            )
            found.append((bound, partial(self._spread_dual_point, s, part, evaluation)))
        return best_with_dual(found)

    def bound_candidates(
        self, agg: CheckLossAggregate, solution: CheckLossFit
    ) -> tuple[list[tuple[NDArray[np.float64], str]], NDArray[np.float64]]:
        """The cluster duals s (K,) to spread over the entries, each with what it is, and the
        aggregated Gram G, all from the cluster sums (W_k, Σ w x, Σ w y) of the solved clusters."""
        c_plus, c_minus = self.costs()
        weight, x_sum, y_sum = agg.weight, agg.x_sum, agg.y_sum
        S = np.vstack([weight, x_sum.T]) if self.fit_intercept else np.ascontiguousarray(x_sum.T)
        candidates = [
            (
                self._rebuilt_dual(weight, x_sum, y_sum, S, solution),
                "the dual that complementary slackness gives the primal",
            )
        ]
        s = solution.cluster_dual
        if s is not None and s.shape == weight.shape:
            repaired = repair_equalities(S, np.zeros(S.shape[0]), s, -c_minus, c_plus)
            candidates.append((repaired, "the solver's dual"))
        # Σ_k W_k z̄_k z̄_kᵀ = Σ_k S_k S_kᵀ / W_k ⪯ ZᵀWZ (weighted means; W = I unweighted)
        gram = (S / weight) @ S.T
        return self._promising(candidates, S, y_sum, gram), gram

    def _promising(
        self,
        candidates: list[tuple[NDArray[np.float64], str]],
        S: NDArray[np.float64],
        y_sum: NDArray[np.float64],
        gram: NDArray[np.float64],
    ) -> list[tuple[NDArray[np.float64], str]]:
        """The candidates worth their row sums (each costs a product per entry and coefficient):
        a candidate is dropped when another dominates it on the cluster sums, with at least its
        value uᵀy = Σ_k s_k Y_k and at most its ‖D⁻¹Zᵀu‖₂ = ‖D⁻¹S s‖₂ — its bound uᵀy −
        ‖Dβ*‖₂‖D⁻¹Zᵀu‖₂ is then no higher, whatever ‖Dβ*‖₂ (up to the rounding allowances).
        A choice of the dual points to sum, not a bound: the certificate is computed on the
        rows for those kept."""
        scale = np.sqrt(np.diag(gram))
        if len(candidates) < 2 or not np.all(scale > 0):
            return candidates
        values = [float(s @ y_sum) for s, _ in candidates]
        residuals = [float(np.linalg.norm((S @ s) / scale)) for s, _ in candidates]

        def dominated(d: int) -> bool:
            return any(
                b != d
                and values[b] >= values[d]
                and residuals[b] <= residuals[d]
                and (values[b], -residuals[b], -b) > (values[d], -residuals[d], -d)
                for b in range(len(candidates))
            )

        return [c for d, c in enumerate(candidates) if not dominated(d)]

    def bound_terms(self, rows: RegressionData, s: NDArray[np.float64]) -> BoundTerms:
        """The row sums of the bound of :meth:`lower_bound` at u = s∘w on the block ``rows``
        (s ∈ [−c⁻, c⁺] per unit weight, one per row; u = s unweighted; weighted, fl(s_i w_i) is
        shrunk by 1 − 2ε so that |u_i| ≤ |s_i| w_i holds in exact arithmetic: u stays in its
        box [−c⁻w_i, c⁺w_i]): uᵀy and Zᵀu with their rounding bounds, ‖W½y‖₂², min w."""
        w = rows.weight
        u = weighted_below(s, w)
        value, value_error = accurate_sum(u * rows.y)
        value_error += EPS * float(np.abs(u) @ np.abs(rows.y))
        bound_u = float(np.abs(u).max(initial=0.0))
        e, error = accurate_tdot(rows.X, u, abs_bound=abs_products_bound(rows.X, bound_u))
        if self.fit_intercept:
            e_1, err_1 = accurate_sum(u)
            e, error = np.r_[e_1, e], np.r_[err_1, error]
        wy = rows.y if w is None else np.sqrt(w) * rows.y
        w_min = 1.0 if w is None else float(w.min())
        return BoundTerms(value, value_error, e, error, float(wy @ wy), w_min, rows.n)

    def cluster_bound_terms(
        self, rows: RegressionData, labels: NDArray[np.integer], duals: NDArray[np.float64]
    ) -> list[BoundTerms]:
        """:meth:`bound_terms` at u = s[labels] for each cluster dual s, a row of ``duals``
        (q × K). On a large dense unweighted X in a large run: one compiled read of the rows for
        all of them, u never made (:func:`aidopt.numerics.compiled.cluster_dual_sums`; the bounds of
        :meth:`_chunk_bound_terms`)."""
        kernels = compiled.kernels_for(rows.X)
        if kernels is None or rows.weight is not None or not len(duals):
            return [self.bound_terms(rows, s[labels]) for s in duals]
        duals = np.asarray(duals, dtype=np.float64)  # no copy of a q × K array
        products, scalars = kernels.cluster_dual_sums(rows.X, rows.y, labels, duals, CHUNK)
        return self._chunk_bound_terms(rows, products, scalars, abs_column_sums(rows.X))

    def _chunk_bound_terms(
        self,
        rows: RegressionData,
        products: NDArray[np.float64],
        scalars: NDArray[np.float64],
        column_sums: NDArray[np.float64],
    ) -> list[BoundTerms]:
        """The terms of :meth:`bound_terms` from the compiled chunk sums at each dual (chunks of
        CHUNK rows summed in float64, the chunk sums added by :func:`aidopt.core.certificate.
        added_chunk_sums`), with its rounding bounds: γΣ|v| per sum plus the addition of its
        chunk sums, ε Σ|u_i y_i| for the products u_i y_i, and for Zᵀu — added four rows at a
        time, so γ_FOURS (70 roundings, not CHUNK + 2) — through max|u| · Σ_i |x_i|
        (``column_sums`` ≥ Σ_i |x_ij|)."""
        norm_y_squared = vector_sums(rows.y)[1]
        chunks, q, p = products.shape
        # every dual's chunk sums added at once: Σ u a (p columns), then Σ u y, Σ|u y|, Σ u, Σ|u|
        columns = np.concatenate([products, scalars[:, :, :4]], axis=2).reshape(chunks, -1)
        all_sums, all_added = added_chunk_sums(columns)
        terms = []
        for d in range(q):
            at = d * (p + 4)
            e, e_added = all_sums[at : at + p], all_added[at : at + p]
            sums, added = all_sums[at + p : at + p + 4], all_added[at + p : at + p + 4]
            uy, u_sum = float(sums[0]), float(sums[2])
            # sums of non-negative terms in chunks: the exact ones are at most (1 + 2γ) × these
            abs_uy, abs_u = (sums[[1, 3]] + added[[1, 3]]) * (1 + 2 * GAMMA)
            bound_u = float(scalars[:, d, 4].max(initial=0.0))
            value_error = (GAMMA + EPS) * abs_uy * (1 + 2 * EPS) + float(added[0])
            e_error = GAMMA_FOURS * bound_u * column_sums * (1 + 4 * EPS) + e_added
            if self.fit_intercept:
                e = np.r_[u_sum, e]
                e_error = np.r_[GAMMA * abs_u * (1 + 2 * EPS) + float(added[2]), e_error]
            terms.append(BoundTerms(uy, value_error, e, e_error, norm_y_squared, 1.0, rows.n))
        return terms

    def bound_from_terms(
        self,
        terms: BoundTerms,
        gram: NDArray[np.float64],
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound | None:
        """D(u) = uᵀy − βᵀ(Zᵀu) ≥ uᵀy − ‖Dβ*‖₂‖D⁻¹Zᵀu‖₂ minus every rounding allowance (see
        :meth:`lower_bound`); None (with a warning) for a (nearly) rank-deficient design."""
        c_plus, c_minus = self.costs()
        # |βᵀe| ≤ ‖Dβ‖₂ ‖D⁻¹e‖₂ with D = diag(√G_jj): the column scales cancel
        scale = np.sqrt(np.diag(gram))
        if not np.all(scale > 0):
            self._warn_rank(feature_names, gram)
            return None
        residual = float(np.linalg.norm((np.abs(terms.e) + terms.e_error) / scale))
        lam = safe_min_eigenvalue(gram / np.outer(scale, scale), n_clusters)
        if lam <= 1e-13:
            self._warn_rank(feature_names, gram)
            return None
        # ‖W½Zβ*‖₂ ≤ ‖W½y‖₂ + ‖W½r*‖₁ and ‖W½r*‖₁ ≤ Σ w_i|r*_i|/√min w ≤ E*/(min(c⁺, c⁻)√min w)
        # (W = I unweighted); gram ⪯ ZᵀWZ, so ‖Dβ*‖₂ ≤ ‖W½Zβ*‖₂/√λ
        norm_y = float(np.sqrt(terms.norm_y_squared)) * (1 + sum_relative_error(terms.n))
        root_w_min = float(np.sqrt(terms.w_min)) * (1.0 - 2 * EPS)
        beta_bound = (norm_y + max(upper, 0.0) / (min(c_plus, c_minus) * root_w_min)) / np.sqrt(lam)
        allowance = terms.value_error + beta_bound * residual
        if delta := self.cost_error():  # the box of the float costs (:meth:`cost_error`)
            allowance += 2 * delta * max(upper, 0.0) / min(c_plus, c_minus)
        source = f"LP dual of (2) at {source}"
        return Bound(terms.value - allowance, source, None, terms.value, allowance)

    def _bound_at(self, data, s, upper, gram, terms, source) -> Bound | None:
        """The bound of :meth:`lower_bound` at u = s∘w on all rows (its dual point not yet
        attached: :meth:`_dual_point`)."""
        sums = self.bound_terms(data, s)
        return self.bound_from_terms(sums, gram, terms, upper, source, data.feature_names)

    def _spread_dual_point(
        self, s: NDArray[np.float64], part: Partition, evaluation: Evaluation
    ) -> DualPoint:
        """The cluster dual s spread over the entries (u_i = s_k w_i, i ∈ C_k), as a dual point."""
        return self._dual_point(s[part.labels], evaluation)

    def _dual_point(self, s: NDArray[np.float64], evaluation: Evaluation) -> DualPoint:
        """s as a dual point (compact: the entries whose value is not their regime's default)."""
        c_plus, c_minus = self.costs()
        return DualPoint.compress(s, evaluation.regime, (-c_minus, c_plus))

    def _rebuilt_dual(self, weight, x_sum, y_sum, S, solution: CheckLossFit) -> NDArray[np.float64]:
        """The cluster dual that complementary slackness gives (β₀, β): s_k = c⁺ where the
        cluster's aggregated residual is positive, −c⁻ where negative; the clusters it
        interpolates (residual 0) are free and make Σ_k s_k S_k = 0 by least squares (S, p × K:
        the columns S_k = Σ_{i∈C_k} w_i z_i of the aggregated dual's constraints)."""
        c_plus, c_minus = self.costs()
        fit = x_sum @ solution.coef + weight * solution.intercept
        rbar = (y_sum - fit) / weight
        size = (np.abs(y_sum) + np.abs(x_sum) @ np.abs(solution.coef)) / weight
        tie = np.abs(rbar) <= 1e-9 * (size + abs(solution.intercept))
        s = np.where(rbar > 0, c_plus, -c_minus)
        s[tie] = 0.5 * (c_plus - c_minus)
        return repair_equalities(S, np.zeros(S.shape[0]), s, -c_minus, c_plus, free=tie)

    def _full_gram(self, data: RegressionData) -> NDArray[np.float64]:
        p = self.n_coefficients(data)
        gram = np.zeros((p, p))
        w = data.weight
        for start in range(0, data.n, 65536):
            block = data.X[start : start + 65536]
            block = dense(block)
            if self.fit_intercept:
                block = np.hstack([np.ones((block.shape[0], 1)), block])
            weighted = block if w is None else block * w[start : start + 65536, None]
            gram += weighted.T @ block  # Σ w_i z_i z_iᵀ
        return gram

    def _warn_rank(self, feature_names: list[str], gram: NDArray[np.float64]) -> None:
        """Warn that the design is (nearly) rank-deficient, naming dependent columns."""
        from scipy.linalg import qr

        names = (["(intercept)"] if self.fit_intercept else []) + list(feature_names)
        _, r, piv = qr(gram, pivoting=True)
        diag = np.abs(np.diag(r))
        rank = int(np.sum(diag > 1e-10 * diag[0])) if diag.size and diag[0] > 0 else 0
        dependent = [names[j] for j in piv[rank:]]
        warnings.warn(
            f"The design matrix is rank-deficient or nearly so (rank {rank} of {len(names)}; "
            f"dependent column(s): {', '.join(dependent) or 'none found'}): the coefficients are "
            "not unique and the optimum cannot be certified. Drop or combine those columns.",
            DataWarning,
            stacklevel=4,
        )
