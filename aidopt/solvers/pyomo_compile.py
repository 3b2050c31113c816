"""A Pyomo model as a :class:`~aidopt.solvers.program.MatrixProgram`, and its answer back into the
model.

:func:`compile_model` turns the active part of a ``ConcreteModel`` into

    min  ½ xᵀQx + cᵀx + offset   s.t.  row_lower ≤ A x ≤ row_upper,  col_lower ≤ x ≤ col_upper

so that a linear or convex quadratic model can go to a matrix solver (HiGHS through Pyomo's
``appsi_highs`` has no quadratic objective). Columns are the unfixed variables that appear in
the active objective and constraints, in order of first appearance (a fixed variable is a
constant; a variable that only appears with coefficient 0 is left out); rows are the active
constraints, one each, in declaration order (``lb ≤ body ≤ ub`` as Pyomo normalises it, with the
constant of the body moved to the bounds; a constraint with no variable left is an empty row).
A maximised objective f is compiled as min −f (``sense`` = −1), so Q, c and offset are
``sense``·(those of f). Q is symmetric: a term a·x_i·x_j (i ≠ j) gives Q_ij = Q_ji = a and a·x_i²
gives Q_ii = 2a.

Row duals (HiGHS's ``row_dual``, same as Gurobi's ``Pi`` on a minimisation) are y_i = ∂(min
objective)/∂(active bound of row i): y ≥ 0 at a lower bound, y ≤ 0 at an upper bound. Pyomo's
``dual`` suffix (filled by ``gurobi_direct`` and ``pyomo.contrib.solver`` 'highs' alike) is
∂(objective as declared)/∂(bound of the constraint) for both senses, i.e. ``sense``·y: for a
minimisation ≥ rows have dual ≥ 0 and ≤ rows ≤ 0, for a maximisation the signs flip.
:meth:`CompiledModel.load` applies that conversion (checked against both solvers on LPs and
QPs with ≥, ≤, = and ranged rows, minimised and maximised, in tests/test_pyomo_compile.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import SolverCapabilityError
from aidopt.solvers.program import MatrixProgram

__all__ = ["CompiledModel", "compile_model", "solve_compiled"]

_CONVEXITY_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class CompiledModel:
    """A compiled model: ``program`` and the maps between its indices and the model.

    ``variables[j]`` is column j, ``constraints[i]`` is row i, ``objective`` the compiled
    objective; ``sense`` is +1 (minimize) or −1 (maximize): program objective = sense · model
    objective.
    """

    program: MatrixProgram
    variables: tuple[Any, ...]
    constraints: tuple[Any, ...]
    objective: Any
    sense: int

    def load(
        self,
        model: Any,
        x: ArrayLike,
        row_duals: ArrayLike | None = None,
        objective: float | None = None,
    ) -> float:
        """Set the variables to ``x`` and, if given, the model's ``dual`` import suffix.

        ``row_duals`` are in HiGHS's convention for the program (see the module docstring) and
        are stored as ``sense``·y, Pyomo's convention. ``objective`` is the program's objective
        value (computed from x when None). Returns the objective value in the model's sense.
        """
        import pyomo.environ as pyo

        values = np.asarray(x, dtype=np.float64)
        if values.shape != (len(self.variables),):
            raise ValueError(f"x has shape {values.shape}, expected ({len(self.variables)},)")
        for var, value in zip(self.variables, values.tolist(), strict=True):
            var.set_value(value, skip_validation=True)
        if row_duals is not None:
            duals = np.asarray(row_duals, dtype=np.float64)
            if duals.shape != (len(self.constraints),):
                raise ValueError(
                    f"row_duals has shape {duals.shape}, expected ({len(self.constraints)},)"
                )
            suffix = model.component("dual")
            if isinstance(suffix, pyo.Suffix) and suffix.import_enabled():
                # + 0.0 turns the −0.0 of a maximisation into 0.0
                for con, dual in zip(
                    self.constraints, (self.sense * duals + 0.0).tolist(), strict=True
                ):
                    suffix[con] = dual
        value = self.program.objective_value(values) if objective is None else float(objective)
        return self.sense * value


class _Recorder:
    """Pyomo's var-recorder protocol: each unfixed variable met, by id, in order of meeting."""

    def __init__(self) -> None:
        self.var_map: dict[int, Any] = {}
        self.var_order: dict[int, int] = {}

    def add(self, var: Any) -> None:
        if not var.fixed:
            self.var_order[id(var)] = len(self.var_order)
            self.var_map[id(var)] = var


def _check_components(model: Any) -> None:
    import pyomo.environ as pyo
    from pyomo.network import Port
    from pyomo.repn.util import categorize_valid_components

    _, unknown = categorize_valid_components(
        model,
        active=True,
        valid={
            pyo.Block,
            pyo.Constraint,
            pyo.Var,
            pyo.Param,
            pyo.Expression,
            pyo.Suffix,
            pyo.Set,
            pyo.RangeSet,
            pyo.ExternalFunction,
            Port,
        },
        targets={pyo.Objective},
    )
    if unknown:
        names = ", ".join(
            f"{ctype.__name__} {data.name!r}" for ctype, datas in unknown.items() for data in datas
        )
        raise SolverCapabilityError(
            f"Model {model.name!r} has active components that a matrix program cannot hold: "
            f"{names}."
        )


def compile_model(model: Any, *, check_convexity: bool = True) -> CompiledModel:
    """The active LP/QP/MILP/MIQP of a Pyomo model as a :class:`CompiledModel`.

    Raises :class:`~aidopt.exceptions.SolverCapabilityError` (naming the component) for a
    nonlinear or quadratic constraint, a nonlinear objective, a variable whose domain is neither
    continuous nor integer, other active modelling components (SOS, disjunctions, ...), or not
    exactly one active objective. With ``check_convexity``, also for a quadratic objective
    that is visibly not convex after the sense change: a negative Q_ii, or a 2×2 principal
    minor Q_ii Q_jj − Q_ij² < 0 (necessary conditions for Q ⪰ 0; Q ⪰ 0 itself is not tested).
    Builds A and Q from COO triplets in O(nnz).
    """
    import pyomo.environ as pyo
    from pyomo.core.expr import polynomial_degree
    from pyomo.repn.quadratic import QuadraticRepnVisitor

    _check_components(model)
    objectives = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
    if len(objectives) != 1:
        names = ", ".join(repr(obj.name) for obj in objectives) or "none"
        raise SolverCapabilityError(
            f"Model {model.name!r} must have exactly one active objective to be compiled; "
            f"it has {len(objectives)} ({names})."
        )
    objective = objectives[0]
    sense = 1 if objective.sense == pyo.minimize else -1

    recorder = _Recorder()
    try:
        visitor = QuadraticRepnVisitor({}, var_recorder=recorder)
    except TypeError:  # Pyomo < 6.8.1
        visitor = QuadraticRepnVisitor({}, recorder.var_map, recorder.var_order, None)
    column: dict[int, int] = {}
    variables: list[Any] = []

    def columns_of(ids) -> list[int]:
        out = []
        for vid in ids:
            j = column.get(vid)
            if j is None:
                j = column[vid] = len(variables)
                variables.append(recorder.var_map[vid])
            out.append(j)
        return out

    # Objective: sense·(½xᵀQx + cᵀx + offset).
    repn = visitor.walk_expression(objective.expr)
    if repn.nonlinear is not None:
        degree = polynomial_degree(objective.expr)
        raise SolverCapabilityError(
            f"The objective {objective.name!r} is nonlinear beyond quadratic"
            + ("" if degree is None else f" (a polynomial of degree {degree})")
            + "; only linear and quadratic objectives can be compiled."
        )
    c_index = columns_of(repn.linear)
    c_value = [sense * float(v) for v in repn.linear.values()]
    offset = sense * float(repn.constant)
    q_rows: list[int] = []
    q_cols: list[int] = []
    q_vals: list[float] = []
    for (vid1, vid2), coef in (repn.quadratic or {}).items():
        i, j = columns_of((vid1, vid2))
        value = sense * float(coef)
        if i == j:
            q_rows.append(i)
            q_cols.append(i)
            q_vals.append(2.0 * value)
        else:
            q_rows += (i, j)
            q_cols += (j, i)
            q_vals += (value, value)

    # Constraints: lb − constant ≤ linear part ≤ ub − constant.
    constraints = list(model.component_data_objects(pyo.Constraint, active=True, descend_into=True))
    a_rows: list[int] = []
    a_cols: list[int] = []
    a_vals: list[float] = []
    row_lower = np.full(len(constraints), -np.inf)
    row_upper = np.full(len(constraints), np.inf)
    for i, con in enumerate(constraints):
        lb, body, ub = _bounded(con)
        repn = visitor.walk_expression(body)
        if repn.nonlinear is not None or repn.quadratic:
            kind = "quadratic" if repn.nonlinear is None else "nonlinear"
            raise SolverCapabilityError(
                f"The constraint {con.name!r} is {kind}; only linear constraints can be "
                "compiled to a matrix program (use a solver that takes the Pyomo model)."
            )
        constant = float(repn.constant)
        if lb is not None:
            row_lower[i] = float(lb) - constant
        if ub is not None:
            row_upper[i] = float(ub) - constant
        a_cols += columns_of(repn.linear)
        a_vals += repn.linear.values()
        a_rows += [i] * len(repn.linear)

    n = len(variables)
    col_lower = np.full(n, -np.inf)
    col_upper = np.full(n, np.inf)
    integer = np.zeros(n, dtype=bool)
    for j, var in enumerate(variables):
        lb, ub = var.bounds
        if lb is not None:
            col_lower[j] = float(lb)
        if ub is not None:
            col_upper[j] = float(ub)
        if var.is_integer():
            integer[j] = True
        elif not var.is_continuous():
            raise SolverCapabilityError(
                f"The variable {var.name!r} has the domain {var.domain}, which is neither "
                "continuous nor integer; it cannot be compiled."
            )

    c = np.zeros(n)
    np.add.at(c, np.asarray(c_index, dtype=np.int64), np.asarray(c_value, dtype=np.float64))
    A = sp.csc_matrix(
        (np.asarray(a_vals, dtype=np.float64), (np.asarray(a_rows), np.asarray(a_cols))),
        shape=(len(constraints), n),
    )
    Q = None
    if q_vals:
        Q = sp.csc_matrix(
            (np.asarray(q_vals, dtype=np.float64), (np.asarray(q_rows), np.asarray(q_cols))),
            shape=(n, n),
        )
        Q.sum_duplicates()
        if check_convexity:
            _check_convexity(Q, variables, objective, sense)
    program = MatrixProgram(
        c=c,
        A=A,
        row_lower=row_lower,
        row_upper=row_upper,
        col_lower=col_lower,
        col_upper=col_upper,
        Q=Q,
        integer=integer if integer.any() else None,
        offset=offset,
    )
    return CompiledModel(
        program=program,
        variables=tuple(variables),
        constraints=tuple(constraints),
        objective=objective,
        sense=sense,
    )


def solve_compiled(
    adapter: Any,
    model: Any,
    *,
    check_convexity: bool = True,
    time_limit: float | None = None,
    verbose: bool = False,
    options: dict[str, Any] | None = None,
) -> Any:
    """A matrix adapter's ``solve_pyomo``: the model compiled (:func:`compile_model`), solved by
    ``adapter.solve_program``, and the values, duals, objective and bound loaded back in the
    model's sense."""
    from aidopt.solvers.base import SolveStatus

    adapter.check_available()
    compiled = compile_model(model, check_convexity=check_convexity)
    result = adapter.solve_program(
        compiled.program, time_limit=time_limit, verbose=verbose, options=options
    )
    if result.status is SolveStatus.OPTIMAL and result.x is not None:
        objective = compiled.load(model, result.x, result.row_duals, result.objective)
        bound = None if result.bound is None else compiled.sense * result.bound
        result = replace(result, objective=objective, bound=bound)
    return result


def _bounded(con: Any) -> tuple[float | None, Any, float | None]:
    """(lb, body, ub) of a constraint as Pyomo normalises it, with numeric bounds."""
    try:
        if hasattr(con, "to_bounded_expression"):
            return con.to_bounded_expression(True)
        from pyomo.environ import value  # Pyomo < 6.8

        lb, ub = con.lower, con.upper
        return (None if lb is None else value(lb)), con.body, (None if ub is None else value(ub))
    except ValueError as exc:  # e.g. a ranged constraint with a variable bound
        raise SolverCapabilityError(
            f"The constraint {con.name!r} cannot be compiled: {exc}"
        ) from exc


def _check_convexity(Q: sp.csc_matrix, variables: list[Any], objective: Any, sense: int) -> None:
    """Raise on a negative Q_ii or a 2×2 principal minor Q_ii Q_jj − Q_ij² < 0."""
    what = "minimised" if sense == 1 else "maximised (as its negative)"
    diag = Q.diagonal()
    negative = np.flatnonzero(diag < 0)
    if negative.size:
        var = variables[int(negative[0])]
        raise SolverCapabilityError(
            f"The {what} objective {objective.name!r} is not convex: the coefficient of "
            f"{var.name}² has the wrong sign (Q_ii = {diag[negative[0]]:g}). A convex QP solver "
            "cannot solve it."
        )
    coo = Q.tocoo()
    off = coo.row < coo.col
    rows, cols, vals = coo.row[off], coo.col[off], coo.data[off]
    minor = diag[rows] * diag[cols]
    bad = np.flatnonzero(vals * vals - minor > _CONVEXITY_RTOL * np.maximum(vals * vals, minor))
    if bad.size:
        k = int(bad[0])
        v1, v2 = variables[int(rows[k])], variables[int(cols[k])]
        raise SolverCapabilityError(
            f"The {what} objective {objective.name!r} is not convex: the 2×2 block of "
            f"{v1.name} and {v2.name} is indefinite (Q_ii Q_jj = {minor[k]:g} < Q_ij² = "
            f"{vals[k] ** 2:g}). A convex QP solver cannot solve it."
        )
