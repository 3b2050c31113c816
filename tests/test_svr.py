"""ε-SVR (models/svr.py), the model written against the one-declaration contract: AID's answer
against an independent full solve (CVXPY/Clarabel), on nice and badly scaled data; the same
certificate in blocks and on Dask; the console script from solve to verify; the estimator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aidopt.core.driver import AIDSolver
from aidopt.data.containers import RegressionData
from aidopt.models.svr import SVRModel

ROOT = Path(__file__).resolve().parents[1]
CERTIFIED = ("optimal", "gap")


def _data(n: int = 2000, m: int = 4, scale: float = 1.0, seed: int = 7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    y = X @ rng.standard_normal(m) + 0.5 + 0.3 * rng.standard_normal(n)
    return X * scale, y * scale


def _full_optimum(X, y, C, epsilon) -> float:
    cp = pytest.importorskip("cvxpy")
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    loss = cp.sum(cp.pos(cp.abs(y - X @ w - b) - epsilon))
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * loss))
    problem.solve(solver=cp.CLARABEL)
    assert problem.status == "optimal"
    return float(problem.value)


@pytest.mark.parametrize(
    ("scale", "C", "epsilon"),
    [(1.0, 1.0, 0.2), (1.0, 10.0, 0.0), (1e-3, 1e3, 1e-4), (1e3, 1e-3, 200.0)],
)
def test_the_certified_answer_is_the_optimum(scale, C, epsilon):
    X, y = _data(scale=scale)
    result = AIDSolver(SVRModel(C=C, epsilon=epsilon)).solve(RegressionData.from_arrays(X, y))
    assert str(result.status) in CERTIFIED, result.status
    optimum = _full_optimum(X, y, C, epsilon)
    assert result.lower_bound <= optimum * (1 + 1e-7)  # the bound is a bound
    assert result.objective == pytest.approx(optimum, rel=2e-4)  # and the answer is ε-optimal
    assert (result.objective - result.lower_bound) / result.objective <= 1e-4


@pytest.mark.parametrize("scale", [1e-9, 1e9])
def test_extreme_scales_never_claim_too_much(scale):
    """At 1e±9 the answer may stay uncertified; a claimed bound is still below the optimum.
    (x, y) × s with C/s and εs is the same problem: w and the loss do not change, b scales."""
    X, y = _data(n=600, scale=scale)
    result = AIDSolver(SVRModel(C=1.0 / scale, epsilon=0.1 * scale), max_iter=30).solve(
        RegressionData.from_arrays(X, y)
    )
    optimum = _full_optimum(X / scale, y / scale, 1.0, 0.1)
    if result.lower_bound is not None:
        assert result.lower_bound <= optimum * (1 + 1e-6)


def test_rows_in_blocks_give_the_same_certificate():
    from aidopt.engine.blocks import MemoryBlocks

    X, y = _data(n=3000)
    data = RegressionData.from_arrays(X, y)
    whole = AIDSolver(SVRModel(epsilon=0.2)).solve(data)
    blocks = AIDSolver(SVRModel(epsilon=0.2)).solve(MemoryBlocks(data, 700))
    assert str(blocks.status) in CERTIFIED
    assert blocks.objective == pytest.approx(whole.objective, rel=1e-9)
    assert blocks.lower_bound == pytest.approx(whole.lower_bound, rel=1e-9)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "aidopt"
    return subprocess.run(
        [str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_console_script_solves_on_dask_and_verify_accepts_only_the_truth(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dask")
    X, y = _data(n=3000)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    frame.to_csv(tmp_path / "svr.csv", index=False)
    frame.to_parquet(tmp_path / "svr.parquet", row_group_size=1000)
    solved = _run("solve", "svr", "--data", "svr.csv", "--target", "y", "--json", cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    (tmp_path / "r.json").write_text(solved.stdout)
    ok = _run("verify", "r.json", "--data", "svr.csv", cwd=tmp_path)
    assert ok.returncode == 0 and "ACCEPTED" in ok.stdout, ok.stdout + ok.stderr
    forged = json.loads(solved.stdout)
    forged["certificate"]["lower_bound"] = forged["objective"]
    forged["certificate"]["gap"] = 0.0
    (tmp_path / "f.json").write_text(json.dumps(forged))
    bad = _run("verify", "f.json", "--data", "svr.csv", cwd=tmp_path)
    assert bad.returncode == 1 and "lower_bound" in bad.stdout

    on_dask = _run(
        "solve", "svr", "--data", "svr.parquet", "--target", "y", "--engine", "dask",
        "--workers", "1", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert on_dask.returncode == 0, on_dask.stderr
    answer = json.loads(on_dask.stdout)
    assert answer["status"] in CERTIFIED
    assert answer["objective"] == pytest.approx(json.loads(solved.stdout)["objective"], rel=1e-9)


def test_sparse_rows_give_the_dense_answer():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X = sp.random(3000, 20, density=0.2, random_state=0, format="csr")
    y = X @ rng.standard_normal(20) + 0.1 * rng.standard_normal(3000)
    sparse = AIDSolver(SVRModel(epsilon=0.05)).solve(RegressionData.from_arrays(X, y))
    dense = AIDSolver(SVRModel(epsilon=0.05)).solve(RegressionData.from_arrays(X.toarray(), y))
    assert str(sparse.status) in CERTIFIED
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-4)


def test_the_pyomo_route_reads_back_the_same_answer():
    X, y = _data(n=1000)
    data = RegressionData.from_arrays(X, y)
    matrix = AIDSolver(SVRModel(epsilon=0.2)).solve(data)
    pyomo = AIDSolver(SVRModel(epsilon=0.2), interface="pyomo").solve(data)
    assert str(pyomo.status) in CERTIFIED
    assert pyomo.objective == pytest.approx(matrix.objective, rel=1e-4)


def test_the_estimator_predicts():
    from sklearn.base import clone

    from aidopt.estimators import AIDSVR

    X, y = _data(n=800)
    fitted = AIDSVR(C=2.0, epsilon=0.1).fit(X, y)
    assert fitted.status_ in CERTIFIED
    np.testing.assert_allclose(fitted.predict(X), X @ fitted.coef_ + fitted.intercept_)
    assert fitted.score(X, y) > 0.9
    assert clone(fitted).get_params()["epsilon"] == 0.1


def test_the_model_file_is_short():
    assert len((ROOT / "models" / "svr.py").read_text(encoding="utf-8").splitlines()) <= 150
