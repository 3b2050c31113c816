"""Solver adapters: HiGHS, Gurobi, CPLEX, SCIP, any Pyomo solver, and the structure solvers.

Each adapter solves problem classes (LP/QP/MILP/MIQP) through matrix programs
(:mod:`~aidopt.solvers.program`) or Pyomo models, and/or the problem structures of
:mod:`~aidopt.solvers.structures`; it knows no model. Names are looked up in
:mod:`aidopt.core.registry` (``get_solver``), which also reads the entry point group
``aidopt.solvers``; any other name goes to Pyomo's ``SolverFactory``.
"""

from __future__ import annotations

from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus

__all__ = ["SolveResult", "SolveStatus", "SolverAdapter"]
