"""Plain JSON values from what results, parameters and solvers hold (one coercion for all).

Strict JSON has no NaN or ±inf: they become None (``null``). numpy scalars and arrays become
Python numbers and lists; an object with ``to_dict`` (a :class:`~aidopt.numerics.kernels.Kernel`, a
certificate) becomes its dict; anything else its ``repr``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

__all__ = ["json_line", "plain"]


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
