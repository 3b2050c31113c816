"""The working-set decomposition for a kernel box QP (aidopt/solvers/kernel_decomposition.py) and
the LM-OCSVM's full-problem route through it: the same optimum as the dense box-QP solver on the
formed Gram matrix, shrinking undone before it stops, time limits, and the certificate on all rows
equal to AID's on the centroid Gram."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_moons

from aidopt.core.driver import solve
from aidopt.data import FeatureData
from aidopt.exceptions import SolverCapabilityError
from aidopt.models.ocsvm_kernel import KernelOneClassModel
from aidopt.numerics.kernels import Kernel
from aidopt.solvers.box_qp import box_qp, box_qp_from
from aidopt.solvers.kernel_decomposition import DecompositionSolver, kernel_box_qp
from aidopt.solvers.structures import KernelBoxQP


def _value(K, p, a):
    return 0.5 * a @ K @ a - p @ a


CASES = [
    # (kernel, rows, upper bound of the box, working set): small q forces many iterations and
    # shrinking; weighted boxes; a box so large that no row is bounded
    (Kernel("rbf", gamma=8.0), 400, 0.03, 10),
    (Kernel("rbf", gamma=0.5), 300, 1.0, 25),
    (Kernel("poly", gamma=0.5, degree=3, coef0=1.0), 250, 0.01, 16),
    (Kernel("rbf", gamma=2.0), 350, "weighted", 20),
]


@pytest.mark.parametrize("kernel, n, top, q", CASES)
def test_the_optimum_of_the_dense_box_qp_on_the_formed_gram(kernel, n, top, q):
    rng = np.random.default_rng(n)
    X, _ = make_moons(n, noise=0.08, random_state=n)
    upper = rng.uniform(0.005, 0.05, n) if top == "weighted" else np.full(n, top)
    K = kernel(X, X)
    p = np.ones(n)
    ours = kernel_box_qp(X, kernel, upper, working_set=q, tol=1e-12)
    dense = box_qp(K, p, np.zeros(n), upper)
    assert ours.message == "optimal" and dense.converged
    assert ours.iterations > 1
    assert np.all(ours.a >= 0.0) and np.all(ours.a <= upper)
    assert _value(K, p, ours.a) <= _value(K, p, dense.a) + 1e-10 * abs(_value(K, p, dense.a))
    G = K @ ours.a - p  # the duality gap at the answer, on a freshly formed gradient
    gap = ours.a @ G + upper @ np.maximum(-G, 0.0)
    assert 0.0 <= gap <= 1e-9 * abs(_value(K, p, ours.a))


@pytest.mark.parametrize("gamma", [0.05, 8.0])  # ill / well conditioned blocks
def test_box_qp_from_a_feasible_start_reaches_the_box_qp_optimum(gamma):
    X, _ = make_moons(80, noise=0.1, random_state=3)
    Q = Kernel("rbf", gamma=gamma)(X, X)
    p = np.random.default_rng(3).uniform(0.0, 2.0, 80)
    upper = np.full(80, 0.5)
    start = np.random.default_rng(4).uniform(0.0, 0.5, 80)
    found, reference = box_qp_from(Q, p, np.zeros(80), upper, start), box_qp(Q, p, 0.0 * p, upper)
    assert found.converged and reference.converged
    assert np.all(found.a >= 0.0) and np.all(found.a <= upper)
    ours, best = _value(Q, p, found.a), _value(Q, p, reference.a)
    assert ours <= best + 1e-10 * abs(best)


def test_a_linear_term_other_than_ones():
    X, _ = make_moons(200, noise=0.1, random_state=1)
    kernel = Kernel("rbf", gamma=1.0)
    p = np.random.default_rng(2).uniform(-1.0, 2.0, 200)
    upper = np.full(200, 0.1)
    ours = kernel_box_qp(X, kernel, upper, p, working_set=12, tol=1e-12)
    dense = box_qp(kernel(X, X), p, np.zeros(200), upper)
    np.testing.assert_allclose(ours.a, dense.a, atol=1e-8)


def test_shrunk_rows_are_checked_again_before_it_stops(monkeypatch):
    """A shrunk row whose gradient would change sign must be brought back: the final check runs
    on every row with a gradient rebuilt from the support."""
    import aidopt.solvers.kernel_decomposition as module

    rebuilt = []

    class Counting(Kernel):
        def __call__(self, A, B):
            rebuilt.append((A.shape[0], B.shape[0]))
            return super().__call__(A, B)

    kernel = Kernel("rbf", gamma=8.0)
    counting = Counting("rbf", gamma=8.0)

    X, _ = make_moons(1500, noise=0.06, random_state=0)
    found = module.kernel_box_qp(X, counting, np.full(1500, 0.028), working_set=40, tol=1e-12)
    assert found.message == "optimal"
    assert any(rows < 1500 for rows, _ in rebuilt)  # some blocks ran on the active rows only
    K = kernel(X, X)
    G = K @ found.a - 1.0
    at_zero, at_top = found.a == 0.0, found.a == 0.028
    assert np.all(G[at_zero] >= -1e-9) and np.all(G[at_top] <= 1e-9)


def test_a_time_limit_stops_it_without_an_answer():
    X, _ = make_moons(3000, noise=0.06, random_state=0)
    structure = KernelBoxQP(X, Kernel("rbf", gamma=8.0), np.full(3000, 0.03))
    answer, result = DecompositionSolver().solve_structure(structure, time_limit=0.0)
    assert answer is None and result.status.value == "time_limit"


def test_the_full_route_is_certified_and_equals_aid_on_the_centroid_gram():
    X, _ = make_moons(1500, noise=0.06, random_state=4)
    data, model = FeatureData.from_arrays(X), KernelOneClassModel(C=280.0, gamma=8.0)
    full = solve(model, data, tol=1e-7)  # the default: decomposition on all rows
    aid = solve(model, data, tol=1e-7, solver="boxqp")
    assert full.solver == "decomposition" and full.iterations == 1
    assert full.status.value == "optimal" and aid.status.value == "optimal"
    assert full.objective == pytest.approx(aid.objective, rel=2e-7)
    assert full.lower_bound <= aid.objective * (1 + 1e-12)


def test_row_weights_are_the_repeated_rows():
    X, _ = make_moons(300, noise=0.06, random_state=5)
    weight = np.random.default_rng(5).integers(1, 4, 300)
    model = KernelOneClassModel(C=50.0, gamma=4.0)
    weighted = solve(model, FeatureData.from_arrays(X, weight=weight.astype(float)), tol=1e-8)
    repeated = solve(model, FeatureData.from_arrays(np.repeat(X, weight, axis=0)), tol=1e-8)
    assert weighted.status.value == repeated.status.value == "optimal"
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-7)


def test_aggregation_is_refused_with_a_clear_message():
    X, _ = make_moons(400, noise=0.06, random_state=0)
    with pytest.raises(SolverCapabilityError, match="leave out --rate"):
        solve(KernelOneClassModel(C=100.0, gamma=8.0), FeatureData.from_arrays(X), rate=0.1)
