"""SciPy on first use, not on import.

Importing any part of SciPy ≥ 1.17 costs 0.25 s (its array-API layer clones NumPy's namespace,
which loads ``numpy.testing``, ``numpy.f2py`` and ``numpy.ma``); ``scipy.linalg`` 0.45 s. A
dense problem that never meets a sparse matrix should not pay that: the command line on a
10-row file has 0.5 s in all (issue 18). ``from aidopt.common.lazy import sparse as sp`` gives a
stand-in for ``scipy.sparse`` that imports it on the first attribute read; :func:`issparse` answers
without importing SciPy, since no SciPy sparse object can exist before ``scipy.sparse`` has run.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = ["DeferredModule", "issparse", "sparse"]


class DeferredModule:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)

    def __reduce__(self) -> tuple[type[DeferredModule], tuple[str]]:  # copies and pickles
        return DeferredModule, (self._name,)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<deferred module {self._name!r} ({state})>"


def issparse(x: Any) -> bool:
    """``scipy.sparse.issparse(x)``, without importing SciPy when it has not run yet."""
    if "scipy.sparse._base" not in sys.modules:  # where every sparse class derives from
        return False
    return bool(sys.modules["scipy.sparse"].issparse(x))


def dense(x: Any) -> Any:
    """``x`` as a numpy array (a SciPy sparse matrix densified)."""
    return np.asarray(x.toarray() if issparse(x) else x)


if TYPE_CHECKING:
    import scipy.sparse as sparse
else:
    sparse = DeferredModule("scipy.sparse")
