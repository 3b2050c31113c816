"""Results of an AID run: status, bounds, the solution and the per-iteration history."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from aidopt.common.jsonable import plain
from aidopt.core.certificate import Certificate
from aidopt.core.partition import Partition

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HISTORY_COLUMNS", "START_COLUMNS", "AIDResult", "AIDStatus", "IterationRecord"]


class AIDStatus(StrEnum):
    """Why the run stopped.

    ``optimal``: certified — every cluster pure AND a lower bound proven from the original data
    within max(tol, the inner solver's stated accuracy) of the objective. ``gap``: the proven
    relative gap (best upper − lower)/|best upper| ≤ tol. ``pure``: every cluster is pure for the
    problem the backend solved, but no bound proves optimality (an inexact backend such as
    liblinear, or a gap the inner solver could not close): not a proof. ``iteration_limit`` /
    ``time_limit``: a limit was reached first. ``solver_limit``: the solver refused or failed on
    a later aggregated problem (e.g. a licence size limit); the best solution so far is returned.
    """

    OPTIMAL = "optimal"
    GAP = "gap"
    PURE = "pure"
    ITERATION_LIMIT = "iteration_limit"
    TIME_LIMIT = "time_limit"
    SOLVER_LIMIT = "solver_limit"


HISTORY_COLUMNS = (
    "iteration",
    "clusters",
    "rate",
    "lower_bound",
    "upper_bound",
    "best_upper_bound",
    "gap",
    "impure_clusters",
    "solve_seconds",
    "pass_seconds",
    "aggregated_objective",
    "iteration_bound",
)

#: one row per start of a run with ``n_init > 1`` (``AIDResult.starts``)
START_COLUMNS = (
    "start",
    "random_state",
    "status",
    "objective",
    "lower_bound",
    "gap",
    "iterations",
    "seconds",
)


@dataclass(frozen=True)
class IterationRecord:
    """One row of the history.

    ``lower_bound`` is the best bound on E* proven so far from the original data (the model's
    certificate, non-decreasing; None where the model gives none), ``iteration_bound`` the one
    proven at this iteration, ``aggregated_objective`` F^t as the solver reports it (the paper's
    lower bound for convex models, not used as a proof), ``upper_bound`` E^t.
    """

    iteration: int
    clusters: int
    rate: float
    lower_bound: float | None
    upper_bound: float
    best_upper_bound: float
    gap: float | None
    impure_clusters: int
    solve_seconds: float
    pass_seconds: float
    aggregated_objective: float | None = None
    iteration_bound: float | None = None


@dataclass(frozen=True)
class AIDResult:
    """The outcome of :meth:`aidopt.AIDSolver.solve` (or ``solve_full``).

    ``certificate`` holds the proven bounds on the original
    optimum and the dual point that proves the lower one (re-checkable by ``aidopt verify``);
    ``timing`` the seconds spent per phase; ``starts`` the runs of ``n_init > 1`` (this result
    is the lowest-objective one's).
    """

    model: str
    solver: str
    status: AIDStatus
    message: str
    objective: float
    lower_bound: float | None
    gap: float | None
    iterations: int
    n: int
    m: int
    final_rate: float
    seconds: float
    solution: Any
    solution_dict: dict[str, Any]
    records: tuple[IterationRecord, ...]
    partition: Partition = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict)
    certificate: Certificate | None = None
    timing: dict[str, float] = field(default_factory=dict)
    target: str | None = None
    starts: tuple[dict[str, Any], ...] = ()

    @property
    def certified(self) -> bool:
        """True when optimality is certified by the optimality condition (all clusters pure)."""
        return self.status is AIDStatus.OPTIMAL

    @property
    def starts_table(self) -> pd.DataFrame:
        """The runs of ``n_init > 1``, one row per start (empty for a single run)."""
        import pandas as pd

        return pd.DataFrame(list(self.starts), columns=list(START_COLUMNS))

    @property
    def history(self) -> pd.DataFrame:
        """Per-iteration history, one row per iteration (columns :data:`HISTORY_COLUMNS`)."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.records], columns=list(HISTORY_COLUMNS))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with the fields of the CLI's ``--json`` output."""
        return {
            "model": self.model,
            "solver": self.solver,
            "target": self.target,
            "status": self.status.value,
            "message": self.message,
            "objective": plain(self.objective),
            "lower_bound": plain(self.lower_bound),
            "gap": plain(self.gap),
            "iterations": self.iterations,
            "n": self.n,
            "m": self.m,
            "final_rate": self.final_rate,
            "seconds": self.seconds,
            "params": self.params,
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "timing": self.timing,
            "solution": self.solution_dict,
            "history": [{k: plain(v) for k, v in asdict(r).items()} for r in self.records],
            "starts": [{k: plain(v) for k, v in row.items()} for row in self.starts],
        }
