"""PU-learning data: the 12 UCI sets of the paper's Tables III/IV, its split protocol and
F-measures, and a synthetic generator for large n (``aidopt generate pu``).

The UCI files (``X``, ``labels`` in .mat files) are read in place from the shared data folder
``../shared/data/pu-uci`` beside the checkout (or ``$AIDOPT_PU_UCI``); they are never copied
into the repository. Protocol (digest §4.2, the released ``demo2.m``): π = the positive fraction
of the whole set rounded to two decimals; p = ⌊0.2·π·N⌋ positives drawn at random are labeled,
every other row is unlabeled; the F-measure is computed on the unlabeled rows (transductive).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.options import Option
from aidopt.common.validation import check_int, check_real
from aidopt.data.generate import Generator
from aidopt.exceptions import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "GENERATOR",
    "PAPER_PRIORS",
    "UCI_SETS",
    "f1_majority",
    "f1_positive",
    "load_uci",
    "make_pu",
    "paper_prior",
    "paper_split",
    "pu_frame",
    "uci_root",
]

#: the data sets of Tables III/IV, in the paper's order (file stems)
UCI_SETS = (
    "australian",
    "clean1",
    "diabetes",
    "heart",
    "heart-statlog",
    "house",
    "house-votes",
    "ionosphere",
    "isolet",
    "krvskp",
    "liverDisorders",
    "spectf",
)


#: π used by the released code (digest §4.2): the positive fraction rounded to two decimals, except
#: clean1 (207/476 = 0.435, used as 0.44; its p = ⌊0.2·0.44·476⌋ = 41 matches)
PAPER_PRIORS = {
    "australian": 0.56,
    "clean1": 0.44,
    "diabetes": 0.35,
    "heart": 0.44,
    "heart-statlog": 0.44,
    "house": 0.47,
    "house-votes": 0.61,
    "ionosphere": 0.64,
    "isolet": 0.5,
    "krvskp": 0.48,
    "liverDisorders": 0.58,
    "spectf": 0.73,
}


def uci_root() -> Path:
    """``$AIDOPT_PU_UCI``, else ``shared/data/pu-uci`` beside the checkout."""
    env = os.environ.get("AIDOPT_PU_UCI")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "pu-uci"


def load_uci(name: str, root: str | Path | None = None) -> tuple[NDArray[np.float64], NDArray]:
    """(X, y) of one UCI set, y ∈ {0, 1} with 1 the positive class."""
    from scipy.io import loadmat

    if name not in UCI_SETS:
        raise DataError(f"Unknown PU data set {name!r}; known: {', '.join(UCI_SETS)}.")
    path = Path(root if root is not None else uci_root()) / f"{name}.mat"
    if not path.is_file():
        raise DataError(
            f"PU data file not found: {path} (set AIDOPT_PU_UCI to the folder of the .mat files)."
        )
    mat = loadmat(path)
    X = np.ascontiguousarray(mat["X"], dtype=np.float64)
    y = np.asarray(mat["labels"]).ravel().astype(np.int64)
    return X, y


def paper_prior(y: ArrayLike) -> float:
    """π by the paper's rule: the positive fraction of the whole set, 2 decimals (for the UCI
    sets use :data:`PAPER_PRIORS`, the values the released code used)."""
    return round(float(np.mean(np.asarray(y) == 1)), 2)


def paper_split(y: ArrayLike, prior: float, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Labeled mask: p = ⌊0.2·π·N⌋ positives drawn at random (the rest is unlabeled)."""
    y = np.asarray(y)
    positives = np.flatnonzero(y == 1)
    p = math.floor(0.2 * prior * y.size)
    if not 1 <= p <= positives.size:
        raise DataError(f"The split rule gives p = {p} labeled positives of {positives.size}.")
    labeled = np.zeros(y.size, dtype=bool)
    labeled[rng.choice(positives, size=p, replace=False)] = True
    return labeled


def _f1(y_true: NDArray, y_pred: NDArray, cls: int) -> float:
    tp = int(np.sum((y_pred == cls) & (y_true == cls)))
    fp = int(np.sum((y_pred == cls) & (y_true != cls)))
    fn = int(np.sum((y_pred != cls) & (y_true == cls)))
    return 0.0 if tp == 0 else 2.0 * tp / (2.0 * tp + fp + fn)


def _as01(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[NDArray, NDArray]:
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if t.shape != p.shape:
        raise DataError(f"y_true has shape {t.shape} but y_pred has shape {p.shape}.")
    return (t == 1).astype(np.int64), (p > 0).astype(np.int64)


def f1_majority(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """The paper's F-measure (``performance.m``): F1 of the class that is the majority among the
    true labels (class 0 when #0 ≥ #1). Labels 0/1; predictions ±1 or 0/1."""
    t, p = _as01(y_true, y_pred)
    return _f1(t, p, 0 if np.sum(t == 0) >= np.sum(t == 1) else 1)


def f1_positive(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """The usual F1 of the positive class."""
    t, p = _as01(y_true, y_pred)
    return _f1(t, p, 1)


def make_pu(
    n: int,
    m: int,
    *,
    prior: float = 0.4,
    labeled_fraction: float = 0.2,
    separation: float = 2.0,
    seed: int | None = 0,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.bool_], float]:
    """(X, y, labeled, π_U): two Gaussian classes N(0, I) and N(μ, I), ‖μ‖ = separation
    (Bayes error Φ(−separation/2) ≈ 16% at 2: overlapping, many margin points), y ~ Bernoulli(π);
    ⌊labeled_fraction·#positives⌋ positives are labeled; π_U is the positive fraction of the
    unlabeled rows, the prior to give the model."""
    check_int(n, "n", "make_pu", low=2)
    check_int(m, "m", "make_pu", low=1)
    check_real(prior, "prior", "make_pu", low=0.0, high=1.0)
    check_real(labeled_fraction, "labeled_fraction", "make_pu", low=0.0, high=1.0)
    check_real(separation, "separation", "make_pu", low=0.0, closed="left")
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prior).astype(np.int64)
    X = rng.standard_normal((n, m))
    X[y == 1] += separation / math.sqrt(m)
    positives = np.flatnonzero(y == 1)
    labeled = np.zeros(n, dtype=bool)
    labeled[rng.choice(positives, size=int(labeled_fraction * positives.size), replace=False)] = (
        True
    )
    if not labeled.any() or labeled.all():
        raise DataError(f"n = {n} is too small: the draw has {labeled.sum()} labeled positives.")
    prior_u = float(y[~labeled].mean())
    return X, y, labeled, prior_u


def pu_frame(
    n: int,
    m: int,
    *,
    seed: int = 0,
    prior: float = 0.4,
    labeled_fraction: float = 0.2,
    separation: float = 2.0,
) -> pd.DataFrame:
    """Columns x1..xm and the target s (1 = labeled positive, 0 = unlabeled)."""
    X, _, labeled, _ = make_pu(
        n, m, prior=prior, labeled_fraction=labeled_fraction, separation=separation, seed=seed
    )
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(m)])
    frame["s"] = labeled.astype(np.int64)
    return frame


#: ``aidopt generate pu``
GENERATOR = Generator(
    make=pu_frame,
    options=(
        Option("n", help="number of rows", kind=int, low=2),
        Option("m", help="number of feature columns", kind=int, low=1),
        Option("prior", 0.4, "positive fraction π", low=0.0, high=1.0),
        Option("labeled_fraction", 0.2, "share of the positives labeled", low=0.0, high=1.0),
        Option("separation", 2.0, "distance of the class means", low=0.0, closed="left"),
    ),
    help="PU data: two Gaussian classes, a share of the positives labeled (target s)",
)
