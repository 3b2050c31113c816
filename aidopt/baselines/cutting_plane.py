"""The 1-slack cutting-plane master problem of CutS3VM (Zhao, Wang & Zhang 2008, §3, eqs. (13),
(17)-(19)) and, on labeled data only, the SVMperf-style 1-slack linear SVM (Joachims 2006).

A working set Ω = {c_1, …, c_K} of constraint vectors c_k ∈ {0,1}^n enters the master only
through the quantities (18), with ŷ_j the label imputed to unlabeled point j at the current CCCP
linearisation point (the labeled labels y_i for labeled points):

    ‖c_k‖₁ = (C_l/n) Σ_i c_ki + (C_u/n) Σ_j c_kj                       (a weighted 1-norm)
    z_k    = z^l_k + z^u_k = (C_l/n) Σ_i c_ki y_i φ(x_i) + (C_u/n) Σ_j c_kj ŷ_j φ(x_j)
    h_k    = (C_l/n) Σ_i c_ki y_i + (C_u/n) Σ_j c_kj ŷ_j                (s^l_k + s^u_k = h_k b)

Master (17), the linearised working-set problem (13), a QP in (w, ξ) (b fixed at 2r − 1 for
CutS3VM; free for the 1-slack SVM with an intercept):

    min_{w, ξ ≥ 0}  ½‖w‖² + ξ
    s.t.  ‖c_k‖₁ − w·z_k − h_k b ≤ ξ                      c_k ∈ Ω          (17) with (18)

Dual (19), a QP over K = |Ω| variables on the capped simplex (with a free b, also Σ_k λ_k h_k = 0):

    max_{λ ≥ 0, Σ_k λ_k ≤ 1}  −½ ‖Σ_k λ_k z_k‖² + Σ_k λ_k (‖c_k‖₁ − h_k b)          (19)

Primal recovery (Lagrangian of (17)): w = Σ_k λ_k z_k, ξ = max{0, max_k (‖c_k‖₁ − w·z_k − h_k b)};
a free b is any minimiser of that ξ at this w (the optimal w is unique, so every such b is
optimal), found exactly from the piecewise-linear 1-D problem. The gap P(w, b, ξ) − D(λ) ≥ 0 is
returned with every solution; it certifies the answer of :func:`solve_master`, whose dual is
solved by :func:`aidopt.solvers.active_set.capped_simplex_qp`, a primal active-set method (exact
up to rounding: it ends on a face where the KKT conditions hold).

:func:`one_slack_svm` is Joachims' cutting-plane algorithm on this master with labeled data only
(every ŷ = y): min ½‖w‖² + (C/n) Σ_i max{0, 1 − y_i(w·x_i + b)}. It stops when the most violated
constraint is violated by at most ε; then the master optimum (a lower bound) and the objective
at the returned (w, b) are within ε of each other and bracket the SVM optimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import sparse as sp

if TYPE_CHECKING:
    import pyomo.environ as pyo

from aidopt.common.validation import check_int, check_matrix, check_real, check_vector
from aidopt.exceptions import DataError, SolverError
from aidopt.solvers.active_set import capped_simplex_qp

__all__ = [
    "Cuts",
    "MasterSolution",
    "OneSlackSVM",
    "build_master",
    "master_from_pyomo",
    "one_slack_svm",
    "solve_master",
]

_GAP_TOL = 1e-9  # relative duality gap accepted from the active-set routine


# ---------------------------------------------------------------------- the working set as data
@dataclass(frozen=True, eq=False)
class Cuts:
    """The working set Ω through (18): ``norm1`` (K,) = ‖c_k‖₁, ``z`` (K, d), ``h`` (K,)."""

    norm1: NDArray[np.float64]
    z: NDArray[np.float64]
    h: NDArray[np.float64]

    def __post_init__(self) -> None:
        K = self.norm1.shape[0]
        if self.z.ndim != 2 or self.z.shape[0] != K or self.h.shape != (K,):
            raise ValueError(
                f"Cuts need norm1 (K,), z (K, d), h (K,); got {self.norm1.shape}, "
                f"{self.z.shape}, {self.h.shape}."
            )

    @property
    def size(self) -> int:
        return int(self.norm1.shape[0])

    @property
    def d(self) -> int:
        return int(self.z.shape[1])

    def slacks(self, w: NDArray[np.float64], b: float) -> NDArray[np.float64]:
        """‖c_k‖₁ − w·z_k − h_k b for every cut: the slack each constraint of (17) asks for."""
        return self.norm1 - self.z @ w - self.h * b


@dataclass(frozen=True)
class MasterSolution:
    """Optimum of (17)/(19): primal (w, b, ξ), dual λ, both objectives and their gap."""

    w: NDArray[np.float64]
    b: float
    xi: float
    lam: NDArray[np.float64]
    objective: float  # P = ½‖w‖² + ξ
    dual_objective: float  # D(λ), a lower bound on the optimum of (17)
    iterations: int

    @property
    def gap(self) -> float:
        return self.objective - self.dual_objective


# ---------------------------------------------------------------------- the primal (17) in Pyomo
def build_master(cuts: Cuts, b: float | None = None) -> pyo.ConcreteModel:
    """Master (17) as a Pyomo QP in (w, b, ξ); ``b`` fixed at the given value or free if None."""
    import pyomo.environ as pyo  # loaded when a Pyomo model is built (~0.7 s)

    model = pyo.ConcreteModel(name="CutS3VM master problem (17)")
    model.K = pyo.RangeSet(0, cuts.size - 1)  # constraint vectors c_k ∈ Ω
    model.J = pyo.RangeSet(0, cuts.d - 1)  # features of φ
    model.w = pyo.Var(model.J)  # w, free
    model.b = pyo.Var()  # b: fixed at 2r − 1 (CutS3VM) or free (1-slack SVM)
    if b is not None:
        model.b.fix(float(b))
    model.xi = pyo.Var(domain=pyo.NonNegativeReals)  # ξ, the one shared slack

    @model.Objective(sense=pyo.minimize)  # (17) ½‖w‖² + ξ
    def regularised_slack(m):
        return 0.5 * sum(m.w[j] ** 2 for j in m.J) + m.xi

    @model.Constraint(model.K)  # (17) ‖c_k‖₁ − w·(z^l_k + z^u_k) − (s^l_k + s^u_k) ≤ ξ
    def cut(m, k):
        margin = sum(cuts.z[k, j] * m.w[j] for j in m.J if cuts.z[k, j] != 0.0)
        return cuts.norm1[k] - margin - cuts.h[k] * m.b <= m.xi

    return model


def master_from_pyomo(model: pyo.ConcreteModel) -> tuple[NDArray[np.float64], float, float]:
    """(w, b, ξ) read back from a solved :func:`build_master` model."""
    import pyomo.environ as pyo  # loaded when a Pyomo model is built (~0.7 s)

    w = np.array([pyo.value(model.w[j]) for j in model.J], dtype=np.float64)
    return w, float(pyo.value(model.b)), float(pyo.value(model.xi))


# ---------------------------------------------------------------------- the dual (19): fast path
def solve_master(
    cuts: Cuts,
    b: float | None = None,
    *,
    gram: NDArray[np.float64] | None = None,
    start: NDArray[np.float64] | None = None,
    b_start: float = 0.0,
) -> MasterSolution:
    """Master (17) through its dual (19) and
    :func:`~aidopt.solvers.active_set.capped_simplex_qp`.

    ``gram`` = Z Zᵀ when already known; ``start`` a λ to warm-start from (e.g. the previous
    solution padded with a 0 for a new cut); ``b`` fixed, or None for a free b (then the
    minimiser of ξ nearest to ``b_start`` is returned). Raises SolverError when the active-set
    routine ends with a relative duality gap above 1e-9 (it never has in the tests).
    """
    if cuts.size == 0:
        d = cuts.d
        return MasterSolution(np.zeros(d), float(b or b_start), 0.0, np.zeros(0), 0.0, 0.0, 0)
    Q = cuts.z @ cuts.z.T if gram is None else gram
    fixed = b is not None
    p = cuts.norm1 - cuts.h * b if b is not None else cuts.norm1
    E = None if fixed else cuts.h[None, :]
    lam, iterations = capped_simplex_qp(Q, p, E, start)
    w = lam @ cuts.z
    if b is not None:
        b_value = float(b)
    else:
        b_value = _best_intercept(cuts.norm1 - cuts.z @ w, cuts.h, b_start)
    xi = max(0.0, float(cuts.slacks(w, b_value).max()))
    half_ww = 0.5 * float(w @ w)
    primal = half_ww + xi
    dual = -half_ww + float(lam @ p)
    rounding = 1e-14 * (float(np.abs(p).max()) + float(np.abs(cuts.z).max()) * np.abs(w).sum())
    if primal - dual > _GAP_TOL * (half_ww + xi + abs(float(lam @ p))) + rounding:
        raise SolverError(
            f"The active-set routine for the master dual (19) ended with duality gap "
            f"{primal - dual:.3e} (objective {primal:.6g}, {cuts.size} cuts)."
        )
    return MasterSolution(w, b_value, xi, lam, primal, dual, iterations)


def _best_intercept(a: NDArray[np.float64], h: NDArray[np.float64], b_start: float) -> float:
    """A minimiser of ξ(b) = max{0, max_k (a_k − h_k b)}, the one nearest to ``b_start``.

    The minimum v* is the LP max{Σ μ_k a_k : μ in the simplex over the lines and the line 0,
    Σ μ_k h_k = 0}, attained at one flat line or a pair of lines with slopes of opposite sign;
    the minimisers are then the interval where every line is ≤ v*.
    """
    tiny = 1e-12 * float(np.abs(h).max(initial=0.0))  # slopes that are rounding noise
    pos, neg = h > tiny, h < -tiny
    flat = ~(pos | neg)
    value = max(0.0, float(a[flat].max())) if flat.any() else 0.0
    if pos.any() and neg.any():
        ap, hp = a[pos][:, None], h[pos][:, None]
        an, hn = a[neg][None, :], h[neg][None, :]
        value = max(value, float(((ap * -hn + an * hp) / (hp - hn)).max()))
    lo = float(((a[pos] - value) / h[pos]).max()) if pos.any() else -np.inf
    hi = float(((a[neg] - value) / h[neg]).min()) if neg.any() else np.inf
    if lo > hi:  # rounding: the interval is one point
        return 0.5 * (lo + hi)
    return float(min(max(b_start, lo), hi))


# ---------------------------------------------------------------------- the 1-slack linear SVM
@dataclass(frozen=True)
class OneSlackSVM:
    """Result of :func:`one_slack_svm`: f(x) = w·x + b, P = objective at (w, b), L = master
    optimum (a lower bound on the SVM optimum), with P − L ≤ ε when ``converged``."""

    w: NDArray[np.float64]
    b: float
    objective: float
    lower_bound: float
    constraints: int
    iterations: int
    converged: bool
    seconds: float

    def decision_function(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        return np.asarray(cast(Any, X) @ self.w).ravel() + self.b


def one_slack_svm(
    X: ArrayLike | sp.spmatrix,
    y: ArrayLike,
    C: float = 1.0,
    *,
    eps: float = 1e-3,
    fit_intercept: bool = True,
    max_iter: int = 10_000,
) -> OneSlackSVM:
    """Joachims' 1-slack cutting-plane SVM: min ½‖w‖² + (C/n) Σ_i max{0, 1 − y_i(w·x_i + b)}.

    The master is (17) with labeled data only (C_l = C, ŷ = y, the intercept b free or fixed at
    0). Each round adds the most violated constraint c_i = [y_i f_i < 1] (eq. (9)) until it is
    violated by at most ``eps``. With ``C`` = n·C_svc this is the problem of
    ``SVC(kernel="linear", C=C_svc)``. Sparse X stays sparse (one product X w per round).
    """
    C = check_real(C, "C", "one_slack_svm", low=0.0)
    eps = check_real(eps, "eps", "one_slack_svm", low=0.0)
    max_iter = check_int(max_iter, "max_iter", "one_slack_svm", low=1)
    X = check_matrix(X, "X", accept_sparse=True)
    y = check_vector(y, X.shape[0], "y")
    if not np.all(np.abs(y) == 1.0):
        raise DataError(f"y must hold labels −1/+1; found {sorted(set(np.unique(y)))[:5]}.")
    n = X.shape[0]
    start = time.perf_counter()
    w, b = np.zeros(X.shape[1]), 0.0
    cuts = Cuts(np.zeros(0), np.zeros((0, X.shape[1])), np.zeros(0))
    gram, lam = np.zeros((0, 0)), np.zeros(0)
    lower, converged, iterations = 0.0, False, 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        margin = y * (np.asarray(X @ w).ravel() + b)
        c = margin < 1.0  # (9)
        loss = (C / n) * float((1.0 - margin[c]).sum())  # H(c; w) at the most violated c
        xi = max(0.0, float(cuts.slacks(w, b).max(initial=0.0)))
        if loss <= xi + eps:
            converged = True
            break
        weights = np.where(c, (C / n) * y, 0.0)  # the new cut's (18) with ŷ = y
        z_new = np.asarray(X.T @ weights).ravel()
        cross = cuts.z @ z_new
        gram = np.block([[gram, cross[:, None]], [cross[None, :], z_new @ z_new]])
        cuts = Cuts(
            np.r_[cuts.norm1, (C / n) * float(c.sum())],
            np.vstack([cuts.z, z_new]),
            np.r_[cuts.h, (C / n) * float(y[c].sum())],  # an exact multiple of C/n
        )
        solution = solve_master(
            cuts, None if fit_intercept else 0.0, gram=gram, start=np.r_[lam, 0.0], b_start=b
        )
        w, b, lam, lower = solution.w, solution.b, solution.lam, solution.dual_objective
    margin = y * (np.asarray(X @ w).ravel() + b)
    objective = 0.5 * float(w @ w) + (C / n) * float(np.maximum(0.0, 1.0 - margin).sum())
    return OneSlackSVM(
        w=w,
        b=float(b),
        objective=objective,
        lower_bound=lower,
        constraints=cuts.size,
        iterations=iterations,
        converged=converged,
        seconds=time.perf_counter() - start,
    )
