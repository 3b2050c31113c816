"""SCIP through PySCIPOpt (pip ``pyscipopt``: Apache-licensed, no size limit), on the matrix path.

A route for integer programs (MILP, MIQP): SCIP gives no reliable row duals once it presolves,
and AID's LP/QP models need them (LAD's primal solution *is* the dual of its program), so
continuous programs go to HiGHS, Gurobi or CPLEX. SCIP's objective is linear: the quadratic part
moves to an epigraph row, min t + cᵀx s.t. ½xᵀQx ≤ t, and the returned objective is recomputed
from x (the epigraph row holds only to SCIP's feasibility tolerance). Options are SCIP parameter
names, e.g. ``{"limits/gap": 1e-9}``.

Measured on S3VM's first aggregated problems (``aidopt bench s3vm --part routes``, docs/s3vm.md):
their objectives are ~1e-5 with loss weights ~1e2, so a column within SCIP's feasibility
tolerance of its bound (η_k ≥ 0 missed by 1e-8 at the default 1e-6) moves the objective by
percents: SCIP returned points just outside their bounds with an objective (and a bound) below
the exact optimum; at 1e-10 it gets closer but slower. A bound below the optimum keeps AID's
certificate sound (it is just not closed); CPLEX, Gurobi and HiGHS-OA reach the exact optimum.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import SolverError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.pyomo_compile import solve_compiled

__all__ = ["ScipAdapter"]

_INFINITY = 1e20  # SCIP's infinite bound
_STATUS = {
    "optimal": SolveStatus.OPTIMAL,
    "gaplimit": SolveStatus.OPTIMAL,  # stopped because the gap is within limits/gap
    "infeasible": SolveStatus.INFEASIBLE,
    "unbounded": SolveStatus.UNBOUNDED,
    "inforunbd": SolveStatus.INFEASIBLE,
    "timelimit": SolveStatus.TIME_LIMIT,
    "nodelimit": SolveStatus.ITERATION_LIMIT,
    "totalnodelimit": SolveStatus.ITERATION_LIMIT,
    "stallnodelimit": SolveStatus.ITERATION_LIMIT,
}


class ScipAdapter(SolverAdapter):
    NAME: ClassVar[str] = "scip"
    DESCRIPTION: ClassVar[str] = "SCIP via PySCIPOpt (MILP, MIQP; open source, no size limit)"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("pyscipopt",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset({ProblemClass.MILP, ProblemClass.MIQP})
    SUPPORTS_MATRIX: ClassVar[bool] = True
    SUPPORTS_PYOMO: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install 'aidopt[scip]' (or pyscipopt)"

    def accurate_options(self, gap: float) -> dict[str, Any]:
        """The relative gap = gap, the absolute one far below it (the tiny objectives of scaled
        S3VM problems), and the feasibility tolerance (which the epigraph row of the objective
        obeys) below the gap, down to SCIP's floor of 1e-10 (without GMP). Never lower
        ``numerics/epsilon`` too: measured, SCIP then returned a dual bound above the optimum."""
        return {
            "limits/gap": gap,
            "limits/absgap": 0.1 * gap,
            "numerics/feastol": min(1e-6, max(0.1 * gap, 1e-10)),
        }

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        """min ½xᵀQx + cᵀx + offset over the rows, bounds and integrality of ``program``."""
        self.check_available()
        self.check_capability(program.problem_class, "highs, gurobi, cplex")
        import pyscipopt

        model = pyscipopt.Model()
        if not verbose:
            model.hideOutput()
        x = _load(model, program, pyscipopt)
        if time_limit is not None:
            model.setParam("limits/time", max(float(time_limit), 0.0))
        for name, value in (options or {}).items():
            try:
                model.setParam(name, value)
            except (KeyError, LookupError, ValueError) as exc:
                raise SolverError(
                    f"Unknown or invalid SCIP parameter {name!r} (e.g. 'limits/gap'): {exc}"
                ) from exc
        start = time.perf_counter()
        model.optimize()
        seconds = time.perf_counter() - start
        return _result(model, x, program, seconds)

    def solve_pyomo(self, model, *, time_limit=None, verbose=False, options=None) -> SolveResult:
        """The Pyomo model compiled to a matrix program; values loaded back."""
        return solve_compiled(self, model, time_limit=time_limit, verbose=verbose, options=options)


def _load(model, program: MatrixProgram, pyscipopt) -> list:
    """Columns with bounds and types, the rows lo ≤ Ax ≤ hi, and the objective (epigraph t for
    the quadratic part)."""
    integer = program.integer if program.integer is not None else np.zeros(program.n_cols, bool)
    lower = np.maximum(program.col_lower, -_INFINITY)
    upper = np.minimum(program.col_upper, _INFINITY)
    x = [
        model.addVar(
            name=f"x{j}",
            vtype="I" if integer[j] else "C",
            lb=None if lower[j] <= -_INFINITY else float(lower[j]),
            ub=None if upper[j] >= _INFINITY else float(upper[j]),
        )
        for j in range(program.n_cols)
    ]
    rows = sp.csr_matrix(program.A)
    for i in range(program.n_rows):
        span = slice(rows.indptr[i], rows.indptr[i + 1])
        body = pyscipopt.quicksum(
            float(a) * x[j] for a, j in zip(rows.data[span], rows.indices[span], strict=True)
        )
        lo, hi = float(program.row_lower[i]), float(program.row_upper[i])
        if lo == hi:
            model.addCons(body == lo, name=f"r{i}")
        elif np.isfinite(lo) and np.isfinite(hi):
            model.addCons((body <= hi) >= lo, name=f"r{i}")
        elif np.isfinite(lo):
            model.addCons(body >= lo, name=f"r{i}")
        elif np.isfinite(hi):
            model.addCons(body <= hi, name=f"r{i}")
    objective = pyscipopt.quicksum(
        float(cj) * x[j] for j, cj in enumerate(np.asarray(program.c, float)) if cj != 0.0
    )
    if program.Q is not None and program.Q.nnz:
        q = sp.triu(sp.coo_matrix(program.Q)).tocoo()  # ½xᵀQx = Σ_{i<j} Q_ij x_i x_j + ½Σ Q_ii x_i²
        half = np.where(q.row == q.col, 0.5, 1.0) * q.data
        t = model.addVar(name="epigraph", lb=None, ub=None)
        quadratic = pyscipopt.quicksum(
            float(v) * x[i] * x[j] for v, i, j in zip(half, q.row, q.col, strict=True)
        )
        model.addCons(quadratic <= t, name="epigraph")
        objective = objective + t
    model.setObjective(objective, "minimize")
    return x


def _result(model, x: list, program: MatrixProgram, seconds: float) -> SolveResult:
    """SCIP's status as a :class:`SolveStatus`; the objective recomputed from the point, the
    bound SCIP's dual bound."""
    name = model.getStatus()
    status = _STATUS.get(name, SolveStatus.ERROR)
    nodes = int(model.getNNodes())
    if status is not SolveStatus.OPTIMAL:
        return SolveResult(status=status, seconds=seconds, iterations=nodes, message=name)
    if model.getNSols() == 0:
        raise SolverError(f"SCIP reported {name!r} without a solution.")
    values = np.array([model.getVal(v) for v in x], dtype=np.float64)
    integer = program.integer
    if integer is not None and integer.any():
        values[integer] = np.round(values[integer])
    objective = float(program.c @ values) + program.offset
    if program.Q is not None:
        objective += 0.5 * float(values @ (program.Q @ values))
    gap = float(model.getParam("limits/gap"))
    return SolveResult(
        status=status,
        objective=objective,
        bound=float(model.getDualbound()) + program.offset,
        x=values,
        seconds=seconds,
        iterations=nodes,
        message=name,
        accuracy=max(gap, 1e-9),
    )
