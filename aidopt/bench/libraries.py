"""Library solvers of the full problems, as benchmark methods that are not AID.

Each is a function ``(model, data, time_limit) -> solution of the model's type`` (or an
:class:`~aidopt.bench.spec.Outcome` with a status and extra numbers); the benchmark harness
(:mod:`aidopt.bench.harness`) times the call and evaluates the solution with the model, so a
library is compared with AID on the model's own objective. The libraries are imported when a
function runs (optional packages: scikit-learn ships with aidopt, cvxpy and R are extras); the
modules a function declares with :func:`imports` are loaded before the harness starts the clock,
so a baseline's time is its fit, not its import.

=====================  ===============================================================  =====
function               what                                                             model
=====================  ===============================================================  =====
sklearn_quantile       scikit-learn ``QuantileRegressor(alpha=0, solver="highs")``      lad
r_quantreg_fn          R quantreg ``rq.fit.fnb`` via Rscript (timed inside R)           lad
r_quantreg_pfn         R quantreg ``rq.fit.pfn`` (fnb with preprocessing), as above     lad
libsvm_svc             scikit-learn ``SVC(kernel="linear", C=M)`` (libsvm)              svm
liblinear_svc          scikit-learn ``LinearSVC(loss="hinge", C=M)`` (liblinear)        svm
clarabel_pu            the full QP (5)/(6) on cvxpy + Clarabel                          pu
cuts3vm                CutS3VM (cutting planes + CCCP, local) on the same problem (12)  s3vm
=====================  ===============================================================  =====
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from aidopt.bench.outcome import Outcome

F = TypeVar("F", bound=Callable[..., Any])


def imports(*modules: str) -> Callable[[F], F]:
    """Declare the modules a baseline imports (``func.imports``), loaded before timing."""

    def mark(func: F) -> F:
        func.imports = modules  # type: ignore[attr-defined]
        return func

    return mark


__all__ = [
    "clarabel_pu",
    "cuts3vm",
    "imports",
    "liblinear_svc",
    "libsvm_svc",
    "quantreg_missing",
    "r_quantreg_fn",
    "r_quantreg_pfn",
    "sklearn_quantile",
]


# ---------------------------------------------------------------------- LAD / quantile
def _tau(model: Any) -> float:
    c_plus, c_minus = model.costs()
    return c_plus / (c_plus + c_minus)


def _lad_solution(model: Any, beta: np.ndarray) -> Any:
    from aidopt.models.lad import LADSolution

    beta = np.asarray(beta, dtype=np.float64)
    if model.fit_intercept:
        return LADSolution(beta[1:].copy(), float(beta[0]))
    return LADSolution(beta, 0.0)


@imports("sklearn.linear_model")
def sklearn_quantile(model: Any, data: Any, time_limit: float | None) -> Any:
    """scikit-learn's QuantileRegressor (HiGHS on the full LP; no time limit of its own)."""
    from sklearn.linear_model import QuantileRegressor

    fit = QuantileRegressor(
        quantile=_tau(model), alpha=0.0, solver="highs", fit_intercept=model.fit_intercept
    ).fit(data.X, data.y)
    return _lad_solution(
        model, np.r_[fit.intercept_, fit.coef_] if model.fit_intercept else fit.coef_
    )


_R_SCRIPT = r"""
args <- commandArgs(TRUE)
n <- as.integer(args[3]); m <- as.integer(args[4])
tau <- as.numeric(args[5]); intercept <- args[6] == "1"
con <- file(args[1], "rb"); X <- matrix(readBin(con, "double", n * m), nrow = n); close(con)
con <- file(args[2], "rb"); y <- readBin(con, "double", n); close(con)
suppressPackageStartupMessages(library(quantreg))
Z <- if (intercept) cbind(1, X) else X
fit <- switch(args[7], fnb = rq.fit.fnb, pfn = rq.fit.pfn)
t <- system.time(f <- fit(Z, y, tau = tau))
cat(sprintf("%.6f\n", t[["elapsed"]]))
cat(sprintf("%.17g\n", f$coefficients))
"""


def quantreg_missing() -> str | None:
    """Why R quantreg cannot run here (None: it can)."""
    hint = "(Debian: apt-get install r-cran-quantreg)"
    if shutil.which("Rscript") is None:
        return f"Rscript not found {hint}"
    probe = subprocess.run(
        ["Rscript", "-e", "suppressPackageStartupMessages(library(quantreg))"],
        capture_output=True,
    )
    return None if probe.returncode == 0 else f"R package quantreg not found {hint}"


def r_quantreg_fn(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """R quantreg's ``rq.fit.fnb`` (Frisch–Newton interior point, the paper's benchmark) in
    Rscript, timed inside R with ``system.time`` (data loading excluded); reading the data
    counts against ``time_limit``."""
    return _r_quantreg("fnb", model, data, time_limit)


def r_quantreg_pfn(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """R quantreg's ``rq.fit.pfn``: Frisch–Newton after Portnoy–Koenker preprocessing (fit on
    a subsample, globbing the rows sure to lie above or below, checked and repaired), R's
    fastest exact method for large n; timed as :func:`r_quantreg_fn`."""
    return _r_quantreg("pfn", model, data, time_limit)


def _r_quantreg(method: str, model: Any, data: Any, time_limit: float | None) -> Outcome:
    n, m = data.X.shape
    with tempfile.TemporaryDirectory(prefix="aidopt-quantreg-") as tmp:
        folder = Path(tmp)
        np.asarray(data.X, dtype=np.float64).T.tofile(folder / "X.bin")  # column-major for R
        np.asarray(data.y, dtype=np.float64).tofile(folder / "y.bin")
        (folder / "fit.R").write_text(_R_SCRIPT)
        command = ["Rscript", str(folder / "fit.R"), str(folder / "X.bin"), str(folder / "y.bin")]
        command += [str(n), str(m), repr(_tau(model)), "1" if model.fit_intercept else "0", method]
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=time_limit)
        except subprocess.TimeoutExpired:
            return Outcome(None, "timeout")
    if out.returncode != 0:
        return Outcome(None, "error", message=" ".join(out.stderr.split())[-300:])
    seconds, *beta = (float(v) for v in out.stdout.split())
    return Outcome(_lad_solution(model, np.array(beta)), seconds=seconds)


# ---------------------------------------------------------------------- SVM
def _svm_solution(model: Any, w: np.ndarray, b: float) -> Any:
    from aidopt.models.svm import SVMSolution

    if not hasattr(model, "M") or getattr(model, "kernel", "linear") != "linear":
        raise NotImplementedError("the library baselines take the linear SVM only")
    return SVMSolution(np.asarray(w, dtype=np.float64).ravel().copy(), float(b))


@imports("sklearn.svm")
def libsvm_svc(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """libsvm: ``SVC(kernel="linear", C=M)`` on the full data (the paper's Set 1 benchmark), or
    with the kernel model's kernel (``SVC(kernel="rbf", gamma=γ, C=M)``; its dual expansion is
    the solution); ``sv_share``: the share of entries kept as support vectors."""
    from sklearn.svm import SVC

    if getattr(model, "kernel", "linear") == "linear":
        fit = SVC(kernel="linear", C=model.M).fit(data.X, data.y)
        solution = _svm_solution(model, fit.coef_[0], fit.intercept_[0])
    else:
        from aidopt.core.certificate import DualPoint

        k = model.kernel_for(data.m)
        shape = {"gamma": k.gamma, "degree": k.degree, "coef0": k.coef0}
        fit = SVC(kernel=k.kind, C=model.M, **shape).fit(data.X, data.y)
        support = fit.support_.astype(np.int64)
        dual = DualPoint(None, support, np.abs(fit.dual_coef_[0]).astype(np.float64))
        solution = model.solution_from_dict(data, {"b": float(fit.intercept_[0])}, dual)
    return Outcome(solution, info={"sv_share": len(fit.support_) / data.n})


@imports("sklearn.svm")
def liblinear_svc(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """liblinear: ``LinearSVC(loss="hinge", C=M, tol=1e-3, max_iter=100000)`` on the full
    data (its dual coordinate descent; status ``iteration_limit`` when it ran out)."""
    from sklearn.svm import LinearSVC

    limit = 100_000
    fit = LinearSVC(loss="hinge", C=model.M, tol=1e-3, max_iter=limit, random_state=0)
    fit.fit(data.X, data.y)
    n_iter = int(np.max(fit.n_iter_))
    solution = _svm_solution(model, fit.coef_[0], fit.intercept_[0])
    status = "iteration_limit" if n_iter >= limit else "optimal"
    return Outcome(solution, status, info={"n_iter": n_iter})


# ---------------------------------------------------------------------- PU learning
@imports("cvxpy", "aidopt.models.pu")
def clarabel_pu(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """The full QP on cvxpy + Clarabel (interior point): (5) with w explicit (linear kernel) or
    the dual (6) with the dense Gram matrix (other kernels); the solution's β is the best bias
    for its α. cvxpy's "user_limit" (Clarabel's time limit) is status ``time_limit``."""
    import cvxpy as cp

    from aidopt.models.pu import PUSolution, optimal_bias

    X, labeled = data.X, data.labeled
    c1, c2 = model.constants(data)
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    opts: dict[str, Any] = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10}
    if time_limit is not None:
        opts["time_limit"] = time_limit
    if model.kernel.kind == "linear":
        w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(U.size)
        f_u = X[U] @ w + b
        objective = 0.5 * cp.sum_squares(w) - c1 * (X[P].sum(axis=0) @ w + P.size * b)
        constraints = [xi >= 0, xi >= f_u, xi >= 0.5 + 0.5 * f_u]
        problem = cp.Problem(cp.Minimize(objective + c2 * cp.sum(xi)), constraints)
        problem.solve(solver="CLARABEL", **opts)
        if problem.status != "optimal":
            return Outcome(None, _clarabel_status(problem.status))
        assert w.value is not None and b.value is not None, "Clarabel's optimal point"
        coef = np.asarray(w.value, dtype=np.float64)
        return Outcome(PUSolution(bias=float(b.value), coef=coef, norm_sq=float(coef @ coef)))
    K = model.kernel(X, X)
    alpha_p = np.full(P.size, c1)
    s, d = cp.Variable(U.size), cp.Variable(U.size)
    objective = (
        0.5 * cp.quad_form(s, cp.psd_wrap(K[np.ix_(U, U)])) - (K[np.ix_(U, P)] @ alpha_p) @ s
    )
    constraints = [cp.sum(s) == model.prior / (2 * model.lam), s + d / 2 <= c2, s - d / 2 >= 0]
    problem = cp.Problem(cp.Minimize(objective - 0.5 * cp.sum(d)), [*constraints, d >= 0, d <= c2])
    problem.solve(solver="CLARABEL", **opts)
    if problem.status != "optimal":
        return Outcome(None, _clarabel_status(problem.status))
    alpha = np.where(labeled, c1, 0.0)
    assert s.value is not None, "Clarabel's optimal point"
    alpha[U] = -np.clip(s.value, 0.0, c2)
    F = K @ alpha
    beta = optimal_bias(F[U], np.ones(U.size), c1 * P.size, c2)
    solution = PUSolution(
        bias=beta,
        coef=None,
        norm_sq=float(alpha @ F),
        entry_coef=alpha,
        labels=np.arange(X.shape[0]),
        train_decision=F + beta,
    )
    return Outcome(solution)


def _clarabel_status(status: str) -> str:
    return "time_limit" if status == "user_limit" else status


# ---------------------------------------------------------------------- S3VM
def _s3vm_solution(model: Any, data: Any, w: np.ndarray, b: float) -> Any:
    """A hyperplane as the S3VM model's solution on singleton clusters (d = the sign of f on
    the unlabeled rows): what its evaluate takes."""
    from aidopt.core.partition import Partition
    from aidopt.models.s3vm import S3VMSolution

    w = np.asarray(w, dtype=np.float64).ravel()
    f = np.asarray(data.X @ w).ravel() + b
    d = np.where(data.labeled, 0.0, np.where(f >= 0, 1.0, -1.0))
    return S3VMSolution(w, float(b), d, float("nan"), Partition.singletons(data.n), {})


@imports("aidopt.baselines.cuts3vm")
def cuts3vm(model: Any, data: Any, time_limit: float | None) -> Outcome:
    """CutS3VM (Zhao, Wang & Zhang 2008, a local method) on the S3VM's own problem: its losses
    are divided by n, so C_l = n·M_l and C_u = n·M_u give (12), and its balance constraint is
    the S3VM's "constraint" (mean score of the unlabeled rows = mean label of the labeled)."""
    from aidopt.baselines.cuts3vm import CutS3VM

    method = CutS3VM(
        C_l=data.n * model.M_l, C_u=data.n * model.M_u, time_limit=time_limit, random_state=0
    )
    result = method.solve(data)
    solution = _s3vm_solution(model, data, result.w, result.intercept)
    info = {"constraints": result.constraints, "cccp_iterations": result.cccp_iterations}
    return Outcome(solution, str(result.status), info=info, message=result.message)
