"""Branch and bound for the S3VM problem (:class:`~aidopt.solvers.structures.SemiSupervisedSVM`):
exact, open source, no size limit, no big-M.

A node fixes the labels d_k of some unlabeled rows. Its relaxation drops the loss of the others
(it is ≥ 0): the convex weighted SVM

    min ½‖w‖² + Σ_{k ∈ R} c_k max(0, μ_k − y_k f_k)      (R: labeled and decided rows, y_k = d_k
                                                          on the decided ones, μ_k = 1 or m_k),

whose dual in a_k = α_k y_k is the box QP max Σ a_k (y_k μ_k − β) − ½aᵀGa, G = XXᵀ, with
min(0, y_k c_k) ≤ a_k ≤ max(0, y_k c_k), and Σ a_k = 0 when b is free (then b is the multiplier
of that row; with b = β fixed the row is absent). It is solved exactly by
:func:`~aidopt.solvers.box_qp.box_qp`, warm-started at the parent's a (a new row enters at 0, so
the start stays feasible). Any feasible a bounds the node from below (weak duality), and the
node's hyperplane w = Xᵀa, with every unlabeled row at its better label (Lemma 1), is a feasible
point of the problem: the incumbent is the best of those, of ``start``, and of a local search
(Lemma 1 alternated with the SVM at those labels) from each new incumbent.

Branching: the undecided row with the largest loss c_k max(0, m_k − |f_k|) at the node's
hyperplane (the one nearest the hyperplane, weighted); a node where every undecided row is
outside its margin is solved. Nodes are taken best bound first; the search ends when the best
open bound is within the relative ``gap`` of the incumbent (status optimal, ``bound`` that open
bound), or at the time or node limit (statuses time_limit / iteration_limit, no answer).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import budget
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus, check_options
from aidopt.solvers.box_qp import box_qp
from aidopt.solvers.s3vm_big_m import value
from aidopt.solvers.structures import S3VMFit, SemiSupervisedSVM

__all__ = ["S3VMBranchAndBound", "branch_and_bound"]

_OPTIONS = frozenset({"gap", "max_nodes"})
_LOCAL_ROUNDS = 10  # Lemma 1 / SVM alternations per local search
PROGRESS_SECONDS = 5.0  # a search that runs longer logs its state this often

logger = logging.getLogger("aidopt.solvers.bnb")


@dataclass(frozen=True)
class BranchAndBoundResult:
    """The incumbent (w, b) and its value, the proven lower bound, nodes solved, and status."""

    w: NDArray[np.float64] | None
    b: float
    objective: float
    bound: float
    nodes: int
    status: SolveStatus


class _Problem:
    """The rows of a :class:`SemiSupervisedSVM` and its node relaxations."""

    def __init__(self, s: SemiSupervisedSVM) -> None:
        self.s = s
        self.X = np.asarray(s.features, dtype=np.float64)
        self.y, self.c = np.asarray(s.y, float), np.asarray(s.cost, float)
        labeled = self.y != 0
        self.L = np.flatnonzero(labeled)
        self.U = np.flatnonzero(~labeled & (np.asarray(s.margin) > 0))  # others: no loss
        self.mu = np.where(labeled, 1.0, s.margin)
        self.fixed = s.bias is not None
        self.beta = float(s.bias) if s.bias is not None else 0.0
        self.G = self.X @ self.X.T

    def value(self, w: NDArray[np.float64], b: float) -> float:
        """The objective of the structure at (w, b) (each unlabeled row at its better label)."""
        return value(self.s, w, b)

    def relax(self, d: NDArray[np.float64], start: NDArray[np.float64] | None):
        """The relaxation at labels ``d`` (over U; 0 = undecided): (its dual value, a lower
        bound; w; b; a over every row, for the children's warm start; the gap between the
        relaxation's value at (w, b) and that bound, the precision the node reaches)."""
        decided = d != 0
        rows = np.concatenate((self.L, self.U[decided]))
        yk = np.concatenate((self.y[self.L], d[decided]))
        box = yk * self.c[rows]
        p = yk * self.mu[rows] - self.beta
        G = self.G[np.ix_(rows, rows)]
        fit = box_qp(
            G,
            p,
            np.minimum(0.0, box),
            np.maximum(0.0, box),
            None if self.fixed else 0.0,
            None if start is None else start[rows],
        )
        a = fit.a
        value = float(p @ a - 0.5 * a @ (G @ a))
        w, b = self.X[rows].T @ a, self.beta if self.fixed else float(fit.nu)
        primal = self._primal(rows, yk, w, b)
        polished = self._polish(rows, yk, a, box)
        if polished is not None and (better := self._primal(rows, yk, *polished)) < primal:
            (w, b), primal = polished, better
        full = np.zeros(self.y.size)
        full[rows] = a
        return value, w, b, full, max(primal - value, 0.0)

    def _primal(self, rows, yk, w, b) -> float:
        """The relaxation's objective at (w, b)."""
        slack = self.mu[rows] - yk * (self.X[rows] @ w + b)
        return float(0.5 * w @ w + self.c[rows] @ np.maximum(0.0, slack))

    def _polish(self, rows, yk, a, box):
        """The primal point of the dual's face, from the primal KKT system (better conditioned
        than G, whose condition squares X's): rows strictly inside their box (F) on their
        margin, y_k f_k = μ_k; rows at the box (H) in the hinge with α_k = c_k: w = Σ_H c_k y_k
        x_k + Σ_F α_k y_k x_k, and Σ_H c_k y_k + Σ_F α_k y_k = 0 when b is free. A row of the
        other sets that the point puts on the wrong side of its margin (a degenerate a_k at a
        bound) joins F and the system is solved again, a few times at most."""
        size = np.abs(box)
        inside = (np.abs(a) > 1e-9 * size) & (np.abs(a) < (1 - 1e-9) * size)
        hinge = ~inside & (np.abs(a) >= 0.5 * size)
        X, mu = self.X[rows], self.mu[rows] - (yk * self.beta if self.fixed else 0.0)
        point = None
        for _ in range(5):
            point = self._face_point(X, yk, mu, box, np.flatnonzero(inside), hinge & ~inside)
            if point is None:
                return None
            slack = mu - yk * (X @ point[0] + (0.0 if self.fixed else point[1]))
            tol = 1e-12 * (1.0 + np.abs(mu))
            wrong = ~inside & np.where(hinge, slack < -tol, slack > tol)
            if not wrong.any():
                break
            inside |= wrong
        return point[0], self.beta if self.fixed else point[1]

    def _face_point(self, X, yk, mu, box, F, H):
        """(w, b) of the face F (on their margins) with the rows H in the hinge, or None."""
        r, n_b = X.shape[1], 0 if self.fixed else 1
        n = r + n_b + F.size
        K, rhs = np.zeros((n, n)), np.zeros(n)
        ZF = yk[F, None] * X[F]
        K[:r, :r] = np.eye(r)
        K[:r, r + n_b :] = -ZF.T
        K[r + n_b :, :r] = ZF
        rhs[:r] = X[H].T @ box[H]
        rhs[r + n_b :] = mu[F]
        if not self.fixed:
            K[r, r + n_b :] = -yk[F]
            K[r + n_b :, r] = yk[F]
            rhs[r] = float(np.sum(box[H]))
        try:
            solution = np.linalg.lstsq(K, rhs, rcond=None)[0]
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(solution)):
            return None
        return solution[:r], float(solution[r]) if n_b else 0.0

    def labels(self, w: NDArray[np.float64], b: float) -> NDArray[np.float64]:
        """Lemma 1: the better label sign f_k of every unlabeled row of U."""
        return np.where(self.X[self.U] @ w + b >= 0, 1.0, -1.0)

    def local_search(self, w, b, start):
        """Lemma 1 alternated with the SVM at its labels, from (w, b): the best point seen
        (value, w, b, the precision of the relaxation that gave it)."""
        best, d = (self.value(w, b), w, b, 0.0), None
        for _ in range(_LOCAL_ROUNDS):
            new = self.labels(w, b)
            if d is not None and np.array_equal(new, d):
                break
            d = new
            _, w, b, start, slack = self.relax(d, start)
            value = self.value(w, b)
            if value < best[0]:
                best = (value, w, b, slack)
        return best


def branch_and_bound(
    s: SemiSupervisedSVM,
    gap: float = 1e-9,
    time_limit: float | None = None,
    max_nodes: int = 1_000_000,
) -> BranchAndBoundResult:
    """The method of the module; ``gap`` relative to the incumbent's value."""
    problem = _Problem(s)
    begin = time.perf_counter()
    stop = None if time_limit is None else begin + time_limit
    nu = problem.U.size
    report = begin + PROGRESS_SECONDS
    root_value, w, b, a, _ = problem.relax(np.zeros(nu), None)
    incumbent = problem.local_search(w, b, a)
    if s.start is not None:
        w0, b0 = np.asarray(s.start[0], dtype=np.float64), float(s.start[1])
        if problem.fixed:
            b0 = problem.beta
        candidate = problem.local_search(w0, b0, None)
        incumbent = min(incumbent, candidate, key=lambda t: t[0])
    order = itertools.count()
    heap = [(root_value, next(order), np.zeros(nu), a)]
    nodes, leaves = 0, np.inf  # leaves: the least bound of the nodes closed so far

    def closed(bound: float) -> bool:  # within the gap, or within the incumbent's precision
        return incumbent[0] - bound <= gap * abs(incumbent[0]) + incumbent[3]

    while heap:
        bound = heap[0][0]
        if closed(bound):
            break
        if nodes >= max_nodes or (stop is not None and time.perf_counter() > stop):
            status = SolveStatus.TIME_LIMIT if nodes < max_nodes else SolveStatus.ITERATION_LIMIT
            proven = min(bound, leaves)
            return BranchAndBoundResult(None, 0.0, incumbent[0], proven, nodes, status)
        if time.perf_counter() > report:
            report = time.perf_counter() + PROGRESS_SECONDS
            logger.info(
                "  bnb %6.0f s: %d nodes, %d open, incumbent %.10g, bound %.10g (gap %.2e)",
                time.perf_counter() - begin,
                nodes,
                len(heap),
                incumbent[0],
                bound,
                (incumbent[0] - bound) / max(abs(incumbent[0]), 1e-300),
            )
        _, _, d, start = heapq.heappop(heap)
        value, w, b, a, _ = problem.relax(d, start)
        nodes += 1
        if problem.value(w, b) < incumbent[0]:  # the local search starts at (w, b) itself
            incumbent = min(incumbent, problem.local_search(w, b, a), key=lambda t: t[0])
        if closed(value):
            leaves = min(leaves, value)
            continue
        f = problem.X[problem.U] @ w + b
        outside = np.maximum(0.0, problem.mu[problem.U] - np.abs(f))
        loss = np.where(d == 0, problem.c[problem.U] * outside, 0.0)
        if loss.max(initial=0.0) <= 0.0:  # every undecided row outside its margin: the
            leaves = min(leaves, value)  # node's point is its optimum (to its precision)
            continue
        k = int(np.argmax(loss))
        for label in (1.0, -1.0) if f[k] >= 0 else (-1.0, 1.0):
            child = d.copy()
            child[k] = label
            heapq.heappush(heap, (value, next(order), child, a))
    bound = min(leaves, incumbent[0], heap[0][0] if heap else np.inf)
    _, w, b, _ = incumbent
    return BranchAndBoundResult(w, b, incumbent[0], bound, nodes, SolveStatus.OPTIMAL)


class S3VMBranchAndBound(SolverAdapter):
    NAME: ClassVar[str] = "bnb"
    DESCRIPTION: ClassVar[str] = (
        "exact branch and bound for S3VM on box-QP relaxations (open, no size limit)"
    )
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({SemiSupervisedSVM})

    def accurate_options(self, gap: float) -> dict[str, float]:
        return {"gap": gap}

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if not isinstance(structure, SemiSupervisedSVM):
            return super().solve_structure(structure)
        kwargs = check_options(options, _OPTIONS, "bnb")
        start = time.perf_counter()
        found = branch_and_bound(structure, time_limit=budget(time_limit), **kwargs)
        seconds = time.perf_counter() - start
        if found.status is not SolveStatus.OPTIMAL or found.w is None:
            return None, SolveResult(
                found.status,
                objective=found.objective,
                bound=found.bound,
                seconds=seconds,
                iterations=found.nodes,
                message=f"{found.status.value} after {found.nodes} nodes",
            )
        f = structure.features @ found.w + found.b
        d = np.where(structure.y != 0, structure.y, np.where(f >= 0, 1.0, -1.0))
        return S3VMFit(w=found.w, b=found.b, d=d), SolveResult(
            SolveStatus.OPTIMAL,
            objective=found.objective,
            bound=found.bound,
            seconds=seconds,
            iterations=found.nodes,
            message=f"optimal ({found.nodes} nodes)",
            accuracy=(found.objective - found.bound) / max(abs(found.objective), 1e-300),
        )
