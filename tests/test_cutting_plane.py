"""The 1-slack master (17)/(19): Pyomo primal = dual active-set routine, the routine against an
independent QP solver, and the 1-slack SVM = the SVM optimum (SVC, models/svm.py's full QP)."""

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import SVC

from aidopt import AIDSolver
from aidopt.baselines.cutting_plane import (
    Cuts,
    build_master,
    master_from_pyomo,
    one_slack_svm,
    solve_master,
)
from aidopt.core.registry import get_solver
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.models.svm import SVMData, SVMModel
from aidopt.solvers.active_set import capped_simplex_qp
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.pyomo import PyomoAdapter

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
HAS_CVXPY = importlib.util.find_spec("cvxpy") is not None
SOLVERS = [
    "highs",
    pytest.param("gurobi", marks=pytest.mark.skipif(not HAS_GUROBI, reason="no gurobipy")),
]


def random_cuts(seed, K=12, d=6, degenerate=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(K, d))
    if degenerate:  # repeated and zero cuts: a singular Gram matrix Z Zᵀ
        z[K // 2 :] = z[: K - K // 2]
        z[0] = 0.0
    return Cuts(rng.random(K) * 2, z, rng.normal(size=K))


def pyomo_master(cuts, b, solver):
    model = build_master(cuts, b)
    adapter = PyomoAdapter("highs") if solver == "highs" else get_solver(solver)
    result = adapter.solve_pyomo(model)
    assert result.status is SolveStatus.OPTIMAL
    return result.objective, *master_from_pyomo(model)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("b", [0.3, -0.8, None], ids=["b=0.3", "b=-0.8", "b free"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_primal_17_and_dual_19_give_the_same_optimum(solver, b, seed):
    cuts = random_cuts(seed, degenerate=seed == 2)
    primal, w, b_p, _xi = pyomo_master(cuts, b, solver)
    dual = solve_master(cuts, b)
    assert dual.objective == pytest.approx(primal, rel=1e-7, abs=1e-9)
    assert dual.dual_objective == pytest.approx(primal, rel=1e-7, abs=1e-9)
    assert 0.0 <= dual.gap <= 1e-12 * max(1.0, dual.objective)
    np.testing.assert_allclose(dual.w, w, atol=1e-5)  # w is unique (strongly convex)
    np.testing.assert_allclose(dual.w, dual.lam @ cuts.z, rtol=1e-12)  # w = Σ λ_k z_k
    assert dual.lam.min() >= 0.0 and dual.lam.sum() <= 1.0 + 1e-12
    if b is None:
        assert abs(dual.lam @ cuts.h) <= 1e-12  # the free-b equality of (19)
        assert 0.5 * w @ w + max(0.0, cuts.slacks(w, b_p).max()) == pytest.approx(primal, 1e-7)
    else:
        assert dual.b == b_p == b


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
@pytest.mark.parametrize("seed", range(8))
def test_active_set_against_an_interior_point_solver(seed):
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    K, d = int(rng.integers(2, 40)), int(rng.integers(1, 30))
    Z = rng.normal(size=(K, d)) * 10.0 ** rng.integers(-3, 3)
    if seed % 2:
        Z[K // 2 :] = Z[: K - K // 2]
    p = rng.normal(size=K) * 10.0 ** rng.integers(-2, 2)
    E = rng.normal(size=(1, K)) if seed % 3 == 0 else None
    lam, _ = capped_simplex_qp(Z @ Z.T, p, E)
    x = cp.Variable(K)
    cons = [x >= 0, cp.sum(x) <= 1] + ([E @ x == 0] if E is not None else [])
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(Z.T @ x) - p @ x), cons)
    ref.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    mine = 0.5 * np.sum((Z.T @ lam) ** 2) - p @ lam
    assert lam.min() >= 0.0 and lam.sum() <= 1.0 + 1e-12
    if E is not None:
        assert abs(E @ lam).max() <= 1e-10
    assert mine <= ref.value + 1e-9 * max(1.0, abs(ref.value))


def test_warm_start_gives_the_same_optimum():
    cuts = random_cuts(3, K=20)
    cold = solve_master(cuts, 0.1)
    rng = np.random.default_rng(0)
    start = rng.random(20) / 40  # feasible, far from optimal
    warm = solve_master(cuts, 0.1, start=start)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)
    np.testing.assert_allclose(warm.w, cold.w, atol=1e-10)


def test_empty_working_set_is_w_zero():
    sol = solve_master(Cuts(np.zeros(0), np.zeros((0, 3)), np.zeros(0)), 0.5)
    assert sol.objective == 0.0 and not sol.w.any()


# ---------------------------------------------------------------------- the 1-slack SVM
def svm_objective(X, y, w, b, C):
    return 0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum()


def svm_data(seed, n=300, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] - 0.7 * X[:, 1] + 0.6 * rng.normal(size=n) > 0.2, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("eps", [1e-2, 1e-6])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_slack_svm_reaches_the_svm_optimum_within_eps(seed, eps):
    X, y = svm_data(seed)
    n, C_svc = X.shape[0], 0.5
    fit = SVC(kernel="linear", C=C_svc, tol=1e-10).fit(X, y)
    reference = svm_objective(X, y, fit.coef_[0], fit.intercept_[0], C_svc)
    full = AIDSolver(SVMModel(M=C_svc)).solve_full(SVMData.from_arrays(X, y))
    assert full.objective == pytest.approx(reference, rel=1e-6)
    res = one_slack_svm(X, y, C=n * C_svc, eps=eps)  # (C/n) Σ ξ_i with C = n·C_svc
    assert res.converged
    assert res.objective == pytest.approx(svm_objective(X, y, res.w, res.b, C_svc), rel=1e-12)
    # L ≤ E* ≤ P ≤ L + ε: the master optimum bounds the SVM optimum from below
    assert res.lower_bound <= min(reference, full.objective) + 1e-9 * reference
    assert res.objective <= res.lower_bound + eps + 1e-9 * reference
    assert res.objective >= min(reference, full.objective) - 1e-6 * reference


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
def test_one_slack_svm_without_intercept():
    import cvxpy as cp

    X, y = svm_data(4, n=200)
    C = 100.0
    w = cp.Variable(X.shape[1])
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X @ w)))
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + (C / len(y)) * hinge))
    ref.solve(solver=cp.CLARABEL)
    res = one_slack_svm(X, y, C=C, eps=1e-6, fit_intercept=False)
    assert res.b == 0.0
    assert res.lower_bound <= ref.value + 1e-7 and res.objective <= ref.value + 1e-6


def test_one_slack_svm_sparse_equals_dense():
    X, y = svm_data(5)
    X[np.abs(X) < 0.8] = 0.0
    dense = one_slack_svm(X, y, C=50.0, eps=1e-4)
    sparse = one_slack_svm(sp.csr_matrix(X), y, C=50.0, eps=1e-4)
    assert sparse.constraints == dense.constraints
    np.testing.assert_allclose(sparse.w, dense.w, rtol=1e-9, atol=1e-12)
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"C": -1.0}, InvalidParameterError, "'C' parameter of one_slack_svm"),
        ({"eps": 0.0}, InvalidParameterError, "'eps' parameter"),
        ({"max_iter": 0}, InvalidParameterError, "'max_iter' parameter"),
        ({"y": np.array([0.0, 1.0, 1.0])}, DataError, "labels −1/\\+1"),
        ({"y": np.array([1.0, -1.0])}, DataError, "3 rows but y has 2"),
        ({"X": np.array([[np.nan], [1.0], [2.0]])}, DataError, "NaN"),
    ],
)
def test_one_slack_svm_bad_input_is_named(kwargs, error, match):
    args = {"X": np.array([[0.0], [1.0], [2.0]]), "y": np.array([-1.0, 1.0, 1.0])}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(error, match=match):
        one_slack_svm(X, y, **args)


def test_cuts_shape_errors_are_named():
    with pytest.raises(ValueError, match="Cuts need"):
        Cuts(np.zeros(2), np.zeros((3, 2)), np.zeros(2))
