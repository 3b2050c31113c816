"""Independent Pyomo formulations of PU learning (Sansone et al. 2019, (5) and (6)) on weighted
rows: the references the tests check ``models/pu.py`` and its solvers against (written out term
by term, not derived from the model's declaration)."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from numpy.typing import NDArray


def _constants(weight, labeled, prior: float, lam: float) -> tuple[float, float]:
    """c1 = π/(2λp), c2 = 1/(2λn) with p, n the total weights of labeled / unlabeled rows."""
    return prior / (2.0 * lam * float(weight[labeled].sum())), 1.0 / (
        2.0 * lam * float(weight[~labeled].sum())
    )


def _with_risk(model, weight, c1: float, c2: float, half_norm) -> pyo.ConcreteModel:
    """(5) on a model with the row sets P, U, the slacks ξ_u ≥ 0 and the expression f:
    min ``half_norm`` − c1 Σ_P w_k f(x_k) + c2 Σ_U w_k ξ_k  s.t.  ξ_u ≥ f(x_u),
    ξ_u ≥ (1 + f(x_u))/2."""

    @model.Objective(sense=pyo.minimize)
    def objective(m):
        return (
            half_norm(m)
            - c1 * sum(weight[k] * m.f[k] for k in m.P)
            + c2 * sum(weight[k] * m.xi[k] for k in m.U)
        )

    @model.Constraint(model.U)  # (5) ξ_u ≥ f(x_u)
    def hinge(m, u):
        return m.xi[u] >= m.f[u]

    @model.Constraint(model.U)  # (5) ξ_u ≥ (1 + f(x_u))/2
    def half_hinge(m, u):
        return m.xi[u] >= 0.5 * (1.0 + m.f[u])

    return model


def primal_linear_model(
    xbar: NDArray[np.float64],
    weight: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    prior: float,
    lam: float,
) -> pyo.ConcreteModel:
    """(5) for the linear kernel with w explicit, on weighted rows (centroids x̄_k, weights w_k)."""
    c1, c2 = _constants(weight, labeled, prior, lam)
    model = pyo.ConcreteModel(name="PU primal (5), linear kernel")
    model.P = pyo.Set(initialize=np.flatnonzero(labeled).tolist())  # labeled positive rows
    model.U = pyo.Set(initialize=np.flatnonzero(~labeled).tolist())  # unlabeled rows
    model.J = pyo.RangeSet(0, xbar.shape[1] - 1)  # features
    model.w = pyo.Var(model.J)
    model.beta = pyo.Var()  # β, the bias (not regularised)
    model.xi = pyo.Var(model.U, domain=pyo.NonNegativeReals)  # ξ_u ≥ 0
    model.dual = pyo.Suffix(
        direction=pyo.Suffix.IMPORT
    )  # the multipliers, when the solver gives them

    @model.Expression(model.P | model.U)  # f(x_k) = w·x_k + β
    def f(m, k):
        return sum(xbar[k, j] * m.w[j] for j in m.J) + m.beta

    return _with_risk(model, weight, c1, c2, lambda m: 0.5 * sum(m.w[j] ** 2 for j in m.J))


def primal_kernel_model(
    K: NDArray[np.float64],
    weight: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    prior: float,
    lam: float,
) -> pyo.ConcreteModel:
    """(5) in (α, β, ξ) with the kernel matrix K as a parameter (weighted rows; small n only)."""
    c1, c2 = _constants(weight, labeled, prior, lam)
    model = pyo.ConcreteModel(name="PU primal (5), kernel matrix")
    model.I = pyo.RangeSet(0, K.shape[0] - 1)  # all rows
    model.P = pyo.Set(initialize=np.flatnonzero(labeled).tolist())
    model.U = pyo.Set(initialize=np.flatnonzero(~labeled).tolist())
    model.alpha = pyo.Var(model.I)
    model.beta = pyo.Var()
    model.xi = pyo.Var(model.U, domain=pyo.NonNegativeReals)

    @model.Expression(model.I)  # f(x_k) = Σ_i α_i k(x_k, x_i) + β
    def f(m, k):
        return sum(K[k, i] * m.alpha[i] for i in m.I) + m.beta

    def half_norm(m):  # ½ αᵀKα
        return 0.5 * sum(K[i, j] * m.alpha[i] * m.alpha[j] for i in m.I for j in m.I)

    return _with_risk(model, weight, c1, c2, half_norm)


def dual_model(
    K: NDArray[np.float64],
    weight: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    prior: float,
    lam: float,
) -> pyo.ConcreteModel:
    """(6) with the kernel matrix K as a parameter, weighted rows (box C_u = c2 w_u).

    Declared as the Lagrangian dual of (5), max −(6) − ½ α_PᵀK_PPα_P with α_P = c1 w_P, so that
    its optimum equals min (5) and its value at any feasible point is a lower bound on it.
    """
    c1, c2 = _constants(weight, labeled, prior, lam)
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    alpha_p = c1 * weight[P]
    b = K[np.ix_(U, P)] @ alpha_p  # c1 1ᵀK_PU, weighted
    offset = 0.5 * float(alpha_p @ K[np.ix_(P, P)] @ alpha_p)
    C = c2 * weight[U]
    model = pyo.ConcreteModel(name="PU dual (6)")
    model.U = pyo.RangeSet(0, U.size - 1)  # position u of an unlabeled row
    model.sigma = pyo.Var(model.U, bounds=lambda m, u: (0.0, C[u]))
    model.delta = pyo.Var(model.U, bounds=lambda m, u: (0.0, C[u]))  # 0 ≤ δ ≤ c2

    @model.Objective(sense=pyo.maximize)  # −(6) − ½ α_PᵀK_PPα_P
    def objective(m):
        Kuu = K[np.ix_(U, U)]
        quadratic = sum(Kuu[u, v] * m.sigma[u] * m.sigma[v] for u in m.U for v in m.U)
        linear = sum(b[u] * m.sigma[u] + 0.5 * m.delta[u] for u in m.U)
        return -0.5 * quadratic + linear - offset

    @model.Constraint()  # Σσ = c1 p = π/(2λ)
    def balance(m):
        return sum(m.sigma[u] for u in m.U) == c1 * float(weight[P].sum())

    @model.Constraint(model.U)  # σ + δ/2 ≤ c2
    def upper(m, u):
        return m.sigma[u] + 0.5 * m.delta[u] <= C[u]

    @model.Constraint(model.U)  # σ − δ/2 ≥ 0
    def lower(m, u):
        return m.sigma[u] - 0.5 * m.delta[u] >= 0.0

    return model
