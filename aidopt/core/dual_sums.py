"""The row sums of a ridge problem's dual, with their rounding bounds, written once.

For min ½‖w‖² + Σ_i ℓ_i(x_i·w + b) (the SVM, the one-class SVM, the ε-SVR, PU with the linear
kernel), weak duality at a dual point in its box reads (:func:`aidopt.core.certificate.
ridge_dual_bound`)

    D = Σ_i (conjugate terms)_i − ½‖Σ_i c_i x_i‖²,   residual ρ = Σ_i r_i − target,

where c_i is the coefficient of row i in w(α) (α_i y_i for the SVM) and r_i its share of the
offset's equality. A model states these per-row arrays for a block of rows
(:func:`dual_sums`); the sums add over blocks (:meth:`DualSums.total`), and
:meth:`DualSums.bound` is the certificate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.core.certificate import Bound, ridge_dual_bound, shifted_norm_error
from aidopt.numerics.rounding import (
    EPS,
    abs_products_bound,
    accurate_sum,
    accurate_tdot,
    added_blocks,
    max_row_norm,
    squared_norm,
)

__all__ = ["DualSums", "dual_sums"]


@dataclass(frozen=True)
class DualSums:
    """Σ of the conjugate terms, v = Σ c_i x_i and Σ r_i over some rows, each with a bound on
    its rounding error; max ‖x_i‖ (rounded up) and max |y_i| of the rows (0 without y)."""

    value: float
    value_error: float
    v: NDArray[np.float64]
    v_error: NDArray[np.float64]
    rho: float
    rho_error: float
    row_norm: float
    y_max: float = 0.0

    @classmethod
    def total(cls, blocks: list[DualSums]) -> DualSums:
        """The sums of the union of the blocks (:func:`aidopt.numerics.rounding.added_blocks`)."""
        return cls(
            *added_blocks([b.value for b in blocks], [b.value_error for b in blocks]),
            *added_blocks([b.v for b in blocks], [b.v_error for b in blocks]),
            *added_blocks([b.rho for b in blocks], [b.rho_error for b in blocks]),
            max(b.row_norm for b in blocks),
            max(b.y_max for b in blocks),
        )

    def bound(
        self,
        source: str,
        *,
        target: float = 0.0,
        target_error: float = 0.0,
        offset_bound: float = 0.0,
        v_shift: float = 0.0,
    ) -> Bound:
        """The weak-duality bound D − allowances − B(|ρ − target| + errors) (B =
        ``offset_bound`` ≥ |b*|; ``target`` within ``target_error``); ``v_shift`` bounds
        ‖Δv‖ for coefficients c_i known only that closely (PU's c1), charged in ‖v‖²."""
        norm_sq, norm_sq_error, _ = squared_norm(self.v, self.v_error)
        norm_sq_error += shifted_norm_error(norm_sq, norm_sq_error, v_shift)
        residual = self.rho - target
        residual_error = self.rho_error + target_error + EPS * (abs(self.rho) + abs(target))
        return ridge_dual_bound(
            self.value,
            self.value_error,
            norm_sq,
            norm_sq_error,
            source,
            residual=residual,
            residual_error=residual_error,
            offset_bound=offset_bound,
        )


def dual_sums(
    X: Any,
    terms: Sequence[tuple[NDArray[np.float64], float]],
    coef: NDArray[np.float64],
    coef_bound: float,
    residual: NDArray[np.float64] | None = None,
    *,
    weight: NDArray[np.float64] | None = None,
    y: NDArray[np.float64] | None = None,
) -> DualSums:
    """The :class:`DualSums` of a block of rows X: Σ of each conjugate term array (entries each
    within ``relative``·|entry| of exact, charged with the sum's own bound, and 2ε|value| for
    adding several), v = Σ coef_i x_i for |coef_i| ≤ ``coef_bound``·ω_i (ω = ``weight``, 1 when
    None), ρ = Σ residual_i (0 without), max ‖x_i‖ and max |y_i|."""
    value, error = 0.0, 0.0
    for term, relative in terms:
        total, total_error = accurate_sum(term)
        value, error = value + total, error + total_error
        if relative:
            error += relative * float(np.abs(term).sum())
    if len(terms) > 1:
        error += 2 * EPS * abs(value)
    rho, rho_error = (0.0, 0.0) if residual is None else accurate_sum(residual)  # in cache
    v, v_error = accurate_tdot(X, coef, abs_bound=abs_products_bound(X, coef_bound, weight))
    y_max = 0.0 if y is None else float(np.abs(y).max(initial=0.0))
    return DualSums(value, error, v, v_error, rho, rho_error, max_row_norm(X), y_max)
