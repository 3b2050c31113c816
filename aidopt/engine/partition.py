"""Clusters whose labels live beside the blocks: :class:`BlockPartition`.

The same clusters and the same declustering as :class:`aidopt.core.partition.Partition` — a cluster
is pure when its entries share one regime; an impure C_k becomes its non-empty parts
{i ∈ C_k : finer_i = g} (``finer`` = ``regime`` when the model gives none), numbered as
``Partition.split`` numbers them: pure clusters first, in order, then the parts by (parent,
finer value) — but the label vector is never gathered: each block keeps its labels in a state
slot, and only per-cluster tables (K rows) cross between blocks and the driver:

1. a pass over the states gives, per block, the (cluster, regime) pairs present → impure
   clusters, and the regime of each pure one;
2. a second gives the (cluster, finer) pairs of the impure clusters' rows, with their counts
   and regimes → the children, their sizes and regimes;
3. a third relabels every block from those tables (searchsorted on the sorted children).

None reads the data. Cluster sums are one data pass (:meth:`BlockPartition.cluster_sums`); on
blocks in memory a partition made by a split takes its kept clusters' sums from its parent's and
re-sums only the rows of the split clusters, as :meth:`aidopt.core.partition.Partition.sums` does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import issparse
from aidopt.core.partition import ROW_COUNT, ClusterCounts, label_sums, split_numbering
from aidopt.engine.blocks import Blocks
from aidopt.exceptions import DataError
from aidopt.numerics import compiled

__all__ = ["BlockPartition", "StateRef"]

_SERIAL = itertools.count()
_REGIMES = 1 << 8  #: regimes per cluster in the (cluster, regime) keys of a split
#: labels are renumbered by a table of ranks (sent once to every worker) up to this size
_RANK_TABLE_BYTES = 1 << 26


@dataclass(frozen=True)
class StateRef:
    """Per-row values kept beside the blocks under ``slot`` (what :class:`Evaluation` holds
    for the regimes of a chunked evaluation)."""

    slot: str


def small_ints(values: NDArray) -> NDArray:
    """Non-negative integers in the narrowest of int8, int32, int64 that holds them (the
    states kept beside the rows: 1–4 bytes per row instead of 8)."""
    top = int(values.max(initial=0))
    for kind in (np.int8, np.int32):
        if top <= np.iinfo(kind).max:
            return values.astype(kind, copy=False)
    return values.astype(np.int64, copy=False)


def _fits_table(size: int, labels: NDArray) -> bool:
    """A table of ``size`` entries costs no more than a few passes over the block's rows: use it
    instead of hashing, sorting or searching."""
    return size <= 4 * labels.size + 1024


def _pairs(labels: NDArray, values: NDArray, span: int) -> NDArray:
    """The distinct keys label·span + value, sorted (values in [0, span)): a table of the
    (label, value) pairs when it is not much longer than the block, else ``np.unique``."""
    values_top = int(values.max(initial=0)) + 1
    size = (int(labels.max(initial=-1)) + 1) * values_top
    if not _fits_table(size, labels):
        return np.unique(labels.astype(np.int64) * span + values)
    seen = np.zeros(size, dtype=bool)
    seen[labels.astype(np.int64) * values_top + values] = True
    found = np.flatnonzero(seen)
    return (found // values_top) * span + found % values_top


def _regime_pairs(_block, _offset, labels, regime, finer):
    """(cluster·2⁸ + regime) pairs present, and the largest finer value."""
    if regime.size and (regime.min() < 0 or regime.max() >= _REGIMES):
        raise ValueError(f"regimes must be integers in [0, {_REGIMES}) for rows in blocks")
    top = int(finer.max(initial=0)) if finer is not None else int(regime.max(initial=0))
    return (), (_pairs(labels, regime, _REGIMES), top)


def _child_pairs(_block, _offset, labels, regime, finer, impure, span, use_finer):
    """The (cluster, finer) keys of the rows of impure clusters, their counts and regimes (a
    key whose rows mix regimes is an error: ``finer`` must refine ``regime``)."""
    rows = impure[labels]
    reg = regime[rows]
    full = labels[rows].astype(np.int64) * span + (finer if use_finer else regime)[rows]
    size = int(full.max(initial=-1)) + 1
    if _fits_table(size, labels):  # few keys: tables instead of a sort
        counts = np.bincount(full, minlength=size)
        keys = np.flatnonzero(counts)
        r = reg.astype(np.float64)
        total = np.bincount(full, weights=r, minlength=size)[keys]
        squares = np.bincount(full, weights=r * r, minlength=size)[keys]
        counts = counts[keys]
        # one regime per key iff (Σr)² = n·Σr² (Cauchy–Schwarz; exact: r < 2⁸, n ≤ a block)
        if np.any(total * total != counts * squares):
            raise ValueError(
                "finer does not refine regime: a part of an impure cluster mixes regimes"
            )
        return (), (keys, counts, (total // counts).astype(reg.dtype))
    order = np.argsort(full, kind="stable")
    full, reg = full[order], reg[order]
    same = full[1:] == full[:-1]
    if np.any(reg[1:][same] != reg[:-1][same]):
        raise ValueError("finer does not refine regime: a part of an impure cluster mixes regimes")
    keys, first, counts = np.unique(full, return_index=True, return_counts=True)
    return (), (keys, counts, reg[first])


def _relabel(
    _block, _offset, labels, regime, finer, impure, whole_rank, keys, key_rank, span, use_finer
):
    out = whole_rank[labels]
    rows = impure[labels]
    full = labels[rows].astype(np.int64) * span + (finer if use_finer else regime)[rows]
    size = int(full.max(initial=-1)) + 1
    if _fits_table(size, labels):  # a table of the keys below the block's largest
        inside = int(np.searchsorted(keys, size))
        table = np.empty(size, dtype=np.int64)
        table[keys[:inside]] = key_rank[:inside]
        out[rows] = table[full]
    else:
        out[rows] = key_rank[np.searchsorted(keys, full)]
    return (small_ints(out),), None


def _compact(_block, _offset, labels, present, rank):
    """Each row's rank among the sorted labels ``present``: from the table ``rank`` (indexed
    by label) when there is one, else by a search."""
    if rank is not None:
        return (small_ints(rank[labels]),), None
    return (small_ints(np.searchsorted(present, labels)),), None


def _present(_block, _offset, labels):
    """The labels present in the block and their counts (sorted)."""
    return (), _label_counts(labels)


def _label_counts(labels: NDArray) -> tuple[NDArray, NDArray]:
    """The labels present (sorted) and their counts: a table when labels are few, else
    ``np.unique``."""
    if not _fits_table(int(labels.max(initial=-1)) + 1, labels):
        return np.unique(labels, return_counts=True)
    counts = np.bincount(labels)
    values = np.flatnonzero(counts)
    return values, counts[values]


def _renumbered(
    labels: NDArray, kernels: Any = None, top: int | None = None
) -> tuple[NDArray, NDArray, NDArray]:
    """The labels present in a block (sorted), their counts and each row's rank among them:
    with ``kernels``, one compiled loop over a table of ``top`` entries (all labels are below
    it; by default the block's largest + 1) when that table takes at most _RANK_TABLE_BYTES;
    else a table lookup when labels are few, or a search."""
    if kernels is not None and labels.size < 2**31:
        bound = int(labels.max(initial=-1)) + 1 if top is None else top
        if 4 * bound <= _RANK_TABLE_BYTES:
            return kernels.renumbered(labels, bound)
    top = int(labels.max(initial=-1)) + 1
    present, counts = _label_counts(labels)
    if not _fits_table(top, labels):
        return present, counts, np.searchsorted(present, labels)
    rank = np.empty(top, dtype=np.intp)
    rank[present] = np.arange(present.size)
    return present, counts, rank[labels]


def _column_parts(block, columns) -> list:
    """The model's per-row columns of the block (``columns(block)``), as a list (dense: a
    block's rows are summed where they lie)."""
    parts = columns(block)
    parts = [parts] if isinstance(parts, np.ndarray) else parts
    if any(issparse(part) for part in parts):
        raise DataError("Rows in blocks must be dense; give a dense X with --engine dask.")
    return parts


def _cluster_sums(block, _offset, labels, columns, n_clusters=None):
    """Σ per cluster present in the block of the model's columns (a matrix, or a list of
    vectors, matrices and :data:`ROW_COUNT` side by side): :func:`_summed`."""
    return (), _summed(_column_parts(block, columns), labels, n_clusters)


def _summed(parts, labels, n_clusters, rows=None):
    """(the clusters present, their sums of ``parts``): a vector by ``bincount``, a matrix by
    :func:`aidopt.core.partition.label_sums` (the list is never copied into one matrix; with the
    compiled loops the first vector is summed in the first matrix's read), the row counts from
    the renumbering (labels below ``n_clusters`` when given). With ``rows`` (the compiled
    loops), over those rows of the parts only (``labels``: theirs), read where they lie."""
    matrices = [j for j, part in enumerate(parts) if np.ndim(part) == 2]
    kernels = compiled.kernels_for(parts[matrices[0]]) if matrices else None
    present, counts, inverse = _renumbered(labels, kernels, n_clusters)
    k = present.size
    sums: list[Any] = [None] * len(parts)
    vectors = [j for j, part in enumerate(parts) if part is not ROW_COUNT and np.ndim(part) == 1]
    if kernels is not None and vectors:
        both = kernels.label_sums(inverse, parts[matrices[0]], k, parts[vectors[0]], rows)
        sums[matrices[0]], sums[vectors[0]] = both[:, :-1], both[:, -1:]
    for j, part in enumerate(parts):
        if sums[j] is None:
            selected = part if rows is None or part is ROW_COUNT else part[rows]
            sums[j] = (
                counts.astype(np.float64)[:, None]
                if part is ROW_COUNT
                else np.bincount(inverse, weights=selected, minlength=k)[:, None]
                if np.ndim(part) == 1
                else label_sums(inverse, selected, k)
            )
    return present, np.hstack(sums)


def _remade_cluster_sums(block, _offset, labels, columns, n_clusters, remade):
    """:func:`_cluster_sums` of the block's rows in the clusters ``remade`` (a K mask) only
    (None when it has none), the model's columns made once: with the compiled loops the rows
    are found in one read of the labels and summed where they lie, else summed from copies."""
    parts = _column_parts(block, columns)
    matrix = next((part for part in parts if np.ndim(part) == 2), None)
    kernels = compiled.kernels_for(matrix) if matrix is not None else None
    if kernels is not None:
        rows = kernels.kept_rows(labels, remade)
    else:
        rows = np.flatnonzero(remade[labels])
    if rows.size == 0:
        return (), None
    if kernels is not None:
        return (), _summed(parts, labels[rows], n_clusters, rows)
    copies = [part if part is ROW_COUNT else part[rows] for part in parts]
    return (), _summed(copies, labels[rows], n_clusters)


@dataclass(eq=False)
class BlockPartition(ClusterCounts):
    """Clusters C^t with their labels in the state slot ``slot`` of ``blocks``."""

    blocks: Blocks
    slot: str
    sizes: NDArray[np.int64]
    parent: NDArray[np.int64] | None = None
    cluster_regime: NDArray[np.int64] | None = None
    _older: list[str] = field(default_factory=list, repr=False)
    #: (columns, the parent's cluster sums of them, the parent's sizes): what a split leaves
    #: its child, until the child's own cluster sums are made
    _parent_sums: tuple[Any, NDArray[np.float64], NDArray[np.int64]] | None = field(
        default=None, repr=False
    )
    #: (columns, this partition's cluster sums of them), kept for the children of a split
    _sums: tuple[Any, NDArray[np.float64]] | None = field(default=None, repr=False)

    @classmethod
    def from_block_labels(cls, blocks: Blocks, slot: str) -> BlockPartition:
        """Renumber arbitrary non-negative labels in ``slot`` to 0..K−1 (sorted order)."""
        found = blocks.run(_present, reads=(slot,), data=False)
        present = np.unique(np.concatenate([values for values, _ in found]))
        sizes = np.zeros(present.size, dtype=np.int64)
        for values, counts in found:
            sizes[np.searchsorted(present, values)] += counts
        top = int(present[-1]) + 1 if present.size else 0
        rank = None
        if 4 * top <= _RANK_TABLE_BYTES:  # one lookup per row instead of a binary search
            rank = np.zeros(top, dtype=np.int32)
            rank[present] = np.arange(present.size, dtype=np.int32)
        new = f"labels{next(_SERIAL)}"
        blocks.run(_compact, present, rank, reads=(slot,), writes=(new,), data=False)
        blocks.drop(slot)
        return cls(blocks, new, sizes)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (with a solution sent to the workers) without its blocks and their engine, nor
        the cluster sums it keeps (K × q)."""
        return {**self.__dict__, "blocks": None, "_parent_sums": None, "_sums": None}

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    def cluster_sums(self, columns: Any) -> NDArray[np.float64]:
        """Σ_{i∈C_k} of the per-row columns ``columns(block)`` (vectors and matrices, side by
        side) per cluster (K × q): one data pass — after a split of blocks in memory, over the
        rows of the split clusters only (the kept clusters' sums are the parent's, the same
        bits). The labels of the partitions this one was split from are freed first (nothing
        reads them any more)."""
        self.forget_history()
        parent, self._parent_sums = self._parent_sums, None
        if parent is not None and parent[0] == columns and self.parent is not None:
            _, parent_sums, parent_sizes = parent
            remade = self.sizes != parent_sizes[self.parent]  # a split part is smaller
            total = parent_sums[self.parent]  # a copy
            total[remade] = 0.0
            found = self.blocks.run(
                _remade_cluster_sums, columns, self.n_clusters, remade, reads=(self.slot,)
            )
        else:
            total = None
            found = self.blocks.run(_cluster_sums, columns, self.n_clusters, reads=(self.slot,))
        for part in found:
            if part is None:
                continue
            present, sums = part
            if total is None:
                total = np.zeros((self.n_clusters, sums.shape[1]))
            total[present] += sums  # a cluster appears once per block
        assert total is not None
        if getattr(self.blocks, "rows_in_memory", None) is not None:
            # kept for a split's child; not on Dask, where every pass reads the parts anyway
            # and the driver holds the aggregated problem (K × q) at 10^8 rows already
            self._sums = (columns, total)
        return total

    def split(self, regime: StateRef, finer: StateRef | None = None) -> tuple[BlockPartition, int]:
        """As :meth:`aidopt.core.partition.Partition.split`, on the regimes kept beside the blocks.
        A split that makes children reads the regimes for the last time: their slots are freed
        (at 10^8 rows they are most of the workers' memory)."""
        reads = (self.slot, regime.slot, finer.slot if finer is not None else regime.slot)
        found = self.blocks.run(_regime_pairs, reads=reads, data=False)
        pairs = np.unique(np.concatenate([p for p, _ in found]))
        cluster = pairs // _REGIMES
        n_regimes = np.bincount(cluster, minlength=self.n_clusters)
        impure = n_regimes > 1
        n_impure = int(impure.sum())
        if n_impure == 0:
            return self, 0
        span = max(top for _, top in found) + 1
        use_finer = finer is not None
        parts = self.blocks.run(_child_pairs, impure, span, use_finer, reads=reads, data=False)
        keys = np.concatenate([k for k, _, _ in parts])
        counts = np.concatenate([c for _, c, _ in parts])
        regimes = np.concatenate([r for _, _, r in parts])
        keys, inverse = np.unique(keys, return_inverse=True)
        child_sizes = np.bincount(inverse, weights=counts, minlength=keys.size).astype(np.int64)
        child_regime = np.zeros(keys.size, dtype=np.int64)
        child_regime[inverse] = regimes
        whole = np.flatnonzero(~impure)
        whole_regime = (pairs % _REGIMES)[np.isin(cluster, whole)]
        order, rank, child_parent = split_numbering(whole, keys, span)
        whole_rank = np.full(self.n_clusters, -1, dtype=np.int64)
        whole_rank[whole] = rank[: whole.size]
        key_rank = rank[whole.size :]
        new = f"labels{next(_SERIAL)}"
        self.blocks.run(
            _relabel,
            impure,
            whole_rank,
            keys,
            key_rank,
            span,
            use_finer,
            reads=reads,
            writes=(new,),
            data=False,
        )
        self.blocks.drop(*dict.fromkeys(reads[1:]))
        sizes = np.concatenate([self.sizes[whole], child_sizes])[order]
        regime_of = np.concatenate([whole_regime, child_regime])[order]
        child = BlockPartition(
            self.blocks,
            new,
            sizes,
            parent=child_parent[order].astype(np.int64),
            cluster_regime=regime_of,
            _older=[*self._older, self.slot],
        )
        if self._sums is not None:  # the child re-sums only its split clusters' rows
            child._parent_sums = (*self._sums, self.sizes)
        self._sums = None
        return child, n_impure

    def forget_history(self) -> None:
        """Free the label slots of earlier partitions."""
        self.blocks.drop(*self._older)
        self._older.clear()
