"""AID for PU: certified optimum = full QP optimum, monotone lower bounds, Σσ = π/(2λ) at every
step, purity, Jensen's bound, and the cluster kernel sums behind the kernel path."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest
from pu_reference import dual_model, primal_linear_model

from aidopt import AIDSolver, AIDStatus
from aidopt.core.driver import Hook
from aidopt.core.partition import Partition
from aidopt.core.registry import get_solver
from aidopt.data.pu import PAPER_PRIORS, load_uci, paper_split
from aidopt.models.pu import PUData, PUModel, double_hinge
from aidopt.numerics.kernels import Kernel
from aidopt.solvers.base import SolveStatus

LINEAR = Kernel("linear")
RBF = Kernel("rbf", gamma=0.5)


def instance(seed: int, n: int, d: int = 3, prior: float = 0.4) -> PUData:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < prior
    X = rng.normal(size=(n, d))
    X[y] += 1.0
    labeled = np.zeros(n, dtype=bool)
    pos = np.flatnonzero(y)
    labeled[rng.choice(pos, size=max(1, pos.size // 5), replace=False)] = True
    return PUData.from_arrays(X, labeled)


class Record(Hook):
    """Keeps every iteration's solution and partition."""

    def __init__(self) -> None:
        self.solutions, self.partitions = [], []

    def after_iteration(self, record, solution, partition) -> None:
        self.solutions.append(solution)
        self.partitions.append(partition)


def pyomo_full_qp(data: PUData, kernel: Kernel, prior: float, lam: float) -> float:
    """The full QP of models/pu.py in Pyomo ((5) with w explicit, or (6) with K) on HiGHS."""
    ones = np.ones(data.n)
    if kernel.kind == "linear":
        model = primal_linear_model(data.X, ones, data.labeled, prior, lam)
    else:
        model = dual_model(kernel(data.X, data.X), ones, data.labeled, prior, lam)
    assert get_solver("pyomo:highs").solve_pyomo(model).status is SolveStatus.OPTIMAL
    return float(pyo.value(model.objective))


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
@pytest.mark.parametrize(("seed", "n", "prior", "lam"), [(0, 150, 0.4, 0.01), (1, 120, 0.3, 0.1)])
def test_aid_optimum_equals_full_qp(kernel: Kernel, seed: int, n: int, prior: float, lam: float):
    data = instance(seed, n)
    hooks = Record()
    model = PUModel(prior=prior, lam=lam, kernel=kernel)
    aid = AIDSolver(model, solver="usmo", tol=0.0, hooks=[hooks]).solve(data)
    assert aid.status is AIDStatus.OPTIMAL and aid.iterations > 1
    full = AIDSolver(PUModel(prior=prior, lam=lam, kernel=kernel), solver="usmo").solve_full(data)
    reference = pyomo_full_qp(data, kernel, prior, lam)
    assert full.objective == pytest.approx(reference, rel=1e-6)
    assert aid.objective == pytest.approx(reference, rel=1e-6)
    # lower bounds F^t: valid, non-decreasing, and equal to the optimum at the certificate
    lower = aid.history["lower_bound"].to_numpy()
    assert np.all(lower <= reference + 1e-9 * abs(reference))
    assert np.all(np.diff(lower) >= -1e-9 * abs(reference))
    assert lower[-1] == pytest.approx(aid.objective, rel=1e-6)
    # every cluster pure at the final solution; all positives in one cluster
    final = hooks.partitions[-1]
    assert not final.impure(model.evaluate(data, aid.solution).regime).any()
    assert np.unique(final.labels[data.labeled]).size == 1
    # predictions agree with the full solve except at |f| ≈ 0
    f_aid = model.decision_function(data, aid.solution)
    f_full = model.decision_function(data, full.solution)
    np.testing.assert_allclose(f_aid, f_full, atol=1e-4 * np.abs(f_full).max())


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_sigma_sum_exact_in_every_aggregated_problem(kernel: Kernel) -> None:
    """Σσ = π/(2λ) (exactly rounded sum) in every aggregated USMO solution, warm starts too."""
    prior, lam = 0.35, 0.003
    data = instance(2, 400)
    hooks = Record()
    AIDSolver(
        PUModel(prior=prior, lam=lam, kernel=kernel), solver="usmo", tol=0.0, hooks=[hooks]
    ).solve(data)
    target = prior / (2 * lam)
    assert len(hooks.solutions) > 2
    for solution, partition in zip(hooks.solutions, hooks.partitions, strict=True):
        sigma = solution.cluster_sigma
        assert abs(math.fsum(sigma) - target) <= 1e-12 * target
        c2 = 1 / (2 * lam * data.n_unlabeled)
        assert np.all(sigma >= 0) and np.all(sigma <= c2 * partition.sizes * (1 + 1e-15))


def test_aid_on_highs_equals_usmo_linear() -> None:
    data = instance(3, 300)
    aid = AIDSolver(PUModel(prior=0.4, lam=0.01), solver="highs", tol=0.0).solve(data)
    full = AIDSolver(PUModel(prior=0.4, lam=0.01), solver="usmo").solve_full(data)
    assert aid.status is AIDStatus.OPTIMAL
    assert aid.objective == pytest.approx(full.objective, rel=1e-6)


def test_jensen_lower_bound_and_refinement() -> None:
    """For any (w, β): aggregated objective ≤ a refinement's ≤ the original (5)."""
    rng = np.random.default_rng(4)
    data = instance(4, 300, d=4)
    model = PUModel(prior=0.4, lam=0.01)
    coarse = np.where(data.labeled, 0, 1 + rng.integers(0, 5, data.n))
    fine = np.where(data.labeled, 0, 1 + coarse * 7 + rng.integers(0, 7, data.n))
    for _ in range(20):
        w, beta = rng.normal(size=4), rng.normal()
        values = []
        for labels in (coarse, fine, np.arange(data.n)):
            agg = model.aggregate(data, Partition.from_labels(labels))
            f = agg.xbar @ w + beta
            c1 = model.prior / (2 * model.lam * data.n_labeled)
            c2 = 1 / (2 * model.lam * data.n_unlabeled)
            values.append(
                0.5 * w @ w
                - c1 * agg.weight[agg.labeled] @ f[agg.labeled]
                + c2 * agg.weight[~agg.labeled] @ double_hinge(f[~agg.labeled])
            )
        assert values[0] <= values[1] + 1e-12 and values[1] <= values[2] + 1e-12


def test_cluster_kernel_sums_and_centroid_gram() -> None:
    """K̄ = brute-force mean of the full Gram per cluster pair, also after incremental splits
    (the kernel sums of the clusters a split left as they were taken from ``previous``)."""
    rng = np.random.default_rng(5)
    data = instance(5, 160)
    model = PUModel(prior=0.4, lam=0.01, kernel=RBF)
    K = RBF(data.X, data.X)
    part = Partition.from_labels(np.where(data.labeled, 0, 1 + rng.integers(0, 6, data.n)))
    agg = None
    for _ in range(3):
        agg = model.aggregate(data, part, previous=agg)
        S = part.indicator().toarray()
        expected = (S @ K @ S.T) / np.outer(part.sizes, part.sizes)
        np.testing.assert_allclose(agg.gram, expected, rtol=1e-12, atol=1e-14)
        part, _ = part.split(np.where(data.labeled, 0, rng.integers(0, 3, data.n)))


def test_rbf_mid_size_reaches_full_optimum() -> None:
    """The kernel path on a mid-size problem reaches the full optimum (USMO on all rows)."""
    data = instance(6, 1500, d=5)
    kw = {"prior": 0.4, "lam": 0.01, "kernel": Kernel("rbf", gamma=0.2)}
    aid = AIDSolver(PUModel(**kw), solver="usmo", tol=0.0).solve(data)
    full = AIDSolver(PUModel(**kw), solver="usmo").solve_full(data)
    assert aid.status is AIDStatus.OPTIMAL
    assert aid.objective == pytest.approx(full.objective, rel=1e-6)
    assert aid.final_rate < 0.5


UCI = Path(__file__).resolve().parents[2] / "shared" / "data" / "pu-uci"


@pytest.mark.skipif(not UCI.is_dir(), reason=f"{UCI} not present")
@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_uci_ionosphere_aid_equals_full(kernel: Kernel) -> None:
    """The paper's protocol on a real set: AID = USMO on all rows = the Pyomo QP."""
    X, y = load_uci("ionosphere", UCI)
    prior = PAPER_PRIORS["ionosphere"]
    data = PUData.from_arrays(X, paper_split(y, prior, np.random.default_rng(0)))
    model = PUModel(prior=prior, lam=0.01, kernel=kernel)
    aid = AIDSolver(model, solver="usmo", tol=0.0).solve(data)
    assert aid.status is AIDStatus.OPTIMAL
    assert aid.objective == pytest.approx(pyomo_full_qp(data, kernel, prior, 0.01), rel=1e-6)
