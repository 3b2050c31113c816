"""Linear support vector machine under AID (Park & Klabjan 2016, §3.2).

Original primal (7), labels y_i ∈ {−1, +1}, penalty M (the C of libsvm):

    E* = min_{w,b,ξ}  ½‖w‖² + M Σ_{i∈I} ξ_i
         s.t.  y_i(w x_i + b) ≥ 1 − ξ_i,  ξ_i ≥ 0                               i ∈ I

Clusters never mix labels (each class is clustered on its own). Aggregated data: x̄_k = mean of
C_k, ȳ_k = the common label, weight |C_k|. Aggregated problem (9), a weighted SVM:

    F^t = min_{w,b,ξ}  ½‖w‖² + M Σ_k |C_k| ξ_k
          s.t.  ȳ_k(w x̄_k + b) ≥ 1 − ξ_k,  ξ_k ≥ 0                              k ∈ K^t

Upper bound (10): E^t = ½‖w̄‖² + M Σ_i max{0, 1 − y_i(w̄ x_i + b̄)}.
Declustering (Prop. 3): regime_i = 1 if 1 − y_i(w̄ x_i + b̄) > 0 else 0; every cluster pure ⇒
(w̄, b̄) optimal for (7) and E^t = F^t. Lower bound (Prop. 4): F^{t−1} ≤ F^t ≤ E*.
Dual recovery (§3.2): α̂_i = ᾱ_k / |C_k| for i ∈ C_k is feasible for the dual (6), gives the
same w, and is dual optimal when every cluster is pure (:meth:`SVMSolution.entry_duals`).

Matrix form (the fast path): the dual of (9) with w kept as free variables v,

    min  ½‖v‖² − Σ_k α_k   s.t.  v − Σ_k α_k ȳ_k x̄_k = 0,  Σ_k α_k ȳ_k = 0,  0 ≤ α_k ≤ M|C_k|

(:func:`dual_program`; α is scaled to [0, 1]), given to generic solvers such as Gurobi. From
the returned α the model makes an exactly feasible ᾱ (clip to the box, rescale one class so
that Σ ᾱ_k ȳ_k = 0), takes w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact minimiser b̄ of (9) over b for that
w̄, and reports D(ᾱ) = Σ ᾱ_k − ½‖w̄‖² as the lower bound (weak duality: D(ᾱ) ≤ F^t ≤ E*), so
no bound rests on a solver tolerance.

HiGHS (``solver="highs"``) goes through the model's own route :func:`solve_dual_checked`:
HiGHS 1.15's QP solver does not finish the primal (9) from a few hundred clusters on, and on
the dual it sometimes reports "unbounded", fails, or returns NaN; the route tries three
equivalent dual forms and accepts an answer only when its primal-dual gap on (9) is ≤ 1e-6.
The Pyomo model (9) is solved on HiGHS with ``solver="pyomo:highs"`` (Pyomo's ``appsi_highs``
has no quadratic objectives).

Special solvers (scikit-learn): ``libsvm`` = ``SVC(kernel="linear", C=M)`` with
``sample_weight=|C_k|`` solves exactly the dual of (9) (libsvm's box is C·weight_k); the lower
bound is again D(ᾱ) at its repaired dual point. ``liblinear`` = ``LinearSVC(loss="hinge",
C=M, tol=1e-3, max_iter=100_000)`` with ``sample_weight=|C_k|`` adds the bias as a feature and so
penalises ½b² as well: it solves a different problem, its optimum is no bound on (7), and the
lower bound is reported as unavailable (None).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from aidopt.certificate import (
    EPS,
    Bound,
    DualPoint,
    abs_column_sums,
    accurate_sum,
    accurate_tdot,
    max_row_norm,
    repair_equalities,
)
from aidopt.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.contract import AggregatedModel, Evaluation, Previous
from aidopt.data.io import feature_matrix, target_column
from aidopt.deadline import TimeLimitReached, budget, call_with_timeout
from aidopt.exceptions import AidoptError, DataError, InvalidParameterError
from aidopt.partition import Partition, nested_labels
from aidopt.program import MatrixProgram, ProblemClass
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.validation import check_feature_names, check_matrix, check_real

__all__ = [
    "SVMAggregate",
    "SVMData",
    "SVMModel",
    "SVMSolution",
    "dual_program",
    "feasible_dual",
    "optimal_intercept",
    "per_class_partition",
    "polish_on_face",
    "solve_dual_checked",
]

_LIBSVM_OPTIONS = frozenset({"tol", "cache_size", "max_iter", "shrinking"})
_LIBLINEAR_OPTIONS = frozenset({"tol", "max_iter", "intercept_scaling", "random_state"})
_LIBLINEAR_MAX_ITER = 10_000_000  # largest automatic iteration limit of liblinear on (9)
_SAMPLE_MIN = 1000  # rows of the sample that places the initial hyperplane
_SAMPLE_MAX_ITER = 10_000  # liblinear iterations of that sample fit (an approximate fit is fine)
_SAMPLE_TIME_SHARE = 0.25  # at most this share of the time left goes to the sample fit


# ---------------------------------------------------------------------- data
@dataclass(frozen=True, eq=False)
class SVMData:
    """Classification data: X (n × m) and labels y ∈ {−1, +1} (n,).

    ``classes`` holds the original label values: ``classes[0]`` is mapped to −1 and
    ``classes[1]`` to +1 (sorted order, as scikit-learn's ``classes_``).
    """

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    classes: tuple[Any, Any]
    feature_names: tuple[str, ...]
    target_name: str = "y"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "y",
    ) -> SVMData:
        """Validate X and map a label vector with exactly two distinct values to ±1."""
        X = check_matrix(X, "X")
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise DataError(f"y must be a 1-D array of labels, got shape {labels.shape}.")
        if labels.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {labels.shape[0]} entries.")
        missing = pd.isna(labels)
        if missing.any():
            raise DataError(
                f"y contains {int(missing.sum())} missing (NaN) labels, first at index "
                f"{int(np.flatnonzero(missing)[0])}."
            )
        try:
            classes, codes = np.unique(labels, return_inverse=True)
        except TypeError:  # mixed types that cannot be sorted
            raise DataError("y mixes label types that cannot be compared.") from None
        if classes.size != 2:
            shown = ", ".join(repr(_python(c)) for c in classes[:10])
            more = ", ..." if classes.size > 10 else ""
            raise DataError(
                "An SVM needs labels with exactly two distinct values; y has "
                f"{classes.size} ({shown}{more})."
            )
        names = check_feature_names(feature_names, X.shape[1])
        return cls(
            X=X,
            y=np.where(codes == 1, 1.0, -1.0),
            classes=(_python(classes[0]), _python(classes[1])),
            feature_names=names,
            target_name=target_name,
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, target: str | None) -> SVMData:
        if target is None:
            raise DataError("An SVM needs a target (label) column.")
        y = target_column(frame, target)
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, y.to_numpy(), names, target)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def m(self) -> int:
        return int(self.X.shape[1])

    def label_mapping(self) -> dict[str, Any]:
        """{"-1": original value, "+1": original value}."""
        return {"-1": self.classes[0], "+1": self.classes[1]}


def _python(value: Any) -> Any:
    """A numpy scalar as the plain Python value (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------- shared pieces
def per_class_partition(
    y: NDArray[np.float64], score: NDArray[np.float64], rate: float, rng: np.random.Generator
) -> Partition:
    """Initial clusters (§3.2, §4): one k-means pass on the 1-D scores, separately per class.

    |K^0| = ⌈r^0 n⌉ clusters, shared between the classes in proportion to their sizes (at least
    one each); clusters never mix labels.
    """
    n = y.size
    total = n_clusters_for_rate(rate, n, minimum=2)
    labels = np.empty(n, dtype=np.int64)
    group = (y > 0).astype(np.int64)
    for g in (0, 1):
        rows = np.flatnonzero(group == g)
        k = int(min(rows.size, max(1, round(total * rows.size / n))))
        labels[rows] = kmeans_one_pass(score[rows], k, rng)
    return Partition.from_labels(nested_labels(group, labels))


def stratified_sample(y: NDArray[np.float64], size: int, rng: np.random.Generator) -> NDArray:
    """Row indices of a random sample of about ``size`` rows with both classes present."""
    n = y.size
    if size >= n:
        return np.arange(n)
    rows = []
    for cls in (-1.0, 1.0):
        members = np.flatnonzero(y == cls)
        k = min(members.size, max(10, round(size * members.size / n)))
        rows.append(rng.choice(members, size=k, replace=False))
    return np.sort(np.concatenate(rows))


def feasible_dual(
    alpha: ArrayLike, y: NDArray[np.float64], upper: NDArray[np.float64]
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


def optimal_intercept(
    g: NDArray[np.float64], y: NDArray[np.float64], cost: NDArray[np.float64]
) -> float:
    """argmin_b Σ_k cost_k max{0, 1 − y_k(g_k + b)} (the best b of (9) for a fixed w).

    The function is convex piecewise linear with breakpoints b_k = y_k − g_k; its right slope
    at b is −Σ_{y_k=+1, b_k>b} cost_k + Σ_{y_k=−1, b_k≤b} cost_k. The minimisers form an
    interval [lo, hi] of breakpoints; its midpoint is returned.
    """
    bk = y - g
    order = np.argsort(bk, kind="stable")
    bk, yy, cc = bk[order], y[order], cost[order]
    pos_from = np.cumsum((cc * (yy > 0))[::-1])[::-1]
    slope_right = -np.r_[pos_from[1:], 0.0] + np.cumsum(cc * (yy < 0))
    lo = int(np.argmax(slope_right >= 0))  # first breakpoint where the slope turns ≥ 0
    hi = int(np.argmax(slope_right > 0)) if np.any(slope_right > 0) else bk.size - 1
    return float(0.5 * (bk[lo] + bk[hi]))


DUAL_FORMS = ("scaled", "sparse", "dense")
_DENSE_MAX = 5000  # clusters up to which the dense form is tried (K² Hessian: 1.5 GB at 5,000)
_GAP_RTOL = 1e-6  # an answer is accepted when its own primal-dual gap on (9) is this small


def dual_program(
    features: NDArray[np.float64],
    y: NDArray[np.float64],
    upper: NDArray[np.float64],
    form: str = "scaled",
    gram: NDArray[np.float64] | None = None,
) -> MatrixProgram:
    """The dual of the weighted SVM, max Σα − ½‖Σ α_k y_k φ_k‖² s.t. Σ α_k y_k = 0,
    0 ≤ α ≤ upper, as a minimisation in one of three equivalent forms:

    * ``scaled``: α = upper∘β, columns (v, β):  min ½‖v‖² − Σ_k u_k β_k
      s.t. v − Σ_k β_k u_k y_k φ_k = 0,  Σ_k β_k u_k y_k = 0,  0 ≤ β ≤ 1;
    * ``sparse``: the same with α itself as the columns (bounds 0 ≤ α ≤ upper);
    * ``dense``: no v, Hessian Q_kq = y_k y_q G_kq with G = Φ Φᵀ (or ``gram``, e.g. K̄):
      min ½ αᵀQα − Σ α_k  s.t. Σ α_k y_k = 0,  0 ≤ α ≤ upper.

    ``features`` holds φ_k as rows (centroids x̄_k, or a factor L with L Lᵀ = K̄). The columns
    of α (or β) are the last K; ``meta["alpha_scale"]`` maps them to α.
    """
    K, r = features.shape
    if form == "dense":
        G = features @ features.T if gram is None else gram
        return MatrixProgram(
            c=-np.ones(K),
            A=sp.csc_matrix(y[None, :]),
            row_lower=np.zeros(1),
            row_upper=np.zeros(1),
            col_lower=np.zeros(K),
            col_upper=upper.copy(),
            Q=sp.csc_matrix(G * np.outer(y, y)),
            meta={"alpha_scale": np.ones(K)},
        )
    scale = upper if form == "scaled" else np.ones(K)
    coef = y * scale
    A = sp.vstack(
        [
            sp.hstack([sp.eye(r), sp.csr_matrix(-(features * coef[:, None]).T)]),
            sp.hstack([sp.csr_matrix((1, r)), sp.csr_matrix(coef[None, :])]),
        ]
    ).tocsc()
    return MatrixProgram(
        c=np.r_[np.zeros(r), -scale],
        A=A,
        row_lower=np.zeros(r + 1),
        row_upper=np.zeros(r + 1),
        col_lower=np.r_[np.full(r, -np.inf), np.zeros(K)],
        col_upper=np.r_[np.full(r, np.inf), upper / scale],
        Q=sp.diags(np.r_[np.ones(r), np.zeros(K)], format="csc"),
        meta={"alpha_scale": scale},
    )


def program_alpha(program: MatrixProgram, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """α from the solution of a :func:`dual_program` (its last K columns, rescaled)."""
    scale = program.meta["alpha_scale"]
    return x[x.size - scale.size :] * scale


def polish_on_face(
    alpha: NDArray[np.float64],
    y: NDArray[np.float64],
    upper: NDArray[np.float64],
    signed_gram_times: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    signed_gram_block: Callable[[NDArray[np.int64]], NDArray[np.float64]],
) -> NDArray[np.float64] | None:
    """Solve the dual exactly on the face of the box that ``alpha`` identifies.

    With Q the signed Gram (Q_kq = y_k y_q ⟨φ_k, φ_q⟩), the α at a bound (within 1e-8 of it)
    are fixed there and the free set F solves the KKT system of min ½αᵀQα − Σα on that face:
    Q_FF α_F + λ y_F = 1 − Q_F,fixed α_fixed,  y_Fᵀ α_F = −y_fixedᵀ α_fixed (least squares, Q_FF
    may be singular). Returns None when F is empty or too large (> 2,000) or the answer leaves
    the box by more than rounding; the caller keeps whichever point certifies better.
    """
    at_lower = alpha <= 1e-8 * upper
    at_upper = alpha >= (1 - 1e-8) * upper
    free = np.flatnonzero(~at_lower & ~at_upper)
    if free.size == 0 or free.size > 2000:
        return None
    base = np.where(at_upper, upper, 0.0)
    rhs = 1.0 - signed_gram_times(base)[free]
    n_f = free.size
    system = np.zeros((n_f + 1, n_f + 1))
    system[:n_f, :n_f] = signed_gram_block(free)
    system[:n_f, n_f] = system[n_f, :n_f] = y[free]
    solution = np.linalg.lstsq(system, np.r_[rhs, -(y @ base)], rcond=None)[0][:n_f]
    slack = 1e-9 * upper[free]
    if np.any(solution < -slack) or np.any(solution > upper[free] + slack):
        return None
    polished = base.copy()
    polished[free] = solution
    return polished


def solve_dual_checked(
    make_program: Callable[[str], MatrixProgram],
    n_clusters: int,
    certify: Callable[[NDArray[np.float64]], tuple[float, float]],
    y: NDArray[np.float64],
    upper: NDArray[np.float64],
    polish: Callable[[NDArray[np.float64]], NDArray[np.float64] | None],
    *,
    time_limit: float | None,
    verbose: bool,
    options: dict[str, Any],
) -> tuple[NDArray[np.float64] | None, SolveResult]:
    """The dual QP by HiGHS, trying the forms of :func:`dual_program` in turn.

    HiGHS 1.15's QP solver is not reliable on these problems (measured on 564 aggregated SVM
    problems from AID runs: each form fails on 0.4-2% of them — "unbounded" on a QP whose
    variables are all bounded, an internal error, or "optimal" with NaN values — but never all
    three on the same problem). HiGHS stops at 1e-7 tolerances, which heavy cluster weights
    amplify in the primal value, so each answer is first polished on its face of the box
    (``polish``, e.g. :func:`polish_on_face`). An answer is accepted only when it is finite and
    its own certificate holds: with ᾱ the repaired dual point, ``certify(ᾱ)`` = (D(ᾱ), P) where
    P is (9) at the primal point of ᾱ, and P − D(ᾱ) ≤ 1e-6·|P|. Then ᾱ is 1e-6-optimal whatever the
    solver's status said, and D(ᾱ) is a valid lower bound. If no form passes, the result has
    status ``error`` and says why each form failed.
    """
    from aidopt.exceptions import SolverError
    from aidopt.solvers import get_solver

    adapter = get_solver("highs")
    failures, seconds, start = [], 0.0, time.perf_counter()
    for form in DUAL_FORMS:
        if form == "dense" and n_clusters > _DENSE_MAX:
            continue
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if remaining is not None and remaining <= 0:
            return None, SolveResult(status=SolveStatus.TIME_LIMIT, seconds=seconds)
        program = make_program(form)
        try:
            result = adapter.solve_program(
                program, time_limit=remaining, verbose=verbose, options=options
            )
        except SolverError as exc:
            failures.append(f"{form}: {exc}")
            continue
        seconds += result.seconds
        if result.status is SolveStatus.TIME_LIMIT:
            return None, replace(result, seconds=seconds)
        if result.status is not SolveStatus.OPTIMAL or not np.all(np.isfinite(result.x)):
            failures.append(f"{form}: {result.status.value} {result.message}".strip())
            continue
        alpha = feasible_dual(program_alpha(program, result.x), y, upper)
        lower, primal = certify(alpha)
        polished = polish(alpha)
        if polished is not None:
            polished = feasible_dual(polished, y, upper)
            p_lower, p_primal = certify(polished)
            if p_primal - p_lower < primal - lower:
                alpha, lower, primal = polished, p_lower, p_primal
        if primal - lower <= _GAP_RTOL * max(1.0, abs(primal)):
            return alpha, replace(
                result,
                objective=primal,
                bound=lower,
                seconds=seconds,
                message=f"optimal ({form} dual form)",
                info={**result.info, "failed_forms": failures},
            )
        failures.append(f"{form}: its answer has primal-dual gap {primal - lower:.3g}")
    return None, SolveResult(
        status=SolveStatus.ERROR,
        seconds=seconds,
        message="HiGHS failed on every dual form: " + "; ".join(failures),
    )


def entry_duals_in_box(
    labels: NDArray[np.int64], alpha: NDArray[np.float64], y: NDArray[np.float64], M: float
) -> NDArray[np.float64]:
    """α̂_i = ᾱ_k/|C_k| in [0, M], values within 1e-12·M of a bound set to it, and Σ α̂_i y_i = 0
    restored on the entries strictly inside the box (least-norm change)."""
    a = np.clip(cluster_duals(labels, alpha), 0.0, M)
    a[a <= 1e-12 * M] = 0.0
    a[a >= (1 - 1e-12) * M] = M
    return repair_equalities(y[None, :], np.zeros(1), a, 0.0, M)


def cluster_duals(labels: NDArray[np.int64], alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """α̂_i = ᾱ_k / |C_k| for i ∈ C_k (the dual recovery of §3.2)."""
    sizes = np.bincount(labels, minlength=alpha.size)
    return (alpha / sizes)[labels]


# ---------------------------------------------------------------------- aggregate / solution
@dataclass(frozen=True, eq=False)
class SVMAggregate:
    """Aggregated data of (9): cluster sums of x, labels ȳ_k, weights |C_k|."""

    x_sum: NDArray[np.float64]  # (K, m)  Σ_{i∈C_k} x_i
    label: NDArray[np.float64]  # (K,)    ȳ_k ∈ {−1, +1}
    weight: NDArray[np.float64]  # (K,)   |C_k|
    partition: Partition

    @property
    def xbar(self) -> NDArray[np.float64]:
        return self.x_sum / self.weight[:, None]


@dataclass(frozen=True, eq=False)
class SVMSolution:
    """A hyperplane (w, b) and, when the backend gives it, the cluster duals ᾱ of (9).

    ``cluster_labels`` is the label vector of the partition the solution was computed on, so
    that :meth:`entry_duals` can map ᾱ to the entries.
    """

    w: NDArray[np.float64]
    b: float
    alpha: NDArray[np.float64] | None = None
    cluster_labels: NDArray[np.int64] | None = None
    partition: Partition | None = field(default=None, repr=False, compare=False)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        from aidopt.validation import check_predict_input

        return check_predict_input(X, self.w.shape[0], type(self).__name__) @ self.w + self.b

    def entry_duals(self) -> NDArray[np.float64]:
        """α̂_i = ᾱ_k / |C_k| for every entry (feasible for (6); optimal when certified)."""
        if self.alpha is None or self.cluster_labels is None:
            raise ValueError("this solution carries no dual values (liblinear gives none)")
        return cluster_duals(self.cluster_labels, self.alpha)


def _dual_value(agg: SVMAggregate, alpha: NDArray[np.float64]) -> tuple[float, NDArray]:
    """D(α) = Σ α_k − ½‖w(α)‖², w(α) = Σ α_k ȳ_k x̄_k; returns (D, w)."""
    w = (alpha * agg.label) @ agg.xbar
    return float(alpha.sum() - 0.5 * (w @ w)), w


def _aggregated_value(agg: SVMAggregate, M: float, w: NDArray, b: float) -> float:
    """The objective of (9) at (w, b) with the best slacks."""
    hinge = np.maximum(0.0, 1.0 - agg.label * (agg.xbar @ w + b))
    return float(0.5 * (w @ w) + M * (agg.weight @ hinge))


# ---------------------------------------------------------------------- the model
class SVMModel(AggregatedModel[SVMData, SVMAggregate, SVMSolution]):
    """Linear SVM (7)/(9) with penalty ``M`` (the paper's experiments use M = 0.1)."""

    name: ClassVar[str] = "svm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.QP
    gives_lower_bound: ClassVar[bool] = True
    special_solvers: ClassVar[tuple[str, ...]] = ("highs", "libsvm", "liblinear")
    citation: ClassVar[str] = "Park & Klabjan (2016), §3.2, problems (7), (9), (10), Props. 3-4"

    def __init__(self, M: float = 0.1) -> None:
        self.M = M

    def check_params(self) -> None:
        check_real(self.M, "M", type(self).__name__, low=0.0)

    def summary(self) -> dict[str, Any]:
        return {"M": self.M, "kernel": "linear"}

    # ------------------------------------------------------------------ data
    def data_from_frame(self, frame: pd.DataFrame, target: str | None) -> SVMData:
        return SVMData.from_frame(frame, target)

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: SVMData) -> float:
        """r^0 = max{1.1m/n, 0.0001} (paper §4)."""
        return min(1.0, max(1.1 * data.m / data.n, 0.0001))

    def initial_partition(self, data: SVMData, rate: float, rng: np.random.Generator) -> Partition:
        """Paper §4: hyperplane from a small sample, one 1-D k-means pass per class."""
        rows = stratified_sample(data.y, max(_SAMPLE_MIN, 20 * data.m), rng)
        w0, b0 = self._sample_hyperplane(data.X[rows], data.y[rows], data.n / rows.size, rng)
        return per_class_partition(data.y, data.X @ w0 + b0, rate, rng)

    def _sample_hyperplane(self, X, y, scale: float, rng) -> tuple[NDArray, float]:
        """liblinear on the sample with C = M·n/|sample| (each row stands for n/|sample|).

        It only places C^0: at most ``_SAMPLE_MAX_ITER`` iterations, and under a time limit
        at most a quarter of the time left (in a child process killed then); a fit that is
        stopped or fails gives way to the class-mean direction w = mean₊ − mean₋."""
        from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning
        from sklearn.svm import LinearSVC

        fit = LinearSVC(
            loss="hinge",
            C=self.M * scale,
            max_iter=_SAMPLE_MAX_ITER,
            random_state=int(rng.integers(2**31 - 1)),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkConvergenceWarning)  # only places C^0
            try:
                fit = call_with_timeout(
                    fit.fit,
                    X,
                    y,
                    timeout=budget(share=_SAMPLE_TIME_SHARE),
                    what="the sample fit that places the initial clusters",
                )
            except (TimeLimitReached, AidoptError):
                plus, minus = X[y > 0].mean(axis=0), X[y < 0].mean(axis=0)
                w = plus - minus
                return w, -0.5 * float(w @ (plus + minus))
        return fit.coef_[0], float(fit.intercept_[0])

    # ------------------------------------------------------------------ aggregated data
    def aggregate(self, data: SVMData, partition: Partition) -> SVMAggregate:
        weight = partition.sizes.astype(np.float64)
        label = partition.sums(data.y) / weight  # exactly ±1: clusters never mix labels
        assert np.all(np.abs(label) == 1.0), "a cluster mixes labels"
        return SVMAggregate(
            x_sum=partition.sums(data.X), label=label, weight=weight, partition=partition
        )

    # ------------------------------------------------------------------ aggregated problem (9)
    def build(self, agg: SVMAggregate) -> pyo.ConcreteModel:
        xbar, ybar, weight, M = agg.xbar, agg.label, agg.weight, self.M
        model = pyo.ConcreteModel(name="SVM aggregated problem (9)")
        model.K = pyo.RangeSet(0, len(weight) - 1)  # clusters k ∈ K^t
        model.J = pyo.RangeSet(0, xbar.shape[1] - 1)  # attributes j
        model.w = pyo.Var(model.J)  # w_j, free
        model.b = pyo.Var()  # b, free
        model.xi = pyo.Var(model.K, domain=pyo.NonNegativeReals)  # ξ_k
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)  # ᾱ_k, when the solver gives it

        @model.Objective(sense=pyo.minimize)  # (9) ½‖w‖² + M Σ_k |C_k| ξ_k
        def regularised_weighted_hinge(m):
            return 0.5 * sum(m.w[j] ** 2 for j in m.J) + M * sum(weight[k] * m.xi[k] for k in m.K)

        @model.Constraint(model.K)  # (9) ȳ_k (w x̄_k + b) ≥ 1 − ξ_k
        def margin(m, k):
            score = sum(xbar[k, j] * m.w[j] for j in m.J) + m.b
            return ybar[k] * score >= 1 - m.xi[k]

        return model

    def extract(self, model: pyo.ConcreteModel, agg: SVMAggregate) -> SVMSolution:
        w = np.array([pyo.value(model.w[j]) for j in model.J], dtype=np.float64)
        duals = [model.dual.get(model.margin[k]) for k in model.K]
        alpha = None
        if all(d is not None for d in duals):
            # α_k ≥ 0 is the multiplier's magnitude: Pyomo's solver interfaces disagree on the
            # sign of a ≥ row's dual (and any α in the box gives a valid bound)
            alpha = feasible_dual(
                np.abs(np.array(duals, dtype=float)), agg.label, self.M * agg.weight
            )
        return SVMSolution(
            w=w,
            b=float(pyo.value(model.b)),
            alpha=alpha,
            cluster_labels=agg.partition.labels,
            partition=agg.partition,
        )

    # ------------------------------------------------------------------ matrix form (dual)
    def matrix_program(self, agg: SVMAggregate, previous: Previous | None = None) -> MatrixProgram:
        """The dual of (9) in the scaled form of :func:`dual_program` (generic solvers)."""
        return dual_program(agg.xbar, agg.label, self.M * agg.weight)

    def solution_from_program(self, result: SolveResult, agg: SVMAggregate) -> SVMSolution:
        return self._dual_solution(agg, self._program_alpha(result, agg))

    def program_bound(self, result: SolveResult, agg: SVMAggregate) -> float | None:
        """D(ᾱ) at the repaired dual point: a lower bound on F^t by weak duality."""
        return _dual_value(agg, self._program_alpha(result, agg))[0]

    def _program_alpha(self, result: SolveResult, agg: SVMAggregate) -> NDArray[np.float64]:
        upper = self.M * agg.weight
        return feasible_dual(result.x[-upper.size :] * upper, agg.label, upper)

    def _dual_solution(self, agg: SVMAggregate, alpha: NDArray[np.float64]) -> SVMSolution:
        """w̄ = Σ ᾱ_k ȳ_k x̄_k and the exact best b̄ of (9) for it."""
        _, w = _dual_value(agg, alpha)
        b = optimal_intercept(agg.xbar @ w, agg.label, self.M * agg.weight)
        return SVMSolution(
            w=w, b=b, alpha=alpha, cluster_labels=agg.partition.labels, partition=agg.partition
        )

    # ------------------------------------------------------------------ special solvers
    def solve_special(
        self,
        solver: str,
        agg: SVMAggregate,
        *,
        time_limit: float | None,
        verbose: bool,
        options: dict[str, Any],
        previous: Previous | None,
    ) -> tuple[SVMSolution | None, SolveResult]:
        """(9) by HiGHS (checked dual forms), libsvm (exact problem, bound D(ᾱ)) or liblinear
        (penalises b: no bound). scikit-learn cannot stop on a time limit."""
        if solver == "highs":
            return self._solve_highs(agg, time_limit, verbose, options)
        if solver == "libsvm":
            return self._solve_libsvm(agg, verbose, options)
        if solver == "liblinear":
            return self._solve_liblinear(agg, verbose, options)
        raise NotImplementedError(f"{type(self).__name__} has no special solver {solver!r}")

    def _solve_highs(self, agg, time_limit, verbose, options):
        upper = self.M * agg.weight

        def certify(alpha):
            solution = self._dual_solution(agg, alpha)
            lower = _dual_value(agg, alpha)[0]
            return lower, _aggregated_value(agg, self.M, solution.w, solution.b)

        Z = agg.xbar * agg.label[:, None]  # rows ȳ_k x̄_k: Q = Z Zᵀ

        def polish(alpha):
            return polish_on_face(
                alpha, agg.label, upper, lambda a: Z @ (a @ Z), lambda f: Z[f] @ Z[f].T
            )

        alpha, result = solve_dual_checked(
            lambda form: dual_program(agg.xbar, agg.label, upper, form),
            upper.size,
            certify,
            agg.label,
            upper,
            polish,
            time_limit=time_limit,
            verbose=verbose,
            options=options,
        )
        return (None if alpha is None else self._dual_solution(agg, alpha)), result

    def _solve_libsvm(
        self, agg, verbose, options, time_limit: float | None = None
    ) -> tuple[SVMSolution | None, SolveResult]:
        """libsvm (SVC) on the weighted centroids; under a time limit (``time_limit`` or the
        run's deadline, whichever is sooner) in a child process killed at the limit, which
        gives status TIME_LIMIT and no solution."""
        from sklearn.svm import SVC

        kwargs = {"tol": 1e-3, **_checked_options(options, _LIBSVM_OPTIONS, "libsvm")}
        fit = SVC(kernel="linear", C=self.M, verbose=verbose, **kwargs)
        start = time.perf_counter()
        try:
            fit = call_with_timeout(
                fit.fit,
                agg.xbar,
                agg.label,
                sample_weight=agg.weight,
                timeout=budget(time_limit),
                what="libsvm",
            )
        except TimeLimitReached as exc:
            return None, _time_limit_result(exc, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        alpha = np.zeros(agg.weight.size)
        alpha[fit.support_] = np.abs(fit.dual_coef_[0])
        alpha = feasible_dual(alpha, agg.label, self.M * agg.weight)
        solution = SVMSolution(
            w=fit.coef_[0].copy(),
            b=float(fit.intercept_[0]),
            alpha=alpha,
            cluster_labels=agg.partition.labels,
        )
        return solution, _library_result(
            fit,
            agg,
            self.M,
            solution,
            _dual_value(agg, alpha)[0],
            seconds,
            refine=_tighter_tol(kwargs["tol"]),
        )

    def _solve_liblinear(
        self, agg, verbose, options, time_limit: float | None = None
    ) -> tuple[SVMSolution | None, SolveResult]:
        """liblinear (LinearSVC, hinge loss) on the weighted centroids. It penalises b, so it
        solves a different problem than (9): the result is marked ``exact=False`` and has no
        bound. Time limit as for libsvm."""
        from sklearn.svm import LinearSVC

        chosen = _checked_options(options, _LIBLINEAR_OPTIONS, "liblinear")
        kwargs = {"tol": 1e-3, "max_iter": 100_000, "random_state": 0, **chosen}  # the paper's
        start = time.perf_counter()
        limit = budget(time_limit)
        while True:
            fit = LinearSVC(loss="hinge", dual=True, C=self.M, verbose=int(verbose), **kwargs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an iteration limit is reported by the status
                try:
                    fit = call_with_timeout(
                        fit.fit,
                        agg.xbar,
                        agg.label,
                        sample_weight=agg.weight,
                        timeout=None if limit is None else limit - (time.perf_counter() - start),
                        what="liblinear",
                    )
                except TimeLimitReached as exc:
                    return None, _time_limit_result(exc, time.perf_counter() - start, exact=False)
            limited = np.max(fit.n_iter_) >= kwargs["max_iter"]
            # Heavy weights |C_k| slow liblinear's coordinate descent down on the small
            # aggregated problems (100,000 iterations can miss on 11 clusters); iterations cost
            # O(K) there, so the default limit grows tenfold, up to _LIBLINEAR_MAX_ITER.
            if not limited or "max_iter" in chosen or kwargs["max_iter"] >= _LIBLINEAR_MAX_ITER:
                break
            kwargs["max_iter"] *= 10
        seconds = time.perf_counter() - start
        solution = SVMSolution(w=fit.coef_[0].copy(), b=float(fit.intercept_[0]))
        return solution, _library_result(fit, agg, self.M, solution, None, seconds, exact=False)

    # ------------------------------------------------------------------ evaluation (10)
    def evaluate(self, data: SVMData, solution: SVMSolution) -> Evaluation:
        """E^t = ½‖w‖² + M Σ_i max{0, 1 − y_i(w x_i + b)} (10), with a bound on its rounding
        error; regime_i = [1 − y_i(w x_i + b) > 0] (Prop. 3)."""
        w, b = solution.w, solution.b
        violation = 1.0 - data.y * (data.X @ w + b)
        hinge, hinge_error = accurate_sum(np.maximum(violation, 0.0))
        norm_sq = float(w @ w)
        # |fl(f_i) − f_i| ≤ γ_{m+2}(Σ_j |x_ij||w_j| + |b| + 1), summed over i
        score_error = (
            (data.m + 3)
            * EPS
            * (float(abs_column_sums(data.X) @ np.abs(w)) + data.n * (abs(b) + 1))
        )
        error = self.M * (hinge_error + score_error) + (data.m + 2) * EPS * norm_sq
        return Evaluation(
            0.5 * norm_sq + self.M * hinge, (violation > 0).astype(np.int64), None, error
        )

    def solution_to_dict(self, data: SVMData, solution: SVMSolution) -> dict[str, Any]:
        return {
            "w": {name: float(v) for name, v in zip(data.feature_names, solution.w, strict=True)},
            "b": float(solution.b),
            "training_accuracy": training_accuracy(data, solution.decision_function(data.X)),
            "labels": data.label_mapping(),
        }

    def solution_from_dict(
        self, data: SVMData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> SVMSolution:
        w = payload["w"]
        missing = [name for name in data.feature_names if name not in w]
        if missing:
            raise DataError(f"The solution has no weight for the column(s) {missing}.")
        return SVMSolution(np.array([float(w[c]) for c in data.feature_names]), float(payload["b"]))

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: SVMData,
        solution: SVMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
    ) -> Bound | None:
        """Weak duality on (6): for 0 ≤ α ≤ M and any (w, b), (7) ≥ Σα_i − ½‖Σα_i y_i x_i‖²
        − b Σα_i y_i. α is the aggregated dual spread over the entries (α̂_i = ᾱ_k/|C_k|, §3.2),
        values within 1e-12 of a bound snapped to it and Σα̂_i y_i = 0 restored on the free
        entries; what remains of ρ = Σα̂_i y_i costs |b*||ρ| with |b*| ≤ 1 + ‖w*‖ max_i‖x_i‖,
        ‖w*‖ ≤ √(2E) (b* lies between the breakpoints y_i − w*·x_i). No duals (liblinear): no
        bound."""
        if dual is not None:
            alpha = dual.expand(data.n, evaluation.regime)
            if alpha.size and (alpha.min() < 0.0 or alpha.max() > self.M):
                raise ValueError(f"the dual point leaves its box [0, {self.M:g}]")
            return self._bound_at(data, alpha, evaluation, upper, "the given dual point")
        if solution.alpha is None or solution.cluster_labels is None:
            return None
        labels = solution.cluster_labels
        candidates = [(solution.alpha, "the aggregated dual")]
        candidates.append(
            (
                self._alpha_from_primal(data, solution),
                "the dual that complementary slackness gives the primal",
            )
        )
        return max(
            (
                self._bound_at(
                    data,
                    entry_duals_in_box(labels, alpha, data.y, self.M),
                    evaluation,
                    upper,
                    f"{what} spread over the entries, on all data",
                )
                for alpha, what in candidates
            ),
            key=lambda b: b.value,
        )

    def _alpha_from_primal(self, data: SVMData, solution: SVMSolution) -> NDArray[np.float64]:
        """ᾱ_k from complementary slackness at (w, b): M|C_k| where the cluster's centroid
        violates the margin, 0 where it is outside, free on the margin; the free ones make
        Σᾱ_k ȳ_k = 0 and Σᾱ_k ȳ_k x̄_k = w hold as nearly as the box allows (least squares,
        the balance row last: it is the one feasibility needs)."""
        labels = solution.cluster_labels
        part = solution.partition or Partition.from_labels(labels)
        sizes = part.sizes.astype(np.float64)
        x_sum = part.sums(data.X)
        ybar = np.zeros(sizes.size)
        ybar[labels] = data.y
        xbar = x_sum / sizes[:, None]
        violation = 1.0 - ybar * (xbar @ solution.w + solution.b)
        tol = 1e-9 * (np.abs(xbar) @ np.abs(solution.w) + abs(solution.b) + 1.0)
        upper = self.M * sizes
        alpha = np.where(violation > 0, upper, 0.0)
        ties = np.abs(violation) <= tol
        alpha[ties] = 0.5 * upper[ties]
        A = np.vstack([ybar, (ybar[:, None] * xbar).T])
        target = np.r_[0.0, solution.w]
        alpha = repair_equalities(A, target, alpha, 0.0, upper, free=ties)
        return repair_equalities(A[:1], target[:1], alpha, 0.0, upper, free=ties)

    def _bound_at(self, data, alpha, evaluation, upper, source) -> Bound:
        """The bound of :meth:`lower_bound` at a per-entry α ∈ [0, M]ⁿ."""
        source = f"dual (6) at {source}"
        ay = alpha * data.y
        total, total_error = accurate_sum(alpha)
        rho, rho_error = accurate_sum(ay)
        w, w_error = accurate_tdot(data.X, ay, abs_bound=self.M * abs_column_sums(data.X))
        norm, norm_up = float(np.linalg.norm(w)), float(np.linalg.norm(np.abs(w) + w_error))
        dual_value = total - 0.5 * norm**2
        b_bound = 1.0 + np.sqrt(2.0 * max(upper, 0.0)) * max_row_norm(data.X)
        allowance = total_error + 0.5 * (norm_up**2 - norm**2) * (1 + 4 * EPS)
        allowance += (abs(rho) + rho_error) * b_bound
        point = DualPoint.compress(alpha, evaluation.regime, (0.0, self.M))
        return Bound(dual_value - allowance, source, point, dual_value, allowance)


def training_accuracy(data: SVMData, decision: NDArray[np.float64]) -> float:
    """Share of entries with sign(f(x_i)) = y_i (f > 0 predicts +1, as scikit-learn)."""
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == data.y))


def _checked_options(options: dict[str, Any], allowed: frozenset[str], solver: str) -> dict:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidParameterError(
            f"The solver_options of '{solver}' must be among {sorted(allowed)}. "
            f"Got {unknown} instead."
        )
    return dict(options)


def _library_result(
    fit, agg, M, solution, bound, seconds, exact: bool = True, refine: dict | None = None
) -> SolveResult:
    """A SolveResult for a scikit-learn fit: objective (9) at its (w, b), our dual bound;
    ``exact=False`` for liblinear, which solves (9) with b penalised (a different problem);
    ``refine``: the options of a more accurate libsvm solve (see :func:`_tighter_tol`)."""
    n_iter = int(np.max(fit.n_iter_))
    stopped = getattr(fit, "fit_status_", 0) != 0 or (
        hasattr(fit, "max_iter") and fit.max_iter > 0 and n_iter >= fit.max_iter
    )
    status = SolveStatus.ITERATION_LIMIT if stopped else SolveStatus.OPTIMAL
    return SolveResult(
        status=status,
        objective=_aggregated_value(agg, M, solution.w, solution.b),
        bound=bound,
        seconds=seconds,
        iterations=n_iter,
        message="optimal" if not stopped else f"iteration limit ({n_iter} iterations)",
        exact=exact,
        refine=refine,
    )


def _tighter_tol(tol: float) -> dict[str, float] | None:
    """libsvm's stopping tolerance (on its KKT gradient) 100 times smaller, down to 1e-12: what
    the driver asks for when the clusters are pure but the proven gap is too wide."""
    return None if tol <= 1e-12 else {"tol": max(tol / 100.0, 1e-12)}


def _time_limit_result(exc: TimeLimitReached, seconds: float, exact: bool = True) -> SolveResult:
    """The SolveResult of a scikit-learn fit stopped at the time limit (no solution)."""
    return SolveResult(
        status=SolveStatus.TIME_LIMIT, seconds=seconds, message=str(exc), exact=exact
    )


# ---------------------------------------------------------------------- CLI hooks
MODEL_CLASS = SVMModel


def add_cli_arguments(parser) -> None:
    """Options of ``aidopt solve svm`` (``--kernel rbf|poly`` routes to the kernel dual (21))."""
    parser.add_argument("--M", type=float, default=0.1, help="penalty M (libsvm's C), 0.1")
    parser.add_argument(
        "--kernel",
        choices=("linear", "rbf", "poly"),
        default="linear",
        help="linear: primal (9); rbf/poly: the aggregated dual (21) of Appendix B",
    )
    parser.add_argument("--gamma", type=float, default=None, help="γ of rbf/poly (1/m)")
    parser.add_argument("--degree", type=int, default=None, help="degree of poly (3)")
    parser.add_argument("--coef0", type=float, default=None, help="offset of poly (1.0)")


def model_from_cli(args) -> AggregatedModel:
    from aidopt.validation import check_kernel_options

    check_kernel_options(args.kernel, gamma=args.gamma, degree=args.degree, coef0=args.coef0)
    if args.kernel == "linear":
        return SVMModel(M=args.M)
    from aidopt.models.svm_kernel import KernelSVMModel

    return KernelSVMModel(
        M=args.M,
        kernel=args.kernel,
        gamma=args.gamma,
        degree=3 if args.degree is None else args.degree,
        coef0=1.0 if args.coef0 is None else args.coef0,
    )
