"""PU learning with the linear kernel under AID: the aggregated primal (5) with w explicit.

The formulation, AID for PU and what both kernels share: ``models/pu_parts.py``. Here f(x) =
w·x + β, and the aggregated problem is (5) on the centroids x̄_k with weights W_k (restricted to
the span of the centroids when that is smaller); its certificate is weak duality of (5) at the
aggregated σ — the primal's row multipliers, or the σ complementary slackness gives (w̄, β̄) —
spread over the unlabeled entries and summed over every row, in memory or in blocks. A
scipy.sparse X stays sparse (only the K × d centroids are dense).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import from_names
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    box_distance,
    repair_equalities,
    weighted_below,
)
from aidopt.core.clustering import ScoreBins, n_clusters_for_rate, quantile_edges
from aidopt.core.contract import BlockPass
from aidopt.core.dual_sums import DualSums, dual_sums
from aidopt.core.sample_fits import pu_fit
from aidopt.models.pu_kernel import KernelPUModel, optimal_bias
from aidopt.models.pu_parts import (
    MIN_CLUSTERS,
    SAMPLE_UNLABELED,
    Limits,
    PUAggregate,
    PUBase,
    PUData,
    PUSolution,
    below_c2,
    cluster_columns,
    double_hinge,
    feasible_sigma,
    pu_aggregate,
    pu_constants,
)
from aidopt.numerics.rounding import product_up, score_error
from aidopt.numerics.span import CentroidSpan
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.base import SolveResult

__all__ = ["PUAggregate", "PUData", "PUModel", "PUSolution", "double_hinge", "optimal_bias"]


# ---------------------------------------------------------------------- the model
class PUModel(BlockPass, PUBase):
    """PU learning (5)/(6) under AID: the double-hinge risk of Sansone et al. (2019) with λ‖f‖².

    This class is the linear kernel's primal (5); a kernel other than linear makes
    :class:`~aidopt.models.pu_kernel.KernelPUModel` (the options: :class:`~aidopt.models.
    pu_parts.PUBase`)."""

    describes_by_row_sums: ClassVar[bool] = True
    kernel_variant: ClassVar[Any] = KernelPUModel
    evaluate_rows = PUBase.evaluate_rows  # BlockPass's abstract one comes first in the MRO

    def _span(self, agg: PUAggregate) -> CentroidSpan | None:
        """The centroids' span when it is smaller than the feature space (linear primal)."""
        if not self.span_reduction or agg.weight.size >= agg.x_sum.shape[1]:
            return None
        span = CentroidSpan.of(agg.xbar)
        return span if span.rank < agg.x_sum.shape[1] else None

    def declare(self, agg: PUAggregate) -> Problem:
        """(5) with w explicit (in the centroids' span when that is smaller) and ℓ(f) =
        ½(1 + f)₊ + ½(f − 1)₊, two slacks per unlabeled cluster (HiGHS's active-set QP method
        cycles on the degenerate three-piece epigraph, docs/pu.md §5)."""
        c1, c2 = pu_constants(agg.weight, agg.labeled, self.prior, self.lam)
        P, U = agg.labeled, ~agg.labeled
        nu = int(U.sum())
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

    def read(self, values: Values, agg: PUAggregate) -> PUSolution:
        """(w, β) and σ_u = a_u + b_u from the two slack rows' multipliers."""
        return self._solution(values["w"], float(values["beta"][0]), agg, _sigma(values))

    def program_bound(self, result: SolveResult, agg: PUAggregate) -> float | None:
        """A lower bound on F^t by weak duality: the dual value at σ_u = a_u + b_u made exactly
        feasible; the solver's own bound when it returns no multipliers."""
        sigma = _sigma(self.declare(agg).values(result))
        return result.bound if sigma is None else self._dual_value(sigma, agg)

    def _solution(
        self, u: NDArray, beta: float, agg: PUAggregate, sigma: NDArray | None = None
    ) -> PUSolution:
        """(w, β) from the reduced coordinates; ``sigma`` the σ of the unlabeled clusters (the
        primal's row duals), when the route gives them."""
        span = self._span(agg)
        w = u if span is None else span.lift(u)
        cluster_sigma = None
        if sigma is not None:
            cluster_sigma = np.zeros(agg.weight.size)
            cluster_sigma[~agg.labeled] = feasible_sigma(sigma, agg, self.prior, self.lam)
        return PUSolution(
            bias=beta,
            coef=w,
            norm_sq=float(w @ w),
            cluster_sigma=cluster_sigma,
            partition=agg.partition,
            constants=(
                *pu_constants(agg.weight, agg.labeled, self.prior, self.lam),
                agg.total_error,
            ),
        )

    def _dual_value(self, sigma: NDArray, agg: PUAggregate) -> float:
        """The dual value −½‖w(σ)‖² + Σ min(σ, C − σ) ≤ F^t at σ (the σ = a + b of the primal's
        row duals) made feasible, w(σ) = Σ_k ᾱ_k x̄_k (7)."""
        weight, labeled = agg.weight, agg.labeled
        c1, c2 = pu_constants(weight, labeled, self.prior, self.lam)
        sigma = feasible_sigma(sigma, agg, self.prior, self.lam)
        alpha = np.where(labeled, c1 * weight, 0.0)
        alpha[~labeled] = -sigma
        w_sigma = agg.xbar.T @ alpha
        C = c2 * weight[~labeled]
        return -0.5 * float(w_sigma @ w_sigma) + math.fsum(np.minimum(sigma, C - sigma))

    def _score_error(self, rows: PUData, solution: PUSolution) -> float:
        """Σ ω_i |fl(w·x_i + β) − f_i| (:func:`~aidopt.numerics.rounding.score_error`)."""
        assert solution.coef is not None, "a linear solution carries w"
        return score_error(rows.X, solution.coef, abs(solution.bias), rows.weight)

    def _aggregated_bound(self, data, solution, evaluation, upper, limits, aggregate):
        """The best bound over the duals of :meth:`bound_candidates` (BlockPass.bound_on_rows)."""
        dual_point = partial(self._cluster_dual_point, data, evaluation)
        return self.bound_on_rows(data, solution, upper, aggregate, dual_point)

    def _cluster_dual_point(self, data, evaluation, per_row) -> DualPoint:
        """The dual point of a candidate of :meth:`bound_candidates` spread over the rows."""
        sigma = weighted_below(per_row[:, 0], data.weight)
        return self._dual_point_of(data, sigma, evaluation, float(per_row[0, 2]))

    def _bound_at(self, data, limits: Limits, sigma, evaluation, upper, source) -> Bound:
        """The bound of :meth:`lower_bound` at a per-entry σ in ``limits.box``, w(σ) summed
        from the rows (:func:`~aidopt.core.dual_sums.dual_sums`)."""
        c1, c2, box, relative = limits  # σ ≤ box ≤ the exact c2ω: min(σ, box − σ) ≤ the exact
        concave = [(box_distance(sigma, box)[~data.labeled], 0.0)]
        alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
        terms = dual_sums(data.X, concave, alpha, max(c1, c2), sigma, weight=data.weight)
        bound = self.bound_from_terms(terms, relative, 0, upper, source, data.feature_names)
        return dataclasses.replace(bound, dual=self._dual_point_of(data, sigma, evaluation, c2))

    def _dual_point_of(self, data, sigma, evaluation, c2: float) -> DualPoint:
        """σ as a dual point: compressed by regime onto 0, c2/2, c2 without row weights."""
        if data.weight is None:
            return DualPoint.compress(sigma, evaluation.regime, (0.0, 0.5 * c2, c2))
        return super()._dual_point_of(data, sigma, evaluation, c2)

    def _sigma_from_primal(self, agg: PUAggregate, solution: PUSolution) -> NDArray:
        """σ_k per cluster from complementary slackness at (w, β): 0 where f(x̄_k) < −1, c2W_k/2
        inside, c2W_k above 1; clusters at f = ±1 are free and, by least squares, make
        Σσ = π/(2λ) and w(σ) = w (7) hold as nearly as the box allows."""
        c1, c2 = pu_constants(agg.weight, agg.labeled, self.prior, self.lam)
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

    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks."""
        return min(whole.n, max(2 * SAMPLE_UNLABELED, 20 * whole.m))

    def initial_rule(self, sample: PUData, whole: Any, rate: float) -> ScoreBins:
        """C^0 without clustering every row at once: the linear PU fit of
        :meth:`_sample_scores` on the sample (its positives by their centroid, every row
        standing for n/|sample| rows), and the quantiles of its scores on the sample's
        unlabeled rows as the edges of the unlabeled clusters (the positives: one cluster).
        A sample without positives or without unlabeled rows gives one unlabeled cluster."""
        P, U = sample.labeled, ~sample.labeled
        n_unlabeled = max(1, round(whole.n * float(U.mean())))
        k = n_clusters_for_rate(rate, n_unlabeled, minimum=min(n_unlabeled, MIN_CLUSTERS))
        if not (P.any() and U.any()):
            return ScoreBins(np.zeros(whole.m), (np.empty(0), np.empty(0)))
        omega = sample.row_weights
        mean_p = (omega[P] @ sample.X[P]) / omega[P].sum()
        rows = np.vstack([mean_p, sample.X[U]])
        weights = np.r_[omega[P].sum(), omega[U]] * (whole.n / sample.n)
        mask = np.r_[True, np.zeros(int(U.sum()), dtype=bool)]
        direction = pu_fit(rows, mask, weights, self.prior, self.lam, self.kernel).coef
        assert direction is not None, "the linear sample fit carries w"
        score = sample.X[U] @ direction
        return ScoreBins(direction, (np.empty(0), quantile_edges(score, k)))

    def initial_labels(self, rows: PUData, offset: int, rule: ScoreBins) -> NDArray[np.int64]:
        """Positives 0; an unlabeled row 1 + the bin of its score."""
        return rule.labels(rows.X, ~rows.labeled)

    def cluster_columns(self, rows: PUData) -> list[NDArray]:
        """:func:`~aidopt.models.pu_parts.cluster_columns`."""
        return cluster_columns(rows)

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> PUAggregate:
        """:func:`~aidopt.models.pu_parts.pu_aggregate`."""
        return pu_aggregate(sums, partition)

    def bound_candidates(
        self, agg: PUAggregate, solution: PUSolution
    ) -> tuple[list[tuple[NDArray[np.float64], str]], float]:
        """Per cluster (σ_k/W_k, α_k/W_k, c2'): σ per unit weight from the aggregated σ and from
        the σ complementary slackness gives (w̄, β̄), values within 1e-12 of 0, c2/2, c2 snapped
        to them and clipped to [0, c2']; α per unit weight c1 on P, −σ on U (7); c2' = c2
        shrunk by its error bound (≤ the true c2: the box and min(σ, c2ω − σ) stay valid).
        The context is the relative error bound of c1."""
        c1, c2 = pu_constants(agg.weight, agg.labeled, self.prior, self.lam)
        c2_low, relative = below_c2(c2, agg.total_error)
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
            out.append((d, f"dual (6) at {what}"))
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
        """(w, b) by column."""
        coef = from_names(payload.get("w"), data.feature_names, "weight")
        return PUSolution(bias=float(payload["b"]), coef=coef, norm_sq=float(coef @ coef))

    def solution_row_sums(self, rows: PUData, solution: PUSolution) -> NDArray[np.int64]:
        """(rows predicted +1, rows) of a block."""
        f = self.training_scores(rows, solution)
        return np.array([int(np.count_nonzero(f >= 0.0)), rows.n], dtype=np.int64)


def _sigma(values: Values) -> NDArray | None:
    """σ_u = a_u + b_u, the multipliers of the linear primal's two slack rows (None: none)."""
    plus, minus = values.dual("plus_one"), values.dual("minus_one")
    return None if plus is None or minus is None else plus + minus


MODEL = PUModel
