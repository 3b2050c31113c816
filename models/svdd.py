"""Support vector data description (SVDD; Ben-Hur, Horn, Siegelmann & Vapnik 2001, the SVC
baseline of Pham, Le & Dang) under AID, exact through the within-cluster scatter.

Original problem, with feature map φ of a Mercer kernel K and C ≥ 1/N:

    E* = min_{R², a}  R² + C Σ_i max{0, ‖φ(x_i) − a‖² − R²}                                 (P)

dual (Wolfe):  max_β Σ_i β_i K(x_i, x_i) − βᵀKβ   s.t.  Σ_i β_i = 1,  0 ≤ β_i ≤ C.

Aggregation (the digest §6): Σ_{i∈C_k} ‖φ_i − a‖² = |C_k| (‖φ̄_k − a‖² + s_k) with the scatter
s_k = mean_{i∈C_k} K(x_i, x_i) − K̄_kk, so Σ_{i∈C_k} max{0, ‖φ_i − a‖² − R²} ≥
|C_k| max{0, ‖φ̄_k − a‖² + s_k − R²} (Jensen) and the aggregated problem

    F^t = min_{R², a}  R² + C Σ_k |C_k| max{0, ‖φ̄_k − a‖² + s_k − R²}
        = max_b  Σ_k b_k d̄_k − bᵀK̄b   s.t.  Σ_k b_k = 1,  0 ≤ b_k ≤ C|C_k|      (d̄_k = mean K_ii)

is a lower bound on E*. Regime of entry i: [‖φ(x_i) − ā‖² > R̄²] (outside the aggregated
sphere, ā = Σ_k b_k φ̄_k, R̄² the aggregated problem's optimal radius for ā). Every cluster pure ⇒
the aggregated objective at (ā, R̄²) equals (P)'s, so the spread β_i = b_k/|C_k| (feasible for the
dual as it is) certifies it. Without s_k the bound stays valid but a cluster outside the sphere
could never be certified.

Domain of novelty: f(x) = ½(R² − ‖φ(x) − a‖²) = Σ_j β_j K(x_j, x) − ½K(x, x) − ½(‖a‖² − R²) ≥ 0,
with R² = R̄², the aggregated radius (at the certified optimum, an optimal radius of (P)).

libsvm's one-class ν-SVM solves min ½αᵀKα s.t. Σα = νN, 0 ≤ α ≤ 1; for the RBF kernel
(K_ii = 1) that is this dual with β = α/(νN), i.e. ν = 1/(N·C).

Row weights ω_i > 0 (row i's loss counts ω_i times; ``supports_weights``): C Σ_i ω_i max{0, ·}
in (P), box 0 ≤ β_i ≤ Cω_i, weighted centroids and scatter (K̄, d̄_k and s_k with ω), b_k ≤ C W_k;
feasible when C Σ ω_i ≥ 1. scikit-learn's libsvm with ``sample_weight`` ω: α_i ≤ ω_i and
Σα = ν Σω, so ν = 1/(C Σω) maps it (β = α/(ν Σω)); tested.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.options import Option
from aidopt.core.certificate import (
    Bound,
    DualPoint,
    shifted_norm_error,
)
from aidopt.core.contract import Evaluation, Previous
from aidopt.core.kernel_domain import DomainAggregate, DomainSolution, KernelDomainModel
from aidopt.data.containers import FeatureData
from aidopt.data.one_class import BLOBS
from aidopt.exceptions import DataError, SolverCapabilityError
from aidopt.numerics.kernel_expansion import Domain
from aidopt.numerics.kernels import kernel_model_options
from aidopt.numerics.rounding import (
    accurate_sum,
    accurate_weighted_sum,
    product_up,
    quotient_relative_error,
    total_weight_up,
)
from aidopt.solvers.algebra import Problem, Values, quad_form
from aidopt.solvers.base import SolveResult
from aidopt.solvers.structures import BoxQP, KernelOneClass

__all__ = ["SVDDModel", "best_radius"]


def best_radius(dist_sq: NDArray[np.float64], cost: NDArray[np.float64]) -> float:
    """argmin_{R²} R² + Σ_i cost_i max{0, dist_sq_i − R²}: the largest distance at which the
    cost of the points beyond it stops exceeding 1 (a weighted quantile, O(n log n))."""
    order = np.argsort(-dist_sq, kind="stable")
    beyond = np.cumsum(cost[order])  # cost of the points at or beyond each sorted distance
    k = int(np.searchsorted(beyond, 1.0, side="left"))  # first index where the mass reaches 1
    return float(dist_sq[order[min(k, dist_sq.size - 1)]])


class SVDDModel(KernelDomainModel):
    """SVDD (P) with a kernel (RBF by default), through the aggregated dual with the scatter."""

    name: ClassVar[str] = "svdd"
    citation: ClassVar[str] = (
        "Ben-Hur, Horn, Siegelmann & Vapnik (2001), Support Vector Clustering; scatter: digest §6"
    )
    options: ClassVar[tuple[Option, ...]] = (
        Option("C", 1.0, "penalty C of (P), at least 1/N (libsvm one-class: ν = 1/(N·C))", low=0.0),
        *kernel_model_options(),
    )
    C: float
    generator: ClassVar[Any] = BLOBS
    structures: ClassVar[tuple[type, ...]] = (BoxQP, KernelOneClass)
    #: measured (docs/svc.md): with the RBF kernel, libsvm's one-class solver on all rows and
    #: the certificate on all rows beat AID's centroid Gram from 10^4 rows
    full_problem_solvers: ClassVar[frozenset[str]] = frozenset({"libsvm"})
    default_solver: ClassVar[str] = "libsvm"

    def solver_by_default(self) -> str:
        """libsvm (the full problem, certified) for the RBF kernel; boxqp (AID) for poly, whose
        non-constant K(x, x) libsvm's one-class solver cannot take."""
        return "libsvm" if self.kernel == "rbf" else "boxqp"

    def check_data(self, data: FeatureData) -> None:
        super().check_data(data)
        total = data.total_weight
        if self.C * total < 1.0:
            what = "N" if data.weight is None else "Σ ω_i"
            raise DataError(
                f"SVDD is infeasible for C = {self.C:g} < 1/{what} = {1.0 / total:g}: the dual "
                "needs Σβ = 1 with β_i ≤ Cω_i. Use C ≥ 1/N (libsvm's ν = 1/(N·C) ≤ 1)."
            )

    def _upper(self, agg: DomainAggregate) -> NDArray[np.float64]:
        return self.C * agg.weight  # C W_k

    # ------------------------------------------------------------------ the aggregated dual
    def declare(self, agg: DomainAggregate) -> Problem:
        """The dual max d̄ᵀb − bᵀK̄b s.t. Σ_k b_k = 1, 0 ≤ b_k ≤ C W_k, with K̄ = L Lᵀ from its
        eigenvalue factor (positive semidefinite as written). Measured (3,000 and 20,000 blob
        rows, C = 1 … 0.002): HiGHS certifies it in 10–14 iterations, where the factored form
        (v = Lᵀb, −‖v‖²) failed in HiGHS' QP solver ("claims optimality, but with primal
        infeasibilities") from the first or the fourth aggregated problem on."""
        L = agg.factor
        p = Problem("SVDD aggregated dual")
        b = p.variables("b", L.shape[0], lower=0.0, upper=self._upper(agg))
        p.maximize(agg.diag_mean @ b - quad_form(b, L @ L.T))
        p.subject_to("simplex", np.ones(L.shape[0]) @ b == 1.0)
        return p

    def read(self, values: Values, agg: DomainAggregate) -> DomainSolution:
        return self._solution(agg, values["b"])

    def program_bound(self, result: SolveResult, agg: DomainAggregate) -> float | None:
        return None  # the certificate is the dual at the repaired b (lower_bound)

    def to_structure(
        self, kind: type, agg: DomainAggregate, previous: Previous | None
    ) -> BoxQP | KernelOneClass:
        """max d̄ᵀb − bᵀK̄b on the box [0, C|C_k|] with Σb = 1; for the full problem with an
        RBF kernel (K_ii = 1: d̄ is constant), libsvm's one-class ν-SVM on the rows."""
        if kind is KernelOneClass:
            if not agg.singletons or agg.kernel is None or agg.kernel.kind != "rbf":
                raise SolverCapabilityError(
                    "libsvm solves SVDD's full problem with the RBF kernel only: leave out "
                    "--rate (and --kernel poly), or use boxqp, highs or gurobi."
                )
            return KernelOneClass(agg.X, agg.kernel, self.C, agg.row_weight)
        u = self._upper(agg)
        start = self.warm_start(agg, previous)
        return BoxQP(2.0 * agg.gram, agg.diag_mean, np.zeros(u.size), u, 1.0, start)

    def from_structure(self, kind: type, answer: Any, agg: DomainAggregate) -> DomainSolution:
        return self._solution(agg, answer.a)

    def _solution(self, agg: DomainAggregate, b: NDArray[np.float64]) -> DomainSolution:
        """The exactly feasible b next to the solver's (clipped, rescaled to Σb = 1 inside the
        box), the centre ā = Σ b_k φ̄_k, and the aggregated optimal radius R̄² for ā."""
        u = self._upper(agg)
        b = np.clip(b, 0.0, u)
        b = _onto_simplex_box(b, u)
        Kb = agg.gram_times(b)
        norm_sq = float(b @ Kb)
        cluster_dist = agg.diag_mean - 2.0 * Kb + norm_sq  # ‖φ̄_k − ā‖² + s_k
        radius_sq = best_radius(cluster_dist, self.C * agg.weight)
        sv, coef = self.expansion(agg, b)
        kernel = self.kernel_for(agg.X.shape[1])
        labels, scores = agg.partition.labels, self.train_scores(agg, b)
        return self.solution_of(sv, coef, kernel, norm_sq, b, labels, radius_sq, **scores)

    def solution_of(
        self, sv, coef, kernel, norm_sq, a, labels, radius_sq, **scores
    ) -> DomainSolution:
        r2 = 0.0 if radius_sq is None else radius_sq
        domain = Domain(sv, coef, kernel, offset=0.5 * (norm_sq - r2), diag_coef=-0.5)
        return DomainSolution(a, labels, domain, norm_sq, radius_sq, **scores)

    # ------------------------------------------------------------------ evaluation, certificate
    def evaluate(
        self, data: FeatureData, solution: DomainSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """E(ā) = min_{R²} R² + C Σ_i ω_i max{0, ‖φ(x_i) − ā‖² − R²} on all data (the best
        radius for the centre); regime [‖φ(x_i) − ā‖² > R̄²] against the aggregated radius."""
        domain = solution.domain
        dist_sq = self._dist_sq(data, solution)
        omega = data.row_weights
        r2 = best_radius(dist_sq, self.C * omega)
        hinge, hinge_error = accurate_weighted_sum(np.maximum(dist_sq - r2, 0.0), data.weight)
        total = total_weight_up(data.row_weights)
        kmax, entry = self.kernel_max(data), self.kernel_error(data)
        one = self.expansion_error(domain, kmax, data.m, data.n, entry)
        error = self.C * (hinge_error + total * 3 * one)
        error += self.C * total * self.quad_error(domain, data.n, kmax, entry)
        regime = (dist_sq > _radius_sq(solution)).astype(np.int64)
        return Evaluation(r2 + self.C * hinge, regime, None, error)

    def _dist_sq(self, data: FeatureData, solution: DomainSolution) -> NDArray[np.float64]:
        """‖φ(x_i) − ā‖² = K_ii − 2 Σ_j β_j K(x_j, x_i) + ‖ā‖² (= −2 f(x_i) + R̄²)."""
        return _radius_sq(solution) - 2.0 * solution.decision_function(data.X)

    def lower_bound(
        self,
        data: FeatureData,
        solution: DomainSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality for (P) at β with 0 ≤ β_i ≤ Cω_i: E* ≥ Σβ_i K_ii − βᵀKβ + R²(1 − Σβ)
        for the optimal R² ∈ [0, 4·max K_ii]; β_i = b_k ω_i/W_k gives Σβ_i K_ii = Σ b_k d̄_k
        and βᵀKβ = bᵀK̄b exactly, and |1 − Σβ| is rounding only (with row weights the box is
        rounded down into the exact one; what that takes from Σβ is in |1 − Σβ|). βᵀKβ is that
        of the exact spread (or of the given point): what the spread's rounding and the
        clipping moved β by, m = Σ|Δβ_i|·√kmax, costs m(2‖ā‖ + m); each β_i K_ii is one
        rounded product of a computed K_ii."""
        kernel = self.kernel_for(data.m)
        box_text = f"[0, {self.C:g} ω_i]"  # C is exact
        beta, moved, where = self.entry_point(data, solution, dual, self.C, 0.0, box_text)
        source = f"SVDD dual at {where}"
        kmax, entry = self.kernel_max(data), self.kernel_error(data)
        products = beta * kernel.diag(data.X)
        linear, linear_error = accurate_sum(products)
        linear_error += quotient_relative_error(1) * float(np.abs(products).sum())
        linear_error += entry * float(beta.sum())
        total, total_error = accurate_sum(beta)
        value = linear - solution.norm_sq
        quad_error = self.quad_error(solution.domain, data.n, kmax, entry)
        shift = product_up(moved, np.sqrt(kmax))
        allowance = (
            linear_error + quad_error + shifted_norm_error(solution.norm_sq, quad_error, shift)
        )
        allowance += 4.0 * kmax * (abs(1.0 - total) + total_error)
        return Bound(value - allowance, source, DualPoint.on_support(beta), value, allowance)

    def solution_to_dict(self, data: FeatureData, solution: DomainSolution) -> dict[str, Any]:
        kernel = solution.domain.kernel
        dist_sq = self._dist_sq(data, solution)
        omega = data.row_weights
        r2 = best_radius(dist_sq, self.C * omega)
        return {
            "kernel": dataclasses.asdict(kernel),
            "radius_sq": r2,
            "n_support_entries": int(solution.support_vectors.shape[0]),
            "share_inside": float(np.average(dist_sq <= r2, weights=data.weight)),
        }


def _radius_sq(solution: DomainSolution) -> float:
    """R̄², which every SVDD solution carries."""
    assert solution.radius_sq is not None, "an SVDD solution carries its radius"
    return solution.radius_sq


def _onto_simplex_box(b: NDArray[np.float64], upper: NDArray[np.float64]) -> NDArray[np.float64]:
    """b moved onto Σb = 1 within 0 ≤ b ≤ upper: scaled down when the sum is above 1, else the
    deficit spread over the positive entries below their bound (all entries below their bound
    when none is), in proportion to their room. b is a solver's near-feasible answer, so the
    change is of the order of its rounding, and zeros stay zeros."""
    total = b.sum()
    if total > 1.0:
        return b / total
    for _ in range(b.size + 1):
        deficit = 1.0 - b.sum()
        room = b < upper
        if deficit <= 0 or not room.any():
            break
        if (room & (b > 0)).any():
            room &= b > 0
        share = np.where(room, upper - b, 0.0)
        b = b + min(1.0, deficit / share.sum()) * share
    return b


MODEL = SVDDModel
