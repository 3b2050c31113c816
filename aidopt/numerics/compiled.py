"""Compiled row loops (numba) for the sums of a data pass over a large dense matrix.

* per-cluster sums Σ_{labels_i = c} a_i — the aggregated data (:func:`aidopt.core.partition.
  label_sums`) —, over all rows or over the rows of some clusters (:func:`kept_rows`: a split
  partition's re-sum, the rows read where they lie);
* per-chunk products Σ_{i ∈ chunk} v_i a_i over chunks of :data:`aidopt.numerics.rounding.CHUNK`
  rows — the float64 part of an accurate Aᵀv (:func:`aidopt.numerics.rounding.accurate_tdot`: its
  rounding bound holds whatever the order of the additions inside a chunk);
* the same for u_i = s_{k(i)}, a dual constant per cluster, for several s at once (and the
  sums of u_i y_i, u_i, |u_i|): a certificate's row sums at the spread duals without making u
  (:meth:`aidopt.models.lad.LADModel.cluster_bound_terms`);
* residuals r = y − Xβ − β₀ with the chunk sums of the check loss ρ(r) and of |X|, and
  the chunk sums of the spread duals above while the chunk is in cache (LAD and quantile
  evaluation with the certificate's terms: one read of X); the initial cluster of each row
  by its residual (bins and a band of singletons: LAD's C^0); the column sums of |A| (the
  certificates' bound on |A|ᵀ|v|);
* the chunk sums' columns added by Sum2 (:func:`aidopt.numerics.rounding.added_chunk_sums`).

Each is one read of A on every core, about the time of a bare ``A @ b``; numpy has no kernel
for any of them (the sparse indicator product takes ~30× that, the batched chunk product ~3×).

numba is optional (the ``scale`` extra). Whether a run uses the kernels depends on the size of
its data only (:func:`for_run`: a dense X of :data:`RUN_ENTRIES` entries or more; then every
matrix of :data:`MIN_ENTRIES` or more goes through them): below, numba's import and loading
(~1.4 s, started in the background when the run begins, or while a large file is read:
:func:`preload_for_file`; the first compilation on a machine ~20 s, then numba's disk cache
serves every process — the loops live at module level in :mod:`aidopt.numerics.compiled_loops` for
that) cost more than they save. The kernels run on the main thread only
(numba's default threading layer must not be entered from two threads at once: Dask's worker
threads take the numpy path). ``AIDOPT_COMPILED=0`` turns them off.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from aidopt.common.log import logger

__all__ = [
    "MIN_ENTRIES",
    "RUN_ENTRIES",
    "ResidualPass",
    "abs_column_sums",
    "chunk_tdot",
    "cluster_dual_sums",
    "compensated_column_sums",
    "dense_entries",
    "for_run",
    "kept_rows",
    "kernels_for",
    "label_sums",
    "preload",
    "preload_for_file",
    "renumbered",
    "residual_bins",
    "residual_loss",
]

#: a run whose dense X has this many entries uses the kernels, for every matrix of at least
#: MIN_ENTRIES (below, a call's overhead is not worth it)
RUN_ENTRIES = 1 << 25
MIN_ENTRIES = 1 << 16
#: per-thread tables of cluster sums larger than this are not made (one table instead)
_THREAD_TABLE_BYTES = 1 << 28
_NO_VECTOR = np.zeros(0)  #: label_sums without a vector column
_ALL_ROWS = np.zeros(0, dtype=np.int64)  #: label_sums over every row
_IN_LARGE_RUN = contextvars.ContextVar("aidopt_compiled", default=False)
_loading: threading.Thread | None = None  #: the background load started by :func:`preload`
_load_error: list[BaseException] = []  #: why the load failed (then the numpy path serves)


def _enabled() -> bool:
    return os.environ.get("AIDOPT_COMPILED", "1") != "0"


def dense_entries(data: Any) -> int:
    """Entries of the dense in-memory X of a run's data (of the rows of in-memory blocks); 0
    for sparse X or rows elsewhere (Dask)."""
    X = getattr(getattr(data, "rows_in_memory", data), "X", None)
    return int(X.size) if isinstance(X, np.ndarray) else 0


@contextlib.contextmanager
def for_run(entries: int) -> Iterator[None]:
    """Within: the kernels serve the passes when the run's dense X has ``entries`` ≥
    :data:`RUN_ENTRIES` and numba is installed — loaded from now on in the background, so that
    the first pass finds them ready."""
    large = entries >= RUN_ENTRIES and _available()
    if large:
        preload()
    token = _IN_LARGE_RUN.set(large)
    try:
        yield
    finally:
        _IN_LARGE_RUN.reset(token)


def preload() -> None:
    """Start loading the kernels in the background (once; nothing without numba): for a caller
    that knows a large run is coming before its data are in memory — the load then overlaps
    the reading."""
    global _loading
    if _loading is None and _available():
        _loading = threading.Thread(target=_load, name="aidopt-compiled-load", daemon=True)
        _loading.start()


def preload_for_file(path: str | os.PathLike) -> None:
    """:func:`preload` when the data file (or the files under a directory) holds at least 8
    bytes per entry of a large run."""
    try:
        root = Path(path)
        files = root.rglob("*") if root.is_dir() else [root]
        size = sum(f.stat().st_size for f in files if f.is_file())
    except OSError:  # the reader says what is wrong with the path
        return
    if size >= 8 * RUN_ENTRIES:
        preload()


def _available() -> bool:
    return _enabled() and importlib.util.find_spec("numba") is not None


def kernels_for(a: Any, minimum: int | None = None) -> ModuleType | None:
    """This module when ``a`` should go through the kernels: inside a large run, a C-ordered
    float64 matrix of ``minimum`` (MIN_ENTRIES) entries or more, on the main thread; else None
    (the numpy path)."""
    if not (
        _IN_LARGE_RUN.get()
        and isinstance(a, np.ndarray)
        and a.ndim == 2
        and a.dtype == np.float64
        and a.flags.c_contiguous
        and a.size >= (MIN_ENTRIES if minimum is None else minimum)
        and threading.current_thread() is threading.main_thread()
    ):
        return None
    if _loading is not None:
        _loading.join()
    return None if _load_error else sys.modules[__name__]


def _load() -> None:
    try:
        _compiled()
    except Exception as error:  # a numba that cannot compile here: the numpy path, said once
        _load_error.append(error)
        logger.warning(
            "aidopt.numerics.compiled: the compiled passes are off (%s); numpy serves.", error
        )


class _Kernels(NamedTuple):
    """The compiled loops, one per wrapper below."""

    label_sums: Any
    kept_rows: Any
    chunk_tdot: Any
    cluster_dual_sums: Any
    residual_loss: Any
    residual_bins: Any
    abs_column_sums: Any
    compensated_column_sums: Any
    renumbered: Any


@functools.cache
def _compiled() -> _Kernels:
    """The loops of :mod:`aidopt.numerics.compiled_loops`, compiled for all cores (cached on disk by
    numba) for the signatures the wrappers below call with, loaded (or compiled) now."""
    import numba

    from aidopt.numerics import compiled_loops as loops

    types = numba.types
    vector, matrix = types.Array(types.float64, 1, "C"), types.Array(types.float64, 2, "C")
    real, integer = types.float64, types.int64
    counts = types.Array(types.int64, 1, "C")
    # labels: the blocks' states are int32 (passed as they are), others intp
    label_kinds = [types.Array(kind, 1, "C") for kind in (types.int32, types.intp)]
    signatures = {
        "label_sums": [
            (labels, matrix, vector, integer, integer, counts) for labels in label_kinds
        ],
        "kept_rows": [(labels, types.Array(types.boolean, 1, "C")) for labels in label_kinds],
        "chunk_tdot": (matrix, vector, integer),
        "cluster_dual_sums": [(matrix, vector, labels, matrix, integer) for labels in label_kinds],
        "residual_loss": [
            (
                *(matrix, vector, vector, real, real, real, integer, labels, matrix),
                types.boolean,  # with the sums of |a|
            )
            for labels in label_kinds
        ],
        "residual_bins": (
            *(matrix, vector, vector, real),  # a, y, coef, intercept
            *(vector, counts, real, real),  # edges and their search grid
            *(real, real),  # the band
            *(vector, counts, real, real),  # above and its search grid
            integer,  # offset
        ),
        "abs_column_sums": (matrix, integer),
        "compensated_column_sums": (matrix,),
        "renumbered": (types.Array(types.int32, 1, "C"), integer),
    }
    for name, signature in signatures.items():
        for one in signature if isinstance(signature, list) else [signature]:
            getattr(loops, name).compile(one)
    return _Kernels(**{name: getattr(loops, name) for name in _Kernels._fields})


def _indices(labels: NDArray[np.integer]) -> NDArray[np.integer]:
    """The labels as the loops take them: int32 or intp as they are (no copy), else intp."""
    if labels.dtype in (np.int32, np.intp) and labels.flags.c_contiguous:
        return labels
    return np.ascontiguousarray(labels, dtype=np.intp)


def _refuse_outside(count: int, k: int) -> None:
    """The loops skip (and count) the rows whose label falls outside a table of k rows: refuse
    their result."""
    if count:
        raise ValueError(
            f"cluster labels must lie in [0, {k}) for a table of {k} clusters "
            f"({count} row(s) outside)"
        )


def label_sums(
    labels: NDArray[np.integer],
    a: NDArray[np.float64],
    k: int,
    vector: NDArray[np.float64] | None = None,
    rows: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """(k, q) sums Σ_{labels_i = c} a_i — with Σ_{labels_i = c} vector_i in a last column when
    a ``vector`` (n,) is given, summed in the same read —: each core sums its share of the rows
    into a table of its own (one table when k·q is large), the tables added at the end. With
    ``rows`` (indices into a's rows, one label each) only those rows are read, where they lie."""
    import numba

    v = _NO_VECTOR if vector is None else np.ascontiguousarray(vector, dtype=np.float64)
    if v.size not in (0, a.shape[0]):
        raise ValueError(f"a vector of {v.size} entries beside {a.shape[0]} rows")
    selected = _ALL_ROWS if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    count = a.shape[0] if rows is None else selected.size
    if labels.shape != (count,):
        raise ValueError(f"{labels.shape} labels for {count} rows")
    if selected.size and (selected.min() < 0 or selected.max() >= a.shape[0]):
        raise ValueError(f"row indices must lie in [0, {a.shape[0]})")
    threads = numba.get_num_threads()
    q = a.shape[1] + min(v.size, 1)
    parts = threads if threads * k * q * 8 <= _THREAD_TABLE_BYTES else 1
    parts = max(1, min(parts, count))
    total, outside = _compiled().label_sums(_indices(labels), a, v, int(k), parts, selected)
    _refuse_outside(outside, k)
    return total


def kept_rows(labels: NDArray[np.integer], keep: NDArray[np.bool_]) -> NDArray[np.int64]:
    """The rows i with keep[labels_i], in order (one read of the labels, no mask made)."""
    found, outside = _compiled().kept_rows(_indices(labels), np.ascontiguousarray(keep, dtype=bool))
    _refuse_outside(outside, keep.size)
    return found


def chunk_tdot(a: NDArray[np.float64], v: NDArray[np.float64], chunk: int) -> NDArray[np.float64]:
    """(⌈n/chunk⌉, p): row c is Σ v_i a_i over rows c·chunk … (c + 1)·chunk − 1, in float64."""
    loop = _compiled().chunk_tdot
    return loop(a, np.ascontiguousarray(v, dtype=np.float64), int(chunk))


def cluster_dual_sums(
    a: NDArray[np.float64],
    y: NDArray[np.float64],
    labels: NDArray[np.integer],
    duals: NDArray[np.float64],
    chunk: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For each row d of ``duals`` (q × K) and u_i = duals[d, labels_i], per chunk of rows, in
    float64 (one read of ``a``, u never stored): (chunks, q, p) sums Σ u_i a_i, and (chunks, q,
    5) sums Σ u_i y_i, Σ |fl(u_i y_i)|, Σ u_i, Σ |u_i| and max |u_i|."""
    if labels.shape != (a.shape[0],):
        raise ValueError(f"{labels.shape} labels for {a.shape[0]} rows")
    products, scalars, outside = _compiled().cluster_dual_sums(
        a,
        np.ascontiguousarray(y, dtype=np.float64),
        _indices(labels),
        np.ascontiguousarray(duals, dtype=np.float64),
        int(chunk),
    )
    _refuse_outside(outside, duals.shape[1])
    return products, scalars


class ResidualPass(NamedTuple):
    """What :func:`residual_loss` gives per row and sums per chunk of rows."""

    size: NDArray[np.float64]  # (n,) |r_i|
    positive: NDArray[np.int8]  # (n,) 1 where r_i > 0, else 0
    loss: NDArray[np.float64]  # (chunks,) Σ ρ(r_i)
    abs_sums: NDArray[np.float64]  # (chunks, p) Σ |a_ij| ((0, p) when not asked for)
    products: NDArray[np.float64]  # (chunks, q, p) Σ u_i a_i per dual, as cluster_dual_sums
    scalars: NDArray[np.float64]  # (chunks, q, 5) Σ u y, Σ |fl(u y)|, Σ u, Σ |u|, max |u|


def residual_loss(
    a: NDArray[np.float64],
    y: NDArray[np.float64],
    coef: NDArray[np.float64],
    intercept: float,
    c_plus: float,
    c_minus: float,
    chunk: int,
    labels: NDArray[np.integer] | None = None,
    duals: NDArray[np.float64] | None = None,
    abs_sums: bool = True,
) -> ResidualPass:
    """|r_i| and [r_i > 0] for r_i = (y_i − a_i·coef) − intercept and, per chunk of rows,
    Σ ρ(r_i) with ρ(r) = c⁺ r for r > 0, −c⁻ r otherwise (the check loss), Σ |a_ij| per
    column (when ``abs_sums``), and for each row of ``duals`` (q × K, none by default) the
    sums of :func:`cluster_dual_sums` at u_i = duals[d, labels_i], bit for bit — all in one
    read of ``a``."""
    if duals is None:  # no dual: the loop never reads a label
        duals, labels = np.zeros((0, 1)), np.zeros(0, dtype=np.intp)
    assert labels is not None
    if len(duals) and labels.shape != (a.shape[0],):
        raise ValueError(f"{labels.shape} labels for {a.shape[0]} rows")
    *found, outside = _compiled().residual_loss(
        a,
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(coef, dtype=np.float64),
        float(intercept),
        float(c_plus),
        float(c_minus),
        int(chunk),
        _indices(labels),
        np.ascontiguousarray(duals, dtype=np.float64),
        bool(abs_sums),
    )
    _refuse_outside(outside, duals.shape[1])
    return ResidualPass(*found)


def residual_bins(
    a: NDArray[np.float64],
    y: NDArray[np.float64],
    coef: NDArray[np.float64],
    intercept: float,
    edges: NDArray[np.float64],
    band: tuple[float, float],
    above: NDArray[np.float64],
    offset: int,
) -> NDArray[np.int64]:
    """Labels of rows by their residual r_i = (y_i − a_i·coef) − intercept (one read of ``a``):
    r < band[0] → ``searchsorted(edges, r)``; r > band[1] → bins + ``searchsorted(above, r)``
    (bins = edges.size + 1); otherwise the singleton 2·bins + offset + i. A search starts from
    the count at the residual's cell of a uniform grid over the edges (:func:`_search_guide`)."""
    loop = _compiled().residual_bins
    edges = np.ascontiguousarray(edges, dtype=np.float64)
    above = np.ascontiguousarray(above, dtype=np.float64)
    return loop(
        a,
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(coef, dtype=np.float64),
        float(intercept),
        edges,
        *_search_guide(edges),
        float(band[0]),
        float(band[1]),
        above,
        *_search_guide(above),
        int(offset),
    )


def _search_guide(edges: NDArray[np.float64]) -> tuple[NDArray[np.int64], float, float]:
    """(counts, origin, scale) for sorted ``edges``: the value v falls in cell ⌊(v − origin) ·
    scale⌋ (clipped) of 8 cells per edge spanning the edges, and counts[cell] is the number of
    edges below the cell's left end, a start the search corrects by a comparison or two when
    the edges are spread like the values (quantiles). Cell 0 for all (scale 0) when the span is
    empty or not finite: the search then walks from 0, still exact."""
    cells = 8 * edges.size + 1
    span = float(edges[-1] - edges[0]) if edges.size else 0.0
    if not (np.isfinite(span) and span > 0):
        return np.zeros(1, dtype=np.int64), 0.0, 0.0
    origin, scale = float(edges[0]), cells / span
    starts = origin + np.arange(cells) / scale
    return np.searchsorted(edges, starts).astype(np.int64), origin, scale


def abs_column_sums(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_i |a_ij| per column in float64 (each core sums its share of the rows)."""
    import numba

    loop = _compiled().abs_column_sums
    return loop(a, max(1, min(numba.get_num_threads(), a.shape[0])))


def renumbered(
    labels: NDArray[np.integer], top: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int32]]:
    """(the labels present, sorted; their counts; each row's rank among them) for labels in
    [0, top) — top below 2^31 and small enough for a table (the caller's rule; by default the
    largest label + 1), fewer than 2^31 rows: one pass to count, two over the table, one to
    look up."""
    narrow = labels.dtype in (np.int8, np.int16, np.int32, np.uint8, np.uint16)
    if labels.size and not narrow:  # checked before the int32 copy
        bound = 2**31 if top is None else min(int(top), 2**31)
        if int(labels.min()) < 0 or int(labels.max()) >= bound:
            raise ValueError(f"labels must be non-negative and below {bound}")
    if top is None:
        top = int(labels.max(initial=-1)) + 1
    present, counts, inverse, outside = _compiled().renumbered(
        labels.astype(np.int32, copy=False), int(top)
    )
    if outside:
        raise ValueError(f"labels must be non-negative and below {top} ({outside} row(s) not)")
    return present, counts, inverse


def compensated_column_sums(rows: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray]:
    """(Σ_i rows_ij per column by Sum2 of Ogita, Rump & Oishi — cascaded TwoSum, the errors
    summed aside —, Σ_i |rows_ij| in float64); the sums' error is at most ε|s| + γ²_N Σ|p|
    (their Prop. 4.5, N rows)."""
    loop = _compiled().compensated_column_sums
    return loop(np.ascontiguousarray(rows, dtype=np.float64))
