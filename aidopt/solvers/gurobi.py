"""Gurobi through gurobipy (matrix path) or Pyomo's ``gurobi_direct`` (algebraic path).

The licence that ships with the pip wheel is size-limited: 2,000 variables and 2,000 linear
constraints, and at most 200 variables once the model has quadratic terms. A model over the
limit raises :class:`~aidopt.exceptions.SolverLicenseError` naming the limit.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from aidopt.common.lazy import sparse as sp
from aidopt.common.native import silenced_stdout
from aidopt.exceptions import SolverError, SolverLicenseError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.pyomo_compile import solve_compiled
from aidopt.solvers.scaling import solve_equilibrated_if_continuous

__all__ = ["GurobiAdapter", "license_error"]

_SIZE_LIMIT_ERRNO = 10010


def license_error(exc: Exception, n_vars: int, n_cons: int) -> SolverLicenseError | None:
    """A :class:`SolverLicenseError` for Gurobi's size-limit refusal, else None."""
    errno = getattr(exc, "errno", None)
    if errno != _SIZE_LIMIT_ERRNO and "size-limited license" not in str(exc):
        return None
    return SolverLicenseError(
        f"Gurobi's size-limited licence refused a model with {n_vars} variables and {n_cons} "
        "constraints (the pip licence allows 2,000 variables and constraints, and 200 variables "
        "once the model has quadratic terms). Use a full Gurobi licence, or another solver "
        "(`aidopt solvers` lists them per model)."
    )


def _status_map(grb) -> dict[int, SolveStatus]:
    st = grb.Status
    return {
        st.OPTIMAL: SolveStatus.OPTIMAL,
        st.INFEASIBLE: SolveStatus.INFEASIBLE,
        st.INF_OR_UNBD: SolveStatus.INFEASIBLE,
        st.UNBOUNDED: SolveStatus.UNBOUNDED,
        st.TIME_LIMIT: SolveStatus.TIME_LIMIT,
        st.ITERATION_LIMIT: SolveStatus.ITERATION_LIMIT,
        st.NODE_LIMIT: SolveStatus.ITERATION_LIMIT,
        st.SOLUTION_LIMIT: SolveStatus.ITERATION_LIMIT,
        st.WORK_LIMIT: SolveStatus.TIME_LIMIT,
    }


class GurobiAdapter(SolverAdapter):
    NAME: ClassVar[str] = "gurobi"
    DESCRIPTION: ClassVar[str] = "Gurobi (pip licence: 2,000 vars/rows, 200 once quadratic)"
    SUPPORTS_PYOMO: ClassVar[bool] = True
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("gurobipy",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset(ProblemClass)
    SUPPORTS_MATRIX: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install 'aidopt[gurobi]' (or gurobipy)"
    PYOMO_NAME: ClassVar[str] = "gurobi_direct"

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        self.check_available()
        return solve_equilibrated_if_continuous(
            self._solve, program, time_limit=time_limit, verbose=verbose, options=options
        )

    def accurate_options(self, gap: float) -> dict[str, Any]:
        """MIPGap = gap; and the integrality tolerance tight: with the default IntFeasTol (1e-5)
        a binary may sit 1e-5 off 0/1, which a big-M turns into slack (measured on SSL-book
        data: an "optimum" 0.75 % below the true one)."""
        return {"MIPGap": gap, "MIPGapAbs": 0.1 * gap, "IntFeasTol": 1e-9, "IntegralityFocus": 1}

    def solve_pyomo(self, model, *, time_limit=None, verbose=False, options=None) -> SolveResult:
        """The Pyomo model compiled to a matrix program; values and duals loaded back."""
        return solve_compiled(  # Gurobi handles non-convex QPs: no convexity check
            self,
            model,
            check_convexity=False,
            time_limit=time_limit,
            verbose=verbose,
            options=options,
        )

    def _solve(self, program, *, time_limit, verbose, options) -> SolveResult:
        """Equilibrated continuous programs (Gurobi's tolerances are absolute too); integer
        programs as they are (scaling would interact with the big-M and IntFeasTol)."""
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", int(bool(verbose)))
        with silenced_stdout(not verbose):  # the licence banner
            env.start()
        try:
            model = gp.Model(env=env)
            self._load(model, program, gp)
            if time_limit is not None:
                model.Params.TimeLimit = max(float(time_limit), 0.0)
            for key, value in (options or {}).items():
                model.setParam(key, value)
            start = time.perf_counter()
            try:
                model.optimize()
            except gp.GurobiError as exc:
                lic = license_error(exc, program.n_cols, program.n_rows)
                if lic is not None:
                    raise lic from exc
                raise SolverError(
                    f"Solver 'gurobi' failed: {exc}. Try another solver, or verbose=True."
                ) from exc
            seconds = time.perf_counter() - start
            return self._result(model, program, gp, seconds)
        finally:
            env.dispose()

    @staticmethod
    def _load(model, program: MatrixProgram, gp) -> None:
        vtype = None
        if program.integer is not None and np.any(program.integer):
            vtype = np.where(program.integer, gp.GRB.INTEGER, gp.GRB.CONTINUOUS)
        x = model.addMVar(
            program.n_cols,
            lb=np.where(np.isfinite(program.col_lower), program.col_lower, -gp.GRB.INFINITY),
            ub=np.where(np.isfinite(program.col_upper), program.col_upper, gp.GRB.INFINITY),
            vtype=vtype if vtype is not None else gp.GRB.CONTINUOUS,
        )
        a = sp.csr_matrix(program.A)
        lo, hi = program.row_lower, program.row_upper
        eq = np.isfinite(lo) & np.isfinite(hi) & (lo == hi)
        ge = np.isfinite(lo) & ~eq
        le = np.isfinite(hi) & ~eq
        if eq.any():
            model.addMConstr(a[eq], x, "=", lo[eq])
        if ge.any():
            model.addMConstr(a[ge], x, ">", lo[ge])
        if le.any():
            model.addMConstr(a[le], x, "<", hi[le])
        objective = program.c @ x + program.offset
        if program.Q is not None and program.Q.nnz > 0:
            objective = objective + 0.5 * (x @ sp.csr_matrix(program.Q) @ x)
        model.setObjective(objective, gp.GRB.MINIMIZE)

    @staticmethod
    def _result(model, program: MatrixProgram, gp, seconds: float) -> SolveResult:
        status = _status_map(gp.GRB).get(model.Status, SolveStatus.ERROR)
        iterations = int(model.IterCount) if hasattr(model, "IterCount") else None
        if status is not SolveStatus.OPTIMAL:
            return SolveResult(
                status=status, seconds=seconds, iterations=iterations, message=str(model.Status)
            )
        x = np.asarray(model.getAttr("X", model.getVars()), dtype=np.float64)
        objective = float(model.ObjVal)
        bound = float(model.ObjBound) if model.IsMIP else objective
        row_duals = None
        if not model.IsMIP:
            # Gurobi orders constraints as added: equalities, then ≥, then ≤ rows.
            pi = np.asarray(model.getAttr("Pi", model.getConstrs()), dtype=np.float64)
            lo, hi = program.row_lower, program.row_upper
            eq = np.isfinite(lo) & np.isfinite(hi) & (lo == hi)
            ge = np.isfinite(lo) & ~eq
            le = np.isfinite(hi) & ~eq
            order = np.concatenate([np.flatnonzero(eq), np.flatnonzero(ge), np.flatnonzero(le)])
            row_duals = np.zeros(program.n_rows)
            np.add.at(row_duals, order, pi)  # a ranged row was added as one ≥ and one ≤ row
        refine: dict[str, float] | None = None
        if model.IsMIP:
            accuracy = float(model.Params.MIPGap)
        else:
            tolerances = {
                "OptimalityTol": float(model.Params.OptimalityTol),
                "FeasibilityTol": float(model.Params.FeasibilityTol),
                "BarConvTol": float(model.Params.BarConvTol),
            }
            accuracy = max(tolerances["OptimalityTol"], tolerances["FeasibilityTol"])
            if model.IsQP and int(model.Params.Method) in (-1, 2):
                # barrier has no crossover for a QP: its interior answer can be 1e-8 off where
                # the QP simplex (measured: an aggregated PU dual) lands on the optimal face
                refine = {"Method": 1}
            elif accuracy > 1e-9:  # Gurobi's floor for these tolerances
                refine = {
                    name: max(v / 100.0, 1e-9 if "Tol" in name else 0.0)
                    for name, v in tolerances.items()
                }
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
            refine=refine,
        )
