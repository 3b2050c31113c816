"""Any solver Pyomo can reach, by its Pyomo name (the algebraic path).

The aggregated model is the Pyomo ``ConcreteModel`` the model file declares; this adapter hands
it to ``pyomo.environ.SolverFactory(name)``, maps the termination condition into
:class:`~aidopt.solvers.base.SolveStatus` and loads the solution into the model's variables.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from aidopt.exceptions import SolverError, SolverUnavailableError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import ProblemClass

__all__ = ["PyomoAdapter"]

_ALL = frozenset(ProblemClass)
_NO_MIQP = frozenset({ProblemClass.LP, ProblemClass.QP, ProblemClass.MILP})
_LINEAR = frozenset({ProblemClass.LP, ProblemClass.MILP})
_CONTINUOUS = frozenset({ProblemClass.LP, ProblemClass.QP})

# What the common Pyomo solvers handle, how each names its time limit, and the accuracy their
# default tolerances state (feasibility/optimality tolerance for LP/QP, relative gap for MIP).
_KNOWN: dict[str, tuple[frozenset[ProblemClass], str | None, float, float]] = {
    "highs": (_NO_MIQP, "time_limit", 1e-7, 1e-4),
    "appsi_highs": (_LINEAR, "time_limit", 1e-7, 1e-4),
    "gurobi": (_ALL, "TimeLimit", 1e-6, 1e-4),
    "gurobi_direct": (_ALL, "TimeLimit", 1e-6, 1e-4),
    "gurobi_persistent": (_ALL, "TimeLimit", 1e-6, 1e-4),
    "gurobi_direct_v2": (_ALL, "TimeLimit", 1e-6, 1e-4),
    "cplex": (_ALL, "timelimit", 1e-6, 1e-4),
    "cplex_direct": (_ALL, "timelimit", 1e-6, 1e-4),
    "xpress_direct": (_ALL, "maxtime", 1e-6, 1e-4),
    "scip": (_ALL, "limits/time", 1e-6, 1e-4),
    "glpk": (_LINEAR, "tmlim", 1e-7, 1e-4),
    "cbc": (_LINEAR, "sec", 1e-7, 1e-4),
    "ipopt": (_CONTINUOUS, "max_cpu_time", 1e-8, 1e-8),
}
_UNKNOWN = (_ALL, None, None, None)


class PyomoAdapter(SolverAdapter):
    """A Pyomo solver by name; capabilities from a table of the common ones (else assumed all)."""

    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("pyomo",)
    SUPPORTS_PYOMO: ClassVar[bool] = True

    def __init__(self, pyomo_name: str) -> None:
        self.pyomo_name = pyomo_name

    @property
    def name(self) -> str:
        return self.pyomo_name

    @property
    def capabilities(self) -> frozenset[ProblemClass]:
        return _KNOWN.get(self.pyomo_name, _UNKNOWN)[0]

    def is_available(self) -> bool:
        if not super().is_available():
            return False
        import logging

        import pyomo.environ as pyo

        quiet = logging.getLogger("pyomo")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # an unknown name makes Pyomo log a warning
        try:
            return bool(pyo.SolverFactory(self.pyomo_name).available(exception_flag=False))
        except Exception:  # an unknown name makes some Pyomo versions raise
            return False
        finally:
            quiet.setLevel(level)

    def check_available(self) -> None:
        if not self.is_available():
            raise SolverUnavailableError(
                f"Solver '{self.pyomo_name}' is not available: it is not one of aidopt's "
                "solvers (`aidopt solvers` lists them) and Pyomo cannot run it here (not "
                "installed, or not a Pyomo solver name: `pyomo help --solvers`)."
            )

    def solve_pyomo(
        self,
        model: Any,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        self.check_available()
        import pyomo.environ as pyo
        from pyomo.opt import TerminationCondition as TC

        solver = pyo.SolverFactory(self.pyomo_name)
        opts = dict(options or {})
        _, limit_name, lp_accuracy, mip_accuracy = _KNOWN.get(self.pyomo_name, _UNKNOWN)
        if time_limit is not None and limit_name is not None:
            opts.setdefault(limit_name, max(float(time_limit), 0.0))
        start = time.perf_counter()
        try:
            results = solver.solve(model, load_solutions=False, tee=verbose, options=opts)
        except Exception as exc:
            from aidopt.solvers.gurobi import license_error

            lic = license_error(exc, model.nvariables(), model.nconstraints())
            if lic is not None:
                raise lic from exc
            raise SolverError(
                f"Solver '{self.pyomo_name}' failed: {exc}. Try another solver, or verbose=True."
            ) from exc
        seconds = time.perf_counter() - start
        condition = results.solver.termination_condition
        status = {
            TC.optimal: SolveStatus.OPTIMAL,
            TC.globallyOptimal: SolveStatus.OPTIMAL,
            TC.infeasible: SolveStatus.INFEASIBLE,
            TC.infeasibleOrUnbounded: SolveStatus.INFEASIBLE,
            TC.unbounded: SolveStatus.UNBOUNDED,
            TC.maxTimeLimit: SolveStatus.TIME_LIMIT,
            TC.maxIterations: SolveStatus.ITERATION_LIMIT,
            TC.maxEvaluations: SolveStatus.ITERATION_LIMIT,
        }.get(condition, SolveStatus.ERROR)
        if status is not SolveStatus.OPTIMAL:
            return SolveResult(status=status, seconds=seconds, message=str(condition))
        model.solutions.load_from(results)
        objective = float(pyo.value(next(model.component_data_objects(pyo.Objective, active=True))))
        bound = _finite(results.problem.lower_bound)
        if bound is None and not _has_discrete(model):
            bound = objective  # an optimal LP/QP: the optimum is its own bound
        return SolveResult(
            status=status,
            objective=objective,
            bound=bound,
            seconds=seconds,
            message=str(condition),
            accuracy=mip_accuracy if _has_discrete(model) else lp_accuracy,
        )


def _has_discrete(model: Any) -> bool:
    import pyomo.environ as pyo

    return any(not v.is_continuous() for v in model.component_data_objects(pyo.Var))


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if abs(v) < float("inf") else None
