"""Exact dimension reduction for models regularised by ½‖w‖²: the span of the centroids.

If the data enter an aggregated problem only through the scores w·x̄_k (SVM, S3VM, PU, ...) and
the regulariser is ½‖w‖², an optimal w lies in span{x̄_k} (representer argument: the component of
w orthogonal to that span changes no score and only adds to ‖w‖²). With an orthonormal basis V
(r × m, r = rank of the K × m centroid matrix ≤ K) the problem is solved in u ∈ ℝ^r with reduced
centroids x̃_k = V x̄_k, and ‖w‖² = ‖u‖², w·x̄_k = u·x̃_k, w = Vᵀu. For m ≫ K (Text: 11,960
features) this shrinks the quadratic part from m to at most K variables, and after the reduction
½‖u‖² is separable, which the outer-approximation master (``aidopt.solvers.outer_approximation``)
exploits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import dense, issparse
from aidopt.common.lazy import sparse as sp

__all__ = ["CentroidSpan"]


@dataclass(frozen=True, eq=False)
class CentroidSpan:
    """An orthonormal basis V (r × m) of the row span of a centroid matrix.

    ``reduced`` holds x̃_k = V x̄_k for every row of the matrix the span was built from. Directions
    whose singular value is below ``rtol · σ_max`` are dropped (numpy's rank rule); scores of the
    reduced model are exact for every w = Vᵀu, since such w is orthogonal to what was dropped.
    """

    basis: NDArray[np.float64]  # (r, m), orthonormal rows
    reduced: NDArray[np.float64]  # (K, r)

    @classmethod
    def of(cls, centroids: ArrayLike | sp.spmatrix, rtol: float | None = None) -> CentroidSpan:
        a = np.asarray(dense(centroids), np.float64)
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"centroids must be a non-empty 2-D array, got shape {a.shape}")
        _, s, vt = np.linalg.svd(a, full_matrices=False)
        tol = (max(a.shape) * np.finfo(np.float64).eps if rtol is None else rtol) * (
            s[0] if s.size else 0.0
        )
        r = int(np.count_nonzero(s > tol))
        basis = np.ascontiguousarray(vt[:r])
        return cls(basis=basis, reduced=a @ basis.T)

    @property
    def rank(self) -> int:
        """r, the dimension of the reduced problem."""
        return int(self.basis.shape[0])

    def reduce(self, x: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        """V x for the rows of x (dense or sparse), i.e. their coordinates in the span."""
        if issparse(x):
            return np.asarray(cast(Any, x) @ self.basis.T)
        return np.asarray(x, dtype=np.float64) @ self.basis.T

    def lift(self, u: ArrayLike) -> NDArray[np.float64]:
        """w = Vᵀu, the full-space weight vector of reduced coordinates u."""
        return np.asarray(u, dtype=np.float64) @ self.basis
