"""The domain of novelty of a one-class model, as a kernel expansion.

    f(x) = Σ_j c_j K(s_j, x) + d·K(x, x) − ρ,          domain = {x : f(x) ≥ 0}

* LM-OCSVM (the paper's eq. (1), hyperplane with ρ = 1): c = α, d = 0, ρ = 1.
* SVDD (Ben-Hur et al. 2001): ½(R² − ‖φ(x) − a‖²) with a = Σ β_j φ(s_j), i.e. c = β, d = −½,
  ρ = ½(‖a‖² − R²).
* libsvm's one-class ν-SVM: c = dual_coef_, d = 0, ρ = libsvm's ρ.

For the RBF kernel K(x, x) = 1, so f − f(·) differs between the three only by the weights and
the offset, and ∇f = 2γ Σ_j c_j (s_j − x) K(s_j, x): the equilibria of f are the fixed points of
the weighted mean shift P (digest §1.7), used by :mod:`aidopt.svc.labelling`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.numerics.kernels import Kernel, kernel_times

__all__ = ["Domain"]


@dataclass(frozen=True, eq=False)
class Domain:
    """f(x) = Σ_j coef_j K(support_vectors_j, x) + diag_coef·K(x, x) − offset."""

    support_vectors: NDArray[np.float64]
    coef: NDArray[np.float64]
    kernel: Kernel
    offset: float
    diag_coef: float = 0.0

    @property
    def gamma(self) -> float:
        return self.kernel.gamma_for(self.support_vectors.shape[1])

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """f(x) for every row of X (≥ 0 inside the domain), O(len(X)·n_SV·d) in blocks."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        value = np.full(X.shape[0], -self.offset)
        if self.support_vectors.shape[0]:
            value += kernel_times(self.kernel, X, self.support_vectors, self.coef)
        if self.diag_coef:
            value += self.diag_coef * self.kernel.diag(X)
        return value

    def mean_shift(self, X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray]:
        """P(x) = Σ_j c_j K(s_j, x) s_j / Σ_j c_j K(s_j, x) for every row (RBF), and the
        denominators (≈ 0 where x is far from every support vector, or where negative
        coefficients of a projected BSGD model cancel)."""
        S = self.support_vectors
        weights = self.kernel(X, S) * self.coef
        total = weights.sum(axis=1)
        safe = np.where(np.abs(total) > 1e-300, total, 1.0)
        return (weights @ S) / safe[:, None], total
