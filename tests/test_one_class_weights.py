"""Row weights in the one-class models (linear and kernel LM-OCSVM, SVDD), BSGD and libsvm:
integer weights = repeated rows, real weights = an independent full solve (cvxpy + Clarabel) with
the certificate below it, and the estimators' sample_weight."""

from __future__ import annotations

import numpy as np
import pytest

from aidopt import AIDSolver, AIDStatus
from aidopt.core.kernel_aggregate import KernelSums
from aidopt.data.containers import FeatureData
from aidopt.estimators import SupportVectorClustering, estimator_for
from aidopt.models.ocsvm import OneClassSVMModel
from aidopt.models.ocsvm_kernel import KernelOneClassModel
from aidopt.models.svdd import SVDDModel
from aidopt.numerics.kernels import Kernel

cp = pytest.importorskip("cvxpy")
GAMMA = 0.5
CLARABEL = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11}


def blobs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centre = np.where(rng.random(n) < 0.5, 2.0, 3.0)[:, None]
    return centre + 0.7 * rng.standard_normal((n, 2))


def models() -> dict[str, object]:
    return {
        "linear": OneClassSVMModel(C=4.0),
        "rbf": KernelOneClassModel(C=4.0, kernel="rbf", gamma=GAMMA),
        "svdd": SVDDModel(C=0.05, kernel="rbf", gamma=GAMMA),
    }


def solve(model, X, weight=None, solver=None, tol=1e-9):
    """AID (SVDD's default, the full problem on libsvm, certifies to ~1e-8 only: the tests of
    the weighted aggregation run SVDD on its AID route, boxqp)."""
    if solver is None and isinstance(model, SVDDModel) and tol < 1e-6:
        solver = "boxqp"
    data = FeatureData.from_arrays(X, weight=weight)
    return AIDSolver(model, solver=solver, tol=tol).solve(data)


def reference(name: str, X: np.ndarray, omega: np.ndarray) -> float:
    """The weighted optimum on all rows by Clarabel: the primal (1) for the linear model, the
    duals for the kernel ones (box [0, Cω_i/N], resp. Σβ = 1 and [0, Cω_i])."""
    N = omega.sum()
    if name == "linear":
        w = cp.Variable(X.shape[1])
        hinge = cp.pos(1 - X @ w)
        problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + 4.0 / N * (omega @ hinge)))
    else:
        K = Kernel("rbf", GAMMA)(X, X)
        a = cp.Variable(X.shape[0])
        quad = cp.quad_form(a, cp.psd_wrap(K))
        if name == "rbf":
            objective = cp.Maximize(cp.sum(a) - 0.5 * quad)
            constraints = [a >= 0, a <= 4.0 * omega / N]
        else:
            objective = cp.Maximize(cp.sum(a) - quad)  # K_ii = 1
            constraints = [a >= 0, a <= 0.05 * omega, cp.sum(a) == 1]
        problem = cp.Problem(objective, constraints)
    problem.solve(solver="CLARABEL", **CLARABEL)
    assert problem.status == "optimal"
    return float(problem.value)


@pytest.mark.parametrize("name", ["linear", "rbf", "svdd"])
def test_integer_weights_are_repeated_rows(name):
    X = blobs(240, 0)
    counts = np.random.default_rng(1).integers(1, 4, size=240)
    weighted = solve(models()[name], X, counts)
    repeated = solve(models()[name], np.repeat(X, counts, axis=0))
    assert weighted.status is repeated.status is AIDStatus.OPTIMAL
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-7)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("name", ["linear", "rbf", "svdd"])
def test_real_weights_reach_the_full_optimum_and_bound_it(name, scale):
    X = blobs(200, 2)
    omega = scale * np.random.default_rng(3).uniform(0.1, 5.0, size=200)
    if name == "svdd":
        omega = omega / scale  # C Σω ≥ 1 keeps SVDD feasible
    result = solve(models()[name], X, omega)
    ref = reference(name, X, omega)
    assert result.status is AIDStatus.OPTIMAL
    assert result.objective == pytest.approx(ref, rel=1e-6, abs=1e-10)
    assert result.certificate.lower_bound <= ref + 1e-8 * abs(ref)
    alpha = result.certificate.dual.expand(200, None)
    C = models()[name].C
    box = C * omega if name == "svdd" else C * omega / omega.sum()
    assert np.all(alpha <= box * (1 + 1e-12))  # the box of row i scales with ω_i


def test_weighted_svdd_on_its_default_route_is_certified():
    """The full problem on libsvm with sample weights, certified on all rows: the weighted
    optimum, and integer weights give the repeated rows' optimum."""
    X = blobs(200, 2)
    omega = np.random.default_rng(3).uniform(0.1, 5.0, size=200)
    model = models()["svdd"]
    result = solve(model, X, omega, tol=1e-6)
    assert result.solver == "libsvm" and result.final_rate == 1.0
    assert result.status is AIDStatus.OPTIMAL
    ref = reference("svdd", X, omega)
    assert result.objective == pytest.approx(ref, rel=1e-6)
    assert result.certificate.lower_bound <= ref + 1e-8 * abs(ref)
    counts = np.random.default_rng(1).integers(1, 4, size=200)
    weighted = solve(model, X, counts.astype(float), tol=1e-6)
    repeated = solve(model, np.repeat(X, counts, axis=0), tol=1e-6)
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-6)


def test_libsvm_with_sample_weight_is_weighted_svdd():
    from aidopt.svc.fit import fit_domain

    X = blobs(300, 4)
    omega = np.random.default_rng(5).uniform(0.5, 3.0, size=300)
    C = 0.02  # ν = 1/(C Σω)
    aid = solve(SVDDModel(C=C, kernel="rbf", gamma=GAMMA), X, omega)
    fit = fit_domain(X, "libsvm", C=C, gamma=GAMMA, sample_weight=omega)
    beta = fit.domain.coef / fit.domain.coef.sum()  # β = α/(νN)
    sv = fit.domain.support_vectors
    dual = 1.0 - beta @ Kernel("rbf", GAMMA)(sv, sv) @ beta  # Σβ K_ii − βᵀKβ, K_ii = 1
    assert aid.status is AIDStatus.OPTIMAL
    assert dual == pytest.approx(aid.objective, rel=1e-5)
    assert fit.info["nu"] == pytest.approx(1.0 / (C * omega.sum()))


def test_bsgd_draws_follow_the_weights_and_its_objective_is_above_the_certified_bound():
    from aidopt.svc.bsgd import bsgd_lmoc, lmoc_objective

    X = blobs(400, 6)
    omega = np.where(np.arange(400) < 200, 1.0, 1e-9)  # the second half is almost never drawn
    fit = bsgd_lmoc(X, 4.0, Kernel("rbf", GAMMA), budget=30, min_epochs=2.0, rng=0, weight=omega)
    assert fit.support.max() < 200
    aid = solve(KernelOneClassModel(C=4.0, kernel="rbf", gamma=GAMMA), X, omega)
    assert lmoc_objective(X, fit.domain, 4.0, omega) >= aid.certificate.lower_bound


def test_estimators_take_sample_weight():
    X = blobs(200, 7)
    counts = np.random.default_rng(8).integers(0, 3, size=200)
    est = SupportVectorClustering(method="aid", C=4.0, gamma=GAMMA)
    weighted = est.fit(X, sample_weight=counts)
    objective = weighted.result_.objective
    repeated = SupportVectorClustering(method="aid", C=4.0, gamma=GAMMA).fit(
        np.repeat(X, counts, axis=0)
    )
    assert weighted.status_ == repeated.status_ == "optimal"
    assert objective == pytest.approx(repeated.result_.objective, rel=1e-7)
    assert weighted.labels_.shape == (200,)  # every row is labelled, weight 0 too

    generic = estimator_for("svdd")(C=0.05, gamma=GAMMA, tol=1e-9, solver="boxqp")
    keep = counts > 0
    fitted = generic.fit(X[keep], sample_weight=counts[keep])
    direct = solve(SVDDModel(C=0.05, kernel="rbf", gamma=GAMMA), X[keep], counts[keep])
    assert fitted.objective_ == pytest.approx(direct.objective, rel=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_sums_kept_across_splits_equal_a_fresh_computation(weighted):
    """The one-class models' kernel sums P (a buffer row per cluster: kept clusters keep their
    parent's row, split ones take freed rows, the buffer grows when they run out) and T after
    three rounds of splits equal the sums computed from scratch for the final partition."""
    from aidopt.core.kernel_aggregate import cluster_kernel_sums
    from aidopt.core.partition import Partition
    from aidopt.numerics.kernel_sums import grouped_kernel_sums

    rng = np.random.default_rng(21)
    X = rng.normal(size=(300, 2))
    omega = rng.uniform(0.5, 2.0, size=300) if weighted else None
    kernel = Kernel("rbf", gamma=0.7)
    partition = Partition.from_labels(rng.integers(0, 4, size=300))
    buffer, rows, T = cluster_kernel_sums(kernel, X, partition, None, omega)
    for _ in range(3):  # split about half of the clusters, by a random regime
        regime = rng.integers(0, 2, size=300) * (partition.labels % 2 == 0)
        partition, _ = partition.split(regime)
        cache = KernelSums(X, partition.parent[partition.labels], buffer, rows, T)
        buffer, rows, T = cluster_kernel_sums(kernel, X, partition, cache, omega)
    K = partition.n_clusters
    expected = grouped_kernel_sums(kernel, X, partition.labels, K, X, omega)
    np.testing.assert_allclose(buffer[rows], expected, rtol=1e-12, atol=1e-12)
    S = np.zeros((K, 300))
    S[partition.labels, np.arange(300)] = 1.0 if omega is None else omega
    np.testing.assert_allclose(T, S @ expected.T, rtol=1e-12, atol=1e-12)
    assert buffer.shape[0] > 4  # the buffer grew past C^0's rows


@pytest.mark.parametrize("model", [OneClassSVMModel(C=2.0), KernelOneClassModel(C=2.0, gamma=0.5)])
def test_the_certificates_dual_point_lies_in_the_exact_box(model):
    """α_i ≤ C ω_i / N in rational arithmetic for the dual point of every certificate, weighted
    and not: C/N from the float total N (and C/n itself, rounded) can exceed the exact C/N,
    and a dual point at the computed box would leave the dual's domain."""
    from fractions import Fraction

    rng = np.random.default_rng(8)
    for draw in range(12):
        n = int(rng.integers(60, 200))
        X = rng.normal(size=(n, 2)) + 2.0
        weight = None if draw % 3 == 0 else rng.lognormal(0.0, 2.0, n) * 10.0 ** rng.integers(-5, 6)
        data = FeatureData.from_arrays(X, weight=weight)
        solver = "boxqp" if isinstance(model, KernelOneClassModel) else None
        result = AIDSolver(model, solver=solver, tol=0.0).solve(data)
        point = result.certificate.dual
        assert point is not None, result.message
        alpha = point.expand(n, model.evaluate(data, result.solution).regime)
        w = np.ones(n) if weight is None else weight
        exact_scale = Fraction(2.0) / sum(Fraction(float(v)) for v in w)
        assert all(
            Fraction(float(a)) <= exact_scale * Fraction(float(wi))
            for a, wi in zip(alpha, w, strict=True)
        ), draw
