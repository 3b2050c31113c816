"""aidopt.solvers.scaling: equilibrated programs solve right and map back exactly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.solvers.base import SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.program import MatrixProgram
from aidopt.solvers.scaling import ScaledProgram, equilibrate

INF = np.inf


def _random_program(
    rng: np.random.Generator, n: int = 30, m: int = 20, quadratic: bool = False
) -> MatrixProgram:
    """A feasible, bounded, well-scaled LP/QP (a strictly convex QP when ``quadratic``)."""
    A = sp.random(m, n, density=0.4, random_state=rng, data_rvs=rng.standard_normal).tocsc()
    x0 = rng.uniform(-1, 1, n)
    act = A @ x0
    kind = rng.integers(0, 4, m)  # ≥, ≤, =, ranged
    lo = np.where(kind != 1, act - rng.uniform(0.1, 1, m), -INF)
    hi = np.where((kind == 1) | (kind == 3), act + rng.uniform(0.1, 1, m), INF)
    lo[kind == 2] = hi[kind == 2] = act[kind == 2]
    ckind = rng.integers(0, 3, n)  # lower only, upper only, boxed
    cl = np.where(ckind != 1, x0 - rng.uniform(0.1, 2, n), -INF)
    cu = np.where(ckind != 0, x0 + rng.uniform(0.1, 2, n), INF)
    c = rng.standard_normal(n)
    c = np.where(ckind == 0, np.abs(c), np.where(ckind == 1, -np.abs(c), c))
    Q = None
    if quadratic:
        B = rng.standard_normal((n, n)) / np.sqrt(n)
        Q = sp.csc_matrix(B.T @ B + 0.1 * np.eye(n))
    return MatrixProgram(
        c=c, A=A, row_lower=lo, row_upper=hi, col_lower=cl, col_upper=cu, Q=Q, offset=0.5
    )


def _distort(program: MatrixProgram, r, s, tau: float) -> MatrixProgram:
    """Rows ×r, x = s·x', objective ×τ: the same problem, badly scaled (not by powers of 2)."""
    Q = program.Q
    if Q is not None:
        Q = sp.csc_matrix(tau * (sp.diags(s) @ Q @ sp.diags(s)))
    return dataclasses.replace(
        program,
        c=tau * program.c * s,
        A=sp.csc_matrix(sp.diags(r) @ program.A @ sp.diags(s)),
        row_lower=r * program.row_lower,
        row_upper=r * program.row_upper,
        col_lower=program.col_lower / s,
        col_upper=program.col_upper / s,
        Q=Q,
        offset=tau * program.offset,
    )


def _solve(program: MatrixProgram, time_limit: float = 10.0):
    """HiGHS on the program exactly as given (the adapter's public entry equilibrates)."""
    try:
        return HighsAdapter()._solve(program, time_limit=time_limit, verbose=False, options=None)
    except Exception:  # HiGHS's QP solver raises on a "Solve error"
        return None


def _rel(value: float, reference: float) -> float:
    return abs(value - reference) / max(1.0, abs(reference))


def _distorted_case(seed: int, quadratic: bool):
    rng = np.random.default_rng(seed)
    program = _random_program(rng, quadratic=quadratic)
    r = 10.0 ** rng.uniform(-9, 9, program.n_rows)
    s = 10.0 ** rng.uniform(-9, 9, program.n_cols)
    tau = 10.0 ** rng.uniform(-9, 9)
    return program, _distort(program, r, s, tau), r, s, tau


@pytest.mark.parametrize("quadratic", [False, True], ids=["LP", "QP"])
@pytest.mark.parametrize("seed", range(6))
def test_badly_scaled_program_is_solved_right(seed: int, quadratic: bool) -> None:
    program, distorted, r, s, tau = _distorted_case(seed, quadratic)
    reference = _solve(program)
    assert reference.status is SolveStatus.OPTIMAL
    scaled = equilibrate(distorted)
    result = scaled.unscale_result(_solve(scaled.program))
    assert result.status is SolveStatus.OPTIMAL
    assert _rel(result.objective / tau, reference.objective) <= 1e-7
    # back in the well-scaled variables: the same point and duals as the well-scaled solve (to
    # the accuracy of HiGHS's QP solver, ~1e-6 on x)
    atol = 1e-5 if quadratic else 1e-7
    np.testing.assert_allclose(s * result.x, reference.x, atol=atol)
    np.testing.assert_allclose(result.row_duals * r / tau, reference.row_duals, atol=atol)


def test_badly_scaled_programs_fail_unscaled() -> None:
    """Why: HiGHS 1.16 on the same programs unscaled fails, stalls or is wrong (all 12 measured)."""
    wrong = 0
    for seed in range(6):
        for quadratic in (False, True):
            program, distorted, _, _, tau = _distorted_case(seed, quadratic)
            raw = _solve(distorted, time_limit=1.0)  # the scaled ones take milliseconds
            wrong += (
                raw is None
                or raw.status is not SolveStatus.OPTIMAL
                or _rel(raw.objective / tau, _solve(program).objective) > 1e-7
            )
    assert wrong >= 9


def test_lad_on_tiny_data() -> None:
    """The measured failure: LAD (its LP dual, as models/lad.py gives it) on data ×1e−9."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    y = X @ rng.standard_normal(6) + rng.standard_normal(300)

    def lad_dual(X, y) -> MatrixProgram:  # max yᵀs s.t. [1 X]ᵀs = 0, −1 ≤ s ≤ 1
        S = np.vstack([np.ones(len(y)), X.T])
        zeros = np.zeros(S.shape[0])
        ones = np.ones(len(y))
        return MatrixProgram(
            c=-y,
            A=sp.csc_matrix(S),
            row_lower=zeros,
            row_upper=zeros,
            col_lower=-ones,
            col_upper=ones,
        )

    reference = _solve(lad_dual(X, y))
    tiny = lad_dual(1e-9 * X, 1e-9 * y)
    raw = _solve(tiny)
    assert _rel(raw.objective * 1e9, reference.objective) > 1e-2  # "optimal" and 10+ % off
    scaled = equilibrate(tiny)
    result = scaled.unscale_result(_solve(scaled.program))
    assert _rel(result.objective * 1e9, reference.objective) <= 1e-9
    beta = -result.row_duals  # β = −(row duals); the intercept scales with the data
    beta[0] *= 1e9
    np.testing.assert_allclose(beta, -reference.row_duals, atol=1e-9)


@pytest.mark.parametrize("quadratic", [False, True], ids=["LP", "QP"])
def test_unscaled_duals_equal_the_original_duals(quadratic: bool) -> None:
    """On a well-scaled program the scaled solve, unscaled, is the original's solve."""
    program = _random_program(np.random.default_rng(7), quadratic=quadratic)
    reference = _solve(program)
    scaled = equilibrate(program)
    result = scaled.unscale_result(_solve(scaled.program))
    assert not np.all(scaled.row_scale == 1.0)  # scaling did something
    assert _rel(result.objective, reference.objective) <= 1e-9
    assert _rel(result.bound, reference.bound) <= 1e-9
    atol = 1e-5 if quadratic else 1e-9  # HiGHS's QP solver: x to ~1e-6
    np.testing.assert_allclose(result.x, reference.x, atol=atol)
    np.testing.assert_allclose(result.row_duals, reference.row_duals, atol=atol)
    assert np.sum(np.abs(reference.row_duals) > 1e-6) >= 3  # signs were really compared


def test_round_trip_is_exact() -> None:
    rng = np.random.default_rng(3)
    program = _distort(
        _random_program(rng, quadratic=True),
        10.0 ** rng.uniform(-9, 9, 20),
        10.0 ** rng.uniform(-9, 9, 30),
        1e-5,
    )
    scaled = equilibrate(program)
    d, r, sigma = scaled.col_scale, scaled.row_scale, scaled.obj_scale
    for factor in (d, r, np.array([sigma])):  # powers of two
        assert np.all(np.frexp(factor)[0] == 0.5)
    p = scaled.program
    # the program: unscaling the scaled arrays gives the original arrays bit for bit
    a = p.A.tocsc()
    assert np.array_equal(a.indptr, program.A.indptr)
    assert np.array_equal(a.indices, program.A.indices)
    cols = np.repeat(np.arange(program.n_cols), np.diff(a.indptr))
    assert np.array_equal(a.data / r[a.indices] / d[cols], program.A.data)
    q = p.Q.tocsc()
    cols = np.repeat(np.arange(program.n_cols), np.diff(q.indptr))
    assert np.array_equal(q.data / sigma / d[q.indices] / d[cols], program.Q.tocsc().data)
    assert np.array_equal(p.c / sigma / d, program.c)
    assert np.array_equal(p.row_lower / r, program.row_lower)  # ±inf kept
    assert np.array_equal(p.row_upper / r, program.row_upper)
    assert np.array_equal(p.col_lower * d, program.col_lower)
    assert np.array_equal(p.col_upper * d, program.col_upper)
    assert p.offset / sigma == program.offset
    # the answers: scale → unscale is the identity, bit for bit
    x = rng.standard_normal(program.n_cols) * 10.0 ** rng.uniform(-9, 9, program.n_cols)
    assert np.array_equal(scaled.unscale_x(scaled.scale_x(x)), x)
    y = rng.standard_normal(program.n_rows) * 10.0 ** rng.uniform(-9, 9, program.n_rows)
    assert np.array_equal(scaled.unscale_row_duals(y * sigma / r), y)
    assert scaled.unscale_objective(sigma * 1.2345e-7) == 1.2345e-7
    assert scaled.unscale_bound(None) is None
    # the objective of a point is the same number, scaled by σ
    assert p.objective_value(scaled.scale_x(x)) == pytest.approx(
        sigma * program.objective_value(x), rel=1e-12
    )


def test_integer_columns_are_not_scaled() -> None:
    """A small MILP with badly scaled continuous parts: integrality kept, same optimum."""
    rng = np.random.default_rng(11)
    program = _random_program(rng, n=12, m=8)
    integer = np.zeros(12, dtype=bool)
    integer[:5] = True
    col_lower = np.where(integer, np.floor(program.col_lower), program.col_lower)
    col_upper = np.where(integer, np.ceil(program.col_upper), program.col_upper)
    milp = dataclasses.replace(program, integer=integer, col_lower=col_lower, col_upper=col_upper)
    reference = _solve(milp)
    assert reference.status is SolveStatus.OPTIMAL
    s = np.where(integer, 1.0, 10.0 ** rng.uniform(-8, 8, 12))
    r = 10.0 ** rng.uniform(-8, 8, 8)
    distorted = _distort(milp, r, s, 1e6)
    scaled = equilibrate(distorted)
    assert np.all(scaled.col_scale[integer] == 1.0)
    assert np.array_equal(scaled.program.integer, integer)
    assert np.array_equal(scaled.program.col_lower[integer], col_lower[integer])
    result = scaled.unscale_result(_solve(scaled.program))
    assert result.status is SolveStatus.OPTIMAL
    assert _rel(result.objective / 1e6, reference.objective) <= 1e-7
    assert _rel(result.bound / 1e6, reference.bound) <= 1e-6
    x = s * result.x
    np.testing.assert_array_equal(x[integer], np.round(x[integer]))
    np.testing.assert_allclose(x, reference.x, atol=1e-6)


def test_start_basis_and_meta_survive() -> None:
    program = _random_program(np.random.default_rng(5))
    first = _solve(program)
    warm = dataclasses.replace(program, start_basis=first.basis, meta={"model": "test"})
    scaled = equilibrate(warm)
    assert scaled.program.start_basis is warm.start_basis
    assert scaled.program.meta == {"model": "test"}
    assert scaled.program.meta is not warm.meta
    result = _solve(scaled.program)  # the optimal basis stays optimal: no simplex iterations
    assert result.iterations == 0
    assert _rel(scaled.unscale_objective(result.objective), first.objective) <= 1e-9


def test_degenerate_programs() -> None:
    """No rows, no objective, empty columns and explicit zeros are scaled without trouble."""
    empty = MatrixProgram(
        c=np.zeros(3),
        A=sp.csc_matrix((0, 3)),
        row_lower=np.zeros(0),
        row_upper=np.zeros(0),
        col_lower=np.array([-INF, 0.0, 1e-9]),
        col_upper=np.array([INF, INF, 1e9]),
    )
    scaled = equilibrate(empty)
    assert isinstance(scaled, ScaledProgram)
    assert scaled.obj_scale == 1.0
    assert np.all(np.isfinite(scaled.col_scale))
    zero_entry = sp.csc_matrix((np.array([0.0, 2.0]), np.array([0, 0]), np.array([0, 1, 2, 2])))
    program = MatrixProgram(
        c=np.array([1.0, 1e-12, 0.0]),
        A=zero_entry,
        row_lower=np.array([1.0]),
        row_upper=np.array([INF]),
        col_lower=np.zeros(3),
        col_upper=np.full(3, INF),
    )
    scaled = equilibrate(program)
    assert np.all(np.isfinite(scaled.program.A.data))
    assert scaled.program.A.nnz == program.A.nnz
    assert np.all(np.isposinf(scaled.program.col_upper))
