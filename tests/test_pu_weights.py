"""PU learning with row weights and with sparse X: integer weights = repeated rows, real weights
= an independent full solve (cvxpy + Clarabel on the weighted (5)/(6)), the certificate below
it, and sparse = dense."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt import AIDSolver, AIDStatus
from aidopt.exceptions import DataError
from aidopt.models.pu import PUData, PUModel
from aidopt.numerics.kernels import Kernel

cp = pytest.importorskip("cvxpy")

LINEAR = Kernel("linear")
RBF = Kernel("rbf", gamma=0.5)
PRIOR, LAM = 0.4, 0.05


def sample(seed: int, n: int, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < PRIOR
    X = rng.normal(size=(n, d))
    X[y] += 1.0
    labeled = np.zeros(n, dtype=bool)
    pos = np.flatnonzero(y)
    labeled[rng.choice(pos, size=pos.size // 4, replace=False)] = True
    return X, labeled


def solve(model: PUModel, data: PUData, **options):
    return AIDSolver(model, tol=1e-9, **options).solve(data)


def clarabel_weighted(X, labeled, omega, kernel: Kernel) -> float:
    """min (5) with loss terms × ω_i, c1 = π/(2λ Σ_P ω), c2 = 1/(2λ Σ_U ω): the primal with w
    explicit (linear) or −((6) + ½ c1² ω_Pᵀ K_PP ω_P) (other kernels), on the full data."""
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    c1 = PRIOR / (2 * LAM * omega[P].sum())
    c2 = 1.0 / (2 * LAM * omega[U].sum())
    opts = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11}
    if kernel.kind == "linear":
        w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(U.size)
        f_u = X[U] @ w + b
        objective = (
            0.5 * cp.sum_squares(w)
            - c1 * (omega[P] @ X[P] @ w + omega[P].sum() * b)
            + c2 * (omega[U] @ xi)
        )
        problem = cp.Problem(cp.Minimize(objective), [xi >= 0, xi >= f_u, xi >= 0.5 + 0.5 * f_u])
        problem.solve(solver="CLARABEL", **opts)
        assert problem.status == "optimal"
        return float(problem.value)
    K = kernel(X, X)
    alpha_p = c1 * omega[P]
    s, d = cp.Variable(U.size), cp.Variable(U.size)
    box = c2 * omega[U]
    objective = (
        0.5 * cp.quad_form(s, cp.psd_wrap(K[np.ix_(U, U)]))
        - (K[np.ix_(U, P)] @ alpha_p) @ s
        - 0.5 * cp.sum(d)
    )
    constraints = [cp.sum(s) == PRIOR / (2 * LAM), s + d / 2 <= box, s - d / 2 >= 0, d >= 0]
    problem = cp.Problem(cp.Minimize(objective), [*constraints, d <= box])
    problem.solve(solver="CLARABEL", **opts)
    assert problem.status == "optimal"
    return -(float(problem.value) + 0.5 * float(alpha_p @ K[np.ix_(P, P)] @ alpha_p))


@pytest.mark.parametrize(
    ("kernel", "solver"), [(LINEAR, "usmo"), (LINEAR, "highs"), (RBF, "usmo")], ids=str
)
def test_integer_weights_are_repeated_rows(kernel, solver):
    X, labeled = sample(0, 300)
    counts = np.random.default_rng(1).integers(1, 4, size=300)
    model = PUModel(prior=PRIOR, lam=LAM, kernel=kernel)
    weighted = solve(model, PUData.from_arrays(X, labeled, weight=counts), solver=solver)
    repeated = PUData.from_arrays(np.repeat(X, counts, axis=0), np.repeat(labeled, counts))
    plain = solve(PUModel(prior=PRIOR, lam=LAM, kernel=kernel), repeated, solver=solver)
    assert weighted.status is plain.status is AIDStatus.OPTIMAL
    assert weighted.objective == pytest.approx(plain.objective, rel=1e-7)


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_real_weights_reach_the_full_optimum_and_bound_it(kernel, scale):
    X, labeled = sample(2, 250)
    omega = scale * np.random.default_rng(3).uniform(0.1, 5.0, size=250)
    result = solve(
        PUModel(prior=PRIOR, lam=LAM, kernel=kernel), PUData.from_arrays(X, labeled, weight=omega)
    )
    reference = clarabel_weighted(X, labeled, omega, kernel)
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(reference, rel=1e-6, abs=1e-9)
    assert result.certificate.lower_bound <= reference + 1e-7 * abs(reference)
    sigma = result.certificate.dual.expand(250, None)
    c2 = 1.0 / (2 * LAM * omega[~labeled].sum())
    assert np.all(sigma <= c2 * omega * (1 + 1e-12))  # the box of row u is [0, c2 ω_u]


def test_sparse_x_equals_dense_and_the_kernel_refuses_it():
    X, labeled = sample(4, 400, d=6)
    X[np.abs(X) < 0.8] = 0.0
    omega = np.random.default_rng(5).uniform(0.5, 2.0, size=400)
    model = PUModel(prior=PRIOR, lam=LAM)
    dense = solve(model, PUData.from_arrays(X, labeled, weight=omega))
    sparse = solve(
        PUModel(prior=PRIOR, lam=LAM), PUData.from_arrays(sp.csr_matrix(X), labeled, weight=omega)
    )
    assert sparse.status is dense.status is AIDStatus.OPTIMAL
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-9)
    np.testing.assert_allclose(sparse.solution.coef, dense.solution.coef, rtol=1e-6, atol=1e-9)
    with pytest.raises(DataError, match="needs dense X"):
        rbf = PUModel(prior=PRIOR, lam=LAM, kernel=RBF)
        solve(rbf, PUData.from_arrays(sp.csr_matrix(X), labeled))


def test_the_dual_box_lies_inside_the_exact_one_whatever_the_weights():
    """σ's box c2'ω (c2 = 1/(2λn), n = Σ_U ω_i a float sum) is inside the exact box [0, c2ω] in
    rational arithmetic, on the solve's path (the aggregate's candidates) and on the path of
    ``aidopt verify`` (the data's): c2 computed from rounded totals may exceed the exact one,
    and a σ at the computed box would leave the dual's domain."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    for draw in range(40):
        n = int(rng.integers(50, 400))
        X = rng.normal(size=(n, 2))
        labels = (rng.random(n) < 0.3).astype(float)
        labels[:2] = [1.0, 0.0]
        weight = rng.lognormal(0.0, 2.0, n) * 10.0 ** rng.integers(-6, 7)
        data = PUData.from_arrays(X, labels, weight=weight)
        lam = float(rng.uniform(1e-3, 1.0))
        model = PUModel(prior=0.4, lam=lam)
        exact_n = sum(Fraction(float(w)) for w in weight[labels == 0])
        exact_c2 = 1 / (2 * Fraction(lam) * exact_n)
        box = model._limits(data).box
        unl = np.flatnonzero(labels == 0)
        assert all(Fraction(float(box[i])) <= exact_c2 * Fraction(float(weight[i])) for i in unl)
        part = model.initial_partition(data, 0.2, rng)
        agg = model.aggregate(data, part)
        fit = AIDSolver(model, solver="usmo", max_iter=1).solve(data).solution
        candidates, _ = model.bound_candidates(agg, fit)
        for d, _what in candidates:
            assert Fraction(float(d[0, 2])) <= exact_c2, draw
