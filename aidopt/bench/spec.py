"""What a model declares about its benchmark: workloads × methods (the harness runs them).

``aidopt bench MODEL`` runs every method on every instance of every workload, each run in its
own process with a time limit and a peak-memory reading (:mod:`aidopt.bench.harness`), and
writes a CSV, a Markdown summary with the ratios ρ = T_method / T_pair and Δ (relative
objective difference against the pair), and a plot. A model declares it in a few lines::

    bench = BenchSpec(
        workloads=(Workload(make=make_instance, sizes=((30_000, 10), (100_000, 10))),),
        methods=(
            Method("aid-highs", "aid", solver="highs", pair="full-highs"),
            Method("full-highs", "full", solver="highs"),
        ),
    )

(the models of this package put theirs in ``aidopt/bench/<model>.py`` as ``SPEC``: benchmark
specs live with the bench). Every method's solution is evaluated by the model
(:meth:`~aidopt.core.contract.AggregatedModel.evaluate`), so AID, the full problem and a library
baseline are compared on the same objective E.

Anything truly specific (a paper's tables on its data sets) is a ``part``: a module with
``add_arguments(parser)`` and ``run(args)``, reached as ``aidopt bench MODEL --part NAME`` with
its own command-line options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aidopt.bench.outcome import Outcome
from aidopt.common.options import Option

__all__ = ["BenchSpec", "Column", "Method", "Outcome", "Workload"]

KINDS = ("aid", "full", "baseline")


@dataclass(frozen=True)
class Workload:
    """Instances of one kind: ``make(n, m, seed, **options)`` returns the model's data object,
    or (data, model options of this instance) when the instance fixes some (e.g. PU's prior).

    ``options``: generator parameters, declared like a model's (command-line flags of the
    bench, e.g. ``--separation``). ``model_options``: the model options this workload is run
    with (e.g. the kernel), over the spec's. On the command line ``--sizes-NAME`` sets the
    sizes of this workload alone (``N`` alone keeps the m of its first declared size).
    """

    make: Callable[..., Any]
    sizes: tuple[tuple[int, int], ...]
    name: str = "generated"
    options: tuple[Option, ...] = ()
    model_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    """One way to solve an instance.

    ``kind``: "aid" (AIDSolver.solve), "full" (the same model on singleton clusters:
    AIDSolver.solve_full) or "baseline" (``run(model, data, time_limit)``, a callable or a
    "module:function" string, returns a solution of the model's type or an :class:`Outcome`;
    the model evaluates it). ``pair``: the method it is compared with (ρ, Δ; in the summary the
    two share a row). ``options``: AIDSolver options (tol, rate, solver_options, ...);
    ``model_options``: model options of this method only (e.g. a policy variant). ``label``:
    short name in column headers (ρ vs LABEL). ``missing``: a function telling why the method
    cannot run here (None when it can); such a method is left out unless named in --methods.
    """

    name: str
    kind: str
    solver: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    run: Callable[[Any, Any, float | None], Any] | str | None = None
    pair: str | None = None
    description: str = ""
    label: str = ""
    model_options: dict[str, Any] = field(default_factory=dict)
    missing: Callable[[], str | None] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"Method {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}"
            )
        if self.kind == "baseline" and self.run is None:
            raise ValueError(f"Method {self.name!r}: a baseline needs run=")


@dataclass(frozen=True)
class Column:
    """An extra column of the Markdown summary: ``key`` of the summary CSV, format ``fmt``."""

    header: str
    key: str
    fmt: str = ".3g"


@dataclass(frozen=True)
class BenchSpec:
    """A model's benchmark.

    ``workloads``, ``methods``; ``model_options``: the model options it is run with;
    ``parts``: name → module (add_arguments/run) of its specific parts; ``references``:
    methods every method is also timed against (ρ vs each, in order; Δ of a method without a
    pair is taken against the first that finished); ``metrics``: ``(model, data, solution) →
    dict`` of extra numbers per run (callable or "module:function"); ``differences``: summary
    column → metric, the mean of (method − pair) (e.g. Γ, the accuracy difference);
    ``columns``: extra Markdown columns; ``default_methods``: the methods run when --methods is
    not given (None: all that can run here); ``aid_options``: AIDSolver options of every aid and
    full method; ``repeats``, ``time_limit``: the defaults of --repeats and --time-limit;
    ``grace``: seconds over the limit before a run is killed (libraries have no limit of their
    own); ``skip_after_limit``: a method stopped by a limit is not run on the larger instances
    of that workload (a scaling study); ``plot``: the plot is ``<model>_<plot>.png``;
    ``finished``: the statuses of a run that finished (ρ and Δ are taken between those; AIDk's
    "iteration_limit" is one when the iteration limit is the method); ``default_part``: the part
    run when no --part is given (a benchmark whose paper tables came first); ``name``: the
    spec's own name as a part (``--part NAME`` runs the spec: "spec", or e.g. PU's "scaling");
    ``aliases``: old flag → flag of the spec's command line (e.g. "--kernels" → "--workloads").
    """

    workloads: tuple[Workload, ...]
    methods: tuple[Method, ...]
    model_options: dict[str, Any] = field(default_factory=dict)
    parts: dict[str, str] = field(default_factory=dict)
    references: tuple[str, ...] = ()
    metrics: Callable[[Any, Any, Any], dict[str, float]] | str | None = None
    differences: dict[str, str] = field(default_factory=dict)
    columns: tuple[Column, ...] = ()
    default_methods: tuple[str, ...] | None = None
    aid_options: dict[str, Any] = field(default_factory=dict)
    repeats: int = 1
    time_limit: float = 600.0
    grace: float = 60.0
    skip_after_limit: bool = False
    plot: str = "times"
    finished: tuple[str, ...] = ("optimal", "gap", "pure")
    default_part: str | None = None
    name: str = "spec"
    aliases: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [m.name for m in self.methods]
        if len(set(names)) != len(names):
            raise ValueError(f"BenchSpec: duplicate method names in {names}")
        known = set(names)
        for method in self.methods:
            if method.pair is not None and method.pair not in known:
                raise ValueError(f"Method {method.name!r}: pair {method.pair!r} is not a method")
        for name in (*self.references, *(self.default_methods or ())):
            if name not in known:
                raise ValueError(f"BenchSpec: {name!r} is not a method")
        if self.default_part is not None and self.default_part not in self.parts:
            raise ValueError(f"BenchSpec: default_part {self.default_part!r} is not a part")
        if self.name in self.parts:
            raise ValueError(f"BenchSpec: {self.name!r} is the name of the spec itself")
        workloads = [w.name for w in self.workloads]
        if not workloads or len(set(workloads)) != len(workloads):
            raise ValueError(f"BenchSpec: workload names must be unique and given: {workloads}")

    def method(self, name: str) -> Method | None:
        return next((m for m in self.methods if m.name == name), None)
