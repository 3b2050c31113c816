"""libsvm and liblinear (through scikit-learn) on a :class:`WeightedSVM`.

``libsvm`` = ``SVC(kernel="linear" | "precomputed", C)`` with ``sample_weight = w_k``: libsvm's
box is C·weight_k, so it solves the weighted SVM exactly (b unpenalised). Its dual answer is
made exactly feasible (:func:`feasible_dual`) and its value D(α) is the bound. Accuracy: none
stated (its ``tol`` is on a KKT gradient); ``refine`` asks for a 100 times smaller ``tol``.

``liblinear`` = ``LinearSVC(loss="hinge", C, tol=1e-3, max_iter=100,000)`` — the paper's setting
— adds the bias as a feature and so penalises ½b² too: another problem, reported with
``exact=False`` and no bound. Heavy weights slow its coordinate descent down on small problems,
so an automatic iteration limit grows tenfold (up to 10⁷) while it is hit.

Neither library can be interrupted: under a time limit (or the run's deadline) the fit runs in a
forked child process killed at the limit (:func:`aidopt.common.deadline.call_with_timeout`), which
gives status ``time_limit``.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, ClassVar

import numpy as np

from aidopt.common.deadline import TimeLimitReached, budget, call_with_timeout
from aidopt.exceptions import SolverCapabilityError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus, check_options
from aidopt.solvers.structures import (
    GRAM,
    NO_INTERCEPT,
    KernelOneClass,
    OneClassFit,
    SVMFit,
    WeightedSVM,
    feasible_dual,
    svm_dual_value,
    svm_primal_value,
)

__all__ = ["LiblinearSolver", "LibsvmSolver", "check_linear_kernel"]

_LIBSVM_OPTIONS = frozenset({"tol", "cache_size", "max_iter", "shrinking"})
_LIBLINEAR_OPTIONS = frozenset({"tol", "max_iter", "intercept_scaling", "random_state"})
_LIBLINEAR_MAX_ITER = 10_000_000  # largest automatic iteration limit of liblinear


def check_linear_kernel(svm: WeightedSVM, name: str) -> None:
    """SolverCapabilityError when the problem comes as a Gram matrix (a kernel model)."""
    if svm.gram is not None:
        raise SolverCapabilityError(
            f"Solver '{name}' handles only the linear kernel; use libsvm, highs or gurobi for "
            "a kernel model."
        )


def _check_intercept(svm: WeightedSVM, name: str) -> None:
    if not svm.intercept:
        raise SolverCapabilityError(
            f"Solver '{name}' always fits an intercept b; this problem fixes b = 0 "
            "(use activeset, highs or gurobi)."
        )


def _fitted(result_fit, svm: WeightedSVM, seconds: float, **fields: Any) -> SolveResult:
    n_iter = int(np.max(result_fit.n_iter_))
    stopped = getattr(result_fit, "fit_status_", 0) != 0 or (
        hasattr(result_fit, "max_iter")
        and result_fit.max_iter > 0
        and n_iter >= result_fit.max_iter
    )
    return SolveResult(
        status=SolveStatus.ITERATION_LIMIT if stopped else SolveStatus.OPTIMAL,
        seconds=seconds,
        iterations=n_iter,
        message="optimal" if not stopped else f"iteration limit ({n_iter} iterations)",
        **fields,
    )


class LibsvmSolver(SolverAdapter):
    NAME: ClassVar[str] = "libsvm"
    DESCRIPTION: ClassVar[str] = (
        "libsvm (scikit-learn SVC, OneClassSVM): weighted SVM, linear, kernel or Gram; SVDD"
    )
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("sklearn",)
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({WeightedSVM, KernelOneClass})
    REFUSED_TRAITS: ClassVar[frozenset[str]] = frozenset({NO_INTERCEPT})

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if isinstance(structure, KernelOneClass):
            return _one_class(structure, time_limit, verbose, options)
        if not isinstance(structure, WeightedSVM):
            return super().solve_structure(structure)
        _check_intercept(structure, "libsvm")
        from sklearn.svm import SVC

        svm = structure
        kwargs = {"tol": 1e-3, **check_options(options, _LIBSVM_OPTIONS, "libsvm")}
        rows = svm.gram if svm.gram is not None else svm.features
        if svm.gram is not None:
            fit = SVC(kernel="precomputed", C=svm.C, verbose=verbose, **kwargs)
        elif svm.kernel is not None:  # libsvm evaluates the kernel (its conventions are ours)
            k = svm.kernel
            shape = {"gamma": k.gamma, "degree": k.degree, "coef0": k.coef0}
            fit = SVC(kernel=k.kind, C=svm.C, verbose=verbose, **shape, **kwargs)
        else:
            fit = SVC(kernel="linear", C=svm.C, verbose=verbose, **kwargs)
        start = time.perf_counter()
        try:
            fit = _fit_within(fit, time_limit, rows, svm.y, svm.weight)
        except TimeLimitReached as exc:
            return None, _stopped(start, exc)
        seconds = time.perf_counter() - start
        alpha = np.zeros(svm.y.size)
        alpha[fit.support_] = np.abs(fit.dual_coef_[0])
        alpha = feasible_dual(alpha, svm.y, svm.upper)
        linear = svm.gram is None and svm.kernel is None
        w = np.asarray(fit.coef_).ravel().copy() if linear else None
        answer = SVMFit(alpha=alpha, b=float(fit.intercept_[0]), w=w)
        tol = float(kwargs["tol"])
        result = _fitted(
            fit,
            svm,
            seconds,
            objective=svm_primal_value(svm, answer),
            bound=svm_dual_value(svm, alpha),
            refine=None if tol <= 1e-12 else {"tol": max(tol / 100.0, 1e-12)},
        )
        return answer, result


def _fit_within(fit: Any, time_limit: float | None, X: Any, y: Any, weight: Any) -> Any:
    """``fit.fit(X, y, sample_weight=weight)`` in a child process killed at the time limit
    (libsvm cannot be interrupted)."""
    return call_with_timeout(
        fit.fit, X, y, sample_weight=weight, timeout=budget(time_limit), what="libsvm"
    )


def _stopped(start: float, exc: TimeLimitReached) -> SolveResult:
    return SolveResult(
        SolveStatus.TIME_LIMIT, seconds=time.perf_counter() - start, message=str(exc)
    )


def _one_class(problem: KernelOneClass, time_limit, verbose, options):
    """libsvm's one-class ν-SVM (scikit-learn's ``OneClassSVM``) on the rows, its α mapped to
    SVDD's β = α/(ν Σw) (:class:`aidopt.solvers.structures.KernelOneClass`)."""
    from sklearn.svm import OneClassSVM

    kwargs = {"tol": 1e-3, **check_options(options, _LIBSVM_OPTIONS, "libsvm")}
    total = problem.features.shape[0] if problem.weight is None else float(problem.weight.sum())
    nu = 1.0 / (problem.C * total)
    k = problem.kernel
    fit = OneClassSVM(kernel=k.kind, gamma=k.gamma, nu=nu, verbose=verbose, **kwargs)
    start = time.perf_counter()
    try:
        fit = _fit_within(fit, time_limit, problem.features, None, problem.weight)
    except TimeLimitReached as exc:
        return None, _stopped(start, exc)
    beta = np.zeros(problem.features.shape[0])
    beta[fit.support_] = fit.dual_coef_[0] / (nu * total)
    tol = float(kwargs["tol"])
    stopped = getattr(fit, "fit_status_", 0) != 0
    return OneClassFit(beta), SolveResult(
        status=SolveStatus.ITERATION_LIMIT if stopped else SolveStatus.OPTIMAL,
        seconds=time.perf_counter() - start,
        iterations=int(np.max(fit.n_iter_)),
        message="optimal" if not stopped else "libsvm stopped early",
        refine=None if tol <= 1e-12 else {"tol": max(tol / 100.0, 1e-12)},
    )


class LiblinearSolver(SolverAdapter):
    NAME: ClassVar[str] = "liblinear"
    DESCRIPTION: ClassVar[str] = "liblinear (LinearSVC): penalises b, so never exact"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("sklearn",)
    STRUCTURES: ClassVar[frozenset[type]] = frozenset({WeightedSVM})
    REFUSED_TRAITS: ClassVar[frozenset[str]] = frozenset({NO_INTERCEPT, GRAM})

    def solve_structure(self, structure, *, time_limit=None, verbose=False, options=None):
        if not isinstance(structure, WeightedSVM):
            return super().solve_structure(structure)
        check_linear_kernel(structure, "liblinear")
        _check_intercept(structure, "liblinear")
        from sklearn.svm import LinearSVC

        svm = structure
        chosen = check_options(options, _LIBLINEAR_OPTIONS, "liblinear")
        kwargs = {"tol": 1e-3, "max_iter": 100_000, "random_state": 0, **chosen}  # the paper's
        start, limit = time.perf_counter(), budget(time_limit)
        while True:
            fit = LinearSVC(loss="hinge", dual=True, C=svm.C, verbose=int(verbose), **kwargs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an iteration limit is reported by the status
                try:
                    fit = call_with_timeout(
                        fit.fit,
                        svm.features,
                        svm.y,
                        sample_weight=svm.weight,
                        timeout=None if limit is None else limit - (time.perf_counter() - start),
                        what="liblinear",
                    )
                except TimeLimitReached as exc:
                    seconds = time.perf_counter() - start
                    return None, SolveResult(
                        SolveStatus.TIME_LIMIT, seconds=seconds, message=str(exc), exact=False
                    )
            limited = np.max(fit.n_iter_) >= kwargs["max_iter"]
            if not limited or "max_iter" in chosen or kwargs["max_iter"] >= _LIBLINEAR_MAX_ITER:
                break
            kwargs["max_iter"] *= 10
        answer = SVMFit(alpha=None, b=float(fit.intercept_[0]), w=fit.coef_[0].copy())
        result = _fitted(
            fit,
            svm,
            time.perf_counter() - start,
            objective=svm_primal_value(svm, answer),
            exact=False,
        )
        return answer, result
