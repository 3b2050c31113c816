"""The clustering benchmark sets of the support-vector-clustering paper (Tables 2–8).

Eleven of the paper's fifteen sets (Gagolewski's clustering benchmark suite v1; the shared data
README says which four are missing), read in place from ``../shared/data/svc-shapes`` beside the
checkout (or ``$AIDOPT_SVC_SHAPES``), never copied: ``NAME.data.gz`` (one point per row) and
``NAME.labels0.gz`` (one class per row).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from aidopt.exceptions import DataError

__all__ = ["PAPER_NAMES", "SETS", "load_shape", "shapes_root"]

#: file name → the paper's name, in the order of its tables
PAPER_NAMES = {
    "aggregation": "Aggregation",
    "wdbc": "Breast Cancer",
    "compound": "Compound",
    "flame": "Flame",
    "glass": "Glass",
    "iris": "Iris",
    "jain": "Jain",
    "pathbased": "Pathbased",
    "r15": "R15",
    "spiral": "Spiral",
    "d31": "D31",
}
SETS = tuple(PAPER_NAMES)


def shapes_root() -> Path:
    """``$AIDOPT_SVC_SHAPES``, else ``shared/data/svc-shapes`` beside the checkout."""
    env = os.environ.get("AIDOPT_SVC_SHAPES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "svc-shapes"


def load_shape(name: str, root: str | Path | None = None) -> tuple[NDArray[np.float64], NDArray]:
    """(X, classes) of one set."""
    if name not in PAPER_NAMES:
        raise DataError(f"Unknown clustering set {name!r}; known: {', '.join(SETS)}.")
    folder = Path(root if root is not None else shapes_root())
    data, labels = folder / f"{name}.data.gz", folder / f"{name}.labels0.gz"
    for path in (data, labels):
        if not path.is_file():
            raise DataError(f"{path} not found (set $AIDOPT_SVC_SHAPES to the svc-shapes folder).")
    X = np.loadtxt(data, ndmin=2)
    y = np.loadtxt(labels, dtype=np.int64, ndmin=1)
    if X.shape[0] != y.shape[0]:
        raise DataError(f"{name}: {X.shape[0]} rows but {y.shape[0]} labels.")
    return X, y
