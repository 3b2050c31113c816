"""`optimal` is a proof: certificates against independent full solves at scales 1e-9, 1, 1e9.

Property: on random LAD, SVM and PU instances with every feature (and, for LAD, the target)
multiplied by s ∈ {1e-9, 1, 1e9}, whenever a run says ``optimal`` (or ``gap``) its objective is
within max(1e-6, its gap) of an independent full solve, and its lower bound never exceeds that
solve's optimum, whatever the status. liblinear never yields ``optimal``.

The references are independent of aidopt's solver stack: LAD at scale s is s times the LAD
optimum of the unscaled data (LAD is equivariant), solved by scipy's linprog; the SVM and PU
references solve the exact reformulation v = s·w (so that ½‖w‖² = ½‖v‖²/s² and w·(s x) = v·x)
with CVXPY/Clarabel on the unscaled features.
"""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from aidopt import AIDSolver, AIDStatus
from aidopt.data.lad import make_lad
from aidopt.data.svm import make_svm
from aidopt.exceptions import AidoptError
from aidopt.models.lad import LADData, LADModel
from aidopt.models.pu import PUData, PUModel
from aidopt.models.svm import SVMData, SVMModel
from aidopt.models.svm_kernel import KernelSVMModel
from aidopt.numerics.kernels import Kernel
from aidopt.verify import verify_result

SCALES = [1e-9, 1.0, 1e9]
PROVEN = (AIDStatus.OPTIMAL, AIDStatus.GAP)
cp = pytest.importorskip("cvxpy")


def _run(model, data, solver=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # uncertified stops warn; the status is what is checked
        return AIDSolver(model, solver=solver, **options).solve(data)


def _run_or_error(model, data, solver=None, **options):
    """The result, or None when the run ended with a named aidopt error (which claims nothing,
    e.g. a solver failing on badly scaled data)."""
    try:
        return _run(model, data, solver, **options)
    except AidoptError:
        return None


def _check_claims(result, reference: float) -> None:
    """The two promises: a proven status is right, and no bound exceeds the optimum."""
    if result is None:
        return
    scale = max(abs(reference), 1e-300)
    if result.lower_bound is not None:
        assert result.lower_bound <= reference + 1e-9 * scale, (result.status, result.message)
    if result.status in PROVEN:
        allowed = max(1e-6, result.gap or 0.0)
        assert abs(result.objective - reference) <= allowed * scale * (1 + 1e-9), (
            result.status,
            result.objective,
            reference,
            result.gap,
        )


# ---------------------------------------------------------------------- LAD
def lad_reference(X: np.ndarray, y: np.ndarray) -> float:
    """min Σ|y − β₀ − Xβ| as an LP (scipy/HiGHS), on the unscaled data."""
    n = X.shape[0]
    Z = np.column_stack([np.ones(n), X])
    p = Z.shape[1]
    c = np.r_[np.zeros(p), np.ones(2 * n)]
    A = np.hstack([Z, np.eye(n), -np.eye(n)])
    res = linprog(c, A_eq=A, b_eq=y, bounds=[(None, None)] * p + [(0, None)] * (2 * n))
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("solver", ["fn", "highs"])
def test_lad_claims_hold_at_every_scale(seed, scale, solver):
    X, y, _, _ = make_lad(300, 3, seed=seed)
    reference = scale * lad_reference(X, y)
    result = _run(LADModel(), LADData.from_arrays(X * scale, y * scale), solver, tol=0.0)
    _check_claims(result, reference)
    assert result.status is AIDStatus.OPTIMAL  # LAD is equivariant: every scale certifies


# ---------------------------------------------------------------------- SVM
def svm_reference(X: np.ndarray, y: np.ndarray, M: float, scale: float) -> float:
    """(7) on features s·X, through v = s·w: min ½‖v‖²/s² + M Σ max(0, 1 − y(v·x + b))."""
    v, b = cp.Variable(X.shape[1]), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X @ v + b)))
    problem = cp.Problem(cp.Minimize(0.5 / scale**2 * cp.sum_squares(v) + M * hinge))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    v_opt = v.value
    # the objective recomputed exactly at the returned point (an upper bound on E*)
    f = X @ v_opt + b.value
    return 0.5 / scale**2 * float(v_opt @ v_opt) + M * float(np.maximum(0, 1 - y * f).sum())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("solver", ["highs", "libsvm", "liblinear"])
def test_svm_claims_hold_at_every_scale(solver, scale):
    X, y = make_svm(400, 3, seed=3)
    X = X + 2.0  # offset features: liblinear's penalised bias then matters
    reference = svm_reference(X, y, 0.1, scale)
    data = SVMData.from_arrays(X * scale, y)
    result = _run_or_error(SVMModel(M=0.1), data, solver, tol=1e-6, time_limit=10)
    _check_claims(result, reference)
    if solver == "liblinear" and result is not None:
        assert result.status is not AIDStatus.OPTIMAL  # another problem: never a proof
    if scale == 1.0 and solver != "liblinear":
        assert result.status in PROVEN


def test_liblinear_false_certificate_of_the_issue_is_gone():
    """n = 3,000, two Gaussian classes, features offset by +2, tol 0: liblinear used to say
    `optimal` at +31 %."""
    rng = np.random.default_rng(0)
    y = np.where(rng.random(3000) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(3000, 5)) + 0.5 * y[:, None] + 2.0
    result = _run(SVMModel(M=0.1), SVMData.from_arrays(X, y), "liblinear", tol=0.0)
    assert result.status is not AIDStatus.OPTIMAL
    assert result.status in (AIDStatus.PURE, AIDStatus.SOLVER_LIMIT, AIDStatus.ITERATION_LIMIT)


# ---------------------------------------------------------------------- PU
def pu_instance(seed: int, n: int = 200, d: int = 3) -> PUData:
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.4
    X = rng.normal(size=(n, d)) + positive[:, None] * 1.0
    labeled = np.zeros(n, dtype=bool)
    pos = np.flatnonzero(positive)
    labeled[rng.choice(pos, size=pos.size // 4, replace=False)] = True
    return PUData.from_arrays(X, labeled)


def pu_reference(data: PUData, prior: float, lam: float, scale: float) -> float:
    """(5) on features s·X through v = s·w, with ℓ(f) = max(f, 0, (1 + f)/2) as an epigraph."""
    X, P, U = data.X, data.labeled, ~data.labeled
    c1, c2 = prior / (2 * lam * P.sum()), 1 / (2 * lam * U.sum())
    v, b = cp.Variable(X.shape[1]), cp.Variable()
    f = X @ v + b
    loss = cp.maximum(f[U], 0, (1 + f[U]) / 2)
    objective = 0.5 / scale**2 * cp.sum_squares(v) - c1 * cp.sum(f[P]) + c2 * cp.sum(loss)
    cp.Problem(cp.Minimize(objective)).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    fv = X @ v.value + b.value
    value = 0.5 / scale**2 * float(v.value @ v.value) - c1 * float(fv[P].sum())
    return value + c2 * float(np.maximum(np.maximum(fv[U], 0), (1 + fv[U]) / 2).sum())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("solver", ["usmo", "highs"])
def test_pu_claims_hold_at_every_scale(solver, scale):
    data = pu_instance(4)
    reference = pu_reference(data, 0.4, 0.01, scale)
    scaled = PUData.from_arrays(data.X * scale, data.labeled)
    result = _run_or_error(PUModel(prior=0.4, lam=0.01), scaled, solver, tol=1e-6, time_limit=60)
    _check_claims(result, reference)
    if scale == 1.0:
        assert result.status in PROVEN


# ---------------------------------------------------------------------- aidopt verify
def _frame(X, y, target="y"):
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(X.shape[1])])
    frame[target] = y
    return frame


def _roundtrip(result) -> dict:
    return json.loads(json.dumps(result.to_dict()))


def _cases():
    X, y, _, _ = make_lad(2000, 3, seed=2)
    yield "lad", LADModel(), _frame(X, y), "fn"
    X, y = make_svm(1500, 3, seed=1)
    yield "svm", SVMModel(), _frame(X, y), "highs"
    yield "svm-rbf", KernelSVMModel(kernel="rbf", gamma=0.5), _frame(X[:600], y[:600]), "highs"
    data = pu_instance(5)
    yield "pu", PUModel(prior=0.4), _frame(data.X, data.labeled.astype(int), "s"), "usmo"
    rbf = PUModel(prior=0.4, kernel=Kernel("rbf", gamma=0.5))
    yield "pu-rbf", rbf, _frame(data.X, data.labeled.astype(int), "s"), "usmo"


CASES = list(_cases())


@pytest.mark.parametrize(("name", "model", "frame", "solver"), CASES, ids=[c[0] for c in CASES])
def test_verify_accepts_a_certificate_and_rejects_tampering(name, model, frame, solver):
    target = frame.columns[-1]
    data = model.data_from_frame(frame, target)
    result = _run(model, data, solver, tol=0.0)
    payload = _roundtrip(result)
    assert payload["certificate"]["dual"] is not None
    report = verify_result(payload, frame, target)
    assert report.accepted, report.to_text()
    assert report.lower_bound == pytest.approx(payload["certificate"]["lower_bound"], rel=1e-9)

    bad = copy.deepcopy(payload)  # a better objective than the solution has
    bad["objective"] *= 1 - 1e-3 if bad["objective"] > 0 else 1 + 1e-3
    assert not verify_result(bad, frame, target).accepted
    bad = copy.deepcopy(payload)  # a higher lower bound than the dual point proves
    lower = bad["certificate"]["lower_bound"]
    bad["certificate"]["lower_bound"] = lower + 1e-3 * max(1.0, abs(lower))
    assert not verify_result(bad, frame, target).accepted
    bad = copy.deepcopy(payload)  # a dual point outside its box
    dual = bad["certificate"]["dual"]
    dual["index"], dual["values"] = [*dual["index"], 0], [*dual["values"], 1e6]
    assert not verify_result(bad, frame, target).accepted
    bad = copy.deepcopy(payload)  # another solution
    solution = bad["solution"]
    if "coef" in solution:
        first = next(iter(solution["coef"]))
        solution["coef"][first] += 0.5
    else:
        solution["b"] += 0.5
    assert not verify_result(bad, frame, target).accepted
    bad = copy.deepcopy(payload)  # a lower bound above the objective, and no gap
    upper = bad["certificate"]["upper_bound"]
    bad["certificate"]["lower_bound"] = upper + 1e-6 * max(1.0, abs(upper))
    bad["certificate"]["gap"] = 0.0
    assert not verify_result(bad, frame, target).accepted


def test_verify_on_other_data_is_rejected():
    X, y, _, _ = make_lad(500, 3, seed=3)
    result = _run(LADModel(), LADData.from_arrays(X, y), "fn", tol=0.0)
    payload = _roundtrip(result)
    other = _frame(X, y + 1.0)
    assert not verify_result(payload, other, "y").accepted
    assert not verify_result(payload, _frame(X[:-1], y[:-1]), "y").accepted


def test_a_bound_above_the_objective_is_reported_not_used():
    """A model whose 'bound' exceeds E (a numerical failure) is never used as a proof."""

    class Broken(LADModel):
        def lower_bound(self, data, solution, evaluation, upper, dual=None, *, aggregate=None):
            bound = super().lower_bound(data, solution, evaluation, upper, dual)
            from dataclasses import replace

            return None if bound is None else replace(bound, value=upper * 1.05 + 1.0)

    X, y, _, _ = make_lad(500, 2, seed=4)
    result = _run(Broken(), LADData.from_arrays(X, y), "fn", tol=0.0)
    assert result.status is not AIDStatus.OPTIMAL and result.lower_bound is None
    assert "exceeds the objective" in result.message


# ---------------------------------------------------------------------- the Pyomo route on HiGHS
@pytest.mark.parametrize("name", ["lad", "svm", "pu"])
def test_declared_pyomo_models_solve_on_highs_to_the_matrix_optimum(name):
    """The declared Pyomo model (QP for svm and pu) solves on HiGHS: compiled to a matrix
    program, its duals loaded back, and certified to the matrix route's optimum."""
    if name == "lad":
        X, y, _, _ = make_lad(800, 3, seed=7)
        model, data = LADModel(), LADData.from_arrays(X, y)
    elif name == "svm":
        X, y = make_svm(600, 3, seed=7)
        model, data = SVMModel(), SVMData.from_arrays(X, y)
    else:
        model, data = PUModel(prior=0.4), pu_instance(7)
    matrix = _run(model, data, "highs", tol=0.0, interface="matrix")
    pyomo = _run(model, data, "highs", tol=0.0, interface="pyomo")
    assert matrix.status is AIDStatus.OPTIMAL and pyomo.status is AIDStatus.OPTIMAL
    assert pyomo.objective == pytest.approx(matrix.objective, rel=1e-7)
