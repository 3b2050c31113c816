"""The exact primal active-set solver of the weighted linear SVM (aidopt.solvers.svm_active_set).

Every answer is checked by a proof that does not depend on the method: the primal value at
(w, b) minus the dual value at α (made exactly feasible) is zero to rounding, and no other solver
finds a lower primal value (libsvm to a tight tolerance, HiGHS on the full QP).
"""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import SVC

from aidopt import AIDSolver, AIDStatus
from aidopt.core.registry import get_solver
from aidopt.data.svm import make_svm
from aidopt.exceptions import InvalidParameterError, SolverCapabilityError
from aidopt.models.svm import SVMData, SVMModel
from aidopt.solvers import SolveStatus
from aidopt.solvers.structures import WeightedSVM, feasible_dual
from aidopt.solvers.svm_active_set import svm_active_set


def primal(X, y, u, w, b):
    return 0.5 * w @ w + u @ np.maximum(0.0, 1.0 - y * (X @ w + b))


def dual(X, y, u, alpha):
    a = feasible_dual(alpha, y, u)
    w = (a * y) @ X
    return a.sum() - 0.5 * w @ w


def problem(seed, kind):
    """Overlapping classes (a noisy hyperplane, 15 % of the labels flipped), weights over four
    decades; 'random' labels and 'tiny' features leave w ≈ 0: every row of one class on the
    same kink (the degenerate case)."""
    rng = np.random.default_rng(seed)
    K, m = int(rng.integers(20, 250)), int(rng.integers(1, 7))
    X = {
        "normal": lambda: rng.normal(size=(K, m)),
        "duplicates": lambda: rng.integers(0, 3, (K, m)).astype(float),  # many equal rows
        "tiny": lambda: rng.normal(size=(K, m)) * 1e-9,
        "huge": lambda: rng.normal(size=(K, m)) * 1e9,
        "shifted": lambda: rng.normal(size=(K, m)) + 1e3,  # b far from 0
        "random": lambda: rng.normal(size=(K, m)),
    }[kind]()
    if kind == "random":
        y = np.where(rng.random(K) < 0.4, -1.0, 1.0)
    else:
        score = (X - X.mean(axis=0)) @ rng.normal(size=m)
        y = np.where(score + 0.3 * score.std() * rng.normal(size=K) > 0, 1.0, -1.0)
        y[rng.random(K) < 0.15] *= -1
    y[:2] = (1.0, -1.0)
    u = rng.uniform(0.01, 100.0, K)
    return X, y, u


KINDS = ["normal", "duplicates", "huge", "shifted", "random"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_optimal_with_a_zero_duality_gap(kind, seed):
    X, y, u = problem(seed, kind)
    found = svm_active_set(X, y, u)
    assert found.converged, found.message
    value = primal(X, y, u, found.w, found.b)
    bound = dual(X, y, u, found.alpha)
    assert bound <= value * (1 + 1e-12) + 1e-300
    assert value - bound <= 1e-9 * max(1.0, abs(value))
    terms = (found.alpha @ np.abs(X)).max()  # w = Σ α_k y_k x_k to the rounding of its terms
    np.testing.assert_allclose((found.alpha * y) @ X, found.w, rtol=0, atol=1e-12 * terms)


@pytest.mark.parametrize("kind", ["normal", "duplicates"])
def test_no_lower_value_than_libsvm(kind):
    X, y, u = problem(11, kind)
    found = svm_active_set(X, y, u)
    fit = SVC(kernel="linear", C=1.0, tol=1e-6).fit(X, y, sample_weight=u)
    reference = primal(X, y, u, fit.coef_[0], fit.intercept_[0])
    assert primal(X, y, u, found.w, found.b) <= reference * (1 + 1e-9)
    assert primal(X, y, u, found.w, found.b) == pytest.approx(reference, rel=1e-4)


def test_any_warm_start_reaches_the_same_optimum():
    X, y, u = problem(3, "normal")
    cold = svm_active_set(X, y, u)
    rng = np.random.default_rng(0)
    for _ in range(5):
        start = (rng.normal(size=X.shape[1]) * 10, float(rng.normal() * 10))
        warm = svm_active_set(X, y, u, start=start)
        assert warm.converged
        assert primal(X, y, u, warm.w, warm.b) == pytest.approx(
            primal(X, y, u, cold.w, cold.b), rel=1e-12
        )
    again = svm_active_set(X, y, u, start=(cold.w, cold.b))  # at the optimum: nothing to do
    assert again.converged and again.steps <= X.shape[1] + 3


def test_sparse_rows_give_the_dense_answer():
    X, y, u = problem(5, "normal")
    X[np.abs(X) < 0.8] = 0.0
    dense = svm_active_set(X, y, u)
    sparse = svm_active_set(sp.csr_matrix(X), y, u)
    assert sparse.converged
    assert primal(X, y, u, sparse.w, sparse.b) == pytest.approx(
        primal(X, y, u, dense.w, dense.b), rel=1e-12
    )


def test_limits_are_reported_without_an_answer():
    X, y, u = problem(1, "normal")
    assert svm_active_set(X, y, u, max_steps=1).message == "step limit"
    assert svm_active_set(X, y, u, time_limit=0.0).message == "time limit"
    solver = get_solver("activeset")
    svm = WeightedSVM(y=y, weight=u, C=1.0, features=X)
    answer, result = solver.solve_structure(svm, options={"max_steps": 1})
    assert answer is None and result.status is SolveStatus.ITERATION_LIMIT
    answer, result = solver.solve_structure(svm, time_limit=0.0)
    assert answer is None and result.status is SolveStatus.TIME_LIMIT


def test_adapter_proves_its_answer_and_names_what_it_cannot_do():
    X, y, u = problem(2, "normal")
    solver = get_solver("activeset")
    answer, result = solver.solve_structure(WeightedSVM(y=y, weight=u, C=1.0, features=X))
    assert result.status is SolveStatus.OPTIMAL and result.exact
    assert result.bound <= result.objective * (1 + 1e-12)
    assert result.objective - result.bound <= 1e-9 * result.objective
    assert answer.alpha.min() >= 0 and np.all(answer.alpha <= u)
    assert abs(answer.alpha @ y) <= 1e-12 * u.sum()
    gram = WeightedSVM(y=y, weight=u, C=1.0, gram=X @ X.T)
    with pytest.raises(SolverCapabilityError, match="linear kernel"):
        solver.solve_structure(gram)
    with pytest.raises(InvalidParameterError, match="tol"):
        solver.solve_structure(WeightedSVM(y=y, weight=u, C=1.0, features=X), options={"tol": 1})


@pytest.mark.filterwarnings("ignore:AID stopped before certifying")
@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e9])
def test_aid_default_reaches_the_full_optimum(scale):
    """The reference is the full problem solved with its own duality-gap proof (and HiGHS at
    scale 1). At 1e9 the certificate on the original data is honest but loose (w = Σ α_i y_i x_i
    cancels terms 1e17 times larger): the run may end ``pure``, never with a wrong bound."""
    X, y = make_svm(600, 4, seed=7)
    X = X * scale
    weight = np.random.default_rng(1).uniform(0.5, 3.0, y.size)
    data = SVMData.from_arrays(X, y, weight=weight)
    model = SVMModel(M=0.1)
    _, full = get_solver("activeset").solve_structure(
        WeightedSVM(y=y, weight=weight, C=0.1, features=X)
    )
    assert full.objective - full.bound <= 1e-9 * full.objective
    result = AIDSolver(model, tol=1e-9).solve(data)
    assert result.solver == "activeset"
    assert result.objective == pytest.approx(full.objective, rel=1e-9)
    assert result.lower_bound <= full.objective * (1 + 1e-9)
    if scale != 1e9:
        assert result.status in (AIDStatus.OPTIMAL, AIDStatus.GAP) and result.gap <= 1e-9
    if scale == 1.0:  # HiGHS's QP fails on the scaled ones (aidopt reports it as such)
        assert result.certified
        highs = AIDSolver(model, solver="highs").solve_full(data)
        assert result.objective == pytest.approx(highs.objective, rel=1e-7)


@pytest.mark.parametrize("kind", ["tiny", "random"])
def test_degenerate_faces_fall_back_to_libsvm_and_say_so(kind):
    """Features of size 1e-9 leave w ≈ 0 and b = ±1: every row of one class on one kink. With
    random labels as well, some faces stall the active set (libsvm then answers, and says so)."""
    hits = 0
    for seed in range(5, 10):
        X, y, u = problem(seed, kind)
        _, result = get_solver("activeset").solve_structure(
            WeightedSVM(y=y, weight=u, C=1.0, features=X * (1e-9 if kind == "random" else 1.0))
        )
        assert result.status is SolveStatus.OPTIMAL
        assert result.bound <= result.objective * (1 + 1e-12)
        assert result.objective - result.bound <= 1e-6 * result.objective
        hits += "libsvm" in result.message
    assert hits or kind == "tiny"  # the case exists (and is named)


def test_full_qp_on_highs_agrees():
    X, y, u = problem(4, "shifted")
    data = SVMData.from_arrays(X, y, weight=u)
    full = AIDSolver(SVMModel(M=1.0), solver="highs").solve_full(data)
    found = svm_active_set(X, y, u)
    assert primal(X, y, u, found.w, found.b) == pytest.approx(full.objective, rel=1e-7)


@pytest.mark.parametrize("kind", ["normal", "duplicates", "huge"])
def test_without_intercept_b_stays_zero_and_the_gap_closes(kind):
    X, y, u = problem(8, kind)
    found = svm_active_set(X, y, u, intercept=False)
    assert found.converged and found.b == 0.0
    value = primal(X, y, u, found.w, 0.0)
    a = np.clip(found.alpha, 0.0, u)  # no row Σ α_k y_k = 0 without b
    w = (a * y) @ X
    assert value - (a.sum() - 0.5 * w @ w) <= 1e-9 * max(1.0, value)
    with_b = svm_active_set(X, y, u)
    assert primal(X, y, u, with_b.w, with_b.b) <= value * (1 + 1e-12)  # b free can only help


def test_libraries_refuse_a_fixed_intercept():
    X, y, u = problem(0, "normal")
    svm = WeightedSVM(y=y, weight=u, C=1.0, features=X, intercept=False)
    for name in ("libsvm", "liblinear"):
        with pytest.raises(SolverCapabilityError, match="b = 0"):
            get_solver(name).solve_structure(svm)


def test_one_class_model_runs_on_the_active_set_by_default():
    from aidopt.data.containers import FeatureData
    from aidopt.data.one_class import blobs
    from aidopt.models.ocsvm import OneClassSVMModel

    # 1,500 rows: HiGHS' full QP takes 0.1 s there and 44 s at 3,000 rows of the same blobs
    data = FeatureData.from_frame(blobs(1500, 4, seed=2))
    model = OneClassSVMModel(C=2.0)
    result = AIDSolver(model, tol=1e-9).solve(data)
    assert result.solver == "activeset" and result.certified
    full = AIDSolver(model, solver="highs").solve_full(data)  # the full QP, another solver
    assert result.objective == pytest.approx(full.objective, rel=1e-8)


@pytest.mark.parametrize("refresh", [1, 3, 32])
def test_carried_residuals_and_sums_reach_the_optimum_of_fresh_ones(monkeypatch, refresh):
    """Residuals and sums over U carried across steps (recomputed every ``refresh`` steps and
    before the answer): a long run (hundreds of steps at m = 30) ends at the same certified
    optimum as one that recomputes everything at every step."""
    import aidopt.solvers.svm_active_set as active_set

    rng = np.random.default_rng(7)
    X = rng.normal(size=(1500, 30))
    y = np.where(X @ rng.normal(size=30) + rng.normal(size=1500) > 0, 1.0, -1.0)
    u = rng.uniform(0.1, 10.0, 1500)
    monkeypatch.setattr(active_set, "_REFRESH_STEPS", refresh)
    found = svm_active_set(X, y, u)
    assert found.converged and found.steps > 100, (found.message, found.steps)
    value, bound = primal(X, y, u, found.w, found.b), dual(X, y, u, found.alpha)
    assert 0.0 <= value - bound <= 1e-10 * value
    monkeypatch.setattr(active_set, "_REFRESH_STEPS", 1)
    reference = svm_active_set(X, y, u)
    assert value == pytest.approx(primal(X, y, u, reference.w, reference.b), rel=1e-12)


@pytest.mark.parametrize("intercept", [True, False])
def test_an_optimal_claim_with_a_duality_gap_is_not_passed_on(monkeypatch, intercept):
    """A face solve gone inaccurate (measured on COIL2: a warm start at the optimum, 208 rows
    tied on their kinks, ended 'optimal' at a relative gap of 2e-5): the adapter checks the gap
    it reports, restarts cold after a warm start, and otherwise falls back or says error."""
    import aidopt.solvers.svm_active_set as module

    X, y = make_svm(300, 5, seed=4)
    svm = WeightedSVM(y=y, weight=np.ones(300), C=1.0, features=X, intercept=intercept)
    exact, reference = get_solver("activeset").solve_structure(svm)
    real = module.svm_active_set
    calls = []

    def off_by_a_little(*args, **kwargs):  # the real answer, its w moved off the optimum
        calls.append(kwargs.get("start") is not None)
        found = real(*args, **kwargs)
        return replace(found, w=1.001 * found.w) if len(calls) == 1 else found

    monkeypatch.setattr(module, "svm_active_set", off_by_a_little)
    fit, result = get_solver("activeset").solve_structure(replace(svm, start=(exact.w, exact.b)))
    assert calls == [True, False]
    assert result.status is SolveStatus.OPTIMAL and "cold restart" in result.message
    assert result.objective == pytest.approx(reference.objective, rel=1e-10)

    calls.clear()
    fit, result = get_solver("activeset").solve_structure(svm)
    if intercept:  # libsvm instead, and the message says so
        assert "libsvm" in result.message
        assert result.objective == pytest.approx(reference.objective, rel=1e-3)
    else:
        assert result.status is SolveStatus.ERROR and fit is None
        assert "lost accuracy" in result.message


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_screened_steps_reach_the_optimum_of_full_scans(monkeypatch, kind, seed, intercept):
    """Steps that scan only the rows near their kink (the window of the module, forced on small
    problems) and stop at its edge end at the certified optimum of steps that scan every row."""
    import aidopt.solvers.svm_active_set as active_set

    X, y, u = problem(seed, kind)
    full = svm_active_set(X, y, u, intercept=intercept)
    monkeypatch.setattr(active_set, "_SCREEN_ROWS", 1)
    monkeypatch.setattr(active_set, "_MIN_SHARE", 0.05)
    screened = svm_active_set(X, y, u, intercept=intercept)
    assert screened.converged, screened.message
    assert screened.b == 0.0 or intercept
    value = primal(X, y, u, screened.w, screened.b)
    a = np.clip(screened.alpha, 0.0, u)
    if intercept:
        bound = dual(X, y, u, screened.alpha)
    else:  # no row Σ α_k y_k = 0 without b
        w = (a * y) @ X
        bound = a.sum() - 0.5 * w @ w
    assert bound <= value * (1 + 1e-12) + 1e-300
    assert value - bound <= 1e-9 * max(1.0, abs(value))
    assert value == pytest.approx(primal(X, y, u, full.w, full.b), rel=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_warm_started_large_problem_stops_at_window_edges_and_is_optimal(monkeypatch, sparse):
    """K above the screening threshold, warm-started at a nearby problem's optimum (as under
    AID): some line searches stop at the edge of their window, and the answer is the optimum
    of the unscreened method, proved by its duality gap."""
    import aidopt.solvers.svm_active_set as active_set

    rng = np.random.default_rng(3)
    K, m = active_set._SCREEN_ROWS + 2000, 8
    X = rng.normal(size=(K, m))
    X[np.abs(X) < 0.3] = 0.0
    y = np.where(X @ rng.normal(size=m) + rng.normal(size=K) > 0, 1.0, -1.0)
    u = rng.uniform(0.1, 2.0, K)
    near = svm_active_set(X[:500], y[:500], u[:500])
    start = (near.w, near.b)
    edges = []
    search = active_set._line_search

    def spy(*args):
        found = search(*args)
        edges.append(np.isfinite(args[-1]) and found[0] >= args[-1])
        return found

    monkeypatch.setattr(active_set, "_line_search", spy)
    data = sp.csr_matrix(X) if sparse else X
    found = svm_active_set(data, y, u, start=start)
    assert found.converged and any(edges)
    value, bound = primal(X, y, u, found.w, found.b), dual(X, y, u, found.alpha)
    assert 0.0 <= value - bound <= 1e-10 * value
    monkeypatch.setattr(active_set, "_SCREEN_ROWS", K + 1)
    reference = svm_active_set(X, y, u, start=start)
    assert value == pytest.approx(primal(X, y, u, reference.w, reference.b), rel=1e-12)


def test_updated_inverse_of_the_face_matrix_equals_a_fresh_one():
    """Bordering and pivoting out a row of S⁻¹ (O(|E|²) each) give the inverse of the grown or
    reduced matrix."""
    from aidopt.solvers.svm_active_set import _bordered_inverse, _reduced_inverse

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 4))
    S = np.zeros((7, 7))  # [[0, yᵀ], [y, A Aᵀ]]: symmetric, indefinite
    S[1:, 1:] = A @ A.T + np.eye(6)
    S[0, 1:] = S[1:, 0] = np.where(rng.random(6) < 0.5, -1.0, 1.0)
    grown = _bordered_inverse(np.linalg.inv(S[:6, :6]), S[:, 6])
    np.testing.assert_allclose(grown, np.linalg.inv(S), rtol=1e-10, atol=1e-12)
    keep = np.arange(7) != 3
    reduced = _reduced_inverse(np.linalg.inv(S), 3)
    np.testing.assert_allclose(reduced, np.linalg.inv(S[np.ix_(keep, keep)]), atol=1e-12)
    singular = S[:6, :6].copy()
    column = np.append(singular[:, 5], singular[5, 5])  # a copy of the last row: no inverse
    assert _bordered_inverse(np.linalg.inv(singular), column) is None
