"""Fits on a small random sample that place the initial clusters (the paper's §4 recipe).

AID's initial clustering starts from an approximate solution of the model on a sample (a
regression line, a hyperplane, a PU classifier) and groups the entries by their score. Speed
matters more than accuracy here (§5), so every fit is capped: an iteration limit, at most a
quarter of the run's remaining time (libraries that cannot be interrupted run in a forked child
killed then, :mod:`aidopt.common.deadline`), and a fit that is stopped or fails gives way to a
closed-form direction (the difference of the class means). None of these fits is a solve of
the aggregated problem; the certificate never depends on them.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import TimeLimitReached, budget, call_with_timeout, remaining
from aidopt.exceptions import AidoptError, ConvergenceWarning
from aidopt.numerics.kernels import Kernel, kernel_times

if TYPE_CHECKING:
    from aidopt.solvers.usmo import USMOResult

__all__ = ["kernel_svm_scores", "linear_svm_fit", "pu_fit", "quantile_fit"]

TIME_SHARE = 0.25  #: the share of the remaining time a sample fit may take
MAX_ITER_KERNEL = 100_000  #: libsvm iterations of the kernel SVM sample fit
MAX_ITER_PU = 30_000  #: USMO steps of the PU sample fit
_WHAT = "the sample fit that places the initial clusters"


def quantile_fit(Z: NDArray[np.float64], y: NDArray[np.float64], tau: float) -> NDArray[np.float64]:
    """β of min Σ ρ_τ(y − Zβ) on the sample (Frisch–Newton, tol 1e-6)."""
    from aidopt.solvers.frisch_newton import frisch_newton

    return frisch_newton(Z, y, tau=tau, tol=1e-6).coef


def linear_svm_fit(
    X: NDArray[np.float64], y: NDArray[np.float64], C: float
) -> tuple[NDArray[np.float64], float]:
    """(w, b) of the hinge-loss linear SVM (b unpenalised) on the sample, exact
    (:func:`aidopt.solvers.svm_active_set.svm_active_set`), or the class-mean direction
    w = mean₊ − mean₋ when it is stopped."""
    from aidopt.solvers.svm_active_set import svm_active_set

    found = svm_active_set(X, y, np.full(y.size, C), time_limit=budget(share=TIME_SHARE))
    if found.converged:
        return found.w, found.b
    plus, minus = X[y > 0].mean(axis=0), X[y < 0].mean(axis=0)
    w = plus - minus
    return w, -0.5 * float(w @ (plus + minus))


def kernel_svm_scores(
    kernel: Kernel,
    X: NDArray[np.float64],
    Xs: NDArray[np.float64],
    ys: NDArray[np.float64],
    C: float,
) -> NDArray[np.float64]:
    """f(x) of a kernel SVM fitted on the sample (Xs, ys) (libsvm), for every row of X; or the
    difference of the kernel means of the two classes when the fit is stopped or fails."""
    from sklearn.svm import SVC

    fit = SVC(kernel="precomputed", C=C, max_iter=MAX_ITER_KERNEL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unconverged sample fit only places C^0
        try:
            fit = call_with_timeout(
                fit.fit, kernel(Xs, Xs), ys, timeout=budget(share=TIME_SHARE), what=_WHAT
            )
            sv, coef, intercept = Xs[fit.support_], fit.dual_coef_[0], float(fit.intercept_[0])
        except (TimeLimitReached, AidoptError):
            coef = np.where(ys > 0, 1.0 / (ys > 0).sum(), -1.0 / (ys < 0).sum())
            sv, intercept = Xs, 0.0
    return kernel_times(kernel, X, sv, coef) + intercept


def pu_fit(
    rows: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    weights: NDArray[np.float64],
    prior: float,
    lam: float,
    kernel: Kernel,
) -> USMOResult:
    """A PU classifier fitted by USMO on the weighted sample ``rows`` (``labeled`` marks its
    positives; ``coef`` = w for the linear kernel). USMO stops after ``MAX_ITER_PU`` steps or a
    quarter of the remaining time; its iterate is used whatever its status (it is never worse
    than the class-mean direction it starts from)."""
    from aidopt.solvers.usmo import usmo

    left = remaining()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a stopped fit is still usable
        return usmo(
            rows,
            labeled,
            prior=prior,
            lam=lam,
            kernel=kernel,
            weights=weights,
            tol=1e-3,
            max_iter=MAX_ITER_PU,
            time_limit=None if left is None else TIME_SHARE * left,
        )
