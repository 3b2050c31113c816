"""Clustering metrics of the paper's Tables 2–6, with the digest's corrections (§4.5):

* purity (standard): Σ_i max_j N_ij / N, N_ij = rows of cluster i in class j (≥ the largest
  class share), and the paper's literal class-normalised variant Σ_i (N_i/N) max_j N_ij/N_j
  (N_j = class size), which can fall below 1/#classes and explains its low values;
* Rand index, unadjusted (scikit-learn's ``rand_score``); NMI with the arithmetic mean
  (``normalized_mutual_info_score``);
* Davies–Bouldin, standard definition and direction — SMALLER is better (``davies_bouldin_score``;
  the paper's Table 6 says "larger is better", an erratum); undefined for one cluster (NaN);
* compactness (1/N) Σ_k N_k · mean_{x≠x' ∈ C_k} ‖x − x'‖ over unordered pairs (0 for a singleton).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["clustering_scores", "compactness", "purity", "purity_class_normalised"]

_PAIR_BLOCK = 2048  # rows per block of the pairwise distances in compactness


def _contingency(labels: ArrayLike, classes: ArrayLike) -> NDArray[np.int64]:
    from sklearn.metrics.cluster import contingency_matrix

    return np.asarray(contingency_matrix(classes, labels)).T  # clusters × classes


def purity(labels: ArrayLike, classes: ArrayLike) -> float:
    """Σ_i max_j N_ij / N."""
    table = _contingency(labels, classes)
    return float(table.max(axis=1).sum() / table.sum())


def purity_class_normalised(labels: ArrayLike, classes: ArrayLike) -> float:
    """The paper's literal formula: Σ_i (N_i/N) max_j N_ij / N_j."""
    table = _contingency(labels, classes).astype(np.float64)
    share = table / table.sum(axis=0, keepdims=True)
    return float((table.sum(axis=1) / table.sum() * share.max(axis=1)).sum())


def compactness(X: ArrayLike, labels: ArrayLike) -> float:
    """(1/N) Σ_k N_k · (Σ_{pairs in C_k} ‖x − x'‖) / (N_k(N_k − 1)/2), in blocks."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    total = 0.0
    for k in np.unique(labels):
        Y = X[labels == k]
        size = Y.shape[0]
        if size < 2:
            continue
        sq = np.einsum("ij,ij->i", Y, Y)
        pair_sum = 0.0
        for start in range(0, size, _PAIR_BLOCK):
            block = Y[start : start + _PAIR_BLOCK]
            d2 = sq[start : start + _PAIR_BLOCK, None] + sq[None, :] - 2.0 * block @ Y.T
            pair_sum += float(np.sqrt(np.maximum(d2, 0.0)).sum())
        pair_sum /= 2.0  # each unordered pair was counted twice (the diagonal is 0)
        total += size * pair_sum / (size * (size - 1) / 2.0)
    return total / X.shape[0]


def clustering_scores(X: ArrayLike, labels: ArrayLike, classes: ArrayLike | None) -> dict:
    """Every metric of the tables (the class-based ones only when ``classes`` is given)."""
    from sklearn.metrics import (
        davies_bouldin_score,
        normalized_mutual_info_score,
        rand_score,
    )

    X, labels = np.asarray(X, dtype=np.float64), np.asarray(labels)
    n_clusters = int(np.unique(labels).size)
    scores = {
        "n_clusters": n_clusters,
        "compactness": compactness(X, labels),
        "davies_bouldin": (
            float(davies_bouldin_score(X, labels)) if 1 < n_clusters < X.shape[0] else float("nan")
        ),
    }
    if classes is not None:
        scores |= {
            "purity": purity(labels, classes),
            "purity_class_normalised": purity_class_normalised(labels, classes),
            "rand": float(rand_score(classes, labels)),
            "nmi": float(normalized_mutual_info_score(classes, labels)),
        }
    return scores
