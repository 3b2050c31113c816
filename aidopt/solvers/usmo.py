"""USMO: sequential minimal optimisation for positive–unlabeled (PU) learning, double-hinge loss.

Sansone, De Natale, Zhou, "Efficient Training for Positive Unlabeled Learning", IEEE TPAMI 2019
(equation numbers below are the paper's; see shared/spec/pu-usmo-digest.md).

Data: labeled positives P and unlabeled points U, with per-row weights w (a row that stands for
|C_k| points of a cluster has w_k = |C_k|; w = 1 is the paper). With p = Σ_P w, n = Σ_U w,
c1 = π/(2λp), c2 = 1/(2λn), prior π ∈ (0, 1), regularisation λ > 0 and f(x) = Σ_i α_i k(x, x_i) + β:

Primal (5), weighted:
    min_{α,β,ξ}  −c1 Σ_P w_i f(x_i) + c2 Σ_U w_u ξ_u + ½ αᵀKα
    s.t.         ξ_u ≥ 0,  ξ_u ≥ f(x_u),  ξ_u ≥ (1 + f(x_u))/2          (u ∈ U)
(the empirical risk of (3) with the double hinge, divided by 2λ).

Dual (6), weighted, with C_u = c2 w_u (σ_u = a_u + b_u/2, δ_u = b_u for the multipliers a, b of
the two hinge constraints):
    min_{σ,δ}  ½ σᵀK_UUσ − σᵀK_UP α_P − ½ Σ_U δ_u
    s.t.       Σ_U σ_u = c1 p = π/(2λ),  σ + δ/2 ≤ C,  σ − δ/2 ≥ 0,  0 ≤ δ ≤ C.
For fixed σ the best δ is δ_u = min(2σ_u, 2C_u − 2σ_u) (Lemma 1), so (6) is solved in σ alone:
    min_σ  G(σ) = ½ σᵀK_UUσ − σᵀK_UP α_P − Σ_U min(σ_u, C_u − σ_u)
    s.t.   Σ_U σ_u = π/(2λ),   0 ≤ σ_u ≤ C_u
and α from (7): α_i = c1 w_i on P (fixed), α_u = −σ_u on U.  The weight enters only through the
box C_u = c2 w_u and α_P = c1 w_P, so a weighted problem equals the problem with rows repeated.
Strong duality: min(5) = −(min(6) + ½ α_Pᵀ K_PP α_P).

Optimality (11)–(13) plus the condition the paper misses (digest §2.3): with F = Kα (f without
bias), a feasible σ is optimal iff some β satisfies the KKT conditions, i.e. iff

    max_{σ_u < C_u} A_u ≤ min_{σ_u > 0} B_u,
    A_u = F_u + 1 if σ_u < C_u/2 else F_u − 1,   B_u = F_u + 1 if σ_u ≤ C_u/2 else F_u − 1.

max A − min B is exactly the largest of the four τ-tests m1max − m3min, m3max − m2min,
m1max − m2min + 2 and the missing m3max − m3min − 2 (see `optimality_conditions`); it is also
−(directional derivative) of G along the pair (j = argmax A up, i = argmin B down), so the
maximal violating pair is that pair. Each step minimises G exactly on the segment
σ_i + σ_j = const (the four cases of Table I, with the /η typo of case 1 fixed), so Σσ is kept
invariant step by step; the cache F is updated with the two kernel rows k(x_i, ·), k(x_j, ·) (15).
Once the test passes, F is recomputed from scratch (one O(n·m) kernel pass, as for the start) and
the test repeated, so rounding drift of (15) cannot fake optimality. Memory is O(m) besides the
data: kernel rows are computed on the fly, never the Gram matrix.

``kernel="precomputed"`` (scikit-learn's convention) takes X as the Gram matrix itself; AID for PU
uses it for the aggregated dual, whose Gram matrix is that of the clusters' feature-space centroids.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar, Literal

import numpy as np

from aidopt.common.lazy import dense, issparse
from aidopt.common.lazy import sparse as sp
from aidopt.common.threads import single_thread_blas
from aidopt.common.validation import check_real
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.numerics.kernels import Kernel, squared_norms
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus, check_options
from aidopt.solvers.structures import PULearning

__all__ = [
    "USMOResult",
    "USMOSolver",
    "decision_function",
    "dual_bias",
    "optimality_conditions",
    "rounding_floor",
    "usmo",
]

_log = logging.getLogger("aidopt.solvers.usmo")
_LINEAR = Kernel("linear")

_BLOCK_ENTRIES = 1 << 18  # kernel entries per block of a blocked product (2 MiB, cache-sized)
_ETA_RTOL = 1e-12  # η ≤ _ETA_RTOL·(k_ii + k_jj) is treated as 0 (duplicate points)
_EPS = float(np.finfo(np.float64).eps)
_CLOCK_EVERY = 64  # steps between two looks at the clock (a step costs ≥ 1 µs)
_STALL_WINDOW = 100_000  # steps (at least; 10·n for n unlabeled rows) between two progress checks

Status = Literal["optimal", "iteration_limit", "time_limit", "stalled"]


@dataclass(frozen=True)
class USMOResult:
    """Solution of the PU problem by USMO.

    Attributes
    ----------
    sigma : (n_unlabeled,) dual variables σ of (6), in the order of the unlabeled rows of X.
    delta : (n_unlabeled,) dual variables δ of (6), δ = min(2σ, 2C − 2σ).
    upper : (n_unlabeled,) box bounds C_u = c2 w_u of σ.
    alpha : (n_samples,) expansion coefficients (7) in the row order of X: c1 w_i on the labeled
        rows, −σ_u on the unlabeled rows.
    bias : β, the mean of (16) over the non-bound rows (0 < σ_u < C_u, σ_u ≠ C_u/2), else the
        midpoint of the interval of β that satisfies the KKT conditions.
    coef : w = Σ_i α_i x_i for the linear kernel, else None.
    dual_objective : G(σ), the objective of (6).
    primal_objective : the objective of (5) at (α, β) with the optimal slacks.
    duality_gap : primal + dual + ½ α_Pᵀ K_PP α_P ≥ 0, a bound on the suboptimality of both.
    norm_sq : αᵀKα, the squared RKHS norm ‖f − β‖² of the decision function.
    train_decision : (n_samples,) f(x_i) on the rows solved on (in the row order of X).
    iterations : number of two-variable steps.
    status : "optimal" (KKT violation ≤ ``tolerance``), "iteration_limit", "time_limit" (the
        current iterate, feasible) or "stalled" (no progress in floating point: a pair step
        that moves nothing, or a window of steps that does not lower G).
    kkt_violation : max(0, max A − min B) at the returned σ, with F recomputed exactly.
    tolerance : the KKT tolerance applied: max(tol, the rounding floor of F = Kα, see
        :func:`rounding_floor`).
    """

    sigma: np.ndarray
    delta: np.ndarray
    upper: np.ndarray
    alpha: np.ndarray
    bias: float
    coef: np.ndarray | None
    dual_objective: float
    primal_objective: float
    duality_gap: float
    norm_sq: float
    train_decision: np.ndarray
    iterations: int
    status: Status
    kkt_violation: float
    kernel: Kernel | Literal["precomputed"]
    prior: float
    lam: float
    c1: float
    c2: float
    tolerance: float = 0.0

    def decision_function(
        self, X_train: np.ndarray | sp.spmatrix | None, X_new: np.ndarray | sp.spmatrix
    ) -> np.ndarray:
        """f(x) = Σ_i α_i k(x, x_i) + β for the rows of X_new (X_train: the rows solved on)."""
        return decision_function(self, X_train, X_new)


def decision_function(
    result: USMOResult,
    X_train: np.ndarray | sp.spmatrix | None,
    X_new: np.ndarray | sp.spmatrix,
) -> np.ndarray:
    """Score new points: f(x) = Σ_i α_i k(x, x_i) + β (x_i: the rows of X_train).

    With ``kernel="precomputed"``, X_new holds the kernel values k(x, x_i) against the training
    rows (shape (n_new, n_train)) and X_train is not used.
    """
    X_new = _as_matrix(X_new, "X_new")
    if result.kernel == "precomputed":
        if X_new.shape[1] != result.alpha.shape[0]:
            raise DataError(
                f"X_new has shape {X_new.shape}; with a precomputed kernel it must hold the "
                f"kernel values against the {result.alpha.shape[0]} training rows."
            )
        return np.asarray(X_new @ result.alpha).ravel() + result.bias
    X_train = _as_matrix(X_train, "X_train")
    if X_train.shape[0] != result.alpha.shape[0]:
        raise DataError(
            f"X_train has shape {X_train.shape} but the result has {result.alpha.shape[0]} "
            "coefficients; pass the X that was solved on."
        )
    if X_new.shape[1] != X_train.shape[1]:
        raise DataError(
            f"X_new has shape {X_new.shape} but X_train has shape {X_train.shape}; "
            "the numbers of features differ."
        )
    if result.coef is not None:
        return np.asarray(X_new @ result.coef).ravel() + result.bias
    support = np.flatnonzero(result.alpha)
    with single_thread_blas():
        f = _kernel_matvec(result.kernel, X_new, X_train[support], result.alpha[support])
    return f + result.bias


def optimality_conditions(
    sigma: np.ndarray, F: np.ndarray, upper: np.ndarray
) -> tuple[float, float, float, float]:
    """The four τ-tests of σ given F = Kα on U (f without bias) and the bounds C.

    Returns (m1max − m3min, m3max − m2min, m1max − m2min + 2, m3max − m3min − 2) over the sets
    D1 = {σ < C/2}, D2 = {σ > C/2}, D3 = {0 < σ < C} of §4.3; the first three are the paper's
    test (13), the fourth is the condition it misses. σ is τ-optimal iff all four are ≤ τ.
    Empty sets give −inf.
    """
    half = 0.5 * upper
    d1, d2, d3 = sigma < half, sigma > half, (sigma > 0) & (sigma < upper)
    m1max = F[d1].max(initial=-np.inf)
    m2min = F[d2].min(initial=np.inf)
    m3min = F[d3].min(initial=np.inf)
    m3max = F[d3].max(initial=-np.inf)
    return (
        float(m1max - m3min),
        float(m3max - m2min),
        float(m1max - m2min + 2.0),
        float(m3max - m3min - 2.0),
    )


def usmo(
    X: np.ndarray | sp.spmatrix,
    labeled: np.ndarray,
    *,
    prior: float,
    lam: float,
    kernel: Kernel | Literal["precomputed"] = _LINEAR,
    weights: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int | None = None,
    init: Literal["feasible"] | np.ndarray = "feasible",
    callback: Callable[[int, np.ndarray], None] | None = None,
    time_limit: float | None = None,
) -> USMOResult:
    """Solve the PU problem (5)/(6) with USMO.

    Parameters
    ----------
    X : (m, d) array or scipy.sparse matrix, all rows (labeled positives and unlabeled); with
        ``kernel="precomputed"`` the (m, m) Gram matrix K of those rows.
    labeled : (m,) bool mask, True for a labeled positive, False for an unlabeled row.
    prior : class prior π ∈ (0, 1) of the unlabeled data.
    lam : regularisation λ > 0 of (4).
    kernel : the kernel k, or "precomputed" (X is then K).
    weights : (m,) positive row weights (cluster sizes); default 1.
    tol : stop when the maximal KKT violation max A − min B (on f values) is ≤ tol, or ≤ the
        rounding floor of F when that is larger (:func:`rounding_floor`: f values of size |F|
        carry an error of order ε|F|, so an absolute tol below it cannot be met on large or
        badly scaled data; e.g. features ×1e5 give |f| ~ 1e11 and errors ~ 1e-4).
    max_iter : maximal number of two-variable steps; default max(10⁷, 100·n_unlabeled).
    init : "feasible" starts at σ_u = π C_u (Σσ = π c2 n = c1 p); an array is a warm start
        (feasible up to rounding; it is clipped to the box and its sum repaired).
    callback : called as callback(iteration, sigma) after every step (sigma read-only).
    time_limit : wall-clock seconds for the SMO loop (None: no limit), checked every 64 steps;
        when reached the status is "time_limit" and the current (feasible) iterate is returned,
        its F recomputed exactly (one kernel pass, as at the start).
    """
    start = time.perf_counter()
    prior = check_real(prior, "prior", "usmo", low=0.0, high=1.0)
    lam = check_real(lam, "lam", "usmo", low=0.0, high=math.inf)
    tol = check_real(tol, "tol", "usmo", low=0.0, high=math.inf)
    if not (isinstance(kernel, Kernel) or (isinstance(kernel, str) and kernel == "precomputed")):
        raise InvalidParameterError(
            "The 'kernel' parameter of usmo must be an instance of "
            f"'aidopt.numerics.kernels.Kernel' or the str 'precomputed'. Got {kernel!r} instead."
        )
    if max_iter is not None and not (
        isinstance(max_iter, Integral) and not isinstance(max_iter, bool) and max_iter >= 0
    ):
        raise InvalidParameterError(
            "The 'max_iter' parameter of usmo must be an int in the range [0, inf) or None. "
            f"Got {max_iter!r} instead."
        )
    if time_limit is not None and not (
        isinstance(time_limit, Real) and not isinstance(time_limit, bool) and time_limit >= 0
    ):
        raise InvalidParameterError(
            "The 'time_limit' parameter of usmo must be a float in the range [0, inf) or None. "
            f"Got {time_limit!r} instead."
        )
    X, labeled, w = _validate_data(X, labeled, weights)
    pos, unl = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    if kernel == "precomputed":
        if issparse(X) or X.shape[0] != X.shape[1]:
            raise DataError(
                f"With kernel='precomputed' X must be a square Gram matrix; got shape {X.shape}."
            )
        ops: _FeatureKernel | _GramKernel = _GramKernel(X, pos, unl)
    else:
        ops = _FeatureKernel(kernel, X[pos], X[unl])
    p_w, n_w = math.fsum(w[pos]), math.fsum(w[unl])
    c1, c2 = prior / (2.0 * lam * p_w), 1.0 / (2.0 * lam * n_w)
    pu = _PU(kernel, ops, X, pos, unl, c1 * w[pos], c2 * w[unl], prior, lam, c1, c2)
    sigma = _initial_sigma(init, prior, pu.upper, prior / (2.0 * lam))
    if max_iter is None:
        max_iter = max(10_000_000, 100 * unl.size)
    floor = rounding_floor(ops.diag, ops.pdiag, pu.alpha_p, prior / (2.0 * lam))
    tolerance = max(tol, floor)
    end = None if time_limit is None else start + float(time_limit)
    _log.debug(
        "usmo: p=%g, n=%g, c1=%g, c2=%g, %s, tolerance %.3g", p_w, n_w, c1, c2, kernel, tolerance
    )
    # every BLAS call here is a thin product (2×d by d×n, or a few rows by d×n): threads only
    # add overhead, and on a loaded machine they made a 20k-row RBF solve 4× slower
    with single_thread_blas():
        b = ops.up(pu.alpha_p)  # K_UP α_P, fixed
        F = b - ops.uu(sigma)
        sigma, F, iterations, status = _smo_loop(
            pu, sigma, F, b, tolerance, max_iter, callback, end
        )
        return _finish(pu, sigma, F, b, iterations, status, tolerance)


def rounding_floor(
    diag_u: np.ndarray, diag_p: np.ndarray, alpha_p: np.ndarray, sigma_sum: float
) -> float:
    """An over-estimate of the floating-point error of a KKT violation F_j − F_i.

    F_u = Σ_P α_p k(x_u, x_p) − Σ_U σ_v k(x_u, x_v) with α, σ ≥ 0 and |k(x, y)| ≤ √(k(x,x) k(y,y))
    (k positive semi-definite), so every term of F_u is bounded by
    S_u = √k_uu (Σ_P α_p √k_pp + Σσ · max_v √k_vv), and F_u carries a rounding error of order
    ε·S_u, growing with the number of terms. Measured error of F_j − F_i: ≤ 2.6 ε max S_u at
    10³ rows and ≤ 9 ε max S_u at 10⁶ rows (random feasible σ, longdouble reference), ≤ 0.3 ε
    max S_u at an optimum. Returned: 2 ε √m max S_u for m rows (24× the worst measured error at
    10³ rows, 230× at 10⁶). It scales with the data: features ×s multiply S by s² (×1e5, 300
    rows: |f| ~ 3e11, exact F_j − F_i no better than ~1e-3, floor 0.05, i.e. 1.5e-13 of |f|),
    and it is ~1e-13 on unit data, far below the default tol.
    """
    root_u = math.sqrt(max(float(diag_u.max(initial=0.0)), 0.0))
    root_p = np.sqrt(np.maximum(diag_p, 0.0))
    scale = root_u * (float(alpha_p @ root_p) + sigma_sum * root_u)
    return 2.0 * _EPS * math.sqrt(diag_u.size + diag_p.size) * scale


class _FeatureKernel:
    """Blocks of K on the rows of X, never stored: rows of K_UU are computed on the fly."""

    def __init__(
        self, kernel: Kernel, Xp: np.ndarray | sp.csr_matrix, Xu: np.ndarray | sp.csr_matrix
    ) -> None:
        self.kernel, self.Xp = kernel, Xp
        self.Xu = Xu if issparse(Xu) else np.asfortranarray(Xu)  # Xu.T C-contiguous
        self.sq = squared_norms(self.Xu) if kernel.kind == "rbf" else None
        self.diag = kernel.diag(self.Xu)
        self.pdiag = kernel.diag(Xp)

    def rows(self, pair: np.ndarray) -> np.ndarray:
        """K_{pair,U}: two kernel rows from one 2×d by d×n product."""
        Xu, sq = self.Xu, self.sq
        if issparse(Xu):  # CSR times a dense d×2 block, then transposed
            inner = np.asarray(Xu @ Xu[pair].T.toarray()).T
        else:  # Xu is Fortran-ordered, so Xu.T is C-contiguous: a fast 2×d by d×n product
            inner = Xu[pair] @ Xu.T
        return self.kernel.from_inner(inner, None if sq is None else sq[pair], sq, Xu.shape[1])

    def uu(self, v: np.ndarray) -> np.ndarray:
        return _kernel_matvec(self.kernel, self.Xu, self.Xu, v)

    def up(self, v: np.ndarray) -> np.ndarray:
        return _kernel_matvec(self.kernel, self.Xu, self.Xp, v)

    def pu(self, v: np.ndarray) -> np.ndarray:
        return _kernel_matvec(self.kernel, self.Xp, self.Xu, v)

    def pp(self, v: np.ndarray) -> np.ndarray:
        return _kernel_matvec(self.kernel, self.Xp, self.Xp, v)


class _GramKernel:
    """Blocks of a precomputed Gram matrix G (kernel="precomputed")."""

    def __init__(self, G: np.ndarray, pos: np.ndarray, unl: np.ndarray) -> None:
        self.Kuu = np.ascontiguousarray(G[np.ix_(unl, unl)])
        self.Kup = np.ascontiguousarray(G[np.ix_(unl, pos)])
        self.Kpp = np.ascontiguousarray(G[np.ix_(pos, pos)])
        self.diag = np.diagonal(self.Kuu).copy()
        self.pdiag = np.diagonal(self.Kpp).copy()

    def rows(self, pair: np.ndarray) -> np.ndarray:
        return self.Kuu[pair]

    def uu(self, v: np.ndarray) -> np.ndarray:
        return self.Kuu @ v

    def up(self, v: np.ndarray) -> np.ndarray:
        return self.Kup @ v

    def pu(self, v: np.ndarray) -> np.ndarray:
        return self.Kup.T @ v

    def pp(self, v: np.ndarray) -> np.ndarray:
        return self.Kpp @ v


@dataclass(frozen=True)
class _PU:
    """The data of one PU problem: kernel blocks, fixed α_P = c1 w_P and the box C = c2 w_U."""

    kernel: Kernel | Literal["precomputed"]
    ops: _FeatureKernel | _GramKernel
    X: np.ndarray | sp.csr_matrix
    pos: np.ndarray
    unl: np.ndarray
    alpha_p: np.ndarray
    upper: np.ndarray
    prior: float
    lam: float
    c1: float
    c2: float


def _smo_loop(
    pu: _PU,
    sigma: np.ndarray,
    F: np.ndarray,
    b: np.ndarray,
    tol: float,
    max_iter: int,
    callback: Callable[[int, np.ndarray], None] | None,
    end: float | None = None,
) -> tuple[np.ndarray, np.ndarray, int, Status]:
    """Maximal-violating-pair SMO on (6); returns (σ, exact F, iterations, status).

    Every stop is decided on an exact F (recomputed from scratch when the cache (15) was
    updated since). Besides the limits, a guard against a loop that cannot progress (a KKT
    tolerance below what floating point resolves): every max(_STALL_WINDOW, 10 n) steps F is
    recomputed and G(σ), which every step lowers in exact arithmetic, must have dropped since
    the previous check, else the status is "stalled". (A test on the size of the drop would be
    wrong: near the optimum a step with violation v lowers G by ~v²/η, far below ε|G|.)
    """
    ops, upper = pu.ops, pu.upper
    n = upper.size
    half = 0.5 * upper
    kdiag = ops.diag
    # A = F + a_off on {σ < C} (−inf elsewhere), B = F + b_off on {σ > 0} (+inf elsewhere)
    a_off = np.where(sigma < upper, np.where(sigma < half, 1.0, -1.0), -np.inf)
    b_off = np.where(sigma > 0.0, np.where(sigma <= half, 1.0, -1.0), np.inf)
    buf_a, buf_b = np.empty(n), np.empty(n)
    view = sigma.view()
    view.flags.writeable = False
    window = max(_STALL_WINDOW, 10 * n)
    next_check, last_dual = window, math.inf
    exact = True  # F was computed from scratch for the current σ
    it = 0
    while True:
        np.add(F, a_off, out=buf_a)
        np.add(F, b_off, out=buf_b)
        j, i = int(buf_a.argmax()), int(buf_b.argmin())
        violation = buf_a[j] - buf_b[i]
        stop: Status | None = None
        if violation <= tol:
            stop = "optimal"
        elif it >= max_iter:
            stop = "iteration_limit"
        elif end is not None and it % _CLOCK_EVERY == 0 and time.perf_counter() >= end:
            stop = "time_limit"
        elif it >= next_check:
            if exact:
                dual = _dual_value(sigma, F, b, upper)
                if dual >= last_dual:
                    stop = "stalled"
                else:
                    next_check, last_dual = it + window, dual
            else:
                stop = "stalled"  # provisional: decided below on the exact F
        if stop is not None:
            if exact:
                status: Status = stop
                break
            F = b - ops.uu(sigma)  # drop rounding drift of (15)
            exact = True
            continue
        if it % 10_000 == 0:
            _log.debug("usmo: iteration %d, KKT violation %.3e", it, violation)
        rows = ops.rows(np.array([i, j]))
        s_i, s_j = _pair_step(
            F[i], F[j], sigma[i], sigma[j], upper[i], upper[j], kdiag[i], kdiag[j], rows[0, j]
        )
        ds_i, ds_j = s_i - sigma[i], s_j - sigma[j]
        if ds_i == 0.0 and ds_j == 0.0:
            if exact:
                status = "stalled"
                break
            F = b - ops.uu(sigma)
            exact = True
            continue
        sigma[i], sigma[j] = s_i, s_j
        F -= ds_i * rows[0]  # (15): Δα_u = −Δσ_u
        F -= ds_j * rows[1]
        for u in (i, j):
            a_off[u] = (1.0 if sigma[u] < half[u] else -1.0) if sigma[u] < upper[u] else -np.inf
            b_off[u] = (1.0 if sigma[u] <= half[u] else -1.0) if sigma[u] > 0.0 else np.inf
        exact = False
        it += 1
        if callback is not None:
            callback(it, view)
    _log.debug("usmo: %s after %d iterations, KKT violation %.3e", status, it, violation)
    if status != "optimal":
        hint = {
            "iteration_limit": "increase max_iter or tol",
            "time_limit": "increase time_limit or tol",
            "stalled": "increase tol",
        }[status]
        warnings.warn(
            f"usmo stopped ({status}) after {it} iterations with KKT violation "
            f"{violation:.3e} > tol={tol:g}; {hint}.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return sigma, F, it, status


def _dual_value(sigma: np.ndarray, F: np.ndarray, b: np.ndarray, upper: np.ndarray) -> float:
    """G(σ) of (6) from F = b − K_UUσ."""
    return -0.5 * float(sigma @ (F + b)) - math.fsum(np.minimum(sigma, upper - sigma))


def _pair_step(
    F_i: float,
    F_j: float,
    s_i: float,
    s_j: float,
    C_i: float,
    C_j: float,
    k_ii: float,
    k_jj: float,
    k_ij: float,
) -> tuple[float, float]:
    """Exact minimiser of subproblem (8) on the segment σ_i' + σ_j' = σ_i + σ_j.

    With σ_j' = σ_j + t, σ_i' = σ_i − t the objective is the convex piecewise quadratic
    φ(t) = (F_i − F_j) t + ½ η t² − h_i(σ_i − t) − h_j(σ_j + t), h(s) = min(s, C − s),
    η = k_ii + k_jj − 2k_ij, on t ∈ [max(−σ_j, σ_i − C_i), min(C_j − σ_j, σ_i)]. Its pieces are
    the four cases of Table I (each σ on its lower half [0, C/2] or upper half [C/2, C]); on a
    piece with slopes s = ±1 ± 1 the minimiser is t = −(F_i − F_j + s)/η, i.e. Table I's
    σ_j = (a(k_ii − k_ij) + e1 − e2 + shift)/η (the /η fixed in case 1). The piece holding the
    minimum is found from the monotone derivative instead of comparing four objective values.
    If η ≈ 0 (duplicate points) φ is piecewise linear and the minimum is a piece end. A point
    that lands on a bound (0, C/2, C) is written exactly, the other variable takes the rest.
    """
    eta = k_ii + k_jj - 2.0 * k_ij
    if eta <= _ETA_RTOL * (abs(k_ii) + abs(k_jj)):
        eta = 0.0
    g = F_i - F_j
    t_i, t_j = s_i - 0.5 * C_i, 0.5 * C_j - s_j  # t where σ_i resp. σ_j crosses its kink
    # breakpoints (t, which variable sits on a bound, its value), in increasing t
    lo = (-s_j, "j", 0.0) if -s_j >= s_i - C_i else (s_i - C_i, "i", C_i)
    hi = (C_j - s_j, "j", C_j) if C_j - s_j <= s_i else (s_i, "i", 0.0)
    points = [lo]
    points += sorted(
        p for p in ((t_i, "i", 0.5 * C_i), (t_j, "j", 0.5 * C_j)) if lo[0] < p[0] < hi[0]
    )
    points.append(hi)
    best = hi
    for left, right in itertools.pairwise(points):
        mid = 0.5 * (left[0] + right[0])
        slope = (1.0 if mid > t_i else -1.0) + (1.0 if mid > t_j else -1.0)
        if g + slope + eta * right[0] >= 0.0:  # φ' ≥ 0 at the right end: minimum on this piece
            t = -(g + slope) / eta if eta > 0.0 else -math.inf
            best = left if t <= left[0] else right if t >= right[0] else (t, "", 0.0)
            break
    t, which, value = best
    a = s_i + s_j
    if which == "j":
        new_j = value
        new_i = a - value
    elif which == "i":
        new_i = value
        new_j = a - value
    else:
        new_i, new_j = s_i - t, s_j + t
    return min(max(new_i, 0.0), C_i), min(max(new_j, 0.0), C_j)


def _finish(
    pu: _PU,
    sigma: np.ndarray,
    F: np.ndarray,
    b: np.ndarray,
    iterations: int,
    status: Status,
    tolerance: float,
) -> USMOResult:
    """Bias (16), objectives of (5) and (6), the duality gap and the result object."""
    kernel, upper, alpha_p = pu.kernel, pu.upper, pu.alpha_p
    bias, violation = dual_bias(sigma, F, upper)
    h = np.minimum(sigma, upper - sigma)
    dual = _dual_value(sigma, F, b, upper)
    Kpp_alpha = pu.ops.pp(alpha_p)
    F_p = Kpp_alpha - pu.ops.pu(sigma)
    f_u = F + bias
    xi = np.maximum(np.maximum(f_u, 0.0), 0.5 * (1.0 + f_u))
    quad = 0.5 * (float(alpha_p @ F_p) - float(sigma @ F))  # ½ αᵀKα
    primal = -float(alpha_p @ F_p) - bias * pu.prior / (2.0 * pu.lam) + float(upper @ xi) + quad
    gap = primal + dual + 0.5 * float(alpha_p @ Kpp_alpha)
    alpha, f = np.empty(pu.X.shape[0]), np.empty(pu.X.shape[0])
    alpha[pu.pos], alpha[pu.unl] = alpha_p, -sigma
    f[pu.pos], f[pu.unl] = F_p + bias, f_u
    coef = None
    if kernel != "precomputed" and kernel.kind == "linear":
        coef = np.asarray(pu.X.T @ alpha, dtype=np.float64).ravel()
    _log.debug("usmo: dual %.10g, primal %.10g, gap %.3e, bias %.6g", dual, primal, gap, bias)
    return USMOResult(
        sigma=sigma,
        delta=2.0 * h,
        upper=upper,
        alpha=alpha,
        bias=bias,
        coef=coef,
        dual_objective=dual,
        primal_objective=primal,
        duality_gap=gap,
        norm_sq=2.0 * quad,
        train_decision=f,
        iterations=iterations,
        status=status,
        kkt_violation=violation,
        kernel=kernel,
        prior=pu.prior,
        lam=pu.lam,
        c1=pu.c1,
        c2=pu.c2,
        tolerance=tolerance,
    )


def dual_bias(sigma: np.ndarray, F: np.ndarray, upper: np.ndarray) -> tuple[float, float]:
    """The bias β of a dual point σ, and its KKT violation max(0, max A − min B).

    β is the mean of (16) over the non-bound rows (0 < σ_u < C_u, σ_u ≠ C_u/2: f(x_u) = −1 if
    σ_u < C_u/2, +1 if σ_u > C_u/2), else the midpoint of the KKT interval [−max A, −min B]
    (digest §5.11); F = Kα on U (f without bias), C the box.
    """
    half = 0.5 * upper
    lower_side = sigma < half
    a_vals = np.where(sigma < upper, np.where(lower_side, F + 1.0, F - 1.0), -np.inf)
    b_vals = np.where(sigma > 0.0, np.where(sigma <= half, F + 1.0, F - 1.0), np.inf)
    violation = max(0.0, float(a_vals.max() - b_vals.min()))
    free = (sigma > 0.0) & (sigma < upper) & (sigma != half)
    if free.any():  # (16): f(x_u) = −1 on D1∩D3, +1 on D2∩D3
        bias = float(np.mean(np.where(lower_side[free], -1.0, 1.0) - F[free]))
    else:  # KKT interval [−min B, −max A]; both ends are finite since 0 < Σσ < Σ C
        bias = float(-0.5 * (b_vals.min() + a_vals.max()))
    return bias, violation


def _initial_sigma(
    init: Literal["feasible"] | np.ndarray, prior: float, upper: np.ndarray, target: float
) -> np.ndarray:
    """A feasible σ: π·C (Σσ = π c2 n = c1 p), or a repaired warm start."""
    if isinstance(init, str):
        if init != "feasible":
            raise InvalidParameterError(
                "The 'init' parameter of usmo must be a str among {'feasible'} or an array. "
                f"Got {init!r} instead."
            )
        return prior * upper
    sigma = np.array(init, dtype=np.float64)
    if sigma.shape != upper.shape:
        raise DataError(
            f"init has shape {sigma.shape} but there are {upper.size} unlabeled rows; "
            f"init must have shape {upper.shape}."
        )
    if not np.all(np.isfinite(sigma)):
        raise DataError("init contains NaN or infinite values.")
    slack = 1e-9 * upper
    if np.any(sigma < -slack) or np.any(sigma > upper + slack):
        raise DataError("init is outside the box 0 ≤ σ_u ≤ c2·w_u of the dual (6).")
    np.clip(sigma, 0.0, upper, out=sigma)
    residual = target - math.fsum(sigma)
    if abs(residual) > 1e-8 * target:
        raise DataError(
            f"init does not satisfy Σσ = π/(2λ) = {target:.10g}: its sum is "
            f"{target - residual:.10g}."
        )
    # spread the rounding residual over the room left in the box (keeps 0 ≤ σ ≤ C)
    room = upper - sigma if residual > 0 else sigma
    sigma += residual * room / math.fsum(room)
    return np.clip(sigma, 0.0, upper)


def _kernel_matvec(
    kernel: Kernel,
    A: np.ndarray | sp.csr_matrix,
    B: np.ndarray | sp.csr_matrix,
    v: np.ndarray,
) -> np.ndarray:
    """K(A, B) v: A (Bᵀv) for the linear kernel, else by row blocks of A (never the whole K)."""
    if kernel.kind == "linear":
        return np.asarray(A @ np.asarray(B.T @ v).ravel(), dtype=np.float64).ravel()
    out = np.empty(A.shape[0])
    sq_b = squared_norms(B) if kernel.kind == "rbf" else None
    step = max(1, _BLOCK_ENTRIES // max(B.shape[0], 1))
    for s in range(0, A.shape[0], step):
        block = A[s : s + step]
        inner = block @ B.T
        inner = dense(inner)
        sq_a = squared_norms(block) if sq_b is not None else None
        out[s : s + step] = kernel.from_inner(inner, sq_a, sq_b, A.shape[1]) @ v
    return out


def _as_matrix(X: np.ndarray | sp.spmatrix, name: str) -> np.ndarray | sp.csr_matrix:
    if issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        values = X
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-D array; got shape {X.shape}.")
    if not np.all(np.isfinite(values)):
        raise DataError(f"{name} contains NaN or infinite values.")
    return X


def _validate_data(
    X: np.ndarray | sp.spmatrix, labeled: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray, np.ndarray]:
    X = _as_matrix(X, "X")
    labeled = np.asarray(labeled)
    if labeled.shape != (X.shape[0],):
        raise DataError(
            f"X has shape {X.shape} but labeled has shape {labeled.shape}; "
            f"labeled must have shape ({X.shape[0]},)."
        )
    if labeled.dtype != bool:
        if not (np.issubdtype(labeled.dtype, np.number) and np.isin(labeled, (0, 1)).all()):
            raise DataError(
                f"labeled must be a boolean mask (True = labeled positive); got values "
                f"{np.unique(labeled)[:5]!r} of dtype {labeled.dtype}."
            )
        labeled = labeled.astype(bool)
    if not labeled.any():
        raise DataError("labeled has no True entry: PU learning needs labeled positives.")
    if labeled.all():
        raise DataError("labeled is all True: PU learning needs unlabeled rows.")
    if weights is None:
        w = np.ones(X.shape[0])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (X.shape[0],):
            raise DataError(
                f"X has shape {X.shape} but weights has shape {w.shape}; "
                f"weights must have shape ({X.shape[0]},)."
            )
        if not (np.all(np.isfinite(w)) and np.all(w > 0)):
            raise DataError("weights must be finite and > 0.")
    return X, labeled, w


class USMOSolver(SolverAdapter):
    """``usmo``: :func:`usmo` on a :class:`PULearning` structure (warm start: its σ).

    Options: ``tol`` (KKT tolerance on f values, default 1e-8; raised to the rounding floor of
    the data) and ``max_iter``. Accuracy: ``tol``.
    """

    NAME: ClassVar[str] = "usmo"
    DESCRIPTION: ClassVar[str] = "USMO (Sansone et al. 2019), the PU learning SMO solver"
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({PULearning})
    _STATUS: ClassVar[dict[str, SolveStatus]] = {
        "optimal": SolveStatus.OPTIMAL,
        "iteration_limit": SolveStatus.ITERATION_LIMIT,
        "time_limit": SolveStatus.TIME_LIMIT,
        "stalled": SolveStatus.ERROR,
    }

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if not isinstance(structure, PULearning):
            return super().solve_structure(structure)
        opts = check_options(options, frozenset({"tol", "max_iter"}), "USMO")
        tol = float(opts.get("tol", 1e-8))
        pu = structure
        res = usmo(
            pu.X,
            pu.labeled,
            prior=pu.prior,
            lam=pu.lam,
            kernel=pu.kernel,
            weights=pu.weight,
            tol=tol,
            max_iter=opts.get("max_iter"),
            init=pu.start,
            time_limit=time_limit,
        )
        result = SolveResult(
            status=self._STATUS[res.status],
            objective=res.primal_objective,
            bound=res.primal_objective - res.duality_gap,  # −(dual + ½α_PᵀK_PPα_P)
            iterations=res.iterations,
            message=f"usmo {res.status}, KKT violation {res.kkt_violation:.2e}"
            + (f" (rounding floor {res.tolerance:.2e})" if res.tolerance > tol else ""),
            info={"duality_gap": res.duality_gap, "kkt_tolerance": res.tolerance},
            accuracy=tol,
        )
        return (res if result.status is SolveStatus.OPTIMAL else None), result
