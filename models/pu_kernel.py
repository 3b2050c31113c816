"""PU learning with a Mercer kernel under AID: the aggregated dual (6) on the centroid Gram.

The formulation, AID for PU and what both kernels share: ``models/pu_parts.py``. Here f(x) =
Σ_i α_i k(x, x_i) + β; the aggregated problem is the dual (6) on the centroid Gram K̄_kq =
mean_{C_k×C_q} k (the kernel sums of the clusters, :mod:`aidopt.core.kernel_aggregate`, reused
for the clusters a split leaves), and α from (7) per cluster is spread over its members
(α_i = ᾱ_k ω_i/W_k). Its certificate is weak duality of (5) at that σ spread over the unlabeled
entries, with ‖w(σ)‖² from the centroid Gram (exact for a σ proportional to ω on clusters).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import issparse
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    box_distance,
    moved_mass,
    ridge_dual_bound,
    shifted_norm_error,
)
from aidopt.core.kernel_aggregate import summed_kernels
from aidopt.core.partition import Partition
from aidopt.exceptions import DataError
from aidopt.models.pu_parts import (
    Limits,
    PUAggregate,
    PUBase,
    PUData,
    PUSolution,
    cluster_columns,
    feasible_sigma,
    pu_aggregate,
    pu_constants,
)
from aidopt.numerics.kernels import (
    expansion_error,
    kernel_bound,
    kernel_entry_error,
    kernel_times,
    quadratic_form_error,
)
from aidopt.numerics.rounding import (
    accurate_sum,
    minus,
    product_up,
    quotient_relative_error,
    total_weight_up,
)
from aidopt.solvers.algebra import Problem, Values, quad_form
from aidopt.solvers.base import SolveResult

__all__ = ["KernelPUModel", "optimal_bias"]


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


class KernelPUModel(PUBase):
    """PU learning (6) under AID with a Mercer kernel: what ``PUModel(kernel=Kernel("rbf"))``
    makes (the options are :class:`~aidopt.models.pu_parts.PUBase`'s)."""

    def check_data(self, data: PUData) -> None:
        """Dense X (kernel blocks are dense anyway)."""
        if issparse(data.X):
            raise DataError(
                f"PU learning with the {self.kernel.kind} kernel needs dense X; convert it "
                "(X.toarray()) or use the linear kernel, which keeps X sparse."
            )

    def aggregate(
        self, data: PUData, partition: Partition, *, previous: PUAggregate | None = None
    ) -> PUAggregate:
        """The cluster sums of :func:`~aidopt.models.pu_parts.cluster_columns` and the kernel
        sums of the clusters (none for singletons), those of the clusters a split left as they
        were taken from ``previous``."""
        agg = pu_aggregate(partition.column_sums(cluster_columns(data)), partition)
        kept = None
        if previous is not None and previous.summed is not None:
            if previous.row_weight is data.weight:
                kept = previous.summed.kept
        summed = None
        if not partition.is_singletons:
            summed = summed_kernels(self.kernel, data.X, partition, kept, data.weight)
        kernel_data = {"X": data.X, "kernel": self.kernel, "row_weight": data.weight}
        return dataclasses.replace(agg, summed=summed, **kernel_data)

    def declare(self, agg: PUAggregate) -> Problem:
        """(6) on the centroid Gram K̄."""
        c1, c2 = pu_constants(agg.weight, agg.labeled, self.prior, self.lam)
        P, U = agg.labeled, ~agg.labeled
        nu = int(U.sum())
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
        """The solution at the σ of (6) made feasible, with the best bias for its α."""
        return self._dual_point(values["sigma"], agg)[0]

    def program_bound(self, result: SolveResult, agg: PUAggregate) -> float | None:
        """A lower bound on F^t by weak duality: −((6) + ½ α_PᵀK̄_PPα_P) at the σ the solver
        returned made exactly feasible."""
        return self._dual_point(self.declare(agg).values(result)["sigma"], agg)[1]

    def _dual_point(self, sigma: NDArray, agg: PUAggregate) -> tuple[PUSolution, float]:
        """(solution, lower bound on F^t) at σ of the aggregated (6), made feasible.

        α from (7) per cluster, spread over the members (α_i = ᾱ_k ω_i/W_k); β the best bias for
        that α (robust to a σ near, not at, a bound, unlike (16)); the lower bound is
        −((6) + ½ α_PᵀK̄_PPα_P).
        """
        sigma = feasible_sigma(sigma, agg, self.prior, self.lam)
        K, weight, labeled = agg.gram, agg.weight, agg.labeled
        c1, c2 = pu_constants(weight, labeled, self.prior, self.lam)
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

    def _score_error(self, rows: PUData, solution: PUSolution) -> float:
        """Σ ω_i |fl(f_i) − f_i|: γ_K Σ|α| kmax and the kernel entries' own error per row."""
        kmax, entry = kernel_bound(self.kernel, rows.X), kernel_entry_error(self.kernel, rows.X)
        error = expansion_error(
            rows.n, rows.m, _alpha_mass(solution), kmax, entry, abs(solution.bias)
        )
        return total_weight_up(rows.row_weights) * error

    def _norm_error(self, rows: PUData, solution: PUSolution) -> float:
        """‖f − β‖² = αᵀKα is a computed quadratic form: half its rounding bound."""
        kmax, entry = kernel_bound(self.kernel, rows.X), kernel_entry_error(self.kernel, rows.X)
        return 0.5 * quadratic_form_error(_alpha_mass(solution), rows.n, kmax, entry)

    def _aggregated_bound(self, data, solution, evaluation, upper, limits, aggregate):
        """The bound at the aggregated σ_k spread over the unlabeled entries (σ_k ω_u/W_k),
        with ‖w(σ)‖² the aggregate's."""
        if solution.cluster_sigma is None:
            return None
        part = solution.partition
        totals = part.weights(data.weight)
        unl = ~data.labeled
        spread = np.where(unl, (solution.cluster_sigma / totals)[part.labels] * data.row_weights, 0)
        sigma = np.clip(spread, 0.0, limits.box)
        # ‖w(σ)‖² is the aggregate's, at the exact spread: σ differs from it by the spread's
        # roundings (a division by the float W_k, a product) and by the clipping
        moved = moved_mass(spread, sigma, quotient_relative_error(2, data.weight_sums_error))
        source = "dual (6) at the aggregated σ spread over the unlabeled entries, on all data"
        return self._bound_at(
            data, limits, sigma, evaluation, upper, source, solution.norm_sq, moved
        )

    def _bound_at(
        self, data, limits: Limits, sigma, evaluation, upper, source, norm_sq=None, moved=0.0
    ) -> Bound:
        """The bound of :meth:`lower_bound` at a per-entry σ in ``limits.box``; ``norm_sq`` is
        ‖w(σ)‖² of the expansion for a σ within ``moved`` (Σ|Δσ|) of the one it was computed
        at (None: computed here). c1's error r moves w by at most r·π/(2λ)·√kmax."""
        c1, c2, box, relative = limits  # σ ≤ box ≤ the exact c2ω: min(σ, box − σ) ≤ the exact
        if norm_sq is None:
            norm_sq = self._expansion_norm_sq(data, sigma, c1)
        kmax, entry = kernel_bound(self.kernel, data.X), kernel_entry_error(self.kernel, data.X)
        value, value_error = accurate_sum(box_distance(sigma, box)[~data.labeled])
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

    def _expansion_norm_sq(self, data: PUData, sigma: NDArray, c1: float) -> float:
        """‖w(σ)‖² = αᵀKα over the rows, α = c1 ω on P, −σ on U (kernel models, verify)."""
        alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
        support = np.flatnonzero(alpha)
        Xs = data.X[support]
        return float(alpha[support] @ kernel_times(self.kernel, Xs, Xs, alpha[support]))

    def solution_from_dict(
        self, data: PUData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> PUSolution:
        """f = Σ_i α_i k(x_i, ·) + b with α = c1 ω on the positives and −σ on the unlabeled
        rows (7), σ the certificate's dual point."""
        if dual is None:
            raise DataError("A kernel PU solution is its dual expansion: the certificate's dual.")
        c1, _ = self.constants(data)
        sigma = dual.expand(data.n, None)
        alpha = np.where(data.labeled, c1 * data.row_weights, -sigma)
        norm_sq = self._expansion_norm_sq(data, sigma, c1)
        return PUSolution(
            bias=float(payload["b"]),
            coef=None,
            norm_sq=norm_sq,
            entry_coef=alpha,
            labels=np.arange(data.n),
        )


def _alpha_mass(solution: PUSolution) -> float:
    """Σ_i |α_i| of a kernel solution."""
    assert solution.alpha is not None, "a kernel solution carries α"
    return float(np.abs(solution.alpha).sum())
