"""Synthetic LAD instances in the style of the paper's Sets A–C (§4: n × m, random data).

y_i = β₀ + x_i β + ε_i with x_ij ~ N(0, 1), β_j ~ U(−1, 1), β₀ ~ U(−1, 1) and ε Laplace(0, 1)
(the LAD model's natural noise), or Gaussian / Student-t(2) noise for heavier or lighter tails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from aidopt.common.options import Option
from aidopt.common.validation import check_choice, check_int
from aidopt.data.generate import Generator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GENERATOR", "lad_frame", "make_lad"]

NOISES = ("laplace", "normal", "t")


def make_lad(
    n: int, m: int, *, seed: int | None = 0, noise: str = "laplace"
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    """(X, y, β, β₀) for an n × m instance (local RNG from ``seed``)."""
    check_int(n, "n", "make_lad", low=1)
    check_int(m, "m", "make_lad", low=1)
    check_choice(noise, "noise", "make_lad", NOISES)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    beta = rng.uniform(-1.0, 1.0, size=m)
    intercept = float(rng.uniform(-1.0, 1.0))
    eps = {
        "laplace": lambda: rng.laplace(size=n),
        "normal": lambda: rng.standard_normal(n),
        "t": lambda: rng.standard_t(2.0, size=n),
    }[noise]()
    y = intercept + X @ beta + eps
    return X, y, beta, intercept


def lad_frame(n: int, m: int, *, seed: int = 0, noise: str = "laplace") -> pd.DataFrame:
    """Columns x1..xm and the target y."""
    X, y, _, _ = make_lad(n, m, seed=seed, noise=noise)
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(m)])
    frame["y"] = y
    return frame


#: ``aidopt generate lad``
GENERATOR = Generator(
    make=lad_frame,
    options=(
        Option("n", help="number of rows", kind=int, low=1),
        Option("m", help="number of feature columns", kind=int, low=1),
        Option("noise", "laplace", "noise distribution", kind=str, choices=NOISES),
    ),
    help="LAD regression data: y = β₀ + xβ + ε, ε Laplace (or normal, t(2))",
)
