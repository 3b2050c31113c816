"""Synthetic SVM instances shaped like the paper's Sets 1 and 2 (§4: n × m, two classes).

Set 1 (vs libsvm): n ∈ {3, 5, 10, 15}·10⁴, m ∈ {10, ..., 90}; Set 2 (vs liblinear):
n ∈ {2, ..., 8}·10⁵. The paper samples its instances from a private IBM set and rcv1, which are
not available; these are generated instead, with two *overlapping* classes:

    y_i = ±1 with P(+1) = ``positive_fraction``,
    z_i ~ N(y_i (δ/2) u, I_m)    (u a random unit vector, δ = ``separation`` in σ units),
    x_ij = s_j z_ij + t_j    (column scales s_j log-uniform on [0.5, 2], shifts t_j ~ N(0, 1)).

The default δ = 2 puts the Bayes error at Φ(−1) ≈ 16% (training accuracy ≈ 84%) and, at
M = 0.1, libsvm keeps ≈ 39% of the entries as support vectors (measured at 30,000 × 10; 99.9% of
them at the bound M), as on the paper's data; libsvm then takes 10-20 s at 30,000 × 10, the
paper's 10 s order. Well separated classes (δ ≥ 4) make every solver fast and prove nothing;
δ = 1 (Bayes error 31%, 70% support vectors) is pathological: libsvm needs ~400 s at 50,000 × 50.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from aidopt.common.options import Option
from aidopt.common.validation import check_int, check_real
from aidopt.data.generate import Generator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GENERATOR", "make_svm", "svm_frame"]


def make_svm(
    n: int,
    m: int,
    *,
    seed: int | None = 0,
    separation: float = 2.0,
    positive_fraction: float = 0.5,
    part: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(X, y) with y ∈ {−1, +1} for an n × m instance (local RNG from ``seed``). ``part``: the
    rows of part ``part`` of a larger instance written in parts — u, s and t from ``seed``
    (shared by the parts), the rows from (``seed``, ``part``)."""
    check_int(n, "n", "make_svm", low=2)
    check_int(m, "m", "make_svm", low=1)
    check_real(separation, "separation", "make_svm", low=0.0, closed="left")
    check_real(positive_fraction, "positive_fraction", "make_svm", low=0.0, high=1.0)
    rng = np.random.default_rng(seed)
    if part is not None:
        shared = rng
        rng = np.random.default_rng([seed or 0, part])
    y = np.where(rng.random(n) < positive_fraction, 1.0, -1.0)
    y[:2] = (-1.0, 1.0)  # both classes are always present
    if part is None:
        shared = rng
    u = shared.standard_normal(m)
    u /= np.linalg.norm(u)
    z = rng.standard_normal((n, m)) + (0.5 * separation) * y[:, None] * u
    scale = np.exp(shared.uniform(np.log(0.5), np.log(2.0), size=m))
    shift = shared.standard_normal(m)
    return z * scale + shift, y


def svm_frame(
    n: int, m: int, *, seed: int = 0, separation: float = 2.0, positive_fraction: float = 0.5
) -> pd.DataFrame:
    """Columns x1..xm and the label column y (−1/+1)."""
    X, y = make_svm(n, m, seed=seed, separation=separation, positive_fraction=positive_fraction)
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(m)])
    frame["y"] = y.astype(np.int64)
    return frame


#: ``aidopt generate svm``
GENERATOR = Generator(
    make=svm_frame,
    options=(
        Option("n", help="number of rows", kind=int, low=2),
        Option("m", help="number of feature columns", kind=int, low=1),
        Option(
            "separation",
            2.0,
            "distance δ of the class means in σ units (δ = 2: Bayes error 0.16, about 0.39 "
            "of the entries support vectors)",
            low=0.0,
            closed="left",
        ),
        Option("positive_fraction", 0.5, "share of label +1", low=0.0, high=1.0),
    ),
    help="two-class data: two overlapping Gaussian classes, δ apart (the paper's Sets 1-2)",
)
