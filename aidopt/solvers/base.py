"""The solver-adapter contract (after CVXPY's ``Solver``) and the shared status vocabulary.

An adapter solves either a :class:`~aidopt.program.MatrixProgram` (the direct path) or a Pyomo
model (the algebraic path). Capabilities are class attributes checked *before* any solve;
availability is checked lazily with ``importlib.util.find_spec`` and the solver module is only
imported inside ``solve``. Infeasible/unbounded/limits are statuses, not exceptions; a native
failure is a :class:`~aidopt.exceptions.SolverError`, a licence refusal a
:class:`~aidopt.exceptions.SolverLicenseError`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.exceptions import SolverCapabilityError, SolverUnavailableError
from aidopt.program import MatrixProgram, ProblemClass

__all__ = ["SolveResult", "SolveStatus", "SolverAdapter"]


class SolveStatus(StrEnum):
    """Outcome of one solve, shared by every adapter (native codes map into this)."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self is SolveStatus.OPTIMAL


@dataclass(frozen=True, eq=False)
class SolveResult:
    """What an adapter returns.

    ``objective`` is the value of the returned point; ``bound`` a lower bound on the optimum that
    the solver proves (the dual objective / best bound; equal to ``objective`` within the solver's
    optimality tolerance at an optimal LP/QP solution), or None when it proves none.
    ``accuracy`` is the relative optimality gap the solver states for its answer (None: not
    stated); ``exact`` is False when the backend solved a different problem than the one asked
    (liblinear penalises the bias), so that purity of the clusters proves nothing. ``refine``
    holds solver options that would give a more accurate answer to the same problem (e.g. a
    smaller tolerance), or None when the solver cannot do better.
    """

    status: SolveStatus
    objective: float | None = None
    bound: float | None = None
    x: NDArray[np.float64] | None = None
    row_duals: NDArray[np.float64] | None = None
    basis: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
    seconds: float = 0.0
    iterations: int | None = None
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    accuracy: float | None = None
    exact: bool = True
    refine: dict[str, Any] | None = None


class SolverAdapter:
    """Base class: name, capabilities, lazy availability, and the two solve entry points."""

    NAME: ClassVar[str] = ""
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ()
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset()
    SUPPORTS_MATRIX: ClassVar[bool] = False
    INSTALL_HINT: ClassVar[str] = ""

    @property
    def name(self) -> str:
        return self.NAME

    def is_available(self) -> bool:
        """True when the modules it needs are importable (no import is done here)."""
        return all(importlib.util.find_spec(mod) is not None for mod in self.REQUIRED_MODULES)

    def check_available(self) -> None:
        if not self.is_available():
            raise SolverUnavailableError(
                f"Solver '{self.name}' is not available. {self.INSTALL_HINT}".strip()
            )

    @property
    def capabilities(self) -> frozenset[ProblemClass]:
        return self.SUPPORTS

    def supports(self, problem_class: ProblemClass) -> bool:
        return problem_class in self.capabilities

    def check_capability(self, problem_class: ProblemClass, alternatives: str = "") -> None:
        """Fail before solving when this solver cannot handle the problem class."""
        if not self.supports(problem_class):
            hint = f" Use one of: {alternatives}." if alternatives else ""
            raise SolverCapabilityError(
                f"Solver '{self.name}' cannot solve {problem_class.value} problems "
                f"(it handles {', '.join(sorted(p.value for p in self.capabilities))}).{hint}"
            )

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Solve a matrix-form program (only adapters with ``SUPPORTS_MATRIX``)."""
        raise SolverCapabilityError(f"Solver '{self.name}' has no direct matrix interface.")

    def solve_pyomo(
        self,
        model: Any,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Solve a Pyomo model in place (values are loaded into its variables)."""
        raise NotImplementedError
