"""Initial clustering for AID: one k-means iteration (the paper's §4 recipe).

Speed matters more than quality here (the paper, §5: early iterations split most clusters
anyway), so the initial clusters are the assignment step of a single Lloyd iteration from k
centres drawn at random among the rows, on standardised features. Empty clusters are dropped,
so the number of clusters returned can be smaller than k.

Also the clustering services the models share: C^0 per class from 1-D scores and the stratified
sample that places it, score bins and their quantile edges (rows in blocks), cluster radii and
halves (S3VM's certificate), and the rows nearest a threshold (LAD's band split).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import dense
from aidopt.core.partition import Partition, label_sums, nested_labels
from aidopt.numerics import compiled

__all__ = [
    "ResidualBins",
    "ScoreBins",
    "cluster_radii",
    "halve",
    "kmeans_lloyd",
    "kmeans_one_pass",
    "n_clusters_for_rate",
    "per_class_partition",
    "quantile_edges",
    "smallest",
    "stratified_sample",
]

_CHUNK_ROWS = 65536


def n_clusters_for_rate(rate: float, n: int, minimum: int = 1) -> int:
    """k = ⌈r·n⌉, kept within [minimum, n]."""
    return int(min(n, max(minimum, math.ceil(rate * n))))


@dataclass(frozen=True, eq=False)
class ResidualBins:
    """C^0 by the residual r = y − x·coef − intercept of a fit on a sample: bins between the
    ``edges``; with a ``band`` (low, high), a row whose residual lies in it is a singleton and
    the rows above it are binned by ``above`` (LAD's band)."""

    coef: NDArray[np.float64]
    intercept: float
    edges: NDArray[np.float64]
    band: tuple[float, float] | None = None
    above: NDArray[np.float64] | None = None

    def labels(self, X: Any, y: NDArray[np.float64], offset: int) -> NDArray[np.int64]:
        """The labels of a block of rows (rows offset, offset + 1, ... of all; any non-negative
        integers: the driver renumbers them): the residual's bin below the band, bins + its bin
        above it, and 2·bins + offset + i for row i inside it."""
        kernels = compiled.kernels_for(X)
        if kernels is not None:  # the same labels in one read of the rows
            band = self.band if self.band is not None else (np.inf, np.inf)
            above = self.above if self.above is not None else np.zeros(0)
            return kernels.residual_bins(
                X, y, self.coef, self.intercept, self.edges, band, above, offset
            )
        residual = y - X @ self.coef - self.intercept
        labels = np.searchsorted(self.edges, residual).astype(np.int64)
        if self.band is None:
            return labels
        assert self.above is not None, "a band rule has the edges above it"
        bins = self.edges.size + 1
        below, over = residual < self.band[0], residual > self.band[1]
        labels[over] = bins + np.searchsorted(self.above, residual[over])
        middle = np.flatnonzero(~below & ~over)
        labels[middle] = 2 * bins + offset + middle
        return labels


def quantile_edges(values: ArrayLike, k: int) -> NDArray[np.float64]:
    """The k − 1 edges that cut ``values`` into k bins of equal shares (none: one bin)."""
    values = np.asarray(values, dtype=np.float64)
    return np.quantile(values, np.arange(1, k) / k) if values.size else np.empty(0)


@dataclass(frozen=True)
class ScoreBins:
    """C^0 without clustering every row at once (rows in blocks): a row's cluster is the bin of
    its score x·direction + offset among the ``edges`` of its group — one group, or two (the
    second group's labels follow the first's) — fitted on a sample."""

    direction: NDArray[np.float64]
    edges: tuple[NDArray[np.float64], ...]
    offset: float = 0.0

    def labels(self, X: Any, group: NDArray[np.bool_] | None = None) -> NDArray[np.int64]:
        """The cluster label of every row of X (``group``: True for the rows of the second
        group; None: one group)."""
        score = np.asarray(X @ self.direction).ravel() + self.offset
        if group is None:
            return np.searchsorted(self.edges[0], score).astype(np.int64)
        first = np.searchsorted(self.edges[0], score)
        second = self.edges[0].size + 1 + np.searchsorted(self.edges[1], score)
        return np.where(group, second, first).astype(np.int64)


def kmeans_one_pass(
    features: ArrayLike, k: int, rng: np.random.Generator, *, standardize: bool = True
) -> NDArray[np.int64]:
    """Labels 0..K-1 (K ≤ k) from one k-means assignment step.

    Centres are k distinct rows drawn uniformly; every row goes to its nearest centre in the
    Euclidean norm (on standardised columns when ``standardize``). 1-D features are assigned by
    binary search on the sorted centres, low dimensions by a k-d tree, others by blocked matrix
    products, so the cost is O(n log k) or O(n·k·d) without materialising an n×k matrix.
    """
    z = _prepared(features, k, standardize)
    n = z.shape[0]
    centres = z[rng.choice(n, size=k, replace=False)]
    labels = _nearest(z, centres)
    _, relabelled = np.unique(labels, return_inverse=True)
    return relabelled.astype(np.int64, copy=False)


def kmeans_lloyd(
    features: ArrayLike,
    k: int,
    rng: np.random.Generator,
    *,
    full: bool = False,
    standardize: bool = True,
    seed_sample: int | None = None,
) -> NDArray[np.int64]:
    """Labels 0..K-1 (K ≤ k) from k-means with k-means++ seeds (scikit-learn's
    ``kmeans_plusplus``): one Lloyd step (assign, update, assign), or ``full`` k-means (Lloyd to
    convergence, the best of 3 seedings by within-cluster scatter). With ``seed_sample`` the
    seeds are drawn from that many random rows (k-means++ costs O(n·k·log k) distances: 3.9 s
    of a 42 s one-class run at 10^5 rows and 500 clusters). The run's deadline is checked
    between steps (:func:`aidopt.common.deadline.check`), so a time limit holds."""
    from sklearn.cluster import kmeans_plusplus

    from aidopt.common.deadline import check

    z = _prepared(features, k, standardize)
    best: tuple[float, NDArray[np.int64]] | None = None
    for _ in range(3 if full else 1):
        check("the initial k-means")
        pool = z
        if seed_sample is not None and seed_sample < z.shape[0]:
            pool = z[np.sort(rng.choice(z.shape[0], size=max(k, seed_sample), replace=False))]
        centres, _ = kmeans_plusplus(pool, k, random_state=int(rng.integers(2**31 - 1)))
        labels = _nearest(z, centres)
        for _ in range(_LLOYD_STEPS if full else 1):
            check("the initial k-means")
            counts = np.bincount(labels, minlength=k)
            sums = label_sums(labels, z, k)
            filled = counts > 0  # an emptied cluster keeps its centre
            centres[filled] = sums[filled] / counts[filled, None]
            new = _nearest(z, centres)
            if np.array_equal(new, labels):
                break
            labels = new
        scatter = float(((z - centres[labels]) ** 2).sum())
        if best is None or scatter < best[0]:
            best = (scatter, labels)
    assert best is not None
    _, relabelled = np.unique(best[1], return_inverse=True)
    return relabelled.astype(np.int64, copy=False)


_LLOYD_STEPS = 300  #: at most this many Lloyd steps for full k-means


def _prepared(features: ArrayLike, k: int, standardize: bool) -> NDArray[np.float64]:
    """The rows as a 2-D float array (standardised columns when asked), k checked."""
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 1:
        z = z[:, None]
    if not 1 <= k <= z.shape[0]:
        raise ValueError(f"k must be in [1, {z.shape[0]}], got {k}")
    if standardize:
        scale = z.std(axis=0)
        scale[scale == 0] = 1.0
        z = (z - z.mean(axis=0)) / scale
    return z


def _nearest(z: NDArray[np.float64], centres: NDArray[np.float64]) -> NDArray[np.int64]:
    d = z.shape[1]
    if d == 1:
        order = np.argsort(centres[:, 0], kind="stable")
        sorted_c = centres[order, 0]
        mids = 0.5 * (sorted_c[1:] + sorted_c[:-1])
        return order[np.searchsorted(mids, z[:, 0])].astype(np.int64)
    if d <= 8:
        from scipy.spatial import cKDTree  # 0.08 s to import: only where it is used

        return cKDTree(centres).query(z, k=1)[1].astype(np.int64)
    c_sq = np.einsum("ij,ij->i", centres, centres)
    out = np.empty(z.shape[0], dtype=np.int64)
    for start in range(0, z.shape[0], _CHUNK_ROWS):
        block = z[start : start + _CHUNK_ROWS]
        # ‖z − c‖² = ‖z‖² − 2 z·c + ‖c‖²; the ‖z‖² term does not change the argmin.
        out[start : start + block.shape[0]] = np.argmin(c_sq - 2.0 * block @ centres.T, axis=1)
    return out


def cluster_radii(
    X: Any, partition: Partition, centres: NDArray[np.float64], clusters: NDArray[np.int64]
) -> NDArray[np.float64]:
    """ρ_k = max_{i∈C_k} ‖x_i − c_k‖ for the given ``clusters`` (centres c: K × m), rounded up
    by a relative 1e-9 so that it bounds the exact radius; 0 below 1e-12 of the centres' scale
    (clusters of identical rows)."""
    wanted = np.zeros(partition.n_clusters, dtype=bool)
    wanted[clusters] = True
    rows = np.flatnonzero(wanted[partition.labels])
    dist = np.zeros(partition.n)
    for start in range(0, rows.size, 4096):
        chunk = rows[start : start + 4096]
        block = dense(X[chunk]) - centres[partition.labels[chunk]]
        dist[chunk] = np.linalg.norm(block, axis=1)
    rho = np.zeros(partition.n_clusters)
    np.maximum.at(rho, partition.labels, dist)
    rho = rho[clusters]
    scale = float(np.abs(centres).max()) if centres.size else 1.0
    return np.where(rho > 1e-12 * max(scale, 1.0), rho * (1 + 1e-9), 0.0)


def halve(
    X: Any,
    partition: Partition,
    clusters: Any,
    normal: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """0/1 per row that halves each of ``clusters``: by the side of ``normal`` through the
    cluster's mean, or along its principal axis when there is no normal or it does not
    separate the cluster's rows (0 on the rows of other clusters)."""
    split = np.zeros(partition.n, dtype=np.int64)
    for k in clusters:
        rows = partition.members(int(k))
        x = dense(X[rows])
        centred = x - x.mean(axis=0)
        side = None
        if normal is not None:
            proj = centred @ normal
            side = proj > 1e-12 * max(1.0, float(np.abs(proj).max()))
        if side is None or side.all() or not side.any():
            axis = np.linalg.svd(centred, full_matrices=False)[2][0]
            side = centred @ axis > 0
        split[rows] = side
    return split


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


def smallest(values: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """The indices of the entries ≤ the k-th smallest value (0-based; ties included):
    ``np.flatnonzero(values <= np.partition(values, k)[k])``. For a small k of many values the
    partial sort runs on the entries below a threshold read off a strided sample, when at least
    k + 1 lie below it (then the k-th smallest is among them: the same answer)."""
    n = values.size
    if n >= 1 << 14 and k < n // 8:
        sample = values[::16]
        q = min(sample.size - 1, 2 * (k + 1) * sample.size // n + 16)  # ~2× the expected share
        below = np.flatnonzero(values <= np.partition(sample, q)[q])
        if below.size > k:
            kept = values[below]
            return below[kept <= np.partition(kept, k)[k]]
    return np.flatnonzero(values <= np.partition(values, k)[k])
