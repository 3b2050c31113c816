"""The generic AID driver (Algorithm 1 of Park & Klabjan), knowing nothing about any model.

    create clusters C^0 and aggregated data
    repeat
        solve the aggregated problem                        → F^t
        evaluate the solution on every original entry       → E^t (upper bound), regimes
        prove a lower bound on the original data            → L^t (weak duality, the model's)
        stop: certified | gap ≤ tol | pure but unproven | iteration / time / solver limit
        split the impure clusters by regime, re-aggregate

Bounds: E_best = min_{s≤t} E^s; L = max_{s≤t} L^s, each L^s proven by the model from the
original data at a dual-feasible point (never the solver's own objective or bound);
gap = (E_best − L)/|E_best|. ``optimal`` = every cluster pure AND gap ≤ max(tol, the inner
solver's stated accuracy) AND the backend solved the aggregated problem that was asked.

Structure after Pyomo's GDPopt: the run's state lives in :class:`_Run`, the loop is
:meth:`AIDSolver._iterate` repeated until a named stop predicate sets the status, and each
phase is timed by name (``timing``).
"""

from __future__ import annotations

import copy
import functools
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from aidopt._version import __version__
from aidopt.common.deadline import TimeLimitReached, deadline, remaining
from aidopt.common.log import format_record, iteration_header, logger, verbosity
from aidopt.common.options import Option, parse_seed, validate
from aidopt.common.threads import single_thread_blas
from aidopt.common.validation import check_int
from aidopt.core.certificate import GAP_FLOOR, MAX_SOLVER_ACCURACY, Bound, Certificate, relative_gap
from aidopt.core.contract import AggregatedModel, Evaluation, Previous
from aidopt.core.partition import Partition
from aidopt.core.registry import get_solver
from aidopt.core.result import START_COLUMNS, AIDResult, AIDStatus, IterationRecord
from aidopt.core.routes import Route, resolve_route
from aidopt.engine.blocks import Blocks
from aidopt.engine.chunked import on_blocks, runs_on_blocks
from aidopt.exceptions import (
    ConvergenceWarning,
    DataError,
    InfeasibleSettingError,
    InvalidParameterError,
    SolverError,
    SolverLicenseError,
    TimeLimitError,
)
from aidopt.numerics import compiled
from aidopt.numerics.rounding import data_sums_cached
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.solvers.program import ProblemClass

__all__ = ["RUN_OPTIONS", "AIDSolver", "Hook", "solve"]

_INTERFACES = ("auto", "matrix", "pyomo")


#: the options of a run, declared once: AIDSolver's parameters, the command line's common flags
#: and the estimators' parameters are generated from them
RUN_OPTIONS: tuple[Option, ...] = (
    Option(
        "solver",
        None,
        "a registered solver (`aidopt solvers`: highs, gurobi, cplex, scip, highs-oa, bnb, "
        "fn, libsvm, ...) or a Pyomo solver name (default: the model's)",
        kind=str,
        allow_none=True,
    ),
    Option("tol", 1e-4, "relative gap tolerance", low=0.0, closed="left"),
    Option("max_iter", None, "iteration limit", kind=int, low=1, allow_none=True),
    Option("time_limit", None, "wall-clock limit (s)", low=0.0, allow_none=True),
    Option(
        "rate",
        None,
        "initial aggregation rate r^0",
        low=0.0,
        high=1.0,
        closed="right",
        allow_none=True,
    ),
    Option(
        "random_state",
        0,
        "seed of the initial clustering (≥ 0)",
        kind=int,
        low=0,
        allow_none=True,
        flag="--seed",
        parse=parse_seed,
    ),
    Option(
        "n_init",
        None,
        "AID runs from initial clusterings seeded random_state, random_state + 1, ...; the "
        "lowest objective is returned (as k-means' n_init; for the non-convex S3VM models). "
        "Default: the model's (1; S3VM: 4 with fewer than 50 labeled entries and m < n)",
        kind=int,
        low=1,
        allow_none=True,
    ),
    Option(
        "interface",
        "auto",
        "the matrix form or the Pyomo model (auto: matrix when there is one)",
        kind=str,
        choices=_INTERFACES,
    ),
    Option(
        "solver_options",
        None,
        "options passed to the solver",
        kind=dict,
        allow_none=True,
        cli=False,
    ),
    Option(
        "verbose",
        False,
        "0 quiet, 1 the iteration log, 2 also the solver's",
        kind=(bool, int),
        cli=False,
    ),
)
_MAX_REFINEMENTS = 3  # re-solves of one aggregated problem asking the solver for more accuracy
_UNCERTIFIED = (
    AIDStatus.PURE,
    AIDStatus.ITERATION_LIMIT,
    AIDStatus.TIME_LIMIT,
    AIDStatus.SOLVER_LIMIT,
)


class Hook:
    """Callbacks at named points of a run (no-ops; subclass and override what you need)."""

    def on_start(self, solver: AIDSolver, data: Any, partition: Partition) -> None:
        """Before the first solve."""

    def after_iteration(self, record: IterationRecord, solution: Any, partition: Partition) -> None:
        """After an iteration is evaluated (``partition`` is the one that was solved)."""

    def on_finish(self, result: AIDResult) -> None:
        """After the result is built."""

    def on_progress(self, stopped_now: Callable[[str], AIDResult]) -> None:
        """After each iteration: ``stopped_now(message)`` builds, when called, the result the
        run would return if the time limit stopped it at that moment (status ``time_limit``,
        the best answer so far). The command line's watchdog uses it when a step that cannot
        be interrupted outlives the limit."""


@dataclass
class _Incumbent:
    objective: float
    error: float  # rounding bound of the objective: objective + error ≥ the exact value
    solution: Any
    evaluation: Evaluation
    iteration: int


@dataclass
class _Run:
    """The state of one run (GDPopt's algorithm state)."""

    data: Any
    full: bool
    #: the clusters: a Partition (a BlockPartition for rows in blocks); None before C^0
    partition: Any
    start: float
    solve_step: Callable[..., tuple[Any, SolveResult]]
    iteration: int = 0
    best: _Incumbent | None = None
    lower: Bound | None = None
    previous: Previous | None = None
    records: list[IterationRecord] = field(default_factory=list)
    status: AIDStatus | None = None
    message: str = ""
    improved: bool = False  # the last iteration improved E_best
    last_result: SolveResult | None = None  # the solver's answer to the last problem
    iteration_bound: Bound | None = None  # the bound proven at the last iteration
    notes: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def upper(self) -> float | None:
        """E_best plus its rounding bound: a proven upper bound on E*."""
        return None if self.best is None else self.best.objective + self.best.error

    @property
    def gap(self) -> float | None:
        if self.best is None or self.lower is None:
            return None
        return relative_gap(self.upper, self.lower.value, self.best.objective)

    @property
    def proven_lower(self) -> float | None:
        """L when the data alone prove it (a solver-attested bound, e.g. the MIQP relaxation
        of S3VM, is reported in the certificate only)."""
        if self.lower is None or self.lower.solver_attested:
            return None
        return self.lower.value

    @property
    def proven_gap(self) -> float | None:
        return None if self.proven_lower is None else self.gap

    @contextmanager
    def timer(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timing[name] = self.timing.get(name, 0.0) + time.perf_counter() - t0


@dataclass
class _Step:
    """What one iteration produced (for the stop predicates)."""

    solution: Any
    result: SolveResult
    evaluation: Evaluation
    n_impure: int
    next_partition: Partition
    solve_seconds: float
    pass_seconds: float


class AIDSolver:
    """Aggregate-and-iterative-disaggregate solver for one :class:`AggregatedModel`.

    Parameters
    ----------
    model : the model (e.g. ``aidopt.models.lad.LADModel()``).
    solver : a registered solver name (``aidopt solvers``): 'highs' (embedded), 'gurobi' or any
        Pyomo name solve the declared problem; a structure solver ('fn', 'libsvm', 'liblinear',
        'usmo') one of the model's ``structures``; 'highs-oa' a convex MIQP
        (:mod:`aidopt.core.routes`). None (default) uses ``model.default_solver`` ('highs' unless
        the model measured a faster exact one, e.g. 'fn' for LAD).
    tol : stop when the proven relative gap (E_best − L)/|E_best| ≤ tol; ``optimal`` needs every
        cluster pure and the gap ≤ max(tol, the inner solver's stated accuracy).
    max_iter, time_limit : limits on iterations and wall-clock seconds (None = no limit); the
        time limit holds inside inner solves and sample fits too.
    rate : initial aggregation rate r^0 (None = the model's default, the paper's choice).
    random_state : seed of the initial clustering.
    n_init : number of AID runs, start i from the initial clustering seeded ``random_state + i``;
        the run with the lowest objective is returned unchanged (its own bounds and status),
        every start in ``result.starts``. For non-convex models (S3VM), whose AID answer
        depends on C^0; a convex model's first certified start ends the loop. None: the
        model's ``default_n_init`` (1 but for S3VM with few labels).
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
        n_init: int | None = None,
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
        self.n_init = n_init
        self.interface = interface
        self.solver_options = solver_options
        self.verbose = verbose
        self.hooks = tuple(hooks)

    # ------------------------------------------------------------------ public API
    def solve(self, data: Any) -> AIDResult:
        """Run AID on ``data`` (the model's data object, or its rows in blocks: an
        :class:`aidopt.engine.blocks.Blocks`, in memory or on Dask) and return an
        :class:`AIDResult`."""
        if isinstance(data, Blocks) and not runs_on_blocks(self.model):
            on = copy.copy(self)
            on.model = on_blocks(self.model)
            return on.solve(data)
        with verbosity(bool(self.verbose)), deadline(self.time_limit), data_sums_cached():
            with single_thread_blas(), compiled.for_run(compiled.dense_entries(data)):
                n_init = self._n_init(data)
                if n_init > 1:
                    return self._best_start(data, n_init)
                return self._run(data, full=False)  # passes: matrix–vector work, compiled loops

    def solve_full(self, data: Any) -> AIDResult:
        """Solve the original (non-aggregated) model through the same path: the reference.

        The full model is the aggregated model on singleton clusters, so the same declaration,
        the same solver adapter, the same evaluation and the same certificate are used
        (``n_init`` does not apply: there is no initial clustering).
        """
        if isinstance(data, Blocks):
            raise InvalidParameterError(
                "The full problem needs every row in memory; solve it on the data, not on blocks."
            )
        with verbosity(bool(self.verbose)), deadline(self.time_limit), data_sums_cached():
            with single_thread_blas(), compiled.for_run(compiled.dense_entries(data)):
                return self._run(data, full=True)

    @property
    def solver_name(self) -> str:
        """The solver actually used: ``solver``; when None, the model's default, or 'highs' when
        an interface is asked for that the model's own default solver does not have."""
        if self.solver is not None:
            return self.solver
        default = self.model.solver_by_default()
        if self.interface != "auto" and get_solver(default).STRUCTURES:
            return "highs"
        return default

    # ------------------------------------------------------------------ the template
    def _run(self, data: Any, *, full: bool) -> AIDResult:
        self._check_params()
        self.model.check_params()
        _check_data_type(self.model, data)
        self.model.check_data(data)
        self.model.check_weights(data)
        run = _Run(
            data=data,
            full=full,
            partition=Partition.singletons(data.n) if full else None,
            start=time.perf_counter(),
            solve_step=self._resolve_solver(),
        )
        rate = 1.0
        try:
            if not full:
                rate = self.rate if self.rate is not None else self._default_rate(data)
                with run.timer("initial_partition"):
                    run.partition = self.model.initial_partition(
                        data, rate, np.random.default_rng(self.random_state)
                    )
            self._log_intro(data, run.partition, rate, full)
            for hook in self.hooks:
                hook.on_start(self, data, run.partition)
            while run.status is None:
                self._iterate(run)
        except TimeLimitReached as exc:
            if run.best is None:
                raise TimeLimitError(
                    f"Solver '{self.solver_name}' returned no solution for the first aggregated "
                    f"problem ({exc}); raise the time limit."
                ) from None
            run.status, run.message = AIDStatus.TIME_LIMIT, str(exc)
        result = self._result(run)
        self._log_outro(result)
        if result.status in _UNCERTIFIED:
            _warn_uncertified(result.message)
        for hook in self.hooks:
            hook.on_finish(result)
        return result

    def _default_rate(self, data: Any) -> float:
        """r^0: the model's, or 1 (the full problem) on a solver no aggregation speeds up."""
        if self.solver_name in self.model.full_problem_solvers:
            return 1.0
        return float(self.model.default_rate(data))

    def _n_init(self, data: Any) -> int:
        """The starts of this run: ``n_init``, or the model's default for the data."""
        self._check_params()
        return self.n_init if self.n_init is not None else int(self.model.default_n_init(data))

    def _best_start(self, data: Any, n_init: int) -> AIDResult:
        """The lowest-objective of ``n_init`` runs, start i seeded ``random_state + i``.

        Each start is a complete run with its own bounds; the chosen one is returned as it is
        (objective, lower bound, gap, certificate), so nothing is claimed across starts. A
        certified start ends the loop (no start can beat a proven optimum); the time limit is
        shared, and a start it cuts makes an uncertified answer ``time_limit`` (a later start
        the solver refuses or fails on: ``solver_limit``), the earlier starts kept.
        """
        self._check_params()
        began = time.perf_counter()
        results: list[AIDResult] = []
        stop = ""  # why the loop ended early
        limit: AIDStatus | None = None  # the status a cut leaves on an uncertified answer
        for i in range(n_init):
            start = copy.copy(self)
            start.n_init = 1
            start.random_state = None if self.random_state is None else self.random_state + i
            left = remaining()
            if i and left is not None and left <= 0.0:  # the first start runs as a single run
                stop = f"the time limit stopped random_state {start.random_state} from starting"
                limit = AIDStatus.TIME_LIMIT
                break
            logger.info("start %d of %d (random_state %s)", i + 1, n_init, start.random_state)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    result = start._run(data, full=False)
            except (TimeLimitError, SolverLicenseError, SolverError) as exc:
                if not results:  # nothing to return: as a single run would
                    raise
                timed_out = isinstance(exc, TimeLimitError)
                limit = AIDStatus.TIME_LIMIT if timed_out else AIDStatus.SOLVER_LIMIT
                which = "time" if timed_out else "solver"
                stop = f"the {which} limit stopped random_state {start.random_state} ({exc})"
                break
            results.append(result)
            if result.status is AIDStatus.TIME_LIMIT:
                stop = f"the time limit stopped random_state {start.random_state}"
                limit = AIDStatus.TIME_LIMIT
                break
            if result.certified:
                stop = "a certified start ends the loop" if i + 1 < n_init else ""
                break
        chosen = min(range(len(results)), key=lambda i: results[i].objective)
        best = results[chosen]
        status, seed = best.status, best.params["random_state"]
        message = f"{best.message} [random_state {seed}, best of {len(results)} starts"
        message += f" (n_init={n_init}); {stop}]" if stop else f" (n_init={n_init})]"
        if limit is not None and status in _UNCERTIFIED:
            status = limit
        result = replace(
            best,
            status=status,
            message=message,
            seconds=time.perf_counter() - began,
            params={**best.params, "n_init": n_init, "start": chosen},
            starts=tuple(_start_row(i, r) for i, r in enumerate(results)),
        )
        if status in _UNCERTIFIED:
            _warn_uncertified(message)
        return result

    def _iterate(self, run: _Run) -> None:
        """One iteration: aggregate, solve, evaluate, bound, record, stop or split."""
        run.iteration += 1
        with run.timer("aggregate"):
            parent = None if run.previous is None else run.previous.aggregate
            agg = self.model.aggregate(run.data, run.partition, previous=parent)
        run.partition.forget_history()
        step = self._solve_and_check(run, agg)
        if step is None:
            return
        self._record(run, step)
        for stop in (
            self._certified,
            self._gap_closed,
            self._pure_unproven,
            self._reached_iteration_limit,
            self._reached_time_limit,
        ):
            if stop(run, step):
                return
        run.previous = Previous(agg, step.solution, step.result)
        run.partition = step.next_partition

    def _solve_and_check(self, run: _Run, agg: Any) -> _Step | None:
        """Solve (re-solving with more accuracy while the clusters are pure but the proven gap
        is too wide), evaluate on every entry and prove a bound; None when the run stopped."""
        options: dict[str, Any] = {}
        solve_seconds = 0.0
        for refinement in range(_MAX_REFINEMENTS + 1):
            t0 = time.perf_counter()
            with run.timer("solve"):
                try:
                    solution, result = run.solve_step(agg, run.previous, remaining(), options)
                except SolverLicenseError as exc:
                    if run.best is None:
                        raise
                    run.status, run.message = AIDStatus.SOLVER_LIMIT, str(exc)
                    return None
            if result.status is not SolveStatus.OPTIMAL:
                run.status, run.message = self._solver_stop(result, run.best)
                return None
            run.last_result = result
            t1 = time.perf_counter()
            solve_seconds += t1 - t0
            with run.timer("evaluate"):
                evaluation = self.model.evaluate(run.data, solution, aggregate=agg)
                next_partition, n_impure = run.partition.split(
                    evaluation.regime, evaluation.split_regime
                )
            self._update_incumbent(run, solution, evaluation)
            with run.timer("bound"):
                self._update_bound(run, solution, evaluation, agg)
            pass_seconds = time.perf_counter() - t1
            needs_accuracy = (
                n_impure == 0
                and result.exact
                and result.refine is not None
                and not self._within(run, result)
                and refinement < _MAX_REFINEMENTS
            )
            if not needs_accuracy:
                break
            options = {**options, **(result.refine or {})}
            run.notes.append(f"re-solved iteration {run.iteration} with {result.refine}")
        return _Step(
            solution, result, evaluation, n_impure, next_partition, solve_seconds, pass_seconds
        )

    # ------------------------------------------------------------------ bounds
    def _update_incumbent(self, run: _Run, solution: Any, evaluation: Evaluation) -> None:
        error = float(evaluation.objective_error)
        upper = run.upper
        if upper is None or evaluation.objective + error < upper:
            run.best = _Incumbent(evaluation.objective, error, solution, evaluation, run.iteration)
            run.improved = True
        else:
            run.improved = False

    def _update_bound(self, run: _Run, solution: Any, evaluation: Evaluation, agg: Any) -> None:
        """L = max(L, the model's proven bound); a bound above E_best is a numerical failure."""
        upper = run.upper
        assert upper is not None, "the incumbent is updated before the bound"
        bound = self.model.lower_bound(run.data, solution, evaluation, upper, aggregate=agg)
        run.iteration_bound = bound
        if bound is None:
            return
        if bound.value > upper + 1e-12 * max(1.0, abs(upper)):
            run.notes.append(
                f"iteration {run.iteration}: the proven bound {bound.value:.12g} exceeds the "
                f"objective {upper:.12g} (numerical failure); bound discarded"
            )
            logger.warning(run.notes[-1])
            return
        if run.lower is None or bound.value > run.lower.value:
            run.lower = bound

    def _target(self, result: SolveResult) -> float:
        """The gap that certifies: max(tol, 1e-9, the inner solver's stated accuracy), the
        latter capped at 1e-6 (a solver stating a coarse accuracy does not make a coarse answer
        "optimal"; it may still end ``gap`` when tol allows). One rule for every model."""
        accuracy = min(result.accuracy or 0.0, MAX_SOLVER_ACCURACY)
        return max(self.tol, GAP_FLOOR, accuracy)

    def _within(self, run: _Run, result: SolveResult) -> bool:
        gap = run.gap
        return gap is not None and bool(gap <= self._target(result))

    # ------------------------------------------------------------------ stop predicates
    def _certified(self, run: _Run, step: _Step) -> bool:
        """Every cluster pure and the proven gap within target: certified optimal."""
        if step.n_impure or not step.result.exact or not self._within(run, step.result):
            return False
        run.best = _Incumbent(
            step.evaluation.objective,
            float(step.evaluation.objective_error),
            step.solution,
            step.evaluation,
            run.iteration,
        )
        run.status = AIDStatus.OPTIMAL
        attested = run.lower is not None and run.lower.solver_attested
        proof = "the solver-attested gap" if attested else "the proven gap"
        run.message = f"every cluster is pure and {proof} is {run.gap:.3g}: certified"
        return True

    def _gap_closed(self, run: _Run, step: _Step) -> bool:
        gap, tol = run.gap, max(self.tol, GAP_FLOOR)
        if gap is None or not gap <= tol:  # a NaN gap proves nothing
            return False
        run.status, run.message = AIDStatus.GAP, f"proven relative gap {gap:.3g} ≤ tol {tol:g}"
        return True

    def _pure_unproven(self, run: _Run, step: _Step) -> bool:
        """Every cluster pure but no proof: splitting cannot help, so the run ends ``pure``."""
        if step.n_impure:
            return False
        if not step.result.exact:
            why = "the backend solved a different problem (it is not exact for this model)"
        elif run.lower is None:
            why = "no lower bound was proven"
        else:
            why = f"the proven gap {run.gap:.3g} exceeds max(tol, solver accuracy)"
        run.status = AIDStatus.PURE
        run.message = f"every cluster is pure for the problem the backend solved, but {why}"
        return True

    def _reached_iteration_limit(self, run: _Run, step: _Step) -> bool:
        if self.max_iter is None or run.iteration < self.max_iter:
            return False
        run.status = AIDStatus.ITERATION_LIMIT
        run.message = (
            f"iteration limit {self.max_iter} reached with {step.n_impure} impure clusters"
        )
        return True

    def _reached_time_limit(self, run: _Run, step: _Step) -> bool:
        left = remaining()
        if left is None or left > 0.0:
            return False
        run.status = AIDStatus.TIME_LIMIT
        run.message = f"time limit {self.time_limit:g} s reached"
        return True

    def _solver_stop(self, result: SolveResult, best: _Incumbent | None) -> tuple[AIDStatus, str]:
        if result.status is SolveStatus.INFEASIBLE and self.model.options_can_be_infeasible:
            raise InfeasibleSettingError(
                f"The aggregated {self.model.name} problem is infeasible ({result.message}); "
                "check the model options (e.g. a constraint no solution can meet)."
            )
        if result.status is SolveStatus.INFEASIBLE:  # it is feasible: the solver failed
            what = (
                f"the solver called the aggregated problem infeasible ({result.message}), which "
                f"no {self.model.name} problem is: a numerical failure of the solver (on badly "
                "scaled data, rescale the features)"
            )
            result = replace(result, status=SolveStatus.ERROR, message=what)
        what = f"the solver stopped on an aggregated problem: {result.status.value}"
        if result.message:
            what += f" ({result.message})"
        if result.status is SolveStatus.TIME_LIMIT and best is None:
            raise TimeLimitError(
                f"Solver '{self.solver_name}' returned no solution for the first aggregated "
                f"problem before the time limit ({result.message or 'time_limit'})."
            )
        if result.status is SolveStatus.TIME_LIMIT:
            return AIDStatus.TIME_LIMIT, what
        if best is None:
            raise SolverError(
                f"Solver '{self.solver_name}' returned no solution for the first aggregated "
                f"problem ({result.status.value}: {result.message})."
            )
        return AIDStatus.SOLVER_LIMIT, what

    # ------------------------------------------------------------------ records and result
    def _record(self, run: _Run, step: _Step) -> None:
        bound, best = run.iteration_bound, run.best
        assert best is not None, "an iteration is recorded after the incumbent is set"
        record = IterationRecord(
            iteration=run.iteration,
            clusters=run.partition.n_clusters,
            rate=run.partition.rate,
            lower_bound=run.proven_lower,
            upper_bound=step.evaluation.objective,
            best_upper_bound=best.objective,
            gap=run.proven_gap,
            impure_clusters=step.n_impure,
            solve_seconds=step.solve_seconds,
            pass_seconds=step.pass_seconds,
            aggregated_objective=step.result.objective,
            iteration_bound=None if bound is None or bound.solver_attested else bound.value,
        )
        run.records.append(record)
        logger.info(format_record(record, run.improved))
        for hook in self.hooks:
            hook.after_iteration(record, step.solution, run.partition)
            hook.on_progress(functools.partial(self._stopped_now, run))

    def _stopped_now(self, run: _Run, message: str) -> AIDResult:
        """The result of ``run`` if the time limit stopped it now (the run itself untouched)."""
        stopped = copy.copy(run)
        stopped.notes = list(run.notes)
        stopped.status, stopped.message = AIDStatus.TIME_LIMIT, message
        return self._result(stopped)

    def _certificate(self, run: _Run) -> Certificate | None:
        if run.best is None:
            return None
        lower = run.lower
        dual = None if lower is None else lower.dual
        regime = run.best.evaluation.regime
        if dual is not None and isinstance(regime, np.ndarray):
            dual = dual.rebased(regime)  # verify expands it at the reported solution's regimes
        return Certificate(
            upper_bound=run.upper,
            lower_bound=None if lower is None else lower.value,
            gap=run.gap,
            source="none: no lower bound was proven" if lower is None else lower.source,
            certified=run.status is AIDStatus.OPTIMAL,
            tolerance=self.tol,
            dual=dual,
            solver_attested=False if lower is None else lower.solver_attested,
            target_gap=None if run.last_result is None else self._target(run.last_result),
        )

    def _result(self, run: _Run) -> AIDResult:
        if run.notes:
            run.message += " [" + "; ".join(run.notes) + "]"
        best, status, records = run.best, run.status, run.records
        assert best is not None and status is not None, "a result needs a solution and a status"
        params = {
            **self.model.summary(),
            "tol": self.tol,
            "max_iter": self.max_iter,
            "time_limit": self.time_limit,
            "rate": records[0].rate if records else None,
            "random_state": self.random_state,
            "n_init": 1 if self.n_init is None else self.n_init,  # a single run (see _best_start)
        }
        return AIDResult(
            model=self.model.name,
            solver=self.solver_name,
            status=status,
            message=run.message,
            objective=best.objective,
            lower_bound=run.proven_lower,
            gap=run.proven_gap,
            iterations=len(records),
            n=run.data.n,
            m=run.data.m,
            final_rate=records[-1].rate if records else run.partition.rate,
            seconds=time.perf_counter() - run.start,
            solution=best.solution,
            solution_dict=self.model.solution_to_dict(run.data, best.solution),
            records=tuple(records),
            partition=run.partition,
            params=params,
            certificate=self._certificate(run),
            timing=dict(run.timing),
            target=getattr(run.data, "target_name", None),
        )

    # ------------------------------------------------------------------ parameters, solver
    def _check_params(self) -> None:
        validate(RUN_OPTIONS, {o.name: getattr(self, o.name) for o in RUN_OPTIONS}, "AIDSolver")
        check_int(int(self.verbose), "verbose", "AIDSolver", low=0, high=2)

    def _resolve_solver(self) -> Route:
        """The route to the named solver, checked before anything is solved."""
        return resolve_route(
            self.model,
            self.solver_name,
            self.interface,
            dict(self.solver_options or {}),
            int(self.verbose) >= 2,
        )

    # ------------------------------------------------------------------ log
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
        if self.model.problem_class is ProblemClass.MIQP and self.time_limit is None:
            logger.warning(
                "%s is a mixed-integer problem: each aggregated problem is a search whose time "
                "can grow exponentially with the clusters, and no time limit is set; the "
                "search logs its progress (set --time-limit to bound the run)",
                self.model.name,
            )
        logger.info(iteration_header())

    @staticmethod
    def _log_outro(result: AIDResult) -> None:
        logger.info(
            "Stopped (%s): %s. %d iterations in %.3f s; objective %s, lower bound %s, gap %s",
            result.status.value,
            result.message,
            result.iterations,
            result.seconds,
            f"{result.objective:.10g}",
            "-" if result.lower_bound is None else f"{result.lower_bound:.10g}",
            "-" if result.gap is None else f"{result.gap:.3g}",
        )


def _check_data_type(model: AggregatedModel, data: Any) -> None:
    """The model's data object (or rows in blocks), else an error that names both."""
    expected = model.data_type
    if expected is None or isinstance(data, (expected, Blocks)):
        return
    raise DataError(
        f"The {model.name} model takes a {expected.__name__} (aidopt.data: "
        f"{expected.__name__}.from_arrays or .from_frame); got {type(data).__name__}."
    )


def _warn_uncertified(message: str) -> None:
    """The ConvergenceWarning of an answer that is not certified, at the caller of ``solve``."""
    warnings.warn(
        f"AID stopped before certifying optimality: {message}.", ConvergenceWarning, stacklevel=4
    )


def _start_row(index: int, result: AIDResult) -> dict[str, Any]:
    """One start of :meth:`AIDSolver._best_start`, a row of ``AIDResult.starts``
    (:data:`aidopt.core.result.START_COLUMNS`)."""
    seed, status = result.params["random_state"], result.status.value
    values = (index, seed, status, result.objective, result.lower_bound, result.gap)
    return dict(zip(START_COLUMNS, (*values, result.iterations, result.seconds), strict=True))


def solve(model: AggregatedModel, data: Any, *, full: bool = False, **options: Any) -> AIDResult:
    """Convenience: ``AIDSolver(model, **options).solve(data)`` (``full=True``: the reference)."""
    solver = AIDSolver(model, **options)
    return solver.solve_full(data) if full else solver.solve(data)
