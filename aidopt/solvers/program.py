"""A mathematical program in matrix form: the direct path from a model to a solver.

    min  ½ xᵀQx + cᵀx + offset
    s.t. row_lower ≤ A x ≤ row_upper
         col_lower ≤ x ≤ col_upper
         x_j ∈ ℤ for j with integer[j]

Models that declare their aggregated problem in Pyomo may also give it in this form (built from
arrays in O(nnz), no per-term Python objects); tests check that both give the same optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import sparse as sp

__all__ = ["BASIS_BASIC", "BASIS_LOWER", "BASIS_UPPER", "MatrixProgram", "ProblemClass"]

BASIS_LOWER, BASIS_BASIC, BASIS_UPPER = 0, 1, 2  #: basis status codes of a column or row


class ProblemClass(StrEnum):
    """What a solver must be able to handle."""

    LP = "LP"
    QP = "QP"
    MILP = "MILP"
    MIQP = "MIQP"

    @property
    def has_integers(self) -> bool:
        return self in (ProblemClass.MILP, ProblemClass.MIQP)


@dataclass(frozen=True, eq=False)
class MatrixProgram:
    """Arrays of one LP/QP/MILP/MIQP, and optional warm starts.

    ``start_basis`` = (column statuses, row statuses) in the codes :data:`BASIS_LOWER`,
    :data:`BASIS_BASIC`, :data:`BASIS_UPPER` (3 zero, 4 nonbasic: HiGHS's numbering), a simplex
    warm start; ``start_point`` a feasible point (a MIP start). Solvers that cannot use them
    ignore them.
    """

    c: NDArray[np.float64]
    A: sp.csc_matrix
    row_lower: NDArray[np.float64]
    row_upper: NDArray[np.float64]
    col_lower: NDArray[np.float64]
    col_upper: NDArray[np.float64]
    Q: sp.csc_matrix | None = None
    integer: NDArray[np.bool_] | None = None
    offset: float = 0.0
    start_basis: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
    start_point: NDArray[np.float64] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n_rows, n_cols = self.A.shape
        for name, arr, size in (
            ("c", self.c, n_cols),
            ("col_lower", self.col_lower, n_cols),
            ("col_upper", self.col_upper, n_cols),
            ("row_lower", self.row_lower, n_rows),
            ("row_upper", self.row_upper, n_rows),
        ):
            if np.shape(arr) != (size,):
                raise ValueError(f"{name} has shape {np.shape(arr)}, expected ({size},)")
        if self.Q is not None and self.Q.shape != (n_cols, n_cols):
            raise ValueError(f"Q has shape {self.Q.shape}, expected ({n_cols}, {n_cols})")

    @property
    def n_cols(self) -> int:
        return int(self.A.shape[1])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def problem_class(self) -> ProblemClass:
        quadratic = self.Q is not None and self.Q.nnz > 0
        integer = self.integer is not None and bool(np.any(self.integer))
        if integer:
            return ProblemClass.MIQP if quadratic else ProblemClass.MILP
        return ProblemClass.QP if quadratic else ProblemClass.LP

    def objective_value(self, x: NDArray[np.float64]) -> float:
        """½ xᵀQx + cᵀx + offset at x."""
        value = float(self.c @ x) + self.offset
        if self.Q is not None:
            value += 0.5 * float(x @ (self.Q @ x))
        return value
