"""The S3VM branch and bound (solver ``bnb``) against brute force: every labelling of the
unlabeled rows, each a convex QP solved by HiGHS; margins of either sign, b fixed or free, rows
of any scale; limits and options (AID with ``bnb`` against brute force: tests/test_s3vm.py)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.exceptions import InvalidParameterError
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.outer_approximation import solve_convex_qp
from aidopt.solvers.program import MatrixProgram
from aidopt.solvers.s3vm_branch_and_bound import S3VMBranchAndBound
from aidopt.solvers.structures import SemiSupervisedSVM


def random_structure(seed, n_l=5, n_u=8, m=3, bias=None, scale=1.0):
    rng = np.random.default_rng(seed)
    K = n_l + n_u
    cls = np.where(rng.random(K) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(K, m))
    X[:, 0] += 1.0 * cls
    y = np.r_[cls[:n_l], np.zeros(n_u)]
    y[0], y[1] = 1.0, -1.0
    margin = np.r_[np.ones(n_l), rng.uniform(-0.3, 1.0, n_u)]  # some unlabeled rows: no loss
    cost = rng.uniform(0.1, 10.0, K)
    return SemiSupervisedSVM(
        features=scale * X, y=y, cost=cost, margin=margin, bias=bias, start=None
    )


def brute_force(s: SemiSupervisedSVM) -> float:
    """min over the labels d of the unlabeled rows of the convex QP at d (HiGHS's QP solver
    behind the outer approximation)."""
    X, K = s.features, s.y.size
    m = X.shape[1]
    unlabeled = np.flatnonzero(s.y == 0)
    best = np.inf
    for d in itertools.product([-1.0, 1.0], repeat=unlabeled.size):
        labels = s.y.copy()
        labels[unlabeled] = d
        mu = np.where(s.y != 0, 1.0, s.margin)
        A = sp.hstack([sp.csr_matrix(labels[:, None] * X), labels[:, None], sp.eye(K)])
        b_lo, b_hi = (s.bias, s.bias) if s.bias is not None else (-np.inf, np.inf)
        program = MatrixProgram(
            c=np.r_[np.zeros(m + 1), s.cost],
            A=sp.csc_matrix(A),
            row_lower=mu,
            row_upper=np.full(K, np.inf),
            col_lower=np.r_[np.full(m, -np.inf), b_lo, np.zeros(K)],
            col_upper=np.r_[np.full(m, np.inf), b_hi, np.full(K, np.inf)],
            Q=sp.diags(np.r_[np.ones(m), np.zeros(K + 1)]).tocsc(),
        )
        result = solve_convex_qp(program)
        assert result.status is SolveStatus.OPTIMAL
        best = min(best, result.objective)
    return best


def value(s: SemiSupervisedSVM, w, b) -> float:
    f = s.features @ w + b
    lab = s.y != 0
    loss = np.where(lab, np.maximum(0, 1 - s.y * f), np.maximum(0, s.margin - np.abs(f)))
    return float(0.5 * w @ w + s.cost @ loss)


@pytest.mark.parametrize("bias", [None, 0.3, -0.6])
@pytest.mark.parametrize("seed", range(4))
def test_optimum_and_bound_equal_brute_force(seed, bias):
    s = random_structure(seed, bias=bias)
    fit, result = S3VMBranchAndBound().solve_structure(s, options={"gap": 1e-9})
    best = brute_force(s)
    assert result.status is SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(best, rel=1e-7)
    assert value(s, fit.w, fit.b) == pytest.approx(result.objective, rel=1e-12)
    assert result.bound <= best * (1 + 1e-9) + 1e-12
    if bias is not None:
        assert fit.b == bias
    unlabeled = s.y == 0  # Lemma 1: each unlabeled row at the sign of its score
    f = s.features @ fit.w + fit.b
    np.testing.assert_array_equal(fit.d[unlabeled], np.where(f[unlabeled] >= 0, 1.0, -1.0))


@pytest.mark.parametrize("scale", [1e-3, 1e2])  # HiGHS, the reference, fails at 1e3
def test_badly_scaled_rows_reach_the_brute_force_optimum(scale):
    s = random_structure(7, bias=None, scale=scale)
    _, result = S3VMBranchAndBound().solve_structure(s, options={"gap": 1e-9})
    assert result.status is SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(brute_force(s), rel=1e-6)


def test_a_start_point_is_used_and_limits_are_statuses():
    s = random_structure(2, n_u=12)
    fit, result = S3VMBranchAndBound().solve_structure(s)
    _, warm = S3VMBranchAndBound().solve_structure(replace(s, start=(fit.w, fit.b)))
    assert warm.objective == pytest.approx(result.objective, rel=1e-9)
    assert warm.iterations <= result.iterations
    none, limited = S3VMBranchAndBound().solve_structure(s, options={"max_nodes": 1})
    if limited.status is not SolveStatus.OPTIMAL:  # one node rarely closes it
        assert none is None and limited.status is SolveStatus.ITERATION_LIMIT
        assert limited.bound <= result.objective
    none, timed = S3VMBranchAndBound().solve_structure(s, time_limit=0.0)
    assert timed.status in (SolveStatus.TIME_LIMIT, SolveStatus.OPTIMAL)


def test_unknown_options_are_named():
    with pytest.raises(InvalidParameterError, match="bnb"):
        S3VMBranchAndBound().solve_structure(random_structure(0), options={"tol": 1})
