"""Floating-point sums with proven rounding bounds: the arithmetic of every certificate.

Every sum of n terms is accumulated in chunks of :data:`CHUNK` (numpy/BLAS inside a chunk,
extended precision across chunks), so its rounding error is at most γ·Σ|terms| with
γ = (CHUNK + 2)·ε (ε the float64 unit roundoff, :data:`EPS`), whatever n is. Each function
returns a value and a bound on its rounding error; a certificate subtracts the bound
(:mod:`aidopt.core.certificate`, docs/certificates.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.numerics import compiled

__all__ = [
    "BLAS_CHUNK",
    "CHUNK",
    "EPS",
    "GAMMA",
    "GAMMA_BLAS",
    "GAMMA_FOURS",
    "abs_column_sums",
    "abs_column_sums_from",
    "abs_column_sums_known",
    "abs_products_bound",
    "accurate_sum",
    "accurate_tdot",
    "accurate_weighted_sum",
    "added_blocks",
    "added_chunk_sums",
    "data_sums_cached",
    "max_row_norm",
    "minus",
    "power_of_two",
    "product_up",
    "quotient_relative_error",
    "ratio",
    "safe_min_eigenvalue",
    "score_error",
    "squared_norm",
    "sum_relative_error",
    "times",
    "total_weight_up",
    "vector_sums",
    "weighted_abs_column_sums",
    "weighted_below",
]

CHUNK = 256  #: rows per chunk of an accurate sum
EPS = float(np.finfo(np.float64).eps) / 2.0  #: unit roundoff of float64


def _gamma(roundings: int) -> float:
    """γ_k = kε/(1 − kε): |fl(Σ) − Σ| ≤ γ_k Σ|terms| when no term goes through more than k
    roundings."""
    return roundings * EPS / (1.0 - roundings * EPS)


GAMMA = _gamma(CHUNK + 2)  #: relative rounding bound of a chunked sum
#: the relative rounding bound of a compiled chunk product Σ u_i a_ij
#: (:func:`aidopt.numerics.compiled.cluster_dual_sums`: four rows' terms added in pairs, that sum
#: added to the chunk's running sum, a short chunk's last ≤ 3 rows one by one): a term goes through
#: its product, two additions in its four, at most CHUNK/4 + 3 additions to the running sum
GAMMA_FOURS = _gamma(6 + CHUNK // 4)
#: rows per chunk of a product Aᵀv that BLAS adds in an unknown order (:func:`accurate_tdot`):
#: each term then goes through at most its product and BLAS_CHUNK − 1 additions
BLAS_CHUNK = 64
#: the relative rounding bound of such a chunk product (a quarter of GAMMA's)
GAMMA_BLAS = _gamma(BLAS_CHUNK + 2)
_SUM2_ENTRIES = 1 << 12  #: chunk sums added by the compiled Sum2 (in a large run) from this many


def added_blocks(values: Sequence[Any], errors: Sequence[Any]) -> tuple[Any, Any]:
    """Sums of blocks of rows (floats, or vectors of one length) added exactly
    (``math.fsum``, per coordinate) and rounded once, with the blocks' rounding bounds added
    (their own rounding allowed for) plus ε of the total: how the certificate's row sums of
    blocks add (:mod:`aidopt.engine.chunked`)."""
    if np.ndim(values[0]) == 0:
        total = math.fsum(values)
        return total, math.fsum(errors) * (1 + 2 * EPS) + EPS * abs(total)
    vector = np.array([math.fsum(col) for col in zip(*values, strict=True)])
    grown = np.sum(errors, axis=0) * (1 + len(values) * EPS)
    return vector, grown + EPS * np.abs(vector)


def squared_norm(
    w: NDArray[np.float64], w_error: NDArray[np.float64]
) -> tuple[float, float, float]:
    """(‖w‖², a bound on how far the ‖·‖² of the exact vector can be from it, an upper bound
    on the exact vector's norm) for a computed vector ``w`` with rounding bounds ``w_error``
    per coordinate (the exact vector lies in the box |w − w_exact| ≤ w_error)."""
    norm = float(np.linalg.norm(w))
    norm_up = float(np.linalg.norm(np.abs(w) + w_error))
    return norm**2, (norm_up**2 - norm**2) * (1 + 4 * EPS), norm_up


def accurate_sum(values: ArrayLike) -> tuple[float, float]:
    """(Σ v_i, a bound on its rounding error): chunks of CHUNK summed in float64, chunk sums
    added exactly by ``math.fsum``; error ≤ γ Σ|v_i| + ε|Σ|."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        return 0.0, 0.0
    chunks = np.add.reduceat(v, np.arange(0, v.size, CHUNK))
    total = math.fsum(chunks.tolist())
    return total, GAMMA * float(np.abs(v).sum()) * (1 + 2 * EPS) + EPS * abs(total)


def accurate_weighted_sum(
    values: ArrayLike, weight: NDArray[np.float64] | None
) -> tuple[float, float]:
    """(Σ w_i v_i, a bound on its rounding error): :func:`accurate_sum` of the products, plus
    2ε Σ|w_i v_i| for the rounding of the products themselves; Σ v_i without ``weight``."""
    if weight is None:
        return accurate_sum(values)
    products = weight * np.asarray(values, dtype=np.float64)
    total, error = accurate_sum(products)
    return total, error + 2 * EPS * float(np.abs(products).sum())


def accurate_tdot(
    A: NDArray[np.float64] | sp.spmatrix,
    v: NDArray[np.float64],
    abs_bound: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(Aᵀv, a bound on its rounding error per column) for A (n × p).

    Each chunk of rows is multiplied in float64 and the chunk sums are added exactly
    (:func:`math.fsum`), rounded once: the error of column j is at most γ(|A|ᵀ|v|)_j +
    ε|(Aᵀv)_j|, whatever the order of the additions inside a chunk — CHUNK rows and γ = GAMMA
    for the compiled loop of :mod:`aidopt.numerics.compiled` (a large dense A) and for a sparse A,
    BLAS_CHUNK rows and γ = GAMMA_BLAS for BLAS on a dense A (one batched product over all
    chunks of a C-ordered A).
    ``abs_bound`` may give an upper bound on |A|ᵀ|v| (e.g. max|v| · the column sums of |A|) to
    save a pass over A.
    """
    n, p = A.shape
    gamma = GAMMA
    if issparse(A):
        A = sp.csr_matrix(A)
        chunks = [
            np.asarray(A[start : start + CHUNK].T @ v[start : start + CHUNK]).ravel()
            for start in range(0, n, CHUNK)
        ]
        absolute = np.asarray(abs(A).T @ np.abs(v)).ravel() if abs_bound is None else abs_bound
    else:
        absolute = np.abs(A).T @ np.abs(v) if abs_bound is None else abs_bound
        chunks, gamma = _dense_chunk_products(A, v)
    if not chunks:
        return np.zeros(p), np.zeros(p)
    total, added = added_chunk_sums(np.vstack(chunks))
    return total, gamma * absolute * (1 + 4 * EPS) + added


def _dense_chunk_products(A: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[list, float]:
    """(Σ v_i a_i per chunk of a dense A in float64, the relative rounding bound of a chunk):
    the compiled loop over chunks of CHUNK rows in a large run (GAMMA), else BLAS over chunks
    of BLAS_CHUNK rows (GAMMA_BLAS): one batched product over the chunks of a C-ordered A, a
    loop for another order."""
    kernels = compiled.kernels_for(A)
    if kernels is not None:
        return [kernels.chunk_tdot(A, v, CHUNK)], GAMMA
    n, p = A.shape
    head = n - n % BLAS_CHUNK
    if A.flags.c_contiguous:
        rows = A[:head].reshape(-1, BLAS_CHUNK, p)  # a view
        chunks = [np.matmul(v[:head].reshape(-1, 1, BLAS_CHUNK), rows).reshape(-1, p)]
    else:
        chunks = [
            A[s : s + BLAS_CHUNK].T @ v[s : s + BLAS_CHUNK] for s in range(0, head, BLAS_CHUNK)
        ]
    if head < n:
        chunks.append(A[head:].T @ v[head:])
    return chunks, GAMMA_BLAS


def added_chunk_sums(rows: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(the sum of each column of ``rows`` — chunk sums —, a bound on the error of that
    addition alone): exactly (:func:`math.fsum`) and rounded once, error ≤ ε|total|; in a large
    run by the compiled Sum2 (:func:`aidopt.numerics.compiled.compensated_column_sums`), error ≤
    ε|s| + γ²_N Σ|p| ≤ ε(1 + 2ε)|total| + 2γ²_N Σ|p| (|s| ≤ (|total| + γ²_N Σ|p|)/(1 − ε), Σ|p| as
    computed, with its own rounding, ≤ (1 + 2γ_N) × that)."""
    rows = np.ascontiguousarray(rows)
    kernels = compiled.kernels_for(rows, minimum=_SUM2_ENTRIES)
    if kernels is None:
        total = np.array([math.fsum(column) for column in rows.T.tolist()], dtype=np.float64)
        return total, EPS * np.abs(total)
    total, size = kernels.compensated_column_sums(rows)
    gamma = _gamma(rows.shape[0])
    tail = 2 * gamma * gamma * size * (1 + 2 * gamma)
    return total, EPS * (1 + 2 * EPS) * np.abs(total) + tail


_RUN_CACHE: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "aidopt_sums", default=None
)


@contextlib.contextmanager
def data_sums_cached() -> Iterator[None]:
    """Within: the data-only sums below (:func:`abs_column_sums`, :func:`vector_sums`,
    :func:`max_row_norm`) are computed once per array — a run's data do not change while it
    runs. Outside, nothing is cached: an array changed in place between two runs must never
    meet a stale bound."""
    token = _RUN_CACHE.set({}) if _RUN_CACHE.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _RUN_CACHE.reset(token)


def _per_array(kind: str, A: Any, compute: Any) -> Any:
    """compute(A), remembered for the array object inside :func:`data_sums_cached`."""
    cache = _RUN_CACHE.get()
    if cache is None:
        return compute(A)
    hit = _remembered(kind, A)
    if hit is not None:
        return hit[1]
    value = compute(A)
    cache[(kind, id(A), A.shape)] = (A, value)
    return value


def _remembered(kind: str, A: Any) -> tuple[Any, Any] | None:
    """(A, value) remembered by :func:`_per_array` for this array object, else None."""
    cache = _RUN_CACHE.get()
    hit = None if cache is None else cache.get((kind, id(A), A.shape))
    return hit if hit is not None and hit[0] is A else None  # A is held: its id is not reused


def abs_column_sums(A: NDArray[np.float64] | sp.spmatrix) -> NDArray[np.float64]:
    """Σ_i |a_ij| per column, rounded up (bounds |A|ᵀ|v| by max|v|·this; see
    :func:`data_sums_cached`)."""
    return _per_array("abs_column_sums", A, _abs_column_sums)


def abs_column_sums_known(A: Any) -> bool:
    """True when :func:`abs_column_sums` of A is remembered already (within
    :func:`data_sums_cached`): a pass over A need not sum |a_ij| again."""
    return _remembered("abs_column_sums", A) is not None


def abs_column_sums_from(A: Any, sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`abs_column_sums` of A from ``sums`` = Σ_i |a_ij| added in float64 in any order by
    a pass that read A anyway (remembered within :func:`data_sums_cached`)."""
    return _per_array("abs_column_sums", A, lambda _: _rounded_up(sums, A.shape[0]))


def _abs_column_sums(A: NDArray[np.float64] | sp.spmatrix) -> NDArray[np.float64]:
    if issparse(A):
        sums = np.asarray(abs(A).sum(axis=0), dtype=np.float64).ravel()
    elif (kernels := compiled.kernels_for(A)) is not None:
        sums = kernels.abs_column_sums(A)
    else:
        sums = np.zeros(A.shape[1])
        for start in range(0, A.shape[0], 65536):
            sums += np.abs(A[start : start + 65536]).sum(axis=0)
    return _rounded_up(sums, A.shape[0])


def _rounded_up(sums: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """An upper bound on n non-negative terms' exact sums from their float64 sums (n − 1
    additions in any order; :func:`sum_relative_error`, which also covers this product)."""
    return sums * (1 + sum_relative_error(n))


def score_error(
    X: NDArray[np.float64] | sp.spmatrix,
    w: NDArray[np.float64],
    offset: float,
    weight: NDArray[np.float64] | None = None,
) -> float:
    """A bound on Σ_i ω_i |fl(s_i) − s_i| for the scores s_i = x_i·w ± c of every row, computed
    as one product X w and one addition (|c| ≤ ``offset``; ω = 1 unweighted).

    fl(x_i·w) is within γ_m Σ_j |x_ij||w_j| of x_i·w and the addition adds one rounding, so
    |fl(s_i) − s_i| ≤ γ_{m+1}(Σ_j |x_ij||w_j| + |c|) ≤ (m + 3)ε(…) (Higham, Thm 3.5); summed with
    weights at most max ω: (m + 3)ε · max ω · (Σ_j (Σ_i |x_ij|)|w_j| + n·offset), with the column
    sums rounded up (:func:`abs_column_sums`)."""
    n, m = X.shape
    size = float(abs_column_sums(X) @ np.abs(w)) + n * offset
    top = 1.0 if weight is None else float(weight.max(initial=0.0))
    return (m + 3) * EPS * top * size


def times(factor: float, value: float, error: float, relative: float = 0.0) -> tuple[float, float]:
    """factor × (a computed value within ``error``), and a bound on its error: factor·error, and
    for the product's rounding and a factor known only within ``relative`` (relatively)
    :func:`quotient_relative_error` (one rounding) × |product|."""
    product = factor * value
    return product, abs(factor) * error + quotient_relative_error(1, relative) * abs(product)


def minus(a: float, a_error: float, b: float, b_error: float) -> tuple[float, float]:
    """a − b for two computed values within ``a_error``, ``b_error``, and a bound on its error:
    theirs plus the subtraction's rounding ε|a − b| ≤ ε(|a| + |b|)."""
    return a - b, a_error + b_error + EPS * (abs(a) + abs(b))


def product_up(*factors: float) -> float:
    """An upper bound on the exact product of non-negative floats: fl(∏) rounded k − 1 times
    for k factors, within (1 + ε)^(k−1) − 1 ≤ 2(k − 1)ε of it while kε ≤ 1/4; one more
    product with the margin itself: (1 + 2kε)."""
    product = 1.0
    for factor in factors:
        product *= factor
    return product * (1 + 2 * len(factors) * EPS)


def abs_products_bound(
    X: NDArray[np.float64] | sp.spmatrix, top: float, weight: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """An upper bound on Σ_i |a_i||x_ij| per column for any |a_i| ≤ ``top``·ω_i (ω = 1
    unweighted): top × the column sums of ω|X| rounded up (:func:`weighted_abs_column_sums`),
    and the product's rounding — what :func:`accurate_tdot` takes as ``abs_bound``."""
    return top * weighted_abs_column_sums(X, weight) * (1 + 2 * EPS)


def ratio(a: float, b: float, b_relative: float = 0.0) -> tuple[float, float]:
    """a/b and a bound on its relative error, for b computed within ``b_relative`` of its exact
    value (relatively): the division's rounding and b's error
    (:func:`quotient_relative_error`)."""
    return a / b, quotient_relative_error(1, b_relative)


def quotient_relative_error(roundings: int, relative: float = 0.0) -> float:
    """A bound on the relative error of a product or quotient of exact numbers and factors
    known within ``relative`` (together), computed in ``roundings`` rounded operations:
    (1 + ε)^k/(1 − t) − 1 ≤ u(1 + 4u), u = kε + t, while u ≤ 1/4."""
    first = roundings * EPS + relative
    return first * (1 + 4 * first)


def weighted_below(a: NDArray[np.float64], weight: NDArray[np.float64] | None) -> NDArray:
    """a_i ω_i (ω > 0) computed so that its magnitude is at most the exact product's: fl(a_i ω_i)
    is within ε of it (relatively), so |fl(a_i ω_i)(1 − 2ε)| ≤ |a_i ω_i| with the same sign — a
    dual point in the box lo ≤ a_i ≤ hi (lo ≤ 0 ≤ hi) stays in the box [ω_i lo, ω_i hi] of the
    weighted problem in exact arithmetic. ``a`` itself unweighted."""
    return a if weight is None else (a * weight) * (1.0 - 2.0 * EPS)


def weighted_abs_column_sums(
    X: NDArray[np.float64] | sp.spmatrix, weight: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """Σ_i ω_i |x_ij| per column, rounded up (n products and n − 1 additions:
    :func:`sum_relative_error`);
    :func:`abs_column_sums` unweighted."""
    if weight is None:
        return abs_column_sums(X)
    return np.asarray(weight @ abs(X)).ravel() * (1 + sum_relative_error(X.shape[0]))


def sum_relative_error(n: int) -> float:
    """A bound on the relative rounding error of a float64 sum of n non-negative terms added in
    any order, each term possibly one rounded product, with one more rounding to spare (scaling
    the sum up): γ_{n+2} = (n + 2)ε/(1 − (n + 2)ε) ≥ γ_{n−1} + 3ε (Higham, Lemma 3.3). Unlike
    (n + 2)ε, which it replaces, it stays a bound beyond n²ε ≈ 3 (1.6·10^8 terms)."""
    return _gamma(n + 2)


def total_weight_up(weight: NDArray[np.float64]) -> float:
    """Σ_i ω_i (ω ≥ 0) rounded up (:func:`sum_relative_error`)."""
    return float(weight.sum()) * (1 + sum_relative_error(weight.size))


def vector_sums(v: NDArray[np.float64]) -> tuple[float, float]:
    """(Σ_i |v_i|, Σ_i v_i²) in float64 (see :func:`data_sums_cached`)."""
    return _per_array("vector_sums", v, lambda a: (float(np.abs(a).sum()), float(a @ a)))


def max_row_norm(X: NDArray[np.float64] | sp.spmatrix) -> float:
    """max_i ‖x_i‖₂, rounded up (see :func:`data_sums_cached`)."""
    return _per_array("max_row_norm", X, _max_row_norm)


def _max_row_norm(X: NDArray[np.float64] | sp.spmatrix) -> float:
    if issparse(X):
        sq = np.asarray(sp.csr_matrix(X).multiply(X).sum(axis=1)).ravel()
        value = float(np.sqrt(sq.max(initial=0.0)))
    else:
        value = 0.0
        for start in range(0, X.shape[0], 65536):
            block = X[start : start + 65536]
            value = max(value, float(np.sqrt(np.einsum("ij,ij->i", block, block).max(initial=0))))
    return value * (1 + X.shape[1] * EPS * 4)


def safe_min_eigenvalue(G: NDArray[np.float64], terms: int) -> float:
    """A lower bound on λ_min of a symmetric PSD matrix G that was summed from ``terms`` terms:
    the computed λ_min less the effect of the rounding of G (‖ΔG‖₂ ≤ γ_terms · p · max G_jj)."""
    p = G.shape[0]
    lam = float(np.linalg.eigvalsh(0.5 * (G + G.T))[0])
    slack = (terms + p + 2) * EPS * p * float(np.abs(np.diag(G)).max(initial=0.0))
    return lam - slack


def power_of_two(values: ArrayLike) -> Any:
    """2^round(log2 v) per value (1 where v is 0): a scaling factor that adds no rounding (a
    float for a scalar)."""
    v = np.asarray(values, dtype=np.float64)
    out = np.exp2(np.round(np.log2(np.where(v > 0, v, 1.0))))
    return out if out.ndim else float(out)
