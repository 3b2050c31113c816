"""Optimality certificates computed from the original data, independently of any solver.

A certificate is a pair of bounds on the optimum E* of the ORIGINAL problem:

* upper: E(x̂), the objective of the returned solution evaluated on every entry;
* lower: L = D(u) − (allowances), the dual objective at a point u that is feasible for the dual
  of the original problem (weak duality: D(u) ≤ E*), built by the model from its solution —
  e.g. the aggregated dual ᾱ_k spread over the entries of cluster k, which is dual feasible for
  the original problem (Park & Klabjan, §3.2) — and evaluated on the full data.

Two things can make a computed D(u) exceed E*: equality constraints of the dual that u meets
only up to a residual ρ (Σ α_i y_i = 0, Xᵀu = 0, ...), and rounding. Both are charged:

* a residual ρ of the constraint that belongs to a free primal variable v (b, β) costs |v*|·|ρ|
  in weak duality, so the model subtracts B·‖ρ‖ with B a bound on |v*| proven from the data
  (e.g. |b*| ≤ 1 + ‖w*‖ max‖x_i‖, ‖w*‖ ≤ √(2E));
* every sum of n terms is accumulated in chunks of :data:`CHUNK` (numpy/BLAS inside a chunk,
  extended precision across chunks), so its rounding error is at most γ·Σ|terms| with
  γ = (CHUNK + 2)·ε (ε the float64 unit roundoff), whatever n is; that amount is subtracted too.

Gap = (E_best − L)/|E_best| (absolute when E_best = 0). The driver calls a run ``optimal`` only
when every cluster is pure AND this gap is within max(tol, the inner solver's stated accuracy).
A certificate carries its dual point in a compact, JSON-ready form (:class:`DualPoint`: a value
per regime plus the entries that differ), so ``aidopt verify`` can recompute both bounds from
the data alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.numerics.rounding import EPS, quotient_relative_error, ratio, weighted_below

__all__ = [
    "GAP_FLOOR",
    "MAX_SOLVER_ACCURACY",
    "Bound",
    "Certificate",
    "DualPoint",
    "below",
    "best_with_dual",
    "box_distance",
    "clipped_into",
    "cluster_duals",
    "dual_box",
    "moved_mass",
    "plus_half_squared_norm",
    "ratio_below",
    "relative_gap",
    "repair_equalities",
    "ridge_dual_bound",
    "shifted_norm_error",
]

#: the tightest relative gap a certificate is asked for, for every model: the rounding
#: allowances keep a proven gap above 0, so ``tol = 0`` means "certify to 1e-9"
GAP_FLOOR = 1e-9
#: the coarsest inner-solver accuracy that may certify a gap above tol: a status ``optimal``
#: proves a gap ≤ max(tol, GAP_FLOOR, min(the solver's stated accuracy, this))
MAX_SOLVER_ACCURACY = 1e-6


def ridge_dual_bound(
    value: float,
    value_error: float,
    norm_sq: float,
    norm_sq_error: float,
    source: str,
    *,
    residual: float = 0.0,
    residual_error: float = 0.0,
    offset_bound: float = 0.0,
) -> Bound:
    """Weak duality for min ½‖w‖² + Σ_i ℓ_i(x_i·w + b) at a dual point α in its box: the dual
    value D = ``value`` − ½‖w(α)‖² (``value`` the conjugate terms, e.g. Σα_i for the hinge;
    ‖w(α)‖² = ``norm_sq``), less its rounding allowance (the terms' errors and ε(|value| +
    ½‖w‖²) for the subtraction), less |b*||ρ| ≤ B(|ρ| + error) for the residual ρ the dual's
    equality of the free offset b is left with (B = ``offset_bound`` ≥ |b*|, computed in at most
    four rounded operations: the charge is taken (1 + 8ε) times). No offset: ρ = 0, B = 0."""
    dual_value = value - 0.5 * norm_sq
    allowance = value_error + 0.5 * norm_sq_error + EPS * (abs(value) + 0.5 * abs(norm_sq))
    charge = offset_bound * (abs(residual) + residual_error) * (1 + 8 * EPS)
    return Bound(dual_value - allowance - charge, source, None, dual_value, allowance + charge)


def below(value: float, relative: float) -> float:
    """A float at most the exact number that ``value`` approximates within ``relative``
    (relatively): value·(1 − r), r covering ``relative`` and the two roundings of this shrink
    (:func:`aidopt.numerics.rounding.quotient_relative_error`). The scale of a dual box that is
    computed from rounded totals (C/N, c2 = 1/(2λn)) goes through it."""
    return value * (1.0 - quotient_relative_error(2, relative))


def ratio_below(a: float, b: float, b_relative: float) -> tuple[float, float]:
    """(a/b rounded below the exact a/b, r ≥ the computed a/b's relative error) for b within
    ``b_relative`` of its exact value: the scale C/N of a dual box from a rounded total N."""
    value, relative = ratio(a, b, b_relative)
    return below(value, relative), relative


def clipped_into(
    x: NDArray[np.float64], box: NDArray[np.float64], relative: float, what: str
) -> NDArray[np.float64]:
    """A given dual point x ≥ 0 clipped into its box (from :func:`below`): the solve computed the
    same box from its own rounded totals, within ``relative`` of the exact one as this one, so
    its points may lie a few ``relative`` above; clipping them keeps a feasible point whose bound
    is then recomputed. A point further out, or negative, is refused (ValueError naming
    ``what``, the box in words)."""
    if x.size and (x.min() < 0.0 or np.any(x > box * (1.0 + 4.0 * relative + 8.0 * EPS))):
        raise ValueError(f"the dual point leaves its box {what}")
    return np.minimum(x, box)


def moved_mass(
    spread: NDArray[np.float64], kept: NDArray[np.float64], spread_relative: float
) -> float:
    """A bound on Σ_i |Δ_i| between the exact spread of cluster duals over the rows and the
    point kept (``kept`` ≤ ``spread``, e.g. clipped into its box): what the clipping took, and
    the spread's own rounding (entries within ``spread_relative`` of exact)."""
    return float(np.sum(spread - kept)) + spread_relative * float(spread.sum())


def shifted_norm_error(norm_sq: float, norm_sq_error: float, shift: float) -> float:
    """A bound on |‖w + Δ‖² − ‖w‖²| for ‖Δ‖ ≤ ``shift`` and ‖w‖² = ``norm_sq`` within
    ``norm_sq_error``: shift·(2‖w‖ + shift). A dual point whose ‖w(α)‖² was computed at a
    nearby point (the exact spread, coefficients known only so closely) is charged this."""
    norm_up = math.sqrt(max(norm_sq, 0.0) + norm_sq_error)
    return shift * (2.0 * norm_up + shift)


def box_distance(sigma: NDArray[np.float64], box: NDArray[np.float64]) -> NDArray[np.float64]:
    """min(σ_i, b_i − σ_i) per entry (a dual variable's distance to its box [0, b_i]), exact in
    floating point for 0 ≤ σ_i ≤ b_i: for σ_i ≥ b_i/2 the difference is exact (Sterbenz), and
    for σ_i < b_i/2 the rounded difference stays ≥ b_i/2 > σ_i, so the minimum is σ_i. With a
    box b rounded down (:func:`dual_box`) it is at most the exact box's distance."""
    return np.minimum(sigma, box - sigma)


def cluster_duals(
    labels: NDArray[np.int64],
    alpha: NDArray[np.float64],
    weight: NDArray[np.float64] | None = None,
    *,
    per_unit_weight: bool = False,
) -> NDArray[np.float64]:
    """α̂_i = ᾱ_k w_i / W_k for i ∈ C_k, W_k = Σ_{C_k} w_i (w = 1 unweighted: ᾱ_k/|C_k|, the
    dual recovery of §3.2); per unit weight, ᾱ_k / W_k."""
    totals = np.bincount(labels, weights=weight, minlength=alpha.size)
    per_unit = (alpha / totals)[labels]
    return per_unit if per_unit_weight or weight is None else per_unit * weight


def plus_half_squared_norm(
    objective: float, error: float, norm_sq: float, m: int
) -> tuple[float, float]:
    """(E + ½‖w‖², its rounding bound) for an objective E with bound ``error`` and ‖w‖² of m
    coordinates: the regulariser of an SVM's objective, added once to the sum of its losses."""
    total = objective + 0.5 * norm_sq
    return total, error + (m + 2) * EPS * abs(norm_sq) + EPS * abs(total)


def dual_box(scale: float, weight: NDArray[np.float64] | None, n: int) -> NDArray[np.float64]:
    """The upper bound scale·w_i of every row's dual variable (scale without ``weight``), the
    product rounded down (:func:`aidopt.numerics.rounding.weighted_below`), so that the
    floating-point box lies inside the exact one and a dual point clipped to it is feasible."""
    return weighted_below(np.full(n, float(scale)), weight)


def relative_gap(
    upper: float | None, lower: float | None, objective: float | None = None
) -> float | None:
    """(U − L)/|E_best| with U = E_best plus its rounding bound (``upper``) and E_best the
    computed ``objective`` (``upper`` when not given); absolute when E_best = 0, where a
    relative gap means nothing (a perfect fit: U − L is the rounding bound itself). Reported as
    computed, unclipped."""
    if lower is None or upper is None:
        return None
    reference = upper if objective is None else objective
    scale = abs(reference) if reference != 0 else 1.0
    return (upper - lower) / scale


@dataclass(frozen=True, eq=False)
class DualPoint:
    """A per-entry dual point, stored as a value per regime plus the entries that differ.

    u_i = ``by_regime[regime_i]`` (regime of entry i at the solution), except u_i = ``values[j]``
    for i = ``index[j]``. ``by_regime`` None means 0 for every entry (a sparse point, e.g. the
    support-vector coefficients of a kernel SVM). At a certified optimum almost every entry
    sits at the value its regime forces (complementary slackness), so ``index`` is short.
    ``extra`` holds model-specific scalars of the point (JSON-ready).
    """

    by_regime: tuple[float, ...] | None
    index: NDArray[np.int64]
    values: NDArray[np.float64]
    extra: dict[str, Any] = field(default_factory=dict)
    #: the regimes the defaults were taken at (not written out: :meth:`rebased` needs them)
    basis: NDArray[np.int64] | None = field(default=None, repr=False)

    @classmethod
    def on_support(cls, u: NDArray[np.float64]) -> DualPoint:
        """u stored by its nonzero entries (no defaults by regime)."""
        support = np.flatnonzero(u).astype(np.int64)
        return cls(None, support, u[support].astype(np.float64, copy=False))

    @classmethod
    def compress(
        cls,
        u: NDArray[np.float64],
        regime: NDArray[np.int64] | None,
        by_regime: tuple[float, ...] | None,
        extra: dict[str, Any] | None = None,
    ) -> DualPoint:
        """The compact form of a full vector u (entries equal to their default are dropped)."""
        default = cls._defaults(len(u), regime, by_regime)
        index = np.flatnonzero(u != default).astype(np.int64, copy=False)
        values = u[index].astype(np.float64, copy=False)
        return cls(by_regime, index, values, dict(extra or {}), regime)

    def rebased(self, regime: NDArray[np.int64]) -> DualPoint:
        """The same point, its defaults taken at ``regime`` (the regimes of the solution it is
        reported with, which ``aidopt verify`` expands it at: the best bound may come from
        another iteration's solution, whose regimes differ)."""
        if self.by_regime is None or self.basis is None or self.basis is regime:
            return self
        u = self.expand(len(self.basis), self.basis)
        return DualPoint.compress(u, regime, self.by_regime, self.extra)

    def expand(self, n: int, regime: NDArray[np.int64] | None) -> NDArray[np.float64]:
        """The full vector u (n,) for the regimes of the entries."""
        u = self._defaults(n, regime, self.by_regime).astype(np.float64, copy=True)
        if self.index.size and (self.index.min() < 0 or self.index.max() >= n):
            raise ValueError(f"dual point index out of range for {n} entries")
        u[self.index] = self.values
        return u

    @staticmethod
    def _defaults(n, regime, by_regime) -> NDArray[np.float64]:
        if by_regime is None:
            return np.zeros(n)
        if regime is None:
            raise ValueError("a dual point with regime defaults needs the regimes")
        table = np.asarray(by_regime, dtype=np.float64)
        if regime.size and regime.max() >= table.size:
            raise ValueError(f"regime {int(regime.max())} has no default dual value")
        return table[regime]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the certificate's ``dual`` field; :meth:`from_dict` reads it)."""
        return {
            "by_regime": None if self.by_regime is None else [float(v) for v in self.by_regime],
            "index": [int(i) for i in self.index],
            "values": [float(v) for v in self.values],
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> DualPoint:
        by_regime = payload.get("by_regime")
        index = np.asarray(payload.get("index", []), dtype=np.int64)
        values = np.asarray(payload.get("values", []), dtype=np.float64)
        if index.shape != values.shape or index.ndim != 1:
            raise ValueError("dual point: 'index' and 'values' must be lists of equal length")
        return cls(
            None if by_regime is None else tuple(float(v) for v in by_regime),
            index,
            values,
            dict(payload.get("extra") or {}),
        )


@dataclass(frozen=True)
class Bound:
    """A lower bound L ≤ E* on the original optimum, with what proves it.

    ``value`` already has every allowance subtracted (constraint residuals, rounding);
    ``dual_value`` is D(u) before them. ``source`` says in words what proves it; ``dual`` the
    point, for re-checking (None when the bound rests on a solver, e.g. a MIQP relaxation).
    """

    value: float
    source: str
    dual: DualPoint | None = None
    dual_value: float | None = None
    allowance: float = 0.0
    solver_attested: bool = False


def best_with_dual(found: Iterable[tuple[Bound | None, Callable[[], DualPoint]]]) -> Bound | None:
    """The highest of the bounds found (the first among equals; None when there is none), with
    its dual point — made for the winner only: making a dual point is a pass over every entry."""
    kept = [(bound, point) for bound, point in found if bound is not None]
    if not kept:
        return None
    best, point = max(kept, key=lambda pair: pair[0].value)
    return dataclasses.replace(best, dual=point())


@dataclass(frozen=True)
class Certificate:
    """Bounds on the original optimum at the end of a run: L ≤ E* ≤ E(x̂) = ``upper_bound``.

    ``certified`` is the driver's verdict: every cluster pure and ``gap`` ≤ ``target_gap`` =
    max(tol, the inner solver's stated accuracy).
    """

    upper_bound: float | None
    lower_bound: float | None
    gap: float | None
    source: str
    certified: bool
    tolerance: float
    dual: DualPoint | None = None
    solver_attested: bool = False
    target_gap: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``certificate`` of a ``--json`` result)."""

        def number(v):
            return None if v is None or not math.isfinite(v) else float(v)

        return {
            "certified": self.certified,
            "lower_bound": number(self.lower_bound),
            "upper_bound": number(self.upper_bound),
            "gap": number(self.gap),
            "tolerance": self.tolerance,
            "target_gap": number(self.target_gap),
            "source": self.source,
            "solver_attested": self.solver_attested,
            "dual": None if self.dual is None else self.dual.to_dict(),
        }


def repair_equalities(
    A: NDArray[np.float64],
    target: NDArray[np.float64],
    s: NDArray[np.float64],
    lower: NDArray[np.float64] | float,
    upper: NDArray[np.float64] | float,
    rounds: int = 3,
    free: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """A point of the box [lower, upper] with A s ≈ target, moving only the free coordinates.

    s (a solver's answer, or a point rebuilt from complementary slackness) is clipped to the box;
    then, for a few rounds, the free coordinates (``free``, default: those strictly inside the
    box) that are not at a bound take the least-norm change δ_F with A_F δ_F = target − A s
    (least squares), clipped again. What remains of the residual is charged in the bound by the
    caller; this only makes it small.
    """
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), s.shape)
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), s.shape)
    s = np.clip(np.asarray(s, dtype=np.float64), lo, hi)
    width = hi - lo
    for _ in range(rounds):
        residual = target - A @ s
        scale = float(np.abs(A).sum(axis=1).max(initial=0.0)) * float(np.abs(s).max(initial=1.0))
        if not np.any(np.abs(residual) > 1e-15 * max(scale, 1e-300)):
            break
        movable = (s > lo + 1e-12 * width) & (s < hi - 1e-12 * width)
        if free is not None:
            movable &= free
        if not movable.any():
            break
        A_F = A[:, movable]
        if A.shape[0] == 1:  # one equation: the least-norm change in closed form (lstsq's SVD
            row = A_F[0]  # of a 1 × N matrix took 0.1 s at N = 30,000)
            norm_sq = float(row @ row)
            if norm_sq == 0.0:
                break
            delta = row * (residual[0] / norm_sq)
        else:  # a small dense problem: BLAS threads only wait on each other (90x slower
            from aidopt.common.threads import single_thread_blas  # beside a busy process)

            with single_thread_blas():
                delta = np.linalg.lstsq(A_F, residual, rcond=None)[0]
        s[movable] = np.clip(s[movable] + delta, lo[movable], hi[movable])
    return s
