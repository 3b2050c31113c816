"""The declaration layer (aidopt.solvers.algebra): one declaration gives the matrix program, its
dual form and the Pyomo model, which all reach the same optimum and read back the same values and
multipliers — in the one documented sign convention, checked here against the optimum's own
sensitivity to each right-hand side (finite differences), not against another library."""

from __future__ import annotations

import numpy as np
import pytest

from aidopt.core.registry import get_solver
from aidopt.solvers.algebra import Problem, sum_squares


def _svr_like(rhs_shift: float = 0.0, *, seed: int = 0) -> tuple[Problem, dict]:
    rng = np.random.default_rng(seed)
    K, m = 30, 3
    X = rng.standard_normal((K, m))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.4 * rng.standard_normal(K) + 1.0
    weight = rng.integers(1, 5, K).astype(float)
    p = Problem("svr-like")
    w, b = p.variables("w", m), p.variables("b", 1)
    xi, xs = p.variables("xi", K, lower=0.0), p.variables("xi_star", K, lower=0.0)
    p.minimize(0.5 * sum_squares(w) + 0.7 * weight @ (xi + xs))
    p.subject_to("above", y - X @ w - b <= 0.1 + xi + rhs_shift)
    p.subject_to("below", X @ w + b - y <= 0.1 + xs)
    p.subject_to("centre", np.ones((1, m)) @ w == 0.25)
    return p, {"K": K, "m": m}


def _solve(p: Problem):
    result = get_solver("highs").solve_program(p.program())
    assert str(result.status) == "optimal"
    return result, p.values(result)


def test_the_three_forms_agree():
    p, _ = _svr_like()
    result, primal = _solve(p)
    dual = p.dual()
    assert dual.program is not None and dual.program.n_rows == 3 + 1  # a row per w_j and b
    d_result = get_solver("highs").solve_program(dual.program)
    from_dual = dual.values(d_result)
    assert -d_result.objective == pytest.approx(result.objective, rel=1e-6)
    np.testing.assert_allclose(from_dual["w"], primal["w"], atol=1e-5)
    np.testing.assert_allclose(from_dual.dual("above"), primal.dual("above"), atol=1e-5)

    model = p.pyomo()
    get_solver("highs").solve_pyomo(model)
    from_pyomo = p.values_from_pyomo(model)
    np.testing.assert_allclose(from_pyomo["w"], primal["w"], atol=1e-6)
    np.testing.assert_allclose(from_pyomo.dual("below"), primal.dual("below"), atol=1e-6)
    np.testing.assert_allclose(from_pyomo.dual("centre"), primal.dual("centre"), atol=1e-6)


def test_multipliers_are_the_sensitivity_of_the_optimum():
    """An inequality's multiplier is ≥ 0 and F* falls by λδ when it is loosened by δ; an
    equality's is ∂F*/∂(right-hand side)."""
    p, _ = _svr_like()
    base, values = _solve(p)
    above = values.dual("above")
    assert above.min() >= -1e-9 and values.dual("below").min() >= -1e-9
    delta = 1e-4
    loosened, _ = _solve(_svr_like(rhs_shift=delta)[0])  # every 'above' row loosened by δ
    assert (base.objective - loosened.objective) / delta == pytest.approx(above.sum(), rel=1e-3)

    def with_centre(value: float) -> float:
        q, _ = _svr_like()
        q.constraints.pop("centre")
        w = q.blocks[0]
        q.subject_to("centre", np.ones((1, w.size)) @ w == value)
        return _solve(q)[0].objective

    slope = (with_centre(0.25 + delta) - with_centre(0.25 - delta)) / (2 * delta)
    assert values.dual("centre")[0] == pytest.approx(slope, rel=1e-3)


def test_an_exported_lp_file_gives_the_optimum(tmp_path):
    """The Pyomo model of a declaration, written as an LP file and solved from the file alone."""
    import highspy

    rng = np.random.default_rng(1)
    K, m = 20, 2
    X, y = rng.standard_normal((K, m)), rng.standard_normal(K)
    p = Problem("lad-like")
    beta = p.variables("beta", m)
    u, v = p.variables("u", K, lower=0.0), p.variables("v", K, lower=0.0)
    p.minimize(np.ones(K) @ (u + v))
    p.subject_to("fit", X @ beta + u - v == y)
    optimum = _solve(p)[0].objective
    path = tmp_path / "lad.lp"
    p.pyomo().write(str(path), io_options={"symbolic_solver_labels": True})
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(optimum, rel=1e-9)


def test_mistakes_are_named():
    p = Problem("bad")
    x = p.variables("x", 3)
    with pytest.raises(ValueError, match="rows"):
        p.subject_to("c", np.ones((2, 4)) @ x >= 0.0)
    with pytest.raises(ValueError, match="quadratic"):
        p.subject_to("q", sum_squares(x) <= 1.0)
    with pytest.raises(TypeError, match="truth value"):
        bool(x >= 0.0)
    with pytest.raises(ValueError, match="one affine or quadratic"):
        p.minimize(x)  # three rows
    p.minimize(np.ones(3) @ x)
    with pytest.raises(TypeError, match="not a comparison"):
        p.subject_to("c", x)  # type: ignore[arg-type]


def test_a_problem_outside_the_dual_form_is_solved_as_declared():
    p = Problem("ranged")
    x = p.variables("x", 2, lower=-1.0, upper=1.0)  # boxed columns: no dual form
    p.minimize(0.5 * sum_squares(x) - np.array([1.0, 2.0]) @ x)
    assert p.dual().program is None


def test_the_dual_form_of_an_lp_with_two_slacks_per_row():
    """LAD's aggregated LP: each equality row has e⁺ and e⁻; both become bounds of its dual
    variable, the dual has a row per coefficient, and the read-back recovers e± and β."""
    rng = np.random.default_rng(3)
    K, m = 40, 3
    X, y, weight = rng.standard_normal((K, m)), rng.standard_normal(K), rng.integers(1, 9, K)
    p = Problem("lad-like")
    beta, beta0 = p.variables("beta", m), p.variables("beta0", 1)
    e_plus, e_minus = p.variables("e_plus", K, lower=0.0), p.variables("e_minus", K, lower=0.0)
    p.minimize(weight @ e_plus + 2.0 * weight @ e_minus)
    p.subject_to("deviation", X @ beta + beta0 + e_plus - e_minus == y)
    result, primal = _solve(p)
    dual = p.dual()
    assert dual.program is not None and dual.program.n_rows == m + 1 and dual.program.Q is None
    answer = get_solver("highs").solve_program(dual.program)
    read = dual.values(answer)
    assert -answer.objective == pytest.approx(result.objective, rel=1e-9)
    np.testing.assert_allclose(read["beta"], primal["beta"], atol=1e-8)
    np.testing.assert_allclose(read.dual("deviation"), primal.dual("deviation"), atol=1e-8)
    residual = y - X @ read["beta"] - read["beta0"]
    np.testing.assert_allclose(read["e_plus"] - read["e_minus"], residual, atol=1e-9)
    assert min(read["e_plus"].min(), read["e_minus"].min()) >= 0.0


def test_a_maximisation_is_declared_and_reported_as_one():
    """max Σ c_j x_j − ½‖x‖² on [0, 1]² with c = (1, 3): x* = (1, 1), F* = 4 − 1 = 3. The
    matrix program minimises the negation (and says so), the Pyomo model maximises, and both
    read back the same point."""
    import pyomo.environ as pyo

    p = Problem("a maximisation")
    x = p.variables("x", 2, lower=0.0, upper=1.0)
    p.maximize(np.array([1.0, 3.0]) @ x - 0.5 * sum_squares(x))
    result, values = _solve(p)
    assert p.program().meta["objective_sign"] == -1.0
    assert result.objective == pytest.approx(-3.0)
    np.testing.assert_allclose(values["x"], [1.0, 1.0], atol=1e-9)
    model = p.pyomo()
    assert get_solver("pyomo:highs").solve_pyomo(model).objective == pytest.approx(3.0)
    assert model.objective.sense == pyo.maximize
    np.testing.assert_allclose(p.values_from_pyomo(model)["x"], [1.0, 1.0], atol=1e-9)
