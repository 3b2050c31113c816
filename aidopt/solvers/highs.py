"""HiGHS, the embedded default: direct matrix path through highspy, algebraic path through Pyomo.

HiGHS solves LP, convex QP and MILP; it has no MIQP (highspy 1.15 rejects a Hessian together
with integer columns), so MIQP models reach HiGHS only through aidopt's outer-approximation route.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from aidopt.exceptions import SolverError
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus

__all__ = ["HighsAdapter"]


def _status_map(highspy) -> dict[Any, SolveStatus]:
    st = highspy.HighsModelStatus
    return {
        st.kOptimal: SolveStatus.OPTIMAL,
        st.kInfeasible: SolveStatus.INFEASIBLE,
        st.kUnbounded: SolveStatus.UNBOUNDED,
        st.kUnboundedOrInfeasible: SolveStatus.INFEASIBLE,
        st.kTimeLimit: SolveStatus.TIME_LIMIT,
        st.kIterationLimit: SolveStatus.ITERATION_LIMIT,
        st.kSolutionLimit: SolveStatus.ITERATION_LIMIT,
    }


class HighsAdapter(SolverAdapter):
    NAME: ClassVar[str] = "highs"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("highspy",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset(
        {ProblemClass.LP, ProblemClass.QP, ProblemClass.MILP}
    )
    SUPPORTS_MATRIX: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install highspy"
    PYOMO_NAME: ClassVar[str] = "appsi_highs"

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
    ) -> SolveResult:
        self.check_available()
        self.check_capability(program.problem_class)
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", bool(verbose))
        if time_limit is not None:
            h.setOptionValue("time_limit", float(max(time_limit, 0.0)))
        for key, value in (options or {}).items():
            if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
                raise ValueError(f"HiGHS rejected the option {key!r} = {value!r}.")
        h.passModel(self._model(program, highspy))
        if program.start_basis is not None and program.problem_class is ProblemClass.LP:
            self._set_basis(h, highspy, program.start_basis)
        start = time.perf_counter()
        run_status = h.run()
        seconds = time.perf_counter() - start
        if run_status == highspy.HighsStatus.kError:
            raise SolverError(
                f"Solver 'highs' failed ({h.modelStatusToString(h.getModelStatus())}). "
                "Try another solver, or solve with verbose=True to see its log."
            )
        status = _status_map(highspy).get(h.getModelStatus(), SolveStatus.ERROR)
        info = h.getInfo()
        iterations = int(info.simplex_iteration_count) + max(int(info.ipm_iteration_count), 0)
        if status is not SolveStatus.OPTIMAL:
            return SolveResult(
                status=status,
                seconds=seconds,
                iterations=iterations,
                message=h.modelStatusToString(h.getModelStatus()),
            )
        sol = h.getSolution()
        x = np.asarray(sol.col_value, dtype=np.float64)
        objective = float(info.objective_function_value)
        if program.problem_class.has_integers:
            bound = float(info.mip_dual_bound)
        else:
            bound = objective
        basis = None
        if program.problem_class is ProblemClass.LP:
            hb = h.getBasis()
            if hb.valid:
                basis = (
                    np.fromiter(map(int, hb.col_status), dtype=np.int64, count=program.n_cols),
                    np.fromiter(map(int, hb.row_status), dtype=np.int64, count=program.n_rows),
                )
        return SolveResult(
            status=status,
            objective=objective,
            bound=bound,
            x=x,
            row_duals=np.asarray(sol.row_dual, dtype=np.float64) if sol.dual_valid else None,
            basis=basis,
            seconds=seconds,
            iterations=iterations,
            message="optimal",
        )

    def solve_pyomo(self, model, *, time_limit=None, verbose=False, options=None) -> SolveResult:
        from aidopt.solvers.pyomo import PyomoAdapter

        return PyomoAdapter(self.PYOMO_NAME).solve_pyomo(
            model, time_limit=time_limit, verbose=verbose, options=options
        )

    @staticmethod
    def _model(program: MatrixProgram, highspy):
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_ = program.n_cols
        lp.num_row_ = program.n_rows
        lp.col_cost_ = np.asarray(program.c, dtype=np.float64)
        lp.col_lower_ = np.clip(program.col_lower, -inf, inf)
        lp.col_upper_ = np.clip(program.col_upper, -inf, inf)
        lp.row_lower_ = np.clip(program.row_lower, -inf, inf)
        lp.row_upper_ = np.clip(program.row_upper, -inf, inf)
        lp.offset_ = float(program.offset)
        a = sp.csc_matrix(program.A)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        if program.integer is not None and np.any(program.integer):
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                for flag in program.integer
            ]
        if program.Q is None or program.Q.nnz == 0:
            return lp
        model = highspy.HighsModel()
        model.lp_ = lp
        q = sp.csc_matrix(sp.tril(program.Q))
        model.hessian_.dim_ = program.n_cols
        model.hessian_.format_ = highspy.HessianFormat.kTriangular
        model.hessian_.start_ = q.indptr
        model.hessian_.index_ = q.indices
        model.hessian_.value_ = q.data
        return model

    @staticmethod
    def _set_basis(h, highspy, start_basis) -> None:
        status = highspy.HighsBasisStatus
        lookup = [status(code) for code in range(5)]
        basis = highspy.HighsBasis()
        basis.col_status = [lookup[code] for code in start_basis[0]]
        basis.row_status = [lookup[code] for code in start_basis[1]]
        basis.valid = True
        h.setBasis(basis)
