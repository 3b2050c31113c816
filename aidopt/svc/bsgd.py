"""BSGD-LMOC: budgeted stochastic gradient descent for the LM-OCSVM (1) (Pham, Le & Dang,
Algorithm 2; Algorithm 1, "SGD-LMOC", without a budget).

Step t (η_t = 1/t, w_1 = 0, n_t uniform on [N] with replacement; the digest §1.5):

    w_{t+1} = ((t − 1)/t) w_t + (C/t)·[⟨w_t, φ(x_{n_t})⟩ < 1]·φ(x_{n_t})

stored lazily as w_{t+1} = β/t with un-normalised weights β (a violating draw adds C to its own
β, creating it if new), so a step costs O(B·d) for the score and O(B²) for the stopping test,
never O(B) rescaling. When a new support vector makes b > B, budget maintenance (§3.3) removes
p = argmin_i |β_i|·K(x_i, x_i) — ties go to the OLDEST support vector (FIFO; with removal every
β is a multiple of C, so ties are the rule: the newest-wins rule would freeze the support set) —
and, for projection, first adds β_p·d to the k support vectors J nearest to x_p in input space
(PNN) or k random ones (PRN), with K_JJ d = K_Jp (the projection of φ(x_p) onto span φ(x_J);
ridge 1e-10 against duplicates).

Row weights ω (the loss of row i counts ω_i times, J = ½‖w‖² + (C/Σω) Σ ω_i max{0, ·}): n_t is
drawn with probability ω_i/Σω, which keeps the step an unbiased subgradient of the weighted J.

Stopping (§4.4): the literal rule ‖w_{t+1} − w_t‖ ≤ θ in the RKHS (including the maintenance
change), which fires after a few hundred draws whatever N is (the digest's erratum 6); and, as the
robust alternative, the same rule only after ``min_epochs``·N draws. Output: the last iterate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from aidopt.exceptions import InvalidParameterError
from aidopt.numerics.kernel_expansion import Domain
from aidopt.numerics.kernels import Kernel, kernel_times

__all__ = ["BSGDResult", "bsgd_lmoc", "lmoc_objective"]

Maintenance = Literal["removal", "pnn", "prn"]
_RIDGE = 1e-10
_DRAWS = 4096  # indices drawn per batch from the generator


@dataclass(frozen=True)
class BSGDResult:
    """The last iterate w = Σ_i α_i φ(x_i) as a :class:`Domain` (f = Σα_i K(x_i, ·) − 1), the
    support indices (rows of X), the draws T, why it stopped, and the maintenance count."""

    domain: Domain
    support: NDArray[np.int64]
    steps: int
    stopped_by: str
    maintenance_steps: int


def lmoc_objective(
    X: NDArray[np.float64],
    domain: Domain,
    C: float,
    weight: NDArray[np.float64] | None = None,
) -> float:
    """J(w) = ½‖w‖² + (C/N) Σ_i ω_i max{0, 1 − ⟨w, φ(x_i)⟩} of (1), N = Σ ω_i (ω = 1 without
    ``weight``), for w = Σ α_j φ(s_j); ‖w‖² by blocks of the kernel (libsvm's 37,512 support
    vectors at 10^5 would make an 11 GB matrix, and OpenBLAS 0.3.31 crashed on that product)."""
    sv, coef = domain.support_vectors, domain.coef
    norm_sq = float(coef @ kernel_times(domain.kernel, sv, sv, coef)) if coef.size else 0.0
    hinge = np.maximum(-domain.decision_function(X), 0.0)  # 1 − ⟨w, φ⟩ = −f
    return 0.5 * norm_sq + C * float(np.average(hinge, weights=weight))


def _check(C, budget, k, theta, min_epochs, maintenance, n):
    if not (isinstance(C, (int, float)) and math.isfinite(C) and C > 0):
        raise InvalidParameterError(f"C must be a positive number; got {C!r}.")
    if budget is not None and (not isinstance(budget, (int, np.integer)) or budget < 1):
        raise InvalidParameterError(f"budget must be an integer ≥ 1 (or None); got {budget!r}.")
    if maintenance not in ("removal", "pnn", "prn"):
        raise InvalidParameterError(
            f"maintenance must be 'removal', 'pnn' or 'prn'; got {maintenance!r}."
        )
    if maintenance != "removal":
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise InvalidParameterError(f"k must be an integer ≥ 1; got {k!r}.")
        if budget is not None and k > budget:
            raise InvalidParameterError(
                f"k = {k} exceeds the budget {budget}: the projection needs k other support "
                "vectors."
            )
    if not theta > 0:
        raise InvalidParameterError(f"theta must be positive; got {theta!r}.")
    if min_epochs < 0:
        raise InvalidParameterError(f"min_epochs must be ≥ 0; got {min_epochs!r}.")
    if n < 1:
        raise InvalidParameterError("BSGD needs at least one row.")


def bsgd_lmoc(
    X: NDArray[np.float64],
    C: float,
    kernel: Kernel,
    *,
    budget: int | None = 50,
    maintenance: Maintenance = "removal",
    k: int = 5,
    theta: float = 0.01,
    min_epochs: float = 0.0,
    max_steps: int | None = None,
    rng: np.random.Generator | int | None = None,
    weight: NDArray[np.float64] | None = None,
) -> BSGDResult:
    """Algorithm 2 (``budget`` None: Algorithm 1, SGD-LMOC). ``min_epochs`` = 0 is the paper's
    literal stopping rule; > 0 applies it only after ``min_epochs``·N draws. ``max_steps``
    (default 100·N + 10⁴) caps the draws. ``weight``: row weights ω > 0 (draws ∝ ω)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    _check(C, budget, k, theta, min_epochs, maintenance, n)
    rng = np.random.default_rng(rng)
    gamma = kernel.gamma_for(d)
    if kernel.kind != "rbf":
        raise InvalidParameterError("BSGD-LMOC is implemented for the RBF kernel (the paper's).")
    sq_x = np.einsum("ij,ij->i", X, X)
    cap = (budget + 1) if budget is not None else 64
    S = _Support(cap, d)
    min_steps = math.ceil(min_epochs * n)
    limit = max_steps if max_steps is not None else 100 * n + 10_000
    p = None if weight is None else np.asarray(weight, dtype=np.float64) / math.fsum(weight)

    def batch() -> NDArray[np.int64]:
        return rng.integers(n, size=_DRAWS) if p is None else rng.choice(n, size=_DRAWS, p=p)

    draws = batch()
    maintained, stopped_by, t = 0, "max_steps", 0
    for t in range(1, limit + 1):
        if (t - 1) % _DRAWS == 0 and t > 1:
            draws = batch()
        i = int(draws[(t - 1) % _DRAWS])
        b = S.size
        kn = np.exp(-gamma * np.maximum(S.sq[:b] + sq_x[i] - 2.0 * (S.X[:b] @ X[i]), 0.0))
        score = float(kn @ S.beta[:b]) / (t - 1) if t > 1 else 0.0
        old = S.beta[:b].copy()
        if score < 1.0:
            slot = S.find(i)
            if slot is not None:
                S.beta[slot] += C
                change = _change_norm(S.K[:b, :b], old, S.beta[:b], t)
            else:
                S.append(i, X[i], sq_x[i], kn, C)
                old_ext = np.r_[old, 0.0]
                if budget is not None and S.size > budget:
                    maintained += 1
                    new_ext = S.maintain(maintenance, k, rng)
                    change = _change_norm(S.K_ext, old_ext, new_ext, t)
                    S.drop_removed()
                else:
                    change = _change_norm(S.K[: b + 1, : b + 1], old_ext, S.beta[: b + 1], t)
        else:
            change = _change_norm(S.K[:b, :b], old, old, t)
        if change <= theta and t >= min_steps:
            stopped_by = "theta"
            break
    coef = S.beta[: S.size] / t
    domain = Domain(S.X[: S.size].copy(), coef, kernel, offset=1.0)
    return BSGDResult(domain, S.index[: S.size].copy(), t, stopped_by, maintained)


def _change_norm(K, old, new, t) -> float:
    """‖w_{t+1} − w_t‖ with w_{t+1} = new/t and w_t = old/(t − 1) (w_1 = 0), in the RKHS."""
    delta = new / t - (old / (t - 1) if t > 1 else 0.0)
    return math.sqrt(max(float(delta @ K @ delta), 0.0))


class _Support:
    """The support set in insertion order: rows, squared norms, β, indices and the Gram matrix."""

    def __init__(self, cap: int, d: int) -> None:
        self.size = 0
        self.X = np.empty((cap, d))
        self.sq = np.empty(cap)
        self.beta = np.empty(cap)
        self.index = np.empty(cap, dtype=np.int64)
        self.K = np.empty((cap, cap))
        self.slot_of: dict[int, int] = {}
        self.K_ext: NDArray[np.float64] = self.K
        self._removed = -1

    def find(self, i: int) -> int | None:
        return self.slot_of.get(i)

    def append(self, i, x, sq, kn, beta) -> None:
        b = self.size
        if b == self.beta.size:
            self._grow()
        self.X[b], self.sq[b], self.beta[b], self.index[b] = x, sq, beta, i
        self.K[b, :b] = kn
        self.K[:b, b] = kn
        self.K[b, b] = 1.0  # RBF: K(x, x) = 1
        self.slot_of[i] = b
        self.size = b + 1

    def _grow(self) -> None:
        cap = 2 * self.beta.size
        for name in ("X", "sq", "beta", "index"):
            old = getattr(self, name)
            new = np.empty((cap, *old.shape[1:]), dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)
        K = np.empty((cap, cap))
        K[: self.K.shape[0], : self.K.shape[0]] = self.K
        self.K = K

    def maintain(self, maintenance, k, rng) -> NDArray[np.float64]:
        """Budget maintenance on the b + 1 vectors: β after it (β_p = 0), p remembered."""
        b = self.size
        beta = self.beta[:b]
        self.K_ext = self.K[:b, :b].copy()
        p = int(np.argmin(np.abs(beta) * np.diag(self.K_ext)))  # first minimum: the oldest
        new = beta.copy()
        if maintenance != "removal":
            others = np.r_[0:p, p + 1 : b]
            if maintenance == "pnn":
                dist = ((self.X[others] - self.X[p]) ** 2).sum(axis=1)
                J = others[np.argsort(dist, kind="stable")[:k]]
            else:
                J = rng.choice(others, size=min(k, others.size), replace=False)
            new[J] += beta[p] * projection_coefficients(self.K_ext, J, p)
        new[p] = 0.0
        self.beta[:b] = new
        self._removed = p
        return new

    def drop_removed(self) -> None:
        """Delete the vector p that :meth:`maintain` chose (later vectors move up one slot)."""
        p, b = self._removed, self.size
        del self.slot_of[int(self.index[p])]
        for name in ("X", "sq", "beta", "index"):
            arr = getattr(self, name)
            arr[p : b - 1] = arr[p + 1 : b]
        self.K[p : b - 1, :b] = self.K[p + 1 : b, :b]
        self.K[:b, p : b - 1] = self.K[:b, p + 1 : b]
        self.size = b - 1
        for slot in range(p, b - 1):
            self.slot_of[int(self.index[slot])] = slot


def projection_coefficients(K: NDArray[np.float64], J: NDArray[np.int64], p: int) -> NDArray:
    """d with K_JJ d = K_Jp: φ(x_p)'s projection onto span{φ(x_j) : j ∈ J} is Σ d_j φ(x_j)."""
    KJJ = K[np.ix_(J, J)] + _RIDGE * np.eye(J.size)
    return np.linalg.solve(KJJ, K[J, p])
