"""The generic driver, exercised without any LP solver: a toy model solved in closed form.

Toy model: the weighted median, min_c Σ_i |y_i − c| (LAD with an intercept only). Aggregated:
min_c Σ_k |C_k| |ȳ_k − c|, solved exactly by a weighted median of the centroids.
"""

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from aidopt import AIDSolver, AIDStatus, Hook
from aidopt.core.certificate import Bound, DualPoint
from aidopt.core.contract import AggregatedModel, Evaluation
from aidopt.core.partition import Partition
from aidopt.core.registry import register_solver
from aidopt.core.result import HISTORY_COLUMNS
from aidopt.exceptions import (
    ConvergenceWarning,
    DataError,
    InfeasibleSettingError,
    InvalidParameterError,
    SolverCapabilityError,
    SolverError,
    SolverLicenseError,
    SolverUnavailableError,
)
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.program import ProblemClass
from aidopt.solvers.structures import Structure


@dataclass(frozen=True)
class ToyData:
    y: np.ndarray

    @property
    def n(self):
        return self.y.size

    @property
    def m(self):
        return 1


@dataclass(frozen=True, eq=False)
class WeightedMedian(Structure):
    """min_c Σ_k w_k |ȳ_k − c|, with what the test scripted for this solve."""

    title = "weighted median"
    ybar: np.ndarray
    weight: np.ndarray
    scripted: object = None


class ExactMedian(SolverAdapter):
    """A solver of the toy structure, in closed form (registered as 'exact')."""

    NAME = "exact"
    STRUCTURES = frozenset({WeightedMedian})

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if isinstance(structure.scripted, Exception):
            raise structure.scripted
        if isinstance(structure.scripted, SolveStatus):
            return None, SolveResult(status=structure.scripted, message="scripted")
        ybar, w = structure.ybar, structure.weight
        order = np.argsort(ybar)
        cum = np.cumsum(w[order])
        c = float(ybar[order][np.searchsorted(cum, cum[-1] / 2)])
        value = float(np.sum(w * np.abs(ybar - c)))
        return c, SolveResult(status=SolveStatus.OPTIMAL, objective=value, bound=value)


register_solver("exact", ExactMedian)


class MedianModel(AggregatedModel):
    name = "median"
    problem_class = ProblemClass.LP
    structures = (WeightedMedian,)

    def __init__(self, script=None):
        self.script = script or {}  # iteration → exception or status to produce
        self.calls = 0

    def data_from_frame(self, frame, target):
        return ToyData(frame[target].to_numpy(float))

    def default_rate(self, data):
        return 0.01

    def initial_partition(self, data, rate, rng):
        k = max(1, int(rate * data.n))
        return Partition.from_labels(rng.integers(0, k, size=data.n))

    def aggregate(self, data, partition, *, previous=None):
        return partition.means(data.y), partition.sizes.astype(float)

    def build(self, agg):
        raise NotImplementedError

    def extract(self, model, agg):
        raise NotImplementedError

    def to_structure(self, kind, agg, previous):
        self.calls += 1
        return WeightedMedian(agg[0], agg[1], self.script.get(self.calls))

    def from_structure(self, kind, answer, agg):
        return answer

    def evaluate(self, data, solution, *, aggregate=None):
        r = data.y - solution
        return Evaluation(float(np.abs(r).sum()), (r > 0).astype(np.int64))

    def solution_to_dict(self, data, solution):
        return {"c": solution}

    def lower_bound(self, data, solution, evaluation, upper, dual=None, *, aggregate=None):
        """Weak duality for min Σ|y_i − c|: any u ∈ [−1, 1]ⁿ with Σu = 0 gives Σ u_i y_i ≤ E*.
        u = sign(r_i), the entries with r_i = 0 taking whatever balances Σu (if they can)."""
        r = data.y - solution
        u = np.sign(r)
        ties = np.flatnonzero(r == 0)
        if ties.size:
            u[ties] = np.clip(-u.sum() / ties.size, -1.0, 1.0)
        residual = abs(float(u.sum()))
        value = float(u @ data.y) - residual * float(np.abs(data.y).max())  # |c*| ≤ max|y|
        return Bound(value, "median dual", DualPoint.compress(u, evaluation.regime, (-1.0, 1.0)))


@pytest.fixture
def data():
    return ToyData(np.random.default_rng(3).laplace(size=2001) * 5 + 1)


def test_certified_optimum_is_the_median(data):
    result = AIDSolver(MedianModel(), solver="exact", tol=0.0).solve(data)
    assert result.status is AIDStatus.OPTIMAL and result.certified
    true_objective = np.abs(data.y - np.median(data.y)).sum()
    assert result.objective == pytest.approx(true_objective, rel=1e-12)
    assert result.lower_bound == pytest.approx(result.objective, rel=1e-12)
    h = result.history
    assert list(h.columns) == list(HISTORY_COLUMNS)
    assert len(h) == result.iterations
    # F^t non-decreasing (Prop. 2), E_best non-increasing, gap non-increasing
    assert np.all(np.diff(h["lower_bound"]) >= -1e-9 * abs(result.objective))
    assert np.all(np.diff(h["best_upper_bound"]) <= 0)
    assert np.all(np.diff(h["gap"]) <= 1e-12)
    assert h["impure_clusters"].iloc[-1] == 0
    assert h["clusters"].is_monotonic_increasing


def test_gap_stop_and_limits(data):
    gap = AIDSolver(MedianModel(), solver="exact", tol=0.05).solve(data)
    assert gap.status is AIDStatus.GAP and gap.gap <= 0.05
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        one = AIDSolver(MedianModel(), solver="exact", tol=0.0, max_iter=1).solve(data)
    assert one.status is AIDStatus.ITERATION_LIMIT and one.iterations == 1
    with pytest.warns(ConvergenceWarning, match="time limit"):
        timed = AIDSolver(MedianModel(), solver="exact", tol=0.0, time_limit=1e-6).solve(data)
    assert timed.status is AIDStatus.TIME_LIMIT and timed.iterations == 1


def test_n_init_stops_at_a_certified_start_and_shares_the_time_limit(data):
    """A convex model's first start is certified: the other starts are not run. A start cut by
    the time limit ends the loop and makes the answer ``time_limit``."""
    result = AIDSolver(MedianModel(), solver="exact", tol=0.0, n_init=3).solve(data)
    single = AIDSolver(MedianModel(), solver="exact", tol=0.0).solve(data)
    assert result.status is AIDStatus.OPTIMAL and result.objective == single.objective
    assert list(result.starts_table["random_state"]) == [0]
    assert "a certified start ends the loop" in result.message
    assert result.params["n_init"] == 3 and result.params["start"] == 0
    with pytest.warns(ConvergenceWarning, match="the time limit stopped random_state 0"):
        timed = AIDSolver(MedianModel(), solver="exact", tol=0.0, n_init=3, time_limit=1e-6).solve(
            data
        )
    assert timed.status is AIDStatus.TIME_LIMIT and len(timed.starts) == 1

    class SlowFinish(Hook):
        def on_finish(self, result):
            time.sleep(0.3)  # start 1 ends after the deadline: start 2 is cut

    options = {"solver": "exact", "tol": 0.0, "max_iter": 1, "n_init": 3, "time_limit": 0.2}
    with pytest.warns(ConvergenceWarning, match="the time limit stopped random_state 1"):
        cut = AIDSolver(MedianModel(), hooks=[SlowFinish()], **options).solve(data)
    assert cut.status is AIDStatus.TIME_LIMIT and cut.params["start"] in (0, 1)
    # the solver refuses start 2's first problem (the 2nd solve): start 1 is kept, solver_limit
    refusing = MedianModel(script={2: SolverLicenseError("size-limited licence")})
    options = {"solver": "exact", "tol": 0.0, "max_iter": 1, "n_init": 3}
    with pytest.warns(ConvergenceWarning, match="the solver limit stopped random_state 1"):
        refused = AIDSolver(refusing, **options).solve(data)
    assert refused.status is AIDStatus.SOLVER_LIMIT and len(refused.starts) == 1
    assert single.starts == () and single.starts_table.empty


def test_licence_limit_after_first_iteration_is_a_status(data):
    exc = SolverLicenseError("size-limited licence")
    model = MedianModel(script={3: exc})
    with pytest.warns(ConvergenceWarning):
        result = AIDSolver(model, solver="exact", tol=0.0).solve(data)
    assert result.status is AIDStatus.SOLVER_LIMIT and result.iterations == 2
    with pytest.raises(SolverLicenseError):
        AIDSolver(MedianModel(script={1: exc}), solver="exact").solve(data)


class ConstrainedMedianModel(MedianModel):
    """As if an option could make the aggregated problem infeasible (S3VM's balance)."""

    options_can_be_infeasible = True


def test_solver_statuses_are_reported(data):
    with pytest.raises(InfeasibleSettingError, match="infeasible"):
        infeasible = ConstrainedMedianModel(script={1: SolveStatus.INFEASIBLE})
        AIDSolver(infeasible, solver="exact").solve(data)
    # a problem that no option makes infeasible: the solver failed, it is not "infeasible"
    with pytest.raises(SolverError, match="numerical failure of the solver") as failed:
        AIDSolver(MedianModel(script={1: SolveStatus.INFEASIBLE}), solver="exact").solve(data)
    assert not isinstance(failed.value, InfeasibleSettingError)
    with pytest.warns(ConvergenceWarning):
        result = AIDSolver(
            MedianModel(script={2: SolveStatus.TIME_LIMIT}), solver="exact", tol=0.0
        ).solve(data)
    assert result.status is AIDStatus.TIME_LIMIT and result.iterations == 1


def test_full_solve_is_one_iteration_on_singletons(data):
    result = AIDSolver(MedianModel(), solver="exact").solve_full(data)
    assert result.status is AIDStatus.OPTIMAL and result.iterations == 1
    assert result.final_rate == 1.0
    assert result.objective == pytest.approx(np.abs(data.y - np.median(data.y)).sum())


def test_hooks_log_and_json(data, caplog):
    seen = []

    class Recorder(Hook):
        def on_start(self, solver, data, partition):
            seen.append("start")

        def after_iteration(self, record, solution, partition):
            seen.append(record.iteration)

        def on_finish(self, result):
            seen.append("finish")

    with caplog.at_level(logging.INFO, logger="aidopt"):
        result = AIDSolver(MedianModel(), solver="exact", tol=0.0, hooks=[Recorder()]).solve(data)
    assert seen == ["start", *range(1, result.iterations + 1), "finish"]
    assert "Stopped (optimal)" in caplog.text and "Lower bound" in caplog.text
    payload = result.to_dict()
    for key in (
        "model",
        "solver",
        "status",
        "objective",
        "lower_bound",
        "gap",
        "iterations",
        "n",
        "m",
        "final_rate",
        "seconds",
        "solution",
        "history",
    ):
        assert key in payload
    assert set(payload["history"][0]) == set(HISTORY_COLUMNS)
    assert isinstance(result.history, pd.DataFrame)


def test_parameter_and_solver_errors(data):
    with pytest.raises(InvalidParameterError, match="'tol' parameter of AIDSolver"):
        AIDSolver(MedianModel(), solver="exact", tol=-1).solve(data)
    with pytest.raises(InvalidParameterError, match="'max_iter'"):
        AIDSolver(MedianModel(), solver="exact", max_iter=0).solve(data)
    with pytest.raises(InvalidParameterError, match="'n_init' parameter of AIDSolver"):
        AIDSolver(MedianModel(), solver="exact", n_init=0).solve(data)
    with pytest.raises(InvalidParameterError, match="'interface'"):
        AIDSolver(MedianModel(), solver="exact", interface="fast").solve(data)
    with pytest.raises(SolverUnavailableError, match="no_such_solver"):
        AIDSolver(MedianModel(), solver="no_such_solver").solve(data)


def test_capability_is_checked_before_solving(data):
    class MixedIntegerMedian(MedianModel):
        problem_class = ProblemClass.MIQP

    model = MixedIntegerMedian()
    with pytest.raises(SolverCapabilityError, match=r"cannot solve MIQP.*gurobi"):
        AIDSolver(model, solver="highs").solve(data)
    assert model.calls == 0


@pytest.mark.parametrize("name", ["lad", "svm", "s3vm", "pu", "ocsvm"])
@pytest.mark.parametrize(
    "wrong", [np.ones((4, 2)), pd.DataFrame({"y": [1.0, 0.0], "x": [1.0, 2.0]}), [1, 2]]
)
def test_data_of_another_type_is_refused_by_name(name, wrong):
    """A model's data object is asked for by its type, before any model code reads it (a
    DataFrame with a column y once reached S3VM's checks as an AttributeError)."""
    from aidopt.core.registry import model as registered

    model = registered(name)(**({"prior": 0.5} if name == "pu" else {}))
    with pytest.raises(
        DataError, match=rf"{name} model takes a \w+Data .*got {type(wrong).__name__}"
    ):
        AIDSolver(model).solve(wrong)
