"""Frisch–Newton interior-point solver for weighted quantile (and LAD) regression.

Problem (primal). For data X ∈ R^{n×m}, y ∈ R^n, weights w > 0 and τ ∈ (0, 1),

    P* = min_β  P(β),   P(β) = Σ_i w_i ρ_τ(y_i − x_i β),   ρ_τ(r) = r (τ − 1[r < 0]).

τ = ½ is least absolute deviations up to the factor ½.

Dual (bounded-variable form of Portnoy & Koenker 1997, "The Gaussian hare and the Laplacian
tortoise", eq. (2.3), with weights). Writing the LP as min τ w'u⁺ + (1−τ) w'u⁻ subject to
Xβ + u⁺ − u⁻ = y and substituting a = d + (1 − τ) w for its multiplier d gives

    D* = max_a  D(a),   D(a) = y'a − (1 − τ) w'y,   X'a = (1 − τ) X'w,   0 ≤ a ≤ w.

(For w = 1 this is exactly the problem solved by R quantreg's ``rq.fit.fnb`` / Fortran ``rqfnb``.)
Weak duality holds for any box-feasible a and any β:

    P(β) ≥ D(a) − β'(X'a − (1 − τ) X'w),

so D(a) is a lower bound on P* up to ‖β*‖₁ · ‖X'a − rhs‖_∞ (the reported ``dual_residual``).

Method. The primal–dual log-barrier method with Mehrotra's predictor–corrector of Portnoy &
Koenker (1997, §3), step for step as in ``rqfnb`` (Koenker's Fortran, quantreg), applied to
min −y'a s.t. X'a = rhs, 0 ≤ a ≤ w, with slack s = w − a, multipliers η = −β and dual slacks
z, v ≥ 0 for a ≥ 0 and a ≤ w (so v − z = y − Xβ). Each iteration forms Q = diag(1/(z/a + v/s)),
one product X'QX (BLAS syrk over row blocks) and one Cholesky factorisation, used twice (affine
predictor, then the centred corrector with μ = μ_0 (g/μ_0)³ / 2n).

After the interior-point phase the solution is purified ("crossover"): the m rows with the
smallest |residual| are taken as a basis h, β solves X_h β = y_h, the non-basic duals are set by
complementary slackness (a_i = w_i if r_i > 0, 0 if r_i < 0) and a_h solves X_h' a_h = rhs −
X_{¬h}' a_{¬h}. If 0 ≤ a_h ≤ w_h the pair is an exact LP vertex with a duality gap at round-off
level, which is returned; otherwise the interior-point pair is kept.
"""

from __future__ import annotations

import functools
import logging
import numbers
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack
from scipy.linalg.blas import dsyrk
from threadpoolctl import ThreadpoolController

from aidopt.exceptions import DataError, InvalidParameterError

__all__ = ["FNResult", "frisch_newton"]

logger = logging.getLogger("aidopt.solvers.frisch_newton")

_BLOCK_ROWS = 4096  # rows per syrk block when forming X'QX: keeps the scaled block in cache
_RIDGE_START = 1e-12  # first relative ridge added to a non-positive-definite X'QX
_RIDGE_TRIES = 6  # ridges 1e-12, 1e-10, ..., 1e-2 (relative to the mean diagonal)


@dataclass(frozen=True)
class FNResult:
    """Result of :func:`frisch_newton`.

    Attributes
    ----------
    coef : β (m,).
    dual : a (n,), the dual point, inside the box 0 ≤ a ≤ w.
    objective : P(β) = Σ w_i ρ_τ(y_i − x_i β), evaluated exactly from the residuals.
    dual_objective : D(a) = y'a − (1 − τ) w'y.
    dual_residual : ‖X'a − (1 − τ) X'w‖_∞; D(a) is a valid lower bound on the optimum up to
        ‖β*‖₁ times this residual.
    iterations : interior-point iterations performed.
    status : "optimal" (relative gap ≤ tol with a small dual residual), "iteration_limit"
        or "numerical_error".
    ridge_iterations : iterations in which X'QX was not numerically positive definite and a
        small ridge had to be added (non-zero for a (nearly) rank-deficient X).
    vertex : True when the returned pair is an exact basic solution found by the crossover.
    """

    coef: np.ndarray
    dual: np.ndarray
    objective: float
    dual_objective: float
    dual_residual: float
    iterations: int
    status: str
    ridge_iterations: int = 0
    vertex: bool = False


def _check_real(name: str, value: object, low: float, high: float) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not low < float(value) < high:  # type: ignore[arg-type]
        raise InvalidParameterError(
            f"The '{name}' parameter of frisch_newton must be a float in the range "
            f"({low}, {high}). Got {value!r} instead."
        )
    return float(value)  # type: ignore[arg-type]


def _as_array(name: str, value: object, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be a numeric array: {exc}") from exc
    if arr.ndim != ndim:
        raise DataError(f"{name} must be {ndim}-dimensional. Got an array of shape {arr.shape}.")
    # min and max propagate NaN and expose ±inf without a temporary the size of the array
    if arr.size and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        raise DataError(f"{name} contains NaN or infinity.")
    return np.ascontiguousarray(arr)


def _validate(X, y, tau, weights, tol, max_iter, step, start):
    tau = _check_real("tau", tau, 0.0, 1.0)
    tol = _check_real("tol", tol, 0.0, 1.0)
    step = _check_real("step", step, 0.0, 1.0)
    if not isinstance(max_iter, numbers.Integral) or isinstance(max_iter, bool) or max_iter < 1:
        raise InvalidParameterError(
            "The 'max_iter' parameter of frisch_newton must be an int in the range [1, inf). "
            f"Got {max_iter!r} instead."
        )
    X = _as_array("X", X, 2)
    y = _as_array("y", y, 1)
    n, m = X.shape
    if y.shape[0] != n:
        raise DataError(f"X has shape {X.shape} but y has shape {y.shape}: row counts differ.")
    if m == 0:
        raise DataError(f"X has shape {X.shape}: no columns.")
    if n < m:
        raise DataError(f"X has shape {X.shape}: fewer rows than columns.")
    if weights is None:
        w = np.ones(n)
    else:
        w = _as_array("weights", weights, 1)
        if w.shape != (n,):
            raise DataError(f"X has shape {X.shape} but weights has shape {w.shape}.")
        if not (w > 0).all():
            raise DataError("weights must be strictly positive.")
    coef0 = dual0 = None
    if start is not None:
        if not isinstance(start, tuple) or len(start) != 2:
            raise InvalidParameterError(
                "The 'start' parameter of frisch_newton must be None or a tuple (coef, dual). "
                f"Got {type(start).__name__} instead."
            )
        if start[0] is not None:
            coef0 = _as_array("start coef", start[0], 1)
            if coef0.shape != (m,):
                raise DataError(f"X has shape {X.shape} but start coef has shape {coef0.shape}.")
        if start[1] is not None:
            dual0 = _as_array("start dual", start[1], 1)
            if dual0.shape != (n,):
                raise DataError(f"X has shape {X.shape} but start dual has shape {dual0.shape}.")
    return X, y, w, tau, tol, int(max_iter), step, coef0, dual0


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


class _Gram:
    """Forms and factors X'QX for a fixed X, reusing its buffers across iterations.

    The solver runs its matrix–vector products (memory-bound) with single-threaded BLAS; only
    the syrk/Cholesky here use the caller's BLAS thread count, ``threads``.
    """

    def __init__(self, X: np.ndarray, threads: int) -> None:
        self.X = X
        self.threads = threads
        m = X.shape[1]
        self.block = np.empty((min(_BLOCK_ROWS, X.shape[0]), m))
        self.gram = np.empty((m, m), order="F")
        self.ridge_used = False

    def factor(self, q: np.ndarray, vec: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Cholesky factor (upper, Fortran order) of X' diag(q) X, or None if that fails, and
        X' vec, computed in the same pass over X."""
        with _threadpools().limit(limits=self.threads, user_api="blas"):
            return self._factor(q, vec)

    def _factor(self, q: np.ndarray, vec: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        X, block, gram = self.X, self.block, self.gram
        gram.fill(0.0)
        product = np.zeros(X.shape[1])
        root = np.sqrt(q)
        for lo in range(0, X.shape[0], block.shape[0]):
            rows = X[lo : lo + block.shape[0]]
            hi = lo + rows.shape[0]
            b = block[: rows.shape[0]]
            np.multiply(rows, root[lo:hi, None], out=b)
            gram = dsyrk(1.0, b.T, beta=1.0, c=gram, trans=0, lower=0, overwrite_c=1)
            product += rows.T @ vec[lo:hi]
        self.gram = gram
        return self._cholesky(gram), product

    def _cholesky(self, gram: np.ndarray) -> np.ndarray | None:
        self.ridge_used = False
        chol, info = lapack.dpotrf(gram, lower=0, clean=0, overwrite_a=0)
        if info == 0:
            return chol
        scale = float(np.trace(gram)) / gram.shape[0]
        if not np.isfinite(scale) or scale <= 0.0:
            return None
        self.ridge_used = True
        ridge = _RIDGE_START
        for _ in range(_RIDGE_TRIES):
            reg = gram + ridge * scale * np.eye(gram.shape[0], order="F")
            chol, info = lapack.dpotrf(reg, lower=0, clean=0, overwrite_a=1)
            if info == 0:
                logger.debug("X'QX not positive definite: added ridge %.1e", ridge)
                return chol
            ridge *= 100.0
        return None


def _solve(chol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    sol, _ = lapack.dpotrs(chol, rhs, lower=0)
    return sol


def _check_loss(r: np.ndarray, w: np.ndarray, tau: float) -> float:
    """Σ w_i ρ_τ(r_i)."""
    return float(tau * (w @ r) - w[r < 0] @ r[r < 0])


def _max_step(x: np.ndarray, dx: np.ndarray, s: np.ndarray, tmp: np.ndarray) -> float:
    """Largest α with a + α dx ≥ 0 and s − α dx ≥ 0 (so 0 ≤ a ≤ w stays satisfied)."""
    np.divide(dx, x, out=tmp)
    rate = -float(np.fmin.reduce(tmp))
    np.divide(dx, s, out=tmp)
    rate = max(rate, float(np.fmax.reduce(tmp)))
    return np.inf if rate <= 0.0 else 1.0 / rate


def _max_step_pos(z, dz, v, dv, tmp) -> float:
    """Largest α with z + α dz ≥ 0 and v + α dv ≥ 0 (0/0 = NaN from z_i = dz_i = 0 is skipped)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(dz, z, out=tmp)
        rate = -float(np.fmin.reduce(tmp))
        np.divide(dv, v, out=tmp)
        rate = max(rate, -float(np.fmin.reduce(tmp)))
    return np.inf if rate <= 0.0 else 1.0 / rate


def _starting_point(X, y, w, tau, gram, coef0, dual0):
    """Interior starting point (a, s, η, z, v).

    As in rqfnb, a = (1 − τ) w (exactly feasible), β from (weighted) least squares, and z, v the
    negative and positive parts of r = y − Xβ; unlike rqfnb (which lifts only |r_i| < 1e-6),
    both are shifted by 0.3 mean|r|, which saved ~20% of the iterations on random instances.
    Warm start: see :func:`frisch_newton`.
    """
    if dual0 is None:
        x = (1.0 - tau) * w
    else:
        x = (1.0 - _WARM_MIX) * np.clip(dual0, 0.0, w) + _WARM_MIX * (1.0 - tau) * w
    cold = coef0 is None
    if cold:
        chol, xwy = gram.factor(w, w * y)
        coef0 = np.zeros(X.shape[1]) if chol is None else _solve(chol, xwy)
    r = y - X @ coef0
    shift = (_COLD_SHIFT if cold else _WARM_SHIFT) * float(np.mean(np.abs(r)))
    delta = max(shift, 1e-9 * float(np.mean(np.abs(y)))) or 1.0  # 1.0 only when y = 0
    return x, w - x, -coef0, np.maximum(-r, 0.0) + delta, np.maximum(r, 0.0) + delta


_COLD_SHIFT = 0.3  # z, v shift of the cold start, relative to mean|r|
_WARM_MIX = 0.8  # weight of the cold dual (1 − τ) w in the warm-start dual
_WARM_SHIFT = 1.0  # z, v shift of the warm start, relative to mean|r|


def _ipm(X, y, w, tau, rhs, max_iter, step, state, gram, on_check):
    """Mehrotra predictor–corrector iterations of ``rqfnb``; returns (iterations, status)."""
    x, s, eta, z, v = state
    n = X.shape[0]
    q, t, dx, dz, dv, dr, p1, p2 = (np.empty(n) for _ in range(8))
    ywy = (1.0 - tau) * float(w @ y)
    ridge_iterations = 0
    for it in range(1, max_iter + 1):
        # Q = diag(1 / (z/a + v/s)); t = z − v
        np.divide(z, x, out=q)
        np.divide(v, s, out=t)
        q += t
        np.reciprocal(q, out=q)
        np.subtract(z, v, out=t)
        # right-hand side of the normal equations: rhs − X'(a − Q(z − v))
        np.multiply(q, t, out=dx)
        np.subtract(x, dx, out=dx)
        chol, xdx = gram.factor(q, dx)
        base = rhs - xdx
        if chol is None:
            return it - 1, "numerical_error", ridge_iterations
        ridge_iterations += gram.ridge_used
        # affine (predictor) direction
        dy = _solve(chol, base)
        np.subtract(X @ dy, t, out=t)
        np.multiply(q, t, out=dx)
        np.divide(dx, x, out=dz)
        dz += 1.0
        dz *= z
        np.negative(dz, out=dz)
        np.divide(dx, s, out=dv)
        dv -= 1.0
        dv *= v
        alpha_p = min(step * _max_step(x, dx, s, t), 1.0)
        alpha_d = min(step * _max_step_pos(z, dz, v, dv, t), 1.0)
        if min(alpha_p, alpha_d) < 1.0:
            # centring parameter μ = μ_0 (g/μ_0)³ / 2n with g the affine complementarity
            mu0 = float(x @ z + s @ v)
            g = (
                mu0
                + alpha_d * float(x @ dz)
                + alpha_p * float(dx @ z)
                + alpha_p * alpha_d * float(dx @ dz)
                + alpha_d * float(s @ dv)
                - alpha_p * float(dx @ v)
                - alpha_p * alpha_d * float(dx @ dv)
            )
            mu = mu0 * (g / mu0) ** 3 / (2.0 * n)
            # dr = Q (μ (1/s − 1/a) + dx dz / a + dx dv / s)
            np.multiply(dx, dz, out=p1)
            np.multiply(dx, dv, out=p2)
            np.reciprocal(s, out=dr)
            np.reciprocal(x, out=t)
            dr -= t
            dr *= mu
            np.divide(p1, x, out=t)
            dr += t
            np.divide(p2, s, out=t)
            dr += t
            dr *= q
            # corrector direction with the same factor
            dy = _solve(chol, base + X.T @ dr)
            np.subtract(X @ dy, z, out=dx)
            dx += v
            dx *= q
            dx -= dr
            np.multiply(z, dx, out=dz)
            dz += p1
            np.subtract(mu, dz, out=dz)
            dz /= x
            dz -= z
            np.multiply(v, dx, out=dv)
            dv += p2
            dv += mu
            dv /= s
            dv -= v
            alpha_p = min(step * _max_step(x, dx, s, t), 1.0)
            alpha_d = min(step * _max_step_pos(z, dz, v, dv, t), 1.0)
        x += alpha_p * dx
        s -= alpha_p * dx
        eta += alpha_d * dy
        z += alpha_d * dz
        v += alpha_d * dv
        gap = float(x @ z + s @ v)
        dual_obj = float(y @ x) - ywy
        logger.debug(
            "iter %d: gap %.3e dual %.10e steps %.3g %.3g", it, gap, dual_obj, alpha_p, alpha_d
        )
        if not np.isfinite(gap):
            return it, "numerical_error", ridge_iterations
        if on_check(gap, dual_obj):
            return it, "optimal", ridge_iterations
    return max_iter, "iteration_limit", ridge_iterations


@dataclass
class _Candidate:
    coef: np.ndarray
    dual: np.ndarray
    objective: float
    dual_objective: float
    dual_residual: float
    vertex: bool

    def certified(self, tol: float, feas_tol: float) -> bool:
        gap = self.objective - self.dual_objective
        return gap <= tol * max(1.0, abs(self.objective)) and self.dual_residual <= feas_tol


def _dual_objective(y: np.ndarray, w: np.ndarray, tau: float, a: np.ndarray) -> float:
    """D(a) = y'a − (1 − τ) w'y."""
    return float(y @ a) - (1.0 - tau) * float(w @ y)


def _interior(X, y, w, tau, rhs, coef, a) -> _Candidate:
    """The interior-point pair, evaluated exactly (two products with X)."""
    r = y - X @ coef
    residual = float(np.abs(X.T @ a - rhs).max())
    return _Candidate(
        coef, a, _check_loss(r, w, tau), _dual_objective(y, w, tau, a), residual, False
    )


def _crossover(X, y, w, tau, rhs, r, a_ipm, feas_tol) -> _Candidate | None:
    """Basic solution on the m rows with the smallest |r| (see the module docstring).

    First the non-basic duals are set from the signs of the interior-point residuals r, except
    for rows that may be tied with the basis (|r_i| below the geometric mean of max_h |r_h| and
    mean |r|), which keep their interior-point value; the basic duals solve
    X_h' a_h = rhs − X_{¬h}' a_{¬h}. If a_h leaves the box [0, w_h] (beyond the feasibility
    tolerance) the attempt is abandoned after this single product with X. Otherwise the vertex
    β_h = X_h⁻¹ y_h is formed and the non-basic duals are reset from the signs of its own
    residuals (interior-point value only where the residual is zero to round-off, i.e. a
    primal-degenerate vertex), which gives an exact certificate when a_h stays in the box.
    """
    m = X.shape[1]
    size = np.abs(r)
    basis = np.argpartition(size, m - 1)[:m]
    xb = X[basis]
    lu, piv, info = lapack.dgetrf(xb)
    if info != 0:
        return None
    rcond, info = lapack.dgecon(lu, float(np.abs(xb).sum(axis=0).max()), norm="1")
    if info != 0 or rcond < _RCOND_MIN:
        return None
    a_ipm = np.clip(a_ipm, 0.0, w)

    def complete(a: np.ndarray, partial: np.ndarray) -> tuple[np.ndarray, float]:
        """Fill a_h from X_h' a_h = rhs − partial (clipped to the box); return a and residual."""
        a_basis = np.clip(lapack.dgetrs(lu, piv, rhs - partial, trans=1)[0], 0.0, w[basis])
        a[basis] = a_basis
        return a, float(np.abs(partial + xb.T @ a_basis - rhs).max())

    ties = size <= np.sqrt(float(size[basis].max()) * float(size.mean()))
    loose = np.where(r > 0.0, w, 0.0)
    loose[ties] = a_ipm[ties]
    loose[basis] = 0.0
    partial = X.T @ loose  # X_{¬h}' a_{¬h}
    loose, loose_res = complete(loose, partial)
    if loose_res > feas_tol:
        return None
    coef = lapack.dgetrs(lu, piv, y[basis])[0]
    rv = y - X @ coef
    rv[basis] = 0.0
    zero = np.abs(rv) <= _ZERO_RESIDUAL * max(1.0, float(np.abs(y).max()))
    exact = np.where(rv > 0.0, w, 0.0)
    exact[zero] = a_ipm[zero]
    exact[basis] = 0.0
    changed = np.flatnonzero(exact != loose)
    changed = changed[~np.isin(changed, basis)]
    partial += X[changed].T @ (exact[changed] - loose[changed])
    exact, exact_res = complete(exact, partial)
    a, residual = (exact, exact_res) if exact_res <= feas_tol else (loose, loose_res)
    return _Candidate(
        coef, a, _check_loss(rv, w, tau), _dual_objective(y, w, tau, a), residual, True
    )


_RCOND_MIN = 1e-12  # a basis X_h with a smaller reciprocal condition number is not used
_ZERO_RESIDUAL = 1e-12  # |r_i| ≤ this × max(1, max|y|) counts as an interpolated (zero) residual
_CROSSOVER_GAP = 1e-5  # try the crossover once the relative interior-point gap is below this


def frisch_newton(
    X: np.ndarray,
    y: np.ndarray,
    *,
    tau: float = 0.5,
    weights: np.ndarray | None = None,
    tol: float = 1e-9,
    max_iter: int = 100,
    step: float = 0.99995,
    start: tuple[np.ndarray | None, np.ndarray | None] | None = None,
) -> FNResult:
    """Solve min_β Σ_i w_i ρ_τ(y_i − x_i β) by the Frisch–Newton interior-point method.

    Parameters
    ----------
    X : (n, m) design (include a column of ones for an intercept); n ≥ m.
    y : (n,) response.
    tau : quantile level in (0, 1); 0.5 gives LAD (objective halved).
    weights : (n,) positive row weights w (default 1); in AID, the cluster sizes.
    tol : a pair (β, a) is accepted when (P(β) − D(a)) / max(1, |P(β)|) ≤ tol and
        ‖X'a − rhs‖_∞ ≤ tol · max(1, max|x_ij| Σ w_i). The crossover vertex is tried once the
        interior-point gap is below 1e-5 and usually certifies at round-off level; otherwise
        the interior point itself must reach tol.
    max_iter : maximum number of interior-point iterations.
    step : fraction of the distance to the boundary taken by each step (``beta`` in rqfnb).
    start : optional warm start (coef, dual); either entry may be None. The dual (clipped to
        [0, w]) is pulled into the interior as a ← 0.9 a + 0.1 (1 − τ) w, which keeps X'a = rhs
        when the given a satisfies it; z, v are the negative/positive parts of y − X coef, both
        shifted by 0.1 mean|y − X coef| so that the start is strictly interior.

    Returns
    -------
    FNResult with the exact objective P(β), the box-feasible dual a, D(a) and ‖X'a − rhs‖_∞.
    """
    X, y, w, tau, tol, max_iter, step, coef0, dual0 = _validate(
        X, y, tau, weights, tol, max_iter, step, start
    )
    blas = [info["num_threads"] for info in _threadpools().info() if info["user_api"] == "blas"]
    with _threadpools().limit(limits=1, user_api="blas"):
        return _frisch_newton(X, y, w, tau, tol, max_iter, step, coef0, dual0, max(blas, default=1))


def _frisch_newton(X, y, w, tau, tol, max_iter, step, coef0, dual0, threads) -> FNResult:
    rhs = (1.0 - tau) * (X.T @ w)
    feas_tol = tol * max(1.0, max(abs(float(X.max())), abs(float(X.min()))) * float(w.sum()))
    gram = _Gram(X, threads)
    state = _starting_point(X, y, w, tau, gram, coef0, dual0)
    x, _, eta, z, v = state
    found: list[_Candidate] = []

    def on_check(gap: float, dual_obj: float) -> bool:
        rel_gap = gap / max(1.0, abs(dual_obj))
        found.clear()
        if rel_gap <= _CROSSOVER_GAP:
            vertex = _crossover(X, y, w, tau, rhs, v - z, x, feas_tol)
            if vertex is not None:
                found.append(vertex)
                if vertex.certified(tol, feas_tol):
                    return True
        if rel_gap > tol:
            return False
        found.append(_interior(X, y, w, tau, rhs, -eta, np.clip(x, 0.0, w)))
        return found[-1].certified(tol, feas_tol)

    iterations, status, ridge_iterations = _ipm(
        X, y, w, tau, rhs, max_iter, step, state, gram, on_check
    )
    certified = [c for c in found if c.certified(tol, feas_tol)]
    if not certified and not any(not c.vertex for c in found):
        found.append(_interior(X, y, w, tau, rhs, -eta, np.clip(x, 0.0, w)))
    if certified:
        status = "optimal"
    best_dual = certified[0] if certified else found[-1]
    best_primal = best_dual if best_dual.vertex else min(found, key=lambda c: c.objective)
    logger.debug("%s after %d iterations, vertex %s", status, iterations, best_dual.vertex)
    return FNResult(
        coef=best_primal.coef,
        dual=best_dual.dual,
        objective=best_primal.objective,
        dual_objective=best_dual.dual_objective,
        dual_residual=float(np.abs(X.T @ best_dual.dual - rhs).max()),
        iterations=iterations,
        status=status,
        ridge_iterations=ridge_iterations,
        vertex=best_dual.vertex and best_primal is best_dual,
    )
