"""(12) at fixed labels and the local search on the original data (``fit_at_labels`` and
``local_search`` of aidopt/bench/s3vm_objective.py, ``S3VMModel.objective``), and the summary of
``aidopt bench s3vm --part objective``."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from test_s3vm import brute_force, make_data

from aidopt.bench.s3vm_objective import fit_at_labels, local_search, summary_markdown
from aidopt.exceptions import DataError
from aidopt.models.s3vm import S3VMData, S3VMModel


@pytest.mark.parametrize("balance", ["constraint", "cost", None])
@pytest.mark.parametrize("seed", [0, 1])
def test_best_fit_over_all_labellings_is_the_brute_force_optimum(seed, balance):
    """Lemma 1: E* = min over labellings d of the SVM at d, and (12) at that SVM's hyperplane
    lies between E* and the SVM's value, so min_d (12)(fit_at_labels(d)) = E*."""
    X, y = make_data(seed, n_l=5, n_u=7)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=5.0, M_u=1.0, balance=balance)
    values = []
    for d in itertools.product([-1.0, 1.0], repeat=7):
        w, b = fit_at_labels(model, data, np.array(d))
        values.append(model.objective(data, w, b))
        if balance == "constraint":  # b' = ȳ_l: the mean score of I_u is the mean label
            f_u = X[np.isnan(y)] @ w + b
            assert f_u.mean() == pytest.approx(np.nanmean(y), abs=1e-9)
    assert min(values) == pytest.approx(brute_force(X, y, 5.0, 1.0, balance), rel=1e-7)


@pytest.mark.parametrize("balance", ["constraint", "cost"])
def test_local_search_never_raises_the_objective_and_ends_at_its_own_labels(balance):
    X, y = make_data(3, n_l=6, n_u=40, m=3)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=5.0, M_u=1.0, balance=balance)
    unlabeled = np.isnan(y)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w, b = fit_at_labels(model, data, rng.choice([-1.0, 1.0], unlabeled.sum()))
        before = model.objective(data, w, b)
        w2, b2, rounds = local_search(model, data, w, b)
        assert rounds >= 1
        assert model.objective(data, w2, b2) <= before + 1e-9 * max(1.0, before)
        labels = np.where(X[unlabeled] @ w2 + b2 >= 0, 1.0, -1.0)  # a fixed point of Lemma 1
        w3, b3 = fit_at_labels(model, data, labels)
        assert model.objective(data, w3, b3) == pytest.approx(model.objective(data, w2, b2))


def test_labels_of_the_wrong_length_or_values_are_named():
    X, y = make_data(0)
    data = S3VMData.from_arrays(X, y)
    with pytest.raises(DataError, match="±1 for each of the 8 unlabeled rows"):
        fit_at_labels(S3VMModel(), data, np.ones(7))
    with pytest.raises(DataError, match="±1"):
        fit_at_labels(S3VMModel(), data, np.zeros(8))


def test_summary_counts_splits_where_a_worse_labelling_has_a_lower_objective():
    runs = pd.DataFrame(
        {
            "set": ["coil2"] * 3,
            "labeled": [10] * 3,
            "split": [0, 1, 2],
            "truth_E": [1.0, 1.0, 1.0],
            "truth_rate": [1.0, 1.0, 1.0],
            "truth_local_E": [0.5, 2.0, 0.9],
            "truth_local_rate": [0.6, 0.9, 1.0],
            "aid_E": [0.7, np.nan, 3.0],
            "aid_rate": [0.5, np.nan, 0.5],
            "aid_local_E": [0.45, np.nan, 2.0],
            "aid_local_rate": [0.55, np.nan, 0.5],
        }
    )
    text = summary_markdown(runs)
    row = text.splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["coil2", "10", "3"]
    assert cells[3] == "1 (100.0)"  # the truth-fitted hyperplane
    best = format((0.45 + 2.0 + 0.9) / 3, ".4g")  # per split: 0.45, 2.0 (no AID), 0.9
    assert cells[7] == f"{best} ({100 * (0.55 + 0.9 + 1.0) / 3:.1f})"
    assert cells[8:] == ["2/3", "1/3"]  # AID → local below truth → local, lower rate: split 0


@pytest.mark.skipif(shutil.which("aidopt") is None, reason="console script not installed")
def test_the_objective_part_is_reachable_from_the_cli():
    done = subprocess.run(
        ["aidopt", "bench", "s3vm", "--part", "objective", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--solver" in done.stdout and "--max-iter" in done.stdout
