"""CutS3VM — cutting-plane semi-supervised SVM (Zhao, Wang & Zhang 2008; seed 002).

Labeled points i = 1..l (y_i = ±1), unlabeled points j = l+1..n, linear kernel. Problem (3):

    min_w  ½‖w‖² + (C_l/n) Σ_i max{0, 1 − y_i f_i} + (C_u/n) Σ_j max{0, 1 − |f_j|},
    f = w·φ(x) + b,

both losses divided by the *total* n. Balance constraint (2), (1/u) Σ_j f_j = 2r − 1, by
translation: φ(x) = x − μ with μ the mean of the unlabeled points, and b = 2r − 1 fixed. The
translation is implicit (w·φ(x) = w·x − w·μ, Σ_k a_k φ(x_k) = Σ_k a_k x_k − (Σ_k a_k) μ), so a
sparse X stays sparse and a pass over the data costs O(nnz).

Algorithm 1 (the cutting plane over the 1-slack form (4)): Ω = ∅, w = 0; repeat: the most
violated constraint c_i = [y_i f_i < 1] (9), c_j = [|f_j| < 1] (10), whose violation is
H(c; w) = (1/n)[C_l Σ_i c_i(1 − y_i f_i) + C_u Σ_j c_j(1 − |f_j|)]; stop when H ≤ ξ + ε (12),
ξ = max{0, max_{c∈Ω} H(c; w)} the slack of the working set at w (Theorem 4: then (w, ξ + ε) is
feasible for (4)); else Ω ← Ω ∪ {c} and solve the working-set problem (13) by CCCP.

Algorithm 2 (CCCP for (13)): from a random w₀ at the first round (see :func:`random_start`),
later warm-started at the previous w; linearise |f_j| at w_t as ŷ_j f_j with ŷ_j = sign(f_j(w_t))
(+1 at 0), solve the convex master (17) — through its dual (19) in
:mod:`aidopt.baselines.cutting_plane` — and stop when J(w_{t+1}) > (1 − α) J(w_t), with
J(w) = ½‖w‖² + ξ(w) the objective of (13) (true |f_j|, not the linearisation); J never increases.

Kernels (§2.1, following Chapelle & Zien): an explicit empirical feature map φ(x_i) = rows of
V Λ^{1/2}, K = V Λ Vᵀ (eigen-decomposition, eigenvalues ≤ 1e-10·λ_max dropped), then linear
CutS3VM on those rows. Cost: O(n² s) for K, O(n³) for the decomposition, 8n² bytes of memory
and dense n-dimensional features, so each pass is O(n²) instead of O(nnz).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.baselines.cutting_plane import Cuts, build_master, master_from_pyomo, solve_master
from aidopt.common.lazy import sparse as sp
from aidopt.common.validation import check_int, check_predict_input, check_real
from aidopt.data.containers import SemiSupervisedData
from aidopt.data.io import Table
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError, SolverError
from aidopt.numerics.kernels import Kernel, check_kernel_options

__all__ = [
    "METHOD",
    "CutS3VM",
    "CutS3VMResult",
    "EmpiricalFeatureMap",
    "WorkingSet",
    "random_start",
]

logger = logging.getLogger("aidopt.cuts3vm")

_MAX_KERNEL_ROWS = 20_000  # an n × n kernel matrix of 3.2 GB


# ---------------------------------------------------------------------- kernels
@dataclass(frozen=True, eq=False)
class EmpiricalFeatureMap:
    """φ(x) = Λ^{-1/2} Vᵀ k(X_train, x) for K(X_train, X_train) = V Λ Vᵀ (λ > 1e-10·λ_max).

    On the training rows this is V Λ^{1/2}, whose Gram matrix is K (up to the dropped part).
    """

    kernel: Kernel
    X: NDArray[np.float64] | sp.csr_matrix
    V: NDArray[np.float64]
    inv_sqrt: NDArray[np.float64]

    @classmethod
    def fit(cls, kernel: Kernel, X) -> tuple[EmpiricalFeatureMap, NDArray[np.float64]]:
        n = X.shape[0]
        if n > _MAX_KERNEL_ROWS:
            raise DataError(
                f"The empirical feature map needs the {n} × {n} kernel matrix "
                f"({8 * n * n / 2**30:.1f} GiB) and its eigen-decomposition (O(n³)); use at most "
                f"{_MAX_KERNEL_ROWS} rows, or the linear kernel (kernel=None)."
            )
        evals, V = np.linalg.eigh(kernel(X, X))
        keep = evals > 1e-10 * max(float(evals[-1]), 0.0)
        V, evals = V[:, keep], evals[keep]
        return cls(kernel, X, V, 1.0 / np.sqrt(evals)), V * np.sqrt(evals)

    def transform(self, X) -> NDArray[np.float64]:
        return (self.kernel(X, self.X) @ self.V) * self.inv_sqrt


# ---------------------------------------------------------------------- the working set Ω
class WorkingSet:
    """Ω as 0/1 masks over the labeled and unlabeled points, with what (9), (10), (17)/(18) and
    the slack ξ need. The labeled parts of (18) are fixed per cut; the unlabeled parts depend on
    ŷ and are kept up to date incrementally: a new cut costs one O(nnz) pass, a CCCP step
    O(|Ω|·nnz) over the unlabeled points whose ŷ flipped (all of them the first time)."""

    def __init__(self, X, y, labeled, C_l: float, C_u: float, b: float) -> None:
        lab, unl = np.flatnonzero(labeled), np.flatnonzero(~labeled)
        self.X_l, self.y_l, self.X_u = X[lab], y[lab], X[unl]
        self.mu = np.asarray(self.X_u.mean(axis=0)).ravel()  # the unlabeled mean: φ = x − μ
        self.n, self.b = X.shape[0], b
        self.wl, self.wu = C_l / self.n, C_u / self.n  # C_l/n, C_u/n
        d = X.shape[1]
        self.c_l = np.zeros((0, lab.size), dtype=bool)
        self.c_u = np.zeros((0, unl.size), dtype=bool)
        self.z_l, self.h_l = np.zeros((0, d)), np.zeros(0)  # z^l_k (centred), s^l_k / b
        self.y_hat = np.zeros(unl.size)  # the ŷ that z_u, h_u below were computed with
        self.z_u, self.h_u = np.zeros((0, d)), np.zeros(0)  # z^u_k (centred), s^u_k / b

    @property
    def size(self) -> int:
        return self.c_l.shape[0]

    def scores(self, w: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
        """f = w·(x − μ) + b on the labeled and on the unlabeled points: one O(nnz) pass."""
        offset = self.b - float(w @ self.mu)
        return np.asarray(self.X_l @ w).ravel() + offset, np.asarray(self.X_u @ w).ravel() + offset

    def most_violated(self, f_l, f_u) -> tuple[NDArray, NDArray, float]:
        """c of (9)/(10) and its violation H(c; w) (= the loss terms of (3) at w)."""
        margin = self.y_l * f_l
        c_l, c_u = margin < 1.0, np.abs(f_u) < 1.0
        H = self.wl * float((1.0 - margin[c_l]).sum()) + self.wu * float(
            (1.0 - np.abs(f_u[c_u])).sum()
        )
        return c_l, c_u, H

    def slack(self, f_l, f_u) -> float:
        """ξ = max{0, max_{c∈Ω} H(c; w)} with the true |f_j| (the objective of (13))."""
        if self.size == 0:
            return 0.0
        H = self.c_l @ (self.wl * (1.0 - self.y_l * f_l)) + self.c_u @ (
            self.wu * (1.0 - np.abs(f_u))
        )
        return max(0.0, float(H.max()))

    def add(self, c_l: NDArray[np.bool_], c_u: NDArray[np.bool_]) -> None:
        """Ω ← Ω ∪ {c}: its (18) terms at the current ŷ."""
        self.c_l = np.vstack([self.c_l, c_l])
        self.c_u = np.vstack([self.c_u, c_u])
        z, h = self._centred_sum(self.X_l, np.where(c_l, self.wl * self.y_l, 0.0)[None, :])
        self.z_l, self.h_l = np.vstack([self.z_l, z]), np.r_[self.h_l, h]
        z, h = self._centred_sum(self.X_u, np.where(c_u, self.wu * self.y_hat, 0.0)[None, :])
        self.z_u, self.h_u = np.vstack([self.z_u, z]), np.r_[self.h_u, h]

    def masks(self, labeled: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Ω as a |Ω| × n 0/1 array in data order."""
        out = np.zeros((self.size, labeled.size), dtype=bool)
        out[:, labeled], out[:, ~labeled] = self.c_l, self.c_u
        return out

    def linearised(self, y_hat: NDArray[np.float64]) -> Cuts:
        """(18) at the linearisation labels ŷ = sign f_j(w_t)."""
        flipped = np.flatnonzero(y_hat != self.y_hat)
        if flipped.size:
            weights = self.c_u[:, flipped] * (self.wu * (y_hat[flipped] - self.y_hat[flipped]))
            z, h = self._centred_sum(self.X_u[flipped], weights)
            self.z_u += z
            self.h_u += h
            self.y_hat = y_hat.copy()
        norm1 = self.wl * self.c_l.sum(axis=1) + self.wu * self.c_u.sum(axis=1)
        return Cuts(norm1, self.z_l + self.z_u, self.h_l + self.h_u)

    def _centred_sum(self, X, weights: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
        """Σ_k a_k (x_k − μ) = Σ_k a_k x_k − (Σ_k a_k) μ for every row of ``weights``."""
        h = weights.sum(axis=1)
        return np.asarray(X.T @ weights.T).T - h[:, None] * self.mu, h


def random_start(X, mu: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """w₀ = g/σ, g ~ N(0, I): a random direction scaled so that the scores g·(x − μ) have unit
    standard deviation over the data (the paper says only "random values")."""
    g = rng.standard_normal(X.shape[1])
    sigma = float(np.std(np.asarray(X @ g).ravel() - g @ mu))
    return g / sigma if sigma > 0 else g


# ---------------------------------------------------------------------- result
@dataclass(frozen=True)
class CutS3VMResult:
    """The output of :meth:`CutS3VM.solve`.

    ``w`` acts on φ(x) − μ (φ = identity for the linear kernel) with the fixed ``b`` = 2r − 1;
    ``intercept`` = b − w·μ gives f(x) = w·φ(x) + intercept. ``objective`` is (3) at w,
    ``xi`` the working-set slack and ``violation`` = H(c; w) − ξ of the last most-violated c
    (≤ ε when ``status == "converged"``). ``cccp_history`` holds J along every CCCP run;
    ``rounds`` one record per round of Algorithm 1 (ξ and H(c; w) before the cut was added).
    """

    status: str
    message: str
    w: NDArray[np.float64]
    b: float
    center: NDArray[np.float64]
    objective: float
    xi: float
    violation: float
    constraints: int
    iterations: int
    cccp_iterations: int
    cccp_history: tuple[tuple[float, ...], ...]
    rounds: tuple[dict[str, float], ...]
    seconds: float
    labels: NDArray[np.int64]  # ±1 of the unlabeled points, in data order
    working_set: NDArray[np.bool_] = field(repr=False)  # Ω as a |Ω| × n 0/1 array, data order
    feature_map: EmpiricalFeatureMap | None = field(default=None, repr=False)

    @property
    def intercept(self) -> float:
        return self.b - float(self.w @ self.center)

    @property
    def n_features(self) -> int:
        """The number of columns of the data it was fitted on."""
        return self.center.shape[0] if self.feature_map is None else self.feature_map.X.shape[1]

    def decision_function(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        X = check_predict_input(X, self.n_features, type(self).__name__, accept_sparse=True)
        phi = X if self.feature_map is None else self.feature_map.transform(X)
        return np.asarray(phi @ self.w).ravel() + self.intercept

    def predict(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.int64]:
        """±1 by the sign of f (+1 at 0), as the labels y_j = sign(f_j) of Algorithm 1."""
        return np.where(self.decision_function(X) >= 0, 1, -1)


# ---------------------------------------------------------------------- the algorithm
class CutS3VM:
    """CutS3VM, the cutting-plane S3VM of Zhao, Wang & Zhang (2008), a local method.

    Algorithms 1 and 2. ``C_l``, ``C_u`` loss weights (scaled by 1/n); ``r`` the positive
    fraction of the unlabeled points (None: the labeled one); ``eps`` the cutting-plane
    tolerance ε; ``alpha`` the CCCP relative tolerance; ``max_iter`` / ``max_cccp`` caps on
    rounds and on CCCP steps per round; ``kernel`` None (linear) or an
    :class:`aidopt.numerics.kernels. Kernel` (empirical feature map); ``master_solver`` "active-set"
    (the dual (19) by
    :func:`aidopt.solvers.active_set.capped_simplex_qp`, default) or a solver for the Pyomo
    primal (17) ("highs", "gurobi", any Pyomo name).
    """

    name: ClassVar[str] = "cuts3vm"
    solvers: ClassVar[tuple[str, ...]] = ("active-set", "highs", "gurobi")  #: master solvers
    default_solver: ClassVar[str] = "active-set"
    citation: ClassVar[str] = "Zhao, Wang & Zhang (2008), CutS3VM, Algorithms 1-2, eqs. (3)-(19)"

    def __init__(
        self,
        C_l: float = 1.0,
        C_u: float = 1.0,
        r: float | None = None,
        *,
        eps: float = 0.1,
        alpha: float = 0.01,
        max_iter: int = 500,
        max_cccp: int = 50,
        kernel: Kernel | None = None,
        master_solver: str = "active-set",
        time_limit: float | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.C_l = C_l
        self.C_u = C_u
        self.r = r
        self.eps = eps
        self.alpha = alpha
        self.max_iter = max_iter
        self.max_cccp = max_cccp
        self.kernel = kernel
        self.master_solver = master_solver
        self.time_limit = time_limit
        self.random_state = random_state

    def check_params(self) -> None:
        owner = type(self).__name__
        check_real(self.C_l, "C_l", owner, low=0.0)
        check_real(self.C_u, "C_u", owner, low=0.0, closed="left")
        check_real(self.r, "r", owner, low=0.0, high=1.0, allow_none=True)
        check_real(self.eps, "eps", owner, low=0.0)
        check_real(self.alpha, "alpha", owner, low=0.0, high=1.0, closed="left")
        check_int(self.max_iter, "max_iter", owner, low=1)
        check_int(self.max_cccp, "max_cccp", owner, low=1)
        check_real(self.time_limit, "time_limit", owner, low=0.0, allow_none=True)
        check_int(self.random_state, "random_state", owner, low=0, allow_none=True)
        if self.kernel is not None and not isinstance(self.kernel, Kernel):
            raise InvalidParameterError(
                f"The 'kernel' parameter of {owner} must be an instance of "
                f"aidopt.numerics.kernels.Kernel or None. Got {self.kernel!r} instead."
            )
        if not isinstance(self.master_solver, str) or not self.master_solver:
            raise InvalidParameterError(
                f"The 'master_solver' parameter of {owner} must be a non-empty str "
                f"('active-set', 'highs', 'gurobi' or a Pyomo solver name). "
                f"Got {self.master_solver!r} instead."
            )

    def summary(self) -> dict[str, Any]:
        return {
            "C_l": self.C_l,
            "C_u": self.C_u,
            "r": self.r,
            "eps": self.eps,
            "alpha": self.alpha,
            "max_iter": self.max_iter,
            "max_cccp": self.max_cccp,
            "kernel": None if self.kernel is None else self.kernel.kind,
            "master_solver": self.master_solver,
            "random_state": self.random_state,
        }

    # ------------------------------------------------------------------ sklearn-style facade
    def fit(self, X: ArrayLike | sp.spmatrix, y: ArrayLike) -> CutS3VM:
        """``y``: the class of labeled rows, NaN/None on unlabeled rows (the S3VM convention)."""
        data = SemiSupervisedData.from_arrays(X, y)
        self.result_ = self.solve(data)
        self.classes_ = np.asarray(data.classes)
        self.coef_ = self.result_.w
        self.intercept_ = self.result_.intercept
        self.labels_ = self.classes_[(self.result_.labels > 0).astype(int)]
        return self

    def decision_function(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        return self._fitted().decision_function(self._checked(X))

    def predict(self, X: ArrayLike | sp.spmatrix) -> NDArray:
        return self.classes_[(self._fitted().predict(self._checked(X)) > 0).astype(int)]

    def _fitted(self) -> CutS3VMResult:
        if not hasattr(self, "result_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) first."
            )
        return self.result_

    def _checked(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.float64] | sp.csr_matrix:
        n_features = self._fitted().n_features
        return check_predict_input(X, n_features, type(self).__name__, accept_sparse=True)

    # ------------------------------------------------------------------ Algorithm 1
    def solve(self, data: SemiSupervisedData) -> CutS3VMResult:
        """Run CutS3VM on validated semi-supervised data (y = ±1 labeled, 0 unlabeled)."""
        self.check_params()
        start = time.perf_counter()
        labeled = data.labeled
        y_l = data.y[labeled]
        r = float(np.mean(y_l > 0)) if self.r is None else float(self.r)
        b = 2.0 * r - 1.0
        X, fmap = data.X, None
        if self.kernel is not None:
            fmap, X = EmpiricalFeatureMap.fit(self.kernel, data.X)
        ws = WorkingSet(X, data.y, labeled, float(self.C_l), float(self.C_u), b)
        rng = np.random.default_rng(self.random_state)
        logger.info(
            "CutS3VM: n=%d (l=%d), d=%d, C_l=%g, C_u=%g, r=%.4g (b=%.4g), eps=%g, alpha=%g",
            data.n, labeled.sum(), X.shape[1], self.C_l, self.C_u, r, b, self.eps, self.alpha,
        )  # fmt: skip
        logger.info("%5s %6s %5s %14s %14s %14s %9s", "Iter", "|Ω|", "CCCP", "ξ", "H(c;w)",
                    "J", "Time(s)")  # fmt: skip
        w = np.zeros(X.shape[1])  # (13) with Ω = ∅ has the solution w = 0
        lam = np.zeros(0)
        history: list[tuple[float, ...]] = []
        rounds: list[dict[str, float]] = []
        status, iteration = "iteration_limit", 0
        for iteration in range(1, self.max_iter + 1):
            f_l, f_u = ws.scores(w)
            c_l, c_u, H = ws.most_violated(f_l, f_u)  # (9), (10)
            xi = ws.slack(f_l, f_u)
            if H <= xi + self.eps:  # step 4: ε-feasible for (4), (12)
                status = "converged"
                break
            if self._out_of_time(start):
                status = "time_limit"
                break
            ws.add(c_l, c_u)  # Ω ← Ω ∪ {c}
            if iteration == 1:  # Algorithm 2, step 1: a random first start
                w = random_start(X, ws.mu, rng)
            w, lam, values = self._cccp(ws, w, np.r_[lam, 0.0], start)
            history.append(values)
            seconds = time.perf_counter() - start
            rounds.append({"iteration": iteration, "constraints": ws.size, "xi": xi, "H": H,
                           "cccp_steps": len(values) - 1, "J": values[-1],
                           "seconds": seconds})  # fmt: skip
            logger.info("%5d %6d %5d %14.8g %14.8g %14.8g %9.3f", iteration, ws.size,
                        len(values) - 1, xi, H, values[-1], seconds)  # fmt: skip
        else:
            f_l, f_u = ws.scores(w)
            _, _, H = ws.most_violated(f_l, f_u)
            xi = ws.slack(f_l, f_u)
        message = {
            "converged": f"ε-feasible (Theorem 4): H(c; w) − ξ = {H - xi:.3g} ≤ ε = {self.eps:g}",
            "iteration_limit": f"stopped after {self.max_iter} rounds (max_iter)",
            "time_limit": f"stopped at the time limit of {self.time_limit} s",
        }[status]
        if status != "converged":
            warnings.warn(f"CutS3VM {message}; the last cut is violated by {H - xi:.3g} > ε.",
                          ConvergenceWarning, stacklevel=2)  # fmt: skip
        logger.info("CutS3VM %s: %s; |Ω| = %d, objective %.10g", status, message, ws.size,
                    0.5 * w @ w + H)  # fmt: skip
        return CutS3VMResult(
            status=status,
            message=message,
            w=w,
            b=b,
            center=ws.mu,
            objective=0.5 * float(w @ w) + H,
            xi=xi,
            violation=H - xi,
            constraints=ws.size,
            iterations=iteration,
            cccp_iterations=sum(len(v) - 1 for v in history),
            cccp_history=tuple(history),
            rounds=tuple(rounds),
            seconds=time.perf_counter() - start,
            labels=np.where(f_u >= 0, 1, -1),
            working_set=ws.masks(labeled),
            feature_map=fmap,
        )

    # ------------------------------------------------------------------ Algorithm 2
    def _cccp(self, ws: WorkingSet, w, lam, start) -> tuple[NDArray, NDArray, tuple[float, ...]]:
        """CCCP on (13) from w: returns the last w, the dual λ and J along the run."""
        f_l, f_u = ws.scores(w)
        J = 0.5 * float(w @ w) + ws.slack(f_l, f_u)
        values = [J]
        for _ in range(self.max_cccp):
            y_hat = np.where(f_u >= 0, 1.0, -1.0)  # sign(w_t·φ(x_j) + b), +1 at 0
            w, lam = self._master(ws.linearised(y_hat), ws.b, lam)  # (17) via (19)
            f_l, f_u = ws.scores(w)
            J_new = 0.5 * float(w @ w) + ws.slack(f_l, f_u)
            values.append(J_new)
            if J_new > (1.0 - self.alpha) * J or self._out_of_time(start):
                break
            J = J_new
        return w, lam, tuple(values)

    def _master(self, cuts: Cuts, b: float, lam) -> tuple[NDArray, NDArray]:
        if self.master_solver == "active-set":
            solution = solve_master(cuts, b, start=lam)
            return solution.w, solution.lam
        from aidopt.core.registry import get_solver
        from aidopt.solvers.base import SolveStatus
        from aidopt.solvers.pyomo import PyomoAdapter

        name = self.master_solver
        adapter = PyomoAdapter("highs") if name == "highs" else get_solver(name)
        model = build_master(cuts, b)
        result = adapter.solve_pyomo(model)
        if result.status is not SolveStatus.OPTIMAL:
            raise SolverError(f"Solver '{name}' returned {result.status.value} on master (17).")
        return master_from_pyomo(model)[0], np.zeros(0)

    def _out_of_time(self, start: float) -> bool:
        return self.time_limit is not None and time.perf_counter() - start > self.time_limit

    # ------------------------------------------------------------------ command line
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Options of ``aidopt solve cuts3vm`` (besides --data, --target, --json, --quiet)."""
        parser.add_argument("--Cl", type=float, default=1.0, help="C_l, labeled loss weight (1)")
        parser.add_argument("--Cu", type=float, default=1.0, help="C_u, unlabeled loss weight (1)")
        parser.add_argument(
            "--r",
            type=float,
            default=None,
            help="positive fraction of unlabeled (default: labeled)",
        )
        parser.add_argument(
            "--eps", type=float, default=0.1, help="cutting-plane tolerance ε (0.1)"
        )
        parser.add_argument("--alpha", type=float, default=0.01, help="CCCP relative tol α (0.01)")
        parser.add_argument("--max-iter", type=int, default=500, help="cap on rounds (500)")
        parser.add_argument("--max-cccp", type=int, default=50, help="cap on CCCP steps (50)")
        parser.add_argument("--time-limit", type=float, default=None, help="wall-clock limit (s)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random first start")
        parser.add_argument(
            "--kernel",
            choices=("linear", "rbf", "poly"),
            default="linear",
            help="linear (default) or an empirical feature map (O(n²) memory, O(n³) time)",
        )
        parser.add_argument("--gamma", type=float, default=None, help="γ of rbf/poly (1/d)")
        parser.add_argument(
            "--solver",
            default="active-set",
            help="master solver: active-set (the dual (19), default), highs, gurobi (primal (17))",
        )

    @classmethod
    def solve_from_cli(cls, args: argparse.Namespace, frame: Table) -> dict[str, Any]:
        """``aidopt solve cuts3vm``: the JSON-ready result (the s3vm layout plus |Ω| and CCCP)."""
        check_kernel_options(args.kernel, gamma=args.gamma)  # before reading the data
        kernel = None if args.kernel == "linear" else Kernel(args.kernel, gamma=args.gamma)
        data = SemiSupervisedData.from_frame(frame, args.target)
        method = cls(
            C_l=args.Cl,
            C_u=args.Cu,
            r=args.r,
            eps=args.eps,
            alpha=args.alpha,
            max_iter=args.max_iter,
            max_cccp=args.max_cccp,
            kernel=kernel,
            master_solver=args.solver,
            time_limit=args.time_limit,
            random_state=args.seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the status says it
            result = method.solve(data)
        names = (
            data.feature_names if kernel is None else [f"phi{k + 1}" for k in range(len(result.w))]
        )
        return {
            "model": cls.name,
            "solver": args.solver,
            "status": result.status,
            "message": result.message,
            "objective": result.objective,
            "lower_bound": None,  # a local method (CCCP on a non-convex problem): no certificate
            "gap": None,
            "constraints": result.constraints,
            "cccp_iterations": result.cccp_iterations,
            "iterations": result.iterations,
            "n": data.n,
            "m": data.m,
            "final_rate": None,  # no aggregation
            "seconds": result.seconds,
            "params": method.summary(),
            "solution": {
                "w": {name: float(v) for name, v in zip(names, result.w, strict=True)},
                "b": result.intercept,
                "labels": [int(v) for v in result.labels],
                "classes": {"-1": data.classes[0], "1": data.classes[1]},
                "balance_b": result.b,
                "xi": result.xi,
                "violation": result.violation,
            },
            "history": list(result.rounds),
        }


METHOD = CutS3VM
