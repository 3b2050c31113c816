"""A solver's own answer to an LP/QP checked against the optimality conditions, in original units.

For min ½xᵀQx + cᵀx s.t. l ≤ Ax ≤ u, lb ≤ x ≤ ub, a primal point x and row duals y (HiGHS's
convention: y_i > 0 prices the row's lower bound, y_i < 0 its upper one) give the reduced costs
z = Qx + c − Aᵀy. At an optimum x is feasible and complementary slackness holds:

    y_i⁺ (a_i x − l_i) = 0,  y_i⁻ (u_i − a_i x) = 0,  z_j⁺ (x_j − lb_j) = 0,  z_j⁻ (ub_j − x_j) = 0,

and a multiplier on an infinite bound must be 0. :func:`kkt_error` returns the relative
complementarity gap and the relative infeasibility; an adapter refuses an "optimal" answer whose
errors are far above its tolerances (measured: HiGHS 1.16 returned equilibrated S3VM QPs as
"optimal" 1–120 % above their optimum). This is a sanity check of the solver, not a proof; the
proof is the model's certificate on the original data (:mod:`aidopt.core.certificate`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import sparse as sp
from aidopt.solvers.program import MatrixProgram

__all__ = ["kkt_error"]


def _complementarity(mult, value, lower, upper) -> NDArray[np.float64]:
    """Per entry: mult⁺·(value − lower) + mult⁻·(upper − value); a multiplier on an infinite
    bound counts as |mult|·(1 + |value|)."""
    pos, neg = np.maximum(mult, 0.0), np.maximum(-mult, 0.0)
    with np.errstate(invalid="ignore"):
        low = np.where(np.isfinite(lower), pos * np.abs(value - lower), pos * (1 + np.abs(value)))
        up = np.where(np.isfinite(upper), neg * np.abs(upper - value), neg * (1 + np.abs(value)))
    return low + up


def kkt_error(
    program: MatrixProgram, x: NDArray[np.float64], row_duals: NDArray[np.float64]
) -> tuple[float, float]:
    """(relative complementarity gap, relative infeasibility) of (x, y) for the program."""
    A = sp.csr_matrix(program.A)
    Ax = A @ x
    Qx = np.zeros_like(x) if program.Q is None else program.Q @ x
    objective = 0.5 * float(x @ Qx) + float(program.c @ x) + program.offset
    z = Qx + program.c - A.T @ row_duals
    gap = float(_complementarity(row_duals, Ax, program.row_lower, program.row_upper).sum())
    gap += float(_complementarity(z, x, program.col_lower, program.col_upper).sum())
    row_scale = 1.0 + abs(A) @ np.abs(x)
    row_violation = np.maximum(program.row_lower - Ax, 0.0) + np.maximum(
        Ax - program.row_upper, 0.0
    )
    col_violation = np.maximum(program.col_lower - x, 0.0) + np.maximum(x - program.col_upper, 0.0)
    infeasibility = max(
        float(np.nan_to_num(row_violation / row_scale).max(initial=0.0)),
        float(np.nan_to_num(col_violation / (1.0 + np.abs(x))).max(initial=0.0)),
    )
    scale = max(1.0, abs(objective), float(np.abs(program.c @ x)), 0.5 * float(abs(x @ Qx)))
    return gap / scale, infeasibility
