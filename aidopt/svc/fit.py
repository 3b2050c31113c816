"""Phase 1 of support-vector clustering: the domain of novelty by one of six methods.

* ``aid``: the LM-OCSVM (1) solved exactly by AID (:mod:`aidopt.models.ocsvm_kernel`), certified;
* ``svdd``: SVDD (Ben-Hur et al.'s own domain) solved and certified by aidopt
  (:mod:`aidopt.models.svdd`: libsvm's one-class solver on all rows, then the certificate on all
  rows); C is SVDD's C, ≥ 1/N — the same problem as ``libsvm``, with a proof;
* ``bsgd-r``, ``bsgd-pnn``, ``bsgd-prn``: Algorithm 2 with removal / projection onto the k nearest
  / k random support vectors; ``sgd``: Algorithm 1 (no budget) (:mod:`aidopt.svc.bsgd`);
* ``libsvm``: the SVC baseline, scikit-learn's ``OneClassSVM`` (libsvm's one-class ν-SVM =
  SVDD for the RBF kernel) with ν = 1/(N·C): here C is SVDD's C, which must be ≥ 1/N (with
  sample weights ω: its per-row bounds α_i ≤ ω_i, ν = 1/(C Σω)).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.validation import check_row_weights
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.numerics.kernel_expansion import Domain
from aidopt.numerics.kernels import Kernel
from aidopt.svc.bsgd import Maintenance

__all__ = ["METHODS", "DomainFit", "fit_domain"]

METHODS = ("aid", "svdd", "bsgd-r", "bsgd-pnn", "bsgd-prn", "sgd", "libsvm")
_MAINTENANCE: dict[str, Maintenance] = {"bsgd-r": "removal", "bsgd-pnn": "pnn", "bsgd-prn": "prn"}


@dataclass(frozen=True)
class DomainFit:
    """The domain, the training seconds, and what the method reports (status, certificate, J(w),
    draws, ...)."""

    domain: Domain
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    result: Any = None  # the AIDResult for method 'aid'


def fit_domain(
    X: NDArray[np.float64],
    method: str,
    *,
    C: float,
    gamma: float,
    budget: int = 50,
    k: int = 5,
    theta: float = 0.01,
    min_epochs: float = 0.0,
    random_state: int | None = None,
    solver: str | None = None,
    tol: float = 1e-6,
    time_limit: float | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> DomainFit:
    """The domain of novelty of X (RBF kernel exp(−γ‖a − b‖²)) by ``method`` (see the module);
    ``sample_weight`` ω > 0 makes row i's loss count ω_i times (AID: the weighted model; BSGD and
    SGD: draws ∝ ω; libsvm: its per-row bounds)."""
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}; got {method!r}.")
    if not (np.isfinite(gamma) and gamma > 0):
        raise InvalidParameterError(f"gamma must be a positive number; got {gamma!r}.")
    if not (np.isfinite(C) and C > 0):
        raise InvalidParameterError(f"C must be a positive number; got {C!r}.")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise DataError(f"Clustering needs at least 2 rows of features; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise DataError("X contains NaN or infinity; clean or impute it first.")
    sample_weight = check_row_weights(sample_weight, X.shape[0])
    kernel = Kernel("rbf", float(gamma))
    start = time.perf_counter()
    if method == "aid":
        return _fit_aid(X, C, gamma, solver, tol, time_limit, random_state, start, sample_weight)
    if method == "svdd":
        return _fit_svdd(X, C, gamma, solver, tol, time_limit, start, sample_weight)
    if method == "libsvm":
        return _fit_libsvm(X, C, gamma, start, sample_weight)
    from aidopt.svc.bsgd import bsgd_lmoc

    fit = bsgd_lmoc(
        X,
        C,
        kernel,
        budget=None if method == "sgd" else budget,
        maintenance=_MAINTENANCE.get(method, "removal"),
        k=k,
        theta=theta,
        min_epochs=min_epochs,
        rng=random_state,
        weight=sample_weight,
    )
    info = {
        "steps": fit.steps,
        "stopped_by": fit.stopped_by,
        "maintenance_steps": fit.maintenance_steps,
        "n_support": int(fit.support.size),
    }
    return DomainFit(fit.domain, time.perf_counter() - start, info)


def _fit_aid(X, C, gamma, solver, tol, time_limit, random_state, start, weight) -> DomainFit:
    from aidopt.core.driver import AIDSolver
    from aidopt.core.registry import model as registered
    from aidopt.data.containers import FeatureData

    model = registered("ocsvm").from_options(C=C, kernel="rbf", gamma=gamma)
    seed = 0 if random_state is None else random_state
    result = AIDSolver(
        model, solver=solver, tol=tol, time_limit=time_limit, random_state=seed
    ).solve(FeatureData.from_arrays(X, weight=weight))
    cert = result.certificate
    info = {
        "status": str(result.status),
        "objective": result.objective,
        "lower_bound": None if cert is None else cert.lower_bound,
        "gap": None if cert is None else cert.gap,
        "iterations": len(result.history),
        "n_support": int(result.solution.support_vectors.shape[0]),
    }
    return DomainFit(result.solution.domain, time.perf_counter() - start, info, result)


def _fit_svdd(X, C, gamma, solver, tol, time_limit, start, weight) -> DomainFit:
    from aidopt.core.driver import AIDSolver
    from aidopt.core.registry import model as registered
    from aidopt.data.containers import FeatureData

    model = registered("svdd")(C=C, kernel="rbf", gamma=gamma)
    data = FeatureData.from_arrays(X, weight=weight)
    result = AIDSolver(model, solver=solver, tol=tol, time_limit=time_limit).solve(data)
    info = {
        "status": str(result.status),
        "objective": result.objective,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "n_support": int(result.solution.support_vectors.shape[0]),
    }
    return DomainFit(result.solution.domain, time.perf_counter() - start, info, result)


def _fit_libsvm(X, C, gamma, start, weight) -> DomainFit:
    from sklearn.svm import OneClassSVM

    n = X.shape[0]
    total = n if weight is None else float(weight.sum())
    if C * total < 1.0:
        raise InvalidParameterError(
            f"method 'libsvm' takes SVDD's C, which must be ≥ 1/N = {1.0 / total:g} "
            "(ν = 1/(N·C); N = Σω with sample weights)."
        )
    # scikit-learn's libsvm: α_i ≤ ω_i and Σα = ν Σω, so β = α/(ν Σω) ≤ Cω_i with ν = 1/(C Σω)
    nu = 1.0 / (total * C)
    fit = OneClassSVM(kernel="rbf", gamma=gamma, nu=nu).fit(X, sample_weight=weight)
    domain = Domain(
        fit.support_vectors_.copy(),
        fit.dual_coef_[0].copy(),
        Kernel("rbf", float(gamma)),
        offset=float(-fit.intercept_[0]),
    )
    info = {"nu": nu, "n_support": int(fit.support_.size)}
    return DomainFit(domain, time.perf_counter() - start, info)
