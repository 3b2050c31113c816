"""PU data: the paper's F-measures, its split protocol, the generator, and the UCI files (read in
place from ../shared/data/pu-uci; skipped when that folder is absent)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from aidopt.data.pu import (
    GENERATOR,
    PAPER_PRIORS,
    UCI_SETS,
    f1_majority,
    f1_positive,
    load_uci,
    make_pu,
    paper_prior,
    paper_split,
)
from aidopt.exceptions import DataError

UCI = Path(__file__).resolve().parents[2] / "shared" / "data" / "pu-uci"
needs_uci = pytest.mark.skipif(not UCI.is_dir(), reason=f"{UCI} not present")

# digest §4.2: N, d, π used, p labeled, n unlabeled, positives among the unlabeled
SIZES = {
    "australian": (690, 42, 0.56, 77, 613, 306),
    "clean1": (476, 166, 0.44, 41, 435, 166),
    "diabetes": (768, 8, 0.35, 53, 715, 215),
    "heart": (270, 9, 0.44, 23, 247, 97),
    "heart-statlog": (270, 13, 0.44, 23, 247, 97),
    "house": (232, 16, 0.47, 21, 211, 87),
    "house-votes": (435, 16, 0.61, 53, 382, 214),
    "ionosphere": (351, 33, 0.64, 44, 307, 181),
    "isolet": (600, 51, 0.5, 60, 540, 240),
    "krvskp": (3196, 36, 0.48, 306, 2890, 1221),
    "liverDisorders": (345, 6, 0.58, 40, 305, 160),
    "spectf": (349, 44, 0.73, 50, 299, 204),
}


def test_f_measures_reproduce_the_papers_constant_classifier_entries() -> None:
    """Heart at λ = 0.1 (75.6): all negative, scored on class 0, the majority (150 vs 97)."""
    y = np.r_[np.ones(97), np.zeros(150)].astype(int)
    all_negative = -np.ones(247)
    assert 100 * f1_majority(y, all_negative) == pytest.approx(75.57, abs=0.01)
    assert f1_positive(y, all_negative) == 0.0
    # Australian, Gaussian λ = 0.1: all positive, scored on class 0 (307 ≥ 306) → 0.0
    y = np.r_[np.ones(306), np.zeros(307)].astype(int)
    assert f1_majority(y, np.ones(613)) == 0.0
    assert f1_positive(y, np.ones(613)) == pytest.approx(2 * 306 / (2 * 306 + 307))


def test_f1_against_sklearn() -> None:
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    y, pred = rng.integers(0, 2, 200), rng.choice([-1, 1], 200)
    assert f1_positive(y, pred) == pytest.approx(f1_score(y, pred > 0))
    majority = 0 if (y == 0).sum() >= (y == 1).sum() else 1
    assert f1_majority(y, pred) == pytest.approx(
        f1_score(y, (pred > 0).astype(int), pos_label=majority)
    )
    with pytest.raises(DataError, match="shape"):
        f1_positive(y, pred[:-1])


def test_paper_split_and_generator() -> None:
    y = np.r_[np.ones(383), np.zeros(307)].astype(int)
    prior = paper_prior(y)
    labeled = paper_split(y, prior, np.random.default_rng(1))
    assert prior == 0.56 and labeled.sum() == math.floor(0.2 * 0.56 * 690) == 77
    assert np.all(y[labeled] == 1)
    X, y, labeled, prior_u = make_pu(2000, 4, prior=0.4, seed=2)
    assert X.shape == (2000, 4) and labeled.sum() == int(0.2 * y.sum())
    assert np.all(y[labeled] == 1) and prior_u == pytest.approx(y[~labeled].mean())
    again = make_pu(2000, 4, prior=0.4, seed=2)
    np.testing.assert_array_equal(again[0], X)


def test_generator_is_make_pu_as_a_table() -> None:
    """``aidopt generate pu``: today's flags, columns x1..xm and the target s of make_pu."""
    flags = [o.cli_flag for o in GENERATOR.options]
    assert flags == ["--n", "--m", "--prior", "--labeled-fraction", "--separation"]
    frame = GENERATOR.make(seed=3, n=500, m=2, prior=0.3, labeled_fraction=0.5, separation=1.0)
    X, _, labeled, _ = make_pu(500, 2, prior=0.3, labeled_fraction=0.5, separation=1.0, seed=3)
    assert list(frame.columns) == ["x1", "x2", "s"]
    np.testing.assert_array_equal(frame[["x1", "x2"]].to_numpy(), X)
    np.testing.assert_array_equal(frame["s"].to_numpy(), labeled.astype(int))


@needs_uci
@pytest.mark.parametrize("name", UCI_SETS)
def test_uci_files_and_protocol(name: str) -> None:
    X, y = load_uci(name, UCI)
    N, d, prior, p, n, pos_u = SIZES[name]
    assert X.shape == (N, d) and set(np.unique(y)) == {0, 1}
    assert PAPER_PRIORS[name] == prior
    assert paper_prior(y) == prior or name == "clean1"  # 207/476 = 0.435, the code used 0.44
    labeled = paper_split(y, prior, np.random.default_rng(0))
    assert labeled.sum() == p and (~labeled).sum() == n and y[~labeled].sum() == pos_u


def test_missing_file_is_a_named_error(tmp_path) -> None:
    with pytest.raises(DataError, match="PU data file not found"):
        load_uci("heart", tmp_path)
    with pytest.raises(DataError, match="Unknown PU data set"):
        load_uci("mnist", tmp_path)
