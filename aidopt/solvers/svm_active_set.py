"""An exact primal active-set method for the weighted linear SVM with an unpenalised bias:

    min_θ f(θ) = ½‖w‖² + Σ_k u_k max(0, 1 − z_k·θ),   θ = (w, b) ∈ R^{m+1},  z_k = y_k (x_k, 1),

u_k = C·weight_k > 0 (the problem (9) of the AID paper; its dual is max Σα − ½‖Σ α_k y_k x_k‖²,
Σ α_k y_k = 0, 0 ≤ α ≤ u). It works in the (m+1)-dimensional primal, where f is convex and
piecewise quadratic, so that every step costs one pass over the K rows, O(K·m):

* the *face* is a set E of rows held on their kink, z_k·θ = 1 (at most m+1 independent rows);
  the other rows are in U (z_k·θ < 1, hinge active, α_k = u_k) or L (z_k·θ > 1, α_k = 0). On it f
  is the quadratic q(θ) = ½‖w‖² + Σ_U u_k(1 − z_k·θ), whose minimiser on {Z_E θ = 1} solves

      w − Z_Eᵀ_w α_E = Σ_U u_k y_k x_k,   −y_Eᵀα_E = Σ_U u_k y_k,   Z_E θ = 1

  (the KKT system of the face, m+1+|E| unknowns, solved through its (|E|+1)-square Schur
  complement in α_E; α_E are the multipliers, i.e. the dual of the rows held on the kink). With
  E empty q is linear in b and the direction is (Σ_U u y x − w, Σ_U u y), the negative gradient
  in b;
* an *exact line search* along the direction d: φ(t) = f(θ + t d) is convex piecewise quadratic
  with breakpoints t_k = −r_k/s_k (r_k = z_k·θ − 1, s_k = z_k·d) where a row crosses its kink;
  its derivative jumps by u_k|s_k| at each, so the first t with φ'(t) ≥ 0 is found by one sort.
  A row whose breakpoint stops the search joins E;
* at a face minimiser (the step to it is rounding of its terms), the multipliers are
  checked: 0 ≤ α_k ≤ u_k on E is the KKT condition (with α = u on U, 0 on L, w = Σ α_k y_k x_k,
  Σ α_k y_k = 0 from the face system), so the point is optimal; otherwise the row whose α_k is
  furthest outside [0, u_k] leaves E (to L if α_k < 0, to U if α_k > u_k).

Two devices keep a step cheap on many rows. The face system is solved through S⁻¹, the inverse
of its Schur matrix, updated in O(|E|²) as rows join or leave E (bordering; the Schur complement
of a pivot) with one step of iterative refinement, and rebuilt from S when a solve misses its
rows' kinks. And a step scans only the rows *near* their kink: after each full pass (every
_REFRESH_STEPS steps), a row with |r_k| > δ‖z_k‖ cannot cross its kink while θ stays within δ of
where the pass was made (Cauchy–Schwarz), so the steps stay within δ/2 of it — a line search
that would go further stops at that edge and the next step passes over every row again — and
scan the rows with |r_k| ≤ δ‖z_k‖ (δ chosen so that they are a share of the rows that adapts to
how far the steps go; the far rows of U add their constant slope).

f decreases at every line search and a face minimiser is never revisited, so the method is
finite (the primal active-set method of a convex QP in the variables (θ, ξ)). A warm start θ₀
(the parent problem's optimum under AID: split clusters keep their side of the hyperplane) leaves
only the rows whose side changes to be crossed: on the AID sequences measured it takes 20–260
steps whatever K is (docs/svm.md). The answer (w, b, α) carries its own proof: α is made exactly
dual feasible and D(α) bounds the optimum from below.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import budget
from aidopt.common.lazy import dense, issparse
from aidopt.common.threads import single_thread_blas
from aidopt.numerics.rounding import power_of_two
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus, check_options, limit_result
from aidopt.solvers.libsvm import check_linear_kernel
from aidopt.solvers.structures import (
    GRAM,
    SVMFit,
    WeightedSVM,
    feasible_dual,
    svm_dual_value,
    svm_primal_value,
)

__all__ = ["HingeActiveSetResult", "SVMActiveSetSolver", "svm_active_set"]

_STEP_TOL = 1e-11  # a face step below this share of the size of its terms is rounding
_MULTIPLIER_TOL = 1e-12  # relative tolerance of 0 ≤ α_k ≤ u_k on the face
_CROSSING_TOL = 1e-14  # |s_k| below this share of max|s| does not cross (it moves with the face)
_RESIDUAL_TOL = 1e-10  # a face solve satisfies its rows to this share of their terms
_IDLE_STEPS = 50  # × p steps in a row that leave θ where it is: stalled (degenerate ties pivot)
_ACCURACY = 1e-11  # the relative accuracy an optimal answer states: exact up to rounding
_FIRST_BREAKPOINTS = 64  # breakpoints sorted first by the line search (then 8 times more)
_REFRESH_STEPS = 32  # steps between recomputations of r and of the sums over U from every row
_SCREEN_ROWS = 4096  # below this many rows every step scans all of them
_NEAR_SHARE = 0.5  # the share of the rows a step scans at first (see _Window)
_MIN_SHARE = 1 / 16  # ... at least
_OPTIONS = frozenset({"max_steps"})
_GAP_TOL = 1e-7  # an "optimal" answer whose relative duality gap exceeds this is not one


@dataclass(frozen=True)
class HingeActiveSetResult:
    """(w, b), the dual α (u on U, 0 on L, the face multipliers on E), the number of steps, and
    ``message``: 'optimal', or why the method stopped ('step limit', 'time limit', 'stalled',
    'singular face', 'unbounded direction')."""

    w: NDArray[np.float64]
    b: float
    alpha: NDArray[np.float64] | None
    steps: int
    message: str

    @property
    def converged(self) -> bool:
        return self.message == "optimal"


class _Rows:
    """The rows z_k = y_k(x_k, 1) (y_k x_k without an intercept) and the products the method
    needs (X dense or sparse); θ has p = m + 1 entries (m without an intercept)."""

    def __init__(self, X, y: NDArray[np.float64], upper: NDArray[np.float64], intercept: bool):
        self.X, self.y, self.u = X, y, upper
        self.uy = upper * y
        self.m = X.shape[1]
        self.intercept = intercept
        self.p = self.m + int(intercept)

    @functools.cached_property
    def abs_X(self):
        """|X| elementwise."""
        return abs(self.X)

    @functools.cached_property
    def norms(self) -> NDArray[np.float64]:
        """‖z_k‖ = (‖x_k‖² + 1)^½ (‖x_k‖ without an intercept)."""
        X = self.X
        if issparse(X):
            squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            squares = np.einsum("ij,ij->i", X, X)
        return np.sqrt(squares + float(self.intercept))

    def subset(self, rows: NDArray[np.int64]) -> _Rows:
        """The rows ``rows`` alone."""
        return _Rows(self.X[rows], self.y[rows], self.u[rows], self.intercept)

    def dot(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """z_k·θ for every row."""
        shift = theta[self.m] if self.intercept else 0.0
        return self.y * (np.asarray(self.X @ theta[: self.m]).ravel() + shift)

    def linear_sum(self, active: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Σ_{k active} u_k z_k, from every row."""
        weights = np.where(active, self.u, 0.0)
        return self._with_bias(self.X.T @ (weights * self.y), float(weights @ self.y))

    def hinge_sums(self, active: NDArray[np.bool_]) -> tuple[NDArray, NDArray]:
        """(Σ_{k active} u_k z_k, Σ_{k active} u_k |x_k|): the linear term of q and the size of
        its w-part, from every row."""
        weights = np.where(active, self.u, 0.0)
        return self.linear_sum(active), np.asarray(self.abs_X.T @ weights).ravel()

    def hinge_change(self, rows: NDArray[np.int64], sign: NDArray[np.float64]):
        """The change of both :meth:`hinge_sums` when ``rows`` join (sign +1) or leave (−1) the
        active set: O(|rows|·m) instead of a pass over every row."""
        weights = sign * self.u[rows]
        X = self.X[rows]
        linear = self._with_bias(X.T @ (weights * self.y[rows]), float(weights @ self.y[rows]))
        return linear, np.asarray(abs(X).T @ weights).ravel()

    def _with_bias(self, sums, bias: float) -> NDArray[np.float64]:
        sums = np.asarray(sums).ravel()
        return np.append(sums, bias) if self.intercept else sums

    def block(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """Z_E, the rows of E as a dense |E| × p array."""
        X = self.X[rows]
        Z = np.empty((rows.size, self.p))
        Z[:, : self.m] = dense(X)
        if self.intercept:
            Z[:, self.m] = 1.0
        return Z * self.y[rows, None]


class _Face:
    """E, the rows held on their kinks (in the order they joined), with Z_E, |Z_E| and the
    inverse of the face's Schur matrix

        S = [[0, y_Eᵀ], [y_E, A_E A_Eᵀ]]   (A_E A_Eᵀ alone without an intercept; A_E = the
        w-parts of Z_E),

    updated a row at a time: S⁻¹ gains a row by bordering (the joining row's column of S is its
    dot products with the others) and loses one by the Schur complement of its pivot, O(|E|²)
    instead of a factorisation. An update whose pivot is lost in rounding drops the inverse;
    :meth:`inverse` then builds it from S."""

    def __init__(self, rows: _Rows):
        self.rows = rows
        self.E = np.zeros(0, dtype=np.int64)
        self.Z = np.zeros((0, rows.p))
        self.abs_Z = self.Z
        self.offset = int(rows.intercept)  # S's row of the bias comes first
        self._inverse: NDArray[np.float64] | None = None
        self.updated = False  # S⁻¹ carries updates since it was last built from S

    def add(self, k: int) -> None:
        z = self.rows.block(np.array([k]))
        if self._inverse is not None:
            m = self.rows.m
            column = np.empty(self.E.size + self.offset + 1)
            column[self.offset : -1] = self.Z[:, :m] @ z[0, :m]
            column[-1] = z[0, :m] @ z[0, :m]
            if self.offset:
                column[0] = z[0, m]
            self._inverse, self.updated = _bordered_inverse(self._inverse, column), True
        self.E, self.Z = np.append(self.E, k), np.vstack((self.Z, z))
        self.abs_Z = np.vstack((self.abs_Z, np.abs(z)))

    def remove(self, i: int) -> None:
        if self._inverse is not None:
            self._inverse, self.updated = _reduced_inverse(self._inverse, i + self.offset), True
        self.E, self.Z = np.delete(self.E, i), np.delete(self.Z, i, axis=0)
        self.abs_Z = np.delete(self.abs_Z, i, axis=0)

    def times_schur(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """S x, through A_E (O(|E|·m))."""
        m, o = self.rows.m, self.offset
        A_E = self.Z[:, :m]
        product = np.empty_like(x)
        product[o:] = A_E @ (A_E.T @ x[o:])
        if o:
            y_E = self.Z[:, m]
            product[0] = y_E @ x[1:]
            product[1:] += y_E * x[0]
        return product

    def inverse(self, rebuild: bool = False):
        """S⁻¹ as updated (``rebuild``: from S, equilibrated); None when S is singular."""
        if rebuild or self._inverse is None:
            e, o, A_E = self.E.size, self.offset, self.Z[:, : self.rows.m]
            S = np.zeros((e + o, e + o))
            S[o:, o:] = A_E @ A_E.T
            if o:
                S[0, 1:] = S[1:, 0] = self.Z[:, self.rows.m]
            self._inverse, self.updated = _equilibrated_inverse(S), False
        return self._inverse


_PIVOT_TOL = 1e-13  # a bordering or reduction pivot below this share of its terms is rounding


def _bordered_inverse(inverse, column):
    """The inverse of [[S, v], [vᵀ, d]] from S⁻¹ (``column`` = (v, d)), or None when its pivot
    d − vᵀS⁻¹v is rounding."""
    v, d = column[:-1], float(column[-1])
    Bv = inverse @ v
    pivot = d - float(v @ Bv)
    if not abs(pivot) > _PIVOT_TOL * (abs(d) + float(np.abs(v) @ np.abs(Bv))):
        return None
    e = v.size
    grown = np.empty((e + 1, e + 1))
    grown[:e, :e] = inverse + np.outer(Bv, Bv / pivot)
    grown[:e, e] = grown[e, :e] = -Bv / pivot
    grown[e, e] = 1.0 / pivot
    return grown


def _reduced_inverse(inverse, j: int):
    """The inverse of S without its row and column j, from S⁻¹ (None when the pivot (S⁻¹)_jj is
    rounding)."""
    column = inverse[:, j]
    pivot = float(column[j])
    if not abs(pivot) > _PIVOT_TOL * float(np.abs(column).max()):
        return None
    keep = np.arange(column.size) != j
    reduced = inverse - np.outer(column, column / pivot)
    return reduced[np.ix_(keep, keep)]


def _face_minimiser(rows: _Rows, c: NDArray[np.float64], face: _Face):
    """The minimiser θ' of q on {Z_E θ = 1} and the multipliers α_E (None when singular).

    With A_E = (y_k x_k)_{k∈E}, the face's KKT system reduces to its Schur complement in α_E:
    w = c_w + A_Eᵀα_E, (A_E A_Eᵀ)α_E + y_E b = 1 − A_E c_w, y_Eᵀα_E = −c_b (an (|E|+1)-square
    system instead of (m+1+|E|)), solved by the face's updated S⁻¹ and one step of iterative
    refinement. Its answer is kept when it satisfies the face rows to rounding; otherwise S⁻¹ is
    rebuilt from S, and if that fails too (A_E ill-conditioned: the Gram squares its condition)
    the full KKT system is solved."""
    reduced = _schur_solve(rows, c, face, rebuild=False)
    if reduced is None and face.updated:
        reduced = _schur_solve(rows, c, face, rebuild=True)
    return reduced if reduced is not None else _kkt_solve(rows, c, face.Z)


def _schur_solve(rows: _Rows, c, face: _Face, rebuild: bool):
    m, ZE, o = rows.m, face.Z, face.offset
    A_E = ZE[:, :m]
    inverse = face.inverse(rebuild)
    if inverse is None:
        return None
    rhs = np.empty(inverse.shape[0])
    rhs[o:] = 1.0 - A_E @ c[:m]
    if o:
        rhs[0] = -c[m]
    solution = inverse @ rhs
    solution += inverse @ (rhs - face.times_schur(solution))  # one step of refinement
    if not np.all(np.isfinite(solution)):
        return None
    alpha = solution[o:]
    theta = np.concatenate((c[:m] + A_E.T @ alpha, solution[:o]))
    size = face.abs_Z @ np.abs(theta) + 1.0
    if np.any(np.abs(ZE @ theta - 1.0) > _RESIDUAL_TOL * size):
        return None
    if o and abs(ZE[:, m] @ alpha + c[m]) > _RESIDUAL_TOL * (np.abs(alpha).sum() + abs(c[m])):
        return None
    return theta, alpha


def _kkt_solve(rows: _Rows, c, ZE):
    m, p, e = rows.m, rows.p, ZE.shape[0]
    A = np.zeros((p + e, p + e))
    A[np.arange(m), np.arange(m)] = 1.0
    A[:p, p:] = -ZE.T
    A[p:, :p] = ZE
    solution = _equilibrated_solve(A, np.concatenate((c, np.ones(e))))
    return None if solution is None else (solution[:p], solution[p:])


def _equilibrated_solve(A, rhs):
    """A x = rhs after scaling rows, then columns, by powers of two (entries of any scale, 1e-9
    or 1e9, beside the identity); None when singular."""
    row = power_of_two(np.abs(A).max(axis=1))
    A, rhs = A / row[:, None], rhs / row
    col = power_of_two(np.abs(A).max(axis=0))
    try:
        solution = np.linalg.solve(A / col, rhs) / col
    except np.linalg.LinAlgError:
        return None
    return solution if np.all(np.isfinite(solution)) else None


def _equilibrated_inverse(S):
    """S⁻¹ through the scaling of :func:`_equilibrated_solve` (None when singular):
    S = R A C with R, C diagonal powers of two gives S⁻¹ = C⁻¹A⁻¹R⁻¹."""
    row = power_of_two(np.abs(S).max(axis=1))
    A = S / row[:, None]
    col = power_of_two(np.abs(A).max(axis=0))
    try:
        inverse = np.linalg.inv(A / col)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(inverse)):
        return None
    return inverse / col[:, None] / row


def _at_face_minimiser(rows, theta, direction, ZE, alpha_E, size_U, weight_U) -> bool:
    """At a vertex (|E| = m+1), or the face step d is rounding: |d_j| ≤ _STEP_TOL × the size of
    the terms that make θ'_j (``size_U`` = Σ_U u_k|x_kj|, plus Σ_E |α_k||x_kj| and |w_j|, for
    w_j; |x_k·w| + 1 on E for b), and with E empty the slope Σ_U u_k y_k in b is rounding of
    ``weight_U`` = Σ_U u_k."""
    m = rows.m
    if ZE.shape[0] >= rows.p:  # p rows on their kinks fix θ: a vertex (d ≠ 0 is rounding)
        return True
    size_w = size_U + np.abs(ZE[:, :m]).T @ np.abs(alpha_E) + np.abs(theta[:m])
    if np.any(np.abs(direction[:m]) > _STEP_TOL * size_w):
        return False
    if not rows.intercept:
        return True
    if ZE.shape[0] == 0:
        return abs(direction[m]) <= _STEP_TOL * weight_U
    size_b = float(np.max(np.abs(ZE[:, :m]) @ np.abs(theta[:m]))) + 1.0
    return abs(direction[m]) <= _STEP_TOL * max(size_b, abs(theta[m]))


class _Window:
    """The rows that can cross their kink while θ stays in a ball around ``anchor``.

    A row k with |r_k| > δ‖z_k‖ at the anchor keeps the sign of r_k for every θ within δ of it
    (|z_k·(θ − anchor)| ≤ ‖z_k‖ δ, Cauchy–Schwarz): while the steps stay within ``radius`` = δ/2
    (half as a margin for the rounding of r), only the ``near`` rows are scanned, and the far
    rows of U add their constant slope −c_far·d. δ is the distance of the row at ``share`` of the
    sorted distances |r_k|/‖z_k‖; with ``share`` 1, or few rows, every row is near and the
    radius is infinite (the method of the module unchanged)."""

    def __init__(self, rows: _Rows, theta, r, in_hinge, share: float):
        self.anchor = theta.copy()
        count = int(share * r.size)
        if count < r.size and r.size >= _SCREEN_ROWS:
            norms = rows.norms  # a zero row (no intercept) never reaches its kink: far
            distance = np.divide(np.abs(r), norms, out=np.full(r.size, np.inf), where=norms > 0)
            delta = float(np.partition(distance, count)[count])
            delta = max(delta, 1e-8 * (1.0 + float(np.linalg.norm(theta))))
            near = distance <= delta
            self.far_sum = rows.linear_sum(~near & in_hinge)
            self.near = np.flatnonzero(near)
            self.rows, self.radius = rows.subset(self.near), 0.5 * delta
        else:
            self.near, self.rows = np.arange(r.size), rows
            self.radius, self.far_sum = np.inf, np.zeros(rows.p)

    def limit(self, theta, direction) -> float:
        """The largest t with ‖θ + t·d − anchor‖ ≤ radius (θ inside the ball)."""
        if not np.isfinite(self.radius):
            return np.inf
        v = theta - self.anchor
        dd, vd = float(direction @ direction), float(v @ direction)
        room = max(self.radius**2 - float(v @ v), 0.0)  # t solves dd·t² + 2vd·t = room
        if room == 0.0 or dd == 0.0:
            return 0.0 if room == 0.0 else np.inf
        root = np.sqrt(vd * vd + dd * room)
        return room / (vd + root) if vd >= 0 else (root - vd) / dd


def _line_search(w, dw, r, s, u, in_hinge, off_face, far_slope=0.0, limit=np.inf):
    """argmin_{0 ≤ t ≤ limit} φ(t) = ½‖w + t·dw‖² + Σ_{k ∉ E} u_k max(0, −(r_k + t·s_k)) +
    t·``far_slope``, the rows of U (``in_hinge``) on the hinge at t = 0+, those of L off it
    (whatever the rounding of r_k); ``far_slope`` is the constant slope of the rows left out
    (none of them crosses its kink for t ≤ ``limit``).

    Returns (t, k, crossed): k is the row whose kink stops the search (−1 at a smooth minimum
    or at the limit), ``crossed`` the rows whose kinks lie strictly before t (they change side);
    t = inf when φ decreases without end along the direction."""
    curvature = float(dw @ dw)
    big = float(np.abs(s).max(initial=0.0))
    moving = np.abs(s) > _CROSSING_TOL * big
    slope0 = float(w @ dw) - float(u[in_hinge] @ s[in_hinge]) + far_slope
    leaving = in_hinge & moving & (s > 0)  # U → L at r_k + t·s_k = 0
    entering = off_face & ~in_hinge & moving & (s < 0)  # L → U
    candidates = np.flatnonzero(leaving | entering)
    times = np.maximum(-r[candidates] / s[candidates], 0.0)
    # the minimum usually lies among the first breakpoints: sort a growing prefix of them
    first = _FIRST_BREAKPOINTS
    while True:
        if first < times.size:
            prefix = np.argpartition(times, first)[:first]
            prefix = prefix[np.argsort(times[prefix], kind="stable")]
        else:
            prefix = np.argsort(times, kind="stable")
        idx, tk = candidates[prefix], times[prefix]
        # φ'(t) = slopes_i + curvature·t after the i-th breakpoint; each adds u_k|s_k|
        slopes = np.empty(idx.size + 1)
        slopes[0] = slope0
        np.cumsum(u[idx] * np.abs(s[idx]), out=slopes[1:])
        slopes[1:] += slope0
        ahead = np.flatnonzero(slopes[:-1] + curvature * tk >= 0)  # φ' ≥ 0 before breakpoint
        if ahead.size or tk.size == times.size:
            break
        first *= 8
    i = int(ahead[0]) if ahead.size else tk.size
    start_i = float(tk[i - 1]) if i > 0 else 0.0  # where the segment of the minimum starts
    if curvature > 0:
        t = -slopes[i] / curvature
    else:
        t = start_i if slopes[i] >= 0 else np.inf
    if i < tk.size and t >= tk[i]:
        t, k, crossed = float(tk[i]), int(idx[i]), i
    elif t <= start_i and i > 0:  # the minimum is the kink that opened this segment
        t, k, crossed = start_i, int(idx[i - 1]), i - 1
    else:
        t, k, crossed = float(max(t, 0.0)), -1, i
    if t > limit:  # stop at the limit, before the kinks beyond it
        return limit, -1, idx[: int(np.searchsorted(tk[:crossed], limit))]
    return t, k, idx[:crossed]


def svm_active_set(
    X,
    y: NDArray[np.float64],
    upper: NDArray[np.float64],
    start: tuple[NDArray[np.float64], float] | None = None,
    max_steps: int = 20_000,
    time_limit: float | None = None,
    intercept: bool = True,
) -> HingeActiveSetResult:
    """min ½‖w‖² + Σ_k upper_k max(0, 1 − y_k(x_k·w + b)) by the method of the module, from
    ``start`` = (w₀, b₀) (zero when None); ``intercept`` False fixes b = 0 (θ = w, no row
    Σ α_k y_k = 0 in the dual).

    Each row is in E, U or L; the sides U/L change only when a line search crosses a kink or a
    row leaves E (to the side its multiplier asks for), never by the sign of a rounded r_k."""
    with single_thread_blas():  # many small products (aidopt/common/threads.py)
        return _solve(
            _Rows(X, np.asarray(y, float), np.asarray(upper, float), intercept),
            start,
            max_steps,
            time_limit,
        )


def _solve(rows: _Rows, start, max_steps: int, time_limit: float | None) -> HingeActiveSetResult:
    """The loop of :func:`svm_active_set`.

    The residuals r_k = z_k·θ − 1 and the sums over U (the linear term c of q, the sizes
    Σ_U u_k|x_k| and Σ_U u_k) are carried from step to step — r += t·s after a move, the sums
    changed by the few rows that cross or join or leave E — and recomputed from every row each
    _REFRESH_STEPS steps, at the edge of the window (:class:`_Window`; r then holds its near
    rows only) and before an answer is declared optimal, so that the optimality test always sees
    them fresh. The window's share halves after a window of _REFRESH_STEPS steps and doubles
    when its edge is reached within half of them."""
    intercept = rows.intercept
    m, K = rows.m, rows.y.size
    theta = np.zeros(rows.p)
    if start is not None:
        theta[:m] = np.asarray(start[0], dtype=np.float64)
        if intercept:
            theta[m] = start[1]
    face = _Face(rows)
    on_face = np.zeros(K, dtype=bool)
    in_hinge = rows.dot(theta) < 1.0
    stop = None if time_limit is None else time.perf_counter() + time_limit
    steps = idle = 0  # idle: steps in a row that did not move θ (a cycle guard)
    stale = _REFRESH_STEPS  # steps since r and the sums over U were computed from every row
    r, c, size_U, weight_U = np.zeros(K), np.zeros(rows.p), np.zeros(m), 0.0  # set at step 1
    share = _NEAR_SHARE  # the rows scanned per step (r holds theirs): see _Window
    window = _Window(rows, theta, r, in_hinge, 1.0)
    capped = True

    def bias() -> float:
        return float(theta[m]) if intercept else 0.0

    def give_up(message):
        return HingeActiveSetResult(theta[:m].copy(), bias(), None, steps, message)

    def change_hinge(changed: NDArray[np.int64], was: NDArray[np.bool_]) -> None:
        nonlocal c, size_U, weight_U
        sign = in_hinge[changed].astype(np.float64) - was
        moved = sign != 0.0
        if moved.any():
            dc, dsize = rows.hinge_change(changed[moved], sign[moved])
            c, size_U = c + dc, size_U + dsize
            weight_U += float(sign[moved] @ rows.u[changed[moved]])

    while True:
        if steps >= max_steps:
            return give_up("step limit")
        if stop is not None and time.perf_counter() > stop:
            return give_up("time limit")
        steps += 1
        fresh = stale >= _REFRESH_STEPS
        if fresh:
            if not capped:  # a whole window without reaching its edge
                share = max(_MIN_SHARE, share / 2)
            capped = False
            r = rows.dot(theta) - 1.0
            r[face.E] = 0.0
            c, size_U = rows.hinge_sums(in_hinge)
            weight_U = float(rows.u[in_hinge].sum())
            window = _Window(rows, theta, r, in_hinge, share)
            r = r[window.near]
            stale = 0
        stale += 1
        E, near = face.E, window.near
        r[np.searchsorted(near, E)] = 0.0
        if E.size == 0:  # q is ½‖w‖² − c·θ: its minimiser in w, its descent in b
            direction, alpha_E = c - theta, np.zeros(0)
            if intercept:
                direction[m] = c[m]
        else:
            minimiser = _face_minimiser(rows, c, face)
            if minimiser is None:
                return give_up("singular face")
            direction, alpha_E = minimiser[0] - theta, minimiser[1]
        if not _at_face_minimiser(rows, theta, direction, face.Z, alpha_E, size_U, weight_U):
            s = window.rows.dot(direction)  # z_k·d on the near rows
            limit = window.limit(theta, direction)
            t, joining, crossed = _line_search(
                theta[:m],
                direction[:m],
                r,
                s,
                window.rows.u,
                in_hinge[near],
                ~on_face[near],
                -float(window.far_sum @ direction),
                limit,
            )
            if not np.isfinite(t):
                return give_up("unbounded direction")
            if t >= limit:  # the edge of the window: scan every row again
                if stale < _REFRESH_STEPS // 2:
                    share = min(1.0, 2.0 * share)
                stale, capped = _REFRESH_STEPS, True
            if t > 0.0 or joining >= 0:
                theta = theta + t * direction
                r += t * s
                crossed = near[crossed]
                changed = crossed if joining < 0 else np.append(crossed, near[joining])
                was = in_hinge[changed]
                in_hinge[crossed] = ~in_hinge[crossed]
                if joining >= 0:  # an off-face row: E never holds it twice
                    joining = int(near[joining])
                    face.add(joining)
                    on_face[joining] = True
                    in_hinge[joining] = False
                change_hinge(changed, was)
                idle = idle + 1 if t == 0.0 else 0
                if idle > _IDLE_STEPS * rows.p:
                    return give_up("stalled")
                continue
            if t >= limit:  # at the window's edge (no move): not a face minimiser
                continue
            # no descent to rounding (φ'(0+) ≥ 0 as computed): a face minimiser in practice
        excess = np.maximum(-alpha_E, alpha_E - rows.u[E])
        if excess.size == 0 or excess.max() <= _MULTIPLIER_TOL * max(1.0, rows.u[E].max()):
            if not fresh:  # decide on sums from every row
                stale = _REFRESH_STEPS
                continue
            alpha = np.where(in_hinge, rows.u, 0.0)
            alpha[E] = np.clip(alpha_E, 0.0, rows.u[E])
            return HingeActiveSetResult(theta[:m].copy(), bias(), alpha, steps, "optimal")
        leaving = int(np.argmax(excess))
        k = int(E[leaving])
        in_hinge[k] = alpha_E[leaving] > rows.u[k]
        on_face[k] = False
        face.remove(leaving)
        change_hinge(np.array([k]), np.array([False]))
        idle += 1
        if idle > _IDLE_STEPS * rows.p:
            return give_up("stalled")


class SVMActiveSetSolver(SolverAdapter):
    """The method of the module on a :class:`WeightedSVM` with features (warm-started at its
    ``start``). Where it stops on a degenerate face (many rows tied on one kink, e.g. features
    of size 1e-9 that leave w ≈ 0), libsvm solves the problem instead and the message says so
    (without an intercept, which libsvm cannot fix at 0, the status is ``error``); either answer
    carries its duality gap (``bound``)."""

    NAME: ClassVar[str] = "activeset"
    DESCRIPTION: ClassVar[str] = (
        "exact primal active set for the weighted linear SVM (b unpenalised), warm-started"
    )
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({WeightedSVM})
    REFUSED_TRAITS: ClassVar[frozenset[str]] = frozenset({GRAM})

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if not isinstance(structure, WeightedSVM):
            return super().solve_structure(structure)
        check_linear_kernel(structure, "activeset")
        svm = structure
        chosen = check_options(options, _OPTIONS, "activeset")
        clock = time.perf_counter()
        limit = budget(time_limit)
        found = svm_active_set(
            svm.features,
            svm.y,
            svm.upper,
            start=svm.start,
            time_limit=limit,
            intercept=svm.intercept,
            **chosen,
        )
        seconds = time.perf_counter() - clock
        if found.message == "time limit" or (found.message == "step limit" and chosen):
            return None, limit_result(found.message, seconds, found.steps)
        if not found.converged:
            if not svm.intercept:
                return None, SolveResult(
                    SolveStatus.ERROR,
                    seconds=seconds,
                    iterations=found.steps,
                    message=found.message,
                )
            return self._fall_back(svm, found, limit, verbose, clock)
        alpha = np.clip(found.alpha, 0.0, svm.upper)
        if svm.intercept:
            alpha = feasible_dual(alpha, svm.y, svm.upper)
        answer = SVMFit(alpha=alpha, b=found.b, w=found.w)
        objective, bound = svm_primal_value(svm, answer), svm_dual_value(svm, alpha)
        gap = max(objective - bound, 0.0) / max(1.0, abs(objective))
        if gap > _GAP_TOL:  # face solves gone inaccurate (many rows tied on their kinks)
            if svm.start is not None:  # measured: a warm start at an optimum can do this
                left = None if limit is None else max(0.0, limit - seconds)
                answer, result = self.solve_structure(
                    replace(svm, start=None), time_limit=left, verbose=verbose, options=options
                )
                total = time.perf_counter() - clock
                return answer, replace(
                    result,
                    seconds=total,
                    message=f"{result.message} "
                    f"(cold restart: the warm start ended at gap {gap:.1e})",
                )
            if svm.intercept:
                return self._fall_back(svm, found, limit, verbose, clock)
            return None, SolveResult(
                SolveStatus.ERROR,
                seconds=seconds,
                iterations=found.steps,
                message=f"the face solves lost accuracy (duality gap {gap:.1e})",
            )
        return answer, SolveResult(
            SolveStatus.OPTIMAL,
            objective=objective,
            bound=bound,
            seconds=seconds,
            iterations=found.steps,
            message="optimal",
            accuracy=max(gap, _ACCURACY),
        )

    @staticmethod
    def _fall_back(svm, found, limit, verbose, clock):
        from aidopt.solvers.libsvm import LibsvmSolver

        left = None if limit is None else max(0.0, limit - (time.perf_counter() - clock))
        answer, result = LibsvmSolver().solve_structure(svm, time_limit=left, verbose=verbose)
        message = f"active set {found.message} after {found.steps} steps; libsvm: {result.message}"
        return answer, replace(result, seconds=time.perf_counter() - clock, message=message)
