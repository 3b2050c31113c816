"""LAD under AID: certified optimum = an independent full solve, bounds, purity, both paths."""

import importlib.util
import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from aidopt import AIDSolver, AIDStatus
from aidopt.cli import main
from aidopt.core.partition import Partition
from aidopt.data.lad import make_lad
from aidopt.exceptions import (
    ConvergenceWarning,
    DataError,
    DataWarning,
    InvalidParameterError,
    SolverError,
)
from aidopt.models.lad import LADData, LADModel, QuantileModel

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None


def reference_lad(X, y, intercept=True, tau=None):
    """Σ|r| (or Σ ρ_τ(r)) at the optimum of the LP, built here independently, scipy/HiGHS."""
    Z = np.column_stack([np.ones(len(y)), X]) if intercept else X
    n, p = Z.shape
    up, down = (1.0, 1.0) if tau is None else (tau, 1.0 - tau)
    c = np.r_[np.zeros(p), np.full(n, up), np.full(n, down)]
    A = sp.hstack([sp.csr_matrix(Z), sp.eye(n), -sp.eye(n)])
    bounds = [(None, None)] * p + [(0, None)] * (2 * n)
    res = so.linprog(c, A_eq=A, b_eq=y, bounds=bounds, method="highs-ds")
    assert res.status == 0
    return res.fun


def brute_force_lad(X, y):
    """Exact optimum on tiny data: an LAD optimum interpolates p of the points (LP vertex)."""
    Z = np.column_stack([np.ones(len(y)), X])
    best = np.inf
    for rows in itertools.combinations(range(len(y)), Z.shape[1]):
        sub = Z[list(rows)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        beta = np.linalg.solve(sub, y[list(rows)])
        best = min(best, np.abs(y - Z @ beta).sum())
    return best


@pytest.mark.parametrize(("n", "m", "seed"), [(3000, 3, 0), (5000, 10, 1), (2000, 25, 2)])
def test_certified_aid_equals_full_lp(n, m, seed):
    X, y, _, _ = make_lad(n, m, seed=seed)
    data = LADData.from_arrays(X, y)
    result = AIDSolver(LADModel(), tol=0.0).solve(data)
    assert result.status is AIDStatus.OPTIMAL
    ref = reference_lad(X, y)
    assert result.objective == pytest.approx(ref, rel=1e-7)
    # bounds: F^t non-decreasing (Prop. 2) and F^T = E^T at the certificate (Prop. 1)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(np.diff(lower) >= -1e-9 * ref)
    assert result.lower_bound == pytest.approx(result.objective, rel=1e-9)
    assert np.all(result.history["lower_bound"] <= result.history["upper_bound"] * (1 + 1e-9))
    # every final cluster is sign-pure at the solution
    sol = result.solution
    residual = y - X @ sol.coef - sol.intercept
    assert result.partition.impure((residual > 0).astype(int)).sum() == 0
    # and the full model through the same path agrees
    full = AIDSolver(LADModel()).solve_full(data)
    assert full.objective == pytest.approx(ref, rel=1e-9)


def test_brute_force_on_tiny_degenerate_data():
    rng = np.random.default_rng(4)
    X = rng.integers(-2, 3, size=(11, 2)).astype(float)  # ties and repeated rows
    y = rng.integers(-3, 4, size=11).astype(float)
    data = LADData.from_arrays(X, y)
    result = AIDSolver(LADModel(), tol=0.0, rate=0.3).solve(data)
    assert result.certified
    assert result.objective == pytest.approx(brute_force_lad(X, y), rel=1e-9, abs=1e-9)


def test_matrix_and_pyomo_paths_give_the_same_model():
    X, y, _, _ = make_lad(1500, 4, seed=5)
    data = LADData.from_arrays(X, y)
    model = LADModel()
    part = model.initial_partition(data, 0.01, np.random.default_rng(0))
    agg = model.aggregate(data, part)
    from aidopt.core.registry import get_solver

    highs = get_solver("highs")
    program = model.matrix_program(agg)
    res = highs.solve_program(program)
    via_matrix = model.solution_from_program(res, agg)
    pm = model.build(agg)
    res_p = highs.solve_pyomo(pm)
    via_pyomo = model.extract(pm, agg)
    # same optimum F^t: the dual's value, the Pyomo objective, and (3) at either solution
    f_dual = model.program_bound(res, agg)
    assert res_p.objective == pytest.approx(f_dual, rel=1e-9)
    for sol in (via_matrix, via_pyomo):
        f_at = np.sum(agg.weight * np.abs(agg.ybar - agg.xbar @ sol.coef - sol.intercept))
        assert f_at == pytest.approx(f_dual, rel=1e-9)
    # and AID through both paths reaches the same certified optimum
    a = AIDSolver(model, tol=0.0, interface="matrix").solve(data)
    b = AIDSolver(model, tol=0.0, interface="pyomo").solve(data)
    assert a.certified and b.certified
    assert a.objective == pytest.approx(b.objective, rel=1e-9)


def test_aggregated_data_are_the_brute_force_centroids():
    X, y, _, _ = make_lad(400, 3, seed=6)
    data = LADData.from_arrays(X, y)
    part = Partition.from_labels(np.random.default_rng(1).integers(0, 9, size=400))
    agg = LADModel().aggregate(data, part)
    for k in range(part.n_clusters):
        members = part.labels == k
        np.testing.assert_allclose(agg.xbar[k], X[members].mean(axis=0), rtol=1e-12)
        assert agg.ybar[k] == pytest.approx(y[members].mean(), rel=1e-12)
        assert agg.weight[k] == members.sum()


def test_no_intercept_and_iteration_limit():
    X, y, _, _ = make_lad(2000, 5, seed=7)
    data = LADData.from_arrays(X, y)
    result = AIDSolver(LADModel(fit_intercept=False), tol=0.0).solve(data)
    assert result.certified and result.solution.intercept == 0.0
    assert result.objective == pytest.approx(reference_lad(X, y, intercept=False), rel=1e-7)
    with pytest.warns(ConvergenceWarning):
        paper = LADModel(init="kmeans", sample_fit="lstsq", split="sign")  # the paper's policy
        first = AIDSolver(paper, tol=0.0, max_iter=1).solve(data)
    assert first.status is AIDStatus.ITERATION_LIMIT
    assert first.history["impure_clusters"].iloc[0] > 0


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
@pytest.mark.parametrize("tau", [None, 0.8])
def test_gurobi_reaches_the_same_optimum(tau):
    X, y, _, _ = make_lad(1800, 4, seed=8)  # full dual LP: 1,800 columns, inside the pip licence
    data = LADData.from_arrays(X, y)
    ref = reference_lad(X, y, tau=tau)
    model = LADModel() if tau is None else QuantileModel(tau)
    aid = AIDSolver(model, solver="gurobi", tol=0.0).solve(data)
    assert aid.certified and aid.objective == pytest.approx(ref, rel=1e-7)
    full = AIDSolver(model, solver="gurobi").solve_full(data)
    assert full.objective == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), np.array([1.0, 2.0]), "NaN"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), np.array([1.0, 2.0]), "inf"),
        (np.zeros((0, 3)), np.zeros(0), "empty"),
        (np.ones((5, 2)), np.ones(4), "5 rows but y has 4"),
        (np.array([["a", "b"], ["c", "d"]]), np.array([1.0, 2.0]), "numeric"),
    ],
)
def test_bad_data_is_named(X, y, match):
    with pytest.raises(DataError, match=match):
        LADData.from_arrays(X, y)


def test_fewer_rows_than_coefficients():
    data = LADData.from_arrays(np.ones((3, 4)), np.ones(3))
    with pytest.raises(DataError, match=r"Fewer rows \(3\) than coefficients \(5"):
        AIDSolver(LADModel()).solve(data)


def _models():
    return {"lad": (LADModel(), None), "q0.2": (QuantileModel(0.2), 0.2)}


@pytest.mark.parametrize("which", ["lad", "q0.2"])
@pytest.mark.parametrize(
    ("solver", "interface", "full"),
    [
        ("highs", "matrix", False),
        ("highs", "pyomo", False),
        ("fn", "auto", False),
        ("highs", "matrix", True),
        ("fn", "auto", True),
    ],
)
def test_every_solver_path_reaches_the_same_certified_optimum(which, solver, interface, full):
    X, y, _, _ = make_lad(3000 if interface != "pyomo" else 1500, 4, seed=11)
    data = LADData.from_arrays(X, y)
    model, tau = _models()[which]
    aid = AIDSolver(model, solver=solver, interface=interface, tol=0.0)
    result = aid.solve_full(data) if full else aid.solve(data)
    ref = reference_lad(X, y, tau=tau)
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(ref, rel=1e-7)
    assert result.lower_bound == pytest.approx(ref, rel=1e-7)
    assert result.lower_bound <= result.objective * (1 + 1e-12)
    sol = result.solution
    r = y - X @ sol.coef - sol.intercept
    loss = np.abs(r).sum() if tau is None else np.sum(np.where(r > 0, tau, tau - 1) * r)
    assert loss == pytest.approx(result.objective, rel=1e-12)


@pytest.mark.parametrize(
    "policy",
    [
        {"init": "kmeans", "sample_fit": "lstsq", "split": "sign"},  # the paper's
        {"init": "kmeans-r", "split": "band"},
        {"init": "bins", "split": "minority", "warm_start": "regime"},
        {"split": "sign", "warm_start": "none"},
    ],
)
@pytest.mark.parametrize("solver", ["highs", "fn"])
def test_policies_keep_the_certificate(policy, solver):
    X, y, _, _ = make_lad(2500, 5, seed=12)
    data = LADData.from_arrays(X, y)
    ref = reference_lad(X, y, tau=0.7)
    result = AIDSolver(QuantileModel(0.7, **policy), solver=solver, tol=0.0).solve(data)
    assert result.certified
    assert result.objective == pytest.approx(ref, rel=1e-7)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(np.diff(lower) >= -1e-9 * ref)  # Prop. 2 with any split policy
    residual = y - X @ result.solution.coef - result.solution.intercept
    assert result.partition.impure((residual > 0).astype(int)).sum() == 0


def test_fn_time_limit_is_reported_as_such():
    X, y, _, _ = make_lad(20000, 20, seed=13)
    data = LADData.from_arrays(X, y)
    # no aggregated problem solved in time: the driver's named error, as for any solver
    with pytest.raises(SolverError, match="no solution for the first aggregated problem"):
        AIDSolver(LADModel(), solver="fn", time_limit=1e-6).solve_full(data)


def test_fn_solver_from_the_cli(tmp_path, capsys):
    X, y, _, _ = make_lad(2500, 3, seed=14)
    path = tmp_path / "lad.csv"
    pd.DataFrame(np.column_stack([X, y]), columns=["a", "b", "c", "target"]).to_csv(path)
    argv = ["solve", "lad", "--data", str(path), "--target", "target", "--tol", "0", "--json"]
    assert main([*argv, "--solver", "fn", "--quantile", "0.35"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["solver"] == "fn" and payload["status"] == "optimal"
    Xf = np.column_stack([np.arange(len(y)), X])  # to_csv wrote the index as a column
    assert payload["objective"] == pytest.approx(reference_lad(Xf, y, tau=0.35), rel=1e-7)


@pytest.mark.parametrize(
    ("model", "name"),
    [
        (LADModel(split="magnitude"), "split"),
        (LADModel(init="random"), "init"),
        (LADModel(warm_start="basis"), "warm_start"),
        (LADModel(bins=0), "bins"),
        (LADModel(sfac=-1.0), "sfac"),
        (QuantileModel(1.5), "quantile"),
    ],
)
def test_bad_policy_parameters_are_named(model, name):
    data = LADData.from_arrays(np.ones((30, 2)) + np.arange(60).reshape(30, 2) ** 0.5, np.ones(30))
    with pytest.raises(
        InvalidParameterError, match=f"'{name}' parameter of {type(model).__name__}"
    ):
        AIDSolver(model).solve(data)


def test_default_solver_is_the_models_and_cli_and_api_agree(tmp_path, capsys):
    """No solver named: LAD uses its measured default (fn) in the API and in the CLI."""
    X, y, _, _ = make_lad(3000, 4, seed=15)
    result = AIDSolver(LADModel(), tol=0.0).solve(LADData.from_arrays(X, y))
    assert result.solver == LADModel.default_solver == "fn"
    assert result.status is AIDStatus.OPTIMAL
    path = tmp_path / "lad.csv"
    pd.DataFrame(np.column_stack([X, y]), columns=["a", "b", "c", "d", "y"]).to_csv(
        path, index=False
    )
    assert main(["solve", "lad", "--data", str(path), "--target", "y", "--tol", "0", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["solver"] == "fn"
    assert payload["objective"] == pytest.approx(result.objective, rel=1e-9)
    assert payload["objective"] == pytest.approx(reference_lad(X, y), rel=1e-7)


def test_a_perfect_fit_claims_nothing_false_and_a_zero_objective_has_an_absolute_gap():
    """E* = 0 (y exactly linear in x): the relative gap means nothing there. The run may end
    `pure` (the proven gap relative to a rounding-level objective is large) but never claims a
    bound above 0 or an objective away from 0; at E_best = 0 exactly the gap is U − L."""
    from aidopt.core.certificate import relative_gap

    X = np.repeat([[1.0, 3.0], [2.0, 1.0], [3.0, 3.0], [4.0, 1.0]], 4, axis=0)
    y = 3.0 - 0.5 * X[:, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = AIDSolver(LADModel(), tol=0.0).solve(LADData.from_arrays(X, y))
    assert result.status in (AIDStatus.OPTIMAL, AIDStatus.PURE)
    assert 0.0 <= result.objective <= 1e-12
    assert result.certificate.lower_bound <= 0.0 <= result.certificate.upper_bound
    assert relative_gap(4e-14, 0.0, 0.0) == 4e-14 and relative_gap(4e-14, 0.0) == 1.0


def test_a_rank_deficient_quantile_fit_on_fn_ends_pure_like_highs():
    """Dependent columns: Frisch-Newton converges but cannot close its own certificate (the
    optimum is not unique). It returns its point with the gap it proves; the run ends `pure`,
    with the DataWarning naming the columns, at HiGHS's objective (before: a SolverError)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=3000, n_features=8, random_state=0)  # 2 redundant
    data = LADData.from_arrays(X, y)
    results = {}
    for solver in ("fn", "highs"):
        with pytest.warns(DataWarning, match="rank-deficient"), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            results[solver] = AIDSolver(QuantileModel(quantile=0.9), solver=solver, tol=0.0).solve(
                data
            )
    assert results["fn"].status is AIDStatus.PURE
    assert results["fn"].objective == pytest.approx(results["highs"].objective, rel=1e-9)


@pytest.mark.parametrize("n", [10, 5000, 20_000, 250_000])
@pytest.mark.parametrize("kind", ["continuous", "ties", "sorted", "reversed"])
def test_band_rows_are_those_of_the_partial_sort(n, kind):
    """The band's rows (the entries ≤ the k-th smallest |r|), found among the entries under a
    sampled threshold, are those of the full partial sort — ties, orders and every k."""
    from aidopt.core.clustering import smallest

    rng = np.random.default_rng(n)
    values = rng.random(n)
    if kind == "ties":
        values = np.round(values * 50) / 50
    elif kind == "sorted":
        values = np.sort(values)
    elif kind == "reversed":
        values = np.sort(values)[::-1].copy()
    for k in sorted({0, 1, 7, n // 40, n // 9, n // 2, n - 1}):
        expected = np.flatnonzero(values <= np.partition(values, k)[k])
        assert np.array_equal(smallest(values, k), expected)


def _all_candidates(self, candidates, *_):
    return candidates


def test_dropped_dual_candidates_lose_no_bound(monkeypatch):
    """A candidate dual dominated on the cluster sums (lower uᵀy, larger ‖D⁻¹Zᵀu‖) is not
    summed over the rows: at every iteration the bound equals the best over all candidates
    (up to their rounding allowances), and some candidate was dropped (on this instance the
    dual rebuilt by complementary slackness at iteration 2: its bound is ~3 lower)."""
    X, y, _, _ = make_lad(300_000, 20, seed=1)
    data = LADData.from_arrays(X, y)
    model = LADModel()
    seen, kept = [], []
    original_bound, original_promising = LADModel.lower_bound, LADModel._promising

    def recorded(self, data, solution, evaluation, upper, dual=None, *, aggregate=None):
        seen.append((solution, evaluation, upper))
        return original_bound(self, data, solution, evaluation, upper, dual, aggregate=aggregate)

    def counted(self, candidates, *args):
        out = original_promising(self, candidates, *args)
        kept.append((len(candidates), len(out)))
        return out

    monkeypatch.setattr(LADModel, "lower_bound", recorded)
    monkeypatch.setattr(LADModel, "_promising", counted)
    result = AIDSolver(model, tol=1e-8).solve(data)
    assert result.status is AIDStatus.OPTIMAL and result.iterations == 2
    assert any(after < before for before, after in kept)
    monkeypatch.setattr(LADModel, "lower_bound", original_bound)
    for solution, evaluation, upper in seen:
        pruned = model.lower_bound(data, solution, evaluation, upper)
        with monkeypatch.context() as every:
            every.setattr(LADModel, "_promising", _all_candidates)
            full = model.lower_bound(data, solution, evaluation, upper)
        assert pruned.value >= full.value - 1e-9 * abs(full.value)


def test_a_dominated_candidate_is_dropped_and_incomparable_ones_kept():
    S = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 2.0, 0.0]])  # p × K cluster sums
    gram = (S / 1.0) @ S.T
    y_sum = np.array([1.0, 2.0, 3.0, 4.0])
    good = np.array([1.0, -1.0, -1.0, 1.0])  # S s = (0, 0), sᵀY = 2
    worse = np.array([1.0, -1.0, -1.0, 0.5])  # value 0, residual > 0: dominated by good
    other = np.array([1.0, 1.0, 1.0, 1.0])  # value 10 but a residual: incomparable
    model = LADModel()
    kept = model._promising([(good, "a"), (worse, "b"), (other, "c")], S, y_sum, gram)
    assert [what for _, what in kept] == ["a", "c"]
    twins = model._promising([(good, "a"), (good.copy(), "b")], S, y_sum, gram)
    assert [what for _, what in twins] == ["a"]


def test_quantile_costs_state_how_far_the_float_costs_are_from_exact():
    """c⁻ = fl(1 − τ) differs from the exact 1 − τ for some τ < ½ (the certificate charges the
    difference); for τ ≥ ½ the subtraction is exact (Sterbenz) and nothing is charged."""
    from fractions import Fraction

    from aidopt.models.lad import QuantileModel

    differ = 0
    for tau in np.linspace(0.01, 0.99, 99):
        model = QuantileModel(float(tau))
        c_plus, c_minus = model.costs()
        gap = abs(Fraction(c_minus) - (1 - Fraction(float(tau))))
        assert Fraction(model.cost_error()) >= gap
        assert c_plus == float(tau)
        if tau >= 0.5:
            assert model.cost_error() == 0.0
        differ += gap > 0
    assert differ > 0  # the case the charge is for exists
