"""IBM CPLEX through its Python API (pip ``cplex``: the Community Edition), on the matrix path.

The pip wheel's Community Edition solves problems of at most 1,000 variables and 1,000
constraints; above, CPLEX refuses at the start of the solve (error 1016) and the adapter raises
:class:`~aidopt.exceptions.SolverLicenseError` naming the limit, which AID reports as
``solver_limit``. CPLEX's objective form is the same as
:class:`~aidopt.solvers.program.MatrixProgram`'s, ½xᵀQx + cᵀx. Options are CPLEX parameter paths,
e.g. ``{"mip.tolerances.mipgap": 1e-9}``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, ClassVar

import numpy as np

from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import SolverError, SolverLicenseError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.pyomo_compile import solve_compiled
from aidopt.solvers.scaling import solve_equilibrated_if_continuous

__all__ = ["CplexAdapter"]

_COMMUNITY_LIMIT = 1016  # CPXERR_RESTRICTED_VERSION: the Community Edition's size limit
_INFINITY = 1e20  # CPLEX's infinite bound


class CplexAdapter(SolverAdapter):
    NAME: ClassVar[str] = "cplex"
    DESCRIPTION: ClassVar[str] = "IBM CPLEX (pip Community Edition: 1,000 vars and rows)"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("cplex",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset(ProblemClass)
    SUPPORTS_MATRIX: ClassVar[bool] = True
    SUPPORTS_PYOMO: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install 'aidopt[cplex]' (or cplex)"

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """Continuous programs equilibrated first (CPLEX's tolerances are absolute), integer
        programs as they are."""
        self.check_available()
        return solve_equilibrated_if_continuous(
            self._solve, program, time_limit=time_limit, verbose=verbose, options=options
        )

    def accurate_options(self, gap: float) -> dict[str, Any]:
        """The relative MIP gap = gap, the absolute one far below it (its default, 1e-6, ends a
        search early on the tiny objectives of scaled S3VM problems), integrality to 1e-9."""
        return {
            "mip.tolerances.mipgap": gap,
            "mip.tolerances.absmipgap": 0.1 * gap,
            "mip.tolerances.integrality": 1e-9,
        }

    def solve_pyomo(self, model, *, time_limit=None, verbose=False, options=None) -> SolveResult:
        """The Pyomo model compiled to a matrix program; values and duals loaded back."""
        return solve_compiled(  # CPLEX handles non-convex QPs: no convexity check
            self,
            model,
            check_convexity=False,
            time_limit=time_limit,
            verbose=verbose,
            options=options,
        )

    def _solve(self, program: MatrixProgram, *, time_limit, verbose, options) -> SolveResult:
        import cplex

        if np.any(program.row_lower > program.row_upper):  # CPLEX reads a negative range as
            return SolveResult(  # the interval [hi, lo]: say what it is instead
                status=SolveStatus.INFEASIBLE, message="a row's lower bound exceeds its upper"
            )
        problem = cplex.Cplex()
        try:
            for stream in ("results", "log", "warning", "error"):
                getattr(problem, f"set_{stream}_stream")(sys.stdout if verbose else None)
            _load(problem, program, cplex)
            if time_limit is not None:
                problem.parameters.timelimit.set(max(float(time_limit), 0.0))
            for path, value in (options or {}).items():
                _parameter(problem, path).set(value)
            start = time.perf_counter()
            try:
                problem.solve()
            except cplex.exceptions.CplexSolverError as exc:
                if exc.args[2] == _COMMUNITY_LIMIT:
                    raise SolverLicenseError(
                        f"CPLEX's Community Edition refused a problem of {program.n_cols} "
                        f"variables and {program.n_rows} constraints (it allows 1,000 of each). "
                        "Use a full CPLEX licence, or solver='highs'."
                    ) from exc
                raise SolverError(f"Solver 'cplex' failed: {exc}") from exc
            return _result(problem, program, time.perf_counter() - start)
        finally:
            problem.end()


def _parameter(problem, path: str):
    """A CPLEX parameter by its dotted path ("mip.tolerances.mipgap"), or a named error."""
    node = problem.parameters
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            raise SolverError(f"Unknown CPLEX parameter {path!r} (e.g. 'mip.tolerances.mipgap').")
    return node


def _bounds(values: np.ndarray) -> list[float]:
    return np.clip(values, -_INFINITY, _INFINITY).tolist()


def _load(problem, program: MatrixProgram, cplex) -> None:
    """Columns, rows (E, G, L, or R = [lo, hi]) and the objective ½xᵀQx + cᵀx."""
    n = program.n_cols
    integer = program.integer
    problem.objective.set_sense(problem.objective.sense.minimize)
    problem.variables.add(
        obj=np.asarray(program.c, dtype=float).tolist(),
        lb=_bounds(program.col_lower),
        ub=_bounds(program.col_upper),
        types="".join(np.where(integer, "I", "C")) if integer is not None and integer.any() else "",
    )
    lo, hi = program.row_lower, program.row_upper
    has_lo, has_hi = np.isfinite(lo), np.isfinite(hi)
    senses = np.where(has_lo & has_hi, np.where(lo == hi, "E", "R"), np.where(has_lo, "G", "L"))
    rhs = np.where(has_lo, lo, np.where(has_hi, hi, _INFINITY))
    ranges = np.where(senses == "R", hi - lo, 0.0)
    problem.linear_constraints.add(
        senses="".join(senses), rhs=rhs.tolist(), range_values=ranges.tolist()
    )
    a = sp.coo_matrix(program.A)
    if a.nnz:
        problem.linear_constraints.set_coefficients(
            list(zip(a.row.tolist(), a.col.tolist(), a.data.tolist(), strict=True))
        )
    if program.Q is not None and program.Q.nnz > 0:
        q = sp.csc_matrix(program.Q)
        problem.objective.set_quadratic(
            [
                cplex.SparsePair(
                    ind=q.indices[q.indptr[j] : q.indptr[j + 1]].tolist(),
                    val=q.data[q.indptr[j] : q.indptr[j + 1]].tolist(),
                )
                for j in range(n)
            ]
        )


def _result(problem, program: MatrixProgram, seconds: float) -> SolveResult:
    solution = problem.solution
    code = solution.get_status()
    status = _status(solution.status, code)
    iterations = int(solution.progress.get_num_iterations())
    mip = problem.get_problem_type() in (
        problem.problem_type.MILP,
        problem.problem_type.MIQP,
    )
    if status is not SolveStatus.OPTIMAL:
        message = solution.get_status_string()
        return SolveResult(status=status, seconds=seconds, iterations=iterations, message=message)
    x = np.asarray(solution.get_values(), dtype=np.float64)
    objective = float(solution.get_objective_value()) + program.offset
    bound = float(solution.MIP.get_best_objective()) + program.offset if mip else objective
    row_duals = None if mip else np.asarray(solution.get_dual_values(), dtype=np.float64)
    if mip:
        accuracy = float(problem.parameters.mip.tolerances.mipgap.get())
    else:
        accuracy = max(
            float(problem.parameters.simplex.tolerances.optimality.get()),
            float(problem.parameters.simplex.tolerances.feasibility.get()),
        )
    return SolveResult(
        status=status,
        objective=objective,
        bound=bound,
        x=x,
        row_duals=row_duals,
        seconds=seconds,
        iterations=iterations,
        message="optimal",
        accuracy=accuracy,
    )


def _status(codes, code: int) -> SolveStatus:
    """CPLEX's status code as a :class:`SolveStatus` (a solution within the gap is optimal)."""
    table = {
        SolveStatus.OPTIMAL: ("optimal", "optimal_tolerance", "MIP_optimal"),
        SolveStatus.INFEASIBLE: ("infeasible", "MIP_infeasible", "infeasible_or_unbounded"),
        SolveStatus.UNBOUNDED: ("unbounded", "MIP_unbounded"),
        SolveStatus.TIME_LIMIT: (
            "abort_time_limit",
            "MIP_time_limit_feasible",
            "MIP_time_limit_infeasible",
            "abort_dettime_limit",
        ),
        SolveStatus.ITERATION_LIMIT: (
            "abort_iteration_limit",
            "node_limit_feasible",
            "node_limit_infeasible",
        ),
    }
    for status, names in table.items():
        if any(code == getattr(codes, name) for name in names):
            return status
    return SolveStatus.ERROR
