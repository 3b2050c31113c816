"""Solver adapters and the name → adapter registry.

``"highs"`` (embedded default) and ``"gurobi"`` have direct matrix interfaces; any other name is
passed to Pyomo's ``SolverFactory`` (``"pyomo:NAME"`` forces that for any name). Model-specific
solvers (``"fn"``, ``"libsvm"``, ...) are resolved by the model, not here.
"""

from __future__ import annotations

from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.gurobi import GurobiAdapter
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.pyomo import PyomoAdapter

__all__ = [
    "GENERIC_SOLVERS",
    "SolveResult",
    "SolveStatus",
    "SolverAdapter",
    "get_solver",
    "installed_solvers",
]

GENERIC_SOLVERS: dict[str, type[SolverAdapter]] = {"highs": HighsAdapter, "gurobi": GurobiAdapter}


def get_solver(name: str) -> SolverAdapter:
    """The adapter for a solver name: 'highs', 'gurobi', or a Pyomo solver name."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"A solver name must be a non-empty string, got {name!r}.")
    if name.startswith("pyomo:"):
        return PyomoAdapter(name.removeprefix("pyomo:"))
    adapter = GENERIC_SOLVERS.get(name.lower())
    return adapter() if adapter is not None else PyomoAdapter(name)


def installed_solvers() -> list[str]:
    """Names of the generic solvers whose modules are importable, in preference order."""
    return [name for name, cls in GENERIC_SOLVERS.items() if cls().is_available()]
