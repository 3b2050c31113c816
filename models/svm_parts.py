"""What the linear and the kernel SVM share (``models/svm.py``, ``models/svm_kernel.py``): the
data, the per-class initial clusters, the dual program of (9)/(21) and the best intercept for a
fixed w (the spread of the cluster duals over the entries, §3.2, is
:func:`aidopt.core.certificate.cluster_duals`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from aidopt.core.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.core.partition import Partition, nested_labels
from aidopt.data.containers import BinaryData
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.structures import feasible_dual

__all__ = [
    "SVMData",
    "dual_alpha",
    "optimal_intercept",
    "per_class_partition",
    "scaled_dual",
    "stratified_sample",
    "training_accuracy",
]

SVMData = BinaryData  # the data an SVM takes: X (n × m), labels mapped to ±1


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


def scaled_dual(
    features: NDArray[np.float64], y: NDArray[np.float64], upper: NDArray[np.float64]
) -> Problem:
    """The dual of the weighted SVM, max Σα − ½‖Σ α_k y_k φ_k‖² s.t. Σ α_k y_k = 0,
    0 ≤ α ≤ upper, declared with α = upper∘β and w kept as free variables v:

        max Σ_k u_k β_k − ½‖v‖²   s.t.  v = Σ_k β_k u_k y_k φ_k,  Σ_k β_k u_k y_k = 0,
            0 ≤ β ≤ 1   (u = upper; HiGHS takes 2.1× as long on the unscaled α at 20,000 × 20).

    ``features`` holds φ_k as rows (centroids x̄_k, or a factor L with L Lᵀ = K̄)."""
    coef = y * upper
    p = Problem("weighted SVM dual, scaled")
    v = p.variables("v", features.shape[1])
    beta = p.variables("beta", y.size, lower=0.0, upper=1.0)
    p.maximize(upper @ beta - 0.5 * sum_squares(v))
    p.subject_to("expansion", v == (features * coef[:, None]).T @ beta)
    p.subject_to("balance", coef @ beta == 0.0)
    return p


def dual_alpha(
    values: Values, y: NDArray[np.float64], upper: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The exactly feasible ᾱ next to a solved :func:`scaled_dual`'s α = upper∘β."""
    return feasible_dual(values["beta"] * upper, y, upper)


def training_accuracy(data: SVMData, decision: NDArray[np.float64]) -> float:
    """Share of entries with sign(f(x_i)) = y_i (f > 0 predicts +1, as scikit-learn)."""
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == data.y))
