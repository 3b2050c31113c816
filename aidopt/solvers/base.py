"""The solver-adapter contract (after CVXPY's ``Solver``) and the shared status vocabulary.

An adapter solves either a :class:`~aidopt.solvers.program.MatrixProgram` (the direct path) or a
Pyomo model (the algebraic path). Capabilities are class attributes checked *before* any solve;
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
from aidopt.solvers.program import MatrixProgram, ProblemClass

__all__ = ["SolveResult", "SolveStatus", "SolverAdapter", "check_options", "limit_result"]


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


def limit_result(message: str, seconds: float, iterations: int | None) -> SolveResult:
    """No answer from a structure solver stopped by a limit: ``time_limit`` for the message
    "time limit", else ``iteration_limit``."""
    status = SolveStatus.TIME_LIMIT if message == "time limit" else SolveStatus.ITERATION_LIMIT
    return SolveResult(status, seconds=seconds, iterations=iterations, message=message)


class SolverAdapter:
    """Base class: name, capabilities, lazy availability, and the three solve entry points.

    A solver handles problem classes (``SUPPORTS``: LP, QP, MILP, MIQP) through a matrix program
    (``SUPPORTS_MATRIX``) and/or a Pyomo model (``SUPPORTS_PYOMO``), and/or problem structures
    (``STRUCTURES``, :mod:`aidopt.solvers.structures`) that it exploits. It knows no model.
    """

    NAME: ClassVar[str] = ""
    DESCRIPTION: ClassVar[str] = ""
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ()
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset()
    SUPPORTS_MATRIX: ClassVar[bool] = False
    SUPPORTS_PYOMO: ClassVar[bool] = False
    STRUCTURES: ClassVar[frozenset[type]] = frozenset()
    #: traits of a structure instance it cannot take (:data:`aidopt.solvers.structures.GRAM`, ...)
    REFUSED_TRAITS: ClassVar[frozenset[str]] = frozenset()
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

    def solve_structure(
        self,
        structure: Any,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, SolveResult]:
        """Solve a problem structure; returns (the structure's solution or None, SolveResult)."""
        raise SolverCapabilityError(
            f"Solver '{self.name}' does not solve a {type(structure).__name__}."
        )

    def accurate_options(self, gap: float) -> dict[str, Any]:
        """Solver options for a relative optimality gap of ``gap`` (a MIP solved "exactly"):
        the solver-neutral request of a model's solve procedure, in this solver's words."""
        return {}

    def handles(
        self,
        problem_class: ProblemClass,
        structures: tuple[type, ...] = (),
        traits: frozenset[str] = frozenset(),
    ) -> bool:
        """True when this solver can take a model's aggregated problem: one of its structures
        (with no trait it refuses), or its problem class through a matrix program or a Pyomo
        model."""
        return bool(self.structures_taken(structures, traits)) or self.supports(problem_class)

    def structures_taken(
        self, structures: tuple[type, ...], traits: frozenset[str] = frozenset()
    ) -> list[type]:
        """The structures of a model (with these traits) that this solver solves."""
        if self.REFUSED_TRAITS & traits:
            return []
        return [kind for kind in structures if kind in self.STRUCTURES]


def check_options(options: dict[str, Any] | None, allowed: frozenset[str], solver: str) -> dict:
    """The options, or InvalidParameterError naming the unknown ones (libraries without an
    option API of their own)."""
    chosen = dict(options or {})
    unknown = sorted(set(chosen) - allowed)
    if unknown:
        from aidopt.exceptions import InvalidParameterError

        raise InvalidParameterError(
            f"Unknown {solver} option(s) {unknown}: the solver_options of '{solver.lower()}' "
            f"must be among {sorted(allowed)}."
        )
    return chosen
