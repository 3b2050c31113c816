"""Problem structures: the special forms of an aggregated problem that fast solvers exploit.

A model says which structures its aggregated problem can be written as (``structures`` and
``to_structure``); a solver says which structures it solves (``STRUCTURES``). Neither knows the
other: the driver matches them. Each structure is a plain description of one problem on
weighted rows, and each has a solution type that every solver of the structure returns.

=========================  ====================================================  ===========
structure                  problem                                               solvers
=========================  ====================================================  ===========
WeightedQuantileRegression min_β s Σ_k w_k ρ_τ(y_k − z_k β)                      fn
WeightedSVM                min ½‖w‖² + C Σ_k w_k max(0, 1 − y_k(⟨w, φ_k⟩ + b))   libsvm,
                           (b unpenalised; φ_k features, or a Gram matrix)       liblinear*
PULearning                 (5)/(6) of Sansone et al. on weighted rows            usmo
BoxQP                      max pᵀa − ½aᵀQa on a box (and Σa = s)                 boxqp
SemiSupervisedSVM          ½‖w‖² + Σ_L c_k hinge(y_k f_k) + Σ_U c_k max(0,        bnb
                           m_k − |f_k|) (the S3VM problem (15), non-convex)
=========================  ====================================================  ===========

(*) liblinear penalises ½b² as well: it answers a different problem and says so
(``SolveResult.exact = False``).

A model's instances of a structure may have a *trait* that some solvers of the structure cannot
take (``structure_traits`` of a model, ``REFUSED_TRAITS`` of a solver): the routing refuses such
a pair before the first solve, and ``aidopt solvers`` never lists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import sparse as sp

__all__ = [
    "GRAM",
    "NO_INTERCEPT",
    "REFUSALS",
    "BoxQP",
    "KernelBoxQP",
    "KernelOneClass",
    "OneClassFit",
    "PULearning",
    "QuantileFit",
    "S3VMFit",
    "SVMFit",
    "SemiSupervisedSVM",
    "Structure",
    "WeightedQuantileRegression",
    "WeightedSVM",
]


#: traits of a model's structure instances that some solvers refuse
NO_INTERCEPT = "b fixed at 0"  # a WeightedSVM with ``intercept=False`` (the one-class model)
GRAM = "a Gram matrix"  # a WeightedSVM given by its kernel matrix, not by its features
#: why a solver that refuses a trait refuses it (for the routing's message)
REFUSALS = {
    NO_INTERCEPT: "it always fits an intercept b, and this problem fixes b = 0",
    GRAM: "it handles only the linear kernel, and this problem has a kernel (a Gram matrix)",
}


class Structure:
    """Base of every structure; ``title`` names the problem in messages."""

    title: ClassVar[str] = ""


@dataclass(frozen=True, eq=False)
class WeightedQuantileRegression(Structure):
    """min_β scale · Σ_k w_k ρ_τ(y_k − z_k β), ρ_τ(r) = r(τ − 1[r < 0]); rows z_k of Z.

    Dual (the LP's): max Σ_k y_k d_k s.t. Zᵀd = 0, −(1 − τ)w ≤ d ≤ τw (times ``scale``).
    ``start``: an optional warm start (β, a) with a = d + (1 − τ)w ∈ [0, w].
    """

    title: ClassVar[str] = "weighted quantile regression"
    Z: NDArray[np.float64]
    y: NDArray[np.float64]
    weight: NDArray[np.float64]
    tau: float
    scale: float = 1.0
    start: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None


@dataclass(frozen=True)
class QuantileFit:
    """β and the LP multipliers d (one per row, in [−(1 − τ)w, τw]) of a quantile regression."""

    coef: NDArray[np.float64]
    dual: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class WeightedSVM(Structure):
    """min_{w,b} ½‖w‖² + C Σ_k w_k max(0, 1 − y_k(⟨w, φ_k⟩ + b)), b free and unpenalised.

    Either ``features`` (rows φ_k, the linear kernel; with ``kernel``, an
    :class:`aidopt.numerics.kernels.Kernel`, the rows x_k of φ_k = φ(x_k), for a solver that
    evaluates the kernel itself) or ``gram`` (G_kq = ⟨φ_k, φ_q⟩). Dual:
    max Σα − ½ (α∘y)ᵀG(α∘y) s.t. Σ α_k y_k = 0, 0 ≤ α_k ≤ C w_k. ``intercept`` False fixes
    b = 0 (the dual loses its row Σ α_k y_k = 0; e.g. the one-class model with ρ = 1).
    ``start``: an optional warm start (w, b) for a solver that takes one (linear kernel).
    """

    title: ClassVar[str] = "weighted soft-margin SVM"
    y: NDArray[np.float64]
    weight: NDArray[np.float64]
    C: float
    features: NDArray[np.float64] | sp.spmatrix | None = None
    gram: NDArray[np.float64] | None = None
    start: tuple[NDArray[np.float64], float] | None = None
    intercept: bool = True
    kernel: Any = None  # an aidopt.numerics.kernels.Kernel on ``features``; None: linear

    @property
    def upper(self) -> NDArray[np.float64]:
        """The box C w_k of the dual."""
        return self.C * self.weight


@dataclass(frozen=True)
class SVMFit:
    """The dual α (K,), the intercept b, and w = Σ α_k y_k φ_k when the features are given."""

    alpha: NDArray[np.float64] | None
    b: float
    w: NDArray[np.float64] | None


@dataclass(frozen=True, eq=False)
class BoxQP(Structure):
    """max_a pᵀa − ½ aᵀQa  s.t.  lower ≤ a ≤ upper (finite),  and Σ_k a_k = ``total`` when given;
    Q ⪰ 0 small and dense (the dual of a one-class model on a centroid Gram matrix). ``start``:
    an optional warm start a. The answer has ``a``; its objective is the maximised value."""

    title: ClassVar[str] = "box-constrained convex QP"
    Q: NDArray[np.float64]
    p: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    total: float | None = None
    start: NDArray[np.float64] | None = None


@dataclass(frozen=True, eq=False)
class KernelOneClass(Structure):
    """SVDD's dual max Σβ_k K_kk − βᵀKβ s.t. Σβ = 1, 0 ≤ β_k ≤ C w_k on rows x_k (``features``)
    with a kernel of constant diagonal (RBF), where the linear term is constant: libsvm's
    one-class ν-SVM min ½αᵀKα s.t. Σα = ν Σw, 0 ≤ α_k ≤ w_k, at β = α/(ν Σw), ν = 1/(C Σw).
    ``weight`` None: every row weighs 1. The answer has ``a`` = β."""

    title: ClassVar[str] = "one-class ν-SVM (SVDD with an RBF kernel)"
    features: NDArray[np.float64]
    kernel: Any  # an aidopt.numerics.kernels.Kernel of constant diagonal
    C: float
    weight: NDArray[np.float64] | None = None


@dataclass(frozen=True, eq=False)
class KernelBoxQP(Structure):
    """min ½βᵀKβ − pᵀβ s.t. 0 ≤ β ≤ ``upper`` with K_ij = kernel(x_i, x_j) on the rows
    (``features``), K never formed: the LM-OCSVM's dual (1) on all rows (p = 1). ``p`` None: all
    ones. The answer has ``a`` = β."""

    title: ClassVar[str] = "kernel box QP on all rows (no sum row)"
    features: NDArray[np.float64]
    kernel: Any  # an aidopt.numerics.kernels.Kernel
    upper: NDArray[np.float64]
    p: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class OneClassFit:
    """β of :class:`KernelOneClass` (one per row, on its box, Σβ = 1 to rounding)."""

    a: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class SemiSupervisedSVM(Structure):
    """min_{w,b} ½‖w‖² + Σ_{k: y_k = ±1} c_k max(0, 1 − y_k f_k) + Σ_{k: y_k = 0} c_k max(0,
    m_k − |f_k|), f_k = ⟨w, x_k⟩ + b, on weighted rows x_k (dense): the S3VM problem (15) of
    Park & Klabjan with unlabeled margins m_k (1 in (15); a row with m_k ≤ 0 carries no loss).
    Non-convex: each unlabeled row takes the better label d_k = sign f_k (Lemma 1). ``bias``
    fixes b (the balance constraint) or is None (b free); ``start``: a point (w, b) whose
    value is a first incumbent."""

    title: ClassVar[str] = "semi-supervised SVM (S3VM)"
    features: NDArray[np.float64]
    y: NDArray[np.float64]  # ±1 labeled, 0 unlabeled
    cost: NDArray[np.float64]
    margin: NDArray[np.float64]  # m_k of the unlabeled rows (1 on labeled rows)
    bias: float | None = None
    start: tuple[NDArray[np.float64], float] | None = None


@dataclass(frozen=True)
class S3VMFit:
    """(w, b) and the labels d (±1 on unlabeled rows, y_k on labeled ones) of an optimum."""

    w: NDArray[np.float64]
    b: float
    d: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class PULearning(Structure):
    """Positive–unlabeled learning with the double hinge (Sansone et al. 2019, (5)/(6)) on
    weighted rows: ``X`` the rows with ``kernel`` (a :class:`aidopt.numerics.kernels.Kernel`), or a
    Gram matrix with ``kernel="precomputed"``; ``labeled`` marks the labeled positives.
    ``start``: σ of the unlabeled rows (a warm start) or "feasible". The solution is the
    solver's :class:`aidopt.solvers.usmo.USMOResult`-like answer (σ, α, β, w, ‖f − β‖²)."""

    title: ClassVar[str] = "positive-unlabeled learning (double hinge)"
    X: Any
    labeled: NDArray[np.bool_]
    weight: NDArray[np.float64]
    prior: float
    lam: float
    kernel: Any
    start: Any = "feasible"


def feasible_dual(
    alpha: NDArray[np.float64], y: NDArray[np.float64], upper: NDArray[np.float64]
) -> NDArray[np.float64]:
    """A point of {0 ≤ α ≤ upper, Σ α_k y_k = 0} next to ``alpha`` (a solver's dual answer).

    Clip to the box, then scale down the class whose Σα is larger so that the two classes
    balance; scaling down keeps the box, so the result is dual feasible up to rounding.
    """
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, upper)
    pos, neg = y > 0, y < 0
    s_pos, s_neg = a[pos].sum(), a[neg].sum()
    if s_pos > s_neg:
        a[pos] *= s_neg / s_pos
    elif s_neg > s_pos:
        a[neg] *= s_pos / s_neg
    return a


def _given(value: Any, name: str) -> Any:
    """``value``, which the structure's form requires (an answer without it is a solver bug)."""
    if value is None:
        raise ValueError(f"the SVM answer has no {name}, which this structure's form needs")
    return value


def svm_scores(svm: WeightedSVM, fit: SVMFit) -> NDArray[np.float64]:
    """⟨w, φ_k⟩ for every row (from w with features, from α with a Gram matrix or a kernel)."""
    if svm.gram is not None:
        return svm.gram @ (_given(fit.alpha, "alpha") * svm.y)
    features = _given(svm.features, "features")
    if svm.kernel is not None:
        from aidopt.numerics.kernels import kernel_times_sparse

        alpha_y = _given(fit.alpha, "alpha") * svm.y
        return kernel_times_sparse(svm.kernel, features, features, alpha_y)
    return np.asarray(features @ _given(fit.w, "w")).ravel()


def svm_primal_value(svm: WeightedSVM, fit: SVMFit) -> float:
    """½‖w‖² + C Σ_k w_k max(0, 1 − y_k(⟨w, φ_k⟩ + b)) at the fit."""
    scores = svm_scores(svm, fit)
    if svm.gram is not None or svm.kernel is not None:
        norm_sq = float((_given(fit.alpha, "alpha") * svm.y) @ scores)
    else:
        w = _given(fit.w, "w")
        norm_sq = float(w @ w)
    hinge = np.maximum(0.0, 1.0 - svm.y * (scores + fit.b))
    return 0.5 * norm_sq + svm.C * float(svm.weight @ hinge)


def svm_dual_value(svm: WeightedSVM, alpha: NDArray[np.float64]) -> float:
    """Σα − ½‖Σ α_k y_k φ_k‖² (a lower bound on the optimum when α is dual feasible)."""
    ay = alpha * svm.y
    if svm.gram is not None:
        return float(alpha.sum() - 0.5 * ay @ svm.gram @ ay)
    if svm.kernel is not None:
        from aidopt.numerics.kernels import kernel_times

        support = np.flatnonzero(alpha)
        rows = _given(svm.features, "features")[support]
        return float(
            alpha.sum() - 0.5 * ay[support] @ kernel_times(svm.kernel, rows, rows, ay[support])
        )
    w = np.asarray(_given(svm.features, "features").T @ ay).ravel()
    return float(alpha.sum() - 0.5 * w @ w)
