"""A primal active-set method for a small dense convex QP on the capped simplex:

    min ½ λᵀQλ − pᵀλ   s.t.  λ ≥ 0,  Σ_k λ_k ≤ 1,  Eλ = 0 (optional rows),   Q ⪰ 0.

It works on the lifted simplex x = (λ, 1 − Σλ) and is exact up to rounding: it ends on a face
where the KKT conditions hold. It knows no model (the dual (19) of the cutting-plane master in
:mod:`aidopt.baselines.cutting_plane` is one such QP).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from aidopt.exceptions import SolverError

__all__ = ["capped_simplex_qp"]

_TOL = 1e-12  # relative rounding tolerance of the active-set tests


def capped_simplex_qp(
    Q: NDArray[np.float64],
    p: NDArray[np.float64],
    E: NDArray[np.float64] | None = None,
    start: NDArray[np.float64] | None = None,
    max_iter: int | None = None,
) -> tuple[NDArray[np.float64], int]:
    """min ½ λᵀQλ − pᵀλ  s.t.  λ ≥ 0, Σλ ≤ 1, Eλ = 0 (optional rows), Q ⪰ 0 small and dense.

    A primal active-set method on the lifted simplex x = (λ, 1 − Σλ): on the current face it takes
    the Newton step in the null space of the equality rows, or, where the reduced Hessian is
    singular and the gradient has a component along its null space, a descent direction of zero
    curvature; the step is cut at the first bound that blocks. At a face minimiser the bound
    multipliers are computed and the most negative one is released. On an ill-conditioned Q
    (cond ≳ 1e14) the steps can shrink to rounding noise and the method cycle between two faces;
    it then returns at the first face minimiser it revisits — :func:`solve_master` certifies
    every answer by its duality gap. Returns (λ, iterations).
    """
    K = p.shape[0]
    n = K + 1
    Qx = np.zeros((n, n))
    Qx[:K, :K] = Q
    px = np.r_[p, 0.0]
    rows = [np.ones(n)]
    if E is not None:
        rows.extend(np.r_[e, 0.0] for e in np.atleast_2d(E))
    A = np.array(rows)
    x = _feasible_start(start, A, K)
    free = x > 0
    absQ, absA = np.abs(Qx), np.abs(A)
    limit = max_iter if max_iter is not None else 50 + 20 * n
    stationary_faces: set[bytes] = set()  # face minimisers visited: a repeat is a rounding cycle
    for iteration in range(1, limit + 1):
        F = np.flatnonzero(free)
        g = Qx @ x - px
        size = absQ @ x + np.abs(px)  # rounding in g_i is ≲ 1e-16·size_i
        Z = _null_space(A[:, F])
        d_F = _face_direction(Qx[np.ix_(F, F)], g[F], Z, _TOL * size[F].max(initial=0.0))
        slope = float(g[F] @ d_F) if d_F is not None else 0.0
        if d_F is None or slope >= -_TOL * float(size[F] @ np.abs(d_F)):
            nu = np.linalg.lstsq(A[:, F].T, g[F], rcond=None)[0]
            mu = g - A.T @ nu
            mu[F] = 0.0
            j = int(np.argmin(mu + _TOL * (size + absA.T @ np.abs(nu))))
            face = free.tobytes()
            if mu[j] >= -_TOL * (size[j] + absA[:, j] @ np.abs(nu)) or face in stationary_faces:
                return x[:K].copy(), iteration
            stationary_faces.add(face)
            free[j] = True
            continue
        curvature = float(d_F @ Qx[np.ix_(F, F)] @ d_F)
        step = -slope / curvature if curvature > 0.0 else np.inf
        shrink = d_F < 0
        ratios = x[F][shrink] / -d_F[shrink]
        block = int(np.argmin(ratios)) if ratios.size else -1
        if block >= 0 and ratios[block] <= step:
            x[F] = np.maximum(x[F] + ratios[block] * d_F, 0.0)
            hit = F[np.flatnonzero(shrink)[block]]
            x[hit] = 0.0
            free[hit] = False
        elif np.isfinite(step):
            x[F] = np.maximum(x[F] + step * d_F, 0.0)
        else:  # pragma: no cover - the lifted simplex is bounded, so some bound blocks
            raise SolverError("capped_simplex_qp: an unbounded direction on a bounded set.")
        x /= x.sum()  # stay on Σ x = 1 against rounding
    raise SolverError(
        f"capped_simplex_qp reached its iteration limit ({limit}) on a {K}-variable QP."
    )


def _feasible_start(start: NDArray[np.float64] | None, A: NDArray[np.float64], K: int) -> NDArray:
    """The warm start lifted to (λ, 1 − Σλ) if it is feasible, else the vertex λ = 0."""
    x = np.zeros(K + 1)
    x[K] = 1.0
    if start is None or start.shape != (K,):
        return x
    lam = np.maximum(np.asarray(start, dtype=np.float64), 0.0)
    total = lam.sum()
    if total > 1.0:
        lam = lam / total
        total = 1.0
    candidate = np.r_[lam, 1.0 - total]
    if A.shape[0] > 1 and np.abs(A[1:] @ candidate).max() > 1e-12 * max(1.0, np.abs(A).max()):
        return x
    return candidate


def _null_space(A_F: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis (columns) of {v : A_F v = 0}."""
    _, s, vt = np.linalg.svd(A_F, full_matrices=True)
    rank = int((s > 1e-12 * max(1.0, s.max(initial=0.0))).sum())
    return vt[rank:].T


def _face_direction(Q_FF, g_F, Z, tol) -> NDArray[np.float64] | None:
    """Newton step on the face, or a zero-curvature descent direction; None if stationary."""
    if Z.shape[1] == 0:
        return None
    gz = Z.T @ g_F
    if np.abs(gz).max() <= tol:
        return None
    evals, U = np.linalg.eigh(Z.T @ Q_FF @ Z)
    curved = evals > _TOL * max(float(np.abs(Q_FF).max(initial=0.0)), 0.0) * Q_FF.shape[0]
    coeff = U.T @ gz
    flat = np.where(curved, 0.0, coeff)
    if np.abs(flat).max() > tol:
        return -Z @ (U @ flat)
    return -Z @ (U[:, curved] @ (coeff[curved] / evals[curved]))
