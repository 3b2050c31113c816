"""Plain JSON values from what results, parameters and solvers hold (one coercion for all).

Strict JSON has no NaN or ±inf: they become None (``null``). numpy scalars and arrays become
Python numbers and lists; an object with ``to_dict`` (a :class:`~aidopt.numerics.kernels.Kernel`, a
certificate) becomes its dict; anything else its ``repr``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.exceptions import DataError

__all__ = ["by_name", "from_names", "json_line", "plain"]


def plain(value: Any) -> Any:
    """``value`` as plain JSON values, recursively (NaN/±inf as None)."""
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    return repr(value)


def json_line(payload: dict[str, Any]) -> str:
    """One strict-JSON object on one line."""
    return json.dumps(plain(payload), allow_nan=False)


def by_name(names: Sequence[str], values: Any) -> dict[str, float]:
    """A vector of coefficients by column name (a result's ``w`` or ``coef``)."""
    return {name: float(v) for name, v in zip(names, values, strict=True)}


def from_names(given: Any, names: Sequence[str], what: str = "coefficient") -> NDArray[np.float64]:
    """The vector :func:`by_name` wrote, in the order of ``names``; a column it lacks (or a
    value that is not a number) is named in a DataError."""
    if not isinstance(given, dict):
        raise DataError(f"The solution's {what}s are not a mapping from column names.")
    missing = [name for name in names if name not in given]
    if missing:
        raise DataError(f"The solution has no {what} for the column(s) {missing}.")
    try:
        return np.array([float(given[name]) for name in names])
    except (TypeError, ValueError) as error:
        raise DataError(f"The solution's {what}s must be numbers ({error}).") from None
