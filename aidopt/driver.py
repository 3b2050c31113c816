"""The generic AID driver (Algorithm 1 of Park & Klabjan), knowing nothing about any model.

    create clusters C^0 and aggregated data
    repeat
        solve the aggregated problem                       → F^t (lower bound when valid)
        evaluate the solution on every original entry      → E^t (upper bound), regimes
        stop if every cluster is pure (certified optimal), or gap ≤ tol, or a limit is hit
        split the impure clusters by regime, re-aggregate

Bounds: E_best = min_{s≤t} E^s; L = max_{s≤t} F^s (each F^s is a valid lower bound when the
model says so and the solver proves it); gap = (E_best − L) / |E_best|.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aidopt import __version__
from aidopt.contract import AggregatedModel, Previous
from aidopt.exceptions import (
    AidoptError,
    ConvergenceWarning,
    InfeasibleSettingError,
    SolverError,
    SolverLicenseError,
)
from aidopt.log import format_record, iteration_header, logger, verbosity
from aidopt.partition import Partition
from aidopt.program import ProblemClass
from aidopt.result import AIDResult, AIDStatus, IterationRecord
from aidopt.solvers import get_solver
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.validation import check_choice, check_int, check_real

__all__ = ["AIDSolver", "Hook", "solve"]

_INTERFACES = ("auto", "matrix", "pyomo")


class Hook:
    """Callbacks at named points of a run (no-ops; subclass and override what you need)."""

    def on_start(self, solver: AIDSolver, data: Any, partition: Partition) -> None:
        """Before the first solve."""

    def after_iteration(self, record: IterationRecord, solution: Any, partition: Partition) -> None:
        """After an iteration is evaluated (``partition`` is the one that was solved)."""

    def on_finish(self, result: AIDResult) -> None:
        """After the result is built."""


@dataclass
class _Incumbent:
    objective: float
    solution: Any
    iteration: int


class AIDSolver:
    """Aggregate-and-iterative-disaggregate solver for one :class:`AggregatedModel`.

    Parameters
    ----------
    model : the model (e.g. ``aidopt.models.lad.LADModel()``).
    solver : 'highs' (embedded), 'gurobi', any Pyomo solver name, or one of the model's special
        solvers (``model.special_solvers``); None (default) uses ``model.default_solver``
        ('highs' unless the model measured a faster exact one, e.g. 'fn' for LAD).
    tol : stop when the relative gap (E_best − L)/|E_best| ≤ tol (models with a lower bound).
    max_iter, time_limit : limits on iterations and wall-clock seconds (None = no limit).
    rate : initial aggregation rate r^0 (None = the model's default, the paper's choice).
    random_state : seed of the initial clustering.
    interface : 'auto' (matrix form when the model and solver have one), 'matrix' or 'pyomo'.
    solver_options : passed to the solver verbatim.
    verbose : 0/False quiet; 1/True log the iteration table to stderr for the duration of the
        call; 2 also shows the solver's own log.
    hooks : :class:`Hook` instances called during the run.
    """

    def __init__(
        self,
        model: AggregatedModel,
        *,
        solver: str | None = None,
        tol: float = 1e-4,
        max_iter: int | None = None,
        time_limit: float | None = None,
        rate: float | None = None,
        random_state: int | None = 0,
        interface: str = "auto",
        solver_options: dict[str, Any] | None = None,
        verbose: int | bool = False,
        hooks: Sequence[Hook] = (),
    ) -> None:
        self.model = model
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.rate = rate
        self.random_state = random_state
        self.interface = interface
        self.solver_options = solver_options
        self.verbose = verbose
        self.hooks = tuple(hooks)

    # ------------------------------------------------------------------ public API
    def solve(self, data: Any) -> AIDResult:
        """Run AID on ``data`` (the model's data object) and return an :class:`AIDResult`."""
        with verbosity(bool(self.verbose)):
            return self._run(data, full=False)

    def solve_full(self, data: Any) -> AIDResult:
        """Solve the original (non-aggregated) model through the same path: the reference.

        The full model is the aggregated model on singleton clusters, so the same declaration,
        the same solver adapter and the same evaluation are used.
        """
        with verbosity(bool(self.verbose)):
            return self._run(data, full=True)

    # ------------------------------------------------------------------ the loop
    def _run(self, data: Any, *, full: bool) -> AIDResult:
        self._check_params()
        self.model.check_params()
        self.model.check_data(data)
        start = time.perf_counter()
        solve_step = self._resolve_solver()
        rng = np.random.default_rng(self.random_state)
        n = data.n
        if full:
            rate = 1.0
            partition = Partition.singletons(n)
        else:
            rate = self.rate if self.rate is not None else self.model.default_rate(data)
            partition = self.model.initial_partition(data, rate, rng)
        self._log_intro(data, partition, rate, full)
        for hook in self.hooks:
            hook.on_start(self, data, partition)

        records: list[IterationRecord] = []
        best: _Incumbent | None = None
        lower: float | None = None
        previous: Previous | None = None
        status: AIDStatus | None = None
        message = ""
        iteration = 0
        while status is None:
            iteration += 1
            t0 = time.perf_counter()
            agg = self.model.aggregate(data, partition)
            partition.forget_history()
            try:
                solution, result = solve_step(agg, previous, self._remaining(start))
            except SolverLicenseError as exc:
                if best is None:
                    raise
                status, message = AIDStatus.SOLVER_LIMIT, str(exc)
                break
            solve_seconds = time.perf_counter() - t0
            if result.status is not SolveStatus.OPTIMAL:
                status, message = self._solver_stop(result, best)
                break
            t1 = time.perf_counter()
            evaluation = self.model.evaluate(data, solution)
            next_partition, n_impure = partition.split(evaluation.regime, evaluation.split_regime)
            pass_seconds = time.perf_counter() - t1

            improved = best is None or evaluation.objective < best.objective
            if improved:
                best = _Incumbent(evaluation.objective, solution, iteration)
            if self.model.gives_lower_bound and result.bound is not None:
                lower = result.bound if lower is None else max(lower, result.bound)
            gap = _relative_gap(best.objective, lower)
            record = IterationRecord(
                iteration=iteration,
                clusters=partition.n_clusters,
                rate=partition.rate,
                lower_bound=result.bound if self.model.gives_lower_bound else None,
                upper_bound=evaluation.objective,
                best_upper_bound=best.objective,
                gap=gap,
                impure_clusters=n_impure,
                solve_seconds=solve_seconds,
                pass_seconds=pass_seconds,
            )
            records.append(record)
            logger.info(format_record(record, improved))
            for hook in self.hooks:
                hook.after_iteration(record, solution, partition)

            if n_impure == 0:
                # Every cluster pure: the aggregated optimum is optimal for the original model.
                best = _Incumbent(evaluation.objective, solution, iteration)
                status, message = AIDStatus.OPTIMAL, "every cluster is pure: certified optimal"
            elif gap is not None and gap <= self.tol:
                status, message = AIDStatus.GAP, f"relative gap {gap:.3g} ≤ tol {self.tol:g}"
            elif self.max_iter is not None and iteration >= self.max_iter:
                status = AIDStatus.ITERATION_LIMIT
                message = f"iteration limit {self.max_iter} reached with {n_impure} impure clusters"
            elif self._remaining(start) == 0.0:
                status = AIDStatus.TIME_LIMIT
                message = f"time limit {self.time_limit:g} s reached"
            else:
                previous = Previous(agg, solution, result)
                partition = next_partition

        seconds = time.perf_counter() - start
        result = self._result(data, best, lower, status, message, records, partition, seconds)
        self._log_outro(result)
        if status in (AIDStatus.ITERATION_LIMIT, AIDStatus.TIME_LIMIT, AIDStatus.SOLVER_LIMIT):
            warnings.warn(
                f"AID stopped before certifying optimality: {message}.",
                ConvergenceWarning,
                stacklevel=3,
            )
        for hook in self.hooks:
            hook.on_finish(result)
        return result

    # ------------------------------------------------------------------ pieces
    def _check_params(self) -> None:
        owner = "AIDSolver"
        check_real(self.tol, "tol", owner, low=0.0, closed="left")
        check_int(self.max_iter, "max_iter", owner, low=1, allow_none=True)
        check_real(self.time_limit, "time_limit", owner, low=0.0, allow_none=True)
        check_real(self.rate, "rate", owner, low=0.0, high=1.0, closed="right", allow_none=True)
        check_choice(self.interface, "interface", owner, _INTERFACES)
        check_int(int(self.verbose), "verbose", owner, low=0, high=2)

    @property
    def solver_name(self) -> str:
        """The solver actually used: ``solver``, or the model's default when it is None."""
        return self.model.default_solver if self.solver is None else self.solver

    def _remaining(self, start: float) -> float | None:
        if self.time_limit is None:
            return None
        return max(0.0, self.time_limit - (time.perf_counter() - start))

    def _resolve_solver(self):
        """A function (agg, previous, time_limit) → (solution, SolveResult), checked up front."""
        model, options = self.model, dict(self.solver_options or {})
        verbose = int(self.verbose) >= 2
        name = self.solver_name
        if name in model.special_solvers:

            def special(agg, previous, time_limit):
                return model.solve_special(
                    name,
                    agg,
                    time_limit=time_limit,
                    verbose=verbose,
                    options=options,
                    previous=previous,
                )

            return special

        adapter = get_solver(name)
        adapter.check_available()
        usable = ["gurobi"] if model.problem_class is ProblemClass.MIQP else ["highs", "gurobi"]
        alternatives = ", ".join([*usable, *model.special_solvers])
        adapter.check_capability(model.problem_class, alternatives)
        use_matrix = self.interface != "pyomo" and adapter.SUPPORTS_MATRIX
        if self.interface == "matrix" and not adapter.SUPPORTS_MATRIX:
            raise AidoptError(f"Solver '{adapter.name}' has no matrix interface; use 'pyomo'.")

        def generic(agg, previous, time_limit):
            program = model.matrix_program(agg, previous) if use_matrix else None
            if program is None:
                if self.interface == "matrix":
                    raise AidoptError(f"Model '{model.name}' has no matrix form; use 'pyomo'.")
                pyomo_model = model.build(agg)
                result = adapter.solve_pyomo(
                    pyomo_model, time_limit=time_limit, verbose=verbose, options=options
                )
                if result.status is not SolveStatus.OPTIMAL:
                    return None, result
                return model.extract(pyomo_model, agg), result
            result = adapter.solve_program(
                program, time_limit=time_limit, verbose=verbose, options=options
            )
            if result.status is not SolveStatus.OPTIMAL:
                return None, result
            solution = model.solution_from_program(result, agg)
            return solution, replace(result, bound=model.program_bound(result, agg))

        return generic

    def _solver_stop(self, result: SolveResult, best: _Incumbent | None) -> tuple[AIDStatus, str]:
        what = f"the solver stopped on an aggregated problem: {result.status.value}"
        if result.status is SolveStatus.INFEASIBLE:
            raise InfeasibleSettingError(
                f"The aggregated {self.model.name} problem is infeasible ({result.message}); "
                "check the model options (e.g. a constraint no solution can meet)."
            )
        if best is None:
            raise SolverError(
                f"Solver '{self.solver_name}' returned no solution for the first aggregated "
                f"problem ({result.status.value}: {result.message})."
            )
        if result.status is SolveStatus.TIME_LIMIT:
            return AIDStatus.TIME_LIMIT, what
        return AIDStatus.SOLVER_LIMIT, what

    def _result(self, data, best, lower, status, message, records, partition, seconds):
        if best is None:
            raise AidoptError("no aggregated problem was solved")
        params = {
            **self.model.summary(),
            "tol": self.tol,
            "max_iter": self.max_iter,
            "time_limit": self.time_limit,
            "rate": records[0].rate if records else None,
            "random_state": self.random_state,
        }
        return AIDResult(
            model=self.model.name,
            solver=self.solver_name,
            status=status,
            message=message,
            objective=best.objective,
            lower_bound=lower,
            gap=_relative_gap(best.objective, lower),
            iterations=len(records),
            n=data.n,
            m=data.m,
            final_rate=records[-1].rate,
            seconds=seconds,
            solution=best.solution,
            solution_dict=self.model.solution_to_dict(data, best.solution),
            records=tuple(records),
            partition=partition,
            params=params,
        )

    def _log_intro(self, data, partition: Partition, rate: float, full: bool) -> None:
        kind = "full model" if full else "AID"
        logger.info(
            "aidopt %s | %s for %s (%s) | solver %s | n=%d m=%d | r0=%.4g, %d clusters",
            __version__,
            kind,
            self.model.name,
            self.model.problem_class.value,
            self.solver_name,
            data.n,
            data.m,
            rate,
            partition.n_clusters,
        )
        if self.model.citation:
            logger.info("model: %s", self.model.citation)
        logger.info(iteration_header())

    @staticmethod
    def _log_outro(result: AIDResult) -> None:
        logger.info(
            "Stopped (%s): %s. %d iterations in %.3f s; objective %.10g, lower bound %s, gap %s",
            result.status.value,
            result.message,
            result.iterations,
            result.seconds,
            result.objective,
            "-" if result.lower_bound is None else f"{result.lower_bound:.10g}",
            "-" if result.gap is None else f"{result.gap:.3g}",
        )


def _relative_gap(upper: float, lower: float | None) -> float | None:
    """(E_best − L)/|E_best| (absolute when E_best = 0); reported as computed, unclipped."""
    if lower is None:
        return None
    scale = abs(upper) if upper != 0 else 1.0
    return (upper - lower) / scale


def solve(model: AggregatedModel, data: Any, *, full: bool = False, **options: Any) -> AIDResult:
    """Convenience: ``AIDSolver(model, **options).solve(data)`` (``full=True``: the reference)."""
    solver = AIDSolver(model, **options)
    return solver.solve_full(data) if full else solver.solve(data)
