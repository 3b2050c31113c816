"""Kernel SVM under AID (aggregated dual (21)): centroid Gram, optimum = libsvm, bounds, errors."""

import dataclasses
from typing import Any

import numpy as np
import pytest
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.svm import SVC

from aidopt import AIDSolver, AIDStatus
from aidopt.core.kernel_aggregate import centroid_gram_sums
from aidopt.core.partition import Partition
from aidopt.core.routes import solve_aggregated
from aidopt.data.svm import make_svm
from aidopt.exceptions import InvalidParameterError, SolverCapabilityError
from aidopt.models.svm import SVMData, SVMModel
from aidopt.models.svm_kernel import KernelSVMModel
from aidopt.solvers.structures import WeightedSVM

M = 0.1


def svc_objective(X, y, kind, **params):
    """(5) at scikit-learn's SVC solution (tight tolerance), ‖w‖² from sklearn's own kernel."""
    fit = SVC(kernel=kind, C=M, tol=1e-9, **params).fit(X, y)
    sv, coef = X[fit.support_], fit.dual_coef_[0]
    norm_sq = coef @ pairwise_kernels(sv, sv, metric=kind, **params) @ coef
    return 0.5 * norm_sq + M * np.maximum(0.0, 1.0 - y * fit.decision_function(X)).sum()


@pytest.mark.parametrize(
    ("kind", "params"),
    [("rbf", {"gamma": 0.7}), ("poly", {"gamma": 0.5, "degree": 2, "coef0": 1.0})],
)
def test_centroid_gram_is_the_mean_of_the_full_gram(kind, params):
    X, y = make_svm(300, 3, seed=0)
    data = SVMData.from_arrays(X, y)
    model = KernelSVMModel(kernel=kind, **params)
    rng = np.random.default_rng(1)
    part = Partition.from_labels(2 * rng.integers(0, 6, size=300) + (y > 0))
    full = pairwise_kernels(X, X, metric=kind, **params)
    agg = model.aggregate(data, part)
    for k in range(part.n_clusters):
        for q in range(part.n_clusters):
            block = full[np.ix_(part.labels == k, part.labels == q)]
            assert agg.gram[k, q] == pytest.approx(block.mean(), rel=1e-12)
    # after a split, the cached sums of unsplit clusters plus the new rows equal a fresh pass
    regime = (rng.random(300) < 0.3).astype(int) * (part.labels % 3 == 0)
    child, n_impure = part.split(regime)
    assert n_impure > 0
    updated = model.aggregate(data, child).gram_sum
    np.testing.assert_allclose(
        updated, centroid_gram_sums(model.kernel_for(3), X, child), rtol=1e-12, atol=1e-9
    )


@pytest.mark.parametrize("solver", ["highs", "libsvm"])
def test_rbf_aid_equals_libsvm(solver):
    X, y = make_svm(700, 3, seed=2)
    data = SVMData.from_arrays(X, y)
    reference = svc_objective(X, y, "rbf", gamma=0.5)
    model = KernelSVMModel(kernel="rbf", gamma=0.5)
    result = AIDSolver(
        model,
        solver=solver,
        tol=0.0 if solver == "highs" else 1e-6,
        rate=model.default_rate(data),  # AID (libsvm's default is the full problem)
    ).solve(data)
    assert result.status in (AIDStatus.OPTIMAL, AIDStatus.GAP)
    assert result.objective == pytest.approx(reference, rel=1e-4)
    lower = result.history["lower_bound"].to_numpy()
    assert np.all(lower <= reference * (1 + 1e-9))  # valid lower bounds (weak duality)
    if solver == "highs":
        assert result.certified
        assert result.objective == pytest.approx(reference, rel=1e-6)
        assert np.all(np.diff(lower) >= -1e-9 * reference)  # Prop. 4 in feature space
        assert result.lower_bound == pytest.approx(result.objective, rel=1e-6)
        f = result.solution.decision_function(X)
        assert result.partition.impure((1 - data.y * f > 0).astype(int)).sum() == 0
    assert result.final_rate < 1.0


def test_poly_aid_equals_libsvm_and_dual_recovery():
    X, y = make_svm(500, 2, seed=3)
    data = SVMData.from_arrays(X, y)
    reference = svc_objective(X, y, "poly", gamma=0.5, degree=3, coef0=1.0)
    model = KernelSVMModel(kernel="poly", gamma=0.5, degree=3)
    result = AIDSolver(model, solver="highs", tol=0.0).solve(data)  # independent of libsvm
    assert result.certified
    assert result.objective == pytest.approx(reference, rel=1e-6)
    alpha = result.solution.entry_duals()  # α̂_i = ᾱ_k / |C_k|, dual optimal for (6)
    assert alpha.min() >= 0.0 and alpha.max() <= M * (1 + 1e-12)
    assert abs(alpha @ data.y) <= 1e-10 * alpha.sum()
    ay = alpha * data.y
    gram = pairwise_kernels(X, X, metric="poly", gamma=0.5, degree=3, coef0=1.0)
    assert alpha.sum() - 0.5 * ay @ gram @ ay == pytest.approx(result.objective, rel=1e-6)


def test_linear_kernel_dual_equals_the_linear_primal():
    X, y = make_svm(1000, 4, seed=4)
    data = SVMData.from_arrays(X, y)
    dual = AIDSolver(KernelSVMModel(kernel="linear"), solver="highs", tol=0.0).solve(data)
    primal = AIDSolver(SVMModel(), tol=0.0).solve(data)
    assert dual.certified and primal.certified
    assert dual.objective == pytest.approx(primal.objective, rel=1e-8)


def test_pyomo_dual_21_agrees_with_the_matrix_route():
    X, y = make_svm(300, 2, seed=5)
    data = SVMData.from_arrays(X, y)
    model = KernelSVMModel(kernel="rbf", gamma=1.0)
    a = AIDSolver(model, solver="highs", tol=0.0).solve(data)
    b = AIDSolver(model, solver="pyomo:highs", tol=0.0, rate=0.05, max_iter=50).solve(data)
    assert a.certified and b.certified
    assert b.objective == pytest.approx(a.objective, rel=1e-6)


def test_the_libsvm_route_certifies_the_highs_optimum():
    """The libsvm route (SMO on the aggregated dual, its answer repaired and certified on all
    rows: the fast one for many clusters) proves the optimum HiGHS' checked route proves."""
    X, y = make_svm(800, 3, seed=6)
    data = SVMData.from_arrays(X, y)
    model = KernelSVMModel(kernel="rbf", gamma=0.5, M=1.0)
    fast = AIDSolver(model, solver="libsvm", tol=1e-6).solve(data)
    exact = AIDSolver(model, solver="highs", tol=0.0).solve(data)
    assert fast.certified and exact.certified
    assert fast.objective == pytest.approx(exact.objective, rel=1e-6)
    assert fast.lower_bound <= exact.objective * (1 + 1e-12)


def test_one_aggregated_dual_on_each_solver():
    X, y = make_svm(400, 2, seed=6)
    data = SVMData.from_arrays(X, y)
    model = KernelSVMModel(kernel="rbf", gamma=0.5)
    agg = model.aggregate(data, model.initial_partition(data, 0.1, np.random.default_rng(0)))
    svm = model.to_structure(WeightedSVM, agg, None)  # (21) with the centroid Gram K̄
    assert svm.features is None and svm.C == M
    np.testing.assert_array_equal(svm.gram, agg.gram)
    factored, res_matrix = solve_aggregated(model, agg, "highs")  # the factored dual program
    declared, res_pyomo = solve_aggregated(model, agg, "highs", interface="pyomo")  # (21)
    exact, res_libsvm = solve_aggregated(model, agg, "libsvm", options={"tol": 1e-8})
    assert res_pyomo.objective == pytest.approx(res_matrix.bound, rel=1e-6)  # max of (21)
    assert res_libsvm.bound == pytest.approx(res_matrix.bound, rel=1e-6)
    for sol in (factored, declared, exact):  # the same D(ᾱ) with the exact K̄
        ay = sol.alpha * agg.label
        assert sol.alpha.sum() - 0.5 * ay @ agg.gram @ ay == pytest.approx(
            res_matrix.bound, rel=1e-6
        )


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"gamma": 0.0}, "The 'gamma' parameter of KernelSVMModel"),
        ({"gamma": -1.0}, "The 'gamma' parameter of KernelSVMModel"),
        ({"M": 0.0}, "The 'M' parameter of KernelSVMModel"),
        ({"kernel": "sigmoid"}, "The 'kernel' parameter of KernelSVMModel"),
        ({"kernel": "poly", "degree": 0}, "The 'degree' parameter of KernelSVMModel"),
    ],
)
def test_bad_parameters_are_named(params, match):
    X, y = make_svm(100, 2, seed=0)
    with pytest.raises(InvalidParameterError, match=match):
        AIDSolver(KernelSVMModel(**params)).solve(SVMData.from_arrays(X, y))


def test_liblinear_has_no_kernels():
    X, y = make_svm(200, 2, seed=0)
    with pytest.raises(SolverCapabilityError, match="only the linear kernel"):
        AIDSolver(KernelSVMModel(), solver="liblinear").solve(SVMData.from_arrays(X, y))


@pytest.mark.parametrize("kind", ["svm", "ocsvm"])
def test_an_aggregate_keeps_its_parents_gram_sums(kind: str) -> None:
    """The driver hands each aggregation the aggregate it was split from: the Gram sums among
    clusters a split left as they were are the parent's numbers, the others are computed, and
    together they equal a fresh aggregation's (no state is kept in the model)."""
    from aidopt.data.containers import FeatureData
    from aidopt.models.ocsvm_kernel import KernelOneClassModel

    X, y = make_svm(400, 3, seed=2)
    if kind == "svm":
        model: Any = KernelSVMModel(kernel="rbf", gamma=0.5)
        data: Any = SVMData.from_arrays(X, y)
    else:
        model, data = KernelOneClassModel(kernel="rbf", gamma=0.5), FeatureData.from_arrays(X)
    parent = model.initial_partition(data, 0.05, np.random.default_rng(0))
    first = model.aggregate(data, parent)
    impure = parent.labels == parent.labels[0]  # split one cluster in two
    regime = np.where(impure, np.arange(data.n) % 2, 0).astype(np.int64)
    child, n_impure = parent.split(regime)
    assert n_impure == 1
    kept = model.aggregate(data, child, previous=first)
    fresh = model.aggregate(data, child)
    np.testing.assert_allclose(kept.gram_sum, fresh.gram_sum, rtol=1e-12)
    same = np.flatnonzero(child.sizes == parent.sizes[child.parent])
    assert same.size == child.n_clusters - 2
    old = child.parent[same]
    # the kept blocks are read from the parent: marked there (+1), they come back marked
    if kind == "svm":
        marked = dataclasses.replace(first, gram_sum=first.gram_sum + 1.0)
        expected = first.gram_sum[np.ix_(old, old)] + 1.0
    else:  # the one-class aggregate keeps its raw sums beside the symmetrised T
        sums = first.summed.kept._replace(gram_sum=first.summed.kept.gram_sum + 1.0)
        marked = dataclasses.replace(first, summed=dataclasses.replace(first.summed, kept=sums))
        raw = sums.gram_sum[np.ix_(old, old)]
        expected = 0.5 * (raw + raw.T)
    reread = model.aggregate(data, child, previous=marked)
    np.testing.assert_array_equal(reread.gram_sum[np.ix_(same, same)], expected)
