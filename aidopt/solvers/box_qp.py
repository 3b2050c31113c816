"""An exact solver for a small dense convex QP on a box, with at most one sum row:

    min ½ aᵀQa − pᵀa   s.t.  l ≤ a ≤ u,   Σ_k a_k = s (optional),   Q ⪰ 0.

KKT: with ν the multiplier of the sum row (0 without it) and μ = p − Qa − ν·1, an optimum has
μ_k = 0 where l_k < a_k < u_k, μ_k ≤ 0 at a_k = l_k and μ_k ≥ 0 at a_k = u_k.

Three phases; the last two are exact up to rounding (each step solves the KKT system of a face):

0. coordinate descent to a loose tolerance, which finds the optimal face or one near it (skipped
   when phase 1 converges straight from a warm ``start`` within 50 face solves — from AID's
   warm starts it otherwise wandered through hundreds of faces without repeating one): the
   coordinate whose exact line minimisation moves most (no sum row), or the maximal violating
   pair of libsvm's SMO (with the sum row); O(K) per step. When phase 1 fails from its point,
   the descent goes on (30, then 300, then 3000 sweeps of K steps, at most 10⁶ steps each) to a
   tighter tolerance and phase 1 restarts from there (on an ill-conditioned K̄, cond ≈ 1e11,
   phase 1 alone can wander to a worse face);
1. the primal–dual active-set method (Hintermüller, Ito & Kunisch 2003): guess the face from
   the signs of a + μ/diag(Q) against the bounds, solve that face's equality-constrained QP, repeat
   until the guess repeats — typically a handful of solves, several bounds moved at once;
2. when phase 1 cycles or ends infeasible (it can, Q not being an M-matrix), the primal
   active-set method from the nearest feasible point: Newton step on the free face, cut at the
   first bound it hits (that bound joins the face), and at a face minimiser the bound whose
   multiplier has the wrong sign is released; finite for Q ⪰ 0.

The face systems carry a ridge of 1e-13·max diag(Q) against singular faces (duplicated rows), so
the answer is exact to about that relative accuracy; the models certify it on the original data.
It knows no model (the one-class duals of ``models/ocsvm_kernel.py`` and ``models/svdd.py`` are
such QPs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus, check_options
from aidopt.solvers.structures import BoxQP

__all__ = ["BoxQPResult", "BoxQPSolver", "box_qp", "box_qp_from"]

_RIDGE = 1e-13  # ridge of the face systems, relative to max diag(Q)
_KKT_TOL = 1e-11  # relative tolerance of the sign tests
_MAX_STEPS = 1_000_000  # coordinate steps per descent at most
_WARM_SOLVES = 50  # phase 1 from a warm start gets this many face solves before phase 0
_QUICK_SOLVES = 10  # phase 1 in box_qp_from gets this many before phase 2


@dataclass(frozen=True)
class BoxQPResult:
    """The minimiser a, the sum row's multiplier ν, the face solves, and whether the KKT
    conditions hold at a (to the relative tolerance)."""

    a: NDArray[np.float64]
    nu: float
    solves: int
    converged: bool


def _project(a, lower, upper, total):
    """The point of {l ≤ a ≤ u, Σa = s} nearest to a (bisection on the shift t of clip(a + t))."""
    a = np.clip(a, lower, upper)
    if total is None:
        return a
    if abs(a.sum() - total) <= 4 * np.finfo(float).eps * float(np.abs(a).sum()):
        return a  # feasible to rounding already (a warm start)
    lo, hi = float((lower - a).min()), float((upper - a).max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):  # the bracket is as narrow as floats go
            break
        if np.clip(a + mid, lower, upper).sum() < total:
            lo = mid
        else:
            hi = mid
    return np.clip(a + 0.5 * (lo + hi), lower, upper)


class _Faces:
    """Solves of the face problems: free entries F solve Q_FF a_F (+ ν·1) = p_F − Q_FB a_B."""

    def __init__(self, Q, p, total):
        self.Q, self.p, self.total = Q, p, total
        self.ridge = _RIDGE * max(float(np.max(np.diag(Q), initial=0.0)), 1e-300)
        self.solves = 0

    def minimiser(self, a, free):
        """a with its free entries replaced by the face minimiser, and ν."""
        self.solves += 1
        Q, F = self.Q, np.flatnonzero(free)
        fixed = ~free
        rhs = self.p[F] - Q[np.ix_(F, np.flatnonzero(fixed))] @ a[fixed]
        H = Q[np.ix_(F, F)] + self.ridge * np.eye(F.size)
        out = a.copy()
        if self.total is None:
            out[F] = np.linalg.solve(H, rhs) if F.size else out[F]
            return out, 0.0
        if F.size == 0:
            return out, float(np.mean(self.p - Q @ a))
        border = np.zeros((F.size + 1, F.size + 1))
        border[:-1, :-1], border[:-1, -1], border[-1, :-1] = H, 1.0, 1.0
        solution = np.linalg.solve(border, np.r_[rhs, self.total - a[fixed].sum()])
        out[F] = solution[:-1]
        return out, float(solution[-1])

    def multipliers(self, a, nu):
        return self.p - self.Q @ a - nu


def box_qp(
    Q: NDArray[np.float64],
    p: NDArray[np.float64],
    lower: NDArray[np.float64],
    upper: NDArray[np.float64],
    total: float | None = None,
    start: NDArray[np.float64] | None = None,
    max_solves: int | None = None,
) -> BoxQPResult:
    """min ½aᵀQa − pᵀa s.t. lower ≤ a ≤ upper, Σa = total (when given); see the module."""
    Q, p = np.asarray(Q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    K = p.size
    if np.any(lower > upper):
        raise ValueError("box_qp: a lower bound exceeds its upper bound")
    if total is not None and not lower.sum() <= total <= upper.sum():
        raise ValueError(f"box_qp: Σa = {total:g} is outside [Σl, Σu]: infeasible")
    limit = max_solves if max_solves is not None else 50 + 4 * K
    faces = _Faces(Q, p, total)
    tol = _KKT_TOL * max(1.0, float(np.abs(p).max(initial=0.0)))
    a0 = 0.5 * (lower + upper) if start is None else np.asarray(start, dtype=np.float64)
    a = _project(a0, lower, upper, total)
    if start is not None:  # a warm start near the optimum: phase 1 straight from it
        warm_limit = min(limit, _WARM_SOLVES)
        found = _primal_dual_active_set(faces, a, lower, upper, total, tol, warm_limit)
        if found is not None:
            return BoxQPResult(found[0], found[1], faces.solves, True)
    # phases 0 and 1, with coordinate descent taken further each time the face it points at
    # is not the optimal one (phase 1 is not monotone: it restarts from the descent's point)
    for sweeps, threshold in ((30, np.sqrt(tol)), (300, tol), (3000, 0.01 * tol)):
        a = _coordinate_descent(Q, p, lower, upper, total, a, threshold, sweeps)
        found = _primal_dual_active_set(faces, a, lower, upper, total, tol, limit)
        if found is not None:
            return BoxQPResult(found[0], found[1], faces.solves, True)

    # phase 2: primal active set from the feasible point a (a budget of its own)
    return _primal_active_set(faces, a, lower, upper, total, tol, limit)


def box_qp_from(
    Q: NDArray[np.float64],
    p: NDArray[np.float64],
    lower: NDArray[np.float64],
    upper: NDArray[np.float64],
    start: NDArray[np.float64],
    max_solves: int | None = None,
) -> BoxQPResult:
    """min ½aᵀQa − pᵀa s.t. lower ≤ a ≤ upper from the feasible ``start``, without phase 0:
    phase 1 for a few face solves (it moves many bounds at once where Q is well conditioned),
    then phase 2 from ``start`` (monotone and finite, one face solve per bound that joins or
    leaves; where Q is ill conditioned, phase 0 took thousands of sweeps instead). For the
    subproblems of a decomposition (:mod:`aidopt.solvers.kernel_decomposition`)."""
    Q, p = np.asarray(Q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    faces = _Faces(Q, p, None)
    a = np.clip(np.asarray(start, dtype=np.float64), lower, upper)
    tol = _KKT_TOL * max(1.0, float(np.abs(p).max(initial=0.0)))
    limit = max_solves if max_solves is not None else 50 + 4 * p.size
    found = _primal_dual_active_set(faces, a, lower, upper, None, tol, min(limit, _QUICK_SOLVES))
    if found is not None:
        return BoxQPResult(found[0], found[1], faces.solves, True)
    return _primal_active_set(faces, a, lower, upper, None, tol, limit)


def _primal_active_set(faces, a, lower, upper, total, tol, limit) -> BoxQPResult:
    """Phase 2 from the feasible a: Newton step on the free face, cut at the first bound it hits
    (that bound joins the face); at a face minimiser the bound whose multiplier has the wrong
    sign most is released. At most ``limit`` face solves."""
    width = np.maximum(upper - lower, 0.0)
    free = (a > lower) & (a < upper)
    nu = _sum_multiplier(faces.multipliers(a, 0.0), a, lower, upper, total)
    budget = faces.solves + limit
    while faces.solves < budget:
        target, nu = faces.minimiser(a, free)
        step = target - a
        blocked, t = _ratio_test(a, step, lower, upper, free)
        a = a + t * step
        if blocked is not None:
            a[blocked] = lower[blocked] if step[blocked] < 0 else upper[blocked]
            free[blocked] = False
            continue
        a = np.clip(a, lower, upper)
        mu = faces.multipliers(a, nu)
        wrong = np.where(~free & (a <= lower) & (mu > tol), mu, 0.0)
        wrong += np.where(~free & (a >= upper) & (mu < -tol), -mu, 0.0)
        wrong[width <= 0] = 0.0
        if not np.any(wrong > 0):
            return BoxQPResult(a, nu, faces.solves, True)
        free[int(np.argmax(wrong))] = True
    return BoxQPResult(a, nu, faces.solves, _kkt(faces, a, nu, lower, upper, tol))


def _primal_dual_active_set(faces, a, lower, upper, total, tol, limit):
    """Phase 1 from a: (a*, ν) at a KKT point, or None when the guesses cycle or the last face
    minimiser is infeasible."""
    width = np.maximum(upper - lower, 0.0)
    scale = 1.0 / np.maximum(np.diag(faces.Q), faces.ridge)
    nu = _sum_multiplier(faces.multipliers(a, 0.0), a, lower, upper, total)
    seen: set[bytes] = set()
    while faces.solves < limit:
        trial = a + scale * faces.multipliers(a, nu)
        at_lower, at_upper = trial <= lower, trial >= upper
        at_upper &= ~at_lower
        key = np.packbits(at_lower).tobytes() + np.packbits(at_upper).tobytes()
        if key in seen:
            break
        seen.add(key)
        b = np.where(at_lower, lower, np.where(at_upper, upper, a))
        a_new, nu = faces.minimiser(b, ~(at_lower | at_upper))
        if np.array_equal(a_new, a):
            break
        a = a_new
    slack = tol * (1 + width)
    if np.all(a >= lower - slack) and np.all(a <= upper + slack):
        a = _project(a, lower, upper, total)
        if _kkt(faces, a, nu, lower, upper, tol):
            return a, nu
    return None


def _sum_multiplier(mu0, a, lower, upper, total) -> float:
    """ν that best balances μ = μ0 − ν: the mean of μ0 over the interior entries (0 without a
    sum row; the midpoint of the admissible interval when no entry is interior)."""
    if total is None:
        return 0.0
    interior = (a > lower) & (a < upper)
    if interior.any():
        return float(mu0[interior].mean())
    return float(np.median(mu0))


def _coordinate_descent(Q, p, lower, upper, total, a, loose, sweeps):
    """Phase 0: greedy coordinate (or SMO pair) steps from the feasible a until the largest
    violation of the KKT conditions is below ``loose`` or after ``sweeps``·K steps."""
    K = a.size
    a = a.copy()
    diag = np.maximum(np.diag(Q).copy(), 1e-300)
    grad = Q @ a - p  # gradient of ½aᵀQa − pᵀa
    for _ in range(min(sweeps * K, _MAX_STEPS) + 100):
        if total is None:
            target = np.clip(a - grad / diag, lower, upper)
            move = target - a
            i = int(np.argmax(np.abs(move) * np.sqrt(diag)))
            if abs(move[i]) * np.sqrt(diag[i]) <= loose:
                break
            a[i] = target[i]
            grad += Q[:, i] * move[i]
            continue
        up = np.flatnonzero(a < upper)
        down = np.flatnonzero(a > lower)
        if up.size == 0 or down.size == 0:
            break
        i, j = up[np.argmin(grad[up])], down[np.argmax(grad[down])]
        if grad[j] - grad[i] <= loose or i == j:
            break
        curvature = max(Q[i, i] + Q[j, j] - 2.0 * Q[i, j], 1e-12 * (diag[i] + diag[j]))
        step = min((grad[j] - grad[i]) / curvature, upper[i] - a[i], a[j] - lower[j])
        a[i] += step
        a[j] -= step
        grad += step * (Q[:, i] - Q[:, j])
    return a


def _ratio_test(a, step, lower, upper, free):
    """The first free entry the step a + t·step (0 ≤ t ≤ 1) drives onto a bound, and t."""
    t, blocked = 1.0, None
    room = np.where(step < 0, (a - lower) / np.where(step < 0, -step, 1.0), np.inf)
    room = np.where(step > 0, (upper - a) / np.where(step > 0, step, 1.0), room)
    room[~free] = np.inf
    k = int(np.argmin(room)) if room.size else 0
    if room.size and room[k] < 1.0:
        t, blocked = max(float(room[k]), 0.0), k
    return blocked, t


def _kkt(faces, a, nu, lower, upper, tol) -> bool:
    mu = faces.multipliers(a, nu)
    interior = (a > lower) & (a < upper)
    return bool(
        np.all(np.abs(mu[interior]) <= tol * 100)
        and np.all(mu[(a <= lower) & (lower < upper)] <= tol * 100)
        and np.all(mu[(a >= upper) & (lower < upper)] >= -tol * 100)
    )


class BoxQPSolver(SolverAdapter):
    NAME: ClassVar[str] = "boxqp"
    DESCRIPTION: ClassVar[str] = "exact active-set solver of a dense box QP (one-class duals)"
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({BoxQP})

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if not isinstance(structure, BoxQP):
            return super().solve_structure(structure)
        kwargs = check_options(options, frozenset({"max_solves"}), "boxqp")
        qp = structure
        start = time.perf_counter()
        fit = box_qp(qp.Q, qp.p, qp.lower, qp.upper, qp.total, qp.start, **kwargs)
        value = float(qp.p @ fit.a - 0.5 * fit.a @ qp.Q @ fit.a)  # the structure maximises
        status = SolveStatus.OPTIMAL if fit.converged else SolveStatus.ITERATION_LIMIT
        return fit, SolveResult(
            status=status,
            seconds=time.perf_counter() - start,
            iterations=fit.solves,
            objective=value,
            message="optimal" if fit.converged else f"no KKT point after {fit.solves} solves",
        )
