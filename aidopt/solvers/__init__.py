"""Solver adapters: HiGHS, Gurobi, any Pyomo solver, and the structure solvers.

Each adapter solves problem classes (LP/QP/MILP/MIQP) through matrix programs or Pyomo models,
and/or the problem structures of :mod:`aidopt.structures`; it knows no model. Names are looked
up in :mod:`aidopt.registry` (``get_solver``), which also reads the entry point group
``aidopt.solvers``; any other name goes to Pyomo's ``SolverFactory``.
"""

from __future__ import annotations

from aidopt.registry import get_solver, solver_names
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus

__all__ = ["SolveResult", "SolveStatus", "SolverAdapter", "get_solver", "installed_solvers"]


def installed_solvers() -> list[str]:
    """Names of the registered solvers whose modules are importable, in preference order."""
    return [name for name in solver_names() if get_solver(name).is_available()]
