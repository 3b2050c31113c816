"""`aidopt solve pu` / `aidopt generate pu`: JSON fields, file-order predictions, named errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt import AIDSolver
from aidopt.cli import main
from aidopt.models.pu import PUData, PUModel
from aidopt.numerics.kernels import Kernel

SMALL = Path(__file__).resolve().parents[1] / "instances" / "pu_small.csv"
HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None


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
    argv += ["--solver", "highs"]
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


def clarabel_primal_linear(X, labeled, prior, lam) -> float:
    """min (5), linear kernel, w explicit, on Clarabel (an independent solver)."""
    cp = pytest.importorskip("cvxpy")
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    c1, c2 = prior / (2 * lam * P.size), 1 / (2 * lam * U.size)
    w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(U.size)
    f_u = X[U] @ w + b
    objective = 0.5 * cp.sum_squares(w) - c1 * cp.sum(X[P] @ w + b) + c2 * cp.sum(xi)
    problem = cp.Problem(cp.Minimize(objective), [xi >= 0, xi >= f_u, xi >= 0.5 + 0.5 * f_u])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert problem.status == "optimal"
    return float(problem.value)


def clarabel_dual_rbf(X, labeled, prior, lam, gamma) -> float:
    """min (5) = −(min (6) + ½ c1² 1ᵀK_PP1), (6) with the dense Gram matrix, on Clarabel."""
    cp = pytest.importorskip("cvxpy")
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    c1, c2 = prior / (2 * lam * P.size), 1 / (2 * lam * U.size)
    K = Kernel("rbf", gamma=gamma)(X, X)
    s, d = cp.Variable(U.size), cp.Variable(U.size)
    dual = 0.5 * cp.quad_form(s, cp.psd_wrap(K[np.ix_(U, U)])) - c1 * K[np.ix_(U, P)].sum(1) @ s
    constraints = [cp.sum(s) == prior / (2 * lam), s + d / 2 <= c2, s - d / 2 >= 0, d >= 0]
    problem = cp.Problem(cp.Minimize(dual - 0.5 * cp.sum(d)), [*constraints, d <= c2])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert problem.status == "optimal"
    return -(float(problem.value) + 0.5 * c1**2 * K[np.ix_(P, P)].sum())


SOLVERS = [
    ("usmo", []),
    ("usmo", ["--full"]),
    ("highs", []),
    ("highs", ["--full"]),
    pytest.param(
        "gurobi", [], marks=pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
    ),
]


@pytest.mark.parametrize(("solver", "extra"), SOLVERS)
def test_instance_pu_small_linear(capsys, solver: str, extra: list[str]) -> None:
    """instances/pu_small.csv: objective = (5) at the returned (w, b) = Clarabel's optimum of
    (5); predictions = sign(w·x + b) of every row, in file order."""
    frame = pd.read_csv(SMALL)
    X, s = frame[["x1", "x2", "x3"]].to_numpy(), frame["s"].to_numpy()
    argv = ["solve", "pu", "--data", str(SMALL), "--target", "s", "--prior", "0.35"]
    payload = run_json(capsys, [*argv, "--solver", solver, "--tol", "0", "--json", *extra])
    assert payload["status"] == "optimal" and payload["n"] == 200
    solution = payload["solution"]
    w = np.array([solution["w"][c] for c in ("x1", "x2", "x3")])
    f = X @ w + solution["b"]
    assert solution["predictions"] == np.where(f >= 0, 1, -1).tolist()
    labeled = s == 1
    c1, c2 = 0.35 / (2 * 0.01 * labeled.sum()), 1 / (2 * 0.01 * (~labeled).sum())
    fu = f[~labeled]
    primal = (
        0.5 * w @ w
        - c1 * f[labeled].sum()
        + c2 * np.maximum.reduce([fu, np.zeros_like(fu), 0.5 + fu / 2]).sum()
    )
    assert payload["objective"] == pytest.approx(primal, rel=1e-9)
    assert payload["objective"] == pytest.approx(
        clarabel_primal_linear(X, labeled, 0.35, 0.01), rel=1e-6
    )


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
def test_instance_pu_small_full_gurobi(capsys, tmp_path) -> None:
    """The full linear QP (5), two slacks per unlabeled row, fits the pip licence (200 variables
    with quadratic terms) on 90 rows in both the Pyomo and the matrix form; on all 200 rows
    (372 variables) both are refused with a named error, exit 2."""
    frame = pd.read_csv(SMALL)
    head = tmp_path / "pu_head.csv"
    frame.head(90).to_csv(head, index=False)
    argv = ["solve", "pu", "--target", "s", "--prior", "0.35", "--full", "--solver", "gurobi"]
    argv += ["--json"]
    reference = clarabel_primal_linear(
        frame[["x1", "x2", "x3"]].to_numpy()[:90], frame["s"].to_numpy()[:90] == 1, 0.35, 0.01
    )
    for interface in ("pyomo", "matrix"):
        payload = run_json(capsys, [*argv, "--data", str(head), "--interface", interface])
        assert payload["status"] == "optimal"
        assert payload["objective"] == pytest.approx(reference, rel=1e-6)
        assert main([*argv, "--data", str(SMALL), "--interface", interface]) == 2
        refusal = "size-limited licence refused a model with 372 variables"
        assert refusal in capsys.readouterr().err


@pytest.mark.parametrize(("solver", "extra"), SOLVERS)
def test_instance_pu_small_rbf(capsys, solver: str, extra: list[str]) -> None:
    frame = pd.read_csv(SMALL)
    X, labeled = frame[["x1", "x2", "x3"]].to_numpy(), frame["s"].to_numpy() == 1
    argv = ["solve", "pu", "--data", str(SMALL), "--target", "s", "--prior", "0.35"]
    argv += ["--kernel", "rbf", "--gamma", "0.5", "--solver", solver, "--tol", "0", "--json"]
    payload = run_json(capsys, [*argv, *extra])
    assert payload["status"] == "optimal"
    assert "w" not in payload["solution"] and len(payload["solution"]["predictions"]) == 200
    reference = clarabel_dual_rbf(X, labeled, 0.35, 0.01, 0.5)
    assert payload["objective"] == pytest.approx(reference, rel=1e-6)
    # file order: the predictions are those of the full USMO solution, row by row
    model = PUModel(prior=0.35, lam=0.01, kernel=Kernel("rbf", gamma=0.5))
    data = PUData.from_arrays(X, labeled)
    full = AIDSolver(model, solver="usmo").solve_full(data)
    f = model.decision_function(data, full.solution)
    sure = np.abs(f) > 1e-6
    expected = np.where(f >= 0, 1, -1)
    assert np.array_equal(np.asarray(payload["solution"]["predictions"])[sure], expected[sure])
