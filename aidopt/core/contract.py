"""The model contract: a model is a formulation, written in one file of ``models/``.

A model of the form (1) of Park & Klabjan, min Σ_i f_i(x_i) + f(y), whose per-entry loss is
piecewise linear in a linear score, plugs into the generic AID driver by subclassing
:class:`AggregatedModel` and declaring what the paper declares (§2) — and nothing about any
solver:

======================  =====================================================================
``options``             its parameters (:class:`aidopt.common.options.Option`)
``data_type``           the data it takes (:mod:`aidopt.data.containers`)
``default_rate``        the initial aggregation rate r^0
``initial_partition``   the initial clusters C^0
``aggregate``           the aggregated data: centroids and weights |C_k|
``declare``             the aggregated problem, once, in vectorised algebra
                        (:mod:`aidopt.solvers.algebra`)
``read``                the solution from the solved declaration
``evaluate``            the original objective E^t (upper bound) and every entry's regime
``lower_bound``         a bound L ≤ E* proven on the original data (the certificate)
======================  =====================================================================

From ``declare`` the framework derives the matrix program (``matrix_program``), the Pyomo model
(``build``) and both read-backs. Optionally a model names the problem structures the aggregated
problem is (``structures``, ``to_structure`` / ``from_structure``: weighted quantile regression,
weighted SVM, ...), a generator of synthetic instances and a benchmark spec. Solvers exploit
structures and know no model; the driver matches the user's solver name to what the model offers.

Purity of a cluster = all its entries share one regime (the linear piece of the loss); the
driver splits impure clusters by regime. "Every cluster pure" is the paper's optimality
condition, but the driver certifies optimality only with a lower bound that the model proves on
the ORIGINAL data (weak duality at a dual point built from the solution, see
:mod:`aidopt.core.certificate`), never with a solver's own objective or bound.

A model never imports a solver, never logs and never mutates its inputs. The constructor is
generated from ``options`` (arguments stored as given, checked by :meth:`check_params`), as are
the command-line flags, the estimators' parameters and the options tables of the docs. See
``docs/writing-a-model.md`` and ``models/svr.py``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from aidopt.common.jsonable import plain
from aidopt.common.options import Option, from_args, validate
from aidopt.core.certificate import Bound, DualPoint, best_with_dual
from aidopt.core.partition import Partition
from aidopt.exceptions import DataError
from aidopt.numerics.kernels import kernel_from_flags
from aidopt.solvers.algebra import Problem, Values
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import MatrixProgram, ProblemClass

if TYPE_CHECKING:
    from aidopt.data.io import Table

__all__ = [
    "AggregatedModel",
    "BlockPass",
    "Bound",
    "Dataset",
    "DualPoint",
    "Evaluation",
    "Previous",
    "SubSolve",
]


class Dataset(Protocol):
    """What the driver needs of a model's data object: n entries, m features."""

    @property
    def n(self) -> int:
        """Entries (rows)."""
        ...

    @property
    def m(self) -> int:
        """Features (columns of X)."""
        ...


DataT = TypeVar("DataT", bound=Dataset)
AggT = TypeVar("AggT")
SolT = TypeVar("SolT")


@dataclass(frozen=True)
class Evaluation:
    """A solution evaluated on every original entry.

    ``objective`` is E^t, the original objective at the (feasible) solution, and
    ``objective_error`` a bound on its rounding error (so E^t + error is an upper bound on the
    exact value); ``regime`` an integer ≥ 0 per entry naming the linear piece of the entry's loss
    (purity in it is the optimality condition). ``split_regime``, optional, is a finer integer
    labelling (equal split regimes imply equal regimes, e.g. sign × magnitude band) by which the
    impure clusters are split; None splits them by ``regime``. ``bound_terms``, optional, is
    what the same read of the rows summed for the model's certificate at this solution (the
    model's own object: its ``lower_bound`` then reads no row).
    """

    objective: float
    regime: NDArray[np.int64]
    split_regime: NDArray[np.int64] | None = None
    objective_error: float = 0.0
    bound_terms: Any = None


@dataclass(frozen=True)
class Previous(Generic[AggT, SolT]):
    """The previous iteration, handed to a solve for warm starts."""

    aggregate: AggT
    solution: SolT
    result: SolveResult


class SubSolve(Protocol):
    """What a multi-program solve procedure gets from the driver: the user's solver, as a
    function of a matrix program (``gap``: the relative MIP gap to reach), a convex-QP
    solver (the user's when it solves QPs, else HiGHS), and, when the user's solver ``handles``
    a problem structure, that solver on a ``structure``: (its answer or None, SolveResult)."""

    def __call__(self, program: MatrixProgram, *, gap: float | None = None) -> SolveResult:
        """The user's solver on ``program`` (a MIP to the relative ``gap``)."""
        ...

    def qp(self, program: MatrixProgram) -> SolveResult:
        """A convex QP: the user's solver when it solves QPs, else HiGHS."""
        ...

    def remaining(self) -> float | None:
        """Seconds left before the run's time limit (None: no limit)."""
        ...

    def handles(self, kind: type) -> bool:
        """True when the user's solver solves the problem structure ``kind``."""
        ...

    def structure(self, structure: Any, *, gap: float | None = None) -> tuple[Any, SolveResult]:
        """The user's solver on a problem ``structure``: (its answer or None, SolveResult)."""
        ...


def _generated_init(options: tuple[Option, ...]) -> Callable[..., None]:
    """__init__(self, <options in declared order>) that stores each argument as given."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(
            o.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if o.required else o.default,
        )
        for o in options
    ]
    signature = inspect.Signature(params)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__


class AggregatedModel(ABC, Generic[DataT, AggT, SolT]):
    """Base class of every model; subclasses live in ``models/`` (``aidopt.models``)."""

    #: short name used by the CLI, the registry and in results (``"lad"``)
    name: ClassVar[str]
    #: the class of the aggregated problem (what a generic solver must handle)
    problem_class: ClassVar[ProblemClass]
    #: the declared parameters (the constructor, the CLI and the estimators come from them)
    options: ClassVar[tuple[Option, ...]] = ()
    #: command-line options that choose a variant (:meth:`from_options`), not parameters
    cli_extras: ClassVar[tuple[Option, ...]] = ()
    #: the data container (``from_frame(frame, target)``, ``target`` "required"/"none")
    data_type: ClassVar[Any] = None
    #: problem structures the aggregated problem can be written as (solvers exploit them)
    structures: ClassVar[tuple[type, ...]] = ()
    #: some option values make the aggregated problem infeasible (S3VM's balance constraint);
    #: otherwise a solver that calls it infeasible has failed
    options_can_be_infeasible: ClassVar[bool] = False
    #: traits of its structure instances (:data:`aidopt.solvers.structures.NO_INTERCEPT`, ...)
    structure_traits: ClassVar[frozenset[str]] = frozenset()
    #: the solver used when none is named (measured the fastest exact one for this model)
    default_solver: ClassVar[str] = "highs"
    #: solvers on which no aggregation pays: without a rate, the first problem is the full
    #: one (r^0 = 1), certified on all rows (the kernel SVM on libsvm, docs/svm.md)
    full_problem_solvers: ClassVar[frozenset[str]] = frozenset()
    #: the paper the model comes from
    citation: ClassVar[str] = ""
    #: ``aidopt generate MODEL`` (an :class:`aidopt.data.generate.Generator`), or None
    generator: ClassVar[Any] = None
    #: ``aidopt bench MODEL`` (an :class:`aidopt.bench.spec.BenchSpec`), or None
    bench: ClassVar[Any] = None
    #: True when the model takes row weights (``data.weight``: row i's loss counts w_i times)
    supports_weights: ClassVar[bool] = False
    #: the model ``--kernel rbf|poly`` hands over to, for a linear model whose kernel form is
    #: another formulation (the SVM's dual (21), the LM-OCSVM's dual); its ``cli_extras`` are
    #: then the kernel flags (:func:`aidopt.numerics.kernels.kernel_flag_options`)
    kernel_variant: ClassVar[type[AggregatedModel] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__ and "options" in cls.__dict__:
            cls.__init__ = _generated_init(cls.options)  # type: ignore[method-assign]
            # the options, also where a __new__ takes any arguments (PU's kernel hand-over)
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
            cls.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]

    # -------------------------------------------------------------- parameters and data
    @classmethod
    def from_options(cls, **values: Any) -> AggregatedModel:
        """The model for these option values; with a :attr:`kernel_variant`, ``kernel`` rbf or
        poly hands over to it (γ None: 1/m, degree None: 3, coef0 None: 1.0; the kernel flags a
        kind does not use are ignored here, refused on the command line)."""
        variant: Any = cls.kernel_variant  # its constructor is generated from its options
        if variant is None:
            return cls(**values)
        kernel = values.pop("kernel", "linear")
        flags = [values.pop(name, None) for name in ("gamma", "degree", "coef0")]
        if kernel == "linear":
            return cls(**values)
        k = kernel_from_flags(kernel, *flags, strict=False)
        return variant(kernel=k.kind, gamma=k.gamma, degree=k.degree, coef0=k.coef0, **values)

    def solver_by_default(self) -> str:
        """The solver used when none is named, for these option values (``default_solver``
        unless a variant needs another)."""
        return self.default_solver

    @classmethod
    def variants(cls) -> dict[str, type[AggregatedModel]]:
        """The classes :meth:`from_options` may hand over to, by what selects them (for
        ``aidopt solvers``: each variant takes its own solvers)."""
        if cls.kernel_variant is None:
            return {"": cls}
        return {"--kernel linear": cls, "--kernel rbf|poly": cls.kernel_variant}

    @classmethod
    def from_cli(cls, args: Any) -> AggregatedModel:
        """The model from a parsed ``aidopt solve`` command line (its declared options); a kernel
        flag that the chosen ``--kernel`` ignores (``--gamma`` with linear, ...) is an error."""
        values = from_args((*cls.options, *cls.cli_extras), args)
        if cls.kernel_variant is not None:
            kernel_from_flags(values["kernel"], values["gamma"], values["degree"], values["coef0"])
        return cls.from_options(**values)

    def check_params(self) -> None:
        """Validate every declared option (InvalidParameterError in scikit-learn's words)."""
        validate(self.options, {o.name: getattr(self, o.name) for o in self.options}, self._owner)

    @property
    def _owner(self) -> str:
        return type(self).__name__

    def summary(self) -> dict[str, Any]:
        """The model's parameters, for logs and results (JSON-ready)."""
        return {o.name: plain(getattr(self, o.name)) for o in self.options}

    def data_from_frame(self, frame: Table, target: str | None) -> DataT:
        """Validated model data from a table (a DataFrame; the CLI's CSV files)."""
        return self.data_type.from_frame(frame, target)

    def check_data(self, data: DataT) -> None:
        """Model-specific checks of the data (e.g. enough rows for the coefficients)."""

    def check_weights(self, data: DataT) -> None:
        """Weighted data (rows whose loss counts w_i times) only for a model that takes them."""
        if getattr(data, "weight", None) is not None and not self.supports_weights:
            raise DataError(
                f"The {self.name} model does not take row weights (sample_weight); "
                "fit it on unweighted data."
            )

    # -------------------------------------------------------------- the four components
    @abstractmethod
    def default_rate(self, data: DataT) -> float:
        """The paper's initial aggregation rate r^0 = |K^0| / n for this data."""

    def default_n_init(self, data: DataT) -> int:
        """AID runs from different initial clusterings when the caller gives no ``n_init``: one
        (a convex model's AID answer does not depend on C^0)."""
        return 1

    @abstractmethod
    def initial_partition(self, data: DataT, rate: float, rng: np.random.Generator) -> Partition:
        """The initial clusters C^0 for target rate r^0."""

    @abstractmethod
    def aggregate(self, data: DataT, partition: Partition, *, previous: AggT | None = None) -> AggT:
        """Aggregated data of the clusters (centroids, weights |C_k|, cluster labels).
        ``previous``: the aggregate of the partition this one was split from (the driver gives
        it), whose sums a model may keep for the clusters the split left as they were."""

    def declare(self, agg: AggT) -> Problem:
        """The aggregated problem, declared once in vectorised algebra over the aggregate
        (:mod:`aidopt.solvers.algebra`): the matrix program, the Pyomo model and the read-back of
        values and multipliers all come from it."""
        raise NotImplementedError(f"{type(self).__name__} declares no aggregated problem")

    def read(self, values: Values, agg: AggT) -> SolT:
        """The solution from the solved declaration (its blocks' values and multipliers)."""
        raise NotImplementedError(f"{type(self).__name__} reads no declared solution")

    @abstractmethod
    def evaluate(self, data: DataT, solution: SolT, *, aggregate: AggT | None = None) -> Evaluation:
        """E^t and the regime of every original entry at the solution (one data pass).
        ``aggregate``: the aggregated data the solution was solved on, when the caller has it
        (the driver does): the same read may sum the certificate's terms
        (``Evaluation.bound_terms``)."""

    def aggregate_of(self, data: DataT, partition: Partition, aggregate: AggT | None) -> AggT:
        """``aggregate`` when it is the aggregate of ``partition``, else that aggregate computed
        (one more pass over the data)."""
        if aggregate is not None and cast(Any, aggregate).partition is partition:
            return aggregate
        return self.aggregate(data, partition)

    # -------------------------------------------------------------- the certificate
    def lower_bound(
        self,
        data: DataT,
        solution: SolT,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: AggT | None = None,
    ) -> Bound | None:
        """A lower bound L ≤ E* on the ORIGINAL problem's optimum, proven from the data.

        Weak duality at a point feasible for the dual of the original problem, built from the
        solution (or, when ``dual`` is given, at that point: ``aidopt verify``), evaluated on
        every entry, with every residual and rounding allowance subtracted (see
        :mod:`aidopt.core.certificate`). ``upper`` is a proven upper bound on E* (the best E so
        far), which bounds the free variables the allowances need; ``aggregate`` as in
        :meth:`evaluate` (the candidate dual points come from it). None: no bound (then the
        driver never claims optimality).
        """
        return None

    def solution_to_dict(self, data: DataT, solution: SolT) -> dict[str, Any]:
        """JSON-ready description of a solution (coefficients by column name, ...)."""
        return {}

    def solution_from_dict(
        self, data: DataT, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> SolT:
        """The solution described by :meth:`solution_to_dict` (and, for models whose solution
        is its dual expansion, the certificate's dual point): used by ``aidopt verify``."""
        raise NotImplementedError(f"{type(self).__name__} cannot rebuild a solution from JSON")

    # -------------------------------------------------------------- derived forms
    def build(self, agg: AggT) -> Any:
        """The aggregated problem as a Pyomo ``ConcreteModel`` (any Pyomo solver, LP/MPS
        export, printing)."""
        return self.declare(agg).pyomo()

    def extract(self, model: Any, agg: AggT) -> SolT:
        """The solution read from a solved :meth:`build`."""
        return self.read(self.declare(agg).values_from_pyomo(model), agg)

    def matrix_program(self, agg: AggT, previous: Previous | None = None) -> MatrixProgram | None:
        """The aggregated problem as a matrix program (HiGHS, Gurobi, CPLEX, SCIP).

        ``previous`` allows a warm start (e.g. a basis mapped to the split clusters, in the
        solver-neutral codes of :mod:`aidopt.solvers.program`); None: no matrix form.
        """
        return self.declare(agg).program()

    def solution_from_program(self, result: SolveResult, agg: AggT) -> SolT:
        """The solution from a solved :meth:`matrix_program`."""
        return self.read(self.declare(agg).values(result), agg)

    def program_bound(self, result: SolveResult, agg: AggT) -> float | None:
        """What a solved :meth:`matrix_program` proves about F^t (the solver's bound by
        default; a model whose matrix form is the dual says here how it bounds F^t). For the
        history only: the certificate is :meth:`lower_bound`."""
        return result.bound

    def to_structure(self, kind: type, agg: AggT, previous: Previous | None) -> Any:
        """The aggregated problem as an instance of ``kind`` (one of :attr:`structures`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be written as {kind.__name__}")

    def from_structure(self, kind: type, answer: Any, agg: AggT) -> SolT:
        """The solution from a structure solver's answer."""
        raise NotImplementedError(f"{type(self).__name__} cannot read a {kind.__name__} answer")

    def solve_procedure(
        self, agg: AggT, solve: SubSolve, previous: Previous | None
    ) -> tuple[SolT | None, SolveResult] | None:
        """For a model whose aggregated solve is several programs (S3VM: a local search of
        convex QPs for its big-M, the MIQP, the relaxation that certifies it): solve them with
        ``solve`` (the user's solver, as a function) and return (solution, result). The default,
        None, lets the driver solve the one aggregated problem."""
        return None


class BlockPass(ABC):
    """The chunked data pass: a model whose per-entry work is a sum over rows declares it per
    block of rows, and the engine (:mod:`aidopt.engine.chunked`) runs it on rows in blocks, in
    memory or on Dask. ``rows`` is a block (the model's data type), ``whole`` the n and m of all
    rows; a term of E^t that is not a row sum (a regulariser) comes with the block at offset 0.
    """

    #: True when ``solution_to_dict`` takes ``row_sums``, the sums of
    #: :meth:`solution_row_sums` over every block (an SVM's training accuracy)
    describes_by_row_sums: ClassVar[bool] = False

    def aggregate(self, data: Any, partition: Partition, *, previous: Any = None) -> Any:
        """The aggregate of rows in memory: the one-block case of the engine's pass,
        :meth:`aggregate_from_sums` of the cluster sums of :meth:`cluster_columns` (a split
        partition re-sums its split clusters only, :meth:`Partition.column_sums`). A model that
        is also an :class:`AggregatedModel` lists :class:`BlockPass` first to take it."""
        return self.aggregate_from_sums(
            partition.column_sums(self.cluster_columns(data)), partition
        )

    @abstractmethod
    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the random sample that places C^0."""

    @abstractmethod
    def initial_rule(self, sample: Any, whole: Any, rate: float) -> Any:
        """What places a row in C^0, fitted on the sample."""

    @abstractmethod
    def initial_labels(self, rows: Any, offset: int, rule: Any) -> NDArray[np.int64]:
        """The C^0 labels of a block (one streaming pass)."""

    @abstractmethod
    def cluster_columns(self, rows: Any) -> list[Any]:
        """Per-row columns whose cluster sums are the aggregate (vectors and matrices side by
        side; ``ROW_COUNT`` for a column of ones)."""

    @abstractmethod
    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> Any:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`."""

    @abstractmethod
    def evaluate_rows(self, rows: Any, solution: Any, offset: int, whole: Any) -> Evaluation:
        """A block's share of E^t (with its rounding bound) and its regimes."""

    @abstractmethod
    def bound_candidates(self, agg: Any, solution: Any) -> tuple[list[tuple[Any, str]], Any]:
        """The cluster duals to spread over the entries, each with what it is, and a context
        for :meth:`bound_from_terms`."""

    @abstractmethod
    def bound_terms(self, rows: Any, u: NDArray[np.float64]) -> Any:
        """A block's sums of the certificate at the per-row dual u (they add:
        ``type(terms).total``)."""

    @abstractmethod
    def bound_from_terms(
        self,
        terms: Any,
        context: Any,
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound | None:
        """The bound from the terms summed over every block."""

    def bound_on_rows(
        self,
        data: Any,
        solution: Any,
        upper: float,
        aggregate: Any,
        dual_point: Callable[[NDArray[np.float64]], DualPoint],
    ) -> Bound | None:
        """The best bound over :meth:`bound_candidates` spread over the rows in memory (the
        engine's pass on one block), with the dual point ``dual_point(u)`` makes of the winner's
        per-row dual u; None without a partition or a candidate."""
        part = solution.partition
        if part is None:
            return None
        agg = cast(AggregatedModel, self).aggregate_of(data, part, aggregate)
        candidates, context = self.bound_candidates(agg, solution)
        found = []
        for s, what in candidates:
            u = s[part.labels]
            source = f"{what} spread over the entries, on all data"
            terms = self.bound_terms(data, u)
            bound = self.bound_from_terms(terms, context, 0, upper, source, data.feature_names)
            found.append((bound, lambda u=u: dual_point(u)))
        return best_with_dual(found)

    def cluster_bound_terms(self, rows: Any, labels: NDArray[np.int64], duals: Any) -> list[Any]:
        """:meth:`bound_terms` at u = s[labels] for every cluster dual s of ``duals`` (q × K
        × ...); a model may compute them in one read of the block."""
        return [self.bound_terms(rows, s[labels]) for s in duals]

    def evaluate_and_bound_rows(
        self,
        rows: Any,
        solution: Any,
        offset: int,
        whole: Any,
        labels: NDArray[np.int64],
        duals: Any,
    ) -> tuple[Evaluation, list[Any]]:
        """:meth:`evaluate_rows` and :meth:`cluster_bound_terms` (a model may fuse them into
        one read of the block)."""
        evaluation = self.evaluate_rows(rows, solution, offset, whole)
        return evaluation, self.cluster_bound_terms(rows, labels, duals)

    def check_blocks(self) -> None:
        """Refuse, before any reading, a setting of the model that needs every row at once
        (raise InvalidParameterError); every setting runs on blocks by default."""
        return

    def solution_row_sums(self, rows: Any, solution: Any) -> NDArray:
        """What the description of the answer sums over a block's rows (when
        :attr:`describes_by_row_sums`)."""
        raise NotImplementedError(f"{type(self).__name__} describes no answer by row sums")
