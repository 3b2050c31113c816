"""Linear ε-insensitive support vector regression (ε-SVR) under AID.

Original problem, rows (x_i, y_i), i = 1…n (Vapnik; Smola & Schölkopf 2004, (3)):

    min_{w,b,ξ,ξ*}  ½‖w‖² + C Σ_i (ξ_i + ξ*_i)
    s.t.            y_i − w·x_i − b ≤ ε + ξ_i,   w·x_i + b − y_i ≤ ε + ξ*_i,   ξ, ξ* ≥ 0

i.e. ½‖w‖² + Σ_i ℓ(y_i, s_i) with s_i = w·x_i + b and ℓ(y, s) = C max(|y − s| − ε, 0), which is
jointly convex in (y, s): the aggregated problem on centroids (x̄_k, ȳ_k) with weights W_k = |C_k|
bounds the original from below (Park & Klabjan, §3). Regimes of a row: inside the tube (0), above
it (1: y − s > ε), below it (2). Dual (the certificate, :mod:`aidopt.core.linear_score`):

    max_β  Σ_i (−β_i y_i − ε|β_i|) − ½‖Σ_i β_i x_i‖²   s.t.  −C ≤ β_i ≤ C,  Σ_i β_i = 0

with β_i = α*_i − α_i, the multipliers of the two constraints.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.options import Option
from aidopt.core.linear_score import Aggregate, LinearFit, LinearScoreModel
from aidopt.data.containers import RegressionData
from aidopt.solvers.algebra import Problem, Values, sum_squares


class SVRModel(LinearScoreModel):
    """Linear ε-SVR: min ½‖w‖² + C Σ_i max(|y_i − w·x_i − b| − ε, 0)."""

    name: ClassVar[str] = "svr"
    data_type: ClassVar[type] = RegressionData
    citation: ClassVar[str] = "Smola & Schölkopf, A tutorial on support vector regression, (3)"
    options: ClassVar[tuple[Option, ...]] = (
        Option("C", 1.0, "penalty C of the slacks", low=0.0),
        Option("epsilon", 0.1, "half-width ε of the insensitive tube", low=0.0, closed="left"),
    )
    C: float
    epsilon: float

    # ------------------------------------------------------------------ the aggregated problem
    def declare(self, agg: Aggregate) -> Problem:
        """min ½‖w‖² + C Σ_k W_k ξ_k on the centroids (x̄_k, ȳ_k), one slack per cluster (at an
        optimum at most one of ξ_k, ξ*_k is positive; HiGHS's QP solver fails on the two-slack
        form and solves this one)."""
        p = Problem("ε-SVR aggregated problem")
        w, b = p.variables("w", agg.xbar.shape[1]), p.variables("b", 1)
        xi = p.variables("xi", agg.K, lower=0.0)
        p.minimize(0.5 * sum_squares(w) + self.C * agg.weight @ xi)
        p.subject_to("above", agg.ybar - agg.xbar @ w - b <= self.epsilon + xi)
        p.subject_to("below", agg.xbar @ w + b - agg.ybar <= self.epsilon + xi)
        return p

    def read(self, values: Values, agg: Aggregate) -> LinearFit:
        """w, b, and β̄_k = α*_k − α_k (None when the solver gave no multipliers)."""
        above, below = values.dual("above"), values.dual("below")
        duals = None if above is None or below is None else below - above
        return LinearFit(values["w"].copy(), float(values["b"][0]), duals, agg.partition)

    # ------------------------------------------------------------------ the loss and its dual
    def loss(
        self, y: NDArray[np.float64], s: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
        """C max(|y − s| − ε, 0), the regime (0 inside, 1 above, 2 below), C(|y| + |s| + ε)."""
        r = y - s
        regime = np.where(r > self.epsilon, 1, np.where(r < -self.epsilon, 2, 0))
        loss = self.C * np.maximum(np.abs(r) - self.epsilon, 0.0)
        return loss, regime, self.C * (np.abs(y) + np.abs(s) + self.epsilon)

    def slope(self) -> float:
        return float(self.C)

    def conjugate(self, y: NDArray[np.float64], beta: NDArray[np.float64]) -> tuple:
        """−ℓ*(y, β) = −β y − ε|β| on −C ≤ β ≤ C."""
        return -beta * y, -self.epsilon * np.abs(beta)

    def dual_box(self) -> tuple[float, float]:
        return -float(self.C), float(self.C)

    def intercept_bound(self, y_max: float, w_norm: float, row_norm: float) -> float:
        """An optimal b lies within ε of the residuals y_i − w·x_i: |b*| ≤ max|y| + ‖w‖R + ε."""
        return y_max + w_norm * row_norm + self.epsilon


MODEL = SVRModel
