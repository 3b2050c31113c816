"""Linear SVM under AID: certified optimum = full QP = libsvm, bounds, dual recovery, backends."""

import importlib.util
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from aidopt import AIDSolver, AIDStatus
from aidopt.cli import main
from aidopt.core.partition import Partition
from aidopt.core.registry import get_solver
from aidopt.core.registry import model as registered_model
from aidopt.core.routes import solve_aggregated
from aidopt.data.svm import GENERATOR, make_svm
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.models.svm import SVMData, SVMModel, optimal_intercept
from aidopt.models.svm_kernel import KernelSVMModel
from aidopt.solvers.structures import WeightedSVM, feasible_dual

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
M = 0.1


def primal_objective(X, y, w, b, C=M):
    """E of (7) at (w, b)."""
    return 0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum()


def svc_objective(X, y, C=M):
    """(7) at scikit-learn's SVC solution, solved to a tight tolerance: the independent check."""
    fit = SVC(kernel="linear", C=C, tol=1e-8).fit(X, y)
    return primal_objective(X, y, fit.coef_[0], fit.intercept_[0], C)


def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def check_certified(result, X, y, reference):
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(reference, rel=1e-6)
    # Prop. 4: F^t non-decreasing (each F^t is D(ᾱ^t) at a dual point certified to 1e-6)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(np.diff(lower) >= -1e-9 * reference)
    assert np.all(lower <= reference * (1 + 1e-9))  # valid bounds on E*
    assert result.lower_bound == pytest.approx(result.objective, rel=1e-6)  # F^T = E^T
    # every final cluster lies on one side of the margin-shifted hyperplane (Prop. 3)
    sol = result.solution
    regime = (1 - y * (X @ sol.w + sol.b) > 0).astype(int)
    assert result.partition.impure(regime).sum() == 0


@pytest.mark.parametrize(("n", "m", "seed"), [(1500, 4, 0), (1200, 15, 1)])
def test_certified_aid_equals_full_qp_and_libsvm(n, m, seed):
    X, y = make_svm(n, m, seed=seed)
    data = SVMData.from_arrays(X, y)
    full = AIDSolver(SVMModel(), solver="highs").solve_full(data)  # independent of the default
    result = AIDSolver(SVMModel(), tol=0.0).solve(data)  # the default solver: activeset
    assert result.solver == "activeset"
    check_certified(result, X, y, full.objective)
    assert result.objective == pytest.approx(svc_objective(X, y), rel=1e-4)
    assert result.iterations > 1 and result.final_rate < 1.0


def test_breast_cancer_standardised():
    X, y = breast_cancer()
    data = SVMData.from_arrays(X, y)
    full = AIDSolver(SVMModel()).solve_full(data)
    result = AIDSolver(SVMModel(), tol=0.0).solve(data)
    check_certified(result, X, data.y, full.objective)
    assert result.objective == pytest.approx(svc_objective(X, data.y), rel=1e-4)
    assert data.classes == (0, 1)  # 0 (malignant) → −1, 1 (benign) → +1


def test_dual_recovery_is_dual_optimal():
    X, y = make_svm(1500, 6, seed=3)
    data = SVMData.from_arrays(X, y)
    result = AIDSolver(SVMModel(), tol=0.0).solve(data)
    assert result.certified
    alpha = result.solution.entry_duals()  # α̂_i = ᾱ_k / |C_k|
    assert alpha.shape == (1500,)
    assert alpha.min() >= 0.0 and alpha.max() <= M * (1 + 1e-12)
    assert abs(alpha @ y) <= 1e-10 * alpha.sum()
    w = (alpha * y) @ X  # the same hyperplane
    np.testing.assert_allclose(w, result.solution.w, rtol=1e-9, atol=1e-12)
    dual_value = alpha.sum() - 0.5 * w @ w  # (6) at α̂ equals the primal optimum
    assert dual_value == pytest.approx(result.objective, rel=1e-6)


def test_matrix_dual_and_pyomo_primal_agree():
    X, y = make_svm(800, 3, seed=4)
    data = SVMData.from_arrays(X, y)
    model = SVMModel()
    part = model.initial_partition(data, 0.05, np.random.default_rng(0))
    agg = model.aggregate(data, part)
    res = get_solver("highs").solve_program(model.matrix_program(agg))
    via_dual = model.solution_from_program(res, agg)
    bound = model.program_bound(res, agg)
    pyomo_model = model.build(agg)
    res_p = get_solver("pyomo:highs").solve_pyomo(pyomo_model)
    via_primal = model.extract(pyomo_model, agg)
    assert res_p.objective == pytest.approx(bound, rel=1e-7)
    for sol in (via_dual, via_primal):
        hinge = np.maximum(0, 1 - agg.label * (agg.xbar @ sol.w + sol.b))
        assert 0.5 * sol.w @ sol.w + M * agg.weight @ hinge == pytest.approx(bound, rel=1e-7)
    assert via_primal.alpha is not None  # duals of (9) read back through Pyomo
    # and whole runs through both interfaces reach the same certified optimum
    a = AIDSolver(model, tol=0.0).solve(data)
    b = AIDSolver(model, solver="pyomo:highs", tol=0.0).solve(data)
    assert a.certified and b.certified
    assert a.objective == pytest.approx(b.objective, rel=1e-7)


def test_clusters_never_mix_labels_and_follow_the_rate():
    X, y = make_svm(5000, 8, seed=5, positive_fraction=0.2)
    data = SVMData.from_arrays(X, y)
    model = SVMModel()
    rate = model.default_rate(data)
    assert rate == pytest.approx(1.1 * 8 / 5000)
    part = model.initial_partition(data, rate, np.random.default_rng(0))
    assert part.impure(((data.y + 1) // 2).astype(int)).sum() == 0
    assert 2 <= part.n_clusters <= np.ceil(rate * 5000) + 1
    assert model.default_rate(SimpleNamespace(n=1_000_000, m=8)) == 1e-4  # max{1.1m/n, 1e-4}


def test_libsvm_backend_gives_valid_bounds_and_the_optimum():
    X, y = make_svm(3000, 5, seed=6)
    data = SVMData.from_arrays(X, y)
    reference = svc_objective(X, y)
    result = AIDSolver(SVMModel(), solver="libsvm", tol=1e-6).solve(data)
    assert result.status in (AIDStatus.OPTIMAL, AIDStatus.GAP)
    assert result.objective == pytest.approx(reference, rel=1e-4)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(lower <= reference * (1 + 1e-9))  # weak duality at the repaired α
    assert result.gap <= 1e-4
    alpha = result.solution.entry_duals()
    assert alpha.max() <= M * (1 + 1e-12) and abs(alpha @ y) <= 1e-10 * alpha.sum()


def test_liblinear_backend_reports_no_bound():
    X, y = make_svm(3000, 5, seed=7)
    data = SVMData.from_arrays(X, y)
    with pytest.warns(ConvergenceWarning, match="not exact for this model"):
        result = AIDSolver(SVMModel(), solver="liblinear", tol=0.0).solve(data)
    assert result.lower_bound is None and result.gap is None
    assert result.history["lower_bound"].isna().all()
    assert result.history["gap"].isna().all()
    assert json.loads(json.dumps(result.to_dict()))["gap"] is None
    # its (w, b) is feasible for (7): the objective is a valid upper bound, close to E*
    reference = svc_objective(X, y)
    assert reference * (1 - 1e-9) <= result.objective <= reference * 1.01
    with pytest.raises(ValueError, match="no dual values"):
        result.solution.entry_duals()


def test_liblinear_iteration_limit_grows_on_heavy_clusters():
    # here liblinear misses 100,000 iterations on the fourth aggregated problem (176 clusters
    # of ~170 entries); the model retries with 10x the limit instead of stopping AID
    X, y = make_svm(30_000, 10, seed=3)
    data = SVMData.from_arrays(X, y)
    capped = AIDSolver(SVMModel(), solver="liblinear", solver_options={"max_iter": 100_000})
    with pytest.warns(ConvergenceWarning, match="iteration_limit"):
        assert capped.solve(data).status is AIDStatus.SOLVER_LIMIT  # an explicit limit is kept
    with pytest.warns(ConvergenceWarning, match="pure"):
        result = AIDSolver(SVMModel(), solver="liblinear").solve(data)
    # liblinear penalises b: pure clusters prove nothing about (7), so never "optimal"
    assert result.status is AIDStatus.PURE and result.iterations > 2
    reference = AIDSolver(SVMModel(), tol=1e-6).solve(data).objective
    assert result.objective == pytest.approx(reference, rel=1e-3)


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
def test_gurobi_reaches_the_optimum_and_reports_its_licence_limit():
    X, y = make_svm(150, 4, seed=8)  # full dual: 4 + 150 variables, inside the pip licence
    data = SVMData.from_arrays(X, y)
    reference = svc_objective(X, y)
    full = AIDSolver(SVMModel(), solver="gurobi").solve_full(data)
    assert full.objective == pytest.approx(reference, rel=1e-6)
    aid = AIDSolver(SVMModel(), solver="gurobi", tol=0.0, rate=0.05).solve(data)
    assert aid.certified and aid.objective == pytest.approx(reference, rel=1e-6)
    pyomo = AIDSolver(SVMModel(), solver="gurobi", interface="pyomo", tol=0.0, rate=0.05)
    via_pyomo = pyomo.solve(data)  # the Pyomo model (9) on gurobi_direct
    assert via_pyomo.certified and via_pyomo.objective == pytest.approx(reference, rel=1e-6)
    assert via_pyomo.solution.alpha is not None
    X, y = make_svm(3000, 5, seed=9)  # AID outgrows 200 variables
    with pytest.warns(ConvergenceWarning):
        big = AIDSolver(SVMModel(), solver="gurobi", tol=0.0).solve(SVMData.from_arrays(X, y))
    assert big.status is AIDStatus.SOLVER_LIMIT and "licence" in big.message


def test_optimal_intercept_is_the_minimiser():
    rng = np.random.default_rng(10)
    g, y, c = rng.normal(size=40), np.where(rng.random(40) < 0.4, 1.0, -1.0), rng.random(40)

    def phi(b):
        return c @ np.maximum(0, 1 - y * (g + b))

    b = optimal_intercept(g, y, c)
    grid = np.linspace(-5, 5, 20001)
    assert phi(b) <= min(phi(t) for t in grid) + 1e-12


def test_feasible_dual_repairs_into_the_box_and_balance():
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    upper = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    a = feasible_dual([1.5, 0.5, -0.1, 0.4, 0.3], y, upper)
    assert np.all(a >= 0) and np.all(a <= upper)
    assert a @ y == pytest.approx(0.0, abs=1e-15)


def test_one_aggregated_problem_on_each_solver():
    X, y = make_svm(1000, 3, seed=13)
    data = SVMData.from_arrays(X, y)
    model = SVMModel()
    agg = model.aggregate(data, model.initial_partition(data, 0.05, np.random.default_rng(0)))
    svm = model.to_structure(WeightedSVM, agg, None)  # (9) as the weighted SVM on x̄_k
    np.testing.assert_array_equal(svm.features, agg.xbar)
    np.testing.assert_array_equal(svm.weight, agg.weight)
    assert svm.C == M and svm.gram is None
    matrix, res_matrix = solve_aggregated(model, agg, "highs")  # the scaled dual program
    declared, res_pyomo = solve_aggregated(model, agg, "highs", interface="pyomo")  # (9)
    exact, res_libsvm = solve_aggregated(model, agg, "libsvm", options={"tol": 1e-8})
    assert res_libsvm.exact and exact.alpha is not None and exact.partition is agg.partition
    for res in (res_pyomo, res_libsvm):  # D(ᾱ) of libsvm and (9)'s optimum: the same F^t
        assert res.bound == pytest.approx(res_matrix.bound, rel=1e-6)
    for sol in (matrix, declared, exact):
        hinge = np.maximum(0, 1 - agg.label * (agg.xbar @ sol.w + sol.b))
        value = 0.5 * sol.w @ sol.w + M * agg.weight @ hinge
        assert value == pytest.approx(res_matrix.bound, rel=1e-6)
    other, res_liblinear = solve_aggregated(model, agg, "liblinear")  # penalises b
    assert not res_liblinear.exact and res_liblinear.bound is None and other.alpha is None


def test_options_choose_the_variant():
    assert [o.cli_flag for o in SVMModel.options] == ["--M"]
    flags = [o.cli_flag for o in SVMModel.cli_extras]
    assert flags == ["--kernel", "--gamma", "--degree", "--coef0"]
    linear = SVMModel.from_options(M=0.5)
    assert type(linear) is SVMModel and linear.M == 0.5 and linear.summary() == {"M": 0.5}
    rbf = SVMModel.from_options(M=0.2, kernel="rbf", gamma=0.5)
    assert isinstance(rbf, KernelSVMModel) and rbf.name == "svm"
    assert (rbf.M, rbf.kernel, rbf.gamma, rbf.degree, rbf.coef0) == (0.2, "rbf", 0.5, 3, 1.0)
    poly = SVMModel.from_options(kernel="poly", degree=2, coef0=0.0)
    assert (poly.kernel, poly.gamma, poly.degree, poly.coef0) == ("poly", None, 2, 0.0)
    # a kernel model's parameters (a result's params) rebuild it: ``aidopt verify``
    assert SVMModel.from_options(**rbf.summary()).summary() == rbf.summary()
    assert registered_model("svm") is SVMModel  # the kernel SVM is a variant, not a model


def test_generator_declares_the_old_flags():
    assert SVMModel.generator is GENERATOR
    flags = [o.cli_flag for o in GENERATOR.options]
    assert flags == ["--n", "--m", "--separation", "--positive-fraction"]
    frame = GENERATOR.make(seed=3, n=50, m=2, separation=2.0, positive_fraction=0.3)
    X, y = make_svm(50, 2, seed=3, separation=2.0, positive_fraction=0.3)
    assert list(frame.columns) == ["x1", "x2", "y"] and frame["y"].dtype == np.int64
    np.testing.assert_array_equal(frame[["x1", "x2"]].to_numpy(), X)
    np.testing.assert_array_equal(frame["y"].to_numpy(), y)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.ones((4, 2)), np.array([1, 1, 1, 1]), "exactly two distinct values; y has 1"),
        (np.ones((4, 2)), np.array([0, 1, 2, 1]), "exactly two distinct values; y has 3"),
        (np.array([[1.0, np.nan], [2.0, 3.0]]), np.array([0, 1]), "X contains NaN"),
        (np.ones((2, 2)), np.array([1.0, np.nan]), "missing"),
        (np.ones((3, 2)), np.array([1, -1]), "3 rows but y has 2"),
    ],
)
def test_bad_data_is_named(X, y, match):
    with pytest.raises(DataError, match=match):
        SVMData.from_arrays(X, y)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "1"])
def test_bad_penalty(bad):
    X, y = make_svm(100, 2, seed=0)
    with pytest.raises(InvalidParameterError, match="The 'M' parameter of SVMModel"):
        AIDSolver(SVMModel(M=bad)).solve(SVMData.from_arrays(X, y))


def test_unknown_library_option_is_named():
    X, y = make_svm(200, 2, seed=0)
    solver = AIDSolver(SVMModel(), solver="libsvm", solver_options={"C": 3})
    with pytest.raises(InvalidParameterError, match="solver_options of 'libsvm'"):
        solver.solve(SVMData.from_arrays(X, y))


def test_string_labels_are_mapped_and_reported():
    X, y = make_svm(600, 3, seed=11)
    labels = np.where(y > 0, "yes", "no").astype(object)
    data = SVMData.from_arrays(X, labels)
    assert data.classes == ("no", "yes")
    np.testing.assert_array_equal(data.y, y)
    result = AIDSolver(SVMModel()).solve(data)
    assert result.solution_dict["labels"] == {"-1": "no", "+1": "yes"}


# ---------------------------------------------------------------------- CLI
@pytest.fixture
def svm_csv(tmp_path):
    path = tmp_path / "svm.csv"
    args = ["generate", "svm", "--n", "2000", "--m", "3", "--seed", "2", "--out", str(path)]
    assert main(args) == 0
    return path


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_solve_svm_json(svm_csv, capsys):
    base = ["solve", "svm", "--data", str(svm_csv), "--target", "y", "--json"]
    payload = run_json(capsys, [*base, "--tol", "0", "--M", "0.1"])
    assert payload["status"] == "optimal" and payload["n"] == 2000 and payload["m"] == 3
    sol = payload["solution"]
    assert set(sol["w"]) == {"x1", "x2", "x3"} and isinstance(sol["b"], float)
    assert sol["labels"] == {"-1": -1, "+1": 1}
    frame = pd.read_csv(svm_csv)
    X, y = frame[["x1", "x2", "x3"]].to_numpy(), frame["y"].to_numpy()
    w = np.array([sol["w"][c] for c in ("x1", "x2", "x3")])
    assert sol["training_accuracy"] == pytest.approx(np.mean(np.sign(X @ w + sol["b"]) == y))
    assert payload["objective"] == pytest.approx(primal_objective(X, y, w, sol["b"]), rel=1e-9)
    other = run_json(capsys, [*base, "--solver", "libsvm"])
    assert other["objective"] == pytest.approx(payload["objective"], rel=1e-3)
    with pytest.warns(ConvergenceWarning, match="not exact for this model"):
        other = run_json(capsys, [*base, "--solver", "liblinear"])
    assert other["objective"] == pytest.approx(payload["objective"], rel=1e-3)
    assert other["gap"] is None and other["status"] == "pure"  # liblinear
    rbf = run_json(capsys, [*base, "--kernel", "rbf", "--gamma", "0.5", "--solver", "libsvm"])
    assert "w" not in rbf["solution"] and rbf["solution"]["kernel"]["gamma"] == 0.5


def test_cli_one_class_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "one.csv"
    pd.DataFrame({"x1": [1.0, 2.0, 3.0], "y": ["a", "a", "a"]}).to_csv(path, index=False)
    assert main(["solve", "svm", "--data", str(path), "--target", "y"]) == 2
    assert "exactly two distinct values; y has 1 ('a')" in capsys.readouterr().err


def test_partition_split_keeps_labels_pure():
    X, y = make_svm(400, 2, seed=12)
    data = SVMData.from_arrays(X, y)
    part = Partition.from_labels(np.where(y > 0, 0, 1))
    agg = SVMModel().aggregate(data, part)
    np.testing.assert_array_equal(agg.label, [1.0, -1.0])
    np.testing.assert_allclose(agg.xbar[0], X[y > 0].mean(axis=0), rtol=1e-12)


# ---------------------------------------------------------------------- benchmark
def test_bench_svm_appends_cells_and_summarises(tmp_path, capsys):
    out = tmp_path / "bench"
    base = ["bench", "svm", "--sizes", "800x3", "--repeats", "1", "--out", str(out)]
    base += ["--methods", "aid-libsvm,libsvm", "--time-limit", "60"]
    assert main([*base, "--seed", "0"]) == 0
    assert main([*base, "--seed", "1", "--append"]) == 0  # one more instance, same cell
    capsys.readouterr()
    runs = pd.read_csv(out / "svm_runs.csv")
    assert sorted(runs["seed"]) == [0, 0, 1, 1] and set(runs["status"]) <= {"optimal", "gap"}
    summary = pd.read_csv(out / "svm_summary.csv")
    assert len(summary) == 1 and summary.loc[0, "instances"] == 2
    row = summary.loc[0]
    aid, lib = runs[runs.method == "aid-libsvm"], runs[runs.method == "libsvm"]
    rho = (aid["seconds"].to_numpy() / lib["seconds"].to_numpy()).mean()
    assert row["rho"] == pytest.approx(rho, rel=1e-12)
    assert abs(row["delta"]) < 1e-3 and abs(row["gamma"]) < 0.01  # same optimum, same fit
    assert (out / "svm_figure6.png").stat().st_size > 0
    assert "aid-libsvm vs libsvm" in (out / "svm_summary.md").read_text()


@pytest.mark.parametrize(
    ("model", "interface"),
    [
        (SVMModel(M=0.1), "matrix"),  # the scaled dual of (9)
        (KernelSVMModel(kernel="rbf", gamma=0.5), "matrix"),  # (21), a maximisation
        (KernelSVMModel(kernel="rbf", gamma=0.5), "pyomo"),
    ],
    ids=["linear-dual", "kernel-matrix", "kernel-pyomo"],
)
def test_the_history_reports_the_aggregated_optimum_not_its_negation(model, interface):
    """F^t in the history is the aggregated optimum (a lower bound on E^t, here positive) on
    routes whose program is a dual in minimisation form (it was −F^t before 2026-12-06)."""
    X, y = make_svm(300, 3, seed=5)
    result = AIDSolver(model, solver="highs", interface=interface, rate=0.05).solve(
        SVMData.from_arrays(X, y)
    )
    history = result.history
    assert (history["aggregated_objective"] > 0).all()
    upper = history["upper_bound"] * (1 + 1e-9)
    assert (history["aggregated_objective"] <= upper).all()
