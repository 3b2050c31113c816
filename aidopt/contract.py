"""The model contract: what a researcher writes, in one file, to get a new aggregated model.

A model of the form (1) of Park & Klabjan, min Σ_i f_i(x_i) + f(y), whose per-entry loss is
piecewise linear in a linear score, plugs into the generic AID driver by subclassing
:class:`AggregatedModel` and filling in its parts (the paper's four components, §2):

================================  ===========================================================
``initial_partition``             initial clusters C^0 (and the default rate r^0)
``aggregate``                     aggregated data: centroids and weights |C_k|
``build``                         the aggregated problem, declared algebraically in Pyomo
``extract``                       the solution read back from the solved Pyomo model
``evaluate``                      original objective E^t (upper bound) and the per-entry regime
``lower_bound``                   a bound L ≤ E* proven on the original data (the certificate)
================================  ===========================================================

Purity of a cluster = all its entries share one regime (the linear piece of the loss); the
driver splits impure clusters by regime. "Every cluster pure" is the paper's optimality
condition, but the driver certifies optimality only with a lower bound that the model proves on
the ORIGINAL data (weak duality at a dual point built from the solution, see
:mod:`aidopt.certificate`), never with a solver's own objective or bound.
Optional parts: a direct matrix form of the same program (``matrix_program`` /
``solution_from_program``), and model-specific solvers (``special_solvers``/``solve_special``).

A model never imports a solver, never logs and never mutates its inputs. See
``docs/writing-a-model.md`` for the worked example (LAD).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from aidopt.certificate import Bound, DualPoint
from aidopt.partition import Partition
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolveResult

__all__ = ["AggregatedModel", "Bound", "Dataset", "DualPoint", "Evaluation", "Previous"]


class Dataset(Protocol):
    """What the driver needs of a model's data object: n entries, m features."""

    @property
    def n(self) -> int: ...

    @property
    def m(self) -> int: ...


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
    impure clusters are split; None splits them by ``regime``.
    """

    objective: float
    regime: NDArray[np.int64]
    split_regime: NDArray[np.int64] | None = None
    objective_error: float = 0.0


@dataclass(frozen=True)
class Previous(Generic[AggT, SolT]):
    """The previous iteration, handed to a solve for warm starts."""

    aggregate: AggT
    solution: SolT
    result: SolveResult


class AggregatedModel(ABC, Generic[DataT, AggT, SolT]):
    """Base class of every model; subclasses live in ``models/`` (``aidopt.models``)."""

    #: short name used by the CLI and in results (``"lad"``)
    name: ClassVar[str]
    #: the class of the aggregated problem (what a generic solver must handle)
    problem_class: ClassVar[ProblemClass]
    #: True when the aggregated optimum F^t is a valid lower bound on the original optimum E*
    #: (convex models, Jensen); the certificate itself comes from :meth:`lower_bound`
    gives_lower_bound: ClassVar[bool]
    #: model-specific solvers this model can use besides the generic ones
    special_solvers: ClassVar[tuple[str, ...]] = ()
    #: the solver used when none is named (measured the fastest exact one for this model)
    default_solver: ClassVar[str] = "highs"
    #: the paper the model comes from
    citation: ClassVar[str] = ""

    # -------------------------------------------------------------- parameters and data
    def check_params(self) -> None:
        """Validate the constructor's parameters; raise InvalidParameterError."""

    @abstractmethod
    def data_from_frame(self, frame: pd.DataFrame, target: str | None) -> DataT:
        """Validated model data from a table (used by the CLI for CSV files)."""

    # -------------------------------------------------------------- the four components
    @abstractmethod
    def default_rate(self, data: DataT) -> float:
        """The paper's initial aggregation rate r^0 = |K^0| / n for this data."""

    @abstractmethod
    def initial_partition(self, data: DataT, rate: float, rng: np.random.Generator) -> Partition:
        """The initial clusters C^0 for target rate r^0."""

    @abstractmethod
    def aggregate(self, data: DataT, partition: Partition) -> AggT:
        """Aggregated data of the clusters (centroids, weights |C_k|, cluster labels)."""

    @abstractmethod
    def build(self, agg: AggT) -> Any:
        """The aggregated problem as a Pyomo ``ConcreteModel`` (reads like the paper)."""

    @abstractmethod
    def extract(self, model: Any, agg: AggT) -> SolT:
        """The solution read from a solved Pyomo model."""

    @abstractmethod
    def evaluate(self, data: DataT, solution: SolT) -> Evaluation:
        """E^t and the regime of every original entry at the solution (one data pass)."""

    # -------------------------------------------------------------- optional parts
    def matrix_program(self, agg: AggT, previous: Previous | None = None) -> MatrixProgram | None:
        """The aggregated problem in matrix form (fast path), or None when not provided.

        ``previous`` allows a warm start (e.g. a simplex basis mapped to the split clusters).
        """
        return None

    def solution_from_program(self, result: SolveResult, agg: AggT) -> SolT:
        """The solution from a solved :meth:`matrix_program`."""
        raise NotImplementedError(f"{type(self).__name__} has no matrix form")

    def program_bound(self, result: SolveResult, agg: AggT) -> float | None:
        """The lower bound on F^t that a solved :meth:`matrix_program` proves.

        The default is the solver's own bound, right when the matrix program *is* the aggregated
        problem; a model whose matrix form is a reformulation (e.g. the LP dual) says here how
        its result bounds F^t.
        """
        return result.bound

    def check_data(self, data: DataT) -> None:
        """Model-specific checks of the data (e.g. enough rows for the coefficients)."""

    def solve_special(
        self,
        solver: str,
        agg: AggT,
        *,
        time_limit: float | None,
        verbose: bool,
        options: dict[str, Any],
        previous: Previous | None,
    ) -> tuple[SolT | None, SolveResult]:
        """Solve the aggregated problem with one of :attr:`special_solvers`."""
        raise NotImplementedError(f"{type(self).__name__} has no special solver {solver!r}")

    def solution_to_dict(self, data: DataT, solution: SolT) -> dict[str, Any]:
        """JSON-ready description of a solution (coefficients by column name, ...)."""
        return {}

    # -------------------------------------------------------------- the certificate
    def lower_bound(
        self,
        data: DataT,
        solution: SolT,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
    ) -> Bound | None:
        """A lower bound L ≤ E* on the ORIGINAL problem's optimum, proven from the data.

        Weak duality at a point feasible for the dual of the original problem, built from the
        solution (or, when ``dual`` is given, at that point: ``aidopt verify``), evaluated on
        every entry, with every residual and rounding allowance subtracted (see
        :mod:`aidopt.certificate`). ``upper`` is a proven upper bound on E* (the best E so far),
        which bounds the free variables the allowances need. None: no bound (then the driver
        never claims optimality).
        """
        return None

    def solution_from_dict(
        self, data: DataT, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> SolT:
        """The solution described by :meth:`solution_to_dict` (and, for models whose solution
        is its dual expansion, the certificate's dual point): used by ``aidopt verify``."""
        raise NotImplementedError(f"{type(self).__name__} cannot rebuild a solution from JSON")

    def summary(self) -> dict[str, Any]:
        """The model's parameters, for logs and results."""
        return {}
