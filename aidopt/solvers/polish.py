"""A QP answer re-solved exactly on its face: the interior-point or active-set tolerance removed.

For min ½xᵀQx + cᵀx s.t. l ≤ Ax ≤ u, lb ≤ x ≤ ub, an approximate optimum x says which bounds are
active: the columns at a bound (B) are fixed there and the rows at a bound (equalities included)
hold with equality. The optimum of that face solves the KKT system of an equality-constrained QP
in the free columns F:

    [ Q_FF  −A_Fᵀ ] [ x_F ]   [ −c_F − Q_FB x_B ]
    [ A_F     0   ] [  y  ] = [ b − A_B x_B     ]

(y the duals of the active rows; HiGHS's sign convention, z = Qx + c − Aᵀy). The solution is
kept only if it stays inside every bound; the caller keeps it only if its optimality conditions
(:func:`aidopt.solvers.kkt.kkt_error`) are better than the answer's. Measured on the SVM dual:
HiGHS stops at 1e-7 tolerances, which heavy cluster weights turn into proven gaps of 1e-6; on
its face the same answer certifies at ~1e-15.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import sparse as sp
from aidopt.solvers.program import MatrixProgram

__all__ = ["polish_qp"]

_MAX_SYSTEM = 1500  # free columns + active rows: a dense KKT system up to this size (~0.3 s)
# relative distance to a bound below which the bound is taken as active: a solver stops at
# ~1e-7; a wrongly chosen face gives worse optimality conditions, which the caller refuses
_ACTIVE = 1e-6


def _near(value, bound, scale) -> NDArray[np.bool_]:
    with np.errstate(invalid="ignore"):
        return np.isfinite(bound) & (np.abs(value - bound) <= _ACTIVE * scale)


def polish_qp(
    program: MatrixProgram, x: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """(x, row duals) optimal on the face of ``x``, or None (the system is too large, singular
    in a way least squares cannot mend, or its solution leaves a bound)."""
    if program.Q is None or (program.integer is not None and program.integer.any()):
        return None
    A = sp.csr_matrix(program.A)
    Q = sp.csr_matrix(program.Q)
    col_scale = 1.0 + np.abs(x)
    at_lower = _near(x, program.col_lower, col_scale)
    at_upper = _near(x, program.col_upper, col_scale) & ~at_lower
    free = ~(at_lower | at_upper)
    fixed = np.where(at_lower, program.col_lower, np.where(at_upper, program.col_upper, x))
    Ax = A @ x
    row_scale = 1.0 + abs(A) @ np.abs(x)
    row_low = _near(Ax, program.row_lower, row_scale) | (program.row_lower == program.row_upper)
    row_up = _near(Ax, program.row_upper, row_scale) & ~row_low
    active = np.flatnonzero(row_low | row_up)
    target = np.where(row_low, program.row_lower, program.row_upper)[active]
    F = np.flatnonzero(free)
    if F.size + active.size > _MAX_SYSTEM or F.size == 0:
        return None
    x_b = np.where(free, 0.0, fixed)
    A_act = A[active]
    A_F = A_act[:, F].toarray()
    Q_FF = Q[F][:, F].toarray()
    rhs = np.r_[-program.c[F] - (Q[F] @ x_b), target - A_act @ x_b]
    kkt = np.block([[Q_FF, -A_F.T], [A_F, np.zeros((active.size, active.size))]])
    solution, *_ = np.linalg.lstsq(kkt, rhs, rcond=None)
    if not np.all(np.isfinite(solution)):
        return None
    x_new = x_b.copy()
    x_new[F] = solution[: F.size]
    slack = 1e-12 * col_scale
    if np.any(x_new < program.col_lower - slack) or np.any(x_new > program.col_upper + slack):
        return None
    x_new = np.clip(x_new, program.col_lower, program.col_upper)
    Ax_new = A @ x_new
    row_slack = 1e-12 * (1.0 + abs(A) @ np.abs(x_new))
    if np.any(Ax_new < program.row_lower - row_slack) or np.any(
        Ax_new > program.row_upper + row_slack
    ):
        return None
    duals = np.zeros(program.n_rows)
    duals[active] = solution[F.size :]
    return x_new, duals
