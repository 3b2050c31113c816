"""What a general MIP solver needs to take the S3VM problem
(:class:`~aidopt.solvers.structures.SemiSupervisedSVM`) as the Bennett–Demiriz MIQP: big-M
values from the data, a start, and the check that they cut off no optimum (docs/s3vm.md).

An upper bound U on the optimum (the value of a feasible point, each unlabeled row at its better
label, Lemma 1) holds at every optimum: ½‖w‖² ≤ U gives ‖w‖ ≤ W = √(2U); each labeled loss term
c_k max{0, 1 − y_k f_k} ≤ U bounds f_k and so b (unless the structure fixes b); Cauchy–Schwarz
then gives every score a range f_k ∈ [b_lo − W‖x_k‖, b_hi + W‖x_k‖], and M⁺_k = m_k − min f_k,
M⁻_k = m_k + max f_k never bind at an optimum. A local search (Lemma 1 alternated with the
convex QP at the labels it fixes, a weighted SVM) lowers U, so W and the M's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import deadline
from aidopt.exceptions import AidoptError
from aidopt.solvers.algebra import Problem, sum_squares
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram
from aidopt.solvers.structures import SemiSupervisedSVM

__all__ = ["BigM", "local_search", "value"]


def value(s: SemiSupervisedSVM, w: NDArray[np.float64], b: float) -> float:
    """The objective of ``s`` at (w, b), each unlabeled row at its better label (Lemma 1)."""
    y, cost, margin = (np.asarray(v, dtype=np.float64) for v in (s.y, s.cost, s.margin))
    f = s.features @ w + b
    labeled = y != 0
    unlabeled = ~labeled & (margin > 0)  # the others carry no loss
    hinge = cost[labeled] @ np.maximum(0.0, 1.0 - y[labeled] * f[labeled])
    inside = cost[unlabeled] @ np.maximum(0.0, margin[unlabeled] - np.abs(f[unlabeled]))
    return float(0.5 * w @ w + hinge + inside)


@dataclass(frozen=True)
class BigM:
    """Bounds that hold at every optimum of the structure: ‖w‖ ≤ W, b ∈ [b_lo, b_hi], from
    ``upper``, the value of the feasible point ``start`` = (w, b)."""

    upper: float
    W: float
    b_lo: float
    b_hi: float
    start: NDArray[np.float64]

    @classmethod
    def of(cls, s: SemiSupervisedSVM, points: Sequence[NDArray[np.float64]]) -> BigM:
        """The bounds from the best of the feasible ``points`` (w, b) (b is ``s.bias`` when
        the structure fixes it)."""
        values = [value(s, z[:-1], z[-1]) for z in points]
        best = int(np.argmin(values))
        upper = float(values[best])
        W = math.sqrt(2.0 * upper)
        if s.bias is not None:
            return cls(upper, W, s.bias, s.bias, points[best])
        norm = np.linalg.norm(s.features, axis=1)
        neg, pos = s.y < 0, s.y > 0
        # each labeled loss term c_k max{0, 1 − y_k f_k} ≤ U bounds f_k, hence b
        b_hi = float(np.min(upper / s.cost[neg] - 1.0 + W * norm[neg]))
        b_lo = float(np.max(1.0 - upper / s.cost[pos] - W * norm[pos]))
        return cls(upper, W, b_lo, b_hi, points[best])

    def score_range(self, norm: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
        """[f⁻_k, f⁺_k] ⊇ {w·x_k + b} for rows of norms ``norm`` (Cauchy–Schwarz on ‖w‖ ≤ W)."""
        return self.b_lo - self.W * norm, self.b_hi + self.W * norm

    def check(
        self, features: NDArray[np.float64], w: NDArray[np.float64], b: float, objective: float
    ) -> dict[str, float]:
        """At a reported solution of value ``objective``: every optimum has ½‖w‖² ≤ objective,
        so W must cover √(2·objective), and the scores must lie in the ranges the M's were
        built from; the bounds as a record, or AidoptError when one is violated."""
        needed = math.sqrt(2.0 * max(objective, 0.0))
        slack = 1e-7 * max(1.0, self.W)
        f = features @ w + b
        f_lo, f_hi = self.score_range(np.linalg.norm(features, axis=1))
        if not (
            needed <= self.W + slack
            and self.b_lo - slack <= b <= self.b_hi + slack
            and np.all(f >= f_lo - slack)
            and np.all(f <= f_hi + slack)
        ):
            raise AidoptError(
                "S3VM big-M check failed at the reported solution (a derived bound is violated); "
                "please report this with the data."
            )
        return {
            "W": self.W,
            "W_needed": needed,
            "b_lo": self.b_lo,
            "b_hi": self.b_hi,
            "upper_bound_used": self.upper,
        }


def local_search(
    s: SemiSupervisedSVM,
    start: NDArray[np.float64],
    qp: Callable[[MatrixProgram], SolveResult],
    remaining: Callable[[], float | None],
    rounds: int = 10,
) -> NDArray[np.float64]:
    """Alternate the labels d_k = sign f_k (Lemma 1) and the convex QP (``qp``, a weighted SVM)
    at those labels, from the point ``start`` = (w, b); the last point reached.

    A heuristic that only tightens the bounds: it gets at most a quarter of the time
    ``remaining``, and a QP that fails, stalls or runs out of time ends it."""
    left = remaining()
    r = s.features.shape[1]
    point, labels = start, None
    with deadline(None if left is None else 0.25 * left):  # remaining() sees it
        for _ in range(rounds):
            f = s.features @ point[:r] + point[r]
            new = np.where(s.y != 0, s.y, np.where(f >= 0, 1.0, -1.0))
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            if remaining() == 0.0:
                break
            result = qp(_svm_at(s, labels))
            if result.status is not SolveStatus.OPTIMAL or result.x is None:
                break
            point = result.x[: r + 1]
    return point


def _svm_at(s: SemiSupervisedSVM, labels: NDArray[np.float64]) -> MatrixProgram:
    """The weighted SVM at fixed labels: min ½‖w‖² + Σ_k c_k s_k  s.t.  label_k (w·x_k + b) +
    s_k ≥ m_k, s ≥ 0 (rows of margin ≤ 0 have no constraint)."""
    on = np.flatnonzero(s.margin > 0)
    b_lo, b_hi = (s.bias, s.bias) if s.bias is not None else (-np.inf, np.inf)
    p = Problem("S3VM local search: a weighted SVM at fixed labels")
    w, b = p.variables("u", s.features.shape[1]), p.variables("b", 1, lower=b_lo, upper=b_hi)
    slack = p.variables("s", on.size, lower=0.0)
    p.minimize(0.5 * sum_squares(w) + s.cost[on] @ slack)
    p.subject_to("margin", labels[on] * (s.features[on] @ w + b) + slack >= s.margin[on])
    return p.program()
