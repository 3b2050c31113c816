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

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt import compiled
from aidopt.lazy import issparse
from aidopt.lazy import sparse as sp

__all__ = [
    "BLAS_CHUNK",
    "CHUNK",
    "GAMMA",
    "GAMMA_BLAS",
    "GAMMA_FOURS",
    "GAP_FLOOR",
    "MAX_SOLVER_ACCURACY",
    "Bound",
    "Certificate",
    "DualPoint",
    "abs_column_sums",
    "abs_column_sums_from",
    "abs_column_sums_known",
    "accurate_sum",
    "accurate_tdot",
    "accurate_weighted_sum",
    "added_blocks",
    "added_chunk_sums",
    "best_with_dual",
    "data_sums_cached",
    "dual_box",
    "hinge_dual_value",
    "max_row_norm",
    "plus_half_squared_norm",
    "relative_gap",
    "repair_equalities",
    "safe_min_eigenvalue",
    "squared_norm",
    "vector_sums",
]

CHUNK = 256  #: rows per chunk of an accurate sum
EPS = float(np.finfo(np.float64).eps) / 2.0  #: unit roundoff of float64
#: the tightest relative gap a certificate is asked for, for every model: the rounding
#: allowances keep a proven gap above 0, so ``tol = 0`` means "certify to 1e-9"
GAP_FLOOR = 1e-9
#: the coarsest inner-solver accuracy that may certify a gap above tol: a status ``optimal``
#: proves a gap ≤ max(tol, GAP_FLOOR, min(the solver's stated accuracy, this))
MAX_SOLVER_ACCURACY = 1e-6


def _gamma(roundings: int) -> float:
    """γ_k = kε/(1 − kε): |fl(Σ) − Σ| ≤ γ_k Σ|terms| when no term goes through more than k
    roundings."""
    return roundings * EPS / (1.0 - roundings * EPS)


GAMMA = _gamma(CHUNK + 2)  #: relative rounding bound of a chunked sum
#: the relative rounding bound of a compiled chunk product Σ u_i a_ij
#: (:func:`aidopt.compiled.cluster_dual_sums`: four rows' terms added in pairs, that sum added to
#: the chunk's running sum, a short chunk's last ≤ 3 rows one by one): a term goes through its
#: product, two additions in its four, at most CHUNK/4 + 3 additions to the running sum
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


def hinge_dual_value(
    alpha_sum: float, alpha_sum_error: float, w: NDArray[np.float64], w_error: NDArray[np.float64]
) -> tuple[float, float]:
    """(Σα_i − ½‖w‖², its rounding allowance) — the dual objective of a hinge-loss SVM at α,
    w = Σα_i (y_i) x_i computed with rounding bounds ``w_error`` per coordinate."""
    norm_sq, norm_sq_error, _ = squared_norm(w, w_error)
    return alpha_sum - 0.5 * norm_sq, alpha_sum_error + 0.5 * norm_sq_error


def plus_half_squared_norm(
    objective: float, error: float, norm_sq: float, m: int
) -> tuple[float, float]:
    """(E + ½‖w‖², its rounding bound) for an objective E with bound ``error`` and ‖w‖² of m
    coordinates: the regulariser of an SVM's objective, added once to the sum of its losses."""
    total = objective + 0.5 * norm_sq
    return total, error + (m + 2) * EPS * abs(norm_sq) + EPS * abs(total)


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


def dual_box(scale: float, weight: NDArray[np.float64] | None, n: int) -> NDArray[np.float64]:
    """The upper bound scale·w_i of every row's dual variable (scale without ``weight``). With
    row weights the product is rounded down by 2ε, so that the floating-point box lies inside
    the exact one and a dual point clipped to it is feasible."""
    if weight is None:
        return np.full(n, float(scale))
    return scale * weight * (1 - 2 * EPS)


def accurate_tdot(
    A: NDArray[np.float64] | sp.spmatrix,
    v: NDArray[np.float64],
    abs_bound: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(Aᵀv, a bound on its rounding error per column) for A (n × p).

    Each chunk of rows is multiplied in float64 and the chunk sums are added exactly
    (:func:`math.fsum`), rounded once: the error of column j is at most γ(|A|ᵀ|v|)_j +
    ε|(Aᵀv)_j|, whatever the order of the additions inside a chunk — CHUNK rows and γ = GAMMA
    for the compiled loop of :mod:`aidopt.compiled` (a large dense A) and for a sparse A,
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
    run by the compiled Sum2 (:func:`aidopt.compiled.compensated_column_sums`), error ≤ ε|s| +
    γ²_N Σ|p| ≤ ε(1 + 2ε)|total| + 2γ²_N Σ|p| (|s| ≤ (|total| + γ²_N Σ|p|)/(1 − ε), Σ|p| as
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
    additions in any order)."""
    return sums * (1 + n * EPS * 2)


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
        return cls(by_regime, index, u[index].astype(np.float64, copy=False), dict(extra or {}))

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
            from aidopt.solvers.threads import single_thread_blas  # beside a busy process)

            with single_thread_blas():
                delta = np.linalg.lstsq(A_F, residual, rcond=None)[0]
        s[movable] = np.clip(s[movable] + delta, lo[movable], hi[movable])
    return s


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
