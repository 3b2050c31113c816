"""Synthetic data for the one-class models (``aidopt generate ocsvm|svdd``): two Gaussian blobs
away from the origin, where a one-class domain is not trivially the origin's half-space."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from aidopt.common.options import Option
from aidopt.data.generate import Generator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BLOBS", "blobs"]


def blobs(n: int, m: int, *, seed: int = 0) -> pd.DataFrame:
    """Two Gaussian blobs around +2·1 and +3·1 (a domain away from the origin)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    centre = np.where(rng.random(n) < 0.5, 2.0, 3.0)[:, None]
    X = centre + rng.standard_normal((n, m))
    return pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(m)])


#: ``aidopt generate ocsvm|svdd``
BLOBS = Generator(
    make=blobs,
    options=(
        Option("n", kind=int, low=1, help="rows"),
        Option("m", kind=int, low=1, help="features"),
    ),
    help="two Gaussian blobs away from the origin",
)
