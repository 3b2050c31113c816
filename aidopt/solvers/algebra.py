"""An aggregated problem declared once, in vectorised algebra: variable blocks, constraint blocks,
an objective.

    p = Problem("aggregated ε-SVR")
    w, b = p.variables("w", m), p.variables("b", 1)
    xi = p.variables("xi", K, lower=0.0)
    p.minimize(0.5 * sum_squares(w) + C * weight @ xi)
    p.subject_to("above", ybar - xbar @ w - b <= epsilon + xi)

From that one declaration come the matrix program (:meth:`Problem.program`: HiGHS, Gurobi,
CPLEX, SCIP and the matrix routes), the Pyomo model (:meth:`Problem.pyomo`: any Pyomo solver, LP
and MPS export, printing), and the read-back of a solved program or Pyomo model
(:class:`Values`). Arrays enter as they are (no per-term Python objects); a block of one
variable broadcasts over the rows of a constraint block.

**Dual sign convention.** ``values.dual(name)`` is, for every row of the constraint block, the
Lagrange multiplier of the constraint *as written*: λ ≥ 0 for an inequality (``<=`` or ``>=``),
so that F* changes by −λ·δ when the constraint is loosened by δ; for an equality ``a == b`` it
is ∂F*/∂b. Solvers' own conventions (HiGHS's ``row_dual`` = ∂F*/∂(row bound), Pyomo's ``dual``
suffix) are converted here, once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import MatrixProgram

__all__ = ["DualForm", "Expression", "Problem", "Values", "Variables", "quad_form", "sum_squares"]


class _Algebra:
    """Arithmetic shared by variable blocks and expressions (numpy defers to it)."""

    __array_ufunc__ = None  # ndarray ⊕ Expression calls the Expression's reflected operator

    def expr(self) -> Expression:
        """This as an :class:`Expression`."""
        raise NotImplementedError

    def __add__(self, other: Any) -> Expression:
        return self.expr()._combine(other, 1.0)

    def __radd__(self, other: Any) -> Expression:
        return self.expr()._combine(other, 1.0)

    def __sub__(self, other: Any) -> Expression:
        return self.expr()._combine(other, -1.0)

    def __rsub__(self, other: Any) -> Expression:
        return (-self.expr())._combine(other, 1.0)

    def __neg__(self) -> Expression:
        return self.expr() * -1.0

    def __mul__(self, factor: Any) -> Expression:
        return self.expr()._scaled(factor)

    __rmul__ = __mul__

    def __rmatmul__(self, matrix: Any) -> Expression:
        return self.expr()._left_product(matrix)

    def __le__(self, other: Any) -> Constraint:  # type: ignore[override]
        return Constraint(self.expr()._combine(other, -1.0), "<=")

    def __ge__(self, other: Any) -> Constraint:  # type: ignore[override]
        return Constraint(self.expr()._combine(other, -1.0), ">=")

    def __eq__(self, other: Any) -> Constraint:  # type: ignore[override]
        return Constraint(self.expr()._combine(other, -1.0), "==")

    __hash__ = object.__hash__


@dataclass(eq=False)
class Variables(_Algebra):
    """A named block of ``size`` variables, columns ``start`` … ``start + size − 1``."""

    name: str
    start: int
    size: int
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    integer: bool = False

    def expr(self) -> Expression:
        """This as an :class:`Expression`."""
        return Expression(self.size, {self: sp.identity(self.size, format="csr")}, None)


@dataclass(eq=False)
class Expression(_Algebra):
    """``rows`` affine functions Σ_blocks A_block x_block + constant (and, in an objective,
    ½ Σ x_aᵀ Q_ab x_b)."""

    rows: int
    linear: dict[Variables, Any]
    constant: NDArray[np.float64] | None
    quadratic: dict[Variables, Any] = field(default_factory=dict)  # diagonal blocks Q_aa

    def expr(self) -> Expression:
        """This as an :class:`Expression`."""
        return self

    def _broadcast(self, rows: int) -> Expression:
        if rows == self.rows:
            return self
        if self.rows != 1:
            raise ValueError(f"an expression of {self.rows} rows cannot take {rows} rows")
        ones = sp.csr_matrix(np.ones((rows, 1)))
        const = None if self.constant is None else np.repeat(self.constant, rows)
        linear = {v: ones @ sp.csr_matrix(a) for v, a in self.linear.items()}
        return Expression(rows, linear, const, self.quadratic)

    def _combine(self, other: Any, sign: float) -> Expression:
        if isinstance(other, _Algebra):
            other = other.expr()
        else:
            value = np.asarray(other, dtype=np.float64).ravel()
            other = Expression(value.size, {}, value)
        rows = max(self.rows, other.rows)
        a, b = self._broadcast(rows), other._broadcast(rows)
        linear = dict(a.linear)
        for v, coef in b.linear.items():
            linear[v] = linear[v] + sign * coef if v in linear else sign * coef
        quadratic = dict(a.quadratic)
        for v, q in b.quadratic.items():
            quadratic[v] = quadratic[v] + sign * q if v in quadratic else sign * q
        if a.constant is None and b.constant is None:
            const = None
        else:
            const = np.zeros(rows) if a.constant is None else a.constant
            const = const + (0.0 if b.constant is None else sign * b.constant)
        return Expression(rows, linear, const, quadratic)

    def _scaled(self, factor: Any) -> Expression:
        f = np.asarray(factor, dtype=np.float64)
        if f.ndim == 0:
            scale = float(f)
            return Expression(
                self.rows,
                {v: scale * a for v, a in self.linear.items()},
                None if self.constant is None else scale * self.constant,
                {v: scale * q for v, q in self.quadratic.items()},
            )
        if self.quadratic or f.shape != (self.rows,):
            raise ValueError(f"a factor of shape {f.shape} for an expression of {self.rows} rows")
        d = sp.diags(f)
        return Expression(
            self.rows,
            {v: d @ a for v, a in self.linear.items()},
            None if self.constant is None else f * self.constant,
        )

    def _left_product(self, matrix: Any) -> Expression:
        """M @ expr (M of shape (r, rows), or a vector: one row)."""
        if self.quadratic:
            raise ValueError("a matrix times a quadratic expression")
        M = matrix if issparse(matrix) else np.asarray(matrix, dtype=np.float64)
        if M.ndim == 1:
            M = M[None, :]
        if M.shape[1] != self.rows:
            raise ValueError(f"a {M.shape} matrix times an expression of {self.rows} rows")
        linear = {v: _product(M, a) for v, a in self.linear.items()}
        const = None if self.constant is None else np.asarray(M @ self.constant).ravel()
        return Expression(M.shape[0], linear, const)


def _product(M: Any, a: Any) -> Any:
    """M @ a, where a is an identity block when M multiplies a variable block itself."""
    if issparse(a) and a.shape[0] == a.shape[1] and a.nnz == a.shape[0]:
        if (a.diagonal() == 1.0).all():
            return M
    return M @ a


def sum_squares(x: Variables) -> Expression:
    """Σ_j x_j² (a convex quadratic term of an objective)."""
    return Expression(1, {}, None, {x: 2.0 * sp.identity(x.size, format="csr")})


def quad_form(x: Variables, Q: Any) -> Expression:
    """xᵀQx for a symmetric positive semidefinite Q (a convex quadratic term of an objective)."""
    return Expression(1, {}, None, {x: 2.0 * sp.csr_matrix(Q)})


@dataclass(frozen=True)
class Constraint:
    """``expression (sense) 0``, one row per row of the expression."""

    expression: Expression
    sense: str

    def __bool__(self) -> bool:
        raise TypeError("a constraint has no truth value (declare it with subject_to)")


class Problem:
    """A minimisation declared in blocks (see the module docstring)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.blocks: list[Variables] = []
        self.constraints: dict[str, Constraint] = {}
        self.objective: Expression | None = None  # in minimisation form
        #: −1 for a maximisation (``objective`` is then −f, and the matrix program's optimum −F)
        self.sign = 1.0

    def variables(
        self,
        name: str,
        size: int,
        *,
        lower: ArrayLike = -np.inf,
        upper: ArrayLike = np.inf,
        integer: bool = False,
    ) -> Variables:
        """A new block of ``size`` variables with bounds (scalars or one per variable)."""
        start = self.n_cols
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (size,))
        up = np.broadcast_to(np.asarray(upper, dtype=np.float64), (size,))
        block = Variables(name, start, size, lo, up, integer)
        self.blocks.append(block)
        return block

    def minimize(self, objective: Any) -> None:
        """Set the objective: one affine or quadratic expression."""
        expr = objective.expr() if isinstance(objective, _Algebra) else None
        if expr is None or expr.rows != 1:
            raise ValueError("the objective must be one affine or quadratic expression")
        self.objective, self.sign = expr, 1.0

    def maximize(self, objective: Any) -> None:
        """Set the objective of a maximisation (concave: −objective convex). The matrix program
        minimises −objective (its ``meta["objective_sign"]`` is −1: its optimum is −F*); the Pyomo
        model maximises the objective itself. Multipliers (``Values.dual``) are those of the
        minimisation of −objective; a Pyomo solve of a maximisation gives none."""
        self.minimize(-1.0 * objective)
        self.sign = -1.0

    def subject_to(self, name: str, constraint: Constraint) -> None:
        """Add the constraint block ``name`` (one row per row of the comparison)."""
        if not isinstance(constraint, Constraint):
            raise TypeError(f"constraint {name!r} is not a comparison of expressions")
        if constraint.expression.quadratic:
            raise ValueError(f"constraint {name!r} is quadratic")
        self.constraints[name] = constraint

    @property
    def n_cols(self) -> int:
        """The number of variables."""
        return sum(b.size for b in self.blocks)

    def row_slices(self) -> dict[str, slice]:
        """The rows of each constraint block in the matrix program."""
        out, start = {}, 0
        for name, c in self.constraints.items():
            out[name] = slice(start, start + c.expression.rows)
            start += c.expression.rows
        return out

    # ------------------------------------------------------------------ derived forms
    def program(self, **warm: Any) -> MatrixProgram:
        """The matrix program (``warm``: ``start_basis`` / ``start_point``, passed on)."""
        if self.objective is None:
            raise ValueError(f"{self.title}: no objective")
        n = self.n_cols
        rows = [self._row_block(c.expression) for c in self.constraints.values()]
        A = sp.vstack(rows, format="csc") if rows else sp.csc_matrix((0, n))
        lower, upper = [], []
        for con in self.constraints.values():
            rhs = -_constant(con.expression)
            lower.append(rhs if con.sense in (">=", "==") else np.full(rhs.size, -np.inf))
            upper.append(rhs if con.sense in ("<=", "==") else np.full(rhs.size, np.inf))
        obj = self.objective
        if self.sign < 0:  # a maximisation: the program's optimum is −F*
            warm["meta"] = {**warm.get("meta", {}), "objective_sign": -1.0}
        c = np.asarray(self._row_block(obj).todense()).ravel()
        Q = None
        if obj.quadratic:
            diag = [obj.quadratic.get(b, sp.csr_matrix((b.size, b.size))) for b in self.blocks]
            Q = sp.block_diag(diag, format="csc")
        return MatrixProgram(
            c=c,
            A=A,
            row_lower=np.concatenate(lower) if lower else np.zeros(0),
            row_upper=np.concatenate(upper) if upper else np.zeros(0),
            col_lower=np.concatenate([b.lower for b in self.blocks]),
            col_upper=np.concatenate([b.upper for b in self.blocks]),
            Q=Q,
            integer=np.concatenate([np.full(b.size, b.integer) for b in self.blocks])
            if any(b.integer for b in self.blocks)
            else None,
            offset=float(_constant(obj)[0]),
            **warm,
        )

    def _row_block(self, expr: Expression) -> Any:
        parts = [
            sp.csr_matrix(expr.linear[b])
            if b in expr.linear
            else sp.csr_matrix((expr.rows, b.size))
            for b in self.blocks
        ]
        return sp.hstack(parts, format="csr")

    def dual(self, **warm: Any) -> DualForm:
        """The Lagrangian dual of a convex QP or LP with a diagonal Hessian, as a matrix program
        with few rows (see :class:`DualForm`; ``warm``: its ``start_basis``, ...); its answer
        reads back as this problem's (:meth:`DualForm.values`)."""
        return DualForm(self, self.program(), **warm)

    def values(self, result: SolveResult) -> Values:
        """The read-back of a solved :meth:`program`."""
        if result.x is None:
            raise ValueError(f"{self.title}: the solver returned no point")
        return Values(self, np.asarray(result.x), result.row_duals)

    def pyomo(self) -> Any:
        """The same problem as a Pyomo ``ConcreteModel`` (a ``dual`` suffix for the duals)."""
        import pyomo.environ as pyo

        program = self.program()
        model = pyo.ConcreteModel(name=self.title)
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        columns: list[Any] = []
        for b in self.blocks:
            bounds = {j: (_finite(b.lower[j]), _finite(b.upper[j])) for j in range(b.size)}
            domain = pyo.Integers if b.integer else pyo.Reals
            if b.size == 1:  # a scalar prints as itself: ``b``, not ``b[0]``
                var = pyo.Var(domain=domain, bounds=bounds[0])
            else:
                var = pyo.Var(range(b.size), domain=domain, bounds=lambda _, j, bd=bounds: bd[j])
            model.add_component(b.name, var)
            columns += list(var.values())
        A = program.A.tocsr()
        for name, rows in self.row_slices().items():

            def rule(_: Any, i: int, start: int = rows.start) -> Any:
                r = start + i
                lo, up = program.row_lower[r], program.row_upper[r]
                body = sum(
                    float(a) * columns[j]
                    for a, j in zip(
                        A.data[A.indptr[r] : A.indptr[r + 1]],
                        A.indices[A.indptr[r] : A.indptr[r + 1]],
                        strict=True,
                    )
                )
                return (_finite(lo), body, _finite(up))

            model.add_component(name, pyo.Constraint(range(rows.stop - rows.start), rule=rule))
        sign = self.sign  # a maximisation is printed and solved as one: f = −(the min form)
        objective = sum(sign * float(c) * columns[j] for j, c in enumerate(program.c) if c)
        if program.Q is not None:
            Q = program.Q.tocoo()
            objective += 0.5 * sum(
                sign * float(q) * columns[i] * columns[j]
                for i, j, q in zip(Q.row, Q.col, Q.data, strict=True)
            )
        sense = pyo.maximize if sign < 0 else pyo.minimize
        model.objective = pyo.Objective(expr=objective + sign * program.offset, sense=sense)
        return model

    def values_from_pyomo(self, model: Any) -> Values:
        """The read-back of a solved :meth:`pyomo` model."""
        x = np.concatenate(
            [
                np.array([v.value for v in model.component(b.name).values()], dtype=float)
                for b in self.blocks
            ]
        )
        duals = []
        for name, rows in self.row_slices().items():
            con = model.component(name)
            duals.append([model.dual.get(con[i]) for i in range(rows.stop - rows.start)])
        flat = [d for block in duals for d in block]
        if self.sign < 0 or None in flat:  # no multipliers (of a maximisation: see maximize)
            row_duals = None
        else:
            row_duals = np.array(flat, dtype=np.float64)
        return Values(self, x, row_duals)  # Pyomo's dual of a minimisation is HiGHS's row dual


def _constant(expr: Expression) -> NDArray[np.float64]:
    return np.zeros(expr.rows) if expr.constant is None else expr.constant


def _finite(value: float) -> float | None:
    return None if np.isinf(value) else float(value)


@dataclass(frozen=True, eq=False)
class Values:
    """A solved declaration: values of the variable blocks, multipliers of the constraint
    blocks (in the convention of the module docstring; None when the solver gave none)."""

    problem: Problem
    x: NDArray[np.float64]
    row_duals: NDArray[np.float64] | None

    def __getitem__(self, name: str) -> NDArray[np.float64]:
        for b in self.problem.blocks:
            if b.name == name:
                return self.x[b.start : b.start + b.size]
        raise KeyError(name)

    def dual(self, name: str) -> NDArray[np.float64] | None:
        """The multipliers of the constraint block ``name`` (None when the solver gave none)."""
        if self.row_duals is None:
            return None
        y = self.row_duals[self.problem.row_slices()[name]]
        return -y if self.problem.constraints[name].sense == "<=" else y


class DualForm:
    """The dual of ``min ½xᵀDx + cᵀx  s.t.  A_i x (≥ | ≤ | =) r_i`` with D diagonal ⪰ 0, the
    columns of D_jj > 0 free and the others free or ≥ 0 (no integers, no ranged rows):

        min_{v,y}  ½ Σ_{j: D_jj>0} v_j²/D_jj − rᵀy
        s.t.       v_j − a_jᵀy = −c_j   (D_jj > 0),      a_jᵀy = c_j   (free, D_jj = 0),
                   a_jᵀy ≤ c_j          (x_j ≥ 0, D_jj = 0),
                   y_i ≥ 0 on ≥ rows, ≤ 0 on ≤ rows, free on = rows,

    whose optimum is −F*. A column x_j ≥ 0 with one nonzero a_ij (a slack: an SVM's ξ_k, LAD's
    e±_k) turns its row into a bound on y_i, so the rows are as many as the quadratic and free
    columns (w and b: m + 1) instead of the primal's one or two per cluster. Read-back: y are the
    primal's row duals (HiGHS's convention), x_j = v_j/D_jj, the other x_j the negated duals
    of their rows, and the slacks the least values their rows need. ``program`` is None when
    the problem is not of this form; ``warm`` (``start_basis``, ...) is passed to it."""

    def __init__(self, problem: Problem, primal: MatrixProgram, **warm: Any) -> None:
        self.problem, self.primal, self._warm = problem, primal, warm
        p = primal
        d = np.zeros(p.n_cols) if p.Q is None else p.Q.diagonal()
        free = np.isinf(p.col_lower) & np.isinf(p.col_upper)
        nonneg = (p.col_lower == 0) & np.isinf(p.col_upper)
        ge, le = np.isfinite(p.row_lower), np.isfinite(p.row_upper)
        #: False when the problem is not of the dual form's shape (then ``program`` is None)
        self.applies = not (
            (p.Q is not None and (sp.triu(p.Q, 1).nnz or np.any(d < 0)))
            or p.integer is not None
            or np.any(~free & ~nonneg)
            or np.any((d > 0) & ~free)
            or np.any(ge & le & (p.row_lower != p.row_upper))
            or np.any(~ge & ~le)
        )
        A = p.A.tocsc()
        slack = nonneg & (d == 0) & (np.diff(A.indptr) == 1)
        self.slack = np.flatnonzero(slack)
        self.slack_row = A.indices[A.indptr[self.slack]]
        self.slack_coef = A.data[A.indptr[self.slack]]
        self.quad, self.rest, self.d = np.flatnonzero(d > 0), np.flatnonzero(~slack & (d == 0)), d
        self._free, self._ge, self._le, self._A = free, ge, le, A

    @functools.cached_property
    def program(self) -> MatrixProgram | None:
        """The dual as a matrix program (built when first asked for: a read-back needs only
        the layout), or None when the problem is not of this form."""
        if not self.applies:
            return None
        p, A, free, ge, le = self.primal, self._A, self._free, self._ge, self._le
        n_rows, d, warm = p.n_rows, self.d, self._warm
        y_lo = np.where(ge & ~le, 0.0, -np.inf)
        y_up = np.where(le & ~ge, 0.0, np.inf)
        bound = p.c[self.slack] / self.slack_coef  # a_ij y_i ≤ c_j
        up, lo = self.slack_coef > 0, self.slack_coef < 0
        np.minimum.at(y_up, self.slack_row[up], bound[up])
        np.maximum.at(y_lo, self.slack_row[lo], bound[lo])
        if np.any(y_lo > y_up):
            return None
        quad, rest = self.quad, self.rest
        q = quad.size
        top = sp.hstack([sp.identity(q), -A[:, quad].T], format="csc")  # rows a_jᵀ
        bottom = sp.hstack([sp.csc_matrix((rest.size, q)), A[:, rest].T], format="csc")
        r = np.where(ge, p.row_lower, p.row_upper)
        return MatrixProgram(
            c=np.r_[np.zeros(q), -r],
            A=sp.vstack([top, bottom], format="csc"),
            row_lower=np.r_[-p.c[quad], np.where(free[rest], p.c[rest], -np.inf)],
            row_upper=np.r_[-p.c[quad], p.c[rest]],
            col_lower=np.r_[np.full(q, -np.inf), y_lo],
            col_upper=np.r_[np.full(q, np.inf), y_up],
            Q=sp.diags(np.r_[1.0 / d[quad], np.zeros(n_rows)], format="csc") if q else None,
            offset=-p.offset,
            **{**warm, "meta": {**warm.get("meta", {}), "objective_sign": -1.0}},
        )

    def values(self, result: SolveResult) -> Values:
        """The primal's values and row duals from a solved dual :attr:`program`."""
        p, q = self.primal, self.quad.size
        if not self.applies:
            raise ValueError(f"{self.problem.title} has no dual form")
        if result.x is None or result.row_duals is None:
            raise ValueError(f"{self.problem.title}: the dual solve gave no point or duals")
        x = np.zeros(p.n_cols)
        x[self.quad] = result.x[:q] / self.d[self.quad]
        x[self.rest] = -np.asarray(result.row_duals[q:])
        need = np.where(np.isfinite(p.row_lower), p.row_lower, p.row_upper) - p.A @ x
        equality = p.row_lower == p.row_upper
        wanted = np.where(equality, True, np.isfinite(p.row_lower) == (need > 0))
        amount = need[self.slack_row] / self.slack_coef
        covers = np.flatnonzero(wanted[self.slack_row] & (amount > 0))
        _, first = np.unique(self.slack_row[covers], return_index=True)  # one slack per row
        x[self.slack[covers[first]]] = amount[covers[first]]
        return Values(self.problem, x, np.asarray(result.x[q:]))
