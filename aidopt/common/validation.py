"""Input validation at the boundary: data arrays and declared parameter constraints.

Messages follow scikit-learn so that users of it recognise them:
"The 'M' parameter of SVMModel must be a float in the range (0.0, inf). Got -1 instead."
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import DataError, InvalidParameterError

__all__ = [
    "check_bool",
    "check_choice",
    "check_feature_names",
    "check_int",
    "check_matrix",
    "check_predict_input",
    "check_real",
    "check_row_weights",
    "check_vector",
]


def _interval_text(low: float | None, high: float | None, closed: str) -> str:
    left = "[" if closed in ("left", "both") else "("
    right = "]" if closed in ("right", "both") else ")"
    lo = "-inf" if low is None else repr(float(low))
    hi = "inf" if high is None else repr(float(high))
    return f"{left}{lo}, {hi}{right}"


@overload
def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "neither",
    allow_none: Literal[False] = False,
) -> float: ...


@overload
def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "neither",
    allow_none: bool,
) -> float | None: ...


def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "neither",
    allow_none: bool = False,
) -> float | None:
    """A finite real number in the interval (low, high) with the given closed ends."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok:
        v = float(value)
        if low is not None:
            ok = v >= low if closed in ("left", "both") else v > low
        if ok and high is not None:
            ok = v <= high if closed in ("right", "both") else v < high
    if not ok:
        extra = " or None" if allow_none else ""
        raise InvalidParameterError(
            f"The '{name}' parameter of {owner} must be a float in the range "
            f"{_interval_text(low, high, closed)}{extra}. Got {value!r} instead."
        )
    return float(value)


@overload
def check_int(
    value: Any,
    name: str,
    owner: str,
    *,
    low: int | None = None,
    high: int | None = None,
    allow_none: Literal[False] = False,
) -> int: ...


@overload
def check_int(
    value: Any,
    name: str,
    owner: str,
    *,
    low: int | None = None,
    high: int | None = None,
    allow_none: bool,
) -> int | None: ...


def check_int(
    value: Any,
    name: str,
    owner: str,
    *,
    low: int | None = None,
    high: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """An integer in [low, high]."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if ok and low is not None:
        ok = value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None else str(high)
        extra = " or None" if allow_none else ""
        raise InvalidParameterError(
            f"The '{name}' parameter of {owner} must be an int in the range [{lo}, {hi}]{extra}. "
            f"Got {value!r} instead."
        )
    return int(value)


def check_choice(value: object, name: str, owner: str, choices: tuple[object, ...]) -> object:
    """One of a fixed set of options."""
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise InvalidParameterError(
            f"The '{name}' parameter of {owner} must be one of {{{shown}}}. Got {value!r} instead."
        )
    return value


def check_bool(value: object, name: str, owner: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise InvalidParameterError(
            f"The '{name}' parameter of {owner} must be a bool. Got {value!r} instead."
        )
    return bool(value)


def in_memory(*values: Any) -> tuple[Any, ...]:
    """The values with every Dask collection computed (a dask DataFrame → pandas, a dask
    array → numpy) and anything else unchanged: the estimators fit in memory."""
    return tuple(v.compute() if hasattr(v, "__dask_graph__") else v for v in values)


def check_matrix(
    X: ArrayLike | sp.spmatrix, name: str = "X", *, accept_sparse: bool = False
) -> NDArray[np.float64] | sp.csr_matrix:
    """A non-empty 2-D float64 matrix with finite entries (C-contiguous, or CSR when sparse)."""
    out, values = _float_matrix(X, name, None if accept_sparse else "this model", contiguous=True)
    if out.ndim != 2:
        raise DataError(f"{name} must be a 2-D array, got shape {out.shape}.")
    if out.shape[0] == 0 or out.shape[1] == 0:
        raise DataError(f"{name} is empty (shape {out.shape}).")
    _check_finite(values, name)
    return out


def _float_matrix(
    X: ArrayLike | sp.spmatrix, name: str, dense_only: str | None, *, contiguous: bool
) -> tuple[Any, NDArray[np.float64]]:
    """(X as float64 — CSR when sparse —, its stored values); a sparse X is refused with
    ``dense_only`` (who needs dense data), and entries that are not numbers are a DataError."""
    if issparse(X):
        if dense_only is not None:
            raise DataError(f"{name} is a sparse matrix; {dense_only} needs dense data.")
        out = sp.csr_matrix(X, dtype=np.float64)
        return out, out.data
    try:
        out = (np.ascontiguousarray if contiguous else np.asarray)(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{name} must be numeric; it could not be read as numbers ({exc})."
        ) from None
    return out, out


def check_predict_input(
    X: ArrayLike | sp.spmatrix,
    n_features: int,
    owner: str,
    *,
    accept_sparse: bool = False,
    name: str = "X",
) -> NDArray[np.float64] | sp.csr_matrix:
    """The rows to score with a model fitted on ``n_features`` columns: a 2-D float64 matrix
    (CSR when sparse and ``accept_sparse``) with that many columns and finite entries.

    Every ``predict``/``decision_function`` calls this, so that NaN/inf or a wrong width is a
    :class:`DataError` naming the problem in scikit-learn's words ("X has 2 features, but
    SVMSolution is expecting 3 features as input."), never NaN scores, labels of garbage, or a
    matmul error from numpy. Zero rows are allowed (the answer is empty).
    """
    out, values = _float_matrix(X, name, None if accept_sparse else owner, contiguous=False)
    if out.ndim != 2:
        hint = (
            " (one row: X.reshape(1, -1); one feature: X.reshape(-1, 1)). Reshape your data"
            if out.ndim == 1
            else ""
        )
        raise DataError(f"{name} must be a 2-D array, got shape {out.shape}{hint}.")
    if out.shape[1] != n_features:  # scikit-learn's words
        raise DataError(
            f"{name} has {out.shape[1]} features, but {owner} is expecting {n_features} "
            "features as input."
        )
    _check_finite(values, name)
    return out


def check_vector(y: ArrayLike, n: int, name: str = "y") -> NDArray[np.float64]:
    """A 1-D float64 vector of length n with finite entries."""
    try:
        out = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{name} must be numeric; it could not be read as numbers ({exc})."
        ) from None
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    if out.ndim != 1:
        raise DataError(f"{name} must be a 1-D array, got shape {out.shape}.")
    if out.shape[0] != n:
        raise DataError(f"X has {n} rows but {name} has {out.shape[0]} entries.")
    _check_finite(out, name)
    return np.ascontiguousarray(out)


def check_feature_names(feature_names: Sequence[str] | None, n_columns: int) -> tuple[str, ...]:
    """The given names (one per column of X), or x1 … xm when None."""
    if feature_names is None:
        return tuple(f"x{j + 1}" for j in range(n_columns))
    names = tuple(feature_names)
    if len(names) != n_columns:
        raise DataError(f"X has {n_columns} columns but {len(names)} feature names.")
    return names


#: the largest magnitude a data value may have: every model squares values and sums products
#: of them (Gram entries, ‖x‖², XᵀX, kernel powers), which must stay finite in float64
MAX_MAGNITUDE = 1e100


def _check_finite(values: NDArray[np.float64], name: str) -> None:
    """Finite, and within ±MAX_MAGNITUDE (a value beyond is refused, never a NaN answer)."""
    if bool(np.all(np.abs(values) <= MAX_MAGNITUDE)):  # one pass: NaN and ±inf fail it too
        return
    if not np.all(np.isfinite(values)):
        bad = np.argwhere(~np.isfinite(values))
        first = tuple(int(i) for i in bad[0]) if bad.size else ()
        kind = "NaN" if np.isnan(values).any() else "inf"
        raise DataError(
            f"{name} contains {kind} values ({len(bad)} non-finite entries, first at index "
            f"{_index(first)})."
        )
    large = np.abs(values) > MAX_MAGNITUDE
    if large.any():
        bad = np.argwhere(large)
        first = tuple(int(i) for i in bad[0])
        raise DataError(
            f"{name} has {len(bad)} values beyond ±{MAX_MAGNITUDE:g} (first at index "
            f"{_index(first)}: {values[first]:g}): their squares and products overflow float64. "
            "Rescale the column(s), e.g. to standard units."
        )


def _index(first: tuple[int, ...]) -> tuple[int, ...] | int:
    return first if len(first) != 1 else first[0]


def check_row_weights(weight: ArrayLike | None, n: int) -> NDArray[np.float64] | None:
    """Row weights w (n,), finite and > 0, or None (every row counts once)."""
    if weight is None:
        return None
    w = check_vector(weight, n, "weight")
    if not np.all(w > 0):
        raise DataError(
            f"Row weights must be > 0 (found {int(np.sum(w <= 0))} ≤ 0): a row of weight 0 "
            "does not count, drop it."
        )
    return w
