"""Kernel aggregates: the clusters' centroids in feature space, φ̄_k = Σ_{C_k} ω_i φ(x_i)/W_k, never
formed — only their Gram K̄_kq = T_kq/(W_k W_q), T_kq = Σ_{i∈C_k} Σ_{j∈C_q} ω_i ω_j K(x_i, x_j),
summed block-wise (never the N × N matrix) and refreshed after a split for the split clusters
only. What the kernel SVM, the kernel one-class models and kernel PU share.

Two ways to keep the sums for the next aggregation: T alone (:func:`refreshed_gram_sums`, memory
O(K²): the kernel SVM, and any model when n·K is large), or also the kernel sums of every row
P_qi = Σ_{j∈C_q} ω_j K(x_j, x_i) (:func:`cluster_kernel_sums`, O(nK) memory while n·K ≤
:data:`SUMS_MAX_ENTRIES`), which also give the scores on every row, P (c/W), with no kernel
evaluation (the one-class models, PU). :func:`summed_kernels` picks between them.

Costs. T is built block by block from kernel rows K(x_i, ·) and never holds the n × n matrix:
memory is T itself (8K² bytes), one block of at most 2^21 kernel entries (16 MiB,
:func:`aidopt.numerics.kernels.kernel_times`) and at most 2^22 of their cluster sums. With P
(n × K, while n·K ≤ 2^28, i.e. 2 GiB), T = SP with S the cluster indicator, and the scores on
every row are P (c/W) — O(nK) per iteration instead of O(n·n_SV·d) kernel evaluations. After a
split only the changed clusters' sums are computed, O(n·|R|·d) for the |R| rows of split
clusters (the first iteration is O(n²d): the exact centroid Gram needs every pair once; K(X, X)
is symmetric, so half of it), with their rows and columns of T. P is held as a buffer with a
row per cluster: a cluster a split left as it was keeps its row in place, the changed ones take
the rows their parents freed (copying P's columns took 40 % of a run at 2·10^4 rows, copying
its rows 12 % at 10^5).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from aidopt.core.partition import Partition
from aidopt.numerics.kernel_sums import grouped_kernel_sums, square_grouped_kernel_sums
from aidopt.numerics.kernels import Kernel, kernel_times, kernel_times_sparse

__all__ = [
    "SUMS_MAX_ENTRIES",
    "KernelSums",
    "LazyGram",
    "SummedKernels",
    "centroid_gram_sums",
    "cluster_kernel_sums",
    "refreshed_gram_sums",
    "summed_kernels",
]

_EIG_RTOL = 1e-12  # eigenvalues of K̄ below this × λ_max are dropped from the factor L
_SQUARE_SUMS_MAX = 1 << 25  # every cluster's sums S K (K × n) held at once up to this size
SUMS_MAX_ENTRIES = 1 << 28  # the n × K kernel sums are kept up to this size (2 GiB)


def centroid_gram_sums(
    kernel: Kernel,
    X: NDArray[np.float64],
    partition: Partition,
    rows: NDArray | None = None,
    weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """T_kq = Σ_{i∈C_k} Σ_{j∈C_q} w_i w_j K(x_i, x_j) (K̄ = T / (W_k W_q); w = 1, W_k = |C_k|
    without row weights), block-wise.

    With ``rows`` (entry indices) only the contributions of those entries are summed, i.e. the
    rows of T for the clusters that contain them (all of whose entries must be in ``rows``).
    Without, T = S (S K)ᵀ from the blocks on and above the diagonal of the symmetric K(X, X)
    while S K (K × n) fits :data:`_SQUARE_SUMS_MAX` entries.
    """
    n, K = X.shape[0], partition.n_clusters
    w = np.ones(n) if weight is None else weight
    S = partition.indicator(w)  # weighted indicator
    if rows is None and n * K <= _SQUARE_SUMS_MAX:  # T = S (S K)ᵀ from half of K(X, X)
        return np.asarray(S @ square_grouped_kernel_sums(kernel, X, partition.labels, K, w).T)
    idx = np.arange(n) if rows is None else rows
    return grouped_kernel_sums(kernel, X[idx], partition.labels[idx], K, X, w[idx], S.T)


def refreshed_gram_sums(
    kernel: Kernel,
    X: NDArray[np.float64],
    partition: Partition,
    cache: tuple[NDArray, NDArray, NDArray] | None,
    weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """T for ``partition`` (row weights ``weight``); when ``cache`` = (X, labels, T) of its
    parent partition with the same weights, only the rows and columns of the clusters that a
    split changed are recomputed."""
    parent = partition.parent
    if (
        cache is None
        or parent is None
        or cache[0] is not X
        or cache[1].size != X.shape[0]
        or parent.max() >= cache[2].shape[0]
        or not np.array_equal(parent[partition.labels], cache[1])
    ):
        return centroid_gram_sums(kernel, X, partition, weight=weight)
    prev_labels, prev_T = cache[1], cache[2]
    prev_sizes = np.bincount(prev_labels, minlength=prev_T.shape[0])
    remade = partition.sizes != prev_sizes[parent]
    T = prev_T[np.ix_(parent, parent)]
    rows = np.flatnonzero(remade[partition.labels])
    fresh = centroid_gram_sums(kernel, X, partition, rows, weight)
    T[remade, :] = fresh[remade, :]
    T[:, remade] = fresh[remade, :].T
    return T


class LazyGram:
    """K̄ of a kernel aggregate (the kernel SVM's, the one-class models'): the centroid Gram
    sums ``gram_sum`` over the weights W_k; for the full problem (every cluster one entry,
    ``gram_sum`` None) K(X, X), computed only for a route that asks for it — libsvm
    evaluates the kernel itself, and K̄ v needs only the kernel columns of v's support."""

    gram_sum: NDArray[np.float64] | None
    weight: NDArray[np.float64]
    X: NDArray[np.float64]
    kernel: Kernel | None

    @property
    def singletons(self) -> bool:
        return self.gram_sum is None

    @functools.cached_property
    def gram(self) -> NDArray[np.float64]:
        """K̄_kq = T_kq / (W_k W_q) (K(X, X) for singletons)."""
        if self.gram_sum is None:
            assert self.kernel is not None, "a singleton aggregate carries its kernel"
            return self.kernel(self.X, self.X)
        return self.gram_sum / np.outer(self.weight, self.weight)

    @functools.cached_property
    def factor(self) -> NDArray[np.float64]:
        """L with L Lᵀ = K̄ (eigenvalues below 1e-12·λ_max dropped)."""
        lam, V = np.linalg.eigh(0.5 * (self.gram + self.gram.T))
        keep = lam > _EIG_RTOL * max(lam[-1], 0.0)
        return V[:, keep] * np.sqrt(lam[keep])

    def gram_times(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        """K̄ v (for singletons in O(K · nnz(v)) kernel values, without forming K̄)."""
        if self.gram_sum is not None or self.kernel is None:
            return self.gram @ v
        return kernel_times_sparse(self.kernel, self.X, self.X, v)

    def quadratic_form(self, v: NDArray[np.float64]) -> float:
        """vᵀK̄v (for singletons over v's support only: O(nnz(v)²) kernel values)."""
        if self.gram_sum is not None or self.kernel is None:
            return float(v @ (self.gram @ v))
        support = np.flatnonzero(v)
        X = self.X[support]
        return float(v[support] @ kernel_times(self.kernel, X, X, v[support]))


class KernelSums(NamedTuple):
    """What an aggregation leaves for the next: the data and labels it summed, the kernel sums
    (``buffer``: a row per cluster at ``rows``; None when not kept) and T (K × K)."""

    X: NDArray[np.float64]
    labels: NDArray[np.int64]
    buffer: NDArray[np.float64] | None
    rows: NDArray[np.intp] | None
    gram_sum: NDArray[np.float64]


def cluster_kernel_sums(
    kernel: Kernel,
    X: NDArray[np.float64],
    partition: Partition,
    cache: KernelSums | None,
    weight: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]]:
    """(buffer, rows, T): row rows_q of the buffer is P_{·q} = Σ_{j∈C_q} ω_j K(x_j, x_i) over
    all n rows i (ω = 1 without ``weight``), and T = S_ω P are the centroid Gram sums. With
    ``cache`` from the parent partition (same weights), a cluster a split left as it was keeps
    its parent's row, in place, and its block of T; only the changed clusters' sums are
    computed (by symmetry, from the kernel rows of their entries), into the rows their parents
    freed (the buffer grows by half, within :data:`SUMS_MAX_ENTRIES`, when they do not
    suffice; unused rows hold finite sums or zeros). The parent's aggregate then no longer owns
    its rows."""
    n, K = X.shape[0], partition.n_clusters
    parent, labels = partition.parent, partition.labels
    T = np.empty((K, K))
    remade = np.ones(K, dtype=bool)
    if (
        cache is not None
        and cache.buffer is not None
        and cache.rows is not None
        and parent is not None
        and cache.X is X
        and cache.labels.size == n
        and parent.max() < cache.rows.size
        and np.array_equal(parent[labels], cache.labels)
    ):
        prev_sizes = np.bincount(cache.labels, minlength=cache.rows.size)
        remade = partition.sizes != prev_sizes[parent]
        kept = np.flatnonzero(~remade)
        rows = np.empty(K, dtype=np.intp)
        rows[kept] = cache.rows[parent[kept]]
        T[np.ix_(kept, kept)] = cache.gram_sum[np.ix_(parent[kept], parent[kept])]
        buffer = cache.buffer
        free = np.setdiff1d(np.arange(buffer.shape[0]), rows[kept])
        if K > buffer.shape[0]:  # half again, within the cap on the kept sums
            top = max(K, min(buffer.shape[0] * 3 // 2, SUMS_MAX_ENTRIES // n))
            grown = np.zeros((top, n))
            grown[: buffer.shape[0]] = buffer
            free = np.r_[free, np.arange(buffer.shape[0], grown.shape[0])]
            buffer = grown
        rows[remade] = free[: K - kept.size]
    else:
        buffer, rows = None, np.arange(K)
    cols = np.flatnonzero(remade)
    if cols.size == K:  # every cluster: K(X, X) is symmetric, half its entries serve
        fresh = square_grouped_kernel_sums(kernel, X, labels, K, weight)
    else:
        position = np.full(K, -1)
        position[cols] = np.arange(cols.size)
        members = np.flatnonzero(remade[labels])
        w = None if weight is None else weight[members]
        fresh = grouped_kernel_sums(kernel, X[members], position[labels[members]], cols.size, X, w)
    if buffer is None:
        buffer = fresh  # C^0 (or no usable parent): every row computed, in cluster order
    else:
        buffer[rows[cols]] = fresh
    S = partition.indicator(weight)
    fresh_gram = np.asarray(S @ fresh.T)  # T[:, cols]
    T[:, cols] = fresh_gram
    T[cols, :] = fresh_gram.T
    return buffer, rows, T


@dataclass(frozen=True, eq=False)
class SummedKernels:
    """The kernel sums of one aggregation: T symmetrised, P with the row of each cluster when
    kept (else None), and what the next aggregation reuses (``kept``)."""

    gram_sum: NDArray[np.float64]
    sums: NDArray[np.float64] | None
    sum_rows: NDArray[np.intp] | None
    kept: KernelSums

    def scores(self, coef: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """Σ_k coef_k P_k· on every row (None when P is not kept); valid until the next
        aggregation reuses P's rows."""
        if self.sums is None or self.sum_rows is None:
            return None
        c = np.zeros(self.sums.shape[0])  # zero on the rows no cluster owns
        c[self.sum_rows] = coef
        return c @ self.sums


def summed_kernels(
    kernel: Kernel,
    X: NDArray[np.float64],
    partition: Partition,
    previous: KernelSums | None,
    weight: NDArray[np.float64] | None = None,
) -> SummedKernels:
    """T (and P while n·K ≤ :data:`SUMS_MAX_ENTRIES`) of ``partition``, the clusters a split of
    ``previous``'s (same rows, same weights) left as they were taken from it."""
    P, rows = None, None
    if X.shape[0] * partition.n_clusters <= SUMS_MAX_ENTRIES:
        P, rows, T = cluster_kernel_sums(kernel, X, partition, previous, weight)
    else:
        square = None if previous is None else (previous.X, previous.labels, previous.gram_sum)
        T = refreshed_gram_sums(kernel, X, partition, square, weight)
    kept = KernelSums(X, partition.labels, P, rows, T)
    return SummedKernels(0.5 * (T + T.T), P, rows, kept)
