"""Mercer kernels shared by the kernel models of aidopt (SVM kernel dual, PU learning, ...).

The conventions are scikit-learn's (``sklearn.metrics.pairwise_kernels``):

* ``linear``: k(a, b) = ⟨a, b⟩
* ``rbf``:    k(a, b) = exp(−γ ‖a − b‖²)   (the PU paper's Gaussian of scale s: γ = 1/(2s²))
* ``poly``:   k(a, b) = (γ ⟨a, b⟩ + coef0)^degree

``gamma=None`` means γ = 1/d, with d the number of features of the data the kernel is applied
to (scikit-learn's ``pairwise_kernels`` default, not SVC's ``"scale"``).

Every kernel is computed from inner products ⟨a, b⟩ (one matrix product) and, for ``rbf``, the
squared norms: ‖a − b‖² = ‖a‖² + ‖b‖² − 2⟨a, b⟩. A dense ``rbf`` block takes the whole exponent
from one product, −γ‖a − b‖² = [a, ‖a‖², 1]·[2γb, −γ, −γ‖b‖²] (m + 2 terms), then one pass of
``exp`` (3× faster than the element-wise passes over a tile of inner products measured);
:meth:`Kernel.from_inner` (kernel rows from a caller's inner products) clips the expansion at
0 instead. That expansion
loses what γ(‖a‖² + ‖b‖²) magnifies (rows far from the origin on the kernel's scale: at 10^9,
k(x, x) came out 0 instead of 1), so a dense ``rbf`` block whose entries it could move by more
than :data:`EXPANSION_LIMIT` is computed from the differences instead,
‖a − b‖² = Σ_k (a_k − b_k)² (``scipy.spatial.distance.cdist``). :func:`kernel_entry_error`
bounds |k̂ − k| for every entry either way: the certificates of the kernel models charge it.
Inputs may be dense arrays or scipy.sparse matrices; results are always dense float64 arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal, cast

import numpy as np

from aidopt.common.lazy import dense, issparse
from aidopt.common.lazy import sparse as sp
from aidopt.common.options import Option
from aidopt.exceptions import DataError, InvalidParameterError

__all__ = [
    "KERNEL_USES",
    "Kernel",
    "KernelParameters",
    "check_kernel_options",
    "expansion_error",
    "kernel_bound",
    "kernel_entry_error",
    "kernel_flag_options",
    "kernel_flags",
    "kernel_from_flags",
    "kernel_model_options",
    "kernel_times",
    "kernel_times_sparse",
    "quadratic_form_error",
    "squared_norms",
]

_BLOCK_ENTRIES = 1 << 21  # kernel entries per block of a blocked product (16 MiB of float64)
#: largest error bound of an rbf entry from the norm expansion (else: from the differences)
EXPANSION_LIMIT = 2.0**-40
_EXP_ULPS = 4  # rounding charged to NumPy's exp (its float64 kernels are within 1–2 ulp)

KernelKind = Literal["linear", "rbf", "poly"]
_KINDS = ("linear", "poly", "rbf")
#: the parameters each kernel kind uses (the others are an error on the command line)
KERNEL_USES = {"linear": (), "rbf": ("gamma",), "poly": ("gamma", "degree", "coef0")}


def check_kernel_options(kernel: str, **given: object) -> None:
    """Command-line kernel options (``--gamma``, ``--degree``, ``--coef0``) that the chosen
    ``--kernel`` would ignore are an error, not silently dropped. ``given`` maps each option's
    name to its value, None when the option was not given."""
    uses = KERNEL_USES.get(kernel, ())
    for option, value in given.items():
        if value is not None and option not in uses:
            users = [k for k, names in KERNEL_USES.items() if option in names]
            raise InvalidParameterError(
                f"--{option} has no effect with --kernel {kernel}; it applies to "
                f"--kernel {' and '.join(users)} only."
            )


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def squared_norms(A: np.ndarray | sp.spmatrix) -> np.ndarray:
    """Row-wise squared Euclidean norms ‖a_i‖² of a dense or sparse 2-D array."""
    if issparse(A):
        return np.asarray(cast(Any, A).multiply(A).sum(axis=1), dtype=np.float64).ravel()
    A = np.asarray(A, dtype=np.float64)
    return np.einsum("ij,ij->i", A, A)


@dataclass(frozen=True)
class Kernel:
    """A Mercer kernel k(a, b) (linear, Gaussian RBF or polynomial), scikit-learn conventions.

    Parameters
    ----------
    kind : {"linear", "rbf", "poly"}
    gamma : float > 0 or None
        γ of ``rbf`` and ``poly``; None means 1/d for d-feature data. Ignored by ``linear``.
    degree : int ≥ 1
        Degree of ``poly``.
    coef0 : float
        Offset of ``poly``.
    """

    kind: KernelKind = "linear"
    gamma: float | None = None
    degree: int = 3
    coef0: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise InvalidParameterError(
                f"The 'kind' parameter of Kernel must be a str among {set(_KINDS)}. "
                f"Got {self.kind!r} instead."
            )
        if self.gamma is not None and not (_is_real(self.gamma) and 0.0 < self.gamma < math.inf):
            raise InvalidParameterError(
                "The 'gamma' parameter of Kernel must be a float in the range (0.0, inf) or None. "
                f"Got {self.gamma!r} instead."
            )
        if not (isinstance(self.degree, Integral) and not isinstance(self.degree, bool)) or (
            self.degree < 1
        ):
            raise InvalidParameterError(
                "The 'degree' parameter of Kernel must be an int in the range [1, inf). "
                f"Got {self.degree!r} instead."
            )
        if not (_is_real(self.coef0) and math.isfinite(self.coef0)):
            raise InvalidParameterError(
                "The 'coef0' parameter of Kernel must be a float in the range (-inf, inf). "
                f"Got {self.coef0!r} instead."
            )

    def gamma_for(self, n_features: int) -> float:
        """The γ used on ``n_features``-dimensional data (1/n_features when ``gamma`` is None)."""
        return float(self.gamma) if self.gamma is not None else 1.0 / n_features

    def from_inner(
        self,
        inner: np.ndarray,
        sq_a: np.ndarray | float | None,
        sq_b: np.ndarray | float | None,
        n_features: int,
    ) -> np.ndarray:
        """Turn inner products ⟨a_i, b_j⟩ into k(a_i, b_j), in place when ``inner`` is float64.

        ``sq_a`` and ``sq_b`` are the squared norms of the rows; only ``rbf`` uses them: a 2-D
        ``inner`` takes ``sq_a`` as a column and ``sq_b`` as a row, a 1-D ``inner`` (one kernel
        row) a scalar ``sq_a``. A solver calls this to get kernel rows from one matrix product,
        with the norms computed once.
        """
        K = np.asarray(inner, dtype=np.float64)
        if self.kind == "linear":
            return K
        g = self.gamma_for(n_features)
        if self.kind == "poly":
            K *= g
            K += self.coef0
            return K if self.degree == 1 else np.power(K, self.degree, out=K)
        # rbf: exp(−γ max(‖a‖² + ‖b‖² − 2⟨a, b⟩, 0))
        assert sq_a is not None and sq_b is not None, "the rbf kernel needs the squared norms"
        K *= -2.0
        if K.ndim == 2:
            K += np.reshape(sq_a, (-1, 1))
            K += np.reshape(sq_b, (1, -1))
        else:
            K += sq_a
            K += sq_b
        np.maximum(K, 0.0, out=K)
        K *= -g
        return np.exp(K, out=K)

    def __call__(self, A: np.ndarray | sp.spmatrix, B: np.ndarray | sp.spmatrix) -> np.ndarray:
        """The block K(A, B) with entries k(a_i, b_j), shape (len(A), len(B))."""
        A, B = _as_pair(A, B)
        return self._block(A, B, self._norms(A), self._norms(B))

    def _norms(self, A: np.ndarray | sp.csr_matrix) -> np.ndarray | None:
        """The squared row norms when the kernel needs them (rbf), else None."""
        return squared_norms(A) if self.kind == "rbf" else None

    def _block(
        self,
        A: np.ndarray | sp.csr_matrix,
        B: np.ndarray | sp.csr_matrix,
        sq_a: np.ndarray | None,
        sq_b: np.ndarray | None,
    ) -> np.ndarray:
        """K(A, B) from one matrix product and the rows' squared norms (see :meth:`_norms`), or
        an rbf block from the rows' differences when the expansion would lose accuracy."""
        if self.kind == "rbf" and not (issparse(A) or issparse(B)):
            assert sq_a is not None and sq_b is not None, "the rbf kernel needs the squared norms"
            g = self.gamma_for(A.shape[1])
            top = float(sq_a.max(initial=0.0)) + float(sq_b.max(initial=0.0))
            if _expansion_error(g, A.shape[1], top) > EXPANSION_LIMIT:
                from scipy.spatial.distance import cdist

                K = cdist(A, B, "sqeuclidean")
                K *= -g
                return np.exp(K, out=K)
            return _rbf_by_one_product(A, B, sq_a, sq_b, g)
        inner = A @ B.T
        inner = np.asarray(dense(inner), dtype=np.float64)
        return self.from_inner(inner, sq_a, sq_b, A.shape[1])

    def diag(self, A: np.ndarray | sp.spmatrix) -> np.ndarray:
        """The diagonal k(a_i, a_i) of K(A, A), without forming K."""
        A = _as_2d(A, "A")
        if self.kind == "rbf":
            return np.ones(A.shape[0])
        return self.from_inner(squared_norms(A), None, None, A.shape[1])


def _rbf_by_one_product(
    A: np.ndarray, B: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray, gamma: float
) -> np.ndarray:
    """exp(−γ‖a_i − b_j‖²) with the exponent from one matrix product of m + 2 terms,
    [a_i, ‖a_i‖², 1]·[2γb_j, −γ, −γ‖b_j‖²] (within η of the exact exponent:
    :func:`_expansion_error`), and one pass of exp: no pass for the norms, the clipping or γ."""
    m = A.shape[1]
    left = np.empty((A.shape[0], m + 2))
    left[:, :m] = A
    left[:, m] = sq_a
    left[:, m + 1] = 1.0
    right = np.empty((B.shape[0], m + 2))
    np.multiply(B, 2.0 * gamma, out=right[:, :m])
    right[:, m] = -gamma
    np.multiply(sq_b, -gamma, out=right[:, m + 1])
    exponent = left @ right.T
    return np.exp(exponent, out=exponent)


def kernel_flag_options(kernel_help: str, gamma_help: str = "γ of rbf/poly (None: 1/m)"):
    """The command-line kernel options ``--kernel``, ``--gamma``, ``--degree``, ``--coef0``
    (None: the kind's default), declared once for every kernel model's ``cli_extras``."""
    return (
        Option("kernel", "linear", kernel_help, kind=str, choices=("linear", "rbf", "poly")),
        Option("gamma", None, gamma_help, low=0.0, allow_none=True),
        Option("degree", None, "degree of poly (None: 3)", kind=int, low=1, allow_none=True),
        Option("coef0", None, "offset of poly (None: 1.0)", allow_none=True),
    )


def kernel_model_options(default: str = "rbf") -> tuple[Option, ...]:
    """The kernel parameters of a kernel model (``kernel``, ``gamma``, ``degree``, ``coef0``),
    declared once for every kernel model's ``options``."""
    return (
        Option(
            "kernel",
            default,
            "the kernel K: linear ⟨a, b⟩, rbf exp(−γ‖a − b‖²), poly (γ⟨a, b⟩ + coef0)^degree",
            kind=str,
            choices=("linear", "rbf", "poly"),
        ),
        Option("gamma", None, "γ of rbf/poly (None: 1/m)", low=0.0, allow_none=True),
        Option("degree", 3, "degree of poly", kind=int, low=1),
        Option("coef0", 1.0, "offset of poly"),
    )


class KernelParameters:
    """The kernel parameters of a kernel model (declared by :func:`kernel_model_options`) and
    what its certificate needs of the kernel on the data."""

    kernel: str
    gamma: float | None
    degree: int
    coef0: float

    def kernel_for(self, m: int) -> Kernel:
        """The kernel with γ resolved for m-feature data (γ = 1/m when not given)."""
        gamma = self.gamma if self.gamma is not None else 1.0 / m
        return Kernel(cast(KernelKind, self.kernel), float(gamma), self.degree, float(self.coef0))

    def kernel_max(self, data: Any) -> float:
        """max_i K(x_i, x_i) ≥ |K(x_i, x_j)|, rounded up (:func:`kernel_bound`)."""
        return kernel_bound(self.kernel_for(data.m), data.X)

    def kernel_error(self, data: Any) -> float:
        """e_K ≥ |K̂_ij − K_ij| per computed entry (:func:`kernel_entry_error`)."""
        return kernel_entry_error(self.kernel_for(data.m), data.X)


def kernel_bound(kernel: Kernel, X: np.ndarray | sp.spmatrix) -> float:
    """max_i K(x_i, x_i) ≥ |K(x_i, x_j)| for rows of X (Cauchy–Schwarz in feature space),
    rounded up: the scale of the rounding allowances of a kernel model's certificate."""
    from aidopt.numerics.rounding import EPS, max_row_norm

    if kernel.kind == "rbf":
        return 1.0
    r2 = max_row_norm(X) ** 2
    if kernel.kind == "linear":
        return r2
    top = max(abs(kernel.gamma_for(X.shape[1]) * r2 + kernel.coef0), abs(kernel.coef0))
    return float(top**kernel.degree) * (1 + 8 * kernel.degree * EPS)


def kernel_entry_error(kernel: Kernel, X: np.ndarray | sp.spmatrix) -> float:
    """e_K ≥ |k̂(x_i, x_j) − k(x_i, x_j)|: the rounding of any kernel entry that this module
    computes between rows of X (u = 2^-53, m features, R = max ‖x_i‖, any order of the sums).

    * linear: an inner product of m terms, (m + 1)u R².
    * poly: base β = γ⟨a, b⟩ + c0 within (m + 3)u B, B = γR² + |c0|; its power within
      (d(m + 3) + 4)u B^d (1 + (m + 3)u)^d.
    * rbf from the expansion: the exponent z = −γ‖a − b‖² within η = γ(3m + 6)u·2R² — as
      t = ‖a‖² + ‖b‖² − 2⟨a, b⟩ (norms, inner product, three additions: (2m + 6)u·2R² in t), or
      as one dot product of m + 2 terms [a, ‖a‖², 1]·[fl(2γb), −γ, fl(−γ‖b‖²)]: the products of
      a and b within γ_{m+3}·2γ|a||b|, the norms' terms within γ_{2m+3}·γ‖·‖², and 2|a||b| ≤
      ‖a‖² + ‖b‖² —, so k̂ = exp(ẑ)(1 + 4u) is within expm1(η) + 8u e^η (1 + η) of e^z ≤ 1;
      from the differences (dense blocks beyond :data:`EXPANSION_LIMIT`): t within (m + 3)u‖a − b‖²,
      and x e^{−x} ≤ 1/e bounds the effect: (m/2 + 8)u.
    """
    m = X.shape[1]
    from aidopt.numerics.rounding import EPS, max_row_norm

    r2 = max_row_norm(X) ** 2
    if kernel.kind == "linear":
        return (m + 1) * EPS * r2 * (1 + 4 * EPS)
    g = kernel.gamma_for(m)
    if kernel.kind == "poly":
        base = g * r2 + abs(kernel.coef0)
        d = kernel.degree
        return (d * (m + 3) + 4) * EPS * base**d * (1 + (m + 3) * EPS) ** d * (1 + 4 * EPS)
    direct = (m / 2 + 8) * EPS
    expansion = _expansion_error(g, m, 2 * r2)
    if issparse(X):
        return expansion
    return max(direct, min(expansion, EXPANSION_LIMIT))


def expansion_error(
    terms: int, m: int, mass: float, kmax: float, entry: float, offset: float = 0.0
) -> float:
    """Rounding bound of one computed value Σ_j c_j k̂(s_j, x) ± c of a kernel expansion of up to
    ``terms`` entries (Σ|c_j| = ``mass``, |k| ≤ ``kmax``, each entry within ``entry`` of k,
    |c| ≤ ``offset``; the sum in any order): (terms + m + 3)u(mass·kmax + offset) + mass·e_K."""
    from aidopt.numerics.rounding import EPS

    return (terms + m + 3) * EPS * (mass * kmax + offset) + mass * entry


def quadratic_form_error(mass: float, n: int, kmax: float, entry: float) -> float:
    """Rounding bound of a computed quadratic form Σ_ij c_i c_j k̂(x_i, x_j) over up to n² terms
    (Σ|c_i| = ``mass``, |k| ≤ ``kmax``, each entry within ``entry`` of k — :func:`kernel_bound`,
    :func:`kernel_entry_error`): ((n + 4)u kmax + e_K) mass²."""
    from aidopt.numerics.rounding import EPS

    return ((n + 4) * EPS * kmax + entry) * mass**2


def _expansion_error(gamma: float, m: int, norms: float) -> float:
    """Bound on |k̂ − k| of an rbf entry from the expansion, for ‖a‖² + ‖b‖² ≤ ``norms`` (at
    most 1: k̂ and k both lie in [0, 1])."""
    from aidopt.numerics.rounding import EPS

    eta = gamma * (3 * m + 6) * EPS * norms * (1 + 2.0**-20)
    if eta >= 1.0:
        return 1.0  # k̂ and k both lie in [0, 1]
    return math.expm1(eta) + (_EXP_ULPS + 4) * EPS * math.exp(eta) * (1 + eta)


def kernel_from_flags(
    kind: str,
    gamma: float | None = None,
    degree: int | None = None,
    coef0: float | None = None,
    *,
    strict: bool = True,
) -> Kernel:
    """The kernel the command-line flags name; with ``strict`` a flag the kind ignores
    (``--gamma`` with linear, ``--coef0`` with rbf) is an error, not silently dropped."""
    if strict:
        check_kernel_options(kind, gamma=gamma, degree=degree, coef0=coef0)
    return Kernel(
        cast(KernelKind, kind),  # checked by Kernel
        gamma=gamma,
        degree=3 if degree is None else degree,
        coef0=1.0 if coef0 is None else coef0,
    )


def kernel_flags(kernel: Kernel) -> dict[str, object]:
    """The flags :func:`kernel_from_flags` takes back: the kind and the parameters it uses."""
    return {
        "kernel": kernel.kind,
        **{name: getattr(kernel, name) for name in KERNEL_USES[kernel.kind]},
    }


def kernel_times_sparse(
    kernel: Kernel, A: np.ndarray | sp.spmatrix, B: np.ndarray | sp.spmatrix, v: np.ndarray
) -> np.ndarray:
    """K(A, B) v from the kernel columns of v's nonzero entries only (an expansion Σ_j v_j
    K(·, b_j) whose support is a few of B's rows: O(len(A)·nnz(v)) kernel values)."""
    support = np.flatnonzero(v)
    return kernel_times(kernel, A, B[support], v[support])


def kernel_times(
    kernel: Kernel,
    A: np.ndarray | sp.spmatrix,
    B: np.ndarray | sp.spmatrix,
    right: np.ndarray | sp.spmatrix,
) -> np.ndarray:
    """K(A, B) @ right (a vector or a matrix, dense or sparse), in row blocks of A.

    Never holds more than 2^21 kernel entries (16 MiB) at once; O(len(A)·len(B)) kernel
    evaluations, the squared row norms (rbf) computed once.
    """
    A, B = _as_pair(A, B)
    sq_a, sq_b = kernel._norms(A), kernel._norms(B)
    n_right = () if np.ndim(right) == 1 else (right.shape[1],)
    out = np.empty((A.shape[0], *n_right))
    step = max(1, _BLOCK_ENTRIES // max(1, B.shape[0]))
    for start in range(0, A.shape[0], step):
        rows = slice(start, start + step)
        block = kernel._block(A[rows], B, None if sq_a is None else sq_a[rows], sq_b)
        out[rows] = (right.T @ block.T).T if issparse(right) else block @ right
    return out


def _as_pair(
    A: np.ndarray | sp.spmatrix, B: np.ndarray | sp.spmatrix
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray | sp.csr_matrix]:
    A, B = _as_2d(A, "A"), _as_2d(B, "B")
    if A.shape[1] != B.shape[1]:
        raise DataError(
            f"A and B must have the same number of features; A has shape {A.shape} "
            f"but B has shape {B.shape}."
        )
    return A, B


def _as_2d(A: np.ndarray | sp.spmatrix, name: str) -> np.ndarray | sp.csr_matrix:
    if issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64)
    else:
        A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise DataError(f"{name} must be a 2-D array; got shape {A.shape}.")
    return A
