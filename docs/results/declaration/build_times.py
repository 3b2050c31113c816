"""Build time of the aggregated problem in each candidate declaration layer (issue 57, step 1).

The two aggregated problems of the issue, at the sizes AID reaches on them (measured with
``AIDSolver(..., solver="highs")``: LAD 400k × 100 solves K = 43,660 clusters; the linear SVM at
10^6 × 20 reaches K = 6,151), each built up to a form a solver takes:

* LAD (LP):  min Σ_k W_k (u_k + v_k)  s.t.  x̄_k β + u_k − v_k = ȳ_k,  u, v ≥ 0
* SVM (QP):  min ½‖w‖² + C Σ_k W_k ξ_k  s.t.  y_k (x̄_k w + b) + ξ_k ≥ 1,  ξ ≥ 0

Run: ``python docs/results/declaration/build_times.py`` (writes build_times.csv beside it).
"""

from __future__ import annotations

import csv
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
SIZES = {"lad": (43_660, 100), "svm": (6_151, 20)}


def data(kind):
    K, m = SIZES[kind]
    rng = np.random.default_rng(1)
    X = rng.standard_normal((K, m))
    y = X @ rng.standard_normal(m) if kind == "lad" else np.where(rng.random(K) < 0.5, -1.0, 1.0)
    return X, y, rng.integers(1, 100, K).astype(float)


def by_hand(kind, X, y, W):
    from aidopt.solvers.program import MatrixProgram

    K, m = X.shape
    if kind == "lad":
        eye = sp.identity(K, format="csr")
        return MatrixProgram(
            c=np.r_[np.zeros(m), W, W],
            A=sp.hstack([sp.csr_matrix(X), eye, -eye], format="csc"),
            row_lower=y,
            row_upper=y,
            col_lower=np.r_[np.full(m, -np.inf), np.zeros(2 * K)],
            col_upper=np.full(m + 2 * K, np.inf),
        )
    return MatrixProgram(
        c=np.r_[np.zeros(m + 1), W],
        A=sp.hstack(
            [sp.csr_matrix(y[:, None] * X), sp.csr_matrix(y[:, None]), sp.identity(K)], format="csc"
        ),
        row_lower=np.ones(K),
        row_upper=np.full(K, np.inf),
        col_lower=np.r_[np.full(m + 1, -np.inf), np.zeros(K)],
        col_upper=np.full(m + 1 + K, np.inf),
        Q=sp.diags(np.r_[np.ones(m), np.zeros(K + 1)]).tocsc(),
    )


def algebra(kind, X, y, W):
    from aidopt.solvers.algebra import Problem, sum_squares

    K, m = X.shape
    p = Problem(kind)
    if kind == "lad":
        beta = p.variables("beta", m)
        u, v = p.variables("u", K, lower=0.0), p.variables("v", K, lower=0.0)
        p.minimize(W @ (u + v))
        p.subject_to("fit", X @ beta + u - v == y)
    else:
        w, b, xi = p.variables("w", m), p.variables("b", 1), p.variables("xi", K, lower=0.0)
        p.minimize(0.5 * sum_squares(w) + W @ xi)
        p.subject_to("margin", y * (X @ w + b) + xi >= 1.0)
    return p.program()


def linopy_(kind, X, y, W):
    import linopy
    import xarray as xr

    K, m = X.shape
    mdl = linopy.Model()
    import pandas as pd

    k, j = pd.RangeIndex(K, name="k"), pd.RangeIndex(m, name="j")
    Xd = xr.DataArray(X, coords=[k, j])
    Wd, yd = xr.DataArray(W, coords=[k]), xr.DataArray(y, coords=[k])
    if kind == "lad":
        beta = mdl.add_variables(coords=[j], name="beta")
        u = mdl.add_variables(lower=0, coords=[k], name="u")
        v = mdl.add_variables(lower=0, coords=[k], name="v")
        mdl.add_constraints((Xd * beta).sum("j") + u - v == yd, name="fit")
        mdl.add_objective((Wd * (u + v)).sum())
    else:
        w = mdl.add_variables(coords=[j], name="w")
        b = mdl.add_variables(name="b")
        xi = mdl.add_variables(lower=0, coords=[k], name="xi")
        mdl.add_constraints(yd * (Xd * w).sum("j") + yd * b + xi >= 1, name="margin")
        mdl.add_objective(0.5 * (w * w).sum() + (Wd * xi).sum())
    return mdl.to_highspy()


def cvxpy_(kind, X, y, W):
    import cvxpy as cp

    K, m = X.shape
    if kind == "lad":
        beta, u, v = cp.Variable(m), cp.Variable(K, nonneg=True), cp.Variable(K, nonneg=True)
        prob = cp.Problem(cp.Minimize(W @ (u + v)), [X @ beta + u - v == y])
    else:
        w, b, xi = cp.Variable(m), cp.Variable(), cp.Variable(K, nonneg=True)
        prob = cp.Problem(
            cp.Minimize(0.5 * cp.sum_squares(w) + W @ xi), [cp.multiply(y, X @ w + b) + xi >= 1]
        )
    return prob.get_problem_data(cp.CLARABEL)


def pyomo_(kind, X, y, W):
    import pyomo.environ as pyo

    from aidopt.solvers.pyomo_compile import compile_model

    K, m = X.shape
    mdl = pyo.ConcreteModel()
    mdl.K, mdl.J = pyo.RangeSet(0, K - 1), pyo.RangeSet(0, m - 1)
    if kind == "lad":
        mdl.beta = pyo.Var(mdl.J)
        mdl.u = pyo.Var(mdl.K, domain=pyo.NonNegativeReals)
        mdl.v = pyo.Var(mdl.K, domain=pyo.NonNegativeReals)
        mdl.obj = pyo.Objective(expr=sum(W[k] * (mdl.u[k] + mdl.v[k]) for k in mdl.K))
        mdl.fit = pyo.Constraint(
            mdl.K,
            rule=lambda md, k: sum(X[k, j] * md.beta[j] for j in md.J) + md.u[k] - md.v[k] == y[k],
        )
    else:
        mdl.w, mdl.b = pyo.Var(mdl.J), pyo.Var()
        mdl.xi = pyo.Var(mdl.K, domain=pyo.NonNegativeReals)
        mdl.obj = pyo.Objective(
            expr=0.5 * sum(mdl.w[j] ** 2 for j in mdl.J) + sum(W[k] * mdl.xi[k] for k in mdl.K)
        )
        mdl.margin = pyo.Constraint(
            mdl.K,
            rule=lambda md, k: y[k] * (sum(X[k, j] * md.w[j] for j in md.J) + md.b) + md.xi[k] >= 1,
        )
    return compile_model(mdl, check_convexity=False)


LAYERS = {
    "by hand (MatrixProgram)": (by_hand, "aidopt.solvers.program"),
    "aidopt.solvers.algebra": (algebra, "aidopt.solvers.algebra"),
    "linopy": (linopy_, "linopy"),
    "cvxpy": (cvxpy_, "cvxpy"),
    "pyomo + compile": (pyomo_, "pyomo.environ"),
}


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(3)
    ]
    return min(runs)


def main() -> None:
    rows = []
    for layer, (build, module) in LAYERS.items():
        imp = import_seconds(module)
        for kind in SIZES:
            X, y, W = data(kind)
            build(kind, X, y, W)  # warm (first-call imports)
            times = []
            for _ in range(3):
                t = time.perf_counter()
                build(kind, X, y, W)
                times.append(time.perf_counter() - t)
            rows.append(
                {
                    "layer": layer,
                    "problem": kind,
                    "K": X.shape[0],
                    "m": X.shape[1],
                    "build_s": round(min(times), 4),
                    "import_s": round(imp, 3),
                }
            )
            print(rows[-1], flush=True)
    with open(HERE / "build_times.csv", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


if __name__ == "__main__":
    main()
