"""The PU model of models/pu.py: the Pyomo QPs (5)/(6) solved by a solver = USMO, both paths of
the aggregated problem agree, bias, span reduction, a wrong solver answer never certified, bad
input."""

from __future__ import annotations

import importlib.util
import inspect
import math
import pickle
import re

import numpy as np
import pyomo.environ as pyo
import pytest
from pu_reference import dual_model, primal_kernel_model, primal_linear_model

from aidopt import AIDSolver, AIDStatus
from aidopt.core.contract import Previous
from aidopt.core.partition import Partition
from aidopt.core.registry import get_solver
from aidopt.core.routes import solve_aggregated
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.models.pu import (
    PUData,
    PUModel,
    double_hinge,
    optimal_bias,
)
from aidopt.numerics.kernels import Kernel
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.structures import PULearning
from aidopt.solvers.usmo import usmo

LINEAR = Kernel("linear")
RBF = Kernel("rbf", gamma=0.5)
HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
PYOMO_HIGHS = get_solver("pyomo:highs")  # Pyomo's HiGHS interface (QP); small sizes only


def instance(seed: int, n: int = 50, d: int = 3, prior: float = 0.4) -> PUData:
    """Two Gaussian classes; 20% of the positives labeled (the rows are shuffled)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < prior
    X = rng.normal(size=(n, d))
    X[y] += 1.0
    labeled = np.zeros(n, dtype=bool)
    pos = np.flatnonzero(y)
    labeled[rng.choice(pos, size=max(1, pos.size // 5), replace=False)] = True
    return PUData.from_arrays(X, labeled)


def solve_pyomo(model: pyo.ConcreteModel, solver: str = "pyomo:highs") -> float:
    result = get_solver(solver).solve_pyomo(model)
    assert result.status is SolveStatus.OPTIMAL
    return float(pyo.value(model.objective))


def primal_objective(data: PUData, prior: float, lam: float, f: np.ndarray, norm_sq: float):
    """(5) at a decision function: ½‖f − β‖² − c1 Σ_P f + c2 Σ_U ℓ(f)."""
    p, n = data.n_labeled, data.n_unlabeled
    c1, c2 = prior / (2 * lam * p), 1 / (2 * lam * n)
    return 0.5 * norm_sq - c1 * f[data.labeled].sum() + c2 * double_hinge(f[~data.labeled]).sum()


# ---------------------------------------------------------------------- USMO = full QP (Pyomo)
@pytest.mark.parametrize(("seed", "prior", "lam"), [(0, 0.4, 0.01), (1, 0.3, 0.1), (2, 0.5, 1e-3)])
def test_usmo_equals_pyomo_primal_linear(seed: int, prior: float, lam: float) -> None:
    data = instance(seed, n=60)
    ones = np.ones(data.n)
    full_qp = solve_pyomo(primal_linear_model(data.X, ones, data.labeled, prior, lam))
    res = usmo(data.X, data.labeled, prior=prior, lam=lam, tol=1e-10)
    assert res.primal_objective == pytest.approx(full_qp, rel=1e-6)
    # the (5) value of USMO's (w, β), evaluated on the data, is the same number
    f = data.X @ res.coef + res.bias
    value = primal_objective(data, prior, lam, f, float(res.coef @ res.coef))
    assert value == pytest.approx(full_qp, rel=1e-6)


@pytest.mark.parametrize(("seed", "prior", "lam"), [(3, 0.4, 0.01), (4, 0.3, 0.1)])
def test_usmo_equals_pyomo_dual_rbf(seed: int, prior: float, lam: float) -> None:
    """(6) in Pyomo (max form: its optimum is min (5)) = USMO's primal, and = (5) in α."""
    data = instance(seed, n=45)
    K, ones = RBF(data.X, data.X), np.ones(data.n)
    dual = solve_pyomo(dual_model(K, ones, data.labeled, prior, lam))
    res = usmo(data.X, data.labeled, prior=prior, lam=lam, kernel=RBF, tol=1e-10)
    assert res.primal_objective == pytest.approx(dual, rel=1e-6)
    assert -(
        res.dual_objective + 0.5 * res.c1**2 * K[np.ix_(data.labeled, data.labeled)].sum()
    ) == (pytest.approx(dual, rel=1e-6))


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
def test_kernel_primal_equals_dual_on_gurobi() -> None:
    """(5) with the kernel matrix as a parameter and (6): one optimum (strong duality)."""
    data = instance(5, n=30)
    K, ones = RBF(data.X, data.X), np.ones(data.n)
    primal = solve_pyomo(primal_kernel_model(K, ones, data.labeled, 0.4, 0.05), "gurobi")
    dual = solve_pyomo(dual_model(K, ones, data.labeled, 0.4, 0.05), "gurobi")
    res = usmo(data.X, data.labeled, prior=0.4, lam=0.05, kernel=RBF, tol=1e-10)
    assert primal == pytest.approx(dual, rel=1e-6)
    assert res.primal_objective == pytest.approx(primal, rel=1e-6)


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
def test_linear_primal_on_gurobi_equals_usmo() -> None:
    data = instance(6, n=80)
    value = solve_pyomo(
        primal_linear_model(data.X, np.ones(data.n), data.labeled, 0.4, 0.01), "gurobi"
    )
    res = usmo(data.X, data.labeled, prior=0.4, lam=0.01, tol=1e-10)
    assert res.primal_objective == pytest.approx(value, rel=1e-6)


def test_precomputed_gram_equals_feature_path() -> None:
    data = instance(7, n=80)
    w = np.random.default_rng(7).integers(1, 4, size=data.n).astype(float)
    kw = {"prior": 0.4, "lam": 0.01, "weights": w, "tol": 1e-10}
    feature = usmo(data.X, data.labeled, kernel=RBF, **kw)
    gram = usmo(RBF(data.X, data.X), data.labeled, kernel="precomputed", **kw)
    assert gram.dual_objective == pytest.approx(feature.dual_objective, rel=1e-12)
    np.testing.assert_allclose(gram.sigma, feature.sigma, atol=1e-9 * feature.c2)
    X_new = np.random.default_rng(8).normal(size=(6, data.m))
    np.testing.assert_allclose(
        gram.decision_function(None, RBF(X_new, data.X)),
        feature.decision_function(data.X, X_new),
        atol=1e-9,
    )
    np.testing.assert_allclose(feature.train_decision, feature.decision_function(data.X, data.X))
    assert feature.norm_sq == pytest.approx(feature.alpha @ RBF(data.X, data.X) @ feature.alpha)
    with pytest.raises(DataError, match="square Gram matrix"):
        usmo(data.X, data.labeled, kernel="precomputed", prior=0.4, lam=0.01)


# ---------------------------------------------------------------------- the aggregated problem
@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_pyomo_matrix_and_usmo_paths_agree(kernel: Kernel) -> None:
    """One aggregated problem (random clusters): Pyomo (5)/(6), the matrix form on HiGHS and
    weighted USMO reach the same F^t; the bounds each path reports bracket it."""
    data = instance(9, n=200)
    model = PUModel(prior=0.4, lam=0.01, kernel=kernel)
    labels = np.where(data.labeled, 0, 1 + np.random.default_rng(9).integers(0, 25, data.n))
    agg = model.aggregate(data, Partition.from_labels(labels))
    pyomo_model = model.build(agg)
    via_pyomo = solve_pyomo(pyomo_model)
    s_pyomo = model.extract(pyomo_model, agg)
    program = model.matrix_program(agg)
    res = get_solver("highs").solve_program(program, options={"qp_regularization_value": 0.0})
    assert res.status is SolveStatus.OPTIMAL
    s_matrix = model.solution_from_program(res, agg)
    s_usmo, r_usmo = solve_aggregated(model, agg, "usmo", options={"tol": 1e-10})
    values = [_aggregated_value(model, agg, s) for s in (s_pyomo, s_matrix, s_usmo)]
    for v in values:
        assert v == pytest.approx(via_pyomo, rel=1e-6)
    bound = model.program_bound(res, agg)
    assert bound <= via_pyomo + 1e-6 * abs(via_pyomo)
    assert bound == pytest.approx(via_pyomo, rel=1e-6)
    assert r_usmo.bound <= r_usmo.objective and r_usmo.bound == pytest.approx(via_pyomo, rel=1e-6)


def _aggregated_value(model: PUModel, agg, solution) -> float:
    """The aggregated (5) at a solution: weighted centroid losses, original c1, c2."""
    c1 = model.prior / (2 * model.lam * agg.weight[agg.labeled].sum())
    c2 = 1 / (2 * model.lam * agg.weight[~agg.labeled].sum())
    if solution.coef is not None:
        F = agg.xbar @ solution.coef
    else:
        F = agg.gram @ (solution.entry_coef * agg.weight)
    f = F + solution.bias
    return (
        0.5 * solution.norm_sq
        - c1 * agg.weight[agg.labeled] @ f[agg.labeled]
        + c2 * agg.weight[~agg.labeled] @ double_hinge(f[~agg.labeled])
    )


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy not installed")
def test_span_reduction_is_exact_and_fits_gurobi() -> None:
    """d = 300 features, 40 clusters: (5) in the centroids' span has 40 + 1 + 39 variables."""
    rng = np.random.default_rng(10)
    data = instance(10, n=400, d=300)
    labels = np.where(data.labeled, 0, 1 + rng.integers(0, 39, data.n))
    agg_partition = Partition.from_labels(labels)
    reduced = PUModel(prior=0.4, lam=0.01)
    full = PUModel(prior=0.4, lam=0.01, span_reduction=False)
    agg = reduced.aggregate(data, agg_partition)
    m_reduced = reduced.build(agg)
    assert m_reduced.nvariables() <= 200 < full.build(agg).nvariables()
    value = solve_pyomo(m_reduced, "gurobi")
    s_reduced = reduced.extract(m_reduced, agg)
    s_usmo, _ = solve_aggregated(full, agg, "usmo", options={"tol": 1e-10})
    assert value == pytest.approx(_aggregated_value(full, agg, s_usmo), rel=1e-6)
    np.testing.assert_allclose(s_reduced.coef, s_usmo.coef, atol=1e-5 * np.abs(s_usmo.coef).max())


def test_wrong_optimal_answer_is_never_certified(monkeypatch) -> None:
    """A solver reporting 'optimal' at a non-optimal dual point (HiGHS 1.15 did) gives a
    solution whose weak-duality bound shows the gap, and a run on that solver never ends
    ``optimal``: the certificate is proven on the data, whatever the solver reports."""
    data = instance(11, n=120)
    model = PUModel(prior=0.4, lam=0.01, kernel=RBF)

    def wrong(self, program, **kwargs):  # σ feasible for (6), far from optimal
        nu = program.c.size // 2
        sigma = np.full(nu, 0.4 / (2 * 0.01) / nu)
        return SolveResult(
            status=SolveStatus.OPTIMAL, objective=0.0, bound=0.0, x=np.r_[sigma, sigma]
        )

    monkeypatch.setattr(HighsAdapter, "solve_program", wrong)
    agg = model.aggregate(data, Partition.singletons(data.n))
    solution, result = solve_aggregated(model, agg, "highs")
    value = _aggregated_value(model, agg, solution)
    assert result.bound < value - 1e-3 * abs(value)
    with pytest.warns(ConvergenceWarning, match="proven gap"):
        aid = AIDSolver(model, solver="highs", tol=0.0).solve(data)
    assert aid.status is not AIDStatus.OPTIMAL
    full = AIDSolver(PUModel(prior=0.4, lam=0.01, kernel=RBF), solver="usmo").solve_full(data)
    assert aid.lower_bound is None or aid.lower_bound <= full.objective + 1e-9 * abs(full.objective)


def test_optimal_bias_is_the_minimiser() -> None:
    rng = np.random.default_rng(12)
    for _ in range(50):
        F, w = rng.normal(scale=2, size=15), rng.integers(1, 4, 15).astype(float)
        c2, c1p = 1 / (2 * w.sum()), rng.uniform(0.05, 0.95) / 2

        def g(b, F=F, w=w, c2=c2, c1p=c1p):  # b: an array of biases
            return -c1p * b + c2 * double_hinge(F[None, :] + b[:, None]) @ w

        beta = optimal_bias(F, w, c1p, c2)
        assert g(np.array([beta]))[0] <= g(np.linspace(-8, 8, 16001)).min() + 1e-12


def test_structure_forms_and_warm_start() -> None:
    """PULearning: the centroids (linear), the centroid Gram as a precomputed kernel (rbf), the
    rows themselves (singletons); after a split each child starts from its share of its
    parent's σ (same Σσ = π/(2λ), inside the box)."""
    data = instance(16, n=150)
    rng = np.random.default_rng(16)
    part = Partition.from_labels(np.where(data.labeled, 0, 1 + rng.integers(0, 8, data.n)))
    linear, rbf = PUModel(prior=0.4), PUModel(prior=0.4, kernel=RBF)
    agg = rbf.aggregate(data, part)
    pu = rbf.to_structure(PULearning, agg, None)
    assert pu.kernel == "precomputed" and pu.X is agg.gram and pu.start == "feasible"
    pu = rbf.to_structure(PULearning, rbf.aggregate(data, Partition.singletons(data.n)), None)
    assert pu.kernel == RBF
    np.testing.assert_array_equal(pu.X, data.X)
    lin_agg = linear.aggregate(data, part)
    pu = linear.to_structure(PULearning, lin_agg, None)
    assert pu.kernel == LINEAR
    np.testing.assert_array_equal(pu.X, lin_agg.xbar)
    np.testing.assert_array_equal(pu.weight, lin_agg.weight)

    solution, result = solve_aggregated(rbf, agg, "usmo")
    child, _ = part.split(np.where(data.labeled, 0, rng.integers(0, 2, data.n)))
    child_agg = rbf.aggregate(data, child)
    start = rbf.to_structure(PULearning, child_agg, Previous(agg, solution, result)).start
    target = 0.4 / (2 * 0.01)
    assert math.fsum(start) == pytest.approx(target, rel=1e-12)
    c2 = 1 / (2 * 0.01 * data.n_unlabeled)
    assert np.all(start >= 0) and np.all(
        start <= c2 * child_agg.weight[~child_agg.labeled] * (1 + 1e-12)
    )
    parent_of = child.parent[~child_agg.labeled]
    sums = np.bincount(parent_of, weights=start, minlength=agg.weight.size)
    np.testing.assert_allclose(sums[~agg.labeled], solution.cluster_sigma[~agg.labeled])


def test_options_round_trip_through_the_params() -> None:
    """summary() → from_options rebuilds the model (``aidopt verify``); a kernel named by kind
    takes only the parameters it uses, as on the command line."""
    for kernel in (LINEAR, RBF, Kernel("poly", gamma=0.3, degree=2, coef0=0.5)):
        model = PUModel(prior=0.3, lam=0.05, kernel=kernel, span_reduction=False)
        again = PUModel.from_options(**model.summary())
        assert again.summary() == model.summary() and again.kernel == kernel
    assert PUModel.from_options(prior=0.3).kernel == LINEAR
    with pytest.raises(InvalidParameterError, match="--degree has no effect with --kernel rbf"):
        PUModel.from_options(prior=0.3, kernel="rbf", degree=2)
    with pytest.raises(InvalidParameterError, match="belong to the Kernel"):
        PUModel.from_options(prior=0.3, kernel=RBF, gamma=0.1)


def test_a_kernel_other_than_linear_makes_the_kernel_model() -> None:
    """``PUModel(kernel=...)`` stays the one entry point: the linear kernel is the primal (5)
    (``models/pu.py``), any other the dual (6) (``models/pu_kernel.py``), however it is built."""
    from aidopt.models.pu_kernel import KernelPUModel

    rbf = PUModel(0.3, 0.05, RBF)  # positional, as the generated __init__ takes them
    assert isinstance(rbf, KernelPUModel) and (rbf.prior, rbf.lam, rbf.kernel) == (0.3, 0.05, RBF)
    assert type(PUModel(prior=0.3, kernel=Kernel("poly", degree=2))) is KernelPUModel
    assert type(PUModel(prior=0.3)) is PUModel and type(PUModel(0.3, 0.1, LINEAR)) is PUModel
    assert type(PUModel.from_options(prior=0.3, kernel="rbf", gamma=0.5)) is KernelPUModel
    assert type(pickle.loads(pickle.dumps(rbf))) is KernelPUModel
    assert pickle.loads(pickle.dumps(rbf)).summary() == rbf.summary()
    assert PUModel.variants() == {"--kernel linear": PUModel, "--kernel rbf|poly": KernelPUModel}
    assert list(inspect.signature(PUModel).parameters) == [o.name for o in PUModel.options]


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("prior", [0.0, 1.0, 1.5, -0.2, math.nan, "0.4"])
def test_prior_outside_open_interval(prior) -> None:
    data = instance(13, n=30)
    with pytest.raises(InvalidParameterError, match=re.escape("The 'prior' parameter of PUModel")):
        AIDSolver(PUModel(prior=prior), solver="usmo").solve(data)


@pytest.mark.parametrize("lam", [0.0, -0.01, math.inf])
def test_lambda_not_positive(lam) -> None:
    data = instance(14, n=30)
    with pytest.raises(
        InvalidParameterError,
        match=re.escape("The 'lam' parameter of PUModel must be a float in the range (0.0, inf)"),
    ):
        AIDSolver(PUModel(prior=0.4, lam=lam), solver="usmo").solve_full(data)


def test_bad_data() -> None:
    X = np.random.default_rng(15).normal(size=(20, 2))
    with pytest.raises(DataError, match="No labeled positives"):
        PUData.from_arrays(X, np.zeros(20))
    with pytest.raises(DataError, match="No unlabeled rows"):
        PUData.from_arrays(X, np.ones(20))
    with pytest.raises(DataError, match=r"must be 1 \(labeled positive\) or 0 \(unlabeled\)"):
        PUData.from_arrays(X, np.r_[np.ones(5), -np.ones(15)])
    with pytest.raises(DataError, match="labels have shape"):
        PUData.from_arrays(X, np.ones(19))
    with pytest.raises(DataError, match="NaN"):
        PUData.from_arrays(np.where(X > 1, np.nan, X), np.r_[np.ones(5), np.zeros(15)])
    with pytest.raises(InvalidParameterError, match="'kernel' parameter of PUModel"):
        PUModel(prior=0.4, kernel="rbf").check_params()
    with pytest.raises(InvalidParameterError, match="Unknown USMO option"):
        AIDSolver(PUModel(prior=0.4), solver="usmo", solver_options={"eps": 1}).solve(
            PUData.from_arrays(X, np.r_[np.ones(5), np.zeros(15)])
        )
