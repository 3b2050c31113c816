"""Kernel sums grouped by cluster, G = S_w K(A, B) R, without holding K(A, B).

The kernel models under AID need, for the entries A of some clusters, the sums of their kernel
rows per cluster (S_w is the weighted indicator of ``groups``, one row per group):

    G[g, j] = Σ_{i: groups_i = g} w_i k(a_i, b_j)                         (R = I)
    G[g, q] = Σ_{i: groups_i = g} w_i Σ_j k(a_i, b_j) R_jq                 (R given)

— the kernel sums P of the one-class models (``models/ocsvm_kernel.py``) and the centroid Gram
sums T = S K Sᵀ of the kernel SVM (``models/svm_kernel.py``, R = Sᵀ). A is sorted by group once;
K(A, B) is formed in tiles of :data:`TILE_ENTRIES` entries (they stay in cache through the
kernel's element-wise passes), each tile's rows added per group by a small matrix product with
the weighted indicator of its rows, then (with R) one product with R's rows per column tile;
the column ranges of B go to separate threads — NumPy's matrix products and ufuncs release the
GIL (AID's BLAS runs single-threaded: :mod:`aidopt.common.threads`; measured on this 2-core
VM on 2·10^4 rows, 2026-11-27: 1.2–1.4× from the second thread, not 2×). When A = B = X
(every cluster's sums at once, AID's first iteration), :func:`square_grouped_kernel_sums`
forms only the blocks on and above the diagonal of the symmetric K(X, X), each serving both
sides. Each entry of G is a sum of at most len(A) products (then len(B) with R), in some order:
the models' rounding bounds hold for any order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.numerics.kernels import Kernel

__all__ = ["TILE_ENTRIES", "grouped_kernel_sums", "square_grouped_kernel_sums"]

TILE_ENTRIES = 1 << 17  # kernel entries per tile (1 MiB of float64)
_TILE_ROWS = 64  # rows of A per tile
_PARALLEL_ENTRIES = 1 << 22  # smaller products run on the calling thread alone
_SQUARE_ROWS = 256  # rows per block of the square sums (256 × 256 entries: 512 KiB; 512 was
# 1.3–1.5× slower, 128 1.6×)


def grouped_kernel_sums(
    kernel: Kernel,
    A: NDArray[np.float64] | sp.csr_matrix,
    groups: NDArray[np.integer],
    n_groups: int,
    B: NDArray[np.float64] | sp.csr_matrix,
    weight: NDArray[np.float64] | None = None,
    right: NDArray[np.float64] | sp.spmatrix | None = None,
    threads: int | None = None,
) -> NDArray[np.float64]:
    """G = S_w K(A, B) R (see the module docstring): shape (n_groups, len(B)) without ``right``,
    (n_groups, right.shape[1]) with it. ``groups`` are in [0, n_groups); ``weight`` (w_i per
    row of A) defaults to 1; ``threads`` defaults to the BLAS threads the caller allows."""
    _, chunks = _sorted_chunks(kernel, A, groups, weight, _TILE_ROWS)
    if issparse(right):
        right = sp.csr_matrix(right)  # sliced by rows, tile by tile
    sq_b = kernel._norms(B)
    n_b = B.shape[0]
    width = right.shape[1] if right is not None else n_b
    cols = max(1, TILE_ENTRIES // _TILE_ROWS)
    ranges = _column_ranges(n_b, cols, _thread_count(threads, A.shape[0] * n_b, n_b, cols))
    outputs = [np.zeros((n_groups, width)) for _ in (ranges if right is not None else [0])]

    def columns(part: int) -> None:
        out = outputs[part if right is not None else 0]
        lo, hi = ranges[part]
        for c0 in range(lo, hi, cols):
            c1 = min(hi, c0 + cols)
            B_tile = B[c0:c1]
            sq_tile = None if sq_b is None else sq_b[c0:c1]
            sums = out[:, c0:c1] if right is None else np.zeros((n_groups, c1 - c0))
            for rows, sq_rows, ids, owner in chunks:
                sums[ids] += owner @ kernel._block(rows, B_tile, sq_rows, sq_tile)
            if right is not None:
                out += _times(sums, right[c0:c1])

    _in_parallel(columns, len(ranges))
    return _added(outputs)


def square_grouped_kernel_sums(
    kernel: Kernel,
    X: NDArray[np.float64],
    groups: NDArray[np.integer],
    n_groups: int,
    weight: NDArray[np.float64] | None = None,
    threads: int | None = None,
) -> NDArray[np.float64]:
    """G = S_w K(X, X) (n_groups × len(X)), :func:`grouped_kernel_sums` with A = B = X, from
    half the kernel entries: X sorted by group is cut into blocks of :data:`_SQUARE_ROWS`
    rows, and each block pair I < J forms K(X_I, X_J) once for both G[:, J] += S_I K and
    G[:, I] += S_J Kᵀ (the diagonal blocks once). The pairs go round-robin to the threads,
    each adding into a G of its own (summed at the end)."""
    n = X.shape[0]
    order, blocks = _sorted_chunks(kernel, X, groups, weight, _SQUARE_ROWS)
    spans = [slice(r0, min(n, r0 + _SQUARE_ROWS)) for r0 in range(0, n, _SQUARE_ROWS)]
    pairs = [(i, j) for i in range(len(blocks)) for j in range(i, len(blocks))]
    parts = _thread_count(threads, n * n // 2, len(pairs), 1)
    outputs = [np.zeros((n_groups, n)) for _ in range(parts)]

    def work(part: int) -> None:
        out = outputs[part]
        for i, j in pairs[part::parts]:
            X_i, sq_i, ids_i, owner_i = blocks[i]
            X_j, sq_j, ids_j, owner_j = blocks[j]
            K = kernel._block(X_i, X_j, sq_i, sq_j)
            out[ids_i, spans[j]] += owner_i @ K
            if i != j:
                out[ids_j, spans[i]] += owner_j @ K.T

    _in_parallel(work, parts)
    total = _added(outputs)
    result = np.empty_like(total)
    result[:, order] = total
    return result


def _in_parallel(work: Callable[[int], None], parts: int) -> None:
    """work(0), …, work(parts − 1): part 0 on the calling thread, the others on a pool."""
    if parts == 1:
        work(0)
        return
    with ThreadPoolExecutor(parts - 1) as pool:
        others = [pool.submit(work, part) for part in range(1, parts)]
        work(0)
        for future in others:
            future.result()


def _added(outputs: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """The threads' outputs added into the first."""
    total = outputs[0]
    for out in outputs[1:]:
        total += out
    return total


def _sorted_chunks(kernel, A, groups, weight, rows: int) -> tuple[NDArray[np.intp], list[tuple]]:
    """(the order that sorts A by group, :func:`_row_chunks` of the sorted rows with their
    weights, 1 without ``weight``)."""
    order = np.argsort(groups, kind="stable")
    A = A[order]
    w = np.ones(A.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)[order]
    return order, _row_chunks(A, np.asarray(groups)[order], w, kernel._norms(A), rows)


def _row_chunks(A, groups, w, sq_a, rows: int) -> list[tuple]:
    """A (sorted by group) in chunks of ``rows`` rows: each chunk's rows, their squared
    norms (rbf), its groups and the weighted indicator that sums its kernel rows per group (a
    small matrix product: ``np.add.reduceat`` took 4–6× longer); the groups as a slice when
    they are consecutive (the usual case), which adds in place."""
    chunks = []
    for r0 in range(0, A.shape[0], rows):
        r1 = min(A.shape[0], r0 + rows)
        g = groups[r0:r1]
        first = np.r_[True, g[1:] != g[:-1]]
        owner = np.zeros((int(first.sum()), r1 - r0))
        owner[np.cumsum(first) - 1, np.arange(r1 - r0)] = w[r0:r1]
        ids = g[first]
        if ids[-1] - ids[0] == ids.size - 1:  # consecutive groups: a view, not a fancy index
            ids = slice(int(ids[0]), int(ids[-1]) + 1)
        chunks.append((A[r0:r1], None if sq_a is None else sq_a[r0:r1], ids, owner))
    return chunks


def _thread_count(threads: int | None, entries: int, n_b: int, cols: int) -> int:
    """Threads for a product of ``entries`` kernel entries (1 when small; at most one per tile
    column range)."""
    if entries < _PARALLEL_ENTRIES:
        return 1
    if threads is None:
        from aidopt.common.threads import blas_threads

        threads = blas_threads()
    return max(1, min(threads, -(-n_b // cols)))


def _column_ranges(n_b: int, cols: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous column ranges of about equal size, cut at tile boundaries."""
    tiles = -(-n_b // cols)
    cuts = np.linspace(0, tiles, parts + 1).round().astype(int) * cols
    cuts[-1] = n_b
    return [(int(a), int(min(b, n_b))) for a, b in itertools.pairwise(cuts)]


def _times(sums: NDArray[np.float64], right) -> NDArray[np.float64]:
    """sums @ right for a dense or sparse ``right``."""
    if issparse(right):
        return np.asarray((right.T @ sums.T).T)
    return sums @ right
