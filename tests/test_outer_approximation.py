"""Outer approximation on HiGHS (aidopt.solvers.outer_approximation): exact on convex MIQPs with
diagonal and dense Q (against enumeration of the integers and Gurobi), the separable factor,
refusal of non-convex Q, infeasibility, and pass-through of programs without integers."""

import importlib.util
import itertools
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.exceptions import SolverCapabilityError
from aidopt.program import MatrixProgram
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.outer_approximation import (
    HighsOuterApproximation,
    separable_factor,
    solve_convex_qp,
)

HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None


def random_miqp(seed, dense, n_bin=6, n_cont=4):
    """min ½ xᵀQx + cᵀx over x = (continuous z ∈ [−5, 5], binaries y); rows couple z and y:
    z_j ≤ 2 y_j + 0.5, −z_j ≤ 2 y_j + 0.5 and Σ y ≥ 2 (a convex MIQP, Q ⪰ 0 on z)."""
    rng = np.random.default_rng(seed)
    n = n_cont + n_bin
    if dense:
        B = rng.normal(size=(n_cont, n_cont))
        Qz = B @ B.T + 0.1 * np.eye(n_cont)
    else:
        Qz = np.diag(rng.uniform(0.5, 2.0, n_cont))
    Q = np.zeros((n, n))
    Q[:n_cont, :n_cont] = Qz
    c = np.r_[rng.normal(scale=3.0, size=n_cont), rng.uniform(0.5, 2.0, n_bin)]
    rows, lo, hi = [], [], []
    for j in range(n_cont):
        for sign in (1.0, -1.0):
            row = np.zeros(n)
            row[j], row[n_cont + j % n_bin] = sign, -2.0
            rows.append(row)
            lo.append(-np.inf)
            hi.append(0.5)
    rows.append(np.r_[np.zeros(n_cont), np.ones(n_bin)])
    lo.append(2.0)
    hi.append(np.inf)
    integer = np.r_[np.zeros(n_cont, bool), np.ones(n_bin, bool)]
    return MatrixProgram(
        c=c,
        A=sp.csc_matrix(np.array(rows)),
        row_lower=np.array(lo),
        row_upper=np.array(hi),
        col_lower=np.r_[np.full(n_cont, -5.0), np.zeros(n_bin)],
        col_upper=np.r_[np.full(n_cont, 5.0), np.ones(n_bin)],
        Q=sp.csc_matrix(Q),
        integer=integer,
    )


def enumerate_integers(program):
    """The optimum by brute force: one convex QP (HiGHS) per assignment of the binaries."""
    best = np.inf
    integer = np.flatnonzero(program.integer)
    for y in itertools.product([0.0, 1.0], repeat=integer.size):
        lo, hi = program.col_lower.copy(), program.col_upper.copy()
        lo[integer] = hi[integer] = y
        qp = replace(program, col_lower=lo, col_upper=hi, integer=None)
        result = solve_convex_qp(qp)
        if result.status is SolveStatus.OPTIMAL:
            best = min(best, result.objective)
    return best


@pytest.mark.parametrize(("seed", "dense"), [(0, False), (1, True), (2, True)])
def test_oa_reaches_the_enumerated_optimum(seed, dense):
    program = random_miqp(seed, dense)
    result = HighsOuterApproximation().solve_program(program, options={"tol": 1e-9})
    assert result.status is SolveStatus.OPTIMAL
    reference = enumerate_integers(program)
    assert result.objective == pytest.approx(reference, rel=1e-6, abs=1e-8)
    assert result.bound <= result.objective + 1e-9  # the master is a relaxation
    assert result.objective - result.bound <= 1e-9 * max(1.0, abs(result.objective)) + 1e-9
    assert program.objective_value(result.x) == pytest.approx(result.objective, abs=1e-9)
    y = result.x[program.integer]
    assert np.allclose(y, np.round(y))
    row = program.A @ result.x
    assert np.all(row >= program.row_lower - 1e-7) and np.all(row <= program.row_upper + 1e-7)


@pytest.mark.skipif(not HAS_GUROBI, reason="gurobipy is not installed")
def test_oa_equals_gurobi_on_a_dense_miqp():
    from aidopt.solvers.gurobi import GurobiAdapter

    program = random_miqp(3, dense=True, n_bin=8, n_cont=5)
    oa = HighsOuterApproximation().solve_program(program, options={"tol": 1e-9})
    grb = GurobiAdapter().solve_program(program, options={"MIPGap": 1e-10, "MIPGapAbs": 1e-10})
    assert oa.status is SolveStatus.OPTIMAL and grb.status is SolveStatus.OPTIMAL
    assert oa.objective == pytest.approx(grb.objective, rel=1e-6)


def test_separable_factor_reproduces_q():
    rng = np.random.default_rng(4)
    B = rng.normal(size=(3, 3))
    Q = np.zeros((5, 5))
    Q[1:4, 1:4] = B @ B.T
    L = separable_factor(sp.csc_matrix(Q), 5).toarray()
    assert np.allclose(L.T @ L, Q)
    D = sp.diags([0.0, 2.0, 3.0]).tocsc()
    Ld = separable_factor(D, 3)
    assert Ld.shape == (2, 3) and np.allclose((Ld.T @ Ld).toarray(), D.toarray())
    with pytest.raises(SolverCapabilityError, match="not convex"):
        separable_factor(sp.csc_matrix(np.array([[1.0, 2.0], [2.0, 1.0]])), 2)
    with pytest.raises(SolverCapabilityError, match="not convex"):
        separable_factor(sp.diags([1.0, -1.0]).tocsc(), 2)


def test_infeasible_miqp_is_reported():
    program = random_miqp(5, dense=False)
    # Σ y ≥ 7 with six binaries
    infeasible = replace(program, row_lower=np.r_[program.row_lower[:-1], 7.0])
    result = HighsOuterApproximation().solve_program(infeasible)
    assert result.status is SolveStatus.INFEASIBLE and result.x is None


def test_programs_without_integers_go_to_highs_directly():
    program = random_miqp(6, dense=True)
    relaxed = replace(program, integer=None)
    oa = HighsOuterApproximation().solve_program(relaxed)
    direct = HighsAdapter().solve_program(relaxed)
    assert oa.status is SolveStatus.OPTIMAL
    assert oa.objective == pytest.approx(direct.objective, rel=1e-9)
    assert "rounds" not in oa.info  # no OA loop was run
