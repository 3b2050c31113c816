"""SCIP (PySCIPOpt) as an integer-program route: the brute-force optimum of MIQPs and MILPs with
every row kind, a tiny-objective MIQP solved to its relative gap, statuses, and named errors for
continuous programs and unknown parameters (S3VM under AID: tests/test_s3vm.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("pyscipopt")

from test_outer_approximation import assert_brute_force_optimum, enumerate_integers, random_miqp

from aidopt.exceptions import SolverCapabilityError, SolverError
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.program import MatrixProgram
from aidopt.solvers.scip import ScipAdapter

ACCURATE = ScipAdapter().accurate_options(1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_miqp_matches_brute_force(seed):
    program = random_miqp(seed, dense=bool(seed % 2))
    found = ScipAdapter().solve_program(program, options=ACCURATE)
    assert_brute_force_optimum(found, program)


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
def test_scaled_objectives_reach_the_same_assignment(scale):
    """An objective scaled by 1e-6 (S3VM's equilibrated problems are that small) or 1e6 is
    minimised by the same integers, to the relative gap."""
    program = random_miqp(3, dense=True)
    scaled = replace(program, c=scale * program.c, Q=scale * program.Q)
    found = ScipAdapter().solve_program(scaled, options=ACCURATE)
    assert found.status is SolveStatus.OPTIMAL
    assert found.objective == pytest.approx(scale * enumerate_integers(program), rel=1e-7)


def test_milp_with_equal_ranged_and_one_sided_rows():
    """min cᵀy over y ∈ {0..3}⁴ with an equality, a range, a ≥ and a ≤ row: brute force."""
    A = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 1.0], [1, 0, 0, 1]])
    lo, hi = np.array([6.0, -1.0, 3.0, -np.inf]), np.array([6.0, 1.0, np.inf, 4.0])
    c = np.array([1.0, -2.0, 0.5, -1.0])
    program = MatrixProgram(
        c=c,
        A=sp.csc_matrix(A),
        row_lower=lo,
        row_upper=hi,
        col_lower=np.zeros(4),
        col_upper=np.full(4, 3.0),
        integer=np.ones(4, bool),
        offset=2.0,
    )
    grid = np.array(np.meshgrid(*[np.arange(4.0)] * 4)).reshape(4, -1).T
    feasible = np.all((grid @ A.T >= lo - 1e-12) & (grid @ A.T <= hi + 1e-12), axis=1)
    best = (grid[feasible] @ c).min() + 2.0
    found = ScipAdapter().solve_program(program)
    assert found.status is SolveStatus.OPTIMAL
    assert found.objective == pytest.approx(best)
    assert found.bound == pytest.approx(best)
    infeasible = replace(program, row_lower=np.r_[20.0, lo[1:]], row_upper=np.r_[20.0, hi[1:]])
    assert ScipAdapter().solve_program(infeasible).status is SolveStatus.INFEASIBLE


def test_time_limit_is_a_status():
    program = random_miqp(0, dense=True, n_bin=14, n_cont=10)
    found = ScipAdapter().solve_program(program, time_limit=0.0)
    assert found.status is SolveStatus.TIME_LIMIT
    assert found.x is None


def test_continuous_program_and_unknown_parameter_are_named_errors():
    program = random_miqp(0, dense=False)
    with pytest.raises(SolverCapabilityError, match=r"'scip' cannot solve QP.*highs"):
        ScipAdapter().solve_program(replace(program, integer=None))
    with pytest.raises(SolverError, match=r"SCIP parameter 'limits/nothing'"):
        ScipAdapter().solve_program(program, options={"limits/nothing": 1})
