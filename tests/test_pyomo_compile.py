"""aidopt.solvers.pyomo_compile: Pyomo models as matrix programs, and their answers back."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.factory import SolverFactory as ContribSolverFactory

from aidopt.exceptions import SolverCapabilityError
from aidopt.solvers.base import SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.pyomo_compile import CompiledModel, compile_model


def _gurobi_available() -> bool:
    try:
        return bool(pyo.SolverFactory("gurobi_direct").available(exception_flag=False))
    except Exception:
        return False


needs_gurobi = pytest.mark.skipif(not _gurobi_available(), reason="gurobipy is not installed")


def _solve_compiled(model: pyo.ConcreteModel) -> tuple[CompiledModel, float]:
    """Compile, solve with HiGHS (matrix path) and load the answer; the model's objective."""
    compiled = compile_model(model)
    result = HighsAdapter().solve_program(compiled.program)
    assert result.status is SolveStatus.OPTIMAL
    value = compiled.load(model, result.x, result.row_duals, result.objective)
    return compiled, value


def _contrib_highs(model: pyo.ConcreteModel) -> dict:
    """Pyomo's own HiGHS interface (it takes QPs): solves in place, returns the duals."""
    results = ContribSolverFactory("highs").solve(model)
    if model.nvariables() and all(v.is_continuous() for v in model.component_data_objects(pyo.Var)):
        return results.solution_loader.get_duals()
    return {}


def _gurobi_direct(model: pyo.ConcreteModel) -> None:
    pyo.SolverFactory("gurobi_direct").solve(model)


def _values(model: pyo.ConcreteModel) -> dict[str, float]:
    return {v.name: v.value for v in model.component_data_objects(pyo.Var) if not v.fixed}


def _lp_qp_model(sense, quadratic: bool) -> pyo.ConcreteModel:
    """≥, ≤, = and ranged rows, variables on both sides, an Expression and a fixed variable."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 2)
    m.x = pyo.Var(m.I, bounds=(-5, 5))
    m.y = pyo.Var(domain=pyo.NonNegativeReals)
    m.unused = pyo.Var()
    m.f = pyo.Var(initialize=2.0)
    m.f.fix()
    m.e = pyo.Expression(expr=m.x[0] + 2 * m.x[1] + m.f)
    m.ranged = pyo.Constraint(expr=pyo.inequality(1, m.e - m.y, 3))
    m.both_sides = pyo.Constraint(expr=m.x[2] >= m.x[0] - 1)
    m.le = pyo.Constraint(expr=m.x[0] + m.x[1] + m.x[2] + m.y <= 4 + m.f)
    m.eq = pyo.Constraint(expr=2 == m.x[1] - m.x[2] + 0.5 * m.y)
    m.off = pyo.Constraint(expr=m.x[0] >= 100)  # deactivated: ignored
    m.off.deactivate()
    obj = -3 * m.x[0] - m.x[1] - 3 * m.x[2] + m.y + m.f  # all four rows active at the optimum
    if quadratic:
        obj += (m.x[0] - m.x[1]) ** 2 + (m.x[2] + 0.5 * m.x[0]) ** 2
        obj += m.x[1] ** 2 + m.x[1] * m.x[2] + m.x[2] ** 2 + m.y**2
    sign = 1 if sense == pyo.minimize else -1
    m.o = pyo.Objective(expr=sign * obj, sense=sense)
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    return m


@pytest.mark.parametrize("quadratic", [False, True], ids=["LP", "QP"])
@pytest.mark.parametrize("sense", [pyo.minimize, pyo.maximize], ids=["min", "max"])
def test_matches_pyomo_highs(sense, quadratic: bool) -> None:
    model = _lp_qp_model(sense, quadratic)
    compiled, value = _solve_compiled(model)
    assert compiled.sense == (1 if sense == pyo.minimize else -1)
    assert [c.name for c in compiled.constraints] == ["ranged", "both_sides", "le", "eq"]
    assert "unused" not in {v.name for v in compiled.variables}
    assert "f" not in {v.name for v in compiled.variables}
    assert value == pytest.approx(pyo.value(model.o), abs=1e-9)

    reference = _lp_qp_model(sense, quadratic)
    duals = _contrib_highs(reference)
    assert value == pytest.approx(pyo.value(reference.o), rel=1e-7)
    mine = _values(model)
    for name, expected in _values(reference).items():
        if name != "unused":
            assert mine[name] == pytest.approx(expected, abs=1e-6), name
    for con in compiled.constraints:
        expected = duals[reference.component(con.local_name)]
        assert model.dual[con] == pytest.approx(expected, abs=1e-6), con.name
    assert model.f.value == 2.0  # a fixed variable is left alone


@needs_gurobi
@pytest.mark.parametrize("quadratic", [False, True], ids=["LP", "QP"])
@pytest.mark.parametrize("sense", [pyo.minimize, pyo.maximize], ids=["min", "max"])
def test_duals_match_gurobi_direct(sense, quadratic: bool) -> None:
    model = _lp_qp_model(sense, quadratic)
    compiled, value = _solve_compiled(model)
    reference = _lp_qp_model(sense, quadratic)
    _gurobi_direct(reference)
    assert value == pytest.approx(pyo.value(reference.o), rel=1e-7)
    signs = set()
    for con in compiled.constraints:
        expected = reference.dual[reference.component(con.local_name)]
        assert model.dual[con] == pytest.approx(expected, abs=1e-6), con.name
        signs.add(np.sign(round(expected, 6)))
    assert {-1.0, 1.0} <= signs  # both signs were compared


def test_dual_convention_on_a_known_lp() -> None:
    """min x + y s.t. x ≥ 1, −y ≤ −2: HiGHS's row duals +1, −1 (∂ objective / ∂ bound);
    maximised as max −x − y, Pyomo's duals are −1, +1 (∂ declared objective / ∂ bound)."""
    for sense, expected in ((pyo.minimize, [1.0, -1.0]), (pyo.maximize, [-1.0, 1.0])):
        m = pyo.ConcreteModel()
        m.x = pyo.Var()
        m.y = pyo.Var()
        m.lo = pyo.Constraint(expr=m.x >= 1)
        m.up = pyo.Constraint(expr=-m.y <= -2)
        sign = 1 if sense == pyo.minimize else -1
        m.o = pyo.Objective(expr=sign * (m.x + m.y), sense=sense)
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        compiled = compile_model(m)
        result = HighsAdapter().solve_program(compiled.program)
        np.testing.assert_allclose(result.row_duals, [1.0, -1.0])  # the program is a min
        assert compiled.load(m, result.x, result.row_duals) == pytest.approx(3.0 * sign)
        assert [m.dual[m.lo], m.dual[m.up]] == pytest.approx(expected)


def test_arrays_follow_the_conventions() -> None:
    """Q symmetric with ½xᵀQx: a·x_i·x_j → Q_ij = Q_ji = a, a·x_i² → Q_ii = 2a."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(-1, 2))
    m.y = pyo.Var(domain=pyo.Binary)
    m.z = pyo.Var(domain=pyo.Integers, bounds=(-3, 7))
    m.w = pyo.Var(domain=pyo.NonNegativeReals)
    m.k = pyo.Var(initialize=3.0)
    m.k.fix()
    m.o = pyo.Objective(expr=2 * m.x**2 + 3 * m.x * m.w + 5 * m.w**2 + m.z - 4 * m.y + m.k + 1)
    m.c = pyo.Constraint(expr=m.k * m.x + m.y - m.z <= 2 * m.k)
    m.r = pyo.Constraint(expr=pyo.inequality(-1, m.w - m.x + m.k, 4))
    compiled = compile_model(m)
    p = compiled.program
    names = [v.name for v in compiled.variables]
    assert sorted(names) == ["w", "x", "y", "z"]
    j = {name: names.index(name) for name in names}
    Q = p.Q.toarray()
    assert Q[j["x"], j["x"]] == 4.0 and Q[j["w"], j["w"]] == 10.0
    assert Q[j["x"], j["w"]] == Q[j["w"], j["x"]] == 3.0
    assert np.count_nonzero(Q) == 4
    assert p.c[j["z"]] == 1.0 and p.c[j["y"]] == -4.0 and p.offset == 4.0
    A = p.A.toarray()
    assert A[0, j["x"]] == 3.0 and A[0, j["y"]] == 1.0 and A[0, j["z"]] == -1.0
    np.testing.assert_array_equal(p.row_lower, [-np.inf, -4.0])
    np.testing.assert_array_equal(p.row_upper, [6.0, 1.0])
    bounds = dict(zip(names, zip(p.col_lower, p.col_upper, strict=True), strict=True))
    assert bounds == {"x": (-1, 2), "y": (0, 1), "z": (-3, 7), "w": (0, np.inf)}
    assert {name for name, flag in zip(names, p.integer, strict=True) if flag} == {"y", "z"}
    assert p.problem_class.value == "MIQP"
    x = np.array([0.5, 1.0, 2.0, 0.25])
    for var, value in zip(compiled.variables, x, strict=True):
        var.set_value(value)
    assert p.objective_value(x) == pytest.approx(pyo.value(m.o))


def test_milp_matches_pyomo_highs() -> None:
    def build() -> pyo.ConcreteModel:
        m = pyo.ConcreteModel()
        m.I = pyo.RangeSet(0, 5)
        value = [5, 4, 3, 7, 6, 2]
        weight = [2, 3, 1, 4, 5, 1]
        m.pick = pyo.Var(m.I, domain=pyo.Binary)
        m.extra = pyo.Var(domain=pyo.Integers, bounds=(0, 3))
        m.slack = pyo.Var(bounds=(0, 2.5))
        m.cap = pyo.Constraint(
            expr=sum(weight[i] * m.pick[i] for i in m.I) + 2 * m.extra + m.slack <= 10.5
        )
        m.pair = pyo.Constraint(expr=m.pick[0] + m.pick[3] <= 1)
        m.o = pyo.Objective(
            expr=sum(value[i] * m.pick[i] for i in m.I) + 1.5 * m.extra + 0.1 * m.slack,
            sense=pyo.maximize,
        )
        return m

    model = build()
    compiled, value = _solve_compiled(model)
    assert compiled.program.problem_class.value == "MILP"
    reference = build()
    _contrib_highs(reference)
    assert value == pytest.approx(pyo.value(reference.o), rel=1e-9)
    assert value == pytest.approx(pyo.value(model.o), rel=1e-9)


@needs_gurobi
def test_miqp_matches_gurobi_direct() -> None:
    from aidopt.solvers.gurobi import GurobiAdapter

    def build() -> pyo.ConcreteModel:
        m = pyo.ConcreteModel()
        m.I = pyo.RangeSet(0, 3)
        target = [0.3, 1.7, -2.2, 0.9]
        m.x = pyo.Var(m.I, bounds=(-3, 3))
        m.on = pyo.Var(m.I, domain=pyo.Binary)
        m.n = pyo.Var(domain=pyo.Integers, bounds=(-5, 5))
        m.up = pyo.Constraint(m.I, rule=lambda m, i: m.x[i] <= 3 * m.on[i])
        m.down = pyo.Constraint(m.I, rule=lambda m, i: m.x[i] >= -3 * m.on[i])
        m.count = pyo.Constraint(expr=sum(m.on[i] for i in m.I) <= 2)
        m.sum = pyo.Constraint(expr=sum(m.x[i] for i in m.I) == m.n + 0.5)
        m.o = pyo.Objective(
            expr=sum((m.x[i] - target[i]) ** 2 for i in m.I) + 0.5 * m.x[0] * m.x[1] + 0.1 * m.n
        )
        return m

    model = build()
    compiled = compile_model(model)
    assert compiled.program.problem_class.value == "MIQP"
    result = GurobiAdapter().solve_program(compiled.program)
    value = compiled.load(model, result.x, objective=result.objective)
    reference = build()
    _gurobi_direct(reference)
    assert value == pytest.approx(pyo.value(reference.o), rel=1e-6)
    assert value == pytest.approx(pyo.value(model.o), rel=1e-9)


def test_fixed_variables_are_constants() -> None:
    m = _lp_qp_model(pyo.minimize, quadratic=True)
    m.x[1].fix(0.5)
    compiled, value = _solve_compiled(m)
    assert not any(v is m.x[1] for v in compiled.variables)
    assert m.x[1].value == 0.5
    reference = _lp_qp_model(pyo.minimize, quadratic=True)
    reference.x[1].fix(0.5)
    _contrib_highs(reference)
    assert value == pytest.approx(pyo.value(reference.o), rel=1e-7)
    m.x[1].unfix()
    assert any(v is m.x[1] for v in compile_model(m).variables)


def test_load_without_a_dual_suffix() -> None:
    m = _lp_qp_model(pyo.minimize, quadratic=False)
    m.del_component("dual")
    compiled = compile_model(m)
    result = HighsAdapter().solve_program(compiled.program)
    value = compiled.load(m, result.x, result.row_duals)  # objective computed from x
    assert value == pytest.approx(result.objective, abs=1e-9)
    assert m.component("dual") is None
    with pytest.raises(ValueError, match="shape"):
        compiled.load(m, result.x[:-1])


def test_nested_blocks_and_inactive_objectives() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 4))
    m.b = pyo.Block()
    m.b.y = pyo.Var(bounds=(0, 4))
    m.b.c = pyo.Constraint(expr=m.x + m.b.y >= 3)
    m.dead = pyo.Block()
    m.dead.c = pyo.Constraint(expr=m.x >= 10)
    m.dead.deactivate()
    m.old = pyo.Objective(expr=m.x)
    m.old.deactivate()
    m.o = pyo.Objective(expr=m.x + 2 * m.b.y)
    compiled, value = _solve_compiled(m)
    assert [c.name for c in compiled.constraints] == ["b.c"]
    assert value == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda m: setattr(m, "q", pyo.Constraint(expr=m.x * m.y <= 1)), "'q' is quadratic"),
        (lambda m: setattr(m, "q", pyo.Constraint(expr=m.x**2 + m.y <= 1)), "'q' is quadratic"),
        (lambda m: setattr(m, "q", pyo.Constraint(expr=pyo.exp(m.x) <= 1)), "'q' is nonlinear"),
        (lambda m: setattr(m, "o2", pyo.Objective(expr=m.x)), "exactly one active objective"),
        (lambda m: m.o.deactivate(), "exactly one active objective"),
        (lambda m: m.o.set_value(m.x**3), "beyond quadratic"),
        (lambda m: m.o.set_value(-(m.x**2)), "not convex.*x²"),
        (lambda m: m.o.set_value(m.x**2 + 3 * m.x * m.y + m.y**2), "indefinite"),
        (lambda m: setattr(m.o, "sense", pyo.maximize) or m.o.set_value(m.x**2), "not convex"),
        (lambda m: setattr(m, "d", pyo.Var(domain={0, 0.5, 2})) or m.o.set_value(m.x + m.d), "'d'"),
        (lambda m: setattr(m, "s", pyo.SOSConstraint(var=m.v, sos=1)), "SOSConstraint 's'"),
        (lambda m: setattr(m, "r", pyo.Constraint(expr=pyo.inequality(m.y, m.x, 2))), "'r'"),
    ],
    ids=[
        "bilinear-row",
        "square-row",
        "exp-row",
        "two-objectives",
        "no-objective",
        "cubic-objective",
        "concave-square",
        "indefinite",
        "max-convex",
        "discrete-domain",
        "sos",
        "variable-range-bound",
    ],
)
def test_what_cannot_be_compiled(make, match: str) -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(-1, 1))
    m.y = pyo.Var(bounds=(-1, 1))
    m.v = pyo.Var([1, 2], bounds=(0, 1))
    m.c = pyo.Constraint(expr=m.x + m.y >= 0)
    m.o = pyo.Objective(expr=m.x**2 + m.y)
    make(m)
    with pytest.raises(SolverCapabilityError, match=match):
        compile_model(m)


def test_convexity_check_can_be_skipped() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(-1, 1))
    m.o = pyo.Objective(expr=-(m.x**2))
    assert compile_model(m, check_convexity=False).program.Q.toarray()[0, 0] == -2.0
