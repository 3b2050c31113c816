"""A QP answer re-solved on its face (aidopt.solvers.polish): exact where the solver stopped at
its tolerance, and refused where the face is wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from aidopt.solvers.kkt import kkt_error
from aidopt.solvers.polish import polish_qp
from aidopt.solvers.program import MatrixProgram, ProblemClass


def capped_simplex(c: np.ndarray, total: float) -> MatrixProgram:
    """min ½‖x‖² − cᵀx s.t. Σx = total, 0 ≤ x ≤ 1 (optimum x = clip(c − θ, 0, 1))."""
    n = c.size
    return MatrixProgram(
        c=-c,
        A=sp.csc_matrix(np.ones((1, n))),
        row_lower=np.array([total]),
        row_upper=np.array([total]),
        col_lower=np.zeros(n),
        col_upper=np.ones(n),
        Q=sp.identity(n, format="csc"),
    )


def exact(c: np.ndarray, total: float) -> np.ndarray:
    lo, hi = c.min() - 1.0, c.max()
    for _ in range(200):  # bisection on θ
        theta = 0.5 * (lo + hi)
        lo, hi = (theta, hi) if np.clip(c - theta, 0, 1).sum() > total else (lo, theta)
    return np.clip(c - 0.5 * (lo + hi), 0.0, 1.0)


def test_a_perturbed_optimum_is_restored_on_its_face():
    rng = np.random.default_rng(0)
    c = rng.uniform(-1.0, 2.0, size=40)
    program = capped_simplex(c, 7.0)
    assert program.problem_class is ProblemClass.QP
    x_star = exact(c, 7.0)
    noisy = np.clip(x_star + 1e-7 * rng.standard_normal(40) * (x_star > 0) * (x_star < 1), 0, 1)
    x, duals = polish_qp(program, noisy)
    np.testing.assert_allclose(x, x_star, atol=1e-12)
    gap, infeasibility = kkt_error(program, x, duals)
    assert gap <= 1e-12 and infeasibility <= 1e-12


def test_a_wrong_face_is_refused():
    """Columns taken as free whose face optimum leaves the box: no polished answer."""
    c = np.array([3.0, 0.0, 0.0])
    program = capped_simplex(c, 1.0)  # optimum (1, 0, 0)
    assert polish_qp(program, np.array([0.5, 0.25, 0.25])) is None


def test_the_highs_svm_route_certifies_tiny_data_at_tol_zero():
    """8 labeled rows: HiGHS alone stops at a proven gap of 1e-6; polished, the dual certifies."""
    from pathlib import Path

    from aidopt import AIDSolver, AIDStatus
    from aidopt.data.containers import BinaryData
    from aidopt.models.svm import SVMModel

    frame = pd.read_csv(Path(__file__).resolve().parents[1] / "instances" / "s3vm_small.csv")
    frame = frame[frame["label"].notna()]
    data = BinaryData.from_arrays(frame[["x1", "x2", "x3"]].to_numpy(), frame["label"].to_numpy())
    result = AIDSolver(SVMModel(M=2.0), solver="highs", tol=0.0).solve(data)
    assert result.status is AIDStatus.OPTIMAL and result.certificate.gap <= 1e-9
    assert result.objective == pytest.approx(0.36995377459, rel=1e-9)
