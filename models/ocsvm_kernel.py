"""Kernel large-margin one-class SVM (LM-OCSVM) under AID, through its aggregated dual.

Pham, Le & Dang, "Scalable Support Vector Clustering Using Budget", eq. (1), with a Mercer kernel
K (linear, RBF or polynomial; ``aidopt.numerics.kernels``) and feature map φ:

    J* = min_w  J(w) = ½‖w‖² + (C/N) Σ_i max{0, 1 − ⟨w, φ(x_i)⟩}                            (1)

Its dual (the digest §1.2; no equality row, because there is no bias):

    max_α  Σ_i α_i − ½ Σ_{i,j} α_i α_j K(x_i, x_j)     s.t.  0 ≤ α_i ≤ C/N.

Aggregated (digest §6): the feature-space centroids φ̄_k = mean_{i∈C_k} φ(x_i), never formed; only
their Gram matrix K̄_kq = (1/(|C_k||C_q|)) Σ_{i∈C_k} Σ_{j∈C_q} K(x_i, x_j) (built block-wise by
:func:`aidopt.core.kernel_aggregate.centroid_gram_sums`, never the N × N matrix):

    F^t = max_a  Σ_k a_k − ½ aᵀ K̄ a     s.t.  0 ≤ a_k ≤ C|C_k|/N.

By Jensen Σ_{i∈C_k} max{0, 1 − ⟨w, φ_i⟩} ≥ |C_k| max{0, 1 − ⟨w, φ̄_k⟩}, so F^t ≤ J*. The
domain of w̄ = Σ_k a_k φ̄_k is f(x) = Σ_k (a_k/|C_k|) Σ_{j∈C_k} K(x_j, x) − 1 ≥ 0; the regime of
entry i is [f(x_i) < 0] (margin violator). The certificate: α_i = a_k/|C_k| lies in the box as it
is, and its dual value Σ_k a_k − ½ aᵀK̄a on ALL data is exact (αᵀKα = aᵀK̄a), so every cluster
pure ⇒ J(w̄) = F^t: optimal.

Row weights ω_i > 0 (row i's loss counts ω_i times; ``supports_weights``): N = Σ ω_i, the
feature-space centroids are the weighted means Σ ω_i φ(x_i)/W_k with W_k = Σ_{C_k} ω_i, the box of
α_i is [0, Cω_i/N] and the spread α_i = a_k ω_i/W_k (SVDD likewise, with box [0, Cω_i]).

Costs (the kernel sums kept for the scores on every entry and refreshed for split clusters
only): :mod:`aidopt.core.kernel_aggregate`.

The default route is the full problem: every row its own cluster, the dual above on all rows by
``decomposition`` (:mod:`aidopt.solvers.kernel_decomposition`, structure ``KernelBoxQP``), then
the same certificate on all rows — faster than AID here (docs/svc.md), since the exact centroid
Gram costs every pair of rows. ``--solver boxqp`` (or highs, gurobi) runs AID as above.

The base class :class:`~aidopt.core.kernel_domain.KernelDomainModel` (kernel options, initial
clusters, the kernel sums with split-only refresh, rounding bounds) is shared with SVDD
(``models/svdd.py``).
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
    ratio_below,
    shifted_norm_error,
)
from aidopt.core.contract import Evaluation, Previous
from aidopt.core.kernel_domain import DomainAggregate, DomainSolution, KernelDomainModel
from aidopt.data.containers import FeatureData
from aidopt.exceptions import SolverCapabilityError
from aidopt.numerics.kernel_expansion import Domain
from aidopt.numerics.kernels import (
    kernel_model_options,
)
from aidopt.numerics.rounding import (
    accurate_sum,
    accurate_weighted_sum,
    product_up,
    total_weight_up,
)
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.base import SolveResult
from aidopt.solvers.structures import BoxQP, KernelBoxQP

__all__ = ["KernelOneClassModel"]


class KernelOneClassModel(KernelDomainModel):
    """LM-OCSVM (1) with a kernel, solved through its aggregated dual. Not registered on its own:
    ``aidopt solve ocsvm --kernel rbf|poly`` reaches it, and results name it ``ocsvm``."""

    name: ClassVar[str] = "ocsvm"
    citation: ClassVar[str] = (
        "Pham, Le & Dang, Scalable Support Vector Clustering Using Budget, (1); dual: digest §6"
    )
    options: ClassVar[tuple[Option, ...]] = (
        Option("C", 1.0, "penalty C of (1)", low=0.0),
        *kernel_model_options(),
    )
    C: float
    structures: ClassVar[tuple[type, ...]] = (BoxQP, KernelBoxQP)
    #: measured (docs/svc.md): the dual (1) on all rows by decomposition, then the certificate
    #: on all rows, takes 0.24–1.7× libsvm's one-class time at 10^4–10^5 rows; AID on the
    #: centroid Gram took 29–76× (it stays: --solver boxqp, highs, gurobi)
    full_problem_solvers: ClassVar[frozenset[str]] = frozenset({"decomposition"})
    default_solver: ClassVar[str] = "decomposition"

    def _upper(self, agg: DomainAggregate) -> NDArray[np.float64]:
        return self.C * agg.weight / agg.total  # C W_k/N

    # ------------------------------------------------------------------ the aggregated dual
    def declare(self, agg: DomainAggregate) -> Problem:
        """The dual max Σ a_k − ½ aᵀK̄a on 0 ≤ a_k ≤ C W_k/N, in factored, scaled form (a = u∘β,
        u = C W_k/N, L Lᵀ = K̄): max uᵀβ − ½‖v‖²  s.t.  v = Lᵀ(u∘β),  0 ≤ β ≤ 1."""
        L, u = agg.factor, self._upper(agg)
        p = Problem("LM-OCSVM aggregated dual")
        v, beta = p.variables("v", L.shape[1]), p.variables("beta", u.size, lower=0.0, upper=1.0)
        p.maximize(u @ beta - 0.5 * sum_squares(v))
        p.subject_to("expansion", v == (L * u[:, None]).T @ beta)
        return p

    def read(self, values: Values, agg: DomainAggregate) -> DomainSolution:
        return self._solution(agg, values["beta"] * self._upper(agg))

    def program_bound(self, result: SolveResult, agg: DomainAggregate) -> float | None:
        """The dual value at the clipped a: a lower bound on F^t."""
        u = self._upper(agg)
        a = np.clip(self.declare(agg).values(result)["beta"] * u, 0.0, u)
        return float(a.sum() - 0.5 * a @ agg.gram @ a)

    def to_structure(
        self, kind: type, agg: DomainAggregate, previous: Previous | None
    ) -> BoxQP | KernelBoxQP:
        """The dual as min ½aᵀK̄a − Σa on the box [0, C|C_k|/N]; on all rows (every cluster
        one entry), with the kernel evaluated by the solver."""
        u = self._upper(agg)
        if kind is KernelBoxQP:
            if not agg.singletons or agg.kernel is None:
                raise SolverCapabilityError(
                    "decomposition solves the LM-OCSVM's full problem only: leave out --rate, "
                    "or use boxqp, highs or gurobi for AID."
                )
            return KernelBoxQP(agg.X, agg.kernel, u)
        start = self.warm_start(agg, previous)
        return BoxQP(agg.gram, np.ones(u.size), np.zeros(u.size), u, start=start)

    def from_structure(self, kind: type, answer: Any, agg: DomainAggregate) -> DomainSolution:
        return self._solution(agg, answer.a)

    def _solution(self, agg: DomainAggregate, a: NDArray[np.float64]) -> DomainSolution:
        a = np.clip(a, 0.0, self._upper(agg))  # the box holds exactly (no equality to repair)
        sv, coef = self.expansion(agg, a)
        kernel = self.kernel_for(agg.X.shape[1])
        norm_sq = agg.quadratic_form(a)
        labels, scores = agg.partition.labels, self.train_scores(agg, a)
        return self.solution_of(sv, coef, kernel, norm_sq, a, labels, None, **scores)

    def solution_of(
        self, sv, coef, kernel, norm_sq, a, labels, radius_sq, **scores
    ) -> DomainSolution:
        domain = Domain(sv, coef, kernel, offset=1.0)
        return DomainSolution(a, labels, domain, norm_sq, **scores)

    # ------------------------------------------------------------------ evaluation, certificate
    def evaluate(
        self, data: FeatureData, solution: DomainSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """J(w̄) = ½ aᵀK̄a + (C/N) Σ_i ω_i max{0, −f(x_i)}; regime [f(x_i) < 0]."""
        f = solution.decision_function(data.X)
        hinge, hinge_error = accurate_weighted_sum(np.maximum(-f, 0.0), data.weight)
        kmax, entry = self.kernel_max(data), self.kernel_error(data)
        scale = self.C / data.total_weight
        one = self.expansion_error(solution.domain, kmax, data.m, data.n, entry)
        error = scale * (hinge_error + total_weight_up(data.row_weights) * one)
        error += 0.5 * self.quad_error(solution.domain, data.n, kmax, entry)
        regime = (f < 0).astype(np.int64)
        return Evaluation(0.5 * solution.norm_sq + scale * hinge, regime, None, error)

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
        """Weak duality for (1): J* ≥ Σ_i α_i − ½ αᵀKα at α_i ∈ [0, Cω_i/N]; α̂_i = a_k ω_i/W_k
        spread from the clusters gives Σα̂ = Σa and α̂ᵀKα̂ = aᵀK̄a (the solution's own w̄). The
        box's scale C/N is rounded below the exact one (:func:`~aidopt.core.certificate.below`)
        and α clipped into it; ‖w‖² is that of the exact spread (or of the given point), so
        what the spread's rounding (float W_k with row weights) and the clipping moved α by,
        m = Σ|Δα_i|·√kmax, costs ½m(2‖w‖ + m)."""
        weight_error = data.weight_sums_error  # of N
        scale, relative = ratio_below(self.C, data.total_weight, weight_error)
        box_text = f"[0, {self.C:g} ω_i/N]"
        alpha, moved, where = self.entry_point(data, solution, dual, scale, relative, box_text)
        source = f"dual of (1) at {where}"
        total, total_error = accurate_sum(alpha)
        kmax, entry = self.kernel_max(data), self.kernel_error(data)
        value = total - 0.5 * solution.norm_sq
        quad_error = self.quad_error(solution.domain, data.n, kmax, entry)
        shift = product_up(moved, np.sqrt(kmax))
        moved_error = shifted_norm_error(solution.norm_sq, quad_error, shift)
        allowance = total_error + 0.5 * (quad_error + moved_error)
        return Bound(value - allowance, source, DualPoint.on_support(alpha), value, allowance)

    def solution_to_dict(self, data: FeatureData, solution: DomainSolution) -> dict[str, Any]:
        kernel = solution.domain.kernel
        f = solution.decision_function(data.X)
        return {
            "kernel": dataclasses.asdict(kernel),
            "n_support_entries": int(solution.support_vectors.shape[0]),
            "share_inside": float(np.average(f >= 0.0, weights=data.weight)),
        }
