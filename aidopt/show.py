"""A teacher's view of one AID iteration: the aggregated problem it solved, in algebraic form and
as an LP/MPS file any solver reads, and a picture of the iteration on 2-D data.

    view = show_iteration(LADModel(), data, iteration=2)
    print(view.algebra())              # the Pyomo model of iteration 2, constraint by constraint
    view.export("iter2.lp")            # or .mps: HiGHS, Gurobi, CPLEX, GLPK read it
    view.plot("iter2.png")             # clusters, centroids by weight, the fit, impure clusters

The run is the ordinary one (same driver, solver and certificate) stopped after ``iteration``;
the view rebuilds that iteration's aggregate from its partition.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aidopt.core.contract import AggregatedModel
from aidopt.core.driver import AIDSolver, Hook
from aidopt.core.partition import Partition
from aidopt.core.result import AIDResult, IterationRecord
from aidopt.data.io import check_output_path
from aidopt.exceptions import AidoptError

__all__ = ["EXPORT_SUFFIXES", "IterationView", "show_iteration"]

#: the file types an aggregated problem can be written as (Pyomo's writers)
EXPORT_SUFFIXES = (".lp", ".mps")


@dataclass
class IterationView:
    """Iteration ``record.iteration`` of a run: its partition, solution and aggregate."""

    model: AggregatedModel
    data: Any
    record: IterationRecord
    partition: Partition
    solution: Any
    result: AIDResult

    @functools.cached_property
    def aggregate(self) -> Any:
        """The iteration's aggregated data (centroids and weights), rebuilt from its clusters."""
        return self.model.aggregate(self.data, self.partition)

    def pyomo_model(self) -> Any:
        """The aggregated problem of the iteration as the model declares it (Pyomo)."""
        return self.model.build(self.aggregate)

    def algebra(self) -> str:
        """The aggregated problem as the model declares it, one line per objective, constraint
        and variable block, the centroids and weights as numbers."""
        r = self.record
        bound = "-" if r.lower_bound is None else f"{r.lower_bound:.10g}"
        head = [
            f"Aggregated {self.model.name} problem of iteration {r.iteration}: "
            f"{r.clusters} clusters of {self.data.n} entries ({r.impure_clusters} impure)",
            f"(its optimum F^t = {r.aggregated_objective}; on all data E^t = "
            f"{r.upper_bound:.10g}, best lower bound {bound})",
            "",
        ]
        return "\n".join(head + _algebraic_lines(self.pyomo_model()))

    def export(self, path: str | Path) -> Path:
        """Write the aggregated problem as an LP or MPS file (by the suffix)."""
        out = check_output_path(path, "--export", EXPORT_SUFFIXES)
        self.pyomo_model().write(
            str(out), format=out.suffix[1:], io_options={"symbolic_solver_labels": True}
        )
        return out

    def plot(self, path: str | Path) -> Path:
        """The iteration on 2-D data: entries coloured by cluster, centroids sized by weight,
        impure clusters' centroids crossed out, the fit of the iteration, the bounds in the
        title. 2-D means two features, or one feature and the target (regression)."""
        from aidopt.plots import check_plot_path

        out = check_plot_path(path)
        points, target = _plane(self.data)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        labels = self.partition.labels
        sizes = self.partition.sizes.astype(float)
        centroids = self.partition.dense_sums(points) / sizes[:, None]
        regime = self.model.evaluate(self.data, self.solution).regime
        impure = self.partition.impure(regime)
        fig, ax = plt.subplots(figsize=(6.4, 5.2), constrained_layout=True)
        ax.scatter(points[:, 0], points[:, 1], c=labels % 20, cmap="tab20", s=8, alpha=0.55)
        area = 30.0 + 400.0 * sizes / sizes.max()
        ax.scatter(
            centroids[:, 0],
            centroids[:, 1],
            s=area,
            facecolors="none",
            edgecolors="black",
            linewidths=1.2,
        )
        if impure.any():
            ax.scatter(
                centroids[impure, 0],
                centroids[impure, 1],
                marker="x",
                s=80,
                c="red",
                label="impure cluster",
            )
            ax.legend(loc="best")
        _draw_fit(ax, self.solution, points, target)
        r = self.record
        lower = "-" if r.lower_bound is None else f"{r.lower_bound:.6g}"
        gap = "-" if r.gap is None else f"{r.gap:.2e}"
        ax.set_title(
            f"{self.model.name}, iteration {r.iteration}: {r.clusters} clusters, "
            f"{r.impure_clusters} impure\nlower {lower}, upper {r.upper_bound:.6g}, gap {gap}",
            fontsize=10,
        )
        ax.set_xlabel(self.data.feature_names[0])
        ax.set_ylabel("y" if target is not None else self.data.feature_names[1])
        fig.savefig(out, dpi=110)
        plt.close(fig)
        return out


def _algebraic_lines(model: Any) -> list[str]:
    """A Pyomo model as text: the objective, each constraint, each variable block's bounds."""
    import pyomo.environ as pyo

    lines = []
    for objective in model.component_data_objects(pyo.Objective, active=True):
        sense = "minimize" if objective.sense == pyo.minimize else "maximize"
        lines.append(f"{sense}  {objective.name}:  {objective.expr}")
    lines.append("subject to")
    for c in model.component_data_objects(pyo.Constraint, active=True):
        lower, upper = pyo.value(c.lower), pyo.value(c.upper)
        if c.equality:
            lines.append(f"  {c.name}:  {c.body} == {upper:g}")
        else:
            left = "" if lower is None else f"{lower:g} <= "
            right = "" if upper is None else f" <= {upper:g}"
            lines.append(f"  {c.name}:  {left}{c.body}{right}")
    lines.append("variables")
    for block in model.component_objects(pyo.Var, active=True):
        bounds = sorted({(v.lb, v.ub) for v in block.values()}, key=str)
        shown = "; ".join(_interval(lo, hi) for lo, hi in bounds[:3])
        more = f"; ... ({len(bounds)} different bounds)" if len(bounds) > 3 else ""
        lines.append(f"  {block.name} ({len(block)}): {shown}{more}")
    return lines


def _interval(lower: float | None, upper: float | None) -> str:
    if lower is None and upper is None:
        return "free"
    return (
        f"[{'-inf' if lower is None else f'{lower:g}'}, {'inf' if upper is None else f'{upper:g}'}]"
    )


def _plane(data: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The 2-D points of the picture, and the regression target when it is one of the axes."""
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X, dtype=float)
    target = getattr(data, "y", None)
    if X.shape[1] == 1 and target is not None and not hasattr(data, "classes"):
        return np.column_stack([X[:, 0], target]), np.asarray(target, dtype=float)
    if X.shape[1] != 2:
        raise AidoptError(
            f"A picture of an iteration needs two features (or one and a regression target); "
            f"these data have {X.shape[1]}. --export and the algebra work on any data."
        )
    return X, None


def _draw_fit(ax: Any, solution: Any, points: np.ndarray, target: np.ndarray | None) -> None:
    """The fit: a regression line, or the zero level (and margins) of the decision function."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    pad = 0.05 * (hi - lo + 1e-12)
    if target is not None:  # regression on one feature: the line of the iteration
        xs = np.linspace(lo[0] - pad[0], hi[0] + pad[0], 200)
        ax.plot(xs, solution.predict(xs[:, None]), color="black", lw=2, label="fit")
        return
    decision = getattr(solution, "decision_function", None)
    if decision is None:
        return
    gx, gy = np.meshgrid(
        np.linspace(lo[0] - pad[0], hi[0] + pad[0], 160),
        np.linspace(lo[1] - pad[1], hi[1] + pad[1], 160),
    )
    f = np.asarray(decision(np.column_stack([gx.ravel(), gy.ravel()]))).reshape(gx.shape)
    ax.contour(gx, gy, f, levels=[0.0], colors="black", linewidths=2)
    if f.min() < -1.0 and f.max() > 1.0:
        ax.contour(gx, gy, f, levels=[-1.0, 1.0], colors="grey", linestyles="--", linewidths=1)


class _Capture(Hook):
    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.seen: tuple[IterationRecord, Any, Partition] | None = None

    def after_iteration(self, record: IterationRecord, solution: Any, partition: Partition) -> None:
        if record.iteration == self.iteration:
            self.seen = (record, solution, partition)


def show_iteration(
    model: AggregatedModel, data: Any, iteration: int = 1, **run_options: Any
) -> IterationView:
    """Run AID (``run_options``: solver, rate, random_state, ...) up to ``iteration`` and return
    that iteration's view (an error naming the last iteration when the run ended before it)."""
    if iteration < 1:
        raise AidoptError(f"--iteration must be ≥ 1; got {iteration}.")
    capture = _Capture(iteration)
    solver = AIDSolver(model, max_iter=iteration, hooks=(capture,), **run_options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run is cut at the iteration on purpose
        result = solver.solve(data)
    if capture.seen is None:
        raise AidoptError(
            f"The run ended after {result.iterations} iteration(s) ({result.status.value}); "
            f"there is no iteration {iteration}."
        )
    record, solution, partition = capture.seen
    return IterationView(model, data, record, partition, solution, result)
