"""CPLEX (pip Community Edition) as a route for every problem class: the same optima, bounds and
duals as HiGHS and brute force (S3VM under AID: tests/test_s3vm.py), and its size limit as a
named error."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("cplex")

from test_outer_approximation import assert_brute_force_optimum, random_miqp

from aidopt.exceptions import SolverError, SolverLicenseError
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.cplex import CplexAdapter
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.program import MatrixProgram


def every_row_kind(seed: int, quadratic: bool) -> MatrixProgram:
    """A feasible LP/QP with =, ≥, ≤, ranged and free rows, bounded and free columns."""
    rng = np.random.default_rng(seed)
    n, m = 6, 7
    A = rng.normal(size=(m, n))
    x0 = rng.uniform(-1.0, 1.0, n)
    ax = A @ x0
    lo = np.array([ax[0], ax[1] - 1, -np.inf, ax[3] - 0.5, -np.inf, ax[5] - 2, -np.inf])
    hi = np.array([ax[0], np.inf, ax[2] + 1, ax[3] + 0.5, np.inf, ax[5] + 2, ax[6] + 0.1])
    Q = None
    if quadratic:
        B = rng.normal(size=(n, n))
        Q = sp.csc_matrix(B @ B.T + 0.1 * np.eye(n))
    return MatrixProgram(
        c=rng.normal(size=n),
        A=sp.csc_matrix(A),
        row_lower=lo,
        row_upper=hi,
        col_lower=np.r_[-3.0 * np.ones(n - 1), -np.inf],
        col_upper=np.r_[3.0 * np.ones(n - 2), np.inf, np.inf],
        Q=Q,
        offset=1.5,
    )


@pytest.mark.parametrize("quadratic", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_lp_and_qp_match_highs_with_their_duals(seed, quadratic):
    program = every_row_kind(seed, quadratic)
    if not quadratic:  # an LP needs bounded columns to be bounded below
        program = replace(program, col_lower=np.full(6, -3.0), col_upper=np.full(6, 3.0))
    ours = CplexAdapter().solve_program(program)
    reference = HighsAdapter().solve_program(program)
    assert ours.status is SolveStatus.OPTIMAL and reference.status is SolveStatus.OPTIMAL
    assert ours.objective == pytest.approx(reference.objective, rel=1e-7, abs=1e-7)
    assert ours.bound == pytest.approx(ours.objective)
    np.testing.assert_allclose(ours.row_duals, reference.row_duals, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_miqp_matches_brute_force(seed):
    program = random_miqp(seed, dense=bool(seed % 2))
    found = CplexAdapter().solve_program(program, options=CplexAdapter().accurate_options(1e-9))
    assert_brute_force_optimum(found, program)


def test_community_edition_limit_is_a_named_licence_error():
    n = 1001
    program = MatrixProgram(
        c=np.ones(n),
        A=sp.csc_matrix((0, n)),
        row_lower=np.zeros(0),
        row_upper=np.zeros(0),
        col_lower=np.zeros(n),
        col_upper=np.ones(n),
    )
    with pytest.raises(SolverLicenseError, match=r"Community Edition.*1001 variables.*1,000"):
        CplexAdapter().solve_program(program)


def test_unknown_parameter_and_infeasible_program_are_reported():
    program = every_row_kind(0, False)
    with pytest.raises(SolverError, match=r"Unknown CPLEX parameter 'mip\.nothing'"):
        CplexAdapter().solve_program(program, options={"mip.nothing": 1})
    infeasible = replace(
        program,
        row_lower=np.r_[1.0, program.row_lower[1:]],
        row_upper=np.r_[0.0, program.row_upper[1:]],
    )
    assert CplexAdapter().solve_program(infeasible).status is SolveStatus.INFEASIBLE
