"""Cluster state of AID: one integer label per entry.

A :class:`Partition` holds the clusters C^t = {C_1, ..., C_K} of iteration t as a label vector
(``labels[i] = k`` iff entry i ∈ C_k) and the sizes |C_k|. Everything the driver does per
iteration is a vectorised pass over the labels, O(n·m) with no Python loop over entries:

* cluster sums Σ_{i∈C_k} a_i by a sparse indicator product (or ``bincount`` for a vector), kept
  between iterations so that only the rows of split clusters are summed again;
* purity and declustering by *regime*: given an integer regime per entry (the linear piece of the
  model's loss the entry sits on), a cluster is pure when all its entries share one regime, and
  splitting C_k means replacing it by its non-empty parts {i ∈ C_k : regime_i = g}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import dense, issparse
from aidopt.common.lazy import sparse as sp
from aidopt.numerics import compiled

__all__ = [
    "ROW_COUNT",
    "ClusterCounts",
    "Partition",
    "label_indicator",
    "label_sums",
    "nested_labels",
    "split_numbering",
]


class ClusterCounts:
    """K and the aggregation rate of clusters with sizes |C_k| over n entries."""

    sizes: NDArray[np.int64]

    @property
    def n(self) -> int:
        """Number of entries."""
        raise NotImplementedError

    @property
    def n_clusters(self) -> int:
        """K = |K^t|."""
        return int(self.sizes.size)

    @property
    def rate(self) -> float:
        """Aggregation rate r^t = |K^t| / n."""
        return self.n_clusters / self.n


@dataclass(eq=False)
class Partition(ClusterCounts):
    """Clusters of iteration t (treat ``labels``, ``sizes``, ``parent`` and ``cluster_regime``
    as read-only; the private fields are caches: the sums computed so far, and the previous
    partition whose sums a split partition updates).

    Attributes
    ----------
    labels : (n,) int64 array with values 0..K-1, every value used.
    sizes : (K,) int64 array, |C_k| > 0.
    parent : (K,) int64 array or None; for a partition made by :meth:`split`, the index of each
        cluster's cluster in the previous partition.
    cluster_regime : (K,) int64 array or None; for a partition made by :meth:`split`, the regime
        shared by every entry of the cluster when it was made.
    """

    labels: NDArray[np.int64]
    sizes: NDArray[np.int64]
    parent: NDArray[np.int64] | None = None
    cluster_regime: NDArray[np.int64] | None = None
    _previous: Partition | None = field(default=None, repr=False)
    _split_rows: NDArray[np.int64] | None = field(default=None, repr=False)
    _sums: dict[int, tuple[object, object]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_labels(cls, labels: ArrayLike) -> Partition:
        """Partition from arbitrary integer labels (renumbered to 0..K-1 in sorted order)."""
        raw = np.asarray(labels)
        if raw.ndim != 1 or raw.size == 0:
            raise ValueError(f"labels must be a non-empty 1-D array, got shape {raw.shape}")
        if not np.issubdtype(raw.dtype, np.integer):
            raise ValueError(f"labels must be integers, got dtype {raw.dtype}")
        low, high = int(raw.min()), int(raw.max())
        if low >= 0 and high < 2 * raw.size + 1024:  # a table of the label values: no sort
            counts = np.bincount(raw.astype(np.int64, copy=False))
            present = np.flatnonzero(counts)
            rank = np.empty(counts.size, dtype=np.int64)
            rank[present] = np.arange(present.size)
            return cls(labels=rank[raw], sizes=counts[present])
        uniq, inverse = np.unique(raw, return_inverse=True)
        inverse = inverse.astype(np.int64, copy=False)
        return cls(labels=inverse, sizes=np.bincount(inverse, minlength=uniq.size))

    @classmethod
    def singletons(cls, n: int) -> Partition:
        """Every entry its own cluster: the aggregated model is then the original model."""
        return cls(labels=np.arange(n, dtype=np.int64), sizes=np.ones(n, dtype=np.int64))

    @property
    def is_singletons(self) -> bool:
        """Every entry its own cluster, cluster k = entry k (:meth:`singletons`)."""
        return self.n_clusters == self.labels.size and bool(
            np.array_equal(self.labels, np.arange(self.labels.size))
        )

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of entries."""
        return int(self.labels.size)

    def indicator(self, weight: NDArray[np.float64] | None = None) -> sp.csr_matrix:
        """The K×n matrix S with S[k, i] = 1 (or ω_i, given weights) iff i ∈ C_k, else 0."""
        return label_indicator(self.labels, self.n_clusters, weight)

    def members(self, k: int) -> NDArray[np.int64]:
        """Indices of the entries of C_k (O(n); for inspection and tests, not for hot loops)."""
        return np.flatnonzero(self.labels == k)

    # ------------------------------------------------------------------ aggregation
    def sums(self, a: ArrayLike | sp.spmatrix) -> NDArray[np.float64] | sp.csr_matrix:
        """Cluster sums Σ_{i∈C_k} a_i of a vector (K,) or a matrix (K, m).

        Results are cached per array object; a partition made by :meth:`split` reuses its
        predecessor's sums and only re-sums the rows of the clusters that were split.
        Sparse matrices give sparse sums.
        """
        key = id(a)
        cached = self._sums.get(key)
        if cached is not None and cached[0] is a:
            return cached[1]
        previous = self._previous
        prev_cached = previous._sums.get(key) if previous is not None else None
        if prev_cached is not None and prev_cached[0] is a:
            result = self._update_sums(a, prev_cached[1])
        else:
            result = self._full_sums(a)
        self._sums[key] = (a, result)
        return result

    def dense_sums(self, a: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        """:meth:`sums` as a dense array (a sparse matrix's cluster sums, K × m, densified)."""
        s = self.sums(a)
        return dense(s)

    def column_sums(self, columns: list[Any]) -> NDArray[np.float64]:
        """The cluster sums of per-row columns side by side (K × q, as the engine's blocks give
        them): :data:`ROW_COUNT` gives |C_k|, a vector its sums, a matrix (dense or sparse) its
        column sums — each re-summed for split clusters only (:meth:`sums`)."""
        out = []
        for column in columns:
            if column is ROW_COUNT:
                out.append(self.sizes.astype(np.float64)[:, None])
                continue
            s = self.dense_sums(column)
            out.append(s[:, None] if s.ndim == 1 else s)
        return np.hstack(out) if out else np.zeros((self.n_clusters, 0))

    def weights(self, weight: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """W_k = Σ_{i∈C_k} w_i, or |C_k| when every entry weighs 1 (``weight`` None)."""
        return self.sizes.astype(np.float64) if weight is None else self.sums(weight)

    def means(self, a: ArrayLike | sp.spmatrix) -> NDArray[np.float64] | sp.csr_matrix:
        """Centroids x̄_k = Σ_{i∈C_k} a_i / |C_k|."""
        s = self.sums(a)
        if issparse(s):
            return sp.csr_matrix(sp.diags(1.0 / self.sizes) @ s)
        if s.ndim == 1:
            return s / self.sizes
        return s / self.sizes[:, None]

    def _full_sums(self, a):
        if issparse(a):
            return sp.csr_matrix(self.indicator() @ a)
        arr = np.asarray(a, dtype=np.float64)
        if arr.ndim == 1:
            return np.bincount(self.labels, weights=arr, minlength=self.n_clusters)
        return label_sums(self.labels, arr, self.n_clusters)

    def _update_sums(self, a, previous_sums):
        """Sums of the new clusters from the previous ones: copy the unsplit, re-sum the split."""
        assert self.parent is not None and self._split_rows is not None
        rows = self._split_rows
        remade = self.sizes != self._previous.sizes[self.parent]
        if issparse(previous_sums):
            kept = sp.diags((~remade).astype(np.float64)) @ previous_sums[self.parent]
            part = label_indicator(self.labels[rows], self.n_clusters)
            return sp.csr_matrix(kept + part @ sp.csr_matrix(a)[rows])
        out = previous_sums[self.parent]  # fancy indexing copies
        out[remade] = 0.0
        arr = np.asarray(a, dtype=np.float64)
        if arr.ndim == 1:
            out += np.bincount(self.labels[rows], weights=arr[rows], minlength=self.n_clusters)
        else:
            out += label_sums(self.labels[rows], arr[rows], self.n_clusters)
        return out

    # ------------------------------------------------------------------ declustering
    def impure(self, regime: ArrayLike) -> NDArray[np.bool_]:
        """(K,) mask of the clusters whose entries do not all share one regime."""
        return self._regime_table(regime)[0].sum(axis=1) > 1

    def split(self, regime: ArrayLike, finer: ArrayLike | None = None) -> tuple[Partition, int]:
        """Split every impure cluster into its regime parts; return (new partition, #impure).

        ``regime`` is a non-negative integer per entry (the model's linear piece). A cluster whose
        entries all share a regime is kept whole; an impure C_k becomes the non-empty sets
        {i ∈ C_k : regime_i = g}, or, when ``finer`` is given (a non-negative integer per entry
        that refines ``regime`` on the impure clusters: entries of one impure cluster with equal
        ``finer`` have equal ``regime``), the non-empty sets {i ∈ C_k : finer_i = g}. Purity is
        always judged by ``regime``; ``finer`` may take many values (e.g. one per entry to make
        singletons). Parts are never empty. When no cluster is impure, the same partition is
        returned with 0.
        """
        present, key = self._regime_table(regime)
        n_parts = present.sum(axis=1)
        impure = n_parts > 1
        n_impure = int(impure.sum())
        if n_impure == 0:
            return self, 0
        split_rows = np.flatnonzero(impure[self.labels])
        if finer is not None:
            return self._split_finer(impure, split_rows, regime, finer), n_impure
        flat_present = present.ravel()
        new_index = np.cumsum(flat_present, dtype=np.int64) - 1
        kept = np.flatnonzero(flat_present)
        n_reg = present.shape[1]
        counts = np.bincount(key, minlength=present.size)
        child = Partition(
            labels=new_index[key],
            sizes=counts[kept].astype(np.int64),
            parent=(kept // n_reg).astype(np.int64),
            cluster_regime=(kept % n_reg).astype(np.int64),
            _previous=self,
            _split_rows=split_rows,
        )
        return child, n_impure

    def _split_finer(self, impure, split_rows, regime, finer) -> Partition:
        """Children: each pure cluster whole; each impure one by its distinct ``finer`` values.

        Children are numbered by (parent, finer value); O(n + s log s) for s split rows.
        """
        fine = self._check_regime(finer, "finer")[split_rows]
        reg = self._check_regime(regime, "regime")
        span = int(fine.max()) + 1
        pairs, inverse = np.unique(self.labels[split_rows] * span + fine, return_inverse=True)
        whole = np.flatnonzero(~impure)
        order, rank, child_parent = split_numbering(whole, pairs, span)
        slot = np.full(self.n_clusters, -1, dtype=np.int64)
        slot[whole] = np.arange(whole.size)
        labels = rank[slot[self.labels]]  # rows of pure clusters (others overwritten below)
        labels[split_rows] = rank[whole.size + inverse.reshape(-1)]
        cluster_regime = np.empty(order.size, dtype=np.int64)
        cluster_regime[labels] = reg
        if not np.array_equal(cluster_regime[labels[split_rows]], reg[split_rows]):
            raise ValueError(
                "finer does not refine regime: a part of an impure cluster mixes regimes"
            )
        return Partition(
            labels=labels,
            sizes=np.bincount(labels, minlength=order.size).astype(np.int64),
            parent=child_parent[order].astype(np.int64),
            cluster_regime=cluster_regime,
            _previous=self,
            _split_rows=split_rows,
        )

    def _regime_table(self, regime: ArrayLike):
        return self._table(self._check_regime(regime, "regime"))

    def _check_regime(self, regime: ArrayLike, name: str) -> NDArray[np.int64]:
        reg = np.asarray(regime)
        if reg.shape != self.labels.shape:
            raise ValueError(f"{name} has shape {reg.shape}, expected {self.labels.shape}")
        reg = reg.astype(np.int64, copy=False)
        if reg.size and reg.min() < 0:
            raise ValueError(f"{name} must hold non-negative integers")
        return reg

    def _table(self, reg: NDArray[np.int64]):
        """(K × G) table of the regimes present per cluster, and the key label·G + regime."""
        n_reg = int(reg.max()) + 1 if reg.size else 1
        key = self.labels * n_reg + reg
        present = np.bincount(key, minlength=self.n_clusters * n_reg).reshape(-1, n_reg) > 0
        return present, key

    def forget_history(self) -> None:
        """Drop the reference to the previous partition (frees its cached sums)."""
        self._previous = None


def split_numbering(
    whole: NDArray[np.int64], keys: NDArray[np.int64], span: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """How a split numbers its children: the pure clusters ``whole`` kept as they are and the
    parts ``keys`` = parent·span + finer value of the impure ones, all ordered by (parent,
    finer value), a kept cluster before any part. Returns (order, rank, parent): the children
    in order (indices into whole ++ keys), the rank of each, and the parent of each (in the
    order of whole ++ keys)."""
    parent = np.concatenate([whole, keys // span])
    fine = np.concatenate([np.full(whole.size, -1), keys % span])
    order = np.lexsort((fine, parent))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return order, rank, parent


def nested_labels(groups: ArrayLike, labels: ArrayLike) -> NDArray[np.int64]:
    """Combine a group id and a within-group label into one label (clusters never mix groups).

    Used when a model clusters each class separately (SVM, S3VM): the pair (group, label) is
    mapped to one integer, to be passed to :meth:`Partition.from_labels`.
    """
    g = np.asarray(groups, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    if g.shape != lab.shape:
        raise ValueError(f"groups has shape {g.shape} but labels has shape {lab.shape}")
    span = int(lab.max()) + 1 if lab.size else 1
    return (g - g.min()) * span + lab


_BINCOUNT_ENTRIES = 2**16  # below this many entries, sum a matrix by labels column by column
#: up to this many columns too, whatever the rows: one bincount per column is within 2× of the
#: sparse indicator's product (measured at 10^5-10^6 rows, m ≤ 20) and needs no SciPy, whose
#: first import costs 0.25 s — the whole of a small LAD run's fixed cost
_BINCOUNT_COLUMNS = 16


def label_indicator(
    labels: NDArray[np.int64], k: int, weight: NDArray[np.float64] | None = None
) -> sp.csr_matrix:
    """The k × n matrix S with S[c, i] = 1 (or ω_i, given weights) iff labels_i = c, else 0."""
    n = labels.size
    values = np.ones(n) if weight is None else weight
    return sp.csr_matrix((values, (labels, np.arange(n))), shape=(k, n))


class _RowCount:
    """See :data:`ROW_COUNT`."""

    def __repr__(self) -> str:
        return "ROW_COUNT"


#: in a model's ``cluster_columns`` (rows in blocks): a column of ones, whose cluster sums are
#: the clusters' numbers of rows — counted exactly, no vector of ones made or read
ROW_COUNT: Any = _RowCount()


def label_sums(labels: NDArray[np.int64], a: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """(k, m) sums Σ_{i: labels_i = c} a_i: the compiled loop of :mod:`aidopt.numerics.compiled` for
    a large dense ``a`` (one read of ``a`` on every core), one ``bincount`` per column for a small
    or narrow one (no SciPy import), else the sparse k × n indicator times ``a`` (one pass over
    the rows instead of m)."""
    kernels = None if a.size <= _BINCOUNT_ENTRIES else compiled.kernels_for(a)
    if kernels is not None:
        return kernels.label_sums(labels, a, k)
    if a.size <= _BINCOUNT_ENTRIES or a.shape[1] <= _BINCOUNT_COLUMNS:
        columns = [np.bincount(labels, weights=column, minlength=k) for column in a.T]
        return np.stack(columns, axis=1) if columns else np.zeros((k, 0))
    return np.asarray(label_indicator(labels, k) @ a)
