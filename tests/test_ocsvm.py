"""The one-file model (models/ocsvm.py): certified against an independent full solve on every
route, and reached by `aidopt solve/generate/bench/solvers/verify` with no other file edited."""

from __future__ import annotations

import importlib.util
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from aidopt import AIDSolver, AIDStatus
from aidopt.cli import main
from aidopt.data.containers import FeatureData
from aidopt.data.one_class import blobs
from aidopt.exceptions import InvalidParameterError
from aidopt.models.ocsvm import OneClassSVMModel
from aidopt.verify import verify_result

cp = pytest.importorskip("cvxpy")
HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
ROUTES = [("highs", "matrix"), ("highs", "pyomo")]
ROUTES += [("gurobi", "matrix"), ("gurobi", "pyomo")] if HAS_GUROBI else []


def full_solve(X: np.ndarray, C: float) -> float:
    """(1) on all rows by CVXPY/Clarabel, evaluated at the returned w (an upper bound on J*)."""
    w = cp.Variable(X.shape[1])
    hinge = cp.sum(cp.pos(1 - X @ w))
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / X.shape[0] * hinge)).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    v = w.value
    return 0.5 * float(v @ v) + C / X.shape[0] * float(np.maximum(0, 1 - X @ v).sum())


@pytest.mark.parametrize(("solver", "interface"), ROUTES)
@pytest.mark.parametrize(("n", "m", "C", "seed"), [(2000, 3, 1.0, 0), (1500, 5, 20.0, 1)])
def test_certified_optimum_equals_the_full_solve(solver, interface, n, m, C, seed):
    data = FeatureData.from_frame(blobs(n, m, seed=seed))
    result = AIDSolver(OneClassSVMModel(C=C), solver=solver, interface=interface, tol=0.0).solve(
        data
    )
    reference = full_solve(data.X, C)
    assert result.status is AIDStatus.OPTIMAL and result.iterations > 1
    assert result.final_rate < 0.5
    assert result.objective == pytest.approx(reference, rel=1e-7)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(lower <= reference * (1 + 1e-9))
    assert np.all(np.diff(lower) >= 0)


def test_the_command_line_reaches_the_model(tmp_path, capsys):
    path = tmp_path / "blobs.csv"
    assert (
        main(["generate", "ocsvm", "--n", "1200", "--m", "3", "--seed", "2", "--out", str(path)])
        == 0
    )
    capsys.readouterr()
    assert main(["solve", "ocsvm", "--data", str(path), "--C", "2.0", "--tol", "0", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["model"] == "ocsvm" and payload["status"] == "optimal"
    assert set(payload["solution"]["w"]) == {"x1", "x2", "x3"}
    result = tmp_path / "result.json"
    result.write_text(json.dumps(payload))
    assert main(["verify", str(result), "--data", str(path)]) == 0
    capsys.readouterr()
    assert main(["solvers"]) == 0
    assert "model ocsvm" in capsys.readouterr().out


def test_the_benchmark_runs_from_the_models_spec(tmp_path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "ocsvm", "--sizes", "1000x3", "--methods", "aid-highs,full-highs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--time-limit", "60", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "ocsvm_runs.csv").set_index("method")
    assert runs.loc["full-highs", "status"] == "optimal"
    assert runs.loc["aid-highs", "status"] in ("gap", "optimal")
    assert runs.loc["aid-highs", "gap"] <= 1e-4 and abs(runs.loc["aid-highs", "delta"]) <= 1e-4
    assert (out / "ocsvm_summary.md").exists() and (out / "ocsvm_times.png").exists()


def test_verify_accepts_and_rejects(tmp_path):
    frame = blobs(800, 2, seed=3)
    data = FeatureData.from_frame(frame)
    result = AIDSolver(OneClassSVMModel(), tol=0.0).solve(data)
    payload = json.loads(json.dumps(result.to_dict()))
    assert verify_result(payload, frame).accepted
    payload["certificate"]["lower_bound"] += 1e-3
    assert not verify_result(payload, frame).accepted


def test_bad_penalty_is_named():
    data = FeatureData.from_frame(blobs(100, 2))
    with pytest.raises(InvalidParameterError, match="'C' parameter of OneClassSVMModel"):
        AIDSolver(OneClassSVMModel(C=0.0)).solve(data)


def test_the_generated_estimator_fits_it():
    from sklearn.base import clone

    from aidopt.estimators import estimator_for

    X = blobs(800, 3, seed=4).to_numpy()
    Estimator = estimator_for("ocsvm")
    est = clone(Estimator(C=2.0, tol=0.0))
    assert est.get_params()["C"] == 2.0 and est.fit(X) is est
    direct = AIDSolver(OneClassSVMModel(C=2.0), tol=0.0).solve(FeatureData.from_arrays(X))
    assert est.status_ == "optimal" and est.objective_ == pytest.approx(direct.objective, rel=1e-9)
