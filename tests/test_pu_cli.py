"""`aidopt solve pu` / `aidopt generate pu`: JSON fields, file-order predictions, named errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aidopt import AIDSolver
from aidopt.cli import main
from aidopt.kernels import Kernel
from aidopt.models.pu import PUData, PUModel


@pytest.fixture
def pu_csv(tmp_path):
    path = tmp_path / "pu.csv"
    argv = ["generate", "pu", "--n", "600", "--m", "3", "--prior", "0.4", "--seed", "1"]
    assert main([*argv, "--out", str(path)]) == 0
    return path


def run_json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


@pytest.mark.parametrize("full", [False, True])
def test_solve_pu_linear_json(pu_csv, capsys, full: bool) -> None:
    frame = pd.read_csv(pu_csv)
    argv = ["solve", "pu", "--data", str(pu_csv), "--target", "s", "--prior", "0.35", "--json"]
    payload = run_json(capsys, [*argv, "--tol", "0", *(["--full"] if full else [])])
    assert payload["solver"] == "usmo" and payload["status"] == "optimal"
    solution = payload["solution"]
    assert set(solution["w"]) == {"x1", "x2", "x3"}
    w = np.array([solution["w"][c] for c in ("x1", "x2", "x3")])
    f = frame[["x1", "x2", "x3"]].to_numpy() @ w + solution["b"]
    assert solution["predictions"] == np.where(f >= 0, 1, -1).tolist()  # file order, every row
    data = PUData.from_arrays(frame[["x1", "x2", "x3"]].to_numpy(), frame["s"].to_numpy())
    reference = AIDSolver(PUModel(prior=0.35), solver="usmo").solve_full(data)
    assert payload["objective"] == pytest.approx(reference.objective, rel=1e-6)


def test_solve_pu_rbf_on_highs(pu_csv, capsys) -> None:
    argv = ["solve", "pu", "--data", str(pu_csv), "--target", "s", "--prior", "0.35"]
    argv += ["--kernel", "rbf", "--gamma", "0.5", "--lambda", "0.05", "--json", "--tol", "0"]
    payload = run_json(capsys, argv)
    assert "w" not in payload["solution"] and len(payload["solution"]["predictions"]) == 600
    frame = pd.read_csv(pu_csv)
    data = PUData.from_arrays(frame.drop(columns="s").to_numpy(), frame["s"].to_numpy())
    model = PUModel(prior=0.35, lam=0.05, kernel=Kernel("rbf", gamma=0.5))
    reference = AIDSolver(model, solver="usmo").solve_full(data)
    assert payload["objective"] == pytest.approx(reference.objective, rel=1e-6)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--prior", "1.2"], "The 'prior' parameter of PUModel must be a float in the range"),
        (["--prior", "0"], "The 'prior' parameter of PUModel"),
        (["--prior", "0.4", "--lambda", "0"], "The 'lam' parameter of PUModel"),
        (["--prior", "0.4", "--kernel", "rbf", "--gamma", "-1"], "The 'gamma' parameter"),
    ],
)
def test_bad_parameters_exit_2(pu_csv, capsys, extra, message) -> None:
    code = main(["solve", "pu", "--data", str(pu_csv), "--target", "s", *extra])
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([0, 0, 0, 0], "No labeled positives"),
        ([1, 1, 1, 1], "No unlabeled rows"),
        ([1, 2, 0, 0], "must be 1 (labeled positive) or 0 (unlabeled)"),
    ],
)
def test_bad_targets_exit_2(tmp_path, capsys, values, message) -> None:
    path = tmp_path / "bad.csv"
    pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.4], "s": values}).to_csv(path, index=False)
    code = main(["solve", "pu", "--data", str(path), "--target", "s", "--prior", "0.4"])
    assert code == 2 and message in capsys.readouterr().err
