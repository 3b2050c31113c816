"""HiGHS, the embedded default, through highspy: matrix programs, and Pyomo models compiled to one.

HiGHS solves LP, convex QP and MILP; it has no MIQP (highspy rejects a Hessian together with
integer columns), so MIQP models reach HiGHS only through aidopt's outer-approximation route.

Every program is equilibrated first (:mod:`aidopt.solvers.scaling`: exact power-of-two row,
column and objective scaling), because HiGHS's tolerances are absolute: data at 1e-9 or 1e9
otherwise come back "optimal" and wrong. A Pyomo model (the algebraic route) is compiled to a
matrix program by :mod:`aidopt.solvers.pyomo_compile` — Pyomo's own ``appsi_highs`` has no
quadratic objectives — and the answer, with the constraint duals, is loaded back into it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from aidopt.common.lazy import sparse as sp
from aidopt.common.native import silenced_stdout
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.kkt import kkt_error
from aidopt.solvers.polish import polish_qp
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.pyomo_compile import solve_compiled
from aidopt.solvers.scaling import equilibrate

__all__ = ["HighsAdapter"]

_WELL_SCALED = 10.0  # a QP whose equilibration factors stay within 2^±10 is solved as given first
_QP_STALL_SECONDS = 60.0  # a QP solve making no progress is stopped after this (no user limit)
_KKT_ACCEPT = 1e-5  # relative complementarity gap / infeasibility up to which a QP answer is kept
# statuses after which a QP is tried in its other form (HiGHS 1.15/1.16 also report a bounded
# convex QP as "unbounded" now and then)
_RETRY = (
    SolveStatus.ERROR,
    SolveStatus.TIME_LIMIT,
    SolveStatus.ITERATION_LIMIT,
    SolveStatus.UNBOUNDED,
)


def _kkt(program: MatrixProgram, result: SolveResult) -> float:
    """The larger of the relative complementarity gap and infeasibility of a QP answer (inf
    without duals or with non-finite values)."""
    if result.x is None or result.row_duals is None:
        return float("inf")
    if not (np.all(np.isfinite(result.x)) and np.all(np.isfinite(result.row_duals))):
        return float("inf")
    return max(kkt_error(program, result.x, result.row_duals))


def _polished(program: MatrixProgram, error: float, result: SolveResult) -> SolveResult:
    """The answer re-solved on its face (:mod:`aidopt.solvers.polish`) when that satisfies the
    optimality conditions better, else the answer as HiGHS gave it."""
    if error == 0.0 or result.x is None:
        return result
    polished = polish_qp(program, result.x)
    if polished is None:
        return result
    x, duals = polished
    candidate = replace(result, x=x, row_duals=duals, objective=program.objective_value(x))
    return candidate if _kkt(program, candidate) < error else result


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
    DESCRIPTION: ClassVar[str] = "HiGHS (embedded): LP, convex QP, MILP; matrix programs, Pyomo"
    SUPPORTS_PYOMO: ClassVar[bool] = True
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("highspy",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset(
        {ProblemClass.LP, ProblemClass.QP, ProblemClass.MILP}
    )
    SUPPORTS_MATRIX: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install highspy"

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
        scaled = equilibrate(program)
        if program.problem_class is not ProblemClass.QP:
            return scaled.unscale_result(
                self._solve(scaled.program, time_limit=time_limit, verbose=verbose, options=options)
            )
        # HiGHS's active-set QP solver sometimes stalls, fails, or returns an "optimal" answer
        # that is not, on one of two equivalent programs and not on the other (measured on 424
        # S3VM QPs: the equilibrated form 34 times 0.01-300 % above the optimum, the form as
        # given never; an aggregated PU QP stalls when equilibrated). So: the better-scaled form
        # first, its answer checked against the optimality conditions in original units
        # (aidopt.solvers.kkt), the other form when it fails that check or stalls; the better
        # answer is kept. A stall is capped (iterations and time) even without a time limit.
        forms = [scaled, None] if scaled.spread > _WELL_SCALED else [None, scaled]
        opts_in = dict(options or {})
        opts = {"qp_iteration_limit": max(10_000, 100 * (program.n_rows + program.n_cols))}
        opts.update(opts_in)
        start, failures = time.perf_counter(), []
        best: tuple[float, SolveResult] | None = None
        result: SolveResult | None = None
        for form in forms:
            left = None if time_limit is None else time_limit - (time.perf_counter() - start)
            if left is not None and left <= 0:
                break
            cap = _QP_STALL_SECONDS if left is None else min(left, _QP_STALL_SECONDS)
            target = program if form is None else form.program
            result = self._solve(target, time_limit=cap, verbose=verbose, options=opts)
            if form is not None:
                result = form.unscale_result(result)
            what = "equilibrated" if form is not None else "as given"
            if result.status is SolveStatus.OPTIMAL:
                error = _kkt(program, result)
                if best is None or error < best[0]:
                    best = (error, result)
                if error <= _KKT_ACCEPT:
                    break
                failures.append(f"{what}: optimality conditions off by {error:.2g}")
                continue
            user_limit = (result.status is SolveStatus.TIME_LIMIT and cap != _QP_STALL_SECONDS) or (
                result.status is SolveStatus.ITERATION_LIMIT and "qp_iteration_limit" in opts_in
            )
            if user_limit or result.status not in _RETRY:
                return result if best is None else best[1]
            failures.append(f"{what}: {result.message or result.status.value}")
        if best is not None:
            return _polished(program, *best)
        if (
            result is not None
            and len(failures) == len(forms)
            and result.status is SolveStatus.UNBOUNDED
        ):
            return result
        return SolveResult(
            status=SolveStatus.ERROR if failures else SolveStatus.TIME_LIMIT,
            seconds=time.perf_counter() - start,
            message="HiGHS's QP solver stalled or failed on the program "
            + ("; ".join(failures) or "before the time limit")
            + f" (a stall is stopped after {_QP_STALL_SECONDS:g} s)",
        )

    def accurate_options(self, gap: float) -> dict[str, Any]:
        return {"mip_rel_gap": gap, "mip_abs_gap": 0.1 * gap}

    def solve_pyomo(self, model, *, time_limit=None, verbose=False, options=None) -> SolveResult:
        """The Pyomo model compiled to a matrix program; values and duals loaded back."""
        return solve_compiled(self, model, time_limit=time_limit, verbose=verbose, options=options)

    def _solve(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None,
        verbose: bool,
        options: dict[str, Any] | None,
    ) -> SolveResult:
        import highspy

        with silenced_stdout(not verbose, discard=True):  # highspy ≥ 1.16 prints a banner here
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
            return SolveResult(
                status=SolveStatus.ERROR,
                seconds=seconds,
                message=f"HiGHS failed ({h.modelStatusToString(h.getModelStatus())})",
            )
        status = _status_map(highspy).get(h.getModelStatus(), SolveStatus.ERROR)
        info = h.getInfo()
        iterations = sum(
            max(int(getattr(info, name, 0)), 0)
            for name in ("simplex_iteration_count", "ipm_iteration_count", "qp_iteration_count")
        )
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
            accuracy=self._accuracy(h, program.problem_class),
            refine=self._refine(h, program.problem_class),
        )

    @staticmethod
    def _refine(h, problem_class: ProblemClass) -> dict[str, float] | None:
        """Tolerances 100 times tighter (down to 1e-10), or None at the floor."""
        if problem_class.has_integers:
            return None
        names = ("primal_feasibility_tolerance", "dual_feasibility_tolerance")
        current = [HighsAdapter._option(h, name) for name in names]
        if max(current) <= 1e-10:
            return None
        return {name: max(value / 100.0, 1e-10) for name, value in zip(names, current, strict=True)}

    @staticmethod
    def _option(h, name: str) -> float:
        value = h.getOptionValue(name)  # highspy ≥ 1.8 returns (status, value)
        return float(value[-1] if isinstance(value, tuple) else value)

    @staticmethod
    def _accuracy(h, problem_class: ProblemClass) -> float:
        """The accuracy HiGHS states: its feasibility tolerances (relative to the scaled
        problem), or the relative MIP gap it was asked for."""
        option = HighsAdapter._option
        if problem_class.has_integers:
            return option(h, "mip_rel_gap")
        return max(
            option(h, "primal_feasibility_tolerance"), option(h, "dual_feasibility_tolerance")
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
