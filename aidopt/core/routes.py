"""How a model's aggregated problem reaches the solver the user named.

A solver name means one thing everywhere (:mod:`aidopt.core.registry`): ``highs``, ``gurobi`` and
any Pyomo name solve the model's *declared* problem — its matrix form (``interface="matrix"``, the
default when both sides have one) or its Pyomo model (``interface="pyomo"``); a structure solver
(``fn``, ``libsvm``, ``liblinear``, ``usmo``) solves one of the problem structures the model says
it can be written as; ``highs-oa`` solves a convex MIQP. A model whose aggregated solve is several
programs (``solve_procedure``) gets the user's solver as a function. Every mismatch is found here,
before the first solve, with a message that lists the solvers that would work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aidopt.common.deadline import deadline, remaining
from aidopt.core.contract import AggregatedModel, Previous
from aidopt.core.registry import check_solver_available, get_solver, solvers_for
from aidopt.exceptions import SolverCapabilityError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.structures import REFUSALS

__all__ = ["Route", "resolve_route", "solve_aggregated"]

#: (agg, previous, time_limit, extra options) → (solution or None, SolveResult)
Route = Callable[[Any, Previous | None, float | None, dict[str, Any]], tuple[Any, SolveResult]]


def _alternatives(model: AggregatedModel) -> str:
    names = ", ".join(solvers_for(type(model)))
    return f"{names}, or a Pyomo solver that handles {model.problem_class.value}"


def resolve_route(
    model: AggregatedModel,
    name: str,
    interface: str,
    options: dict[str, Any],
    verbose: bool,
) -> Route:
    """The route for ``model`` on solver ``name`` through ``interface`` (checked now)."""
    adapter = check_solver_available(name)
    structures = adapter.structures_taken(tuple(model.structures), model.structure_traits)
    has_procedure = type(model).solve_procedure is not AggregatedModel.solve_procedure
    if structures and has_procedure:  # the procedure hands the structures to the solver
        return _procedure_route(model, adapter, options, verbose)
    if structures:
        if interface != "auto":
            raise SolverCapabilityError(
                f"Solver '{adapter.name}' solves the {structures[0].title} the {model.name} "
                f"problem is written as; it has no {interface} interface. Use interface 'auto', "
                "or highs/gurobi/a Pyomo solver with the matrix or Pyomo interface."
            )
        return _structure_route(model, adapter, structures[0], options, verbose)
    if not adapter.supports(model.problem_class):
        if adapter.STRUCTURES:
            what = " and ".join(kind.title for kind in adapter.STRUCTURES)
            refused = sorted(adapter.REFUSED_TRAITS & model.structure_traits)
            why = (
                f"cannot take the {model.name} problem: {'; '.join(REFUSALS[t] for t in refused)}"
                if refused
                else f"solves a {what}; the {model.name} problem is not one"
            )
            raise SolverCapabilityError(
                f"Solver '{adapter.name}' {why}. Solvers for {model.name}: {_alternatives(model)}."
            )
        adapter.check_capability(model.problem_class, _alternatives(model))
    if has_procedure and adapter.SUPPORTS_MATRIX and interface != "pyomo":
        return _procedure_route(model, adapter, options, verbose)
    if has_procedure and not adapter.SUPPORTS_PYOMO:
        raise SolverCapabilityError(
            f"Solver '{adapter.name}' has neither a matrix nor a Pyomo interface for the "
            f"{model.name} model. Use one of: {_alternatives(model)}."
        )
    if interface == "matrix" and not adapter.SUPPORTS_MATRIX:
        raise SolverCapabilityError(
            f"Solver '{adapter.name}' has no matrix interface; use interface 'pyomo'."
        )
    return _declared_route(model, adapter, interface, options, verbose)


def _structure_route(model, adapter, kind, base, verbose) -> Route:
    def route(agg, previous, time_limit, extra):
        structure = model.to_structure(kind, agg, previous)
        answer, result = adapter.solve_structure(
            structure, time_limit=time_limit, verbose=verbose, options={**base, **extra}
        )
        if answer is None or result.status is not SolveStatus.OPTIMAL:
            return None, result
        return model.from_structure(kind, answer, agg), result

    return route


def _declared_route(model, adapter, interface, base, verbose) -> Route:
    use_matrix = interface != "pyomo" and adapter.SUPPORTS_MATRIX

    def route(agg, previous, time_limit, extra):
        options = {**base, **extra}
        program = model.matrix_program(agg, previous) if use_matrix else None
        if program is None:
            if interface == "matrix":
                raise SolverCapabilityError(
                    f"Model '{model.name}' has no matrix form; use interface 'pyomo'."
                )
            declared = model.build(agg)
            result = adapter.solve_pyomo(
                declared, time_limit=time_limit, verbose=verbose, options=options
            )
            if result.status is not SolveStatus.OPTIMAL:
                return None, result
            return model.extract(declared, agg), result
        result = adapter.solve_program(
            program, time_limit=time_limit, verbose=verbose, options=options
        )
        if result.status is not SolveStatus.OPTIMAL:
            return None, result
        solution = model.solution_from_program(result, agg)
        sign = program.meta.get("objective_sign", 1.0)  # −1: the program is −(a maximisation)
        value = None if result.objective is None else sign * result.objective
        return solution, replace(result, objective=value, bound=model.program_bound(result, agg))

    return route


class _SubSolve:
    """The user's solver as a function of a matrix program, for a model's solve procedure."""

    def __init__(self, adapter: SolverAdapter, options: dict[str, Any], verbose: bool) -> None:
        self.adapter, self.options, self.verbose = adapter, options, verbose

    def remaining(self) -> float | None:
        return remaining()

    def __call__(self, program: MatrixProgram, *, gap: float | None = None) -> SolveResult:
        options = {**(self.adapter.accurate_options(gap) if gap else {}), **self.options}
        return self.adapter.solve_program(
            program, time_limit=remaining(), verbose=self.verbose, options=options
        )

    def handles(self, kind: type) -> bool:
        return kind in self.adapter.STRUCTURES

    def structure(self, structure: Any, *, gap: float | None = None) -> tuple[Any, SolveResult]:
        options = {**(self.adapter.accurate_options(gap) if gap else {}), **self.options}
        return self.adapter.solve_structure(
            structure, time_limit=remaining(), verbose=self.verbose, options=options
        )

    def qp(self, program: MatrixProgram) -> SolveResult:
        """A continuous convex QP: on the user's solver when it solves QPs, else on HiGHS."""
        adapter = self.adapter
        if not (adapter.supports(ProblemClass.QP) and adapter.SUPPORTS_MATRIX):
            adapter = get_solver("highs")
        if adapter.NAME in ("highs", "highs-oa"):
            from aidopt.solvers.outer_approximation import solve_convex_qp

            return solve_convex_qp(program, remaining())
        return adapter.solve_program(program, time_limit=remaining(), verbose=False, options={})


def _procedure_route(model, adapter, base, verbose) -> Route:
    def route(agg, previous, time_limit, extra):
        solve = _SubSolve(adapter, {**base, **extra}, verbose)
        with deadline(time_limit):
            answer = model.solve_procedure(agg, solve, previous)
        assert answer is not None, "solve_procedure overridden but returned None"
        return answer

    return route


def solve_aggregated(
    model: AggregatedModel,
    agg: Any,
    solver: str | None = None,
    *,
    previous: Previous | None = None,
    time_limit: float | None = None,
    interface: str = "auto",
    options: dict[str, Any] | None = None,
    verbose: bool = False,
) -> tuple[Any, SolveResult]:
    """One aggregated problem on the named solver (default: the model's), outside a run:
    (solution or None, SolveResult). For tests, teaching and the benchmarks."""
    route = resolve_route(
        model, solver or model.solver_by_default(), interface, dict(options or {}), verbose
    )
    return route(agg, previous, time_limit, {})
